//! Opening a store: one function per purpose ([`Purpose`]), the backend chosen once from the
//! store's [`Location`]. An SQLite file is opened (created, migrated) here; a PostgreSQL store
//! by the `postgres` backend, or, in a build without it, refused with how to get it.

use super::backend::Purpose;
use super::{BUSY_TIMEOUT, Backend, ImportOutcome, ImportTarget, Location, Store, current_version};
use abperf_model::{NewExperiment, Run, Variant};
use anyhow::Context;
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::time::Duration;

impl Store {
    /// Open (creating it and its directory if needed) and migrate the SQLite store at `path`;
    /// as [`Store::open_to_write`] (a PostgreSQL URL is refused).
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        Store::open_to_write(&Location::from(path))
    }

    /// Open the store at `at` for a command whose writes only an SQLite store keeps (trace,
    /// micro, doctor, boot loops, `run` with kernels): created and migrated when needed; a
    /// PostgreSQL store is refused.
    pub fn open_to_write(at: &Location) -> anyhow::Result<Store> {
        open_at(at, Purpose::Write)
    }

    /// Open the store at `at` for a command that only reads (list, show, export, report,
    /// compare): an SQLite store that cannot be written (read-only media, a directory or file
    /// without write permission) is opened read-only; a PostgreSQL store is read into an
    /// in-memory store that keeps its ids: every experiment's row at once, an experiment's
    /// content when the command first reads it.
    pub fn open_to_read(at: &Location) -> anyhow::Result<Store> {
        open_at(at, Purpose::Read)
    }

    /// Open an existing store without changing anything (`store copy` FROM): an SQLite file
    /// neither created nor migrated; a PostgreSQL store read as [`Store::open_to_read`] reads it.
    pub fn open_read_only(at: &Location) -> anyhow::Result<Store> {
        open_at(at, Purpose::ReadOnly)
    }

    /// Open the store at `at` for `run` and `fleet run`: a new experiment committed run by run
    /// (on PostgreSQL every write goes to the server, its schema made there when missing).
    pub fn open_to_run(at: &Location) -> anyhow::Result<Store> {
        open_at(at, Purpose::Run)
    }

    /// Open the store at `at` to take one of its experiments over and add runs to it (`run
    /// --resume`, `fleet run --resume`, `import --experiment`), or to delete one (`delete`).
    pub fn open_to_take_over(at: &Location) -> anyhow::Result<Store> {
        open_at(at, Purpose::TakeOver)
    }

    /// Open the store at `at` (as [`Store::location_for_hosts`] gives it) to add runs to its
    /// experiment `id`: a fleet host committing its runs itself.
    pub fn open_to_add_runs(at: &Location, id: i64) -> anyhow::Result<Store> {
        open_at(at, Purpose::AddRuns(id))
    }

    /// Open (creating it and its directory if needed) and migrate the SQLite database at `path`.
    pub(crate) fn open_file(path: &Path) -> anyhow::Result<Store> {
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
        super::schema::migrate(&mut conn).map_err(|e| match e.downcast::<rusqlite::Error>() {
            Ok(sql) => store_error(path, sql),
            Err(other) => other.context(format!("store {shown}")),
        })?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            last_sync: std::time::Instant::now(),
            sync_full: None,
            backend: Backend::Sqlite,
        })
    }
}

/// A new experiment imported into the store at `at` (`abperf import` without `--experiment`),
/// in one transaction: in an SQLite store directly, on a PostgreSQL server built in memory and
/// written there whole. On any error nothing is stored.
pub fn import_new(
    at: &Location,
    exp: &NewExperiment,
    labels: &abperf_model::label::Labels,
    variants: &[Variant],
    runs: &[Run],
) -> anyhow::Result<ImportOutcome> {
    match at {
        Location::File(path) => {
            let target = ImportTarget::New(exp.clone(), labels.clone());
            Store::open_file(path)?
                .import_runs(&target, variants, runs)
                .context("import not stored")
        }
        #[cfg(feature = "postgres")]
        Location::Server(dsn) => {
            super::postgres::import_to_server(dsn, exp, labels, variants, runs)
                .context("import not stored")
        }
        #[cfg(not(feature = "postgres"))]
        Location::Server(dsn) => Err(without_postgres(dsn)),
    }
}

/// The store at `at` opened for `purpose`: the backend chosen here, once.
fn open_at(at: &Location, purpose: Purpose) -> anyhow::Result<Store> {
    match at {
        Location::File(path) => open_file_for(path, purpose),
        #[cfg(feature = "postgres")]
        Location::Server(dsn) => super::postgres::open(dsn, purpose),
        #[cfg(not(feature = "postgres"))]
        Location::Server(dsn) => Err(without_postgres(dsn)),
    }
}

/// The refusal of a PostgreSQL store by a build without the `postgres` feature.
#[cfg(not(feature = "postgres"))]
fn without_postgres(dsn: &str) -> anyhow::Error {
    abperf_model::error::usage(format!(
        "store {}: this abperf was built without PostgreSQL support; build it with its \
         default features (`cargo install --path .`) or with `--features postgres`",
        super::redact::redacted(dsn)
    ))
}

/// The SQLite store at `path` opened for `purpose`.
fn open_file_for(path: &Path, purpose: Purpose) -> anyhow::Result<Store> {
    match purpose {
        Purpose::Read => match Store::open_file(path) {
            Ok(s) => Ok(s),
            Err(e) if path.is_file() && !writable(path) => open_file_read_only(path)
                .map_err(|ro| ro.context(format!("(opening it for writing failed too: {e:#})"))),
            Err(e) => Err(e),
        },
        Purpose::ReadOnly => open_file_read_only(path),
        Purpose::Write | Purpose::Run | Purpose::TakeOver => Store::open_file(path),
        Purpose::AddRuns(id) => {
            let store = Store::open_file(path)?;
            store.experiment(id)?;
            Ok(store)
        }
    }
}

/// Open an existing SQLite store read-only, without migrating it: first through SQLite's
/// read-only mode (which reads a WAL store when its -wal and -shm files exist), else, when there
/// is no -wal file to miss, as an immutable file (no locks, nothing written next to it).
fn open_file_read_only(path: &Path) -> anyhow::Result<Store> {
    use rusqlite::OpenFlags;
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
        backend: Backend::Sqlite,
    })
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
