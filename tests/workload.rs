//! `abperf workload` against the real binary and kernel: every workload runs with reduced sizes
//! and reports its declared metrics; page-aging reclaims inside its own memory cgroup and removes
//! it (also on SIGINT, and a cgroup left by a SIGKILLed run is removed by the next run); kbuild
//! builds one directory of Debian's linux-source; flush-storm's tlb_flush trace shows full,
//! partial and remote flushes.
//!
//! As variants of `abperf run` (`@NAME`): seed 001's six page-aging tests through SIGINT, kill -9
//! and resume, with every cgroup removed; per-run seeds that reproduce; compare judging a
//! workload's rate higher-is-better; usage errors before anything runs; a failing workload as a
//! failed run; three reduced kernel builds.
//!
//! Skips happen only on independent probes of the machine (mountinfo, /proc/meminfo, /usr/src,
//! PATH, the CPU affinity mask), each printed.

#![allow(clippy::disallowed_macros)] // tests print what they saw to stderr
mod common;

use abperf::workload::metrics::{Direction, METRICS_ENV, Metric};
use common::{BIN, Lab, Out};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// page-aging tests run one at a time: one of them leaves a cgroup behind on purpose, which any
/// other page-aging run of this process would remove.
static PAGE_AGING: Mutex<()> = Mutex::new(());

/// A scratch directory on the target's disk (page-aging refuses tmpfs).
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("workload-{name}"));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `workload exec` with the metrics file protocol; metrics by name.
fn exec(args: &[&str]) -> (Out, BTreeMap<String, Metric>) {
    let lab = Lab::new();
    let mf = lab.path("metrics.jsonl");
    let mut a = vec!["workload", "exec"];
    a.extend_from_slice(args);
    let o = Out::from(
        lab.cmd(&a)
            .env(METRICS_ENV, &mf)
            .output()
            .expect("abperf runs"),
        &a,
    );
    let ms = if o.code == Some(0) {
        abperf::workload::metrics::read_file(&mf).unwrap_or_else(|e| panic!("{e:#}\n{o}"))
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
    let o = Lab::new().run(&["workload", "list"]);
    assert_eq!(o.code, Some(0), "{o}");
    let s = o.stdout;
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
    let o = Lab::new().run(&["workload", "list", "--format", "json"]);
    let j: Value = o.json();
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
    let o = Lab::new().run(&["workload", "show", "page-aging", "--format", "json"]);
    assert_eq!(o.code, Some(0), "{o}");
    let j: Value = o.json();
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
    let o = Lab::new().run(&["workload", "show", "kbuild"]);
    let s = o.stdout;
    assert!(
        s.contains("kernel paths:") && s.contains("config=tinyconfig") && s.contains("prepare:"),
        "{s}"
    );
    let o = Lab::new().run(&["workload", "show", "nope"]);
    assert_eq!(o.code, Some(2), "{o}");
    assert!(o.stderr.contains("workloads: page-aging, kbuild"));
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
        let o = Lab::new().run(&a);
        assert_eq!(o.code, Some(2), "{args:?}: {o}");
        let e = o.stderr;
        assert!(e.contains(want), "{args:?}: want {want:?} in {e}");
    }
    // values that only the run can check: exit 1 with a message naming the parameter
    let o = Lab::new().run(&["workload", "exec", "fork-exec", "exec=/nonexistent/prog"]);
    assert_eq!(o.code, Some(1), "{o}");
    assert!(o.stderr.contains("exec=/nonexistent/prog"));
    let too_many = (cpus() + 1).to_string();
    let o = Lab::new().run(&[
        "workload",
        "exec",
        "flush-storm",
        &format!("threads={too_many}"),
    ]);
    assert_eq!(o.code, Some(1), "{o}");
    assert!(o.stderr.contains("distinct CPUs"), "{}", o);
}

#[test]
fn metrics_go_to_stderr_without_the_file() {
    let o = Lab::new().run(&[
        "workload",
        "exec",
        "pagefault",
        "size=4M",
        "loops=1",
        "seed=3",
    ]);
    assert_eq!(o.code, Some(0), "{o}");
    let e = o.stderr;
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
        assert_eq!(o.code, Some(0), "{r:?}: {o}");
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
        assert_eq!(o.code, Some(0), "{o}");
        check_declared("ctxsw", &ms);
    } else {
        common::skip("ctxsw cpus=split not run: one CPU");
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
        common::skip("no usable memory cgroup (v2 memory controller or v1 memory hierarchy)");
        return;
    };
    let dir = page_aging_dir();
    let lab = Lab::new();
    lab.ok(&["workload", "prepare", "page-aging", "data=16M", &dir]);
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
        let mut a = vec!["workload", "exec"];
        a.extend_from_slice(&args);
        let child = lab
            .cmd(&a)
            .env(
                METRICS_ENV,
                scratch("page-aging").join(format!("m-{pattern}-{op}.jsonl")),
            )
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let o = Out::from(child.wait_with_output().unwrap(), &a);
        assert_eq!(o.code, Some(0), "{pattern} {op}: {o}");
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
        common::skip("no usable memory cgroup");
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
    let lab = Lab::new();
    lab.ok(&["workload", "prepare", "page-aging", "data=16M", &dir]);

    // SIGINT: the child is stopped, the cgroup removed, exit 130
    let child = lab.cmd(&args).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let cg = wait_for_cgroup(&parent, pid);
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let o = Out::from(child.wait_with_output().unwrap(), &args);
    assert_eq!(o.code, Some(130), "{o}");
    assert!(o.stderr.contains("stopped by signal 2, cleaned up"), "{o}");
    assert!(!cg.exists(), "{} removed after SIGINT", cg.display());

    // SIGKILL: nothing can clean up; the cgroup stays, empty (the access child dies with it)
    let mut child = lab.cmd(&args).stderr(Stdio::null()).spawn().unwrap();
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
    let o = lab.ok(&["workload", "prepare", "page-aging", "data=16M", &dir]);
    assert!(!cg.exists(), "{} removed by the next run", cg.display());
    let e = o.stderr;
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
        common::skip("no usable memory cgroup");
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
        assert_eq!(o.code, Some(1), "{o}");
        let e = o.stderr;
        assert!(
            e.contains("backing=anon needs swap") && e.contains("SwapTotal: 0 kB"),
            "{e}"
        );
    } else {
        assert_eq!(o.code, Some(0), "{o}");
        check_declared("page-aging", &ms);
        assert!(ms["pages_scanned"].value > 0.0, "{ms:?}");
    }
}

// ---- kbuild ----

/// Why a kernel build cannot run here (probed independently of abperf), if it cannot: Debian's
/// source tarball installed in /usr/src or unpacked by scripts/test.sh into the default cache
/// (`~/.cache/abperf/debian-source/usr/src`), and the build tools on $PATH.
fn kbuild_missing() -> Option<String> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let cache = std::env::var_os("ABPERF_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|p| PathBuf::from(p).join("abperf")))
        .unwrap_or_else(|| home.join(".cache/abperf"));
    let dirs = [
        PathBuf::from("/usr/src"),
        cache.join("debian-source/usr/src"),
    ];
    let has_src = dirs.iter().any(|d| {
        std::fs::read_dir(d).is_ok_and(|rd| {
            rd.flatten().any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with("linux-source-") && n.contains(".tar.")
            })
        })
    });
    if !has_src {
        return Some(format!(
            "no linux-source-*.tar.* in {dirs:?} (scripts/test.sh downloads it into the cache)"
        ));
    }
    let missing: Vec<&str> = ["make", "gcc", "bc", "flex", "bison", "xz", "tar"]
        .into_iter()
        .filter(|c| !common::on_path(c))
        .collect();
    (!missing.is_empty()).then(|| format!("kernel build tools missing: {missing:?}"))
}

#[test]
fn kbuild_builds_one_directory() {
    if let Some(why) = kbuild_missing() {
        common::skip(&why);
        return;
    }
    // the unpacked tree is cached (default cache dir); the build directory is the test's own
    let out = format!("out={}", scratch("kbuild-out").display());
    let o = Lab::new().run(&["workload", "prepare", "kbuild", "dirs=init", &out]);
    assert_eq!(o.code, Some(0), "{o}");
    let (o, ms) = exec(&["kbuild", "dirs=init", &out, "jobs=2"]);
    assert_eq!(o.code, Some(0), "{o}");
    check_declared("kbuild", &ms);
    assert!(
        ms["files_compiled"].value >= 3.0,
        "init/ has several files: {ms:?}"
    );
    assert!(ms["cpu_user_ns"].value > 0.0);
    // the prepare marker was consumed: another timed run without prepare is refused
    let (o, _) = exec(&["kbuild", "dirs=init", &out]);
    assert_eq!(o.code, Some(1), "{o}");
    assert!(o.stderr.contains("is not prepared"), "{}", o);
    // a directory that is not in the tree (checked before the prepare marker)
    let (o, _) = exec(&["kbuild", "dirs=no/such/dir", &out]);
    assert_eq!(o.code, Some(1), "{o}");
    assert!(o.stderr.contains("dirs=no/such/dir"), "{}", o);
}

// ---- flush-storm under the tracer ----

#[test]
fn flush_storm_trace_shows_full_partial_and_remote_flushes() {
    let lab = Lab::new();
    lab.ok(&[
        "trace",
        "record",
        "-q",
        "-e",
        "tlb:tlb_flush",
        "--",
        BIN,
        "workload",
        "exec",
        "flush-storm",
        "ops=3000",
        "seed=1",
    ]);
    let j = lab
        .ok(&["trace", "report", "latest", "--format", "json"])
        .json();
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

// ---- workloads as variants of `abperf run` ----

/// Where the page-aging cgroups of the abperf processes a test starts go. On the cgroup v1
/// memory hierarchy (cgroups made inside the caller's own memory cgroup) the test makes a memory
/// cgroup of its own and starts abperf in it, so every workload cgroup of that abperf lands there
/// and nowhere else; on cgroup v2 (made at the root, shared) the checks are on the cgroups seen.
struct CgScope {
    parent: PathBuf,
    own: Option<PathBuf>,
}

impl CgScope {
    fn new(tag: &str) -> Option<CgScope> {
        let parent = memcg_parent()?;
        if !parent.join("memory.limit_in_bytes").exists() {
            return Some(CgScope { parent, own: None });
        }
        let own = parent.join(format!("abperf-test.{}.{tag}", std::process::id()));
        std::fs::create_dir(&own).unwrap_or_else(|e| panic!("{}: {e}", own.display()));
        Some(CgScope {
            parent: own.clone(),
            own: Some(own),
        })
    }

    /// `abperf ARGS` in the lab, inside this scope's memory cgroup (v1).
    fn cmd(&self, lab: &Lab, args: &[&str]) -> std::process::Command {
        let mut c = lab.cmd(args);
        if let Some(own) = &self.own {
            use std::os::unix::ffi::OsStrExt;
            use std::os::unix::process::CommandExt;
            let procs =
                std::ffi::CString::new(own.join("cgroup.procs").as_os_str().as_bytes()).unwrap();
            // SAFETY: between fork and exec: open/write/close only, on memory made before.
            unsafe {
                c.pre_exec(move || {
                    let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
                    if fd < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    let n = libc::write(fd, b"0".as_ptr().cast(), 1);
                    libc::close(fd);
                    if n != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        c
    }

    fn run(&self, lab: &Lab, args: &[&str]) -> Out {
        Out::from(self.cmd(lab, args).output().expect("abperf runs"), args)
    }

    /// Every workload cgroup (abperf-wl.*) under the scope's parent.
    fn cgroups(&self) -> Vec<PathBuf> {
        std::fs::read_dir(&self.parent)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("abperf-wl."))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A workload cgroup with a process in it, made after `before` (waits up to 60 s).
    fn wait_for_new(&self, before: &[PathBuf]) -> PathBuf {
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            for p in self.cgroups() {
                if !before.contains(&p)
                    && std::fs::read_to_string(p.join("cgroup.procs"))
                        .is_ok_and(|s| !s.trim().is_empty())
                {
                    return p;
                }
            }
            assert!(Instant::now() < until, "no workload cgroup appeared");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for CgScope {
    fn drop(&mut self) {
        if let Some(own) = &self.own {
            let until = Instant::now() + Duration::from_secs(5);
            while std::fs::remove_dir(own).is_err() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// The owner of a workload cgroup `abperf-wl.<pid>.<start>`, if it still runs: its pid.
fn live_owner(cg: &Path) -> Option<i32> {
    let name = cg.file_name()?.to_string_lossy().into_owned();
    let (pid, start) = name.strip_prefix("abperf-wl.")?.split_once('.')?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let now = stat[stat.rfind(')')? + 1..].split_whitespace().nth(19)?;
    (now == start).then(|| pid.parse().ok())?
}

fn wait_empty(cg: &Path) {
    let until = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(cg.join("cgroup.procs")).is_ok_and(|s| !s.trim().is_empty()) {
        assert!(
            Instant::now() < until,
            "{} still has processes",
            cg.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Seed 001's six tests as one experiment (reduced sizes: 16 MiB in an 8 MiB cgroup), through
/// SIGINT, a kill -9 of abperf and of the workload, and two resumes: every run reclaims, every
/// cgroup is removed, the workload is stored with the variants and its metrics with their
/// directions. The steps, each checked by a test of its own:
struct SixVariants {
    scope: CgScope,
    lab: Lab,
    /// The experiment's `abperf run` arguments.
    args: Vec<String>,
}

impl SixVariants {
    /// The experiment in a fresh lab and memory cgroup scope (None: no usable memory cgroup,
    /// reported skipped). The caller holds [`PAGE_AGING`].
    fn new(tag: &str) -> Option<SixVariants> {
        let Some(scope) = CgScope::new(tag) else {
            common::skip("no usable memory cgroup");
            return None;
        };
        let dir = scratch("page-aging").display().to_string();
        let cmd = format!("@page-aging:data=16M,memory_max=8M,dir={dir}");
        let args = [
            "run",
            "-r",
            "1",
            "--warmup",
            "0",
            "--seed",
            "1001",
            &cmd,
            "-L",
            "pattern=seq,random,hot",
            "-L",
            "op=read,write",
        ];
        let args = args.iter().map(|a| a.to_string()).collect();
        Some(SixVariants {
            scope,
            lab: Lab::new(),
            args,
        })
    }

    /// Step 1, SIGINT while a workload runs: what abperf did, the workload's cgroup, and the
    /// experiment's id.
    fn interrupt(&self) -> (Out, PathBuf, String) {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let child = self
            .scope
            .cmd(&self.lab, &args)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let cg = self.scope.wait_for_new(&[]);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let o = Out::from(child.wait_with_output().unwrap(), &args);
        let id = self.lab.store().list().unwrap()[0].id.to_string();
        (o, cg, id)
    }

    /// Step 2, kill -9 of abperf and of the workload during a resume: the workload's cgroup.
    fn kill(&self, id: &str) -> PathBuf {
        let before = self.scope.cgroups();
        let mut child = self
            .scope
            .cmd(&self.lab, &["run", "--resume", id])
            .stderr(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let cg = self.scope.wait_for_new(&before);
        child.kill().unwrap();
        child.wait().unwrap();
        if let Some(pid) = live_owner(&cg) {
            // SAFETY: the workload abperf started for us (pid and start time checked).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        wait_empty(&cg);
        cg
    }

    /// Step 3, the resume that finishes the experiment.
    fn resume(&self, id: &str) -> Out {
        self.scope.run(&self.lab, &["run", "--resume", id])
    }
}

/// The six variants run through all three steps, exported as JSON, in a lab that the tests of
/// the stored experiment share (built once, under [`PAGE_AGING`]; None: skipped).
struct SixStored {
    lab: Lab,
    id: String,
    export: Value,
}

fn six_stored() -> Option<&'static SixStored> {
    static STORED: std::sync::OnceLock<Option<SixStored>> = std::sync::OnceLock::new();
    let mut made_here = false;
    let stored = STORED
        .get_or_init(|| {
            made_here = true;
            let six = SixVariants::new("six-stored")?;
            let (o, _, id) = six.interrupt();
            assert_eq!(o.code, Some(130), "{o}");
            six.kill(&id);
            let o = six.resume(&id);
            assert_eq!(o.code, Some(0), "{o}");
            let SixVariants { scope, lab, .. } = six;
            drop(scope);
            let export = lab.ok(&["export", &id, "--format", "json"]).json();
            Some(SixStored { lab, id, export })
        })
        .as_ref();
    if stored.is_none() && !made_here {
        // The test that tried first reported its skip; this one reports its own.
        common::skip("no usable memory cgroup");
    }
    stored
}

// SIGINT while a workload runs: interrupted (130), its cgroup removed by abperf
#[test]
fn run_page_aging_sigint_interrupts_and_removes_the_cgroup() {
    let _g = PAGE_AGING.lock().unwrap_or_else(|e| e.into_inner());
    let Some(six) = SixVariants::new("six-sigint") else {
        return;
    };
    let (o, cg, _) = six.interrupt();
    assert_eq!(o.code, Some(130), "{o}");
    assert!(o.stderr.contains("interrupted by SIGINT"), "{o}");
    assert!(!cg.exists(), "{} removed after SIGINT: {o}", cg.display());
    assert!(
        o.stderr.contains(&format!(
            "removed cgroup {} left by a run that was killed",
            cg.display()
        )),
        "{o}"
    );
    assert_eq!(six.scope.cgroups(), Vec::<PathBuf>::new());
}

// kill -9 of abperf and of the workload: the cgroup stays (empty) until the resume; the resume's
// prepare step removes it; every variant gets its run
#[test]
fn run_page_aging_kill_9_leaves_the_cgroup_until_the_resume() {
    let _g = PAGE_AGING.lock().unwrap_or_else(|e| e.into_inner());
    let Some(six) = SixVariants::new("six-kill") else {
        return;
    };
    let (o, _, id) = six.interrupt();
    assert_eq!(o.code, Some(130), "{o}");
    let cg = six.kill(&id);
    assert!(cg.exists(), "a killed run leaves {}", cg.display());
    let o = six.resume(&id);
    assert_eq!(o.code, Some(0), "{o}");
    assert!(!cg.exists(), "{} removed by the resume", cg.display());
    assert_eq!(six.scope.cgroups(), Vec::<PathBuf>::new(), "no cgroup left");
}

#[test]
fn run_page_aging_six_variants_are_stored_with_the_workload() {
    let _g = PAGE_AGING.lock().unwrap_or_else(|e| e.into_inner());
    let Some(six) = six_stored() else {
        return;
    };
    let j = &six.export;
    common::assert_schema(j);
    let variants = j["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 6);
    let mut names: Vec<String> = Vec::new();
    for v in variants {
        let w = &v["workload"];
        assert_eq!(w["name"], "page-aging", "{v}");
        assert_eq!(w["version"], 1, "{v}");
        assert_eq!(w["per_run_seed"], true, "{v}");
        assert_eq!(w["params"]["data"], "16M", "{v}");
        assert_eq!(w["params"]["pattern"], v["parameters"]["pattern"], "{v}");
        assert_eq!(w["params"]["op"], v["parameters"]["op"], "{v}");
        names.push(v["name"].as_str().unwrap().to_string());
    }
    names.sort();
    assert_eq!(
        names,
        [
            "op=read pattern=hot",
            "op=read pattern=random",
            "op=read pattern=seq",
            "op=write pattern=hot",
            "op=write pattern=random",
            "op=write pattern=seq"
        ]
    );
}

#[test]
fn run_page_aging_six_variants_run_once_each_and_reclaim() {
    let _g = PAGE_AGING.lock().unwrap_or_else(|e| e.into_inner());
    let Some(six) = six_stored() else {
        return;
    };
    let runs = six.export["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6, "one run per variant, none twice");
    for r in runs {
        assert_eq!(r["status"], "ok", "{r}");
        let m = &r["metrics"];
        assert_eq!(m["accesses"], 4096.0, "one pass over 16M: {r}");
        for k in ["pages_scanned", "pages_reclaimed", "major_faults"] {
            assert!(m[k].as_f64().unwrap() > 0.0, "reclaim happened: {k} in {r}");
        }
        assert!(m["accesses_per_s"].as_f64().unwrap() > 0.0, "{r}");
        assert!(m["wall_ns"].as_f64().unwrap() > 0.0, "{r}");
    }
}

#[test]
fn run_page_aging_metrics_keep_their_declared_directions() {
    let _g = PAGE_AGING.lock().unwrap_or_else(|e| e.into_inner());
    let Some(six) = six_stored() else {
        return;
    };
    let j = &six.export;
    let dir_of = |name: &str| {
        j["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {j}"))["direction"]
            .clone()
    };
    assert_eq!(dir_of("accesses_per_s"), "higher-is-better");
    assert_eq!(dir_of("access_time_ns"), "lower-is-better");
    // declared counts, whatever their unit (pages) would suggest
    assert_eq!(dir_of("pages_scanned"), "count");
    assert_eq!(dir_of("refaults"), "count");
}

#[test]
fn run_page_aging_show_names_the_workload() {
    let _g = PAGE_AGING.lock().unwrap_or_else(|e| e.into_inner());
    let Some(six) = six_stored() else {
        return;
    };
    six.lab
        .ok(&["show", &six.id])
        .has("workload page-aging version 1, seed per run");
}

/// Each run's seed is the experiment's seed plus its sequence number: the same experiment seed
/// gives the same operation sequences, and `workload exec ... seed=S+seq` reproduces a run.
#[test]
fn run_seeds_are_per_run_and_deterministic() {
    let pages = |lab: &Lab| -> Vec<f64> {
        lab.ok(&[
            "run",
            "-r",
            "2",
            "--warmup",
            "1",
            "--seed",
            "77",
            "@flush-storm:ops=300,threads=1",
        ]);
        let j = lab.ok(&["export", "latest", "--format", "json"]).json();
        let runs = j["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 3);
        runs.iter()
            .enumerate()
            .map(|(i, r)| {
                assert_eq!(r["seq"], i, "{r}");
                r["metrics"]["pages"].as_f64().unwrap()
            })
            .collect()
    };
    let a = pages(&Lab::new());
    let b = pages(&Lab::new());
    assert_eq!(a, b, "same experiment seed, same sequences");
    assert!(
        a[0] != a[1] && a[1] != a[2],
        "every run its own seed: {a:?}"
    );
    let (o, ms) = exec(&["flush-storm", "ops=300", "threads=1", "seed=79"]);
    assert_eq!(o.code, Some(0), "{o}");
    assert_eq!(ms["pages"].value, a[2], "seq 2 ran with seed 77 + 2");
    // a seed fixed in the command holds for every run
    let lab = Lab::new();
    lab.ok(&[
        "run",
        "-r",
        "2",
        "--warmup",
        "0",
        "@flush-storm:ops=300,threads=1,seed=79",
    ]);
    let j = lab.ok(&["export", "latest", "--format", "json"]).json();
    for r in j["runs"].as_array().unwrap() {
        assert_eq!(r["metrics"]["pages"].as_f64().unwrap(), a[2], "{r}");
    }
    assert_eq!(j["variants"][0]["workload"]["per_run_seed"], false);
    assert_eq!(j["variants"][0]["workload"]["params"]["seed"], "79");
}

/// A workload experiment's compare judges its rate as higher-is-better, says so, and its
/// declared counts as counts.
#[test]
fn run_compare_judges_workload_rates_higher_is_better() {
    let lab = Lab::new();
    lab.ok(&[
        "run",
        "-r",
        "4",
        "--warmup",
        "0",
        "--seed",
        "3",
        "@flush-storm:ops=1000",
        "-L",
        "syscalls=madvise,mprotect",
    ]);
    let o = lab.ok(&["compare", "latest", "--metric", "ops_per_s", "--details"]);
    assert!(
        o.stdout.contains(
            "ops_per_s: syscalls=mprotect vs syscalls=madvise (baseline), higher is better"
        ),
        "{o}"
    );
    let j = lab
        .ok(&[
            "compare",
            "latest",
            "--metric",
            "ops_per_s",
            "--metric",
            "pages",
            "--format",
            "json",
        ])
        .json();
    common::assert_schema(&j);
    let cs = j["analysis"]["comparisons"].as_array().unwrap();
    let c = |m: &str| cs.iter().find(|c| c["metric"] == m).unwrap();
    assert_eq!(c("ops_per_s")["higher_is_better"], true, "{j}");
    assert_eq!(c("pages")["higher_is_better"], false, "{j}");
    let m = j["metrics"].as_array().unwrap();
    let d = |n: &str| m.iter().find(|x| x["name"] == n).unwrap()["direction"].clone();
    assert_eq!(d("ops_per_s"), "higher-is-better");
    assert_eq!(d("pages"), "count", "declared a count (unit: pages)");
    assert_eq!(d("ns_per_op"), "lower-is-better");
}

/// Bad workload commands are usage errors before anything runs or is stored.
#[test]
fn run_workload_mistakes_are_usage_errors() {
    let lab = Lab::new();
    let cases: &[(&[&str], &str)] = &[
        (
            &["@page-aging", "-L", "pattern=seq,zigzag", "-L", "op=read"],
            "variant 'op=read pattern=zigzag': page-aging: pattern=zigzag: expected one of seq, \
             random, hot",
        ),
        (
            &["@page-aging:pattern={p}", "-L", "p=seq,zigzag"],
            "variant 'p=zigzag': page-aging: pattern=zigzag: expected one of seq, random, hot",
        ),
        (
            &["@nope"],
            "unknown workload \"nope\" (workloads: page-aging, kbuild",
        ),
        (
            &["@page-aging:pattern=seq", "-L", "pattern=seq,hot"],
            "fixes pattern=seq and -L pattern=seq,hot lists it too",
        ),
        (
            &["@ctxsw", "-L", "colour=red,blue"],
            "-L colour=red,blue: not a parameter of the workload (ctxsw: round_trips, mode, cpus, \
             seed)",
        ),
        (&["@ctxsw mode=threads"], "no spaces"),
        (
            &["@ctxsw:round_trips=0"],
            "round_trips=0: expected an integer",
        ),
        (
            &["--kernel", "/boot/vmlinuz", "@ctxsw"],
            "built-in workloads (@NAME) as variants of kernel experiments",
        ),
    ];
    for (args, want) in cases {
        let mut a = vec!["run", "-r", "1"];
        a.extend_from_slice(args);
        let o = lab.fails(&a, 2);
        assert!(o.stderr.contains(want), "want {want:?}: {o}");
    }
    assert!(lab.store().list().unwrap().is_empty(), "nothing stored");
}

/// A workload that fails is a failed run showing what it said (here: page-aging's anonymous
/// backing without swap), and the experiment stops.
#[test]
fn run_failing_workload_is_a_failed_run() {
    let _g = PAGE_AGING.lock().unwrap_or_else(|e| e.into_inner());
    if memcg_parent().is_none() {
        common::skip("no usable memory cgroup");
        return;
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let swap = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("SwapTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap();
    if swap > 0 {
        common::skip("this machine has swap, so backing=anon works");
        return;
    }
    let lab = Lab::new();
    let o = lab.fails(
        &[
            "run",
            "-r",
            "1",
            "--warmup",
            "0",
            "@page-aging:backing=anon,data=32M,memory_max=16M",
        ],
        1,
    );
    assert!(
        o.stderr.contains("exited with status 1") && o.stderr.contains("needs swap"),
        "{o}"
    );
    let j = lab.ok(&["export", "latest", "--format", "json"]).json();
    assert_eq!(j["runs"][0]["status"], "failed");
    assert_eq!(j["runs"][0]["metrics"]["accesses_per_s"], Value::Null);
}

/// `run -r 3 @kbuild` with a reduced build (one directory): the prepare step (configure, make
/// clean, make prepare) runs untimed before every run, every run compiles, and the runs are
/// stored with kbuild's metrics.
#[test]
fn run_kbuild_three_reduced_builds() {
    if let Some(why) = kbuild_missing() {
        common::skip(&why);
        return;
    }
    let lab = Lab::new();
    let out = scratch("kbuild-run-out").display().to_string();
    let cmd = format!("@kbuild:dirs=init,out={out}");
    let o = lab.ok(&["run", "-r", "3", "--warmup", "0", "--seed", "5", &cmd]);
    assert!(o.stderr.contains("for seed 003's recipe add"), "{o}");
    let j = lab.ok(&["export", "latest", "--format", "json"]).json();
    common::assert_schema(&j);
    assert_eq!(j["variants"][0]["workload"]["name"], "kbuild");
    assert_eq!(
        j["variants"][0]["workload"]["params"]["config"],
        "tinyconfig"
    );
    let runs = j["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    for r in runs {
        assert_eq!(r["status"], "ok", "{r}");
        let m = &r["metrics"];
        assert!(m["files_compiled"].as_f64().unwrap() >= 3.0, "{r}");
        assert!(m["build_ns"].as_f64().unwrap() > 0.0, "{r}");
        assert!(
            m["build_ns"].as_f64().unwrap() <= m["wall_ns"].as_f64().unwrap(),
            "the build is inside the timed run: {r}"
        );
    }
    let m = j["metrics"].as_array().unwrap();
    let d = |n: &str| m.iter().find(|x| x["name"] == n).unwrap()["direction"].clone();
    assert_eq!(d("files_compiled"), "count");
    assert_eq!(d("build_ns"), "lower-is-better");
}

/// `run --resume` refuses an experiment whose workload variant was made with another version of
/// the workload (its runs would measure something else), naming variant, workload and versions;
/// with the version this abperf has, the same experiment resumes.
#[test]
fn run_resume_refuses_another_workload_version() {
    let lab = Lab::new();
    lab.ok(&["run", "-r", "1", "--warmup", "0", "@ctxsw:round_trips=200"]);
    let id = lab.store().list().unwrap()[0].id;
    lab.store()
        .set_status(id, abperf::model::Status::Interrupted)
        .unwrap();
    let set_version = |v: u32| {
        let c = rusqlite::Connection::open(lab.db()).unwrap();
        let n = c
            .execute(
                "UPDATE variant SET workload = json_set(workload, '$.version', ?1)
                 WHERE experiment_id = ?2",
                rusqlite::params![v, id],
            )
            .unwrap();
        assert_eq!(n, 1);
    };
    set_version(99);
    let o = lab.fails(&["run", "--resume", &id.to_string()], 1);
    assert!(
        o.stderr.contains(&format!(
            "experiment {id}: variant '@ctxsw:round_trips=200' ran workload ctxsw version 99; \
             this abperf has version 1"
        )),
        "{o}"
    );
    let j = lab.ok(&["export", "latest", "--format", "json"]).json();
    assert_eq!(j["runs"].as_array().unwrap().len(), 1, "nothing ran: {j}");
    set_version(1);
    lab.store()
        .set_status(id, abperf::model::Status::Interrupted)
        .unwrap();
    let o = lab.ok(&["run", "--resume", &id.to_string()]);
    assert!(
        o.stdout.contains("complete"),
        "the same version resumes: {o}"
    );
}

/// A knob and a workload together (docs/run.md's THP example, reduced): `-k THP=always,never`
/// times `@pagefault` gives two variants, each run under its own setting (with `never` every
/// 4 KiB page faults; with `always` 2 MiB pages take most of them), and the knob is restored.
#[test]
fn run_workload_with_a_knob() {
    const THP: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
    let Ok(before) = std::fs::read_to_string(THP) else {
        common::skip(&format!("{THP} is absent (no THP in this kernel)"));
        return;
    };
    let lab = Lab::new();
    let k = format!("{THP}=always,never");
    lab.ok(&[
        "run",
        "-r",
        "2",
        "--warmup",
        "0",
        "--seed",
        "9",
        "-k",
        &k,
        "@pagefault:size=16M,loops=1",
    ]);
    assert_eq!(std::fs::read_to_string(THP).unwrap(), before, "restored");
    let j = lab.ok(&["export", "latest", "--format", "json"]).json();
    common::assert_schema(&j);
    let faults = |knob: &str| -> Vec<f64> {
        j["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| {
                r["variant_name"]
                    .as_str()
                    .unwrap()
                    .ends_with(&format!("={knob}"))
            })
            .map(|r| {
                assert_eq!(r["status"], "ok", "{r}");
                r["metrics"]["faults"].as_f64().unwrap()
            })
            .collect()
    };
    for v in j["variants"].as_array().unwrap() {
        assert_eq!(v["workload"]["name"], "pagefault", "{v}");
        assert_eq!(v["knobs"][0]["path"], THP, "{v}");
    }
    let (always, never) = (faults("always"), faults("never"));
    assert_eq!((always.len(), never.len()), (2, 2), "{j}");
    for n in &never {
        assert!(*n >= 4096.0, "16M of 4 KiB pages, each a fault: {never:?}");
    }
    let fewest_never = never.iter().cloned().fold(f64::INFINITY, f64::min);
    // Huge pages need free 2 MiB blocks (no compaction for memory without MADV_HUGEPAGE with
    // the default defrag setting): probed in /proc/buddyinfo, independently of abperf.
    if free_huge_blocks() < 64 {
        common::skip(
            "faults under THP=always not compared: few free 2 MiB blocks (/proc/buddyinfo)",
        );
        return;
    }
    for a in &always {
        assert!(
            *a < fewest_never / 4.0,
            "huge pages take most faults: always {always:?}, never {never:?}"
        );
    }
}

/// Free blocks of 2 MiB or more (orders 9 and 10, 4 KiB pages) over every zone.
fn free_huge_blocks() -> u64 {
    std::fs::read_to_string("/proc/buddyinfo")
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let n: Vec<u64> = l
                .split_whitespace()
                .skip(4)
                .filter_map(|w| w.parse().ok())
                .collect();
            n.get(9).copied().unwrap_or(0) + 2 * n.get(10).copied().unwrap_or(0)
        })
        .sum()
}
