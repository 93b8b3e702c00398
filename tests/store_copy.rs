//! `abperf store copy FROM TO`: a store with every kind of data (an `abperf run`, a CSV import
//! with host and boot columns, a micro suite with rounds, a trace capture, a boot experiment with
//! an excluded run) copied A -> B -> C reads the same in C as in A (export with its data sha256,
//! show, compare, trace report), B numbers under its own rules, a second copy skips, A's file is
//! untouched; and the refusals (same file, missing FROM, not a store, a running experiment).

mod common;
use abperf::micro::record::Record;
use abperf::model::micro::{MicroRound, RoundProbe, rounds_to_runs};
use abperf::model::{
    BootConfig, BootPlan, Kind, Metric, MicroFinding, NewExperiment, Run, Slot, Status, Variant,
};
use common::{Lab, data};

fn micro(lab: &Lab) {
    let probe = RoundProbe {
        started_ns: 5,
        ticks_per_core_cycle: 1.0,
        adds_per_cycle: 2.0,
    };
    let rounds: Vec<MicroRound> = (0..4)
        .map(|r| MicroRound {
            variant: (r % 2) as usize,
            round: r / 2,
            invocation: r % 2,
            probe,
            cycles: vec![100.0 + r as f64, 101.5, 99.0],
        })
        .collect();
    let exp = NewExperiment {
        name: "micro".into(),
        kind: Kind::Micro,
        command_line: vec!["abperf".into(), "micro".into()],
        design: serde_json::json!({"kind": "micro", "timer": {"hz": 1e9}}),
        seed: None,
        environment: serde_json::json!({"hostname": "lab1"}),
    };
    Record {
        experiment: exp,
        runs: rounds_to_runs(&rounds, |_| 1, 1e9),
        variants: vec![Variant::named("syscall/a"), Variant::named("syscall/b")],
        rounds,
        findings: vec![MicroFinding {
            bench: "syscall".into(),
            key: "note".into(),
            value: Some(1.5),
            unit: "us".into(),
            text: "a finding".into(),
        }],
    }
    .save(&mut lab.store())
    .unwrap();
}

/// A kernel-variant experiment as the boot loop leaves it: a plan, two boots, runs in them.
fn boots(lab: &Lab) {
    let mut store = lab.store();
    let exp = NewExperiment {
        name: "boots".into(),
        kind: Kind::Run,
        command_line: vec!["abperf".into(), "run".into()],
        design: serde_json::json!({"order": "abba"}),
        seed: Some(7),
        environment: serde_json::json!({"hostname": "lab2"}),
    };
    let v = |n: &str, append: &str| Variant {
        command: Some("true".into()),
        boot: Some(BootConfig {
            kernel: "/k/vmlinuz".into(),
            release: "6.1.0".into(),
            modules: None,
            package: None,
            append: append.into(),
        }),
        ..Variant::named(n)
    };
    let slot = |seq, variant| Slot {
        seq,
        variant,
        block: 0,
        warmup: false,
    };
    let plan = |number, variant, first_seq| BootPlan {
        number,
        variant,
        block: 0,
        first_seq,
        last_seq: first_seq + 1,
    };
    let schedule = [slot(0, 1), slot(1, 1), slot(2, 0), slot(3, 0)];
    let id = store
        .create_boot_experiment(
            &exp,
            &[v("a", "pti=on"), v("b", "")],
            &schedule,
            &[plan(0, 1, 0), plan(1, 0, 2)],
        )
        .unwrap();
    for (number, variant) in [(0u32, 1usize), (1, 0)] {
        let (boot, _) = store
            .start_boot(id, number, "tcg", &serde_json::json!({"n": number}))
            .unwrap();
        store
            .boot_up(
                boot,
                "6.1.0",
                "console=ttyS0",
                9.5,
                &serde_json::json!({"up": 1}),
            )
            .unwrap();
        for seq in 2 * number..2 * number + 2 {
            let mut run = Run::ok(
                seq,
                variant,
                vec![Metric::new("wall_ns", 5.0 + seq as f64, "ns")],
            );
            run.excluded = (seq == 3).then(|| "noisy neighbour".to_string());
            store.commit_boot_run(id, boot, &run).unwrap();
        }
        store
            .end_boot(boot, "complete", "exit 0", Some(20.0), Some(3.0), 0)
            .unwrap();
    }
    store.set_status(id, Status::Complete).unwrap();
}

/// Store A: one experiment of every kind.
fn seeded() -> Lab {
    let lab = Lab::new();
    lab.ok(&["run", "-r", "3", "true", "sleep 0.001"]);
    lab.ok(&["import", "--format", "csv", &data("hosts/hosts.csv")]);
    lab.ok(&[
        "import",
        "--format",
        "hyperfine",
        &data("hyperfine-two.json"),
    ]);
    micro(&lab);
    lab.ok(&[
        "trace",
        "import",
        "-q",
        "--tsc-mhz",
        "2600",
        &data("small-capture.txt"),
    ]);
    boots(&lab);
    lab
}

fn copy(lab: &Lab, from: &str, to: &str) -> String {
    lab.ok(&["store", "copy", from, to]).stdout
}

/// What a reader sees of experiment `id` in `db`, the store's path left out.
fn views(lab: &Lab, db: &str, id: &str) -> Vec<String> {
    let read = |args: &[&str]| {
        let o = lab.run(&[args, &["--db", db]].concat());
        format!("{:?} {}{}", o.code, o.stdout, o.stderr).replace(db, "STORE")
    };
    vec![
        read(&["export", id, "--format", "json"]),
        read(&["export", id, "--format", "csv"]),
        read(&["show", id, "--runs"]),
        read(&["compare", id]),
        read(&["trace", "report", id, "--format", "json"]),
    ]
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
    let want = "boot boot_plan boot_run experiment import_run import_variant_summary metric \
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
