//! Where the Welch boundary constant of a sequential plan comes from without simulating it in
//! every process: the committed table for the common plans ([`super::sequential_table`]), else
//! a file in the user's cache directory (`$XDG_CACHE_HOME/abperf/sequential`, else
//! `~/.cache/abperf/sequential`) written the first time a plan's constant is simulated. The
//! file is untrusted: anything but one well-formed line for the very plan, with a constant in
//! the possible range, is ignored and the constant simulated (and written) again. Writes are
//! atomic (a new file in the same directory, renamed over the old one).

use super::sequential_table::TABLE;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The plan a constant belongs to: looks, most runs per variant, and the level as bits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Key {
    pub looks: usize,
    pub max_runs: u32,
    pub alpha: f64,
}

impl Key {
    fn name(&self) -> String {
        format!(
            "welch-v1-{}-{}-{:016x}",
            self.looks,
            self.max_runs,
            self.alpha.to_bits()
        )
    }

    fn line(&self, c: f64) -> String {
        format!("{} {:016x}\n", self.name(), c.to_bits())
    }

    /// The constant a cache file's text holds for this plan, if it is exactly one well-formed
    /// line for it with a constant between `floor` (the z design's) and 20.
    fn parse(&self, text: &str, floor: f64) -> Option<f64> {
        let line = text.strip_suffix('\n')?;
        let (name, bits) = line.split_once(' ')?;
        if name != self.name() || bits.len() != 16 {
            return None;
        }
        let c = f64::from_bits(u64::from_str_radix(bits, 16).ok()?);
        (c.is_finite() && c >= floor && c <= 20.0).then_some(c)
    }
}

/// The committed constant of a plan, if the table has it.
pub(crate) fn tabulated(key: Key) -> Option<f64> {
    TABLE
        .iter()
        .find(|&&(looks, max_runs, alpha, _)| {
            looks == key.looks && max_runs == key.max_runs && alpha.to_bits() == key.alpha.to_bits()
        })
        .map(|&(.., c)| c)
}

/// The user's cache directory for the constants.
pub(crate) fn cache_dir() -> Option<PathBuf> {
    let nonempty = |v: &str| std::env::var_os(v).filter(|s| !s.is_empty());
    let base = match nonempty("XDG_CACHE_HOME") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(nonempty("HOME")?).join(".cache"),
    };
    Some(base.join("abperf").join("sequential"))
}

/// The cached constant of a plan in `dir`, if a valid one is there.
pub(crate) fn cached(dir: &Path, key: Key, floor: f64) -> Option<f64> {
    let f = std::fs::File::open(dir.join(key.name())).ok()?;
    let mut text = String::new();
    // A valid file is one short line: read no more than a little over that.
    f.take(256).read_to_string(&mut text).ok()?;
    key.parse(&text, floor)
}

/// Keep a plan's constant in `dir` (best effort: a cache that cannot be written costs only the
/// next process's simulation).
pub(crate) fn store(dir: &Path, key: Key, c: f64) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.{:x}",
        key.name(),
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)?;
    let written = f
        .write_all(key.line(c).as_bytes())
        .and_then(|()| f.sync_all());
    drop(f);
    match written.and_then(|()| std::fs::rename(&tmp, dir.join(key.name()))) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_file_is_read_only_when_it_is_valid() {
        let dir = std::env::temp_dir().join(format!("abperf-seqcache-{}", std::process::id()));
        let key = Key {
            looks: 3,
            max_runs: 17,
            alpha: 0.05,
        };
        assert_eq!(cached(&dir, key, 2.0), None);
        store(&dir, key, 2.25).unwrap();
        assert_eq!(cached(&dir, key, 2.0), Some(2.25));
        // Another plan's file, garbage, a constant out of range, trailing bytes: ignored.
        let other = Key {
            max_runs: 18,
            ..key
        };
        assert_eq!(cached(&dir, other, 2.0), None);
        let path = dir.join(key.name());
        for bad in [
            "garbage".to_string(),
            key.line(f64::NAN),
            key.line(1.5),
            key.line(25.0),
            key.line(2.25) + "x",
            other.line(2.25),
        ] {
            std::fs::write(&path, bad.as_bytes()).unwrap();
            assert_eq!(cached(&dir, key, 2.0), None, "{bad:?}");
        }
        store(&dir, key, 2.5).unwrap();
        assert_eq!(cached(&dir, key, 2.0), Some(2.5));
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
