//! `cargo bench --bench compare`: the speed target of issue 3 — `abperf compare` on two variants
//! of 50 runs each with 10,000 bootstrap resamples in under a second. Times the library call
//! (all statistics, bootstrap included) and the real binary end to end on two files.

use abperf::stats::compare::{Options, Sample, compare};
use abperf::stats::dist::norm_ppf;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this as a smoke test (one
    // repetition, debug build, no timing assertion).
    let timed = std::env::args().any(|a| a == "--bench");
    let mut rng = ChaCha8Rng::seed_from_u64(50);
    let mut draw = |mean: f64| -> Vec<f64> {
        (0..50)
            .map(|_| mean * (1.0 + 0.003 * norm_ppf(rng.random_range(1e-12..1.0))))
            .collect()
    };
    let (a, b) = (draw(1.0e9), draw(1.002e9));
    let opts = Options::default();
    assert_eq!(opts.resamples, 10_000);

    let reps = if timed { 10 } else { 1 };
    let t = Instant::now();
    let mut line = String::new();
    for _ in 0..reps {
        line = compare("wall_ns", Sample::new("A", &a), Sample::new("B", &b), &opts)
            .unwrap()
            .line;
    }
    let per = t.elapsed().as_secs_f64() / reps as f64;
    println!(
        "library compare, 2x50 runs, 10,000 resamples: {:.1} ms per comparison",
        per * 1e3
    );
    println!("  {line}");

    let dir = tempfile::tempdir().unwrap();
    let fa = dir.path().join("a.txt");
    let fb = dir.path().join("b.txt");
    let text = |v: &[f64]| v.iter().map(|x| format!("{x}\n")).collect::<String>();
    std::fs::write(&fa, text(&a)).unwrap();
    std::fs::write(&fb, text(&b)).unwrap();
    let mut best = f64::INFINITY;
    for _ in 0..reps.min(5) {
        let t = Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_abperf"))
            .args(["compare", fa.to_str().unwrap(), fb.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success());
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "abperf compare a.txt b.txt (binary, end to end, best of 5): {:.1} ms",
        best * 1e3
    );
    if timed {
        assert!(best < 1.0, "speed target missed: {best:.3} s");
    }
}
