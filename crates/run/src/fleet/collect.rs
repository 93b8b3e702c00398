//! The coordinator's side of a host's lines: every run fetched that the store does not hold yet
//! is checked against the host's slots and committed, labelled with the host's inventory name
//! (the same check and conversion as a VM guest's runs: `runner::boots::check_wire`); the
//! host's hello (its abperf and machine snapshot) is kept with the host.

use super::lines_file::whole_lines;
use crate::runner::boots::check_wire;
use crate::runner::guest::Line;
use abperf_model::Slot;
use abperf_store::{FleetHost, Store};
use anyhow::Context;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Commit the runs of `host`'s fetched lines file `path` that `done` (the experiment's stored
/// seqs, which gains them) does not hold. Returns how many were committed, and what the host
/// reported wrong (reading stops there; what came before is kept).
pub fn commit_lines(
    store: &mut Store,
    exp_id: i64,
    host: &FleetHost,
    schedule: &[Slot],
    path: &Path,
    done: &mut BTreeSet<u32>,
) -> anyhow::Result<(usize, Option<String>)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the runs fetched from {}", host.name))?;
    let wanted: BTreeMap<u32, Slot> = schedule
        .iter()
        .filter(|s| host.owns(s.seq))
        .map(|s| (s.seq, *s))
        .collect();
    let who = format!("host {}", host.name);
    let mut got = BTreeSet::new();
    let mut committed = 0;
    for text in whole_lines(&text).0 {
        let line = match Line::parse(text) {
            Ok(l) => l,
            Err(e) => return Ok((committed, Some(format!("{e:#}")))),
        };
        match line {
            Line::Hello {
                abperf,
                environment,
                ..
            } => store.set_fleet_host_hello(exp_id, &host.name, &abperf, &environment)?,
            Line::Run { run } if done.contains(&run.seq) => {}
            Line::Run { run } => {
                let slot = match check_wire(&wanted, &mut got, &run, &who) {
                    Ok(s) => *s,
                    Err(e) => return Ok((committed, Some(format!("{e:#}")))),
                };
                let mut run = run.into_run(&slot, slot.variant);
                run.labels.host = Some(host.name.clone());
                if commit_once(store, exp_id, &run)? {
                    committed += 1;
                }
                done.insert(slot.seq);
            }
            Line::End { .. } => {}
            Line::Profile { .. } => {
                let e = format!("{who} sent a profiled run: fleet runs take none (no --profile)");
                return Ok((committed, Some(e)));
            }
        }
    }
    Ok((committed, None))
}

/// Commit `run` unless a run of its slot is stored already: the store holds one run per slot
/// (UNIQUE), so a run the host committed itself meanwhile (into a shared store) is refused
/// there and found after catching up. Returns whether this committed it.
fn commit_once(store: &mut Store, exp_id: i64, run: &abperf_model::Run) -> anyhow::Result<bool> {
    let Err(e) = store.commit_run(exp_id, run) else {
        return Ok(true);
    };
    store.catch_up(exp_id)?;
    if store.done_seqs(exp_id)?.contains(&run.seq) {
        return Ok(false);
    }
    Err(e.context(format!("committing run {} of experiment {exp_id}", run.seq)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::Order;
    use abperf_model::{Kind, NewExperiment, Variant};

    fn line(seq: u32, warmup: bool) -> String {
        serde_json::json!({"type": "run", "run": {"seq": seq, "warmup": warmup, "status": "ok",
            "exit_code": 0, "signal": null, "started_ns": 1, "ended_ns": 2,
            "metrics": [{"name": "wall_ns", "value": 5.0, "unit": "ns"}]}})
        .to_string()
    }

    #[test]
    fn runs_are_labelled_and_stored_once_and_a_run_of_another_host_stops_the_reading() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let names = vec!["a".to_string(), "b".to_string()];
        let (schedule, hosts) = super::super::plan::plan(&names, Order::Abba, 1, 2, 0, 3);
        let exp = NewExperiment {
            name: "f".into(),
            kind: Kind::Run,
            command_line: vec![],
            design: serde_json::json!({}),
            seed: Some(3),
            environment: serde_json::json!({}),
        };
        let id = store
            .create_experiment(&exp, &[Variant::named("x")], &schedule)
            .unwrap();
        store.set_fleet_hosts(id, &hosts).unwrap();
        let path = dir.path().join("a.jsonl");
        let b_seq = hosts[1].first_seq;
        let text = format!(
            "{}\n{}\n{}\n",
            line(0, false),
            line(0, false),
            line(b_seq, false)
        );
        std::fs::write(&path, text).unwrap();
        let mut done = BTreeSet::new();
        let (n, wrong) =
            commit_lines(&mut store, id, &hosts[0], &schedule, &path, &mut done).unwrap();
        assert_eq!(n, 1);
        let not_its = format!("host a reported run {b_seq} that is not in its share");
        assert!(wrong.unwrap().contains(&not_its));
        // Fetched again (a resume): what is stored is not stored twice.
        std::fs::write(&path, format!("{}\n{}\n", line(0, false), line(1, false))).unwrap();
        let (n, wrong) =
            commit_lines(&mut store, id, &hosts[0], &schedule, &path, &mut done).unwrap();
        assert_eq!((n, wrong), (1, None));
        // A run stored by another process meanwhile (a host that commits its own runs): the
        // store's one run per slot refuses it, and it is not counted.
        let (n, wrong) = commit_lines(
            &mut store,
            id,
            &hosts[0],
            &schedule,
            &path,
            &mut BTreeSet::new(),
        )
        .unwrap();
        assert_eq!((n, wrong), (0, None));
        let runs = store.runs(id).unwrap();
        assert_eq!(runs.len(), 2);
        assert!(runs.iter().all(|r| r.labels.host.as_deref() == Some("a")));
    }
}
