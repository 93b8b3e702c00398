//! Kernel-variant experiments: what each variant boots, the planned boots, the boots that
//! happened, and which boot made each run.
//!
//! Migration 6 (`SCHEMA`, listed in `schema.rs`):
//! - `variant.boot`: the variant's [`BootConfig`] (JSON; NULL for other variants).
//! - `boot_plan`: the seeded boot order, written with the schedule (`--resume` continues it).
//! - `boot`: one row per VM started (status, accelerator, release and /proc/cmdline seen inside,
//!   boot seconds, the boot's environment snapshot, how it ended).
//! - `boot_run`: run -> boot, written in the run's own transaction.

use super::Store;
use super::insert::{insert_experiment, insert_run_row, insert_slot, insert_variant};
use abperf_model::{Boot, BootConfig, BootPlan, NewExperiment, Run, Slot, Status, Variant};
use anyhow::Context;
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::BTreeMap;

fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("serialising plain data cannot fail")
}

/// Fill in the boot configuration of `variants` (experiment `id`, in position order).
pub(super) fn fill_variant_boots(
    conn: &Connection,
    id: i64,
    variants: &mut [Variant],
) -> anyhow::Result<()> {
    let mut stmt =
        conn.prepare_cached("SELECT boot FROM variant WHERE experiment_id = ?1 ORDER BY position")?;
    let rows = stmt.query_map([id], |r| r.get::<_, Option<String>>(0))?;
    for (v, row) in variants.iter_mut().zip(rows) {
        if let Some(text) = row? {
            v.boot = Some(
                serde_json::from_str::<BootConfig>(&text)
                    .with_context(|| format!("variant '{}': stored boot is not valid", v.name))?,
            );
        }
    }
    Ok(())
}

/// The outcome words of a boot that was still running when its abperf died.
pub const LOST: &str = "lost";

impl Store {
    /// Create a kernel-variant experiment: its variants with what they boot, the schedule and the
    /// boot order, in one transaction.
    pub fn create_boot_experiment(
        &mut self,
        exp: &NewExperiment,
        variants: &[Variant],
        schedule: &[Slot],
        plans: &[BootPlan],
    ) -> anyhow::Result<i64> {
        self.require(crate::Operation::Boots)?;
        let tx = self.write_tx()?;
        let id = insert_experiment(&tx, exp, Status::Running)?;
        let mut ids = Vec::with_capacity(variants.len());
        for (pos, v) in variants.iter().enumerate() {
            let vid = insert_variant(&tx, id, pos as i64, v)?;
            if let Some(b) = &v.boot {
                tx.execute(
                    "UPDATE variant SET boot = ?1 WHERE id = ?2",
                    params![to_json(b), vid],
                )?;
            }
            ids.push(vid);
        }
        let vid = |v: usize, what: String| {
            ids.get(v)
                .copied()
                .with_context(|| format!("{what} names variant {v} of {}", ids.len()))
        };
        for s in schedule {
            insert_slot(&tx, id, vid(s.variant, format!("slot {}", s.seq))?, s)?;
        }
        for p in plans {
            tx.execute(
                "INSERT INTO boot_plan (experiment_id, number, variant_id, block, first_seq, last_seq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    id,
                    p.number,
                    vid(p.variant, format!("boot {}", p.number))?,
                    p.block,
                    p.first_seq,
                    p.last_seq
                ],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// The planned boots of experiment `id` in boot order (empty for other experiments).
    pub fn boot_plans(&self, id: i64) -> anyhow::Result<Vec<BootPlan>> {
        self.fill_but_runs(id)?;
        let mut stmt = self.conn().prepare(
            "SELECT p.number, v.position, p.block, p.first_seq, p.last_seq
             FROM boot_plan p JOIN variant v ON v.id = p.variant_id
             WHERE p.experiment_id = ?1 ORDER BY p.number",
        )?;
        let rows = stmt.query_map([id], |r| {
            Ok(BootPlan {
                number: r.get(0)?,
                variant: r.get::<_, i64>(1)? as usize,
                block: r.get(2)?,
                first_seq: r.get(3)?,
                last_seq: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Record that a VM is starting for planned boot `plan`; returns the boot's row id and its
    /// number (the order boots happened in).
    pub fn start_boot(
        &mut self,
        exp_id: i64,
        plan: u32,
        accel: &str,
        environment: &serde_json::Value,
    ) -> anyhow::Result<(i64, u32)> {
        self.require(crate::Operation::Boots)?;
        self.pace_sync(true)?;
        let tx = self.write_tx()?;
        let number: u32 = tx.query_row(
            "SELECT coalesce(max(number) + 1, 0) FROM boot WHERE experiment_id = ?1",
            [exp_id],
            |r| r.get(0),
        )?;
        tx.execute(
            "INSERT INTO boot (experiment_id, number, plan, started, status, accel, environment)
             VALUES (?1, ?2, ?3, strftime('%Y-%m-%dT%H:%M:%SZ','now'), 'starting', ?4, ?5)",
            params![exp_id, number, plan, accel, to_json(environment)],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok((id, number))
    }

    /// The guest is up: what it reported, and the boot's environment snapshot.
    pub fn boot_up(
        &mut self,
        boot_id: i64,
        release: &str,
        cmdline: &str,
        boot_seconds: f64,
        environment: &serde_json::Value,
    ) -> anyhow::Result<()> {
        self.require(crate::Operation::Boots)?;
        self.pace_sync(true)?;
        self.conn().execute(
            "UPDATE boot SET status = 'running', release = ?1, cmdline = ?2, boot_seconds = ?3,
                    environment = ?4 WHERE id = ?5",
            params![
                release,
                cmdline,
                boot_seconds,
                to_json(environment),
                boot_id
            ],
        )?;
        Ok(())
    }

    /// Replace a boot's environment snapshot (the guest's own snapshot arrives after the boot).
    pub fn set_boot_environment(
        &mut self,
        boot_id: i64,
        environment: &serde_json::Value,
    ) -> anyhow::Result<()> {
        self.require(crate::Operation::Boots)?;
        self.conn().execute(
            "UPDATE boot SET environment = ?1 WHERE id = ?2",
            params![to_json(environment), boot_id],
        )?;
        Ok(())
    }

    /// Commit one finished run made in boot `boot_id`, with its link to the boot, in its own
    /// transaction.
    pub fn commit_boot_run(&mut self, exp_id: i64, boot_id: i64, run: &Run) -> anyhow::Result<i64> {
        self.require(crate::Operation::Boots)?;
        self.pace_sync(false)?;
        let tx = self.write_tx()?;
        let run_id = insert_run_row(&tx, exp_id, run)?;
        tx.prepare_cached("INSERT INTO boot_run (run_id, boot_id) VALUES (?1, ?2)")?
            .execute(params![run_id, boot_id])?;
        tx.commit()?;
        Ok(run_id)
    }

    /// The VM of boot `boot_id` ended.
    #[allow(clippy::too_many_arguments)]
    pub fn end_boot(
        &mut self,
        boot_id: i64,
        status: &str,
        outcome: &str,
        seconds: Option<f64>,
        run_seconds: Option<f64>,
        extra_warmups: u32,
    ) -> anyhow::Result<()> {
        self.require(crate::Operation::Boots)?;
        self.pace_sync(true)?;
        self.conn().execute(
            "UPDATE boot SET status = ?1, outcome = ?2, seconds = ?3, run_seconds = ?4,
                    extra_warmups = ?5 WHERE id = ?6",
            params![
                status,
                outcome,
                seconds,
                run_seconds,
                extra_warmups,
                boot_id
            ],
        )?;
        Ok(())
    }

    /// Mark the boots of experiment `id` that were still starting or running as lost (their
    /// abperf died); returns how many.
    pub fn mark_lost_boots(&mut self, id: i64) -> anyhow::Result<usize> {
        self.require(crate::Operation::Boots)?;
        Ok(self.conn().execute(
            "UPDATE boot SET status = ?1,
                    outcome = 'the host abperf ended while this boot ran (killed or crashed)'
             WHERE experiment_id = ?2 AND status IN ('starting', 'running')",
            params![LOST, id],
        )?)
    }

    /// Every boot of experiment `id` in the order they happened, with their runs.
    pub fn boots(&self, id: i64) -> anyhow::Result<Vec<Boot>> {
        self.fill_but_runs(id)?;
        let plans: BTreeMap<u32, BootPlan> = self
            .boot_plans(id)?
            .into_iter()
            .map(|p| (p.number, p))
            .collect();
        let mut stmt = self.conn().prepare(
            "SELECT id, number, plan, status, accel, release, cmdline, boot_seconds, seconds,
                    run_seconds, extra_warmups, started, environment, outcome
             FROM boot WHERE experiment_id = ?1 ORDER BY number",
        )?;
        let rows = stmt.query_map([id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, u32>(1)?,
                r.get::<_, u32>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, Option<String>>(5)?,
                r.get::<_, Option<String>>(6)?,
                r.get::<_, Option<f64>>(7)?,
                r.get::<_, Option<f64>>(8)?,
                r.get::<_, Option<f64>>(9)?,
                r.get::<_, u32>(10)?,
                r.get::<_, String>(11)?,
                r.get::<_, String>(12)?,
                r.get::<_, Option<String>>(13)?,
            ))
        })?;
        let mut out = Vec::new();
        let mut row_ids = Vec::new();
        for row in rows {
            let (
                rid,
                number,
                plan,
                status,
                accel,
                release,
                cmdline,
                bs,
                s,
                rs,
                extra,
                started,
                env,
                outcome,
            ) = row?;
            let p = plans.get(&plan).with_context(|| {
                format!("boot {number} of experiment {id} names no planned boot {plan}")
            })?;
            row_ids.push(rid);
            out.push(Boot {
                number,
                plan,
                variant: p.variant,
                block: p.block,
                status,
                accel,
                release,
                cmdline,
                boot_seconds: bs,
                seconds: s,
                run_seconds: rs,
                extra_warmups: extra,
                started,
                environment: serde_json::from_str(&env)
                    .with_context(|| format!("boot {number}: stored environment is not JSON"))?,
                outcome,
                runs: Vec::new(),
            });
        }
        if !out.is_empty() {
            self.fill(id)?; // the runs of each boot
        }
        let mut stmt = self.conn().prepare(
            "SELECT b.boot_id, r.seq FROM boot_run b JOIN run r ON r.id = b.run_id
             WHERE r.experiment_id = ?1 ORDER BY r.seq",
        )?;
        let rows = stmt.query_map([id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, u32>(1)?)))?;
        for row in rows {
            let (bid, seq) = row?;
            if let Some(i) = row_ids.iter().position(|&x| x == bid) {
                out[i].runs.push(seq);
            }
        }
        Ok(out)
    }

    /// The row id of boot `number` of experiment `id`.
    pub fn boot_id(&self, id: i64, number: u32) -> anyhow::Result<Option<i64>> {
        self.fill(id)?;
        Ok(self
            .conn()
            .query_row(
                "SELECT id FROM boot WHERE experiment_id = ?1 AND number = ?2",
                params![id, number],
                |r| r.get(0),
            )
            .optional()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::{Kind, Metric};

    #[test]
    fn boot_experiment_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("x.db")).unwrap();
        let exp = NewExperiment {
            name: "k".into(),
            kind: Kind::Run,
            command_line: vec!["abperf".into()],
            design: serde_json::json!({"order": "abba"}),
            seed: Some(1),
            environment: serde_json::json!({}),
        };
        let v = |n: &str, append: &str| Variant {
            command: Some("uname -r".into()),
            boot: Some(BootConfig {
                kernel: "/k/vmlinuz".into(),
                release: "6.1.0-56-amd64".into(),
                modules: None,
                package: None,
                append: append.into(),
                source: None,
            }),
            ..Variant::named(n)
        };
        let slot = |seq: u32, variant: usize| Slot {
            seq,
            variant,
            block: 0,
            warmup: seq.is_multiple_of(2),
        };
        let schedule = [slot(0, 1), slot(1, 1), slot(2, 0), slot(3, 0)];
        let plans = [
            BootPlan {
                number: 0,
                variant: 1,
                block: 0,
                first_seq: 0,
                last_seq: 1,
            },
            BootPlan {
                number: 1,
                variant: 0,
                block: 0,
                first_seq: 2,
                last_seq: 3,
            },
        ];
        let id = store
            .create_boot_experiment(&exp, &[v("a", "pti=on"), v("b", "")], &schedule, &plans)
            .unwrap();
        assert_eq!(store.boot_plans(id).unwrap(), plans);
        let vs = store.variants(id).unwrap();
        assert_eq!(vs[0].boot.as_ref().unwrap().append, "pti=on");
        let (b0, n0) = store
            .start_boot(id, 0, "tcg", &serde_json::json!({"a": 1}))
            .unwrap();
        assert_eq!(n0, 0);
        store
            .boot_up(
                b0,
                "6.1.0-56-amd64",
                "console=ttyS0",
                9.5,
                &serde_json::json!({"b": 2}),
            )
            .unwrap();
        let run = Run::ok(1, 1, vec![Metric::new("wall_ns", 5.0, "ns")]);
        store.commit_boot_run(id, b0, &run).unwrap();
        let (_, n1) = store
            .start_boot(id, 1, "tcg", &serde_json::json!({}))
            .unwrap();
        assert_eq!(n1, 1);
        assert_eq!(store.mark_lost_boots(id).unwrap(), 2);
        store
            .end_boot(b0, "complete", "exit 0", Some(20.0), Some(3.0), 1)
            .unwrap();
        let ds = store.load(id).unwrap();
        assert_eq!(ds.boots.len(), 2);
        let b = &ds.boots[0];
        assert_eq!(
            (b.variant, b.runs.as_slice(), b.status.as_str()),
            (1, &[1][..], "complete")
        );
        assert_eq!(b.release.as_deref(), Some("6.1.0-56-amd64"));
        assert_eq!(b.environment["b"], 2);
        assert_eq!((b.seconds, b.extra_warmups), (Some(20.0), 1));
        assert_eq!(ds.boots[1].status, LOST);
        assert_eq!(ds.boot_of(1, 1).unwrap().number, 0);
        store.delete(id).unwrap();
        let left: i64 = store
            .conn()
            .query_row("SELECT count(*) FROM boot", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0);
    }
}
