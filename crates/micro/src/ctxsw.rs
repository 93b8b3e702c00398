//! `ctxsw`: pipe ping-pong between two threads or two processes, on the same CPU and on two
//! CPUs, with the register state clean or AVX-512-dirty. One round trip is two one-byte writes
//! and two blocking reads; on one CPU it is two context switches.

use super::cpu::CpuInfo;
use super::harness::{collect, pin_current};
use super::timer::{start, stop};
use super::{Options, Sink};
use anyhow::{Context, Result};
use std::io::{PipeReader, PipeWriter};
use std::os::fd::AsRawFd;

#[cfg(target_arch = "x86_64")]
mod raw {
    use core::arch::asm;

    /// write(wfd, buf, 1) then read(rfd, buf, 1); returns the read's result.
    #[inline(never)]
    pub fn xfer(wfd: i32, rfd: i32, buf: *mut u8) -> i64 {
        let r: i64;
        // SAFETY: one-byte write and read on our pipes into a valid buffer.
        unsafe {
            asm!(
                "mov eax, 1", "mov rdi, r8", "mov rsi, r10", "mov edx, 1", "syscall",
                "xor eax, eax", "mov rdi, r9", "mov rsi, r10", "mov edx, 1", "syscall",
                in("r8") wfd as i64, in("r9") rfd as i64, in("r10") buf, lateout("rax") r,
                clobber_abi("C"), options(nostack),
            );
        }
        r
    }

    /// The same with every AVX-512 register made non-zero first, so that the context switch
    /// inside the read has the full AVX-512 state to save and restore.
    #[target_feature(enable = "avx512f")]
    #[inline(never)]
    pub unsafe fn xfer_dirty(wfd: i32, rfd: i32, buf: *mut u8) -> i64 {
        let r: i64;
        // SAFETY: as above; vector and mask registers are clobbered.
        unsafe {
            asm!(
                "vpternlogd zmm0, zmm0, zmm0, 0xff", "vpternlogd zmm1, zmm1, zmm1, 0xff",
                "vpternlogd zmm8, zmm8, zmm8, 0xff", "vpternlogd zmm15, zmm15, zmm15, 0xff",
                "vpternlogd zmm16, zmm16, zmm16, 0xff", "vpternlogd zmm23, zmm23, zmm23, 0xff",
                "vpternlogd zmm31, zmm31, zmm31, 0xff", "kxnorw k1, k0, k0", "kxnorw k7, k0, k0",
                "mov eax, 1", "mov rdi, r8", "mov rsi, r10", "mov edx, 1", "syscall",
                "xor eax, eax", "mov rdi, r9", "mov rsi, r10", "mov edx, 1", "syscall",
                in("r8") wfd as i64, in("r9") rfd as i64, in("r10") buf, lateout("rax") r,
                clobber_abi("C"), options(nostack),
            );
        }
        r
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod raw {
    pub fn xfer(wfd: i32, rfd: i32, buf: *mut u8) -> i64 {
        // SAFETY: one-byte write and read on our pipes into a valid buffer.
        unsafe {
            libc::write(wfd, buf as *const _, 1);
            libc::read(rfd, buf as *mut _, 1) as i64
        }
    }
}

#[inline(always)]
fn xfer(wfd: i32, rfd: i32, buf: *mut u8, dirty: bool) -> i64 {
    #[cfg(target_arch = "x86_64")]
    if dirty {
        // SAFETY: callers pass dirty = true only when AVX-512 is usable.
        return unsafe { raw::xfer_dirty(wfd, rfd, buf) };
    }
    let _ = dirty;
    raw::xfer(wfd, rfd, buf)
}

/// The partner: read a byte, then answer and wait for the next until EOF. Only raw syscalls,
/// so that it is safe in a forked child.
fn echo(rfd: i32, wfd: i32, dirty: bool, cpu: &CpuInfo) {
    let mut b = 0u8;
    #[cfg(target_arch = "x86_64")]
    if !dirty {
        super::xstate::reset_upper_state(cpu);
    }
    let _ = cpu;
    // SAFETY: reading one byte into a valid buffer.
    if unsafe { libc::read(rfd, &mut b as *mut u8 as *mut _, 1) } != 1 {
        return;
    }
    while xfer(wfd, rfd, &mut b, dirty) == 1 {}
}

/// Round trips timed by the initiator (this thread): returns cycles per round trip per sample.
fn initiate(
    w: &PipeWriter,
    r: &PipeReader,
    dirty: bool,
    trips: usize,
    samples: usize,
    oh: f64,
) -> Result<Vec<f64>> {
    let mut b = 1u8;
    let mut failed = false;
    let s = collect(3, samples, || {
        let t0 = start();
        for _ in 0..trips {
            if xfer(w.as_raw_fd(), r.as_raw_fd(), &mut b, dirty) != 1 {
                failed = true;
                break;
            }
        }
        let t1 = stop();
        (t1.wrapping_sub(t0) as f64 - oh) / trips as f64
    });
    if failed {
        anyhow::bail!("the ping-pong partner stopped answering");
    }
    Ok(s)
}

fn run_threads(
    cpu: usize,
    peer: usize,
    dirty: bool,
    trips: usize,
    samples: usize,
    oh: f64,
    info: &CpuInfo,
) -> Result<Vec<f64>> {
    let (r1, w1) = std::io::pipe().context("pipe2")?;
    let (r2, w2) = std::io::pipe().context("pipe2")?;
    let info2 = info.clone();
    let rt = super::harness::is_realtime();
    let h = std::thread::spawn(move || {
        let ok = pin_current(peer).is_ok() && (!rt || super::harness::make_realtime().is_ok());
        if ok {
            echo(r1.as_raw_fd(), w2.as_raw_fd(), dirty, &info2);
        }
        ok
    });
    let _ = cpu;
    let res = initiate(&w1, &r2, dirty, trips, samples, oh);
    drop(w1);
    let pinned = h
        .join()
        .map_err(|_| anyhow::anyhow!("ping-pong thread panicked"))?;
    if !pinned {
        anyhow::bail!("cannot pin the partner thread to CPU {peer}");
    }
    res
}

fn run_processes(
    peer: usize,
    dirty: bool,
    trips: usize,
    samples: usize,
    oh: f64,
    info: &CpuInfo,
) -> Result<Vec<f64>> {
    let (r1, w1) = std::io::pipe().context("pipe2")?;
    let (r2, w2) = std::io::pipe().context("pipe2")?;
    // SAFETY: the child only makes raw syscalls (affinity, read, write) and _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()).context("fork");
    }
    if pid == 0 {
        // The child's copies of the parent's ends must go, or its read never sees EOF.
        // SAFETY: closing descriptors this process owns; nothing else uses them here.
        unsafe {
            libc::close(w1.as_raw_fd());
            libc::close(r2.as_raw_fd());
        }
        let ok = pin_current(peer).is_ok();
        if ok {
            echo(r1.as_raw_fd(), w2.as_raw_fd(), dirty, info);
        }
        // SAFETY: leave the child without running destructors or atexit handlers.
        unsafe { libc::_exit(if ok { 0 } else { 3 }) };
    }
    drop(r1);
    drop(w2);
    let res = initiate(&w1, &r2, dirty, trips, samples, oh);
    drop(w1);
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 3 {
        anyhow::bail!("cannot pin the partner process to CPU {peer}");
    }
    res
}

pub fn bench(sink: &mut Sink, opts: &Options, cpu: &CpuInfo) -> Result<()> {
    let samples = opts.samples(15, 61);
    let trips = if opts.quick { 200 } else { 1000 };
    let oh = sink.timer.overhead;
    let mut placements = vec![("same-cpu", opts.cpu)];
    match opts.remote_cpu {
        Some(r) if r != opts.cpu => placements.push(("cross-cpu", r)),
        _ => sink.skip(
            "ctxsw",
            Some("cross-cpu".into()),
            "needs a second CPU (--remote-cpu)",
        ),
    }
    let avx_missing = cpu.avx512_missing();
    if let Some(why) = &avx_missing {
        sink.skip("ctxsw", Some("avx512-dirty".into()), why.clone());
    }
    // Configurations: (kind, placement, peer CPU, dirty).
    let mut configs = Vec::new();
    for kind in ["threads", "processes"] {
        for &(place, peer) in &placements {
            for dirty in [false, true] {
                if !(dirty && avx_missing.is_some()) {
                    configs.push((kind, place, peer, dirty));
                }
            }
        }
    }
    // Rounds spread over the span (see harness::Rounds), every configuration in each with a
    // partner of its own; a configuration that fails once is not measured again (and fails).
    let mut got: Vec<(Vec<f64>, String, Option<anyhow::Error>)> = configs
        .iter()
        .map(|_| (Vec::new(), String::new(), None))
        .collect();
    let mut rounds = opts.rounds(samples);
    for r in 0..rounds.count() {
        sink.round(&mut rounds, r)?;
        let per = rounds.per(r);
        for (&(kind, _, peer, dirty), (s, xin, err)) in configs.iter().zip(got.iter_mut()) {
            if err.is_some() {
                continue;
            }
            #[cfg(target_arch = "x86_64")]
            super::xstate::reset_upper_state(cpu);
            let res = if kind == "threads" {
                run_threads(opts.cpu, peer, dirty, trips, per, oh, cpu)
            } else {
                run_processes(peer, dirty, trips, per, oh, cpu)
            };
            *xin = super::cpu::xinuse(cpu)
                .map(|x| format!("0x{x:x}"))
                .unwrap_or_else(|| "n/a".into());
            match res {
                Ok(v) => s.extend(v),
                Err(e) => *err = Some(e),
            }
        }
    }
    for (&(kind, place, peer, dirty), (s, xin, err)) in configs.iter().zip(got) {
        let state = if dirty { "avx512-dirty" } else { "clean" };
        let name = format!("ctxsw/{kind}/{place}/{state}");
        match err {
            None => {
                sink.add(
                    "ctxsw",
                    name,
                    &[
                        ("kind", kind.into()),
                        ("placement", place.into()),
                        ("state", state.into()),
                        ("peer_cpu", peer.to_string()),
                        ("trips_per_sample", trips.to_string()),
                        ("xinuse_after", xin),
                    ],
                    "round trip",
                    1,
                    s,
                    &rounds,
                );
            }
            // A configuration that failed is a failure (micro exits 1 naming it), not a skip.
            Some(e) => sink.fail("ctxsw", Some(name), format!("{e:#}")),
        }
    }
    #[cfg(target_arch = "x86_64")]
    super::xstate::reset_upper_state(cpu);
    for kind in ["threads", "processes"] {
        if let (Some(c), Some(d)) = (
            sink.median(&format!("ctxsw/{kind}/same-cpu/clean")),
            sink.median(&format!("ctxsw/{kind}/same-cpu/avx512-dirty")),
        ) {
            sink.finding("ctxsw", &format!("{kind}-switch"), Some(c / 2.0), "cycles", format!(
                "{kind}, one CPU: {:.0} cycles per switch (round trip / 2), {:.0} with dirty AVX-512 ({:+.0} per switch)",
                c / 2.0, d / 2.0, (d - c) / 2.0));
        }
    }
    Ok(())
}
