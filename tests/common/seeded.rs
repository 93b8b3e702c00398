//! A store with one experiment of every kind (an `abperf run`, a CSV import with host and boot
//! columns, a hyperfine import, a micro suite with rounds, a trace capture, a boot experiment
//! with an excluded run), and what a reader sees of an experiment: for the tests that copy
//! stores and compare what they read.

use super::{Lab, data};
use abperf::micro::record::Record;
use abperf::model::micro::{MicroRound, RoundProbe, rounds_to_runs};
use abperf::model::{
    BootConfig, BootPlan, KernelProvenance, Kind, Metric, MicroFinding, NewExperiment, PatchRef,
    Run, Slot, Status, Variant,
};

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
            source: None,
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
    // Variant a's kernel built from git with a patch (every field of its provenance), b's a
    // prebuilt image (its hash only).
    let built = KernelProvenance {
        revision: Some("a".repeat(40)),
        tree_id: Some("b".repeat(40)),
        patches: vec![PatchRef {
            subject: "x86/mm: tlb_single_page_flush_ceiling = 33".into(),
            id: "c".repeat(40),
        }],
        config_sha256: Some("d".repeat(64)),
        config: Some("CONFIG_X86=y\n".into()),
        compiler: Some("gcc (Debian 12.2.0-14) 12.2.0".into()),
        ..KernelProvenance::of_image("e".repeat(64), Some("f".repeat(64)))
    };
    let prebuilt = KernelProvenance::of_image("1".repeat(64), None);
    let id = store
        .create_boot_experiment(
            &exp,
            &[
                Variant {
                    provenance: Some(built),
                    ..v("a", "pti=on")
                },
                Variant {
                    provenance: Some(prebuilt),
                    ..v("b", "")
                },
            ],
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
pub fn seeded() -> Lab {
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

/// What a reader sees of experiment `id` in `db`, the store's path left out.
pub fn views(lab: &Lab, db: &str, id: &str) -> Vec<String> {
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
