//! `cargo bench -p abperf-stats --bench bisect`: the error `abperf bisect` controls and what it
//! costs (docs/bisect.md). Seeded ranges of 64 to 1,024 commits with one planted change of 1 to
//! 3 noise SDs, and ranges without a change; the bisection at delta 0.05 and alpha 0.05 beside
//! plain bisection with a fixed number of runs per step (the same A/B of the ends first).
//! `cargo test --all-targets` runs it once as a smoke test on fewer ranges.

use abperf_stats::bisect::Settings;
use abperf_stats::bisect::simulate::{Tally, bisection, plain, ranges};

fn row(name: &str, changed: &Tally, flat: &Tally) {
    println!(
        "{name:<28} {:>7.1}% {:>8.2}% {:>9.2}% {:>9.2}% {:>10.1} {:>8.1}",
        100.0 * changed.named_rate(),
        100.0 * changed.wrong_rate(),
        100.0 * changed.candidate_wrong_rate(),
        100.0 * flat.named_rate(),
        changed.mean_runs(),
        changed.mean_probes(),
    );
}

fn main() {
    let timed = std::env::args().any(|a| a == "--bench");
    let count = if timed { 2000 } else { 60 };
    let changed = ranges(count, true, 2026);
    let flat = ranges(count, false, 2027);
    println!(
        "{count} ranges of 64-1,024 commits with one change of 1-3 SD, {count} without; \
         normal runs of SD 1"
    );
    println!(
        "{:<28} {:>8} {:>9} {:>10} {:>10} {:>10} {:>8}",
        "method", "named", "wrong", "unconf.wrong", "named A/A", "runs", "probes"
    );
    let s = Settings::default();
    row(
        "bisect (delta 0.05)",
        &bisection(s, &changed, 1),
        &bisection(s, &flat, 2),
    );
    let strict = Settings { delta: 0.01, ..s };
    row(
        "bisect (delta 0.01)",
        &bisection(strict, &changed, 3),
        &bisection(strict, &flat, 4),
    );
    for per_step in [1, 2, 4, 8, 16, 32, 64] {
        row(
            &format!("plain, {per_step} runs per step"),
            &plain(per_step, s.ends_runs, s.alpha, &changed, 5),
            &plain(per_step, s.ends_runs, s.alpha, &flat, 6),
        );
    }
}
