//! Equivalence by two one-sided tests (TOST, Schuirmann 1987) on the ratio of means with a
//! relative margin D: H0 theta <= 1-D or theta >= 1+D. Each one-sided test uses the Fieller
//! pivot (mB - theta0 mA) / sqrt(sB^2 + theta0^2 sA^2) with Welch df, so "both p < alpha" agrees
//! with "the (1 - 2 alpha) Fieller interval lies inside 1 +- D".

use super::StatsError;
use super::dist::t_sf;
use super::welch::welch_parts;
use abperf_model::describe::mean;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tost {
    /// Relative margin D (0.002 = 0.2%).
    pub margin: f64,
    /// p of H0: theta <= 1 - D.
    pub p_lower: f64,
    /// p of H0: theta >= 1 + D.
    pub p_upper: f64,
    /// max(p_lower, p_upper).
    pub p: f64,
}

/// TOST of mean(B)/mean(A) within 1 +- `margin`.
pub fn tost(a: &[f64], b: &[f64], margin: f64) -> Result<Tost, StatsError> {
    if !(margin > 0.0 && margin < 1.0) {
        return Err(StatsError::Invalid(format!(
            "equivalence margin must be between 0 and 1 (relative), got {margin}"
        )));
    }
    let (sa, sb, df) = welch_parts(a, b)?;
    tost_with(mean(a), mean(b), sa, sb, df, margin)
}

/// TOST from means, squared standard errors and Welch df.
pub fn tost_with(
    ma: f64,
    mb: f64,
    sa: f64,
    sb: f64,
    df: f64,
    margin: f64,
) -> Result<Tost, StatsError> {
    if ma <= 0.0 {
        return Err(StatsError::NonPositiveMean(ma));
    }
    let pivot = |theta0: f64| (mb - theta0 * ma) / (sb + theta0 * theta0 * sa).sqrt();
    let p_lower = t_sf(pivot(1.0 - margin), df);
    let p_upper = t_sf(-pivot(1.0 + margin), df);
    Ok(Tost {
        margin,
        p_lower,
        p_upper,
        p: p_lower.max(p_upper),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{Reference, assert_rel};
    use crate::welch::fieller;

    #[test]
    fn matches_reference() {
        let r = Reference::load();
        for c in r.cases("tost") {
            let t = tost(&c.vec("a"), &c.vec("b"), c.num("margin")).unwrap();
            assert_rel(t.p_lower, c.num("p_lower"), 1e-9, "TOST lower");
            assert_rel(t.p_upper, c.num("p_upper"), 1e-9, "TOST upper");
        }
    }

    #[test]
    fn agrees_with_fieller_90() {
        let a: Vec<f64> = (0..20)
            .map(|i| 100.0 + ((i * 7) % 11) as f64 * 0.05)
            .collect();
        let b: Vec<f64> = (0..20)
            .map(|i| 100.02 + ((i * 5) % 11) as f64 * 0.05)
            .collect();
        for margin in [0.0005, 0.001, 0.002, 0.005] {
            let t = tost(&a, &b, margin).unwrap();
            let ci = fieller(&a, &b, 0.90).unwrap();
            let inside = ci.low > 1.0 - margin && ci.high < 1.0 + margin;
            assert_eq!(t.p < 0.05, inside, "margin {margin}");
        }
        assert!(tost(&a, &b, 0.0).is_err());
    }
}
