//! A PostgreSQL store, each test with its own private server (`common::postgres`): every kind
//! of data goes SQLite -> PostgreSQL -> SQLite and comes back the same, values at the edges of
//! their type keep value and type, the reading commands print on the PostgreSQL store what they
//! print on the SQLite one, two copies into one server at once both land; a bad DSN or a server
//! that is not there is a clear error with the password hidden, and a command that writes
//! (other than `run`: `runs`, `import` and `delete`: `import_delete`) refuses a DSN without
//! making anything on disk.

mod common;
use abperf::store::Store;
use abperf::store::copy::{Content, Rows, Value};
use abperf::store::copy_target::Target;
use common::postgres::Server;
use common::seeded::{seeded, views};
use common::{Lab, Out};

fn content(db: &str, id: i64) -> Content {
    Store::open_read_only(&abperf::store::Location::parse(db))
        .unwrap()
        .read_content(id)
        .unwrap()
}

#[test]
fn sqlite_to_postgres_to_sqlite_loses_nothing() {
    let Some(pg) = Server::start() else { return };
    let lab = seeded();
    let (a, c, dsn) = (lab.p("abperf.db"), lab.p("c.db"), pg.create_db("abperf"));
    let there = lab.ok(&["store", "copy", &a, &dsn]).stdout;
    let back = lab.ok(&["store", "copy", &dsn, &c]).stdout;
    for i in 1..=6 {
        assert!(there.contains(&format!("{a}#{i} -> {dsn}#{i}")), "{there}");
        assert!(back.contains(&format!("{dsn}#{i} -> {c}#{i}")), "{back}");
        let original = content(&a, i);
        assert_eq!(
            content(&dsn, i),
            original,
            "experiment {i} as PostgreSQL holds it"
        );
        assert_eq!(content(&c, i), original, "experiment {i} back in SQLite");
    }
    let again = lab.ok(&["store", "copy", &a, &dsn]).stdout;
    assert!(again.contains("copied 0 experiment(s)"), "{again}");
    assert!(
        again.contains(&format!("skipped: already in {dsn} as #3")),
        "{again}"
    );
    // PostgreSQL to PostgreSQL, after a dry run that makes nothing there.
    let other = pg.create_db("other");
    let dry = lab.ok(&["store", "copy", "--dry-run", &dsn, &other]).stdout;
    assert!(
        dry.contains(&format!("{dsn}#6 -> {other} (dry run")),
        "{dry}"
    );
    assert_eq!(
        pg.psql("other", "SELECT to_regclass('experiment') IS NULL"),
        "t"
    );
    lab.ok(&["store", "copy", &dsn, &other]);
    for i in 1..=6 {
        assert_eq!(
            content(&other, i),
            content(&a, i),
            "experiment {i} copied within the server"
        );
    }
}

#[test]
fn an_older_postgres_schema_gains_what_it_lacks_and_a_newer_one_is_refused() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::new();
    lab.ok(&[
        "import",
        "--format",
        "csv",
        &common::data("hosts/hosts.csv"),
    ]);
    let dsn = pg.create_db("abperf");
    // A database without abperf's schema reads as an empty store, and reading makes nothing.
    lab.ok(&["list", "--db", &dsn]);
    let absent = "SELECT to_regclass('abperf_schema') IS NULL";
    assert_eq!(pg.psql("abperf", absent), "t");
    lab.ok(&["store", "copy", &lab.p("abperf.db"), &dsn]);
    let version = pg.psql("abperf", "SELECT version FROM abperf_schema");
    // As an older abperf would have left it: no run_label.host, no micro_finding, no owner
    // table (nor the revision that records it), the per-run tables with foreign keys.
    let older = "ALTER TABLE run_label DROP COLUMN host; DROP TABLE micro_finding; \
                 DROP TABLE experiment_owner; ALTER TABLE abperf_schema DROP COLUMN revision; \
                 UPDATE abperf_schema SET version = 3; \
                 ALTER TABLE run ADD CONSTRAINT run_experiment_id_fkey FOREIGN KEY \
                 (experiment_id) REFERENCES experiment (id) ON DELETE CASCADE; \
                 ALTER TABLE slot ADD FOREIGN KEY (experiment_id) REFERENCES experiment (id)";
    let run_keys = "SELECT count(*) FROM pg_constraint WHERE contype = 'f' \
                    AND conrelid::regclass::text IN ('run', 'slot')";
    let host = "SELECT count(*) FROM information_schema.columns \
                WHERE table_name = 'run_label' AND column_name = 'host'";
    let finding = "SELECT to_regclass('micro_finding') IS NULL";
    let owner = "SELECT to_regclass('experiment_owner') IS NULL";
    pg.psql("abperf", older);
    // A reading command brings it up to date, as it migrates an SQLite store; so does a copy.
    assert_eq!(pg.psql("abperf", run_keys), "2");
    lab.ok(&["list", "--db", &dsn]);
    let got = |sql: &str| pg.psql("abperf", sql);
    // Up to date again: version and revision, run_label.host, micro_finding, experiment_owner,
    // no per-run foreign keys.
    let current = || {
        assert_eq!(
            [
                got("SELECT version, revision FROM abperf_schema"),
                got(host),
                got(finding),
                got(owner),
                got(run_keys)
            ],
            [format!("{version}|2").as_str(), "1", "f", "f", "0"]
        )
    };
    current();
    pg.psql("abperf", older);
    lab.ok(&[
        "import",
        "--format",
        "hyperfine",
        &common::data("hyperfine-two.json"),
    ]);
    let out = lab.ok(&["store", "copy", &lab.p("abperf.db"), &dsn]).stdout;
    assert!(out.contains("copied 1 experiment(s)"), "{out}");
    current();
    pg.psql("abperf", "UPDATE abperf_schema SET version = 999");
    for args in [
        vec!["list", "--db", &dsn],
        vec!["store", "copy", &lab.p("abperf.db"), &dsn],
    ] {
        lab.fails(&args, 1).err_has(&format!(
            "the PostgreSQL store {dsn} has schema version 999, newer than this abperf's"
        ));
    }
}

/// The experiment of `lab` with its run values and a micro finding set to edge values.
fn edges(lab: &Lab) -> Content {
    let mut c = lab.store().read_content(1).unwrap();
    let values = [
        Value::Integer(i64::MIN),
        Value::Integer(i64::MAX),
        Value::Real(0.1),
        Value::Real(1e300),
        Value::Real(5e-324),
        Value::Real(f64::NAN),
        Value::Real(-1.5e-7),
        Value::Real(f64::NEG_INFINITY),
        Value::Integer(0),
        Value::Real(-0.0),
        Value::Real(0.0),
        Value::Null,
    ];
    let run = c.tables.iter_mut().find(|t| t.table == "run").unwrap();
    let from = run.columns.iter().position(|n| n == "wall_ns").unwrap();
    for (r, row) in run.rows.iter_mut().enumerate() {
        for (k, v) in row[from..from + 10].iter_mut().enumerate() {
            *v = values[(r + k) % values.len()].clone();
        }
    }
    let finding = |position: i64, value: f64| {
        let text = |s: &str| Value::Text(s.into());
        vec![
            Value::Integer(1),
            Value::Integer(position),
            text("b"),
            text("k"),
        ]
        .into_iter()
        .chain([Value::Real(value), text("us"), text("t")])
        .collect()
    };
    c.tables.push(Rows {
        table: "micro_finding".into(),
        columns: [
            "experiment_id",
            "position",
            "bench",
            "key",
            "value",
            "unit",
            "text",
        ]
        .map(String::from)
        .to_vec(),
        rows: vec![finding(0, -0.0), finding(1, f64::MIN_POSITIVE)],
    });
    c
}

/// `content` with `table`.`column` of its first row set to `v`.
fn with(content: &Content, table: &str, column: &str, v: Value) -> Content {
    let mut c = content.clone();
    let t = c.tables.iter_mut().find(|t| t.table == table).unwrap();
    let at = t.columns.iter().position(|n| n == column).unwrap();
    t.rows[0][at] = v;
    c
}

#[test]
fn edge_values_keep_value_and_type_and_what_does_not_fit_stores_nothing() {
    let Some(pg) = Server::start() else { return };
    let lab = Lab::new();
    // Enough runs that their rows and metrics go in by COPY (`postgres::bulk`), not row by row.
    lab.ok(&["run", "-r", "20", "true"]);
    let dsn = pg.create_db("abperf");
    let mut target = Target::open(&abperf::store::Location::parse(&dsn), false)
        .unwrap()
        .unwrap();
    let sent = edges(&lab);
    let id = target.write_content(&sent, &|| false).unwrap().unwrap();
    // A fresh server numbers as the fresh store did: the content is the same, ids and all.
    let got = target.read_content(id).unwrap();
    assert_eq!(format!("{got:?}"), format!("{sent:?}"));
    let refused = [
        with(&sent, "run", "wall_ns", Value::Text("1".into())),
        with(&sent, "variant", "name", Value::Text("a\0b".into())),
        with(&sent, "run", "exit_code", Value::Text("zero".into())),
    ];
    let why = [
        "wall_ns: text cannot be stored in a NUMERIC column",
        "name: text with a NUL byte",
        "exit_code",
    ];
    for (c, why) in refused.iter().zip(why) {
        let e = format!("{:#}", target.write_content(c, &|| false).unwrap_err());
        assert!(e.contains("experiment 1, table ") && e.contains(why), "{e}");
    }
    assert_eq!(
        target.identities().unwrap().len(),
        1,
        "a refused experiment was stored"
    );
    // The refused writes used up ids (sequences never go back): the next one is above them, and
    // the reading commands show PostgreSQL's ids, not ones of their own.
    let renamed = with(&sent, "experiment", "name", Value::Text("later".into()));
    let later = target.write_content(&renamed, &|| false).unwrap().unwrap();
    assert!(later > id + 1, "{later}");
    let list = lab.ok(&["list", "--db", &dsn]).stdout;
    assert!(list.contains(&format!("\n{later:>5}  ")), "{list}");
    let show = lab.ok(&["show", &later.to_string(), "--db", &dsn]).stdout;
    assert!(
        show.contains(&format!("experiment {later}: later")),
        "{show}"
    );
    // A database that is not there, on a server that is.
    let nope = pg.dsn("nope");
    let out = lab.fails(&["list", "--db", &nope], 1);
    out.err_has(&format!("cannot connect to the PostgreSQL store {nope}: "));
    out.err_has("database \"nope\" does not exist");
}

/// `out` with the store names replaced, for comparing what two stores print.
fn neutral(out: Out, names: &[&str]) -> String {
    let text = format!("{:?} {}{}", out.code, out.stdout, out.stderr);
    names.iter().fold(text, |t, n| t.replace(n, "STORE"))
}

/// The runs of the six experiments renumbered so that their ids interleave (as those of
/// experiments whose runs are made at once do): a reader takes the rows keyed by run id in the
/// range of its experiment's ids and must keep only its own runs' (`postgres::run_read`).
const INTERLEAVE_RUN_IDS: &str = "
    SET session_replication_role = replica;
    ALTER TABLE run ALTER COLUMN id SET GENERATED BY DEFAULT;
    CREATE TEMP TABLE moved AS SELECT id AS old, 1000000 + experiment_id
        + 10 * row_number() OVER (PARTITION BY experiment_id ORDER BY id) AS new FROM run;
    UPDATE run SET id = new FROM moved WHERE id = old;
    UPDATE import_run SET run_id = new FROM moved WHERE run_id = old;
    UPDATE metric SET run_id = new FROM moved WHERE run_id = old;
    UPDATE run_label SET run_id = new FROM moved WHERE run_id = old;
    UPDATE boot_run SET run_id = new FROM moved WHERE run_id = old;
    ALTER TABLE run ALTER COLUMN id SET GENERATED ALWAYS;";

#[test]
fn reading_commands_print_on_postgres_what_they_print_on_sqlite() {
    let Some(pg) = Server::start() else { return };
    let lab = seeded();
    let (a, dsn) = (lab.p("abperf.db"), pg.create_db("abperf"));
    lab.ok(&["store", "copy", &a, &dsn]);
    pg.psql_script("abperf", INTERLEAVE_RUN_IDS);
    for i in 1..=6 {
        let id = i.to_string();
        assert_eq!(
            views(&lab, &dsn, &id),
            views(&lab, &a, &id),
            "experiment {i}"
        );
    }
    for args in [
        &["list"][..],
        &["compare", "1"],
        &["export", "2", "--format", "csv"],
        &["report", "6", "--resamples", "0"],
    ] {
        let on = |db: &str| {
            neutral(
                lab.cmd(args)
                    .env("ABPERF_DB", db)
                    .output()
                    .map(|o| Out::from(o, args))
                    .unwrap(),
                &[&a, &dsn],
            )
        };
        let sqlite = on(&a);
        assert!(sqlite.starts_with("Some(0) "), "{sqlite}");
        assert_eq!(on(&dsn), sqlite, "{args:?} through $ABPERF_DB");
    }
}

#[test]
fn two_copies_into_one_postgres_at_once_both_land() {
    let Some(pg) = Server::start() else { return };
    let dsn = pg.create_db("abperf");
    // Each store first names 40 metrics the other names too, in the opposite order: both
    // copies intern the same new names at the same moment.
    let labs: Vec<Lab> = [false, true]
        .iter()
        .map(|&reversed| {
            let lab = Lab::new();
            let mut names: Vec<String> = (0..40).map(|m| format!("m{m:02} [count]")).collect();
            if reversed {
                names.reverse();
            }
            let rows = (0..20).map(|seq| format!("base,{seq}{}\n", ",1".repeat(40)));
            let csv = format!(
                "variant,seq,{}\n{}",
                names.join(","),
                rows.collect::<String>()
            );
            lab.ok(&["import", "--format", "csv", &lab.write("m.csv", csv)]);
            lab.seed000(if reversed { "two" } else { "one" });
            lab
        })
        .collect();
    let copies: Vec<_> = labs
        .iter()
        .map(|lab| {
            lab.cmd(&["store", "copy", &lab.p("abperf.db"), &dsn])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in copies {
        let out = Out::from(child.wait_with_output().unwrap(), &["store", "copy"]);
        assert_eq!(out.code, Some(0), "{out}");
        assert!(out.stdout.contains("copied 2 experiment(s)"), "{out}");
    }
    let list = labs[0].ok(&["list", "--db", &dsn]).stdout;
    let ids: Vec<&str> = list
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(ids, ["1", "2", "3", "4"], "{list}");
    let store = Store::open_read_only(&abperf::store::Location::parse(&dsn)).unwrap();
    for id in 1..=4 {
        assert!(
            !store.load(id).unwrap().runs.is_empty(),
            "experiment {id} has no runs"
        );
    }
    // The same, as two writers released at one instant (no process start between them), into
    // a fresh database, a few times: interning the same names in opposite orders must not
    // deadlock.
    let contents: Vec<Content> = labs
        .iter()
        .map(|l| l.store().read_content(1).unwrap())
        .collect();
    for round in 0..3 {
        let fresh = pg.create_db(&format!("race{round}"));
        Target::open(&abperf::store::Location::parse(&fresh), false).unwrap();
        let gate = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            let writers: Vec<_> = contents
                .iter()
                .map(|c| {
                    let (gate, fresh) = (&gate, &fresh);
                    s.spawn(move || {
                        let mut t = Target::open(&abperf::store::Location::parse(fresh), false)
                            .unwrap()
                            .unwrap();
                        gate.wait();
                        t.write_content(c, &|| false).map_err(|e| format!("{e:#}"))
                    })
                })
                .collect();
            let ids: Vec<_> = writers
                .into_iter()
                .map(|w| w.join().unwrap().unwrap())
                .collect();
            assert!(ids[0] != ids[1], "{ids:?}");
        });
    }
}

#[test]
fn a_bad_dsn_or_a_server_not_there_is_a_clear_error_with_the_password_hidden() {
    let lab = Lab::new();
    lab.ok(&["run", "-r", "1", "true"]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let away = format!("postgres://ann:hunter2@127.0.0.1:{port}/abperf");
    let shown = format!("postgres://ann:***@127.0.0.1:{port}/abperf");
    for args in [
        vec!["list", "--db", &away],
        vec!["store", "copy", &lab.p("abperf.db"), &away],
        vec!["store", "copy", &away, &lab.p("b.db")],
    ] {
        let out = lab.fails(&args, 1);
        out.err_has(&format!("cannot connect to the PostgreSQL store {shown}"));
        out.err_has("Connection refused");
        assert!(!out.all().contains("hunter2"), "{out}");
    }
    assert!(!lab.path("b.db").exists(), "TO made for nothing");
    let bad = "postgresql://ann:hunter2@db:notaport/abperf";
    let out = lab.fails(&["list", "--db", bad], 2);
    out.err_has("postgresql://ann:***@db:notaport/abperf is not a PostgreSQL URL");
    assert!(!out.all().contains("hunter2"), "{out}");
    let out = lab.fails(&["store", "copy", &away, &away], 2);
    out.err_has(&format!("FROM and TO are the same store ({shown})"));
}

/// What a command that writes, other than `run`, is refused on a PostgreSQL store.
const ONLY_RUN: &str = "writing with this command (only `abperf run` of commands, without kernels, `abperf fleet run`, `abperf import` and `abperf delete` write to a PostgreSQL store)";

#[test]
fn a_command_that_writes_refuses_a_dsn_and_makes_nothing_on_disk() {
    let lab = Lab::new();
    let cwd = lab.path("cwd");
    std::fs::create_dir(&cwd).unwrap();
    let dsn = "postgres://ann:hunter2@127.0.0.1:1/abperf";
    let shown = "postgres://ann:***@127.0.0.1:1/abperf";
    let time = common::data("seed000-time.txt");
    let on_disk = |args: &[&str]| {
        let o = lab
            .cmd(args)
            .env("ABPERF_DB", dsn)
            .current_dir(&cwd)
            .output()
            .unwrap();
        Out::from(o, args)
    };
    let out = on_disk(&["doctor", "--restore"]);
    assert_eq!(out.code, Some(2), "{out}");
    out.err_has(&format!(
        "{ONLY_RUN}: not built yet on PostgreSQL: run into a local store and `abperf store \
         copy` it to {shown}"
    ));
    assert!(!out.all().contains("hunter2"), "{out}");
    // `run` (and `run --resume`), `import` and `delete` write there: a server that is not
    // there is an error naming it.
    for args in [
        vec!["run", "-r", "1", "true", "--db", dsn],
        vec!["run", "-r", "1", "true"],
        vec!["import", "--format", "time", &time, "--db", dsn],
        vec!["import", "--experiment", "1", "--format", "time", &time],
        vec!["delete", "1"],
        vec!["run", "--resume", "1"],
    ] {
        let out = on_disk(&args);
        assert_eq!(out.code, Some(1), "{out}");
        out.err_has(&format!("cannot connect to the PostgreSQL store {shown}"));
    }
    let left: Vec<_> = std::fs::read_dir(lab.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, ["cwd"], "made on disk");
    assert_eq!(
        std::fs::read_dir(&cwd).unwrap().count(),
        0,
        "made in the working directory"
    );
}

/// `abperf run` into PostgreSQL (`run --db DSN`), each test with its own server.
#[path = "store_postgres/runs.rs"]
mod runs;

#[path = "store_postgres/owner.rs"]
mod owner;

#[path = "store_postgres/lazy.rs"]
mod lazy;

#[path = "store_postgres/import_delete.rs"]
mod import_delete;

#[path = "store_postgres/resume.rs"]
mod resume;

#[path = "store_postgres/bulk.rs"]
mod bulk;
