//! `abperf history`: the store's experiments grouped into series (what was measured: the
//! variant's command, its name, the metric, the host), each point an experiment's estimate with
//! its standard error, ordered by a label or by time; change points found by
//! `abperf_stats::history` (docs/history.md), Benjamini-Hochberg across the series of one query;
//! rendered as text, a mail, JSON and HTML pages.

pub mod html;
pub mod json;
pub mod mail;
pub mod text;

use abperf_model::history_point::HistoryPoint;
use abperf_stats::history::{self as cp, Config};
use std::collections::BTreeMap;

/// How points are ordered along a series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Order {
    /// By the experiment's creation time.
    Time,
    /// By the value of this label (numerically when every value is a number, else as text);
    /// experiments without it are left out.
    Label(String),
}

/// What a series measured: points with the same key belong together.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub command: String,
    pub variant: String,
    pub metric: String,
    pub host: String,
}

impl Key {
    /// In words, for listings and headings.
    pub fn text(&self) -> String {
        let what = if self.command.is_empty() {
            format!("variant {}", self.variant)
        } else {
            format!("'{}' (variant {})", self.command, self.variant)
        };
        let host = if self.host.is_empty() {
            String::new()
        } else {
            format!(" on {}", self.host)
        };
        format!("{} of {what}{host}", self.metric)
    }
}

/// One series, its points in order.
#[derive(Debug, Clone)]
pub struct Series {
    /// 1-based, in key order: what `--series N` names.
    pub number: usize,
    pub key: Key,
    pub points: Vec<HistoryPoint>,
}

impl Series {
    /// The name of point `i` on the axis: the order label's value, else the creation time.
    pub fn point_name(&self, i: usize, order: &Order) -> String {
        let p = &self.points[i];
        match order {
            Order::Label(l) => p.labels.get(l).cloned().unwrap_or_default(),
            Order::Time => p.created.clone(),
        }
    }
}

/// The label `history --confirm` gives its re-measurements: their experiments are no point of
/// any series.
pub const CONFIRM_LABEL: &str = "history-confirm";

/// `command` with each of `labels`' values that stands as a whole word in it replaced by
/// `{KEY}`: the command of a nightly build (`/builds/4711/bench`) is the same series every
/// night (`/builds/{build}/bench`).
pub fn template(command: &str, labels: &abperf_model::label::Labels) -> String {
    let mut out = command.to_string();
    for (k, v) in labels {
        let mut done = String::new();
        let mut rest = out.as_str();
        while let Some(at) = rest.find(v.as_str()) {
            let before = rest[..at].chars().next_back();
            let after = rest[at + v.len()..].chars().next();
            let word = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            done.push_str(&rest[..at]);
            if word(before) && word(after) {
                done.push_str(&format!("{{{k}}}"));
            } else {
                done.push_str(v);
            }
            rest = &rest[at + v.len()..];
        }
        done.push_str(rest);
        out = done;
    }
    out
}

/// Group `points` into series, each ordered by `order` (ties by experiment id). Points whose
/// variant had fewer than two runs (no standard error) are left out, as are points without the
/// order label.
pub fn group(points: Vec<HistoryPoint>, order: &Order) -> Vec<Series> {
    let mut by_key: BTreeMap<Key, Vec<HistoryPoint>> = BTreeMap::new();
    for p in points {
        let se = p.se();
        if !(p.mean.is_finite() && se.is_finite() && se > 0.0) {
            continue;
        }
        if p.labels.contains_key(CONFIRM_LABEL) {
            continue;
        }
        if let Order::Label(l) = order
            && !p.labels.contains_key(l)
        {
            continue;
        }
        let key = Key {
            command: template(&p.command, &p.labels),
            variant: template(&p.variant, &p.labels),
            metric: p.metric.clone(),
            host: p.host.clone(),
        };
        by_key.entry(key).or_default().push(p);
    }
    by_key
        .into_iter()
        .enumerate()
        .map(|(i, (key, mut points))| {
            sort(&mut points, order);
            Series {
                number: i + 1,
                key,
                points,
            }
        })
        .collect()
}

fn sort(points: &mut [HistoryPoint], order: &Order) {
    match order {
        Order::Time => {
            points.sort_by(|a, b| (&a.created, a.experiment).cmp(&(&b.created, b.experiment)))
        }
        Order::Label(l) => {
            let value = |p: &HistoryPoint| p.labels.get(l).cloned().unwrap_or_default();
            let numeric = points
                .iter()
                .all(|p| value(p).parse::<f64>().is_ok_and(f64::is_finite));
            if numeric {
                points.sort_by(|a, b| {
                    let (x, y) = (
                        value(a).parse::<f64>().unwrap_or(0.0),
                        value(b).parse::<f64>().unwrap_or(0.0),
                    );
                    x.total_cmp(&y).then(a.experiment.cmp(&b.experiment))
                });
            } else {
                points.sort_by_key(|a| (value(a), a.experiment));
            }
        }
    }
}

/// The series `selector` names: its number in the listing, else the one series whose
/// description contains it.
pub fn select<'a>(series: &'a [Series], selector: &str) -> Result<&'a Series, String> {
    if let Ok(n) = selector.parse::<usize>() {
        return series
            .iter()
            .find(|s| s.number == n)
            .ok_or_else(|| format!("--series {n}: there are {} series", series.len()));
    }
    let hits: Vec<&Series> = series
        .iter()
        .filter(|s| s.key.text().contains(selector))
        .collect();
    match hits.as_slice() {
        [one] => Ok(one),
        [] => Err(format!(
            "--series '{selector}': no series matches (abperf history lists them)"
        )),
        many => Err(format!(
            "--series '{selector}': {} series match ({}); give its number",
            many.len(),
            many.iter()
                .map(|s| s.number.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// A change as reported: where, how sure, how big, and whether re-measurement confirmed it.
#[derive(Debug, Clone)]
pub struct Change {
    /// Index of the first point after the change.
    pub index: usize,
    pub location: (usize, usize),
    pub size: f64,
    pub size_interval: (f64, f64),
    /// Size relative to the level before it.
    pub relative: f64,
    /// Every metric history reads is lower-is-better: a rise is a regression.
    pub regression: bool,
    /// `--confirm`'s verdict, when it ran.
    pub confirmed: Option<Confirmation>,
    /// The bisection of the commits between the two sides, when they carry commits.
    pub bisect: Option<Bisection>,
}

/// The `abperf bisect` of a change whose sides are revisions of a git repository.
#[derive(Debug, Clone, PartialEq)]
pub struct Bisection {
    /// The command line that bisects the interval (to run by hand, or what `--bisect` ran).
    pub command: String,
    /// What it found, when it ran (or why it need not run).
    pub result: Option<String>,
}

/// What re-measuring a change found.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirmation {
    /// The experiment of the re-measurement.
    pub experiment: Option<i64>,
    /// Whether it found a difference in the same direction.
    pub confirmed: bool,
    /// In words (its verdict, or why it could not run).
    pub text: String,
}

/// One series analysed.
#[derive(Debug, Clone)]
pub struct Analysed {
    pub series: Series,
    /// None: too few points to analyse (the reason).
    pub skipped: Option<String>,
    pub changes: Vec<Change>,
    pub outliers: Vec<usize>,
    pub p: f64,
    /// Benjamini-Hochberg adjusted across the series of the query.
    pub adjusted_p: f64,
    pub noise_factor: f64,
}

/// The whole answer of one query.
#[derive(Debug, Clone)]
pub struct HistoryReport {
    pub order: Order,
    pub alpha: f64,
    pub series: Vec<Analysed>,
    /// Whether the query named one series (its points are listed).
    pub one: bool,
}

impl HistoryReport {
    /// Every change, with its series.
    pub fn changes(&self) -> impl Iterator<Item = (&Analysed, &Change)> {
        self.series
            .iter()
            .flat_map(|a| a.changes.iter().map(move |c| (a, c)))
    }
}

/// Analyse `series` at level `alpha`: each one's changes, then Benjamini-Hochberg across them
/// (a series keeps its changes when its adjusted p-value is at most alpha).
pub fn analyse(
    series: Vec<Series>,
    order: Order,
    alpha: f64,
    one: bool,
) -> Result<HistoryReport, String> {
    let cfg = Config {
        alpha,
        ..Config::default()
    };
    let mut found = Vec::new();
    let mut out = Vec::new();
    for s in series {
        let points: Vec<cp::Point> = s
            .points
            .iter()
            .map(|p| cp::Point {
                estimate: p.mean,
                se: p.se(),
            })
            .collect();
        if points.len() < cp::MIN_POINTS {
            out.push(Analysed {
                skipped: Some(format!(
                    "{} point(s); a history needs at least {}",
                    points.len(),
                    cp::MIN_POINTS
                )),
                series: s,
                changes: vec![],
                outliers: vec![],
                p: 1.0,
                adjusted_p: 1.0,
                noise_factor: 1.0,
            });
            continue;
        }
        let h = cp::detect(&points, &cfg).map_err(|e| format!("series {}: {e}", s.number))?;
        found.push((out.len(), h));
        out.push(Analysed {
            series: s,
            skipped: None,
            changes: vec![],
            outliers: vec![],
            p: 1.0,
            adjusted_p: 1.0,
            noise_factor: 1.0,
        });
    }
    let mut histories: Vec<cp::History> = found.iter().map(|(_, h)| h.clone()).collect();
    let adjusted = cp::keep_discoveries(&mut histories, alpha);
    for (((at, _), h), q) in found.iter().zip(histories).zip(adjusted) {
        let a = &mut out[*at];
        a.p = h.p;
        a.adjusted_p = q;
        a.noise_factor = h.noise_factor;
        a.outliers = h.outliers.clone();
        let starts = std::iter::once(0).chain(h.changes.iter().map(|c| c.index));
        a.changes = h
            .changes
            .iter()
            .zip(starts)
            .map(|(c, from)| change(&a.series, from, c, &h.outliers))
            .collect();
    }
    Ok(HistoryReport {
        order,
        alpha,
        series: out,
        one,
    })
}

/// `c` as reported; `from` is the first point after the previous change (0 for the first).
fn change(s: &Series, from: usize, c: &cp::Change, outliers: &[usize]) -> Change {
    // The level before: the inverse-variance-weighted mean of the stretch before the change
    // (outliers left out), which `size` is measured from.
    let (mut w, mut wx) = (0.0, 0.0);
    for (i, p) in s.points.iter().enumerate().take(c.index).skip(from) {
        if !outliers.contains(&i) {
            let wi = 1.0 / (p.se() * p.se());
            w += wi;
            wx += wi * p.mean;
        }
    }
    let before = wx / w;
    Change {
        index: c.index,
        location: c.location,
        size: c.size,
        size_interval: c.size_interval,
        relative: c.size / before,
        regression: c.size > 0.0,
        confirmed: None,
        bisect: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(exp: i64, step: &str, mean: f64) -> HistoryPoint {
        HistoryPoint {
            experiment: exp,
            kind: abperf_model::Kind::Run,
            created: format!("2026-11-{:02}T00:00:00Z", exp),
            labels: [("step".to_string(), step.to_string())].into(),
            host: "box".into(),
            kernel: "6.1".into(),
            variant: "a".into(),
            command: "work".into(),
            metric: "wall_ns".into(),
            runs: 4,
            mean,
            sd: 2.0,
        }
    }

    #[test]
    fn a_step_is_found_at_the_first_point_after_it_in_label_order() {
        // Experiments stored out of order: the label orders them (numerically: 10 after 9).
        let mut points: Vec<HistoryPoint> = (1..=24)
            .map(|i| {
                point(
                    25 - i,
                    &i.to_string(),
                    if i >= 13 { 120.0 } else { 100.0 } + (i % 3) as f64 * 0.3,
                )
            })
            .collect();
        points.push(HistoryPoint {
            runs: 1,
            ..point(99, "7", 500.0)
        });
        let order = Order::Label("step".into());
        let series = group(points, &order);
        assert_eq!(series.len(), 1);
        assert_eq!(
            series[0].points.len(),
            24,
            "the one-run point has no standard error"
        );
        let r = analyse(series, order.clone(), 0.05, false).unwrap();
        let changes: Vec<_> = r.changes().collect();
        assert_eq!(changes.len(), 1);
        let (a, c) = changes[0];
        assert_eq!(a.series.point_name(c.index, &order), "13");
        assert!(c.regression && (c.relative - 0.2).abs() < 0.02, "{c:?}");
    }

    #[test]
    fn label_values_in_a_command_make_it_a_template() {
        let labels = [("build".to_string(), "47".to_string())].into();
        assert_eq!(
            template("/b/47/x --n 47 147 47a", &labels),
            "/b/{build}/x --n {build} 147 47a"
        );
    }

    #[test]
    fn a_flat_series_has_no_change_and_selectors_are_checked() {
        let points: Vec<HistoryPoint> = (1..=20)
            .map(|i| point(i, &format!("{i:02}"), 100.0 + ((i * 7) % 5) as f64 * 0.4))
            .collect();
        let series = group(points, &Order::Time);
        assert!(select(&series, "1").is_ok());
        assert!(select(&series, "work").is_ok());
        assert!(select(&series, "2").is_err());
        assert!(select(&series, "nothing").is_err());
        let r = analyse(series, Order::Time, 0.05, true).unwrap();
        assert_eq!(r.changes().count(), 0);
        assert!(r.series[0].p > 0.05);
    }
}
