//! `abperf run`: build the variants and the seeded schedule, check everything that can be checked
//! before the first run (commands, knobs, events, CPU list, store), then execute, committing each
//! run as it ends. `--resume ID` continues a stopped experiment where its schedule stands.

pub(super) mod args;
pub(crate) mod boot_loop;
pub mod boots;
pub(super) mod end;
pub(crate) mod plan;
pub(super) mod progress;

pub use args::{ExperimentArgs, RunArgs};
use end::{claim, conclude};
use plan::{BootOn, NewRun, Plan, check_schedule_size};
use progress::{Bar, Sequential};

use crate::commands::DbArgs;
use crate::design::{self, Order};
use crate::doctor::{self, Setting};
use crate::error::usage;
use crate::measure::counters;
use crate::model::tune::SOURCE_RUN;
use crate::model::{Kind, NewExperiment, Slot, Status, Variant};
use crate::runner::experiment::{RunConfig, prepare, ways_line};
use crate::runner::knob_lock::LockOptions;
use crate::runner::noise::{self, NoiseConfig};
use crate::runner::profiled::ProfilePlan;
use crate::runner::shell::ShellMode;
use crate::runner::signals;
use crate::runner::workload;
use crate::runner::{KnobGuard, execute, preflight};
use crate::store::{Operation, Store};
use anyhow::Context;

fn check_events(names: &[String], strict: bool) -> anyhow::Result<Vec<String>> {
    let mut specs = Vec::new();
    for n in names {
        specs.push(counters::parse_event(n).map_err(|e| usage(format!("-e/--event: {e}")))?);
    }
    let (ok, bad) = counters::probe(&specs);
    for (name, why) in &bad {
        if strict {
            anyhow::bail!("event {name}: {why} (--strict)");
        }
        crate::error::stderr_line(&format!(
            "abperf: event {name}: {why}; the experiment goes on without it"
        ));
    }
    Ok(ok.into_iter().map(|s| s.name).collect())
}

/// What can be told wrong before anything runs: `{NAME}` placeholders against `-L` names, knob
/// values against the choices their files list.
fn check_design(
    args: &ExperimentArgs,
    commands: &[String],
    params: &[design::ParamList],
    knobs: &[design::KnobSpec],
) -> anyhow::Result<()> {
    let mut texts: Vec<(&str, &str)> = commands.iter().map(|c| ("COMMAND", c.as_str())).collect();
    for (flag, text) in [
        ("--pre", &args.pre),
        ("--post", &args.post),
        ("--setup", &args.setup),
        ("--cleanup", &args.cleanup),
    ] {
        if let Some(t) = text {
            texts.push((flag, t.as_str()));
        }
    }
    texts.extend(args.rewarm.iter().map(|t| ("--rewarm", t.as_str())));
    design::placeholders::check(&texts, params)?;
    preflight::check_knob_values(knobs)
}

/// kbuild variants without seed 003's noise controls: say which flags give Ingo Molnar's recipe.
fn kbuild_hint(noise: &NoiseConfig, plans: &[design::VariantPlan]) {
    let kbuild = plans
        .iter()
        .any(|p| p.command == "@kbuild" || p.command.starts_with("@kbuild:"));
    if kbuild && !noise.drop_caches && noise.perturb_layout_mib.is_none() {
        crate::error::stderr_line(
            "abperf: note: kbuild runs its prepare step (configure, make clean, make prepare) \
             untimed before every run; for seed 003's recipe add --drop-caches --perturb-layout \
             64 (and --tune for the governor; see docs/workloads.md)",
        );
    }
}

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    match Plan::of(args)? {
        Plan::GuestShare(share) => crate::runner::guest::run_share(&share),
        Plan::FleetShare { share, lines } => crate::fleet::share::run(&share, &lines),
        Plan::Resume {
            reference,
            db,
            wait,
            trust,
        } => resume(&reference, &db, wait, trust),
        Plan::Kernels(run, kernels) => match &kernels.on {
            BootOn::ThisMachine { .. } => boot_loop::start(&run, &kernels),
            BootOn::Vm(_) => boots::run(&run, &kernels),
        },
        Plan::Host(run) => start(&run),
    }
}

/// A new experiment on this machine: its variants and every command checked, the plan stored,
/// the runs executed.
fn start(plan: &NewRun) -> anyhow::Result<i32> {
    let plans = plan_variants(plan)?;
    let mut cfg = plan.cfg.clone();
    check_schedule_size(plans.len(), cfg.runs, cfg.warmup)?;
    let seed = cfg.seed;
    let args = &plan.args;
    let mut store = Store::open_to_run(&args.db.location()?)?;
    if let Some(p) = &cfg.profile {
        check_profile(&store, p, cfg.runs)?;
    }
    cfg.counted_events = check_events(&args.events, args.strict)?;
    let variants = new_variants(&plans)?;
    // Everything is checked before the experiment is stored: commands, CPU list, knobs.
    let ways_line = settle_ways(&mut cfg, &variants)?;
    let knob_paths = plan.knob_paths();
    let tune: Vec<Setting> = cfg.noise.tune.clone().unwrap_or_default();
    // Signals are watched before anything is changed, so Ctrl-C from here on restores.
    signals::install()?;
    let mut paths = knob_paths.clone();
    paths.extend(tune.iter().map(|t| t.path.clone()));
    let guard = KnobGuard::prepare_with(&paths, &lock_options(plan.wait))?;
    let (mut guard, session) = start_tune(&mut store, guard, &cfg, &tune)?;
    let schedule = design::build_schedule(cfg.order, plans.len(), cfg.runs, cfg.warmup, seed);
    let title = plan.title(plans.iter().map(|p| p.name.as_str()));
    // Other processes' CPU use, load and pressure are sampled over the runs, not before them.
    let sampling = doctor::Sampling::start();
    let exp = NewExperiment {
        name: title,
        kind: Kind::Run,
        command_line: crate::store::redacted_args(std::env::args()),
        design: serde_json::to_value(&cfg)?,
        seed: Some(seed),
        environment: doctor::environment_unsampled(),
    };
    let owner = crate::measure::process::current_owner();
    let stop = || signals::received().is_some();
    crate::design::trust::approve(&exp.design, &variants)?;
    let Some(id) = store.create_owned_experiment(&exp, &variants, &schedule, &owner, &stop)? else {
        let sig = signals::received().unwrap_or(libc::SIGINT);
        crate::error::stderr_line(&format!(
            "abperf: interrupted by {} while storing the plan; nothing was stored",
            signals::name(sig)
        ));
        return Ok(128 + sig);
    };
    guard.set_experiment(id, store.path())?;
    store.set_labels(id, &plan.labels)?;
    if let Some(session) = session {
        store.tune_link(session, id)?;
    }
    store.set_knob_originals(id, guard.originals())?;
    crate::error::stderr_line(&format!(
        "abperf: experiment {id}: {} variant(s) x {} runs (+{} warm-up), order {}, seed {seed}",
        plans.len(),
        cfg.runs,
        cfg.warmup,
        cfg.order.as_str()
    ));
    crate::error::stderr_line(&ways_line);
    let variants = store.variants(id)?;
    let result = finish(
        &mut store, id, &cfg, &variants, &schedule, &mut guard, sampling,
    );
    drop(guard);
    settle_tune(&mut store, id, &cfg, result)
}

/// `--profile`: a store that keeps profiled runs, and a `perf` that records the event (one
/// second of `true` sampled here), before anything is stored.
fn check_profile(store: &Store, plan: &ProfilePlan, timed: u32) -> anyhow::Result<()> {
    profile_store(store)?;
    crate::runner::profiled::probe(plan)?;
    announce_profile(plan, timed, "");
    Ok(())
}

/// `--profile`: the line that says how many profiled runs of which event there will be, and
/// where (`where_` after "call graphs").
fn announce_profile(plan: &ProfilePlan, timed: u32, where_: &str) {
    crate::error::stderr_line(&format!(
        "abperf: --profile: {} untimed profiled run(s) per variant, sampling {} at {} Hz with \
         call graphs{where_}",
        plan.runs.min(timed),
        plan.event,
        plan.frequency
    ));
}

/// `--profile`: a store that keeps profiled runs.
fn profile_store(store: &Store) -> anyhow::Result<()> {
    if !store.supports(Operation::Profile) {
        return Err(usage(format!(
            "--profile: profiled runs are not kept in a PostgreSQL store yet; run into an SQLite \
             store (--db FILE) and copy the experiment there (abperf store copy FILE {})",
            store.path().display()
        )));
    }
    Ok(())
}

/// The variants of a new experiment: the commands (`@NAME` expanded) with the `-L` and `-k`
/// lists, each checked (placeholders, knob values, workloads), with the hints and warnings the
/// design calls for.
pub(crate) fn plan_variants(plan: &NewRun) -> anyhow::Result<Vec<design::VariantPlan>> {
    let (args, params, knob_specs) = (&plan.args, &plan.params, &plan.knobs);
    // `@NAME` takes the -L lists named after its parameters (see runner::workload).
    let others: Vec<&str> = [&args.pre, &args.post, &args.setup, &args.cleanup]
        .into_iter()
        .flatten()
        .chain(&args.rewarm)
        .map(String::as_str)
        .collect();
    let commands = workload::expand(&args.commands, params, &others)?;
    check_design(args, &commands, params, knob_specs)?;
    let plans = design::build_variants(&commands, &args.names, params, knob_specs)?;
    workload::check(plans.iter().map(|p| (p.name.as_str(), p.command.as_str())))?;
    kbuild_hint(&plan.cfg.noise, &plans);
    if plan.cfg.sequential.is_some() && plans.len() < 2 {
        return Err(usage(
            "--until-decided: expected at least two variants (it stops when they differ)",
        ));
    }
    if args.order == Order::Sequential {
        crate::error::stderr_line(
            "abperf: warning: --order sequential runs every run of one variant before the next: a slow \
             drift (heat, page cache, background load) becomes a false difference; the default abba cancels it",
        );
    }
    Ok(plans)
}

/// The variants to store, from their plans (a workload variant names its workload's version).
pub(crate) fn new_variants(plans: &[design::VariantPlan]) -> anyhow::Result<Vec<Variant>> {
    plans
        .iter()
        .map(|p| {
            Ok(Variant {
                command: Some(p.command.clone()),
                parameters: p.parameters.clone(),
                knobs: p.knobs.clone(),
                workload: workload::is_workload(&p.command)
                    .then(|| workload::WorkloadCommand::parse(&p.command).map(|c| c.reference()))
                    .transpose()?,
                ..Variant::named(&p.name)
            })
        })
        .collect()
}

/// Prepare every command (a bad command or CPU list fails here, with nothing stored) and keep
/// in `cfg` how each variant's command starts; returns the line that says so.
fn settle_ways(cfg: &mut RunConfig, variants: &[Variant]) -> anyhow::Result<String> {
    let plan = prepare(cfg, variants)?;
    let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
    let ways = plan.ways();
    let line = ways_line(cfg.shell, &names, &ways);
    cfg.exec = names
        .iter()
        .zip(&ways)
        .map(|(n, w)| (n.to_string(), w.to_string()))
        .collect();
    Ok(line)
}

/// With --tune, apply its settings through the knob guard in a new tune session; when that
/// fails, every knob is restored, the session settled and the error returned. Gives the guard
/// back, with the session.
fn start_tune(
    store: &mut Store,
    mut guard: KnobGuard,
    cfg: &RunConfig,
    tune: &[Setting],
) -> anyhow::Result<(KnobGuard, Option<i64>)> {
    if cfg.noise.tune.is_none() {
        return Ok((guard, None));
    }
    let session = store.tune_session(SOURCE_RUN, None)?;
    if let Err(e) = noise::apply_tune(store, &mut guard, tune, session) {
        let restore_errors = guard.restore();
        drop(guard);
        let rows = store.tune_session_outstanding(session)?;
        noise::settle(store, rows)?;
        for r in restore_errors {
            crate::error::stderr_line(&format!("abperf: error: {r}"));
        }
        return Err(e);
    }
    for t in tune {
        crate::error::stderr_line(&format!(
            "abperf: --tune: {} '{}' -> '{}'",
            t.path, t.current, t.value
        ));
    }
    Ok((guard, Some(session)))
}

/// After the experiment: mark its tune settings restored (their files hold the originals).
fn settle_tune(
    store: &mut Store,
    id: i64,
    cfg: &RunConfig,
    result: anyhow::Result<i32>,
) -> anyhow::Result<i32> {
    if cfg.noise.tune.is_none() {
        return result;
    }
    let rows = store.tune_outstanding(None, Some(id))?;
    let left = noise::settle(store, rows)?;
    for l in &left {
        crate::error::stderr_line(&format!("abperf: error: --tune: {l}"));
    }
    if left.is_empty() || result.is_err() {
        result
    } else {
        anyhow::bail!("--tune: {} setting(s) not restored (see above)", left.len())
    }
}

fn lock_options(wait: bool) -> LockOptions {
    LockOptions {
        wait,
        purpose: "run".into(),
    }
}

fn resume(reference: &str, db: &DbArgs, wait: bool, trust: bool) -> anyhow::Result<i32> {
    // On a PostgreSQL store: every experiment's row read into a working copy (for `latest`),
    // the experiment's content when it is claimed, each run then committed there first.
    let mut store = Store::open_to_take_over(&db.location()?)?;
    let id = super::lookup::experiment_id(&store, reference)?;
    let exp = store.experiment(id)?;
    if exp.kind != Kind::Run {
        anyhow::bail!(
            "experiment {id} is a {} experiment; only `abperf run` experiments can be resumed",
            exp.kind.as_str()
        );
    }
    if let Some(b) = exp.design.get("bisect") {
        // Its command enters a worktree that is gone; the bisection replays it and goes on.
        let of = b.get("of").and_then(|v| v.as_i64()).unwrap_or(id);
        return Err(usage(format!(
            "experiment {id} is a step of bisection {of}: continue it with abperf bisect \
             --resume {of} and the options it was started with"
        )));
    }
    if exp.status == Status::Complete {
        // Nothing failed: a script that resumes until done may call this once more.
        crate::error::stderr_line(&format!(
            "abperf: note: experiment {id} is already complete; nothing to resume"
        ));
        return Ok(0);
    }
    let cfg: RunConfig = serde_json::from_value(exp.design.clone()).with_context(|| {
        format!("experiment {id}: its stored design cannot be read by this abperf")
    })?;
    check_resumable(&store, id, &cfg, &exp.design)?;
    // Nothing a store row says is run unless this machine's user approved it.
    let variants = store.variants(id)?;
    // A workload of another version is refused first (it names the version; nothing runs).
    workload::check_versions(&variants).with_context(|| format!("experiment {id}"))?;
    crate::design::trust::verify(id, &exp.design, &variants, trust)?;
    // Take the experiment over before anything is touched; refused while its owner lives.
    claim(&mut store, id)?;
    if exp.design.get("vm").is_some() {
        return boots::resume(&mut store, id, &cfg, &exp.design);
    }
    let schedule = store.schedule(id)?;
    // The knobs' originals come from this machine only: taking each lock puts back what the
    // interrupted session left (from its claim under the lock directory), never a store's value.
    let mut paths = Vec::new();
    for v in &variants {
        for k in &v.knobs {
            if !paths.contains(&k.path) {
                paths.push(k.path.clone());
            }
        }
    }
    let tune: Vec<Setting> = cfg.noise.tune.clone().unwrap_or_default();
    for t in &tune {
        if !paths.contains(&t.path) {
            paths.push(t.path.clone());
        }
    }
    signals::install()?;
    let mut guard = match KnobGuard::prepare_with(&paths, &lock_options(wait)) {
        Ok(g) => g,
        Err(e) => {
            // Nothing ran: the experiment is as stopped as before.
            let before = match exp.status {
                Status::Running => Status::Interrupted,
                s => s,
            };
            let _ = store.set_status(id, before);
            return Err(e);
        }
    };
    guard.set_experiment(id, store.path())?;
    let done = store.done_seqs(id)?.len();
    crate::error::stderr_line(&format!(
        "abperf: resuming experiment {id} at run {done} of {} (order {}, seed {})",
        schedule.len(),
        cfg.order.as_str(),
        cfg.seed
    ));
    // The way each command starts is the stored one (designs made before `--shell`: the mode's).
    let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
    let ways: Vec<&str> = names
        .iter()
        .map(|n| match cfg.exec.get(*n) {
            Some(w) => w.as_str(),
            None if cfg.shell == ShellMode::None => crate::runner::shell::DIRECT,
            None => crate::runner::shell::SH_C,
        })
        .collect();
    crate::error::stderr_line(&ways_line(cfg.shell, &names, &ways));
    if cfg.noise.tune.is_some() {
        let session = store.tune_session(SOURCE_RUN, Some(id))?;
        if let Err(e) = noise::apply_tune(&mut store, &mut guard, &tune, session) {
            for r in guard.restore() {
                crate::error::stderr_line(&format!("abperf: error: {r}"));
            }
            drop(guard);
            let _ = settle_tune(&mut store, id, &cfg, Ok(0));
            return Err(e);
        }
    }
    let sampling = doctor::Sampling::start();
    let result = finish(
        &mut store, id, &cfg, &variants, &schedule, &mut guard, sampling,
    );
    drop(guard);
    settle_tune(&mut store, id, &cfg, result)
}

/// What `run --resume` does not take up here: a fleet experiment, a boot loop on this machine,
/// and on a PostgreSQL store what the store cannot keep there (docs/store.md): the journal of
/// `--tune`, the boots of a kernel experiment. Refused before the experiment is claimed.
fn check_resumable(
    store: &Store,
    id: i64,
    cfg: &RunConfig,
    design: &serde_json::Value,
) -> anyhow::Result<()> {
    if design.get("fleet").is_some() {
        return Err(usage(format!(
            "experiment {id} is a fleet experiment: resume it with abperf fleet run -i INVENTORY \
             --resume {id}"
        )));
    }
    if design.get("boot_loop").is_some() {
        return Err(usage(format!(
            "experiment {id} is a boot loop on this machine: it goes on at boot through its \
             systemd unit, or with `abperf boot-loop resume`"
        )));
    }
    let what = if cfg.noise.tune.is_some() && !store.supports(Operation::Tune) {
        "--tune (its journal, which puts the settings back after a crash, is kept in the store)"
    } else if cfg.profile.is_some() && !store.supports(Operation::Profile) {
        "--profile (its profiled runs are kept in the store)"
    } else if design.get("vm").is_some() && !store.supports(Operation::Boots) {
        "kernels (--kernel, --append: their boots are kept in the store)"
    } else {
        return Ok(());
    };
    let shown = store.path().display();
    Err(usage(format!(
        "experiment {id} was made with {what}: resuming it is not built yet on PostgreSQL; \
         copy it into an SQLite store (abperf store copy {shown} FILE) and resume it there \
         with --db FILE"
    )))
}

fn finish(
    store: &mut Store,
    id: i64,
    cfg: &RunConfig,
    variants: &[Variant],
    schedule: &[Slot],
    guard: &mut KnobGuard,
    sampling: doctor::Sampling,
) -> anyhow::Result<i32> {
    let rule = cfg
        .sequential
        .map(|plan| Sequential::new(plan, variants.len()));
    let mut bar = Bar(None, rule);
    let result = execute(store, id, cfg, variants, schedule, guard, &mut bar);
    if let Err(e) = store.merge_environment(id, &sampling.finish("during the runs")) {
        crate::error::stderr_line(&format!(
            "abperf: warning: the load sampled during the runs is not stored: {e:#}"
        ));
    }
    conclude(store, id, variants.len(), result)
}
