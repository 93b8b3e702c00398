//! Each revision checked out and built once, in a private directory (0700, under the temporary
//! directory, never the user's checkout): `git worktree add --detach`, then the bisection's
//! [`Builder`] there. Every worktree is removed, and the directory with it, when the bisection
//! ends on any way out (drop).

use super::builder::Builder;
use super::git::{Commit, git};
use std::collections::BTreeMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// How a revision's build went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Built {
    /// Its worktree, built.
    Ready(PathBuf),
    /// The build failed (why, in words); the revision is skipped.
    Failed(String),
}

pub struct Worktrees {
    repo: PathBuf,
    dir: PathBuf,
    builder: Box<dyn Builder>,
    made: BTreeMap<usize, PathBuf>,
}

impl Worktrees {
    /// A new private directory for the worktrees of `repo`.
    pub fn new(repo: &Path, builder: Box<dyn Builder>) -> anyhow::Result<Worktrees> {
        let base = std::env::temp_dir();
        for _ in 0..16 {
            let dir = base.join(format!("abperf-bisect-{:016x}", rand::random::<u64>()));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    return Ok(Worktrees {
                        repo: repo.to_path_buf(),
                        dir,
                        builder,
                        made: BTreeMap::new(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => anyhow::bail!("{}: cannot create it: {e}", dir.display()),
            }
        }
        anyhow::bail!("{}: no free name for a private directory", base.display())
    }

    /// The worktree of revision `index` (`commit`), checked out and built on first use.
    pub fn get(&mut self, index: usize, commit: &Commit) -> anyhow::Result<Built> {
        if let Some(p) = self.made.get(&index) {
            return Ok(Built::Ready(p.clone()));
        }
        let path = self.dir.join(commit.short());
        let shown = path.display().to_string();
        git(
            &self.repo,
            &[
                "worktree",
                "add",
                "--detach",
                "--quiet",
                &shown,
                &commit.hash,
            ],
        )?;
        self.made.insert(index, path.clone());
        let log = self.dir.join(format!("build-{}.log", commit.short()));
        match self.builder.build(&path, &log)? {
            Ok(()) => Ok(Built::Ready(path)),
            Err(why) => {
                self.remove(index);
                Ok(Built::Failed(why))
            }
        }
    }

    /// Remove the worktree of `index`, if there is one (a probe the search has left).
    pub fn remove(&mut self, index: usize) {
        if let Some(p) = self.made.remove(&index) {
            let shown = p.display().to_string();
            if let Err(e) = git(&self.repo, &["worktree", "remove", "--force", &shown]) {
                crate::error::stderr_line(&format!("abperf: warning: {e:#}"));
                let _ = std::fs::remove_dir_all(&p);
            }
        }
    }

    /// Revisions with a worktree now.
    pub fn held(&self) -> Vec<usize> {
        self.made.keys().copied().collect()
    }
}

impl Drop for Worktrees {
    fn drop(&mut self) {
        for i in self.held() {
            self.remove(i);
        }
        let _ = git(&self.repo, &["worktree", "prune"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
