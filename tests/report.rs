//! `abperf report` through the real binary on imported data, each test with its own store.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn abperf(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_abperf"))
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .expect("run abperf")
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn seed_store(dir: &Path) -> PathBuf {
    let db = dir.join("r.db");
    ok(abperf(
        &db,
        &[
            "import",
            "--format",
            "time",
            "--new",
            "invpcid",
            &data("seed000-time.txt"),
        ],
    ));
    db
}

#[test]
fn seed_000_summary_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let db = seed_store(dir.path());

    let json = ok(abperf(
        &db,
        &[
            "report", "latest", "--format", "json", "--metric", "user_ns",
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["schema"], "abperf-report");
    assert_eq!(v["version"], 1);
    let mean = |variant: &str| {
        v["describe"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["variant"] == variant && d["metric"] == "user_ns")
            .map(|d| {
                (
                    d["n"].as_u64().unwrap(),
                    format!("{:.2}", d["mean"].as_f64().unwrap() / 1e9),
                )
            })
            .unwrap()
    };
    assert_eq!(mean("n"), (12, "880.44".to_string()));
    assert_eq!(mean("y"), (12, "875.35".to_string()));
    assert_eq!(v["runs"].as_array().unwrap().len(), 24);
    assert_eq!(v["runs"][5]["source"]["line"], 6);

    let c = &v["comparisons"][0];
    assert_eq!(c["verdict"], "faster", "{c}");
    let line = c["line"].as_str().unwrap();
    assert!(
        line.starts_with("y is 0.58% faster than n (95% CI "),
        "{line}"
    );
    assert!(line.ends_with("p<0.0001, n=12+12, Welch)"), "{line}");
    assert_eq!(v["tests"], "Welch t, Fieller 95% CI, Holm m=1");

    let text = ok(abperf(&db, &["report", "latest", "--metric", "user_ns"]));
    assert!(
        text.contains("  user_ns: y is 0.58% faster than n"),
        "{text}"
    );
    assert!(
        text.contains(" Performance summary for 'n' (12 runs):"),
        "{text}"
    );
    assert!(text.contains("880.438 s    user_ns"), "{text}");
    assert!(text.contains("875.347 s    user_ns"), "{text}");

    let md = ok(abperf(
        &db,
        &["report", "latest", "--format", "md", "--metric", "user_ns"],
    ));
    assert!(
        md.contains("| user\\_ns (s) | 880.438 ± 0.02% | 875.347 ± 0.01% | -0.58% |"),
        "{md}"
    );

    let all = ok(abperf(
        &db,
        &["report", "latest", "--format", "json", "--metric", "all"],
    ));
    let all: serde_json::Value = serde_json::from_str(&all).unwrap();
    assert_eq!(all["options"]["metrics"].as_array().unwrap().len(), 10);
    // inblock and nswap are 0 in every run: no ratio, said in the notes instead of a verdict.
    assert_eq!(all["comparisons"].as_array().unwrap().len(), 8);
    let notes = all["verdict_notes"].to_string();
    assert!(
        notes.contains("inblock") && notes.contains("nswap"),
        "{notes}"
    );
    // majflt and oublock are constant: a verdict without a test, outside the correction.
    assert!(
        all["tests"].as_str().unwrap().ends_with("Holm m=6"),
        "{}",
        all["tests"]
    );

    let csv = ok(abperf(&db, &["report", "latest", "--format", "csv"]));
    assert_eq!(
        csv.lines()
            .filter(|l| l.starts_with("run,") && l.contains(",user_ns,value,"))
            .count(),
        24
    );

    // hyperfine-json goes back in through the hyperfine importer.
    let hf = dir.path().join("hf.json");
    ok(abperf(
        &db,
        &[
            "report",
            "1",
            "--format",
            "hyperfine-json",
            "--metric",
            "user_ns",
            "-o",
            hf.to_str().unwrap(),
        ],
    ));
    let back = ok(abperf(
        &db,
        &["import", "--format", "hyperfine", hf.to_str().unwrap()],
    ));
    assert!(back.contains("imported 24 run(s) (n: 12, y: 12)"), "{back}");
}

#[test]
fn mail_lines_fit_72_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = seed_store(dir.path());
    let long = "a-very-long-variant-name-that-would-never-fit-into-a-mail-table-column";
    ok(abperf(
        &db,
        &[
            "import",
            "--experiment",
            "1",
            "--format",
            "time",
            "--variant",
            long,
            &data("time-default.txt"),
        ],
    ));
    for metrics in [
        &["--metric", "user_ns"][..],
        &[
            "--metric", "user_ns", "--metric", "minflt", "--metric", "wall_ns",
        ][..],
        &["--metric", "all"][..],
    ] {
        let mut args = vec!["report", "1", "--format", "mail"];
        args.extend_from_slice(metrics);
        let mail = ok(abperf(&db, &args));
        for line in mail.lines() {
            assert!(
                line.chars().count() <= 72,
                "{} columns: {line:?}\n{mail}",
                line.chars().count()
            );
        }
        assert!(mail.lines().any(|l| l.starts_with("Method: ")), "{mail}");
        assert!(mail.contains("880.438"), "{mail}");
        if metrics == ["--metric", "user_ns"] {
            // One metric: the verdict line comes first, as it is, ready to paste.
            assert!(mail.starts_with("y is 0.58% faster than n"), "{mail}");
        } else {
            let want = "user_ns: y is 0.58% faster than n";
            assert!(mail.lines().any(|l| l.starts_with(want)), "{mail}");
        }
    }
}

#[test]
fn bad_options_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = seed_store(dir.path());
    let cases: [(&[&str], &str); 4] = [
        (
            &["report", "1", "--metric", "cycles"],
            "--metric \"cycles\": experiment 1 has no such metric (metrics: wall_ns, user_ns",
        ),
        (
            &["report", "1", "--baseline", "z"],
            "--baseline \"z\": no such variant in experiment 1 (variants: n, y)",
        ),
        (
            &["report", "1", "--alpha", "1.5"],
            "--alpha 1.5: expected a number between 0 and 1",
        ),
        (
            &["report", "x"],
            "experiment id 'x': expected a number or 'latest'",
        ),
    ];
    for (args, want) in cases {
        let out = abperf(&db, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let out = abperf(&db, &["report", "9"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no experiment 9"));
}

#[test]
fn trace_capture_tables_in_reports() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let rec = Command::new(env!("CARGO_BIN_EXE_abperf"))
        .args(["trace", "record", "-q", "--name", "ls <x>", "--db"])
        .arg(&db)
        .args(["--", "ls", "/usr"])
        .output()
        .unwrap();
    ok(rec);
    let text = ok(abperf(&db, &["report", "latest"]));
    assert!(text.contains("Trace tables:"), "{text}");
    assert!(text.contains("tlb:tlb_flush"), "{text}");
    let json = ok(abperf(&db, &["report", "latest", "--format", "json"]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["trace"].is_object(), "{}", v["trace"]);
    let html = ok(abperf(&db, &["report", "latest", "--format", "html"]));
    assert!(html.contains("<h2>Trace tables</h2><pre class=\"trace\">"));
    assert!(html.contains("ls &lt;x&gt;") && !html.contains("ls <x>"));
    let mail = ok(abperf(&db, &["report", "latest", "--format", "mail"]));
    assert!(mail.lines().all(|l| l.chars().count() <= 72), "{mail}");
    assert!(
        mail.contains("Trace tables (wider than a mail line)"),
        "{mail}"
    );
}
