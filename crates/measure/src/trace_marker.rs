//! The ownership marker abperf writes before it creates anything in tracefs: a random
//! `abperf-<hex>` name, the owner as a marker file records it (pid, start time, boot id, PID
//! namespace), and the [`Claim`] that writes the marker and removes it on drop. Judging markers
//! and removing what their dead owners left is `trace_owner`'s.

use anyhow::{Context, Result, anyhow};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Name prefix of everything abperf creates in tracefs.
pub const PREFIX: &str = "abperf-";

/// A marker file: what was created, by whom.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Marker {
    /// `abperf-<hex>` (the instance directory's or the mount point's file name).
    pub name: String,
    /// `instance` or `mount`.
    pub kind: String,
    /// The instance directory or the mount point.
    pub path: PathBuf,
    /// For an instance made through a private mount: that mount point.
    pub mount: Option<PathBuf>,
    pub pid: u32,
    /// Start time of the owner (field 22 of /proc/PID/stat, clock ticks since boot).
    pub start_ticks: u64,
    pub boot_id: String,
    /// `readlink /proc/self/ns/pid` of the owner (`pid:[4026531836]`).
    pub pid_ns: String,
}

/// Read-only access to the files the judgement needs: the real ones, or a test tree
/// (`abperf doctor` passes its own file reader).
pub struct Files<'a> {
    /// Trimmed content of an absolute path.
    pub read: &'a dyn Fn(&str) -> Option<String>,
    /// Entry names of a directory.
    pub list: &'a dyn Fn(&str) -> Option<Vec<String>>,
    /// Target of a symbolic link.
    pub link: &'a dyn Fn(&str) -> Option<String>,
    pub exists: &'a dyn Fn(&str) -> bool,
}

fn real_read(p: &str) -> Option<String> {
    crate::env::read_trimmed(Path::new(p))
}
fn real_list(p: &str) -> Option<Vec<String>> {
    crate::env::list_dir(Path::new(p))
}
fn real_link(p: &str) -> Option<String> {
    std::fs::read_link(p)
        .ok()
        .map(|t| t.to_string_lossy().into_owned())
}
fn real_exists(p: &str) -> bool {
    Path::new(p).exists()
}

/// The running machine's files.
pub const REAL: Files<'static> = Files {
    read: &real_read,
    list: &real_list,
    link: &real_link,
    exists: &real_exists,
};

/// Where markers live: `/run/abperf/trace` (root), else `$XDG_RUNTIME_DIR/abperf/trace`, else
/// `$TMPDIR/abperf-<uid>/trace`. Every candidate is tried when looking for markers.
pub fn marker_dirs() -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from("/run/abperf/trace")];
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR") {
        v.push(PathBuf::from(x).join("abperf/trace"));
    }
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    v.push(std::env::temp_dir().join(format!("abperf-{uid}/trace")));
    v
}

/// The first marker directory that can be created and written.
pub fn marker_dir() -> Result<PathBuf> {
    let mut errs = Vec::new();
    for d in marker_dirs() {
        match std::fs::create_dir_all(&d) {
            Ok(()) => {
                let probe = d.join(format!(".probe-{}", std::process::id()));
                match std::fs::write(&probe, b"") {
                    Ok(()) => {
                        let _ = std::fs::remove_file(&probe);
                        return Ok(d);
                    }
                    Err(e) => errs.push(format!("{}: {e}", d.display())),
                }
            }
            Err(e) => errs.push(format!("{}: {e}", d.display())),
        }
    }
    Err(anyhow!(
        "no writable directory for tracefs ownership markers ({})",
        errs.join("; ")
    ))
}

/// `abperf-` and 12 random hex digits.
pub fn random_name() -> String {
    format!("{PREFIX}{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff)
}

/// This process as a marker sees it: (pid, start ticks, boot id, PID namespace).
pub fn me(f: &Files) -> (u32, u64, String, String) {
    let pid = std::process::id();
    (
        pid,
        start_ticks(f, pid).unwrap_or(0),
        (f.read)("/proc/sys/kernel/random/boot_id").unwrap_or_default(),
        (f.link)("/proc/self/ns/pid").unwrap_or_default(),
    )
}

/// Field 22 (starttime) of /proc/PID/stat; the command name in parentheses may hold spaces.
pub fn start_ticks(f: &Files, pid: u32) -> Option<u64> {
    let stat = (f.read)(&format!("/proc/{pid}/stat"))?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// A written marker, removed on drop (after what it marks is gone).
#[derive(Debug)]
pub struct Claim {
    file: PathBuf,
    pub marker: Marker,
}

impl Claim {
    /// Write the marker of `path` (named by its file name) before it is created.
    pub fn new(kind: &str, path: &Path, mount: Option<&Path>) -> Result<Claim> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (pid, start_ticks, boot_id, pid_ns) = me(&REAL);
        let marker = Marker {
            name: name.clone(),
            kind: kind.into(),
            path: path.to_path_buf(),
            mount: mount.map(Path::to_path_buf),
            pid,
            start_ticks,
            boot_id,
            pid_ns,
        };
        let file = marker_dir()?.join(format!("{name}.json"));
        std::fs::write(&file, serde_json::to_vec_pretty(&marker)?)
            .with_context(|| format!("writing ownership marker {}", file.display()))?;
        Ok(Claim { file, marker })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}
