//! Per-run resource usage from `wait4`'s rusage of the one child that was waited for (not
//! RUSAGE_CHILDREN, which accumulates the maximum RSS across all children ever reaped: the bug
//! that makes hyperfine's per-run memory figure wrong).

use abperf_model::Metric;

fn timeval_ns(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 * 1e9 + tv.tv_usec as f64 * 1e3
}

/// The metrics abperf stores from one rusage: times in ns, max RSS in KiB (Linux reports KiB),
/// the rest as counts.
pub fn metrics(ru: &libc::rusage) -> Vec<Metric> {
    vec![
        Metric::new("user_ns", timeval_ns(ru.ru_utime), "ns"),
        Metric::new("sys_ns", timeval_ns(ru.ru_stime), "ns"),
        Metric::new("maxrss_kib", ru.ru_maxrss as f64, "KiB"),
        Metric::new("minflt", ru.ru_minflt as f64, "count"),
        Metric::new("majflt", ru.ru_majflt as f64, "count"),
        Metric::new("nvcsw", ru.ru_nvcsw as f64, "count"),
        Metric::new("nivcsw", ru.ru_nivcsw as f64, "count"),
        Metric::new("inblock", ru.ru_inblock as f64, "count"),
        Metric::new("oublock", ru.ru_oublock as f64, "count"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_units() {
        // SAFETY: rusage is plain old data; all-zero is a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        ru.ru_utime.tv_sec = 1;
        ru.ru_utime.tv_usec = 500_000;
        ru.ru_maxrss = 2048;
        let m = metrics(&ru);
        assert_eq!(m[0].value, 1.5e9);
        assert_eq!(m[2].value, 2048.0);
        assert_eq!(m[2].unit, "KiB");
    }
}
