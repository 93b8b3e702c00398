//! Two event counts compared: B's count over A's, from two captures of the same work (seed 000's
//! tables side by side). Counts of independent events are Poisson; given their sum `n`, B's
//! count is binomial with `pi = B / (A + B)` expected rate share, so the exact conditional test
//! applies (Przyborowski and Wilenski 1940): the two-sided binomial test of `pi = 1/2` (equal
//! counts) and the Clopper-Pearson interval of `pi`, turned into one of the ratio
//! `pi / (1 - pi)`. `scipy.stats.binomtest(b, a + b, 0.5)` gives the same p-value and
//! `proportion_ci(method='exact')` the same interval (tools/stats_reference.py, case `counts`).

use super::StatsError;
use serde::Serialize;
use statrs::distribution::{Beta, Binomial, ContinuousCDF, DiscreteCDF};

/// B's count over A's with its exact interval and the p-value of equal counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CountRatio {
    pub a: u64,
    pub b: u64,
    /// b / a (infinite when a is 0 and b is not).
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    pub level: f64,
    /// Two-sided exact binomial test of equal counts.
    pub p: f64,
}

/// The Clopper-Pearson interval of a binomial proportion: `k` of `n` at `level`.
pub fn clopper_pearson(k: u64, n: u64, level: f64) -> Result<(f64, f64), StatsError> {
    if n == 0 || k > n || !(0.0..1.0).contains(&level) || level <= 0.0 {
        return Err(StatsError::Invalid(format!(
            "Clopper-Pearson needs 0 <= k <= n, n >= 1 and a level in (0, 1): k {k}, n {n}, level {level}"
        )));
    }
    let alpha = 1.0 - level;
    let (kf, nf) = (k as f64, n as f64);
    let beta = |a: f64, b: f64| Beta::new(a, b).map_err(|e| StatsError::Invalid(e.to_string()));
    let low = if k == 0 {
        0.0
    } else {
        beta(kf, nf - kf + 1.0)?.inverse_cdf(alpha / 2.0)
    };
    let high = if k == n {
        1.0
    } else {
        beta(kf + 1.0, nf - kf)?.inverse_cdf(1.0 - alpha / 2.0)
    };
    Ok((low, high))
}

/// The two-sided exact binomial test of `pi = 1/2`: the probability of a count at least as far
/// from `n / 2` as `k` (symmetric, so twice the smaller tail, at most 1).
pub fn binomial_test_half(k: u64, n: u64) -> Result<f64, StatsError> {
    if n == 0 || k > n {
        return Err(StatsError::Invalid(format!(
            "binomial test needs 0 <= k <= n and n >= 1: k {k}, n {n}"
        )));
    }
    let d = Binomial::new(0.5, n).map_err(|e| StatsError::Invalid(e.to_string()))?;
    // P(X <= k) and, by symmetry, P(X >= k) = P(X <= n - k): no cancellation in 1 - cdf
    let tail = d.cdf(k.min(n - k));
    Ok((2.0 * tail).min(1.0))
}

/// B's count over A's: the exact conditional comparison of two Poisson counts.
pub fn count_ratio(a: u64, b: u64, level: f64) -> Result<CountRatio, StatsError> {
    let n = a + b;
    if n == 0 {
        return Err(StatsError::Invalid(
            "both counts are 0: nothing to compare".into(),
        ));
    }
    let (lo, hi) = clopper_pearson(b, n, level)?;
    let odds = |p: f64| {
        if p >= 1.0 {
            f64::INFINITY
        } else {
            p / (1.0 - p)
        }
    };
    Ok(CountRatio {
        a,
        b,
        ratio: if a == 0 {
            f64::INFINITY
        } else {
            b as f64 / a as f64
        },
        low: odds(lo),
        high: odds(hi),
        level,
        p: binomial_test_half(b, n)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{Reference, assert_rel};

    #[test]
    fn counts_match_scipy() {
        let r = Reference::load();
        let cases = r.cases("counts");
        assert!(cases.len() >= 5);
        for c in cases {
            let (a, b) = (c.num("a") as u64, c.num("b") as u64);
            let cr = count_ratio(a, b, 0.95).unwrap();
            // statrs' binomial cdf (a regularised beta) agrees with scipy's to ~2e-8 at n ~ 1e6
            assert_rel(cr.p, c.num("p"), 1e-7, "binomtest p");
            let (lo, hi) = clopper_pearson(b, a + b, 0.95).unwrap();
            assert_rel(lo, c.num("pi_low"), 1e-6, "Clopper-Pearson low");
            assert_rel(hi, c.num("pi_high"), 1e-6, "Clopper-Pearson high");
        }
    }

    #[test]
    fn hand_computed_edges() {
        // 2 of 10: p = 2 * (1 + 10 + 45) / 1024
        assert_rel(
            binomial_test_half(2, 10).unwrap(),
            112.0 / 1024.0,
            1e-12,
            "p",
        );
        assert_eq!(binomial_test_half(5, 10).unwrap(), 1.0);
        let z = count_ratio(0, 7, 0.95).unwrap();
        assert!(z.ratio.is_infinite() && z.high.is_infinite() && z.low > 0.0);
        assert!(count_ratio(0, 0, 0.95).is_err());
    }
}
