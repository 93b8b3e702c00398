//! The two ways the loop leaves a boot for the next planned one. kexec: `kexec -l` loads the
//! planned kernel and command line and `systemctl kexec` starts it; the boot loader is not
//! touched. reboot: the planned variant's entry file (written when the loop started, [`bli`]) is
//! set as the loader's one-shot entry and the machine reboots through its firmware and boot
//! loader; the default entry is never changed. When the loop ends or is stopped nothing is left
//! armed (`kexec -u`; abperf's one-shot deleted) and reboot mode's entry files are removed.

use super::bli;
use super::design::{Loop, LoopDesign};
use super::efivar::Efivars;
use super::machine::{self, ThisBoot, planned_cmdline};
use anyhow::{Context, bail};
use std::path::Path;

/// The entry reboot mode boots variant `variant` through (None in kexec mode).
pub fn entry_of(lp: &Loop, variant: usize) -> Option<String> {
    lp.design
        .reboot
        .as_ref()
        .map(|_| bli::entry_id(lp.id, variant))
}

/// Make the planned boot of `variant` (its kernel, initramfs and command line) the one this
/// machine boots next.
pub fn arm(
    lp: &Loop,
    variant: usize,
    kernel: &str,
    initrd: Option<&str>,
    cmdline: &str,
    now: &ThisBoot,
) -> anyhow::Result<()> {
    let Some(r) = &lp.design.reboot else {
        return machine::kexec_load(Path::new(kernel), initrd.map(Path::new), cmdline);
    };
    let id = bli::entry_id(lp.id, variant);
    let vars = Efivars::system();
    // The loader lists the entries it found when this boot started; in the boot that wrote
    // them it ran before they existed.
    if now.boot_id != r.started_boot_id && bli::listed(&vars, &id) == Some(false) {
        bail!(
            "the boot loader did not find abperf's entry {id} when this boot started (it is not \
             in LoaderEntries): the planned boot cannot go through it"
        );
    }
    bli::set_oneshot(&vars, &id)
}

/// Start the armed boot: `systemctl kexec` (or `kexec -e`), or a reboot.
pub fn start(d: &LoopDesign) -> anyhow::Result<()> {
    match d.reboot {
        None => machine::kexec_execute(d.systemd_unit),
        Some(_) => machine::reboot(machine::systemd_running()),
    }
}

/// Leave nothing armed: no kernel loaded for kexec, no one-shot entry of abperf's set.
pub fn disarm(d: &LoopDesign) -> anyhow::Result<()> {
    match d.reboot {
        None => {
            // Nothing loaded, or no kexec at all: nothing to unload either way.
            let _ = machine::kexec_unload();
            Ok(())
        }
        Some(_) => bli::clear_oneshot(&Efivars::system()).map(drop),
    }
}

/// Write reboot mode's entry files, one per variant (nothing to do in kexec mode).
pub fn write_entries(lp: &Loop) -> anyhow::Result<()> {
    let Some(r) = &lp.design.reboot else {
        return Ok(());
    };
    for (i, v) in lp.variants.iter().enumerate() {
        let bc = v
            .boot
            .as_ref()
            .with_context(|| format!("variant '{}' boots no kernel", v.name))?;
        let files = r
            .files
            .get(&bc.kernel)
            .with_context(|| format!("{}: not located on the loader's partitions", bc.kernel))?;
        let id = bli::entry_id(lp.id, i);
        let title = format!("abperf experiment {}: '{}'", lp.id, v.name);
        let cmdline = planned_cmdline(&lp.design.base_cmdline, &bc.append);
        let text = bli::entry_text(&title, &bc.release, files, &cmdline);
        bli::write_entry(&bli::entry_path(files, &id), &text)?;
    }
    machine::sync();
    Ok(())
}

/// Remove reboot mode's entry files (those that exist); nothing to do in kexec mode.
pub fn remove_entries(lp: &Loop) -> anyhow::Result<()> {
    let Some(r) = &lp.design.reboot else {
        return Ok(());
    };
    for (i, v) in lp.variants.iter().enumerate() {
        let files = v.boot.as_ref().and_then(|bc| r.files.get(&bc.kernel));
        if let Some(files) = files {
            bli::remove_entry(&bli::entry_path(files, &bli::entry_id(lp.id, i)))?;
        }
    }
    machine::sync();
    Ok(())
}

/// What the loop leaves behind on the way out, whatever happens: nothing armed, no entry file.
/// Every step is tried; the first error is returned.
pub fn clean_up(lp: &Loop) -> anyhow::Result<()> {
    let armed = disarm(&lp.design);
    let entries = remove_entries(lp);
    armed.and(entries)
}
