//! Verdicts for a report: every non-baseline variant against the baseline on each selected
//! metric, from the statistics module.

use super::{ReportData, VerdictRow};

/// Verdict rows, plus notes on comparisons that could not be made.
pub fn compute(data: &ReportData) -> (Vec<VerdictRow>, Vec<String>) {
    let _ = data;
    (
        Vec::new(),
        vec!["verdicts unavailable: this build has no statistics module (src/stats)".to_string()],
    )
}
