//! The coordinator's side of a host's lines: every run fetched that the store does not hold yet
//! is checked against the host's slots and committed, labelled with the host's inventory name
//! (the same check and conversion as a VM guest's runs: `runner::boots::check_wire`); the
//! host's hello (its abperf and machine snapshot) is kept with the host.

use super::share::whole_lines;
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
                store.commit_run(exp_id, &run)?;
                done.insert(slot.seq);
                committed += 1;
            }
            Line::End { .. } => {}
        }
    }
    Ok((committed, None))
}
