//! `abperf compare`: verdicts for each variant against the baseline, from a stored experiment,
//! two stored experiments (e.g. two kernels), or files of numbers (ministat mode).

use super::compare_input::{from_files, from_store};
use crate::error::usage;
use crate::stats::analysis::{Dataset, Settings, VariantData, analyse};
use crate::stats::compare::{Comparison, Options};
use crate::stats::multiple::Correction;
use crate::stats::render::comparison_text;
use crate::store::Store;
use anyhow::Context;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::fmt::Write;
use std::path::Path;

/// Environment differences: (field, baseline value, candidate value).
pub type EnvDiffs = Vec<(String, String, String)>;

/// The metric judged when none is named: wall-clock time of each run.
pub const DEFAULT_METRIC: &str = "wall_ns";

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Inputs: one experiment ID (each variant against the baseline), two experiment IDs \
(baseline and candidate, environment differences listed first), or two or more files of numbers \
(ministat mode: one value per line, '#' lines ignored, -c picks a column; the first file is the baseline).\n\n\
The '(+- x%)' after each variant is perf stat's figure: the standard error of the mean relative to the mean.\n\
Verdicts: FASTER/SLOWER when the 95% CI of the ratio excludes 1 and p < alpha; NO DIFFERENCE when the 90% CI \
lies within +-margin; otherwise INCONCLUSIVE, with the runs per variant needed."
)]
pub struct CompareArgs {
    /// Experiment ID ('latest'), two IDs, or files of numbers
    #[arg(value_name = "ID|FILE", required = true, num_args = 1..)]
    pub inputs: Vec<String>,
    /// Baseline variant (default: the first)
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// With two experiments: the variant compared in both (default: the first of each)
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// Metric to judge, or 'all' (corrected across metrics); default wall_ns
    #[arg(long, value_name = "NAME|all")]
    pub metric: Option<String>,
    /// Significance level
    #[arg(long, default_value_t = 0.05, value_name = "A")]
    pub alpha: f64,
    /// Equivalence margin in percent for NO DIFFERENCE
    #[arg(long, default_value_t = 0.2, value_name = "PCT")]
    pub margin: f64,
    /// Smallest effect of interest in percent (for the runs needed when inconclusive)
    #[arg(long, default_value_t = 0.5, value_name = "PCT")]
    pub effect: f64,
    /// Correction for several variants or metrics
    #[arg(long, value_enum, default_value_t = Correction::Holm)]
    pub correction: Correction,
    /// Leave out values Tukey flags as outliers (1.5 IQR) before the analysis
    #[arg(long)]
    pub without_outliers: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Ministat mode: the whitespace-separated column to read (from 1)
    #[arg(short = 'c', long = "column", default_value_t = 1, value_name = "N")]
    pub column: usize,
    /// Bootstrap resamples (0 skips the bootstrap)
    #[arg(long, default_value_t = crate::stats::bootstrap::DEFAULT_RESAMPLES, value_name = "N")]
    pub resamples: usize,
    /// Bootstrap seed (default: the experiment's seed, else a fixed one)
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Treat the metric as a rate: higher is better (default: decided from its unit)
    #[arg(long)]
    pub higher_is_better: bool,
    #[command(flatten)]
    pub db: crate::cli::DbArgs,
}

/// The JSON document of `--format json`.
#[derive(Debug, Serialize)]
pub struct Report {
    pub comparisons: Vec<Comparison>,
    /// Metrics or variants that could not be compared, with the reason.
    pub skipped: Vec<String>,
    /// Two experiments: (field, baseline value, candidate value) of every environment difference.
    pub environment_differences: EnvDiffs,
    pub provenance: Provenance,
}

#[derive(Debug, Serialize)]
pub struct Provenance {
    pub source: String,
    pub tests: String,
    pub alpha: f64,
    pub margin_pct: f64,
    pub correction: String,
    pub m: usize,
    pub seed: u64,
    pub resamples: usize,
    pub design: Option<serde_json::Value>,
    pub machine: Option<String>,
    pub kernel: Option<String>,
    pub data_sha256: String,
    pub runs_left_out: usize,
    pub outliers_removed: usize,
}

fn check_options(args: &CompareArgs) -> anyhow::Result<()> {
    if !(args.alpha > 0.0 && args.alpha < 0.5) {
        return Err(usage(format!(
            "--alpha {}: expected a level between 0 and 0.5, e.g. 0.05",
            args.alpha
        )));
    }
    if !(args.margin > 0.0 && args.margin < 100.0) {
        return Err(usage(format!(
            "--margin {}: expected a percentage between 0 and 100, e.g. 0.2",
            args.margin
        )));
    }
    if !(args.effect > 0.0 && args.effect < 100.0) {
        return Err(usage(format!(
            "--effect {}: expected a percentage between 0 and 100, e.g. 0.5",
            args.effect
        )));
    }
    if args.resamples != 0 && args.resamples < 100 {
        return Err(usage(format!(
            "--resamples {}: expected 0 (no bootstrap) or at least 100",
            args.resamples
        )));
    }
    Ok(())
}

fn is_experiment_ref(s: &str) -> bool {
    s == "latest" || s.parse::<i64>().is_ok()
}

/// Load the inputs: files, one experiment, or two experiments merged into one two-variant set.
fn load(args: &CompareArgs) -> anyhow::Result<(Dataset, EnvDiffs)> {
    let files: Vec<bool> = args.inputs.iter().map(|p| Path::new(p).is_file()).collect();
    if files.iter().all(|&f| f) {
        if args.inputs.len() < 2 {
            return Err(usage(format!(
                "{}: one file is one variant; give at least two files (the first is the baseline)",
                args.inputs[0]
            )));
        }
        return Ok((from_files(&args.inputs, args.column)?, Vec::new()));
    }
    if let Some(bad) = args
        .inputs
        .iter()
        .zip(&files)
        .find(|(p, f)| !**f && !is_experiment_ref(p))
    {
        return Err(usage(format!(
            "'{}': no such file, and not an experiment id (a number or 'latest')",
            bad.0
        )));
    }
    if files.iter().any(|&f| f) {
        return Err(usage(
            "mix of files and experiment ids: give only files or only ids",
        ));
    }
    let store = Store::open_resolved(args.db.db.as_deref())?;
    match args.inputs.len() {
        1 => {
            let id = store.resolve_id(&args.inputs[0])?;
            Ok((from_store(&store, id)?, Vec::new()))
        }
        2 => {
            let ida = store.resolve_id(&args.inputs[0])?;
            let idb = store.resolve_id(&args.inputs[1])?;
            let (a, b) = (from_store(&store, ida)?, from_store(&store, idb)?);
            let pick = |ds: &Dataset, id: i64| -> anyhow::Result<VariantData> {
                let pos = match &args.variant {
                    Some(n) => ds.position(n).with_context(|| format!("experiment {id}"))?,
                    None => 0,
                };
                let mut v = ds
                    .variants
                    .get(pos)
                    .cloned()
                    .ok_or_else(|| usage(format!("experiment {id} has no variants")))?;
                v.name = format!("#{id}:{}", v.name);
                // Runs of different experiments share no schedule.
                for r in &mut v.runs {
                    r.seq = None;
                }
                Ok(v)
            };
            let mut diffs = match (&a.environment, &b.environment) {
                (Some(x), Some(y)) => crate::measure::env::differences(x, y),
                _ => Vec::new(),
            };
            if let (Some(x), Some(y)) = (&a.design, &b.design) {
                diffs.extend(crate::micro::pressure_difference(x, y));
            }
            let mut units = a.units.clone();
            for (k, u) in &b.units {
                units.entry(k.clone()).or_insert_with(|| u.clone());
            }
            let ds = Dataset {
                variants: vec![pick(&a, ida)?, pick(&b, idb)?],
                units,
                environment: a.environment.clone(),
                design: None,
                seed: a.seed,
                source: format!("{} (baseline) and {}", a.source, b.source),
                left_out: a.left_out + b.left_out,
            };
            Ok((ds, diffs))
        }
        n => Err(usage(format!(
            "{n} experiment ids: give one experiment, or two to compare with each other"
        ))),
    }
}

fn data_hash(ds: &Dataset) -> String {
    let mut h = Sha256::new();
    for v in &ds.variants {
        h.update(v.name.as_bytes());
        h.update([0]);
        for r in &v.runs {
            h.update(r.seq.unwrap_or(-1.0).to_le_bytes());
            for (k, x) in &r.metrics {
                h.update(k.as_bytes());
                h.update(x.to_le_bytes());
            }
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn env_str(ds: &Dataset, key: &str) -> Option<String> {
    ds.environment
        .as_ref()
        .and_then(|e| e.get(key))
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

fn settings(args: &CompareArgs, ds: &Dataset) -> anyhow::Result<Settings> {
    if ds.variants.len() < 2 {
        let only = ds
            .variants
            .first()
            .map(|v| v.name.as_str())
            .unwrap_or("(none)");
        return Err(usage(format!(
            "only one variant ({only}): nothing to compare it with"
        )));
    }
    let baseline = match &args.baseline {
        Some(n) => ds.position(n)?,
        None => 0,
    };
    let available = ds.metric_names();
    let metrics = match args.metric.as_deref() {
        Some("all") => available.clone(),
        Some(m) => {
            if !available.iter().any(|a| a == m) {
                return Err(usage(format!(
                    "--metric {m}: not stored; metrics: {}",
                    available.join(", ")
                )));
            }
            vec![m.to_string()]
        }
        None if available.iter().any(|a| a == DEFAULT_METRIC) => vec![DEFAULT_METRIC.to_string()],
        None if available.len() == 1 => available.clone(),
        None => {
            return Err(usage(format!(
                "no {DEFAULT_METRIC} metric stored; choose one with --metric NAME or --metric all ({})",
                available.join(", ")
            )));
        }
    };
    if metrics.is_empty() {
        return Err(usage("no metrics stored: nothing to compare"));
    }
    Ok(Settings {
        baseline,
        metrics,
        options: Options {
            alpha: args.alpha,
            margin_pct: args.margin,
            effect_pct: args.effect,
            resamples: args.resamples,
            seed: args.seed.or(ds.seed).unwrap_or(Options::default().seed),
            ..Options::default()
        },
        correction: args.correction,
        without_outliers: args.without_outliers,
        force_higher_is_better: args.higher_is_better,
    })
}

/// Build the report for already loaded data.
pub fn report(ds: &Dataset, s: &Settings, diffs: EnvDiffs) -> Report {
    let an = analyse(ds, s);
    let mut tests = String::from(
        "Welch t-test with Fieller 95% CI of the ratio (primary; ANCOVA with run index when drift is found), Mann-Whitney U, Hodges-Lehmann",
    );
    if s.options.resamples > 0 {
        tests += ", BCa bootstrap of mean/median/SD ratios";
    }
    tests += ", Brown-Forsythe, Mann-Kendall (within variants), TOST";
    Report {
        comparisons: an.comparisons,
        skipped: an.skipped,
        environment_differences: diffs,
        provenance: Provenance {
            source: ds.source.clone(),
            tests,
            alpha: s.options.alpha,
            margin_pct: s.options.margin_pct,
            correction: s.correction.name().to_string(),
            m: an.m,
            seed: s.options.seed,
            resamples: s.options.resamples,
            design: ds.design.clone(),
            machine: env_str(ds, "cpu_model"),
            kernel: env_str(ds, "kernel"),
            data_sha256: data_hash(ds),
            runs_left_out: ds.left_out,
            outliers_removed: an.outliers_removed,
        },
    }
}

/// "order abba, seed 3, 12 runs per variant, 1 warm-up" from a stored design.
fn design_text(d: &serde_json::Value) -> String {
    let mut parts = Vec::new();
    if let Some(o) = d.get("order").and_then(|v| v.as_str()) {
        parts.push(format!("order {o}"));
    }
    if let Some(s) = d.get("seed").filter(|v| !v.is_null()) {
        parts.push(format!("seed {s}"));
    }
    if let Some(r) = d.get("runs").and_then(|v| v.as_u64()) {
        parts.push(format!("{r} runs per variant"));
    }
    if let Some(w) = d.get("warmup").and_then(|v| v.as_u64()) {
        parts.push(format!("{w} warm-up(s)"));
    }
    if parts.is_empty() {
        d.to_string()
    } else {
        parts.join(", ")
    }
}

/// Human-readable report: environment differences, each comparison, provenance footer.
pub fn report_text(r: &Report, ds: &Dataset) -> String {
    let mut out = String::new();
    if !r.environment_differences.is_empty() {
        let _ = writeln!(out, "Environment differences (baseline -> candidate):");
        for (k, a, b) in &r.environment_differences {
            let _ = writeln!(out, "  {k}: {a} -> {b}");
        }
        let _ = writeln!(out);
    }
    for c in &r.comparisons {
        out += &comparison_text(c, ds.unit(&c.metric));
        let _ = writeln!(out);
    }
    for s in &r.skipped {
        let _ = writeln!(out, "skipped: {s}");
    }
    let p = &r.provenance;
    let _ = writeln!(out, "--");
    let _ = writeln!(out, "data: {} (sha256 {})", p.source, &p.data_sha256[..16]);
    let _ = writeln!(out, "tests: {}", p.tests);
    let boot = if p.resamples > 0 {
        format!("bootstrap {} resamples seed {}", p.resamples, p.seed)
    } else {
        "no bootstrap (--resamples 0)".to_string()
    };
    let _ = writeln!(
        out,
        "alpha {}, equivalence margin {}%, correction {} over m={}, {boot}",
        p.alpha, p.margin_pct, p.correction, p.m
    );
    if let Some(d) = &p.design {
        let _ = writeln!(out, "design: {}", design_text(d));
    }
    if p.runs_left_out > 0 {
        let _ = writeln!(
            out,
            "left out: {} runs (warm-up, failed or excluded)",
            p.runs_left_out
        );
    }
    if p.outliers_removed > 0 {
        let _ = writeln!(
            out,
            "left out: {} values Tukey flags as outliers (--without-outliers)",
            p.outliers_removed
        );
    }
    if p.machine.is_some() || p.kernel.is_some() {
        let _ = writeln!(
            out,
            "machine: {}; kernel {}",
            p.machine.as_deref().unwrap_or("unknown CPU"),
            p.kernel.as_deref().unwrap_or("unknown")
        );
    }
    out
}

pub fn run(args: CompareArgs) -> anyhow::Result<i32> {
    check_options(&args)?;
    let (ds, diffs) = load(&args)?;
    let s = settings(&args, &ds)?;
    let r = report(&ds, &s, diffs);
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&r)?),
        Format::Text => print!("{}", report_text(&r, &ds)),
    }
    Ok(0)
}

/// One verdict line per variant against the first, on wall time, for the end of `abperf run`.
/// An experiment with one variant gives no lines.
pub fn verdict_lines(store: &Store, experiment_id: i64) -> anyhow::Result<Vec<String>> {
    let ds = from_store(store, experiment_id)?;
    if ds.variants.len() < 2 {
        return Ok(Vec::new());
    }
    let available = ds.metric_names();
    let metric = if available.iter().any(|m| m == DEFAULT_METRIC) {
        DEFAULT_METRIC.to_string()
    } else if let Some(m) = available.first() {
        m.clone()
    } else {
        return Ok(Vec::new());
    };
    let s = Settings {
        baseline: 0,
        metrics: vec![metric],
        options: Options {
            seed: ds.seed.unwrap_or(Options::default().seed),
            ..Options::default()
        },
        correction: Correction::Holm,
        without_outliers: false,
        force_higher_is_better: false,
    };
    let an = analyse(&ds, &s);
    let mut lines: Vec<String> = an.comparisons.into_iter().map(|c| c.line).collect();
    lines.extend(an.skipped.into_iter().map(|s| format!("not compared: {s}")));
    Ok(lines)
}
