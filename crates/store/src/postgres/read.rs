//! Experiments read from PostgreSQL as [`Content`] or row by row as the server sends them, with the rows the table specs select
//! (`copy_tables`, their `?1` written `$1`), in their order; the row of every experiment (what a
//! reading command loads first); and the identities of the stored experiments, for the
//! duplicate check of `store copy`.

use super::Pg;
use super::columns::Table;
use super::params;
use crate::copy::{Content, IDENTITY_COLUMNS, Identity, Rows, Value};
use crate::copy_tables::{TABLES, TableSpec};
use crate::experiments::LIST_COUNTS;
use anyhow::Context;
use postgres::GenericClient;
use postgres::fallible_iterator::FallibleIterator;
use std::collections::BTreeMap;

/// A read-only transaction in one snapshot (REPEATABLE READ): what a reading command sees of an
/// experiment while `abperf run` may be committing runs to it.
pub(super) fn snapshot(client: &mut postgres::Client) -> anyhow::Result<postgres::Transaction<'_>> {
    Ok(client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()?)
}

impl Pg {
    /// Everything stored about experiment `id`, read in one snapshot (REPEATABLE READ) while
    /// `abperf run` may be committing runs to it.
    pub fn read_content(&mut self, id: i64) -> anyhow::Result<Content> {
        let mut found: Vec<Rows> = Vec::new();
        self.read_each(id, &|_| true, &mut |rows, row| {
            if found.last().is_none_or(|t| t.table != rows.table) {
                found.push(rows.clone());
            }
            if let Some(t) = found.last_mut() {
                t.rows.push(row.to_vec());
            }
            Ok(())
        })?;
        Ok(Content { id, tables: found })
    }

    /// Hand every row of experiment `id` in the tables `read` selects to `each` as it arrives
    /// (with its table and columns, the tables in their order, the experiment's row first),
    /// read in one snapshot as [`Pg::read_content`] reads it, without holding them: what a
    /// reading command's working copy is filled with (`lazy`). An error when there is no such
    /// experiment.
    pub(crate) fn read_each(
        &mut self,
        id: i64,
        read: &dyn Fn(&TableSpec) -> bool,
        each: &mut dyn FnMut(&Rows, &[Value]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut tx = snapshot(&mut self.client)?;
        let mut exists = false;
        let selected = |spec: &TableSpec| spec.rows.replace("?1", "$1");
        for (spec, table) in TABLES.iter().zip(&self.tables) {
            let wanted = read(spec);
            if !wanted && spec.name != "experiment" {
                continue;
            }
            let mut seen = |rows: &Rows, row: &[Value]| {
                exists |= rows.table == "experiment";
                if !exists || !wanted {
                    return Ok(()); // no such experiment: said below
                }
                each(rows, row)
            };
            each_row(&mut tx, spec, table, &selected(spec), &[&id], &mut seen)
                .with_context(|| format!("experiment {id}: reading table {}", spec.name))?;
        }
        tx.commit()?;
        anyhow::ensure!(exists, "no experiment {id} in the store {}", self.shown);
        Ok(())
    }

    /// The row of every experiment, oldest first, without the rest of their content (what a
    /// reading command loads before it knows which experiments it reads: `lazy`).
    pub(crate) fn experiment_rows(&mut self) -> anyhow::Result<Rows> {
        let (spec, table) = TABLES
            .iter()
            .zip(&self.tables)
            .find(|(spec, _)| spec.name == "experiment")
            .context("no experiment table")?;
        if !self.has_schema {
            let columns = table.columns.iter().map(|c| c.name.clone()).collect();
            return Ok(Rows {
                table: spec.name.to_string(),
                columns,
                rows: Vec::new(),
            });
        }
        read_rows(&mut self.client, spec, table, "true", &[])
    }

    /// `history`'s per-variant summaries (`history::SUMMARY`), counted here with the SQL SQLite
    /// counts with.
    pub(crate) fn summaries(
        &mut self,
        sql: &str,
    ) -> anyhow::Result<Vec<crate::history::VariantSum>> {
        let mut out = Vec::new();
        if !self.has_schema {
            return Ok(out);
        }
        for row in self.client.query(sql, &[])? {
            out.push(crate::history::VariantSum {
                experiment: row.try_get(0)?,
                name: row.try_get(2)?,
                command: row.try_get(3)?,
                count: row.try_get(4)?,
                mean: row.try_get::<_, Option<f64>>(5)?.unwrap_or(f64::NAN),
                sum_sq: row.try_get::<_, Option<f64>>(6)?.unwrap_or(f64::NAN),
            });
        }
        Ok(out)
    }

    /// What `abperf list` counts of every experiment (variants, runs done, runs planned), by
    /// id, counted here with the SQL SQLite counts with (`experiments::LIST_COUNTS`).
    pub(crate) fn list_counts(&mut self) -> anyhow::Result<BTreeMap<i64, [i64; 3]>> {
        let mut out = BTreeMap::new();
        if !self.has_schema {
            return Ok(out);
        }
        let sql = format!("SELECT e.id, {LIST_COUNTS} FROM experiment e");
        for row in self.client.query(&sql, &[])? {
            let count = |at: usize| row.try_get::<_, i64>(at);
            out.insert(count(0)?, [count(1)?, count(2)?, count(3)?]);
        }
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

/// The rows of `table` that `rows` (a WHERE clause of `params`) selects, in the spec's order.
fn read_rows(
    client: &mut impl GenericClient,
    spec: &TableSpec,
    table: &Table,
    rows: &str,
    params: &[&(dyn postgres::types::ToSql + Sync)],
) -> anyhow::Result<Rows> {
    let mut found = Vec::new();
    each_row(client, spec, table, rows, params, &mut |_, row| {
        found.push(row.to_vec());
        Ok(())
    })?;
    Ok(Rows {
        table: spec.name.to_string(),
        columns: table.columns.iter().map(|c| c.name.clone()).collect(),
        rows: found,
    })
}

/// Hand each row of `table` that `rows` (a WHERE clause of `params`) selects to `each`, in the
/// spec's order, as the server sends them (with the table's name and columns, its rows empty).
fn each_row(
    client: &mut impl GenericClient,
    spec: &TableSpec,
    table: &Table,
    rows: &str,
    params: &[&(dyn postgres::types::ToSql + Sync)],
    each: &mut dyn FnMut(&Rows, &[Value]) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let list: Vec<String> = table
        .columns
        .iter()
        .map(|c| params::selected(&c.name, c.kind))
        .collect();
    let sql = format!(
        "SELECT {} FROM \"{}\" WHERE {} ORDER BY {}",
        list.join(", "),
        spec.name,
        rows,
        spec.order
    );
    let header = Rows {
        table: spec.name.to_string(),
        columns: table.columns.iter().map(|c| c.name.clone()).collect(),
        rows: Vec::new(),
    };
    let mut found = client.query_raw(&sql, params.iter().copied())?;
    let mut values = Vec::with_capacity(table.columns.len());
    while let Some(row) = found.next()? {
        values.clear();
        for (at, c) in table.columns.iter().enumerate() {
            let value =
                params::value(&row, at, c.kind).with_context(|| format!("column {}", c.name))?;
            values.push(value);
        }
        each(&header, &values)?;
    }
    Ok(())
}
