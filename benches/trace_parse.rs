//! Parser throughput of `abperf trace` (run by benches/trace_bench.sh, or directly):
//!
//!   cargo bench --bench trace_parse -- RAW_FILE TEXT_FILE [MIN_EVENTS] [MIN_LINES]
//!
//! RAW_FILE is a capture from `abperf trace record --keep-raw`, TEXT_FILE the ftrace text of a
//! capture (`--save-text`). Both are replicated in memory until they hold at least MIN_EVENTS
//! events (default 10 million) and MIN_LINES lines (default 5 million), then decoded on one
//! thread: the raw pages by the ring-buffer reader alone and with the standard tables, the text
//! by the text parser with the standard tables. Prints events (lines) per second.
//!
//! Without arguments (as `cargo test --all-targets` runs it) it does a quick pass over the small
//! capture in tests/data (100 000 events, 50 000 lines), so the bench cannot rot unnoticed.

#![allow(clippy::disallowed_macros)] // test and fuzz harnesses print what they saw to stderr
use abperf::trace::record::RawCapture;
use abperf::trace::tables::{Analyzer, Spec};
use abperf::trace::text::{self, TextOptions};
use std::path::Path;
use std::time::Instant;

fn main() {
    let mut args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if args.is_empty() {
        let d = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/");
        args = vec![
            format!("{d}small-capture.raw"),
            format!("{d}small-capture.txt"),
            "100000".into(),
            "50000".into(),
        ];
    }
    if args.len() < 2 {
        eprintln!("usage: trace_parse RAW_FILE TEXT_FILE [MIN_EVENTS] [MIN_LINES]");
        std::process::exit(2);
    }
    let min_events: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let min_lines: usize = args
        .get(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5_000_000);

    // ---- binary ----
    let mut raw = RawCapture::read(Path::new(&args[0])).expect("raw capture");
    let ring = raw.ring().unwrap();
    let base_events = raw.analyze(&[]).unwrap().events;
    assert!(base_events > 0, "no events in {}", args[0]);
    let copies = min_events.div_ceil(base_events);
    for (_, pages) in raw.cpus.iter_mut() {
        let one = pages.clone();
        pages.reserve(one.len() * (copies as usize - 1));
        for _ in 1..copies {
            pages.extend_from_slice(&one);
        }
    }
    let bytes = raw.bytes();
    println!(
        "binary: {} events in {:.1} MiB of pages ({} copies of a {}-event capture)",
        base_events * copies,
        bytes as f64 / 1048576.0,
        copies,
        base_events
    );
    // decode only
    let mut best = f64::MAX;
    let mut best_cpu = f64::MAX;
    let mut n = 0u64;
    let mut sink = 0u64;
    for _ in 0..3 {
        let t = Instant::now();
        let c = cpu_now();
        n = 0;
        for (_, pages) in &raw.cpus {
            for (i, p) in pages.chunks(ring.page_size).enumerate() {
                let st = ring
                    .parse_page(p, i as u64, |ts, d| {
                        sink = sink.wrapping_add(ts ^ d[0] as u64)
                    })
                    .unwrap();
                n += st.events;
            }
        }
        best = best.min(t.elapsed().as_secs_f64());
        best_cpu = best_cpu.min(cpu_now() - c);
    }
    println!(
        "binary decode only:        {:>8.1} M events/s wall, {:>8.1} per CPU-second ({:.3} s for {n} events; checksum {sink:x})",
        n as f64 / best / 1e6,
        n as f64 / best_cpu / 1e6,
        best
    );
    // decode + tables: the library's own path (RawCapture::analyze), as `trace report` runs it
    let mut best = f64::MAX;
    let mut best_cpu = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let c = cpu_now();
        let decoded = raw.analyze(&[Spec::Standard]).unwrap();
        assert_eq!(decoded.events, n);
        let tables = decoded.tables;
        assert!(tables.tlb.is_some());
        best = best.min(t.elapsed().as_secs_f64());
        best_cpu = best_cpu.min(cpu_now() - c);
    }
    println!(
        "binary decode + tables:    {:>8.1} M events/s wall, {:>8.1} per CPU-second ({:.3} s)",
        n as f64 / best / 1e6,
        n as f64 / best_cpu / 1e6,
        best
    );
    drop(raw);

    // ---- text ----
    let data = std::fs::read(&args[1]).expect("text file");
    let lines: Vec<&[u8]> = data
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty() && !l.starts_with(b"#"))
        .collect();
    assert!(!lines.is_empty());
    let mut big = Vec::new();
    let mut count = 0usize;
    while count < min_lines {
        for l in &lines {
            big.extend_from_slice(l);
            big.push(b'\n');
        }
        count += lines.len();
    }
    println!(
        "text: {count} lines, {:.1} MiB",
        big.len() as f64 / 1048576.0
    );
    let out = std::env::var("ABPERF_BENCH_TEXT_OUT").ok();
    if let Some(p) = &out {
        std::fs::write(p, &big).unwrap();
    }
    let opts = TextOptions::default();
    let mut best = f64::MAX;
    let mut best_cpu = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let c = cpu_now();
        let cap = text::parse("bench", &big, &opts).unwrap();
        let mut an = Analyzer::new(&cap.schema, &[Spec::Standard]).unwrap();
        cap.for_each(|e| an.event(e));
        let _ = an.finish(&cap.schema);
        assert_eq!(cap.len(), count);
        best = best.min(t.elapsed().as_secs_f64());
        best_cpu = best_cpu.min(cpu_now() - c);
    }
    println!(
        "text parse + tables:       {:>8.2} M lines/s wall, {:>8.2} per CPU-second ({:.3} s)",
        count as f64 / best / 1e6,
        count as f64 / best_cpu / 1e6,
        best
    );
}

/// CPU time of this thread, s: the rate per CPU-second does not depend on other load.
fn cpu_now() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
