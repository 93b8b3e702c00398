//! `abperf run --kernel/--append`: kernels and kernel command lines as variant axes. Each variant
//! boots its kernel in a virtual machine (`crate::vm`) `--boots` times, in seeded ABBA order, and
//! runs `-r` timed runs (after `--warmup` warm-ups) per boot inside it; the host commits every run
//! as it arrives (`runner::boots`), and `--resume` continues with the next boot.

use super::end::{claim, conclude};
use super::plan::{BootOn, Kernels, NewRun};
use super::progress::Bar;
use crate::commands::kernel_git::{self, SourceArgs};
use crate::commands::vm::AccelArg;
use crate::design::{self, KernelChoice, Order};
use crate::error::usage;
use crate::model::{Kind, NewExperiment, Variant};
use crate::runner::boots::{Boots, VmDesign, execute_boots};
use crate::runner::experiment::RunConfig;
use crate::runner::signals;
use crate::store::Store;
use crate::vm::{self, kernel::ImageKind};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A `--kernel` argument: an image file, a Debian package fetched into the cache, or a
/// revision of a git tree built from source (`git:REV[+PATCH...]`, with `src`'s options).
pub(crate) fn resolve_kernel(
    arg: &str,
    modules: &[PathBuf],
    src: &SourceArgs,
) -> anyhow::Result<KernelChoice> {
    let path = Path::new(arg);
    if let Some(built) = kernel_git::resolve(arg, src) {
        let b = built?;
        return Ok(KernelChoice {
            path: b.image.to_string_lossy().into_owned(),
            release: b.release,
            modules: b.modules.map(|m| m.to_string_lossy().into_owned()),
            package: None,
            label: Some(arg.to_string()),
            source: Some(b.source),
        });
    }
    let (image, mut mods, package) = if path.exists() {
        let abs = std::fs::canonicalize(path).map_err(|e| usage(format!("--kernel {arg}: {e}")))?;
        (abs, None, None)
    } else if !arg.contains('/') && arg.starts_with("linux-image") {
        crate::error::stderr_line(&format!(
            "abperf: --kernel {arg}: a Debian package; fetching it into the kernel cache if needed"
        ));
        let k = vm::fetch_kernel(arg)?;
        (k.vmlinuz, Some(k.modules), Some(k.package))
    } else {
        return Err(usage(format!(
            "--kernel {arg}: no such file, not a Debian kernel package name (linux-image-...), \
             and not git:REV (a kernel built from source)"
        )));
    };
    let release = match vm::kernel::image_kind(&image)? {
        ImageKind::BzImage { release: Some(r) } => r,
        _ => {
            return Err(usage(format!(
                "--kernel {arg}: no release string in the image (expected an x86 bzImage/vmlinuz)"
            )));
        }
    };
    if let Some(m) = modules
        .iter()
        .find(|m| m.file_name().is_some_and(|n| n == release.as_str()))
    {
        let m = std::fs::canonicalize(m)
            .map_err(|e| usage(format!("--modules {}: {e}", m.display())))?;
        mods = Some(m);
    }
    Ok(KernelChoice {
        path: image.to_string_lossy().into_owned(),
        release,
        modules: mods.map(|m| m.to_string_lossy().into_owned()),
        package,
        label: None,
        source: None,
    })
}

/// The accelerator for the whole experiment, and why.
pub(crate) fn choose_accel(arg: AccelArg, kernel: &Path) -> (String, String) {
    match arg {
        AccelArg::Kvm => ("kvm".into(), "asked for with --accel kvm".into()),
        AccelArg::Tcg => (
            "tcg".into(),
            "asked for with --accel tcg (timings say nothing about hardware costs)".into(),
        ),
        AccelArg::Auto => {
            let p = vm::kvm_usable_cached(Some(kernel), Duration::from_secs(30));
            if p.usable() {
                ("kvm".into(), format!("KVM probe: {}", p.finding))
            } else {
                crate::error::stderr_line(&format!(
                    "abperf: KVM is not usable here, so the kernels boot under TCG (QEMU's emulator): \
                     the runs test the machinery, their timings say nothing about hardware costs. \
                     KVM probe: {}",
                    p.finding
                ));
                ("tcg".into(), format!("KVM not usable: {}", p.finding))
            }
        }
    }
}

/// `abperf run --kernel ... [--append ...] COMMAND...`
pub(super) fn run(plan: &NewRun, k: &Kernels) -> anyhow::Result<i32> {
    let BootOn::Vm(o) = &k.on else {
        unreachable!("run::boots::run is given the plan of kernels booted in VMs")
    };
    let kernels = resolve_kernels(k)?;
    let variants = boot_variants(plan, k, &kernels)?;
    // The guest's kernel decides what it can count (each boot probes again).
    let cfg = &plan.cfg;
    let seed = cfg.seed;
    let (accel, accel_reason) = choose_accel(o.accel, Path::new(&kernels[0].path));
    let vmd = VmDesign {
        boots: k.boots,
        accel: accel.clone(),
        accel_reason: accel_reason.clone(),
        cpus: o.cpus,
        memory_mib: o.memory,
        host_cpus: o.host_cpus.clone(),
        boot_timeout_s: k.boot_timeout,
        console_dir: o.console_dir.clone(),
        strict: plan.args.strict,
    };
    let (boot_plans, schedule) = design::build_boot_schedule(
        cfg.order,
        variants.len(),
        k.boots,
        cfg.runs,
        cfg.warmup,
        seed,
    );
    let mut design_json = serde_json::to_value(cfg)?;
    design_json["vm"] = serde_json::to_value(&vmd)?;
    // Other processes' CPU use, load and pressure are sampled over the boots (`execute`), not
    // before them.
    let mut environment = crate::doctor::environment_unsampled();
    environment["vm"] = serde_json::json!({
        "accel": accel,
        "accel_reason": accel_reason,
        "cpus": o.cpus,
        "memory_mib": o.memory,
        "host_cpus": o.host_cpus,
        "qemu": vm::engine::find_qemu().ok().map(|q| q.display().to_string()),
    });
    let title = plan.title(variants.iter().map(|v| v.name.as_str()));
    let exp = NewExperiment {
        name: title,
        kind: Kind::Run,
        command_line: crate::store::redacted_args(std::env::args()),
        design: design_json,
        seed: Some(seed),
        environment,
    };
    let args = &plan.args;
    let mut store = Store::open_to_write(&args.db.location()?)?;
    if let Some(p) = &cfg.profile {
        // perf and the event are probed in each guest, under its own kernel.
        super::profile_store(&store)?;
        super::announce_profile(p, cfg.runs * k.boots, " inside each guest");
    }
    signals::install()?;
    crate::design::trust::approve(&exp.design, &variants)?;
    let id = store.create_boot_experiment(&exp, &variants, &schedule, &boot_plans)?;
    store.set_labels(id, &plan.labels)?;
    // Its owner, so that `list`/`show` call it interrupted if this process dies and
    // `run --resume` refuses while it lives (a moment after creation: a kill -9 in between
    // leaves a `running` experiment without an owner, as stores made before owners have).
    claim(&mut store, id)?;
    crate::error::stderr_line(&format!(
        "abperf: experiment {id}: {} kernel variant(s) x {} boots x {} runs (+{} warm-up per boot), \
         boot order {}, seed {seed}, {} guests of {} vCPU(s) and {} MiB",
        variants.len(),
        k.boots,
        cfg.runs,
        cfg.warmup,
        cfg.order.as_str(),
        accel.to_uppercase(),
        o.cpus,
        o.memory
    ));
    let variants = store.variants(id)?;
    execute(&mut store, id, cfg, &vmd, &variants)
}

/// The `--kernel`s, resolved (packages fetched), and every `--modules` matched to one of them.
pub(super) fn resolve_kernels(k: &Kernels) -> anyhow::Result<Vec<KernelChoice>> {
    let mut kernels = Vec::new();
    k.source.check_used(&k.images)?;
    for a in &k.images {
        kernels.push(resolve_kernel(a, &k.modules, &k.source)?);
    }
    for m in &k.modules {
        let used = kernels.iter().any(|c| {
            c.modules.as_deref().map(Path::new) == std::fs::canonicalize(m).ok().as_deref()
        });
        if !used {
            return Err(usage(format!(
                "--modules {}: no --kernel has release '{}' (a modules directory is named after its kernel's release)",
                m.display(),
                m.file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default()
            )));
        }
    }
    Ok(kernels)
}

/// The variants: every kernel x command line x (command, `-L`, `-k`) combination, named by `-n`
/// (every variant, or the commands as without kernels).
pub(super) fn boot_variants(
    plan: &NewRun,
    k: &Kernels,
    kernels: &[KernelChoice],
) -> anyhow::Result<Vec<Variant>> {
    let (args, params, knob_specs) = (&plan.args, &plan.params, &plan.knobs);
    // -n names every variant, or the commands (as without kernels).
    let total_plans = {
        let mut n = args.commands.len().max(1);
        for p in params {
            n *= p.values.len();
        }
        for k in knob_specs {
            n *= k.values.len();
        }
        n
    };
    let appends = k.appends.len().max(1);
    let total = kernels.len() * appends * total_plans;
    let (plan_names, all_names): (&[String], &[String]) =
        if args.names.len() == total && total != args.commands.len() {
            (&[], &args.names)
        } else {
            (&args.names, &[])
        };
    let plans = design::build_variants(&args.commands, plan_names, params, knob_specs)?;
    let bvs = design::build_boot_variants(kernels, &k.appends, &plans, all_names)?;
    if plan.cfg.order == Order::Sequential {
        crate::error::stderr_line(
            "abperf: warning: --order sequential boots every boot of one variant before the next: a slow \
             drift becomes a false difference; the default abba cancels it",
        );
    }
    let mut variants: Vec<Variant> = bvs
        .iter()
        .map(|b| Variant {
            command: Some(b.plan.command.clone()),
            parameters: b.plan.parameters.clone(),
            knobs: b.plan.knobs.clone(),
            boot: Some(b.boot.clone()),
            ..Variant::named(&b.plan.name)
        })
        .collect();
    // The images' hashes are stored with the variants; the same bytes twice are said now,
    // before any boot.
    design::provenance::fill(&mut variants)?;
    for n in crate::report::same_config::image_notes(&variants) {
        crate::error::stderr_line(&format!("abperf: {n}"));
    }
    Ok(variants)
}

fn execute(
    store: &mut Store,
    id: i64,
    cfg: &RunConfig,
    vmd: &VmDesign,
    variants: &[Variant],
) -> anyhow::Result<i32> {
    let schedule = store.schedule(id)?;
    let plans = store.boot_plans(id)?;
    let boots = Boots {
        exp_id: id,
        cfg,
        vm: vmd,
        variants,
        schedule: &schedule,
        plans: &plans,
    };
    let sampling = crate::doctor::Sampling::start();
    let mut bar = Bar(None, None);
    let result = execute_boots(store, &boots, &mut bar);
    if let Err(e) = store.merge_environment(id, &sampling.finish("during the boots")) {
        crate::error::stderr_line(&format!(
            "abperf: warning: the load sampled during the boots is not stored: {e:#}"
        ));
    }
    conclude(store, id, variants.len(), result)
}

/// `abperf run --resume ID` of a kernel-variant experiment: continue with the next boot.
pub fn resume(
    store: &mut Store,
    id: i64,
    cfg: &RunConfig,
    design: &serde_json::Value,
) -> anyhow::Result<i32> {
    let vmd: VmDesign = serde_json::from_value(design["vm"].clone()).map_err(|e| {
        anyhow::anyhow!("experiment {id}: its stored VM design cannot be read by this abperf: {e}")
    })?;
    if vmd.accel == "kvm" {
        let p = vm::kvm_usable_cached(None, Duration::from_secs(30));
        if !p.usable() && p.verdict != vm::Verdict::Untested {
            anyhow::bail!(
                "experiment {id} boots under KVM, which is not usable here ({}); its boots cannot \
                 continue under another accelerator (compare refuses to mix them)",
                p.finding
            );
        }
    }
    let variants = store.variants(id)?;
    for v in &variants {
        if let Some(b) = &v.boot
            && !Path::new(&b.kernel).is_file()
        {
            anyhow::bail!(
                "experiment {id}: variant '{}' boots {}, which is gone{}",
                v.name,
                b.kernel,
                match &b.package {
                    Some(p) => format!(" (fetch it again: abperf vm fetch-kernel {p})"),
                    None => String::new(),
                }
            );
        }
    }
    let done = store.done_seqs(id)?.len();
    let schedule_len = store.schedule(id)?.len();
    crate::error::stderr_line(&format!(
        "abperf: resuming experiment {id} at run {done} of {schedule_len} (boot order {}, seed {}, {})",
        cfg.order.as_str(),
        cfg.seed,
        vmd.accel.to_uppercase()
    ));
    signals::install()?;
    store.set_status(id, crate::model::Status::Running)?;
    execute(store, id, cfg, &vmd, &variants)
}
