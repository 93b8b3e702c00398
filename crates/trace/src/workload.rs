//! The traced workload and what stops a recording.
//!
//! - [`Gated`]: the workload forked at a gate, so that its pid is in the instance's
//!   `set_event_pid` (with event-fork) before it runs a single instruction of its own; then
//!   released, polled, stopped (the signal abperf received, forwarded to its process group, then
//!   SIGKILL after a grace period) and reaped with its rusage.
//! - [`Stop`]: SIGINT, SIGTERM and SIGHUP are counted by a watcher thread. The first stops the
//!   recording (the capture is kept); a second one aborts without storing.
//! - [`tasks_of_pids`], [`tasks_of_cgroup`]: the thread ids to put in scope for `--pid` and
//!   `--cgroup`.

use abperf_measure::command::Prepared;
use anyhow::{Context, Result, anyhow, bail};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

unsafe extern "C" {
    static environ: *const *const libc::c_char;
}

static COUNT: AtomicUsize = AtomicUsize::new(0);
static FIRST: AtomicI32 = AtomicI32::new(0);
static INSTALL: std::sync::Once = std::sync::Once::new();

/// Signals that stop a recording.
pub struct Stop;

impl Stop {
    /// Start counting SIGINT, SIGTERM and SIGHUP (idempotent).
    pub fn install() -> Result<()> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut result = Ok(());
        INSTALL.call_once(|| {
            match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
                Ok(mut sigs) => {
                    std::thread::Builder::new()
                        .name("abperf-signals".into())
                        .spawn(move || {
                            for s in sigs.forever() {
                                let _ = FIRST.compare_exchange(
                                    0,
                                    s,
                                    Ordering::SeqCst,
                                    Ordering::SeqCst,
                                );
                                let n = COUNT.fetch_add(1, Ordering::SeqCst) + 1;
                                if n == 2 {
                                    abperf_model::error::stderr_line(
                                        "\nabperf: second signal: aborting, nothing will be stored",
                                    );
                                }
                            }
                        })
                        .map(|_| ())
                        .unwrap_or_else(|e| {
                            result = Err(anyhow!("cannot start the signal watcher: {e}"))
                        });
                }
                Err(e) => result = Err(anyhow!("cannot install signal handlers: {e}")),
            }
        });
        result
    }
    /// The first signal received, if any.
    pub fn first() -> Option<i32> {
        match FIRST.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }
    /// A second signal arrived: abort without storing.
    pub fn aborted() -> bool {
        COUNT.load(Ordering::SeqCst) >= 2
    }
}

/// The conventional name of a signal number.
pub fn signal_name(sig: i32) -> String {
    abperf_measure::signals::name(sig)
}

/// How the workload ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Code(i32),
    Signal(i32),
}

/// A forked workload waiting at its gate, then running.
#[derive(Debug)]
pub struct Gated {
    pub pid: libc::pid_t,
    gate: Option<OwnedFd>,
    err_r: Option<OwnedFd>,
    reaped: Option<(Ended, libc::rusage)>,
    pub released_at: Option<Instant>,
}

impl Gated {
    /// Fork `cmd` in its own process group, stdin on /dev/null, stopped at a gate until
    /// [`Gated::release`].
    pub fn start(cmd: &Prepared) -> Result<Gated> {
        let null = std::fs::OpenOptions::new()
            .read(true)
            .open("/dev/null")
            .context("opening /dev/null")?;
        let mut argv: Vec<*const libc::c_char> = cmd.argv.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        // std's pipes are O_CLOEXEC: the workload's exec closes them
        let (gate_r, gate_w) = std::io::pipe()?;
        let (err_r, err_w) = std::io::pipe()?;
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: between fork and exec the child only makes async-signal-safe syscalls on
        // memory prepared before the fork, then execs or _exits.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            bail!("fork failed: {}", std::io::Error::last_os_error());
        }
        if pid == 0 {
            unsafe {
                libc::setpgid(0, 0);
                // abperf killed hard (kill -9): the workload goes too, not on untraced
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != parent {
                    libc::_exit(125);
                }
                for s in [libc::SIGPIPE, libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                    libc::signal(s, libc::SIG_DFL);
                }
                let mut none: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut none);
                libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
                libc::dup2(null.as_raw_fd(), 0);
                libc::close(gate_w.as_raw_fd());
                let mut b = 0u8;
                if libc::read(gate_r.as_raw_fd(), (&mut b as *mut u8).cast(), 1) != 1 {
                    // abperf went away before letting us go
                    libc::_exit(125);
                }
                libc::execve(cmd.program.as_ptr(), argv.as_ptr(), environ);
                let e = *libc::__errno_location();
                libc::write(err_w.as_raw_fd(), (&e as *const i32).cast(), 4);
                libc::_exit(127);
            }
        }
        // SAFETY: plain syscall on our own child (closes the race with its own setpgid).
        unsafe { libc::setpgid(pid, pid) };
        drop(gate_r);
        drop(err_w);
        Ok(Gated {
            pid,
            gate: Some(gate_w.into()),
            err_r: Some(err_r.into()),
            reaped: None,
            released_at: None,
        })
    }

    /// Let the workload exec; an exec failure is an error naming the command.
    pub fn release(&mut self, text: &str) -> Result<()> {
        let gate = self.gate.take().expect("released once");
        self.released_at = Some(Instant::now());
        // SAFETY: one byte from a valid buffer to our own pipe.
        unsafe { libc::write(gate.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        drop(gate);
        let err = self.err_r.take().expect("released once");
        let mut errno = [0u8; 4];
        // SAFETY: errno is 4 writable bytes.
        let n = unsafe { libc::read(err.as_raw_fd(), errno.as_mut_ptr().cast(), 4) };
        if n == 4 {
            let e = std::io::Error::from_raw_os_error(i32::from_ne_bytes(errno));
            let _ = self.wait(Some(Duration::from_secs(5)));
            bail!("cannot execute '{text}': {e}");
        }
        Ok(())
    }

    /// Reaped already, or reap it now if it has exited (without blocking).
    pub fn poll(&mut self) -> Result<Option<Ended>> {
        if let Some((e, _)) = self.reaped {
            return Ok(Some(e));
        }
        let mut status = 0;
        // SAFETY: rusage is plain data; wait4 fills it for this one child.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::wait4(self.pid, &mut status, libc::WNOHANG, &mut ru) };
        if rc == 0 {
            return Ok(None);
        }
        if rc != self.pid {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(None);
            }
            return Err(anyhow!("wait4 for the workload failed: {e}"));
        }
        let ended = if libc::WIFEXITED(status) {
            Ended::Code(libc::WEXITSTATUS(status))
        } else {
            Ended::Signal(libc::WTERMSIG(status))
        };
        self.reaped = Some((ended, ru));
        Ok(Some(ended))
    }

    /// Wait (polling) up to `limit` (None: forever) for the exit.
    pub fn wait(&mut self, limit: Option<Duration>) -> Result<Option<Ended>> {
        let t0 = Instant::now();
        loop {
            if let Some(e) = self.poll()? {
                return Ok(Some(e));
            }
            if limit.is_some_and(|l| t0.elapsed() >= l) {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Signal the workload's process group (while its leader is not reaped, the group id is
    /// ours).
    pub fn signal_group(&self, sig: i32) {
        if self.reaped.is_none() {
            // SAFETY: plain syscall; the group leader is our unreaped child.
            unsafe { libc::kill(-self.pid, sig) };
        }
    }

    /// Stop it: `sig` to its group, SIGKILL after `grace`; then reap.
    pub fn stop(&mut self, sig: i32, grace: Duration) -> Result<Ended> {
        self.signal_group(sig);
        if let Some(e) = self.wait(Some(grace))? {
            return Ok(e);
        }
        self.signal_group(libc::SIGKILL);
        Ok(self.wait(None)?.expect("waited forever"))
    }

    /// User + system time of the reaped workload (and the children it reaped), ns.
    pub fn cpu_ns(&self) -> Option<u64> {
        let (_, ru) = self.reaped.as_ref()?;
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        Some(tv(ru.ru_utime) + tv(ru.ru_stime))
    }
}

impl Drop for Gated {
    fn drop(&mut self) {
        // an early return: never leave the workload running or unreaped
        if self.reaped.is_none() {
            self.gate.take();
            self.signal_group(libc::SIGKILL);
            let _ = self.wait(Some(Duration::from_secs(5)));
        }
    }
}

/// Every thread of `pid`, and of its descendants (transitively), as listed in /proc now.
pub fn tasks_of_pids(pids: &[i32]) -> Result<Vec<i32>> {
    let mut parent: Vec<(i32, i32)> = Vec::new();
    for e in std::fs::read_dir("/proc")?.flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        if let Some(pp) = after
            .split_whitespace()
            .nth(1)
            .and_then(|x| x.parse::<i32>().ok())
        {
            parent.push((p, pp));
        }
    }
    let mut procs: Vec<i32> = Vec::new();
    for &p in pids {
        if !Path::new(&format!("/proc/{p}")).exists() {
            return Err(abperf_model::error::usage(format!(
                "--pid {p}: no such process"
            )));
        }
        procs.push(p);
    }
    let mut i = 0;
    while i < procs.len() {
        let p = procs[i];
        for (c, pp) in &parent {
            if *pp == p && !procs.contains(c) {
                procs.push(*c);
            }
        }
        i += 1;
    }
    let mut tids = Vec::new();
    for p in procs {
        tids.extend(threads(p));
    }
    tids.sort();
    tids.dedup();
    Ok(tids)
}

fn threads(p: i32) -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir(format!("/proc/{p}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    if v.is_empty() {
        v.push(p);
    }
    v
}

/// The cgroup directory `spec` names: an absolute directory, or a path under a cgroup
/// mount (`/sys/fs/cgroup`, `/sys/fs/cgroup/unified`, `/sys/fs/cgroup/<controller>`).
pub fn cgroup_dir(spec: &str) -> Result<PathBuf> {
    let p = Path::new(spec);
    if p.is_absolute() && p.join("cgroup.procs").exists() {
        return Ok(p.to_path_buf());
    }
    let rel = spec.trim_start_matches('/');
    let mut tried = Vec::new();
    let mut roots = vec![PathBuf::from("/sys/fs/cgroup")];
    if let Ok(d) = std::fs::read_dir("/sys/fs/cgroup") {
        let mut sub: Vec<PathBuf> = d.flatten().map(|e| e.path()).collect();
        sub.sort();
        roots.extend(sub);
    }
    for r in roots {
        let c = r.join(rel);
        if c.join("cgroup.procs").exists() {
            return Ok(c);
        }
        tried.push(c.display().to_string());
    }
    Err(abperf_model::error::usage(format!(
        "--cgroup {spec}: no such cgroup (no cgroup.procs in {})",
        tried.join(", ")
    )))
}

/// The thread ids in cgroup `dir` now: `cgroup.threads` (v2), `tasks` (v1), else the threads of
/// `cgroup.procs`.
pub fn tasks_of_cgroup(dir: &Path) -> Result<Vec<i32>> {
    let read = |f: &str| -> Option<Vec<i32>> {
        let t = std::fs::read_to_string(dir.join(f)).ok()?;
        Some(
            t.split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect(),
        )
    };
    if let Some(v) = read("cgroup.threads").or_else(|| read("tasks")) {
        return Ok(v);
    }
    let procs = read("cgroup.procs")
        .ok_or_else(|| anyhow!("cannot read {}", dir.join("cgroup.procs").display()))?;
    Ok(procs.into_iter().flat_map(threads).collect())
}
