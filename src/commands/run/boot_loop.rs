//! `abperf run --kernel ... --boot-on-host kexec|reboot --reboot-this-machine`: the
//! kernel-variant experiment's boots made by this machine (`crate::boot_loop`). Everything is
//! checked and the plan printed first; without --reboot-this-machine nothing else happens. Then
//! the experiment (plan and schedule) is committed, the systemd unit installed (reboot mode: its
//! entry files written), and the first boot armed and started. [`continue_loop`] is the step at
//! every boot (`abperf boot-loop resume`), and at the end it concludes the experiment, removes
//! the unit (and the entry files, and abperf's one-shot) and reboots into the default kernel.

use super::args::BootOnHost;
use super::boots::{boot_variants, resolve_kernels};
use super::end::{claim, conclude};
use super::plan::{BootOn, Kernels, NewRun};
use crate::boot_loop::bli::{self, RebootDesign};
use crate::boot_loop::design::{HOST_ACCEL, Loop, LoopDesign, active_loop, mark_ended};
use crate::boot_loop::efivar::{self, Efivars};
use crate::boot_loop::machine::{self, ThisBoot, same_cmdline};
use crate::boot_loop::step::{self, Next};
use crate::boot_loop::{mode, unit};
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
fn check_machine(how: BootOnHost, systemd_unit: bool, store: &Store) -> anyhow::Result<()> {
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        anyhow::bail!("--boot-on-host reboots this machine into other kernels: run it as root");
    }
    match how {
        BootOnHost::Kexec => check_kexec()?,
        BootOnHost::Reboot => {
            bli_loader()?;
        }
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

/// kexec mode: kexec-tools installed, kexec allowed.
fn check_kexec() -> anyhow::Result<()> {
    machine::find_kexec()?;
    if std::fs::read_to_string("/proc/sys/kernel/kexec_load_disabled")
        .is_ok_and(|v| v.trim() == "1")
    {
        anyhow::bail!(
            "kexec is disabled on this machine (kernel.kexec_load_disabled = 1, which stays set \
             until reboot); see `abperf doctor`"
        );
    }
    Ok(())
}

/// Reboot mode: a Boot Loader Interface loader with one-shot entries, and reboots that go
/// through it (not kexec-tools' kexec on reboot). Returns the loader (LoaderInfo).
fn bli_loader() -> anyhow::Result<String> {
    let info = bli::loader(&Efivars::system(), bli::grub_installed())
        .map_err(|why| anyhow::anyhow!("--boot-on-host reboot: {why}"))?;
    if std::fs::read_to_string("/etc/default/kexec")
        .is_ok_and(|t| t.lines().any(|l| l.trim() == "LOAD_KEXEC=true"))
    {
        anyhow::bail!(
            "--boot-on-host reboot: kexec-tools' LOAD_KEXEC=true (/etc/default/kexec) makes every \
             reboot a kexec into /vmlinuz, past the boot loader and its one-shot entry: set \
             LOAD_KEXEC=false"
        );
    }
    Ok(info)
}

/// Reboot mode's design: the loader, its partitions, and where each kernel's files are on
/// them (the kernels must be there: the loader reads nothing else).
fn reboot_design(
    initrds: &BTreeMap<String, Option<String>>,
    home: &ThisBoot,
) -> anyhow::Result<RebootDesign> {
    let loader = bli_loader()?;
    let (esp, xbootldr) = bli::find_partitions()?;
    let mut parts = vec![esp.as_path()];
    parts.extend(xbootldr.as_deref());
    let files = bli::locate(initrds, &parts).map_err(|e| usage(format!("{e:#}")))?;
    Ok(RebootDesign {
        loader,
        esp: esp.display().to_string(),
        xbootldr: xbootldr.map(|p| p.display().to_string()),
        files,
        started_boot_id: home.boot_id.clone(),
    })
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
    let how = match d.reboot {
        None => "with kexec",
        Some(_) => "through its firmware and boot loader (one-shot entries)",
    };
    say(&format!(
        "abperf: the boot loop reboots THIS machine {} times {how}, one boot per planned boot \
         ({runs} run(s) after {warmup} warm-up(s) each), in this order:",
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
    if let Some(r) = &d.reboot {
        say_what_reboot_mode_writes(r, variants.len());
    }
    say(&format!(
        "abperf: {}; each run is committed to {} as it ends. {} any failure brings the machine \
         back to its default kernel {}. At the end the machine reboots into it. See `abperf \
         boot-loop status`; end it with `abperf boot-loop stop`.",
        if d.systemd_unit {
            format!(
                "at every boot the systemd unit {} continues the loop (removed at the end)",
                unit::unit_path().display()
            )
        } else {
            "at every boot, run `abperf boot-loop resume` (--boot-hook manual)".into()
        },
        store.display(),
        match d.reboot {
            None => "The boot loader is not changed:",
            Some(_) =>
                "The default boot entry is never changed (neither loader.conf nor \
                        LoaderEntryDefault):",
        },
        d.home_release
    ));
}

/// Reboot mode's writes, named before anything is written.
fn say_what_reboot_mode_writes(r: &RebootDesign, variants: usize) {
    let mut dirs: Vec<String> = r
        .files
        .values()
        .map(|f| format!("{}/loader/entries", f.root))
        .collect();
    dirs.sort();
    dirs.dedup();
    crate::error::stderr_line(&format!(
        "abperf: boot loader {}: the loop writes {variants} entry file(s) abperf-EXP-vN.conf \
         (EXP: the experiment's number, N: the variant's) in {}, and before each boot sets the \
         EFI variable {}-{} to the planned boot's entry (the loader boots it once, then deletes \
         the variable); the entry files and any one-shot of abperf's are removed when the loop \
         ends or is stopped.",
        r.loader,
        dirs.join(", "),
        bli::ONESHOT,
        efivar::LOADER_GUID
    ));
}

/// `abperf run --kernel ... --boot-on-host kexec|reboot [--reboot-this-machine]`.
pub(crate) fn start(plan: &NewRun, k: &Kernels) -> anyhow::Result<i32> {
    let BootOn::ThisMachine {
        how,
        systemd_unit,
        go_ahead,
    } = k.on
    else {
        unreachable!("run::boot_loop::start is given the plan of kernels booted on this machine")
    };
    let kernels = resolve_kernels(k)?;
    let initrds = initrds(&kernels)?;
    let variants = boot_variants(plan, k, &kernels)?;
    let args = &plan.args;
    let mut store = Store::open_to_write(&args.db.location()?)?;
    check_machine(how, systemd_unit, &store)?;
    let home = ThisBoot::read()?;
    let reboot = match how {
        BootOnHost::Kexec => None,
        BootOnHost::Reboot => Some(reboot_design(&initrds, &home)?),
    };
    let cfg = &plan.cfg;
    let seed = cfg.seed;
    let d = LoopDesign {
        mode: if reboot.is_some() { "reboot" } else { "kexec" }.into(),
        base_cmdline: machine::base_cmdline(&home.cmdline),
        home_release: home.release.clone(),
        home_cmdline: home.cmdline.clone(),
        initrds,
        systemd_unit,
        boot_timeout_s: k.boot_timeout,
        max_lost: MAX_LOST,
        reboot,
    };
    let vmd = host_design(&d, k.boots, args.strict);
    let (boot_plans, schedule) = design::build_boot_schedule(
        cfg.order,
        variants.len(),
        k.boots,
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
    if !go_ahead {
        return Err(usage(format!(
            "--boot-on-host reboots this machine {} times (the plan is above): add \
             --reboot-this-machine to go ahead",
            boot_plans.len()
        )));
    }
    let exp = new_experiment(plan, &variants, &vmd, &d, &home)?;
    signals::install()?;
    crate::design::trust::approve(&exp.design, &variants)?;
    let id = store.create_boot_experiment(&exp, &variants, &schedule, &boot_plans)?;
    store.set_labels(id, &plan.labels)?;
    claim(&mut store, id)?;
    crate::error::stderr_line(&format!(
        "abperf: experiment {id}: the plan is committed; starting the boot loop (seed {seed})"
    ));
    launch(&mut store, id, &store_path)
}

/// The boots' design as the runner keeps it: on this machine, all its CPUs.
fn host_design(d: &LoopDesign, boots: u32, strict: bool) -> VmDesign {
    VmDesign {
        boots,
        accel: HOST_ACCEL.into(),
        accel_reason: format!(
            "--boot-on-host {}: the kernels boot on this machine",
            d.mode
        ),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        memory_mib: 0,
        host_cpus: None,
        boot_timeout_s: d.boot_timeout_s,
        console_dir: None,
        strict,
    }
}

/// The experiment to commit: the run's design with the boots' (`vm`) and the loop's.
fn new_experiment(
    plan: &NewRun,
    variants: &[Variant],
    vmd: &VmDesign,
    d: &LoopDesign,
    home: &ThisBoot,
) -> anyhow::Result<NewExperiment> {
    let cfg = &plan.cfg;
    let mut design_json = serde_json::to_value(cfg)?;
    design_json["vm"] = serde_json::to_value(vmd)?;
    design_json["boot_loop"] = serde_json::to_value(d)?;
    let mut environment = crate::doctor::environment_unsampled();
    environment["boot_loop"] = serde_json::json!({ "home": home });
    Ok(NewExperiment {
        name: plan.title(variants.iter().map(|v| v.name.as_str())),
        kind: Kind::Run,
        command_line: crate::store::redacted_args(std::env::args()),
        design: design_json,
        seed: Some(cfg.seed),
        environment,
    })
}

/// The committed loop starts: its unit installed (reboot mode: its entry files written), then
/// the first step. If that setup fails, what was set up is removed and the loop ends before it
/// began, the machine untouched.
fn launch(store: &mut Store, id: i64, store_path: &Path) -> anyhow::Result<i32> {
    let lp = Loop::load(store, id)?;
    let set_up = || -> anyhow::Result<()> {
        if lp.design.systemd_unit {
            let exe = std::env::current_exe()?;
            unit::install(&unit::unit_text(&exe, store_path, Some(id)))?;
        }
        mode::write_entries(&lp)
    };
    if let Err(e) = set_up() {
        if lp.design.systemd_unit {
            let _ = unit::remove();
        }
        let _ = mode::clean_up(&lp);
        mark_ended(store, id, &format!("the loop could not be set up: {e:#}"))?;
        store.set_status(id, crate::model::Status::Failed)?;
        return Err(e.context(format!("experiment {id}: the boot loop did not start")));
    }
    continue_loop(store, id)
}

/// The loop's step in this boot (`abperf boot-loop resume`, and right after the start): run the
/// planned boot's share if this is it, then start the next planned boot, or end the loop.
pub(crate) fn continue_loop(store: &mut Store, id: i64) -> anyhow::Result<i32> {
    let lp = Loop::load(store, id)?;
    let now = ThisBoot::read()?;
    signals::install()?;
    // Nothing stored runs as root at boot unless the user who made the loop approved it here
    // (an edited row ends the loop and boots the home kernel: docs/security.md).
    let design = store.experiment(id)?.design;
    let next = match crate::design::trust::verify(id, &design, &lp.variants, false)
        .and_then(|()| step::at_boot(store, &lp, &now, &mut NoProgress))
    {
        Ok(n) => n,
        Err(e) => {
            let why = format!("{e:#}");
            mark_ended(store, id, &why)?;
            Next::Ended(why)
        }
    };
    match next {
        Next::Boot {
            boot_id,
            release,
            cmdline,
        } => boot_next(store, &lp, &now, boot_id, &release, &cmdline),
        Next::Complete => {
            mark_ended(store, id, "complete: every planned boot ran")?;
            go_home(store, &lp, &now, Ending::Complete)
        }
        Next::Ended(why) => go_home(store, &lp, &now, Ending::Failed(why)),
        Next::Interrupted(sig) => Ok(128 + sig),
    }
}

/// Start the armed boot, unless a signal came first (Ctrl-C at the start, a shutdown): then
/// the loop ends there, nothing left armed.
fn boot_next(
    store: &mut Store,
    lp: &Loop,
    now: &ThisBoot,
    boot_id: i64,
    release: &str,
    cmdline: &str,
) -> anyhow::Result<i32> {
    if let Some(sig) = signals::received() {
        let why = format!(
            "interrupted by {} before the reboot into {release}",
            signals::name(sig)
        );
        store.end_boot(boot_id, "interrupted", &why, None, None, 0)?;
        mark_ended(store, lp.id, &why)?;
        return go_home(store, lp, now, Ending::Interrupted(sig));
    }
    crate::error::stderr_line(&format!(
        "abperf: experiment {}: rebooting this machine into {release} ({cmdline}) {}",
        lp.id,
        match lp.design.reboot {
            None => "with kexec",
            Some(_) => "through its one-shot boot-loader entry",
        }
    ));
    if let Err(e) = mode::start(&lp.design) {
        let why = format!("{e:#}");
        store.end_boot(boot_id, "failed", &why, None, None, 0)?;
        mark_ended(store, lp.id, &why)?;
        return go_home(store, lp, now, Ending::Failed(why));
    }
    Ok(0)
}

/// The loop is over: the unit goes, nothing stays armed (no kernel loaded, no one-shot entry of
/// abperf's), reboot mode's entry files go, the experiment is concluded (its report printed),
/// and the machine reboots into its default kernel unless it is there.
fn go_home(store: &mut Store, lp: &Loop, now: &ThisBoot, ending: Ending) -> anyhow::Result<i32> {
    let unit_gone = if lp.design.systemd_unit {
        unit::remove()
    } else {
        Ok(())
    };
    let cleaned = mode::clean_up(lp);
    let code = conclude(store, lp.id, lp.variants.len(), Ok(ending));
    unit_gone?;
    cleaned?;
    let home = now.release == lp.design.home_release
        && same_cmdline(&now.cmdline, &lp.design.home_cmdline);
    if !home {
        crate::error::stderr_line(&format!(
            "abperf: experiment {}: the boot loop is over; rebooting into this machine's default \
             kernel",
            lp.id
        ));
        machine::reboot(machine::systemd_running())?;
    }
    code
}
