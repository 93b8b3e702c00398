//! The tables of an experiment as SQLite declares them (`PRAGMA table_info`, `foreign_key_list`,
//! `index_list`), read from a fresh in-memory store made from the prepared schema: the one
//! source of truth the PostgreSQL schema is generated from (`ddl`).

use crate::Store;
use crate::copy_tables::TABLES;
use anyhow::Context;
use rusqlite::Connection;

/// How a column's values are stored in PostgreSQL, from its SQLite declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Integer,
    Real,
    Text,
    Blob,
    /// No declared type: an integral value is an INTEGER, any other a REAL (`numeric`).
    Numeric,
}

#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub kind: Kind,
    pub not_null: bool,
    /// The declared default, as SQL (`0`), when there is one.
    pub default: Option<String>,
    /// The table's own id (`TableSpec::own`), numbered by PostgreSQL.
    pub identity: bool,
}

#[derive(Debug, Clone)]
pub struct ForeignKey {
    pub columns: Vec<String>,
    pub table: String,
    pub to: Vec<String>,
    /// SQLite's ON DELETE action (`CASCADE`, `NO ACTION`, ...).
    pub on_delete: String,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub name: String,
    pub columns: Vec<Column>,
    /// The primary key's columns (empty: SQLite's hidden rowid, a `rowid` column in PostgreSQL).
    pub primary_key: Vec<String>,
    pub unique: Vec<Vec<String>>,
    /// Plain indexes: name and columns.
    pub indexes: Vec<(String, Vec<String>)>,
    pub foreign_keys: Vec<ForeignKey>,
}

impl Table {
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }
}

/// The table `name` of `tables`.
pub fn find<'a>(tables: &'a [Table], name: &str) -> anyhow::Result<&'a Table> {
    tables
        .iter()
        .find(|t| t.name == name)
        .with_context(|| format!("table {name} is not part of an experiment's content"))
}

/// Every table of [`TABLES`], in its order (a table after the tables it refers to).
pub fn tables() -> anyhow::Result<Vec<Table>> {
    let store = Store::open(std::path::Path::new(":memory:"))
        .context("making the schema in memory to generate PostgreSQL's from")?;
    TABLES
        .iter()
        .map(|spec| {
            table(store.conn(), spec.name, spec.own.map(|(c, _)| c))
                .with_context(|| format!("reading SQLite's declaration of table {}", spec.name))
        })
        .collect()
}

fn table(conn: &Connection, name: &str, own: Option<&str>) -> anyhow::Result<Table> {
    let mut key: Vec<(i64, String)> = Vec::new();
    let mut columns = Vec::new();
    let mut stmt = conn.prepare(&format!(
        "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('{name}')"
    ))?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let (column, declared): (String, String) = (r.get(0)?, r.get(1)?);
        let pk: i64 = r.get(4)?;
        if pk > 0 {
            key.push((pk, column.clone()));
        }
        columns.push(Column {
            kind: kind(&declared).with_context(|| format!("column {column}"))?,
            identity: own == Some(column.as_str()),
            not_null: r.get(2)?,
            default: r.get(3)?,
            name: column,
        });
    }
    key.sort();
    let (unique, indexes) = indexes(conn, name)?;
    Ok(Table {
        name: name.to_string(),
        columns,
        primary_key: key.into_iter().map(|(_, c)| c).collect(),
        unique,
        indexes,
        foreign_keys: foreign_keys(conn, name)?,
    })
}

fn kind(declared: &str) -> anyhow::Result<Kind> {
    Ok(match declared.to_ascii_uppercase().as_str() {
        "INTEGER" => Kind::Integer,
        "REAL" => Kind::Real,
        "TEXT" => Kind::Text,
        "BLOB" => Kind::Blob,
        "" => Kind::Numeric,
        other => anyhow::bail!("declared type {other} has no PostgreSQL mapping"),
    })
}

/// The UNIQUE constraints and the plain indexes of `table` (the primary key is neither).
type Indexes = (Vec<Vec<String>>, Vec<(String, Vec<String>)>);

fn indexes(conn: &Connection, table: &str) -> anyhow::Result<Indexes> {
    let mut stmt = conn.prepare(&format!(
        "SELECT name, \"unique\", origin FROM pragma_index_list('{table}') ORDER BY name"
    ))?;
    let list = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, bool>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let (mut unique, mut plain) = (Vec::new(), Vec::new());
    for (name, is_unique, origin) in list {
        let mut q = conn.prepare(&format!(
            "SELECT name FROM pragma_index_info('{name}') ORDER BY seqno"
        ))?;
        let columns = q
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        match (origin.as_str(), is_unique) {
            ("pk", _) => {}
            (_, true) => unique.push(columns),
            (_, false) => plain.push((name, columns)),
        }
    }
    Ok((unique, plain))
}

fn foreign_keys(conn: &Connection, table: &str) -> anyhow::Result<Vec<ForeignKey>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT id, \"table\", \"from\", \"to\", on_delete FROM pragma_foreign_key_list('{table}') \
         ORDER BY id, seq"
    ))?;
    let mut rows = stmt.query([])?;
    let mut out: Vec<(i64, ForeignKey)> = Vec::new();
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let (from, to): (String, Option<String>) = (r.get(2)?, r.get(3)?);
        if out.last().is_none_or(|(last, _)| *last != id) {
            out.push((
                id,
                ForeignKey {
                    columns: Vec::new(),
                    table: r.get(1)?,
                    to: Vec::new(),
                    on_delete: r.get(4)?,
                },
            ));
        }
        let fk = &mut out.last_mut().expect("pushed above").1;
        fk.columns.push(from);
        fk.to.extend(to);
    }
    Ok(out.into_iter().map(|(_, fk)| fk).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declarations_are_read_with_their_keys() {
        let tables = tables().unwrap();
        let get = |n: &str| tables.iter().find(|t| t.name == n).unwrap();
        let run = get("run");
        assert_eq!(run.column("wall_ns").unwrap().kind, Kind::Numeric);
        assert!(run.column("id").unwrap().identity);
        assert_eq!(run.unique, vec![vec!["experiment_id", "seq"]]);
        assert!(get("trace_bin").primary_key.is_empty());
        assert_eq!(get("slot").primary_key, vec!["experiment_id", "seq"]);
        let metric = get("metric");
        let to_names = metric
            .foreign_keys
            .iter()
            .find(|f| f.table == "metric_name")
            .unwrap();
        assert_eq!(to_names.on_delete, "NO ACTION");
        let to_run = metric
            .foreign_keys
            .iter()
            .find(|f| f.table == "run")
            .unwrap();
        assert_eq!(to_run.on_delete, "CASCADE");
        assert_eq!(
            get("micro_round").column("cycles").unwrap().kind,
            Kind::Blob
        );
        assert_eq!(get("metric").column("value").unwrap().kind, Kind::Numeric);
    }
}
