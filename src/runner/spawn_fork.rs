//! The step both spawn helpers share (the `abperf-spawn` binary includes this file with
//! `#[path]`, abperf's own helper mode uses it as `runner::spawn_fork`): fork the workload,
//! which waits at the gate and then execs, and report its pid. Plain libc calls only, so that
//! the runtime-free binary can use it. The protocol is in `runner::spawn_helper`.

use std::ffi::{c_char, c_int};

/// The gate (read end): a byte starts the workload, EOF cancels it.
pub const GATE_FD: c_int = 3;
/// The exec-error pipe (write end): 4 bytes of errno if exec fails.
pub const ERR_FD: c_int = 4;
/// The report pipe: the workload's pid, 4 bytes.
pub const REPORT_FD: c_int = 5;

unsafe extern "C" {
    static environ: *const *const c_char;
}

/// Mark the control pipes close-on-exec, fork the workload `program` with `argv` (NULL-ended)
/// in a process group of its own, and report its pid on [`REPORT_FD`].
///
/// # Safety
///
/// `program` and `argv` are valid C strings (a NULL-ended array), and the calling process has
/// one thread (the child makes syscalls only, but no other thread may hold a lock it needs).
pub unsafe fn fork_workload(
    program: *const c_char,
    argv: *const *const c_char,
) -> Result<(), &'static str> {
    // SAFETY: plain syscalls on fds this process was given, on our own child, and on memory
    // the caller guarantees; the child runs only async-signal-safe calls before exec.
    unsafe {
        for fd in [GATE_FD, ERR_FD, REPORT_FD] {
            if libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) != 0 {
                return Err("the control pipes are missing (run only by abperf)");
            }
        }
        let pid = libc::fork();
        if pid < 0 {
            return Err("fork failed");
        }
        if pid == 0 {
            libc::setpgid(0, 0);
            // A Rust runtime ignores SIGPIPE; the workload gets the default.
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            libc::close(REPORT_FD);
            let mut b = 0u8;
            // EOF instead of a byte: abperf decided not to start the workload.
            if libc::read(GATE_FD, (&mut b as *mut u8).cast(), 1) != 1 {
                libc::_exit(126);
            }
            libc::execve(program, argv, environ);
            let e = *libc::__errno_location();
            libc::write(ERR_FD, (&e as *const c_int).cast(), 4);
            libc::_exit(127);
        }
        libc::setpgid(pid, pid);
        let bytes = pid.to_ne_bytes();
        if libc::write(REPORT_FD, bytes.as_ptr().cast(), 4) != 4 {
            libc::kill(pid, libc::SIGKILL);
            return Err("abperf did not take the workload's pid (it is gone)");
        }
    }
    Ok(())
}
