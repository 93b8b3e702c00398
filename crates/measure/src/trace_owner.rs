//! Who owns what abperf creates in tracefs. Every tracefs instance (and every private tracefs
//! mount) abperf makes gets a random name (`abperf-<hex>`: a PID would collide between
//! containers, where every first process is PID 1) and a marker file in [`marker_dir`] naming its
//! owner: pid, the process's start time, boot id and PID namespace. After a `kill -9` the
//! instance stays (and keeps tracing: the kernel does not tie it to a process); the next
//! `abperf trace record`, or `abperf doctor`, finds it through the marker, sees that its owner
//! is gone, and removes it ([`leftovers`], [`remove`]). Instances whose owner cannot be judged
//! from here (another PID namespace, no marker) are reported, never removed.

pub use super::trace_marker::{
    Claim, Files, Marker, PREFIX, REAL, marker_dir, marker_dirs, me, random_name, start_ticks,
};
use super::tracefs::Tracefs;
use anyhow::{Context, Result, anyhow};
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Whether a marker's owner still runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Owner {
    /// This very process.
    Me,
    Alive,
    /// Gone, with the reason.
    Dead(String),
    /// Cannot be judged from here, with the reason.
    Unknown(String),
}

/// Judge the owner of `m` from this process's point of view.
pub fn owner(m: &Marker, f: &Files) -> Owner {
    let (pid, ticks, boot, ns) = me(f);
    if !m.boot_id.is_empty() && !boot.is_empty() && m.boot_id != boot {
        return Owner::Dead("made before the last boot".into());
    }
    if m.pid_ns != ns {
        return Owner::Unknown(format!(
            "made in another PID namespace ({}; ours {ns}): its owner cannot be checked from here",
            m.pid_ns
        ));
    }
    if m.pid == pid && m.start_ticks == ticks {
        return Owner::Me;
    }
    match start_ticks(f, m.pid) {
        None => Owner::Dead(format!("abperf pid {} is gone", m.pid)),
        Some(t) if t != m.start_ticks => Owner::Dead(format!(
            "abperf pid {} is gone (the pid now belongs to another process)",
            m.pid
        )),
        Some(_) => Owner::Alive,
    }
}

/// Something abperf left in tracefs, or a marker left without it.
#[derive(Debug, Clone, PartialEq)]
pub struct Leftover {
    /// `instance`, `mount` or `marker` (the marked thing is gone already).
    pub kind: String,
    pub name: String,
    /// The instance directory, mount point, or marker file.
    pub path: PathBuf,
    pub marker: Option<Marker>,
    /// The marker file.
    pub marker_file: Option<PathBuf>,
    pub owner: Owner,
}

impl Leftover {
    /// Safe to remove: its owner is known to be dead.
    pub fn removable(&self) -> bool {
        matches!(self.owner, Owner::Dead(_))
    }
    /// In words, for messages.
    pub fn describe(&self) -> String {
        let why = match &self.owner {
            Owner::Dead(w) | Owner::Unknown(w) => w.clone(),
            Owner::Alive => "its owner still runs".into(),
            Owner::Me => "ours".into(),
        };
        match self.kind.as_str() {
            "instance" => format!(
                "tracefs instance {} ({why}; an instance keeps tracing into its buffers until removed)",
                self.path.display()
            ),
            "mount" => format!("private tracefs mount {} ({why})", self.path.display()),
            _ => format!("ownership marker {} ({why})", self.path.display()),
        }
    }
}

/// Mount points of tracefs in this mount namespace.
pub fn tracefs_mounts(f: &Files) -> Vec<PathBuf> {
    let m = (f.read)("/proc/self/mounts").unwrap_or_default();
    m.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let _src = it.next()?;
            let dir = it.next()?;
            let ty = it.next()?;
            (ty == "tracefs").then(|| PathBuf::from(dir.replace("\\040", " ")))
        })
        .collect()
}

/// Everything abperf left behind that this process can see: marked instances and mounts
/// whose owner is dead (or cannot be judged), `abperf-*` instances without a marker, and
/// markers whose instance is gone. Our own are left out.
pub fn leftovers(f: &Files) -> Vec<Leftover> {
    let mut out = Vec::new();
    let mut marked = std::collections::HashSet::new();
    let mounts = tracefs_mounts(f);
    let mut roots: Vec<PathBuf> = mounts.clone();
    for r in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        let p = PathBuf::from(r);
        if (f.exists)(&format!("{r}/instances")) && !roots.contains(&p) {
            roots.push(p);
        }
    }
    for dir in marker_dirs() {
        let d = dir.to_string_lossy().into_owned();
        for file in (f.list)(&d).unwrap_or_default() {
            if !file.starts_with(PREFIX) || !file.ends_with(".json") {
                continue;
            }
            let path = format!("{d}/{file}");
            let Some(m) = (f.read)(&path).and_then(|t| serde_json::from_str::<Marker>(&t).ok())
            else {
                continue;
            };
            marked.insert(m.name.clone());
            let who = owner(&m, f);
            if matches!(who, Owner::Me | Owner::Alive) {
                continue;
            }
            let target = m.path.to_string_lossy().into_owned();
            let present = match m.kind.as_str() {
                "mount" => mounts.contains(&m.path),
                _ => {
                    (f.exists)(&target)
                        || roots
                            .iter()
                            .any(|r| (f.exists)(&format!("{}/instances/{}", r.display(), m.name)))
                }
            };
            out.push(Leftover {
                kind: if present {
                    m.kind.clone()
                } else {
                    "marker".into()
                },
                name: m.name.clone(),
                path: if present {
                    m.path.clone()
                } else {
                    PathBuf::from(&path)
                },
                marker: Some(m),
                marker_file: Some(PathBuf::from(path)),
                owner: who,
            });
        }
    }
    let mut seen = std::collections::HashSet::new();
    for r in &roots {
        let inst = format!("{}/instances", r.display());
        for name in (f.list)(&inst).unwrap_or_default() {
            if !name.starts_with(PREFIX) || marked.contains(&name) || !seen.insert(name.clone()) {
                continue;
            }
            out.push(Leftover {
                kind: "instance".into(),
                name: name.clone(),
                path: PathBuf::from(format!("{inst}/{name}")),
                marker: None,
                marker_file: None,
                owner: Owner::Unknown(
                    "no ownership marker: made by an abperf older than markers, or in another \
                     mount namespace or container sharing this tracefs"
                        .into(),
                ),
            });
        }
    }
    for m in &mounts {
        let name = m
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with("abperf-tracefs-") && !marked.contains(&name) {
            out.push(Leftover {
                kind: "mount".into(),
                name: name.clone(),
                path: m.clone(),
                marker: None,
                marker_file: None,
                owner: Owner::Unknown("a private mount of an abperf whose marker is gone".into()),
            });
        } else if name.starts_with("abperf-tracefs.") && !marked.contains(&name) {
            // a private mount of an abperf older than markers: `abperf-tracefs.<pid>`
            let pid = name["abperf-tracefs.".len()..].parse::<u32>().ok();
            let alive = pid.is_some_and(|p| (f.exists)(&format!("/proc/{p}")));
            if !alive {
                out.push(Leftover {
                    kind: "mount".into(),
                    name: name.clone(),
                    path: m.clone(),
                    marker: None,
                    marker_file: None,
                    owner: Owner::Unknown(
                        "no ownership marker (an abperf older than markers)".into(),
                    ),
                });
            }
        }
    }
    out
}

fn umount(p: &Path) -> Result<()> {
    let c = CString::new(p.as_os_str().as_encoded_bytes())?;
    // SAFETY: a valid NUL-terminated path.
    if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
        return Err(anyhow!(
            "unmounting {}: {}",
            p.display(),
            std::io::Error::last_os_error()
        ));
    }
    let _ = std::fs::remove_dir(p);
    Ok(())
}

/// Remove a leftover whose owner is dead: the instance (found through any tracefs mount, or
/// a private one made for the purpose), the private mount it was made through, and the
/// marker. Returns what was done, in words.
pub fn remove(l: &Leftover) -> Result<String> {
    if !l.removable() {
        return Err(anyhow!(
            "not removing {}: owner not known to be dead",
            l.describe()
        ));
    }
    let mut done = Vec::new();
    match l.kind.as_str() {
        "instance" => {
            let mut dirs = vec![l.path.clone()];
            for r in tracefs_mounts(&REAL) {
                dirs.push(r.join("instances").join(&l.name));
            }
            let mut removed = false;
            let mut last = None;
            for d in dirs {
                if !d.exists() {
                    continue;
                }
                match std::fs::remove_dir(&d) {
                    Ok(()) => {
                        removed = true;
                        done.push(format!("removed tracefs instance {}", d.display()));
                        break;
                    }
                    Err(e) => last = Some(format!("{}: {e}", d.display())),
                }
            }
            if !removed {
                // no mount shows it here: reach it through a mount of our own
                let t = Tracefs::open()?;
                let d = t.root.join("instances").join(&l.name);
                if d.exists() {
                    std::fs::remove_dir(&d)
                        .with_context(|| format!("removing tracefs instance {}", d.display()))?;
                    done.push(format!("removed tracefs instance {}", l.name));
                } else if let Some(e) = last {
                    return Err(anyhow!("removing tracefs instance: {e}"));
                }
            }
            if let Some(m) = l.marker.as_ref().and_then(|m| m.mount.as_ref())
                && tracefs_mounts(&REAL).contains(m)
            {
                umount(m)?;
                done.push(format!("unmounted {}", m.display()));
            }
        }
        "mount" => {
            if tracefs_mounts(&REAL).contains(&l.path) {
                umount(&l.path)?;
                done.push(format!(
                    "unmounted private tracefs mount {}",
                    l.path.display()
                ));
            } else {
                // unmounted with its instance just before
                let _ = std::fs::remove_dir(&l.path);
                done.push("removed its marker (unmounted already)".into());
            }
        }
        _ => done.push("removed its stale marker".into()),
    }
    if let Some(f) = &l.marker_file {
        let _ = std::fs::remove_file(f);
    }
    Ok(done.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A fake file view: contents, directories and links by absolute path.
    struct Fake {
        files: HashMap<String, String>,
        links: HashMap<String, String>,
    }

    fn with<R>(fake: &Fake, body: impl FnOnce(&Files) -> R) -> R {
        let read = |p: &str| fake.files.get(p).cloned();
        let list = |p: &str| {
            let pre = format!("{p}/");
            let mut v: Vec<String> = fake
                .files
                .keys()
                .filter_map(|k| k.strip_prefix(&pre))
                .map(|r| r.split('/').next().unwrap().to_string())
                .collect();
            v.sort();
            v.dedup();
            (!v.is_empty()).then_some(v)
        };
        let link = |p: &str| fake.links.get(p).cloned();
        let exists = |p: &str| {
            let pre = format!("{p}/");
            fake.files.contains_key(p) || fake.files.keys().any(|k| k.starts_with(&pre))
        };
        body(&Files {
            read: &read,
            list: &list,
            link: &link,
            exists: &exists,
        })
    }

    fn stat(pid: u32, start: u64) -> String {
        // comm with a space and a parenthesis, as the kernel may print it
        let mut fields = vec!["S".to_string(); 19];
        fields.push(start.to_string());
        format!("{pid} (my (prog)) {}", fields.join(" "))
    }

    fn marker(name: &str, pid: u32, start: u64, ns: &str) -> String {
        serde_json::to_string(&Marker {
            name: name.into(),
            kind: "instance".into(),
            path: format!("/sys/kernel/tracing/instances/{name}").into(),
            mount: None,
            pid,
            start_ticks: start,
            boot_id: "boot-1".into(),
            pid_ns: ns.into(),
        })
        .unwrap()
    }

    #[test]
    fn dead_live_foreign_and_unmarked_instances() {
        let me = std::process::id();
        let mut files = HashMap::new();
        files.insert("/proc/sys/kernel/random/boot_id".into(), "boot-1".into());
        files.insert(format!("/proc/{me}/stat"), stat(me, 100));
        files.insert("/proc/777/stat".into(), stat(777, 5000));
        files.insert("/proc/888/stat".into(), stat(888, 6000));
        files.insert(
            "/proc/self/mounts".into(),
            "nodev /sys/kernel/tracing tracefs rw 0 0".into(),
        );
        let d = "/run/abperf/trace";
        // dead: pid 555 does not exist
        files.insert(
            format!("{d}/abperf-dead.json"),
            marker("abperf-dead", 555, 1, "pid:[1]"),
        );
        // pid reused: 888 runs, but started at another time
        files.insert(
            format!("{d}/abperf-reuse.json"),
            marker("abperf-reuse", 888, 1, "pid:[1]"),
        );
        // alive
        files.insert(
            format!("{d}/abperf-live.json"),
            marker("abperf-live", 777, 5000, "pid:[1]"),
        );
        // another PID namespace
        files.insert(
            format!("{d}/abperf-ns.json"),
            marker("abperf-ns", 1, 1, "pid:[2]"),
        );
        // a dead owner whose instance is gone already: a stale marker
        files.insert(
            format!("{d}/abperf-gone.json"),
            marker("abperf-gone", 556, 1, "pid:[1]"),
        );
        for n in [
            "abperf-dead",
            "abperf-reuse",
            "abperf-live",
            "abperf-ns",
            "abperf-old",
            "other",
        ] {
            files.insert(
                format!("/sys/kernel/tracing/instances/{n}/tracing_on"),
                "1".into(),
            );
        }
        let mut links = HashMap::new();
        links.insert("/proc/self/ns/pid".into(), "pid:[1]".into());
        let fake = Fake { files, links };
        let l = with(&fake, leftovers);
        let by = |n: &str| l.iter().find(|x| x.name == n);
        assert!(by("abperf-live").is_none(), "{l:?}");
        assert!(by("other").is_none());
        let dead = by("abperf-dead").unwrap();
        assert!(dead.removable() && dead.kind == "instance", "{dead:?}");
        assert!(
            dead.describe().contains("pid 555 is gone"),
            "{}",
            dead.describe()
        );
        let reuse = by("abperf-reuse").unwrap();
        assert!(reuse.removable());
        assert!(reuse.describe().contains("another process"));
        let ns = by("abperf-ns").unwrap();
        assert!(!ns.removable());
        assert!(ns.describe().contains("another PID namespace"));
        let old = by("abperf-old").unwrap();
        assert!(!old.removable() && old.marker.is_none());
        let gone = by("abperf-gone").unwrap();
        assert_eq!(gone.kind, "marker");
        assert!(gone.removable());
        assert_eq!(l.len(), 5, "{l:?}");
    }

    #[test]
    fn names_are_random_and_prefixed() {
        let a = random_name();
        let b = random_name();
        assert!(a.starts_with(PREFIX) && a.len() == PREFIX.len() + 12, "{a}");
        assert_ne!(a, b);
    }
}
