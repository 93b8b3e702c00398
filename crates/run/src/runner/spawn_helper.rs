//! Starting the workload from a small process, so that its max RSS is its own.
//!
//! Linux keeps a process's RSS high-water mark (`ru_maxrss`) across exec: at exec the old
//! address space's peak is folded into the process's figure. A child made by `posix_spawn` or
//! `vfork` shares abperf's whole address space until it execs, so every workload was charged
//! abperf's own peak (7.5 MiB for a program that uses 1 MiB); a child made by `fork` gets a copy
//! of abperf's page tables for its private memory (the `-e` path, which forks: 2 MiB here, still
//! twice `/usr/bin/time`'s figure), and the copy's RSS is folded in the same way. Resetting the
//! high-water mark (`/proc/PID/clear_refs` 5) cannot help: it resets to the current RSS, which
//! is the copy.
//!
//! So, as GNU time does, the workload is forked from a process that is small: abperf execs
//! itself as this helper (a fresh address space: the binary's relocated data and a stack, about
//! 0.5 MiB private), the helper forks the workload and exits, and abperf, a child subreaper for
//! that moment, inherits the workload as its own child: `wait4` and every signal, timeout and
//! counter path work on it exactly as on a direct child. The workload waits at a gate until
//! abperf has its pid, put it in the signal watcher's hands and attached any counters; the timed
//! region starts at the gate, as on the `-e` path.
//!
//! Within an experiment one helper serves every run instead (`--server`: see `spawn_server` and
//! `spawn_fork`): it clones each workload with CLONE_PARENT, so that abperf is its parent from
//! the start and no exec of the helper is paid per run. The one-shot form below remains for
//! commands started outside an experiment and for command lines too long for one request.
//!
//! Protocol: `abperf __abperf-spawn-helper CPUS -- PROGRAM ARGV...`, with fd 3 the gate (read
//! end), fd 4 the exec-error pipe (write end: 4 bytes of errno if exec fails) and fd 5 the report
//! pipe (the workload's pid, 4 bytes); stdin/stdout/stderr are already what the workload gets.

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};

/// The argument that makes the abperf binary act as the helper.
pub const HELPER_ARG: &str = "__abperf-spawn-helper";

pub(super) use super::spawn_fork::{ERR_FD, GATE_FD, REPORT_FD};

/// Set once `main` has offered this binary as the helper.
static AVAILABLE: AtomicBool = AtomicBool::new(false);

/// Call first thing in `main`: serve as the helper when asked (never returns then), else note
/// that this binary can serve as one for the workloads it starts.
pub fn main_hook() {
    let mut args = std::env::args_os();
    let _argv0 = args.next();
    if args.next().as_deref() == Some(OsStr::new(HELPER_ARG)) {
        let rest: Vec<OsString> = args.collect();
        // SAFETY: _exit has no preconditions; nothing of this process needs flushing.
        unsafe { libc::_exit(helper(&rest)) };
    }
    AVAILABLE.store(true, Ordering::SeqCst);
}

/// The helper to exec: the `abperf-spawn` binary beside this one (no Rust runtime, smallest), else
/// this binary itself in helper mode (`/proc/self/exe`, which works even if the file was replaced
/// since; its private memory is larger, 0.5 MiB in a release build, 1 MiB in a debug build).
pub struct HelperProgram {
    pub path: std::ffi::CString,
    /// This binary (needs [`HELPER_ARG`] first).
    pub is_self: bool,
}

pub fn program() -> &'static HelperProgram {
    static P: std::sync::OnceLock<HelperProgram> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let beside = std::env::current_exe()
            .ok()
            .map(|e| e.with_file_name("abperf-spawn"))
            .filter(|p| {
                use std::os::unix::fs::PermissionsExt;
                p.metadata()
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            });
        match beside.and_then(|p| CString::new(p.as_os_str().as_bytes()).ok()) {
            Some(path) => HelperProgram {
                path,
                is_self: false,
            },
            None => HelperProgram {
                path: c"/proc/self/exe".to_owned(),
                is_self: true,
            },
        }
    })
}

/// Whether workloads are started through the helper (the abperf binary called `main_hook`;
/// library users and unit tests start them directly).
pub fn available() -> bool {
    AVAILABLE.load(Ordering::SeqCst) && std::env::var_os("ABPERF_NO_SPAWN_HELPER").is_none()
}

fn fail(msg: &str) -> i32 {
    abperf_model::error::stderr_line(&format!("abperf spawn helper: {msg}"));
    126
}

/// The helper itself: pin, fork the workload (which waits at the gate, then execs), report its
/// pid, exit.
fn helper(args: &[OsString]) -> i32 {
    if args.len() == 1 && args[0] == super::spawn_fork::SERVER_ARG {
        // SAFETY: this process has one thread (the helper starts nothing); fd 3 is abperf's.
        return unsafe { super::spawn_fork::serve() };
    }
    if args.len() < 3 || args[1] != "--" {
        return fail("usage: CPUS -- PROGRAM ARGV...");
    }
    let cpus = args[0].to_string_lossy();
    if cpus != "-" {
        match super::cpuset::CpuSet::parse(&cpus) {
            Ok(set) => {
                if set.apply_to_self() != 0 {
                    return fail(&format!(
                        "cannot pin to CPUs {cpus}: {}",
                        std::io::Error::last_os_error()
                    ));
                }
            }
            Err(e) => return fail(&format!("{e:#}")),
        }
    }
    let Ok(program) = CString::new(args[2].as_bytes()) else {
        return fail("NUL in the program name");
    };
    let Ok(argv): Result<Vec<CString>, _> = args[3..]
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect()
    else {
        return fail("NUL in an argument");
    };
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    // SAFETY: this process has one thread (the helper starts nothing); program and argv are
    // valid C strings that outlive the call.
    match unsafe { super::spawn_fork::fork_workload(program.as_ptr(), argv_ptrs.as_ptr()) } {
        Ok(()) => 0,
        Err(m) => fail(m),
    }
}
