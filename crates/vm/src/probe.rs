//! Is KVM usable for kernel variants? `/dev/kvm` and the KVM_CREATE_VM / KVM_CREATE_VCPU ioctls
//! are necessary but not enough (in some nested setups they succeed and a Linux guest then hangs
//! in early boot), so the probe ends with a short real boot under `-accel kvm` and a timeout.

use super::engine::{Accel, Event, Exit, Vm, VmSpec};
use super::kernel::{cache_dir, cached_kernels};
use abperf_model::vm::{KvmProbe, Verdict, WHY};
use serde::{Deserialize, Serialize};
use std::os::unix::io::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

const FIX_TCG: &str = "use --accel tcg here (correct results, meaningless timings), and measure \
                       kernels with KVM on bare metal or on a host whose nested virtualisation \
                       works (kvm_intel/kvm_amd nested=1 on the host)";

const KVM_GET_API_VERSION: libc::c_ulong = 0xAE00;
const KVM_CREATE_VM: libc::c_ulong = 0xAE01;
const KVM_CREATE_VCPU: libc::c_ulong = 0xAE41;

fn probe(verdict: Verdict, finding: String, fix: Option<&str>) -> KvmProbe {
    KvmProbe {
        verdict,
        finding,
        why: WHY,
        fix: fix.map(str::to_string),
        kernel: None,
        boot_seconds: None,
    }
}

/// The KVM ioctls a VMM needs first; Err(finding, fix) when one fails.
fn ioctls() -> Result<(), (String, &'static str)> {
    let path = c"/dev/kvm";
    if !Path::new("/dev/kvm").exists() {
        return Err((
            "/dev/kvm does not exist (no hardware virtualisation exposed, or the kvm module is not loaded)"
                .into(),
            "load kvm_intel or kvm_amd (modprobe); in a virtual machine, enable nested \
             virtualisation on its host; meanwhile use --accel tcg (timings then say nothing \
             about hardware costs)",
        ));
    }
    // SAFETY: open with a NUL-terminated path.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err((
            format!("cannot open /dev/kvm read-write: {e}"),
            "run as root or add the user to the kvm group (usermod -aG kvm USER)",
        ));
    }
    // SAFETY: fd is a fresh descriptor we own.
    let kvm = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: KVM ioctls on our own descriptors, with integer arguments.
    let api = unsafe { libc::ioctl(kvm.as_raw_fd(), KVM_GET_API_VERSION, 0) };
    if api != 12 {
        return Err((
            format!("KVM_GET_API_VERSION returned {api}, expected 12"),
            "this kernel's KVM is not the stable API QEMU needs",
        ));
    }
    // SAFETY: as above.
    let vm = unsafe { libc::ioctl(kvm.as_raw_fd(), KVM_CREATE_VM, 0) };
    if vm < 0 {
        return Err((
            format!("KVM_CREATE_VM failed: {}", std::io::Error::last_os_error()),
            "another hypervisor may own the virtualisation extensions, or they are disabled in firmware",
        ));
    }
    // SAFETY: vm is a fresh descriptor we own.
    let vm = unsafe { OwnedFd::from_raw_fd(vm) };
    // SAFETY: as above.
    let vcpu = unsafe { libc::ioctl(vm.as_raw_fd(), KVM_CREATE_VCPU, 0) };
    if vcpu < 0 {
        return Err((
            format!(
                "KVM_CREATE_VCPU failed: {}",
                std::io::Error::last_os_error()
            ),
            "KVM cannot create a virtual CPU here; use --accel tcg",
        ));
    }
    // SAFETY: vcpu is a fresh descriptor we own.
    drop(unsafe { OwnedFd::from_raw_fd(vcpu) });
    Ok(())
}

/// A kernel for the test boot: `kernel` if given, else the first kernel in the cache.
fn probe_kernel(kernel: Option<&Path>) -> Option<(PathBuf, Option<PathBuf>)> {
    if let Some(k) = kernel {
        return Some((k.to_path_buf(), None));
    }
    let cache = cache_dir().ok()?;
    cached_kernels(&cache)
        .into_iter()
        .next()
        .map(|k| (k.vmlinuz, Some(k.modules)))
}

/// Probe KVM: the ioctls, then a boot of `kernel` (default: a cached kernel) under
/// `-accel kvm -cpu host` (then `-cpu max` if QEMU rejects `host`) that must start its command
/// within `timeout`.
pub fn kvm_usable(kernel: Option<&Path>, timeout: Duration) -> KvmProbe {
    if let Err((finding, fix)) = ioctls() {
        return probe(Verdict::Unusable, finding, Some(fix));
    }
    let Some((kernel, modules)) = probe_kernel(kernel) else {
        return probe(
            Verdict::Untested,
            "/dev/kvm works (KVM_CREATE_VM and KVM_CREATE_VCPU succeed), but no kernel is at \
             hand to test a boot"
                .into(),
            Some(
                "fetch one (`abperf vm fetch-kernel linux-image-amd64`) or give one \
                 (`abperf vm probe --kernel PATH`), then probe again",
            ),
        );
    };
    let mut last = None;
    for cpu in ["host", "max"] {
        let mut spec = VmSpec::new(&kernel, "true");
        spec.modules = modules.clone();
        spec.accel = Accel::Kvm;
        spec.cpu_model = Some(cpu.into());
        spec.cpus = 1;
        spec.memory_mib = 512;
        spec.boot_timeout = timeout;
        spec.cwd = PathBuf::from("/");
        let vm = match Vm::start(&spec) {
            Ok(vm) => vm,
            Err(e) => {
                let mut p = probe(
                    Verdict::Untested,
                    format!("/dev/kvm works, but the test boot could not start: {e:#}"),
                    Some(
                        "fix the error above (QEMU, busybox-static, the kernel), then probe again",
                    ),
                );
                p.kernel = Some(kernel);
                return p;
            }
        };
        let outcome = vm.wait_with(|_: &Event| {});
        let last_console = outcome
            .console_tail
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| format!("; the console's last line: {:?}", l.trim()))
            .unwrap_or_else(|| "; the console stayed empty".into());
        let mut p = match &outcome.exit {
            Exit::Command(_) => {
                let b = outcome.boot.as_ref();
                let mut p = probe(
                    Verdict::Usable,
                    format!(
                        "a Linux guest ({}) booted under KVM (-cpu {cpu}) and ran its command \
                         {:.1} s after QEMU started",
                        b.map(|b| b.release.as_str()).unwrap_or("?"),
                        b.map(|b| b.boot_seconds).unwrap_or(f64::NAN)
                    ),
                    None,
                );
                p.boot_seconds = b.map(|b| b.boot_seconds);
                p
            }
            Exit::BootTimeout(t) => probe(
                Verdict::Unusable,
                format!(
                    "/dev/kvm works (KVM_CREATE_VM and KVM_CREATE_VCPU succeed), but a Linux guest \
                     under QEMU -accel kvm -cpu {cpu} did not reach its command within {t:.0} s{last_console}"
                ),
                Some(FIX_TCG),
            ),
            Exit::QemuFailed(msg) => {
                last = Some(probe(
                    Verdict::Unusable,
                    format!("QEMU -accel kvm -cpu {cpu} failed: {}", msg.trim()),
                    Some(FIX_TCG),
                ));
                continue;
            }
            Exit::GuestError(msg) => probe(
                Verdict::Untested,
                format!("the test guest booted under KVM but could not set up: {msg}"),
                Some(
                    "use a kernel with 9p (Debian's generic linux-image-*-amd64), then probe again",
                ),
            ),
            Exit::Interrupted(sig) => probe(
                Verdict::Untested,
                format!(
                    "the test boot was interrupted ({})",
                    super::guard::signal_name(*sig)
                ),
                None,
            ),
            other => probe(
                Verdict::Unusable,
                format!(
                    "a Linux guest under QEMU -accel kvm -cpu {cpu} ended without running its \
                     command ({other:?}){last_console}"
                ),
                Some(FIX_TCG),
            ),
        };
        p.kernel = Some(kernel);
        return p;
    }
    let mut p = last.expect("the loop ran");
    p.kernel = Some(kernel);
    p
}

/// What a stored probe answer is valid for: this boot of the host (its boot id) and this QEMU
/// binary (path and modification time).
fn probe_key() -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let qemu = super::engine::find_qemu().ok()?;
    let mtime = std::fs::metadata(&qemu)
        .ok()?
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    Some(format!("{} {} {mtime}", boot.trim(), qemu.display()))
}

#[derive(Serialize, Deserialize)]
struct Stored {
    key: String,
    probe: KvmProbe,
}

fn stored_path() -> Option<PathBuf> {
    cache_dir().ok().map(|d| d.join(".kvm-probe.json"))
}

/// [`kvm_usable`], answered from the last probe of this host boot and QEMU binary when there is
/// one (a failing probe costs its whole timeout); a fresh answer that is usable or unusable is
/// stored for next time.
pub fn kvm_usable_cached(kernel: Option<&Path>, timeout: Duration) -> KvmProbe {
    let key = probe_key();
    let path = stored_path();
    if let (Some(k), Some(p)) = (&key, &path)
        && let Ok(text) = std::fs::read_to_string(p)
        && let Ok(st) = serde_json::from_str::<Stored>(&text)
        && &st.key == k
    {
        return st.probe;
    }
    let probe = kvm_usable(kernel, timeout);
    store(&probe);
    probe
}

/// Remember a probe's answer for [`kvm_usable_cached`] (not an untested one).
pub fn store(probe: &KvmProbe) {
    if probe.verdict == Verdict::Untested {
        return;
    }
    if let (Some(key), Some(p)) = (probe_key(), stored_path()) {
        let st = Stored {
            key,
            probe: probe.clone(),
        };
        if let Some(d) = p.parent() {
            let _ = std::fs::create_dir_all(d);
        }
        if let Ok(text) = serde_json::to_string_pretty(&st) {
            let tmp = p.with_extension("tmp");
            if std::fs::write(&tmp, text).is_ok() {
                let _ = std::fs::rename(&tmp, &p);
            }
        }
    }
}
