//! `abperf import` through the real binary, each test with its own store.

mod common;
use abperf::store::Store;
use common::{Lab, data};

fn mean_of(store: &Store, id: i64, variant: usize, metric: &str) -> (usize, f64) {
    let xs: Vec<f64> = store
        .runs(id)
        .unwrap()
        .iter()
        .filter(|r| r.variant == variant)
        .map(|r| r.value(metric).unwrap())
        .collect();
    (xs.len(), xs.iter().sum::<f64>() / xs.len() as f64)
}

#[test]
fn seed_000_squashed_time_lines() {
    let lab = Lab::new();
    let db = lab.db();
    let f = data("seed000-time.txt");
    let out = lab.run(&["import", "--format", "time", "--new", "invpcid", &f]);
    assert!(out.code == Some(0), "{}", out.stderr);
    let stdout = out.stdout;
    assert!(
        stdout.contains("imported 24 run(s) (n: 12, y: 12)"),
        "{stdout}"
    );
    let store = Store::open(&db).unwrap();
    let id = store.resolve_id("latest").unwrap();
    assert_eq!(store.experiment(id).unwrap().name, "invpcid");
    let names: Vec<String> = store
        .variants(id)
        .unwrap()
        .into_iter()
        .map(|v| v.name)
        .collect();
    assert_eq!(names, ["n", "y"]);
    let (nn, n_user) = mean_of(&store, id, 0, "user_ns");
    let (ny, y_user) = mean_of(&store, id, 1, "user_ns");
    assert_eq!((nn, ny), (12, 12));
    assert_eq!(
        format!("{:.2} {:.2}", n_user / 1e9, y_user / 1e9),
        "880.44 875.35"
    );
    let runs = store.runs(id).unwrap();
    assert_eq!(runs[0].value("minflt"), Some(58366597.0));
    assert!(
        runs[0]
            .metrics
            .iter()
            .any(|m| m.name == "maxrss_kib" && m.unit == "KiB")
    );
    assert_eq!(runs[23].source.as_ref().unwrap().line, 24);

    // compare reads imported runs like any others, without taking the file order for a schedule.
    let out = lab.run(&["compare", "1", "--metric", "user_ns", "--details"]);
    let text = out.stdout;
    assert!(out.code == Some(0), "{}", out.stderr);
    assert!(
        text.contains("FASTER: y is 0.58% faster than n ("),
        "{text}"
    );
    assert!(text.contains("p<0.0001, n=12+12, Welch)"), "{text}");
}

#[test]
fn formats_import_and_append() {
    let lab = Lab::new();
    let db = lab.db();
    let p = |n: &str| data(n);
    let out = lab.run(&[
        "import",
        "--format",
        "perf-stat",
        "--variant",
        "base",
        &p("perf-stat-r5.txt"),
    ]);
    assert!(out.code == Some(0), "{}", out.stderr);
    let out = lab.run(&[
        "import",
        "--experiment",
        "latest",
        "--format",
        "perf-stat",
        "--variant",
        "unsup",
        &p("perf-stat-unsupported.csv"),
    ]);
    assert!(out.code == Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("cycles <not supported>, not stored"));
    let out = lab.run(&[
        "import",
        "--format",
        "hyperfine",
        "--new",
        "hf",
        &p("hyperfine-params.json"),
    ]);
    assert!(out.code == Some(0), "{}", out.stderr);
    let store = Store::open(&db).unwrap();
    let list = store.list().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(
        (list[0].variants, list[0].runs_done, list[0].runs_planned),
        (2, 2, 2)
    );
    let runs = store.runs(list[0].id).unwrap();
    assert!(runs[0].value("page-faults").unwrap() > 0.0);
    assert!(runs[1].value("task-clock.stderr_pct").is_some());
    assert!(runs.iter().all(|r| r.source.as_ref().unwrap().summary));
    let hf = store.runs(list[1].id).unwrap();
    assert_eq!(hf.len(), 6);
    assert_eq!(hf[5].exit_code, Some(1));
    assert_eq!(store.variants(list[1].id).unwrap()[1].parameters["n"], "1");
}

#[test]
fn standard_input() {
    use std::io::Write;
    let lab = Lab::new();
    let run = |text: &str| {
        let args = ["import", "--format", "time", "--variant", "v", "-"];
        let mut child = lab
            .cmd(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        common::Out::from(child.wait_with_output().unwrap(), &args)
    };
    let good = std::fs::read_to_string(data("time-default.txt")).unwrap();
    let out = run(&good);
    assert!(out.stdout.contains("imported 4 run(s) (v: 4)"));
    let out = run("garbage\n");
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("<stdin>:1: not /usr/bin/time output"));
}

#[test]
fn malformed_inputs_name_file_and_line_and_store_nothing() {
    let lab = Lab::new();
    let dir = &lab.dir;
    let db = lab.db();
    let good = data("seed000-time.txt");
    let cases = [
        ("time", "time-bad.txt", 6),
        ("perf-stat", "perf-stat-bad.txt", 5),
        ("hyperfine", "hyperfine-bad.json", 4),
    ];
    for (format, file, line) in cases {
        let bad = data(file);
        // A good file first: the bad one must still leave the store empty.
        let first = if format == "time" {
            good.as_str()
        } else {
            bad.as_str()
        };
        let out = lab.run(&["import", "--format", format, first, bad.as_str()]);
        assert_eq!(out.code, Some(2), "{format}");
        let err = out.stderr;
        let want = format!("{}:{line}:", bad);
        assert!(err.contains(&want), "{format}: want {want} in {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // A JSON file given as time output, and an empty file.
    let out = lab.run(&["import", "--format", "time", &data("hyperfine-two.json")]);
    assert!(
        out.stderr
            .contains("hyperfine-two.json:1: not /usr/bin/time output")
    );
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "\n").unwrap();
    let out = lab.run(&["import", "--format", "perf-stat", empty.to_str().unwrap()]);
    assert!(
        out.stderr
            .contains("empty.txt:1: no perf-stat output found")
    );
    let out = lab.run(&[
        "import",
        "--format",
        "time",
        "--variant",
        "v",
        good.as_str(),
    ]);
    assert!(out.stderr.contains("holds 2 variants (n, y)"));
    assert!(Store::open(&db).unwrap().list().unwrap().is_empty());
}
