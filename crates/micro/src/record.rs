//! A [`SuiteReport`] as an experiment of kind `micro`: one variant per benchmark configuration
//! (parameters: bench, per, pages, core_ghz and the configuration's own) and its samples stored
//! compactly, one [`MicroRound`] per round of each configuration (the probe of the core at the
//! round's start and the samples in counter ticks). Read back, every sample is a run (block =
//! its round) with metrics `cycles` (counter ticks), `ns`, `core_cycles` (ticks / the round's
//! ticks per core cycle) and, where an operation covers several pages, `cycles_per_page`
//! ([`abperf_model::micro::sample_run`]). Findings, skips and notes become micro findings.
//! Timer, TSC frequency, CPU features and the suite's options go into the design JSON, the
//! machine into the usual environment snapshot.

use super::SuiteReport;
use abperf_model::micro::{MicroRound, rounds_to_runs};
use abperf_model::{Dataset, Experiment, Kind, MicroFinding, NewExperiment, Run, Status, Variant};
use abperf_store::Store;
use std::collections::BTreeMap;

/// A suite's results in the model's shape, ready to store or to render.
pub struct Record {
    pub experiment: NewExperiment,
    pub variants: Vec<Variant>,
    /// The samples, round by round, configuration by configuration.
    pub rounds: Vec<MicroRound>,
    /// The same samples as runs (what a reader of the stored experiment gets).
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
        "invocations": invocations(report),
    });
    let mut variants = Vec::new();
    let mut rounds = Vec::new();
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
        let mut at = 0;
        for (r, (n, probe)) in m.rounds.iter().enumerate() {
            rounds.push(MicroRound {
                variant: i,
                round: r as u32,
                invocation: m.invocations.get(r).copied().unwrap_or(0),
                probe: *probe,
                cycles: m.samples[at..at + n].to_vec(),
            });
            at += n;
        }
    }
    let pages: Vec<u64> = report.measurements.iter().map(|m| m.pages).collect();
    let runs = rounds_to_runs(&rounds, |v| pages[v], report.timer.hz);
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
    for (kind, list) in [("failed", &report.failures), ("skipped", &report.skips)] {
        for s in list {
            findings.push(MicroFinding {
                bench: s.bench.clone(),
                key: format!(
                    "{kind}{}",
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
        rounds,
        runs,
        findings,
    }
}

/// How many invocations (processes) measured the suite: 1 unless `--invocations`.
pub fn invocations(report: &SuiteReport) -> u32 {
    report
        .measurements
        .iter()
        .flat_map(|m| m.invocations.iter())
        .max()
        .map_or(1, |m| m + 1)
}

impl Record {
    /// Store it; returns the experiment id.
    pub fn save(&self, store: &mut Store) -> anyhow::Result<i64> {
        let id = store.create_experiment(&self.experiment, &self.variants, &[])?;
        let result = (|| -> anyhow::Result<()> {
            store.set_micro_rounds(id, &self.rounds)?;
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
                labels: Default::default(),
            }],
            self.variants.clone(),
            self.runs.clone(),
            "micro suite (not stored)".into(),
        )
    }
}
