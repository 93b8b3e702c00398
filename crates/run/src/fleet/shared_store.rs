//! A fleet host that commits its own runs: when the fleet's store is one the hosts reach (a
//! PostgreSQL DSN in the share), each finished run is appended to the lines file first (the
//! fallback the coordinator fetches), then committed into that store, labelled with the host,
//! the moment it ends: a host that disappears loses only its run in flight. The store holds
//! one run per slot, so a run committed here and fetched from the lines file is stored once.
//!
//! A commit that fails (the server gone, a network cut) is said on stderr and no other is
//! tried: the lines file still holds every run, for the coordinator to commit.

use super::lines_file::LinesFile;
use crate::runner::guest::{Line, LineSink};
use abperf_model::Slot;
use abperf_store::Store;
use std::collections::BTreeMap;

/// A host's lines: to its lines file, and each run into the shared store while it takes them.
pub struct Committing {
    lines: LinesFile,
    store: Option<Store>,
    experiment: i64,
    host: String,
    slots: BTreeMap<u32, Slot>,
}

impl Committing {
    /// Lines to `lines`, and runs of `slots` (the host's share) into the store at `location` as
    /// runs of `experiment` labelled `host` (none when `location` is None or cannot be opened:
    /// then said on stderr).
    pub fn new(
        lines: LinesFile,
        location: Option<&abperf_store::Location>,
        experiment: i64,
        host: &str,
        slots: &[Slot],
    ) -> Committing {
        let store = location.and_then(|at| match Store::open_to_add_runs(at, experiment) {
            Ok(s) => Some(s),
            Err(e) => {
                warn(host, &format!("{e:#}"));
                None
            }
        });
        Committing {
            lines,
            store,
            experiment,
            host: host.to_string(),
            slots: slots.iter().map(|s| (s.seq, *s)).collect(),
        }
    }
}

fn warn(host: &str, why: &str) {
    abperf_model::error::stderr_line(&format!(
        "abperf: warning: host {host} commits no run into the fleet's store ({why}); its lines \
         file keeps them for the coordinator"
    ));
}

impl LineSink for Committing {
    fn send_line(&mut self, line: &Line) -> anyhow::Result<()> {
        self.lines.send_line(line)?;
        let (Line::Run { run }, Some(store)) = (line, self.store.as_mut()) else {
            return Ok(());
        };
        let Some(slot) = self.slots.get(&run.seq) else {
            return Ok(()); // not of the share: the coordinator reports it
        };
        let mut run = run.clone().into_run(slot, slot.variant);
        run.labels.host = Some(self.host.clone());
        if let Err(e) = store.commit_run(self.experiment, &run) {
            let why = format!("run {}: {e:#}", run.seq);
            warn(&self.host, &why);
            self.store = None;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::guest::WireRun;
    use abperf_model::RunStatus;

    #[test]
    fn a_store_that_cannot_be_reached_leaves_the_lines_file_to_hold_every_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lines.jsonl");
        let (lines, _) = LinesFile::open(&path).unwrap();
        let slot = Slot {
            seq: 4,
            variant: 0,
            block: 0,
            warmup: false,
        };
        // Nothing listens on port 1: the host says so and runs on.
        let nowhere = abperf_store::Location::parse("postgres://abperf@127.0.0.1:1/abperf");
        let mut out = Committing::new(lines, Some(&nowhere), 1, "lab-a", &[slot]);
        assert!(out.store.is_none());
        let run = WireRun {
            seq: 4,
            warmup: false,
            status: RunStatus::Ok,
            exit_code: Some(0),
            signal: None,
            started_ns: 1,
            ended_ns: 2,
            metrics: vec![],
        };
        out.send_line(&Line::Run { run }).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches(r#""type":"run""#).count(), 1, "{text}");
    }
}
