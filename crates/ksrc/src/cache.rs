//! The content-addressed cache of built kernels: `images/<key>/` holds the bzImage, its modules
//! (`lib/modules/RELEASE`, where the VM engine looks), the final .config, the build log and
//! `entry.json`; the key hashes the patched source's tree id, the .config, the compiler and the
//! make variables. An entry appears whole (made beside it, then renamed) or not at all; its
//! `.used` file's time orders the least-recently-used eviction.

use crate::kconfig::sha256_hex;
use crate::make::{MAKE_VARS, REPRODUCIBLE};
use abperf_model::KernelSource;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The default size limit of the built images (`kernel gc` without --max-size, and after every
/// build).
pub const DEFAULT_MAX_BYTES: u64 = 10 << 30;

/// Where kernels built from source are kept: `$ABPERF_CACHE_DIR/ksrc`, else
/// `$XDG_CACHE_HOME/abperf/ksrc`, else `~/.cache/abperf/ksrc`; made 0700.
pub fn root() -> Result<PathBuf> {
    let base = abperf_model::cache_dir::from_env().context("cannot place the cache of built kernels: none of $ABPERF_CACHE_DIR, $XDG_CACHE_HOME, $HOME is set")?;
    let root = base.join("ksrc");
    private_dir(&root)?;
    Ok(root)
}

/// Make `dir` (and its parents) with mode 0700 for the last component.
pub fn private_dir(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
}

/// The cache key: SHA-256 over the tree id, the .config's hash, the compiler and the make and
/// reproducibility variables.
pub fn key(tree_id: &str, config_sha256: &str, compiler: &str) -> String {
    let mut s = format!("tree {tree_id}\nconfig {config_sha256}\ncompiler {compiler}\n");
    for v in MAKE_VARS {
        s += &format!("make {v}\n");
    }
    for (k, v) in REPRODUCIBLE {
        s += &format!("env {k}={v}\n");
    }
    sha256_hex(s.as_bytes())
}

/// What `entry.json` holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub key: String,
    /// The `--kernel` argument that first built it.
    pub given: String,
    /// The repository it was built from.
    pub repository: String,
    /// Seconds of the build (make only).
    pub build_seconds: f64,
    /// The kernel's release (include/config/kernel.release).
    pub release: String,
    pub source: KernelSource,
    /// Set when no make ran: the entry's files are those of another entry whose source differs
    /// from this one only in comments (see [`crate::same_code`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comments_only: Option<CommentsOnly>,
}

/// The cached kernel an entry was taken from, and the files whose comments alone differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommentsOnly {
    /// The key of the entry whose build this is.
    pub key: String,
    /// That entry's `--kernel` argument (for messages).
    pub given: String,
    pub files: Vec<String>,
}

/// A cached kernel.
#[derive(Debug, Clone)]
pub struct Entry {
    pub dir: PathBuf,
    pub record: Record,
    pub bytes: u64,
    pub used: SystemTime,
}

impl Entry {
    pub fn image(&self) -> PathBuf {
        self.dir.join("bzImage")
    }

    /// The modules directory, when the kernel has modules.
    pub fn modules(&self) -> Option<PathBuf> {
        let m = self.dir.join("lib/modules").join(&self.record.release);
        m.is_dir().then_some(m)
    }
}

fn images(root: &Path) -> PathBuf {
    root.join("images")
}

/// The entry of `key`, its use time set to now; None when absent.
pub fn lookup(root: &Path, key: &str) -> Option<Entry> {
    let e = read_entry(&images(root).join(key))?;
    let _ = std::fs::write(e.dir.join(".used"), b"");
    Some(e)
}

fn read_entry(dir: &Path) -> Option<Entry> {
    let text = std::fs::read_to_string(dir.join("entry.json")).ok()?;
    let record: Record = serde_json::from_str(&text).ok()?;
    if !dir.join("bzImage").is_file() {
        return None;
    }
    let used = std::fs::metadata(dir.join(".used"))
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH);
    Some(Entry {
        dir: dir.to_path_buf(),
        record,
        bytes: du(dir),
        used,
    })
}

/// Bytes of the files under `dir` (symlinks not followed).
fn du(dir: &Path) -> u64 {
    let mut total = 0;
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    for e in rd.flatten() {
        let Ok(m) = e.path().symlink_metadata() else {
            continue;
        };
        total += if m.is_dir() { du(&e.path()) } else { m.len() };
    }
    total
}

/// Every cached kernel, most recently used first.
pub fn list(root: &Path) -> Vec<Entry> {
    let mut out: Vec<Entry> = std::fs::read_dir(images(root))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| read_entry(&e.path()))
        .collect();
    out.sort_by(|a, b| b.used.cmp(&a.used).then(a.record.key.cmp(&b.record.key)));
    out
}

/// Store the build in `staged` (bzImage, config, build.log, lib/modules) as the entry of
/// `record.key`: entry.json written, then the directory renamed into place.
pub fn store(root: &Path, staged: &Path, record: &Record) -> Result<Entry> {
    std::fs::write(
        staged.join("entry.json"),
        serde_json::to_string_pretty(record)?,
    )?;
    std::fs::write(staged.join(".used"), b"")?;
    let dest = images(root).join(&record.key);
    if dest.exists() {
        // Another abperf stored the same key meanwhile: the same bytes (reproducible build).
        std::fs::remove_dir_all(staged)?;
    } else {
        std::fs::rename(staged, &dest)
            .with_context(|| format!("cannot move the build into {}", dest.display()))?;
    }
    read_entry(&dest).context("the stored kernel cannot be read back")
}

/// Store `record` as a new entry holding the files of `from` (hard links, else copies): a
/// kernel whose source differs from `from`'s only in comments. Returns the new entry.
pub fn store_same_as(root: &Path, from: &Entry, record: &Record) -> Result<Entry> {
    let staged = staging(root, &record.key)?;
    let made = link_tree(&from.dir, &staged).and_then(|()| store(root, &staged, record));
    if made.is_err() {
        let _ = std::fs::remove_dir_all(&staged);
    }
    made
}

/// Hard-link (else copy) every file under `from` into `to`, but entry.json and .used.
fn link_tree(from: &Path, to: &Path) -> Result<()> {
    for e in std::fs::read_dir(from)?.flatten() {
        let name = e.file_name();
        if name == "entry.json" || name == ".used" {
            continue;
        }
        let (src, dst) = (e.path(), to.join(&name));
        let m = src.symlink_metadata()?;
        if m.is_dir() {
            private_dir(&dst)?;
            link_tree(&src, &dst)?;
        } else if m.file_type().is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if std::fs::hard_link(&src, &dst).is_err() {
            std::fs::copy(&src, &dst)
                .with_context(|| format!("cannot copy {} to {}", src.display(), dst.display()))?;
        }
    }
    Ok(())
}

/// A fresh staging directory for a build (under images/, hidden from [`list`]).
pub fn staging(root: &Path, key: &str) -> Result<PathBuf> {
    let dir = images(root).join(format!(".tmp-{key}-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    private_dir(&dir)?;
    Ok(dir)
}

/// Remove the least recently used entries until the rest take at most `max_bytes`; also
/// staging directories left by a killed build. Returns the removed entries.
pub fn gc(root: &Path, max_bytes: u64) -> Result<Vec<Entry>> {
    for e in std::fs::read_dir(images(root))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(rest) = name.strip_prefix(".tmp-") {
            let pid: Option<i32> = rest.rsplit('-').next().and_then(|p| p.parse().ok());
            // SAFETY: kill with signal 0 only checks whether the process exists.
            let alive = pid.is_some_and(|p| unsafe { libc::kill(p, 0) } == 0);
            if !alive {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let mut entries = list(root);
    let mut total: u64 = entries.iter().map(|e| e.bytes).sum();
    let mut removed = Vec::new();
    while total > max_bytes {
        let Some(e) = entries.pop() else { break };
        std::fs::remove_dir_all(&e.dir)
            .with_context(|| format!("cannot remove {}", e.dir.display()))?;
        total -= e.bytes;
        removed.push(e);
    }
    Ok(removed)
}

/// Append a line to `builds.log` (one per real build: the tests count them).
pub fn log_build(root: &Path, line: &str) -> Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(root.join("builds.log"))?;
    writeln!(f, "{line}")?;
    Ok(())
}

/// A size such as `10G`, `500M`, `4096` (bytes; K, M, G, T are powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mul) = match t.chars().last() {
        Some(c @ ('K' | 'M' | 'G' | 'T' | 'k' | 'm' | 'g' | 't')) => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                _ => 40,
            };
            (&t[..t.len() - 1], 1u64 << shift)
        }
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .ok_or_else(|| format!("{s:?}: expected a size such as 10G, 500M or 4096"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(key: &str) -> Record {
        Record {
            key: key.into(),
            given: format!("git:{key}"),
            repository: "/r".into(),
            build_seconds: 1.0,
            release: "6.1.0".into(),
            source: KernelSource {
                revision: key.into(),
                tree_id: "t".into(),
                patches: vec![],
                config_sha256: "c".into(),
                config: String::new(),
                compiler: "gcc".into(),
                image_sha256: "i".into(),
                modules_sha256: None,
            },
            comments_only: None,
        }
    }

    #[test]
    fn keys_change_with_each_part() {
        let k = key("t", "c", "gcc 12");
        assert_eq!(k.len(), 64);
        assert_eq!(k, key("t", "c", "gcc 12"));
        assert_ne!(k, key("u", "c", "gcc 12"));
        assert_ne!(k, key("t", "d", "gcc 12"));
        assert_ne!(k, key("t", "c", "gcc 13"));
    }

    #[test]
    fn entries_are_stored_whole_listed_and_evicted_least_recently_used_first() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        for (i, k) in ["a", "b", "c"].iter().enumerate() {
            let s = staging(root, k).unwrap();
            std::fs::write(s.join("bzImage"), vec![0u8; 10_000]).unwrap();
            store(root, &s, &record(k)).unwrap();
            let when = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000 + i as u64);
            let f = std::fs::File::options()
                .write(true)
                .open(root.join("images").join(k).join(".used"))
                .unwrap();
            f.set_modified(when).unwrap();
        }
        // A half-made build of a dead process is not an entry and is swept.
        std::fs::create_dir_all(root.join("images/.tmp-d-999999999")).unwrap();
        let keys = |v: &[Entry]| v.iter().map(|e| e.record.key.clone()).collect::<Vec<_>>();
        assert_eq!(keys(&list(root)), ["c", "b", "a"]);
        assert!(lookup(root, "a").is_some(), "a used now");
        assert!(lookup(root, "zz").is_none());
        let removed = gc(root, 25_000).unwrap();
        assert_eq!(keys(&removed), ["b"]);
        assert_eq!(keys(&list(root)), ["a", "c"]);
        assert!(!root.join("images/.tmp-d-999999999").exists());
        assert_eq!(keys(&gc(root, 0).unwrap()).len(), 2);
    }

    #[test]
    fn an_entry_made_from_another_shares_its_files_and_says_so() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        let s = staging(root, "a").unwrap();
        std::fs::write(s.join("bzImage"), b"kernel").unwrap();
        std::fs::create_dir_all(s.join("lib/modules/6.1.0")).unwrap();
        std::fs::write(s.join("lib/modules/6.1.0/m.ko"), b"module").unwrap();
        let a = store(root, &s, &record("a")).unwrap();
        let mut b = record("b");
        b.comments_only = Some(CommentsOnly {
            key: "a".into(),
            given: "git:a".into(),
            files: vec!["mm/tlb.c".into()],
        });
        let e = store_same_as(root, &a, &b).unwrap();
        assert_eq!(std::fs::read(e.image()).unwrap(), b"kernel");
        assert_eq!(
            std::fs::read(e.modules().unwrap().join("m.ko")).unwrap(),
            b"module"
        );
        let back = lookup(root, "b").unwrap();
        assert_eq!(back.record.comments_only, b.comments_only);
        assert_eq!(back.record.key, "b");
        // An entry of an earlier abperf (no comments_only) still reads.
        let old = std::fs::read_to_string(a.dir.join("entry.json")).unwrap();
        assert!(!old.contains("comments_only"), "{old}");
        assert!(lookup(root, "a").unwrap().record.comments_only.is_none());
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("10G"), Ok(10 << 30));
        assert_eq!(parse_size("5m"), Ok(5 << 20));
        assert!(parse_size("x").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}
