//! `abperf history` over experiments other than `run`'s, and the bisection of a change between
//! commits (issue 43): labelled imports are a series whose step is found and that `--confirm`
//! says it cannot re-measure; a labelled micro experiment is a point of `--metric cycles`; a
//! history of a small C program run at eight commits of a repository (benches/bisect_repo.sh)
//! offers the exact `abperf bisect` of the commits between the change's sides, and `--bisect`
//! runs it and names the culprit. Every JSON answer is checked against the schema.

mod common;
use common::Lab;
use std::path::Path;
use std::process::{Command, Stdio};

fn history_json(lab: &Lab, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["history", "--format", "json"];
    all.extend_from_slice(args);
    let j = lab.ok(&all).json();
    common::assert_schema(&j);
    j
}

#[test]
fn labelled_imports_and_micro_experiments_are_series() {
    let lab = Lab::new();
    // Eight imports of one tool's measurements, labelled n=1..8; the level doubles at n=5.
    for n in 1..=8u32 {
        let level = if n >= 5 { 2000.0 } else { 1000.0 };
        let rows: String = (0..5)
            .map(|k| format!("bench,{}\n", level + (k * 7 % 5) as f64 * 4.0))
            .collect();
        let file = lab.write(
            &format!("n{n}.csv"),
            format!("variant,wall_ns [ns]\n{rows}"),
        );
        lab.ok(&[
            "import",
            "--format",
            "csv",
            "--label",
            &format!("n={n}"),
            &file,
        ]);
    }
    let j = history_json(&lab, &["--order-by", "n"]);
    let series = j["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{j:#}");
    assert_eq!(series[0]["points"].as_array().unwrap().len(), 8);
    let change = &series[0]["changes"][0];
    assert_eq!(change["first_after"], "5", "{j:#}");
    assert_eq!(change["direction"], "worse");
    // An imported point has no design to run again: said plainly, nothing run.
    let j = history_json(&lab, &["--order-by", "n", "--confirm"]);
    let c = &j["series"][0]["changes"][0];
    assert_eq!(c["status"], "not confirmed", "{j:#}");
    let text = c["confirmation"]["text"].as_str().unwrap();
    assert!(
        text.contains("cannot re-measure: an imported point"),
        "{text}"
    );
    assert_eq!(lab.ok(&["list"]).stdout.matches("import").count(), 8);
    // Labels name a new experiment: not taken with --experiment; a bad one is refused.
    let file = lab.p("n1.csv");
    lab.fails(
        &[
            "import",
            "--format",
            "csv",
            "--experiment",
            "1",
            "--label",
            "n=9",
            &file,
        ],
        2,
    );
    let bad = lab.fails(&["import", "--format", "csv", "--label", "9=x", &file], 2);
    assert!(bad.stderr.contains("--label '9=x'"), "{bad}");

    // A micro experiment: one point per configuration, its rounds the replicates.
    lab.ok(&[
        "micro",
        "syscall",
        "--quick",
        "--samples",
        "60",
        "--span",
        "0",
        "--invocations",
        "1",
        "--label",
        "n=1",
    ]);
    let j = history_json(&lab, &["--metric", "cycles", "--order-by", "n"]);
    let series = j["series"].as_array().unwrap();
    assert!(!series.is_empty(), "{j:#}");
    for s in series {
        let p = &s["points"][0];
        assert_eq!(p["labels"]["n"], "1", "{j:#}");
        assert!(p["runs"].as_u64().unwrap() >= 2 && p["mean"].as_f64().unwrap() > 0.0);
    }
}

/// Why the bisection test cannot run here, if it cannot.
fn missing_tools() -> Option<String> {
    ["git", "cc"].into_iter().find_map(|t| {
        let ok = Command::new(t)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        (!ok).then(|| format!("{t} is not installed"))
    })
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The change of the first series with the largest size (a shared machine's drift between
/// experiments can be a change too).
fn largest_change(j: &serde_json::Value) -> &serde_json::Value {
    let changes = j["series"][0]["changes"].as_array().expect("changes");
    let size = |c: &serde_json::Value| c["size"].as_f64().unwrap().abs();
    changes
        .iter()
        .max_by(|a, b| size(a).total_cmp(&size(b)))
        .unwrap_or_else(|| panic!("no change found: {j:#}"))
}

#[test]
fn a_change_between_commits_offers_its_bisection_and_runs_it() {
    if let Some(why) = missing_tools() {
        common::skip(&format!("{why}: no bisection of a history"));
        return;
    }
    let lab = Lab::new();
    let dir = lab.path("repo");
    // 16 commits after the initial one; commit 9 doubles the program's work.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/bisect_repo.sh");
    let st = Command::new(script)
        .arg(&dir)
        .args(["16", "9", "0", "100"])
        .status()
        .unwrap();
    assert!(st.success());
    let shas: Vec<String> = (0..=16u32)
        .map(|i| git(&dir, &["rev-parse", &format!("HEAD~{}", 16 - i)]))
        .collect();
    let sha = |i: u32| shas[i as usize].clone();
    // The nightly history: commits 0, 2, 4, 6, 8 before the change, 12 to 16 after (a step
    // with fewer than four points after it is screened out as outliers at the end: see
    // docs/history.md).
    let measured = [0u32, 2, 4, 6, 8, 12, 13, 14, 15, 16];
    for (n, &i) in measured.iter().enumerate() {
        git(&dir, &["checkout", "-q", &sha(i)]);
        let built = Command::new("cc")
            .current_dir(&dir)
            .args(["-O2", "-o", "prog", "prog.c"])
            .status()
            .unwrap();
        assert!(built.success());
        let out = lab
            .cmd(&[
                "run",
                "--runs",
                "4",
                "--warmup",
                "1",
                "--label",
                &format!("commit={}", sha(i)),
                "--label",
                &format!("n={n}"),
                "./prog",
            ])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    let base = ["--order-by", "n", "--metric", "user_ns", "--confirm"];
    // Offered: the exact command line, between the commits on either side of the location.
    let j = history_json(&lab, &base);
    let c = largest_change(&j);
    let command = c["bisect"]["command"]
        .as_str()
        .expect("a bisection offered");
    let words = shell_words::split(command).unwrap();
    let at = |flag: &str| words[words.iter().position(|w| w == flag).unwrap() + 1].clone();
    let good = measured.iter().position(|&i| sha(i) == at("--good"));
    let bad = measured.iter().position(|&i| sha(i) == at("--bad"));
    assert!(
        matches!((good, bad), (Some(g), Some(b)) if measured[g] < 9 && measured[b] >= 9),
        "{command}: sides {good:?} {bad:?} of {measured:?}: {:?} {:#}",
        j["series"][0]["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (
                p["mean"].as_f64().unwrap() / 1e6,
                p["se"].as_f64().unwrap() / 1e6
            ))
            .collect::<Vec<_>>(),
        j["series"][0]["changes"]
    );
    assert!(command.ends_with("-- ./prog") && c["bisect"]["result"].is_null());
    // Run: the culprit is named and the change confirmed by it.
    let repo = dir.to_str().unwrap();
    let mut run = base.to_vec();
    run.extend([
        "--bisect",
        "--repo",
        repo,
        "--build",
        "cc -O2 -o prog prog.c",
    ]);
    let j = history_json(&lab, &run);
    let c = largest_change(&j);
    let result = c["bisect"]["result"].as_str().unwrap();
    assert!(
        result.contains(&format!("first bad commit {}", &sha(9)[..12])),
        "{j:#}"
    );
    assert_eq!(c["status"], "confirmed", "{j:#}");
}
