//! `abperf history --confirm` on a change whose two sides carry commits (`--label commit=SHA`):
//! the bisection of the commits between them by `abperf bisect`. The exact command line is
//! offered beside the change; with `--bisect --repo DIR --build CMD` it runs (the stored command
//! is untrusted, so `history_confirm::trusted` decides as for a re-measurement), and what it
//! found is reported.

use super::history_confirm;
use crate::model::Kind;
use crate::model::history_point::HistoryPoint;
use crate::report::history::{Bisection, Confirmation, HistoryReport};
use crate::store::Location;
use anyhow::Context;
use std::path::{Path, PathBuf};

/// What the bisection of a change needs of the command line.
pub struct Settings {
    /// The label that carries each experiment's commit.
    pub label: String,
    pub repo: Option<PathBuf>,
    pub build: Option<String>,
    /// Run the bisections (`--bisect`) instead of printing them.
    pub run: bool,
    pub metric: String,
    pub alpha: f64,
    pub trust_stored_design: bool,
}

/// The two ends of a bisection: the last point before the change's location and the first
/// after it, their commits, and the command both ran.
struct Ends<'a> {
    before: &'a HistoryPoint,
    after: &'a HistoryPoint,
    good: &'a str,
    bad: &'a str,
}

/// The ends of change `(lo, hi)` of `points` when both sides are run experiments with different
/// commits under `label` and the same command (else None: nothing to bisect).
fn ends<'a>(points: &'a [HistoryPoint], location: (usize, usize), label: &str) -> Option<Ends<'a>> {
    let before = &points[location.0.saturating_sub(1)];
    let after = &points[location.1];
    let good = before.labels.get(label)?;
    let bad = after.labels.get(label)?;
    let runs = before.kind == Kind::Run && after.kind == Kind::Run;
    (runs && good != bad && !before.command.is_empty() && before.command == after.command).then(
        || Ends {
            before,
            after,
            good,
            bad,
        },
    )
}

/// The `abperf bisect` command line of `e`.
fn command_line(e: &Ends, s: &Settings) -> Vec<String> {
    let mut v: Vec<String> = ["abperf", "bisect", "--good", e.good, "--bad", e.bad]
        .map(String::from)
        .to_vec();
    if let Some(r) = &s.repo {
        v.extend(["--repo".into(), r.display().to_string()]);
    }
    v.extend([
        "--build".into(),
        s.build.clone().unwrap_or_else(|| "BUILD-COMMAND".into()),
        "--metric".into(),
        s.metric.clone(),
        "--alpha".into(),
        s.alpha.to_string(),
        "--".into(),
        e.after.command.clone(),
    ]);
    v
}

/// Offer (or, with `--bisect`, run) the bisection of every change of `r` whose sides carry
/// commits.
pub fn bisect_all(r: &mut HistoryReport, at: &Location, s: &Settings) -> anyhow::Result<()> {
    for a in &mut r.series {
        for c in &mut a.changes {
            let Some(e) = ends(&a.series.points, c.location, &s.label) else {
                continue;
            };
            let words = command_line(&e, s);
            let command = shell_words::join(&words);
            let result = match (&s.repo, s.run) {
                (Some(repo), false) => one_commit(repo, &e)?,
                (Some(repo), true) => match one_commit(repo, &e)? {
                    Some(one) => Some(one),
                    None => {
                        history_confirm::trusted(
                            at,
                            &[e.before.experiment, e.after.experiment],
                            &[&e.after.command],
                            s.trust_stored_design,
                        )?;
                        let (found, confirmed) = run(&words, at)?;
                        if confirmed {
                            c.confirmed = Some(Confirmation {
                                experiment: None,
                                confirmed: true,
                                text: found.clone(),
                            });
                        }
                        Some(found)
                    }
                },
                (None, _) => None,
            };
            c.bisect = Some(Bisection { command, result });
        }
    }
    Ok(())
}

/// When the interval holds a single commit (bad's first parent is good), it in words: no
/// bisection is needed.
fn one_commit(repo: &Path, e: &Ends) -> anyhow::Result<Option<String>> {
    for (flag, rev) in [("good", e.good), ("bad", e.bad)] {
        if rev.starts_with('-') {
            anyhow::bail!("label {flag} side: '{rev}' is not a revision");
        }
    }
    let span = format!("{}..{}", e.good, e.bad);
    let out = super::bisect::git::git(repo, &["rev-list", "--count", "--first-parent", &span])
        .with_context(|| format!("counting the commits {span} in {}", repo.display()))?;
    Ok((out.trim() == "1").then(|| {
        format!(
            "nothing to bisect: {} is the only commit after {}",
            e.bad, e.good
        )
    }))
}

/// Run the bisection `words` (its report on stderr as it goes, JSON read back): what it found,
/// and whether it named a culprit confirmed against its parent.
fn run(words: &[String], at: &Location) -> anyhow::Result<(String, bool)> {
    let exe = std::env::current_exe().context("finding this abperf to run the bisection")?;
    // `--format json` before the `--` that ends the options.
    let dashes = words.iter().position(|w| w == "--").unwrap_or(words.len());
    let out = std::process::Command::new(exe)
        .args(&words[1..dashes])
        .args(["--format", "json"])
        .args(&words[dashes..])
        .env("ABPERF_DB", history_confirm::location_text(at))
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("starting abperf bisect")?;
    if !out.status.success() {
        return Ok((
            format!(
                "the bisection failed (abperf bisect exited {})",
                out.status
                    .code()
                    .map_or("by a signal".into(), |c| c.to_string())
            ),
            false,
        ));
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("reading abperf bisect's JSON report")?;
    let result = v["result"].as_str().unwrap_or("unknown");
    let id = &v["bisection"];
    Ok(match result {
        "culprit" => (
            format!(
                "bisection {id}: first bad commit {} (\"{}\"), confirmed against its parent",
                v["candidate"]["short"].as_str().unwrap_or("?"),
                v["candidate"]["subject"].as_str().unwrap_or("")
            ),
            true,
        ),
        other => (format!("bisection {id}: {other}"), false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(exp: i64, commit: &str, command: &str, kind: Kind) -> HistoryPoint {
        HistoryPoint {
            experiment: exp,
            kind,
            created: String::new(),
            labels: [("commit".to_string(), commit.to_string())].into(),
            host: String::new(),
            kernel: String::new(),
            variant: "a".into(),
            command: command.into(),
            metric: "wall_ns".into(),
            runs: 5,
            mean: 1.0,
            sd: 0.1,
        }
    }

    #[test]
    fn the_ends_are_the_points_around_the_location_and_the_command_is_exact() {
        let points = vec![
            point(1, "aaa", "./bench -n 3", Kind::Run),
            point(2, "bbb", "./bench -n 3", Kind::Run),
            point(3, "ccc", "./bench -n 3", Kind::Run),
            point(4, "ddd", "./bench -n 3", Kind::Run),
        ];
        let e = ends(&points, (2, 3), "commit").expect("ends");
        assert_eq!((e.good, e.bad), ("bbb", "ddd"));
        let s = Settings {
            label: "commit".into(),
            repo: Some("/src/x y".into()),
            build: Some("make -j2".into()),
            run: false,
            metric: "user_ns".into(),
            alpha: 0.05,
            trust_stored_design: false,
        };
        assert_eq!(
            shell_words::join(command_line(&e, &s)),
            "abperf bisect --good bbb --bad ddd --repo '/src/x y' --build 'make -j2' \
             --metric user_ns --alpha 0.05 -- './bench -n 3'"
        );
        // No commit label, an import, or another command: nothing to bisect.
        assert!(ends(&points, (2, 3), "rev").is_none());
        let mut imported = points.clone();
        imported[3].kind = Kind::Import;
        assert!(ends(&imported, (2, 3), "commit").is_none());
        let mut other = points.clone();
        other[3].command = "./other".into();
        assert!(ends(&other, (2, 3), "commit").is_none());
    }
}
