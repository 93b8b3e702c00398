//! Corrections for many comparisons: Holm (family-wise error) and Benjamini-Hochberg (false
//! discovery rate). Both return adjusted p-values in the input order.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Correction {
    /// Holm-Bonferroni step-down (family-wise error rate).
    Holm,
    /// Benjamini-Hochberg step-up (false discovery rate), for exploratory tables.
    Bh,
    /// No correction.
    None,
}

impl Correction {
    pub fn name(self) -> &'static str {
        match self {
            Correction::Holm => "Holm",
            Correction::Bh => "Benjamini-Hochberg",
            Correction::None => "none",
        }
    }

    pub fn adjust(self, p: &[f64]) -> Vec<f64> {
        match self {
            Correction::Holm => holm(p),
            Correction::Bh => benjamini_hochberg(p),
            Correction::None => p.to_vec(),
        }
    }
}

fn order(p: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..p.len()).collect();
    idx.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    idx
}

/// Holm step-down adjusted p-values: max over j <= i of (m - j) p_(j), capped at 1.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut out = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order(p).iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

/// Benjamini-Hochberg adjusted p-values: min over j >= i of m p_(j) / j, capped at 1.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut out = vec![0.0; m];
    let mut running: f64 = 1.0;
    for (rank, &i) in order(p).iter().enumerate().rev() {
        running = running.min(m as f64 * p[i] / (rank + 1) as f64).min(1.0);
        out[i] = running;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{Reference, assert_rel};

    #[test]
    fn matches_reference() {
        let r = Reference::load();
        for c in r.cases("multiple") {
            let p = c.vec("p");
            for (got, want) in holm(&p).iter().zip(c.vec("holm")) {
                assert_rel(*got, want, 1e-12, "holm");
            }
            for (got, want) in benjamini_hochberg(&p).iter().zip(c.vec("bh")) {
                assert_rel(*got, want, 1e-12, "bh");
            }
        }
    }

    #[test]
    fn empty_and_single() {
        assert!(holm(&[]).is_empty());
        assert_eq!(holm(&[0.03]), vec![0.03]);
        assert_eq!(benjamini_hochberg(&[0.03]), vec![0.03]);
    }
}
