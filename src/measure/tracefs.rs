//! Where tracefs is: the mounted one (`/sys/kernel/tracing` first), or, when none is mounted, a
//! private mount in a temporary directory that is unmounted again when the [`Tracefs`] is
//! dropped. Used by `measure::counters` (tracepoint ids for perf_event_open) and by `trace/`
//! (its own instances); nothing here writes to tracefs.

use anyhow::{Context, Result, anyhow, bail};
use std::ffi::CString;
use std::fs;
use std::path::{Path, PathBuf};

/// A tracefs mount point, possibly our private one.
#[derive(Debug)]
pub struct Tracefs {
    pub root: PathBuf,
    private: bool,
}

impl Tracefs {
    /// Find a mounted tracefs, or mount one privately.
    pub fn open() -> Result<Tracefs> {
        if let Some(root) = find_mounted() {
            return Ok(Tracefs {
                root,
                private: false,
            });
        }
        let dir = std::env::temp_dir().join(format!("abperf-tracefs.{}", std::process::id()));
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
        })
    }

    pub fn read(&self, rel: &str) -> Result<String> {
        read_whole(&self.root.join(rel))
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if self.private {
            let target = CString::new(self.root.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: valid path string.
            unsafe { libc::umount2(target.as_ptr(), 0) };
            let _ = fs::remove_dir(&self.root);
        }
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

fn find_mounted() -> Option<PathBuf> {
    let m = fs::read_to_string("/proc/self/mounts").ok()?;
    let mut found: Vec<PathBuf> = m
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let _src = it.next()?;
            let dir = it.next()?;
            let ty = it.next()?;
            (ty == "tracefs").then(|| PathBuf::from(dir.replace("\\040", " ")))
        })
        .filter(|p| p.join("instances").is_dir())
        .collect();
    found.sort_by_key(|p| p != Path::new("/sys/kernel/tracing"));
    found.into_iter().next()
}
