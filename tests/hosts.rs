//! Hosts as blocks through the real binary: a CSV of 2 variants on 4 hosts x 4 boots x 5 runs
//! (tools/hosts_reference.py wrote tests/data/hosts/, with statsmodels' figures), imported with
//! `abperf import --format csv`; the verdict from the per-host effects combined by random
//! effects, equal to statsmodels, the per-host table in each format, `compare --by host` (each
//! machine alone) and `plan --from` over hosts x boots x runs.

mod common;
use common::{Lab, assert_schema, data};

fn reference() -> serde_json::Value {
    let text = std::fs::read_to_string(data("hosts/meta_reference.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn close(got: &serde_json::Value, want: &serde_json::Value, what: &str) {
    let (g, w) = (got.as_f64().unwrap(), want.as_f64().unwrap());
    assert!(
        (g - w).abs() <= 1e-8 * w.abs() || (g - w).abs() < 1e-14,
        "{what}: abperf {g}, statsmodels {w}"
    );
}

fn imported() -> Lab {
    let lab = Lab::new();
    lab.ok(&["import", "--format", "csv", &data("hosts/hosts.csv")]);
    lab
}

#[test]
fn the_verdict_comes_from_per_host_effects_equal_to_statsmodels() {
    let lab = imported();
    let doc = lab.ok(&["compare", "1", "--format", "json"]).json();
    assert_schema(&doc);
    let c = &doc["analysis"]["comparisons"][0];
    assert_eq!(c["primary"], "hosts");
    let h = &c["details"]["hosts"];
    let want = &reference()["csv"];
    for (i, host) in want["hosts"].as_array().unwrap().iter().enumerate() {
        let got = h["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["host"] == host["host"])
            .unwrap_or_else(|| panic!("host {i} missing: {h}"));
        close(&got["log_ratio"], &host["y"], "log ratio");
        close(&got["df"], &host["df"], "df");
    }
    let (re, sm) = (&h["combined"], &want["combined"]);
    for key in ["tau2", "mean", "se", "se_hksj", "p", "q", "q_p", "i2"] {
        close(&re[key], &sm[key], key);
    }
    for i in 0..2 {
        close(&re["ci"][i], &sm["ci"][i], "ci");
        close(&re["prediction"][i], &sm["prediction"][i], "prediction");
    }
    close(&re["welch"]["p"], &sm["welch_p"], "Welch p");
    // -3% on the zen4 hosts, nothing on the skylake ones: the mean effect is not called, the
    // difference between machines is.
    let line = c["line"].as_str().unwrap();
    assert!(
        line.starts_with("Inconclusive: patched vs base -1.48% (95% CI "),
        "{line}"
    );
    assert!(
        line.contains("n=4 hosts, random effects over hosts, HKSJ)"),
        "{line}"
    );
    assert!(
        line.contains("; the effect differs between hosts (Welch's test of equal effects p<0.0001"),
        "{line}"
    );
    assert!(
        line.ends_with(
            "+0.54% on skylake-b, +0.21% on skylake-a, -3.26% on zen4-b, -3.39% on zen4-a"
        ),
        "{line}"
    );
}

#[test]
fn the_per_host_table_is_in_text_markdown_and_mail() {
    let lab = imported();
    let text = lab.ok(&["compare", "1"]).stdout;
    assert!(
        text.contains(
            "Hosts as blocks, patched vs base, wall_ns: each host's change from its boots:"
        ),
        "{text}"
    );
    assert!(
        text.contains("random effects over 4 hosts: -1.48% (95% CI"),
        "{text}"
    );
    assert!(
        text.contains("95% prediction interval for a new host"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("zen4-a"))
        .unwrap();
    assert!(
        row.contains("4+4") && row.contains("20+20") && row.contains("-3.39%"),
        "{row}"
    );
    let md = lab.ok(&["report", "1", "--format", "md"]).stdout;
    assert!(md.contains("#### Hosts as blocks: patched vs base"), "{md}");
    assert!(md.contains("| zen4-a | 4+4 | 20+20 | -3.39% |"), "{md}");
    let mail = lab.ok(&["report", "1", "--format", "mail"]).stdout;
    assert!(mail.contains("random effects over 4 hosts"), "{mail}");
    assert!(mail.lines().all(|l| l.chars().count() <= 72), "{mail}");
}

#[test]
fn by_host_shows_each_machine_alone() {
    let lab = imported();
    let doc = lab
        .ok(&["compare", "1", "--by", "host", "--format", "json"])
        .json();
    assert_schema(&doc);
    let a = &doc["analysis"];
    let families: Vec<&str> = a["families"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["label"].as_str().unwrap())
        .collect();
    assert_eq!(families, ["zen4-a", "zen4-b", "skylake-a", "skylake-b"]);
    assert_eq!(a["m"], 4);
    let c = &a["comparisons"][0];
    assert_eq!(c["family"], "zen4-a");
    assert_eq!(c["variant"], "patched host=zen4-a");
    let line = c["line"].as_str().unwrap();
    assert!(
        line.contains("n=4+4 boots") && line.contains("Holm m=4"),
        "{line}"
    );
    // The summary paragraph counts what the verdicts count: boots.
    assert_eq!(a["unit"], "boot");
    let text = lab.ok(&["compare", "1", "--by", "host"]).stdout;
    assert!(
        text.contains("boots per variant would resolve") && !text.contains("runs per variant"),
        "{text}"
    );
    // A named baseline is the baseline on every machine.
    let doc = lab
        .ok(&[
            "compare",
            "1",
            "--by",
            "host",
            "--baseline",
            "patched",
            "--format",
            "json",
        ])
        .json();
    let c = &doc["analysis"]["comparisons"][3];
    assert_eq!(c["baseline"], "patched host=skylake-b");
    assert_eq!(c["variant"], "base host=skylake-b");
    let text = lab.ok(&["compare", "1", "--by", "host"]).stdout;
    assert!(text.contains("host=zen4-a:\n"), "{text}");
    // Runs that name no machine: the flag says so.
    let f = lab.write("plain.csv", "variant,wall_ns [ns]\na,1\na,2\nb,3\nb,4\n");
    lab.ok(&["import", "--format", "csv", &f]);
    lab.fails(&["compare", "2", "--by", "host"], 2)
        .err_has("--by host: no run names its host");
    assert!(text.contains("on boot means"), "{text}");
}

#[test]
fn plan_advises_hosts_boots_and_runs_with_tau2() {
    let lab = imported();
    let plan = lab.ok(&["plan", "--from", "1", "--effect", "1"]).stdout;
    assert!(
        plan.contains("From experiment 1's replication levels (host > boot > run)"),
        "{plan}"
    );
    assert!(
        plan.contains("host(s) (each running every variant) [power, hosts as blocks"),
        "{plan}"
    );
    assert!(
        plan.contains("hosts as blocks: SD of a host's effect"),
        "{plan}"
    );
    assert!(plan.contains("4 boot(s) per host [as measured"), "{plan}");
}

#[test]
fn an_effect_every_host_shares_is_called() {
    // 3 hosts of different speeds, b 2% faster on each: FASTER, no heterogeneity said.
    let mut csv = String::from("variant,host,boot,wall_ns [ns]\n");
    for (h, speed) in [("h1", 1000.0), ("h2", 1300.0), ("h3", 1700.0)] {
        for (v, f) in [("a", 1.0), ("b", 0.98)] {
            for boot in 0..4 {
                for run in 0..3 {
                    let wobble = 1.0 + 0.001 * (((boot * 7 + run * 3) % 5) as f64 - 2.0);
                    csv += &format!("{v},{h},{v}{boot},{}\n", speed * f * wobble);
                }
            }
        }
    }
    let lab = Lab::new();
    let f = lab.write("three.csv", &csv);
    lab.ok(&["import", "--format", "csv", &f]);
    let out = lab.ok(&["compare", "1"]).stdout;
    assert!(out.contains("b is 2.00% faster than a (95% CI"), "{out}");
    assert!(
        out.contains("n=3 hosts, random effects over hosts, HKSJ)"),
        "{out}"
    );
    assert!(!out.contains("differs between hosts"), "{out}");
}

/// One machine's file at a time: a table without a host column (as `export --format csv` of a
/// plain `abperf run` writes it) per host, and a hyperfine file, each labelled with `--host` and
/// added to one experiment; the machines are then its top level, as with a host column.
#[test]
fn import_host_labels_each_machines_file() {
    let lab = Lab::new();
    for (i, (h, speed)) in [("zen4", 1000.0), ("skylake", 1400.0), ("arm", 2100.0)]
        .into_iter()
        .enumerate()
    {
        let mut csv = String::from("variant,wall_ns [ns]\n");
        for (v, f) in [("a", 1.0), ("b", 0.97)] {
            for run in 0..6 {
                csv += &format!("{v},{}\n", speed * f * (1.0 + 0.002 * (run % 3) as f64));
            }
        }
        let file = lab.write(&format!("{h}.csv"), &csv);
        let into: &[&str] = if i == 0 {
            &["--new", "fleet"]
        } else {
            &["--experiment", "1"]
        };
        lab.ok(&[&["import", "--format", "csv", "--host", h, &file][..], into].concat());
    }
    let out = lab.ok(&["compare", "1"]).stdout;
    assert!(out.contains("b is 3.00% faster than a"), "{out}");
    assert!(out.contains("n=3 hosts"), "{out}");
    let e = lab.fails(&["import", "--format", "csv", "--host", " ", "x.csv"], 2);
    assert!(
        e.stderr
            .contains("--host: expected a name for the runs' host"),
        "{e}"
    );
    // Any format: a hyperfine export labelled as two boots of one machine.
    let hf = common::data("hyperfine-two.json");
    lab.ok(&[
        "import",
        "--format",
        "hyperfine",
        "--new",
        "hf",
        "--boot",
        "b1",
        &hf,
    ]);
    lab.ok(&[
        "import",
        "--format",
        "hyperfine",
        "--experiment",
        "2",
        "--boot",
        "b2",
        &hf,
    ]);
    let doc = lab.ok(&["export", "2", "--format", "json"]).json();
    let boots: Vec<&str> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["replication"]["boot"].as_str().unwrap())
        .collect();
    assert!(boots.contains(&"b1") && boots.contains(&"b2"), "{doc}");
}

/// Issue 45: a machine's runs imported with --host into an experiment whose own runs name no
/// host are not pooled without a word: import warns, compare warns and its note says which runs
/// the verdict used (all of them, as independent runs; hosts are no level here).
#[test]
fn labelled_and_unlabelled_runs_are_named_at_import_and_in_compare() {
    let lab = Lab::new();
    let table = |speed: f64| {
        let mut csv = String::from("variant,wall_ns [ns]\n");
        for (v, f) in [("a", 1.0), ("b", 0.97)] {
            for run in 0..5 {
                csv += &format!("{v},{}\n", speed * f * (1.0 + 0.002 * (run % 3) as f64));
            }
        }
        csv
    };
    let own = lab.write("own.csv", table(1000.0));
    let arm = lab.write("arm.csv", table(2000.0));
    let first = lab.ok(&["import", "--format", "csv", "--new", "mixed", &own]);
    assert!(!first.stderr.contains("warning"), "{first}");
    let i = lab.ok(&[
        "import",
        "--format",
        "csv",
        "--experiment",
        "1",
        "--host",
        "arm-c",
        &arm,
    ]);
    assert!(
        i.stderr.contains(
            "warning: experiment 1 now has 10 counted runs that name a host and 10 that name none"
        ),
        "{i}"
    );
    let c = lab.ok(&["compare", "1"]);
    let note = "MIXED LABELS: 10 counted runs name a host and 10 name none";
    assert!(c.stderr.contains(&format!("warning: {note}")), "{c}");
    assert!(
        c.stdout.contains(note)
            && c.stdout
                .contains("the verdicts take all 20 as independent runs, without hosts as a level")
            && c.stdout.contains("n=10+10"),
        "{c}"
    );
}
