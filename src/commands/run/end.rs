//! A run experiment's ownership and end: taking it over (`claim`), and concluding it when the
//! runs stop (its status, its summary and verdicts, and how to go on).

use crate::commands::{hints, output};
use crate::model::Status;
use crate::report::View;
use crate::runner::experiment::Ending;
use crate::store::Store;

/// Make this process experiment `id`'s owner (its status becomes `running`), unless its recorded
/// owner is still alive (or may be: another host, an unreadable /proc): then refuse, naming it.
pub(crate) fn claim(store: &mut Store, id: i64) -> anyhow::Result<()> {
    let me = crate::measure::process::current_owner();
    let alive = |o: &crate::model::Owner| {
        !matches!(
            crate::measure::process::liveness(o),
            crate::model::Liveness::Dead(_)
        )
    };
    if let Err(o) = store.claim_experiment(id, &me, &alive)? {
        let how = match crate::measure::process::liveness(&o) {
            crate::model::Liveness::Unknown(why) => format!("it may still be running: {why}"),
            _ => format!(
                "it is still running in pid {} on {}; wait for it, or stop it with: kill -INT {}",
                o.pid, o.host, o.pid
            ),
        };
        anyhow::bail!("experiment {id} cannot be resumed: {how}");
    }
    Ok(())
}

/// After the runs: the experiment's status, its summary and verdicts, and how to go on.
pub(crate) fn conclude(
    store: &mut Store,
    id: i64,
    variants: usize,
    result: anyhow::Result<Ending>,
) -> anyhow::Result<i32> {
    let stopped = result.as_ref().err().and_then(store_stopped);
    let (mut status, mut code) = match &result {
        Ok(Ending::Complete | Ending::Decided(_)) => (Status::Complete, 0),
        // A full disk or a store locked too long stops the experiment; nothing about it failed:
        // free space (or let the other writer finish) and resume.
        Err(_) if stopped.is_some() => (Status::Interrupted, 1),
        Ok(Ending::Failed(_)) | Err(_) => (Status::Failed, 1),
        Ok(Ending::Interrupted(sig)) => (Status::Interrupted, 128 + sig),
    };
    if let (Err(e), Some((what, then))) = (result.as_ref(), stopped) {
        // The status may not be written either; then the dead owner shows it interrupted.
        let _ = store.set_status(id, status);
        return Err(anyhow::anyhow!(
            "store {}: {what} ({e:#}); experiment {id} stopped with every completed run \
             stored; {then}, then continue it with: {}",
            store.path().display(),
            hints::command(store.path(), &format!("run --resume {id}"))
        ));
    }
    if let Err(stored) = store.set_status(id, status) {
        // The error that stopped the runs (a store that went away) says more than this one.
        let Err(e) = result else { return Err(stored) };
        crate::error::stderr_line(&format!(
            "abperf: warning: experiment {id} is not marked {}: {stored:#}",
            status.as_str()
        ));
        crate::error::stderr_line(&format!(
            "abperf: experiment {id} stopped with every completed run stored; when the store \
             answers again, continue it with: {}",
            hints::command(store.path(), &format!("run --resume {id}"))
        ));
        return Err(e);
    }
    let mut report = output::load(store, id, View::RunEnd)?;
    output::escape_for_people(&mut report, crate::report::Format::Text);
    // With -i every run may have failed: nothing was measured, whatever the schedule says.
    let starved: Vec<String> = (0..report.data.variants.len())
        .filter(|&pos| report.data.counted(pos).next().is_none())
        .map(|pos| format!("'{}'", report.data.variants[pos].name))
        .collect();
    let all_failed = matches!(result, Ok(Ending::Complete))
        && !starved.is_empty()
        && starved.len() == report.data.variants.len();
    if all_failed {
        status = Status::Failed;
        code = 1;
        store.set_status(id, status)?;
        report.data.experiments[0].status = status;
    }
    // A signal asks for a prompt exit: the verdicts (a bootstrap per pair, seconds for many
    // variants) are left to `compare`, which the resume hint names.
    let interrupted = matches!(result, Ok(Ending::Interrupted(_)));
    if (variants > 1 || report.data.has_boots())
        && !all_failed
        && !interrupted
        && let Err(e) = output::AnalysisArgs::default().analyse_into(&mut report)
    {
        crate::error::stderr_line(&format!("abperf: no verdict: {e:#}"));
    }
    // Blocks of variants without a single stored run say nothing: left out when nothing ran.
    if !report.data.runs.is_empty() {
        crate::error::stdout_line("");
        crate::error::stdout_text(&crate::report::Format::Text.render(&report)?);
    }
    tell_ending(store, id, result, all_failed, &starved)?;
    Ok(code)
}

/// When error `e` stopped the runs because of the store's machine, not the experiment: what
/// happened and what to do before resuming.
fn store_stopped(e: &anyhow::Error) -> Option<(&'static str, &'static str)> {
    if crate::store::is_disk_full(e) {
        Some(("the disk is full", "free some space"))
    } else if crate::store::is_lock_timeout(e) {
        Some((
            "another process held its write lock longer than abperf waits for it",
            "let that writer finish",
        ))
    } else {
        None
    }
}

/// Say how the experiment ended and how to go on: where it is stored and the commands that
/// show it, or why it stopped and how to resume it (an error stops it: returned with that hint).
fn tell_ending(
    store: &Store,
    id: i64,
    result: anyhow::Result<Ending>,
    all_failed: bool,
    starved: &[String],
) -> anyhow::Result<()> {
    let throwaway = hints::in_memory(store.path());
    let cmd = |sub: &str| hints::command(store.path(), sub);
    match result {
        Ok(Ending::Complete) if all_failed => {
            crate::error::stderr_line(&format!(
                "abperf: every run failed (see the warnings above), nothing was measured; \
                 experiment {id} marked failed"
            ));
        }
        Ok(Ending::Complete) if throwaway => {
            crate::error::stdout_line("experiment complete; not stored (--no-store)");
        }
        Ok(Ending::Complete) => {
            if !starved.is_empty() {
                crate::error::stderr_line(&format!(
                    "abperf: warning: no successful run of variant {}: nothing to compare it with",
                    starved.join(", ")
                ));
            }
            crate::error::stdout_line(&format!(
                "experiment {id} complete, stored in {}",
                store.path().display()
            ));
            crate::error::stdout_line(&format!(
                "  compare: {}\n  details: {}\n  raw:     {}",
                cmd(&format!("compare {id}")),
                cmd(&format!("show {id}")),
                cmd(&format!("export {id} --format csv"))
            ));
        }
        Ok(Ending::Decided(why)) => {
            crate::error::stdout_line(&format!("experiment {id} stopped early: {why}"));
            crate::error::stdout_line(&format!(
                "  compare: {}\n  details: {}\n  raw:     {}",
                cmd(&format!("compare {id}")),
                cmd(&format!("show {id}")),
                cmd(&format!("export {id} --format csv"))
            ));
        }
        Ok(Ending::Failed(msg)) => {
            crate::error::stderr_line(&format!("abperf: {msg}"));
            if !throwaway {
                crate::error::stderr_line(&format!(
                    "abperf: experiment {id} marked failed; its completed runs are stored"
                ));
            }
        }
        Ok(Ending::Interrupted(sig)) => {
            let how = if throwaway {
                "nothing is kept (--no-store)".to_string()
            } else {
                format!(
                    "experiment {id} stopped with every completed run stored; continue it with: \
                     {}; verdicts so far: {}",
                    cmd(&format!("run --resume {id}")),
                    cmd(&format!("compare {id}"))
                )
            };
            crate::error::stderr_line(&format!(
                "abperf: interrupted by {}; {how}",
                crate::runner::signals::name(sig)
            ));
        }
        Err(e) if throwaway => return Err(e),
        Err(e) if crate::error::is_knob_refused(&e) => {
            return Err(e.context(format!(
                "experiment {id} stopped (completed runs are stored); the kernel refused a knob \
                 value, and --resume would write it again: start a new experiment with values \
                 it accepts"
            )));
        }
        Err(e) => {
            return Err(e.context(format!(
                "experiment {id} stopped (completed runs are stored; resume with {})",
                cmd(&format!("run --resume {id}"))
            )));
        }
    }
    Ok(())
}
