//! The per-run tables a PostgreSQL store keeps without foreign keys (schema revision 2), and
//! what keeps their integrity instead. The server checked every row of them against its parent
//! (a query per row: an import of 100,000 runs spent more on those checks than SQLite on the
//! whole import, benches/pg_import_keys.sh); abperf keeps the same integrity itself:
//! - every writer inserts the parents first, in the same transaction (a new experiment with its
//!   content: `write`), or holds the parent experiment's row while it adds rows to it
//!   ([`lock_parent`]); a run committed on its own is added by the experiment's owner, which
//!   `delete` waits for;
//! - deleting an experiment deletes these tables' rows explicitly, in the transaction that
//!   deletes the experiment ([`delete_experiment`]; the other tables still cascade);
//! - reading checks what it reads, as it does on SQLite (store rows are untrusted).

use super::columns::Table;
use super::ddl::quoted;
use crate::copy_tables::TABLES;
use anyhow::Context;
use postgres::GenericClient;

/// The tables whose rows are one per run (or per run and metric) and whose foreign keys the
/// PostgreSQL schema leaves out: the schedule, the runs, their metrics, labels and provenance.
pub const UNCHECKED: &[&str] = &["slot", "run", "metric", "run_label", "import_run"];

/// `table` as the PostgreSQL schema makes it: an [`UNCHECKED`] table without its foreign keys.
pub fn as_made(table: &Table) -> Table {
    let mut made = table.clone();
    if UNCHECKED.contains(&table.name.as_str()) {
        made.foreign_keys.clear();
    }
    made
}

/// Drop the foreign keys of the [`UNCHECKED`] tables that a schema made before revision 2
/// holds (found by the server's catalogue, whatever their names).
pub fn drop_foreign_keys(tx: &mut impl GenericClient) -> anyhow::Result<()> {
    let tables: Vec<String> = UNCHECKED.iter().map(|t| t.to_string()).collect();
    let found = tx.query(
        "SELECT c.conrelid::regclass::text, c.conname::text FROM pg_constraint c
         WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace
           AND c.conrelid::regclass::text = ANY($1)",
        &[&tables],
    )?;
    for row in found {
        let (table, name): (String, String) = (row.try_get(0)?, row.try_get(1)?);
        tx.batch_execute(&format!(
            "ALTER TABLE {} DROP CONSTRAINT {}",
            quoted(&table),
            quoted(&name)
        ))
        .with_context(|| format!("dropping the foreign key {name} of table {table}"))?;
    }
    Ok(())
}

/// Hold experiment `id`'s row (as a foreign key check would) until the caller's transaction
/// ends, so that a delete waits for the rows being added to it; an error when it is gone.
pub fn lock_parent(tx: &mut impl GenericClient, id: i64) -> anyhow::Result<()> {
    let held = tx.query_opt(
        "SELECT 1 FROM experiment WHERE id = $1 FOR KEY SHARE",
        &[&id],
    )?;
    anyhow::ensure!(held.is_some(), "experiment {id} is no longer in the store");
    Ok(())
}

/// In the caller's transaction, delete experiment `id`: the rows of the [`UNCHECKED`] tables
/// first (a run's rows before the run), then the experiment, whose other tables cascade.
/// Returns the number of experiments deleted (0 or 1).
pub fn delete_experiment(tx: &mut impl GenericClient, id: i64) -> anyhow::Result<u64> {
    for spec in TABLES.iter().rev().filter(|s| UNCHECKED.contains(&s.name)) {
        let sql = format!(
            "DELETE FROM {} WHERE {}",
            quoted(spec.name),
            spec.rows.replace("?1", "$1")
        );
        tx.execute(&sql, &[&id])
            .with_context(|| format!("deleting the rows of table {}", spec.name))?;
    }
    Ok(tx.execute("DELETE FROM experiment WHERE id = $1", &[&id])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_per_run_tables_are_made_without_foreign_keys_and_the_others_with() {
        let tables = crate::postgres::columns::tables().unwrap();
        for t in &tables {
            let made = super::super::ddl::create_table(&as_made(t));
            let unchecked = UNCHECKED.contains(&t.name.as_str());
            assert_eq!(
                made.contains("FOREIGN KEY"),
                !unchecked && !t.foreign_keys.is_empty(),
                "{made}"
            );
        }
        assert!(
            tables
                .iter()
                .any(|t| t.name == "variant" && !t.foreign_keys.is_empty())
        );
    }

    #[test]
    fn every_unchecked_table_is_an_experiments_table_and_runs_go_after_their_rows() {
        let names: Vec<&str> = TABLES.iter().rev().map(|s| s.name).collect();
        for t in UNCHECKED {
            assert!(names.contains(t), "{t}");
        }
        let at = |t: &str| names.iter().position(|n| *n == t).unwrap();
        for per_run in ["metric", "run_label", "import_run"] {
            assert!(at(per_run) < at("run"), "{per_run}");
        }
    }
}
