//! `abperf run`'s options interpreted once (and `abperf fleet run`'s, which are a subset of
//! them): [`Plan`] says what the command is (a new experiment on this machine, a kernel
//! experiment booted in VMs or on this machine, a resume, an internal share) and holds every
//! value the options make, checked: the counts, the seed, the `-L`/`-k` lists, the stored run
//! design with its noise controls, the kernels' boots and VM settings. The paths (`run`,
//! `run::boots`, `run::boot_loop`, `fleet run`) read the plan, never the options again.

use super::args::{BootHook, BootOnHost, ExperimentArgs, KernelArgs, LocalArgs, RunArgs};
use crate::commands::vm::{
    AccelArg, DEFAULT_BOOT_TIMEOUT_S, DEFAULT_VM_CPUS, DEFAULT_VM_MEMORY_MIB, VmSettings,
};
use crate::commands::{DbArgs, hints};
use crate::design;
use crate::doctor;
use crate::error::usage;
use crate::measure::counters;
use crate::model::SequentialPlan;
use crate::runner::experiment::RunConfig;
use crate::runner::noise::NoiseConfig;
use crate::runner::profiled::{self, ProfilePlan};
use crate::runner::shell::ShellMode;
use crate::runner::workload;
use crate::store::Location;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Boots per variant when `--boots` is not given: enough boot means for a test (at least the
/// 6 runs per variant `compare` recommends, counted at the boot level).
pub const DEFAULT_BOOTS: u32 = 6;

/// What `abperf run` was asked to do.
pub(crate) enum Plan {
    /// (internal) run a boot's share of the schedule inside the guest
    GuestShare(PathBuf),
    /// (internal) run a fleet host's share of the schedule, appending finished runs to `lines`
    FleetShare { share: PathBuf, lines: PathBuf },
    /// `--resume ID`: continue a stopped experiment with its own design
    Resume {
        reference: String,
        db: DbArgs,
        wait: bool,
        /// `--trust-stored-design`: run a design this machine did not approve
        trust: bool,
    },
    /// A new experiment on this machine
    Host(NewRun),
    /// A new kernel experiment: its variants' kernels booted in VMs or on this machine
    Kernels(NewRun, Box<Kernels>),
}

/// A new experiment, its options checked.
pub(crate) struct NewRun {
    /// The options as given, for what is used as given: the commands, `-n` names, the hooks'
    /// texts, the events, --title, --db
    pub args: ExperimentArgs,
    /// `--wait` for a knob another experiment holds
    pub wait: bool,
    pub params: Vec<design::ParamList>,
    pub knobs: Vec<design::KnobSpec>,
    /// The stored design: counts, order, seed, hooks, noise controls (--tune's settings chosen),
    /// the sequential stop; its counted events are the events as given (a host experiment
    /// keeps those this machine can count)
    pub cfg: RunConfig,
    /// `--label`s, checked
    pub labels: crate::model::label::Labels,
}

/// The kernel-variant options, checked, with their defaults.
pub(crate) struct Kernels {
    /// `--kernel`s as given (images or Debian packages)
    pub images: Vec<String>,
    pub modules: Vec<PathBuf>,
    pub appends: Vec<String>,
    /// `--kernel-tree`, `--patch`, `--kconfig`: how `git:` kernels are built
    pub source: crate::commands::kernel_git::SourceArgs,
    pub boots: u32,
    pub boot_timeout: f64,
    pub on: BootOn,
}

/// Where the kernels boot.
pub(crate) enum BootOn {
    Vm(VmPlan),
    /// `--boot-on-host`: this machine boots them, one reboot per planned boot
    ThisMachine {
        how: BootOnHost,
        systemd_unit: bool,
        /// `--reboot-this-machine` given
        go_ahead: bool,
    },
}

/// The guests' settings.
pub(crate) struct VmPlan {
    pub accel: AccelArg,
    pub cpus: u32,
    pub memory: u64,
    pub host_cpus: Option<Vec<usize>>,
    pub console_dir: Option<PathBuf>,
}

impl Plan {
    /// Interpret `abperf run`'s options; every refusal of a combination is here.
    pub(crate) fn of(args: RunArgs) -> anyhow::Result<Plan> {
        let RunArgs {
            mut exp,
            local,
            kernel,
        } = args;
        if let Some(share) = kernel.guest_share {
            return Ok(Plan::GuestShare(share));
        }
        if let (Some(share), Some(lines)) = (local.fleet_share.clone(), local.lines.clone()) {
            return Ok(Plan::FleetShare { share, lines });
        }
        if local.no_store {
            exp.db.db = Some(Location::parse(hints::IN_MEMORY));
        }
        refuse_combinations(&exp, &local, &kernel)?;
        if let Some(reference) = exp.resume.clone() {
            if !exp.commands.is_empty() {
                return Err(usage(
                    "--resume takes no COMMAND: the experiment's own commands are resumed",
                ));
            }
            if kernel.any() {
                return Err(usage(
                    "--resume takes no kernel options: the experiment's own kernels and VM design are resumed",
                ));
            }
            return Ok(Plan::Resume {
                reference,
                db: exp.db,
                wait: local.wait,
                trust: exp.trust_stored_design,
            });
        }
        if kernel.any() {
            let kernels = kernels(&exp, &local, &kernel)?;
            let mut run = NewRun::new(exp, Some(&local))?;
            run.cfg.profile = profile_plan(&local, true);
            return Ok(Plan::Kernels(run, Box::new(kernels)));
        }
        check_counts(&exp, Some(&local))?;
        Ok(Plan::Host(NewRun::new(exp, Some(&local))?))
    }
}

/// The combinations `abperf run` refuses whatever else is given.
fn refuse_combinations(
    exp: &ExperimentArgs,
    local: &LocalArgs,
    k: &KernelArgs,
) -> anyhow::Result<()> {
    if k.boot_on_host.is_some() && local.profile.is_some() {
        return Err(usage(
            "--profile with --boot-on-host: the boot loop does not profile yet; profile its \
             kernels in VM guests (--kernel without --boot-on-host), or record with perf in \
             each boot and import the perf script text (abperf import --format perf-script)",
        ));
    }
    if local.profile_runs == Some(0) {
        return Err(usage(
            "--profile-runs 0: expected at least 1 (or leave out --profile)",
        ));
    }
    if let Some(e) = local.profile.as_deref().filter(|e| !e.is_empty())
        && !e
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_:./=,".contains(c))
    {
        return Err(usage(format!(
            "--profile={}: not an event name perf takes (letters, digits and -_:./=,)",
            crate::model::escape::control(e)
        )));
    }
    if k.any() && local.until_decided {
        return Err(usage(
            "--until-decided with kernels: not supported (boots, not runs, are the unit there); \
             use --boots and abperf plan --from ID",
        ));
    }
    if k.any() && exp.commands.iter().any(|c| workload::is_workload(c)) {
        return Err(usage(
            "built-in workloads (@NAME) as variants of kernel experiments (--kernel/--append) \
             are not supported yet: their prepare steps, data sets and cgroups are not set up \
             inside the VM; give the guest a command instead",
        ));
    }
    if k.boot_on_host.is_none() && (k.reboot_this_machine || k.boot_hook.is_some()) {
        return Err(usage(
            "--reboot-this-machine and --boot-hook go with --boot-on-host (the boot loop on this \
             machine)",
        ));
    }
    Ok(())
}

impl NewRun {
    /// A new experiment of `abperf run` (`local` given) or `abperf fleet run` (none): the
    /// lists parsed, the seed drawn, the design made with its noise controls.
    pub(crate) fn new(args: ExperimentArgs, local: Option<&LocalArgs>) -> anyhow::Result<NewRun> {
        let (params, knobs) = parse_lists(&args)?;
        let knob_paths: Vec<String> = knobs.iter().map(|k| k.path.clone()).collect();
        let noise = noise_config(&args, local, &knob_paths)?;
        let seed = args.seed.unwrap_or_else(random_seed);
        let cfg = run_config(&args, local, seed, noise);
        let labels = crate::model::label::parse_all(&args.labels).map_err(usage)?;
        Ok(NewRun {
            labels,
            wait: local.is_some_and(|l| l.wait),
            args,
            params,
            knobs,
            cfg,
        })
    }

    /// A new fleet experiment: at least one command, the counts checked, the events checked
    /// for spelling only (each host finds which it can count).
    pub(crate) fn fleet(args: ExperimentArgs) -> anyhow::Result<NewRun> {
        if args.commands.is_empty() {
            return Err(usage("expected at least one COMMAND (a variant)"));
        }
        check_counts(&args, None)?;
        check_event_names(&args)?;
        NewRun::new(args, None)
    }

    /// The experiment's name: --title, else "A vs B vs ...".
    pub(crate) fn title<'a>(&self, names: impl Iterator<Item = &'a str>) -> String {
        self.args
            .title
            .clone()
            .unwrap_or_else(|| names.collect::<Vec<_>>().join(" vs "))
    }

    /// The paths of the variant knobs (`-k`).
    pub(crate) fn knob_paths(&self) -> Vec<String> {
        self.knobs.iter().map(|k| k.path.clone()).collect()
    }
}

/// The kernel options of a new kernel experiment, checked: everything that can be told wrong
/// before a kernel is looked at (--kernel given, counts, --tune, timeouts, the VM's size and
/// CPUs, the events); with --boot-on-host, no VM option.
fn kernels(exp: &ExperimentArgs, local: &LocalArgs, k: &KernelArgs) -> anyhow::Result<Kernels> {
    if let Some(how) = k.boot_on_host {
        refuse_vm_options(k)?;
        let (boots, boot_timeout) = check_kernel_options(exp, local, k)?;
        check_event_names(exp)?;
        return Ok(Kernels {
            images: k.kernels.clone(),
            modules: k.modules.clone(),
            appends: k.appends.clone(),
            source: k.source.clone(),
            boots,
            boot_timeout,
            on: BootOn::ThisMachine {
                how,
                systemd_unit: k.boot_hook.unwrap_or(BootHook::Systemd) == BootHook::Systemd,
                go_ahead: k.reboot_this_machine,
            },
        });
    }
    let (boots, boot_timeout) = check_kernel_options(exp, local, k)?;
    let vm = vm_plan(&k.vm, k.vm_console.as_deref())?;
    check_event_names(exp)?;
    Ok(Kernels {
        images: k.kernels.clone(),
        modules: k.modules.clone(),
        appends: k.appends.clone(),
        source: k.source.clone(),
        boots,
        boot_timeout,
        on: BootOn::Vm(vm),
    })
}

/// --kernel given, counts, --boots, no --tune, --timeout and --boot-timeout: returns the boots
/// per variant and the boot timeout.
fn check_kernel_options(
    exp: &ExperimentArgs,
    local: &LocalArgs,
    k: &KernelArgs,
) -> anyhow::Result<(u32, f64)> {
    if k.kernels.is_empty() {
        return Err(usage(format!(
            "{} {} --kernel: the kernel to boot (a bzImage/vmlinuz, or a Debian package such as \
             linux-image-amd64)",
            k.given().join(", "),
            if k.given().len() == 1 {
                "needs"
            } else {
                "need"
            }
        )));
    }
    check_run_counts(exp)?;
    let boots = k.boots.unwrap_or(DEFAULT_BOOTS);
    if boots == 0 {
        return Err(usage("--boots must be at least 1"));
    }
    if local.tune {
        return Err(usage(
            "--tune with --kernel: the guests' settings are their own and the host's are not \
             changed for kernel variants yet; tune the host with `abperf doctor --fix` first",
        ));
    }
    check_timeout(exp)?;
    let boot_timeout = crate::commands::positive_seconds(
        "--boot-timeout",
        k.vm.boot_timeout.unwrap_or(DEFAULT_BOOT_TIMEOUT_S),
    )?
    .as_secs_f64();
    Ok((boots, boot_timeout))
}

/// The guests' size and CPUs, checked.
fn vm_plan(vm: &VmSettings, console: Option<&Path>) -> anyhow::Result<VmPlan> {
    let cpus = vm.vm_cpus.unwrap_or(DEFAULT_VM_CPUS);
    if cpus == 0 || cpus > 255 {
        return Err(usage(format!("--vm-cpus {cpus}: expected 1 to 255")));
    }
    let memory = vm.vm_memory.unwrap_or(DEFAULT_VM_MEMORY_MIB);
    if memory < 128 {
        return Err(usage(format!(
            "--vm-memory {memory}: expected at least 128 (MiB)"
        )));
    }
    Ok(VmPlan {
        accel: vm.accel.unwrap_or(AccelArg::Auto),
        cpus,
        memory,
        host_cpus: vm.host_cpus()?,
        console_dir: console.map(|d| std::path::absolute(d).unwrap_or_else(|_| d.to_path_buf())),
    })
}

/// With --boot-on-host: the VM-only options, refused by name, and the kernels must be
/// installed images.
fn refuse_vm_options(k: &KernelArgs) -> anyhow::Result<()> {
    for (flag, given) in [
        ("--accel", k.vm.accel.is_some()),
        ("--vm-cpus", k.vm.vm_cpus.is_some()),
        ("--vm-memory", k.vm.vm_memory.is_some()),
        ("--vm-pin", k.vm.vm_pin.is_some()),
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

/// The events' names, checked for spelling only (where the runs are, other kernels, other
/// machines, decides which can be counted).
fn check_event_names(args: &ExperimentArgs) -> anyhow::Result<()> {
    for e in &args.events {
        counters::parse_event(e).map_err(|e| usage(format!("-e/--event: {e}")))?;
    }
    Ok(())
}

fn random_seed() -> u64 {
    // 48 bits: short enough to type back with --seed.
    rand::random::<u64>() >> 16
}

/// `-L` lists and `-k` knobs as given.
fn parse_lists(
    args: &ExperimentArgs,
) -> anyhow::Result<(Vec<design::ParamList>, Vec<design::KnobSpec>)> {
    let params = args
        .params
        .iter()
        .map(|p| design::parse_param_list(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let knobs = args
        .knobs
        .iter()
        .map(|k| design::parse_knob(k))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok((params, knobs))
}

fn check_timeout(args: &ExperimentArgs) -> anyhow::Result<()> {
    if let Some(t) = args.timeout {
        crate::commands::positive_seconds("--timeout", t)?;
    }
    Ok(())
}

/// `-r`, `--looks` and `--timeout` of a new experiment run in one process per host.
fn check_counts(args: &ExperimentArgs, local: Option<&LocalArgs>) -> anyhow::Result<()> {
    check_run_counts(args)?;
    if let Some(l) = local.filter(|l| l.until_decided) {
        if !(1..=20).contains(&l.looks) {
            return Err(usage(format!("--looks {}: expected 1 to 20", l.looks)));
        }
        if (args.runs as usize) < 4 * l.looks {
            return Err(usage(format!(
                "--until-decided with -r {} and --looks {}: expected at least 4 runs per variant per look (-r {} or more)",
                args.runs,
                l.looks,
                4 * l.looks
            )));
        }
    }
    check_timeout(args)
}

/// The stored design of a run experiment from its options (the counted events: as given).
fn run_config(
    args: &ExperimentArgs,
    local: Option<&LocalArgs>,
    seed: u64,
    noise: NoiseConfig,
) -> RunConfig {
    RunConfig {
        order: args.order,
        runs: args.runs,
        warmup: args.warmup,
        seed,
        pre: args.pre.clone(),
        rewarm: args.rewarm.clone(),
        post: args.post.clone(),
        setup: args.setup.clone(),
        cleanup: args.cleanup.clone(),
        shell: if args.no_shell {
            ShellMode::None
        } else {
            args.shell.unwrap_or_default()
        },
        exec: BTreeMap::new(),
        pin: args.pin.clone(),
        timeout_s: args.timeout,
        events: args.events.clone(),
        counted_events: args.events.clone(),
        ignore_failure: args.ignore_failure,
        wait_moved_knob: args.wait_moved_knob,
        show_output: args.show_output,
        noise,
        sequential: local.filter(|l| l.until_decided).map(|l| SequentialPlan {
            looks: l.looks,
            max_runs: args.runs,
            alpha: 0.05,
        }),
        profile: local.and_then(|l| profile_plan(l, false)),
    }
}

/// `--profile[=EVENT]` and `--profile-runs`: the stored plan of the profiled runs (`None`
/// without --profile); an empty EVENT is the machine's default (cycles with a PMU, else
/// cpu-clock), in VM guests cpu-clock (this machine's PMU says nothing of a guest's: TCG has
/// none, KVM only with a virtual PMU).
fn profile_plan(local: &LocalArgs, guest: bool) -> Option<ProfilePlan> {
    let event = local.profile.as_deref()?;
    Some(ProfilePlan {
        event: match event {
            "" if guest => "cpu-clock".to_string(),
            "" => crate::measure::perf_record::default_event().to_string(),
            e => e.to_string(),
        },
        frequency: profiled::FREQUENCY,
        runs: local.profile_runs.unwrap_or(profiled::DEFAULT_RUNS),
        after: None,
    })
}

/// The noise-control options, checked; --tune's settings exclude files that are variant knobs.
fn noise_config(
    args: &ExperimentArgs,
    local: Option<&LocalArgs>,
    knob_paths: &[String],
) -> anyhow::Result<NoiseConfig> {
    let tune = if local.is_some_and(|l| l.tune) {
        Some(tune_settings(knob_paths))
    } else {
        None
    };
    if args.perturb_layout == Some(0) {
        return Err(usage(
            "--perturb-layout 0: expected a number of MiB of at least 1",
        ));
    }
    let (pre_read, tmpfs_copy) = match local {
        Some(l) => (l.pre_read.as_ref(), l.tmpfs_copy.as_ref()),
        None => (None, None),
    };
    Ok(NoiseConfig {
        tune,
        drop_caches: args.drop_caches,
        pre_read: match (pre_read, tmpfs_copy) {
            // Relative to the copy, where the workload runs: checked against the original.
            (Some(p), Some(src)) if p.is_relative() => {
                absolute_dir(&src.join(p), "--pre-read (inside --tmpfs-copy)")?;
                Some(p.clone())
            }
            (Some(p), _) => Some(absolute_dir(p, "--pre-read")?),
            (None, _) => None,
        },
        perturb_layout_mib: args.perturb_layout,
        tmpfs_copy: tmpfs_copy
            .map(|p| absolute_dir(p, "--tmpfs-copy"))
            .transpose()?,
    })
}

/// `abperf doctor --fix`'s settings for this machine, but the files that are variant knobs.
fn tune_settings(knob_paths: &[String]) -> Vec<doctor::Setting> {
    let mut settings = Vec::new();
    for s in doctor::recommended(&doctor::sys::Sys::real()) {
        if knob_paths.contains(&s.path) {
            crate::error::stderr_line(&format!(
                "abperf: --tune: leaving {} alone: it is a variant knob (-k)",
                s.path
            ));
        } else {
            settings.push(s);
        }
    }
    if settings.is_empty() {
        crate::error::stderr_line(
            "abperf: --tune: nothing to change on this machine (see abperf doctor)",
        );
    }
    settings
}

fn absolute_dir(p: &Path, flag: &str) -> anyhow::Result<PathBuf> {
    let abs =
        std::fs::canonicalize(p).map_err(|e| usage(format!("{flag} {}: {e}", p.display())))?;
    if !abs.is_dir() {
        return Err(usage(format!("{flag} {}: not a directory", p.display())));
    }
    Ok(abs)
}

/// The most runs (or warm-ups) per variant, and the most planned runs in one experiment: the
/// whole schedule is planned and stored before the first run, so its size is bounded (-r
/// 1000000000 used to plan until the machine ran out of memory, deaf to SIGTERM).
const MAX_RUNS_PER_VARIANT: u32 = 1_000_000;
const MAX_PLANNED_RUNS: u64 = 10_000_000;

/// -r and --warmup within their bounds (-r at least 1), for runs in one process and per boot.
fn check_run_counts(args: &ExperimentArgs) -> anyhow::Result<()> {
    if args.runs == 0 {
        return Err(usage("-r/--runs must be at least 1"));
    }
    for (flag, n) in [("-r/--runs", args.runs), ("--warmup", args.warmup)] {
        if n > MAX_RUNS_PER_VARIANT {
            return Err(usage(format!(
                "{flag} {n}: expected at most {MAX_RUNS_PER_VARIANT} per variant"
            )));
        }
    }
    Ok(())
}

/// Refuses a schedule of more than [`MAX_PLANNED_RUNS`] runs (variants x (runs + warm-ups)).
pub(crate) fn check_schedule_size(variants: usize, runs: u32, warmup: u32) -> anyhow::Result<()> {
    let planned = variants as u64 * (u64::from(runs) + u64::from(warmup));
    if planned > MAX_PLANNED_RUNS {
        return Err(usage(format!(
            "{variants} variants x ({runs} runs + {warmup} warm-ups) = {planned} planned runs: \
             expected at most {MAX_PLANNED_RUNS} in one experiment (fewer -r, or fewer -L/-k \
             values)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// `abperf run`'s options alone (the whole command line is cli.rs's, above this module).
    #[derive(Parser)]
    struct Run {
        #[command(flatten)]
        args: RunArgs,
    }

    fn plan(argv: &[&str]) -> anyhow::Result<Plan> {
        let mut v = vec!["run"];
        v.extend(argv);
        Plan::of(Run::try_parse_from(v).expect("the options parse").args)
    }

    fn refusal(argv: &[&str]) -> String {
        format!("{:#}", plan(argv).err().expect("refused"))
    }

    /// A file that exists, as a `--kernel` (the plan does not read kernels).
    fn kernel() -> String {
        std::env::current_exe().unwrap().display().to_string()
    }

    #[test]
    fn profile_is_the_stored_plan_of_the_profiled_runs() {
        let Ok(Plan::Host(r)) = plan(&["--profile=cpu-clock", "--profile-runs", "3", "true"])
        else {
            panic!("a host run")
        };
        let want = ProfilePlan {
            event: "cpu-clock".into(),
            frequency: profiled::FREQUENCY,
            runs: 3,
            after: None,
        };
        assert_eq!(r.cfg.profile, Some(want));
        let Ok(Plan::Host(r)) = plan(&["--profile", "true"]) else {
            panic!("a host run")
        };
        let p = r.cfg.profile.expect("--profile");
        assert_eq!(p.event, crate::measure::perf_record::default_event());
        assert_eq!(p.runs, profiled::DEFAULT_RUNS);
        // Without --profile the stored design has no `profile` (its approval hash is unchanged).
        let Ok(Plan::Host(r)) = plan(&["true"]) else {
            panic!("a host run")
        };
        assert!(
            serde_json::to_value(&r.cfg)
                .unwrap()
                .get("profile")
                .is_none()
        );
        // In VM guests: cpu-clock unless asked (the host's PMU says nothing of the guest's).
        let k = kernel();
        let Ok(Plan::Kernels(r, _)) = plan(&["--profile", "--kernel", &k, "true"]) else {
            panic!("a kernel run")
        };
        assert_eq!(r.cfg.profile.expect("--profile").event, "cpu-clock");
        let Ok(Plan::Kernels(r, _)) = plan(&["--profile=cycles", "--kernel", &k, "true"]) else {
            panic!("a kernel run")
        };
        assert_eq!(r.cfg.profile.expect("--profile").event, "cycles");
        let why = refusal(&[
            "--profile",
            "--boot-on-host",
            "kexec",
            "--kernel",
            &k,
            "true",
        ]);
        assert!(why.contains("the boot loop does not profile yet"), "{why}");
    }

    #[test]
    fn a_host_run_holds_its_checked_design() {
        let Ok(Plan::Host(r)) = plan(&[
            "-r", "3", "--warmup", "0", "--seed", "7", "-L", "n=1,2", "echo {n}",
        ]) else {
            panic!("a host run")
        };
        assert_eq!((r.cfg.runs, r.cfg.warmup, r.cfg.seed), (3, 0, 7));
        assert_eq!(r.params.len(), 1);
        assert!(r.cfg.sequential.is_none() && !r.wait);
        assert_eq!(r.title(["a", "b"].into_iter()), "a vs b");
    }

    #[test]
    fn until_decided_is_the_sequential_plan() {
        let Ok(Plan::Host(r)) = plan(&["--until-decided", "-r", "16", "--looks", "4", "a", "b"])
        else {
            panic!("a host run")
        };
        let s = r.cfg.sequential.expect("a sequential plan");
        assert_eq!((s.looks, s.max_runs), (4, 16));
        assert!(
            refusal(&["--until-decided", "-r", "15", "--looks", "4", "a", "b"])
                .contains("expected at least 4 runs per variant per look (-r 16 or more)")
        );
    }

    #[test]
    fn resume_takes_no_command_and_no_kernel_option() {
        let Ok(Plan::Resume {
            reference, wait, ..
        }) = plan(&["--resume", "3", "--wait"])
        else {
            panic!("a resume")
        };
        assert_eq!((reference.as_str(), wait), ("3", true));
        assert!(refusal(&["--resume", "3", "true"]).contains("--resume takes no COMMAND"));
        assert!(
            refusal(&["--resume", "3", "--vm-cpus", "4"])
                .contains("--resume takes no kernel options")
        );
    }

    #[test]
    fn no_store_is_the_in_memory_store() {
        let Ok(Plan::Host(r)) = plan(&["--no-store", "true"]) else {
            panic!("a host run")
        };
        assert_eq!(r.args.db.db, Some(Location::parse(hints::IN_MEMORY)));
    }

    #[test]
    fn the_vm_settings_take_their_defaults_and_are_checked() {
        let k = kernel();
        let Ok(Plan::Kernels(_, ks)) = plan(&["--kernel", &k, "true"]) else {
            panic!("a kernel experiment")
        };
        assert_eq!(
            (ks.boots, ks.boot_timeout),
            (DEFAULT_BOOTS, DEFAULT_BOOT_TIMEOUT_S)
        );
        let BootOn::Vm(vm) = ks.on else {
            panic!("in VMs")
        };
        assert_eq!((vm.accel, vm.cpus, vm.memory), (AccelArg::Auto, 2, 1024));
        assert!(refusal(&["--vm-cpus", "4", "true"]).starts_with("--vm-cpus needs --kernel"));
        assert!(
            refusal(&["--kernel", &k, "--vm-cpus", "0", "true"])
                .contains("--vm-cpus 0: expected 1 to 255")
        );
        assert!(refusal(&["--kernel", &k, "--tune", "true"]).starts_with("--tune with --kernel"));
    }

    #[test]
    fn boot_on_host_takes_no_vm_setting() {
        let k = kernel();
        assert!(
            refusal(&[
                "--kernel",
                &k,
                "--boot-on-host",
                "kexec",
                "--vm-memory",
                "512",
                "true"
            ])
            .starts_with("--vm-memory is for kernels booted in VMs")
        );
        let Ok(Plan::Kernels(_, ks)) = plan(&[
            "--kernel",
            &k,
            "--boot-on-host",
            "reboot",
            "--boot-hook",
            "manual",
            "true",
        ]) else {
            panic!("a kernel experiment")
        };
        let BootOn::ThisMachine {
            how,
            systemd_unit,
            go_ahead,
        } = ks.on
        else {
            panic!("on this machine")
        };
        assert_eq!(
            (how, systemd_unit, go_ahead),
            (BootOnHost::Reboot, false, false)
        );
        assert!(refusal(&["--reboot-this-machine", "true"]).contains("go with --boot-on-host"));
    }
}
