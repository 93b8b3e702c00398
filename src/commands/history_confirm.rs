//! `abperf history --confirm`: each detected change re-measured by an interleaved A/B of the
//! stored commands on either side of its location (the last point before the location interval
//! and the first after it), run by `abperf run` into the same store as a new experiment labelled
//! `history-confirm`, and judged as `compare` judges it. Stored commands are untrusted (a store
//! is shared, issue 40): [`trusted`] decides whether they may run.

use super::output::{self, AnalysisArgs};
use crate::error::usage;
use crate::model::Kind;
use crate::report::View;
use crate::report::history::{CONFIRM_LABEL, Confirmation, HistoryReport};
use crate::stats::verdict::Verdict;
use crate::store::{Location, Store};
use anyhow::Context;
use clap::Parser;

/// One re-measurement: which change, and the commands on either side.
struct Job {
    series: usize,
    change: usize,
    /// Whether the change made the metric worse (what the re-measurement must find).
    worse: bool,
    before: String,
    after: String,
    /// The experiments the two commands come from.
    experiments: [i64; 2],
    /// What made them: only `run` experiments have a design to run again.
    kinds: [Kind; 2],
    label: String,
}

/// Whether the stored commands of a re-measurement may run: the one place that decides it.
/// They may when every experiment they come from (`experiments`) has a design this user
/// approved on this machine (the check `run --resume` makes: docs/security.md), or when the
/// user, having seen them printed, passed `--trust-stored-design`.
pub fn trusted(
    at: &Location,
    experiments: &[i64],
    commands: &[&str],
    trust_flag: bool,
) -> anyhow::Result<()> {
    if approved_here(at, experiments) {
        return Ok(());
    }
    for c in commands {
        crate::error::stderr_line(&format!("abperf: history --confirm would run: {c}"));
    }
    if trust_flag {
        return Ok(());
    }
    Err(usage(
        "history --confirm runs the commands stored in the experiments (printed above); a store \
         is shared, so they are not trusted: run again with --trust-stored-design if they are yours",
    ))
}

/// Whether the designs of all `experiments` were approved by this user on this machine.
fn approved_here(at: &Location, experiments: &[i64]) -> bool {
    let Ok(store) = Store::open_to_read(at) else {
        return false;
    };
    experiments.iter().all(|&id| {
        let (Ok(e), Ok(v)) = (store.experiment(id), store.variants(id)) else {
            return false;
        };
        crate::design::trust::verify(id, &e.design, &v, false).is_ok()
    })
}

/// What a re-measurement needs of the command line.
pub struct Settings {
    pub metric: String,
    pub alpha: f64,
    /// Timed runs per side.
    pub confirm_runs: u32,
    pub trust_stored_design: bool,
}

/// Re-measure every change of `r` and record each verdict in it.
pub fn confirm_all(r: &mut HistoryReport, at: &Location, args: &Settings) -> anyhow::Result<()> {
    let jobs = jobs(r);
    let runnable: Vec<&Job> = jobs.iter().filter(|j| cannot_run(j).is_none()).collect();
    if !runnable.is_empty() {
        let commands: Vec<&str> = runnable
            .iter()
            .flat_map(|j| [j.before.as_str(), j.after.as_str()])
            .collect();
        let experiments: Vec<i64> = runnable.iter().flat_map(|j| j.experiments).collect();
        trusted(at, &experiments, &commands, args.trust_stored_design)?;
    }
    for j in &jobs {
        let k = confirm_one(j, at, args)?;
        r.series[j.series].changes[j.change].confirmed = Some(k);
    }
    Ok(())
}

fn jobs(r: &HistoryReport) -> Vec<Job> {
    let nonce = std::process::id();
    let mut out = Vec::new();
    for (si, a) in r.series.iter().enumerate() {
        for (ci, c) in a.changes.iter().enumerate() {
            let before = &a.series.points[c.location.0.saturating_sub(1)];
            let after = &a.series.points[c.location.1];
            out.push(Job {
                series: si,
                change: ci,
                worse: c.regression,
                before: before.command.clone(),
                after: after.command.clone(),
                experiments: [before.experiment, after.experiment],
                kinds: [before.kind, after.kind],
                label: format!(
                    "{CONFIRM_LABEL}=series {} experiments {}:{} ({nonce})",
                    a.series.number, before.experiment, after.experiment
                ),
            });
        }
    }
    out
}

fn not_confirmed(text: String) -> Confirmation {
    Confirmation {
        experiment: None,
        confirmed: false,
        text,
    }
}

/// Why the re-measurement of `j` cannot run (None: it can).
fn cannot_run(j: &Job) -> Option<String> {
    if let Some(k) = j.kinds.iter().find(|k| **k != Kind::Run) {
        let [b, a] = j.experiments;
        return Some(match k {
            Kind::Import => format!(
                "cannot re-measure: an imported point (experiments {b}, {a}) was measured \
                 elsewhere by another tool and abperf stores no design to run again; measure \
                 both sides there and import them, or run them with abperf run"
            ),
            Kind::Micro => format!(
                "cannot re-measure: a micro point (experiments {b}, {a}) is re-measured by \
                 running abperf micro on each side again, not by a stored command"
            ),
            _ => format!("cannot re-measure: experiments {b}, {a} are not run experiments"),
        });
    }
    if j.before.is_empty() || j.after.is_empty() {
        return Some("no stored command to re-run".into());
    }
    if j.before == j.after {
        return Some(
            "both sides ran the same command: what changed is not in it (a kernel, a file), so \
             an A/B of the command cannot tell them apart"
                .into(),
        );
    }
    None
}

fn confirm_one(j: &Job, at: &Location, args: &Settings) -> anyhow::Result<Confirmation> {
    if let Some(why) = cannot_run(j) {
        return Ok(not_confirmed(why));
    }
    let exe = std::env::current_exe().context("finding this abperf to run the re-measurement")?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("run")
        .args(["--runs", &args.confirm_runs.to_string(), "--warmup", "1"])
        .args(["--label", &j.label, "-n", "before", "-n", "after"])
        .args(["--title", "history --confirm"])
        .arg("--")
        .args([&j.before, &j.after])
        // The store through the environment: a server's password stays off the command line.
        .env("ABPERF_DB", location_text(at))
        .stdout(std::io::stderr())
        .stdin(std::process::Stdio::null());
    let status = cmd.status().context("starting abperf run for --confirm")?;
    if !status.success() {
        return Ok(not_confirmed(format!(
            "the re-measurement failed (abperf run exited {})",
            status
                .code()
                .map_or("by a signal".into(), |c| c.to_string())
        )));
    }
    let label_value = j.label.split_once('=').map(|(_, v)| v).unwrap_or_default();
    let store = Store::open_to_read(at)?;
    let id = find_labelled(&store, label_value)?
        .context("the re-measurement's experiment is not in the store")?;
    judge(&store, id, &args.metric, args.alpha, j.worse)
}

pub(super) fn location_text(at: &Location) -> std::ffi::OsString {
    match at {
        Location::File(p) => p.clone().into_os_string(),
        Location::Server(dsn) => dsn.into(),
    }
}

/// The newest experiment labelled `history-confirm=value`.
fn find_labelled(store: &Store, value: &str) -> anyhow::Result<Option<i64>> {
    for e in store.list()?.iter().rev() {
        if store
            .labels(e.id)?
            .get(CONFIRM_LABEL)
            .is_some_and(|v| v == value)
        {
            return Ok(Some(e.id));
        }
    }
    Ok(None)
}

#[derive(Parser)]
struct Defaults {
    #[command(flatten)]
    analysis: AnalysisArgs,
}

/// `compare`'s verdict on `metric` of experiment `id` (after against before): confirmed when
/// it found the difference, in the change's direction (the caller's sign).
fn judge(
    store: &Store,
    id: i64,
    metric: &str,
    alpha: f64,
    worse: bool,
) -> anyhow::Result<Confirmation> {
    let mut r = output::load(store, id, View::Compare)?;
    let alpha_text = alpha.to_string();
    let mut analysis =
        Defaults::try_parse_from(["history", "--metric", metric, "--alpha", &alpha_text])
            .context("the default analysis")?
            .analysis;
    analysis.resamples = 0;
    analysis.analyse_into(&mut r)?;
    let c = r
        .analysis
        .as_ref()
        .and_then(|a| a.comparisons.first())
        .with_context(|| format!("experiment {id}: no comparison of {metric}"))?;
    let confirmed = if worse {
        c.verdict == Verdict::Slower
    } else {
        c.verdict == Verdict::Faster
    };
    Ok(Confirmation {
        experiment: Some(id),
        confirmed,
        text: format!(
            "re-measured in experiment {id}: after vs before {} ({:+.1}%)",
            c.verdict.as_str(),
            c.change_pct
        ),
    })
}
