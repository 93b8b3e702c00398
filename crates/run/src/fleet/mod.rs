//! One experiment over a fleet of hosts, dispatched through Ansible (`abperf fleet run`).
//!
//! The coordinator plans the whole experiment first ([`plan`]: every host runs every variant in
//! its own seeded schedule, the hosts' slots recorded in the store before anything is
//! dispatched), reads the hosts from the inventory as Ansible does ([`inventory`]), then runs
//! one generated playbook for all hosts ([`playbook`], [`dispatch`]): each host gets the
//! coordinator's abperf (version checked) and its share ([`share`]), runs it with
//! `abperf run --fleet-share`, and its lines file of finished runs is fetched back. The
//! coordinator commits every fetched run it does not hold yet, labelled with the host's name
//! ([`collect`]). When the store is one the hosts reach (PostgreSQL), each host also commits its
//! runs there itself as they end ([`shared_store`]), and the coordinator first catches up with
//! what they committed. A host that fails or cannot be reached is reported with Ansible's
//! reason; the others' runs are kept, and a later dispatch (`--resume`) runs only what is
//! missing.

pub mod collect;
pub mod dispatch;
pub mod inventory;
pub mod lines_file;
pub mod plan;
pub mod playbook;
pub mod share;
pub mod shared_store;

use crate::runner::experiment::RunConfig;
use crate::runner::guest::ShareVariant;
use abperf_model::{Slot, Variant};
use abperf_store::{FleetHost, Store};
use playbook::RemoteAbperf;
use serde::{Deserialize, Serialize};
use share::FleetShare;
use std::collections::BTreeSet;
use std::path::Path;

/// What a fleet experiment's design holds besides the run design (stored as `fleet`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetDesign {
    /// The name of the experiment's directory on every host (random: experiments of other
    /// coordinators and stores never share one).
    pub token: String,
    /// `--strict`: an event a host cannot count is an error.
    pub strict: bool,
    /// The inventory the experiment was planned from.
    pub inventory: String,
}

/// A new random token.
pub fn new_token() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// A planned fleet experiment, as stored.
pub struct Experiment<'a> {
    pub id: i64,
    pub cfg: &'a RunConfig,
    pub fleet: &'a FleetDesign,
    pub variants: &'a [Variant],
    pub schedule: &'a [Slot],
}

/// Where a host stands.
#[derive(Debug, Clone, PartialEq)]
pub struct HostState {
    pub name: String,
    pub planned: usize,
    pub committed: usize,
    /// Committed by this dispatch.
    pub new: usize,
    /// Why it did not run all its slots (Ansible's reason, or what it reported wrong).
    pub failure: Option<String>,
}

impl HostState {
    pub fn missing(&self) -> usize {
        self.planned - self.committed
    }
}

/// Every host's planned and committed slots.
pub fn status(store: &Store, id: i64) -> anyhow::Result<Vec<HostState>> {
    let hosts = store.fleet_hosts(id)?;
    let done = store.done_seqs(id)?;
    Ok(hosts.iter().map(|h| state(h, &done)).collect())
}

fn state(h: &FleetHost, done: &BTreeSet<u32>) -> HostState {
    HostState {
        name: h.name.clone(),
        planned: (h.end_seq - h.first_seq) as usize,
        committed: done.range(h.first_seq..h.end_seq).count(),
        new: 0,
        failure: None,
    }
}

/// Dispatch every host's missing slots (all hosts whose slots are not all stored) through
/// `ansible-playbook -i inventory`, and commit what comes back. Returns every host's state.
pub fn run_missing(
    store: &mut Store,
    exp: &Experiment,
    inventory: &Path,
    abperf: &RemoteAbperf,
    version: &str,
) -> anyhow::Result<Vec<HostState>> {
    let hosts = store.fleet_hosts(exp.id)?;
    store.catch_up(exp.id)?;
    let before = store.done_seqs(exp.id)?;
    let variants: Vec<ShareVariant> = exp.variants.iter().map(ShareVariant::of).collect();
    let shares: Vec<FleetShare> = hosts
        .iter()
        .enumerate()
        .map(|(place, h)| FleetShare {
            experiment: exp.id,
            host: h.name.clone(),
            place,
            variants: variants.clone(),
            cfg: exp.cfg.clone(),
            strict: exp.fleet.strict,
            store: store.location_for_hosts(),
            slots: exp
                .schedule
                .iter()
                .filter(|s| h.owns(s.seq) && !before.contains(&s.seq))
                .copied()
                .collect(),
        })
        .filter(|s| !s.slots.is_empty())
        .collect();
    if shares.is_empty() {
        return status(store, exp.id);
    }
    // A resume may be given another inventory: every host to dispatch must be in it.
    let known = inventory::listed(inventory, None)?;
    if let Some(s) = shares.iter().find(|s| !known.contains(&s.host)) {
        return Err(abperf_model::error::usage(format!(
            "host {} of experiment {} is not in the inventory {}",
            abperf_model::escape::shorten(&s.host, 80),
            exp.id,
            inventory.display()
        )));
    }
    // The names come from the store's rows: checked as the inventory's are before a first run.
    inventory::refuse_bad_names(inventory, shares.iter().map(|s| &s.host))?;
    let fetched = dispatch::dispatch(inventory, &exp.fleet.token, abperf, version, &shares)?;
    // The runs the hosts committed themselves (into a shared store) are not committed again.
    store.catch_up(exp.id)?;
    let mut done = store.done_seqs(exp.id)?;
    let mut states = Vec::new();
    for h in &hosts {
        let mut s = state(h, &done);
        if let Some(path) = fetched.lines.get(&h.name) {
            let (_, wrong) =
                collect::commit_lines(store, exp.id, h, exp.schedule, path, &mut done)?;
            s = state(h, &done);
            s.failure = wrong;
        }
        s.new = s.committed.saturating_sub(state(h, &before).committed);
        if let Some(f) = fetched.failures.get(&h.name) {
            s.failure = Some(match s.failure {
                Some(wrong) => format!("{}; {wrong}", f.words()),
                None => f.words(),
            });
        }
        if s.failure.is_none() && s.missing() > 0 {
            s.failure = Some("its runs did not all come back".into());
        }
        states.push(s);
    }
    Ok(states)
}
