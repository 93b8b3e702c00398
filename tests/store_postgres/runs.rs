//! `abperf run --db postgres://...`: the experiment and every run land in PostgreSQL under the
//! ids the run prints, and `list`, `show`, `compare`, `export` on the DSN say what the run said;
//! a `kill -9` mid-run leaves only whole runs there, its owner recorded there read as dead (and
//! its knob is put back by the next abperf that takes it); four runs at once all land; a server
//! that goes away mid-run stops abperf promptly with an error naming it.

use super::common::postgres::Server;
use super::common::{Lab, Out};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// The experiment id in "experiment N complete, stored in ...".
fn completed_id(out: &Out) -> i64 {
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("experiment ") && l.contains(" complete, stored in "))
        .unwrap_or_else(|| panic!("no completion line: {out}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// How many runs PostgreSQL holds (0 before the first run made the schema).
pub(super) fn runs_stored(pg: &Server, where_: &str) -> i64 {
    let made = pg.psql(
        "abperf",
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'run'",
    );
    if made != "1" {
        return 0;
    }
    let sql = format!("SELECT count(*) FROM run WHERE {where_}");
    pg.psql("abperf", &sql).parse().unwrap()
}

/// Whether perf's software events `task-clock` and `page-faults` can be counted here (a run
/// with them has `metric` rows beside its own: one transaction per run).
fn counters_count(lab: &Lab) -> bool {
    let probe = [
        "run",
        "--no-store",
        "-r",
        "1",
        "-e",
        "task-clock,page-faults",
        "true",
    ];
    lab.run(&probe).code == Some(0)
}

/// `abperf run ARGS` started, its output into files of the lab.
pub(super) fn start(lab: &Lab, args: &[&str]) -> Child {
    let file = |name: &str| std::fs::File::create(lab.path(name)).unwrap();
    lab.cmd(args)
        .stdout(Stdio::from(file("run.out")))
        .stderr(Stdio::from(file("run.err")))
        .spawn()
        .unwrap()
}

/// Wait until PostgreSQL holds `n` runs (or the child exits, or a minute passes: a failure).
pub(super) fn wait_for_runs(pg: &Server, child: &mut Child, n: i64) {
    let t = Instant::now();
    while runs_stored(pg, "true") < n {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("abperf ended ({status}) before {n} runs were stored");
        }
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fewer than {n} runs stored after a minute");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_run_lands_in_postgres_under_the_ids_it_prints_and_reads_back_as_it_printed() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::new();
    let dsn = pg.create_db("abperf");
    lab.ok(&["run", "--db", &dsn, "-r", "1", "true"]);
    // The next experiment id PostgreSQL gives is 41: the run must print that one.
    pg.psql(
        "abperf",
        "ALTER TABLE experiment ALTER COLUMN id RESTART WITH 41",
    );
    let args = [
        "run",
        "--db",
        &dsn,
        "-r",
        "5",
        "-n",
        "a",
        "true",
        "-n",
        "b",
        "sleep 0.001",
    ];
    let run = lab.ok(&args);
    run.err_has("abperf: experiment 41: 2 variant(s) x 5 runs (+1 warm-up)");
    assert_eq!(completed_id(&run), 41, "{run}");
    run.has(&format!("stored in {dsn}"))
        .has(&format!("compare 41 --db {dsn}"));
    assert_eq!(runs_stored(&pg, "experiment_id = 41"), 12);
    assert_eq!(
        runs_stored(&pg, "experiment_id = 41 AND wall_ns IS NULL"),
        0
    );
    assert_eq!(
        pg.psql("abperf", "SELECT status FROM experiment WHERE id = 41"),
        "complete"
    );
    let list = lab.ok(&["list", "--db", &dsn]).stdout;
    let row = list.lines().find(|l| l.trim_start().starts_with("41 "));
    assert!(
        row.is_some_and(|r| r.contains("complete") && r.contains("12/12")),
        "{list}"
    );
    // The summary the run printed is the one `show` prints from PostgreSQL, its verdict the
    // one `compare` gives.
    let summary = &run.stdout[run.stdout.find(" Variant 'a'").unwrap()..];
    let blocks: Vec<&str> = summary
        .lines()
        .take_while(|l| l.is_empty() || l.starts_with(' '))
        .collect();
    lab.ok(&["show", "41", "--db", &dsn])
        .has(blocks.join("\n").trim_end());
    let verdict = summary.lines().nth(blocks.len()).unwrap();
    if !verdict.starts_with("experiment 41") {
        lab.ok(&["compare", "41", "--db", &dsn]).has(verdict);
    }
    let export = lab
        .ok(&["export", "41", "--db", &dsn, "--format", "json"])
        .json();
    let runs = export["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 12);
    for r in runs {
        let metrics = r["metrics"].as_object().unwrap();
        assert_eq!(metrics.len(), 10, "{r}");
        assert!(metrics["wall_ns"].as_f64().unwrap() > 0.0, "{r}");
    }
}

#[test]
fn a_kill_9_mid_run_leaves_only_whole_runs_in_postgres_and_its_knob_put_back_later() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::with_own_locks();
    let dsn = pg.create_db("abperf");
    // A knob the run changes (its journal is the claim beside the knob's lock, not the store).
    let k = lab.write("knob", "2000\n");
    let spec = format!("{k}=111,222");
    let counted = counters_count(&lab);
    let mut args = vec!["run", "--db", &dsn, "-r", "400", "-k", &spec, "sleep 0.05"];
    if counted {
        args.extend(["-e", "task-clock,page-faults"]);
    }
    let mut child = start(&lab, &args);
    wait_for_runs(&pg, &mut child, 6);
    // Its owner is there, written with the experiment: it reads as running while it lives.
    let owner = pg.psql("abperf", "SELECT experiment_id, pid FROM experiment_owner");
    assert_eq!(owner, format!("1|{}", child.id()));
    let list = lab.ok(&["list", "--db", &dsn]).stdout;
    assert!(list.contains("running"), "{list}");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let stored = runs_stored(&pg, "true");
    assert!((6..802).contains(&stored), "{stored} runs");
    assert_eq!(runs_stored(&pg, "wall_ns IS NULL OR user_ns IS NULL"), 0);
    // With counters, every run has both of its metric rows: none is partial.
    let whole = "(SELECT count(*) FROM metric m WHERE m.run_id = run.id) = 2";
    let expected = if counted { stored } else { 0 };
    assert_eq!(runs_stored(&pg, whole), expected);
    assert_eq!(
        pg.psql("abperf", "SELECT status FROM experiment"),
        "running"
    );
    let knobs = pg.psql("abperf", "SELECT knobs FROM variant ORDER BY id");
    assert_eq!(knobs.matches(r#""original":"2000""#).count(), 2, "{knobs}");
    let list = lab.ok(&["list", "--db", &dsn]).stdout;
    assert!(list.contains("interrupted"), "{list}");
    let export = lab
        .ok(&["export", "1", "--db", &dsn, "--format", "json"])
        .json();
    assert_eq!(export["runs"].as_array().unwrap().len() as i64, stored);
    // Its owner is dead: the report says so.
    lab.ok(&["compare", "1", "--db", &dsn]).has(&format!(
        "its abperf (pid {} has exited) stopped",
        child.id()
    ));
    // The next abperf that takes the knob puts the original back at its end.
    let local = format!("{k}=5");
    lab.ok(&["run", "-r", "1", "--warmup", "0", "-k", &local, "true"]);
    assert_eq!(std::fs::read_to_string(&k).unwrap().trim(), "2000");
}

#[test]
fn four_runs_into_one_postgres_at_once_all_land() {
    let Some(pg) = Server::start() else { return };
    let dsn = pg.create_db("abperf");
    // Into a database without abperf's schema: the four make it at once, then race on the runs,
    // each run with two counters where perf's software events can be counted here: their names
    // are interned by all four at the same moment.
    let labs: Vec<Lab> = (0..4).map(|_| Lab::new()).collect();
    let counted = counters_count(&labs[0]);
    let mut args = vec!["run", "--db", &dsn, "-r", "20"];
    if counted {
        args.extend(["-e", "task-clock,page-faults"]);
    }
    args.extend(["-n", "a", "true", "-n", "b", "true"]);
    let children: Vec<Child> = labs
        .iter()
        .map(|lab| {
            lab.cmd(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut ids: Vec<i64> = children
        .into_iter()
        .map(|c| {
            let out = Out::from(c.wait_with_output().unwrap(), &args);
            assert_eq!(out.code, Some(0), "{out}");
            completed_id(&out)
        })
        .collect();
    for id in &ids {
        assert_eq!(runs_stored(&pg, &format!("experiment_id = {id}")), 42);
        let metrics = pg.psql(
            "abperf",
            &format!(
                "SELECT count(*) FROM metric m JOIN run r ON r.id = m.run_id \
                 WHERE r.experiment_id = {id}"
            ),
        );
        assert_eq!(metrics, if counted { "84" } else { "0" }, "experiment {id}");
    }
    if counted {
        let names = pg.psql("abperf", "SELECT name FROM metric_name ORDER BY name");
        assert_eq!(names, "page-faults\ntask-clock");
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "{ids:?}");
}

#[test]
fn a_server_that_goes_away_mid_run_stops_abperf_promptly_naming_it() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::new();
    let dsn = pg.create_db("abperf");
    let mut child = start(&lab, &["run", "--db", &dsn, "-r", "5000", "sleep 0.01"]);
    wait_for_runs(&pg, &mut child, 3);
    pg.stop();
    let status = super::common::wait_within(
        &mut child,
        Duration::from_secs(20),
        "abperf after its server stopped",
    );
    let err = std::fs::read_to_string(lab.path("run.err")).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("abperf: error: committing run ")
            && err.contains(&format!("to the PostgreSQL store {dsn}")),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
