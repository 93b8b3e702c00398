//! The one output path: every command that prints results (`report`, `compare`, `show`,
//! `export`, `trace report`, `micro`, the end of `run`) builds a [`Report`] and renders it with
//! the [`Render`] of a [`Format`], one file per format:
//!
//! | format | file | what |
//! |---|---|---|
//! | text | [`text`] | perf-stat-like blocks and verdicts; the comparison details ([`compare`]), the experiment listing of `show`, trace and micro tables, as the [`View`] asks |
//! | mail | [`mail`] | plain text for a mailing-list reply, at most 72 columns |
//! | md | [`markdown`] | GitHub-flavoured Markdown |
//! | json | [`json`] | everything, one versioned schema (`docs/report-json.md`, `docs/abperf-report.schema.json`) |
//! | csv | [`csv`] | everything in long form (the `csv` crate) |
//! | html | [`html`] | one self-contained page with inline SVG ([`svg`]) |
//! | hyperfine-json | [`hyperfine`] | hyperfine's `--export-json` schema |
//! | perf-stat | [`perfstat`] | `perf stat --repeat`'s per-variant block |
//!
//! The parts of a report are sections, each in its own module and each rendering itself in the
//! formats it appears in through the one [`Section`] trait: the comparison details
//! ([`compare`]), the two-level analysis of booted kernels ([`levels`]), a capture's tables
//! ([`trace`]), the ceiling advisor ([`ceiling`]), a micro suite ([`micro`]) and two micro
//! suites compared ([`micro_compare`]). The renderers place the sections and call them only
//! through the trait; both use the cell helpers of [`table`] and the number formatting of
//! [`fmt`].
//!
//! Results that are no experiment report (the checks of `abperf doctor`, the kernels and KVM
//! probe of `abperf vm`, the built-in workloads) render through [`plain`] in text or JSON:
//! [`doctor`], [`vm`], [`workloads`]; the experiment list of `abperf list` is [`listing`], the answer of `abperf plan` [`plan`].
//!
//! A [`Report`] is a pure value (a [`Dataset`] with its descriptions, an optional analysis,
//! trace and micro sections), so every renderer is unit-tested without a store.

pub mod ceiling;
pub mod ceiling_mail;
pub mod compare;
pub mod csv;
pub mod doctor;
pub mod flame;
pub mod flame_svg;
pub mod fmt;
pub mod history;
pub mod hosts;
pub mod html;
pub mod hyperfine;
pub mod json;
pub mod labels;
pub mod levels;
pub mod listing;
pub mod mail;
pub mod markdown;
pub mod micro;
pub mod micro_compare;
pub mod paragraph;
pub mod perfstat;
pub mod plain;
pub mod plan;
pub mod profile;
pub mod profile_svg;
pub mod ran;
pub mod replication;
pub mod same_config;
pub mod section;
pub mod svg;
pub mod table;
pub mod text;
pub mod trace;
pub mod trace_captures;
pub mod trace_compare;
pub mod vm;
pub mod workloads;

use abperf_model::describe::Description;
use abperf_model::trace::{CaptureInfo, Tables};
use abperf_model::{Dataset, MetricInfo};
use abperf_stats::analysis::Analysis;
use abperf_stats::compare::Comparison;
pub use section::Section;
use serde::Serialize;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// perf-stat-like summary plus verdicts
    Text,
    /// plain text for a mailing-list reply, at most 72 columns
    Mail,
    /// GitHub-flavoured Markdown tables (also `markdown`)
    #[value(alias = "markdown")]
    Md,
    /// everything, raw runs included (versioned schema, docs/report-json.md)
    Json,
    /// everything in long form: one row per run and metric, description, comparison
    Csv,
    /// one self-contained HTML file with inline SVG plots
    Html,
    /// hyperfine's --export-json schema
    HyperfineJson,
    /// perf stat --repeat's per-variant block
    PerfStat,
}

/// Renders a whole [`Report`] in one format.
pub trait Render {
    fn render(&self, r: &Report) -> anyhow::Result<String>;
}

impl Format {
    /// The renderer of this format.
    pub fn renderer(self) -> &'static dyn Render {
        match self {
            Format::Text => &text::Text,
            Format::Mail => &mail::Mail,
            Format::Md => &markdown::Markdown,
            Format::Json => &json::Json,
            Format::Csv => &csv::Csv,
            Format::Html => &html::Html,
            Format::HyperfineJson => &hyperfine::Hyperfine,
            Format::PerfStat => &perfstat::PerfStat,
        }
    }

    pub fn render(self, r: &Report) -> anyhow::Result<String> {
        self.renderer().render(r)
    }
}

/// Which trace tables to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    All,
    Tlb,
    Fpu,
    Pair,
    Count,
}

/// What the text format puts first (the other formats show every section a report holds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// `report`: header, perf-stat blocks, verdict lines, trace and micro tables, provenance.
    Report,
    /// `compare`: environment differences, every comparison in detail, provenance.
    Compare,
    /// `show`: header, design, environment, variants and knobs, perf-stat blocks; every run
    /// when `runs`.
    Show { runs: bool },
    /// `trace record|import|report`: the capture's tables.
    Trace(Which),
    /// `micro`: the suite's tables and findings.
    Micro,
    /// The end of `run`: perf-stat blocks and verdict lines.
    RunEnd,
    /// `model ceiling`: the ceiling advisor's curve and recommendation.
    Ceiling,
    /// `export`: the raw data (JSON without the analysis, CSV one row per run).
    Export,
}

/// A capture's metadata and tables.
#[derive(Debug, Clone)]
pub struct TraceSection {
    pub info: CaptureInfo,
    pub tables: Tables,
}

/// A description of one metric of one variant over its counted runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Described {
    pub variant: String,
    pub metric: String,
    #[serde(flatten)]
    pub d: Description,
}

/// An environment field that differs between two experiments: (field, baseline, candidate).
pub type EnvDiff = (String, String, String);

/// Everything an output shows.
#[derive(Debug, Clone)]
pub struct Report {
    pub data: Dataset,
    /// Per variant and metric (auxiliary metrics included), in metric then variant order.
    pub describe: Vec<Described>,
    /// The comparisons, when any were made.
    pub analysis: Option<Analysis>,
    /// Why there are no (or fewer) verdicts, in words.
    pub notes: Vec<String>,
    /// Two experiments: every environment field that differs.
    pub env_diffs: Vec<EnvDiff>,
    pub trace: Option<TraceSection>,
    pub micro: Option<micro::MicroData>,
    /// Two micro experiments compared configuration by configuration (`compare A B`).
    pub micro_compare: Option<micro_compare::MicroCompare>,
    /// The ceiling advisor's prediction (`model ceiling`).
    pub ceiling: Option<abperf_model::ceiling::CeilingAdvice>,
    /// The two-level analysis of kernel variants (boots x runs).
    pub levels: Option<levels::LevelsSection>,
    /// The analysis over replication levels of runs that name their invocation, boot or host.
    pub replication: Option<replication::ReplicationSection>,
    /// Profiled runs (`run --profile`) and their differentials.
    pub profile: Option<profile::ProfileSection>,
    pub view: View,
    /// Whether raw runs are listed in JSON and CSV (micro experiments hold thousands of
    /// samples: their report gives the per-configuration table instead).
    pub include_runs: bool,
    /// `compare --details`: the text shows every comparison in full (test statistics, robust
    /// checks, drift, outliers); without it the verdict lines, the summary and the table.
    pub details: bool,
    pub data_sha256: String,
    pub tool_version: String,
}

impl Report {
    /// A report of `data`: descriptions and the data hash, nothing analysed yet.
    pub fn new(data: Dataset, view: View) -> Report {
        let mut describe = Vec::new();
        for m in &data.metrics {
            for (pos, v) in data.variants.iter().enumerate() {
                if let Some(d) = data.describe(pos, &m.name) {
                    describe.push(Described {
                        variant: v.name.clone(),
                        metric: m.name.clone(),
                        d,
                    });
                }
            }
        }
        Report {
            data_sha256: data.data_hash(),
            data,
            describe,
            analysis: None,
            notes: Vec::new(),
            env_diffs: Vec::new(),
            trace: None,
            micro: None,
            micro_compare: None,
            ceiling: None,
            levels: None,
            replication: None,
            profile: None,
            view,
            include_runs: true,
            details: false,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }

    /// The same runs regrouped into other variants (`compare --by host`: one per variant and
    /// host): descriptions made anew, the data hash still that of the stored data.
    pub fn regroup(&mut self, data: Dataset) {
        let fresh = Report::new(data, self.view);
        self.data = fresh.data;
        self.describe = fresh.describe;
    }

    /// The comparisons (none without an analysis).
    pub fn comparisons(&self) -> &[Comparison] {
        self.analysis
            .as_ref()
            .map(|a| a.comparisons.as_slice())
            .unwrap_or(&[])
    }

    /// Notes and skipped comparisons, in words.
    pub fn verdict_notes(&self) -> Vec<String> {
        let mut out = self.notes.clone();
        if let Some(a) = &self.analysis {
            out.extend(a.skipped.iter().map(|s| format!("not compared: {s}")));
        }
        out
    }

    /// Baseline variant name ("" without an analysis).
    pub fn baseline(&self) -> &str {
        self.analysis
            .as_ref()
            .map(|a| a.baseline.as_str())
            .unwrap_or("")
    }

    /// Metrics the verdicts are about.
    pub fn selected(&self) -> Vec<String> {
        self.analysis
            .as_ref()
            .map(|a| a.metrics.clone())
            .unwrap_or_default()
    }

    pub fn alpha(&self) -> f64 {
        self.analysis
            .as_ref()
            .map(|a| a.options.alpha)
            .unwrap_or(0.05)
    }

    /// The tests behind the verdicts, short, for method lines ("Welch t, Fieller 95% CI, Holm
    /// m=1", the level the intervals' own; "" when none ran). The full list is in the analysis
    /// (and compare's footer).
    pub fn tests(&self) -> String {
        match &self.analysis {
            Some(a) if !a.comparisons.is_empty() => {
                let hosts = a
                    .comparisons
                    .iter()
                    .filter(|c| c.primary == "hosts")
                    .count();
                let primary = if hosts == a.comparisons.len() {
                    "random effects over hosts (Paule-Mandel tau^2, HKSJ CI)"
                } else if hosts > 0 {
                    "random effects over hosts / Welch t on host means, Fieller CI"
                } else if a.comparisons.iter().all(|c| c.primary == "ancova") {
                    &format!(
                        "ANCOVA with run index, {}",
                        fmt::ci_words(a.comparisons.iter().map(|c| c.evidence.ci_level()))
                    )
                } else if a.comparisons.iter().any(|c| c.primary == "ancova") {
                    &format!(
                        "ANCOVA with run index / Welch t, Fieller {}",
                        fmt::ci_words(a.comparisons.iter().map(|c| c.evidence.ci_level()))
                    )
                } else {
                    &format!(
                        "Welch t, Fieller {}",
                        fmt::ci_words(a.comparisons.iter().map(|c| c.evidence.ci_level()))
                    )
                };
                format!("{primary}, {} m={}", a.correction, a.m.max(1))
            }
            _ => String::new(),
        }
    }

    pub fn metric(&self, name: &str) -> Option<&MetricInfo> {
        self.data.metric(name)
    }

    pub fn main_metrics(&self) -> impl Iterator<Item = &MetricInfo> {
        self.data.main_metrics()
    }

    pub fn description(&self, variant: &str, metric: &str) -> Option<&Description> {
        self.describe
            .iter()
            .find(|d| d.variant == variant && d.metric == metric)
            .map(|d| &d.d)
    }

    /// Counted values of `metric` for variant `pos`, in run order.
    pub fn values(&self, pos: usize, metric: &str) -> Vec<f64> {
        self.data.values(pos, metric)
    }

    pub fn variant_name(&self, pos: usize) -> &str {
        self.data
            .variants
            .get(pos)
            .map(|v| v.name.as_str())
            .unwrap_or("?")
    }

    /// perf stat's "+-" figure for a variant's metric: from its runs, or, when the variant has a
    /// single row that is a tool's summary (perf stat -r N), the figure the tool printed.
    pub fn pm_pct(&self, variant: &str, metric: &str) -> Option<f64> {
        let d = self.description(variant, metric)?;
        if d.pm_pct.is_some() || d.n != 1 {
            return d.pm_pct;
        }
        let pos = self.data.position(variant)?;
        self.data
            .counted(pos)
            .find(|r| r.value(metric).is_some())
            .and_then(|r| r.value(&format!("{metric}.stderr_pct")))
    }

    /// "12 runs", or "1 row: the mean of 5 runs (perf stat -r)" for tool summaries.
    pub fn runs_text(&self, pos: usize) -> String {
        let rows: Vec<_> = self.data.counted(pos).collect();
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

    /// "12+12", or for a micro experiment "101 per configuration" / "31 to 2001 per
    /// configuration" (hundreds of configurations would run off the page).
    pub fn n_text(&self) -> String {
        let n = self.data.n_text();
        let counts: Vec<u64> = n.split('+').filter_map(|p| p.parse().ok()).collect();
        match (counts.iter().min(), counts.iter().max()) {
            (Some(lo), Some(hi)) if self.micro.is_some() && counts.len() > 1 => {
                if lo == hi {
                    format!("{lo} per configuration")
                } else {
                    format!("{lo} to {hi} per configuration")
                }
            }
            _ => n,
        }
    }

    /// What the data are, in words: `experiment 7 "name"`, `experiments 3 and 4`, `files a, b`.
    pub fn title(&self) -> String {
        match self.data.experiments.as_slice() {
            [e] => format!("experiment {} \"{}\"", e.id, e.name),
            [] => self.data.source.clone(),
            es => {
                let ids: Vec<String> = es.iter().map(|e| e.id.to_string()).collect();
                format!("experiments {}", ids.join(" and "))
            }
        }
    }

    /// Machine and kernel of the (first) experiment, in words.
    pub fn machine_text(&self) -> String {
        self.data
            .experiments
            .first()
            .map(|e| e.machine_text())
            .unwrap_or_else(|| "machine not recorded".to_string())
    }

    /// How the runs were ordered, in words.
    pub fn order_text(&self) -> String {
        match self.data.experiment() {
            Some(e) => e.order_text(),
            None => "no common run order".to_string(),
        }
    }

    /// Files the runs were imported from.
    pub fn files(&self) -> Vec<String> {
        self.data.files()
    }
}

#[cfg(test)]
pub(crate) mod testdata {
    //! A small analysed report for the renderers' unit tests.
    use super::*;
    use abperf_model::dataset::testdata::two_variants;
    use abperf_stats::analysis::{Settings, analyse};
    use abperf_stats::compare::Options;

    pub fn sample() -> Report {
        sample_named("A", "B")
    }

    pub fn analysed(data: Dataset, metric: &str) -> Report {
        let mut r = Report::new(data, View::Report);
        let settings = Settings::against(0, vec![metric.to_string()], Options::default());
        r.analysis = Some(analyse(&r.data, &settings));
        r
    }

    pub fn sample_named(a: &str, b: &str) -> Report {
        analysed(two_variants(a, b), "user_ns")
    }
}

#[cfg(test)]
mod tests {
    use super::testdata::sample;
    use abperf_model::{RunStatus, Source};

    #[test]
    fn perf_stat_summaries_keep_perfs_figure() {
        let mut d = sample();
        // Variant A: a single perf stat -r 5 summary row with perf's +- figure.
        d.data.runs.retain(|r| r.variant == 1 || r.seq == 0);
        d.data.runs[0].source = Some(Source {
            format: "perf-stat".into(),
            file: "p.txt".into(),
            line: 2,
            summary: true,
            repeats: Some(5),
        });
        let d = super::Report::new(d.data, super::View::Report);
        assert_eq!(d.pm_pct("A", "user_ns"), Some(0.5));
        assert_eq!(d.runs_text(0), "1 row: the mean of 5 runs (perf stat -r)");
        assert_eq!(d.runs_text(1), "8 runs");
        assert!(d.pm_pct("B", "user_ns").unwrap() < 0.1);
        let t = super::Format::Text.render(&d).unwrap();
        assert!(
            t.contains(" Performance summary for 'A' (1 row: the mean of 5 runs (perf stat -r)):"),
            "{t}"
        );
        assert!(t.contains("( +-  0.50% )"), "{t}");
    }

    #[test]
    fn counted_runs_and_text() {
        let mut d = sample();
        assert_eq!(d.n_text(), "8+8");
        assert_eq!(d.title(), "experiment 7 \"tlb <flush> & co\"");
        assert_eq!(d.comparisons().len(), 1);
        assert_eq!(d.tests(), "Welch t, Fieller 95% CI, Holm m=1");
        d.data.runs[0].status = RunStatus::Failed;
        assert_eq!(d.data.n_text(), "7+8");
    }
}
