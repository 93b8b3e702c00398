//! The data a comparison reads (variants, their runs and metrics, from a store or from files)
//! and the analysis shared by `abperf compare`, `abperf run`'s closing verdicts and `abperf
//! report`: every variant against the baseline on every metric, corrected across the family.
//! Pure computation: loading the data is the command layer's job.

use super::compare::{Comparison, Options, Sample, apply_correction, compare};
use super::direction::higher_is_better;
use super::multiple::Correction;
use super::outliers;
use crate::error::usage;
use std::collections::BTreeMap;

/// One measured run of a variant.
#[derive(Debug, Clone)]
pub struct RunData {
    /// Position in the experiment's schedule; `None` for file input.
    pub seq: Option<f64>,
    /// Duration of the run in ns, when stored.
    pub duration_ns: Option<f64>,
    pub metrics: BTreeMap<String, f64>,
}

#[derive(Debug, Clone)]
pub struct VariantData {
    pub name: String,
    pub runs: Vec<RunData>,
}

/// Everything a comparison reads.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    pub variants: Vec<VariantData>,
    pub units: BTreeMap<String, String>,
    /// Environment snapshot (store input).
    pub environment: Option<serde_json::Value>,
    pub design: Option<serde_json::Value>,
    pub seed: Option<u64>,
    /// Where the data came from, for the provenance footer.
    pub source: String,
    /// Runs left out (warm-ups, failed, excluded), for the report.
    pub left_out: usize,
}

impl Dataset {
    /// Metric names present in the runs, in name order.
    pub fn metric_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .variants
            .iter()
            .flat_map(|v| v.runs.iter().flat_map(|r| r.metrics.keys().cloned()))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    pub fn unit(&self, metric: &str) -> &str {
        self.units.get(metric).map(String::as_str).unwrap_or("")
    }

    /// Position of the variant called `name`.
    pub fn position(&self, name: &str) -> anyhow::Result<usize> {
        self.variants
            .iter()
            .position(|v| v.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self.variants.iter().map(|v| v.name.as_str()).collect();
                usage(format!(
                    "no variant named '{name}' (variants: {})",
                    names.join(", ")
                ))
            })
    }
}

/// Values (and run order when every run has one) of `metric` for one variant; with
/// `without_outliers`, Tukey outliers are left out and counted in `removed`.
fn series(
    v: &VariantData,
    metric: &str,
    without_outliers: bool,
    removed: &mut usize,
) -> (Vec<f64>, Option<Vec<f64>>) {
    let runs: Vec<_> = v
        .runs
        .iter()
        .filter_map(|r| r.metrics.get(metric).map(|&x| (x, r.seq)))
        .collect();
    let values: Vec<f64> = runs.iter().map(|r| r.0).collect();
    let order = runs.iter().map(|r| r.1).collect::<Option<Vec<f64>>>();
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

/// The analysis behind `compare` and `verdict_lines`.
pub struct Analysis {
    pub comparisons: Vec<Comparison>,
    pub skipped: Vec<String>,
    pub outliers_removed: usize,
    pub m: usize,
}

/// Analysis settings that do not come from the data.
pub struct Settings {
    pub baseline: usize,
    pub metrics: Vec<String>,
    pub options: Options,
    pub correction: Correction,
    pub without_outliers: bool,
    pub force_higher_is_better: bool,
}

/// Compare every variant with the baseline on every metric, then correct across the family.
pub fn analyse(ds: &Dataset, s: &Settings) -> Analysis {
    let mut comps = Vec::new();
    let mut skipped = Vec::new();
    let mut removed = 0;
    let base = &ds.variants[s.baseline];
    for metric in &s.metrics {
        let unit = ds.unit(metric);
        let opts = Options {
            higher_is_better: s.force_higher_is_better || higher_is_better(metric, unit),
            ..s.options.clone()
        };
        let (a, oa) = series(base, metric, s.without_outliers, &mut removed);
        for (i, v) in ds.variants.iter().enumerate() {
            if i == s.baseline {
                continue;
            }
            let (b, ob) = series(v, metric, s.without_outliers, &mut removed);
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
    }
}
