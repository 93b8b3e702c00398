//! A bisection's report (text, mail, JSON): the range, the ends' A/B, how it ended (the culprit
//! by abbreviated hash and subject on a line that says so, its posterior and the confirmation
//! with its CI; or no change, or the interval, or the search in progress), each probe with its
//! runs and estimate, and the revisions skipped.

use super::Format;
use super::git::Commit;
use super::stored::Head;
use crate::stats::bisect::{Bisection, Outcome};
use crate::stats::welch::{fieller, welch};
use serde::Serialize;

/// A revision as reported.
#[derive(Debug, Clone, Serialize)]
pub struct Rev {
    /// Its place in the range: 0 the good end, n the bad end.
    pub index: usize,
    pub hash: String,
    pub short: String,
    pub subject: String,
}

/// An A/B: B against A, as a relative change with its 95% CI (Fieller) and Welch's p.
#[derive(Debug, Clone, Serialize)]
pub struct Ab {
    pub runs_a: usize,
    pub runs_b: usize,
    pub mean_a: f64,
    pub mean_b: f64,
    pub change_pct: Option<f64>,
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    pub p: Option<f64>,
}

/// A probed revision: its runs and estimate.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    pub rev: Rev,
    pub runs: usize,
    pub mean: f64,
    /// Where its mean lies from the good end's (0) to the bad end's (1).
    pub position: f64,
    /// "like good", "like bad", or "unlike both ends" (different from each at alpha).
    pub like: &'static str,
}

/// A candidate that is a merge: the change came in with a merged branch, which first-parent
/// order does not enter.
#[derive(Debug, Clone, Serialize)]
pub struct Merge {
    /// The parents after the first: the merged branches' tips.
    pub tips: Vec<String>,
    /// Where the first merged branch forked from the first parent (git merge-base), when the
    /// repository could tell; the merged branch is bisected from here to `tips[0]`.
    pub base: Option<String>,
}

/// The whole report (its JSON is this structure).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// "abperf-bisect": which schema of docs/abperf-report.schema.json this is.
    pub schema: &'static str,
    /// Its version.
    pub version: u32,
    pub bisection: i64,
    pub repo: String,
    pub good: Rev,
    pub bad: Rev,
    /// Commits in the range (good excluded, bad included).
    pub commits: usize,
    pub metric: String,
    pub build: String,
    pub command: String,
    pub delta: f64,
    pub alpha: f64,
    /// "culprit", "unconfirmed", "no change", "interval" or "in progress".
    pub result: &'static str,
    pub ends: Ab,
    /// The candidate commit (the culprit when `result` is "culprit").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate: Option<Rev>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub posterior: Option<f64>,
    /// The candidate is a merge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge: Option<Merge>,
    /// The candidate against its parent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Ab>,
    /// Where the change lies when no one commit is named: first..=last, and its mass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<(Rev, Rev, f64)>,
    pub probes: Vec<Probe>,
    pub unbuildable: Vec<Rev>,
    pub runs: usize,
    pub experiments: Vec<i64>,
}

fn rev(commits: &[Commit], index: usize) -> Rev {
    let c = &commits[index];
    Rev {
        index,
        hash: c.hash.clone(),
        short: c.short().to_string(),
        subject: c.subject.clone(),
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn ab(a: &[f64], b: &[f64]) -> Ab {
    let ci = fieller(a, b, 0.95).ok();
    let pct = |r: f64| 100.0 * (r - 1.0);
    Ab {
        runs_a: a.len(),
        runs_b: b.len(),
        mean_a: mean(a),
        mean_b: mean(b),
        change_pct: (!a.is_empty() && mean(a) > 0.0).then(|| pct(mean(b) / mean(a))),
        ci_low_pct: ci.as_ref().map(|c| pct(c.low)),
        ci_high_pct: ci.as_ref().map(|c| pct(c.high)),
        p: welch(a, b).ok().map(|w| w.p),
    }
}

/// What the report is made from.
pub struct Source<'a> {
    pub id: i64,
    pub head: &'a Head,
    pub machine: &'a Bisection,
    /// How it ended, or None while it goes on.
    pub outcome: Option<&'a Outcome>,
    pub unbuildable: &'a [usize],
    pub experiments: Vec<i64>,
    /// Where a merged branch forked (for a candidate that is a merge), if git could tell.
    pub merge_base: Option<String>,
}

pub fn build(s: &Source) -> Report {
    let commits = &s.head.commits;
    let n = commits.len() - 1;
    let runs = s.machine.runs();
    let (good, bad) = (runs.of(0), runs.of(n));
    let alpha = s.head.settings.alpha;
    let (mg, mb) = (mean(&good), mean(&bad));
    let probes = runs
        .probed()
        .filter(|&r| r != 0 && r != n)
        .map(|r| {
            let v = runs.of(r);
            let m = mean(&v);
            let position = if mb != mg { (m - mg) / (mb - mg) } else { 0.0 };
            let differs = |e: &[f64]| welch(&v, e).is_ok_and(|w| w.p < alpha);
            let like = if differs(&good) && differs(&bad) {
                "unlike both ends"
            } else if position < 0.5 {
                "like good"
            } else {
                "like bad"
            };
            Probe {
                rev: rev(commits, r),
                runs: v.len(),
                mean: m,
                position,
                like,
            }
        })
        .collect();
    let mut report = Report {
        schema: "abperf-bisect",
        version: 1,
        bisection: s.id,
        repo: s.head.repo.clone(),
        good: rev(commits, 0),
        bad: rev(commits, n),
        commits: n,
        metric: s.head.metric.clone(),
        build: s.head.build.clone(),
        command: s.head.command.clone(),
        delta: s.head.settings.delta,
        alpha,
        result: "in progress",
        ends: ab(&good, &bad),
        candidate: None,
        posterior: None,
        merge: None,
        confirmation: None,
        interval: None,
        probes,
        unbuildable: s.unbuildable.iter().map(|&r| rev(commits, r)).collect(),
        runs: runs.len()
            + s.machine.confirmation_runs().0.len()
            + s.machine.confirmation_runs().1.len(),
        experiments: s.experiments.clone(),
    };
    match s.outcome {
        None => {}
        Some(Outcome::NoChange { .. }) => report.result = "no change",
        Some(&Outcome::Candidate {
            commit,
            mass,
            confirmed,
            ..
        }) => {
            report.result = if confirmed { "culprit" } else { "unconfirmed" };
            report.candidate = Some(rev(commits, commit));
            report.posterior = Some(mass);
            let merged = &commits[commit].merged;
            report.merge = (!merged.is_empty()).then(|| Merge {
                tips: merged.clone(),
                base: s.merge_base.clone(),
            });
            let (parent, child) = s.machine.confirmation_runs();
            report.confirmation = Some(ab(parent, child));
        }
        Some(&Outcome::Interval { first, last, mass }) => {
            report.result = "interval";
            report.interval = Some((rev(commits, first), rev(commits, last), mass));
        }
    }
    report
}

pub fn render(r: &Report, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(r)? + "\n",
        Format::Text => text(r),
        Format::Mail => mail(r),
    })
}

fn signed(v: Option<f64>) -> String {
    v.map_or("?".into(), |v| format!("{v:+.2}%"))
}

/// "+5.12% (95% CI +4.10% .. +6.15%), p 0.0001, 10 and 10 runs".
fn ab_line(a: &Ab) -> String {
    format!(
        "{} (95% CI {} .. {}), p {}, {} and {} runs",
        signed(a.change_pct),
        signed(a.ci_low_pct),
        signed(a.ci_high_pct),
        a.p.map_or("?".into(), |p| if p < 1e-4 {
            "< 0.0001".into()
        } else {
            format!("{p:.4}")
        }),
        a.runs_a,
        a.runs_b
    )
}

fn outcome_lines(r: &Report, out: &mut Vec<String>) {
    let cand = r.candidate.as_ref();
    let mass = r.posterior.unwrap_or(0.0);
    match (r.result, cand, &r.confirmation) {
        ("culprit", Some(c), Some(conf)) => {
            out.push(format!("first bad commit: {} (\"{}\")", c.short, c.subject));
            out.push(format!(
                "posterior: {mass:.3} (the search stops at {:.3})",
                1.0 - r.delta
            ));
            out.push(format!("confirmed against its parent: {}", ab_line(conf)));
        }
        ("unconfirmed", Some(c), Some(conf)) => {
            out.push(format!(
                "no culprit named: the candidate {} (\"{}\", posterior {mass:.3}) did not confirm",
                c.short, c.subject
            ));
            out.push(format!("its A/B against its parent: {}", ab_line(conf)));
        }
        ("no change", ..) => out.push(format!(
            "no change between the endpoints at alpha {}: no culprit",
            r.alpha
        )),
        ("interval", ..) => {
            if let Some((first, last, mass)) = &r.interval {
                out.push(format!(
                    "no single commit: the change lies in {}..{} ({} commits, posterior {mass:.3})",
                    first.short,
                    last.short,
                    last.index + 1 - first.index
                ));
            }
        }
        _ => out.push("in progress: the search goes on (abperf bisect --resume)".into()),
    }
}

/// What to say of a candidate that is a merge: first-parent order ends at it; the merged
/// branch can be bisected in turn.
fn merge_lines(r: &Report, out: &mut Vec<String>) {
    let (Some(m), Some(c)) = (&r.merge, &r.candidate) else {
        return;
    };
    let Some(tip) = m.tips.first() else {
        return;
    };
    let short = |h: &str| h[..h.len().min(12)].to_string();
    out.push(format!(
        "{} is a merge: the change came in with the branch it merged (tip {}), which \
         first-parent order does not enter",
        c.short,
        short(tip)
    ));
    let good = m.base.as_deref().map_or_else(
        || format!("$(git merge-base {}^1 {})", c.short, short(tip)),
        short,
    );
    out.push(format!(
        "bisect inside it: abperf bisect --good {good} --bad {} (the same options), or \
         --descend-merges to go on by itself",
        short(tip)
    ));
}

fn probe_lines(r: &Report, out: &mut Vec<String>) {
    for p in &r.probes {
        out.push(format!(
            "  {:>5} {} {:>4} runs  {:>6.2} of the way  {:<16} {}",
            p.rev.index, p.rev.short, p.runs, p.position, p.like, p.rev.subject
        ));
    }
    for u in &r.unbuildable {
        out.push(format!(
            "  {:>5} {} skipped (does not build or run)  {}",
            u.index, u.short, u.subject
        ));
    }
}

fn text(r: &Report) -> String {
    let mut out = vec![
        format!(
            "bisection {}: {} commits from {} (good) to {} (bad), first-parent, in {}",
            r.bisection, r.commits, r.good.short, r.bad.short, r.repo
        ),
        format!("metric {}: bad against good {}", r.metric, ab_line(&r.ends)),
    ];
    outcome_lines(r, &mut out);
    merge_lines(r, &mut out);
    out.push("probes (revision, runs, position from good 0 to bad 1, call, subject):".into());
    probe_lines(r, &mut out);
    out.push(format!(
        "{} runs in {} experiments ({})",
        r.runs,
        r.experiments.len(),
        ids(&r.experiments)
    ));
    out.join("\n") + "\n"
}

fn ids(ids: &[i64]) -> String {
    match ids {
        [] => "none".into(),
        [one] => one.to_string(),
        [first, .., last] => format!("{first}..{last}"),
    }
}

fn mail(r: &Report) -> String {
    let mut out = vec![
        "Hi,".to_string(),
        String::new(),
        wrap(&format!(
            "I bisected the change in {} between {} (good) and {} (bad), {} commits in \
             first-parent order, with abperf's statistical bisection: every probe ran \
             interleaved with both ends, and a commit is named only when it holds {:.0}% of the \
             posterior and an A/B against its parent confirms it.",
            r.metric,
            r.good.short,
            r.bad.short,
            r.commits,
            100.0 * (1.0 - r.delta)
        )),
        String::new(),
        wrap(&format!("Between the ends: {}.", ab_line(&r.ends))),
        String::new(),
    ];
    outcome_lines(r, &mut out);
    merge_lines(r, &mut out);
    out.push(String::new());
    out.push("Each probe, with its runs and where its mean lies (good 0, bad 1):".into());
    probe_lines(r, &mut out);
    out.push(String::new());
    out.push(wrap(&format!(
        "The runs are experiments {} of the store (abperf bisect status {}).",
        ids(&r.experiments),
        r.bisection
    )));
    out.join("\n") + "\n"
}

/// `text` wrapped at 72 columns, as a mail's paragraph.
fn wrap(text: &str) -> String {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line at least");
        if !line.is_empty() && line.len() + 1 + word.len() > 72 {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::bisect::{Settings, Step};

    fn head(n: usize) -> Head {
        Head {
            repo: "/r".into(),
            commits: (0..=n)
                .map(|i| Commit {
                    hash: format!("{:x}", i + 1).repeat(40)[..40].to_string(),
                    subject: format!("commit {i}"),
                    merged: Vec::new(),
                })
                .collect(),
            build: "make".into(),
            command: "./prog".into(),
            metric: "wall_ns".into(),
            settings: Settings::default(),
            seed: 1,
        }
    }

    /// A machine driven to its end over a clean step at commit 5 of 12.
    fn driven() -> (Bisection, Outcome) {
        let mut b = Bisection::new(12, Settings::default());
        let wobble = [0.5, -0.3, 0.1, -0.5, 0.3, -0.1];
        let mut i = 0;
        loop {
            match b.step() {
                Step::Measure(revs) => {
                    for r in revs {
                        let step = if r >= 5 { 10.0 } else { 0.0 };
                        b.record(r, 100.0 + step + wobble[i % 6]);
                        i += 1;
                    }
                }
                Step::Done(o) => return (b, o),
            }
        }
    }

    #[test]
    fn a_confirmed_culprit_is_named_on_a_line_that_says_so() {
        let (b, o) = driven();
        let h = head(12);
        let r = build(&Source {
            id: 3,
            head: &h,
            machine: &b,
            outcome: Some(&o),
            unbuildable: &[7],
            experiments: vec![3, 4],
            merge_base: None,
        });
        assert_eq!(r.result, "culprit");
        let short = &h.commits[5].hash[..12];
        for format in [Format::Text, Format::Mail] {
            let t = render(&r, format).unwrap();
            assert!(
                t.contains(&format!("first bad commit: {short} (\"commit 5\")")),
                "{t}"
            );
            assert!(t.contains("confirmed against its parent: +9.99%"), "{t}");
            assert!(
                t.contains("skipped (does not build or run)  commit 7"),
                "{t}"
            );
        }
        let j: serde_json::Value =
            serde_json::from_str(&render(&r, Format::Json).unwrap()).unwrap();
        assert_eq!(j["candidate"]["index"], 5);
        assert_eq!(j["confirmation"]["runs_a"], 20);
    }

    #[test]
    fn a_merge_culprit_is_said_to_be_one_with_the_bisection_of_its_branch() {
        let (b, o) = driven();
        let mut h = head(12);
        h.commits[5].merged = vec!["b".repeat(40)];
        let tip = "b".repeat(12);
        for (base, good) in [
            (Some("c".repeat(40)), "c".repeat(12)),
            (
                None,
                format!("$(git merge-base {}^1 {tip})", &h.commits[5].hash[..12]),
            ),
        ] {
            let r = build(&Source {
                id: 3,
                head: &h,
                machine: &b,
                outcome: Some(&o),
                unbuildable: &[],
                experiments: vec![3],
                merge_base: base.clone(),
            });
            for format in [Format::Text, Format::Mail] {
                let t = render(&r, format).unwrap();
                assert!(
                    t.contains(&format!(
                        "is a merge: the change came in with the branch it merged (tip {tip})"
                    )),
                    "{t}"
                );
                assert!(
                    t.contains(&format!("abperf bisect --good {good} --bad {tip}")),
                    "{t}"
                );
            }
            let j: serde_json::Value =
                serde_json::from_str(&render(&r, Format::Json).unwrap()).unwrap();
            assert_eq!(j["merge"]["tips"][0], "b".repeat(40));
            assert_eq!(j["merge"]["base"], serde_json::json!(base));
        }
        // An ordinary commit says nothing of merges.
        let r = build(&Source {
            id: 3,
            head: &head(12),
            machine: &b,
            outcome: Some(&o),
            unbuildable: &[],
            experiments: vec![3],
            merge_base: None,
        });
        assert!(!render(&r, Format::Text).unwrap().contains("merge"));
    }

    #[test]
    fn a_search_in_progress_names_nothing() {
        let b = Bisection::new(12, Settings::default());
        let h = head(12);
        let r = build(&Source {
            id: 1,
            head: &h,
            machine: &b,
            outcome: None,
            unbuildable: &[],
            experiments: vec![],
            merge_base: None,
        });
        let t = render(&r, Format::Text).unwrap();
        assert!(
            t.contains("in progress") && !t.contains("first bad commit"),
            "{t}"
        );
    }

    #[test]
    fn mail_paragraphs_are_wrapped_at_72_columns() {
        let w = wrap(&"word ".repeat(40));
        assert!(
            w.lines().all(|l| l.len() <= 72) && w.lines().count() > 1,
            "{w}"
        );
    }
}
