//! A PostgreSQL store read whole into an in-memory SQLite store, keeping its ids, so that the
//! reading commands (list, show, compare, report, export) and `store copy` FROM work on it
//! unchanged.

use super::{Pg, Schema};
use crate::Store;
use anyhow::Context;
use std::path::{Path, PathBuf};

/// Every experiment of the PostgreSQL store `dsn` (and its recorded owner), in an in-memory
/// SQLite store under the ids they have there; its path is the DSN with the password hidden. A database without abperf's
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
    // Read after the experiments: each one's owner was committed with it.
    let owners = pg
        .owners()
        .with_context(|| format!("reading the owners of the experiments of {shown}"))?;
    for content in experiments {
        // A running experiment stays running where its owner is known (whether that owner
        // lives is for the reader to judge, as on SQLite); one without is shown interrupted.
        let loaded = match owners.contains_key(&content.id) {
            true => store.write_running_keeping_ids(&content),
            false => store.write_content_keeping_ids(&content).map(|_| ()),
        };
        loaded
            .with_context(|| format!("loading experiment {} of {shown} into memory", content.id))?;
    }
    store.keep_owners(&owners)?;
    store.path = PathBuf::from(shown);
    Ok(store)
}
