//! What issue 13 (speed) changed where it shows: the environment's load is sampled during the
//! runs (not in a sleep before them), and tracepoint counters held registered across runs count
//! exactly (the streamed text import is checked against the raw capture in tests/trace.rs).
//! No timing is asserted here: the speed targets are shown by the benches.

mod common;
use common::Lab;

#[test]
fn the_environment_samples_load_during_the_runs() {
    let lab = Lab::new();
    lab.ok(&["run", "-N", "-r", "3", "--warmup", "0", "sleep 0.1"]);
    let doc = lab.ok(&["export", "1", "--format", "json"]).json();
    let env = &doc["experiments"][0]["environment"];
    let doctor = env["doctor"].as_object().unwrap();
    assert_eq!(doctor.len(), 19, "{env}");
    let sampled = &env["doctor_sampled"];
    for c in [
        "busy_processes",
        "load_average",
        "memory_pressure",
        "virtualization",
    ] {
        assert!(sampled[c].is_string(), "{c}: {sampled}");
        assert!(doctor[c].is_string(), "{c}: {env}");
    }
    assert!(
        doctor["irqbalance"].as_str().unwrap().contains(": "),
        "{env}"
    );
    // The sample spans the three runs of 0.1 s each.
    let window = sampled["window"].as_str().unwrap();
    let secs: f64 = window
        .strip_prefix("during the runs, ")
        .and_then(|w| w.strip_suffix(" s"))
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("window {window:?}"));
    assert!(secs >= 0.25, "{window}");
    // The window covers the experiment's runs (less the moments the first scan, on its own
    // thread, may wait for a CPU on a loaded machine).
    let runs = doc["runs"].as_array().unwrap();
    let first = runs.iter().map(|r| r["started_ns"].as_i64().unwrap()).min();
    let last = runs.iter().map(|r| r["ended_ns"].as_i64().unwrap()).max();
    let span = (last.unwrap() - first.unwrap()) as f64 / 1e9;
    assert!(span - 0.05 <= secs, "runs over {span} s, {window}");
}

/// A tracepoint counted with its holder event open counts exactly what happened: one exec per
/// run of `true` without a shell.
#[test]
fn tracepoint_counts_are_exact_with_the_holder_event() {
    // The event exists (a mounted tracefs lists it, or the kernel has its tracepoint and
    // tracefs, which abperf mounts privately when nothing is mounted) and we may count it.
    let listed = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .any(|t| std::path::Path::new(&format!("{t}/events/sched/sched_process_exec/id")).exists());
    let read = |f: &str| std::fs::read_to_string(f).unwrap_or_default();
    let in_kernel = read("/proc/filesystems").contains("tracefs")
        && read("/proc/kallsyms").contains("__traceiter_sched_process_exec");
    let root = unsafe { libc::geteuid() } == 0;
    if !(listed || in_kernel) || !root {
        common::skip(
            "no sched:sched_process_exec tracepoint or no tracefs in this kernel, or not root",
        );
        return;
    }
    let lab = Lab::new();
    lab.ok(&[
        "run",
        "-N",
        "-r",
        "6",
        "--warmup",
        "1",
        "-e",
        "sched:sched_process_exec",
        "--strict",
        "true",
    ]);
    let doc = lab.ok(&["export", "1", "--format", "json"]).json();
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 7);
    for r in runs {
        assert_eq!(r["metrics"]["sched:sched_process_exec"], 1.0, "{r}");
    }
}
