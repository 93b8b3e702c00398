//! Experiments, variants, the schedule, runs and metrics: model values to rows and back.

use super::Store;
use super::insert::{insert_experiment, insert_run_row, insert_slot, insert_variant, to_json};
use abperf_model::error::usage;
use abperf_model::{
    Dataset, Experiment, ExperimentSummary, Kind, NewExperiment, Run, Slot, Status, SummaryValue,
    Variant,
};
use anyhow::Context;
use rusqlite::{OptionalExtension, params};
use serde::Deserialize;
use std::collections::BTreeMap;

/// What `abperf list` counts of experiment `e` (variants, runs done with the samples of micro
/// rounds, runs planned), in SQL that SQLite and PostgreSQL both read the same way.
pub(crate) const LIST_COUNTS: &str =
    "(SELECT count(*) FROM variant v WHERE v.experiment_id = e.id),
     (SELECT count(*) FROM run r WHERE r.experiment_id = e.id)
     + (SELECT coalesce(sum(length(m.cycles) / 8), 0) FROM micro_round m
        JOIN variant v ON v.id = m.variant_id WHERE v.experiment_id = e.id),
     (SELECT count(*) FROM slot s WHERE s.experiment_id = e.id)";

fn from_json<T: for<'de> Deserialize<'de>>(s: &str, what: &str) -> anyhow::Result<T> {
    serde_json::from_str(s).with_context(|| format!("stored {what} is not valid JSON"))
}

/// Insert one run of experiment `exp_id`, its variant found by position; returns its row id.
pub(crate) fn insert_run(tx: &rusqlite::Connection, exp_id: i64, run: &Run) -> anyhow::Result<i64> {
    insert_run_row(tx, exp_id, run)
}

impl Store {
    /// Create an experiment with its variants (positions = order in `variants`) and planned
    /// schedule, in one transaction.
    pub fn create_experiment(
        &mut self,
        exp: &NewExperiment,
        variants: &[Variant],
        schedule: &[Slot],
    ) -> anyhow::Result<i64> {
        self.require(crate::Operation::ExperimentWithoutOwner)?;
        let tx = self.write_tx()?;
        let id = insert_experiment(&tx, exp, Status::Running)?;
        let mut ids = Vec::with_capacity(variants.len());
        for (pos, v) in variants.iter().enumerate() {
            ids.push(insert_variant(&tx, id, pos as i64, v)?);
        }
        for s in schedule {
            let vid = *ids.get(s.variant).with_context(|| {
                format!(
                    "schedule slot {} names variant {} of {}",
                    s.seq,
                    s.variant,
                    ids.len()
                )
            })?;
            insert_slot(&tx, id, vid, s)?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// Commit one finished run of experiment `exp_id` and its metrics in their own transaction.
    /// On SQLite (`backend` dispatches [`Store::commit_run`]).
    pub(crate) fn commit_run_here(&mut self, exp_id: i64, run: &Run) -> anyhow::Result<i64> {
        self.pace_sync(false)?;
        // BEGIN IMMEDIATE and COMMIT as cached statements: parsing them anew for every run
        // (what rusqlite's Transaction does) was ~7% of abperf's own CPU per run (issue 13).
        // The same transaction as before: the run is durable in the WAL when this returns.
        let conn = self.conn();
        conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        let done = insert_run(conn, exp_id, run).and_then(|id| {
            conn.prepare_cached("COMMIT")?.execute([])?;
            Ok(id)
        });
        if done.is_err() && !conn.is_autocommit() {
            // Nothing of a run that failed to commit stays (what dropping a Transaction does).
            let _ = conn.execute_batch("ROLLBACK");
        }
        done
    }

    /// Commit many finished runs in a single transaction, all or none (micro benchmarks store
    /// thousands of samples at once, where a transaction per sample would dominate).
    pub fn commit_runs(&mut self, exp_id: i64, runs: &[Run]) -> anyhow::Result<()> {
        self.require(crate::Operation::ManyRuns)?;
        let tx = self.write_tx()?;
        for run in runs {
            insert_run(&tx, exp_id, run)?;
        }
        tx.commit()?;
        Ok(())
    }

    pub fn set_status(&mut self, id: i64, status: Status) -> anyhow::Result<()> {
        self.pace_sync(true)?;
        self.conn().execute(
            "UPDATE experiment SET status = ?1 WHERE id = ?2",
            params![status.as_str(), id],
        )?;
        self.mirror("experiment", "id = ?1", id)
    }

    /// Record what a knob held before abperf wrote it (kept with every variant that sets it).
    pub fn set_knob_originals(
        &mut self,
        id: i64,
        originals: &BTreeMap<String, String>,
    ) -> anyhow::Result<()> {
        let rows: Vec<(i64, String)> = {
            let mut stmt = self
                .conn()
                .prepare("SELECT id, knobs FROM variant WHERE experiment_id = ?1")?;
            stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?
        };
        let tx = self.write_tx()?;
        for (vid, knobs) in rows {
            let mut knobs: Vec<abperf_model::KnobSetting> = from_json(&knobs, "knobs")?;
            for k in &mut knobs {
                if let Some(o) = originals.get(&k.path) {
                    k.original = Some(o.clone());
                }
            }
            tx.execute(
                "UPDATE variant SET knobs = ?1 WHERE id = ?2",
                params![to_json(&knobs), vid],
            )?;
        }
        tx.commit()?;
        self.mirror("variant", "experiment_id = ?1", id)
    }

    /// Turn a user's experiment reference (`latest` or a number) into an existing id.
    pub fn resolve_id(&self, reference: &str) -> anyhow::Result<i64> {
        let id = if reference == "latest" {
            self.conn()
                .query_row("SELECT max(id) FROM experiment", [], |r| {
                    r.get::<_, Option<i64>>(0)
                })?
                .with_context(|| {
                    format!(
                        "'latest': the store {} holds no experiment yet",
                        self.path().display()
                    )
                })?
        } else {
            reference.parse::<i64>().map_err(|_| {
                usage(format!(
                    "experiment id '{reference}': expected a number or 'latest'"
                ))
            })?
        };
        let exists: Option<i64> = self
            .conn()
            .query_row("SELECT id FROM experiment WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?;
        exists.with_context(|| format!("no experiment {id} in the store {}", self.path().display()))
    }

    pub fn experiment(&self, id: i64) -> anyhow::Result<Experiment> {
        let row = self.conn().query_row(
            "SELECT id, name, kind, created, command_line, design, seed, environment, status,
             labels FROM experiment WHERE id = ?1",
            [id],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, Option<String>>(6)?,
                    r.get::<_, String>(7)?,
                    r.get::<_, String>(8)?,
                    r.get::<_, Option<String>>(9)?,
                ))
            },
        );
        let (id, name, kind, created, cmd, design, seed, env, status, labels) =
            row.optional()?.with_context(|| {
                format!("no experiment {id} in the store {}", self.path().display())
            })?;
        Ok(Experiment {
            id,
            name,
            kind: Kind::parse(&kind).with_context(|| {
                format!("experiment {id} has kind '{kind}', unknown to this abperf")
            })?,
            created,
            // A row of an older abperf may hold a password: never shown.
            command_line: crate::redact::redacted_args(from_json::<Vec<String>>(
                &cmd,
                "command line",
            )?),
            design: from_json(&design, "design")?,
            seed: seed.and_then(|s| s.parse().ok()),
            environment: from_json(&env, "environment")?,
            status: Status::parse(&status),
            labels: abperf_model::label::from_stored(id, labels.as_deref())
                .map_err(anyhow::Error::msg)?,
        })
    }

    /// The variants of experiment `id` in position order, with their per-variant summaries.
    pub fn variants(&self, id: i64) -> anyhow::Result<Vec<Variant>> {
        self.fill_but_runs(id)?;
        let mut stmt = self.conn().prepare_cached(
            "SELECT id, name, command, parameters, knobs, workload FROM variant
             WHERE experiment_id = ?1 ORDER BY position",
        )?;
        let rows = stmt.query_map([id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, Option<String>>(5)?,
            ))
        })?;
        let mut out = Vec::new();
        let mut row_ids = Vec::new();
        for row in rows {
            let (vid, name, command, params, knobs, workload) = row?;
            row_ids.push(vid);
            out.push(Variant {
                name,
                command,
                parameters: from_json(&params, "parameters")?,
                knobs: from_json(&knobs, "knobs")?,
                summary: BTreeMap::new(),
                boot: None,
                workload: workload.map(|w| from_json(&w, "workload")).transpose()?,
                provenance: None,
            });
        }
        super::boots::fill_variant_boots(self.conn(), id, &mut out)?;
        super::provenance::fill_variants(self.conn(), id, &mut out)?;
        let mut stmt = self.conn().prepare_cached(
            "SELECT s.variant_id, s.name, s.value, s.unit FROM import_variant_summary s
             JOIN variant v ON v.id = s.variant_id WHERE v.experiment_id = ?1",
        )?;
        let rows = stmt.query_map([id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, f64>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?;
        for row in rows {
            let (vid, name, value, unit) = row?;
            if let Some(i) = row_ids.iter().position(|&v| v == vid) {
                out[i].summary.insert(name, SummaryValue { value, unit });
            }
        }
        Ok(out)
    }

    pub fn schedule(&self, id: i64) -> anyhow::Result<Vec<Slot>> {
        self.fill(id)?;
        let mut stmt = self.conn().prepare(
            "SELECT s.seq, v.position, s.block, s.warmup FROM slot s JOIN variant v ON v.id = s.variant_id
             WHERE s.experiment_id = ?1 ORDER BY s.seq",
        )?;
        let rows = stmt.query_map([id], |r| {
            Ok(Slot {
                seq: r.get(0)?,
                variant: r.get::<_, i64>(1)? as usize,
                block: r.get(2)?,
                warmup: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Sequence numbers of the runs stored so far.
    pub fn done_seqs(&self, id: i64) -> anyhow::Result<std::collections::BTreeSet<u32>> {
        self.fill(id)?;
        let mut stmt = self
            .conn()
            .prepare("SELECT seq FROM run WHERE experiment_id = ?1")?;
        let rows = stmt.query_map([id], |r| r.get::<_, u32>(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Every stored run of experiment `id` in schedule order, with its metrics and provenance,
    /// and the number of runs planned, read from this store (`backend` dispatches
    /// [`Store::runs`]).
    pub(crate) fn runs_here(&self, id: i64) -> anyhow::Result<(Vec<Run>, usize)> {
        self.fill(id)?;
        use super::run_rows::{self, Listed};
        let mut listed = Listed::default();
        let sql = format!(
            "SELECT {} {}",
            run_rows::SELECT_LISTED,
            run_rows::LISTED_FROM
        );
        let mut stmt = self.conn().prepare(&sql)?;
        for row in stmt.query_map([id], |r| run_rows::read_listed(r))? {
            listed.run(row?);
        }
        // The metrics without a column of their own, by run and place.
        let sql = format!("SELECT {} {}", run_rows::SELECT_EXTRA, run_rows::EXTRA_FROM);
        let mut mstmt = self.conn().prepare(&sql)?;
        for m in mstmt.query_map([id], |r| run_rows::read_extra(r))? {
            listed.extra(m?);
        }
        super::run_labels::fill(self.conn(), id, &mut listed)?;
        let planned: i64 = self.conn().query_row(
            "SELECT count(*) FROM slot WHERE experiment_id = ?1",
            [id],
            |r| r.get(0),
        )?;
        Ok((listed.finish()?, usize::try_from(planned).unwrap_or(0)))
    }

    /// Experiment `id` with its variants and every run: what every reader of results gets.
    pub fn load(&self, id: i64) -> anyhow::Result<Dataset> {
        self.fill_but_runs(id)?;
        let exp = self.experiment(id)?;
        let source = format!(
            "experiment {id} ({}) in {}",
            exp.name,
            self.path().display()
        );
        let variants = self.variants(id)?;
        let (mut runs, planned) = self.runs_planned(id)?;
        if exp.kind == Kind::Micro {
            // Samples stored as rounds (table micro_round); the timer's rate is in the design.
            let hz = exp.design["timer"]["hz"].as_f64().unwrap_or(f64::NAN);
            runs.extend(self.micro_runs(id, &variants, hz)?);
        }
        let mut ds = Dataset::new(vec![exp], variants, runs, source);
        ds.planned = planned.max(ds.runs.len());
        ds.boots = self.boots(id)?;
        Ok(ds)
    }

    pub fn list(&self) -> anyhow::Result<Vec<ExperimentSummary>> {
        let mut stmt = self.conn().prepare(&format!(
            "SELECT e.id, e.name, e.kind, e.created, e.status, {LIST_COUNTS}
             FROM experiment e ORDER BY e.id"
        ))?;
        let rows = stmt.query_map([], |r| {
            Ok(ExperimentSummary {
                id: r.get(0)?,
                name: r.get(1)?,
                kind: r.get(2)?,
                created: r.get(3)?,
                status: Status::parse(&r.get::<_, String>(4)?),
                variants: r.get(5)?,
                runs_done: r.get(6)?,
                runs_planned: r.get(7)?,
            })
        })?;
        let mut list: Vec<ExperimentSummary> = rows.collect::<Result<_, _>>()?;
        // A PostgreSQL store's working copy holds the content of the experiments read so far:
        // the server counts the rest.
        if let Some(counts) = self.server_list_counts()? {
            for e in &mut list {
                let [variants, done, planned] = counts.get(&e.id).copied().unwrap_or_default();
                (e.variants, e.runs_done, e.runs_planned) = (variants, done, planned);
            }
        }
        Ok(list)
    }

    /// Delete an experiment and everything under it, on SQLite (`backend` dispatches
    /// [`Store::delete`]).
    pub(crate) fn delete_here(&mut self, id: i64) -> anyhow::Result<()> {
        let n = self
            .conn()
            .execute("DELETE FROM experiment WHERE id = ?1", [id])?;
        if n == 0 {
            anyhow::bail!("no experiment {id} in the store {}", self.path().display());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::Metric;
    use abperf_model::{Direction, RunStatus};

    fn sample(store: &mut Store) -> i64 {
        let exp = NewExperiment {
            name: "t".into(),
            kind: Kind::Run,
            command_line: vec!["abperf".into(), "run".into()],
            design: serde_json::json!({"order": "abba"}),
            seed: Some(u64::MAX),
            environment: serde_json::json!({}),
        };
        let v = |n: &str| Variant {
            command: Some(format!("echo {n}")),
            knobs: vec![abperf_model::KnobSetting {
                path: "/tmp/k".into(),
                value: n.into(),
                original: None,
            }],
            ..Variant::named(n)
        };
        let sched = [
            Slot {
                seq: 0,
                variant: 0,
                block: 0,
                warmup: false,
            },
            Slot {
                seq: 1,
                variant: 1,
                block: 0,
                warmup: false,
            },
        ];
        store
            .create_experiment(&exp, &[v("a"), v("b")], &sched)
            .unwrap()
    }

    #[test]
    fn round_trip_and_cascade_delete() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("sub/x.db")).unwrap();
        let id = sample(&mut store);
        assert_eq!(store.resolve_id("latest").unwrap(), id);
        let exp = store.experiment(id).unwrap();
        assert_eq!(exp.seed, Some(u64::MAX));
        assert_eq!(store.schedule(id).unwrap().len(), 2);
        store
            .commit_run(
                id,
                &Run {
                    variant: 1,
                    seq: 1,
                    warmup: false,
                    block: 0,
                    status: RunStatus::Ok,
                    exit_code: Some(0),
                    signal: None,
                    started_ns: 1,
                    ended_ns: 2,
                    metrics: vec![Metric::new("wall_ns", 1.5, "ns")],
                    excluded: None,
                    source: None,
                    labels: Default::default(),
                },
            )
            .unwrap();
        let runs = store.runs(id).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].variant, 1);
        assert_eq!(runs[0].value("wall_ns"), Some(1.5));
        let mut orig = BTreeMap::new();
        orig.insert("/tmp/k".to_string(), "old".to_string());
        store.set_knob_originals(id, &orig).unwrap();
        assert_eq!(
            store.variants(id).unwrap()[1].knobs[0].original.as_deref(),
            Some("old")
        );
        store.delete(id).unwrap();
        assert!(store.experiment(id).is_err());
        let left: i64 = store
            .conn()
            .query_row("SELECT count(*) FROM metric", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0);
    }

    #[test]
    fn declared_directions_and_workloads_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("w.db")).unwrap();
        let exp = NewExperiment {
            name: "w".into(),
            kind: Kind::Run,
            command_line: vec![],
            design: serde_json::json!({}),
            seed: Some(7),
            environment: serde_json::json!({}),
        };
        let w = abperf_model::WorkloadRef {
            name: "page-aging".into(),
            version: 3,
            params: BTreeMap::from([("op".to_string(), "read".to_string())]),
            per_run_seed: true,
        };
        let v = Variant {
            command: Some("@page-aging:op=read".into()),
            workload: Some(w.clone()),
            ..Variant::named("a")
        };
        let sched = [Slot {
            seq: 0,
            variant: 0,
            block: 0,
            warmup: false,
        }];
        let id = store
            .create_experiment(&exp, &[v, Variant::named("b")], &sched)
            .unwrap();
        let m = vec![
            Metric::new("wall_ns", 1.0, "ns"),
            Metric::new("pages_scanned", 9.0, "pages").declared(Direction::Count),
        ];
        store.commit_run(id, &Run::ok(0, 0, m.clone())).unwrap();
        assert_eq!(store.runs(id).unwrap()[0].metrics, m);
        let vs = store.variants(id).unwrap();
        assert_eq!(vs[0].workload, Some(w));
        assert_eq!(vs[1].workload, None);
        let ds = store.load(id).unwrap();
        assert_eq!(ds.direction("pages_scanned"), Direction::Count);
        assert_eq!(ds.direction("wall_ns"), Direction::LowerIsBetter);
    }

    #[test]
    fn duplicate_seq_is_refused_and_nothing_half_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("x.db")).unwrap();
        let id = sample(&mut store);
        let run = Run {
            variant: 0,
            seq: 0,
            warmup: false,
            block: 0,
            status: RunStatus::Ok,
            exit_code: Some(0),
            signal: None,
            started_ns: 1,
            ended_ns: 2,
            metrics: vec![
                Metric::new("wall_ns", 1.0, "ns"),
                Metric::new("bad", f64::NAN, "ns"),
            ],
            excluded: None,
            source: None,
            labels: Default::default(),
        };
        assert!(store.commit_run(id, &run).is_err());
        assert!(store.runs(id).unwrap().is_empty());
    }

    #[test]
    fn garbage_file_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("junk.db");
        std::fs::write(&p, vec![0x55u8; 8192]).unwrap();
        let err = format!("{:#}", Store::open(&p).err().unwrap());
        assert!(
            err.contains("junk.db") && err.contains("not an abperf"),
            "{err}"
        );
    }
}
