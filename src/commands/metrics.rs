//! Metric names as users type them: the stored name (`user_ns`), the label of perf-stat-like
//! blocks (`user`, `max RSS`), the names /usr/bin/time, hyperfine and getrusage use (`wall`,
//! `elapsed`, `maxrss`, `minflt`), in any case. Accepted wherever a metric is named (`compare`,
//! `report`, `plan --metric`); an unknown name is a usage error listing the metrics stored.

use crate::error::usage;
use crate::model::Dataset;
use crate::model::metric::WELL_KNOWN;

/// Other names of well-known metrics (the stored name and its block label are always accepted).
const ALIASES: &[(&str, &[&str])] = &[
    (
        "wall_ns",
        &["wall", "real", "elapsed", "time", "wall-clock", "wall_time"],
    ),
    ("user_ns", &["user", "utime", "user_time"]),
    (
        "sys_ns",
        &["sys", "system", "stime", "sys_time", "system_time"],
    ),
    ("cpu_pct", &["cpu", "cpu%", "percent_cpu"]),
    (
        "maxrss_kib",
        &["maxrss", "rss", "max_rss", "max-rss", "maxresident"],
    ),
    ("minflt", &["minor", "minor_faults", "minor-faults"]),
    ("majflt", &["major", "major_faults", "major-faults"]),
    ("nvcsw", &["voluntary", "voluntary_ctxt_switches"]),
    ("nivcsw", &["involuntary", "involuntary_ctxt_switches"]),
    ("inblock", &["inputs", "block_input"]),
    ("oublock", &["outputs", "block_output"]),
];

fn norm(s: &str) -> String {
    s.trim()
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c == ' ' || c == '-' { '_' } else { c })
        .collect()
}

/// The stored metric `name` means in `ds`, if any.
pub fn lookup(ds: &Dataset, name: &str) -> Option<String> {
    if ds.metric(name).is_some() {
        return Some(name.to_string());
    }
    let n = norm(name);
    // Case and separators: `Page-Faults`, `page_faults`.
    if let Some(m) = ds.metrics.iter().find(|m| norm(&m.name) == n) {
        return Some(m.name.clone());
    }
    let mut candidates: Vec<String> = Vec::new();
    for (stored, label) in WELL_KNOWN {
        if norm(label) == n {
            candidates.push(stored.to_string());
        }
    }
    for (stored, names) in ALIASES {
        if names.iter().any(|a| norm(a) == n) {
            candidates.push(stored.to_string());
        }
    }
    for suffix in ["_ns", "_kib", "_pct"] {
        candidates.push(format!("{n}{suffix}"));
    }
    candidates.into_iter().find(|c| ds.metric(c).is_some())
}

/// Stored metrics with their short names, for error messages: `wall_ns (wall), ..., page-faults`.
pub fn listing(ds: &Dataset) -> String {
    let names: Vec<String> = ds
        .main_metrics()
        .map(|m| {
            // The short name of a stored name with a unit suffix (`wall_ns` -> `wall`).
            let short = ALIASES
                .iter()
                .find(|(s, _)| *s == m.name && s.contains('_'))
                .map(|(_, names)| names[0]);
            match short {
                Some(s) => format!("{} ({s})", m.name),
                None => m.name.clone(),
            }
        })
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// `name` resolved, or a usage error naming `flag` and listing what is stored.
pub fn resolve(ds: &Dataset, name: &str, flag: &str) -> anyhow::Result<String> {
    lookup(ds, name).ok_or_else(|| {
        usage(format!(
            "{flag} {name}: no such metric in {}; metrics: {}",
            where_(ds),
            listing(ds)
        ))
    })
}

fn where_(ds: &Dataset) -> String {
    match ds.experiment() {
        Some(e) => format!("experiment {}", e.id),
        None => "these data".into(),
    }
}

/// Metrics with at least one value in variant `pos`, in display order.
pub fn stored_for(ds: &Dataset, pos: usize) -> Vec<String> {
    ds.main_metrics()
        .filter(|m| ds.counted(pos).any(|r| r.value(&m.name).is_some()))
        .map(|m| m.name.clone())
        .collect()
}

/// Check that every variant with successful runs has values of `metric`; else a usage error
/// that says which variant lacks it and what each variant has.
pub fn check_every_variant_has(ds: &Dataset, metric: &str, flag: &str) -> anyhow::Result<()> {
    let lacking: Vec<usize> = (0..ds.variants.len())
        .filter(|&p| ds.counted(p).next().is_some() && ds.values(p, metric).is_empty())
        .collect();
    if lacking.is_empty() {
        return Ok(());
    }
    Err(usage(format!(
        "{flag}{metric}: not stored for variant {}; {}",
        lacking
            .iter()
            .map(|&p| format!("'{}'", ds.variants[p].name))
            .collect::<Vec<_>>()
            .join(", "),
        per_variant(ds)
    )))
}

/// `metrics per variant: a: wall_ns, user_ns; b: task-clock`.
pub fn per_variant(ds: &Dataset) -> String {
    let parts: Vec<String> = (0..ds.variants.len())
        .map(|p| {
            let m = stored_for(ds, p);
            format!(
                "{}: {}",
                ds.variants[p].name,
                if m.is_empty() {
                    "no successful run".to_string()
                } else {
                    m.join(", ")
                }
            )
        })
        .collect();
    format!("metrics per variant: {}", parts.join("; "))
}

/// The metric judged when none is named: `preferred` when every variant with successful runs has
/// it, else the first (in display order) that they all have; `None` when they share none.
pub fn default_metric(ds: &Dataset, preferred: &str) -> Option<String> {
    let live: Vec<usize> = (0..ds.variants.len())
        .filter(|&p| ds.counted(p).next().is_some())
        .collect();
    let shared = |m: &str| live.iter().all(|&p| !ds.values(p, m).is_empty());
    if ds.metric(preferred).is_some() && shared(preferred) {
        return Some(preferred.to_string());
    }
    ds.main_metrics()
        .map(|m| m.name.clone())
        .find(|m| shared(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Metric, Run, Variant};

    fn ds() -> Dataset {
        let runs = vec![
            Run::ok(
                0,
                0,
                vec![
                    Metric::new("wall_ns", 1.0, "ns"),
                    Metric::new("user_ns", 1.0, "ns"),
                    Metric::new("maxrss_kib", 1.0, "KiB"),
                    Metric::new("page-faults", 1.0, "count"),
                ],
            ),
            Run::ok(1, 1, vec![Metric::new("task-clock", 1.0, "ns")]),
        ];
        Dataset::new(
            vec![],
            vec![Variant::named("a"), Variant::named("b")],
            runs,
            "test".into(),
        )
    }

    #[test]
    fn aliases_resolve_to_stored_names() {
        let d = ds();
        for (alias, stored) in [
            ("wall", "wall_ns"),
            ("elapsed", "wall_ns"),
            ("WALL_NS", "wall_ns"),
            ("user", "user_ns"),
            ("maxrss", "maxrss_kib"),
            ("max RSS", "maxrss_kib"),
            ("page_faults", "page-faults"),
            ("Task-Clock", "task-clock"),
        ] {
            assert_eq!(lookup(&d, alias).as_deref(), Some(stored), "{alias}");
        }
        let e = resolve(&d, "sys", "--metric").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(
            e.to_string()
                .contains("metrics: wall_ns (wall), user_ns (user), maxrss_kib (maxrss)"),
            "{e}"
        );
    }

    #[test]
    fn the_default_metric_is_one_every_variant_has() {
        let d = ds();
        assert_eq!(default_metric(&d, "wall_ns"), None);
        let e = check_every_variant_has(&d, "wall_ns", "--metric ").unwrap_err();
        assert!(
            e.to_string().contains(
                "not stored for variant 'b'; metrics per variant: a: wall_ns, user_ns, \
                 maxrss_kib, page-faults; b: task-clock"
            ),
            "{e}"
        );
    }
}
