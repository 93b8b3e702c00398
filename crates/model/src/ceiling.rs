//! The ceiling advisor's result (`abperf model ceiling`): which `tlb_single_page_flush_ceiling`
//! suits a workload on this CPU, predicted from a trace capture (how often each flush size
//! occurs) and a micro experiment (what a partial and a full flush cost). `trace::ceiling`
//! computes it; `report::ceiling` renders it.

use serde::Serialize;

/// An estimate with its bootstrap percentile interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

/// The flush sizes of the workload, per second.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlushMix {
    /// (pages, flushes per second), pages ascending: every local range flush (the CPU that
    /// asked for it), sizes above the kernel's ceiling at recording time recovered from the
    /// enclosing call's length. Remote receipts are not in here.
    pub rates: Vec<(u64, f64)>,
    /// Local full flushes per second whose size is unknown (outside madvise/munmap/mprotect,
    /// or a flush of everything): full at every ceiling.
    pub always_full: f64,
    /// Local range flushes counted and the seconds they were counted over.
    pub flushes: u64,
    pub seconds: f64,
    /// Remote shootdowns received on other CPUs (each receiving CPU counts once).
    pub remote: u64,
    /// Of the local flushes: those that sent IPIs to other CPUs (`remote IPI send`).
    pub sent: u64,
    /// Receipts per second by size (sizes of full receipts taken from the local ones).
    pub received_rates: Vec<(u64, f64)>,
    pub received_always_full: f64,
    /// Shootdowns sent per second by size (the sender waits for the receivers' flushes).
    pub sent_rates: Vec<(u64, f64)>,
    pub sent_always_full: f64,
    /// Full flushes whose size was recovered from the enclosing call.
    pub recovered: u64,
}

/// One term of the model: what it is, its value under the constraint that a cost is not
/// negative, the unconstrained value, whether the data resolve it, and where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Term {
    /// Its symbol in the model's formulas (`p`, `F`, `R`, ...).
    pub symbol: String,
    pub name: String,
    pub unit: String,
    /// The estimate with every cost at or above 0 (its band from the same constrained refits).
    pub estimate: Estimate,
    /// The unconstrained fit (may be negative: noise), with its band.
    pub unconstrained: Estimate,
    /// The unconstrained band excludes 0: the data tell the cost from nothing.
    pub resolved: bool,
    /// Whether the term changes with the ceiling (terms that do not are listed, but cancel in
    /// the differences between ceilings).
    pub by_ceiling: bool,
    /// The measurement it comes from.
    pub source: String,
    /// When not resolved (and it matters): which measurement would resolve it, how long.
    pub to_resolve: Option<String>,
}

/// What the flushes cost, from the micro experiment (cycles).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlushCosts {
    /// Each page flushed one by one (INVLPG): the slope below the ceiling minus the slope above.
    pub per_page: Estimate,
    /// A full flush's fixed cost minus a partial one's (the intercepts above and below).
    pub full_extra: Estimate,
    /// The extra refill a full flush causes over a partial one, for `working_set` pages.
    pub refill: Estimate,
    pub working_set: u64,
    /// Where the micro curve was split: its kernel's ceiling (last size flushed page by page).
    pub measured_ceiling: u64,
    /// How the split was found (`knee of the madvise curve`, `--measured-ceiling`, ...).
    pub ceiling_source: String,
    /// Where the refill figure comes from (`tlb-refill full - partial at K=2048`, ...).
    pub refill_source: String,
    /// Partial-flush cost line below the ceiling: (intercept, slope) in cycles, cycles/page.
    pub partial_line: (f64, f64),
    /// Full-flush cost line above it (without refill).
    pub full_line: (f64, f64),
    /// Every term of the model with its source (the three above among them).
    pub terms: Vec<Term>,
}

/// One ceiling value's prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CeilingPoint {
    pub ceiling: u64,
    /// Predicted cycles per second in flushing calls (zap + flush + refill); band from the
    /// bootstrap.
    pub cycles_per_s: Estimate,
    /// Minus the best ceiling's prediction (same resample), cycles per second.
    pub above_best: Estimate,
}

/// A size of the workload: its measured call duration beside the micro's prediction for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub pages: u64,
    pub calls: u64,
    /// Median duration of the workload's madvise calls of this size (cycles, traced).
    pub traced_median: f64,
    /// The micro's median touched-range call of this size (cycles, untraced).
    pub micro_median: f64,
}

/// The predicted change of the workload's flushing cost from one ceiling to another.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub from: u64,
    pub to: u64,
    /// Percent less cycles per second at `to` than at `from` (negative: more), with the band
    /// of the same bootstrap replicates (paired).
    pub percent_less: Estimate,
    /// The same as cycles per second less.
    pub cycles_less: Estimate,
}

/// The advice checked by the knob: runs of the workload with the ceiling at the current value
/// and at others (`model ceiling --validate`), measured against the prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KnobCheck {
    /// The `run` experiment (variants set tlb_single_page_flush_ceiling).
    pub experiment_id: i64,
    /// The ceiling of the baseline variant (the current value).
    pub baseline: u64,
    pub rows: Vec<KnobCheckRow>,
    /// Whether every row's prediction and measurement agreed (their bands overlap).
    pub agreed: bool,
    /// Where the costs and the runs come from (TCG: QEMU's costs), in words.
    pub notes: Vec<String>,
}

/// One ceiling of the check against the baseline, percent less (negative: more).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KnobCheckRow {
    pub ceiling: u64,
    pub runs: usize,
    /// The model: percent less flushing cycles per second than at the baseline.
    pub predicted_flush_pct: Estimate,
    /// The model's saving as percent of the baseline's measured wall time (None without a TSC
    /// frequency).
    pub predicted_wall_pct: Option<Estimate>,
    /// Measured: percent less wall time and system time (BCa bootstrap of the ratio of means).
    pub measured_wall_pct: Option<Estimate>,
    pub measured_sys_pct: Option<Estimate>,
    /// The predicted wall band overlaps the measured 95% interval.
    pub agrees: Option<bool>,
}

/// The advisor's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CeilingAdvice {
    pub capture_id: i64,
    pub micro_id: i64,
    pub mix: FlushMix,
    pub costs: FlushCosts,
    /// Every ceiling evaluated: 0..=64, then larger values up to the largest flush size.
    pub curve: Vec<CeilingPoint>,
    /// The smallest ceiling with the lowest predicted cost, and every ceiling predicting that
    /// same cost (the curve is flat between flush sizes the workload does not use).
    pub best: u64,
    pub best_range: (u64, u64),
    /// 95% of the bootstrap replicates put their best ceiling in this range.
    pub band: (u64, u64),
    /// Per flush: a full flush is cheaper above this many pages ((full_extra + refill) /
    /// per_page), with its interval.
    pub crossover: Estimate,
    /// The kernel default (33) and the ceiling of the micro's kernel, with their predicted
    /// extra cost over the best.
    pub default_ceiling: u64,
    /// From the micro's kernel's ceiling (the one the workload ran with) to the best.
    pub change: Change,
    /// From the same ceiling to every ceiling asked for (`Options::changes_to`).
    pub changes: Vec<Change>,
    /// The check by the knob, when asked for (`--validate`).
    pub knob_check: Option<KnobCheck>,
    pub resamples: usize,
    pub seed: u64,
    /// The model and its assumptions, in words.
    pub model: Vec<String>,
    pub assumptions: Vec<String>,
    /// What was and was not validated.
    pub validation: Vec<String>,
    /// The capture's own call durations against the micro's, at the recording's ceiling.
    pub checks: Vec<Check>,
    /// Warnings about the inputs (losses, too few flushes, a cost that cannot be measured).
    pub warnings: Vec<String>,
}

impl CeilingAdvice {
    /// The prediction at `c`, if evaluated.
    pub fn at(&self, c: u64) -> Option<&CeilingPoint> {
        self.curve.iter().find(|p| p.ceiling == c)
    }
}
