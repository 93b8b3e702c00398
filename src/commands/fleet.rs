//! `abperf fleet`: one experiment over the hosts of an Ansible inventory (`fleet run`, see
//! `crate::fleet` and docs/fleet.md), and where each host stands (`fleet status`).

pub(crate) mod start;

use crate::commands::DbArgs;
use crate::commands::run::ExperimentArgs;
use crate::fleet::{self, HostState};
use crate::store::Store;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct FleetArgs {
    #[command(subcommand)]
    pub command: FleetCommand,
}

#[derive(Debug, clap::Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum FleetCommand {
    /// Run an experiment on every host of an Ansible inventory: every host runs every variant
    /// (its own seeded schedule); runs are committed here, labelled with their host
    Run(FleetRunArgs),
    /// Per host of a fleet experiment: planned, committed and missing runs
    Status(FleetStatusArgs),
}

/// `abperf fleet run`: the options of an experiment `abperf run` also takes (not those of
/// `run` that act on this machine only, nor the kernel ones), with `-i` the inventory (as in
/// Ansible; --ignore-failure has no short form here).
#[derive(Debug, clap::Args)]
#[command(mut_arg("ignore_failure", |a| a.short(None)))]
pub struct FleetRunArgs {
    /// Ansible inventory naming the hosts (INI, YAML, a script: whatever Ansible reads)
    #[arg(short = 'i', long = "inventory", value_name = "INVENTORY")]
    pub inventory: PathBuf,
    /// Only these hosts or groups of the inventory (comma-separated)
    #[arg(long, value_name = "HOSTS|GROUPS")]
    pub limit: Option<String>,
    /// Run this abperf already installed on every host instead of copying this one there (its
    /// --version must print this one's)
    #[arg(long, value_name = "PATH")]
    pub remote_abperf: Option<String>,
    #[command(flatten)]
    pub run: ExperimentArgs,
}

#[derive(Debug, clap::Args)]
pub struct FleetStatusArgs {
    /// Experiment id or 'latest'
    #[arg(value_name = "ID")]
    pub id: String,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(args: FleetArgs) -> anyhow::Result<i32> {
    match args.command {
        FleetCommand::Run(a) => start::run(a),
        FleetCommand::Status(a) => status(a),
    }
}

/// One line per host: its name, then planned, committed and missing runs, and why it stopped.
pub(crate) fn host_lines(states: &[HostState]) -> Vec<String> {
    let width = states
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut lines = vec![format!(
        "{:width$}  {:>7}  {:>9}  {:>7}",
        "host", "planned", "committed", "missing"
    )];
    for s in states {
        let mut line = format!(
            "{:width$}  {:>7}  {:>9}  {:>7}",
            s.name,
            s.planned,
            s.committed,
            s.missing()
        );
        if let Some(f) = &s.failure {
            line.push_str(&format!("  {f}"));
        }
        lines.push(line);
    }
    lines
}

fn status(args: FleetStatusArgs) -> anyhow::Result<i32> {
    let store = Store::open_to_read(&args.db.location()?)?;
    let id = super::lookup::experiment_id(&store, &args.id)?;
    let states = fleet::status(&store, id)?;
    if states.is_empty() {
        return Err(crate::error::usage(format!(
            "experiment {id} is not a fleet experiment (abperf fleet run makes those)"
        )));
    }
    crate::error::stdout_line(&format!("experiment {id}"));
    for l in host_lines(&states) {
        crate::error::stdout_line(&l);
    }
    Ok(0)
}
