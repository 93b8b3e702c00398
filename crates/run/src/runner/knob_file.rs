//! Knob files: what may be a knob (a regular file in a kernel filesystem, whatever `TMPDIR`
//! says; never a FIFO, a device or an ordinary file), opening one without blocking, bounded reads
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
];

/// The variable naming the directory whose ordinary files the integration tests use as knobs
/// (set by tests/common's labs only). A file there is accepted only when it is this user's and
/// closed to others' writes. Unit tests accept the temporary directory instead.
const TEST_KNOB_DIR: &str = "ABPERF_TEST_KNOB_DIR";

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

/// An ordinary file tests may use as a knob (see [`TEST_KNOB_DIR`]); never one in production.
fn test_knob(path: &Path, meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let dir = if cfg!(test) {
        Some(std::env::temp_dir())
    } else {
        std::env::var_os(TEST_KNOB_DIR)
            .filter(|d| !d.is_empty())
            .map(std::path::PathBuf::from)
    };
    let Some(dir) = dir else {
        return false;
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let (Ok(p), Ok(t)) = (std::fs::canonicalize(path), std::fs::canonicalize(dir)) else {
        return false;
    };
    p.starts_with(t) && meta.uid() == me && meta.mode() & 0o022 == 0
}

/// Check that `path` may be a knob: a regular file (the filesystem is checked on the open file
/// by [`open_knob`]). Looked at before anything opens it (opening a FIFO blocks, opening some
/// devices acts), and again on the open file by [`open_knob`].
pub fn check_knob_path(path: &str) -> anyhow::Result<()> {
    let meta = std::fs::metadata(path).with_context(|| format!("knob {path}: does not exist"))?;
    if !meta.file_type().is_file() {
        anyhow::bail!(
            "knob {path}: is {}; a knob is a regular file in sysfs, procfs, debugfs, cgroup, \
             configfs, tracefs or securityfs",
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
/// filesystem (by statfs magic on the open file, whatever `TMPDIR` says).
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
    if !KNOB_FILESYSTEMS.iter().any(|&(m, _)| m == magic) && !test_knob(Path::new(path), &meta) {
        anyhow::bail!(
            "knob {path}: is an ordinary file (filesystem 0x{magic:x}), not a kernel knob; a knob \
             is a file in sysfs, procfs, debugfs, tracefs, cgroup, configfs or securityfs"
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
