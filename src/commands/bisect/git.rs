//! The range of a bisection from git: the first-parent line from the good revision to the bad
//! one, each commit with its subject.

use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::{Command, Stdio};

/// One revision of the range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    pub hash: String,
    pub subject: String,
    /// A merge's parents after the first (the merged branches' tips); empty for a commit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<String>,
}

impl Commit {
    /// The abbreviated hash (12 hex digits, as the kernel's Fixes: tags use).
    pub fn short(&self) -> &str {
        &self.hash[..self.hash.len().min(12)]
    }
}

/// `git -C repo ARGS`, its standard output; an error names the command and git's message.
pub fn git(repo: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| anyhow::anyhow!("git: cannot start it: {e}"))?;
    if !out.status.success() {
        anyhow::bail!(
            "git -C {} {}: {}",
            repo.display(),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The full hash of `rev` (a commit).
fn resolve(repo: &Path, rev: &str, flag: &str) -> anyhow::Result<String> {
    if rev.starts_with('-') {
        return Err(crate::error::usage(format!("{flag} {rev}: not a revision")));
    }
    let spec = format!("{rev}^{{commit}}");
    git(repo, &["rev-parse", "--verify", "--quiet", &spec])
        .map(|s| s.trim().to_string())
        .map_err(|_| {
            crate::error::usage(format!("{flag} {rev}: not a commit of {}", repo.display()))
        })
}

/// Revisions 0 (good) ..= n (bad) along bad's first-parent line.
pub fn range(repo: &Path, good: &str, bad: &str) -> anyhow::Result<Vec<Commit>> {
    let good_hash = resolve(repo, good, "--good")?;
    let bad_hash = resolve(repo, bad, "--bad")?;
    let span = format!("{good_hash}..{bad_hash}");
    let log = git(
        repo,
        &[
            "log",
            "--first-parent",
            "--reverse",
            "--format=%H%x00%P%x00%s",
            &span,
        ],
    )?;
    let mut commits = vec![commit(repo, &good_hash)?];
    for line in log.lines() {
        let mut fields = line.splitn(3, '\0');
        let (hash, parents, subject) = (
            fields.next().unwrap_or(""),
            fields.next().unwrap_or(""),
            fields.next().unwrap_or(""),
        );
        commits.push(Commit {
            hash: hash.to_string(),
            subject: subject.to_string(),
            merged: parents
                .split_whitespace()
                .skip(1)
                .map(str::to_string)
                .collect(),
        });
    }
    if commits.len() < 2 {
        return Err(crate::error::usage(format!(
            "--good {good} --bad {bad}: no commit between them (is --bad after --good?)"
        )));
    }
    // The first commit after good must have good as its first parent: good is on the line.
    let parent = git(repo, &["rev-parse", &format!("{}^1", commits[1].hash)])?;
    if parent.trim() != good_hash {
        return Err(crate::error::usage(format!(
            "--good {good}: not on the first-parent line of --bad {bad} (first-parent order is \
             bisected; pass a good revision on that line, e.g. the merge base)"
        )));
    }
    Ok(commits)
}

fn commit(repo: &Path, hash: &str) -> anyhow::Result<Commit> {
    let subject = git(repo, &["log", "-1", "--format=%s", hash])?;
    Ok(Commit {
        hash: hash.to_string(),
        subject: subject.trim_end().to_string(),
        merged: Vec::new(),
    })
}

/// The range inside the branch a merge brought in: (its fork point from the first parent, the
/// merged tip), for a bisection of the merged branch's own first-parent line.
pub fn merged_branch(repo: &Path, merge: &Commit) -> anyhow::Result<Option<(String, String)>> {
    let Some(tip) = merge.merged.first() else {
        return Ok(None);
    };
    let first = format!("{}^1", merge.hash);
    let base = git(repo, &["merge-base", &first, tip])?;
    Ok(Some((base.trim().to_string(), tip.clone())))
}
