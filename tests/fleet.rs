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
        let host = r.labels.host.clone().expect("every fleet run names its host");
        *by.entry(host).or_default() += 1;
    }
    by
}

const TWO_VARIANTS: &[&str] = &["-r", "4", "--warmup", "1", "-n", "a", "-n", "b", "true", "sleep 0.002"];

#[test]
fn three_hosts_two_variants_land_labelled_and_compare_uses_hosts_as_blocks() {
    let Some((_fleet, lab, inv)) = setup() else {
        return;
    };
    let t = Instant::now();
    let mut args = vec!["fleet", "run", "-i", &inv, "--seed", "11"];
    args.extend(TWO_VARIANTS);
    lab.ok(&args).err_has("complete");
    eprintln!("fleet run: {:.1} s", t.elapsed().as_secs_f64());
    let want: BTreeMap<String, usize> = ["lab-a", "lab-b", "lab-c"]
        .iter()
        .map(|h| (h.to_string(), 10))
        .collect();
    assert_eq!(runs_by_host(&lab, 1), want);
    let hosts = lab.store().fleet_hosts(1).unwrap();
    assert!(hosts.iter().all(|h| h.environment.is_some() && h.abperf.is_some()));
    let doc = lab.ok(&["compare", "1", "--format", "json"]).json();
    assert_eq!(doc["analysis"]["comparisons"][0]["primary"], "hosts", "{doc}");
    lab.ok(&["compare", "1", "--by", "host"]).has("lab-b");
    lab.ok(&["fleet", "status", "1"])
        .has("lab-c       10         10        0");
}
