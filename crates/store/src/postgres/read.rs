//! Experiments read from PostgreSQL as [`Content`], with the rows the table specs select
//! (`copy_tables`, their `?1` written `$1`), in their order; and the identities of the stored
//! experiments, for the duplicate check of `store copy`.

use super::Pg;
use super::columns::Table;
use super::params;
use crate::copy::{Content, IDENTITY_COLUMNS, Identity, Rows, Value};
use crate::copy_tables::{TABLES, TableSpec};
use anyhow::Context;
use postgres::GenericClient;
use std::collections::BTreeMap;

impl Pg {
    /// Every experiment id, oldest first.
    pub fn ids(&mut self) -> anyhow::Result<Vec<i64>> {
        if !self.has_schema {
            return Ok(Vec::new());
        }
        let rows = self
            .client
            .query("SELECT id FROM experiment ORDER BY id", &[])?;
        Ok(rows
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()?)
    }

    /// Everything stored about experiment `id`.
    pub fn read_content(&mut self, id: i64) -> anyhow::Result<Content> {
        let mut tx = self.client.transaction()?;
        let content = read(&mut tx, &self.tables, id)?;
        tx.commit()?;
        content.with_context(|| format!("no experiment {id} in the store {}", self.shown))
    }

    /// Every experiment, read in one snapshot (REPEATABLE READ).
    pub fn read_all(&mut self) -> anyhow::Result<Vec<Content>> {
        let ids = self.ids()?;
        let mut tx = self
            .client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()?;
        let mut out = Vec::new();
        for id in ids {
            out.extend(read(&mut tx, &self.tables, id)?);
        }
        tx.commit()?;
        Ok(out)
    }

    /// The identity of every experiment in this store, with its id.
    pub fn identities(&mut self) -> anyhow::Result<BTreeMap<Identity, i64>> {
        let mut out = BTreeMap::new();
        if !self.has_schema {
            return Ok(out);
        }
        let sql = format!(
            "SELECT id, {} FROM experiment ORDER BY id",
            IDENTITY_COLUMNS.join(", ")
        );
        for row in self.client.query(&sql, &[])? {
            let values = (1..=IDENTITY_COLUMNS.len())
                .map(|i| Ok(row.try_get::<_, Option<String>>(i)?.unwrap_or_default()))
                .collect::<Result<_, postgres::Error>>()?;
            out.entry(Identity::of(values)).or_insert(row.try_get(0)?);
        }
        Ok(out)
    }
}

/// Experiment `id`'s content (None: there is no such experiment).
fn read(
    client: &mut impl GenericClient,
    tables: &[Table],
    id: i64,
) -> anyhow::Result<Option<Content>> {
    let mut found = Vec::new();
    for (spec, table) in TABLES.iter().zip(tables) {
        let rows = read_rows(client, spec, table, id)
            .with_context(|| format!("experiment {id}: reading table {}", spec.name))?;
        if !rows.rows.is_empty() {
            found.push(rows);
        }
    }
    let exists = found.iter().any(|t| t.table == "experiment");
    Ok(exists.then_some(Content { id, tables: found }))
}

fn read_rows(
    client: &mut impl GenericClient,
    spec: &TableSpec,
    table: &Table,
    id: i64,
) -> anyhow::Result<Rows> {
    let list: Vec<String> = table
        .columns
        .iter()
        .map(|c| params::selected(&c.name, c.kind))
        .collect();
    let sql = format!(
        "SELECT {} FROM \"{}\" WHERE {} ORDER BY {}",
        list.join(", "),
        spec.name,
        spec.rows.replace("?1", "$1"),
        spec.order
    );
    let mut rows = Vec::new();
    for row in client.query(&sql, &[&id])? {
        let values = table
            .columns
            .iter()
            .enumerate()
            .map(|(at, c)| {
                params::value(&row, at, c.kind).with_context(|| format!("column {}", c.name))
            })
            .collect::<anyhow::Result<Vec<Value>>>()?;
        rows.push(values);
    }
    Ok(Rows {
        table: spec.name.to_string(),
        columns: table.columns.iter().map(|c| c.name.clone()).collect(),
        rows,
    })
}
