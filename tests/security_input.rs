//! Untrusted input at abperf's edges (issue 40, docs/security.md): an inventory's host names
//! never reach a field Ansible templates and are refused clearly, Ansible's output reaches the
//! terminal escaped, fleet share files (which may name the store with its password) are private
//! and removed, and importers refuse what no tool prints.

#![allow(clippy::disallowed_macros)] // tests print what they saw to stderr
mod common;
use common::Lab;
use common::fleet::Fleet;
use std::os::unix::fs::PermissionsExt;

/// A fleet and a lab whose Ansible opens a connection per task and colours its output (so raw
/// escape sequences are there to be relayed, or not); the coordinator's temporary files in the
/// lab's `ctmp`.
fn fleet_lab() -> Option<(Fleet, Lab)> {
    if let Some(why) = common::fleet::missing() {
        common::skip(&why);
        return None;
    }
    let fleet = Fleet::start();
    let lab = Lab::new()
        .env("ANSIBLE_SSH_ARGS", "-o ControlMaster=no")
        .env("ANSIBLE_FORCE_COLOR", "1");
    std::fs::create_dir_all(lab.path("ctmp")).unwrap();
    let ctmp = lab.p("ctmp");
    Some((fleet, lab.env("TMPDIR", &ctmp)))
}

#[test]
fn a_templated_host_name_runs_nothing_and_is_refused_naming_the_inventory_line() {
    let Some((fleet, lab)) = fleet_lab() else {
        return;
    };
    let planted = lab.path("PWNED");
    let evil = format!("h1{{{{ lookup('pipe','touch {}') }}}}", planted.display());
    let h = &fleet.hosts[0];
    let inv = lab.write(
        "inv.yml",
        format!(
            "all:\n  vars:\n    ansible_python_interpreter: /usr/bin/python3\n  hosts:\n    \
             lab-a:\n      ansible_host: {a}\n      ansible_port: {p}\n    \"{evil}\":\n      \
             ansible_host: {a}\n      ansible_port: {p}\n",
            a = h.addr,
            p = h.port
        ),
    );
    let out = lab.run(&[
        "fleet", "run", "-i", &inv, "-r", "1", "--warmup", "0", "true", "sleep 0",
    ]);
    assert!(
        !planted.exists(),
        "the template ran on the coordinator: {out}"
    );
    assert_eq!(out.code, Some(2), "{out}");
    out.err_has(&format!("inventory {inv}:8: host \"{evil}\" is refused"))
        .err_has("letters, digits");
    assert!(lab.store().resolve_id("latest").is_err(), "nothing planned");
}

/// A `--remote-abperf` that records, before running the real abperf, the modes of the share it
/// is given and of the directories above it, and of the coordinator's share files.
fn recording_abperf(lab: &Lab) -> String {
    let log = lab.p("modes.log");
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = run ]; then\n  d=$(dirname \"$3\")\n  \
         stat -c 'host %a %n' \"$3\" \"$d\" \"$(dirname \"$d\")\" \"$(dirname \"$(dirname \"$d\")\")\" >> {log}\n  \
         stat -c 'coordinator %a %n' {ctmp}/abperf-fleet-* {ctmp}/abperf-fleet-*/share-*.json >> {log}\nfi\n\
         exec {bin} \"$@\"\n",
        ctmp = lab.p("ctmp"),
        bin = env!("CARGO_BIN_EXE_abperf"),
    );
    let path = lab.write("abperf-recording", script);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn shares_are_private_removed_after_the_run_and_ansible_output_is_escaped() {
    let Some((fleet, lab)) = fleet_lab() else {
        return;
    };
    let inv = fleet.inventory("inventory.ini");
    let remote = recording_abperf(&lab);
    let out = lab.ok(&[
        "fleet",
        "run",
        "-i",
        &inv,
        "--limit",
        "lab-a,lab-b",
        "--remote-abperf",
        &remote,
        "-r",
        "1",
        "--warmup",
        "0",
        "true",
        "sleep 0",
    ]);
    // Ansible coloured its output (ANSIBLE_FORCE_COLOR): relayed escaped, never raw.
    out.err_has("PLAY RECAP").err_has("\\e[");
    assert!(!out.stderr.contains('\u{1b}'), "raw escape bytes: {out}");
    let log = std::fs::read_to_string(lab.path("modes.log")).unwrap();
    let modes: Vec<(&str, &str, &str)> = log
        .lines()
        .filter_map(|l| {
            let mut w = l.splitn(3, ' ');
            Some((w.next()?, w.next()?, w.next()?))
        })
        .collect();
    eprintln!("{log}");
    let share = |side: &str| {
        modes
            .iter()
            .filter(|(s, _, p)| *s == side && p.ends_with(".json"))
            .count()
    };
    assert!(share("host") == 2 && share("coordinator") >= 2, "{log}");
    for (side, mode, path) in &modes {
        let want = if path.ends_with(".json") {
            "600"
        } else {
            "700"
        };
        assert_eq!(*mode, want, "{side} {path}: {log}");
    }
    // Nothing that held a share is left: not on the hosts, not on the coordinator.
    let left: Vec<_> = walk(&fleet.home().join(".abperf-fleet"))
        .into_iter()
        .filter(|p| p.ends_with("share.json"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let ctmp: Vec<_> = std::fs::read_dir(lab.path("ctmp")).unwrap().collect();
    assert!(ctmp.is_empty(), "{ctmp:?}");
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

const TIME_TAIL: &str =
    "(0avgtext+0avgdata 1000maxresident)k\n0inputs+0outputs (0major+10minor)pagefaults 0swaps\n";

#[test]
fn importers_refuse_what_no_tool_prints_naming_file_line_and_field() {
    let lab = Lab::new();
    let perf_empty = " Performance counter stats for 'true':\n\n 0.1 seconds time elapsed\n\n \
                      Performance counter stats for 'true':\n\n";
    let cases: [(&str, &str, String, &str); 8] = [
        (
            "neg.csv",
            "csv",
            "variant,wall_ns [ns]\na,5\na,-5\n".into(),
            ":3: wall_ns (ns): -5 is negative",
        ),
        (
            "ends.csv",
            "csv",
            "variant,started_ns,ended_ns,wall_ns [ns]\na,100,50,1\n".into(),
            ":2: ended_ns: 50 is before started_ns 100",
        ),
        (
            "dup.jsonl",
            "jsonl",
            "{\"variant\":\"a\",\"wall_ns [ns]\":1,\"wall_ns [ns]\":2}\n".into(),
            ":1: key \"wall_ns [ns]\" twice",
        ),
        (
            "elapsed.txt",
            "time",
            format!("0.00user 0.00system 0:99.44elapsed 0%CPU {TIME_TAIL}"),
            ":1: bad elapsed time \"0:99.44elapsed\"",
        ),
        (
            "hours.txt",
            "time",
            format!("0.00user 0.00system 99:99:99elapsed 0%CPU {TIME_TAIL}"),
            ":1: bad elapsed time \"99:99:99elapsed\"",
        ),
        (
            "cpu.txt",
            "time",
            format!("1.00user 0.00system 0:01.00elapsed 99999%CPU {TIME_TAIL}"),
            ":1: %CPU: 99999%",
        ),
        ("perf.txt", "perf-stat", perf_empty.into(), ":5: counters:"),
        (
            "units.csv",
            "csv",
            "variant,wall_ns [ns],wall_ns [KiB]\na,1,2\n".into(),
            ":1: column 3 (\"wall_ns [KiB]\"): the same field",
        ),
    ];
    for (name, format, text, want) in &cases {
        let file = lab.write(name, text);
        let out = lab.run(&["import", "--format", format, "--variant", "x", &file]);
        assert_ne!(out.code, Some(0), "{name} was imported: {out}");
        out.err_has(&format!("{file}{want}"));
    }
    assert!(lab.store().resolve_id("latest").is_err(), "nothing stored");
}

#[test]
fn csv_export_to_a_terminal_escapes_control_characters_and_to_a_pipe_keeps_them() {
    if !common::on_path("script") {
        common::skip("needs script (util-linux) for a terminal");
        return;
    }
    let lab = Lab::new();
    let title = "a\u{1b}]0;pwned\u{7}";
    let file = lab.write(
        "esc.csv",
        format!("variant,wall_ns [ns]\n\"{title}\",5\n\"{title}\",6\n"),
    );
    let imported = lab.ok(&["import", "--format", "csv", &file]);
    assert!(
        !imported.stdout.contains('\u{1b}') && imported.stdout.contains("a\\e]0;pwned"),
        "import's summary names the variant escaped: {imported}"
    );
    // To a pipe (a file, an import): the stored bytes, so an export imports back the same.
    let piped = lab.ok(&["export", "1", "--format", "csv"]);
    assert!(piped.stdout.contains(title), "{piped}");
    // To a terminal: escaped, as abperf's own messages are.
    let out = std::process::Command::new("script")
        .args([
            "-qec",
            &format!("'{}' export 1 --format csv", common::BIN),
            "/dev/null",
        ])
        .env("ABPERF_DB", lab.db())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("a\\e]0;pwned\\x07,"), "{shown:?}");
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
        "{shown:?}"
    );
}

#[test]
fn a_store_locked_longer_than_abperf_waits_stops_the_experiment_as_interrupted() {
    if !common::on_path("sqlite3") || !common::on_path("setsid") {
        common::skip("needs sqlite3 and setsid to hold the store's write lock");
        return;
    }
    let lab = Lab::new();
    // The first run of variant a takes the store's write lock for 33 s (abperf waits 30 s for
    // it) from a process of its own session, which outlives the run.
    let hold = lab.write(
        "hold.sh",
        format!(
            "#!/bin/sh\n[ -e {flag} ] && exit 0\n: > {flag}\n\
             setsid sqlite3 {db} 'BEGIN IMMEDIATE;' '.shell sleep 33' 'COMMIT;' \
             </dev/null >/dev/null 2>&1 &\nsleep 0.5\n",
            flag = lab.p("held"),
            db = lab.db().display()
        ),
    );
    std::fs::set_permissions(&hold, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = lab.run(&[
        "run", "-r", "2", "--warmup", "0", "-n", "a", "-n", "b", &hold, "true",
    ]);
    assert_eq!(out.code, Some(1), "{out}");
    out.err_has("another process held its write lock")
        .err_has("run --resume 1");
    let exp = lab.store().experiment(1).unwrap();
    assert_eq!(exp.status, abperf::model::Status::Interrupted, "{out}");
}

#[test]
fn a_closed_stderr_pipe_stops_the_run_with_141() {
    use std::io::BufRead;
    let lab = Lab::new();
    let args = [
        "run",
        "-r",
        "10",
        "--warmup",
        "0",
        "-n",
        "a",
        "-n",
        "b",
        "sleep 0.3",
        "sleep 0.3",
    ];
    let mut child = lab
        .cmd(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read what abperf says before the runs (its plan, how commands are run), then go away while
    // the runs go on: nothing reads its stderr any more, and abperf writes nothing there until
    // it ends.
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("exec'd") {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "{said}");
        said.push_str(&line);
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(err);
    let t = std::time::Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(141), "{status:?}");
    assert!(
        t.elapsed().as_secs_f64() < 4.0,
        "stopped after {:?}",
        t.elapsed()
    );
    let exp = lab.store().experiment(1).unwrap();
    assert_eq!(exp.status, abperf::model::Status::Interrupted);
    assert!(lab.store().runs(1).unwrap().len() < 20);
}
