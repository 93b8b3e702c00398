//! Where `abperf compare` and `abperf plan` get their numbers: a stored experiment, two stored
//! experiments, or plain files of numbers (ministat mode).

use crate::error::usage;
use crate::stats::analysis::{Dataset, RunData, VariantData};
use crate::store::{RunStatus, Store};
use std::collections::BTreeMap;
use std::path::Path;

/// The analysable runs of a stored experiment: not warm-ups, status ok, not excluded.
pub fn from_store(store: &Store, id: i64) -> anyhow::Result<Dataset> {
    let exp = store.experiment(id)?;
    let variants = store.variants(id)?;
    let runs = store.runs(id)?;
    // An imported file's line order is not a run schedule (seed 000's lines are sorted by user
    // time): without a real order there is no drift to test for.
    let scheduled = exp.design.get("order").and_then(|o| o.as_str()) != Some("imported");
    let mut ds = Dataset {
        variants: variants
            .iter()
            .map(|v| VariantData {
                name: v.name.clone(),
                runs: Vec::new(),
            })
            .collect(),
        environment: Some(exp.environment.clone()),
        design: Some(exp.design.clone()),
        seed: exp.seed,
        source: format!(
            "experiment {id} ({}) in {}",
            exp.name,
            store.path().display()
        ),
        ..Dataset::default()
    };
    for r in runs {
        if r.warmup || r.status != RunStatus::Ok || r.excluded.is_some() {
            ds.left_out += 1;
            continue;
        }
        for (k, u) in &r.units {
            ds.units.entry(k.clone()).or_insert_with(|| u.clone());
        }
        let duration = (r.ended_ns > r.started_ns).then(|| (r.ended_ns - r.started_ns) as f64);
        if let Some(v) = ds.variants.get_mut(r.variant) {
            v.runs.push(RunData {
                seq: scheduled.then_some(r.seq as f64),
                duration_ns: duration,
                metrics: r.metrics,
            });
        }
    }
    Ok(ds)
}

/// Parse a file of numbers: one value per line, `#` lines and blank lines ignored; `column`
/// (1-based) picks a whitespace-separated field. Values must be finite and not negative.
pub fn parse_numbers(text: &str, file: &str, column: usize) -> anyhow::Result<Vec<f64>> {
    if column == 0 {
        return Err(usage("-c: columns are numbered from 1"));
    }
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = t.split_whitespace().collect();
        let field = fields.get(column - 1).ok_or_else(|| {
            usage(format!(
                "{file}:{lineno}: has {} column(s), -c {column} asks for column {column}",
                fields.len()
            ))
        })?;
        let v: f64 = field.parse().map_err(|_| {
            usage(format!(
                "{file}:{lineno}: column {column}: expected a number, got '{field}'"
            ))
        })?;
        if !v.is_finite() {
            return Err(usage(format!(
                "{file}:{lineno}: column {column}: '{field}' is not a finite number"
            )));
        }
        if v < 0.0 {
            return Err(usage(format!(
                "{file}:{lineno}: column {column}: negative value {field} (expected a time, count or rate >= 0)"
            )));
        }
        out.push(v);
    }
    if out.is_empty() {
        return Err(usage(format!(
            "{file}: no numbers found (blank and '#' lines are ignored)"
        )));
    }
    Ok(out)
}

/// Ministat mode: each file is one variant named by its file name; the metric is "value".
pub fn from_files(paths: &[String], column: usize) -> anyhow::Result<Dataset> {
    let mut ds = Dataset {
        source: format!("files {}", paths.join(", ")),
        ..Dataset::default()
    };
    let metric = if column == 1 {
        "value".to_string()
    } else {
        format!("column {column}")
    };
    let names: Vec<String> = paths
        .iter()
        .map(|p| {
            Path::new(p)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.clone())
        })
        .collect();
    for (i, path) in paths.iter().enumerate() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| usage(format!("{path}: cannot read: {e}")))?;
        let values = parse_numbers(&text, path, column)?;
        // Two files with the same base name: use the path as given.
        let name = if names.iter().filter(|n| **n == names[i]).count() > 1 {
            path.clone()
        } else {
            names[i].clone()
        };
        ds.variants.push(VariantData {
            name,
            runs: values
                .into_iter()
                .map(|v| RunData {
                    seq: None,
                    duration_ns: None,
                    metrics: BTreeMap::from([(metric.clone(), v)]),
                })
                .collect(),
        });
    }
    Ok(ds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_columns_comments_and_reports_lines() {
        let text = "# seed 000\nn 879.25 77.50\n\n  y 874.62 77.98\n";
        assert_eq!(parse_numbers(text, "f", 2).unwrap(), vec![879.25, 874.62]);
        let e = parse_numbers(text, "f", 1).unwrap_err().to_string();
        assert_eq!(e, "f:2: column 1: expected a number, got 'n'");
        let e = parse_numbers("1\n2\n-3\n", "g", 1).unwrap_err().to_string();
        assert!(e.starts_with("g:3: column 1: negative value -3"), "{e}");
        let e = parse_numbers("1\nNaN\n", "g", 1).unwrap_err().to_string();
        assert!(e.starts_with("g:2:"), "{e}");
        let e = parse_numbers("1 2\n", "g", 3).unwrap_err().to_string();
        assert_eq!(e, "g:1: has 2 column(s), -c 3 asks for column 3");
        assert!(parse_numbers("# nothing\n", "g", 1).is_err());
    }
}
