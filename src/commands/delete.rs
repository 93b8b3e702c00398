//! `abperf delete ID`: remove an experiment and everything measured in it.

use crate::commands::DbArgs;
use crate::store::Store;

#[derive(Debug, clap::Args)]
pub struct DeleteArgs {
    /// Experiment id, or `latest`
    pub id: String,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(args: DeleteArgs) -> anyhow::Result<i32> {
    let mut store = Store::open_resolved(args.db.db.as_deref())?;
    let id = super::lookup::experiment_id(&store, &args.id)?;
    let name = store.experiment(id)?.name;
    store.delete(id)?;
    println!("deleted experiment {id} ({name})");
    Ok(0)
}
