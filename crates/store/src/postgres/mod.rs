//! A PostgreSQL store, as far as it is built: experiments go in and out whole, as
//! [`Content`](crate::copy::Content) (`abperf store copy`), and the reading commands load the
//! whole store into an in-memory SQLite store (`load`). Runs are not committed straight to
//! PostgreSQL yet: every command that writes refuses a PostgreSQL DSN (docs/store.md).
//!
//! The schema is generated from SQLite's (`columns`, `ddl`, `schema`); values keep their type
//! through it (`numeric`, `params`).

mod columns;
mod ddl;
mod dsn;
mod load;
mod numeric;
mod params;
mod read;
mod schema;
mod write;

pub use dsn::{is_dsn, redacted};
pub(crate) use load::load;

use anyhow::Context;
use columns::Table;

/// An open connection to a PostgreSQL store, with the tables an experiment's content spans.
pub struct Pg {
    client: postgres::Client,
    /// The DSN with its password hidden, for messages.
    shown: String,
    tables: Vec<Table>,
    /// Whether the database holds abperf's schema (only a dry run opens one that does not).
    has_schema: bool,
}

impl Pg {
    /// Connect to `dsn`; with `create`, make abperf's schema there or bring it up to date, else
    /// leave the database as it is (a dry run). A schema of a newer abperf is refused.
    pub fn open(dsn: &str, create: bool) -> anyhow::Result<Pg> {
        let shown = redacted(dsn);
        let mut client = dsn::connect(dsn)?;
        if create {
            schema::ensure(&mut client, &shown)?;
        }
        let version = schema::version(&mut client)
            .with_context(|| format!("reading the schema version of {shown}"))?;
        schema::check_not_newer(version, &shown)?;
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
