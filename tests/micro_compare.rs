//! `abperf compare A B` of two micro experiments (invocations as the unit when both sides have
//! several, else the rounds within one process with the verdict withheld unless the two were
//! interleaved; one family per configuration, Holm over all): on seeded synthetic data where
//! the truth is known, on `micro --invocations` end to end, and on a
//! real `micro --quick` run split into its even and odd rounds (an A/A whose halves share the
//! host's phases, so that a calibrated comparison must call almost nothing different), with
//! one configuration given the samples of a 64-page madvise in place of the 1-page one (a real
//! difference that must be found).

#![allow(clippy::disallowed_macros)] // test and fuzz harnesses print what they saw to stderr
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

/// 3 families x 8 configurations, 16 rounds of 8 samples in `invocations` invocations (16 /
/// `invocations` rounds each); every invocation has an effect of its own (+-5%: the process's
/// buffers, their alignment and pages), every round one (+-2%, the host's phases), on top of
/// +-2% sample noise. In B, the `shifted` configurations cost 10% more.
fn synthetic(side: u64, shifted: &[&str], invocations: u32) -> Record {
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
            let process: Vec<f64> = (0..invocations)
                .map(|_| 1.0 + rng.random_range(-0.05..0.05))
                .collect();
            for r in 0..16 {
                let invocation = r / (16 / invocations);
                let phase = process[invocation as usize] * (1.0 + rng.random_range(-0.02..0.02));
                let cycles = (0..8)
                    .map(|_| base * k * phase * (1.0 + rng.random_range(-0.02..0.02)))
                    .collect();
                rounds.push(MicroRound {
                    variant: pos,
                    round: r,
                    invocation,
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
    let a = synthetic(1, &[], 8).save(&mut lab.store()).unwrap();
    let b = synthetic(2, &shifted, 8).save(&mut lab.store()).unwrap();
    let out = lab.ok(&[
        "compare",
        &a.to_string(),
        &b.to_string(),
        "--format",
        "json",
    ]);
    let doc = out.json();
    assert_schema(&doc);
    assert_eq!(doc["micro_compare"]["unit"], "invocation");
    assert_eq!(
        doc["micro_compare"]["invocations"],
        serde_json::json!([8, 8])
    );
    assert!(doc["micro_compare"].get("withheld").is_none());
    assert_eq!(rows(&doc).len(), 24);
    assert_eq!(differing(&doc), shifted, "{}", out.stdout);
    for r in rows(&doc) {
        // The invocations are the observations.
        assert_eq!(r["rounds_a"], 8);
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
    assert!(text.contains("invocations as the unit"), "{text}");
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

/// The same kind of data measured in one process per side: the process's effect (+-5% per
/// configuration) looks like a difference to the rounds, which cannot see it vary. The
/// comparison gives no verdict, says why, and shows the rounds' calls as within one process.
#[test]
fn one_invocation_per_side_withholds_the_verdicts() {
    let lab = Lab::new();
    let a = synthetic(1, &[], 1).save(&mut lab.store()).unwrap();
    let b = synthetic(2, &[], 1).save(&mut lab.store()).unwrap();
    let (a, b) = (a.to_string(), b.to_string());
    let doc = lab.ok(&["compare", &a, &b, "--format", "json"]).json();
    assert_schema(&doc);
    let mc = &doc["micro_compare"];
    assert_eq!(mc["unit"], "round");
    assert_eq!(mc["invocations"], serde_json::json!([1, 1]));
    assert!(mc["withheld"].as_str().unwrap().contains("--invocations"));
    assert!(differing(&doc).is_empty(), "{mc}");
    assert!(rows(&doc).iter().all(|r| r["verdict"] == "inconclusive"));
    // An A/A: what the rounds call is the processes' difference, and there is plenty of it.
    let within: Vec<&Value> = rows(&doc)
        .iter()
        .filter(|r| r["within_process"] == "slower" || r["within_process"] == "faster")
        .collect();
    assert!(within.len() >= 6, "{} within-process calls", within.len());
    let text = lab.ok(&["compare", &a, &b]).stdout;
    assert!(
        text.starts_with("No verdicts: #1 was measured in one process"),
        "{text}"
    );
    assert!(
        text.contains("withheld (SLOWER within one process)")
            || text.contains("withheld (FASTER within one process)"),
        "{text}"
    );
    // One side with several invocations and the other with one: still no verdict.
    let c = synthetic(3, &[], 8).save(&mut lab.store()).unwrap();
    let doc = lab
        .ok(&["compare", &a, &c.to_string(), "--format", "json"])
        .json();
    assert!(
        doc["micro_compare"]["withheld"]
            .as_str()
            .unwrap()
            .contains("8 processes")
    );
    assert!(differing(&doc).is_empty());
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
    // One process: its rounds split in two halves.
    lab.ok(&[
        "micro",
        "--quick",
        "syscall",
        "xstate",
        "tlb-flush",
        "--invocations",
        "1",
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
    // Two halves of one process: the rounds' calls (as within one process; the comparison
    // of two separate experiments withholds its verdict) are what is checked here.
    assert!(doc["micro_compare"]["withheld"].is_string());
    let row = rows(&doc).iter().find(|r| r["config"] == one).unwrap();
    assert_eq!(row["within_process"], "slower", "{row}");
    assert!(row["ratio"].as_f64().unwrap() > 2.0, "{row}");
    // Interleaved halves of one run share the host's phases: besides the swapped configuration,
    // few false calls (Holm keeps the chance of any at 5% if rounds were independent; the host's
    // load changing within a round breaks that a little: 3 of 304 once, with other builds
    // running). At most 2% of the configurations, at least 2.
    let others: Vec<String> = rows(&doc)
        .iter()
        .filter(|r| r["within_process"] == "slower" || r["within_process"] == "faster")
        .map(|r| r["config"].as_str().unwrap().to_string())
        .filter(|c| c != one)
        .collect();
    let same = rows(&doc)
        .iter()
        .filter(|r| r["within_process"] == "no difference")
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
    let a = synthetic(1, &[], 8).save(&mut lab.store()).unwrap();
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

/// A harmless real knob (the System V message size limit: no benchmark of the suite sends a
/// message) for interleaved A/A runs of `abperf micro -k`.
const MSGMAX: &str = "/proc/sys/kernel/msgmax";

/// Tests that write the real msgmax knob must not overlap (each has its own lock directory).
static MSGMAX_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn msgmax() -> String {
    std::fs::read_to_string(MSGMAX)
        .unwrap_or_else(|e| panic!("{MSGMAX}: {e}: procfs of this kernel lacks it"))
        .trim()
        .to_string()
}

#[test]
fn micro_with_knob_variants_runs_interleaved_stores_both_and_restores() {
    let _g = MSGMAX_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::with_own_locks();
    let orig = msgmax();
    let other = if orig == "8192" { "16384" } else { "8192" };
    let k = format!("{MSGMAX}={orig},{other}");
    let out = lab.ok(&[
        "micro", "--quick", "syscall", "signal", "--span", "1", "-k", &k, "--seed", "7",
        "--format", "json",
    ]);
    assert_eq!(msgmax(), orig, "knob not restored");
    let doc = out.json();
    assert_schema(&doc);
    let mc = &doc["micro_compare"];
    assert_eq!(mc["labels"][0], format!("kernel/msgmax={orig}"));
    assert_eq!(mc["labels"][1], format!("kernel/msgmax={other}"));
    assert!(!rows(&doc).is_empty(), "{}", out.stdout);
    assert!(
        out.stderr.contains("stored as experiments 1, 2"),
        "{}",
        out.stderr
    );
    // Both variants stored, linked, with the same rounds, measured round by round in turn.
    let store = lab.store();
    let (ea, eb) = (store.experiment(1).unwrap(), store.experiment(2).unwrap());
    assert_eq!(
        ea.design["interleaved"]["group"],
        eb.design["interleaved"]["group"]
    );
    assert_eq!(eb.design["interleaved"]["knobs"][MSGMAX], other);
    let starts = |id: i64| -> Vec<i64> {
        let ds = store.load(id).unwrap();
        let v = ds.position("syscall/getppid").unwrap();
        store
            .micro_rounds(id)
            .unwrap()
            .iter()
            .filter(|r| r.variant == v)
            .map(|r| r.probe.started_ns)
            .collect()
    };
    let (sa, sb) = (starts(1), starts(2));
    assert_eq!(sa.len(), sb.len());
    assert!(sa.len() >= 16, "{} rounds", sa.len());
    let mut a_first = 0;
    for r in 0..sa.len() - 1 {
        // Round r of both variants before round r+1 of either.
        assert!(
            sa[r].max(sb[r]) < sa[r + 1].min(sb[r + 1]),
            "round {r}: {sa:?} {sb:?}"
        );
        a_first += usize::from(sa[r] < sb[r]);
    }
    // ABBA: each variant goes first in about half the rounds.
    assert!(
        a_first > 3 && a_first < sa.len() - 4,
        "A first in {a_first} rounds"
    );
    // `compare ID` of either compares the two, configuration by configuration.
    let text = lab.ok(&["compare", "2"]).stdout;
    assert!(text.contains("syscall"), "{text}");
    assert!(text.contains(&format!("kernel/msgmax={other}")), "{text}");
    let again = lab.ok(&["compare", "1", "--format", "json"]).json();
    assert_eq!(rows(&again).len(), rows(&doc).len());
    // Bad input, before anything runs.
    let e = lab.fails(&["micro", "syscall", "-k", &format!("{MSGMAX}=1")], 2);
    assert!(e.stderr.contains("one variant"), "{}", e.stderr);
    let e = lab.fails(&["micro", "syscall", "--append", "quiet"], 2);
    assert!(
        e.stderr.contains("--append: only with --kernel"),
        "{}",
        e.stderr
    );
    let e = lab.fails(&["micro", "syscall", "--kernel", "/nonexistent/vmlinuz"], 2);
    assert!(
        e.stderr.contains("--kernel /nonexistent/vmlinuz"),
        "{}",
        e.stderr
    );
}

#[test]
fn micro_knob_variants_restore_the_knob_on_sigterm() {
    let _g = MSGMAX_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::with_own_locks();
    let orig = msgmax();
    let k = format!("{MSGMAX}=8193,8194");
    let child = lab
        .cmd(&[
            "micro", "--quick", "syscall", "timer", "--span", "20", "-k", &k,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until a variant's value is in place, then stop it.
    let t0 = std::time::Instant::now();
    while msgmax() == orig && t0.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let changed = msgmax() != orig;
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: our own child, not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(changed, "the knob never changed: {stderr}");
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert_eq!(msgmax(), orig, "knob not restored: {stderr}");
    assert!(stderr.contains("interrupted by SIGTERM"), "{stderr}");
    assert!(lab.store().list().unwrap().is_empty());
}

/// `micro --invocations 3`: three child processes, every round stored with its invocation, in
/// order; two such experiments compare with the invocations as the unit.
#[test]
fn micro_in_invocations_stores_them_and_compares_across_processes() {
    let lab = Lab::new();
    for _ in 0..2 {
        lab.ok(&[
            "micro",
            "--quick",
            "syscall",
            "--span",
            "0.3",
            "--invocations",
            "3",
        ]);
    }
    let store = lab.store();
    assert_eq!(store.experiment(1).unwrap().design["invocations"], 3);
    let ds = store.load(1).unwrap();
    let v = ds.position("syscall/getppid").unwrap();
    let rounds: Vec<MicroRound> = store
        .micro_rounds(1)
        .unwrap()
        .into_iter()
        .filter(|r| r.variant == v)
        .collect();
    // 32 rounds of --quick in shares of 11, invocation after invocation.
    let inv: Vec<u32> = rounds.iter().map(|r| r.invocation).collect();
    let want: Vec<u32> = (0..3).flat_map(|i| [i; 11]).collect();
    assert_eq!(inv, want);
    assert!(
        rounds
            .windows(2)
            .all(|w| w[0].probe.started_ns <= w[1].probe.started_ns)
    );
    // 1001 samples of --quick in shares of 334.
    assert_eq!(
        rounds.iter().map(|r| r.cycles.len()).sum::<usize>(),
        3 * 334
    );
    let doc = lab.ok(&["compare", "1", "2", "--format", "json"]).json();
    assert_schema(&doc);
    let mc = &doc["micro_compare"];
    assert_eq!(mc["unit"], "invocation");
    assert_eq!(mc["invocations"], serde_json::json!([3, 3]));
    assert!(
        rows(&doc)
            .iter()
            .all(|r| r["rounds_a"] == 3 && r["rounds_b"] == 3)
    );
    let e = lab.fails(&["micro", "syscall", "--invocations", "0"], 2);
    assert!(e.stderr.contains("--invocations 0"), "{}", e.stderr);
}

/// `micro -k ... --invocations 2`: invocation 0 of both variants before invocation 1 of either,
/// the knob restored; the comparison of the two takes the invocations as the unit.
#[test]
fn micro_knob_variants_in_invocations_alternate_processes() {
    let _g = MSGMAX_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::with_own_locks();
    let orig = msgmax();
    let k = format!("{MSGMAX}={orig},{orig}");
    let out = lab.ok(&[
        "micro",
        "--quick",
        "syscall",
        "--span",
        "0.3",
        "-k",
        &k,
        "--invocations",
        "2",
        "--seed",
        "3",
        "--format",
        "json",
    ]);
    assert_eq!(msgmax(), orig, "knob not restored");
    let doc = out.json();
    assert_schema(&doc);
    assert_eq!(doc["micro_compare"]["unit"], "invocation");
    assert_eq!(doc["micro_compare"]["interleaved"], true);
    let store = lab.store();
    let e = store.experiment(1).unwrap();
    assert_eq!(
        e.design["interleaved"]["order"],
        "invocation by invocation, ABBA (seeded)"
    );
    // The time span of each invocation of each variant: all of invocation 0 before any of 1.
    let span = |id: i64, i: u32| -> (i64, i64) {
        let t: Vec<i64> = store
            .micro_rounds(id)
            .unwrap()
            .iter()
            .filter(|r| r.invocation == i)
            .map(|r| r.probe.started_ns)
            .collect();
        (*t.iter().min().unwrap(), *t.iter().max().unwrap())
    };
    let last0 = span(1, 0).1.max(span(2, 0).1);
    let first1 = span(1, 1).0.min(span(2, 1).0);
    assert!(last0 < first1, "{last0} {first1}");
}
