//! This machine as the boot loop sees it: the boot it is in (`uname -r`, `/proc/cmdline`, the
//! kernel's boot id, uptime, the boot-loader entry it came from), the initramfs that goes with a
//! kernel image, and the ways it leaves a boot: `kexec -l` then `systemctl kexec` (or `kexec -e`
//! without systemd), and a reboot through the firmware and boot loader (into the default kernel,
//! or the one-shot entry reboot mode set). kexec never touches the boot loader, so any failure
//! (a hang, a power cut, a reset) brings the machine back to its default kernel.

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The boot this process runs in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThisBoot {
    pub release: String,
    pub cmdline: String,
    /// /proc/sys/kernel/random/boot_id: new at every boot, kexec included.
    pub boot_id: String,
    /// Seconds since the kernel started.
    pub uptime: f64,
    /// The boot-loader entry this boot came from, as a Boot Loader Interface loader says
    /// (`LoaderEntrySelected`; None: no such loader, or kexec'd boots of an older loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loader_entry: Option<String>,
}

impl ThisBoot {
    pub fn read() -> anyhow::Result<ThisBoot> {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .with_context(|| format!("cannot read {p}"))
        };
        Ok(ThisBoot {
            release: read("/proc/sys/kernel/osrelease")?,
            cmdline: read("/proc/cmdline")?,
            boot_id: read("/proc/sys/kernel/random/boot_id")?,
            uptime: uptime()?,
            loader_entry: super::efivar::Efivars::system().read_string("LoaderEntrySelected"),
        })
    }
}

/// Seconds since the kernel started (/proc/uptime).
pub fn uptime() -> anyhow::Result<f64> {
    let t = std::fs::read_to_string("/proc/uptime").context("cannot read /proc/uptime")?;
    t.split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .context("/proc/uptime: not a number of seconds")
}

/// Two command lines are the same boot parameters (whitespace aside).
pub fn same_cmdline(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

/// Is this boot's command line the planned one? The boot loader may put words of its own in
/// front (systemd-boot adds `initrd=PATH`, GRUB `BOOT_IMAGE=`): those are not compared.
pub fn is_planned_cmdline(now: &str, planned: &str) -> bool {
    same_cmdline(&base_cmdline(now), planned)
}

/// The parameters every loop boot keeps from the machine's own command line (root=, console=,
/// ...): all but what the boot loader adds about the image it loaded (BOOT_IMAGE=, initrd=).
pub fn base_cmdline(home: &str) -> String {
    home.split_whitespace()
        .filter(|w| !w.starts_with("BOOT_IMAGE=") && !w.starts_with("initrd="))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The command line of a loop boot: the machine's base parameters, then the variant's.
pub fn planned_cmdline(base: &str, append: &str) -> String {
    let a = append.trim();
    if a.is_empty() {
        base.to_string()
    } else if base.is_empty() {
        a.to_string()
    } else {
        format!("{base} {a}")
    }
}

/// The initramfs of a kernel image, by the distributions' naming beside it: Debian's
/// `initrd.img-RELEASE`, Fedora's `initramfs-RELEASE.img`, and kernel-install's `initrd` beside
/// its `linux` (on the ESP, `MACHINE-ID/RELEASE/`).
pub fn initrd_for(image: &Path, release: &str) -> Option<PathBuf> {
    let dir = image.parent()?;
    let install = image.file_name().is_some_and(|n| n == "linux");
    [
        format!("initrd.img-{release}"),
        format!("initramfs-{release}.img"),
    ]
    .into_iter()
    .chain(install.then(|| "initrd".to_string()))
    .map(|n| dir.join(n))
    .find(|p| p.is_file())
}

/// Refuse a store on a filesystem that a reboot empties (tmpfs, ramfs): the loop's state is the
/// store's.
pub fn refuse_volatile(store: &Path) -> anyhow::Result<()> {
    let dir = store.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .context("a store path with a NUL byte")?;
    // SAFETY: statfs(2) writes into the zeroed struct we own; the path is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Ok(()); // cannot tell: the store itself will say if it is unusable
    }
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    let t = st.f_type as i64;
    if t == TMPFS_MAGIC || t == RAMFS_MAGIC {
        bail!(
            "the store {} is on a filesystem a reboot empties (tmpfs): the boot loop keeps its \
             plan and runs there; give --db a path on a disk",
            store.display()
        );
    }
    Ok(())
}

/// Is systemd this machine's init (PID 1)?
pub fn systemd_running() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

/// The kexec program (kexec-tools).
pub fn find_kexec() -> anyhow::Result<PathBuf> {
    abperf_vm::kernel::find_program("kexec")
        .context("kexec not found: the boot loop needs kexec-tools (`apt-get install kexec-tools`)")
}

fn run(cmd: &mut Command, what: &str) -> anyhow::Result<()> {
    abperf_vm::kernel::run_tool(cmd, what).map(drop)
}

/// `kexec -l IMAGE [--initrd=INITRD] --append=CMDLINE`: the next boot, loaded, not started.
pub fn kexec_load(image: &Path, initrd: Option<&Path>, cmdline: &str) -> anyhow::Result<()> {
    let mut c = Command::new(find_kexec()?);
    c.arg("-l").arg(image);
    if let Some(i) = initrd {
        c.arg(format!("--initrd={}", i.display()));
    }
    c.arg(format!("--append={cmdline}"));
    run(&mut c, &format!("kexec -l {}", image.display()))
}

/// Unload a loaded kernel (`kexec -u`), so that nothing kexecs by accident after the loop.
pub fn kexec_unload() -> anyhow::Result<()> {
    run(Command::new(find_kexec()?).arg("-u"), "kexec -u")
}

/// Everything written so far reaches the disks.
pub fn sync() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// Start the loaded kernel: `systemctl kexec` (a clean shutdown first) under systemd, else
/// `kexec -e` after a sync. Returns only if that did not happen.
pub fn kexec_execute(systemd: bool) -> anyhow::Result<()> {
    sync();
    if systemd {
        run(
            Command::new("systemctl").args(["--no-block", "kexec"]),
            "systemctl kexec",
        )
    } else {
        run(Command::new(find_kexec()?).arg("-e"), "kexec -e")?;
        bail!("kexec -e returned: no kernel was loaded")
    }
}

/// Reboot through the firmware and boot loader (its default kernel, or a one-shot entry):
/// `systemctl reboot` under systemd, else reboot(2) after a sync.
pub fn reboot(systemd: bool) -> anyhow::Result<()> {
    sync();
    if systemd {
        return run(
            Command::new("systemctl").args(["--no-block", "reboot"]),
            "systemctl reboot",
        );
    }
    // SAFETY: reboot(2) with a constant command; on success it does not return.
    let rc = unsafe { libc::reboot(libc::RB_AUTOBOOT) };
    bail!(
        "reboot(2) failed ({rc}): {}",
        std::io::Error::last_os_error()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_keep_the_machines_parameters_and_add_the_variants() {
        let home = "BOOT_IMAGE=/vmlinuz-6.1 root=UUID=abc ro initrd=/initrd.img quiet";
        let base = base_cmdline(home);
        assert_eq!(base, "root=UUID=abc ro quiet");
        assert_eq!(
            planned_cmdline(&base, " pti=on clearcpuid=invpcid "),
            "root=UUID=abc ro quiet pti=on clearcpuid=invpcid"
        );
        assert_eq!(planned_cmdline(&base, ""), base);
        assert_eq!(planned_cmdline("", "nopti"), "nopti");
        assert!(same_cmdline("a  b\n", "a b"));
        assert!(is_planned_cmdline(
            r"initrd=\k\initrd.img-6.1 root=UUID=abc ro quiet",
            &base
        ));
        assert!(!is_planned_cmdline("root=UUID=abc ro", &base));
        assert!(!same_cmdline("a b", "a b c"));
    }

    #[test]
    fn initrd_beside_the_image_by_distribution_naming() {
        let d = tempfile::tempdir().unwrap();
        let image = d.path().join("vmlinuz-6.1.0-56-amd64");
        std::fs::write(&image, "x").unwrap();
        assert_eq!(initrd_for(&image, "6.1.0-56-amd64"), None);
        let fedora = d.path().join("initramfs-6.1.0-56-amd64.img");
        std::fs::write(&fedora, "x").unwrap();
        assert_eq!(initrd_for(&image, "6.1.0-56-amd64"), Some(fedora));
        let debian = d.path().join("initrd.img-6.1.0-56-amd64");
        std::fs::write(&debian, "x").unwrap();
        assert_eq!(initrd_for(&image, "6.1.0-56-amd64"), Some(debian));
        let linux = d.path().join("linux");
        std::fs::write(&linux, "x").unwrap();
        assert_eq!(initrd_for(&linux, "6.2"), None);
        std::fs::write(d.path().join("initrd"), "x").unwrap();
        assert_eq!(initrd_for(&linux, "6.2"), Some(d.path().join("initrd")));
    }

    #[test]
    fn this_boot_is_read_from_proc() {
        let b = ThisBoot::read().unwrap();
        assert!(!b.release.is_empty() && b.boot_id.len() == 36, "{b:?}");
        assert!(b.uptime > 0.0);
    }
}
