//! The arguments of `abperf micro` and what its two paths share: the single suite
//! (`commands::micro`) and the suite per knob variant (`commands::micro_variants`).

use crate::commands::DbArgs;
use crate::micro;
use crate::report::Format;

/// The names `BENCH` takes, shown by `-h`: every benchmark, `tlb` and `all`.
fn bench_names() -> clap::builder::PossibleValuesParser {
    let all = micro::BENCHES.iter().copied().chain(["tlb", "all"]);
    clap::builder::PossibleValuesParser::new(all)
}

/// Microbenchmarks: timer, syscall, xstate, signal, page-fault, tlb-flush, tlb-shootdown,
/// tlb-miss, tlb-refill, ctxsw. Figures are cycles of the timestamp counter (TSC on x86,
/// cntvct_el0 on aarch64) with the timer's own overhead subtracted, and nanoseconds.
#[derive(Debug, clap::Args)]
pub struct MicroArgs {
    /// Benchmarks to run (default: all). `tlb` selects every tlb-* benchmark.
    #[arg(value_name = "BENCH", value_parser = bench_names())]
    pub benches: Vec<String>,
    /// Fewer samples and smaller sweeps (whole suite well under a minute)
    #[arg(long)]
    pub quick: bool,
    /// Samples per configuration (default depends on the benchmark and on --quick)
    #[arg(long, value_name = "N")]
    pub samples: Option<usize>,
    /// CPU to pin the measuring thread to (default: the first CPU this process may use)
    #[arg(long, value_name = "C")]
    pub cpu: Option<usize>,
    /// CPU for the other side of shootdowns and cross-CPU ping-pong (default: the next one)
    #[arg(long, value_name = "C")]
    pub remote_cpu: Option<usize>,
    /// tlb-shootdown: the numbers of remote CPUs to shoot down, e.g. 1,2,4,7 (default: 1, 2,
    /// 4, ... and all the other CPUs this process may use)
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub remote_cpus: Option<Vec<usize>>,
    /// Output format on stdout (json: the report schema, docs/report-json.md, with the suite in
    /// `micro`)
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Experiment name in the store (default: "micro" and the benchmarks)
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Do not run the measuring and helper threads under SCHED_FIFO (default: they do, when
    /// permitted, so that other load cannot preempt a sample or deschedule a helper)
    #[arg(long)]
    pub no_rt: bool,
    /// Wall time over which the rounds of syscall, xstate and tlb-flush are spread, seconds
    /// (default 3 with --quick, 10 without; 0 = rounds back to back). On a shared host the
    /// cost of kernel paths moves with the SMT sibling's load in ~100 ms phases: samples taken
    /// in one burst see one phase, and two runs disagree.
    #[arg(long, value_name = "SECONDS")]
    pub span: Option<f64>,
    /// Measure in N invocations: N processes (abperf runs itself again), each with fresh
    /// buffers, alignment and physical pages, each taking 1/N of every configuration's samples,
    /// rounds and span; every round is stored with its invocation. `abperf compare` then takes
    /// the invocations' means as the replicates (the variance between processes, which rounds
    /// within one process do not show). With -k, invocation i of every variant runs before
    /// invocation i+1 of any, in a seeded ABBA order. 1: one process (the rounds' comparison
    /// across two experiments then gives no verdict). Default: 4 for a suite alone (so that two
    /// separate experiments compare), 1 with -k (its variants share one process and compare
    /// round by round); not taken with --kernel (the boots are the replicates).
    #[arg(long, value_name = "N")]
    pub invocations: Option<usize>,
    /// Internal: this process is invocation I of --invocations N of a parent `abperf micro`;
    /// it prints its suite report as JSON on stdout and stores nothing.
    #[arg(long, value_name = "I", hide = true)]
    pub invocation_child: Option<usize>,
    /// Kernel knob (sysfs/procfs/debugfs file) as variants: every benchmark runs once per value,
    /// the variants interleaved round by round (ABBA order, seeded), the knob written, read back
    /// and verified before each variant's turn and always restored (also on errors and
    /// signals). Each variant is stored as its own micro experiment; `abperf compare ID` of one
    /// compares the two. Repeatable (every combination); the same value twice is an A/A run.
    #[arg(short = 'k', long = "knob", value_name = "PATH=V1,V2,...")]
    pub knobs: Vec<String>,
    /// Seed of the interleaving order of -k variants, their invocations and --kernel boots
    /// (default: from the clock; stored)
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Wait for a knob another experiment holds (default: fail at once, naming the holder)
    #[arg(long)]
    pub wait: bool,
    /// Boot this kernel in a VM and run the suite there (a bzImage/vmlinuz, a Debian kernel
    /// package in the kernel cache, or git:REV built from source). Repeat it: each kernel is a variant. The boots are the
    /// replicates: `--boots` per variant, in seeded ABBA order, each boot one invocation; under
    /// TCG (no KVM) the variants are labelled TCG: their timings say nothing about hardware
    /// costs
    #[arg(long, value_name = "KERNEL")]
    pub kernel: Vec<String>,
    #[command(flatten)]
    pub source: super::kernel_git::SourceArgs,
    /// Kernel parameters for the guest's command line (with --kernel). Repeat it: each command
    /// line is a variant (with every --kernel)
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub append: Vec<String>,
    /// Boots per kernel variant (with --kernel) [default: 3]
    #[arg(long, value_name = "N")]
    pub boots: Option<u32>,
    /// How the guests run (with --kernel): kvm, tcg, or auto (KVM when usable) [default: auto]
    #[arg(long, value_enum, value_name = "ACCEL")]
    pub accel: Option<crate::commands::vm::AccelArg>,
    /// Do not store the results
    #[arg(long)]
    pub no_store: bool,
    /// Label the stored experiment(s) (repeatable): what `abperf history` orders and names its
    /// points by, e.g. --label commit=3f2a9c1 (series of `--metric cycles`, `ns`, ...)
    #[arg(long = "label", value_name = "KEY=VALUE", conflicts_with = "no_store")]
    pub labels: Vec<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `--label`, checked.
pub(super) fn experiment_labels(args: &MicroArgs) -> anyhow::Result<crate::model::label::Labels> {
    crate::model::label::parse_all(&args.labels).map_err(crate::error::usage)
}

/// Store `record` with the experiment labels of `args`; returns its id.
pub(super) fn save(
    record: &micro::record::Record,
    store: &mut crate::store::Store,
    args: &MicroArgs,
) -> anyhow::Result<i64> {
    let labels = experiment_labels(args)?;
    let id = record.save(store)?;
    store.set_labels(id, &labels)?;
    Ok(id)
}

/// The experiment name: `--name`, else "micro" for the whole suite, else "micro" and the
/// benchmarks.
pub(super) fn suite_name(args: &MicroArgs, benches: &[&'static str]) -> String {
    args.name.clone().unwrap_or_else(|| {
        if benches.len() == micro::BENCHES.len() {
            "micro".to_string()
        } else {
            format!("micro {}", benches.join(" "))
        }
    })
}

/// A progress bar over `len` benchmarks, drawn with `template` (indicatif's).
pub(super) fn progress_bar(len: usize, template: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// "abperf: error: micro BENCH (CONFIG) failed[ for LABEL]: REASON" on stderr.
pub(super) fn print_failure(f: &micro::Skip, label: Option<&str>) {
    crate::error::stderr_line(&format!(
        "abperf: error: micro {}{} failed{}: {}",
        f.bench,
        f.config
            .as_ref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default(),
        label.map(|l| format!(" for {l}")).unwrap_or_default(),
        f.reason
    ));
}
