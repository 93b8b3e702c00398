//! `abperf bisect` end to end on repositories the test makes (benches/bisect_repo.sh): 64
//! commits of a small C program, one of which adds CPU work (PERCENT) and one of which does not
//! compile; the culprit is found through the broken commit and a SIGINT with `--resume`,
//! without a stored run repeated; a range without the change names none. More seeded
//! repetitions: benches/bisect_e2e.sh (docs/bisect.md).

mod common;
use common::{BIN, Lab, assert_schema, run_within, skip};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The tools the test needs, or why it is skipped.
fn tools() -> Result<(), String> {
    for tool in ["git", "cc"] {
        let found = Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Err(format!("{tool} is not installed"));
        }
    }
    Ok(())
}

/// The planted change, in percent of the program's CPU work. About 5% is what the issue asks;
/// on this machine (2 cores shared with concurrent builds) 5% of a 25 ms program is 1-2 noise
/// SDs and a bisection takes 400-600 runs, minutes of wall (benches/bisect_e2e.sh measures it,
/// docs/bisect.md has the figures), past this file's share of the suite: the test plants 20%.
const PERCENT: &str = "20";

/// A repository of 64 commits: `culprit` adds PERCENT% work (0: none), `broken` does not
/// compile.
fn repo(lab: &Lab, culprit: u32, broken: u32) -> std::path::PathBuf {
    let dir = lab.path("repo");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/bisect_repo.sh");
    let st = Command::new(script)
        .arg(&dir)
        .args(["64", &culprit.to_string(), &broken.to_string(), PERCENT])
        .status()
        .unwrap();
    assert!(st.success());
    dir
}

fn bisect(lab: &Lab, dir: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .env("ABPERF_DB", lab.db())
        .args(["bisect", "--good", "HEAD~64", "--bad", "HEAD"])
        .args(["--build", "cc -O2 -o prog prog.c", "--metric", "user_ns"])
        .args(extra)
        .args(["--", "./prog"]);
    c
}

/// Every stored run: experiment -> (seq -> started_ns).
/// Nothing while the store is not made yet.
fn stored_runs(lab: &Lab) -> BTreeMap<i64, BTreeMap<u32, i64>> {
    let mut out: BTreeMap<i64, BTreeMap<u32, i64>> = BTreeMap::new();
    if !lab.db().exists() {
        return out;
    }
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let db = rusqlite::Connection::open_with_flags(lab.db(), flags).unwrap();
    let Ok(mut q) = db.prepare("SELECT experiment_id, seq, started_ns FROM run") else {
        return out;
    };
    let rows = q
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    for row in rows {
        let (e, s, t) = row.unwrap();
        out.entry(e).or_default().insert(s, t);
    }
    out
}

#[test]
fn the_culprit_is_found_through_a_broken_commit_and_a_resume_without_repeating_a_run() {
    if let Err(why) = tools() {
        return skip(&why);
    }
    let lab = Lab::new();
    // Revision 32 is the first probe of 64 (the posterior median before any probe).
    let dir = repo(&lab, 45, 32);
    let child = bisect(&lab, &dir, &["--seed", "7"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once a few search steps are stored.
    let t = Instant::now();
    while stored_runs(&lab).len() < 4 {
        assert!(t.elapsed() < Duration::from_secs(240), "no progress");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let first = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(130), "{err}");
    assert!(err.contains("--resume 1"), "{err}");
    assert!(err.contains("does not compile\"): the build"), "{err}");
    let before = stored_runs(&lab);

    let out = run_within(
        bisect(&lab, &dir, &["--resume", "1", "--format", "json"]),
        Duration::from_secs(600),
        "bisect --resume",
    );
    assert_eq!(out.code, Some(0), "{out}");
    let doc = out.json();
    assert_schema(&doc);
    assert_eq!(doc["result"], "culprit", "{out}");
    assert_eq!(doc["candidate"]["index"], 45, "{out}");
    assert_eq!(doc["candidate"]["subject"], "loop: 20% more work per call");
    assert_eq!(doc["unbuildable"][0]["index"], 32, "{out}");
    assert_eq!(doc["confirmation"]["runs_a"], 20, "{out}");
    // Every run stored before the SIGINT is still there, unchanged, and none was added to the
    // experiments of the first session: the resumed search went on in new ones.
    let after = stored_runs(&lab);
    let last_before = *before.keys().last().unwrap();
    for (e, runs) in &before {
        assert_eq!(after.get(e), Some(runs), "experiment {e}");
    }
    assert!(after.keys().filter(|&&e| e > last_before).count() > 0);
    let listed: Vec<i64> = serde_json::from_value(doc["experiments"].clone()).unwrap();
    assert_eq!(listed, after.keys().copied().collect::<Vec<_>>(), "{out}");

    // The stored bisection reads back the same, and reads like a reply in the mail format.
    let status = lab
        .ok(&["bisect", "status", "1", "--format", "json"])
        .json();
    assert_eq!(status, doc);
    let mail = lab.ok(&["bisect", "status", "1", "--format", "mail"]);
    let short = doc["candidate"]["short"].as_str().unwrap();
    mail.has(&format!(
        "first bad commit: {short} (\"loop: 20% more work per call\")"
    ))
    .has("confirmed against its parent: +");
    lab.ok(&["bisect", "status"]).has("1  64 commits");
    // A step is not resumed as a plain run (its worktree is gone; bisect --resume goes on).
    let step = listed[1].to_string();
    lab.fails(&["run", "--resume", &step], 2)
        .err_has("continue it with abperf bisect --resume 1");
}

#[test]
fn a_range_without_the_change_names_no_culprit() {
    if let Err(why) = tools() {
        return skip(&why);
    }
    let lab = Lab::new();
    let dir = repo(&lab, 0, 0);
    let out = run_within(
        // The ends' A/B without a difference runs to its last look: 2 looks of 10 rounds.
        bisect(
            &lab,
            &dir,
            &["--seed", "3", "--ends-runs", "20", "--looks", "2"],
        ),
        Duration::from_secs(300),
        "bisect",
    );
    assert_eq!(out.code, Some(0), "{out}");
    out.has("no change between the endpoints at alpha 0.05: no culprit")
        .lacks("first bad commit");
}

#[test]
fn resume_refuses_a_command_other_than_the_stored_one() {
    if let Err(why) = tools() {
        return skip(&why);
    }
    let lab = Lab::new();
    let dir = repo(&lab, 0, 0);
    let out = run_within(
        bisect(
            &lab,
            &dir,
            &["--seed", "3", "--ends-runs", "2", "--looks", "1"],
        ),
        Duration::from_secs(300),
        "bisect",
    );
    assert_eq!(out.code, Some(0), "{out}");
    // The same bisection with another build command: refused, nothing run.
    let mut other = Command::new(BIN);
    other
        .current_dir(&dir)
        .env("ABPERF_DB", lab.db())
        .args([
            "bisect", "--good", "HEAD~64", "--bad", "HEAD", "--resume", "1",
        ])
        .args(["--build", "touch /tmp/never", "--metric", "user_ns"])
        .args(["--ends-runs", "2", "--looks", "1", "--", "./prog"]);
    let o = run_within(other, Duration::from_secs(60), "bisect --resume");
    assert_eq!(o.code, Some(2), "{o}");
    o.err_has("--build differ");
}

#[test]
fn a_bisection_in_postgresql_reads_back_and_resumes_from_the_server() {
    if let Err(why) = tools() {
        return skip(&why);
    }
    let Some(pg) = common::postgres::Server::start() else {
        return;
    };
    let lab = Lab::new();
    let dsn = pg.create_db("bisect");
    let dir = repo(&lab, 20, 0);
    let args = ["--seed", "5", "--format", "json", "--db", &dsn];
    let args = [
        &args[..],
        &[
            "--ends-runs",
            "10",
            "--confirm-runs",
            "10",
            // Two runs of each probe per round: one run once read a bad revision as good
            // (CI, 2026-11-28), and the confirmation then rightly refused the wrong candidate.
            "--probe-runs",
            "2",
            "--looks",
            "1",
            "--delta",
            "0.01",
        ],
    ]
    .concat();
    let out = run_within(
        bisect(&lab, &dir, &args),
        Duration::from_secs(300),
        "bisect",
    );
    assert_eq!(out.code, Some(0), "{out}");
    let doc = out.json();
    assert_schema(&doc);
    assert_eq!(doc["result"], "culprit", "{out}");
    assert_eq!(doc["candidate"]["index"], 20, "{out}");
    let status = lab.ok(&["bisect", "status", "1", "--format", "json", "--db", &dsn]);
    assert_eq!(status.json(), doc);
    // A finished bisection resumed: every step replayed from the server, nothing run again.
    let again = [&args[..], &["--resume", "1"]].concat();
    let out = run_within(
        bisect(&lab, &dir, &again),
        Duration::from_secs(120),
        "resume",
    );
    assert_eq!(out.code, Some(0), "{out}");
    assert_eq!(out.json(), doc);
    assert!(!lab.db().exists(), "nothing went to the SQLite store");
}

/// git in `dir`, its trimmed output.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_merge_culprit_is_named_as_one_and_its_branch_bisected_with_descend_merges() {
    if let Err(why) = tools() {
        return skip(&why);
    }
    let lab = Lab::new();
    // Main line: 6 commits without the change; a branch from its third commit where the 4th of
    // 6 commits adds 20% work, merged into the main line, then 2 more commits.
    let dir = lab.path("repo");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/bisect_repo.sh");
    let st = Command::new(script)
        .arg(&dir)
        .args(["6", "0", "0", "20"])
        .status()
        .unwrap();
    assert!(st.success());
    let main = git(&dir, &["rev-parse", "--abbrev-ref", "HEAD"]);
    let fork = git(&dir, &["rev-parse", "HEAD~3"]);
    git(&dir, &["checkout", "-q", "-b", "topic", &fork]);
    for i in 1..=6 {
        if i == 4 {
            let prog = std::fs::read_to_string(dir.join("prog.c")).unwrap();
            std::fs::write(dir.join("prog.c"), prog.replace("EXTRA 0", "EXTRA 200")).unwrap();
        }
        std::fs::write(dir.join("topic"), format!("{i}\n")).unwrap();
        git(&dir, &["add", "-A"]);
        let msg = if i == 4 {
            "topic: 20% more work".to_string()
        } else {
            format!("topic: step {i}")
        };
        git(&dir, &["commit", "-q", "-m", &msg]);
    }
    let culprit = git(&dir, &["rev-parse", "HEAD~2"]);
    git(&dir, &["checkout", "-q", &main]);
    git(
        &dir,
        &[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "Merge branch topic",
            "topic",
        ],
    );
    let merge = git(&dir, &["rev-parse", "HEAD"]);
    for i in 1..=2 {
        std::fs::write(dir.join("notes"), format!("after {i}\n")).unwrap();
        git(
            &dir,
            &[
                "commit",
                "-q",
                "-am",
                &format!("notes: after the merge {i}"),
            ],
        );
    }
    let root = git(&dir, &["rev-list", "--max-parents=0", "HEAD"]);
    let mut c = Command::new(BIN);
    c.current_dir(&dir)
        .env("ABPERF_DB", lab.db())
        .args([
            "bisect",
            "--good",
            &root,
            "--bad",
            "HEAD",
            "--descend-merges",
        ])
        .args(["--build", "cc -O2 -o prog prog.c", "--metric", "user_ns"])
        .args([
            "--seed",
            "11",
            "--ends-runs",
            "16",
            "--confirm-runs",
            "16",
            "--looks",
            "2",
        ])
        .args(["--", "./prog"]);
    let out = run_within(c, Duration::from_secs(400), "bisect --descend-merges");
    assert_eq!(out.code, Some(0), "{out}");
    // The first bisection names the merge and says so; the second, of the branch, the commit.
    out.has(&format!(
        "first bad commit: {} (\"Merge branch topic\")",
        &merge[..12]
    ))
    .has(&format!(
        "{} is a merge: the change came in with the branch it merged",
        &merge[..12]
    ))
    .has(&format!("abperf bisect --good {} --bad", &fork[..12]))
    .has(&format!(
        "first bad commit: {} (\"topic: 20% more work\")",
        &culprit[..12]
    ))
    .err_has("bisecting the merged branch");
    let status = lab
        .ok(&["bisect", "status", "1", "--format", "json"])
        .json();
    assert_schema(&status);
    assert_eq!(
        status["merge"]["tips"][0],
        git(&dir, &["rev-parse", "topic"])
    );
    assert_eq!(status["merge"]["base"], fork.as_str());
    lab.ok(&["bisect", "status"])
        .has("9 commits")
        .has("6 commits");
}
