//! Replication levels through the real binary: tables with invocation, boot and host columns
//! imported with `abperf import --format csv|jsonl`, their variance components checked against
//! statsmodels (tools/levels_reference.py wrote tests/data/levels/), verdicts from top-level
//! means, and `export --format csv` imported back to the same numbers.

mod common;
use common::{Lab, assert_schema, data};

fn rel(got: f64, want: f64) -> f64 {
    (got - want).abs() / want.abs()
}

#[test]
fn nested_components_equal_statsmodels_reml() {
    let lab = Lab::new();
    lab.ok(&["import", "--format", "csv", &data("levels/nested.csv")]);
    let doc = lab.ok(&["report", "1", "--format", "json"]).json();
    assert_schema(&doc);
    let want: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data("levels/nested_reml.json")).unwrap())
            .unwrap();
    let sec = &doc["replication"];
    assert_eq!(sec["verdicts_from"], "host");
    let m = &sec["metrics"][0];
    assert_eq!(m["levels"], serde_json::json!(["host", "boot"]));
    let variants = m["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 2);
    for v in variants {
        let name = v["variant"].as_str().unwrap();
        let sm = &want["variants"][name];
        let c = &v["components"];
        assert_eq!(c["method"], "reml", "{name}");
        for (i, key) in ["var_host", "var_boot", "var_run"].iter().enumerate() {
            let got = c["variances"][i].as_f64().unwrap();
            let exp = sm[key].as_f64().unwrap();
            assert!(
                rel(got, exp) < 1e-6,
                "{name} {key}: abperf {got}, statsmodels {exp}"
            );
        }
        let mean = c["mean"].as_f64().unwrap();
        assert!(
            rel(mean, sm["mean"].as_f64().unwrap()) < 1e-9,
            "{name} mean {mean}"
        );
    }
    // Every host ran both variants: the verdict is paired over the 6 hosts (tests/hosts.rs),
    // and the naive interval is narrower.
    let line = doc["analysis"]["comparisons"][0]["line"].as_str().unwrap();
    assert!(
        line.contains("n=6 hosts, random effects over hosts"),
        "{line}"
    );
    assert!(m["comparisons"][0]["width_ratio"].as_f64().unwrap() > 1.5);
    let text = lab.ok(&["report", "1"]).stdout;
    assert!(
        text.contains("Replication levels, wall_ns (host > boot > run"),
        "{text}"
    );
    assert!(
        text.contains("invocation not replicated (one run per invocation)"),
        "{text}"
    );
    let compare = lab.ok(&["compare", "1"]).stdout;
    assert!(compare.contains("n=6 hosts"), "{compare}");
    assert!(compare.contains("ratio of host means"), "{compare}");
    // Kalibera-Jones over the levels: no timestamps, so the lower levels keep the data's
    // repetitions (4 boots per host) and the hosts come from the power of the paired test.
    let plan = lab.ok(&["plan", "--from", "1", "--effect", "2"]).stdout;
    assert!(
        plan.contains("From experiment 1's replication levels (host > boot > run)"),
        "{plan}"
    );
    assert!(plan.contains("4 boot(s) per host [as measured"), "{plan}");
    assert!(
        plan.contains("host(s) (each running every variant) [power, hosts as blocks"),
        "{plan}"
    );
}

#[test]
fn export_csv_imports_back_to_the_same_numbers() {
    let lab = Lab::new();
    lab.ok(&["run", "-r", "5", "true", "sleep 0.001"]);
    let file = lab.p("export.csv");
    lab.ok(&["export", "1", "--format", "csv", "-o", &file]);
    lab.ok(&["import", "--format", "csv", &file]);
    let a = lab.ok(&["report", "1", "--format", "json"]).json();
    let b = lab.ok(&["report", "2", "--format", "json"]).json();
    assert_eq!(a["describe"], b["describe"]);
    assert_eq!(a["runs_stored"], b["runs_stored"]);
    let (ca, cb) = (&a["analysis"]["comparisons"], &b["analysis"]["comparisons"]);
    for key in [
        "line",
        "ratio",
        "ratio_ci",
        "p_welch",
        "mean_baseline",
        "n_variant",
    ] {
        assert_eq!(ca[0][key], cb[0][key], "{key}");
    }
    let runs = |d: &serde_json::Value| -> Vec<(String, bool, i64, serde_json::Value)> {
        d["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["variant_name"].as_str().unwrap().to_string(),
                    r["counted"].as_bool().unwrap(),
                    r["started_ns"].as_i64().unwrap(),
                    r["metrics"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(runs(&a), runs(&b));
    // And the export of the import is the export, but for the experiment id.
    let again = lab.ok(&["export", "2", "--format", "csv"]).stdout;
    let first = std::fs::read_to_string(&file).unwrap();
    let body = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| l.split_once(',').unwrap().1.to_string())
            .collect()
    };
    assert_eq!(body(&again), body(&first));
}

#[test]
fn jsonl_with_boots_and_errors_store_nothing() {
    let lab = Lab::new();
    let mut text = String::new();
    for (v, shift) in [("a", 0.0), ("b", 50.0)] {
        for boot in 0..4 {
            for run in 0..3 {
                let value = 1000.0 + shift + 20.0 * ((boot * 7) % 4) as f64 + run as f64;
                text.push_str(&format!(
                    "{{\"variant\":\"{v}\",\"boot\":\"b{boot}\",\"invocation\":\"b{boot}\",\"cycles [count]\":{value}}}\n"
                ));
            }
        }
    }
    let f = lab.write("boots.jsonl", &text);
    lab.ok(&["import", "--format", "jsonl", &f]);
    let doc = lab.ok(&["report", "1", "--format", "json"]).json();
    assert_eq!(doc["replication"]["verdicts_from"], "boot");
    let line = doc["analysis"]["comparisons"][0]["line"].as_str().unwrap();
    assert!(line.contains("n=4+4 boots"), "{line}");
    let notes = doc["replication"]["metrics"][0]["notes"].to_string();
    assert!(notes.contains("one invocation per boot"), "{notes}");
    // A bad cell: file, line and column named; nothing stored.
    let bad = lab.write("bad.csv", "variant,host,wall_ns [ns]\na,h1,5\na,h2,five\n");
    let o = lab.fails(&["import", "--format", "csv", &bad], 2);
    assert!(
        o.stderr
            .contains("bad.csv:3: column 3 (wall_ns [ns]): \"five\" is not a number"),
        "{o}"
    );
    let list = lab.ok(&["list"]).stdout;
    assert_eq!(list.matches("bad").count(), 0, "{list}");
}
