//! `cargo bench -p abperf-stats --bench history`: the error control and power of the change-point
//! detection of issue 43 on the seeded generator's histories (60 points, standard errors from
//! half to twice the typical one, one outlier of 6 to 10 SE in 30% of the series, or in all of
//! them): the share of change-free series with any change reported (at most alpha plus noise),
//! and on series with a planted step of 1, 2 or 3 typical SEs the detection rate and the share of
//! detections whose location interval covers the true point (at least 1 - alpha).
//!
//! `-- --write FILE` also writes every series and abperf's changes as JSON for
//! benches/history_peers.py (Apache Otava and MongoDB's signal-processing-algorithms on the same
//! series); `-- --divide N` runs a N-th of the series. `cargo test --all-targets` runs this once as a smoke test with fewer series.

use std::time::Instant;

use abperf_stats::history::simulate::{Generated, Spec, generate};
use abperf_stats::history::{Config, History, detect};
use serde_json::{Value, json};

const POINTS: usize = 60;
const SEED: u64 = 4343;

struct Row {
    name: &'static str,
    spec: Spec,
    count: u64,
}

#[derive(Default)]
struct Tally {
    any: usize,
    covered: usize,
    exact: usize,
}

fn tally(results: &[(Generated, History)]) -> Tally {
    let mut t = Tally::default();
    for (g, h) in results {
        if h.changes.is_empty() {
            continue;
        }
        t.any += 1;
        if let Some(truth) = g.change {
            let nearest = h
                .changes
                .iter()
                .min_by_key(|c| c.index.abs_diff(truth))
                .expect("a change");
            t.covered += (nearest.location.0 <= truth && truth <= nearest.location.1) as usize;
            t.exact += (nearest.index == truth) as usize;
        }
    }
    t
}

fn series_json(g: &Generated, h: &History) -> Value {
    json!({
        "estimates": g.points.iter().map(|p| p.estimate).collect::<Vec<_>>(),
        "se": g.points.iter().map(|p| p.se).collect::<Vec<_>>(),
        "change": g.change,
        "outlier": g.outlier,
        "abperf": h.changes.iter().map(|c| c.index).collect::<Vec<_>>(),
        "abperf_p": h.p,
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let timed = args.iter().any(|a| a == "--bench");
    let write = args
        .iter()
        .position(|a| a == "--write")
        .and_then(|i| args.get(i + 1));
    let scale: u64 = match args.iter().position(|a| a == "--divide") {
        Some(i) => args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(1),
        None if timed => 1,
        None => 50,
    };
    let cfg = Config {
        simulations: if timed { 1999 } else { 199 },
        ..Config::default()
    };
    let row = |name, step, outlier, count: u64| Row {
        name,
        spec: Spec {
            points: POINTS,
            step,
            outlier,
        },
        count: (count / scale).max(4),
    };
    let rows = [
        row("change-free", 0.0, 0.3, 1000),
        row("change-free, no outlier", 0.0, 0.0, 500),
        row("change-free, outlier in each", 0.0, 1.0, 500),
        row("step 1 SE", 1.0, 0.3, 500),
        row("step 2 SE", 2.0, 0.3, 500),
        row("step 3 SE", 3.0, 0.3, 500),
    ];
    println!(
        "{POINTS} points per series, SEs log-uniform 0.5..2, alpha {}, {} null simulations per series",
        cfg.alpha, cfg.simulations
    );
    println!(
        "{:<30} {:>6} {:>12} {:>22} {:>12} {:>8}",
        "series", "count", "any change", "location covers truth", "exact index", "seconds"
    );
    let mut sets = Vec::new();
    let mut failed = Vec::new();
    for (r, spec_row) in rows.iter().enumerate() {
        let start = Instant::now();
        let results: Vec<(Generated, History)> = (0..spec_row.count)
            .map(|i| {
                let g = generate(&spec_row.spec, SEED + r as u64, i);
                let h = detect(&g.points, &cfg).expect("a generated series is valid");
                (g, h)
            })
            .collect();
        let secs = start.elapsed().as_secs_f64();
        let t = tally(&results);
        let n = results.len() as f64;
        let share = |k: usize, of: f64| {
            if of > 0.0 {
                format!("{:.1}%", 100.0 * k as f64 / of)
            } else {
                "-".to_string()
            }
        };
        let planted = spec_row.spec.step != 0.0;
        println!(
            "{:<30} {:>6} {:>12} {:>22} {:>12} {:>8.1}",
            spec_row.name,
            results.len(),
            share(t.any, n),
            if planted {
                share(t.covered, t.any as f64)
            } else {
                "-".into()
            },
            if planted {
                share(t.exact, t.any as f64)
            } else {
                "-".into()
            },
            secs
        );
        if timed && !planted && t.any as f64 / n >= 0.08 {
            // 1000 (500) series at 5%: the binomial SD is 0.7 (1.0) points.
            failed.push(format!("{}: {} false alarms", spec_row.name, t.any));
        }
        sets.push(json!({
            "name": spec_row.name,
            "step": spec_row.spec.step,
            "series": results.iter().map(|(g, h)| series_json(g, h)).collect::<Vec<_>>(),
        }));
    }
    if let Some(path) = write {
        let doc = json!({"alpha": cfg.alpha, "points": POINTS, "sets": sets});
        std::fs::write(path, serde_json::to_string(&doc).expect("JSON"))
            .unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
        println!("series written to {path}");
    }
    assert!(failed.is_empty(), "false alarms above alpha: {failed:?}");
}
