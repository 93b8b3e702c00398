//! Many rows of one table written with one `COPY ... FROM STDIN` (text format) instead of an
//! INSERT and a round trip each (an import or a `store copy` of 100,000 runs): the table's own
//! ids are taken from its identity sequence in one query first (as the INSERTs would take them,
//! never handed out twice), in the rows' order, so references to them (within these rows or in
//! the tables after) renumber as they do row by row.

use super::columns::{Column, Table};
use super::ddl::quoted;
use super::params;

use crate::copy::{Rows, Value, id_of, renumbered};
use crate::copy_tables::{Key, TableSpec};
use anyhow::Context;
use postgres::GenericClient;
use std::collections::BTreeMap;
use std::io::Write;

/// Fewer rows than this go in row by row (a run's commit: one statement or a few, no COPY).
const BULK_MIN: usize = 16;

/// Whether `rows` go in by COPY: enough of them, and none that an INSERT must resolve against
/// rows already stored (metric names are interned, an imported summary may replace one).
pub(super) fn fits(spec: &TableSpec, rows: &Rows) -> bool {
    rows.rows.len() >= BULK_MIN
        && !matches!(spec.own, Some((_, Key::MetricName)))
        && rows.table != "import_variant_summary"
}

/// Write `rows` of `table` with one COPY, their own ids taken from the table's sequence and
/// recorded in `ids`, their references renumbered through `ids`.
pub(super) fn copy_rows(
    client: &mut impl GenericClient,
    spec: &TableSpec,
    table: &Table,
    rows: &Rows,
    ids: &mut BTreeMap<(Key, i64), i64>,
) -> anyhow::Result<()> {
    let columns = rows
        .columns
        .iter()
        .map(|name| {
            table.column(name).with_context(|| {
                format!(
                    "table {}: column {name} is not in this abperf's schema",
                    table.name
                )
            })
        })
        .collect::<anyhow::Result<Vec<&Column>>>()?;
    if let Some((own, key)) = spec.own {
        reserve(client, table, own, key, rows, ids)?;
    }
    let names: Vec<String> = columns.iter().map(|c| quoted(&c.name)).collect();
    let sql = format!(
        "COPY {} ({}) FROM STDIN",
        quoted(&table.name),
        names.join(", ")
    );
    let mut writer = client.copy_in(&sql)?;
    let mut line = String::new();
    for (at, row) in rows.rows.iter().enumerate() {
        line.clear();
        for (i, (column, value)) in columns.iter().zip(row).enumerate() {
            if i > 0 {
                line.push('\t');
            }
            let value = written(spec, column, value, ids)?;
            params::copy_field(&mut line, &value, column.kind)
                .map_err(|why| anyhow::anyhow!("row {}, column {}: {why}", at + 1, column.name))?;
        }
        line.push('\n');
        writer.write_all(line.as_bytes())?;
    }
    writer.finish()?;
    Ok(())
}

/// The value stored for `value` of `column`: an own id or a reference renumbered, else itself.
fn written(
    spec: &TableSpec,
    column: &Column,
    value: &Value,
    ids: &BTreeMap<(Key, i64), i64>,
) -> anyhow::Result<Value> {
    let key = match spec.own {
        Some((own, key)) if own == column.name => Some(key),
        _ => spec
            .refs
            .iter()
            .find(|(c, _)| *c == column.name)
            .map(|&(_, key)| key),
    };
    Ok(match key {
        Some(key) => Value::Integer(renumbered(ids, key, value)?),
        None => value.clone(),
    })
}

/// Take one new id per row from the sequence of `table`'s identity column `own`, in ascending
/// order, and record each row's in `ids`.
fn reserve(
    client: &mut impl GenericClient,
    table: &Table,
    own: &str,
    key: Key,
    rows: &Rows,
    ids: &mut BTreeMap<(Key, i64), i64>,
) -> anyhow::Result<()> {
    let at = rows
        .column(own)
        .with_context(|| format!("table {} without its {own} column", table.name))?;
    let count = i64::try_from(rows.rows.len())?;
    let mut fresh: Vec<i64> = client
        .query(
            "SELECT nextval(pg_get_serial_sequence($1, $2)) FROM generate_series(1, $3::bigint)",
            &[&quoted(&table.name), &own, &count],
        )?
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?;
    fresh.sort_unstable();
    for (row, new) in rows.rows.iter().zip(fresh) {
        ids.insert((key, id_of(&row[at])?), new);
    }
    Ok(())
}
