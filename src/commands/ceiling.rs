//! `abperf model ceiling` (alias `abperf advise ceiling`): which `tlb_single_page_flush_ceiling`
//! suits a workload, from a trace capture of it and a micro experiment of the machine.

use crate::model::Kind;
use crate::model::ceiling::CeilingAdvice;
use crate::model::trace::{CaptureInfo, Tables};
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
    /// Check the advice by the knob: run WORKLOAD (`abperf run`, ABBA) with
    /// tlb_single_page_flush_ceiling at the current value, the advised one and one more, and
    /// print predicted against measured changes (needs the knob writable here, or --kernel)
    #[arg(long, requires = "workload")]
    pub validate: bool,
    /// Check the advice against a `run` experiment whose variants set the ceiling (-k)
    #[arg(long, value_name = "ID", conflicts_with = "validate")]
    pub validate_with: Option<String>,
    /// Timed runs per ceiling for --validate
    #[arg(short = 'r', long, default_value_t = 10, value_name = "N")]
    pub runs: u32,
    /// --validate in virtual machines of this kernel (image, Debian package or git:REV built
    /// from source; see `abperf run --kernel`), where the debugfs knob is writable when the host
    /// locks it
    #[arg(long, value_name = "PATH|PACKAGE|git:REV", requires = "validate")]
    pub kernel: Option<String>,
    /// Boots per ceiling with --kernel
    #[arg(long, value_name = "N", requires = "kernel")]
    pub boots: Option<u32>,
    /// Guest CPUs with --kernel
    #[arg(long, value_name = "N", requires = "kernel")]
    pub vm_cpus: Option<u32>,
    /// With --kernel git:REV: the tree, patches and base configuration it is built with
    #[command(flatten)]
    pub source: crate::commands::kernel_git::SourceArgs,
    /// The workload for --validate (the command the capture recorded)
    #[arg(last = true, value_name = "WORKLOAD")]
    pub workload: Vec<String>,
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
    a.source.check_used(a.kernel.as_slice())?;
    let store = Store::open_to_read(&a.db.location()?)?;
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
    let micro_in = Micro {
        id: mid,
        data: &micro,
        findings: &findings,
    };
    let advice = ceiling::advise(
        &info,
        &tables,
        &micro_in,
        &Options {
            working_set: a.working_set,
            measured_ceiling: a.measured_ceiling,
            resamples: a.resamples,
            seed: a.seed,
            changes_to: Vec::new(),
        },
    )
    .map_err(crate::error::usage)?;
    let advice = validate(&a, &store, advice, (&info, &tables), &micro_in)?;
    let mut r = super::output::load(&store, tid, View::Ceiling)?;
    r.ceiling = Some(advice);
    super::output::write(&a.format.render(&r)?, a.output.as_ref())?;
    Ok(0)
}

/// `--validate` / `--validate-with`: run (or take) the A/B of the knob, predict the change to
/// every ceiling in it (the same bootstrap, seeded alike) and check the advice against it.
fn validate(
    a: &CeilingArgs,
    store: &Store,
    advice: CeilingAdvice,
    (info, tables): (&CaptureInfo, &Tables),
    micro: &Micro,
) -> Result<CeilingAdvice> {
    use super::ceiling_validate as v;
    let current = advice.costs.measured_ceiling;
    let id = if let Some(w) = &a.validate_with {
        store.resolve_id(w)?
    } else if a.validate {
        if a.kernel.is_none()
            && let Err(e) = v::knob_here()
        {
            return Err(crate::error::usage(format!(
                "--validate: the ceiling knob cannot be read here ({e}); give --kernel PACKAGE to run the A/B in virtual machines, or run the whole chain inside one (abperf vm run --package linux-image-amd64 'abperf micro tlb-flush tlb-refill --quick && abperf trace record -- WORKLOAD && abperf model ceiling --trace latest --micro 1 --validate -- WORKLOAD')"
            )));
        }
        let mut kernel = Vec::new();
        if let Some(k) = &a.kernel {
            kernel.extend(["--kernel".to_string(), k.clone()]);
            for (flag, val) in [("--boots", a.boots), ("--vm-cpus", a.vm_cpus)] {
                if let Some(n) = val {
                    kernel.extend([flag.to_string(), n.to_string()]);
                }
            }
            kernel.extend(a.source.forwarded());
        }
        let db = a.db.location()?;
        v::run_ab(&v::RunPlan {
            db: &db,
            values: &v::ceilings(current, advice.best),
            runs: a.runs,
            kernel: &kernel,
            workload: &a.workload,
        })?
    } else {
        return Ok(advice);
    };
    let ds = store.load(id)?;
    let to: Vec<u64> = ds
        .variants
        .iter()
        .flat_map(|v| &v.knobs)
        .filter(|k| k.path == crate::trace::ceiling::KNOB)
        .filter_map(|k| k.value.trim().parse().ok())
        .collect();
    let opts = Options {
        working_set: a.working_set,
        measured_ceiling: a.measured_ceiling,
        resamples: a.resamples,
        seed: a.seed,
        changes_to: to,
    };
    let mut advice = ceiling::advise(info, tables, micro, &opts).map_err(crate::error::usage)?;
    let check = v::check(store, id, &advice, current, info.tsc_hz)?;
    advice
        .validation
        .retain(|l| !l.starts_with("Not validated: "));
    advice.validation.push(format!(
        "By the knob: experiment {id} ran the workload with the ceiling at {}; below, predicted against measured ({}).",
        check
            .rows
            .iter()
            .map(|r| r.ceiling.to_string())
            .chain(std::iter::once(current.to_string()))
            .collect::<Vec<_>>()
            .join(", "),
        if check.agreed { "they agreed" } else { "they did not all agree" }
    ));
    advice.knob_check = Some(check);
    Ok(advice)
}
