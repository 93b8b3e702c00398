//! A PostgreSQL store opened for a reading command (list, show, compare, report, export, ...) or
//! `store copy` FROM: an in-memory SQLite store that keeps its ids, holding every experiment's
//! row and filled with an experiment's content when the command first reads it (`lazy`), so the
//! commands work on it unchanged and read from the server only what they need.

use super::lazy::Lazy;
use super::{Pg, Schema};
use crate::Store;
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The PostgreSQL store `dsn` as an in-memory SQLite store under the ids it has there: every
/// experiment's row and recorded owner now, an experiment's content the first time it is read
/// (`Store::fill`, through the [`Lazy`] returned beside it); its path is the DSN with the
/// password hidden. A database without abperf's schema reads as an empty store and is left as
/// it is; an older schema is brought up to date.
pub(crate) fn load(dsn: &str) -> anyhow::Result<(Store, Lazy)> {
    let mut pg = Pg::open(dsn, Schema::Upgrade)?;
    let shown = pg.shown().to_string();
    let mut store = Store::open_file(Path::new(":memory:"))?;
    let rows = pg
        .experiment_rows()
        .with_context(|| format!("reading the experiments of {shown}"))?;
    // Read after the experiments: each one's owner was committed with it.
    let owners = pg
        .owners()
        .with_context(|| format!("reading the owners of the experiments of {shown}"))?;
    store
        .write_rows_keeping_ids(&[rows], &mut BTreeMap::new())
        .with_context(|| format!("loading the experiments of {shown} into memory"))?;
    store.keep_owners(&owners)?;
    // A running experiment stays running where its owner is known (whether that owner lives is
    // for the reader to judge, as on SQLite); one without is shown interrupted.
    let tx = store.write_tx()?;
    crate::owner::settle_ownerless(&tx)?;
    tx.commit()?;
    store.path = PathBuf::from(shown);
    Ok((store, Lazy::new(pg)))
}
