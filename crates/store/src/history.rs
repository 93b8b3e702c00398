//! What `abperf history` reads: every experiment's labels and environment (its row) and each
//! variant's count, mean and spread of one metric, counted by SQL where the runs are (SQLite, or
//! the PostgreSQL server: no run is read into this process). Labels are written by
//! [`Store::set_labels`] (migration 16).

use super::Store;
use abperf_model::history_point::HistoryPoint;
use abperf_model::label::{self, Labels};
use anyhow::Context;
use std::collections::BTreeMap;

/// Each variant's count, mean and sum of squares of the fixed metric column `{col}` over its
/// timed, successful, not excluded runs. The same SQL on SQLite and PostgreSQL (there the
/// untyped columns are NUMERIC).
const SUMMARY: &str = "SELECT v.experiment_id, v.position, v.name, coalesce(v.command, ''), \
     count(r.{col}), CAST(avg(r.{col}) AS DOUBLE PRECISION), \
     CAST(sum(r.{col} * r.{col}) AS DOUBLE PRECISION) \
     FROM variant v JOIN run r ON r.experiment_id = v.experiment_id AND r.variant = v.position \
     WHERE r.warmup = 0 AND r.status = 0 AND r.excluded IS NULL AND r.{col} IS NOT NULL \
     GROUP BY v.experiment_id, v.position, v.name, v.command \
     ORDER BY v.experiment_id, v.position";

/// One variant's summary as the SQL gives it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct VariantSum {
    pub experiment: i64,
    pub name: String,
    pub command: String,
    pub count: i64,
    pub mean: f64,
    pub sum_sq: f64,
}

/// The SQL of [`SUMMARY`] for `metric`, which must be one of the fixed run columns.
pub(crate) fn summary_sql(metric: &str) -> anyhow::Result<String> {
    if !crate::FIXED.iter().any(|(name, _)| *name == metric) {
        let names: Vec<&str> = crate::FIXED.iter().map(|(n, _)| *n).collect();
        anyhow::bail!(
            "--metric {metric}: history reads one of the metrics every run has: {}",
            names.join(", ")
        );
    }
    Ok(SUMMARY.replace("{col}", metric))
}

impl Store {
    /// Set experiment `id`'s labels (none: leave the row as it is).
    pub fn set_labels(&mut self, id: i64, labels: &Labels) -> anyhow::Result<()> {
        let Some(text) = label::to_stored(labels) else {
            return Ok(());
        };
        self.conn()
            .execute(
                "UPDATE experiment SET labels = ?1 WHERE id = ?2",
                rusqlite::params![text, id],
            )
            .with_context(|| format!("storing the labels of experiment {id}"))?;
        self.mirror("experiment", "id = ?1", id)
    }

    /// Experiment `id`'s labels.
    pub fn labels(&self, id: i64) -> anyhow::Result<Labels> {
        let stored: Option<String> =
            self.conn()
                .query_row("SELECT labels FROM experiment WHERE id = ?1", [id], |r| {
                    r.get(0)
                })?;
        label::from_stored(id, stored.as_deref()).map_err(anyhow::Error::msg)
    }

    /// Every variant of every `run` experiment with `metric`, as history points, in experiment
    /// then variant order. Experiments still running are left out.
    pub fn history_points(&self, metric: &str) -> anyhow::Result<Vec<HistoryPoint>> {
        let sql = summary_sql(metric)?;
        let sums = match self.server_summaries(&sql)? {
            Some(s) => s,
            None => local_summaries(self.conn(), &sql)?,
        };
        let rows = self.history_rows()?;
        let mut out = Vec::new();
        for s in sums {
            let Some(row) = rows.get(&s.experiment) else {
                continue;
            };
            let n = s.count.max(0) as u64;
            let var = if n > 1 {
                ((s.sum_sq - n as f64 * s.mean * s.mean) / (n - 1) as f64).max(0.0)
            } else {
                0.0
            };
            out.push(HistoryPoint {
                experiment: s.experiment,
                created: row.created.clone(),
                labels: row.labels.clone(),
                host: row.host.clone(),
                kernel: row.kernel.clone(),
                variant: s.name,
                command: s.command,
                metric: metric.to_string(),
                runs: n,
                mean: s.mean,
                sd: var.sqrt(),
            });
        }
        Ok(out)
    }

    /// The experiments' rows that history needs (kind run, not running), by id.
    fn history_rows(&self) -> anyhow::Result<BTreeMap<i64, Row>> {
        let mut stmt = self.conn().prepare(
            "SELECT id, created, labels, environment FROM experiment \
             WHERE kind = 'run' AND status <> 'running' ORDER BY id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?;
        let mut out = BTreeMap::new();
        for row in rows {
            let (id, created, labels, env) = row?;
            let labels = label::from_stored(id, labels.as_deref()).map_err(anyhow::Error::msg)?;
            let env: serde_json::Value = serde_json::from_str(&env)
                .with_context(|| format!("experiment {id}: stored environment is not JSON"))?;
            let text = |k: &str| {
                env.get(k)
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
                    .to_string()
            };
            out.insert(
                id,
                Row {
                    created,
                    labels,
                    host: text("hostname"),
                    kernel: text("kernel"),
                },
            );
        }
        Ok(out)
    }
}

struct Row {
    created: String,
    labels: Labels,
    host: String,
    kernel: String,
}

fn local_summaries(conn: &rusqlite::Connection, sql: &str) -> anyhow::Result<Vec<VariantSum>> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map([], |r| {
        Ok(VariantSum {
            experiment: r.get(0)?,
            name: r.get(2)?,
            command: r.get(3)?,
            count: r.get(4)?,
            mean: r.get::<_, Option<f64>>(5)?.unwrap_or(f64::NAN),
            sum_sq: r.get::<_, Option<f64>>(6)?.unwrap_or(f64::NAN),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::{Kind, NewExperiment, Slot, Variant};
    use abperf_model::{Metric, Run, RunStatus};

    #[test]
    fn points_summarise_the_timed_ok_runs_and_carry_the_labels() {
        let mut store = Store::open_file(std::path::Path::new(":memory:")).unwrap();
        let exp = NewExperiment {
            name: "h".into(),
            kind: Kind::Run,
            command_line: vec![],
            design: serde_json::json!({}),
            seed: Some(1),
            environment: serde_json::json!({"hostname": "box", "kernel": "6.1"}),
        };
        let variants = vec![Variant {
            command: Some("true".into()),
            ..Variant::named("a")
        }];
        let slots: Vec<Slot> = (0..4)
            .map(|seq| Slot {
                seq,
                variant: 0,
                block: if seq == 0 { -1 } else { 0 },
                warmup: seq == 0,
            })
            .collect();
        let id = store.create_experiment(&exp, &variants, &slots).unwrap();
        for (seq, wall) in [(0u32, 1000.0), (1, 10.0), (2, 20.0), (3, 30.0)] {
            let run = Run {
                variant: 0,
                seq,
                warmup: seq == 0,
                block: 0,
                status: RunStatus::Ok,
                exit_code: Some(0),
                signal: None,
                started_ns: 1,
                ended_ns: 2,
                metrics: vec![Metric::new("wall_ns", wall, "ns")],
                excluded: None,
                source: None,
                labels: Default::default(),
            };
            store.commit_run(id, &run).unwrap();
        }
        store
            .set_status(id, abperf_model::Status::Complete)
            .unwrap();
        let labels = label::parse_all(&["commit=abc".into()]).unwrap();
        store.set_labels(id, &labels).unwrap();
        assert_eq!(store.labels(id).unwrap(), labels);
        let points = store.history_points("wall_ns").unwrap();
        assert_eq!(points.len(), 1);
        let p = &points[0];
        assert_eq!((p.runs, p.mean), (3, 20.0));
        assert!((p.sd - 10.0).abs() < 1e-9, "{p:?}");
        assert_eq!((p.host.as_str(), p.kernel.as_str()), ("box", "6.1"));
        assert_eq!(p.labels, labels);
        let e = store.history_points("cycles").unwrap_err().to_string();
        assert!(e.contains("wall_ns"), "{e}");
    }
}
