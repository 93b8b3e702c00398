//! Sen's slope (the median of the pairwise slopes (x_j - x_i) / (t_j - t_i), t_j != t_i) of one
//! or more series without forming the n(n-1)/2 slopes: 10,000 runs per variant took 2 GB that
//! way, 50,000 did not fit. The result is the very one sorting every slope gives, bit for bit.
//!
//! How: whether a pair's exact slope is below c is whether x - c t is out of order between its
//! two runs, so the pairs below c are counted as inversions in O(n log n). Computed in floating
//! point, that test can misjudge only pairs whose exact slope lies within a known bound `E` of c,
//! and a pair's slope as computed ((x_j - x_i) / (t_j - t_i), three roundings) is within 4 ulp of
//! its exact slope. A bisection on c, starting from the quantiles of a seeded sample of pairs,
//! narrows an interval [lo, hi] around the wanted ranks until it holds O(n) pairs; the pairs
//! whose test-slope lies in [lo - E, hi + E] are then listed (O(n log n + listed), as the pairs
//! two orders disagree on) and their slopes computed as the definition computes them: with the
//! pairs surely below lo counted and those surely above hi left out, the wanted ranks are exact
//! positions in the sorted listed slopes. If they are not inside (a misjudged edge), the interval
//! widens and the step repeats. The one class of ties that can hold a share of all pairs, slope
//! 0 (equal values), is counted exactly by itself. Memory O(n); time O(n log n) per bisection
//! step, some 20-40 steps.

use super::inversions::{strict_inversions_across_groups, visit_discordant};
use abperf_model::describe::{median_sorted, sorted};
use rand::{Rng, SeedableRng};

/// Below this many pairs the slopes are simply formed and sorted.
const FORM_ALL_BELOW: u64 = 1 << 16;
/// Pairs sampled for the first interval.
const SAMPLE: usize = 1 << 15;

/// One series in order of t (equal t by x, ascending).
struct Series {
    t: Vec<f64>,
    x: Vec<f64>,
    /// One past the last position of each run of equal t.
    group_end: Vec<usize>,
    pairs: u64,
}

impl Series {
    fn new(t: &[f64], x: &[f64]) -> Series {
        let mut v: Vec<(f64, f64)> = t.iter().copied().zip(x.iter().copied()).collect();
        v.sort_by(|p, q| p.0.total_cmp(&q.0).then(p.1.total_cmp(&q.1)));
        let (t, x): (Vec<f64>, Vec<f64>) = v.into_iter().unzip();
        let mut group_end = Vec::new();
        let mut pairs = (t.len() as u64) * (t.len() as u64).saturating_sub(1) / 2;
        let mut start = 0;
        for p in 1..=t.len() {
            if p == t.len() || t[p] != t[start] {
                let g = (p - start) as u64;
                pairs -= g * (g - 1) / 2;
                group_end.push(p);
                start = p;
            }
        }
        Series {
            t,
            x,
            group_end,
            pairs,
        }
    }

    /// The slope as the definition computes it (i before j in t order).
    fn slope(&self, i: usize, j: usize) -> f64 {
        (self.x[j] - self.x[i]) / (self.t[j] - self.t[i])
    }

    fn keys(&self, c: f64) -> Vec<f64> {
        self.x
            .iter()
            .zip(&self.t)
            .map(|(&x, &t)| x - c * t)
            .collect()
    }
}

/// Sen's slope over the pairs within each `(t, x)` series (pairs across series are not
/// compared); `None` without a pair of distinct t.
pub(crate) fn sen_slope_of(series: &[(&[f64], &[f64])]) -> Option<f64> {
    let s: Vec<Series> = series.iter().map(|(t, x)| Series::new(t, x)).collect();
    let pairs: u64 = s.iter().map(|s| s.pairs).sum();
    if pairs == 0 {
        return None;
    }
    let Some(scale) = Scale::of(&s) else {
        return Some(form_all(&s));
    };
    if pairs < FORM_ALL_BELOW {
        return Some(form_all(&s));
    }
    let h = (pairs - 1) as f64 * 0.5;
    let (k0, k1) = (h.floor() as u64, h.ceil() as u64);
    let sel = Selection { s: &s, scale };
    let v = sel.select(&[k0, k1]);
    // median_sorted's interpolation between the two middle slopes.
    Some(v[0] + (h - k0 as f64) * (v[1] - v[0]))
}

/// Every slope formed and sorted (small inputs, and values outside the range the bounds are
/// worked out for).
fn form_all(series: &[Series]) -> f64 {
    let mut slopes = Vec::new();
    for s in series {
        for i in 0..s.x.len() {
            for j in i + 1..s.x.len() {
                if s.t[j] != s.t[i] {
                    slopes.push(s.slope(i, j));
                }
            }
        }
    }
    median_sorted(&sorted(&slopes))
}

/// Magnitudes behind the error bounds.
#[derive(Clone, Copy)]
struct Scale {
    x_max: f64,
    t_max: f64,
    dt_min: f64,
    /// Every slope lies within +-bound.
    bound: f64,
}

impl Scale {
    /// `None` outside the range where the bounds hold with room (non-finite values, values
    /// beyond 1e100 or nonzero ones below 1e-100, t spread over more than 1e12 of its smallest
    /// step).
    fn of(series: &[Series]) -> Option<Scale> {
        let (mut x_max, mut t_max, mut dt_min) = (0.0f64, 0.0f64, f64::INFINITY);
        for s in series {
            for (&x, &t) in s.x.iter().zip(&s.t) {
                let ok = |v: f64| v == 0.0 || (v.abs() >= 1e-100 && v.abs() <= 1e100);
                if !ok(x) || !ok(t) {
                    return None;
                }
                x_max = x_max.max(x.abs());
                t_max = t_max.max(t.abs());
            }
            for w in s.t.windows(2) {
                if w[1] > w[0] {
                    dt_min = dt_min.min(w[1] - w[0]);
                }
            }
        }
        if !(dt_min.is_finite() && t_max / dt_min <= 1e12) {
            return None;
        }
        let bound = 2.0 * x_max / dt_min * 1.01 + f64::MIN_POSITIVE;
        Some(Scale {
            x_max,
            t_max,
            dt_min,
            bound,
        })
    }

    /// How far from c the exact slope of a pair the floating test `x - c t` misjudges, or whose
    /// computed slope is on the other side of c, can be at most (twice the worked-out bound).
    fn margin(&self, c: f64) -> f64 {
        let e = |c: f64| {
            2.0 * f64::EPSILON * (self.x_max + 2.0 * c * self.t_max) / self.dt_min
                + 4.0 * f64::EPSILON * c
                + 4.0 * f64::MIN_POSITIVE
        };
        e(c.abs() + 2.0 * e(c.abs()))
    }
}

struct Selection<'a> {
    s: &'a [Series],
    scale: Scale,
}

impl Selection<'_> {
    fn pairs(&self) -> u64 {
        self.s.iter().map(|s| s.pairs).sum()
    }

    /// Pairs whose floating test says their slope is below c.
    fn below(&self, c: f64) -> u64 {
        self.s
            .iter()
            .map(|s| strict_inversions_across_groups(&s.keys(c), &s.group_end))
            .sum()
    }

    /// Pairs whose slope is -0.0 or below, and those that are 0 (equal values): exact, since a
    /// difference of two unequal values is never 0 and does not underflow in [`Scale`]'s range.
    fn zeros(&self) -> (u64, u64) {
        let (mut neg, mut zero) = (0, 0);
        for s in self.s {
            // Pairs with x_j < x_i, and with x_j <= x_i (keys at c = 0 are the values).
            let lt = strict_inversions_across_groups(&s.x, &s.group_end);
            let negated: Vec<f64> = s.x.iter().map(|x| -x).collect();
            let gt = strict_inversions_across_groups(&negated, &s.group_end);
            neg += lt;
            zero += s.pairs - lt - gt;
        }
        (neg, zero)
    }

    /// The slopes of ranks `ks` (ascending, 0-based) in `f64::total_cmp` order.
    fn select(&self, ks: &[u64]) -> Vec<f64> {
        let (neg, zero) = self.zeros();
        let mut out = Vec::new();
        for &k in ks {
            if k >= neg && k < neg + zero {
                // -0.0 and 0.0 interpolate alike: the sign of a zero rank does not matter.
                out.push(0.0);
            } else {
                out.push(f64::NAN);
            }
        }
        let rest: Vec<u64> = ks
            .iter()
            .zip(&out)
            .filter(|(_, v)| v.is_nan())
            .map(|(&k, _)| k)
            .collect();
        if !rest.is_empty() {
            let (lo, hi) = self.first_interval(&rest);
            let found = self.locate(&rest, lo, hi);
            let mut it = found.into_iter();
            for v in out.iter_mut().filter(|v| v.is_nan()) {
                *v = it.next().unwrap_or(0.0);
            }
        }
        out
    }

    /// An interval [lo, hi] with (by the floating test) at most ks[0] pairs below lo and more
    /// than ks[last] below hi: from the quantiles of a seeded sample of pairs where they
    /// qualify, else the slopes' bounds.
    fn first_interval(&self, ks: &[u64]) -> (f64, f64) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x5e45_10be);
        let weights: Vec<u64> = self.s.iter().map(|s| s.pairs).collect();
        let total = self.pairs();
        let mut sample = Vec::with_capacity(SAMPLE);
        while sample.len() < SAMPLE {
            let mut w = rng.random_range(0..total);
            let g = weights
                .iter()
                .position(|&p| {
                    let inside = w < p;
                    w = w.saturating_sub(p);
                    inside
                })
                .unwrap_or(0);
            let s = &self.s[g];
            let (i, j) = (
                rng.random_range(0..s.x.len()),
                rng.random_range(0..s.x.len()),
            );
            let (i, j) = (i.min(j), i.max(j));
            if s.t[i] != s.t[j] {
                sample.push(s.slope(i, j));
            }
        }
        sample.sort_by(f64::total_cmp);
        let at = |k: u64, side: f64| {
            let p = k as f64 / total as f64;
            let m = SAMPLE as f64;
            let spread = 4.0 * (m * p * (1.0 - p)).sqrt() + 2.0;
            let i = (p * m + side * spread).round();
            (i >= 0.0 && i < m).then(|| sample[i as usize])
        };
        let (first, last) = (ks[0], ks[ks.len() - 1]);
        let lo = at(first, -1.0)
            .filter(|&c| self.below(c) <= first)
            .unwrap_or(-self.scale.bound);
        let hi = at(last, 1.0)
            .filter(|&c| self.below(c) > last)
            .unwrap_or(self.scale.bound);
        (lo, hi)
    }

    /// Bisect [lo, hi] until it holds few pairs, then list them (splitting the ranks when the
    /// midpoint falls between them).
    fn locate(&self, ks: &[u64], mut lo: f64, mut hi: f64) -> Vec<f64> {
        let budget = 4 * self.s.iter().map(|s| s.x.len() as u64).sum::<u64>() + (1 << 16);
        let (mut below_lo, mut below_hi) = (self.below(lo), self.below(hi));
        while below_hi.saturating_sub(below_lo) > budget
            && hi - lo > 2.0 * self.scale.margin(lo.abs().max(hi.abs()))
        {
            let mid = lo / 2.0 + hi / 2.0;
            if mid <= lo || mid >= hi {
                break;
            }
            let c = self.below(mid);
            if c > ks[ks.len() - 1] {
                (hi, below_hi) = (mid, c);
            } else if c <= ks[0] {
                (lo, below_lo) = (mid, c);
            } else {
                let split = ks.iter().position(|&k| k >= c).unwrap_or(ks.len());
                let mut v = self.locate(&ks[..split], lo, mid);
                v.extend(self.locate(&ks[split..], mid, hi));
                return v;
            }
        }
        self.listed(ks, lo, hi)
    }

    /// The exact slopes of ranks `ks`, listing the pairs around [lo, hi] (widening it until the
    /// ranks are inside).
    fn listed(&self, ks: &[u64], mut lo: f64, mut hi: f64) -> Vec<f64> {
        loop {
            let e = self.scale.margin(lo.abs().max(hi.abs()));
            let (a, b) = (lo - e, hi + e);
            // Surely below lo: the test says below a.
            let mut below = self.below(a);
            let mut kept = Vec::new();
            for s in self.s {
                let (ka, kb) = (s.keys(a), s.keys(b));
                let n = s.x.len() as u32;
                // i before j in `first` when the test does not say slope < a; j before i in
                // `second` when it says slope <= b.
                let mut first: Vec<u32> = (0..n).collect();
                // Keys equal by `==` (-0.0 and 0.0 too) tie, as in `below`.
                let by = |k: &[f64], i: u32, j: u32| {
                    k[i as usize]
                        .partial_cmp(&k[j as usize])
                        .unwrap_or(std::cmp::Ordering::Equal)
                };
                first.sort_by(|&i, &j| by(&ka, i, j).then(i.cmp(&j)));
                let mut second: Vec<u32> = (0..n).collect();
                second.sort_by(|&i, &j| by(&kb, i, j).then(j.cmp(&i)));
                visit_discordant(&first, &second, |i, j| {
                    let (i, j) = (i as usize, j as usize);
                    if i < j && s.t[i] != s.t[j] {
                        let f = s.slope(i, j);
                        if f.total_cmp(&lo).is_lt() {
                            below += 1;
                        } else if f.total_cmp(&hi).is_le() {
                            kept.push(f);
                        }
                    }
                });
            }
            let inside = ks
                .iter()
                .all(|&k| k >= below && k < below + kept.len() as u64);
            if inside {
                kept.sort_by(f64::total_cmp);
                return ks.iter().map(|&k| kept[(k - below) as usize]).collect();
            }
            let w = (hi - lo).max(e) * 2.0;
            lo = (lo - w).max(-self.scale.bound);
            hi = (hi + w).min(self.scale.bound);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition: every slope formed, sorted, the median taken.
    fn brute(series: &[(&[f64], &[f64])]) -> Option<f64> {
        let mut slopes = Vec::new();
        for (t, x) in series {
            let mut v: Vec<(f64, f64)> = t.iter().copied().zip(x.iter().copied()).collect();
            v.sort_by(|p, q| p.0.total_cmp(&q.0));
            for i in 0..v.len() {
                for j in i + 1..v.len() {
                    if v[j].0 != v[i].0 {
                        slopes.push((v[j].1 - v[i].1) / (v[j].0 - v[i].0));
                    }
                }
            }
        }
        (!slopes.is_empty()).then(|| median_sorted(&sorted(&slopes)))
    }

    fn check(series: &[(&[f64], &[f64])], what: &str) {
        let want = brute(series);
        let got = sen_slope_of(series);
        assert_eq!(
            got.map(f64::to_bits),
            want.map(f64::to_bits),
            "{what}: {got:?} vs {want:?}"
        );
    }

    #[test]
    fn equals_sorting_every_slope() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(46);
        for case in 0..60 {
            // Above FORM_ALL_BELOW pairs, so the selection is what is tested.
            let n = rng.random_range(370..700);
            let kind = case % 6;
            let series: Vec<(Vec<f64>, Vec<f64>)> = (0..1 + case % 2)
                .map(|_| {
                    let t: Vec<f64> = (0..n)
                        .map(|i| match kind {
                            // Ties in t (runs sharing an index), and a shuffled order.
                            0 => (i / 3) as f64,
                            1 => rng.random_range(0..n) as f64,
                            _ => i as f64,
                        })
                        .collect();
                    let x: Vec<f64> = (0..n)
                        .map(|i| match kind {
                            // Few distinct values: many zero and equal slopes.
                            2 => rng.random_range(0..4) as f64,
                            3 => 0.01 + 1e-9 * i as f64 + rng.random_range(0.0..1e-6),
                            4 => [0.0, -0.0, 1.0, -2.5][rng.random_range(0..4)],
                            _ => rng.random_range(-1e3..1e3),
                        })
                        .collect();
                    (t, x)
                })
                .collect();
            let refs: Vec<(&[f64], &[f64])> = series
                .iter()
                .map(|(t, x)| (t.as_slice(), x.as_slice()))
                .collect();
            check(&refs, &format!("case {case}"));
        }
    }

    #[test]
    fn small_and_degenerate() {
        check(&[(&[1.0, 1.0], &[1.0, 2.0])], "one t");
        check(&[(&[], &[])], "empty");
        check(&[(&[0.0, 1.0, 2.0], &[1.0, f64::NAN, 3.0])], "NaN");
        let t: Vec<f64> = (0..600).map(f64::from).collect();
        check(&[(&t, &[5.0; 600])], "constant");
        let x: Vec<f64> = t.iter().map(|v| 3.0 * v + 1.0).collect();
        check(&[(&t, &x)], "a line");
    }
}
