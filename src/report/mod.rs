//! Reports: one experiment from the store rendered as text, mail, Markdown, JSON, CSV,
//! hyperfine JSON or a self-contained HTML page with inline SVG plots.
//!
//! [`build`] reads the store once into a [`ReportData`] (raw runs, per-variant descriptions,
//! verdicts); every renderer is a pure function of it, so each format is unit-tested without a
//! store. Verdict lines and ratio CIs come from [`verdicts`], which calls the statistics module.

pub mod csv;
pub mod fmt;
pub mod html;
pub mod hyperfine;
pub mod json;
pub mod mail;
pub mod markdown;
pub mod micro;
pub mod perfstat;
pub mod svg;
pub mod text;
pub mod verdicts;

use crate::error::usage;
use crate::store::{Experiment, ImportSource, KnobSetting, RunStatus, Store};
use serde::Serialize;
use sha2::{Digest, Sha256};
use statrs::statistics::{Data, OrderStatistics, Statistics};
use std::collections::BTreeMap;

/// Output formats of `abperf report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// perf-stat-like summary plus verdicts
    Text,
    /// plain text for a mailing-list reply, at most 72 columns
    Mail,
    /// GitHub-flavoured Markdown tables
    Md,
    /// everything, raw runs included (versioned schema, docs/report-json.md)
    Json,
    /// everything in long form: one row per run and metric, description, comparison
    Csv,
    /// one self-contained HTML file with inline SVG plots
    Html,
    /// hyperfine's --export-json schema
    HyperfineJson,
}

/// What to analyse.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Metrics to give verdicts for (empty: the primary metric, see [`primary_metric`]).
    pub metrics: Vec<String>,
    /// Baseline variant name (None: the first variant).
    pub baseline: Option<String>,
    pub alpha: f64,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            metrics: Vec::new(),
            baseline: None,
            alpha: 0.05,
        }
    }
}

/// A metric present in the experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricInfo {
    pub name: String,
    pub unit: String,
    /// A figure about another metric (`EVENT.stderr_pct`, `EVENT.running_pct` from perf stat):
    /// kept in raw data, left out of summary tables, plots and verdicts.
    pub auxiliary: bool,
}

/// One variant with its description per metric.
#[derive(Debug, Clone, Serialize)]
pub struct VariantData {
    pub position: usize,
    pub name: String,
    pub command: Option<String>,
    pub parameters: BTreeMap<String, String>,
    pub knobs: Vec<KnobSetting>,
    /// Per-variant means an importer reported without per-run values (hyperfine user/system).
    pub import_summary: BTreeMap<String, SummaryValue>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryValue {
    pub value: f64,
    pub unit: String,
}

/// One stored run, raw.
#[derive(Debug, Clone, Serialize)]
pub struct RunData {
    pub seq: u32,
    /// Variant position.
    pub variant: usize,
    pub variant_name: String,
    pub status: RunStatus,
    pub warmup: bool,
    pub excluded: Option<String>,
    /// Counted in descriptions and tests: status ok, not a warm-up, not excluded.
    pub analysed: bool,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub started_ns: i64,
    pub ended_ns: i64,
    pub metrics: BTreeMap<String, f64>,
    pub source: Option<ImportSource>,
}

/// Description of one metric for one variant over its analysed runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Description {
    pub variant: String,
    pub metric: String,
    pub n: usize,
    pub mean: f64,
    /// Sample SD (n-1); None below 2 runs.
    pub sd: Option<f64>,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub q1: f64,
    pub q3: f64,
    /// perf stat's "(+- x%)": 100 * SD / sqrt(n) / mean.
    pub pm_pct: Option<f64>,
}

/// One verdict of a variant against the baseline on one metric, as the reports show it.
#[derive(Debug, Clone, Serialize)]
pub struct VerdictRow {
    pub metric: String,
    pub baseline: String,
    pub variant: String,
    /// faster | slower | no difference | inconclusive
    pub verdict: String,
    /// The paste-ready sentence.
    pub line: String,
    /// mean(variant) / mean(baseline) and its 95% CI.
    pub ratio: f64,
    pub ratio_ci: Option<[f64; 2]>,
    pub p: Option<f64>,
    /// The statistics module's full comparison (every test), for JSON.
    pub detail: serde_json::Value,
}

/// The tables of a trace capture, rendered by the trace module.
#[derive(Debug, Clone)]
pub struct TraceTables {
    pub text: String,
    pub json: serde_json::Value,
}

/// Everything a report shows.
#[derive(Debug, Clone)]
pub struct ReportData {
    pub experiment: Experiment,
    pub variants: Vec<VariantData>,
    pub metrics: Vec<MetricInfo>,
    pub runs: Vec<RunData>,
    pub describe: Vec<Description>,
    /// Metrics the verdicts are about.
    pub selected: Vec<String>,
    /// Baseline variant position.
    pub baseline: usize,
    pub alpha: f64,
    pub verdicts: Vec<VerdictRow>,
    /// Why there are no verdicts, when there are none (e.g. too few runs).
    pub verdict_notes: Vec<String>,
    /// The tests behind the verdicts, for method lines ("Welch t, Fieller 95% CI, Holm m=2").
    pub tests: String,
    /// Files the runs were imported from, in order.
    pub sources: Vec<String>,
    /// SHA-256 of the raw data (variant, seq, status, metrics of every run).
    pub data_sha256: String,
    /// A trace capture's tables (experiments of kind `trace`): the trace module's text and JSON.
    pub trace: Option<TraceTables>,
    /// A micro experiment's configurations and findings (experiments of kind `micro`).
    pub micro: Option<micro::MicroData>,
    pub tool_version: String,
}

/// Metrics shown first, in this order.
const WELL_KNOWN: &[&str] = &[
    "wall_ns",
    "user_ns",
    "sys_ns",
    "cpu_pct",
    "maxrss_kib",
    "minflt",
    "majflt",
    "nvcsw",
    "nivcsw",
    "inblock",
    "oublock",
    "nswap",
];

fn is_auxiliary(name: &str) -> bool {
    name.ends_with(".stderr_pct") || name.ends_with(".running_pct")
}

/// The metric verdicts default to: `wall_ns` when present, else the first non-auxiliary one.
pub fn primary_metric(metrics: &[MetricInfo]) -> Option<&str> {
    metrics
        .iter()
        .find(|m| m.name == "wall_ns")
        .or_else(|| metrics.iter().find(|m| !m.auxiliary))
        .map(|m| m.name.as_str())
}

impl ReportData {
    pub fn variant_name(&self, pos: usize) -> &str {
        self.variants
            .iter()
            .find(|v| v.position == pos)
            .map(|v| v.name.as_str())
            .unwrap_or("?")
    }

    pub fn metric(&self, name: &str) -> Option<&MetricInfo> {
        self.metrics.iter().find(|m| m.name == name)
    }

    pub fn description(&self, variant: &str, metric: &str) -> Option<&Description> {
        self.describe
            .iter()
            .find(|d| d.variant == variant && d.metric == metric)
    }

    /// Analysed values of `metric` for the variant at `pos`, in run order.
    pub fn values(&self, pos: usize, metric: &str) -> Vec<f64> {
        self.runs
            .iter()
            .filter(|r| r.analysed && r.variant == pos)
            .filter_map(|r| r.metrics.get(metric).copied())
            .collect()
    }

    /// perf stat's "+-" figure for a variant's metric: from its runs, or, when the variant has a
    /// single row that is a tool's summary (perf stat -r N), the figure the tool printed.
    pub fn pm_pct(&self, variant: &str, metric: &str) -> Option<f64> {
        let d = self.description(variant, metric)?;
        if d.pm_pct.is_some() || d.n != 1 {
            return d.pm_pct;
        }
        let aux = format!("{metric}.stderr_pct");
        self.runs
            .iter()
            .find(|r| r.analysed && r.variant_name == variant && r.metrics.contains_key(metric))
            .and_then(|r| r.metrics.get(&aux).copied())
    }

    /// "12 runs", or "1 row: the mean of 5 runs (perf stat -r)" for tool summaries.
    pub fn runs_text(&self, pos: usize) -> String {
        let rows: Vec<&RunData> = self
            .runs
            .iter()
            .filter(|r| r.analysed && r.variant == pos)
            .collect();
        let summaries: Vec<Option<u32>> = rows
            .iter()
            .filter_map(|r| r.source.as_ref().filter(|s| s.summary).map(|s| s.repeats))
            .collect();
        if summaries.is_empty() {
            return format!("{} runs", rows.len());
        }
        let of = match summaries.iter().copied().collect::<Option<Vec<u32>>>() {
            Some(ns) if ns.iter().all(|n| *n == ns[0]) => format!("the mean of {} runs", ns[0]),
            Some(_) => "means of several runs".to_string(),
            None => "means of an unknown number of runs".to_string(),
        };
        let noun = if rows.len() == 1 { "row" } else { "rows" };
        format!("{} {noun}: {of} (perf stat -r)", rows.len())
    }

    /// Non-auxiliary metrics, in display order.
    pub fn main_metrics(&self) -> impl Iterator<Item = &MetricInfo> {
        self.metrics.iter().filter(|m| !m.auxiliary)
    }

    pub fn analysed_runs(&self) -> usize {
        self.runs.iter().filter(|r| r.analysed).count()
    }

    /// "12+12": analysed runs per variant in position order.
    pub fn n_text(&self) -> String {
        self.variants
            .iter()
            .map(|v| {
                self.runs
                    .iter()
                    .filter(|r| r.analysed && r.variant == v.position)
                    .count()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("+")
    }

    /// Machine and kernel from the environment snapshot, for provenance lines.
    pub fn machine_text(&self) -> String {
        let env = &self.experiment.environment;
        if env.get("imported").and_then(|v| v.as_bool()) == Some(true) {
            return "measured elsewhere (machine not recorded)".to_string();
        }
        let get = |k: &str| {
            env.get(k)
                .and_then(|v| v.as_str())
                .filter(|s| !s.is_empty())
        };
        let mut parts = Vec::new();
        if let Some(k) = get("kernel") {
            parts.push(format!("kernel {k}"));
        }
        if let Some(c) = get("cpu_model") {
            match env.get("cpu_count").and_then(|v| v.as_u64()) {
                Some(n) => parts.push(format!("{c} x{n}")),
                None => parts.push(c.to_string()),
            }
        }
        if let Some(kind) = env
            .get("virtualization")
            .and_then(|v| v.get("kind"))
            .and_then(|v| v.as_str())
        {
            parts.push(kind.to_string());
        }
        if let Some(g) = get("cpufreq_governor") {
            parts.push(format!("governor {g}"));
        }
        if parts.is_empty() {
            "machine not recorded".to_string()
        } else {
            parts.join(", ")
        }
    }

    /// How the runs were ordered, for the method line.
    pub fn order_text(&self) -> String {
        match self.experiment.design.get("order").and_then(|o| o.as_str()) {
            Some("imported") => "order as imported".to_string(),
            Some(o) => format!("order {o}"),
            None => "order unknown".to_string(),
        }
    }
}

/// Describe `xs` (non-empty, finite).
pub fn describe(variant: &str, metric: &str, xs: &[f64]) -> Option<Description> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = xs.len();
    let mean = xs.mean();
    let sd = (n >= 2).then(|| xs.std_dev());
    let mut data = Data::new(xs.to_vec());
    let pm_pct = sd
        .filter(|_| mean != 0.0)
        .map(|sd| 100.0 * sd / (n as f64).sqrt() / mean.abs());
    Some(Description {
        variant: variant.to_string(),
        metric: metric.to_string(),
        n,
        mean,
        sd,
        median: data.median(),
        min: xs.min(),
        max: xs.max(),
        q1: data.lower_quartile(),
        q3: data.upper_quartile(),
        pm_pct,
    })
}

/// Read experiment `id` and analyse it.
pub fn build(store: &Store, id: i64, opts: &ReportOptions) -> anyhow::Result<ReportData> {
    if !(opts.alpha > 0.0 && opts.alpha < 1.0) {
        return Err(usage(format!(
            "--alpha {}: expected a number between 0 and 1 (e.g. 0.05)",
            opts.alpha
        )));
    }
    let experiment = store.experiment(id)?;
    let stored_variants = store.variants(id)?;
    let stored_runs = store.runs(id)?;
    let sources = store.import_sources(id)?;
    let summaries = store.import_variant_summaries(id)?;

    let variants: Vec<VariantData> = stored_variants
        .iter()
        .map(|v| VariantData {
            position: v.position,
            name: v.name.clone(),
            command: v.command.clone(),
            parameters: v.parameters.clone(),
            knobs: v.knobs.clone(),
            import_summary: summaries
                .get(&v.position)
                .map(|m| {
                    m.iter()
                        .map(|(k, (value, unit))| {
                            (
                                k.clone(),
                                SummaryValue {
                                    value: *value,
                                    unit: unit.clone(),
                                },
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect();
    let name_of = |pos: usize| {
        variants
            .iter()
            .find(|v| v.position == pos)
            .map(|v| v.name.clone())
            .unwrap_or_default()
    };

    // Metrics: well-known first, then in order of first appearance.
    let mut metrics: Vec<MetricInfo> = Vec::new();
    for r in &stored_runs {
        for (name, unit) in &r.units {
            if !metrics.iter().any(|m| &m.name == name) {
                metrics.push(MetricInfo {
                    name: name.clone(),
                    unit: unit.clone(),
                    auxiliary: is_auxiliary(name),
                });
            }
        }
    }
    metrics.sort_by_key(|m| {
        WELL_KNOWN
            .iter()
            .position(|w| *w == m.name)
            .unwrap_or(WELL_KNOWN.len())
    });

    let runs: Vec<RunData> = stored_runs
        .iter()
        .map(|r| RunData {
            seq: r.seq,
            variant: r.variant,
            variant_name: name_of(r.variant),
            status: r.status,
            warmup: r.warmup,
            excluded: r.excluded.clone(),
            analysed: r.status == RunStatus::Ok && !r.warmup && r.excluded.is_none(),
            exit_code: r.exit_code,
            signal: r.signal,
            started_ns: r.started_ns,
            ended_ns: r.ended_ns,
            metrics: r.metrics.clone(),
            source: sources.get(&r.id).cloned(),
        })
        .collect();

    let mut describe_rows = Vec::new();
    for m in &metrics {
        for v in &variants {
            let xs: Vec<f64> = runs
                .iter()
                .filter(|r| r.analysed && r.variant == v.position)
                .filter_map(|r| r.metrics.get(&m.name).copied())
                .collect();
            if let Some(d) = describe(&v.name, &m.name, &xs) {
                describe_rows.push(d);
            }
        }
    }

    let baseline = match &opts.baseline {
        None => variants.first().map(|v| v.position).unwrap_or(0),
        Some(b) => variants
            .iter()
            .find(|v| &v.name == b)
            .map(|v| v.position)
            .ok_or_else(|| {
                let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
                usage(format!(
                    "--baseline {b:?}: no such variant in experiment {id} (variants: {})",
                    names.join(", ")
                ))
            })?,
    };
    let selected = if opts.metrics.is_empty() {
        primary_metric(&metrics)
            .map(|m| vec![m.to_string()])
            .unwrap_or_default()
    } else if opts.metrics.iter().any(|m| m == "all") {
        metrics
            .iter()
            .filter(|m| !m.auxiliary)
            .map(|m| m.name.clone())
            .collect()
    } else {
        for m in &opts.metrics {
            if !metrics.iter().any(|x| &x.name == m) {
                let names: Vec<&str> = metrics
                    .iter()
                    .filter(|m| !m.auxiliary)
                    .map(|m| m.name.as_str())
                    .collect();
                return Err(usage(format!(
                    "--metric {m:?}: experiment {id} has no such metric (metrics: {})",
                    names.join(", ")
                )));
            }
        }
        opts.metrics.clone()
    };

    let mut file_list: Vec<String> = Vec::new();
    for r in &runs {
        if let Some(s) = &r.source
            && !file_list.contains(&s.file)
        {
            file_list.push(s.file.clone());
        }
    }

    let mut data = ReportData {
        experiment,
        variants,
        metrics,
        data_sha256: data_hash(&runs),
        runs,
        describe: describe_rows,
        selected,
        baseline,
        alpha: opts.alpha,
        verdicts: Vec::new(),
        verdict_notes: Vec::new(),
        tests: String::new(),
        trace: None,
        micro: None,
        sources: file_list,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
    };
    // A micro experiment's variants are configurations (op, pages, ...), not treatments of one
    // workload: every one against the first is meaningless (and hundreds of comparisons). Only
    // when the user names a baseline.
    if data.experiment.kind == "micro" && opts.baseline.is_none() {
        data.verdict_notes.push(
            "micro experiment: its variants are configurations, not treatments of one workload; \
             no verdicts against the first (name one with --baseline)"
                .to_string(),
        );
    } else {
        let v = verdicts::compute(&data);
        data.verdicts = v.rows;
        data.verdict_notes = v.notes;
        data.tests = v.tests;
    }
    if data.experiment.kind == "micro" {
        match store.micro_findings(id) {
            Ok(f) => data.micro = Some(micro::build(&data, f)),
            Err(e) => data
                .verdict_notes
                .push(format!("micro findings unavailable: {e:#}")),
        }
    }
    if data.experiment.kind == "trace" {
        match store.load_capture(id) {
            Ok((info, tables)) => {
                let which = crate::trace::render::Which::All;
                data.trace = Some(TraceTables {
                    text: crate::trace::render::text(&info, &tables, which),
                    json: crate::trace::render::json(&info, &tables),
                });
            }
            Err(e) => data
                .verdict_notes
                .push(format!("trace tables unavailable: {e:#}")),
        }
    }
    Ok(data)
}

/// SHA-256 over every run's variant name, seq, status and metrics (sorted by name, values as
/// exact bit patterns), hex.
pub fn data_hash(runs: &[RunData]) -> String {
    let mut h = Sha256::new();
    for r in runs {
        h.update(r.variant_name.as_bytes());
        h.update([0]);
        h.update(r.seq.to_le_bytes());
        h.update(r.status.as_str().as_bytes());
        h.update([0]);
        for (k, v) in &r.metrics {
            h.update(k.as_bytes());
            h.update([0]);
            h.update(v.to_bits().to_le_bytes());
        }
        h.update([1]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Render `data` in `format`.
pub fn render(format: ReportFormat, data: &ReportData) -> anyhow::Result<String> {
    Ok(match format {
        ReportFormat::Text => text::render(data),
        ReportFormat::Mail => mail::render(data),
        ReportFormat::Md => markdown::render(data),
        ReportFormat::Json => json::render(data)?,
        ReportFormat::Csv => csv::render(data),
        ReportFormat::Html => html::render(data),
        ReportFormat::HyperfineJson => hyperfine::render(data)?,
    })
}

#[cfg(test)]
pub(crate) mod testdata {
    //! A small in-memory experiment for the renderers' unit tests.
    use super::*;

    pub fn sample() -> ReportData {
        sample_named("A", "B")
    }

    pub fn sample_named(a: &str, b: &str) -> ReportData {
        let experiment = Experiment {
            id: 7,
            name: "tlb <flush> & co".into(),
            kind: "import".into(),
            created: "2026-11-22T05:00:00Z".into(),
            command_line: vec!["abperf".into(), "import".into()],
            design: serde_json::json!({"order": "imported"}),
            seed: None,
            environment: serde_json::json!({}),
            status: crate::store::Status::Complete,
        };
        let variant = |pos: usize, name: &str| VariantData {
            position: pos,
            name: name.into(),
            command: Some(format!("make -j8 # {name}")),
            parameters: BTreeMap::new(),
            knobs: Vec::new(),
            import_summary: BTreeMap::new(),
        };
        let mut runs = Vec::new();
        for i in 0..16u32 {
            let pos = (i % 2) as usize;
            let base = if pos == 0 { 880.0 } else { 875.0 };
            let wiggle = ((i * 7919) % 13) as f64 / 10.0;
            let mut metrics = BTreeMap::new();
            metrics.insert("user_ns".to_string(), (base + wiggle) * 1e9);
            metrics.insert("maxrss_kib".to_string(), 798_000.0 + wiggle * 100.0);
            metrics.insert("minflt".to_string(), 58_366_597.0 + wiggle * 1000.0);
            metrics.insert("user_ns.stderr_pct".to_string(), 0.5);
            runs.push(RunData {
                seq: i,
                variant: pos,
                variant_name: if pos == 0 { a.into() } else { b.into() },
                status: RunStatus::Ok,
                warmup: false,
                excluded: None,
                analysed: true,
                exit_code: Some(0),
                signal: None,
                started_ns: 0,
                ended_ns: 0,
                metrics,
                source: Some(ImportSource {
                    format: "time".into(),
                    file: "seed000-time.txt".into(),
                    line: i + 1,
                    summary: false,
                    repeats: None,
                }),
            });
        }
        let metrics = vec![
            MetricInfo {
                name: "user_ns".into(),
                unit: "ns".into(),
                auxiliary: false,
            },
            MetricInfo {
                name: "maxrss_kib".into(),
                unit: "KiB".into(),
                auxiliary: false,
            },
            MetricInfo {
                name: "minflt".into(),
                unit: "count".into(),
                auxiliary: false,
            },
            MetricInfo {
                name: "user_ns.stderr_pct".into(),
                unit: "%".into(),
                auxiliary: true,
            },
        ];
        let variants = vec![variant(0, a), variant(1, b)];
        let mut describe_rows = Vec::new();
        for m in &metrics {
            for v in &variants {
                let xs: Vec<f64> = runs
                    .iter()
                    .filter(|r| r.variant == v.position)
                    .map(|r| r.metrics[&m.name])
                    .collect();
                describe_rows.push(describe(&v.name, &m.name, &xs).unwrap());
            }
        }
        let mut data = ReportData {
            experiment,
            variants,
            metrics,
            data_sha256: data_hash(&runs),
            runs,
            describe: describe_rows,
            selected: vec!["user_ns".into()],
            baseline: 0,
            alpha: 0.05,
            verdicts: Vec::new(),
            verdict_notes: Vec::new(),
            tests: String::new(),
            trace: None,
            micro: None,
            sources: vec!["seed000-time.txt".into()],
            tool_version: "0.1.0".into(),
        };
        let v = verdicts::compute(&data);
        data.verdicts = v.rows;
        data.verdict_notes = v.notes;
        data.tests = v.tests;
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_matches_hand_values() {
        let d = describe("a", "m", &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(d.n, 4);
        assert_eq!(d.mean, 2.5);
        assert!((d.sd.unwrap() - 1.2909944487358056).abs() < 1e-12);
        assert_eq!(d.median, 2.5);
        assert_eq!((d.min, d.max), (1.0, 4.0));
        assert!((d.pm_pct.unwrap() - 100.0 * 1.2909944487358056 / 2.0 / 2.5).abs() < 1e-9);
        let one = describe("a", "m", &[5.0]).unwrap();
        assert_eq!(one.sd, None);
        assert_eq!(one.pm_pct, None);
        assert!(describe("a", "m", &[]).is_none());
        assert!(describe("a", "m", &[f64::NAN]).is_none());
    }

    #[test]
    fn primary_metric_prefers_wall_time() {
        let m = |n: &str, aux| MetricInfo {
            name: n.into(),
            unit: "ns".into(),
            auxiliary: aux,
        };
        assert_eq!(
            primary_metric(&[
                m("x.stderr_pct", true),
                m("user_ns", false),
                m("wall_ns", false)
            ]),
            Some("wall_ns")
        );
        assert_eq!(
            primary_metric(&[m("x.stderr_pct", true), m("user_ns", false)]),
            Some("user_ns")
        );
        assert_eq!(primary_metric(&[]), None);
    }

    #[test]
    fn machine_text_from_environment() {
        let mut d = testdata::sample();
        assert_eq!(d.machine_text(), "machine not recorded");
        d.experiment.environment = serde_json::json!({
            "kernel": "6.18.44", "cpu_model": "AMD EPYC", "cpu_count": 2,
            "virtualization": {"kind": "virtual machine"}, "cpufreq_governor": null
        });
        assert_eq!(
            d.machine_text(),
            "kernel 6.18.44, AMD EPYC x2, virtual machine"
        );
        d.experiment.environment = serde_json::json!({"imported": true});
        assert_eq!(
            d.machine_text(),
            "measured elsewhere (machine not recorded)"
        );
    }

    #[test]
    fn hash_changes_with_data() {
        let a = testdata::sample();
        let mut runs = a.runs.clone();
        let h0 = data_hash(&runs);
        runs[3].metrics.insert("user_ns".into(), 1.0);
        assert_ne!(h0, data_hash(&runs));
        assert_eq!(h0.len(), 64);
    }
}

#[cfg(test)]
mod summary_rows_tests {
    use super::*;

    #[test]
    fn perf_stat_summaries_keep_perfs_figure() {
        let mut d = testdata::sample();
        // Variant A: a single perf stat -r 5 summary row with perf's +- figure.
        d.runs.retain(|r| r.variant == 1 || r.seq == 0);
        d.runs[0].source = Some(ImportSource {
            format: "perf-stat".into(),
            file: "p.txt".into(),
            line: 2,
            summary: true,
            repeats: Some(5),
        });
        d.describe = d
            .variants
            .iter()
            .map(|v| describe(&v.name, "user_ns", &d.values(v.position, "user_ns")).unwrap())
            .collect();
        assert_eq!(d.pm_pct("A", "user_ns"), Some(0.5));
        assert_eq!(d.runs_text(0), "1 row: the mean of 5 runs (perf stat -r)");
        assert_eq!(d.runs_text(1), "8 runs");
        assert!(d.pm_pct("B", "user_ns").unwrap() < 0.1);
        let t = text::render(&d);
        assert!(
            t.contains(" Performance summary for 'A' (1 row: the mean of 5 runs (perf stat -r)):"),
            "{t}"
        );
        assert!(t.contains("( +-  0.50% )"), "{t}");
    }
}
