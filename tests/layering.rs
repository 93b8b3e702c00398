//! The layering of the workspace. The compiler enforces that a crate uses only the crates its
//! Cargo.toml names; this test pins those names, so that a new edge (say `abperf-import` on
//! `abperf-report`) is a decision made here and in docs/architecture.md#crates, not a line slipped
//! into a Cargo.toml. The direction, top to bottom:
//!
//! ```text
//! abperf (cli, commands) -> {run, micro, report, trace, import}
//!     run (design, runner, doctor) -> {vm, workload, store, import}    micro -> store
//!     report (the renderer) -> stats                           trace -> measure
//!     {vm, workload} -> measure
//!     {store, stats, measure, import} -> model
//! ```
//!
//! The renderer and the tracer sit beside the runner, not above it: what they print or start
//! (a doctor check, a cached kernel, a workload's description; a command resolved to an argv, a
//! signal's name) lives in `model` and `measure`, so neither compiles the runner, the VMs, the
//! workloads or the store with its SQLite and PostgreSQL clients
//! ([`report_and_trace_compile_no_database_client`] checks the whole tree, not just our crates).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Who may depend on whom (normal dependencies; dev-dependencies may add test fixtures).
const ALLOWED: &[(&str, &[&str])] = &[
    ("model", &[]),
    ("stats", &["model"]),
    ("store", &["model"]),
    ("measure", &["model"]),
    ("import", &["model"]),
    ("ksrc", &["model"]),
    ("vm", &["measure", "model"]),
    ("workload", &["measure", "model"]),
    (
        "run",
        &["import", "measure", "model", "store", "vm", "workload"],
    ),
    ("report", &["model", "stats"]),
    ("micro", &["measure", "model", "store"]),
    ("trace", &["measure", "model"]),
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

/// Crates that are a database client or its runtime: none may be in the normal dependency tree
/// of the renderer or the tracer.
const DATABASE_CLIENTS: &[&str] = &["rusqlite", "libsqlite3-sys", "postgres", "tokio"];

/// Every package in the normal (not dev, not build) dependency tree of `root`, as `cargo tree -p
/// ROOT -e normal` lists it, from `cargo metadata` (offline, from Cargo.lock as committed).
fn normal_tree(metadata: &serde_json::Value, root: &str) -> BTreeSet<String> {
    let packages = metadata["packages"].as_array().unwrap();
    let name_of = |id: &str| -> String {
        packages
            .iter()
            .find(|p| p["id"] == id)
            .and_then(|p| p["name"].as_str())
            .unwrap_or(id)
            .to_string()
    };
    let nodes: BTreeMap<&str, &serde_json::Value> = metadata["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap(), n))
        .collect();
    let root_id = packages
        .iter()
        .find(|p| p["name"] == root)
        .and_then(|p| p["id"].as_str())
        .unwrap_or_else(|| panic!("{root} is not a package of the workspace"));
    let mut seen = BTreeSet::from([root_id]);
    let mut todo = vec![root_id];
    while let Some(id) = todo.pop() {
        for dep in nodes[id]["deps"].as_array().unwrap() {
            let normal = dep["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].is_null());
            let dep_id = dep["pkg"].as_str().unwrap();
            if normal && seen.insert(dep_id) {
                todo.push(dep_id);
            }
        }
    }
    seen.into_iter().map(name_of).collect()
}

#[test]
fn report_and_trace_compile_no_database_client() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline", "--locked"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The check itself: the binary's tree does hold the clients (else it would prove nothing).
    let abperf = normal_tree(&metadata, "abperf");
    assert!(abperf.contains("rusqlite"), "abperf without rusqlite?");
    for root in ["abperf-report", "abperf-trace"] {
        let tree = normal_tree(&metadata, root);
        let clients: Vec<&&str> = DATABASE_CLIENTS
            .iter()
            .filter(|c| tree.contains(**c))
            .collect();
        assert!(
            clients.is_empty(),
            "{root} depends on {clients:?} (through {:?})",
            tree.iter()
                .filter(|p| p.starts_with("abperf-"))
                .collect::<Vec<_>>()
        );
    }
}
