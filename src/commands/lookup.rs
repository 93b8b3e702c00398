//! Experiment references (`3`, `latest`) turned into ids, with one exit code for every lookup
//! mistake: a reference that names nothing is a usage error (exit 2), like a bad flag; only a
//! store that cannot be read is exit 1.

use crate::error::usage;
use crate::store::Store;

/// The id `reference` names in `store`.
pub fn experiment_id(store: &Store, reference: &str) -> anyhow::Result<i64> {
    store.resolve_id(reference).map_err(|e| {
        let sql = e
            .chain()
            .any(|c| c.downcast_ref::<rusqlite::Error>().is_some());
        if sql || crate::error::exit_code(&e) == 2 {
            e
        } else {
            usage(format!(
                "{e:#} (stored experiments: {})",
                super::hints::command(store.path(), "list")
            ))
        }
    })
}
