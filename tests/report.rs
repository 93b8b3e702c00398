//! `abperf report` through the real binary on imported data, each test with its own store.

mod common;
use common::{Lab, data};

/// Seed 000 (`/usr/bin/time` lines of n and y) imported as the lab's only experiment.
fn seed000(lab: &Lab) {
    lab.seed000("invpcid");
}

/// The JSON report of seed 000's user time.
fn user_json(lab: &Lab) -> serde_json::Value {
    seed000(lab);
    lab.ok(&[
        "report", "latest", "--format", "json", "--metric", "user_ns",
    ])
    .json()
}

abtest!(seed_000_json_is_an_abperf_report_v2, |lab| {
    let v = user_json(&lab);
    assert_eq!(v["schema"], "abperf-report");
    assert_eq!(v["version"], 2);
});

abtest!(seed_000_json_describes_each_variant_and_run, |lab| {
    let v = user_json(&lab);
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
});

abtest!(seed_000_json_verdict_is_welch_holm_faster, |lab| {
    let v = user_json(&lab);
    let c = &v["analysis"]["comparisons"][0];
    assert_eq!(c["verdict"], "faster", "{c}");
    let line = c["line"].as_str().unwrap();
    assert!(
        line.starts_with("y is 0.58% faster than n (95% CI "),
        "{line}"
    );
    assert!(line.ends_with("p<0.0001, n=12+12, Welch)"), "{line}");
    assert!(
        v["analysis"]["tests_text"]
            .as_str()
            .unwrap()
            .starts_with("Welch t-test"),
        "{}",
        v["analysis"]
    );
    assert_eq!(v["analysis"]["correction"], "Holm");
});

abtest!(seed_000_text_has_the_verdict_and_summaries, |lab| {
    seed000(&lab);
    lab.ok(&["report", "latest", "--metric", "user_ns"])
        .has("  user_ns: y is 0.58% faster than n")
        .has(" Performance summary for 'n' (12 runs):")
        .has("880.438 s    user_ns")
        .has("875.347 s    user_ns");
});

abtest!(seed_000_markdown_row, |lab| {
    seed000(&lab);
    lab.ok(&["report", "latest", "--format", "md", "--metric", "user_ns"])
        .has("| user\\_ns (s) | 880.438 ± 0.02% | 875.347 ± 0.01% | -0.58% |");
});

abtest!(seed_000_markdown_is_md, |lab| {
    seed000(&lab);
    let md = lab.ok(&["report", "latest", "--format", "md"]).stdout;
    let markdown = lab.ok(&["report", "latest", "--format", "markdown"]).stdout;
    assert_eq!(markdown, md);
});

abtest!(seed_000_every_metric_constant_and_zero_ones_apart, |lab| {
    seed000(&lab);
    let all = lab
        .ok(&["report", "latest", "--format", "json", "--metric", "all"])
        .json();
    assert_eq!(all["analysis"]["metrics"].as_array().unwrap().len(), 10);
    // inblock and nswap are 0 in every run: no ratio, said in the notes instead of a verdict.
    assert_eq!(all["analysis"]["comparisons"].as_array().unwrap().len(), 8);
    let notes = all["analysis"]["skipped"].to_string();
    assert!(
        notes.contains("inblock") && notes.contains("nswap"),
        "{notes}"
    );
    // majflt and oublock are constant: a verdict without a test, outside the correction.
    assert_eq!(all["analysis"]["m"], 6, "{}", all["analysis"]);
});

abtest!(seed_000_csv_has_a_user_row_per_run, |lab| {
    seed000(&lab);
    let csv = lab.ok(&["report", "latest", "--format", "csv"]).stdout;
    assert_eq!(
        csv.lines()
            .filter(|l| l.starts_with("run,") && l.contains(",user_ns,value,"))
            .count(),
        24
    );
});

abtest!(seed_000_hyperfine_json_goes_back_in, |lab| {
    seed000(&lab);
    let hf = lab.p("hf.json");
    lab.ok(&[
        "report",
        "1",
        "--format",
        "hyperfine-json",
        "--metric",
        "user_ns",
        "-o",
        &hf,
    ]);
    lab.ok(&["import", "--format", "hyperfine", &hf])
        .has("imported 24 run(s) (n: 12, y: 12)");
});

#[test]
fn mail_lines_fit_72_columns() {
    let lab = Lab::new();
    lab.seed000("invpcid");
    let long = "a-very-long-variant-name-that-would-never-fit-into-a-mail-table-column";
    lab.import_variant("1", long, "time", &data("time-default.txt"));
    for metrics in [
        &["--metric", "user_ns"][..],
        &[
            "--metric", "user_ns", "--metric", "minflt", "--metric", "wall_ns",
        ][..],
        &["--metric", "all"][..],
    ] {
        let mut args = vec!["report", "1", "--format", "mail"];
        args.extend_from_slice(metrics);
        let mail = lab.ok(&args).stdout;
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
    let lab = Lab::new();
    lab.seed000("invpcid");
    let cases: [(&[&str], &str); 4] = [
        (
            &["report", "1", "--metric", "cycles"],
            "--metric cycles: no such metric in experiment 1; metrics: wall_ns (wall), user_ns (user)",
        ),
        (
            &["report", "1", "--baseline", "z"],
            "--baseline \"z\": no such variant (variants: n, y)",
        ),
        (
            &["report", "1", "--alpha", "1.5"],
            "--alpha 1.5: expected a level between 0 and 0.5",
        ),
        (
            &["report", "x"],
            "experiment id 'x': expected a number or 'latest'",
        ),
    ];
    for (args, want) in cases {
        let out = lab.fails(args, 2);
        assert!(out.stderr.contains(want), "{out}");
    }
    let out = lab.fails(&["report", "9"], 2);
    assert!(out.stderr.contains("no experiment 9"), "{out}");
}

#[test]
fn trace_capture_tables_in_reports() {
    let lab = Lab::new();
    lab.ok(&[
        "trace", "record", "-q", "--name", "ls <x>", "--", "ls", "/usr",
    ]);
    let text = lab.ok(&["report", "latest"]).stdout;
    assert!(text.contains("Trace tables:"), "{text}");
    assert!(text.contains("tlb:tlb_flush"), "{text}");
    let json = lab.ok(&["report", "latest", "--format", "json"]).stdout;
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["trace"].is_object(), "{}", v["trace"]);
    let html = lab.ok(&["report", "latest", "--format", "html"]).stdout;
    assert!(html.contains("<h2>Trace tables</h2><pre class=\"trace\">"));
    assert!(html.contains("ls &lt;x&gt;") && !html.contains("ls <x>"));
    let mail = lab.ok(&["report", "latest", "--format", "mail"]).stdout;
    assert!(mail.lines().all(|l| l.chars().count() <= 72), "{mail}");
    assert!(
        mail.contains("Trace tables (wider than a mail line)"),
        "{mail}"
    );
}
