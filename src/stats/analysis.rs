//! The analysis shared by `abperf compare`, `abperf run`'s closing verdicts and `abperf report`:
//! every variant against the baseline on every metric of a [`Dataset`], corrected across the
//! family. Pure computation: loading the data is the store's job, printing it the report's.

use super::compare::{Comparison, Options, Sample, apply_correction, compare};
use super::multiple::Correction;
use super::outliers;
use crate::model::{Dataset, Direction};
use serde::Serialize;

/// Values of `metric` for variant `pos` over its counted runs, and their run order when the
/// dataset has one; with `without_outliers`, Tukey outliers are left out and counted in
/// `removed`.
fn series(
    ds: &Dataset,
    pos: usize,
    metric: &str,
    without_outliers: bool,
    removed: &mut usize,
) -> (Vec<f64>, Option<Vec<f64>>) {
    let pairs = ds.values_with_seq(pos, metric);
    let values: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let order = ds
        .ordered
        .then(|| pairs.iter().map(|p| p.1 as f64).collect::<Vec<f64>>());
    if !without_outliers {
        return (values, order);
    }
    let drop = outliers::flag(&values).tukey_indices();
    *removed += drop.len();
    (
        outliers::without(&values, &drop),
        order.map(|o| outliers::without(&o, &drop)),
    )
}

/// The comparisons of one dataset.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub comparisons: Vec<Comparison>,
    /// Metrics or variants that could not be compared, with the reason.
    pub skipped: Vec<String>,
    pub outliers_removed: usize,
    /// Size of the family the correction was made over.
    pub m: usize,
    /// Baseline variant name.
    pub baseline: String,
    pub metrics: Vec<String>,
    pub correction: String,
    /// The tests run, in words, for method lines and footers.
    pub tests: String,
    pub options: Options,
    pub without_outliers: bool,
}

/// Analysis settings that do not come from the data.
#[derive(Debug, Clone)]
pub struct Settings {
    pub baseline: usize,
    pub metrics: Vec<String>,
    pub options: Options,
    pub correction: Correction,
    pub without_outliers: bool,
    pub force_higher_is_better: bool,
}

/// The tests [`analyse`] runs, in words.
fn tests_text(options: &Options) -> String {
    let mut tests = String::from(
        "Welch t-test with Fieller 95% CI of the ratio (primary; ANCOVA with run index when drift is found), Mann-Whitney U, Hodges-Lehmann",
    );
    if options.resamples > 0 {
        tests += ", BCa bootstrap of mean/median/SD ratios";
    }
    tests += ", Brown-Forsythe, Mann-Kendall (within variants), TOST";
    tests
}

/// Compare every variant with the baseline on every metric, then correct across the family.
pub fn analyse(ds: &Dataset, s: &Settings) -> Analysis {
    let mut comps = Vec::new();
    let mut skipped = Vec::new();
    let mut removed = 0;
    let base = &ds.variants[s.baseline];
    for metric in &s.metrics {
        let direction = Direction::of(metric, ds.unit(metric));
        let opts = Options {
            higher_is_better: s.force_higher_is_better || direction.higher_is_better(),
            ..s.options.clone()
        };
        let (a, oa) = series(ds, s.baseline, metric, s.without_outliers, &mut removed);
        for (i, v) in ds.variants.iter().enumerate() {
            if i == s.baseline {
                continue;
            }
            let (b, ob) = series(ds, i, metric, s.without_outliers, &mut removed);
            if a.is_empty() || b.is_empty() {
                skipped.push(format!(
                    "{metric}: {} vs {}: no values stored",
                    v.name, base.name
                ));
                continue;
            }
            let (sa, sb) = match (&oa, &ob) {
                (Some(x), Some(y)) => (
                    Sample::with_order(&base.name, &a, x),
                    Sample::with_order(&v.name, &b, y),
                ),
                _ => (Sample::new(&base.name, &a), Sample::new(&v.name, &b)),
            };
            match compare(metric, sa, sb, &opts) {
                Ok(c) => comps.push(c),
                Err(e) => skipped.push(format!("{metric}: {} vs {}: {e}", v.name, base.name)),
            }
        }
    }
    apply_correction(&mut comps, s.correction);
    let m = comps.iter().map(|c| c.m).max().unwrap_or(0);
    Analysis {
        comparisons: comps,
        skipped,
        outliers_removed: removed,
        m,
        baseline: base.name.clone(),
        metrics: s.metrics.clone(),
        correction: s.correction.name().to_string(),
        tests: tests_text(&s.options),
        options: s.options.clone(),
        without_outliers: s.without_outliers,
    }
}
