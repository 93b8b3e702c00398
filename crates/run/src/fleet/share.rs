//! A fleet host's share of the experiment, and the host side that runs it:
//! `abperf run --fleet-share FILE --lines OUT` runs the share's slots exactly as a VM guest runs
//! its boot's (`runner::guest::run_slots_into`) and appends every [`Line`] to OUT, flushed to
//! disk (fsync) before the next run starts, so a host that goes away keeps every finished run
//! for the coordinator to fetch later. Slots whose runs OUT already holds (an earlier dispatch
//! that was cut off) are not run again.

use crate::runner::experiment::RunConfig;
use crate::runner::guest::{Line, LineSink, ShareVariant, Slots, end_line, run_slots_into};
use abperf_model::Slot;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// What one host runs in one dispatch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FleetShare {
    pub experiment: i64,
    /// The host's name in the inventory, and its place in the plan.
    pub host: String,
    pub place: usize,
    pub variants: Vec<ShareVariant>,
    pub cfg: RunConfig,
    /// `--strict`: an event the host cannot count is an error.
    pub strict: bool,
    /// The slots still to run, in schedule order (seqs of the whole experiment).
    pub slots: Vec<Slot>,
}

/// The lines of a lines file that are whole: a line cut off by a crash (no newline) is not
/// one. Returns the lines and the length of the whole ones in bytes.
pub fn whole_lines(text: &str) -> (Vec<&str>, usize) {
    let whole = text.rfind('\n').map_or(0, |i| i + 1);
    let lines = text[..whole].lines().filter(|l| !l.is_empty()).collect();
    (lines, whole)
}

/// Where a host's lines go: appended to its lines file, each one on disk before the next run.
pub struct LinesFile {
    path: PathBuf,
    file: File,
}

impl LinesFile {
    /// Open (or create) `path` for appending, dropping a line a crash cut off; returns the file
    /// and the seqs of the runs it holds. The file stays locked (flock) while it is open: an
    /// abperf left running by a dispatch whose connection went away keeps a second one (a
    /// `--resume`) from running the same slots beside it.
    pub fn open(path: &Path) -> anyhow::Result<(LinesFile, BTreeSet<u32>)> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open {} to append", path.display()))?;
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            anyhow::bail!(
                "{}: another abperf still runs this host's share (an earlier dispatch whose \
                 connection went away); resume once it has ended",
                path.display()
            );
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let (lines, whole) = whole_lines(&text);
        let mut done = BTreeSet::new();
        for l in lines {
            if let Line::Run { run } =
                Line::parse(l).with_context(|| format!("{}: a line", path.display()))?
            {
                done.insert(run.seq);
            }
        }
        if whole < text.len() {
            file.set_len(whole as u64)
                .with_context(|| format!("cannot cut the last line of {}", path.display()))?;
        }
        let lines = LinesFile {
            path: path.to_path_buf(),
            file,
        };
        Ok((lines, done))
    }
}

impl LineSink for LinesFile {
    fn send_line(&mut self, line: &Line) -> anyhow::Result<()> {
        let mut text = serde_json::to_string(line)?;
        text.push('\n');
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.sync_data())
            .with_context(|| format!("cannot write to {}", self.path.display()))
    }
}

/// `abperf run --fleet-share FILE --lines OUT` on a fleet host: run the share's slots that OUT
/// does not hold yet, append a line per finished run, end with a [`Line::End`]. Exit status as
/// a guest's (`runner::guest::end_line`).
pub fn run(share: &Path, lines: &Path) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(share)
        .with_context(|| format!("cannot read the share {}", share.display()))?;
    let share: FleetShare = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a fleet share of this abperf", share.display()))?;
    let (mut out, done) = LinesFile::open(lines)?;
    let slots = Slots {
        variants: &share.variants,
        cfg: &share.cfg,
        strict: share.strict,
        slots: &share.slots,
        done,
    };
    let result = run_slots_into(&slots, &mut out);
    let (end, code) = end_line(&result);
    out.send_line(&end)?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_cut_off_is_dropped_and_the_runs_before_it_are_done() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lines.jsonl");
        let run = |seq| {
            serde_json::json!({"type": "run", "run": {"seq": seq, "warmup": false,
                "status": "ok", "exit_code": 0, "signal": null, "started_ns": 1,
                "ended_ns": 2, "metrics": []}})
            .to_string()
        };
        std::fs::write(&path, format!("{}\n{}\n{{\"type\":\"ru", run(3), run(5))).unwrap();
        let (mut f, done) = LinesFile::open(&path).unwrap();
        assert_eq!(done, BTreeSet::from([3, 5]));
        f.send_line(&Line::End {
            ending: "complete".into(),
            message: None,
        })
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let (lines, whole) = whole_lines(&text);
        assert_eq!(lines.len(), 3);
        assert_eq!(whole, text.len());
        assert!(lines[2].contains("complete"));
    }
}
