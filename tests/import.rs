//! `abperf import` through the real binary, each test with its own store.

use abperf::store::Store;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn abperf(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_abperf"))
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .expect("run abperf")
}

fn mean_of(store: &Store, id: i64, variant: usize, metric: &str) -> (usize, f64) {
    let xs: Vec<f64> = store
        .runs(id)
        .unwrap()
        .iter()
        .filter(|r| r.variant == variant)
        .map(|r| r.metrics[metric])
        .collect();
    (xs.len(), xs.iter().sum::<f64>() / xs.len() as f64)
}

#[test]
fn seed_000_squashed_time_lines() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let f = data("seed000-time.txt");
    let out = abperf(
        &db,
        &[
            "import",
            "--format",
            "time",
            "--new",
            "invpcid",
            f.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
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
    assert_eq!(runs[0].metrics["minflt"], 58366597.0);
    assert_eq!(runs[0].units["maxrss_kib"], "KiB");
    let src = store.import_sources(id).unwrap();
    assert_eq!(src[&runs[23].id].line, 24);

    // compare reads imported runs like any others, without taking the file order for a schedule.
    let out = abperf(&db, &["compare", "1", "--metric", "user_ns"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("FASTER y is 0.58% faster than n ("), "{text}");
    assert!(text.contains("p<0.0001, n=12+12, Welch)"), "{text}");
}

#[test]
fn formats_import_and_append() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let p = |n: &str| data(n).to_str().unwrap().to_string();
    let out = abperf(
        &db,
        &[
            "import",
            "--format",
            "perf-stat",
            "--variant",
            "base",
            &p("perf-stat-r5.txt"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = abperf(
        &db,
        &[
            "import",
            "--experiment",
            "latest",
            "--format",
            "perf-stat",
            "--variant",
            "unsup",
            &p("perf-stat-unsupported.csv"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("cycles <not supported>, not stored"));
    let out = abperf(
        &db,
        &[
            "import",
            "--format",
            "hyperfine",
            "--new",
            "hf",
            &p("hyperfine-params.json"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::open(&db).unwrap();
    let list = store.list().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(
        (list[0].variants, list[0].runs_done, list[0].runs_planned),
        (2, 2, 2)
    );
    let runs = store.runs(list[0].id).unwrap();
    assert!(runs[0].metrics["page-faults"] > 0.0);
    assert!(runs[1].metrics.contains_key("task-clock.stderr_pct"));
    assert!(
        store
            .import_sources(list[0].id)
            .unwrap()
            .values()
            .all(|s| s.summary)
    );
    let hf = store.runs(list[1].id).unwrap();
    assert_eq!(hf.len(), 6);
    assert_eq!(hf[5].exit_code, Some(1));
    assert_eq!(store.variants(list[1].id).unwrap()[1].parameters["n"], "1");
}

#[test]
fn standard_input() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let run = |text: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_abperf"))
            .args(["import", "--format", "time", "--variant", "v", "-", "--db"])
            .arg(&db)
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
        child.wait_with_output().unwrap()
    };
    let good = std::fs::read_to_string(data("time-default.txt")).unwrap();
    let out = run(&good);
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported 4 run(s) (v: 4)"));
    let out = run("garbage\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("<stdin>:1: not /usr/bin/time output"));
}

#[test]
fn malformed_inputs_name_file_and_line_and_store_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
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
            good.to_str().unwrap()
        } else {
            bad.to_str().unwrap()
        };
        let out = abperf(
            &db,
            &["import", "--format", format, first, bad.to_str().unwrap()],
        );
        assert_eq!(out.status.code(), Some(2), "{format}");
        let err = String::from_utf8_lossy(&out.stderr);
        let want = format!("{}:{line}:", bad.display());
        assert!(err.contains(&want), "{format}: want {want} in {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // A JSON file given as time output, and an empty file.
    let out = abperf(
        &db,
        &[
            "import",
            "--format",
            "time",
            data("hyperfine-two.json").to_str().unwrap(),
        ],
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("hyperfine-two.json:1: not /usr/bin/time output")
    );
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "\n").unwrap();
    let out = abperf(
        &db,
        &["import", "--format", "perf-stat", empty.to_str().unwrap()],
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("empty.txt:1: no perf-stat output found")
    );
    let out = abperf(
        &db,
        &[
            "import",
            "--format",
            "time",
            "--variant",
            "v",
            good.to_str().unwrap(),
        ],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds 2 variants (n, y)"));
    assert!(Store::open(&db).unwrap().list().unwrap().is_empty());
}
