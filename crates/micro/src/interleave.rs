//! Variants of one suite measured interleaved at round level (`abperf micro -k PATH=V1,V2`).
//!
//! Each benchmark runs once per variant, each in a thread of its own pinned to the measuring
//! CPU, and the threads take turns: the setup of every variant, then round 0 of each variant,
//! round 1 of each, ..., in an order alternated ABBA-style by a seeded schedule. Only the thread
//! whose turn it is runs (the others wait on a condition variable), and a turn begins by putting
//! the variant's settings in place (the `switch` callback: knob writes, read back and
//! verified). A host phase of minutes then covers round r of every variant alike instead of
//! the whole of one variant's run, and the benchmark code stays the one-variant code: a turn
//! ends where the benchmark calls [`super::Sink::round`] for its next round, or ends.
//!
//! The rounds of every variant keep their own indices, so round r of A and round r of B were
//! measured next to each other.

use super::{Options, Parts, Setup, Sink, SuiteReport};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use std::sync::{Condvar, Mutex};

/// Puts variant `v`'s settings in place; called at the start of every turn (a no-op when they
/// already are). An error ends the suite (a knob refused, a signal received).
pub type Switch<'s> = dyn Fn(usize) -> anyhow::Result<()> + Sync + 's;

/// The order of the `n` variants in step `step` of the schedule: steps come in pairs, the
/// first a seeded shuffle and the second its reverse (ABBA or BAAB for two variants), so that
/// every variant is as often first as last.
pub fn order(n: usize, seed: u64, step: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    let pair = (step / 2) as u64;
    let mut rng =
        rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ pair.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    v.shuffle(&mut rng);
    if step % 2 == 1 {
        v.reverse();
    }
    v
}

#[derive(Debug)]
struct State {
    /// Index of the current turn in the schedule (step-major: `pos / n` is the step).
    pos: usize,
    /// Turns each variant has finished.
    calls: Vec<usize>,
    /// Whether each variant holds the current turn.
    holding: Vec<bool>,
    /// Variants whose benchmark has ended (their turns are skipped).
    done: Vec<bool>,
    /// Why the suite stops, once something failed a switch.
    abort: Option<String>,
}

/// The turns of one benchmark's variants.
pub struct Baton<'s> {
    n: usize,
    seed: u64,
    state: Mutex<State>,
    cv: Condvar,
    switch: &'s Switch<'s>,
}

impl<'s> Baton<'s> {
    pub fn new(n: usize, seed: u64, switch: &'s Switch<'s>) -> Baton<'s> {
        Baton {
            n,
            seed,
            state: Mutex::new(State {
                pos: 0,
                calls: vec![0; n],
                holding: vec![false; n],
                done: vec![false; n],
                abort: None,
            }),
            cv: Condvar::new(),
            switch,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The variant whose turn `pos` is, and which of its turns.
    fn turn(&self, pos: usize) -> (usize, usize) {
        (
            order(self.n, self.seed, pos / self.n)[pos % self.n],
            pos / self.n,
        )
    }

    /// Wait for variant `v`'s next turn and put its settings in place.
    fn acquire(&self, v: usize) -> anyhow::Result<()> {
        let mut st = self.lock();
        loop {
            if let Some(a) = &st.abort {
                anyhow::bail!("{a}");
            }
            while st.done[self.turn(st.pos).0] {
                st.pos += 1;
            }
            if self.turn(st.pos) == (v, st.calls[v]) {
                break;
            }
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.holding[v] = true;
        if let Err(e) = (self.switch)(v) {
            let msg = format!("{e:#}");
            st.abort = Some(msg.clone());
            self.cv.notify_all();
            anyhow::bail!("{msg}");
        }
        Ok(())
    }

    fn release(&self, st: &mut State, v: usize) {
        if st.holding[v] {
            st.holding[v] = false;
            st.calls[v] += 1;
            st.pos += 1;
        }
    }

    /// Variant `v` starts its benchmark (its first turn: the setup and round 0's wait).
    pub fn begin(&self, v: usize) -> anyhow::Result<()> {
        self.acquire(v)
    }

    /// Variant `v` is about to begin its next round: end its turn, wait for the next one.
    pub fn next(&self, v: usize) -> anyhow::Result<()> {
        {
            let mut st = self.lock();
            self.release(&mut st, v);
            self.cv.notify_all();
        }
        self.acquire(v)
    }

    /// Variant `v`'s benchmark ended (also on error or panic): its turns are skipped from now on.
    pub fn finish(&self, v: usize) {
        let mut st = self.lock();
        self.release(&mut st, v);
        st.done[v] = true;
        self.cv.notify_all();
    }

    /// Why the suite stopped, if a switch failed.
    pub fn aborted(&self) -> Option<String> {
        self.lock().abort.clone()
    }
}

/// Marks a variant finished when its thread ends, however it ends.
struct Finish<'b, 's>(&'b Baton<'s>, usize);

impl Drop for Finish<'_, '_> {
    fn drop(&mut self) {
        self.0.finish(self.1);
    }
}

/// Run the selected benchmarks for `n` variants interleaved at round level; `switch(v)` puts
/// variant v's settings in place. One suite report per variant. An error of `switch` stops the
/// suite with that error (the caller restores the settings).
pub fn run_interleaved(
    benches: &[&str],
    opts: &Options,
    n: usize,
    seed: u64,
    switch: &Switch<'_>,
    mut progress: impl FnMut(&str),
) -> anyhow::Result<Vec<SuiteReport>> {
    anyhow::ensure!(n >= 1, "internal: no variant to run");
    let started = std::time::Instant::now();
    let setup = Setup::enter(opts)?;
    switch(0)?;
    let timer = super::timer::TimerInfo::measure(opts.quick);
    let mut parts: Vec<Parts> = (0..n)
        .map(|_| Parts {
            notes: setup.notes(),
            ..Parts::default()
        })
        .collect();
    let realtime = setup.realtime();
    for (bi, b) in benches.iter().enumerate() {
        progress(b);
        let baton = Baton::new(n, seed.wrapping_add(bi as u64), switch);
        let got: Vec<Parts> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|v| {
                    let (baton, timer, cpu_info) = (&baton, &timer, &setup.cpu_info);
                    s.spawn(move || {
                        let _finish = Finish(baton, v);
                        let mut sink = Sink::new(timer);
                        sink.baton = Some((baton, v));
                        let r = (|| {
                            super::harness::pin_current(opts.cpu).map_err(|e| {
                                anyhow::anyhow!("cannot pin to CPU {} (--cpu): {e}", opts.cpu)
                            })?;
                            if realtime {
                                super::harness::make_realtime()?;
                            }
                            baton.begin(v)?;
                            super::dispatch(&mut sink, b, opts, cpu_info)
                        })();
                        if let Err(e) = r {
                            sink.fail(b, None, format!("{e:#}"));
                        }
                        Parts::from(sink)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        let mut p = Parts::default();
                        p.failures.push(super::Skip {
                            bench: b.to_string(),
                            config: None,
                            reason: "the benchmark's thread panicked".into(),
                        });
                        p
                    })
                })
                .collect()
        });
        if let Some(why) = baton.aborted() {
            anyhow::bail!("{why}");
        }
        for (p, g) in parts.iter_mut().zip(got) {
            p.extend(g);
        }
    }
    Ok(parts
        .into_iter()
        .map(|p| p.finish(benches, opts, &timer, setup.cpu_info.clone(), started))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn order_is_abba_for_two_and_balanced() {
        for seed in 0..20 {
            let a = order(2, seed, 0);
            let b = order(2, seed, 1);
            assert_eq!(a, [b[1], b[0]]);
        }
        // Over many pairs both orders occur.
        let firsts: Vec<usize> = (0..40).map(|p| order(2, 7, 2 * p)[0]).collect();
        assert!(firsts.contains(&0) && firsts.contains(&1), "{firsts:?}");
        assert_eq!(order(3, 1, 4).len(), 3);
        assert_eq!(order(3, 1, 4), order(3, 1, 4));
    }

    /// Threads taking turns run strictly one at a time, round r of every variant before round
    /// r+1 of any, with the switch called for the variant whose turn it is.
    #[test]
    fn turns_interleave_rounds_and_skip_finished_variants() {
        let log = Mutex::new(Vec::new());
        let current = AtomicUsize::new(usize::MAX);
        let switch = |v: usize| {
            current.store(v, Ordering::SeqCst);
            Ok(())
        };
        let baton = Baton::new(3, 42, &switch);
        let running = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for v in 0..3 {
                let (baton, log, running, current) = (&baton, &log, &running, &current);
                s.spawn(move || {
                    let _f = Finish(baton, v);
                    baton.begin(v).unwrap();
                    // Variant 2 does only two rounds: its later turns are skipped.
                    let rounds = if v == 2 { 2 } else { 5 };
                    for r in 0..rounds {
                        baton.next(v).unwrap();
                        assert_eq!(running.fetch_add(1, Ordering::SeqCst), 0);
                        assert_eq!(current.load(Ordering::SeqCst), v);
                        log.lock().unwrap().push((r, v));
                        std::thread::sleep(std::time::Duration::from_micros(200));
                        running.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            }
        });
        let log = log.into_inner().unwrap();
        assert_eq!(log.len(), 12);
        let rounds: Vec<usize> = log.iter().map(|x| x.0).collect();
        let mut sorted = rounds.clone();
        sorted.sort();
        assert_eq!(rounds, sorted, "{log:?}");
        for r in 0..2 {
            let mut vs: Vec<usize> = log.iter().filter(|x| x.0 == r).map(|x| x.1).collect();
            let want = order(3, 42, r + 1);
            assert_eq!(vs, want);
            vs.sort();
            assert_eq!(vs, [0, 1, 2]);
        }
    }

    #[test]
    fn a_failed_switch_stops_every_variant() {
        let calls = AtomicUsize::new(0);
        let switch = |_v: usize| {
            if calls.fetch_add(1, Ordering::SeqCst) >= 3 {
                anyhow::bail!("interrupted by SIGTERM");
            }
            Ok(())
        };
        let baton = Baton::new(2, 1, &switch);
        let errors = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for v in 0..2 {
                let (baton, errors) = (&baton, &errors);
                s.spawn(move || {
                    let _f = Finish(baton, v);
                    let r = (|| {
                        baton.begin(v)?;
                        for _ in 0..10 {
                            baton.next(v)?;
                        }
                        anyhow::Ok(())
                    })();
                    if r.is_err() {
                        errors.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert_eq!(errors.load(Ordering::SeqCst), 2);
        assert!(baton.aborted().unwrap().contains("SIGTERM"));
    }
}
