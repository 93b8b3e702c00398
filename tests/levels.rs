//! The two-level analysis of kernel variants through the real binary, without booting anything:
//! experiments with boots are written through the store's own API (as `abperf run --kernel`
//! writes them), with values drawn from a seeded model of known boot and run variance, then
//! `compare`, `report`, `plan` and `compare A B` read them. The VM side is tested in tests/vm.rs.

#![allow(clippy::disallowed_macros)] // tests print what they saw to stderr
mod common;
use abperf::model::{BootConfig, BootPlan, Kind, Metric, NewExperiment, Run, Slot, Variant};
use common::{Lab, assert_schema};

/// A seeded normal generator (xorshift + Box-Muller), independent of abperf's own code.
struct Gauss(u64);

impl Gauss {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

struct Model {
    accel: &'static str,
    means: [f64; 2],
    boot_sd: f64,
    run_sd: f64,
    boots: u32,
    runs: u32,
    seed: u64,
}

/// Store a kernel-variant experiment: 2 variants x `boots` boots (ABBA) x (1 warm-up + `runs`).
fn store_experiment(lab: &Lab, m: &Model) -> i64 {
    let mut store = lab.store();
    let mut g = Gauss(m.seed);
    let variant = |name: &str, append: &str| Variant {
        command: Some("true".into()),
        boot: Some(BootConfig {
            kernel: "/nonexistent/vmlinuz-6.1.0-56-amd64".into(),
            release: "6.1.0-56-amd64".into(),
            modules: None,
            package: None,
            append: append.into(),
            source: None,
        }),
        ..Variant::named(name)
    };
    let variants = [
        variant("pti=on", "pti=on"),
        variant("noinvpcid", "pti=on noinvpcid"),
    ];
    let mut plans = Vec::new();
    let mut slots = Vec::new();
    for b in 0..2 * m.boots {
        // ABBA over boots: 0 1 1 0 0 1 1 0 ...
        let v = [0, 1, 1, 0][(b % 4) as usize];
        let first = slots.len() as u32;
        for i in 0..=m.runs {
            slots.push(Slot {
                seq: slots.len() as u32,
                variant: v,
                block: if i == 0 { -1 } else { (b / 2) as i32 },
                warmup: i == 0,
            });
        }
        plans.push(BootPlan {
            number: b,
            variant: v,
            block: (b / 2) as i32,
            first_seq: first,
            last_seq: slots.len() as u32 - 1,
        });
    }
    let exp = NewExperiment {
        name: format!("levels {}", m.accel),
        kind: Kind::Run,
        command_line: vec!["abperf".into(), "run".into()],
        design: serde_json::json!({"order": "abba", "runs": m.runs, "warmup": 1,
                                   "vm": {"boots": m.boots, "accel": m.accel}}),
        seed: Some(m.seed),
        environment: serde_json::json!({"kernel": "6.18.0", "vm": {"accel": m.accel}}),
    };
    let id = store
        .create_boot_experiment(&exp, &variants, &slots, &plans)
        .unwrap();
    for p in &plans {
        let (boot_id, _) = store
            .start_boot(id, p.number, m.accel, &serde_json::json!({}))
            .unwrap();
        store
            .boot_up(
                boot_id,
                "6.1.0-56-amd64",
                "console=ttyS0 panic=-1",
                9.0,
                &serde_json::json!({}),
            )
            .unwrap();
        let boot_mean = m.means[p.variant] + m.boot_sd * g.normal();
        for seq in p.first_seq..=p.last_seq {
            let s = slots[seq as usize];
            let wall = boot_mean + m.run_sd * g.normal();
            let run = Run {
                warmup: s.warmup,
                block: s.block,
                started_ns: 1_000_000_000 * seq as i64,
                ended_ns: 1_000_000_000 * seq as i64 + wall as i64,
                ..Run::ok(seq, p.variant, vec![Metric::new("wall_ns", wall, "ns")])
            };
            store.commit_boot_run(id, boot_id, &run).unwrap();
        }
        // A boot of 14 s in all, 0.5 s per timed run.
        store
            .end_boot(
                boot_id,
                "complete",
                "exit 0",
                Some(14.0),
                Some(0.5 * m.runs as f64),
                0,
            )
            .unwrap();
    }
    store
        .set_status(id, abperf::model::Status::Complete)
        .unwrap();
    id
}

#[test]
fn compare_judges_boot_means_and_recovers_the_components() {
    let lab = Lab::new();
    // Boot SD 2 ms, run SD 1 ms on 1 s: ICC 0.8; variant 1 is 1% slower.
    let m = Model {
        accel: "tcg",
        means: [1e9, 1.01e9],
        boot_sd: 2e6,
        run_sd: 1e6,
        boots: 8,
        runs: 5,
        seed: 0x15,
    };
    let id = store_experiment(&lab, &m).to_string();
    let doc = lab.ok(&["compare", &id, "--format", "json"]).json();
    assert_schema(&doc);
    let c = &doc["analysis"]["comparisons"][0];
    assert_eq!(
        (c["n_baseline"].as_u64(), c["n_variant"].as_u64()),
        (Some(8), Some(8)),
        "{c}"
    );
    assert_eq!(c["verdict"], "slower", "{c}");
    let line = c["line"].as_str().unwrap();
    assert!(line.contains("n=8+8 boots"), "{line}");
    assert!(
        doc["analysis"]["tests_text"]
            .as_str()
            .unwrap()
            .starts_with("on boot means")
    );
    assert_eq!(doc["boots"].as_array().unwrap().len(), 16);
    assert_eq!(doc["runs"][1]["boot"], 0);
    let l = &doc["levels"]["metrics"][0];
    for v in l["variants"].as_array().unwrap() {
        let comp = &v["components"];
        assert_eq!(
            (comp["boots"].as_u64(), comp["n0"].as_f64()),
            (Some(8), Some(5.0))
        );
        // The model's components, within what 8 boots x 5 runs can estimate.
        let sd_boot = comp["var_boot"].as_f64().unwrap().sqrt();
        let sd_run = comp["var_run"].as_f64().unwrap().sqrt();
        assert!((0.8e6..4e6).contains(&sd_boot), "boot SD {sd_boot}");
        assert!((0.7e6..1.4e6).contains(&sd_run), "run SD {sd_run}");
        assert!(comp["icc"].as_f64().unwrap() > 0.3, "{comp}");
    }
    let cmp = &l["comparisons"][0];
    assert!(cmp["width_ratio"].as_f64().unwrap() > 1.2, "{cmp}");
    let costs = &l["costs"];
    assert_eq!(costs["run_seconds"], 0.5);
    assert_eq!(costs["boot_seconds"], 11.5);
    let best = &l["plan"]["best"];
    // r = ceil(sqrt((11.5 / 0.5) * (T1^2 / T2^2))) with T1^2 / T2^2 about 1/4: about 3.
    let r = best["runs_per_boot"].as_u64().unwrap();
    assert!((1..=8).contains(&r), "{best}");
    assert!(doc["notes"].to_string().contains("TCG"), "{}", doc["notes"]);

    let text = lab.ok(&["compare", &id]).stdout;
    if std::env::var("SHOW").is_ok() {
        eprintln!("{text}");
        eprintln!("{}", lab.ok(&["report", &id]).stdout);
    }
    assert!(text.contains("Two levels, wall_ns"), "{text}");
    assert!(text.contains("ratio of boot means"), "{text}");
    assert!(text.contains("x narrower"), "{text}");
    // Every format says TCG.
    for f in ["text", "md", "mail", "html"] {
        let out = lab.ok(&["report", &id, "--format", f]).stdout;
        assert!(out.contains("TCG"), "{f}: {out}");
    }
    let plan = lab.ok(&["plan", "--from", &id, "--effect", "0.5"]).stdout;
    assert!(plan.contains("Kalibera-Jones"), "{plan}");
    assert!(
        plan.contains(&format!("best: {r} run(s) per boot x")),
        "{plan}"
    );
}

#[test]
fn compare_refuses_to_mix_accelerators() {
    let lab = Lab::new();
    let model = |accel, seed| Model {
        accel,
        means: [1e9, 1e9],
        boot_sd: 1e6,
        run_sd: 1e6,
        boots: 2,
        runs: 2,
        seed,
    };
    let tcg = store_experiment(&lab, &model("tcg", 1)).to_string();
    let kvm = store_experiment(&lab, &model("kvm", 2)).to_string();
    let tcg2 = store_experiment(&lab, &model("tcg", 3)).to_string();
    let err = lab.fails(&["compare", &tcg, &kvm], 2).stderr;
    assert!(err.contains("accelerators"), "{err}");
    assert!(err.contains("TCG") && err.contains("KVM"), "{err}");
    lab.seed000("host");
    let err = lab.fails(&["compare", &tcg, "4"], 2).stderr;
    assert!(err.contains("on the host"), "{err}");
    // Same accelerator: two experiments' boots side by side, judged on boot means.
    let doc = lab.ok(&["compare", &tcg, &tcg2, "--format", "json"]).json();
    assert_schema(&doc);
    assert_eq!(doc["analysis"]["comparisons"][0]["n_baseline"], 2);
    assert_eq!(doc["boots"].as_array().unwrap().len(), 4);
    assert_eq!(
        doc["levels"]["metrics"][0]["variants"][1]["components"]["boots"],
        2
    );
}
