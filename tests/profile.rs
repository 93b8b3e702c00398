//! Profiles on this machine's real `perf`: recordings of a C program sampled with call graphs
//! (`abperf::measure::perf_record`), parsed from `perf script` text (`import::perf_script`) and
//! compared run by run (`stats::profile_diff`), and `abperf run --profile`, which does the same
//! in untimed runs interleaved with the timed ones (docs/profile.md).
//!
//! The variants' profiled runs alternate A B B A ..., as an ABBA schedule would. Each test is a
//! few seconds: short runs at a high sampling frequency.

mod common;
use abperf::import::perf_script;
use abperf::measure::perf_record::Sampler;
use abperf::model::profile::{Profile, TOP_SYMBOLS};
use abperf::stats::profile_diff::{Options, ProfileDiff, differential};
use std::path::{Path, PathBuf};
use std::process::Command;

/// How many profiled runs each variant gets.
const RUNS: usize = 5;

fn build(dir: &Path, name: &str) -> Option<PathBuf> {
    if !common::on_path("cc") || !common::on_path("perf") {
        common::skip("profiles need cc and perf in PATH");
        return None;
    }
    let out = dir.join(name);
    let src = format!("{}/tests/programs/{name}.c", env!("CARGO_MANIFEST_DIR"));
    let st = Command::new("cc")
        .args(["-O1", "-fno-omit-frame-pointer", "-o"])
        .arg(&out)
        .arg(src)
        .status()
        .expect("cc runs");
    assert!(st.success());
    Some(out)
}

/// `RUNS` profiled runs of each argv, alternating A B B A.
fn profile(a: &[String], b: &[String], dir: &Path) -> (Vec<Profile>, Vec<Profile>, String) {
    let sampler = Sampler::new(None, 4000).unwrap();
    let (mut pa, mut pb) = (Vec::new(), Vec::new());
    for i in 0..2 * RUNS {
        let first_b = matches!(i % 4, 1 | 2);
        let argv = if first_b { b } else { a };
        let text = sampler.record(argv, dir).unwrap();
        let rec = perf_script::parse(&text, "perf script").unwrap();
        assert_eq!(rec.event, sampler.event);
        assert!(rec.counts.samples > 50, "{} samples", rec.counts.samples);
        let p = rec.counts.profile(&rec.event, TOP_SYMBOLS);
        if first_b { pb.push(p) } else { pa.push(p) }
    }
    (pa, pb, sampler.event)
}

fn show(d: &ProfileDiff, event: &str) -> String {
    abperf::report::profile::text(d, event, "A", "B")
}

fn argv(prog: &Path, args: &[&str]) -> Vec<String> {
    let mut v = vec![prog.to_string_lossy().into_owned()];
    v.extend(args.iter().map(|s| s.to_string()));
    v
}

#[test]
fn a_function_called_more_tops_the_differential() {
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = build(dir.path(), "hot_cold") else {
        return;
    };
    // A: hot and cold equal; B: hot does twice the work.
    let a = argv(&prog, &["300", "100000", "100000"]);
    let b = argv(&prog, &["300", "200000", "100000"]);
    let (pa, pb, event) = profile(&a, &b, dir.path());
    let d = differential(&pa, &pb, Options::default()).unwrap();
    let text = show(&d, &event);
    let top = &d.symbols[0];
    assert_eq!(top.symbol, "hot", "{text}");
    assert!(top.named && top.low > 0.0, "{text}");
    // hot's self share goes from about 1/2 to about 2/3.
    assert!(top.diff > 0.08 && top.diff < 0.25, "{text}");
    assert!(text.contains("B spends +"), "{text}");
}

#[test]
fn more_pages_per_madvise_names_kernel_fault_and_flush_paths() {
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = build(dir.path(), "madvise_loop") else {
        return;
    };
    // The same pages touched in all: one page per madvise (a TLB flush per page) against 64.
    let a = argv(&prog, &["15000", "1"]);
    let b = argv(&prog, &["470", "64"]);
    let (pa, pb, event) = profile(&a, &b, dir.path());
    let d = differential(&pa, &pb, Options::default()).unwrap();
    let text = show(&d, &event);
    let kernel_named: Vec<_> = d
        .named()
        .filter(|s| {
            ["fault", "flush", "zap", "tlb"]
                .iter()
                .any(|k| s.symbol.contains(k))
        })
        .collect();
    assert!(!kernel_named.is_empty(), "{text}");
    for s in kernel_named {
        assert!(s.low > 0.0 || s.high < 0.0, "{text}");
    }
}

/// One A/A repetition (benches/profile_aa.sh runs it many times and counts how often a symbol
/// is named): prints `named N` for the script.
#[test]
#[ignore]
fn a_a_once() {
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = build(dir.path(), "hot_cold") else {
        return;
    };
    let a = argv(&prog, &["300", "100000", "100000"]);
    let (pa, pb, event) = profile(&a, &a, dir.path());
    let d = differential(&pa, &pb, Options::default()).unwrap();
    print!("{}", show(&d, &event));
    println!("named {}", d.named().count());
}

/// `compare` prints the differential of the stored profiled runs under its verdicts (text only;
/// the other formats are unchanged). The profiles are stored through the library, as the
/// runner is to store them; the timed runs come from an imported table.
#[test]
fn compare_prints_the_stored_differential_under_the_verdicts() {
    use abperf::model::profile::{Counts, ProfiledRun};
    let lab = common::Lab::new();
    let table = lab.write(
        "t.csv",
        "variant,wall_ns [ns]\nA,100\nA,101\nA,99\nB,100\nB,102\nB,98\n",
    );
    lab.ok(&["import", "--format", "csv", &table]);
    let json_before = lab.ok(&["compare", "1", "--format", "json"]).stdout;
    let mut store = abperf::store::Store::open(&lab.db()).unwrap();
    for seq in 0..8u32 {
        let variant = (seq % 2) as usize;
        let mut c = Counts::default();
        let hot = 300 + 150 * variant as u32 + 7 * seq;
        for i in 0..1000 {
            c.add_stack(if i < hot {
                ["hot", "main"]
            } else {
                ["cold", "main"]
            });
        }
        let run = ProfiledRun {
            variant,
            seq,
            wall_ns: 1_000_000,
            profile: c.profile("cpu-clock", TOP_SYMBOLS),
            stacks: None,
        };
        store.save_profile(1, &run).unwrap();
    }
    drop(store);
    let out = lab.ok(&["compare", "1"]).stdout;
    assert!(
        out.contains(
            "8 profiled runs of cpu-clock (not timed; 0.0 s under perf in all, 0.00 s each against 0.00 s per timed run)"
        ),
        "{out}"
    );
    assert!(out.contains("B spends +"), "{out}");
    assert!(out.contains("of its samples in hot (95% CI +"), "{out}");
    assert!(out.contains("of its samples in cold (95% CI -"), "{out}");
    // JSON: the document as before plus its profile (schema-checked); mail: LKP-like rows.
    let mut json = lab.ok(&["compare", "1", "--format", "json"]).json();
    common::assert_schema(&json);
    let profile = json.as_object_mut().unwrap().remove("profile").unwrap();
    assert_eq!(profile["profiled_runs"], 8);
    let d = &profile["differentials"][0]["differential"];
    let hot = d["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["symbol"] == "hot");
    assert_eq!(hot.unwrap()["named"], true, "{d}");
    let before: serde_json::Value = serde_json::from_str(&json_before).unwrap();
    assert_eq!(json, before);
    let mail = lab.ok(&["compare", "1", "--format", "mail"]).stdout;
    assert!(
        mail.contains("perf-profile.self.cpu-clock-pp.hot"),
        "{mail}"
    );
    assert!(mail.lines().all(|l| l.chars().count() <= 72), "{mail}");
    // export: the profiled runs' shares, no differential.
    let export = lab.ok(&["export", "1"]).json();
    common::assert_schema(&export);
    assert_eq!(export["profile"]["runs"].as_array().unwrap().len(), 8);
    assert_eq!(export["profile"]["differentials"], serde_json::json!([]));
}

/// `import --format perf-script`: a directory per variant, one recording per file, into a new
/// experiment and then a file into it; the differential names the symbol B spends more in.
#[test]
fn import_perf_script_recordings_as_profiled_runs() {
    let lab = common::Lab::new();
    for (variant, hot) in [("A", 300u32), ("B", 450)] {
        for i in 0..4u32 {
            let text = common::perf_script_text(&[("hot", hot + 9 * i), ("cold", 600 - 11 * i)]);
            lab.write(&format!("{variant}/run{i}.txt"), text);
        }
    }
    lab.ok(&[
        "import",
        "--format",
        "perf-script",
        "--new",
        "theirs",
        &lab.p("A"),
        &lab.p("B"),
    ])
    .has("imported 8 profiled run(s) of cpu-clock (A: 4, B: 4) into experiment 1");
    let extra = lab.write(
        "b4.txt",
        common::perf_script_text(&[("hot", 460), ("cold", 590)]),
    );
    lab.ok(&[
        "import",
        "--format",
        "perf-script",
        "--experiment",
        "1",
        "--variant",
        "B",
        &extra,
    ])
    .has("(B: 1) into experiment 1");
    let text = lab.ok(&["compare", "1"]).stdout;
    assert!(
        text.contains("9 profiled runs of cpu-clock (imported; their cost is not recorded)"),
        "{text}"
    );
    assert!(text.contains("of its samples in hot (95% CI +"), "{text}");
    // A bad recording is refused naming its file and line; nothing is stored.
    let bad = lab.write("bad.txt", "    1161 hot+0x28 (/tmp/hc)\n");
    lab.fails(
        &[
            "import",
            "--format",
            "perf-script",
            "--experiment",
            "1",
            &bad,
        ],
        2,
    )
    .err_has("bad.txt:1");
    let other = lab.write(
        "cyc.txt",
        common::perf_script_text(&[("hot", 10)]).replace("cpu-clock", "cycles"),
    );
    lab.fails(
        &[
            "import",
            "--format",
            "perf-script",
            "--experiment",
            "1",
            "--variant",
            "B",
            &other,
        ],
        1,
    )
    .err_has("sampled cpu-clock; these sampled cycles");
    assert_eq!(lab.store().profiles(1).unwrap().len(), 9);
}

/// `run --profile`: profiled runs follow the timed runs the plan picks, in the schedule's seeded
/// order, never timed (the timed runs are the experiment's, unchanged in number), each stored
/// with the timed run's sequence number and variant; the run summary and `compare` give their
/// count, cost and the differential, which names `hot` for B with an interval above 0.
#[test]
fn run_profile_interleaves_untimed_profiled_runs() {
    let lab = common::Lab::new();
    let Some(prog) = build(&lab.path(""), "hot_cold") else {
        return;
    };
    let prog = prog.to_string_lossy().into_owned();
    let a = format!("{prog} 300 100000 100000");
    let b = format!("{prog} 300 400000 100000");
    let out = lab.ok(&[
        "run",
        "--profile",
        "--profile-runs",
        "4",
        "-r",
        "4",
        "--seed",
        "7",
        "-n",
        "A",
        "-n",
        "B",
        &a,
        &b,
    ]);
    let event = abperf::measure::perf_record::default_event();
    out.has(&format!("8 profiled runs of {event} (not timed;"))
        .err_has("--profile: 4 untimed profiled run(s) per variant");
    let store = lab.store();
    let profiles = store.profiles(1).unwrap();
    let data = store.load(1).unwrap();
    assert_eq!(data.runs.len(), 10, "the timed runs and warm-ups only");
    let timed: Vec<(u32, usize)> = data
        .runs
        .iter()
        .filter(|r| !r.warmup)
        .map(|r| (r.seq, r.variant))
        .collect();
    let profiled: Vec<(u32, usize)> = profiles.iter().map(|p| (p.seq, p.variant)).collect();
    assert_eq!(
        profiled, timed,
        "one profiled run after each timed run, in its order"
    );
    for p in &profiles {
        assert_eq!(p.profile.event, event);
        assert!(p.profile.samples > 50, "{} samples", p.profile.samples);
        // Its call stacks, root first, for the flame graph: hot under its caller (main, or
        // libc's caller of main when main's frame is not on the chain).
        let stacks = p.stacks.as_ref().expect("a profiled run stores its stacks");
        stacks.check(p.profile.samples).unwrap();
        let hot: u64 = stacks
            .stacks
            .iter()
            .filter(|(s, _)| s.ends_with("main;hot"))
            .map(|x| x.1)
            .sum();
        assert!(hot > 10, "{stacks:?}");
    }
    let html = lab.path("p.html");
    lab.ok(&[
        "report",
        "1",
        "--format",
        "html",
        "-o",
        html.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("class=\"plot flame-diff\""), "{page}");
    assert!(page.contains("<title>hot\n"), "{page}");
    let text = lab.ok(&["compare", "1"]).stdout;
    assert!(text.contains("B spends +"), "{text}");
    assert!(text.contains("of its samples in hot (95% CI +"), "{text}");
}

#[test]
fn run_profile_refuses_the_boot_loop_and_a_bad_event() {
    let lab = common::Lab::new();
    let boot_loop = [
        "--boot-on-host",
        "kexec",
        "--kernel",
        "/nonexistent",
        "true",
    ];
    lab.fails(&[&["run", "--profile"][..], &boot_loop].concat(), 2)
        .err_has("the boot loop does not profile yet");
    lab.fails(&["run", "--profile=cycles;x", "true"], 2)
        .err_has("not an event name perf takes");
    lab.fails(&["run", "--profile", "--profile-runs", "0", "true"], 2)
        .err_has("--profile-runs 0");
}
