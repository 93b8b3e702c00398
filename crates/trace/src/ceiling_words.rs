//! The ceiling advisor's terms with their sources, and what it says in words: the model, its
//! assumptions, what was validated, warnings, and for a cost the data cannot tell from 0 which
//! measurement would and how long it would take.

use super::ceiling_boot::{Replicates, estimate};
use super::ceiling_inputs::{KNOB, Micro, Options, Params, Samples, median_of};
use abperf_model::ceiling::{Check, Estimate, FlushCosts, Term};
use abperf_model::trace::{CaptureInfo, Tables};

pub(crate) use abperf_model::number_text::thousands as n0;

/// How long the micro experiment spent on the configurations whose names start with `prefix`,
/// seconds: their samples' time scaled by the suite's elapsed time over all samples' time.
fn bench_seconds(micro: &Micro, prefix: &str) -> Option<f64> {
    let elapsed = micro.data.experiments.first()?.design["elapsed_s"].as_f64()?;
    let (mut all, mut bench) = (0.0, 0.0);
    for (pos, v) in micro.data.variants.iter().enumerate() {
        let ns: f64 = micro.data.values(pos, "ns").iter().sum();
        all += ns;
        if v.name.starts_with(prefix) {
            bench += ns;
        }
    }
    (all > 0.0 && bench > 0.0).then(|| elapsed * bench / all)
}

fn duration(s: f64) -> String {
    if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// A factor of samples: one decimal below 10 (1.4 times, not 1).
fn times(f: f64) -> String {
    if f < 10.0 { format!("{f:.1}") } else { n0(f) }
}

/// For a cost whose unconstrained band holds 0: which measurement would tell it from 0 (its
/// half-width below its size), assuming the band narrows as 1/sqrt(samples), and how long
/// that would take at this suite's pace. `bench` is the micro benchmark, `samples` its
/// samples per configuration now.
fn to_resolve(u: &Estimate, unit: &str, micro: &Micro, bench: &str, samples: usize) -> String {
    let h = (u.high - u.low) / 2.0;
    let target = u.value.abs().max(h / 10.0);
    let factor = (h / target).powi(2).max(1.0);
    let more = (samples as f64 * factor).ceil() as u64;
    let time = bench_seconds(micro, &format!("{bench}/"))
        .map(|s| {
            format!(
                ", about {} of measuring at this suite's pace",
                duration(s * factor)
            )
        })
        .unwrap_or_default();
    let cmd = format!("abperf micro {bench} --samples {more}");
    if target > u.value.abs() {
        format!(
            "{} times the samples (`{cmd}`{time}) would narrow its band to about +-{} {unit}, still not enough to tell a cost of {} {unit} from 0; the advice holds for any value in 0 .. {}",
            times(factor),
            n0(target),
            n0(u.value.abs()),
            n0(u.high.max(0.0))
        )
    } else {
        format!(
            "to tell it from 0 its 95% half-width must shrink from {} to {} {unit}: about {} times the samples (`{cmd}`{time})",
            n0(h),
            n0(target),
            times(factor)
        )
    }
}

/// One term from its constrained and unconstrained replicates.
#[allow(clippy::too_many_arguments)]
fn term(
    (symbol, name, unit): (&str, String, &str),
    (value, reps): (f64, &mut [f64]),
    (raw, raw_reps): (f64, &mut [f64]),
    by_ceiling: bool,
    source: String,
    resolve: Option<(&Micro, &str, usize)>,
) -> Term {
    let unconstrained = estimate(raw, raw_reps);
    let mut e = estimate(value, reps);
    e.low = e.low.max(0.0);
    // a cost is resolved when its band lies above 0; below 0 it is impossible, not resolved
    let resolved = unconstrained.low > 0.0;
    let to_resolve = match resolve {
        Some((m, bench, n)) if !resolved && unconstrained.high >= 0.0 && by_ceiling => {
            Some(to_resolve(&unconstrained, unit, m, bench, n))
        }
        _ => None,
    };
    Term {
        symbol: symbol.into(),
        name,
        unit: unit.into(),
        estimate: e,
        unconstrained,
        resolved,
        by_ceiling,
        source,
        to_resolve,
    }
}

/// What the terms are computed from.
pub(crate) struct TermInputs<'a> {
    pub micro: &'a Micro<'a>,
    pub s: &'a Samples,
    pub p: &'a Params,
    pub raw: &'a Params,
    pub ws: u64,
    pub c0: u64,
    pub c0_source: &'a str,
    pub refill_source: &'a str,
}

/// Every term of the model with its source, its estimate under the constraint that a cost is
/// not negative, the unconstrained one, and what would resolve it.
pub(crate) fn terms(
    x: &TermInputs,
    reps: &mut Replicates,
    info: &CaptureInfo,
    t: &Tables,
) -> Vec<Term> {
    let (m, s, p, raw) = (x.micro, x.s, x.p, x.raw);
    let curve = format!(
        "micro {} tlb-flush: the madvise curve (touched minus empty pages) fitted as two lines split at {} ({})",
        m.id, x.c0, x.c0_source
    );
    let nf = s.flush.first().map(|f| f.1.len()).unwrap_or(0);
    let nr = s
        .refill
        .first()
        .map(|f| f.1.len())
        .or_else(|| s.miss.as_ref().map(|v| v.1.len()))
        .unwrap_or(0);
    let refill_bench = if s.refill.is_empty() {
        "tlb-miss"
    } else {
        "tlb-refill"
    };
    let (c, u) = (&mut reps.constrained, &mut reps.unconstrained);
    let mut v = vec![
        term(
            ("p", "per-page flush (INVLPG)".into(), "cycles/page"),
            (p.t.p, &mut c.per_page),
            (raw.t.p, &mut u.per_page),
            true,
            format!("{curve}: slope below minus slope above"),
            Some((m, "tlb-flush", nf)),
        ),
        term(
            ("F", "full flush beyond a partial one".into(), "cycles"),
            (p.t.f, &mut c.full_extra),
            (raw.t.f, &mut u.full_extra),
            true,
            format!("{curve}: intercept above minus intercept below"),
            Some((m, "tlb-flush", nf)),
        ),
        term(
            (
                "R",
                format!("refill after a full flush, working set {} pages", x.ws),
                "cycles",
            ),
            (p.refill, &mut c.refill),
            (raw.refill, &mut u.refill),
            true,
            x.refill_source.to_string(),
            Some((m, refill_bench, nr)),
        ),
        term(
            (
                "z",
                "zap per page (in both lines: cancels)".into(),
                "cycles/page",
            ),
            (p.t.z, &mut c.zap),
            (raw.t.z, &mut u.zap),
            false,
            format!("{curve}: slope above"),
            None,
        ),
        term(
            (
                "a",
                "fixed cost of a flushing call (cancels)".into(),
                "cycles",
            ),
            (p.t.a, &mut c.fixed),
            (raw.t.a, &mut u.fixed),
            false,
            format!("{curve}: intercept below"),
            None,
        ),
    ];
    for (i, (cpus, _, _)) in s.shootdown.iter().enumerate() {
        let d = super::ceiling_inputs::net_medians(&s.shootdown[i..=i])[0].1;
        let mut cr: Vec<f64> = reps.shootdown[i].iter().map(|x| x.max(0.0)).collect();
        v.push(term(
            (
                &format!("I{cpus}"),
                format!("sender's IPIs and wait for {cpus} remote CPU(s), 1-page flush"),
                "cycles",
            ),
            (d.max(0.0), &mut cr),
            (d, &mut reps.shootdown[i]),
            false,
            format!(
                "micro {} tlb-shootdown: 1-page madvise with {cpus} thread(s) spinning in the mm on other CPUs minus alone",
                m.id
            ),
            None,
        ));
    }
    if let Some(h) = receiver_handler(info, t) {
        v.push(h);
    }
    v
}

/// The receiver's IPI handler per receipt, from the capture: the median of the traced
/// call_function entry..exit around a remote shootdown, with the distribution-free 95%
/// interval of a median (ranks n/2 -+ 1.96 sqrt(n)/2).
fn receiver_handler(info: &CaptureInfo, t: &Tables) -> Option<Term> {
    let pair = t.pairs.iter().find(|p| p.name == "remote shootdown")?;
    let mut bin = abperf_model::trace::Bin::default();
    for r in &pair.rows {
        bin.merge(&r.bin);
    }
    let n = bin.dist.len() as f64;
    if n < 5.0 {
        return None;
    }
    let u = info.units();
    let q = |q: f64| bin.quantile(q).and_then(|v| u.cycles(v));
    let w = 1.96 * 0.5 / n.sqrt();
    let e = Estimate {
        value: q(0.5)?,
        low: q(0.5 - w)?,
        high: q(0.5 + w)?,
    };
    Some(Term {
        symbol: "H".into(),
        name: "receiver's IPI handler per receipt (flush work included)".into(),
        unit: "cycles".into(),
        estimate: e,
        unconstrained: e,
        resolved: e.low > 0.0,
        by_ceiling: false,
        source: format!(
            "capture {}: median of {} traced call_function entry..exit around a remote shootdown",
            info.id.unwrap_or(0),
            n as u64
        ),
        to_resolve: None,
    })
}

/// Warnings about cost inputs the model cannot use as they are.
pub(crate) fn cost_warnings(costs: &FlushCosts) -> Vec<String> {
    let mut warnings = Vec::new();
    for t in costs.terms.iter().filter(|t| t.by_ceiling && !t.resolved) {
        let u = &t.unconstrained;
        if u.high < 0.0 {
            warnings.push(format!(
                "{} ({}) fits below 0 ({} {}, 95% {} .. {}), which a cost cannot be: the micro curve does not have the model's shape here; the model takes it as {} (95% {} .. {}) under the constraint that a cost is not negative",
                t.name,
                t.symbol,
                n0(u.value),
                t.unit,
                n0(u.low),
                n0(u.high),
                n0(t.estimate.value),
                n0(t.estimate.low),
                n0(t.estimate.high),
            ));
            continue;
        }
        warnings.push(format!(
            "{} ({}) is not resolvable here: |{}| {} is within its 95% band {} .. {}; the model takes it as {} (95% {} .. {}) under the constraint that a cost is not negative{}",
            t.name,
            t.symbol,
            n0(t.unconstrained.value),
            t.unit,
            n0(t.unconstrained.low),
            n0(t.unconstrained.high),
            n0(t.estimate.value),
            n0(t.estimate.low),
            n0(t.estimate.high),
            t.to_resolve
                .as_ref()
                .map(|r| format!("; {r}"))
                .unwrap_or_default()
        ));
    }
    warnings
}

/// The capture's own calls against the micro's, at the recording's ceiling: the traced median
/// of madvise calls of every size the micro measured (5 calls or more) beside the micro's.
pub(crate) fn checks(info: &CaptureInfo, t: &Tables, micro: &Micro) -> Vec<Check> {
    let mut checks = Vec::new();
    let u = info.units();
    if let Some(md) = t.pairs.iter().find(|p| p.name == "madvise") {
        for r in &md.rows {
            if r.key <= 0 || r.bin.timed < 5 {
                continue;
            }
            let Some(med) = r.bin.median().and_then(|m| u.cycles(m)) else {
                continue;
            };
            let name = format!("tlb-flush/madvise/touched/n={}", r.key);
            let Some(pos) = micro.data.position(&name) else {
                continue;
            };
            let mut v = micro.data.values(pos, "cycles");
            if v.is_empty() {
                continue;
            }
            checks.push(Check {
                pages: r.key as u64,
                calls: r.bin.timed,
                traced_median: med,
                micro_median: median_of(&mut v),
            });
        }
    }
    checks
}

/// The model, in words.
pub(crate) fn model_text(micro: &Micro, costs: &FlushCosts, opts: &Options) -> Vec<String> {
    let c0 = costs.measured_ceiling;
    vec![
        "A local range flush of n pages (the CPU whose call asked for it) costs a + (z + p)*n cycles when n is at most the ceiling (zap, then one INVLPG per page) and a + F + z*n + R above it (zap, one full flush, then the TLB entries the workload still needed are refilled).".into(),
        "Each remote CPU that receives the shootdown flushes the same range: p*n, or F + R above the ceiling (it zaps nothing). The sender waits for the receivers: p*n or F per shootdown sent. The IPIs themselves (sending, the handler's entry and exit) cost the same at every ceiling: listed below with their sources, they cancel in the differences.".into(),
        format!(
            "a, z, p, F are fitted to micro {}'s madvise curve (median cycles of a call on n touched pages minus on n empty ones), split at its kernel's ceiling {c0} ({}): below it the line a + (z + p)*n, above it a + F + z*n, by least squares with every term at or above 0 (a cost cannot be negative); the unconstrained fit is shown beside it, and a term whose unconstrained band holds 0 is reported as not resolvable.",
            micro.id, costs.ceiling_source
        ),
        "For every ceiling c: predicted cycles per second = the sum over the workload's local flushes, receipts and sends by size of (events per second) x (their cost at c). The best ceiling is the smallest c where that sum is lowest; per local flush, a full flush is cheaper above (F + R) / p pages.".into(),
        format!(
            "The band: {} bootstrap replicates (seed {}), each resampling every micro configuration's samples (medians and the constrained fit retaken) and drawing every flush count from a Poisson distribution; 95% of them put their best ceiling inside it.",
            opts.resamples, opts.seed
        ),
    ]
}

/// The model's assumptions, in words.
pub(crate) fn assumptions(c0: u64, ws: u64, always0: f64) -> Vec<String> {
    vec![
        "The micro's madvise(MADV_DONTNEED) calls on one CPU stand for every local flush of the same size in the workload (munmap and mprotect alike); a receiver's INVLPG and full flush cost what they cost locally.".into(),
        format!(
            "Partial flushes above {c0} pages (never measured: that kernel flushed them in full) cost what the line below {c0} predicts; full flushes below it what the line above predicts."
        ),
        format!(
            "After a full flush the workload refills a TLB working set of {ws} pages (--working-set) once on each CPU that flushed; a partial flush evicts only the pages it flushes, whose mappings are gone anyway."
        ),
        format!(
            "Full flushes of the workload inside madvise/munmap/mprotect calls asking for more than {c0} pages are flushes of that many pages at other ceilings; local full flushes with no such call ({always0:.0} per second) stay full at every ceiling; receipts and sends of full flushes have the local ones' sizes."
        ),
        "The workload makes the same flushes whatever the ceiling (its speed and behaviour do not react to it).".into(),
    ]
}

/// The knob's state here, for the validation note.
pub(crate) fn knob_state() -> String {
    match std::fs::read_to_string(KNOB) {
        Ok(v) => format!(
            "{KNOB} reads {} here: run the workload with it set to several values (abperf run -k \
             {KNOB}=1,8,33,64 -- WORKLOAD) and compare the measured differences with the curve",
            v.trim()
        ),
        Err(e) => format!(
            "{KNOB} cannot be read here ({e}; debugfs not mounted, or kernel lockdown), so the \
             prediction at other ceilings was not checked against runs with the ceiling changed"
        ),
    }
}

/// How the advice was validated, and what was not.
pub(crate) fn validation(no_checks: bool) -> Vec<String> {
    let mut validation = vec![
        "On synthetic inputs with a known optimum (unit tests in crates/trace/src/ceiling.rs: a per-page cost, a full-flush cost and a refill set so that the crossover lies at a chosen size; the advisor finds that size, and its band holds it).".into(),
    ];
    if no_checks {
        validation.push("The capture has no madvise calls of sizes the micro measured (5 or more each): the cost inputs could not be checked against the workload's own calls.".into());
    } else {
        validation.push("The cost inputs against the workload's own calls at the recording's ceiling: the traced median duration of its madvise calls beside the micro's median for the same size (below; the traced calls also pay for the tracing and the syscall entry and exit).".into());
    }
    validation.push(format!("Not validated: {}", knob_state()));
    validation
}
