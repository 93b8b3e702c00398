//! `--format json`: everything. Schema `abperf-report` version 2, one document for `report`,
//! `compare`, `export`, `show`, `trace report` and `micro`, documented in docs/report-json.md
//! and checked against docs/abperf-report.schema.json by the tests. Non-finite numbers never
//! appear (they become null).

use super::section::Section;
use super::{Render, Report, View};
use serde_json::{Value, json};

pub const SCHEMA: &str = "abperf-report";
pub const VERSION: u32 = 2;

pub struct Json;

impl Render for Json {
    fn render(&self, r: &Report) -> anyhow::Result<String> {
        // The runs are written one at a time (a run's value lives only while it is written): as
        // one tree, 200,000 runs held 1.3 GB to write 72 MB.
        let doc = Streamed {
            rest: document(r)?,
            runs: Runs(r),
        };
        let mut s = serde_json::to_string_pretty(&doc)?;
        s.push('\n');
        Ok(s)
    }
}

/// The document as a JSON value (the same text as `--format json` writes).
pub fn value(d: &Report) -> anyhow::Result<Value> {
    let mut doc = document(d)?;
    let runs = (0..run_count(d))
        .map(|i| run_value(d, &d.data.runs[i]))
        .collect::<anyhow::Result<Vec<Value>>>()?;
    if let Value::Object(m) = &mut doc {
        m.insert("runs".into(), Value::Array(runs));
    }
    Ok(doc)
}

/// How many runs the document lists (none for a micro comparison or without `include_runs`).
fn run_count(d: &Report) -> usize {
    if d.include_runs && d.micro_compare.is_none() {
        d.data.runs.len()
    } else {
        0
    }
}

fn run_value(d: &Report, r: &abperf_model::Run) -> anyhow::Result<Value> {
    let mut x = serde_json::to_value(r)?;
    x["variant_name"] = json!(d.variant_name(r.variant));
    x["counted"] = json!(r.counts());
    if d.data.has_boots() {
        x["boot"] = json!(d.data.boot_of(r.variant, r.seq).map(|b| b.number));
    }
    Ok(x)
}

/// The runs array, each run's value made as it is written.
struct Runs<'a>(&'a Report);

impl serde::Serialize for Runs<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let n = run_count(self.0);
        let mut seq = s.serialize_seq(Some(n))?;
        for r in &self.0.data.runs[..n] {
            seq.serialize_element(&run_value(self.0, r).map_err(S::Error::custom)?)?;
        }
        seq.end()
    }
}

/// The document with `runs` in its sorted place among the other keys (as a `Value` map writes
/// them).
struct Streamed<'a> {
    rest: Value,
    runs: Runs<'a>,
}

impl serde::Serialize for Streamed<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let empty = serde_json::Map::new();
        let rest = self.rest.as_object().unwrap_or(&empty);
        let mut map = s.serialize_map(Some(rest.len() + 1))?;
        let mut runs_written = false;
        for (k, v) in rest {
            if !runs_written && k.as_str() > "runs" {
                map.serialize_entry("runs", &self.runs)?;
                runs_written = true;
            }
            map.serialize_entry(k, v)?;
        }
        if !runs_written {
            map.serialize_entry("runs", &self.runs)?;
        }
        map.end()
    }
}

/// Each comparison's intervals with their levels beside them: `ratio_ci_level`,
/// `hodges_lehmann_ci_level`, `sd_ratio_ci_level`, and in `evidence` `ci95_level` and
/// `ci90_level` (those names are the default alpha's; the levels are the intervals' own).
fn with_levels(a: &abperf_stats::analysis::Analysis, mut v: Value) -> Value {
    let Some(cs) = v.get_mut("comparisons").and_then(Value::as_array_mut) else {
        return v;
    };
    for (c, x) in a.comparisons.iter().zip(cs) {
        let d = &c.details;
        x["ratio_ci_level"] = json!(d.fieller95.map(|f| f.level));
        x["hodges_lehmann_ci_level"] = json!(d.hodges_lehmann.as_ref().map(|h| h.level));
        x["sd_ratio_ci_level"] = json!(c.sd_ratio_level());
        x["evidence"]["ci95_level"] = json!(c.evidence.ci95.map(|_| c.evidence.ci_level()));
        x["evidence"]["ci90_level"] =
            json!(c.evidence.ci90.map(|_| c.evidence.equivalence_level()));
    }
    v
}

/// The document without its runs.
fn document(d: &Report) -> anyhow::Result<Value> {
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
    let analysis = match (&d.analysis, d.view) {
        (Some(a), v) if v != View::Export => with_levels(a, serde_json::to_value(a)?),
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
        "describe": d.describe,
        "analysis": analysis,
        "notes": d.notes,
        "environment_differences": d.env_diffs,
        "trace": d.trace.as_ref().and_then(|t| t.json(d)).transpose()?,
        "micro": d.micro.as_ref().and_then(|m| m.json(d)).transpose()?,
        "data_sha256": d.data_sha256,
    });
    if let Some(m) = d.micro_compare.as_ref().and_then(|m| m.json(d)) {
        doc["micro_compare"] = m?;
        // Its rows hold what a reader needs of each configuration (medians, ratio, CI, p,
        // verdict, rounds per side); the paired variants, the round medians, their descriptions
        // and the full comparisons repeat it at ~30 KB per configuration (21.5 MB for two
        // `--quick` suites): left out. The experiments hold the data.
        doc["variants"] = json!([]);
        doc["runs_included"] = json!(false);
        doc["describe"] = json!([]);
        if let Some(c) = doc["analysis"].get_mut("comparisons") {
            *c = json!([]);
        }
    }
    if let Some(a) = d.ceiling.as_ref().and_then(|a| a.json(d)) {
        doc["ceiling"] = a?;
    }
    // Only with profiled runs (every other document is unchanged).
    if let Some(p) = d.profile.as_ref().and_then(|p| p.json(d)) {
        doc["profile"] = p?;
    }
    // Kernel variants only: the boots, and the two-level analysis.
    if d.data.has_boots() {
        doc["boots"] = serde_json::to_value(&d.data.boots)?;
    }
    if let Some(l) = d.levels.as_ref().and_then(|l| l.json(d))
        && d.view != View::Export
    {
        doc["levels"] = l?;
    }
    if let Some(l) = d.replication.as_ref().and_then(|l| l.json(d))
        && d.view != View::Export
    {
        doc["replication"] = l?;
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

    #[test]
    fn streamed_text_is_the_value_written_at_once() {
        let d = sample();
        let streamed = Json.render(&d).unwrap();
        let at_once = serde_json::to_string_pretty(&value(&d).unwrap()).unwrap() + "\n";
        assert_eq!(streamed, at_once);
        assert!(streamed.find("\"runs\"").unwrap() < streamed.find("\"runs_included\"").unwrap());
    }
}
