//! Memory mappings for the benchmarks: anonymous or file-backed, unmapped on drop, and helpers to
//! touch pages and to check transparent-huge-page backing.

use anyhow::{Context, Result};

pub const PAGE: usize = 4096;
pub const HUGE: usize = 2 << 20;

/// An mmap'd region, unmapped on drop.
pub struct Mapping {
    pub ptr: *mut u8,
    pub len: usize,
    /// The usable start (aligned as requested) inside the mapping.
    pub base: *mut u8,
}

impl Mapping {
    /// Anonymous private read-write memory of `len` bytes, `base` aligned to `align`.
    /// `huge`: Some(true) = MADV_HUGEPAGE, Some(false) = MADV_NOHUGEPAGE, None = leave it.
    pub fn anon(len: usize, align: usize, huge: Option<bool>) -> Result<Mapping> {
        Mapping::anon_offset(len, align, 0, huge)
    }

    /// As [`Mapping::anon`], with `base` `offset` bytes past the aligned address: a benchmark
    /// that maps fresh memory every round varies where its region sits against the 2 MiB
    /// page-table boundaries, which one process otherwise keeps fixed for its whole run (the
    /// same size is mapped at the same address again).
    pub fn anon_offset(
        len: usize,
        align: usize,
        offset: usize,
        huge: Option<bool>,
    ) -> Result<Mapping> {
        let total = len + align + offset;
        // SAFETY: anonymous mapping, no fixed address.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()).context(format!("mmap of {total} bytes"));
        }
        let ptr = ptr as *mut u8;
        let base = ((ptr as usize).div_ceil(align) * align + offset) as *mut u8;
        let m = Mapping {
            ptr,
            len: total,
            base,
        };
        if let Some(h) = huge {
            let advice = if h {
                libc::MADV_HUGEPAGE
            } else {
                libc::MADV_NOHUGEPAGE
            };
            // SAFETY: advising our own mapping.
            if unsafe { libc::madvise(base as *mut _, len, advice) } != 0 {
                return Err(std::io::Error::last_os_error()).context(if h {
                    "madvise(MADV_HUGEPAGE)"
                } else {
                    "madvise(MADV_NOHUGEPAGE)"
                });
            }
        }
        Ok(m)
    }

    /// A mapping of an open file, `flags` MAP_PRIVATE or MAP_SHARED.
    pub fn file(fd: i32, len: usize, flags: i32) -> Result<Mapping> {
        // SAFETY: mapping a file descriptor we own.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()).context("mmap of file");
        }
        Ok(Mapping {
            ptr: ptr as *mut u8,
            len,
            base: ptr as *mut u8,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what we mapped.
        unsafe { libc::munmap(self.ptr as *mut _, self.len) };
    }
}

impl Mapping {
    /// Write one byte in each of the first `n` pages of the usable region.
    #[inline(never)]
    pub fn touch_write(&self, n: usize) {
        self.check(n);
        for i in 0..n {
            // SAFETY: inside the mapping (checked above).
            unsafe { std::ptr::write_volatile(self.base.add(i * PAGE), 1) };
        }
    }

    /// Read one byte in each of the first `n` pages of the usable region.
    #[inline(never)]
    pub fn touch_read(&self, n: usize) -> u8 {
        self.check(n);
        let mut acc = 0u8;
        for i in 0..n {
            // SAFETY: as above.
            acc = acc.wrapping_add(unsafe { std::ptr::read_volatile(self.base.add(i * PAGE)) });
        }
        acc
    }

    fn check(&self, n: usize) {
        let end = self.base as usize - self.ptr as usize + n * PAGE;
        assert!(
            end <= self.len,
            "touching {n} pages beyond a mapping of {} bytes",
            self.len
        );
    }
}

pub fn madvise(p: *mut u8, len: usize, advice: i32) -> Result<()> {
    // SAFETY: callers pass ranges of their own mappings.
    if unsafe { libc::madvise(p as *mut _, len, advice) } != 0 {
        return Err(std::io::Error::last_os_error()).context("madvise");
    }
    Ok(())
}

pub fn mprotect(p: *mut u8, len: usize, prot: i32) -> Result<()> {
    // SAFETY: as above.
    if unsafe { libc::mprotect(p as *mut _, len, prot) } != 0 {
        return Err(std::io::Error::last_os_error()).context("mprotect");
    }
    Ok(())
}

/// The selected value of /sys/kernel/mm/transparent_hugepage/enabled (`always`, `madvise`,
/// `never`), or None when THP is not built in.
pub fn thp_mode() -> Option<String> {
    let s = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    Some(abperf_measure::env::selected_choice(&s))
}

/// KiB of the VMA containing `addr` that are backed by anonymous huge pages (/proc/self/smaps).
pub fn anon_huge_kib(addr: *const u8) -> Option<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    anon_huge_kib_in(&smaps, addr as usize)
}

pub fn anon_huge_kib_in(smaps: &str, addr: usize) -> Option<u64> {
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-')
            && let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
        {
            inside = a <= addr && addr < b;
            continue;
        }
        if inside && let Some(rest) = line.strip_prefix("AnonHugePages:") {
            return rest.trim().trim_end_matches("kB").trim().parse().ok();
        }
    }
    None
}

/// Minor faults of the calling thread so far.
pub fn minor_faults() -> u64 {
    // SAFETY: getrusage fills the struct.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        ru.ru_minflt as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_smaps() {
        let smaps = "7f0000000000-7f0000400000 rw-p 00000000 00:00 0\nSize: 4096 kB\nAnonHugePages:  2048 kB\n7f0000400000-7f0000500000 rw-p 00000000 00:00 0\nAnonHugePages:  0 kB\n";
        assert_eq!(anon_huge_kib_in(smaps, 0x7f0000001000), Some(2048));
        assert_eq!(anon_huge_kib_in(smaps, 0x7f0000400000), Some(0));
        assert_eq!(anon_huge_kib_in(smaps, 0x1000), None);
    }

    #[test]
    fn mapping_aligned_and_touchable() {
        let m = Mapping::anon(4 * PAGE, HUGE, Some(false)).unwrap();
        assert_eq!(m.base as usize % HUGE, 0);
        m.touch_write(4);
        assert_eq!(m.touch_read(4), 4);
    }
}
