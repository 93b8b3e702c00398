//! `abperf list`: every stored experiment, one line each.

use crate::commands::DbArgs;
use crate::store::Store;

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(args: ListArgs) -> anyhow::Result<i32> {
    let store = Store::open_to_read(&args.db.location()?)?;
    let mut list = store.list()?;
    if !list.is_empty() {
        let owners = store.owners()?;
        for e in &mut list {
            if e.status == crate::model::Status::Running
                && let Some(o) = owners.get(&e.id)
                && super::output::dead_owner_note(e.id, o).is_some()
            {
                e.status = crate::model::Status::Interrupted;
            }
        }
    }
    let listing = crate::report::listing::Experiments {
        store: store.path(),
        experiments: &list,
    };
    print!("{}", listing.text());
    Ok(0)
}
