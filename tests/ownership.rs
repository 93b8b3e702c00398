//! Who owns an experiment and its knobs (issue 12, items 2-4): a killed experiment shows as
//! interrupted, a live one cannot be resumed under its feet, two experiments never share a knob,
//! and a knob left changed by `kill -9` is put back by `doctor --restore`, by `doctor`, and by the
//! next experiment that touches it. Every test drives the real binary.

mod common;
use common::Lab;
use std::process::Child;
use std::time::{Duration, Instant};

/// Wait until the latest experiment has at least `n` runs stored.
fn wait_for_runs(lab: &Lab, n: i64) -> i64 {
    lab.wait_for_runs_after(0, n)
}

fn start(lab: &Lab, args: &[&str]) -> Child {
    lab.start(args)
}

fn kill(child: &mut Child, sig: i32) {
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
}

fn knob(lab: &Lab, value: &str) -> String {
    lab.write("knob", format!("{value}\n"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

fn status(lab: &Lab, id: i64) -> String {
    let o = lab.ok(&["show", &id.to_string(), "--format", "json"]);
    o.json()["experiments"][0]["status"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_killed_experiment_is_interrupted_and_a_live_one_cannot_be_resumed() {
    let lab = Lab::with_own_locks();
    let mut bg = start(&lab, &["run", "-r", "200", "--warmup", "0", "sleep 0.05"]);
    let id = wait_for_runs(&lab, 1);
    // Live: resume is refused, naming the pid; the running experiment goes on untouched.
    let o = lab.fails(&["run", "--resume", &id.to_string()], 1);
    assert!(
        o.stderr
            .contains(&format!("still running in pid {}", bg.id())),
        "{o}"
    );
    let list = lab.ok(&["list"]).stdout;
    assert!(list.contains("running"), "{list}");
    kill(&mut bg, libc::SIGKILL);
    bg.wait().unwrap();
    // Dead without a word: list and show say interrupted (the store still says running).
    let list = lab.ok(&["list"]).stdout;
    assert!(
        list.contains("interrupted") && !list.contains("running"),
        "{list}"
    );
    assert_eq!(status(&lab, id), "interrupted");
    let show = lab.ok(&["show", &id.to_string()]).all();
    assert!(
        show.contains(&format!("abperf run --resume {id}")),
        "{show}"
    );
    // Now it can be resumed (stop it again quickly).
    // Stopped once it has made a run of its own (its signal handling is in place by then; the
    // killed run may have stored 3 runs already).
    let before = lab.store().runs(id).unwrap().len();
    let mut again = start(&lab, &["run", "--resume", &id.to_string()]);
    let t = Instant::now();
    while lab.store().runs(id).unwrap().len() <= before && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(&mut again, libc::SIGINT);
    assert_eq!(again.wait().unwrap().code(), Some(130));
    assert_eq!(status(&lab, id), "interrupted");
}

#[test]
fn a_running_experiment_is_deleted_only_with_force() {
    let lab = Lab::with_own_locks();
    let mut bg = start(&lab, &["run", "-r", "200", "--warmup", "0", "sleep 0.05"]);
    let id = wait_for_runs(&lab, 1).to_string();
    let o = lab.fails(&["delete", &id], 1);
    o.err_has(&format!("still running in pid {}", bg.id()))
        .err_has("delete it anyway with --force");
    assert!(lab.store().experiment(id.parse().unwrap()).is_ok(), "kept");
    // --force deletes it and stops nothing: the runner finds its experiment gone.
    lab.ok(&["delete", &id, "--force"])
        .has(&format!("deleted experiment {id}"));
    assert!(
        bg.try_wait().unwrap().is_none(),
        "the runner was not stopped"
    );
    assert_ne!(bg.wait().unwrap().code(), Some(0), "its next commit fails");
    // Once its owner is gone, an experiment is deleted without --force.
    let mut bg = start(&lab, &["run", "-r", "200", "--warmup", "0", "sleep 0.05"]);
    let id = lab.wait_for_runs_after(id.parse().unwrap(), 1).to_string();
    kill(&mut bg, libc::SIGKILL);
    bg.wait().unwrap();
    lab.ok(&["delete", &id]);
}

#[test]
fn a_second_experiment_on_a_knob_fails_naming_the_holder_or_waits() {
    let lab = Lab::with_own_locks();
    let k = knob(&lab, "2000");
    let spec = format!("{k}=111,222");
    let mut first = start(
        &lab,
        &["run", "-r", "10", "--warmup", "0", "-k", &spec, "sleep 0.1"],
    );
    let id = wait_for_runs(&lab, 1);
    let other = format!("{k}=7,8");
    let t = Instant::now();
    let o = lab.fails(
        &["run", "-r", "2", "--warmup", "0", "-k", &other, "true"],
        1,
    );
    assert!(t.elapsed() < Duration::from_secs(10), "failed at once");
    assert!(
        o.stderr.contains("is in use by abperf run of experiment")
            && o.stderr.contains(&format!("experiment {id}"))
            && o.stderr.contains(&format!("pid {}", first.id()))
            && o.stderr.contains("--wait"),
        "{o}"
    );
    // With --wait it runs after the first, and both put back the true original.
    let o = lab.ok(&[
        "run", "-r", "2", "--warmup", "0", "--wait", "-k", &other, "true",
    ]);
    assert!(o.stderr.contains("waiting (--wait)"), "{o}");
    assert_eq!(first.wait().unwrap().code(), Some(0));
    assert_eq!(read(&k), "2000");
    let ds = lab.store().load(id + 1).unwrap();
    assert_eq!(ds.variants[0].knobs[0].original.as_deref(), Some("2000"));
}

/// Start a knob experiment, let it change the knob, kill -9 it; returns (knob path, id).
fn killed_knob_experiment(lab: &Lab) -> (String, i64) {
    let after = if lab.db().exists() {
        lab.store().list().unwrap().last().map_or(0, |e| e.id)
    } else {
        0
    };
    let k = knob(lab, "2000");
    let spec = format!("{k}=111,222");
    let mut bg = start(
        lab,
        &[
            "run",
            "-r",
            "100",
            "--warmup",
            "0",
            "-k",
            &spec,
            "sleep 0.05",
        ],
    );
    let id = lab.wait_for_runs_after(after, 2);
    kill(&mut bg, libc::SIGKILL);
    bg.wait().unwrap();
    let left = read(&k);
    assert!(
        left == "111" || left == "222",
        "a variant value is left: {left}"
    );
    (k, id)
}

#[test]
fn doctor_restore_puts_back_a_knob_left_by_kill_9() {
    let lab = Lab::with_own_locks();
    let (k, id) = killed_knob_experiment(&lab);
    let o = lab.ok(&["doctor", "--restore"]);
    assert!(!o.stdout.contains("nothing to restore"), "{o}");
    assert!(
        o.all().contains("restored its original '2000'")
            && o.all().contains(&format!("experiment {id}")),
        "{o}"
    );
    assert_eq!(read(&k), "2000");
    let o = lab.ok(&["doctor", "--restore"]);
    assert!(o.stdout.contains("nothing to restore"), "{o}");
}

#[test]
fn the_next_experiment_on_the_knob_restores_it_first_and_says_so() {
    let lab = Lab::with_own_locks();
    let (k, _) = killed_knob_experiment(&lab);
    let spec = format!("{k}=5,6");
    let o = lab.ok(&["run", "-r", "2", "--warmup", "0", "-k", &spec, "true"]);
    assert!(o.stderr.contains("restored its original '2000'"), "{o}");
    assert_eq!(read(&k), "2000");
    let id = lab.store().resolve_id("latest").unwrap();
    let ds = lab.store().load(id).unwrap();
    assert_eq!(ds.variants[0].knobs[0].original.as_deref(), Some("2000"));
}

#[test]
fn doctor_restores_from_the_claim_and_warns_from_the_store() {
    let lab = Lab::with_own_locks();
    let (k, id) = killed_knob_experiment(&lab);
    // Plain doctor settles the claim beside the lock by itself, and says so.
    let o = lab.ok(&["doctor", "--sample", "0.1"]);
    assert!(o.stderr.contains("restored its original '2000'"), "{o}");
    assert_eq!(read(&k), "2000");
    // Without a claim (lock directory lost), the store still knows: doctor warns; --restore
    // does not write the store's original (a row is not trusted), names it, and marks the
    // experiment interrupted.
    let (k, id2) = killed_knob_experiment(&lab);
    assert!(id2 > id);
    for e in std::fs::read_dir(lab.path("locks")).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    let o = lab.ok(&["doctor", "--sample", "0.1"]);
    assert!(
        o.stderr
            .contains("left changed by experiments whose abperf died")
            && o.stderr.contains(&k)
            && o.stderr.contains("abperf doctor --restore"),
        "{o}"
    );
    let left = read(&k);
    let o = lab.fails(&["doctor", "--restore"], 1);
    assert!(
        o.stderr.contains(&format!("knob {k} holds '{left}'"))
            && o.stderr
                .contains("(the store says '2000', which is not trusted)"),
        "{o}"
    );
    assert_eq!(read(&k), left, "{o}");
    assert_eq!(
        lab.store().experiment(id2).unwrap().status,
        abperf::model::Status::Interrupted
    );
}

#[test]
fn knob_locks_live_under_run_abperf_by_default() {
    // The default lock directory (root: /run/abperf/knobs) holds the claim while a knob is
    // changed, and nothing once it is put back.
    if unsafe { libc::geteuid() } != 0 {
        common::skip("not root, the default lock directory is a per-user fallback");
        return;
    }
    let lab = Lab::new();
    let k = knob(&lab, "2000");
    let canonical = std::fs::canonicalize(&k).unwrap();
    let key = abperf::runner::knob_lock::key(&canonical);
    let claim = std::path::Path::new("/run/abperf/knobs").join(format!("{key}.json"));
    let spec = format!("{k}=111,222");
    let mut bg = start(
        &lab,
        &[
            "run",
            "-r",
            "10",
            "--warmup",
            "0",
            "-k",
            &spec,
            "sleep 0.05",
        ],
    );
    wait_for_runs(&lab, 1);
    let text = std::fs::read_to_string(&claim).expect("a claim while the knob is changed");
    let c: abperf::model::KnobClaim = serde_json::from_str(&text).unwrap();
    assert_eq!(c.original, "2000");
    assert_eq!(c.owner.pid, bg.id() as i32);
    assert_eq!(bg.wait().unwrap().code(), Some(0));
    assert!(!claim.exists(), "the claim goes once the knob is back");
    assert_eq!(read(&k), "2000");
}

/// Whether this machine lets us make a private mount namespace (unshare -m), for tests that
/// mount things.
pub fn can_unshare() -> bool {
    std::process::Command::new("unshare")
        .args(["-m", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn lock_directory_falls_back_when_run_is_not_writable() {
    if !can_unshare() {
        common::skip("cannot make a private mount namespace here (unshare -m)");
        return;
    }
    let lab = Lab::new();
    let k = knob(&lab, "2000");
    let xdg = lab.p("xdg");
    std::fs::create_dir(&xdg).unwrap();
    // /run read-only in a private mount namespace: the locks go to $XDG_RUNTIME_DIR/abperf.
    let script = format!(
        "mount --bind /run /run && mount -o remount,bind,ro /run && \
         XDG_RUNTIME_DIR={xdg} ABPERF_DB={db} ABPERF_TEST_KNOB_DIR={tmp} \
         {bin} run -r 2 --warmup 0 -k {k}=5,6 true",
        db = lab.db().display(),
        tmp = std::env::temp_dir().display(),
        bin = common::BIN,
    );
    let o = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output()
        .unwrap();
    let o = common::Out::from(o, &["unshare -m", &script]);
    assert_eq!(o.code, Some(0), "{o}");
    assert!(lab.path("xdg/abperf/knobs").is_dir(), "{o}");
    assert_eq!(read(&k), "2000");
    // An unusable $ABPERF_LOCK_DIR is an error naming it, not a silent fallback.
    let lab = Lab::new().env("ABPERF_LOCK_DIR", "/proc/version/x");
    let k = knob(&lab, "1");
    let spec = format!("{k}=2,3");
    let o = lab.fails(&["run", "-r", "1", "-k", &spec, "true"], 1);
    assert!(o.stderr.contains("$ABPERF_LOCK_DIR /proc/version/x"), "{o}");
}
