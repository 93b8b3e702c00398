//! How a run is encoded in the compact `run` and `metric` tables (migration 12; see
//! `run_rows`): its fixed-column metrics, its other metrics' places, its status word. Below the
//! schema's data step (`schema::convert_runs`) and the store's reading and writing of runs
//! (`run_rows`); depends on no other module of the store.

use abperf_model::{Metric, Run};
use anyhow::Context;
use rusqlite::types::Value;
use rusqlite::{Connection, params};

/// The metrics with a column of their own in `run`, in column (and runner) order.
pub const FIXED: [(&str, &str); 10] = [
    ("wall_ns", "ns"),
    ("user_ns", "ns"),
    ("sys_ns", "ns"),
    ("maxrss_kib", "KiB"),
    ("minflt", "count"),
    ("majflt", "count"),
    ("nvcsw", "count"),
    ("nivcsw", "count"),
    ("inblock", "count"),
    ("oublock", "count"),
];

/// Columns of `run` after `id`, in the order [`RunRow::params`] binds them.
pub(crate) const COLUMNS: &str = "experiment_id, seq, variant, warmup, status, exit_code, signal, \
    started_ns, duration_ns, excluded, wall_ns, user_ns, sys_ns, maxrss_kib, minflt, majflt, \
    nvcsw, nivcsw, inblock, oublock";

/// The one statement that stores a run into `table` (with its row id as ?1 when `with_id`):
/// refused (no row) when the experiment has no variant at the run's position.
pub(crate) fn insert_sql(table: &str, with_id: bool) -> String {
    let n = COLUMNS.split(',').count();
    let first = if with_id { 2 } else { 1 };
    let params: Vec<String> = (first..first + n).map(|i| format!("?{i}")).collect();
    format!(
        "INSERT INTO {table} ({}{COLUMNS}) SELECT {}{} WHERE EXISTS \
         (SELECT 1 FROM variant WHERE experiment_id = ?{first} AND position = ?{})",
        if with_id { "id, " } else { "" },
        if with_id { "?1, " } else { "" },
        params.join(", "),
        first + 2,
    )
}

/// Where [`write`] puts a run: the statement for its row and the table of its other metrics.
pub(crate) struct Target {
    run_sql: String,
    metric_sql: String,
    with_id: bool,
}

impl Target {
    pub(crate) fn new(run_table: &str, metric_table: &str, with_id: bool) -> Target {
        Target {
            run_sql: insert_sql(run_table, with_id),
            metric_sql: format!(
                "INSERT INTO {metric_table} (run_id, pos, name_id, value) VALUES (?1, ?2, ?3, ?4)"
            ),
            with_id,
        }
    }
}

/// The tables every commit writes.
pub(crate) static STORE: std::sync::LazyLock<Target> =
    std::sync::LazyLock::new(|| Target::new("run", "metric", false));

/// A metric's value for an untyped column: an integral value as an integer, which SQLite stores in
/// 0-8 bytes by size and which reads back as the same f64 (it came from one); any other value
/// (and -0.0) as a REAL, 8 bytes.
pub(crate) fn real(v: f64) -> Value {
    let i = v as i64;
    if v.fract() == 0.0 && i as f64 == v && !(v == 0.0 && v.is_sign_negative()) {
        Value::Integer(i)
    } else {
        Value::Real(v)
    }
}

pub(crate) const STATUS_WORDS: [&str; 3] = ["ok", "failed", "timeout"];

pub(crate) fn status_value(word: &str) -> Value {
    match STATUS_WORDS.iter().position(|w| *w == word) {
        Some(i) => Value::Integer(i as i64),
        None => Value::Text(word.to_string()),
    }
}

/// A run split into its `run` row and its `metric` rows.
pub(crate) struct RunRow<'a> {
    pub(crate) fixed: [Option<f64>; FIXED.len()],
    /// (place in the run's metric list, metric) of the metrics without a fixed column.
    pub(crate) extra: Vec<(usize, &'a Metric)>,
}

pub(crate) fn split(metrics: &[Metric]) -> RunRow<'_> {
    let mut fixed = [None; FIXED.len()];
    let mut extra = Vec::new();
    let mut next = 0; // the first fixed column still free in column order
    for (i, m) in metrics.iter().enumerate() {
        let col = FIXED[next..]
            .iter()
            .position(|(n, u)| *n == m.name && *u == m.unit)
            .map(|k| next + k);
        match col {
            Some(k) if m.direction.is_none() => {
                fixed[k] = Some(m.value);
                next = k + 1;
            }
            _ => extra.push((i, m)),
        }
    }
    RunRow { fixed, extra }
}

/// Check what the old `PRIMARY KEY (run_id, name)` and the finite check refused.
pub(crate) fn check_metrics(run: &Run) -> anyhow::Result<()> {
    for (i, m) in run.metrics.iter().enumerate() {
        if !m.value.is_finite() {
            anyhow::bail!(
                "metric {} of run {} is not a finite number ({})",
                m.name,
                run.seq,
                m.value
            );
        }
        if run.metrics[..i].iter().any(|o| o.name == m.name) {
            anyhow::bail!("metric {} of run {} is given twice", m.name, run.seq);
        }
    }
    Ok(())
}

/// The id of a metric's (name, unit, direction), added to `metric_name` when new.
pub(crate) fn name_id(tx: &Connection, m: &Metric) -> anyhow::Result<i64> {
    let dir = m.direction.map(|d| d.as_str()).unwrap_or("");
    let found: Option<i64> = {
        let mut stmt = tx.prepare_cached(
            "SELECT id FROM metric_name WHERE name = ?1 AND unit = ?2 AND direction = ?3",
        )?;
        let mut rows = stmt.query(params![m.name, m.unit, dir])?;
        match rows.next()? {
            Some(r) => Some(r.get(0)?),
            None => None,
        }
    };
    if let Some(id) = found {
        return Ok(id);
    }
    tx.prepare_cached("INSERT INTO metric_name (name, unit, direction) VALUES (?1, ?2, ?3)")?
        .execute(params![m.name, m.unit, dir])?;
    Ok(tx.last_insert_rowid())
}

/// Write `run` of experiment `exp_id` to `target`, with row id `id` when the target takes one;
/// returns the run's row id.
pub(crate) fn write(
    tx: &Connection,
    exp_id: i64,
    run: &Run,
    status: Value,
    id: Option<i64>,
    target: &Target,
) -> anyhow::Result<i64> {
    check_metrics(run)?;
    let row = split(&run.metrics);
    let mut values: Vec<Value> = Vec::with_capacity(21);
    if target.with_id {
        values.push(id.map_or(Value::Null, Value::Integer));
    }
    values.extend([
        Value::Integer(exp_id),
        Value::Integer(run.seq as i64),
        Value::Integer(run.variant as i64),
        Value::Integer(run.warmup as i64),
        status,
        run.exit_code
            .map_or(Value::Null, |c| Value::Integer(c as i64)),
        run.signal.map_or(Value::Null, |s| Value::Integer(s as i64)),
        Value::Integer(run.started_ns),
        Value::Integer(run.ended_ns.wrapping_sub(run.started_ns)),
        run.excluded.clone().map_or(Value::Null, Value::Text),
    ]);
    values.extend(row.fixed.iter().map(|v| v.map_or(Value::Null, real)));
    let n = tx
        .prepare_cached(&target.run_sql)?
        .execute(rusqlite::params_from_iter(values))?;
    if n == 0 {
        anyhow::bail!("experiment {exp_id} has no variant #{}", run.variant);
    }
    let run_id = tx.last_insert_rowid();
    for (pos, m) in row.extra {
        let nid = name_id(tx, m)?;
        tx.prepare_cached(&target.metric_sql)?
            .execute(params![run_id, pos as i64, nid, real(m.value)])
            .with_context(|| format!("metric {} of run {}", m.name, run.seq))?;
    }
    Ok(run_id)
}
