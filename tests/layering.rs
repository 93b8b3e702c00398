//! The module layering, checked on the source: a top-level module may name (`crate::X`) only
//! the modules below it. The direction is
//!
//! ```text
//! cli -> commands -> {design, runner, trace, micro, doctor, import, report, vm, workload}
//!     -> {stats, store, measure} -> model
//! ```
//!
//! with four edges inside the middle layer (`runner -> design`: variants and schedules;
//! `trace -> runner`: only the runner spawns workloads; `runner -> vm`: the runner boots the
//! kernels of kernel variants and runs their share of the schedule inside them; `runner ->
//! workload`: a variant may be a built-in workload, whose commands, parameters, metrics and
//! clean-up the runner takes from the registry) and `error` usable everywhere. Test
//! modules (`#[cfg(test)]` to the end of a file) may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Who may name whom (besides `error`, which every module may name).
const ALLOWED: &[(&str, &[&str])] = &[
    ("model", &[]),
    ("error", &[]),
    ("stats", &["model"]),
    ("store", &["model"]),
    ("measure", &["model"]),
    ("design", &["model"]),
    ("import", &["model"]),
    ("doctor", &["measure", "model"]),
    ("report", &["stats", "model"]),
    (
        "runner",
        &["design", "measure", "store", "vm", "workload", "model"],
    ),
    ("micro", &["measure", "store", "model"]),
    ("trace", &["runner", "measure", "model"]),
    ("vm", &["measure", "model"]),
    ("workload", &["measure"]),
    (
        "commands",
        &[
            "design", "runner", "trace", "micro", "doctor", "import", "report", "vm", "workload",
            "stats", "store", "measure", "model",
        ],
    ),
    ("cli", &["commands"]),
];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules each module's non-test code names.
fn uses() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in all {
        let rel = f.strip_prefix(&src).unwrap();
        let module = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        // lib.rs and main.rs list modules; src/bin/ holds stand-alone binaries (abperf-spawn
        // links nothing of the crate).
        if module == "lib" || module == "main" || module == "bin" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        let named = out.entry(module.clone()).or_default();
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != module {
                named.insert(name);
            }
        }
    }
    out
}

#[test]
fn every_module_names_only_the_modules_below_it() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut wrong = Vec::new();
    for (module, named) in uses() {
        let ok = allowed
            .get(module.as_str())
            .unwrap_or_else(|| panic!("module {module} is not in the layering table"));
        for n in named {
            if n != "error" && !ok.contains(&n.as_str()) {
                wrong.push(format!("{module} -> {n}"));
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layering: {wrong:?}");
}

#[test]
fn the_allowed_graph_has_no_cycle() {
    // Kahn's algorithm: every module must be removable once the modules it names are gone.
    let mut left: BTreeMap<&str, BTreeSet<&str>> = ALLOWED
        .iter()
        .map(|(m, deps)| (*m, deps.iter().copied().collect()))
        .collect();
    while !left.is_empty() {
        let free: Vec<&str> = left
            .iter()
            .filter(|(_, d)| d.is_empty())
            .map(|(m, _)| *m)
            .collect();
        assert!(!free.is_empty(), "a cycle among {:?}", left.keys());
        for m in free {
            left.remove(m);
            for d in left.values_mut() {
                d.remove(m);
            }
        }
    }
}

#[test]
fn the_scanner_sees_real_imports() {
    // A check that cannot pass vacuously: commands names the store, report names stats.
    let u = uses();
    assert!(u["commands"].contains("store"), "{u:?}");
    assert!(u["report"].contains("stats"), "{u:?}");
    assert!(u["model"].is_empty(), "{:?}", u["model"]);
}
