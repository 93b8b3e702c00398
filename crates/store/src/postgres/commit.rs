//! A store on a PostgreSQL server that `abperf run` commits into: an in-memory SQLite working
//! copy (the prepared schema) beside a connection to the server (`runs::Remote`). Every write
//! `run` makes goes to the server first, in one transaction, under the ids the server gives;
//! then the same rows, under those ids, into the working copy, which the end of the run reads
//! back (its summary and verdicts see exactly what the server holds). The commands call the
//! same `Store` methods as on an SQLite store (`backend` dispatches them here); `fleet run`'s
//! writes (its hosts, their hellos, a new experiment deleted) work the same way (`take_over`
//! takes an experiment there up again, for `run --resume` and `fleet run --resume`); `delete`
//! checks and deletes on the server (`Store::delete_unless_running`); the other writes are
//! refused (`backend::Operation`).
//!
//! A run is stored when the server's COMMIT returns (its own write-ahead log and fsync).

use super::Ids;
use crate::Store;
use crate::copy::{Content, Rows};
use crate::copy_tables::Key;
use abperf_model::{Owner, Run};
use anyhow::Context;
use std::path::Path;

/// The tables a run's rows are in, in the order they are inserted, with the WHERE clause
/// (of the run's id) that selects them.
const RUN_TABLES: &[(&str, &str, &str)] = &[
    ("run", "id = ?1", "id"),
    (
        "metric_name",
        "id IN (SELECT name_id FROM metric WHERE run_id = ?1)",
        "id",
    ),
    ("metric", "run_id = ?1", "pos"),
    ("run_label", "run_id = ?1", "run_id"),
];

impl Store {
    /// Experiment `local`, just made in the working copy, stored on the server (status
    /// `running`) with its `owner` in one transaction; the working copy then holds it (and its
    /// owner) under the server's ids, which are returned. None: `stop` said yes (nothing is
    /// stored on the server).
    pub(crate) fn create_on_server(
        &mut self,
        local: i64,
        owner: &Owner,
        stop: &dyn Fn() -> bool,
    ) -> anyhow::Result<Option<i64>> {
        let content = self.read_content(local)?;
        let server = self.server();
        let remote = self.remote().context("no server written")?;
        let Some(ids) = remote
            .create(&content, owner, stop)
            .with_context(|| format!("storing the experiment in {server}"))?
        else {
            return Ok(None);
        };
        let renumbered = Content {
            id: new_id(&ids, Key::Experiment, local)?,
            tables: renumber(&content.tables, &ids)?,
        };
        // A fresh working copy: the experiment under the server's ids, and nothing else.
        self.conn = Store::open_file(Path::new(":memory:"))?.conn;
        self.write_running_keeping_ids(&renumbered)?;
        self.keep_owners(&[(renumbered.id, owner.clone())].into())?;
        Ok(Some(renumbered.id))
    }

    /// Commit `run` of experiment `exp_id` to the server in one transaction, then into the
    /// working copy under the id the server gave it; returns that id. The rows are made by the
    /// working copy (inserted and rolled back), so they are encoded as in any SQLite store.
    pub(crate) fn commit_run_on_server(&mut self, exp_id: i64, run: &Run) -> anyhow::Result<i64> {
        let conn = self.conn();
        conn.prepare_cached("BEGIN")?.execute([])?;
        let made = crate::experiments::insert_run(conn, exp_id, run)
            .and_then(|id| Ok((id, run_rows(conn, id)?)));
        conn.prepare_cached("ROLLBACK")?.execute([])?;
        let (local, tables) = made?;
        let server = self.server();
        let mut ids = Ids::from([((Key::Experiment, exp_id), exp_id)]);
        let remote = self.remote().context("no server written")?;
        if let Err(e) = remote.commit(&tables, &mut ids) {
            let e = match lost_connection(&e) {
                true => checked(e, remote, exp_id, run.seq),
                false => e,
            };
            return Err(e.context(format!("committing run {} to {server}", run.seq)));
        }
        let id = new_id(&ids, Key::Run, local)?;
        let mut kept = Ids::from([((Key::Experiment, exp_id), exp_id)]);
        self.write_rows_keeping_ids(&renumber(&tables, &ids)?, &mut kept)
            .with_context(|| format!("run {} (stored in {server}), in memory", run.seq))?;
        Ok(id)
    }

    /// [`Store::mirror_by`] on a working copy of a server: the rows of `table` that `rows`
    /// selects (a WHERE clause of `?1` = `id`) written over theirs on the server, found by their
    /// `key` columns. Nothing when the server is not written.
    pub(crate) fn mirror_on_server(
        &mut self,
        table: &str,
        rows: &str,
        id: i64,
        key: &[&str],
    ) -> anyhow::Result<()> {
        if self.remote().is_none() {
            return Ok(());
        }
        let order = key.join(", ");
        let changed = crate::copy::read_rows_where(self.conn(), table, rows, &order, id)?;
        let server = self.server();
        let remote = self.remote().context("no server written")?;
        remote
            .update(&changed, key)
            .with_context(|| format!("storing the change to experiment {id} ({table}) in {server}"))
    }

    /// [`Store::mirror_added`] on a working copy of a server: the rows of `table` that `rows`
    /// selects (a WHERE clause of `?1` = experiment `id`, in `order`) inserted on the server, in
    /// one transaction. Nothing when the server is not written.
    pub(crate) fn add_on_server(
        &mut self,
        id: i64,
        table: &str,
        rows: &str,
        order: &str,
    ) -> anyhow::Result<()> {
        if self.remote().is_none() {
            return Ok(());
        }
        let added = crate::copy::read_rows_where(self.conn(), table, rows, order, id)?;
        let server = self.server();
        let mut ids = Ids::from([((Key::Experiment, id), id)]);
        let remote = self.remote().context("no server written")?;
        remote
            .commit(&[added], &mut ids)
            .with_context(|| format!("storing experiment {id}'s {table} in {server}"))
    }
}

/// The rows of run `id` in the working copy, table by table (empty tables left out).
/// Whether `e` is the connection's failure rather than the server's refusal: a COMMIT then may
/// or may not have landed.
fn lost_connection(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<postgres::Error>()
            .is_some_and(|p| p.as_db_error().is_none())
    })
}

/// `e` with what the server says, on a new connection, of run `seq` of experiment `exp_id`:
/// stored (the commit landed before the connection was lost), not stored, or unknown.
fn checked(e: anyhow::Error, remote: &super::runs::Remote, exp_id: i64, seq: u32) -> anyhow::Error {
    let found = match remote.run_landed(exp_id, seq) {
        Ok(true) => format!("checked on the server: run {seq} is stored there"),
        Ok(false) => format!("checked on the server: run {seq} is not stored there"),
        Err(why) => format!("whether run {seq} is stored there is unknown ({why:#})"),
    };
    e.context(format!("the connection was lost while committing; {found}"))
}

fn run_rows(conn: &rusqlite::Connection, id: i64) -> anyhow::Result<Vec<Rows>> {
    let mut out = Vec::new();
    for (table, rows, order) in RUN_TABLES {
        let found = crate::copy::read_rows_where(conn, table, rows, order, id)?;
        if !found.rows.is_empty() {
            out.push(found);
        }
    }
    Ok(out)
}

pub(crate) fn new_id(ids: &Ids, key: Key, old: i64) -> anyhow::Result<i64> {
    ids.get(&(key, old))
        .copied()
        .with_context(|| format!("the server gave {key:?} {old} no id"))
}

/// `tables` with every id (own and referred to) replaced by the one `ids` maps it to.
pub(crate) fn renumber(tables: &[Rows], ids: &Ids) -> anyhow::Result<Vec<Rows>> {
    let mut out = Vec::with_capacity(tables.len());
    for rows in tables {
        let spec = crate::copy_tables::spec(&rows.table).context("a table without a spec")?;
        let mut keyed: Vec<(usize, Key)> = Vec::new();
        for (at, column) in rows.columns.iter().enumerate() {
            let own = spec.own.filter(|(c, _)| c == column).map(|(_, k)| k);
            let refers = spec.refs.iter().find(|(c, _)| c == column).map(|(_, k)| *k);
            if let Some(key) = own.or(refers) {
                keyed.push((at, key));
            }
        }
        let mut renumbered = rows.clone();
        for row in &mut renumbered.rows {
            for &(at, key) in &keyed {
                let old = crate::copy::id_of(&row[at])?;
                row[at] = crate::copy::Value::Integer(new_id(ids, key, old)?);
            }
        }
        out.push(renumbered);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::copy::Value;
    use abperf_model::{Kind, Metric, NewExperiment, Slot, Variant};

    #[test]
    fn a_runs_rows_are_renumbered_to_the_ids_the_server_gave() {
        let mut store = Store::open_file(Path::new(":memory:")).unwrap();
        let exp = NewExperiment {
            name: "t".into(),
            kind: Kind::Run,
            command_line: vec![],
            design: serde_json::json!({}),
            seed: None,
            environment: serde_json::json!({}),
        };
        let slot = Slot {
            seq: 0,
            variant: 0,
            block: 0,
            warmup: false,
        };
        let id = store
            .create_experiment(&exp, &[Variant::named("a")], &[slot])
            .unwrap();
        let run = Run::ok(
            0,
            0,
            vec![
                Metric::new("wall_ns", 5.0, "ns"),
                Metric::new("cycles", 7.0, "count"),
            ],
        );
        let conn = store.conn();
        let local = crate::experiments::insert_run(conn, id, &run).unwrap();
        let tables = run_rows(conn, local).unwrap();
        let names: Vec<&str> = tables.iter().map(|t| t.table.as_str()).collect();
        assert_eq!(names, ["run", "metric_name", "metric"]);
        let ids = Ids::from([
            ((Key::Experiment, id), id),
            ((Key::Run, local), 900),
            ((Key::MetricName, 1), 77),
        ]);
        let renumbered = renumber(&tables, &ids).unwrap();
        let value = |t: usize, column: &str| {
            let rows = &renumbered[t];
            rows.rows[0][rows.column(column).unwrap()].clone()
        };
        assert_eq!(value(0, "id"), Value::Integer(900));
        assert_eq!(value(1, "id"), Value::Integer(77));
        assert_eq!(value(2, "run_id"), Value::Integer(900));
        assert_eq!(value(2, "name_id"), Value::Integer(77));
        // An id the server gave nothing for is an error, not a guess.
        let missing = renumber(&tables, &Ids::new()).unwrap_err();
        assert!(format!("{missing:#}").contains("gave"), "{missing:#}");
    }
}
