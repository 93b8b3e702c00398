//! `--pin CPUS`: a CPU list as the kernel writes them (`0`, `0-3`, `0,2-3`).

use abperf_measure::affinity::{Mask, allowed_cpus};
use abperf_model::error::usage;

/// A parsed CPU list, ready to hand to sched_setaffinity.
#[derive(Clone)]
pub struct CpuSet {
    pub cpus: Vec<usize>,
    set: Mask,
}

impl std::fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CpuSet({:?})", self.cpus)
    }
}

impl CpuSet {
    pub fn parse(list: &str) -> anyhow::Result<CpuSet> {
        let bad = |why: &str| {
            usage(format!(
                "--pin '{list}': {why} (expected a CPU list such as 0, 0-3 or 0,2-3)"
            ))
        };
        let online = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let mut cpus = Vec::new();
        for part in list.split(',') {
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a, b),
                None => (part, part),
            };
            let a: usize = a
                .trim()
                .parse()
                .map_err(|_| bad(&format!("'{part}' is not a CPU number or range")))?;
            let b: usize = b
                .trim()
                .parse()
                .map_err(|_| bad(&format!("'{part}' is not a CPU number or range")))?;
            if a > b {
                return Err(bad(&format!("range '{part}' runs backwards")));
            }
            if b >= libc::CPU_SETSIZE as usize {
                return Err(bad(&format!("CPU {b} is out of range")));
            }
            cpus.extend(a..=b);
        }
        cpus.sort_unstable();
        cpus.dedup();
        let set = Mask::of(&cpus).map_err(|e| bad(&e.to_string()))?;
        // Check against what this process may use, so a typo fails before any run.
        let allowed = allowed_cpus();
        if let Some(c) = cpus.iter().find(|c| !allowed.contains(c)) {
            return Err(bad(&format!(
                "CPU {c} is not available to this process ({online} CPUs online)"
            )));
        }
        Ok(CpuSet { cpus, set })
    }

    /// The set as the kernel takes it.
    pub fn mask(&self) -> &abperf_measure::affinity::Mask {
        &self.set
    }

    /// Pin the calling thread or process. Async-signal-safe (one syscall): usable after fork.
    /// Returns 0, or -1 with errno set.
    pub fn apply_to_self(&self) -> i32 {
        if self.set.apply().is_ok() { 0 } else { -1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists() {
        assert_eq!(CpuSet::parse("0").unwrap().cpus, vec![0]);
        assert!(CpuSet::parse("1-0").is_err());
        assert!(CpuSet::parse("x").is_err());
        assert!(CpuSet::parse("100000").is_err());
        assert!(CpuSet::parse("1000").is_err());
    }
}
