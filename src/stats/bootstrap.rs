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

/// A two-sample statistic: one per-sample figure of B over the same figure of A.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    RatioOfMeans,
    RatioOfMedians,
    SdRatio,
}

impl Stat {
    /// The per-sample figure.
    fn figure(self, x: &[f64]) -> f64 {
        match self {
            Stat::RatioOfMeans => mean(x),
            Stat::RatioOfMedians => median_sorted(&sorted(x)),
            Stat::SdRatio => sd(x),
        }
    }

    /// The statistic of B over A.
    pub fn eval(self, a: &[f64], b: &[f64]) -> f64 {
        self.figure(b) / self.figure(a)
    }

    /// The figure of `x` with each value left out in turn, in O(n log n) (the jackknife of a
    /// 200,000-value sample was 200,000 copies of it).
    pub fn leave_one_out(self, x: &[f64]) -> Vec<f64> {
        let n = x.len();
        if n < 2 {
            return vec![f64::NAN; n];
        }
        if n <= DIRECT_JACKKNIFE_MAX {
            // Small samples: straight from the definition (the results every reference and
            // stored report were made with, to the last digit).
            let mut rest = Vec::with_capacity(n - 1);
            return (0..n)
                .map(|i| {
                    rest.clear();
                    rest.extend(x[..i].iter().chain(&x[i + 1..]));
                    self.figure(&rest)
                })
                .collect();
        }
        self.leave_one_out_fast(x)
    }

    /// [`Stat::leave_one_out`] for large samples: O(n log n).
    fn leave_one_out_fast(self, x: &[f64]) -> Vec<f64> {
        let n = x.len();
        match self {
            Stat::RatioOfMeans => {
                // As `mean`: shifted by the first value.
                let x0 = x[0];
                let d: f64 = x.iter().map(|v| v - x0).sum();
                x.iter()
                    .map(|v| x0 + (d - (v - x0)) / (n - 1) as f64)
                    .collect()
            }
            Stat::RatioOfMedians => {
                let mut idx: Vec<usize> = (0..n).collect();
                idx.sort_by(|&i, &j| x[i].total_cmp(&x[j]));
                let s: Vec<f64> = idx.iter().map(|&i| x[i]).collect();
                let mut rank = vec![0; n];
                for (r, &i) in idx.iter().enumerate() {
                    rank[i] = r;
                }
                // The remaining n-1 sorted values are s without position r: position k of
                // them is s[k] below r and s[k+1] from r on.
                let h = (n - 2) as f64 * 0.5;
                let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
                (0..n)
                    .map(|i| {
                        let at = |k: usize| if k < rank[i] { s[k] } else { s[k + 1] };
                        at(lo) + (h - lo as f64) * (at(hi) - at(lo))
                    })
                    .collect()
            }
            Stat::SdRatio => {
                if n < 3 {
                    return vec![0.0; n];
                }
                let m = mean(x);
                let ss: f64 = x.iter().map(|v| (v - m) * (v - m)).sum();
                let nf = n as f64;
                x.iter()
                    .enumerate()
                    .map(|(i, &v)| {
                        // Removing v takes n (v-m)^2 / (n-1) from the sum of squares.
                        let left = ss - nf * (v - m) * (v - m) / (nf - 1.0);
                        if left > ss * 1e-6 {
                            (left / (nf - 2.0)).sqrt()
                        } else {
                            // v carries nearly all the spread: the difference has lost its
                            // digits, so compute this one directly (O(n), for a few values).
                            let rest: Vec<f64> = x
                                .iter()
                                .enumerate()
                                .filter(|&(j, _)| j != i)
                                .map(|(_, &w)| w)
                                .collect();
                            sd(&rest)
                        }
                    })
                    .collect()
            }
        }
    }
}

/// Up to this many values a sample's jackknife is computed from its definition (O(n^2), 4
/// million steps); above, in O(n log n) by updating the whole-sample figure.
pub const DIRECT_JACKKNIFE_MAX: usize = 2000;

pub fn ratio_of_means(a: &[f64], b: &[f64]) -> f64 {
    Stat::RatioOfMeans.eval(a, b)
}

pub fn ratio_of_medians(a: &[f64], b: &[f64]) -> f64 {
    Stat::RatioOfMedians.eval(a, b)
}

pub fn sd_ratio(a: &[f64], b: &[f64]) -> f64 {
    Stat::SdRatio.eval(a, b)
}

/// Percentile with linear interpolation of a sorted vector (numpy `percentile`).
fn percentile_sorted(s: &[f64], q: f64) -> f64 {
    crate::model::describe::quantile_sorted(s, q)
}

/// BCa acceleration from the per-sample jackknife (scipy's multi-sample formula).
pub fn acceleration(a: &[f64], b: &[f64], stat: Stat) -> f64 {
    let mut num = 0.0;
    let mut den = 0.0;
    let (fa, fb) = (stat.figure(a), stat.figure(b));
    for which in 0..2 {
        let x = if which == 0 { a } else { b };
        let n = x.len();
        let theta_i: Vec<f64> = stat
            .leave_one_out(x)
            .into_iter()
            .map(|f| if which == 0 { fb / f } else { f / fa })
            .collect();
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
    let estimate = stat.eval(a, b);
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
        out[1].push(select_median(&mut rb) / select_median(&mut ra));
    }
    out
}

/// The median of `x` (as `median_sorted` of its sorted copy) by selection in O(n); reorders `x`.
fn select_median(x: &mut [f64]) -> f64 {
    let h = (x.len() - 1) as f64 * 0.5;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    let (_, &mut at_lo, rest) = x.select_nth_unstable_by(lo, f64::total_cmp);
    let at_hi = if hi == lo {
        at_lo
    } else {
        rest.iter().copied().min_by(f64::total_cmp).unwrap_or(at_lo)
    };
    at_lo + (h - lo as f64) * (at_hi - at_lo)
}

/// The most values one bootstrap draws (resamples x (m + n)): about two seconds here. With more
/// data the bootstrap takes fewer resamples (at least [`MIN_CAPPED_RESAMPLES`]) and says how
/// many it took.
pub const MAX_DRAWS: usize = 200_000_000;
pub const MIN_CAPPED_RESAMPLES: usize = 1000;

/// The resamples a bootstrap of `m + n` values takes when `asked` for (see [`MAX_DRAWS`]).
pub fn capped_resamples(asked: usize, values: usize) -> usize {
    asked.min((MAX_DRAWS / values.max(1)).max(MIN_CAPPED_RESAMPLES))
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
    let resamples = capped_resamples(resamples, a.len() + b.len());
    let [means, medians, sds] = resample_ratios(a, b, resamples, seed);
    Ok(Bootstrap {
        resamples,
        seed,
        ratio_means: bca_interval(a, b, Stat::RatioOfMeans, &means, level),
        ratio_medians: bca_interval(a, b, Stat::RatioOfMedians, &medians, level),
        sd_ratio: bca_interval(a, b, Stat::SdRatio, &sds, level),
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
                acceleration(&a, &b, Stat::RatioOfMeans),
                c.num("accel_means"),
                1e-9,
                "a_hat means",
            );
            assert_rel(
                acceleration(&a, &b, Stat::SdRatio),
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
    fn fast_leave_one_out_equals_the_definition() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for case in 0..300 {
            let n = rng.random_range(3..60);
            let scale = [1e-6, 1.0, 1e9][case % 3];
            let mut x: Vec<f64> = (0..n)
                .map(|_| match rng.random_range(0..5) {
                    0 => 5.0 * scale,
                    1 => rng.random_range(0..4) as f64 * scale,
                    _ => rng.random_range(1.0..100.0) * scale,
                })
                .collect();
            if case % 7 == 0 {
                // One value carrying nearly all the spread.
                x[0] = 1e6 * scale;
            }
            for stat in [Stat::RatioOfMeans, Stat::RatioOfMedians, Stat::SdRatio] {
                let fast = stat.leave_one_out_fast(&x);
                for (i, f) in fast.iter().enumerate() {
                    let rest: Vec<f64> = x[..i].iter().chain(&x[i + 1..]).copied().collect();
                    let want = stat.figure(&rest);
                    assert!(
                        (f - want).abs() <= 1e-9 * want.abs().max(scale * 1e-6),
                        "case {case} {stat:?} i {i}: {f} vs {want}"
                    );
                }
            }
        }
        // Above the direct limit the fast path is what acceleration uses.
        let big: Vec<f64> = (0..DIRECT_JACKKNIFE_MAX + 1)
            .map(|i| (i % 13) as f64)
            .collect();
        assert_eq!(
            Stat::SdRatio.leave_one_out(&big),
            Stat::SdRatio.leave_one_out_fast(&big)
        );
    }

    #[test]
    fn select_median_equals_the_sorted_median() {
        for x in [
            vec![3.0],
            vec![2.0, 1.0],
            vec![5.0, 1.0, 4.0, 4.0],
            vec![9.0, -1.0, 0.5, 7.0, 7.0, 2.0],
        ] {
            let want = median_sorted(&sorted(&x));
            assert_eq!(select_median(&mut x.clone()), want, "{x:?}");
        }
    }

    #[test]
    fn large_samples_take_fewer_resamples() {
        assert_eq!(capped_resamples(10_000, 200_020), 1000);
        assert_eq!(capped_resamples(10_000, 40_000), 5000);
        assert_eq!(capped_resamples(10_000, 200), 10_000);
        assert_eq!(capped_resamples(500, 10_000_000), 500);
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
