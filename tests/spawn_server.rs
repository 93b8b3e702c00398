//! The spawn server (issue 13): one `abperf-spawn --server` per experiment creates every
//! workload with clone(CLONE_PARENT), so that the workload is abperf's own child (wait4, signals,
//! counters as before) and its max RSS is its own (tests/maxrss.rs), without one helper exec per
//! run. Checked on both helpers: the `abperf-spawn` binary beside abperf, and abperf's own
//! helper mode (`abperf __abperf-spawn-helper`, used when abperf-spawn is not beside it).

mod common;
use common::{BIN, Lab};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Whether this kernel lists a thread's children in /proc (CONFIG_PROC_CHILDREN), which the
/// workloads below use to find their siblings.
fn proc_children() -> bool {
    Path::new(&format!(
        "/proc/{}/task/{}/children",
        std::process::id(),
        std::process::id()
    ))
    .exists()
}

/// The abperf binaries to check: the built one (abperf-spawn beside it) and a link to it in a
/// directory without abperf-spawn (its own helper mode).
fn binaries(lab: &Lab) -> Vec<(PathBuf, &'static str)> {
    let alone = lab.path("alone");
    std::fs::create_dir_all(&alone).unwrap();
    let own = alone.join("abperf");
    if std::fs::hard_link(BIN, &own).is_err() {
        std::fs::copy(BIN, &own).unwrap();
    }
    assert!(Path::new(BIN).with_file_name("abperf-spawn").exists());
    vec![
        (PathBuf::from(BIN), "abperf-spawn"),
        (own, "abperf's own helper mode"),
    ]
}

fn abperf(lab: &Lab, bin: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.args(args)
        .env("ABPERF_DB", lab.db())
        .env_remove("ABPERF_METRICS_FILE")
        .env_remove("ABPERF_NO_SPAWN_HELPER")
        .stdin(Stdio::null());
    c
}

/// A script that prints its parent's pid and the pids of its siblings (the other children of
/// its parent's threads), one line: "PPID SIBLING...".
fn family_script(lab: &Lab) -> String {
    lab.write(
        "family.sh",
        "sibs=\"\"\nfor p in $(cat /proc/$PPID/task/*/children); do\n  [ \"$p\" = \"$$\" ] || sibs=\"$sibs $p\"\ndone\necho \"family $PPID$sibs\"\n",
    )
}

/// Run `cmd` (an abperf whose workload is [`family_script`]) to success: abperf's pid, its
/// output, and each run's family line as numbers (parent, siblings...). `what` labels failures.
fn run_families(mut cmd: Command, what: &str) -> (u32, String, Vec<Vec<u32>>) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let families = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("family "))
        .map(|l| l.split_whitespace().map(|w| w.parse().unwrap()).collect())
        .collect();
    (pid, stdout, families)
}

#[test]
fn every_workload_is_abperfs_own_child_started_by_one_server() {
    if !proc_children() {
        common::skip("this kernel has no /proc/PID/task/TID/children");
        return;
    }
    let lab = Lab::new();
    let script = family_script(&lab);
    for (bin, which) in binaries(&lab) {
        // Quiet runs, runs with counters and pinning, and a --pre command: all through the server.
        for extra in [
            &["--show-output"][..],
            &["--show-output", "-e", "task-clock", "--pin", "0"][..],
            &["--show-output", "--pre", "true"][..],
        ] {
            let run = format!("sh {script}");
            let mut args = vec!["run", "-r", "4", "--warmup", "1"];
            args.extend(extra);
            args.push(&run);
            let (abperf_pid, stdout, families) =
                run_families(abperf(&lab, &bin, &args), &format!("{which} {extra:?}"));
            assert_eq!(families.len(), 5, "{which} {extra:?}: {stdout}");
            for f in &families {
                assert_eq!(
                    f[0], abperf_pid,
                    "{which} {extra:?}: parent is abperf: {stdout}"
                );
                // One sibling: the server, the same process for every run.
                assert_eq!(f.len(), 2, "{which} {extra:?}: {stdout}");
                assert_eq!(
                    f[1], families[0][1],
                    "{which} {extra:?}: one server: {stdout}"
                );
            }
            // The server is gone once abperf has exited (stopped and reaped, not left behind).
            let server = families[0][1];
            let stat = std::fs::read_to_string(format!("/proc/{server}/stat")).unwrap_or_default();
            assert!(
                !stat.contains("abperf"),
                "{which}: the spawn server {server} outlived abperf: {stat}"
            );
        }
    }
}

#[test]
fn a_command_that_cannot_run_fails_as_without_the_server() {
    let lab = Lab::new();
    let garbage = lab.write("garbage", "\x01\x02 not a program\n");
    let noexec = lab.write("noexec", "#!/bin/sh\ntrue\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&garbage, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&noexec, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut seen: Vec<(String, i32, String)> = Vec::new();
    for (bin, which) in binaries(&lab) {
        for direct in [false, true] {
            let mode = if direct { "direct" } else { which };
            let cases: [(&[&str], &str); 2] = [
                // exec fails (ENOEXEC): abperf's own error.
                (
                    &["run", "-N", "-r", "2", "--warmup", "0", &garbage],
                    "Exec format error",
                ),
                // the shell cannot execute it: the run fails with the shell's 126.
                (
                    &["run", "--shell", "sh", "-r", "2", "--warmup", "0", &noexec],
                    "exited with status 126",
                ),
            ];
            for (args, expect) in cases {
                let mut c = abperf(&lab, &bin, args);
                if direct {
                    c.env("ABPERF_NO_SPAWN_HELPER", "1");
                }
                let o = c.output().unwrap();
                let stderr = String::from_utf8_lossy(&o.stderr).to_string();
                assert!(stderr.contains(expect), "{mode} {args:?}: {stderr}");
                let code = o.status.code().unwrap();
                assert_ne!(code, 0, "{mode} {args:?}: {stderr}");
                // From the cause on (the experiment's id and the binary's path differ).
                let line = stderr.lines().find(|l| l.contains(expect)).unwrap();
                let from = ["cannot execute", "exited with"]
                    .iter()
                    .find_map(|w| line.find(w))
                    .unwrap();
                let line = line[from..].to_string();
                seen.push((args.join(" "), code, line));
            }
        }
    }
    // The same exit code and the same message by every way of starting the workload.
    for s in &seen {
        let first = seen.iter().find(|f| f.0 == s.0).unwrap();
        assert_eq!(s.1, first.1, "{seen:#?}");
        assert_eq!(s.2, first.2, "{seen:#?}");
    }
}

#[test]
fn the_servers_death_is_a_clear_error_and_keeps_the_runs_done() {
    if !proc_children() {
        common::skip("this kernel has no /proc/PID/task/TID/children");
        return;
    }
    let lab = Lab::new();
    // The first run kills its siblings (the server), then exits normally.
    let killer = lab.write(
        "killer.sh",
        "for p in $(cat /proc/$PPID/task/*/children); do\n  [ \"$p\" = \"$$\" ] || kill -9 \"$p\"\ndone\n",
    );
    for (bin, which) in binaries(&lab) {
        let run = format!("sh {killer}");
        let t = std::time::Instant::now();
        let o = abperf(&lab, &bin, &["run", "-r", "5", "--warmup", "0", &run])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{which}: {stderr}");
        assert!(
            stderr.contains("abperf's spawn server")
                && stderr.contains("was killed by SIGKILL")
                && stderr.contains(&format!("cannot start '{run}'")),
            "{which}: {stderr}"
        );
        assert!(
            t.elapsed().as_secs() < 30,
            "{which}: took {:?}",
            t.elapsed()
        );
        let s = lab.store();
        let id = s.resolve_id("latest").unwrap();
        assert_eq!(
            s.runs(id).unwrap().len(),
            1,
            "{which}: the run done is kept"
        );
    }
}

#[test]
fn a_huge_command_line_takes_the_one_shot_helper_and_still_works() {
    if !proc_children() {
        common::skip("this kernel has no /proc/PID/task/TID/children");
        return;
    }
    let lab = Lab::new();
    let script = family_script(&lab);
    // 100 KB of argument: more than one request to the server may carry.
    let big = "x".repeat(100_000);
    let run = format!("sh {script} {big}");
    let cmd = lab.cmd(&[
        "run",
        "-N",
        "-r",
        "2",
        "--warmup",
        "0",
        "--show-output",
        &run,
    ]);
    let (pid, stdout, families) = run_families(cmd, "huge command line");
    assert_eq!(families.len(), 2, "{stdout}");
    for f in families {
        // The one-shot helper has exited before the workload runs: no sibling server either.
        assert_eq!(f, vec![pid], "{stdout}");
    }
}
