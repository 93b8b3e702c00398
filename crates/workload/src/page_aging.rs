//! `page-aging` (seed 001): sequential, random or hot+random reads or writes, one word per 4 KiB
//! page, over a data set larger than the memory limit of a cgroup made for the run, so that
//! reclaim keeps aging the pages (rmap walk, `ptep_clear_flush_young`) and evicting them.
//!
//! The parent process prepares the data, makes the cgroup and forks a child that joins the cgroup
//! and does the accesses; the parent waits (SIGINT/SIGTERM/SIGHUP: the child is killed), then
//! removes the cgroup. The child reads the reclaim counters around its access phase, so they
//! cover exactly the timed accesses.

use super::cgroup::{self, Cgroup, Version};
use super::metrics::{Direction, Metric, MetricSpec, metric};
use super::params::{Kind, ParamSpec, Params, SEED, show_size};
use super::sys::{self, PAGE};
use super::{Interrupted, Workload};
use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "backing",
        default: "file",
        kind: Kind::Choice(&["file", "anon"]),
        help: "file: a MAP_SHARED mapping of a data file on disk (reclaim writes dirty pages back \
               and drops clean ones); anon: private anonymous memory (reclaim swaps; needs swap)",
    },
    ParamSpec {
        name: "pattern",
        default: "seq",
        kind: Kind::Choice(&["seq", "random", "hot"]),
        help: "seq: pages in order, pass after pass; random: uniform random pages; hot: a fixed \
               hot page and a random page, alternately",
    },
    ParamSpec {
        name: "op",
        default: "read",
        kind: Kind::Choice(&["read", "write"]),
        help: "read or write one 8-byte word per access",
    },
    ParamSpec {
        name: "data",
        default: "64M",
        kind: Kind::Size {
            min: 4 << 20,
            max: 1 << 40,
        },
        help: "data set size",
    },
    ParamSpec {
        name: "chunk",
        default: "64K",
        kind: Kind::Size {
            min: 4 << 10,
            max: 1 << 40,
        },
        help: "backing=file: the data set is files of this size, mapped side by side; a page \
               fault reads ahead at most one file, whatever the device's read_ahead_kb (one \
               file of the whole data set: chunk=data)",
    },
    ParamSpec {
        name: "memory_max",
        default: "50%",
        kind: Kind::SizeOrPercent {
            min: 4 << 20,
            max: 1 << 40,
        },
        help: "memory limit of the run's cgroup: a size, or a percentage of data",
    },
    ParamSpec {
        name: "passes",
        default: "1",
        kind: Kind::Int { min: 1, max: 1000 },
        help: "accesses = passes x pages of the data set",
    },
    ParamSpec {
        name: "dir",
        default: "auto",
        kind: Kind::Path,
        help: "directory of the data file (backing=file; not tmpfs); auto = \
               $ABPERF_CACHE_DIR/page-aging, else ~/.cache/abperf/page-aging",
    },
    ParamSpec {
        name: "cgroup",
        default: "auto",
        kind: Kind::Choice(&["auto", "v2", "v1"]),
        help: "auto: cgroup v2 when its memory controller is usable, else the v1 memory hierarchy",
    },
    SEED,
];

pub const METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: "accesses_per_s",
        unit: "accesses/s",
        direction: Direction::HigherIsBetter,
        help: "accesses divided by the time of the access phase",
    },
    MetricSpec {
        name: "access_time_ns",
        unit: "ns",
        direction: Direction::LowerIsBetter,
        help: "time of the access phase (without data set-up)",
    },
    MetricSpec {
        name: "accesses",
        unit: "accesses",
        direction: Direction::Count,
        help: "accesses made",
    },
    MetricSpec {
        name: "pages_scanned",
        unit: "pages",
        direction: Direction::Count,
        help: "pages scanned by reclaim during the access phase (cgroup v2: the cgroup's \
               memory.stat pgscan; v1: /proc/vmstat pgscan_anon + pgscan_file, machine-wide)",
    },
    MetricSpec {
        name: "pages_reclaimed",
        unit: "pages",
        direction: Direction::Count,
        help: "pages reclaimed during the access phase (pgsteal, same sources)",
    },
    MetricSpec {
        name: "refaults",
        unit: "pages",
        direction: Direction::Count,
        help: "evicted pages faulted back in (the cgroup's workingset_refault_anon + _file)",
    },
    MetricSpec {
        name: "major_faults",
        unit: "faults",
        direction: Direction::Count,
        help: "major faults of the access phase",
    },
    MetricSpec {
        name: "minor_faults",
        unit: "faults",
        direction: Direction::Count,
        help: "minor faults of the access phase",
    },
];

pub const WORKLOAD: Workload = Workload {
    name: "page-aging",
    version: 1,
    summary: "reads or writes over a data set larger than its cgroup's memory limit, so that \
              reclaim ages and evicts pages while they are in use",
    stresses: "page reclaim and LRU aging under a memory cgroup limit: accessed-bit harvesting \
               on mapped pages, eviction, refaults (file: readahead, writeback of dirty pages; \
               anon: swap out/in)",
    kernel_paths: &[
        "shrink_active_list / shrink_folio_list -> folio_referenced -> folio_referenced_one -> \
         ptep_clear_flush_young (flush_tlb_page on arm64; no flush on x86)",
        "try_to_free_mem_cgroup_pages (memcg limit reclaim), try_to_unmap, workingset_refault",
        "handle_mm_fault -> filemap_fault / do_swap_page, page_cache_ra_*, writeback",
    ],
    modelled_on: "seed 001 (arm64 'Don't flush TLB while clearing the accessed bit'): its six \
                  tests are read and write versions of sequential, random, and alternating \
                  fixed-hot-page/random-page access over a data set larger than memory",
    runtime: "defaults (64M in 64K files, 50% limit, 1 pass), median of 10 runs at load average \
              8-9 (CV of accesses/s): seq read 0.34 s (16%), seq write 0.54 s (31%), random \
              read 2.9 s (29%), random write 3.2 s (24%), hot read 1.2 s (14%), hot write 1.6 s \
              (12%); random and hot wait on the disk (~0.4 ms a read)",
    params: PARAMS,
    metrics: METRICS,
    prepare: Some("creates the data file (backing=file) and removes cgroups left by killed runs"),
    exec,
    prepare_fn: Some(prepare),
    clean_up_fn: Some(clean_up),
};

/// The access sequence: page indices, deterministic given the seed.
pub struct AccessSeq {
    pattern: Pattern,
    pages: u64,
    i: u64,
    hot: u64,
    rng: rand_chacha::ChaCha8Rng,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    Seq,
    Random,
    Hot,
}

impl Pattern {
    pub fn parse(s: &str) -> Pattern {
        match s {
            "seq" => Pattern::Seq,
            "random" => Pattern::Random,
            _ => Pattern::Hot,
        }
    }
}

impl AccessSeq {
    pub fn new(pattern: Pattern, pages: u64, seed: u64) -> AccessSeq {
        let mut rng = sys::rng(seed);
        let hot = sys::below(&mut rng, pages);
        AccessSeq {
            pattern,
            pages,
            i: 0,
            hot,
            rng,
        }
    }

    /// The fixed page of `hot` (drawn first from the seed).
    pub fn hot_page(&self) -> u64 {
        self.hot
    }
}

impl Iterator for AccessSeq {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        let i = self.i;
        self.i += 1;
        Some(match self.pattern {
            Pattern::Seq => i % self.pages,
            Pattern::Random => sys::below(&mut self.rng, self.pages),
            Pattern::Hot => {
                if i.is_multiple_of(2) {
                    self.hot
                } else {
                    sys::below(&mut self.rng, self.pages)
                }
            }
        })
    }
}

struct Plan {
    file: bool,
    pattern: Pattern,
    write: bool,
    data: u64,
    limit: u64,
    accesses: u64,
    seed: u64,
    chunk: u64,
    /// backing=file: the directory of the chunk files
    path: Option<PathBuf>,
}

fn plan(p: &Params) -> Result<Plan> {
    if sys::page_size() != PAGE {
        bail!(
            "page-aging assumes 4 KiB pages; this system's page size is {}",
            sys::page_size()
        );
    }
    let data = p.size("data") / PAGE as u64 * PAGE as u64;
    let mm = p.str("memory_max");
    let limit = match mm.strip_suffix('%') {
        Some(pct) => data * pct.parse::<u64>().expect("checked percentage") / 100,
        None => p.size("memory_max"),
    } / PAGE as u64
        * PAGE as u64;
    let file = p.str("backing") == "file";
    let chunk = p.size("chunk");
    let path = if file {
        if !chunk.is_multiple_of(PAGE as u64) || !data.is_multiple_of(chunk) {
            bail!(
                "page-aging: chunk={}: must be a multiple of 4K that divides data={}",
                p.str("chunk"),
                p.str("data")
            );
        }
        if data / chunk > MAX_CHUNKS {
            bail!(
                "page-aging: data={} in chunk={} files is {} mappings; at most {MAX_CHUNKS} \
                 (raise chunk)",
                p.str("data"),
                p.str("chunk"),
                data / chunk
            );
        }
        let dir = match p.str("dir") {
            "auto" => sys::cache_dir().join("page-aging"),
            d => PathBuf::from(d),
        };
        Some(dir.join(format!("data-{}-{}", show_size(data), show_size(chunk))))
    } else {
        None
    };
    Ok(Plan {
        file,
        pattern: Pattern::parse(p.str("pattern")),
        write: p.str("op") == "write",
        data,
        limit,
        accesses: p.u64("passes") * (data / PAGE as u64),
        seed: p.seed(),
        chunk,
        path,
    })
}

/// Chunk files at most (each is one mapping; vm.max_map_count is 65530 by default).
const MAX_CHUNKS: u64 = 32768;

fn chunk_path(dir: &Path, i: u64) -> PathBuf {
    dir.join(format!("{i:05}"))
}

/// Make sure the data files exist with the right sizes (written in full, so that every page has
/// blocks on disk: reading a hole would not need I/O after eviction). Returns true if made now.
fn ensure_data(dir: &Path, size: u64, chunk: u64) -> Result<bool> {
    let top = dir.parent().expect("data directory has a parent");
    std::fs::create_dir_all(top)
        .with_context(|| format!("page-aging: dir={}: creating it", top.display()))?;
    if let Some(t) = sys::fs_type(top)
        && (t == "tmpfs" || t == "ramfs")
    {
        bail!(
            "page-aging: dir={} is on {t}: its pages are swap-backed shared memory, not \
             file-backed; give a directory on a disk file system, or use backing=anon",
            top.display()
        );
    }
    let n = size / chunk;
    let done = dir.join("complete");
    if done.exists() {
        return Ok(false);
    }
    let tmp = top.join(format!(
        ".{}.tmp.{}",
        dir.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)
        .with_context(|| format!("page-aging: creating {}", tmp.display()))?;
    let mut buf = vec![0u8; chunk.min(1 << 20) as usize];
    let mut page = 0u64;
    for i in 0..n {
        let path = chunk_path(&tmp, i);
        let mut f = std::fs::File::create(&path)
            .with_context(|| format!("page-aging: creating data file {}", path.display()))?;
        let mut left = chunk;
        while left > 0 {
            let len = left.min(buf.len() as u64) as usize;
            for pg in buf[..len].chunks_exact_mut(PAGE) {
                page += 1;
                for w in pg.chunks_exact_mut(8) {
                    w.copy_from_slice(&page.to_le_bytes());
                }
            }
            f.write_all(&buf[..len])
                .with_context(|| format!("page-aging: writing {}", path.display()))?;
            left -= len as u64;
        }
        f.sync_all()
            .with_context(|| format!("page-aging: syncing {}", path.display()))?;
    }
    std::fs::write(
        tmp.join("complete"),
        format!("{n} files of {chunk} bytes\n"),
    )?;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::rename(&tmp, dir).with_context(|| {
        format!(
            "page-aging: renaming {} to {}",
            tmp.display(),
            dir.display()
        )
    })?;
    Ok(true)
}

/// Write back and drop the files' pages from the page cache: every run starts cold, and no page
/// stays charged to another cgroup (it would then never be reclaimed by ours).
fn drop_cache(dir: &Path, files: u64) -> Result<()> {
    // one syncfs writes back what an op=write run left dirty (DONTNEED keeps dirty pages)
    let d = std::fs::File::open(dir)
        .with_context(|| format!("page-aging: opening {}", dir.display()))?;
    // SAFETY: plain syscall on our own fd.
    if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("page-aging: syncfs of {}", dir.display()));
    }
    for i in 0..files {
        let path = chunk_path(dir, i);
        let f = std::fs::File::open(&path)
            .with_context(|| format!("page-aging: opening {}", path.display()))?;
        // SAFETY: advisory call on our own fd.
        let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if r != 0 {
            return Err(std::io::Error::from_raw_os_error(r)).with_context(|| {
                format!("page-aging: posix_fadvise(DONTNEED) of {}", path.display())
            });
        }
    }
    Ok(())
}

fn clean(place: &cgroup::Place) -> Result<()> {
    for p in cgroup::clean_stale(place)? {
        abperf_model::error::stderr_line(&format!(
            "page-aging: removed cgroup {} left by a run that was killed",
            p.display()
        ));
    }
    Ok(())
}

/// After a run was killed: remove the cgroups of runs that are gone (a runner calls this in its
/// own process, which is in the memory cgroup its workloads inherit).
fn clean_up(p: &Params) -> Result<Vec<String>> {
    let place = cgroup::choose(p.str("cgroup"))?;
    Ok(cgroup::clean_stale(&place)?
        .into_iter()
        .map(|c| {
            format!(
                "page-aging: removed cgroup {} left by a run that was killed",
                c.display()
            )
        })
        .collect())
}

fn prepare(p: &Params) -> Result<()> {
    let pl = plan(p)?;
    let place = cgroup::choose(p.str("cgroup"))?;
    clean(&place)?;
    if let Some(path) = &pl.path
        && ensure_data(path, pl.data, pl.chunk)?
    {
        abperf_model::error::stderr_line(&format!(
            "page-aging: created the data set {} ({} in {} files)",
            path.display(),
            show_size(pl.data),
            pl.data / pl.chunk
        ));
    }
    Ok(())
}

/// What the child reports through the pipe.
#[derive(Debug, Serialize, Deserialize)]
struct ChildReport {
    error: Option<String>,
    access_ns: u64,
    accesses: u64,
    checksum: u64,
    scanned: u64,
    reclaimed: u64,
    refaults: u64,
    majflt: u64,
    minflt: u64,
}

/// Reclaim counters: (scanned, reclaimed, refaults).
fn counters(cg: &Path, v: Version) -> Result<(u64, u64, u64)> {
    let stat_path = cg.join("memory.stat");
    let stat = sys::parse_kv(
        &std::fs::read_to_string(&stat_path)
            .with_context(|| format!("reading {}", stat_path.display()))?,
    );
    let g = |m: &std::collections::BTreeMap<String, u64>, k: &str| m.get(k).copied();
    let refaults = g(&stat, "workingset_refault_anon").unwrap_or(0)
        + g(&stat, "workingset_refault_file").unwrap_or(0);
    match v {
        Version::V2 => {
            let (Some(s), Some(r)) = (g(&stat, "pgscan"), g(&stat, "pgsteal")) else {
                bail!("{} has no pgscan/pgsteal", stat_path.display());
            };
            Ok((s, r, refaults))
        }
        Version::V1 => {
            // v1 memory.stat has no reclaim counters; the machine-wide pgscan_anon/_file and
            // pgsteal_anon/_file also count memcg limit reclaim (pgscan_direct does not)
            let vm = sys::parse_kv(
                &std::fs::read_to_string("/proc/vmstat").context("reading /proc/vmstat")?,
            );
            let (Some(sa), Some(sf), Some(ra), Some(rf)) = (
                g(&vm, "pgscan_anon"),
                g(&vm, "pgscan_file"),
                g(&vm, "pgsteal_anon"),
                g(&vm, "pgsteal_file"),
            ) else {
                bail!("/proc/vmstat has no pgscan_anon/pgscan_file/pgsteal_anon/pgsteal_file");
            };
            Ok((sa + sf, ra + rf, refaults))
        }
    }
}

/// The child: join the cgroup, map the data, (anon: fill it), then the timed accesses.
fn child(pl: &Plan, cg: &Path, v: Version) -> Result<ChildReport> {
    Cgroup::join(cg, std::process::id())
        .with_context(|| format!("joining cgroup {}", cg.display()))?;
    let len = pl.data as usize;
    let map = match &pl.path {
        Some(dir) => {
            let prot = if pl.write {
                libc::PROT_READ | libc::PROT_WRITE
            } else {
                libc::PROT_READ
            };
            // reserve the range, then map each chunk file over its place in it
            let m = sys::Map::new(
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
            )?;
            for i in 0..pl.data / pl.chunk {
                let path = chunk_path(dir, i);
                let f = std::fs::OpenOptions::new()
                    .read(true)
                    .write(pl.write)
                    .custom_flags(libc::O_CLOEXEC)
                    .open(&path)
                    .with_context(|| format!("opening {}", path.display()))?;
                // SAFETY: MAP_FIXED inside our own reservation.
                let q = unsafe {
                    libc::mmap(
                        m.ptr.add((i * pl.chunk) as usize) as *mut _,
                        pl.chunk as usize,
                        prot,
                        libc::MAP_SHARED | libc::MAP_FIXED,
                        f.as_raw_fd(),
                        0,
                    )
                };
                if q == libc::MAP_FAILED {
                    return Err(std::io::Error::last_os_error())
                        .with_context(|| format!("mmap of {}", path.display()));
                }
            }
            m
        }
        None => {
            let m = sys::Map::anon(len)?;
            // fill: reading untouched anonymous memory maps the shared zero page, which is never
            // charged nor reclaimed
            for pg in 0..len / PAGE {
                // SAFETY: inside the mapping.
                unsafe {
                    std::ptr::write_volatile(m.ptr.add(pg * PAGE) as *mut u64, pg as u64 + 1)
                };
            }
            m
        }
    };
    let seq = AccessSeq::new(pl.pattern, pl.data / PAGE as u64, pl.seed);
    let (s0, r0, f0) = counters(cg, v)?;
    let (min0, maj0) = sys::self_faults();
    let t0 = Instant::now();
    let mut sum = 0u64;
    let base = map.ptr;
    if pl.write {
        for (i, pg) in seq.take(pl.accesses as usize).enumerate() {
            // SAFETY: pg < pages, so the word is inside the mapping.
            unsafe {
                std::ptr::write_volatile(base.add(pg as usize * PAGE + 8) as *mut u64, i as u64)
            };
        }
    } else {
        for pg in seq.take(pl.accesses as usize) {
            // SAFETY: as above.
            sum = sum.wrapping_add(unsafe {
                std::ptr::read_volatile(base.add(pg as usize * PAGE) as *const u64)
            });
        }
    }
    let access_ns = t0.elapsed().as_nanos() as u64;
    let (min1, maj1) = sys::self_faults();
    let (s1, r1, f1) = counters(cg, v)?;
    drop(map);
    Ok(ChildReport {
        error: None,
        access_ns,
        accesses: pl.accesses,
        checksum: sum,
        scanned: s1 - s0,
        reclaimed: r1 - r0,
        refaults: f1 - f0,
        majflt: maj1 - maj0,
        minflt: min1 - min0,
    })
}

/// One run: check the data set, make the run's cgroup, fork the access child into it, wait for
/// it (a signal kills it), remove the cgroup, and turn the child's report into metrics.
fn exec(p: &Params) -> Result<Vec<Metric>> {
    let pl = plan(p)?;
    let place = cgroup::choose(p.str("cgroup"))?;
    clean(&place)?;
    check_data(&pl)?;
    let signals = sys::Signals::catch()?;
    let mut cg = Cgroup::create(&place, pl.limit)?;
    let cg_path = cg.path.clone();
    // The child's report comes back through a close-on-exec pipe.
    let (mut rd, wr) = std::io::pipe().context("pipe2")?;
    let parent = std::process::id() as i32;
    // SAFETY: abperf is single-threaded here (no helper threads were started), so the child may
    // allocate; it leaves only through _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()).context("fork");
    }
    if pid == 0 {
        drop(rd);
        access_child(&pl, &cg_path, cg.version, parent, wr);
    }
    drop(wr);
    let exit = match sys::wait_child(pid, &signals, libc::SIGKILL) {
        Ok(e) => e,
        Err(e) => {
            // SAFETY: our child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            return Err(e);
        }
    };
    let mut out = String::new();
    let _ = rd.read_to_string(&mut out);
    let ooms = cg.oom_kills().unwrap_or(0);
    cg.remove()?;
    if let Some(sig) = exit.interrupted {
        return Err(anyhow!(Interrupted(sig)));
    }
    let rep = child_report(&pl, &out, &exit, ooms)?;
    std::hint::black_box(rep.checksum);
    if pl.limit < pl.data && rep.scanned == 0 {
        abperf_model::error::stderr_line(&format!(
            "page-aging: warning: no page was scanned by reclaim although the data set ({}) is \
             larger than memory_max ({})",
            show_size(pl.data),
            show_size(pl.limit)
        ));
    }
    Ok(report_metrics(&rep))
}

/// Before a run: warn when the limit cannot make reclaim age the data set; with backing=file
/// make the data set (if missing) and drop it from the page cache; with backing=anon, refuse
/// without swap.
fn check_data(pl: &Plan) -> Result<()> {
    if pl.limit >= pl.data {
        abperf_model::error::stderr_line(&format!(
            "page-aging: warning: memory_max {} is not below the data set {}: reclaim will \
             not age the data set",
            show_size(pl.limit),
            show_size(pl.data)
        ));
    }
    match &pl.path {
        Some(path) => {
            if ensure_data(path, pl.data, pl.chunk)? {
                abperf_model::error::stderr_line(&format!(
                    "page-aging: created the data set {} ({} in {} files); `abperf workload \
                     prepare page-aging` does this untimed",
                    path.display(),
                    show_size(pl.data),
                    pl.data / pl.chunk
                ));
            }
            drop_cache(path, pl.data / pl.chunk)?;
        }
        None => {
            let swap = sys::meminfo_kib("SwapTotal").unwrap_or(0);
            if swap == 0 && pl.limit < pl.data {
                bail!(
                    "page-aging: backing=anon needs swap: with memory_max ({}) below the data \
                     set ({}) anonymous pages can only be reclaimed to swap, and this machine \
                     has none (SwapTotal: 0 kB in /proc/meminfo); add swap (e.g. zram) or use \
                     backing=file",
                    show_size(pl.limit),
                    show_size(pl.data)
                );
            }
        }
    }
    Ok(())
}

/// The forked child: die with the parent, take the default action on SIGINT/SIGTERM/SIGHUP,
/// join the cgroup and do the accesses ([`child`]), write its report (or error) to `wr` and
/// leave through `_exit`.
fn access_child(
    pl: &Plan,
    cg_path: &Path,
    version: Version,
    parent: i32,
    wr: std::io::PipeWriter,
) -> ! {
    // SAFETY: plain calls in the child; dies with its parent (a killed run leaves no
    // process behind, only the empty cgroup that the next run removes).
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(1);
        }
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::signal(s, libc::SIG_DFL);
        }
    }
    // a panic must not unwind into the parent's code: it becomes an error report
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| child(pl, cg_path, version)))
        .unwrap_or_else(|_| Err(anyhow!("the access child panicked")));
    let rep = r.unwrap_or_else(|e| ChildReport {
        error: Some(format!("{e:#}")),
        access_ns: 0,
        accesses: 0,
        checksum: 0,
        scanned: 0,
        reclaimed: 0,
        refaults: 0,
        majflt: 0,
        minflt: 0,
    });
    let mut w = wr;
    let ok = rep.error.is_none();
    let _ = w.write_all(serde_json::to_string(&rep).unwrap_or_default().as_bytes());
    // SAFETY: leave without running the parent's destructors (the cgroup guard is theirs).
    unsafe { libc::_exit(if ok { 0 } else { 1 }) };
}

/// The child's report, from what it wrote (`out`) and how it ended: its error, an OOM kill in
/// the cgroup (`ooms`), or any other failure are errors.
fn child_report(pl: &Plan, out: &str, exit: &sys::Exit, ooms: u64) -> Result<ChildReport> {
    let rep: Option<ChildReport> = serde_json::from_str(out).ok();
    if let Some(ChildReport { error: Some(e), .. }) = &rep {
        bail!("page-aging: {e}");
    }
    let Some(rep) = rep.filter(|_| exit.success()) else {
        if ooms > 0 {
            bail!(
                "page-aging: the workload was OOM-killed in its cgroup (memory_max {} too small \
                 for what cannot be reclaimed{}); raise memory_max",
                show_size(pl.limit),
                if pl.file { "" } else { ", or swap is full" }
            );
        }
        bail!("page-aging: the workload child failed: {}", exit.describe());
    };
    Ok(rep)
}

/// The metrics of a run from the child's report.
fn report_metrics(rep: &ChildReport) -> Vec<Metric> {
    let secs = rep.access_ns as f64 / 1e9;
    vec![
        metric(
            METRICS,
            "accesses_per_s",
            rep.accesses as f64 / secs.max(1e-9),
        ),
        metric(METRICS, "access_time_ns", rep.access_ns as f64),
        metric(METRICS, "accesses", rep.accesses as f64),
        metric(METRICS, "pages_scanned", rep.scanned as f64),
        metric(METRICS, "pages_reclaimed", rep.reclaimed as f64),
        metric(METRICS, "refaults", rep.refaults as f64),
        metric(METRICS, "major_faults", rep.majflt as f64),
        metric(METRICS, "minor_faults", rep.minflt as f64),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(p: Pattern, pages: u64, seed: u64, n: usize) -> Vec<u64> {
        AccessSeq::new(p, pages, seed).take(n).collect()
    }

    #[test]
    fn same_seed_same_sequence() {
        for p in [Pattern::Seq, Pattern::Random, Pattern::Hot] {
            assert_eq!(seq(p, 1000, 7, 5000), seq(p, 1000, 7, 5000), "{p:?}");
        }
        assert_ne!(
            seq(Pattern::Random, 1000, 7, 100),
            seq(Pattern::Random, 1000, 8, 100)
        );
        assert_ne!(
            seq(Pattern::Hot, 1000, 7, 100),
            seq(Pattern::Hot, 1000, 8, 100)
        );
        // the ChaCha8 stream and the multiply-shift draw fix the sequence across builds and
        // library versions: pin the first draws
        assert_eq!(
            seq(Pattern::Random, 1 << 16, 0, 4),
            [30534, 45819, 3943, 57613]
        );
    }

    #[test]
    fn patterns_have_their_shape() {
        assert_eq!(seq(Pattern::Seq, 3, 1, 7), [0, 1, 2, 0, 1, 2, 0]);
        let s = AccessSeq::new(Pattern::Hot, 1 << 20, 3);
        let hot = s.hot_page();
        let v: Vec<u64> = s.take(1000).collect();
        assert!(v.iter().step_by(2).all(|&x| x == hot));
        let odd: std::collections::BTreeSet<_> = v.iter().skip(1).step_by(2).collect();
        assert!(odd.len() > 490, "random half is random: {}", odd.len());
        let r = seq(Pattern::Random, 100, 5, 100_000);
        assert!(r.iter().all(|&x| x < 100));
        let mut counts = [0u32; 100];
        for x in r {
            counts[x as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (800..1200).contains(&c)),
            "{counts:?}"
        );
    }
}
