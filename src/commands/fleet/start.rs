//! `abperf fleet run`: plan a new fleet experiment and store it before anything is dispatched
//! (or, with `--resume ID`, take a stored one over), dispatch the missing slots, commit what
//! comes back, and tell per host how it went.

use super::{FleetRunArgs, host_lines};
use crate::commands::run::end::conclude;
use crate::commands::run::plan::{NewRun, check_schedule_size};
use crate::commands::run::{new_variants, plan_variants};
use crate::commands::{LONG_VERSION, hints};
use crate::error::usage;
use crate::fleet::playbook::RemoteAbperf;
use crate::fleet::{self, Experiment, FleetDesign, HostState};
use crate::model::{Kind, NewExperiment, Status};
use crate::runner::experiment::{Ending, RunConfig};
use crate::store::Store;
use anyhow::Context;
use std::path::Path;

pub fn run(args: FleetRunArgs) -> anyhow::Result<i32> {
    let abperf = remote_abperf(&args)?;
    match &args.run.resume {
        Some(id) => {
            if !args.run.commands.is_empty() {
                return Err(usage(
                    "--resume takes no COMMAND: the experiment's own commands are resumed",
                ));
            }
            resume(&args, id, &abperf)
        }
        None => start(args, &abperf),
    }
}

/// What the hosts run: this abperf copied there (with the spawn helper beside it), or
/// `--remote-abperf`.
fn remote_abperf(args: &FleetRunArgs) -> anyhow::Result<RemoteAbperf> {
    if let Some(p) = &args.remote_abperf {
        return Ok(RemoteAbperf::Installed(p.clone()));
    }
    let exe = std::env::current_exe().context("cannot find abperf's own executable")?;
    let spawn = exe.with_file_name("abperf-spawn");
    Ok(RemoteAbperf::Copy {
        spawn: spawn.is_file().then_some(spawn),
        exe,
    })
}

fn version() -> String {
    format!("abperf {LONG_VERSION}")
}

/// Plan the experiment, store it with its hosts, dispatch.
fn start(args: FleetRunArgs, abperf: &RemoteAbperf) -> anyhow::Result<i32> {
    let FleetRunArgs {
        inventory,
        limit,
        run,
        ..
    } = args;
    let plan = NewRun::fleet(run)?;
    let hosts = fleet::inventory::hosts(&inventory, limit.as_deref())?;
    let plans = plan_variants(&plan)?;
    let cfg = plan.cfg.clone();
    check_schedule_size(plans.len() * hosts.len(), cfg.runs, cfg.warmup)?;
    let seed = cfg.seed;
    let run = &plan.args;
    let variants = new_variants(&plans)?;
    let (schedule, owners) = fleet::plan::plan(
        &hosts,
        cfg.order,
        variants.len(),
        cfg.runs,
        cfg.warmup,
        seed,
    );
    let absolute = std::path::absolute(&inventory).unwrap_or(inventory.clone());
    let fd = FleetDesign {
        token: fleet::new_token(),
        strict: run.strict,
        inventory: absolute.display().to_string(),
    };
    let mut design = serde_json::to_value(&cfg)?;
    design["fleet"] = serde_json::to_value(&fd)?;
    let exp = NewExperiment {
        name: plan.title(plans.iter().map(|p| p.name.as_str())),
        kind: Kind::Run,
        command_line: crate::store::redacted_args(std::env::args()),
        design,
        seed: Some(seed),
        environment: crate::doctor::environment_unsampled(),
    };
    let mut store = Store::open_to_run(&run.db.location()?)?;
    let owner = crate::measure::process::current_owner();
    crate::design::trust::approve(&exp.design, &variants)?;
    let id = store
        .create_owned_experiment(&exp, &variants, &schedule, &owner, &|| false)?
        .context("storing the plan was stopped")?;
    if let Err(e) = store
        .set_fleet_hosts(id, &owners)
        .and_then(|()| store.set_labels(id, &plan.labels))
    {
        let _ = store.delete(id);
        return Err(e);
    }
    crate::error::stderr_line(&format!(
        "abperf: experiment {id}: {} variant(s) x {} host(s) ({}) x {} runs (+{} warm-up), \
         order {}, seed {seed}",
        variants.len(),
        hosts.len(),
        hosts.join(", "),
        cfg.runs,
        cfg.warmup,
        cfg.order.as_str()
    ));
    let stored = Stored { id, cfg, fleet: fd };
    dispatch(&mut store, &stored, &inventory, abperf, true)
}

/// Take stored fleet experiment `reference` over and dispatch what it is missing.
fn resume(args: &FleetRunArgs, reference: &str, abperf: &RemoteAbperf) -> anyhow::Result<i32> {
    let mut store = Store::open_to_take_over(&args.run.db.location()?)?;
    let id = crate::commands::lookup::experiment_id(&store, reference)?;
    let exp = store.experiment(id)?;
    let fd: FleetDesign = match exp.design.get("fleet") {
        Some(f) => serde_json::from_value(f.clone())
            .with_context(|| format!("experiment {id}: its fleet design cannot be read"))?,
        None => {
            return Err(usage(format!(
                "experiment {id} is not a fleet experiment; resume it with abperf run --resume {id}"
            )));
        }
    };
    let cfg: RunConfig = serde_json::from_value(exp.design.clone()).with_context(|| {
        format!("experiment {id}: its stored design cannot be read by this abperf")
    })?;
    // Nothing a store row says is sent to the hosts unless this machine's user approved it.
    let variants = store.variants(id)?;
    crate::design::trust::verify(id, &exp.design, &variants, args.run.trust_stored_design)?;
    crate::commands::run::end::claim(&mut store, id)?;
    let stored = Stored { id, cfg, fleet: fd };
    dispatch(&mut store, &stored, &args.inventory, abperf, false)
}

/// A fleet experiment in the store, with its designs.
struct Stored {
    id: i64,
    cfg: RunConfig,
    fleet: FleetDesign,
}

/// Dispatch the missing slots, commit what comes back and tell how it went ([`tell`]). A new
/// experiment whose dispatch fails before any run came back is deleted.
fn dispatch(
    store: &mut Store,
    s: &Stored,
    inventory: &Path,
    abperf: &RemoteAbperf,
    fresh: bool,
) -> anyhow::Result<i32> {
    let variants = store.variants(s.id)?;
    let schedule = store.schedule(s.id)?;
    let e = Experiment {
        id: s.id,
        cfg: &s.cfg,
        fleet: &s.fleet,
        variants: &variants,
        schedule: &schedule,
    };
    let id = e.id;
    // A signal stops ansible-playbook (see fleet::dispatch); what came back is still committed.
    crate::runner::signals::install()?;
    let states = match fleet::run_missing(store, &e, inventory, abperf, &version()) {
        Ok(s) => s,
        Err(err) => {
            // A new experiment that got no run is not kept; a resumed one stays resumable. (Runs
            // hosts committed themselves into a shared store count.)
            let _ = store.catch_up(id);
            if fresh && store.done_seqs(id).is_ok_and(|d| d.is_empty()) {
                store.delete(id)?;
                return Err(err.context(format!("experiment {id} is not kept")));
            }
            let _ = store.set_status(id, Status::Failed);
            return Err(err);
        }
    };
    tell(store, id, &states, inventory, fresh, variants.len())
}

/// Per host, how it went; then complete (0: ended as `abperf run` ends), interrupted (128 + the
/// signal), or which hosts are missing runs and why (1). A new experiment none of whose hosts
/// ran anything is deleted: nothing is left half-stored.
fn tell(
    store: &mut Store,
    id: i64,
    states: &[HostState],
    inventory: &Path,
    fresh: bool,
    variants: usize,
) -> anyhow::Result<i32> {
    for l in host_lines(states) {
        crate::error::stderr_line(&format!("abperf: {l}"));
    }
    let db = store.path().to_path_buf();
    let resume = hints::command(
        &db,
        &format!(
            "fleet run -i {} --resume {id}",
            shell_words::quote(&inventory.display().to_string())
        ),
    );
    if let Some(sig) = crate::runner::signals::received() {
        store.set_status(id, Status::Interrupted)?;
        crate::error::stderr_line(&format!(
            "abperf: interrupted by {}; every run that came back is stored (a host's abperf may \
             still be finishing its share); run the missing ones with: {resume}",
            crate::runner::signals::name(sig)
        ));
        return Ok(128 + sig);
    }
    let failed: Vec<&HostState> = states.iter().filter(|s| s.missing() > 0).collect();
    let nothing = states.iter().all(|s| s.committed == 0);
    if fresh && nothing && !failed.is_empty() {
        store.delete(id)?;
        let why: Vec<String> = failed.iter().map(|s| words(s)).collect();
        anyhow::bail!(
            "no host ran anything; experiment {id} is not kept: {}",
            why.join("; ")
        );
    }
    if failed.is_empty() {
        // As `abperf run` ends: the summary, the verdicts (hosts as blocks), where it is.
        return conclude(store, id, variants, Ok(Ending::Complete));
    }
    store.set_status(id, Status::Failed)?;
    for s in &failed {
        crate::error::stderr_line(&format!("abperf: error: {}", words(s)));
    }
    crate::error::stderr_line(&format!(
        "abperf: every run that came back is stored; run the missing ones with: {resume}"
    ));
    Ok(1)
}

fn words(s: &HostState) -> String {
    format!(
        "host {}: {} of {} runs missing: {}",
        s.name,
        s.missing(),
        s.planned,
        s.failure.as_deref().unwrap_or("unknown")
    )
}
