//! `abperf doctor`'s `boot_loop` check: can this machine run `run --boot-on-host kexec`? The
//! kernel must have kexec (`/proc/sys/kernel/kexec_load_disabled` exists) and allow it (that
//! sysctl 0, no lockdown, which refuses kexec_load), kexec-tools must be installed, and systemd
//! must be the init for the unit to continue the loop. Each missing piece comes with its fix.

use crate::doctor::sys::Sys;
use crate::doctor::{Check, Status};
use std::path::Path;

const WHY: &str = "`run --boot-on-host kexec` boots the kernel variants on this machine itself \
                   (kexec between them), for questions a VM cannot answer: the hardware's own \
                   costs";

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
    let mut blockers: Vec<String> = Vec::new();
    let mut fixes: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    match sys.read("/proc/sys/kernel/kexec_load_disabled").as_deref() {
        None => {
            blockers
                .push("this kernel has no kexec (no /proc/sys/kernel/kexec_load_disabled)".into());
            fixes.push("boot a kernel built with CONFIG_KEXEC (distribution kernels are)".into());
        }
        Some("1") => {
            blockers.push("kexec is disabled (kernel.kexec_load_disabled = 1)".into());
            fixes.push(
                "the sysctl stays 1 until reboot: remove what sets it (/etc/sysctl.d) and reboot"
                    .into(),
            );
        }
        Some(_) => {}
    }
    if let Some(mode) = lockdown(sys).filter(|m| m != "none") {
        blockers.push(format!(
            "the kernel is locked down ({mode}): kexec_load is refused"
        ));
        fixes.push("turn Secure Boot off in the firmware (lockdown follows it)".into());
    }
    if std::fs::read(sys.path(SECURE_BOOT)).is_ok_and(|b| b.last() == Some(&1)) {
        notes.push("Secure Boot is on".into());
    }
    match kexec {
        Some(p) => notes.push(format!("kexec is {}", p.display())),
        None => {
            blockers.push("kexec-tools is not installed".into());
            fixes.push("apt-get install kexec-tools".into());
        }
    }
    let systemd = sys.exists("/run/systemd/system");
    if systemd {
        notes.push("systemd runs the loop's unit at boot".into());
    } else {
        notes.push(
            "systemd is not the init: the loop needs --boot-hook manual (you run `abperf \
             boot-loop resume` at every boot)"
                .into(),
        );
    }
    if sys
        .read("/etc/default/kexec")
        .is_some_and(|t| t.lines().any(|l| l.trim() == "LOAD_KEXEC=true"))
    {
        notes.push(
            "kexec-tools' LOAD_KEXEC=true makes every reboot a kexec into /vmlinuz, the end of \
             the loop included (set LOAD_KEXEC=false in /etc/default/kexec to go through the \
             firmware and boot loader)"
                .into(),
        );
    }
    let (status, finding) = if !blockers.is_empty() {
        (
            Status::Warn,
            format!(
                "cannot run a boot loop: {}; {}",
                blockers.join("; "),
                notes.join("; ")
            ),
        )
    } else if !systemd {
        (Status::Info, format!("kexec usable; {}", notes.join("; ")))
    } else {
        (Status::Ok, format!("ready: {}", notes.join("; ")))
    };
    Check {
        name: "boot_loop",
        status,
        finding,
        why: WHY,
        fix: (!fixes.is_empty()).then(|| fixes.join("; ")),
    }
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
}
