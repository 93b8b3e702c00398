//! `abperf fleet run` over real SSH hosts: tests/common/fleet.rs starts dropbear servers on
//! 127.0.0.2-4 (own host keys, key-only login) and writes their Ansible inventory; abperf
//! dispatches through the real ansible-playbook, copies itself to every host, runs each host's
//! share there and commits the fetched runs into the lab's store. Skipped, never passed,
//! without dropbear or Ansible.

#![allow(clippy::disallowed_macros)] // tests print what they saw to stderr
mod common;
use common::Lab;
use common::fleet::Fleet;
use std::collections::BTreeMap;
use std::time::Instant;

/// A fleet and a lab whose Ansible opens a connection per task (no control master left
/// running after the test) and prints no colours.
fn setup() -> Option<(Fleet, Lab, String)> {
    if let Some(why) = common::fleet::missing() {
        common::skip(&why);
        return None;
    }
    let fleet = Fleet::start();
    let inv = fleet.inventory("inventory.ini");
    let lab = Lab::new()
        .env("ANSIBLE_SSH_ARGS", "-o ControlMaster=no")
        .env("ANSIBLE_NOCOLOR", "1");
    Some((fleet, lab, inv))
}

/// Runs per host of experiment `id` in the lab's store (warm-ups too).
fn runs_by_host(lab: &Lab, id: i64) -> BTreeMap<String, usize> {
    let mut by = BTreeMap::new();
    for r in lab.store().runs(id).unwrap() {
        let host = r
            .labels
            .host
            .clone()
            .expect("every fleet run names its host");
        *by.entry(host).or_default() += 1;
    }
    by
}

/// `fleet run -i inv`, then `extra`, then two variants a and b (4 runs and a warm-up each).
fn fleet_run<'a>(inv: &'a str, extra: &[&'a str], a: &'a str, b: &'a str) -> Vec<&'a str> {
    let mut v = vec!["fleet", "run", "-i", inv];
    v.extend(extra);
    v.extend(["-r", "4", "--warmup", "1", "-n", "a", "-n", "b", a, b]);
    v
}

/// The two variants most tests run: cheap, and different.
const A: &str = "true";
const B: &str = "sleep 0.002";

#[test]
fn three_hosts_two_variants_land_labelled_and_compare_uses_hosts_as_blocks() {
    let Some((fleet, lab, inv)) = setup() else {
        return;
    };
    let t = Instant::now();
    let args = fleet_run(&inv, &["--seed", "11"], A, B);
    let out = lab.ok(&args);
    out.has("experiment 1 complete")
        .has("n=3 hosts, random effects over hosts");
    eprintln!("fleet run: {:.1} s", t.elapsed().as_secs_f64());
    let ours: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("abperf:"))
        .collect();
    eprintln!("{}\n{}", ours.join("\n"), out.stdout);
    let want: BTreeMap<String, usize> = ["lab-a", "lab-b", "lab-c"]
        .iter()
        .map(|h| (h.to_string(), 10))
        .collect();
    assert_eq!(runs_by_host(&lab, 1), want);
    let hosts = lab.store().fleet_hosts(1).unwrap();
    assert!(
        hosts
            .iter()
            .all(|h| h.environment.is_some() && h.abperf.is_some())
    );
    let doc = lab.ok(&["compare", "1", "--format", "json"]).json();
    assert_eq!(
        doc["analysis"]["comparisons"][0]["primary"], "hosts",
        "{doc}"
    );
    lab.ok(&["compare", "1", "--by", "host"]).has("lab-b");
    lab.ok(&["fleet", "status", "1"])
        .has("lab-c       10         10        0");
    // On the hosts, only the runs are left (the share may name the store: removed).
    let dir = lines_file(&fleet, 0).unwrap();
    let mut left: Vec<String> = std::fs::read_dir(dir.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["lines.jsonl"]);
    // Copied into another store, the experiment keeps its hosts and their slots.
    let copy = lab.p("copy.db");
    lab.ok(&["store", "copy", &lab.db().display().to_string(), &copy]);
    let copied = abperf::store::Store::open(std::path::Path::new(&copy)).unwrap();
    assert_eq!(copied.fleet_hosts(1).unwrap(), hosts);
}

#[test]
fn an_unreachable_host_is_reported_and_resume_completes_the_experiment() {
    let Some((mut fleet, lab, inv)) = setup() else {
        return;
    };
    fleet.stop("lab-b");
    let args = fleet_run(&inv, &["--seed", "12"], A, B);
    let out = lab.fails(&args, 1);
    let ours: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("abperf:"))
        .collect();
    eprintln!("{}", ours.join("\n"));
    out.err_has("host lab-b: 10 of 10 runs missing: unreachable")
        .err_has("--resume 1");
    let kept: BTreeMap<String, usize> = [("lab-a".to_string(), 10), ("lab-c".to_string(), 10)]
        .into_iter()
        .collect();
    assert_eq!(runs_by_host(&lab, 1), kept);
    lab.ok(&["fleet", "status", "1"])
        .has("lab-b       10          0       10");
    let other = lab.write("other.ini", "lab-a ansible_host=127.0.0.2\n");
    lab.fails(&["fleet", "run", "-i", &other, "--resume", "1"], 2)
        .err_has(&format!(
            "host lab-b of experiment 1 is not in the inventory {other}"
        ));
    fleet.restart("lab-b");
    let before = lab.store().runs(1).unwrap();
    lab.ok(&["fleet", "run", "-i", &inv, "--resume", "1"])
        .has("experiment 1 complete");
    assert_eq!(runs_by_host(&lab, 1)["lab-b"], 10);
    // Nothing that was stored is lost or stored twice.
    let after = lab.store().runs(1).unwrap();
    assert_eq!(after.len(), 30);
    for r in &before {
        assert!(
            after
                .iter()
                .any(|a| a.seq == r.seq && a.metrics == r.metrics)
        );
    }
    let doc = lab.ok(&["compare", "1", "--format", "json"]).json();
    assert_eq!(doc["analysis"]["comparisons"][0]["primary"], "hosts");
}

#[test]
fn two_fleet_experiments_at_once_do_not_collide() {
    let Some((_fleet, lab, inv)) = setup() else {
        return;
    };
    let start = |seed: &str, title: &str| {
        let args = fleet_run(&inv, &["--seed", seed, "--title", title], A, B);
        lab.cmd(&args).output().expect("abperf runs")
    };
    let (one, two) = std::thread::scope(|s| {
        let one = s.spawn(|| start("21", "one"));
        let two = s.spawn(|| start("22", "two"));
        (one.join().unwrap(), two.join().unwrap())
    });
    for o in [&one, &two] {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    for id in [1, 2] {
        let by = runs_by_host(&lab, id);
        assert_eq!(by.values().sum::<usize>(), 30, "experiment {id}: {by:?}");
        assert_eq!(by.len(), 3);
    }
}

#[test]
fn an_inventory_ansible_cannot_read_or_no_ansible_playbook_is_named_and_nothing_is_stored() {
    let Some((_fleet, lab, inv)) = setup() else {
        return;
    };
    let bad = lab.write("bad.yml", "all:\n  hosts: [unclosed\n");
    let args = fleet_run(&bad, &[], A, B);
    let out = lab.run(&args);
    assert_ne!(out.code, Some(0));
    out.err_has(&format!("inventory {bad}: Ansible cannot read it"));
    let missing = lab.p("nope.ini");
    let args = fleet_run(&missing, &[], A, B);
    lab.fails(&args, 2).err_has("nope.ini: no such file");
    assert!(lab.store().resolve_id("latest").is_err());
    // Ansible reads the inventory, but its ansible-playbook cannot be run: the planned
    // experiment is not kept.
    let bin = lab.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let inventory = common::fleet::program("ansible-inventory").unwrap();
    std::os::unix::fs::symlink(inventory, bin.join("ansible-inventory")).unwrap();
    let args = fleet_run(&inv, &[], A, B);
    let mut cmd = lab.cmd(&args);
    cmd.env("PATH", &bin);
    let out = common::Out::from(cmd.output().unwrap(), &args);
    assert_eq!(out.code, Some(1), "{out}");
    out.err_has("experiment 1 is not kept")
        .err_has("cannot run ansible-playbook");
    assert!(lab.store().resolve_id("latest").is_err());
}

#[test]
fn an_unreachable_host_or_another_abperf_is_named_and_nothing_is_stored() {
    let Some((mut fleet, lab, inv)) = setup() else {
        return;
    };
    fleet.stop("lab-c");
    let args = fleet_run(&inv, &["--limit", "lab-c"], A, B);
    lab.fails(&args, 1)
        .err_has("no host ran anything")
        .err_has("host lab-c: 10 of 10 runs missing: unreachable");
    assert!(lab.store().resolve_id("latest").is_err());
    let other = lab.write(
        "abperf-other",
        "#!/bin/sh\necho 'abperf 0.0.1 (commit other)'\n",
    );
    std::fs::set_permissions(&other, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let args = fleet_run(&inv, &["--limit", "lab-a", "--remote-abperf", &other], A, B);
    lab.fails(&args, 1)
        .err_has("host lab-a")
        .err_has("--version prints 'abperf 0.0.1 (commit other)'");
    assert!(lab.store().resolve_id("latest").is_err());
}

/// The lines file host `place` of the fleet's only experiment writes, once it exists.
fn lines_file(fleet: &Fleet, place: usize) -> Option<std::path::PathBuf> {
    let root = fleet.home().join(".abperf-fleet");
    let token = std::fs::read_dir(root).ok()?.flatten().next()?.path();
    let lines = token.join(place.to_string()).join("lines.jsonl");
    lines.exists().then_some(lines)
}

#[test]
fn a_host_lost_mid_run_keeps_its_finished_runs_and_resume_runs_only_the_rest() {
    let Some((mut fleet, lab, inv)) = setup() else {
        return;
    };
    let args = fleet_run(&inv, &["--seed", "13"], "sleep 0.3", "sleep 0.35");
    let (out, lost_at) = std::thread::scope(|s| {
        let run = s.spawn(|| lab.cmd(&args).output().expect("abperf runs"));
        // lab-b (place 1) is lost once it has finished two runs.
        // (The limit bounds a hang only, as in fleet_postgres.rs.)
        let t = Instant::now();
        loop {
            let n = lines_file(&fleet, 1)
                .and_then(|p| std::fs::read_to_string(p).ok())
                .map_or(0, |t| t.lines().count());
            if n >= 3 {
                break;
            }
            assert!(t.elapsed().as_secs() < 180, "lab-b never ran two runs");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        fleet.kill_host("lab-b");
        let lost_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i64;
        (run.join().unwrap(), lost_at)
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("abperf:"))
        .collect();
    eprintln!("{}", ours.join("\n"));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("abperf: error: host lab-b: "), "{stderr}");
    assert_eq!(runs_by_host(&lab, 1).get("lab-a"), Some(&10));
    fleet.restart("lab-b");
    lab.ok(&["fleet", "run", "-i", &inv, "--resume", "1"])
        .has("experiment 1 complete");
    let b: Vec<_> = lab
        .store()
        .runs(1)
        .unwrap()
        .into_iter()
        .filter(|r| r.labels.host.as_deref() == Some("lab-b"))
        .collect();
    assert_eq!(b.len(), 10);
    // The runs lab-b finished before it was lost were kept on it and fetched, not run again.
    let before = b.iter().filter(|r| r.ended_ns < lost_at).count();
    assert!(
        before >= 2,
        "{before} of lab-b's runs ended before it was lost"
    );
    assert_eq!(runs_by_host(&lab, 1).values().sum::<usize>(), 30);
}

#[test]
fn a_signal_stops_the_dispatch_keeps_what_came_back_and_resume_fetches_the_rest() {
    let Some((fleet, lab, inv)) = setup() else {
        return;
    };
    let args = fleet_run(&inv, &["--seed", "14"], "sleep 0.2", "sleep 0.25");
    let child = lab
        .cmd(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // SIGTERM to abperf alone (not its process group) once lab-a has finished two runs.
    // (The limit bounds a hang only, as in fleet_postgres.rs.)
    let t = Instant::now();
    while lines_file(&fleet, 0)
        .and_then(|p| std::fs::read_to_string(p).ok())
        .is_none_or(|t| t.lines().count() < 3)
    {
        assert!(t.elapsed().as_secs() < 180, "lab-a never ran two runs");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = common::Out::from(child.wait_with_output().unwrap(), &args);
    assert_eq!(out.code, Some(143), "{out}");
    out.err_has("interrupted by SIGTERM").err_has("--resume 1");
    let exp = lab.store().experiment(1).unwrap();
    assert_eq!(exp.status, abperf::model::Status::Interrupted);
    // The hosts' abperf may still be finishing their shares: a resume that reaches one first
    // is refused there, the next one fetches what it finished.
    let resumed_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let mut tries = 0;
    loop {
        let o = lab.run(&["fleet", "run", "-i", &inv, "--resume", "1"]);
        if o.code == Some(0) {
            o.has("experiment 1 complete");
            eprintln!("resume complete after {tries} refusal(s)");
            break;
        }
        tries += 1;
        assert!(tries < 10, "resume never completed: {o}");
        o.err_has("another abperf still runs this host's share");
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    let runs = lab.store().runs(1).unwrap();
    assert_eq!(runs.len(), 30);
    let before = runs.iter().filter(|r| r.ended_ns < resumed_at).count();
    assert!(before >= 2, "{before} runs ended before the resume");
    // No slot ran twice on its host: the hosts' lines files hold 30 runs in all.
    let ran: usize = (0..3)
        .map(|place| {
            let text = std::fs::read_to_string(lines_file(&fleet, place).unwrap()).unwrap();
            text.matches(r#""type":"run""#).count()
        })
        .sum();
    assert_eq!(ran, 30);
}
