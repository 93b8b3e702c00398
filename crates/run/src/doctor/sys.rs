//! Reading kernel files under a root directory: `/` on a real machine, a temporary tree in unit
//! tests (to exercise states this machine does not have, such as a powersave governor).

use std::path::{Path, PathBuf};

/// Where the kernel's /proc and /sys are found.
#[derive(Debug, Clone)]
pub struct Sys {
    root: PathBuf,
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
        Sys {
            root: PathBuf::from("/"),
        }
    }

    /// A tree rooted at `root` laid out like `/` (tests).
    pub fn at(root: &Path) -> Sys {
        Sys {
            root: root.to_path_buf(),
        }
    }

    /// The real location of an absolute kernel path such as `/proc/loadavg`.
    pub fn path(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    /// Trimmed content, or None when the file is absent or unreadable.
    pub fn read(&self, abs: &str) -> Option<String> {
        std::fs::read_to_string(self.path(abs))
            .ok()
            .map(|s| s.trim().to_string())
    }

    pub fn exists(&self, abs: &str) -> bool {
        self.path(abs).exists()
    }

    /// Names of the entries of a directory (sorted), or None when it is absent.
    pub fn list(&self, abs: &str) -> Option<Vec<String>> {
        let rd = std::fs::read_dir(self.path(abs)).ok()?;
        let mut v: Vec<String> = rd
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        Some(v)
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
