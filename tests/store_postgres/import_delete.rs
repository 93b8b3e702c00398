//! `abperf import` and `abperf delete` on a PostgreSQL store, driving the real binary: an import
//! lands there as a new experiment that reads as the same import into SQLite reads, a file that
//! does not parse stores nothing, runs added to an experiment there read as on SQLite;
//! a delete removes every row of its experiment and nothing of the others, and one whose owner
//! is alive is refused naming its pid unless `--force`.

use super::common::postgres::Server;
use super::common::{Lab, Out, data};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// `abperf ARGS` with `db` as its store (`$ABPERF_DB`, so the command lines it records are the
/// same whichever store it writes).
pub(super) fn on(lab: &Lab, db: &str, args: &[&str]) -> Out {
    let o = lab.cmd(args).env("ABPERF_DB", db).output().unwrap();
    Out::from(o, args)
}

#[track_caller]
pub(super) fn ok(lab: &Lab, db: &str, args: &[&str]) -> Out {
    let o = on(lab, db, args);
    assert_eq!(o.code, Some(0), "{o}");
    o
}

/// Rows of every abperf table in database `abperf`, but the ones no experiment owns.
pub(super) fn row_counts(pg: &Server) -> Vec<(String, i64)> {
    let tables = pg.psql(
        "abperf",
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' \
         AND table_name NOT IN ('metric_name', 'abperf_schema') ORDER BY table_name",
    );
    tables
        .lines()
        .map(|t| {
            let n = pg.psql("abperf", &format!("SELECT count(*) FROM \"{t}\""));
            (t.to_string(), n.parse().unwrap())
        })
        .collect()
}

#[test]
fn an_import_into_postgres_reads_as_the_same_import_into_sqlite() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::new();
    let dsn = pg.create_db("abperf");
    let sqlite = lab.p("abperf.db");
    let hyperfine = data("hyperfine-two.json");
    let time = data("seed000-time.txt");
    let imports: [&[&str]; 2] = [
        &[
            "import",
            "--format",
            "hyperfine",
            "--host",
            "h1",
            &hyperfine,
        ],
        &[
            "import", "--format", "time", "--host", "h2", "--new", "t", &time,
        ],
    ];
    for args in imports {
        let local = ok(&lab, &sqlite, args);
        let there = ok(&lab, &dsn, args);
        assert_eq!(there.stdout, local.stdout, "{args:?}");
        assert_eq!(there.stderr, local.stderr, "{args:?}");
    }
    assert_eq!(pg.psql("abperf", "SELECT count(*) FROM experiment"), "2");
    let hosts = "SELECT DISTINCT host FROM run_label ORDER BY host";
    assert_eq!(pg.psql("abperf", hosts), "h1\nh2");
    for id in ["1", "2"] {
        for args in [
            vec!["show", id],
            vec!["compare", id],
            vec!["export", id, "--format", "csv"],
            vec!["export", id, "--format", "json"],
        ] {
            // The same but for where the data is (the store named in `compare`'s footer) and
            // when it was imported (the two imports may fall either side of a second).
            let local = untimed(&ok(&lab, &sqlite, &args).stdout.replace(&sqlite, "STORE"));
            let there = untimed(&ok(&lab, &dsn, &args).stdout.replace(&dsn, "STORE"));
            assert_eq!(there, local, "{args:?}");
        }
    }
    // Importing the same file again makes another experiment, as on SQLite (no duplicate check).
    let again = ok(&lab, &dsn, imports[0]);
    again.has("into experiment 3");
    assert_eq!(again.stdout, ok(&lab, &sqlite, imports[0]).stdout);
    // A file that does not parse stores nothing.
    let bad = data("hyperfine-bad.json");
    let before = row_counts(&pg);
    let o = on(&lab, &dsn, &["import", "--format", "hyperfine", &bad]);
    let local = on(&lab, &sqlite, &["import", "--format", "hyperfine", &bad]);
    assert_eq!((o.code, &o.stderr), (local.code, &local.stderr), "{o}");
    assert_ne!(o.code, Some(0), "{o}");
    assert_eq!(row_counts(&pg), before);
    // Runs added to experiments there, as on SQLite: the same variants again with other hosts
    // (hyperfine's summaries replaced), a new variant; each store reads the same.
    let one = data("time-default.txt");
    let adds: [&[&str]; 3] = [
        &[
            "import",
            "--experiment",
            "2",
            "--format",
            "time",
            "--host",
            "h3",
            &time,
        ],
        &[
            "import",
            "--experiment",
            "1",
            "--format",
            "hyperfine",
            "--host",
            "h4",
            &hyperfine,
        ],
        &[
            "import",
            "--experiment",
            "latest",
            "--format",
            "time",
            "--variant",
            "x",
            &one,
        ],
    ];
    for args in adds {
        let local = ok(&lab, &sqlite, args);
        let there = ok(&lab, &dsn, args);
        assert_eq!(there.all(), local.all(), "{args:?}");
    }
    for id in ["1", "2", "3"] {
        for args in [vec!["show", id], vec!["export", id, "--format", "json"]] {
            let local = untimed(&ok(&lab, &sqlite, &args).stdout.replace(&sqlite, "STORE"));
            let there = untimed(&ok(&lab, &dsn, &args).stdout.replace(&dsn, "STORE"));
            assert_eq!(there, local, "{args:?}");
        }
    }
    // The same checks: an experiment that is not there, a file of two variants into --variant.
    let before = row_counts(&pg);
    for args in [
        vec!["import", "--experiment", "9", "--format", "time", &time],
        vec![
            "import",
            "--experiment",
            "1",
            "--format",
            "hyperfine",
            "--variant",
            "z",
            &hyperfine,
        ],
    ] {
        let local = on(&lab, &sqlite, &args);
        let there = on(&lab, &dsn, &args);
        assert_eq!(there.code, local.code, "{there}");
        assert_eq!(there.code, Some(2), "{there}");
    }
    assert_eq!(row_counts(&pg), before);
}

#[test]
fn a_delete_on_postgres_removes_every_row_of_its_experiment_and_nothing_else() {
    let Some(pg) = Server::start() else { return };
    let lab = super::common::seeded::seeded();
    let (a, b, dsn) = (lab.p("abperf.db"), lab.p("b.db"), pg.create_db("abperf"));
    std::fs::copy(&a, &b).unwrap();
    lab.ok(&["store", "copy", &a, &dsn]);
    // A fleet host of experiment 2 (written as `fleet run` writes one; seeded has no fleet).
    pg.psql(
        "abperf",
        "INSERT INTO fleet_host (experiment_id, pos, name, first_seq, end_seq) \
         VALUES (2, 0, 'lab1', 0, 1)",
    );
    // A profiled run of experiment 2's first variant (seeded has no profiles).
    pg.psql(
        "abperf",
        "INSERT INTO profile (experiment_id, variant_id, seq, event, samples, wall_ns, \
         other_self, symbols) SELECT 2, min(id), 0, 'cpu-clock', 10, 1000, 0.5, \
         '[[\"main\", 0.5, 1.0]]' FROM variant WHERE experiment_id = 2",
    );
    // Every reference cascades, as in SQLite's schema, but the per-run tables', which have no
    // foreign keys on PostgreSQL: the delete removes their rows itself.
    let kept = "SELECT conrelid::regclass || '.' || conname FROM pg_constraint \
                WHERE contype = 'f' AND confdeltype <> 'c'";
    assert_eq!(pg.psql("abperf", kept), "");
    let per_run = "SELECT conrelid::regclass || '.' || conname FROM pg_constraint \
                   WHERE contype = 'f' AND conrelid::regclass::text IN \
                   ('slot', 'run', 'metric', 'run_label', 'import_run')";
    assert_eq!(pg.psql("abperf", per_run), "");
    // A finished `abperf run` there (experiment 7, with its owner row), and in the SQLite copy.
    let run = ["run", "-r", "2", "--warmup", "0", "true"];
    ok(&lab, &b, &run).has("experiment 7");
    ok(&lab, &dsn, &run).has("experiment 7");
    // Every kind of row is there to be deleted: every table holds some (micro rounds and
    // findings, trace captures and bins, boots, imports, fleet hosts, owners, ...).
    let full = row_counts(&pg);
    assert!(full.iter().all(|(_, n)| *n > 0), "{full:?}");
    assert!(full.len() >= 18, "{full:?}");
    for id in ["2", "3", "4", "5", "6", "7"] {
        let local = ok(&lab, &b, &["delete", id]);
        let there = ok(&lab, &dsn, &["delete", id]);
        assert_eq!(there.stdout, local.stdout);
        there.has(&format!("deleted experiment {id} ("));
    }
    // The one left is whole.
    assert_eq!(super::content(&dsn, 1), super::content(&a, 1));
    // Deleted again, or never there: the same refusal as on SQLite.
    let local = on(&lab, &b, &["delete", "4"]);
    let there = on(&lab, &dsn, &["delete", "4"]);
    assert_eq!(there.code, local.code, "{there}");
    assert_eq!(there.code, Some(2), "{there}");
    let gone = ok(&lab, &dsn, &["delete", "latest"]);
    assert_eq!(gone.stdout, ok(&lab, &b, &["delete", "latest"]).stdout);
    gone.has("deleted experiment 1 (");
    let left: Vec<(String, i64)> = row_counts(&pg)
        .into_iter()
        .filter(|(_, n)| *n != 0)
        .collect();
    assert!(left.is_empty(), "rows left with no experiment: {left:?}");
}

/// `abperf run ARGS` started in the background, its output discarded.
fn start(lab: &Lab, dsn: &str, args: &[&str]) -> Child {
    lab.cmd(args)
        .env("ABPERF_DB", dsn)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_delete_on_postgres_of_a_live_experiment_is_refused_naming_its_pid_unless_forced() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::with_own_locks();
    let dsn = pg.create_db("abperf");
    ok(
        &lab,
        &dsn,
        &[
            "import",
            "--format",
            "hyperfine",
            &data("hyperfine-two.json"),
        ],
    );
    let other = row_counts(&pg);
    let mut bg = start(
        &lab,
        &dsn,
        &["run", "-r", "400", "--warmup", "0", "sleep 0.05"],
    );
    let t = Instant::now();
    while pg.psql("abperf", "SELECT count(*) FROM run WHERE experiment_id = 2") == "0" {
        if let Some(status) = bg.try_wait().unwrap() {
            panic!("abperf run ended ({status}) before a run was stored");
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no run stored in 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = on(&lab, &dsn, &["delete", "2"]);
    assert_eq!(o.code, Some(1), "{o}");
    o.err_has(&format!("still running in pid {}", bg.id()))
        .err_has("delete it anyway with --force");
    let held = "SELECT count(*) FROM experiment WHERE id = 2";
    assert_eq!(pg.psql("abperf", held), "1", "kept");
    // --force deletes it and stops nothing.
    ok(&lab, &dsn, &["delete", "2", "--force"]).has("deleted experiment 2 (");
    assert!(
        bg.try_wait().unwrap().is_none(),
        "the runner was not stopped"
    );
    assert_eq!(pg.psql("abperf", held), "0");
    // Its next commit fails (its experiment is gone), or it is killed here.
    let t = Instant::now();
    while bg.try_wait().unwrap().is_none() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = bg.kill();
    bg.wait().unwrap();
    // Whatever it wrote of experiment 2 is gone; experiment 1 is untouched.
    assert_eq!(row_counts(&pg), other);
}

#[test]
fn of_two_imports_into_one_experiment_on_postgres_at_once_the_second_is_refused_whole() {
    use abperf::model::{Metric, Run, Variant};
    use abperf::store::{ImportTarget, Store};
    let Some(pg) = Server::start() else { return };
    let lab = Lab::new();
    let dsn = pg.create_db("abperf");
    ok(
        &lab,
        &dsn,
        &["import", "--format", "time", &data("seed000-time.txt")],
    );
    let at = &abperf::store::Location::parse(&dsn);
    // Two processes read the experiment, then each adds runs (and a variant) to it.
    let mut first = Store::open_to_take_over(at).unwrap();
    let mut second = Store::open_to_take_over(at).unwrap();
    let read = second.runs(1).unwrap().len(); // its working copy holds the experiment now
    let variants = [Variant::named("n"), Variant::named("new")];
    let runs: Vec<Run> = (0..4)
        .map(|i| Run::ok(0, i % 2, vec![Metric::new("wall_ns", 1e6 + i as f64, "ns")]))
        .collect();
    let target = ImportTarget::Existing(1);
    let done = first.import_runs(&target, &variants, &runs).unwrap();
    assert_eq!(done.new_variants, ["new"]);
    assert_eq!(done.run_ids.len(), 4);
    // Its working copy holds what the server holds.
    let held = first.runs(1).unwrap();
    let before = row_counts(&pg);
    let refused = second.import_runs(&target, &variants, &runs).unwrap_err();
    assert!(format!("{refused:#}").contains(&dsn), "{refused:#}");
    assert_eq!(row_counts(&pg), before, "nothing of the second stored");
    assert_eq!(
        second.runs(1).unwrap().len(),
        read,
        "nor in its working copy"
    );
    let there = Store::open_read_only(&abperf::store::Location::parse(&dsn)).unwrap();
    assert_eq!(there.runs(1).unwrap(), held);
    // Read again, the second goes in after the first.
    let mut again = Store::open_to_take_over(at).unwrap();
    again.import_runs(&target, &variants, &runs).unwrap();
    let seqs: Vec<u32> = Store::open_read_only(&abperf::store::Location::parse(&dsn))
        .unwrap()
        .runs(1)
        .unwrap()
        .iter()
        .map(|r| r.seq)
        .collect();
    assert_eq!(seqs, (0..seqs.len() as u32).collect::<Vec<_>>());
}

/// `text` with every UTC time stamp (`2026-11-27T01:52:05Z`) written `[created]`.
pub(super) fn untimed(text: &str) -> String {
    const SHAPE: &[u8; 20] = b"dddd-dd-ddTdd:dd:ddZ";
    let fits = |w: &[u8]| {
        w.iter().zip(SHAPE).all(|(c, s)| {
            if *s == b'd' {
                c.is_ascii_digit()
            } else {
                c == s
            }
        })
    };
    let (b, mut out, mut i) = (text.as_bytes(), Vec::new(), 0);
    while i < b.len() {
        if b.len() - i >= SHAPE.len() && fits(&b[i..i + SHAPE.len()]) {
            out.extend_from_slice(b"[created]");
            i += SHAPE.len();
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("only ASCII was replaced")
}

#[test]
fn a_time_stamp_is_written_created() {
    assert_eq!(
        untimed("made 2026-11-27T01:52:05Z, ok 2026-11-27"),
        "made [created], ok 2026-11-27"
    );
}
