//! `abperf run --shell auto|sh|none`: a command without shell syntax is exec'd directly (no `sh`
//! between abperf and the workload), one with shell syntax goes through `sh -c`; the way each
//! variant ran is printed and stored in the design, and a resumed experiment keeps it.

mod common;
use common::Lab;
use std::os::unix::fs::PermissionsExt;

/// A script that appends its parent's command name (`/proc/$PPID/comm`) to the file it is given.
fn parent_probe(lab: &Lab) -> String {
    let p = lab.write("probe", "#!/bin/sh\ncat /proc/$PPID/comm >> \"$1\"\n");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn parents(lab: &Lab, file: &str) -> Vec<String> {
    std::fs::read_to_string(lab.path(file))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn design(lab: &Lab, id: &str) -> serde_json::Value {
    let doc = lab.ok(&["export", id, "--format", "json"]).json();
    doc["experiments"][0]["design"].clone()
}

#[test]
fn a_plain_command_runs_directly_and_a_pipe_through_sh() {
    let lab = Lab::new();
    let probe = parent_probe(&lab);
    // The lab's path must itself be plain for the test to mean anything.
    assert!(
        probe
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c)),
        "{probe}"
    );
    let direct = format!("{probe} {}", lab.p("direct.out"));
    let piped = format!("{probe} {} | cat", lab.p("piped.out"));
    let o = lab.ok(&[
        "run", "-r", "2", "--warmup", "0", "-n", "plain", "-n", "pipe", &direct, &piped,
    ]);
    assert!(
        o.stderr.contains(
            "abperf: commands exec'd directly: 'plain'; through sh -c: 'pipe' (--shell auto"
        ),
        "{o}"
    );
    // Directly: the parent is abperf (or its spawn helper, before the workload is handed over).
    let direct_parents = parents(&lab, "direct.out");
    assert_eq!(direct_parents.len(), 2, "{direct_parents:?}");
    for p in &direct_parents {
        assert!(p == "abperf" || p == "abperf-spawn", "{direct_parents:?}");
    }
    // In a pipeline the shell forks every command: the parent is sh.
    let piped_parents = parents(&lab, "piped.out");
    assert_eq!(piped_parents.len(), 2, "{piped_parents:?}");
    for p in &piped_parents {
        assert!(p == "sh" || p == "dash", "{piped_parents:?}");
    }
    let d = design(&lab, "1");
    assert_eq!(d["shell"], "auto", "{d}");
    assert_eq!(d["exec"]["plain"], "direct", "{d}");
    assert_eq!(d["exec"]["pipe"], "sh -c", "{d}");
    // `show` has it too.
    let show = lab.ok(&["show", "1"]);
    assert!(
        show.stdout
            .contains(r#""exec":{"pipe":"sh -c","plain":"direct"}"#),
        "{show}"
    );
}

#[test]
fn shell_sh_always_wraps_and_none_never() {
    let lab = Lab::new();
    let o = lab.ok(&["run", "-r", "1", "--shell", "sh", "-n", "a", "true"]);
    assert!(
        o.stderr
            .contains("abperf: commands through sh -c (--shell sh)"),
        "{o}"
    );
    let d = design(&lab, "1");
    assert_eq!(d["shell"], "sh", "{d}");
    assert_eq!(d["exec"]["a"], "sh -c", "{d}");

    // -N: quotes are honoured, no shell even for words that look like syntax.
    let out = lab.p("n.out");
    let o = lab.ok(&[
        "run",
        "-r",
        "1",
        "--warmup",
        "0",
        "-N",
        "-n",
        "a",
        &format!("touch '{out}'"),
    ]);
    assert!(
        o.stderr.contains("abperf: commands exec'd directly (-N)"),
        "{o}"
    );
    assert!(lab.path("n.out").exists());
    let d = design(&lab, "2");
    assert_eq!(d["shell"], "none", "{d}");
    assert_eq!(d["exec"]["a"], "direct", "{d}");

    let o = lab.fails(&["run", "-N", "--shell", "sh", "true"], 2);
    assert!(o.stderr.contains("--shell"), "{o}");
    let o = lab.fails(&["run", "--shell", "bash", "true"], 2);
    assert!(o.stderr.contains("auto"), "{o}");
}

#[test]
fn a_missing_program_or_a_builtin_goes_through_sh() {
    let lab = Lab::new();
    let o = lab.fails(&["run", "-r", "1", "no-such-program-xyz"], 1);
    assert!(o.stderr.contains("through sh -c"), "{o}");
    assert!(o.stderr.contains("the shell's 'command not found'"), "{o}");
    let o = lab.ok(&["run", "-r", "1", "-n", "b", "exit 0"]);
    assert!(o.stderr.contains("through sh -c"), "{o}");
}

/// A resumed experiment starts each command the way its design says: the stored `exec` way, or
/// for a design made before `--shell` (`"shell": true`, no `exec`) through `sh -c`.
#[test]
fn resume_keeps_the_stored_way() {
    let lab = Lab::new();
    // The first run fails (the experiment stops), later ones succeed once `ok` exists.
    let probe = lab.write(
        "probe",
        "#!/bin/sh\ncat /proc/$PPID/comm >> \"$1\"\n[ -e \"$1.ok\" ]\n",
    );
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let edits = [
        // the way stored for the variant wins over what auto would choose now
        "json_set(design, '$.exec.a', 'sh -c')",
        // a design stored before --shell: true meant sh -c, and there was no exec
        "json_remove(json_set(design, '$.shell', json('true')), '$.exec')",
    ];
    for (i, edit) in edits.iter().enumerate() {
        let out = format!("out{i}");
        let cmd = format!("{probe} {}", lab.p(&out));
        let o = lab.fails(&["run", "-r", "3", "--warmup", "0", "-n", "a", &cmd], 1);
        assert!(o.stderr.contains("exec'd directly"), "{o}");
        let id = (i + 1).to_string();
        let c = rusqlite::Connection::open(lab.db()).unwrap();
        let n = c
            .execute(
                &format!("UPDATE experiment SET design = {edit} WHERE id = ?1"),
                rusqlite::params![(i + 1) as i64],
            )
            .unwrap();
        assert_eq!(n, 1);
        drop(c);
        lab.write(&format!("{out}.ok"), "");
        // An edited design is not approved on this machine: trusted here on purpose.
        let o = lab.ok(&["run", "--resume", &id, "--trust-stored-design"]);
        assert!(o.stderr.contains("abperf: commands through sh -c ("), "{o}");
        let seen = parents(&lab, &out);
        assert!(seen.len() >= 3, "{seen:?}");
        assert!(seen[0] == "abperf" || seen[0] == "abperf-spawn", "{seen:?}");
        for p in &seen[1..] {
            assert!(p == "sh" || p == "dash", "{edit}: {seen:?}");
        }
    }
}
