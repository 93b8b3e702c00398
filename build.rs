//! Build identity for `abperf --version` and every stored experiment: the git commit (with
//! `-dirty` when the work tree had uncommitted changes) and the build date (UTC).
//!
//! Sources, first that answers: `$ABPERF_COMMIT`; `git` in the source tree; the file
//! `.git-commit`, which `git archive` fills in (`export-subst` in `.gitattributes`), so a source
//! tarball knows its commit without git; else `unknown`. The date is `$SOURCE_DATE_EPOCH` when set
//! (reproducible builds), else today.

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Days since 1970-01-01 -> (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Asks cargo to run this script again when `path` changes. Only for a file that exists: cargo
/// takes a missing one (`packed-refs` before the first `git gc`) as changed on every build, which
/// rebuilt the whole crate each time (`cargo install` after `cargo build` was a second build).
fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

fn commit(dir: &Path) -> String {
    if let Ok(c) = std::env::var("ABPERF_COMMIT")
        && !c.trim().is_empty()
    {
        return c.trim().to_string();
    }
    // Only this source tree's own repository (not one it was unpacked inside).
    let own = git(dir, &["rev-parse", "--show-toplevel"])
        .and_then(|top| std::fs::canonicalize(top).ok())
        .is_some_and(|top| std::fs::canonicalize(dir).is_ok_and(|d| d == top));
    if own && let Some(hash) = git(dir, &["rev-parse", "--short=12", "HEAD"]) {
        // Tell cargo when to ask again: HEAD moves, a branch ref moves, the index changes.
        for p in ["HEAD", "index", "packed-refs"] {
            if let Some(path) = git(dir, &["rev-parse", "--git-path", p]) {
                watch(&dir.join(path));
            }
        }
        if let Some(r) = git(dir, &["symbolic-ref", "-q", "HEAD"])
            && let Some(path) = git(dir, &["rev-parse", "--git-path", &r])
        {
            watch(&dir.join(path));
        }
        let dirty = git(dir, &["status", "--porcelain", "--untracked-files=no"]).is_some();
        return if dirty { format!("{hash}-dirty") } else { hash };
    }
    // `git archive` replaces the $Format placeholder in this file with the commit.
    if let Ok(s) = std::fs::read_to_string(dir.join(".git-commit")) {
        let s = s.trim();
        if !s.is_empty() && !s.contains("$Format") {
            return s.chars().take(12).collect();
        }
    }
    "unknown".into()
}

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-env-changed=ABPERF_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    watch(&dir.join(".git-commit"));
    // Uncommitted edits change `-dirty`: look again whenever a source file changes.
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=crates");
    println!("cargo:rerun-if-changed=Cargo.toml");
    let commit = commit(dir);
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0)
        });
    let (y, m, d) = civil(secs.div_euclid(86_400));
    println!("cargo:rustc-env=ABPERF_COMMIT={commit}");
    println!("cargo:rustc-env=ABPERF_BUILD_DATE={y:04}-{m:02}-{d:02}");
}
