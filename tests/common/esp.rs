//! Firmware and boot loader for a test machine that boots like a real one: OVMF (Debian's
//! `ovmf`: its code, and a copy of its variable store per machine, so that EFI variables persist
//! across the guest's reboots), and systemd-boot on a GPT disk image whose EFI system partition
//! is made without mounting anything (`sfdisk` on the image file, `mkfs.vfat` on a file, `mcopy`
//! into it, the file written at the partition's offset). systemd-boot comes from Debian's
//! `systemd-boot-efi`, downloaded and unpacked into abperf's cache with `apt-get download` and
//! `dpkg-deb -x`: never installed here (its maintainer scripts could touch this machine's boot
//! loader).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// OVMF's code and its pristine variable store (Debian's 4 MiB build).
pub const OVMF_CODE: &str = "/usr/share/OVMF/OVMF_CODE_4M.fd";
pub const OVMF_VARS: &str = "/usr/share/OVMF/OVMF_VARS_4M.fd";

/// The ESP's first sector (1 MiB) and its size.
pub const ESP_START_SECTOR: u64 = 2048;
const ESP_MIB: u64 = 120;

/// Programs the ESP image needs.
pub const ESP_PROGRAMS: &[&str] = &["sfdisk", "mkfs.vfat", "mcopy", "mmd", "mtype", "mdir"];

/// OVMF's files, or why they are missing.
pub fn ovmf() -> Result<(PathBuf, PathBuf), String> {
    for f in [OVMF_CODE, OVMF_VARS] {
        if !Path::new(f).is_file() {
            return Err(format!("{f} missing (scripts/test.sh installs ovmf)"));
        }
    }
    Ok((PathBuf::from(OVMF_CODE), PathBuf::from(OVMF_VARS)))
}

fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("ABPERF_CACHE_DIR") {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
        });
    base.join("abperf")
}

/// systemd-boot's x86-64 EFI binary from Debian's systemd-boot-efi, unpacked into abperf's
/// cache (fetched once), or why it cannot be had.
pub fn systemd_boot() -> Result<PathBuf, String> {
    let dest = cache_dir().join("systemd-boot-efi");
    let efi = dest.join("usr/lib/systemd/boot/efi/systemd-bootx64.efi");
    if efi.is_file() {
        return Ok(efi);
    }
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let got = Command::new("apt-get")
        .args(["download", "-q", "systemd-boot-efi"])
        .current_dir(tmp.path())
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("apt-get: {e}"))?;
    let deb = std::fs::read_dir(tmp.path())
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"));
    let Some(deb) = deb.filter(|_| got.success()) else {
        return Err("apt-get download systemd-boot-efi failed (no archive?)".into());
    };
    let unpacked = tmp.path().join("root");
    let st = Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(&unpacked)
        .status()
        .map_err(|e| format!("dpkg-deb: {e}"))?;
    if !st.success() {
        return Err(format!("dpkg-deb -x {} failed", deb.display()));
    }
    std::fs::create_dir_all(cache_dir()).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::rename(&unpacked, &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    if efi.is_file() {
        Ok(efi)
    } else {
        Err(format!("systemd-boot-efi has no {}", efi.display()))
    }
}

/// An mtools program, told not to second-guess a FAT made by another tool.
fn mtool(name: &str) -> Command {
    let mut c = Command::new(name);
    c.env("MTOOLS_SKIP_CHECK", "1");
    c
}

fn run(c: &mut Command, what: &str) {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Write `image`: a GPT disk whose one partition is an EFI system partition (FAT32) holding
/// `files` (path on the ESP, e.g. "/EFI/BOOT/BOOTX64.EFI", -> the file to copy there).
pub fn make_esp_disk(image: &Path, files: &[(&str, &Path)]) {
    let fat = image.with_extension("fat");
    let _ = std::fs::remove_file(&fat);
    run(
        Command::new("mkfs.vfat")
            .args(["-F", "32", "-n", "ESP", "-C"])
            .arg(&fat)
            .arg((ESP_MIB * 1024).to_string()),
        "mkfs.vfat",
    );
    let mut dirs: Vec<String> = Vec::new();
    for (dest, _) in files {
        let mut d = String::new();
        let parts: Vec<&str> = dest.trim_start_matches('/').split('/').collect();
        for p in &parts[..parts.len() - 1] {
            d = format!("{d}/{p}");
            if !dirs.contains(&d) {
                dirs.push(d.clone());
            }
        }
    }
    for d in &dirs {
        run(
            mtool("mmd").arg("-i").arg(&fat).arg(format!("::{d}")),
            "mmd",
        );
    }
    for (dest, src) in files {
        run(
            mtool("mcopy")
                .arg("-i")
                .arg(&fat)
                .arg(src)
                .arg(format!("::{dest}")),
            &format!("mcopy {dest}"),
        );
    }
    let total = (ESP_MIB + 2) * 1024 * 1024;
    let f = std::fs::File::create(image).unwrap();
    f.set_len(total).unwrap();
    drop(f);
    // The ESP's partition type GUID.
    let esp_type = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B";
    let layout = format!(
        "label: gpt\nstart={ESP_START_SECTOR}, size={}, type={esp_type}, name=ESP\n",
        ESP_MIB * 2048
    );
    let mut sf = Command::new("sfdisk")
        .args(["--quiet", "--no-reread", "--no-tell-kernel"])
        .arg(image)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write;
    sf.stdin
        .take()
        .unwrap()
        .write_all(layout.as_bytes())
        .unwrap();
    assert!(sf.wait().unwrap().success(), "sfdisk {}", image.display());
    let bytes = std::fs::read(&fat).unwrap();
    let mut f = std::fs::OpenOptions::new().write(true).open(image).unwrap();
    use std::io::{Seek, SeekFrom};
    f.seek(SeekFrom::Start(ESP_START_SECTOR * 512)).unwrap();
    f.write_all(&bytes).unwrap();
    let _ = std::fs::remove_file(&fat);
}

/// The ESP of `image` as mtools names it (`IMAGE@@OFFSET`).
fn mtools_image(image: &Path) -> String {
    format!("{}@@{}", image.display(), ESP_START_SECTOR * 512)
}

/// The files of a directory of the ESP in `image` (names only).
pub fn esp_list(image: &Path, dir: &str) -> Vec<String> {
    let out = mtool("mdir")
        .args(["-b", "-i", &mtools_image(image)])
        .arg(format!("::{dir}"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().rsplit('/').next().map(str::to_string))
        .filter(|n| !n.is_empty())
        .collect()
}

/// A file of the ESP in `image`, as text.
pub fn esp_read(image: &Path, path: &str) -> String {
    let out = mtool("mtype")
        .args(["-i", &mtools_image(image)])
        .arg(format!("::{path}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "mtype {path}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
