//! One dispatch: the playbook, the hosts' shares, the limit file and the callback plugin
//! written into a temporary directory (0700, every file in it 0600: a share may name the store
//! with its credentials; removed when the dispatch ends, also on an error or a signal),
//! `ansible-playbook` run once for all hosts (its output relayed line by line to abperf's stderr
//! through the escaping of abperf's own messages), and what went wrong on which host, in
//! Ansible's words.

use super::inventory::{STRICT_INVENTORY, bad_name};
use super::playbook::{CALLBACK, CALLBACK_PLUGIN, Dispatch, RemoteAbperf, limit_file, playbook};
use super::share::FleetShare;
use crate::runner::signals;
use anyhow::Context;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
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

/// Write `bytes` to a new file `path` that only its owner may read (0600).
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Make directory `path` that only its owner may enter (0700).
fn private_dir(path: &Path) -> anyhow::Result<()> {
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(path)
        .with_context(|| format!("cannot make {}", path.display()))
}

/// The lines ansible-playbook writes (stdout and stderr, one pipe), relayed to abperf's stderr
/// as abperf's own messages are (`stderr_line`: no raw escape byte reaches the terminal).
/// Returns a receiver that gets one message once the pipe is at its end.
fn relay(from: std::io::PipeReader) -> std::sync::mpsc::Receiver<()> {
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut r = std::io::BufReader::new(from);
        let mut line = Vec::new();
        while matches!(r.read_until(b'\n', &mut line), Ok(n) if n > 0) {
            let text = String::from_utf8_lossy(&line);
            abperf_model::error::stderr_line(text.strip_suffix('\n').unwrap_or(&text));
            line.clear();
        }
        let _ = done.send(());
    });
    ended
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
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("cannot make {} private", d.display()))?;
    for sub in ["callbacks", "fetched", "local"] {
        private_dir(&d.join(sub))?;
    }
    write_private(
        &d.join("callbacks").join(format!("{CALLBACK}.py")),
        CALLBACK_PLUGIN.as_bytes(),
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
        // The names reach Ansible (its limit file, its variables): checked where they are used
        // (`inventory::refuse_bad_names` said where first).
        if let Some(why) = bad_name(&s.host) {
            anyhow::bail!(
                "host {:?} is refused: {why}",
                abperf_model::escape::shorten(&s.host, 80)
            );
        }
        let file = d.join(format!("share-{i}.json"));
        write_private(&file, &serde_json::to_vec(s)?)?;
        disp.shares.insert(s.host.clone(), file);
        disp.places.insert(s.host.clone(), s.place);
        disp.fetched
            .insert(s.host.clone(), d.join("fetched").join(format!("{i}.jsonl")));
        hosts.push(s.host.clone());
    }
    let book = d.join("playbook.yml");
    write_private(&book, &serde_json::to_vec_pretty(&playbook(&disp))?)?;
    let limit = d.join("hosts.limit");
    write_private(&limit, limit_file(&hosts).as_bytes())?;
    let mut at = std::ffi::OsString::from("@");
    at.push(&limit);
    let events = d.join("events.jsonl");
    let (from, to) = std::io::pipe().context("cannot make a pipe for ansible-playbook")?;
    let to_err = to
        .try_clone()
        .context("cannot make a pipe for ansible-playbook")?;
    let mut cmd = Command::new("ansible-playbook");
    cmd.arg("-i")
        .arg(inventory)
        .arg("--limit")
        .arg(&at)
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
        .stdout(Stdio::from(to))
        .stderr(Stdio::from(to_err));
    let child = cmd.spawn();
    // The pipe's writing ends go with the command: the relay ends when ansible-playbook's do.
    drop(cmd);
    let child = child
        .context("cannot run ansible-playbook (is Ansible installed? Debian: ansible-core)")?;
    let relayed = relay(from);
    let status = wait_passing_signals(child)?;
    // A process ansible-playbook left behind (an ssh control master) may hold the pipe open:
    // its last lines are waited for briefly, not forever.
    let _ = relayed.recv_timeout(Duration::from_secs(2));
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
