//! `cargo bench --bench sequential`: what `abperf run --until-decided` costs and saves (issue
//! 14). Simulated two-variant experiments with normal runs (SD 1): the false-call rate of A/A
//! pairs and, for real differences of 0.5 to 1.5 SD, how often the difference is found and how
//! many runs per variant that took, against the fixed design of the same most runs and against
//! "peeking" (Welch's p after every run, stop at p < 0.05), which is what the rule replaces.

use abperf::stats::dist::norm_ppf;
use abperf::stats::sequential::{Plan, simulate};
use abperf::stats::welch::welch;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Share of `n` experiments that peeking (p < alpha after any run from the 4th) calls different,
/// and the mean runs per variant it used.
fn peeking(d: f64, max: usize, n: usize, seed: u64) -> (f64, f64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut normal = move || norm_ppf(rng.random_range(1e-15..1.0 - 1e-15));
    let (mut called, mut runs) = (0usize, 0usize);
    for _ in 0..n {
        let a: Vec<f64> = (0..max).map(|_| normal()).collect();
        let b: Vec<f64> = (0..max).map(|_| normal() + d).collect();
        let stop = (4..=max).find(|&r| welch(&a[..r], &b[..r]).is_ok_and(|w| w.p < 0.05));
        called += stop.is_some() as usize;
        runs += stop.unwrap_or(max);
    }
    (called as f64 / n as f64, runs as f64 / n as f64)
}

fn main() {
    // `cargo test --all-targets` runs this once as a smoke test with fewer experiments.
    let timed = std::env::args().any(|a| a == "--bench");
    let n = if timed { 2000 } else { 100 };
    let max = 40;
    let sequential = Plan {
        looks: 4,
        max_runs: max,
        alpha: 0.05,
    };
    let fixed = Plan {
        looks: 1,
        ..sequential
    };
    println!(
        "{n} simulated experiments per row, at most {max} runs per variant, normal runs of SD 1"
    );
    println!(
        "{:>10}  {:>22}  {:>22}  {:>22}",
        "difference", "fixed n=40", "until-decided, 4 looks", "peeking at p<0.05"
    );
    println!(
        "{:>10}  {:>22}  {:>22}  {:>22}",
        "(SD)", "called / mean runs", "called / mean runs", "called / mean runs"
    );
    for (i, d) in [0.0, 0.5, 0.75, 1.0, 1.5].into_iter().enumerate() {
        let seed = 1000 + i as u64;
        let f = simulate(&fixed, d, n, seed);
        let s = simulate(&sequential, d, n, seed);
        let (pc, pr) = peeking(d, max as usize, n, seed);
        println!(
            "{d:>10.2}  {:>13.1}% / {:>5.1}  {:>13.1}% / {:>5.1}  {:>13.1}% / {:>5.1}",
            100.0 * f.called,
            f.mean_runs,
            100.0 * s.called,
            s.mean_runs,
            100.0 * pc,
            pr
        );
        if d == 0.0 && timed {
            // 2000 A/A pairs: the binomial SD of 5% is 0.49 points.
            assert!(s.called < 0.065, "sequential A/A false calls {}", s.called);
        }
    }
}
