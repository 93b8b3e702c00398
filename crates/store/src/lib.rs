//! The store: experiment -> variants -> runs -> metrics. The only crate that speaks SQL.
//!
//! Layered bottom-up: where a store is (`location`), its schema and migrations (`schema`,
//! depending on no other module), the operations on an SQLite database (`experiments`, `owner`,
//! `trace`, `boots`, `micro`, `tune`, `fleet`, `import`, `copy`, ...), and above them the
//! PostgreSQL backend (`postgres`, behind the cargo feature `postgres`). A store is opened once
//! for a purpose (`open`: read, write, run, take over, add runs), which chooses its backend from
//! its location ([`Backend`]); what a backend does not support is refused in one place
//! (`backend`, [`Operation`]), and the operations that differ by backend are dispatched there.
//!
//! Every run is committed in its own transaction the moment it ends (`Store::commit_run`), in WAL
//! mode, so a crash or `kill -9` of abperf loses at most the run in flight. The WAL is fsynced at
//! least once a second and at every status change, so a power cut or OS crash loses at most the
//! last second of runs (an fsync after every sub-millisecond run would dominate its cost).

mod backend;
pub mod boots;
mod conninfo;
pub mod copy;
mod copy_tables;
pub mod copy_target;
mod environment;
mod experiment_ids;
mod experiments;
mod fleet;
mod history;
mod import;
mod insert;
mod location;
mod micro;
mod open;
mod owner;
#[cfg(feature = "postgres")]
mod postgres;
mod profile;
mod provenance;
mod redact;
mod run_codec;
mod run_labels;
mod run_rows;
mod schema;
#[cfg(test)]
mod test_fixtures;
pub mod trace;
mod tune;
mod wait_limit;

pub use backend::Operation;
pub use fleet::FleetHost;
pub use import::*;
pub use location::Location;
pub use open::import_new;
pub use provenance::{KernelProvenance, PatchRef};
pub use redact::redacted_args;
pub use run_rows::FIXED;
pub use schema::{MIGRATIONS, current_version};
pub use wait_limit::{DEFAULT_WAIT_LIMIT, set_wait_limit, wait_limit};

use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// An open store.
pub struct Store {
    /// The SQLite database: the store itself, or the in-memory working copy of a server's.
    conn: Connection,
    /// The store's name in messages (a server's URL with its password hidden).
    path: PathBuf,
    /// When the WAL was last synced to disk by a commit (see `commit_run`).
    last_sync: std::time::Instant,
    /// The `synchronous` setting last chosen by [`Store::pace_sync`] (None: not yet).
    sync_full: Option<bool>,
    /// Which database this is, chosen once when it was opened.
    backend: Backend,
}

/// The database behind a [`Store`].
pub(crate) enum Backend {
    /// An SQLite file (or `:memory:`), read and written in place.
    Sqlite,
    /// A PostgreSQL store: `conn` is an in-memory working copy of what the command reads or
    /// writes there, under the server's ids.
    #[cfg(feature = "postgres")]
    Postgres(Box<postgres::Server>),
}

/// The longest a committed run may stay unsynced (lost to a power cut or OS crash, never to a
/// crash or kill -9 of abperf itself, which WAL survives without any sync).
pub const SYNC_INTERVAL: Duration = Duration::from_secs(1);

/// How long a write waits for another process's write transaction to end. Any number of abperf
/// processes share one store: readers never block writers (WAL), writers queue for the lock.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

impl Store {
    /// The store's name in messages: a file's path, a server's URL with its password hidden.
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

/// Whether `e` says another process held the store's write lock longer than abperf waits for
/// it ([`BUSY_TIMEOUT`]: SQLite's busy or locked).
pub fn is_lock_timeout(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<rusqlite::Error>().is_some_and(|sql| {
            matches!(
                sql.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            )
        })
    })
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
