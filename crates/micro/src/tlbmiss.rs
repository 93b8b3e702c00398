//! `tlb-miss`: what a data TLB miss costs and how many pages the TLBs reach, separated from
//! cache effects.
//!
//! Every chase is a random cyclic pointer chain, one node per cache line, timed per access:
//! - `4k`: one node in each of N consecutive 4 KiB pages (no THP, physically scattered: see
//!   [`scattered_4k`]), at a random line of its page;
//! - `2m`: the same layout in memory backed by transparent huge pages;
//! - `2m-sparse`: one node in each of H 2 MiB huge pages, at a random line of one of its 4 KiB
//!   pages (see [`build_chase`]);
//! - `dense`: N nodes in N consecutive lines (N/64 pages): as many distinct lines, no TLB misses
//!   while N/64 pages fit the L1 DTLB.
//!
//! The random lines are balanced: each run of 64 consecutive nodes takes each of the 64 line slots
//! of a page once, so that every chase loads each L1 set with N/64 nodes like the dense chase does
//! (a fixed page offset would put all nodes into one L1 set and measure conflict misses). Each
//! sample builds a fresh chain (new order and lines). Chases stay within a quarter of the L2
//! cache (CPUID), so that data and page tables stay in L2 and the difference `4k - dense` at the
//! same N is the TLB's. The reach is where that difference steps up: a two-step logistic fit in
//! log N ([`staircase`](super::staircase)) finds the L1 DTLB step (misses that hit the
//! second-level TLB) and the STLB step (page walks); the midpoint of a step (half of the
//! accesses miss) is the reach. The chase visits its pages in the same order every lap, so an LRU TLB of C entries hits all of them up to C pages
//! and none beyond; with W ways and balanced sets the midpoint lies up to C/(2W) above C (96
//! entries in 6 ways: ~103), and entries taken by other translations (code, stack, the SMT
//! sibling's) move the onset below C. The CPUID-reported TLB sizes are shown beside it.
//!
//! Above 64 x the L1 DTLB's entries the dense chase itself misses the L1 DTLB unless its huge
//! pages get 2 MiB TLB entries, which lowers `4k - dense` there by at most an STLB hit.

use super::caches::{P2M, P4K, Topology};
use super::harness::{Rounds, median};
use super::mem::{HUGE, Mapping, PAGE, anon_huge_kib, madvise, thp_mode};
use super::staircase::{Step, fit_staircase, grid};
use super::timer::{start, stop};
use super::{Options, Sink};
use anyhow::Result;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

const LINE: usize = 64;

/// A random cyclic chain of `count` nodes, node i in the i-th `stride` of `base`: `stride` = 64
/// gives a dense chain; for a page or more, the node's line in its 4 KiB page is chosen so that
/// every 64 consecutive nodes take each line slot once (a random permutation per 64 nodes:
/// balanced L1 sets), and for strides above a page node i sits in 4 KiB page (i + r) mod
/// (stride / 4 KiB) of its stride (r random per chain), so that the low bits of the nodes' 4 KiB
/// page numbers cycle too: a TLB that holds 4 KiB entries for huge pages (a VM whose host maps
/// the guest's memory with 4 KiB pages) indexes its sets evenly, as it does for the consecutive
/// pages of the 4 KiB chase. Returns the head.
pub fn build_chase<'a>(
    map: &'a Mapping,
    count: usize,
    stride: usize,
    rng: &mut ChaCha8Rng,
) -> Chain<'a> {
    assert!(
        count > 0 && map.base as usize - map.ptr as usize + count * stride <= map.len,
        "a chain of {count} x {stride} bytes does not fit a mapping of {} bytes",
        map.len
    );
    let base = map.base;
    let pages = (stride / PAGE).max(1);
    let r = rng.random_range(0..pages);
    let mut perm: [usize; 64] = std::array::from_fn(|i| i);
    let mut node = Vec::with_capacity(count);
    for i in 0..count {
        let off = if stride >= PAGE {
            if i % 64 == 0 {
                perm.shuffle(rng);
            }
            (i + r) % pages * PAGE + perm[i % 64] * LINE
        } else {
            0
        };
        // SAFETY: inside the mapping (checked above).
        node.push(unsafe { base.add(i * stride + off) } as *mut usize);
    }
    let mut order: Vec<usize> = (0..count).collect();
    order.shuffle(rng);
    for w in 0..count {
        // SAFETY: as above; nodes are 8-byte aligned.
        unsafe { *node[order[w]] = node[order[(w + 1) % count]] as usize };
    }
    Chain {
        head: node[order[0]],
        _map: map,
    }
}

/// A chain built in a mapping it borrows.
pub struct Chain<'a> {
    pub head: *const usize,
    _map: &'a Mapping,
}

impl Chain<'_> {
    /// Follow the chain `steps` times from the head; returns where it stopped.
    pub fn run(&self, steps: usize) -> *const usize {
        // SAFETY: the chain's nodes point to nodes inside the borrowed, live mapping.
        unsafe { chase(self.head, steps) }
    }
}

/// Follow the chain `steps` times. Written in assembly so that the loop is the same in debug
/// and release builds: one dependent load per iteration.
///
/// # Safety
/// `p` must be a node of a cyclic chain whose nodes all point to live nodes of the chain.
#[inline(never)]
unsafe fn chase(p: *const usize, steps: usize) -> *const usize {
    if steps == 0 {
        return p;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let mut p = p;
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!(
                "2:",
                "mov {p}, qword ptr [{p}]",
                "dec {n}",
                "jnz 2b",
                p = inout(reg) p,
                n = inout(reg) steps => _,
                options(nostack, readonly),
            );
        }
        p
    }
    #[cfg(target_arch = "aarch64")]
    {
        let mut p = p;
        // SAFETY: as above.
        unsafe {
            core::arch::asm!(
                "2:",
                "ldr {p}, [{p}]",
                "subs {n}, {n}, 1",
                "b.ne 2b",
                p = inout(reg) p,
                n = inout(reg) steps => _,
                options(nostack, readonly),
            );
        }
        p
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let mut p = p;
        for _ in 0..steps {
            // SAFETY: as above.
            p = unsafe { std::ptr::read_volatile(p) } as *const usize;
        }
        p
    }
}

/// The 4 KiB chase's region of `n` pages, each backed by a 4 KiB page that is not the physical
/// neighbour of its virtual neighbour's: MADV_NOHUGEPAGE (no huge page, no multi-size THP folio,
/// no khugepaged collapse), and the pages first touched in a random order, which is the order the
/// kernel hands out physical pages in. Touched in address order, 0% to 45% of neighbouring pages
/// came out physically consecutive, process by process (/proc/self/pagemap; docs/micro.md); a CPU
/// that coalesces consecutive 4 KiB pages into one TLB entry (AMD Zen's PTE coalescing) then
/// reaches more pages in one process than in another: modes between invocations, as family 25
/// showed (L1 DTLB "reach" 57..68 and 1405..1600 pages). Touched at random: 0% in every one.
fn scattered_4k(n: usize, rng: &mut ChaCha8Rng) -> Result<Mapping> {
    let m = Mapping::anon(n * PAGE, PAGE, Some(false))?;
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(rng);
    m.touch_write_order(&order);
    Ok(m)
}

/// A region for one kind of chase.
struct Region {
    kind: &'static str,
    map: Mapping,
    stride: usize,
}

/// THP backing of a region: map, touch once per `touch_stride`, collapse if short; the share of
/// it backed by huge pages (0..1).
fn huge_region(len: usize, touch_stride: usize) -> Result<(Mapping, f64)> {
    let m = Mapping::anon(len, HUGE, Some(true))?;
    for off in (0..len).step_by(touch_stride) {
        // SAFETY: inside the mapping.
        unsafe { std::ptr::write_volatile(m.base.add(off), 1) };
    }
    let want = (len / 1024) as u64;
    if anon_huge_kib(m.base).unwrap_or(0) < want {
        // Synchronous collapse (Linux 6.1+); ignored where unsupported.
        let _ = madvise(m.base, len, 25 /* MADV_COLLAPSE */);
    }
    let kib = anon_huge_kib(m.base).unwrap_or(0);
    Ok((m, kib as f64 / want as f64))
}

fn level_text(entries: Option<u32>, what: &str) -> String {
    match entries {
        Some(e) => format!("CPUID: {what} {e} entries"),
        None => format!("CPUID does not report the {what}"),
    }
}

/// The sizes of the chases: the N grid of the page-strided chases (up to `n_top`), the grid of
/// huge page counts of the sparse chase (up to `h_max`), and how long each is measured.
struct Sizes {
    ns: Vec<usize>,
    n_top: usize,
    hs: Vec<usize>,
    h_max: usize,
    rounds: usize,
    min_steps: usize,
    /// The L2 data cache, bytes (CPUID), if reported.
    l2: Option<usize>,
}

impl Sizes {
    fn new(topo: &Topology, opts: &Options) -> Sizes {
        let l2_4k = topo.dtlb(2, P4K);
        let l2 = topo.data_cache(2).map(|c| c.bytes as usize);
        // Chases up to a quarter of the L2 (data; the page tables add an eighth of that), or 2.5x
        // the reported STLB, but never beyond half of the L2.
        let l2_lines = l2.unwrap_or(1 << 20) / LINE;
        let n_max = (l2_lines / 4)
            .max(l2_4k.unwrap_or(0) as usize * 5 / 2)
            .min(l2_lines / 2)
            .clamp(1024, 1 << 16);
        let per_octave = if opts.quick { 4 } else { 8 };
        let ns = grid(8, n_max, per_octave);
        let n_top = *ns.last().expect("grid");
        let h_max = 256;
        let hs = grid(4, h_max, per_octave);
        Sizes {
            ns,
            n_top,
            hs,
            h_max,
            rounds: opts.samples(7, 21).max(3),
            min_steps: if opts.quick { 30_000 } else { 100_000 },
            l2,
        }
    }

    /// Notes: the topology CPUID reports, and the chases' footprint against the L2.
    fn note(&self, sink: &mut Sink, topo: &Topology) {
        let (n_top, l2) = (self.n_top, self.l2);
        sink.notes.push(format!("tlb-miss: {}", topo.describe()));
        for n in &topo.notes {
            sink.notes.push(format!("tlb-miss: {n}"));
        }
        sink.notes.push(format!(
            "tlb-miss: 4 KiB chases of 8..{n_top} pages: data {} KiB + page tables {} KiB at most, {} \
             of the L2 ({}); dense chase of as many lines",
            n_top * LINE / 1024,
            n_top * 8 / 1024,
            match l2 {
                Some(b) => format!("{:.0}%", 100.0 * (n_top * (LINE + 8)) as f64 / b as f64),
                None => "L2 size unknown, 1 MiB assumed".into(),
            },
            l2.map(|b| format!("{} KiB", b / 1024))
                .unwrap_or_else(|| "?".into())
        ));
    }
}

/// The regions the chases run in: dense, 4k, and, when THP backs them, 2m and 2m-sparse (skipped
/// with the reason otherwise).
fn regions(sink: &mut Sink, sizes: &Sizes) -> Result<Vec<Region>> {
    let (ns, n_top, h_max) = (&sizes.ns, sizes.n_top, sizes.h_max);
    let thp = thp_mode();
    let thp_ok = matches!(thp.as_deref(), Some("always") | Some("madvise"));
    let mut regions = Vec::new();
    let dense_len = (ns.last().copied().unwrap_or(8).max(h_max) * LINE).div_ceil(HUGE) * HUGE;
    let dense = Mapping::anon(dense_len, HUGE, if thp_ok { Some(true) } else { None })?;
    dense.touch_write(dense_len / PAGE);
    regions.push(Region {
        kind: "dense",
        map: dense,
        stride: LINE,
    });
    let small = scattered_4k(n_top, &mut ChaCha8Rng::seed_from_u64(0x4b1d))?;
    sink.notes.push(match small.physically_adjacent_share(n_top) {
        Some(s) => format!(
            "tlb-miss: 4k chase region (no THP, pages first touched in a random order): {:.0}% of \
             neighbouring pages physically adjacent (/proc/self/pagemap)",
            100.0 * s
        ),
        None => "tlb-miss: 4k chase region (no THP, pages first touched in a random order): \
                 physical adjacency unknown (/proc/self/pagemap hides frame numbers)"
            .into(),
    });
    regions.push(Region {
        kind: "4k",
        map: small,
        stride: PAGE,
    });
    if thp_ok {
        let (m, share) = huge_region((n_top * PAGE).div_ceil(HUGE) * HUGE, PAGE)?;
        sink.notes.push(format!(
            "tlb-miss: 2m chase region {:.0}% backed by huge pages",
            100.0 * share
        ));
        if share < 0.9 {
            sink.skip(
                "tlb-miss",
                Some("2m".into()),
                format!(
                    "THP is '{}' but only {:.0}% of the region got huge pages (fragmented memory?)",
                    thp.as_deref().unwrap_or("?"),
                    100.0 * share
                ),
            );
        } else {
            regions.push(Region {
                kind: "2m",
                map: m,
                stride: PAGE,
            });
        }
        let (m, share) = huge_region(h_max * HUGE, HUGE)?;
        sink.notes.push(format!(
            "tlb-miss: 2m-sparse region ({h_max} huge pages) {:.0}% backed by huge pages",
            100.0 * share
        ));
        if share < 0.9 {
            sink.skip("tlb-miss", Some("2m-sparse".into()), format!(
                "THP is '{}' but only {:.0}% of {h_max} huge pages were allocated (fragmented memory?)",
                thp.as_deref().unwrap_or("?"), 100.0 * share));
        } else {
            regions.push(Region {
                kind: "2m-sparse",
                map: m,
                stride: HUGE,
            });
        }
    } else {
        let why = match thp.as_deref() {
            Some(mode) => format!("THP is '{mode}' (left unchanged)"),
            None => "kernel has no transparent huge pages".into(),
        };
        sink.skip("tlb-miss", Some("2m".into()), why.clone());
        sink.skip("tlb-miss", Some("2m-sparse".into()), why);
    }
    Ok(regions)
}

/// Configurations: (region index, N); the dense chase at every N of both grids.
fn configs(regions: &[Region], sizes: &Sizes) -> Vec<(usize, usize)> {
    let (ns, hs) = (&sizes.ns, &sizes.hs);
    let mut configs: Vec<(usize, usize)> = Vec::new();
    for (ri, r) in regions.iter().enumerate() {
        let sizes: Vec<usize> = match r.kind {
            "dense" => {
                let mut v: Vec<usize> = ns.iter().chain(hs).copied().collect();
                v.sort();
                v.dedup();
                v
            }
            "2m-sparse" => hs.clone(),
            _ => ns.clone(),
        };
        configs.extend(sizes.into_iter().map(|n| (ri, n)));
    }
    configs
}

/// Time per access (ticks, the timer's overhead subtracted) of every configuration, sampled
/// round by round over the span; with the rounds the samples were spread over.
type Samples = (BTreeMap<(usize, usize), Vec<f64>>, Rounds);

fn measure(
    sink: &mut Sink,
    opts: &Options,
    sizes: &Sizes,
    regions: &mut [Region],
    mut configs: Vec<(usize, usize)>,
) -> Result<Samples> {
    let (n_top, min_steps) = (sizes.n_top, sizes.min_steps);
    let oh = sink.timer.overhead;
    let mut got: BTreeMap<(usize, usize), Vec<f64>> = BTreeMap::new();
    let mut rng = ChaCha8Rng::seed_from_u64(0x7b1c);
    // Every configuration in each round (one sample, unless --samples asks for more samples
    // than there are rounds), the rounds spread over the span.
    let mut spread = opts.rounds(sizes.rounds);
    for round in 0..spread.count() {
        sink.round(&mut spread, round)?;
        configs.shuffle(&mut rng);
        if round > 0 {
            // The 4 KiB region on fresh memory every round: which physical pages back it (and
            // so how the host's page tables for them are cached) otherwise stays one run's,
            // and the miss cost near the STLB reach moved by 25% between runs here. (The huge
            // page regions stay: allocating them again can fail on fragmented memory.)
            for r in regions.iter_mut().filter(|r| r.kind == "4k") {
                r.map = scattered_4k(n_top, &mut rng)?;
            }
        }
        for &(ri, n) in &configs {
            let r = &regions[ri];
            for _ in 0..spread.per(round) {
                let chain = build_chase(&r.map, n, r.stride, &mut rng);
                let steps = min_steps.max(4 * n);
                std::hint::black_box(chain.run(2 * n));
                let t0 = start();
                let p = chain.run(steps);
                let t1 = stop();
                std::hint::black_box(p);
                got.entry((ri, n))
                    .or_default()
                    .push((t1.wrapping_sub(t0) as f64 - oh) / steps as f64);
            }
        }
    }
    Ok((got, spread))
}

/// The median time per access of every chase, by (kind, N), and how to show a difference.
struct Medians {
    med: BTreeMap<(&'static str, usize), f64>,
    ticks_per_cycle: f64,
}

impl Medians {
    /// Add every configuration's samples to the sink; their medians.
    fn add(sink: &mut Sink, regions: &[Region], (got, spread): Samples) -> Medians {
        let mut med: BTreeMap<(&'static str, usize), f64> = BTreeMap::new();
        for ((ri, n), s) in got {
            let r = &regions[ri];
            med.insert((r.kind, n), median(&s));
            let (page, unit) = match r.kind {
                "dense" => ("dense", "lines"),
                "4k" => ("4K", "pages"),
                "2m" => ("2M", "pages"),
                _ => ("2M", "huge_pages"),
            };
            let mut params = vec![
                ("chain", r.kind.to_string()),
                ("page", page.to_string()),
                ("stride_bytes", r.stride.to_string()),
                ("footprint_lines", n.to_string()),
            ];
            // The dense and page-strided chases share the `nodes` key (one row per N in tables);
            // the sparse chase counts huge pages.
            params.push((
                if unit == "huge_pages" {
                    "huge_pages"
                } else {
                    "nodes"
                },
                n.to_string(),
            ));
            sink.add(
                "tlb-miss",
                format!("tlb-miss/{}/n={n}", r.kind),
                &params,
                "access",
                1,
                s,
                &spread,
            );
        }
        Medians {
            med,
            ticks_per_cycle: sink.timer.hz / 1e9 / sink.timer.core_ghz,
        }
    }

    /// (N, the `kind` chase's median minus the dense chase's at the same N) over `sizes`.
    fn miss_of(&self, kind: &str, sizes: &[usize]) -> Vec<(f64, f64)> {
        let med = &self.med;
        sizes
            .iter()
            .filter_map(|&n| Some((n as f64, med.get(&(kind, n))? - med.get(&("dense", n))?)))
            .collect()
    }

    /// Ticks as text, with core cycles.
    fn cyc(&self, t: f64) -> String {
        format!(
            "{t:.1} cycles (~{:.0} core cycles)",
            t / self.ticks_per_cycle
        )
    }
}

/// `tlb-miss`: see the module documentation.
pub fn bench(sink: &mut Sink, opts: &Options) -> Result<()> {
    let topo = Topology::detect();
    let sizes = Sizes::new(&topo, opts);
    sizes.note(sink, &topo);
    let mut regions = regions(sink, &sizes)?;
    let configs = configs(&regions, &sizes);
    let samples = measure(sink, opts, &sizes, &mut regions, configs)?;
    let m = Medians::add(sink, &regions, samples);
    dense_finding(sink, &topo, &sizes, &m);
    let m4_first = findings_4k(sink, &topo, &sizes, &m);
    finding_2m(sink, &sizes, &m, m4_first);
    finding_2m_sparse(sink, &topo, &sizes, &m, m4_first);
    Ok(())
}

/// The dense chase on its own: its first step is the L1 data cache (a check of the method).
fn dense_finding(sink: &mut Sink, topo: &Topology, sizes: &Sizes, m: &Medians) {
    let (med, n_top) = (&m.med, sizes.n_top);
    let l1d = topo.data_cache(1).map(|c| c.bytes as usize);
    let dense_pts: Vec<(f64, f64)> = sizes
        .ns
        .iter()
        .filter_map(|&n| Some((n as f64, *med.get(&("dense", n))?)))
        .collect();
    let fd = fit_staircase(&dense_pts, 1, 0.5);
    let l1d_text = l1d
        .map(|b| format!("CPUID: {} KiB = {} lines", b / 1024, b / LINE))
        .unwrap_or_else(|| "CPUID does not report it".into());
    match fd.steps.first() {
        Some(s) => sink.finding("tlb-miss", "dense-l1d-lines", Some(s.at.round()), "lines", format!(
            "dense chase (no TLB misses): L1 data cache reach ~{:.0} lines = {:.0} KiB ({l1d_text}); \
             +{} per access beyond it", s.at, s.at * LINE as f64 / 1024.0, m.cyc(s.height))),
        None => sink.finding("tlb-miss", "dense-l1d-lines", None, "lines", format!(
            "dense chase: no step up to {n_top} lines ({l1d_text})")),
    }
}

/// Which of the 4 KiB chase's steps are the L1 DTLB's and the second-level TLB's: each step
/// belongs to the level whose CPUID-reported entries lie nearer (in log); without CPUID, a step
/// below 256 pages is the L1 DTLB's (x86 and Arm L1 DTLBs hold 32-128 entries for 4 KiB pages,
/// second-level TLBs 512-4096). The L1 step is the first one, when it is L1-like; the
/// second-level step the first that is not. So a first step at the STLB's size (the L1 DTLB's
/// small step lost in the noise of a loaded host: here 1600-2263 pages in most invocations at
/// load 15 on 2 vCPUs) is not named the L1 DTLB's reach, and a step beyond the STLB (the L2
/// cache, the host) is named nothing.
fn levels_4k(
    steps: &[Step],
    l1_4k: Option<u32>,
    l2_4k: Option<u32>,
) -> (Option<Step>, Option<Step>) {
    let l1_like = |at: f64| match (l1_4k, l2_4k) {
        (Some(a), Some(b)) => (at / a as f64).ln().abs() < (at / b as f64).ln().abs(),
        _ => at < 256.0,
    };
    let l1 = steps.first().copied().filter(|s| l1_like(s.at));
    let l2 = steps.iter().copied().find(|s| !l1_like(s.at));
    (l1, l2)
}

/// 4 KiB pages: the miss cost at the largest N and the reaches of the L1 DTLB and the
/// second-level TLB. Returns the first step's N (the reach of the TLB for 4 KiB pages).
fn findings_4k(sink: &mut Sink, topo: &Topology, sizes: &Sizes, m: &Medians) -> Option<f64> {
    let (l1_4k, l2_4k) = (topo.dtlb(1, P4K), topo.dtlb(2, P4K));
    let n_top = sizes.n_top;
    let cyc = |t: f64| m.cyc(t);
    let m4 = m.miss_of("4k", &sizes.ns);
    let f4 = fit_staircase(&m4, 2, 1.0);
    let m4_first = levels_4k(&f4.steps, l1_4k, l2_4k).0.map(|s| s.at);
    if let Some(&(_, top)) = m4.last() {
        sink.finding(
            "tlb-miss",
            "4k-miss-cycles",
            Some(top),
            "cycles",
            format!(
                "4k pages, {n_top} pages: {} per access above the dense chain",
                cyc(top)
            ),
        );
        let (l1, l2s) = levels_4k(&f4.steps, l1_4k, l2_4k);
        let l1t = level_text(l1_4k, "L1 DTLB for 4 KiB pages");
        match l1 {
            Some(s) => sink.finding(
                "tlb-miss",
                "4k-l1-reach",
                Some(s.at.round()),
                "pages",
                format!(
                    "4k pages: L1 DTLB reach ~{:.0} pages ({l1t}; half of the accesses miss there, \
                 misses begin at ~{:.0}): beyond it each access pays {} (a miss that hits the \
                 second-level TLB)",
                    s.at,
                    s.onset(),
                    cyc(s.height)
                ),
            ),
            None => sink.finding(
                "tlb-miss",
                "4k-l1-reach",
                None,
                "pages",
                format!(
                    "4k pages: no L1 DTLB step found in 8..{n_top} pages ({l1t}){}",
                    match f4.steps.first() {
                        Some(s) => format!(
                            "; the first step, at ~{:.0} pages, lies nearer the second-level TLB's size",
                            s.at
                        ),
                        None => String::new(),
                    }
                ),
            ),
        }
        let l2t = level_text(l2_4k, "second-level TLB for 4 KiB pages");
        match l2s {
            Some(s) => sink.finding(
                "tlb-miss",
                "4k-l2-reach",
                Some(s.at.round()),
                "pages",
                format!(
                    "4k pages: second-level TLB reach ~{:.0} pages ({l2t}; half of the accesses \
                 miss there, misses begin at ~{:.0}): beyond it each access pays {} more (a page \
                 walk, page tables in the caches)",
                    s.at,
                    s.onset(),
                    cyc(s.height)
                ),
            ),
            None => sink.finding(
                "tlb-miss",
                "4k-l2-reach",
                None,
                "pages",
                format!(
                    "4k pages: no second-level TLB step found up to {n_top} pages ({l2t}); the \
                 chases stop at a quarter of the L2 cache"
                ),
            ),
        }
    }
    m4_first
}

/// The same layout on huge pages: what THP saves at the same footprint.
fn finding_2m(sink: &mut Sink, sizes: &Sizes, m: &Medians, m4_first: Option<f64>) {
    let n_top = sizes.n_top;
    let m4 = m.miss_of("4k", &sizes.ns);
    let m2 = m.miss_of("2m", &sizes.ns);
    if let (Some(&(_, top2)), Some(&(_, top4))) = (m2.last(), m4.last()) {
        sink.finding("tlb-miss", "2m-miss-cycles", Some(top2), "cycles", format!(
            "2m pages, {n_top} 4 KiB strides: {} per access above the dense chain (4 KiB pages: {:.1})",
            m.cyc(top2), top4));
        let f = fit_staircase(&m2, 2, 1.0);
        if let Some(s) = f.steps.first()
            && (s.at / m4_first.unwrap_or(f64::INFINITY) - 1.0).abs() < 0.25
        {
            sink.notes.push(format!(
                "tlb-miss: the 4 KiB-strided chase on huge pages steps up at ~{:.0} pages like \
                 the one on 4 KiB pages: the TLB holds 4 KiB entries for this memory (on a VM: the \
                 host maps guest memory with 4 KiB pages, and a TLB entry covers the smaller of \
                 the guest's and the host's page); huge pages still shorten the walks",
                s.at
            ));
        }
    }
}

/// One node per huge page: the reach of 2 MiB entries.
fn finding_2m_sparse(
    sink: &mut Sink,
    topo: &Topology,
    sizes: &Sizes,
    m: &Medians,
    m4_first: Option<f64>,
) {
    let (l1_2m, l2_2m) = (topo.dtlb(1, P2M), topo.dtlb(2, P2M));
    let h_max = sizes.h_max;
    let ms = m.miss_of("2m-sparse", &sizes.hs);
    if !ms.is_empty() {
        let f = fit_staircase(&ms, 2, 1.0);
        let l1t = level_text(l1_2m, "L1 DTLB for 2 MiB pages");
        let l2t = level_text(l2_2m, "second-level TLB for 2 MiB pages");
        match f.steps.first() {
            Some(s) => {
                let same = m4_first
                    .filter(|r| (s.at / r - 1.0).abs() < 0.25)
                    .map(|r| {
                        format!(
                            "; as many as 4 KiB pages (~{r:.0}): this memory gets 4 KiB TLB entries"
                        )
                    })
                    .unwrap_or_default();
                sink.finding(
                    "tlb-miss",
                    "2m-reach",
                    Some(s.at.round()),
                    "huge pages",
                    format!(
                        "2m pages: L1 DTLB reach ~{:.0} huge pages ({l1t}{same}; misses begin at \
                     ~{:.0}); beyond it each access pays {}; {l2t}, not reached by {h_max} huge \
                     pages ({} MiB)",
                        s.at,
                        s.onset(),
                        m.cyc(s.height),
                        h_max * 2
                    ),
                );
            }
            None => sink.finding(
                "tlb-miss",
                "2m-reach",
                None,
                "huge pages",
                format!("2m pages: no TLB step in 4..{h_max} huge pages ({l1t}; {l2t})"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_named_by_the_level_they_lie_nearest() {
        let step = |at: f64| Step {
            at,
            height: 5.0,
            width: 0.1,
        };
        let at = |(a, b): (Option<Step>, Option<Step>)| (a.map(|s| s.at), b.map(|s| s.at));
        let cpuid = (Some(64), Some(2048));
        let two = [step(64.0), step(1988.0)];
        assert_eq!(
            at(levels_4k(&two, cpuid.0, cpuid.1)),
            (Some(64.0), Some(1988.0))
        );
        assert_eq!(at(levels_4k(&two, None, None)), (Some(64.0), Some(1988.0)));
        // The L1 step lost: the STLB's is not named the L1's, and the step beyond it nothing.
        let lost = [step(1405.0), step(3645.0)];
        assert_eq!(at(levels_4k(&lost, cpuid.0, cpuid.1)), (None, Some(1405.0)));
        assert_eq!(
            at(levels_4k(&[step(1823.0), step(7290.0)], None, None)),
            (None, Some(1823.0))
        );
        assert_eq!(
            at(levels_4k(&[step(104.0)], None, None)),
            (Some(104.0), None)
        );
        assert_eq!(at(levels_4k(&[], cpuid.0, cpuid.1)), (None, None));
    }

    #[test]
    fn chase_visits_every_node_with_balanced_sets() {
        let n = 256;
        let m = Mapping::anon(n * PAGE, PAGE, None).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let chain = build_chase(&m, n, PAGE, &mut rng);
        let head = chain.head;
        let mut seen = std::collections::HashSet::new();
        let mut per_set = [0usize; 64];
        for k in 0..n {
            let p = chain.run(k);
            assert!(seen.insert(p as usize));
            let off = p as usize - m.base as usize;
            assert_eq!(off % LINE, 0);
            per_set[off % PAGE / LINE] += 1;
        }
        assert_eq!(chain.run(n), head, "cyclic");
        assert!(per_set.iter().all(|&c| c == n / 64), "{per_set:?}");
        // Every node in its own page, not all at one offset.
        let pages: std::collections::HashSet<usize> =
            seen.iter().map(|a| (a - m.base as usize) / PAGE).collect();
        assert_eq!(pages.len(), n);
        assert_eq!(chain.run(n), head);
        assert_eq!(chain.run(0), head);
    }
}
