//! `abperf micro`: microbenchmarks of TLB flushes, faults, syscalls, context switches, xstate and
//! signals; results printed and stored as an experiment.

use crate::commands::DbArgs;
use crate::error::usage;
use crate::micro::{self, Options};
use crate::report::{Format, Report, View};

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
    /// Kernel knob (sysfs/procfs/debugfs file) as variants: every benchmark runs once per value,
    /// the variants interleaved round by round (ABBA order, seeded), the knob written, read back
    /// and verified before each variant's turn and always restored (also on errors and
    /// signals). Each variant is stored as its own micro experiment; `abperf compare ID` of one
    /// compares the two. Repeatable (every combination); the same value twice is an A/A run.
    #[arg(short = 'k', long = "knob", value_name = "PATH=V1,V2,...")]
    pub knobs: Vec<String>,
    /// Seed of the interleaving order of -k variants (default: from the clock; stored)
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Wait for a knob another experiment holds (default: fail at once, naming the holder)
    #[arg(long)]
    pub wait: bool,
    /// Kernels as micro variants: not yet (use `abperf run --kernel`, or one `abperf micro` per
    /// kernel and `abperf compare A B`)
    #[arg(long, value_name = "KERNEL")]
    pub kernel: Vec<String>,
    /// Kernel command-line variants: not yet (see --kernel)
    #[arg(long, value_name = "ARGS")]
    pub append: Vec<String>,
    /// Do not store the results
    #[arg(long)]
    pub no_store: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(args: MicroArgs) -> anyhow::Result<i32> {
    let benches = micro::select(&args.benches).map_err(usage)?;
    if !args.kernel.is_empty() || !args.append.is_empty() {
        return Err(usage(
            "--kernel/--append: kernels as micro variants are not supported yet (the suite would \
             have to run inside the guest); run `abperf micro` once per kernel and compare the two \
             experiments with `abperf compare A B`, or use -k for kernel knobs",
        ));
    }
    let knob_specs = args
        .knobs
        .iter()
        .map(|k| crate::design::variants::parse_knob(k))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if let Some(n) = args.samples
        && !(3..=1_000_000).contains(&n)
    {
        return Err(usage(format!(
            "--samples {n}: expected a number from 3 to 1000000"
        )));
    }
    let span = match args.span {
        None => None,
        Some(s) if s.is_finite() && (0.0..=3600.0).contains(&s) => {
            Some(std::time::Duration::from_secs_f64(s))
        }
        Some(s) => {
            return Err(usage(format!(
                "--span {s}: expected seconds from 0 to 3600"
            )));
        }
    };
    let allowed = micro::harness::allowed_cpus();
    let shown = allowed
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let cpu = args.cpu.unwrap_or(allowed[0]);
    if !allowed.contains(&cpu) {
        return Err(usage(format!(
            "--cpu {cpu}: not a CPU this process may run on (allowed: {shown})"
        )));
    }
    let remote_cpu = match args.remote_cpu {
        Some(r) if r == cpu => {
            return Err(usage(format!(
                "--remote-cpu {r}: must differ from --cpu {cpu}"
            )));
        }
        Some(r) if !allowed.contains(&r) => {
            return Err(usage(format!(
                "--remote-cpu {r}: not a CPU this process may run on (allowed: {shown})"
            )));
        }
        Some(r) => Some(r),
        None => allowed.iter().copied().find(|&c| c != cpu),
    };
    // Open the store first: a bad --db fails before minutes of measuring.
    let mut store = if args.no_store {
        None
    } else {
        Some(crate::store::Store::open_resolved(args.db.db.as_deref())?)
    };
    let opts = Options {
        quick: args.quick,
        samples: args.samples,
        cpu,
        remote_cpu,
        realtime: !args.no_rt,
        span,
    };
    if !knob_specs.is_empty() {
        return super::micro_variants::run(&args, &benches, &opts, &knob_specs, store.as_mut());
    }
    // Other processes' CPU use, load and pressure are sampled over the benchmarks (a first
    // scan on a thread now, the second when they are done), not before them.
    let sampling = crate::doctor::Sampling::start();
    let bar = indicatif::ProgressBar::new(benches.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("micro [{pos}/{len}] {msg} {elapsed}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let report = micro::run_suite(&benches, &opts, |b| {
        bar.set_message(b.to_string());
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    let argv: Vec<String> = std::env::args().collect();
    let name = args.name.clone().unwrap_or_else(|| {
        if benches.len() == micro::BENCHES.len() {
            "micro".to_string()
        } else {
            format!("micro {}", benches.join(" "))
        }
    });
    let environment = crate::doctor::merged(
        crate::doctor::environment_unsampled(),
        &sampling.finish("during the benchmarks"),
    );
    let record = micro::record::record(&report, &name, &argv, environment);
    let mut r = match store.as_mut() {
        Some(s) => {
            let id = record.save(s)?;
            eprintln!(
                "abperf: stored as experiment {id} in {}",
                s.path().display()
            );
            super::output::load(s, id, View::Micro)?
        }
        None => {
            let mut r = Report::new(record.dataset(), View::Micro);
            r.micro = Some(crate::report::micro::build(&r.data, record.findings));
            r.include_runs = false;
            r
        }
    };
    r.view = View::Micro;
    super::output::write(&args.format.render(&r)?, None)?;
    // A benchmark that failed is an error (a skip for a reason of the machine is not).
    for f in &report.failures {
        print_failure(f, None);
    }
    if !report.failures.is_empty() {
        eprintln!(
            "abperf: {} benchmark(s) failed; what did run is shown above{}",
            report.failures.len(),
            if args.no_store { "" } else { " and stored" }
        );
        return Ok(1);
    }
    Ok(0)
}

/// "abperf: error: micro BENCH (CONFIG) failed[ for LABEL]: REASON" on stderr.
pub(super) fn print_failure(f: &micro::Skip, label: Option<&str>) {
    eprintln!(
        "abperf: error: micro {}{} failed{}: {}",
        f.bench,
        f.config
            .as_ref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default(),
        label.map(|l| format!(" for {l}")).unwrap_or_default(),
        f.reason
    );
}
