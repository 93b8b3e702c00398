//! Measurement harness: CPU pinning (restored on drop), warm-up, sampling and summaries.

use abperf_measure::affinity::Mask;
pub use abperf_measure::affinity::{allowed_cpus, pin_current};

/// Pins the calling thread to one CPU; restores the previous affinity when dropped.
pub struct Pin {
    saved: Mask,
}

impl Pin {
    pub fn to(cpu: usize) -> std::io::Result<Pin> {
        let saved = Mask::current()?;
        pin_current(cpu)?;
        Ok(Pin { saved })
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        let _ = self.saved.apply();
    }
}

/// Runs the calling thread under SCHED_FIFO priority 1 (so that other load on the machine
/// cannot preempt a measurement or deschedule a helper thread); restores the previous policy
/// when dropped.
pub struct Realtime {
    policy: i32,
    param: libc::sched_param,
}

impl Realtime {
    pub fn enter() -> std::io::Result<Realtime> {
        // SAFETY: sched_* calls on the calling thread with valid structs.
        unsafe {
            let policy = libc::sched_getscheduler(0);
            let mut param: libc::sched_param = std::mem::zeroed();
            if policy < 0 || libc::sched_getparam(0, &mut param) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            make_realtime()?;
            Ok(Realtime { policy, param })
        }
    }
}

impl Drop for Realtime {
    fn drop(&mut self) {
        // SAFETY: restoring what we read.
        unsafe { libc::sched_setscheduler(0, self.policy, &self.param) };
    }
}

/// Put the calling thread under SCHED_FIFO priority 1, without saving anything (helper threads
/// and forked children that end with the benchmark).
pub fn make_realtime() -> std::io::Result<()> {
    let p = libc::sched_param { sched_priority: 1 };
    // SAFETY: valid struct, calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether the calling thread runs under SCHED_FIFO (helpers copy the measuring thread).
pub fn is_realtime() -> bool {
    // SAFETY: plain query.
    unsafe { libc::sched_getscheduler(0) == libc::SCHED_FIFO }
}

/// Run `f` `warmup` times discarding the result, then `samples` times collecting it.
pub fn collect(warmup: usize, samples: usize, mut f: impl FnMut() -> f64) -> Vec<f64> {
    for _ in 0..warmup {
        std::hint::black_box(f());
    }
    (0..samples).map(|_| f()).collect()
}

/// A benchmark's samples split into rounds spread evenly over a span of wall time.
///
/// On a shared host the cost of a kernel path moves with what the SMT sibling of the vCPU is
/// doing, in phases from a millisecond to minutes (getppid here: 427 cycles with the sibling
/// idle, 545-628 with it busy), and with where the benchmark's memory happens to sit. Samples
/// taken within a few milliseconds see one phase, so two runs disagreed by up to 44%. Rounds
/// spread over a few seconds, each on fresh memory where the benchmark allows, see the mixture
/// instead: the worst of 37 medians then differed by 8.5-13% between two runs here, what the
/// host's load did between them (see `benches/micro_repeatability.sh`).
#[derive(Debug, Clone)]
pub struct Rounds {
    count: usize,
    samples: usize,
    span: std::time::Duration,
    origin: Option<std::time::Instant>,
    /// Per round: the index of its core probe in the sink (`Sink::round`), once begun.
    probes: Vec<Option<usize>>,
}

impl Rounds {
    /// `samples` split into at most `count` rounds (at least one sample each), the starts of the
    /// rounds spread over `span` (zero: back to back).
    pub fn new(samples: usize, count: usize, span: std::time::Duration) -> Rounds {
        let count = count.min(samples).max(1);
        Rounds {
            count,
            samples,
            span,
            origin: None,
            probes: vec![None; count],
        }
    }

    /// Round `r` began with probe `index` (see `Sink::round`).
    pub fn set_probe(&mut self, r: usize, index: usize) {
        if let Some(p) = self.probes.get_mut(r) {
            *p = Some(index);
        }
    }

    /// The probe round `r` began with, if it was begun.
    pub fn probe(&self, r: usize) -> Option<usize> {
        self.probes.get(r).copied().flatten()
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// Samples taken in round `r`; the rounds add up to the total.
    pub fn per(&self, r: usize) -> usize {
        self.samples / self.count + usize::from(r < self.samples % self.count)
    }

    /// Wait until round `r` is due: `r * span / count` after round 0 began. The wait sleeps, and
    /// spins for its last 2 ms so that the CPU is awake (not in an idle state or halted on the
    /// host) when the round's warm-up starts.
    pub fn wait(&mut self, r: usize) {
        let origin = *self.origin.get_or_insert_with(std::time::Instant::now);
        let due = origin + self.span.mul_f64(r as f64 / self.count as f64);
        let spin = std::time::Duration::from_millis(2);
        let now = std::time::Instant::now();
        if due > now + spin {
            std::thread::sleep(due - now - spin);
        }
        while std::time::Instant::now() < due {
            std::hint::spin_loop();
        }
    }
}

pub use abperf_model::describe::{Summary, median};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_split_samples_and_spread_in_time() {
        let r = Rounds::new(101, 16, std::time::Duration::ZERO);
        assert_eq!(r.count(), 16);
        assert_eq!((0..16).map(|i| r.per(i)).sum::<usize>(), 101);
        assert!((0..16).all(|i| r.per(i) == 6 || r.per(i) == 7));
        // Never more rounds than samples, never zero rounds.
        assert_eq!(Rounds::new(3, 16, std::time::Duration::ZERO).count(), 3);
        assert_eq!(Rounds::new(0, 16, std::time::Duration::ZERO).count(), 1);
        let span = std::time::Duration::from_millis(80);
        let mut r = Rounds::new(8, 4, span);
        let t0 = std::time::Instant::now();
        for i in 0..4 {
            r.wait(i);
        }
        let took = t0.elapsed();
        // Round 3 starts 3/4 of the span after round 0.
        assert!(took >= span.mul_f64(0.75), "{took:?}");
        assert!(took < span * 4, "{took:?}");
    }

    #[test]
    fn pin_and_restore() {
        let before = allowed_cpus();
        {
            let _p = Pin::to(before[0]).unwrap();
            assert_eq!(allowed_cpus(), vec![before[0]]);
        }
        assert_eq!(allowed_cpus(), before);
        assert!(Pin::to(100_000).is_err());
    }
}
