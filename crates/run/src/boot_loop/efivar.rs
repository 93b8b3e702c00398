//! EFI variables through efivarfs (`/sys/firmware/efi/efivars`): each variable is a file named
//! `NAME-GUID` whose content is 4 bytes of attributes (little endian) then the value. The Boot
//! Loader Interface's variables (vendor GUID [`LOADER_GUID`]) hold strings as UTF-16LE with a
//! terminating NUL. efivarfs marks most variable files immutable (`chattr +i`) so that a stray
//! `rm` cannot brick firmware; writing or deleting one clears that flag first.

use anyhow::{Context, bail};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The vendor GUID of the Boot Loader Interface's variables (systemd-boot and other loaders).
pub const LOADER_GUID: &str = "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f";

/// Where efivarfs is mounted.
pub const EFIVARS: &str = "/sys/firmware/efi/efivars";

/// EFI_VARIABLE_NON_VOLATILE | BOOTSERVICE_ACCESS | RUNTIME_ACCESS: a variable that survives
/// a reboot and that both the loader and the running system see.
pub const NV_BS_RT: u32 = 0x1 | 0x2 | 0x4;

/// FS_IMMUTABLE_FL (`chattr +i`).
const IMMUTABLE: libc::c_int = 0x10;

/// The EFI variables of one efivarfs directory.
#[derive(Debug, Clone)]
pub struct Efivars {
    dir: PathBuf,
}

impl Efivars {
    /// This machine's (`/sys/firmware/efi/efivars`).
    pub fn system() -> Efivars {
        Efivars::at(Path::new(EFIVARS))
    }

    /// The variables of another directory (a test's, or doctor's root).
    pub fn at(dir: &Path) -> Efivars {
        Efivars {
            dir: dir.to_path_buf(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Is efivarfs there (mounted, with variables in it)?
    pub fn mounted(&self) -> bool {
        std::fs::read_dir(&self.dir).is_ok_and(|mut d| d.next().is_some())
    }

    /// The file of loader variable `name`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}-{LOADER_GUID}"))
    }

    /// A loader variable's value (without its attributes), None when it is not set.
    pub fn read(&self, name: &str) -> Option<Vec<u8>> {
        let b = std::fs::read(self.path(name)).ok()?;
        (b.len() >= 4).then(|| b[4..].to_vec())
    }

    /// A loader variable holding one UTF-16LE string.
    pub fn read_string(&self, name: &str) -> Option<String> {
        self.read_strings(name)?.into_iter().next()
    }

    /// A loader variable holding NUL-separated UTF-16LE strings (LoaderEntries).
    pub fn read_strings(&self, name: &str) -> Option<Vec<String>> {
        Some(utf16_strings(&self.read(name)?))
    }

    /// A loader variable holding a little-endian u64 (LoaderFeatures).
    pub fn read_u64(&self, name: &str) -> Option<u64> {
        let b = self.read(name)?;
        Some(u64::from_le_bytes(b.get(..8)?.try_into().ok()?))
    }

    /// Set loader variable `name` to `value` (UTF-16LE with its NUL), non-volatile.
    pub fn write_string(&self, name: &str, value: &str) -> anyhow::Result<()> {
        let path = self.path(name);
        let mut buf = NV_BS_RT.to_le_bytes().to_vec();
        buf.extend(utf16_string(value));
        if path.exists() {
            clear_immutable(&path)?;
        }
        // efivarfs takes the attributes and the value in one write(2).
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("cannot open {} for writing", path.display()))?;
        let n = f
            .write(&buf)
            .with_context(|| format!("cannot write the EFI variable {}", path.display()))?;
        if n != buf.len() {
            bail!(
                "the EFI variable {}: {n} of {} bytes written",
                path.display(),
                buf.len()
            );
        }
        Ok(())
    }

    /// Delete loader variable `name`; nothing to do when it is not set.
    pub fn delete(&self, name: &str) -> anyhow::Result<()> {
        let path = self.path(name);
        if !path.exists() {
            return Ok(());
        }
        clear_immutable(&path)?;
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("cannot delete the EFI variable {}", path.display()))
            }
            _ => Ok(()),
        }
    }
}

/// `s` as UTF-16LE with its NUL: how loader variables hold a string.
pub fn utf16_string(s: &str) -> Vec<u8> {
    s.encode_utf16()
        .chain([0])
        .flat_map(|u| u.to_le_bytes())
        .collect()
}

/// NUL-separated UTF-16LE strings (a trailing NUL or none).
pub fn utf16_strings(b: &[u8]) -> Vec<String> {
    let units: Vec<u16> = b
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    units
        .split(|u| *u == 0)
        .filter(|s| !s.is_empty())
        .map(String::from_utf16_lossy)
        .collect()
}

/// Clear a file's immutable flag. Filesystems without the flags (tmpfs in tests) have nothing
/// to clear.
fn clear_immutable(path: &Path) -> anyhow::Result<()> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut flags: libc::c_int = 0;
    // SAFETY: FS_IOC_GETFLAGS writes one int into `flags`, which we own; the fd is open.
    if unsafe { libc::ioctl(f.as_raw_fd(), libc::FS_IOC_GETFLAGS, &mut flags) } != 0 {
        return Ok(()); // no inode flags here: nothing is immutable
    }
    let want = flags & !IMMUTABLE;
    if want == flags {
        return Ok(());
    }
    // SAFETY: FS_IOC_SETFLAGS reads one int from `want`; the fd is open.
    if unsafe { libc::ioctl(f.as_raw_fd(), libc::FS_IOC_SETFLAGS, &want) } != 0 {
        return Err(std::io::Error::last_os_error()).with_context(|| {
            format!(
                "cannot clear the immutable flag of {} (chattr -i)",
                path.display()
            )
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_utf16le_with_their_attributes_in_front() {
        let d = tempfile::tempdir().unwrap();
        let v = Efivars::at(d.path());
        assert!(!v.mounted());
        assert_eq!(v.read_string("LoaderEntryOneShot"), None);
        v.write_string("LoaderEntryOneShot", "abperf-3-1.conf")
            .unwrap();
        let raw = std::fs::read(v.path("LoaderEntryOneShot")).unwrap();
        assert_eq!(&raw[..6], &[7, 0, 0, 0, b'a', 0]);
        assert_eq!(&raw[raw.len() - 2..], &[0, 0]);
        assert_eq!(raw.len(), 4 + 2 * ("abperf-3-1.conf".len() + 1));
        assert!(v.mounted());
        assert_eq!(
            v.read_string("LoaderEntryOneShot").as_deref(),
            Some("abperf-3-1.conf")
        );
        v.delete("LoaderEntryOneShot").unwrap();
        v.delete("LoaderEntryOneShot").unwrap();
        assert_eq!(v.read("LoaderEntryOneShot"), None);
    }

    #[test]
    fn lists_and_numbers_read_as_the_loader_writes_them() {
        let d = tempfile::tempdir().unwrap();
        let v = Efivars::at(d.path());
        let mut entries = vec![6, 0, 0, 0];
        entries.extend(utf16_string("a.conf"));
        entries.extend(utf16_string("abperf-1-0.conf"));
        std::fs::write(v.path("LoaderEntries"), entries).unwrap();
        assert_eq!(
            v.read_strings("LoaderEntries").unwrap(),
            vec!["a.conf", "abperf-1-0.conf"]
        );
        let mut feat = vec![6, 0, 0, 0];
        feat.extend((1u64 << 3 | 1).to_le_bytes());
        std::fs::write(v.path("LoaderFeatures"), feat).unwrap();
        assert_eq!(v.read_u64("LoaderFeatures"), Some(9));
    }
}
