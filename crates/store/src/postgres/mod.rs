//! A PostgreSQL store, as far as it is built: experiments go in and out whole, as
//! [`Content`](crate::copy::Content) (`abperf store copy`), and the reading commands work on an
//! in-memory SQLite store that holds every experiment's row and reads an experiment's content
//! from the server when the command first reads it (`load`, `lazy`); `abperf run` and `abperf fleet run`
//! commit their experiment and each run straight into PostgreSQL (`runs`), with the owner of the experiment (`owner`),
//! which their `--resume` takes over; `import` writes
//! a new experiment as a copy does (`write`), `delete` deletes one unless its owner is alive
//! (`owner`). Every other command that writes refuses a PostgreSQL DSN (docs/store.md).
//!
//! The schema is generated from SQLite's (`columns`, `ddl`, `schema`); values keep their type
//! through it (`numeric`, `params`).

mod columns;
mod ddl;
mod dsn;
mod lazy;
mod load;
mod numeric;
mod owner;
mod params;
mod read;
mod runs;
mod schema;
mod write;

pub use dsn::{is_dsn, redacted};
pub(crate) use lazy::Lazy;
pub(crate) use load::load;
pub(crate) use runs::Remote;
pub(crate) use write::Ids;

use anyhow::Context;
use columns::Table;

/// An open connection to a PostgreSQL store, with the tables an experiment's content spans.
pub struct Pg {
    client: postgres::Client,
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
        let shown = redacted(dsn);
        let mut client = dsn::connect(dsn)?;
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
