//! `abperf workload` against the real binary and kernel: every workload runs with reduced sizes
//! and reports its declared metrics; page-aging reclaims inside its own memory cgroup and removes
//! it (also on SIGINT, and a cgroup left by a SIGKILLed run is removed by the next run); kbuild
//! builds one directory of Debian's linux-source; flush-storm's tlb_flush trace shows full,
//! partial and remote flushes.
//!
//! Skips happen only on independent probes of the machine (mountinfo, /proc/meminfo, /usr/src,
//! PATH, the CPU affinity mask), each printed.

use abperf::workload::metrics::{Direction, Metric};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// page-aging tests run one at a time: one of them leaves a cgroup behind on purpose, which any
/// other page-aging run of this process would remove.
static PAGE_AGING: Mutex<()> = Mutex::new(());

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_abperf")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn abperf(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .env_remove("ABPERF_METRICS_FILE")
        .output()
        .expect("run abperf")
}

/// A scratch directory on the target's disk (page-aging refuses tmpfs).
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("workload-{name}"));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `workload exec` with the metrics file protocol; metrics by name.
fn exec(args: &[&str]) -> (Output, BTreeMap<String, Metric>) {
    let dir = tempfile::tempdir().unwrap();
    let mf = dir.path().join("metrics.jsonl");
    let mut a = vec!["workload", "exec"];
    a.extend_from_slice(args);
    let o = Command::new(bin())
        .args(&a)
        .env("ABPERF_METRICS_FILE", &mf)
        .output()
        .expect("run abperf");
    let ms = if o.status.success() {
        abperf::workload::metrics::read_file(&mf).unwrap_or_else(|e| panic!("{e:#}\n{}", text(&o)))
    } else {
        Vec::new()
    };
    let map = ms.into_iter().map(|m| (m.name.clone(), m)).collect();
    (o, map)
}

/// Every emitted metric is declared by the workload with the same unit and direction, and the
/// scores are positive.
fn check_declared(name: &str, ms: &BTreeMap<String, Metric>) {
    let w = abperf::workload::find(name).unwrap();
    assert!(!ms.is_empty(), "{name}: no metrics");
    for m in ms.values() {
        let d = w
            .metrics
            .iter()
            .find(|d| d.name == m.name)
            .unwrap_or_else(|| panic!("{name}: undeclared metric {}", m.name));
        assert_eq!(d.unit, m.unit, "{name}: {}", m.name);
        assert_eq!(d.direction, m.direction, "{name}: {}", m.name);
        assert!(m.value.is_finite() && m.value >= 0.0, "{name}: {m:?}");
        if m.direction == Direction::HigherIsBetter || m.direction == Direction::LowerIsBetter {
            assert!(m.value > 0.0, "{name}: {m:?}");
        }
    }
}

fn cpus() -> usize {
    // independent of abperf: the affinity mask through the standard library
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

#[test]
fn list_and_show() {
    let o = abperf(&["workload", "list"]);
    assert!(o.status.success(), "{}", text(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    for n in [
        "page-aging",
        "kbuild",
        "flush-storm",
        "fork-exec",
        "ctxsw",
        "pagefault",
    ] {
        assert!(s.lines().any(|l| l.starts_with(n)), "{n} in\n{s}");
    }
    let o = abperf(&["workload", "list", "--format", "json"]);
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j.as_array().unwrap().len(), 6);
    for w in j.as_array().unwrap() {
        assert!(w["version"].as_u64().unwrap() >= 1, "{w}");
        assert!(!w["runtime"].as_str().unwrap().is_empty());
        assert!(
            w["params"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "seed")
        );
        for m in w["metrics"].as_array().unwrap() {
            let d = m["direction"].as_str().unwrap();
            assert!(
                ["higher_is_better", "lower_is_better", "count"].contains(&d),
                "{m}"
            );
            assert!(!m["unit"].as_str().unwrap().is_empty());
        }
    }
    let o = abperf(&["workload", "show", "page-aging", "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    let pattern = j["params"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "pattern")
        .unwrap();
    assert_eq!(pattern["allowed"], "one of seq, random, hot");
    assert_eq!(pattern["default"], "seq");
    assert!(j["modelled_on"].as_str().unwrap().contains("seed 001"));
    assert_eq!(j["this_machine"].as_array().unwrap().len(), 3, "{j}");
    let o = abperf(&["workload", "show", "kbuild"]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("kernel paths:") && s.contains("config=tinyconfig") && s.contains("prepare:"),
        "{s}"
    );
    let o = abperf(&["workload", "show", "nope"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("workloads: page-aging, kbuild"));
}

#[test]
fn bad_parameters_are_named() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["page-aging", "pattern=zigzag"],
            "page-aging: pattern=zigzag: expected one of seq, random, hot",
        ),
        (
            &["page-aging", "patern=seq"],
            "page-aging: unknown parameter \"patern\" (parameters: backing, pattern, op, data, \
             chunk, memory_max, passes, dir, cgroup, seed)",
        ),
        (
            &["flush-storm", "sizes=1:57,33:3"],
            "values cannot contain ','",
        ),
        (
            &["flush-storm", "sizes=0:5"],
            "flush-storm: sizes=0:5: \"0:5\": pages must be 1..65536; expected seed002",
        ),
        (
            &["ctxsw", "round_trips=0"],
            "ctxsw: round_trips=0: expected an integer from 1 to 1000000000",
        ),
        (
            &["kbuild", "config=allyesconfig"],
            "kbuild: config=allyesconfig: expected one of tinyconfig, defconfig",
        ),
        (&["kbuild", "dirs=../etc"], "is not a relative directory"),
        (
            &["pagefault", "size=12X"],
            "pagefault: size=12X: expected a size",
        ),
        (&["fork-exec", "seed"], "expected NAME=VALUE"),
    ];
    for (args, want) in cases {
        let mut a = vec!["workload", "exec"];
        a.extend_from_slice(args);
        let o = abperf(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(want), "{args:?}: want {want:?} in {e}");
    }
    // values that only the run can check: exit 1 with a message naming the parameter
    let o = abperf(&["workload", "exec", "fork-exec", "exec=/nonexistent/prog"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("exec=/nonexistent/prog"));
    let too_many = (cpus() + 1).to_string();
    let o = abperf(&[
        "workload",
        "exec",
        "flush-storm",
        &format!("threads={too_many}"),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("distinct CPUs"),
        "{}",
        text(&o)
    );
}

#[test]
fn metrics_go_to_stderr_without_the_file() {
    let o = abperf(&[
        "workload",
        "exec",
        "pagefault",
        "size=4M",
        "loops=1",
        "seed=3",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.starts_with("pagefault v1 (loops=1 madvise=none op=write order=seq seed=3 size=4M)\n"),
        "{e}"
    );
    assert!(
        e.lines()
            .any(|l| l.trim_start().starts_with("pages_per_s") && l.ends_with("(higher is better)")),
        "{e}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn small_workloads_run_and_report() {
    let runs: Vec<Vec<&str>> = vec![
        vec!["ctxsw", "round_trips=2000"],
        vec!["ctxsw", "round_trips=2000", "mode=processes"],
        vec!["fork-exec", "iterations=30"],
        vec!["fork-exec", "iterations=30", "mode=fork"],
        vec!["fork-exec", "iterations=30", "mode=spawn"],
        vec!["pagefault", "size=8M", "loops=2"],
        vec![
            "pagefault",
            "size=8M",
            "loops=1",
            "order=random",
            "op=read",
            "madvise=nohugepage",
        ],
        vec!["flush-storm", "ops=500"],
        vec![
            "flush-storm",
            "ops=500",
            "threads=1",
            "sizes=1+64",
            "syscalls=madvise",
        ],
    ];
    for r in runs {
        let (o, ms) = exec(&r);
        assert!(o.status.success(), "{r:?}: {}", text(&o));
        check_declared(r[0], &ms);
        match r[0] {
            "ctxsw" => assert_eq!(ms["round_trips"].value, 2000.0),
            "fork-exec" => assert_eq!(ms["processes"].value, 30.0),
            "pagefault" => {
                let pages = 8.0 * 256.0 * if r.contains(&"loops=2") { 2.0 } else { 1.0 };
                // every page was touched; at most one fault per page (fewer with THP)
                assert!(ms["faults"].value <= pages * 1.05, "{ms:?}");
                assert!(ms["faults"].value >= 1.0, "{ms:?}");
            }
            "flush-storm" => {
                assert_eq!(ms["ops"].value, 500.0);
                if r.contains(&"sizes=1+64") {
                    let over = ms["ops_over_33_pages"].value;
                    assert!(
                        (150.0..350.0).contains(&over),
                        "half the ranges are 64 pages: {over}"
                    );
                    assert_eq!(ms["remote_cpus"].value, 0.0);
                }
            }
            _ => unreachable!(),
        }
    }
    if cpus() >= 2 {
        let (o, ms) = exec(&["ctxsw", "round_trips=500", "cpus=split"]);
        assert!(o.status.success(), "{}", text(&o));
        check_declared("ctxsw", &ms);
    } else {
        eprintln!("skipped ctxsw cpus=split: one CPU");
    }
}

// ---- page-aging ----

/// Where a memory cgroup can be made, probed independently of abperf: cgroup2 at the mount
/// root with `memory` in cgroup.subtree_control, else the v1 memory hierarchy at our own cgroup.
fn memcg_parent() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut v1 = None;
    for l in info.lines() {
        let (pre, post) = l.split_once(" - ")?;
        let f: Vec<&str> = pre.split(' ').collect();
        let p: Vec<&str> = post.split(' ').collect();
        let point = PathBuf::from(f[4]);
        if p[0] == "cgroup2" {
            let sub = std::fs::read_to_string(point.join("cgroup.subtree_control")).ok()?;
            if sub.split_whitespace().any(|c| c == "memory") {
                return Some(point);
            }
        }
        if p[0] == "cgroup"
            && p.get(2)
                .is_some_and(|o| o.split(',').any(|o| o == "memory"))
        {
            let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
            let path = own.lines().find_map(|l| {
                let mut it = l.splitn(3, ':');
                let _ = it.next();
                let c = it.next()?;
                let path = it.next()?;
                c.split(',')
                    .any(|c| c == "memory")
                    .then(|| path.to_string())
            })?;
            let rel = path
                .strip_prefix(f[3])
                .unwrap_or(&path)
                .trim_start_matches('/');
            v1 = Some(point.join(rel));
        }
    }
    v1
}

/// Our cgroups (abperf-wl.<pid>.<start>) under `parent` owned by `pid`.
fn cgroups_of(parent: &Path, pid: u32) -> Vec<PathBuf> {
    let prefix = format!("abperf-wl.{pid}.");
    std::fs::read_dir(parent)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

fn page_aging_dir() -> String {
    format!("dir={}", scratch("page-aging").display())
}

fn wait_for_cgroup(parent: &Path, pid: u32) -> PathBuf {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(p) = cgroups_of(parent, pid).pop()
            && std::fs::read_to_string(p.join("cgroup.procs")).is_ok_and(|s| !s.trim().is_empty())
        {
            return p;
        }
        assert!(Instant::now() < until, "no cgroup of pid {pid} appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn page_aging_reclaims_and_removes_its_cgroup() {
    let _g = PAGE_AGING.lock().unwrap_or_else(|e| e.into_inner());
    let Some(parent) = memcg_parent() else {
        eprintln!("skipped: no usable memory cgroup (v2 memory controller or v1 memory hierarchy)");
        return;
    };
    let dir = page_aging_dir();
    let o = abperf(&["workload", "prepare", "page-aging", "data=16M", &dir]);
    assert!(o.status.success(), "{}", text(&o));
    for (pattern, op) in [("seq", "read"), ("random", "write"), ("hot", "read")] {
        let args = [
            "page-aging",
            "data=16M",
            "memory_max=8M",
            &dir,
            &format!("pattern={pattern}"),
            &format!("op={op}"),
            "seed=5",
        ];
        let child = Command::new(bin())
            .args(["workload", "exec"])
            .args(args)
            .env(
                "ABPERF_METRICS_FILE",
                scratch("page-aging").join(format!("m-{pattern}-{op}.jsonl")),
            )
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{pattern} {op}: {}", text(&o));
        let mf = scratch("page-aging").join(format!("m-{pattern}-{op}.jsonl"));
        let ms: BTreeMap<String, Metric> = abperf::workload::metrics::read_file(&mf)
            .unwrap()
            .into_iter()
            .map(|m| (m.name.clone(), m))
            .collect();
        std::fs::remove_file(&mf).unwrap();
        check_declared("page-aging", &ms);
        assert_eq!(ms["accesses"].value, 4096.0, "one pass over 16M");
        for k in ["pages_scanned", "pages_reclaimed", "major_faults"] {
            assert!(
                ms[k].value > 0.0,
                "{pattern} {op}: reclaim happened: {ms:?}"
            );
        }
        if pattern != "seq" {
            // the cgroup's own evidence: pages it lost came back (one pass of seq re-reads none)
            assert!(ms["refaults"].value > 0.0, "{pattern} {op}: {ms:?}");
        }
        assert!(
            cgroups_of(&parent, pid).is_empty(),
            "cgroup of {pid} removed: {:?}",
            cgroups_of(&parent, pid)
        );
    }
}

#[test]
fn page_aging_cleans_up_on_sigint_and_after_sigkill() {
    let _g = PAGE_AGING.lock().unwrap_or_else(|e| e.into_inner());
    let Some(parent) = memcg_parent() else {
        eprintln!("skipped: no usable memory cgroup");
        return;
    };
    let dir = page_aging_dir();
    // many passes: far longer than the test waits
    let args = [
        "workload",
        "exec",
        "page-aging",
        "data=16M",
        "memory_max=8M",
        "pattern=random",
        "passes=1000",
        &dir,
    ];
    let o = abperf(&["workload", "prepare", "page-aging", "data=16M", &dir]);
    assert!(o.status.success(), "{}", text(&o));

    // SIGINT: the child is stopped, the cgroup removed, exit 130
    let child = Command::new(bin())
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let cg = wait_for_cgroup(&parent, pid);
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("stopped by signal 2, cleaned up"),
        "{}",
        text(&o)
    );
    assert!(!cg.exists(), "{} removed after SIGINT", cg.display());

    // SIGKILL: nothing can clean up; the cgroup stays, empty (the access child dies with it)
    let mut child = Command::new(bin())
        .args(args)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let cg = wait_for_cgroup(&parent, pid);
    child.kill().unwrap();
    child.wait().unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(cg.join("cgroup.procs")).is_ok_and(|s| !s.trim().is_empty()) {
        assert!(
            Instant::now() < until,
            "the access child outlived its parent"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(cg.exists(), "a SIGKILLed run leaves {}", cg.display());
    // the next run recognises it (prefix + dead owner) and removes it
    let o = abperf(&["workload", "prepare", "page-aging", "data=16M", &dir]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!cg.exists(), "{} removed by the next run", cg.display());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains(&format!(
            "removed cgroup {} left by a run that was killed",
            cg.display()
        )),
        "{e}"
    );
}

#[test]
fn page_aging_anon_needs_swap() {
    let _g = PAGE_AGING.lock().unwrap_or_else(|e| e.into_inner());
    if memcg_parent().is_none() {
        eprintln!("skipped: no usable memory cgroup");
        return;
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let swap_kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("SwapTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    let (o, ms) = exec(&[
        "page-aging",
        "backing=anon",
        "data=32M",
        "memory_max=16M",
        "pattern=hot",
    ]);
    if swap_kib == 0 {
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.contains("backing=anon needs swap") && e.contains("SwapTotal: 0 kB"),
            "{e}"
        );
    } else {
        assert!(o.status.success(), "{}", text(&o));
        check_declared("page-aging", &ms);
        assert!(ms["pages_scanned"].value > 0.0, "{ms:?}");
    }
}

// ---- kbuild ----

fn on_path(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
}

#[test]
fn kbuild_builds_one_directory() {
    let has_src = std::fs::read_dir("/usr/src").is_ok_and(|rd| {
        rd.flatten().any(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("linux-source-") && n.contains(".tar.")
        })
    });
    if !has_src {
        eprintln!("skipped: no /usr/src/linux-source-*.tar.* (apt-get install linux-source)");
        return;
    }
    let missing: Vec<&str> = ["make", "gcc", "bc", "flex", "bison", "xz", "tar"]
        .into_iter()
        .filter(|c| !on_path(c))
        .collect();
    if !missing.is_empty() {
        eprintln!("skipped: kernel build tools missing: {missing:?}");
        return;
    }
    // the unpacked tree is cached (default cache dir); the build directory is the test's own
    let out = format!("out={}", scratch("kbuild-out").display());
    let o = abperf(&["workload", "prepare", "kbuild", "dirs=init", &out]);
    assert!(o.status.success(), "{}", text(&o));
    let (o, ms) = exec(&["kbuild", "dirs=init", &out, "jobs=2"]);
    assert!(o.status.success(), "{}", text(&o));
    check_declared("kbuild", &ms);
    assert!(
        ms["files_compiled"].value >= 3.0,
        "init/ has several files: {ms:?}"
    );
    assert!(ms["cpu_user_ns"].value > 0.0);
    // the prepare marker was consumed: another timed run without prepare is refused
    let (o, _) = exec(&["kbuild", "dirs=init", &out]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("is not prepared"),
        "{}",
        text(&o)
    );
    // a directory that is not in the tree (checked before the prepare marker)
    let (o, _) = exec(&["kbuild", "dirs=no/such/dir", &out]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("dirs=no/such/dir"),
        "{}",
        text(&o)
    );
}

// ---- flush-storm under the tracer ----

#[test]
fn flush_storm_trace_shows_full_partial_and_remote_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let o = Command::new(bin())
        .args([
            "trace",
            "record",
            "-q",
            "-e",
            "tlb:tlb_flush",
            "--",
            bin(),
            "workload",
            "exec",
            "flush-storm",
            "ops=3000",
            "seed=1",
        ])
        .env("ABPERF_DB", &db)
        .env_remove("ABPERF_METRICS_FILE")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let o = Command::new(bin())
        .args(["trace", "report", "latest", "--format", "json"])
        .env("ABPERF_DB", &db)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    let (mut full, mut partial, mut remote) = (0, 0, 0);
    for r in j["trace"]["tlb"]["rows"].as_array().unwrap() {
        let n = r["count"].as_u64().unwrap();
        let reason = r["reason_name"].as_str().unwrap_or("");
        let pages = r["pages"].as_i64().unwrap();
        if reason == "remote shootdown" || reason == "remote IPI send" {
            remote += n;
        } else if reason.starts_with("local") {
            if pages == -1 {
                full += n;
            } else if (1..=33).contains(&pages) {
                partial += n;
            }
        }
    }
    assert!(full > 0, "full flushes (pages -1): {j}");
    assert!(partial > 1000, "partial flushes: {partial}");
    if cpus() >= 2 {
        assert!(remote > 0, "remote shootdowns: {j}");
    } else {
        eprintln!("remote shootdowns not checked: one CPU");
    }
}
