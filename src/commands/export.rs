//! `abperf export ID --format json|csv`: every run and metric, raw. JSON is the report schema
//! (docs/report-json.md) without an analysis; CSV has one row per run and one column per metric
//! (to a terminal, with control characters written as escapes).

use super::DbArgs;
use super::output;
use crate::report::{Format, View};
use crate::store::Store;
use std::io::IsTerminal;

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
    let text = format.render(&r)?;
    // CSV holds stored strings as they are (an import reads them back byte for byte); on a
    // terminal, a person reads it: control characters are written as escapes (as in every
    // message of abperf's), so a stored escape sequence cannot drive the terminal. JSON escapes
    // them itself.
    let to_terminal = args.output.is_none() && std::io::stdout().is_terminal();
    let text = match args.format {
        ExportFormat::Csv if to_terminal => crate::model::escape::message(&text).into_owned(),
        _ => text,
    };
    output::write(&text, args.output.as_ref())?;
    Ok(0)
}
