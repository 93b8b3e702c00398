//! What `abperf micro` concludes beside its samples: derived figures (knee, implied ceiling,
//! per-miss cost), skips and environment notes.

use serde::{Deserialize, Serialize};

/// A derived microbenchmark figure, a skip reason or an environment note.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MicroFinding {
    /// Benchmark family (`tlb-flush`, ...), empty for suite-wide notes.
    pub bench: String,
    /// `madvise-knee`, `skipped`, `note`, ...
    pub key: String,
    pub value: Option<f64>,
    pub unit: String,
    pub text: String,
}

/// The core at the start of a round of samples: when the round began and the probe's readings
/// (`abperf micro` probes the core before every round; see `micro::timer::CoreProbe`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RoundProbe {
    /// CLOCK_REALTIME at the probe, ns since the epoch.
    pub started_ns: i64,
    /// Counter ticks per core clock cycle (a dependent add chain).
    #[serde(deserialize_with = "nan::f64")]
    pub ticks_per_core_cycle: f64,
    /// Independent adds retired per core cycle (below the core's best: a busy SMT sibling);
    /// NaN when not measured.
    #[serde(deserialize_with = "nan::f64")]
    pub adds_per_cycle: f64,
}

/// One round of one configuration of a micro experiment: the samples (counter ticks per
/// operation, timer overhead subtracted) taken together after one probe of the core. Rounds are
/// the unit of a micro comparison: samples within a round share the host's phase.
#[derive(Debug, Clone, PartialEq)]
pub struct MicroRound {
    /// Position of the configuration (variant) in the experiment.
    pub variant: usize,
    /// Round number within the configuration, from 0 (numbered on across invocations).
    pub round: u32,
    /// The process (`abperf micro --invocations N`: 0..N) the round was measured in; 0 for a
    /// suite measured in one process.
    pub invocation: u32,
    pub probe: RoundProbe,
    pub cycles: Vec<f64>,
}

/// What one stored sample of a micro configuration becomes: run `seq` of `variant`, block = its
/// round, with metrics `cycles` (counter ticks), `ns` (at `hz` ticks per second),
/// `core_cycles` (ticks over the round's ticks per core cycle) and, when an operation covers
/// several `pages`, `cycles_per_page`. A non-finite sample is a failed run without metrics.
pub fn sample_run(seq: u32, r: &MicroRound, cycles: f64, pages: u64, hz: f64) -> super::run::Run {
    use super::metric::Metric;
    use super::run::{Run, RunStatus};
    let ok = cycles.is_finite();
    let mut metrics = Vec::new();
    if ok {
        metrics.push(Metric::new("cycles", cycles, "cycles"));
        metrics.push(Metric::new("ns", cycles * 1e9 / hz, "ns"));
        metrics.push(Metric::new(
            "core_cycles",
            cycles / r.probe.ticks_per_core_cycle,
            "cycles",
        ));
        if pages > 1 {
            metrics.push(Metric::new(
                "cycles_per_page",
                cycles / pages as f64,
                "cycles",
            ));
        }
    }
    Run {
        status: if ok { RunStatus::Ok } else { RunStatus::Failed },
        block: r.round as i32,
        started_ns: r.probe.started_ns,
        ended_ns: r.probe.started_ns,
        ..Run::ok(seq, r.variant, metrics)
    }
}

/// The runs `rounds` stand for, configuration by configuration in the order given (one per
/// sample, see [`sample_run`]); `pages(variant)` is the pages one operation covers.
pub fn rounds_to_runs(
    rounds: &[MicroRound],
    pages: impl Fn(usize) -> u64,
    hz: f64,
) -> Vec<super::run::Run> {
    let mut out = Vec::with_capacity(rounds.iter().map(|r| r.cycles.len()).sum());
    for r in rounds {
        let p = pages(r.variant);
        for &c in &r.cycles {
            out.push(sample_run(out.len() as u32, r, c, p, hz));
        }
    }
    out
}

/// JSON has no NaN: serde_json writes a non-finite f64 as `null`, and these read `null` back as
/// NaN (for the suite report a child process of `abperf micro --invocations` hands its parent).
pub mod nan {
    use serde::{Deserialize, Deserializer};

    /// An f64 that may have been written as `null`.
    pub fn f64<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }

    /// A list of f64 any of which may have been written as `null`.
    pub fn vec_f64<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Ok(Vec::<Option<f64>>::deserialize(d)?
            .into_iter()
            .map(|x| x.unwrap_or(f64::NAN))
            .collect())
    }

    #[cfg(test)]
    mod tests {
        use super::super::RoundProbe;

        #[test]
        fn nan_survives_json_as_null() {
            let p = RoundProbe {
                started_ns: 5,
                ticks_per_core_cycle: 0.7,
                adds_per_cycle: f64::NAN,
            };
            let text = serde_json::to_string(&p).unwrap();
            assert!(text.contains("null"), "{text}");
            let back: RoundProbe = serde_json::from_str(&text).unwrap();
            assert!(back.adds_per_cycle.is_nan());
            assert_eq!(back.ticks_per_core_cycle, 0.7);
            #[derive(serde::Deserialize)]
            struct V(#[serde(deserialize_with = "super::vec_f64")] Vec<f64>);
            let v: V = serde_json::from_str("[1.5, null]").unwrap();
            assert_eq!(v.0[0], 1.5);
            assert!(v.0[1].is_nan());
        }
    }
}
