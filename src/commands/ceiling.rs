//! `abperf model ceiling` (alias `abperf advise ceiling`): which `tlb_single_page_flush_ceiling`
//! suits a workload, from a trace capture of it and a micro experiment of the machine.

use crate::model::Kind;
use crate::report::{Format, View};
use crate::store::Store;
use crate::trace::ceiling::{self, Micro, Options};
use anyhow::Result;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    pub cmd: ModelCmd,
}

#[derive(Debug, clap::Subcommand)]
pub enum ModelCmd {
    /// Predict the flush cost per second of every tlb_single_page_flush_ceiling (0..64 and
    /// more) for a traced workload, from a micro experiment's flush and refill costs
    Ceiling(CeilingArgs),
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Inputs: a capture of the workload (`abperf trace record -- WORKLOAD`, \
default events) and a micro experiment of the same machine (`abperf micro tlb-flush tlb-refill`). \
The output states the model, its assumptions and what was validated."
)]
pub struct CeilingArgs {
    /// The trace capture (id or `latest` of kind trace)
    #[arg(long, value_name = "ID")]
    pub trace: String,
    /// The micro experiment with tlb-flush and tlb-refill (or tlb-miss) results
    #[arg(long, value_name = "ID")]
    pub micro: String,
    /// TLB working set of the workload in pages, refilled after each full flush (default: the
    /// largest working set tlb-refill measured)
    #[arg(long, value_name = "PAGES")]
    pub working_set: Option<u64>,
    /// The ceiling of the kernel the micro experiment ran on (default: the knee of its curve)
    #[arg(long, value_name = "PAGES")]
    pub measured_ceiling: Option<u64>,
    /// Bootstrap replicates for the bands
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub resamples: usize,
    /// Bootstrap seed
    #[arg(long, default_value_t = 0x0ce1, value_name = "N")]
    pub seed: u64,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write to FILE instead of standard output
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub db: crate::commands::DbArgs,
}

pub fn run(args: ModelArgs) -> Result<i32> {
    match args.cmd {
        ModelCmd::Ceiling(a) => ceiling_cmd(a),
    }
}

fn ceiling_cmd(a: CeilingArgs) -> Result<i32> {
    if a.resamples != 0 && a.resamples < 100 {
        return Err(crate::error::usage(format!(
            "--resamples {}: expected 0 (no bands) or at least 100",
            a.resamples
        )));
    }
    if a.working_set == Some(0) {
        return Err(crate::error::usage(
            "--working-set 0: expected a number of pages, at least 1",
        ));
    }
    let store = Store::open_resolved(a.db.db.as_deref())?;
    let tid = store.resolve_id(&a.trace)?;
    let mid = store.resolve_id(&a.micro)?;
    let (info, tables) = store
        .load_capture(tid)
        .map_err(|e| crate::error::usage(format!("--trace {}: {e:#}", a.trace)))?;
    let micro = store.load(mid)?;
    if micro.experiments[0].kind != Kind::Micro {
        return Err(crate::error::usage(format!(
            "--micro {}: experiment {mid} is of kind {}, not micro (run `abperf micro tlb-flush tlb-refill`)",
            a.micro,
            micro.experiments[0].kind.as_str()
        )));
    }
    let findings = store.micro_findings(mid)?;
    let advice = ceiling::advise(
        &info,
        &tables,
        &Micro {
            id: mid,
            data: &micro,
            findings: &findings,
        },
        &Options {
            working_set: a.working_set,
            measured_ceiling: a.measured_ceiling,
            resamples: a.resamples,
            seed: a.seed,
        },
    )
    .map_err(crate::error::usage)?;
    let mut r = super::output::load(&store, tid, View::Ceiling)?;
    r.ceiling = Some(advice);
    super::output::write(&a.format.render(&r)?, a.output.as_ref())?;
    Ok(0)
}
