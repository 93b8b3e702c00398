//! The guest side of `abperf vm`: a command running in the VM finds its input files in
//! `$ABPERF_VM_INPUT` and sends lines to the host through `$ABPERF_VM_RESULTS`, a virtio-serial
//! port. The port admits one opener at a time: open it once per guest and keep it.

use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Is this process running under `abperf vm` (in the guest)?
pub fn in_guest() -> bool {
    std::env::var("ABPERF_VM").is_ok_and(|v| v == "1")
}

/// The directory of the boot's input files ([`super::VmSpec::inputs`]), in the guest.
pub fn input_dir() -> Option<PathBuf> {
    std::env::var_os("ABPERF_VM_INPUT").map(PathBuf::from)
}

/// The results channel to the host.
pub struct Results {
    file: std::fs::File,
    path: PathBuf,
}

impl Results {
    /// Open `$ABPERF_VM_RESULTS`.
    pub fn open() -> Result<Results> {
        let p = std::env::var_os("ABPERF_VM_RESULTS")
            .context("$ABPERF_VM_RESULTS is not set: not running in a guest of `abperf vm`")?;
        Results::open_at(Path::new(&p))
    }

    /// Open a given port (or, for tests, any writable file).
    pub fn open_at(path: &Path) -> Result<Results> {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open the results channel {}", path.display()))?;
        Ok(Results {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Send one line (without a newline of its own) in a single write: the host gets it as soon
    /// as this returns, and a crash afterwards cannot take it back.
    pub fn send(&mut self, line: &str) -> Result<()> {
        if line.contains('\n') {
            bail!("a result line cannot contain a newline: {line:?}");
        }
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        self.file
            .write_all(&buf)
            .with_context(|| format!("cannot write to {}", self.path.display()))
    }

    /// Send a value as one JSON line.
    pub fn send_json<T: Serialize>(&mut self, value: &T) -> Result<()> {
        self.send(&serde_json::to_string(value)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_written_whole_and_newlines_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("port");
        std::fs::write(&p, "").unwrap();
        let mut r = Results::open_at(&p).unwrap();
        r.send("first").unwrap();
        r.send_json(&serde_json::json!({"run": 1, "wall": 0.5}))
            .unwrap();
        assert!(r.send("a\nb").is_err());
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "first\n{\"run\":1,\"wall\":0.5}\n"
        );
        let err = Results::open_at(&d.path().join("missing")).err().unwrap();
        assert!(format!("{err:#}").contains("results channel"), "{err:#}");
    }
}
