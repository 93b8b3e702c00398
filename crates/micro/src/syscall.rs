//! `syscall`: getppid round trip (a loop of raw getppid syscalls minus the same empty loop).

use super::harness::{collect, median};
use super::timer::{start, stop};
use super::{Options, Sink};

const ITERS: usize = 256;

#[inline(never)]
fn getppid_loop(n: usize) -> u64 {
    let t0 = start();
    for _ in 0..n {
        // SAFETY: getppid has no arguments and cannot fail.
        std::hint::black_box(unsafe { libc::syscall(libc::SYS_getppid) });
    }
    let t1 = stop();
    t1.wrapping_sub(t0)
}

#[inline(never)]
fn empty_loop(n: usize) -> u64 {
    let t0 = start();
    for i in 0..n {
        std::hint::black_box(i);
    }
    let t1 = stop();
    t1.wrapping_sub(t0)
}

pub fn bench(sink: &mut Sink, opts: &Options) -> anyhow::Result<()> {
    let samples = opts.samples(1001, 2001);
    let oh = sink.timer.overhead;
    // Rounds alternating the two loops, spread over the span (see harness::Rounds), so that
    // both medians see the same mixture of the host's phases.
    let mut rounds = opts.rounds(samples);
    let (mut empty, mut raw) = (Vec::new(), Vec::new());
    for r in 0..rounds.count() {
        sink.round(&mut rounds, r)?;
        let per = rounds.per(r);
        let w = if r == 0 { 20 } else { 5 };
        empty.extend(collect(w, per, || {
            (empty_loop(ITERS) as f64 - oh) / ITERS as f64
        }));
        raw.extend(collect(w, per, || {
            (getppid_loop(ITERS) as f64 - oh) / ITERS as f64
        }));
    }
    let base = median(&empty);
    let calls: Vec<f64> = raw.iter().map(|c| c - base).collect();
    let n = ITERS.to_string();
    sink.add(
        "syscall",
        "syscall/empty-loop".into(),
        &[("iters", n.clone())],
        "iteration",
        1,
        empty,
        &rounds,
    );
    sink.add(
        "syscall",
        "syscall/getppid".into(),
        &[("iters", n)],
        "call",
        1,
        calls,
        &rounds,
    );
    Ok(())
}
