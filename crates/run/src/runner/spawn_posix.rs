//! Starting a process the low-level way, shared by the direct path (`spawn`) and the spawn
//! server (`spawn_server`): posix_spawn in a process group of its own with clean signal state,
//! descriptors moved out of the way of the file actions, and /dev/null opened once.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;

unsafe extern "C" {
    /// The process environment (what posix_spawn and execve pass on).
    pub(super) static environ: *const *const libc::c_char;
}

/// posix_spawn `program` with `argv` (NULL-terminated) and abperf's environment, in a process
/// group of its own (a Ctrl-C at the terminal is abperf's to handle), with no signal blocked and
/// SIGPIPE at its default whatever abperf's own dispositions are (ignored signals would otherwise
/// be inherited across exec), and the `dups` (source, target) applied in order. Returns the pid
/// and the moment just before the call (where a timed region starts), or the error number.
pub(super) fn spawn_in_group(
    program: &std::ffi::CStr,
    argv: &[*const libc::c_char],
    dups: &[(i32, i32)],
) -> Result<(libc::pid_t, Instant), i32> {
    debug_assert!(argv.last().is_some_and(|a| a.is_null()));
    // SAFETY: the attr and file-action objects are initialised before use and destroyed after;
    // argv is NULL-terminated and, with program and environ, outlives the call.
    unsafe {
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        let mut fa: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        libc::posix_spawnattr_init(&mut attr);
        let flags = libc::POSIX_SPAWN_SETPGROUP
            | libc::POSIX_SPAWN_SETSIGDEF
            | libc::POSIX_SPAWN_SETSIGMASK;
        libc::posix_spawnattr_setflags(&mut attr, flags as libc::c_short);
        libc::posix_spawnattr_setpgroup(&mut attr, 0);
        let mut sigs: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut sigs);
        libc::posix_spawnattr_setsigmask(&mut attr, &sigs);
        libc::sigaddset(&mut sigs, libc::SIGPIPE);
        libc::posix_spawnattr_setsigdefault(&mut attr, &sigs);
        libc::posix_spawn_file_actions_init(&mut fa);
        for &(from, to) in dups {
            libc::posix_spawn_file_actions_adddup2(&mut fa, from, to);
        }
        let mut pid: libc::pid_t = 0;
        let t0 = Instant::now();
        let rc = libc::posix_spawn(
            &mut pid,
            program.as_ptr(),
            &fa,
            &attr,
            argv.as_ptr() as *const *mut libc::c_char,
            environ as *const *mut libc::c_char,
        );
        libc::posix_spawn_file_actions_destroy(&mut fa);
        libc::posix_spawnattr_destroy(&mut attr);
        if rc != 0 { Err(rc) } else { Ok((pid, t0)) }
    }
}

/// `fd` duplicated to a number of at least 10 (close-on-exec), so that the file actions that
/// place the helper's pipes at 3, 4 and 5 never find a source already there.
pub(super) fn high_fd(fd: OwnedFd) -> anyhow::Result<OwnedFd> {
    // SAFETY: fcntl on an fd we own; the duplicate is fresh and owned by nobody else.
    let n = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10) };
    if n < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(unsafe { OwnedFd::from_raw_fd(n) })
}

/// /dev/null, opened once per process (close-on-exec; children get it through dup2).
pub(super) fn devnull() -> anyhow::Result<&'static std::fs::File> {
    static NULL: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();
    if let Some(f) = NULL.get() {
        return Ok(f);
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    Ok(NULL.get_or_init(|| f))
}
