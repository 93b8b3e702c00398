//! One timed child: fork, (optionally) attach counters while the child waits at a gate, exec, and
//! wait. The timed region runs from just before the child is let go (fork, or the gate when
//! counters must be attached first) until `waitid` reports its exit, on CLOCK_MONOTONIC; the
//! rusage is that one child's, from `wait4`.

use super::command::Prepared;
use super::cpuset::CpuSet;
use super::signals;
use super::spawn_posix::{devnull, environ, high_fd, spawn_in_group};
use abperf_measure::counters::{Counters, EventSpec};
use abperf_model::Metric;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How the child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    TimedOut,
}

#[derive(Debug)]
pub struct Outcome {
    pub exit: Exit,
    pub wall_ns: u64,
    pub rusage: libc::rusage,
    pub counters: Vec<Metric>,
    /// Events that were attached but never ran (not measured this run).
    pub missing_counters: Vec<String>,
    /// With `quiet`: the last lines the child wrote to its standard error (kept in a memory file
    /// while it runs, never stored; shown when a run fails).
    pub stderr_tail: Option<String>,
}

/// Options for one spawn.
pub struct SpawnOptions<'a> {
    pub pin: Option<&'a CpuSet>,
    pub timeout: Option<Duration>,
    pub events: &'a [EventSpec],
    /// Send the child's stdout to /dev/null and its stderr to a memory file whose last lines
    /// end up in [`Outcome::stderr_tail`].
    pub quiet: bool,
}

/// How much of the end of a quiet child's stderr is read back, and how many lines are kept.
const TAIL_BYTES: usize = 4096;
const TAIL_LINES: usize = 10;

/// Quiet children's stderr memory files kept for the next run (issue 13: a memfd_create per run
/// was a per-run cost): one is taken per run, emptied, and put back when the run has been read.
static STDERR_FILES: std::sync::Mutex<Vec<OwnedFd>> = std::sync::Mutex::new(Vec::new());

/// A quiet child's stderr file, emptied and at offset 0: one kept from an earlier run (a
/// previous workload's fd 2 shared its file offset, hence the rewind) or a new one.
fn take_stderr_file() -> anyhow::Result<OwnedFd> {
    let kept = STDERR_FILES.lock().unwrap_or_else(|e| e.into_inner()).pop();
    if let Some(fd) = kept {
        // SAFETY: plain syscalls on an fd we own.
        let ok = unsafe {
            libc::ftruncate(fd.as_raw_fd(), 0) == 0
                && libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_SET) == 0
        };
        if ok {
            return Ok(fd);
        }
    }
    stderr_file()
}

/// Keep `fd` for a later run.
fn put_stderr_file(fd: OwnedFd) {
    let mut kept = STDERR_FILES.lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() < 4 {
        kept.push(fd);
    }
}

/// A memory file for a quiet child's stderr (close-on-exec; the child gets it through dup2).
/// Writes to it cost about what writes to /dev/null do, and never block the child.
fn stderr_file() -> anyhow::Result<OwnedFd> {
    // SAFETY: the name is a valid NUL-terminated string.
    let fd = unsafe { libc::memfd_create(c"abperf-stderr".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(anyhow::anyhow!(
            "memfd_create for the workload's stderr failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: fd is fresh and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The last [`TAIL_LINES`] lines of what was written to `fd`, control characters escaped;
/// `None` when nothing was written.
fn read_tail(fd: &OwnedFd) -> Option<String> {
    // SAFETY: stat is plain data that fstat fills.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 || st.st_size <= 0 {
        return None;
    }
    let size = st.st_size as usize;
    let from = size.saturating_sub(TAIL_BYTES);
    let mut buf = vec![0u8; size - from];
    // SAFETY: buf has buf.len() writable bytes.
    let n = unsafe {
        libc::pread(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            from as libc::off_t,
        )
    };
    if n <= 0 {
        return None;
    }
    buf.truncate(n as usize);
    let text = String::from_utf8_lossy(&buf);
    let mut lines: Vec<&str> = text.trim_end().lines().collect();
    if from > 0 && lines.len() > 1 {
        lines.remove(0); // cut in the middle
    }
    let keep = lines.len().saturating_sub(TAIL_LINES);
    let shown: Vec<String> = lines[keep..]
        .iter()
        .map(|l| abperf_model::escape::message(l).into_owned())
        .collect();
    (!shown.is_empty()).then(|| shown.join("\n"))
}

/// A pipe as owned descriptors (read end, write end), both close-on-exec (std's `pipe2` with
/// `O_CLOEXEC`): a child gets an end only through the dup2 of its file actions.
fn pipe() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = std::io::pipe()?;
    Ok((r.into(), w.into()))
}

/// The standard streams of a child: stdin on /dev/null and, with `err_fd` (quiet), stdout on
/// /dev/null and stderr on `err_fd`.
fn std_dups(null_fd: i32, err_fd: Option<i32>) -> Vec<(i32, i32)> {
    let mut dups = vec![(null_fd, 0)];
    if let Some(err_fd) = err_fd {
        dups.extend([(null_fd, 1), (err_fd, 2)]);
    }
    dups
}

/// Start the child the cheap way: posix_spawn (glibc: clone with CLONE_VM|CLONE_VFORK), in its
/// own process group, stdin (and with `quiet` stdout/stderr) on /dev/null. Used when nothing has
/// to happen between fork and exec (no counters to attach, no pinning).
fn start_spawn(
    cmd: &Prepared,
    argv: &[*const libc::c_char],
    null_fd: i32,
    err_fd: Option<i32>,
) -> anyhow::Result<(libc::pid_t, Instant)> {
    let (pid, t0) =
        spawn_in_group(&cmd.program, argv, &std_dups(null_fd, err_fd)).map_err(|rc| {
            anyhow::anyhow!(
                "cannot execute '{}': {}",
                cmd.text,
                std::io::Error::from_raw_os_error(rc)
            )
        })?;
    signals::set_child(pid);
    Ok((pid, t0))
}

/// Start the child with fork: it pins itself if asked, then waits at a gate until the counters
/// are attached to it, then execs. Returns the pid, the start of the timed region and the counters.
fn start_fork(
    cmd: &Prepared,
    argv: &[*const libc::c_char],
    null_fd: i32,
    err_fd: Option<i32>,
    opts: &SpawnOptions,
) -> anyhow::Result<(libc::pid_t, Instant, Option<Counters>)> {
    let (gate_r, gate_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let gated = !opts.events.is_empty();
    let mut t0 = Instant::now();
    // SAFETY: between fork and exec the child only makes async-signal-safe syscalls on memory
    // prepared before the fork (argv, program, fds), then execs or _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(anyhow::anyhow!(
            "fork failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    if pid == 0 {
        unsafe {
            libc::setpgid(0, 0);
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            libc::dup2(null_fd, 0);
            if let Some(err_fd) = err_fd {
                libc::dup2(null_fd, 1);
                libc::dup2(err_fd, 2);
            }
            if let Some(p) = opts.pin
                && p.apply_to_self() != 0
            {
                let e = *libc::__errno_location();
                libc::write(err_w.as_raw_fd(), (&e as *const i32).cast(), 4);
                libc::_exit(127);
            }
            if gated {
                libc::close(gate_w.as_raw_fd());
                let mut b = 0u8;
                libc::read(gate_r.as_raw_fd(), (&mut b as *mut u8).cast(), 1);
            }
            libc::execve(cmd.program.as_ptr(), argv.as_ptr(), environ);
            let e = *libc::__errno_location();
            libc::write(err_w.as_raw_fd(), (&e as *const i32).cast(), 4);
            libc::_exit(127);
        }
    }
    // Parent. Put the child in its own group too (closes the race with its own setpgid).
    // SAFETY: plain syscalls on our own child.
    unsafe { libc::setpgid(pid, pid) };
    signals::set_child(pid);
    drop(gate_r);
    drop(err_w);
    let counters = if gated {
        match Counters::attach(pid, opts.events) {
            Ok(c) => Some(c),
            Err(e) => {
                kill_and_reap(pid);
                return Err(e);
            }
        }
    } else {
        None
    };
    if gated {
        t0 = Instant::now();
        // SAFETY: one byte from a valid buffer to our own pipe.
        unsafe { libc::write(gate_w.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
    }
    drop(gate_w);
    exec_result(&err_r, pid, cmd)?;
    Ok((pid, t0, counters))
}

/// Whether the exec in child `pid` succeeded: the CLOEXEC error pipe closes with nothing in it,
/// or carries the errno of the failed exec (then the child is killed and reaped). A workload of
/// the spawn server writes the failed step after the errno (see `spawn_fork`).
fn exec_result(err_r: &OwnedFd, pid: libc::pid_t, cmd: &Prepared) -> anyhow::Result<()> {
    use super::spawn_fork::{STEP_CWD, STEP_FDS, STEP_PIN};
    let mut words = [0u8; 8];
    // SAFETY: words is 8 writable bytes.
    let n = unsafe { libc::read(err_r.as_raw_fd(), words.as_mut_ptr().cast(), 8) };
    if n >= 4 {
        let e = std::io::Error::from_raw_os_error(i32::from_ne_bytes(
            words[..4].try_into().expect("4 bytes"),
        ));
        let step = if n == 8 {
            i32::from_ne_bytes(words[4..].try_into().expect("4 bytes"))
        } else {
            super::spawn_fork::STEP_EXEC
        };
        kill_and_reap(pid);
        match step {
            STEP_CWD => anyhow::bail!("cannot enter the working directory for '{}': {e}", cmd.text),
            STEP_PIN => anyhow::bail!("cannot pin '{}' to the CPUs asked for: {e}", cmd.text),
            STEP_FDS => anyhow::bail!("cannot give '{}' its standard streams: {e}", cmd.text),
            _ => anyhow::bail!("cannot execute '{}': {e}", cmd.text),
        }
    }
    Ok(())
}

/// Serialises the moments this process is a child subreaper (a process attribute).
static SUBREAPER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Start the child through the small helper (see `spawn_helper`): the helper forks the workload,
/// which waits at a gate, and exits; abperf, a child subreaper meanwhile, inherits the workload.
/// Then: signal watcher, counters, gate, exec check, as in `start_fork`.
fn start_via_helper(
    cmd: &Prepared,
    null_fd: i32,
    err_fd: Option<i32>,
    opts: &SpawnOptions,
) -> anyhow::Result<(libc::pid_t, Instant, Option<Counters>)> {
    use super::spawn_helper::{ERR_FD, GATE_FD, HELPER_ARG, REPORT_FD};
    let (gate_r, gate_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let (rep_r, rep_w) = pipe()?;
    let (gate_r, err_w, rep_w) = (high_fd(gate_r)?, high_fd(err_w)?, high_fd(rep_w)?);
    let helper = super::spawn_helper::program();
    let pin = opts
        .pin
        .map(|p| {
            p.cpus
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_else(|| "-".into());
    let mut fixed = vec![CString::new("abperf-spawn").expect("no NUL")];
    if helper.is_self {
        fixed.push(CString::new(HELPER_ARG).expect("no NUL"));
    }
    fixed.push(CString::new(pin).expect("digits and commas"));
    fixed.push(CString::new("--").expect("no NUL"));
    let mut argv: Vec<*const libc::c_char> = fixed.iter().map(|a| a.as_ptr()).collect();
    argv.push(cmd.program.as_ptr());
    argv.extend(cmd.argv.iter().map(|a| a.as_ptr()));
    argv.push(std::ptr::null());
    let guard = SUBREAPER.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: prctl with plain integer arguments.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    let clear_subreaper = || unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) };
    // The standard streams first: their sources may be 3, 4 or 5 (the pipes are >= 10).
    let mut dups = std_dups(null_fd, err_fd);
    dups.extend([
        (gate_r.as_raw_fd(), GATE_FD),
        (err_w.as_raw_fd(), ERR_FD),
        (rep_w.as_raw_fd(), REPORT_FD),
    ]);
    let spawned = spawn_in_group(&helper.path, &argv, &dups);
    drop((gate_r, err_w, rep_w));
    let helper_pid = match spawned {
        Ok((pid, _)) => pid,
        Err(rc) => {
            clear_subreaper();
            anyhow::bail!(
                "cannot start abperf's spawn helper for '{}': {}",
                cmd.text,
                std::io::Error::from_raw_os_error(rc)
            );
        }
    };
    let mut pidb = [0u8; 4];
    // SAFETY: pidb is 4 writable bytes.
    let n = unsafe { libc::read(rep_r.as_raw_fd(), pidb.as_mut_ptr().cast(), 4) };
    // Reap the helper: by the time it is a zombie, the workload is our child.
    let mut status = 0;
    // SAFETY: plain syscall on our own child.
    unsafe { libc::waitpid(helper_pid, &mut status, 0) };
    clear_subreaper();
    drop(guard);
    if n != 4 {
        anyhow::bail!(
            "abperf's spawn helper failed to start '{}' (status {status})",
            cmd.text
        );
    }
    let pid = libc::pid_t::from_ne_bytes(pidb);
    let (t0, counters) = release(pid, gate_w, cmd, opts)?;
    exec_result(&err_r, pid, cmd)?;
    Ok((pid, t0, counters))
}

/// A started child: pid, start of the timed region, counters, and the exec-error pipe when the
/// exec is still to be checked (after the child has ended: see [`start_via_server`]).
type Started = (libc::pid_t, Instant, Option<Counters>, Option<OwnedFd>);

/// Start the child through the spawn server (see `spawn_server`): a clone of the server whose
/// parent is abperf, waiting at the gate. `None` when the request is too large for the server.
/// The exec is checked once the child has ended (its exec-error pipe is at EOF or holds the
/// error by then), so that abperf does not wake up between the gate and the child's exit.
fn start_via_server(
    cmd: &Prepared,
    null_fd: i32,
    err_fd: Option<i32>,
    opts: &SpawnOptions,
) -> anyhow::Result<Option<Started>> {
    let (gate_r, gate_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let stdio = match err_fd {
        Some(e) => [null_fd, null_fd, e],
        None => [null_fd, 1, 2],
    };
    let Some(pid) = super::spawn_server::start_workload(cmd, opts.pin, stdio, &gate_r, &err_w)?
    else {
        return Ok(None);
    };
    drop((gate_r, err_w));
    let (t0, counters) = release(pid, gate_w, cmd, opts)?;
    Ok(Some((pid, t0, counters, Some(err_r))))
}

/// A helper's workload `pid`, now abperf's child and waiting at the gate: own process group,
/// the signal watcher's, counters attached, then let go (the timed region starts here).
fn release(
    pid: libc::pid_t,
    gate_w: OwnedFd,
    cmd: &Prepared,
    opts: &SpawnOptions,
) -> anyhow::Result<(Instant, Option<Counters>)> {
    // SAFETY: plain syscall on our child, which has not exec'd yet.
    unsafe { libc::setpgid(pid, pid) };
    signals::set_child(pid);
    if let Some(sig) = signals::received() {
        kill_and_reap(pid);
        anyhow::bail!(
            "interrupted by {} before '{}' started",
            signals::name(sig),
            cmd.text
        );
    }
    let counters = if opts.events.is_empty() {
        None
    } else {
        match Counters::attach(pid, opts.events) {
            Ok(c) => Some(c),
            Err(e) => {
                kill_and_reap(pid);
                return Err(e);
            }
        }
    };
    let t0 = Instant::now();
    // SAFETY: one byte from a valid buffer to our own pipe.
    unsafe { libc::write(gate_w.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
    drop(gate_w);
    Ok((t0, counters))
}

/// Run `cmd` once and measure it.
pub fn run(cmd: &Prepared, opts: &SpawnOptions) -> anyhow::Result<Outcome> {
    let devnull = devnull()?;
    let mut argv: Vec<*const libc::c_char> = cmd.argv.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let null_fd = devnull.as_raw_fd();
    let stderr = opts.quiet.then(take_stderr_file).transpose()?;
    let err_fd = stderr.as_ref().map(|f| f.as_raw_fd());
    let helper = super::spawn_helper::available();
    let served = if helper && super::spawn_server::active() {
        start_via_server(cmd, null_fd, err_fd, opts)?
    } else {
        None
    };
    let (pid, t0, counters, exec_check) = if let Some(s) = served {
        s
    } else if helper {
        let (pid, t0, c) = start_via_helper(cmd, null_fd, err_fd, opts)?;
        (pid, t0, c, None)
    } else if opts.events.is_empty() && opts.pin.is_none() {
        let (pid, t0) = start_spawn(cmd, &argv, null_fd, err_fd)?;
        (pid, t0, None, None)
    } else {
        let (pid, t0, c) = start_fork(cmd, &argv, null_fd, err_fd, opts)?;
        (pid, t0, c, None)
    };

    let (cancel, watchdog) = match opts.timeout {
        Some(limit) => {
            let (tx, rx) = mpsc::channel::<()>();
            let h = std::thread::spawn(move || {
                if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                    // SAFETY: the child is not reaped before this thread is joined.
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
                    return true;
                }
                false
            });
            (Some(tx), Some(h))
        }
        None => (None, None),
    };

    // Wait for the exit without reaping (so the pid cannot be reused while anyone may kill it).
    loop {
        // SAFETY: siginfo_t is plain data; waitid fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            anyhow::bail!("waitid for '{}' failed: {err}", cmd.text);
        }
    }
    let wall_ns = t0.elapsed().as_nanos() as u64;
    signals::clear_child();
    let timed_out = match (cancel, watchdog) {
        (Some(tx), Some(h)) => {
            drop(tx);
            h.join().unwrap_or(false)
        }
        _ => false,
    };
    // Make sure nothing of the group outlives a timed-out run.
    if timed_out {
        // SAFETY: the group leader is still an unreaped zombie, so the id is ours.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    // The child has ended: its exec-error pipe holds the error or is at EOF (never blocks).
    if let Some(err_r) = exec_check {
        exec_result(&err_r, pid, cmd)?;
    }
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for this one child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    if rc != pid {
        anyhow::bail!(
            "wait4 for '{}' failed: {}",
            cmd.text,
            std::io::Error::last_os_error()
        );
    }
    let exit = if timed_out {
        Exit::TimedOut
    } else if libc::WIFEXITED(status) {
        Exit::Code(libc::WEXITSTATUS(status))
    } else {
        Exit::Signal(libc::WTERMSIG(status))
    };
    let (counters, missing_counters) = counters.map(|c| c.read()).unwrap_or_default();
    let stderr_tail = stderr.as_ref().and_then(read_tail);
    // Kept for the next run, except after a timeout (its group is being killed). A process the
    // workload left running in the background may still write to it; that text would show in a
    // later failed run's tail (a tail is only shown, never stored).
    if let Some(f) = stderr
        && !timed_out
    {
        put_stderr_file(f);
    }
    Ok(Outcome {
        exit,
        wall_ns,
        rusage: ru,
        counters,
        missing_counters,
        stderr_tail,
    })
}

fn kill_and_reap(pid: libc::pid_t) {
    // SAFETY: plain syscalls on our own unreaped child.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
    }
    signals::clear_child();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> SpawnOptions<'static> {
        SpawnOptions {
            pin: None,
            timeout: None,
            events: &[],
            quiet: true,
        }
    }

    #[test]
    fn exit_codes_and_signals() {
        let o = run(&Prepared::new("exit 3", true).unwrap(), &opts()).unwrap();
        assert_eq!(o.exit, Exit::Code(3));
        let o = run(&Prepared::new("kill -SEGV $$", true).unwrap(), &opts()).unwrap();
        assert_eq!(o.exit, Exit::Signal(libc::SIGSEGV));
    }

    #[test]
    fn workloads_get_default_sigpipe() {
        // The test harness ignores SIGPIPE (Rust does); the workload must not inherit that, on
        // the posix_spawn path or on the fork path (taken for pinning).
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("status");
        let cmd = format!("grep SigIgn /proc/self/status > {}", out.display());
        let cpu0 = CpuSet::parse("0").unwrap();
        for pin in [None, Some(&cpu0)] {
            let mut o = opts();
            o.pin = pin;
            assert_eq!(
                run(&Prepared::new(&cmd, true).unwrap(), &o).unwrap().exit,
                Exit::Code(0)
            );
            let line = std::fs::read_to_string(&out).unwrap();
            let hex = line.split_whitespace().nth(1).unwrap();
            let ignored = u64::from_str_radix(hex, 16).unwrap();
            assert_eq!(
                ignored & (1 << (libc::SIGPIPE - 1)),
                0,
                "SIGPIPE ignored in the workload: {line}"
            );
        }
    }

    #[test]
    fn timeout_kills_the_group() {
        let mut o = opts();
        o.timeout = Some(Duration::from_millis(200));
        let t = Instant::now();
        let out = run(&Prepared::new("sleep 5 & sleep 5; wait", true).unwrap(), &o).unwrap();
        assert_eq!(out.exit, Exit::TimedOut);
        assert!(t.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn missing_program_is_an_error() {
        assert!(Prepared::new("/nonexistent/prog", false).is_err());
        let p = Prepared::new("./Cargo.toml", false);
        assert!(p.is_err());
    }

    #[test]
    fn a_quiet_childs_stderr_tail_is_kept() {
        let cpu0 = CpuSet::parse("0").unwrap();
        for pin in [None, Some(&cpu0)] {
            let mut o = opts();
            o.pin = pin;
            let cmd = "echo out; for i in $(seq 1 50); do echo line $i >&2; done; printf 'esc \\033[31m\\n' >&2; exit 3";
            let out = run(&Prepared::new(cmd, true).unwrap(), &o).unwrap();
            assert_eq!(out.exit, Exit::Code(3));
            let tail = out.stderr_tail.unwrap();
            let lines: Vec<&str> = tail.lines().collect();
            assert_eq!(lines.len(), TAIL_LINES, "{tail}");
            assert_eq!(lines[0], "line 42");
            assert_eq!(lines[9], "esc \\e[31m", "control characters escaped");
            assert!(!tail.contains("out"), "stdout is not kept: {tail}");
        }
        let silent = run(&Prepared::new("true", true).unwrap(), &opts()).unwrap();
        assert_eq!(silent.stderr_tail, None);
        // A long last line is cut to the end of the 4 KiB window, not lost.
        let big = run(
            &Prepared::new("head -c 100000 /dev/zero | tr '\\0' x >&2", true).unwrap(),
            &opts(),
        )
        .unwrap();
        assert_eq!(big.stderr_tail.unwrap().len(), TAIL_BYTES);
        // The file is reused from run to run: nothing of the big run is left in the next tail.
        let short = run(&Prepared::new("echo short >&2", true).unwrap(), &opts()).unwrap();
        assert_eq!(short.stderr_tail.as_deref(), Some("short"));
    }

    #[test]
    fn wall_time_covers_the_child() {
        let o = run(&Prepared::new("sleep 0.05", false).unwrap(), &opts()).unwrap();
        assert!(o.wall_ns >= 50_000_000, "{}", o.wall_ns);
        assert!(o.wall_ns < 1_000_000_000);
    }
}
