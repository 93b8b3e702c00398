//! Knob files: what may be a knob (a regular file in a kernel filesystem, a tmpfs or the
//! temporary directory; never a FIFO or a device), opening one without blocking, bounded reads
//! ([`MAX_KNOB_BYTES`]) and verified writes. The plain file I/O under [`super::knobs`] (the guard
//! that restores originals) and [`super::knob_lock`] (which puts a dead holder's original back).

use abperf_measure::env::selected_choice;
use abperf_model::error::KnobRefused;
use anyhow::Context;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The most a knob file may hold (a sysfs attribute holds at most a page).
pub const MAX_KNOB_BYTES: u64 = 1 << 20;

/// Filesystems whose regular files are kernel knobs, by statfs magic.
const KNOB_FILESYSTEMS: &[(i64, &str)] = &[
    (0x6265_6572, "sysfs"),
    (0x9fa0, "procfs"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x0027_e0eb, "cgroup"),
    (0x6367_7270, "cgroup2"),
    (0x6265_6570, "configfs"),
    (0x7363_6673, "securityfs"),
    (0x0102_1994, "tmpfs"),
    (0x8584_58f6, "ramfs"),
];

fn kind_of(ft: &std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

fn under_temp_dir(path: &Path) -> bool {
    let (Ok(p), Ok(t)) = (
        std::fs::canonicalize(path),
        std::fs::canonicalize(std::env::temp_dir()),
    ) else {
        return false;
    };
    p.starts_with(t)
}

/// Check that `path` may be a knob: a regular file in a kernel filesystem, a tmpfs or the
/// temporary directory. Looked at before anything opens it (opening a FIFO blocks, opening some
/// devices acts), and again on the open file by [`open_knob`].
pub fn check_knob_path(path: &str) -> anyhow::Result<()> {
    let meta = std::fs::metadata(path).with_context(|| format!("knob {path}: does not exist"))?;
    if !meta.file_type().is_file() {
        anyhow::bail!(
            "knob {path}: is {}; a knob is a regular file in sysfs, procfs, debugfs, cgroup, \
             configfs, a tmpfs or the temporary directory",
            kind_of(&meta.file_type())
        );
    }
    Ok(())
}

/// How a knob file is opened.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    Read,
    /// Opened for writing to see that it can be, never truncated (a regular file would lose its
    /// content).
    CheckWritable,
    Write,
}

/// Open knob `path` never blocking, and check the open file: a regular file, on a knob
/// filesystem or under the temporary directory.
pub(super) fn open_knob(path: &str, access: Access) -> anyhow::Result<File> {
    check_knob_path(path)?;
    let write = access != Access::Read;
    let f = OpenOptions::new()
        .read(!write)
        .write(write)
        .truncate(access == Access::Write)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .with_context(|| {
            if write {
                format!("knob {path}: cannot be opened for writing")
            } else {
                format!("knob {path}: cannot be read")
            }
        })?;
    let meta = f.metadata()?;
    if !meta.file_type().is_file() {
        anyhow::bail!("knob {path}: is {}", kind_of(&meta.file_type()));
    }
    // SAFETY: statfs is plain data filled by fstatfs on our open fd.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(f.as_raw_fd(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("knob {path}: statfs failed"));
    }
    let magic = st.f_type as i64;
    if !KNOB_FILESYSTEMS.iter().any(|&(m, _)| m == magic) && !under_temp_dir(Path::new(path)) {
        anyhow::bail!(
            "knob {path}: is an ordinary file (filesystem 0x{magic:x}), not a kernel knob; a knob \
             is a file in sysfs, procfs, debugfs, tracefs, cgroup, configfs or securityfs, or a \
             test file in a tmpfs or under {}",
            std::env::temp_dir().display()
        );
    }
    Ok(f)
}

/// The value a knob file currently selects: the bracketed choice for files such as THP's
/// `always [madvise] never`, else the trimmed content. At most [`MAX_KNOB_BYTES`] are read.
pub fn read_value(path: &str) -> anyhow::Result<String> {
    Ok(selected_choice(&read_raw(path)?))
}

/// The whole text of knob `path` (checked as [`check_knob_path`] does, at most 1 MiB read).
pub fn read_raw(path: &str) -> anyhow::Result<String> {
    let f = open_knob(path, Access::Read)?;
    let mut bytes = Vec::new();
    f.take(MAX_KNOB_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("knob {path}: cannot be read"))?;
    if bytes.len() as u64 > MAX_KNOB_BYTES {
        anyhow::bail!(
            "knob {path}: holds more than {} KiB: not a knob",
            MAX_KNOB_BYTES / 1024
        );
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Write `value` to knob `path` (checked as [`open_knob`] does), not reading it back.
pub(super) fn write_raw(path: &str, value: &str) -> anyhow::Result<()> {
    let mut f = open_knob(path, Access::Write)?;
    f.write_all(value.as_bytes()).map_err(|e| KnobRefused {
        path: path.into(),
        reason: format!("writing '{value}' was refused: {e}"),
    })?;
    Ok(())
}

/// Write `value` to knob `path` and check that it reads back.
pub fn write_verified(path: &str, value: &str) -> anyhow::Result<()> {
    write_raw(path, value)?;
    let back = read_value(path)?;
    if back != value.trim() {
        return Err(KnobRefused {
            path: path.into(),
            reason: format!("wrote '{value}' but it reads back '{back}'"),
        }
        .into());
    }
    Ok(())
}

/// Put knob `path` back to its original: its whole text `raw` byte for byte (a trailing newline
/// kept), or, for a choice list such as `always [madvise] never`, the `selected` choice (the
/// only thing such a file takes). Verified: it must read back as `selected`.
pub fn restore_verified(path: &str, selected: &str, raw: &str) -> anyhow::Result<()> {
    let bytes = if selected_choice(raw) == raw.trim() {
        raw
    } else {
        selected
    };
    write_raw(path, bytes)?;
    let back = read_value(path)?;
    if back != selected {
        anyhow::bail!("knob {path}: restored '{selected}' but it reads back '{back}'");
    }
    Ok(())
}
