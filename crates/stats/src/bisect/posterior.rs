//! Where the one change lies, given every run measured so far: the posterior over the first bad
//! commit k of revisions 0 (good) ..= n (bad), k in 1..=n.
//!
//! Model: a run of revision r has mean `good` when r < k and `bad` when r >= k, normal noise of
//! one unknown SD; flat priors on both means and 1/SD on the SD, a uniform prior on k. The two
//! means and the SD are integrated out, not estimated and plugged in: the marginal likelihood of
//! the runs under k is
//!
//! ```text
//! p(y | k) ∝ (n_good(k) n_bad(k))^(-1/2) S(k)^(-(N - 2)/2)
//! ```
//!
//! with n_good(k), n_bad(k) the runs on either side of k, S(k) the within-side sum of squares and
//! N all runs (the normal linear model's marginal likelihood; every k has the same two
//! parameters, so the flat priors' constants cancel). The uncertainty of the levels therefore
//! enters the posterior: with few runs at the ends, a probe between them moves little mass.
//! Runs of revisions between two probed ones are never measured, so p(y | k) is constant on each
//! segment between probed revisions and only the segments are evaluated.

use std::collections::BTreeMap;

/// The runs of one revision, as a count and a sum.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Sums {
    n: f64,
    sum: f64,
}

impl Sums {
    fn add(&mut self, other: &Sums) {
        self.n += other.n;
        self.sum += other.sum;
    }
}

/// Every run measured so far, per revision (0 = the good end, `n` = the bad end).
#[derive(Debug, Clone)]
pub struct Runs {
    n: usize,
    by_revision: BTreeMap<usize, Sums>,
    /// Every run's revision and value, in arrival order.
    values: Vec<(usize, f64)>,
}

impl Runs {
    /// No runs yet over revisions 0..=n (n >= 1).
    pub fn new(n: usize) -> Runs {
        assert!(n >= 1, "a range needs at least one commit");
        Runs {
            n,
            by_revision: BTreeMap::new(),
            values: Vec::new(),
        }
    }

    /// The last revision (the bad end).
    pub fn commits(&self) -> usize {
        self.n
    }

    /// Record one run of `revision` (0..=n).
    pub fn push(&mut self, revision: usize, y: f64) {
        assert!(
            revision <= self.n,
            "revision {revision} outside 0..={}",
            self.n
        );
        assert!(y.is_finite(), "a run's value must be finite");
        let sums = self.by_revision.entry(revision).or_default();
        sums.n += 1.0;
        sums.sum += y;
        self.values.push((revision, y));
    }

    /// The runs of one revision.
    pub fn of(&self, revision: usize) -> Vec<f64> {
        self.values
            .iter()
            .filter(|(r, _)| *r == revision)
            .map(|&(_, y)| y)
            .collect()
    }

    /// The revisions with runs, in order.
    pub fn probed(&self) -> impl Iterator<Item = usize> + '_ {
        self.by_revision.keys().copied()
    }

    /// How many runs in all.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The posterior probability of each k in 1..=n (index k - 1), or None while it is not
    /// defined: no run at either end, or fewer than three runs, or no spread at all.
    pub fn posterior(&self) -> Option<Vec<f64>> {
        let segments = self.segment_log_likelihoods()?;
        let mut post = vec![0.0; self.n];
        let top = segments
            .iter()
            .map(|s| s.2)
            .fold(f64::NEG_INFINITY, f64::max);
        for &(lo, hi, ll) in &segments {
            let w = (ll - top).exp();
            post[lo - 1..hi].iter_mut().for_each(|p| *p = w);
        }
        let total: f64 = post.iter().sum();
        post.iter_mut().for_each(|p| *p /= total);
        Some(post)
    }

    /// (first k, last k, log p(y | k)) of each segment of k with one likelihood.
    fn segment_log_likelihoods(&self) -> Option<Vec<(usize, usize, f64)>> {
        let first = self.by_revision.get(&0)?;
        self.by_revision.get(&self.n)?;
        let total_n = self.values.len() as f64;
        if total_n < 3.0 {
            return None;
        }
        let mut all = Sums::default();
        self.by_revision.values().for_each(|s| all.add(s));
        // Probed revisions in order; a segment (p_j, p_j+1] puts p_0..=p_j on the good side.
        let probed: Vec<(usize, Sums)> = self.by_revision.iter().map(|(r, s)| (*r, *s)).collect();
        let mut good = *first;
        let mut out = Vec::with_capacity(probed.len());
        let mut any_spread = false;
        for pair in probed.windows(2) {
            let (lo, hi) = (pair[0].0 + 1, pair[1].0);
            let bad = Sums {
                n: all.n - good.n,
                sum: all.sum - good.sum,
            };
            let s = self.within(pair[0].0, &good, &bad);
            any_spread |= s > 0.0;
            let ll = -0.5 * (good.n * bad.n).ln() - 0.5 * (total_n - 2.0) * s.ln();
            out.push((lo, hi, ll));
            good.add(&pair[1].1);
        }
        any_spread.then_some(out)
    }

    /// The within-side sum of squares with revisions up to `boundary` on the good side, from the
    /// values about each side's mean (running sums of squares lose digits when the spread is
    /// small beside the level).
    fn within(&self, boundary: usize, good: &Sums, bad: &Sums) -> f64 {
        let (mg, mb) = (good.sum / good.n, bad.sum / bad.n);
        self.values
            .iter()
            .map(|&(r, y)| (y - if r <= boundary { mg } else { mb }).powi(2))
            .sum()
    }
}

/// P(k <= r) for each r in 0..=n, from a posterior over k in 1..=n.
pub fn cumulative(post: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(post.len() + 1);
    let mut acc = 0.0;
    out.push(0.0);
    for p in post {
        acc += p;
        out.push(acc.min(1.0));
    }
    out
}

/// The shortest run of consecutive k holding at least `mass` of the posterior: (first k, last k,
/// its mass). The earliest such run on ties.
pub fn shortest_interval(post: &[f64], mass: f64) -> (usize, usize, f64) {
    let (mut best, mut lo, mut acc) = ((1, post.len(), 1.0), 0, 0.0);
    let mut best_len = usize::MAX;
    for (hi, p) in post.iter().enumerate() {
        acc += p;
        while lo < hi && acc - post[lo] >= mass {
            acc -= post[lo];
            lo += 1;
        }
        if acc >= mass && hi - lo + 1 < best_len {
            best_len = hi - lo + 1;
            best = (lo + 1, hi + 1, acc.min(1.0));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// p(y | k) by brute force: the same formula from each k's two groups of values.
    fn brute(runs: &[(usize, f64)], n: usize) -> Vec<f64> {
        let ll: Vec<f64> = (1..=n)
            .map(|k| {
                let g: Vec<f64> = runs.iter().filter(|r| r.0 < k).map(|r| r.1).collect();
                let b: Vec<f64> = runs.iter().filter(|r| r.0 >= k).map(|r| r.1).collect();
                let ss = |v: &[f64]| {
                    let m = v.iter().sum::<f64>() / v.len() as f64;
                    v.iter().map(|x| (x - m).powi(2)).sum::<f64>()
                };
                let s = ss(&g) + ss(&b);
                let nn = runs.len() as f64;
                -0.5 * (g.len() as f64 * b.len() as f64).ln() - 0.5 * (nn - 2.0) * s.ln()
            })
            .collect();
        let top = ll.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let w: Vec<f64> = ll.iter().map(|l| (l - top).exp()).collect();
        let t: f64 = w.iter().sum();
        w.iter().map(|x| x / t).collect()
    }

    #[test]
    fn segments_equal_the_brute_force_posterior() {
        let runs = [
            (0, 10.1),
            (0, 9.8),
            (0, 10.3),
            (9, 11.2),
            (9, 11.0),
            (9, 10.7),
            (4, 10.0),
            (4, 10.4),
            (6, 11.1),
            (6, 10.8),
            (4, 9.9),
        ];
        let mut r = Runs::new(9);
        runs.iter().for_each(|&(rev, y)| r.push(rev, y));
        let got = r.posterior().unwrap();
        let want = brute(&runs, 9);
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
        }
        // The change is after 4 and at or before 6: k in 5..=6 holds most of the mass.
        assert!(got[4] + got[5] > 0.8, "{got:?}");
    }

    #[test]
    fn undefined_without_both_ends_or_spread() {
        let mut r = Runs::new(4);
        r.push(0, 1.0);
        r.push(0, 2.0);
        r.push(2, 1.5);
        assert!(r.posterior().is_none(), "no run of the bad end");
        let mut flat = Runs::new(4);
        for rev in [0, 0, 4, 4] {
            flat.push(rev, 3.0);
        }
        assert!(flat.posterior().is_none(), "no spread at all");
    }

    #[test]
    fn few_runs_at_the_ends_move_little_mass() {
        // One probe far from both ends' means: with 2 runs per end the levels are uncertain and
        // the probe's side stays open; with 20 per end it is settled.
        let mk = |per_end: usize| {
            let mut r = Runs::new(8);
            for i in 0..per_end {
                let e = if i % 2 == 0 { 0.3 } else { -0.3 };
                r.push(0, 10.0 + e);
                r.push(8, 11.0 + e);
            }
            r.push(4, 10.75);
            r.push(4, 10.65);
            let c = cumulative(&r.posterior().unwrap());
            c[4]
        };
        let (few, many) = (mk(2), mk(20));
        assert!(
            few < many && many > 0.9,
            "P(k <= 4): {few} with 2 runs per end, {many} with 20"
        );
    }

    #[test]
    fn the_shortest_interval_holds_the_mass() {
        let post = [0.01, 0.02, 0.5, 0.4, 0.05, 0.02];
        assert_eq!(shortest_interval(&post, 0.9), (3, 4, 0.9));
        let (lo, hi, m) = shortest_interval(&post, 0.95);
        assert!(m >= 0.95 && hi - lo == 2, "{lo}..{hi} {m}");
        assert_eq!(shortest_interval(&[1.0], 0.95), (1, 1, 1.0));
        assert_eq!(cumulative(&post).len(), 7);
    }
}
