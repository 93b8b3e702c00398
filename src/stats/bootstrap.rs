//! Seeded two-sample bootstrap with BCa intervals (Efron 1987; DiCiccio and Efron 1996) for the
//! ratio of means, the ratio of medians and the SD ratio of B over A. Each sample is resampled
//! independently; the acceleration uses the jackknife of each sample in turn, exactly as
//! `scipy.stats.bootstrap(..., method='BCa')` does for several samples.

use super::StatsError;
use super::dist::{norm_cdf, norm_ppf};
use crate::model::describe::{mean, median_sorted, sd, sorted};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::Serialize;

/// Default number of resamples.
pub const DEFAULT_RESAMPLES: usize = 10_000;

/// A BCa interval for one statistic.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BcaCi {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
    pub level: f64,
    /// Bias correction z0 and acceleration a.
    pub z0: f64,
    pub accel: f64,
}

/// BCa intervals of the three ratios (variant over baseline).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bootstrap {
    pub resamples: usize,
    pub seed: u64,
    /// `None` with a reason when the statistic is degenerate (e.g. a zero SD or median).
    pub ratio_means: Result<BcaCi, String>,
    pub ratio_medians: Result<BcaCi, String>,
    pub sd_ratio: Result<BcaCi, String>,
}

/// A two-sample statistic.
pub type Stat = fn(&[f64], &[f64]) -> f64;

pub fn ratio_of_means(a: &[f64], b: &[f64]) -> f64 {
    mean(b) / mean(a)
}

pub fn ratio_of_medians(a: &[f64], b: &[f64]) -> f64 {
    median_sorted(&sorted(b)) / median_sorted(&sorted(a))
}

pub fn sd_ratio(a: &[f64], b: &[f64]) -> f64 {
    sd(b) / sd(a)
}

/// Percentile with linear interpolation of a sorted vector (numpy `percentile`).
fn percentile_sorted(s: &[f64], q: f64) -> f64 {
    crate::model::describe::quantile_sorted(s, q)
}

/// BCa acceleration from the per-sample jackknife (scipy's multi-sample formula).
pub fn acceleration(a: &[f64], b: &[f64], stat: Stat) -> f64 {
    let mut num = 0.0;
    let mut den = 0.0;
    for which in 0..2 {
        let x = if which == 0 { a } else { b };
        let n = x.len();
        let mut theta_i = Vec::with_capacity(n);
        let mut buf = Vec::with_capacity(n.saturating_sub(1));
        for i in 0..n {
            buf.clear();
            buf.extend(
                x.iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .map(|(_, &v)| v),
            );
            theta_i.push(if which == 0 {
                stat(&buf, b)
            } else {
                stat(a, &buf)
            });
        }
        let dot = theta_i.iter().sum::<f64>() / n as f64;
        let nf = n as f64;
        let u: Vec<f64> = theta_i.iter().map(|t| (nf - 1.0) * (dot - t)).collect();
        num += u.iter().map(|v| v * v * v).sum::<f64>() / nf.powi(3);
        den += u.iter().map(|v| v * v).sum::<f64>() / nf.powi(2);
    }
    if den > 0.0 {
        num / 6.0 / den.powf(1.5)
    } else {
        0.0
    }
}

/// BCa interval from the bootstrap distribution `boot` of `stat`.
pub fn bca_interval(
    a: &[f64],
    b: &[f64],
    stat: Stat,
    boot: &[f64],
    level: f64,
) -> Result<BcaCi, String> {
    let estimate = stat(a, b);
    if !estimate.is_finite() {
        return Err("the statistic is undefined on the data (division by zero)".into());
    }
    if boot.iter().any(|x| !x.is_finite()) {
        return Err("some resamples have a zero denominator (too few distinct values)".into());
    }
    let s = sorted(boot);
    let below = s.iter().filter(|&&x| x < estimate).count();
    let at_or_below = s.iter().filter(|&&x| x <= estimate).count();
    let pct = (below + at_or_below) as f64 / (2 * s.len()) as f64;
    if pct <= 0.0 || pct >= 1.0 {
        return Err("the bootstrap distribution lies entirely on one side of the estimate".into());
    }
    let z0 = norm_ppf(pct);
    let accel = acceleration(a, b, stat);
    let alpha = (1.0 - level) / 2.0;
    let adj = |z: f64| {
        let num = z0 + z;
        norm_cdf(z0 + num / (1.0 - accel * num))
    };
    let (a1, a2) = (adj(norm_ppf(alpha)), adj(norm_ppf(1.0 - alpha)));
    if !(a1.is_finite() && a2.is_finite()) {
        return Err("BCa adjustment failed (extreme skew)".into());
    }
    Ok(BcaCi {
        estimate,
        low: percentile_sorted(&s, a1),
        high: percentile_sorted(&s, a2),
        level,
        z0,
        accel,
    })
}

/// Bootstrap distributions of the three ratios from `resamples` seeded resamples.
pub fn resample_ratios(a: &[f64], b: &[f64], resamples: usize, seed: u64) -> [Vec<f64>; 3] {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut out = [
        Vec::with_capacity(resamples),
        Vec::with_capacity(resamples),
        Vec::with_capacity(resamples),
    ];
    let mut ra = vec![0.0; a.len()];
    let mut rb = vec![0.0; b.len()];
    for _ in 0..resamples {
        for v in ra.iter_mut() {
            *v = a[rng.random_range(0..a.len())];
        }
        for v in rb.iter_mut() {
            *v = b[rng.random_range(0..b.len())];
        }
        out[0].push(mean(&rb) / mean(&ra));
        out[2].push(sd(&rb) / sd(&ra));
        ra.sort_by(f64::total_cmp);
        rb.sort_by(f64::total_cmp);
        out[1].push(median_sorted(&rb) / median_sorted(&ra));
    }
    out
}

/// Seeded BCa bootstrap of mean(B)/mean(A), median(B)/median(A) and SD(B)/SD(A).
pub fn bootstrap(
    a: &[f64],
    b: &[f64],
    resamples: usize,
    seed: u64,
    level: f64,
) -> Result<Bootstrap, StatsError> {
    for (what, x) in [("baseline", a), ("variant", b)] {
        if x.len() < 2 {
            return Err(StatsError::TooFew {
                what,
                need: 2,
                got: x.len(),
            });
        }
    }
    if resamples < 100 {
        return Err(StatsError::Invalid(format!(
            "bootstrap needs at least 100 resamples, got {resamples}"
        )));
    }
    let [means, medians, sds] = resample_ratios(a, b, resamples, seed);
    Ok(Bootstrap {
        resamples,
        seed,
        ratio_means: bca_interval(a, b, ratio_of_means, &means, level),
        ratio_medians: bca_interval(a, b, ratio_of_medians, &medians, level),
        sd_ratio: bca_interval(a, b, sd_ratio, &sds, level),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::reference::{Reference, assert_rel};

    #[test]
    fn acceleration_matches_reference() {
        let r = Reference::load();
        for c in r.cases("bootstrap") {
            let (a, b) = (c.vec("a"), c.vec("b"));
            assert_rel(
                acceleration(&a, &b, ratio_of_means),
                c.num("accel_means"),
                1e-9,
                "a_hat means",
            );
            assert_rel(
                acceleration(&a, &b, sd_ratio),
                c.num("accel_sd"),
                1e-9,
                "a_hat sd",
            );
        }
    }

    /// Monte-Carlo intervals differ between generators: agree with scipy's BCa (10,000
    /// resamples) within 10% of the interval's width at each end.
    #[test]
    fn bca_matches_scipy_within_tolerance() {
        let r = Reference::load();
        for c in r.cases("bootstrap") {
            let (a, b) = (c.vec("a"), c.vec("b"));
            let bs = bootstrap(&a, &b, 10_000, 42, 0.95).unwrap();
            for (key, ci) in [
                ("means", &bs.ratio_means),
                ("medians", &bs.ratio_medians),
                ("sd", &bs.sd_ratio),
            ] {
                let ci = ci.as_ref().unwrap();
                let (lo, hi) = (c.num(&format!("{key}_low")), c.num(&format!("{key}_high")));
                let tol = 0.10 * (hi - lo);
                assert!(
                    (ci.low - lo).abs() <= tol,
                    "{key} low {} vs scipy {lo} (tol {tol})",
                    ci.low
                );
                assert!(
                    (ci.high - hi).abs() <= tol,
                    "{key} high {} vs scipy {hi} (tol {tol})",
                    ci.high
                );
            }
        }
    }

    #[test]
    fn seeded_and_degenerate() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [2.0, 3.0, 4.0, 5.0, 6.5];
        assert_eq!(
            bootstrap(&a, &b, 500, 7, 0.95).unwrap(),
            bootstrap(&a, &b, 500, 7, 0.95).unwrap()
        );
        let z = bootstrap(&[1.0; 6], &[1.0; 6], 500, 7, 0.95).unwrap();
        assert!(z.sd_ratio.is_err(), "0/0 SD ratio is reported, not NaN");
        let m = z.ratio_means.unwrap();
        assert_eq!((m.low, m.high), (1.0, 1.0));
    }
}
