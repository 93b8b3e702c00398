//! The versioned schema. `PRAGMA user_version` holds the version; each migration moves the
//! database one version up inside a transaction, so a store is never left half-migrated.
//! To change the schema, append a migration: never edit one that has shipped.

mod convert_runs;
pub(crate) mod ddl;

use rusqlite::Connection;

/// Migrations in order; migration `i` moves the store from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: experiments, variants, the planned schedule, runs and their metrics.
    "
    CREATE TABLE experiment (
        id            INTEGER PRIMARY KEY,
        name          TEXT NOT NULL,
        kind          TEXT NOT NULL,            -- run | micro | import | trace
        created       TEXT NOT NULL,            -- UTC, RFC 3339
        command_line  TEXT NOT NULL,            -- JSON array: the argv that made it
        design        TEXT NOT NULL,            -- JSON: order, seed, runs, warm-ups, options
        seed          TEXT,                     -- u64 as decimal text (SQLite has no u64)
        environment   TEXT NOT NULL,            -- JSON snapshot of machine and kernel
        status        TEXT NOT NULL,            -- running | complete | interrupted | failed
        notes         TEXT
    );
    CREATE TABLE variant (
        id            INTEGER PRIMARY KEY,
        experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
        position      INTEGER NOT NULL,         -- 0 = first variant (default baseline)
        name          TEXT NOT NULL,
        command       TEXT,
        parameters    TEXT NOT NULL,            -- JSON object NAME -> value
        knobs         TEXT NOT NULL,            -- JSON list of {path, value, original}
        UNIQUE (experiment_id, position),
        UNIQUE (experiment_id, name)
    );
    -- The whole planned schedule, written before the first run, so that --resume continues it
    -- exactly and a reader can tell planned from done.
    CREATE TABLE slot (
        experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
        seq           INTEGER NOT NULL,         -- position in the schedule, from 0
        variant_id    INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
        block         INTEGER NOT NULL,         -- ABBA block number (-1 for warm-ups)
        warmup        INTEGER NOT NULL,
        PRIMARY KEY (experiment_id, seq)
    );
    CREATE TABLE run (
        id            INTEGER PRIMARY KEY,
        experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
        variant_id    INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
        seq           INTEGER NOT NULL,
        warmup        INTEGER NOT NULL,
        status        TEXT NOT NULL,            -- ok | failed | timeout
        exit_code     INTEGER,
        signal        INTEGER,
        started_ns    INTEGER NOT NULL,         -- CLOCK_REALTIME, ns since the epoch
        ended_ns      INTEGER NOT NULL,
        excluded      TEXT,                     -- reason, when a user excluded the run
        UNIQUE (experiment_id, seq)
    );
    CREATE TABLE metric (
        run_id        INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
        name          TEXT NOT NULL,            -- wall_ns, maxrss_kib, tlb:tlb_flush, ...
        value         REAL NOT NULL,
        unit          TEXT NOT NULL,            -- ns, KiB, count, ...
        PRIMARY KEY (run_id, name)
    );
    CREATE INDEX run_variant ON run(variant_id);
    ",
    // 2: trace captures and their aggregated tables.
    ddl::TRACE,
    // 3: provenance of imported runs.
    ddl::IMPORT,
    // 4: micro benchmark findings.
    ddl::MICRO,
    // 5: originals of settings changed by doctor --fix and run --tune.
    ddl::TUNE,
    // 6: trace bins keep their durations; capture scope, stop and tracing cost.
    ddl::TRACE_ROBUST,
    // 7: kernel variants: what a variant boots, the boot order, the boots, run -> boot.
    ddl::BOOTS,
    // 8: built-in workloads: a metric's declared direction, the workload a variant runs.
    "
    -- NULL: derived from the metric's name and unit (everything before workloads).
    ALTER TABLE metric ADD COLUMN direction TEXT;   -- lower-is-better | higher-is-better | count
    -- JSON {name, version, params, per_run_seed} for `run @NAME` variants, else NULL.
    ALTER TABLE variant ADD COLUMN workload TEXT;
    ",
    // 9: micro samples packed one row per round and configuration.
    ddl::MICRO_ROUNDS,
    // 10: the process that runs each experiment (pid, start time, boot id, host).
    ddl::OWNER,
    // 11: experiment ids are never reused.
    ddl::EXPERIMENT_IDS,
    // 12: runs stored compactly: fixed columns for wall and rusage, other metrics' names interned
    // (the data converted in Rust: see `post_step`).
    ddl::RUNS_COMPACT,
    // 13: the invocation, boot and host an imported run names.
    ddl::RUN_LABELS,
    // 14: the invocation (process) each micro round was measured in.
    ddl::MICRO_INVOCATION,
    // 15: the hosts of a fleet experiment and the slots each owns.
    ddl::FLEET,
    // 16: profiled runs and their symbols' shares of samples.
    ddl::PROFILE,
    // 17: an experiment's labels (`--label KEY=VALUE`), read by `abperf history`.
    "
    ALTER TABLE experiment ADD COLUMN labels TEXT;  -- JSON object KEY -> VALUE; NULL: none
    ",
    // 18: what each kernel variant's kernel was built from, and its image's hash.
    ddl::KERNEL_PROVENANCE,
    // 19: each profiled run's collapsed call stacks (the flame graph's).
    ddl::PROFILE_STACKS,
];

/// The schema every migration together builds, as one script (`schema_prepared.sql`): a new
/// store (and `--no-store`'s in-memory one) is created from it in one step instead of replaying
/// twelve migrations with their table rebuilds and data conversions. A test checks that it
/// equals what the migrations build; after adding a migration, regenerate it with
/// `ABPERF_WRITE_PREPARED_SCHEMA=1 cargo test -p abperf-store prepared_schema`.
const PREPARED: &str = include_str!("../schema_prepared.sql");

/// Whether the database holds no table, index, view or trigger at all.
fn is_empty(tx: &rusqlite::Transaction) -> rusqlite::Result<bool> {
    tx.query_row("SELECT count(*) = 0 FROM sqlite_schema", [], |r| r.get(0))
}

/// The schema version this build writes.
pub fn current_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// Bring `conn` up to the current version. Refuses a store written by a newer abperf.
pub fn migrate(conn: &mut Connection) -> anyhow::Result<()> {
    // A store of this version needs nothing (versions only go up): said by one read, without
    // the write lock or the foreign-key switches below (issue 46: five statements compiled and
    // an empty write transaction on every open). Any other version is read again under the lock.
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version == current_version() {
        return Ok(());
    }
    // A migration that rebuilds a table drops the old one: with foreign keys on, that would
    // delete every row pointing at it (ON DELETE CASCADE). Off while migrating (it cannot change
    // inside a transaction), then as it was; a rebuild checks the keys itself.
    let fk: bool = conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?;
    if fk {
        conn.pragma_update(None, "foreign_keys", false)?;
    }
    let result = migrate_steps(conn);
    if fk {
        conn.pragma_update(None, "foreign_keys", true)?;
    }
    result
}

/// The data step of a migration that SQL alone cannot express, run after its SQL in its
/// transaction.
fn post_step(sql: &str, tx: &rusqlite::Transaction) -> anyhow::Result<()> {
    if sql == ddl::RUNS_COMPACT {
        convert_runs::convert(tx)?;
    }
    Ok(())
}

fn migrate_steps(conn: &mut Connection) -> anyhow::Result<()> {
    // IMMEDIATE takes the write lock first, so two processes opening a new store at once cannot
    // both apply the same migrations; the version is read under the lock. Every pending step in
    // one transaction: one commit (and its fsyncs) for a new store instead of one per step, and
    // a store is never left between two versions.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > current_version() {
        anyhow::bail!(
            "the store has schema version {version}, newer than this abperf understands ({}); \
             upgrade abperf",
            current_version()
        );
    }
    if version == current_version() {
        return Ok(());
    }
    if version == 0 && is_empty(&tx)? {
        tx.execute_batch(PREPARED)?;
    } else {
        for sql in &MIGRATIONS[version as usize..] {
            tx.execute_batch(sql)?;
            post_step(sql, &tx)?;
        }
    }
    tx.pragma_update(None, "user_version", current_version())?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema as SQLite holds it: every object's definition, tables first.
    fn dump(conn: &Connection) -> Vec<String> {
        let mut q = conn
            .prepare(
                "SELECT sql || ';' FROM sqlite_schema WHERE sql IS NOT NULL \
                 AND name NOT LIKE 'sqlite_%' ORDER BY type <> 'table', rowid",
            )
            .unwrap();
        let mut out: Vec<String> = q
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        out.extend(rows(conn));
        out
    }

    /// The rows a migration seeds (an empty store has no others), as INSERT statements.
    fn rows(conn: &Connection) -> Vec<String> {
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut out = Vec::new();
        for t in tables {
            let cols: Vec<String> = conn
                .prepare(&format!("SELECT name FROM pragma_table_info('{t}')"))
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let values = cols
                .iter()
                .map(|c| format!("quote({c})"))
                .collect::<Vec<_>>();
            let sql = format!("SELECT {} FROM {t} ORDER BY 1", values.join(" || ', ' || "));
            let mut q = conn.prepare(&sql).unwrap();
            let found = q.query_map([], |r| r.get::<_, String>(0)).unwrap();
            for v in found {
                out.push(format!(
                    "INSERT INTO {t} ({}) VALUES ({});",
                    cols.join(", "),
                    v.unwrap()
                ));
            }
        }
        out
    }

    #[test]
    fn prepared_schema_equals_what_the_migrations_build() {
        let mut stepwise = Connection::open_in_memory().unwrap();
        {
            let tx = stepwise.transaction().unwrap();
            for sql in MIGRATIONS {
                tx.execute_batch(sql).unwrap();
                post_step(sql, &tx).unwrap();
            }
            tx.commit().unwrap();
        }
        let built = dump(&stepwise);
        if std::env::var_os("ABPERF_WRITE_PREPARED_SCHEMA").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/schema_prepared.sql");
            let head = "-- Generated from the migrations in schema.rs (see PREPARED there); do not edit.\n";
            std::fs::write(path, format!("{head}{}\n", built.join("\n"))).unwrap();
            return; // this build still holds the old script: the next run checks the new one
        }
        let mut prepared = Connection::open_in_memory().unwrap();
        migrate(&mut prepared).unwrap();
        assert_eq!(
            dump(&prepared),
            built,
            "schema_prepared.sql is stale: regenerate it with \
             ABPERF_WRITE_PREPARED_SCHEMA=1 cargo test -p abperf-store prepared_schema"
        );
        let version: i64 = prepared
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, current_version());
    }

    /// A store of the current version is opened without the write lock: another process in
    /// the middle of a write does not hold up its readers' open (nor costs them a transaction).
    #[test]
    fn a_current_store_opens_without_the_write_lock() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("s.db");
        let mut first = Connection::open(&path).unwrap();
        first.pragma_update(None, "journal_mode", "WAL").unwrap();
        migrate(&mut first).unwrap();
        first.execute_batch("BEGIN IMMEDIATE").unwrap();
        let mut second = Connection::open(&path).unwrap();
        second.busy_timeout(std::time::Duration::ZERO).unwrap();
        migrate(&mut second).expect("no write lock needed at the current version");
        // An older store still takes the lock to migrate (and says it is busy here).
        let older = d.path().join("old.db");
        let old = Connection::open(&older).unwrap();
        old.pragma_update(None, "journal_mode", "WAL").unwrap();
        old.execute_batch(MIGRATIONS[0]).unwrap();
        old.pragma_update(None, "user_version", 1).unwrap();
        old.execute_batch("BEGIN IMMEDIATE").unwrap();
        let mut other = Connection::open(&older).unwrap();
        other.busy_timeout(std::time::Duration::ZERO).unwrap();
        assert!(
            migrate(&mut other).is_err(),
            "a migration waits for the write lock"
        );
        old.execute_batch("COMMIT").unwrap();
        migrate(&mut other).unwrap();
        let v: i64 = other
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, current_version());
        first.execute_batch("COMMIT").unwrap();
    }
}
