//! Group-sequential stopping (`abperf run --until-decided`): the runs are analysed at K equally
//! spaced looks, and the experiment stops at the first look where every comparison crosses its
//! O'Brien-Fleming boundary c_k = C sqrt(K / k), C chosen so that the chance of crossing at any
//! look is alpha when there is no difference (O'Brien and Fleming 1979; the boundaries of K = 4
//! at alpha 0.05 are |z| >= 4.049, 2.863, 2.337, 2.024). Looking at the p-value after every run
//! and stopping when it is small would call about 30% of A/A pairs different; these boundaries
//! keep the false-call rate at alpha, spend almost nothing early, and end on a boundary barely
//! above the fixed design's 1.96. With several variants the boundaries are for alpha / m
//! (Bonferroni), one family per look.
//!
//! The boundaries come from the exact distribution of the sequence of z statistics under H0
//! (independent normal increments), integrated numerically on a grid, widened where simulated
//! Welch looks need it ([`t_constant`]); Welch's t at each look is compared through its
//! two-sided p-value with the boundary's nominal p (2 (1 - Phi(c_k))).

use super::dist::{norm_cdf, norm_ppf};
use super::sequential_table::Z_TABLE;
use super::{sequential_cache, welch};
use serde::Serialize;

pub use abperf_model::SequentialPlan as Plan;

/// The chance that |Z_k| >= c[k] at some look under H0, for z statistics of equally spaced
/// looks (Z_k = S_k / sqrt(k), S_k a sum of k standard normal increments): the density of S_k
/// on the region where no boundary was crossed yet is carried from look to look by Simpson's
/// rule, and the mass crossing at each look is integrated against the normal tails exactly
/// (Armitage, McPherson and Rowe 1969).
pub fn crossing_probability(c: &[f64]) -> f64 {
    const N: usize = 401; // odd: Simpson
    let phi = |x: f64| (-(x * x) / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let simpson = |i: usize| -> f64 {
        if i == 0 || i == N - 1 {
            1.0
        } else if i % 2 == 1 {
            4.0
        } else {
            2.0
        }
    };
    let Some(&c1) = c.first() else {
        return 0.0;
    };
    let mut crossed = 2.0 * (1.0 - norm_cdf(c1));
    // Grid and density of S_1 on (-b1, b1).
    let mut b = c1;
    let mut xs: Vec<f64> = (0..N)
        .map(|i| -b + 2.0 * b * i as f64 / (N - 1) as f64)
        .collect();
    let mut dens: Vec<f64> = xs.iter().map(|&x| phi(x)).collect();
    for (k, &ck) in c.iter().enumerate().skip(1) {
        let h = xs[1] - xs[0];
        let w: Vec<f64> = (0..N).map(|i| simpson(i) * h / 3.0 * dens[i]).collect();
        let bk = ck * ((k + 1) as f64).sqrt();
        crossed += xs
            .iter()
            .zip(&w)
            .map(|(&s, &wi)| wi * (norm_cdf(-bk - s) + norm_cdf(s - bk)))
            .sum::<f64>();
        let next_xs: Vec<f64> = (0..N)
            .map(|i| -bk + 2.0 * bk * i as f64 / (N - 1) as f64)
            .collect();
        dens = next_xs
            .iter()
            .map(|&t| xs.iter().zip(&w).map(|(&s, &wi)| wi * phi(t - s)).sum())
            .collect();
        xs = next_xs;
        b = bk;
    }
    let _ = b;
    crossed
}

/// O'Brien-Fleming boundaries (|z| at each of `looks` equally spaced looks) for a two-sided
/// level `alpha`.
pub fn obrien_fleming(looks: usize, alpha: f64) -> Vec<f64> {
    let shape = |c: f64| -> Vec<f64> {
        (1..=looks)
            .map(|k| c * (looks as f64 / k as f64).sqrt())
            .collect()
    };
    if looks <= 1 {
        return vec![norm_ppf(1.0 - alpha / 2.0)];
    }
    // The common plans' constants are committed (the bisection below costs some 0.1 s of CPU).
    if let Some(&(.., c)) = Z_TABLE
        .iter()
        .find(|&&(l, a, _)| l == looks && a.to_bits() == alpha.to_bits())
    {
        return shape(c);
    }
    shape(obrien_fleming_constant(looks, alpha))
}

/// The constant C of [`obrien_fleming`], by bisection on [`crossing_probability`].
fn obrien_fleming_constant(looks: usize, alpha: f64) -> f64 {
    let shape = |c: f64| -> Vec<f64> {
        (1..=looks)
            .map(|k| c * (looks as f64 / k as f64).sqrt())
            .collect()
    };
    // The crossing probability falls as C grows: bisect.
    let (mut lo, mut hi) = (norm_ppf(1.0 - alpha / 2.0), 6.0);
    for _ in 0..40 {
        let mid = (lo + hi) / 2.0;
        if crossing_probability(&shape(mid)) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The nominal two-sided p-value a boundary |z| >= c stands for.
pub fn nominal_p(c: f64) -> f64 {
    2.0 * (1.0 - norm_cdf(c))
}

/// What a look concluded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Look {
    /// 1-based.
    pub look: usize,
    pub runs_per_variant: usize,
    /// The boundary of this look and its nominal p.
    pub boundary: f64,
    pub nominal_p: f64,
    /// Welch's p of each comparison (variant against the baseline, in variant order).
    pub p: Vec<f64>,
    /// Every comparison crossed: stop with a verdict.
    pub decided: bool,
}

/// The boundaries and the look of a [`Plan`].
pub trait Looks {
    /// The boundaries, for `m` comparisons (alpha / m each).
    fn boundaries(&self, m: usize) -> Vec<f64>;
    /// Look `k` at the values of the baseline and each other variant.
    fn look(&self, k: usize, boundaries: &[f64], baseline: &[f64], variants: &[&[f64]]) -> Look;
}

impl Looks for Plan {
    /// O'Brien-Fleming's shape c_k = C sqrt(K / k) with C the larger of the z design's constant
    /// and [`t_constant`]'s: Welch's t at a look has the right marginal p-value, but with its
    /// variance estimated anew at every look the sequence of t statistics crosses the z design's
    /// boundaries a little more often than alpha (5.12% of 400,000 simulated A/A experiments of
    /// 4 looks and 40 runs, with scipy's Welch).
    fn boundaries(&self, m: usize) -> Vec<f64> {
        let alpha = self.alpha / m.max(1) as f64;
        let z = obrien_fleming(self.looks, alpha);
        let Some(&cz) = z.last() else {
            return z;
        };
        let c = cz.max(t_constant(self, alpha));
        (1..=self.looks)
            .map(|k| c * (self.looks as f64 / k as f64).sqrt())
            .collect()
    }

    /// Look `k` at the values of the baseline and each other variant (their first
    /// `runs_at(k)` runs), with the boundaries of [`Plan::boundaries`] for that many variants.
    fn look(&self, k: usize, boundaries: &[f64], baseline: &[f64], variants: &[&[f64]]) -> Look {
        let c = boundaries[k - 1];
        let np = nominal_p(c);
        let p: Vec<f64> = variants
            .iter()
            .map(|v| welch::welch(baseline, v).map(|w| w.p).unwrap_or(1.0))
            .collect();
        Look {
            look: k,
            runs_per_variant: baseline.len(),
            boundary: c,
            nominal_p: np,
            decided: !p.is_empty() && p.iter().all(|&x| x < np),
            p,
        }
    }
}

/// Simulated A/A experiments behind [`t_constant`].
const CALIBRATION_RUNS: usize = 400_000;

/// The constant C for which Welch's t, judged at each look against the nominal p of C sqrt(K /
/// k), calls a difference in at most `alpha` of A/A experiments with normal runs under `plan`'s
/// looks: from [`CALIBRATION_RUNS`] seeded simulated experiments, each one's smallest C that
/// would not have called it, max_k z_k / sqrt(K / k) with z_k the |z| of look k's p-value; C is
/// their quantile at 1 - alpha', alpha' = alpha less two binomial standard errors of the
/// simulation, so that the rule's own rate stays at or below alpha despite the simulation's
/// noise (400,000: a rate within 0.034 points of its target). Four fresh sets of 200,000
/// simulated experiments called 4.99% against this constant; the z design's constant called
/// 5.12% of 400,000 (scipy). Deterministic (a fixed seed), so computed once: the common plans'
/// constants are committed ([`super::sequential_table`], regenerated by the ignored test
/// `regenerate_sequential_table`), the others simulated once (1-5 s of CPU) and kept in the
/// user's cache directory ([`super::sequential_cache`]), and each kept per process.
fn t_constant(plan: &Plan, alpha: f64) -> f64 {
    type Key = (usize, u32, u64);
    static KEPT: std::sync::Mutex<Vec<(Key, f64)>> = std::sync::Mutex::new(Vec::new());
    let key = (plan.looks, plan.max_runs, alpha.to_bits());
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, c)) = kept.iter().find(|(k, _)| *k == key) {
        return c;
    }
    let c = known_t_constant(plan, alpha);
    kept.push((key, c));
    c
}

/// [`t_constant`] from the table, else the cache, else simulated (and cached).
fn known_t_constant(plan: &Plan, alpha: f64) -> f64 {
    let key = sequential_cache::Key {
        looks: plan.looks,
        max_runs: plan.max_runs,
        alpha,
    };
    if let Some(c) = sequential_cache::tabulated(key) {
        return c;
    }
    // No valid constant is below the last look's fixed-design boundary (less the simulation's
    // noise).
    let floor = 0.9 * norm_ppf(1.0 - alpha / 2.0);
    let dir = sequential_cache::cache_dir();
    if let Some(c) = dir
        .as_deref()
        .and_then(|d| sequential_cache::cached(d, key, floor))
    {
        return c;
    }
    let c = simulate_t_constant(plan, alpha);
    if let Some(d) = dir {
        // Best effort: without a cache the next process simulates again.
        let _ = sequential_cache::store(&d, key, c);
    }
    c
}

fn simulate_t_constant(plan: &Plan, alpha: f64) -> f64 {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x0bf1_e1d5);
    let n = plan.max_runs as usize;
    let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
    let mut smallest: Vec<f64> = (0..CALIBRATION_RUNS)
        .map(|_| {
            // Box-Muller: two normal draws from two uniforms.
            for pair in a.chunks_mut(2).chain(b.chunks_mut(2)) {
                let r = (-2.0 * rng.random::<f64>().max(f64::MIN_POSITIVE).ln()).sqrt();
                let (sin, cos) = (std::f64::consts::TAU * rng.random::<f64>()).sin_cos();
                pair[0] = r * cos;
                if let Some(second) = pair.get_mut(1) {
                    *second = r * sin;
                }
            }
            (1..=plan.looks)
                .map(|k| {
                    let r = plan.runs_at(k).min(n);
                    let p = welch::welch(&a[..r], &b[..r]).map_or(1.0, |w| w.p);
                    -norm_ppf((p / 2.0).max(f64::MIN_POSITIVE))
                        / (plan.looks as f64 / k as f64).sqrt()
                })
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .collect();
    let runs = CALIBRATION_RUNS as f64;
    let target = (alpha - 2.0 * (alpha * (1.0 - alpha) / runs).sqrt()).max(1.0 / runs);
    let above = ((target * runs).floor() as usize).clamp(1, CALIBRATION_RUNS);
    let at = CALIBRATION_RUNS - above;
    let (_, c, _) = smallest.select_nth_unstable_by(at, f64::total_cmp);
    *c
}

/// The look a sequential experiment stopped at, from its runs per variant (the last look when it
/// ran to the end).
pub fn look_reached(plan: &Plan, runs_per_variant: usize) -> usize {
    (1..=plan.looks)
        .find(|&k| plan.runs_at(k) >= runs_per_variant)
        .unwrap_or(plan.looks)
}

/// The level `compare` judges a sequential experiment at: the nominal p of the boundary of the
/// look it stopped at, for `m` comparisons, as the stopping rule did. Judging at alpha instead
/// (0.05 after a last look whose boundary is 0.043) called 5.72% of simulated A/A experiments.
pub fn judging_level(plan: &Plan, m: usize, runs_per_variant: usize) -> f64 {
    nominal_p(plan.boundaries(m)[look_reached(plan, runs_per_variant) - 1])
}

/// What a reader of a sequential experiment's comparison must know: where it stopped, and that
/// the p-values and intervals shown are the fixed-n ones (an early stop favours larger observed
/// effects; the stop itself kept the false-call rate at alpha).
pub fn note(plan: &Plan, m: usize, runs_per_variant: usize) -> String {
    let k = look_reached(plan, runs_per_variant);
    let stop = match k {
        k if k < plan.looks => format!(
            "stopped at look {k} of {} ({runs_per_variant} of up to {} runs per variant)",
            plan.looks, plan.max_runs
        ),
        _ => format!(
            "ran to the last look ({runs_per_variant} of up to {} runs per variant)",
            plan.max_runs
        ),
    };
    format!(
        "sequential design (--until-decided, {} O'Brien-Fleming looks, alpha {}): {stop}; judged \
         as the stopping rule judged, with Welch at this look's boundary (p < {:.4}{}), which \
         holds the false-call rate at alpha; the intervals above are those of a fixed design and \
         read an early stop's effect slightly large",
        plan.looks,
        plan.alpha,
        judging_level(plan, m, runs_per_variant),
        if m > 1 {
            format!(", alpha/{m} for {m} comparisons")
        } else {
            String::new()
        }
    )
}

/// Outcome of simulating many experiments under a plan: how often a difference was called and
/// the mean number of runs per variant used.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Simulated {
    pub called: f64,
    pub mean_runs: f64,
}

/// Simulate `n` two-variant experiments with normal runs (SD 1) whose means differ by `d`,
/// under `plan`, with the seed `seed`.
pub fn simulate(plan: &Plan, d: f64, n: usize, seed: u64) -> Simulated {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut normal = move || norm_ppf(rng.random_range(1e-15..1.0 - 1e-15));
    let (mut called, mut runs) = (0usize, 0usize);
    let max = plan.max_runs as usize;
    let c = plan.boundaries(1);
    for _ in 0..n {
        let a: Vec<f64> = (0..max).map(|_| normal()).collect();
        let b: Vec<f64> = (0..max).map(|_| normal() + d).collect();
        let mut used = max;
        for k in 1..=plan.looks {
            let r = plan.runs_at(k);
            if plan.look(k, &c, &a[..r], &[&b[..r]]).decided {
                called += 1;
                used = r;
                break;
            }
        }
        runs += used;
    }
    Simulated {
        called: called as f64 / n as f64,
        mean_runs: runs as f64 / n as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judged_at_the_boundary_of_the_look_reached() {
        let plan = Plan {
            looks: 4,
            max_runs: 40,
            alpha: 0.05,
        };
        assert_eq!(look_reached(&plan, 10), 1);
        assert_eq!(look_reached(&plan, 11), 2);
        assert_eq!(look_reached(&plan, 40), 4);
        assert_eq!(look_reached(&plan, 55), 4);
        let last = judging_level(&plan, 1, 40);
        assert!(last > 0.04 && last < 0.05, "{last}");
        assert_eq!(last, nominal_p(plan.boundaries(1)[3]));
        assert!(judging_level(&plan, 1, 10) < 0.001);
        // Two comparisons: each at half of alpha's boundary.
        assert!(judging_level(&plan, 2, 40) < last / 1.9);
    }

    #[test]
    fn obrien_fleming_boundaries_of_four_looks() {
        // The classic table (Jennison and Turnbull 2000, table 2.3): 4.049, 2.863, 2.337, 2.024.
        let c = obrien_fleming(4, 0.05);
        for (got, want) in c.iter().zip([4.049, 2.863, 2.337, 2.024]) {
            assert!((got - want).abs() < 0.005, "{c:?}");
        }
        assert!((crossing_probability(&c) - 0.05).abs() < 1e-4);
        // One look is the fixed design.
        assert!((obrien_fleming(1, 0.05)[0] - 1.959964).abs() < 1e-5);
        // No early look may cross with the fixed design's 1.96 at every look: that is ~0.13.
        assert!(crossing_probability(&[1.96; 4]) > 0.1);
    }

    #[test]
    fn aa_calls_stay_at_alpha_and_an_effect_stops_early() {
        let plan = Plan {
            looks: 4,
            max_runs: 40,
            alpha: 0.05,
        };
        // A/A: 400 simulated experiments (benches/sequential.rs runs 2000).
        let aa = simulate(&plan, 0.0, 400, 1);
        assert!(aa.called <= 0.075, "A/A false calls {}", aa.called);
        // A real difference of 1 SD is found, mostly before the last look.
        let h1 = simulate(&plan, 1.0, 200, 2);
        assert!(h1.called > 0.9, "power {}", h1.called);
        assert!(h1.mean_runs < 30.0, "mean runs {}", h1.mean_runs);
    }
}

#[cfg(test)]
mod t_constant_tests {
    use super::*;

    #[test]
    fn welch_boundaries_are_a_little_wider_than_the_z_design() {
        let plan = Plan {
            looks: 4,
            max_runs: 40,
            alpha: 0.05,
        };
        let t = plan.boundaries(1);
        let z = obrien_fleming(4, 0.05);
        assert!(t[3] >= z[3] && t[3] < z[3] * 1.05, "{t:?} against {z:?}");
    }
}

#[cfg(test)]
mod table_tests {
    use super::*;
    use crate::sequential_table::TABLE;

    /// The plans tabulated: looks, most runs per variant (at least 4 per look), and alpha 0.05
    /// shared by 1 to 3 comparisons.
    fn grid() -> Vec<(usize, u32, f64)> {
        let mut g = Vec::new();
        for looks in [2, 3, 4, 5, 6, 8, 10] {
            for max_runs in [20, 30, 40, 50, 60, 80, 100] {
                for m in 1..=3 {
                    if max_runs as usize >= 4 * looks {
                        g.push((looks, max_runs, 0.05 / m as f64));
                    }
                }
            }
        }
        g
    }

    fn plan(looks: usize, max_runs: u32) -> Plan {
        Plan {
            looks,
            max_runs,
            alpha: 0.05,
        }
    }

    #[test]
    fn tabulated_constants_are_the_simulation() {
        let want = grid();
        assert_eq!(TABLE.len(), want.len(), "the table covers the grid");
        for (&(looks, max_runs, alpha, _), &(l, r, a)) in TABLE.iter().zip(&want) {
            assert_eq!((looks, max_runs, alpha.to_bits()), (l, r, a.to_bits()));
        }
        // A few entries simulated afresh (same seed): the very same bits.
        for &(looks, max_runs, alpha, c) in [TABLE[0], TABLE[4]].iter() {
            let fresh = simulate_t_constant(&plan(looks, max_runs), alpha);
            assert_eq!(fresh.to_bits(), c.to_bits(), "{looks} {max_runs} {alpha}");
        }
    }

    /// The z design's constants tabulated: looks 2 to 10, alpha 0.05 shared by 1 to 3
    /// comparisons.
    fn z_grid() -> Vec<(usize, f64)> {
        (2..=10)
            .flat_map(|looks| (1..=3).map(move |m| (looks, 0.05 / m as f64)))
            .collect()
    }

    #[test]
    fn tabulated_z_constants_are_the_bisection() {
        let want = z_grid();
        assert_eq!(Z_TABLE.len(), want.len());
        for (i, &(looks, alpha, c)) in Z_TABLE.iter().enumerate() {
            assert_eq!((looks, alpha.to_bits()), (want[i].0, want[i].1.to_bits()));
            if i % 7 == 0 {
                let fresh = obrien_fleming_constant(looks, alpha);
                assert_eq!(fresh.to_bits(), c.to_bits(), "{looks} {alpha}");
            }
        }
    }

    /// `cargo test -p abperf-stats regenerate_sequential_z_table -- --ignored` rewrites the
    /// `Z_TABLE` part of crates/stats/src/sequential_table.rs (seconds).
    #[test]
    #[ignore]
    fn regenerate_sequential_z_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/sequential_table.rs");
        let text = std::fs::read_to_string(path).unwrap();
        let head = text
            .split("\n/// The z design's")
            .next()
            .unwrap()
            .trim_end();
        let mut out = format!(
            "{head}\n\n/// The z design's O'Brien-Fleming constant C of each common (looks, alpha), as \
             `obrien_fleming_constant`\n/// gives it (regenerated by the ignored test \
             `regenerate_sequential_z_table`).\n\
             pub(crate) const Z_TABLE: &[(usize, f64, f64)] = &[\n"
        );
        for (looks, alpha) in z_grid() {
            let c = obrien_fleming_constant(looks, alpha);
            out += &format!("    ({looks}, {alpha:?}, {c:?}),\n");
        }
        out += "];\n";
        std::fs::write(path, out).unwrap();
    }

    /// `cargo test --release -p abperf-stats regenerate_sequential_table -- --ignored`
    /// rewrites crates/stats/src/sequential_table.rs (minutes of CPU, every core).
    #[test]
    #[ignore]
    fn regenerate_sequential_table() {
        let grid = grid();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done = std::sync::Mutex::new(vec![f64::NAN; grid.len()]);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&(looks, max_runs, alpha)) = grid.get(i) else {
                            break;
                        };
                        let c = simulate_t_constant(&plan(looks, max_runs), alpha);
                        done.lock().unwrap()[i] = c;
                    }
                });
            }
        });
        let done = done.into_inner().unwrap();
        let mut out = [
            "//! Generated by `cargo test --release -p abperf-stats regenerate_sequential_table --",
            "//! --ignored` (crates/stats/src/sequential.rs): the Welch boundary constant that",
            "//! `simulate_t_constant` gives each common plan, as (looks, most runs per variant,",
            "//! alpha, constant). Do not edit.",
            "",
            "pub(crate) const TABLE: &[(usize, u32, f64, f64)] = &[",
        ]
        .join("\n");
        out.push('\n');
        for (&(looks, max_runs, alpha), c) in grid.iter().zip(done) {
            out += &format!("    ({looks}, {max_runs}, {alpha:?}, {c:?}),\n");
        }
        out += "];\n";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/sequential_table.rs");
        // The z design's table (regenerate_sequential_z_table) stays as it is.
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if let Some(i) = text.find("\n/// The z design's") {
            out += &text[i..];
        }
        std::fs::write(path, out).unwrap();
    }
}
