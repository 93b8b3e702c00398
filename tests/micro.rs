//! `abperf micro --quick` against the real kernel and CPU: plausible, internally consistent
//! figures, stored and exportable. Timings on a shared 2-CPU VM are noisy, so the checks compare
//! medians with margins that the effect dwarfs (an IPI is ~10x a local 1-page flush here), never
//! exact values.

mod common;
use common::Lab;
use serde_json::Value;

/// The micro section of a report (docs/report-json.md).
fn micro(report: &Value) -> &Value {
    &report["micro"]
}

fn median(report: &Value, name: &str) -> Option<f64> {
    micro(report)["rows"]
        .as_array()?
        .iter()
        .find(|m| m["variant"] == name)
        .and_then(|m| m["cycles"]["median"].as_f64())
}

fn must(report: &Value, name: &str) -> f64 {
    median(report, name)
        .unwrap_or_else(|| panic!("no measurement {name}; skips: {}", micro(report)["skips"]))
}

fn skipped(report: &Value, bench: &str, config: &str) -> Option<String> {
    micro(report)["skips"]
        .as_array()?
        .iter()
        .find(|s| s["bench"] == bench && s["config"] == config)
        .map(|s| s["reason"].as_str().unwrap_or("").to_string())
}

/// One benchmark again, quick and not stored, for a check that two configurations measured at
/// different moments failed by a margin that host noise can reach on a shared VM.
fn remeasure(bench: &str) -> Value {
    Lab::new()
        .ok(&["micro", bench, "--quick", "--format", "json", "--no-store"])
        .json()
}

#[test]
fn quick_suite_is_plausible_stored_and_exportable() {
    let lab = Lab::new();
    let r = lab.ok(&["micro", "--quick", "--format", "json"]).json();
    common::assert_schema(&r);
    let m = micro(&r);

    // Timer.
    let oh = m["timer"]["overhead"].as_f64().unwrap();
    assert!(oh > 0.0 && oh < 200.0, "timer overhead {oh}");
    assert!(m["timer"]["hz"].as_f64().unwrap() > 1e8);

    // Every summary is ordered and finite; every skip says why.
    for row in m["rows"].as_array().unwrap() {
        let c = &row["cycles"];
        let v: Vec<f64> = ["min", "p10", "median", "p90", "max"]
            .iter()
            .map(|k| c[k].as_f64().unwrap())
            .collect();
        assert!(
            v.windows(2).all(|w| w[0] <= w[1]),
            "{}: {v:?}",
            row["variant"]
        );
        assert!(c["n"].as_u64().unwrap() >= 3, "{}", row["variant"]);
    }
    for s in m["skips"].as_array().unwrap() {
        assert!(!s["reason"].as_str().unwrap().is_empty(), "{s}");
    }

    // Rounds: syscall, xstate and tlb-flush are measured in 32 rounds each, and every round
    // probed the core: independent adds retire at least as fast as a dependent chain.
    let apc = &m["adds_per_cycle"];
    let rounds = apc["n"].as_u64().unwrap();
    let expected = if cfg!(target_arch = "x86_64") { 96 } else { 64 };
    assert!(rounds >= expected, "{rounds} probed rounds: {apc}");
    assert!(apc["min"].as_f64().unwrap() > 0.9, "{apc}");
    let notes = m["notes"].to_string();
    assert!(notes.contains("SMT sibling pressure"), "{notes}");

    // Syscall: a real kernel entry costs far more than the timer's step and less than 100 us.
    let sc = must(&r, "syscall/getppid");
    assert!(sc > 50.0 && sc < 260_000.0, "getppid {sc}");

    // TLB flush: 256 pages cost more than 1, for both calls; the mprotect knee is the ceiling.
    for op in ["madvise", "mprotect"] {
        let one = must(&r, &format!("tlb-flush/{op}/touched/n=1"));
        let many = must(&r, &format!("tlb-flush/{op}/touched/n=256"));
        assert!(many > one * 1.5, "{op}: 256 pages {many} vs 1 page {one}");
    }
    let knee = m["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == "mprotect-knee")
        .expect("mprotect knee finding");
    let k = knee["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("no knee found: {}", knee["text"]));
    assert!(
        (28.0..=38.0).contains(&k),
        "mprotect knee at {k} (kernel default ceiling 33): {}",
        knee["text"]
    );

    // Shootdown: with a thread spinning on another CPU the flush needs an IPI.
    if m["remote_cpu"].is_null() {
        eprintln!("one CPU only: remote flush not checked");
    } else {
        for op in ["madvise", "mprotect"] {
            let local = must(&r, &format!("tlb-shootdown/local/{op}/touched/n=1"));
            let remote = must(&r, &format!("tlb-shootdown/spin1/{op}/touched/n=1"));
            assert!(
                remote > local + 1000.0,
                "{op}: remote {remote} vs local {local}"
            );
        }
    }

    // Xstate.
    if let Some(why) = skipped(&r, "xstate", "avx512-dirty") {
        // Only on a machine without it, by an independent probe (CPUID and XCR0).
        assert!(
            !avx512_here(),
            "AVX-512 skipped on a CPU that has it: {why}"
        );
        eprintln!("AVX-512 state not checked: {why}");
    } else {
        for state in ["clean", "sse", "avx", "avx512"] {
            let x = must(&r, &format!("xstate/xrstor/{state}/hot"));
            assert!(x > 50.0, "XRSTOR {state} {x}");
        }
        // XSAVE writes the whole area whatever the state on some CPUs (Zen 4 here): the two
        // medians are then equal but for noise, and a shift of the host between the two
        // configurations can exceed the margin. Then measure xstate once more on its own.
        let xsave = |r: &Value| {
            (
                must(r, "xstate/xsave/clean/hot"),
                must(r, "xstate/xsave/avx512/hot"),
            )
        };
        let (mut clean, mut dirty) = xsave(&r);
        if dirty < clean * 0.9 {
            eprintln!("XSAVE avx512-dirty {dirty} vs clean {clean}: measuring xstate once more");
            (clean, dirty) = xsave(&remeasure("xstate"));
        }
        assert!(
            dirty >= clean * 0.9,
            "XSAVE avx512-dirty {dirty} cheaper than clean {clean} (measured twice)"
        );
        // XSAVEC skips components in their init state: dirty AVX-512 means 2 KiB more to write.
        let cc = must(&r, "xstate/xsavec/clean/hot");
        let cd = must(&r, "xstate/xsavec/avx512/hot");
        assert!(cd > cc, "XSAVEC avx512-dirty {cd} vs clean {cc}");
        let cold = must(&r, "xstate/xrstor/avx512/clflushed");
        let hot = must(&r, "xstate/xrstor/avx512/hot");
        assert!(cold > hot, "XRSTOR from a flushed area {cold} vs hot {hot}");
    }

    // TLB miss: 2 MiB pages are cheaper per access than 4 KiB ones at the largest footprint.
    let four = must(&r, "tlb-miss/4k/n=16384");
    let dense = must(&r, "tlb-miss/dense/n=16384");
    assert!(four > dense, "4K page-strided {four} vs dense {dense}");
    match skipped(&r, "tlb-miss", "2m") {
        Some(why) => eprintln!("2 MiB chase not checked: {why}"),
        None => {
            let two = must(&r, "tlb-miss/2m/n=16384");
            if two >= four * 0.9 {
                // Seen once in many suite runs on the shared VM: both chases at the same cost.
                // Measure that benchmark once more on its own; a real regression fails again.
                eprintln!("2M {two} vs 4K {four}: measuring tlb-miss once more");
                let r2 = remeasure("tlb-miss");
                let (two, four) = (
                    must(&r2, "tlb-miss/2m/n=16384"),
                    must(&r2, "tlb-miss/4k/n=16384"),
                );
                assert!(two < four * 0.9, "2M {two} vs 4K {four} (measured twice)");
            }
        }
    }

    // Faults: one fault per page for anonymous first writes.
    let anon = m["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["variant"] == "page-fault/anon-write")
        .unwrap();
    let fpp: f64 = anon["params"]["faults_per_page"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((0.9..=1.1).contains(&fpp), "anon faults per page {fpp}");

    // Signals are delivered (the benchmark checks the handler count) and cost more than tgkill.
    assert!(must(&r, "signal/deliver/clean") > 0.0);

    // Stored: every sample is a run; export gives them back.
    let id = r["experiments"][0]["id"].as_i64().expect("experiment id");
    let samples = r["runs_stored"].as_u64().unwrap();
    let exported = lab.ok(&["export", &id.to_string(), "--format", "json"]);
    assert!(
        exported.stdout.contains("tlb-flush/mprotect/touched/n=33"),
        "export lacks the variant"
    );
    assert_eq!(
        exported.json()["runs"].as_array().unwrap().len() as u64,
        samples
    );
    let csv = lab
        .ok(&["export", &id.to_string(), "--format", "csv"])
        .stdout;
    let header = csv.lines().next().unwrap();
    assert!(
        header.contains("cycles") && header.contains("ns"),
        "{header}"
    );
    assert_eq!(
        csv.lines().count() as u64,
        samples + 1,
        "one CSV row per sample"
    );
    assert!(lab.ok(&["list"]).stdout.contains("micro"));
    // A second run of one benchmark compares against the first like any two experiments.
    lab.ok(&["micro", "--quick", "--samples", "101", "syscall"]);
    let out = lab.run(&[
        "compare",
        &id.to_string(),
        "latest",
        "--variant",
        "syscall/getppid",
        "--metric",
        "cycles",
    ]);
    assert!(
        out.stdout.contains("syscall/getppid") && out.stdout.contains("cycles"),
        "{out}"
    );
}

#[test]
fn text_tables_and_bad_input() {
    let lab = Lab::new();
    let t = lab
        .ok(&[
            "micro",
            "--quick",
            "--no-store",
            "timer",
            "syscall",
            "xstate",
        ])
        .stdout;
    assert!(
        t.contains("== timer ==") && t.contains("syscall/getppid") && t.contains("overhead"),
        "{t}"
    );
    if cfg!(target_arch = "x86_64") {
        assert!(t.contains("xstate/xrstor/clean/hot"), "{t}");
    }
    assert!(!t.contains("NaN"), "{t}");

    for (args, needle) in [
        (
            vec!["micro", "--no-store", "tlbflush"],
            "unknown benchmark 'tlbflush'",
        ),
        (
            vec!["micro", "--no-store", "--cpu", "4096", "timer"],
            "--cpu 4096",
        ),
        (
            vec!["micro", "--no-store", "--samples", "1", "timer"],
            "--samples 1",
        ),
        (
            vec!["micro", "--no-store", "--span=-1", "syscall"],
            "--span -1",
        ),
        (
            vec![
                "micro",
                "--no-store",
                "--cpu",
                "0",
                "--remote-cpu",
                "0",
                "timer",
            ],
            "--remote-cpu 0",
        ),
    ] {
        let out = lab.fails(&args, 2);
        let e = &out.stderr;
        assert!(
            e.contains(needle) && e.lines().count() == 1,
            "{args:?}: {e}"
        );
    }
}

/// AVX-512 usable here, as the CPU (CPUID) and the OS (XCR0) say, independently of abperf.
fn avx512_here() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// CPUs this process may run on (sched_getaffinity), independently of abperf.
fn allowed_cpus() -> usize {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return 1;
    }
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .count()
}

fn rows(r: &Value) -> Vec<String> {
    micro(r)["rows"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| m["variant"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn ctxsw_refill_and_every_fault_kind_measure() {
    let r = Lab::new()
        .ok(&[
            "micro",
            "ctxsw",
            "tlb-refill",
            "page-fault",
            "signal",
            "--quick",
            "--format",
            "json",
            "--no-store",
        ])
        .json();
    let names = rows(&r);
    // Context switches: threads and processes, on one CPU and (when allowed two) across two;
    // AVX-512-dirty where the CPU has it.
    let two = allowed_cpus() >= 2;
    let avx = avx512_here();
    for kind in ["threads", "processes"] {
        for (place, want) in [("same-cpu", true), ("cross-cpu", two)] {
            for (state, want_state) in [("clean", true), ("avx512-dirty", avx)] {
                let n = format!("ctxsw/{kind}/{place}/{state}");
                if want && want_state {
                    let c = must(&r, &n);
                    assert!(c > 100.0, "{n}: a pipe round trip of {c} ticks");
                } else {
                    assert!(!names.contains(&n), "{n} measured without its hardware");
                }
            }
        }
    }
    // Refill: both flushes at every working set, a full flush costing at least as much to
    // recover from on the largest one (the price the finding reports).
    let refill: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("tlb-refill/"))
        .collect();
    assert!(
        refill.iter().any(|n| n.starts_with("tlb-refill/partial/"))
            && refill.iter().any(|n| n.starts_with("tlb-refill/full/")),
        "{refill:?}"
    );
    for n in &refill {
        assert!(must(&r, n) > 0.0, "{n}");
    }
    // Every page-fault kind, with the faults the kernel took per page.
    for kind in [
        "anon-write",
        "zero-page-read",
        "private-file-write",
        "private-file-read",
        "shared-file-write",
        "shared-file-read",
    ] {
        let n = format!("page-fault/{kind}");
        let row = micro(&r)["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["variant"] == n.as_str())
            .unwrap_or_else(|| panic!("no {n}: skips {}", micro(&r)["skips"]));
        assert!(row["cycles"]["median"].as_f64().unwrap() > 0.0, "{n}");
        let fpp: f64 = row["params"]["faults_per_page"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((0.0..=1.1).contains(&fpp), "{n}: {fpp} faults per page");
    }
    // Signals: the AVX-512-dirty delivery runs where the CPU has it.
    if avx {
        assert!(must(&r, "signal/deliver/avx512-dirty") > 0.0);
    }
    assert!(
        micro(&r)["skips"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| !(avx && s["config"].as_str().is_some_and(|c| c.contains("avx512"))))
    );
}

#[test]
fn a_failing_benchmark_is_an_error_not_a_skip() {
    // A real failure: the file-backed fault kinds need a temporary file, and $TMPDIR does not
    // exist. Before, this was recorded as a skip and micro exited 0.
    let lab = Lab::new().env("TMPDIR", "/nonexistent/abperf-test");
    let o = lab.fails(&["micro", "page-fault", "--quick"], 1);
    assert!(
        o.stderr.contains("micro page-fault failed")
            && o.stderr.contains("/nonexistent/abperf-test"),
        "{o}"
    );
    // What ran is stored, the failure with it.
    let s = lab.store();
    let id = s.resolve_id("latest").unwrap();
    let f = s.micro_findings(id).unwrap();
    assert!(f.iter().any(|f| f.key.starts_with("failed")), "{f:?}");
}

/// Whether this process gets 2 MiB pages for a madvised anonymous region (an independent probe
/// of THP: /sys says enabled, and /proc/self/smaps shows AnonHugePages for the region).
fn huge_pages_work() -> bool {
    let mode =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if !mode.contains("[always]") && !mode.contains("[madvise]") {
        return false;
    }
    const HUGE: usize = 2 << 20;
    let len = 8 * HUGE;
    // SAFETY: a fresh private anonymous mapping, aligned by hand, unmapped before returning.
    unsafe {
        let raw = libc::mmap(
            std::ptr::null_mut(),
            len + HUGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if raw == libc::MAP_FAILED {
            return false;
        }
        let base = ((raw as usize + HUGE - 1) & !(HUGE - 1)) as *mut u8;
        libc::madvise(base.cast(), len, libc::MADV_HUGEPAGE);
        for off in (0..len).step_by(4096) {
            base.add(off).write_volatile(1);
        }
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
        let start = format!("{:x}-", base as usize);
        let huge_kib: u64 = smaps
            .split('\n')
            .skip_while(|l| !l.starts_with(&start))
            .take_while(|l| l.starts_with(&start) || !l.contains('-') || l.contains(':'))
            .find_map(|l| l.strip_prefix("AnonHugePages:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0);
        libc::munmap(raw, len + HUGE);
        huge_kib > 0
    }
}

#[test]
fn the_2m_chase_is_not_skipped_where_huge_pages_work() {
    let r = Lab::new()
        .ok(&[
            "micro",
            "tlb-miss",
            "--quick",
            "--format",
            "json",
            "--no-store",
        ])
        .json();
    match skipped(&r, "tlb-miss", "2m") {
        Some(why) => assert!(
            !huge_pages_work(),
            "tlb-miss skipped 2 MiB pages ({why}) though this process gets them"
        ),
        None => assert!(
            rows(&r).iter().any(|n| n.starts_with("tlb-miss/2m/")),
            "neither skipped nor measured"
        ),
    }
}
