//! CPU affinity: which CPUs this process may use, and pinning a thread (or a forked child before
//! exec) to a set of them. The one place that speaks `sched_{get,set}affinity`.

use std::io;

/// A set of CPUs as the kernel takes it.
#[derive(Clone, Copy)]
pub struct Mask(libc::cpu_set_t);

impl Mask {
    /// The set of `cpus`; an error for a CPU number the kernel's set cannot hold.
    pub fn of(cpus: &[usize]) -> io::Result<Mask> {
        // SAFETY: cpu_set_t is a plain bit array; zeroed is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            if c >= libc::CPU_SETSIZE as usize {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "CPU {c} is out of range (at most {})",
                        libc::CPU_SETSIZE - 1
                    ),
                ));
            }
            // SAFETY: c < CPU_SETSIZE.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        Ok(Mask(set))
    }

    /// The calling thread's current affinity.
    pub fn current() -> io::Result<Mask> {
        // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity writes at most its size.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) }
            != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(Mask(set))
    }

    pub fn contains(&self, cpu: usize) -> bool {
        // SAFETY: CPU_ISSET reads the bit array; cpu is bounds-checked first.
        cpu < libc::CPU_SETSIZE as usize && unsafe { libc::CPU_ISSET(cpu, &self.0) }
    }

    /// The CPUs in the set, in order.
    pub fn cpus(&self) -> Vec<usize> {
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| self.contains(c))
            .collect()
    }

    /// The set as the kernel takes it (e.g. to hand to another process that pins itself).
    pub fn raw(&self) -> &libc::cpu_set_t {
        &self.0
    }

    /// Restrict the calling thread (or process, right after fork) to this set. One system call
    /// and no allocation: async-signal-safe, usable between fork and exec.
    pub fn apply(&self) -> io::Result<()> {
        // SAFETY: self.0 is a valid cpu_set_t of the size passed.
        if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.0) }
            != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// CPUs this process may run on, in order (CPU 0 when the kernel cannot say).
pub fn allowed_cpus() -> Vec<usize> {
    Mask::current()
        .map(|m| m.cpus())
        .unwrap_or_else(|_| vec![0])
}

/// Pin the calling thread to `cpu`.
pub fn pin_current(cpu: usize) -> io::Result<()> {
    Mask::of(&[cpu])?.apply()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_pinning() {
        assert!(Mask::of(&[libc::CPU_SETSIZE as usize]).is_err());
        let m = Mask::of(&[0, 3]).unwrap();
        assert_eq!(m.cpus(), [0, 3]);
        assert!(m.contains(3) && !m.contains(1) && !m.contains(usize::MAX));
        // In a thread of its own, so that the test process keeps its affinity.
        std::thread::spawn(|| {
            let all = allowed_cpus();
            assert!(!all.is_empty());
            pin_current(all[0]).unwrap();
            assert_eq!(allowed_cpus(), [all[0]]);
        })
        .join()
        .unwrap();
    }
}
