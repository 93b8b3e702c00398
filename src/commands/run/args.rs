//! The options of `abperf run`, in the groups the commands compose: [`ExperimentArgs`] (also
//! `abperf fleet run`'s), [`LocalArgs`] (this machine only) and [`KernelArgs`] (kernel variants,
//! with the VM settings of `crate::commands::vm::VmSettings`). What they mean is decided once,
//! in `run::plan`.

use crate::commands::DbArgs;
use crate::commands::vm::VmSettings;
use crate::design::Order;
use crate::runner::shell::ShellMode;
use std::path::PathBuf;

/// The options of an experiment that `abperf run` and `abperf fleet run` both take: its
/// variants, schedule, per-run commands, what is counted, and the store.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The ( +- x% ) figure is the standard error of the mean relative to the mean, as perf stat prints it."
)]
pub struct ExperimentArgs {
    /// Commands to compare: each one is a variant (exec'd directly, or through `sh -c` when it has
    /// shell syntax: see --shell); `@NAME` or
    /// `@NAME:K=V,...` runs built-in workload NAME (abperf workload list), taking the -L lists
    /// named after its parameters
    #[arg(value_name = "COMMAND")]
    pub commands: Vec<String>,
    /// Name of a variant (repeat, once per command, or once per variant)
    #[arg(short = 'n', long = "name", value_name = "NAME")]
    pub names: Vec<String>,
    /// Parameter list: substitutes {NAME} in the commands, --pre/--rewarm/--post/--setup/--cleanup
    #[arg(short = 'L', long = "parameter-list", value_name = "NAME=V1,V2,...")]
    pub params: Vec<String>,
    /// Kernel knob (sysfs/procfs/debugfs file): written, read back, verified, always restored
    #[arg(short = 'k', long = "knob", value_name = "PATH=V1,V2,...")]
    pub knobs: Vec<String>,
    /// Run order
    #[arg(long, value_enum, default_value_t = Order::Abba)]
    pub order: Order,
    /// Seed of the run order (default: random; always printed and stored)
    #[arg(long)]
    pub seed: Option<u64>,
    /// Timed runs per variant
    #[arg(
        short = 'r',
        long = "runs",
        visible_aliases = ["repeat", "max-runs"],
        default_value_t = 10
    )]
    pub runs: u32,
    /// Untimed warm-up runs per variant (stored, flagged, never analysed)
    #[arg(long, default_value_t = 1)]
    pub warmup: u32,
    /// Command run untimed before each run
    #[arg(long, visible_alias = "prepare", value_name = "CMD")]
    pub pre: Option<String>,
    /// Command run untimed before each run after the caches are dropped and --pre-read (and
    /// after --pre and --perturb-layout): re-warms what the timed run should find cached, e.g.
    /// seed 003's build of kernel/ once after drop_caches. Repeatable: run in order
    #[arg(long, value_name = "CMD")]
    pub rewarm: Vec<String>,
    /// Command run untimed after each run
    #[arg(long, value_name = "CMD")]
    pub post: Option<String>,
    /// Command run once each time the variant changes (after knob writes)
    #[arg(long, value_name = "CMD")]
    pub setup: Option<String>,
    /// Command run once at the end
    #[arg(long, value_name = "CMD")]
    pub cleanup: Option<String>,
    /// Split commands into words and exec them directly, never through `sh -c` (--shell none)
    #[arg(short = 'N', long = "no-shell", conflicts_with = "shell")]
    pub no_shell: bool,
    /// How commands start: auto (default) execs a command without shell syntax directly (split on
    /// blanks, looked up in PATH) and runs the others by `sh -c`; sh always wraps them in `sh -c`
    /// (whose start, ~1-2 ms for dash's extra fork, is then timed too); none is -N
    #[arg(long, value_enum, value_name = "MODE")]
    pub shell: Option<ShellMode>,
    /// Pin the workload (and pre/post) to these CPUs, e.g. 1 or 0-1
    #[arg(long, value_name = "CPUS")]
    pub pin: Option<String>,
    /// Kill a run's process group after S seconds and record it as timed out
    #[arg(long, value_name = "S")]
    pub timeout: Option<f64>,
    /// Record failing runs and go on instead of stopping
    #[arg(short = 'i', long = "ignore-failure")]
    pub ignore_failure: bool,
    /// When another process changes a knob during a run (that run is stored excluded): wait for
    /// the knob to hold abperf's value again, then go on, instead of stopping the experiment
    #[arg(long)]
    pub wait_moved_knob: bool,
    /// Count events per run: task-clock, page-faults, context-switches, cpu-migrations, cycles,
    /// instructions, dTLB-load-misses, ..., or tracepoints subsys:event (e.g. tlb:tlb_flush)
    #[arg(
        short = 'e',
        long = "event",
        value_delimiter = ',',
        value_name = "LIST"
    )]
    pub events: Vec<String>,
    /// An event this machine cannot count is an error instead of being skipped
    #[arg(long)]
    pub strict: bool,
    /// Show the workload's output (default: discarded)
    #[arg(long)]
    pub show_output: bool,
    /// Name of the experiment (default: the commands)
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Before each run (untimed): sync, then drop the page cache, dentries and inodes
    #[arg(long)]
    pub drop_caches: bool,
    /// Before each run (untimed): page-cache ballast of a random, seeded size up to MIB, so
    /// physical memory layout changes from run to run (Ingo Molnar's recipe); freed at the end
    #[arg(long, value_name = "MIB")]
    pub perturb_layout: Option<u64>,
    /// Continue a stopped experiment exactly where its schedule stands
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// With --resume: run the stored design although this machine did not approve it (changed
    /// in the store, or made by another user or machine); refused resumes print it: read it first
    /// (without --resume it has nothing to do)
    #[arg(long)]
    pub trust_stored_design: bool,
    /// Label the experiment (repeatable): what `abperf history` orders and names its points
    /// by, e.g. --label commit=$(git rev-parse --short HEAD) --label date=2026-11-27
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// The options of `abperf run` that act on this machine only (`fleet run` has none of them):
/// --tune, the page-cache controls that name local directories, the sequential stop, the
/// throwaway store, waiting for a knob, and the internal fleet share.
#[derive(Debug, clap::Args)]
pub struct LocalArgs {
    /// Apply the safe settings of `abperf doctor --fix` (governor, boost, THP, NUMA balancing,
    /// NMI watchdog, ...) for this experiment; originals are stored and restored at the end, on
    /// errors and on signals
    #[arg(long)]
    pub tune: bool,
    /// Before each run (untimed, after --drop-caches): read every file under DIR (relative to
    /// the copy with --tmpfs-copy)
    #[arg(long, value_name = "DIR")]
    pub pre_read: Option<PathBuf>,
    /// Copy DIR once to a private tmpfs and run everything there (working directory);
    /// unmounted and removed at the end
    #[arg(long, value_name = "DIR")]
    pub tmpfs_copy: Option<PathBuf>,
    /// Stop as soon as a valid sequential test decides: -r/--max-runs is the most runs per variant,
    /// looked at --looks times (O'Brien-Fleming boundaries on Welch's test of wall time against
    /// the first variant; the false-call rate stays at alpha 0.05)
    #[arg(long)]
    pub until_decided: bool,
    /// With --until-decided: how many looks (equally spaced)
    #[arg(
        long,
        default_value_t = 4,
        value_name = "K",
        requires = "until_decided"
    )]
    pub looks: usize,
    /// Keep nothing: the experiment lives in memory and is gone when abperf exits (a throwaway
    /// run; the same as --db :memory:)
    #[arg(long, conflicts_with_all = ["db", "resume"])]
    pub no_store: bool,
    /// Profile each variant in extra, untimed runs under `perf record -g` (the event: cycles
    /// where the CPU has a PMU, else cpu-clock; or EVENT), interleaved in the schedule's seeded
    /// order; `compare` then prints which symbols' shares changed, with intervals
    /// (docs/profile.md). With --kernel: inside each VM guest, under its kernel (cpu-clock unless
    /// EVENT; the kernel needs CONFIG_PERF_EVENTS); not yet with --boot-on-host nor in `fleet run`
    #[arg(
        long,
        value_name = "EVENT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    pub profile: Option<String>,
    /// With --profile: profiled runs per variant, spread evenly over its timed runs (at most one
    /// per timed run) [default: 5]
    #[arg(long, value_name = "N", requires = "profile")]
    pub profile_runs: Option<u32>,
    /// Wait for a knob another experiment holds (default: fail at once, naming the holder)
    #[arg(long)]
    pub wait: bool,
    /// (internal) run a fleet host's share of the schedule (abperf fleet run dispatches it)
    #[arg(long, hide = true, value_name = "FILE", requires = "lines")]
    pub fleet_share: Option<PathBuf>,
    /// (internal) with --fleet-share: the file every finished run is appended to
    #[arg(long, hide = true, value_name = "FILE", requires = "fleet_share")]
    pub lines: Option<PathBuf>,
}

/// `abperf run`: an experiment's options, this machine's, and the kernel-variant ones.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub exp: ExperimentArgs,
    #[command(flatten)]
    pub local: LocalArgs,
    #[command(flatten)]
    pub kernel: KernelArgs,
}

/// The kernel-variant options of `abperf run`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct KernelArgs {
    /// Boot this kernel in a VM and run there: a bzImage/vmlinuz, a Debian kernel package
    /// fetched into the kernel cache (e.g. linux-image-6.1.0-56-amd64-unsigned), or git:REV[+PATCH...]
    /// built from a git tree (see --kernel-tree, --kconfig; cached by content). Repeat it: each
    /// kernel is a variant
    #[arg(long = "kernel", value_name = "PATH|PACKAGE|git:REV")]
    pub kernels: Vec<String>,
    #[command(flatten)]
    pub source: crate::commands::kernel_git::SourceArgs,
    /// Modules directory of a --kernel (named after its release, with modules.dep; repeatable;
    /// default: found next to the kernel, in the package, or in /lib/modules)
    #[arg(long = "modules", value_name = "DIR")]
    pub modules: Vec<PathBuf>,
    /// Kernel parameters appended to the guest's command line, e.g. 'pti=on clearcpuid=invpcid'.
    /// Repeat it: each command line is a variant
    #[arg(long = "append", value_name = "ARGS", allow_hyphen_values = true)]
    pub appends: Vec<String>,
    /// Boots per variant (kernel variants), in seeded ABBA order; -r and --warmup count per boot
    /// [default: 6]
    #[arg(long, value_name = "N")]
    pub boots: Option<u32>,
    #[command(flatten)]
    pub vm: VmSettings,
    /// Keep each boot's console (kernel log; the workload's output with --show-output) in DIR
    #[arg(long, value_name = "DIR")]
    pub vm_console: Option<PathBuf>,
    /// Boot the kernels on THIS machine instead of in VMs: kexec (each boot loads the next
    /// planned kernel and command line with `kexec -l` and starts it; the boot loader is never
    /// changed) or reboot (a one-shot entry of a Boot Loader Interface loader such as
    /// systemd-boot, then a reboot through the firmware; the default entry is never changed).
    /// A systemd unit continues the loop at boot. Needs --reboot-this-machine
    #[arg(long, value_enum, value_name = "MODE")]
    pub boot_on_host: Option<BootOnHost>,
    /// Go ahead with --boot-on-host: it reboots this machine once per planned boot, then into
    /// its default kernel
    #[arg(long)]
    pub reboot_this_machine: bool,
    /// What continues a --boot-on-host loop at every boot: systemd (a unit abperf installs and
    /// removes) or manual (you run `abperf boot-loop resume` at boot yourself) [default: systemd]
    #[arg(long, value_enum, value_name = "HOOK")]
    pub boot_hook: Option<BootHook>,
    /// (internal) run a boot's share of the schedule inside the guest
    #[arg(long, hide = true, value_name = "FILE")]
    pub guest_share: Option<PathBuf>,
}

/// How `--boot-on-host` boots this machine's kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BootOnHost {
    Kexec,
    Reboot,
}

/// What continues a boot loop at every boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BootHook {
    Systemd,
    Manual,
}

impl KernelArgs {
    /// Whether any kernel-variant option was given.
    pub fn any(&self) -> bool {
        !self.kernels.is_empty() || !self.given().is_empty()
    }

    /// The kernel-variant options given besides --kernel, by name.
    pub fn given(&self) -> Vec<&'static str> {
        [
            ("--append", !self.appends.is_empty()),
            ("--modules", !self.modules.is_empty()),
            ("--boots", self.boots.is_some()),
            ("--accel", self.vm.accel.is_some()),
            ("--vm-cpus", self.vm.vm_cpus.is_some()),
            ("--vm-memory", self.vm.vm_memory.is_some()),
            ("--vm-pin", self.vm.vm_pin.is_some()),
            ("--boot-timeout", self.vm.boot_timeout.is_some()),
            ("--vm-console", self.vm_console.is_some()),
            ("--boot-on-host", self.boot_on_host.is_some()),
            ("--reboot-this-machine", self.reboot_this_machine),
            ("--boot-hook", self.boot_hook.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .chain(self.source.given())
        .collect()
    }
}
