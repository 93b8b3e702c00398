//! A PostgreSQL store read whole into an in-memory SQLite store, keeping its ids, so that the
//! reading commands (list, show, compare, report, export) and `store copy` FROM work on it
//! unchanged.

use super::{Pg, Schema};
use crate::Store;
use anyhow::Context;
use std::path::{Path, PathBuf};

/// Every experiment of the PostgreSQL store `dsn`, in an in-memory SQLite store under the ids
/// they have there; its path is the DSN with the password hidden. A database without abperf's
/// schema reads as an empty store and is left as it is; an older schema is brought up to date.
///
/// This loads the whole store on every command: the first step, which is fine for the
/// experiments of a team but grows with them. Reading PostgreSQL where each command reads is
/// the next step (docs/store.md).
pub fn load(dsn: &str) -> anyhow::Result<Store> {
    let mut pg = Pg::open(dsn, Schema::Upgrade)?;
    let shown = pg.shown().to_string();
    let mut store = Store::open(Path::new(":memory:"))?;
    let experiments = pg
        .read_all()
        .with_context(|| format!("reading the experiments of {shown}"))?;
    for content in experiments {
        store
            .write_content_keeping_ids(&content)
            .with_context(|| format!("loading experiment {} of {shown} into memory", content.id))?;
    }
    store.path = PathBuf::from(shown);
    Ok(store)
}
