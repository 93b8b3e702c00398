//! Metrics: a measured value with its unit, and what is known of a metric across an experiment
//! (unit, which direction is better, whether it is a figure about another metric).

use serde::{Deserialize, Serialize};

/// A measured value with its unit (`wall_ns` in `ns`, `maxrss_kib` in `KiB`, `tlb:tlb_flush` in
/// `count`), and the direction its source declared (a built-in workload's metrics); without one,
/// the direction is derived from the name and unit ([`Direction::of`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
}

impl Metric {
    pub fn new(name: impl Into<String>, value: f64, unit: impl Into<String>) -> Metric {
        Metric {
            name: name.into(),
            value,
            unit: unit.into(),
            direction: None,
        }
    }

    /// The same metric with a declared direction.
    pub fn declared(mut self, direction: Direction) -> Metric {
        self.direction = Some(direction);
        self
    }
}

/// Units written into metric rows.
pub mod unit {
    pub const NS: &str = "ns";
    pub const KIB: &str = "KiB";
    pub const COUNT: &str = "count";
    pub const PERCENT: &str = "%";
}

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Times and sizes: less is better.
    LowerIsBetter,
    /// Rates (a unit per second, ops/s, MB/s, Hz; names saying throughput, bandwidth, rate).
    HigherIsBetter,
    /// Event counts (faults, flushes, context switches): judged like lower-is-better, spoken of
    /// as "more" and "fewer".
    Count,
}

impl Direction {
    /// The direction of metric `name` measured in `unit`.
    pub fn of(name: &str, unit: &str) -> Direction {
        let u = unit.trim().to_ascii_lowercase();
        let n = name.to_ascii_lowercase();
        let rate = u.ends_with("/s")
            || u.ends_with("/sec")
            || u.ends_with("per_s")
            || u.ends_with("per second")
            || u == "hz"
            || u == "ops"
            || [
                "throughput",
                "bandwidth",
                "ops_per",
                "per_sec",
                "_rate",
                "iops",
            ]
            .iter()
            .any(|k| n.contains(k));
        if rate {
            Direction::HigherIsBetter
        } else if u == unit::COUNT {
            Direction::Count
        } else {
            Direction::LowerIsBetter
        }
    }

    pub fn higher_is_better(self) -> bool {
        self == Direction::HigherIsBetter
    }

    /// The word stored and written in JSON (`lower-is-better`, `higher-is-better`, `count`).
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::LowerIsBetter => "lower-is-better",
            Direction::HigherIsBetter => "higher-is-better",
            Direction::Count => "count",
        }
    }

    /// The direction stored as `s` (None for a word this abperf does not know).
    pub fn parse(s: &str) -> Option<Direction> {
        [
            Direction::LowerIsBetter,
            Direction::HigherIsBetter,
            Direction::Count,
        ]
        .into_iter()
        .find(|d| d.as_str() == s)
    }
}

/// A metric present in an experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricInfo {
    pub name: String,
    pub unit: String,
    pub direction: Direction,
    /// A figure about another metric (`EVENT.stderr_pct`, `EVENT.running_pct` from perf stat):
    /// kept in raw data, left out of summary tables, plots and verdicts.
    pub auxiliary: bool,
}

impl MetricInfo {
    pub fn new(name: &str, unit: &str) -> MetricInfo {
        MetricInfo {
            name: name.to_string(),
            unit: unit.to_string(),
            direction: Direction::of(name, unit),
            auxiliary: is_auxiliary(name),
        }
    }

    /// What a measured value says of its metric: its declared direction, else the derived one.
    pub fn of(m: &Metric) -> MetricInfo {
        let mut info = MetricInfo::new(&m.name, &m.unit);
        if let Some(d) = m.direction {
            info.direction = d;
        }
        info
    }
}

/// Metrics shown first, in this order, with the labels perf-stat-like blocks give them.
pub const WELL_KNOWN: &[(&str, &str)] = &[
    ("wall_ns", "wall"),
    ("user_ns", "user"),
    ("sys_ns", "sys"),
    ("cpu_pct", "CPU"),
    ("maxrss_kib", "max RSS"),
    ("minflt", "minor faults"),
    ("majflt", "major faults"),
    ("nvcsw", "voluntary ctx switches"),
    ("nivcsw", "involuntary ctx switches"),
    ("inblock", "block input ops"),
    ("oublock", "block output ops"),
    ("nswap", "swaps"),
];

/// Sort key: well-known metrics first in their order, the rest after (stable).
pub fn display_rank(name: &str) -> usize {
    WELL_KNOWN
        .iter()
        .position(|(k, _)| *k == name)
        .unwrap_or(WELL_KNOWN.len())
}

/// The label of a metric in perf-stat-like blocks (`wall_ns` -> `wall`); others as named.
pub fn label(name: &str) -> &str {
    WELL_KNOWN
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, l)| *l)
        .unwrap_or(name)
}

/// Whether `name` is a figure about another metric (perf stat's `+-` and multiplexing shares,
/// a summary's SD).
pub fn is_auxiliary(name: &str) -> bool {
    name.ends_with(".stderr_pct") || name.ends_with(".running_pct") || name.ends_with(".sd")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions() {
        assert_eq!(Direction::of("wall_ns", "ns"), Direction::LowerIsBetter);
        assert_eq!(Direction::of("maxrss_kib", "KiB"), Direction::LowerIsBetter);
        assert_eq!(Direction::of("tp:tlb:tlb_flush", "count"), Direction::Count);
        assert_eq!(Direction::of("read", "MB/s"), Direction::HigherIsBetter);
        assert_eq!(Direction::of("ops", "ops/s"), Direction::HigherIsBetter);
        assert_eq!(Direction::of("throughput", ""), Direction::HigherIsBetter);
        assert!(!Direction::Count.higher_is_better());
        for d in [
            Direction::LowerIsBetter,
            Direction::HigherIsBetter,
            Direction::Count,
        ] {
            assert_eq!(Direction::parse(d.as_str()), Some(d));
            assert_eq!(
                serde_json::to_value(d).unwrap(),
                serde_json::json!(d.as_str())
            );
        }
        assert_eq!(Direction::parse("sideways"), None);
        // a declared direction wins over the derived one
        let m = Metric::new("pages_scanned", 5.0, "pages");
        assert_eq!(MetricInfo::of(&m).direction, Direction::LowerIsBetter);
        let m = m.declared(Direction::Count);
        assert_eq!(MetricInfo::of(&m).direction, Direction::Count);
        assert_eq!(MetricInfo::of(&m).unit, "pages");
    }

    #[test]
    fn order_labels_and_auxiliaries() {
        assert!(display_rank("wall_ns") < display_rank("user_ns"));
        assert_eq!(display_rank("zzz"), WELL_KNOWN.len());
        assert_eq!(label("maxrss_kib"), "max RSS");
        assert_eq!(label("cycles"), "cycles");
        assert!(MetricInfo::new("task-clock.stderr_pct", "%").auxiliary);
        assert!(!MetricInfo::new("task-clock", "ns").auxiliary);
    }
}
