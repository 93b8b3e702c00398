//! Kernel knobs as variants: a sysfs/procfs/debugfs file is written, read back and verified, and
//! its original content is restored at the end, on error, on signals (the experiment loop stops
//! and drops the guard) and on panic (`Drop`).

use crate::measure::env::selected_choice;
use anyhow::Context;
use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;

/// The value a knob file currently selects: the bracketed choice for files such as THP's
/// `always [madvise] never`, else the trimmed content.
pub fn read_value(path: &str) -> anyhow::Result<String> {
    let content =
        std::fs::read_to_string(path).with_context(|| format!("knob {path}: cannot be read"))?;
    Ok(selected_choice(&content))
}

fn write_raw(path: &str, value: &str) -> anyhow::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .with_context(|| format!("knob {path}: cannot be opened for writing"))?;
    f.write_all(value.as_bytes())
        .with_context(|| format!("knob {path}: writing '{value}' was refused"))?;
    Ok(())
}

/// Owns every knob of an experiment while it runs; restores the originals when dropped.
pub struct KnobGuard {
    /// path -> value to restore
    originals: BTreeMap<String, String>,
    /// path -> value the file selects now
    current: BTreeMap<String, String>,
    restored: bool,
}

impl KnobGuard {
    /// Check that every knob exists and can be read and opened for writing, and take its
    /// original value. `stored` originals (from an interrupted experiment being resumed) win over
    /// what the file holds now, since a killed abperf may have left a variant's value behind.
    pub fn prepare(
        paths: &[String],
        stored: &BTreeMap<String, String>,
    ) -> anyhow::Result<KnobGuard> {
        let mut originals = BTreeMap::new();
        let mut current = BTreeMap::new();
        for path in paths {
            let meta =
                std::fs::metadata(path).with_context(|| format!("knob {path}: does not exist"))?;
            if meta.is_dir() {
                anyhow::bail!("knob {path}: is a directory, not a file");
            }
            let now = read_value(path)?;
            OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(|| format!("knob {path}: cannot be written (are you root?)"))?;
            originals.insert(
                path.clone(),
                stored.get(path).cloned().unwrap_or_else(|| now.clone()),
            );
            current.insert(path.clone(), now);
        }
        Ok(KnobGuard {
            originals,
            current,
            restored: false,
        })
    }

    /// The values that will be restored, path -> value.
    pub fn originals(&self) -> &BTreeMap<String, String> {
        &self.originals
    }

    /// Knobs whose file holds something other than the original (left behind by a killed run).
    pub fn drifted(&self) -> Vec<(String, String, String)> {
        self.originals
            .iter()
            .filter_map(|(p, o)| {
                let now = self.current.get(p)?;
                (now != o).then(|| (p.clone(), now.clone(), o.clone()))
            })
            .collect()
    }

    /// Set `path` to `value` unless it already holds it; read back and verify.
    pub fn apply(&mut self, path: &str, value: &str) -> anyhow::Result<()> {
        if self.current.get(path).map(String::as_str) == Some(value.trim()) {
            return Ok(());
        }
        self.restored = false;
        // Mark it unknown first: if the write fails half-way, restore must still rewrite it.
        self.current.insert(path.to_string(), String::new());
        write_raw(path, value)?;
        let back = read_value(path)?;
        if back != value.trim() {
            anyhow::bail!("knob {path}: wrote '{value}' but it reads back '{back}'");
        }
        self.current.insert(path.to_string(), back);
        Ok(())
    }

    /// Put every original back and verify it; returns one message per knob that failed.
    pub fn restore(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        for (path, orig) in &self.originals {
            if self.current.get(path) == Some(orig) {
                continue;
            }
            let result = write_raw(path, orig)
                .and_then(|_| read_value(path))
                .and_then(|back| {
                    if &back == orig {
                        Ok(back)
                    } else {
                        anyhow::bail!("knob {path}: restored '{orig}' but it reads back '{back}'")
                    }
                });
            match result {
                Ok(back) => {
                    self.current.insert(path.clone(), back);
                }
                Err(e) => errors.push(format!("{e:#}; restore it by hand: echo '{orig}' > {path}")),
            }
        }
        self.restored = errors.is_empty();
        errors
    }
}

impl Drop for KnobGuard {
    fn drop(&mut self) {
        if !self.restored {
            for e in self.restore() {
                eprintln!("abperf: error: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_verify_restore_on_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("knob");
        std::fs::write(&p, "a [b] c\n").unwrap();
        let path = p.to_string_lossy().to_string();
        {
            let mut g = KnobGuard::prepare(std::slice::from_ref(&path), &BTreeMap::new()).unwrap();
            assert_eq!(g.originals()[&path], "b");
            g.apply(&path, "zz").unwrap();
            assert_eq!(std::fs::read_to_string(&p).unwrap(), "zz");
        }
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "b");
    }

    #[test]
    fn missing_knob_is_an_error_before_anything() {
        let e = KnobGuard::prepare(&["/nonexistent/knob".into()], &BTreeMap::new())
            .err()
            .unwrap();
        assert!(format!("{e:#}").contains("/nonexistent/knob: does not exist"));
    }

    #[test]
    fn stored_original_wins_on_resume() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("knob");
        std::fs::write(&p, "left-behind").unwrap();
        let path = p.to_string_lossy().to_string();
        let mut stored = BTreeMap::new();
        stored.insert(path.clone(), "orig".to_string());
        let g = KnobGuard::prepare(std::slice::from_ref(&path), &stored).unwrap();
        assert_eq!(g.drifted().len(), 1);
        drop(g);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "orig");
    }
}
