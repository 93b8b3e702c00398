//! The runs of one experiment read straight from the server's rows into the model, for a
//! reading command (`show`, `compare`, `report`, `export`) whose working copy does not hold
//! them (`lazy`): the same SQL and the same decoding as SQLite's (`run_rows`, `run_labels`),
//! each value taken as the working copy would have held it ([`as_stored`]), so the runs are
//! those the copy would have given, without inserting ~10 rows per run into it and reading them
//! back.

use super::columns::{Kind, Table};
use super::lazy::Held;
use super::open::Server;
use super::read::snapshot;
use super::{Pg, params};
use crate::Store;
use crate::copy::Value;
use crate::run_labels::{SELECT_LABELS, read_labels};
use crate::run_rows::{self, Cells, Listed};
use abperf_model::Run;
use anyhow::Context;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
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

/// The experiment's runs (their own columns: the first 20 of [`run_rows::SELECT_LISTED`],
/// what [`run_rows::read_run`] reads), on the index of `UNIQUE (experiment_id, seq)`; put in
/// schedule order here ([`Listed::in_schedule_order`]), not by a sort on the server.
const RUNS_FROM: &str = "FROM run r WHERE r.experiment_id = ?1";

/// The rows of the tables keyed by run id whose run ids lie between the experiment's least and
/// greatest (`$1`, `$2`): a range of their primary key's index, without a join with `run`. A
/// row of another experiment's run in that range (runs of two experiments made at once) is
/// read and ignored ([`Listed`] keeps only the runs it read).
const SELECT_SOURCES: &str = "i.run_id, i.format, i.file, i.line, i.summary, i.repeats";
const SOURCES_FROM: &str = "FROM import_run i WHERE i.run_id BETWEEN $1 AND $2";
const EXTRA_FROM: &str = "FROM metric m JOIN metric_name n ON n.id = m.name_id \
     WHERE m.run_id BETWEEN $1 AND $2 ORDER BY m.run_id, m.pos";
const LABELS_IN: &str = "FROM run_label l WHERE l.run_id BETWEEN $1 AND $2";

/// The schedule's slots in one row of two arrays (seqs and blocks: one message rather than a
/// row per slot): each run's block, and how many runs were planned.
const SELECT_BLOCKS: &str = "SELECT coalesce(array_agg(seq), '{}'), coalesce(array_agg(block), '{}') \
     FROM slot WHERE experiment_id = $1";

/// Memory for the server's sorts and hashes in the read's transaction (the metrics of a large
/// experiment sorted in memory rather than spilled to disk at the default 4 MB).
const READ_WORK_MEM: &str = "SET LOCAL work_mem = '64MB'";

impl Pg {
    /// Every run of experiment `id` in schedule order, with its metrics, provenance and labels,
    /// and the number of runs planned, in one snapshot (REPEATABLE READ) while `abperf run`
    /// may be committing runs to it. Each table is read by a plain scan of an index and the
    /// rows are joined here, by run id and seq: SQLite's `LISTED_FROM` joins them in its
    /// query, and on the server those joins of every run (and the sort of their result) cost
    /// more than reading the rows.
    fn read_runs(&mut self, id: i64) -> anyhow::Result<(Vec<Run>, usize)> {
        let run_columns: Vec<&str> = run_rows::SELECT_LISTED.split(',').take(20).collect();
        let runs_sql = select(&self.tables, &run_columns.join(","), RUNS_FROM)?;
        let mut tx = snapshot(&mut self.client)?;
        tx.batch_execute(READ_WORK_MEM)?;
        let mut listed = Listed::default();
        each(&mut tx, &runs_sql, &[&id], &mut |r| {
            listed.run(run_rows::read_run(r)?);
            Ok(())
        })
        .context("reading the runs")?;
        listed.in_schedule_order();
        let slots = tx.query_one(SELECT_BLOCKS, &[&id]);
        let planned = read_blocks(slots, &mut listed).context("reading the schedule")?;
        if let Some((first, last)) = listed.id_range() {
            read_by_run_id(&self.tables, &mut tx, &mut listed, (first, last))?;
        }
        tx.commit()?;
        Ok((listed.finish()?, planned))
    }
}

/// Give each run of `listed` its block from `slots` (the row of [`SELECT_BLOCKS`]); the number
/// of slots.
fn read_blocks(
    slots: Result<postgres::Row, postgres::Error>,
    listed: &mut Listed,
) -> anyhow::Result<usize> {
    let slots = slots?;
    let (seqs, blocks): (Vec<i64>, Vec<i64>) = (slots.try_get(0)?, slots.try_get(1)?);
    anyhow::ensure!(seqs.len() == blocks.len(), "as many seqs as blocks");
    for (&seq, &block) in seqs.iter().zip(&blocks) {
        let block = i32::try_from(block)
            .with_context(|| format!("the block of slot {seq}, {block}, is out of range"))?;
        listed.block(seq, block);
    }
    Ok(seqs.len())
}

/// The provenance, other metrics and labels of the runs in `listed`, whose ids lie
/// between `first` and `last`.
fn read_by_run_id(
    tables: &[Table],
    tx: &mut postgres::Transaction,
    listed: &mut Listed,
    (first, last): (i64, i64),
) -> anyhow::Result<()> {
    let sources_sql = select(tables, SELECT_SOURCES, SOURCES_FROM)?;
    let extra_sql = select(tables, run_rows::SELECT_EXTRA, EXTRA_FROM)?;
    let labels_sql = select(tables, SELECT_LABELS, LABELS_IN)?;
    let range: [&(dyn ToSql + Sync); 2] = [&first, &last];
    each(tx, &sources_sql, &range, &mut |r| {
        listed.source(r.get(0)?, run_rows::read_source(r, 1)?);
        Ok(())
    })
    .context("reading the runs' provenance")?;
    each(tx, &extra_sql, &range, &mut |r| {
        listed.extra(run_rows::read_extra(r)?);
        Ok(())
    })
    .context("reading the runs' metrics")?;
    each(tx, &labels_sql, &range, &mut |r| {
        let (rid, labels) = read_labels(r)?;
        listed.labels(rid, labels);
        Ok(())
    })
    .context("reading the runs' labels")
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

/// Hand each row `select` reads with `params` to `each`, as the server sends them.
fn each(
    tx: &mut postgres::Transaction,
    select: &Select,
    params: &[&(dyn ToSql + Sync)],
    each: &mut dyn FnMut(&Stored) -> rusqlite::Result<()>,
) -> anyhow::Result<()> {
    let mut rows = tx.query_raw(&select.sql, params.iter().copied())?;
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
