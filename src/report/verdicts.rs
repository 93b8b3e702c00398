//! Verdicts for a report: every non-baseline variant against the baseline on each selected
//! metric, from the statistics module.

use super::{ReportData, VerdictRow};

/// What [`compute`] found.
pub struct Verdicts {
    pub rows: Vec<VerdictRow>,
    /// Comparisons that could not be made, in words.
    pub notes: Vec<String>,
    /// The tests used, for method lines; empty when none ran.
    pub tests: String,
}

/// Verdict rows, plus notes on comparisons that could not be made.
pub fn compute(data: &ReportData) -> Verdicts {
    let _ = data;
    Verdicts {
        rows: Vec::new(),
        notes: vec![
            "verdicts unavailable: this build has no statistics module (src/stats)".to_string(),
        ],
        tests: String::new(),
    }
}
