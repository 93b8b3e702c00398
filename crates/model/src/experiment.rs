//! An experiment: what was measured, how (design), where (environment) and how far it got.

use serde::{Deserialize, Serialize};

/// What made an experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `abperf run`: commands, parameters or knobs as variants.
    Run,
    /// `abperf micro`: one variant per benchmark configuration, one run per sample.
    Micro,
    /// `abperf import`: runs another tool measured.
    Import,
    /// `abperf trace record|import`: one capture.
    Trace,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Micro => "micro",
            Kind::Import => "import",
            Kind::Trace => "trace",
        }
    }

    /// The kind stored as `s`; `None` for a word this abperf does not know.
    pub fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "run" => Kind::Run,
            "micro" => Kind::Micro,
            "import" => Kind::Import,
            "trace" => Kind::Trace,
            _ => return None,
        })
    }
}

/// Life cycle of an experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Running,
    Complete,
    Interrupted,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Complete => "complete",
            Status::Interrupted => "interrupted",
            Status::Failed => "failed",
        }
    }

    /// The status stored as `s` (an unknown word reads as `running`, the state that claims least).
    pub fn parse(s: &str) -> Status {
        match s {
            "complete" => Status::Complete,
            "interrupted" => Status::Interrupted,
            "failed" => Status::Failed,
            _ => Status::Running,
        }
    }
}

/// A group-sequential plan (`abperf run --until-decided`): K looks at equal numbers of runs,
/// up to `max_runs` per variant, at level `alpha` (stats::sequential decides at each look).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SequentialPlan {
    pub looks: usize,
    pub max_runs: u32,
    pub alpha: f64,
}

impl SequentialPlan {
    /// Runs per variant after look `k` (1-based).
    pub fn runs_at(&self, k: usize) -> usize {
        (self.max_runs as usize * k).div_ceil(self.looks)
    }
}

/// What is known of an experiment before it is stored.
#[derive(Debug, Clone)]
pub struct NewExperiment {
    pub name: String,
    pub kind: Kind,
    /// The argv that made it.
    pub command_line: Vec<String>,
    /// Order, seed, runs, warm-ups and options (JSON; its shape depends on the kind).
    pub design: serde_json::Value,
    pub seed: Option<u64>,
    /// Snapshot of machine and kernel (JSON).
    pub environment: serde_json::Value,
}

/// A stored experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Experiment {
    pub id: i64,
    pub name: String,
    pub kind: Kind,
    /// UTC, RFC 3339.
    pub created: String,
    pub command_line: Vec<String>,
    pub design: serde_json::Value,
    /// A u64, written as a decimal string in JSON (JavaScript numbers cannot hold it).
    #[serde(serialize_with = "seed_text")]
    pub seed: Option<u64>,
    pub environment: serde_json::Value,
    pub status: Status,
    /// `--label KEY=VALUE`s (none: left out of JSON, so unlabelled output is unchanged).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub labels: crate::label::Labels,
}

fn seed_text<S: serde::Serializer>(seed: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match seed {
        Some(v) => s.serialize_str(&v.to_string()),
        None => s.serialize_none(),
    }
}

impl Experiment {
    /// Whether the runs' sequence numbers are a real run order, so that drift tests apply: not
    /// for imported lines (seed 000's lines are sorted by user time, not run order).
    pub fn has_run_order(&self) -> bool {
        self.design.get("order").and_then(|o| o.as_str()) != Some("imported")
    }

    /// The group-sequential plan of an `abperf run --until-decided` experiment.
    pub fn sequential(&self) -> Option<SequentialPlan> {
        serde_json::from_value(self.design.get("sequential")?.clone()).ok()
    }

    /// How the runs were ordered, in words ("order abba", "order as imported").
    pub fn order_text(&self) -> String {
        match self.design.get("order").and_then(|o| o.as_str()) {
            Some("imported") => "order as imported".to_string(),
            Some("seq") => "order as the table's seq column".to_string(),
            Some(o) => format!("order {o}"),
            None => "order unknown".to_string(),
        }
    }

    /// Machine and kernel from the environment snapshot, in words, for provenance lines.
    pub fn machine_text(&self) -> String {
        let env = &self.environment;
        if env.get("imported").and_then(|v| v.as_bool()) == Some(true) {
            return "measured elsewhere (machine not recorded)".to_string();
        }
        let get = |k: &str| {
            env.get(k)
                .and_then(|v| v.as_str())
                .filter(|s| !s.is_empty())
        };
        let mut parts = Vec::new();
        if let Some(k) = get("kernel") {
            parts.push(format!("kernel {k}"));
        }
        if let Some(c) = get("cpu_model") {
            match env.get("cpu_count").and_then(|v| v.as_u64()) {
                Some(n) => parts.push(format!("{c} x{n}")),
                None => parts.push(c.to_string()),
            }
        }
        if let Some(kind) = env
            .get("virtualization")
            .and_then(|v| v.get("kind"))
            .and_then(|v| v.as_str())
        {
            parts.push(kind.to_string());
        }
        if let Some(accel) = env
            .get("vm")
            .and_then(|v| v.get("accel"))
            .and_then(|v| v.as_str())
        {
            parts.push(accel_text(accel));
        }
        if let Some(g) = get("cpufreq_governor") {
            parts.push(format!("governor {g}"));
        }
        if parts.is_empty() {
            "machine not recorded".to_string()
        } else {
            parts.join(", ")
        }
    }
}

/// How kernel variants were booted, in words; TCG says that its timings mean nothing for
/// hardware costs wherever it is printed.
pub fn accel_text(accel: &str) -> String {
    match accel {
        "tcg" => "kernels booted under QEMU TCG (emulated CPU: timings test the machinery, \
                  not hardware costs)"
            .to_string(),
        "kvm" => "kernels booted under QEMU/KVM".to_string(),
        other => format!("kernels booted under QEMU ({other})"),
    }
}

/// One line of `abperf list`.
#[derive(Debug, Clone, Serialize)]
pub struct ExperimentSummary {
    pub id: i64,
    pub name: String,
    pub kind: String,
    pub created: String,
    pub status: Status,
    pub variants: i64,
    /// Runs stored, and runs planned (the schedule).
    pub runs_done: i64,
    pub runs_planned: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(env: serde_json::Value, design: serde_json::Value) -> Experiment {
        Experiment {
            id: 1,
            name: "x".into(),
            kind: Kind::Run,
            created: String::new(),
            command_line: vec![],
            design,
            seed: Some(u64::MAX),
            environment: env,
            status: Status::Complete,
            labels: Default::default(),
        }
    }

    #[test]
    fn machine_and_order_text() {
        let e = exp(serde_json::json!({}), serde_json::json!({"order": "abba"}));
        assert_eq!(e.machine_text(), "machine not recorded");
        assert_eq!(e.order_text(), "order abba");
        assert!(e.has_run_order());
        let e = exp(
            serde_json::json!({
                "kernel": "6.18.44", "cpu_model": "AMD EPYC", "cpu_count": 2,
                "virtualization": {"kind": "virtual machine"}, "cpufreq_governor": null
            }),
            serde_json::json!({"order": "imported"}),
        );
        assert_eq!(
            e.machine_text(),
            "kernel 6.18.44, AMD EPYC x2, virtual machine"
        );
        assert!(!e.has_run_order());
        let e = exp(serde_json::json!({"imported": true}), serde_json::json!({}));
        assert_eq!(
            e.machine_text(),
            "measured elsewhere (machine not recorded)"
        );
        let j = serde_json::to_value(&e).unwrap();
        assert_eq!(j["seed"], u64::MAX.to_string());
        assert_eq!(j["kind"], "run");
    }

    #[test]
    fn kinds_and_statuses_round_trip() {
        for k in [Kind::Run, Kind::Micro, Kind::Import, Kind::Trace] {
            assert_eq!(Kind::parse(k.as_str()), Some(k));
        }
        assert_eq!(Kind::parse("nonsense"), None);
        for s in [
            Status::Running,
            Status::Complete,
            Status::Interrupted,
            Status::Failed,
        ] {
            assert_eq!(Status::parse(s.as_str()), s);
        }
    }
}
