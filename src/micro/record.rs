//! Saving a [`SuiteReport`] in the store as an experiment of kind `micro`:
//! one variant per benchmark configuration (parameters: bench, per, pages, core_ghz and the
//! configuration's own), one run per sample with metrics `cycles` (counter ticks), `ns`,
//! `core_cycles` (ticks / ticks per core cycle measured after the configuration) and, where an
//! operation covers several pages, `cycles_per_page`. Findings, skips and notes go to `micro_finding`.
//! Timer, TSC frequency and CPU features go into the design JSON, the machine into the usual
//! environment snapshot. `abperf compare` and `abperf export` then treat a micro result like any
//! other experiment: samples are runs.

use super::SuiteReport;
use crate::store::{
    Metric, MicroFinding, NewExperiment, NewRun, NewVariant, RunStatus, Slot, Status, Store,
};
use std::collections::BTreeMap;

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// Store the report; returns the experiment id.
pub fn save(
    store: &mut Store,
    report: &SuiteReport,
    name: &str,
    argv: &[String],
) -> anyhow::Result<i64> {
    let design = serde_json::json!({
        "kind": "micro",
        "quick": report.quick,
        "benches": report.benches,
        "cpu": report.cpu,
        "remote_cpu": report.remote_cpu,
        "timer": report.timer,
        "cpu_info": report.cpu_info,
        "elapsed_s": report.elapsed_s,
        "adds_per_cycle": report.adds_per_cycle,
        "samples_are_runs": true,
    });
    let mut variants = Vec::new();
    let mut schedule = Vec::new();
    let mut seq = 0u32;
    for (i, m) in report.measurements.iter().enumerate() {
        let mut p: BTreeMap<String, String> = m.params.clone();
        p.insert("bench".into(), m.bench.clone());
        p.insert("per".into(), m.per.clone());
        p.insert("pages".into(), m.pages.to_string());
        p.insert("core_ghz".into(), format!("{:.3}", m.core_ghz));
        variants.push(NewVariant {
            name: m.name.clone(),
            command: None,
            parameters: p,
            knobs: vec![],
        });
        for _ in &m.samples {
            schedule.push(Slot {
                seq,
                variant: i,
                block: 0,
                warmup: false,
            });
            seq += 1;
        }
    }
    let exp = NewExperiment {
        name: name.to_string(),
        kind: "micro".into(),
        command_line: argv.to_vec(),
        design,
        seed: None,
        environment: crate::measure::env::snapshot(),
    };
    let id = store.create_experiment(&exp, &variants, &schedule)?;
    let result = (|| -> anyhow::Result<()> {
        let ns_per_cycle = 1e9 / report.timer.hz;
        let stamp = now_ns();
        let mut seq = 0u32;
        for (i, m) in report.measurements.iter().enumerate() {
            let mut runs = Vec::with_capacity(m.samples.len());
            let tpc = m.ticks_per_core_cycle(report.timer.hz);
            for &c in &m.samples {
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
                runs.push(NewRun {
                    experiment_id: id,
                    variant: i,
                    seq,
                    warmup: false,
                    status: if c.is_finite() {
                        RunStatus::Ok
                    } else {
                        RunStatus::Failed
                    },
                    exit_code: None,
                    signal: None,
                    started_ns: stamp,
                    ended_ns: stamp,
                    metrics,
                });
                seq += 1;
            }
            store.commit_runs(&runs)?;
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
        store.set_micro_findings(id, &findings)?;
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
