//! `--pin CPUS`: a CPU list as the kernel writes them (`0`, `0-3`, `0,2-3`).

use crate::error::usage;

/// A parsed CPU list, ready to hand to sched_setaffinity.
#[derive(Clone)]
pub struct CpuSet {
    pub cpus: Vec<usize>,
    set: libc::cpu_set_t,
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
        // SAFETY: cpu_set_t is a plain bit array; zeroed is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in &cpus {
            // SAFETY: c < CPU_SETSIZE was checked above.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        // Check against what this process may use, so a typo fails before any run.
        // SAFETY: a zeroed cpu_set_t is valid, and sched_getaffinity writes at most its size.
        let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut allowed)
        };
        if rc == 0 {
            for &c in &cpus {
                // SAFETY: c < CPU_SETSIZE.
                if !unsafe { libc::CPU_ISSET(c, &allowed) } {
                    return Err(bad(&format!(
                        "CPU {c} is not available to this process ({online} CPUs online)"
                    )));
                }
            }
        }
        Ok(CpuSet { cpus, set })
    }

    /// Pin the calling thread or process. Async-signal-safe (one syscall): usable after fork.
    pub fn apply_to_self(&self) -> i32 {
        // SAFETY: self.set is a valid cpu_set_t of the size passed.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.set) }
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
