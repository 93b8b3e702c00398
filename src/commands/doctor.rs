//! `abperf doctor`: check this machine for noise sources; `--fix` applies the safe settings and
//! records every original in the store; `--restore` puts back exactly what was recorded.

use crate::commands::DbArgs;
use crate::doctor::{self, Check, Status, sys::Sys};
use crate::model::Liveness;
use crate::model::tune::SOURCE_FIX;
use crate::report::plain::PlainFormat as Format;
use crate::runner::{KnobGuard, knob_lock, knobs};
use crate::store::Store;
use std::time::Duration;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Status: ok, warn (adds noise or bias), bad (small effects \
    unmeasurable until fixed), info (record it), not available (this kernel or machine does \
    not have it). Exit code 0 whatever the findings."
)]
pub struct DoctorArgs {
    /// Output format of the checks
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Apply the safe recommended settings (governor performance, boost off, THP always ->
    /// madvise, NUMA balancing off, NMI watchdog off, ASLR full, perf_event_paranoid 1),
    /// recording every original in the store; remove tracefs instances, mounts and markers
    /// left by abperf processes that were killed (kill -9)
    #[arg(long, conflicts_with = "restore")]
    pub fix: bool,
    /// Put back exactly what --fix (or a run --tune killed by SIGKILL) recorded, and verify
    #[arg(long)]
    pub restore: bool,
    /// Seconds over which other processes' CPU use is sampled
    #[arg(long, default_value_t = 1.0, value_name = "S")]
    pub sample: f64,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(args: DoctorArgs) -> anyhow::Result<i32> {
    if args.fix {
        return fix(&args.db);
    }
    if args.restore {
        return restore(&args.db);
    }
    if !(args.sample > 0.0 && args.sample <= 60.0) {
        return Err(crate::error::usage(format!(
            "--sample {}: expected seconds between 0 and 60",
            args.sample
        )));
    }
    let sys = Sys::real();
    let mut checks = doctor::run_all(&sys, Duration::from_secs_f64(args.sample));
    checks.push(kvm_check());
    let kexec = crate::boot_loop::machine::find_kexec().ok();
    checks.push(crate::boot_loop::readiness::check(&sys, kexec.as_deref()));
    let would = doctor::recommended(&sys);
    let result = crate::report::doctor::Checks {
        checks: &checks,
        would_change: &would,
    };
    print!("{}", args.format.render(&result)?);
    // Knobs left changed by an abperf that died (kill -9): put back from their claims.
    settle_claims();
    // Settings abperf changed and has not put back: say so (only if a store exists already).
    let path = args.db.location()?;
    if path.is_existing_file() {
        match Store::open_to_write(&path).and_then(|s| dead_experiment_knobs(&s)) {
            Ok(left) if !left.is_empty() => {
                crate::error::stderr_line(&format!(
                    "abperf: {} knob(s) left changed by experiments whose abperf died (store {}):",
                    left.len(),
                    path
                ));
                for k in &left {
                    crate::error::stderr_line(&format!(
                        "  {} = '{}' (was '{}', experiment {}, {})",
                        k.path, k.now, k.original, k.experiment, k.why
                    ));
                }
                crate::error::stderr_line(
                    "  this machine has no record of their originals (a store's is not trusted): \
                     abperf doctor --restore says how to put them back by hand",
                );
            }
            Ok(_) => {}
            Err(e) => crate::error::stderr_line(&format!(
                "abperf: warning: cannot look for knobs left changed: {e:#}"
            )),
        }
        let out = Store::open_to_write(&path)
            .and_then(|s| s.tune_outstanding(None, None))
            .unwrap_or_else(|e| {
                crate::error::stderr_line(&format!(
                    "abperf: warning: cannot look for unrestored settings: {e:#}"
                ));
                Vec::new()
            });
        if !out.is_empty() {
            crate::error::stderr_line(&format!(
                "abperf: {} setting(s) changed by abperf are not restored yet (store {}):",
                out.len(),
                path
            ));
            for r in &out {
                crate::error::stderr_line(&format!(
                    "  {} = '{}' (was '{}', by {} at {})",
                    r.path, r.value, r.original, r.source, r.changed
                ));
            }
            crate::error::stderr_line("  put them back with: abperf doctor --restore");
        }
    }
    Ok(0)
}

fn fix(db: &DbArgs) -> anyhow::Result<i32> {
    // what killed abperf processes left in tracefs (instances still tracing, mounts, markers)
    for m in crate::trace::instance::clean_leftovers() {
        println!("{m}");
    }
    let settings = doctor::recommended(&Sys::real());
    if settings.is_empty() {
        println!("nothing to change: every setting abperf tunes is already as recommended");
        return Ok(0);
    }
    let mut store = Store::open_to_write(&db.location()?)?;
    crate::runner::signals::install()?;
    let session = store.tune_session(SOURCE_FIX, None)?;
    let mut failed = 0;
    for s in &settings {
        if crate::runner::signals::received().is_some() {
            crate::error::stderr_line("abperf: interrupted; what was changed so far is recorded");
            return Ok(1);
        }
        // One guard per file: a refused write restores that file alone (on drop).
        let one = std::slice::from_ref(&s.path);
        let mut guard = match KnobGuard::prepare(one) {
            Ok(g) => g,
            Err(e) => {
                crate::error::stderr_line(&format!("abperf: error: {e:#}"));
                failed += 1;
                continue;
            }
        };
        let original = guard.originals()[&s.path].clone();
        let row = store.tune_record(session, &s.path, &original, &s.value)?;
        match guard.apply(&s.path, &s.value) {
            Ok(()) => {
                guard.keep_current_on_record()?;
                store.tune_set_state(row, "applied")?;
                println!("changed {}: '{original}' -> '{}'", s.path, s.value);
            }
            Err(e) => {
                drop(guard);
                store.tune_set_state(row, "failed")?;
                crate::error::stderr_line(&format!("abperf: error: {e:#}"));
                failed += 1;
            }
        }
    }
    println!(
        "originals recorded in {}; put them back with: abperf doctor --restore",
        store.path().display()
    );
    Ok(if failed > 0 { 1 } else { 0 })
}

/// Restore what claims beside the knob locks say dead holders left changed; returns (restored,
/// failed) counts. Each restore is said on stderr.
fn settle_claims() -> (usize, usize) {
    match knob_lock::settle_leftovers() {
        Ok(done) => {
            let mut counts = (0, 0);
            for d in done {
                match d {
                    Ok(m) => {
                        crate::error::stderr_line(&format!("abperf: {m}"));
                        counts.0 += 1;
                    }
                    Err(e) => {
                        crate::error::stderr_line(&format!("abperf: error: {e}"));
                        counts.1 += 1;
                    }
                }
            }
            counts
        }
        Err(e) => {
            crate::error::stderr_line(&format!(
                "abperf: warning: cannot look at the knob locks: {e:#}"
            ));
            (0, 0)
        }
    }
}

/// A knob of a `running` experiment whose abperf died, holding something else than its original.
struct DeadKnob {
    experiment: i64,
    /// Later dead experiments that left the same knob changed (the oldest original wins).
    also: Vec<i64>,
    path: String,
    original: String,
    now: String,
    why: String,
}

/// The knobs that experiments stored as running, whose owner is dead, left changed.
fn dead_experiment_knobs(store: &Store) -> anyhow::Result<Vec<DeadKnob>> {
    let owners = store.owners()?;
    let mut out: Vec<DeadKnob> = Vec::new();
    for e in store.list()? {
        if e.status != crate::model::Status::Running {
            continue;
        }
        let Some(owner) = owners.get(&e.id) else {
            continue;
        };
        let Liveness::Dead(why) = crate::measure::process::liveness(owner) else {
            continue;
        };
        let mut seen = std::collections::BTreeSet::new();
        for v in store.variants(e.id)? {
            for k in v.knobs {
                let Some(original) = k.original else { continue };
                if !seen.insert(k.path.clone()) {
                    continue;
                }
                if let Some(first) = out.iter_mut().find(|d| d.path == k.path) {
                    first.also.push(e.id);
                    continue;
                }
                if let Ok(now) = knobs::read_value(&k.path)
                    && now != original
                {
                    out.push(DeadKnob {
                        experiment: e.id,
                        also: Vec::new(),
                        path: k.path,
                        original,
                        now,
                        why: why.clone(),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// `doctor --restore`: settle the claims dead holders left (their originals, from this
/// machine), mark the experiments whose abperf died interrupted, and put back each setting
/// `doctor --fix` (or a killed `run --tune`) left outstanding, from its record on this machine.
/// A store's "original" is never written: a row is not trusted (docs/security.md).
fn restore(db: &DbArgs) -> anyhow::Result<i32> {
    let mut store = Store::open_to_write(&db.location()?)?;
    let (done, mut failed) = settle_claims();
    let dead = dead_experiment_knobs(&store)?;
    let mut experiments = std::collections::BTreeSet::new();
    for k in &dead {
        crate::error::stderr_line(&format!(
            "abperf: warning: knob {} holds '{}', left by experiment {} whose abperf died; this \
             machine has no record of its original (the store says '{}', which is not trusted): \
             not restored; if that is right: echo '{}' > {}",
            k.path, k.now, k.experiment, k.original, k.original, k.path
        ));
        failed += 1;
        experiments.insert(k.experiment);
        experiments.extend(&k.also);
    }
    for id in experiments {
        store.set_status(id, crate::model::Status::Interrupted)?;
    }
    let rows = store.tune_outstanding(None, None)?;
    if rows.is_empty() && done == 0 && failed == 0 {
        println!("nothing to restore: every setting abperf changed has been put back");
        return Ok(0);
    }
    // Newest first: a file changed twice ends with its oldest original.
    for r in rows {
        match restore_tune_row(&r) {
            Ok(Some(m)) => {
                store.tune_set_state(r.id, "restored")?;
                println!("{m}");
            }
            Ok(None) => store.tune_set_state(r.id, "restored")?,
            Err(e) => {
                crate::error::stderr_line(&format!("abperf: error: {e:#}"));
                failed += 1;
            }
        }
    }
    Ok(if failed > 0 { 1 } else { 0 })
}

/// Put back one outstanding tune setting from this machine's record of it (`doctor --fix`'s
/// `<key>.fix` beside the knob locks): `Ok(None)` when the knob holds its original already,
/// `Ok(Some(message))` once restored and verified, `Err` naming both values when it cannot be.
fn restore_tune_row(r: &crate::model::tune::TuneRecord) -> anyhow::Result<Option<String>> {
    let now = knobs::read_value(&r.path)?;
    let Some((rec, file)) = knob_lock::fix_record(&r.path)? else {
        if now == r.original {
            return Ok(None);
        }
        anyhow::bail!(
            "{} holds '{now}'; this machine has no record of what it held before (the store says \
             '{}', which is not trusted): not restored; if that is right: echo '{}' > {}",
            r.path,
            r.original,
            r.original,
            r.path
        );
    };
    // Locked while it is written: no experiment changes it meanwhile.
    let mut guard = KnobGuard::prepare(std::slice::from_ref(&r.path))?;
    guard.keep_current();
    let result = if now == rec.original {
        Ok(None)
    } else if !rec.written.contains(&now) {
        Err(anyhow::anyhow!(
            "{} holds '{now}', not the '{}' abperf wrote: someone set it since; left as it is, \
             not restored to the original '{}' (the record is dropped)",
            r.path,
            rec.written.join("', '"),
            rec.original
        ))
    } else {
        let raw = rec.original_raw.as_deref().unwrap_or(&rec.original);
        knobs::restore_verified(&r.path, &rec.original, raw)?;
        Ok(Some(format!(
            "restored {}: '{}' (verified)",
            r.path, rec.original
        )))
    };
    let _ = std::fs::remove_file(&file);
    result
}

/// KVM for kernel variants (`run --kernel`): the VM engine's probe (the KVM ioctls, then a short
/// boot of a cached kernel under KVM), answered from the last probe of this host boot and QEMU
/// when there is one.
fn kvm_check() -> Check {
    let p = crate::vm::kvm_usable_cached(None, Duration::from_secs(30));
    let status = match p.verdict {
        crate::vm::Verdict::Usable => Status::Ok,
        crate::vm::Verdict::Unusable => Status::Warn,
        crate::vm::Verdict::Untested => Status::Info,
    };
    Check {
        name: "kvm",
        status,
        finding: p.finding,
        why: p.why,
        fix: p.fix,
    }
}
