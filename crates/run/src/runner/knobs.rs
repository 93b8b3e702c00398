//! Kernel knobs as variants: a sysfs/procfs/debugfs file is written, read back and verified, and
//! its original content is restored at the end, on error, on signals (the experiment loop stops
//! and drops the guard) and on panic (`Drop`).
//!
//! A knob must be a regular file in a kernel filesystem (sysfs, procfs, debugfs, tracefs, cgroup,
//! configfs, securityfs), whatever `TMPDIR` says: never a FIFO (opening one blocks), a device
//! (`/dev/zero` reads forever; opening some devices acts), a tmpfs file or an ordinary file (the
//! tests' own directory aside, see `knob_file`). Reads are bounded ([`MAX_KNOB_BYTES`]).
//!
//! Every knob is locked for as long as the guard lives (`knob_lock`): a second experiment on the
//! same knob waits or fails naming the holder, and a claim recorded before the first write lets
//! the next abperf put the original back if this one is killed.

use super::knob_file::{Access, open_knob, write_raw};
pub use super::knob_file::{
    MAX_KNOB_BYTES, check_knob_path, read_raw, read_value, restore_verified, write_verified,
};
use super::knob_lock::{KnobLock, LockOptions};
use abperf_model::Owner;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// path -> the file's whole text before (restored byte for byte)
    raw_originals: BTreeMap<String, String>,
    /// path -> value the file selects now
    current: BTreeMap<String, String>,
    /// Knobs another process changed while held ([`KnobGuard::moved`]), path -> the value
    /// abperf had set: left to that process, not restored, until they hold it again.
    foreign: BTreeMap<String, String>,
    restored: bool,
    /// path -> its lock (and claim), held while the guard lives.
    locks: BTreeMap<String, KnobLock>,
    claim: ClaimContext,
}

impl KnobGuard {
    /// Check that every knob exists and can be read and opened for writing, lock it, and take
    /// its original value from the file (on a resume too: what a killed run left behind was put
    /// back when its lock was taken, from the claim on this machine, never from a store). A busy
    /// knob is an error naming its holder (see [`KnobGuard::prepare_with`] to wait).
    pub fn prepare(paths: &[String]) -> anyhow::Result<KnobGuard> {
        KnobGuard::prepare_with(paths, &LockOptions::default())
    }

    /// [`KnobGuard::prepare`] with lock options (wait for a busy knob; what the holder is).
    pub fn prepare_with(paths: &[String], opts: &LockOptions) -> anyhow::Result<KnobGuard> {
        let mut originals = BTreeMap::new();
        let mut raw_originals = BTreeMap::new();
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
            let raw = read_raw(path)?;
            let now = abperf_measure::env::selected_choice(&raw);
            drop(open_knob(path, Access::CheckWritable).map_err(|e| {
                e.context(format!("knob {path}: cannot be written (are you root?)"))
            })?);
            // The claim names this holder to anyone who finds the knob busy, and records the
            // original for whoever comes after a kill -9.
            lock.claim((&now, &raw), &claim.owner, &claim.purpose, None, None)?;
            locks.insert(path.clone(), lock);
            originals.insert(path.clone(), now.clone());
            raw_originals.insert(path.clone(), raw);
            current.insert(path.clone(), now);
        }
        Ok(KnobGuard {
            originals,
            raw_originals,
            current,
            foreign: BTreeMap::new(),
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
                let orig = (
                    self.originals[path].as_str(),
                    self.raw_originals[path].as_str(),
                );
                lock.claim(orig, &c.owner, &c.purpose, c.experiment, c.store.as_deref())?;
            }
        }
        Ok(())
    }

    /// The values that will be restored, path -> value.
    pub fn originals(&self) -> &BTreeMap<String, String> {
        &self.originals
    }

    /// Set `path` to `value` unless it already holds it; read back and verify.
    pub fn apply(&mut self, path: &str, value: &str) -> anyhow::Result<()> {
        if self.current.get(path).map(String::as_str) == Some(value.trim()) {
            return Ok(());
        }
        self.restored = false;
        self.foreign.remove(path);
        // Record the original and the value beside the lock before the change: if abperf dies
        // from here on, the next abperf that locks this knob (or doctor) puts it back while it
        // still holds a value written here.
        if let Some(lock) = self.locks.get_mut(path) {
            if !lock.is_claimed() {
                let c = &self.claim;
                let orig = (
                    self.originals.get(path).map(String::as_str),
                    self.raw_originals.get(path).map(String::as_str),
                );
                let (Some(o), Some(r)) = orig else {
                    anyhow::bail!("internal: knob {path} is not held by the guard");
                };
                lock.claim(
                    (o, r),
                    &c.owner,
                    &c.purpose,
                    c.experiment,
                    c.store.as_deref(),
                )?;
            }
            lock.note_written(value)?;
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

    /// [`KnobGuard::keep_current`], keeping each knob's record (original and value written) on
    /// this machine for `doctor --restore` (see [`super::knob_lock::fix_record`]).
    pub fn keep_current_on_record(&mut self) -> anyhow::Result<()> {
        self.restored = true;
        for lock in self.locks.values_mut() {
            lock.keep_as_fix()?;
        }
        Ok(())
    }

    /// Read every held knob back (one read each, after a run): the knobs that no longer hold
    /// the value abperf set, as (path, value set, value seen). Another process changed them:
    /// they are left to it from now on (not restored at the end; the caller says so).
    pub fn moved(&mut self) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        for (path, set) in self.current.iter_mut() {
            if set.is_empty() || self.foreign.contains_key(path) {
                continue;
            }
            if let Ok(seen) = read_value(path)
                && seen != *set
            {
                out.push((path.clone(), set.clone(), seen.clone()));
                self.foreign.insert(path.clone(), set.clone());
                *set = seen;
            }
        }
        out
    }

    /// Whether every knob another process changed ([`KnobGuard::moved`]) holds abperf's value
    /// again (one read each); those that do are abperf's again.
    pub fn held_again(&mut self) -> bool {
        let back: Vec<String> = self
            .foreign
            .iter()
            .filter(|(path, want)| read_value(path).is_ok_and(|v| v == **want))
            .map(|(path, _)| path.clone())
            .collect();
        for path in back {
            if let Some(want) = self.foreign.remove(&path) {
                self.current.insert(path, want);
            }
        }
        self.foreign.is_empty()
    }

    /// Put every original back and verify it; returns one message per knob that failed.
    pub fn restore(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        for (path, orig) in &self.originals {
            if self.current.get(path) == Some(orig) || self.foreign.contains_key(path) {
                if let Some(l) = self.locks.get_mut(path) {
                    l.release_claim();
                }
                continue;
            }
            let raw = self.raw_originals.get(path).unwrap_or(orig);
            let result = restore_verified(path, orig, raw).map(|()| orig.clone());
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
            let mut g = KnobGuard::prepare(std::slice::from_ref(&path)).unwrap();
            assert_eq!(g.originals()[&path], "b");
            g.apply(&path, "zz").unwrap();
            assert_eq!(std::fs::read_to_string(&p).unwrap(), "zz");
        }
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "b");
    }

    #[test]
    fn a_plain_original_comes_back_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("knob");
        std::fs::write(&p, "32000\n").unwrap();
        let path = p.to_string_lossy().to_string();
        {
            let mut g = KnobGuard::prepare(std::slice::from_ref(&path)).unwrap();
            g.apply(&path, "1").unwrap();
        }
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "32000\n");
    }

    #[test]
    fn missing_knob_is_an_error_before_anything() {
        let e = KnobGuard::prepare(&["/nonexistent/knob".into()])
            .err()
            .unwrap();
        assert!(format!("{e:#}").contains("/nonexistent/knob: does not exist"));
    }
}
