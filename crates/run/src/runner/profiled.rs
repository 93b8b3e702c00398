//! `run --profile`: untimed profiled runs beside the timed ones (docs/profile.md). A timed run
//! picked by [`ProfilePlan::picks`] is followed, after its --post, by a profiled run of the same
//! variant (its --pre, the workload's prepare step, the noise controls and --rewarm again, the
//! knobs still in place) under `perf record`; the profile is stored with the timed run's
//! sequence number, so each profiled run belongs to the timed run it follows and the profiled
//! runs keep the schedule's seeded, interleaved order. Profiled runs are never timed: sampling
//! with call graphs perturbs what is timed.

use abperf_import::perf_script;
use abperf_measure::affinity::Mask;
use abperf_measure::command::Prepared;
use abperf_measure::perf_record::Sampler;
use abperf_model::Slot;
use abperf_model::profile::{ProfiledRun, TOP_STACKS, TOP_SYMBOLS};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

/// Samples per second of a profiled run (perf's default is 4000 too).
pub const FREQUENCY: u32 = 4000;

/// Profiled runs per variant when `--profile-runs` is not given (at most one per timed run).
pub const DEFAULT_RUNS: u32 = 5;

/// The stored `--profile` settings of an experiment (part of its design).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfilePlan {
    /// The event sampled (`cycles` where a PMU exists, else `cpu-clock`; or as asked).
    pub event: String,
    /// Samples per second.
    pub frequency: u32,
    /// Profiled runs per variant (spread evenly over its timed runs).
    pub runs: u32,
    /// In a guest's share only (never stored): the schedule's sequence numbers whose timed runs
    /// a profiled run follows, picked by the host over the whole schedule
    /// ([`ProfilePlan::picked_seqs`]), since a boot runs only part of it. `None`: picked where
    /// the runs happen, by [`ProfilePlan::picks`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<BTreeSet<u32>>,
}

impl ProfilePlan {
    /// Whether the timed run number `k` (0-based, counted per variant) of `timed` is followed by
    /// a profiled run: `runs` of the `timed` runs, spread evenly (the first always).
    pub fn picks(&self, k: u32, timed: u32) -> bool {
        let (n, t) = (u64::from(self.runs.min(timed)), u64::from(timed.max(1)));
        let k = u64::from(k);
        k < t && (k * n).div_ceil(t) < ((k + 1) * n).div_ceil(t)
    }

    /// The sequence numbers of the timed runs of `schedule` that a profiled run follows: per
    /// variant, [`ProfilePlan::picks`] over that variant's timed slots in schedule order.
    pub fn picked_seqs(&self, schedule: &[Slot]) -> BTreeSet<u32> {
        let mut timed: BTreeMap<usize, u32> = BTreeMap::new();
        for s in schedule.iter().filter(|s| !s.warmup) {
            *timed.entry(s.variant).or_default() += 1;
        }
        let mut k: BTreeMap<usize, u32> = BTreeMap::new();
        let mut out = BTreeSet::new();
        for s in schedule.iter().filter(|s| !s.warmup) {
            let i = k.entry(s.variant).or_default();
            if self.picks(*i, timed[&s.variant]) {
                out.insert(s.seq);
            }
            *i += 1;
        }
        out
    }

    /// Whether the timed run of `slot`, the `k`-th (1-based) of its variant done here, is
    /// followed by a profiled run of `timed` per variant.
    pub fn follows(&self, slot: &Slot, k: u32, timed: u32) -> bool {
        match &self.after {
            _ if slot.warmup => false,
            Some(after) => after.contains(&slot.seq),
            None => k > 0 && self.picks(k - 1, timed),
        }
    }

    /// Whether a profiled run a guest reported (untrusted) is one it was asked for: after a
    /// timed run of `schedule` this plan picked, which the guest `reported` before it, not one
    /// already `stored`, of the share's one variant (0) and the planned event, and a profile
    /// [`Counts::profile`](abperf_model::profile::Counts::profile) could have made
    /// ([`ProfiledRun::check`]).
    pub fn check_reported(
        &self,
        schedule: &[Slot],
        run: &ProfiledRun,
        reported: &BTreeSet<u32>,
        stored: &BTreeSet<u32>,
    ) -> anyhow::Result<()> {
        let seq = run.seq;
        if !self.picked_seqs(schedule).contains(&seq) {
            anyhow::bail!("the guest sent a profiled run after run {seq}, which has none");
        }
        if !reported.contains(&seq) || stored.contains(&seq) {
            anyhow::bail!(
                "the guest sent a profiled run after run {seq} before that run, or twice"
            );
        }
        if run.variant != 0 {
            anyhow::bail!(
                "the guest sent a profiled run of variant {} (a boot runs one)",
                run.variant
            );
        }
        run.check()
            .map_err(|e| anyhow::anyhow!("the guest's profiled run after run {seq}: {e}"))?;
        if run.profile.event != self.event {
            anyhow::bail!(
                "the guest's profiled run after run {seq} sampled {:?}, not {}",
                run.profile.event,
                self.event
            );
        }
        Ok(())
    }
}

/// Whether this machine's kernel has perf events (CONFIG_PERF_EVENTS): `proc` is its /proc,
/// where such a kernel has sys/kernel/perf_event_paranoid. In a guest, the refusal names the
/// option, since abperf's minimal kernel configuration leaves it out (docs/profile.md).
pub fn perf_events_in(proc: &Path, release: &str) -> anyhow::Result<()> {
    if proc.join("sys/kernel/perf_event_paranoid").exists() {
        return Ok(());
    }
    anyhow::bail!(
        "--profile: kernel {release} has no perf events ({}/sys/kernel/perf_event_paranoid is \
         missing: built without CONFIG_PERF_EVENTS); profile with a kernel that has it (e.g. a \
         distribution's), or leave out --profile",
        proc.display()
    )
}

/// One profiled run of `cmd` (variant `variant`, after timed run `seq`): recorded under perf
/// in a private temporary directory, read back and reduced to its top symbols. `wall_ns` is the
/// time it took with perf and the read-back (its cost).
pub fn record(
    plan: &ProfilePlan,
    cmd: &Prepared,
    pin: Option<Mask>,
    variant: usize,
    seq: u32,
) -> anyhow::Result<ProfiledRun> {
    let sampler = Sampler::new(Some(&plan.event), plan.frequency)?;
    let mut argv = vec![cmd.program.to_string_lossy().into_owned()];
    argv.extend(
        cmd.argv
            .iter()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned()),
    );
    let dir = tempfile::Builder::new()
        .prefix("abperf-profile")
        .tempdir()?;
    let started = Instant::now();
    let text = sampler.record_pinned(&argv, dir.path(), pin)?;
    let rec = perf_script::parse(&text, "perf script").map_err(|e| anyhow::anyhow!("{e}"))?;
    let wall_ns = i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX);
    Ok(ProfiledRun {
        variant,
        seq,
        wall_ns,
        profile: rec.counts.profile(&rec.event, TOP_SYMBOLS),
        stacks: Some(rec.counts.stacks(TOP_STACKS)),
    })
}

/// Whether `perf` is here and records `plan`'s event (a recording of `true`), so that a bad
/// event or a missing perf stops `run --profile` before anything is stored.
pub fn probe(plan: &ProfilePlan) -> anyhow::Result<()> {
    let sampler = Sampler::new(Some(&plan.event), plan.frequency)?;
    let dir = tempfile::Builder::new()
        .prefix("abperf-profile")
        .tempdir()?;
    sampler
        .record(&["true".to_string()], dir.path())
        .with_context(|| format!("--profile: perf cannot sample {} here", plan.event))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(runs: u32) -> ProfilePlan {
        ProfilePlan {
            event: "cpu-clock".into(),
            frequency: FREQUENCY,
            runs,
            after: None,
        }
    }

    fn slot(seq: u32, variant: usize, warmup: bool) -> Slot {
        Slot {
            seq,
            variant,
            block: 0,
            warmup,
        }
    }

    #[test]
    fn a_guest_is_told_which_of_its_runs_a_profiled_run_follows() {
        // Two variants, one warm-up each, then ABBA ABBA: 4 timed runs per variant.
        let order = [0, 1, 1, 0, 0, 1, 1, 0];
        let mut schedule = vec![slot(0, 0, true), slot(1, 1, true)];
        schedule.extend(
            order
                .iter()
                .enumerate()
                .map(|(i, &v)| slot(i as u32 + 2, v, false)),
        );
        let p = plan(2);
        // picks(k, 4) for 2 runs: k = 0 and 2, the first and third timed run of each variant.
        let seqs = p.picked_seqs(&schedule);
        assert_eq!(seqs.into_iter().collect::<Vec<_>>(), [2, 3, 6, 7]);
        // A boot that runs B's last two slots (seqs 7 and 8) alone: it counts from 1 there,
        // so only the host's set tells it that seq 7 is followed and seq 8 is not.
        let guest = ProfilePlan {
            after: Some(p.picked_seqs(&schedule)),
            ..plan(2)
        };
        assert!(guest.follows(&slot(7, 0, false), 1, 4));
        assert!(!guest.follows(&slot(8, 0, false), 2, 4));
        assert!(!guest.follows(&slot(1, 0, true), 0, 4));
        // On the host, the count decides (as before).
        assert!(p.follows(&slot(2, 0, false), 1, 4));
        assert!(!p.follows(&slot(5, 0, false), 2, 4));
        // Never stored: a design without a guest's set serialises as before.
        assert!(!serde_json::to_string(&p).unwrap().contains("after"));
    }

    #[test]
    fn a_guests_profiled_run_is_checked_before_it_is_stored() {
        let schedule: Vec<Slot> = (0..4).map(|i| slot(i, (i % 2) as usize, false)).collect();
        // One profiled run per variant: after seq 0 (variant 0) and seq 1 (variant 1).
        let p = plan(1);
        let run = |seq: u32| ProfiledRun {
            variant: 0,
            seq,
            wall_ns: 1,
            profile: {
                let mut c = abperf_model::profile::Counts::default();
                c.add_stack(["read_zero", "do_syscall_64"]);
                c.profile("cpu-clock", 10)
            },
            stacks: None,
        };
        let reported: BTreeSet<u32> = [0, 1].into();
        let none = BTreeSet::new();
        p.check_reported(&schedule, &run(1), &reported, &none)
            .unwrap();
        let refused = |r: &ProfiledRun, reported: &BTreeSet<u32>, stored: &BTreeSet<u32>| {
            format!(
                "{:#}",
                p.check_reported(&schedule, r, reported, stored)
                    .unwrap_err()
            )
        };
        assert!(refused(&run(2), &reported, &none).contains("which has none"));
        assert!(refused(&run(1), &[0].into(), &none).contains("before that run, or twice"));
        assert!(refused(&run(1), &reported, &[1].into()).contains("twice"));
        let mut other = run(1);
        other.variant = 1;
        assert!(refused(&other, &reported, &none).contains("variant 1"));
        let mut bad = run(1);
        bad.profile.symbols[0].self_share = 2.0;
        assert!(refused(&bad, &reported, &none).contains("not a share of samples"));
        let mut cycles = run(1);
        cycles.profile.event = "cycles".into();
        assert!(refused(&cycles, &reported, &none).contains("not cpu-clock"));
        let mut stacks = run(1);
        stacks.stacks = Some(abperf_model::profile::Stacks {
            stacks: vec![("main;;read_zero".into(), 1)],
            other: 0,
        });
        assert!(refused(&stacks, &reported, &none).contains("stacks: stack 0 has a frame of 0"));
    }

    #[test]
    fn a_kernel_without_perf_events_is_named() {
        let d = tempfile::tempdir().unwrap();
        let e = perf_events_in(d.path(), "6.1.0-tiny").unwrap_err();
        let e = format!("{e:#}");
        assert!(
            e.contains("CONFIG_PERF_EVENTS") && e.contains("6.1.0-tiny"),
            "{e}"
        );
        std::fs::create_dir_all(d.path().join("sys/kernel")).unwrap();
        std::fs::write(d.path().join("sys/kernel/perf_event_paranoid"), "2\n").unwrap();
        perf_events_in(d.path(), "6.1.0-tiny").unwrap();
    }

    fn picked(runs: u32, timed: u32) -> Vec<u32> {
        (0..timed + 2)
            .filter(|&k| plan(runs).picks(k, timed))
            .collect()
    }

    #[test]
    fn profiled_runs_are_spread_over_the_timed_ones() {
        assert_eq!(picked(5, 10), [0, 2, 4, 6, 8]);
        assert_eq!(picked(3, 10), [0, 3, 6]);
        assert_eq!(picked(10, 10), (0..10).collect::<Vec<_>>());
        // More asked than timed: one per timed run.
        assert_eq!(picked(20, 4), [0, 1, 2, 3]);
        assert_eq!(picked(1, 7), [0]);
        assert!(picked(0, 7).is_empty());
        for (n, t) in [(5, 10), (3, 10), (7, 30), (30, 30), (2, 3)] {
            assert_eq!(picked(n, t).len() as u32, n.min(t), "{n} of {t}");
        }
    }
}
