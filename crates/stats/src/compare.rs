//! One comparison of a variant against the baseline: every statistic of
//! docs/statistics.md#two-sample-comparison, the cross-checks, and the verdict with its
//! paste-ready line. [`compare`] is the single entry point; [`apply_correction`] adjusts a family
//! of comparisons (several variants or metrics).

use super::bootstrap::{self, Bootstrap};
use super::drift::{self, Ancova, Drift};
use super::equivalence::{self, Tost};
use super::host_effects::HostsComparison;
use super::multiple::Correction;
use super::outliers::{self, Outliers};
use super::power::{MIN_RUNS, detectable_effect, runs_needed_cv};
use super::rank::{self, HodgesLehmann, MannWhitney};
use super::trimmed;
use super::variance::{BrownForsythe, brown_forsythe};
use super::verdict::{
    Counted, Evidence, Verdict, fmt_effect, fmt_p, fmt_signed_pct, fmt_times, level_label,
};
use super::welch::{self, RatioCi, Welch};
use super::{StatsError, check_finite};
use abperf_model::describe::{Description, describe, variance};
use serde::Serialize;

/// Share of each tail cut by the trimmed-means sensitivity check (Yuen's usual 20%).
pub const TRIM: f64 = 0.2;

/// Below this many runs per variant the report notes that the default minimum is not met.
pub const DEFAULT_MIN_RUNS: usize = 6;

/// Analysis options.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Options {
    pub alpha: f64,
    /// Equivalence margin D in percent (0.2 = 0.2%).
    pub margin_pct: f64,
    /// Smallest effect of interest in percent, for runs needed.
    pub effect_pct: f64,
    /// Target power for runs needed and detectable effects.
    pub power: f64,
    /// Bootstrap resamples; 0 skips the bootstrap.
    pub resamples: usize,
    pub seed: u64,
    /// Rates: a larger value is an improvement.
    pub higher_is_better: bool,
    /// Event counts: spoken of as "more" and "fewer" (judged as lower is better).
    #[serde(default)]
    pub count: bool,
    /// Recompute the verdict without severe outliers when there are any.
    pub outlier_recheck: bool,
    /// Welch stays the primary analysis even with a run order (the ANCOVA is not consulted):
    /// a sequential experiment is judged with the test its stopping rule used.
    #[serde(default)]
    pub welch_only: bool,
    /// What the values compared are (runs, or a level's unit means), for the lines' words.
    #[serde(skip)]
    pub counted: Counted,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.05,
            margin_pct: 0.2,
            effect_pct: 0.5,
            power: 0.8,
            resamples: bootstrap::DEFAULT_RESAMPLES,
            seed: 0x5eed,
            higher_is_better: false,
            count: false,
            outlier_recheck: true,
            welch_only: false,
            counted: Counted::Runs,
        }
    }
}

/// One variant's values and, when known, their positions in the run schedule.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    pub name: &'a str,
    pub values: &'a [f64],
    pub order: Option<&'a [f64]>,
}

impl<'a> Sample<'a> {
    pub fn new(name: &'a str, values: &'a [f64]) -> Self {
        Sample {
            name,
            values,
            order: None,
        }
    }
    pub fn with_order(name: &'a str, values: &'a [f64], order: &'a [f64]) -> Self {
        Sample {
            name,
            values,
            order: Some(order),
        }
    }
}

/// Every statistic behind a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Details {
    pub baseline: Description,
    pub variant: Description,
    pub outliers_baseline: Outliers,
    pub outliers_variant: Outliers,
    pub welch: Option<Welch>,
    pub fieller95: Option<RatioCi>,
    pub fieller90: Option<RatioCi>,
    pub mann_whitney: Option<MannWhitney>,
    pub hodges_lehmann: Option<HodgesLehmann>,
    pub bootstrap: Option<Bootstrap>,
    pub brown_forsythe: Option<BrownForsythe>,
    pub drift: Option<Drift>,
    pub ancova: Option<Ancova>,
    pub tost: Option<Tost>,
    pub without_severe_outliers: Option<OutlierRecheck>,
    /// The pair judged host by host (hosts as blocks): each host's effect and their
    /// random-effects combination, which is then the primary analysis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts: Option<HostsComparison>,
}

/// The sensitivity check when a sample holds severe (3 IQR) outliers: Yuen's test of trimmed
/// means, both samples trimmed alike ([`super::trimmed`]). It is a note beside the verdict,
/// never a second verdict: `changed` says whether it reaches another conclusion at alpha.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutlierRecheck {
    /// Severe outliers flagged in each sample.
    pub severe_baseline: usize,
    pub severe_variant: usize,
    pub yuen: trimmed::Yuen,
    /// The trimmed means differ at alpha (before any correction for many comparisons).
    pub significant: bool,
    pub changed: bool,
    pub line: String,
}

/// The result of comparing a variant with the baseline (`--format json` prints these).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub baseline: String,
    pub variant: String,
    pub metric: String,
    /// The family it belongs to with `--by PARAM`: that parameter's value (e.g. the workload).
    pub family: Option<String>,
    pub higher_is_better: bool,
    pub n_baseline: usize,
    pub n_variant: usize,
    pub mean_baseline: f64,
    pub mean_variant: f64,
    /// mean(variant) / mean(baseline).
    pub ratio: f64,
    /// Fieller interval of the ratio (Welch df) at 1 - alpha (`details.fieller95.level`).
    pub ratio_ci: Option<[f64; 2]>,
    /// (ratio - 1) * 100.
    pub change_pct: f64,
    pub p_welch: Option<f64>,
    pub p_mannwhitney: Option<f64>,
    /// Hodges-Lehmann shift (variant - baseline, metric unit) and its 95% interval.
    pub hodges_lehmann: Option<f64>,
    pub hodges_lehmann_ci: Option<[f64; 2]>,
    pub p_brown_forsythe: Option<f64>,
    /// Brown-Forsythe's p after the correction, when variability is one of the tests reported
    /// (`--test variability`): then a significant difference is part of the verdict's sentence.
    pub p_variability_adjusted: Option<f64>,
    /// SD(variant) / SD(baseline) and its bootstrap BCa interval (at `sd_ratio_level()`, 95%).
    pub sd_ratio: Option<f64>,
    pub sd_ratio_ci: Option<[f64; 2]>,
    /// Mann-Kendall p of the run-order residuals; null without run order.
    pub drift_p: Option<f64>,
    /// "welch", or "ancova" when a run order made the run-index model primary.
    pub primary: String,
    /// The primary p-value after the correction for `m` comparisons.
    pub p_adjusted: Option<f64>,
    pub correction: String,
    pub m: usize,
    pub verdict: Verdict,
    /// Runs per variant to resolve the smallest effect of interest (inconclusive only).
    pub runs_needed: Option<usize>,
    pub line: String,
    /// Set when the primary and the robust analyses disagree at alpha.
    pub disagree: Option<String>,
    /// Plain-language notes (floors, zero variance, drift, outliers).
    pub notes: Vec<String>,
    pub options: Options,
    pub evidence: Evidence,
    pub details: Details,
}

impl Details {
    /// The two samples' descriptions and outlier flags, before any test.
    pub(crate) fn described(
        baseline: Description,
        variant: Description,
        outliers_baseline: Outliers,
        outliers_variant: Outliers,
    ) -> Details {
        Details {
            baseline,
            variant,
            outliers_baseline,
            outliers_variant,
            welch: None,
            fieller95: None,
            fieller90: None,
            mann_whitney: None,
            hodges_lehmann: None,
            bootstrap: None,
            brown_forsythe: None,
            drift: None,
            ancova: None,
            tost: None,
            without_severe_outliers: None,
            hosts: None,
        }
    }
}

impl Comparison {
    /// A comparison of the two samples `details` describes, with the ratio and the inputs of the
    /// verdict in `ev`, before any test: no p-values, no intervals, verdict inconclusive.
    pub(crate) fn unjudged(ev: &Evidence, details: &Details, opts: &Options) -> Comparison {
        let (a, b) = (&details.baseline, &details.variant);
        Comparison {
            baseline: ev.baseline.clone(),
            variant: ev.variant.clone(),
            metric: ev.metric.clone(),
            family: None,
            higher_is_better: opts.higher_is_better,
            n_baseline: a.n,
            n_variant: b.n,
            mean_baseline: a.mean,
            mean_variant: b.mean,
            ratio: ev.ratio,
            ratio_ci: None,
            change_pct: (ev.ratio - 1.0) * 100.0,
            p_welch: None,
            p_mannwhitney: None,
            hodges_lehmann: None,
            hodges_lehmann_ci: None,
            p_brown_forsythe: None,
            p_variability_adjusted: None,
            sd_ratio: (a.sd > 0.0).then(|| b.sd / a.sd),
            sd_ratio_ci: None,
            drift_p: None,
            primary: "welch".into(),
            p_adjusted: None,
            correction: Correction::None.name().into(),
            m: 1,
            verdict: Verdict::Inconclusive,
            runs_needed: None,
            line: String::new(),
            disagree: None,
            notes: Vec::new(),
            options: opts.clone(),
            evidence: ev.clone(),
            details: details.clone(),
        }
    }
}

impl Comparison {
    /// Multiply every figure in the metric's unit by `k` (the values were compared scaled by
    /// 1/k); ratios, statistics and p-values have no unit and stay.
    fn rescale(&mut self, k: f64) {
        let pair = |p: &mut [f64; 2]| {
            p[0] *= k;
            p[1] *= k;
        };
        self.mean_baseline *= k;
        self.mean_variant *= k;
        if let Some(x) = self.hodges_lehmann.as_mut() {
            *x *= k;
        }
        if let Some(p) = self.hodges_lehmann_ci.as_mut() {
            pair(p);
        }
        let d = &mut self.details;
        for x in [&mut d.baseline, &mut d.variant] {
            x.scale(k);
        }
        for o in [&mut d.outliers_baseline, &mut d.outliers_variant] {
            o.q1 *= k;
            o.q3 *= k;
            o.iqr *= k;
            o.mad *= k;
            for f in &mut o.flags {
                f.value *= k;
            }
        }
        if let Some(w) = d.welch.as_mut() {
            w.diff *= k;
            w.se *= k;
        }
        if let Some(h) = d.hodges_lehmann.as_mut() {
            h.shift *= k;
            h.ci = h.ci.map(|(l, u)| (l * k, u * k));
        }
        if let Some(dr) = d.drift.as_mut() {
            dr.sen_slope = dr.sen_slope.map(|s| s * k);
        }
        if let Some(an) = d.ancova.as_mut() {
            an.effect *= k;
            an.se *= k;
            an.slope *= k;
            an.baseline_adjusted *= k;
        }
    }

    /// The primary p-value as reported: after the correction for the family, else as tested.
    pub fn p(&self) -> Option<f64> {
        self.p_adjusted.or(self.p_welch)
    }
}

fn pair(ci: (f64, f64)) -> [f64; 2] {
    [ci.0, ci.1]
}

/// Compare `variant` against `base` on one metric.
///
/// Errors only on input that has no meaningful ratio (non-finite values, a baseline mean that
/// is not positive); every other degenerate case (n < 4, zero variance, ties) gives a
/// comparison whose line and notes say what could not be done.
pub fn compare(
    metric: &str,
    base: Sample,
    var: Sample,
    opts: &Options,
) -> Result<Comparison, StatsError> {
    check_finite(base.values)?;
    check_finite(var.values)?;
    let k = scale_for(base.values, var.values)?;
    if k == 1.0 {
        return compare_scaled(metric, base, var, opts, 1.0);
    }
    let (a, b): (Vec<f64>, Vec<f64>) = (
        base.values.iter().map(|x| x * k).collect(),
        var.values.iter().map(|x| x * k).collect(),
    );
    let mut c = compare_scaled(
        metric,
        Sample { values: &a, ..base },
        Sample { values: &b, ..var },
        opts,
        1.0 / k,
    )?;
    c.rescale(1.0 / k);
    Ok(c)
}

/// Magnitudes beyond which values are scaled before the arithmetic: Welch's degrees of freedom
/// take the fourth power of the spread, which overflows for values near 1e79 and underflows for
/// values near 1e-75 (NaN), and variances of values near 1e-160 underflow to 0.
const SAFE: std::ops::RangeInclusive<f64> = 1e-30..=1e30;

/// The power of two that brings the baseline's mean magnitude near 1 when the values are
/// outside [`SAFE`], else 1. Scaling by a power of two is exact, and every ratio, test statistic
/// and p-value is unchanged by it. An error when the values span more than the arithmetic can
/// carry even after scaling.
fn scale_for(a: &[f64], b: &[f64]) -> Result<f64, StatsError> {
    let all = || a.iter().chain(b).map(|x| x.abs()).filter(|x| *x > 0.0);
    let (Some(lo), Some(hi)) = (all().reduce(f64::min), all().reduce(f64::max)) else {
        return Ok(1.0);
    };
    if SAFE.contains(&lo) && SAFE.contains(&hi) {
        return Ok(1.0);
    }
    let m = a.iter().map(|x| x.abs()).sum::<f64>() / a.len().max(1) as f64;
    let m = if m.is_finite() && m > 0.0 { m } else { hi };
    let k = 2f64.powi(-(m.log2().floor() as i32));
    if !(SAFE.contains(&(lo * k)) && SAFE.contains(&(hi * k))) {
        return Err(StatsError::Invalid(format!(
            "the values span {lo:e} .. {hi:e}: wider than the arithmetic can carry (a ratio of \
             more than 1e60 between the smallest and the largest)"
        )));
    }
    Ok(k)
}

/// [`compare`] on values already in a safe range; `unit` converts them back for the few
/// sentences that quote a value. The steps of docs/statistics.md#two-sample-comparison in order:
/// describe, the floors, the primary test, the robust cross-checks, variability, equivalence,
/// drift, the detectable effect, disagreement, the outlier check and the verdict.
fn compare_scaled(
    metric: &str,
    base: Sample,
    var: Sample,
    opts: &Options,
    unit: f64,
) -> Result<Comparison, StatsError> {
    let mut j = Judging::describe(metric, base, var, opts, unit)?;
    if j.too_few_runs() {
        return Ok(j.c);
    }
    j.note_below_default_minimum();
    if j.zero_variance() {
        return Ok(j.c);
    }
    j.primary_test();
    j.robust_cross_checks();
    j.variability();
    j.equivalence();
    j.drift();
    j.detectable_effect();
    j.disagreement();
    j.outlier_recheck();
    Ok(j.verdict())
}

/// One comparison being made: the two samples, the options, and the [`Comparison`] that each
/// step of [`compare_scaled`] fills in (its statistics, evidence, details and notes).
struct Judging<'a> {
    base: Sample<'a>,
    var: Sample<'a>,
    opts: &'a Options,
    /// Converts a scaled value back to the metric's unit, for the sentences that quote one.
    unit: f64,
    /// The pooled coefficient of variation in percent of the baseline mean.
    cv_pct: f64,
    c: Comparison,
}

/// The confidence level of every interval reported beside the verdict.
const LEVEL: f64 = 0.95;

impl<'a> Judging<'a> {
    /// Describe both samples, flag their outliers and gather what the verdict needs before any
    /// test: the ratio, the coefficient of variation and the runs needed.
    fn describe(
        metric: &str,
        base: Sample<'a>,
        var: Sample<'a>,
        opts: &'a Options,
        unit: f64,
    ) -> Result<Judging<'a>, StatsError> {
        let (a, b) = (base.values, var.values);
        if a.is_empty() || b.is_empty() {
            return Err(StatsError::TooFew {
                what: "comparison",
                need: 1,
                got: a.len().min(b.len()),
            });
        }
        let da = describe(a).expect("non-empty");
        let db = describe(b).expect("non-empty");
        if da.mean <= 0.0 {
            return Err(StatsError::NonPositiveMean(da.mean));
        }
        let ratio = db.mean / da.mean;
        let cv_pct = 100.0 * ((variance(a) + variance(b)) / 2.0).sqrt() / da.mean;
        let cv_known = a.len() >= 2 && b.len() >= 2;
        let runs_for = |effect_pct: f64| {
            cv_known
                .then(|| runs_needed_cv(cv_pct, effect_pct, opts.alpha, opts.power))
                .flatten()
        };
        let details = Details::described(da, db, outliers::flag(a), outliers::flag(b));
        let ev = Evidence {
            baseline: base.name.to_string(),
            variant: var.name.to_string(),
            ratio,
            ci95: None,
            ci90: None,
            ratio_unbounded: false,
            ratio_rays: None,
            counted: opts.counted.clone(),
            p: None,
            correction: String::new(),
            n_baseline: a.len(),
            n_variant: b.len(),
            method: "Welch".into(),
            higher_is_better: opts.higher_is_better,
            metric: metric.to_string(),
            count: opts.count,
            alpha: opts.alpha,
            margin: opts.margin_pct / 100.0,
            cv_pct: cv_known.then_some(cv_pct),
            effect_pct: opts.effect_pct,
            power: opts.power,
            detectable_pct: None,
            runs_needed: runs_for(opts.effect_pct),
            runs_needed_observed: runs_for((ratio - 1.0).abs() * 100.0),
        };
        Ok(Judging {
            base,
            var,
            opts,
            unit,
            cv_pct,
            c: Comparison::unjudged(&ev, &details, opts),
        })
    }

    /// The floor: with fewer than [`MIN_RUNS`] in a sample, a description only (true).
    fn too_few_runs(&mut self) -> bool {
        let (a, b, opts, c) = (self.base.values, self.var.values, self.opts, &mut self.c);
        if a.len() >= MIN_RUNS && b.len() >= MIN_RUNS {
            return false;
        }
        let runs = c.evidence.runs_needed;
        let counted = &opts.counted;
        c.line = format!(
            "Description only: {} vs {} {} ({}); at least {} are needed for a test{}",
            self.var.name,
            self.base.name,
            fmt_signed_pct(c.change_pct),
            counted.n(a.len(), b.len()),
            counted.per_variant(MIN_RUNS),
            runs.map(|r| format!(
                ", about {} to resolve a {} change",
                counted.per_variant(r),
                fmt_effect(opts.effect_pct)
            ))
            .unwrap_or_default()
        );
        c.notes.push(format!(
            "fewer than {MIN_RUNS} runs in a variant: no test was made"
        ));
        c.runs_needed = runs;
        true
    }

    /// A note when a sample has fewer runs than [`DEFAULT_MIN_RUNS`].
    fn note_below_default_minimum(&mut self) {
        if self.base.values.len() < DEFAULT_MIN_RUNS || self.var.values.len() < DEFAULT_MIN_RUNS {
            self.c.notes.push(format!(
                "fewer than {DEFAULT_MIN_RUNS} runs in a variant: below the default minimum (10 recommended)"
            ));
        }
    }

    /// Zero variance in both samples: nothing to test (true), and the line says what was seen.
    fn zero_variance(&mut self) -> bool {
        let (unit, c) = (self.unit, &mut self.c);
        let (da, db) = (&c.details.baseline, &c.details.variant);
        if !(da.sd == 0.0 && db.sd == 0.0) {
            return false;
        }
        let counted = &self.opts.counted;
        let n = counted.n(self.base.values.len(), self.var.values.len());
        if da.mean == db.mean {
            c.verdict = Verdict::NoDifference;
            c.line = format!(
                "No difference: {} and {} gave the same value ({}) in every {} ({n})",
                self.var.name,
                self.base.name,
                da.mean * unit,
                counted.one()
            );
        } else {
            c.line = format!(
                "Inconclusive: every {one} of {} gave {} and every {one} of {} gave {} ({}); with zero variance no test applies ({n})",
                self.base.name,
                da.mean * unit,
                self.var.name,
                db.mean * unit,
                fmt_signed_pct(c.change_pct),
                one = counted.one()
            );
        }
        c.notes
            .push("both samples have zero variance: no test is possible".into());
        true
    }

    /// The primary test: Welch's t-test and Fieller's intervals of the ratio, which are the
    /// verdict's evidence unless a run order makes ANCOVA primary.
    fn primary_test(&mut self) {
        let (a, b, c) = (self.base.values, self.var.values, &mut self.c);
        let w = welch::welch(a, b).ok();
        c.p_welch = w.as_ref().map(|w| w.p);
        c.details.welch = w;
        let (level, equivalence) = (c.evidence.ci_level(), c.evidence.equivalence_level());
        let fieller = |level| welch::fieller(a, b, level).map(|ci| positive_ratio(a, b, ci));
        match fieller(level) {
            Ok(ci) => {
                c.details.fieller95 = Some(ci);
                c.ratio_ci = Some([ci.low, ci.high]);
            }
            Err(e) => {
                c.evidence.ratio_unbounded = e.unbounded_ratio();
                c.evidence.ratio_rays = e.ratio_rays().map(|(lo, hi)| {
                    let positive = a.iter().chain(b).all(|&x| x > 0.0);
                    (if positive { lo.max(0.0) } else { lo }, hi)
                });
                c.notes.push(format!("Fieller interval: {e}"));
            }
        }
        c.details.fieller90 = fieller(equivalence).ok();
        c.evidence.ci95 = c.details.fieller95.map(|ci| (ci.low, ci.high));
        c.evidence.ci90 = c.details.fieller90.map(|ci| (ci.low, ci.high));
        c.evidence.p = c.p_welch;
    }

    /// The robust cross-checks: Mann-Whitney, Hodges-Lehmann and the bootstrap.
    fn robust_cross_checks(&mut self) {
        let (a, b, opts, c) = (self.base.values, self.var.values, self.opts, &mut self.c);
        let d = &mut c.details;
        d.mann_whitney = rank::mann_whitney(a, b, None).ok();
        c.p_mannwhitney = d.mann_whitney.as_ref().map(|m| m.p);
        d.hodges_lehmann = rank::hodges_lehmann(a, b, LEVEL).ok();
        c.hodges_lehmann = d.hodges_lehmann.as_ref().map(|h| h.shift);
        c.hodges_lehmann_ci = d.hodges_lehmann.as_ref().and_then(|h| h.ci).map(pair);
        if opts.resamples > 0 {
            match bootstrap::bootstrap(a, b, opts.resamples, opts.seed, LEVEL) {
                Ok(bs) => {
                    c.sd_ratio_ci = bs.sd_ratio.as_ref().ok().map(|ci| [ci.low, ci.high]);
                    d.bootstrap = Some(bs);
                }
                Err(e) => c.notes.push(format!("bootstrap: {e}")),
            }
        }
    }

    /// Variability: the Brown-Forsythe test of equal spread.
    fn variability(&mut self) {
        let c = &mut self.c;
        match brown_forsythe(&[self.base.values, self.var.values]) {
            Ok(bf) => {
                c.p_brown_forsythe = Some(bf.p);
                c.details.brown_forsythe = Some(bf);
            }
            Err(e) => c.notes.push(format!("Brown-Forsythe: {e}")),
        }
    }

    /// Equivalence: TOST within the margin.
    fn equivalence(&mut self) {
        let margin = self.opts.margin_pct / 100.0;
        self.c.details.tost = equivalence::tost(self.base.values, self.var.values, margin).ok();
    }

    /// Drift over the run order (when it is known): Mann-Kendall, reported; and the ANCOVA with
    /// run index as the primary analysis whenever the order is known, chosen before the data are
    /// seen (issue 45: a screen that switched to it on a Mann-Kendall hit called 7.84% of the A/A
    /// pairs it switched at alpha 0.05; docs/statistics.md#drift).
    fn drift(&mut self) {
        let (Some(ia), Some(ib)) = (self.base.order, self.var.order) else {
            return;
        };
        let (a, b) = (self.base.values, self.var.values);
        let mut trend = None;
        match drift::drift(a, ia, b, ib) {
            Ok(d) => {
                self.c.drift_p = Some(d.mann_kendall.p);
                trend = Some(d.mann_kendall.p).filter(|&p| p < self.opts.alpha);
                self.c.details.drift = Some(d);
            }
            Err(e) => self.c.notes.push(format!("drift: {e}")),
        }
        if self.opts.welch_only {
            if let Some(p) = trend {
                self.c.notes.push(format!(
                    "drift over the run order (Mann-Kendall {}); Welch stays primary: the \
                     stopping rule judged with it",
                    fmt_p(p)
                ));
            }
        } else {
            self.ancova_primary(ia, ib, trend);
        }
    }

    /// Make the ANCOVA with run index (`ia`, `ib`) the primary evidence; `trend` is the
    /// Mann-Kendall p when it found drift at alpha (named in a note). Welch stays primary when
    /// the ANCOVA fails, and a note says why.
    fn ancova_primary(&mut self, ia: &[f64], ib: &[f64], trend: Option<f64>) {
        let (a, b, c) = (self.base.values, self.var.values, &mut self.c);
        let at = |level| drift::ancova(a, ia, b, ib, level);
        let ev = &c.evidence;
        match (at(ev.ci_level()), at(ev.equivalence_level())) {
            (Ok(mut an95), Ok(mut an90)) => {
                if a.iter().chain(b).all(|&x| x > 0.0) {
                    an95.ratio_ci.0 = an95.ratio_ci.0.max(0.0);
                    an90.ratio_ci.0 = an90.ratio_ci.0.max(0.0);
                }
                if let Some(p) = trend {
                    c.notes.push(format!(
                        "drift over the run order (Mann-Kendall {}): the ANCOVA with run index, \
                         primary whenever the run order is known, adjusts for it",
                        fmt_p(p)
                    ));
                }
                let ev = &mut c.evidence;
                ev.ratio = an95.ratio;
                ev.ci95 = Some(an95.ratio_ci);
                ev.ci90 = Some(an90.ratio_ci);
                ev.ratio_unbounded = false;
                ev.ratio_rays = None;
                ev.p = Some(an95.p);
                ev.method = "ANCOVA".into();
                c.primary = "ancova".into();
                c.details.ancova = Some(an95);
            }
            (Err(e), _) | (_, Err(e)) => c.notes.push(format!(
                "ANCOVA with run index failed: {e}; Welch stays primary"
            )),
        }
    }

    /// The smallest change detectable with these runs, for the verdict's sentence.
    fn detectable_effect(&mut self) {
        let n = self.base.values.len().min(self.var.values.len());
        if let Some(d) = detectable_effect(n, self.opts.alpha, self.opts.power) {
            self.c.evidence.detectable_pct = Some(d * self.cv_pct);
        }
    }

    /// DISAGREE: a difference the primary analysis calls at alpha (before any correction) that
    /// a robust check does not confirm, each in its own words. It qualifies a call; it never
    /// makes one: when only the robust checks see a difference, nothing is flagged (their
    /// figures stay in the detail lines). Flagging that case too put a headline or DISAGREE
    /// call on 6.75-9.5% of A/A pairs at alpha 0.05, the bootstrap's small-n intervals most of
    /// them.
    fn disagreement(&mut self) {
        let (alpha, c) = (self.opts.alpha, &mut self.c);
        let ev = &c.evidence;
        let primary_sig = ev.p.is_some_and(|p| p < alpha) && ev.excludes_one();
        if !primary_sig {
            return;
        }
        let mut dissent = Vec::new();
        if let Some(mw) = &c.details.mann_whitney
            && mw.p >= alpha
        {
            dissent.push(format!("Mann-Whitney {}", fmt_p(mw.p)));
        }
        if let Some(Ok(ci)) = c.details.bootstrap.as_ref().map(|b| &b.ratio_means)
            && ci.low <= 1.0
            && ci.high >= 1.0
        {
            dissent.push(format!(
                "the bootstrap {} CI of the ratio {:.4}..{:.4} includes 1",
                level_label(ci.level),
                ci.low,
                ci.high
            ));
        }
        if !dissent.is_empty() {
            c.disagree = Some(format!(
                "DISAGREE at alpha {alpha}: {}; {}; more runs recommended",
                primary_words(ev),
                dissent.join("; ")
            ));
        }
    }

    /// Outliers: Yuen's trimmed-means test when a sample holds severe ones (worded once the
    /// verdict is known, by [`Judging::verdict`]).
    fn outlier_recheck(&mut self) {
        let (opts, c) = (self.opts, &mut self.c);
        let (sa, sb) = (
            c.details.outliers_baseline.severe_count(),
            c.details.outliers_variant.severe_count(),
        );
        if !(opts.outlier_recheck && (sa > 0 || sb > 0)) {
            return;
        }
        match trimmed::yuen(self.base.values, self.var.values, TRIM) {
            Ok(y) => {
                c.details.without_severe_outliers = Some(OutlierRecheck {
                    severe_baseline: sa,
                    severe_variant: sb,
                    significant: y.p < opts.alpha,
                    changed: false,
                    line: String::new(),
                    yuen: y,
                })
            }
            Err(e) => c.notes.push(format!("trimmed-means check: {e}")),
        }
    }

    /// The verdict and its line from the evidence (no correction yet), and the outlier check's
    /// sentence against that verdict (`finish` words it again after a correction).
    fn verdict(mut self) -> Comparison {
        let c = &mut self.c;
        c.p_adjusted = c.evidence.p;
        finish(c);
        recheck_words(c);
        self.c
    }
}

/// The outlier check's sentence against the verdict as it stands. Yuen's p is compared with
/// alpha; inside a family of m tests with alpha / m (Bonferroni, which no Holm or BH adjusted p
/// is below), so the check never claims a difference the correction would not let stand.
fn recheck_words(c: &mut Comparison) {
    let significant = matches!(c.verdict, Verdict::Faster | Verdict::Slower);
    let direction = c.ratio > 1.0;
    let alpha = c.options.alpha;
    let family = !c.evidence.correction.is_empty() && c.m > 1;
    let Some(r) = c.details.without_severe_outliers.as_mut() else {
        return;
    };
    let y = &r.yuen;
    let trimmed_significant = if family {
        y.p * (c.m as f64) < alpha
    } else {
        r.significant
    };
    r.changed = trimmed_significant != significant || (significant && (y.ratio > 1.0) != direction);
    let at = if family {
        format!("at alpha {alpha} after the correction for m={} tests", c.m)
    } else {
        format!("at alpha {alpha}")
    };
    let p = if family {
        format!("{} uncorrected", fmt_p(y.p))
    } else {
        fmt_p(y.p)
    };
    r.line = format!(
        "trimmed means ({:.0}% of each tail of both samples cut): ratio {:.5}, {p}: {}",
        y.trim * 100.0,
        y.ratio,
        match (r.changed, trimmed_significant) {
            (false, _) => "the same conclusion".to_string(),
            (true, true) => format!(
                "a difference {at} that all runs together do not show; the verdict stands on all runs"
            ),
            (true, false) =>
                format!("no difference {at}: the verdict rests on a few extreme runs; look at them"),
        }
    );
}

/// A ratio of two means of positive values is positive: Fieller's set, which can reach below 0
/// when the variant's mean is noisy ("-110.08%..+257.14%" of a throughput), is cut at 0.
fn positive_ratio(a: &[f64], b: &[f64], mut ci: RatioCi) -> RatioCi {
    if a.iter().chain(b).all(|&x| x > 0.0) {
        ci.low = ci.low.max(0.0);
    }
    ci
}

/// The primary analysis in a DISAGREE sentence: its p and whether its 95% interval of the ratio
/// excludes 1.
fn primary_words(ev: &Evidence) -> String {
    let p = ev.p.map(fmt_p).unwrap_or_else(|| "p=n/a".into());
    match ev.ci95 {
        Some((lo, hi)) => {
            let word = if hi < 1.0 || lo > 1.0 {
                "excludes"
            } else {
                "includes"
            };
            format!(
                "{} {p}, {} CI of the ratio {lo:.4}..{hi:.4} {word} 1",
                ev.method,
                ev.ci_label()
            )
        }
        None => format!(
            "{} {p} but no bounded {} CI of the ratio",
            ev.method,
            ev.ci_label()
        ),
    }
}

/// (Re)compute verdict, runs needed and line from the evidence.
fn finish(c: &mut Comparison) {
    if c.evidence.p.is_none() {
        return; // degenerate cases keep their own line
    }
    c.verdict = c.evidence.decide();
    c.runs_needed = (c.verdict == Verdict::Inconclusive)
        .then_some(c.evidence.runs_needed)
        .flatten();
    // DISAGREE qualifies a call: once a correction has taken the call away, the robust checks'
    // uncorrected dissent has nothing to qualify and would read as a finding of its own.
    if !matches!(c.verdict, Verdict::Faster | Verdict::Slower) {
        c.disagree = None;
    }
    recheck_words(c);
    c.line = c.evidence.line(c.verdict);
    if let Some(v) = c.variability_text() {
        c.line += &format!("; {v}");
    }
    if let Some(d) = &c.disagree {
        c.line += &format!("; {d}");
    }
    if let Some(h) = c
        .details
        .hosts
        .as_ref()
        .and_then(|h| h.heterogeneity.as_ref())
    {
        c.line += &format!("; {h}");
    }
}

impl Comparison {
    /// The level of `sd_ratio_ci`: the bootstrap's, which computed it.
    pub fn sd_ratio_level(&self) -> Option<f64> {
        let bs = self.details.bootstrap.as_ref()?;
        bs.sd_ratio.as_ref().ok().map(|ci| ci.level)
    }

    /// Recompute verdict and sentence after the evidence changed.
    pub(crate) fn refresh(&mut self) {
        finish(self);
    }

    /// "run-to-run SD 3.50x A's (95% CI 2.10x..5.84x, Brown-Forsythe p=0.0004 Holm m=36)" when
    /// variability was tested and differs at alpha after the correction.
    pub fn variability_text(&self) -> Option<String> {
        let p = self.p_variability_adjusted?;
        let r = self.sd_ratio?;
        if p >= self.options.alpha {
            return None;
        }
        let ci = self
            .sd_ratio_ci
            .zip(self.sd_ratio_level())
            .map(|([l, h], level)| {
                format!(
                    "{} CI {}..{}, ",
                    level_label(level),
                    fmt_times(l),
                    fmt_times(h)
                )
            })
            .unwrap_or_default();
        let corr = if self.evidence.correction.is_empty() {
            String::new()
        } else {
            format!(" {}", self.evidence.correction)
        };
        Some(format!(
            "run-to-run SD {} {}'s ({ci}Brown-Forsythe {}{corr})",
            fmt_times(r),
            self.baseline,
            fmt_p(p)
        ))
    }
}

/// Adjust the p-values of a family of tests (several variants, pairs, metrics; the mean of
/// each comparison, and its variability when `variability`) together, and recompute the
/// verdicts. Comparisons without a p-value are left out of the family.
pub fn apply_correction(comps: &mut [Comparison], correction: Correction, variability: bool) {
    // (comparison, is the variability test)
    let mut tests: Vec<(usize, bool)> = (0..comps.len())
        .filter(|&i| comps[i].evidence.p.is_some())
        .map(|i| (i, false))
        .collect();
    if variability {
        tests.extend(
            (0..comps.len())
                .filter(|&i| comps[i].p_brown_forsythe.is_some())
                .map(|i| (i, true)),
        );
    }
    let m = tests.len();
    let raw: Vec<f64> = tests
        .iter()
        .map(|&(i, v)| {
            if v {
                comps[i].p_brown_forsythe.unwrap_or(1.0)
            } else {
                raw_p(&comps[i])
            }
        })
        .collect();
    let adj = correction.adjust(&raw);
    let label = if m > 1 && correction != Correction::None {
        let short = if correction == Correction::Holm {
            "Holm"
        } else {
            "BH"
        };
        format!("{short} m={m}")
    } else {
        String::new()
    };
    for c in comps.iter_mut() {
        c.m = m;
        c.correction = correction.name().into();
        c.evidence.correction = label.clone();
    }
    for (k, &(i, v)) in tests.iter().enumerate() {
        let c = &mut comps[i];
        if v {
            c.p_variability_adjusted = Some(adj[k]);
        } else {
            c.p_adjusted = Some(adj[k]);
            c.evidence.p = Some(adj[k]);
        }
    }
    for c in comps.iter_mut() {
        finish(c);
    }
}

/// The unadjusted primary p-value.
fn raw_p(c: &Comparison) -> f64 {
    match (&c.details.ancova, &c.details.hosts, c.primary.as_str()) {
        (Some(an), _, "ancova") => an.p,
        (_, Some(h), "hosts") => h.combined.p,
        _ => c.p_welch.unwrap_or(1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The user-time column of the 24 `/usr/bin/time` lines of seed 000 (Dave Hansen, 2017).
    fn seed000() -> (Vec<f64>, Vec<f64>) {
        let text = include_str!("../../../tests/data/seed000-time.txt");
        let (mut n, mut y) = (Vec::new(), Vec::new());
        for line in text.lines() {
            let mut f = line.trim_start_matches("> ").split_whitespace();
            let label = f.next().unwrap();
            let user: f64 = f.next().unwrap().parse().unwrap();
            if label == "n" {
                n.push(user)
            } else {
                y.push(user)
            }
        }
        (n, y)
    }

    #[test]
    fn huge_and_tiny_values_give_the_same_answer_as_ordinary_ones() {
        let (n, y) = seed000();
        let plain = compare(
            "user",
            Sample::new("n", &n),
            Sample::new("y", &y),
            &Options::default(),
        )
        .unwrap();
        for k in [1e80, 1e150, 1e-75, 1e-170] {
            let (a, b): (Vec<f64>, Vec<f64>) = (
                n.iter().map(|x| x * k).collect(),
                y.iter().map(|x| x * k).collect(),
            );
            let c = compare(
                "user",
                Sample::new("n", &a),
                Sample::new("y", &b),
                &Options::default(),
            )
            .unwrap();
            assert_eq!(c.verdict, plain.verdict, "scale {k}: {}", c.line);
            assert!((c.ratio / plain.ratio - 1.0).abs() < 1e-12, "scale {k}");
            let (p, q) = (c.p_welch.unwrap(), plain.p_welch.unwrap());
            assert!((p / q - 1.0).abs() < 1e-6, "scale {k}: p {p} vs {q}");
            assert!((c.mean_baseline / (plain.mean_baseline * k) - 1.0).abs() < 1e-12);
            assert!(
                c.details.baseline.sd > 0.0,
                "scale {k}: variance underflowed"
            );
        }
        let wide = [1e-200, 1e200, 1.0, 2.0];
        let e = compare(
            "x",
            Sample::new("a", &wide),
            Sample::new("b", &wide),
            &Options::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("wider than the arithmetic"), "{e}");
    }

    /// A 10 ms sleep with one 80 ms run (CV 116%) against an 80 ms sleep, judged at a sequential
    /// first look's alpha: the baseline mean is not different from 0 at 1 - alpha, so Fieller's
    /// set is unbounded, yet it excludes 1 as Welch does (p ~ 6e-6): SLOWER, its size unbounded
    /// (it was INCONCLUSIVE beside the stopping rule's "decided").
    #[test]
    fn an_unbounded_ratio_set_still_calls_what_welch_calls() {
        let a = [
            11.26, 11.07, 11.2, 15.12, 79.68, 11.1, 11.3, 12.73, 11.25, 11.29,
        ];
        let b = [
            83.3, 82.56, 81.2, 83.66, 81.11, 81.3, 81.34, 81.2, 82.63, 81.34,
        ];
        let opts = Options {
            alpha: 4.857e-5,
            ..Options::default()
        };
        let c = compare("wall", Sample::new("a", &a), Sample::new("b", &b), &opts).unwrap();
        assert!(c.evidence.ci95.is_none() && c.evidence.ratio_unbounded);
        assert!(c.p_welch.unwrap() < opts.alpha, "{:?}", c.p_welch);
        assert_eq!(c.verdict, Verdict::Slower, "{}", c.line);
        assert!(
            c.line.contains("confidence set of the ratio unbounded"),
            "{}",
            c.line
        );
        // At the default alpha the interval is bounded and the call the same.
        let c = compare(
            "wall",
            Sample::new("a", &a),
            Sample::new("b", &b),
            &Options::default(),
        );
        let c = c.unwrap();
        assert!(c.evidence.ci95.is_some() && !c.evidence.ratio_unbounded);
        assert_eq!(c.verdict, Verdict::Slower, "{}", c.line);
    }

    /// Issue 45: with a run order the ANCOVA with run index is the primary test whether or not
    /// Mann-Kendall finds drift (chosen before the data are seen); the drift note appears only
    /// when it does; a sequential experiment (`welch_only`) keeps Welch.
    #[test]
    fn a_run_order_makes_the_ancova_primary_whatever_the_trend_test_says() {
        let a: Vec<f64> = (0..10)
            .map(|i| 100.0 + [0.3, -0.2, 0.1, -0.4, 0.2][i % 5])
            .collect();
        let b: Vec<f64> = a.iter().rev().map(|x| x + 0.1).collect();
        let ia: Vec<f64> = (0..10).map(|i| (2 * i) as f64).collect();
        let ib: Vec<f64> = (0..10).map(|i| (2 * i + 1) as f64).collect();
        let o = Options {
            resamples: 0,
            ..Options::default()
        };
        let flat = compare(
            "t",
            Sample::with_order("A", &a, &ia),
            Sample::with_order("B", &b, &ib),
            &o,
        )
        .unwrap();
        assert!(flat.drift_p.unwrap() >= o.alpha, "{:?}", flat.drift_p);
        assert_eq!(
            (flat.evidence.method.as_str(), flat.primary.as_str()),
            ("ANCOVA", "ancova")
        );
        assert!(flat.line.contains(", ANCOVA)"), "{}", flat.line);
        assert!(
            !flat.notes.iter().any(|n| n.contains("Mann-Kendall")),
            "{:?}",
            flat.notes
        );
        // a +3% linear drift over the run order: the same test, and a note naming the trend
        let drift = |x: &[f64], ix: &[f64]| -> Vec<f64> {
            x.iter()
                .zip(ix)
                .map(|(v, t)| v * (1.0 + 0.0015 * t))
                .collect()
        };
        let (da, db) = (drift(&a, &ia), drift(&b, &ib));
        let d = compare(
            "t",
            Sample::with_order("A", &da, &ia),
            Sample::with_order("B", &db, &ib),
            &o,
        )
        .unwrap();
        assert!(d.drift_p.unwrap() < o.alpha, "{:?}", d.drift_p);
        assert_eq!(d.evidence.method, "ANCOVA");
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains("Mann-Kendall") && n.contains("adjusts for it")),
            "{:?}",
            d.notes
        );
        let w = Options {
            welch_only: true,
            ..o.clone()
        };
        let seq = compare(
            "t",
            Sample::with_order("A", &da, &ia),
            Sample::with_order("B", &db, &ib),
            &w,
        )
        .unwrap();
        assert_eq!(seq.evidence.method, "Welch");
        // without a run order: Welch
        let none = compare("t", Sample::new("A", &a), Sample::new("B", &b), &o).unwrap();
        assert_eq!(none.evidence.method, "Welch");
    }

    /// Issue 45: every printed estimate inside its printed interval, or the interval said to be
    /// unbounded. Noisy positive samples (some with a baseline mean indistinguishable from 0),
    /// at alpha 0.05 and 0.01: the ratio is inside its bounded interval, never below 0, or the
    /// line names the unbounded set (two rays holding the estimate, one ray, or every ratio).
    #[test]
    fn every_estimate_is_inside_its_interval_or_the_set_is_named_unbounded() {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(45);
        let (mut bounded, mut rays) = (0, 0);
        for i in 0..400 {
            let (ma, mb, sd) = (
                1.0 + (i % 5) as f64,
                1.0 + (i % 7) as f64,
                0.5 + (i % 9) as f64,
            );
            let mut draw = |m: f64| -> Vec<f64> {
                (0..6)
                    .map(|_| (m + sd * crate::reference::normal(&mut rng)).abs() + 1e-3)
                    .collect()
            };
            let (a, b) = (draw(ma), draw(mb));
            for alpha in [0.05, 0.01] {
                let o = Options {
                    alpha,
                    resamples: 0,
                    ..Options::default()
                };
                let c = compare("t", Sample::new("A", &a), Sample::new("B", &b), &o).unwrap();
                let e = &c.evidence;
                match (e.ci95, e.ratio_rays) {
                    (Some((lo, hi)), _) => {
                        bounded += 1;
                        assert!(0.0 <= lo && lo <= e.ratio && e.ratio <= hi, "{}", c.line);
                    }
                    (None, Some((lo, hi))) => {
                        rays += 1;
                        assert!(e.ratio <= lo || e.ratio >= hi, "{} {lo} {hi}", e.ratio);
                        assert!(c.line.contains(" ray"), "{}", c.line);
                    }
                    (None, None) => {
                        assert!(e.ratio_unbounded, "{}", c.line);
                        assert!(c.line.contains("ratio unbounded"), "{}", c.line);
                    }
                }
            }
        }
        assert!(bounded > 100 && rays > 10, "{bounded} bounded, {rays} rays");
    }

    #[test]
    fn seed000_invpcid_is_058_percent_faster() {
        let (n, y) = seed000();
        assert_eq!((n.len(), y.len()), (12, 12));
        let c = compare(
            "user",
            Sample::new("n", &n),
            Sample::new("y", &y),
            &Options::default(),
        )
        .unwrap();
        assert_eq!(c.verdict, Verdict::Faster);
        assert_eq!(format!("{:.2}", -c.change_pct), "0.58");
        assert!(c.p_welch.unwrap() < 0.0001, "Welch p = {:?}", c.p_welch);
        assert!(
            c.p_brown_forsythe.unwrap() > 0.05,
            "Brown-Forsythe p = {:?}",
            c.p_brown_forsythe
        );
        assert!(
            c.line.starts_with("y is 0.58% faster than n (95% CI "),
            "{}",
            c.line
        );
        assert!(
            c.line.ends_with(", p<0.0001, n=12+12, Welch)"),
            "{}",
            c.line
        );
        assert!(c.disagree.is_none(), "{:?}", c.disagree);
        let [lo, hi] = c.ratio_ci.unwrap();
        assert!(lo < c.ratio && c.ratio < hi && hi < 1.0);
        let bs = c.details.bootstrap.as_ref().unwrap();
        let bm = bs.ratio_means.as_ref().unwrap();
        assert!(bm.high < 1.0 && (bm.low - lo).abs() < 0.001);
        assert!(c.runs_needed.is_none());
        // Serializes with the fields of issue 3 and no NaN.
        let j = serde_json::to_value(&c).unwrap();
        for key in [
            "baseline",
            "variant",
            "metric",
            "n_baseline",
            "n_variant",
            "mean_baseline",
            "mean_variant",
            "ratio",
            "ratio_ci",
            "change_pct",
            "p_welch",
            "p_mannwhitney",
            "hodges_lehmann",
            "p_brown_forsythe",
            "sd_ratio",
            "drift_p",
            "p_adjusted",
            "verdict",
            "runs_needed",
            "line",
        ] {
            assert!(j.get(key).is_some(), "missing {key}");
        }
        assert_eq!(j["verdict"], "faster");
    }

    #[test]
    fn edge_cases_give_messages_not_nan() {
        let o = Options {
            resamples: 200,
            ..Options::default()
        };
        // n < 4: description only.
        let c = compare(
            "t",
            Sample::new("A", &[1.0, 2.0, 3.0]),
            Sample::new("B", &[1.0, 2.0, 3.5, 4.0]),
            &o,
        )
        .unwrap();
        assert_eq!(c.verdict, Verdict::Inconclusive);
        assert!(c.line.starts_with("Description only: B vs A"), "{}", c.line);
        assert!(c.p_welch.is_none());
        // The same on boot means says what its n counts.
        let boots = Options {
            counted: Counted::Means("boot"),
            ..o.clone()
        };
        let b = compare(
            "t",
            Sample::new("A", &[1.0, 2.0, 3.0]),
            Sample::new("B", &[1.0, 2.0, 3.5, 4.0]),
            &boots,
        )
        .unwrap();
        assert!(
            b.line
                .contains("(n=3+4 boots); at least 4 boots per variant are needed"),
            "{}",
            b.line
        );
        // Identical constant samples.
        let c = compare(
            "t",
            Sample::new("A", &[5.0; 6]),
            Sample::new("B", &[5.0; 6]),
            &o,
        )
        .unwrap();
        assert_eq!(c.verdict, Verdict::NoDifference);
        assert!(c.line.contains("same value"), "{}", c.line);
        // Different constants.
        let c = compare(
            "t",
            Sample::new("A", &[5.0; 6]),
            Sample::new("B", &[6.0; 6]),
            &o,
        )
        .unwrap();
        assert_eq!(c.verdict, Verdict::Inconclusive);
        assert!(c.line.contains("zero variance"), "{}", c.line);
        // One sample constant, the other not: Welch still works.
        let c = compare(
            "t",
            Sample::new("A", &[5.0; 6]),
            Sample::new("B", &[5.1, 5.2, 5.1, 5.3, 5.2, 5.1]),
            &o,
        )
        .unwrap();
        assert!(c.p_welch.is_some() && c.sd_ratio.is_none());
        // Identical non-constant samples.
        let x = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0];
        let c = compare("t", Sample::new("A", &x), Sample::new("B", &x), &o).unwrap();
        assert_eq!(c.p_welch, Some(1.0));
        assert_eq!(c.verdict, Verdict::Inconclusive);
        // Errors.
        assert!(
            compare(
                "t",
                Sample::new("A", &[f64::NAN, 1.0]),
                Sample::new("B", &x),
                &o
            )
            .is_err()
        );
        assert!(
            compare(
                "t",
                Sample::new("A", &[-1.0, -2.0, -1.0, -3.0]),
                Sample::new("B", &x),
                &o
            )
            .is_err()
        );
        // No NaN anywhere (serde_json would print NaN as null, so check the numbers themselves).
        let j = serde_json::to_value(&c).unwrap();
        assert!(c.ratio.is_finite() && c.change_pct.is_finite() && !c.line.contains("NaN"));
        assert!(j["ratio"].is_number() && j["mean_baseline"].is_number());
    }

    #[test]
    fn severe_outlier_recheck_and_correction() {
        let a: Vec<f64> = (0..12).map(|i| 100.0 + (i % 4) as f64 * 0.1).collect();
        let mut b: Vec<f64> = (0..12).map(|i| 100.3 + (i % 4) as f64 * 0.1).collect();
        b[3] = 130.0;
        let o = Options {
            resamples: 0,
            ..Options::default()
        };
        let c = compare("t", Sample::new("A", &a), Sample::new("B", &b), &o).unwrap();
        let r = c.details.without_severe_outliers.as_ref().unwrap();
        assert_eq!((r.severe_baseline, r.severe_variant), (0, 1));
        assert!(r.significant, "{}", r.line);
        assert!(
            r.changed,
            "with the outlier Welch is inconclusive: {}",
            c.line
        );
        assert_eq!(
            c.verdict,
            Verdict::Inconclusive,
            "the note never changes the verdict"
        );
        // Correction over a family.
        let b2: Vec<f64> = a.iter().map(|x| x * 1.003).collect();
        let mut fam = vec![
            c.clone(),
            compare("t", Sample::new("A", &a), Sample::new("C", &b2), &o).unwrap(),
        ];
        let raw = fam[1].p_welch.unwrap();
        apply_correction(&mut fam, Correction::Holm, false);
        assert_eq!(fam[1].m, 2);
        assert!(fam[1].p_adjusted.unwrap() >= raw);
        assert!(fam[1].line.contains("Holm m=2"), "{}", fam[1].line);
    }

    #[test]
    fn outlier_check_does_not_manufacture_differences_between_aa_pairs() {
        // Two samples of one bimodal distribution (90% of runs near 100, 10% near 130): dropping
        // one sample's slow runs called a difference in 17% (n=10) and 41% (n=30) of such pairs.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(20261122);
        let normal = |rng: &mut rand_chacha::ChaCha8Rng| {
            crate::dist::norm_ppf(rng.random_range(1e-12..1.0 - 1e-12))
        };
        let mut draw = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|_| {
                    let slow = rng.random_range(0.0..1.0) < 0.1;
                    (if slow { 130.0 } else { 100.0 }) + normal(&mut rng)
                })
                .collect()
        };
        let o = Options {
            resamples: 0,
            ..Options::default()
        };
        for n in [10, 30] {
            let (mut checked, mut changed, mut called) = (0, 0, 0);
            for _ in 0..100 {
                let (a, b) = (draw(n), draw(n));
                let c = compare("t", Sample::new("A", &a), Sample::new("B", &b), &o).unwrap();
                if let Some(r) = &c.details.without_severe_outliers {
                    checked += 1;
                    changed += usize::from(r.changed);
                    called += usize::from(r.significant);
                }
            }
            assert!(checked > 20, "n={n}: the check ran on {checked} pairs only");
            assert!(
                changed <= 10,
                "n={n}: {changed} of 100 A/A pairs changed ({called} called)"
            );
        }
    }

    #[test]
    fn ratio_intervals_of_positive_values_stay_above_zero() {
        // A noisy variant mean: Fieller's bounded set reached -110% (a ratio below 0).
        let a = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2];
        let b = [1.0, 250.0, 3.0, 180.0, 2.0, 1.5];
        let o = Options {
            alpha: 0.01,
            resamples: 0,
            ..Options::default()
        };
        let raw = welch::fieller(&a, &b, 0.99).unwrap();
        assert!(raw.low < 0.0, "{raw:?}");
        let c = compare("t", Sample::new("A", &a), Sample::new("B", &b), &o).unwrap();
        let (lo, hi) = c.evidence.ci95.unwrap();
        assert!(
            lo == 0.0 && lo <= c.ratio && c.ratio <= hi,
            "{lo} {hi} {}",
            c.ratio
        );
        assert!(c.details.fieller90.unwrap().low >= 0.0);
        assert!(c.line.contains("(99% CI -100.00%.."), "{}", c.line);
        // Values that can be negative keep the whole set.
        let bn: Vec<f64> = b.iter().map(|x| x - 1.2).collect();
        let c = compare("t", Sample::new("A", &a), Sample::new("B", &bn), &o).unwrap();
        assert!(c.evidence.ci95.unwrap().0 < 0.0);
    }

    #[test]
    fn aa_family_tables_print_no_claim_the_correction_does_not_make() {
        // Seed 001's design on A/A data: 6 families of 3 variants of 31 lognormal runs, every
        // pair on the mean and the variability, Holm over m=36 at alpha 0.01. A DISAGREE line
        // only beside a call the corrected verdict made, no variability sentence but from the
        // corrected p, no trimmed-means "difference" the correction would not let stand; and
        // at most about 1% of tables with any claim (before: 7 of 200 had a DISAGREE line on
        // an INCONCLUSIVE verdict).
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(45);
        let mut draw = || -> Vec<f64> {
            (0..31)
                .map(|_| (0.3 * crate::dist::norm_ppf(rng.random_range(1e-12..1.0 - 1e-12))).exp())
                .collect()
        };
        let o = Options {
            alpha: 0.01,
            resamples: 100,
            ..Options::default()
        };
        let (tables, mut with_claims, mut disagree) = (200, 0, 0);
        for _ in 0..tables {
            let mut comps = Vec::new();
            for _family in 0..6 {
                let v = [draw(), draw(), draw()];
                for (i, j) in [(0, 1), (0, 2), (1, 2)] {
                    let (a, b) = (Sample::new("A", &v[i]), Sample::new("B", &v[j]));
                    comps.push(compare("t", a, b, &o).unwrap());
                }
            }
            apply_correction(&mut comps, Correction::Holm, true);
            let mut claims = 0;
            for c in &comps {
                assert_eq!(c.m, 36);
                let called = matches!(c.verdict, Verdict::Faster | Verdict::Slower);
                assert!(c.disagree.is_none() || called, "{}", c.line);
                assert_eq!(
                    c.line.contains("DISAGREE"),
                    c.disagree.is_some(),
                    "{}",
                    c.line
                );
                disagree += usize::from(c.disagree.is_some());
                let varies = c.p_variability_adjusted.is_some_and(|p| p < o.alpha);
                assert_eq!(c.variability_text().is_some(), varies, "{}", c.line);
                let recheck = c.details.without_severe_outliers.as_ref();
                let trimmed_claim = recheck.is_some_and(|r| r.changed && !called);
                if let Some(r) = recheck.filter(|_| trimmed_claim) {
                    assert!(r.yuen.p * 36.0 < o.alpha, "{}", r.line);
                    assert!(
                        r.line.contains("after the correction for m=36"),
                        "{}",
                        r.line
                    );
                }
                claims += usize::from(called || varies || trimmed_claim);
            }
            with_claims += usize::from(claims > 0);
        }
        // 1% of 200 is 2; 7 or more has a probability below 0.5%.
        assert!(
            with_claims <= 6,
            "{with_claims} of {tables} A/A tables print a claim ({disagree} DISAGREE)"
        );
    }

    #[test]
    fn aa_pairs_get_no_call_but_the_headline_s() {
        // Every printed call (the verdict, or a DISAGREE line) on A/A pairs of lognormal runs,
        // n=10, with the bootstrap on: the DISAGREE line alone put the rate at 6.75-9.5%.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(26);
        let mut draw = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|_| (0.3 * crate::dist::norm_ppf(rng.random_range(1e-12..1.0 - 1e-12))).exp())
                .collect()
        };
        let o = Options {
            resamples: 200,
            ..Options::default()
        };
        let (pairs, mut calls, mut disagree) = (400, 0, 0);
        for _ in 0..pairs {
            let (a, b) = (draw(10), draw(10));
            let c = compare("t", Sample::new("A", &a), Sample::new("B", &b), &o).unwrap();
            let called = matches!(c.verdict, Verdict::Faster | Verdict::Slower);
            assert!(c.disagree.is_none() || called, "{}", c.line);
            calls += usize::from(called);
            disagree += usize::from(c.disagree.is_some());
        }
        // 5% of 400 is 20; 34 is beyond it with probability below 0.1%.
        assert!(
            calls <= 34,
            "{calls} of {pairs} A/A pairs called ({disagree} DISAGREE)"
        );
    }

    #[test]
    fn a_robust_check_alone_makes_no_call() {
        // One huge value drives the mean (Welch sees nothing) while every other run of B is
        // slower (Mann-Whitney sees it): the headline made no call, so nothing is flagged.
        let a: Vec<f64> = (0..10).map(|i| 100.0 + (i % 5) as f64 * 0.01).collect();
        let mut b: Vec<f64> = (0..10).map(|i| 100.2 + (i % 5) as f64 * 0.01).collect();
        b[0] = 60.0;
        let o = Options {
            resamples: 0,
            outlier_recheck: false,
            ..Options::default()
        };
        let c = compare("t", Sample::new("A", &a), Sample::new("B", &b), &o).unwrap();
        assert!(c.p_mannwhitney.unwrap() < 0.05 && c.p_welch.unwrap() > 0.05);
        assert!(c.disagree.is_none(), "{:?}", c.disagree);
        assert!(!c.line.contains("DISAGREE"), "{}", c.line);
    }

    #[test]
    fn disagree_qualifies_a_call_the_rank_test_does_not_confirm() {
        // A tenth of B's runs 1.0 slower move its mean (Welch calls it) while the ranks of
        // the other nine tenths are A's.
        let a: Vec<f64> = (0..60).map(|i| 100.0 + i as f64 * 0.001).collect();
        let b: Vec<f64> = a
            .iter()
            .enumerate()
            .map(|(i, x)| if i % 10 == 0 { x + 1.0 } else { *x })
            .collect();
        let o = Options {
            resamples: 0,
            outlier_recheck: false,
            ..Options::default()
        };
        let c = compare("t", Sample::new("A", &a), Sample::new("B", &b), &o).unwrap();
        assert!(c.p_welch.unwrap() < 0.05, "{:?}", c.p_welch);
        assert!(c.p_mannwhitney.unwrap() >= 0.05, "{:?}", c.p_mannwhitney);
        let d = c.disagree.as_deref().unwrap();
        assert_eq!(
            d,
            "DISAGREE at alpha 0.05: Welch p=0.013, 95% CI of the ratio 1.0002..1.0018 excludes 1; \
             Mann-Whitney p=0.28; more runs recommended"
        );
        assert!(d.contains("excludes 1; Mann-Whitney p="), "{d}");
        assert!(c.line.contains("; DISAGREE"), "{}", c.line);
    }
}
