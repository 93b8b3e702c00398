//! The seeded simulation behind docs/bisect.md's figures (`cargo bench --bench bisect`): ranges
//! of 64 to 1,024 commits, one planted change of 1 to 3 noise SDs (or none), normal runs of SD 1,
//! run through [`Bisection`] and through plain bisection with a fixed number of runs per step.

use super::search::{Ab, Bisection, Outcome, Settings, Step, sequential_ab};
use crate::dist::norm_ppf;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One simulated range: revisions 0..=n, the first bad commit and the step (in SDs), if any.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub n: usize,
    pub change: Option<(usize, f64)>,
}

/// `count` ranges: n log-uniform in 64..=1024, the change's commit uniform in 1..=n and its size
/// uniform in 1..3 SDs with either sign; none when `with_change` is false.
pub fn ranges(count: usize, with_change: bool, seed: u64) -> Vec<Range> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let n = 2f64.powf(rng.random_range(6.0..=10.0)).round() as usize;
            let change = with_change.then(|| {
                let size = rng.random_range(1.0..3.0);
                let sign = if rng.random::<bool>() { 1.0 } else { -1.0 };
                (rng.random_range(1..=n), sign * size)
            });
            Range { n, change }
        })
        .collect()
}

/// What a method did over many ranges.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    pub ranges: usize,
    /// Ranges where a single commit was named (for the bisection: a confirmed candidate).
    pub named: usize,
    /// ... and it was the planted one.
    pub right: usize,
    /// Ranges where the search stopped at one commit, confirmed or not (plain bisection: named).
    pub candidates: usize,
    /// ... and it was the planted one.
    pub candidates_right: usize,
    pub runs: usize,
    /// Distinct revisions measured besides the two ends.
    pub probes: usize,
}

impl Tally {
    /// Share of named culprits that were wrong.
    pub fn wrong_rate(&self) -> f64 {
        (self.named - self.right) as f64 / self.named.max(1) as f64
    }

    /// Share of candidates (before the confirmation) that were wrong: the posterior's own error.
    pub fn candidate_wrong_rate(&self) -> f64 {
        (self.candidates - self.candidates_right) as f64 / self.candidates.max(1) as f64
    }

    pub fn named_rate(&self) -> f64 {
        self.named as f64 / self.ranges.max(1) as f64
    }

    pub fn mean_runs(&self) -> f64 {
        self.runs as f64 / self.ranges.max(1) as f64
    }

    pub fn mean_probes(&self) -> f64 {
        self.probes as f64 / self.ranges.max(1) as f64
    }
}

/// A run of `revision` in `range`: normal noise of SD 1 plus the step from its commit on.
fn measure(range: &Range, revision: usize, rng: &mut ChaCha8Rng) -> f64 {
    let noise = norm_ppf(rng.random_range(1e-15..1.0 - 1e-15));
    match range.change {
        Some((k, d)) if revision >= k => noise + d,
        _ => noise,
    }
}

/// The bisection of every range under `settings`.
pub fn bisection(settings: Settings, ranges: &[Range], seed: u64) -> Tally {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = Tally::default();
    for range in ranges {
        let mut b = Bisection::new(range.n, settings);
        let mut probed = std::collections::BTreeSet::new();
        let outcome = loop {
            match b.step() {
                Step::Measure(revs) => {
                    for r in revs {
                        if r != 0 && r != range.n {
                            probed.insert(r);
                        }
                        b.record(r, measure(range, r, &mut rng));
                        t.runs += 1;
                    }
                }
                Step::Done(o) => break o,
            }
        };
        t.ranges += 1;
        t.probes += probed.len();
        if let Outcome::Candidate {
            commit, confirmed, ..
        } = outcome
        {
            let right = range.change.is_some_and(|(k, _)| k == commit) as usize;
            t.candidates += 1;
            t.candidates_right += right;
            if confirmed {
                t.named += 1;
                t.right += right;
            }
        }
    }
    t
}

/// Plain bisection: the same group-sequential A/B of the ends as the bisection's (`settings`),
/// then `per_step` runs of each midpoint called good or bad by the nearer end's mean, down to
/// one commit, named without a confirmation (what `git bisect run` with a threshold does).
pub fn plain(per_step: usize, settings: Settings, ranges: &[Range], seed: u64) -> Tally {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = Tally::default();
    let s = settings;
    for range in ranges {
        t.ranges += 1;
        let (mut good, mut bad) = (Vec::new(), Vec::new());
        let differ = loop {
            match sequential_ab(s.ends_runs, s.looks, s.alpha, &good, &bad) {
                Ab::More(k) => {
                    for _ in 0..k {
                        good.push(measure(range, 0, &mut rng));
                        bad.push(measure(range, range.n, &mut rng));
                    }
                    t.runs += 2 * k;
                }
                Ab::Differ { .. } => break true,
                Ab::Same { .. } => break false,
            }
        };
        if !differ {
            continue;
        }
        let (mg, mb) = (mean(&good), mean(&bad));
        let (mut lo, mut hi) = (0, range.n);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            let m = mean(
                &(0..per_step)
                    .map(|_| measure(range, mid, &mut rng))
                    .collect::<Vec<_>>(),
            );
            t.runs += per_step;
            t.probes += 1;
            if (m - mb).abs() < (m - mg).abs() {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        let right = range.change.is_some_and(|(k, _)| k == hi) as usize;
        t.named += 1;
        t.right += right;
        t.candidates += 1;
        t.candidates_right += right;
    }
    t
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_culprit_is_right_at_least_1_minus_delta_of_the_time() {
        // A quick version of the benchmark (cargo bench --bench bisect runs 1,000 and more).
        let changed = ranges(120, true, 7);
        let t = bisection(Settings::default(), &changed, 8);
        assert!(t.named_rate() > 0.8, "{t:?}");
        assert!(t.wrong_rate() <= 0.05, "{t:?}");
        assert!(t.candidate_wrong_rate() <= 0.1, "{t:?}");
    }

    #[test]
    fn ranges_without_a_change_rarely_name_one() {
        let flat = ranges(200, false, 9);
        let t = bisection(Settings::default(), &flat, 10);
        // alpha 0.05 for the ends' A/B, then the confirmation's own alpha: far below 0.05.
        assert!(t.named_rate() <= 0.05, "{t:?}");
    }

    #[test]
    fn plain_bisection_with_one_run_per_step_is_often_wrong() {
        let changed = ranges(200, true, 11);
        let t = plain(1, Settings::default(), &changed, 12);
        assert!(t.wrong_rate() > 0.2, "{t:?}");
    }
}
