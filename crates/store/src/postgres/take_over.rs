//! An experiment already stored on a PostgreSQL server, written to again: taken over by
//! `run --resume` or `fleet run --resume` (the server read into the working copy under its ids),
//! added to by a fleet host that commits its own runs there (only that experiment read), and
//! brought up to date with the runs other processes committed there meanwhile
//! ([`Store::catch_up`]). Every write then goes to the server first, as `abperf run`'s do
//! (`commit`). The server decides a take-over and a deletion (`owner`); the working copy
//! follows.

use super::Ids;
use crate::Store;
use crate::copy::{Content, Rows};
use crate::copy_tables::Key;
use abperf_model::Owner;
use anyhow::Context;
use std::collections::BTreeSet;

/// The tables of a run's rows in a [`Content`], and the column that names the run.
const RUN_ROWS: &[(&str, &str)] = &[
    ("run", "id"),
    ("metric_name", ""),
    ("metric", "run_id"),
    ("run_label", "run_id"),
];

impl Store {
    /// [`Store::catch_up`] on a working copy of a server: the runs other processes committed
    /// there since it was read (fleet hosts) read into it.
    pub(crate) fn catch_up_on_server(&mut self, id: i64) -> anyhow::Result<()> {
        self.fill(id)?;
        let server = self.server();
        let Some(remote) = self.remote() else {
            return Ok(());
        };
        let content = remote
            .read_content(id)
            .with_context(|| format!("reading experiment {id} of {server}"))?;
        let held: BTreeSet<i64> = {
            let mut stmt = self
                .conn()
                .prepare_cached("SELECT id FROM run WHERE experiment_id = ?1")?;
            stmt.query_map([id], |r| r.get(0))?
                .collect::<Result<_, _>>()?
        };
        let new = new_runs(&content, &held)?;
        let mut ids = Ids::from([((Key::Experiment, id), id)]);
        self.write_rows_keeping_ids(&new, &mut ids)
            .with_context(|| format!("experiment {id} of {server}: its new runs, in memory"))
    }

    /// Delete experiment `id` on the server, then in the working copy.
    pub(crate) fn delete_on_server(&mut self, id: i64) -> anyhow::Result<()> {
        let server = self.server();
        let remote = self.remote().context("no server written")?;
        remote
            .delete(id)
            .with_context(|| format!("deleting experiment {id} of {server}"))?;
        self.conn()
            .execute("DELETE FROM experiment WHERE id = ?1", [id])?;
        Ok(())
    }

    /// [`Store::claim_experiment`] on a working copy of a server: the server decides (its owner
    /// row, under a row lock), and the working copy follows.
    pub(crate) fn claim_on_server(
        &mut self,
        id: i64,
        me: &Owner,
        alive: &dyn Fn(&Owner) -> bool,
    ) -> anyhow::Result<Result<(), Owner>> {
        // A working copy of a server holds the experiment whole before it writes to it.
        self.fill(id)?;
        let server = self.server();
        let remote = self.remote().context("no server written")?;
        let claimed = remote
            .claim(id, me, alive)
            .with_context(|| format!("taking experiment {id} of {server} over"))?;
        if let Err(o) = claimed {
            return Ok(Err(o));
        }
        // The server decided: the working copy records the claim without judging its owner.
        self.claim_here(id, me, &|_| false)
    }

    /// [`Store::delete_unless_running`] on a working copy of a server: the server decides and
    /// deletes, in one transaction holding the experiment's row (`owner`); the working copy
    /// follows.
    pub(crate) fn delete_unless_running_on_server(
        &mut self,
        id: i64,
        alive: &dyn Fn(&Owner) -> bool,
    ) -> anyhow::Result<Result<(), Owner>> {
        let server = self.server();
        let remote = self.remote().context("no server written")?;
        let deleted = remote
            .delete_unless_running(id, alive)
            .with_context(|| format!("deleting experiment {id} of {server}"))?;
        if deleted.is_ok() {
            self.conn()
                .execute("DELETE FROM experiment WHERE id = ?1", [id])?;
        }
        Ok(deleted)
    }
}

/// The rows of `content`'s runs whose ids are not in `held`, in insertion order (the metric
/// names all kept: they are interned).
fn new_runs(content: &Content, held: &BTreeSet<i64>) -> anyhow::Result<Vec<Rows>> {
    let mut out = Vec::new();
    for (table, run_column) in RUN_ROWS {
        let Some(rows) = content.table(table) else {
            continue;
        };
        let mut kept = Rows {
            rows: Vec::new(),
            ..rows.clone()
        };
        let at = rows.column(run_column);
        for row in &rows.rows {
            let new = match at {
                Some(at) => !held.contains(&crate::copy::id_of(&row[at])?),
                None => true,
            };
            if new {
                kept.rows.push(row.clone());
            }
        }
        if !kept.rows.is_empty() {
            out.push(kept);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::copy::Value;

    #[test]
    fn only_the_rows_of_runs_not_held_are_new() {
        let rows = |table: &str, columns: &[&str], values: &[&[i64]]| Rows {
            table: table.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: values
                .iter()
                .map(|r| r.iter().map(|&v| Value::Integer(v)).collect())
                .collect(),
        };
        let content = Content {
            id: 1,
            tables: vec![
                rows("experiment", &["id"], &[&[1]]),
                rows("run", &["id", "seq"], &[&[10, 0], &[11, 1]]),
                rows("metric_name", &["id"], &[&[5]]),
                rows("metric", &["run_id", "name_id"], &[&[10, 5], &[11, 5]]),
            ],
        };
        let new = new_runs(&content, &BTreeSet::from([10])).unwrap();
        let tables: Vec<(&str, usize)> = new
            .iter()
            .map(|t| (t.table.as_str(), t.rows.len()))
            .collect();
        assert_eq!(tables, [("run", 1), ("metric_name", 1), ("metric", 1)]);
        assert_eq!(new[0].rows[0][0], Value::Integer(11));
    }
}
