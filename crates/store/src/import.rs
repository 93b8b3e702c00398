//! Imported runs: written all at once in one transaction (a malformed file stores nothing), with
//! where each run came from (format, file, line) and whether it is a tool's summary of several
//! repeats (`perf stat -r N` prints only means). On a PostgreSQL store a new experiment is built
//! in memory and written there whole, runs added to an experiment there go through a working
//! copy (`postgres::import_new`, `postgres::import_runs`).
//!
//! Own tables, created by migration 3 (`SCHEMA`, listed in `schema.rs`):
//! - `import_run`: run_id -> format, file, line, summary flag, repeats.
//! - `import_variant_summary`: per-variant means a tool reports without per-run values
//!   (hyperfine's user/system time), never copied onto runs.

use super::Store;
use super::insert::{
    insert_experiment, insert_run_row, insert_slot, insert_summaries, insert_variant,
};
use abperf_model::label::{self, Labels};
use abperf_model::{NewExperiment, Run, Slot, Status, Variant};
use anyhow::Context;
use rusqlite::{OptionalExtension, params};

/// Where the imported runs go.
#[derive(Debug, Clone)]
pub enum ImportTarget {
    /// A new experiment (kind `import`) with its labels (`import --label`).
    New(NewExperiment, Labels),
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
    /// [`Store::import_runs`] on SQLite (`backend` dispatches it), in one transaction.
    pub(crate) fn import_here(
        &mut self,
        target: &ImportTarget,
        variants: &[Variant],
        runs: &[Run],
    ) -> anyhow::Result<ImportOutcome> {
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
        ImportTarget::New(exp, labels) => {
            let id = insert_experiment(tx, exp, Status::Complete)?;
            if let Some(text) = label::to_stored(labels) {
                tx.execute(
                    "UPDATE experiment SET labels = ?1 WHERE id = ?2",
                    params![text, id],
                )?;
            }
            id
        }
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
        ImportTarget::New(
            NewExperiment {
                name: "imp".into(),
                kind: Kind::Import,
                command_line: vec!["abperf".into()],
                design: serde_json::json!({"order": "imported"}),
                seed: None,
                environment: serde_json::json!({}),
            },
            Labels::new(),
        )
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
