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

    /// Write one byte in each page of the usable region named by `pages` (page indices), in
    /// that order: the order of the first touches is the order the kernel hands out physical
    /// pages in, so a shuffled order keeps virtual neighbours off physically consecutive pages.
    #[inline(never)]
    pub fn touch_write_order(&self, pages: &[usize]) {
        self.check(pages.iter().max().map_or(0, |&p| p + 1));
        for &i in pages {
            // SAFETY: inside the mapping (checked above).
            unsafe { std::ptr::write_volatile(self.base.add(i * PAGE), 1) };
        }
    }

    /// The share (0..1) of the first `n` pages of the usable region whose next page is backed by
    /// the next physical page (/proc/self/pagemap), or None when the page frame numbers cannot be
    /// read (they read as 0 without CAP_SYS_ADMIN) or a page is not present.
    pub fn physically_adjacent_share(&self, n: usize) -> Option<f64> {
        use std::os::unix::fs::FileExt;
        self.check(n);
        let f = std::fs::File::open("/proc/self/pagemap").ok()?;
        let mut raw = vec![0u8; n * 8];
        f.read_exact_at(&mut raw, (self.base as usize / PAGE * 8) as u64)
            .ok()?;
        let entries: Vec<u64> = raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        adjacent_share(&entries)
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

/// Of pagemap entries of consecutive virtual pages: the share of neighbours whose page frame
/// numbers are consecutive too; None when a page is not present or the numbers are hidden (0).
pub fn adjacent_share(entries: &[u64]) -> Option<f64> {
    const PRESENT: u64 = 1 << 63;
    const PFN: u64 = (1 << 55) - 1;
    if entries.len() < 2 || entries.iter().any(|e| e & PRESENT == 0 || e & PFN == 0) {
        return None;
    }
    let adjacent = entries
        .windows(2)
        .filter(|w| w[1] & PFN == (w[0] & PFN) + 1)
        .count();
    Some(adjacent as f64 / (entries.len() - 1) as f64)
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
    fn adjacent_share_counts_consecutive_frames() {
        let p = |pfn: u64| (1u64 << 63) | pfn;
        assert_eq!(
            adjacent_share(&[p(10), p(11), p(12), p(40), p(41)]),
            Some(0.75)
        );
        assert_eq!(adjacent_share(&[p(12), p(11), p(10)]), Some(0.0));
        // Hidden frame numbers (no CAP_SYS_ADMIN) or a page not present: unknown.
        assert_eq!(adjacent_share(&[1 << 63, 1 << 63]), None);
        assert_eq!(adjacent_share(&[p(10), 11]), None);
        assert_eq!(adjacent_share(&[p(10)]), None);
    }

    #[test]
    fn mapping_aligned_and_touchable() {
        let m = Mapping::anon(4 * PAGE, HUGE, Some(false)).unwrap();
        assert_eq!(m.base as usize % HUGE, 0);
        m.touch_write(4);
        assert_eq!(m.touch_read(4), 4);
    }
}
