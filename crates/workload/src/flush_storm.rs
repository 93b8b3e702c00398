//! `flush-storm` (seed 002): one thread touches then munmaps, madvise(MADV_DONTNEED)s or
//! mprotects ranges whose sizes follow a distribution (default: the flush-size histogram Dave
//! Hansen traced during a kernel compile), while the other threads of the same mm spin on the
//! other CPUs, so that every flush is also a shootdown IPI to them. Sizes up to the x86 ceiling
//! (`tlb_single_page_flush_ceiling`, 33) are flushed page by page; larger ones flush the whole TLB.

use super::Workload;
use super::metrics::{Direction, Metric, MetricSpec, metric};
use super::params::{Kind, ParamSpec, Params, SEED};
use super::sys::{self, PAGE};
use anyhow::{Context, Result, bail};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

/// Seed 002's table (flush size in pages, samples), a kernel compile with the ceiling at 150.
/// The `-1` row (2.2%: whole-mm flushes, no range size) is left out; sizes above 33 pages (1.4%
/// of draws) are what give full flushes here.
pub const SEED002: &[(u32, u32)] = &[
    (1, 620895),
    (2, 150335),
    (3, 90131),
    (4, 80877),
    (5, 18885),
    (6, 14397),
    (7, 12441),
    (8, 6721),
    (9, 917),
    (10, 4714),
    (11, 2145),
    (12, 864),
    (13, 289),
    (14, 236),
    (15, 390),
    (16, 643),
    (17, 6229),
    (18, 224),
    (19, 367),
    (20, 185),
    (21, 1964),
    (22, 83),
    (23, 61),
    (24, 1307),
    (25, 533),
    (26, 94),
    (27, 66),
    (28, 73),
    (29, 846),
    (30, 296),
    (31, 79),
    (32, 60),
    (33, 33936),
    (34, 268),
    (35, 177),
    (36, 161),
    (37, 182),
    (38, 195),
    (39, 128),
    (40, 78),
    (41, 477),
    (42, 74),
    (43, 78),
    (44, 108),
    (45, 78),
    (46, 261),
    (47, 67),
    (48, 77),
    (49, 66),
    (50, 73),
    (52, 52),
    (54, 87),
    (55, 109),
    (56, 208),
    (57, 53),
    (58, 59),
    (59, 63),
    (62, 54),
    (64, 248),
    (65, 1324),
    (85, 50),
    (127, 75),
    (128, 1466),
    (129, 1927),
    (181, 3547),
    (256, 550),
    (512, 304),
    (1512, 65),
];

const MAX_PAGES: u32 = 65536;
/// The x86 default of `tlb_single_page_flush_ceiling`.
pub const CEILING: u32 = 33;

/// `seed002`, or `P[:W]+P[:W]...` (pages, weight; weight 1 when left out).
pub fn parse_sizes(s: &str) -> Result<Vec<(u32, u32)>, String> {
    if s == "seed002" {
        return Ok(SEED002.to_vec());
    }
    let mut v = Vec::new();
    for item in s.split('+') {
        let (p, w) = match item.split_once(':') {
            Some((p, w)) => (p, w),
            None => (item, "1"),
        };
        let p: u32 = p
            .parse()
            .ok()
            .filter(|p| (1..=MAX_PAGES).contains(p))
            .ok_or_else(|| format!("{item:?}: pages must be 1..{MAX_PAGES}"))?;
        let w: u32 = w
            .parse()
            .ok()
            .filter(|w| *w >= 1)
            .ok_or_else(|| format!("{item:?}: weight must be a positive integer"))?;
        v.push((p, w));
    }
    Ok(v)
}

fn check_sizes(s: &str) -> Result<(), String> {
    parse_sizes(s).map(|_| ())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Munmap,
    Madvise,
    Mprotect,
}

pub fn parse_syscalls(s: &str) -> Result<Vec<Op>, String> {
    let mut v = Vec::new();
    for w in s.split('+') {
        let op = match w {
            "munmap" => Op::Munmap,
            "madvise" => Op::Madvise,
            "mprotect" => Op::Mprotect,
            _ => return Err(format!("{w:?} is not munmap, madvise or mprotect")),
        };
        if v.contains(&op) {
            return Err(format!("{w} given twice"));
        }
        v.push(op);
    }
    Ok(v)
}

fn check_syscalls(s: &str) -> Result<(), String> {
    parse_syscalls(s).map(|_| ())
}

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "threads",
        default: "0",
        kind: Kind::Int { min: 0, max: 1024 },
        help: "threads on distinct CPUs, the first one flushing, the others spinning in the same \
               mm; 0 = one per CPU this process may use",
    },
    ParamSpec {
        name: "ops",
        default: "50000",
        kind: Kind::Int {
            min: 1,
            max: 1_000_000_000,
        },
        help: "operations (touch a range, then one flushing call on it)",
    },
    ParamSpec {
        name: "sizes",
        default: "seed002",
        kind: Kind::Custom {
            check: check_sizes,
            allowed: "seed002 (seed 002's flush-size histogram) or PAGES[:WEIGHT] items joined \
                      by '+' (e.g. 1:57+33:3+64:1), pages 1..65536",
        },
        help: "distribution of range sizes in pages",
    },
    ParamSpec {
        name: "syscalls",
        default: "munmap+madvise+mprotect",
        kind: Kind::Custom {
            check: check_syscalls,
            allowed: "munmap, madvise and/or mprotect joined by '+'",
        },
        help: "flushing calls, drawn uniformly per operation: munmap (then mmap again), \
               madvise(MADV_DONTNEED), mprotect(PROT_READ) then back to read-write",
    },
    SEED,
];

pub const METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: "ops_per_s",
        unit: "ops/s",
        direction: Direction::HigherIsBetter,
        help: "operations per second of the flushing thread",
    },
    MetricSpec {
        name: "ns_per_op",
        unit: "ns",
        direction: Direction::LowerIsBetter,
        help: "mean time of one operation (touch + flushing call)",
    },
    MetricSpec {
        name: "ops",
        unit: "ops",
        direction: Direction::Count,
        help: "operations done",
    },
    MetricSpec {
        name: "pages",
        unit: "pages",
        direction: Direction::Count,
        help: "pages in all ranges",
    },
    MetricSpec {
        name: "ops_over_33_pages",
        unit: "ops",
        direction: Direction::Count,
        help: "operations on ranges above the default flush ceiling (full flushes on x86)",
    },
    MetricSpec {
        name: "remote_cpus",
        unit: "cpus",
        direction: Direction::Count,
        help: "CPUs running a spinning thread of the same mm (shootdown targets)",
    },
];

pub const WORKLOAD: Workload = Workload {
    name: "flush-storm",
    version: 1,
    summary: "munmap/madvise/mprotect of ranges sized like a kernel compile's flushes, with \
              sibling threads of the same mm spinning on the other CPUs",
    stresses: "TLB flushing: single-page invalidations up to the ceiling, full flushes above \
               it, and remote shootdowns (IPIs to every CPU running the mm)",
    kernel_paths: &[
        "zap_page_range / unmap_region / change_protection -> tlb_finish_mmu -> \
         flush_tlb_mm_range",
        "flush_tlb_func (local: INVLPG per page up to tlb_single_page_flush_ceiling, else a \
         full flush)",
        "native_flush_tlb_multi -> smp_call_function_many_cond (shootdown IPIs), \
         kvm_flush_tlb_multi in a KVM guest",
        "do_anonymous_page (re-touching the ranges)",
    ],
    modelled_on: "seed 002 (commit a5102476a2, 'x86/mm: Set TLB flush tunable to sane value \
                  (33)'): the flush-size histogram of a kernel compile is the default size \
                  distribution; seed 000 (INVPCID vs CR3 flushing) A/Bs the same paths",
    runtime: "defaults (50000 ops, 2 threads): median 1.8 s of 10 runs at load average 8-9, CV \
              of ops/s 16%",
    params: PARAMS,
    metrics: METRICS,
    prepare: None,
    exec,
    prepare_fn: None,
    clean_up_fn: None,
};

/// Cumulative weights for drawing.
#[derive(Debug, Clone)]
pub struct Sizes {
    pages: Vec<u32>,
    cum: Vec<u64>,
}

impl Sizes {
    pub fn new(d: &[(u32, u32)]) -> Sizes {
        let mut cum = Vec::with_capacity(d.len());
        let mut t = 0u64;
        for &(_, w) in d {
            t += w as u64;
            cum.push(t);
        }
        Sizes {
            pages: d.iter().map(|&(p, _)| p).collect(),
            cum,
        }
    }

    pub fn draw(&self, rng: &mut rand_chacha::ChaCha8Rng) -> u32 {
        let x = sys::below(rng, *self.cum.last().expect("non-empty"));
        self.pages[self.cum.partition_point(|&c| c <= x)]
    }

    pub fn max(&self) -> u32 {
        *self.pages.iter().max().expect("non-empty")
    }
}

/// The operation sequence: (pages, call), deterministic given the seed.
pub fn sequence(sizes: &Sizes, ops: &[Op], seed: u64) -> impl Iterator<Item = (u32, Op)> {
    let mut rng = sys::rng(seed);
    let sizes = sizes.clone();
    let ops = ops.to_vec();
    std::iter::from_fn(move || {
        let p = sizes.draw(&mut rng);
        let op = ops[sys::below(&mut rng, ops.len() as u64) as usize];
        Some((p, op))
    })
}

fn sysfail(what: &str) -> anyhow::Error {
    anyhow::Error::new(std::io::Error::last_os_error()).context(what.to_string())
}

/// One run: a spinning thread on each CPU but the first, the flushing thread on the first; the
/// operations are timed from the start barrier until the flusher is done.
fn exec(p: &Params) -> Result<Vec<Metric>> {
    if sys::page_size() != PAGE {
        bail!("flush-storm assumes 4 KiB pages");
    }
    let cpus = sys::allowed_cpus();
    let threads = match p.u64("threads") as usize {
        0 => cpus.len(),
        n if n > cpus.len() => bail!(
            "flush-storm: threads={n}: the threads need distinct CPUs and this process may use \
             {} ({cpus:?})",
            cpus.len()
        ),
        n => n,
    };
    if threads < 2 {
        abperf_model::error::stderr_line("flush-storm: note: one thread, so no remote shootdowns");
    }
    let sizes = Sizes::new(&parse_sizes(p.str("sizes")).expect("checked"));
    let ops = parse_syscalls(p.str("syscalls")).expect("checked");
    let n = p.u64("ops");
    let seed = p.seed();
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(threads));
    let spins = Arc::new(AtomicU64::new(0));
    let mut helpers = Vec::new();
    for &cpu in &cpus[1..threads] {
        let (stop, start, spins) = (stop.clone(), start.clone(), spins.clone());
        helpers.push(std::thread::spawn(move || spin(cpu, &stop, &start, &spins)));
    }
    let cpu0 = cpus[0];
    let (stop2, start2) = (stop.clone(), start.clone());
    let flusher = std::thread::spawn(move || -> Result<(u64, u64, u64)> {
        let r = arena(cpu0, &sizes);
        start2.wait();
        let arena = match r {
            Ok(a) => a,
            Err(e) => {
                stop2.store(true, Ordering::Relaxed);
                return Err(e);
            }
        };
        let base = arena.ptr;
        let mut pages = 0u64;
        let mut over = 0u64;
        let t0 = Instant::now();
        let res = (|| {
            for (sz, op) in sequence(&sizes, &ops, seed).take(n as usize) {
                for pg in 0..sz as usize {
                    // SAFETY: inside the arena (sz <= max pages).
                    unsafe { std::ptr::write_volatile(base.add(pg * PAGE), 1u8) };
                }
                pages += sz as u64;
                over += (sz > CEILING) as u64;
                // SAFETY: the first `sz` pages are inside the arena (sz <= max pages).
                unsafe { flush(base, sz as usize * PAGE, op)? };
            }
            Ok(())
        })();
        let ns = t0.elapsed().as_nanos() as u64;
        stop2.store(true, Ordering::Relaxed);
        res.map(|()| (ns, pages, over))
    });
    let r = flusher
        .join()
        .map_err(|_| anyhow::anyhow!("flush-storm: the flushing thread panicked"))?;
    stop.store(true, Ordering::Relaxed);
    for h in helpers {
        h.join()
            .map_err(|_| anyhow::anyhow!("flush-storm: a spinning thread panicked"))?
            .context("flush-storm: spinning thread")?;
    }
    let (ns, pages, over) = r.context("flush-storm")?;
    let secs = ns as f64 / 1e9;
    Ok(vec![
        metric(METRICS, "ops_per_s", n as f64 / secs.max(1e-9)),
        metric(METRICS, "ns_per_op", ns as f64 / n as f64),
        metric(METRICS, "ops", n as f64),
        metric(METRICS, "pages", pages as f64),
        metric(METRICS, "ops_over_33_pages", over as f64),
        metric(METRICS, "remote_cpus", (threads - 1) as f64),
    ])
}

/// A spinning thread: pinned to `cpu`, it spins from the start barrier until `stop`, adding
/// its spins to `spins`.
fn spin(cpu: usize, stop: &AtomicBool, start: &Barrier, spins: &AtomicU64) -> Result<()> {
    let pinned = sys::pin(cpu);
    start.wait();
    pinned?;
    let mut k = 0u64;
    while !stop.load(Ordering::Relaxed) {
        std::hint::spin_loop();
        k += 1;
    }
    spins.fetch_add(k, Ordering::Relaxed);
    Ok(())
}

/// The flusher's arena, with the flusher pinned to `cpu`: room for the largest range, in
/// 4 KiB pages.
fn arena(cpu: usize, sizes: &Sizes) -> Result<sys::Map> {
    sys::pin(cpu)?;
    let max = sizes.max() as usize * PAGE;
    let arena = sys::Map::anon(max)?;
    // 4 KiB pages only: a huge page would turn a range into a PMD split
    arena.advise(libc::MADV_NOHUGEPAGE, "MADV_NOHUGEPAGE")?;
    Ok(arena)
}

/// Flush the `len` bytes at `base` with `op`, leaving them read-write anonymous memory again.
///
/// # Safety
///
/// `base..base + len` must be a range of the caller's own anonymous arena.
#[inline]
unsafe fn flush(base: *mut u8, len: usize, op: Op) -> Result<()> {
    // SAFETY (all three): ranges of our own arena, restored to read-write anonymous memory
    // before the next touch.
    unsafe {
        match op {
            Op::Madvise => {
                if libc::madvise(base as *mut _, len, libc::MADV_DONTNEED) != 0 {
                    return Err(sysfail("madvise(MADV_DONTNEED)"));
                }
            }
            Op::Mprotect => {
                if libc::mprotect(base as *mut _, len, libc::PROT_READ) != 0 {
                    return Err(sysfail("mprotect(PROT_READ)"));
                }
                if libc::mprotect(base as *mut _, len, libc::PROT_READ | libc::PROT_WRITE) != 0 {
                    return Err(sysfail("mprotect(PROT_READ|PROT_WRITE)"));
                }
            }
            Op::Munmap => {
                if libc::munmap(base as *mut _, len) != 0 {
                    return Err(sysfail("munmap"));
                }
                let q = libc::mmap(
                    base as *mut _,
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                );
                if q != base as *mut _ {
                    return Err(sysfail("mmap(MAP_FIXED) after munmap"));
                }
                // same flags as the rest of the arena, so the VMAs merge again
                if libc::madvise(base as *mut _, len, libc::MADV_NOHUGEPAGE) != 0 {
                    return Err(sysfail("madvise(MADV_NOHUGEPAGE)"));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(
            parse_sizes("1:57+33:3+64").unwrap(),
            [(1, 57), (33, 3), (64, 1)]
        );
        assert_eq!(parse_sizes("seed002").unwrap().len(), SEED002.len());
        assert!(parse_sizes("0").unwrap_err().contains("pages must be"));
        assert!(parse_sizes("1:0").unwrap_err().contains("weight"));
        assert!(parse_sizes("").is_err());
        assert!(parse_sizes("99999").is_err());
        assert_eq!(
            parse_syscalls("madvise+munmap").unwrap(),
            [Op::Madvise, Op::Munmap]
        );
        assert!(parse_syscalls("madvise+madvise").is_err());
        assert!(parse_syscalls("brk").unwrap_err().contains("\"brk\""));
    }

    #[test]
    fn draws_follow_the_histogram_and_the_seed() {
        let s = Sizes::new(SEED002);
        let ops = [Op::Munmap, Op::Madvise, Op::Mprotect];
        let a: Vec<_> = sequence(&s, &ops, 9).take(200_000).collect();
        let b: Vec<_> = sequence(&s, &ops, 9).take(200_000).collect();
        assert_eq!(a, b);
        let c: Vec<_> = sequence(&s, &ops, 10).take(1000).collect();
        assert_ne!(a[..1000], c[..]);
        let total: u64 = SEED002.iter().map(|&(_, w)| w as u64).sum();
        let frac = |pred: &dyn Fn(u32) -> bool| {
            a.iter().filter(|(p, _)| pred(*p)).count() as f64 / a.len() as f64
        };
        let one = 620895.0 / total as f64;
        assert!(
            (frac(&|p| p == 1) - one).abs() < 0.01,
            "{}",
            frac(&|p| p == 1)
        );
        let over: u64 = SEED002
            .iter()
            .filter(|&&(p, _)| p > CEILING)
            .map(|&(_, w)| w as u64)
            .sum();
        let f = frac(&|p| p > CEILING);
        assert!((f - over as f64 / total as f64).abs() < 0.002, "{f}");
        assert!(f > 0.01, "full flushes occur: {f}");
        for op in ops {
            let k = a.iter().filter(|(_, o)| *o == op).count() as f64 / a.len() as f64;
            assert!((k - 1.0 / 3.0).abs() < 0.01, "{op:?} {k}");
        }
        assert_eq!(s.max(), 1512);
        // pinned: the ChaCha8 stream and the multiply-shift draws, nothing library-specific
        use Op::*;
        assert_eq!(
            a[..6],
            [
                (1, Mprotect),
                (1, Munmap),
                (2, Munmap),
                (1, Munmap),
                (33, Madvise),
                (1, Munmap)
            ]
        );
    }
}
