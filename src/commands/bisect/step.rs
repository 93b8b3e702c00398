//! One step of a bisection as an ordinary run experiment: a variant per revision (its command
//! entered in the revision's worktree), `rounds` runs of each in seeded ABBA order, stored and
//! executed by the run machinery (`runner::execute`, each run committed as it ends), then its
//! runs read back as (revision, value) pairs.

use super::stored::Mark;
use crate::design::{self, Order};
use crate::model::{Kind, NewExperiment, RunStatus, Status, Variant};
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

/// A step to run: the revisions (with their worktrees and names), the rounds, its mark.
pub struct Planned {
    pub title: String,
    pub worktrees: Vec<PathBuf>,
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

/// Store step `planned` as an experiment and execute it; its id and how it ended.
pub fn run(store: &mut Store, runs: &Runs, planned: &Planned) -> anyhow::Result<(i64, End)> {
    let pre = |wt: &std::path::Path| runs.pre.as_ref().map(|p| in_worktree(p, wt));
    let variants: Vec<Variant> = planned
        .worktrees
        .iter()
        .zip(&planned.names)
        .map(|(wt, name)| Variant {
            command: Some(in_worktree(&runs.command, wt)),
            ..Variant::named(name)
        })
        .collect();
    let mut cfg = RunConfig {
        order: Order::Abba,
        runs: planned.rounds,
        warmup: runs.warmup,
        seed: planned.seed,
        // --pre runs in the first revision's worktree (the same command for every variant).
        pre: pre(&planned.worktrees[0]),
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
    };
    let prepared = crate::runner::experiment::prepare(&cfg, &variants)?;
    cfg.exec = variants
        .iter()
        .zip(prepared.ways())
        .map(|(v, w)| (v.name.clone(), w.to_string()))
        .collect();
    let schedule =
        design::build_schedule(cfg.order, variants.len(), cfg.runs, cfg.warmup, cfg.seed);
    let mut design = serde_json::to_value(&cfg)?;
    design["bisect"] = serde_json::to_value(&planned.mark)?;
    let exp = NewExperiment {
        name: planned.title.clone(),
        kind: Kind::Run,
        command_line: std::env::args().collect(),
        design,
        seed: Some(cfg.seed),
        environment: crate::doctor::environment_unsampled(),
    };
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
    Ok((id, end))
}

fn failed_variants(store: &Store, id: i64) -> anyhow::Result<Vec<usize>> {
    let mut v: Vec<usize> = store
        .runs(id)?
        .iter()
        .filter(|r| r.status != RunStatus::Ok)
        .map(|r| r.variant)
        .collect();
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
