//! `abperf-spawn`: the small process abperf forks each workload from, so that the workload's max
//! RSS is its own (see `abperf::runner::spawn_helper`, which documents the protocol). No Rust
//! runtime (`#![no_main]`) and only plain libc calls, so that the copy of this process's private
//! memory that a fork makes, and that Linux folds into the child's `ru_maxrss` at exec, is as
//! small as GNU time's.
#![cfg_attr(not(test), no_main)]
#![cfg_attr(test, allow(dead_code))]

use std::ffi::{c_char, c_int};

#[path = "../../crates/run/src/runner/spawn_fork.rs"]
mod spawn_fork;

fn say(msg: &[u8]) -> c_int {
    // SAFETY: writes a valid buffer to fd 2.
    unsafe {
        libc::write(2, b"abperf-spawn: ".as_ptr().cast(), 14);
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::write(2, b"\n".as_ptr().cast(), 1);
    }
    126
}

/// Pin this process (and so the workload) to the CPUs of a list "0,2,5" (abperf passes it
/// normalised); "-" pins nothing.
unsafe fn pin(list: *const c_char) -> Result<(), &'static [u8]> {
    let bytes = unsafe { std::ffi::CStr::from_ptr(list) }.to_bytes();
    if bytes == b"-" {
        return Ok(());
    }
    let set = cpu_set(bytes)?;
    // SAFETY: set is a valid cpu_set_t of its size.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(b"cannot pin to the CPUs asked for");
    }
    Ok(())
}

/// The set of a list "0,2,5".
fn cpu_set(bytes: &[u8]) -> Result<libc::cpu_set_t, &'static [u8]> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let mut n: usize = 0;
    let mut digits = 0;
    for &b in bytes.iter().chain(b",") {
        match b {
            b'0'..=b'9' => {
                n = n * 10 + (b - b'0') as usize;
                digits += 1;
                if n >= libc::CPU_SETSIZE as usize {
                    return Err(b"CPU number out of range");
                }
            }
            b',' if digits > 0 => {
                // SAFETY: n < CPU_SETSIZE.
                unsafe { libc::CPU_SET(n, &mut set) };
                n = 0;
                digits = 0;
            }
            _ => return Err(b"bad CPU list"),
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        let s = cpu_set(b"0,2,13").unwrap();
        let on: Vec<usize> = (0..16)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &s) })
            .collect();
        assert_eq!(on, [0, 2, 13]);
        assert!(cpu_set(b"").is_err());
        assert!(cpu_set(b"1,,2").is_err());
        assert!(cpu_set(b"1-3").is_err());
        assert!(cpu_set(b"99999").is_err());
    }
}

/// argv: abperf-spawn CPUS -- PROGRAM ARGV0 ARGS..., or abperf-spawn --server (see
/// `runner::spawn_fork`: one process that starts every workload of an experiment).
///
/// # Safety
///
/// Called by the C runtime only: `argv` holds `argc` valid C strings and a NULL.
#[cfg(not(test))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    // SAFETY: argv holds argc valid C strings and a NULL; this process has one thread.
    if argc == 2
        && unsafe { std::ffi::CStr::from_ptr(*argv.offset(1)) }.to_bytes()
            == spawn_fork::SERVER_ARG.as_bytes()
    {
        return unsafe { spawn_fork::serve() };
    }
    if argc < 5 {
        return say(b"usage: abperf-spawn CPUS -- PROGRAM ARGV0 [ARGS...] (run only by abperf)");
    }
    // SAFETY: argv holds argc valid C strings and a NULL (the C runtime's guarantee).
    unsafe {
        let arg = |i: isize| *argv.offset(i);
        if std::ffi::CStr::from_ptr(arg(2)).to_bytes() != b"--" {
            return say(b"usage: abperf-spawn CPUS -- PROGRAM ARGV0 [ARGS...]");
        }
        if let Err(m) = pin(arg(1)) {
            return say(m);
        }
        match spawn_fork::fork_workload(arg(3), argv.offset(4)) {
            Ok(()) => 0,
            Err(m) => say(m.as_bytes()),
        }
    }
}
