//! `abperf export ID --format json|csv`: every run and metric, raw. JSON is the report schema
//! (docs/report-json.md) without an analysis; CSV has one row per run and one column per metric.

use super::DbArgs;
use super::output;
use crate::report::{Format, View};
use crate::store::Store;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Experiment id, or `latest`
    pub id: String,
    /// json (the report schema, docs/report-json.md, with every run) or csv (one row per run)
    #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
    pub format: ExportFormat,
    /// Write to FILE instead of stdout
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(args: ExportArgs) -> anyhow::Result<i32> {
    let store = Store::open_to_read(&args.db.location()?)?;
    let id = super::lookup::experiment_id(&store, &args.id)?;
    let r = output::load(&store, id, View::Export)?;
    let format = match args.format {
        ExportFormat::Json => Format::Json,
        ExportFormat::Csv => Format::Csv,
    };
    output::write(&format.render(&r)?, args.output.as_ref())?;
    Ok(0)
}
