//! Knob ownership across processes: one lock per knob, held for as long as a process may change
//! the knob (a whole experiment), and a claim beside it saying what the knob held before.
//!
//! - The lock is `flock(2)` on `DIR/<key>.lock`, where `key` is a hash of the knob's canonical
//!   path, so `/sys/...` and a symlink to it are one knob. The kernel drops it when the holder
//!   dies, even by `kill -9`.
//! - The claim is `DIR/<key>.json` (a [`KnobClaim`]: path, original, owner, experiment, store),
//!   written before the knob is first changed, updated before each new value is written (the
//!   claim lists every value the holder wrote), and removed once the original is back and
//!   verified. A claim found by the next holder is therefore a knob left changed by a process that
//!   died: the next abperf that locks that knob (any experiment, any store, `doctor`) puts the
//!   original back first and says so, but only while the knob holds a value the dead holder
//!   wrote; another value was set by someone else since and stays (both are named). The values
//!   to restore come only from these claims on this machine, never from a store.
//! - `DIR` is `/run/abperf/knobs` (root's; `/run` is cleared at boot, as are sysfs values), or,
//!   when that cannot be written, `$XDG_RUNTIME_DIR/abperf/knobs` or `/tmp/abperf-UID/knobs`;
//!   `$ABPERF_LOCK_DIR` overrides it. A directory or claim owned by another user is not trusted
//!   (a claim says what to write to a knob).

use super::knob_file;
use super::signals;
use abperf_model::{KnobClaim, Liveness, Owner};
use anyhow::Context;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How a lock is taken.
#[derive(Debug, Clone)]
pub struct LockOptions {
    /// Wait for a busy knob (`run --wait`) instead of failing at once.
    pub wait: bool,
    /// What the holder does, for messages ("run", "doctor --fix").
    pub purpose: String,
}

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            wait: false,
            purpose: "run".into(),
        }
    }
}

/// The directory of locks and claims (created if needed), checked to be ours.
pub fn lock_dir() -> anyhow::Result<PathBuf> {
    if let Some(d) = std::env::var_os("ABPERF_LOCK_DIR").filter(|d| !d.is_empty()) {
        let d = PathBuf::from(d);
        return usable_dir(&d)
            .map(|_| d.clone())
            .with_context(|| format!("$ABPERF_LOCK_DIR {}", d.display()));
    }
    let mut tried = Vec::new();
    for d in candidate_dirs() {
        match usable_dir(&d) {
            Ok(()) => return Ok(d),
            Err(e) => tried.push(format!("{}: {e:#}", d.display())),
        }
    }
    anyhow::bail!("no directory for knob locks: {}", tried.join("; "))
}

/// Where locks may live, best first.
pub fn candidate_dirs() -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from("/run/abperf/knobs")];
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        v.push(PathBuf::from(x).join("abperf/knobs"));
    }
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    v.push(std::env::temp_dir().join(format!("abperf-{uid}/knobs")));
    v
}

/// Create `d` (and parents) and check that we can write it and that nobody else controls it.
fn usable_dir(d: &Path) -> anyhow::Result<()> {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let private = uid != 0;
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true).mode(if private { 0o700 } else { 0o755 });
    b.create(d).context("cannot create it")?;
    for dir in [d, d.parent().unwrap_or(d)] {
        let m = std::fs::symlink_metadata(dir).context("cannot stat it")?;
        if !m.is_dir()
            || (m.uid() != uid && m.uid() != 0)
            || (m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0)
        {
            anyhow::bail!(
                "{} is not a directory owned by uid {uid} or root and closed to others",
                dir.display()
            );
        }
    }
    let probe = d.join(format!(".probe-{}", std::process::id()));
    File::create(&probe).context("cannot be written")?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// The key of a knob: a hash of its canonical path.
pub fn key(canonical: &Path) -> String {
    let h = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    h[..12].iter().map(|b| format!("{b:02x}")).collect()
}

/// A held knob lock (released on drop; the claim file stays if the knob was not put back).
pub struct KnobLock {
    /// The knob as named.
    pub path: String,
    lock: File,
    lock_path: PathBuf,
    claim_path: PathBuf,
    /// The claim this holder wrote beside the lock (None: none on disk).
    record: Option<KnobClaim>,
}

fn flock(f: &File, op: i32) -> std::io::Result<()> {
    // SAFETY: plain syscall on an open fd.
    if unsafe { libc::flock(f.as_raw_fd(), op) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn open_lock_file(p: &Path) -> anyhow::Result<File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(p)
        .with_context(|| format!("cannot open the knob lock {}", p.display()))?;
    let m = f.metadata()?;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if !m.is_file() || (m.uid() != uid && m.uid() != 0) {
        anyhow::bail!(
            "knob lock {} is not a regular file of uid {uid} or root",
            p.display()
        );
    }
    Ok(f)
}

/// Read a claim file; `None` when there is none. A claim owned by another user is ignored.
pub fn read_claim(p: &Path) -> anyhow::Result<Option<KnobClaim>> {
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(p)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", p.display())),
    };
    let m = f.metadata()?;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if !m.is_file() || (m.uid() != uid && m.uid() != 0) || m.len() > 64 * 1024 {
        anyhow::bail!(
            "{} is not a claim abperf wrote (owner or size)",
            p.display()
        );
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(f, 64 * 1024), &mut text)
        .with_context(|| format!("cannot read {}", p.display()))?;
    serde_json::from_str(&text)
        .map(Some)
        .with_context(|| format!("{}: not a knob claim", p.display()))
}

fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (y, m, d, hh, mm, ss) = abperf_model::time::utc_fields(secs);
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

/// Try to take the lock of `lock_path` without blocking: `Ok(None)` when another process holds
/// it. Lock files are removed by a holder that leaves no claim behind, so after locking the file
/// is checked to still be the one at `lock_path` (else it was removed meanwhile: try again).
fn try_lock(lock_path: &Path) -> anyhow::Result<Option<File>> {
    loop {
        let f = open_lock_file(lock_path)?;
        match flock(&f, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => return Ok(None),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot lock {}", lock_path.display()));
            }
        }
        let held = f.metadata()?;
        match std::fs::symlink_metadata(lock_path) {
            Ok(m) if m.dev() == held.dev() && m.ino() == held.ino() => return Ok(Some(f)),
            _ => continue,
        }
    }
}

impl KnobLock {
    /// Lock knob `path` (which must exist). A busy knob fails at once naming its holder, or with
    /// `opts.wait` is waited for (a signal stops the wait). Once locked, a claim left by a holder
    /// that died is settled: the knob gets its original back (said on stderr).
    pub fn acquire(path: &str, opts: &LockOptions) -> anyhow::Result<KnobLock> {
        let canonical =
            std::fs::canonicalize(path).with_context(|| format!("knob {path}: does not exist"))?;
        let dir = lock_dir()?;
        let k = key(&canonical);
        let lock_path = dir.join(format!("{k}.lock"));
        let claim_path = dir.join(format!("{k}.json"));
        let mut announced = false;
        let started = std::time::Instant::now();
        let lock = loop {
            if let Some(f) = try_lock(&lock_path)? {
                break f;
            }
            let claim = read_claim(&claim_path).ok().flatten();
            // A holder without a claim is about to write one, or is doctor looking for a
            // moment: give it a second before calling the knob busy.
            if claim.is_none() && !opts.wait && started.elapsed() < Duration::from_secs(1) {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            let holder = match claim {
                Some(c) => c.holder(),
                None => "another abperf process".to_string(),
            };
            if !opts.wait {
                anyhow::bail!(
                    "knob {path} is in use by {holder}; wait for it with --wait, or stop that \
                     experiment first"
                );
            }
            if !announced {
                abperf_model::error::stderr_line(&format!(
                    "abperf: knob {path} is in use by {holder}; waiting (--wait)"
                ));
                announced = true;
            }
            if let Some(sig) = signals::received() {
                anyhow::bail!(
                    "interrupted by {} while waiting for knob {path}",
                    signals::name(sig)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut l = KnobLock {
            path: path.to_string(),
            lock,
            lock_path,
            claim_path,
            record: None,
        };
        l.remove_stale_temp_files();
        l.settle_leftover()?;
        Ok(l)
    }

    /// With the lock held: a claim on disk was left by a holder that died. Put its original
    /// back (when the machine has not rebooted since) and remove the claim.
    fn settle_leftover(&mut self) -> anyhow::Result<()> {
        let claim = match read_claim(&self.claim_path) {
            Ok(Some(c)) => c,
            Ok(None) => return Ok(()),
            Err(e) => {
                abperf_model::error::stderr_line(&format!(
                    "abperf: warning: knob {}: {e:#}; ignoring it",
                    self.path
                ));
                let _ = std::fs::remove_file(&self.claim_path);
                return Ok(());
            }
        };
        if let Some(m) = restore_from_claim(&claim)? {
            abperf_model::error::stderr_line(&format!("abperf: {m}"));
        }
        let _ = std::fs::remove_file(&self.claim_path);
        Ok(())
    }

    /// A claim's temporary file left by a holder killed while writing it (`<key>.tmp<pid>`):
    /// only the lock holder writes them, so with the lock held any is stale. Removed by name
    /// (a symlink is removed itself, never followed).
    fn remove_stale_temp_files(&self) {
        let (Some(dir), Some(stem)) = (self.claim_path.parent(), self.claim_path.file_stem())
        else {
            return;
        };
        let prefix = format!("{}.tmp", stem.to_string_lossy());
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    /// Record, before the knob is first changed, what it holds now (`original`, and its whole
    /// text `original_raw`) and who is changing it. Written atomically (a new file renamed over
    /// the old). The values this holder writes are added by [`KnobLock::note_written`].
    pub fn claim(
        &mut self,
        original: (&str, &str),
        owner: &Owner,
        purpose: &str,
        experiment: Option<i64>,
        store: Option<&Path>,
    ) -> anyhow::Result<()> {
        let written = self.record.take().map(|r| r.written).unwrap_or_default();
        let c = KnobClaim {
            path: self.path.clone(),
            original: original.0.to_string(),
            original_raw: Some(original.1.to_string()),
            written,
            owner: owner.clone(),
            experiment,
            store: store.map(|s| s.display().to_string()),
            purpose: purpose.to_string(),
            since: now_rfc3339(),
        };
        self.write_record(c)
    }

    /// Add `value` to the values this holder wrote, before it is written: the next abperf puts
    /// the original back only while the knob holds one of them.
    pub fn note_written(&mut self, value: &str) -> anyhow::Result<()> {
        let Some(mut c) = self.record.clone() else {
            anyhow::bail!(
                "internal: knob {} is changed before it is claimed",
                self.path
            );
        };
        let value = value.trim();
        if c.written.iter().any(|w| w == value) {
            return Ok(());
        }
        c.written.push(value.to_string());
        self.write_record(c)
    }

    fn write_record(&mut self, c: KnobClaim) -> anyhow::Result<()> {
        let tmp = self
            .claim_path
            .with_extension(format!("tmp{}", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o644)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&tmp)?;
            f.write_all(serde_json::to_string(&c).expect("plain data").as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.claim_path)
        };
        let _ = std::fs::remove_file(&tmp);
        write().with_context(|| {
            format!(
                "knob {}: cannot record its original in {}",
                self.path,
                self.claim_path.display()
            )
        })?;
        self.record = Some(c);
        Ok(())
    }

    /// The knob holds its original again (verified): remove the claim.
    pub fn release_claim(&mut self) {
        if self.record.take().is_some() {
            let _ = std::fs::remove_file(&self.claim_path);
        }
    }

    /// Keep this holder's claim as the record of a change left on purpose (`doctor --fix`):
    /// renamed to `<key>.fix`, which no lock holder settles; `doctor --restore` reads it with
    /// [`fix_record`] and puts the original back while the knob holds the value written.
    pub fn keep_as_fix(&mut self) -> anyhow::Result<()> {
        if self.record.take().is_some() {
            std::fs::rename(&self.claim_path, self.claim_path.with_extension("fix"))
                .with_context(|| format!("knob {}: cannot keep its record", self.path))?;
        }
        Ok(())
    }

    /// Whether a claim is on record for this knob (it may have been changed).
    pub fn is_claimed(&self) -> bool {
        self.record.is_some()
    }
}

impl Drop for KnobLock {
    fn drop(&mut self) {
        // Nothing left to settle: remove the lock file (still holding it, so whoever opened it
        // meanwhile sees it gone and opens the new one), then unlock.
        if !self.claim_path.exists() {
            let _ = std::fs::remove_file(&self.lock_path);
        }
        let _ = flock(&self.lock, libc::LOCK_UN);
    }
}

/// Put `claim`'s original back if the knob holds a value the holder wrote; returns what was
/// done, in words (None: nothing to do). A knob holding anything else was set by someone else
/// since (an administrator, on purpose): it is left as it is and both values are named. Caller
/// holds the knob's lock and removes the claim after.
pub fn restore_from_claim(claim: &KnobClaim) -> anyhow::Result<Option<String>> {
    let boot = abperf_measure::process::boot_id();
    if claim.owner.boot_id != boot {
        return Ok(Some(format!(
            "knob {}: the record of {} is from before the last reboot; the kernel has reset \
             the knob since, nothing restored",
            claim.path,
            claim.holder()
        )));
    }
    let now = knob_file::read_value(&claim.path)?;
    if now == claim.original {
        return Ok(None);
    }
    if !claim.written.contains(&now) {
        let wrote = if claim.written.is_empty() {
            "nothing on record".to_string()
        } else {
            format!("'{}'", claim.written.join("', '"))
        };
        return Ok(Some(format!(
            "knob {} holds '{now}', which {} did not write there (it wrote {wrote}): someone \
             set it since; left as it is, not restored to the original '{}' (the record is \
             dropped)",
            claim.path,
            claim.holder(),
            claim.original
        )));
    }
    let raw = claim.original_raw.as_deref().unwrap_or(&claim.original);
    knob_file::restore_verified(&claim.path, &claim.original, raw)?;
    Ok(Some(format!(
        "knob {} held '{now}', left changed by {} which died without restoring it; \
         restored its original '{}' (verified)",
        claim.path,
        claim.holder(),
        claim.original
    )))
}

/// The record `doctor --fix` left of knob `path` on this machine (see
/// [`KnobLock::keep_as_fix`]), and the file holding it; `None` when there is none.
pub fn fix_record(path: &str) -> anyhow::Result<Option<(KnobClaim, PathBuf)>> {
    let canonical =
        std::fs::canonicalize(path).with_context(|| format!("knob {path}: does not exist"))?;
    let file = lock_dir()?.join(format!("{}.fix", key(&canonical)));
    Ok(read_claim(&file)?.map(|c| (c, file)))
}

/// A claim on disk, as `doctor` sees it.
#[derive(Debug, Clone)]
pub struct Leftover {
    pub claim: KnobClaim,
    /// The claim file.
    pub file: PathBuf,
    /// The holder still holds the lock (a live experiment).
    pub held: bool,
    pub liveness: Liveness,
}

/// The pid holding the flock of `lock_path`, from /proc/locks (looking, unlike a probing
/// flock, never makes a process taking the lock at that moment find it busy).
pub fn lock_holder(lock_path: &Path) -> Option<i32> {
    let m = std::fs::symlink_metadata(lock_path).ok()?;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let dev = m.dev();
    // SAFETY: major/minor are pure arithmetic on a dev_t.
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    let want = format!("{maj:02x}:{min:02x}:{}", m.ino());
    locks.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF" (blocked waiters have "->").
        if f.get(1) != Some(&"FLOCK") || f.contains(&"->") {
            return None;
        }
        (f.get(5) == Some(&want.as_str()))
            .then(|| f.get(4).and_then(|p| p.parse().ok()))
            .flatten()
    })
}

/// Every claim in the lock directory, with whether its lock is held now.
pub fn leftovers() -> anyhow::Result<Vec<Leftover>> {
    let dir = lock_dir()?;
    let mut out = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    for p in names {
        let Ok(Some(claim)) = read_claim(&p) else {
            continue;
        };
        let held = lock_holder(&p.with_extension("lock")).is_some();
        let liveness = abperf_measure::process::liveness(&claim.owner);
        out.push(Leftover {
            claim,
            file: p.clone(),
            held,
            liveness,
        });
    }
    Ok(out)
}

/// Settle every claim whose holder is gone (lock free): restore the originals. Returns one
/// message per knob restored or that could not be (errors are `Err` strings).
pub fn settle_leftovers() -> anyhow::Result<Vec<Result<String, String>>> {
    let mut out = Vec::new();
    for l in leftovers()? {
        if l.held {
            continue;
        }
        let opts = LockOptions {
            wait: false,
            purpose: "doctor".into(),
        };
        // Taking the lock settles the claim (restores and removes it).
        if std::fs::canonicalize(&l.claim.path).is_err() {
            // The knob is gone (a file removed, a module unloaded): nothing to restore.
            let _ = std::fs::remove_file(&l.file);
            continue;
        }
        match restore_from_claim_locked(&l.claim.path, &opts) {
            Ok(Some(m)) => out.push(Ok(m)),
            Ok(None) => {}
            Err(e) => out.push(Err(format!(
                "knob {}: {e:#}; it should hold '{}': echo '{}' > {}",
                l.claim.path, l.claim.original, l.claim.original, l.claim.path
            ))),
        }
    }
    Ok(out)
}

/// Lock `path` and settle its claim, returning what was done (the lock is released after).
fn restore_from_claim_locked(path: &str, opts: &LockOptions) -> anyhow::Result<Option<String>> {
    let lock = KnobLock::acquire_quiet(path, opts)?;
    let done = match read_claim(&lock.claim_path)? {
        Some(c) => restore_from_claim(&c)?,
        None => None,
    };
    let _ = std::fs::remove_file(&lock.claim_path);
    drop(lock);
    Ok(done)
}

impl KnobLock {
    /// Lock without settling a claim (the caller does), failing at once when busy.
    fn acquire_quiet(path: &str, opts: &LockOptions) -> anyhow::Result<KnobLock> {
        let canonical = std::fs::canonicalize(path)?;
        let dir = lock_dir()?;
        let k = key(&canonical);
        let lock_path = dir.join(format!("{k}.lock"));
        let lock = try_lock(&lock_path)?
            .with_context(|| format!("knob {path} is in use ({})", opts.purpose))?;
        Ok(KnobLock {
            path: path.to_string(),
            lock,
            lock_path,
            claim_path: dir.join(format!("{k}.json")),
            record: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339() {
        let s = now_rfc3339();
        assert_eq!(s.len(), 20, "{s}");
        assert!(s.starts_with("20") && s.ends_with('Z'), "{s}");
    }

    #[test]
    fn key_is_stable_and_short() {
        assert_eq!(key(Path::new("/a")), key(Path::new("/a")));
        assert_ne!(key(Path::new("/a")), key(Path::new("/b")));
        assert_eq!(key(Path::new("/a")).len(), 24);
    }
}
