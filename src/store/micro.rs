//! Storage for `abperf micro`: the derived findings (knee, per-miss cost, skips, notes) in a table
//! of their own (migration 4, `SCHEMA`). The samples themselves are runs, committed in bulk
//! through `Store::commit_runs`.

use super::Store;
use crate::model::MicroFinding;
use rusqlite::params;

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
    /// Store the findings of a micro experiment (replacing any stored before).
    pub fn set_micro_findings(
        &mut self,
        experiment_id: i64,
        findings: &[MicroFinding],
    ) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
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
    use crate::model::{Kind, Metric, NewExperiment, Run, Variant};

    #[test]
    fn bulk_runs_and_findings_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("m.db")).unwrap();
        let exp = NewExperiment {
            name: "micro".into(),
            kind: Kind::Micro,
            command_line: vec![],
            design: serde_json::json!({}),
            seed: None,
            environment: serde_json::json!({}),
        };
        let v = Variant::named("syscall/getppid");
        let id = store.create_experiment(&exp, &[v], &[]).unwrap();
        let run = |seq: u32, c: f64| Run::ok(seq, 0, vec![Metric::new("cycles", c, "cycles")]);
        store
            .commit_runs(id, &[run(0, 100.0), run(1, 101.0)])
            .unwrap();
        assert_eq!(store.runs(id).unwrap().len(), 2);
        // A bad value aborts the whole batch.
        assert!(
            store
                .commit_runs(id, &[run(2, 1.0), run(3, f64::NAN)])
                .is_err()
        );
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
