//! The bisection as a state machine: the caller asks [`Bisection::step`] what to measure,
//! measures it (in the order given: every round interleaves the probe with both ends), feeds each
//! run back with [`Bisection::record`] (or [`Bisection::unbuildable`]), and asks again, until it
//! gets an [`Outcome`]. The same machine drives `abperf bisect` and the seeded simulation
//! ([`super::simulate`]) whose figures docs/bisect.md quotes.
//!
//! Phases: (1) an A/B of the two ends, group-sequential ([`sequential_ab`]: `--until-decided`'s
//! O'Brien-Fleming looks, at most `ends_runs` rounds); no difference at alpha ends the search with
//! no culprit. (2) Probabilistic bisection: each round measures the revision at
//! the posterior median of the change's location ([`super::posterior`]) once or more, with both
//! ends in the same round (ABC then CBA), so drift and a changing machine enter every estimate;
//! the median stays on a probe until its side is settled, so runs are added to a probe
//! sequentially. It stops when one commit holds 1 - delta of the posterior, or the round budget
//! is spent, or the interval holding 1 - delta cannot be split (unbuildable revisions). (3) A
//! confirmation: a fresh A/B of the candidate against its parent, group-sequential like the
//! ends' (at most `confirm_runs` rounds), a difference in the ends' direction at alpha; only a
//! confirmed candidate is a culprit.

use super::posterior::{Runs, cumulative, shortest_interval};
use crate::sequential::{Looks, Plan, nominal_p};
use crate::welch::welch;
use std::collections::BTreeSet;

/// How a bisection is run (stored with it, so that a resume goes on as it began).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Settings {
    /// The posterior mass one commit must hold to be a candidate (1 - delta).
    pub delta: f64,
    /// The level of the ends' A/B and of the confirmation.
    pub alpha: f64,
    /// The most rounds (one run of each end per round) of the ends' A/B.
    pub ends_runs: usize,
    /// Runs of the probe per round (each end runs as often).
    pub probe_runs: usize,
    /// The most search rounds.
    pub max_rounds: usize,
    /// The most rounds (one run of the candidate and one of its parent) of the confirmation.
    pub confirm_runs: usize,
    /// Equally spaced looks of the ends' A/B and of the confirmation (O'Brien-Fleming
    /// boundaries, as `run --until-decided`); 1 is a fixed design. Bisections stored before
    /// looks existed had one.
    #[serde(default = "one_look")]
    pub looks: usize,
}

fn one_look() -> usize {
    1
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            delta: 0.05,
            alpha: 0.05,
            ends_runs: 60,
            probe_runs: 1,
            max_rounds: 500,
            confirm_runs: 100,
            looks: 5,
        }
    }
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Measure these revisions, one run each, in this order.
    Measure(Vec<usize>),
    /// The bisection is over.
    Done(Outcome),
}

/// How a bisection ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The ends' A/B found no difference at alpha: no culprit.
    NoChange { p: f64 },
    /// One commit holds at least 1 - delta of the posterior; `confirmed` when its A/B against
    /// its parent found the ends' difference at alpha (`p`).
    Candidate {
        commit: usize,
        mass: f64,
        confirmed: bool,
        p: f64,
    },
    /// The change lies in commits `first..=last` with posterior `mass`; no single commit could
    /// be named (the budget was spent, or revisions in it do not build).
    Interval {
        first: usize,
        last: usize,
        mass: f64,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Ends,
    Search,
    Confirm { commit: usize, mass: f64 },
    Over(Outcome),
}

/// One bisection of revisions 0 (good) ..= n (bad).
#[derive(Debug, Clone)]
pub struct Bisection {
    settings: Settings,
    runs: Runs,
    unbuildable: BTreeSet<usize>,
    phase: Phase,
    rounds: usize,
    confirm: (Vec<f64>, Vec<f64>),
}

impl Bisection {
    pub fn new(n: usize, settings: Settings) -> Bisection {
        Bisection {
            settings,
            runs: Runs::new(n),
            unbuildable: BTreeSet::new(),
            phase: Phase::Ends,
            rounds: 0,
            confirm: (Vec::new(), Vec::new()),
        }
    }

    /// Every run of the search so far (the confirmation's are apart).
    pub fn runs(&self) -> &Runs {
        &self.runs
    }

    /// The posterior over the first bad commit (index k - 1), once defined.
    pub fn posterior(&self) -> Option<Vec<f64>> {
        self.runs.posterior()
    }

    /// Search rounds done.
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// How many times the last [`Step::Measure`] may be repeated before the next decision: the
    /// rounds to the next look of the ends' A/B or of the confirmation, 1 in the search (each
    /// round may move the probe). A caller may run that many rounds as one batch.
    pub fn batch(&self) -> usize {
        let n = self.runs.commits();
        let s = &self.settings;
        match &self.phase {
            Phase::Ends => {
                match sequential_ab(
                    s.ends_runs,
                    s.looks,
                    s.alpha,
                    &self.runs.of(0),
                    &self.runs.of(n),
                ) {
                    Ab::More(k) => k,
                    _ => 1,
                }
            }
            Phase::Confirm { .. } => {
                match sequential_ab(
                    s.confirm_runs,
                    s.looks,
                    s.alpha,
                    &self.confirm.0,
                    &self.confirm.1,
                ) {
                    Ab::More(k) => k,
                    _ => 1,
                }
            }
            Phase::Search | Phase::Over(_) => 1,
        }
    }

    /// The runs of the confirmation so far: (the candidate's parent, the candidate).
    pub fn confirmation_runs(&self) -> (&[f64], &[f64]) {
        (&self.confirm.0, &self.confirm.1)
    }

    /// Record one run of `revision`.
    pub fn record(&mut self, revision: usize, y: f64) {
        match self.phase {
            Phase::Confirm { commit, .. } if revision == commit => self.confirm.1.push(y),
            Phase::Confirm { commit, .. } if revision + 1 == commit => self.confirm.0.push(y),
            _ => self.runs.push(revision, y),
        }
    }

    /// `revision` cannot be built or run: it is never probed again, and its commit keeps its
    /// share of the posterior (like `git bisect skip`).
    pub fn unbuildable(&mut self, revision: usize) {
        self.unbuildable.insert(revision);
    }

    /// What to measure next, or how it ended. Call after recording every run of the last step.
    pub fn step(&mut self) -> Step {
        loop {
            let step = match self.phase.clone() {
                Phase::Over(outcome) => return Step::Done(outcome),
                Phase::Ends => self.ends(),
                Phase::Search => self.search(),
                Phase::Confirm { commit, mass } => self.confirmation(commit, mass),
            };
            if let Some(step) = step {
                return step;
            }
        }
    }

    /// The ends' rounds, then their A/B.
    fn ends(&mut self) -> Option<Step> {
        let n = self.runs.commits();
        let (good, bad) = (self.runs.of(0), self.runs.of(n));
        let s = &self.settings;
        self.phase = match sequential_ab(s.ends_runs, s.looks, s.alpha, &good, &bad) {
            Ab::More(_) => {
                let round = good.len().min(bad.len());
                return Some(Step::Measure(abba(round, &[0, n])));
            }
            Ab::Differ { .. } => Phase::Search,
            Ab::Same { p } => Phase::Over(Outcome::NoChange { p }),
        };
        None
    }

    fn search(&mut self) -> Option<Step> {
        let post = self.runs.posterior()?;
        let (first, last, mass) = shortest_interval(&post, 1.0 - self.settings.delta);
        if first == last {
            self.phase = Phase::Confirm {
                commit: first,
                mass,
            };
            return None;
        }
        let probe = self.probe(&post, first, last);
        match probe {
            Some(r) if self.rounds < self.settings.max_rounds => {
                self.rounds += 1;
                let mut round = Vec::new();
                for i in 0..self.settings.probe_runs {
                    round.extend(abba(self.rounds + i, &[0, r, self.runs.commits()]));
                }
                Some(Step::Measure(round))
            }
            _ => {
                self.phase = Phase::Over(Outcome::Interval { first, last, mass });
                None
            }
        }
    }

    /// The buildable revision closest to the posterior median that splits `first..=last` (a
    /// probe r tells k <= r from k > r, so r must lie in first..last).
    fn probe(&self, post: &[f64], first: usize, last: usize) -> Option<usize> {
        let cum = cumulative(post);
        (first..last)
            .filter(|r| !self.unbuildable.contains(r))
            .min_by(|&a, &b| (cum[a] - 0.5).abs().total_cmp(&(cum[b] - 0.5).abs()))
    }

    fn confirmation(&mut self, commit: usize, mass: f64) -> Option<Step> {
        let (parent, child) = &self.confirm;
        let s = &self.settings;
        let (confirmed, p) = match sequential_ab(s.confirm_runs, s.looks, s.alpha, parent, child) {
            Ab::More(_) => {
                let done = parent.len().min(child.len());
                return Some(Step::Measure(abba(done, &[commit - 1, commit])));
            }
            Ab::Differ { p, runs } => {
                let n = self.runs.commits();
                let ends = mean(&self.runs.of(n)) - mean(&self.runs.of(0));
                (
                    (mean(&child[..runs]) - mean(&parent[..runs])) * ends > 0.0,
                    p,
                )
            }
            Ab::Same { p } => (false, p),
        };
        self.phase = Phase::Over(Outcome::Candidate {
            commit,
            mass,
            confirmed,
            p,
        });
        None
    }
}

/// Where a group-sequential A/B stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ab {
    /// Not decided yet: this many more rounds reach the next look.
    More(usize),
    /// A look crossed its boundary with the first `runs` rounds of each side (Welch's `p`).
    Differ { p: f64, runs: usize },
    /// The last look did not cross (Welch's `p` there).
    Same { p: f64 },
}

/// The A/B of `a` and `b` (at most `most` rounds each, run in pairs) as `run --until-decided`
/// judges it ([`crate::sequential`]): look k of `looks` equally spaced ones takes the first
/// [`Plan::runs_at`]`(k)` runs of each side and decides when Welch's p is below the nominal p of
/// its O'Brien-Fleming boundary, so that the chance of ever deciding without a difference stays
/// at `alpha`. Every look the runs reach is taken in order, however the runs arrived (a resumed
/// step's runs too). One look is a fixed design judged at `alpha`.
pub fn sequential_ab(most: usize, looks: usize, alpha: f64, a: &[f64], b: &[f64]) -> Ab {
    let looks = looks.clamp(1, most.max(1));
    let plan = Plan {
        looks,
        max_runs: most.min(u32::MAX as usize) as u32,
        alpha,
    };
    let levels: Vec<f64> = if looks == 1 {
        vec![alpha]
    } else {
        plan.boundaries(1).into_iter().map(nominal_p).collect()
    };
    let done = a.len().min(b.len());
    for (k, level) in (1..=looks).zip(levels) {
        let r = plan.runs_at(k);
        if r > done {
            return Ab::More(r - done);
        }
        let p = welch(&a[..r], &b[..r]).map_or(1.0, |w| w.p);
        if p < level {
            return Ab::Differ { p, runs: r };
        }
        if k == looks {
            return Ab::Same { p };
        }
    }
    Ab::Same { p: 1.0 }
}

/// Round `i` of an ABBA-style order: `revs` as given in even rounds, reversed in odd ones.
fn abba(i: usize, revs: &[usize]) -> Vec<usize> {
    let mut out = revs.to_vec();
    if i % 2 == 1 {
        out.reverse();
    }
    out
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drive a bisection with a noise-free-ish measurement function.
    fn drive(n: usize, f: impl Fn(usize, usize) -> f64) -> (Outcome, usize) {
        let mut b = Bisection::new(n, Settings::default());
        let mut count = 0;
        loop {
            match b.step() {
                Step::Measure(revs) => {
                    for r in revs {
                        b.record(r, f(r, count));
                        count += 1;
                    }
                }
                Step::Done(o) => return (o, count),
            }
        }
    }

    /// A small deterministic "noise": a fixed pattern of +-0.5.
    fn wobble(i: usize) -> f64 {
        [0.5, -0.3, 0.1, -0.5, 0.3, -0.1][i % 6]
    }

    #[test]
    fn a_clear_step_is_found_and_confirmed() {
        let (o, runs) = drive(100, |r, i| wobble(i) + if r >= 37 { 5.0 } else { 0.0 });
        match o {
            Outcome::Candidate {
                commit, confirmed, ..
            } => {
                assert_eq!(commit, 37);
                assert!(confirmed);
            }
            other => panic!("{other:?}"),
        }
        assert!(runs < 150, "{runs} runs");
    }

    #[test]
    fn no_step_between_the_ends_names_no_culprit() {
        let (o, _) = drive(50, |_, i| wobble(i));
        assert!(matches!(o, Outcome::NoChange { .. }), "{o:?}");
    }

    #[test]
    fn an_unbuildable_culprit_leaves_an_interval() {
        let mut b = Bisection::new(20, Settings::default());
        let mut i = 0;
        let o = loop {
            match b.step() {
                Step::Measure(revs) => {
                    for r in revs {
                        if r == 9 || r == 10 {
                            b.unbuildable(r);
                            continue;
                        }
                        b.record(r, wobble(i) + if r >= 10 { 5.0 } else { 0.0 });
                        i += 1;
                    }
                }
                Step::Done(o) => break o,
            }
        };
        match o {
            Outcome::Interval { first, last, .. } => {
                assert!(first <= 10 && (10..=11).contains(&last), "{first}..{last}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_batch_covers_the_rounds_to_the_next_look() {
        // 60 rounds at most in 5 looks: looks after 12, 24, ... rounds.
        let mut b = Bisection::new(8, Settings::default());
        assert_eq!(b.batch(), 12);
        b.step();
        for i in 0..4 {
            b.record(0, wobble(i));
            b.record(8, 3.0 + wobble(i + 1));
        }
        assert_eq!(b.batch(), 8);
        for i in 4..12 {
            b.record(0, wobble(i));
            b.record(8, 3.0 + wobble(i + 1));
        }
        // A clear difference decides at the first look: the search's rounds are one at a time.
        assert!(matches!(b.step(), Step::Measure(_)));
        assert_eq!(b.batch(), 1);
    }

    #[test]
    fn the_sequential_ab_takes_its_looks_in_order_and_keeps_going_when_undecided() {
        let a: Vec<f64> = (0..60).map(wobble).collect();
        let same: Vec<f64> = (0..60).map(|i| wobble(i + 3)).collect();
        assert_eq!(sequential_ab(60, 5, 0.05, &a[..5], &same[..7]), Ab::More(7));
        assert_eq!(
            sequential_ab(60, 5, 0.05, &a[..30], &same[..30]),
            Ab::More(6)
        );
        assert!(matches!(
            sequential_ab(60, 5, 0.05, &a, &same),
            Ab::Same { .. }
        ));
        // A shift decided at look 1 stays decided there with more runs.
        let shifted: Vec<f64> = same.iter().map(|v| v + 2.0).collect();
        assert!(matches!(
            sequential_ab(60, 5, 0.05, &a[..40], &shifted[..40]),
            Ab::Differ { runs: 12, .. }
        ));
        // One look: a fixed design at alpha.
        assert!(matches!(
            sequential_ab(10, 1, 0.05, &a[..10], &same[..10]),
            Ab::Same { .. }
        ));
        assert_eq!(sequential_ab(10, 1, 0.05, &a[..3], &same[..3]), Ab::More(7));
    }

    #[test]
    fn a_small_step_needs_more_looks_but_is_confirmed() {
        // A step of 0.45 beside noise of SD ~0.35: not decided at the first look, decided later.
        let (o, runs) = drive(16, |r, i| {
            wobble(i * 7 + r) + if r >= 5 { 0.45 } else { 0.0 }
        });
        match o {
            Outcome::Candidate {
                commit, confirmed, ..
            } => assert!(commit == 5 && confirmed, "{commit} {confirmed}"),
            other => panic!("{other:?}"),
        }
        assert!(runs > 2 * 12, "{runs} runs");
    }

    #[test]
    fn rounds_interleave_the_probe_with_both_ends() {
        let mut b = Bisection::new(8, Settings::default());
        let first = b.step();
        assert_eq!(first, Step::Measure(vec![0, 8]));
        for i in 0..12 {
            b.record(0, wobble(i));
            b.record(8, 3.0 + wobble(i + 1));
        }
        match b.step() {
            Step::Measure(revs) => {
                assert_eq!(revs.len(), 3);
                assert!(revs.contains(&0) && revs.contains(&8), "{revs:?}");
            }
            other => panic!("{other:?}"),
        }
    }
}
