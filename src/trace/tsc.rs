//! TSC frequency: calibrated against CLOCK_MONOTONIC_RAW (the trace's x86-tsc clock counts the
//! same TSC that user-space rdtsc reads, also inside a VM).

use std::time::Duration;

fn mono_raw_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(target_arch = "x86_64")]
fn rdtsc() -> u64 {
    // SAFETY: rdtsc is available on every x86-64 CPU.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Read one (tsc, ns) pair with the smallest gap around the clock read, out of a few tries.
#[cfg(target_arch = "x86_64")]
fn pair() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..16 {
        let a = rdtsc();
        let ns = mono_raw_ns();
        let b = rdtsc();
        if b - a < best.0 {
            best = (b - a, a + (b - a) / 2, ns);
        }
    }
    (best.1, best.2)
}

/// TSC ticks per second, measured over `span` (100 ms gives about 5 significant digits).
/// `None` on CPUs without a TSC.
pub fn calibrate(span: Duration) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        let (t0, n0) = pair();
        std::thread::sleep(span);
        let (t1, n1) = pair();
        if n1 <= n0 || t1 <= t0 {
            return None;
        }
        Some((t1 - t0) as f64 * 1e9 / (n1 - n0) as f64)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = span;
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn plausible_frequency() {
        let hz = super::calibrate(std::time::Duration::from_millis(50)).unwrap();
        assert!(hz > 1e8 && hz < 1e10, "{hz}");
    }
}
