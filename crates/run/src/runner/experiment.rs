//! The experiment loop: walk the stored schedule from where it stands, set knobs and run setup
//! when the variant changes, run pre (untimed), the timed workload, post (untimed), and commit
//! each run the moment it ends. Stops cleanly on failure (unless ignored) and on signals; knobs
//! are restored on every way out.

use super::command::Prepared;
use super::cpuset::CpuSet;
use super::knobs::KnobGuard;
use super::noise::{Noise, NoiseConfig};
use super::shell::{self, ShellMode};
use super::signals;
use super::spawn::{self, Exit, SpawnOptions};
use super::workload::{self, MetricsFile, WorkloadCommand};
use crate::design::{Order, substitute};
use abperf_measure::counters::{EventSpec, parse_event};
use abperf_measure::rusage;
use abperf_model::profile::ProfiledRun;
use abperf_model::{Metric, Run, RunStatus, Slot, Variant};
use abperf_store::Store;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Everything needed to run (and resume) an experiment; stored as the experiment's design.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunConfig {
    pub order: Order,
    pub runs: u32,
    pub warmup: u32,
    pub seed: u64,
    pub pre: Option<String>,
    /// `--rewarm`: commands run in order after the noise controls (caches dropped, pre-read),
    /// right before the timed run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rewarm: Vec<String>,
    pub post: Option<String>,
    pub setup: Option<String>,
    pub cleanup: Option<String>,
    /// How commands are started: `auto` (directly unless they have shell syntax), `sh` (always
    /// `sh -c`) or `none` (`-N`); designs stored before hold true (`sh`) or false (`none`).
    pub shell: ShellMode,
    /// How each variant's command was started ("direct" or "sh -c"), by variant name: decided
    /// when the experiment is made and kept on resume.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub exec: BTreeMap<String, String>,
    pub pin: Option<String>,
    pub timeout_s: Option<f64>,
    /// Events asked for with `-e`.
    pub events: Vec<String>,
    /// Events that this machine can count (the rest were reported and skipped).
    pub counted_events: Vec<String>,
    pub ignore_failure: bool,
    /// `--wait-moved-knob`: after a run during which another process changed a knob, wait for
    /// the knob to hold abperf's value again instead of stopping (stored only when set).
    #[serde(default, skip_serializing_if = "is_false")]
    pub wait_moved_knob: bool,
    pub show_output: bool,
    /// Noise control: --tune, --drop-caches, --pre-read, --perturb-layout, --tmpfs-copy.
    #[serde(default)]
    pub noise: NoiseConfig,
    /// `--until-decided`: the schedule holds `runs` per variant, and the experiment may stop
    /// at an earlier look (the caller's [`Progress::decided`] says when).
    #[serde(default)]
    pub sequential: Option<abperf_model::SequentialPlan>,
    /// `--profile[=EVENT]`: untimed profiled runs beside the timed ones (stored only when set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<super::profiled::ProfilePlan>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// How an execution ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    Complete,
    /// A stopping rule decided before the schedule's end (what it found, in words).
    Decided(String),
    /// The workload failed or timed out (message), and failures were not ignored.
    Failed(String),
    Interrupted(i32),
}

/// Commands of one variant, prepared for exec.
struct VariantCommands {
    main: Prepared,
    pre: Option<Prepared>,
    rewarm: Vec<Prepared>,
    post: Option<Prepared>,
    setup: Option<Prepared>,
    /// A built-in workload (`@NAME`): its per-run command, prepare step and metrics.
    workload: Option<Workload>,
}

/// A workload variant's command and its untimed prepare step.
struct Workload {
    cmd: WorkloadCommand,
    prepare: Option<Prepared>,
}

/// The main command of a variant, or of a workload variant with its own seed: the workload's
/// command for one run.
fn main_command(cmds: &VariantCommands, seed: u64, seq: u32) -> anyhow::Result<Option<Prepared>> {
    match &cmds.workload {
        Some(w) => match w.cmd.run_seed(seed, seq) {
            Some(s) => w.cmd.exec(Some(s)).map(Some),
            None => Ok(None),
        },
        None => Ok(None),
    }
}

fn prepare_opt(
    text: &Option<String>,
    params: &BTreeMap<String, String>,
    shell: ShellMode,
    flag: &str,
) -> anyhow::Result<Option<Prepared>> {
    text.as_ref()
        .map(|t| {
            Prepared::with_mode(&substitute(t, params), shell).with_context(|| flag.to_string())
        })
        .transpose()
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// Resolve the counted events of a config to perf specs (names were checked when it was made).
pub fn event_specs(names: &[String]) -> anyhow::Result<Vec<EventSpec>> {
    names
        .iter()
        .map(|n| parse_event(n).map_err(|e| anyhow::anyhow!("-e/--event: {e}")))
        .collect()
}

/// Prepared state for one execution: checked before the first run, so a bad command, knob or
/// CPU list fails with nothing run.
pub struct ExecPlan {
    commands: Vec<VariantCommands>,
    cleanups: Vec<Prepared>,
    pin: Option<CpuSet>,
    events: Vec<EventSpec>,
    /// `$ABPERF_METRICS_FILE`, when a variant runs a built-in workload.
    metrics_file: Option<&'static MetricsFile>,
}

impl ExecPlan {
    /// How each variant's main command is started ("direct" or "sh -c"), in variant order.
    pub fn ways(&self) -> Vec<&'static str> {
        self.commands.iter().map(|c| c.main.way()).collect()
    }
}

/// One line saying how the variants' commands are started (`names` in variant order).
pub fn ways_line(mode: ShellMode, names: &[&str], ways: &[&str]) -> String {
    let pick = |way: &str| -> Vec<String> {
        names
            .iter()
            .zip(ways)
            .filter(|(_, w)| **w == way)
            .map(|(n, _)| format!("'{n}'"))
            .collect()
    };
    let mut parts = Vec::new();
    for (way, label) in [
        (shell::DIRECT, "exec'd directly"),
        (shell::SH_C, "through sh -c"),
    ] {
        let these = pick(way);
        if these.len() == names.len() {
            parts.push(label.to_string());
        } else if !these.is_empty() {
            parts.push(format!("{label}: {}", these.join(", ")));
        }
    }
    let why = match mode {
        ShellMode::Auto => "--shell auto: sh -c only for shell syntax; --shell sh to always wrap",
        ShellMode::Sh => "--shell sh",
        ShellMode::None => "-N",
    };
    format!("abperf: commands {} ({why})", parts.join("; "))
}

/// Check and prepare every command of every variant.
pub fn prepare(cfg: &RunConfig, variants: &[Variant]) -> anyhow::Result<ExecPlan> {
    let mut commands = Vec::new();
    let mut cleanup_texts = BTreeSet::new();
    let mut cleanups = Vec::new();
    let mut metrics_file = None;
    for v in variants {
        let p = &v.parameters;
        let text = v.command.as_deref().unwrap_or_default();
        let (main, workload) = if workload::is_workload(text) {
            let in_variant = || format!("variant '{}'", v.name);
            let cmd = WorkloadCommand::parse(text).with_context(in_variant)?;
            let main = cmd.exec(None).with_context(in_variant)?;
            let prepare = cmd.prepare().with_context(in_variant)?;
            metrics_file = Some(MetricsFile::get()?);
            (main, Some(Workload { cmd, prepare }))
        } else {
            // A resumed experiment starts each command the way it was started before.
            let mode = match cfg.exec.get(&v.name).map(String::as_str) {
                Some(shell::DIRECT) => ShellMode::None,
                Some(shell::SH_C) => ShellMode::Sh,
                _ => cfg.shell,
            };
            let main =
                Prepared::with_mode(text, mode).with_context(|| format!("variant '{}'", v.name))?;
            (main, None)
        };
        commands.push(VariantCommands {
            main,
            pre: prepare_opt(&cfg.pre, p, cfg.shell, "--pre")?,
            rewarm: cfg
                .rewarm
                .iter()
                .map(|t| prepare_opt(&Some(t.clone()), p, cfg.shell, "--rewarm"))
                .filter_map(Result::transpose)
                .collect::<anyhow::Result<_>>()?,
            post: prepare_opt(&cfg.post, p, cfg.shell, "--post")?,
            setup: prepare_opt(&cfg.setup, p, cfg.shell, "--setup")?,
            workload,
        });
        if let Some(c) = prepare_opt(&cfg.cleanup, p, cfg.shell, "--cleanup")?
            && cleanup_texts.insert(c.text.clone())
        {
            cleanups.push(c);
        }
    }
    let pin = cfg.pin.as_deref().map(CpuSet::parse).transpose()?;
    Ok(ExecPlan {
        commands,
        cleanups,
        pin,
        events: event_specs(&cfg.counted_events)?,
        metrics_file,
    })
}

/// Run an untimed helper command (pre/post/setup/cleanup); a failure is an error.
fn run_helper(what: &str, cmd: &Prepared, prep: &ExecPlan, quiet: bool) -> anyhow::Result<()> {
    let opts = SpawnOptions {
        pin: prep.pin.as_ref(),
        timeout: None,
        events: &[],
        quiet,
    };
    let out = spawn::run(cmd, &opts).with_context(|| what.to_string())?;
    let tail = stderr_note(out.stderr_tail.as_deref());
    match out.exit {
        Exit::Code(0) => Ok(()),
        Exit::Code(c) => anyhow::bail!("{what} '{}' exited with status {c}{tail}", cmd.text),
        Exit::Signal(s) => {
            anyhow::bail!(
                "{what} '{}' was killed by {}{tail}",
                cmd.text,
                signals::name(s)
            )
        }
        Exit::TimedOut => anyhow::bail!("{what} '{}' timed out{tail}", cmd.text),
    }
}

/// What a failed quiet command left on its stderr (the last lines), indented under the failure,
/// and how to see all of its output.
fn stderr_note(tail: Option<&str>) -> String {
    match tail {
        Some(t) => {
            let lines: Vec<String> = t.lines().map(|l| format!("    | {l}")).collect();
            format!(
                "\n  last lines of its stderr:\n{}\n  (all of its output, shown as it runs: --show-output)",
                lines.join("\n")
            )
        }
        None => "\n  (it wrote nothing to stderr; its stdout, if any: --show-output)".into(),
    }
}

/// The caller's view of the loop: a progress display (a bar with ETA on a terminal, nothing
/// otherwise) and an optional stopping rule.
pub trait Progress {
    fn start(&mut self, _total: u64) {}
    fn ran(&mut self, _variant: &str, _done_of_variant: u32, _of: u32, _wall_ns: u64) {}
    fn finish(&mut self) {}
    /// After each stored timed run, given the timed runs done per variant: `Some(why)` stops the
    /// experiment here (e.g. a sequential test reached its decision).
    fn decided(
        &mut self,
        _sink: &dyn RunSink,
        _done: &BTreeMap<usize, u32>,
    ) -> anyhow::Result<Option<String>> {
        Ok(None)
    }
    /// A line for the user (a boot of a kernel variant started, came up, ended).
    fn note(&mut self, msg: &str) {
        abperf_model::error::stderr_line(msg);
    }
}

/// A progress sink that shows nothing.
pub struct NoProgress;
impl Progress for NoProgress {}

/// Where finished runs go: the store on the host, or (in a kernel variant's guest) the results
/// channel to the host.
pub trait RunSink {
    /// Sequence numbers already done (they are skipped).
    fn done_seqs(&self) -> anyhow::Result<BTreeSet<u32>>;
    /// A finished run, kept the moment it ends.
    fn commit(&mut self, run: &Run) -> anyhow::Result<()>;
    /// What is stored so far, for a stopping rule (`None` where nothing is kept here).
    fn stored(&self) -> anyhow::Result<Option<abperf_model::Dataset>> {
        Ok(None)
    }
    /// A profiled run (`run --profile`), kept the moment it ends.
    fn save_profile(&mut self, _run: &ProfiledRun) -> anyhow::Result<()> {
        anyhow::bail!("profiled runs are not kept here")
    }
}

/// Runs of experiment `.1` committed to the store, each in its own transaction.
pub struct StoreSink<'a>(pub &'a mut Store, pub i64);

impl RunSink for StoreSink<'_> {
    fn done_seqs(&self) -> anyhow::Result<BTreeSet<u32>> {
        self.0.done_seqs(self.1)
    }
    fn commit(&mut self, run: &Run) -> anyhow::Result<()> {
        self.0.commit_run(self.1, run).map(|_| ())
    }
    fn stored(&self) -> anyhow::Result<Option<abperf_model::Dataset>> {
        self.0.load(self.1).map(Some)
    }
    fn save_profile(&mut self, run: &ProfiledRun) -> anyhow::Result<()> {
        self.0.save_profile(self.1, run)
    }
}

/// Execute the not-yet-done slots of `schedule` for experiment `exp_id`.
pub fn execute(
    store: &mut Store,
    exp_id: i64,
    cfg: &RunConfig,
    variants: &[Variant],
    schedule: &[Slot],
    knobs: &mut KnobGuard,
    progress: &mut dyn Progress,
) -> anyhow::Result<Ending> {
    execute_into(
        &mut StoreSink(store, exp_id),
        cfg,
        variants,
        schedule,
        knobs,
        progress,
    )
}

/// Execute the not-yet-done slots of `schedule`, each finished run going to `sink`.
pub fn execute_into(
    sink: &mut dyn RunSink,
    cfg: &RunConfig,
    variants: &[Variant],
    schedule: &[Slot],
    knobs: &mut KnobGuard,
    progress: &mut dyn Progress,
) -> anyhow::Result<Ending> {
    signals::install()?;
    // First, so that commands resolve in the --tmpfs-copy directory.
    let mut noise = Noise::start(&cfg.noise, cfg.seed)?;
    let prep = prepare(cfg, variants)?;
    // One spawn server starts every command of the experiment (stopped when this returns).
    let _spawner = super::spawn_server::Scope::enter();
    // Each tracepoint stays registered for the whole experiment (closed on every way out).
    let _holders = abperf_measure::counters::Holders::open(&prep.events);
    let done: BTreeSet<u32> = sink.done_seqs()?;
    let todo: Vec<&Slot> = schedule.iter().filter(|s| !done.contains(&s.seq)).collect();
    let mut timed_done: BTreeMap<usize, u32> = BTreeMap::new();
    for s in schedule
        .iter()
        .filter(|s| done.contains(&s.seq) && !s.warmup)
    {
        *timed_done.entry(s.variant).or_default() += 1;
    }
    let mut walk = Walk {
        cfg,
        variants,
        prep: &prep,
        knobs,
        noise: &mut noise,
        // A stored timeout beyond what a Duration holds (an old store) means none.
        timeout: cfg
            .timeout_s
            .and_then(|t| Duration::try_from_secs_f64(t).ok()),
        quiet: !cfg.show_output,
        timed_done,
        last_variant: None,
        tail_shown: BTreeSet::new(),
        knob_moved: None,
    };
    progress.start(todo.len() as u64);
    let (mut ending, mut error) = walk.slots(sink, progress, &todo);
    progress.finish();
    if !matches!(ending, Ending::Interrupted(_)) {
        walk.cleanup();
    }
    if let Some(f) = prep.metrics_file {
        f.finish();
    }
    // A signal at any point (during the workload, --pre, --post, --setup, --cleanup, a knob
    // write) interrupts the experiment: an error it caused (a helper "killed by SIGKILL" by the
    // watcher) is the interruption, not a failure.
    if let Some(sig) = signals::received() {
        ending = Ending::Interrupted(sig);
        error = None;
    }
    let mut restore_errors = noise.finish();
    restore_errors.extend(knobs.restore());
    for e in &restore_errors {
        abperf_model::error::stderr_line(&format!("abperf: error: {e}"));
    }
    if let Some(e) = error {
        return Err(e);
    }
    if !restore_errors.is_empty() {
        anyhow::bail!(
            "{} knob(s) or noise controls could not be restored (see above)",
            restore_errors.len()
        );
    }
    Ok(ending)
}

/// How the loop stops early: the experiment's ending and the error that stopped it, if any.
type Stop = (Ending, Option<anyhow::Error>);

/// A failed run in words, and what its workload left on stderr (or nothing).
type Failure = (String, String);

/// The experiment loop under way: what it runs with, and what it has done so far.
struct Walk<'a> {
    cfg: &'a RunConfig,
    variants: &'a [Variant],
    prep: &'a ExecPlan,
    knobs: &'a mut KnobGuard,
    noise: &'a mut Noise,
    timeout: Option<Duration>,
    quiet: bool,
    /// Timed runs done per variant (before this session and in it).
    timed_done: BTreeMap<usize, u32>,
    /// The variant whose knobs and setup are in place.
    last_variant: Option<usize>,
    /// Variants whose first failure showed the workload's stderr.
    tail_shown: BTreeSet<usize>,
    /// A knob another process changed during the last run, in words: the experiment stops.
    knob_moved: Option<String>,
}

impl Walk<'_> {
    /// Run the `todo` slots in order, each followed by --post; stop at a signal, a decision, a
    /// failure (unless ignored) or an error.
    fn slots(
        &mut self,
        sink: &mut dyn RunSink,
        progress: &mut dyn Progress,
        todo: &[&Slot],
    ) -> Stop {
        for slot in todo {
            if let Some(sig) = signals::received() {
                return (Ending::Interrupted(sig), None);
            }
            let step = self.run_slot(sink, progress, slot);
            if step.is_ok()
                && let Some(m) = self.knob_moved.take()
                && let Some(stop) = self.knob_moved_stop(progress, m)
            {
                return stop;
            }
            if let Some(stop) = self.after_run(sink, progress, slot, step) {
                return stop;
            }
            if let Err(e) = self.post(slot) {
                return (Ending::Complete, Some(e));
            }
            if let Err(e) = self.profiled_run(sink, progress, slot) {
                return (Ending::Complete, Some(e));
            }
        }
        (Ending::Complete, None)
    }

    /// --post after a slot's run (when there is one).
    fn post(&self, slot: &Slot) -> anyhow::Result<()> {
        match &self.prep.commands[slot.variant].post {
            Some(post) => run_helper("--post", post, self.prep, self.quiet),
            None => Ok(()),
        }
    }

    /// What follows a slot's run: the stopping rule after a good timed run, a warning after an
    /// ignored failure; `Some` stops the loop (after a decision, --post has run).
    fn after_run(
        &mut self,
        sink: &mut dyn RunSink,
        progress: &mut dyn Progress,
        slot: &Slot,
        step: anyhow::Result<Option<Failure>>,
    ) -> Option<Stop> {
        match step {
            Ok(None) if !slot.warmup => match progress.decided(&*sink, &self.timed_done) {
                Ok(Some(why)) => Some(match self.post(slot) {
                    Err(e) => (Ending::Complete, Some(e)),
                    Ok(()) => (Ending::Decided(why), None),
                }),
                Ok(None) => None,
                Err(e) => Some((Ending::Complete, Some(e))),
            },
            Ok(None) => None,
            Ok(Some((failure, note))) if self.cfg.ignore_failure => {
                progress.finish();
                abperf_model::error::stderr_line(&format!(
                    "abperf: warning: {failure}; recorded, going on (--ignore-failure){note}"
                ));
                None
            }
            Ok(Some((failure, note))) => Some((
                Ending::Failed(format!(
                    "{failure}; the experiment stops here (use -i/--ignore-failure to record failures and go on){note}"
                )),
                None,
            )),
            Err(e) => Some((Ending::Complete, Some(e))),
        }
    }

    /// One slot: the variant's knobs and setup when it changes, --pre, the workload's prepare
    /// step, the noise controls, --rewarm, then the timed run, committed the moment it ends. `Some` is a
    /// failed run in words; a run cut short by a signal is not stored.
    fn run_slot(
        &mut self,
        sink: &mut dyn RunSink,
        progress: &mut dyn Progress,
        slot: &Slot,
    ) -> anyhow::Result<Option<Failure>> {
        let (prep, quiet) = (self.prep, self.quiet);
        let v = &self.variants[slot.variant];
        let cmds = &prep.commands[slot.variant];
        self.before_run(slot)?;
        let per_run = main_command(cmds, self.cfg.seed, slot.seq)?;
        let main = per_run.as_ref().unwrap_or(&cmds.main);
        let metrics_file = match (&cmds.workload, prep.metrics_file) {
            (Some(_), Some(f)) => {
                f.fresh()?;
                Some(f)
            }
            _ => None,
        };
        let started_ns = now_ns();
        let opts = SpawnOptions {
            pin: prep.pin.as_ref(),
            timeout: self.timeout,
            events: &prep.events,
            quiet,
        };
        let mut out = spawn::run(main, &opts).with_context(|| format!("variant '{}'", v.name))?;
        let ended_ns = now_ns();
        if let Some(w) = &cmds.workload
            && out.exit != Exit::Code(0)
        {
            for note in w.cmd.clean_up() {
                progress.note(&note);
            }
        }
        if signals::received().is_some() {
            // The run was cut short by the signal: it is not a measurement.
            return Ok(None);
        }
        let counters = std::mem::take(&mut out.counters);
        let (metrics, unmeasured) = run_metrics(cmds, metrics_file, &out, counters);
        let (status, exit_code, signal) = run_status(out.exit, unmeasured.is_some());
        // Every knob read back: a run during which one moved is out of every verdict.
        let excluded = self.knobs_moved(slot, &v.name);
        sink.commit(&Run {
            variant: slot.variant,
            seq: slot.seq,
            warmup: slot.warmup,
            block: slot.block,
            status,
            exit_code,
            signal,
            started_ns,
            ended_ns,
            excluded,
            metrics,
            source: None,
            labels: Default::default(),
        })?;
        if !slot.warmup {
            *self.timed_done.entry(slot.variant).or_default() += 1;
        }
        progress.ran(
            &v.name,
            self.timed_done.get(&slot.variant).copied().unwrap_or(0),
            self.cfg.runs,
            out.wall_ns,
        );
        Ok(self.failure(slot, main, &out, unmeasured))
    }

    /// What comes before a run of `slot`'s variant (timed or profiled): its knobs and setup when
    /// the variant changes, --pre, the workload's prepare step, the noise controls, --rewarm.
    fn before_run(&mut self, slot: &Slot) -> anyhow::Result<()> {
        let (prep, quiet) = (self.prep, self.quiet);
        let cmds = &prep.commands[slot.variant];
        self.enter_variant(slot)?;
        if let Some(pre) = &cmds.pre {
            run_helper("--pre", pre, prep, quiet)?;
        }
        if let Some(p) = cmds.workload.as_ref().and_then(|w| w.prepare.as_ref()) {
            run_helper("the workload's prepare step", p, prep, quiet)?;
        }
        self.noise.before_run(slot.seq)?;
        for r in &cmds.rewarm {
            run_helper("--rewarm", r, prep, quiet)?;
        }
        Ok(())
    }

    /// `--profile`: after a timed run the plan picks (and its --post), a profiled run of the
    /// same variant, untimed, stored with the timed run's sequence number. A profiled run that
    /// fails is a warning (the timed runs are the experiment); a signal during it stops the loop
    /// at the next slot.
    fn profiled_run(
        &mut self,
        sink: &mut dyn RunSink,
        progress: &mut dyn Progress,
        slot: &Slot,
    ) -> anyhow::Result<()> {
        let Some(plan) = &self.cfg.profile else {
            return Ok(());
        };
        let k = self.timed_done.get(&slot.variant).copied().unwrap_or(0);
        if !plan.follows(slot, k, self.cfg.runs) {
            return Ok(());
        }
        if signals::received().is_some() {
            return Ok(());
        }
        self.before_run(slot)?;
        let cmds = &self.prep.commands[slot.variant];
        let per_run = main_command(cmds, self.cfg.seed, slot.seq)?;
        let main = per_run.as_ref().unwrap_or(&cmds.main);
        if let (Some(_), Some(f)) = (&cmds.workload, self.prep.metrics_file) {
            f.fresh()?;
        }
        let pin = self.prep.pin.as_ref().map(|p| *p.mask());
        let name = &self.variants[slot.variant].name;
        match super::profiled::record(plan, main, pin, slot.variant, slot.seq) {
            Ok(run) if signals::received().is_none() => sink.save_profile(&run)?,
            Ok(_) => return Ok(()),
            Err(e) if signals::received().is_none() => progress.note(&format!(
                "abperf: warning: the profiled run after run {} of variant '{name}' failed: {e:#}; \
                 going on without it",
                slot.seq
            )),
            Err(_) => return Ok(()),
        }
        self.post(slot)
    }

    /// After a run: read every held knob back; when one moved (another process wrote it), the
    /// reason the run is excluded, and the experiment's stop in words (`knob_moved`).
    fn knobs_moved(&mut self, slot: &Slot, variant: &str) -> Option<String> {
        let moved = self.knobs.moved();
        if moved.is_empty() {
            return None;
        }
        let what: Vec<String> = moved
            .iter()
            .map(|(path, set, seen)| {
                format!("knob {path} read '{seen}' after it, not the '{set}' abperf set")
            })
            .collect();
        let what = what.join("; ");
        self.knob_moved = Some(format!(
            "run {} of variant '{variant}': {what}: another process changed it during the run; \
             the run is stored excluded from every verdict",
            slot.seq
        ));
        Some(format!("knob moved during the run: {what}"))
    }

    /// After a run during which a knob moved (`what`, in words): stop the experiment, leaving
    /// the knob as the other process set it, or with `--wait-moved-knob` wait until the knob
    /// holds abperf's value again (`None`: go on).
    fn knob_moved_stop(&mut self, progress: &mut dyn Progress, what: String) -> Option<Stop> {
        if !self.cfg.wait_moved_knob {
            return Some((
                Ending::Failed(format!(
                    "{what}; the knob is left as that process set it, and the experiment stops \
                     here (resume it once the knob is yours again, or run with \
                     --wait-moved-knob to wait for it)"
                )),
                None,
            ));
        }
        progress.note(&format!(
            "abperf: {what}; waiting for the knob to hold abperf's value again (--wait-moved-knob)"
        ));
        loop {
            if let Some(sig) = signals::received() {
                return Some((Ending::Interrupted(sig), None));
            }
            if self.knobs.held_again() {
                progress.note("abperf: the knob holds abperf's value again; going on");
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// When the variant changes: write its knobs and run --setup.
    fn enter_variant(&mut self, slot: &Slot) -> anyhow::Result<()> {
        if self.last_variant == Some(slot.variant) {
            return Ok(());
        }
        for k in &self.variants[slot.variant].knobs {
            self.knobs.apply(&k.path, &k.value)?;
        }
        if let Some(setup) = &self.prep.commands[slot.variant].setup {
            run_helper("--setup", setup, self.prep, self.quiet)?;
        }
        self.last_variant = Some(slot.variant);
        Ok(())
    }

    /// A stored run that failed, in words (`None`: it did not), with the workload's stderr the
    /// first time a variant fails (quiet runs only).
    fn failure(
        &mut self,
        slot: &Slot,
        main: &Prepared,
        out: &spawn::Outcome,
        unmeasured: Option<anyhow::Error>,
    ) -> Option<Failure> {
        let cmds = &self.prep.commands[slot.variant];
        let what = match (out.exit, unmeasured) {
            (Exit::Code(0), Some(e)) => format!("exited normally, but {e:#}"),
            (exit, _) => match exit {
                Exit::Code(0) => return None,
                Exit::Code(127) if cmds.main.via_shell && cmds.workload.is_none() => {
                    "exited with status 127 (the shell's 'command not found')".to_string()
                }
                Exit::Code(c) => format!("exited with status {c}"),
                Exit::Signal(s) => format!("was killed by {}", signals::name(s)),
                Exit::TimedOut => format!(
                    "timed out after {} s and was killed",
                    self.cfg.timeout_s.unwrap_or(0.0)
                ),
            },
        };
        // The first failure of a variant shows what the workload said (quiet runs only).
        let note = if self.quiet && self.tail_shown.insert(slot.variant) {
            stderr_note(out.stderr_tail.as_deref())
        } else {
            String::new()
        };
        Some((
            format!(
                "run {} of variant '{}' ({}) {what}",
                slot.seq, self.variants[slot.variant].name, main.text
            ),
            note,
        ))
    }

    /// --cleanup, each command once, after the last slot (not after a signal).
    fn cleanup(&self) {
        for c in &self.prep.cleanups {
            if signals::received().is_some() {
                break;
            }
            if let Err(e) = run_helper("--cleanup", c, self.prep, self.quiet)
                && signals::received().is_none()
            {
                abperf_model::error::stderr_line(&format!("abperf: warning: {e:#}"));
            }
        }
    }
}

/// A run's metrics: wall time, rusage, its `counters` and a workload's own; the error when a workload
/// that exited normally left no metrics (the run failed).
fn run_metrics(
    cmds: &VariantCommands,
    metrics_file: Option<&MetricsFile>,
    out: &spawn::Outcome,
    counters: Vec<Metric>,
) -> (Vec<Metric>, Option<anyhow::Error>) {
    let mut metrics = vec![Metric::new("wall_ns", out.wall_ns as f64, "ns")];
    metrics.extend(rusage::metrics(&out.rusage));
    metrics.extend(counters);
    // A workload's own metrics; a run that exited normally without them failed.
    let mut unmeasured = None;
    if let (Some(w), Some(f), Exit::Code(0)) = (&cmds.workload, metrics_file, out.exit) {
        match w.cmd.collect(f.path(), &metrics) {
            Ok(ms) => metrics.extend(ms),
            Err(e) => unmeasured = Some(e),
        }
    }
    (metrics, unmeasured)
}

/// A run's stored status, exit code and signal.
fn run_status(exit: Exit, unmeasured: bool) -> (RunStatus, Option<i32>, Option<i32>) {
    match exit {
        Exit::Code(0) if unmeasured => (RunStatus::Failed, Some(0), None),
        Exit::Code(0) => (RunStatus::Ok, Some(0), None),
        Exit::Code(c) => (RunStatus::Failed, Some(c), None),
        Exit::Signal(s) => (RunStatus::Failed, None, Some(s)),
        Exit::TimedOut => (RunStatus::Timeout, None, Some(libc::SIGKILL)),
    }
}
