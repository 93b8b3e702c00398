//! Storage for `abperf micro`: the derived findings (knee, per-miss cost, skips, notes) in a table
//! of their own (migration 4, `SCHEMA`), and the samples compactly, one row per round of each
//! configuration with the samples packed into a blob (migration `SCHEMA_ROUNDS`). Read back,
//! the rounds become runs ([`abperf_model::micro::rounds_to_runs`]). Micro experiments stored
//! before that migration keep one run per sample in `run`/`metric` and read as before.

use super::Store;
use abperf_model::micro::{MicroRound, RoundProbe};
use abperf_model::{MicroFinding, Run, Variant};
use rusqlite::params;

/// Samples as the blob of `micro_round.cycles`.
fn pack(xs: &[f64]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The samples of a `micro_round.cycles` blob; `None` when its length is no multiple of 8.
fn unpack(b: &[u8]) -> Option<Vec<f64>> {
    b.len().is_multiple_of(8).then(|| {
        b.chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect()
    })
}

impl Store {
    /// Store the rounds of a micro experiment's configurations (`MicroRound::variant` is the
    /// position of a variant of experiment `experiment_id`), in one transaction.
    pub fn set_micro_rounds(
        &mut self,
        experiment_id: i64,
        rounds: &[MicroRound],
    ) -> anyhow::Result<()> {
        self.require(crate::Operation::Micro)?;
        let ids: Vec<i64> = {
            let mut stmt = self
                .conn()
                .prepare("SELECT id FROM variant WHERE experiment_id = ?1 ORDER BY position")?;
            stmt.query_map([experiment_id], |r| r.get(0))?
                .collect::<Result<_, _>>()?
        };
        let tx = self.conn_mut().transaction()?;
        {
            let mut ins = tx.prepare(
                "INSERT INTO micro_round (variant_id, round, started_ns, ticks_per_core_cycle,
                                          adds_per_cycle, cycles, invocation)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for r in rounds {
                let Some(&vid) = ids.get(r.variant) else {
                    anyhow::bail!(
                        "micro round of variant {} but experiment {experiment_id} has {} variants",
                        r.variant,
                        ids.len()
                    );
                };
                ins.execute(params![
                    vid,
                    r.round,
                    r.probe.started_ns,
                    r.probe.ticks_per_core_cycle,
                    Some(r.probe.adds_per_cycle).filter(|x| x.is_finite()),
                    pack(&r.cycles),
                    r.invocation
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The rounds stored for a micro experiment, configuration by configuration (variant
    /// position, then round); empty for experiments stored with one run per sample.
    pub fn micro_rounds(&self, experiment_id: i64) -> anyhow::Result<Vec<MicroRound>> {
        self.fill(experiment_id)?;
        let mut stmt = self.conn().prepare(
            "SELECT v.position, m.round, m.started_ns, m.ticks_per_core_cycle, m.adds_per_cycle,
                    m.cycles, m.invocation
             FROM micro_round m JOIN variant v ON v.id = m.variant_id
             WHERE v.experiment_id = ?1 ORDER BY v.position, m.round",
        )?;
        let rows = stmt.query_map([experiment_id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, u32>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, f64>(3)?,
                r.get::<_, Option<f64>>(4)?,
                r.get::<_, Vec<u8>>(5)?,
                r.get::<_, u32>(6)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (pos, round, started_ns, tpc, apc, blob, invocation) = row?;
            let cycles = unpack(&blob).ok_or_else(|| {
                anyhow::anyhow!(
                    "experiment {experiment_id}: micro round {round} of variant {pos} holds {} \
                     bytes, not a multiple of 8 (a damaged store?)",
                    blob.len()
                )
            })?;
            out.push(MicroRound {
                variant: pos as usize,
                round,
                invocation,
                probe: RoundProbe {
                    started_ns,
                    ticks_per_core_cycle: tpc,
                    adds_per_cycle: apc.unwrap_or(f64::NAN),
                },
                cycles,
            });
        }
        Ok(out)
    }

    /// The runs of a micro experiment stored as rounds (empty for one stored with one run per
    /// sample): one per sample, see [`abperf_model::micro::sample_run`]; `hz` is the counter's
    /// frequency recorded in its design.
    pub(super) fn micro_runs(
        &self,
        experiment_id: i64,
        variants: &[Variant],
        hz: f64,
    ) -> anyhow::Result<Vec<Run>> {
        let rounds = self.micro_rounds(experiment_id)?;
        let pages = |v: usize| {
            variants
                .get(v)
                .and_then(|v| v.parameters.get("pages"))
                .and_then(|p| p.parse().ok())
                .unwrap_or(1)
        };
        Ok(abperf_model::micro::rounds_to_runs(&rounds, pages, hz))
    }

    /// Store the findings of a micro experiment (replacing any stored before).
    pub fn set_micro_findings(
        &mut self,
        experiment_id: i64,
        findings: &[MicroFinding],
    ) -> anyhow::Result<()> {
        self.require(crate::Operation::Micro)?;
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
        self.fill(experiment_id)?;
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
    use abperf_model::{Kind, Metric, NewExperiment, Run, Variant};

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
