//! `abperf doctor`'s `boot_loop` check: can this machine run `run --boot-on-host kexec` or
//! `reboot`? kexec: the kernel must have kexec (`/proc/sys/kernel/kexec_load_disabled` exists)
//! and allow it (that sysctl 0, no lockdown, which refuses kexec_load), and kexec-tools must be
//! installed. reboot: a Boot Loader Interface loader that takes one-shot entries (LoaderInfo,
//! LoaderFeatures in efivarfs; GRUB is not supported), and reboots not turned into kexecs.
//! systemd must be the init for the unit to continue the loop. Each missing piece comes with its
//! fix.

use super::bli;
use super::efivar::{EFIVARS, Efivars};
use crate::doctor::sys::Sys;
use crate::doctor::{Check, Status};
use std::path::Path;

const WHY: &str = "`run --boot-on-host kexec|reboot` boots the kernel variants on this machine \
                   itself (kexec between them, or one-shot boot-loader entries and reboots), for \
                   questions a VM cannot answer: the hardware's own costs";

/// The Secure Boot variable of UEFI firmware.
const SECURE_BOOT: &str =
    "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0ffffffffff";

/// The lockdown mode the kernel runs in (the bracketed word), None without the interface.
fn lockdown(sys: &Sys) -> Option<String> {
    let s = sys.read("/sys/kernel/security/lockdown")?;
    let start = s.find('[')?;
    let end = s[start..].find(']')? + start;
    Some(s[start + 1..end].to_string())
}

/// The check, given where kexec-tools' `kexec` is (None: not installed).
pub fn check(sys: &Sys, kexec: Option<&Path>) -> Check {
    let mut k = kexec_part(sys, kexec);
    let reboot = reboot_part(sys);
    let systemd = sys.exists("/run/systemd/system");
    let mut notes = std::mem::take(&mut k.notes);
    if systemd {
        notes.push("systemd runs the loop's unit at boot".into());
    } else {
        notes.push(
            "systemd is not the init: the loop needs --boot-hook manual (you run `abperf \
             boot-loop resume` at every boot)"
                .into(),
        );
    }
    if load_kexec(sys) {
        notes.push(
            "kexec-tools' LOAD_KEXEC=true makes every reboot a kexec into /vmlinuz, the end of \
             the loop included (set LOAD_KEXEC=false in /etc/default/kexec to go through the \
             firmware and boot loader)"
                .into(),
        );
    }
    notes.push(match &reboot {
        Ok(info) => format!("--boot-on-host reboot: ready ({info}, one-shot entries)"),
        Err(why) => format!("--boot-on-host reboot: not possible: {why}"),
    });
    let kexec_ok = k.blockers.is_empty();
    let (status, finding) = verdict(&k.blockers, reboot.is_ok(), systemd, &notes);
    if reboot.is_err() && !kexec_ok {
        k.fixes.push(
            "or boot through a Boot Loader Interface loader with one-shot entries (systemd-boot: \
             bootctl install) for --boot-on-host reboot"
                .into(),
        );
    }
    Check {
        name: "boot_loop",
        status,
        finding,
        why: WHY,
        fix: (!kexec_ok && reboot.is_err()).then(|| k.fixes.join("; ")),
    }
}

/// The status and finding: a warning when neither mode can run.
fn verdict(
    kexec_blockers: &[String],
    reboot_ok: bool,
    systemd: bool,
    notes: &[String],
) -> (Status, String) {
    let notes = notes.join("; ");
    let blockers = kexec_blockers.join("; ");
    match (kexec_blockers.is_empty(), reboot_ok, systemd) {
        (false, false, _) => (
            Status::Warn,
            format!("cannot run a boot loop: {blockers}; {notes}"),
        ),
        (false, true, sd) => (
            if sd { Status::Ok } else { Status::Info },
            format!(
                "ready for reboot mode only: --boot-on-host kexec: not possible: {blockers}; \
                 {notes}"
            ),
        ),
        (true, _, false) => (Status::Info, format!("kexec usable; {notes}")),
        (true, _, true) => (Status::Ok, format!("ready: {notes}")),
    }
}

/// What stands in kexec mode's way, with the fixes, and what to know.
#[derive(Default)]
struct Part {
    blockers: Vec<String>,
    fixes: Vec<String>,
    notes: Vec<String>,
}

fn kexec_part(sys: &Sys, kexec: Option<&Path>) -> Part {
    let mut p = Part::default();
    match sys.read("/proc/sys/kernel/kexec_load_disabled").as_deref() {
        None => {
            p.blockers
                .push("this kernel has no kexec (no /proc/sys/kernel/kexec_load_disabled)".into());
            p.fixes
                .push("boot a kernel built with CONFIG_KEXEC (distribution kernels are)".into());
        }
        Some("1") => {
            p.blockers
                .push("kexec is disabled (kernel.kexec_load_disabled = 1)".into());
            p.fixes.push(
                "the sysctl stays 1 until reboot: remove what sets it (/etc/sysctl.d) and reboot"
                    .into(),
            );
        }
        Some(_) => {}
    }
    if let Some(mode) = lockdown(sys).filter(|m| m != "none") {
        p.blockers.push(format!(
            "the kernel is locked down ({mode}): kexec_load is refused"
        ));
        p.fixes
            .push("turn Secure Boot off in the firmware (lockdown follows it)".into());
    }
    if std::fs::read(sys.path(SECURE_BOOT)).is_ok_and(|b| b.last() == Some(&1)) {
        p.notes.push("Secure Boot is on".into());
    }
    match kexec {
        Some(path) => p.notes.push(format!("kexec is {}", path.display())),
        None => {
            p.blockers.push("kexec-tools is not installed".into());
            p.fixes.push("apt-get install kexec-tools".into());
        }
    }
    p
}

fn load_kexec(sys: &Sys) -> bool {
    sys.read("/etc/default/kexec")
        .is_some_and(|t| t.lines().any(|l| l.trim() == "LOAD_KEXEC=true"))
}

/// Reboot mode: the loader (LoaderInfo) when it takes one-shot entries, else why not.
fn reboot_part(sys: &Sys) -> Result<String, String> {
    let vars = Efivars::at(&sys.path(EFIVARS));
    let grub = sys.exists("/boot/grub/grub.cfg") || sys.exists("/boot/grub2/grub.cfg");
    let info = bli::loader(&vars, grub)?;
    if load_kexec(sys) {
        return Err(format!(
            "{info} is ready, but LOAD_KEXEC=true makes reboots kexecs past it"
        ));
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::sys::put;

    #[test]
    fn ready_with_kexec_allowed_and_systemd() {
        let d = tempfile::tempdir().unwrap();
        put(d.path(), "/proc/sys/kernel/kexec_load_disabled", "0\n");
        put(
            d.path(),
            "/sys/kernel/security/lockdown",
            "[none] integrity confidentiality\n",
        );
        std::fs::create_dir_all(d.path().join("run/systemd/system")).unwrap();
        let c = check(&Sys::at(d.path()), Some(Path::new("/usr/sbin/kexec")));
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert!(
            c.finding.starts_with("ready: kexec is /usr/sbin/kexec"),
            "{c:?}"
        );
        assert_eq!(c.fix, None);
    }

    #[test]
    fn every_blocker_is_named_with_its_fix() {
        let d = tempfile::tempdir().unwrap();
        let c = check(&Sys::at(d.path()), None);
        assert_eq!(c.status, Status::Warn);
        assert!(c.finding.contains("this kernel has no kexec"), "{c:?}");
        assert!(c.finding.contains("kexec-tools is not installed"), "{c:?}");
        assert!(c.finding.contains("--boot-hook manual"), "{c:?}");
        let fix = c.fix.unwrap();
        assert!(fix.contains("CONFIG_KEXEC") && fix.contains("apt-get install kexec-tools"));

        put(d.path(), "/proc/sys/kernel/kexec_load_disabled", "1\n");
        put(
            d.path(),
            "/sys/kernel/security/lockdown",
            "none [integrity] confidentiality\n",
        );
        put(d.path(), "/etc/default/kexec", "LOAD_KEXEC=true\n");
        let c = check(&Sys::at(d.path()), Some(Path::new("/sbin/kexec")));
        assert_eq!(c.status, Status::Warn);
        assert!(c.finding.contains("kexec_load_disabled = 1"), "{c:?}");
        assert!(c.finding.contains("locked down (integrity)"), "{c:?}");
        assert!(c.finding.contains("LOAD_KEXEC=true"), "{c:?}");
        assert!(c.fix.unwrap().contains("Secure Boot off"));
    }

    #[test]
    fn without_systemd_the_loop_is_possible_by_hand() {
        let d = tempfile::tempdir().unwrap();
        put(d.path(), "/proc/sys/kernel/kexec_load_disabled", "0\n");
        let c = check(&Sys::at(d.path()), Some(Path::new("/sbin/kexec")));
        assert_eq!(c.status, Status::Info, "{c:?}");
        assert!(c.finding.contains("--boot-hook manual"), "{c:?}");
    }

    fn loader_var(root: &Path, name: &str, value: &[u8]) {
        let dir = root.join(EFIVARS.trim_start_matches('/'));
        std::fs::create_dir_all(&dir).unwrap();
        let mut b = vec![6, 0, 0, 0];
        b.extend(value);
        std::fs::write(
            dir.join(format!("{name}-{}", super::super::efivar::LOADER_GUID)),
            b,
        )
        .unwrap();
    }

    #[test]
    fn reboot_mode_needs_a_loader_with_one_shot_entries() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("run/systemd/system")).unwrap();
        put(d.path(), "/boot/grub/grub.cfg", "menuentry\n");
        let c = check(&Sys::at(d.path()), None);
        assert_eq!(c.status, Status::Warn, "{c:?}");
        assert!(
            c.finding
                .contains("--boot-on-host reboot: not possible: no EFI variables"),
            "{c:?}"
        );
        assert!(
            c.finding.contains("GRUB (grub-reboot) is not supported"),
            "{c:?}"
        );
        assert!(c.fix.unwrap().contains("bootctl install"));
        let info: Vec<u8> = "systemd-boot 252"
            .encode_utf16()
            .chain([0])
            .flat_map(|u| u.to_le_bytes())
            .collect();
        loader_var(d.path(), "LoaderInfo", &info);
        loader_var(d.path(), "LoaderFeatures", &(1u64 << 3).to_le_bytes());
        let c = check(&Sys::at(d.path()), None);
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert!(c.finding.starts_with("ready for reboot mode only"), "{c:?}");
        assert!(
            c.finding
                .contains("--boot-on-host reboot: ready (systemd-boot 252, one-shot entries)"),
            "{c:?}"
        );
        assert_eq!(c.fix, None);
        put(d.path(), "/etc/default/kexec", "LOAD_KEXEC=true\n");
        let c = check(&Sys::at(d.path()), None);
        assert_eq!(c.status, Status::Warn, "{c:?}");
        assert!(c.finding.contains("makes reboots kexecs past it"), "{c:?}");
    }
}
