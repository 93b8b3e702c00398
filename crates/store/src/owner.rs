//! Who runs an experiment (`experiment_owner`, migration 10).
//!
//! The owner row is written in the same transaction as the experiment (`create_owned_experiment`)
//! and replaced when `run --resume` takes the experiment over (`claim_experiment`, which checks
//! and writes under the write lock, so two resumes cannot both win). Whether an owner still lives
//! is decided by the caller (`measure::process`): this module only stores the values. On a
//! PostgreSQL store the server holds the owner under the same rules (`postgres::owner`), and the
//! working copy follows it.

use super::Store;
use super::insert::{insert_experiment, insert_slot, insert_variant};
use abperf_model::{NewExperiment, Owner, Slot, Status, Variant};
use anyhow::Context;
use rusqlite::{OptionalExtension, params};
use std::collections::BTreeMap;

fn owner_row(r: &rusqlite::Row) -> rusqlite::Result<Owner> {
    Ok(Owner {
        pid: r.get(0)?,
        start_time: r.get::<_, i64>(1)? as u64,
        boot_id: r.get(2)?,
        host: r.get(3)?,
    })
}

fn put_owner(tx: &rusqlite::Transaction, id: i64, o: &Owner) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT OR REPLACE INTO experiment_owner (experiment_id, pid, start_time, boot_id, host, since)
         VALUES (?1, ?2, ?3, ?4, ?5, strftime('%Y-%m-%dT%H:%M:%SZ','now'))",
        params![id, o.pid, o.start_time as i64, o.boot_id, o.host],
    )?;
    Ok(())
}

/// Set every `running` experiment without a recorded owner `interrupted`: a working copy of a
/// PostgreSQL store shows one so, as a copy stores it (nothing is known to run it); one whose
/// owner is known stays running, whether that owner lives being for the reader to judge.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // the PostgreSQL backend's
pub(crate) fn settle_ownerless(tx: &rusqlite::Transaction) -> rusqlite::Result<()> {
    tx.execute(
        "UPDATE experiment SET status = ?1 WHERE status = ?2
         AND id NOT IN (SELECT experiment_id FROM experiment_owner)",
        params![Status::Interrupted.as_str(), Status::Running.as_str()],
    )?;
    Ok(())
}

/// Under a write transaction: the owner of experiment `id` when it is `running` and its owner is
/// alive (`alive` decides); an error when there is no such experiment.
fn live_owner(
    tx: &rusqlite::Transaction,
    id: i64,
    alive: &dyn Fn(&Owner) -> bool,
) -> anyhow::Result<Option<Owner>> {
    let status: String = tx
        .query_row("SELECT status FROM experiment WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()?
        .with_context(|| format!("no experiment {id} in the store"))?;
    let current = tx
        .query_row(
            "SELECT pid, start_time, boot_id, host FROM experiment_owner WHERE experiment_id = ?1",
            [id],
            owner_row,
        )
        .optional()?;
    Ok(current.filter(|o| Status::parse(&status) == Status::Running && alive(o)))
}

impl Store {
    /// Create an experiment (status `running`) with its variants, schedule and owner, in one
    /// transaction. `stop` is asked every few thousand slots (a schedule of millions takes
    /// seconds to store): when it says yes, nothing is stored and the result is `Ok(None)`.
    pub fn create_owned_experiment(
        &mut self,
        exp: &NewExperiment,
        variants: &[Variant],
        schedule: &[Slot],
        owner: &Owner,
        stop: &dyn Fn() -> bool,
    ) -> anyhow::Result<Option<i64>> {
        let tx = self.write_tx()?;
        let id = insert_experiment(&tx, exp, Status::Running)?;
        let mut ids = Vec::with_capacity(variants.len());
        for (pos, v) in variants.iter().enumerate() {
            ids.push(insert_variant(&tx, id, pos as i64, v)?);
        }
        for (i, s) in schedule.iter().enumerate() {
            if i % 16_384 == 0 && stop() {
                return Ok(None); // the transaction rolls back when dropped
            }
            let vid = *ids
                .get(s.variant)
                .with_context(|| format!("schedule slot {} names variant {}", s.seq, s.variant))?;
            insert_slot(&tx, id, vid, s)?;
        }
        put_owner(&tx, id, owner)?;
        tx.commit()?;
        // On a PostgreSQL store: stored there with its owner, under the server's ids.
        self.created(id, owner, stop)
    }

    /// The recorded owner of experiment `id` (None: made by an abperf that did not record one,
    /// or not an `abperf run` experiment).
    pub fn owner(&self, id: i64) -> anyhow::Result<Option<Owner>> {
        Ok(self
            .conn()
            .query_row(
                "SELECT pid, start_time, boot_id, host FROM experiment_owner WHERE experiment_id = ?1",
                [id],
                owner_row,
            )
            .optional()?)
    }

    /// Every recorded owner, by experiment id.
    pub fn owners(&self) -> anyhow::Result<BTreeMap<i64, Owner>> {
        let mut stmt = self.conn().prepare(
            "SELECT pid, start_time, boot_id, host, experiment_id FROM experiment_owner",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(4)?, owner_row(r)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// [`Store::claim_experiment`] in this database (`backend` dispatches it): under the write
    /// lock, refuse when it is `running` and its recorded owner is still alive (`alive`
    /// decides), else record `me` as its owner and set it `running`. Returns the live owner on
    /// refusal. A working copy of a server asks with an `alive` that says no: the server
    /// decided.
    pub(crate) fn claim_here(
        &mut self,
        id: i64,
        me: &Owner,
        alive: &dyn Fn(&Owner) -> bool,
    ) -> anyhow::Result<Result<(), Owner>> {
        let tx = self.write_tx()?;
        if let Some(o) = live_owner(&tx, id, alive)?
            && o != *me
        {
            return Ok(Err(o));
        }
        put_owner(&tx, id, me)?;
        tx.execute(
            "UPDATE experiment SET status = ?1 WHERE id = ?2",
            params![Status::Running.as_str(), id],
        )?;
        tx.commit()?;
        Ok(Ok(()))
    }

    /// Record `owners` (read from a server) in the working copy, for the experiments it holds.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // the PostgreSQL backend's
    pub(crate) fn keep_owners(&mut self, owners: &BTreeMap<i64, Owner>) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
        for (&id, o) in owners {
            let held: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM experiment WHERE id = ?1)",
                [id],
                |r| r.get(0),
            )?;
            if held {
                put_owner(&tx, id, o)?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// [`Store::delete_unless_running`] on SQLite (`backend` dispatches it): checked and
    /// deleted under one write lock.
    pub(crate) fn delete_unless_running_here(
        &mut self,
        id: i64,
        alive: &dyn Fn(&Owner) -> bool,
    ) -> anyhow::Result<Result<(), Owner>> {
        let tx = self.write_tx()?;
        if let Some(o) = live_owner(&tx, id, alive)? {
            return Ok(Err(o));
        }
        tx.execute("DELETE FROM experiment WHERE id = ?1", [id])?;
        tx.commit()?;
        Ok(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::Kind;

    fn exp() -> NewExperiment {
        NewExperiment {
            name: "o".into(),
            kind: Kind::Run,
            command_line: vec![],
            design: serde_json::json!({}),
            seed: None,
            environment: serde_json::json!({}),
        }
    }

    fn owner(pid: i32) -> Owner {
        Owner {
            pid,
            start_time: 7,
            boot_id: "b".into(),
            host: "h".into(),
        }
    }

    #[test]
    fn owner_is_stored_and_claims_respect_the_living() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::open(&d.path().join("o.db")).unwrap();
        let id = s
            .create_owned_experiment(&exp(), &[Variant::named("a")], &[], &owner(1), &|| false)
            .unwrap()
            .unwrap();
        assert_eq!(s.owner(id).unwrap(), Some(owner(1)));
        assert_eq!(s.owners().unwrap()[&id], owner(1));
        // Alive: refused, the old owner named.
        assert_eq!(
            s.claim_experiment(id, &owner(2), &|_| true).unwrap(),
            Err(owner(1))
        );
        // Dead: taken over.
        assert_eq!(
            s.claim_experiment(id, &owner(2), &|_| false).unwrap(),
            Ok(())
        );
        assert_eq!(s.owner(id).unwrap(), Some(owner(2)));
        // A stopped experiment can be resumed whoever ran it.
        s.set_status(id, Status::Interrupted).unwrap();
        assert_eq!(
            s.claim_experiment(id, &owner(3), &|_| true).unwrap(),
            Ok(())
        );
        // Deleting: refused while running with a live owner, done when the owner is dead.
        s.set_status(id, Status::Running).unwrap();
        assert_eq!(
            s.delete_unless_running(id, &|_| true).unwrap(),
            Err(owner(3))
        );
        assert_eq!(s.delete_unless_running(id, &|_| false).unwrap(), Ok(()));
        assert!(s.owner(id).unwrap().is_none());
        assert!(
            s.delete_unless_running(id, &|_| false).is_err(),
            "no such experiment"
        );
    }

    #[test]
    fn ids_are_never_reused() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::open(&d.path().join("i.db")).unwrap();
        let a = s.create_experiment(&exp(), &[], &[]).unwrap();
        let b = s.create_experiment(&exp(), &[], &[]).unwrap();
        s.delete(b).unwrap();
        let c = s.create_experiment(&exp(), &[], &[]).unwrap();
        assert!(c > b, "{a} {b} {c}");
        s.delete(c).unwrap();
        s.delete(a).unwrap();
        let e = s.create_experiment(&exp(), &[], &[]).unwrap();
        assert!(e > c, "{e} after {c}");
    }
}
