//! What root acts on (issue 40, docs/security.md): a store row cannot make a resume run a
//! command or write a knob value the user on this machine did not approve, and a knob is put
//! back only from this machine's record, only while it holds a value abperf wrote. Every test
//! drives the real binary on an SQLite store; each failed on the abperf before these checks.

mod common;
use common::Lab;
use std::process::Child;
use std::time::Duration;

/// A lab with its own knob locks and its own config directory (where approvals live).
fn lab() -> Lab {
    let lab = Lab::with_own_locks();
    let config = lab.p("config");
    lab.env("XDG_CONFIG_HOME", &config)
}

fn start(lab: &Lab, args: &[&str]) -> Child {
    lab.start(args)
}

/// Wait until the latest experiment has at least `n` runs stored; its id.
fn wait_for_runs(lab: &Lab, n: i64) -> i64 {
    lab.wait_for_runs_after(0, n)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// An experiment on a file knob holding "2000\n" (values 111, 222), killed by SIGKILL after two
/// runs: returns (knob, id). The knob holds a value the dead run wrote.
fn killed_knob_experiment(lab: &Lab) -> (String, i64) {
    let k = lab.write("knob", "2000\n");
    let spec = format!("{k}=111,222");
    let args = [
        "run",
        "-r",
        "100",
        "--warmup",
        "0",
        "-k",
        &spec,
        "sleep 0.05",
    ];
    let mut bg = start(lab, &args);
    let id = wait_for_runs(lab, 2);
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(bg.id() as i32, libc::SIGKILL) };
    bg.wait().unwrap();
    let left = read(&k);
    assert!(
        left == "111" || left == "222",
        "a variant value is left: {left:?}"
    );
    (k, id)
}

fn sql(lab: &Lab, statement: &str) {
    let c = rusqlite::Connection::open(lab.db()).unwrap();
    assert!(c.execute(statement, []).unwrap() >= 1, "{statement}");
}

#[test]
fn an_edited_command_is_not_run_by_a_resume() {
    let lab = lab();
    let mut bg = start(&lab, &["run", "-r", "100", "--warmup", "0", "sleep 0.05"]);
    let id = wait_for_runs(&lab, 2);
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(bg.id() as i32, libc::SIGKILL) };
    bg.wait().unwrap();
    let pwned = lab.p("PWNED");
    sql(
        &lab,
        &format!("UPDATE variant SET command = 'touch {pwned}'"),
    );
    let o = lab.fails(&["run", "--resume", &id.to_string()], 1);
    assert!(
        o.stderr.contains(&format!("command: touch {pwned}"))
            && o.stderr.contains("not approved on this machine")
            && o.stderr.contains("--trust-stored-design"),
        "{o}"
    );
    assert!(
        !std::path::Path::new(&pwned).exists(),
        "the edited command ran"
    );
    // Read and trusted: it runs (and the approval is kept for the next resume).
    let o = lab.ok(&["run", "--resume", &id.to_string(), "--trust-stored-design"]);
    assert!(o.stderr.contains("as --trust-stored-design says"), "{o}");
    assert!(std::path::Path::new(&pwned).exists(), "{o}");
}

#[test]
fn a_design_without_an_approval_here_is_shown_and_refused_until_trusted() {
    // Made by another user (another config directory): the design is shown, nothing runs.
    let lab = lab();
    let mark = lab.p("ran");
    let cmd = format!("echo x >> {mark}; sleep 0.05");
    let mut bg = start(&lab, &["run", "-r", "100", "--warmup", "0", &cmd]);
    let id = wait_for_runs(&lab, 2).to_string();
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(bg.id() as i32, libc::SIGKILL) };
    bg.wait().unwrap();
    // The killed abperf's last command may still be finishing.
    std::thread::sleep(Duration::from_millis(300));
    let before = read(&mark);
    let other = lab.p("other-config");
    let mut c = lab.cmd(&["run", "--resume", &id]);
    c.env("XDG_CONFIG_HOME", &other);
    let o = common::Out::from(c.output().unwrap(), &["run", "--resume", &id]);
    assert_eq!(o.code, Some(1), "{o}");
    assert!(o.stderr.contains(&format!("command: {cmd}")), "{o}");
    assert_eq!(read(&mark), before, "nothing ran");
    // The user who made it resumes it without a question.
    lab.ok(&["run", "--resume", &id]);
    assert!(read(&mark).len() > before.len());
}

#[test]
fn an_edited_knob_original_is_never_written_back() {
    let lab = lab();
    let (k, id) = killed_knob_experiment(&lab);
    sql(
        &lab,
        &format!(
            "UPDATE variant SET knobs = '[{{\"path\":\"{k}\",\"value\":\"111\",\"original\":\"evil\"}}]' \
             WHERE experiment_id = {id} AND position = 0"
        ),
    );
    // The resume verifies the design (knob originals are not part of it: they are not trusted
    // either) and restores the original recorded on this machine, byte for byte.
    let o = lab.ok(&["run", "--resume", &id.to_string()]);
    assert!(o.stderr.contains("restored its original '2000'"), "{o}");
    assert_eq!(read(&k), "2000\n", "{o}");

    // The claim lost (a lock directory removed): doctor --restore does not write the store's
    // "original" either; it names it and says how to put it back by hand.
    let lab = self::lab();
    let (k, id) = killed_knob_experiment(&lab);
    for e in std::fs::read_dir(lab.path("locks")).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    sql(
        &lab,
        &format!(
            "UPDATE variant SET knobs = json_set(knobs, '$[0].original', 'evil') \
             WHERE experiment_id = {id}"
        ),
    );
    let left = read(&k);
    let o = lab.run(&["doctor", "--restore"]);
    assert!(o.stderr.contains("which is not trusted"), "{o}");
    assert_eq!(read(&k), left, "{o}");
}

#[test]
fn the_admins_value_set_after_a_kill_survives() {
    let lab = lab();
    let (k, _) = killed_knob_experiment(&lab);
    std::fs::write(&k, "32005\n").unwrap();
    let o = lab.run(&["doctor", "--restore"]);
    assert!(
        o.stderr.contains("holds '32005'")
            && o.stderr.contains("not restored to the original '2000'"),
        "{o}"
    );
    assert_eq!(read(&k), "32005\n", "{o}");
    // The record is dropped: the next experiment on the knob takes 32005 as its original.
    let spec = format!("{k}=5,6");
    lab.ok(&["run", "-r", "2", "--warmup", "0", "-k", &spec, "true"]);
    assert_eq!(read(&k), "32005\n");
}

#[test]
fn stale_claim_temp_files_are_removed_by_the_next_abperf() {
    let lab = lab();
    let (k, _) = killed_knob_experiment(&lab);
    let claim = std::fs::read_dir(lab.path("locks"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("the dead run's claim");
    let stale = claim.with_extension("tmp99999");
    std::fs::write(&stale, "{").unwrap();
    let spec = format!("{k}=5,6");
    lab.ok(&["run", "-r", "2", "--warmup", "0", "-k", &spec, "true"]);
    assert!(!stale.exists(), "the stale temp file is left");
    assert_eq!(read(&k), "2000\n");
}

#[test]
fn a_symlink_planted_in_the_temporary_directory_deletes_nothing() {
    let lab = lab();
    let tmp = lab.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let victim = lab.path("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("metrics.jsonl"), "keep").unwrap();
    // The name of a dead abperf's metrics directory, planted as a symlink to the victim.
    std::os::unix::fs::symlink(&victim, tmp.join("abperf-metrics.999999999.1")).unwrap();
    let args = [
        "run",
        "-r",
        "1",
        "--warmup",
        "0",
        "@flush-storm:ops=300,threads=1",
    ];
    let mut c = lab.cmd(&args);
    c.env("TMPDIR", &tmp);
    let o = common::Out::from(c.output().unwrap(), &args);
    assert_eq!(o.code, Some(0), "{o}");
    assert_eq!(
        read(&victim.join("metrics.jsonl").to_string_lossy()),
        "keep"
    );
}

#[test]
fn an_ordinary_file_is_no_knob_whatever_tmpdir_says() {
    let lab = lab();
    let k = lab.write("knob", "1\n");
    let spec = format!("{k}=2,3");
    let args = ["run", "-r", "1", "--warmup", "0", "-k", &spec, "true"];
    let mut c = lab.cmd(&args);
    c.env("TMPDIR", "/").env_remove("ABPERF_TEST_KNOB_DIR");
    let o = common::Out::from(c.output().unwrap(), &args);
    assert_ne!(o.code, Some(0), "{o}");
    assert!(o.stderr.contains("not a kernel knob"), "{o}");
    assert_eq!(read(&k), "1\n");
}

/// A real, harmless kernel knob (the System V message queue size limit; tests/micro_compare.rs
/// uses msgmax, not this one), put back when the test ends.
const MSGMNB: &str = "/proc/sys/kernel/msgmnb";

/// The tests that write MSGMNB must not overlap (each lab has its own lock directory).
static MSGMNB_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// MSGMNB held by one test: the others wait, and its value is put back before they go on.
struct Held {
    before: String,
    _one: std::sync::MutexGuard<'static, ()>,
}

impl Drop for Held {
    fn drop(&mut self) {
        let _ = std::fs::write(MSGMNB, &self.before);
    }
}

/// Hold MSGMNB for this test; None (the test skipped) where it cannot be read and written.
fn hold_msgmnb() -> Option<Held> {
    let one = MSGMNB_TESTS.lock().unwrap_or_else(|p| p.into_inner());
    let Ok(before) = std::fs::read_to_string(MSGMNB) else {
        common::skip("this kernel has no /proc/sys/kernel/msgmnb");
        return None;
    };
    if std::fs::write(MSGMNB, &before).is_err() {
        common::skip("/proc/sys/kernel/msgmnb cannot be written here");
        return None;
    }
    Some(Held { before, _one: one })
}

#[test]
fn a_knob_moved_during_a_run_leaves_that_run_out_and_stops_the_experiment() {
    let Some(_held) = hold_msgmnb() else { return };
    let lab = lab();
    let count = lab.p("count");
    // The third run's command is the other process: it writes the knob while it runs.
    let cmd = format!(
        "n=$(($(cat {count} 2>/dev/null || echo 0) + 1)); echo $n > {count}; \
         if [ $n = 3 ]; then echo 20000 > {MSGMNB}; fi"
    );
    let spec = format!("{MSGMNB}=16385,16386");
    let o = lab.run(&["run", "-r", "3", "--warmup", "0", "-k", &spec, &cmd]);
    assert_eq!(o.code, Some(1), "{o}");
    assert!(
        o.stderr
            .contains(&format!("knob {MSGMNB} read '20000' after it"))
            && o.stderr.contains("excluded from every verdict"),
        "{o}"
    );
    let id = lab.store().resolve_id("latest").unwrap();
    let runs = lab.store().runs(id).unwrap();
    assert_eq!(runs.len(), 3, "it stopped at the third run: {o}");
    let out: Vec<_> = runs.iter().filter(|r| r.excluded.is_some()).collect();
    assert_eq!(out.len(), 1, "{runs:?}");
    assert!(!out[0].counts());
    assert!(
        o.stderr.contains(&format!("run {} of variant", out[0].seq)),
        "{o}"
    );
    // The other process's value is left to it.
    assert_eq!(std::fs::read_to_string(MSGMNB).unwrap().trim(), "20000");
}

#[test]
fn an_edited_command_is_not_sent_to_the_hosts_by_a_fleet_resume() {
    if let Some(why) = common::fleet::missing() {
        return common::skip(&why);
    }
    let mut fleet = common::fleet::Fleet::start();
    let inv = fleet.inventory("inventory.ini");
    let lab = lab()
        .env("ANSIBLE_SSH_ARGS", "-o ControlMaster=no")
        .env("ANSIBLE_NOCOLOR", "1");
    fleet.stop("lab-b");
    let args = [
        "fleet",
        "run",
        "-i",
        &inv,
        "-r",
        "2",
        "--warmup",
        "0",
        "-n",
        "a",
        "-n",
        "b",
        "true",
        "sleep 0.002",
    ];
    lab.fails(&args, 1).err_has("--resume 1");
    let pwned = lab.p("PWNED");
    sql(
        &lab,
        &format!("UPDATE variant SET command = 'touch {pwned}'"),
    );
    fleet.restart("lab-b");
    let o = lab.fails(&["fleet", "run", "-i", &inv, "--resume", "1"], 1);
    assert!(
        o.stderr.contains(&format!("command: touch {pwned}"))
            && o.stderr.contains("--trust-stored-design"),
        "{o}"
    );
    assert!(
        !std::path::Path::new(&pwned).exists(),
        "the edited command ran"
    );
}

#[test]
fn with_wait_moved_knob_the_experiment_waits_for_the_knob_and_goes_on() {
    let Some(held) = hold_msgmnb() else { return };
    let lab = lab();
    let count = lab.p("count");
    // The third run's command moves the knob and has it given back half a second later.
    let cmd = format!(
        "n=$(($(cat {count} 2>/dev/null || echo 0) + 1)); echo $n > {count}; \
         if [ $n = 3 ]; then v=$(cat {MSGMNB}); echo 20000 > {MSGMNB}; \
         (sleep 0.5; echo $v > {MSGMNB}) >/dev/null 2>&1 & fi"
    );
    let spec = format!("{MSGMNB}=16385,16386");
    let args = [
        "run",
        "-r",
        "3",
        "--warmup",
        "0",
        "--wait-moved-knob",
        "-k",
        &spec,
        &cmd,
    ];
    let o = lab.ok(&args);
    assert!(
        o.stderr
            .contains("waiting for the knob to hold abperf's value again")
            && o.stderr.contains("going on"),
        "{o}"
    );
    let id = lab.store().resolve_id("latest").unwrap();
    let runs = lab.store().runs(id).unwrap();
    assert_eq!(runs.len(), 6, "{o}");
    assert_eq!(
        runs.iter().filter(|r| r.excluded.is_some()).count(),
        1,
        "{o}"
    );
    // abperf's knob again: its original is back at the end.
    assert_eq!(std::fs::read_to_string(MSGMNB).unwrap(), held.before);
}
