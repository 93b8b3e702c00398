//! A small mutation fuzzer for every parser abperf exposes to files (stable Rust: no cargo-fuzz).
//!
//! Each target takes the bytes of one input file, as the command line would read them, and
//! returns Ok or the error message the user would see. The engine mutates the committed corpus
//! (`tests/data/fuzz/<target>/`) and inputs that produced a new kind of outcome, and counts:
//!
//! - panics (caught; the input is saved),
//! - hangs (one input running longer than the limit: the input is saved and the process exits,
//!   since a thread cannot be stopped),
//! - errors whose message does not name the input file (saved).
//!
//! Used by `examples/fuzz/main.rs` (`benches/fuzz.sh SECONDS`) and by `tests/fuzz_props.rs`.
#![allow(dead_code)]
#![allow(clippy::disallowed_macros)] // tests print what they saw to stderr
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The name every input is given, which every error must repeat.
pub const INPUT_NAME: &str = "fuzz-input-Q7.txt";

/// What one parser made of one input.
pub enum Outcome {
    Ok(String),
    Err(String),
}

/// A parser under test.
pub struct Target {
    pub name: &'static str,
    /// `run(bytes, path)`: `path` is a file holding the bytes, for parsers that read files.
    pub run: fn(&[u8], &Path) -> Outcome,
    /// Whether `run` needs the bytes written to `path` first.
    pub needs_file: bool,
}

fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

fn import(format: abperf::import::Format, b: &[u8]) -> Outcome {
    match abperf::import::parse(format, INPUT_NAME, &text(b), "x") {
        Ok(i) => Outcome::Ok(format!("{} variants", i.variants.len().min(3))),
        Err(e) => Outcome::Err(e.to_string()),
    }
}

fn ftrace(b: &[u8], _: &Path) -> Outcome {
    use abperf::trace::{tables, text};
    // As `abperf trace import FILE` reads a text capture (lenient off, then on).
    for lenient in [false, true] {
        let opts = text::TextOptions {
            lenient,
            ..Default::default()
        };
        match text::parse(INPUT_NAME, b, &opts) {
            Ok(cap) => {
                let mut an = match tables::Analyzer::new(&cap.schema, &[tables::Spec::Standard]) {
                    Ok(a) => a,
                    Err(e) => return Outcome::Err(e),
                };
                cap.for_each(|e| an.event(e));
                let _ = an.finish(&cap.schema);
            }
            Err(e) if !lenient => return Outcome::Err(e.to_string()),
            Err(e) => return Outcome::Err(e.to_string()),
        }
    }
    Outcome::Ok("capture".into())
}

fn raw(_: &[u8], path: &Path) -> Outcome {
    use abperf::trace::{record::RawCapture, tables::Spec};
    use anyhow::Context;
    // As `abperf trace import FILE.raw` reads a raw capture.
    match RawCapture::read(path).and_then(|r| {
        r.analyze(&[Spec::Standard])
            .with_context(|| path.display().to_string())
    }) {
        Ok(d) => Outcome::Ok(format!("{} events", d.events.min(1))),
        Err(e) => Outcome::Err(format!("{e:#}")),
    }
}

fn ministat(b: &[u8], _: &Path) -> Outcome {
    let t = text(b);
    let column = if t.len().is_multiple_of(2) { 1 } else { 2 };
    match abperf::commands::compare_input::parse_numbers(&t, INPUT_NAME, column) {
        Ok(v) => Outcome::Ok(format!("{} values", v.len().min(3))),
        Err(e) => Outcome::Err(format!("{e:#}")),
    }
}

/// Every target.
pub fn targets() -> Vec<Target> {
    use abperf::import::Format;
    vec![
        Target {
            name: "time",
            run: |b, _| import(Format::Time, b),
            needs_file: false,
        },
        Target {
            name: "perf-stat",
            run: |b, _| import(Format::PerfStat, b),
            needs_file: false,
        },
        Target {
            name: "hyperfine",
            run: |b, _| import(Format::Hyperfine, b),
            needs_file: false,
        },
        Target {
            name: "csv",
            run: |b, _| import(Format::Csv, b),
            needs_file: false,
        },
        Target {
            name: "jsonl",
            run: |b, _| import(Format::Jsonl, b),
            needs_file: false,
        },
        Target {
            name: "ministat",
            run: ministat,
            needs_file: false,
        },
        Target {
            name: "ftrace-text",
            run: ftrace,
            needs_file: false,
        },
        Target {
            name: "raw",
            run: raw,
            needs_file: true,
        },
    ]
}

/// Counts of one fuzzing session.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub execs: u64,
    pub ok: u64,
    pub errors: u64,
    pub panics: u64,
    pub unnamed: u64,
    pub hangs: u64,
    pub slowest: Duration,
    pub slowest_target: String,
    /// target -> execs
    pub per_target: Vec<(String, u64)>,
    /// First examples, "target: message" (a few of each kind).
    pub examples: Vec<String>,
}

/// Interesting bytes and tokens for the mutators.
const BYTES: &[u8] = b"\0\xff\n\r\t -+.eE0123456789:()[]{}\",%#>";
const TOKENS: &[&str] = &[
    "0",
    "-0",
    "-1",
    "1e308",
    "1e-320",
    "1e80",
    "1e200",
    "NaN",
    "inf",
    "-inf",
    "18446744073709551616",
    "4294967296",
    "2147483648",
    "9999999999999999999999999999",
    "0.000000000000000000000000000000001",
    "null",
    "true",
    "[]",
    "{}",
    "\"\"",
    "user",
    "system",
    "elapsed",
    "%CPU",
    "maxresident)k",
    "pagefaults",
    "swaps",
    "Performance counter stats for",
    "seconds time elapsed",
    "<not supported>",
    "( +-",
    "\"command\"",
    "\"times\"",
    "wall_ns [ns]",
    "wall_ns [KiB]",
    "started_ns",
    "ended_ns",
    "-1",
    "0:99.44",
    "99:99:99",
    "99999%CPU",
    "tlb_flush:",
    "[LOST 3 EVENTS]",
    "# tracer: nop",
    "[000]",
    "[999999]",
    "\u{1b}[2J",
    "\u{202e}",
];

fn pick<'a, T>(rng: &mut ChaCha8Rng, v: &'a [T]) -> &'a T {
    &v[rng.random_range(0..v.len())]
}

/// One random edit of `buf` (`other` is another corpus input, for splicing).
fn mutate_once(rng: &mut ChaCha8Rng, buf: &mut Vec<u8>, other: &[u8], max: usize) {
    let len = buf.len();
    match rng.random_range(0..13) {
        0 if len > 0 => {
            let i = rng.random_range(0..len);
            buf[i] ^= 1 << rng.random_range(0..8);
        }
        1 if len > 0 => {
            let i = rng.random_range(0..len);
            buf[i] = *pick(rng, BYTES);
        }
        2 => {
            let i = rng.random_range(0..=len);
            let n = rng.random_range(1..8);
            for _ in 0..n {
                buf.insert(i.min(buf.len()), rng.random());
            }
        }
        3 if len > 0 => {
            let a = rng.random_range(0..len);
            let b = (a + rng.random_range(1..64)).min(len);
            buf.drain(a..b);
        }
        4 if len > 0 => {
            // Repeat a chunk (lines, records) a few or many times.
            let a = rng.random_range(0..len);
            let b = (a + rng.random_range(1..256)).min(len);
            let chunk = buf[a..b].to_vec();
            let times = if rng.random_range(0..20) == 0 {
                rng.random_range(10..2000)
            } else {
                rng.random_range(1..4)
            };
            for _ in 0..times {
                if buf.len() + chunk.len() > max {
                    break;
                }
                buf.splice(b..b, chunk.iter().copied());
            }
        }
        5 => {
            let t = pick(rng, TOKENS).as_bytes();
            let i = rng.random_range(0..=len);
            buf.splice(i..i, t.iter().copied());
        }
        6 if len > 0 => {
            // Replace a run of digits with an interesting number.
            let i = rng.random_range(0..len);
            if let Some(s) = (i..len).find(|&j| buf[j].is_ascii_digit()) {
                let e = (s..len)
                    .find(|&j| !(buf[j].is_ascii_digit() || buf[j] == b'.'))
                    .unwrap_or(len);
                let t = pick(rng, TOKENS).as_bytes().to_vec();
                buf.splice(s..e, t);
            }
        }
        7 if !other.is_empty() => {
            // Splice: a piece of another input.
            let a = rng.random_range(0..other.len());
            let b = (a + rng.random_range(1..512)).min(other.len());
            let i = rng.random_range(0..=len);
            buf.splice(i..i, other[a..b].iter().copied());
        }
        8 if len > 0 => {
            buf.truncate(rng.random_range(0..len));
        }
        9 if len > 0 => {
            // Swap two lines.
            let lines: Vec<usize> = buf
                .iter()
                .enumerate()
                .filter(|&(_, &c)| c == b'\n')
                .map(|(i, _)| i)
                .collect();
            if lines.len() >= 3 {
                let a = rng.random_range(0..lines.len() - 2);
                let (s, m, e) = (lines[a] + 1, lines[a + 1] + 1, lines[a + 2] + 1);
                let first = buf[s..m].to_vec();
                let second = buf[m..e].to_vec();
                buf.splice(s..e, second.into_iter().chain(first));
            }
        }
        10 if len > 8 => {
            // Overwrite a little-endian integer (raw headers, lengths, commit words).
            let i = rng.random_range(0..len - 8);
            let v: u64 = match rng.random_range(0..5) {
                0 => 0,
                1 => u64::MAX,
                2 => u32::MAX as u64,
                3 => rng.random_range(0..65536),
                _ => rng.random(),
            };
            let w = if rng.random() { 8 } else { 4 };
            buf[i..i + w].copy_from_slice(&v.to_le_bytes()[..w]);
        }
        11 => {
            // A very long line (the quadratic text paths of issue 12 were found this way).
            if rng.random_range(0..50) == 0 && len < max / 2 {
                let i = rng.random_range(0..=len);
                let n = rng.random_range(1000..(max / 2).max(1001));
                let c = *pick(rng, b"x 9.:,");
                buf.splice(i..i, std::iter::repeat_n(c, n));
            }
        }
        _ => {
            if len > 0 {
                let i = rng.random_range(0..len);
                buf[i] = buf[i].wrapping_add(rng.random_range(1..4));
            }
        }
    }
    if buf.len() > max {
        buf.truncate(max);
    }
}

/// A signature of an outcome, for keeping inputs that did something new: the message with its
/// numbers (and the quoted input) taken out.
fn signature(target: &str, o: &Outcome) -> String {
    let (kind, msg) = match o {
        Outcome::Ok(s) => ("ok", s.as_str()),
        Outcome::Err(s) => ("err", s.as_str()),
    };
    let mut out = format!("{target}/{kind}/");
    let mut in_quote = false;
    for c in msg.chars().take(200) {
        match c {
            '"' | '\'' => in_quote = !in_quote,
            _ if in_quote => {}
            c if c.is_ascii_digit() => {
                if !out.ends_with('#') {
                    out.push('#');
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Running totals, readable from the hang watchdog and the allocation guard (which may not
/// allocate): executions, ok, errors, panics, unnamed errors.
pub static EXECS: AtomicU64 = AtomicU64::new(0);
pub static OKS: AtomicU64 = AtomicU64::new(0);
pub static ERRORS: AtomicU64 = AtomicU64::new(0);
pub static PANICS: AtomicU64 = AtomicU64::new(0);
pub static UNNAMED: AtomicU64 = AtomicU64::new(0);
/// Per target (by index, at most 16): executions, and findings (panics + unnamed errors + the
/// hang or huge allocation that ended a session).
static T_EXECS: [AtomicU64; 16] = [const { AtomicU64::new(0) }; 16];
static T_FINDINGS: [AtomicU64; 16] = [const { AtomicU64::new(0) }; 16];
/// Index of the target running now (for the crash line).
static CUR_TARGET: AtomicU64 = AtomicU64::new(u64::MAX);
static TARGET_NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();

fn write_u64(fd: i32, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // SAFETY: writes a valid slice.
    unsafe { libc::write(fd, digits[i..].as_ptr().cast(), digits.len() - i) };
}

/// The machine-readable last line of a session (`benches/fuzz.sh` adds them up), written
/// without allocating: `FUZZ-SUMMARY execs=N ok=N errors=N panics=N unnamed=N hangs=N huge=N`.
pub fn summary_line(hangs: u64, huge: u64) {
    let w = |m: &[u8]| unsafe {
        libc::write(1, m.as_ptr().cast(), m.len());
    };
    w(b"FUZZ-SUMMARY execs=");
    write_u64(1, EXECS.load(Ordering::SeqCst));
    w(b" ok=");
    write_u64(1, OKS.load(Ordering::SeqCst));
    w(b" errors=");
    write_u64(1, ERRORS.load(Ordering::SeqCst));
    w(b" panics=");
    write_u64(1, PANICS.load(Ordering::SeqCst));
    w(b" unnamed=");
    write_u64(1, UNNAMED.load(Ordering::SeqCst));
    w(b" hangs=");
    write_u64(1, hangs);
    w(b" huge=");
    write_u64(1, huge);
    let t = CUR_TARGET.load(Ordering::SeqCst) as usize;
    if let Some(name) = TARGET_NAMES.get().and_then(|n| n.get(t))
        && hangs + huge > 0
    {
        w(b" target=");
        w(name.as_bytes());
        if t < 16 {
            T_FINDINGS[t].fetch_add(1, Ordering::SeqCst);
        }
    }
    // Per target: name:executions:findings.
    if let Some(names) = TARGET_NAMES.get() {
        for (i, name) in names.iter().enumerate().take(16) {
            w(b" t=");
            w(name.as_bytes());
            w(b":");
            write_u64(1, T_EXECS[i].load(Ordering::SeqCst));
            w(b":");
            write_u64(1, T_FINDINGS[i].load(Ordering::SeqCst));
        }
    }
    w(b"\n");
}

/// The input being parsed now (pointer, length) and a NUL-terminated path to save it to, for
/// [`huge_allocation`], which may not allocate.
static CUR_PTR: std::sync::atomic::AtomicPtr<u8> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
static CUR_LEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static SAVE_PATH: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();

/// Called by a guarding global allocator on an enormous request: save the input being parsed
/// (without allocating) and exit with status 4.
pub fn huge_allocation(size: usize) -> ! {
    let say = |m: &[u8]| unsafe {
        libc::write(2, m.as_ptr().cast(), m.len());
    };
    say(b"fuzz: HUGE ALLOCATION requested while parsing an input (");
    write_u64(2, size as u64);
    say(b" bytes); the input is saved as ");
    if let Some(p) = SAVE_PATH.get() {
        say(p.as_bytes());
    }
    say(b"\n");
    if let Some(p) = SAVE_PATH.get() {
        // SAFETY: plain syscalls; the input buffer lives until the parse returns.
        unsafe {
            let fd = libc::open(
                p.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
                0o644,
            );
            if fd >= 0 {
                let ptr = CUR_PTR.load(Ordering::SeqCst);
                let len = CUR_LEN.load(Ordering::SeqCst);
                if !ptr.is_null() {
                    libc::write(fd, ptr.cast(), len);
                }
                libc::close(fd);
            }
        }
    }
    summary_line(0, 1);
    unsafe { libc::_exit(4) }
}

/// Shared with the hang watchdog: what runs now and since when.
struct Current {
    target: Mutex<String>,
    input: Mutex<Vec<u8>>,
    started_ns: AtomicU64,
    busy: AtomicBool,
}

/// How one session runs.
pub struct Session<'a> {
    /// `corpus_root/<target>/` holds each target's starting inputs.
    pub corpus_root: &'a Path,
    /// Findings are saved here.
    pub crash_dir: &'a Path,
    pub budget: Duration,
    pub seed: u64,
    /// The longest one input may run (a hang).
    pub limit: Duration,
    /// The largest input made.
    pub max_len: usize,
}

type Hook = Box<dyn Fn(&std::panic::PanicHookInfo) + Send + Sync>;

/// Fuzz `targets` as `session` says; `progress` is called every 10 s.
pub fn fuzz(targets: &[Target], session: &Session, mut progress: impl FnMut(&Stats)) -> Stats {
    let Session {
        corpus_root,
        crash_dir,
        budget,
        seed,
        limit,
        max_len,
    } = *session;
    let _ = std::fs::create_dir_all(crash_dir);
    if let Ok(p) = std::ffi::CString::new(
        crash_dir
            .join(format!("huge-allocation-{}.bin", std::process::id()))
            .as_os_str()
            .as_encoded_bytes(),
    ) {
        let _ = SAVE_PATH.set(p);
    }
    let scratch = crash_dir.join(format!("scratch-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&scratch);
    let file_path = scratch.join(INPUT_NAME);
    let _ = TARGET_NAMES.set(targets.iter().map(|t| t.name).collect());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut corpora: Vec<Vec<Vec<u8>>> = targets
        .iter()
        .map(|t| {
            let dir = corpus_root.join(t.name);
            let mut v: Vec<Vec<u8>> = std::fs::read_dir(&dir)
                .map(|rd| {
                    rd.filter_map(|e| e.ok())
                        .filter_map(|e| std::fs::read(e.path()).ok())
                        .collect()
                })
                .unwrap_or_default();
            if v.is_empty() {
                v.push(Vec::new());
            }
            v
        })
        .collect();
    let mut seen: HashSet<String> = HashSet::new();
    let mut stats = Stats {
        per_target: targets.iter().map(|t| (t.name.to_string(), 0)).collect(),
        ..Stats::default()
    };
    // Quiet panics; the engine reports them.
    let last_panic: Arc<Mutex<String>> = Arc::new(Mutex::new(String::new()));
    let previous: Arc<Hook> = Arc::new(std::panic::take_hook());
    {
        let lp = last_panic.clone();
        let fuzz_thread = std::thread::current().id();
        let prev = previous.clone();
        std::panic::set_hook(Box::new(move |info| {
            // Panics of other threads (other tests) are reported as usual.
            if std::thread::current().id() != fuzz_thread {
                return prev(info);
            }
            *lp.lock().unwrap_or_else(|e| e.into_inner()) = format!(
                "{} at {}",
                info.payload()
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| info.payload().downcast_ref::<&str>().copied())
                    .unwrap_or("?"),
                info.location().map(|l| l.to_string()).unwrap_or_default()
            );
        }));
    }
    let t0 = Instant::now();
    let current = Arc::new(Current {
        target: Mutex::new(String::new()),
        input: Mutex::new(Vec::new()),
        started_ns: AtomicU64::new(0),
        busy: AtomicBool::new(false),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (cur, stop, crash_dir) = (current.clone(), stop.clone(), crash_dir.to_path_buf());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(100));
                if !cur.busy.load(Ordering::SeqCst) {
                    continue;
                }
                let since = cur.started_ns.load(Ordering::SeqCst);
                let now = t0.elapsed().as_nanos() as u64;
                if now.saturating_sub(since) > limit.as_nanos() as u64 {
                    let target = cur.target.lock().map(|t| t.clone()).unwrap_or_default();
                    let input = cur.input.lock().map(|i| i.clone()).unwrap_or_default();
                    let p = crash_dir.join(format!("hang-{target}-{}.bin", std::process::id()));
                    let _ = std::fs::write(&p, &input);
                    eprintln!(
                        "fuzz: HANG: target {target} ran over {limit:?} on a {}-byte input, saved \
                         as {}",
                        input.len(),
                        p.display()
                    );
                    // A thread cannot be stopped: the session ends here, as a failure.
                    summary_line(1, 0);
                    std::process::exit(3);
                }
            }
        })
    };
    let mut next_report = Duration::from_secs(10);
    let mut round = 0u64;
    while t0.elapsed() < budget {
        round += 1;
        let ti = (round as usize) % targets.len();
        let t = &targets[ti];
        let corpus = &corpora[ti];
        let base = pick(&mut rng, corpus).clone();
        let other = pick(&mut rng, corpus).clone();
        let mut input = base;
        // Mostly one or two edits, so that most inputs stay close to valid and go deep.
        let edits = if rng.random_range(0..3) == 0 {
            rng.random_range(3..8)
        } else {
            rng.random_range(1..3)
        };
        for _ in 0..edits {
            mutate_once(&mut rng, &mut input, &other, max_len);
        }
        if t.needs_file && std::fs::write(&file_path, &input).is_err() {
            continue;
        }
        *current.target.lock().unwrap_or_else(|e| e.into_inner()) = t.name.to_string();
        {
            let mut ci = current.input.lock().unwrap_or_else(|e| e.into_inner());
            ci.clear();
            ci.extend_from_slice(&input);
        }
        current
            .started_ns
            .store(t0.elapsed().as_nanos() as u64, Ordering::SeqCst);
        current.busy.store(true, Ordering::SeqCst);
        CUR_PTR.store(input.as_ptr() as *mut u8, Ordering::SeqCst);
        CUR_TARGET.store(ti as u64, Ordering::SeqCst);
        CUR_LEN.store(input.len(), Ordering::SeqCst);
        let started = Instant::now();
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| (t.run)(&input, &file_path)));
        CUR_PTR.store(std::ptr::null_mut(), Ordering::SeqCst);
        let took = started.elapsed();
        current.busy.store(false, Ordering::SeqCst);
        stats.execs += 1;
        EXECS.fetch_add(1, Ordering::SeqCst);
        if ti < 16 {
            T_EXECS[ti].fetch_add(1, Ordering::SeqCst);
        }
        stats.per_target[ti].1 += 1;
        if took > stats.slowest {
            stats.slowest = took;
            stats.slowest_target = t.name.to_string();
        }
        let save = |kind: &str, n: u64| -> PathBuf {
            let p = crash_dir.join(format!("{kind}-{}-{n}.bin", t.name));
            let _ = std::fs::write(&p, &input);
            p
        };
        match r {
            Err(_) => {
                stats.panics += 1;
                PANICS.fetch_add(1, Ordering::SeqCst);
                if ti < 16 {
                    T_FINDINGS[ti].fetch_add(1, Ordering::SeqCst);
                }
                let p = save("panic", stats.panics);
                let msg = last_panic.lock().map(|m| m.clone()).unwrap_or_default();
                if stats.examples.len() < 40 {
                    stats
                        .examples
                        .push(format!("PANIC {}: {msg} ({})", t.name, p.display()));
                }
            }
            Ok(o) => {
                match &o {
                    Outcome::Ok(_) => {
                        stats.ok += 1;
                        OKS.fetch_add(1, Ordering::SeqCst);
                    }
                    Outcome::Err(msg) => {
                        stats.errors += 1;
                        ERRORS.fetch_add(1, Ordering::SeqCst);
                        if !msg.contains(INPUT_NAME) {
                            stats.unnamed += 1;
                            UNNAMED.fetch_add(1, Ordering::SeqCst);
                            if ti < 16 {
                                T_FINDINGS[ti].fetch_add(1, Ordering::SeqCst);
                            }
                            let p = save("unnamed", stats.unnamed);
                            if stats.examples.len() < 40 {
                                stats.examples.push(format!(
                                    "UNNAMED {}: {} ({})",
                                    t.name,
                                    msg.chars().take(160).collect::<String>(),
                                    p.display()
                                ));
                            }
                        }
                    }
                }
                // Keep inputs that did something new (bounded corpus).
                if seen.insert(signature(t.name, &o)) && corpora[ti].len() < 2000 {
                    corpora[ti].push(input);
                }
            }
        }
        if t0.elapsed() >= next_report {
            progress(&stats);
            next_report += Duration::from_secs(10);
        }
    }
    stop.store(true, Ordering::SeqCst);
    let _ = watchdog.join();
    let _ = std::fs::remove_dir_all(&scratch);
    let _ = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| previous(info)));
    stats
}
