//! Verdicts for a report: every non-baseline variant against the baseline on each selected
//! metric, through the same analysis as `abperf compare` (`stats::analysis::analyse`: Welch +
//! Fieller primary, robust cross-checks, Holm across the family), so the two never disagree.
//!
//! One deliberate difference in input: runs of an experiment whose order is `imported` carry no
//! run order, because an imported file's line order is not a schedule (seed 000's lines are
//! sorted by user time; a trend test on that order would report "drift" that is only sorting).

use super::{ReportData, VerdictRow};
use crate::stats::analysis::{Dataset, RunData, Settings, VariantData, analyse};
use crate::stats::compare::Options;
use crate::stats::multiple::Correction;

/// What [`compute`] found.
pub struct Verdicts {
    pub rows: Vec<VerdictRow>,
    /// Comparisons that could not be made, in words.
    pub notes: Vec<String>,
    /// The tests used, for method lines; empty when none ran.
    pub tests: String,
}

/// The analysable runs of `data` in the statistics module's input shape.
fn dataset(data: &ReportData) -> Dataset {
    let imported_order =
        data.experiment.design.get("order").and_then(|o| o.as_str()) == Some("imported");
    let variants = data
        .variants
        .iter()
        .map(|v| VariantData {
            name: v.name.clone(),
            runs: data
                .runs
                .iter()
                .filter(|r| r.analysed && r.variant == v.position)
                .map(|r| RunData {
                    seq: (!imported_order).then_some(r.seq as f64),
                    duration_ns: (r.ended_ns > r.started_ns)
                        .then(|| (r.ended_ns - r.started_ns) as f64),
                    metrics: r.metrics.clone(),
                })
                .collect(),
        })
        .collect();
    Dataset {
        variants,
        units: data
            .metrics
            .iter()
            .map(|m| (m.name.clone(), m.unit.clone()))
            .collect(),
        environment: Some(data.experiment.environment.clone()),
        design: Some(data.experiment.design.clone()),
        seed: data.experiment.seed,
        source: format!("experiment {}", data.experiment.id),
        left_out: data.runs.len() - data.analysed_runs(),
    }
}

/// Verdict rows, plus notes on comparisons that could not be made.
pub fn compute(data: &ReportData) -> Verdicts {
    let mut notes = Vec::new();
    if data.variants.len() < 2 {
        notes.push("one variant: nothing to compare it with".to_string());
        return Verdicts {
            rows: Vec::new(),
            notes,
            tests: String::new(),
        };
    }
    let Some(baseline) = data
        .variants
        .iter()
        .position(|v| v.position == data.baseline)
    else {
        notes.push("no baseline variant".to_string());
        return Verdicts {
            rows: Vec::new(),
            notes,
            tests: String::new(),
        };
    };
    let ds = dataset(data);
    let settings = Settings {
        baseline,
        metrics: data.selected.clone(),
        options: Options {
            alpha: data.alpha,
            seed: data.experiment.seed.unwrap_or(Options::default().seed),
            ..Options::default()
        },
        correction: Correction::Holm,
        without_outliers: false,
        force_higher_is_better: false,
    };
    let an = analyse(&ds, &settings);
    notes.extend(an.skipped.iter().map(|s| format!("not compared: {s}")));
    let tested = an
        .comparisons
        .iter()
        .any(|c| c.p_welch.is_some() || c.p_adjusted.is_some());
    let tests = if !tested {
        String::new()
    } else {
        format!("Welch t, Fieller 95% CI, Holm m={}", an.m.max(1))
    };
    let rows = an
        .comparisons
        .into_iter()
        .map(|c| VerdictRow {
            metric: c.metric.clone(),
            baseline: c.baseline.clone(),
            variant: c.variant.clone(),
            verdict: c.verdict.as_str().to_string(),
            line: c.line.clone(),
            ratio: c.ratio,
            ratio_ci: c.ratio_ci,
            p: c.p_adjusted.or(c.p_welch),
            detail: serde_json::to_value(&c).unwrap_or(serde_json::Value::Null),
        })
        .collect();
    Verdicts { rows, notes, tests }
}

#[cfg(test)]
mod tests {
    use super::super::testdata::sample;

    #[test]
    fn sample_gets_a_verdict() {
        let d = sample();
        assert_eq!(d.verdicts.len(), 1, "{:?}", d.verdict_notes);
        let v = &d.verdicts[0];
        assert_eq!(
            (v.baseline.as_str(), v.variant.as_str(), v.metric.as_str()),
            ("A", "B", "user_ns")
        );
        assert_eq!(v.verdict, "faster", "{}", v.line);
        assert!(v.line.starts_with("B is "), "{}", v.line);
        let [lo, hi] = v.ratio_ci.unwrap();
        assert!(lo < v.ratio && v.ratio < hi && hi < 1.0);
        assert_eq!(d.tests, "Welch t, Fieller 95% CI, Holm m=1");
    }
}
