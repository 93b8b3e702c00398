//! TLB benchmarks: local flush cost by pages (`tlb-flush`), remote shootdown (`tlb-shootdown`),
//! TLB miss cost by pointer chasing (`tlb-miss`) and the refill price of a full flush
//! (`tlb-refill`).

use super::harness::{Rounds, median, pin_current};
use super::mem::{Mapping, PAGE, madvise, mprotect};
use super::timer::{start, stop};
use super::{Options, Sink};
use anyhow::Result;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The kernel's default `tlb_single_page_flush_ceiling` on x86.
pub const DEFAULT_CEILING: usize = 33;

/// Flush sizes swept by `tlb-flush`: 1..64, 128, 256, 512.
pub fn flush_sizes() -> Vec<usize> {
    (1..=64).chain([128, 256, 512]).collect()
}

/// The ceiling the running kernel uses, if debugfs lets us read it.
pub fn kernel_ceiling() -> Option<usize> {
    std::fs::read_to_string("/sys/kernel/debug/x86/tlb_single_page_flush_ceiling")
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Madvise,
    Mprotect,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Madvise => "madvise",
            Op::Mprotect => "mprotect",
        }
    }
}

/// Two regions of `max` pages: `full` is touched before every timed call, `empty` has page
/// tables but no present pages (its calls do the syscall and the walk but flush nothing).
struct FlushRegions {
    full: Mapping,
    empty: Mapping,
}

impl FlushRegions {
    /// Regions of `max` pages, each at a random page offset within a 2 MiB window (from
    /// `rng`): where a range sits against the page-table boundaries is then drawn afresh every
    /// round instead of fixed for a run (the same sizes map at the same addresses again).
    fn new(max: usize, rng: &mut ChaCha8Rng) -> Result<FlushRegions> {
        use rand::Rng;
        let mut at = || rng.random_range(0..super::mem::HUGE / PAGE) * PAGE;
        let full = Mapping::anon_offset(max * PAGE, PAGE, at(), Some(false))?;
        let empty = Mapping::anon_offset(max * PAGE, PAGE, at(), Some(false))?;
        empty.touch_write(max);
        madvise(empty.base, max * PAGE, libc::MADV_DONTNEED)?;
        Ok(FlushRegions { full, empty })
    }

    /// One timed call on `n` pages; `touched` selects the populated region. Cycles, overhead
    /// subtracted.
    fn sample(&self, op: Op, n: usize, touched: bool, oh: f64) -> Result<f64> {
        let map = if touched { &self.full } else { &self.empty };
        let base = map.base;
        let len = n * PAGE;
        if touched {
            // Populate (after madvise) or re-load the TLB entries (after mprotect).
            map.touch_write(n);
        }
        let (t0, r, t1) = match op {
            Op::Madvise => {
                let t0 = start();
                // SAFETY: our own mapping.
                let r = unsafe { libc::madvise(base as *mut _, len, libc::MADV_DONTNEED) };
                (t0, r, stop())
            }
            Op::Mprotect => {
                let t0 = start();
                // SAFETY: as above.
                let r = unsafe { libc::mprotect(base as *mut _, len, libc::PROT_READ) };
                (t0, r, stop())
            }
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        if op == Op::Mprotect {
            mprotect(base, len, libc::PROT_READ | libc::PROT_WRITE)?;
        }
        Ok(t1.wrapping_sub(t0) as f64 - oh)
    }
}

/// Net cost (touched minus empty median, cycles) by pages.
type Net = Vec<(usize, f64)>;

/// A sweep of `sizes` for each of `ops` under `prefix`, touched and empty, one round at a time;
/// [`Sweep::record`] stores the configurations. Every round maps fresh regions (the cost of a
/// 1-page madvise differed by 15% between two mappings of one process here), and visits all
/// ops and sizes.
struct Sweep<'a> {
    bench: &'a str,
    prefix: String,
    extra: Vec<(&'a str, String)>,
    ops: &'a [Op],
    /// Sizes in a shuffled (seeded) order so that slow drift of the machine does not
    /// masquerade as a trend in N; results are reported in ascending order.
    order: Vec<usize>,
    /// (op index, size) -> (touched, empty) samples.
    got: BTreeMap<(usize, usize), (Vec<f64>, Vec<f64>)>,
    /// Where each round's regions sit.
    rng: ChaCha8Rng,
}

impl<'a> Sweep<'a> {
    fn new(
        bench: &'a str,
        prefix: String,
        extra: Vec<(&'a str, String)>,
        ops: &'a [Op],
        sizes: &[usize],
    ) -> Sweep<'a> {
        let mut order = sizes.to_vec();
        order.shuffle(&mut ChaCha8Rng::seed_from_u64(0x7cb));
        Sweep {
            bench,
            prefix,
            extra,
            ops,
            order,
            got: BTreeMap::new(),
            rng: ChaCha8Rng::seed_from_u64(0x5eed ^ round_seed()),
        }
    }

    /// Round `round`: `per` samples of every configuration on fresh regions.
    fn round(&mut self, round: usize, per: usize, oh: f64) -> Result<()> {
        let max = self.order.iter().copied().max().unwrap_or(1);
        let regions = FlushRegions::new(max, &mut self.rng)?;
        for (oi, &op) in self.ops.iter().enumerate() {
            for &n in &self.order {
                let e = self.got.entry((oi, n)).or_default();
                // Touched calls back to back, then empty calls back to back, each block after
                // untimed calls of its own kind. Alternating them put the after-effect of the
                // touched call's INVLPG into the empty baseline: an empty call right after a
                // 1-page flush cost 2.3x an empty call after an empty call here (950 vs 416
                // ticks; docs/micro.md#checked-against-independent-programs, benches/flush_aftereffect.c).
                for (touched, v) in [(true, &mut e.0), (false, &mut e.1)] {
                    for _ in 0..if round == 0 { 3 } else { 1 } {
                        regions.sample(op, n, touched, oh)?;
                    }
                    for _ in 0..per {
                        v.push(regions.sample(op, n, touched, oh)?);
                    }
                }
            }
        }
        Ok(())
    }

    /// Store the configurations (taken in `rounds`); returns, per op, the net cost (touched
    /// minus empty median) by size.
    fn record(mut self, sink: &mut Sink, rounds: &Rounds) -> Vec<(Op, Net)> {
        let mut nets = Vec::new();
        for (oi, &op) in self.ops.iter().enumerate() {
            let mut net = Vec::new();
            // BTreeMap order: sizes ascending within the op.
            for (&(_, n), (full, empty)) in self.got.range_mut((oi, 0)..=(oi, usize::MAX)) {
                net.push((n, median(full) - median(empty)));
                for (kind, v) in [("touched", full), ("empty", empty)] {
                    let mut params = vec![
                        ("op", op.name().to_string()),
                        ("pages", n.to_string()),
                        ("range", kind.to_string()),
                    ];
                    params.extend(self.extra.iter().cloned());
                    sink.add(
                        self.bench,
                        format!("{}/{}/{kind}/n={n}", self.prefix, op.name()),
                        &params,
                        "call",
                        n as u64,
                        std::mem::take(v),
                        rounds,
                    );
                }
            }
            nets.push((op, net));
        }
        nets
    }
}

/// A seed that differs from run to run (the placement of fresh regions is meant to vary).
fn round_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Where the per-call cost curve bends: two straight lines fitted left and right of a break.
#[derive(Debug, Clone, PartialEq)]
pub struct Knee {
    /// Last size of the left segment: the implied ceiling (sizes above it are full flushes).
    pub at: usize,
    pub left_slope: f64,
    pub right_slope: f64,
    /// Right-segment value at `at + 1` minus the left segment extrapolated there (negative:
    /// the full flush is cheaper than one more single-page flush).
    pub step: f64,
    /// SSE of the two-segment fit divided by the SSE of a single line.
    pub sse_ratio: f64,
}

fn fit(p: &[(f64, f64)]) -> (f64, f64, f64) {
    let n = p.len() as f64;
    let mx = p.iter().map(|x| x.0).sum::<f64>() / n;
    let my = p.iter().map(|x| x.1).sum::<f64>() / n;
    let sxx: f64 = p.iter().map(|x| (x.0 - mx).powi(2)).sum();
    let sxy: f64 = p.iter().map(|x| (x.0 - mx) * (x.1 - my)).sum();
    let b = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let a = my - b * mx;
    let sse = p.iter().map(|x| (x.1 - a - b * x.0).powi(2)).sum();
    (a, b, sse)
}

/// Find the knee in `(pages, cycles)` points (pages ascending, at least 12 points). A knee is
/// reported only if two segments explain the curve much better than one line (SSE below half)
/// and the right segment starts lower or climbs slower than the left, or if the right segment
/// starts lower by more than 2.5 residual standard deviations (and two lines fit clearly better).
pub fn find_knee(points: &[(usize, f64)]) -> Option<Knee> {
    if points.len() < 12 {
        return None;
    }
    let p: Vec<(f64, f64)> = points.iter().map(|&(n, c)| (n as f64, c)).collect();
    let (_, _, sse_one) = fit(&p);
    let mut best: Option<(f64, usize)> = None;
    for b in 3..p.len() - 4 {
        let (_, _, l) = fit(&p[..=b]);
        let (_, _, r) = fit(&p[b + 1..]);
        if best.is_none_or(|(s, _)| l + r < s) {
            best = Some((l + r, b));
        }
    }
    let (sse, b) = best?;
    let (la, lb, _) = fit(&p[..=b]);
    let (ra, rb, _) = fit(&p[b + 1..]);
    let x = p[b + 1].0;
    let step = (ra + rb * x) - (la + lb * x);
    let ratio = if sse_one > 0.0 { sse / sse_one } else { 1.0 };
    let bends = step < -0.5 * lb.abs().max(1.0) || rb < 0.7 * lb;
    // Or a drop that stands out of the noise around the two lines (full flush cheaper than one
    // more page even when the per-page zap cost keeps the slopes alike).
    let sigma = (sse / (p.len() - 4) as f64).sqrt();
    let drop = step < 0.0 && -step > 2.5 * sigma && ratio < 0.8;
    ((ratio < 0.5 && bends) || drop).then_some(Knee {
        at: points[b].0,
        left_slope: lb,
        right_slope: rb,
        step,
        sse_ratio: ratio,
    })
}

fn knee_finding(sink: &mut Sink, bench: &str, key: &str, net: &[(usize, f64)]) {
    let upto64: Vec<(usize, f64)> = net.iter().copied().filter(|p| p.0 <= 64).collect();
    match find_knee(&upto64) {
        Some(k) => sink.finding(bench, key, Some(k.at as f64), "pages", format!(
            "{}: knee after {} pages (implied tlb_single_page_flush_ceiling {}; kernel default {}): \
             {:.0} cycles/page below, {:.0} above, step {:+.0} cycles at {}",
            key.trim_end_matches("-knee"), k.at, k.at, DEFAULT_CEILING, k.left_slope, k.right_slope, k.step, k.at + 1)),
        None => sink.finding(bench, key, None, "pages",
            format!("{}: no clear knee in 1..64 pages (two lines fit no better than one, or no drop)",
                    key.trim_end_matches("-knee"))),
    }
}

/// `tlb-flush`: local madvise(MADV_DONTNEED) and mprotect on N touched pages minus empty range.
pub fn bench_flush(sink: &mut Sink, opts: &Options) -> Result<()> {
    let sizes = flush_sizes();
    let samples = opts.samples(101, 201);
    let mut rounds = opts.rounds(samples);
    let ops = [Op::Madvise, Op::Mprotect];
    let mut sweep = Sweep::new("tlb-flush", "tlb-flush".into(), Vec::new(), &ops, &sizes);
    for r in 0..rounds.count() {
        sink.round(&mut rounds, r)?;
        sweep.round(r, rounds.per(r), sink.timer.overhead)?;
    }
    for (op, net) in sweep.record(sink, &rounds) {
        knee_finding(sink, "tlb-flush", &format!("{}-knee", op.name()), &net);
    }
    aftereffect(sink, samples)?;
    match kernel_ceiling() {
        Some(c) => sink.notes.push(format!("kernel tlb_single_page_flush_ceiling = {c} (debugfs)")),
        None => sink.notes.push(format!(
            "tlb_single_page_flush_ceiling not readable (debugfs); kernel default is {DEFAULT_CEILING}")),
    }
    Ok(())
}

/// What a flush costs the code after it: getppid right after a 1-page madvise(MADV_DONTNEED)
/// of a touched page (one INVLPG), right after a 34-page one (a full flush) and right after
/// another getppid, in blocks (3 untimed, then the samples) over 8 rounds. Only a finding: the
/// flush configurations do not include this cost, which lands on whatever runs next (on the
/// Xeon VM here getppid paid +260 ticks after the INVLPG, +50..90 after the full flush; an empty
/// madvise right after the INVLPG paid +540, see `benches/flush_aftereffect.c`).
fn aftereffect(sink: &mut Sink, samples: usize) -> Result<()> {
    let oh = sink.timer.overhead;
    let map = Mapping::anon(34 * PAGE, PAGE, Some(false))?;
    let getppid = || {
        // SAFETY: a system call without arguments.
        unsafe { libc::syscall(libc::SYS_getppid) };
    };
    let zap = |n: usize| -> Result<()> {
        map.touch_write(n);
        madvise(map.base, n * PAGE, libc::MADV_DONTNEED)
    };
    // 0: after getppid, 1: after a 1-page flush, 2: after a 34-page flush.
    let mut got: [Vec<f64>; 3] = Default::default();
    let per = samples.div_ceil(8);
    for _round in 0..8 {
        for (k, v) in got.iter_mut().enumerate() {
            for i in 0..3 + per {
                match k {
                    0 => getppid(),
                    1 => zap(1)?,
                    _ => zap(34)?,
                }
                let t0 = start();
                getppid();
                let t1 = stop();
                if i >= 3 {
                    v.push(t1.wrapping_sub(t0) as f64 - oh);
                }
            }
        }
    }
    let [base, one, full] = got.map(|v| median(&v));
    sink.finding(
        "tlb-flush",
        "aftereffect-1",
        Some(one - base),
        "cycles",
        format!(
            "a system call right after a 1-page madvise flush (INVLPG) costs {:.0} cycles more \
             (getppid {one:.0} vs {base:.0} after getppid; after a 34-page full flush {:+.0}): \
             a cost of the flush that lands on the code after it and is not in the per-call \
             figures",
            one - base,
            full - base
        ),
    );
    Ok(())
}

/// Threads of this process on other CPUs, spinning (their CPUs stay in our mm: flushes need IPIs)
/// or sleeping (their CPUs go idle in lazy-TLB mode). Stopped and joined on drop.
struct Remotes {
    stop: Arc<AtomicBool>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl Remotes {
    fn start(cpus: &[usize], spin: bool) -> Result<Remotes> {
        let stop = Arc::new(AtomicBool::new(false));
        let ready = Arc::new(AtomicUsize::new(0));
        let mut handles = Vec::new();
        let rt = super::harness::is_realtime();
        for &cpu in cpus {
            let (stop, ready) = (stop.clone(), ready.clone());
            handles.push(
                std::thread::Builder::new()
                    .name(format!("abperf-remote{cpu}"))
                    .spawn(move || {
                        let pinned = pin_current(cpu).is_ok()
                            && (!rt || super::harness::make_realtime().is_ok());
                        ready.fetch_add(if pinned { 1 } else { 1 << 20 }, Ordering::SeqCst);
                        while !stop.load(Ordering::Relaxed) {
                            if spin {
                                std::hint::spin_loop();
                            } else {
                                std::thread::park();
                            }
                        }
                    })?,
            );
        }
        let r = Remotes { stop, handles };
        while ready.load(Ordering::SeqCst) & ((1 << 20) - 1) < cpus.len()
            && ready.load(Ordering::SeqCst) >> 20 == 0
        {
            std::thread::yield_now();
        }
        if ready.load(Ordering::SeqCst) >> 20 != 0 {
            anyhow::bail!("cannot pin a remote thread to CPUs {cpus:?} (or give it SCHED_FIFO)");
        }
        // Let sleepers reach their futex wait.
        std::thread::sleep(std::time::Duration::from_millis(if spin { 1 } else { 20 }));
        Ok(r)
    }
}

impl Drop for Remotes {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for h in self.handles.drain(..) {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

/// The CPUs for remote threads: `--remote-cpu` first, then the other CPUs this process may use
/// (as the options recorded them before the measuring thread was pinned).
fn remote_cpus(opts: &Options) -> Vec<usize> {
    let mut v: Vec<usize> = opts.remote_cpu.into_iter().collect();
    for c in opts.cpus.iter().copied() {
        if c != opts.cpu && !v.contains(&c) {
            v.push(c);
        }
    }
    v
}

/// `tlb-shootdown`: the flush sweep with 1..(CPUs-1) remote threads spinning, and sleeping.
pub fn bench_shootdown(sink: &mut Sink, opts: &Options) -> Result<()> {
    let remotes = remote_cpus(opts);
    if remotes.is_empty() {
        sink.skip(
            "tlb-shootdown",
            None,
            "needs a second CPU (only one is allowed for this process)",
        );
        return Ok(());
    }
    let sizes = [1, 2, 4, 8, 16, 32, 33, 34, 40, 64, 128, 256, 512];
    let samples = opts.samples(21, 101);
    // Thread counts: --remote-cpus, else 1, 2, 4, ... up to all other CPUs.
    let counts = match &opts.remote_counts {
        Some(c) => c.iter().copied().filter(|m| *m <= remotes.len()).collect(),
        None => {
            let mut counts = Vec::new();
            let mut m = 1;
            while m < remotes.len() {
                counts.push(m);
                m *= 2;
            }
            counts.push(remotes.len());
            counts
        }
    };
    let mut modes: Vec<(String, usize, bool)> = vec![("local".into(), 0, true)];
    for &m in &counts {
        modes.push((format!("spin{m}"), m, true));
        modes.push((format!("sleep{m}"), m, false));
    }
    let ops = [Op::Madvise, Op::Mprotect];
    let mut sweeps: Vec<Sweep> = modes
        .iter()
        .map(|(mode, m, _)| {
            let extra = vec![
                ("remote", mode.clone()),
                ("remote_threads", m.to_string()),
                ("remote_cpus", format!("{:?}", &remotes[..*m])),
            ];
            Sweep::new(
                "tlb-shootdown",
                format!("tlb-shootdown/{mode}"),
                extra,
                &ops,
                &sizes,
            )
        })
        .collect();
    // Rounds spread over the span, every mode in each; the remote threads run only while their
    // mode is measured.
    let mut rounds = opts.rounds(samples);
    for r in 0..rounds.count() {
        sink.round(&mut rounds, r)?;
        for ((_, m, spin), sweep) in modes.iter().zip(sweeps.iter_mut()) {
            let _threads = if *m > 0 {
                Some(Remotes::start(&remotes[..*m], *spin)?)
            } else {
                None
            };
            sweep.round(r, rounds.per(r), sink.timer.overhead)?;
        }
    }
    for sweep in sweeps {
        sweep.record(sink, &rounds);
    }
    for (mode, m, spin) in &modes {
        for op in ops {
            if *m > 0 {
                let touched = |sink: &Sink, mode: &str, n: usize| {
                    sink.median(&format!("tlb-shootdown/{mode}/{}/touched/n={n}", op.name()))
                };
                for n in [1usize, 33, 34] {
                    if let (Some(l), Some(r)) = (touched(sink, "local", n), touched(sink, mode, n))
                    {
                        sink.finding("tlb-shootdown", &format!("{}-{mode}-n{n}-extra", op.name()), Some(r - l), "cycles",
                            format!("{n}-page {}: {r:.0} cycles with {m} {} remote thread(s), {l:.0} local ({:+.0})",
                                op.name(), if *spin { "spinning" } else { "sleeping" }, r - l));
                    }
                }
            }
        }
    }
    Ok(())
}

/// A chain of pointers, one per `stride` bytes, visited in random order. With a page stride the
/// node sits at a staggered cache line of its page so that the chain covers as many cache sets
/// as a dense chain of the same number of lines.
fn build_chain(base: *mut u8, count: usize, stride: usize, seed: u64) -> *const usize {
    let mut order: Vec<usize> = (0..count).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    let node = |i: usize| {
        let line = if stride > 64 {
            (i % (stride / 64)) * 64
        } else {
            0
        };
        // SAFETY: inside the caller's mapping of count * stride bytes.
        unsafe { base.add(i * stride + line) as *mut usize }
    };
    for w in 0..count {
        let next = node(order[(w + 1) % count]);
        // SAFETY: as above; nodes are 8-byte aligned.
        unsafe { *node(order[w]) = next as usize };
    }
    node(order[0])
}

#[inline(never)]
fn chase(mut p: *const usize, steps: usize) -> *const usize {
    for _ in 0..steps {
        // SAFETY: the chain only holds pointers to its own nodes.
        p = unsafe { std::ptr::read_volatile(p) } as *const usize;
    }
    p
}

/// `tlb-miss`: TLB reach and miss cost, separated from cache effects (see [`super::tlbmiss`]).
pub fn bench_miss(sink: &mut Sink, opts: &Options) -> Result<()> {
    super::tlbmiss::bench(sink, opts)
}

/// `tlb-refill`: re-touch a working set of K pages after a flush of `ceiling` pages (partial,
/// INVLPG per page) against `ceiling + 1` pages (full flush) and no flush.
pub fn bench_refill(sink: &mut Sink, opts: &Options) -> Result<()> {
    let ceiling = kernel_ceiling().unwrap_or(DEFAULT_CEILING);
    let ks: Vec<usize> = if opts.quick {
        vec![64, 512, 2048]
    } else {
        vec![16, 64, 256, 512, 1024, 2048, 4096]
    };
    let max = *ks.last().expect("sizes");
    let samples = opts.samples(21, 101);
    let oh = sink.timer.overhead;
    let kinds = [
        ("none", 0usize),
        ("partial", ceiling),
        ("full", ceiling + 1),
    ];
    // Rounds spread over the span, every working set and flush in each, on fresh memory at a
    // random place each round (its physical pages and cache sets would otherwise stay those of
    // one run: re-touch costs moved by 25% between runs here).
    let mut rng = ChaCha8Rng::seed_from_u64(round_seed());
    let mut got: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); kinds.len()]; ks.len()];
    let mut rounds = opts.rounds(samples);
    for r in 0..rounds.count() {
        sink.round(&mut rounds, r)?;
        let per = rounds.per(r);
        use rand::Rng;
        let mut at = || rng.random_range(0..super::mem::HUGE / PAGE) * PAGE;
        let ws = Mapping::anon_offset(max * PAGE, PAGE, at(), Some(false))?;
        ws.touch_write(max);
        let fl = Mapping::anon_offset((ceiling + 1) * PAGE, PAGE, at(), Some(false))?;
        let seed = rng.random::<u64>();
        let heads: Vec<*const usize> = ks
            .iter()
            .map(|&k| build_chain(ws.base, k, PAGE, seed ^ k as u64))
            .collect();
        let one = |k: usize, head: *const usize, pages: usize| -> Result<f64> {
            fl.touch_write(ceiling + 1);
            std::hint::black_box(chase(head, 2 * k));
            if pages > 0 {
                madvise(fl.base, pages * PAGE, libc::MADV_DONTNEED)?;
            }
            let t0 = start();
            let p = chase(head, k);
            let t1 = stop();
            std::hint::black_box(p);
            Ok(t1.wrapping_sub(t0) as f64 - oh)
        };
        for (ki, (&k, &head)) in ks.iter().zip(&heads).enumerate() {
            for (fi, &(_, pages)) in kinds.iter().enumerate() {
                for _ in 0..if r == 0 { 3 } else { 1 } {
                    one(k, head, pages)?;
                }
                for _ in 0..per {
                    got[ki][fi].push(one(k, head, pages)?);
                }
            }
        }
    }
    for (ki, &k) in ks.iter().enumerate() {
        let mut med = std::collections::BTreeMap::new();
        for (fi, &(kind, pages)) in kinds.iter().enumerate() {
            let s = std::mem::take(&mut got[ki][fi]);
            med.insert(kind, median(&s));
            sink.add(
                "tlb-refill",
                format!("tlb-refill/{kind}/k={k}"),
                &[
                    ("flush", kind.into()),
                    ("flush_pages", pages.to_string()),
                    ("working_set_pages", k.to_string()),
                    ("ceiling", ceiling.to_string()),
                ],
                "re-touch",
                k as u64,
                s,
                &rounds,
            );
        }
        let price = med["full"] - med["partial"];
        sink.finding("tlb-refill", &format!("full-flush-price-k{k}"), Some(price), "cycles", format!(
            "re-touching {k} pages after a full ({}-page) flush costs {price:+.0} cycles more than after a \
             partial ({ceiling}-page) flush ({:+.1} per page; no flush: {:.0} cycles)",
            ceiling + 1, price / k as f64, med["none"]));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 29: the remote CPUs come from the process's CPUs as read before pinning, not from
    /// the pinned thread's mask (which held one CPU, so only one remote CPU was ever used).
    #[test]
    fn remote_cpus_are_every_other_cpu_of_the_process() {
        let opts = Options {
            quick: true,
            samples: None,
            cpu: 0,
            remote_cpu: Some(5),
            remote_counts: None,
            cpus: vec![0, 1, 2, 5, 7],
            realtime: false,
            span: None,
            share: 1,
        };
        assert_eq!(remote_cpus(&opts), [5, 1, 2, 7]);
    }

    #[test]
    fn knee_found_at_drop() {
        // 300/page up to 33, then a constant-ish full flush plus a small per-page zap cost.
        let pts: Vec<(usize, f64)> = (1..=64)
            .map(|n| {
                (
                    n,
                    if n <= 33 {
                        1000.0 + 300.0 * n as f64
                    } else {
                        6000.0 + 50.0 * n as f64
                    },
                )
            })
            .collect();
        let k = find_knee(&pts).expect("knee");
        assert_eq!(k.at, 33);
        assert!(
            k.step < 0.0
                && (k.left_slope - 300.0).abs() < 1.0
                && (k.right_slope - 50.0).abs() < 1.0
        );
    }

    #[test]
    fn knee_found_in_noise_and_not_invented() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        use rand::Rng;
        for _ in 0..20 {
            let mut noise = || rng.random_range(-900.0..900.0);
            // madvise-like: 700/page, drop of 2500 after 33, then 600/page.
            let knee: Vec<(usize, f64)> = (1..=64)
                .map(|n| {
                    (
                        n,
                        if n <= 33 {
                            700.0 * n as f64
                        } else {
                            700.0 * 33.0 - 2500.0 + 600.0 * (n - 33) as f64
                        } + noise(),
                    )
                })
                .collect();
            let k = find_knee(&knee).expect("knee in noise");
            assert!((32..=34).contains(&k.at), "{k:?}");
            let line: Vec<(usize, f64)> =
                (1..=64).map(|n| (n, 650.0 * n as f64 + noise())).collect();
            assert_eq!(find_knee(&line), None, "no knee on a noisy line");
        }
    }

    #[test]
    fn no_knee_on_a_line() {
        let pts: Vec<(usize, f64)> = (1..=64)
            .map(|n| (n, 500.0 + 200.0 * n as f64 + (n % 3) as f64))
            .collect();
        assert_eq!(find_knee(&pts), None);
        assert_eq!(find_knee(&pts[..5]), None);
    }

    #[test]
    fn chain_visits_every_node() {
        let m = Mapping::anon(64 * PAGE, PAGE, None).unwrap();
        let head = build_chain(m.base, 64, PAGE, 1);
        let mut seen = std::collections::HashSet::new();
        let mut p = head;
        for _ in 0..64 {
            assert!(seen.insert(p as usize));
            let off = p as usize - m.base as usize;
            assert_eq!(off % PAGE, (off / PAGE % 64) * 64, "staggered line");
            p = chase(p, 1);
        }
        assert_eq!(p, head);
    }
}
