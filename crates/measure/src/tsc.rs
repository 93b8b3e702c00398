//! The cycle counter user space can read: `lfence; rdtsc; lfence` .. `rdtscp; lfence` on x86_64,
//! `isb; mrs cntvct_el0; isb` on aarch64, CLOCK_MONOTONIC_RAW in ns elsewhere; and its frequency
//! calibrated against CLOCK_MONOTONIC_RAW. `micro` times benchmarks with it; `trace` converts
//! x86-tsc trace clock ticks with its frequency.

/// `isb; mrs cntvct_el0; isb`: the virtual counter, with instructions on both sides kept out.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn cntvct_serialised() -> u64 {
    let t: u64;
    // SAFETY: reading the virtual counter is allowed at EL0 on Linux; no memory is touched.
    unsafe {
        core::arch::asm!("isb", "mrs {t}, cntvct_el0", "isb", t = out(reg) t, options(nostack))
    };
    t
}

/// Read the counter at the start of a timed region (no earlier instruction leaks in).
#[inline(always)]
pub fn start() -> u64 {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        use core::arch::x86_64::{_mm_lfence, _rdtsc};
        _mm_lfence();
        let t = _rdtsc();
        _mm_lfence();
        t
    }
    #[cfg(target_arch = "aarch64")]
    {
        cntvct_serialised()
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        mono_raw_ns()
    }
}

/// Read the counter at the end of a timed region (waits for earlier instructions to finish).
#[inline(always)]
pub fn stop() -> u64 {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        use core::arch::x86_64::{__rdtscp, _mm_lfence};
        let mut aux = 0u32;
        let t = __rdtscp(&mut aux);
        _mm_lfence();
        t
    }
    #[cfg(target_arch = "aarch64")]
    {
        cntvct_serialised()
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        mono_raw_ns()
    }
}

/// An unserialised read, for measuring the counter's step.
#[inline(always)]
pub fn raw() -> u64 {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(target_arch = "aarch64")]
    unsafe {
        let t: u64;
        core::arch::asm!("mrs {t}, cntvct_el0", t = out(reg) t, options(nostack, nomem));
        t
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        mono_raw_ns()
    }
}

/// CLOCK_MONOTONIC_RAW in ns.
pub fn mono_raw_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Counter ticks per second against CLOCK_MONOTONIC_RAW: median of 3 windows of `ms` ms.
pub fn calibrate(ms: u64) -> f64 {
    let read_pair = || {
        // Bracket the counter read by two clock reads; keep the tightest of a few tries.
        let mut best = (u64::MAX, 0u64, 0u64);
        for _ in 0..16 {
            let a = mono_raw_ns();
            let t = start();
            let b = mono_raw_ns();
            if b - a < best.0 {
                best = (b - a, (a + b) / 2, t);
            }
        }
        (best.1, best.2)
    };
    let mut rates = Vec::new();
    for _ in 0..3 {
        let (n0, t0) = read_pair();
        std::thread::sleep(std::time::Duration::from_millis(ms));
        let (n1, t1) = read_pair();
        rates.push(t1.wrapping_sub(t0) as f64 * 1e9 / (n1 - n0) as f64);
    }
    rates.sort_by(f64::total_cmp);
    rates[1]
}
