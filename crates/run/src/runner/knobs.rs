//! Kernel knobs as variants: a sysfs/procfs/debugfs file is written, read back and verified, and
//! its original content is restored at the end, on error, on signals (the experiment loop stops
//! and drops the guard) and on panic (`Drop`).
//!
//! A knob must be a regular file in a kernel filesystem (sysfs, procfs, debugfs, tracefs, cgroup,
//! configfs, securityfs), in a tmpfs or under the temporary directory: never a FIFO (opening one
//! blocks), a device (`/dev/zero` reads forever; opening some devices acts) or an ordinary file
//! elsewhere. Reads are bounded ([`MAX_KNOB_BYTES`]).
//!
//! Every knob is locked for as long as the guard lives (`knob_lock`): a second experiment on the
//! same knob waits or fails naming the holder, and a claim recorded before the first write lets
//! the next abperf put the original back if this one is killed.

use super::knob_lock::{KnobLock, LockOptions};
use abperf_measure::env::selected_choice;
use abperf_model::Owner;
use anyhow::Context;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The most a knob file may hold (a sysfs attribute holds at most a page).
pub const MAX_KNOB_BYTES: u64 = 1 << 20;

/// Filesystems whose regular files are kernel knobs, by statfs magic.
const KNOB_FILESYSTEMS: &[(i64, &str)] = &[
    (0x6265_6572, "sysfs"),
    (0x9fa0, "procfs"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x0027_e0eb, "cgroup"),
    (0x6367_7270, "cgroup2"),
    (0x6265_6570, "configfs"),
    (0x7363_6673, "securityfs"),
    (0x0102_1994, "tmpfs"),
    (0x8584_58f6, "ramfs"),
];

fn kind_of(ft: &std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

fn under_temp_dir(path: &Path) -> bool {
    let (Ok(p), Ok(t)) = (
        std::fs::canonicalize(path),
        std::fs::canonicalize(std::env::temp_dir()),
    ) else {
        return false;
    };
    p.starts_with(t)
}

/// Check that `path` may be a knob: a regular file in a kernel filesystem, a tmpfs or the
/// temporary directory. Looked at before anything opens it (opening a FIFO blocks, opening some
/// devices acts), and again on the open file by [`open_knob`].
pub fn check_knob_path(path: &str) -> anyhow::Result<()> {
    let meta = std::fs::metadata(path).with_context(|| format!("knob {path}: does not exist"))?;
    if !meta.file_type().is_file() {
        anyhow::bail!(
            "knob {path}: is {}; a knob is a regular file in sysfs, procfs, debugfs, cgroup, \
             configfs, a tmpfs or the temporary directory",
            kind_of(&meta.file_type())
        );
    }
    Ok(())
}

/// How a knob file is opened.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    /// Opened for writing to see that it can be, never truncated (a regular file would lose its
    /// content).
    CheckWritable,
    Write,
}

/// Open knob `path` never blocking, and check the open file: a regular file, on a knob
/// filesystem or under the temporary directory.
fn open_knob(path: &str, access: Access) -> anyhow::Result<File> {
    check_knob_path(path)?;
    let write = access != Access::Read;
    let f = OpenOptions::new()
        .read(!write)
        .write(write)
        .truncate(access == Access::Write)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .with_context(|| {
            if write {
                format!("knob {path}: cannot be opened for writing")
            } else {
                format!("knob {path}: cannot be read")
            }
        })?;
    let meta = f.metadata()?;
    if !meta.file_type().is_file() {
        anyhow::bail!("knob {path}: is {}", kind_of(&meta.file_type()));
    }
    // SAFETY: statfs is plain data filled by fstatfs on our open fd.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(f.as_raw_fd(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("knob {path}: statfs failed"));
    }
    let magic = st.f_type as i64;
    if !KNOB_FILESYSTEMS.iter().any(|&(m, _)| m == magic) && !under_temp_dir(Path::new(path)) {
        anyhow::bail!(
            "knob {path}: is an ordinary file (filesystem 0x{magic:x}), not a kernel knob; a knob \
             is a file in sysfs, procfs, debugfs, tracefs, cgroup, configfs or securityfs, or a \
             test file in a tmpfs or under {}",
            std::env::temp_dir().display()
        );
    }
    Ok(f)
}

/// The value a knob file currently selects: the bracketed choice for files such as THP's
/// `always [madvise] never`, else the trimmed content. At most [`MAX_KNOB_BYTES`] are read.
pub fn read_value(path: &str) -> anyhow::Result<String> {
    Ok(selected_choice(&read_raw(path)?))
}

/// The whole text of knob `path` (checked as [`check_knob_path`] does, at most 1 MiB read).
pub fn read_raw(path: &str) -> anyhow::Result<String> {
    let f = open_knob(path, Access::Read)?;
    let mut bytes = Vec::new();
    f.take(MAX_KNOB_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("knob {path}: cannot be read"))?;
    if bytes.len() as u64 > MAX_KNOB_BYTES {
        anyhow::bail!(
            "knob {path}: holds more than {} KiB: not a knob",
            MAX_KNOB_BYTES / 1024
        );
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn write_raw(path: &str, value: &str) -> anyhow::Result<()> {
    let mut f = open_knob(path, Access::Write)?;
    f.write_all(value.as_bytes())
        .with_context(|| format!("knob {path}: writing '{value}' was refused"))?;
    Ok(())
}

/// Write `value` to knob `path` and check that it reads back.
pub fn write_verified(path: &str, value: &str) -> anyhow::Result<()> {
    write_raw(path, value)?;
    let back = read_value(path)?;
    if back != value.trim() {
        anyhow::bail!("knob {path}: wrote '{value}' but it reads back '{back}'");
    }
    Ok(())
}

/// Who changes the knobs of a guard, for the claims left beside their locks.
#[derive(Debug, Clone)]
struct ClaimContext {
    owner: Owner,
    purpose: String,
    experiment: Option<i64>,
    store: Option<PathBuf>,
}

/// Owns every knob of an experiment while it runs; restores the originals when dropped.
pub struct KnobGuard {
    /// path -> value to restore
    originals: BTreeMap<String, String>,
    /// path -> value the file selects now
    current: BTreeMap<String, String>,
    restored: bool,
    /// path -> its lock (and claim), held while the guard lives.
    locks: BTreeMap<String, KnobLock>,
    claim: ClaimContext,
}

impl KnobGuard {
    /// Check that every knob exists and can be read and opened for writing, lock it, and take
    /// its original value. `stored` originals (from an interrupted experiment being resumed) win
    /// over what the file holds now, since a killed abperf may have left a variant's value behind.
    /// A busy knob is an error naming its holder (see [`KnobGuard::prepare_with`] to wait).
    pub fn prepare(
        paths: &[String],
        stored: &BTreeMap<String, String>,
    ) -> anyhow::Result<KnobGuard> {
        KnobGuard::prepare_with(paths, stored, &LockOptions::default())
    }

    /// [`KnobGuard::prepare`] with lock options (wait for a busy knob; what the holder is).
    pub fn prepare_with(
        paths: &[String],
        stored: &BTreeMap<String, String>,
        opts: &LockOptions,
    ) -> anyhow::Result<KnobGuard> {
        let mut originals = BTreeMap::new();
        let mut current = BTreeMap::new();
        let mut locks = BTreeMap::new();
        let claim = ClaimContext {
            owner: abperf_measure::process::current_owner(),
            purpose: opts.purpose.clone(),
            experiment: None,
            store: None,
        };
        for path in paths {
            check_knob_path(path)?;
            // Lock first: the lock settles what a killed holder left, so `now` is clean.
            let mut lock = KnobLock::acquire(path, opts)?;
            let now = read_value(path)?;
            drop(open_knob(path, Access::CheckWritable).map_err(|e| {
                e.context(format!("knob {path}: cannot be written (are you root?)"))
            })?);
            let original = stored.get(path).cloned().unwrap_or_else(|| now.clone());
            // The claim names this holder to anyone who finds the knob busy, and records the
            // original for whoever comes after a kill -9.
            lock.claim(&original, &claim.owner, &claim.purpose, None, None)?;
            locks.insert(path.clone(), lock);
            originals.insert(path.clone(), original);
            current.insert(path.clone(), now);
        }
        Ok(KnobGuard {
            originals,
            current,
            restored: false,
            locks,
            claim,
        })
    }

    /// Name the experiment (and store) these knobs are changed for, in the claims left beside
    /// their locks (claims already written are rewritten).
    pub fn set_experiment(&mut self, id: i64, store: &Path) -> anyhow::Result<()> {
        self.claim.experiment = Some(id);
        self.claim.store = Some(store.to_path_buf());
        let c = self.claim.clone();
        for (path, lock) in self.locks.iter_mut() {
            if lock.is_claimed() {
                let orig = &self.originals[path];
                lock.claim(orig, &c.owner, &c.purpose, c.experiment, c.store.as_deref())?;
            }
        }
        Ok(())
    }

    /// The values that will be restored, path -> value.
    pub fn originals(&self) -> &BTreeMap<String, String> {
        &self.originals
    }

    /// Knobs whose file holds something other than the original (left behind by a killed run).
    pub fn drifted(&self) -> Vec<(String, String, String)> {
        self.originals
            .iter()
            .filter_map(|(p, o)| {
                let now = self.current.get(p)?;
                (now != o).then(|| (p.clone(), now.clone(), o.clone()))
            })
            .collect()
    }

    /// Set `path` to `value` unless it already holds it; read back and verify.
    pub fn apply(&mut self, path: &str, value: &str) -> anyhow::Result<()> {
        if self.current.get(path).map(String::as_str) == Some(value.trim()) {
            return Ok(());
        }
        self.restored = false;
        // Record the original beside the lock before the first change: if abperf dies from here
        // on, the next abperf that locks this knob (or doctor) puts it back.
        if let Some(lock) = self.locks.get_mut(path)
            && !lock.is_claimed()
        {
            let c = &self.claim;
            let orig = self
                .originals
                .get(path)
                .with_context(|| format!("internal: knob {path} is not held by the guard"))?;
            lock.claim(orig, &c.owner, &c.purpose, c.experiment, c.store.as_deref())?;
        }
        // Mark it unknown first: if the write fails half-way, restore must still rewrite it.
        self.current.insert(path.to_string(), String::new());
        write_raw(path, value)?;
        let back = read_value(path)?;
        if back != value.trim() {
            anyhow::bail!("knob {path}: wrote '{value}' but it reads back '{back}'");
        }
        self.current.insert(path.to_string(), back);
        Ok(())
    }

    /// Leave every file as it is now: nothing is restored on drop (`doctor --fix`, whose
    /// originals are kept in the store for `doctor --restore`).
    pub fn keep_current(&mut self) {
        self.restored = true;
        for lock in self.locks.values_mut() {
            lock.release_claim();
        }
    }

    /// Put every original back and verify it; returns one message per knob that failed.
    pub fn restore(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        for (path, orig) in &self.originals {
            if self.current.get(path) == Some(orig) {
                if let Some(l) = self.locks.get_mut(path) {
                    l.release_claim();
                }
                continue;
            }
            let result = write_raw(path, orig)
                .and_then(|_| read_value(path))
                .and_then(|back| {
                    if &back == orig {
                        Ok(back)
                    } else {
                        anyhow::bail!("knob {path}: restored '{orig}' but it reads back '{back}'")
                    }
                });
            match result {
                Ok(back) => {
                    self.current.insert(path.clone(), back);
                    if let Some(l) = self.locks.get_mut(path) {
                        l.release_claim();
                    }
                }
                Err(e) => errors.push(format!("{e:#}; restore it by hand: echo '{orig}' > {path}")),
            }
        }
        self.restored = errors.is_empty();
        errors
    }
}

impl Drop for KnobGuard {
    fn drop(&mut self) {
        if !self.restored {
            for e in self.restore() {
                abperf_model::error::stderr_line(&format!("abperf: error: {e}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_verify_restore_on_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("knob");
        std::fs::write(&p, "a [b] c\n").unwrap();
        let path = p.to_string_lossy().to_string();
        {
            let mut g = KnobGuard::prepare(std::slice::from_ref(&path), &BTreeMap::new()).unwrap();
            assert_eq!(g.originals()[&path], "b");
            g.apply(&path, "zz").unwrap();
            assert_eq!(std::fs::read_to_string(&p).unwrap(), "zz");
        }
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "b");
    }

    #[test]
    fn missing_knob_is_an_error_before_anything() {
        let e = KnobGuard::prepare(&["/nonexistent/knob".into()], &BTreeMap::new())
            .err()
            .unwrap();
        assert!(format!("{e:#}").contains("/nonexistent/knob: does not exist"));
    }

    #[test]
    fn stored_original_wins_on_resume() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("knob");
        std::fs::write(&p, "left-behind").unwrap();
        let path = p.to_string_lossy().to_string();
        let mut stored = BTreeMap::new();
        stored.insert(path.clone(), "orig".to_string());
        let g = KnobGuard::prepare(std::slice::from_ref(&path), &stored).unwrap();
        assert_eq!(g.drifted().len(), 1);
        drop(g);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "orig");
    }
}
