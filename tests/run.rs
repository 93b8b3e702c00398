//! Integration tests of `abperf run` and the store commands: the real binary, real processes,
//! real kernel files (THP knob, perf_event_open, tracepoints).

use abperf::store::Store;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_abperf");
const THP: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

/// Tests that write the real THP knob must not overlap.
static THP_LOCK: Mutex<()> = Mutex::new(());

fn abperf(db: &Path, args: &[&str]) -> Output {
    let (sub, rest) = args.split_first().expect("a subcommand");
    Command::new(BIN)
        .arg(sub)
        .arg("--db")
        .arg(db)
        .args(rest)
        .output()
        .expect("abperf runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn export(db: &Path, id: &str) -> serde_json::Value {
    let o = abperf(db, &["export", id, "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn timed_order(doc: &serde_json::Value) -> Vec<String> {
    doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["warmup"].as_bool().unwrap())
        .map(|r| r["variant"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn order_is_abba_balanced_and_reproducible_and_export_has_the_fields() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    for _ in 0..2 {
        let o = abperf(
            &db,
            &[
                "run",
                "-N",
                "--seed",
                "77",
                "-r",
                "6",
                "-n",
                "A",
                "-n",
                "B",
                "true",
                "/bin/true",
            ],
        );
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains("seed 77"), "{}", text(&o));
    }
    let a = export(&db, "1");
    let b = export(&db, "latest");
    assert_eq!(timed_order(&a), timed_order(&b));
    let order = timed_order(&a);
    assert_eq!(order.len(), 12);
    // ABBA: every block of 4 is a permutation followed by its reverse.
    for block in order.chunks(4) {
        assert_eq!(block[0], block[3], "{order:?}");
        assert_eq!(block[1], block[2], "{order:?}");
        assert_ne!(block[0], block[1], "{order:?}");
    }
    assert_eq!(a["experiment"]["seed"], 77);
    assert_eq!(a["experiment"]["order"], "abba");
    assert_eq!(a["experiment"]["status"], "complete");
    assert!(a["experiment"]["environment"]["kernel"].is_string());
    assert_eq!(a["variants"][0]["name"], "A");
    let run = &a["runs"][0];
    assert_eq!(run["warmup"], true);
    for key in [
        "wall_ns",
        "user_ns",
        "sys_ns",
        "maxrss_kib",
        "minflt",
        "majflt",
        "nvcsw",
        "nivcsw",
    ] {
        assert!(run["metrics"][key].is_number(), "{key} missing in {run}");
    }
    assert_eq!(run["status"], "ok");
    let seqs: Vec<u64> = a["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..14).collect::<Vec<_>>());

    let o = abperf(
        &db,
        &[
            "run",
            "--order",
            "sequential",
            "-r",
            "2",
            "true",
            "false; true",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("warning: --order sequential"));
    let csv = abperf(&db, &["export", "latest", "--format", "csv"]);
    let csv = String::from_utf8_lossy(&csv.stdout).to_string();
    assert!(csv.starts_with("experiment,variant,seq,warmup,status"));
    assert_eq!(csv.lines().count(), 1 + 6);
    let list = text(&abperf(&db, &["list"]));
    assert_eq!(list.lines().count(), 4, "{list}");
    let show = abperf(&db, &["show", "latest", "--runs"]);
    assert!(show.status.success());
    assert!(text(&show).contains("wall"));
    assert!(abperf(&db, &["delete", "1"]).status.success());
    assert!(!abperf(&db, &["show", "1"]).status.success());
}

#[test]
fn knob_on_a_file_is_verified_and_restored_after_success_and_failure() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("k.db");
    let knob = dir.path().join("knob");
    let seen = dir.path().join("seen");
    std::fs::write(&knob, "orig\n").unwrap();
    let k = format!("{}=x,y", knob.display());
    let cmd = format!("cat {} >> {}", knob.display(), seen.display());
    let o = abperf(&db, &["run", "-r", "2", "--warmup", "0", "-k", &k, &cmd]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&knob).unwrap(), "orig");
    let seen_text = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(seen_text.matches('x').count(), 2, "{seen_text}");
    assert_eq!(seen_text.matches('y').count(), 2, "{seen_text}");
    let doc = export(&db, "latest");
    assert_eq!(doc["variants"][0]["knobs"][0]["original"], "orig");

    // A failing workload stops the experiment; the knob is restored all the same.
    let o = abperf(&db, &["run", "-r", "3", "-k", &k, "exit 3"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("exited with status 3"), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&knob).unwrap(), "orig");
    assert_eq!(export(&db, "latest")["experiment"]["status"], "failed");

    // A knob that does not exist is an error before any run.
    let o = abperf(&db, &["run", "-k", "/nonexistent/knob=1,2", "true"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).contains("/nonexistent/knob: does not exist"),
        "{}",
        text(&o)
    );
    let list = text(&abperf(&db, &["list"]));
    assert_eq!(
        list.lines().count(),
        3,
        "no experiment may be stored for it: {list}"
    );
}

#[test]
fn real_thp_knob_is_written_verified_and_restored_also_on_sigint() {
    let _g = THP_LOCK.lock().unwrap();
    if !Path::new(THP).exists() {
        panic!("{THP} is absent: this kernel has no THP; the knob test cannot run here");
    }
    let before = std::fs::read_to_string(THP).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let seen = dir.path().join("seen");
    let k = format!("{THP}=never,always");
    let cmd = format!("grep -o '\\[[a-z]*\\]' {THP} >> {}", seen.display());
    let o = abperf(&db, &["run", "-r", "2", "--warmup", "0", "-k", &k, &cmd]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(THP).unwrap(), before);
    let s = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(s.matches("[never]").count(), 2, "{s}");
    assert_eq!(s.matches("[always]").count(), 2, "{s}");

    // A failing workload: stopped, THP restored.
    let o = abperf(&db, &["run", "-r", "2", "-k", &k, "exit 7"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(THP).unwrap(), before);

    // SIGINT in the middle: the knob comes back, the experiment is marked interrupted.
    let mut child = Command::new(BIN)
        .args([
            "run",
            "--db",
            db.to_str().unwrap(),
            "-r",
            "50",
            "--warmup",
            "0",
            "-k",
            &k,
            "sleep 0.1",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let id = wait_for_runs(&db, 3, 2);
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(std::fs::read_to_string(THP).unwrap(), before);
    let store = Store::open(&db).unwrap();
    assert_eq!(
        store.experiment(id).unwrap().status,
        abperf::store::Status::Interrupted
    );
}

/// Poll the store until experiment number `nth` has at least `n` runs (false after 30 s).
fn poll_runs(db: &Path, nth: i64, n: usize) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(30) {
        if db.exists()
            && let Ok(store) = Store::open(db)
            && let Ok(runs) = store.runs(nth)
            && runs.len() >= n
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Like `poll_runs`, failing the test on time-out; returns `nth`.
fn wait_for_runs(db: &Path, nth: i64, n: usize) -> i64 {
    assert!(
        poll_runs(db, nth, n),
        "no runs appeared in {}",
        db.display()
    );
    nth
}

#[test]
fn kill_9_keeps_completed_runs_and_resume_finishes_the_same_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let err_log = dir.path().join("stderr");
    let mut child = Command::new(BIN)
        .args([
            "run",
            "--db",
            db.to_str().unwrap(),
            "--seed",
            "4242",
            "-r",
            "8",
            "sleep 0.05",
            "sleep 0.06",
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_log).unwrap())
        .spawn()
        .unwrap();
    if !poll_runs(&db, 1, 4) {
        let _ = child.kill();
        let status = child.wait().unwrap();
        let err = std::fs::read_to_string(&err_log).unwrap_or_default();
        panic!("no runs appeared; abperf {status}: {err}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let store = Store::open(&db).unwrap();
    let stored = store.runs(1).unwrap();
    assert!(stored.len() >= 4 && stored.len() < 18, "{}", stored.len());
    let seqs: Vec<u32> = stored.iter().map(|r| r.seq).collect();
    assert_eq!(
        seqs,
        (0..stored.len() as u32).collect::<Vec<_>>(),
        "runs are committed in schedule order"
    );
    assert_eq!(
        store.experiment(1).unwrap().status,
        abperf::store::Status::Running
    );
    drop(store);

    let o = abperf(&db, &["run", "--resume", "1"]);
    assert!(o.status.success(), "{}", text(&o));
    let resumed = export(&db, "1");
    assert_eq!(resumed["experiment"]["status"], "complete");
    assert_eq!(resumed["runs"].as_array().unwrap().len(), 18);
    // The same seed in a fresh experiment gives the same order: resume kept the schedule.
    let o = abperf(&db, &["run", "--seed", "4242", "-r", "8", "true", "false"]);
    assert!(!o.status.success());
    let o = abperf(
        &db,
        &[
            "run",
            "--seed",
            "4242",
            "-r",
            "8",
            "-n",
            "sleep 0.05",
            "-n",
            "sleep 0.06",
            "true",
            "true",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(timed_order(&resumed), timed_order(&export(&db, "latest")));
    let again = abperf(&db, &["run", "--resume", "1"]);
    assert!(text(&again).contains("already complete"));
}

#[test]
fn max_rss_is_per_run_not_the_maximum_over_all_children() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let big = "perl -e '$x = \"a\" x (200*1024*1024); print length($x) > 0 ? \"\" : \"x\"'";
    let o = abperf(
        &db,
        &[
            "run",
            "--order",
            "sequential",
            "--warmup",
            "0",
            "-r",
            "2",
            "-n",
            "big",
            "-n",
            "small",
            big,
            "true",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let doc = export(&db, "latest");
    for r in doc["runs"].as_array().unwrap() {
        let rss = r["metrics"]["maxrss_kib"].as_f64().unwrap();
        match r["variant"].as_str().unwrap() {
            "big" => assert!(rss >= 200.0 * 1024.0, "big run: {rss} KiB"),
            _ => assert!(
                rss < 20.0 * 1024.0,
                "small run after the big one: {rss} KiB"
            ),
        }
    }
}

fn build_madvise_loop(dir: &Path) -> PathBuf {
    let out = dir.join("madvise_loop");
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/programs/madvise_loop.c");
    let st = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&out)
        .arg(src)
        .status()
        .expect("cc (gcc) is needed to build the test workload");
    assert!(st.success());
    out
}

#[test]
fn tracepoint_and_software_counters_count_the_workload_and_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("e.db");
    let prog = build_madvise_loop(dir.path());
    let cmd = format!("{} {{n}} 4", prog.display());
    let o = abperf(
        &db,
        &[
            "run",
            "-r",
            "3",
            "-L",
            "n=200,800",
            "-e",
            "tlb:tlb_flush,page-faults,cycles",
            &cmd,
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let doc = export(&db, "latest");
    let cycles_supported = !text(&o).contains("event cycles: not supported");
    let mut per_variant: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for r in doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["warmup"].as_bool().unwrap())
    {
        let m = &r["metrics"];
        assert!(m["page-faults"].as_f64().unwrap() >= 800.0 * 0.9 || r["variant"] == "n=200");
        assert_eq!(
            m["cycles"].is_number(),
            cycles_supported,
            "cycles reported unsupported yet stored, or the reverse"
        );
        per_variant
            .entry(r["variant"].as_str().unwrap().into())
            .or_default()
            .push(m["tlb:tlb_flush"].as_f64().unwrap());
    }
    let mean = |v: &Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
    let (small, large) = (mean(&per_variant["n=200"]), mean(&per_variant["n=800"]));
    assert!(small >= 200.0, "at least one flush per madvise: {small}");
    let ratio = large / small;
    assert!(
        (3.0..5.0).contains(&ratio),
        "flushes should scale 4x with the calls: {small} vs {large}"
    );

    // Counters are inherited: the same workload under `sh -c "prog; prog"` counts both children.
    let twice = format!("{0} 300 4; {0} 300 4", prog.display());
    let o = abperf(&db, &["run", "-r", "2", "-e", "tlb:tlb_flush", &twice]);
    assert!(o.status.success(), "{}", text(&o));
    let doc = export(&db, "latest");
    let flushes = doc["runs"][1]["metrics"]["tlb:tlb_flush"].as_f64().unwrap();
    assert!(flushes >= 600.0, "{flushes}");

    let o = abperf(&db, &["run", "-r", "2", "--strict", "-e", "cycles", "true"]);
    if cycles_supported {
        assert!(o.status.success());
    } else {
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(text(&o).contains("--strict"));
    }
}

#[test]
fn failures_timeouts_and_ignore_failure() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    let o = abperf(
        &db,
        &[
            "run",
            "-r",
            "3",
            "--warmup",
            "0",
            "--timeout",
            "0.3",
            "sleep 5",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("timed out"), "{}", text(&o));
    let doc = export(&db, "latest");
    assert_eq!(doc["runs"].as_array().unwrap().len(), 1);
    assert_eq!(doc["runs"][0]["status"], "timeout");
    assert!(doc["runs"][0]["metrics"]["wall_ns"].as_f64().unwrap() < 2e9);

    let o = abperf(
        &db,
        &["run", "-r", "3", "--warmup", "0", "-i", "exit 1", "true"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let doc = export(&db, "latest");
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6);
    assert_eq!(runs.iter().filter(|r| r["status"] == "failed").count(), 3);
    assert!(
        runs.iter()
            .filter(|r| r["status"] == "failed")
            .all(|r| r["exit_code"] == 1)
    );
}

#[test]
fn pre_and_post_are_not_timed_and_parameters_substitute_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let log = dir.path().join("log");
    let pre = format!("sleep 0.3; echo pre{{x}} >> {}", log.display());
    let post = format!("echo post{{x}} >> {}", log.display());
    let setup = format!("echo setup{{x}} >> {}", log.display());
    let cleanup = format!("echo cleanup >> {}", log.display());
    let o = abperf(
        &db,
        &[
            "run",
            "-r",
            "2",
            "--warmup",
            "0",
            "--order",
            "sequential",
            "-L",
            "x=1,2",
            "--pre",
            &pre,
            "--post",
            &post,
            "--setup",
            &setup,
            "--cleanup",
            &cleanup,
            "true {x}",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let l = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = l.lines().collect();
    assert_eq!(
        lines,
        [
            "setup1", "pre1", "post1", "pre1", "post1", "setup2", "pre2", "post2", "pre2", "post2",
            "cleanup"
        ]
    );
    let doc = export(&db, "latest");
    for r in doc["runs"].as_array().unwrap() {
        assert!(
            r["metrics"]["wall_ns"].as_f64().unwrap() < 0.25e9,
            "pre was timed: {r}"
        );
    }
}

#[test]
fn bad_input_is_a_one_line_error_with_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("b.db");
    let cases: &[(&[&str], i32, &str)] = &[
        (&["run"], 2, "no command"),
        (&["run", ""], 2, "no command"),
        (&["run", "--order", "zigzag", "true"], 2, "zigzag"),
        (&["run", "-L", "n", "true"], 2, "-L/--parameter-list 'n'"),
        (&["run", "-k", "rel=1", "true"], 2, "-k/--knob 'rel=1'"),
        (&["run", "-r", "0", "true"], 2, "-r/--runs"),
        (&["run", "--pin", "9999", "true"], 2, "--pin"),
        (&["run", "-e", "bogus", "true"], 2, "unknown event 'bogus'"),
        (
            &["run", "-N", "no-such-program-xyz"],
            1,
            "not found in PATH",
        ),
        (&["show", "nope"], 2, "experiment id 'nope'"),
        (&["show", "latest"], 1, "holds no experiment"),
    ];
    for (args, code, needle) in cases {
        let o = abperf(&db, args);
        assert_eq!(o.status.code(), Some(*code), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(needle), "{args:?}: {}", text(&o));
    }
    let o = abperf(&db, &["list"]);
    assert!(text(&o).contains("no experiments"), "{}", text(&o));

    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![7u8; 4096]).unwrap();
    let o = abperf(&junk, &["run", "true"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("not an abperf"), "{}", text(&o));
    assert_eq!(
        std::fs::read(&junk).unwrap(),
        vec![7u8; 4096],
        "a corrupt store is never written"
    );

    let o = abperf(Path::new("/proc/no/such/dir/x.db"), &["run", "true"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("/proc/no/such/dir"), "{}", text(&o));
    assert_eq!(text(&o).lines().count(), 1, "{}", text(&o));
}

#[test]
fn sigterm_and_sighup_restore_a_file_knob_and_mark_the_experiment_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let knob = dir.path().join("knob");
    std::fs::write(&knob, "always [madvise] never\n").unwrap();
    let k = format!("{}=a,b", knob.display());
    for (nth, sig) in [(1, libc::SIGTERM), (2, libc::SIGHUP)] {
        let child = Command::new(BIN)
            .args([
                "run",
                "--db",
                db.to_str().unwrap(),
                "-r",
                "50",
                "-k",
                &k,
                "sleep 0.05",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_runs(&db, nth, 2);
        // SAFETY: plain kill(2) of our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(128 + sig));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("abperf run --resume {nth}")), "{err}");
        // The bracketed choice was what the knob held; that is what comes back.
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "madvise");
        let store = Store::open(&db).unwrap();
        assert_eq!(
            store.experiment(nth).unwrap().status,
            abperf::store::Status::Interrupted
        );
    }
}
