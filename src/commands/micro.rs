//! `abperf micro`: microbenchmarks of TLB flushes, faults, syscalls, context switches, xstate and
//! signals; results printed and stored as an experiment.

pub use super::micro_args::MicroArgs;
use super::micro_args::{experiment_labels, print_failure, progress_bar, suite_name};
use crate::error::usage;
use crate::micro::record::Record;
use crate::micro::{self, Options};
use crate::report::{Report, View};
use crate::store::Store;

pub fn run(args: MicroArgs) -> anyhow::Result<i32> {
    let benches = micro::select(&args.benches).map_err(usage)?;
    experiment_labels(&args)?;
    if args.kernel.is_empty()
        && let Some(flag) = [
            ("--append", !args.append.is_empty()),
            ("--boots", args.boots.is_some()),
            ("--accel", args.accel.is_some()),
        ]
        .iter()
        .find(|f| f.1)
    {
        return Err(usage(format!(
            "{}: only with --kernel (the kernels to boot and run the suite in)",
            flag.0
        )));
    }
    let knob_specs = args
        .knobs
        .iter()
        .map(|k| crate::design::variants::parse_knob(k))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let invocations = super::micro_invocations::checked(&args)?;
    let mut opts = options(&args)?;
    if args.invocation_child.is_some() {
        opts.share = invocations;
        return super::micro_invocations::run_child(&benches, &opts);
    }
    // Open the store first: a bad --db fails before minutes of measuring.
    let mut store = if args.no_store {
        None
    } else {
        Some(Store::open_to_write(&args.db.location()?)?)
    };
    if !args.kernel.is_empty() {
        if !knob_specs.is_empty() || invocations > 1 {
            return Err(usage(
                "--kernel: the boots are the replicates; -k and --invocations are not taken \
                 with it",
            ));
        }
        return super::micro_kernels::run(&args, &benches, &opts, store.as_mut());
    }
    if !knob_specs.is_empty() {
        return super::micro_variants::run(&args, &benches, &opts, &knob_specs, store.as_mut());
    }
    // Other processes' CPU use, load and pressure are sampled over the benchmarks (a first
    // scan on a thread now, the second when they are done), not before them.
    let sampling = crate::doctor::Sampling::start();
    let report = if invocations > 1 {
        let mut r =
            super::micro_invocations::measure(&benches, &opts, invocations, 1, 0, &|_| Ok(()))?;
        r.remove(0)
    } else {
        let bar = progress_bar(benches.len(), "micro [{pos}/{len}] {msg} {elapsed}");
        let r = micro::run_suite(&benches, &opts, |b| {
            bar.set_message(b.to_string());
            bar.inc(1);
        })?;
        bar.finish_and_clear();
        r
    };
    let argv: Vec<String> = std::env::args().collect();
    let environment = crate::doctor::merged(
        crate::doctor::environment_unsampled(),
        &sampling.finish("during the benchmarks"),
    );
    let record = micro::record::record(&report, &suite_name(&args, &benches), &argv, environment);
    let r = stored_or_built(record, store.as_mut(), &args)?;
    super::output::write(&args.format.render(&r)?, None)?;
    // A benchmark that failed is an error (a skip for a reason of the machine is not).
    for f in &report.failures {
        print_failure(f, None);
    }
    if !report.failures.is_empty() {
        crate::error::stderr_line(&format!(
            "abperf: {} benchmark(s) failed; what did run is shown above{}",
            report.failures.len(),
            if args.no_store { "" } else { " and stored" }
        ));
        return Ok(1);
    }
    Ok(0)
}

/// The suite's options from the arguments, each checked: --samples, --span, --cpu, --remote-cpu.
fn options(args: &MicroArgs) -> anyhow::Result<Options> {
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
    let (cpu, remote_cpu) = cpus(args)?;
    Ok(Options {
        quick: args.quick,
        samples: args.samples,
        cpu,
        remote_cpu,
        remote_counts: remote_counts(args)?,
        cpus: micro::harness::allowed_cpus(),
        realtime: !args.no_rt,
        span,
        share: 1,
    })
}

/// --remote-cpus: each count from 1 to the CPUs this process may use besides the measuring one.
fn remote_counts(args: &MicroArgs) -> anyhow::Result<Option<Vec<usize>>> {
    let Some(list) = &args.remote_cpus else {
        return Ok(None);
    };
    let others = micro::harness::allowed_cpus().len().saturating_sub(1);
    let mut v = list.clone();
    v.sort_unstable();
    v.dedup();
    if let Some(bad) = v.iter().find(|m| **m == 0 || **m > others) {
        return Err(usage(format!(
            "--remote-cpus {}: {bad} is not a number of remote CPUs from 1 to {others} (the CPUs this process may use besides the measuring one)",
            list.iter()
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )));
    }
    if v.is_empty() {
        return Err(usage("--remote-cpus: expected at least one number"));
    }
    Ok(Some(v))
}

/// The measuring CPU and the remote one (--cpu, --remote-cpu), among those this process may use.
fn cpus(args: &MicroArgs) -> anyhow::Result<(usize, Option<usize>)> {
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
    Ok((cpu, remote_cpu))
}

/// The report of `record`: stored and read back from the store, or, with --no-store, built
/// from the record itself.
fn stored_or_built(
    record: Record,
    store: Option<&mut Store>,
    args: &MicroArgs,
) -> anyhow::Result<Report> {
    let mut r = match store {
        Some(s) => {
            let id = super::micro_args::save(&record, s, args)?;
            crate::error::stderr_line(&format!(
                "abperf: stored as experiment {id} in {}",
                s.path().display()
            ));
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
    Ok(r)
}
