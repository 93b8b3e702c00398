//! Model values to rows, inside the caller's transaction: the experiment row (under an id never
//! handed out before), its variants with their summaries, schedule slots and runs. Shared by every
//! module that creates experiments (`experiments`, `owner`, `boots`, `import`).

use super::experiment_ids::NEXT_EXPERIMENT_ID;
use super::run_rows;
use abperf_model::{NewExperiment, Run, Slot, Status, Variant};
use anyhow::Context;
use rusqlite::params;
use serde::Serialize;

/// A value as the JSON text stored in its column.
pub(super) fn to_json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("serialising plain data cannot fail")
}

/// Insert an experiment row (created now, with `status`) in the caller's transaction.
pub(super) fn insert_experiment(
    tx: &rusqlite::Transaction,
    exp: &NewExperiment,
    status: Status,
) -> anyhow::Result<i64> {
    // An explicit id above every id ever handed out (migration 11): ids are never reused.
    let id: i64 = tx.query_row(NEXT_EXPERIMENT_ID, [], |r| r.get(0))?;
    tx.execute(
        "INSERT INTO experiment (id, name, kind, created, command_line, design, seed, environment, status)
         VALUES (?8, ?1, ?2, strftime('%Y-%m-%dT%H:%M:%SZ','now'), ?3, ?4, ?5, ?6, ?7)",
        params![
            exp.name,
            exp.kind.as_str(),
            to_json(&exp.command_line),
            to_json(&exp.design),
            exp.seed.map(|s| s.to_string()),
            to_json(&exp.environment),
            status.as_str(),
            id,
        ],
    )?;
    Ok(id)
}

/// Insert a variant at `position` of experiment `exp_id` in the caller's transaction, with its
/// per-variant summaries and its kernel provenance.
pub(super) fn insert_variant(
    tx: &rusqlite::Transaction,
    exp_id: i64,
    position: i64,
    v: &Variant,
) -> anyhow::Result<i64> {
    tx.prepare_cached(
        "INSERT INTO variant (experiment_id, position, name, command, parameters, knobs, workload)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        exp_id,
        position,
        v.name,
        v.command,
        to_json(&v.parameters),
        to_json(&v.knobs),
        v.workload.as_ref().map(to_json)
    ])
    .with_context(|| format!("variant '{}'", v.name))?;
    let vid = tx.last_insert_rowid();
    insert_summaries(tx, vid, v)?;
    if let Some(p) = &v.provenance {
        super::provenance::insert(tx, vid, p)
            .with_context(|| format!("variant '{}': kernel provenance", v.name))?;
    }
    Ok(vid)
}

/// Store (or replace) the per-variant summaries of `v` under variant row `vid`.
pub(super) fn insert_summaries(
    tx: &rusqlite::Transaction,
    vid: i64,
    v: &Variant,
) -> anyhow::Result<()> {
    for (name, s) in &v.summary {
        if !s.value.is_finite() {
            anyhow::bail!("variant '{}': {name} is not a finite number", v.name);
        }
        tx.prepare_cached(
            "INSERT OR REPLACE INTO import_variant_summary (variant_id, name, value, unit)
             VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![vid, name, s.value, s.unit])?;
    }
    Ok(())
}

/// Insert a schedule slot in the caller's transaction.
pub(super) fn insert_slot(
    tx: &rusqlite::Transaction,
    exp_id: i64,
    vid: i64,
    s: &Slot,
) -> anyhow::Result<()> {
    tx.prepare_cached("INSERT INTO slot (experiment_id, seq, variant_id, block, warmup) VALUES (?1, ?2, ?3, ?4, ?5)")?
        .execute(params![exp_id, s.seq, vid, s.block, s.warmup])?;
    Ok(())
}

/// Insert one run of experiment `exp_id` (its variant by position, `run.variant`), with its
/// metrics and provenance, in the caller's transaction; returns the run's row id.
pub(super) fn insert_run_row(
    tx: &rusqlite::Connection,
    exp_id: i64,
    run: &Run,
) -> anyhow::Result<i64> {
    let run_id = run_rows::insert(tx, exp_id, run)?;
    if let Some(s) = &run.source {
        tx.prepare_cached(
            "INSERT INTO import_run (run_id, format, file, line, summary, repeats) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![run_id, s.format, s.file, s.line, s.summary, s.repeats])?;
    }
    super::run_labels::insert(tx, run_id, &run.labels)?;
    Ok(run_id)
}
