//! What the commands that print results share: the analysis options of `compare` and `report`,
//! loading a stored experiment into a [`Report`] (with its trace or micro section), and writing
//! the rendered text to standard output or `-o FILE` (durations as people read them).

use crate::error::usage;
use crate::model::{Dataset, Experiment, Kind, Liveness, Status};
use crate::report::{Report, TraceSection, View};
use crate::stats::analysis::{Pairs, Settings, Test, analyse};
use crate::stats::compare::Options;
use crate::stats::multiple::Correction;
use crate::store::Store;
use anyhow::Context;
use std::io::Write;
use std::path::PathBuf;

/// The metric judged when none is named: wall-clock time of each run.
pub const DEFAULT_METRIC: &str = "wall_ns";

/// How variants are compared (shared by `compare` and `report`).
#[derive(Debug, Clone, clap::Args)]
pub struct AnalysisArgs {
    /// Baseline variant (default: the first)
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// Metric(s) to judge (repeatable, or 'all', corrected across metrics): stored names or
    /// short ones (wall, user, sys, maxrss, minflt, ...); default wall_ns, else the first metric
    /// every variant has
    #[arg(long, value_name = "NAME|all")]
    pub metric: Vec<String>,
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
    /// Bootstrap resamples (0 skips the bootstrap)
    #[arg(long, default_value_t = crate::stats::bootstrap::DEFAULT_RESAMPLES, value_name = "N")]
    pub resamples: usize,
    /// Bootstrap seed (default: the experiment's seed, else a fixed one)
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Treat the metric as a rate: higher is better (default: decided from its unit)
    #[arg(long)]
    pub higher_is_better: bool,
    /// Which pairs: each variant against the baseline, or every pair of variants
    #[arg(long, value_enum, default_value_t = Pairs::Baseline)]
    pub pairs: Pairs,
    /// A separate family of comparisons per combination of values of these -L parameters (e.g.
    /// the workload: --by pattern,op or --by pattern --by op); the correction still covers
    /// every test reported
    #[arg(long, value_name = "PARAM[,PARAM...]", value_delimiter = ',')]
    pub by: Vec<String>,
    /// What each comparison tests, corrected together: mean (the verdict) and/or variability
    /// (Brown-Forsythe and the SD ratio: "3.5x more run-to-run variation")
    #[arg(
        long = "test",
        value_enum,
        value_delimiter = ',',
        default_value = "mean"
    )]
    pub tests: Vec<Test>,
}

impl Default for AnalysisArgs {
    fn default() -> Self {
        AnalysisArgs {
            baseline: None,
            metric: Vec::new(),
            alpha: 0.05,
            margin: 0.2,
            effect: 0.5,
            correction: Correction::Holm,
            without_outliers: false,
            resamples: crate::stats::bootstrap::DEFAULT_RESAMPLES,
            seed: None,
            higher_is_better: false,
            pairs: Pairs::Baseline,
            by: Vec::new(),
            tests: vec![Test::Mean],
        }
    }
}

impl AnalysisArgs {
    /// Check the numbers before anything is loaded.
    pub fn check(&self) -> anyhow::Result<()> {
        if !(self.alpha > 0.0 && self.alpha < 0.5) {
            return Err(usage(format!(
                "--alpha {}: expected a level between 0 and 0.5, e.g. 0.05",
                self.alpha
            )));
        }
        if !(self.margin > 0.0 && self.margin < 100.0) {
            return Err(usage(format!(
                "--margin {}: expected a percentage between 0 and 100, e.g. 0.2",
                self.margin
            )));
        }
        if !(self.effect > 0.0 && self.effect < 100.0) {
            return Err(usage(format!(
                "--effect {}: expected a percentage between 0 and 100, e.g. 0.5",
                self.effect
            )));
        }
        self.by_text()?;
        if self.resamples != 0 && self.resamples < 100 {
            return Err(usage(format!(
                "--resamples {}: expected 0 (no bootstrap) or at least 100",
                self.resamples
            )));
        }
        Ok(())
    }

    /// The `--by` parameters as the analysis takes them ("pattern,op"), None without --by; a
    /// usage error for an empty or repeated name.
    pub fn by_text(&self) -> anyhow::Result<Option<String>> {
        let mut seen: Vec<&str> = Vec::new();
        for p in &self.by {
            let p = p.trim();
            if p.is_empty() {
                return Err(usage(
                    "--by: expected -L parameter names, e.g. --by pattern,op",
                ));
            }
            if seen.contains(&p) {
                return Err(usage(format!("--by {p}: named twice")));
            }
            seen.push(p);
        }
        Ok((!seen.is_empty()).then(|| seen.join(",")))
    }

    /// The analysis settings for `ds`; `Ok(None)` with the reason when there is nothing to
    /// compare (one variant; a micro experiment's configurations without a named baseline).
    pub fn settings(&self, ds: &Dataset) -> anyhow::Result<Result<Settings, String>> {
        if ds.variants.len() < 2 {
            return Ok(Err("one variant: nothing to compare it with".into()));
        }
        if !self.tests.contains(&Test::Mean) {
            return Err(usage(
                "--test: the mean is always tested (it is the verdict); add variability with --test mean,variability",
            ));
        }
        let micro = ds.experiment().is_some_and(|e| e.kind == Kind::Micro);
        if micro && self.baseline.is_none() && self.by.is_empty() {
            return Ok(Err(
                "micro experiment: its variants are configurations, not treatments of one \
                 workload; no verdicts against the first (name one with --baseline)"
                    .into(),
            ));
        }
        let baseline = match &self.baseline {
            Some(n) => ds.position(n).ok_or_else(|| {
                usage(format!(
                    "--baseline {n:?}: no such variant (variants: {})",
                    ds.variant_names()
                ))
            })?,
            None => 0,
        };
        let main: Vec<String> = ds.main_metrics().map(|m| m.name.clone()).collect();
        let metrics = if self.metric.is_empty() {
            match super::metrics::default_metric(ds, DEFAULT_METRIC) {
                Some(m) => vec![m],
                None if main.is_empty() => {
                    return Ok(Err("no metrics stored: nothing to compare".into()));
                }
                None => {
                    return Err(usage(format!(
                        "no metric is stored for every variant, so none can be compared; {}",
                        super::metrics::per_variant(ds)
                    )));
                }
            }
        } else if self.metric.iter().any(|m| m == "all") {
            main.clone()
        } else {
            let mut names = Vec::new();
            for m in &self.metric {
                let name = super::metrics::resolve(ds, m, "--metric")?;
                super::metrics::check_every_variant_has(ds, &name, "--metric ")?;
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            names
        };
        let seed = self
            .seed
            .or(ds.experiments.first().and_then(|e| e.seed))
            .unwrap_or(Options::default().seed);
        // A sequential experiment is judged as its stopping rule judged: Welch at the boundary
        // of the look it stopped at, the comparisons' share of alpha already in the boundary.
        let sequential = ds.experiments.first().and_then(|e| e.sequential());
        let (alpha, correction) = match &sequential {
            Some(plan) => {
                let level = crate::stats::sequential::judging_level(
                    plan,
                    rule_comparisons(ds),
                    most_runs(ds),
                );
                (level, crate::stats::multiple::Correction::None)
            }
            None => (self.alpha, self.correction),
        };
        Ok(Ok(Settings {
            baseline,
            metrics,
            options: Options {
                alpha,
                margin_pct: self.margin,
                effect_pct: self.effect,
                resamples: self.resamples,
                seed,
                welch_only: sequential.is_some(),
                ..Options::default()
            },
            correction,
            without_outliers: self.without_outliers,
            force_higher_is_better: self.higher_is_better,
            pairs: self.pairs,
            by: self.by_text()?,
            tests: self.tests.clone(),
        }))
    }

    /// These options as they must be for a report whose names were escaped for people
    /// ([`escape_for_people`]): a named baseline or metric escaped the same way, so that it
    /// still matches.
    pub fn escaped_for(&self, format: crate::report::Format) -> AnalysisArgs {
        let mut a = self.clone();
        if for_people(format) {
            let e = |s: &String| crate::model::escape::control(s).into_owned();
            a.baseline = a.baseline.as_ref().map(e);
            a.metric = a.metric.iter().map(e).collect();
            a.by = a.by.iter().map(e).collect();
        }
        a
    }

    /// Analyse `r`'s data into it (or note why not). Data from booted kernels are analysed on
    /// two levels: verdicts from boot means, variance components, plan advice
    /// (`report::levels`).
    pub fn analyse_into(&self, r: &mut Report) -> anyhow::Result<()> {
        if let Some(args) = self.split_hosts(r)? {
            return args.analyse_into(r);
        }
        let accels = r.data.accelerators();
        if accels.len() > 1 {
            return Err(usage(format!(
                "the boots ran under {}: abperf does not compare timings across accelerators",
                accels.join(" and ").to_uppercase()
            )));
        }
        let settings = match self.settings(&r.data)? {
            Ok(s) => Some(s),
            Err(why) => {
                r.notes.push(why);
                None
            }
        };
        if r.data.has_boots() {
            let (metrics, target) = self.levels_target(r, settings.as_ref());
            crate::report::levels::attach(r, settings.as_ref(), &metrics, target);
        } else if !(r.data.has_labels() && self.attach_replication(r, settings.as_ref()))
            && let Some(s) = settings
        {
            r.analysis = Some(analyse(&r.data, &s));
        }
        if let Some(plan) = r.data.experiments.first().and_then(|e| e.sequential()) {
            let (m, runs) = (rule_comparisons(&r.data), most_runs(&r.data));
            r.notes.push(crate::stats::sequential::note(&plan, m, runs));
        }
        let used = r.replication.as_ref().map(|s| s.verdicts_from.clone());
        r.notes.extend(mixed_labels_notes(&r.data, used.as_deref()));
        Ok(())
    }
}

/// The start of the note on runs with and without a level's label in one experiment.
pub const MIXED_LABELS: &str = "MIXED LABELS: ";

/// A note per level that some counted runs name and others do not (issue 45: `import --host`
/// into an experiment whose runs name no host pooled them without a word), saying which runs
/// the verdicts used: only the named ones when that level's means make the verdicts (`used`),
/// else all of them as independent runs.
pub fn mixed_labels_notes(ds: &Dataset, used: Option<&str>) -> Vec<String> {
    ds.mixed_labels()
        .into_iter()
        .map(|(level, named, unnamed)| {
            let name = level.name();
            let which = if used == Some(name) {
                format!(
                    "the verdicts use only the {named} that name one, as {name} means; the \
                     {unnamed} others are left out"
                )
            } else {
                format!(
                    "the verdicts take all {} as independent runs, without {} as a level",
                    named + unnamed,
                    level.plural()
                )
            };
            format!(
                "{MIXED_LABELS}{named} counted runs name a {name} and {unnamed} name none (runs \
                 imported with --{name} into an experiment whose runs name no {name}?): {which}"
            )
        })
        .collect()
}

impl AnalysisArgs {
    /// `--by host` of runs that name their host (when no variant has a parameter host): each
    /// machine alone. The report's data become one variant per variant and host
    /// (`Dataset::per_host`), whose parameter host makes the families, and a named baseline
    /// becomes its variant on the first host; returns these options for that data, None when
    /// `--by host` does not apply.
    fn split_hosts(&self, r: &mut Report) -> anyhow::Result<Option<AnalysisArgs>> {
        let d = &r.data;
        if !self.by.iter().any(|b| b.trim() == "host")
            || d.variants.iter().any(|v| v.parameters.contains_key("host"))
        {
            return Ok(None);
        }
        if !d.runs.iter().any(|x| x.labels.host.is_some()) {
            return Err(usage(
                "--by host: no run names its host and no variant has a parameter host (runs \
                 name their machine in a table's host column: abperf import --format csv)",
            ));
        }
        let split = d.per_host().map_err(|e| usage(format!("--by host: {e}")))?;
        let mut args = self.clone();
        if let Some(b) = &self.baseline {
            let prefix = format!("{b} host=");
            if let Some(v) = split.variants.iter().find(|v| v.name.starts_with(&prefix)) {
                args.baseline = Some(v.name.clone());
            }
        }
        r.regroup(split);
        Ok(Some(args))
    }

    /// Runs that name their invocation, boot or host: verdicts from the unit means of the top
    /// replicated level and the replication section (`report::replication`); false when no
    /// level above the runs is replicated.
    fn attach_replication(&self, r: &mut Report, settings: Option<&Settings>) -> bool {
        let (metrics, target) = self.levels_target(r, settings);
        crate::report::replication::attach(r, settings, &metrics, target)
    }

    /// The metrics a level analysis covers (the chosen ones, else the default metric) and the
    /// precision its plan aims at.
    fn levels_target(
        &self,
        r: &Report,
        settings: Option<&Settings>,
    ) -> (Vec<String>, crate::stats::levels::Target) {
        let metrics = match settings {
            Some(s) => s.metrics.clone(),
            None => default_metric(&r.data).into_iter().collect(),
        };
        let target = crate::stats::levels::Target {
            effect_pct: self.effect,
            alpha: self.alpha,
            power: crate::stats::compare::Options::default().power,
        };
        (metrics, target)
    }
}

/// The comparisons a sequential experiment's stopping rule made: every variant against the first.
fn rule_comparisons(ds: &Dataset) -> usize {
    ds.variants.len().saturating_sub(1).max(1)
}

/// The most runs any variant has counted.
fn most_runs(ds: &Dataset) -> usize {
    (0..ds.variants.len())
        .map(|v| ds.counted(v).count())
        .max()
        .unwrap_or(0)
}

/// The metric judged when none is named: wall_ns, else the first main metric.
pub fn default_metric(ds: &Dataset) -> Option<String> {
    let main: Vec<String> = ds.main_metrics().map(|m| m.name.clone()).collect();
    main.iter()
        .find(|m| *m == DEFAULT_METRIC)
        .or(main.first())
        .cloned()
}

/// Load stored experiment `id` into a report for `view`, with the tables of a trace capture or
/// the findings of a micro suite.
pub fn load(store: &Store, id: i64, view: View) -> anyhow::Result<Report> {
    let mut data = store.load(id)?;
    let kind = data.experiments[0].kind;
    let dead = seen_status(store, &mut data.experiments[0])?;
    let mut r = Report::new(data, view);
    r.notes.extend(dead);
    crate::report::levels::tcg_note(&mut r);
    match kind {
        Kind::Trace => match store.load_capture(id) {
            Ok((info, tables)) => r.trace = Some(TraceSection { info, tables }),
            Err(e) => r.notes.push(format!("trace tables unavailable: {e:#}")),
        },
        Kind::Micro => {
            let findings = store.micro_findings(id)?;
            r.micro = Some(crate::report::micro::build(&r.data, findings));
            r.include_runs = view == View::Export;
        }
        Kind::Run | Kind::Import => {
            r.profile = super::compare_profile::section(store, id, None, view == View::Export)?;
        }
    }
    Ok(r)
}

/// Make every piece of user text in `r` (names, commands, parameters, knob values, metric names,
/// notes) safe for a terminal when `format` is one read by people (text, mail, Markdown,
/// perf-stat): control characters become visible escapes (`model::escape::control`). The data
/// hash was taken from the raw data when the report was made, so it still names the stored data.
/// Call it before the analysis (which copies names), with [`AnalysisArgs::escaped_for`].
pub fn escape_for_people(r: &mut Report, format: crate::report::Format) {
    if !for_people(format) {
        return;
    }
    let e = |s: &mut String| {
        if let std::borrow::Cow::Owned(o) = crate::model::escape::control(s) {
            *s = o;
        }
    };
    let d = &mut r.data;
    for x in &mut d.experiments {
        e(&mut x.name);
        x.command_line.iter_mut().for_each(e);
    }
    for v in &mut d.variants {
        e(&mut v.name);
        if let Some(c) = &mut v.command {
            e(c);
        }
        v.parameters = std::mem::take(&mut v.parameters)
            .into_iter()
            .map(|(mut k, mut val)| {
                e(&mut k);
                e(&mut val);
                (k, val)
            })
            .collect();
        for k in &mut v.knobs {
            e(&mut k.path);
            e(&mut k.value);
            if let Some(o) = &mut k.original {
                e(o);
            }
        }
    }
    for run in &mut d.runs {
        for m in &mut run.metrics {
            e(&mut m.name);
        }
    }
    for m in &mut d.metrics {
        e(&mut m.name);
    }
    e(&mut d.source);
    r.notes.iter_mut().for_each(e);
}

/// Whether `format` is read by people (and so gets its names escaped).
fn for_people(format: crate::report::Format) -> bool {
    use crate::report::Format as F;
    matches!(format, F::Text | F::Mail | F::Md | F::PerfStat)
}

/// The status to show for `exp`: a `running` experiment whose recorded owner has died (kill -9,
/// a crash, a reboot) is `interrupted`; returns a note saying so.
pub fn seen_status(store: &Store, exp: &mut Experiment) -> anyhow::Result<Option<String>> {
    if exp.status != Status::Running {
        return Ok(None);
    }
    let Some(owner) = store.owner(exp.id)? else {
        return Ok(None);
    };
    let note = dead_owner_note(exp.id, &owner);
    if note.is_some() {
        exp.status = Status::Interrupted;
    }
    Ok(note)
}

/// Why experiment `id`, stored as `running`, is not running any more (None: its owner lives, or
/// cannot be checked from here).
pub fn dead_owner_note(id: i64, owner: &crate::model::Owner) -> Option<String> {
    match crate::measure::process::liveness(owner) {
        Liveness::Dead(why) => Some(format!(
            "experiment {id} is stored as running, but its abperf ({why}) stopped without \
             saying so (kill -9, crash or reboot): shown as interrupted; continue it with: \
             abperf run --resume {id}"
        )),
        Liveness::Alive | Liveness::Unknown(_) => None,
    }
}

/// Write `text` to `output` (a file) or standard output; a closed pipe ends quietly.
pub fn write(text: &str, output: Option<&PathBuf>) -> anyhow::Result<()> {
    match output {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| usage(format!("-o {}: cannot write ({e})", p.display()))),
        None => {
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    Err(e).context("cannot write to standard output")
                }
                _ => Ok(()),
            }
        }
    }
}
