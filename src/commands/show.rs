//! `abperf show ID`: design, environment and per-variant summary; `--runs` lists every run.

use super::DbArgs;
use super::output;
use crate::report::{Format, View};
use crate::store::Store;

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Experiment id, or `latest`
    pub id: String,
    /// Also list every run in schedule order
    #[arg(long)]
    pub runs: bool,
    /// Output format (text: the listing; the others as `abperf report`, without verdicts)
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(args: ShowArgs) -> anyhow::Result<i32> {
    let store = Store::open_resolved(args.db.db.as_deref())?;
    let id = super::lookup::experiment_id(&store, &args.id)?;
    let r = output::load(&store, id, View::Show { runs: args.runs })?;
    output::write(&args.format.render(&r)?, None)?;
    Ok(0)
}
