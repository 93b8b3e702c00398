//! `abperf export ID --format json|csv`: every run and metric, raw.

use crate::cli::DbArgs;
use crate::error::usage;
use crate::store::Store;
use serde_json::json;
use std::collections::BTreeSet;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Experiment id, or `latest`
    pub id: String,
    #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
    pub format: ExportFormat,
    /// Write to FILE instead of stdout
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// The export document: `experiment`, `variants`, `runs` (each with `variant` by name).
pub fn json_document(store: &Store, id: i64) -> anyhow::Result<serde_json::Value> {
    let exp = store.experiment(id)?;
    let variants = store.variants(id)?;
    let runs = store.runs(id)?;
    let schedule = store.schedule(id)?;
    let runs_json: Vec<serde_json::Value> = runs
        .iter()
        .map(|r| {
            let mut v = serde_json::to_value(r).expect("plain data");
            v["variant"] = json!(variants.get(r.variant).map(|v| v.name.clone()));
            v["block"] = json!(schedule.iter().find(|s| s.seq == r.seq).map(|s| s.block));
            v["units"] = json!(r.units);
            v
        })
        .collect();
    let mut exp_json = serde_json::to_value(&exp)?;
    // The run order at the top level too (it is also inside `design`).
    exp_json["order"] = exp
        .design
        .get("order")
        .cloned()
        .unwrap_or(serde_json::Value::Null);
    Ok(json!({
        "format": "abperf-export",
        "version": 1,
        "experiment": exp_json,
        "variants": variants,
        "runs": runs_json,
    }))
}

fn csv_text(store: &Store, id: i64) -> anyhow::Result<String> {
    let variants = store.variants(id)?;
    let runs = store.runs(id)?;
    let metrics: BTreeSet<String> = runs
        .iter()
        .flat_map(|r| r.metrics.keys().cloned())
        .collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec![
        "experiment",
        "variant",
        "seq",
        "warmup",
        "status",
        "exit_code",
        "signal",
        "started_ns",
        "ended_ns",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    header.extend(metrics.iter().cloned());
    w.write_record(&header)?;
    for r in &runs {
        let mut rec = vec![
            id.to_string(),
            variants
                .get(r.variant)
                .map(|v| v.name.clone())
                .unwrap_or_default(),
            r.seq.to_string(),
            r.warmup.to_string(),
            r.status.as_str().to_string(),
            r.exit_code.map(|c| c.to_string()).unwrap_or_default(),
            r.signal.map(|c| c.to_string()).unwrap_or_default(),
            r.started_ns.to_string(),
            r.ended_ns.to_string(),
        ];
        rec.extend(
            metrics
                .iter()
                .map(|m| r.metrics.get(m).map(|v| v.to_string()).unwrap_or_default()),
        );
        w.write_record(&rec)?;
    }
    Ok(String::from_utf8(
        w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?,
    )?)
}

pub fn run(args: ExportArgs) -> anyhow::Result<i32> {
    let store = Store::open_resolved(args.db.db.as_deref())?;
    let id = store.resolve_id(&args.id)?;
    let text = match args.format {
        ExportFormat::Json => serde_json::to_string_pretty(&json_document(&store, id)?)? + "\n",
        ExportFormat::Csv => csv_text(&store, id)?,
    };
    match &args.output {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| usage(format!("-o {}: cannot write ({e})", p.display())))?,
        None => print!("{text}"),
    }
    Ok(0)
}
