//! `abperf history --format json`: every series of the query with its points (one series: the
//! one named), outliers, p-values and changes (detected, and confirmed when `--confirm` ran).
//! Schema `abperf-history` version 1, `$defs/history` of docs/abperf-report.schema.json.

use super::{Analysed, Change, HistoryReport, Order};
use serde_json::{Value, json};

fn change(a: &Analysed, c: &Change, order: &Order) -> Value {
    json!({
        "index": c.index,
        "first_after": a.series.point_name(c.index, order),
        "experiment_after": a.series.points[c.index].experiment,
        "experiment_before": a.series.points[c.index - 1].experiment,
        "location": [a.series.point_name(c.location.0, order), a.series.point_name(c.location.1, order)],
        "location_index": [c.location.0, c.location.1],
        "size": c.size,
        "size_interval": [c.size_interval.0, c.size_interval.1],
        "relative": c.relative,
        "direction": if c.regression { "worse" } else { "better" },
        "status": match &c.confirmed {
            None => "detected",
            Some(k) if k.confirmed => "confirmed",
            Some(_) => "not confirmed",
        },
        "bisect": c.bisect.as_ref().map(|b| json!({
            "command": b.command,
            "result": b.result,
        })),
        "confirmation": c.confirmed.as_ref().map(|k| json!({
            "experiment": k.experiment,
            "confirmed": k.confirmed,
            "text": k.text,
        })),
    })
}

fn series(a: &Analysed, order: &Order) -> Value {
    let points: Vec<Value> = a
        .series
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            json!({
                "name": a.series.point_name(i, order),
                "experiment": p.experiment,
                "kind": p.kind.as_str(),
                "created": p.created,
                "labels": p.labels,
                "kernel": p.kernel,
                "runs": p.runs,
                "mean": p.mean,
                "se": p.se(),
                "outlier": a.outliers.contains(&i),
            })
        })
        .collect();
    json!({
        "number": a.series.number,
        "command": a.series.key.command,
        "variant": a.series.key.variant,
        "metric": a.series.key.metric,
        "host": a.series.key.host,
        "skipped": a.skipped,
        "p": a.p,
        "adjusted_p": a.adjusted_p,
        "noise_factor": a.noise_factor,
        "points": points,
        "changes": a.changes.iter().map(|c| change(a, c, order)).collect::<Vec<_>>(),
    })
}

pub fn render(r: &HistoryReport) -> String {
    let order = match &r.order {
        Order::Time => json!({"by": "time"}),
        Order::Label(l) => json!({"by": "label", "label": l}),
    };
    let v = json!({
        "schema": "abperf-history",
        "version": 1,
        "generator": format!("abperf {}", env!("CARGO_PKG_VERSION")),
        "kind": "history",
        "alpha": r.alpha,
        "order": order,
        "series": r.series.iter().map(|a| series(a, &r.order)).collect::<Vec<_>>(),
    });
    let mut s = serde_json::to_string_pretty(&v).expect("JSON values serialise");
    s.push('\n');
    s
}
