//! The PostgreSQL backend (cargo feature `postgres`), above the SQLite store it works through.
//! A store opened on a server (`open`, one [`Server`] mode per purpose) is an in-memory SQLite
//! working copy under the server's ids: the reading commands read every experiment's row and an
//! experiment's content when they first read it (`load`, `lazy`); `abperf run` and `abperf fleet
//! run` commit their experiment and each run straight into PostgreSQL (`commit`, `runs`), with
//! the owner of the experiment (`owner`), which their `--resume` takes over (`take_over`);
//! `import` writes a new experiment as a copy does (`import_new`, `write`, many rows by COPY: `bulk`) or adds runs to one
//! (`import_runs`); `delete` deletes one unless its owner is alive (`owner`). Experiments go in
//! and out whole as [`Content`](crate::copy::Content) (`abperf store copy`). What it does not
//! support is refused by `backend` (docs/store.md).
//!
//! The schema is generated from SQLite's (`columns`, `ddl`, `schema`); values keep their type
//! through it (`numeric`, `params`).

mod bulk;
mod columns;
mod commit;
mod ddl;
mod deadline;
mod dsn;
mod import_new;
mod import_runs;
mod keys;
mod lazy;
mod load;
mod numeric;
mod open;
mod owner;
mod params;
mod passfile;
mod read;
mod run_read;
mod runs;
mod schema;
mod take_over;
mod tls;
mod write;

pub(crate) use import_new::import_to_server;
pub(crate) use open::{Server, open};
pub(crate) use write::Ids;

use anyhow::Context;
use columns::Table;

/// An open connection to a PostgreSQL store, with the tables an experiment's content spans.
pub struct Pg {
    client: postgres::Client,
    /// Bounds every wait on the server (`deadline`).
    _watch: deadline::Watch,
    /// The DSN with its password hidden, for messages.
    shown: String,
    tables: Vec<Table>,
    /// Whether the database holds abperf's schema (else it reads as empty).
    has_schema: bool,
}

/// What opening a PostgreSQL store may change in its schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// Make it, or bring it up to date (a copy into the store).
    Make,
    /// Bring an older one up to date, as a reading command migrates an SQLite store; make none
    /// where there is none (the store then reads as empty).
    Upgrade,
    /// Change nothing (a dry run).
    Keep,
}

impl Pg {
    /// Connect to `dsn`, and make or upgrade abperf's schema there as `schema` allows. A schema
    /// of a newer abperf is refused.
    pub fn open(dsn: &str, schema: Schema) -> anyhow::Result<Pg> {
        let shown = crate::redact::redacted(dsn);
        let (mut client, watch) = dsn::connect(dsn)?;
        let read = |client: &mut postgres::Client| {
            schema::version(client)
                .with_context(|| format!("reading the schema version of {shown}"))
        };
        let mut version = read(&mut client)?;
        schema::check_not_newer(version, &shown)?;
        let older = version.is_some()
            && !schema::is_current(&mut client)
                .with_context(|| format!("reading the schema revision of {shown}"))?;
        if schema == Schema::Make || (schema == Schema::Upgrade && older) {
            schema::ensure(&mut client, &shown)?;
            version = read(&mut client)?;
        }
        Ok(Pg {
            client,
            _watch: watch,
            shown,
            tables: columns::tables()?,
            has_schema: version.is_some(),
        })
    }

    /// The DSN, password hidden.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}
