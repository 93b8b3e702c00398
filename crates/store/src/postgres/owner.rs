//! Who runs an experiment stored in PostgreSQL (`experiment_owner`), under SQLite's rules
//! (`crate::owner`): the owner row is written in the transaction that creates the experiment,
//! and replaced by a take-over only when the current owner is not alive, checked and written in
//! one transaction that holds the experiment's row (`SELECT ... FOR UPDATE`), so two take-overs
//! from two machines cannot both win. Whether an owner lives is decided by the caller.

use super::Pg;
use abperf_model::{Owner, Status};
use anyhow::Context;
use postgres::{GenericClient, Row};
use std::collections::BTreeMap;

/// The owner table: SQLite's (`crate::owner::OWNER_SCHEMA`) in PostgreSQL's types. It is not
/// generated with the copied tables (`copy_tables::NOT_COPIED`: a copy has no owner).
pub(super) const OWNER_DDL: &str = "
    CREATE TABLE IF NOT EXISTS experiment_owner (
        experiment_id BIGINT PRIMARY KEY REFERENCES experiment(id) ON DELETE CASCADE,
        pid           INTEGER NOT NULL,
        start_time    BIGINT NOT NULL,
        boot_id       TEXT NOT NULL,
        host          TEXT NOT NULL,
        since         TEXT NOT NULL
    )";

const COLUMNS: &str = "pid, start_time, boot_id, host";

fn owner_of(r: &Row) -> anyhow::Result<Owner> {
    Ok(Owner {
        pid: r.try_get(0)?,
        start_time: r.try_get::<_, i64>(1)? as u64,
        boot_id: r.try_get(2)?,
        host: r.try_get(3)?,
    })
}

/// Record `o` as the owner of experiment `id` (replacing any), inside the caller's transaction.
pub(super) fn put_owner(tx: &mut impl GenericClient, id: i64, o: &Owner) -> anyhow::Result<()> {
    let start_time = o.start_time as i64;
    tx.execute(
        "INSERT INTO experiment_owner (experiment_id, pid, start_time, boot_id, host, since)
         VALUES ($1, $2, $3, $4, $5, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'))
         ON CONFLICT (experiment_id) DO UPDATE SET pid = EXCLUDED.pid,
             start_time = EXCLUDED.start_time, boot_id = EXCLUDED.boot_id,
             host = EXCLUDED.host, since = EXCLUDED.since",
        &[&id, &o.pid, &start_time, &o.boot_id, &o.host],
    )
    .with_context(|| format!("recording the owner of experiment {id}"))?;
    Ok(())
}

impl Pg {
    /// Every recorded owner, by experiment id (none where the schema is missing or predates
    /// the owner table).
    pub(crate) fn owners(&mut self) -> anyhow::Result<BTreeMap<i64, Owner>> {
        let exists: bool = self
            .client
            .query_one("SELECT to_regclass('experiment_owner') IS NOT NULL", &[])?
            .try_get(0)?;
        if !exists {
            return Ok(BTreeMap::new());
        }
        let sql = format!("SELECT {COLUMNS}, experiment_id FROM experiment_owner");
        let mut out = BTreeMap::new();
        for r in self.client.query(&sql, &[])? {
            out.insert(r.try_get::<_, i64>(4)?, owner_of(&r)?);
        }
        Ok(out)
    }

    /// Take experiment `id` over for `me`: in one transaction holding the experiment's row,
    /// refuse when it is `running` and its recorded owner is alive (`alive` decides, and is not
    /// asked about `me`), else record `me` and set it `running`. Returns the live owner on
    /// refusal.
    pub(crate) fn claim(
        &mut self,
        id: i64,
        me: &Owner,
        alive: &dyn Fn(&Owner) -> bool,
    ) -> anyhow::Result<Result<(), Owner>> {
        let mut tx = self.client.transaction()?;
        if let Some(o) = live_owner(&mut tx, id, &self.shown, &|o| o != me && alive(o))? {
            return Ok(Err(o)); // the transaction rolls back when dropped
        }
        put_owner(&mut tx, id, me)?;
        tx.execute(
            "UPDATE experiment SET status = $1 WHERE id = $2",
            &[&Status::Running.as_str(), &id],
        )?;
        tx.commit()
            .with_context(|| format!("taking experiment {id} of {} over", self.shown))?;
        Ok(Ok(()))
    }

    /// Delete experiment `id` and everything under it (`keys::delete_experiment`; its owner row
    /// cascades)
    /// unless it is `running` and its recorded owner is alive (`alive` decides): checked and
    /// deleted in one transaction holding the experiment's row, as SQLite's
    /// `Store::delete_unless_running` does under its write lock. Returns the live owner on
    /// refusal.
    pub(crate) fn delete_unless_running(
        &mut self,
        id: i64,
        alive: &dyn Fn(&Owner) -> bool,
    ) -> anyhow::Result<Result<(), Owner>> {
        let mut tx = self.client.transaction()?;
        if let Some(o) = live_owner(&mut tx, id, &self.shown, alive)? {
            return Ok(Err(o)); // the transaction rolls back when dropped
        }
        super::keys::delete_experiment(&mut tx, id)?;
        tx.commit()
            .with_context(|| format!("deleting experiment {id} of {}", self.shown))?;
        Ok(Ok(()))
    }
}

/// In the caller's transaction, holding experiment `id`'s row (`SELECT ... FOR UPDATE`, so a
/// take-over or delete from another machine waits): its recorded owner when it is `running` and
/// `alive` says that owner is alive; an error naming `shown` when there is no such experiment.
fn live_owner(
    tx: &mut impl GenericClient,
    id: i64,
    shown: &str,
    alive: &dyn Fn(&Owner) -> bool,
) -> anyhow::Result<Option<Owner>> {
    let status: String = tx
        .query_opt(
            "SELECT status FROM experiment WHERE id = $1 FOR UPDATE",
            &[&id],
        )?
        .with_context(|| format!("no experiment {id} in the store {shown}"))?
        .try_get(0)?;
    let sql = format!("SELECT {COLUMNS} FROM experiment_owner WHERE experiment_id = $1");
    let current = match tx.query_opt(&sql, &[&id])? {
        Some(r) => Some(owner_of(&r)?),
        None => None,
    };
    Ok(current.filter(|o| Status::parse(&status) == Status::Running && alive(o)))
}
