//! The runs of one experiment read straight from the server's rows into the model, for a
//! reading command (`show`, `compare`, `report`, `export`) whose working copy does not hold
//! them (`lazy`): the same SQL and the same decoding as SQLite's (`run_rows`, `run_labels`),
//! each value taken as the working copy would have held it ([`as_stored`]), so the runs are
//! those the copy would have given, without inserting ~10 rows per run into it and reading them
//! back.

use super::columns::{Kind, Table};
use super::lazy::Held;
use super::open::Server;
use super::{Pg, params};
use crate::Store;
use crate::copy::Value;
use crate::run_labels::{LABELS_FROM, SELECT_LABELS, read_labels};
use crate::run_rows::{self, Cells, Listed};
use abperf_model::Run;
use anyhow::Context;
use postgres::fallible_iterator::FallibleIterator;
use rusqlite::types::ValueRef;

impl Store {
    /// [`Store::runs_planned`] on a PostgreSQL store: for a reading command, from the server's
    /// rows in one snapshot unless its working copy holds them (a reader of the runs' tables
    /// came first); for a command that writes, from its working copy (filled whole: what it
    /// writes is made there).
    pub(crate) fn runs_on_server(&self, id: i64) -> anyhow::Result<(Vec<Run>, usize)> {
        let Some(Server::Reading(lazy)) = self.server_backend() else {
            return self.runs_here(id);
        };
        if lazy.borrow().held(id) == Some(Held::Whole) || !self.holds(id)? {
            return self.runs_here(id);
        }
        let mut lazy = lazy.borrow_mut();
        let shown = lazy.pg.shown().to_string();
        let runs = lazy.pg.read_runs(id);
        runs.with_context(|| format!("reading the runs of experiment {id} of {shown}"))
    }
}

impl Pg {
    /// Every run of experiment `id` in schedule order, with its metrics, provenance and labels,
    /// and the number of runs planned, in one snapshot (REPEATABLE READ) while `abperf run`
    /// may be committing runs to it.
    fn read_runs(&mut self, id: i64) -> anyhow::Result<(Vec<Run>, usize)> {
        let listed_sql = select(&self.tables, run_rows::SELECT_LISTED, run_rows::LISTED_FROM)?;
        let extra_sql = select(&self.tables, run_rows::SELECT_EXTRA, run_rows::EXTRA_FROM)?;
        let labels_sql = select(&self.tables, SELECT_LABELS, LABELS_FROM)?;
        let mut tx = self
            .client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()?;
        let mut listed = Listed::default();
        each(&mut tx, &listed_sql, id, &mut |r| {
            listed.run(run_rows::read_listed(r)?);
            Ok(())
        })
        .context("reading the runs")?;
        each(&mut tx, &extra_sql, id, &mut |r| {
            listed.extra(run_rows::read_extra(r)?);
            Ok(())
        })
        .context("reading the runs' metrics")?;
        each(&mut tx, &labels_sql, id, &mut |r| {
            let (rid, labels) = read_labels(r)?;
            listed.labels(rid, labels);
            Ok(())
        })
        .context("reading the runs' labels")?;
        let planned: i64 = tx
            .query_one("SELECT count(*) FROM slot WHERE experiment_id = $1", &[&id])?
            .try_get(0)?;
        tx.commit()?;
        Ok((listed.finish()?, usize::try_from(planned).unwrap_or(0)))
    }
}

/// SQLite's `SELECT list FROM ...` (columns `alias.column`, `?1` the experiment) for
/// PostgreSQL, with the kind of each column selected: a NUMERIC column read as its text.
struct Select {
    sql: String,
    kinds: Vec<Kind>,
}

/// The tables the run readers' aliases name.
const ALIASES: &[(&str, &str)] = &[
    ("r", "run"),
    ("i", "import_run"),
    ("s", "slot"),
    ("m", "metric"),
    ("n", "metric_name"),
    ("l", "run_label"),
];

fn select(tables: &[Table], list: &str, from: &str) -> anyhow::Result<Select> {
    let mut items = Vec::new();
    let mut kinds = Vec::new();
    for item in list.split(',').map(str::trim) {
        let (alias, column) = item.split_once('.').context("a column without its table")?;
        let table = ALIASES
            .iter()
            .find(|(a, _)| *a == alias)
            .with_context(|| format!("no table for {item}"))?
            .1;
        let kind = super::columns::find(tables, table)?
            .column(column)
            .with_context(|| format!("no column {item}"))?
            .kind;
        items.push(format!("{alias}.{}", params::selected(column, kind)));
        kinds.push(kind);
    }
    Ok(Select {
        sql: format!("SELECT {} {}", items.join(", "), from.replace("?1", "$1")),
        kinds,
    })
}

/// Hand each row `select` reads of experiment `id` to `each`, as the server sends them.
fn each(
    tx: &mut postgres::Transaction,
    select: &Select,
    id: i64,
    each: &mut dyn FnMut(&Stored) -> rusqlite::Result<()>,
) -> anyhow::Result<()> {
    let mut rows = tx.query_raw(&select.sql, [&id])?;
    let mut values = Stored(Vec::with_capacity(select.kinds.len()));
    while let Some(row) = rows.next()? {
        values.0.clear();
        for (at, kind) in select.kinds.iter().enumerate() {
            values
                .0
                .push(as_stored(params::value(&row, at, *kind)?, *kind));
        }
        each(&values)?;
    }
    Ok(())
}

/// One row's values, read as the rows of an SQLite store are read (`run_rows::Cells`).
struct Stored(Vec<Value>);

impl Cells for Stored {
    fn cell(&self, at: usize) -> rusqlite::Result<ValueRef<'_>> {
        Ok(match self.0.get(at) {
            Some(Value::Null) => ValueRef::Null,
            Some(Value::Integer(i)) => ValueRef::Integer(*i),
            Some(Value::Real(f)) => ValueRef::Real(*f),
            Some(Value::Text(t)) => ValueRef::Text(t.as_bytes()),
            Some(Value::Blob(b)) => ValueRef::Blob(b),
            None => return Err(rusqlite::Error::InvalidColumnIndex(at)),
        })
    }
}

/// `v`, read from a column of `kind`, as SQLite holds it once written into that column (what
/// the working copy gave back): a NaN is NULL, and a float an INTEGER or REAL column can hold
/// as a 64-bit integer (`sqlite3VdbeIntegerAffinity`) is that integer (a REAL
/// column reads it back as a float); a column without a declared type (`Kind::Numeric`)
/// converts nothing.
fn as_stored(v: Value, kind: Kind) -> Value {
    let same_as_int = |f: f64| {
        let i = f as i64;
        f == i as f64 && i > i64::MIN && i < i64::MAX
    };
    match (v, kind) {
        (Value::Real(f), _) if f.is_nan() => Value::Null,
        (Value::Real(f), Kind::Integer) if same_as_int(f) => Value::Integer(f as i64),
        (Value::Real(f), Kind::Real) if same_as_int(f) => Value::Real(f as i64 as f64),
        (v, _) => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_as_the_working_copy_held_them() {
        let n = Kind::Numeric;
        assert_eq!(as_stored(Value::Real(f64::NAN), Kind::Real), Value::Null);
        assert_eq!(as_stored(Value::Real(2.0), n), Value::Real(2.0));
        assert_eq!(
            as_stored(Value::Real(2.0), Kind::Integer),
            Value::Integer(2)
        );
        assert_eq!(as_stored(Value::Real(2.5), n), Value::Real(2.5));
        assert_eq!(as_stored(Value::Real(1e300), n), Value::Real(1e300));
        let zero = as_stored(Value::Real(-0.0), Kind::Real);
        assert!(matches!(zero, Value::Real(z) if z == 0.0 && z.is_sign_positive()));
        assert_eq!(as_stored(Value::Integer(7), n), Value::Integer(7));
        assert_eq!(
            as_stored(Value::Text("x".into()), Kind::Text),
            Value::Text("x".into())
        );
    }

    /// The same values through an in-memory SQLite table with the columns' affinities: what
    /// the working copy held.
    #[test]
    fn as_stored_agrees_with_sqlite() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (n, r REAL, i INTEGER)")
            .unwrap();
        let values = [
            0.0,
            -0.0,
            1.0,
            -3.0,
            2.5,
            1e15,
            4e15,
            1e300,
            f64::NAN,
            f64::INFINITY,
        ];
        for f in values {
            conn.execute("DELETE FROM t", []).unwrap();
            conn.execute("INSERT INTO t VALUES (?1, ?1, ?1)", [f])
                .unwrap();
            let held: Vec<Value> = conn
                .query_row("SELECT n, r, i FROM t", [], |r| {
                    (0..3)
                        .map(|at| {
                            Ok(match r.get_ref(at)? {
                                ValueRef::Null => Value::Null,
                                ValueRef::Integer(i) => Value::Integer(i),
                                ValueRef::Real(f) => Value::Real(f),
                                _ => unreachable!(),
                            })
                        })
                        .collect()
                })
                .unwrap();
            let ours: Vec<Value> = [Kind::Numeric, Kind::Real, Kind::Integer]
                .map(|k| as_stored(Value::Real(f), k))
                .into();
            let bits = |v: &[Value]| {
                format!(
                    "{:?}",
                    v.iter()
                        .map(|v| match v {
                            Value::Real(f) => format!("R{:x}", f.to_bits()),
                            other => format!("{other:?}"),
                        })
                        .collect::<Vec<_>>()
                )
            };
            assert_eq!(bits(&ours), bits(&held), "{f}");
        }
    }
}
