//! The store `abperf store copy` writes into: an SQLite file or a PostgreSQL database, behind
//! one interface (the identities of what it holds, an experiment's content, a new experiment).

use super::copy::{Content, Identity};
use super::postgres::{Pg, Schema};
use super::{Store, names_a_server};
use std::collections::BTreeMap;
use std::path::Path;

/// An open copy target.
pub struct Target(Inner);

enum Inner {
    Sqlite(Store),
    Server(Pg),
}

impl Target {
    /// Open the store `path` to copy into: created (or its schema brought up to date) when
    /// missing. With `dry_run` nothing is made: an SQLite file that does not exist is None, an
    /// existing one is opened read-only, a server's database is only read.
    pub fn open(path: &Path, dry_run: bool) -> anyhow::Result<Option<Target>> {
        if let Some(dsn) = path.to_str().filter(|_| names_a_server(path)) {
            let schema = if dry_run { Schema::Keep } else { Schema::Make };
            return Ok(Some(Target(Inner::Server(Pg::open(dsn, schema)?))));
        }
        let store = match (dry_run, path.exists()) {
            (false, _) => Store::open(path)?,
            (true, false) => return Ok(None),
            (true, true) => Store::open_read_only(path)?,
        };
        Ok(Some(Target(Inner::Sqlite(store))))
    }

    /// The identity of every experiment stored there, with its id.
    pub fn identities(&mut self) -> anyhow::Result<BTreeMap<Identity, i64>> {
        match &mut self.0 {
            Inner::Sqlite(s) => s.identities(),
            Inner::Server(pg) => pg.identities(),
        }
    }

    /// Everything stored about experiment `id` there.
    pub fn read_content(&mut self, id: i64) -> anyhow::Result<Content> {
        match &mut self.0 {
            Inner::Sqlite(s) => s.read_content(id),
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
            Inner::Server(pg) => pg.write_content(content, stop),
        }
    }
}
