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
use abperf_model::profile::{ProfiledRun, TOP_SYMBOLS};
use anyhow::Context;
use serde::{Deserialize, Serialize};
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
}

impl ProfilePlan {
    /// Whether the timed run number `k` (0-based, counted per variant) of `timed` is followed by
    /// a profiled run: `runs` of the `timed` runs, spread evenly (the first always).
    pub fn picks(&self, k: u32, timed: u32) -> bool {
        let (n, t) = (u64::from(self.runs.min(timed)), u64::from(timed.max(1)));
        let k = u64::from(k);
        k < t && (k * n).div_ceil(t) < ((k + 1) * n).div_ceil(t)
    }
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
        }
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
