//! Storage for `abperf micro`: bulk commit of a configuration's samples (one run each) in one
//! transaction, and the derived findings (knee, per-miss cost, skips, notes) in a table of their
//! own (migration 4, `SCHEMA`).

use super::{NewRun, Store};
use anyhow::Context;
use rusqlite::params;
use serde::Serialize;

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

/// Migration 4: what `abperf micro` concluded (knee, implied ceiling, skipped benchmarks).
pub(super) const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS micro_finding (
        experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
        position      INTEGER NOT NULL,
        bench         TEXT NOT NULL,
        key           TEXT NOT NULL,
        value         REAL,
        unit          TEXT NOT NULL,
        text          TEXT NOT NULL,
        PRIMARY KEY (experiment_id, position)
    );
";

impl Store {
    /// Commit many finished runs of one experiment in a single transaction: all or none.
    pub fn commit_runs(&mut self, runs: &[NewRun]) -> anyhow::Result<()> {
        let tx = self.conn_mut().transaction()?;
        {
            let mut vstmt = tx.prepare_cached(
                "SELECT id FROM variant WHERE experiment_id = ?1 AND position = ?2",
            )?;
            let mut rstmt = tx.prepare_cached(
                "INSERT INTO run (experiment_id, variant_id, seq, warmup, status, exit_code, signal, started_ns, ended_ns)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            let mut mstmt = tx.prepare_cached(
                "INSERT INTO metric (run_id, name, value, unit) VALUES (?1, ?2, ?3, ?4)",
            )?;
            let mut cached: Option<(i64, usize, i64)> = None;
            for run in runs {
                let vid = match cached {
                    Some((e, p, v)) if e == run.experiment_id && p == run.variant => v,
                    _ => {
                        let v: i64 = vstmt
                            .query_row(params![run.experiment_id, run.variant as i64], |r| r.get(0))
                            .with_context(|| {
                                format!(
                                    "experiment {} has no variant #{}",
                                    run.experiment_id, run.variant
                                )
                            })?;
                        cached = Some((run.experiment_id, run.variant, v));
                        v
                    }
                };
                rstmt.execute(params![
                    run.experiment_id,
                    vid,
                    run.seq,
                    run.warmup,
                    run.status.as_str(),
                    run.exit_code,
                    run.signal,
                    run.started_ns,
                    run.ended_ns
                ])?;
                let run_id = tx.last_insert_rowid();
                for m in &run.metrics {
                    if !m.value.is_finite() {
                        anyhow::bail!(
                            "metric {} of run {} is not a finite number ({})",
                            m.name,
                            run.seq,
                            m.value
                        );
                    }
                    mstmt
                        .execute(params![run_id, m.name, m.value, m.unit])
                        .with_context(|| format!("metric {} of run {}", m.name, run.seq))?;
                }
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Store the findings of a micro experiment (replacing any stored before).
    pub fn set_micro_findings(
        &mut self,
        experiment_id: i64,
        findings: &[MicroFinding],
    ) -> anyhow::Result<()> {
        let tx = self.conn_mut().transaction()?;
        tx.execute(
            "DELETE FROM micro_finding WHERE experiment_id = ?1",
            [experiment_id],
        )?;
        for (i, f) in findings.iter().enumerate() {
            tx.execute(
                "INSERT INTO micro_finding (experiment_id, position, bench, key, value, unit, text)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    experiment_id,
                    i as i64,
                    f.bench,
                    f.key,
                    f.value.filter(|v| v.is_finite()),
                    f.unit,
                    f.text
                ],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The findings of a micro experiment, in the order they were stored (empty if none).
    pub fn micro_findings(&self, experiment_id: i64) -> anyhow::Result<Vec<MicroFinding>> {
        let mut stmt = self.conn().prepare(
            "SELECT bench, key, value, unit, text FROM micro_finding WHERE experiment_id = ?1 ORDER BY position",
        )?;
        let rows = stmt.query_map([experiment_id], |r| {
            Ok(MicroFinding {
                bench: r.get(0)?,
                key: r.get(1)?,
                value: r.get(2)?,
                unit: r.get(3)?,
                text: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn bulk_runs_and_findings_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("m.db")).unwrap();
        let exp = NewExperiment {
            name: "micro".into(),
            kind: "micro".into(),
            command_line: vec![],
            design: serde_json::json!({}),
            seed: None,
            environment: serde_json::json!({}),
        };
        let v = NewVariant {
            name: "syscall/getppid".into(),
            command: None,
            parameters: BTreeMap::new(),
            knobs: vec![],
        };
        let id = store.create_experiment(&exp, &[v], &[]).unwrap();
        let run = |seq: u32, c: f64| NewRun {
            experiment_id: id,
            variant: 0,
            seq,
            warmup: false,
            status: RunStatus::Ok,
            exit_code: None,
            signal: None,
            started_ns: 1,
            ended_ns: 2,
            metrics: vec![Metric::new("cycles", c, "cycles")],
        };
        store.commit_runs(&[run(0, 100.0), run(1, 101.0)]).unwrap();
        assert_eq!(store.runs(id).unwrap().len(), 2);
        // A bad value aborts the whole batch.
        assert!(store.commit_runs(&[run(2, 1.0), run(3, f64::NAN)]).is_err());
        assert_eq!(store.runs(id).unwrap().len(), 2);
        let f = MicroFinding {
            bench: "tlb-flush".into(),
            key: "madvise-knee".into(),
            value: Some(33.0),
            unit: "pages".into(),
            text: "knee".into(),
        };
        store
            .set_micro_findings(id, std::slice::from_ref(&f))
            .unwrap();
        assert_eq!(store.micro_findings(id).unwrap(), vec![f]);
        store.delete(id).unwrap();
        assert!(store.micro_findings(id).unwrap().is_empty());
    }
}
