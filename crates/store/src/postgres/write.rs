//! An experiment's [`Content`] written into PostgreSQL in one transaction, renumbered under the
//! same rules as in SQLite (`copy`): every own id a fresh one from the column's identity
//! sequence (experiment ids are never handed out twice), references renumbered, metric names
//! interned by name, unit and direction. A table's many rows go in by one COPY (`bulk`).

use super::Pg;
use super::columns::{Column, Table};
use super::params::{self, Param};
use crate::copy::{Content, Rows, Value, id_of, renumbered};
use crate::copy_tables::{self, Key, TableSpec};
use abperf_model::{Owner, Status};
use anyhow::Context;
use postgres::{GenericClient, Statement, Transaction};
use std::collections::BTreeMap;

/// How the rows of one table are inserted: the statement, and each content column's place.
struct Insert<'a> {
    spec: &'static TableSpec,
    statement: Statement,
    /// The declaration of each of the content's columns.
    columns: Vec<&'a Column>,
}

/// Old ids (the source's) to new ones (this store's), by what they number.
pub(crate) type Ids = BTreeMap<(Key, i64), i64>;

impl Pg {
    /// Store `content` as a new experiment, in one transaction; returns its id here. As
    /// [`Store::write_content`](crate::Store::write_content): a `running` experiment is stored
    /// as `interrupted`, and `stop` is asked every few thousand rows (yes: nothing is stored).
    pub fn write_content(
        &mut self,
        content: &Content,
        stop: &dyn Fn() -> bool,
    ) -> anyhow::Result<Option<i64>> {
        let Some(ids) = self.write_experiment(content, stop, None)? else {
            return Ok(None);
        };
        Ok(ids.get(&(Key::Experiment, content.id)).copied())
    }

    /// Store `content` as a new experiment in one transaction; returns every id it was given
    /// here (None: `stop` said yes). With an `owner`, a `running` one stays running and the
    /// owner is recorded in the same transaction (`abperf run`); without, it is `interrupted`.
    pub(crate) fn write_experiment(
        &mut self,
        content: &Content,
        stop: &dyn Fn() -> bool,
        owner: Option<&Owner>,
    ) -> anyhow::Result<Option<Ids>> {
        let mut tx = self.client.transaction()?;
        lock_names(&mut tx, content.table("metric_name"))?;
        let mut ids = Ids::new();
        let mut statements = Statements::default();
        for rows in &content.tables {
            if stop() {
                return Ok(None); // the transaction rolls back when dropped
            }
            write_table(&mut tx, &self.tables, rows, &mut ids, &mut statements)
                .with_context(|| format!("experiment {}, table {}", content.id, rows.table))?;
        }
        let new_id = ids
            .get(&(Key::Experiment, content.id))
            .copied()
            .context("the content has no experiment row")?;
        match owner {
            Some(o) => super::owner::put_owner(&mut tx, new_id, o)?,
            None if content.status() == Status::Running => {
                let interrupted = Status::Interrupted.as_str();
                tx.execute(
                    "UPDATE experiment SET status = $1 WHERE id = $2",
                    &[&interrupted, &new_id],
                )?;
            }
            None => {}
        }
        tx.commit()
            .with_context(|| format!("committing experiment {}", content.id))?;
        Ok(Some(ids))
    }

    /// Insert `tables` (rows that refer to ids already in `ids` or given here) in one
    /// transaction, through `statements` (prepared once per connection); `ids` gains the id
    /// every row was given. Metric names are interned as [`Pg::write_content`] does.
    pub(crate) fn write_rows(
        &mut self,
        tables: &[Rows],
        ids: &mut Ids,
        statements: &mut Statements,
    ) -> anyhow::Result<()> {
        if let [rows] = tables
            && let [row] = &rows.rows[..]
            && rows.table != "metric_name"
        {
            // One row (a run without other metrics or labels): one statement, atomic and durable
            // on its own, without the round trips of BEGIN and COMMIT.
            let table = super::columns::find(&self.tables, &rows.table)?;
            let insert = statements.insert(&mut self.client, table, rows)?;
            return write_row(&mut self.client, &insert, rows, row, ids)
                .with_context(|| format!("table {}", rows.table));
        }
        let mut tx = self.client.transaction()?;
        // Rows added to an experiment stored before: its row held while they go in (`keys`).
        if !tables.iter().any(|t| t.table == "experiment") {
            for (_, &id) in ids.range((Key::Experiment, i64::MIN)..=(Key::Experiment, i64::MAX)) {
                super::keys::lock_parent(&mut tx, id)?;
            }
        }
        let names = tables.iter().find(|t| t.table == "metric_name");
        lock_names(&mut tx, names)?;
        for rows in tables {
            write_table(&mut tx, &self.tables, rows, ids, statements)
                .with_context(|| format!("table {}", rows.table))?;
        }
        tx.commit()?;
        Ok(())
    }
}

/// Insert the rows of one table (one of `tables`): many at once by COPY (`bulk`), a few by an
/// INSERT each; `ids` gains the id every row was given.
fn write_table(
    tx: &mut Transaction,
    tables: &[Table],
    rows: &Rows,
    ids: &mut Ids,
    statements: &mut Statements,
) -> anyhow::Result<()> {
    let table = super::columns::find(tables, &rows.table)?;
    let spec = copy_tables::spec(&rows.table).context("a table without a spec")?;
    if super::bulk::fits(spec, rows) {
        return super::bulk::copy_rows(tx, spec, table, rows, ids);
    }
    let insert = statements.insert(tx, table, rows)?;
    for row in &rows.rows {
        write_row(tx, &insert, rows, row, ids)?;
    }
    Ok(())
}

/// The INSERT statements of one connection, by table and columns, prepared once.
#[derive(Default)]
pub(crate) struct Statements(std::collections::HashMap<(String, Vec<String>), Statement>);

impl Statements {
    fn insert<'a>(
        &mut self,
        tx: &mut impl GenericClient,
        table: &'a Table,
        rows: &Rows,
    ) -> anyhow::Result<Insert<'a>> {
        let key = (rows.table.clone(), rows.columns.clone());
        let cached = self.0.get(&key).cloned();
        let insert = prepare(table, rows, |sql| match cached {
            Some(s) => Ok(s),
            None => Ok(tx.prepare(sql)?),
        })?;
        self.0
            .entry(key)
            .or_insert_with(|| insert.statement.clone());
        Ok(insert)
    }
}

/// The advisory lock namespace of metric names ("ab" in ASCII): the first key of the two.
const NAME_LOCKS: i32 = 0x6162;

/// Take a transaction advisory lock for every metric name of `content`, in the order of their
/// keys: two copies that intern some of the same new names then wait for each other in one order
/// instead of deadlocking (each waiting on the other's uncommitted insert of a name). The names
/// are then inserted in the content's order, so they are numbered as in the store they came from.
fn lock_names(tx: &mut Transaction, names: Option<&Rows>) -> anyhow::Result<()> {
    let Some(rows) = names else {
        return Ok(());
    };
    let mut keys: Vec<i32> = rows.rows.iter().map(|row| name_key(rows, row)).collect();
    keys.sort_unstable();
    keys.dedup();
    let lock = tx.prepare("SELECT pg_advisory_xact_lock($1::int4, $2::int4)")?;
    for key in keys {
        tx.execute(&lock, &[&NAME_LOCKS, &key])?;
    }
    Ok(())
}

/// A metric name's lock key: FNV-1a of its name, unit and direction (a collision only makes two
/// copies wait for each other).
fn name_key(rows: &Rows, row: &[Value]) -> i32 {
    let mut hash: u32 = 0x811c_9dc5;
    for column in ["name", "unit", "direction"] {
        let text = rows.column(column).map(|at| format!("{:?}\u{1f}", row[at]));
        for b in text.unwrap_or_default().bytes() {
            hash = (hash ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
    }
    hash as i32
}

/// The INSERT for the rows of `table` (the own id left to PostgreSQL, which returns it), its
/// statement made from its SQL by `statement` (prepared, or one prepared before).
fn prepare<'a>(
    table: &'a Table,
    rows: &Rows,
    statement: impl FnOnce(&str) -> anyhow::Result<Statement>,
) -> anyhow::Result<Insert<'a>> {
    let spec = copy_tables::spec(&rows.table).context("a table without a spec")?;
    let mut columns = Vec::new();
    for name in &rows.columns {
        let column = table.column(name).with_context(|| {
            format!(
                "table {}: column {name} is not in this abperf's schema",
                table.name
            )
        })?;
        columns.push(column);
    }
    let written: Vec<&&Column> = columns.iter().filter(|c| !c.identity).collect();
    let names: Vec<String> = written
        .iter()
        .map(|c| super::ddl::quoted(&c.name))
        .collect();
    let marks: Vec<String> = written
        .iter()
        .enumerate()
        .map(|(i, c)| params::placeholder(i + 1, c.kind))
        .collect();
    let mut sql = format!(
        "INSERT INTO \"{}\" ({}) VALUES ({})",
        table.name,
        names.join(", "),
        marks.join(", ")
    );
    // A run (on its own: `abperf run`'s commit) goes in only while its experiment is there, as
    // the foreign key the table no longer has checked (`keys`): nothing is returned otherwise.
    let parent = written.iter().position(|c| c.name == "experiment_id");
    if let (Some(at), Some(_)) = (parent, spec.own)
        && super::keys::UNCHECKED.contains(&spec.name)
    {
        sql = format!(
            "INSERT INTO \"{}\" ({}) SELECT {} WHERE EXISTS \
             (SELECT 1 FROM experiment WHERE id = {} FOR KEY SHARE)",
            table.name,
            names.join(", "),
            marks.join(", "),
            marks[at]
        );
    }
    match spec.own {
        Some((_, Key::MetricName)) => {
            sql.push_str(" ON CONFLICT (name, unit, direction) DO NOTHING RETURNING id")
        }
        Some((own, _)) => sql.push_str(&format!(" RETURNING \"{own}\"")),
        // An import into an experiment stored here may replace a variant's summary (SQLite's
        // INSERT OR REPLACE); a new experiment's never meets one.
        None if rows.table == "import_variant_summary" => sql.push_str(
            " ON CONFLICT (variant_id, name) DO UPDATE SET value = EXCLUDED.value, \
             unit = EXCLUDED.unit",
        ),
        None => {}
    }
    Ok(Insert {
        spec,
        statement: statement(&sql)?,
        columns,
    })
}

/// Insert one row, its references renumbered through `ids`, and record its own new id there.
fn write_row(
    tx: &mut impl GenericClient,
    insert: &Insert,
    rows: &Rows,
    row: &[Value],
    ids: &mut BTreeMap<(Key, i64), i64>,
) -> anyhow::Result<()> {
    let mut values: Vec<Param> = Vec::new();
    let mut own = None;
    for (column, value) in insert.columns.iter().zip(row) {
        if column.identity {
            let key = insert
                .spec
                .own
                .map(|(_, k)| k)
                .context("an identity without a key")?;
            own = Some((key, id_of(value)?));
            continue;
        }
        let refers = insert.spec.refs.iter().find(|(c, _)| *c == column.name);
        let value = match refers {
            Some((_, key)) => Value::Integer(renumbered(ids, *key, value)?),
            None => value.clone(),
        };
        let param = params::param(&value, column.kind)
            .map_err(|why| anyhow::anyhow!("column {}: {why}", column.name))?;
        values.push(param);
    }
    let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
        values.iter().map(|v| v.as_ref()).collect();
    let returned = tx.query_opt(&insert.statement, &refs)?;
    if let Some((key, old)) = own {
        let new = match (returned, key) {
            (Some(r), _) => r.try_get(0)?,
            (None, Key::MetricName) => interned(tx, rows, row)?,
            (None, _) => {
                anyhow::bail!("the row was not stored: its experiment is no longer in the store")
            }
        };
        ids.insert((key, old), new);
    }
    Ok(())
}

/// The id of the metric name already stored with this row's name, unit and direction.
fn interned(tx: &mut impl GenericClient, rows: &Rows, row: &[Value]) -> anyhow::Result<i64> {
    let text = |column: &str| -> anyhow::Result<String> {
        let at = rows
            .column(column)
            .with_context(|| format!("metric_name without {column}"))?;
        match &row[at] {
            Value::Text(t) => Ok(t.clone()),
            other => anyhow::bail!("metric_name.{column} holds {other:?}, not text"),
        }
    };
    let (name, unit, direction) = (text("name")?, text("unit")?, text("direction")?);
    let found = tx.query_one(
        "SELECT id FROM metric_name WHERE name = $1 AND unit = $2 AND direction = $3",
        &[&name, &unit, &direction],
    )?;
    Ok(found.try_get(0)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_key_depends_on_name_unit_and_direction() {
        let rows = |unit: &str| Rows {
            table: "metric_name".into(),
            columns: ["id", "name", "unit", "direction"]
                .map(String::from)
                .to_vec(),
            rows: vec![
                ["1", "wall", unit, ""]
                    .map(|t| Value::Text(t.into()))
                    .to_vec(),
            ],
        };
        let key = |r: &Rows| name_key(r, &r.rows[0]);
        assert_eq!(key(&rows("ns")), key(&rows("ns")));
        assert_ne!(key(&rows("ns")), key(&rows("us")));
    }
}
