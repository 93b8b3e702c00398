//! `signal`: delivery of SIGUSR1 to the calling thread and return from the handler (tgkill ->
//! signal frame with the xstate -> handler -> sigreturn), minus a tgkill of signal 0 (same
//! syscall, no delivery); with the register state clean and with AVX-512 state dirty.

use super::cpu::CpuInfo;
use super::harness::{Rounds, collect, median};
use super::timer::{start, stop};
use super::{Options, Sink};
use anyhow::Result;
use std::cell::Cell;
use std::sync::Mutex;

thread_local! {
    /// Handler runs on this thread: the signals are sent to the measuring thread itself, and
    /// interleaved variants (`micro -k`) measure in threads of their own, each counting its own.
    static HITS: Cell<u64> = const { Cell::new(0) };
}

extern "C" fn on_signal(_: libc::c_int) {
    // A const-initialised thread-local without destructor: plain TLS, async-signal-safe.
    HITS.with(|h| h.set(h.get() + 1));
}

fn hits() -> u64 {
    HITS.with(|h| h.get())
}

/// Benchmarks holding the handler, and the action before the first of them installed it.
static INSTALLED: Mutex<(usize, Option<libc::sigaction>)> = Mutex::new((0, None));

/// SIGUSR1 handler installed for the benchmark; the previous action is restored when the last
/// holder drops it (interleaved variants hold it at the same time).
struct Handler;

impl Handler {
    fn install() -> Result<Handler> {
        let mut g = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        if g.0 == 0 {
            // SAFETY: plain sigaction calls with valid structs; the handler is async-signal-safe.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as *const () as usize;
                libc::sigemptyset(&mut sa.sa_mask);
                sa.sa_flags = libc::SA_RESTART;
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGUSR1, &sa, &mut old) != 0 {
                    return Err(std::io::Error::last_os_error().into());
                }
                g.1 = Some(old);
            }
        }
        g.0 += 1;
        Ok(Handler)
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        let mut g = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        g.0 -= 1;
        if g.0 == 0
            && let Some(old) = g.1.take()
        {
            // SAFETY: restoring the saved action.
            unsafe { libc::sigaction(libc::SIGUSR1, &old, std::ptr::null_mut()) };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod raw {
    use core::arch::asm;

    /// tgkill(pid, tid, sig) as one syscall instruction.
    #[inline(never)]
    pub fn tgkill(pid: i64, tid: i64, sig: i64) -> i64 {
        let r: i64;
        // SAFETY: tgkill on our own thread; syscall clobbers rcx and r11.
        unsafe {
            asm!("syscall", inlateout("rax") libc::SYS_tgkill => r, in("rdi") pid, in("rsi") tid,
                 in("rdx") sig, lateout("rcx") _, lateout("r11") _, options(nostack));
        }
        r
    }

    /// Make every AVX-512 register non-zero, then tgkill: the signal frame must hold it all.
    #[target_feature(enable = "avx512f")]
    #[inline(never)]
    pub unsafe fn tgkill_dirty(pid: i64, tid: i64, sig: i64) -> i64 {
        let r: i64;
        // SAFETY: every vector and mask register is clobbered (clobber_abi).
        unsafe {
            asm!(
                "vpternlogd zmm0, zmm0, zmm0, 0xff", "vpternlogd zmm1, zmm1, zmm1, 0xff",
                "vpternlogd zmm2, zmm2, zmm2, 0xff", "vpternlogd zmm3, zmm3, zmm3, 0xff",
                "vpternlogd zmm8, zmm8, zmm8, 0xff", "vpternlogd zmm15, zmm15, zmm15, 0xff",
                "vpternlogd zmm16, zmm16, zmm16, 0xff", "vpternlogd zmm17, zmm17, zmm17, 0xff",
                "vpternlogd zmm24, zmm24, zmm24, 0xff", "vpternlogd zmm31, zmm31, zmm31, 0xff",
                "kxnorw k1, k0, k0", "kxnorw k7, k0, k0",
                "syscall",
                inlateout("rax") libc::SYS_tgkill => r, in("rdi") pid, in("rsi") tid, in("rdx") sig,
                clobber_abi("C"), options(nostack),
            );
        }
        r
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod raw {
    pub fn tgkill(pid: i64, tid: i64, sig: i64) -> i64 {
        // SAFETY: tgkill on our own thread.
        unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, sig) as i64 }
    }
}

/// Signals sent per timed sample.
const K: usize = 32;

/// The samples of one run of the benchmark: the tgkill(0) baseline, the clean and the dirty
/// deliveries (net of the baseline's median, `b`), XINUSE as last seen after each kind, and the
/// rounds they were spread over.
struct Deliveries {
    base: Vec<f64>,
    b: f64,
    clean: Vec<f64>,
    /// None: AVX-512 is missing (skipped).
    dirty: Option<Vec<f64>>,
    xin_clean: Option<u64>,
    xin_dirty: Option<u64>,
    rounds: Rounds,
}

pub fn bench(sink: &mut Sink, opts: &Options, cpu: &CpuInfo) -> Result<()> {
    let d = measure(sink, opts, cpu)?;
    d.add_to(sink);
    Ok(())
}

/// Time the deliveries with the handler installed, and check that it ran once per signal sent.
fn measure(sink: &mut Sink, opts: &Options, cpu: &CpuInfo) -> Result<Deliveries> {
    let samples = opts.samples(61, 301);
    let oh = sink.timer.overhead;
    let _h = Handler::install()?;
    // SAFETY: plain getters.
    let (pid, tid) = unsafe { (libc::getpid() as i64, libc::gettid() as i64) };
    #[cfg(target_arch = "x86_64")]
    super::xstate::reset_upper_state(cpu);
    let time = |sig: i64, dirty: bool| -> f64 {
        let t0 = start();
        for _ in 0..K {
            #[cfg(target_arch = "x86_64")]
            if dirty {
                // SAFETY: only called when AVX-512 is usable.
                unsafe { raw::tgkill_dirty(pid, tid, sig) };
                continue;
            }
            let _ = dirty;
            raw::tgkill(pid, tid, sig);
        }
        let t1 = stop();
        (t1.wrapping_sub(t0) as f64 - oh) / K as f64
    };
    // Rounds spread over the span (see harness::Rounds); in each, the tgkill(0) baseline, then
    // clean and dirty deliveries interleaved so that drift hits both alike. The baseline's
    // median over all rounds is subtracted at the end.
    let mut rounds = opts.rounds(samples);
    let before = hits();
    let avx_missing = cpu.avx512_missing();
    if let Some(why) = &avx_missing {
        sink.skip("signal", Some("avx512-dirty".into()), why.clone());
    }
    let (mut base, mut clean, mut dirty) = (Vec::new(), Vec::new(), Vec::new());
    let (mut xin_clean, mut xin_dirty) = (None, None);
    let mut sent = 0usize;
    for r in 0..rounds.count() {
        sink.round(&mut rounds, r)?;
        let per = rounds.per(r);
        let warm = if r == 0 { 10 } else { 2 };
        base.extend(collect(warm, per, || time(0, false)));
        for i in 0..per + warm {
            #[cfg(target_arch = "x86_64")]
            super::xstate::reset_upper_state(cpu);
            let c = time(libc::SIGUSR1 as i64, false);
            sent += 1;
            xin_clean = super::cpu::xinuse(cpu);
            let d = if avx_missing.is_none() {
                let d = time(libc::SIGUSR1 as i64, true);
                sent += 1;
                xin_dirty = super::cpu::xinuse(cpu);
                Some(d)
            } else {
                None
            };
            if i >= warm {
                clean.push(c);
                dirty.extend(d);
            }
        }
    }
    #[cfg(target_arch = "x86_64")]
    super::xstate::reset_upper_state(cpu);
    let delivered = hits() - before;
    let expected = (sent * K) as u64;
    if delivered != expected {
        anyhow::bail!("signal handler ran {delivered} times, expected {expected}");
    }
    let b = median(&base);
    for v in [&mut clean, &mut dirty] {
        for x in v.iter_mut() {
            *x -= b;
        }
    }
    Ok(Deliveries {
        base,
        b,
        clean,
        dirty: avx_missing.is_none().then_some(dirty),
        xin_clean,
        xin_dirty,
        rounds,
    })
}

impl Deliveries {
    /// The samples to the sink, and the finding: the extra cost of dirty AVX-512 state.
    fn add_to(self, sink: &mut Sink) {
        let (b, rounds) = (self.b, &self.rounds);
        sink.add(
            "signal",
            "signal/tgkill-sig0".into(),
            &[("sig", "0".into()), ("state", "clean".into())],
            "call",
            1,
            self.base,
            rounds,
        );
        let hex = |x: Option<u64>| {
            x.map(|x| format!("0x{x:x}"))
                .unwrap_or_else(|| "n/a".into())
        };
        sink.add(
            "signal",
            "signal/deliver/clean".into(),
            &[
                ("sig", "SIGUSR1".into()),
                ("state", "clean".into()),
                ("xinuse", hex(self.xin_clean)),
            ],
            "signal",
            1,
            self.clean,
            rounds,
        );
        if let Some(dirty) = self.dirty {
            sink.add(
                "signal",
                "signal/deliver/avx512-dirty".into(),
                &[
                    ("sig", "SIGUSR1".into()),
                    ("state", "avx512-dirty".into()),
                    ("xinuse", hex(self.xin_dirty)),
                ],
                "signal",
                1,
                dirty,
                rounds,
            );
            if let (Some(c), Some(d)) = (
                sink.median("signal/deliver/clean"),
                sink.median("signal/deliver/avx512-dirty"),
            ) {
                sink.finding("signal", "avx512-extra", Some(d - c), "cycles", format!(
                    "signal delivery+return: {c:.0} cycles clean, {d:.0} with dirty AVX-512 ({:+.0}; tgkill itself {b:.0})",
                    d - c));
            }
        }
    }
}
