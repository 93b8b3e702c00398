//! `cargo bench -p abperf-stats --bench bisect`: the error `abperf bisect` controls and what it
//! costs (docs/bisect.md). Seeded ranges of 64 to 1,024 commits with one planted change of 1 to
//! 3 noise SDs, and ranges without a change; the bisection at delta 0.05 and alpha 0.05 (its
//! ends' A/B and its confirmation group-sequential) beside plain bisection with a fixed number
//! of runs per step (the same A/B of the ends first), among them the fewest runs per step whose
//! error is at most delta and the fewest whose error is at most the bisection's own.
//! `cargo test --all-targets` runs it once as a smoke test on fewer ranges.

use abperf_stats::bisect::Settings;
use abperf_stats::bisect::simulate::{Range, Tally, bisection, plain, ranges};

fn row(name: &str, changed: &Tally, flat: &Tally) {
    println!(
        "| {name} | {:.1}% | {:.2}% | {:.2}% | {:.2}% | {:.1} | {:.1} | {:.1} |",
        100.0 * changed.named_rate(),
        100.0 * changed.wrong_rate(),
        100.0 * changed.candidate_wrong_rate(),
        100.0 * flat.named_rate(),
        changed.mean_runs(),
        flat.mean_runs(),
        changed.mean_probes(),
    );
}

/// The fewest runs per step (up to 1,024) whose plain bisection is wrong at most `target` of
/// the time: the error falls as the runs grow, so bisect on the count.
fn tuned(target: f64, s: Settings, changed: &[Range]) -> usize {
    let (mut lo, mut hi) = (1, 1024);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if plain(mid, s, changed, 5).wrong_rate() <= target {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

fn main() {
    let timed = std::env::args().any(|a| a == "--bench");
    let count = if timed { 2000 } else { 60 };
    let changed = ranges(count, true, 2026);
    let flat = ranges(count, false, 2027);
    let s = Settings::default();
    println!(
        "{count} ranges of 64-1,024 commits with one change of 1-3 SD, {count} without; normal \
         runs of SD 1; ends' A/B and confirmation at most {} and {} rounds in {} looks",
        s.ends_runs, s.confirm_runs, s.looks
    );
    println!(
        "| method | named | wrong | unconf. wrong | named A/A | runs | runs A/A | probes |\n\
         |---|---|---|---|---|---|---|---|"
    );
    let ours = bisection(s, &changed, 1);
    row("bisect (delta 0.05)", &ours, &bisection(s, &flat, 2));
    let strict = Settings { delta: 0.01, ..s };
    row(
        "bisect (delta 0.01)",
        &bisection(strict, &changed, 3),
        &bisection(strict, &flat, 4),
    );
    let fixed = Settings {
        ends_runs: 10,
        confirm_runs: 20,
        looks: 1,
        ..s
    };
    row(
        "bisect, fixed 10 + 20 rounds",
        &bisection(fixed, &changed, 1),
        &bisection(fixed, &flat, 2),
    );
    let mut steps = vec![1, 4, 16, 64];
    for target in [s.delta, ours.wrong_rate()] {
        let k = tuned(target, s, &changed);
        if !steps.contains(&k) {
            steps.push(k);
        }
        println!(
            "(plain: {k} runs per step is the fewest wrong at most {:.2}%)",
            100.0 * target
        );
    }
    steps.sort_unstable();
    for per_step in steps {
        row(
            &format!("plain, {per_step} runs per step"),
            &plain(per_step, s, &changed, 5),
            &plain(per_step, s, &flat, 6),
        );
    }
}
