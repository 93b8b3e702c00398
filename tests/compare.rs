//! `abperf compare` and `abperf plan` through the real binary: ministat mode on files, and
//! store-backed comparisons on experiments written with the store's own API (each test has its
//! own temporary --db).

mod common;
use abperf::model::{Kind, Metric, NewExperiment, Run, RunStatus, Slot, Variant};
use abperf::stats::dist::norm_ppf;
use abperf::store::Store;
use common::Lab;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;

fn seed000_files(dir: &Path) -> (String, String) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/seed000-time.txt"
    ))
    .unwrap();
    let (mut n, mut y) = (
        String::from("# seed 000, user seconds, use_invpcid_flush_one=n\n"),
        String::new(),
    );
    for line in text.lines() {
        let f: Vec<&str> = line.trim_start_matches("> ").split_whitespace().collect();
        let row = format!("{} {} {}\n", f[1], f[2], f[3]);
        if f[0] == "n" { n += &row } else { y += &row }
    }
    let (pn, py) = (dir.join("n"), dir.join("y"));
    std::fs::write(&pn, n).unwrap();
    std::fs::write(&py, y).unwrap();
    (pn.display().to_string(), py.display().to_string())
}

#[test]
fn ministat_mode_seed000() {
    let lab = Lab::new();
    let dir = &lab.dir;
    let (n, y) = seed000_files(dir.path());
    let (code, out, err) = lab.run(&["compare", &n, &y, "--details"]).parts();
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("value: y is 0.58% faster than n (95% CI "),
        "{out}"
    );
    let first = out.lines().find(|l| l.starts_with("  FASTER: ")).unwrap();
    assert!(
        first.starts_with("  FASTER: y is 0.58% faster than n (95% CI "),
        "{out}"
    );
    assert!(first.ends_with("p<0.0001, n=12+12, Welch)"), "{out}");
    assert!(
        out.contains("Brown-Forsythe p=0.31: no difference in variability"),
        "{out}"
    );

    let (code, out, err) = lab
        .run(&["compare", &n, &y, "--format", "json", "--resamples", "2000"])
        .parts();
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let c = &j["analysis"]["comparisons"][0];
    assert_eq!(c["verdict"], "faster");
    assert_eq!(c["baseline"], "n");
    assert_eq!(c["n_baseline"], 12);
    assert!((c["change_pct"].as_f64().unwrap() + 0.578).abs() < 0.001);
    assert!(c["p_welch"].as_f64().unwrap() < 1e-4);
    assert!(c["drift_p"].is_null());
    assert!(c["runs_needed"].is_null());
    assert_eq!(c["ratio_ci"].as_array().unwrap().len(), 2);

    // Column 2 is system time; column 3 is /usr/bin/time's m:ss elapsed, not a number.
    let (code, out, _) = lab.run(&["compare", "-c", "2", &n, &y]).parts();
    assert_eq!(code, 0);
    assert!(out.starts_with("column 2: y is "), "{out}");
    let (code, _, err) = lab.run(&["compare", "-c", "3", &n, &y]).parts();
    assert_eq!(code, 2);
    assert!(
        err.ends_with(":2: column 3: expected a number, got '4:15.52'\n"),
        "{err}"
    );
}

#[test]
fn ministat_mode_errors_name_file_and_line() {
    let lab = Lab::new();
    let dir = &lab.dir;
    let a = dir.path().join("a.txt");
    let b = dir.path().join("b.txt");
    std::fs::write(&a, "1.0\n1.1\n# comment\n1.2\n1.05\n").unwrap();
    std::fs::write(&b, "1.0\n1.1\nfast\n").unwrap();
    let (code, _, err) = lab
        .run(&["compare", a.to_str().unwrap(), b.to_str().unwrap()])
        .parts();
    assert_eq!(code, 2);
    assert!(
        err.contains("b.txt:3: column 1: expected a number, got 'fast'"),
        "{err}"
    );
    // Negative values are data (a delta, a temperature): accepted.
    std::fs::write(&b, "1.0\n-1.1\n0.5\n").unwrap();
    lab.ok(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    std::fs::write(&b, "1.0\ninf\n").unwrap();
    let (code, _, err) = lab
        .run(&["compare", a.to_str().unwrap(), b.to_str().unwrap()])
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("b.txt:2:"), "{err}");
    let (code, _, err) = lab.run(&["compare", a.to_str().unwrap()]).parts();
    assert_eq!(code, 2);
    assert!(err.contains("give at least two files"), "{err}");
    let (code, _, err) = lab
        .run(&["compare", a.to_str().unwrap(), "/no/such/file"])
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("'/no/such/file': no such file"), "{err}");
    // Too few runs: description only, exit 0, no NaN.
    std::fs::write(&b, "1.0\n1.1\n1.2\n").unwrap();
    let (code, out, _) = lab
        .run(&[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--format",
            "json",
        ])
        .parts();
    assert_eq!(code, 0);
    assert!(
        out.contains("Description only") && !out.contains("NaN"),
        "{out}"
    );
    let (code, _, err) = lab
        .run(&[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--alpha",
            "2",
        ])
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("--alpha 2"), "{err}");
}

/// An experiment with variants A (baseline), B (1% slower) and C (A's values reshuffled), ABBA-like
/// order, wall_ns and user_ns metrics, 20 runs per variant plus one warm-up each.
fn make_experiment(store: &mut Store, kernel: &str, seed: u64) -> i64 {
    make_drifting_experiment(store, kernel, seed, 0.0)
}

/// [`make_experiment`] with every timed value multiplied by 1 + `drift` x its position in the
/// run order.
fn make_drifting_experiment(store: &mut Store, kernel: &str, seed: u64, drift: f64) -> i64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let names = ["A", "B", "C"];
    let variants: Vec<Variant> = names
        .iter()
        .map(|n| Variant {
            command: Some(format!("true {n}")),
            ..Variant::named(n)
        })
        .collect();
    let mut order: Vec<usize> = vec![0, 1, 2];
    let mut schedule = Vec::new();
    for v in 0..3 {
        schedule.push(Slot {
            seq: v as u32,
            variant: v,
            block: -1,
            warmup: true,
        });
    }
    for blk in 0..20 {
        if blk % 2 == 1 {
            order.reverse();
        }
        for &v in &order {
            schedule.push(Slot {
                seq: schedule.len() as u32,
                variant: v,
                block: blk,
                warmup: false,
            });
        }
    }
    let exp = NewExperiment {
        name: format!("cmp-{kernel}"),
        kind: Kind::Run,
        command_line: vec!["abperf".into(), "run".into()],
        design: serde_json::json!({"order": "abba", "seed": seed, "runs": 20, "warmup": 1}),
        seed: Some(seed),
        environment: serde_json::json!({"kernel": kernel, "cpu_model": "test CPU", "thp_enabled": "madvise"}),
    };
    let id = store.create_experiment(&exp, &variants, &schedule).unwrap();
    let base: Vec<f64> = (0..20)
        .map(|_| 1e9 * (1.0 + 0.002 * norm_ppf(rng.random_range(1e-9..1.0))))
        .collect();
    let mut c_vals = base.clone();
    c_vals.rotate_left(7);
    let mut k = [0usize; 3];
    let mut t = 1_000_000_000_000i64;
    for s in &schedule {
        let v = s.variant;
        let wall = if s.warmup {
            2e9
        } else {
            let i = k[v];
            k[v] += 1;
            let x = match v {
                0 => base[i],
                1 => 1.01e9 * (1.0 + 0.002 * norm_ppf(rng.random_range(1e-9..1.0))),
                _ => c_vals[i],
            };
            x * (1.0 + drift * f64::from(s.seq))
        };
        let user = wall * 0.9;
        store
            .commit_run(
                id,
                &Run {
                    variant: v,
                    seq: s.seq,
                    warmup: s.warmup,
                    block: if s.warmup { -1 } else { 0 },
                    status: RunStatus::Ok,
                    exit_code: Some(0),
                    signal: None,
                    started_ns: t,
                    ended_ns: t + wall as i64,
                    metrics: vec![
                        Metric::new("wall_ns", wall, "ns"),
                        Metric::new("user_ns", user, "ns"),
                    ],
                    excluded: None,
                    source: None,
                    labels: Default::default(),
                },
            )
            .unwrap();
        t += wall as i64 + 1000;
    }
    id
}

/// Two experiments written with the store's API into the lab's --db s.db: #1 on kernel 6.18.0,
/// #2 on 6.19.0-rc1 (see [`make_experiment`]). Returns the --db path and the two ids.
fn two_experiments(lab: &Lab) -> (String, String, String) {
    let db = lab.path("s.db");
    let mut store = Store::open(&db).unwrap();
    let id1 = make_experiment(&mut store, "6.18.0", 11);
    let id2 = make_experiment(&mut store, "6.19.0-rc1", 12);
    (lab.p("s.db"), id1.to_string(), id2.to_string())
}

abtest!(
    store_backed_compare_text_verdicts_drift_and_environment,
    |lab| {
        let (db, id1, _) = two_experiments(&lab);
        lab.ok(&[
            "compare",
            &id1,
            "--db",
            &db,
            "--resamples",
            "1000",
            "--details",
        ])
        .has("SLOWER: B is 1.0")
        .has("Holm m=2")
        .has("NO DIFFERENCE: C vs A +0.00%")
        .has("drift: Mann-Kendall (within variants)")
        // Stored runs carry their order: the ANCOVA with run index is the verdict's test,
        // whatever Mann-Kendall says (issue 45: chosen before the data are seen).
        .has("primary: ANCOVA with run index (the run order is known)")
        .has("left out: 3 runs")
        .has("kernel 6.18.0");
    }
);

abtest!(store_backed_compare_every_metric_in_one_family, |lab| {
    let (db, _, _) = two_experiments(&lab);
    let j = lab
        .ok(&[
            "compare",
            "latest",
            "--db",
            &db,
            "--metric",
            "all",
            "--format",
            "json",
            "--resamples",
            "0",
        ])
        .json();
    let comps = j["analysis"]["comparisons"].as_array().unwrap();
    assert_eq!(comps.len(), 4, "2 variants x 2 metrics");
    assert!(
        comps
            .iter()
            .all(|c| c["m"] == 4 && c["drift_p"].is_number())
    );
    assert_eq!(j["analysis"]["m"], 4);
});

abtest!(
    store_backed_compare_against_another_baseline_with_bh,
    |lab| {
        let (db, id1, _) = two_experiments(&lab);
        let args = [
            "compare",
            &id1,
            "--db",
            &db,
            "--baseline",
            "B",
            "--resamples",
            "0",
            "--correction",
            "bh",
            "--details",
        ];
        lab.ok(&args)
            .has("FASTER: A is 1.00% faster than B")
            .has("BH m=2");
    }
);

abtest!(
    store_backed_compare_of_two_experiments_starts_with_their_differences,
    |lab| {
        let (db, id1, id2) = two_experiments(&lab);
        let args = [
            "compare",
            &id1,
            &id2,
            "--db",
            &db,
            "--variant",
            "B",
            "--resamples",
            "0",
            "--details",
        ];
        let out = lab.ok(&args).stdout;
        let first: Vec<&str> = out.lines().take(2).collect();
        assert_eq!(
            first,
            [
                "Environment differences (baseline -> candidate):",
                "  kernel: 6.18.0 -> 6.19.0-rc1"
            ],
            "{out}"
        );
        assert!(
            out.contains(&format!("#{id2}:B vs #{id1}:B (baseline)")),
            "{out}"
        );
    }
);

abtest!(
    store_backed_compare_names_the_metrics_of_a_bad_metric,
    |lab| {
        let (db, id1, _) = two_experiments(&lab);
        lab.fails(&["compare", &id1, "--db", &db, "--metric", "nope"], 2)
        .err_has(
            "--metric nope: no such metric in experiment 1; metrics: wall_ns (wall), user_ns (user)",
        );
    }
);

abtest!(
    store_backed_compare_of_a_missing_experiment_is_a_lookup_error,
    |lab| {
        let (db, _, _) = two_experiments(&lab);
        let o = lab.run(&["compare", "99", "--db", &db]);
        assert_eq!(o.code, Some(2), "a lookup error, like every other: {o}");
        o.err_has("no experiment 99");
    }
);

abtest!(store_backed_plan_from_an_experiment, |lab| {
    let (db, id1, _) = two_experiments(&lab);
    lab.ok(&["plan", "--effect", "0.3", "--from", &id1, "--db", &db])
        .has("runs per variant")
        .has("expected wall-clock: 3 variants x")
        // The stored runs start 1 us after the previous one ended: the untimed work is counted.
        .has("of untimed work per run")
        .has("the median of 62 gaps from a run's end to the next run's start");
});

abtest!(store_backed_report_verdict_lines, |lab| {
    let (db, id1, _) = two_experiments(&lab);
    let lines = verdict_lines(&lab, &id1, &db);
    assert!(
        lines[0].starts_with("B is 1.0") && lines[0].contains("slower than A"),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("No significant difference: C vs A"),
        "{lines:?}"
    );
});

/// The verdict lines `abperf report` gives for experiment `id`.
fn verdict_lines(lab: &Lab, id: &str, db: &str) -> Vec<String> {
    lab.ok(&["report", id, "--db", db, "--format", "json"])
        .json()["analysis"]["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["line"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn plan_from_cv() {
    let lab = Lab::new();
    let (code, out, _) = lab.run(&["plan", "--effect", "0.3", "--cv", "0.3"]).parts();
    assert_eq!(code, 0);
    assert!(out.contains("17 runs per variant"), "{out}");
    let (code, _, err) = lab.run(&["plan", "--effect", "0.3"]).parts();
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = lab.run(&["plan", "--effect", "0", "--cv", "1"]).parts();
    assert_eq!(code, 2);
    assert!(err.contains("--effect 0"), "{err}");
}

#[test]
fn compare_after_real_abperf_run() {
    let lab = Lab::new();
    // Sleeps of 10 and 60 ms: one run delayed by a few hundred ms (both CPUs busy with the
    // suite's QEMU guests) leaves the baseline's mean without a bounded ratio interval, an
    // honest INCONCLUSIVE. Such an experiment is measured once more, in a store of its own.
    let attempt = |name: &str| {
        let db = lab.dir.path().join(name);
        let dbs = db.to_str().unwrap().to_string();
        let (code, _, err) = lab
            .run(&[
                "run",
                "--db",
                &dbs,
                "-r",
                "6",
                "--warmup",
                "1",
                "--seed",
                "7",
                "-n",
                "short",
                "-n",
                "long",
                "sleep 0.01",
                "sleep 0.06",
            ])
            .parts();
        assert_eq!(code, 0, "{err}");
        let (code, out, err) = lab
            .run(&[
                "compare",
                "latest",
                "--db",
                &dbs,
                "--format",
                "json",
                "--resamples",
                "1000",
            ])
            .parts();
        assert_eq!(code, 0, "{err}");
        (
            dbs,
            serde_json::from_str::<serde_json::Value>(&out).unwrap(),
        )
    };
    let (mut dbs, mut j) = attempt("run.db");
    if j["analysis"]["comparisons"][0]["verdict"] == "inconclusive" {
        (dbs, j) = attempt("again.db");
    }
    let dbs = dbs.as_str();
    let c = &j["analysis"]["comparisons"][0];
    assert_eq!(
        (c["baseline"].as_str(), c["variant"].as_str()),
        (Some("short"), Some("long"))
    );
    assert_eq!(c["metric"], "wall_ns");
    assert_eq!(c["verdict"], "slower", "{}", c["line"]);
    assert_eq!(
        (c["n_baseline"].as_u64(), c["n_variant"].as_u64()),
        (Some(6), Some(6))
    );
    assert!(
        c["drift_p"].is_number(),
        "ABBA order is stored, so drift is checked"
    );
    assert!(c["ratio"].as_f64().unwrap() > 1.3, "{}", c["line"]);
    let left_out = j["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["counted"] == false)
        .count();
    assert_eq!(left_out, 2, "warm-ups are never analysed");
    let lines = verdict_lines(&lab, "latest", dbs);
    assert!(
        lines[0].starts_with("long is ")
            && (lines[0].contains("% slower than short")
                || lines[0].contains("x slower than short")),
        "{lines:?}"
    );
}

/// Imports seed 001's runs (as hyperfine JSON) into the lab; returns its reference values.
///
/// Seed 001's design: 6 workloads x 3 implementations x 31 runs, every pair within each workload
/// on the mean and the run-to-run variation, 36 tests Holm-corrected at alpha 0.01; the corrected
/// p-values match statsmodels' multipletests on scipy's p-values (tools/stats_reference.py).
fn seed001(lab: &Lab) -> serde_json::Value {
    let refs: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::data("stats_reference.json")).unwrap(),
    )
    .unwrap();
    let s = refs["seed001"][0].clone();
    let mut results = Vec::new();
    for w in s["workloads"].as_array().unwrap() {
        for i in s["impls"].as_array().unwrap() {
            let (w, i) = (w.as_str().unwrap(), i.as_str().unwrap());
            let times = &s["values"][w][i];
            results.push(serde_json::json!({
                "command": format!("{i} {w}"),
                "times": times,
                "exit_codes": vec![0; times.as_array().unwrap().len()],
                "parameters": {"workload": w, "impl": i},
            }));
        }
    }
    let f = lab.write(
        "seed001.json",
        serde_json::json!({"results": results}).to_string(),
    );
    lab.ok(&["import", "--format", "hyperfine", "--new", "seed001", &f]);
    s
}

/// Seed 001's comparison: every pair within each workload, mean and variability, Holm at 0.01.
const SEED001_COMPARE: [&str; 12] = [
    "compare",
    "1",
    "--pairs",
    "all",
    "--by",
    "workload",
    "--test",
    "mean,variability",
    "--alpha",
    "0.01",
    "--resamples",
    "1000",
];

abtest!(seed_001_families_match_statsmodels, |lab| {
    let s = seed001(&lab);
    let j = lab
        .ok(&[&SEED001_COMPARE[..], &["--format", "json"]].concat())
        .json();
    common::assert_schema(&j);
    let a = &j["analysis"];
    assert_eq!(a["m"], 36, "{a}");
    let comps = a["analysis"]
        .as_array()
        .unwrap_or_else(|| a["comparisons"].as_array().unwrap());
    assert_eq!(comps.len(), 18);
    let mut matched = 0;
    for t in s["tests"].as_array().unwrap() {
        let (w, b, v) = (&t["workload"], &t["baseline"], &t["variant"]);
        let c = comps
            .iter()
            .find(|c| {
                c["family"] == *w
                    && c["baseline"] == format!("{} {}", b.as_str().unwrap(), w.as_str().unwrap())
                    && c["variant"] == format!("{} {}", v.as_str().unwrap(), w.as_str().unwrap())
            })
            .unwrap_or_else(|| panic!("no comparison for {t}"));
        let key = if t["test"] == "mean" {
            "p_adjusted"
        } else {
            "p_variability_adjusted"
        };
        let (got, want) = (c[key].as_f64().unwrap(), t["holm"].as_f64().unwrap());
        assert!(
            (got - want).abs() <= 1e-6 * want.max(1e-12),
            "{t}: abperf {got} vs statsmodels {want}"
        );
        matched += 1;
    }
    assert_eq!(matched, 36);
});

// The table: one row per workload and pair, marks where significant after the correction.
abtest!(seed_001_table_marks_what_holm_keeps_significant, |lab| {
    let s = seed001(&lab);
    let text = lab.ok(&SEED001_COMPARE).stdout;
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("mean and run-to-run variation: "))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(table[0].contains("Holm over m=36"), "{text}");
    assert_eq!(table.len(), 2 + 18, "{text}");
    assert!(
        table
            .iter()
            .any(|l| l.starts_with("hot-read") && l.contains("noflush vs flush"))
    );
    let stars = table
        .iter()
        .skip(2)
        .map(|l| l.matches('*').count())
        .sum::<usize>();
    let significant = s["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["holm"].as_f64().unwrap() < 0.01)
        .count();
    assert_eq!(stars, significant, "{text}");
});

/// `perf stat -r N` prints a mean and its relative standard error, not the runs: two such
/// outputs are compared with Welch from the summaries, and the comparison says which checks
/// need single runs. Ministat files of `mean sd n` lines give the same test.
#[test]
fn summaries_from_perf_stat_and_ministat() {
    let lab = Lab::new();
    let perf = |ms: f64, pm: f64| {
        format!(
            "\n Performance counter stats for 'make -j8' (30 runs):\n\n\
             {ms:>17} msec task-clock                       #    3.8 CPUs utilized            ( +- {pm:.2}% )\n\n\
             {:.6} +- 0.001 seconds time elapsed  ( +- {pm:.2}% )\n",
            ms / 3800.0
        )
    };
    let (a, b) = (
        lab.write("old.txt", perf(26_334.0, 0.09)),
        lab.write("new.txt", perf(26_150.0, 0.08)),
    );
    lab.ok(&[
        "import",
        "--format",
        "perf-stat",
        "--new",
        "kbuild",
        "--variant",
        "old",
        &a,
    ]);
    lab.import_variant("1", "new", "perf-stat", &b);
    let j = lab
        .ok(&["compare", "1", "--metric", "task-clock", "--format", "json"])
        .json();
    let c = &j["analysis"]["comparisons"][0];
    assert_eq!(
        (c["n_baseline"].as_u64(), c["n_variant"].as_u64()),
        (Some(30), Some(30)),
        "{c}"
    );
    assert_eq!(c["verdict"], "faster", "{}", c["line"]);
    assert!(
        c["line"].as_str().unwrap().contains("Welch (summaries)"),
        "{}",
        c["line"]
    );
    assert!(c["p_mannwhitney"].is_null());
    assert!(
        c["notes"][0].as_str().unwrap().contains("were not made"),
        "{c}"
    );
    // The same summaries as `mean sd n` lines: sd = mean * +-% / 100 * sqrt(30).
    let sd = |m: f64, pm: f64| m * pm / 100.0 * 30f64.sqrt();
    let fa = lab.write("a.sum", format!("26334 {} 30\n", sd(26_334.0, 0.09)));
    let fb = lab.write("b.sum", format!("# new\n26150 {} 30\n", sd(26_150.0, 0.08)));
    let m = lab
        .ok(&["compare", "--summary", &fa, &fb, "--format", "json"])
        .json();
    let d = &m["analysis"]["comparisons"][0];
    let (p1, p2) = (
        c["p_welch"].as_f64().unwrap(),
        d["p_welch"].as_f64().unwrap(),
    );
    assert!((p1 / p2 - 1.0).abs() < 1e-6, "{p1} vs {p2}");
    let e = lab.fails(&["compare", "--summary", &fa, &a], 2);
    assert!(e.stderr.contains("--summary expects 'mean sd n'"), "{e}");
}

// `--by pattern,op`: one family per combination of the two parameters (seed 001's six
// workloads x three implementations: 3 pairs x 2 tests each, m=36), the same with `--by`
// repeated; each family's size in the table header and the JSON.
abtest!(by_two_parameters_makes_one_family_per_combination, |lab| {
    common::planted::import(&lab);
    let j = lab
        .ok(&[&common::planted::COMPARE[..], &["--format", "json"]].concat())
        .json();
    common::assert_schema(&j);
    let a = &j["analysis"];
    assert_eq!(a["m"], 36, "{a}");
    assert_eq!(a["by"], "pattern,op");
    let fams = a["families"].as_array().unwrap();
    assert_eq!(fams.len(), 6, "{a}");
    for f in fams {
        assert_eq!(
            (
                f["variants"].as_u64(),
                f["pairs"].as_u64(),
                f["tests"].as_u64()
            ),
            (Some(3), Some(3), Some(6)),
            "{f}"
        );
    }
    assert_eq!(fams[0]["label"], "seq,read");
    assert_eq!(a["comparisons"].as_array().unwrap().len(), 18);
    let mut repeated = common::planted::COMPARE.to_vec();
    repeated.splice(4..6, ["--by", "pattern", "--by", "op"]);
    lab.ok(&repeated)
        .has("Holm over m=36 tests (6 families pattern,op, each 3 pairs and 6 tests)")
        .has("pattern=seq op=read:");
    let mut twice = common::planted::COMPARE.to_vec();
    twice[5] = "pattern,pattern";
    lab.fails(&twice, 2).err_has("--by pattern: named twice");
    let mut unknown = common::planted::COMPARE.to_vec();
    unknown[5] = "pattern,size";
    lab.ok(&unknown)
        .has("--by size: variant 'a seq read' has no parameter size");
});

// The summary paragraph names exactly the planted differences (common::planted): its
// conclusion lists each decisive kind of result with the families it held in, and nothing else.
abtest!(paragraph_names_exactly_the_planted_differences, |lab| {
    common::planted::import(&lab);
    let out = lab.ok(&common::planted::COMPARE).stdout;
    let conclusion: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != "Conclusion:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(
        conclusion,
        [
            "- 6 of m=36 tests were significant at alpha 0.01 after Holm.",
            "- b was the fastest in 1 of 6 families (pattern=seq op=read).",
            "- b was faster than a in 1 of 6 families (pattern=seq op=read; by 10.37%).",
            "- c was slower than b in 2 of 6 families (pattern=seq op=read; pattern=hot op=read).",
            "- c had more run-to-run variation than a in 1 of 6 families (pattern=random op=write; by 5.58x).",
            "- c had more run-to-run variation than b in 1 of 6 families (pattern=random op=write; by 4.58x).",
            "- c was slower than a in 1 of 6 families (pattern=hot op=read; by 2.50x).",
            "- No significant results: pattern=seq op=write; pattern=random op=read; pattern=hot op=write.",
        ],
        "{out}"
    );
    // The families' own paragraphs: the planted mean shift where it was planted, the planted
    // variance where it was planted, and "not enough precision" for the pairs left.
    let para = |head: &str| {
        out.lines()
            .skip_while(|l| *l != head)
            .nth(1)
            .unwrap_or_else(|| panic!("no {head} in {out}"))
            .to_string()
    };
    let seq = para("pattern=seq op=read:");
    assert!(
        seq.starts_with("b was the fastest: b is 10.37% faster than a (99% CI "),
        "{seq}"
    );
    assert!(
        seq.contains("The run-to-run variations were not statistically different."),
        "{seq}"
    );
    assert!(
        seq.contains(
            "Not statistically different, for lack of precision: c and a (+0.20%, 99% CI "
        ),
        "{seq}"
    );
    let rw = para("pattern=random op=write:");
    assert!(rw.starts_with("There were no statistically significant differences in the mean. c had 5.58x more run-to-run variation than a (CV "), "{rw}");
    assert!(
        rw.contains("Brown-Forsythe p=") && rw.contains("Holm m=36"),
        "{rw}"
    );
    // The text leads with the verdict lines and the summary; the details are behind --details.
    assert!(
        out.lines()
            .next()
            .unwrap()
            .starts_with("wall_ns: b seq read is 10.37% faster"),
        "{out}"
    );
    assert!(!out.contains("primary: Welch"), "{out}");
    let details = lab
        .ok(&[&common::planted::COMPARE[..], &["--details"]].concat())
        .stdout;
    assert!(
        details.contains("primary: Welch") && details.contains("Conclusion:"),
        "{details}"
    );
});

// Every number in the summary paragraph (mail format) is one of the JSON report's numbers, as
// the paragraph rounds it (percent changes, factors, p-values, CIs, CVs, m, runs needed): the
// paragraph says nothing the analysis did not compute.
abtest!(every_number_in_the_paragraph_is_in_the_json, |lab| {
    common::planted::import(&lab);
    let mail = lab
        .ok(&[&common::planted::COMPARE[..], &["--format", "mail"]].concat())
        .stdout;
    let para: String = mail
        .lines()
        .take_while(|l| !l.starts_with("wall_ns"))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(para.contains("Conclusion:"), "{mail}");
    let j = lab
        .ok(&[&common::planted::COMPARE[..], &["--format", "json"]].concat())
        .json();
    let mut numbers = Vec::new();
    collect_numbers(&j["analysis"], &mut numbers);
    let words: Vec<String> = numbers_in(&para);
    assert!(words.len() > 100, "{words:?}");
    for w in &words {
        // "p<0.0001": some p-value of the JSON is below it.
        if let Some(bound) = w.strip_prefix('<') {
            let b: f64 = bound.parse().unwrap();
            assert!(numbers.iter().any(|&v| v > 0.0 && v < b), "{w}");
            continue;
        }
        let decimals = w.split('.').nth(1).map_or(0, str::len);
        let x: f64 = w.parse().unwrap();
        let found = numbers.iter().any(|&v| {
            [
                v,
                v.abs(),
                1.0 / v,
                (v - 1.0).abs() * 100.0,
                v * 100.0,
                v.abs() * 100.0,
            ]
            .iter()
            .any(|t| {
                t.is_finite()
                    && (format!("{t:.decimals$}").parse::<f64>().unwrap() - x).abs() < 1e-9
            })
        });
        assert!(
            found,
            "{w} in the paragraph is no number of the JSON report:\n{para}"
        );
    }
});

/// Every number in `v`.
fn collect_numbers(v: &serde_json::Value, out: &mut Vec<f64>) {
    match v {
        serde_json::Value::Number(n) => out.extend(n.as_f64()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_numbers(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| collect_numbers(x, out)),
        _ => {}
    }
}

/// The numbers written in `text` ("10.37%", "5.58x", "p=0.00019", "m=36", "1.30..2.07"); the
/// alpha, 95%/90% interval levels and the 72-column wrap are no results.
fn numbers_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let dot_in_number =
            c == '.' && !cur.is_empty() && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit());
        if c.is_ascii_digit() || dot_in_number {
            if cur.is_empty() && i > 0 && chars[i - 1] == '<' {
                cur.push('<');
            }
            cur.push(c);
        } else if !cur.is_empty() {
            let level = (cur == "95" || cur == "90")
                && c == '%'
                && chars.get(i + 1) == Some(&' ')
                && chars.get(i + 2..i + 4) == Some(&['C', 'I'][..]);
            if !level {
                out.push(std::mem::take(&mut cur));
            }
            cur.clear();
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

// Two variants that gave the same value in every run: the detail block says NO DIFFERENCE once
// ("NO DIFFERENCE: No difference: ..." before).
abtest!(the_same_value_in_every_run_is_said_once, |lab| {
    let a = lab.write("a.txt", "5\n5\n5\n5\n5\n");
    let b = lab.write("b.txt", "5\n5\n5\n5\n5\n");
    lab.ok(&["compare", &a, &b, "--details"])
        .has("  NO DIFFERENCE: ")
        .has("gave the same value (5) in every run")
        .lacks("NO DIFFERENCE: No difference");
});

/// Runs per variant of [`ordered_runs_compare_within_two_gib`].
const ORDERED_RUNS: usize = 200_000;

/// Two variants of `n` runs each, alternating in run order (`seq`), with a slow drift and B 1%
/// slower: the CSV `abperf import --format csv` reads.
fn ordered_csv(n: usize) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(46);
    let mut csv = String::from("variant,seq,wall_ns [ns]\n");
    for i in 0..2 * n {
        let (v, shift) = if i % 2 == 0 { ("A", 0.0) } else { ("B", 1e4) };
        let drift = 2e4 * i as f64 / (2 * n) as f64;
        let noise = 2e4 * norm_ppf(rng.random_range(1e-12..1.0 - 1e-12));
        csv += &format!("{v},{i},{:.1}\n", 1e6 + shift + drift + noise);
    }
    csv
}

/// Issue 46: `compare` of an experiment with a run order kept every pairwise slope of the drift
/// check (10,000 runs per variant: 2 GB; 50,000: killed). 2 x 200,000 ordered runs now compare
/// under a 2 GiB address-space limit, with the verdict and the drift line of 2 x 5,000.
#[test]
fn ordered_runs_compare_within_two_gib() {
    use std::os::unix::process::CommandExt;
    let lab = Lab::new();
    let small = ordered_csv(5_000);
    lab.ok(&["import", "--format", "csv", &lab.write("small.csv", &small)]);
    let big = ordered_csv(ORDERED_RUNS);
    lab.ok(&["import", "--format", "csv", &lab.write("big.csv", &big)]);
    let compare = |id: &str| {
        let mut c = lab.cmd(&["compare", id]);
        // SAFETY: between fork and exec: setrlimit only, on a value on the stack.
        unsafe {
            c.pre_exec(|| {
                let two_gib = 2 << 30;
                let lim = libc::rlimit {
                    rlim_cur: two_gib,
                    rlim_max: two_gib,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let o = common::run_within(c, std::time::Duration::from_secs(600), "compare");
        assert_eq!(o.code, Some(0), "{o}");
        o.stdout
    };
    let (small, big) = (compare("1"), compare("2"));
    let shape = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.contains("slower") || l.contains("faster") || l.contains("drift"))
            .map(|l| {
                l.split_whitespace()
                    .filter(|w| !w.chars().any(|c| c.is_ascii_digit()))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    };
    assert!(small.contains("drift"), "{small}");
    assert!(!shape(&small).is_empty(), "{small}");
    assert_eq!(shape(&big), shape(&small), "{big}\n---\n{small}");
}

/// Every interval level written in `text` ("99% CI", "95% BCa", "98% CI", "99% Fieller CI",
/// "95% confidence", "95% prediction"), each with the text before it back to the previous level
/// word or the start of its clause (clauses end at ';', '|', a tag or a blank line), and the
/// sentence it is in up to it.
fn level_words(text: &str) -> Vec<(f64, String, String, String)> {
    let flat = text
        .replace("\\n", " ")
        .replace("&#39;", "'")
        .replace("&quot;", "'")
        .replace("&amp;", "&")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let chars: Vec<char> = flat.chars().collect();
    let mut out = Vec::new();
    let (mut clause, mut sentence) = (0usize, 0usize);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if matches!(c, ';' | '|' | '<' | '>' | '"') {
            clause = i + 1;
        }
        if c == '.' && chars.get(i + 1) == Some(&' ') && i > 0 && chars[i - 1] == ')' {
            (clause, sentence) = (i + 1, i + 1);
        }
        if c.is_ascii_digit() && (i == 0 || !chars[i - 1].is_ascii_digit() && chars[i - 1] != '.') {
            let mut j = i;
            while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
                j += 1;
            }
            let after: String = chars[j..(j + 16).min(chars.len())].iter().collect();
            let word = [
                "% CI",
                "% BCa",
                "% Fieller CI",
                "% confidence",
                "% prediction",
            ]
            .iter()
            .any(|w| after.starts_with(w));
            if word {
                let level: f64 = chars[i..j].iter().collect::<String>().parse().unwrap();
                let before: String = chars[clause..i].iter().collect();
                let sent: String = chars[sentence..i].iter().collect();
                out.push((level, before, sent, after));
                clause = j;
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// The level each interval is computed at, as the JSON document says: the verdict's (1 - alpha),
/// the equivalence test's (1 - 2 alpha), and the robust checks' (bootstrap, Hodges-Lehmann).
fn levels_of(j: &serde_json::Value) -> (f64, f64, f64) {
    let c = &j["analysis"]["comparisons"][0];
    let pct = |v: &serde_json::Value| (v.as_f64().unwrap() * 1e4).round() / 1e2;
    (
        pct(&c["evidence"]["ci95_level"]),
        pct(&c["evidence"]["ci90_level"]),
        pct(&c["hodges_lehmann_ci_level"]),
    )
}

/// Fails on a level word in `text` that is not the level of the interval it labels.
fn assert_levels_are_the_intervals(text: &str, levels: (f64, f64, f64), what: &str) {
    let (primary, equivalence, robust) = levels;
    let words = level_words(text);
    assert!(!words.is_empty(), "{what}: no level words in\n{text}");
    for (level, before, sentence, after) in words {
        let robust_here = after.starts_with("% BCa")
            || [
                "Hodges-Lehmann",
                "bootstrap",
                "SD ratio",
                "run-to-run SD",
                "BCa",
            ]
            .iter()
            .any(|w| before.contains(w));
        let want = if robust_here {
            robust
        } else if sentence.contains("Equivalent within the margin") {
            equivalence
        } else {
            primary
        };
        let tail: String = sentence
            .chars()
            .rev()
            .take(160)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        assert_eq!(
            level, want,
            "{what}: \"{level}{after}\" after \"{tail}\" labels a {want}% interval"
        );
    }
}

// Every interval printed beside a verdict (lines, table headings, method lines, the details of
// each test, the paragraph) is labelled with the level it was computed at, in every format, at
// alpha 0.05 and 0.01: the verdict's at 1 - alpha, the equivalence interval at 1 - 2 alpha, the
// robust checks' at their own 95%.
abtest!(every_interval_is_labelled_with_its_own_level, |lab| {
    common::planted::import(&lab);
    let db = lab.path("drift.db");
    let mut store = Store::open(&db).unwrap();
    // A drift of 0.05% per run (the ANCOVA with run index is primary with any run order).
    let drifting = make_drifting_experiment(&mut store, "6.18.0", 11, 5e-4).to_string();
    drop(store);
    let db = lab.p("drift.db");
    for alpha in ["0.05", "0.01"] {
        let planted: Vec<&str> = common::planted::COMPARE
            .iter()
            .map(|a| if *a == "0.01" { alpha } else { a })
            .collect();
        let drift: Vec<&str> = vec![
            "compare",
            &drifting,
            "--db",
            &db,
            "--pairs",
            "all",
            "--test",
            "mean,variability",
            "--margin",
            "5",
            "--resamples",
            "1000",
            "--alpha",
            alpha,
        ];
        for (name, args) in [("planted", &planted), ("drift", &drift)] {
            let json = lab.ok(&[&args[..], &["--format", "json"]].concat());
            let j = json.json();
            let levels = levels_of(&j);
            let a: f64 = alpha.parse().unwrap();
            assert_eq!(levels.0, 100.0 - 100.0 * a, "{name}");
            assert_eq!(levels.1, 100.0 - 200.0 * a, "{name}");
            assert_levels_are_the_intervals(&json.stdout, levels, &format!("{name} json {alpha}"));
            for f in ["text", "mail", "md", "html"] {
                let out = lab.ok(&[&args[..], &["--format", f]].concat()).stdout;
                assert_levels_are_the_intervals(&out, levels, &format!("{name} {f} {alpha}"));
            }
            let details = lab.ok(&[&args[..], &["--details"]].concat()).stdout;
            assert_levels_are_the_intervals(&details, levels, &format!("{name} details {alpha}"));
            if name == "drift" {
                assert!(
                    details.contains("primary: ANCOVA with run index (the run order is known)")
                        && details.contains("Welch (not adjusted for the run order):"),
                    "{details}"
                );
            }
        }
    }
});
