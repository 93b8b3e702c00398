//! Rank-based robust checks: the Mann-Whitney U test (exact null distribution for small samples
//! without ties, normal approximation with tie and continuity correction otherwise, as scipy's
//! `mannwhitneyu`) and the Hodges-Lehmann shift estimate with its rank-inverted confidence
//! interval (Hollander and Wolfe, Nonparametric Statistical Methods, 3.2).

use super::StatsError;
use super::dist::{norm_ppf, norm_sf};
use abperf_model::describe::sorted;
use serde::Serialize;

/// Largest m+n for which the exact distribution is used (i128 counts stay exact: C(120,60) <
/// 2^127).
pub const EXACT_MAX_TOTAL: usize = 120;

/// How the p-value was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Exact,
    Asymptotic,
}

/// Mann-Whitney U test of A against B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MannWhitney {
    /// U of the first sample (A): number of pairs with a > b, ties counting one half.
    pub u_a: f64,
    /// Two-sided p-value.
    pub p: f64,
    pub method: Method,
    pub ties: bool,
}

/// Mid-ranks (1-based) of the concatenation of `a` and `b`, and the tie term sum(t^3 - t).
fn midranks(all: &[f64]) -> (Vec<f64>, f64) {
    let mut idx: Vec<usize> = (0..all.len()).collect();
    idx.sort_by(|&i, &j| all[i].total_cmp(&all[j]));
    let mut ranks = vec![0.0; all.len()];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && all[idx[j + 1]] == all[idx[i]] {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            ranks[k] = r;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    (ranks, tie_term)
}

/// Counts of U = 0..=m*n under H0 for sample sizes m and n (no ties): the coefficients of the
/// Gaussian binomial [m+n choose m]_q.
pub fn u_counts(m: usize, n: usize) -> Vec<i128> {
    let deg = m * n;
    let mut c = vec![0i128; deg + 1];
    c[0] = 1;
    // prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i); after step i the product is [n+i choose i]_q.
    for i in 1..=m {
        let up = n + i;
        for k in (up..=deg).rev() {
            c[k] -= c[k - up];
        }
        for k in i..=deg {
            c[k] += c[k - i];
        }
    }
    c
}

/// P(U >= k) from counts (two-sided p uses the larger U, as scipy).
fn exact_sf(counts: &[i128], k: usize) -> f64 {
    let total: i128 = counts.iter().sum();
    let upper: i128 = counts[k.min(counts.len())..].iter().sum();
    upper as f64 / total as f64
}

/// Mann-Whitney U test, two-sided. `exact`: `None` chooses (exact when there are no ties and
/// m+n <= [`EXACT_MAX_TOTAL`]); `Some(true)` forces exact (ignored with ties).
pub fn mann_whitney(a: &[f64], b: &[f64], exact: Option<bool>) -> Result<MannWhitney, StatsError> {
    for (what, x) in [("baseline", a), ("variant", b)] {
        if x.is_empty() {
            return Err(StatsError::TooFew {
                what,
                need: 1,
                got: 0,
            });
        }
    }
    let (m, n) = (a.len(), b.len());
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let (ranks, tie_term) = midranks(&all);
    let r1: f64 = ranks[..m].iter().sum();
    let u_a = r1 - (m * (m + 1)) as f64 / 2.0;
    let mn = (m * n) as f64;
    let u_big = u_a.max(mn - u_a);
    let ties = tie_term > 0.0;
    let use_exact = !ties && exact.unwrap_or(m + n <= EXACT_MAX_TOTAL) && m + n <= EXACT_MAX_TOTAL;
    if use_exact {
        let counts = u_counts(m.min(n), m.max(n));
        let p = (2.0 * exact_sf(&counts, u_big.round() as usize)).min(1.0);
        return Ok(MannWhitney {
            u_a,
            p,
            method: Method::Exact,
            ties,
        });
    }
    let total = (m + n) as f64;
    let var = mn / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
    if var <= 0.0 {
        // Every value is the same: no evidence of any shift.
        return Ok(MannWhitney {
            u_a,
            p: 1.0,
            method: Method::Asymptotic,
            ties,
        });
    }
    let z = (u_big - mn / 2.0 - 0.5) / var.sqrt();
    let p = (2.0 * norm_sf(z)).clamp(0.0, 1.0);
    Ok(MannWhitney {
        u_a,
        p,
        method: Method::Asymptotic,
        ties,
    })
}

/// Hodges-Lehmann estimate of the shift B - A and its confidence interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HodgesLehmann {
    /// Median of all pairwise differences b_j - a_i.
    pub shift: f64,
    /// Rank-inverted confidence interval; `None` when the samples are too small to reach the
    /// level.
    pub ci: Option<(f64, f64)>,
    pub level: f64,
}

/// Hodges-Lehmann shift of B relative to A with a `level` (e.g. 0.95) interval
/// [D(k), D(mn+1-k)] over the sorted pairwise differences, where k is the largest integer with
/// P(U <= k-1) <= (1-level)/2 under H0 (exact distribution without ties and for m+n <=
/// [`EXACT_MAX_TOTAL`], normal approximation with tie correction otherwise).
pub fn hodges_lehmann(a: &[f64], b: &[f64], level: f64) -> Result<HodgesLehmann, StatsError> {
    for (what, x) in [("baseline", a), ("variant", b)] {
        if x.is_empty() {
            return Err(StatsError::TooFew {
                what,
                need: 1,
                got: 0,
            });
        }
    }
    let (m, n) = (a.len(), b.len());
    // The m*n pairwise differences are never formed (20 vs 200,000 values would be 4 million,
    // 200,000 vs 200,000 would be 320 GB): their order statistics are selected in
    // O((m+n) log) (`PairwiseDifferences`).
    let d = PairwiseDifferences::new(a, b);
    let shift = {
        // median_sorted's interpolation (type 7 at q = 0.5) over the sorted differences.
        let h = (m * n - 1) as f64 * 0.5;
        let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
        let (dl, dh) = (d.kth(lo), d.kth(hi));
        dl + (h - lo as f64) * (dh - dl)
    };
    let half_alpha = (1.0 - level) / 2.0;
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let (_, tie_term) = midranks(&all);
    let mn = m * n;
    let k: usize = if tie_term == 0.0 && m + n <= EXACT_MAX_TOTAL {
        let counts = u_counts(m.min(n), m.max(n));
        let total: i128 = counts.iter().sum();
        // Largest k with cdf(k-1) <= half_alpha.
        let mut cum: i128 = 0;
        let mut k = 0;
        for (u, &c) in counts.iter().enumerate() {
            cum += c;
            if cum as f64 / total as f64 <= half_alpha {
                k = u + 1;
            } else {
                break;
            }
        }
        k
    } else {
        let total = (m + n) as f64;
        let var = mn as f64 / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
        let z = norm_ppf(1.0 - half_alpha);
        let kf = (mn as f64 / 2.0 + 0.5 - z * var.max(0.0).sqrt()).floor();
        if kf < 1.0 { 0 } else { kf as usize }
    };
    let ci = (k >= 1 && 2 * k <= mn + 1).then(|| (d.kth(k - 1), d.kth(mn - k)));
    Ok(HodgesLehmann { shift, ci, level })
}

/// The differences `b[j] - a[i]` (as computed in floating point) of two samples, sorted in
/// total order, without forming them: the k-th is found by bisection over the total order of
/// f64, counting the differences at or below a bound in one O(m+n) merge-like pass (floating
/// subtraction is monotone, so for sorted samples the count is a staircase). 64 passes at most.
struct PairwiseDifferences {
    a: Vec<f64>,
    b: Vec<f64>,
}

/// f64 -> u64 preserving total order (`f64::total_cmp`).
fn order_key(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

fn from_order_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

impl PairwiseDifferences {
    fn new(a: &[f64], b: &[f64]) -> Self {
        PairwiseDifferences {
            a: sorted(a),
            b: sorted(b),
        }
    }

    /// How many differences are at or below the difference with order key `t`.
    fn count_le(&self, t: u64) -> usize {
        let m = self.a.len();
        let mut p = 0; // first i with b[j] - a[i] <= t; grows with j
        let mut count = 0;
        for &y in &self.b {
            while p < m && order_key(y - self.a[p]) > t {
                p += 1;
            }
            count += m - p;
        }
        count
    }

    /// The k-th smallest difference (0-based).
    fn kth(&self, k: usize) -> f64 {
        let (m, n) = (self.a.len(), self.b.len());
        let mut lo = order_key(self.b[0] - self.a[m - 1]);
        let mut hi = order_key(self.b[n - 1] - self.a[0]);
        // Smallest key with more than k differences at or below it.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.count_le(mid) > k {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        from_order_key(lo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{Reference, assert_rel};

    #[test]
    fn u_counts_are_binomial() {
        let c = u_counts(3, 4);
        assert_eq!(c.iter().sum::<i128>(), 35);
        assert_eq!(c.len(), 13);
        assert_eq!(c[0], 1);
        assert_eq!(c[12], 1);
        let big: i128 = u_counts(60, 60).iter().sum(); // C(120, 60)
        assert_eq!(big, 96614908840363322603893139521372656);
    }

    #[test]
    fn mann_whitney_matches_scipy() {
        let r = Reference::load();
        for c in r.cases("mannwhitneyu") {
            let (a, b) = (c.vec("a"), c.vec("b"));
            let exact = c.str("method") == "exact";
            let mw = mann_whitney(&a, &b, Some(exact)).unwrap();
            assert_eq!(
                mw.method == Method::Exact,
                exact,
                "method for {}",
                c.str("name")
            );
            assert_rel(mw.u_a, c.num("u"), 1e-12, "U");
            assert_rel(mw.p, c.num("p"), 1e-9, &format!("MWU p {}", c.str("name")));
        }
    }

    #[test]
    fn pairwise_selection_equals_sorting_every_difference() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
        for case in 0..300 {
            let m = rng.random_range(1..12);
            let n = rng.random_range(1..12);
            // Ties, negative values, signed zeros and wide magnitudes.
            let pick = |rng: &mut rand_chacha::ChaCha8Rng| match rng.random_range(0..6) {
                0 => 0.0,
                1 => -0.0,
                2 => rng.random_range(-3..4) as f64,
                3 => rng.random_range(-1e9..1e9),
                _ => rng.random_range(0.0..1.0),
            };
            let a: Vec<f64> = (0..m).map(|_| pick(&mut rng)).collect();
            let b: Vec<f64> = (0..n).map(|_| pick(&mut rng)).collect();
            let mut all: Vec<f64> = b
                .iter()
                .flat_map(|y| a.iter().map(move |x| y - x))
                .collect();
            all.sort_by(f64::total_cmp);
            let d = PairwiseDifferences::new(&a, &b);
            for (k, want) in all.iter().enumerate() {
                let got = d.kth(k);
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "case {case} k {k}: {got} vs {want} ({a:?} {b:?})"
                );
            }
        }
    }

    #[test]
    fn hodges_lehmann_is_linear_in_its_input() {
        // 200,000 against 200,000 values: 4e10 differences, never formed.
        let a: Vec<f64> = (0..200_000).map(|i| (i % 977) as f64 + 100.0).collect();
        let b: Vec<f64> = (0..200_000).map(|i| (i % 991) as f64 + 101.0).collect();
        let t = std::time::Instant::now();
        let hl = hodges_lehmann(&a, &b, 0.95).unwrap();
        assert!(hl.shift.is_finite() && hl.ci.is_some());
        assert!(t.elapsed().as_secs() < 30, "{:?}", t.elapsed());
    }

    #[test]
    fn hodges_lehmann_matches_direct() {
        let r = Reference::load();
        for c in r.cases("hodges_lehmann") {
            let (a, b) = (c.vec("a"), c.vec("b"));
            let hl = hodges_lehmann(&a, &b, 0.95).unwrap();
            assert_rel(hl.shift, c.num("shift"), 1e-12, "HL shift");
            let (lo, hi) = hl.ci.unwrap();
            assert_rel(
                lo,
                c.num("low"),
                1e-12,
                &format!("HL low {}", c.str("name")),
            );
            assert_rel(
                hi,
                c.num("high"),
                1e-12,
                &format!("HL high {}", c.str("name")),
            );
        }
    }

    #[test]
    fn all_ties_give_p_one() {
        let mw = mann_whitney(&[2.0; 6], &[2.0; 6], None).unwrap();
        assert_eq!(mw.p, 1.0);
        assert!(hodges_lehmann(&[2.0; 6], &[2.0; 6], 0.95).unwrap().shift == 0.0);
        assert!(
            hodges_lehmann(&[1.0, 2.0], &[3.0], 0.95)
                .unwrap()
                .ci
                .is_none()
        );
    }
}
