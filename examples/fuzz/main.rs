//! `cargo run --release --example fuzz -- SECONDS [SEED] [TARGET...]`: mutate the committed
//! corpus (tests/data/fuzz/TARGET/) through every parser for SECONDS; findings are saved under
//! target/fuzz/. Exit 0 only with no panic, no hang (> 5 s on one input) and no error message
//! that fails to name the input file. `benches/fuzz.sh SECONDS` builds and runs it.

#![allow(clippy::disallowed_macros)] // test and fuzz harnesses print what they saw to stderr
mod engine;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::time::Duration;

/// An allocation this large is a finding (the process would abort on it, or swap the machine to
/// a halt): the allocator saves the input being parsed and ends the session.
const HUGE_ALLOCATION: usize = 4 << 30;

struct Guard;

// SAFETY: forwards to the system allocator; the guard path only makes plain syscalls on memory
// allocated before (no allocation, no unwinding) and exits.
unsafe impl GlobalAlloc for Guard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > HUGE_ALLOCATION {
            engine::huge_allocation(layout.size());
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > HUGE_ALLOCATION {
            engine::huge_allocation(layout.size());
        }
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > HUGE_ALLOCATION {
            engine::huge_allocation(new_size);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Guard = Guard;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: fuzz SECONDS [SEED] [TARGET...]";
    let Some(secs) = args.first().and_then(|s| s.parse::<f64>().ok()) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let seed = args
        .get(1)
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    let wanted: Vec<&String> = args
        .iter()
        .skip(2)
        .filter(|a| a.parse::<u64>().is_err())
        .collect();
    let mut targets = engine::targets();
    if !wanted.is_empty() {
        for w in &wanted {
            if !targets.iter().any(|t| t.name == w.as_str()) {
                let names: Vec<&str> = targets.iter().map(|t| t.name).collect();
                eprintln!("unknown target {w}: one of {}", names.join(", "));
                std::process::exit(2);
            }
        }
        targets.retain(|t| wanted.iter().any(|w| w.as_str() == t.name));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let crash = root.join("target/fuzz");
    let names: Vec<&str> = targets.iter().map(|t| t.name).collect();
    eprintln!(
        "fuzz: {secs} s, seed {seed}, targets {}, findings in {}",
        names.join(" "),
        crash.display()
    );
    let corpus = root.join("tests/data/fuzz");
    let session = engine::Session {
        corpus_root: &corpus,
        crash_dir: &crash,
        budget: Duration::from_secs_f64(secs),
        seed,
        limit: Duration::from_secs(5),
        max_len: 1 << 20,
    };
    let stats = engine::fuzz(&targets, &session, |s| {
        eprintln!(
            "fuzz: {} execs, {} ok, {} errors, {} panics, {} unnamed errors, slowest {:?} ({})",
            s.execs, s.ok, s.errors, s.panics, s.unnamed, s.slowest, s.slowest_target
        )
    });
    for e in &stats.examples {
        eprintln!("fuzz: {e}");
    }
    let per: Vec<String> = stats
        .per_target
        .iter()
        .map(|(t, n)| format!("{t} {n}"))
        .collect();
    println!(
        "executions {} (ok {}, errors {}), panics {}, hangs {}, errors without the file name {}, \
         slowest input {:?} ({}); per target: {}",
        stats.execs,
        stats.ok,
        stats.errors,
        stats.panics,
        stats.hangs,
        stats.unnamed,
        stats.slowest,
        stats.slowest_target,
        per.join(", ")
    );
    engine::summary_line(0, 0);
    if stats.panics + stats.hangs + stats.unnamed > 0 {
        std::process::exit(1);
    }
}
