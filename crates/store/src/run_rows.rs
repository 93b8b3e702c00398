//! Runs stored compactly (migration 12): one `run` row per run with a column for each metric every
//! plain run has (wall time and rusage), and the other metrics (counters, tracepoints, a workload's
//! own, imported ones with other units) in `metric`, their name, unit and direction interned in
//! `metric_name`. Before it a plain run took ~580 bytes (its row, two indexes, and a dozen metric
//! rows each repeating its name and unit); now ~70 (benches/store_size.sh).
//!
//! Lossless: a metric goes into its fixed column only when name and unit are the column's, it
//! declares no direction, and it follows the run's previous fixed-column metric in column order;
//! any other metric is a `metric` row at its place (`pos`) in the run's metric list. Reading fills
//! the places no `metric` row takes with the fixed columns in column order, so a run reads back
//! with the metrics, units, directions, values (f64, bit for bit) and order it was written with.
//! The schedule (`slot`) becomes a table keyed by its primary key alone. The run's status is a
//! small code for the words this abperf writes (any other word is kept as
//! text), its end a duration from its start.
//!
//! The encoding is `run_codec`'s; the migration rewrites `run` and `metric` of an older store in
//! Rust (`schema::convert_runs`) inside the migration's transaction, keeping every run's id
//! (import_run and boot_run point at it).

pub use super::run_codec::FIXED;
use super::run_codec::{STATUS_WORDS, STORE, status_value, write};
use abperf_model::{Direction, Metric, Run, RunStatus};
use anyhow::Context;
use rusqlite::Connection;
use rusqlite::types::{FromSql, ValueRef};
use std::collections::BTreeMap;

/// The cells of one row as the readers below read them: a row of an SQLite store, or the values
/// of a PostgreSQL store's row as the store would hold them (`postgres::run_read`), so both
/// decode runs the same way.
pub(crate) trait Cells {
    /// The value in column `at`.
    fn cell(&self, at: usize) -> rusqlite::Result<ValueRef<'_>>;

    /// The value in column `at` as a `T`, converted as rusqlite converts a column.
    fn get<T: FromSql>(&self, at: usize) -> rusqlite::Result<T> {
        let v = self.cell(at)?;
        T::column_result(v)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(at, v.data_type(), Box::new(e)))
    }
}

impl Cells for rusqlite::Row<'_> {
    fn cell(&self, at: usize) -> rusqlite::Result<ValueRef<'_>> {
        self.get_ref(at)
    }

    fn get<T: FromSql>(&self, at: usize) -> rusqlite::Result<T> {
        rusqlite::Row::get(self, at)
    }
}

/// Store `run` of experiment `exp_id` (its variant by position) in the caller's transaction;
/// returns its row id.
pub(super) fn insert(tx: &Connection, exp_id: i64, run: &Run) -> anyhow::Result<i64> {
    write(
        tx,
        exp_id,
        run,
        status_value(run.status.as_str()),
        None,
        &STORE,
    )
}

/// Where [`SELECT_LISTED`] reads the runs of experiment `?1` from, in schedule order.
pub(crate) const LISTED_FROM: &str = "FROM run r
     LEFT JOIN import_run i ON i.run_id = r.id
     LEFT JOIN slot s ON s.experiment_id = r.experiment_id AND s.seq = r.seq
     WHERE r.experiment_id = ?1 ORDER BY r.seq";

/// What [`read_listed`] reads: the run (its id first) up to its fixed metrics, as [`read_run`]
/// reads them, then the run's provenance and its schedule block.
pub(crate) const SELECT_LISTED: &str = "r.id, r.variant, r.seq, r.warmup, r.status, r.exit_code, \
    r.signal, r.started_ns, r.duration_ns, r.excluded, r.wall_ns, r.user_ns, r.sys_ns, \
    r.maxrss_kib, r.minflt, r.majflt, r.nvcsw, r.nivcsw, r.inblock, r.oublock, \
    i.format, i.file, i.line, i.summary, i.repeats, s.block";

/// Where [`SELECT_EXTRA`] reads the other metrics of experiment `?1`'s runs from, by run and place.
pub(crate) const EXTRA_FROM: &str = "FROM metric m JOIN metric_name n ON n.id = m.name_id
     JOIN run r ON r.id = m.run_id WHERE r.experiment_id = ?1 ORDER BY m.run_id, m.pos";

/// A run read from a row of [`SELECT_LISTED`], with its provenance and block: (row id, run).
pub(crate) fn read_listed<C: Cells + ?Sized>(r: &C) -> rusqlite::Result<(i64, Run)> {
    const I: usize = 20; // the first column after the fixed metrics
    let source = read_source(r, I)?;
    let (rid, mut run) = read_run(r)?;
    run.block = r.get::<Option<i32>>(I + 5)?.unwrap_or(0);
    run.source = source;
    Ok((rid, run))
}

/// A run's provenance read from the columns `i.format, i.file, i.line, i.summary, i.repeats`
/// starting at column `at` (None: the run was not imported, its `format` NULL).
pub(crate) fn read_source<C: Cells + ?Sized>(
    r: &C,
    at: usize,
) -> rusqlite::Result<Option<abperf_model::Source>> {
    let format: Option<String> = r.get(at)?;
    Ok(match format {
        Some(format) => Some(abperf_model::Source {
            format,
            file: r.get(at + 1)?,
            line: r.get(at + 2)?,
            summary: r.get(at + 3)?,
            repeats: r.get(at + 4)?,
        }),
        None => None,
    })
}

/// The runs of one experiment as their rows arrive: the runs in schedule order, then the other
/// metrics by run and place, then the labels; [`Listed::finish`] gives them whole.
#[derive(Default)]
pub(crate) struct Listed {
    index: BTreeMap<i64, usize>,
    runs: Vec<Run>,
    extra: BTreeMap<usize, Vec<(usize, Metric)>>,
}

impl Listed {
    /// A run read by [`read_listed`].
    pub(crate) fn run(&mut self, (rid, run): (i64, Run)) {
        self.index.insert(rid, self.runs.len());
        self.runs.push(run);
    }

    /// Put the runs read in schedule order (by seq), for a reader whose rows came unordered.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // the PostgreSQL reader's
    pub(crate) fn in_schedule_order(&mut self) {
        let mut ids: Vec<(u32, i64)> = self
            .index
            .iter()
            .map(|(&rid, &i)| (self.runs[i].seq, rid))
            .collect();
        ids.sort_unstable();
        self.runs.sort_unstable_by_key(|r| r.seq);
        self.index = ids
            .into_iter()
            .enumerate()
            .map(|(i, (_, rid))| (rid, i))
            .collect();
    }

    /// The least and greatest row id of the runs read (None: no run).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // the PostgreSQL reader's
    pub(crate) fn id_range(&self) -> Option<(i64, i64)> {
        Some((
            *self.index.first_key_value()?.0,
            *self.index.last_key_value()?.0,
        ))
    }

    /// The provenance of run `rid` (that of a run not read is ignored).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // the PostgreSQL reader's
    pub(crate) fn source(&mut self, rid: i64, source: Option<abperf_model::Source>) {
        if let Some(&i) = self.index.get(&rid) {
            self.runs[i].source = source;
        }
    }

    /// The schedule block of the run at `seq`, the runs read in schedule order (that of a slot
    /// without a run is ignored).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // the PostgreSQL reader's
    pub(crate) fn block(&mut self, seq: i64, block: i32) {
        let Ok(seq) = u32::try_from(seq) else { return };
        if let Ok(i) = self.runs.binary_search_by_key(&seq, |r| r.seq) {
            self.runs[i].block = block;
        }
    }

    /// A metric read by [`read_extra`] (one of a run not read is ignored).
    pub(crate) fn extra(&mut self, (rid, pos, metric): (i64, usize, Metric)) {
        if let Some(&i) = self.index.get(&rid) {
            self.extra.entry(i).or_default().push((pos, metric));
        }
    }

    /// The labels of run `rid` (those of a run not read are ignored).
    pub(crate) fn labels(&mut self, rid: i64, labels: abperf_model::Labels) {
        if let Some(&i) = self.index.get(&rid) {
            self.runs[i].labels = labels;
        }
    }

    /// The runs, each with its other metrics in their places.
    pub(crate) fn finish(mut self) -> anyhow::Result<Vec<Run>> {
        for (i, ms) in std::mem::take(&mut self.extra) {
            merge(&mut self.runs[i], ms)?;
        }
        Ok(self.runs)
    }
}

/// The run's status read from the `status` column.
fn status(v: ValueRef) -> rusqlite::Result<RunStatus> {
    Ok(match v {
        ValueRef::Integer(i) => RunStatus::parse(
            STATUS_WORDS
                .get(usize::try_from(i).unwrap_or(usize::MAX))
                .unwrap_or(&""),
        ),
        ValueRef::Text(t) => RunStatus::parse(&String::from_utf8_lossy(t)),
        _ => RunStatus::Failed,
    })
}

/// A run read from the first 20 columns of a row of [`SELECT_LISTED`] (with `block` 0, no provenance and only its fixed
/// metrics, in column order: [`merge`] puts the others in their places): (row id, run).
pub(super) fn read_run<C: Cells + ?Sized>(r: &C) -> rusqlite::Result<(i64, Run)> {
    let started_ns: i64 = r.get(7)?;
    let mut metrics = Vec::new();
    for (k, (name, unit)) in FIXED.iter().enumerate() {
        if let Some(v) = r.get::<Option<f64>>(10 + k)? {
            metrics.push(Metric::new(*name, v, *unit));
        }
    }
    Ok((
        r.get(0)?,
        Run {
            variant: r.get::<i64>(1)? as usize,
            seq: r.get(2)?,
            warmup: r.get(3)?,
            block: 0,
            status: status(r.cell(4)?)?,
            exit_code: r.get(5)?,
            signal: r.get(6)?,
            started_ns,
            ended_ns: started_ns.wrapping_add(r.get::<i64>(8)?),
            excluded: r.get(9)?,
            metrics,
            source: None,
            labels: Default::default(),
        },
    ))
}

/// The columns of a `metric` row joined with its name, as [`read_extra`] reads them.
pub(crate) const SELECT_EXTRA: &str = "m.run_id, m.pos, n.name, n.unit, n.direction, m.value";

/// Put the other metrics (`extra`: place, metric; in place order) of a run read by [`read_run`]
/// into their places among its fixed ones.
pub(super) fn merge(run: &mut Run, extra: Vec<(usize, Metric)>) -> anyhow::Result<()> {
    if extra.is_empty() {
        return Ok(());
    }
    let total = run.metrics.len() + extra.len();
    let mut fixed = std::mem::take(&mut run.metrics).into_iter();
    let mut extra = extra.into_iter().peekable();
    for i in 0..total {
        let m = match extra.next_if(|(pos, _)| *pos == i) {
            Some((_, m)) => m,
            None => fixed.next().with_context(|| {
                format!(
                    "run {}: stored metric places do not fit ({total} metrics)",
                    run.seq
                )
            })?,
        };
        run.metrics.push(m);
    }
    if extra.next().is_some() {
        anyhow::bail!(
            "run {}: a stored metric's place is beyond its {total} metrics",
            run.seq
        );
    }
    Ok(())
}

/// A metric read from `metric` joined with `metric_name`.
pub(crate) fn read_extra<C: Cells + ?Sized>(r: &C) -> rusqlite::Result<(i64, usize, Metric)> {
    let dir: String = r.get(4)?;
    Ok((
        r.get(0)?,
        r.get::<i64>(1)? as usize,
        Metric {
            name: r.get(2)?,
            unit: r.get(3)?,
            // a word a newer abperf wrote: derived instead
            direction: Direction::parse(&dir),
            value: r.get(5)?,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_codec::split;
    use crate::schema::ddl::RUNS_COMPACT as SCHEMA;
    use crate::{MIGRATIONS, Store};
    use abperf_model::Source;
    use rusqlite::{Connection, params};

    /// A store at the schema version before this migration.
    fn old_store(path: &std::path::Path) -> Connection {
        let before = MIGRATIONS.iter().position(|m| *m == SCHEMA).unwrap();
        let conn = Connection::open(path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        for sql in &MIGRATIONS[..before] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", before as i64)
            .unwrap();
        conn
    }

    /// An experiment with two variants, as the old code wrote it.
    fn old_experiment(conn: &Connection, id: i64) {
        conn.execute(
            "INSERT INTO experiment (id, name, kind, created, command_line, design, seed, environment, status)
             VALUES (?1, 'old', 'run', '2026-01-01T00:00:00Z', '[]', '{}', '7', '{}', 'complete')",
            [id],
        )
        .unwrap();
        for (pos, name) in ["a", "b"].iter().enumerate() {
            conn.execute(
                "INSERT INTO variant (experiment_id, position, name, command, parameters, knobs)
                 VALUES (?1, ?2, ?3, 'true', '{}', '[]')",
                params![id, pos as i64, name],
            )
            .unwrap();
        }
    }

    /// Write `run` the way the code before migration 12 did (run row, one metric row per metric
    /// in order, provenance), with `status` as the stored word; returns the run's id.
    fn old_run(conn: &Connection, exp: i64, run: &Run, status: &str) -> i64 {
        let vid: i64 = conn
            .query_row(
                "SELECT id FROM variant WHERE experiment_id = ?1 AND position = ?2",
                params![exp, run.variant as i64],
                |r| r.get(0),
            )
            .unwrap();
        if run.source.is_none() {
            conn.execute(
                "INSERT INTO slot (experiment_id, seq, variant_id, block, warmup) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![exp, run.seq, vid, run.block, run.warmup],
            )
            .unwrap();
        }
        conn.execute(
            "INSERT INTO run (experiment_id, variant_id, seq, warmup, status, exit_code, signal, started_ns, ended_ns, excluded)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![exp, vid, run.seq, run.warmup, status, run.exit_code, run.signal,
                    run.started_ns, run.ended_ns, run.excluded],
        )
        .unwrap();
        let id = conn.last_insert_rowid();
        for m in &run.metrics {
            conn.execute(
                "INSERT INTO metric (run_id, name, value, unit, direction) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, m.name, m.value, m.unit, m.direction.map(|d| d.as_str())],
            )
            .unwrap();
        }
        if let Some(s) = &run.source {
            conn.execute(
                "INSERT INTO import_run (run_id, format, file, line, summary, repeats) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, s.format, s.file, s.line, s.summary, s.repeats],
            )
            .unwrap();
        }
        id
    }

    fn plain(seq: u32, variant: usize, wall: f64) -> Run {
        let mut metrics = vec![Metric::new("wall_ns", wall, "ns")];
        for (name, unit) in &FIXED[1..] {
            metrics.push(Metric::new(*name, (seq * 1000 + 7) as f64, *unit));
        }
        Run {
            exit_code: Some(0),
            started_ns: 1_795_398_146_673_754_225 + seq as i64 * 1_000_000,
            ended_ns: 1_795_398_146_673_754_225 + seq as i64 * 1_000_000 + 654_321,
            block: seq as i32 / 4,
            ..Run::ok(seq, variant, metrics)
        }
    }

    /// Runs with every odd case the old layout could hold, and the status word stored for each.
    fn odd_runs() -> Vec<(Run, &'static str)> {
        let mut v = Vec::new();
        let mut warm = plain(0, 0, 1_000_000.0);
        warm.warmup = true;
        warm.block = -1;
        v.push((warm, "ok"));
        v.push((plain(1, 1, 2_000_000.0), "ok"));
        // A standard name in another unit, out of column order, with odd values.
        let mut r = plain(2, 0, 0.0);
        r.metrics = vec![
            Metric::new("user_ns", 12.5, "ns"),
            Metric::new("wall_ns", 1.5, "us"),
            Metric::new("sys_ns", -0.0, "ns"),
            Metric::new("maxrss_kib", 1e300, "KiB"),
            Metric::new("minflt", 9_223_372_036_854_775_808.0, "count"),
            Metric::new("majflt", -3.0, "count"),
            Metric::new("nvcsw", f64::MIN_POSITIVE, "count"),
            Metric::new("nivcsw", 2f64.powi(53) + 2.0, "count"),
        ];
        v.push((r, "ok"));
        // Excluded by the user.
        let mut r = plain(3, 1, 3_000_000.0);
        r.excluded = Some("noisy neighbour".into());
        v.push((r, "ok"));
        // Failed by a signal, no exit code; and a timeout.
        let mut r = plain(4, 0, 4_000_000.0);
        r.status = RunStatus::Failed;
        r.exit_code = None;
        r.signal = Some(libc::SIGSEGV);
        r.ended_ns = r.started_ns - 5; // a clock step backwards
        v.push((r, "failed"));
        let mut r = plain(5, 1, 5_000_000.0);
        r.status = RunStatus::Timeout;
        r.exit_code = None;
        r.signal = Some(libc::SIGKILL);
        v.push((r, "timeout"));
        // A word only a newer abperf writes: read as failed, kept as written.
        let mut r = plain(6, 0, 6_000_000.0);
        r.status = RunStatus::Failed;
        v.push((r, "lost-in-space"));
        // Counters, a workload's metrics (declared directions, one on a standard name) and no
        // rusage.
        let mut r = plain(7, 1, 7_000_000.0);
        r.metrics
            .push(Metric::new("cycles", 123_456_789.0, "count"));
        r.metrics.push(Metric::new("tlb:tlb_flush", 0.25, "count"));
        r.metrics
            .push(Metric::new("ops_per_s", 1234.5, "ops/s").declared(Direction::HigherIsBetter));
        v.push((r, "ok"));
        let mut r = Run::ok(
            8,
            0,
            vec![
                Metric::new("pages", 3.0, "pages").declared(Direction::Count),
                Metric::new("wall_ns", 8_000_000.0, "ns").declared(Direction::LowerIsBetter),
                Metric::new("user_ns", 1.0, "ns"),
            ],
        );
        r.started_ns = -1;
        r.ended_ns = i64::MAX;
        v.push((r, "ok"));
        // No metrics at all.
        v.push((Run::ok(9, 1, vec![]), "failed"));
        // Imported, with provenance (no schedule slot: block 0).
        let mut r = Run::ok(
            10,
            0,
            vec![
                Metric::new("wall_ns", 1_234_567.0, "ns"),
                Metric::new("task-clock", 0.987, "msec"),
            ],
        );
        r.source = Some(Source {
            format: "perf-stat".into(),
            file: "stat.txt".into(),
            line: 42,
            summary: true,
            repeats: Some(5),
        });
        v.push((r, "ok"));
        v.iter_mut()
            .filter(|(_, w)| *w == "failed")
            .for_each(|(r, _)| {
                r.status = RunStatus::Failed;
            });
        v
    }

    fn same_bits(a: &[Run], b: &[Run]) {
        assert_eq!(a, b);
        for (x, y) in a.iter().zip(b) {
            for (m, n) in x.metrics.iter().zip(&y.metrics) {
                assert_eq!(
                    m.value.to_bits(),
                    n.value.to_bits(),
                    "{} of run {}",
                    m.name,
                    x.seq
                );
            }
        }
    }

    #[test]
    fn migration_converts_old_stores_losslessly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        let runs = odd_runs();
        let boot_seq = 1;
        {
            let conn = old_store(&path);
            old_experiment(&conn, 1);
            old_experiment(&conn, 2);
            // Runs of two experiments interleaved, so that run ids and metric rows interleave.
            for (r, word) in &runs {
                let id = old_run(&conn, 1, r, word);
                old_run(&conn, 2, &plain(r.seq, r.variant, 42.0), "ok");
                if r.seq == boot_seq {
                    conn.execute_batch(&format!(
                        "INSERT INTO boot_plan (experiment_id, number, variant_id, block, first_seq, last_seq)
                             SELECT 1, 0, id, 0, 0, 10 FROM variant WHERE experiment_id = 1 AND position = 1;
                         INSERT INTO boot (id, experiment_id, number, plan, started, status, accel, environment)
                             VALUES (77, 1, 0, 0, '2026-01-01T00:00:00Z', 'complete', 'kvm', '{{}}');
                         INSERT INTO boot_run (run_id, boot_id) VALUES ({id}, 77);"
                    ))
                    .unwrap();
                }
            }
        }
        let mut store = Store::open(&path).unwrap();
        // What the old layout read back: -0.0 was stored as the integer 0 (the new one keeps it).
        let mut expected: Vec<Run> = runs.iter().map(|(r, _)| r.clone()).collect();
        for m in expected.iter_mut().flat_map(|r| r.metrics.iter_mut()) {
            m.value += 0.0;
        }
        let ds = store.load(1).unwrap();
        same_bits(&ds.runs, &expected);
        assert_eq!(ds.planned, runs.len());
        assert_eq!(ds.boots.len(), 1);
        assert_eq!(ds.boots[0].runs, vec![boot_seq]);
        assert_eq!(store.load(2).unwrap().runs.len(), runs.len());
        let word: String = store
            .conn()
            .query_row(
                "SELECT status FROM run WHERE experiment_id = 1 AND seq = 6",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(word, "lost-in-space");
        // Plain runs took no metric rows; the old tables and index are gone.
        let (rows, names): (i64, i64) = store
            .conn()
            .query_row(
                "SELECT (SELECT count(*) FROM metric), (SELECT count(*) FROM metric_name)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((rows, names), (7, 7), "metric rows and names");
        let left: i64 = store
            .conn()
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name IN ('run_compact', 'metric_compact', 'slot_compact', 'run_variant')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(left, 0);
        // Ids kept: deleting cascades through the converted tables.
        store.delete(1).unwrap();
        let (runs_left, metrics_left, links_left): (i64, i64, i64) = store
            .conn()
            .query_row(
                "SELECT (SELECT count(*) FROM run), (SELECT count(*) FROM metric),
                        (SELECT count(*) FROM import_run) + (SELECT count(*) FROM boot_run)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(
            (runs_left, metrics_left, links_left),
            (runs.len() as i64, 0, 0)
        );
    }

    #[test]
    fn new_runs_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("new.db")).unwrap();
        let exp = abperf_model::NewExperiment {
            name: "new".into(),
            kind: abperf_model::Kind::Run,
            command_line: vec![],
            design: serde_json::json!({}),
            seed: None,
            environment: serde_json::json!({}),
        };
        let runs: Vec<Run> = odd_runs().into_iter().map(|(r, _)| r).collect();
        let slots: Vec<abperf_model::Slot> = runs
            .iter()
            .filter(|r| r.source.is_none())
            .map(|r| abperf_model::Slot {
                seq: r.seq,
                variant: r.variant,
                block: r.block,
                warmup: r.warmup,
            })
            .collect();
        let id = store
            .create_experiment(
                &exp,
                &[
                    abperf_model::Variant::named("a"),
                    abperf_model::Variant::named("b"),
                ],
                &slots,
            )
            .unwrap();
        for r in &runs {
            store.commit_run(id, r).unwrap();
        }
        same_bits(&store.load(id).unwrap().runs, &runs);
        // Refused as before: a second metric of one name, a run of a variant that is not there.
        let mut twice = Run::ok(
            20,
            0,
            vec![Metric::new("x", 1.0, "s"), Metric::new("x", 2.0, "ms")],
        );
        twice.seq = 20;
        let err = format!("{:#}", store.commit_run(id, &twice).unwrap_err());
        assert!(err.contains("metric x of run 20 is given twice"), "{err}");
        let err = format!(
            "{:#}",
            store.commit_run(id, &Run::ok(21, 5, vec![])).unwrap_err()
        );
        assert!(err.contains("has no variant #5"), "{err}");
        assert_eq!(store.load(id).unwrap().runs.len(), runs.len());
    }

    #[test]
    fn rows_read_unordered_are_joined_by_run_id_and_seq() {
        let mut listed = Listed::default();
        for (rid, seq) in [(30, 2), (10, 0), (20, 1)] {
            listed.run((rid, Run::ok(seq, 0, vec![])));
        }
        listed.in_schedule_order();
        assert_eq!(listed.id_range(), Some((10, 30)));
        let source = |line| Source {
            format: "csv".into(),
            file: "f".into(),
            line,
            summary: false,
            repeats: None,
        };
        listed.source(30, Some(source(3)));
        listed.source(25, Some(source(9))); // another experiment's run, in the range
        listed.labels(
            20,
            abperf_model::Labels {
                host: Some("h".into()),
                ..Default::default()
            },
        );
        listed.block(1, 4);
        listed.block(7, 5); // a slot without its run
        let runs = listed.finish().unwrap();
        assert_eq!(runs.iter().map(|r| r.seq).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(runs.iter().map(|r| r.block).collect::<Vec<_>>(), [0, 4, 0]);
        assert_eq!(runs[2].source, Some(source(3)));
        assert!(runs[0].source.is_none() && runs[1].source.is_none());
        assert_eq!(runs[1].labels.host.as_deref(), Some("h"));
        assert!(Listed::default().id_range().is_none());
    }

    #[test]
    fn places_survive_any_order() {
        // Every permutation of three fixed metrics and one other reads back in its order.
        let base = [
            Metric::new("wall_ns", 1.0, "ns"),
            Metric::new("sys_ns", 2.0, "ns"),
            Metric::new("oublock", 3.0, "count"),
            Metric::new("cycles", 4.0, "count"),
        ];
        let mut perms = vec![vec![]];
        for _ in 0..base.len() {
            perms = perms
                .into_iter()
                .flat_map(|p: Vec<usize>| {
                    (0..base.len())
                        .filter(|i| !p.contains(i))
                        .map(|i| {
                            let mut q = p.clone();
                            q.push(i);
                            q
                        })
                        .collect::<Vec<_>>()
                })
                .collect();
        }
        assert_eq!(perms.len(), 24);
        for p in perms {
            let metrics: Vec<Metric> = p.iter().map(|&i| base[i].clone()).collect();
            let row = split(&metrics);
            let mut run = Run::ok(0, 0, Vec::new());
            for (k, (name, unit)) in FIXED.iter().enumerate() {
                if let Some(v) = row.fixed[k] {
                    run.metrics.push(Metric::new(*name, v, *unit));
                }
            }
            let extra = row.extra.iter().map(|(i, m)| (*i, (*m).clone())).collect();
            merge(&mut run, extra).unwrap();
            assert_eq!(run.metrics, metrics, "{p:?}");
        }
    }
}
