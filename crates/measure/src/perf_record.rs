//! Profiled runs: a command run under `perf record` with call graphs, and the recording turned
//! into `perf script` text for the parser (`abperf_import::perf_script`).
//!
//! The distribution's `perf` rather than our own perf_event_open sampler: unwinding frame-pointer
//! chains, reading the user binaries' symbol tables (and their build ids) and resolving kernel
//! addresses through /proc/kallsyms is what `perf` is maintained for, and its recordings are the
//! same files users already exchange, so `abperf import --format perf-script` reads both
//! (docs/profile.md#why-perf-record). No sysctl is changed: abperf runs as root, for whom
//! `perf_event_paranoid` and `kptr_restrict` do not hide kernel samples or symbols.

use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The fields `perf script` prints: the parser needs the time and the event on the header line.
const SCRIPT_FIELDS: &str = "comm,tid,time,period,event,ip,sym,dso";

/// How profiled runs are sampled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sampler {
    pub perf: PathBuf,
    /// The event sampled (`cycles` where the CPU has a PMU, else `cpu-clock`).
    pub event: String,
    /// Samples per second.
    pub frequency: u32,
}

/// The event sampled when none is asked: `cycles` where a CPU PMU exists, else the `cpu-clock`
/// software timer (virtual machines without a virtual PMU, like the one this was written on).
pub fn default_event() -> &'static str {
    if Path::new("/sys/bus/event_source/devices/cpu").exists() {
        "cycles"
    } else {
        "cpu-clock"
    }
}

impl Sampler {
    /// `perf` from PATH sampling `event` (default: [`default_event`]) at `frequency` Hz.
    pub fn new(event: Option<&str>, frequency: u32) -> anyhow::Result<Sampler> {
        let perf = crate::command::resolve_program("perf")
            .context("--profile needs `perf` (linux-perf / linux-tools) in PATH")?;
        Ok(Sampler {
            perf,
            event: event.unwrap_or(default_event()).to_string(),
            frequency,
        })
    }

    /// The `perf record` command line that samples `argv` into `data`: frame-pointer call
    /// graphs (`-g`): cheap per sample and enough for kernels and binaries built with frame
    /// pointers; DWARF unwinding copies 8 KiB of stack per sample and would perturb the run
    /// far more (docs/profile.md#call-graphs). No build ids: the recording is read back at
    /// once, by path, so perf's scan of every mapped object after the run and its copy into
    /// ~/.debug would only cost time and disk.
    pub fn record_args(&self, data: &Path, argv: &[String]) -> Vec<String> {
        let mut args: Vec<String> = [
            "record",
            "-q",
            "--no-buildid",
            "--no-buildid-cache",
            "-e",
            &self.event,
            "-F",
            &self.frequency.to_string(),
            "--call-graph=fp",
            "-o",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(data.to_string_lossy().into_owned());
        args.push("--".to_string());
        args.extend(argv.iter().cloned());
        args
    }

    /// Run `argv` under `perf record`, its recording kept in `dir` (a directory only root
    /// writes) only until it is read back; returns the `perf script` text.
    pub fn record(&self, argv: &[String], dir: &Path) -> anyhow::Result<String> {
        self.record_pinned(argv, dir, None)
    }

    /// [`Sampler::record`] with perf and the command pinned to `pin` (the CPUs the timed runs
    /// are pinned to), inherited by the command perf starts.
    pub fn record_pinned(
        &self,
        argv: &[String],
        dir: &Path,
        pin: Option<crate::affinity::Mask>,
    ) -> anyhow::Result<String> {
        let data = dir.join("perf.data");
        let mut cmd = Command::new(&self.perf);
        cmd.args(self.record_args(&data, argv))
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        if let Some(mask) = pin {
            // SAFETY: runs between fork and exec; Mask::apply is one system call, no allocation.
            unsafe {
                use std::os::unix::process::CommandExt;
                cmd.pre_exec(move || mask.apply());
            }
        }
        // The command's output is discarded, as the timed runs' is; perf's (and its) stderr is
        // kept for the error when the recording fails.
        let out = cmd
            .stderr(Stdio::piped())
            .output()
            .with_context(|| format!("starting {}", self.perf.display()))?;
        let text = if out.status.success() {
            self.script(&data)
        } else {
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = err.lines().rev().take(3).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            Err(anyhow::anyhow!(
                "perf record of {argv:?} ended with {}: {}",
                out.status,
                tail.join(" / ")
            ))
        };
        let _ = std::fs::remove_file(&data);
        text
    }

    /// The `perf script` text of the recording `data`.
    pub fn script(&self, data: &Path) -> anyhow::Result<String> {
        let out = Command::new(&self.perf)
            .args(["script", "-F", SCRIPT_FIELDS, "-i"])
            .arg(data)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .with_context(|| format!("starting {} script", self.perf.display()))?;
        if !out.status.success() {
            bail!(
                "perf script -i {} failed: {}",
                data.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_command_line() {
        let s = Sampler {
            perf: "/usr/bin/perf".into(),
            event: "cpu-clock".into(),
            frequency: 999,
        };
        let args = s.record_args(Path::new("/d/perf.data"), &["./t".into(), "20".into()]);
        assert_eq!(
            args.join(" "),
            "record -q --no-buildid --no-buildid-cache -e cpu-clock -F 999 --call-graph=fp -o /d/perf.data -- ./t 20"
        );
    }
}
