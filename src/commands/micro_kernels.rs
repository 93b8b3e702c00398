//! `abperf micro --kernel A --kernel B [--append ARGS ...] --boots N`: the suite inside a
//! virtual machine (`crate::vm`) of each kernel variant, `--boots` boots per variant in seeded
//! ABBA order (boot i of every variant before boot i+1 of any). Each boot runs abperf's own
//! binary in the guest as one invocation of the suite (`--invocation-child`, results as JSON
//! through the results port), so the boots are the replicates: every round is stored with its
//! boot as its invocation, each variant as a micro experiment of its own (linked like the
//! variants of `micro -k`), and the comparison of the first two takes the boots as the unit.
//! Under TCG the variants are labelled so: the emulator's timings say nothing about hardware.

use super::micro_args::{MicroArgs, progress_bar};
use super::micro_variants::Plan;
use crate::commands::vm::AccelArg;
use crate::design::KernelChoice;
use crate::error::usage;
use crate::micro::{self, Options, SuiteReport};
use crate::store::Store;
use crate::vm::{Accel, Event, Exit, Vm, VmSpec};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The most boots per variant `--boots` accepts.
const MAX_BOOTS: u32 = 100;

/// One kernel variant: its kernel, command line and label.
struct KernelPlan {
    label: String,
    kernel: KernelChoice,
    append: String,
}

/// Every kernel with every command line (the kernels varying slowest), labelled by release,
/// command line and, under TCG, "TCG".
fn kernel_plans(args: &MicroArgs, tcg: bool) -> anyhow::Result<Vec<KernelPlan>> {
    let appends: Vec<String> = if args.append.is_empty() {
        vec![String::new()]
    } else {
        args.append.clone()
    };
    let mut plans = Vec::new();
    for k in &args.kernel {
        let kernel = super::run::boots::resolve_kernel(k, &[], &args.source)?;
        for a in &appends {
            // A kernel built from source by its git:REV (builds of one tree share a release).
            let mut label = kernel.label.clone().unwrap_or(kernel.release.clone());
            if !a.trim().is_empty() {
                label += &format!(" [{}]", a.trim());
            }
            if tcg {
                label += " (TCG)";
            }
            plans.push(KernelPlan {
                label,
                kernel: kernel.clone(),
                append: a.clone(),
            });
        }
    }
    let mut labels: Vec<&str> = plans.iter().map(|p| p.label.as_str()).collect();
    labels.sort_unstable();
    labels.dedup();
    if labels.len() < 2 || labels.len() < plans.len() {
        return Err(usage(format!(
            "--kernel {}: {} variant(s) with {} distinct label(s); give two kernels of different \
             releases or two --append command lines",
            args.kernel.join(" --kernel "),
            plans.len(),
            labels.len()
        )));
    }
    Ok(plans)
}

/// The provenance of each plan's kernel (each image hashed once): what `run` stores for a
/// kernel variant.
fn provenances(plans: &[KernelPlan]) -> anyhow::Result<Vec<crate::model::KernelProvenance>> {
    let mut seen: Vec<(&str, crate::model::KernelProvenance)> = Vec::new();
    let mut out = Vec::new();
    for p in plans {
        let known = seen.iter().find(|(path, _)| *path == p.kernel.path);
        let prov = match known {
            Some((_, prov)) => prov.clone(),
            None => {
                let prov = crate::design::provenance::of_kernel(&p.kernel)
                    .map_err(|e| anyhow::anyhow!("--kernel {}: {e:#}", p.label))?;
                seen.push((&p.kernel.path, prov.clone()));
                prov
            }
        };
        out.push(prov);
    }
    Ok(out)
}

/// `--boots`, checked (default 3: with 2 a side the analysis makes no test).
fn boots(args: &MicroArgs) -> anyhow::Result<u32> {
    let n = args.boots.unwrap_or(3);
    if !(1..=MAX_BOOTS).contains(&n) {
        return Err(usage(format!(
            "--boots {n}: expected a number of boots per variant from 1 to {MAX_BOOTS}"
        )));
    }
    Ok(n)
}

/// Run the suite in `--boots` boots of every kernel variant; store and print.
pub fn run(
    args: &MicroArgs,
    benches: &[&'static str],
    opts: &Options,
    store: Option<&mut Store>,
) -> anyhow::Result<i32> {
    let n = boots(args)?;
    let first = args.kernel.first().map(String::as_str).unwrap_or_default();
    args.source.check_used(&args.kernel)?;
    let kernel0 = super::run::boots::resolve_kernel(first, &[], &args.source)?;
    let (accel, accel_reason) = super::run::boots::choose_accel(
        args.accel.unwrap_or(AccelArg::Auto),
        Path::new(&kernel0.path),
    );
    let tcg = accel == "tcg";
    let plans = kernel_plans(args, tcg)?;
    crate::runner::signals::install()?;
    let seed = args.seed.unwrap_or_else(super::micro_variants::now_ns);
    crate::error::stderr_line(&format!(
        "abperf: micro in {} kernel variant(s) x {n} boots, {} guests, boot order ABBA (seed \
         {seed}){}",
        plans.len(),
        accel.to_uppercase(),
        if tcg {
            ": under TCG the timings say nothing about hardware costs"
        } else {
            ""
        }
    ));
    let sampling = crate::doctor::Sampling::start();
    let (reports, seen) = measure(benches, opts, &plans, n, seed, tcg)?;
    let environment = crate::doctor::merged(
        crate::doctor::environment_unsampled(),
        &sampling.finish("during the boots"),
    );
    let as_plans: Vec<Plan> = plans
        .iter()
        .map(|p| Plan {
            label: p.label.clone(),
            knobs: Vec::new(),
        })
        .collect();
    let mut records =
        super::micro_variants::records(args, benches, &as_plans, &reports, seed, environment);
    let provenance = provenances(&plans)?;
    for (rec, p) in records.iter_mut().zip(&provenance) {
        // Every benchmark of the experiment ran in that kernel: each variant gets its row.
        for v in &mut rec.variants {
            v.provenance = Some(p.clone());
        }
    }
    for ((rec, p), seen) in records.iter_mut().zip(&plans).zip(seen) {
        rec.experiment.design["interleaved"]["order"] = "boot by boot, ABBA (seeded)".into();
        rec.experiment.design["vm"] = serde_json::json!({
            "level": "boot",
            "boots": n,
            "accel": accel,
            "accel_reason": accel_reason,
            "kernel": p.kernel.path,
            "release": p.kernel.release,
            "package": p.kernel.package,
            "append": p.append,
            "boots_seen": seen,
        });
    }
    let labels: Vec<String> = plans.iter().map(|p| p.label.clone()).collect();
    let data = match store {
        Some(s) => super::micro_variants::store_and_read_back(s, &records, &labels, args)?,
        None => records.iter().map(|r| r.dataset()).collect(),
    };
    super::micro_variants::print_comparisons(args, &records, &data, &labels)?;
    let failed: usize = reports.iter().map(|r| r.failures.len()).sum();
    for (r, l) in reports.iter().zip(&labels) {
        for f in &r.failures {
            super::micro_args::print_failure(f, Some(l));
        }
    }
    Ok(if failed > 0 { 1 } else { 0 })
}

/// Boot i of every variant (in `micro::interleave::order`) before boot i+1 of any; each boot's
/// suite report, joined per variant with the boots as invocations, and per variant what its
/// guests said of themselves at each boot ([`boot_one`]).
fn measure(
    benches: &[&'static str],
    opts: &Options,
    plans: &[KernelPlan],
    n: u32,
    seed: u64,
    tcg: bool,
) -> anyhow::Result<(Vec<SuiteReport>, Vec<Vec<serde_json::Value>>)> {
    let started = std::time::Instant::now();
    let bar = progress_bar(
        plans.len() * n as usize,
        "micro in kernels [{pos}/{len}] {msg} {elapsed}",
    );
    let mut parts: Vec<Vec<SuiteReport>> = plans.iter().map(|_| Vec::new()).collect();
    let mut seen: Vec<Vec<serde_json::Value>> = plans.iter().map(|_| Vec::new()).collect();
    for b in 0..n as usize {
        for v in micro::interleave::order(plans.len(), seed, b) {
            bar.set_message(format!("boot {} of {}", b + 1, plans[v].label));
            let r = boot_one(benches, opts, &plans[v], b, tcg);
            bar.inc(1);
            let (report, guest) = r?;
            parts[v].push(report);
            seen[v].push(guest);
        }
    }
    bar.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64();
    let reports = parts
        .into_iter()
        .map(|p| {
            let mut r = micro::invocations::merge(p, elapsed)?;
            if let Some(last) = r.notes.last_mut() {
                *last = format!(
                    "measured in {n} boots (each boot one invocation: a process of its own in a \
                     fresh guest){}",
                    if tcg {
                        "; under TCG (QEMU's emulator): the timings say nothing about hardware costs"
                    } else {
                        ""
                    }
                );
            }
            Ok(r)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok((reports, seen))
}

/// Boot `plan`'s kernel, run the suite in the guest and read its report; with what the guest
/// said of itself (`uname -r`, `/proc/cmdline`, the accelerator, seconds to boot).
fn boot_one(
    benches: &[&str],
    opts: &Options,
    plan: &KernelPlan,
    boot: usize,
    tcg: bool,
) -> anyhow::Result<(SuiteReport, serde_json::Value)> {
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("--kernel: cannot find abperf's own program: {e}"))?;
    let mut words = vec![exe.to_string_lossy().into_owned()];
    words.extend(super::micro_invocations::child_args(
        benches, opts, 0, 1, false,
    ));
    let quoted: Vec<String> = words
        .iter()
        .map(|w| shell_words::quote(w).into_owned())
        .collect();
    let command = format!("exec {} > \"$ABPERF_VM_RESULTS\"", quoted.join(" "));
    let mut spec = VmSpec::new(&plan.kernel.path, command);
    spec.modules = plan.kernel.modules.as_ref().map(PathBuf::from);
    spec.append = plan.append.clone();
    spec.accel = if tcg { Accel::Tcg } else { Accel::Kvm };
    spec.timeout = Some(Duration::from_secs(1800));
    let vm = Vm::start(&spec)?;
    let mut lines = Vec::new();
    let o = vm.wait_with(|e| {
        if let Event::Line(l) = e {
            lines.push(l.clone());
        }
    });
    if o.exit != Exit::Command(0) {
        anyhow::bail!(
            "boot {} of {}: the guest's suite did not finish ({:?}); console: {}",
            boot + 1,
            plan.label,
            o.exit,
            o.console_tail
                .iter()
                .rev()
                .take(8)
                .rev()
                .cloned()
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
    lines.extend(o.partial_line.clone());
    let report = serde_json::from_str(&lines.concat()).map_err(|e| {
        anyhow::anyhow!(
            "boot {} of {}: the guest's report could not be read ({e})",
            boot + 1,
            plan.label
        )
    })?;
    let guest = o.boot.as_ref().map_or(serde_json::Value::Null, |b| {
        serde_json::json!({
            "release": b.release,
            "cmdline": b.cmdline,
            "accel": b.accel.as_str(),
            "boot_seconds": b.boot_seconds,
        })
    });
    Ok((report, guest))
}
