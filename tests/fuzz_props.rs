//! Property tests of the parsers (issue 12, item 10), and a short run of the mutation fuzzer of
//! `benches/fuzz.sh` on every parser read from files (importers, ministat, ftrace text, raw
//! captures): generated valid inputs parse back to the values they were made from, generated
//! out-of-range values and values no tool prints (issue 40) are refused naming FILE:LINE and
//! the field, and mutated inputs never panic, hang or fail without naming the file.

#[path = "../examples/fuzz/engine.rs"]
mod engine;

use abperf::import::{self, Format};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;
use std::time::Duration;

const CASES: usize = 300;

#[test]
fn generated_time_records_parse_back() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for case in 0..CASES {
        let n = rng.random_range(1..20);
        let labelled = rng.random_bool(0.5);
        let suffixed = rng.random_bool(0.5);
        let mut text = String::new();
        let mut want = Vec::new();
        for i in 0..n {
            let user = rng.random_range(0..10_000_000) as f64 / 100.0;
            let sys = rng.random_range(0..1_000_000) as f64 / 100.0;
            let mins = rng.random_range(0..600);
            let secs = rng.random_range(0..6000) as f64 / 100.0;
            let rss = rng.random_range(0..100_000_000u64);
            let (minor, major) = (rng.random_range(0..1u64 << 40), rng.random_range(0..1000));
            let label = if labelled {
                format!("v{} ", i % 3)
            } else {
                String::new()
            };
            let (u, s, e) = if suffixed || !labelled {
                ("user", "system", "elapsed")
            } else {
                ("", "", "")
            };
            // GNU time's %CPU: (user + system) / elapsed, "?" when elapsed is 0.
            let elapsed = mins as f64 * 60.0 + secs;
            let cpu = if elapsed > 0.0 {
                format!("{}", ((user + sys) / elapsed * 100.0).floor())
            } else {
                "?".to_string()
            };
            text.push_str(&format!(
                "{label}{user:.2}{u} {sys:.2}{s} {mins}:{secs:05.2}{e} {cpu}%CPU (0avgtext+0avgdata {rss}maxresident)k\n\
                 0inputs+0outputs ({major}major+{minor}minor)pagefaults 0swaps\n"
            ));
            want.push((
                user,
                sys,
                mins as f64 * 60.0 + secs,
                rss as f64,
                minor as f64,
            ));
        }
        let imp = import::parse(Format::Time, "gen.txt", &text, "x")
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        assert_eq!(imp.runs.len(), n, "case {case}");
        for (r, (user, sys, wall, rss, minor)) in imp.runs.iter().zip(want) {
            assert_eq!(
                r.value("user_ns"),
                Some((user * 1e9).round()),
                "case {case}"
            );
            assert_eq!(r.value("sys_ns"), Some((sys * 1e9).round()), "case {case}");
            let w = r.value("wall_ns").unwrap();
            assert!((w - wall * 1e9).abs() <= 1.0, "case {case}: {w} vs {wall}");
            assert_eq!(r.value("maxrss_kib"), Some(rss), "case {case}");
            assert_eq!(r.value("minflt"), Some(minor), "case {case}");
        }
    }
}

#[test]
fn generated_numbers_parse_back_and_out_of_range_ones_are_refused() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for case in 0..CASES {
        let n = rng.random_range(1..50);
        let vals: Vec<f64> = (0..n)
            .map(|_| match rng.random_range(0..4) {
                0 => 0.0,
                1 => rng.random_range(1e-30..1e-20),
                2 => rng.random_range(0.0..1e6),
                _ => rng.random_range(1e15..1e18),
            })
            .collect();
        let text: String = vals.iter().map(|v| format!("{v:e}\n")).collect();
        let got = abperf::commands::compare_input::parse_numbers(&text, "n.txt", 1).unwrap();
        assert_eq!(got, vals, "case {case}");
        // One value out of range, anywhere: refused with its line.
        let bad_at = rng.random_range(0..n);
        let bad = [1.1e18, 1e80, 9e-31, 1e-300, -2e18][rng.random_range(0..5)];
        let text: String = vals
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{}\n", if i == bad_at { bad } else { *v }))
            .collect();
        let e = abperf::commands::compare_input::parse_numbers(&text, "n.txt", 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("n.txt:{}:", bad_at + 1)) && e.contains("out of range")
                || e.contains("negative"),
            "case {case}: {e}"
        );
    }
}

#[test]
fn generated_hyperfine_exports_parse_back() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for case in 0..CASES {
        let k = rng.random_range(1..5);
        let mut results = Vec::new();
        let mut want = Vec::new();
        for c in 0..k {
            let times: Vec<f64> = (0..rng.random_range(1..30))
                .map(|_| rng.random_range(0.0..1e6))
                .collect();
            results.push(serde_json::json!({
                "command": format!("cmd {c}"),
                "times": times,
                "user": rng.random_range(0.0..10.0),
                "system": rng.random_range(0.0..10.0),
            }));
            want.push(times);
        }
        let text = serde_json::json!({ "results": results }).to_string();
        let imp = import::parse(Format::Hyperfine, "h.json", &text, "x").unwrap();
        for (c, times) in want.iter().enumerate() {
            let runs = imp.runs_at(c);
            assert_eq!(runs.len(), times.len(), "case {case}");
            for (r, t) in runs.iter().zip(times) {
                // Kept to the double's precision, not rounded to whole nanoseconds.
                assert_eq!(r.value("wall_ns"), Some(t * 1e9), "case {case}");
            }
        }
        // A time beyond the bounds: refused, naming the file and the result's line.
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["results"][k - 1]["times"][0] = serde_json::json!(2e9);
        let e = import::parse(Format::Hyperfine, "h.json", &v.to_string(), "x").unwrap_err();
        assert!(e.to_string().starts_with("h.json:1:"), "case {case}: {e}");
    }
}

/// One generated input of `n` records in which record `bad` holds a value no tool prints
/// (issue 40): its format, its text, the line of the bad record, and a word of the error.
fn impossible_input(
    rng: &mut ChaCha8Rng,
    kind: usize,
    n: usize,
    bad: usize,
) -> (Format, String, usize, &'static str) {
    let tail =
        "(0avgtext+0avgdata 1000maxresident)k\n0inputs+0outputs (0major+1minor)pagefaults 0swaps\n";
    let mut text = String::new();
    match kind {
        0 | 1 => {
            text.push_str("variant,started_ns,ended_ns,wall_ns [ns]\n");
            for i in 0..n {
                let start = rng.random_range(1_000..1_000_000_000i64);
                let wall = rng.random_range(0..1_000_000_000i64);
                let (end, wall) = match (i == bad, kind) {
                    (true, 0) => (start + wall, -wall - 1),
                    (true, _) => (start - rng.random_range(1..start), wall),
                    _ => (start + wall, wall),
                };
                text.push_str(&format!("v{},{start},{end},{wall}\n", i % 3));
            }
            let word = if kind == 0 {
                "wall_ns (ns): -"
            } else {
                "ended_ns:"
            };
            (Format::Csv, text, bad + 2, word)
        }
        2 => {
            for i in 0..n {
                let v = rng.random_range(0..1_000_000);
                let dup = if i == bad {
                    [",\"variant\":\"z\"", ",\"wall_ns [ns]\":1"][rng.random_range(0..2)]
                } else {
                    ""
                };
                text.push_str(&format!(
                    "{{\"variant\":\"a\",\"wall_ns [ns]\":{v}{dup}}}\n"
                ));
            }
            (Format::Jsonl, text, bad + 1, "twice in one object")
        }
        3..=5 => {
            for i in 0..n {
                let (u, s) = (rng.random_range(0..10_000), rng.random_range(0..1_000));
                let (m, sec) = (rng.random_range(1..600), rng.random_range(0..60));
                let elapsed = (m * 60 + sec) as f64;
                let mut cpu = ((u + s) as f64 / elapsed * 100.0).floor() as u64;
                let mut e = format!("{m}:{sec:02}.00");
                if i == bad {
                    match kind {
                        3 => {
                            e = format!(
                                "{m}:{}.{:02}",
                                rng.random_range(60..100),
                                rng.random_range(0..100)
                            )
                        }
                        4 => {
                            e = format!(
                                "{}:{}:{sec:02}",
                                rng.random_range(0..100),
                                rng.random_range(60..100)
                            )
                        }
                        _ => cpu += rng.random_range(5..99_999),
                    }
                }
                text.push_str(&format!(
                    "{u}.00user {s}.00system {e}elapsed {cpu}%CPU {tail}"
                ));
            }
            let word = if kind == 5 { "%CPU" } else { "elapsed time" };
            (Format::Time, text, 2 * bad + 1, word)
        }
        _ => {
            let mut line = 0;
            for i in 0..n {
                if i == bad {
                    // The bad block's header line.
                    line = text.lines().count() + 1;
                }
                text.push_str(" Performance counter stats for 'true':\n\n");
                if i != bad {
                    let c = rng.random_range(1..1_000_000);
                    text.push_str(&format!(
                        "  {c}      page-faults\n\n 0.{c} seconds time elapsed\n\n"
                    ));
                }
            }
            (Format::PerfStat, text, line, "counters:")
        }
    }
}

#[test]
fn generated_impossible_values_are_refused_naming_file_line_and_field() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for case in 0..CASES {
        let n = rng.random_range(1..15);
        let bad = rng.random_range(0..n);
        let (format, text, line, word) = impossible_input(&mut rng, case % 7, n, bad);
        let e = import::parse(format, "g.in", &text, "x")
            .map(|_| "imported".to_string())
            .unwrap_or_else(|e| e.to_string());
        assert!(
            e.starts_with(&format!("g.in:{line}:")) && e.contains(word),
            "case {case} ({format}, record {bad} of {n}): {e}\n{text}"
        );
    }
}

#[test]
fn mutated_inputs_never_panic_hang_or_fail_unnamed() {
    // Every parser read from files, raw trace captures and ftrace text included (benches/fuzz.sh
    // found a panic, a 103 GB allocation and errors without the file name in raw captures).
    let targets: Vec<engine::Target> = engine::targets();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let crash = std::env::temp_dir().join(format!("abperf-fuzz-test-{}", std::process::id()));
    let corpus = root.join("tests/data/fuzz");
    let session = engine::Session {
        corpus_root: &corpus,
        crash_dir: &crash,
        budget: Duration::from_secs(8),
        seed: 4,
        limit: Duration::from_secs(5),
        max_len: 64 << 10,
    };
    let stats = engine::fuzz(&targets, &session, |_| {});
    let _ = std::fs::remove_dir_all(&crash);
    assert!(stats.execs > 1000, "{stats:?}");
    assert!(
        stats.panics == 0 && stats.unnamed == 0,
        "{} panics, {} unnamed errors: {:#?}",
        stats.panics,
        stats.unnamed,
        stats.examples
    );
}
