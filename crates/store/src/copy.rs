//! An experiment's whole content as a value that names no database (`Content`: table name,
//! column names, rows of plain values), read from one store and written into another
//! (`abperf store copy`). Ids are the source store's; writing renumbers them under the target
//! store's rules (experiment ids never reused, `experiment_ids`). A backend other than SQLite
//! reads and writes the same value.

use super::Store;
/// The tables a copy leaves behind, each with the reason (docs/store.md).
pub use super::copy_tables::NOT_COPIED;
use super::copy_tables::{Key, TABLES, TableSpec};
use super::experiment_ids::NEXT_EXPERIMENT_ID;
use abperf_model::Status;
use anyhow::Context;
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::collections::BTreeMap;

/// One stored value, typed as it was stored (an integral metric stays an integer).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

/// The rows of one table that belong to the experiment, in a stable order.
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    pub table: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

/// Everything stored about one experiment, with the source store's ids.
#[derive(Debug, Clone, PartialEq)]
pub struct Content {
    pub id: i64,
    pub tables: Vec<Rows>,
}

/// What identifies an experiment across stores: made when, of what kind, under what name, by
/// which command line, with which design and seed, on which host (the environment snapshot's
/// `hostname`: the rest of the snapshot may grow while the experiment runs). A copy keeps all
/// of these.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Identity(pub Vec<String>);

/// The experiment columns of an identity; the last, `environment`, reduced to its hostname.
pub(crate) const IDENTITY_COLUMNS: &[&str] = &[
    "created",
    "kind",
    "name",
    "command_line",
    "design",
    "seed",
    "environment",
];

impl Identity {
    pub(crate) fn of(mut values: Vec<String>) -> Identity {
        if let Some(env) = values.last_mut() {
            let host = serde_json::from_str::<serde_json::Value>(env)
                .ok()
                .and_then(|e| e.get("hostname").map(|h| h.to_string()));
            *env = host.unwrap_or_default();
        }
        Identity(values)
    }
}

impl Value {
    fn from_sql(v: ValueRef) -> Value {
        match v {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Integer(i),
            ValueRef::Real(f) => Value::Real(f),
            ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
            ValueRef::Blob(b) => Value::Blob(b.to_vec()),
        }
    }

    fn text(&self) -> String {
        match self {
            Value::Null => String::new(),
            Value::Integer(i) => i.to_string(),
            Value::Real(f) => f.to_string(),
            Value::Text(t) => t.clone(),
            Value::Blob(b) => format!("{b:02x?}"),
        }
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Integer(i) => ValueRef::Integer(*i),
            Value::Real(f) => ValueRef::Real(*f),
            Value::Text(t) => ValueRef::Text(t.as_bytes()),
            Value::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

impl Rows {
    pub(crate) fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }
}

impl Content {
    /// The rows of `table` (None: the experiment has none there).
    pub fn table(&self, table: &str) -> Option<&Rows> {
        self.tables.iter().find(|t| t.table == table)
    }

    /// The experiment row's value in `column`.
    pub fn experiment_value(&self, column: &str) -> Option<&Value> {
        let rows = self.table("experiment")?;
        rows.rows.first()?.get(rows.column(column)?)
    }

    /// The stored status word (`running`, `complete`, ...).
    pub fn status(&self) -> Status {
        Status::parse(
            &self
                .experiment_value("status")
                .map(Value::text)
                .unwrap_or_default(),
        )
    }

    pub fn identity(&self) -> Identity {
        Identity::of(
            IDENTITY_COLUMNS
                .iter()
                .map(|c| {
                    self.experiment_value(c)
                        .map(Value::text)
                        .unwrap_or_default()
                })
                .collect(),
        )
    }

    /// How many rows it has in every table, for `--dry-run` and the report.
    pub fn row_count(&self) -> usize {
        self.tables.iter().map(|t| t.rows.len()).sum()
    }
}

/// The column names of `table` in this store's schema.
fn columns(conn: &rusqlite::Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT name FROM pragma_table_info('{table}')"))?;
    let names = stmt.query_map([], |r| r.get(0))?;
    names.collect()
}

/// An experiment row's command line with any password hidden (a row stored by an older abperf
/// may hold one): no copy or export carries it on.
fn hide_passwords(rows: &mut Rows) {
    let Some(at) = rows
        .column("command_line")
        .filter(|_| rows.table == "experiment")
    else {
        return;
    };
    for row in &mut rows.rows {
        if let Value::Text(json) = &row[at]
            && let Ok(args) = serde_json::from_str::<Vec<String>>(json)
        {
            let hidden = crate::redact::redacted_args(args);
            row[at] = Value::Text(serde_json::to_string(&hidden).unwrap_or_default());
        }
    }
}

fn read_rows(conn: &rusqlite::Connection, spec: &TableSpec, id: i64) -> rusqlite::Result<Rows> {
    read_rows_where(conn, spec.name, spec.rows, spec.order, id)
}

/// The rows of `table` that `rows` (a WHERE clause of `?1`) selects, ordered by `order`.
pub(crate) fn read_rows_where(
    conn: &rusqlite::Connection,
    table: &str,
    rows: &str,
    order: &str,
    id: i64,
) -> rusqlite::Result<Rows> {
    let columns = columns(conn, table)?;
    let list = columns
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!("SELECT {list} FROM \"{table}\" WHERE {rows} ORDER BY {order}");
    let mut stmt = conn.prepare_cached(&sql)?;
    let n = columns.len();
    let rows = stmt.query_map([id], |r| {
        (0..n)
            .map(|i| r.get_ref(i).map(Value::from_sql))
            .collect::<rusqlite::Result<Vec<_>>>()
    })?;
    let rows = rows.collect::<rusqlite::Result<_>>()?;
    Ok(Rows {
        table: table.to_string(),
        columns,
        rows,
    })
}

impl Store {
    /// Everything stored about experiment `id`, read in one transaction (a consistent snapshot
    /// while another process may be committing runs to it).
    pub fn read_content(&self, id: i64) -> anyhow::Result<Content> {
        self.fill(id)?;
        let conn = self.conn();
        let tx =
            rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Deferred)?;
        let mut tables = Vec::new();
        for spec in TABLES {
            let mut rows = read_rows(&tx, spec, id)
                .with_context(|| format!("experiment {id}: reading table {}", spec.name))?;
            hide_passwords(&mut rows);
            if !rows.rows.is_empty() {
                tables.push(rows);
            }
        }
        tx.finish()?;
        anyhow::ensure!(
            tables.iter().any(|t| t.table == "experiment"),
            "no experiment {id} in the store {}",
            self.path().display()
        );
        Ok(Content { id, tables })
    }

    /// The identity of every experiment in this store, with its id.
    pub fn identities(&self) -> anyhow::Result<BTreeMap<Identity, i64>> {
        let sql = format!(
            "SELECT id, {} FROM experiment ORDER BY id",
            IDENTITY_COLUMNS.join(", ")
        );
        let mut stmt = self.conn().prepare(&sql)?;
        let rows = stmt.query_map([], |r| {
            let values = (1..=IDENTITY_COLUMNS.len())
                .map(|i| r.get_ref(i).map(|v| Value::from_sql(v).text()))
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((Identity::of(values), r.get::<_, i64>(0)?))
        })?;
        let mut out = BTreeMap::new();
        for row in rows {
            let (identity, id) = row?;
            out.entry(identity).or_insert(id);
        }
        Ok(out)
    }

    /// Store `content` as a new experiment, in one transaction; returns its id here. A
    /// `running` experiment is stored as `interrupted` (nothing runs the copy; `run --resume`
    /// can continue it here). `stop` is asked every few thousand rows: when it says yes, nothing
    /// is stored and the result is `Ok(None)`.
    pub fn write_content(
        &mut self,
        content: &Content,
        stop: &dyn Fn() -> bool,
    ) -> anyhow::Result<Option<i64>> {
        self.require(crate::Operation::CopyInto)?;
        self.write_content_as(content, stop, Ids::Renumber, false)
    }

    /// Store `content` under the ids it has (experiment, variants, runs, boots, metric names),
    /// for loading another store whole into an empty in-memory one: the ids a user sees are the
    /// other store's. An id already taken here is an error (a metric name with the same name,
    /// unit and direction is shared).
    pub fn write_content_keeping_ids(&mut self, content: &Content) -> anyhow::Result<i64> {
        let id = self.write_content_as(content, &|| false, Ids::Keep, false)?;
        id.context("the write stopped")
    }

    /// As [`Store::write_content_keeping_ids`], a `running` experiment staying running (the
    /// working copy of an experiment `abperf run` is writing into PostgreSQL).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // the PostgreSQL backend's
    pub(crate) fn write_running_keeping_ids(&mut self, content: &Content) -> anyhow::Result<()> {
        self.write_content_as(content, &|| false, Ids::Keep, true)?;
        Ok(())
    }

    /// Insert `tables` under the ids they have, in one transaction (rows of one run: `ids`
    /// maps the ids they refer to and are not among them, the experiment's, to themselves).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // the PostgreSQL backend's
    pub(crate) fn write_rows_keeping_ids(
        &mut self,
        tables: &[Rows],
        ids: &mut BTreeMap<(Key, i64), i64>,
    ) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
        write_tables(&tx, tables, ids, Ids::Keep, &|| false)?;
        tx.commit()?;
        Ok(())
    }

    /// Write an experiment's content beside its row, which this store holds already (a reading
    /// command's working copy of a PostgreSQL store, `postgres::lazy`), one row at a time as the
    /// rows are read (the experiment's row first), without holding them, in one transaction:
    /// the row takes the content's values, every other row goes in under the id it has, and the
    /// experiment is settled as [`Store::write_content_keeping_ids`] would have stored it.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // the PostgreSQL backend's
    pub(crate) fn beside_row(&self, id: i64) -> anyhow::Result<Beside<'_>> {
        let tx = rusqlite::Transaction::new_unchecked(
            self.conn(),
            rusqlite::TransactionBehavior::Immediate,
        )?;
        Ok(Beside {
            tx,
            id,
            ids: BTreeMap::from([((Key::Experiment, id), id)]),
            updated: false,
            insert: None,
        })
    }

    /// As [`Store::beside_row`], for the rest of an experiment's content beside the part this
    /// store holds already (the tables of its runs beside its variants and boots:
    /// `postgres::lazy`): no experiment row comes, and the rows may refer to the experiment's
    /// variants and boots held here.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // the PostgreSQL backend's
    pub(crate) fn beside_held(&self, id: i64) -> anyhow::Result<Beside<'_>> {
        let mut beside = self.beside_row(id)?;
        beside.updated = true;
        for (key, table) in [(Key::Variant, "variant"), (Key::Boot, "boot")] {
            let sql = format!("SELECT id FROM {table} WHERE experiment_id = ?1");
            let held: Vec<i64> = beside
                .tx
                .prepare(&sql)?
                .query_map([id], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            beside.ids.extend(held.into_iter().map(|h| ((key, h), h)));
        }
        Ok(beside)
    }

    fn write_content_as(
        &mut self,
        content: &Content,
        stop: &dyn Fn() -> bool,
        mode: Ids,
        keep_running: bool,
    ) -> anyhow::Result<Option<i64>> {
        let tx = self.write_tx()?;
        let mut ids: BTreeMap<(Key, i64), i64> = BTreeMap::new();
        if !write_tables(&tx, &content.tables, &mut ids, mode, stop)? {
            return Ok(None); // the transaction rolls back when dropped
        }
        let new_id = ids
            .get(&(Key::Experiment, content.id))
            .copied()
            .context("the content has no experiment row")?;
        if content.status() == Status::Running && !keep_running {
            tx.execute(
                "UPDATE experiment SET status = ?1 WHERE id = ?2",
                rusqlite::params![Status::Interrupted.as_str(), new_id],
            )?;
        }
        tx.commit()?;
        Ok(Some(new_id))
    }
}

/// Insert the rows of `tables` in `tx`, renumbered through `ids` as `mode` says; `stop` is asked
/// every few thousand rows (false: it said yes, and the caller drops the transaction).
fn write_tables(
    tx: &rusqlite::Transaction,
    tables: &[Rows],
    ids: &mut BTreeMap<(Key, i64), i64>,
    mode: Ids,
    stop: &dyn Fn() -> bool,
) -> anyhow::Result<bool> {
    let mut written = 0usize;
    for rows in tables {
        let spec = super::copy_tables::spec(&rows.table)
            .with_context(|| format!("table {} cannot be copied", rows.table))?;
        let insert = Insert::new(spec, rows, mode);
        for row in &rows.rows {
            written += 1;
            if written.is_multiple_of(4096) && stop() {
                return Ok(false);
            }
            write_row(tx, spec, &insert, rows, row, ids, mode)
                .with_context(|| format!("writing a row of table {}", rows.table))?;
        }
    }
    Ok(true)
}

/// An experiment's content being written beside its row ([`Store::beside_row`]), in one
/// transaction that [`Beside::finish`] commits (dropped before: nothing is written).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // the PostgreSQL backend's
pub(crate) struct Beside<'a> {
    tx: rusqlite::Transaction<'a>,
    id: i64,
    ids: BTreeMap<(Key, i64), i64>,
    /// Whether the experiment's row was set (it is the first, and there is one).
    updated: bool,
    /// The insert of the table being written (its rows come together), with its columns.
    insert: Option<(Rows, Insert)>,
}

#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // the PostgreSQL backend's
impl Beside<'_> {
    /// Write `row`, a row of the table `rows` names with its columns (its own rows unread).
    pub(crate) fn row(&mut self, rows: &Rows, row: &[Value]) -> anyhow::Result<()> {
        if rows.table == "experiment" {
            anyhow::ensure!(
                !self.updated,
                "experiment {} has more than one row",
                self.id
            );
            self.updated = true;
            return update_row(&self.tx, rows, row, self.id);
        }
        anyhow::ensure!(self.updated, "the content has no experiment row");
        let spec = super::copy_tables::spec(&rows.table)
            .with_context(|| format!("table {} cannot be copied", rows.table))?;
        let insert = match &mut self.insert {
            Some((columns, insert))
                if columns.table == rows.table && columns.columns == rows.columns =>
            {
                insert
            }
            slot => {
                let header = Rows {
                    rows: Vec::new(),
                    ..rows.clone()
                };
                &mut slot.insert((header, Insert::new(spec, rows, Ids::Keep))).1
            }
        };
        write_row(&self.tx, spec, insert, rows, row, &mut self.ids, Ids::Keep)
            .with_context(|| format!("writing a row of table {}", rows.table))
    }

    /// Settle the experiment as a copy stores it, and commit.
    pub(crate) fn finish(self) -> anyhow::Result<()> {
        anyhow::ensure!(self.updated, "the content has no experiment row");
        super::owner::settle_ownerless(&self.tx)?;
        self.tx.commit()?;
        Ok(())
    }
}

/// Set experiment `id`'s row to `row` (of table experiment, its columns those of `rows`).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // the PostgreSQL backend's
fn update_row(
    tx: &rusqlite::Transaction,
    rows: &Rows,
    row: &[Value],
    id: i64,
) -> anyhow::Result<()> {
    let sets: Vec<String> = (rows.columns.iter().enumerate())
        .map(|(at, column)| format!("\"{column}\" = ?{}", at + 1))
        .collect();
    let sql = format!(
        "UPDATE experiment SET {} WHERE id = ?{}",
        sets.join(", "),
        row.len() + 1
    );
    let id = Value::Integer(id);
    let values = row.iter().chain([&id]);
    tx.execute(&sql, rusqlite::params_from_iter(values))?;
    Ok(())
}

/// Whether a write numbers the rows anew under this store's rules or keeps the content's ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ids {
    Renumber,
    Keep,
}

/// How the rows of one table (with their columns) are inserted, made once per table: the
/// columns written (the own id left out when renumbering, but an experiment's) and the SQL.
struct Insert {
    /// The written columns, quoted.
    names: Vec<String>,
    /// Per column of the rows: whether it is written.
    written: Vec<bool>,
    sql: String,
}

impl Insert {
    fn new(spec: &TableSpec, rows: &Rows, mode: Ids) -> Insert {
        let written: Vec<bool> = (rows.columns.iter())
            .map(|column| match spec.own {
                Some((own, key)) if own == column => {
                    key == Key::Experiment || mode == Ids::Keep // else a fresh id from the target
                }
                _ => true,
            })
            .collect();
        let names: Vec<String> = (rows.columns.iter().zip(&written))
            .filter(|(_, w)| **w)
            .map(|(column, _)| format!("\"{column}\""))
            .collect();
        let marks = (1..=names.len())
            .map(|i| format!("?{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "INSERT INTO \"{}\" ({}) VALUES ({marks})",
            rows.table,
            names.join(", ")
        );
        Insert {
            names,
            written,
            sql,
        }
    }
}

/// Insert one row, its references renumbered through `ids`, and record its own new id there.
fn write_row(
    tx: &rusqlite::Transaction,
    spec: &TableSpec,
    insert_as: &Insert,
    rows: &Rows,
    row: &[Value],
    ids: &mut BTreeMap<(Key, i64), i64>,
    mode: Ids,
) -> anyhow::Result<()> {
    let names = &insert_as.names;
    let mut values = Vec::with_capacity(names.len());
    let mut old = None;
    for ((column, value), written) in rows.columns.iter().zip(row).zip(&insert_as.written) {
        if let Some((own, key)) = spec.own
            && own == column
        {
            old = Some((key, id_of(value)?));
        }
        if !written {
            continue;
        }
        let value = match spec.refs.iter().find(|(c, _)| c == column) {
            Some((_, key)) => Value::Integer(renumbered(ids, *key, value)?),
            None => value.clone(),
        };
        values.push(value);
    }
    if let (Some((Key::Experiment, _)), Ids::Renumber) = (old, mode) {
        let id: i64 = tx.query_row(NEXT_EXPERIMENT_ID, [], |r| r.get(0))?;
        let at = rows.column("id").context("experiment row without id")?;
        values[at] = Value::Integer(id);
    }
    let new = match (old, mode) {
        (Some((Key::MetricName, _)), _) => intern(tx, names, &values)?,
        (Some((_, id)), Ids::Keep) => insert(tx, spec.name, insert_as, &values)?.or(Some(id)),
        _ => insert(tx, spec.name, insert_as, &values)?,
    };
    if let Some((key, old)) = old {
        ids.insert((key, old), new.unwrap_or_else(|| tx.last_insert_rowid()));
    }
    Ok(())
}

pub(crate) fn id_of(v: &Value) -> anyhow::Result<i64> {
    match v {
        Value::Integer(i) => Ok(*i),
        other => anyhow::bail!("an id column holds {other:?}, not an integer"),
    }
}

pub(crate) fn renumbered(
    ids: &BTreeMap<(Key, i64), i64>,
    key: Key,
    v: &Value,
) -> anyhow::Result<i64> {
    let old = id_of(v)?;
    ids.get(&(key, old))
        .copied()
        .with_context(|| format!("{key:?} id {old} is referred to but was not copied"))
}

/// A plain insert; returns the new row's id when the experiment row chose it.
fn insert(
    tx: &rusqlite::Transaction,
    table: &str,
    insert_as: &Insert,
    values: &[Value],
) -> anyhow::Result<Option<i64>> {
    tx.prepare_cached(&insert_as.sql)?
        .execute(rusqlite::params_from_iter(values))?;
    let names = &insert_as.names;
    Ok(match (table, names.iter().position(|n| n == "\"id\"")) {
        ("experiment", Some(at)) => Some(id_of(&values[at])?),
        _ => None,
    })
}

/// A metric name: the target's row with the same name, unit and direction, added when missing.
fn intern(
    tx: &rusqlite::Transaction,
    names: &[String],
    values: &[Value],
) -> anyhow::Result<Option<i64>> {
    let get = |column: &str| -> anyhow::Result<&Value> {
        let at = names
            .iter()
            .position(|n| n == &format!("\"{column}\""))
            .with_context(|| format!("metric_name without {column}"))?;
        Ok(&values[at])
    };
    let (name, unit, direction) = (get("name")?, get("unit")?, get("direction")?);
    // With the id when the write keeps ids (a name another experiment added is shared).
    let id = get("id").unwrap_or(&Value::Null);
    tx.prepare_cached(
        "INSERT OR IGNORE INTO metric_name (id, name, unit, direction) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(rusqlite::params![id, name, unit, direction])?;
    let id = tx
        .prepare_cached(
            "SELECT id FROM metric_name WHERE name = ?1 AND unit = ?2 AND direction = ?3",
        )?
        .query_row(rusqlite::params![name, unit, direction], |r| r.get(0))?;
    Ok(Some(id))
}

#[cfg(test)]
#[path = "copy_tests.rs"]
mod tests;
