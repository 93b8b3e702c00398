//! Small system helpers shared by the workloads: CPUs, pinning, signals, waiting for a child,
//! the cache directory, /proc readers.

use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

pub use abperf_measure::affinity::allowed_cpus;

/// Pin the calling thread to one CPU.
pub fn pin(cpu: usize) -> Result<()> {
    abperf_measure::affinity::pin_current(cpu)
        .with_context(|| format!("pinning a thread to CPU {cpu}"))
}

pub const PAGE: usize = 4096;

/// The system page size (the workloads assume 4 KiB pages and check it).
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// Where workloads keep data between runs: `$ABPERF_CACHE_DIR`, else `$XDG_CACHE_HOME/abperf`,
/// else `~/.cache/abperf`, else `/var/tmp/abperf`.
pub fn cache_dir() -> PathBuf {
    abperf_model::cache_dir::from_env().unwrap_or_else(|| PathBuf::from("/var/tmp/abperf"))
}

/// SIGINT, SIGTERM and SIGHUP caught into a flag while this value lives (handlers removed on
/// drop). The workload polls [`Signals::received`] and cleans up before exiting 128+N.
pub struct Signals {
    last: Arc<AtomicUsize>,
    ids: Vec<signal_hook::SigId>,
}

impl Signals {
    pub fn catch() -> Result<Signals> {
        let last = Arc::new(AtomicUsize::new(0));
        let mut ids = Vec::new();
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            let l = last.clone();
            // SAFETY: the handler only stores to an atomic (async-signal-safe).
            let id = unsafe {
                signal_hook::low_level::register(sig, move || {
                    l.store(sig as usize, Ordering::SeqCst)
                })
            }
            .with_context(|| format!("installing a handler for signal {sig}"))?;
            ids.push(id);
        }
        Ok(Signals { last, ids })
    }

    pub fn received(&self) -> Option<i32> {
        match self.last.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s as i32),
        }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// How a waited-for child ended.
pub struct Exit {
    /// The raw wait status.
    pub status: i32,
    pub rusage: libc::rusage,
    /// The signal we caught while waiting (the child was then stopped with `stop_signal`).
    pub interrupted: Option<i32>,
}

impl Exit {
    pub fn success(&self) -> bool {
        libc::WIFEXITED(self.status) && libc::WEXITSTATUS(self.status) == 0
    }

    pub fn describe(&self) -> String {
        if libc::WIFEXITED(self.status) {
            format!("exit status {}", libc::WEXITSTATUS(self.status))
        } else if libc::WIFSIGNALED(self.status) {
            format!("killed by signal {}", libc::WTERMSIG(self.status))
        } else {
            format!("wait status {:#x}", self.status)
        }
    }

    pub fn killed_by(&self) -> Option<i32> {
        libc::WIFSIGNALED(self.status).then(|| libc::WTERMSIG(self.status))
    }
}

/// Wait for child `pid` (ours, not yet reaped) and reap it with its rusage (which includes its own
/// reaped descendants). When one of `signals` arrives meanwhile, send `stop_signal` to the child
/// (SIGKILL after 5 s more), reap it, and report the signal in `Exit::interrupted`.
pub fn wait_child(pid: libc::pid_t, signals: &Signals, stop_signal: i32) -> Result<Exit> {
    // SAFETY: plain syscall; pid is our unreaped child, so it cannot have been reused.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if pidfd < 0 {
        return Err(std::io::Error::last_os_error()).context("pidfd_open of the workload child");
    }
    let mut interrupted = None;
    let mut deadline: Option<std::time::Instant> = None;
    loop {
        if interrupted.is_none()
            && let Some(s) = signals.received()
        {
            interrupted = Some(s);
            // SAFETY: as above.
            unsafe { libc::kill(pid, stop_signal) };
            deadline = Some(std::time::Instant::now() + std::time::Duration::from_secs(5));
        }
        if let Some(d) = deadline
            && std::time::Instant::now() > d
        {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            deadline = None;
        }
        let mut pfd = libc::pollfd {
            fd: pidfd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd. A signal makes poll return EINTR (never restarted); the
        // 100 ms timeout covers a signal that lands between the check above and the call.
        let r = unsafe { libc::poll(&mut pfd, 1, 100) };
        if r > 0 {
            break;
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                // SAFETY: closing our own fd.
                unsafe { libc::close(pidfd) };
                return Err(e).context("waiting for the workload child");
            }
        }
    }
    // SAFETY: closing our own fd.
    unsafe { libc::close(pidfd) };
    let mut status = 0;
    // SAFETY: rusage is plain data.
    let mut rusage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers; pid is our child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut rusage) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).context("reaping the workload child");
        }
    }
    if interrupted.is_none() {
        interrupted = signals.received();
    }
    Ok(Exit {
        status,
        rusage,
        interrupted,
    })
}

/// Nanoseconds of a timeval.
pub fn tv_ns(t: libc::timeval) -> u64 {
    t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000
}

/// This process's minor and major fault counts.
pub fn self_faults() -> (u64, u64) {
    // SAFETY: rusage is plain data.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    (ru.ru_minflt as u64, ru.ru_majflt as u64)
}

/// Start time of a process (clock ticks since boot, /proc/PID/stat field 22), None when the
/// process does not exist or has exited and waits to be reaped (a zombie: a killed run's
/// workload, orphaned, is dead before init gets to reap it).
pub fn process_start(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the command name (field 2) may hold spaces and parentheses: split after the last ')'
    let mut fields = s[s.rfind(')')? + 1..].split_whitespace();
    if matches!(fields.next(), Some("Z" | "X" | "x")) {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

/// `key value` lines (/proc/vmstat, memory.stat) into a map.
pub fn parse_kv(text: &str) -> std::collections::BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let k = it.next()?;
            let v = it.next()?.parse().ok()?;
            Some((k.to_string(), v))
        })
        .collect()
}

/// A `key` of /proc/meminfo in KiB.
pub fn meminfo_kib(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    s.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Filesystem type name of the file system holding `path` ("tmpfs", "ext4", ...), from
/// /proc/self/mountinfo (longest mount point that is a prefix of the canonical path).
pub fn fs_type(path: &std::path::Path) -> Option<String> {
    let p = path.canonicalize().ok()?;
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<(usize, String)> = None;
    for l in info.lines() {
        let (pre, post) = l.split_once(" - ")?;
        let mp = pre.split(' ').nth(4)?.replace("\\040", " ");
        let ty = post.split(' ').next()?.to_string();
        if p.starts_with(&mp) && best.as_ref().is_none_or(|(n, _)| mp.len() >= *n) {
            best = Some((mp.len(), ty));
        }
    }
    best.map(|(_, t)| t)
}

/// A uniform draw from `0..n` (n > 0): the high half of a 64x64-bit product (Lemire), so the
/// sequence depends only on the ChaCha8 stream, not on a library's sampling algorithm.
pub fn below(rng: &mut rand_chacha::ChaCha8Rng, n: u64) -> u64 {
    use rand::RngCore;
    ((rng.next_u64() as u128 * n as u128) >> 64) as u64
}

/// The generator every workload draws from.
pub fn rng(seed: u64) -> rand_chacha::ChaCha8Rng {
    use rand::SeedableRng;
    rand_chacha::ChaCha8Rng::seed_from_u64(seed)
}

/// An mmap'd region, unmapped on drop.
pub struct Map {
    pub ptr: *mut u8,
    pub len: usize,
}

impl Map {
    /// `mmap(NULL, len, prot, flags, fd, 0)`.
    pub fn new(len: usize, prot: i32, flags: i32, fd: i32) -> Result<Map> {
        // SAFETY: no fixed address; the kernel checks fd and flags.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd, 0) };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("mmap of {len} bytes"));
        }
        Ok(Map {
            ptr: p as *mut u8,
            len,
        })
    }

    /// Anonymous private read-write memory.
    pub fn anon(len: usize) -> Result<Map> {
        Map::new(
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
        )
    }

    pub fn advise(&self, advice: i32, what: &str) -> Result<()> {
        // SAFETY: advising our own mapping.
        if unsafe { libc::madvise(self.ptr as *mut _, self.len, advice) } != 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("madvise({what})"));
        }
        Ok(())
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what we mapped.
        unsafe { libc::munmap(self.ptr as *mut _, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_start_time_and_kv() {
        let me = std::process::id();
        let a = process_start(me).unwrap();
        assert_eq!(process_start(me), Some(a));
        assert!(process_start(u32::MAX - 1).is_none());
        // a child that exited and is not reaped yet is gone
        // SAFETY: the child only calls _exit.
        let child = unsafe { libc::fork() };
        if child == 0 {
            // SAFETY: async-signal-safe exit of the forked child.
            unsafe { libc::_exit(0) };
        }
        assert!(child > 0);
        let stat = format!("/proc/{child}/stat");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !std::fs::read_to_string(&stat).is_ok_and(|t| t.contains(") Z ")) {
            assert!(
                std::time::Instant::now() < until,
                "child {child} never became a zombie"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(process_start(child as u32), None);
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(child, std::ptr::null_mut(), 0) };
        let m = parse_kv("pgscan 12\npgsteal 3\nbad\nx y\n");
        assert_eq!(m["pgscan"], 12);
        assert_eq!(m.len(), 2);
        assert!(meminfo_kib("MemTotal").unwrap() > 0);
        assert!(fs_type(std::path::Path::new("/proc")).as_deref() == Some("proc"));
    }
}
