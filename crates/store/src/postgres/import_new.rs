//! A new experiment imported into a PostgreSQL store (`abperf import` without `--experiment`):
//! built in an in-memory SQLite store exactly as on SQLite, then written to the server whole.

use super::commit::new_id;
use super::{Pg, Schema};
use crate::copy_tables::Key;
use crate::{ImportOutcome, ImportTarget, Store};
use abperf_model::{NewExperiment, Run, Variant};
use anyhow::Context;
use std::path::Path;

/// Write an import into the PostgreSQL store `dsn` as a new experiment: built exactly as
/// [`Store::import_runs`] builds it, in an in-memory SQLite store, then written to the server
/// whole in one transaction by the writer `abperf store copy` uses (`Pg::write_experiment`),
/// under the ids the server gives (returned). On any error nothing is stored there. Runs added to
/// an experiment stored there go through a working copy ([`Store::import_runs`] on a store
/// opened with [`Store::open_to_take_over`]).
pub(crate) fn import_to_server(
    dsn: &str,
    exp: &NewExperiment,
    labels: &abperf_model::label::Labels,
    variants: &[Variant],
    runs: &[Run],
) -> anyhow::Result<ImportOutcome> {
    let mut local = Store::open_file(Path::new(":memory:"))?;
    let built = local.import_runs(
        &ImportTarget::New(exp.clone(), labels.clone()),
        variants,
        runs,
    )?;
    let content = local.read_content(built.experiment_id)?;
    let mut pg = Pg::open(dsn, Schema::Make)?;
    let shown = pg.shown().to_string();
    let ids = pg
        .write_experiment(&content, &|| false, None)
        .with_context(|| format!("storing the import in the PostgreSQL store {shown}"))?
        .context("the import was stopped")?;
    let id_of = |key: Key, old: i64| new_id(&ids, key, old);
    Ok(ImportOutcome {
        experiment_id: id_of(Key::Experiment, built.experiment_id)?,
        new_variants: built.new_variants,
        run_ids: built
            .run_ids
            .iter()
            .map(|&r| id_of(Key::Run, r))
            .collect::<anyhow::Result<_>>()?,
    })
}
