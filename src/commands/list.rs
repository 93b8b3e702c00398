//! `abperf list`: every stored experiment, one line each.

use crate::commands::DbArgs;
use crate::store::Store;

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub db: DbArgs,
}

/// Longest name shown (`abperf show ID` has the whole of it).
const NAME_WIDTH: usize = 60;

pub fn run(args: ListArgs) -> anyhow::Result<i32> {
    let store = Store::open_resolved_for_reading(args.db.db.as_deref())?;
    let list = store.list()?;
    if list.is_empty() {
        println!("no experiments in {}", store.path().display());
        return Ok(0);
    }
    println!(
        "{:>5}  {:<20}  {:<6}  {:<11}  {:>8}  {:>9}  name",
        "id", "created", "kind", "status", "variants", "runs"
    );
    let owners = store.owners()?;
    for mut e in list {
        if e.status == crate::model::Status::Running
            && let Some(o) = owners.get(&e.id)
            && super::output::dead_owner_note(e.id, o).is_some()
        {
            e.status = crate::model::Status::Interrupted;
        }
        println!(
            "{:>5}  {:<20}  {:<6}  {:<11}  {:>8}  {:>9}  {}",
            e.id,
            e.created,
            e.kind,
            e.status.as_str(),
            e.variants,
            format!("{}/{}", e.runs_done, e.runs_planned.max(e.runs_done)),
            // One line each, control characters escaped (a name can neither rewrite the screen
            // nor hide what follows it); a long name ("A vs B vs C ...") keeps its start and end.
            crate::report::labels::elide_middle(
                &crate::report::escape::control(&e.name),
                NAME_WIDTH
            )
        );
    }
    Ok(0)
}
