//! Imports and copies into PostgreSQL in bulk (a table's many rows by one COPY): an import of
//! hundreds of runs, runs added to it, and a `store copy` of it keep every value (the PostgreSQL
//! store exports what the SQLite one does), and one the server refuses half-way (a trigger that
//! raises, as a full disk would) stores nothing of it.

use super::common::postgres::Server;
use super::common::{Lab, data};
use super::import_delete::{ok, on, row_counts, untimed};

/// Runs per variant: enough that runs, metrics and labels go in by COPY.
const RUNS: usize = 200;

/// A CSV of 2 variants x RUNS ordered runs with two metrics and hosts whose names hold what
/// COPY's text format escapes (a backslash, a tab).
fn runs_csv(lab: &Lab) -> String {
    let mut text = String::from("variant,seq,host,wall_ns [ns],cycles [count]\n");
    for i in 0..2 * RUNS {
        let variant = ["base", "patched"][i % 2];
        let host = ["\"h\\1\"", "\"h\t2\"", "h3"][i % 3];
        let wall = 1e6 + (i as f64) * 1.25 + if i % 7 == 0 { 0.1 } else { 0.0 };
        text.push_str(&format!("{variant},{i},{host},{wall},{}\n", 3 * i + 1));
    }
    let path = lab.p("runs.csv");
    std::fs::write(&path, text).unwrap();
    path
}

/// What `export ID --format json` prints of store `db`, its time stamps and store name neutral.
fn exported(lab: &Lab, db: &str, id: &str) -> String {
    let out = ok(lab, db, &["export", id, "--format", "json"]).stdout;
    untimed(&out.replace(db, "STORE"))
}

#[test]
fn a_bulk_import_and_copy_into_postgres_keep_every_value() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::new();
    let (sqlite, dsn, copied) = (lab.p("abperf.db"), pg.create_db("abperf"), pg.dsn("copied"));
    pg.create_db("copied");
    let csv = runs_csv(&lab);
    let import = ["import", "--format", "csv", &csv];
    let add = ["import", "--experiment", "1", "--format", "csv", &csv];
    for args in [&import[..], &add[..]] {
        let local = ok(&lab, &sqlite, args);
        let there = ok(&lab, &dsn, args);
        assert_eq!(there.all(), local.all(), "{args:?}");
    }
    let runs = pg.psql("abperf", "SELECT count(*) FROM run");
    assert_eq!(runs, (4 * RUNS).to_string());
    same(
        exported(&lab, &dsn, "1"),
        exported(&lab, &sqlite, "1"),
        "the import",
    );
    // A copy keeps even the time stamps: byte for byte but for the store's name.
    lab.ok(&["store", "copy", &sqlite, &copied]);
    let json = |db: &str| {
        let out = ok(&lab, db, &["export", "1", "--format", "json"]).stdout;
        out.replace(db, "STORE")
    };
    same(json(&copied), json(&sqlite), "the copy");
}

/// Fail naming the first line where `got` and `want` (long exports) differ.
#[track_caller]
fn same(got: String, want: String, what: &str) {
    let differs = got.lines().zip(want.lines()).position(|(g, w)| g != w);
    assert!(
        got == want,
        "{what} exports differently from SQLite: first at line {differs:?} ({} vs {} lines)",
        got.lines().count(),
        want.lines().count()
    );
}

#[test]
fn an_import_or_copy_refused_half_way_by_the_server_stores_nothing() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::new();
    let (sqlite, dsn) = (lab.p("abperf.db"), pg.create_db("abperf"));
    let csv = runs_csv(&lab);
    let import = ["import", "--format", "csv", &csv];
    ok(&lab, &sqlite, &import);
    ok(&lab, &dsn, &import);
    // A second database holding another experiment, for a copy of this one.
    let other = pg.create_db("other");
    ok(
        &lab,
        &other,
        &["import", "--format", "csv", &data("hosts/hosts.csv")],
    );
    // From now on the server refuses a run half-way through each write (seq 250 of a new
    // experiment, 650 of the runs added to the one there), as a full disk would.
    let refuse = "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
         IF NEW.seq % 400 = 250 THEN RAISE EXCEPTION 'no space left at seq %', NEW.seq; END IF; \
         RETURN NEW; END $$; \
         CREATE TRIGGER refuse BEFORE INSERT ON run FOR EACH ROW EXECUTE FUNCTION refuse()";
    let counts = |db: &str| {
        let tables = [
            "experiment",
            "variant",
            "run",
            "metric",
            "metric_name",
            "run_label",
        ];
        tables.map(|t| pg.psql(db, &format!("SELECT count(*) FROM {t}")))
    };
    let add = ["import", "--experiment", "1", "--format", "csv", &csv];
    let copy = ["store", "copy", &sqlite, &other];
    for (db, args, seq) in [
        ("abperf", &import[..], 250),
        ("abperf", &add[..], 650),
        ("other", &copy[..], 250),
    ] {
        pg.psql(db, refuse);
        let before = (row_counts(&pg), counts(db));
        let o = on(&lab, &pg.dsn(db), args);
        assert_eq!(o.code, Some(1), "{args:?}: {o}");
        o.err_has(&format!("no space left at seq {seq}"));
        o.err_has(&pg.dsn(db));
        let after = (row_counts(&pg), counts(db));
        assert_eq!(after, before, "{args:?} stored part of its rows");
        if db == "abperf" {
            pg.psql(db, "DROP TRIGGER refuse ON run; DROP FUNCTION refuse()");
        }
    }
    // The store is whole: it reads as before, and takes the import once the server does.
    same(
        exported(&lab, &dsn, "1"),
        exported(&lab, &sqlite, "1"),
        "the store",
    );
    ok(&lab, &dsn, &add);
    assert_eq!(
        pg.psql("abperf", "SELECT count(*) FROM run"),
        (4 * RUNS).to_string()
    );
}
