//! Reboot mode's side of the boot loader: the Boot Loader Interface (systemd-boot and other BLI
//! loaders). The loop writes one Type #1 entry file per kernel variant
//! (`loader/entries/abperf-EXP-vN.conf` on the partition that holds the kernel: the ESP or the
//! XBOOTLDR partition), and before each boot sets the EFI variable `LoaderEntryOneShot` to the
//! planned boot's entry: the loader boots it once and deletes the variable, so any failure
//! (a panic, a hang and a reset, a power cut) brings the machine back to its default entry,
//! which abperf never changes (neither `loader.conf` nor `LoaderEntryDefault`). The loader says
//! which entry it booted (`LoaderEntrySelected`) and which it found (`LoaderEntries`).
//! GRUB (`grub-reboot`) is not supported.

use super::efivar::Efivars;
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The one-shot entry variable.
pub const ONESHOT: &str = "LoaderEntryOneShot";
/// LoaderFeatures' bit for one-shot entries (EFI_LOADER_FEATURE_ENTRY_ONESHOT).
const FEATURE_ENTRY_ONESHOT: u64 = 1 << 3;
/// What abperf's entry files and one-shot values start with.
pub const ENTRY_PREFIX: &str = "abperf-";

/// What reboot mode knows of the machine's loader and boot partitions (kept in the loop's
/// design).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RebootDesign {
    /// LoaderInfo: the loader and its version.
    pub loader: String,
    /// Mount points of the ESP and, on machines that have one, of the XBOOTLDR partition.
    pub esp: String,
    pub xbootldr: Option<String>,
    /// Kernel image (as --kernel named it) -> its files as the loader finds them.
    pub files: BTreeMap<String, EntryFiles>,
    /// The boot the loop started in: its loader ran before the entries were written.
    pub started_boot_id: String,
}

/// A kernel's files for its entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryFiles {
    /// Mount point of the partition that holds them (the entry goes in its loader/entries).
    pub root: String,
    /// The kernel image and its initramfs, as paths from that partition's root.
    pub linux: String,
    pub initrd: Option<String>,
}

/// Why this machine cannot run reboot mode, or its loader (LoaderInfo).
pub fn loader(vars: &Efivars, grub_found: bool) -> Result<String, String> {
    const ONLY: &str = "reboot mode supports Boot Loader Interface loaders with one-shot entries \
                        (systemd-boot); GRUB (grub-reboot) is not supported";
    if !vars.mounted() {
        return Err(format!(
            "no EFI variables in {} (the machine did not boot through UEFI, or efivarfs is not \
             mounted: mount -t efivarfs efivarfs {0}); {ONLY}",
            vars.dir().display()
        ));
    }
    let Some(info) = vars.read_string("LoaderInfo") else {
        let grub = if grub_found {
            "this machine boots with GRUB, which "
        } else {
            "no boot loader "
        };
        return Err(format!(
            "{grub}set no LoaderInfo EFI variable (no Boot Loader Interface); {ONLY}"
        ));
    };
    let features = vars.read_u64("LoaderFeatures").unwrap_or(0);
    if features & FEATURE_ENTRY_ONESHOT == 0 {
        return Err(format!(
            "the boot loader {info} does not support one-shot entries (LoaderFeatures); {ONLY}"
        ));
    }
    Ok(info)
}

/// Is GRUB this machine's boot loader, as far as its files tell?
pub fn grub_installed() -> bool {
    ["/boot/grub/grub.cfg", "/boot/grub2/grub.cfg"]
        .iter()
        .any(|p| Path::new(p).is_file())
}

/// The mount points of the ESP and of the XBOOTLDR partition (if any): `bootctl
/// --print-esp-path`/`--print-boot-path` where bootctl is installed and finds them, else the
/// usual mount points (/efi, /boot/efi, /boot) that hold a FAT filesystem with `loader/` or
/// `EFI/` in it.
pub fn find_partitions() -> anyhow::Result<(PathBuf, Option<PathBuf>)> {
    if let Some(b) = abperf_vm::kernel::find_program("bootctl") {
        let print = |flag: &str| {
            Command::new(&b)
                .arg(flag)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
                .filter(|p| p.is_dir())
        };
        if let Some(esp) = print("--print-esp-path") {
            let boot = print("--print-boot-path").filter(|p| *p != esp);
            return Ok((esp, boot));
        }
    }
    let esp = ["/efi", "/boot/efi", "/boot"]
        .iter()
        .map(PathBuf::from)
        .find(|p| is_fat(p) && (p.join("loader").is_dir() || p.join("EFI").is_dir()))
        .context(
            "no EFI system partition found (bootctl --print-esp-path, or a FAT filesystem with \
             loader/ or EFI/ mounted at /efi, /boot/efi or /boot): mount it",
        )?;
    Ok((esp, None))
}

/// Is `dir` on a FAT filesystem?
fn is_fat(dir: &Path) -> bool {
    const MSDOS_SUPER_MAGIC: i64 = 0x4d44;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: statfs(2) writes into the zeroed struct we own; the path is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    unsafe { libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type as i64 == MSDOS_SUPER_MAGIC }
}

/// Where each kernel's files are for the loader: the kernel and its initramfs must be files on
/// the ESP or the XBOOTLDR partition (the loader reads only those), both on the same one.
pub fn locate(
    kernels: &BTreeMap<String, Option<String>>,
    partitions: &[&Path],
) -> anyhow::Result<BTreeMap<String, EntryFiles>> {
    let mut out = BTreeMap::new();
    for (kernel, initrd) in kernels {
        let image = canonical(kernel)?;
        let Some((root, linux)) = partitions
            .iter()
            .find_map(|r| Some((*r, loader_path(&image, r)?)))
        else {
            bail!(
                "--kernel {kernel}: reboot mode boots kernels through the boot loader, which reads \
                 only its own partitions ({}): copy the kernel and its initramfs there (as \
                 kernel-install does) and give that path",
                partitions
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        };
        let initrd = match initrd {
            Some(i) => Some(loader_path(&canonical(i)?, root).with_context(|| {
                format!(
                    "--kernel {kernel}: its initramfs {i} is not on the same partition ({})",
                    root.display()
                )
            })?),
            None => None,
        };
        let files = EntryFiles {
            root: root.display().to_string(),
            linux,
            initrd,
        };
        out.insert(kernel.clone(), files);
    }
    Ok(out)
}

fn canonical(p: &str) -> anyhow::Result<PathBuf> {
    std::fs::canonicalize(p).with_context(|| format!("cannot resolve {p}"))
}

/// `file` as a path from the partition root `root` ("/dir/file"), None when it is not under it.
fn loader_path(file: &Path, root: &Path) -> Option<String> {
    let root = std::fs::canonicalize(root).ok()?;
    let rel = file.strip_prefix(&root).ok()?;
    Some(format!("/{}", rel.to_string_lossy()))
}

/// The entry id of the loop's variant `variant` (its file name, which is the id systemd-boot
/// gives a Type #1 entry).
pub fn entry_id(exp: i64, variant: usize) -> String {
    format!("{ENTRY_PREFIX}{exp}-v{}.conf", variant + 1)
}

/// The entry file of `id`.
pub fn entry_path(files: &EntryFiles, id: &str) -> PathBuf {
    Path::new(&files.root).join("loader/entries").join(id)
}

/// A Type #1 entry: the kernel, its initramfs, the planned command line.
pub fn entry_text(title: &str, release: &str, files: &EntryFiles, cmdline: &str) -> String {
    let mut t = format!(
        "# Written by abperf's boot loop (a one-shot entry, never the default); removed when \
         the loop ends.\ntitle {title}\nversion {release}\nlinux {}\n",
        files.linux
    );
    if let Some(i) = &files.initrd {
        t.push_str(&format!("initrd {i}\n"));
    }
    t.push_str(&format!("options {cmdline}\n"));
    t
}

/// Write an entry file (the directory made if needed) and make sure it reached the disk.
pub fn write_entry(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    let back = std::fs::read_to_string(path).unwrap_or_default();
    if back != text {
        bail!("{}: what was written did not read back", path.display());
    }
    Ok(())
}

/// Remove an entry file (nothing to do when it is gone).
pub fn remove_entry(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Boot entry `id` once, at the next boot: `bootctl set-oneshot ID` where bootctl is
/// installed, else the variable written through efivarfs; read back either way.
pub fn set_oneshot(vars: &Efivars, id: &str) -> anyhow::Result<()> {
    match abperf_vm::kernel::find_program("bootctl") {
        Some(b) => abperf_vm::kernel::run_tool(
            Command::new(b).args(["set-oneshot", id]),
            &format!("bootctl set-oneshot {id}"),
        )
        .map(drop)?,
        None => vars.write_string(ONESHOT, id)?,
    }
    match vars.read_string(ONESHOT) {
        Some(v) if v == id => Ok(()),
        other => bail!(
            "the EFI variable {ONESHOT} reads {other:?} after it was set to {id}: the next boot \
             would not be the planned one"
        ),
    }
}

/// Delete the one-shot entry variable if it names one of abperf's entries (another tool's
/// one-shot is left alone); returns what it deleted.
pub fn clear_oneshot(vars: &Efivars) -> anyhow::Result<Option<String>> {
    match vars.read_string(ONESHOT) {
        Some(v) if v.starts_with(ENTRY_PREFIX) => {
            vars.delete(ONESHOT)?;
            Ok(Some(v))
        }
        _ => Ok(None),
    }
}

/// Did the loader find entry `id` when this boot started (None: it does not say)?
pub fn listed(vars: &Efivars, id: &str) -> Option<bool> {
    Some(vars.read_strings("LoaderEntries")?.iter().any(|e| e == id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(dir: &Path, name: &str, value: &[u8]) {
        let mut b = vec![6, 0, 0, 0];
        b.extend(value);
        std::fs::write(
            dir.join(format!("{name}-{}", super::super::efivar::LOADER_GUID)),
            b,
        )
        .unwrap();
    }

    use super::super::efivar::utf16_string as utf16;

    #[test]
    fn the_loader_must_say_it_takes_one_shot_entries() {
        let d = tempfile::tempdir().unwrap();
        let vars = Efivars::at(d.path());
        let e = loader(&vars, false).unwrap_err();
        assert!(
            e.contains("no EFI variables in") && e.contains("GRUB"),
            "{e}"
        );
        var(d.path(), "LoaderTimeInitUSec", &utf16("1"));
        let e = loader(&vars, true).unwrap_err();
        assert!(e.starts_with("this machine boots with GRUB"), "{e}");
        var(d.path(), "LoaderInfo", &utf16("GRUB 2.12"));
        let e = loader(&vars, true).unwrap_err();
        assert!(
            e.contains("GRUB 2.12 does not support one-shot entries"),
            "{e}"
        );
        var(
            d.path(),
            "LoaderInfo",
            &utf16("systemd-boot 252.39-1~deb12u2"),
        );
        var(d.path(), "LoaderFeatures", &(1u64 << 3 | 1).to_le_bytes());
        assert_eq!(
            loader(&vars, false).unwrap(),
            "systemd-boot 252.39-1~deb12u2"
        );
    }

    #[test]
    fn kernels_must_be_on_the_loaders_partitions() {
        let d = tempfile::tempdir().unwrap();
        let esp = d.path().join("efi");
        std::fs::create_dir_all(esp.join("k")).unwrap();
        std::fs::write(esp.join("k/vmlinuz-6.1"), "x").unwrap();
        std::fs::write(esp.join("k/initrd.img-6.1"), "x").unwrap();
        std::fs::write(d.path().join("vmlinuz-6.12"), "x").unwrap();
        let k = |p: &Path, i: Option<&Path>| {
            BTreeMap::from([(p.display().to_string(), i.map(|i| i.display().to_string()))])
        };
        let on = k(
            &esp.join("k/vmlinuz-6.1"),
            Some(&esp.join("k/initrd.img-6.1")),
        );
        let f = locate(&on, &[&esp]).unwrap();
        let files = f.values().next().unwrap();
        assert_eq!(files.linux, "/k/vmlinuz-6.1");
        assert_eq!(files.initrd.as_deref(), Some("/k/initrd.img-6.1"));
        let off = k(&d.path().join("vmlinuz-6.12"), None);
        let e = locate(&off, &[&esp]).unwrap_err().to_string();
        assert!(e.contains("reads only its own partitions"), "{e}");
        let split = k(
            &esp.join("k/vmlinuz-6.1"),
            Some(&d.path().join("vmlinuz-6.12")),
        );
        let e = format!("{:#}", locate(&split, &[&esp]).unwrap_err());
        assert!(e.contains("not on the same partition"), "{e}");
        let id = entry_id(7, 0);
        assert_eq!(id, "abperf-7-v1.conf");
        let text = entry_text("abperf 7: 'old'", "6.1", files, "root=/dev/vda ro pti=on");
        assert!(text.contains("\nlinux /k/vmlinuz-6.1\ninitrd /k/initrd.img-6.1\n"));
        assert!(
            text.ends_with("options root=/dev/vda ro pti=on\n"),
            "{text}"
        );
        assert_eq!(
            entry_path(files, &id),
            esp.join("loader/entries/abperf-7-v1.conf")
        );
    }

    #[test]
    fn only_abperfs_one_shot_is_cleared() {
        let d = tempfile::tempdir().unwrap();
        let vars = Efivars::at(d.path());
        var(d.path(), ONESHOT, &utf16("debian-6.1.conf"));
        assert_eq!(clear_oneshot(&vars).unwrap(), None);
        assert!(vars.read(ONESHOT).is_some());
        var(d.path(), ONESHOT, &utf16("abperf-3-v2.conf"));
        assert_eq!(
            clear_oneshot(&vars).unwrap().as_deref(),
            Some("abperf-3-v2.conf")
        );
        assert_eq!(vars.read(ONESHOT), None);
        assert_eq!(listed(&vars, "abperf-3-v2.conf"), None);
        let mut l = utf16("a.conf");
        l.extend(utf16("abperf-3-v2.conf"));
        var(d.path(), "LoaderEntries", &l);
        assert_eq!(listed(&vars, "abperf-3-v2.conf"), Some(true));
        assert_eq!(listed(&vars, "abperf-3-v1.conf"), Some(false));
    }
}
