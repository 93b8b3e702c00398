//! Which direction is better for a metric. Times, counts and sizes: lower is better. Rates
//! (a unit "per second", ops/s, MB/s, Hz) and names saying throughput/bandwidth/rate: higher is
//! better, and every verdict on them says so.

/// True when a larger value of the metric is an improvement.
pub fn higher_is_better(name: &str, unit: &str) -> bool {
    let u = unit.trim().to_ascii_lowercase();
    let n = name.to_ascii_lowercase();
    u.ends_with("/s")
        || u.ends_with("/sec")
        || u.ends_with("per_s")
        || u.ends_with("per second")
        || u == "hz"
        || u == "ops"
        || [
            "throughput",
            "bandwidth",
            "ops_per",
            "per_sec",
            "_rate",
            "iops",
        ]
        .iter()
        .any(|k| n.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_rates() {
        assert!(!higher_is_better("wall_ns", "ns"));
        assert!(!higher_is_better("maxrss_kib", "KiB"));
        assert!(!higher_is_better("tp:tlb:tlb_flush", "count"));
        assert!(higher_is_better("read", "MB/s"));
        assert!(higher_is_better("ops", "ops/s"));
        assert!(higher_is_better("throughput", ""));
    }
}
