//! Every output format, as a reviewed snapshot (insta; `cargo insta review`, or
//! `INSTA_UPDATE=always cargo test --test snapshots` and read the diff): seed 000's imported
//! `/usr/bin/time` lines and a small micro experiment with known samples, through the real
//! binary. Timestamps, temporary paths and the binary's path are replaced by placeholders.

mod common;
use abperf::micro::record::Record;
use abperf::model::micro::{MicroRound, RoundProbe, rounds_to_runs};
use abperf::model::{Kind, MicroFinding, NewExperiment, Variant};
use common::Lab;

const FORMATS: &[&str] = &[
    "text",
    "mail",
    "md",
    "json",
    "csv",
    "html",
    "hyperfine-json",
    "perf-stat",
];

fn snapshot(name: &str, text: &str) {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    insta::with_settings!({
        filters => vec![
            (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "[created]"),
            (r"/tmp/\.tmp[A-Za-z0-9]+", "[lab]"),
            (data, "[data]"),
            (r"[^\s\x22<>]*/target/[^\s\x22<>]*/abperf\b", "[abperf]"),
        ],
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!(name, text);
    });
}

#[test]
fn seed_000_in_every_format() {
    let lab = Lab::new();
    // Imported by a relative name from tests/data, so that no output depends on where the
    // checkout lives (the mail format wraps long paths before any filter could replace them).
    let import = lab
        .cmd(&[
            "import",
            "--format",
            "time",
            "--new",
            "invpcid",
            "seed000-time.txt",
        ])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data"))
        .output()
        .unwrap();
    assert!(import.status.success(), "{import:?}");
    for f in FORMATS {
        let out = lab.ok(&["report", "1", "--format", f, "--metric", "user_ns"]);
        snapshot(&format!("seed000-report-{f}"), &out.stdout);
    }
    let compare = lab.ok(&["compare", "1", "--metric", "user_ns", "--resamples", "1000"]);
    snapshot("seed000-compare-text", &compare.stdout);
    let details = lab.ok(&[
        "compare",
        "1",
        "--metric",
        "user_ns",
        "--resamples",
        "1000",
        "--details",
    ]);
    snapshot("seed000-compare-details-text", &details.stdout);
    snapshot(
        "seed000-show-text",
        &lab.ok(&["show", "1", "--each-run"]).stdout,
    );
    snapshot(
        "seed000-export-csv",
        &lab.ok(&["export", "1", "--format", "csv"]).stdout,
    );
}

/// Seed 001's design on seeded data with planted effects (tests/common/planted.rs): the summary
/// paragraph (text, mail, Markdown) names the planted differences.
#[test]
fn planted_families_paragraph() {
    let lab = Lab::new();
    common::planted::import(&lab);
    for f in ["text", "mail", "md"] {
        let out = lab.ok(&[&common::planted::COMPARE[..], &["--format", f]].concat());
        snapshot(&format!("planted-compare-{f}"), &out.stdout);
    }
}

/// A small micro experiment with known samples: the timer, getppid, and madvise / mprotect of
/// 1, 2, 33 and 34 pages with a knee after 33, a skip and a note.
fn micro_record() -> Record {
    micro_record_shifted(1.0, &[6, 5])
}

/// [`micro_record`] with the touched madvise of 33 and 34 pages costing `shift` times as much,
/// the samples in rounds of `split` samples each, every round in an invocation of its own (so
/// that two such experiments compare with the invocations as the unit).
fn micro_record_shifted(shift: f64, split: &[usize]) -> Record {
    let mut variants = Vec::new();
    let mut rounds = Vec::new();
    let mut config = |name: String, params: &[(&str, String)], per: &str, base: f64| {
        let pos = variants.len();
        let mut v = Variant::named(&name);
        for (k, val) in params {
            v.parameters.insert(k.to_string(), val.clone());
        }
        v.parameters.insert("per".into(), per.into());
        variants.push(v);
        // 11 samples in two rounds (6 + 5), the core at 3.5 GHz against a 2.6 GHz counter.
        let c: Vec<f64> = (0..split.iter().sum::<usize>())
            .map(|i| base * (1.0 + 0.01 * ((i * 7) % 11) as f64))
            .collect();
        let mut at = 0;
        let parts: Vec<&[f64]> = split
            .iter()
            .map(|&n| {
                at += n;
                &c[at - n..at]
            })
            .collect();
        for (r, part) in parts.into_iter().enumerate() {
            rounds.push(MicroRound {
                variant: pos,
                round: r as u32,
                invocation: r as u32,
                probe: RoundProbe {
                    started_ns: 0,
                    ticks_per_core_cycle: 2.6 / 3.5,
                    adds_per_cycle: 3.6,
                },
                cycles: part.to_vec(),
            });
        }
    };
    config(
        "timer/empty-pair".into(),
        &[("bench", "timer".into()), ("pages", "1".into())],
        "pair",
        52.0,
    );
    config(
        "syscall/getppid".into(),
        &[("bench", "syscall".into()), ("pages", "1".into())],
        "call",
        560.0,
    );
    for op in ["madvise", "mprotect"] {
        for n in [1u32, 2, 33, 34] {
            for range in ["touched", "empty"] {
                let cost = match (range, n) {
                    ("empty", _) => 2000.0,
                    (_, 34) => 2000.0 + 7000.0,
                    _ => 2000.0 + 280.0 * n as f64,
                } * if op == "madvise" && range == "touched" && n >= 33 {
                    shift
                } else {
                    1.0
                };
                config(
                    format!("tlb-flush/{op}/{range}/n={n}"),
                    &[
                        ("bench", "tlb-flush".into()),
                        ("op", op.into()),
                        ("range", range.into()),
                        ("pages", n.to_string()),
                    ],
                    "call",
                    cost,
                );
            }
        }
    }
    let pages: Vec<u64> = variants
        .iter()
        .map(|v| v.parameters.get("pages").map_or(1, |p| p.parse().unwrap()))
        .collect();
    let finding =
        |bench: &str, key: &str, value: Option<f64>, unit: &str, text: &str| MicroFinding {
            bench: bench.into(),
            key: key.into(),
            value,
            unit: unit.into(),
            text: text.into(),
        };
    Record {
        experiment: NewExperiment {
            name: "micro <small>".into(),
            kind: Kind::Micro,
            command_line: vec!["abperf".into(), "micro".into(), "--quick".into()],
            design: serde_json::json!({
                "kind": "micro", "arch": "x86_64", "quick": true,
                "benches": ["timer", "syscall", "tlb-flush", "xstate"],
                "cpu": 0, "remote_cpu": 1,
                "timer": {"counter": "tsc", "hz": 2.6e9, "hz_source": "cpuid 0x15", "overhead": 52.0,
                          "resolution": 26, "core_ghz": 3.5},
                "cpu_info": {}, "cpu_description": "Test CPU (family 25 model 17), 2 CPUs",
                "elapsed_s": 1.5,
                "adds_per_cycle": {"n": 32, "min": 3.0, "p10": 3.2, "median": 3.6, "p90": 3.7,
                                   "max": 3.7, "mean": 3.5},
            }),
            seed: None,
            environment: serde_json::json!({"kernel": "6.18.0-test", "cpu_model": "Test CPU", "cpu_count": 2}),
        },
        runs: rounds_to_runs(&rounds, |v| pages[v], 2.6e9),
        variants,
        rounds,
        findings: vec![
            finding(
                "timer",
                "overhead",
                Some(52.0),
                "cycles",
                "empty start/stop pair",
            ),
            finding(
                "tlb-flush",
                "madvise-knee",
                Some(33.0),
                "pages",
                "madvise: knee after 33 pages (280 cycles/page below, full flush above)",
            ),
            finding(
                "xstate",
                "skipped:avx512",
                None,
                "",
                "this CPU has no AVX-512",
            ),
            finding(
                "",
                "note",
                None,
                "",
                "virtual machine: costs include the hypervisor's",
            ),
        ],
    }
}

#[test]
fn micro_experiment_in_every_format() {
    let lab = Lab::new();
    let id = micro_record().save(&mut lab.store()).unwrap();
    let id = id.to_string();
    for f in FORMATS {
        if *f == "hyperfine-json" {
            // No time metric in ns per run that hyperfine could plot: a clear error instead.
            let out = lab.fails(&["report", &id, "--format", f], 2);
            snapshot("micro-report-hyperfine-json-error", &out.stderr);
            continue;
        }
        let out = lab.ok(&["report", &id, "--format", f]);
        snapshot(&format!("micro-report-{f}"), &out.stdout);
    }
    snapshot("micro-show-text", &lab.ok(&["show", &id]).stdout);
}

/// Two micro experiments compared (`compare A B`), in every format that has a micro comparison.
#[test]
fn micro_comparison_in_every_format() {
    let lab = Lab::new();
    let split = [3; 6];
    let a = micro_record_shifted(1.0, &split)
        .save(&mut lab.store())
        .unwrap()
        .to_string();
    let b = micro_record_shifted(1.3, &split)
        .save(&mut lab.store())
        .unwrap()
        .to_string();
    for f in ["text", "md", "csv", "html", "json"] {
        let out = lab.ok(&["compare", &a, &b, "--format", f]);
        if f == "json" {
            common::assert_schema(&out.json());
        }
        snapshot(&format!("micro-compare-{f}"), &out.stdout);
    }
}
