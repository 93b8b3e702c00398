//! What each backend does, in one place: the purposes a store is opened for ([`Purpose`]), the
//! operations a backend may not support ([`Operation`], refused here naming the operation and the
//! backend), and the operations done differently on a PostgreSQL store, dispatched here to the
//! SQLite implementation (beside its feature: `experiments`, `owner`, `import`, ...) or to the
//! PostgreSQL one (`postgres`). Nothing else in the store asks which backend it is.

// Built without PostgreSQL, SQLite is the only backend: what the others would be given is unused.
#![cfg_attr(not(feature = "postgres"), allow(unused_variables))]

use super::{Backend, ImportOutcome, ImportTarget, Location, Store};
use abperf_model::{Owner, Run, Variant};
use std::collections::BTreeMap;

/// What a store is opened for (`open`); with its location it chooses the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// A command that only reads (list, show, compare, report, export, ...).
    Read,
    /// Reading without changing anything: nothing created or migrated (`store copy` FROM).
    ReadOnly,
    /// A command whose writes only an SQLite store keeps (trace, micro, doctor, boot loops).
    Write,
    /// `run` and `fleet run`: a new experiment, committed run by run.
    Run,
    /// Taking an experiment over (`--resume`, `import --experiment`) or deleting one.
    TakeOver,
    /// A fleet host adding runs to experiment `0`.
    AddRuns(i64),
}

/// A write that not every backend supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Whatever a command other than run, fleet run, import and delete writes.
    Write,
    /// An experiment made without recording its owner.
    ExperimentWithoutOwner,
    /// Many runs committed in one transaction (micro benchmarks).
    ManyRuns,
    /// Trace captures and their tables.
    Trace,
    /// Profiled runs (`run --profile`).
    Profile,
    /// The journal of `--tune` and `doctor --fix`.
    Tune,
    /// A kernel experiment's boots.
    Boots,
    /// Micro benchmark findings and rounds.
    Micro,
    /// `store copy` into the store through this connection.
    CopyInto,
    /// An import into a new experiment through a store opened to take one over.
    ImportNewThroughCopy,
}

#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // the PostgreSQL backend's
impl Operation {
    /// The operation, for the refusal.
    fn what(self) -> &'static str {
        match self {
            Operation::Write => {
                "writing with this command (only `abperf run` of commands, without kernels, \
                 `abperf fleet run`, `abperf import` and `abperf delete` write to a PostgreSQL \
                 store)"
            }
            Operation::ExperimentWithoutOwner => "an experiment made without an owner",
            Operation::ManyRuns => "storing many runs at once (micro benchmarks)",
            Operation::Trace => "trace",
            Operation::Profile => "storing profiled runs",
            Operation::Tune => {
                "--tune (its journal, which puts the settings back after a crash, is kept in \
                 the store)"
            }
            Operation::Boots => "boots (kernel experiments)",
            Operation::Micro => "micro",
            Operation::CopyInto => {
                "a copy into it (abperf store copy writes through its own connection)"
            }
            Operation::ImportNewThroughCopy => {
                "import into a new experiment through a working copy (`import_to_server` \
                 writes one)"
            }
        }
    }

    /// The refusal of this operation by `backend` on the store `shown`.
    pub(crate) fn refused(self, backend: &str, shown: &str) -> anyhow::Error {
        abperf_model::error::usage(format!(
            "{}: not built yet on {backend}: run into a local store and `abperf store copy` it \
             to {shown}",
            self.what()
        ))
    }
}

impl Store {
    /// Whether this store's backend supports `op` (an SQLite store supports every operation).
    pub fn supports(&self, op: Operation) -> bool {
        self.require(op).is_ok()
    }

    /// `op` refused when this store's backend does not support it.
    pub(crate) fn require(&self, op: Operation) -> anyhow::Result<()> {
        match &self.backend {
            Backend::Sqlite => Ok(()),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => Err(self.refusal(op)),
        }
    }

    /// The refusal of `op` by this store's backend.
    #[cfg(feature = "postgres")]
    fn refusal(&self, op: Operation) -> anyhow::Error {
        op.refused("PostgreSQL", &self.path.to_string_lossy())
    }

    /// Where other machines (a fleet's hosts) can commit runs into this store themselves: a
    /// PostgreSQL store written by this process (None: a file of this machine).
    pub fn location_for_hosts(&self) -> Option<Location> {
        match &self.backend {
            Backend::Sqlite => None,
            #[cfg(feature = "postgres")]
            Backend::Postgres(server) => server.location_for_hosts(),
        }
    }

    /// Bring experiment `id` up to what the store holds: on a PostgreSQL store, the runs other
    /// processes committed there since it was read (fleet hosts) are read into the working copy.
    /// Nothing to do on an SQLite store, which every process reads and writes in place.
    pub fn catch_up(&mut self, id: i64) -> anyhow::Result<()> {
        match &self.backend {
            Backend::Sqlite => Ok(()),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => self.catch_up_on_server(id),
        }
    }

    /// Make sure experiment `id`'s content is in this store (called by every reader of one
    /// experiment's content): on a PostgreSQL store read from the server the first time.
    pub(crate) fn fill(&self, id: i64) -> anyhow::Result<()> {
        match &self.backend {
            Backend::Sqlite => Ok(()),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => self.fill_from_server(id, true),
        }
    }

    /// As [`Store::fill`], without the rows of its runs (schedule, runs, their metrics, labels,
    /// provenance and boots): for the readers that read the runs through [`Store::runs`] or
    /// not at all. A PostgreSQL store reads the runs from the server when asked for them.
    pub(crate) fn fill_but_runs(&self, id: i64) -> anyhow::Result<()> {
        match &self.backend {
            Backend::Sqlite => Ok(()),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => self.fill_from_server(id, false),
        }
    }

    /// Every stored run of experiment `id` in schedule order, with its metrics and provenance.
    pub fn runs(&self, id: i64) -> anyhow::Result<Vec<Run>> {
        Ok(self.runs_planned(id)?.0)
    }

    /// [`Store::runs`] and the number of runs planned (the schedule's slots), read together: on
    /// a PostgreSQL store read by a reading command straight from the server's rows, in one
    /// snapshot, unless the working copy holds them.
    pub(crate) fn runs_planned(&self, id: i64) -> anyhow::Result<(Vec<Run>, usize)> {
        match &self.backend {
            Backend::Sqlite => self.runs_here(id),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => self.runs_on_server(id),
        }
    }

    /// What `list` counts of every experiment when the server counts it (None: the store
    /// counts its own).
    pub(crate) fn server_list_counts(&self) -> anyhow::Result<Option<BTreeMap<i64, [i64; 3]>>> {
        match &self.backend {
            Backend::Sqlite => Ok(None),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => self.list_counts_on_server(),
        }
    }

    /// `history`'s per-variant summaries (`history::SUMMARY`) counted by the server (None: the
    /// store counts its own).
    pub(crate) fn server_summaries(
        &self,
        sql: &str,
    ) -> anyhow::Result<Option<Vec<crate::history::VariantSum>>> {
        match &self.backend {
            Backend::Sqlite => Ok(None),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => self.summaries_on_server(sql),
        }
    }

    /// After a change in the store: the rows of `table` that `rows` selects (a WHERE clause of
    /// `?1` = `id`) written over theirs on a server that is written. Nothing on SQLite.
    pub(crate) fn mirror(&mut self, table: &str, rows: &str, id: i64) -> anyhow::Result<()> {
        self.mirror_by(table, rows, id, &["id"])
    }

    /// As [`Store::mirror`], the rows found on the server by their `key` columns.
    pub(crate) fn mirror_by(
        &mut self,
        table: &str,
        rows: &str,
        id: i64,
        key: &[&str],
    ) -> anyhow::Result<()> {
        match &self.backend {
            Backend::Sqlite => Ok(()),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => self.mirror_on_server(table, rows, id, key),
        }
    }

    /// After rows were added: the rows of `table` that `rows` selects (a WHERE clause of `?1` =
    /// experiment `id`, in `order`) inserted on a server that is written. Nothing on SQLite.
    pub(crate) fn mirror_added(
        &mut self,
        id: i64,
        table: &str,
        rows: &str,
        order: &str,
    ) -> anyhow::Result<()> {
        match &self.backend {
            Backend::Sqlite => Ok(()),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => self.add_on_server(id, table, rows, order),
        }
    }

    /// Experiment `local`, just made with its `owner`, stored where it belongs: on SQLite it
    /// is; a PostgreSQL store stores it on the server and gives the server's id (None: `stop`
    /// said yes, nothing stored).
    pub(crate) fn created(
        &mut self,
        local: i64,
        owner: &Owner,
        stop: &dyn Fn() -> bool,
    ) -> anyhow::Result<Option<i64>> {
        match &self.backend {
            Backend::Sqlite => Ok(Some(local)),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => self.create_on_server(local, owner, stop),
        }
    }

    /// Commit one finished run of experiment `exp_id` and its metrics in their own transaction
    /// (on PostgreSQL on the server first); returns the run's id.
    pub fn commit_run(&mut self, exp_id: i64, run: &Run) -> anyhow::Result<i64> {
        match &self.backend {
            Backend::Sqlite => self.commit_run_here(exp_id, run),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => self.commit_run_on_server(exp_id, run),
        }
    }

    /// Delete an experiment and everything under it.
    pub fn delete(&mut self, id: i64) -> anyhow::Result<()> {
        match &self.backend {
            Backend::Sqlite => self.delete_here(id),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => self.delete_on_server(id),
        }
    }

    /// Write an import in a single transaction: the experiment (if new), variants with their
    /// per-variant summaries, schedule slots, runs, metrics and provenance. `Run::variant`
    /// indexes `variants`; `Run::seq` is replaced by the next free schedule number. On any error
    /// nothing is stored. On PostgreSQL only `ImportTarget::Existing` is taken here (a new
    /// experiment is imported whole: `import_new`).
    pub fn import_runs(
        &mut self,
        target: &ImportTarget,
        variants: &[Variant],
        runs: &[Run],
    ) -> anyhow::Result<ImportOutcome> {
        match (&self.backend, target) {
            (Backend::Sqlite, _) => self.import_here(target, variants, runs),
            #[cfg(feature = "postgres")]
            (Backend::Postgres(_), ImportTarget::Existing(id)) => {
                self.import_on_server(*id, variants, runs)
            }
            #[cfg(feature = "postgres")]
            (Backend::Postgres(_), ImportTarget::New(..)) => {
                Err(self.refusal(Operation::ImportNewThroughCopy))
            }
        }
    }

    /// Take experiment `id` over for `me` (`run --resume`): refused when it is `running` and
    /// its recorded owner is still alive (`alive` decides), else `me` recorded as its owner and
    /// it set `running`. Returns the live owner on refusal. On PostgreSQL the server decides
    /// (its owner row, under a row lock), and the working copy follows.
    pub fn claim_experiment(
        &mut self,
        id: i64,
        me: &Owner,
        alive: &dyn Fn(&Owner) -> bool,
    ) -> anyhow::Result<Result<(), Owner>> {
        match &self.backend {
            Backend::Sqlite => self.claim_here(id, me, alive),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => self.claim_on_server(id, me, alive),
        }
    }

    /// Delete experiment `id` (`abperf delete`) unless it is `running` and its recorded owner
    /// is alive (`alive` decides), checked and deleted at once. Returns the live owner on
    /// refusal. On PostgreSQL the server decides and deletes, in one transaction holding the
    /// experiment's row; the working copy follows.
    pub fn delete_unless_running(
        &mut self,
        id: i64,
        alive: &dyn Fn(&Owner) -> bool,
    ) -> anyhow::Result<Result<(), Owner>> {
        match &self.backend {
            Backend::Sqlite => self.delete_unless_running_here(id, alive),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => self.delete_unless_running_on_server(id, alive),
        }
    }
}
