//! The analysis shared by `abperf compare`, `abperf run`'s closing verdicts and `abperf report`:
//! families of comparisons of a [`Dataset`] (each variant against the baseline, or every pair;
//! one family per value of a `-L` parameter with `--by`), on every metric asked for, on the mean
//! and optionally on the run-to-run variation, corrected across every test reported. Pure
//! computation: loading the data is the store's job, printing it the report's.

use super::compare::{Comparison, Options, Sample, apply_correction, compare};
use super::multiple::Correction;
use super::outliers;
use super::summary::{Moments, compare_summary};
use abperf_model::{Dataset, Direction};
use serde::Serialize;

/// Which pairs of variants are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Pairs {
    /// Each variant against the baseline.
    #[default]
    Baseline,
    /// Every pair of variants (the earlier one as the baseline).
    All,
}

/// What each comparison tests (and the correction counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Test {
    /// The mean (Welch, Fieller): the verdict.
    Mean,
    /// The run-to-run variation (Brown-Forsythe, SD ratio).
    Variability,
}

/// Analysis settings that do not come from the data.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Position of the baseline variant (with `by`: the baseline of every family is the variant
    /// whose other parameters equal this one's).
    pub baseline: usize,
    pub metrics: Vec<String>,
    pub options: Options,
    pub correction: Correction,
    pub without_outliers: bool,
    pub force_higher_is_better: bool,
    pub pairs: Pairs,
    /// One family per combination of values of these `-L` parameters (comma-separated, e.g.
    /// "pattern,op").
    pub by: Option<String>,
    pub tests: Vec<Test>,
}

impl Settings {
    /// Every variant against `baseline` on `metrics`, the mean only, one family.
    pub fn against(baseline: usize, metrics: Vec<String>, options: Options) -> Settings {
        Settings {
            baseline,
            metrics,
            options,
            correction: Correction::Holm,
            without_outliers: false,
            force_higher_is_better: false,
            pairs: Pairs::Baseline,
            by: None,
            tests: vec![Test::Mean],
        }
    }
}

/// The comparisons of one dataset.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub comparisons: Vec<Comparison>,
    /// Metrics or variants that could not be compared, with the reason.
    pub skipped: Vec<String>,
    pub outliers_removed: usize,
    /// Size of the family the correction was made over (every test reported).
    pub m: usize,
    /// Baseline variant name (with `--pairs all` or `--by`, the first family's first baseline).
    pub baseline: String,
    pub metrics: Vec<String>,
    pub correction: String,
    pub pairs: Pairs,
    pub by: Option<String>,
    /// Each family (one per `--by` combination, or the one family of every variant): its label,
    /// variants, pairs and tests; the tests of all families add up to `m`.
    pub families: Vec<FamilySize>,
    pub tests: Vec<Test>,
    /// The tests run, in words, for method lines and footers.
    pub tests_text: String,
    /// What one observation of the verdicts is (`options.counted`, for JSON): "run", or the
    /// level whose unit means (or, for hosts as blocks, whose per-host effects) they were judged
    /// on: "invocation", "boot", "host".
    pub unit: String,
    pub options: Options,
    pub without_outliers: bool,
}

/// The size of one family of comparisons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FamilySize {
    /// The `--by` values, comma-separated in the order of `by` ("seq,read"); null without --by.
    pub label: Option<String>,
    pub variants: usize,
    /// Pairs compared (per metric).
    pub pairs: usize,
    /// Tests reported: pairs compared x metrics x (mean, and variability when tested).
    pub tests: usize,
}

/// The tests [`analyse`] runs, in words.
fn tests_text(options: &Options) -> String {
    let mut tests = format!(
        "Welch t-test with Fieller {} CI of the ratio (primary; ANCOVA with run index when drift is found), Mann-Whitney U, Hodges-Lehmann",
        super::verdict::level_label(1.0 - options.alpha)
    );
    if options.resamples > 0 {
        tests += ", BCa bootstrap of mean/median/SD ratios";
    }
    tests += ", Brown-Forsythe, Mann-Kendall (within variants), TOST, Yuen's trimmed means (with severe outliers)";
    tests
}

/// One variant's data for a metric: its counted single runs (values, and their run order when
/// the dataset has one), or the moments of the tool summaries it holds (perf stat -r).
enum Series {
    Runs(Vec<f64>, Option<Vec<f64>>),
    Summary(Moments),
}

fn series(
    ds: &Dataset,
    pos: usize,
    metric: &str,
    without_outliers: bool,
    removed: &mut usize,
) -> Result<Series, String> {
    let runs: Vec<_> = ds
        .counted(pos)
        .filter(|r| r.value(metric).is_some())
        .collect();
    let summaries: Vec<Option<Moments>> = runs
        .iter()
        .filter(|r| r.source.as_ref().is_some_and(|s| s.summary))
        .map(|r| {
            let n = r.source.as_ref()?.repeats? as usize;
            let mean = r.value(metric)?;
            // The SD itself (ministat summaries), or perf stat's relative standard error.
            let sd = match r.value(&format!("{metric}.sd")) {
                Some(sd) => sd,
                None => {
                    r.value(&format!("{metric}.stderr_pct"))? / 100.0
                        * mean.abs()
                        * (n as f64).sqrt()
                }
            };
            Some(Moments { mean, sd, n })
        })
        .collect();
    if !summaries.is_empty() {
        if summaries.len() != runs.len() {
            return Err("mixes single runs with tool summaries (perf stat -r)".into());
        }
        let parts: Option<Vec<Moments>> = summaries.into_iter().collect();
        let Some(parts) = parts else {
            return Err(
                "tool summaries without the number of runs or their spread (perf stat -x, -r \
                 prints no count; each row is then one observation): compare them as single values \
                 with --metric on a stored run instead"
                    .into(),
            );
        };
        return Moments::pooled(&parts)
            .map(Series::Summary)
            .ok_or_else(|| "no runs summarised".to_string());
    }
    let values: Vec<f64> = runs.iter().filter_map(|r| r.value(metric)).collect();
    let order = ds
        .ordered
        .then(|| runs.iter().map(|r| r.seq as f64).collect::<Vec<f64>>());
    if !without_outliers {
        return Ok(Series::Runs(values, order));
    }
    let drop = outliers::flag(&values).tukey_indices();
    *removed += drop.len();
    Ok(Series::Runs(
        outliers::without(&values, &drop),
        order.map(|o| outliers::without(&o, &drop)),
    ))
}

/// One family of comparisons: its `--by` values (none without --by), the positions of its
/// variants, and the position of its baseline.
struct Family {
    label: Option<String>,
    members: Vec<usize>,
    base: usize,
}

/// The parameters of `--by` ("pattern,op" -> ["pattern", "op"]).
pub fn by_params(by: &str) -> Vec<&str> {
    by.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

/// The families of `--by`: one per combination of the values of its parameters that some
/// variant has (one family of every variant without it).
fn families(ds: &Dataset, s: &Settings) -> Result<Vec<Family>, String> {
    let Some(by) = &s.by else {
        return Ok(vec![Family {
            label: None,
            members: (0..ds.variants.len()).collect(),
            base: s.baseline,
        }]);
    };
    let params = by_params(by);
    let mut out: Vec<Family> = Vec::new();
    for (i, v) in ds.variants.iter().enumerate() {
        let mut values = Vec::new();
        for param in &params {
            let value = v.parameters.get(*param).ok_or_else(|| {
                format!(
                    "--by {param}: variant '{}' has no parameter {param} (its parameters: {})",
                    v.name,
                    v.parameters.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            })?;
            values.push(value.as_str());
        }
        let value = values.join(",");
        match out.iter_mut().find(|f| f.label.as_deref() == Some(&value)) {
            Some(f) => f.members.push(i),
            None => out.push(Family {
                label: Some(value),
                members: vec![i],
                base: i,
            }),
        }
    }
    // The baseline of each family: the variant whose parameters other than the --by ones equal
    // the chosen baseline's (the first of the family when the baseline is the default).
    let others = |i: usize| {
        let mut p = ds.variants[i].parameters.clone();
        for param in &params {
            p.remove(*param);
        }
        p
    };
    let want = others(s.baseline);
    for f in &mut out {
        if let Some(&b) = f.members.iter().find(|&&i| others(i) == want) {
            f.base = b;
        }
    }
    Ok(out)
}

/// The pairs of `f` that are compared.
fn family_pairs(f: &Family, pairs: Pairs) -> Vec<(usize, usize)> {
    match pairs {
        Pairs::Baseline => f
            .members
            .iter()
            .filter(|&&i| i != f.base)
            .map(|&i| (f.base, i))
            .collect(),
        Pairs::All => {
            let mut v = Vec::new();
            for (k, &i) in f.members.iter().enumerate() {
                for &j in &f.members[k + 1..] {
                    v.push((i, j));
                }
            }
            v
        }
    }
}

/// Compare the pairs of every family on every metric, then correct across every test reported.
pub fn analyse(ds: &Dataset, s: &Settings) -> Analysis {
    analyse_with(ds, s, &mut |_, _, _| {})
}

/// [`analyse`], with `judge` called on each comparison made (with the positions of its baseline
/// and variant) before the correction: a design the pairs of `ds` cannot show (hosts as blocks,
/// [`super::hosts`]) may replace its evidence there.
pub fn analyse_with(
    ds: &Dataset,
    s: &Settings,
    judge: &mut dyn FnMut(usize, usize, &mut Comparison),
) -> Analysis {
    let mut comps = Vec::new();
    let mut skipped = Vec::new();
    let mut removed = 0;
    let fams = match families(ds, s) {
        Ok(f) => f,
        Err(e) => {
            skipped.push(e);
            Vec::new()
        }
    };
    let mut sizes = Vec::new();
    for fam in &fams {
        let label = &fam.label;
        let pairs = family_pairs(fam, s.pairs);
        let before = comps.len();
        for metric in &s.metrics {
            let direction = ds.direction(metric);
            let opts = Options {
                higher_is_better: s.force_higher_is_better || direction.higher_is_better(),
                count: !s.force_higher_is_better && direction == Direction::Count,
                ..s.options.clone()
            };
            for &(ia, ib) in &pairs {
                let (na, nb) = (&ds.variants[ia].name, &ds.variants[ib].name);
                let what = |why: &str| format!("{metric}: {nb} vs {na}: {why}");
                let got = (|| -> Result<Comparison, String> {
                    let a = series(ds, ia, metric, s.without_outliers, &mut removed)?;
                    let b = series(ds, ib, metric, s.without_outliers, &mut removed)?;
                    let r = match (&a, &b) {
                        (Series::Runs(x, _), _) | (_, Series::Runs(x, _)) if x.is_empty() => {
                            return Err("no values stored".into());
                        }
                        (Series::Runs(x, ox), Series::Runs(y, oy)) => {
                            let (sa, sb) = match (ox, oy) {
                                (Some(p), Some(q)) => {
                                    (Sample::with_order(na, x, p), Sample::with_order(nb, y, q))
                                }
                                _ => (Sample::new(na, x), Sample::new(nb, y)),
                            };
                            compare(metric, sa, sb, &opts)
                        }
                        (Series::Summary(x), Series::Summary(y)) => {
                            compare_summary(metric, (na, *x), (nb, *y), &opts)
                        }
                        _ => {
                            return Err(
                                "one variant holds single runs, the other tool summaries".into()
                            );
                        }
                    };
                    r.map_err(|e| e.to_string())
                })();
                match got {
                    Ok(mut c) => {
                        c.family = label.clone();
                        judge(ia, ib, &mut c);
                        comps.push(c);
                    }
                    Err(e) => skipped.push(what(&e)),
                }
            }
        }
        sizes.push((
            FamilySize {
                label: label.clone(),
                variants: fam.members.len(),
                pairs: pairs.len(),
                tests: 0,
            },
            before..comps.len(),
        ));
    }
    apply_correction(
        &mut comps,
        s.correction,
        s.tests.contains(&Test::Variability),
    );
    let m = comps.iter().map(|c| c.m).max().unwrap_or(0);
    // The tests each family contributed to the correction (they add up to m).
    let sizes = sizes
        .into_iter()
        .map(|(mut f, range)| {
            f.tests = comps[range]
                .iter()
                .map(|c| {
                    usize::from(c.p_adjusted.is_some())
                        + usize::from(c.p_variability_adjusted.is_some())
                })
                .sum();
            f
        })
        .collect();
    let baseline = comps
        .first()
        .map(|c| c.baseline.clone())
        .unwrap_or_else(|| ds.variants[s.baseline].name.clone());
    Analysis {
        comparisons: comps,
        skipped,
        outliers_removed: removed,
        m,
        baseline,
        metrics: s.metrics.clone(),
        correction: s.correction.name().to_string(),
        pairs: s.pairs,
        by: s.by.clone(),
        families: sizes,
        tests: s.tests.clone(),
        tests_text: tests_text(&s.options),
        unit: s.options.counted.one().into(),
        options: s.options.clone(),
        without_outliers: s.without_outliers,
    }
}
