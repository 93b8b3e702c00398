//! TSC frequency: calibrated against CLOCK_MONOTONIC_RAW (the trace's x86-tsc clock counts the
//! same TSC that user-space rdtsc reads, also inside a VM).

use std::time::Duration;

/// TSC ticks per second, measured over about `span` (100 ms gives about 5 significant digits),
/// with the micro timer's calibration against CLOCK_MONOTONIC_RAW. `None` on CPUs without a TSC.
pub fn calibrate(span: Duration) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        let hz = abperf_measure::tsc::calibrate((span.as_millis() as u64 / 3).max(1));
        (hz.is_finite() && hz > 0.0).then_some(hz)
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
