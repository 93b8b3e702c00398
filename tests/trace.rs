//! `abperf trace` against the real tracefs and the real binary.
//!
//! The workload is tests/progs/flushes.c, compiled here with the machine's `cc`: a C program
//! does exactly the madvise(MADV_DONTNEED) calls we ask for and nothing else (no runtime
//! allocator churn or helper threads, which a Rust test binary would add to the trace), and a
//! second thread pinned to CPU 1 spins in the same mm when `-s` is given.
//!
//! Tests that record share one mutex: they run one at a time in this binary (each also uses
//! its own instance, named after the abperf process, so other users of tracefs do not matter).

mod common;
use abperf::trace::instance::Events;
use common::{Lab, Out};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

static TRACEFS: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    TRACEFS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Run abperf and also return its pid (its instance is named `abperf-<pid>`).
fn abperf_pid(lab: &Lab, args: &[&str]) -> (Out, u32) {
    let child = lab
        .cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run abperf");
    let pid = child.id();
    (Out::from(child.wait_with_output().unwrap(), args), pid)
}

/// Compile the workload once per test process.
fn workload() -> PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("abperf-trace-test.{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("flushes");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/progs/flushes.c");
        let st = Command::new("cc")
            .args(["-O2", "-pthread", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .expect("the tests need a C compiler (`cc`, Debian package gcc) to build tests/progs/flushes.c");
        assert!(st.success(), "compiling {}", src.display());
        out
    })
    .clone()
}

/// The trace section of the latest capture's report.
fn report_json(lab: &Lab) -> Value {
    lab.ok(&["trace", "report", "latest", "--format", "json"])
        .json()["trace"]
        .clone()
}

/// (count, timed) of all tlb rows with `pages`, optionally of one reason name.
fn tlb_count(j: &Value, pages: i64, reason: Option<&str>) -> (u64, u64) {
    let mut c = (0, 0);
    for r in j["tlb"]["rows"].as_array().unwrap() {
        if r["pages"].as_i64() == Some(pages) && reason.is_none_or(|n| r["reason_name"] == n) {
            c.0 += r["count"].as_u64().unwrap();
            c.1 += r["timed"].as_u64().unwrap();
        }
    }
    c
}

fn pair<'a>(j: &'a Value, name: &str) -> &'a Value {
    j["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no pair table {name} in {j}"))
}

fn row(p: &Value, key: i64) -> Option<&Value> {
    p["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"].as_i64() == Some(key))
}

/// The global tracing state, read through the library (mounts tracefs privately if needed).
fn global_state() -> String {
    let t = abperf::trace::instance::Tracefs::open().expect("tracefs");
    t.global_state().unwrap()
}

fn instances() -> Vec<String> {
    let t = abperf::trace::instance::Tracefs::open().expect("tracefs");
    let mut v: Vec<String> = std::fs::read_dir(t.root.join("instances"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn madvise_sizes_give_the_flush_table() {
    let _g = lock();
    let w = workload();
    let lab = Lab::new();
    let reps = 25;
    let o = lab.run(&[
        "trace",
        "record",
        "-q",
        "--filter",
        "syscalls:sys_enter_madvise:behavior == 4",
        "--",
        w.to_str().unwrap(),
        &reps.to_string(),
        "1",
        "2",
        "8",
        "33",
        "64",
    ]);
    assert!(o.code == Some(0), "{}", o);
    let j = report_json(&lab);
    assert_eq!(j["lost_total"], 0, "lost events in a tiny capture: {j}");
    for pages in [1, 2, 8, 33] {
        let (n, _) = tlb_count(&j, pages, None);
        assert!(
            n >= reps,
            "{pages} pages: {n} flushes, expected at least {reps}"
        );
    }
    let (full, _) = tlb_count(&j, -1, None);
    assert!(full >= reps, "full flushes for 64 pages: {full}");
    // the syscall table is keyed by the requested size: 64 pages requested, flushed as -1
    let md = pair(&j, "madvise");
    assert_eq!(md["key"], "requested pages");
    let mut mins = Vec::new();
    for pages in [1, 2, 8, 33, 64] {
        let r = row(md, pages).unwrap_or_else(|| panic!("no madvise row for {pages} pages: {md}"));
        assert!(r["count"].as_u64().unwrap() >= reps, "{r}");
        mins.push(r["min_cycles"].as_f64().unwrap());
    }
    let r64 = row(md, 64).unwrap();
    assert!(
        r64["flushes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f[0] == -1),
        "64 requested pages give full flushes: {r64}"
    );
    // durations grow with size (minimum of >= 25 calls: robust to interrupts)
    assert!(
        mins[2] > mins[0],
        "8 pages {} vs 1 page {}",
        mins[2],
        mins[0]
    );
    assert!(
        mins[3] > mins[2],
        "33 pages {} vs 8 pages {}",
        mins[3],
        mins[2]
    );
    assert!(
        mins[4] > mins[2],
        "64 pages {} vs 8 pages {}",
        mins[4],
        mins[2]
    );
    // local flushes are timed by their syscall
    let (_, timed) = tlb_count(&j, 33, Some("local MM shootdown"));
    assert!(timed >= reps, "timed 33-page local flushes: {timed}");
    assert!(j["bias_cycles"].as_f64().unwrap() > 0.0);
    // text report in seed 002's layout
    let o = lab.run(&["trace", "report", "latest", "--table", "tlb"]);
    let s = o.stdout;
    assert!(
        s.contains("Flush    % of     %<=") && s.contains("    33: "),
        "{s}"
    );
    assert!(
        s.lines()
            .any(|l| l.starts_with("    -1: ") && l.contains("cycles/page: xxxx")),
        "{s}"
    );
}

#[test]
fn spinning_sibling_gives_remote_shootdowns() {
    let _g = lock();
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if cpus < 2 {
        eprintln!("skipped: remote shootdowns need 2 CPUs, this machine has {cpus}");
        return;
    }
    let w = workload();
    let lab = Lab::new();
    let o = lab.run(&[
        "trace",
        "record",
        "-q",
        "--",
        w.to_str().unwrap(),
        "-s",
        "20",
        "1",
        "8",
        "33",
    ]);
    assert!(o.code == Some(0), "{}", o);
    let j = report_json(&lab);
    let rs = pair(&j, "remote shootdown");
    let rows = rs["rows"].as_array().unwrap();
    assert!(!rows.is_empty(), "no remote shootdown pairs: {rs}");
    let n: u64 = rows.iter().map(|r| r["count"].as_u64().unwrap()).sum();
    // the sibling only needs an IPI while it runs on CPU 1: on a loaded machine it is sometimes
    // preempted (then no IPI is needed), so expect a share of the 300 flushes, not all of them
    assert!(n >= 15, "{n} remote shootdowns");
    for r in rows {
        assert!(r["avg_cycles"].as_f64().unwrap() > 0.0, "{r}");
    }
    // every remote shootdown flush is timed by its call_function pair
    let (mut cnt, mut timed) = (0, 0);
    for r in j["tlb"]["rows"].as_array().unwrap() {
        if r["reason_name"] == "remote shootdown" {
            cnt += r["count"].as_u64().unwrap();
            timed += r["timed"].as_u64().unwrap();
        }
    }
    assert!(
        cnt >= 15 && timed == cnt,
        "remote shootdowns {cnt}, timed {timed}"
    );
}

#[test]
fn global_state_and_instances_are_left_alone() {
    let _g = lock();
    let lab = Lab::new();
    let db = lab.db();
    let before = global_state();
    let gone = |pid: u32| {
        let name = format!("abperf-{pid}");
        assert!(!instances().contains(&name), "instance {name} left behind");
    };

    // a failing command: capture stored, exit 1
    let (o, pid) = abperf_pid(&lab, &["trace", "record", "-q", "--", "false"]);
    assert_eq!(o.code, Some(1), "{}", o);
    gone(pid);
    assert_eq!(global_state(), before);
    // a command that cannot start
    let (o, pid) = abperf_pid(
        &lab,
        &[
            "trace",
            "record",
            "-q",
            "--",
            "/nonexistent/abperf-test-command",
        ],
    );
    assert_eq!(o.code, Some(1), "{}", o);
    assert!(o.stderr.contains("cannot execute"), "{}", o);
    gone(pid);
    // a filter the kernel rejects: usage error, naming the flag
    let (o, pid) = abperf_pid(
        &lab,
        &[
            "trace",
            "record",
            "-q",
            "--filter",
            "tlb:tlb_flush:no_such_field == 3",
            "--",
            "true",
        ],
    );
    assert_eq!(o.code, Some(2), "{}", o);
    assert!(o.stderr.contains("--filter"), "{}", o);
    gone(pid);
    // an event that does not exist
    let (o, pid) = abperf_pid(
        &lab,
        &[
            "trace",
            "record",
            "-q",
            "-e",
            "tlb:no_such_event",
            "--",
            "true",
        ],
    );
    assert_eq!(o.code, Some(2), "{}", o);
    gone(pid);
    // a successful record
    let (o, pid) = abperf_pid(&lab, &["trace", "record", "-q", "--", "true"]);
    assert!(o.code == Some(0), "{}", o);
    gone(pid);
    assert_eq!(global_state(), before);

    // SIGINT while recording: the instance goes away, the workload is stopped, exit 130
    let mut child = Command::new(common::BIN)
        .args(["trace", "record", "-q", "--db"])
        .arg(&db)
        .args(["--", "sleep", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let name = format!("abperf-{}", child.id());
    let t0 = Instant::now();
    while !instances().contains(&name) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "instance {name} never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let st = child.wait().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "abperf did not stop on SIGINT"
    );
    assert_eq!(st.code(), Some(130));
    assert!(!instances().contains(&name), "instance {name} left behind");
    assert_eq!(global_state(), before);
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The rows of every table, without names (text imports may lack the `system:` prefix when
/// tracefs is not mounted on the machine running the test).
fn rows(j: &Value) -> Value {
    // a binary capture has (empty) tables for events enabled but never seen; text has none
    let pairs: Vec<Value> = j["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| !p["rows"].as_array().unwrap().is_empty())
        .map(|p| serde_json::json!([p["name"], p["rows"], p["unmatched"]]))
        .collect();
    serde_json::json!({ "tlb": j["tlb"]["rows"], "pairs": pairs, "bias": j["bias_cycles"] })
}

#[test]
fn text_import_equals_binary_capture() {
    // tests/data/small-capture.{txt,raw}: one capture on this kind of machine, written by
    // `abperf trace record --save-text ... --keep-raw ... -- flushes -s 3 1 2 8 33 64`
    let lab = Lab::new();
    // the same TSC frequency for both, so that ns agree too
    let o = lab.run(&[
        "trace",
        "import",
        "-q",
        "--tsc-mhz",
        "2596.138",
        data("small-capture.raw").to_str().unwrap(),
    ]);
    assert!(o.code == Some(0), "{}", o);
    let bin = report_json(&lab);
    let o = lab.run(&[
        "trace",
        "import",
        "-q",
        "--tsc-mhz",
        "2596.138",
        data("small-capture.txt").to_str().unwrap(),
    ]);
    assert!(o.code == Some(0), "{}", o);
    let txt = report_json(&lab);
    assert!(bin["tlb"]["rows"].as_array().unwrap().len() > 3);
    assert_eq!(rows(&txt), rows(&bin));
    assert_eq!(txt["capture"]["event_count"], bin["capture"]["event_count"]);
    // compare shows both
    let o = lab.run(&["trace", "compare", "1", "2"]);
    assert!(o.code == Some(0), "{}", o);
    let s = o.stdout;
    assert!(
        s.contains("A: capture 1") && s.contains("B: capture 2") && s.contains("   1.000"),
        "{s}"
    );
    // a custom pair from the stored raw pages, and a count by field
    let o = lab.run(&[
        "trace",
        "report",
        "1",
        "--table",
        "pair",
        "--begin",
        "syscalls:sys_enter_madvise",
        "--end",
        "syscalls:sys_exit_madvise",
        "--key",
        "behavior",
    ]);
    assert!(o.code == Some(0), "{}", o);
    assert!(
        o.stdout
            .contains("sys_enter_madvise..syscalls:sys_exit_madvise"),
        "{}",
        o
    );
    let o = lab.run(&[
        "trace",
        "report",
        "2",
        "--event",
        "tlb_flush",
        "--key",
        "pages",
        "--format",
        "csv",
    ]);
    assert!(o.code == Some(0), "{}", o);
    assert!(o.stdout.contains(",pages,33,"), "{}", o);
    let o = lab.run(&[
        "trace",
        "report",
        "2",
        "--event",
        "tlb_flush",
        "--key",
        "nope",
    ]);
    assert_eq!(o.code, Some(2), "{}", o);
    assert!(o.stderr.contains("\"nope\""), "{}", o);
}

#[test]
fn malformed_text_names_the_line() {
    let lab = Lab::new();
    let dir = &lab.dir;
    let good = std::fs::read_to_string(data("small-capture.txt")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(49, "   this-is [not] a trace line");
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, lines.join("\n")).unwrap();
    let o = lab.run(&["trace", "import", "-q", bad.to_str().unwrap()]);
    assert_eq!(o.code, Some(2), "{}", o);
    let err = o.stderr;
    assert!(err.contains("bad.txt: line 50:"), "{err}");
    assert_eq!(err.lines().count(), 1, "one-line error: {err}");
    let o = lab.run(&["trace", "import", "-q", "--lenient", bad.to_str().unwrap()]);
    assert!(o.code == Some(0), "{}", o);
    assert!(o.stderr.contains("1 lines skipped"), "{}", o);
    let j = report_json(&lab);
    assert_eq!(j["capture"]["skipped_lines"], 1);
    // not a trace at all
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, "hello\n").unwrap();
    let o = lab.run(&["trace", "import", "-q", junk.to_str().unwrap()]);
    assert_eq!(o.code, Some(2), "{}", o);
    assert!(o.stderr.contains("line 1"), "{}", o);
}

#[test]
fn losses_are_counted_and_reported() {
    let _g = lock();
    let w = workload();
    let lab = Lab::new();
    let dir = &lab.dir;
    // a 4 KiB buffer read only after the workload (--save-text): most events are overwritten
    let txt = dir.path().join("t.txt");
    let o = lab.run(&[
        "trace",
        "record",
        "-q",
        "--buffer-kib",
        "4",
        "-e",
        "tlb:tlb_flush",
        "--save-text",
        txt.to_str().unwrap(),
        "--",
        w.to_str().unwrap(),
        "2000",
        "1",
    ]);
    assert!(o.code == Some(0), "{}", o);
    let j = report_json(&lab);
    assert!(
        j["lost_total"].as_u64().unwrap() > 1000,
        "lost: {}",
        j["capture"]["lost"]
    );
    let o = lab.run(&["trace", "report", "latest", "--table", "tlb"]);
    let s = o.stdout;
    assert!(s.contains("WARNING: events were lost"), "{s}");
    // --duration without a command
    let o = lab.run(&[
        "trace",
        "record",
        "-q",
        "-e",
        "tlb:tlb_flush",
        "--duration",
        "0.2",
    ]);
    assert!(o.code == Some(0), "{}", o);
    let o = lab.run(&["trace", "record", "-q", "-e", "tlb:tlb_flush"]);
    assert_eq!(o.code, Some(2), "{}", o);
}
