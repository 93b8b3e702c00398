//! `abperf fleet run --db postgres://...`: the real dropbear hosts of tests/common/fleet.rs and a
//! private PostgreSQL server (tests/common/postgres.rs) on this machine, which the hosts reach
//! too. The experiment, its hosts and every run land in PostgreSQL, each run labelled with its
//! host; the hosts commit their runs there themselves as they end (seen there before the
//! dispatch ends, and those of a host lost mid-run seen there before anything was fetched);
//! `compare`, `fleet status` and `fleet run --resume` work on the DSN; a new experiment no host
//! ran anything of is deleted there; the coordinator's ownership is kept there (a take-over of
//! an experiment whose coordinator lives is refused, of one whose coordinator was killed goes
//! on, and of two at once exactly one goes on); two experiments at once do not collide.
//! Skipped, never passed, without dropbear, Ansible or PostgreSQL.

#![allow(clippy::disallowed_macros)] // tests print what they saw to stderr
mod common;
use common::Lab;
use common::fleet::Fleet;
use common::postgres::Server;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A fleet, a lab whose Ansible opens a connection per task, the inventory, and a server with
/// an empty database `abperf` (its DSN).
fn setup() -> Option<(Fleet, Lab, String, Server, String)> {
    if let Some(why) = common::fleet::missing() {
        common::skip(&why);
        return None;
    }
    let pg = Server::start()?;
    let dsn = pg.create_db("abperf");
    let fleet = Fleet::start();
    let inv = fleet.inventory("inventory.ini");
    let lab = Lab::new()
        .env("ANSIBLE_SSH_ARGS", "-o ControlMaster=no")
        .env("ANSIBLE_NOCOLOR", "1");
    Some((fleet, lab, inv, pg, dsn))
}

/// `fleet run -i inv --db dsn`, then `extra`, then variants a and b (4 runs and a warm-up each).
fn fleet_run<'a>(
    inv: &'a str,
    dsn: &'a str,
    extra: &[&'a str],
    a: &'a str,
    b: &'a str,
) -> Vec<&'a str> {
    let mut v = vec!["fleet", "run", "-i", inv, "--db", dsn];
    v.extend(extra);
    v.extend(["-r", "4", "--warmup", "1", "-n", "a", "-n", "b", a, b]);
    v
}

/// Runs per host label of experiment `id`, as PostgreSQL holds them.
fn runs_by_host(pg: &Server, id: i64) -> BTreeMap<String, usize> {
    if !has_schema(pg) {
        return BTreeMap::new();
    }
    let sql = format!(
        "SELECT coalesce(l.host, '-'), count(*) FROM run r LEFT JOIN run_label l \
         ON l.run_id = r.id WHERE r.experiment_id = {id} GROUP BY 1 ORDER BY 1"
    );
    pg.psql("abperf", &sql)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (host, n) = l.split_once('|').unwrap();
            (host.to_string(), n.parse().unwrap())
        })
        .collect()
}

/// Whether abperf has made its schema there yet.
fn has_schema(pg: &Server) -> bool {
    let made = pg.psql(
        "abperf",
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'run_label'",
    );
    made == "1"
}

/// How many runs PostgreSQL holds (0 before the schema is made).
fn runs_stored(pg: &Server) -> usize {
    if !has_schema(pg) {
        return 0;
    }
    pg.psql("abperf", "SELECT count(*) FROM run")
        .parse()
        .unwrap()
}

/// The lines file host `place` of the fleet's only experiment writes, once it exists.
fn lines_file(fleet: &Fleet, place: usize) -> Option<std::path::PathBuf> {
    let root = fleet.home().join(".abperf-fleet");
    let token = std::fs::read_dir(root).ok()?.flatten().next()?.path();
    let lines = token.join(place.to_string()).join("lines.jsonl");
    lines.exists().then_some(lines)
}

/// The runs in host `place`'s lines file.
fn lines_runs(fleet: &Fleet, place: usize) -> usize {
    lines_file(fleet, place)
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map_or(0, |t| t.matches(r#""type":"run""#).count())
}

/// Experiment 1 is complete in PostgreSQL, and `compare --db URL` treats its hosts as blocks.
fn complete_with_hosts_as_blocks(lab: &Lab, pg: &Server, dsn: &str) {
    assert_eq!(
        pg.psql("abperf", "SELECT status FROM experiment WHERE id = 1"),
        "complete"
    );
    let doc = lab
        .ok(&["compare", "1", "--db", dsn, "--format", "json"])
        .json();
    assert_eq!(
        doc["analysis"]["comparisons"][0]["primary"], "hosts",
        "{doc}"
    );
}

fn three_hosts(n: usize) -> BTreeMap<String, usize> {
    ["lab-a", "lab-b", "lab-c"]
        .iter()
        .map(|h| (h.to_string(), n))
        .collect()
}

#[test]
fn three_hosts_commit_into_postgres_as_they_run_and_compare_on_the_dsn_uses_hosts_as_blocks() {
    let Some((fleet, lab, inv, pg, dsn)) = setup() else {
        return;
    };
    let t = Instant::now();
    let args = fleet_run(&inv, &dsn, &["--seed", "11"], "sleep 0.15", "sleep 0.2");
    let mut child = lab
        .cmd(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Runs land in PostgreSQL while the dispatch still runs: the hosts commit them (the
    // coordinator commits only what it fetches when ansible-playbook has ended).
    let mut seen = 0;
    let mut hosts_running = false;
    while child.try_wait().unwrap().is_none() {
        seen = seen.max(runs_stored(&pg));
        if seen >= 6 {
            // Read after PostgreSQL: a host still running its share then means nothing had
            // been fetched when those runs were there.
            hosts_running = (0..3).any(|p| lines_runs(&fleet, p) < 10);
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(120), "no run landed");
        std::thread::sleep(Duration::from_millis(50));
    }
    let landed_at = t.elapsed().as_secs_f64();
    let out = common::Out::from(child.wait_with_output().unwrap(), &args);
    eprintln!(
        "fleet run into PostgreSQL: {:.1} s; {seen} runs there at {landed_at:.1} s",
        t.elapsed().as_secs_f64()
    );
    assert_eq!(out.code, Some(0), "{out}");
    assert!(
        seen >= 6,
        "only {seen} runs landed before the dispatch ended"
    );
    assert!(
        hosts_running,
        "the hosts had ended when {seen} runs were there"
    );
    out.has("experiment 1 complete")
        .has("n=3 hosts, random effects over hosts")
        .has(&format!("stored in {dsn}"));
    assert_eq!(runs_by_host(&pg, 1), three_hosts(10));
    // The hosts and their hello are there too.
    let store =
        abperf::store::Store::open_read_only(&abperf::store::Location::parse(&dsn)).unwrap();
    let hosts = store.fleet_hosts(1).unwrap();
    assert_eq!(hosts.len(), 3);
    assert!(
        hosts
            .iter()
            .all(|h| h.environment.is_some() && h.abperf.is_some())
    );
    complete_with_hosts_as_blocks(&lab, &pg, &dsn);
    lab.ok(&["fleet", "status", "1", "--db", &dsn])
        .has("lab-c       10         10        0");
}

#[test]
fn a_host_lost_mid_run_has_its_finished_runs_in_postgres_and_resume_on_the_dsn_completes() {
    let Some((mut fleet, lab, inv, pg, dsn)) = setup() else {
        return;
    };
    let args = fleet_run(&inv, &dsn, &["--seed", "13"], "sleep 0.3", "sleep 0.35");
    let (out, lost) = std::thread::scope(|s| {
        let run = s.spawn(|| lab.cmd(&args).output().expect("abperf runs"));
        // lab-b (place 1) is lost once PostgreSQL holds two of its runs.
        // The limit bounds a hang only: with a QEMU guest beside it on a busy 2-core machine
        // (scripts/test_lanes.py), Ansible took over 60 s to start the hosts' first runs.
        let t = Instant::now();
        while runs_by_host(&pg, 1).get("lab-b").is_none_or(|&n| n < 2) {
            assert!(t.elapsed().as_secs() < 180, "lab-b never ran two runs");
            std::thread::sleep(Duration::from_millis(20));
        }
        fleet.kill_host("lab-b");
        let finished = lines_runs(&fleet, 1);
        let out = run.join().unwrap();
        // Nothing of lab-b was fetched (it never will be): its finished runs are there all the
        // same, committed by lab-b itself (all but one it may have written to its lines file,
        // its fallback, and not yet committed).
        let there = runs_by_host(&pg, 1).get("lab-b").copied().unwrap_or(0);
        (out, (finished, there))
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let (finished, there) = lost;
    eprintln!("lab-b lost after {finished} runs; {there} of them in PostgreSQL at once");
    assert!(there >= 2 && there + 1 >= finished, "{there} of {finished}");
    assert!(stderr.contains("abperf: error: host lab-b: "), "{stderr}");
    assert!(stderr.contains("--resume 1"), "{stderr}");
    assert_eq!(runs_by_host(&pg, 1).get("lab-a"), Some(&10));
    lab.ok(&["fleet", "status", "1", "--db", &dsn]).has("lab-b");
    assert_eq!(
        pg.psql("abperf", "SELECT status FROM experiment WHERE id = 1"),
        "failed"
    );
    let before = pg.psql(
        "abperf",
        "SELECT seq, started_ns, wall_ns FROM run WHERE experiment_id = 1 ORDER BY seq",
    );
    fleet.restart("lab-b");
    lab.ok(&["fleet", "run", "-i", &inv, "--resume", "1", "--db", &dsn])
        .has("experiment 1 complete");
    assert_eq!(runs_by_host(&pg, 1), three_hosts(10));
    // Nothing that was stored is lost, changed or stored twice (UNIQUE (experiment_id, seq)).
    let after = pg.psql(
        "abperf",
        "SELECT seq, started_ns, wall_ns FROM run WHERE experiment_id = 1 ORDER BY seq",
    );
    for line in before.lines() {
        assert!(after.lines().any(|l| l == line), "{line} is gone");
    }
    complete_with_hosts_as_blocks(&lab, &pg, &dsn);
}

#[test]
fn a_new_experiment_no_host_ran_anything_of_is_deleted_from_postgres() {
    let Some((mut fleet, lab, inv, pg, dsn)) = setup() else {
        return;
    };
    fleet.stop("lab-c");
    let args = fleet_run(&inv, &dsn, &["--limit", "lab-c"], "true", "true");
    lab.fails(&args, 1)
        .err_has("no host ran anything; experiment 1 is not kept")
        .err_has("host lab-c: 10 of 10 runs missing: unreachable");
    for table in ["experiment", "slot", "fleet_host"] {
        let sql = format!("SELECT count(*) FROM {table}");
        assert_eq!(pg.psql("abperf", &sql), "0", "{table}");
    }
}

/// The recorded owner of experiment `id` in PostgreSQL: "pid|host" ("" when none).
fn owner_there(pg: &Server, id: i64) -> String {
    let sql = format!("SELECT pid, host FROM experiment_owner WHERE experiment_id = {id}");
    pg.psql("abperf", &sql)
}

/// The status `list --db dsn` shows for experiment 1.
fn listed_status(lab: &Lab, dsn: &str) -> String {
    let out = lab.ok(&["list", "--db", dsn]);
    let line = out
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("1 "));
    let line = line.unwrap_or_else(|| panic!("experiment 1 is not listed: {out}"));
    ["running", "interrupted", "complete", "failed"]
        .into_iter()
        .find(|s| line.contains(s))
        .unwrap_or_else(|| panic!("no status in {line}"))
        .to_string()
}

#[test]
fn the_coordinator_owns_its_experiment_in_postgres_and_of_two_take_overs_of_a_dead_one_one_wins() {
    let Some((mut fleet, lab, inv, pg, dsn)) = setup() else {
        return;
    };
    let t = Instant::now();
    // Runs long enough that the hosts are still at it when their coordinator dies, and that
    // a take-over still dispatches when the other one tries.
    let args = fleet_run(&inv, &dsn, &["--seed", "17"], "sleep 1", "sleep 1.05");
    let mut first = lab
        .cmd(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    while runs_stored(&pg) < 3 {
        assert!(
            first.try_wait().unwrap().is_none(),
            "the fleet run ended early"
        );
        assert!(t.elapsed() < Duration::from_secs(120), "no run landed");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The owner was written with the experiment; while it lives, list shows it running and a
    // take-over from here is refused, naming its pid and host.
    let host = pg.psql("abperf", "SELECT host FROM experiment_owner");
    assert_eq!(owner_there(&pg, 1), format!("{}|{host}", first.id()));
    assert_eq!(listed_status(&lab, &dsn), "running");
    let resume = ["fleet", "run", "-i", &inv, "--resume", "1", "--db", &dsn];
    lab.fails(&resume, 1).err_has(&format!(
        "experiment 1 cannot be resumed: it is still running in pid {} on {host}",
        first.id()
    ));
    // The coordinator dies mid-run (kill -9 of it, its ansible-playbook and ssh), and so do the
    // hosts with the abperf running their shares. The coordinator is frozen first, so that it
    // cannot see its hosts go, and its ssh sessions hold the hosts' abperf under their servers
    // (an ended session would leave its abperf running on). The hosts come back empty.
    let coordinator = common::fleet::freeze_tree(first.id());
    for h in ["lab-a", "lab-b", "lab-c"] {
        fleet.kill_host(h);
    }
    common::fleet::kill_frozen(&coordinator);
    let _ = first.wait();
    for h in ["lab-a", "lab-b", "lab-c"] {
        fleet.restart(h);
    }
    assert_eq!(
        pg.psql("abperf", "SELECT status FROM experiment WHERE id = 1"),
        "running"
    );
    assert_eq!(listed_status(&lab, &dsn), "interrupted");
    let stored = runs_stored(&pg);
    assert!(
        stored < 24,
        "{stored} of 30 runs were stored when the coordinator died"
    );
    // Two take-overs at once: exactly one goes on, the other is refused naming the winner.
    let t = Instant::now();
    let (one, two) = std::thread::scope(|s| {
        let go = || {
            let child = lab
                .cmd(&resume)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let pid = child.id();
            (
                pid,
                common::Out::from(child.wait_with_output().unwrap(), &resume),
            )
        };
        let one = s.spawn(go);
        let two = s.spawn(go);
        (one.join().unwrap(), two.join().unwrap())
    });
    eprintln!("two take-overs at once: {:.1} s", t.elapsed().as_secs_f64());
    let (won, lost) = match (one.1.code, two.1.code) {
        (Some(0), Some(1)) => (one, two),
        (Some(1), Some(0)) => (two, one),
        _ => panic!("not exactly one take-over went on:\n{}\n{}", one.1, two.1),
    };
    won.1.has("experiment 1 complete");
    lost.1.err_has(&format!(
        "experiment 1 cannot be resumed: it is still running in pid {} on {host}",
        won.0
    ));
    assert_eq!(owner_there(&pg, 1), format!("{}|{host}", won.0));
    assert_eq!(runs_by_host(&pg, 1), three_hosts(10));
    complete_with_hosts_as_blocks(&lab, &pg, &dsn);
}

#[test]
fn two_fleet_experiments_at_once_into_one_postgres_do_not_collide() {
    let Some((_fleet, lab, inv, pg, dsn)) = setup() else {
        return;
    };
    let t = Instant::now();
    let start = |seed: &str, title: &str| {
        let extra = ["--seed", seed, "--title", title];
        let args = fleet_run(&inv, &dsn, &extra, "sleep 0.05", "sleep 0.06");
        let out = lab.cmd(&args).output().expect("abperf runs");
        common::Out::from(out, &args)
    };
    let (one, two) = std::thread::scope(|s| {
        let one = s.spawn(|| start("21", "one"));
        let two = s.spawn(|| start("22", "two"));
        (one.join().unwrap(), two.join().unwrap())
    });
    eprintln!(
        "two fleet runs at once into PostgreSQL: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let mut ids = Vec::new();
    for (o, title) in [(&one, "one"), (&two, "two")] {
        assert_eq!(o.code, Some(0), "{o}");
        let line = o
            .stdout
            .lines()
            .find(|l| l.contains(" complete, stored in "));
        let line = line.unwrap_or_else(|| panic!("no completion line: {o}"));
        let id: i64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        let sql = format!("SELECT name, status FROM experiment WHERE id = {id}");
        assert_eq!(pg.psql("abperf", &sql), format!("{title}|complete"));
        assert_eq!(runs_by_host(&pg, id), three_hosts(10), "experiment {id}");
        ids.push(id);
    }
    ids.sort();
    assert_eq!(ids, [1, 2]);
    assert_eq!(runs_stored(&pg), 60);
}
