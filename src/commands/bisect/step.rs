//! One step of a bisection as an ordinary run experiment: a variant per revision, `rounds` runs
//! of each in seeded ABBA order, stored and executed by the run machinery, each run committed as
//! it ends; then its runs read back as (revision, value) pairs. A program's step runs its
//! command in each revision's worktree (`runner::execute`); a kernel's boots each revision's
//! kernel once per round, one timed run per boot (`runner::boots`: the boots are the
//! replicates).

use super::stored::Mark;
use crate::design::{self, Order};
use crate::model::{BootConfig, Kind, NewExperiment, RunStatus, Status, Variant};
use crate::runner::boots::{Boots, VmDesign, execute_boots};
use crate::runner::experiment::{Ending, NoProgress, RunConfig};
use crate::runner::knob_lock::LockOptions;
use crate::runner::shell::ShellMode;
use crate::runner::{KnobGuard, execute, signals};
use crate::store::Store;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What every step's runs share (from `bisect`'s options).
#[derive(Debug, Clone)]
pub struct Runs {
    pub command: String,
    pub metric: String,
    pub warmup: u32,
    pub pre: Option<String>,
    pub pin: Option<String>,
    pub timeout: Option<f64>,
    pub show_output: bool,
}

/// A step to run: the revisions' names, the rounds, its mark.
pub struct Planned {
    pub title: String,
    pub names: Vec<String>,
    pub rounds: u32,
    pub seed: u64,
    pub mark: Mark,
}

/// How a step's execution ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    Complete,
    Interrupted(i32),
    /// Runs of these variants failed (the command exited non-zero, or timed out).
    Failed(Vec<usize>),
}

/// The command of a variant: the measured command entered in its worktree.
fn in_worktree(command: &str, worktree: &std::path::Path) -> String {
    let wt = worktree.display().to_string();
    format!(
        "cd {} && {}",
        shell_words::quote(&wt),
        command.replace("{WORKTREE}", &wt)
    )
}

/// The run configuration of a step's experiment (`pre`: the command before each run).
fn config(runs: &Runs, planned: &Planned, pre: Option<String>) -> RunConfig {
    RunConfig {
        order: Order::Abba,
        runs: planned.rounds,
        warmup: runs.warmup,
        seed: planned.seed,
        pre,
        rewarm: Vec::new(),
        post: None,
        setup: None,
        cleanup: None,
        shell: ShellMode::Sh,
        exec: BTreeMap::new(),
        pin: runs.pin.clone(),
        timeout_s: runs.timeout,
        events: Vec::new(),
        counted_events: Vec::new(),
        ignore_failure: false,
        show_output: runs.show_output,
        noise: Default::default(),
        sequential: None,
        wait_moved_knob: false,
        profile: None,
    }
}

/// The experiment of a step with this design.
fn experiment(
    cfg: &RunConfig,
    planned: &Planned,
    extra: Option<(&str, serde_json::Value)>,
) -> anyhow::Result<NewExperiment> {
    let mut design = serde_json::to_value(cfg)?;
    design["bisect"] = serde_json::to_value(&planned.mark)?;
    if let Some((key, value)) = extra {
        design[key] = value;
    }
    Ok(NewExperiment {
        name: planned.title.clone(),
        kind: Kind::Run,
        command_line: crate::store::redacted_args(std::env::args()),
        design,
        seed: Some(cfg.seed),
        environment: crate::doctor::environment_unsampled(),
    })
}

/// Store a program's step `planned` (the revisions' worktrees: `worktrees`) as an experiment
/// and execute it; its id and how it ended.
pub fn run(
    store: &mut Store,
    runs: &Runs,
    planned: &Planned,
    worktrees: &[PathBuf],
) -> anyhow::Result<(i64, End)> {
    let variants: Vec<Variant> = worktrees
        .iter()
        .zip(&planned.names)
        .map(|(wt, name)| Variant {
            command: Some(in_worktree(&runs.command, wt)),
            ..Variant::named(name)
        })
        .collect();
    // --pre runs in the first revision's worktree (the same command for every variant).
    let pre = runs.pre.as_ref().map(|p| in_worktree(p, &worktrees[0]));
    let mut cfg = config(runs, planned, pre);
    let prepared = crate::runner::experiment::prepare(&cfg, &variants)?;
    cfg.exec = variants
        .iter()
        .zip(prepared.ways())
        .map(|(v, w)| (v.name.clone(), w.to_string()))
        .collect();
    let schedule =
        design::build_schedule(cfg.order, variants.len(), cfg.runs, cfg.warmup, cfg.seed);
    let exp = experiment(&cfg, planned, None)?;
    let owner = crate::measure::process::current_owner();
    let stop = || signals::received().is_some();
    let Some(id) = store.create_owned_experiment(&exp, &variants, &schedule, &owner, &stop)? else {
        return Ok((
            0,
            End::Interrupted(signals::received().unwrap_or(libc::SIGINT)),
        ));
    };
    let options = LockOptions {
        wait: false,
        purpose: "bisect".into(),
    };
    let mut guard = KnobGuard::prepare_with(&[], &options)?;
    guard.set_experiment(id, store.path())?;
    let stored = store.variants(id)?;
    let result = execute(
        store,
        id,
        &cfg,
        &stored,
        &schedule,
        &mut guard,
        &mut NoProgress,
    );
    drop(guard);
    Ok((id, ended(store, id, result)?))
}

/// Store a kernel's step `planned` (the revisions' kernels: `kernels`) as a boot experiment
/// and execute it: `planned.rounds` boots of each kernel in seeded ABBA order, one timed run
/// (after the warm-ups) of the command per boot.
pub fn boot(
    store: &mut Store,
    runs: &Runs,
    planned: &Planned,
    kernels: &[BootConfig],
    vm: &VmDesign,
) -> anyhow::Result<(i64, End)> {
    let mut variants: Vec<Variant> = kernels
        .iter()
        .zip(&planned.names)
        .map(|(k, name)| Variant {
            command: Some(runs.command.clone()),
            boot: Some(k.clone()),
            ..Variant::named(name)
        })
        .collect();
    design::provenance::fill(&mut variants)?;
    let mut cfg = config(runs, planned, runs.pre.clone());
    cfg.runs = 1;
    let vm = VmDesign {
        boots: planned.rounds,
        ..vm.clone()
    };
    let (plans, schedule) = design::build_boot_schedule(
        cfg.order,
        variants.len(),
        vm.boots,
        cfg.runs,
        cfg.warmup,
        cfg.seed,
    );
    let exp = experiment(&cfg, planned, Some(("vm", serde_json::to_value(&vm)?)))?;
    if signals::received().is_some() {
        return Ok((
            0,
            End::Interrupted(signals::received().unwrap_or(libc::SIGINT)),
        ));
    }
    let id = store.create_boot_experiment(&exp, &variants, &schedule, &plans)?;
    crate::commands::run::end::claim(store, id)?;
    let stored = store.variants(id)?;
    let plans = store.boot_plans(id)?;
    let boots = Boots {
        exp_id: id,
        cfg: &cfg,
        vm: &vm,
        variants: &stored,
        schedule: &schedule,
        plans: &plans,
    };
    let result = execute_boots(store, &boots, &mut NoProgress);
    Ok((id, ended(store, id, result)?))
}

/// How experiment `id`'s execution ended, its status stored.
fn ended(store: &mut Store, id: i64, result: anyhow::Result<Ending>) -> anyhow::Result<End> {
    let end = match &result {
        Ok(Ending::Complete | Ending::Decided(_)) => End::Complete,
        Ok(Ending::Interrupted(sig)) => End::Interrupted(*sig),
        Ok(Ending::Failed(_)) | Err(_) => End::Failed(failed_variants(store, id)?),
    };
    let status = match end {
        End::Complete => Status::Complete,
        End::Interrupted(_) => Status::Interrupted,
        End::Failed(_) => Status::Failed,
    };
    store.set_status(id, status)?;
    if let (End::Failed(v), Err(e)) = (&end, result)
        && v.is_empty()
    {
        return Err(e.context(format!("experiment {id}")));
    }
    Ok(end)
}

fn failed_variants(store: &Store, id: i64) -> anyhow::Result<Vec<usize>> {
    let mut v: Vec<usize> = store
        .runs(id)?
        .iter()
        .filter(|r| r.status != RunStatus::Ok)
        .map(|r| r.variant)
        .collect();
    // A kernel that did not boot (or whose guest failed) has a boot that did not complete.
    v.extend(
        store
            .boots(id)?
            .iter()
            .filter(|b| b.status != "complete")
            .map(|b| b.variant),
    );
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// The timed, successful, not excluded runs of a stored step as (revision, value of `metric`),
/// in the order they ran; variants are mapped to revisions by the step's mark.
pub fn values(
    store: &Store,
    id: i64,
    mark: &Mark,
    metric: &str,
) -> anyhow::Result<Vec<(usize, f64)>> {
    let mut runs = store.runs(id)?;
    runs.sort_by_key(|r| r.seq);
    let mut out = Vec::new();
    for r in runs {
        if r.warmup || r.status != RunStatus::Ok || r.excluded.is_some() {
            continue;
        }
        let Some(&revision) = mark.revisions.get(r.variant) else {
            anyhow::bail!(
                "experiment {id}: run {} names variant {} of none",
                r.seq,
                r.variant
            );
        };
        let Some(value) = r.value(metric).filter(|v| v.is_finite()) else {
            anyhow::bail!("experiment {id}: run {} has no metric {metric}", r.seq);
        };
        out.push((revision, value));
    }
    Ok(out)
}
