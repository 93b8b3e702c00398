//! The ceiling advisor's inputs: the micro experiment's samples, the model's parameters fitted
//! from them (under the constraint that no cost is negative, and without it), and the
//! capture's flush rates.

use super::ceiling_counts::{Counts, Sized};
use super::ceiling_fit::{self, Terms};
use abperf_model::trace::CaptureInfo;
use abperf_model::{Dataset, MicroFinding};

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
    /// Ceilings to predict the change to, from the micro's kernel's ceiling (`--validate`).
    pub changes_to: Vec<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            working_set: None,
            measured_ceiling: None,
            resamples: 1000,
            seed: 0x0ce1,
            changes_to: Vec::new(),
        }
    }
}

/// The micro experiment: its samples and findings.
pub struct Micro<'a> {
    pub id: i64,
    pub data: &'a Dataset,
    pub findings: &'a [MicroFinding],
}

pub(crate) fn median_of(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    abperf_model::describe::median_sorted(v)
}

pub(crate) fn pct(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    abperf_model::describe::quantile_sorted(v, q)
}

/// Samples of two configurations whose medians are subtracted: (key, first, second).
pub(crate) type Pairs = Vec<(u64, Vec<f64>, Vec<f64>)>;

/// The micro configurations the model reads: per size, touched and empty samples; per
/// working set, full and partial refill samples (or miss samples); per count of remote CPUs,
/// a one-page shootdown against the same call with no other CPU in the mm.
pub(crate) struct Samples {
    pub flush: Pairs,
    pub refill: Pairs,
    /// (pages, 4k chase, dense chase) when there is no tlb-refill.
    pub miss: Option<(u64, Vec<f64>, Vec<f64>)>,
    /// (remote CPUs spinning in the mm, 1-page madvise with them, alone) from tlb-shootdown.
    pub shootdown: Pairs,
}

pub(crate) fn samples(m: &Micro) -> Result<Samples, String> {
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
    let mut shootdown = Vec::new();
    let local = vals("tlb-shootdown/local/madvise/touched/n=1");
    for v in &m.data.variants {
        if let Some(k) = v.name.strip_prefix("tlb-refill/full/k=")
            && let Ok(k) = k.parse::<u64>()
            && let (Some(f), Some(p)) = (vals(&v.name), vals(&format!("tlb-refill/partial/k={k}")))
        {
            refill.push((k, f, p));
        }
        if let Some(rest) = v.name.strip_prefix("tlb-shootdown/spin")
            && let Some(mcpus) = rest.strip_suffix("/madvise/touched/n=1")
            && let Ok(mcpus) = mcpus.parse::<u64>()
            && let (Some(s), Some(l)) = (vals(&v.name), local.clone())
        {
            shootdown.push((mcpus, s, l));
        }
    }
    refill.sort_by_key(|r| r.0);
    shootdown.sort_by_key(|r| r.0);
    let miss = if refill.is_empty() {
        miss_samples(m, &vals)
    } else {
        None
    };
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
        shootdown,
    })
}

/// tlb-miss's largest 4k chase and the dense chase of the same size.
fn miss_samples(
    m: &Micro,
    vals: &dyn Fn(&str) -> Option<Vec<f64>>,
) -> Option<(u64, Vec<f64>, Vec<f64>)> {
    let n = m
        .data
        .variants
        .iter()
        .filter_map(|v| v.name.strip_prefix("tlb-miss/4k/n="))
        .filter_map(|n| n.parse::<u64>().ok())
        .max()?;
    Some((
        n,
        vals(&format!("tlb-miss/4k/n={n}"))?,
        vals(&format!("tlb-miss/dense/n={n}"))?,
    ))
}

/// The model's parameters from one set of medians.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Params {
    pub t: Terms,
    pub refill: f64,
}

/// The workload's flushes per second by kind and size.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rates {
    pub local: Vec<(u64, f64)>,
    pub local_full: f64,
    pub received: Vec<(u64, f64)>,
    pub received_full: f64,
    pub sent: Vec<(u64, f64)>,
    pub sent_full: f64,
}

impl Rates {
    pub fn new(c: &Counts, seconds: f64) -> Rates {
        let r = |s: &Sized| -> Vec<(u64, f64)> {
            s.by_size.iter().map(|(n, k)| (*n, k / seconds)).collect()
        };
        Rates {
            local: r(&c.local),
            local_full: c.local.always_full / seconds,
            received: r(&c.received),
            received_full: c.received.always_full / seconds,
            sent: r(&c.sent),
            sent_full: c.sent.always_full / seconds,
        }
    }

    /// Every size flushed (locally, received or sent).
    pub fn sizes(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .local
            .iter()
            .chain(&self.received)
            .chain(&self.sent)
            .map(|r| r.0)
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

impl Params {
    pub fn per_page(&self) -> f64 {
        self.t.p
    }
    pub fn full_extra(&self) -> f64 {
        self.t.f
    }
    pub fn crossover(&self) -> f64 {
        let i = self.per_page();
        if i > 0.0 {
            (self.full_extra() + self.refill) / i
        } else {
            f64::INFINITY
        }
    }
    /// Predicted cycles per second at ceiling `c`, over every CPU: the local flushes (zap and
    /// flush in the call, refill after a full one), each receiver's flush and refill, and the
    /// sender's wait for a receiver's flush.
    pub fn cost(&self, r: &Rates, c: u64) -> f64 {
        let (p, f, refill) = (self.t.p, self.t.f, self.refill);
        let (pl, fl) = (self.t.partial(), self.t.full());
        let mut s = r.local_full * (fl.0 + refill);
        for (n, rate) in &r.local {
            let x = *n as f64;
            s += rate
                * if *n <= c {
                    pl.0 + pl.1 * x
                } else {
                    fl.0 + fl.1 * x + refill
                };
        }
        s += r.received_full * (f + refill);
        for (n, rate) in &r.received {
            s += rate * if *n <= c { p * *n as f64 } else { f + refill };
        }
        s += r.sent_full * f;
        for (n, rate) in &r.sent {
            s += rate * if *n <= c { p * *n as f64 } else { f };
        }
        s
    }
}

/// Fit from medians: net(n) = touched - empty, split at `c0`; refill at `ws` pages. The
/// constrained parameters (every cost at or above 0) and the unconstrained ones.
pub(crate) fn fit(
    flush: &[(u64, f64)],
    refill: &[(u64, f64)],
    miss_per_page: Option<f64>,
    c0: u64,
    ws: u64,
) -> (Params, Params) {
    let pts: Vec<(f64, f64)> = flush.iter().map(|(n, y)| (*n as f64, *y)).collect();
    let refill = if !refill.is_empty() {
        interpolate(refill, ws)
    } else {
        miss_per_page.unwrap_or(0.0) * ws as f64
    };
    (
        Params {
            t: ceiling_fit::constrained(&pts, c0),
            refill: refill.max(0.0),
        },
        Params {
            t: ceiling_fit::unconstrained(&pts, c0),
            refill,
        },
    )
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

/// Where the micro curve bends: its kernel's ceiling (--measured-ceiling, else the knee found
/// in the madvise curve, else the ceiling tlb-refill ran with, else the default), and whence.
pub(crate) fn measured_ceiling(micro: &Micro, opts: &Options) -> (u64, String) {
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
pub(crate) fn working_set(s: &Samples, micro: &Micro, opts: &Options) -> u64 {
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
pub(crate) fn refill_source(s: &Samples, micro: &Micro, ws: u64) -> String {
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
    } else if let Some((n, _, _)) = s.miss.as_ref() {
        format!(
            "micro {} tlb-miss: cost per miss (4K chase minus dense chase at {n} pages) times the working set",
            micro.id
        )
    } else {
        format!("micro {}: no refill measurement", micro.id)
    }
}

/// Per size (or working set): the median of the first samples minus the median of the second
/// (touched minus empty flushes; full minus partial refills).
pub(crate) fn net_medians(v: &[(u64, Vec<f64>, Vec<f64>)]) -> Vec<(u64, f64)> {
    v.iter()
        .map(|(n, t, e)| (*n, median_of(&mut t.clone()) - median_of(&mut e.clone())))
        .collect()
}

/// The cost per miss: the 4k chase's median minus the dense chase's.
pub(crate) fn miss_per_page(m: &Option<(u64, Vec<f64>, Vec<f64>)>) -> Option<f64> {
    m.as_ref()
        .map(|(_, a, d)| median_of(&mut a.clone()) - median_of(&mut d.clone()))
}

/// The capture's duration in seconds: its wall time, else its span in TSC ticks.
pub(crate) fn capture_seconds(info: &CaptureInfo) -> Result<f64, String> {
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
