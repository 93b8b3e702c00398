//! `--format json`: everything. Schema `abperf-report` version 2, one document for `report`,
//! `compare`, `export`, `show`, `trace report` and `micro`, documented in docs/report-json.md
//! and checked against docs/abperf-report.schema.json by the tests. Non-finite numbers never
//! appear (they become null).

use super::{Render, Report, View};
use serde_json::{Value, json};

pub const SCHEMA: &str = "abperf-report";
pub const VERSION: u32 = 2;

pub struct Json;

impl Render for Json {
    fn render(&self, r: &Report) -> anyhow::Result<String> {
        let mut s = serde_json::to_string_pretty(&value(r)?)?;
        s.push('\n');
        Ok(s)
    }
}

/// The document as a JSON value.
pub fn value(d: &Report) -> anyhow::Result<Value> {
    let variants: Vec<Value> = d
        .data
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mut x = serde_json::to_value(v)?;
            x["position"] = json!(i);
            Ok(x)
        })
        .collect::<anyhow::Result<_>>()?;
    let runs: Vec<Value> = if d.include_runs {
        d.data
            .runs
            .iter()
            .map(|r| {
                let mut x = serde_json::to_value(r)?;
                x["variant_name"] = json!(d.variant_name(r.variant));
                x["counted"] = json!(r.counts());
                if d.data.has_boots() {
                    x["boot"] = json!(d.data.boot_of(r.variant, r.seq).map(|b| b.number));
                }
                Ok(x)
            })
            .collect::<anyhow::Result<_>>()?
    } else {
        Vec::new()
    };
    let analysis = match (&d.analysis, d.view) {
        (Some(a), v) if v != View::Export => serde_json::to_value(a)?,
        _ => Value::Null,
    };
    let mut doc = json!({
        "schema": SCHEMA,
        "version": VERSION,
        "generator": {"name": "abperf", "version": d.tool_version},
        "experiments": d.data.experiments,
        "source": d.data.source,
        "files": d.files(),
        "variants": variants,
        "metrics": d.data.metrics,
        "runs_included": d.include_runs,
        "runs_stored": d.data.runs.len(),
        "runs": runs,
        "describe": d.describe,
        "analysis": analysis,
        "notes": d.notes,
        "environment_differences": d.env_diffs,
        "trace": d.trace.as_ref().map(|t| super::trace::json(&t.info, &t.tables)),
        "micro": d.micro.as_ref().map(|m| m.json()),
        "data_sha256": d.data_sha256,
    });
    if let Some(m) = &d.micro_compare {
        doc["micro_compare"] = serde_json::to_value(m)?;
        // Its rows hold what a reader needs of each configuration (medians, ratio, CI, p,
        // verdict, rounds per side); the paired variants, the round medians, their descriptions
        // and the full comparisons repeat it at ~30 KB per configuration (21.5 MB for two
        // `--quick` suites): left out. The experiments hold the data.
        doc["variants"] = json!([]);
        doc["runs"] = json!([]);
        doc["runs_included"] = json!(false);
        doc["describe"] = json!([]);
        if let Some(c) = doc["analysis"].get_mut("comparisons") {
            *c = json!([]);
        }
    }
    if let Some(a) = &d.ceiling {
        doc["ceiling"] = super::ceiling::json(a);
    }
    // Kernel variants only: the boots, and the two-level analysis.
    if d.data.has_boots() {
        doc["boots"] = serde_json::to_value(&d.data.boots)?;
    }
    if let Some(l) = &d.levels
        && d.view != View::Export
    {
        doc["levels"] = serde_json::to_value(l)?;
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::super::testdata::sample;
    use super::*;

    #[test]
    fn schema_and_raw_runs() {
        let d = sample();
        let v: Value = serde_json::from_str(&Json.render(&d).unwrap()).unwrap();
        assert_eq!(v["schema"], "abperf-report");
        assert_eq!(v["version"], 2);
        assert_eq!(v["runs"].as_array().unwrap().len(), 16);
        assert_eq!(v["runs"][0]["variant_name"], "A");
        assert_eq!(v["runs"][0]["counted"], true);
        assert!(v["runs"][0]["metrics"]["user_ns"].as_f64().unwrap() > 8e11);
        assert_eq!(v["runs"][0]["source"]["line"], 1);
        assert_eq!(v["describe"].as_array().unwrap().len(), 8);
        assert_eq!(v["analysis"]["baseline"], "A");
        assert_eq!(v["analysis"]["comparisons"][0]["variant"], "B");
        assert_eq!(v["variants"][1]["name"], "B");
        assert_eq!(v["variants"][1]["position"], 1);
        assert_eq!(v["data_sha256"], d.data.data_hash());
        assert_eq!(v["metrics"][0]["direction"], "lower-is-better");
    }
}
