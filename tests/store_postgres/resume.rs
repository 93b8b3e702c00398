//! `abperf run --resume ID --db postgres://...`: an experiment whose abperf was killed with
//! SIGKILL is taken over on the server and completed there (only its missing slots run, the runs
//! stored before unchanged, its knob put back), one whose abperf lives is refused naming its pid,
//! a complete one says so and exits 0, as on SQLite; what the server cannot keep (`--tune`,
//! kernels) is refused before anything is taken over.

use super::common::postgres::Server;
use super::common::{Lab, Out};
use super::runs::{runs_stored, start, wait_for_runs};
use std::collections::BTreeMap;

/// The runs `export --format json` prints of experiment 1, by schedule number.
fn runs_by_seq(lab: &Lab, dsn: &str) -> BTreeMap<i64, serde_json::Value> {
    let export = lab
        .ok(&["export", "1", "--db", dsn, "--format", "json"])
        .json();
    let mut out = BTreeMap::new();
    for r in export["runs"].as_array().unwrap() {
        let seq = r["seq"].as_i64().unwrap_or_else(|| panic!("no seq: {r}"));
        assert!(out.insert(seq, r.clone()).is_none(), "seq {seq} twice");
    }
    out
}

/// What the server says of experiment 1: its status and how many slots it plans.
fn status_and_slots(pg: &Server) -> (String, i64) {
    let status = pg.psql("abperf", "SELECT status FROM experiment WHERE id = 1");
    let slots = pg.psql(
        "abperf",
        "SELECT count(*) FROM slot WHERE experiment_id = 1",
    );
    (status, slots.parse().unwrap())
}

#[test]
fn a_run_killed_with_sigkill_is_resumed_on_the_server_and_completed_there() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::with_own_locks();
    let dsn = pg.create_db("abperf");
    // Two variants by a knob (its journal is the claim beside its lock, its original in the
    // variants on the server): the killed run leaves it changed, the resume puts it back.
    let k = lab.write("knob", "2000\n");
    let spec = format!("{k}=111,222");
    let args = [
        "run",
        "--db",
        &dsn,
        "-r",
        "8",
        "-k",
        &spec,
        "-n",
        "short",
        "-n",
        "long",
        "sleep 0.1",
    ];
    let mut child = start(&lab, &args);
    wait_for_runs(&pg, &mut child, 2);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = runs_by_seq(&lab, &dsn);
    let (status, planned) = status_and_slots(&pg);
    assert_eq!(status, "running");
    assert!(
        (2..planned as usize).contains(&before.len()),
        "{} of {planned} runs stored",
        before.len()
    );
    assert_ne!(std::fs::read_to_string(&k).unwrap().trim(), "2000");
    let out = lab.ok(&["run", "--resume", "latest", "--db", &dsn]);
    assert_eq!(std::fs::read_to_string(&k).unwrap().trim(), "2000");
    out.err_has(&format!(
        "abperf: resuming experiment 1 at run {}",
        before.len()
    ));
    out.has(&format!("experiment 1 complete, stored in {dsn}"));
    // Every slot has exactly one run, each committed on the server; the earlier ones unchanged.
    assert_eq!(status_and_slots(&pg), ("complete".to_string(), planned));
    assert_eq!(runs_stored(&pg, "experiment_id = 1"), planned);
    let distinct = pg.psql("abperf", "SELECT count(DISTINCT seq) FROM run");
    assert_eq!(distinct, planned.to_string());
    let after = runs_by_seq(&lab, &dsn);
    assert_eq!(after.len() as i64, planned);
    for (seq, run) in &before {
        assert_eq!(&after[seq], run, "run {seq} changed by the resume");
    }
    // Its owner on the server is the resume's, which has ended: the readers read it complete.
    let pid = pg.psql(
        "abperf",
        "SELECT pid FROM experiment_owner WHERE experiment_id = 1",
    );
    assert_ne!(pid, child.id().to_string());
    lab.ok(&["show", "1", "--db", &dsn]).has("complete");
    let list = lab.ok(&["list", "--db", &dsn]).stdout;
    assert!(list.contains("complete"), "{list}");
    let compare = lab.ok(&["compare", "1", "--db", &dsn]);
    compare.has("short").has("long").lacks("stopped");
}

#[test]
fn a_resume_while_its_abperf_runs_is_refused_naming_its_pid() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::new();
    let dsn = pg.create_db("abperf");
    let mut child = start(&lab, &["run", "--db", &dsn, "-r", "200", "sleep 0.2"]);
    wait_for_runs(&pg, &mut child, 1);
    // Stopped, not dead: its owner lives, so the experiment stays its own.
    unsafe { libc::kill(child.id() as i32, libc::SIGSTOP) };
    let host = pg.psql("abperf", "SELECT host FROM experiment_owner");
    let stored = runs_stored(&pg, "true");
    let out = lab.fails(&["run", "--resume", "1", "--db", &dsn], 1);
    out.err_has(&format!(
        "experiment 1 cannot be resumed: it is still running in pid {} on {host}",
        child.id()
    ));
    let owner = pg.psql("abperf", "SELECT pid FROM experiment_owner");
    assert_eq!(owner, child.id().to_string(), "the owner was replaced");
    assert_eq!(status_and_slots(&pg).0, "running");
    assert_eq!(runs_stored(&pg, "true"), stored, "a run was added");
    child.kill().unwrap(); // SIGKILL ends a stopped process too
    child.wait().unwrap();
}

#[test]
fn a_complete_experiment_on_the_server_is_left_as_it_is_with_the_note_sqlite_prints() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::new();
    let dsn = pg.create_db("abperf");
    lab.ok(&["run", "--db", &dsn, "-r", "2", "true"]);
    let before = runs_by_seq(&lab, &dsn);
    let owner = pg.psql("abperf", "SELECT pid FROM experiment_owner");
    let out = lab.ok(&["run", "--resume", "1", "--db", &dsn]);
    out.err_has("abperf: note: experiment 1 is already complete; nothing to resume");
    assert_eq!(runs_by_seq(&lab, &dsn), before);
    assert_eq!(pg.psql("abperf", "SELECT pid FROM experiment_owner"), owner);
    // The same note on SQLite.
    let db = lab.p("local.db");
    lab.ok(&["run", "--db", &db, "-r", "2", "true"]);
    let local = lab.ok(&["run", "--resume", "1", "--db", &db]);
    local.err_has("abperf: note: experiment 1 is already complete; nothing to resume");
    assert_eq!(status_and_slots(&pg).0, "complete");
}

/// A run's experiment whose stored design says `--tune` was given, or kernels (as one copied
/// from an SQLite store holds it): its tune journal or boots cannot be kept on the server, so
/// the resume is refused before the experiment is taken over.
#[test]
fn a_resume_of_a_tune_or_kernel_experiment_on_the_server_is_refused_naming_it() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::new();
    let dsn = pg.create_db("abperf");
    let mut child = start(&lab, &["run", "--db", &dsn, "-r", "200", "sleep 0.05"]);
    wait_for_runs(&pg, &mut child, 1);
    child.kill().unwrap();
    child.wait().unwrap();
    let original = pg.psql("abperf", "SELECT design FROM experiment WHERE id = 1");
    let stored = runs_stored(&pg, "true");
    for (key, value, what) in [
        (
            "noise",
            serde_json::json!({"tune": []}),
            "--tune (its journal",
        ),
        ("vm", serde_json::json!({}), "kernels (--kernel, --append"),
    ] {
        let mut design: serde_json::Value = serde_json::from_str(&original).unwrap();
        match key {
            "noise" => design["noise"]["tune"] = value["tune"].clone(),
            _ => design[key] = value,
        }
        let text = design.to_string().replace('\'', "''");
        pg.psql(
            "abperf",
            &format!("UPDATE experiment SET design = '{text}' WHERE id = 1"),
        );
        let out: Out = lab.fails(&["run", "--resume", "1", "--db", &dsn], 2);
        out.err_has(&format!("experiment 1 was made with {what}"))
            .err_has("resuming it is not built yet on PostgreSQL");
        // Not taken over: the killed abperf is still its owner, and nothing ran.
        let owner = pg.psql("abperf", "SELECT pid FROM experiment_owner");
        assert_eq!(owner, child.id().to_string());
        assert_eq!(runs_stored(&pg, "true"), stored);
    }
}
