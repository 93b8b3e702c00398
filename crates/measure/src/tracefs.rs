//! Where tracefs is: the mounted one (`/sys/kernel/tracing` first), or, when none is mounted, a
//! private mount in a temporary directory that is unmounted again when the [`Tracefs`] is
//! dropped. Used by `measure::counters` (tracepoint ids for perf_event_open) and by `trace/`
//! (its own instances); nothing here writes to tracefs.

use super::trace_marker::{Claim, random_name};
use anyhow::{Context, Result, anyhow, bail};
use std::ffi::CString;
use std::fs;
use std::path::{Path, PathBuf};

/// A tracefs mount point, possibly our private one.
#[derive(Debug)]
pub struct Tracefs {
    pub root: PathBuf,
    private: bool,
    // removed after the mount is gone (Drop)
    claim: Option<Claim>,
}

impl Tracefs {
    /// Find a mounted tracefs, or mount one privately (root only). A tracefs that is mounted
    /// but closed to this user is an error saying so (not "not mounted").
    pub fn open() -> Result<Tracefs> {
        let denied = match find_mounted() {
            Found::Usable(root) => {
                return Ok(Tracefs {
                    root,
                    private: false,
                    claim: None,
                });
            }
            Found::Denied(why) => Some(why),
            Found::None => None,
        };
        // SAFETY: geteuid has no preconditions.
        if let Some(why) = denied
            && unsafe { libc::geteuid() } != 0
        {
            bail!("{why}");
        }
        let dir = std::env::temp_dir().join(random_name().replace("abperf-", "abperf-tracefs-"));
        let claim = Claim::new("mount", &dir, None)?;
        fs::create_dir_all(&dir)
            .with_context(|| format!("creating mount point {}", dir.display()))?;
        let target = CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
        let fstype = CString::new("tracefs").unwrap();
        let src = CString::new("nodev").unwrap();
        // SAFETY: valid NUL-terminated strings; no data argument.
        let rc = unsafe {
            libc::mount(
                src.as_ptr(),
                target.as_ptr(),
                fstype.as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            let _ = fs::remove_dir(&dir);
            bail!(
                "tracefs is not mounted and mounting it on {} failed: {e} (are you root? is CONFIG_TRACING set?)",
                dir.display()
            );
        }
        Ok(Tracefs {
            root: dir,
            private: true,
            claim: Some(claim),
        })
    }

    /// The private mount point, when tracefs was not mounted and we mounted it.
    pub fn private_mount(&self) -> Option<&Path> {
        self.private.then_some(self.root.as_path())
    }

    pub fn read(&self, rel: &str) -> Result<String> {
        read_whole(&self.root.join(rel))
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if self.private {
            let target = CString::new(self.root.as_os_str().as_encoded_bytes()).unwrap();
            // Lazy: detached now even if a file in it is still open somewhere (a child between
            // fork and exec holds our descriptors).
            // SAFETY: valid path string.
            if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } != 0 {
                // keep the marker: the next abperf (or doctor --fix) unmounts it
                if let Some(c) = self.claim.take() {
                    std::mem::forget(c);
                }
                return;
            }
            let _ = fs::remove_dir(&self.root);
        }
        self.claim.take();
    }
}

/// Read a tracefs file with one large read first: some files (events/header_page on 6.18)
/// return only the first chunk and then EOF to small reads, as `read_to_string` starts with.
pub fn read_whole(p: &Path) -> Result<String> {
    use std::io::Read;
    let mut f = fs::File::open(p).with_context(|| format!("reading {}", p.display()))?;
    let mut buf = vec![0u8; 1 << 18];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(anyhow!("reading {}: {e}", p.display())),
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|_| anyhow!("{}: not UTF-8 text", p.display()))
}

enum Found {
    Usable(PathBuf),
    /// Mounted, but this user may not enter it: why, in words.
    Denied(String),
    None,
}

fn find_mounted() -> Found {
    let m = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mut found: Vec<PathBuf> = m
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let _src = it.next()?;
            let dir = it.next()?;
            let ty = it.next()?;
            (ty == "tracefs").then(|| PathBuf::from(dir.replace("\\040", " ")))
        })
        .collect();
    found.sort_by_key(|p| p != Path::new("/sys/kernel/tracing"));
    let mut denied = None;
    for p in found {
        match fs::metadata(p.join("instances")) {
            Ok(md) if md.is_dir() => return Found::Usable(p),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && denied.is_none() => {
                use std::os::unix::fs::MetadataExt;
                let mode = fs::metadata(&p)
                    .map(|m| format!("mode {:04o}, owner uid {}", m.mode() & 0o7777, m.uid()))
                    .unwrap_or_else(|_| "not readable".into());
                // SAFETY: geteuid has no preconditions.
                let uid = unsafe { libc::geteuid() };
                denied = Some(format!(
                    "tracefs is mounted at {} but uid {uid} may not use it ({mode}): run as root, \
                     or give this user access (e.g. mount tracefs with -o gid=GROUP,mode=0750 and \
                     join that group)",
                    p.display()
                ));
            }
            _ => {}
        }
    }
    match denied {
        Some(d) => Found::Denied(d),
        None => Found::None,
    }
}
