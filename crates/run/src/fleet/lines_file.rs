//! A fleet host's lines file: every [`Line`] of its share appended and flushed to disk (fsync)
//! before the next run starts, so a host that goes away keeps every finished run for the
//! coordinator to fetch later; read back, a line a crash cut off is dropped.

use crate::runner::guest::{Line, LineSink};
use anyhow::Context;
use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

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
