//! The PostgreSQL schema, generated from SQLite's (`columns`, `ddl`) and recorded with the
//! SQLite schema version it was made from (`abperf_schema.version`) and the revision of what
//! PostgreSQL holds beyond the generated tables (`abperf_schema.revision`, [`REVISION`]). Made or brought up to date under
//! an advisory lock, so that any number of abperf processes may open a new database at once; a
//! schema from an older abperf gets the tables and columns it lacks, one from a newer abperf is
//! refused.

use super::columns::{Table, tables};
use super::ddl;
use crate::schema::current_version;
use anyhow::Context;

/// The advisory lock key held while the schema is made or changed ("abperf" in ASCII).
const SCHEMA_LOCK: i64 = 0x6162_7065_7266;

/// What the PostgreSQL schema holds beyond the tables generated from SQLite's: 1, the owner
/// table (`owner::OWNER_DDL`); 2, the per-run tables without their foreign keys
/// (`keys::UNCHECKED`). A schema of a lower revision (or none recorded: made before revisions
/// were) is brought up to it as an older version is.
pub const REVISION: i64 = 2;

/// The version the PostgreSQL schema of `client`'s database was made from (None: no schema).
pub fn version(client: &mut impl postgres::GenericClient) -> anyhow::Result<Option<i64>> {
    let exists: bool = client
        .query_one("SELECT to_regclass('abperf_schema') IS NOT NULL", &[])?
        .try_get(0)?;
    if !exists {
        return Ok(None);
    }
    let row = client.query_opt("SELECT max(version)::bigint FROM abperf_schema", &[])?;
    Ok(match row {
        Some(r) => r.try_get::<_, Option<i64>>(0)?,
        None => None,
    })
}

/// The revision recorded in `client`'s database (0: none recorded, or no schema).
pub fn revision(client: &mut impl postgres::GenericClient) -> anyhow::Result<i64> {
    let recorded: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = 'abperf_schema' \
             AND column_name = 'revision')",
            &[],
        )?
        .try_get(0)?;
    if !recorded {
        return Ok(0);
    }
    let row = client.query_one("SELECT max(revision)::bigint FROM abperf_schema", &[])?;
    Ok(row.try_get::<_, Option<i64>>(0)?.unwrap_or(0))
}

/// Whether `client`'s database holds this abperf's schema, version and revision.
pub fn is_current(client: &mut impl postgres::GenericClient) -> anyhow::Result<bool> {
    Ok(version(client)? == Some(current_version()) && revision(client)? >= REVISION)
}

/// Refuse a schema made by a newer abperf.
pub fn check_not_newer(version: Option<i64>, shown: &str) -> anyhow::Result<()> {
    match version {
        Some(v) if v > current_version() => anyhow::bail!(
            "the PostgreSQL store {shown} has schema version {v}, newer than this abperf's ({}): \
             use the newer abperf that made it",
            current_version()
        ),
        _ => Ok(()),
    }
}

/// Make the schema, or add what an older one lacks, in one transaction.
pub fn ensure(client: &mut postgres::Client, shown: &str) -> anyhow::Result<()> {
    if is_current(client)? {
        return Ok(());
    }
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])?;
    let found = version(&mut tx)?;
    check_not_newer(found, shown)?;
    if is_current(&mut tx)? {
        return Ok(()); // another process made it while this one waited for the lock
    }
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS abperf_schema (version INTEGER NOT NULL);
         ALTER TABLE abperf_schema ADD COLUMN IF NOT EXISTS revision INTEGER NOT NULL DEFAULT 0",
    )?;
    for table in tables()? {
        upgrade_table(&mut tx, &table)
            .with_context(|| format!("making table {} in {shown}", table.name))?;
    }
    tx.batch_execute(super::owner::OWNER_DDL)
        .with_context(|| format!("making table experiment_owner in {shown}"))?;
    super::keys::drop_foreign_keys(&mut tx)
        .with_context(|| format!("dropping the per-run foreign keys of {shown}"))?;
    tx.execute("DELETE FROM abperf_schema", &[])?;
    tx.execute(
        "INSERT INTO abperf_schema (version, revision) VALUES ($1, $2)",
        &[&(current_version() as i32), &(REVISION as i32)],
    )?;
    tx.commit()
        .with_context(|| format!("making the abperf schema in {shown}"))
}

/// Create `table`, or add the columns it lacks; its plain indexes either way.
fn upgrade_table(tx: &mut postgres::Transaction, table: &Table) -> anyhow::Result<()> {
    let present: Vec<String> = tx
        .query(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1",
            &[&table.name],
        )?
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?;
    if present.is_empty() {
        tx.batch_execute(&ddl::create_table(&super::keys::as_made(table)))?;
    } else {
        for c in table.columns.iter().filter(|c| !present.contains(&c.name)) {
            tx.batch_execute(&ddl::add_column(table, c))
                .with_context(|| format!("adding column {}", c.name))?;
        }
    }
    for index in ddl::create_indexes(table) {
        tx.batch_execute(&index)?;
    }
    Ok(())
}
