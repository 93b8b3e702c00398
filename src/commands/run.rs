//! `abperf run`: build the variants and the seeded schedule, check everything that can be checked
//! before the first run (commands, knobs, events, CPU list, store), then execute, committing each
//! run as it ends. `--resume ID` continues a stopped experiment where its schedule stands.

use crate::commands::{DbArgs, hints};
use crate::design::{self, Order};
use crate::doctor::{self, Setting};
use crate::error::usage;
use crate::measure::counters;
use crate::model::tune::SOURCE_RUN;
use crate::model::{Kind, NewExperiment, SequentialPlan, Slot, Status, Variant};
use crate::report::View;
use crate::report::perfstat;
use crate::runner::experiment::{Ending, Progress, RunConfig, RunSink, prepare, ways_line};
use crate::runner::knob_lock::LockOptions;
use crate::runner::noise::{self, NoiseConfig};
use crate::runner::shell::ShellMode;
use crate::runner::signals;
use crate::runner::workload;
use crate::runner::{KnobGuard, execute, preflight};
use crate::stats::sequential::Looks;
use crate::store::Store;
use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "The ( +- x% ) figure is the standard error of the mean relative to the mean, as perf stat prints it."
)]
pub struct RunArgs {
    /// Commands to compare: each one is a variant (exec'd directly, or through `sh -c` when it has
    /// shell syntax: see --shell); `@NAME` or
    /// `@NAME:K=V,...` runs built-in workload NAME (abperf workload list), taking the -L lists
    /// named after its parameters
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
        visible_aliases = ["repeat", "max-runs"],
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
    /// Split commands into words and exec them directly, never through `sh -c` (--shell none)
    #[arg(short = 'N', long = "no-shell", conflicts_with = "shell")]
    pub no_shell: bool,
    /// How commands start: auto (default) execs a command without shell syntax directly (split on
    /// blanks, looked up in PATH) and runs the others by `sh -c`; sh always wraps them in `sh -c`
    /// (whose start, ~1-2 ms for dash's extra fork, is then timed too); none is -N
    #[arg(long, value_enum, value_name = "MODE")]
    pub shell: Option<ShellMode>,
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
    /// Apply the safe settings of `abperf doctor --fix` (governor, boost, THP, NUMA balancing,
    /// NMI watchdog, ...) for this experiment; originals are stored and restored at the end, on
    /// errors and on signals
    #[arg(long)]
    pub tune: bool,
    /// Before each run (untimed): sync, then drop the page cache, dentries and inodes
    #[arg(long)]
    pub drop_caches: bool,
    /// Before each run (untimed, after --drop-caches): read every file under DIR (relative to
    /// the copy with --tmpfs-copy)
    #[arg(long, value_name = "DIR")]
    pub pre_read: Option<PathBuf>,
    /// Before each run (untimed): page-cache ballast of a random, seeded size up to MIB, so
    /// physical memory layout changes from run to run (Ingo Molnar's recipe); freed at the end
    #[arg(long, value_name = "MIB")]
    pub perturb_layout: Option<u64>,
    /// Copy DIR once to a private tmpfs and run everything there (working directory);
    /// unmounted and removed at the end
    #[arg(long, value_name = "DIR")]
    pub tmpfs_copy: Option<PathBuf>,
    /// Stop as soon as a valid sequential test decides: -r/--max-runs is the most runs per variant,
    /// looked at --looks times (O'Brien-Fleming boundaries on Welch's test of wall time against
    /// the first variant; the false-call rate stays at alpha 0.05)
    #[arg(long)]
    pub until_decided: bool,
    /// With --until-decided: how many looks (equally spaced)
    #[arg(
        long,
        default_value_t = 4,
        value_name = "K",
        requires = "until_decided"
    )]
    pub looks: usize,
    /// Continue a stopped experiment exactly where its schedule stands
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// Keep nothing: the experiment lives in memory and is gone when abperf exits (a throwaway
    /// run; the same as --db :memory:)
    #[arg(long, conflicts_with_all = ["db", "resume"])]
    pub no_store: bool,
    /// Wait for a knob another experiment holds (default: fail at once, naming the holder)
    #[arg(long)]
    pub wait: bool,
    #[command(flatten)]
    pub kernel: super::run_boots::KernelArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

/// The group-sequential stopping rule of `--until-decided`: at each look (every variant has
/// run `runs_at(k)` timed runs) Welch's p of each variant against the first, on wall time,
/// against the look's O'Brien-Fleming boundary.
pub(super) struct Sequential {
    plan: SequentialPlan,
    boundaries: Vec<f64>,
    next: usize,
    variants: usize,
}

impl Sequential {
    fn new(plan: SequentialPlan, variants: usize) -> Sequential {
        Sequential {
            boundaries: plan.boundaries(variants.saturating_sub(1)),
            plan,
            next: 1,
            variants,
        }
    }

    fn check(
        &mut self,
        sink: &dyn RunSink,
        done: &BTreeMap<usize, u32>,
    ) -> anyhow::Result<Option<String>> {
        if self.variants < 2 || self.next > self.plan.looks {
            return Ok(None);
        }
        let need = self.plan.runs_at(self.next);
        if (0..self.variants).any(|v| (done.get(&v).copied().unwrap_or(0) as usize) < need) {
            return Ok(None);
        }
        let k = self.next;
        self.next += 1;
        let Some(ds) = sink.stored()? else {
            return Ok(None);
        };
        let first = |pos: usize| -> Vec<f64> {
            let mut v = ds.values(pos, super::output::DEFAULT_METRIC);
            v.truncate(need);
            v
        };
        let base = first(0);
        let others: Vec<Vec<f64>> = (1..self.variants).map(first).collect();
        if base.len() < need || others.iter().any(|o| o.len() < need) {
            return Ok(None); // failed runs (with -i): wait for the next look
        }
        let refs: Vec<&[f64]> = others.iter().map(Vec::as_slice).collect();
        let look = self.plan.look(k, &self.boundaries, &base, &refs);
        crate::error::stderr_line(&format!(
            "abperf: look {k} of {} at {need} runs per variant: Welch {} against the boundary p < {:.2e} (|z| >= {:.3}){}",
            self.plan.looks,
            look.p
                .iter()
                .map(|p| crate::stats::verdict::fmt_p(*p))
                .collect::<Vec<_>>()
                .join(", "),
            look.nominal_p,
            look.boundary,
            if look.decided { ": decided" } else { "" }
        ));
        Ok(look.decided.then(|| {
            format!(
                "decided at look {k} of {} ({need} of up to {} runs per variant): every variant \
                 crossed the O'Brien-Fleming boundary p < {:.2e}",
                self.plan.looks, self.plan.max_runs, look.nominal_p
            )
        }))
    }
}

/// A progress bar with ETA on stderr (indicatif hides it when stderr is not a terminal), and
/// the sequential stopping rule when there is one.
pub(super) struct Bar(
    pub(super) Option<ProgressBar>,
    pub(super) Option<Sequential>,
);

impl Progress for Bar {
    fn decided(
        &mut self,
        sink: &dyn RunSink,
        done: &BTreeMap<usize, u32>,
    ) -> anyhow::Result<Option<String>> {
        match self.1.as_mut() {
            Some(s) => s.check(sink, done),
            None => Ok(None),
        }
    }
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
            // Not formatted when nobody sees it (stderr not a terminal): a per-run cost.
            if pb.is_hidden() {
                pb.inc(1);
                return;
            }
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
    fn note(&mut self, msg: &str) {
        match &self.0 {
            Some(pb) => pb.suspend(|| crate::error::stderr_line(msg)),
            None => crate::error::stderr_line(msg),
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
        crate::error::stderr_line(&format!(
            "abperf: event {name}: {why}; the experiment goes on without it"
        ));
    }
    Ok(ok.into_iter().map(|s| s.name).collect())
}

/// What can be told wrong before anything runs: `{NAME}` placeholders against `-L` names, knob
/// values against the choices their files list.
fn check_design(
    args: &RunArgs,
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
    design::placeholders::check(&texts, params)?;
    preflight::check_knob_values(knobs)
}

/// kbuild variants without seed 003's noise controls: say which flags give Ingo Molnar's recipe.
fn kbuild_hint(args: &RunArgs, plans: &[design::VariantPlan]) {
    let kbuild = plans
        .iter()
        .any(|p| p.command == "@kbuild" || p.command.starts_with("@kbuild:"));
    if kbuild && !args.drop_caches && args.perturb_layout.is_none() {
        eprintln!(
            "abperf: note: kbuild runs its prepare step (configure, make clean, make prepare) \
             untimed before every run; for seed 003's recipe add --drop-caches --perturb-layout \
             64 (and --tune for the governor; see docs/workloads.md)"
        );
    }
}

pub(super) fn random_seed() -> u64 {
    // 48 bits: short enough to type back with --seed.
    rand::random::<u64>() >> 16
}

pub fn run(mut args: RunArgs) -> anyhow::Result<i32> {
    if let Some(share) = &args.kernel.guest_share {
        return crate::runner::guest::run_share(share);
    }
    if args.no_store {
        args.db.db = Some(PathBuf::from(hints::IN_MEMORY));
    }
    if args.kernel.any() && args.until_decided {
        return Err(usage(
            "--until-decided with kernels: not supported (boots, not runs, are the unit there); \
             use --boots and abperf plan --from ID",
        ));
    }
    if args.kernel.any() && args.commands.iter().any(|c| workload::is_workload(c)) {
        return Err(usage(
            "built-in workloads (@NAME) as variants of kernel experiments (--kernel/--append) \
             are not supported yet: their prepare steps, data sets and cgroups are not set up \
             inside the VM; give the guest a command instead",
        ));
    }
    if args.kernel.any() && args.resume.is_none() {
        return super::run_boots::run(args);
    }
    if let Some(id) = &args.resume {
        if !args.commands.is_empty() {
            return Err(usage(
                "--resume takes no COMMAND: the experiment's own commands are resumed",
            ));
        }
        if args.kernel.any() {
            return Err(usage(
                "--resume takes no kernel options: the experiment's own kernels and VM design are resumed",
            ));
        }
        return resume(id, &args.db, args.wait);
    }
    if args.runs == 0 {
        return Err(usage("-r/--runs must be at least 1"));
    }
    if args.until_decided && !(1..=20).contains(&args.looks) {
        return Err(usage(format!("--looks {}: expected 1 to 20", args.looks)));
    }
    if args.until_decided && (args.runs as usize) < 4 * args.looks {
        return Err(usage(format!(
            "--until-decided with -r {} and --looks {}: expected at least 4 runs per variant per look (-r {} or more)",
            args.runs,
            args.looks,
            4 * args.looks
        )));
    }
    check_timeout(&args)?;
    let (params, knob_specs) = parse_lists(&args)?;
    // `@NAME` takes the -L lists named after its parameters (see runner::workload).
    let others: Vec<&str> = [&args.pre, &args.post, &args.setup, &args.cleanup]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let commands = workload::expand(&args.commands, &params, &others)?;
    check_design(&args, &commands, &params, &knob_specs)?;
    let plans = design::build_variants(&commands, &args.names, &params, &knob_specs)?;
    workload::check(plans.iter().map(|p| (p.name.as_str(), p.command.as_str())))?;
    kbuild_hint(&args, &plans);
    if args.until_decided && plans.len() < 2 {
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
    let seed = args.seed.unwrap_or_else(random_seed);
    let mut store = Store::open_resolved(args.db.db.as_deref())?;
    let counted = check_events(&args.events, args.strict)?;
    let mut cfg = run_config(&args, seed, counted, NoiseConfig::default());
    let variants: Vec<Variant> = plans
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
        .collect::<anyhow::Result<_>>()?;
    // Everything is checked before the experiment is stored: commands, CPU list, knobs.
    let plan = prepare(&cfg, &variants)?;
    let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
    let ways = plan.ways();
    let ways_line = ways_line(cfg.shell, &names, &ways);
    cfg.exec = names
        .iter()
        .zip(&ways)
        .map(|(n, w)| (n.to_string(), w.to_string()))
        .collect();
    let knob_paths: Vec<String> = knob_specs.iter().map(|k| k.path.clone()).collect();
    cfg.noise = noise_config(&args, &knob_paths)?;
    let tune: Vec<Setting> = cfg.noise.tune.clone().unwrap_or_default();
    // Signals are watched before anything is changed, so Ctrl-C from here on restores.
    signals::install()?;
    let mut paths = knob_paths.clone();
    paths.extend(tune.iter().map(|t| t.path.clone()));
    let mut guard = KnobGuard::prepare_with(&paths, &BTreeMap::new(), &lock_options(args.wait))?;
    let session = if cfg.noise.tune.is_some() {
        let session = store.tune_session(SOURCE_RUN, None)?;
        if let Err(e) = noise::apply_tune(&mut store, &mut guard, &tune, session) {
            let restore_errors = guard.restore();
            drop(guard);
            let rows = store.tune_session_outstanding(session)?;
            noise::settle(&mut store, rows)?;
            for r in restore_errors {
                crate::error::stderr_line(&format!("abperf: error: {r}"));
            }
            return Err(e);
        }
        for t in &tune {
            crate::error::stderr_line(&format!(
                "abperf: --tune: {} '{}' -> '{}'",
                t.path, t.current, t.value
            ));
        }
        Some(session)
    } else {
        None
    };
    let schedule = design::build_schedule(cfg.order, plans.len(), cfg.runs, cfg.warmup, seed);
    let title = title(&args, plans.iter().map(|p| p.name.as_str()));
    // Other processes' CPU use, load and pressure are sampled over the runs, not before them.
    let sampling = doctor::Sampling::start();
    let exp = NewExperiment {
        name: title,
        kind: Kind::Run,
        command_line: std::env::args().collect(),
        design: serde_json::to_value(&cfg)?,
        seed: Some(seed),
        environment: doctor::environment_unsampled(),
    };
    let owner = crate::measure::process::current_owner();
    let id = store.create_owned_experiment(&exp, &variants, &schedule, &owner)?;
    guard.set_experiment(id, store.path())?;
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

fn absolute_dir(p: &Path, flag: &str) -> anyhow::Result<PathBuf> {
    let abs =
        std::fs::canonicalize(p).map_err(|e| usage(format!("{flag} {}: {e}", p.display())))?;
    if !abs.is_dir() {
        return Err(usage(format!("{flag} {}: not a directory", p.display())));
    }
    Ok(abs)
}

/// The experiment's name: --title, else "A vs B vs ...".
pub(super) fn title<'a>(args: &RunArgs, names: impl Iterator<Item = &'a str>) -> String {
    args.title
        .clone()
        .unwrap_or_else(|| names.collect::<Vec<_>>().join(" vs "))
}

/// `-L` lists and `-k` knobs as given.
pub(super) fn parse_lists(
    args: &RunArgs,
) -> anyhow::Result<(Vec<design::ParamList>, Vec<design::KnobSpec>)> {
    let params = args
        .params
        .iter()
        .map(|p| design::parse_param_list(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let knobs = args
        .knobs
        .iter()
        .map(|k| design::parse_knob(k))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok((params, knobs))
}

pub(super) fn check_timeout(args: &RunArgs) -> anyhow::Result<()> {
    match args.timeout {
        Some(t) if !(t > 0.0 && t.is_finite()) => Err(usage(format!(
            "--timeout {t}: expected a positive number of seconds"
        ))),
        _ => Ok(()),
    }
}

/// The stored design of a run experiment from its options.
pub(super) fn run_config(
    args: &RunArgs,
    seed: u64,
    counted_events: Vec<String>,
    noise: NoiseConfig,
) -> RunConfig {
    RunConfig {
        order: args.order,
        runs: args.runs,
        warmup: args.warmup,
        seed,
        pre: args.pre.clone(),
        post: args.post.clone(),
        setup: args.setup.clone(),
        cleanup: args.cleanup.clone(),
        shell: if args.no_shell {
            ShellMode::None
        } else {
            args.shell.unwrap_or_default()
        },
        exec: BTreeMap::new(),
        pin: args.pin.clone(),
        timeout_s: args.timeout,
        events: args.events.clone(),
        counted_events,
        ignore_failure: args.ignore_failure,
        show_output: args.show_output,
        noise,
        sequential: args.until_decided.then_some(SequentialPlan {
            looks: args.looks,
            max_runs: args.runs,
            alpha: 0.05,
        }),
    }
}

/// The noise-control options, checked; --tune's settings exclude files that are variant knobs.
pub(super) fn noise_config(args: &RunArgs, knob_paths: &[String]) -> anyhow::Result<NoiseConfig> {
    let tune = if args.tune {
        let mut settings = Vec::new();
        for s in doctor::recommended(&doctor::sys::Sys::real()) {
            if knob_paths.contains(&s.path) {
                crate::error::stderr_line(&format!(
                    "abperf: --tune: leaving {} alone: it is a variant knob (-k)",
                    s.path
                ));
            } else {
                settings.push(s);
            }
        }
        if settings.is_empty() {
            crate::error::stderr_line(
                "abperf: --tune: nothing to change on this machine (see abperf doctor)",
            );
        }
        Some(settings)
    } else {
        None
    };
    if args.perturb_layout == Some(0) {
        return Err(usage(
            "--perturb-layout 0: expected a number of MiB of at least 1",
        ));
    }
    Ok(NoiseConfig {
        tune,
        drop_caches: args.drop_caches,
        pre_read: match (&args.pre_read, &args.tmpfs_copy) {
            // Relative to the copy, where the workload runs: checked against the original.
            (Some(p), Some(src)) if p.is_relative() => {
                absolute_dir(&src.join(p), "--pre-read (inside --tmpfs-copy)")?;
                Some(p.clone())
            }
            (Some(p), _) => Some(absolute_dir(p, "--pre-read")?),
            (None, _) => None,
        },
        perturb_layout_mib: args.perturb_layout,
        tmpfs_copy: args
            .tmpfs_copy
            .as_deref()
            .map(|p| absolute_dir(p, "--tmpfs-copy"))
            .transpose()?,
    })
}

fn lock_options(wait: bool) -> LockOptions {
    LockOptions {
        wait,
        purpose: "run".into(),
    }
}

fn resume(reference: &str, db: &DbArgs, wait: bool) -> anyhow::Result<i32> {
    let mut store = Store::open_resolved(db.db.as_deref())?;
    let id = super::lookup::experiment_id(&store, reference)?;
    let exp = store.experiment(id)?;
    if exp.kind != Kind::Run {
        anyhow::bail!(
            "experiment {id} is a {} experiment; only `abperf run` experiments can be resumed",
            exp.kind.as_str()
        );
    }
    if exp.status == Status::Complete {
        anyhow::bail!("experiment {id} is already complete; nothing to resume");
    }
    let cfg: RunConfig = serde_json::from_value(exp.design.clone()).with_context(|| {
        format!("experiment {id}: its stored design cannot be read by this abperf")
    })?;
    // Take the experiment over before anything is touched; refused while its owner lives.
    claim(&mut store, id)?;
    if exp.design.get("vm").is_some() {
        return super::run_boots::resume(&mut store, id, &cfg, &exp.design);
    }
    let variants = store.variants(id)?;
    workload::check_versions(&variants).with_context(|| format!("experiment {id}"))?;
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
    let tune: Vec<Setting> = cfg.noise.tune.clone().unwrap_or_default();
    for (p, o) in noise::stored_tune_originals(&store, id)? {
        stored.entry(p).or_insert(o);
    }
    for t in &tune {
        if !paths.contains(&t.path) {
            paths.push(t.path.clone());
        }
    }
    signals::install()?;
    let mut guard = match KnobGuard::prepare_with(&paths, &stored, &lock_options(wait)) {
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
    for (path, now, orig) in guard.drifted() {
        crate::error::stderr_line(&format!(
            "abperf: knob {path} holds '{now}', left by the interrupted session; '{orig}' will be restored at the end"
        ));
    }
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

/// Make this process experiment `id`'s owner (its status becomes `running`), unless its recorded
/// owner is still alive (or may be: another host, an unreadable /proc): then refuse, naming it.
pub(super) fn claim(store: &mut Store, id: i64) -> anyhow::Result<()> {
    let me = crate::measure::process::current_owner();
    let alive = |o: &crate::model::Owner| {
        !matches!(
            crate::measure::process::liveness(o),
            crate::model::Liveness::Dead(_)
        )
    };
    if let Err(o) = store.claim_experiment(id, &me, &alive)? {
        let how = match crate::measure::process::liveness(&o) {
            crate::model::Liveness::Unknown(why) => format!("it may still be running: {why}"),
            _ => format!(
                "it is still running in pid {}; wait for it, or stop it with: kill -INT {}",
                o.pid, o.pid
            ),
        };
        anyhow::bail!("experiment {id} cannot be resumed: {how}");
    }
    Ok(())
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
        eprintln!("abperf: warning: the load sampled during the runs is not stored: {e:#}");
    }
    conclude(store, id, variants.len(), result)
}

/// After the runs: the experiment's status, its summary and verdicts, and how to go on.
pub(super) fn conclude(
    store: &mut Store,
    id: i64,
    variants: usize,
    result: anyhow::Result<Ending>,
) -> anyhow::Result<i32> {
    let (mut status, mut code) = match &result {
        Ok(Ending::Complete | Ending::Decided(_)) => (Status::Complete, 0),
        // A full disk stops the experiment; nothing about it failed: free space and resume.
        Err(e) if crate::store::is_disk_full(e) => (Status::Interrupted, 1),
        Ok(Ending::Failed(_)) | Err(_) => (Status::Failed, 1),
        Ok(Ending::Interrupted(sig)) => (Status::Interrupted, 128 + sig),
    };
    if let Err(e) = result.as_ref()
        && crate::store::is_disk_full(e)
    {
        // The status may not fit on the disk either; then the dead owner shows it interrupted.
        let _ = store.set_status(id, status);
        return Err(anyhow::anyhow!(
            "store {}: the disk is full ({e:#}); experiment {id} stopped with every completed run \
             stored; free some space, then continue it with: {}",
            store.path().display(),
            hints::command(store.path(), &format!("run --resume {id}"))
        ));
    }
    store.set_status(id, status)?;
    let mut report = super::output::load(store, id, View::RunEnd)?;
    super::output::escape_for_people(&mut report, crate::report::Format::Text);
    // With -i every run may have failed: nothing was measured, whatever the schedule says.
    let starved: Vec<String> = (0..report.data.variants.len())
        .filter(|&pos| report.data.counted(pos).next().is_none())
        .map(|pos| format!("'{}'", report.data.variants[pos].name))
        .collect();
    let all_failed = matches!(result, Ok(Ending::Complete))
        && !starved.is_empty()
        && starved.len() == report.data.variants.len();
    if all_failed {
        status = Status::Failed;
        code = 1;
        store.set_status(id, status)?;
        report.data.experiments[0].status = status;
    }
    if (variants > 1 || report.data.has_boots())
        && !all_failed
        && let Err(e) = super::output::AnalysisArgs::default().analyse_into(&mut report)
    {
        crate::error::stderr_line(&format!("abperf: no verdict: {e:#}"));
    }
    // Blocks of variants without a single stored run say nothing: left out when nothing ran.
    if !report.data.runs.is_empty() {
        crate::error::stdout_line("");
        crate::error::stdout_text(&crate::report::Format::Text.render(&report)?);
    }
    let throwaway = hints::in_memory(store.path());
    let cmd = |sub: &str| hints::command(store.path(), sub);
    match result {
        Ok(Ending::Complete) if all_failed => {
            crate::error::stderr_line(&format!(
                "abperf: every run failed (see the warnings above), nothing was measured; \
                 experiment {id} marked failed"
            ));
        }
        Ok(Ending::Complete) if throwaway => {
            crate::error::stdout_line("experiment complete; not stored (--no-store)");
        }
        Ok(Ending::Complete) => {
            if !starved.is_empty() {
                crate::error::stderr_line(&format!(
                    "abperf: warning: no successful run of variant {}: nothing to compare it with",
                    starved.join(", ")
                ));
            }
            crate::error::stdout_line(&format!(
                "experiment {id} complete, stored in {}",
                store.path().display()
            ));
            crate::error::stdout_line(&format!(
                "  compare: {}\n  details: {}\n  raw:     {}",
                cmd(&format!("compare {id}")),
                cmd(&format!("show {id}")),
                cmd(&format!("export {id} --format csv"))
            ));
        }
        Ok(Ending::Decided(why)) => {
            crate::error::stdout_line(&format!("experiment {id} stopped early: {why}"));
            crate::error::stdout_line(&format!(
                "  compare: {}\n  details: {}\n  raw:     {}",
                cmd(&format!("compare {id}")),
                cmd(&format!("show {id}")),
                cmd(&format!("export {id} --format csv"))
            ));
        }
        Ok(Ending::Failed(msg)) => {
            crate::error::stderr_line(&format!("abperf: {msg}"));
            if !throwaway {
                crate::error::stderr_line(&format!(
                    "abperf: experiment {id} marked failed; its completed runs are stored"
                ));
            }
        }
        Ok(Ending::Interrupted(sig)) => {
            let how = if throwaway {
                "nothing is kept (--no-store)".to_string()
            } else {
                format!(
                    "experiment {id} stopped with every completed run stored; continue it with: {}",
                    cmd(&format!("run --resume {id}"))
                )
            };
            crate::error::stderr_line(&format!(
                "abperf: interrupted by {}; {how}",
                crate::runner::signals::name(sig)
            ));
        }
        Err(e) if throwaway => return Err(e),
        Err(e) => {
            return Err(e.context(format!(
                "experiment {id} stopped (completed runs are stored; resume with {})",
                cmd(&format!("run --resume {id}"))
            )));
        }
    }
    Ok(code)
}
