//! Follow-up commands printed after a command ends (`abperf compare 3`, `abperf run --resume 3`),
//! spelled so that they work when pasted: the program as it can be found from the shell, and
//! `--db PATH` when the store is not the default one.

use crate::store;
use std::path::{Path, PathBuf};

/// The store path of `--no-store`: SQLite keeps it in memory, gone when abperf exits.
pub const IN_MEMORY: &str = ":memory:";

/// Whether `path` names a throwaway in-memory store (`--no-store`, `--db :memory:`).
pub fn in_memory(path: &Path) -> bool {
    path.as_os_str() == IN_MEMORY
}

/// The first `name` on $PATH, canonicalized.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .and_then(|p| std::fs::canonicalize(p).ok())
}

/// `abperf` when that name finds this very binary on $PATH, else this binary's absolute path.
pub fn program() -> String {
    let me = std::env::current_exe().and_then(std::fs::canonicalize);
    match (me, on_path("abperf")) {
        (Ok(me), Some(found)) if me == found => "abperf".into(),
        (Ok(me), _) => shell_words::quote(&me.display().to_string()).into_owned(),
        (Err(_), _) => "abperf".into(),
    }
}

/// `abperf SUBCOMMAND ARGS` for the store at `db`, with `--db` unless it is the default store.
pub fn command(db: &Path, subcommand: &str) -> String {
    let mut s = format!("{} {subcommand}", program());
    if let Some(named) = store::Location::from(db).as_flag_value() {
        s.push_str(" --db ");
        s.push_str(&shell_words::quote(&named));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_other_than_the_default_is_named() {
        let c = command(Path::new("/tmp/some where/x.db"), "show 3");
        assert!(c.ends_with(" show 3 --db '/tmp/some where/x.db'"), "{c}");
        assert!(in_memory(Path::new(":memory:")));
        let dsn = command(Path::new("postgres://ann:***@db/abperf"), "show 3");
        assert!(
            dsn.ends_with(" show 3 --db 'postgres://ann:***@db/abperf'"),
            "{dsn}"
        );
    }
}
