//! The SQLite store: experiment -> variants -> runs -> metrics. The only module that speaks SQL.
//!
//! Every run is committed in its own transaction the moment it ends (`Store::commit_run`), in WAL
//! mode, so a crash or `kill -9` of abperf loses at most the run in flight. The WAL is fsynced at
//! least once a second and at every status change, so a power cut or OS crash loses at most the
//! last second of runs (an fsync after every sub-millisecond run would dominate its cost).

pub mod boots;
mod environment;
mod experiments;
mod import;
mod micro;
mod schema;
pub mod trace;
mod tune;

pub use import::*;
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
}

/// The longest a committed run may stay unsynced (lost to a power cut or OS crash, never to a
/// crash or kill -9 of abperf itself, which WAL survives without any sync).
pub const SYNC_INTERVAL: Duration = Duration::from_secs(1);

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

impl Store {
    /// Open (creating it and its directory if needed) and migrate the store at `path`.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        let shown = path.display();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| {
                format!("cannot create the store's directory {}", dir.display())
            })?;
        }
        let mut conn =
            Connection::open(path).with_context(|| format!("cannot open the store {shown}"))?;
        conn.busy_timeout(Duration::from_secs(10))?;
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
                    ) && started.elapsed() < Duration::from_secs(10) =>
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
        })
    }

    /// Open the store named by `--db` (or the default resolution).
    pub fn open_resolved(flag: Option<&Path>) -> anyhow::Result<Store> {
        Store::open(&resolve_path(flag)?)
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

    /// Choose the durability of the next commit: `synchronous=FULL` (fsync of the WAL) when the
    /// last sync is older than [`SYNC_INTERVAL`] or `force`, else `NORMAL` (written to the WAL,
    /// synced later). An fsync per run would double abperf's per-run cost on short runs.
    pub(crate) fn pace_sync(&mut self, force: bool) -> rusqlite::Result<()> {
        let full = force || self.last_sync.elapsed() >= SYNC_INTERVAL;
        self.conn
            .pragma_update(None, "synchronous", if full { "FULL" } else { "NORMAL" })?;
        if full {
            self.last_sync = std::time::Instant::now();
        }
        Ok(())
    }
}

/// A readable one-line error for SQLite failures at open time (locked, corrupt, read-only).
fn store_error(path: &Path, e: rusqlite::Error) -> anyhow::Error {
    use rusqlite::ErrorCode::*;
    let shown = path.display();
    let why = match e.sqlite_error_code() {
        Some(NotADatabase) => "is not an abperf (SQLite) database or is corrupt".to_string(),
        Some(DatabaseCorrupt) => "is corrupt".to_string(),
        Some(DatabaseBusy) | Some(DatabaseLocked) => {
            "is locked by another process (waited 10 s)".to_string()
        }
        Some(ReadOnly) | Some(CannotOpen) | Some(PermissionDenied) => {
            format!("cannot be written ({e})")
        }
        _ => format!("cannot be used ({e})"),
    };
    anyhow::anyhow!("store {shown} {why}")
}
