//! `abperf store copy FROM TO`: a store with every kind of data (an `abperf run`, a CSV import
//! with host and boot columns, a micro suite with rounds, a trace capture, a boot experiment with
//! an excluded run) copied A -> B -> C reads the same in C as in A (export with its data sha256,
//! show, compare, trace report), B numbers under its own rules, a second copy skips, A's file is
//! untouched; and the refusals (same file, missing FROM, not a store, a running experiment).

mod common;
use abperf::model::{Metric, Run};
use common::Lab;
use common::seeded::{seeded, views};

fn copy(lab: &Lab, from: &str, to: &str) -> String {
    lab.ok(&["store", "copy", from, to]).stdout
}

/// Every table an experiment can have rows in has rows in store A (so the round trip covers it).
fn assert_every_table_filled(lab: &Lab) {
    let store = lab.store();
    let mut filled = std::collections::BTreeSet::new();
    for e in store.list().unwrap() {
        for t in store.read_content(e.id).unwrap().tables {
            filled.insert(t.table);
        }
    }
    let want = "boot boot_plan boot_run experiment import_run import_variant_summary \
                kernel_provenance metric \
                metric_name micro_finding micro_round run run_label slot trace_bin trace_capture \
                trace_table variant";
    assert_eq!(filled.into_iter().collect::<Vec<_>>().join(" "), want);
}

#[test]
fn every_kind_of_data_round_trips_and_a_second_copy_skips() {
    let lab = seeded();
    assert_every_table_filled(&lab);
    let (a, b, c) = (lab.p("abperf.db"), lab.p("b.db"), lab.p("c.db"));
    // B has handed out id 1 already: the copies get 2.. there.
    lab.ok(&["run", "-r", "1", "true", "--db", &b]);
    lab.ok(&["delete", "1", "--db", &b]);
    let before = std::fs::read(&a).unwrap();
    let out = copy(&lab, &a, &b);
    for i in 1..=6 {
        assert!(out.contains(&format!("{a}#{i} -> {b}#{}", i + 1)), "{out}");
    }
    copy(&lab, &b, &c);
    for i in 1..=6 {
        let (x, y) = (
            views(&lab, &a, &i.to_string()),
            views(&lab, &c, &i.to_string()),
        );
        assert!(x[0].contains("data_sha256"), "{}", x[0]);
        for (x, y) in x.iter().zip(&y) {
            assert_eq!(x, y, "experiment {i}");
        }
    }
    let again = copy(&lab, &a, &b);
    assert!(
        again.contains(&format!("{a}#3 skipped: already in {b} as #4")),
        "{again}"
    );
    assert!(again.contains("copied 0 experiment(s)"), "{again}");
    let dry = lab
        .ok(&["store", "copy", "--dry-run", &a, &lab.p("d.db")])
        .stdout;
    assert!(
        dry.contains(&format!("{a}#5 -> {} (dry run", lab.p("d.db"))),
        "{dry}"
    );
    assert!(!lab.path("d.db").exists(), "a dry run made TO");
    assert_eq!(
        lab.ok(&["list", "--db", &b]).stdout.lines().count(),
        lab.ok(&["list", "--db", &c]).stdout.lines().count()
    );
    assert!(std::fs::read(&a).unwrap() == before, "FROM changed");
}

#[test]
fn refusals_name_the_file() {
    let lab = Lab::new();
    lab.ok(&["run", "-r", "1", "true"]);
    let a = lab.p("abperf.db");
    let e = lab.fails(&["store", "copy", &a, &a], 2).stderr;
    assert!(e.contains("FROM and TO are the same store"), "{e}");
    let e = lab
        .fails(&["store", "copy", &lab.p("none.db"), &lab.p("x.db")], 2)
        .stderr;
    assert!(e.contains("none.db: cannot read it"), "{e}");
    let text = lab.write("t.txt", "not a store\n".repeat(100));
    let e = lab.run(&["store", "copy", &text, &lab.p("x.db")]).stderr;
    assert!(
        e.contains("t.txt is not an abperf (SQLite) database"),
        "{e}"
    );
    let e = lab
        .run(&["store", "copy", &lab.write("empty.db", ""), &lab.p("x.db")])
        .stderr;
    assert!(e.contains("empty.db is not an abperf store"), "{e}");
    std::fs::copy(&a, lab.path("newer.db")).unwrap();
    let newer = rusqlite::Connection::open(lab.path("newer.db")).unwrap();
    newer.pragma_update(None, "user_version", 999).unwrap();
    drop(newer);
    let e = lab
        .run(&["store", "copy", &lab.p("newer.db"), &lab.p("x.db")])
        .stderr;
    assert!(
        e.contains("newer.db has schema version 999, newer than"),
        "{e}"
    );
    assert!(!lab.path("x.db").exists(), "TO made for nothing");
    // A running experiment whose owner lives (this test process) is refused, then forced.
    let me = abperf::measure::process::current_owner();
    lab.store()
        .claim_experiment(1, &me, &|_| false)
        .unwrap()
        .unwrap();
    let out = lab.run(&["store", "copy", &a, &lab.p("y.db")]);
    assert_eq!(out.code, Some(1), "{out}");
    assert!(out.stdout.contains("not copied:"), "{out}");
    let out = lab.ok(&["store", "copy", "--force", &a, &lab.p("y.db")]);
    assert!(out.stdout.contains("-> "), "{out}");
    let show = lab.ok(&["show", "1", "--db", &lab.p("y.db")]).stdout;
    assert!(show.contains("status interrupted"), "{show}");
    // More runs in FROM since: the copy there is named, not duplicated.
    let run = Run::ok(99, 0, vec![Metric::new("wall_ns", 1.0, "ns")]);
    lab.store().commit_run(1, &run).unwrap();
    let out = lab
        .ok(&["store", "copy", "--force", &a, &lab.p("y.db")])
        .stdout;
    assert!(out.contains("changed since it was copied"), "{out}");
}
