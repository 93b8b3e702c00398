//! Noise control around the timed region (Ingo Molnar's recipe, seed 003), all untimed:
//!
//! - `--tune`: the doctor's safe settings, applied through the experiment's `KnobGuard` (so they
//!   are restored with the knobs at the end, on error, on signals and on panic) with their
//!   originals in the store (`apply_tune`, `settle_tune`).
//! - `--drop-caches`: sync, then write 3 to /proc/sys/vm/drop_caches before each run.
//! - `--pre-read DIR`: read every file under DIR before each run, so the page cache holds them.
//! - `--perturb-layout MIB`: page-cache ballast of a seeded random size up to MIB before each run,
//!   in a memfd (shmem: kept in memory, survives drop_caches like Ingo's ramfs copies). The new
//!   block is filled before the old one is freed, so the pages the workload and its files get
//!   differ from run to run. A memfd dies with abperf, so not even `kill -9` leaves ballast behind.
//! - `--tmpfs-copy DIR`: copy DIR once to a tmpfs mounted in a private mount namespace (invisible
//!   to the rest of the machine, gone with abperf even after `kill -9`) and run everything there
//!   (cwd); unmounted and removed at the end.
//!
//! Order before each run: user `--pre`, ballast, sync + drop caches, pre-read, the user's
//! `--rewarm` commands (run by the experiment loop), timed run.

use super::knobs::KnobGuard;
use super::signals;
use abperf_model::Setting;
use abperf_model::TuneRecord;
use abperf_store::Store;
use anyhow::Context;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Noise-control options of an experiment (stored in its design).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoiseConfig {
    /// `--tune`: the settings applied for the experiment (None: not asked for).
    #[serde(default)]
    pub tune: Option<Vec<Setting>>,
    #[serde(default)]
    pub drop_caches: bool,
    /// Absolute, or relative to the --tmpfs-copy copy.
    #[serde(default)]
    pub pre_read: Option<PathBuf>,
    #[serde(default)]
    pub perturb_layout_mib: Option<u64>,
    /// Absolute path.
    #[serde(default)]
    pub tmpfs_copy: Option<PathBuf>,
}

const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";
const PAGE: u64 = 4096;

/// Record each setting's original (from the guard, which must hold the path) in the store under
/// `session`, then write, read back and verify it through the guard. On error the caller's guard
/// restores whatever was applied; `settle` then marks the rows.
pub fn apply_tune(
    store: &mut Store,
    guard: &mut KnobGuard,
    settings: &[Setting],
    session: i64,
) -> anyhow::Result<()> {
    for s in settings {
        let original = guard
            .originals()
            .get(&s.path)
            .cloned()
            .with_context(|| format!("internal: {} is not held by the knob guard", s.path))?;
        let row = store.tune_record(session, &s.path, &original, &s.value)?;
        match guard.apply(&s.path, &s.value) {
            Ok(()) => store.tune_set_state(row, "applied")?,
            Err(e) => {
                store.tune_set_state(row, "failed")?;
                return Err(e.context("--tune"));
            }
        }
    }
    Ok(())
}

/// Mark every given outstanding row whose file holds its original again as restored; returns a
/// message for each row that is still not restored.
pub fn settle(store: &mut Store, rows: Vec<TuneRecord>) -> anyhow::Result<Vec<String>> {
    let mut left = Vec::new();
    for r in rows {
        match super::knobs::read_value(&r.path) {
            Ok(now) if now == r.original => store.tune_set_state(r.id, "restored")?,
            Ok(now) => left.push(format!(
                "{} holds '{now}', not its original '{}'; restore it with: abperf doctor --restore, \
                 or echo '{}' > {}",
                r.path, r.original, r.original, r.path
            )),
            Err(e) => left.push(format!("{e:#}")),
        }
    }
    Ok(left)
}

/// The per-run noise controls of one execution; everything is undone on drop.
pub struct Noise {
    drop_caches: bool,
    pre_read: Option<PathBuf>,
    ballast: Option<Ballast>,
    tmpfs: Option<TmpfsCopy>,
}

impl Noise {
    /// Check the options and set up what lasts the whole execution (the tmpfs copy, whose
    /// directory becomes the working directory). `seed` drives the ballast sizes.
    pub fn start(cfg: &NoiseConfig, seed: u64) -> anyhow::Result<Noise> {
        if cfg.drop_caches {
            std::fs::OpenOptions::new()
                .write(true)
                .open(DROP_CACHES)
                .with_context(|| {
                    format!("--drop-caches: {DROP_CACHES} cannot be written (are you root?)")
                })?;
        }
        let ballast = cfg
            .perturb_layout_mib
            .map(|mib| Ballast::new(mib, seed))
            .transpose()?;
        let tmpfs = cfg
            .tmpfs_copy
            .as_deref()
            .map(TmpfsCopy::create)
            .transpose()?;
        // A relative --pre-read is relative to the working directory: the copy, with --tmpfs-copy.
        if let Some(d) = &cfg.pre_read
            && !d.is_dir()
        {
            anyhow::bail!("--pre-read {}: not a directory", d.display());
        }
        if let Some(t) = &tmpfs {
            abperf_model::error::stderr_line(&format!(
                "abperf: --tmpfs-copy: running in {} (private tmpfs)",
                t.workdir.display()
            ));
        }
        Ok(Noise {
            drop_caches: cfg.drop_caches,
            pre_read: cfg.pre_read.clone(),
            ballast,
            tmpfs,
        })
    }

    /// Untimed work before run `seq`: ballast, sync + drop caches, pre-read.
    pub fn before_run(&mut self, seq: u32) -> anyhow::Result<()> {
        if let Some(b) = &mut self.ballast {
            b.perturb(seq)?;
        }
        if self.drop_caches {
            drop_caches()?;
        }
        if let Some(d) = &self.pre_read {
            pre_read(d)?;
        }
        Ok(())
    }

    /// Where the workload runs with --tmpfs-copy.
    pub fn workdir(&self) -> Option<&Path> {
        self.tmpfs.as_ref().map(|t| t.workdir.as_path())
    }

    /// Undo everything now (also done on drop); returns problems as messages.
    pub fn finish(&mut self) -> Vec<String> {
        self.ballast = None;
        match self.tmpfs.take() {
            Some(mut t) => t.remove(),
            None => Vec::new(),
        }
    }
}

impl Drop for Noise {
    fn drop(&mut self) {
        for e in self.finish() {
            abperf_model::error::stderr_line(&format!("abperf: error: {e}"));
        }
    }
}

/// sync, then drop page cache, dentries and inodes.
pub fn drop_caches() -> anyhow::Result<()> {
    // SAFETY: plain syscall.
    unsafe { libc::sync() };
    std::fs::write(DROP_CACHES, "3")
        .with_context(|| format!("--drop-caches: writing 3 to {DROP_CACHES} was refused"))
}

/// Read every regular file under `dir` (symlinks are not followed); returns bytes read.
pub fn pre_read(dir: &Path) -> anyhow::Result<u64> {
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let rd = std::fs::read_dir(&d)
            .with_context(|| format!("--pre-read: cannot list {}", d.display()))?;
        for e in rd {
            let e = e.with_context(|| format!("--pre-read: cannot list {}", d.display()))?;
            let ft = e.file_type()?;
            let p = e.path();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() {
                let mut f = std::fs::File::open(&p)
                    .with_context(|| format!("--pre-read: cannot open {}", p.display()))?;
                loop {
                    let n = f
                        .read(&mut buf)
                        .with_context(|| format!("--pre-read: cannot read {}", p.display()))?;
                    if n == 0 {
                        break;
                    }
                    total += n as u64;
                }
            }
        }
    }
    Ok(total)
}

/// Page-cache ballast in a memfd whose size changes every run.
struct Ballast {
    max_bytes: u64,
    seed: u64,
    fd: Option<OwnedFd>,
    size: u64,
}

/// The ballast size before run `seq`: uniform in [1 page, max], seeded, so a resumed experiment
/// gets the same sizes.
pub fn ballast_size(max_bytes: u64, seed: u64, seq: u32) -> u64 {
    let pages = (max_bytes / PAGE).max(1);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(
        seed ^ (u64::from(seq) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    rng.random_range(1..=pages) * PAGE
}

fn mem_available_bytes() -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    let l = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
    Some(l.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

impl Ballast {
    fn new(mib: u64, seed: u64) -> anyhow::Result<Ballast> {
        if mib == 0 {
            return Err(abperf_model::error::usage(
                "--perturb-layout 0: expected a number of MiB of at least 1",
            ));
        }
        let max_bytes = mib.checked_mul(1 << 20).ok_or_else(|| {
            abperf_model::error::usage(format!("--perturb-layout {mib}: too large"))
        })?;
        // Two blocks exist for a moment (new before old is freed).
        if let Some(avail) = mem_available_bytes()
            && max_bytes.saturating_mul(2) > avail / 2
        {
            return Err(abperf_model::error::usage(format!(
                "--perturb-layout {mib}: twice the ballast must fit in half the available memory \
                 ({} MiB available); use at most {} MiB",
                avail >> 20,
                (avail / 4) >> 20
            )));
        }
        Ok(Ballast {
            max_bytes,
            seed,
            fd: None,
            size: 0,
        })
    }

    fn perturb(&mut self, seq: u32) -> anyhow::Result<()> {
        let size = ballast_size(self.max_bytes, self.seed, seq);
        let name = CString::new("abperf-ballast").expect("no NUL");
        // SAFETY: name is a valid C string; the fd is owned right away.
        let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error())
                .context("--perturb-layout: memfd_create failed");
        }
        // SAFETY: raw is a fresh fd owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: plain syscall on our fd; allocates the shmem pages.
        if unsafe { libc::fallocate(fd.as_raw_fd(), 0, 0, size as libc::off_t) } != 0 {
            return Err(std::io::Error::last_os_error()).with_context(|| {
                format!(
                    "--perturb-layout: cannot allocate {} KiB of ballast",
                    size / 1024
                )
            });
        }
        // New block in place; now free the old one.
        self.fd = Some(fd);
        self.size = size;
        Ok(())
    }
}

/// DIR copied into a tmpfs in a private mount namespace; the process works in the copy.
struct TmpfsCopy {
    mountpoint: PathBuf,
    workdir: PathBuf,
    old_cwd: PathBuf,
    mounted: bool,
}

fn cpath(p: &Path) -> anyhow::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .with_context(|| format!("path {} contains a NUL byte", p.display()))
}

fn os_err(what: String) -> anyhow::Error {
    anyhow::Error::new(std::io::Error::last_os_error()).context(what)
}

static UNSHARE: std::sync::Mutex<bool> = std::sync::Mutex::new(false);

/// Give this thread (the one that spawns workloads) its own mount namespace with private
/// propagation, once: mounts made there are invisible outside and vanish with the process.
fn private_mount_namespace() -> anyhow::Result<()> {
    let mut done = UNSHARE.lock().unwrap_or_else(|e| e.into_inner());
    if *done {
        return Ok(());
    }
    // SAFETY: plain syscalls; only this thread's fs/mount namespace changes.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return Err(os_err(
                "--tmpfs-copy: cannot create a private mount namespace (unshare; are you root?)"
                    .into(),
            ));
        }
        let root = CString::new("/").expect("no NUL");
        if libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(os_err(
                "--tmpfs-copy: cannot make the mount namespace private".into(),
            ));
        }
    }
    *done = true;
    Ok(())
}

impl TmpfsCopy {
    fn create(src: &Path) -> anyhow::Result<TmpfsCopy> {
        let meta = std::fs::metadata(src)
            .with_context(|| format!("--tmpfs-copy {}: does not exist", src.display()))?;
        if !meta.is_dir() {
            anyhow::bail!("--tmpfs-copy {}: not a directory", src.display());
        }
        let old_cwd = std::env::current_dir().context("--tmpfs-copy: no working directory")?;
        private_mount_namespace()?;
        let base = std::env::temp_dir();
        let mut mountpoint = PathBuf::new();
        for i in 0..1000 {
            let p = base.join(format!("abperf-tmpfs-{}-{i}", std::process::id()));
            if std::fs::create_dir(&p).is_ok() {
                mountpoint = p;
                break;
            }
        }
        if mountpoint.as_os_str().is_empty() {
            anyhow::bail!(
                "--tmpfs-copy: cannot create a mount point in {}",
                base.display()
            );
        }
        let mut t = TmpfsCopy {
            workdir: mountpoint.join(src.file_name().unwrap_or_else(|| "copy".as_ref())),
            mountpoint,
            old_cwd,
            mounted: false,
        };
        let mp = cpath(&t.mountpoint)?;
        let fstype = CString::new("tmpfs").expect("no NUL");
        let opts = CString::new("mode=0755").expect("no NUL");
        // SAFETY: valid C strings; mounting on our own fresh directory.
        let rc = unsafe {
            libc::mount(
                fstype.as_ptr(),
                mp.as_ptr(),
                fstype.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                opts.as_ptr().cast(),
            )
        };
        if rc != 0 {
            let e = os_err(format!(
                "--tmpfs-copy: cannot mount a tmpfs on {}",
                t.mountpoint.display()
            ));
            t.remove();
            return Err(e);
        }
        t.mounted = true;
        copy_tree(src, &t.workdir)
            .and_then(|_| {
                std::env::set_current_dir(&t.workdir)
                    .with_context(|| format!("--tmpfs-copy: cannot enter {}", t.workdir.display()))
            })
            .with_context(|| format!("--tmpfs-copy {}", src.display()))?;
        Ok(t)
    }

    fn remove(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        if let Err(e) = std::env::set_current_dir(&self.old_cwd) {
            errors.push(format!(
                "--tmpfs-copy: cannot go back to {}: {e}",
                self.old_cwd.display()
            ));
            let _ = std::env::set_current_dir("/");
        }
        if self.mounted {
            match cpath(&self.mountpoint) {
                Ok(mp) => {
                    // SAFETY: plain syscalls on our own mount. A lingering process of the
                    // workload may keep it busy: then detach it lazily.
                    let ok = unsafe {
                        libc::umount2(mp.as_ptr(), 0) == 0
                            || libc::umount2(mp.as_ptr(), libc::MNT_DETACH) == 0
                    };
                    if ok {
                        self.mounted = false;
                    } else {
                        errors.push(format!(
                            "--tmpfs-copy: cannot unmount {}: {}",
                            self.mountpoint.display(),
                            std::io::Error::last_os_error()
                        ));
                    }
                }
                Err(e) => errors.push(format!("{e:#}")),
            }
        }
        if !self.mounted
            && self.mountpoint.exists()
            && let Err(e) = std::fs::remove_dir(&self.mountpoint)
        {
            errors.push(format!(
                "--tmpfs-copy: cannot remove {}: {e}",
                self.mountpoint.display()
            ));
        }
        errors
    }
}

impl Drop for TmpfsCopy {
    fn drop(&mut self) {
        for e in self.remove() {
            abperf_model::error::stderr_line(&format!("abperf: error: {e}"));
        }
    }
}

/// Copy a directory tree: directories, regular files (with permissions) and symlinks (as
/// links). Sockets, FIFOs and devices are skipped with a warning. Stops on a signal.
pub fn copy_tree(src: &Path, dst: &Path) -> anyhow::Result<u64> {
    use std::os::unix::fs::PermissionsExt;
    let mut files = 0u64;
    std::fs::create_dir(dst).with_context(|| format!("cannot create {}", dst.display()))?;
    let mut stack = vec![(src.to_path_buf(), dst.to_path_buf())];
    let mut dirs = Vec::new();
    while let Some((s, d)) = stack.pop() {
        if let Some(sig) = signals::received() {
            anyhow::bail!("interrupted by {} while copying", signals::name(sig));
        }
        let rd = std::fs::read_dir(&s).with_context(|| format!("cannot list {}", s.display()))?;
        for e in rd {
            let e = e.with_context(|| format!("cannot list {}", s.display()))?;
            let ft = e.file_type()?;
            let from = e.path();
            let to = d.join(e.file_name());
            if ft.is_dir() {
                std::fs::create_dir(&to)
                    .with_context(|| format!("cannot create {}", to.display()))?;
                stack.push((from, to));
            } else if ft.is_file() {
                std::fs::copy(&from, &to).with_context(|| {
                    format!(
                        "cannot copy {} to {} (tmpfs full?)",
                        from.display(),
                        to.display()
                    )
                })?;
                files += 1;
            } else if ft.is_symlink() {
                let target = std::fs::read_link(&from)?;
                std::os::unix::fs::symlink(&target, &to)
                    .with_context(|| format!("cannot create link {}", to.display()))?;
            } else {
                abperf_model::error::stderr_line(&format!(
                    "abperf: --tmpfs-copy: skipping {} (not a file, directory or link)",
                    from.display()
                ));
            }
        }
        dirs.push((s, d));
    }
    // Directory permissions last, so read-only directories could be filled first.
    for (s, d) in dirs.into_iter().rev() {
        let mode = std::fs::metadata(&s)?.permissions().mode();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tune_records_originals_applies_and_settles() {
        let d = tempfile::tempdir().unwrap();
        let mut store = Store::open(&d.path().join("s.db")).unwrap();
        let knob = d.path().join("knob");
        std::fs::write(&knob, "always [madvise] never\n").unwrap();
        let path = knob.to_string_lossy().to_string();
        let settings = vec![Setting {
            path: path.clone(),
            value: "never".into(),
            current: "madvise".into(),
        }];
        let mut guard = KnobGuard::prepare(std::slice::from_ref(&path)).unwrap();
        let session = store
            .tune_session(abperf_model::tune::SOURCE_RUN, Some(9))
            .unwrap();
        apply_tune(&mut store, &mut guard, &settings, session).unwrap();
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "never");
        let rows = store.tune_outstanding(None, Some(9)).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].original.as_str(), rows[0].state.as_str()),
            ("madvise", "applied")
        );
        // Not restored yet: settle leaves it outstanding and says why.
        let left = settle(&mut store, rows).unwrap();
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(guard.restore().is_empty());
        assert_eq!(std::fs::read_to_string(&knob).unwrap(), "madvise");
        let rows = store.tune_outstanding(None, Some(9)).unwrap();
        assert!(settle(&mut store, rows).unwrap().is_empty());
        assert!(store.tune_outstanding(None, None).unwrap().is_empty());
    }

    #[test]
    fn ballast_sizes_are_seeded_bounded_and_vary() {
        let max = 8 << 20;
        let a: Vec<u64> = (0..20).map(|i| ballast_size(max, 42, i)).collect();
        let b: Vec<u64> = (0..20).map(|i| ballast_size(max, 42, i)).collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|&s| s >= PAGE && s <= max && s % PAGE == 0));
        let mut d = a.clone();
        d.sort();
        d.dedup();
        assert!(d.len() > 10, "{a:?}");
        assert_ne!(
            a,
            (0..20)
                .map(|i| ballast_size(max, 43, i))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn ballast_is_allocated_and_replaced() {
        let mut b = Ballast::new(4, 1).unwrap();
        b.perturb(0).unwrap();
        let fd = b.fd.as_ref().unwrap().as_raw_fd();
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::fstat(fd, &mut st) }, 0);
        assert_eq!(st.st_size as u64, b.size);
        // Blocks are really allocated (st_blocks in 512-byte units).
        assert!(st.st_blocks as u64 * 512 >= b.size);
        b.perturb(1).unwrap();
        assert_eq!(b.size, ballast_size(4 << 20, 1, 1));
        assert!(Ballast::new(0, 1).is_err());
        assert!(Ballast::new(1 << 40, 1).is_err());
    }

    #[test]
    fn copy_tree_copies_files_links_and_modes() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        std::fs::create_dir_all(src.join("a/b")).unwrap();
        std::fs::write(src.join("a/b/f"), "hello").unwrap();
        std::fs::write(src.join("x.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(src.join("x.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("a/b/f", src.join("link")).unwrap();
        let dst = d.path().join("dst");
        assert_eq!(copy_tree(&src, &dst).unwrap(), 2);
        assert_eq!(std::fs::read_to_string(dst.join("a/b/f")).unwrap(), "hello");
        assert_eq!(
            std::fs::read_link(dst.join("link")).unwrap(),
            Path::new("a/b/f")
        );
        let m = std::fs::metadata(dst.join("x.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(m & 0o777, 0o755);
        assert_eq!(pre_read(&src).unwrap(), 5 + 10);
    }
}
