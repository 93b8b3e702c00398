//! `abperf store copy FROM TO [ID...]`: experiments from one store into another, whole (runs,
//! metrics, schedule, labels, boots, micro rounds, traces: `store::copy`), each in its own
//! transaction in TO under a new id. FROM is opened read-only. An experiment already in TO
//! (the same identity: created, kind, name, command line, design, seed) is skipped with a note;
//! one still running in FROM is refused unless `--force`. SIGINT/SIGTERM stop between
//! experiments. Either store may be a server's URL (`store::Location`), shown with its password
//! hidden. docs/store.md has the rest.

use crate::error::stdout_line;
use crate::model::escape::control;
use crate::model::{Liveness, Status};
use crate::runner::signals;
use crate::store::copy::{Content, Identity};
use crate::store::copy_target::Target;
use crate::store::{Location, Store};
use anyhow::Context;
use clap::builder::{OsStringValueParser, TypedValueParser};
use std::collections::BTreeMap;

#[derive(Debug, clap::Args)]
pub struct StoreArgs {
    #[command(subcommand)]
    pub command: StoreCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum StoreCommand {
    /// Copy experiments, whole, from one store into another (new ids there; FROM is only read)
    Copy(CopyArgs),
}

#[derive(Debug, clap::Args)]
pub struct CopyArgs {
    /// The store to copy from: opened read-only, never changed (a file, or a postgres:// URL)
    #[arg(value_parser = OsStringValueParser::new().map(Location::parse))]
    pub from: Location,
    /// The store to copy into: created when missing (a file, or a postgres:// URL)
    #[arg(value_parser = OsStringValueParser::new().map(Location::parse))]
    pub to: Location,
    /// Experiment ids in FROM, or `latest` (default: every experiment)
    pub ids: Vec<String>,
    /// List what would be copied and skipped; change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Copy experiments that are still running in FROM too (the runs stored so far, as
    /// `interrupted`)
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: StoreArgs) -> anyhow::Result<i32> {
    match args.command {
        StoreCommand::Copy(a) => copy(a),
    }
}

/// What became of one experiment.
enum Outcome {
    Copied(i64),
    WouldCopy,
    /// Already in TO (its id there), and whether TO's copy has fewer or more rows than FROM's
    /// experiment has now (it changed since: resumed, runs imported into it).
    Present(i64, bool),
    Running(String),
    /// A signal came while it was being written: nothing of it was stored.
    Stopped,
}

#[derive(Default)]
struct Tally {
    copied: usize,
    present: usize,
    running: usize,
}

fn copy(a: CopyArgs) -> anyhow::Result<i32> {
    crate::store::copy_target::check_locations(&a.from, &a.to)?;
    let from = Store::open_read_only(&a.from).context("FROM")?;
    let ids = chosen(&from, &a.ids)?;
    let mut to = Target::open(&a.to, a.dry_run).context("TO")?;
    let known = match &mut to {
        Some(t) => t.identities()?,
        None => BTreeMap::new(),
    };
    signals::install()?;
    let mut tally = Tally::default();
    for id in ids {
        if let Some(sig) = signals::received() {
            summary(&a, &tally, Some(sig));
            return Ok(128 + sig);
        }
        let content = from.read_content(id)?;
        let outcome = copy_one(&from, to.as_mut(), &content, &known, &a)?;
        if let (Outcome::Stopped, Some(sig)) = (&outcome, signals::received()) {
            summary(&a, &tally, Some(sig));
            return Ok(128 + sig);
        }
        report(&a, &content, &outcome, &mut tally);
    }
    summary(&a, &tally, None);
    Ok(if tally.running > 0 { 1 } else { 0 })
}

/// The experiments to copy: the ids given, else every experiment of FROM (oldest first).
fn chosen(from: &Store, given: &[String]) -> anyhow::Result<Vec<i64>> {
    if given.is_empty() {
        let mut ids: Vec<i64> = from.list()?.iter().map(|e| e.id).collect();
        ids.sort_unstable();
        return Ok(ids);
    }
    let mut ids = Vec::new();
    for g in given {
        let id = super::lookup::experiment_id(from, g)
            .with_context(|| format!("FROM {}", from.path().display()))?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

fn copy_one(
    from: &Store,
    to: Option<&mut Target>,
    content: &Content,
    known: &BTreeMap<Identity, i64>,
    a: &CopyArgs,
) -> anyhow::Result<Outcome> {
    if let Some(why) = still_running(from, content)?
        && !a.force
    {
        return Ok(Outcome::Running(why));
    }
    match to {
        Some(to) if known.contains_key(&content.identity()) => {
            let there = known[&content.identity()];
            let changed = to.read_content(there)?.row_count() != content.row_count();
            Ok(Outcome::Present(there, changed))
        }
        Some(to) if !a.dry_run => {
            let stop = || signals::received().is_some();
            let id = to.write_content(content, &stop).with_context(|| {
                format!(
                    "copying {}#{} into {} (nothing of it was stored there)",
                    a.from, content.id, a.to
                )
            })?;
            Ok(id.map_or(Outcome::Stopped, Outcome::Copied))
        }
        _ => Ok(Outcome::WouldCopy),
    }
}

/// Why the experiment may still be running in FROM (None: it is not).
fn still_running(from: &Store, content: &Content) -> anyhow::Result<Option<String>> {
    if content.status() != Status::Running {
        return Ok(None);
    }
    let Some(owner) = from.owner(content.id)? else {
        return Ok(Some(
            "it is stored as running, by a process not recorded".into(),
        ));
    };
    Ok(match crate::measure::process::liveness(&owner) {
        Liveness::Dead(_) => None,
        Liveness::Alive => Some(format!(
            "it is still running in pid {} on {}",
            owner.pid, owner.host
        )),
        Liveness::Unknown(why) => Some(format!("it may still be running ({why})")),
    })
}

fn report(a: &CopyArgs, content: &Content, outcome: &Outcome, tally: &mut Tally) {
    match outcome {
        Outcome::Copied(_) | Outcome::WouldCopy => tally.copied += 1,
        Outcome::Stopped => {}
        Outcome::Present(..) => tally.present += 1,
        Outcome::Running(_) => tally.running += 1,
    }
    let name = match content.experiment_value("name") {
        Some(crate::store::copy::Value::Text(t)) => control(t).into_owned(),
        _ => String::new(),
    };
    let (source, to) = (format!("{}#{}", a.from, content.id), a.to.to_string());
    let what = match outcome {
        Outcome::Copied(id) => format!("-> {to}#{id}"),
        Outcome::WouldCopy => format!("-> {to} (dry run: not copied)"),
        Outcome::Present(id, false) => format!(
            "skipped: already in {to} as #{id} (same creation time, name, command line, design \
             and seed)"
        ),
        Outcome::Present(id, true) => format!(
            "skipped: already in {to} as #{id}, but it changed since it was copied (delete \
             #{id} there and copy again for the newer state)"
        ),
        Outcome::Stopped => "not copied: stopped by a signal".to_string(),
        Outcome::Running(why) => format!(
            "not copied: {why}; copy it when it ends, or now with --force (the runs so far, \
             stored as interrupted)"
        ),
    };
    stdout_line(&format!("{source} {what}  {name}"));
}

fn summary(a: &CopyArgs, t: &Tally, signal: Option<i32>) {
    let verb = if a.dry_run { "would copy" } else { "copied" };
    let mut line = format!(
        "{verb} {} experiment(s) from {} into {}; {} already there, {} still running",
        t.copied, a.from, a.to, t.present, t.running
    );
    if let Some(sig) = signal {
        line.push_str(&format!(
            "; stopped by {} before the rest (every copied experiment is whole)",
            signals::name(sig)
        ));
    }
    stdout_line(&line);
}
