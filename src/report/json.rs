//! `--format json`: everything, raw runs included. Schema `abperf-report` version 1, documented
//! in docs/report-json.md. Non-finite numbers never appear (they become null).

use super::ReportData;
use serde_json::json;

pub const SCHEMA: &str = "abperf-report";
pub const VERSION: u32 = 1;

pub fn value(d: &ReportData) -> serde_json::Value {
    let e = &d.experiment;
    json!({
        "schema": SCHEMA,
        "version": VERSION,
        "generator": {"name": "abperf", "version": d.tool_version},
        "experiment": {
            "id": e.id,
            "name": e.name,
            "kind": e.kind,
            "created": e.created,
            "status": e.status,
            "command_line": e.command_line,
            "design": e.design,
            "seed": e.seed.map(|s| s.to_string()),
            "environment": e.environment,
        },
        "options": {
            "metrics": d.selected,
            "baseline": d.variant_name(d.baseline),
            "alpha": d.alpha,
        },
        "variants": d.variants,
        "metrics": d.metrics,
        "describe": d.describe,
        "tests": d.tests,
        "comparisons": d.verdicts,
        "verdict_notes": d.verdict_notes,
        "runs": d.runs,
        "trace": d.trace.as_ref().map(|t| t.json.clone()),
        "sources": d.sources,
        "data_sha256": d.data_sha256,
    })
}

pub fn render(d: &ReportData) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(&value(d))?;
    s.push('\n');
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::super::testdata::sample;

    #[test]
    fn schema_and_raw_runs() {
        let d = sample();
        let v: serde_json::Value = serde_json::from_str(&super::render(&d).unwrap()).unwrap();
        assert_eq!(v["schema"], "abperf-report");
        assert_eq!(v["version"], 1);
        assert_eq!(v["runs"].as_array().unwrap().len(), 16);
        assert_eq!(v["runs"][0]["variant_name"], "A");
        assert!(v["runs"][0]["metrics"]["user_ns"].as_f64().unwrap() > 8e11);
        assert_eq!(v["runs"][0]["source"]["line"], 1);
        assert_eq!(v["describe"].as_array().unwrap().len(), 8);
        assert_eq!(v["options"]["baseline"], "A");
        assert_eq!(v["variants"][1]["name"], "B");
    }
}
