//! Microbenchmarks of kernel and CPU primitives: timer, TLB flush and shootdown, TLB miss and
//! refill, page faults, syscalls, context switches, xstate save/restore and signals.
//!
//! Every benchmark produces [`Measurement`]s: one per configuration, each holding its samples in
//! cycles per operation (timer overhead already subtracted) and a [`Summary`]. Derived figures
//! (knee, implied ceiling, per-miss cost, price of a full flush) are [`Finding`]s. A benchmark or
//! configuration the machine cannot run becomes a [`Skip`] with the reason; the others go on.

pub mod caches;
pub mod compare;
pub mod cpu;
pub mod ctxsw;
pub mod fault;
pub mod harness;
pub mod interleave;
pub mod invocations;
pub mod knees;
pub mod mem;
pub mod record;
pub mod signal;
pub mod staircase;
pub mod syscall;
pub mod timer;
pub mod tlb;
pub mod tlbmiss;
pub mod xstate;

use abperf_model::micro::RoundProbe;
use harness::Summary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The benchmark families, in the order the suite runs them.
pub const BENCHES: &[&str] = &[
    "timer",
    "syscall",
    "xstate",
    "signal",
    "page-fault",
    "tlb-flush",
    "tlb-shootdown",
    "tlb-miss",
    "tlb-refill",
    "ctxsw",
];

/// What the user asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// Short runs (fewer samples, smaller sweeps) for tests and quick looks.
    pub quick: bool,
    /// Samples per configuration; `None` means the benchmark's own default for the mode.
    pub samples: Option<usize>,
    /// CPU the measuring thread is pinned to.
    pub cpu: usize,
    /// CPU for the other side (shootdown spinner, ping-pong partner); `None` if only one CPU.
    pub remote_cpu: Option<usize>,
    /// Numbers of remote CPUs `tlb-shootdown` sends shootdowns to (`--remote-cpus`); `None`:
    /// 1, 2, 4, ... and all the others.
    pub remote_counts: Option<Vec<usize>>,
    /// The CPUs this process may use, read before any thread is pinned (a pinned thread's own
    /// mask holds one CPU: `tlb-shootdown` found only one remote CPU that way).
    pub cpus: Vec<usize>,
    /// Run the measuring and helper threads under SCHED_FIFO when permitted.
    pub realtime: bool,
    /// Wall time over which the rounds of a spread benchmark (syscall, xstate, tlb-flush) are
    /// spread; `None` means the default for the mode ([`Options::DEFAULT_SPAN`]).
    pub span: Option<std::time::Duration>,
    /// This process measures one of `share` invocations (`abperf micro --invocations N`, each a
    /// process of its own): every configuration's samples, rounds and span are divided by it,
    /// so that the N invocations together take what one would. 1: the whole suite.
    pub share: usize,
}

impl Options {
    /// Samples for a configuration: the user's `--samples`, else `quick` or `full`; this
    /// invocation's share of them (at least 3, or all when there are fewer).
    pub fn samples(&self, quick: usize, full: usize) -> usize {
        let n = self
            .samples
            .unwrap_or(if self.quick { quick } else { full });
        n.div_ceil(self.share.max(1)).max(n.min(3))
    }

    /// Default span of a spread benchmark's rounds, seconds: quick, full.
    pub const DEFAULT_SPAN: (f64, f64) = (3.0, 10.0);

    /// Rounds for `samples` samples of a spread benchmark: 32 rounds (quick) or 64, their starts
    /// spread over the span.
    pub fn rounds(&self, samples: usize) -> harness::Rounds {
        let (quick, full) = Self::DEFAULT_SPAN;
        let span = self
            .span
            .unwrap_or(std::time::Duration::from_secs_f64(if self.quick {
                quick
            } else {
                full
            }));
        let share = self.share.max(1);
        let count: usize = if self.quick { 32 } else { 64 };
        harness::Rounds::new(samples, count.div_ceil(share), span / share as u32)
    }
}

/// One benchmark configuration and its samples.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measurement {
    /// Benchmark family (`tlb-flush`, `xstate`, ...).
    pub bench: String,
    /// Unique configuration name, e.g. `tlb-flush/madvise/touched/n=33`.
    pub name: String,
    /// Configuration parameters (op, pages, state, ...), also stored with the variant.
    pub params: BTreeMap<String, String>,
    /// What one sample value is the cost of (`call`, `access`, `fault`, `round trip`, ...).
    pub per: String,
    /// Pages (or other units) one operation covers, for per-page figures; 1 otherwise.
    pub pages: u64,
    /// Cycles per operation for each sample, timer overhead subtracted.
    #[serde(deserialize_with = "abperf_model::micro::nan::vec_f64")]
    pub samples: Vec<f64>,
    /// Summary of `samples` in cycles.
    pub cycles: Summary,
    /// Summary of `samples` in nanoseconds (TSC frequency).
    pub ns: Summary,
    /// Core clock (GHz) while the samples were taken: the median over the rounds of a benchmark
    /// measured in rounds, else measured right after the samples (dependent add chain).
    #[serde(deserialize_with = "abperf_model::micro::nan::f64")]
    pub core_ghz: f64,
    /// Summary of `samples` in core clock cycles (counter ticks over the ticks per core cycle of
    /// each sample's round): the unit that stays put when turbo moves the core clock against the
    /// fixed-rate TSC.
    pub core_cycles: Summary,
    /// The rounds `samples` were taken in, in order: how many samples each, and the probe of the
    /// core at its start. They add up to `samples`.
    pub rounds: Vec<(usize, RoundProbe)>,
    /// The invocation (process) each round was measured in, beside `rounds` (all 0 in one
    /// process; see [`invocations::merge`]).
    #[serde(default)]
    pub invocations: Vec<u32>,
}

impl Measurement {
    /// Counter ticks per core cycle when this configuration ran.
    pub fn ticks_per_core_cycle(&self, hz: f64) -> f64 {
        hz / 1e9 / self.core_ghz
    }

    /// Set the summaries (`cycles`, `ns`, `core_cycles`, `core_ghz`) from the samples and
    /// their rounds; `hz` is the counter's frequency.
    pub fn summarise(&mut self, hz: f64) {
        let samples = &self.samples;
        self.cycles = Summary::of(samples);
        self.ns = self.cycles.scaled(1e9 / hz);
        let mut core = Vec::with_capacity(samples.len());
        let mut i = 0;
        for (n, p) in &self.rounds {
            let end = (i + n).min(samples.len());
            core.extend(samples[i..end].iter().map(|c| c / p.ticks_per_core_cycle));
            i = end;
        }
        let ticks: Vec<f64> = self
            .rounds
            .iter()
            .map(|(_, p)| p.ticks_per_core_cycle)
            .collect();
        self.core_ghz = hz / harness::median(&ticks) / 1e9;
        self.core_cycles = Summary::of(&core);
    }
}

/// A derived figure (knee, per-miss cost, ...), with the configurations it was computed from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Finding {
    pub bench: String,
    pub key: String,
    /// The value; `None` when the data did not allow it (the text says why).
    pub value: Option<f64>,
    pub unit: String,
    pub text: String,
}

/// A benchmark or configuration that could not run here, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skip {
    pub bench: String,
    pub config: Option<String>,
    pub reason: String,
}

/// Everything one `abperf micro` invocation measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SuiteReport {
    pub arch: String,
    pub quick: bool,
    pub cpu: usize,
    pub remote_cpu: Option<usize>,
    pub timer: timer::TimerInfo,
    pub cpu_info: cpu::CpuInfo,
    pub benches: Vec<String>,
    pub measurements: Vec<Measurement>,
    pub findings: Vec<Finding>,
    pub skips: Vec<Skip>,
    /// Benchmarks or configurations that should have run here and failed (an error, not a
    /// property of the machine): `abperf micro` exits 1 when there is any.
    pub failures: Vec<Skip>,
    /// Facts about the environment that change the meaning of numbers (THP off, VM, ...).
    pub notes: Vec<String>,
    /// Independent adds per core cycle at the start of each round of the spread benchmarks
    /// ([`timer::CoreProbe`]): below the core's best, an SMT sibling (on the host, for a VM)
    /// was competing for the execution ports while those rounds ran.
    pub adds_per_cycle: Summary,
    pub elapsed_s: f64,
}

/// Collects measurements, findings and skips while a benchmark runs.
pub struct Sink<'a> {
    pub timer: &'a timer::TimerInfo,
    pub measurements: Vec<Measurement>,
    pub findings: Vec<Finding>,
    pub skips: Vec<Skip>,
    pub failures: Vec<Skip>,
    pub notes: Vec<String>,
    /// [`timer::probe_core`] at the start of each round of every benchmark.
    pub probes: Vec<RoundProbe>,
    /// With interleaved variants: the turns shared by the variants' threads, and this sink's
    /// variant ([`interleave::Baton`]).
    pub baton: Option<(&'a interleave::Baton<'a>, usize)>,
}

impl<'a> Sink<'a> {
    pub fn new(timer: &'a timer::TimerInfo) -> Self {
        Sink {
            timer,
            measurements: Vec::new(),
            findings: Vec::new(),
            skips: Vec::new(),
            failures: Vec::new(),
            notes: Vec::new(),
            probes: Vec::new(),
            baton: None,
        }
    }

    /// Begin round `r` of `rounds`: with interleaved variants, wait for this variant's turn
    /// (the other variants run their rounds meanwhile, and the turn puts this variant's knobs
    /// in place); wait until it is due, then probe the core (its clock, and the SMT sibling
    /// pressure); the samples of the round get that probe. An error (a knob refused, a signal)
    /// ends the benchmark.
    pub fn round(&mut self, rounds: &mut harness::Rounds, r: usize) -> anyhow::Result<()> {
        if let Some((baton, v)) = self.baton {
            baton.next(v)?;
        }
        rounds.wait(r);
        let p = probe_now();
        rounds.set_probe(r, self.probes.len());
        self.probes.push(p);
        Ok(())
    }

    /// Record a configuration. `params` are `(key, value)` pairs; `samples` were taken in
    /// `rounds` (`rounds.per(r)` samples in round `r`, each round begun with [`Sink::round`]).
    #[allow(clippy::too_many_arguments)] // the configuration's labels
    pub fn add(
        &mut self,
        bench: &str,
        name: String,
        params: &[(&str, String)],
        per: &str,
        pages: u64,
        samples: Vec<f64>,
        rounds: &harness::Rounds,
    ) -> &Measurement {
        let sizes: Vec<usize> = (0..rounds.count()).map(|r| rounds.per(r)).collect();
        let mut split: Vec<(usize, RoundProbe)> = if sizes.iter().sum::<usize>() == samples.len() {
            sizes
                .iter()
                .enumerate()
                .map(|(r, &n)| {
                    let p = rounds
                        .probe(r)
                        .and_then(|i| self.probes.get(i).copied())
                        .unwrap_or_else(probe_now);
                    (n, p)
                })
                .collect()
        } else {
            self.notes.push(format!(
                "{name}: {} samples do not fill its {} rounds ({} samples): stored as one round",
                samples.len(),
                sizes.len(),
                sizes.iter().sum::<usize>()
            ));
            vec![(samples.len(), probe_now())]
        };
        split.retain(|(n, _)| *n > 0);
        let mut m = Measurement {
            bench: bench.to_string(),
            name,
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            per: per.to_string(),
            pages: pages.max(1),
            samples,
            cycles: Summary::default(),
            ns: Summary::default(),
            core_ghz: 0.0,
            core_cycles: Summary::default(),
            invocations: vec![0; split.len()],
            rounds: split,
        };
        m.summarise(self.timer.hz);
        self.measurements.push(m);
        self.measurements.last().expect("just pushed")
    }

    pub fn finding(
        &mut self,
        bench: &str,
        key: &str,
        value: Option<f64>,
        unit: &str,
        text: String,
    ) {
        self.findings.push(Finding {
            bench: bench.to_string(),
            key: key.to_string(),
            value: value.filter(|v| v.is_finite()),
            unit: unit.to_string(),
            text,
        });
    }

    /// A benchmark or configuration failed (the machine has what it needs, and something went
    /// wrong): recorded, and the suite ends with an error.
    pub fn fail(&mut self, bench: &str, config: Option<String>, reason: impl Into<String>) {
        self.failures.push(Skip {
            bench: bench.to_string(),
            config,
            reason: reason.into(),
        });
    }

    /// A benchmark or configuration this machine cannot run (no such instruction, one CPU, THP
    /// off), with the reason: recorded, and the others go on.
    pub fn skip(&mut self, bench: &str, config: Option<String>, reason: impl Into<String>) {
        self.skips.push(Skip {
            bench: bench.to_string(),
            config,
            reason: reason.into(),
        });
    }

    /// Median cycles of a configuration recorded earlier in this run.
    pub fn median(&self, name: &str) -> Option<f64> {
        self.measurements
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.cycles.median)
    }
}

/// Check benchmark names given on the command line; empty means all.
pub fn select(names: &[String]) -> Result<Vec<&'static str>, String> {
    if names.is_empty() || names.iter().any(|n| n == "all") {
        return Ok(BENCHES.to_vec());
    }
    let mut out = Vec::new();
    for n in names {
        // `tlb` selects every TLB family.
        let matched: Vec<&'static str> = if n == "tlb" {
            BENCHES
                .iter()
                .copied()
                .filter(|b| b.starts_with("tlb-"))
                .collect()
        } else {
            BENCHES.iter().copied().filter(|b| *b == n).collect()
        };
        if matched.is_empty() {
            return Err(format!(
                "unknown benchmark '{n}': expected one of {}, tlb or all",
                BENCHES.join(", ")
            ));
        }
        for m in matched {
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    // Run in the canonical order.
    out.sort_by_key(|b| BENCHES.iter().position(|x| x == b));
    Ok(out)
}

/// Run the selected benchmarks. `progress` is called with each benchmark name before it runs.
pub fn run_suite(
    benches: &[&str],
    opts: &Options,
    mut progress: impl FnMut(&str),
) -> anyhow::Result<SuiteReport> {
    let started = std::time::Instant::now();
    let setup = Setup::enter(opts)?;
    let timer = timer::TimerInfo::measure(opts.quick);
    let mut sink = Sink::new(&timer);
    sink.notes.extend(setup.notes());
    for b in benches {
        progress(b);
        if let Err(e) = dispatch(&mut sink, b, opts, &setup.cpu_info) {
            sink.fail(b, None, format!("{e:#}"));
        }
    }
    let parts = Parts::from(sink);
    Ok(parts.finish(benches, opts, &timer, setup.cpu_info.clone(), started))
}

/// Pinning and scheduling of the measuring thread for a suite, restored when dropped.
pub(crate) struct Setup {
    pub cpu_info: cpu::CpuInfo,
    _pin: harness::Pin,
    rt: Option<harness::Realtime>,
    sched_note: Option<String>,
}

impl Setup {
    pub(crate) fn enter(opts: &Options) -> anyhow::Result<Setup> {
        let cpu_info = cpu::CpuInfo::detect();
        let pin = harness::Pin::to(opts.cpu)
            .map_err(|e| anyhow::anyhow!("cannot pin to CPU {} (--cpu): {e}", opts.cpu))?;
        let mut sched_note = None;
        let rt = if opts.realtime {
            match harness::Realtime::enter() {
                Ok(g) => Some(g),
                Err(e) => {
                    sched_note = Some(format!(
                        "SCHED_FIFO refused ({e}): measured under the normal scheduler, \
                                              other load can preempt samples"
                    ));
                    None
                }
            }
        } else {
            None
        };
        Ok(Setup {
            cpu_info,
            _pin: pin,
            rt,
            sched_note,
        })
    }

    /// Whether the measuring thread runs under SCHED_FIFO.
    pub(crate) fn realtime(&self) -> bool {
        self.rt.is_some()
    }

    /// The notes on scheduling and the hypervisor every suite report starts with.
    pub(crate) fn notes(&self) -> Vec<String> {
        let mut notes = vec![match (&self.rt, &self.sched_note) {
            (Some(_), _) => {
                "measuring and helper threads ran under SCHED_FIFO priority 1".to_string()
            }
            (None, Some(n)) => n.clone(),
            (None, None) => {
                "normal scheduler (--no-rt): other load can preempt samples".to_string()
            }
        }];
        if self.cpu_info.hypervisor {
            notes.push(
                "running under a hypervisor: IPIs, faults and context switches include exits to the host"
                    .to_string(),
            );
        }
        notes
    }
}

/// Run benchmark `b` into `sink`.
pub(crate) fn dispatch(
    sink: &mut Sink,
    b: &str,
    opts: &Options,
    cpu_info: &cpu::CpuInfo,
) -> anyhow::Result<()> {
    match b {
        "timer" => timer::bench(sink, opts),
        "syscall" => syscall::bench(sink, opts),
        "xstate" => xstate::bench(sink, opts, cpu_info),
        "signal" => signal::bench(sink, opts, cpu_info),
        "page-fault" => fault::bench(sink, opts),
        "tlb-flush" => tlb::bench_flush(sink, opts),
        "tlb-shootdown" => tlb::bench_shootdown(sink, opts),
        "tlb-miss" => tlb::bench_miss(sink, opts),
        "tlb-refill" => tlb::bench_refill(sink, opts),
        "ctxsw" => ctxsw::bench(sink, opts, cpu_info),
        other => Err(anyhow::anyhow!("unknown benchmark {other}")),
    }
}

/// What a [`Sink`] collected, without its borrow of the timer (merged over benchmarks).
#[derive(Debug, Default)]
pub(crate) struct Parts {
    pub measurements: Vec<Measurement>,
    pub findings: Vec<Finding>,
    pub skips: Vec<Skip>,
    pub failures: Vec<Skip>,
    pub notes: Vec<String>,
    pub probes: Vec<RoundProbe>,
}

impl From<Sink<'_>> for Parts {
    fn from(s: Sink<'_>) -> Parts {
        Parts {
            measurements: s.measurements,
            findings: s.findings,
            skips: s.skips,
            failures: s.failures,
            notes: s.notes,
            probes: s.probes,
        }
    }
}

impl Parts {
    pub(crate) fn extend(&mut self, o: Parts) {
        self.measurements.extend(o.measurements);
        self.findings.extend(o.findings);
        self.skips.extend(o.skips);
        self.failures.extend(o.failures);
        for n in o.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
        self.probes.extend(o.probes);
    }

    /// The suite report: the closing notes (clock drift, SMT pressure) added.
    pub(crate) fn finish(
        mut self,
        benches: &[&str],
        opts: &Options,
        timer: &timer::TimerInfo,
        cpu_info: cpu::CpuInfo,
        started: std::time::Instant,
    ) -> SuiteReport {
        let end_ghz = timer.hz / timer::ticks_per_core_cycle() / 1e9;
        if (end_ghz / timer.core_ghz - 1.0).abs() > 0.03 {
            self.notes.push(format!(
                "core clock moved from {:.2} GHz at the start to {:.2} GHz at the end: cycle figures of \
                 different benchmarks are not at the same clock",
                timer.core_ghz, end_ghz
            ));
        }
        let apc: Vec<f64> = self.probes.iter().map(|p| p.adds_per_cycle).collect();
        let adds_per_cycle = Summary::of(&apc);
        if let Some(n) = smt_note(&apc, cpu_info.hypervisor) {
            self.notes.push(n);
        }
        SuiteReport {
            arch: std::env::consts::ARCH.to_string(),
            quick: opts.quick,
            cpu: opts.cpu,
            remote_cpu: opts.remote_cpu,
            cpu_info,
            benches: benches.iter().map(|s| s.to_string()).collect(),
            measurements: self.measurements,
            findings: self.findings,
            skips: self.skips,
            failures: self.failures,
            notes: self.notes,
            adds_per_cycle,
            elapsed_s: started.elapsed().as_secs_f64(),
            timer: timer.clone(),
        }
    }
}

/// Probe the core now (see [`timer::probe_core`]), with the time.
pub fn probe_now() -> RoundProbe {
    let p = timer::probe_core();
    RoundProbe {
        started_ns: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0),
        ticks_per_core_cycle: p.ticks_per_core_cycle,
        adds_per_cycle: p.adds_per_cycle,
    }
}

/// Two micro experiments' designs: a difference row when the SMT sibling pressure (median
/// independent adds per cycle over the rounds) differs by more than 5% between them, since
/// port-bound costs move with it on a shared host. `None` when it does not, or when either
/// experiment did not record it.
pub fn pressure_difference(
    a: &serde_json::Value,
    b: &serde_json::Value,
) -> Option<(String, String, String)> {
    let get = |d: &serde_json::Value| {
        d.pointer("/adds_per_cycle/median")
            .and_then(|v| v.as_f64())
            .filter(|&x| x > 0.0)
    };
    let (x, y) = (get(a)?, get(b)?);
    ((y / x - 1.0).abs() > 0.05).then(|| {
        (
            "micro: independent adds per cycle, median over rounds (SMT sibling pressure)".into(),
            format!("{x:.2}"),
            format!("{y:.2}"),
        )
    })
}

/// What the per-round SMT probe says, if anything: how often the core retired clearly fewer
/// independent adds per cycle than its best in this run.
fn smt_note(adds_per_cycle: &[f64], hypervisor: bool) -> Option<String> {
    let best = adds_per_cycle.iter().copied().fold(0.0, f64::max);
    if adds_per_cycle.is_empty() || best <= 0.0 {
        return None;
    }
    let slow = adds_per_cycle.iter().filter(|&&x| x < 0.9 * best).count();
    let s = Summary::of(adds_per_cycle);
    Some(format!(
        "SMT sibling pressure: the core retired {:.1}-{:.1} independent adds per cycle at the \
         start of {} rounds (median {:.1}); {slow} rounds ({:.0}%) ran below 90% of the best, \
         with the ports shared by a busy sibling{}: kernel paths run slower in such rounds, and \
         the medians here are of that mixture",
        s.min,
        s.max,
        s.n,
        s.median,
        100.0 * slow as f64 / s.n as f64,
        if hypervisor { " (on the host)" } else { "" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pressure_difference_beyond_five_percent() {
        let d = |m: f64| serde_json::json!({"adds_per_cycle": {"median": m}});
        assert_eq!(pressure_difference(&d(2.85), &d(2.80)), None);
        let r = pressure_difference(&d(2.85), &d(2.41)).unwrap();
        assert_eq!((r.1.as_str(), r.2.as_str()), ("2.85", "2.41"));
        assert_eq!(pressure_difference(&d(2.85), &serde_json::json!({})), None);
    }

    #[test]
    fn smt_note_counts_slow_rounds() {
        assert_eq!(smt_note(&[], true), None);
        let n = smt_note(&[3.7, 3.6, 2.5, 3.0], false).unwrap();
        assert!(n.contains("2.5-3.7"), "{n}");
        assert!(n.contains("2 rounds (50%)"), "{n}");
    }

    #[test]
    fn select_all_and_groups() {
        assert_eq!(select(&[]).unwrap().len(), BENCHES.len());
        let t = select(&["tlb".into(), "syscall".into()]).unwrap();
        assert_eq!(
            t,
            vec![
                "syscall",
                "tlb-flush",
                "tlb-shootdown",
                "tlb-miss",
                "tlb-refill"
            ]
        );
        let e = select(&["tlbflush".into()]).unwrap_err();
        assert!(e.contains("unknown benchmark 'tlbflush'"), "{e}");
    }
}
