//! `abperf run`: build the variants and the seeded schedule, check everything that can be checked
//! before the first run (commands, knobs, events, CPU list, store), then execute, committing each
//! run as it ends. `--resume ID` continues a stopped experiment where its schedule stands.

use crate::cli::DbArgs;
use crate::design::{self, Order};
use crate::error::usage;
use crate::measure::{counters, env};
use crate::report::perfstat;
use crate::runner::experiment::{Ending, Progress, RunConfig, prepare};
use crate::runner::{KnobGuard, execute};
use crate::store::{NewExperiment, NewVariant, Status, Store};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "The ( +- x% ) figure is the standard error of the mean relative to the mean, as perf stat prints it."
)]
pub struct RunArgs {
    /// Commands to compare: each one is a variant (run through `sh -c` unless -N)
    #[arg(value_name = "COMMAND")]
    pub commands: Vec<String>,
    /// Name of a variant (repeat, once per command, or once per variant)
    #[arg(short = 'n', long = "name", value_name = "NAME")]
    pub names: Vec<String>,
    /// Parameter list: substitutes {NAME} in the commands, --pre/--post/--setup/--cleanup
    #[arg(short = 'L', long = "parameter-list", value_name = "NAME=V1,V2,...")]
    pub params: Vec<String>,
    /// Kernel knob (sysfs/procfs/debugfs file): written, read back, verified, always restored
    #[arg(short = 'k', long = "knob", value_name = "PATH=V1,V2,...")]
    pub knobs: Vec<String>,
    /// Run order
    #[arg(long, value_enum, default_value_t = Order::Abba)]
    pub order: Order,
    /// Seed of the run order (default: random; always printed and stored)
    #[arg(long)]
    pub seed: Option<u64>,
    /// Timed runs per variant
    #[arg(
        short = 'r',
        long = "runs",
        visible_alias = "repeat",
        default_value_t = 10
    )]
    pub runs: u32,
    /// Untimed warm-up runs per variant (stored, flagged, never analysed)
    #[arg(long, default_value_t = 1)]
    pub warmup: u32,
    /// Command run untimed before each run
    #[arg(long, visible_alias = "prepare", value_name = "CMD")]
    pub pre: Option<String>,
    /// Command run untimed after each run
    #[arg(long, value_name = "CMD")]
    pub post: Option<String>,
    /// Command run once each time the variant changes (after knob writes)
    #[arg(long, value_name = "CMD")]
    pub setup: Option<String>,
    /// Command run once at the end
    #[arg(long, value_name = "CMD")]
    pub cleanup: Option<String>,
    /// Split commands into words and exec them directly instead of through `sh -c`
    #[arg(short = 'N', long = "no-shell")]
    pub no_shell: bool,
    /// Pin the workload (and pre/post) to these CPUs, e.g. 1 or 0-1
    #[arg(long, value_name = "CPUS")]
    pub pin: Option<String>,
    /// Kill a run's process group after S seconds and record it as timed out
    #[arg(long, value_name = "S")]
    pub timeout: Option<f64>,
    /// Record failing runs and go on instead of stopping
    #[arg(short = 'i', long = "ignore-failure")]
    pub ignore_failure: bool,
    /// Count events per run: task-clock, page-faults, context-switches, cpu-migrations, cycles,
    /// instructions, dTLB-load-misses, ..., or tracepoints subsys:event (e.g. tlb:tlb_flush)
    #[arg(
        short = 'e',
        long = "event",
        value_delimiter = ',',
        value_name = "LIST"
    )]
    pub events: Vec<String>,
    /// An event this machine cannot count is an error instead of being skipped
    #[arg(long)]
    pub strict: bool,
    /// Show the workload's output (default: discarded)
    #[arg(long)]
    pub show_output: bool,
    /// Name of the experiment (default: the commands)
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Continue a stopped experiment exactly where its schedule stands
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// A progress bar with ETA on stderr; indicatif hides it when stderr is not a terminal.
struct Bar(Option<ProgressBar>);

impl Progress for Bar {
    fn start(&mut self, total: u64) {
        let pb = ProgressBar::new(total);
        pb.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} ETA {eta} {msg}")
                .expect("static template")
                .progress_chars("=> "),
        );
        self.0 = Some(pb);
    }
    fn ran(&mut self, variant: &str, i: u32, of: u32, wall_ns: u64) {
        if let Some(pb) = &self.0 {
            let (n, u) = perfstat::human(wall_ns as f64, "ns");
            pb.set_message(format!("{variant}: run {i} of {of}, last {n} {u}"));
            pb.inc(1);
        }
    }
    fn finish(&mut self) {
        if let Some(pb) = self.0.take() {
            pb.finish_and_clear();
        }
    }
}

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
        eprintln!("abperf: event {name}: {why}; the experiment goes on without it");
    }
    Ok(ok.into_iter().map(|s| s.name).collect())
}

fn random_seed() -> u64 {
    // 48 bits: short enough to type back with --seed.
    rand::random::<u64>() >> 16
}

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    if let Some(id) = &args.resume {
        if !args.commands.is_empty() {
            return Err(usage(
                "--resume takes no COMMAND: the experiment's own commands are resumed",
            ));
        }
        return resume(id, &args.db);
    }
    if args.runs == 0 {
        return Err(usage("-r/--runs must be at least 1"));
    }
    if let Some(t) = args.timeout
        && !(t > 0.0 && t.is_finite())
    {
        return Err(usage(format!(
            "--timeout {t}: expected a positive number of seconds"
        )));
    }
    let params = args
        .params
        .iter()
        .map(|p| design::parse_param_list(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let knob_specs = args
        .knobs
        .iter()
        .map(|k| design::parse_knob(k))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let plans = design::build_variants(&args.commands, &args.names, &params, &knob_specs)?;
    if args.order == Order::Sequential {
        eprintln!(
            "abperf: warning: --order sequential runs every run of one variant before the next: a slow \
             drift (heat, page cache, background load) becomes a false difference; the default abba cancels it"
        );
    }
    let seed = args.seed.unwrap_or_else(random_seed);
    let mut store = Store::open_resolved(args.db.db.as_deref())?;
    let counted = check_events(&args.events, args.strict)?;
    let cfg = RunConfig {
        order: args.order,
        runs: args.runs,
        warmup: args.warmup,
        seed,
        pre: args.pre.clone(),
        post: args.post.clone(),
        setup: args.setup.clone(),
        cleanup: args.cleanup.clone(),
        shell: !args.no_shell,
        pin: args.pin.clone(),
        timeout_s: args.timeout,
        events: args.events.clone(),
        counted_events: counted,
        ignore_failure: args.ignore_failure,
        show_output: args.show_output,
    };
    let new_variants: Vec<NewVariant> = plans
        .iter()
        .map(|p| NewVariant {
            name: p.name.clone(),
            command: Some(p.command.clone()),
            parameters: p.parameters.clone(),
            knobs: p.knobs.clone(),
        })
        .collect();
    // Everything is checked before the experiment is stored: commands, CPU list, knobs.
    let as_variants: Vec<crate::store::Variant> = new_variants
        .iter()
        .enumerate()
        .map(|(i, v)| crate::store::Variant {
            id: 0,
            position: i,
            name: v.name.clone(),
            command: v.command.clone(),
            parameters: v.parameters.clone(),
            knobs: v.knobs.clone(),
        })
        .collect();
    prepare(&cfg, &as_variants)?;
    let knob_paths: Vec<String> = knob_specs.iter().map(|k| k.path.clone()).collect();
    let mut guard = KnobGuard::prepare(&knob_paths, &BTreeMap::new())?;
    let schedule = design::build_schedule(cfg.order, plans.len(), cfg.runs, cfg.warmup, seed);
    let title = args.title.clone().unwrap_or_else(|| {
        plans
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(" vs ")
    });
    let exp = NewExperiment {
        name: title,
        kind: "run".into(),
        command_line: std::env::args().collect(),
        design: serde_json::to_value(&cfg)?,
        seed: Some(seed),
        environment: env::snapshot(),
    };
    let id = store.create_experiment(&exp, &new_variants, &schedule)?;
    store.set_knob_originals(id, guard.originals())?;
    eprintln!(
        "abperf: experiment {id}: {} variant(s) x {} runs (+{} warm-up), order {}, seed {seed}",
        plans.len(),
        cfg.runs,
        cfg.warmup,
        cfg.order.as_str()
    );
    let variants = store.variants(id)?;
    finish(&mut store, id, &cfg, &variants, &schedule, &mut guard)
}

fn resume(reference: &str, db: &DbArgs) -> anyhow::Result<i32> {
    let mut store = Store::open_resolved(db.db.as_deref())?;
    let id = store.resolve_id(reference)?;
    let exp = store.experiment(id)?;
    if exp.kind != "run" {
        anyhow::bail!(
            "experiment {id} is a {} experiment; only `abperf run` experiments can be resumed",
            exp.kind
        );
    }
    if exp.status == Status::Complete {
        anyhow::bail!("experiment {id} is already complete; nothing to resume");
    }
    let cfg: RunConfig = serde_json::from_value(exp.design.clone()).with_context(|| {
        format!("experiment {id}: its stored design cannot be read by this abperf")
    })?;
    let variants = store.variants(id)?;
    let schedule = store.schedule(id)?;
    let mut stored = BTreeMap::new();
    let mut paths = Vec::new();
    for v in &variants {
        for k in &v.knobs {
            if !paths.contains(&k.path) {
                paths.push(k.path.clone());
            }
            if let Some(o) = &k.original {
                stored.insert(k.path.clone(), o.clone());
            }
        }
    }
    let mut guard = KnobGuard::prepare(&paths, &stored)?;
    for (path, now, orig) in guard.drifted() {
        eprintln!(
            "abperf: knob {path} holds '{now}', left by the interrupted session; '{orig}' will be restored at the end"
        );
    }
    let done = store.runs(id)?.len();
    eprintln!(
        "abperf: resuming experiment {id} at run {done} of {} (order {}, seed {})",
        schedule.len(),
        cfg.order.as_str(),
        cfg.seed
    );
    store.set_status(id, Status::Running)?;
    finish(&mut store, id, &cfg, &variants, &schedule, &mut guard)
}

fn finish(
    store: &mut Store,
    id: i64,
    cfg: &RunConfig,
    variants: &[crate::store::Variant],
    schedule: &[crate::store::Slot],
    guard: &mut KnobGuard,
) -> anyhow::Result<i32> {
    let mut bar = Bar(None);
    let result = execute(store, id, cfg, variants, schedule, guard, &mut bar);
    let (status, code) = match &result {
        Ok(Ending::Complete) => (Status::Complete, 0),
        Ok(Ending::Failed(_)) | Err(_) => (Status::Failed, 1),
        Ok(Ending::Interrupted(sig)) => (Status::Interrupted, 128 + sig),
    };
    store.set_status(id, status)?;
    let runs = store.runs(id)?;
    println!();
    for v in variants {
        println!("{}", perfstat::variant_block(v, &runs));
    }
    if variants.len() > 1 {
        match crate::commands::compare::verdict_lines(store, id) {
            Ok(lines) => {
                for l in lines {
                    println!("{l}");
                }
                println!();
            }
            Err(e) => eprintln!("abperf: no verdict: {e:#}"),
        }
    }
    match result {
        Ok(Ending::Complete) => {
            println!(
                "experiment {id} complete, stored in {}",
                store.path().display()
            );
            println!(
                "  compare: abperf compare {id}    details: abperf show {id}    raw: abperf export {id} --format csv"
            );
        }
        Ok(Ending::Failed(msg)) => {
            eprintln!("abperf: {msg}");
            eprintln!("abperf: experiment {id} marked failed; its completed runs are stored");
        }
        Ok(Ending::Interrupted(sig)) => {
            eprintln!(
                "abperf: interrupted by {}; experiment {id} stopped with every completed run stored; \
                 continue it with: abperf run --resume {id}",
                crate::runner::signals::name(sig)
            );
        }
        Err(e) => {
            return Err(e.context(format!("experiment {id} stopped (completed runs are stored; resume with abperf run --resume {id})")));
        }
    }
    Ok(code)
}
