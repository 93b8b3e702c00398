//! `make` in a private worktree with a persistent O= directory: the reproducible-build variables
//! fixed (the same source, .config and compiler give byte-identical images), ccache when it is
//! installed (its directory in abperf's cache, `CCACHE_BASEDIR` there so worktree paths do not
//! defeat it), every line of output kept in a log and handed to a progress callback.

use anyhow::{Context, Result, bail};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The variables that make a build reproducible, and part of the cache key.
pub const REPRODUCIBLE: &[(&str, &str)] = &[
    ("KBUILD_BUILD_TIMESTAMP", "Thu Jan  1 00:00:00 UTC 1970"),
    ("KBUILD_BUILD_USER", "abperf"),
    ("KBUILD_BUILD_HOST", "abperf"),
    ("KBUILD_BUILD_VERSION", "1"),
];

/// The make variables given on every make command line (also in the cache key).
pub const MAKE_VARS: &[&str] = &["LOCALVERSION="];

/// A make in `src` with `O=out`.
pub struct Make {
    pub src: PathBuf,
    pub out: PathBuf,
    /// ccache's directory (None: no ccache on this machine).
    pub ccache: Option<PathBuf>,
    /// CCACHE_BASEDIR: abperf's cache for kernels, above every worktree.
    pub basedir: PathBuf,
    pub jobs: usize,
}

/// Whether `prog` is on PATH.
pub fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            let f = d.join(prog);
            f.is_file()
                && std::fs::metadata(&f)
                    .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0)
                    .unwrap_or(false)
        })
    })
}

/// The compiler's version line (`gcc --version`, first line): part of the cache key.
pub fn compiler_version() -> Result<String> {
    let out = Command::new("gcc")
        .arg("--version")
        .output()
        .context("cannot run gcc --version (is gcc installed?)")?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string())
}

impl Make {
    fn command(&self, targets: &[&str]) -> Command {
        let mut c = Command::new("make");
        c.arg("-C")
            .arg(&self.src)
            .arg(format!("O={}", self.out.display()));
        c.args(MAKE_VARS);
        if let Some(dir) = &self.ccache {
            c.args(["CC=ccache gcc", "HOSTCC=ccache gcc"]);
            c.env("CCACHE_DIR", dir)
                .env("CCACHE_BASEDIR", &self.basedir)
                .env("CCACHE_NOHASHDIR", "1");
        }
        c.arg(format!("-j{}", self.jobs.max(1)));
        c.args(targets);
        for (k, v) in REPRODUCIBLE {
            c.env(k, v);
        }
        c.env("LC_ALL", "C").stdin(Stdio::null());
        c
    }

    /// A configuration target (`tinyconfig`, `olddefconfig`): its output only on failure.
    pub fn quiet(&self, targets: &[&str]) -> Result<()> {
        std::fs::create_dir_all(&self.out)?;
        let out = self
            .command(targets)
            .arg("-s")
            .output()
            .context("cannot run make (is it installed?)")?;
        if !out.status.success() {
            bail!(
                "make {} failed: {}",
                targets.join(" "),
                tail(&String::from_utf8_lossy(&out.stderr), 10)
            );
        }
        Ok(())
    }

    /// Build `targets`, every line of output appended to `log` and given to `progress`. On
    /// failure the error carries the log's last lines.
    pub fn logged(
        &self,
        targets: &[&str],
        log: &Path,
        progress: &mut dyn FnMut(&str),
    ) -> Result<()> {
        std::fs::create_dir_all(&self.out)?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("cannot open the build log {}", log.display()))?;
        let mut child = self
            .command(targets)
            .stdout(Stdio::piped())
            .stderr(file.try_clone()?)
            .spawn()
            .context("cannot run make (is it installed?)")?;
        let mut file = file;
        if let Some(out) = child.stdout.take() {
            for line in BufReader::new(out).lines() {
                let line = line.unwrap_or_default();
                writeln!(file, "{line}")?;
                progress(&line);
            }
        }
        let status = child.wait()?;
        if !status.success() {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let errors: Vec<&str> = text
                .lines()
                .filter(|l| l.contains("error:"))
                .take(5)
                .collect();
            bail!(
                "make {} failed ({status}); {}the last lines of {}:\n{}",
                targets.join(" "),
                if errors.is_empty() {
                    String::new()
                } else {
                    format!("the first errors:\n{}\n", errors.join("\n"))
                },
                log.display(),
                tail(&text, 10)
            );
        }
        Ok(())
    }
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
        assert_eq!(tail("", 3), "");
    }
}
