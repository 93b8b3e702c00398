//! `abperf show ID`: design, environment and per-variant summary; `--each-run` lists every run.

use super::DbArgs;
use super::output;
use crate::report::{Format, View};
use crate::store::Store;

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Experiment id, or `latest`
    pub id: String,
    /// Also list every run in schedule order (`--runs` until the next release: the name counts
    /// runs in `abperf run`)
    #[arg(long = "each-run", alias = "runs")]
    pub runs: bool,
    /// Output format (text: the listing; the others as `abperf report`, without verdicts)
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(args: ShowArgs) -> anyhow::Result<i32> {
    let store = Store::open_to_read(&args.db.location()?)?;
    let id = super::lookup::experiment_id(&store, &args.id)?;
    let mut r = output::load(&store, id, View::Show { runs: args.runs })?;
    output::escape_for_people(&mut r, args.format);
    // The listing has no place for notes (a dead owner, missing trace tables): say them aside.
    for n in &r.notes {
        crate::error::stderr_line(&format!("abperf: {n}"));
    }
    output::write(&args.format.render(&r)?, None)?;
    Ok(0)
}
