//! Imported runs: written all at once in one transaction (a malformed file stores nothing), with
//! where each run came from (format, file, line) and whether it is a tool's summary of several
//! repeats (`perf stat -r N` prints only means).
//!
//! Own tables, created by migration 3 (`SCHEMA`, listed in `schema.rs`):
//! - `import_run`: run_id -> format, file, line, summary flag, repeats.
//! - `import_variant_summary`: per-variant means a tool reports without per-run values
//!   (hyperfine's user/system time), never copied onto runs.

use super::experiments::{insert_experiment, insert_run_row, insert_slot, insert_variant};
use super::{Metric, NewExperiment, NewRun, NewVariant, RunStatus, Slot, Status, Store};
use anyhow::Context;
use rusqlite::{OptionalExtension, params};
use std::collections::BTreeMap;

/// Migration 3: where imported runs came from, and per-variant figures a tool reports only as
/// means.
pub(super) const SCHEMA: &str = "
        CREATE TABLE IF NOT EXISTS import_run (
            run_id     INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
            format     TEXT NOT NULL,           -- time | perf-stat | hyperfine
            file       TEXT NOT NULL,
            line       INTEGER NOT NULL,        -- 1-based line where the run's record starts
            summary    INTEGER NOT NULL,        -- 1: the row is a mean over repeats
            repeats    INTEGER                  -- how many, when the input says
        );
        CREATE TABLE IF NOT EXISTS import_variant_summary (
            variant_id INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
            name       TEXT NOT NULL,           -- user_ns_mean, sys_ns_mean
            value      REAL NOT NULL,
            unit       TEXT NOT NULL,
            PRIMARY KEY (variant_id, name)
        );";

/// Per-variant means: name -> (value, unit).
pub type SummaryMap = BTreeMap<String, (f64, String)>;

/// Where the imported runs go.
#[derive(Debug, Clone)]
pub enum ImportTarget {
    /// A new experiment (kind `import`).
    New(NewExperiment),
    /// Append to an existing experiment: variants are matched by name, new ones added at the end,
    /// runs get schedule numbers after the last one.
    Existing(i64),
}

/// A variant to import into, with the means its tool reported only per variant.
#[derive(Debug, Clone)]
pub struct ImportVariant {
    pub variant: NewVariant,
    /// name -> (value, unit)
    pub summary: SummaryMap,
}

/// One imported run.
#[derive(Debug, Clone)]
pub struct ImportRun {
    /// Index into the `variants` slice given to [`Store::import_runs`].
    pub variant: usize,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub metrics: Vec<Metric>,
    pub source: ImportSource,
}

/// Provenance of one imported run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ImportSource {
    pub format: String,
    pub file: String,
    pub line: u32,
    /// The stored row is a mean over repeats, not a single run.
    pub summary: bool,
    pub repeats: Option<u32>,
}

/// What [`Store::import_runs`] wrote.
#[derive(Debug, Clone)]
pub struct ImportOutcome {
    pub experiment_id: i64,
    /// Variant names that did not exist before.
    pub new_variants: Vec<String>,
    pub run_ids: Vec<i64>,
}

impl Store {
    /// Write an import in a single transaction: the experiment (if new), variants, schedule slots,
    /// runs, metrics and provenance. On any error nothing is stored.
    pub fn import_runs(
        &mut self,
        target: &ImportTarget,
        variants: &[ImportVariant],
        runs: &[ImportRun],
    ) -> anyhow::Result<ImportOutcome> {
        let tx = self.conn_mut().transaction()?;
        let exp_id = match target {
            ImportTarget::New(exp) => insert_experiment(&tx, exp, Status::Complete)?,
            ImportTarget::Existing(id) => {
                let found: Option<i64> = tx
                    .query_row("SELECT id FROM experiment WHERE id = ?1", [id], |r| {
                        r.get(0)
                    })
                    .optional()?;
                found.with_context(|| format!("no experiment {id} in the store"))?
            }
        };
        let mut next_pos: i64 = tx.query_row(
            "SELECT coalesce(max(position) + 1, 0) FROM variant WHERE experiment_id = ?1",
            [exp_id],
            |r| r.get(0),
        )?;
        let mut vids = Vec::with_capacity(variants.len());
        let mut new_variants = Vec::new();
        for iv in variants {
            let v = &iv.variant;
            let existing: Option<i64> = tx
                .query_row(
                    "SELECT id FROM variant WHERE experiment_id = ?1 AND name = ?2",
                    params![exp_id, v.name],
                    |r| r.get(0),
                )
                .optional()?;
            let vid = match existing {
                Some(id) => id,
                None => {
                    let vid = insert_variant(&tx, exp_id, next_pos, v)?;
                    next_pos += 1;
                    new_variants.push(v.name.clone());
                    vid
                }
            };
            for (name, (value, unit)) in &iv.summary {
                if !value.is_finite() {
                    anyhow::bail!("variant '{}': {name} is not a finite number", v.name);
                }
                tx.execute(
                    "INSERT OR REPLACE INTO import_variant_summary (variant_id, name, value, unit)
                     VALUES (?1, ?2, ?3, ?4)",
                    params![vid, name, value, unit],
                )?;
            }
            vids.push(vid);
        }
        let mut seq: i64 = tx.query_row(
            "SELECT max(coalesce((SELECT max(seq) + 1 FROM run WHERE experiment_id = ?1), 0),
                        coalesce((SELECT max(seq) + 1 FROM slot WHERE experiment_id = ?1), 0))",
            [exp_id],
            |r| r.get(0),
        )?;
        let mut run_ids = Vec::with_capacity(runs.len());
        {
            let mut source = tx.prepare(
                "INSERT INTO import_run (run_id, format, file, line, summary, repeats) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for r in runs {
                let where_ = || format!("{}:{}", r.source.file, r.source.line);
                let vid = *vids
                    .get(r.variant)
                    .with_context(|| format!("{}: no variant #{}", where_(), r.variant))?;
                let slot = Slot {
                    seq: seq as u32,
                    variant: r.variant,
                    block: 0,
                    warmup: false,
                };
                insert_slot(&tx, exp_id, vid, &slot)?;
                let run = NewRun {
                    experiment_id: exp_id,
                    variant: r.variant,
                    seq: seq as u32,
                    warmup: false,
                    status: r.status,
                    exit_code: r.exit_code,
                    signal: r.signal,
                    started_ns: 0,
                    ended_ns: 0,
                    metrics: r.metrics.clone(),
                };
                let run_id = insert_run_row(&tx, vid, &run).with_context(where_)?;
                source.execute(params![
                    run_id,
                    r.source.format,
                    r.source.file,
                    r.source.line,
                    r.source.summary,
                    r.source.repeats
                ])?;
                run_ids.push(run_id);
                seq += 1;
            }
        }
        tx.commit()?;
        Ok(ImportOutcome {
            experiment_id: exp_id,
            new_variants,
            run_ids,
        })
    }

    /// Provenance of the imported runs of an experiment, by run id (empty when nothing was
    /// imported).
    pub fn import_sources(
        &self,
        experiment_id: i64,
    ) -> anyhow::Result<BTreeMap<i64, ImportSource>> {
        let mut out = BTreeMap::new();
        let mut stmt = self.conn().prepare(
            "SELECT i.run_id, i.format, i.file, i.line, i.summary, i.repeats
             FROM import_run i JOIN run r ON r.id = i.run_id WHERE r.experiment_id = ?1",
        )?;
        let rows = stmt.query_map([experiment_id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                ImportSource {
                    format: r.get(1)?,
                    file: r.get(2)?,
                    line: r.get(3)?,
                    summary: r.get(4)?,
                    repeats: r.get(5)?,
                },
            ))
        })?;
        for row in rows {
            let (id, s) = row?;
            out.insert(id, s);
        }
        Ok(out)
    }

    /// Per-variant means from imports, by variant position: name -> (value, unit).
    pub fn import_variant_summaries(
        &self,
        experiment_id: i64,
    ) -> anyhow::Result<BTreeMap<usize, SummaryMap>> {
        let mut out: BTreeMap<usize, SummaryMap> = BTreeMap::new();
        let mut stmt = self.conn().prepare(
            "SELECT v.position, s.name, s.value, s.unit FROM import_variant_summary s
             JOIN variant v ON v.id = s.variant_id WHERE v.experiment_id = ?1",
        )?;
        let rows = stmt.query_map([experiment_id], |r| {
            Ok((
                r.get::<_, i64>(0)? as usize,
                r.get::<_, String>(1)?,
                r.get::<_, f64>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?;
        for row in rows {
            let (pos, name, value, unit) = row?;
            out.entry(pos).or_default().insert(name, (value, unit));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(name: &str) -> ImportVariant {
        ImportVariant {
            variant: NewVariant {
                name: name.into(),
                command: None,
                parameters: BTreeMap::new(),
                knobs: Vec::new(),
            },
            summary: BTreeMap::new(),
        }
    }

    fn run(variant: usize, line: u32, value: f64) -> ImportRun {
        ImportRun {
            variant,
            status: RunStatus::Ok,
            exit_code: None,
            signal: None,
            metrics: vec![Metric::new("user_ns", value, "ns")],
            source: ImportSource {
                format: "time".into(),
                file: "f".into(),
                line,
                summary: false,
                repeats: None,
            },
        }
    }

    fn new_exp() -> ImportTarget {
        ImportTarget::New(NewExperiment {
            name: "imp".into(),
            kind: "import".into(),
            command_line: vec!["abperf".into()],
            design: serde_json::json!({"order": "imported"}),
            seed: None,
            environment: serde_json::json!({}),
        })
    }

    #[test]
    fn import_new_then_append() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("x.db")).unwrap();
        let mut vs = vec![variant("n"), variant("y")];
        vs[1]
            .summary
            .insert("user_ns_mean".into(), (5.0, "ns".into()));
        let out = store
            .import_runs(&new_exp(), &vs, &[run(0, 1, 1.0), run(1, 2, 2.0)])
            .unwrap();
        let id = out.experiment_id;
        assert_eq!(out.new_variants, ["n", "y"]);
        let out2 = store
            .import_runs(
                &ImportTarget::Existing(id),
                &[variant("y"), variant("z")],
                &[run(0, 9, 3.0), run(1, 10, 4.0)],
            )
            .unwrap();
        assert_eq!(out2.new_variants, ["z"]);
        let runs = store.runs(id).unwrap();
        assert_eq!(
            runs.iter().map(|r| (r.variant, r.seq)).collect::<Vec<_>>(),
            [(0, 0), (1, 1), (1, 2), (2, 3)]
        );
        assert_eq!(store.schedule(id).unwrap().len(), 4);
        let src = store.import_sources(id).unwrap();
        assert_eq!(src[&runs[2].id].line, 9);
        assert_eq!(
            store.import_variant_summaries(id).unwrap()[&1]["user_ns_mean"].0,
            5.0
        );
        assert_eq!(store.experiment(id).unwrap().kind, "import");
    }

    #[test]
    fn a_bad_run_stores_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("x.db")).unwrap();
        let err = store
            .import_runs(
                &new_exp(),
                &[variant("n")],
                &[run(0, 1, 1.0), run(0, 2, f64::NAN)],
            )
            .unwrap_err();
        assert!(format!("{err:#}").contains("f:2"), "{err:#}");
        assert!(store.list().unwrap().is_empty());
        assert!(store.import_sources(1).unwrap().is_empty());
    }
}
