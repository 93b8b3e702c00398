//! What `abperf history` reads: every experiment's labels and environment (its row) and each
//! variant's count, mean and spread of one metric. For the metrics every run has (`run` and
//! `import` experiments) these are counted by SQL where the runs are (SQLite, or the PostgreSQL
//! server: no run is read into this process); for a micro metric (`cycles`, `ns`, ...) each
//! `micro` experiment is read and its configurations summarised round by round (the rounds are
//! a micro comparison's replicates). Labels are written by [`Store::set_labels`] (migration 17)
//! and by an import (`ImportTarget::New`).

use super::Store;
use abperf_model::Kind;
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

/// The metrics of a micro experiment's samples (`abperf_model::micro::sample_run`).
pub const MICRO_METRICS: [&str; 4] = ["cycles", "ns", "core_cycles", "cycles_per_page"];

/// The SQL of [`SUMMARY`] for `metric`, which must be one of the fixed run columns.
pub(crate) fn summary_sql(metric: &str) -> anyhow::Result<String> {
    if !crate::FIXED.iter().any(|(name, _)| *name == metric) {
        let names: Vec<&str> = crate::FIXED.iter().map(|(n, _)| *n).collect();
        anyhow::bail!(
            "--metric {metric}: history reads one of the metrics every run has: {} (run and \
             import experiments), or of micro's samples: {} (micro experiments)",
            names.join(", "),
            MICRO_METRICS.join(", ")
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

    /// Every variant of every experiment with `metric`, as history points, in experiment then
    /// variant order: `run` and `import` experiments for a fixed run column, `micro` ones for a
    /// micro metric ([`MICRO_METRICS`]). Experiments still running are left out.
    pub fn history_points(&self, metric: &str) -> anyhow::Result<Vec<HistoryPoint>> {
        if MICRO_METRICS.contains(&metric) {
            return self.micro_history_points(metric);
        }
        let sql = summary_sql(metric)?;
        let sums = match self.server_summaries(&sql)? {
            Some(s) => s,
            None => local_summaries(self.conn(), &sql)?,
        };
        let rows = self.history_rows(&[Kind::Run, Kind::Import])?;
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
                kind: row.kind,
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

    /// The points of the micro experiments: each configuration's mean of `metric` over its
    /// rounds' means, the rounds as replicates (its standard deviation is the rounds').
    fn micro_history_points(&self, metric: &str) -> anyhow::Result<Vec<HistoryPoint>> {
        let mut out = Vec::new();
        for (id, row) in self.history_rows(&[Kind::Micro])? {
            let data = self.load(id)?;
            for (pos, v) in data.variants.iter().enumerate() {
                let mut rounds: BTreeMap<i32, (f64, f64)> = BTreeMap::new();
                for r in data.runs.iter().filter(|r| r.variant == pos && r.counts()) {
                    if let Some(x) = r.value(metric).filter(|x| x.is_finite()) {
                        let e = rounds.entry(r.block).or_default();
                        e.0 += x;
                        e.1 += 1.0;
                    }
                }
                let means: Vec<f64> = rounds.values().map(|(s, n)| s / n).collect();
                if means.is_empty() {
                    continue;
                }
                let n = means.len() as f64;
                let mean = means.iter().sum::<f64>() / n;
                let var = if means.len() > 1 {
                    means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (n - 1.0)
                } else {
                    0.0
                };
                out.push(HistoryPoint {
                    experiment: id,
                    kind: row.kind,
                    created: row.created.clone(),
                    labels: row.labels.clone(),
                    host: row.host.clone(),
                    kernel: row.kernel.clone(),
                    variant: v.name.clone(),
                    command: String::new(),
                    metric: metric.to_string(),
                    runs: means.len() as u64,
                    mean,
                    sd: var.sqrt(),
                });
            }
        }
        Ok(out)
    }

    /// The experiments' rows that history needs (of `kinds`, not running), by id.
    fn history_rows(&self, kinds: &[Kind]) -> anyhow::Result<BTreeMap<i64, Row>> {
        let mut stmt = self.conn().prepare(
            "SELECT id, created, labels, environment, kind FROM experiment \
             WHERE status <> 'running' ORDER BY id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
            ))
        })?;
        let mut out = BTreeMap::new();
        for row in rows {
            let (id, created, labels, env, kind) = row?;
            let Some(kind) = Kind::parse(&kind).filter(|k| kinds.contains(k)) else {
                continue;
            };
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
                    kind,
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
    kind: Kind,
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
        let e = store
            .history_points("minor_faults")
            .unwrap_err()
            .to_string();
        assert!(e.contains("wall_ns") && e.contains("cycles"), "{e}");
        assert!(store.history_points("cycles").unwrap().is_empty());
    }

    #[test]
    fn a_micro_configuration_is_a_point_over_its_rounds() {
        use abperf_model::micro::{MicroRound, RoundProbe};
        let mut store = Store::open_file(std::path::Path::new(":memory:")).unwrap();
        let exp = NewExperiment {
            name: "micro".into(),
            kind: Kind::Micro,
            command_line: vec![],
            design: serde_json::json!({"timer": {"hz": 1e9}}),
            seed: None,
            environment: serde_json::json!({"hostname": "box"}),
        };
        let id = store
            .create_experiment(&exp, &[Variant::named("syscall/getppid")], &[])
            .unwrap();
        // Three rounds with means 10, 20 and 30 (the second of unequal samples).
        let round = |round: u32, cycles: Vec<f64>| MicroRound {
            variant: 0,
            round,
            invocation: 0,
            probe: RoundProbe {
                started_ns: 1,
                ticks_per_core_cycle: 1.0,
                adds_per_cycle: f64::NAN,
            },
            cycles,
        };
        let rounds = [
            round(0, vec![9.0, 11.0]),
            round(1, vec![15.0, 25.0, 20.0]),
            round(2, vec![30.0, f64::NAN]),
        ];
        store.set_micro_rounds(id, &rounds).unwrap();
        store
            .set_status(id, abperf_model::Status::Complete)
            .unwrap();
        store
            .set_labels(id, &label::parse_all(&["commit=abc".into()]).unwrap())
            .unwrap();
        assert!(store.history_points("wall_ns").unwrap().is_empty());
        let points = store.history_points("cycles").unwrap();
        assert_eq!(points.len(), 1);
        let p = &points[0];
        assert_eq!((p.kind, p.runs, p.mean), (Kind::Micro, 3, 20.0));
        assert!((p.sd - 10.0).abs() < 1e-9, "{p:?}");
        assert_eq!(p.labels["commit"], "abc");
        assert_eq!(store.history_points("ns").unwrap()[0].mean, 20.0);
    }
}
