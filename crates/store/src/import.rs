//! Imported runs: written all at once in one transaction (a malformed file stores nothing), with
//! where each run came from (format, file, line) and whether it is a tool's summary of several
//! repeats (`perf stat -r N` prints only means). On a PostgreSQL store a new experiment is built
//! here in memory and written there whole ([`import_to_server`]); runs added to an experiment
//! there go through a working copy (`import_on_server`).
//!
//! Own tables, created by migration 3 (`SCHEMA`, listed in `schema.rs`):
//! - `import_run`: run_id -> format, file, line, summary flag, repeats.
//! - `import_variant_summary`: per-variant means a tool reports without per-run values
//!   (hyperfine's user/system time), never copied onto runs.

use super::Store;
use super::copy_tables::Key;
use super::insert::{
    insert_experiment, insert_run_row, insert_slot, insert_summaries, insert_variant,
};
use super::postgres::{Pg, Schema};
use abperf_model::{NewExperiment, Run, Slot, Status, Variant};
use anyhow::Context;
use rusqlite::{OptionalExtension, params};
use std::path::Path;

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

/// Where the imported runs go.
#[derive(Debug, Clone)]
pub enum ImportTarget {
    /// A new experiment (kind `import`).
    New(NewExperiment),
    /// Append to an existing experiment: variants are matched by name, new ones added at the end,
    /// runs get schedule numbers after the last one.
    Existing(i64),
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
    /// Write an import in a single transaction: the experiment (if new), variants with their
    /// per-variant summaries, schedule slots, runs, metrics and provenance. `Run::variant` indexes
    /// `variants`; `Run::seq` is replaced by the next free schedule number. On any error nothing
    /// is stored. On a working copy of a PostgreSQL store only `ImportTarget::Existing` is
    /// taken: the rows go to the server in one transaction (`import_on_server`).
    pub fn import_runs(
        &mut self,
        target: &ImportTarget,
        variants: &[Variant],
        runs: &[Run],
    ) -> anyhow::Result<ImportOutcome> {
        if self.on_server() {
            return match target {
                ImportTarget::Existing(id) => self.import_on_server(*id, variants, runs),
                // A new experiment goes to a server whole, without a working copy.
                ImportTarget::New(_) => Err(super::not_built_on_server(
                    self.path(),
                    "import into a new experiment through a working copy (`import_to_server` writes one)",
                )),
            };
        }
        let tx = self.write_tx()?;
        let out = import_in(&tx, target, variants, runs)?;
        tx.commit()?;
        Ok(out)
    }
}

/// [`Store::import_runs`] in the caller's transaction (not committed here).
pub(crate) fn import_in(
    tx: &rusqlite::Transaction,
    target: &ImportTarget,
    variants: &[Variant],
    runs: &[Run],
) -> anyhow::Result<ImportOutcome> {
    let exp_id = match target {
        ImportTarget::New(exp) => insert_experiment(tx, exp, Status::Complete)?,
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
    let mut positions = Vec::with_capacity(variants.len());
    let mut new_variants = Vec::new();
    for v in variants {
        let existing: Option<(i64, i64)> = tx
            .query_row(
                "SELECT id, position FROM variant WHERE experiment_id = ?1 AND name = ?2",
                params![exp_id, v.name],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let (vid, pos) = match existing {
            Some((id, pos)) => {
                insert_summaries(tx, id, v)?;
                (id, pos)
            }
            None => {
                let vid = insert_variant(tx, exp_id, next_pos, v)?;
                next_pos += 1;
                new_variants.push(v.name.clone());
                (vid, next_pos - 1)
            }
        };
        vids.push(vid);
        positions.push(pos as usize);
    }
    let seq: i64 = tx.query_row(
        "SELECT max(coalesce((SELECT max(seq) + 1 FROM run WHERE experiment_id = ?1), 0),
                    coalesce((SELECT max(seq) + 1 FROM slot WHERE experiment_id = ?1), 0))",
        [exp_id],
        |r| r.get(0),
    )?;
    let mut run_ids = Vec::with_capacity(runs.len());
    for (seq, r) in (seq..).zip(runs) {
        let where_ = || match &r.source {
            Some(s) => format!("{}:{}", s.file, s.line),
            None => format!("run {}", r.seq),
        };
        let vid = *vids
            .get(r.variant)
            .with_context(|| format!("{}: no variant #{}", where_(), r.variant))?;
        let slot = Slot {
            seq: seq as u32,
            variant: positions[r.variant],
            block: r.block,
            warmup: r.warmup,
        };
        insert_slot(tx, exp_id, vid, &slot)?;
        let run = Run {
            seq: seq as u32,
            variant: positions[r.variant],
            ..r.clone()
        };
        let run_id = insert_run_row(tx, exp_id, &run).with_context(where_)?;
        run_ids.push(run_id);
    }
    Ok(ImportOutcome {
        experiment_id: exp_id,
        new_variants,
        run_ids,
    })
}

/// Write an import into the PostgreSQL store `path` (a DSN) as a new experiment: built exactly
/// as [`Store::import_runs`] builds it, in an in-memory SQLite store, then written to the server
/// whole in one transaction by the writer `abperf store copy` uses (`Pg::write_experiment`),
/// under the ids the server gives (returned). On any error nothing is stored there. Runs added to
/// an experiment stored there go through a working copy ([`Store::import_runs`] on a store
/// opened with `Store::open_resolved_for_taking_over`).
pub fn import_to_server(
    path: &Path,
    exp: &NewExperiment,
    variants: &[Variant],
    runs: &[Run],
) -> anyhow::Result<ImportOutcome> {
    let dsn = path
        .to_str()
        .filter(|_| super::names_a_server(path))
        .with_context(|| format!("{} is not a PostgreSQL store", path.display()))?;
    let mut local = Store::open(Path::new(":memory:"))?;
    let built = local.import_runs(&ImportTarget::New(exp.clone()), variants, runs)?;
    let content = local.read_content(built.experiment_id)?;
    let mut pg = Pg::open(dsn, Schema::Make)?;
    let shown = pg.shown().to_string();
    let ids = pg
        .write_experiment(&content, &|| false, None)
        .with_context(|| format!("storing the import in the PostgreSQL store {shown}"))?
        .context("the import was stopped")?;
    let id_of = |key: Key, old: i64| super::on_server::new_id(&ids, key, old);
    Ok(ImportOutcome {
        experiment_id: id_of(Key::Experiment, built.experiment_id)?,
        new_variants: built.new_variants,
        run_ids: built
            .run_ids
            .iter()
            .map(|&r| id_of(Key::Run, r))
            .collect::<anyhow::Result<_>>()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::{Kind, Metric, Source, SummaryValue};

    fn run(variant: usize, line: u32, value: f64) -> Run {
        Run {
            source: Some(Source {
                format: "time".into(),
                file: "f".into(),
                line,
                summary: false,
                repeats: None,
            }),
            ..Run::ok(0, variant, vec![Metric::new("user_ns", value, "ns")])
        }
    }

    fn new_exp() -> ImportTarget {
        ImportTarget::New(NewExperiment {
            name: "imp".into(),
            kind: Kind::Import,
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
        let mut vs = vec![Variant::named("n"), Variant::named("y")];
        vs[1].summary.insert(
            "user_ns_mean".into(),
            SummaryValue {
                value: 5.0,
                unit: "ns".into(),
            },
        );
        let out = store
            .import_runs(&new_exp(), &vs, &[run(0, 1, 1.0), run(1, 2, 2.0)])
            .unwrap();
        let id = out.experiment_id;
        assert_eq!(out.new_variants, ["n", "y"]);
        let out2 = store
            .import_runs(
                &ImportTarget::Existing(id),
                &[Variant::named("y"), Variant::named("z")],
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
        assert_eq!(runs[2].source.as_ref().unwrap().line, 9);
        assert_eq!(
            store.variants(id).unwrap()[1].summary["user_ns_mean"].value,
            5.0
        );
        assert_eq!(store.experiment(id).unwrap().kind, Kind::Import);
    }

    #[test]
    fn a_bad_run_stores_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("x.db")).unwrap();
        let err = store
            .import_runs(
                &new_exp(),
                &[Variant::named("n")],
                &[run(0, 1, 1.0), run(0, 2, f64::NAN)],
            )
            .unwrap_err();
        assert!(format!("{err:#}").contains("f:2"), "{err:#}");
        assert!(store.list().unwrap().is_empty());
    }
}
