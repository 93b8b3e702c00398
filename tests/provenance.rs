//! Kernel provenance (issue 41): `run --kernel` hashes each variant's image when the experiment
//! is made, names two variants that boot the same bytes SAME IMAGE before any boot, and every
//! report format says what each variant ran; the record goes with a store copy to PostgreSQL.
//! The experiment is stopped (SIGINT) as soon as it is made: a boot under TCG takes minutes
//! here, and nothing of this needs one; the runs are then imported into it.

mod common;
use common::Lab;
use common::postgres::Server;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The smallest cached kernel image abperf can boot (`vm kernels`), or None (skipped).
fn cached_kernel(lab: &Lab) -> Option<std::path::PathBuf> {
    let out = lab.ok(&["vm", "kernels", "--format", "json"]).json();
    let smallest = out
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| k["vmlinuz"].as_str().map(std::path::PathBuf::from))
        .filter(|p| p.is_file())
        .min_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(u64::MAX));
    if smallest.is_none() {
        common::skip("no kernel in abperf's kernel cache (tests/vm.rs fetches them)");
    }
    smallest
}

#[test]
fn two_copies_of_one_image_are_named_same_image_everywhere() {
    let lab = Lab::new();
    let Some(k) = cached_kernel(&lab) else { return };
    let bytes = std::fs::read(&k).unwrap();
    let (a, b) = (
        lab.write("base.img", &bytes),
        lab.write("patched.img", &bytes),
    );
    let sha: String = Sha256::digest(&bytes)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect();
    // Made, then stopped before its first run: the plan's lines are all it printed.
    let mut child = lab
        .cmd(&[
            "run", "--kernel", &a, "--kernel", &b, "-n", "base", "-n", "patched", "--boots", "1",
            "-r", "1", "--warmup", "0", "--accel", "tcg", "true",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut plan = String::new();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let t = Instant::now();
    while !plan.contains("abperf: experiment 1:") {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 || t.elapsed() > Duration::from_secs(60) {
            break;
        }
        plan.push_str(&line);
    }
    // SAFETY: kill(2) of the child this test started, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut err, &mut rest);
    child.wait().unwrap();
    assert!(plan.contains("abperf: experiment 1:"), "{plan}{rest}");
    let same = "SAME IMAGE: 'base' and 'patched' boot the same kernel image";
    let before = plan.find(same).expect(&plan);
    assert!(
        before < plan.find("abperf: experiment 1:").unwrap(),
        "{plan}"
    );

    // The record: the image's hash, stored with each variant.
    let show = lab.ok(&["show", "1"]);
    show.all_has(same).has(&format!("image sha256: {sha}"));
    assert_eq!(
        show.stdout.matches(&format!("image sha256: {sha}")).count(),
        2
    );

    // Runs (as a boot would have made them) imported, then every report format.
    let csv = lab.write(
        "runs.csv",
        "variant,wall_ns [ns]\nbase,100\npatched,101\nbase,102\npatched,100\nbase,99\npatched,101\n",
    );
    lab.ok(&["import", "--experiment", "1", "--format", "csv", &csv]);
    for f in ["text", "mail", "md", "html"] {
        let r = lab.ok(&["report", "1", "--format", f]);
        r.has("SAME IMAGE:").has("base.img").has(&sha[..16]);
    }
    let mail = lab.ok(&["report", "1", "--format", "mail"]).stdout;
    assert!(
        mail.contains("Variants compared:\n- base\n    command: true\n"),
        "{mail}"
    );
    assert!(mail.lines().all(|l| l.chars().count() <= 72), "{mail}");
    let j: Value = lab.ok(&["report", "1", "--format", "json"]).json();
    common::assert_schema(&j);
    assert!(
        j["notes"].to_string().contains("SAME IMAGE"),
        "{}",
        j["notes"]
    );
    for v in j["variants"].as_array().unwrap() {
        assert_eq!(v["provenance"]["image_sha256"], sha.as_str(), "{v}");
        assert!(v["boot"]["kernel"].as_str().unwrap().ends_with(".img"));
    }
    // --strict: the same image twice is the same configuration.
    let strict = lab.run(&["compare", "1", "--strict"]);
    assert_eq!(strict.code, Some(3), "{strict}");

    // The record goes with a copy to PostgreSQL and back.
    let Some(pg) = Server::start() else { return };
    let dsn = pg.create_db("abperf");
    lab.ok(&["store", "copy", &lab.p("abperf.db"), &dsn]);
    assert_eq!(
        pg.psql("abperf", "SELECT count(*) FROM kernel_provenance"),
        "2"
    );
    let there = lab
        .cmd(&["show", "1"])
        .env("ABPERF_DB", &dsn)
        .output()
        .unwrap();
    let there = common::Out::from(there, &["show", "1"]);
    there.all_has(same);
    let there = there.stdout;
    assert!(there.contains(&format!("image sha256: {sha}")), "{there}");
}
