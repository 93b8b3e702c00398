//! The SQLite store: experiment -> variants -> runs -> metrics. The only module that speaks SQL.
//! A PostgreSQL database can hold copies of experiments and be read (`postgres`), `abperf run`
//! and `abperf fleet run` (its coordinator and its hosts) commit into one (`on_server`,
//! `server_experiment`: an in-memory working copy beside the server), `abperf import` writes a
//! new experiment there whole (`import`) or adds runs to one through a working copy
//! (`import_on_server`), and `abperf delete` deletes there (`owner`); every other command that
//! writes refuses one.
//!
//! Every run is committed in its own transaction the moment it ends (`Store::commit_run`), in WAL
//! mode, so a crash or `kill -9` of abperf loses at most the run in flight. The WAL is fsynced at
//! least once a second and at every status change, so a power cut or OS crash loses at most the
//! last second of runs (an fsync after every sub-millisecond run would dominate its cost).

pub mod boots;
pub mod copy;
mod copy_tables;
pub mod copy_target;
mod environment;
mod experiment_ids;
mod experiments;
mod fleet;
mod import;
mod import_on_server;
mod insert;
mod micro;
mod on_server;
mod owner;
pub mod postgres;
mod run_labels;
mod run_rows;
mod schema;
mod server_experiment;
pub mod trace;
mod tune;

pub use fleet::FleetHost;
pub use import::*;
pub use run_rows::FIXED;
pub use schema::{MIGRATIONS, current_version};

use anyhow::Context;
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// An open store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// When the WAL was last synced to disk by a commit (see `commit_run`).
    last_sync: std::time::Instant,
    /// The `synchronous` setting last chosen by [`Store::pace_sync`] (None: not yet).
    sync_full: Option<bool>,
    /// The PostgreSQL store every write also goes to (`on_server`); `conn` is then an
    /// in-memory working copy holding what this process wrote there, under the server's ids.
    remote: Option<Box<postgres::Remote>>,
    /// The PostgreSQL store a reading command reads (`postgres::load`): `conn` then holds every
    /// experiment's row, and an experiment's content from the first time it is read (`fill`).
    lazy: std::cell::RefCell<Option<postgres::Lazy>>,
}

/// The longest a committed run may stay unsynced (lost to a power cut or OS crash, never to a
/// crash or kill -9 of abperf itself, which WAL survives without any sync).
pub const SYNC_INTERVAL: Duration = Duration::from_secs(1);

/// How long a write waits for another process's write transaction to end. Any number of abperf
/// processes share one store: readers never block writers (WAL), writers queue for the lock.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the store lives: `--db PATH`, else `$ABPERF_DB`, else `$XDG_DATA_HOME/abperf/abperf.db`,
/// else `~/.local/share/abperf/abperf.db`.
pub fn resolve_path(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = flag {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("ABPERF_DB").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let base = match std::env::var_os("XDG_DATA_HOME").filter(|p| !p.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => {
            let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).context(
                "cannot place the store: none of --db, $ABPERF_DB, $XDG_DATA_HOME, $HOME is set",
            )?;
            PathBuf::from(home).join(".local/share")
        }
    };
    Ok(base.join("abperf").join("abperf.db"))
}

/// Whether `path` names a store on a server (a PostgreSQL DSN) rather than an SQLite file.
pub fn names_a_server(path: &Path) -> bool {
    path.to_str().is_some_and(postgres::is_dsn)
}

/// `path` for messages: a server's DSN with its password hidden.
pub fn shown(path: &Path) -> String {
    match path.to_str() {
        Some(dsn) if postgres::is_dsn(dsn) => postgres::redacted(dsn),
        _ => path.display().to_string(),
    }
}

/// The refusal of `what` (a command that writes, or one of its writes) on a PostgreSQL store.
pub(crate) fn not_built_on_server(path: &Path, what: &str) -> anyhow::Error {
    let shown = shown(path);
    abperf_model::error::usage(format!(
        "{what}: not built yet on PostgreSQL: run into a local store and `abperf store copy` \
         it to {shown}"
    ))
}

impl Store {
    /// Open (creating it and its directory if needed) and migrate the store at `path`. A
    /// PostgreSQL DSN is refused (reading, `store copy`, `run`, `import` and `delete` open one
    /// their own way).
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        if names_a_server(path) {
            return Err(not_built_on_server(
                path,
                "writing with this command (only `abperf run` of commands, without kernels, `abperf fleet run`, `abperf import` and `abperf delete` write to a PostgreSQL store)",
            ));
        }
        let shown = path.display();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| {
                format!("cannot create the store's directory {}", dir.display())
            })?;
        }
        let mut conn =
            Connection::open(path).with_context(|| format!("cannot open the store {shown}"))?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // Every transaction takes the write lock when it begins (BEGIN IMMEDIATE), so it waits
        // for other writers under the busy timeout; a deferred transaction that read first and
        // then tried to write would fail at once with SQLITE_BUSY_SNAPSHOT when another process
        // committed in between (the busy handler cannot help a stale snapshot).
        conn.set_transaction_behavior(rusqlite::TransactionBehavior::Immediate);
        let setup = |conn: &mut Connection| -> rusqlite::Result<()> {
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "FULL")?;
            conn.pragma_update(None, "foreign_keys", true)?;
            Ok(())
        };
        // Switching a new store to WAL does not wait on the busy handler when another process
        // is creating the same store at that moment: retry for as long as the busy timeout.
        let started = std::time::Instant::now();
        loop {
            match setup(&mut conn) {
                Ok(()) => break,
                Err(e)
                    if matches!(
                        e.sqlite_error_code(),
                        Some(
                            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                        )
                    ) && started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(store_error(path, e)),
            }
        }
        schema::migrate(&mut conn).map_err(|e| match e.downcast::<rusqlite::Error>() {
            Ok(sql) => store_error(path, sql),
            Err(other) => other.context(format!("store {shown}")),
        })?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            last_sync: std::time::Instant::now(),
            sync_full: None,
            remote: None,
            lazy: Default::default(),
        })
    }

    /// Open the store named by `--db` (or the default resolution).
    pub fn open_resolved(flag: Option<&Path>) -> anyhow::Result<Store> {
        Store::open(&resolve_path(flag)?)
    }

    /// Open the store named by `--db` for a command that only reads (list, show, export,
    /// report, compare): as [`Store::open`], but a store that cannot be written (read-only
    /// media, a directory or file without write permission) is opened read-only instead.
    ///
    /// A PostgreSQL DSN is read into an in-memory store that keeps its ids (`postgres::load`):
    /// every experiment's row at once, an experiment's content when the command first reads it.
    pub fn open_resolved_for_reading(flag: Option<&Path>) -> anyhow::Result<Store> {
        let path = resolve_path(flag)?;
        if names_a_server(&path) {
            return Store::open_read_only(&path);
        }
        match Store::open(&path) {
            Ok(s) => Ok(s),
            Err(e) if path.is_file() && !writable(&path) => Store::open_read_only(&path)
                .map_err(|ro| ro.context(format!("(opening it for writing failed too: {e:#})"))),
            Err(e) => Err(e),
        }
    }

    /// Open an existing store read-only, without migrating it: first through SQLite's read-only
    /// mode (which reads a WAL store when its -wal and -shm files exist), else, when there is no
    /// -wal file to miss, as an immutable file (no locks, nothing written next to it).
    ///
    /// A PostgreSQL DSN is read into an in-memory store under its ids as the command reads it
    /// (`postgres::load`).
    pub fn open_read_only(path: &Path) -> anyhow::Result<Store> {
        use rusqlite::OpenFlags;
        if let Some(dsn) = path.to_str().filter(|p| postgres::is_dsn(p)) {
            return postgres::load(dsn);
        }
        let check = |conn: Connection| -> rusqlite::Result<(Connection, i64)> {
            let v: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })?;
            Ok((conn, v))
        };
        let plain = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .and_then(check);
        let (conn, version) = match plain {
            Ok(x) => x,
            Err(first) => {
                let wal = PathBuf::from(format!("{}-wal", path.display()));
                if wal.metadata().is_ok_and(|m| m.len() > 0) {
                    return Err(store_error(path, first));
                }
                let uri = format!("file:{}?immutable=1", uri_escape(path));
                Connection::open_with_flags(
                    &uri,
                    OpenFlags::SQLITE_OPEN_READ_ONLY
                        | OpenFlags::SQLITE_OPEN_URI
                        | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .and_then(check)
                .map_err(|e| store_error(path, e))?
            }
        };
        check_read_only_version(path, version)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            last_sync: std::time::Instant::now(),
            sync_full: None,
            remote: None,
            lazy: Default::default(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, for store submodules only.
    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// A write transaction: BEGIN IMMEDIATE, so it waits (up to the busy timeout) for the write
    /// lock instead of failing when another process writes at the same time.
    pub(crate) fn write_tx(&mut self) -> rusqlite::Result<rusqlite::Transaction<'_>> {
        self.conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
    }

    /// Choose the durability of the next commit: `synchronous=FULL` (fsync of the WAL) when the
    /// last sync is older than [`SYNC_INTERVAL`] or `force`, else `NORMAL` (written to the WAL,
    /// synced later). An fsync per run would double abperf's per-run cost on short runs.
    pub(crate) fn pace_sync(&mut self, force: bool) -> rusqlite::Result<()> {
        let full = force || self.last_sync.elapsed() >= SYNC_INTERVAL;
        // Set only when it changes (a PRAGMA is parsed anew each time: ~1/10 of a commit).
        if self.sync_full != Some(full) {
            self.conn
                .pragma_update(None, "synchronous", if full { "FULL" } else { "NORMAL" })?;
            self.sync_full = Some(full);
        }
        if full {
            self.last_sync = std::time::Instant::now();
        }
        Ok(())
    }
}

/// A store opened read-only cannot be migrated: its schema must be this abperf's.
fn check_read_only_version(path: &Path, version: i64) -> anyhow::Result<()> {
    let shown = path.display();
    if version > current_version() {
        anyhow::bail!(
            "store {shown} has schema version {version}, newer than this abperf's ({}): use \
             the newer abperf that wrote it",
            current_version()
        );
    }
    if version == 0 {
        anyhow::bail!("{shown} is not an abperf store (an SQLite database without its tables)");
    }
    if version != current_version() {
        anyhow::bail!(
            "store {shown} is read-only and has schema version {version}, this abperf reads \
             version {}; copy it somewhere writable and run abperf there (it migrates it)",
            current_version()
        );
    }
    Ok(())
}

/// Whether `e` says the store's disk (or quota) is full.
pub fn is_disk_full(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        if let Some(sql) = c.downcast_ref::<rusqlite::Error>() {
            return sql.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull);
        }
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| matches!(io.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT)))
    })
}

/// Whether this process may write `path` and create files beside it (the -wal and -shm files).
fn writable(path: &Path) -> bool {
    let ok = |p: &Path| {
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else {
            return false;
        };
        // SAFETY: c is a valid NUL-terminated path.
        unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    ok(path) && ok(dir)
}

/// `path` for a `file:` URI: percent-encode what a URI would misread.
fn uri_escape(path: &Path) -> String {
    let mut out = String::new();
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'%' | b'?' | b'#' | b' ' => out.push_str(&format!("%{b:02X}")),
            0x00..=0x1f | 0x7f..=0xff => out.push_str(&format!("%{b:02X}")),
            _ => out.push(*b as char),
        }
    }
    out
}

/// A readable one-line error for SQLite failures at open time (locked, corrupt, read-only).
fn store_error(path: &Path, e: rusqlite::Error) -> anyhow::Error {
    use rusqlite::ErrorCode::*;
    let shown = path.display();
    let why = match e.sqlite_error_code() {
        Some(NotADatabase) => "is not an abperf (SQLite) database or is corrupt".to_string(),
        Some(DatabaseCorrupt) => "is corrupt".to_string(),
        Some(DatabaseBusy) | Some(DatabaseLocked) => {
            format!(
                "is locked by another process (waited {} s)",
                BUSY_TIMEOUT.as_secs()
            )
        }
        Some(ReadOnly) | Some(CannotOpen) | Some(PermissionDenied) => {
            format!("cannot be written ({e})")
        }
        _ => format!("cannot be used ({e})"),
    };
    anyhow::anyhow!("store {shown} {why}")
}
