//! Seeded two-sample bootstrap with BCa intervals (Efron 1987; DiCiccio and Efron 1996) for the
//! ratio of means, the ratio of medians and the SD ratio of B over A. Each sample is resampled
//! independently; the acceleration uses the jackknife of each sample in turn, exactly as
//! `scipy.stats.bootstrap(..., method='BCa')` does for several samples.

use super::StatsError;
use super::dist::{norm_cdf, norm_ppf};
use abperf_model::describe::{mean, median_sorted, sd, sorted};
use rand::SeedableRng;
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
    abperf_model::describe::quantile_sorted(s, q)
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
///
/// One ChaCha20 stream draws, for each resample in turn, the indices of A's values and then
/// B's, exactly as `rng.random_range(0..len)` would (see [`draw`]). A resample is kept as the
/// count of each rank of the sorted sample (a value's rank order is its value order), so its
/// median is found by walking the counts and its mean and SD by summing over them: no copy of
/// the values, no sort or selection per resample.
pub fn resample_ratios(a: &[f64], b: &[f64], resamples: usize, seed: u64) -> [Vec<f64>; 3] {
    let (m, n) = (a.len(), b.len());
    // Resamples per batch of drawn indices: about a million indices (4 MB).
    let batch = (1 << 20) / (m + n).max(1) + 1;
    let parallel = resamples * (m + n) >= 1 << 22
        && std::thread::available_parallelism().is_ok_and(|p| p.get() >= 2);
    let (mut pa, mut pb) = (Ranked::new(a), Ranked::new(b));
    let mut out = [
        Vec::with_capacity(resamples),
        Vec::with_capacity(resamples),
        Vec::with_capacity(resamples),
    ];
    let mut take = |idx: &[u32]| {
        for one in idx.chunks_exact(m + n) {
            pa.count(&one[..m]);
            pb.count(&one[m..]);
            let (fa, fb) = (pa.figures(), pb.figures());
            out[0].push(fb.mean / fa.mean);
            out[2].push(fb.sd / fa.sd);
            out[1].push(fb.median / fa.median);
        }
    };
    // One stream draws every index in order, whichever thread uses them: the same resamples
    // with one thread or two.
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut fill = move |buf: &mut Vec<u32>, count: usize| {
        buf.clear();
        for _ in 0..count {
            buf.extend((0..m).map(|_| draw(&mut rng, m as u32)));
            buf.extend((0..n).map(|_| draw(&mut rng, n as u32)));
        }
    };
    if !parallel {
        let mut buf = Vec::new();
        for start in (0..resamples).step_by(batch) {
            fill(&mut buf, batch.min(resamples - start));
            take(&buf);
        }
        return out;
    }
    // Two threads: this one draws the indices (the ChaCha20 stream is about half the work),
    // the other counts and sums; two buffers go back and forth.
    let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Vec<u32>>(2);
    let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Vec<u32>>();
    for _ in 0..2 {
        let _ = empty_tx.send(Vec::new());
    }
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for buf in full_rx {
                take(&buf);
                if empty_tx.send(buf).is_err() {
                    break;
                }
            }
        });
        for start in (0..resamples).step_by(batch) {
            let Ok(mut buf) = empty_rx.recv() else { break };
            fill(&mut buf, batch.min(resamples - start));
            if full_tx.send(buf).is_err() {
                break;
            }
        }
        drop(full_tx);
    });
    out
}

/// `rng.random_range(0..range)` for a `usize` range below 2^32, written out (rand 0.9's
/// `UniformInt<u32>::sample_single_inclusive`: Canon's multiply with one extra word in the rare
/// biased case) so that it inlines into the resampling loop; the same words give the same index.
#[inline(always)]
fn draw(rng: &mut ChaCha20Rng, range: u32) -> u32 {
    use rand::RngCore;
    let m = u64::from(rng.next_u32()) * u64::from(range);
    let (mut result, lo) = ((m >> 32) as u32, m as u32);
    if lo > range.wrapping_neg() {
        let hi = ((u64::from(rng.next_u32()) * u64::from(range)) >> 32) as u32;
        result += u32::from(lo.checked_add(hi).is_none());
    }
    result
}

/// One sample prepared for resampling: its values sorted, each value's rank among them and the
/// current resample as a count per rank.
struct Ranked {
    sorted: Vec<f64>,
    rank: Vec<u32>,
    counts: Vec<u32>,
    /// The first value drawn (`mean` shifts by it).
    first: f64,
}

/// Mean, median and SD of one resample.
struct Figures {
    mean: f64,
    median: f64,
    sd: f64,
}

impl Ranked {
    fn new(x: &[f64]) -> Ranked {
        assert!(
            x.len() < u32::MAX as usize,
            "a bootstrap sample of {} values",
            x.len()
        );
        let mut idx: Vec<u32> = (0..x.len() as u32).collect();
        idx.sort_by(|&i, &j| x[i as usize].total_cmp(&x[j as usize]));
        let mut rank = vec![0; x.len()];
        for (r, &i) in idx.iter().enumerate() {
            rank[i as usize] = r as u32;
        }
        Ranked {
            sorted: idx.iter().map(|&i| x[i as usize]).collect(),
            rank,
            counts: vec![0; x.len()],
            first: 0.0,
        }
    }

    /// Draws a new resample (as many values as the sample has).
    #[cfg(test)]
    fn resample(&mut self, rng: &mut ChaCha20Rng) {
        let n = self.rank.len() as u32;
        let idx: Vec<u32> = (0..n).map(|_| draw(rng, n)).collect();
        self.count(&idx);
    }

    /// Make the resample of the values at indices `idx` (as many as the sample has).
    fn count(&mut self, idx: &[u32]) {
        self.counts.fill(0);
        for &i in idx {
            self.counts[self.rank[i as usize] as usize] += 1;
        }
        self.first = self.sorted[self.rank[idx[0] as usize] as usize];
    }

    /// The resample's figures, as `mean`, `sd` and the type-7 median of its values would give
    /// (the sums in another order: equal to rounding).
    fn figures(&self) -> Figures {
        let n = self.counts.len();
        let h = (n - 1) as f64 * 0.5;
        let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
        // The values at sorted positions lo and hi: the first ranks whose running count passes
        // them.
        let mut below = 0usize;
        let mut k = 0;
        loop {
            below += self.counts[k] as usize;
            if below > lo {
                break;
            }
            k += 1;
        }
        let at_lo = self.sorted[k];
        while below <= hi {
            k += 1;
            below += self.counts[k] as usize;
        }
        let at_hi = self.sorted[k];
        let x0 = self.first;
        let shifted = lanes_sum(&self.counts, &self.sorted, |v| v - x0);
        let mean = x0 + shifted / n as f64;
        let sd = if n < 2 {
            0.0
        } else {
            let ss = lanes_sum(&self.counts, &self.sorted, |v| (v - mean) * (v - mean));
            (ss / (n - 1) as f64).sqrt()
        };
        Figures {
            mean,
            median: at_lo + (h - lo as f64) * (at_hi - at_lo),
            sd,
        }
    }
}

/// The sum of `count * f(value)` over the ranks, in four running sums (one long chain of
/// dependent additions was half of a 10,000-value bootstrap's time).
#[inline(always)]
fn lanes_sum(counts: &[u32], values: &[f64], f: impl Fn(f64) -> f64) -> f64 {
    let mut acc = [0.0f64; 4];
    let (cs, vs) = (counts.chunks_exact(4), values.chunks_exact(4));
    let (c_rest, v_rest) = (cs.remainder(), vs.remainder());
    for (c, v) in cs.zip(vs) {
        for l in 0..4 {
            acc[l] += f64::from(c[l]) * f(v[l]);
        }
    }
    let rest: f64 = c_rest
        .iter()
        .zip(v_rest)
        .map(|(&c, &v)| f64::from(c) * f(v))
        .sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + rest
}

/// The most values one bootstrap draws (resamples x (m + n)): about two seconds here. With more
/// data the bootstrap takes fewer resamples (at least [`MIN_CAPPED_RESAMPLES`]) and says how
/// many it took. The floor keeps the cost linear in m + n: with 1000 (before), 1M + 1M values
/// drew 2 * 10^9 and took 30 s; with 200, 4 * 10^8.
pub const MAX_DRAWS: usize = 200_000_000;
pub const MIN_CAPPED_RESAMPLES: usize = 200;

/// The resamples a bootstrap of `m + n` values takes when `asked` for (see [`MAX_DRAWS`]).
pub fn capped_resamples(asked: usize, values: usize) -> usize {
    asked.min((MAX_DRAWS / values.max(1)).max(MIN_CAPPED_RESAMPLES))
}

/// The resamples a bootstrap of `a` and `b` takes (capped), after checking that each sample has
/// two values and that at least 100 resamples were asked for.
fn checked_resamples(a: &[f64], b: &[f64], resamples: usize) -> Result<usize, StatsError> {
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
    Ok(capped_resamples(resamples, a.len() + b.len()))
}

/// Seeded BCa bootstrap of mean(B)/mean(A), median(B)/median(A) and SD(B)/SD(A).
pub fn bootstrap(
    a: &[f64],
    b: &[f64],
    resamples: usize,
    seed: u64,
    level: f64,
) -> Result<Bootstrap, StatsError> {
    let resamples = checked_resamples(a, b, resamples)?;
    let [means, medians, sds] = resample_ratios(a, b, resamples, seed);
    Ok(Bootstrap {
        resamples,
        seed,
        ratio_means: bca_interval(a, b, Stat::RatioOfMeans, &means, level),
        ratio_medians: bca_interval(a, b, Stat::RatioOfMedians, &medians, level),
        sd_ratio: bca_interval(a, b, Stat::SdRatio, &sds, level),
    })
}

/// B's median over A's with its BCa interval and the bootstrap p-value of equal medians.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MedianRatio {
    pub ci: BcaCi,
    /// Two-sided: twice the smaller share of resampled ratios at or beyond 1 on either side
    /// (the percentile interval inverted), `(k + 1) / (R + 1)` so that it is never 0.
    pub p: f64,
    pub resamples: usize,
}

/// The ratio of medians (B over A) with its BCa interval and a bootstrap p-value, from
/// `resamples` seeded resamples (capped as [`bootstrap`] caps them).
pub fn median_ratio(
    a: &[f64],
    b: &[f64],
    resamples: usize,
    seed: u64,
    level: f64,
) -> Result<MedianRatio, StatsError> {
    let resamples = checked_resamples(a, b, resamples)?;
    let [_, medians, _] = resample_ratios(a, b, resamples, seed);
    let ci =
        bca_interval(a, b, Stat::RatioOfMedians, &medians, level).map_err(StatsError::Invalid)?;
    let below = medians.iter().filter(|r| **r <= 1.0).count();
    let above = medians.iter().filter(|r| **r >= 1.0).count();
    let k = below.min(above) as f64;
    let p = (2.0 * (k + 1.0) / (medians.len() as f64 + 1.0)).min(1.0);
    Ok(MedianRatio { ci, p, resamples })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{Reference, assert_rel};

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
    fn draw_takes_the_words_random_range_takes() {
        use rand::Rng;
        for (seed, range) in [
            (1u64, 1u32),
            (2, 7),
            (3, 10_000),
            (4, 3_000_000_000),
            (5, u32::MAX),
        ] {
            let mut mine = ChaCha20Rng::seed_from_u64(seed);
            let mut theirs = ChaCha20Rng::seed_from_u64(seed);
            for _ in 0..20_000 {
                assert_eq!(
                    draw(&mut mine, range) as usize,
                    theirs.random_range(0..range as usize),
                    "range {range}"
                );
            }
            assert_eq!(mine.get_word_pos(), theirs.get_word_pos(), "range {range}");
        }
    }

    /// The counted resample gives the figures of the values it stands for, drawn as the
    /// bootstrap before it drew them (one value of A per `random_range` in turn).
    #[test]
    fn counted_resamples_equal_the_drawn_values() {
        use rand::Rng;
        let mut data_rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        for case in 0..200 {
            let n = data_rng.random_range(1..40);
            let x: Vec<f64> = (0..n)
                .map(|_| match case % 3 {
                    0 => data_rng.random_range(0..4) as f64,
                    1 => 1e9 + data_rng.random_range(0.0..1.0),
                    _ => data_rng.random_range(-5.0..5.0),
                })
                .collect();
            let mut rng = ChaCha20Rng::seed_from_u64(case);
            let mut check = ChaCha20Rng::seed_from_u64(case);
            let mut ranked = Ranked::new(&x);
            for _ in 0..5 {
                ranked.resample(&mut rng);
                let values: Vec<f64> = (0..n).map(|_| x[check.random_range(0..n)]).collect();
                let f = ranked.figures();
                // Sums in another order: equal to rounding, relative to the values' scale.
                let scale = values.iter().fold(1e-300, |m: f64, v| m.max(v.abs()));
                let close = |got: f64, want: f64| (got - want).abs() <= 1e-13 * scale;
                assert!(
                    close(f.mean, mean(&values)),
                    "{} vs {}",
                    f.mean,
                    mean(&values)
                );
                let want_sd = sd(&values);
                assert!(
                    (f.sd - want_sd).abs() <= 1e-12 * want_sd + 1e-15 * scale,
                    "{} vs {want_sd}",
                    f.sd
                );
                assert_eq!(f.median, median_sorted(&sorted(&values)));
            }
        }
    }

    /// Two threads (a producer of indices) give what one gives, to the last bit.
    #[test]
    fn two_threads_draw_what_one_draws() {
        use rand::Rng;
        let mut data_rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let a: Vec<f64> = (0..3000).map(|_| data_rng.random_range(0.0..9.0)).collect();
        let b: Vec<f64> = (0..2500).map(|_| data_rng.random_range(0.0..9.5)).collect();
        // 800 x 5500 draws: above the parallel threshold.
        let got = resample_ratios(&a, &b, 800, 11);
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let (mut pa, mut pb) = (Ranked::new(&a), Ranked::new(&b));
        assert!(got.iter().all(|g| g.len() == 800));
        for ((means, medians), sds) in got[0].iter().zip(&got[1]).zip(&got[2]) {
            pa.resample(&mut rng);
            pb.resample(&mut rng);
            let (fa, fb) = (pa.figures(), pb.figures());
            assert_eq!(means.to_bits(), (fb.mean / fa.mean).to_bits());
            assert_eq!(medians.to_bits(), (fb.median / fa.median).to_bits());
            assert_eq!(sds.to_bits(), (fb.sd / fa.sd).to_bits());
        }
    }

    #[test]
    fn large_samples_take_fewer_resamples() {
        assert_eq!(capped_resamples(10_000, 200_020), 999);
        assert_eq!(capped_resamples(10_000, 2_000_000), 200);
        assert_eq!(capped_resamples(10_000, 40_000), 5000);
        assert_eq!(capped_resamples(10_000, 200), 10_000);
        assert_eq!(capped_resamples(500, 10_000_000), 200);
        assert_eq!(capped_resamples(150, 10_000_000), 150);
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

    #[test]
    fn median_ratio_tells_a_shift_from_none() {
        let a: Vec<f64> = (0..200).map(|i| 1000.0 + (i * 37 % 101) as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 1.2).collect();
        let same = median_ratio(&a, &a, 2000, 7, 0.95).unwrap();
        assert!(same.p > 0.5, "{same:?}");
        assert!(same.ci.low <= 1.0 && 1.0 <= same.ci.high, "{same:?}");
        let shifted = median_ratio(&a, &b, 2000, 7, 0.95).unwrap();
        assert!(shifted.p < 0.01, "{shifted:?}");
        assert!((shifted.ci.estimate - 1.2).abs() < 1e-9, "{shifted:?}");
        assert!(shifted.ci.low > 1.1 && shifted.ci.high < 1.3, "{shifted:?}");
        assert!(median_ratio(&a[..1], &b, 2000, 7, 0.95).is_err());
    }
}
