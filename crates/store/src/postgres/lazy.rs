//! A reading command's working copy of a PostgreSQL store, filled as the command reads it: every
//! experiment's row is there from the start (`load`), an experiment's content (variants, runs,
//! metrics, trace bins, micro rounds, ...) is read from the server the first time the command
//! reads that experiment (`Store::fill`, called by every reader of one experiment's content), and
//! `abperf list` has the server count what it shows (`Store::server_list_counts`). The readers
//! that read the runs only through `Store::runs` (show, compare, report, export) have the copy
//! filled without the tables of the runs (`Store::fill_but_runs`): the runs come straight from
//! the server's rows into the model (`run_read`), not through the copy; a later reader of those
//! tables has them added then.

use super::Pg;
use crate::Store;
use crate::copy_tables::{Key, TableSpec};
use anyhow::Context;
use std::collections::BTreeMap;

/// How much of an experiment's content a working copy holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    /// All but the tables of its runs ([`of_runs`]).
    ButRuns,
    /// All of it.
    Whole,
}

/// The server behind a working copy, and the experiments whose content the copy holds.
pub(crate) struct Lazy {
    pub(super) pg: Pg,
    loaded: BTreeMap<i64, Held>,
}

impl Lazy {
    pub(crate) fn new(pg: Pg) -> Lazy {
        Lazy {
            pg,
            loaded: BTreeMap::new(),
        }
    }

    /// How much of experiment `id` the working copy holds (None: its row only).
    pub(super) fn held(&self, id: i64) -> Option<Held> {
        self.loaded.get(&id).copied()
    }
}

/// Whether `spec` is a table of an experiment's runs: the schedule, the runs, and every table
/// whose rows belong to a run (and the metric names they use).
pub(super) fn of_runs(spec: &TableSpec) -> bool {
    let per_run = |key: &Key| matches!(key, Key::Run | Key::MetricName);
    spec.name == "slot"
        || spec.own.is_some_and(|(_, key)| per_run(&key))
        || spec.refs.iter().any(|(_, key)| per_run(key))
}

impl Store {
    /// [`Store::fill`] (`whole`) or [`Store::fill_but_runs`] on a working copy of a PostgreSQL
    /// store: read what the copy lacks of experiment `id` from the server (in one snapshot); on
    /// a copy not read as the command reads (a new experiment's), or for an id it holds no row
    /// of (the caller says so as on SQLite), nothing to do.
    pub(crate) fn fill_from_server(&self, id: i64, whole: bool) -> anyhow::Result<()> {
        let Some(lazy) = self.server_backend().and_then(|s| s.lazy()) else {
            return Ok(());
        };
        let mut lazy = lazy.borrow_mut();
        let held = lazy.held(id);
        let want = if whole { Held::Whole } else { Held::ButRuns };
        if held == Some(Held::Whole) || held == Some(want) || !self.holds(id)? {
            return Ok(());
        }
        let shown = lazy.pg.shown().to_string();
        let all = |_: &TableSpec| true;
        let but_runs = |t: &TableSpec| !of_runs(t);
        // Row by row as the server sends them: the experiment is not held twice.
        let (mut beside, read): (_, &dyn Fn(&TableSpec) -> bool) = match (held, want) {
            (None, Held::Whole) => (self.beside_row(id)?, &all),
            (None, Held::ButRuns) => (self.beside_row(id)?, &but_runs),
            (Some(_), _) => (self.beside_held(id)?, &of_runs),
        };
        lazy.pg
            .read_each(id, read, &mut |rows, row| beside.row(rows, row))
            .and_then(|()| beside.finish())
            .with_context(|| format!("loading experiment {id} of {shown} into memory"))?;
        lazy.loaded.insert(id, want);
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
    pub(super) fn holds(&self, id: i64) -> anyhow::Result<bool> {
        Ok(self.conn().query_row(
            "SELECT EXISTS (SELECT 1 FROM experiment WHERE id = ?1)",
            [id],
            |r| r.get(0),
        )?)
    }
}
