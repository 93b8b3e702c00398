//! The store `abperf store copy` writes into: an SQLite file or a PostgreSQL database, behind
//! one interface (the identities of what it holds, an experiment's content, a new experiment).

use super::copy::{Content, Identity};
#[cfg(feature = "postgres")]
use super::postgres::{Pg, Schema};
use super::{Location, Store};
use abperf_model::error::usage;
use std::collections::BTreeMap;

/// An open copy target.
pub struct Target(Inner);

enum Inner {
    Sqlite(Store),
    #[cfg(feature = "postgres")]
    Server(Pg),
}

impl Target {
    /// Open the store `path` to copy into: created (or its schema brought up to date) when
    /// missing. With `dry_run` nothing is made: an SQLite file that does not exist is None, an
    /// existing one is opened read-only, a server's database is only read.
    pub fn open(at: &Location, dry_run: bool) -> anyhow::Result<Option<Target>> {
        let path = match at {
            Location::File(path) => path,
            #[cfg(feature = "postgres")]
            Location::Server(dsn) => {
                let schema = if dry_run { Schema::Keep } else { Schema::Make };
                return Ok(Some(Target(Inner::Server(Pg::open(dsn, schema)?))));
            }
            // Refused as opening it would refuse it.
            #[cfg(not(feature = "postgres"))]
            Location::Server(_) => return Store::open_read_only(at).map(|_| None),
        };
        let store = match (dry_run, path.exists()) {
            (false, _) => Store::open_to_write(at)?,
            (true, false) => return Ok(None),
            (true, true) => Store::open_read_only(at)?,
        };
        Ok(Some(Target(Inner::Sqlite(store))))
    }

    /// The identity of every experiment stored there, with its id.
    pub fn identities(&mut self) -> anyhow::Result<BTreeMap<Identity, i64>> {
        match &mut self.0 {
            Inner::Sqlite(s) => s.identities(),
            #[cfg(feature = "postgres")]
            Inner::Server(pg) => pg.identities(),
        }
    }

    /// Everything stored about experiment `id` there.
    pub fn read_content(&mut self, id: i64) -> anyhow::Result<Content> {
        match &mut self.0 {
            Inner::Sqlite(s) => s.read_content(id),
            #[cfg(feature = "postgres")]
            Inner::Server(pg) => pg.read_content(id),
        }
    }

    /// Store `content` as a new experiment (see [`Store::write_content`]).
    pub fn write_content(
        &mut self,
        content: &Content,
        stop: &dyn Fn() -> bool,
    ) -> anyhow::Result<Option<i64>> {
        match &mut self.0 {
            Inner::Sqlite(s) => s.write_content(content, stop),
            #[cfg(feature = "postgres")]
            Inner::Server(pg) => pg.write_content(content, stop),
        }
    }
}

/// FROM must be an existing file, and TO another file than FROM (or other servers' DSNs).
pub fn check_locations(from: &Location, to: &Location) -> anyhow::Result<()> {
    let (from, to) = match (from, to) {
        (Location::File(from), Location::File(to)) => (from, to),
        _ if from == to => {
            return Err(usage(format!(
                "FROM and TO are the same store ({to}); copy into another one"
            )));
        }
        _ => return Ok(()),
    };
    let meta = std::fs::metadata(from).map_err(|e| {
        usage(format!(
            "FROM {}: cannot read it ({e}); FROM is the store file to copy from",
            from.display()
        ))
    })?;
    if !meta.is_file() {
        return Err(usage(format!(
            "FROM {} is not a file; FROM is the store file to copy from",
            from.display()
        )));
    }
    if let Ok(t) = std::fs::metadata(to) {
        use std::os::unix::fs::MetadataExt;
        if !t.is_file() {
            return Err(usage(format!(
                "TO {} is not a file; TO is the store file to copy into",
                to.display()
            )));
        }
        if (t.dev(), t.ino()) == (meta.dev(), meta.ino()) {
            return Err(usage(format!(
                "FROM and TO are the same store ({}); copy into another file",
                to.display()
            )));
        }
    }
    Ok(())
}
