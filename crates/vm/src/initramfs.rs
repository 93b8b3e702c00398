//! The initramfs of one boot: a static busybox, the kernel modules the guest needs to reach the
//! host's root (virtio PCI and console, 9p, overlayfs) decompressed and listed in load order, the
//! init script (init.sh) and the boot's configuration and command.

use super::cpio::Cpio;
use super::kernel::{find_program, modules_to_load};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The init script, PID 1 of the guest.
pub const INIT_SH: &str = include_str!("init.sh");

/// Modules the guest loads (with their dependencies) unless built in.
pub const GUEST_MODULES: &[&str] = &[
    "virtio_pci",
    "virtio_console",
    "9pnet_virtio",
    "9p",
    "overlay",
];

/// The static busybox to put in the initramfs: `$ABPERF_BUSYBOX`, else `busybox` on the usual
/// paths. A dynamically linked one (Debian's `busybox` package) cannot run there: the error says
/// to install `busybox-static`.
pub fn find_busybox() -> Result<PathBuf> {
    let path = match std::env::var_os("ABPERF_BUSYBOX").filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => find_program("busybox").context(
            "busybox not found: the guest's initramfs needs a static busybox \
             (`apt-get install busybox-static`)",
        )?,
    };
    let data =
        std::fs::read(&path).with_context(|| format!("cannot read busybox {}", path.display()))?;
    if elf_interpreter(&data)? {
        bail!(
            "{} is dynamically linked and cannot run in the guest's initramfs: \
             install busybox-static (`apt-get install busybox-static`) or set $ABPERF_BUSYBOX",
            path.display()
        );
    }
    Ok(path)
}

/// Does this 64-bit little-endian ELF file ask for a program interpreter (dynamic linking)?
fn elf_interpreter(data: &[u8]) -> Result<bool> {
    if data.len() < 64 || !data.starts_with(b"\x7fELF") || data[4] != 2 || data[5] != 1 {
        bail!("not a 64-bit little-endian ELF executable");
    }
    let u16_at = |o: usize| u16::from_le_bytes([data[o], data[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(data[32..40].try_into().unwrap()) as usize;
    let phentsize = u16_at(54);
    let phnum = u16_at(56);
    for i in 0..phnum {
        let o = phoff + i * phentsize;
        let Some(ph) = data.get(o..o + 4) else {
            bail!("truncated ELF program header table");
        };
        if u32::from_le_bytes(ph.try_into().unwrap()) == 3 {
            return Ok(true); // PT_INTERP
        }
    }
    Ok(false)
}

/// The bytes of a module file, decompressed (`.ko.xz`, `.ko.gz` with busybox; `.ko.zst` with
/// zstd): busybox insmod loads only plain modules.
fn module_bytes(busybox: &Path, file: &Path) -> Result<Vec<u8>> {
    let name = file.to_string_lossy();
    let mut cmd = if name.ends_with(".ko") {
        return std::fs::read(file).with_context(|| format!("cannot read {}", file.display()));
    } else if name.ends_with(".ko.xz") {
        let mut c = Command::new(busybox);
        c.arg("xzcat");
        c
    } else if name.ends_with(".ko.gz") {
        let mut c = Command::new(busybox);
        c.arg("zcat");
        c
    } else if name.ends_with(".ko.zst") {
        let zstd = find_program("zstd").with_context(|| {
            format!(
                "{} is zstd-compressed: install zstd to unpack it",
                file.display()
            )
        })?;
        let mut c = Command::new(zstd);
        c.arg("-dc");
        c
    } else {
        bail!(
            "{}: not a kernel module file (.ko[.xz|.gz|.zst])",
            file.display()
        );
    };
    let out = cmd
        .arg(file)
        .output()
        .with_context(|| format!("cannot decompress {}", file.display()))?;
    if !out.status.success() || !out.stdout.starts_with(b"\x7fELF") {
        bail!(
            "cannot decompress {}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

/// What goes into one boot's initramfs.
pub struct Contents<'a> {
    pub busybox: &'a Path,
    /// PID 1's script: [`INIT_SH`] for `abperf vm`; another for a machine of its own (the boot
    /// loop's test machine boots from a disk).
    pub init: &'a str,
    /// The modules to load (with their dependencies) unless built in: [`GUEST_MODULES`], or
    /// more for another init.
    pub wanted_modules: &'a [&'a str],
    /// The kernel's modules directory (with modules.dep); None for a kernel with everything
    /// built in.
    pub modules: Option<&'a Path>,
    /// Shell assignments sourced by init (9p tags and options).
    pub config: &'a str,
    /// The script init runs chrooted in the host's root.
    pub cmd_sh: &'a str,
    /// Files copied to /run/abperf/input in the guest.
    pub inputs: &'a [(String, Vec<u8>)],
}

/// Build the archive.
pub fn build(c: &Contents) -> Result<Vec<u8>> {
    let mut a = Cpio::new();
    for d in [
        "/bin",
        "/dev",
        "/proc",
        "/sys",
        "/lower",
        "/rw",
        "/newroot",
        "/abperf",
        "/abperf/mod",
        "/abperf/input",
    ] {
        a.dir(d, 0o755);
    }
    a.chardev("/dev/console", 0o600, 5, 1);
    let bb =
        std::fs::read(c.busybox).with_context(|| format!("cannot read {}", c.busybox.display()))?;
    a.file("/bin/busybox", 0o755, &bb);
    a.symlink("/bin/sh", "busybox");
    a.file("/init", 0o755, c.init.as_bytes());
    a.file("/abperf/config", 0o644, c.config.as_bytes());
    a.file("/abperf/cmd.sh", 0o755, c.cmd_sh.as_bytes());
    for (name, data) in c.inputs {
        a.file(&format!("/abperf/input/{name}"), 0o644, data);
    }
    let mut order = String::new();
    if let Some(dir) = c.modules {
        for rel in modules_to_load(dir, c.wanted_modules)? {
            let file = dir.join(&rel);
            let base = rel.rsplit('/').next().unwrap_or(&rel);
            let name = format!("{}.ko", base.split(".ko").next().unwrap_or(base));
            a.file(
                &format!("/abperf/mod/{name}"),
                0o644,
                &module_bytes(c.busybox, &file)?,
            );
            order.push_str(&name);
            order.push('\n');
        }
    }
    a.file("/abperf/modules", 0o644, order.as_bytes());
    Ok(a.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_and_dynamic_elf() {
        // This test binary is dynamically linked (cargo's default for the gnu target).
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(elf_interpreter(&me).unwrap());
        let mut fake = vec![0u8; 64];
        fake[..4].copy_from_slice(b"\x7fELF");
        fake[4] = 2;
        fake[5] = 1;
        assert!(!elf_interpreter(&fake).unwrap());
        assert!(elf_interpreter(b"#!/bin/sh\n").is_err());
    }
}
