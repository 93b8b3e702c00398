//! A [`SuiteReport`] as an experiment of kind `micro`: one variant per benchmark configuration
//! (parameters: bench, per, pages, core_ghz and the configuration's own), one run per sample
//! with metrics `cycles` (counter ticks), `ns`, `core_cycles` (ticks / ticks per core cycle) and,
//! where an operation covers several pages, `cycles_per_page`. Findings, skips and notes become
//! micro findings. Timer, TSC frequency, CPU features and the suite's options go into the
//! design JSON, the machine into the usual environment snapshot. `abperf compare`, `report` and
//! `export` then treat a micro result like any other experiment: samples are runs.

use super::SuiteReport;
use crate::model::{
    Dataset, Experiment, Kind, Metric, MicroFinding, NewExperiment, Run, RunStatus, Slot, Status,
    Variant,
};
use crate::store::Store;
use std::collections::BTreeMap;

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// A suite's results in the model's shape, ready to store or to render.
pub struct Record {
    pub experiment: NewExperiment,
    pub variants: Vec<Variant>,
    pub schedule: Vec<Slot>,
    pub runs: Vec<Run>,
    pub findings: Vec<MicroFinding>,
}

/// Convert a suite's results; `environment` is the machine snapshot.
pub fn record(
    report: &SuiteReport,
    name: &str,
    argv: &[String],
    environment: serde_json::Value,
) -> Record {
    let design = serde_json::json!({
        "kind": "micro",
        "arch": report.arch,
        "quick": report.quick,
        "benches": report.benches,
        "cpu": report.cpu,
        "remote_cpu": report.remote_cpu,
        "timer": report.timer,
        "cpu_info": report.cpu_info,
        "cpu_description": report.cpu_info.describe(),
        "elapsed_s": report.elapsed_s,
        "adds_per_cycle": report.adds_per_cycle,
        "samples_are_runs": true,
    });
    let mut variants = Vec::new();
    let mut schedule = Vec::new();
    let mut runs = Vec::new();
    let ns_per_cycle = 1e9 / report.timer.hz;
    let stamp = now_ns();
    for (i, m) in report.measurements.iter().enumerate() {
        let mut p: BTreeMap<String, String> = m.params.clone();
        p.insert("bench".into(), m.bench.clone());
        p.insert("per".into(), m.per.clone());
        p.insert("pages".into(), m.pages.to_string());
        p.insert("core_ghz".into(), format!("{:.3}", m.core_ghz));
        variants.push(Variant {
            parameters: p,
            ..Variant::named(&m.name)
        });
        let tpc = m.ticks_per_core_cycle(report.timer.hz);
        for &c in &m.samples {
            let seq = schedule.len() as u32;
            schedule.push(Slot {
                seq,
                variant: i,
                block: 0,
                warmup: false,
            });
            let mut metrics = vec![
                Metric::new("cycles", c, "cycles"),
                Metric::new("ns", c * ns_per_cycle, "ns"),
                Metric::new("core_cycles", c / tpc, "cycles"),
            ];
            if m.pages > 1 {
                metrics.push(Metric::new("cycles_per_page", c / m.pages as f64, "cycles"));
            }
            if !c.is_finite() {
                metrics.clear();
            }
            runs.push(Run {
                status: if c.is_finite() {
                    RunStatus::Ok
                } else {
                    RunStatus::Failed
                },
                started_ns: stamp,
                ended_ns: stamp,
                ..Run::ok(seq, i, metrics)
            });
        }
    }
    let mut findings: Vec<MicroFinding> = report
        .findings
        .iter()
        .map(|f| MicroFinding {
            bench: f.bench.clone(),
            key: f.key.clone(),
            value: f.value,
            unit: f.unit.clone(),
            text: f.text.clone(),
        })
        .collect();
    for s in &report.failures {
        findings.push(MicroFinding {
            bench: s.bench.clone(),
            key: format!(
                "failed{}",
                s.config
                    .as_ref()
                    .map(|c| format!(":{c}"))
                    .unwrap_or_default()
            ),
            value: None,
            unit: String::new(),
            text: s.reason.clone(),
        });
    }
    for s in &report.skips {
        findings.push(MicroFinding {
            bench: s.bench.clone(),
            key: format!(
                "skipped{}",
                s.config
                    .as_ref()
                    .map(|c| format!(":{c}"))
                    .unwrap_or_default()
            ),
            value: None,
            unit: String::new(),
            text: s.reason.clone(),
        });
    }
    for n in &report.notes {
        findings.push(MicroFinding {
            bench: String::new(),
            key: "note".into(),
            value: None,
            unit: String::new(),
            text: n.clone(),
        });
    }
    Record {
        experiment: NewExperiment {
            name: name.to_string(),
            kind: Kind::Micro,
            command_line: argv.to_vec(),
            design,
            seed: None,
            environment,
        },
        variants,
        schedule,
        runs,
        findings,
    }
}

impl Record {
    /// Store it; returns the experiment id.
    pub fn save(&self, store: &mut Store) -> anyhow::Result<i64> {
        let id = store.create_experiment(&self.experiment, &self.variants, &self.schedule)?;
        let result = (|| -> anyhow::Result<()> {
            store.commit_runs(id, &self.runs)?;
            store.set_micro_findings(id, &self.findings)?;
            Ok(())
        })();
        match result {
            Ok(()) => {
                store.set_status(id, Status::Complete)?;
                Ok(id)
            }
            Err(e) => {
                let _ = store.set_status(id, Status::Failed);
                Err(e.context(format!("storing micro results as experiment {id}")))
            }
        }
    }

    /// The same data as an unstored dataset (for `--no-store`).
    pub fn dataset(&self) -> Dataset {
        let e = &self.experiment;
        Dataset::new(
            vec![Experiment {
                id: 0,
                name: e.name.clone(),
                kind: e.kind,
                created: String::new(),
                command_line: e.command_line.clone(),
                design: e.design.clone(),
                seed: e.seed,
                environment: e.environment.clone(),
                status: Status::Complete,
            }],
            self.variants.clone(),
            self.runs.clone(),
            "micro suite (not stored)".into(),
        )
    }
}
