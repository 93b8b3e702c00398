//! `abperf vm`: fetch kernel images, probe KVM, and run a command in a booted kernel.

use crate::commands::positive_seconds;
use crate::report::{self, plain::PlainFormat as Format};
use crate::vm::{self, Accel, Event, Exit, Vm, VmSpec};
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct VmArgs {
    #[command(subcommand)]
    pub command: VmCommand,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AccelArg {
    /// KVM if `abperf vm probe` finds it usable, else TCG
    Auto,
    Kvm,
    Tcg,
}

/// The settings of the virtual machines a command boots, one set of names wherever kernels boot
/// in VMs (`run --kernel`, `vm run`); each command fills in the defaults shown.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct VmSettings {
    /// How the guests run: kvm, tcg (QEMU's emulator: timings say nothing about hardware
    /// costs), or auto (KVM when the probe finds it usable, else TCG: the last `abperf vm probe`
    /// of this host boot answers, else a probe runs, up to 30 s) [default: auto]
    #[arg(long, value_enum, value_name = "ACCEL")]
    pub accel: Option<AccelArg>,
    /// vCPUs of each guest [default: 2]
    #[arg(long, value_name = "N")]
    pub vm_cpus: Option<u32>,
    /// Memory of each guest in MiB [default: 1024]
    #[arg(long, value_name = "MIB")]
    pub vm_memory: Option<u64>,
    /// Host CPUs the VM (every QEMU thread) runs on, e.g. 1 or 0-1
    #[arg(long, value_name = "CPUS")]
    pub vm_pin: Option<String>,
    /// Seconds a boot may take until the command (abperf, in `run`) runs in the guest
    /// [default: 300]
    #[arg(long, value_name = "S")]
    pub boot_timeout: Option<f64>,
}

/// Guest vCPUs when `--vm-cpus` is not given.
pub const DEFAULT_VM_CPUS: u32 = 2;
/// Guest memory in MiB when `--vm-memory` is not given.
pub const DEFAULT_VM_MEMORY_MIB: u64 = 1024;
/// Seconds a boot may take when `--boot-timeout` is not given.
pub const DEFAULT_BOOT_TIMEOUT_S: f64 = 300.0;

impl VmSettings {
    /// `--vm-pin`'s CPUs, checked.
    pub fn host_cpus(&self) -> Result<Option<Vec<usize>>> {
        self.vm_pin
            .as_deref()
            .map(|l| {
                crate::runner::cpuset::CpuSet::parse(l)
                    .map(|c| c.cpus)
                    .map_err(|e| crate::error::usage(format!("--vm-pin: {e:#}")))
            })
            .transpose()
    }
}

#[derive(Debug, clap::Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum VmCommand {
    /// Download Debian kernel packages (apt-get download, no install), unpack them into the
    /// cache ($ABPERF_KERNEL_CACHE, else $XDG_CACHE_HOME/abperf/kernels, else
    /// ~/.cache/abperf/kernels) and index their modules; cached packages are not fetched again
    FetchKernel {
        /// e.g. linux-image-6.1.0-56-amd64-unsigned, or a metapackage such as linux-image-amd64
        #[arg(required = true, value_name = "PACKAGE")]
        packages: Vec<String>,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// List the kernels in the cache
    Kernels {
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Is KVM usable? The KVM ioctls, then a short boot under -accel kvm (the answer is kept
    /// for `vm run --accel auto` until the host reboots or QEMU changes)
    Probe {
        /// Kernel for the test boot (default: one from the cache)
        #[arg(long, value_name = "PATH")]
        kernel: Option<PathBuf>,
        /// Seconds the test boot may take to start its command
        #[arg(long, default_value_t = 30.0, value_name = "S")]
        timeout: f64,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Boot a kernel and run COMMAND in it (host root read-only, private overlay); lines the
    /// command writes to $ABPERF_VM_RESULTS are printed as they arrive. Exit status: the
    /// command's
    Run(RunVmArgs),
}

/// `abperf vm run`'s options; the VM settings are [`VmSettings`], whose names before they were
/// one group (`--cpus`, `--memory`) stay as hidden aliases for a release.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("vm_cpus", |a| a.alias("cpus")),
    mut_arg("vm_memory", |a| a.alias("memory"))
)]
pub struct RunVmArgs {
    /// Kernel image (bzImage/vmlinuz)
    #[arg(long, value_name = "PATH", required_unless_present = "package")]
    pub kernel: Option<PathBuf>,
    /// A Debian kernel package instead of --kernel (fetched into the cache if needed)
    #[arg(long, value_name = "PACKAGE", conflicts_with = "kernel")]
    pub package: Option<String>,
    /// The kernel's modules directory (default: found next to the kernel or in /lib/modules)
    #[arg(long, value_name = "DIR")]
    pub modules: Option<PathBuf>,
    /// Kernel parameters (after "console=ttyS0 panic=-1", and "no_timer_check" under TCG)
    #[arg(
        long,
        default_value = "",
        value_name = "ARGS",
        allow_hyphen_values = true
    )]
    pub append: String,
    #[command(flatten)]
    pub vm: VmSettings,
    /// QEMU -cpu model (default: max under TCG, host under KVM). Was --cpu, which elsewhere
    /// (micro) is a CPU number
    #[arg(long, value_name = "MODEL")]
    pub cpu_model: Option<String>,
    /// Seconds the whole VM may run
    #[arg(long, value_name = "S")]
    pub timeout: Option<f64>,
    /// Append the console (boot log, the command's stdout/stderr) to FILE
    #[arg(long, value_name = "FILE")]
    pub console: Option<PathBuf>,
    /// Copy the console to stderr as it arrives
    #[arg(long)]
    pub show_console: bool,
    /// text: result lines on stdout, the boot on stderr; json: one JSON object per event on
    /// stdout ({"event": "booted"|"line"|"console"|"finished", ...})
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Command run by /bin/sh -c in the guest, in the current directory
    #[arg(required = true, value_name = "COMMAND", trailing_var_arg = true)]
    pub command: Vec<String>,
}

pub fn run(args: VmArgs) -> Result<i32> {
    match args.command {
        VmCommand::FetchKernel { packages, format } => fetch(&packages, format),
        VmCommand::Kernels { format } => kernels(format),
        VmCommand::Probe {
            kernel,
            timeout,
            format,
        } => probe(kernel, timeout, format),
        VmCommand::Run(a) => run_vm(a),
    }
}

fn fetch(packages: &[String], format: Format) -> Result<i32> {
    let mut got = Vec::new();
    for p in packages {
        let k = vm::fetch_kernel(p)?;
        if format == Format::Text {
            print!("{}", format.render(&report::vm::Fetched(&k))?);
        }
        got.push(k);
    }
    if format == Format::Json {
        print!("{}", format.render(&report::vm::FetchedAll(&got))?);
    }
    Ok(0)
}

fn kernels(format: Format) -> Result<i32> {
    let cache = vm::cache_dir()?;
    let ks = vm::kernel::cached_kernels(&cache);
    let cached = report::vm::Cached {
        cache: &cache,
        kernels: &ks,
    };
    print!("{}", format.render(&cached)?);
    Ok(0)
}

fn probe(kernel: Option<PathBuf>, timeout: f64, format: Format) -> Result<i32> {
    let p = vm::kvm_usable(kernel.as_deref(), positive_seconds("--timeout", timeout)?);
    vm::probe::store(&p);
    print!("{}", format.render(&report::vm::Probe(&p))?);
    Ok(0)
}

fn run_vm(a: RunVmArgs) -> Result<i32> {
    let spec = spec_of(&a)?;
    let mut vm = Vm::start(&spec)?;
    let json = a.format == Format::Json;
    if json {
        emit(&serde_json::json!({"event": "started", "qemu_pid": vm.pid()}));
    } else {
        crate::error::stderr_line(&format!(
            "abperf vm: QEMU pid {} ({})",
            vm.pid(),
            spec.accel.as_str()
        ));
    }
    let o = events(&mut vm, &a, json);
    if json {
        emit(&serde_json::json!({"event": "finished", "outcome": o}));
    }
    exit_code(&o, json)
}

/// The VM to boot: the kernel (fetched when given as a package), its command and resources, and
/// the accelerator (`auto`: KVM when the probe finds it usable).
fn spec_of(a: &RunVmArgs) -> Result<VmSpec> {
    let (kernel, modules) = match (&a.kernel, &a.package) {
        (Some(k), _) => (k.clone(), a.modules.clone()),
        (None, Some(p)) => {
            let k = vm::fetch_kernel(p)?;
            (k.vmlinuz, a.modules.clone().or(Some(k.modules)))
        }
        (None, None) => {
            return Err(crate::error::usage(
                "expected --kernel PATH or --package NAME",
            ));
        }
    };
    let mut spec = VmSpec::new(kernel, a.command.join(" "));
    spec.modules = modules;
    spec.append = a.append.clone();
    spec.cpus = a.vm.vm_cpus.unwrap_or(DEFAULT_VM_CPUS);
    spec.memory_mib = a.vm.vm_memory.unwrap_or(DEFAULT_VM_MEMORY_MIB);
    spec.host_cpus = a.vm.host_cpus()?;
    spec.cpu_model = a.cpu_model.clone();
    spec.boot_timeout = positive_seconds(
        "--boot-timeout",
        a.vm.boot_timeout.unwrap_or(DEFAULT_BOOT_TIMEOUT_S),
    )?;
    spec.timeout = a
        .timeout
        .map(|t| positive_seconds("--timeout", t))
        .transpose()?;
    spec.console_log = a.console.clone();
    spec.console_events = a.show_console || a.format == Format::Json;
    spec.accel = match a.vm.accel.unwrap_or(AccelArg::Auto) {
        AccelArg::Kvm => Accel::Kvm,
        AccelArg::Tcg => Accel::Tcg,
        AccelArg::Auto => {
            let p = vm::kvm_usable_cached(Some(&spec.kernel), Duration::from_secs(30));
            if p.usable() {
                Accel::Kvm
            } else {
                crate::error::stderr_line(&format!("abperf vm: using TCG: {}", p.finding));
                Accel::Tcg
            }
        }
    };
    Ok(spec)
}

/// The VM's events as they come: progress on standard error, result lines on standard output
/// (every event as a JSON line with `--format json`); the outcome at the end.
fn events(vm: &mut Vm, a: &RunVmArgs, json: bool) -> vm::Outcome {
    let mut outcome = None;
    while let Some(ev) = vm.next_event() {
        match ev {
            Event::Booted(b) => {
                if json {
                    emit(&serde_json::json!({"event": "booted", "boot": b}));
                } else {
                    crate::error::stderr_line(&format!(
                        "abperf vm: booted {} under {} in {:.1} s; cmdline: {}",
                        b.release,
                        b.accel.as_str(),
                        b.boot_seconds,
                        b.cmdline
                    ));
                }
            }
            Event::Line(l) => {
                if json {
                    emit(&serde_json::json!({"event": "line", "line": l}));
                } else {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{l}");
                    let _ = out.flush();
                }
            }
            Event::Console(l) => {
                if a.show_console {
                    crate::error::stderr_line(&l);
                }
                if json {
                    emit(&serde_json::json!({"event": "console", "line": l}));
                }
            }
            Event::Finished(o) => outcome = Some(o),
        }
    }
    outcome.expect("a VM's events end with Finished")
}

/// The command's exit status, or an error saying why the VM ended without one (with the
/// console's last lines where they tell).
fn exit_code(o: &vm::Outcome, json: bool) -> Result<i32> {
    let tail = || {
        if o.console_tail.is_empty() {
            return "  (the console stayed empty)".to_string();
        }
        o.console_tail
            .iter()
            .rev()
            .take(15)
            .rev()
            .map(|l| format!("  | {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    match &o.exit {
        Exit::Command(code) => {
            if !json {
                crate::error::stderr_line(&format!(
                    "abperf vm: command exited with {code} after {:.1} s ({} result lines)",
                    o.seconds, o.lines
                ));
            }
            Ok(*code)
        }
        Exit::Interrupted(sig) => {
            crate::error::stderr_line(&format!(
                "abperf vm: interrupted by {}; the VM was killed",
                vm::guard::signal_name(*sig)
            ));
            Ok(128 + sig)
        }
        Exit::QemuFailed(msg) => anyhow::bail!("{msg}"),
        Exit::GuestError(msg) => anyhow::bail!("the guest could not set up: {msg}\n{}", tail()),
        Exit::BootTimeout(t) => {
            anyhow::bail!(
                "the command had not started {t:.0} s after QEMU started; console:\n{}",
                tail()
            )
        }
        Exit::Timeout(t) => anyhow::bail!("the VM ran longer than {t:.0} s and was killed"),
        Exit::GuestDied => anyhow::bail!(
            "the guest ended without the command's exit status (panic or crash); console:\n{}",
            tail()
        ),
        Exit::Killed => anyhow::bail!("the VM was killed"),
    }
}

fn emit(v: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}
