//! `compare --git-log`: under the verdicts, `git log --oneline BASE..VARIANT` for every variant
//! whose kernel's provenance names a revision, against the baseline's (issue 41). The revisions
//! come from the store, which is untrusted: only hexadecimal object ids are given to git (never
//! read as an option or a revision expression), in the tree `--kernel-tree` names (default: the
//! current directory); commits missing there are said, not an error.

use crate::model::escape;
use crate::model::provenance::is_object_id;
use crate::report::Report;
use std::fmt::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Most commits listed per variant.
const MAX_COMMITS: usize = 200;

/// `git -C tree ARGS`, its standard output when it succeeded.
fn git(tree: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(tree)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether commit `rev` is in `tree`'s repository.
fn has_commit(tree: &Path, rev: &str) -> bool {
    git(tree, &["cat-file", "-e", &format!("{rev}^{{commit}}")]).is_some()
}

/// The block under the verdicts ("" when no two variants name revisions).
pub fn block(r: &Report, tree: &Path) -> String {
    let vs = &r.data.variants;
    let base = r
        .analysis
        .as_ref()
        .and_then(|a| r.data.position(&a.baseline))
        .unwrap_or(0);
    let rev = |i: usize| {
        vs.get(i)
            .and_then(|v| v.provenance.as_ref())
            .and_then(|p| p.revision.clone())
    };
    let Some(b) = rev(base) else {
        return String::new();
    };
    let others: Vec<(usize, String)> = (0..vs.len())
        .filter(|&i| i != base)
        .filter_map(|i| rev(i).map(|r| (i, r)))
        .collect();
    if others.is_empty() {
        return String::new();
    }
    let shown = escape::message(&tree.display().to_string()).into_owned();
    let mut s = String::new();
    let _ = writeln!(s);
    if git(tree, &["rev-parse", "--git-dir"]).is_none() {
        let _ = writeln!(
            s,
            "git log: {shown} is not a git repository (give the kernel tree with --kernel-tree DIR)"
        );
        return s;
    }
    for (i, v) in others {
        let _ = writeln!(
            s,
            "git log --oneline {}..{} ('{}' .. '{}'), in {shown}:",
            escape::message(&b),
            escape::message(&v),
            escape::message(&vs[base].name),
            escape::message(&vs[i].name)
        );
        let bad: Vec<&str> = [b.as_str(), v.as_str()]
            .into_iter()
            .filter(|x| !is_object_id(x))
            .collect();
        if !bad.is_empty() {
            let _ = writeln!(
                s,
                "  not run: the stored revision {} is not a hexadecimal object id",
                escape::message(bad[0])
            );
            continue;
        }
        let missing: Vec<&str> = [b.as_str(), v.as_str()]
            .into_iter()
            .filter(|x| !has_commit(tree, x))
            .collect();
        if !missing.is_empty() {
            let _ = writeln!(
                s,
                "  commit {} is not in this repository (fetch it, or give the tree it was built \
                 from with --kernel-tree DIR)",
                missing.join(" and ")
            );
            continue;
        }
        let max = format!("--max-count={MAX_COMMITS}");
        let range = format!("{b}..{v}");
        match git(
            tree,
            &[
                "log",
                "--oneline",
                "--no-decorate",
                "--no-color",
                &max,
                &range,
            ],
        ) {
            Some(out) if out.trim().is_empty() => {
                let _ = writeln!(
                    s,
                    "  (no commits: the variant's revision is in the base's history)"
                );
            }
            Some(out) => {
                for l in out.lines() {
                    let _ = writeln!(s, "  {}", escape::message(l));
                }
            }
            None => {
                let _ = writeln!(s, "  git log failed in this repository");
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Dataset, KernelProvenance, Variant};
    use crate::report::View;

    fn report(revs: [&str; 2]) -> Report {
        let v = |n: &str, rev: &str| Variant {
            provenance: Some(KernelProvenance {
                revision: Some(rev.to_string()),
                ..KernelProvenance::of_image("a".repeat(64), None)
            }),
            ..Variant::named(n)
        };
        let ds = Dataset::new(
            vec![],
            vec![v("base", revs[0]), v("patched", revs[1])],
            vec![],
            String::new(),
        );
        Report::new(ds, View::Compare)
    }

    fn repo() -> Option<(tempfile::TempDir, Vec<String>)> {
        let d = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            Command::new("git")
                .arg("-C")
                .arg(d.path())
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "commit.gpgsign=false",
                ])
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
        };
        run(&["init", "-q"])?;
        let mut ids = Vec::new();
        for subject in ["base", "x86/mm: ceiling 33", "comment only"] {
            run(&["commit", "-q", "--allow-empty", "-m", subject])?;
            let id = run(&["rev-parse", "HEAD"])?;
            ids.push(String::from_utf8_lossy(&id.stdout).trim().to_string());
        }
        Some((d, ids))
    }

    #[test]
    fn lists_the_commits_between_base_and_variant() {
        // git is one of abperf's programs (bisect needs it too): its absence is a failure.
        let (d, ids) = repo().expect("git makes a repository with three commits");
        let s = block(&report([&ids[0], &ids[2]]), d.path());
        assert!(s.contains(" x86/mm: ceiling 33\n"), "{s}");
        assert!(s.contains(" comment only\n"), "{s}");
        assert!(!s.contains(" base\n"), "{s}");
        // A commit this repository lacks is said, not an error.
        let s = block(&report([&ids[0], &"e".repeat(40)]), d.path());
        assert!(
            s.contains(&format!(
                "commit {} is not in this repository",
                "e".repeat(40)
            )),
            "{s}"
        );
        // A stored revision that is not an object id never reaches git.
        let s = block(&report([&ids[0], "--output=/tmp/x"]), d.path());
        assert!(
            s.contains("not run: the stored revision --output=/tmp/x"),
            "{s}"
        );
        // Not a repository.
        let e = tempfile::tempdir().unwrap();
        assert!(block(&report([&ids[0], &ids[1]]), e.path()).contains("is not a git repository"));
    }
}
