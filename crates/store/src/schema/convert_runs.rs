//! Migration 12's data step: the runs of an older store rewritten into the compact tables, in
//! Rust (`run_codec` encodes them as the store writes new runs), keeping every run's id.

use crate::run_codec::{Target, status_value, write};
use abperf_model::{Direction, Metric, Run, RunStatus};
use anyhow::Context;
use rusqlite::Transaction;

/// Rows of `import_run` and `boot_run` whose run is not in `run`.
fn dangling(tx: &Transaction) -> rusqlite::Result<i64> {
    tx.query_row(
        "SELECT (SELECT count(*) FROM import_run WHERE run_id NOT IN (SELECT id FROM run))
              + (SELECT count(*) FROM boot_run WHERE run_id NOT IN (SELECT id FROM run))",
        [],
        |r| r.get(0),
    )
}

/// Migration 12's data step, in the migration's transaction with foreign keys off: every run of
/// the old `run`/`metric` tables into `run_compact`/`metric_compact` (same ids), then the old
/// tables dropped and the new ones renamed.
pub(super) fn convert(tx: &Transaction) -> anyhow::Result<()> {
    let target = Target::new("run_compact", "metric_compact", true);
    let links_before = dangling(tx)?;
    {
        let mut runs = tx.prepare(
            "SELECT r.id, r.experiment_id, v.position, r.seq, r.warmup, r.status, r.exit_code,
                    r.signal, r.started_ns, r.ended_ns, r.excluded
             FROM run r JOIN variant v ON v.id = r.variant_id ORDER BY r.id",
        )?;
        let mut metrics = tx.prepare(
            "SELECT run_id, name, value, unit, direction FROM metric ORDER BY run_id, rowid",
        )?;
        let mut mrows = metrics.query([])?;
        let mut pending: Option<(i64, Metric)> = None;
        let mut rows = runs.query([])?;
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            let exp_id: i64 = r.get(1)?;
            let status: String = r.get(5)?;
            let mut run = Run {
                variant: r.get::<_, i64>(2)? as usize,
                seq: r.get(3)?,
                warmup: r.get(4)?,
                block: 0,
                status: RunStatus::parse(&status),
                exit_code: r.get(6)?,
                signal: r.get(7)?,
                started_ns: r.get(8)?,
                ended_ns: r.get(9)?,
                excluded: r.get(10)?,
                metrics: Vec::new(),
                source: None,
                labels: Default::default(),
            };
            // Metrics come in run id order, as the runs do (a metric of a run that is gone is
            // skipped: the old reader never showed it).
            loop {
                if pending.is_none() {
                    pending = match mrows.next()? {
                        Some(m) => {
                            let dir: Option<String> = m.get(4)?;
                            Some((
                                m.get(0)?,
                                Metric {
                                    name: m.get(1)?,
                                    value: m.get(2)?,
                                    unit: m.get(3)?,
                                    direction: dir.as_deref().and_then(Direction::parse),
                                },
                            ))
                        }
                        None => None,
                    };
                }
                match pending.take() {
                    Some((rid, m)) if rid == id => run.metrics.push(m),
                    Some((rid, _)) if rid < id => {}
                    other => {
                        pending = other;
                        break;
                    }
                }
            }
            write(tx, exp_id, &run, status_value(&status), Some(id), &target)
                .with_context(|| format!("converting run {id} (experiment {exp_id})"))?;
        }
    }
    tx.execute_batch(
        "DROP TABLE metric;
         DROP TABLE run;
         ALTER TABLE run_compact RENAME TO run;
         ALTER TABLE metric_compact RENAME TO metric;",
    )?;
    // Every run a provenance or boot row pointed at is still there (the conversion keeps ids).
    if dangling(tx)? > links_before {
        anyhow::bail!("converting the runs lost runs that imports or boots point at");
    }
    Ok(())
}
