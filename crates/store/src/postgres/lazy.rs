//! A reading command's working copy of a PostgreSQL store, filled as the command reads it: every
//! experiment's row is there from the start (`load`), an experiment's content (variants, runs,
//! metrics, trace bins, micro rounds, ...) is read from the server the first time the command
//! reads that experiment (`Store::fill`, called by every reader of one experiment's content), and
//! `abperf list` has the server count what it shows (`Store::server_list_counts`).

use super::Pg;
use crate::Store;
use anyhow::Context;
use std::collections::{BTreeMap, BTreeSet};

/// The server behind a working copy, and the experiments whose content the copy holds.
pub(crate) struct Lazy {
    pg: Pg,
    loaded: BTreeSet<i64>,
}

impl Lazy {
    pub(crate) fn new(pg: Pg) -> Lazy {
        Lazy {
            pg,
            loaded: BTreeSet::new(),
        }
    }
}

impl Store {
    /// [`Store::fill`] on a working copy of a PostgreSQL store: read experiment `id` from the
    /// server (in one snapshot) the first time; on a copy not read as the command reads (a new
    /// experiment's), or for an id it holds no row of (the caller says so as on SQLite),
    /// nothing to do.
    pub(crate) fn fill_from_server(&self, id: i64) -> anyhow::Result<()> {
        let Some(lazy) = self.server_backend().and_then(|s| s.lazy()) else {
            return Ok(());
        };
        let mut lazy = lazy.borrow_mut();
        if lazy.loaded.contains(&id) || !self.holds(id)? {
            return Ok(());
        }
        let shown = lazy.pg.shown().to_string();
        // Row by row as the server sends them: the experiment is not held twice.
        let mut beside = self.beside_row(id)?;
        lazy.pg
            .read_each(id, &mut |rows, row| beside.row(rows, row))
            .and_then(|()| beside.finish())
            .with_context(|| format!("loading experiment {id} of {shown} into memory"))?;
        lazy.loaded.insert(id);
        Ok(())
    }

    /// On a working copy of a PostgreSQL store read as the command reads, what `list` counts of
    /// every experiment, counted by the server (None elsewhere: the store counts its own).
    pub(crate) fn list_counts_on_server(&self) -> anyhow::Result<Option<BTreeMap<i64, [i64; 3]>>> {
        let Some(lazy) = self.server_backend().and_then(|s| s.lazy()) else {
            return Ok(None);
        };
        let mut lazy = lazy.borrow_mut();
        let shown = lazy.pg.shown().to_string();
        let counts = lazy.pg.list_counts();
        Ok(Some(counts.with_context(|| {
            format!("counting the runs of the experiments of {shown}")
        })?))
    }

    /// On a working copy of a PostgreSQL store read as the command reads, `history`'s
    /// per-variant summaries counted by the server (None elsewhere).
    pub(crate) fn summaries_on_server(
        &self,
        sql: &str,
    ) -> anyhow::Result<Option<Vec<crate::history::VariantSum>>> {
        let Some(lazy) = self.server_backend().and_then(|s| s.lazy()) else {
            return Ok(None);
        };
        let mut lazy = lazy.borrow_mut();
        let shown = lazy.pg.shown().to_string();
        let sums = lazy.pg.summaries(sql);
        Ok(Some(sums.with_context(|| {
            format!("summarising the runs of the experiments of {shown}")
        })?))
    }

    /// Whether this store holds experiment `id`'s row.
    fn holds(&self, id: i64) -> anyhow::Result<bool> {
        Ok(self.conn().query_row(
            "SELECT EXISTS (SELECT 1 FROM experiment WHERE id = ?1)",
            [id],
            |r| r.get(0),
        )?)
    }
}
