//! `--format hyperfine-json`: hyperfine's `--export-json` schema, so existing plot scripts keep
//! working. Times come from the first verdict metric when it is a time in ns (else `wall_ns`),
//! in seconds (analysed runs only); `user`/`system` are the means of `user_ns`/`sys_ns` (or the imported hyperfine
//! means), null when unknown; `exit_codes` is null for a run killed by a signal and 0 for an ok run with no recorded code.

use super::{Render, Report};
use abperf_model::RunStatus;
use abperf_model::describe::describe;
use serde_json::{Value, json};

pub struct Hyperfine;

impl Render for Hyperfine {
    fn render(&self, d: &Report) -> anyhow::Result<String> {
        let mut s = serde_json::to_string_pretty(&value(d)?)?;
        s.push('\n');
        Ok(s)
    }
}

fn time_metric(d: &Report) -> Option<String> {
    d.selected()
        .into_iter()
        .find(|m| d.metric(m).is_some_and(|i| i.unit == "ns"))
        .or_else(|| d.metric("wall_ns").map(|m| m.name.clone()))
}

pub fn value(d: &Report) -> anyhow::Result<Value> {
    let metric = time_metric(d).ok_or_else(|| {
        abperf_model::error::usage(
            "hyperfine-json needs a time metric in ns (e.g. wall_ns); choose one with --metric",
        )
    })?;
    let mut results = Vec::new();
    for (pos, v) in d.data.variants.iter().enumerate() {
        let runs: Vec<_> = d
            .data
            .counted(pos)
            .filter(|r| r.value(&metric).is_some())
            .collect();
        let times: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.value(&metric))
            .map(|x| x / 1e9)
            .collect();
        let Some(desc) = describe(&times) else {
            continue;
        };
        let mean_of = |m: &str, summary: &str| -> Value {
            let xs: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.value(m))
                .map(|x| x / 1e9)
                .collect();
            if xs.len() == runs.len() && !xs.is_empty() {
                json!(xs.iter().sum::<f64>() / xs.len() as f64)
            } else if let Some(s) = v.summary.get(summary) {
                json!(s.value / 1e9)
            } else {
                Value::Null
            }
        };
        // hyperfine writes null for a signal death; a run stored as ok without a code exited 0.
        let exit_codes: Vec<Value> = runs
            .iter()
            .map(|r| match (r.exit_code, r.signal) {
                (Some(c), _) => json!(c),
                (None, None) if r.status == RunStatus::Ok => json!(0),
                _ => Value::Null,
            })
            .collect();
        let mut res = json!({
            "command": v.command.clone().unwrap_or_else(|| v.name.clone()),
            "mean": desc.mean,
            "stddev": desc.sd,
            "median": desc.median,
            "user": mean_of("user_ns", "user_ns_mean"),
            "system": mean_of("sys_ns", "sys_ns_mean"),
            "min": desc.min,
            "max": desc.max,
            "times": times,
            "exit_codes": exit_codes,
        });
        if !v.parameters.is_empty() {
            res["parameters"] = json!(v.parameters);
        }
        if v.command.as_deref().is_some_and(|c| c != v.name) {
            res["command_name"] = json!(v.name);
        }
        results.push(res);
    }
    Ok(json!({ "results": results }))
}

#[cfg(test)]
mod tests {
    use super::super::testdata::sample;

    #[test]
    fn hyperfine_schema_round_trips_through_the_importer() {
        let d = sample();
        let text = super::super::Render::render(&super::Hyperfine, &d).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let r0 = &v["results"][0];
        assert_eq!(r0["times"].as_array().unwrap().len(), 8);
        assert!(
            (r0["mean"].as_f64().unwrap() - d.description("A", "user_ns").unwrap().mean / 1e9)
                .abs()
                < 1e-9
        );
        assert_eq!(r0["user"].as_f64().map(|u| u > 800.0), Some(true));
        assert!(r0["system"].is_null());
        // Our own hyperfine importer reads it back.
        let imp = abperf_import::hyperfine::parse("x.json", &text).unwrap();
        assert_eq!(imp.variants.len(), 2);
        assert_eq!(imp.runs_at(1).len(), 8);
    }
}
