//! The configuration: a base (defconfig, tinyconfig, a file, this machine's), abperf's fragment
//! (what the VM engine and the tracepoints need: see `fragment.config`), `make olddefconfig`, and
//! the check that every option of the fragment survived it.

use crate::make::Make;
use crate::spec::Kconfig;
use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::Command;

/// The options abperf needs in a kernel it builds: a 64-bit SMP kernel with a serial console,
/// virtio PCI and console, 9p over virtio (which needs NET and INET), overlayfs, tmpfs,
/// devtmpfs, an initramfs, ACPI power-off, debugfs, the tracepoints, THP, and what the host's
/// programs run in the guest need (ELF, scripts, futexes, epoll, ...); LOCALVERSION_AUTO off, so
/// the release does not carry the commit id (two trees that differ in a comment give one image).
pub const FRAGMENT: &str = include_str!("fragment.config");

/// The base's short name, for the build directory (`tinyconfig`, `file-<sha>`, ...).
pub fn label(base: &Kconfig) -> Result<String> {
    Ok(match base {
        Kconfig::Defconfig => "defconfig".into(),
        Kconfig::Tinyconfig => "tinyconfig".into(),
        Kconfig::File(p) => format!("file-{}", &sha256_hex(&read(p)?)[..16]),
        Kconfig::Running => format!("running-{}", &sha256_hex(&running()?)[..16]),
    })
}

fn read(p: &Path) -> Result<Vec<u8>> {
    std::fs::read(p).with_context(|| format!("--kconfig {}: cannot read it", p.display()))
}

/// This machine's configuration: /proc/config.gz, else /boot/config-$(uname -r).
fn running() -> Result<Vec<u8>> {
    if Path::new("/proc/config.gz").exists() {
        let out = Command::new("gzip")
            .args(["-dc", "/proc/config.gz"])
            .output()
            .context("cannot run gzip to read /proc/config.gz")?;
        if out.status.success() {
            return Ok(out.stdout);
        }
    }
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: uname fills the struct we own.
    if unsafe { libc::uname(&mut u) } != 0 {
        bail!("uname: {}", std::io::Error::last_os_error());
    }
    // SAFETY: release is NUL-terminated by uname.
    let rel = unsafe { std::ffi::CStr::from_ptr(u.release.as_ptr()) }.to_string_lossy();
    let p = format!("/boot/config-{rel}");
    std::fs::read(&p).map_err(|e| {
        abperf_model::error::usage(format!(
            "--kconfig running: neither /proc/config.gz nor {p} ({e})"
        ))
    })
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Make the final .config in the scratch build directory `make`'s O= points at: the base, the
/// fragment appended, `olddefconfig`; its text, checked against the fragment.
pub fn configure(make: &Make, base: &Kconfig) -> Result<String> {
    let config = make.out.join(".config");
    match base {
        Kconfig::Defconfig => make.quiet(&["defconfig"])?,
        Kconfig::Tinyconfig => make.quiet(&["tinyconfig"])?,
        Kconfig::File(p) => std::fs::write(&config, read(p)?)?,
        Kconfig::Running => std::fs::write(&config, running()?)?,
    }
    let mut text = std::fs::read_to_string(&config)
        .with_context(|| format!("cannot read {}", config.display()))?;
    text.push('\n');
    text.push_str(FRAGMENT);
    std::fs::write(&config, text)?;
    make.quiet(&["olddefconfig"])?;
    let text = std::fs::read_to_string(&config)?;
    if let Some(lost) = lost_options(&text).first() {
        bail!(
            "the configuration lost {lost} of abperf's fragment in make olddefconfig (an option \
             it depends on is off, or it does not exist in this tree): the kernel could not boot \
             in abperf's VMs; give a --kconfig base that allows it"
        );
    }
    Ok(text)
}

/// The fragment's lines the final configuration does not have (`CONFIG_X=v` missing, or a
/// `# CONFIG_X is not set` that is set).
pub fn lost_options(config: &str) -> Vec<String> {
    let lines: std::collections::HashSet<&str> = config.lines().map(str::trim).collect();
    let mut lost = Vec::new();
    for l in FRAGMENT.lines().map(str::trim) {
        if l.starts_with("CONFIG_") {
            if !lines.contains(l) {
                lost.push(l.to_string());
            }
        } else if let Some(name) = l
            .strip_prefix("# ")
            .and_then(|r| r.strip_suffix(" is not set"))
            && config.lines().any(|c| c.starts_with(&format!("{name}=")))
        {
            lost.push(l.to_string());
        }
    }
    lost
}

/// Whether the configuration builds modules.
pub fn has_modules(config: &str) -> bool {
    config.lines().any(|l| l.trim() == "CONFIG_MODULES=y")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_option_is_named_and_a_kept_one_is_not() {
        let full: String = FRAGMENT
            .lines()
            .filter(|l| l.starts_with("CONFIG_"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(lost_options(&full).is_empty());
        let without_9p = full.replace("CONFIG_9P_FS=y\n", "# CONFIG_9P_FS is not set\n");
        assert_eq!(lost_options(&without_9p), ["CONFIG_9P_FS=y"]);
        let auto = format!("{full}CONFIG_LOCALVERSION_AUTO=y\n");
        assert_eq!(
            lost_options(&auto),
            ["# CONFIG_LOCALVERSION_AUTO is not set"]
        );
        assert!(!has_modules(&full));
        assert!(has_modules("CONFIG_MODULES=y\n"));
    }
}
