//! A run: one timed execution of a variant (or, for micro experiments, one sample), with the
//! metrics measured in it.

use super::metric::Metric;
use serde::{Deserialize, Serialize};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Ok,
    Failed,
    Timeout,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::Timeout => "timeout",
        }
    }

    /// The status stored as `s` (an unknown word reads as `failed`: never counted).
    pub fn parse(s: &str) -> RunStatus {
        match s {
            "ok" => RunStatus::Ok,
            "timeout" => RunStatus::Timeout,
            _ => RunStatus::Failed,
        }
    }
}

/// One planned run: which variant (by position), whether it is a warm-up, its ABBA block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    pub seq: u32,
    pub variant: usize,
    /// ABBA block number (-1 for warm-ups).
    pub block: i32,
    pub warmup: bool,
}

/// Where an imported run came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    /// time | perf-stat | hyperfine
    pub format: String,
    pub file: String,
    /// 1-based line where the run's record starts.
    pub line: u32,
    /// The row is a tool's mean over repeats (perf stat -r N), not a single run.
    pub summary: bool,
    /// How many repeats, when the input says.
    pub repeats: Option<u32>,
}

/// The invocation, boot and host a run names, each optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Labels {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invocation: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl Labels {
    pub fn is_empty(&self) -> bool {
        self.invocation.is_none() && self.boot.is_none() && self.host.is_none()
    }
}

/// One run with its metrics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    /// Position in the experiment's schedule, from 0.
    pub seq: u32,
    /// Position of its variant in the experiment.
    pub variant: usize,
    pub warmup: bool,
    /// Its block in the schedule (ABBA block number; -1 for warm-ups; 0 where there is no
    /// schedule, as for imports).
    pub block: i32,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// CLOCK_REALTIME, ns since the epoch (0 when unknown, as for imported runs).
    pub started_ns: i64,
    pub ended_ns: i64,
    /// Why the run is excluded, when it is (a user excluded it, or a knob moved during it).
    pub excluded: Option<String>,
    /// Measured values (one per name), written in JSON as an object NAME -> value; their units
    /// are listed once per experiment.
    #[serde(serialize_with = "metric_map")]
    pub metrics: Vec<Metric>,
    /// Where an imported run came from.
    pub source: Option<Source>,
    /// The invocation, boot and host it names (docs/statistics.md#levels); written in JSON as
    /// `replication` when it names any.
    #[serde(rename = "replication", skip_serializing_if = "Labels::is_empty")]
    pub labels: Labels,
}

fn metric_map<S: serde::Serializer>(metrics: &[Metric], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut sorted: Vec<&Metric> = metrics.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut m = s.serialize_map(Some(sorted.len()))?;
    for x in sorted {
        // Non-finite values never reach the store; written as null should one appear.
        m.serialize_entry(&x.name, &x.value.is_finite().then_some(x.value))?;
    }
    m.end()
}

impl Run {
    /// A run of variant `variant` at `seq` that finished normally, with `metrics` and nothing
    /// else known (no exit code, timestamps or provenance); set the rest with struct update.
    pub fn ok(seq: u32, variant: usize, metrics: Vec<Metric>) -> Run {
        Run {
            seq,
            variant,
            warmup: false,
            block: 0,
            status: RunStatus::Ok,
            exit_code: None,
            signal: None,
            started_ns: 0,
            ended_ns: 0,
            excluded: None,
            metrics,
            source: None,
            labels: Labels::default(),
        }
    }

    /// The one rule for which runs count in descriptions, tests and plots: the run finished
    /// normally, is not a warm-up and was not excluded (by a user, or by abperf: a knob moved
    /// during it).
    pub fn counts(&self) -> bool {
        self.status == RunStatus::Ok && !self.warmup && self.excluded.is_none()
    }

    /// The value of metric `name`, if measured.
    pub fn value(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.value)
    }

    /// Duration from start to end in ns, when both are known.
    pub fn duration_ns(&self) -> Option<f64> {
        (self.ended_ns > self.started_ns).then(|| (self.ended_ns - self.started_ns) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> Run {
        Run {
            seq: 3,
            variant: 1,
            warmup: false,
            block: 0,
            status: RunStatus::Ok,
            exit_code: Some(0),
            signal: None,
            started_ns: 10,
            ended_ns: 25,
            excluded: None,
            metrics: vec![
                Metric::new("wall_ns", 15.0, "ns"),
                Metric::new("a", 1.0, "count"),
            ],
            source: None,
            labels: Labels::default(),
        }
    }

    #[test]
    fn counting_rule() {
        let mut r = run();
        assert!(r.counts());
        r.warmup = true;
        assert!(!r.counts());
        let mut r = run();
        r.status = RunStatus::Timeout;
        assert!(!r.counts());
        let mut r = run();
        r.excluded = Some("user".into());
        assert!(!r.counts());
    }

    #[test]
    fn metrics_as_a_sorted_object() {
        let r = run();
        assert_eq!(r.value("wall_ns"), Some(15.0));
        assert_eq!(r.value("nope"), None);
        assert_eq!(r.duration_ns(), Some(15.0));
        let j = serde_json::to_string(&r).unwrap();
        assert!(j.contains(r#""metrics":{"a":1.0,"wall_ns":15.0}"#), "{j}");
        for s in [RunStatus::Ok, RunStatus::Failed, RunStatus::Timeout] {
            assert_eq!(RunStatus::parse(s.as_str()), s);
        }
    }
}
