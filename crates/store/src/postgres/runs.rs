//! The PostgreSQL side of a store `abperf run` commits into (`Store::open_for_runs`): a new
//! experiment written whole (running), each run written in its own transaction the moment it
//! ends, and the experiment's and variants' rows updated when they change. The rows are made by
//! the SQLite working copy (the same encoding as a local store) and written here as
//! [`Rows`](crate::copy::Rows), their ids given by PostgreSQL.

use super::write::{Ids, Statements};
use super::{Pg, Schema};
use crate::copy::{Content, Rows, Value};
use crate::copy_tables::Key;
use abperf_model::Owner;
use anyhow::Context;
use std::collections::HashMap;

/// A metric name's identity: name, unit, direction.
type NameKey = (String, String, String);

/// An open connection to the PostgreSQL store a run commits into.
pub(crate) struct Remote {
    pg: Pg,
    /// The DSN as given (with its password): where fleet hosts commit their runs themselves.
    dsn: String,
    statements: Statements,
    /// Metric names known to be stored there, with their ids (names are never deleted: a run
    /// that uses one again neither locks nor inserts it).
    names: HashMap<NameKey, i64>,
}

impl Remote {
    /// Connect to `dsn`, making abperf's schema there when it is missing (or older).
    pub(crate) fn open(dsn: &str) -> anyhow::Result<Remote> {
        Ok(Remote {
            pg: Pg::open(dsn, Schema::Make)?,
            dsn: dsn.to_string(),
            statements: Statements::default(),
            names: HashMap::new(),
        })
    }

    /// The DSN, password hidden.
    pub(crate) fn shown(&self) -> &str {
        self.pg.shown()
    }

    /// The DSN as given, password and all.
    pub(crate) fn dsn(&self) -> &str {
        &self.dsn
    }

    /// Whether the server holds run `seq` of experiment `exp_id`, asked on a new connection
    /// (after this one was lost while committing it).
    pub(crate) fn run_landed(&self, exp_id: i64, seq: u32) -> anyhow::Result<bool> {
        let mut pg = Pg::open(&self.dsn, Schema::Keep)?;
        let row = pg.client.query_opt(
            "SELECT 1 FROM run WHERE experiment_id = $1 AND seq = $2",
            &[&exp_id, &i64::from(seq)],
        )?;
        Ok(row.is_some())
    }

    /// Everything the server holds of experiment `id`.
    pub(crate) fn read_content(&mut self, id: i64) -> anyhow::Result<Content> {
        self.pg.read_content(id)
    }

    /// Delete experiment `id` and everything under it, in one transaction (`keys`).
    pub(crate) fn delete(&mut self, id: i64) -> anyhow::Result<()> {
        let mut tx = self.pg.client.transaction()?;
        let n = super::keys::delete_experiment(&mut tx, id)?;
        anyhow::ensure!(n == 1, "there is no experiment {id}");
        tx.commit()?;
        Ok(())
    }

    /// Delete experiment `id` unless its owner is alive (`Pg::delete_unless_running`).
    pub(crate) fn delete_unless_running(
        &mut self,
        id: i64,
        alive: &dyn Fn(&Owner) -> bool,
    ) -> anyhow::Result<Result<(), Owner>> {
        self.pg.delete_unless_running(id, alive)
    }

    /// Store a new experiment (its status kept: `running`) with its `owner` in one
    /// transaction; returns the ids it was given (None: `stop` said yes, nothing is stored).
    pub(crate) fn create(
        &mut self,
        content: &Content,
        owner: &Owner,
        stop: &dyn Fn() -> bool,
    ) -> anyhow::Result<Option<Ids>> {
        self.pg.write_experiment(content, stop, Some(owner))
    }

    /// Take experiment `id` over for `me` unless its owner is alive (`Pg::claim`).
    pub(crate) fn claim(
        &mut self,
        id: i64,
        me: &Owner,
        alive: &dyn Fn(&Owner) -> bool,
    ) -> anyhow::Result<Result<(), Owner>> {
        self.pg.claim(id, me, alive)
    }

    /// Insert the rows of one run in one transaction (`ids` maps the experiment's id to itself
    /// and gains the run's and its metric names'); the run is stored when this returns.
    pub(crate) fn commit(&mut self, tables: &[Rows], ids: &mut Ids) -> anyhow::Result<()> {
        let mut new_names = Vec::new();
        let mut to_write = Vec::with_capacity(tables.len());
        for rows in tables {
            if rows.table != "metric_name" {
                to_write.push(rows.clone());
                continue;
            }
            let mut unknown = Rows {
                rows: Vec::new(),
                ..rows.clone()
            };
            for row in &rows.rows {
                let (old, key) = name_of(rows, row)?;
                match self.names.get(&key) {
                    Some(&id) => {
                        ids.insert((Key::MetricName, old), id);
                    }
                    None => {
                        unknown.rows.push(row.clone());
                        new_names.push((old, key));
                    }
                }
            }
            if !unknown.rows.is_empty() {
                to_write.push(unknown);
            }
        }
        self.pg.write_rows(&to_write, ids, &mut self.statements)?;
        for (old, key) in new_names {
            if let Some(&id) = ids.get(&(Key::MetricName, old)) {
                self.names.insert(key, id);
            }
        }
        Ok(())
    }

    /// Set every column of these rows (found by their `key` columns: `id`, or a table's
    /// primary key) to the values they hold, in one transaction.
    pub(crate) fn update(&mut self, rows: &Rows, key: &[&str]) -> anyhow::Result<()> {
        let table = super::columns::find(&self.pg.tables, &rows.table)?;
        let mut keys = Vec::new();
        for name in key {
            let at = rows
                .column(name)
                .with_context(|| format!("table {} has no column {name}", rows.table))?;
            keys.push(at);
        }
        let mut set = Vec::new();
        let mut kinds = Vec::new();
        for (at, name) in rows.columns.iter().enumerate() {
            if keys.contains(&at) {
                continue;
            }
            let column = table
                .column(name)
                .with_context(|| format!("table {}: no column {name}", rows.table))?;
            kinds.push((at, column.kind, name));
            let mark = super::params::placeholder(kinds.len(), column.kind);
            set.push(format!("{} = {mark}", super::ddl::quoted(name)));
        }
        let found: Vec<String> = key
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let at = kinds.len() + 1 + i;
                format!("{} = ${at}::bigint", super::ddl::quoted(name))
            })
            .collect();
        let sql = format!(
            "UPDATE \"{}\" SET {} WHERE {}",
            rows.table,
            set.join(", "),
            found.join(" AND ")
        );
        let mut tx = self.pg.client.transaction()?;
        let statement = tx.prepare(&sql)?;
        for row in &rows.rows {
            let mut values = Vec::with_capacity(kinds.len() + 1);
            for &(at, kind, name) in &kinds {
                let param = super::params::param(&row[at], kind)
                    .map_err(|why| anyhow::anyhow!("{}.{name}: {why}", rows.table))?;
                values.push(param);
            }
            for &at in &keys {
                values.push(Box::new(crate::copy::id_of(&row[at])?));
            }
            let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
                values.iter().map(|v| v.as_ref()).collect();
            let n = tx.execute(&statement, &refs)?;
            let found: Vec<&Value> = keys.iter().map(|&at| &row[at]).collect();
            anyhow::ensure!(n == 1, "{} {found:?} is not stored there", rows.table);
        }
        tx.commit()?;
        Ok(())
    }
}

/// A metric_name row's id and its (name, unit, direction).
fn name_of(rows: &Rows, row: &[Value]) -> anyhow::Result<(i64, NameKey)> {
    let text = |column: &str| -> anyhow::Result<String> {
        match rows.column(column).map(|at| &row[at]) {
            Some(Value::Text(t)) => Ok(t.clone()),
            other => anyhow::bail!("metric_name.{column} holds {other:?}, not text"),
        }
    };
    let at = rows.column("id").context("metric_name without id")?;
    let id = crate::copy::id_of(&row[at])?;
    Ok((id, (text("name")?, text("unit")?, text("direction")?)))
}
