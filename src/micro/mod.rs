//! Microbenchmarks of kernel and CPU primitives: timer, TLB flush and shootdown, TLB miss and
//! refill, page faults, syscalls, context switches, xstate save/restore and signals.
//!
//! Every benchmark produces [`Measurement`]s: one per configuration, each holding its samples in
//! cycles per operation (timer overhead already subtracted) and a [`Summary`]. Derived figures
//! (knee, implied ceiling, per-miss cost, price of a full flush) are [`Finding`]s. A benchmark or
//! configuration the machine cannot run becomes a [`Skip`] with the reason; the others go on.

pub mod cpu;
pub mod ctxsw;
pub mod fault;
pub mod harness;
pub mod mem;
pub mod record;
pub mod render;
pub mod signal;
pub mod syscall;
pub mod timer;
pub mod tlb;
pub mod xstate;

use harness::Summary;
use serde::Serialize;
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
    /// Run the measuring and helper threads under SCHED_FIFO when permitted.
    pub realtime: bool,
}

impl Options {
    /// Samples for a configuration: the user's `--samples`, else `quick` or `full`.
    pub fn samples(&self, quick: usize, full: usize) -> usize {
        self.samples
            .unwrap_or(if self.quick { quick } else { full })
    }
}

/// One benchmark configuration and its samples.
#[derive(Debug, Clone, Serialize)]
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
    pub samples: Vec<f64>,
    /// Summary of `samples` in cycles.
    pub cycles: Summary,
    /// Summary of `samples` in nanoseconds (TSC frequency).
    pub ns: Summary,
    /// Core clock (GHz) measured right after the samples (dependent add chain).
    pub core_ghz: f64,
    /// Summary of `samples` in core clock cycles (counter ticks / ticks per core cycle): the unit
    /// that stays put when turbo moves the core clock against the fixed-rate TSC.
    pub core_cycles: Summary,
}

impl Measurement {
    /// Counter ticks per core cycle when this configuration ran.
    pub fn ticks_per_core_cycle(&self, hz: f64) -> f64 {
        hz / 1e9 / self.core_ghz
    }
}

/// A derived figure (knee, per-miss cost, ...), with the configurations it was computed from.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub bench: String,
    pub key: String,
    /// The value; `None` when the data did not allow it (the text says why).
    pub value: Option<f64>,
    pub unit: String,
    pub text: String,
}

/// A benchmark or configuration that could not run here, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skip {
    pub bench: String,
    pub config: Option<String>,
    pub reason: String,
}

/// Everything one `abperf micro` invocation measured.
#[derive(Debug, Clone, Serialize)]
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
    /// Facts about the environment that change the meaning of numbers (THP off, VM, ...).
    pub notes: Vec<String>,
    pub elapsed_s: f64,
}

/// Collects measurements, findings and skips while a benchmark runs.
pub struct Sink<'a> {
    pub timer: &'a timer::TimerInfo,
    pub measurements: Vec<Measurement>,
    pub findings: Vec<Finding>,
    pub skips: Vec<Skip>,
    pub notes: Vec<String>,
}

impl<'a> Sink<'a> {
    pub fn new(timer: &'a timer::TimerInfo) -> Self {
        Sink {
            timer,
            measurements: Vec::new(),
            findings: Vec::new(),
            skips: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Record a configuration. `params` are `(key, value)` pairs.
    pub fn add(
        &mut self,
        bench: &str,
        name: String,
        params: &[(&str, String)],
        per: &str,
        pages: u64,
        samples: Vec<f64>,
    ) -> &Measurement {
        let cycles = Summary::of(&samples);
        let ns = cycles.scaled(1e9 / self.timer.hz);
        let ticks = timer::ticks_per_core_cycle();
        let core_ghz = self.timer.hz / ticks / 1e9;
        let core_cycles = cycles.scaled(1.0 / ticks);
        self.measurements.push(Measurement {
            bench: bench.to_string(),
            name,
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            per: per.to_string(),
            pages: pages.max(1),
            samples,
            cycles,
            ns,
            core_ghz,
            core_cycles,
        });
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
    let cpu_info = cpu::CpuInfo::detect();
    let _pin = harness::Pin::to(opts.cpu)
        .map_err(|e| anyhow::anyhow!("cannot pin to CPU {} (--cpu): {e}", opts.cpu))?;
    let mut sched_note = None;
    let _rt = if opts.realtime {
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
    let timer = timer::TimerInfo::measure(opts.quick);
    let mut sink = Sink::new(&timer);
    sink.notes.push(match (&_rt, sched_note) {
        (Some(_), _) => "measuring and helper threads ran under SCHED_FIFO priority 1".to_string(),
        (None, Some(n)) => n,
        (None, None) => "normal scheduler (--no-rt): other load can preempt samples".to_string(),
    });
    if cpu_info.hypervisor {
        sink.notes.push(
            "running under a hypervisor: IPIs, faults and context switches include exits to the host"
                .to_string(),
        );
    }
    for b in benches {
        progress(b);
        let r = match *b {
            "timer" => timer::bench(&mut sink, opts),
            "syscall" => syscall::bench(&mut sink, opts),
            "xstate" => xstate::bench(&mut sink, opts, &cpu_info),
            "signal" => signal::bench(&mut sink, opts, &cpu_info),
            "page-fault" => fault::bench(&mut sink, opts),
            "tlb-flush" => tlb::bench_flush(&mut sink, opts),
            "tlb-shootdown" => tlb::bench_shootdown(&mut sink, opts),
            "tlb-miss" => tlb::bench_miss(&mut sink, opts),
            "tlb-refill" => tlb::bench_refill(&mut sink, opts),
            "ctxsw" => ctxsw::bench(&mut sink, opts, &cpu_info),
            other => Err(anyhow::anyhow!("unknown benchmark {other}")),
        };
        if let Err(e) = r {
            sink.skip(b, None, format!("failed: {e:#}"));
        }
    }
    let end_ghz = timer.hz / timer::ticks_per_core_cycle() / 1e9;
    if (end_ghz / timer.core_ghz - 1.0).abs() > 0.03 {
        sink.notes.push(format!(
            "core clock moved from {:.2} GHz at the start to {:.2} GHz at the end: cycle figures of \
             different benchmarks are not at the same clock",
            timer.core_ghz, end_ghz
        ));
    }
    let Sink {
        measurements,
        findings,
        skips,
        notes,
        ..
    } = sink;
    Ok(SuiteReport {
        arch: std::env::consts::ARCH.to_string(),
        quick: opts.quick,
        cpu: opts.cpu,
        remote_cpu: opts.remote_cpu,
        cpu_info,
        benches: benches.iter().map(|s| s.to_string()).collect(),
        measurements,
        findings,
        skips,
        notes,
        elapsed_s: started.elapsed().as_secs_f64(),
        timer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
