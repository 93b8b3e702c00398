//! Memory cgroups for workloads: where they can be made (cgroup v2 with the memory controller,
//! else the cgroup v1 memory hierarchy), creation with a limit, statistics, removal, and the
//! removal of cgroups left behind by a run that was killed with SIGKILL.
//!
//! A cgroup we make is named `abperf-wl.<pid>.<start>`: the prefix says it is ours, the pid and
//! the process start time (clock ticks since boot, /proc/PID/stat field 22) name its owner. A
//! cgroup whose owner no longer exists (no such pid, or a pid reused by a process that started
//! at another time) is left over: [`clean_stale`] kills whatever is still in it (only processes
//! a dead run of ours put there) and removes it.
//!
//! cgroup v2: the cgroup is made at the root of the cgroup2 mount, whose `cgroup.subtree_control`
//! must list `memory` (systemd enables it; we do not change it). A non-root cgroup with processes
//! of its own cannot enable controllers for its children, so the invoking process's cgroup is not
//! used. cgroup v1 (hybrid hierarchies, where the memory controller is bound to v1 and the v2
//! mount has none): the cgroup is made inside the invoking process's own memory cgroup, so an
//! enclosing limit still applies.

use super::sys;
use anyhow::{Context, Result, anyhow, bail};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const PREFIX: &str = "abperf-wl.";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V2,
    V1,
}

impl Version {
    pub fn name(self) -> &'static str {
        match self {
            Version::V2 => "cgroup v2",
            Version::V1 => "cgroup v1 memory",
        }
    }
}

/// Where our cgroups go.
#[derive(Debug, Clone)]
pub struct Place {
    pub version: Version,
    pub parent: PathBuf,
}

/// What this machine offers (each side: the place, or why not).
#[derive(Debug)]
pub struct Probe {
    pub v2: Result<Place, String>,
    pub v1: Result<Place, String>,
}

struct Mount {
    root: String,
    point: PathBuf,
    fstype: String,
    superopts: String,
}

fn mounts() -> Vec<Mount> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    info.lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let f: Vec<&str> = pre.split(' ').collect();
            let p: Vec<&str> = post.split(' ').collect();
            Some(Mount {
                root: f.get(3)?.replace("\\040", " "),
                point: PathBuf::from(f.get(4)?.replace("\\040", " ")),
                fstype: p.first()?.to_string(),
                superopts: p.get(2).unwrap_or(&"").to_string(),
            })
        })
        .collect()
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

fn probe_v2(ms: &[Mount]) -> Result<Place, String> {
    let Some(m) = ms.iter().find(|m| m.fstype == "cgroup2") else {
        return Err("no cgroup2 file system is mounted".into());
    };
    let ctl = m.point.join("cgroup.controllers");
    let controllers = std::fs::read_to_string(&ctl).map_err(|e| {
        format!(
            "cgroup v2 at {}: reading {}: {e}",
            m.point.display(),
            ctl.display()
        )
    })?;
    if !words(&controllers).iter().any(|w| w == "memory") {
        let v1 = ms
            .iter()
            .find(|v| v.fstype == "cgroup" && v.superopts.split(',').any(|o| o == "memory"));
        return Err(format!(
            "cgroup v2 at {} has no memory controller ({} lists {:?}){}",
            m.point.display(),
            ctl.display(),
            controllers.trim(),
            match v1 {
                Some(v) => format!(
                    "; it is bound to the cgroup v1 hierarchy at {}",
                    v.point.display()
                ),
                None => String::new(),
            }
        ));
    }
    let sub = m.point.join("cgroup.subtree_control");
    let enabled = std::fs::read_to_string(&sub).unwrap_or_default();
    if !words(&enabled).iter().any(|w| w == "memory") {
        return Err(format!(
            "cgroup v2 at {}: the memory controller is not enabled for child cgroups ({} lists \
             {:?}; enable it with `echo +memory > {}`)",
            m.point.display(),
            sub.display(),
            enabled.trim(),
            sub.display()
        ));
    }
    Ok(Place {
        version: Version::V2,
        parent: m.point.clone(),
    })
}

fn probe_v1(ms: &[Mount]) -> Result<Place, String> {
    let Some(m) = ms
        .iter()
        .find(|m| m.fstype == "cgroup" && m.superopts.split(',').any(|o| o == "memory"))
    else {
        return Err("no cgroup v1 memory hierarchy is mounted".into());
    };
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let path = own
        .lines()
        .find_map(|l| {
            let mut f = l.splitn(3, ':');
            let _id = f.next()?;
            let ctrls = f.next()?;
            let path = f.next()?;
            ctrls
                .split(',')
                .any(|c| c == "memory")
                .then(|| path.to_string())
        })
        .ok_or_else(|| "/proc/self/cgroup names no memory cgroup".to_string())?;
    let rel = path
        .strip_prefix(m.root.as_str())
        .unwrap_or(&path)
        .trim_start_matches('/');
    let dir = m.point.join(rel);
    if !dir.join("memory.limit_in_bytes").exists() {
        return Err(format!(
            "cgroup v1 memory: our cgroup {} is not visible (no memory.limit_in_bytes)",
            dir.display()
        ));
    }
    Ok(Place {
        version: Version::V1,
        parent: dir,
    })
}

pub fn probe() -> Probe {
    let ms = mounts();
    Probe {
        v2: probe_v2(&ms),
        v1: probe_v1(&ms),
    }
}

/// `auto` (v2, else v1), `v2` or `v1`, with a plain reason when it is not usable.
pub fn choose(want: &str) -> Result<Place> {
    let p = probe();
    match want {
        "v2" => {
            p.v2.map_err(|e| anyhow!("cgroup=v2 is not usable here: {e}"))
        }
        "v1" => {
            p.v1.map_err(|e| anyhow!("cgroup=v1 is not usable here: {e}"))
        }
        _ => match (p.v2, p.v1) {
            (Ok(pl), _) => Ok(pl),
            (Err(_), Ok(pl)) => Ok(pl),
            (Err(a), Err(b)) => Err(anyhow!("no usable memory cgroup on this machine: {a}; {b}")),
        },
    }
}

/// One line per flavour, for `workload show`.
pub fn describe() -> Vec<String> {
    let p = probe();
    let line = |r: &Result<Place, String>, v: Version| match r {
        Ok(pl) => format!(
            "{}: usable, cgroups made in {}",
            v.name(),
            pl.parent.display()
        ),
        Err(e) => format!("{}: not usable: {e}", v.name()),
    };
    vec![line(&p.v2, Version::V2), line(&p.v1, Version::V1)]
}

/// A memory cgroup we made; removed by [`Cgroup::remove`] or on drop.
#[derive(Debug)]
pub struct Cgroup {
    pub path: PathBuf,
    pub version: Version,
    removed: bool,
}

fn write(path: &Path, v: &str) -> Result<()> {
    std::fs::write(path, v).with_context(|| format!("writing {v:?} to {}", path.display()))
}

impl Cgroup {
    /// Make `PREFIX<pid>.<start>` under `place` with a memory limit of `limit` bytes.
    pub fn create(place: &Place, limit: u64) -> Result<Cgroup> {
        let pid = std::process::id();
        let start = sys::process_start(pid).ok_or_else(|| anyhow!("reading /proc/{pid}/stat"))?;
        let path = place.parent.join(format!("{PREFIX}{pid}.{start}"));
        std::fs::create_dir(&path)
            .with_context(|| format!("creating {} {}", place.version.name(), path.display()))?;
        let cg = Cgroup {
            path,
            version: place.version,
            removed: false,
        };
        let file = match cg.version {
            Version::V2 => "memory.max",
            Version::V1 => "memory.limit_in_bytes",
        };
        write(&cg.path.join(file), &limit.to_string())?;
        Ok(cg)
    }

    /// Move process `pid` (all its threads) into this cgroup.
    pub fn join(path: &Path, pid: u32) -> std::io::Result<()> {
        std::fs::write(path.join("cgroup.procs"), pid.to_string())
    }

    /// memory.stat as numbers.
    pub fn stat(&self) -> Result<BTreeMap<String, u64>> {
        let p = self.path.join("memory.stat");
        let s = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        Ok(sys::parse_kv(&s))
    }

    /// OOM kills inside this cgroup (v2 memory.events, v1 memory.oom_control).
    pub fn oom_kills(&self) -> Option<u64> {
        let f = match self.version {
            Version::V2 => "memory.events",
            Version::V1 => "memory.oom_control",
        };
        let s = std::fs::read_to_string(self.path.join(f)).ok()?;
        sys::parse_kv(&s).get("oom_kill").copied()
    }

    /// Remove the (empty) cgroup: retried for up to 2 s while the kernel still counts an exited
    /// process in it.
    pub fn remove(&mut self) -> Result<()> {
        if self.removed {
            return Ok(());
        }
        rmdir_retry(&self.path)?;
        self.removed = true;
        Ok(())
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if !self.removed
            && let Err(e) = self.remove()
        {
            abperf_model::error::stderr_line(&format!("abperf: warning: {e:#}"));
        }
    }
}

fn rmdir_retry(path: &Path) -> Result<()> {
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        match std::fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => {
                return Err(e).with_context(|| format!("removing cgroup {}", path.display()));
            }
        }
    }
}

/// Owner (pid, start) encoded in one of our cgroup names.
pub fn owner(name: &str) -> Option<(u32, u64)> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, start) = rest.split_once('.')?;
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// Remove our cgroups under `place` whose owner is gone; returns the paths removed.
pub fn clean_stale(place: &Place) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let rd = match std::fs::read_dir(&place.parent) {
        Ok(rd) => rd,
        Err(e) => {
            return Err(e).with_context(|| format!("listing {}", place.parent.display()));
        }
    };
    for ent in rd.flatten() {
        let name = ent.file_name().to_string_lossy().into_owned();
        let Some((pid, start)) = owner(&name) else {
            continue;
        };
        if sys::process_start(pid) == Some(start) {
            continue; // its run is alive
        }
        let path = ent.path();
        // processes still inside were put there by the dead run (its workload child): stop them
        let until = Instant::now() + Duration::from_secs(2);
        loop {
            let procs = std::fs::read_to_string(path.join("cgroup.procs")).unwrap_or_default();
            let pids: Vec<i32> = procs
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect();
            if pids.is_empty() {
                break;
            }
            if Instant::now() > until {
                bail!(
                    "left-over cgroup {} still holds processes {pids:?} after SIGKILL",
                    path.display()
                );
            }
            for p in pids {
                // SAFETY: plain syscall on a process inside our own left-over cgroup.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        rmdir_retry(&path)?;
        removed.push(path);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_encode_the_owner() {
        assert_eq!(owner("abperf-wl.123.456"), Some((123, 456)));
        assert_eq!(owner("abperf-wl.123"), None);
        assert_eq!(owner("other.1.2"), None);
        assert_eq!(owner("abperf-wl.x.2"), None);
    }

    #[test]
    fn probe_answers_plainly() {
        // whatever the machine has, each side is a place or a sentence
        let p = probe();
        for r in [&p.v2, &p.v1] {
            match r {
                Ok(pl) => assert!(pl.parent.is_dir(), "{pl:?}"),
                Err(e) => assert!(!e.is_empty()),
            }
        }
        assert_eq!(describe().len(), 2);
    }
}
