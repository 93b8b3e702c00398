//! Where abperf keeps data between runs (downloaded sources, built kernels, workload data):
//! one lookup for every crate that keeps something there.

use std::path::PathBuf;

/// `$ABPERF_CACHE_DIR`, else `$XDG_CACHE_HOME/abperf`, else `$HOME/.cache/abperf` (empty
/// variables count as unset); None when none is set (each caller says what it does then).
pub fn from_env() -> Option<PathBuf> {
    from(|k| std::env::var_os(k))
}

fn from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let env = |k: &str| var(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    env("ABPERF_CACHE_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|p| p.join("abperf")))
        .or_else(|| env("HOME").map(|p| p.join(".cache/abperf")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> Option<PathBuf> {
        from(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.into()))
    }

    #[test]
    fn the_first_variable_set_and_not_empty_wins() {
        let all = [
            ("ABPERF_CACHE_DIR", "/a"),
            ("XDG_CACHE_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(with(&all), Some(PathBuf::from("/a")));
        assert_eq!(with(&all[1..]), Some(PathBuf::from("/x/abperf")));
        assert_eq!(
            with(&[("ABPERF_CACHE_DIR", ""), ("HOME", "/h")]),
            Some(PathBuf::from("/h/.cache/abperf"))
        );
        assert_eq!(with(&[]), None);
    }
}
