//! Runs imported into an experiment stored on a PostgreSQL server (`abperf import --experiment
//! ID --db URL`): the experiment is read whole into the working copy, the import made there as
//! on an SQLite store (variants matched by name, new ones added, schedule numbers after the
//! last), its rows read back and rolled back, then inserted on the server in one transaction
//! under the ids the server gives (the existing variants and the experiment kept), and into the
//! working copy under those ids. Another process adding runs or variants to that experiment
//! meanwhile makes the server refuse the whole import (its unique schedule numbers, variant
//! names and positions): nothing is stored, and the import can be made again.

use super::Ids;
use super::commit::{new_id, renumber};
use crate::Store;
use crate::copy::{Rows, read_rows_where};
use crate::copy_tables::Key;
use crate::import::{ImportOutcome, ImportTarget, import_in};
use abperf_model::{Run, Variant};
use anyhow::Context;

impl Store {
    /// [`Store::import_runs`] into experiment `id` of the server this working copy is of.
    pub(crate) fn import_on_server(
        &mut self,
        id: i64,
        variants: &[Variant],
        runs: &[Run],
    ) -> anyhow::Result<ImportOutcome> {
        self.fill(id)?;
        let (built, tables, held) = {
            let tx = self.write_tx()?;
            let (variants_before, runs_before): (i64, i64) = tx.query_row(
                "SELECT (SELECT coalesce(max(id), 0) FROM variant),
                        (SELECT coalesce(max(id), 0) FROM run)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let built = import_in(&tx, &ImportTarget::Existing(id), variants, runs)?;
            let tables = added_rows(&tx, id, variants_before, runs_before)?;
            let held: Vec<i64> = tx
                .prepare("SELECT id FROM variant WHERE experiment_id = ?1 AND id <= ?2")?
                .query_map([id, variants_before], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            (built, tables, held)
        }; // rolled back: the rows go in under the server's ids below
        let server = self.server();
        let kept = || {
            let mut ids = Ids::from([((Key::Experiment, id), id)]);
            ids.extend(held.iter().map(|&v| ((Key::Variant, v), v)));
            ids
        };
        let mut ids = kept();
        let remote = self.remote().context("no server written")?;
        remote
            .commit(&tables, &mut ids)
            .with_context(|| format!("adding the import to experiment {id} of {server}"))?;
        // The working copy follows: the experiment's summaries as the import left them.
        self.conn().execute(
            "DELETE FROM import_variant_summary
             WHERE variant_id IN (SELECT id FROM variant WHERE experiment_id = ?1)",
            [id],
        )?;
        self.write_rows_keeping_ids(&renumber(&tables, &ids)?, &mut kept())
            .with_context(|| format!("the import (stored in {server}), in memory"))?;
        Ok(ImportOutcome {
            experiment_id: id,
            new_variants: built.new_variants,
            run_ids: built
                .run_ids
                .iter()
                .map(|&r| new_id(&ids, Key::Run, r))
                .collect::<anyhow::Result<_>>()?,
        })
    }
}

/// The rows an import into experiment `id` added (variants above id `variants_before`, runs
/// above `runs_before`, with their slots, metrics, names, labels and provenance) and every
/// per-variant summary of the experiment (an import may replace one), in insertion order.
fn added_rows(
    conn: &rusqlite::Connection,
    id: i64,
    variants_before: i64,
    runs_before: i64,
) -> anyhow::Result<Vec<Rows>> {
    let runs = format!("SELECT id FROM run WHERE experiment_id = ?1 AND id > {runs_before}");
    let tables: [(&str, String, &str); 8] = [
        (
            "variant",
            format!("experiment_id = ?1 AND id > {variants_before}"),
            "id",
        ),
        (
            "import_variant_summary",
            "variant_id IN (SELECT id FROM variant WHERE experiment_id = ?1)".into(),
            "variant_id, name",
        ),
        (
            "slot",
            format!(
                "experiment_id = ?1 AND seq IN \
                 (SELECT seq FROM run WHERE experiment_id = ?1 AND id > {runs_before})"
            ),
            "seq",
        ),
        (
            "run",
            format!("experiment_id = ?1 AND id > {runs_before}"),
            "id",
        ),
        (
            "metric_name",
            format!("id IN (SELECT name_id FROM metric WHERE run_id IN ({runs}))"),
            "id",
        ),
        ("metric", format!("run_id IN ({runs})"), "run_id, pos"),
        ("run_label", format!("run_id IN ({runs})"), "run_id"),
        ("import_run", format!("run_id IN ({runs})"), "run_id"),
    ];
    let mut out = Vec::new();
    for (table, rows, order) in tables {
        let found = read_rows_where(conn, table, &rows, order, id)?;
        if !found.rows.is_empty() {
            out.push(found);
        }
    }
    Ok(out)
}
