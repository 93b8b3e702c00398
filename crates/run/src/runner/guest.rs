//! The guest side of a kernel-variant experiment, and the line protocol both sides speak.
//!
//! The host boots a kernel with a [`Share`] (its share of the schedule: one variant's slots of
//! one boot) as an input file and runs `abperf run --guest-share FILE` there, the host's own
//! binary on the host's root filesystem (read-only, private overlay). The guest executes the
//! slots exactly as `abperf run` does on the host (the same [`super::execute_into`]: knobs
//! applied and restored inside the guest, pre/post/setup, counters, rusage) and sends one JSON
//! [`Line`] per finished run over the VM's results channel; the host commits each run the moment
//! its line arrives.
//!
//! Workloads in the guest start as on the host (`runner::spawn`, through the spawn helper: the
//! guest runs the host's abperf binary, whose `main` offers it, and `abperf-spawn` beside it is on
//! the same root), so a guest's max RSS is the workload's own too. Knob locks and claims are
//! taken inside the guest (its own /run or temp directory): its knobs are its kernel's.

use super::experiment::{NoProgress, RunConfig, RunSink, execute_into};
use super::knobs::KnobGuard;
use abperf_measure::counters;
use abperf_model::profile::ProfiledRun;
use abperf_model::{KnobSetting, Metric, Run, RunStatus, Slot, Variant};
use abperf_vm::guest::Results;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Sequence numbers from here up are warm-ups of a continued boot that the schedule does not
/// hold (a boot continued after a crash warms up again); they are reported, never stored.
pub const EXTRA_SEQ: u32 = 0x8000_0000;

/// File name of the share among the boot's input files.
pub const SHARE_FILE: &str = "share.json";

/// The variant a boot runs, as the guest needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShareVariant {
    pub name: String,
    pub command: Option<String>,
    pub parameters: BTreeMap<String, String>,
    pub knobs: Vec<KnobSetting>,
}

impl ShareVariant {
    pub fn of(v: &Variant) -> ShareVariant {
        ShareVariant {
            name: v.name.clone(),
            command: v.command.clone(),
            parameters: v.parameters.clone(),
            knobs: v.knobs.clone(),
        }
    }
}

/// One boot's share of the schedule.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Share {
    pub experiment: i64,
    /// The boot's number (the order boots happened in).
    pub boot: u32,
    pub variant: ShareVariant,
    pub cfg: RunConfig,
    /// `--strict`: an event the guest's kernel cannot count is an error.
    pub strict: bool,
    /// The slots to run in order (their `variant` is 0: the one variant above), extra warm-ups
    /// (seq >= [`EXTRA_SEQ`]) first.
    pub slots: Vec<Slot>,
}

/// A finished run as the guest reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireRun {
    pub seq: u32,
    pub warmup: bool,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// The guest's CLOCK_REALTIME.
    pub started_ns: i64,
    pub ended_ns: i64,
    pub metrics: Vec<Metric>,
}

impl WireRun {
    /// The run to store: this reported run in `slot` of the schedule, of variant `variant`.
    pub fn into_run(self, slot: &Slot, variant: usize) -> Run {
        Run {
            seq: self.seq,
            variant,
            warmup: slot.warmup,
            block: slot.block,
            status: self.status,
            exit_code: self.exit_code,
            signal: self.signal,
            started_ns: self.started_ns,
            ended_ns: self.ended_ns,
            excluded: None,
            metrics: self.metrics,
            source: None,
            labels: Default::default(),
        }
    }
}

/// A line from the guest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    /// First: the guest's abperf is running; its machine snapshot and the events it cannot
    /// count.
    Hello {
        abperf: String,
        environment: serde_json::Value,
        events_skipped: Vec<(String, String)>,
    },
    Run {
        run: WireRun,
    },
    /// A profiled run (`run --profile`) after the timed run `run.seq` reported before it:
    /// `perf script` read in the guest (its kernel's symbols, from its /proc/kallsyms) by the
    /// same parser as on the host, reduced to the stored shares; `run.variant` is 0 (the
    /// share's one variant). Untrusted on the host: checked by [`ProfiledRun::check`].
    Profile {
        run: ProfiledRun,
    },
    /// Last: complete | failed | interrupted | error, with the message of the last three.
    End {
        ending: String,
        message: Option<String>,
    },
}

impl Line {
    pub fn parse(text: &str) -> anyhow::Result<Line> {
        serde_json::from_str(text)
            .with_context(|| format!("not a line of abperf's guest protocol: {text:?}"))
    }
}

/// Where a share's lines go: to the host over the VM's results channel ([`Results`]), or, for a
/// boot of the loop on the machine itself (`crate::boot_loop`), straight into the store.
pub trait LineSink {
    fn send_line(&mut self, line: &Line) -> anyhow::Result<()>;
}

impl LineSink for Results {
    fn send_line(&mut self, line: &Line) -> anyhow::Result<()> {
        self.send_json(line)
    }
}

/// Sends every finished run on.
struct GuestSink<'a> {
    results: &'a mut dyn LineSink,
    /// Slots done before (a fleet host's lines file holds them): skipped.
    done: BTreeSet<u32>,
}

impl RunSink for GuestSink<'_> {
    fn done_seqs(&self) -> anyhow::Result<BTreeSet<u32>> {
        Ok(self.done.clone())
    }
    fn commit(&mut self, run: &Run) -> anyhow::Result<()> {
        let line = Line::Run {
            run: WireRun {
                seq: run.seq,
                warmup: run.warmup,
                status: run.status,
                exit_code: run.exit_code,
                signal: run.signal,
                started_ns: run.started_ns,
                ended_ns: run.ended_ns,
                metrics: run.metrics.clone(),
            },
        };
        self.results
            .send_line(&line)
            .context("cannot send a finished run on")
    }
    fn save_profile(&mut self, run: &ProfiledRun) -> anyhow::Result<()> {
        let line = Line::Profile { run: run.clone() };
        self.results
            .send_line(&line)
            .context("cannot send a profiled run on")
    }
}

/// `abperf run --guest-share FILE` (inside the VM): run the share, send every run, end with an
/// [`Line::End`]. Exit status: 0 complete, 1 failed, 128+N interrupted by signal N, 2 error.
pub fn run_share(path: &Path) -> anyhow::Result<i32> {
    if !abperf_vm::guest::in_guest() {
        return Err(abperf_model::error::usage(
            "--guest-share is abperf's own guest-side command (run inside a VM that `abperf run --kernel` booted)",
        ));
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the share {}", path.display()))?;
    let share: Share = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a share of this abperf", path.display()))?;
    let mut results = Results::open()?;
    let result = run_share_into(&share, &mut results);
    let (end, code) = end_line(&result);
    results.send_json(&end)?;
    Ok(code)
}

/// How a share's runs ended, as its last [`Line::End`], and the exit status that says so: 0
/// complete, 1 failed, 128+N interrupted by signal N, 2 error.
pub fn end_line(result: &anyhow::Result<super::experiment::Ending>) -> (Line, i32) {
    let (ending, message, code) = match result {
        Ok(super::experiment::Ending::Complete | super::experiment::Ending::Decided(_)) => {
            ("complete", None, 0)
        }
        Ok(super::experiment::Ending::Failed(m)) => ("failed", Some(m.clone()), 1),
        Ok(super::experiment::Ending::Interrupted(sig)) => {
            ("interrupted", Some(super::signals::name(*sig)), 128 + sig)
        }
        Err(e) => ("error", Some(format!("{e:#}")), 2),
    };
    let line = Line::End {
        ending: ending.into(),
        message,
    };
    (line, code)
}

/// Run a share's slots as `abperf run` runs its own (the same [`execute_into`]), sending a
/// [`Line::Hello`] first and a [`Line::Run`] per finished run to `results` (no [`Line::End`]:
/// the caller tells how it ended).
pub fn run_share_into(
    share: &Share,
    results: &mut dyn LineSink,
) -> anyhow::Result<super::experiment::Ending> {
    let slots = Slots {
        variants: std::slice::from_ref(&share.variant),
        cfg: &share.cfg,
        strict: share.strict,
        slots: &share.slots,
        done: BTreeSet::new(),
    };
    run_slots_into(&slots, results)
}

/// What a guest or a fleet host runs: variants (a slot's `variant` indexes them), the run
/// design, and the slots in order, those in `done` skipped.
pub struct Slots<'a> {
    pub variants: &'a [ShareVariant],
    pub cfg: &'a RunConfig,
    /// `--strict`: an event this machine's kernel cannot count is an error.
    pub strict: bool,
    pub slots: &'a [Slot],
    pub done: BTreeSet<u32>,
}

/// Run `s`'s slots that are not done as `abperf run` runs its own (the same [`execute_into`]),
/// sending a [`Line::Hello`] first and a [`Line::Run`] per finished run to `results`.
pub fn run_slots_into(
    s: &Slots,
    results: &mut dyn LineSink,
) -> anyhow::Result<super::experiment::Ending> {
    let mut cfg = s.cfg.clone();
    // This machine's kernel decides which events it can count, not the planner's.
    let specs = super::experiment::event_specs(&cfg.events)?;
    let (ok, bad) = counters::probe(&specs);
    if s.strict
        && let Some((name, why)) = bad.first()
    {
        anyhow::bail!("event {name}: {why} here (--strict)");
    }
    cfg.counted_events = ok.into_iter().map(|s| s.name).collect();
    let mut environment = abperf_measure::env::machine();
    // What the kernel made of this boot's command line (read from its log).
    environment["cmdline_unknown"] =
        serde_json::to_value(abperf_measure::kmsg::unknown_cmdline_params())?;
    results.send_line(&Line::Hello {
        abperf: env!("CARGO_PKG_VERSION").into(),
        environment,
        events_skipped: bad,
    })?;
    if let Some(plan) = &cfg.profile {
        // This machine's kernel must have perf events, and its perf sample the plan's event.
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        super::profiled::perf_events_in(Path::new("/proc"), release.trim())?;
        super::profiled::probe(plan)?;
    }
    let variants: Vec<Variant> = s
        .variants
        .iter()
        .map(|v| Variant {
            command: v.command.clone(),
            parameters: v.parameters.clone(),
            knobs: v.knobs.clone(),
            ..Variant::named(&v.name)
        })
        .collect();
    let mut paths: Vec<String> = Vec::new();
    for k in s.variants.iter().flat_map(|v| &v.knobs) {
        if !paths.contains(&k.path) {
            paths.push(k.path.clone());
        }
    }
    let mut guard = KnobGuard::prepare(&paths)?;
    let mut sink = GuestSink {
        results,
        done: s.done.clone(),
    };
    execute_into(
        &mut sink,
        &cfg,
        &variants,
        s.slots,
        &mut guard,
        &mut NoProgress,
    )
}
