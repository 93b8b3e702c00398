//! The cycle timer: `lfence; rdtsc; lfence` .. `rdtscp; lfence` on x86_64, `isb; mrs cntvct_el0;
//! isb` on aarch64 (elsewhere CLOCK_MONOTONIC_RAW in ns). Its overhead (an empty start/stop pair)
//! and resolution (smallest step of the counter) are measured; benchmarks subtract the overhead.
//! The counter frequency comes from CPUID leaf 0x15 when it is complete, else from the
//! hypervisor's TSC leaf, else from a calibration against CLOCK_MONOTONIC_RAW.

use super::harness::Summary;
use super::{Options, Sink};
use serde::Serialize;

use abperf_measure::tsc::raw;
pub use abperf_measure::tsc::{calibrate, mono_raw_ns, start, stop};

/// Counter ticks per core clock cycle: a chain of 10,000 dependent register-register adds (one
/// cycle each on any modern core) timed with the counter; the median of 21 tries. The addend is
/// a register: Intel cores since Golden Cove fold `add reg, imm` chains in the renamer (0.13
/// ticks per add on the Xeon VM here, 5 adds per cycle), which read as a 13 GHz clock. On x86 the TSC runs at a fixed
/// rate, so this shows the core's actual clock (turbo, throttling); a busy SMT sibling hardly
/// slows a dependent chain (see [`CoreProbe`]).
pub fn ticks_per_core_cycle() -> f64 {
    median_ticks(add_chain_1000, 21) / 10_000.0
}

/// Median counter ticks of `tries` timed calls of `f`.
fn median_ticks(f: fn(), tries: usize) -> f64 {
    let v: Vec<f64> = (0..tries)
        .map(|_| {
            let t0 = start();
            f();
            stop().wrapping_sub(t0) as f64
        })
        .collect();
    super::harness::median(&v)
}

/// The core's state at one moment: its clock against the counter, and how many of its
/// execution ports it has to itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoreProbe {
    /// Counter ticks per core cycle (a chain of 10,000 dependent adds, one cycle each).
    pub ticks_per_core_cycle: f64,
    /// Independent adds retired per core cycle: 16,000 adds spread over 8 registers against the
    /// dependent chain. A core with its execution ports to itself retires close to its ALU
    /// count (3.7 on this Zen 4 VM); a busy SMT sibling takes ports away (2.0-3.3 here, in
    /// phases from a millisecond to minutes) while the dependent chain does not notice. Kernel
    /// paths and port-bound code slow down with it.
    pub adds_per_cycle: f64,
}

/// Probe the core now: the median of 7 tries of each loop (about 30 us in all).
pub fn probe_core() -> CoreProbe {
    let dep = median_ticks(add_chain_1000, 7) / 10_000.0;
    let wide = median_ticks(add_wide_1000, 7) / 16_000.0;
    CoreProbe {
        ticks_per_core_cycle: dep,
        adds_per_cycle: dep / wide,
    }
}

#[inline(never)]
fn add_wide_1000() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: register-only arithmetic.
    unsafe {
        core::arch::asm!(
            "2:",
            "add {a}, {one}", "add {b}, {one}", "add {c}, {one}", "add {d}, {one}",
            "add {e}, {one}", "add {f}, {one}", "add {g}, {one}", "add {h}, {one}",
            "add {a}, {one}", "add {b}, {one}", "add {c}, {one}", "add {d}, {one}",
            "add {e}, {one}", "add {f}, {one}", "add {g}, {one}", "add {h}, {one}",
            "dec {n}", "jnz 2b",
            a = inout(reg) 0u64 => _, b = inout(reg) 0u64 => _, c = inout(reg) 0u64 => _,
            d = inout(reg) 0u64 => _, e = inout(reg) 0u64 => _, f = inout(reg) 0u64 => _,
            g = inout(reg) 0u64 => _, h = inout(reg) 0u64 => _, n = inout(reg) 1000u64 => _,
            one = in(reg) 1u64, options(nostack, nomem),
        );
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: register-only arithmetic.
    unsafe {
        core::arch::asm!(
            "2:",
            "add {a}, {a}, 1", "add {b}, {b}, 1", "add {c}, {c}, 1", "add {d}, {d}, 1",
            "add {e}, {e}, 1", "add {f}, {f}, 1", "add {g}, {g}, 1", "add {h}, {h}, 1",
            "add {a}, {a}, 1", "add {b}, {b}, 1", "add {c}, {c}, 1", "add {d}, {d}, 1",
            "add {e}, {e}, 1", "add {f}, {f}, 1", "add {g}, {g}, 1", "add {h}, {h}, 1",
            "subs {n}, {n}, 1", "b.ne 2b",
            a = inout(reg) 0u64 => _, b = inout(reg) 0u64 => _, c = inout(reg) 0u64 => _,
            d = inout(reg) 0u64 => _, e = inout(reg) 0u64 => _, f = inout(reg) 0u64 => _,
            g = inout(reg) 0u64 => _, h = inout(reg) 0u64 => _, n = inout(reg) 1000u64 => _,
            options(nostack, nomem),
        );
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let mut x = [0u64; 8];
        for _ in 0..2000 {
            for v in &mut x {
                *v = std::hint::black_box(*v + 1);
            }
        }
    }
}

#[inline(never)]
fn add_chain_1000() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: register-only arithmetic.
    unsafe {
        core::arch::asm!(
            "2:",
            "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
            "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
            "dec {n}", "jnz 2b",
            x = inout(reg) 0u64 => _, n = inout(reg) 1000u64 => _, one = in(reg) 1u64,
            options(nostack, nomem),
        );
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: register-only arithmetic.
    unsafe {
        core::arch::asm!(
            "2:",
            "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1",
            "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1",
            "subs {n}, {n}, 1", "b.ne 2b",
            x = inout(reg) 0u64 => _, n = inout(reg) 1000u64 => _, options(nostack, nomem),
        );
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let mut x = 0u64;
        for _ in 0..10_000 {
            x = std::hint::black_box(x + 1);
        }
    }
}

/// What we know about the timer on this machine.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct TimerInfo {
    /// Name of the counter (`tsc`, `cntvct_el0`, `clock_monotonic_raw`).
    pub counter: String,
    /// Counter frequency in Hz.
    pub hz: f64,
    /// Where `hz` came from.
    pub hz_source: String,
    /// Calibrated frequency (always measured, as a cross-check), Hz.
    pub hz_calibrated: f64,
    /// Cycles subtracted from every timed region: the median of an empty start/stop pair.
    pub overhead: f64,
    /// Distribution of the empty start/stop pair, cycles.
    pub empty_pair: Summary,
    /// Core clock in GHz when the timer was measured (counter frequency / ticks per dependent
    /// add); compare it between runs to see frequency changes.
    pub core_ghz: f64,
    /// Step of the counter, cycles (26 on this VM's scaled TSC, 1 on bare-metal x86).
    pub resolution: u64,
}

impl TimerInfo {
    pub fn measure(quick: bool) -> TimerInfo {
        let (counter, fixed) = counter_frequency();
        let hz_calibrated = calibrate(if quick { 20 } else { 100 });
        let (hz, hz_source) = match fixed {
            Some((hz, src)) => (hz, src),
            None => (
                hz_calibrated,
                "calibrated against CLOCK_MONOTONIC_RAW".to_string(),
            ),
        };
        let pairs = empty_pairs(if quick { 20_000 } else { 200_000 });
        let empty_pair = Summary::of(&pairs);
        TimerInfo {
            counter: counter.to_string(),
            hz,
            hz_source,
            hz_calibrated,
            overhead: empty_pair.median,
            empty_pair,
            resolution: resolution(),
            core_ghz: hz / ticks_per_core_cycle() / 1e9,
        }
    }

    /// Cycles of a timed region `t1 - t0` with the timer overhead removed (may be negative
    /// for regions shorter than the counter's step; medians over many samples stay unbiased).
    #[inline(always)]
    pub fn net(&self, t0: u64, t1: u64) -> f64 {
        t1.wrapping_sub(t0) as f64 - self.overhead
    }

    pub fn ns(&self, cycles: f64) -> f64 {
        cycles * 1e9 / self.hz
    }
}

fn empty_pairs(n: usize) -> Vec<f64> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = start();
        let t1 = stop();
        v.push(t1.wrapping_sub(t0) as f64);
    }
    v
}

fn resolution() -> u64 {
    // Steps between successive distinct values of a tight read loop. A scaled virtual TSC moves
    // in coarse steps (26 cycles here) with an occasional 1-cycle phase correction, so the
    // resolution is the largest step that divides at least 75% of the observed steps.
    let mut steps = Vec::with_capacity(50_000);
    let mut last = raw();
    while steps.len() < 50_000 {
        let t = raw();
        if t != last {
            steps.push(t.wrapping_sub(last));
            last = t;
        }
    }
    resolution_of(&steps)
}

/// The largest g (up to the median step, at most 1024) dividing at least 75% of `steps`.
pub fn resolution_of(steps: &[u64]) -> u64 {
    let mut sorted = steps.to_vec();
    sorted.sort_unstable();
    let typical = sorted
        .get(sorted.len() / 2)
        .copied()
        .unwrap_or(1)
        .clamp(1, 1024);
    (1..=typical)
        .rev()
        .find(|&g| steps.iter().filter(|&&d| d % g == 0).count() * 4 >= steps.len() * 3)
        .unwrap_or(1)
}

/// The counter's name and, when the hardware states it, its frequency.
fn counter_frequency() -> (&'static str, Option<(f64, String)>) {
    #[cfg(target_arch = "x86_64")]
    {
        use super::cpu::cpuid;
        let max = cpuid(0, 0).0;
        if max >= 0x15 {
            let (den, num, crystal, _) = cpuid(0x15, 0);
            if den != 0 && num != 0 && crystal != 0 {
                let hz = crystal as f64 * num as f64 / den as f64;
                return (
                    "tsc",
                    Some((hz, "cpuid leaf 0x15 (crystal x ratio)".into())),
                );
            }
        }
        let hv = cpuid(1, 0).2 & (1 << 31) != 0;
        if hv && cpuid(0x4000_0000, 0).0 >= 0x4000_0010 {
            let khz = cpuid(0x4000_0010, 0).0;
            if khz != 0 {
                return (
                    "tsc",
                    Some((khz as f64 * 1e3, "hypervisor cpuid leaf 0x40000010".into())),
                );
            }
        }
        // Leaf 0x16 only gives the nominal base frequency (not the TSC's): calibrate instead.
        ("tsc", None)
    }
    #[cfg(target_arch = "aarch64")]
    {
        let f: u64;
        // SAFETY: reading the architectural counter frequency register is allowed at EL0 on Linux.
        unsafe { core::arch::asm!("mrs {f}, cntfrq_el0", f = out(reg) f, options(nostack, nomem)) };
        (
            "cntvct_el0",
            (f != 0).then(|| (f as f64, "cntfrq_el0".to_string())),
        )
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        (
            "clock_monotonic_raw",
            Some((1e9, "nanoseconds".to_string())),
        )
    }
}

/// The `timer` benchmark: record the empty pair's distribution and the counter's properties.
pub fn bench(sink: &mut Sink, opts: &Options) -> anyhow::Result<()> {
    let n = opts.samples(2001, 20_001);
    let mut rounds = opts.rounds(n);
    let mut pairs = Vec::with_capacity(n);
    for r in 0..rounds.count() {
        sink.round(&mut rounds, r)?;
        pairs.extend(empty_pairs(rounds.per(r)));
    }
    let t = sink.timer.clone();
    sink.add(
        "timer",
        "timer/empty-pair".into(),
        &[("counter", t.counter.clone())],
        "pair",
        1,
        pairs,
        &rounds,
    );
    sink.finding(
        "timer",
        "overhead",
        Some(t.overhead),
        "cycles",
        format!(
            "empty start/stop pair, subtracted from every timed region (min {:.0}, p90 {:.0})",
            t.empty_pair.min, t.empty_pair.p90
        ),
    );
    sink.finding(
        "timer",
        "resolution",
        Some(t.resolution as f64),
        "cycles",
        "step of the counter (largest step dividing 75% of the changes seen in a tight read loop)"
            .into(),
    );
    sink.finding(
        "timer",
        "core-clock",
        Some(t.core_ghz),
        "GHz",
        format!(
            "core clock {:.2} GHz (dependent add chain: {:.3} counter ticks per core cycle); \
             figures are in counter ticks",
            t.core_ghz,
            t.hz / 1e9 / t.core_ghz
        ),
    );
    sink.finding(
        "timer",
        "frequency",
        Some(t.hz / 1e6),
        "MHz",
        format!(
            "{} (calibration against CLOCK_MONOTONIC_RAW: {:.3} MHz)",
            t.hz_source,
            t.hz_calibrated / 1e6
        ),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_per_cycle_is_between_one_and_the_alu_count() {
        // Independent adds never retire slower than a dependent chain, and no core has more
        // than 8 integer ALUs. A probe preempted by another process on this shared machine
        // reads nonsense, so one of three probes must hold.
        let xs: Vec<f64> = (0..3).map(|_| probe_core().adds_per_cycle).collect();
        assert!(xs.iter().any(|x| (0.9..8.5).contains(x)), "{xs:?}");
    }

    #[test]
    fn resolution_of_coarse_and_fine_counters() {
        let mut v = vec![26u64; 90];
        v.extend([52, 78, 25, 1, 26, 104, 52, 26, 26, 26]);
        assert_eq!(resolution_of(&v), 26);
        let fine: Vec<u64> = (0..100).map(|i| 24 + i % 7).collect();
        assert_eq!(resolution_of(&fine), 1);
    }

    #[test]
    fn timer_is_monotonic_and_calibrates() {
        let t = TimerInfo::measure(true);
        assert!(t.hz > 1e6, "{t:?}");
        assert!(t.overhead >= 0.0 && t.overhead < 10_000.0, "{t:?}");
        let a = start();
        let b = stop();
        assert!(b >= a);
    }
}
