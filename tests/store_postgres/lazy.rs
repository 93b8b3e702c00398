//! A reading command on a PostgreSQL store reads from the server the content of the experiments
//! it names, not the whole store: with experiment 2's rows made unloadable on the server, the
//! commands that name experiment 1 print what they print on the SQLite store, `list` still counts
//! every experiment as SQLite does, and only a command that reads experiment 2 fails, naming it.
//! A running experiment without an owner still reads as interrupted.

use super::common::Lab;
use super::common::postgres::Server;

/// What `args` prints on store `db`, the store's name left out.
fn on(lab: &Lab, db: &str, args: &[&str]) -> String {
    let o = lab.run(&[args, &["--db", db]].concat());
    format!("{:?} {}{}", o.code, o.stdout, o.stderr).replace(db, "STORE")
}

#[test]
fn a_reading_command_loads_only_the_experiments_it_names() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::new();
    lab.ok(&["run", "-r", "3", "true", "sleep 0.001"]);
    lab.ok(&["run", "-r", "2", "echo a", "echo b"]);
    let (a, dsn) = (lab.p("abperf.db"), pg.create_db("abperf"));
    lab.ok(&["store", "copy", &a, &dsn]);
    // A profiled run of experiment 2 that names a variant of experiment 1: a valid row for the
    // server, but experiment 2 can no longer be loaded (its profile refers to a variant it does
    // not hold), so a command that loaded the whole store, or experiment 2, would fail.
    pg.psql(
        "abperf",
        "INSERT INTO profile (experiment_id, variant_id, seq, event, samples, wall_ns, \
         other_self, symbols) SELECT 2, min(id), 0, 'cpu-clock', 10, 1000, 0.5, \
         '[[\"main\", 0.5, 1.0]]' FROM variant WHERE experiment_id = 1",
    );
    for args in [
        &["list"][..],
        &["show", "1", "--runs"],
        &["compare", "1"],
        &["export", "1", "--format", "csv"],
        &["export", "1", "--format", "json"],
        &["report", "1", "--resamples", "0"],
    ] {
        let sqlite = on(&lab, &a, args);
        assert!(sqlite.starts_with("Some(0) "), "{sqlite}");
        assert_eq!(on(&lab, &dsn, args), sqlite, "{args:?}");
    }
    // `store copy` of experiment 1 alone reads only it.
    let one = lab.p("one.db");
    let out = lab.ok(&["store", "copy", &dsn, &one, "1"]).stdout;
    assert!(out.contains(&format!("{dsn}#1 -> {one}#1")), "{out}");
    for args in [
        &["show", "2"][..],
        &["compare", "1", "2"],
        &["show", "latest"],
    ] {
        let out = lab.fails(&[args, &["--db", &dsn]].concat(), 1);
        out.err_has(&format!("loading experiment 2 of {dsn} into memory"));
        out.err_has("Variant id");
    }
    // A running experiment without a recorded owner (a copy has none) reads as interrupted,
    // in its row (list) and once its content is loaded (show).
    pg.psql(
        "abperf",
        "UPDATE experiment SET status = 'running' WHERE id = 1",
    );
    let list = lab.ok(&["list", "--db", &dsn]).stdout;
    let first = list
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap();
    assert!(first.contains("interrupted"), "{list}");
    lab.ok(&["show", "1", "--db", &dsn])
        .has("status interrupted");
}
