//! One dispatch: the playbook, the hosts' shares and the callback plugin written into a
//! temporary directory, `ansible-playbook` run once for all hosts (its output goes to abperf's
//! stderr), and what went wrong on which host, in Ansible's words.

use super::inventory::STRICT_INVENTORY;
use super::playbook::{CALLBACK, CALLBACK_PLUGIN, Dispatch, RemoteAbperf, playbook};
use super::share::FleetShare;
use crate::runner::signals;
use anyhow::Context;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

/// What Ansible reported of a host that failed or could not be reached.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct HostFailure {
    pub host: String,
    pub task: String,
    /// failed | unreachable
    pub what: String,
    pub why: String,
}

impl HostFailure {
    /// On one line: what, at which task, and Ansible's reason (its lines and carriage returns
    /// as spaces).
    pub fn words(&self) -> String {
        let why: Vec<&str> = self.why.split_whitespace().collect();
        format!("{} at '{}': {}", self.what, self.task, why.join(" "))
    }
}

/// What a dispatch brought back: per host, its fetched lines file (absent: nothing fetched)
/// and the first thing that went wrong there.
pub struct Fetched {
    pub dir: tempfile::TempDir,
    pub lines: BTreeMap<String, PathBuf>,
    pub failures: BTreeMap<String, HostFailure>,
}

/// The first failure of each host in the callback's events file.
fn failures(events: &Path) -> anyhow::Result<BTreeMap<String, HostFailure>> {
    let text = match std::fs::read_to_string(events) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", events.display())),
    };
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: HostFailure = serde_json::from_str(line)
            .with_context(|| format!("{}: not an event of abperf's callback", events.display()))?;
        out.entry(f.host.clone()).or_insert(f);
    }
    Ok(out)
}

/// Wait for ansible-playbook; a signal abperf receives meanwhile (`runner::signals`) is passed
/// on to it as SIGINT, once, so that it stops as on Ctrl-C (a terminal's Ctrl-C reaches it
/// directly too).
fn wait_passing_signals(mut child: Child) -> anyhow::Result<ExitStatus> {
    let mut passed = false;
    loop {
        if let Some(st) = child
            .try_wait()
            .context("cannot wait for ansible-playbook")?
        {
            return Ok(st);
        }
        if !passed && signals::received().is_some() {
            // SAFETY: plain syscall on our own unreaped child.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            passed = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `value` put in front of the colon-separated list in environment variable `key`.
fn prepend(key: &str, value: &str, sep: &str) -> String {
    match std::env::var(key) {
        Ok(v) if !v.is_empty() => format!("{value}{sep}{v}"),
        _ => value.to_string(),
    }
}

/// Dispatch `shares` (one per host) with `ansible-playbook -i inventory`.
pub fn dispatch(
    inventory: &Path,
    token: &str,
    abperf: &RemoteAbperf,
    version: &str,
    shares: &[FleetShare],
) -> anyhow::Result<Fetched> {
    let dir = tempfile::Builder::new()
        .prefix("abperf-fleet-")
        .tempdir()
        .context("cannot make a temporary directory for the playbook")?;
    let d = dir.path();
    std::fs::create_dir_all(d.join("callbacks"))?;
    std::fs::create_dir_all(d.join("fetched"))?;
    std::fs::create_dir_all(d.join("local"))?;
    std::fs::write(
        d.join("callbacks").join(format!("{CALLBACK}.py")),
        CALLBACK_PLUGIN,
    )?;
    let mut disp = Dispatch {
        token,
        abperf,
        version,
        places: BTreeMap::new(),
        shares: BTreeMap::new(),
        fetched: BTreeMap::new(),
    };
    let mut hosts = Vec::new();
    for (i, s) in shares.iter().enumerate() {
        let file = d.join(format!("share-{i}.json"));
        std::fs::write(&file, serde_json::to_vec(s)?)?;
        disp.shares.insert(s.host.clone(), file);
        disp.places.insert(s.host.clone(), s.place);
        disp.fetched
            .insert(s.host.clone(), d.join("fetched").join(format!("{i}.jsonl")));
        hosts.push(s.host.clone());
    }
    let book = d.join("playbook.yml");
    std::fs::write(&book, serde_json::to_vec_pretty(&playbook(&disp, &hosts))?)?;
    let events = d.join("events.jsonl");
    let out = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .context("cannot pass stderr on to ansible-playbook")?;
    let child = Command::new("ansible-playbook")
        .arg("-i")
        .arg(inventory)
        .arg(&book)
        .envs(STRICT_INVENTORY.iter().copied())
        .env(
            "ANSIBLE_CALLBACK_PLUGINS",
            prepend(
                "ANSIBLE_CALLBACK_PLUGINS",
                &d.join("callbacks").display().to_string(),
                ":",
            ),
        )
        .env(
            "ANSIBLE_CALLBACKS_ENABLED",
            prepend("ANSIBLE_CALLBACKS_ENABLED", CALLBACK, ","),
        )
        .env("ANSIBLE_LOCAL_TEMP", d.join("local"))
        .env("ANSIBLE_RETRY_FILES_ENABLED", "false")
        .env("ABPERF_FLEET_EVENTS", &events)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .spawn()
        .context("cannot run ansible-playbook (is Ansible installed? Debian: ansible-core)")?;
    let status = wait_passing_signals(child)?;
    let failures = failures(&events)?;
    // 0: all went well; 2: a host failed; 4: a host was unreachable. Anything else is Ansible's
    // own trouble (the playbook, the inventory, an option), said on stderr above; or (99) it was
    // interrupted, by abperf's signal passed on: what it fetched is still taken.
    if !matches!(status.code(), Some(0 | 2 | 4))
        && failures.is_empty()
        && signals::received().is_none()
    {
        anyhow::bail!(
            "ansible-playbook -i {} failed ({status}); its messages are above",
            inventory.display()
        );
    }
    let lines = disp
        .fetched
        .into_iter()
        .filter(|(_, p)| p.exists())
        .collect();
    Ok(Fetched {
        dir,
        lines,
        failures,
    })
}
