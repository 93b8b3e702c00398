//! Where a store is: an SQLite file, or a PostgreSQL database named by a `postgres://` or
//! `postgresql://` URL. A `--db` value, `$ABPERF_DB` or a `store copy` argument is recognised
//! once, here; the store chooses its backend from it when it is opened (`open`).

use crate::redact::redacted;
use anyhow::Context;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

/// A store's location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file (or `:memory:`).
    File(PathBuf),
    /// A PostgreSQL database: its URL as given, password and all (shown without it).
    Server(String),
}

/// `$ABPERF_DB` as this process was given it (see [`Location::adopt_environment`]).
static ABPERF_DB: std::sync::OnceLock<Option<OsString>> = std::sync::OnceLock::new();

impl Location {
    /// Called once at start, before any thread: keep `$ABPERF_DB` for this process and, when it
    /// names a server with a password, leave only its redacted form in the environment, so no
    /// workload, hook or other child inherits the password (a child abperf is given `--db`).
    pub fn adopt_environment() {
        let given = std::env::var_os("ABPERF_DB");
        if let Some(text) = given.as_ref().and_then(|g| g.to_str()) {
            let shown = redacted(text);
            if shown != text && is_dsn(text) {
                // SAFETY: called by `main` before any other thread exists.
                unsafe { std::env::set_var("ABPERF_DB", shown) };
            }
        }
        let _ = ABPERF_DB.set(given);
    }

    /// The location `name` names: a PostgreSQL URL, else a file.
    pub fn parse(name: impl Into<OsString>) -> Location {
        let name: OsString = name.into();
        match name.to_str().filter(|n| is_dsn(n)) {
            Some(dsn) => Location::Server(dsn.to_string()),
            None => Location::File(PathBuf::from(name)),
        }
    }

    /// The store named by `--db` (`flag`), else `$ABPERF_DB`, else
    /// `$XDG_DATA_HOME/abperf/abperf.db`, else `~/.local/share/abperf/abperf.db`.
    pub fn resolve(flag: Option<&Location>) -> anyhow::Result<Location> {
        if let Some(at) = flag {
            return Ok(at.clone());
        }
        let from_env = ABPERF_DB
            .get()
            .cloned()
            .unwrap_or_else(|| std::env::var_os("ABPERF_DB"));
        if let Some(p) = from_env.filter(|p| !p.is_empty()) {
            return Ok(Location::parse(p));
        }
        let base = match std::env::var_os("XDG_DATA_HOME").filter(|p| !p.is_empty()) {
            Some(d) => PathBuf::from(d),
            None => {
                let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).context(
                    "cannot place the store: none of --db, $ABPERF_DB, $XDG_DATA_HOME, $HOME is set",
                )?;
                PathBuf::from(home).join(".local/share")
            }
        };
        Ok(Location::File(base.join("abperf").join("abperf.db")))
    }

    /// The location as a path for messages and for [`crate::Store::path`]: a file's path, a
    /// server's URL with its password hidden.
    pub fn shown_path(&self) -> PathBuf {
        match self {
            Location::File(p) => p.clone(),
            Location::Server(dsn) => PathBuf::from(redacted(dsn)),
        }
    }

    /// Whether this is a file of this machine that exists (a server's store is none).
    pub fn is_existing_file(&self) -> bool {
        matches!(self, Location::File(p) if p.exists())
    }

    /// How a command line names this store with `--db`: None for the default store (no flag
    /// needed), else a file's absolute path or a server's URL with its password hidden.
    pub fn as_flag_value(&self) -> Option<String> {
        let default = Location::resolve(None).ok();
        let path = match (self, &default) {
            // A server's URL is the default only as it is shown (as the flag was before).
            (Location::Server(dsn), Some(Location::Server(d))) if *d == redacted(dsn) => {
                return None;
            }
            (Location::Server(dsn), _) => return Some(redacted(dsn)),
            (Location::File(p), _) => p,
        };
        if let Some(Location::File(d)) = &default {
            let same = d == path
                || matches!((std::fs::canonicalize(path), std::fs::canonicalize(d)),
                            (Ok(a), Ok(b)) if a == b);
            if same {
                return None;
            }
        }
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.clone());
        Some(abs.display().to_string())
    }
}

/// The text a child abperf is given as `--db` (a server's URL with its password).
impl AsRef<std::ffi::OsStr> for Location {
    fn as_ref(&self) -> &std::ffi::OsStr {
        match self {
            Location::File(p) => p.as_os_str(),
            Location::Server(dsn) => dsn.as_ref(),
        }
    }
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Location {
        Location::parse(path.as_os_str())
    }
}

impl fmt::Display for Location {
    /// A file's path, a server's URL with its password hidden.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(p) => write!(f, "{}", p.display()),
            Location::Server(dsn) => f.write_str(&redacted(dsn)),
        }
    }
}

/// A location travels (to a fleet's hosts) as the text it was given.
impl serde::Serialize for Location {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Location::File(p) => s.serialize_str(&p.to_string_lossy()),
            Location::Server(dsn) => s.serialize_str(dsn),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Location {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Location, D::Error> {
        Ok(Location::parse(String::deserialize(d)?))
    }
}

/// Whether `name` names a PostgreSQL store rather than an SQLite file.
fn is_dsn(name: &str) -> bool {
    ["postgres://", "postgresql://"]
        .iter()
        .any(|scheme| name.starts_with(scheme))
        || crate::conninfo::pairs(name).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_a_server_and_anything_else_a_file() {
        let server = Location::parse("postgres://ann:pw@db/x");
        assert_eq!(server, Location::Server("postgres://ann:pw@db/x".into()));
        assert_eq!(server.to_string(), "postgres://ann:***@db/x");
        assert!(matches!(
            Location::parse("postgresql://x"),
            Location::Server(_)
        ));
        for file in ["postgres:x", "/tmp/postgres://x", "x.db"] {
            assert_eq!(Location::parse(file), Location::File(file.into()), "{file}");
        }
        let json = serde_json::to_string(&server).unwrap();
        assert_eq!(json, "\"postgres://ann:pw@db/x\"");
        assert_eq!(serde_json::from_str::<Location>(&json).unwrap(), server);
    }

    #[test]
    fn a_store_other_than_the_default_is_named_by_its_absolute_path() {
        let at = Location::File("rel/x.db".into());
        let named = at.as_flag_value().unwrap();
        assert!(
            named.starts_with('/') && named.ends_with("rel/x.db"),
            "{named}"
        );
        let server = Location::parse("postgres://ann:pw@db/x");
        assert_eq!(server.as_flag_value().unwrap(), "postgres://ann:***@db/x");
    }
}
