//! One boot: QEMU with the kernel, an initramfs abperf builds, the host's root shared read-only
//! over 9p under a tmpfs overlay, and a command run inside. Lines the command writes to
//! `$ABPERF_VM_RESULTS` (a virtio-serial port) reach the host as they are written.
//!
//! Channels, each a virtio-serial port or the serial console connected to a Unix socket the
//! host listens on (QEMU connects as a client at startup):
//! - `abperf.control`: init reports `release`, `cmdline`, `start`, `exit RC` (or `error MSG`);
//!   the host acknowledges `exit`/`error` so the guest powers off only once the host has it.
//! - `abperf.results`: the command's lines, delivered as [`Event::Line`].
//! - ttyS0 (the console): kernel messages and the command's stdout/stderr, kept as a tail for
//!   error messages, optionally written to a file or delivered as [`Event::Console`].

use super::guard;
use super::initramfs::{self, Contents};
use super::kernel::{ImageKind, find_modules_dir, find_program, image_kind};
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The path of the results port inside the guest (also in `$ABPERF_VM_RESULTS` there).
pub const RESULTS_PORT: &str = "/dev/virtio-ports/abperf.results";

/// The directory holding [`VmSpec::inputs`] inside the guest (also in `$ABPERF_VM_INPUT`).
pub const INPUT_DIR: &str = "/run/abperf/input";

/// Kernel parameters abperf itself puts before the caller's (the console for the boot log and
/// the command's output; reboot at once on a panic, which `-no-reboot` turns into QEMU's exit).
pub const BASE_CMDLINE: &str = "console=ttyS0 panic=-1";

/// Added under TCG: skip the boot-time check that the IO-APIC timer ticks. On a loaded host an
/// emulated CPU misses the check's deadline and the kernel panics ("IO-APIC + timer doesn't
/// work!" from `setup_IO_APIC`, seen here at load 9); the check has no effect after boot.
pub const TCG_CMDLINE: &str = "no_timer_check";

/// x86's COMMAND_LINE_SIZE, terminating NUL included.
const COMMAND_LINE_SIZE: usize = 2048;

/// How the guest's CPUs run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    /// Hardware virtualisation: timings mean something.
    Kvm,
    /// QEMU's binary translator: the machinery works, but timings say nothing about hardware
    /// costs (the TLB, caches and MSRs are emulated).
    Tcg,
}

impl Accel {
    pub fn as_str(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// What to boot and what to run.
#[derive(Debug, Clone)]
pub struct VmSpec {
    /// A bzImage/vmlinuz (or an ELF vmlinux).
    pub kernel: PathBuf,
    /// The kernel's modules directory (with modules.dep). None: looked up next to the kernel
    /// (`../lib/modules/RELEASE`, `lib/modules/RELEASE`) and in /lib/modules/RELEASE; not found
    /// means the kernel must have virtio PCI/console, 9p and overlayfs built in.
    pub modules: Option<PathBuf>,
    /// Kernel parameters after [`BASE_CMDLINE`] (and, under TCG, [`TCG_CMDLINE`]).
    pub append: String,
    pub cpus: u32,
    pub memory_mib: u64,
    pub accel: Accel,
    /// QEMU `-cpu` model; default `max` under TCG, `host` under KVM.
    pub cpu_model: Option<String>,
    /// Run by `/bin/sh -c` in the guest, in `cwd`, with `env` (plus `ABPERF_VM=1` and
    /// `ABPERF_VM_RESULTS`); stdin is /dev/null, stdout and stderr go to the console.
    pub command: String,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    /// From QEMU's start until the command starts; then the VM is killed.
    pub boot_timeout: Duration,
    /// From QEMU's start until the VM ends (None: no limit).
    pub timeout: Option<Duration>,
    /// Append the console (boot log, command output) to this file.
    pub console_log: Option<PathBuf>,
    /// Deliver console lines as [`Event::Console`] too.
    pub console_events: bool,
    /// Host CPUs QEMU (all its threads) may run on.
    pub host_cpus: Option<Vec<usize>>,
    /// Files (name, content) the command finds in [`INPUT_DIR`], e.g. its share of a schedule.
    pub inputs: Vec<(String, Vec<u8>)>,
}

impl VmSpec {
    /// Defaults: 2 vCPUs, 1 GiB, TCG, no extra parameters, the caller's cwd and PATH, 300 s to
    /// boot, no overall timeout.
    pub fn new(kernel: impl Into<PathBuf>, command: impl Into<String>) -> VmSpec {
        let mut env = Vec::new();
        for k in ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM"] {
            if let Ok(v) = std::env::var(k) {
                env.push((k.to_string(), v));
            }
        }
        VmSpec {
            kernel: kernel.into(),
            modules: None,
            append: String::new(),
            cpus: 2,
            memory_mib: 1024,
            accel: Accel::Tcg,
            cpu_model: None,
            command: command.into(),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            env,
            boot_timeout: Duration::from_secs(300),
            timeout: None,
            console_log: None,
            console_events: false,
            host_cpus: None,
            inputs: Vec::new(),
        }
    }

    /// The whole kernel command line the guest gets.
    pub fn cmdline(&self) -> String {
        let base = match self.accel {
            Accel::Kvm => BASE_CMDLINE.to_string(),
            Accel::Tcg => format!("{BASE_CMDLINE} {TCG_CMDLINE}"),
        };
        let a = self.append.trim();
        if a.is_empty() {
            base
        } else {
            format!("{base} {a}")
        }
    }
}

/// What one boot was, recorded when the command starts.
#[derive(Debug, Clone, Serialize)]
pub struct BootInfo {
    pub accel: Accel,
    pub kernel: PathBuf,
    pub modules: Option<PathBuf>,
    /// `uname -r` in the guest.
    pub release: String,
    /// `/proc/cmdline` in the guest.
    pub cmdline: String,
    /// Host wall-clock seconds from QEMU's start to the command's start.
    pub boot_seconds: f64,
    /// The guest's uptime when the command started.
    pub guest_uptime: f64,
    pub cpus: u32,
    pub memory_mib: u64,
    /// QEMU's `-cpu` model.
    pub cpu_model: String,
    /// Host CPUs QEMU was confined to (None: any).
    pub host_cpus: Option<Vec<usize>>,
    /// First line of `qemu-system-x86_64 --version`.
    pub qemu_version: String,
    pub qemu_pid: u32,
}

/// How a VM ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum Exit {
    /// The command ran and exited with this status (128+N: killed by signal N).
    Command(i32),
    /// The guest's init could not set up (a module, a mount): its message.
    GuestError(String),
    /// QEMU ended without the command's exit status (kernel panic, guest crash, QEMU killed from
    /// outside).
    GuestDied,
    /// QEMU failed before the guest came up: its exit status and stderr.
    QemuFailed(String),
    /// The command had not started within the boot timeout (seconds).
    BootTimeout(f64),
    /// The VM ran longer than the timeout (seconds).
    Timeout(f64),
    /// abperf received this signal (SIGINT, SIGTERM, SIGHUP) and killed the VM.
    Interrupted(i32),
    /// [`Vm::kill`] was called.
    Killed,
}

/// The end of a boot.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub exit: Exit,
    pub boot: Option<BootInfo>,
    /// Result lines delivered.
    pub lines: u64,
    /// Host seconds from QEMU's start to its end.
    pub seconds: f64,
    /// Guest uptime when the command exited.
    pub guest_uptime_at_exit: Option<f64>,
    /// Bytes the command wrote to the results port after its last newline.
    pub partial_line: Option<String>,
    /// The last console lines.
    pub console_tail: Vec<String>,
    /// QEMU's own stderr (warnings, errors).
    pub qemu_stderr: String,
    /// The QEMU command line.
    pub qemu_args: Vec<String>,
}

/// What a VM reports, in order: `Booted` once the command starts, `Line` for each line the
/// command writes to the results port, `Console` lines if asked for, and `Finished` last.
#[derive(Debug, Clone)]
pub enum Event {
    Booted(BootInfo),
    Line(String),
    Console(String),
    Finished(Outcome),
}

enum Port {
    Control,
    Results,
    Console,
}

enum Msg {
    Line(Port, String),
    Partial(String),
    Closed,
}

/// A running VM. Killed (its whole process group) and reaped on drop; also killed if abperf dies
/// (parent-death signal) or gets SIGINT/SIGTERM/SIGHUP.
pub struct Vm {
    child: Option<Child>,
    pid: u32,
    rx: Receiver<Msg>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
    dir: PathBuf,
    spec: VmSpec,
    modules: Option<PathBuf>,
    cpu_model: String,
    qemu_args: Vec<String>,
    started: Instant,
    console_file: Option<std::fs::File>,
    console_tail: VecDeque<String>,
    release: Option<String>,
    cmdline: Option<String>,
    boot: Option<BootInfo>,
    exit_code: Option<i32>,
    exit_uptime: Option<f64>,
    /// When the guest's `exit` (or `error`) control line arrived: the guest powers off next,
    /// and one that halts instead (no ACPI power-off) is killed [`POWER_OFF_GRACE`] later.
    ended_at: Option<Instant>,
    guest_error: Option<String>,
    lines: u64,
    partial: Option<String>,
    qemu_exited_at: Option<Instant>,
    pending: VecDeque<Event>,
    finished: bool,
}

const TAIL: usize = 60;

/// How long a guest has to power off after its `exit` line was acknowledged before abperf
/// stops QEMU itself: a kernel without ACPI power-off (or booted with `acpi=off`) halts and
/// would otherwise sit until the caller's timeout. The exit line means nothing is in flight.
const POWER_OFF_GRACE: Duration = Duration::from_secs(3);

fn check_spec(spec: &VmSpec) -> Result<()> {
    let usage = |m: String| abperf_model::error::usage(m);
    if spec.cpus == 0 || spec.cpus > 255 {
        return Err(usage(format!("VM cpus {}: expected 1 to 255", spec.cpus)));
    }
    if spec.memory_mib < 128 {
        return Err(usage(format!(
            "VM memory {} MiB: expected at least 128 MiB",
            spec.memory_mib
        )));
    }
    if spec.append.contains(['\n', '\0']) {
        return Err(usage(format!(
            "kernel parameters {:?}: expected one line",
            spec.append
        )));
    }
    let cmdline = spec.cmdline();
    if cmdline.len() >= COMMAND_LINE_SIZE {
        return Err(usage(format!(
            "kernel command line of {} bytes: x86 takes at most {} ({cmdline:?})",
            cmdline.len(),
            COMMAND_LINE_SIZE - 1
        )));
    }
    if spec.command.trim().is_empty() {
        return Err(usage(
            "VM command: expected a command to run in the guest".into(),
        ));
    }
    if !spec.cwd.is_absolute() {
        return Err(usage(format!(
            "VM working directory {}: expected an absolute path",
            spec.cwd.display()
        )));
    }
    for (k, _) in &spec.env {
        let ok = !k.is_empty()
            && !k.starts_with(|c: char| c.is_ascii_digit())
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(usage(format!(
                "environment variable name {k:?}: expected letters, digits and _"
            )));
        }
    }
    for (name, _) in &spec.inputs {
        let ok = !name.is_empty()
            && name != "."
            && name != ".."
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        if !ok {
            return Err(usage(format!(
                "VM input file name {name:?}: expected letters, digits, '.', '_' and '-'"
            )));
        }
    }
    if let Some(cpus) = &spec.host_cpus
        && (cpus.is_empty() || cpus.iter().any(|&c| c >= libc::CPU_SETSIZE as usize))
    {
        return Err(usage(format!(
            "host CPUs {cpus:?}: expected a non-empty list of CPU numbers"
        )));
    }
    Ok(())
}

/// QEMU option values: a comma is written twice.
fn opt_escape(p: &Path) -> String {
    p.to_string_lossy().replace(',', ",,")
}

/// The QEMU to run: `$ABPERF_QEMU`, else `qemu-system-x86_64` on PATH.
pub fn find_qemu() -> Result<PathBuf> {
    if let Some(q) = std::env::var_os("ABPERF_QEMU").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(q));
    }
    find_program("qemu-system-x86_64")
        .context("qemu-system-x86_64 not found: install it with `apt-get install qemu-system-x86`")
}

/// Remove the directories of boots whose abperf died without cleaning up (kill -9).
fn remove_stale_dirs(base: &Path) {
    let Ok(rd) = std::fs::read_dir(base) else {
        return;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("abperf-vm-"))
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        // Only a real directory of this user's (a symlink or another user's directory planted
        // in the shared temporary directory is left alone; remove_dir_all follows no symlink).
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let ours = std::fs::symlink_metadata(e.path()).is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_dir() && m.uid() == me
        });
        if ours && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// First line of `QEMU --version` (computed once per QEMU path).
fn qemu_version(qemu: &Path) -> String {
    static CACHE: std::sync::Mutex<Vec<(PathBuf, String)>> = std::sync::Mutex::new(Vec::new());
    let mut c = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, v)) = c.iter().find(|(p, _)| p == qemu) {
        return v.clone();
    }
    let v = Command::new(qemu)
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        })
        .unwrap_or_default();
    c.push((qemu.to_path_buf(), v.clone()));
    v
}

fn temp_dir() -> Result<PathBuf> {
    static N: AtomicU64 = AtomicU64::new(0);
    let base = std::env::temp_dir();
    remove_stale_dirs(&base);
    for _ in 0..100 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let d = base.join(format!(
            "abperf-vm-{}-{}-{nanos:x}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&d) {
            Ok(()) => return Ok(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e).with_context(|| format!("cannot create {}", d.display()));
            }
        }
    }
    bail!(
        "cannot create a temporary directory under {}",
        base.display()
    )
}

const NINEP_OPTS: &str = "trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose";

fn cmd_script(spec: &VmSpec) -> String {
    let q = |s: &str| shell_words::quote(s).into_owned();
    let mut s = String::from("# written by abperf for one boot\n");
    for (k, v) in &spec.env {
        s.push_str(&format!("export {k}={}\n", q(v)));
    }
    s.push_str("export ABPERF_VM=1\n");
    s.push_str(&format!("export ABPERF_VM_RESULTS={RESULTS_PORT}\n"));
    s.push_str(&format!("export ABPERF_VM_INPUT={INPUT_DIR}\n"));
    s.push_str(&format!(
        "cd {} || exit 126\n",
        q(&spec.cwd.to_string_lossy())
    ));
    s.push_str(&format!("exec /bin/sh -c {}\n", q(&spec.command)));
    s
}

/// Build the guest's initramfs (busybox, init's config, the command, the inputs) and write it
/// into `dir`; returns its path.
fn write_initrd(
    spec: &VmSpec,
    busybox: &Path,
    modules: Option<&Path>,
    dir: &Path,
) -> Result<PathBuf> {
    let config = format!(
        "ROOT_TAG=abperfroot\nROOT_OPTS={NINEP_OPTS}\nMODS_TAG={}\nMODS_OPTS={NINEP_OPTS}\n",
        if modules.is_some() { "abperfmods" } else { "" }
    );
    let cmd_sh = cmd_script(spec);
    let initrd = initramfs::build(&Contents {
        busybox,
        init: initramfs::INIT_SH,
        wanted_modules: initramfs::GUEST_MODULES,
        modules,
        config: &config,
        cmd_sh: &cmd_sh,
        inputs: &spec.inputs,
    })?;
    let initrd_path = dir.join("initrd.cpio");
    std::fs::write(&initrd_path, &initrd)
        .with_context(|| format!("cannot write {}", initrd_path.display()))?;
    Ok(initrd_path)
}

/// The console log of the spec, opened for appending (None: not kept).
fn open_console_log(spec: &VmSpec) -> Result<Option<std::fs::File>> {
    Ok(match &spec.console_log {
        Some(p) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("cannot open the console log {}", p.display()))?,
        ),
        None => None,
    })
}

/// The guest's CPU model: the spec's, else the host's under KVM and QEMU's "max" under TCG.
fn cpu_model(spec: &VmSpec) -> String {
    spec.cpu_model.clone().unwrap_or_else(|| {
        match spec.accel {
            Accel::Kvm => "host",
            Accel::Tcg => "max",
        }
        .into()
    })
}

/// QEMU's arguments: a bare PC with the kernel and initramfs, the host's root (and a modules
/// directory) over 9p read-only, and the control, results and console channels on the
/// `sockets` (in that order); no display, no monitor, no reboot.
fn qemu_args(
    spec: &VmSpec,
    cpu_model: &str,
    initrd_path: &Path,
    modules: Option<&Path>,
    sockets: [&Path; 3],
) -> Vec<String> {
    let [ctl_path, res_path, con_path] = sockets;
    let mut args: Vec<String> = vec![
        "-name".into(),
        "abperf-vm".into(),
        "-no-user-config".into(),
        "-nodefaults".into(),
        "-display".into(),
        "none".into(),
        "-no-reboot".into(),
        "-machine".into(),
        "pc".into(),
        "-accel".into(),
        // TCG with one host thread for all vCPUs: multi-threaded TCG (QEMU 7.2) let a
        // Debian 6.12 guest run into code another vCPU was patching at boot (RIP inside a
        // 2-byte NOP, "Fatal exception in interrupt"), once in about ten test suites.
        match spec.accel {
            Accel::Tcg => "tcg,thread=single",
            Accel::Kvm => "kvm",
        }
        .into(),
        "-cpu".into(),
        cpu_model.to_string(),
        "-smp".into(),
        spec.cpus.to_string(),
        "-m".into(),
        format!("{}M", spec.memory_mib),
        "-kernel".into(),
        spec.kernel.to_string_lossy().into_owned(),
        "-initrd".into(),
        initrd_path.to_string_lossy().into_owned(),
        "-append".into(),
        spec.cmdline(),
        "-fsdev".into(),
        "local,id=abperfroot,path=/,security_model=none,readonly=on,multidevs=remap".into(),
        "-device".into(),
        "virtio-9p-pci,fsdev=abperfroot,mount_tag=abperfroot".into(),
    ];
    if let Some(m) = modules {
        args.extend([
            "-fsdev".into(),
            format!(
                "local,id=abperfmods,path={},security_model=none,readonly=on",
                opt_escape(m)
            ),
            "-device".into(),
            "virtio-9p-pci,fsdev=abperfmods,mount_tag=abperfmods".into(),
        ]);
    }
    args.extend([
        "-device".into(),
        "virtio-serial-pci".into(),
        "-chardev".into(),
        format!("socket,id=abperfctl,path={}", opt_escape(ctl_path)),
        "-device".into(),
        "virtserialport,chardev=abperfctl,name=abperf.control".into(),
        "-chardev".into(),
        format!("socket,id=abperfres,path={}", opt_escape(res_path)),
        "-device".into(),
        "virtserialport,chardev=abperfres,name=abperf.results".into(),
        "-chardev".into(),
        format!("socket,id=abperfcon,path={}", opt_escape(con_path)),
        "-serial".into(),
        "chardev:abperfcon".into(),
        "-monitor".into(),
        "none".into(),
    ]);
    args
}

/// The QEMU command: `args`, stdin and stdout on /dev/null, stderr kept in `dir`, and pinned
/// to the spec's host CPUs (set between fork and exec).
fn qemu_command(spec: &VmSpec, qemu: &Path, args: &[String], dir: &Path) -> Result<Command> {
    let stderr_path = dir.join("qemu.stderr");
    let stderr = std::fs::File::create(&stderr_path)
        .with_context(|| format!("cannot create {}", stderr_path.display()))?;
    let mut cmd = Command::new(qemu);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    if let Some(cpus) = &spec.host_cpus {
        let mask = abperf_measure::affinity::Mask::of(cpus)?;
        // SAFETY: runs between fork and exec; Mask::apply is one system call, no allocation.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(move || mask.apply());
        }
    }
    Ok(cmd)
}

impl Vm {
    /// Boot `spec.kernel` and start `spec.command` in it. Returns once QEMU runs; follow the
    /// boot with [`Vm::next_event`] (or iterate).
    pub fn start(spec: &VmSpec) -> Result<Vm> {
        check_spec(spec)?;
        guard::install_watcher()?;
        let kind = image_kind(&spec.kernel)?;
        let modules = match &spec.modules {
            Some(m) => {
                if !m.join("modules.dep").is_file() {
                    return Err(abperf_model::error::usage(format!(
                        "modules directory {}: no modules.dep (run `depmod -b ROOT RELEASE`)",
                        m.display()
                    )));
                }
                if let ImageKind::BzImage {
                    release: Some(release),
                } = &kind
                    && m.canonicalize()
                        .unwrap_or_else(|_| m.clone())
                        .file_name()
                        .is_some_and(|n| n != release.as_str())
                {
                    return Err(abperf_model::error::usage(format!(
                        "modules directory {} does not belong to the kernel {} (release {release})",
                        m.display(),
                        spec.kernel.display()
                    )));
                }
                Some(m.clone())
            }
            None => match &kind {
                ImageKind::BzImage {
                    release: Some(release),
                } => match find_modules_dir(&spec.kernel, release) {
                    Some(m) => Some(m),
                    None => {
                        if let Some((dir, fix)) =
                            crate::kernel::unindexed_modules_dir(&spec.kernel, release)
                        {
                            return Err(abperf_model::error::usage(format!(
                                "modules directory {}: no modules.dep, so the guest could not \
                                 load virtio_console; build the index with `{fix}` (or give \
                                 --modules DIR)",
                                dir.display()
                            )));
                        }
                        None
                    }
                },
                _ => None,
            },
        };
        let qemu = find_qemu()?;
        let busybox = initramfs::find_busybox()?;
        let dir = temp_dir()?;
        match Self::launch(spec, &qemu, &busybox, modules, &dir) {
            Ok(vm) => Ok(vm),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(e)
            }
        }
    }

    /// Write the initramfs into `dir`, start QEMU on it with the guest's control, results and
    /// console channels as sockets in `dir`, and the thread that reads them.
    fn launch(
        spec: &VmSpec,
        qemu: &Path,
        busybox: &Path,
        modules: Option<PathBuf>,
        dir: &Path,
    ) -> Result<Vm> {
        let initrd_path = write_initrd(spec, busybox, modules.as_deref(), dir)?;
        let console_file = open_console_log(spec)?;
        let sock = |n: &str| -> Result<(PathBuf, UnixListener)> {
            let p = dir.join(n);
            let l = UnixListener::bind(&p)
                .with_context(|| format!("cannot listen on {}", p.display()))?;
            Ok((p, l))
        };
        let (ctl_path, ctl_l) = sock("ctl.sock")?;
        let (res_path, res_l) = sock("res.sock")?;
        let (con_path, con_l) = sock("con.sock")?;
        let cpu_model = cpu_model(spec);
        let args = qemu_args(
            spec,
            &cpu_model,
            &initrd_path,
            modules.as_deref(),
            [&ctl_path, &res_path, &con_path],
        );
        let cmd = qemu_command(spec, qemu, &args, dir)?;
        let started = Instant::now();
        let child =
            guard::spawn(cmd).with_context(|| format!("cannot start {}", qemu.display()))?;
        let pid = child.id();
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let reader = std::thread::Builder::new()
            .name("abperf-vm-reader".into())
            .spawn(move || reader(ctl_l, res_l, con_l, tx, stop2));
        let mut vm = Vm {
            child: Some(child),
            pid,
            rx,
            stop,
            reader: None,
            dir: dir.to_path_buf(),
            spec: spec.clone(),
            modules,
            cpu_model,
            qemu_args: std::iter::once(qemu.to_string_lossy().into_owned())
                .chain(args)
                .collect(),
            started,
            console_file,
            console_tail: VecDeque::new(),
            release: None,
            cmdline: None,
            boot: None,
            exit_code: None,
            exit_uptime: None,
            ended_at: None,
            guest_error: None,
            lines: 0,
            partial: None,
            qemu_exited_at: None,
            pending: VecDeque::new(),
            finished: false,
        };
        match reader {
            Ok(h) => vm.reader = Some(h),
            Err(e) => bail!("cannot start the VM reader thread: {e}"), // vm's Drop kills QEMU
        }
        Ok(vm)
    }

    /// QEMU's process id (also its process group).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The boot's record, once the command has started.
    pub fn boot(&self) -> Option<&BootInfo> {
        self.boot.as_ref()
    }

    /// The next event, waiting as long as it takes (timeouts of the spec apply). None after
    /// [`Event::Finished`].
    pub fn next_event(&mut self) -> Option<Event> {
        self.poll(None)
    }

    /// The next event if one comes within `wait`; None if none did (or after `Finished`).
    pub fn next_event_within(&mut self, wait: Duration) -> Option<Event> {
        self.poll(Some(Instant::now() + wait))
    }

    /// Kill the VM now. Lines it sent before are still delivered, then `Finished(Killed)`.
    pub fn kill(&mut self) {
        if !self.finished {
            self.finish(Some(Exit::Killed));
        }
    }

    /// Follow the VM to its end, calling `on_event` for each event before `Finished`.
    pub fn wait_with(mut self, mut on_event: impl FnMut(&Event)) -> Outcome {
        while let Some(ev) = self.next_event() {
            if let Event::Finished(o) = ev {
                return o;
            }
            on_event(&ev);
        }
        unreachable!("a VM's events end with Finished")
    }

    fn poll(&mut self, limit: Option<Instant>) -> Option<Event> {
        loop {
            if let Some(ev) = self.pending.pop_front() {
                return Some(ev);
            }
            if self.finished {
                return None;
            }
            let now = Instant::now();
            let since = now - self.started;
            if self.boot.is_none() && since >= self.spec.boot_timeout {
                let t = self.spec.boot_timeout.as_secs_f64();
                self.finish(Some(Exit::BootTimeout(t)));
                continue;
            }
            if let Some(t) = self.spec.timeout
                && since >= t
            {
                self.finish(Some(Exit::Timeout(t.as_secs_f64())));
                continue;
            }
            // QEMU gone but its sockets never connected (it failed at startup): no Closed comes.
            if let Some(at) = self.qemu_exited_at
                && now - at > Duration::from_secs(2)
            {
                self.finish(None);
                continue;
            }
            if let Some(at) = self.ended_at
                && now - at >= POWER_OFF_GRACE
            {
                // An exit code, when known, is what `finish` reports whatever the cause.
                let cause = self
                    .guest_error
                    .clone()
                    .map_or(Exit::Killed, Exit::GuestError);
                self.finish(Some(cause));
                continue;
            }
            if let Some(l) = limit
                && now >= l
            {
                return None;
            }
            let mut wake = now + Duration::from_millis(100);
            if self.boot.is_none() {
                wake = wake.min(self.started + self.spec.boot_timeout);
            }
            if let Some(t) = self.spec.timeout {
                wake = wake.min(self.started + t);
            }
            if let Some(l) = limit {
                wake = wake.min(l);
            }
            match self.rx.recv_timeout(wake.saturating_duration_since(now)) {
                Ok(Msg::Closed) | Err(RecvTimeoutError::Disconnected) => self.finish(None),
                Ok(m) => {
                    if let Some(ev) = self.on_msg(m) {
                        return Some(ev);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    if self.qemu_exited_at.is_none()
                        && let Some(c) = self.child.as_mut()
                        && matches!(c.try_wait(), Ok(Some(_)) | Err(_))
                    {
                        self.qemu_exited_at = Some(Instant::now());
                    }
                }
            }
        }
    }

    fn on_msg(&mut self, m: Msg) -> Option<Event> {
        match m {
            Msg::Line(Port::Results, l) => {
                self.lines += 1;
                Some(Event::Line(l))
            }
            Msg::Line(Port::Console, l) => {
                // init's errors before the control port exists (a module that does not load)
                // reach the host only on the console.
                if self.guest_error.is_none()
                    && let Some(e) = l.trim().strip_prefix("abperf-vm: error: ")
                {
                    self.guest_error = Some(e.to_string());
                }
                if let Some(f) = self.console_file.as_mut() {
                    let _ = writeln!(f, "{l}");
                }
                if self.console_tail.len() == TAIL {
                    self.console_tail.pop_front();
                }
                self.console_tail.push_back(l.clone());
                self.spec.console_events.then_some(Event::Console(l))
            }
            Msg::Line(Port::Control, l) => self.on_control(&l),
            Msg::Partial(p) => {
                self.partial = Some(p);
                None
            }
            Msg::Closed => None,
        }
    }

    fn on_control(&mut self, line: &str) -> Option<Event> {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let num = |s: &str| s.trim().parse::<f64>().ok();
        match word {
            "release" => self.release = Some(rest.trim().to_string()),
            "cmdline" => self.cmdline = Some(rest.trim().to_string()),
            "start" => {
                let info = BootInfo {
                    accel: self.spec.accel,
                    kernel: self.spec.kernel.clone(),
                    modules: self.modules.clone(),
                    release: self.release.clone().unwrap_or_default(),
                    cmdline: self.cmdline.clone().unwrap_or_default(),
                    boot_seconds: self.started.elapsed().as_secs_f64(),
                    guest_uptime: num(rest).unwrap_or(f64::NAN),
                    cpus: self.spec.cpus,
                    memory_mib: self.spec.memory_mib,
                    cpu_model: self.cpu_model.clone(),
                    host_cpus: self.spec.host_cpus.clone(),
                    qemu_version: qemu_version(Path::new(&self.qemu_args[0])),
                    qemu_pid: self.pid,
                };
                self.boot = Some(info.clone());
                return Some(Event::Booted(info));
            }
            "exit" => {
                let mut w = rest.split_whitespace();
                self.exit_code = w.next().and_then(|s| s.parse().ok());
                self.exit_uptime = w.next().and_then(num);
                self.ended_at = Some(Instant::now());
            }
            "error" => {
                self.guest_error = Some(rest.trim().to_string());
                self.ended_at = Some(Instant::now());
            }
            _ => {
                if self.console_tail.len() == TAIL {
                    self.console_tail.pop_front();
                }
                self.console_tail
                    .push_back(format!("abperf: unexpected control line {line:?}"));
            }
        }
        None
    }

    /// End the VM: kill QEMU (unless it is gone), reap it, drain what the reader still got, and
    /// queue the remaining events and `Finished`. `cause` None: QEMU ended by itself.
    fn finish(&mut self, cause: Option<Exit>) {
        if self.finished {
            return;
        }
        self.finished = true;
        let mut status: Option<ExitStatus> = None;
        if let Some(mut child) = self.child.take() {
            let pgid = self.pid as i32;
            if cause.is_some() {
                guard::kill_group(pgid);
            } else {
                // Closed sockets: QEMU is exiting; give it a moment before the kill.
                let until = Instant::now() + Duration::from_secs(5);
                while Instant::now() < until {
                    if let Ok(Some(_)) = child.try_wait() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                guard::kill_group(pgid);
            }
            guard::unregister(pgid);
            status = child.wait().ok();
        }
        let ended = self.started.elapsed().as_secs_f64();
        // The reader ends at EOF of every socket (QEMU is dead now), or when stopped while it
        // waits for a connection that never comes; data already in the sockets is read first.
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.reader.take() {
            let _ = h.join();
        }
        while let Ok(m) = self.rx.try_recv() {
            if let Some(ev) = self.on_msg(m) {
                self.pending.push_back(ev);
            }
        }
        let qemu_stderr = std::fs::read(self.dir.join("qemu.stderr"))
            .map(|b| String::from_utf8_lossy(&b[b.len().saturating_sub(16384)..]).into_owned())
            .unwrap_or_default();
        let exit = if let Some(code) = self.exit_code {
            Exit::Command(code)
        } else if let Some(c) = cause {
            c
        } else if let Some(sig) = guard::received() {
            Exit::Interrupted(sig)
        } else if let Some(e) = self.guest_error.clone() {
            Exit::GuestError(e)
        } else if self.boot.is_none()
            && self.release.is_none()
            && status.is_some_and(|s| !s.success())
        {
            Exit::QemuFailed(format!(
                "{} exited with {}: {}",
                self.qemu_args[0],
                status.map(|s| s.to_string()).unwrap_or_default(),
                qemu_stderr.trim()
            ))
        } else {
            Exit::GuestDied
        };
        let outcome = Outcome {
            exit,
            boot: self.boot.clone(),
            lines: self.lines,
            seconds: ended,
            guest_uptime_at_exit: self.exit_uptime,
            partial_line: self.partial.clone(),
            console_tail: self.console_tail.iter().cloned().collect(),
            qemu_stderr,
            qemu_args: self.qemu_args.clone(),
        };
        self.pending.push_back(Event::Finished(outcome));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Iterator for Vm {
    type Item = Event;
    fn next(&mut self) -> Option<Event> {
        self.next_event()
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        if !self.finished {
            self.finish(Some(Exit::Killed));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Wait for readability on `fds` (POLLIN; hang-ups count as readable) up to `ms`.
fn poll_in(fds: &[i32], ms: i32) -> Vec<bool> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: p is a valid array of pollfd of the given length.
    let n = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) };
    if n <= 0 {
        return vec![false; fds.len()];
    }
    p.iter().map(|x| x.revents != 0).collect()
}

/// Longest line kept; longer ones are split.
const MAX_LINE: usize = 16 << 20;

/// Accept QEMU's three connections, then forward complete lines (control first, so `start`
/// precedes the command's lines) until every socket is at EOF.
fn reader(
    ctl: UnixListener,
    res: UnixListener,
    con: UnixListener,
    tx: Sender<Msg>,
    stop: Arc<AtomicBool>,
) {
    let listeners = [ctl, res, con];
    let mut streams: [Option<UnixStream>; 3] = [None, None, None];
    for l in &listeners {
        let _ = l.set_nonblocking(true);
    }
    while streams.iter().any(Option::is_none) {
        if stop.load(Ordering::SeqCst) {
            let _ = tx.send(Msg::Closed);
            return;
        }
        let fds: Vec<i32> = listeners.iter().map(|l| l.as_raw_fd()).collect();
        let ready = poll_in(&fds, 100);
        for (i, l) in listeners.iter().enumerate() {
            if ready[i]
                && streams[i].is_none()
                && let Ok((s, _)) = l.accept()
            {
                let _ = s.set_nonblocking(false);
                streams[i] = Some(s);
            }
        }
    }
    drop(listeners);
    let streams: Vec<UnixStream> = streams.into_iter().map(Option::unwrap).collect();
    let mut bufs: [Vec<u8>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    let mut open = [true; 3];
    let mut chunk = vec![0u8; 65536];
    while open.iter().any(|&o| o) {
        let fds: Vec<i32> = streams
            .iter()
            .zip(open)
            .map(|(s, o)| if o { s.as_raw_fd() } else { -1 })
            .collect();
        let ready = poll_in(&fds, 100);
        if !ready.iter().any(|&r| r) {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            continue;
        }
        for i in 0..3 {
            if !(open[i] && ready[i]) {
                continue;
            }
            let n = match (&streams[i]).read(&mut chunk) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => 0,
            };
            if n == 0 {
                open[i] = false;
                let rest = std::mem::take(&mut bufs[i]);
                if !rest.is_empty() {
                    let text = String::from_utf8_lossy(&rest).into_owned();
                    let _ = tx.send(match i {
                        0 => Msg::Line(Port::Control, text),
                        1 => Msg::Partial(text),
                        _ => Msg::Line(Port::Console, text),
                    });
                }
                continue;
            }
            bufs[i].extend_from_slice(&chunk[..n]);
            while let Some(pos) = bufs[i].iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = bufs[i].drain(..=pos).collect();
                let mut text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
                if i != 1 && text.ends_with('\r') {
                    text.pop();
                }
                if i == 0 && (text.starts_with("exit ") || text.starts_with("error ")) {
                    let _ = (&streams[0]).write_all(b"ok\n");
                }
                let port = match i {
                    0 => Port::Control,
                    1 => Port::Results,
                    _ => Port::Console,
                };
                let _ = tx.send(Msg::Line(port, text));
            }
            if bufs[i].len() > MAX_LINE {
                let text = String::from_utf8_lossy(&std::mem::take(&mut bufs[i])).into_owned();
                let port = match i {
                    0 => Port::Control,
                    1 => Port::Results,
                    _ => Port::Console,
                };
                let _ = tx.send(Msg::Line(port, text));
            }
        }
    }
    let _ = tx.send(Msg::Closed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vm_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<Vm>();
        send::<Event>();
    }

    #[test]
    fn spec_errors_name_the_field() {
        let mut s = VmSpec::new("/nonexistent/vmlinuz", "true");
        s.cpus = 0;
        assert!(check_spec(&s).unwrap_err().to_string().contains("cpus 0"));
        s.cpus = 2;
        s.append = "a\nb".into();
        assert!(check_spec(&s).unwrap_err().to_string().contains("one line"));
        s.append = "x".repeat(3000);
        assert!(
            check_spec(&s)
                .unwrap_err()
                .to_string()
                .contains("at most 2047")
        );
        s.append = "pti=on".into();
        s.env.push(("BAD-NAME".into(), "1".into()));
        assert!(check_spec(&s).unwrap_err().to_string().contains("BAD-NAME"));
        s.env.pop();
        assert!(check_spec(&s).is_ok());
        assert_eq!(s.cmdline(), "console=ttyS0 panic=-1 no_timer_check pti=on");
        s.accel = Accel::Kvm;
        assert_eq!(s.cmdline(), "console=ttyS0 panic=-1 pti=on");
    }

    #[test]
    fn command_script_quotes_everything() {
        let mut s = VmSpec::new("/k", "echo 'a b' \"$X\"");
        s.env = vec![("X".into(), "it's".into())];
        s.cwd = PathBuf::from("/work/my dir");
        let sh = cmd_script(&s);
        assert!(sh.contains("export X='it'\\''s'\n"), "{sh}");
        assert!(sh.contains("cd '/work/my dir' || exit 126\n"), "{sh}");
        assert!(
            sh.contains("exec /bin/sh -c 'echo '\\''a b'\\'' \"$X\"'\n"),
            "{sh}"
        );
        // The script runs as written: check it with the host's shell.
        let out = Command::new("/bin/sh")
            .arg("-c")
            .arg(sh.replace("cd '/work/my dir'", "cd /"))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "a b it's\n");
    }
}
