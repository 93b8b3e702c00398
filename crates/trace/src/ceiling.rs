//! The ceiling advisor (seed 002's open question): which `tlb_single_page_flush_ceiling` suits
//! this CPU and this workload.
//!
//! The kernel flushes a range of `n` pages page by page (one INVLPG each) when `n` is at most
//! the ceiling, and the whole TLB above it. Page by page costs more with every page; a full
//! flush costs a fixed amount plus the refill of the TLB entries the workload still needed.
//! Weighted by how often each flush size occurs in the workload, the predicted cost per second
//! of every ceiling value follows:
//!
//! ```text
//! cost(c) = sum over sizes n of  rate(n) * ( n <= c ? partial(n) : full(n) + refill )
//! partial(n) = aL + bL n     (the micro's madvise curve at and below its kernel's ceiling)
//! full(n)    = aR + bR n     (the curve above it: one full flush plus the zap of n pages)
//! ```
//!
//! `bL - bR` is the per-page flush cost (the zap cost, in both slopes, cancels), `aR - aL` the
//! full flush's fixed cost beyond a partial one, `refill` the extra refill after a full flush
//! (`micro tlb-refill`: re-touching a working set after a full against after a partial
//! flush; or `tlb-miss`'s cost per miss times the working set). Per flush, a full flush is
//! cheaper above `n* = (aR - aL + refill) / (bL - bR)` pages.
//!
//! Uncertainty: a bootstrap over the micro samples (every configuration resampled, its median
//! retaken, the lines refitted) and over the flush counts (Poisson), seeded; the band is where
//! 95% of the replicates put their best ceiling.

use abperf_model::ceiling::{CeilingAdvice, CeilingPoint, Check, Estimate, FlushCosts, FlushMix};
use abperf_model::trace::{CaptureInfo, Tables};
use abperf_model::{Dataset, MicroFinding};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// The kernel's default ceiling on x86.
pub const DEFAULT_CEILING: u64 = 33;
/// The ceiling file (debugfs).
pub const KNOB: &str = "/sys/kernel/debug/x86/tlb_single_page_flush_ceiling";

#[derive(Debug, Clone)]
pub struct Options {
    /// TLB working set of the workload in pages (refilled after a full flush).
    pub working_set: Option<u64>,
    /// The ceiling of the kernel the micro experiment ran on (where its curve bends).
    pub measured_ceiling: Option<u64>,
    pub resamples: usize,
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            working_set: None,
            measured_ceiling: None,
            resamples: 1000,
            seed: 0x0ce1,
        }
    }
}

/// The micro experiment: its samples and findings.
pub struct Micro<'a> {
    pub id: i64,
    pub data: &'a Dataset,
    pub findings: &'a [MicroFinding],
}

/// Flush counts by size, before dividing by time.
#[derive(Debug, Clone, Default, PartialEq)]
struct Counts {
    by_size: BTreeMap<u64, f64>,
    always_full: f64,
    flushes: u64,
    remote: u64,
    recovered: u64,
}

fn reason_is(name: &str, r: i64, want: &[(&str, i64)]) -> bool {
    want.iter()
        .any(|(n, v)| name == *n || (name.starts_with("reason ") && r == *v))
}

/// The workload's flushes by size. Sizes above `ceiling_then` (the ceiling of the kernel that
/// recorded it) were flushed in full; their size is recovered from the enclosing
/// madvise/munmap/mprotect's requested length.
fn counts(t: &Tables, ceiling_then: u64) -> Result<Counts, String> {
    let tl = t
        .tlb
        .as_ref()
        .ok_or("the capture has no tlb:tlb_flush events (record with the default events)")?;
    let local = [("local MM shootdown", 3), ("local shootdown", 2)];
    let remote = [("remote shootdown", 1)];
    let mut c = Counts::default();
    let (mut full_local, mut full_remote) = (0u64, 0u64);
    for r in &tl.rows {
        let name = tl.reason_name(r.reason);
        let is_local = reason_is(&name, r.reason, &local);
        let is_remote = reason_is(&name, r.reason, &remote);
        if !(is_local || is_remote) {
            continue;
        }
        let n = r.bin.count;
        c.flushes += n;
        if is_remote {
            c.remote += n;
        }
        if r.pages >= 1 {
            *c.by_size.entry(r.pages as u64).or_default() += n as f64;
        } else if r.pages < 0 {
            if is_remote {
                full_remote += n;
            } else {
                full_local += n;
            }
        }
    }
    // full flushes inside calls that asked for more pages than the ceiling then
    let mut recovered: BTreeMap<u64, u64> = BTreeMap::new();
    for p in &t.pairs {
        if !matches!(p.name.as_str(), "madvise" | "munmap" | "mprotect") {
            continue;
        }
        for row in &p.rows {
            if row.key as u64 <= ceiling_then || row.key <= 0 {
                continue;
            }
            for (pages, n) in &row.flushes {
                if *pages < 0 {
                    *recovered.entry(row.key as u64).or_default() += n;
                }
            }
        }
    }
    let rec_total: u64 = recovered.values().sum::<u64>().min(full_local);
    let scale = if rec_total > 0 {
        rec_total as f64 / recovered.values().sum::<u64>() as f64
    } else {
        0.0
    };
    for (k, n) in &recovered {
        let local_n = *n as f64 * scale;
        // remote receipts of full flushes take the local full flushes' sizes
        let remote_n = if full_local > 0 {
            full_remote as f64 * local_n / full_local as f64
        } else {
            0.0
        };
        *c.by_size.entry(*k).or_default() += local_n + remote_n;
    }
    c.recovered = rec_total;
    let assigned_remote = if full_local > 0 {
        full_remote as f64 * rec_total as f64 / full_local as f64
    } else {
        0.0
    };
    c.always_full = (full_local - rec_total) as f64 + (full_remote as f64 - assigned_remote);
    Ok(c)
}

/// Least squares line: (intercept, slope).
fn line(p: &[(f64, f64)]) -> (f64, f64) {
    let n = p.len() as f64;
    let mx = p.iter().map(|x| x.0).sum::<f64>() / n;
    let my = p.iter().map(|x| x.1).sum::<f64>() / n;
    let sxx: f64 = p.iter().map(|x| (x.0 - mx).powi(2)).sum();
    let sxy: f64 = p.iter().map(|x| (x.0 - mx) * (x.1 - my)).sum();
    let b = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (my - b * mx, b)
}

fn median_of(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    abperf_model::describe::median_sorted(v)
}

fn pct(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    abperf_model::describe::quantile_sorted(v, q)
}

/// The micro configurations the model reads: per size, touched and empty samples; per
/// working set, full and partial refill samples (or miss samples).
struct Samples {
    flush: Vec<(u64, Vec<f64>, Vec<f64>)>,
    refill: Vec<(u64, Vec<f64>, Vec<f64>)>,
    /// (pages, 4k chase, dense chase) when there is no tlb-refill.
    miss: Option<(u64, Vec<f64>, Vec<f64>)>,
}

fn samples(m: &Micro) -> Result<Samples, String> {
    let vals = |name: &str| -> Option<Vec<f64>> {
        let v = m.data.values(m.data.position(name)?, "cycles");
        (!v.is_empty()).then_some(v)
    };
    let mut flush = Vec::new();
    for n in 1..=64u64 {
        if let (Some(t), Some(e)) = (
            vals(&format!("tlb-flush/madvise/touched/n={n}")),
            vals(&format!("tlb-flush/madvise/empty/n={n}")),
        ) {
            flush.push((n, t, e));
        }
    }
    if flush.len() < 8 {
        return Err(format!(
            "micro experiment {} has no tlb-flush madvise curve (found {} sizes): run `abperf micro tlb-flush tlb-refill`",
            m.id,
            flush.len()
        ));
    }
    let mut refill = Vec::new();
    for v in &m.data.variants {
        if let Some(k) = v.name.strip_prefix("tlb-refill/full/k=")
            && let Ok(k) = k.parse::<u64>()
            && let (Some(f), Some(p)) = (vals(&v.name), vals(&format!("tlb-refill/partial/k={k}")))
        {
            refill.push((k, f, p));
        }
    }
    refill.sort_by_key(|r| r.0);
    let mut miss = None;
    if refill.is_empty() {
        let mut best = None;
        for v in &m.data.variants {
            if let Some(n) = v.name.strip_prefix("tlb-miss/4k/n=")
                && let Ok(n) = n.parse::<u64>()
                && best.is_none_or(|b| n > b)
            {
                best = Some(n);
            }
        }
        if let Some(n) = best
            && let (Some(a), Some(d)) = (
                vals(&format!("tlb-miss/4k/n={n}")),
                vals(&format!("tlb-miss/dense/n={n}")),
            )
        {
            miss = Some((n, a, d));
        }
    }
    if refill.is_empty() && miss.is_none() {
        return Err(format!(
            "micro experiment {} has neither tlb-refill nor tlb-miss results (the refill cost of a full flush): run `abperf micro tlb-flush tlb-refill`",
            m.id
        ));
    }
    Ok(Samples {
        flush,
        refill,
        miss,
    })
}

/// The model's parameters from one set of medians.
#[derive(Debug, Clone, Copy)]
struct Params {
    partial: (f64, f64),
    full: (f64, f64),
    refill: f64,
}

impl Params {
    fn per_page(&self) -> f64 {
        self.partial.1 - self.full.1
    }
    fn full_extra(&self) -> f64 {
        self.full.0 - self.partial.0
    }
    fn crossover(&self) -> f64 {
        let i = self.per_page();
        if i > 0.0 {
            (self.full_extra() + self.refill) / i
        } else {
            f64::INFINITY
        }
    }
    /// Predicted cycles per second at ceiling `c`.
    fn cost(&self, rates: &[(u64, f64)], always_full: f64, c: u64) -> f64 {
        let mut s = always_full * (self.full.0 + self.refill);
        for (n, r) in rates {
            let x = *n as f64;
            s += r * if *n <= c {
                self.partial.0 + self.partial.1 * x
            } else {
                self.full.0 + self.full.1 * x + self.refill
            };
        }
        s
    }
}

/// Fit from medians: net(n) = touched - empty, split at `c0`; refill at `ws` pages.
fn fit(
    flush: &[(u64, f64)],
    refill: &[(u64, f64)],
    miss_per_page: Option<f64>,
    c0: u64,
    ws: u64,
) -> Params {
    let left: Vec<(f64, f64)> = flush
        .iter()
        .filter(|(n, _)| *n <= c0)
        .map(|(n, y)| (*n as f64, *y))
        .collect();
    let right: Vec<(f64, f64)> = flush
        .iter()
        .filter(|(n, _)| *n > c0)
        .map(|(n, y)| (*n as f64, *y))
        .collect();
    let refill = if !refill.is_empty() {
        interpolate(refill, ws)
    } else {
        miss_per_page.unwrap_or(0.0) * ws as f64
    };
    Params {
        partial: line(&left),
        full: line(&right),
        refill,
    }
}

/// Linear interpolation of (k, value) at `x`; below the first point towards 0 at 0, beyond
/// the last the last value (a TLB holds no more).
fn interpolate(p: &[(u64, f64)], x: u64) -> f64 {
    let x = x as f64;
    let (k0, v0) = (p[0].0 as f64, p[0].1);
    if x <= k0 {
        return v0 * x / k0;
    }
    for w in p.windows(2) {
        let (a, va) = (w[0].0 as f64, w[0].1);
        let (b, vb) = (w[1].0 as f64, w[1].1);
        if x <= b {
            return va + (vb - va) * (x - a) / (b - a);
        }
    }
    p[p.len() - 1].1
}

fn resample(v: &[f64], rng: &mut ChaCha8Rng) -> Vec<f64> {
    (0..v.len())
        .map(|_| v[rng.random_range(0..v.len())])
        .collect()
}

/// Poisson draw (Knuth below 30, normal approximation above).
fn poisson(l: f64, rng: &mut ChaCha8Rng) -> f64 {
    if l <= 0.0 {
        return 0.0;
    }
    if l < 30.0 {
        let lim = (-l).exp();
        let (mut k, mut p) = (0.0, 1.0);
        loop {
            p *= rng.random::<f64>();
            if p <= lim {
                return k;
            }
            k += 1.0;
        }
    }
    // Box-Muller
    let u1: f64 = rng.random::<f64>().max(1e-300);
    let u2: f64 = rng.random();
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    (l + z * l.sqrt()).round().max(0.0)
}

/// Ceiling values evaluated: 0..=64, every flush size of the workload (the predicted cost
/// changes only there), and steps of about 1.5x up to the largest.
fn ceilings(sizes: &[u64]) -> Vec<u64> {
    let max_size = sizes.iter().copied().max().unwrap_or(64);
    let mut v: Vec<u64> = (0..=64).chain(sizes.iter().copied()).collect();
    let mut c = 96u64;
    while c < max_size.max(64) {
        v.push(c);
        c = if c.is_power_of_two() {
            c * 3 / 2
        } else {
            c / 3 * 4
        };
    }
    if max_size > 64 {
        v.push(max_size);
    }
    v.sort();
    v.dedup();
    v
}

/// The best (smallest) ceiling and the range of ceilings with the same cost: up to just
/// below the next evaluated ceiling that costs more (the grid holds every flush size, where
/// alone the cost changes).
fn best_of(costs: &[(u64, f64)]) -> (u64, (u64, u64)) {
    let min = costs.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
    let tol = min.abs() * 1e-12 + 1e-9;
    let i = costs
        .iter()
        .position(|c| c.1 <= min + tol)
        .expect("nonempty");
    let hi = costs[i + 1..]
        .iter()
        .find(|c| c.1 > min + tol)
        .map(|c| c.0 - 1)
        .unwrap_or(costs[costs.len() - 1].0);
    (costs[i].0, (costs[i].0, hi))
}

fn estimate(value: f64, reps: &mut [f64]) -> Estimate {
    if reps.is_empty() {
        return Estimate {
            value,
            low: value,
            high: value,
        };
    }
    Estimate {
        value,
        low: pct(reps, 0.025),
        high: pct(reps, 0.975),
    }
}

/// The knob's state here, for the validation note.
fn knob_state() -> String {
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

/// Predict the flush cost per second of every ceiling for the workload of `capture` on the
/// machine of `micro`.
pub fn advise(
    info: &CaptureInfo,
    t: &Tables,
    micro: &Micro,
    opts: &Options,
) -> Result<CeilingAdvice, String> {
    let mut warnings = Vec::new();
    let s = samples(micro)?;
    let (c0, c0_source) = measured_ceiling(micro, opts);
    let (nl, nr) = (
        s.flush.iter().filter(|f| f.0 <= c0).count(),
        s.flush.iter().filter(|f| f.0 > c0).count(),
    );
    if nl < 3 || nr < 3 {
        return Err(format!(
            "the micro curve has {nl} sizes at or below its ceiling {c0} and {nr} above (3 each needed to fit the two lines)"
        ));
    }
    let ws = working_set(&s, micro, opts);
    let refill_source = refill_source(&s, micro, ws);
    let params = fit(
        &net_medians(&s.flush),
        &net_medians(&s.refill),
        miss_per_page(&s.miss),
        c0,
        ws,
    );
    // the workload
    let seconds = capture_seconds(info)?;
    let cnt = counts(t, c0)?;
    if cnt.flushes == 0 {
        return Err(format!(
            "capture {} holds no range flushes (tlb_flush with reason local or remote shootdown)",
            info.id.unwrap_or(0)
        ));
    }
    if cnt.flushes < 100 {
        warnings.push(format!(
            "only {} flushes in the capture: the flush rates are uncertain",
            cnt.flushes
        ));
    }
    if info.has_losses() {
        warnings.push(format!(
            "the capture lost {} events: flush counts are too low",
            info.lost_total()
        ));
    }
    let rates0 = rates(&cnt, seconds);
    let always0 = cnt.always_full / seconds;
    let sizes: Vec<u64> = rates0.iter().map(|r| r.0).collect();
    let cs = ceilings(&sizes);
    let curve0: Vec<(u64, f64)> = cs
        .iter()
        .map(|c| (*c, params.cost(&rates0, always0, *c)))
        .collect();
    let (best, best_range) = best_of(&curve0);
    let min0 = curve0.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
    let mut reps = Replicates::draw(&s, &cnt, &cs, c0, ws, seconds, opts);
    let band = if reps.best.is_empty() {
        (best, best)
    } else {
        (
            pct(&mut reps.best, 0.025).floor() as u64,
            pct(&mut reps.best, 0.975).ceil() as u64,
        )
    };
    let curve: Vec<CeilingPoint> = curve0
        .iter()
        .enumerate()
        .map(|(i, (c, v))| CeilingPoint {
            ceiling: *c,
            cycles_per_s: estimate(*v, &mut reps.cost[i]),
            above_best: estimate(v - min0, &mut reps.above[i]),
        })
        .collect();
    let costs = FlushCosts {
        per_page: estimate(params.per_page(), &mut reps.per_page),
        full_extra: estimate(params.full_extra(), &mut reps.full_extra),
        refill: estimate(params.refill, &mut reps.refill),
        working_set: ws,
        measured_ceiling: c0,
        ceiling_source: c0_source,
        refill_source,
        partial_line: params.partial,
        full_line: params.full,
    };
    warnings.extend(cost_warnings(&costs));
    let checks = checks(info, t, micro);
    let crossover = estimate(params.crossover(), &mut reps.crossover);
    let mix = FlushMix {
        rates: rates0,
        always_full: always0,
        flushes: cnt.flushes,
        seconds,
        remote: cnt.remote,
        recovered: cnt.recovered,
    };
    Ok(CeilingAdvice {
        capture_id: info.id.unwrap_or(0),
        micro_id: micro.id,
        model: model_text(micro, &costs, opts),
        assumptions: assumptions(c0, ws, always0),
        validation: validation(checks.is_empty()),
        mix,
        costs,
        curve,
        best,
        best_range,
        band,
        crossover,
        default_ceiling: DEFAULT_CEILING,
        resamples: opts.resamples,
        seed: opts.seed,
        checks,
        warnings,
    })
}

/// Where the micro curve bends: its kernel's ceiling (--measured-ceiling, else the knee found
/// in the madvise curve, else the ceiling tlb-refill ran with, else the default), and whence.
fn measured_ceiling(micro: &Micro, opts: &Options) -> (u64, String) {
    let knee = micro
        .findings
        .iter()
        .find(|f| f.bench == "tlb-flush" && f.key == "madvise-knee")
        .and_then(|f| f.value);
    let refill_param = micro
        .data
        .variants
        .iter()
        .find(|v| v.name.starts_with("tlb-refill/"))
        .and_then(|v| v.parameters.get("ceiling"))
        .and_then(|c| c.parse::<u64>().ok());
    match (opts.measured_ceiling, knee, refill_param) {
        (Some(c), _, _) => (c, "--measured-ceiling".to_string()),
        (None, Some(k), _) => (
            k as u64,
            format!("the knee of micro {}'s madvise curve", micro.id),
        ),
        (None, None, Some(c)) => (
            c,
            "the ceiling micro tlb-refill ran with (no knee found)".into(),
        ),
        (None, None, None) => (
            DEFAULT_CEILING,
            "the kernel default (no knee found; give --measured-ceiling)".into(),
        ),
    }
}

/// The TLB working set refilled after a full flush: --working-set, else the largest tlb-refill
/// size, else tlb-miss's 4k reach, else 512 pages.
fn working_set(s: &Samples, micro: &Micro, opts: &Options) -> u64 {
    opts.working_set.unwrap_or_else(|| {
        if let Some(last) = s.refill.last() {
            last.0
        } else {
            micro
                .findings
                .iter()
                .find(|f| f.bench == "tlb-miss" && f.key == "4k-reach")
                .and_then(|f| f.value)
                .map(|v| v as u64)
                .unwrap_or(512)
        }
    })
}

/// Where the refill cost comes from, in words.
fn refill_source(s: &Samples, micro: &Micro, ws: u64) -> String {
    if let Some(last) = s.refill.last() {
        format!(
            "micro {} tlb-refill: re-touching the working set after a full minus after a partial flush (measured at {} pages{})",
            micro.id,
            s.refill
                .iter()
                .map(|r| r.0.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if ws > last.0 {
                "; held at the largest beyond it"
            } else {
                ""
            }
        )
    } else {
        let (n, _, _) = s.miss.as_ref().expect("checked");
        format!(
            "micro {} tlb-miss: cost per miss (4K chase minus dense chase at {n} pages) times the working set",
            micro.id
        )
    }
}

/// Per size (or working set): the median of the first samples minus the median of the second
/// (touched minus empty flushes; full minus partial refills).
fn net_medians(v: &[(u64, Vec<f64>, Vec<f64>)]) -> Vec<(u64, f64)> {
    v.iter()
        .map(|(n, t, e)| (*n, median_of(&mut t.clone()) - median_of(&mut e.clone())))
        .collect()
}

/// The cost per miss: the 4k chase's median minus the dense chase's.
fn miss_per_page(m: &Option<(u64, Vec<f64>, Vec<f64>)>) -> Option<f64> {
    m.as_ref()
        .map(|(_, a, d)| median_of(&mut a.clone()) - median_of(&mut d.clone()))
}

/// The capture's duration in seconds: its wall time, else its span in TSC ticks.
fn capture_seconds(info: &CaptureInfo) -> Result<f64, String> {
    Ok(match info.wall_ns {
        Some(w) if w > 0 => w as f64 / 1e9,
        _ => info
            .units()
            .ns(info.span_ticks as f64)
            .map(|ns| ns / 1e9)
            .filter(|s| *s > 0.0)
            .ok_or("the capture has no duration (wall time or a known TSC frequency)")?,
    })
}

/// Flushes per second by size.
fn rates(c: &Counts, seconds: f64) -> Vec<(u64, f64)> {
    c.by_size.iter().map(|(n, k)| (*n, k / seconds)).collect()
}

/// The bootstrap replicates: per evaluated ceiling its cost and its cost above the best, and
/// per replicate the best ceiling and the model's parameters.
struct Replicates {
    cost: Vec<Vec<f64>>,
    above: Vec<Vec<f64>>,
    best: Vec<f64>,
    per_page: Vec<f64>,
    full_extra: Vec<f64>,
    refill: Vec<f64>,
    crossover: Vec<f64>,
}

impl Replicates {
    /// `opts.resamples` replicates (seeded): every micro configuration's samples resampled (the
    /// lines refitted) and every flush count drawn from a Poisson distribution.
    fn draw(
        s: &Samples,
        cnt: &Counts,
        cs: &[u64],
        c0: u64,
        ws: u64,
        seconds: f64,
        opts: &Options,
    ) -> Replicates {
        let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
        let mut reps_cost: Vec<Vec<f64>> = vec![Vec::new(); cs.len()];
        let mut reps_above: Vec<Vec<f64>> = vec![Vec::new(); cs.len()];
        let (mut r_best, mut r_pp, mut r_fe, mut r_refill, mut r_cross) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..opts.resamples {
            let fl: Vec<(u64, Vec<f64>, Vec<f64>)> = s
                .flush
                .iter()
                .map(|(n, t, e)| (*n, resample(t, &mut rng), resample(e, &mut rng)))
                .collect();
            let rf: Vec<(u64, Vec<f64>, Vec<f64>)> = s
                .refill
                .iter()
                .map(|(k, f, p)| (*k, resample(f, &mut rng), resample(p, &mut rng)))
                .collect();
            let ms = s
                .miss
                .as_ref()
                .map(|(n, a, d)| (*n, resample(a, &mut rng), resample(d, &mut rng)));
            let p = fit(
                &net_medians(&fl),
                &net_medians(&rf),
                miss_per_page(&ms),
                c0,
                ws,
            );
            let mut c = cnt.clone();
            for v in c.by_size.values_mut() {
                *v = poisson(*v, &mut rng);
            }
            c.always_full = poisson(c.always_full, &mut rng);
            let r = rates(&c, seconds);
            let a = c.always_full / seconds;
            let curve: Vec<(u64, f64)> = cs.iter().map(|x| (*x, p.cost(&r, a, *x))).collect();
            let (b, _) = best_of(&curve);
            let min = curve.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
            for (i, (_, v)) in curve.iter().enumerate() {
                reps_cost[i].push(*v);
                reps_above[i].push(v - min);
            }
            r_best.push(b as f64);
            r_pp.push(p.per_page());
            r_fe.push(p.full_extra());
            r_refill.push(p.refill);
            r_cross.push(p.crossover());
        }
        Replicates {
            cost: reps_cost,
            above: reps_above,
            best: r_best,
            per_page: r_pp,
            full_extra: r_fe,
            refill: r_refill,
            crossover: r_cross,
        }
    }
}

/// Warnings about cost inputs the model cannot use as they are.
fn cost_warnings(costs: &FlushCosts) -> Vec<String> {
    let mut warnings = Vec::new();
    let ws = costs.working_set;
    if costs.per_page.value <= 0.0 {
        warnings.push(
            "the micro curve climbs no faster below its ceiling than above: no per-page flush cost is measurable, so the model cannot favour partial flushes".into(),
        );
    }
    if costs.refill.low <= 0.0 && costs.refill.high >= 0.0 {
        warnings.push(format!(
            "the refill cost of a full flush is indistinguishable from 0 ({:.0} cycles, 95% {:.0}..{:.0}): on this machine a partial flush loses as much of the TLB as a full one, or the working set of {ws} pages does not fit it anyway",
            costs.refill.value, costs.refill.low, costs.refill.high
        ));
    }
    warnings
}

/// The capture's own calls against the micro's, at the recording's ceiling: the traced median
/// of madvise calls of every size the micro measured (5 calls or more) beside the micro's.
fn checks(info: &CaptureInfo, t: &Tables, micro: &Micro) -> Vec<Check> {
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
fn model_text(micro: &Micro, costs: &FlushCosts, opts: &Options) -> Vec<String> {
    let c0 = costs.measured_ceiling;
    vec![
        format!(
            "A range flush of n pages costs partial(n) = aL + bL*n cycles when n is at most the ceiling (one INVLPG per page) and full(n) = aR + bR*n + refill above it (one full flush, then the TLB entries the workload still needed are refilled); both lines include zapping the n pages, which costs the same either way."
        ),
        format!(
            "aL, bL and aR, bR are straight lines fitted to micro {}'s madvise curve (median cycles of a call on n touched pages minus on n empty ones) at and below its kernel's ceiling {c0} ({}), and above it up to 64 pages.",
            micro.id, costs.ceiling_source
        ),
        "For every ceiling c: predicted cycles per second = sum over the workload's flush sizes n of (flushes of n pages per second) x (n <= c ? partial(n) : full(n)). The best ceiling is the smallest c where that sum is lowest; per single flush, a full flush is cheaper above (aR - aL + refill) / (bL - bR) pages.".into(),
        format!(
            "The band: {} bootstrap replicates (seed {}), each resampling every micro configuration's samples (medians and lines refitted) and drawing every flush count from a Poisson distribution; 95% of them put their best ceiling inside it.",
            opts.resamples, opts.seed
        ),
    ]
}

/// The model's assumptions, in words.
fn assumptions(c0: u64, ws: u64, always0: f64) -> Vec<String> {
    vec![
        "The micro's madvise(MADV_DONTNEED) calls stand for every flush of the same size in the workload: munmap, mprotect and the remote CPUs' receipts alike (IPI costs do not depend on the ceiling and are left out).".into(),
        format!(
            "Partial flushes above {c0} pages (never measured: that kernel flushed them in full) cost what the line below {c0} predicts; full flushes below it what the line above predicts."
        ),
        format!(
            "After a full flush the workload refills a TLB working set of {ws} pages (--working-set) once; a partial flush evicts only the pages it flushes, whose mappings are gone anyway."
        ),
        format!(
            "Full flushes of the workload inside madvise/munmap/mprotect calls asking for more than {c0} pages are flushes of that many pages at other ceilings; full flushes with no such call ({:.0} per second) stay full at every ceiling; remote receipts of full flushes have the local ones' sizes.",
            always0
        ),
        "The workload makes the same flushes whatever the ceiling (its speed and behaviour do not react to it).".into(),
    ]
}

/// How the advice was validated, and what was not.
fn validation(no_checks: bool) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::trace::{Bin, PairRow, PairTable, TlbRow, TlbTable};
    use abperf_model::{Experiment, Kind, Metric, Run, Status, Variant};

    /// A micro dataset whose madvise curve is `zap*n + flush*n` up to `c0` and
    /// `zap*n + full` above, with noise, and a refill of `refill` at K=512.
    fn micro(c0: u64, zap: f64, per_page: f64, full: f64, refill: f64) -> Dataset {
        let mut variants = Vec::new();
        let mut runs = Vec::new();
        let mut seq = 0;
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut add = |name: String, centre: f64, variants: &mut Vec<Variant>| {
            let pos = variants.len();
            variants.push(Variant::named(&name));
            for _ in 0..41 {
                let noise = rng.random_range(-0.02..0.02) * centre.abs().max(100.0);
                runs.push(Run::ok(
                    seq,
                    pos,
                    vec![Metric::new("cycles", centre + noise, "cycles")],
                ));
                seq += 1;
            }
        };
        for n in 1..=64u64 {
            let x = n as f64;
            let touched = 1000.0 + zap * x + if n <= c0 { per_page * x } else { full };
            add(
                format!("tlb-flush/madvise/touched/n={n}"),
                touched,
                &mut variants,
            );
            add(
                format!("tlb-flush/madvise/empty/n={n}"),
                1000.0,
                &mut variants,
            );
        }
        for (k, r) in [(64u64, refill / 8.0), (512, refill)] {
            add(format!("tlb-refill/partial/k={k}"), 5000.0, &mut variants);
            add(format!("tlb-refill/full/k={k}"), 5000.0 + r, &mut variants);
        }
        let e = Experiment {
            id: 1,
            name: "micro".into(),
            kind: Kind::Micro,
            created: String::new(),
            command_line: vec![],
            design: serde_json::json!({}),
            seed: None,
            environment: serde_json::json!({}),
            status: Status::Complete,
        };
        Dataset::new(vec![e], variants, runs, String::new())
    }

    /// A capture with `per_size` local flushes of each size in `sizes` over one second, sizes
    /// above 33 recorded as full flushes inside madvise calls of that length.
    fn capture(sizes: &[(i64, u64)]) -> (CaptureInfo, Tables) {
        let mut rows = Vec::new();
        let mut pair_rows = Vec::new();
        let mut full = 0;
        for (n, count) in sizes {
            let bin = Bin {
                count: *count,
                ..Default::default()
            };
            if *n > 33 {
                full += count;
                pair_rows.push(PairRow {
                    key: *n,
                    bin: bin.clone(),
                    flushes: vec![(-1, *count)],
                });
            } else {
                rows.push(TlbRow {
                    reason: 3,
                    pages: *n,
                    bin: bin.clone(),
                });
                pair_rows.push(PairRow {
                    key: *n,
                    bin,
                    flushes: vec![(*n, *count)],
                });
            }
        }
        rows.push(TlbRow {
            reason: 3,
            pages: -1,
            bin: Bin {
                count: full,
                ..Default::default()
            },
        });
        let t = Tables {
            tlb: Some(TlbTable {
                event: "tlb:tlb_flush".into(),
                reasons: vec![(3, "local MM shootdown".into())],
                rows,
            }),
            pairs: vec![PairTable {
                name: "madvise".into(),
                begin: vec![],
                end: vec![],
                key: "requested pages".into(),
                rows: pair_rows,
                unmatched: 0,
            }],
            ..Default::default()
        };
        let info = CaptureInfo {
            id: Some(9),
            clock: "x86-tsc".into(),
            tsc_hz: Some(2.6e9),
            wall_ns: Some(1_000_000_000),
            ..Default::default()
        };
        (info, t)
    }

    fn opts() -> Options {
        Options {
            resamples: 200,
            ..Default::default()
        }
    }

    #[test]
    fn synthetic_optimum_is_found() {
        // per page 300, full flush 6000 beyond a partial, refill 3000 at 512 pages: a full
        // flush is cheaper above (6000 + 3000) / 300 = 30 pages
        let ds = micro(33, 200.0, 300.0, 6000.0, 3000.0);
        let f = vec![MicroFinding {
            bench: "tlb-flush".into(),
            key: "madvise-knee".into(),
            value: Some(33.0),
            unit: "pages".into(),
            text: String::new(),
        }];
        let m = Micro {
            id: 1,
            data: &ds,
            findings: &f,
        };
        // every size from 1 to 64 used: the best ceiling is the crossover
        let sizes: Vec<(i64, u64)> = (1..=64).map(|n| (n, 100)).collect();
        let (info, t) = capture(&sizes);
        let a = advise(&info, &t, &m, &opts()).unwrap();
        assert!(
            (a.costs.per_page.value - 300.0).abs() < 15.0,
            "{:?}",
            a.costs
        );
        assert!(
            (a.costs.refill.value - 3000.0).abs() < 200.0,
            "{:?}",
            a.costs
        );
        assert!((a.crossover.value - 30.0).abs() < 2.0, "{:?}", a.crossover);
        assert!((28..=32).contains(&a.best), "best {}", a.best);
        assert!(a.band.0 <= a.best && a.best <= a.band.1, "{:?}", a.band);
        assert!(a.band.1 - a.band.0 <= 6, "{:?}", a.band);
        assert_eq!(a.mix.recovered, 31 * 100);
        // the curve is lowest at the best and rises on both sides
        let at = |c| a.at(c).unwrap().cycles_per_s.value;
        assert!(at(a.best) < at(1) && at(a.best) < at(64));
        assert!(a.at(a.best).unwrap().above_best.value.abs() < 1e-6);
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    }

    #[test]
    fn the_mix_decides_where_the_curve_is_flat() {
        // only 1-page and 200-page flushes: every ceiling from 1 to 199 costs the same
        let ds = micro(33, 200.0, 300.0, 6000.0, 3000.0);
        let m = Micro {
            id: 1,
            data: &ds,
            findings: &[],
        };
        let (info, t) = capture(&[(1, 1000), (200, 10)]);
        let a = advise(&info, &t, &m, &opts()).unwrap();
        assert_eq!(a.best, 1);
        assert_eq!(a.best_range, (1, 199));
        // the 200-page flushes: partial would cost 60,000 per flush against 9,000 full
        assert!(a.at(200).unwrap().above_best.value > 10.0 * 51_000.0 * 0.9);
        // no knee finding: the refill configuration's ceiling, else the default
        assert_eq!(a.costs.measured_ceiling, 33);
    }

    #[test]
    fn expensive_refills_favour_partial_flushes() {
        // a refill of 30,000 cycles: full flushes pay only above (6000 + 30000) / 300 = 120
        let ds = micro(33, 200.0, 300.0, 6000.0, 30_000.0);
        let m = Micro {
            id: 1,
            data: &ds,
            findings: &[],
        };
        let sizes: Vec<(i64, u64)> = [1, 8, 33, 64, 100, 119, 121, 150, 400]
            .iter()
            .map(|n| (*n, 50))
            .collect();
        let (info, t) = capture(&sizes);
        let a = advise(&info, &t, &m, &opts()).unwrap();
        assert!((a.crossover.value - 120.0).abs() < 8.0, "{:?}", a.crossover);
        assert_eq!(a.best, 119, "{:?}", a.best_range);
    }

    #[test]
    fn missing_inputs_are_named() {
        let ds = micro(33, 200.0, 300.0, 6000.0, 3000.0);
        let m = Micro {
            id: 4,
            data: &ds,
            findings: &[],
        };
        let (info, mut t) = capture(&[(1, 10)]);
        t.tlb = None;
        let e = advise(&info, &t, &m, &opts()).unwrap_err();
        assert!(e.contains("no tlb:tlb_flush"), "{e}");
        let empty = Dataset::new(vec![], vec![], vec![], String::new());
        let m = Micro {
            id: 4,
            data: &empty,
            findings: &[],
        };
        let (info, t) = capture(&[(1, 10)]);
        let e = advise(&info, &t, &m, &opts()).unwrap_err();
        assert!(e.contains("micro experiment 4 has no tlb-flush"), "{e}");
    }
}
