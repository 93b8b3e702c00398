//! `pagefault`: map anonymous memory, touch every 4 KiB page (in order or in a seeded random
//! order), unmap; repeat.

use super::Workload;
use super::metrics::{Direction, Metric, MetricSpec, metric};
use super::params::{Kind, ParamSpec, Params, SEED};
use super::sys::{self, PAGE};
use anyhow::{Result, bail};
use std::time::Instant;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "size",
        default: "256M",
        kind: Kind::Size {
            min: 4 << 10,
            max: 1 << 40,
        },
        help: "bytes mapped and touched per loop",
    },
    ParamSpec {
        name: "loops",
        default: "4",
        kind: Kind::Int {
            min: 1,
            max: 1_000_000,
        },
        help: "map, touch, unmap this many times",
    },
    ParamSpec {
        name: "op",
        default: "write",
        kind: Kind::Choice(&["write", "read"]),
        help: "write: a zeroed page is allocated per fault; read: the shared zero page is mapped",
    },
    ParamSpec {
        name: "order",
        default: "seq",
        kind: Kind::Choice(&["seq", "random"]),
        help: "pages in address order, or in a seeded random permutation",
    },
    ParamSpec {
        name: "madvise",
        default: "none",
        kind: Kind::Choice(&["none", "hugepage", "nohugepage"]),
        help: "advice on the mapping (none: the system's THP setting decides)",
    },
    SEED,
];

pub const METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: "pages_per_s",
        unit: "pages/s",
        direction: Direction::HigherIsBetter,
        help: "4 KiB pages touched per second (map + touch + unmap)",
    },
    MetricSpec {
        name: "bytes_per_s",
        unit: "bytes/s",
        direction: Direction::HigherIsBetter,
        help: "bytes touched per second",
    },
    MetricSpec {
        name: "faults_per_s",
        unit: "faults/s",
        direction: Direction::HigherIsBetter,
        help: "minor faults taken per second",
    },
    MetricSpec {
        name: "time_ns",
        unit: "ns",
        direction: Direction::LowerIsBetter,
        help: "time of all loops",
    },
    MetricSpec {
        name: "faults",
        unit: "faults",
        direction: Direction::Count,
        help: "minor faults taken (fewer than pages with huge pages)",
    },
];

pub const WORKLOAD: Workload = Workload {
    name: "pagefault",
    version: 1,
    summary: "map anonymous memory, touch every page, unmap, in a loop",
    stresses: "the anonymous page-fault path, page allocation and zeroing, THP allocation when \
               enabled, and unmapping (page freeing, TLB flush)",
    kernel_paths: &[
        "exc_page_fault -> handle_mm_fault -> do_anonymous_page (write: alloc + zero; read: \
         zero page) or do_huge_pmd_anonymous_page",
        "lock_vma_under_rcu (per-VMA locks), __alloc_pages, clear_page",
        "munmap -> unmap_region -> tlb_finish_mmu, free_pages",
    ],
    modelled_on: "the fault-heavy side of seeds 000/003's kernel builds and the THP-on-writes \
                  A/B (docs/compare.md#when-the-verdict-is-inconclusive-abperf-plan); a quick test of knobs such as transparent_hugepage/enabled",
    runtime: "defaults (4 x 256M, write, seq; THP madvise here): median 1.0 s of 10 runs at \
              load average 8-9, CV of pages/s 15%",
    params: PARAMS,
    metrics: METRICS,
    prepare: None,
    exec,
    prepare_fn: None,
    clean_up_fn: None,
};

/// The touch order: address order, or a Fisher-Yates permutation from the seed.
pub fn order(pages: usize, random: bool, seed: u64) -> Vec<u32> {
    let mut v: Vec<u32> = (0..pages as u32).collect();
    if random {
        let mut rng = sys::rng(seed);
        for i in (1..pages).rev() {
            let j = sys::below(&mut rng, i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
    v
}

fn exec(p: &Params) -> Result<Vec<Metric>> {
    if sys::page_size() != PAGE {
        bail!("pagefault assumes 4 KiB pages");
    }
    let size = (p.size("size") as usize).div_ceil(PAGE) * PAGE;
    let pages = size / PAGE;
    if pages > u32::MAX as usize {
        bail!("pagefault: size={}: too many pages", p.str("size"));
    }
    let loops = p.u64("loops");
    let write = p.str("op") == "write";
    let ord = order(pages, p.str("order") == "random", p.seed());
    let advice = match p.str("madvise") {
        "hugepage" => Some((libc::MADV_HUGEPAGE, "MADV_HUGEPAGE")),
        "nohugepage" => Some((libc::MADV_NOHUGEPAGE, "MADV_NOHUGEPAGE")),
        _ => None,
    };
    let (f0, _) = sys::self_faults();
    let t0 = Instant::now();
    let mut sum = 0u8;
    for _ in 0..loops {
        let m = sys::Map::anon(size)?;
        if let Some((a, name)) = advice {
            m.advise(a, name)?;
        }
        for &pg in &ord {
            // SAFETY: pg < pages: inside the mapping.
            unsafe {
                let q = m.ptr.add(pg as usize * PAGE);
                if write {
                    std::ptr::write_volatile(q, 1);
                } else {
                    sum = sum.wrapping_add(std::ptr::read_volatile(q));
                }
            }
        }
        drop(m);
    }
    let ns = t0.elapsed().as_nanos() as f64;
    let (f1, _) = sys::self_faults();
    std::hint::black_box(sum);
    let secs = (ns / 1e9).max(1e-9);
    let touched = pages as f64 * loops as f64;
    let faults = (f1 - f0) as f64;
    Ok(vec![
        metric(METRICS, "pages_per_s", touched / secs),
        metric(METRICS, "bytes_per_s", touched * PAGE as f64 / secs),
        metric(METRICS, "faults_per_s", faults / secs),
        metric(METRICS, "time_ns", ns),
        metric(METRICS, "faults", faults),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders() {
        assert_eq!(order(4, false, 1), [0, 1, 2, 3]);
        let a = order(1000, true, 5);
        assert_eq!(a, order(1000, true, 5));
        assert_ne!(a, order(1000, true, 6));
        let mut s = a.clone();
        s.sort();
        assert_eq!(s, order(1000, false, 0), "a permutation");
    }
}
