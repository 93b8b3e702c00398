//! `abperf compare A B` of two micro experiments (rounds as the unit, one family per
//! configuration, Holm over all): on seeded synthetic data where the truth is known, and on a
//! real `micro --quick` run split into its even and odd rounds (an A/A whose halves share the
//! host's phases, so that a calibrated comparison must call almost nothing different), with
//! one configuration given the samples of a 64-page madvise in place of the 1-page one (a real
//! difference that must be found).

mod common;
use abperf::micro::record::Record;
use abperf::model::micro::{MicroRound, RoundProbe, rounds_to_runs};
use abperf::model::{Kind, NewExperiment, Variant};
use common::{Lab, assert_schema};
use rand::{Rng, SeedableRng};
use serde_json::Value;

fn probe() -> RoundProbe {
    RoundProbe {
        started_ns: 0,
        ticks_per_core_cycle: 1.0,
        adds_per_cycle: f64::NAN,
    }
}

fn record(name: &str, variants: Vec<Variant>, rounds: Vec<MicroRound>) -> Record {
    let pages: Vec<u64> = variants
        .iter()
        .map(|v| v.parameters.get("pages").map_or(1, |p| p.parse().unwrap()))
        .collect();
    Record {
        experiment: NewExperiment {
            name: name.into(),
            kind: Kind::Micro,
            command_line: vec!["abperf".into(), "micro".into()],
            design: serde_json::json!({"kind": "micro", "timer": {"hz": 1e9}}),
            seed: None,
            environment: serde_json::json!({}),
        },
        runs: rounds_to_runs(&rounds, |v| pages[v], 1e9),
        variants,
        rounds,
        findings: Vec::new(),
    }
}

/// 3 families x 8 configurations, 16 rounds of 8 samples; every round has an effect of its own
/// (+-6%, the host's phases) on top of +-2% sample noise. In B, 4 configurations of `beta` cost
/// 10% more.
fn synthetic(side: u64, shifted: &[&str]) -> Record {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0xab + side);
    let mut variants = Vec::new();
    let mut rounds = Vec::new();
    for bench in ["alpha", "beta", "gamma"] {
        for c in 0..8 {
            let name = format!("{bench}/c{c}");
            let pos = variants.len();
            let mut v = Variant::named(&name);
            v.parameters.insert("bench".into(), bench.into());
            let base = 1000.0 * (1 + c) as f64;
            let k = if shifted.contains(&name.as_str()) {
                1.10
            } else {
                1.0
            };
            for r in 0..16 {
                let phase = 1.0 + rng.random_range(-0.06..0.06);
                let cycles = (0..8)
                    .map(|_| base * k * phase * (1.0 + rng.random_range(-0.02..0.02)))
                    .collect();
                rounds.push(MicroRound {
                    variant: pos,
                    round: r,
                    probe: probe(),
                    cycles,
                });
            }
            variants.push(v);
        }
    }
    record(&format!("synthetic {side}"), variants, rounds)
}

fn rows(doc: &Value) -> &Vec<Value> {
    doc["micro_compare"]["rows"].as_array().expect("rows")
}

fn differing(doc: &Value) -> Vec<String> {
    rows(doc)
        .iter()
        .filter(|r| r["verdict"] == "slower" || r["verdict"] == "faster")
        .map(|r| r["config"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn synthetic_shifts_are_found_and_nothing_else() {
    let lab = Lab::new();
    let shifted = ["beta/c0", "beta/c2", "beta/c5", "beta/c7"];
    let a = synthetic(1, &[]).save(&mut lab.store()).unwrap();
    let b = synthetic(2, &shifted).save(&mut lab.store()).unwrap();
    let out = lab.ok(&[
        "compare",
        &a.to_string(),
        &b.to_string(),
        "--format",
        "json",
    ]);
    let doc = out.json();
    assert_schema(&doc);
    assert_eq!(rows(&doc).len(), 24);
    assert_eq!(differing(&doc), shifted, "{}", out.stdout);
    for r in rows(&doc) {
        assert_eq!(r["rounds_a"], 16);
        if shifted.contains(&r["config"].as_str().unwrap()) {
            assert_eq!(r["verdict"], "slower");
            let [lo, hi] =
                [r["ratio_ci"][0].as_f64(), r["ratio_ci"][1].as_f64()].map(Option::unwrap);
            assert!(lo < 1.10 && hi > 1.10 && lo > 1.0, "{r}");
        }
    }
    let fam = &doc["micro_compare"]["families"];
    assert_eq!(fam[1]["bench"], "beta");
    assert_eq!(fam[1]["slower"], 4);
    // The text: the summary names the family and its biggest change, the table only the
    // differing rows.
    let text = lab.ok(&["compare", &a.to_string(), &b.to_string()]).stdout;
    assert!(text.contains("beta: c"), "{text}");
    assert!(text.contains("alpha: none differs"), "{text}");
    assert_eq!(text.matches(" SLOWER").count(), 4, "{text}");
    assert!(text.lines().count() < 40, "{text}");
    // Only one family, and bad input.
    let only = lab.ok(&[
        "compare",
        &a.to_string(),
        &b.to_string(),
        "--variant",
        "gamma",
        "--format",
        "json",
    ]);
    assert_eq!(rows(&only.json()).len(), 8);
    let e = lab.fails(
        &[
            "compare",
            &a.to_string(),
            &b.to_string(),
            "--variant",
            "delta",
        ],
        2,
    );
    assert!(e.stderr.contains("--variant \"delta\""), "{}", e.stderr);
    let e = lab.fails(
        &["compare", &a.to_string(), &b.to_string(), "--by", "bench"],
        2,
    );
    assert!(
        e.stderr.contains("configuration by configuration"),
        "{}",
        e.stderr
    );
}

/// The rounds of stored micro experiment `id` whose number is even (`odd` false) or odd,
/// renumbered from 0, as a new experiment; `swap` = (config, other): `config` gets `other`'s
/// samples.
fn half(lab: &Lab, id: i64, odd: bool, swap: Option<(&str, &str)>) -> i64 {
    let mut store = lab.store();
    let ds = store.load(id).unwrap();
    let e = store.experiment(id).unwrap();
    let all = store.micro_rounds(id).unwrap();
    let mut rounds: Vec<MicroRound> = all
        .iter()
        .filter(|r| (r.round % 2 == 1) == odd)
        .map(|r| MicroRound {
            round: r.round / 2,
            ..r.clone()
        })
        .collect();
    if let Some((config, other)) = swap {
        let (c, o) = (ds.position(config).unwrap(), ds.position(other).unwrap());
        let theirs: Vec<MicroRound> = rounds.iter().filter(|r| r.variant == o).cloned().collect();
        rounds.retain(|r| r.variant != c);
        rounds.extend(theirs.into_iter().map(|r| MicroRound { variant: c, ..r }));
    }
    let mut rec = record(&format!("{} half", e.name), ds.variants.clone(), rounds);
    rec.experiment.design = e.design.clone();
    rec.experiment.environment = e.environment.clone();
    rec.save(&mut store).unwrap()
}

#[test]
fn real_rounds_split_in_two_agree_and_a_real_difference_shows() {
    let lab = Lab::new();
    lab.ok(&[
        "micro",
        "--quick",
        "syscall",
        "xstate",
        "tlb-flush",
        "--format",
        "json",
    ]);
    let a = half(&lab, 1, false, None);
    let one = "tlb-flush/madvise/touched/n=1";
    let b = half(&lab, 1, true, Some((one, "tlb-flush/madvise/touched/n=64")));
    let out = lab.ok(&[
        "compare",
        &a.to_string(),
        &b.to_string(),
        "--format",
        "json",
    ]);
    let doc = out.json();
    assert_schema(&doc);
    let n = rows(&doc).len();
    assert!(n > 100, "{n} configurations compared");
    let row = rows(&doc).iter().find(|r| r["config"] == one).unwrap();
    assert_eq!(row["verdict"], "slower", "{row}");
    assert!(row["ratio"].as_f64().unwrap() > 2.0, "{row}");
    // Interleaved halves of one run share the host's phases: besides the swapped configuration,
    // few false calls (Holm keeps the chance of any at 5% if rounds were independent; the host's
    // load changing within a round breaks that a little: 3 of 304 once, with other builds
    // running). At most 2% of the configurations, at least 2.
    let others: Vec<String> = differing(&doc).into_iter().filter(|c| c != one).collect();
    let same = rows(&doc)
        .iter()
        .filter(|r| r["verdict"] == "no difference")
        .count();
    eprintln!(
        "A/A halves: {} of {n} configurations called different, {same} no difference",
        others.len()
    );
    assert!(
        others.len() <= (n / 50).max(2),
        "{} of {n} configurations called different in an A/A: {others:?}",
        others.len()
    );
}

#[test]
fn one_micro_experiment_compares_as_its_tables() {
    let lab = Lab::new();
    let a = synthetic(1, &[]).save(&mut lab.store()).unwrap();
    let text = lab.ok(&["compare", &a.to_string()]).stdout;
    assert!(text.contains("== beta =="), "{text}");
    assert!(!text.contains("no verdicts against the first"), "{text}");
    // A named baseline still asks for verdicts against it.
    let out = lab.ok(&[
        "compare",
        &a.to_string(),
        "--baseline",
        "alpha/c0",
        "--resamples",
        "0",
    ]);
    assert!(out.stdout.contains("alpha/c1"), "{}", out.stdout);
}
