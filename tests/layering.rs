//! The layering of the workspace. The compiler enforces that a crate uses only the crates its
//! Cargo.toml names; this test pins those names, so that a new edge (say `abperf-import` on
//! `abperf-report`) is a decision made here and in docs/architecture.md#crates, not a line slipped
//! into a Cargo.toml. The direction, top to bottom:
//!
//! ```text
//! abperf (cli, commands) -> {trace, micro, report, import}
//!     -> run (design, runner, doctor) -> {vm, workload} -> {store, stats, measure} -> model
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Who may depend on whom (normal dependencies; dev-dependencies may add test fixtures).
const ALLOWED: &[(&str, &[&str])] = &[
    ("model", &[]),
    ("stats", &["model"]),
    ("store", &["model"]),
    ("measure", &["model"]),
    ("import", &["model"]),
    ("vm", &["measure", "model"]),
    ("workload", &["measure", "model"]),
    ("run", &["measure", "model", "store", "vm", "workload"]),
    ("report", &["model", "run", "stats", "vm", "workload"]),
    ("micro", &["measure", "model", "store"]),
    ("trace", &["measure", "model", "run"]),
];

/// The `abperf-*` names in the `[dependencies]` table of `crates/NAME/Cargo.toml`.
fn dependencies(name: &str) -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("crates/{name}/Cargo.toml"));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut table = "";
    let mut out = BTreeSet::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            table = line;
        } else if table == "[dependencies]"
            && let Some(dep) = line.strip_prefix("abperf-")
        {
            let dep: String = dep.chars().take_while(|c| c.is_ascii_lowercase()).collect();
            out.insert(dep);
        }
    }
    out
}

#[test]
fn every_crate_depends_only_on_the_crates_below_it() {
    let mut wrong = Vec::new();
    for (name, allowed) in ALLOWED {
        let allowed: BTreeSet<String> = allowed.iter().map(|s| s.to_string()).collect();
        let deps = dependencies(name);
        if deps != allowed {
            wrong.push(format!(
                "abperf-{name}: depends on {deps:?}, allowed {allowed:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_crate_of_the_workspace_is_in_the_table() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let listed: BTreeSet<&str> = ALLOWED.iter().map(|(n, _)| *n).collect();
    for e in std::fs::read_dir(crates).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(
            listed.contains(name.as_str()),
            "crates/{name} is not in ALLOWED"
        );
    }
}

#[test]
fn the_allowed_graph_has_no_cycle() {
    // Kahn's algorithm: every crate must be removable once the crates it names are gone.
    let mut left: BTreeMap<&str, BTreeSet<&str>> = ALLOWED
        .iter()
        .map(|(m, deps)| (*m, deps.iter().copied().collect()))
        .collect();
    while let Some(free) = left.iter().find(|(_, d)| d.is_empty()).map(|(m, _)| *m) {
        left.remove(free);
        for deps in left.values_mut() {
            deps.remove(free);
        }
    }
    assert!(left.is_empty(), "cycle among {:?}", left.keys());
}
