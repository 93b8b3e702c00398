//! Reading kernel files under a root directory: `/` on a real machine, a temporary tree in unit
//! tests (to exercise states this machine does not have, such as a powersave governor).

use abperf_measure::env::{KernelFiles, list_dir, read_trimmed};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What a remembering reader has read: kernel path -> trimmed content (None: absent).
type Memo = Arc<Mutex<HashMap<String, Option<String>>>>;

/// Where the kernel's /proc and /sys are found.
#[derive(Debug, Clone)]
pub struct Sys {
    root: PathBuf,
    /// With [`Sys::remembering`]: every file read so far and what it held, so that one snapshot
    /// (the machine and the settings checks) reads each file once.
    memo: Option<Memo>,
}

impl Default for Sys {
    fn default() -> Self {
        Sys::real()
    }
}

/// Write `content` at the kernel path `abs` of a test tree rooted at `root`.
#[cfg(test)]
pub fn put(root: &Path, abs: &str, content: &str) {
    let p = root.join(abs.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

impl Sys {
    /// The running kernel.
    pub fn real() -> Sys {
        Sys::at(Path::new("/"))
    }

    /// A tree rooted at `root` laid out like `/` (tests).
    pub fn at(root: &Path) -> Sys {
        Sys {
            root: root.to_path_buf(),
            memo: None,
        }
    }

    /// This reader, remembering what it reads: a second read of a file returns what the first
    /// found. For one snapshot taken at one moment; never for checks that sample over time.
    pub fn remembering(self) -> Sys {
        Sys {
            memo: Some(Arc::default()),
            ..self
        }
    }

    /// The real location of an absolute kernel path such as `/proc/loadavg`.
    pub fn path(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    /// Trimmed content, or None when the file is absent or unreadable.
    pub fn read(&self, abs: &str) -> Option<String> {
        let read = || read_trimmed(&self.path(abs));
        let Some(memo) = &self.memo else {
            return read();
        };
        let mut memo = memo.lock().unwrap_or_else(|e| e.into_inner());
        memo.entry(abs.to_string()).or_insert_with(read).clone()
    }

    pub fn exists(&self, abs: &str) -> bool {
        self.path(abs).exists()
    }

    /// Names of the entries of a directory (sorted), or None when it is absent.
    pub fn list(&self, abs: &str) -> Option<Vec<String>> {
        list_dir(&self.path(abs))
    }

    /// Kernel paths (absolute, as the kernel names them) of `/sys/devices/system/cpu/cpuN/<rel>`
    /// that exist, in CPU order.
    pub fn per_cpu(&self, rel: &str) -> Vec<(u32, String)> {
        let mut out: Vec<(u32, String)> = self
            .list("/sys/devices/system/cpu")
            .unwrap_or_default()
            .into_iter()
            .filter_map(|n| n.strip_prefix("cpu")?.parse::<u32>().ok())
            .map(|n| (n, format!("/sys/devices/system/cpu/cpu{n}/{rel}")))
            .filter(|(_, p)| self.exists(p))
            .collect();
        out.sort();
        out
    }
}

/// The snapshot (`abperf_measure::env::machine_from`) reads through the doctor's reader, so a
/// remembering one serves both.
impl KernelFiles for Sys {
    fn read(&self, abs: &str) -> Option<String> {
        Sys::read(self, abs)
    }

    fn list(&self, abs: &str) -> Option<Vec<String>> {
        Sys::list(self, abs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembering_reader_reads_each_file_once() {
        let d = tempfile::tempdir().unwrap();
        put(d.path(), "/proc/sys/kernel/randomize_va_space", "2\n");
        let plain = Sys::at(d.path());
        let once = Sys::at(d.path()).remembering();
        assert_eq!(
            once.read("/proc/sys/kernel/randomize_va_space").as_deref(),
            Some("2")
        );
        assert_eq!(once.read("/proc/cmdline"), None);
        put(d.path(), "/proc/sys/kernel/randomize_va_space", "0\n");
        put(d.path(), "/proc/cmdline", "quiet\n");
        // What the first read found, also when it found nothing; a plain reader sees the change.
        assert_eq!(
            once.read("/proc/sys/kernel/randomize_va_space").as_deref(),
            Some("2")
        );
        assert_eq!(once.read("/proc/cmdline"), None);
        assert_eq!(
            plain.read("/proc/sys/kernel/randomize_va_space").as_deref(),
            Some("0")
        );
        // Its clones share what it remembers.
        assert_eq!(once.clone().read("/proc/cmdline"), None);
    }
}
