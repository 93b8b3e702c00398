//! `abperf run --kernel ... --boot-on-host kexec --reboot-this-machine`: the kernel-variant
//! experiment's boots made by this machine (`crate::boot_loop`). Everything is checked and the
//! plan printed first; without --reboot-this-machine nothing else happens. Then the experiment
//! (plan and schedule) is committed, the systemd unit installed, and the first boot loaded and
//! started. [`continue_loop`] is the step at every boot (`abperf boot-loop resume`), and at the
//! end it concludes the experiment, removes the unit and reboots into the default kernel.

use super::args::{BootHook, RunArgs, noise_config, random_seed, run_config, title};
use super::boots::{boot_variants, check_options, resolve_kernels};
use super::end::{claim, conclude};
use crate::boot_loop::design::{HOST_ACCEL, Loop, LoopDesign, active_loop, mark_ended};
use crate::boot_loop::machine::{self, ThisBoot, same_cmdline};
use crate::boot_loop::step::{self, Next};
use crate::boot_loop::unit;
use crate::design::{self, KernelChoice};
use crate::error::usage;
use crate::model::{BootPlan, Kind, NewExperiment, Variant};
use crate::runner::boots::VmDesign;
use crate::runner::experiment::{Ending, NoProgress};
use crate::runner::signals;
use crate::store::Store;
use std::collections::BTreeMap;
use std::path::Path;

/// Lost boots of one plan (power cuts, crashes) after which the loop gives up.
const MAX_LOST: u32 = 2;

/// The VM-only options, refused by name.
fn refuse_vm_options(args: &RunArgs) -> anyhow::Result<()> {
    let k = &args.kernel;
    for (flag, given) in [
        ("--accel", k.accel.is_some()),
        ("--vm-cpus", k.vm_cpus.is_some()),
        ("--vm-memory", k.vm_memory.is_some()),
        ("--vm-pin", k.vm_pin.is_some()),
        ("--vm-console", k.vm_console.is_some()),
        ("--modules", !k.modules.is_empty()),
    ] {
        if given {
            return Err(usage(format!(
                "{flag} is for kernels booted in VMs; --boot-on-host boots them on this machine"
            )));
        }
    }
    for a in &k.kernels {
        if !Path::new(a).is_file() {
            return Err(usage(format!(
                "--kernel {a}: with --boot-on-host, an installed kernel image such as \
                 /boot/vmlinuz-RELEASE (packages fetched into the cache are for VMs)"
            )));
        }
    }
    Ok(())
}

/// Each kernel's initramfs, found beside it.
fn initrds(kernels: &[KernelChoice]) -> anyhow::Result<BTreeMap<String, Option<String>>> {
    let mut out = BTreeMap::new();
    for k in kernels {
        let i = machine::initrd_for(Path::new(&k.path), &k.release).ok_or_else(|| {
            usage(format!(
                "--kernel {}: no initramfs beside it (initrd.img-{r} or initramfs-{r}.img); the \
                 loop boots each kernel with the one its distribution built (update-initramfs \
                 -c -k {r})",
                k.path,
                r = k.release
            ))
        })?;
        out.insert(k.path.clone(), Some(i.to_string_lossy().into_owned()));
    }
    Ok(out)
}

/// Can this machine run the loop, and is no other loop running on it?
fn check_machine(systemd_unit: bool, store: &Store) -> anyhow::Result<()> {
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        anyhow::bail!("--boot-on-host loads kernels with kexec: run it as root");
    }
    machine::find_kexec()?;
    if std::fs::read_to_string("/proc/sys/kernel/kexec_load_disabled")
        .is_ok_and(|v| v.trim() == "1")
    {
        anyhow::bail!(
            "kexec is disabled on this machine (kernel.kexec_load_disabled = 1, which stays set \
             until reboot); see `abperf doctor`"
        );
    }
    if systemd_unit && !machine::systemd_running() {
        return Err(usage(
            "--boot-on-host: systemd is not this machine's init, so no unit would continue the \
             loop at boot; give --boot-hook manual and run `abperf boot-loop resume` at every \
             boot yourself",
        ));
    }
    if let Some((path, _)) = unit::installed() {
        anyhow::bail!(
            "a boot loop is already running on this machine ({} is installed); see `abperf \
             boot-loop status`, or end it with `abperf boot-loop stop`",
            path.display()
        );
    }
    if let Some(lp) = active_loop(store)? {
        anyhow::bail!(
            "experiment {} is a boot loop still running in this store; see `abperf boot-loop \
             status`, or end it with `abperf boot-loop stop`",
            lp.id
        );
    }
    machine::refuse_volatile(store.path())
}

/// Say what the loop will do to this machine.
fn print_plan(
    variants: &[Variant],
    plans: &[BootPlan],
    d: &LoopDesign,
    runs: u32,
    warmup: u32,
    store: &Path,
) {
    let say = |s: &str| crate::error::stderr_line(s);
    say(&format!(
        "abperf: the boot loop reboots THIS machine {} times with kexec, one boot per planned \
         boot ({runs} run(s) after {warmup} warm-up(s) each), in this order:",
        plans.len()
    ));
    for p in plans {
        let v = &variants[p.variant];
        if let Some(b) = &v.boot {
            say(&format!(
                "abperf:   {:>3}. '{}': {} ({})",
                p.number + 1,
                v.name,
                b.release,
                machine::planned_cmdline(&d.base_cmdline, &b.append)
            ));
        }
    }
    say(&format!(
        "abperf: {}; each run is committed to {} as it ends. The boot loader is not changed: \
         any failure brings the machine back to its default kernel {}. At the end the \
         machine reboots into it. See `abperf boot-loop status`; end it with `abperf \
         boot-loop stop`.",
        if d.systemd_unit {
            format!(
                "at every boot the systemd unit {} continues the loop (removed at the end)",
                unit::unit_path().display()
            )
        } else {
            "at every boot, run `abperf boot-loop resume` (--boot-hook manual)".into()
        },
        store.display(),
        d.home_release
    ));
}

/// `abperf run --kernel ... --boot-on-host kexec [--reboot-this-machine]`.
pub(crate) fn start(args: RunArgs) -> anyhow::Result<i32> {
    refuse_vm_options(&args)?;
    let o = check_options(&args)?;
    let k = &args.kernel;
    let kernels = resolve_kernels(k)?;
    let initrds = initrds(&kernels)?;
    let (variants, knob_paths) = boot_variants(&args, &kernels)?;
    let systemd_unit = k.boot_hook.unwrap_or(BootHook::Systemd) == BootHook::Systemd;
    let mut store = Store::open_resolved(args.db.db.as_deref())?;
    check_machine(systemd_unit, &store)?;
    let home = ThisBoot::read()?;
    let seed = args.seed.unwrap_or_else(random_seed);
    let noise = noise_config(&args, &knob_paths)?;
    let cfg = run_config(&args, seed, args.events.clone(), noise);
    let d = LoopDesign {
        mode: "kexec".into(),
        base_cmdline: machine::base_cmdline(&home.cmdline),
        home_release: home.release.clone(),
        home_cmdline: home.cmdline.clone(),
        initrds,
        systemd_unit,
        boot_timeout_s: o.boot_timeout,
        max_lost: MAX_LOST,
    };
    let vmd = VmDesign {
        boots: o.boots,
        accel: HOST_ACCEL.into(),
        accel_reason: "--boot-on-host kexec: the kernels boot on this machine".into(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        memory_mib: 0,
        host_cpus: None,
        boot_timeout_s: o.boot_timeout,
        console_dir: None,
        strict: args.strict,
    };
    let (boot_plans, schedule) = design::build_boot_schedule(
        cfg.order,
        variants.len(),
        o.boots,
        cfg.runs,
        cfg.warmup,
        seed,
    );
    let store_path = std::path::absolute(store.path())?;
    print_plan(
        &variants,
        &boot_plans,
        &d,
        cfg.runs,
        cfg.warmup,
        &store_path,
    );
    if !k.reboot_this_machine {
        return Err(usage(format!(
            "--boot-on-host reboots this machine {} times (the plan is above): add \
             --reboot-this-machine to go ahead",
            boot_plans.len()
        )));
    }
    let mut design_json = serde_json::to_value(&cfg)?;
    design_json["vm"] = serde_json::to_value(&vmd)?;
    design_json["boot_loop"] = serde_json::to_value(&d)?;
    let mut environment = crate::doctor::environment_unsampled();
    environment["boot_loop"] = serde_json::json!({ "home": home });
    let exp = NewExperiment {
        name: title(&args, variants.iter().map(|v| v.name.as_str())),
        kind: Kind::Run,
        command_line: std::env::args().collect(),
        design: design_json,
        seed: Some(seed),
        environment,
    };
    signals::install()?;
    let id = store.create_boot_experiment(&exp, &variants, &schedule, &boot_plans)?;
    claim(&mut store, id)?;
    crate::error::stderr_line(&format!(
        "abperf: experiment {id}: the plan is committed; starting the boot loop (seed {seed})"
    ));
    if systemd_unit {
        let installed = std::env::current_exe()
            .map_err(anyhow::Error::from)
            .and_then(|exe| unit::install(&unit::unit_text(&exe, &store_path, Some(id))));
        if let Err(e) = installed {
            // Nothing was booted: the loop ends before it began, the machine untouched.
            let _ = unit::remove();
            mark_ended(
                &mut store,
                id,
                &format!("the unit could not be installed: {e:#}"),
            )?;
            store.set_status(id, crate::model::Status::Failed)?;
            return Err(e.context(format!("experiment {id}: the boot loop did not start")));
        }
    }
    continue_loop(&mut store, id)
}

/// The loop's step in this boot (`abperf boot-loop resume`, and right after the start): run the
/// planned boot's share if this is it, then start the next planned boot, or end the loop.
pub(crate) fn continue_loop(store: &mut Store, id: i64) -> anyhow::Result<i32> {
    let lp = Loop::load(store, id)?;
    let now = ThisBoot::read()?;
    signals::install()?;
    let next = match step::at_boot(store, &lp, &now, &mut NoProgress) {
        Ok(n) => n,
        Err(e) => {
            let why = format!("{e:#}");
            mark_ended(store, id, &why)?;
            Next::Ended(why)
        }
    };
    match next {
        Next::Kexec {
            boot_id,
            release,
            cmdline,
        } => {
            crate::error::stderr_line(&format!(
                "abperf: experiment {id}: rebooting this machine into {release} ({cmdline}) with kexec"
            ));
            if let Err(e) = machine::kexec_execute(lp.design.systemd_unit) {
                let why = format!("{e:#}");
                store.end_boot(boot_id, "failed", &why, None, None, 0)?;
                mark_ended(store, id, &why)?;
                return go_home(store, &lp, &now, Ending::Failed(why));
            }
            Ok(0)
        }
        Next::Complete => {
            mark_ended(store, id, "complete: every planned boot ran")?;
            go_home(store, &lp, &now, Ending::Complete)
        }
        Next::Ended(why) => go_home(store, &lp, &now, Ending::Failed(why)),
        Next::Interrupted(sig) => Ok(128 + sig),
    }
}

/// The loop is over: the unit goes, no kernel stays loaded, the experiment is concluded (its
/// report printed), and the machine reboots into its default kernel unless it is there.
fn go_home(store: &mut Store, lp: &Loop, now: &ThisBoot, ending: Ending) -> anyhow::Result<i32> {
    if lp.design.systemd_unit {
        unit::remove()?;
    }
    let _ = machine::kexec_unload();
    let code = conclude(store, lp.id, lp.variants.len(), Ok(ending));
    let home = now.release == lp.design.home_release
        && same_cmdline(&now.cmdline, &lp.design.home_cmdline);
    if !home {
        crate::error::stderr_line(&format!(
            "abperf: experiment {}: the boot loop is over; rebooting into this machine's default \
             kernel",
            lp.id
        ));
        machine::reboot_home(machine::systemd_running())?;
    }
    code
}
