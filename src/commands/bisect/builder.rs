//! What a bisection bisects: how a revision is made ready to measure and how a step's
//! revisions are measured, chosen once in [`super::Plan::bisect`] and nowhere else. Two kinds:
//! a user-space program ([`ShellBuild`]: `--build CMD` by `sh -c` in the revision's own git
//! worktree, the command run there) and a kernel ([`super::kernel::KernelBuild`]: built from
//! the revision by ksrc, cached by content, each probe's kernels booted in VMs with the boots as
//! the replicates).

use super::git::{Commit, git};
use super::step::{self, End, Planned, Runs};
use crate::store::Store;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One kind of bisection.
pub trait Builder {
    /// A revision made ready (its built worktree, its kernel).
    type Ready: Clone;

    /// Make `commit` ready, with `dir` (the bisection's private directory, 0700) for its files:
    /// Ok(Ok(ready)), Ok(Err(why)) when it does not build (the revision is skipped like `git
    /// bisect skip`), Err when the build could not be attempted at all (the bisection stops).
    fn build(&mut self, commit: &Commit, dir: &Path)
    -> anyhow::Result<Result<Self::Ready, String>>;

    /// Let go of a revision the search has left.
    fn release(&mut self, ready: Self::Ready);

    /// Store step `planned` (its revisions made ready: `ready`) as an experiment and execute
    /// it; its id (0: stopped by a signal before it was stored) and how it ended.
    fn run(
        &self,
        store: &mut Store,
        runs: &Runs,
        planned: &Planned,
        ready: &[Self::Ready],
    ) -> anyhow::Result<(i64, End)>;
}

/// `--build CMD`: each revision checked out with `git worktree add --detach` in the private
/// directory and built there by `sh -c` (`{WORKTREE}` and `$ABPERF_WORKTREE` name it); the
/// measured command runs in the worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellBuild {
    pub repo: PathBuf,
    pub command: String,
}

impl Builder for ShellBuild {
    type Ready = PathBuf;

    fn build(&mut self, commit: &Commit, dir: &Path) -> anyhow::Result<Result<PathBuf, String>> {
        let worktree = dir.join(commit.short());
        let shown = worktree.display().to_string();
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
        let log = dir.join(format!("build-{}.log", commit.short()));
        match self.shell(&worktree, &log) {
            Ok(Ok(())) => Ok(Ok(worktree)),
            other => {
                self.release(worktree);
                other.map(|r| r.map(|()| PathBuf::new()))
            }
        }
    }

    fn release(&mut self, worktree: PathBuf) {
        let shown = worktree.display().to_string();
        if let Err(e) = git(&self.repo, &["worktree", "remove", "--force", &shown]) {
            crate::error::stderr_line(&format!("abperf: warning: {e:#}"));
            let _ = std::fs::remove_dir_all(&worktree);
        }
    }

    fn run(
        &self,
        store: &mut Store,
        runs: &Runs,
        planned: &Planned,
        ready: &[PathBuf],
    ) -> anyhow::Result<(i64, End)> {
        step::run(store, runs, planned, ready)
    }
}

impl ShellBuild {
    /// The build command in `worktree`, its output to `log`.
    fn shell(&self, worktree: &Path, log: &Path) -> anyhow::Result<Result<(), String>> {
        let shown = worktree.display().to_string();
        let out =
            std::fs::File::create(log).map_err(|e| anyhow::anyhow!("{}: {e}", log.display()))?;
        let status = Command::new("sh")
            .arg("-c")
            .arg(self.command.replace("{WORKTREE}", &shown))
            .current_dir(worktree)
            .env("ABPERF_WORKTREE", worktree)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .status()
            .map_err(|e| anyhow::anyhow!("--build: cannot start sh: {e}"))?;
        if status.success() {
            return Ok(Ok(()));
        }
        let tail = std::fs::read_to_string(log).unwrap_or_default();
        let last = tail
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        Ok(Err(format!("the build {status}: {last}")))
    }
}

impl Drop for ShellBuild {
    fn drop(&mut self) {
        let _ = git(&self.repo, &["worktree", "prune"]);
    }
}
