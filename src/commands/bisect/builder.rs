//! How a checked-out revision is made ready to measure: the one place a bisection's kind of
//! build is chosen. Today a user-space build command (`--build CMD`, by `sh -c` in the
//! revision's worktree); a kernel built from the revision and booted in a VM (the issue "From a
//! commit or a patch to a booted kernel") is meant to be a second implementation of [`Builder`],
//! chosen in [`super::Plan`] and nowhere else. `abperf bisect` does not bisect kernels yet.

use std::path::Path;
use std::process::{Command, Stdio};

/// Makes one revision's worktree ready for the measured command.
pub trait Builder {
    /// Build the revision checked out at `worktree`, its output to `log`: Ok(Ok(())) when it is
    /// ready, Ok(Err(why)) when it does not build (the revision is skipped like `git bisect
    /// skip`), Err when the build could not be attempted at all (the bisection stops).
    fn build(&self, worktree: &Path, log: &Path) -> anyhow::Result<Result<(), String>>;
}

/// `--build CMD`: run by `sh -c` in the worktree (`{WORKTREE}` and `$ABPERF_WORKTREE` name it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellBuild {
    pub command: String,
}

impl Builder for ShellBuild {
    fn build(&self, worktree: &Path, log: &Path) -> anyhow::Result<Result<(), String>> {
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
