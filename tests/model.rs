//! One experiment model and one output path, seen from outside: every command that prints an
//! experiment's data prints the same data hash, which anyone can recompute from an export as
//! docs/data-hash.md says; the quartiles of the CSV, the whiskers of the HTML box plot and
//! compare's outlier fences are one definition; every JSON output is an abperf-report.

mod common;
use common::{Lab, assert_schema, data, schema_errors};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The data hash of an export, computed here from the JSON alone, as docs/data-hash.md defines it.
fn hash_of_export(doc: &Value) -> String {
    let names: Vec<&str> = doc["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    let mut h = Sha256::new();
    for r in doc["runs"].as_array().unwrap() {
        h.update(names[r["variant"].as_u64().unwrap() as usize].as_bytes());
        h.update([0]);
        h.update((r["seq"].as_u64().unwrap() as u32).to_le_bytes());
        h.update(r["status"].as_str().unwrap().as_bytes());
        h.update([0]);
        h.update([
            u8::from(r["warmup"].as_bool().unwrap()),
            u8::from(!r["excluded"].is_null()),
        ]);
        let metrics = r["metrics"].as_object().unwrap();
        let mut keys: Vec<&String> = metrics.keys().collect();
        keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        for k in keys {
            h.update(k.as_bytes());
            h.update([0]);
            h.update(metrics[k].as_f64().unwrap().to_bits().to_le_bytes());
        }
        h.update([1]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn one_data_hash_in_compare_report_export_and_every_text() {
    let lab = Lab::new();
    lab.seed000("invpcid");
    let export = lab.ok(&["export", "1", "--format", "json"]).json();
    let report = lab.ok(&["report", "1", "--format", "json"]).json();
    let compare = lab.ok(&["compare", "1", "--format", "json"]).json();
    let h = export["data_sha256"].as_str().unwrap().to_string();
    assert_eq!(report["data_sha256"], h);
    assert_eq!(compare["data_sha256"], h);
    assert_eq!(
        hash_of_export(&export),
        h,
        "docs/data-hash.md recomputes it"
    );
    for (args, what) in [
        (&["report", "1"][..], "report text"),
        (&["report", "1", "--format", "mail"][..], "mail"),
        (&["report", "1", "--format", "md"][..], "markdown"),
        (&["report", "1", "--format", "html"][..], "html"),
        (&["compare", "1"][..], "compare text"),
    ] {
        let out = lab.ok(args).stdout;
        assert!(
            out.contains(&h),
            "{what} does not print the data hash {h}:\n{out}"
        );
    }
    for doc in [&export, &report, &compare] {
        assert_schema(doc);
    }
    // The schema check is not vacuous: a report with a run that lost its variant fails it.
    let mut broken = report.clone();
    broken["runs"][0]["variant"] = serde_json::json!("n");
    assert!(!schema_errors(&broken).is_empty());
    assert!(export["analysis"].is_null(), "export is the raw data");
    assert!(report["analysis"]["comparisons"].is_array());
    // The same experiment shown, the same hash; a changed experiment, another.
    assert_schema(&lab.ok(&["show", "1", "--format", "json"]).json());
    lab.import_variant("1", "n", "time", &data("time-default.txt"));
    let again = lab.ok(&["export", "1", "--format", "json"]).json();
    assert_ne!(again["data_sha256"], h);
    assert_eq!(
        hash_of_export(&again),
        again["data_sha256"].as_str().unwrap()
    );
}

#[test]
fn two_experiments_and_files_are_reports_too() {
    let lab = Lab::new();
    lab.seed000("a");
    lab.seed000("b");
    let two = lab.ok(&["compare", "1", "2", "--format", "json"]).json();
    assert_schema(&two);
    assert_eq!(two["experiments"].as_array().unwrap().len(), 2);
    assert_eq!(two["variants"][0]["name"], "#1:n");
    let a = lab.write("a.txt", "1\n2\n3\n4\n5\n");
    let b = lab.write("b.txt", "2\n3\n4\n5\n6\n");
    let files = lab.ok(&["compare", &a, &b, "--format", "json"]).json();
    assert_schema(&files);
    assert!(files["experiments"].as_array().unwrap().is_empty());
    assert_eq!(files["files"], serde_json::json!([]));
    assert!(files["source"].as_str().unwrap().starts_with("files "));
}

/// hyperfine's export of two commands, `a` with runs 10.0 .. 10.6 s and 11.06 s.
fn outlier_example(lab: &Lab) -> String {
    let a = [10.0, 10.1, 10.2, 10.3, 10.4, 10.5, 10.6, 11.06];
    let b = [10.0, 10.05, 10.1, 10.2, 10.25, 10.3, 10.4, 10.45];
    let result = |cmd: &str, t: &[f64]| serde_json::json!({"command": cmd, "times": t, "exit_codes": vec![0; t.len()]});
    let doc = serde_json::json!({"results": [result("a", &a), result("b", &b)]});
    lab.write("hf.json", doc.to_string())
}

#[test]
fn quartiles_whiskers_and_fences_agree() {
    let lab = Lab::new();
    let f = outlier_example(&lab);
    lab.ok(&["import", "--format", "hyperfine", "--new", "fences", &f]);
    // numpy.percentile(a, [25, 75]) = [10.175, 10.525]: upper fence 10.525 + 1.5 * 0.35 = 11.05.
    let (q1, q3) = (10.175e9, 10.525e9);
    let close = |x: f64, y: f64| (x - y).abs() < 1e-3 * y.abs();

    let compare = lab.ok(&["compare", "1", "--format", "json"]).json();
    let o = &compare["analysis"]["comparisons"][0]["details"]["outliers_baseline"];
    assert!(
        close(o["q1"].as_f64().unwrap(), q1) && close(o["q3"].as_f64().unwrap(), q3),
        "{o}"
    );
    let flagged: Vec<f64> = o["flags"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !f["tukey"].is_null())
        .map(|f| f["value"].as_f64().unwrap())
        .collect();
    assert_eq!(flagged, [11.06e9], "{o}");

    let csv = lab.ok(&["report", "1", "--format", "csv"]).stdout;
    let stat = |s: &str| -> f64 {
        let mut rd = csv::Reader::from_reader(csv.as_bytes());
        rd.records()
            .map(|r| r.unwrap())
            .find(|r| &r[0] == "describe" && &r[1] == "a" && &r[8] == "wall_ns" && &r[9] == s)
            .unwrap_or_else(|| panic!("no describe row {s}:\n{csv}"))[10]
            .parse()
            .unwrap()
    };
    assert!(close(stat("q1"), q1) && close(stat("q3"), q3), "{csv}");

    let html = lab.ok(&["report", "1", "--format", "html"]).stdout;
    let plot = &html[html.find("class=\"plot distribution\"").unwrap()..];
    let attr = |name: &str| -> f64 {
        let i = plot.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        plot[i..i + plot[i..].find('"').unwrap()].parse().unwrap()
    };
    assert!(close(attr("data-q1"), q1) && close(attr("data-q3"), q3));
    // The whisker stops at the last run inside the fence: 11.06 is drawn beyond it, as an outlier.
    assert!(
        close(attr("data-high"), 10.6e9),
        "whisker end {}",
        attr("data-high")
    );
}
