//! An experiment already stored on a PostgreSQL server, written to again: taken over by
//! `run --resume` or `fleet run --resume` (the server read into the working copy under its ids),
//! added to by a fleet host that commits its own runs there (only that experiment read), and
//! brought up to date with the runs other processes committed there meanwhile
//! ([`Store::catch_up`]). Every write then goes to the server first, as `abperf run`'s do
//! (`on_server`).

use super::copy::{Content, Rows};
use super::copy_tables::Key;
use super::postgres::{Ids, Remote};
use super::{Store, names_a_server, resolve_path};
use anyhow::Context;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The tables of a run's rows in a [`Content`], and the column that names the run.
const RUN_ROWS: &[(&str, &str)] = &[
    ("run", "id"),
    ("metric_name", ""),
    ("metric", "run_id"),
    ("run_label", "run_id"),
];

impl Store {
    /// Open the store named by `--db` to take one of its experiments over and add runs to it
    /// (`run --resume`, `fleet run --resume`), or to delete one (`delete`, [`Store::delete_unless_running`]):
    /// an SQLite store as [`Store::open`]; a PostgreSQL DSN read into an
    /// in-memory working copy under its ids as the reading commands read it (every experiment's
    /// row, an experiment's content when first read or claimed), every write then going to the
    /// server first.
    pub fn open_resolved_for_taking_over(flag: Option<&Path>) -> anyhow::Result<Store> {
        let path = resolve_path(flag)?;
        match path.to_str().filter(|_| names_a_server(&path)) {
            Some(dsn) => {
                let remote = Remote::open(dsn)?;
                let mut store = super::postgres::load(dsn)?;
                store.remote = Some(Box::new(remote));
                Ok(store)
            }
            None => Store::open(&path),
        }
    }

    /// Open the store at `location` (as [`Store::shared_location`] gives it) to add runs to its
    /// experiment `id`: a fleet host committing its runs itself. On a server only that
    /// experiment is read into the working copy.
    pub fn open_to_add_runs(location: &str, id: i64) -> anyhow::Result<Store> {
        let path = Path::new(location);
        if !names_a_server(path) {
            let store = Store::open(path)?;
            store.experiment(id)?;
            return Ok(store);
        }
        let mut remote = Remote::open(location)?;
        let content = remote
            .read_content(id)
            .with_context(|| format!("reading experiment {id} of {}", remote.shown()))?;
        let mut store = Store::open(Path::new(":memory:"))?;
        store.write_running_keeping_ids(&content)?;
        store.path = PathBuf::from(remote.shown());
        store.remote = Some(Box::new(remote));
        Ok(store)
    }

    /// Where other machines can commit runs into this store themselves: a server's DSN as it
    /// was given, password and all (None: a file of this machine).
    pub fn shared_location(&self) -> Option<&str> {
        self.remote.as_ref().map(|r| r.dsn())
    }

    /// Bring experiment `id` up to what the store holds: on a server, the runs other processes
    /// committed there since it was read (fleet hosts) are read into the working copy. Nothing
    /// to do on an SQLite store, which every process reads and writes in place.
    pub fn catch_up(&mut self, id: i64) -> anyhow::Result<()> {
        self.fill(id)?;
        let server = self.server();
        let Some(remote) = self.remote.as_mut() else {
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
        let remote = self.remote.as_mut().context("no server")?;
        remote
            .delete(id)
            .with_context(|| format!("deleting experiment {id} of {server}"))?;
        self.conn()
            .execute("DELETE FROM experiment WHERE id = ?1", [id])?;
        Ok(())
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
                Some(at) => !held.contains(&super::copy::id_of(&row[at])?),
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
