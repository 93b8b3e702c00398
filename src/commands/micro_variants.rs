//! `abperf micro -k PATH=V1,V2`: the suite for several knob settings in one command, the
//! variants interleaved round by round (`micro::interleave`), each stored as a micro experiment
//! of its own linked to the others (design field `interleaved`: group, index, label, knobs,
//! seed), and the comparison of the first two printed (`compare_micro::build`: configuration by
//! configuration, round medians as the unit).
//!
//! The knobs are the run path's: locked, written, read back and verified before each variant's
//! turn (`runner::KnobGuard`), restored at the end, on errors, on panic (the guard's drop) and on
//! SIGINT/SIGTERM/SIGHUP/SIGPIPE (`runner::signals`: the next turn sees the signal, every
//! variant's benchmark stops, the knobs are put back and nothing is stored; exit 128+N).

use super::micro_args::{MicroArgs, print_failure, progress_bar, suite_name};
use super::output;
use crate::design::variants::{KnobSpec, knob_label};
use crate::error::usage;
use crate::micro::compare::Invocations;
use crate::micro::record::Record;
use crate::micro::{self, Options, SuiteReport};
use crate::model::{Dataset, MicroFinding};
use crate::report::Format;
use crate::runner::knob_lock::LockOptions;
use crate::runner::{KnobGuard, preflight, signals};
use crate::store::Store;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// One variant: its label and the knob values it sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub label: String,
    pub knobs: Vec<(String, String)>,
}

/// Every combination of the knobs' values (the first knob varying slowest), labelled
/// `LABEL=VALUE ...`; a label given twice (the same value twice: an A/A run) gets ` #N`.
pub fn plans(specs: &[KnobSpec]) -> anyhow::Result<Vec<Plan>> {
    let mut seen = std::collections::BTreeSet::new();
    for k in specs {
        if !seen.insert(&k.path) {
            return Err(usage(format!("-k/--knob: knob '{}' given twice", k.path)));
        }
    }
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for k in specs {
        combos = combos
            .into_iter()
            .flat_map(|prefix| {
                k.values.iter().map(move |v| {
                    let mut p = prefix.clone();
                    p.push((k.path.clone(), v.clone()));
                    p
                })
            })
            .collect();
    }
    let labels: Vec<String> = combos
        .iter()
        .map(|c| {
            c.iter()
                .map(|(p, v)| format!("{}={v}", knob_label(p)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    Ok(combos
        .into_iter()
        .enumerate()
        .map(|(i, knobs)| {
            let repeats = labels.iter().filter(|l| **l == labels[i]).count();
            let label = if repeats > 1 {
                let nth = labels[..=i].iter().filter(|l| **l == labels[i]).count();
                format!("{} #{nth}", labels[i])
            } else {
                labels[i].clone()
            };
            Plan { label, knobs }
        })
        .collect())
}

pub(super) fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Run the suite for every knob variant, interleaved; store and print.
pub fn run(
    args: &MicroArgs,
    benches: &[&'static str],
    opts: &Options,
    specs: &[KnobSpec],
    store: Option<&mut Store>,
) -> anyhow::Result<i32> {
    preflight::check_knob_values(specs)?;
    let plans = checked_plans(args, specs)?;
    signals::install()?;
    let paths: Vec<String> = specs.iter().map(|k| k.path.clone()).collect();
    let guard = KnobGuard::prepare_with(
        &paths,
        &LockOptions {
            wait: args.wait,
            purpose: "micro".into(),
        },
    )?;
    let guard = Mutex::new(guard);
    let seed = args.seed.unwrap_or_else(now_ns);
    // Sampled over the benchmarks, as for a single suite (see commands/micro.rs).
    let sampling = crate::doctor::Sampling::start();
    let invocations = super::micro_invocations::checked(args)?;
    let result = measure(benches, opts, &plans, seed, &guard, invocations);
    // The knobs go back first, whatever happened.
    let restore_errors = guard.lock().unwrap_or_else(|e| e.into_inner()).restore();
    for e in &restore_errors {
        crate::error::stderr_line(&format!("abperf: error: {e}"));
    }
    if let Some(sig) = signals::received() {
        crate::error::stderr_line(&format!(
            "abperf: interrupted by {}: knobs restored{}; nothing stored",
            signals::name(sig),
            if restore_errors.is_empty() {
                ""
            } else {
                " (except the above)"
            }
        ));
        return Ok(128 + sig);
    }
    let reports = result?;
    let environment = crate::doctor::merged(
        crate::doctor::environment_unsampled(),
        &sampling.finish("during the benchmarks"),
    );
    let records = records(args, benches, &plans, &reports, seed, environment);
    let labels: Vec<String> = plans.iter().map(|p| p.label.clone()).collect();
    let data = match store {
        Some(s) => store_and_read_back(s, &records, &labels, args)?,
        None => records.iter().map(|r| r.dataset()).collect(),
    };
    print_comparisons(args, &records, &data, &labels)?;
    let failures: Vec<(&str, &micro::Skip)> = reports
        .iter()
        .zip(&labels)
        .flat_map(|(r, l)| r.failures.iter().map(move |f| (l.as_str(), f)))
        .collect();
    for (l, f) in &failures {
        print_failure(f, Some(l));
    }
    if !failures.is_empty() || !restore_errors.is_empty() {
        return Ok(1);
    }
    Ok(0)
}

/// The variants of the -k knobs, refused when there is only one, or more than two with
/// --format json (which prints one comparison).
fn checked_plans(args: &MicroArgs, specs: &[KnobSpec]) -> anyhow::Result<Vec<Plan>> {
    let plans = plans(specs)?;
    if plans.len() < 2 {
        return Err(usage(format!(
            "-k {}: one variant; give two values or more (the same value twice for an A/A run)",
            args.knobs.join(" -k ")
        )));
    }
    if plans.len() > 2 && matches!(args.format, Format::Json) {
        return Err(usage(format!(
            "--format json: {} variants; the printed comparison is of two (all are stored: \
             compare them pairwise with `abperf compare A B`)",
            plans.len()
        )));
    }
    Ok(plans)
}

/// The suite for every plan, interleaved round by round in this process (or, with
/// `invocations` > 1, invocation by invocation in child processes), each variant's knobs
/// applied through `guard` before its turn (a received signal stops it); with a progress bar.
fn measure(
    benches: &[&'static str],
    opts: &Options,
    plans: &[Plan],
    seed: u64,
    guard: &Mutex<KnobGuard>,
    invocations: usize,
) -> anyhow::Result<Vec<SuiteReport>> {
    let switch = |v: usize| -> anyhow::Result<()> {
        if let Some(sig) = signals::received() {
            anyhow::bail!("interrupted by {}", signals::name(sig));
        }
        let mut g = guard.lock().unwrap_or_else(|e| e.into_inner());
        for (path, value) in &plans[v].knobs {
            g.apply(path, value)?;
        }
        Ok(())
    };
    if invocations > 1 {
        return super::micro_invocations::measure(
            benches,
            opts,
            invocations,
            plans.len(),
            seed,
            &switch,
        );
    }
    let bar = progress_bar(
        benches.len(),
        &format!(
            "micro x{} variants [{{pos}}/{{len}}] {{msg}} {{elapsed}}",
            plans.len()
        ),
    );
    let result =
        micro::interleave::run_interleaved(benches, opts, plans.len(), seed, &switch, |b| {
            bar.set_message(b.to_string());
            bar.inc(1);
        });
    bar.finish_and_clear();
    result
}

/// One micro experiment per variant, linked to the others by the design field `interleaved`.
pub(super) fn records(
    args: &MicroArgs,
    benches: &[&'static str],
    plans: &[Plan],
    reports: &[SuiteReport],
    seed: u64,
    environment: serde_json::Value,
) -> Vec<Record> {
    let argv: Vec<String> = std::env::args().collect();
    let base = suite_name(args, benches);
    let group = format!("{seed:016x}-{:x}", now_ns());
    let labels: Vec<String> = plans.iter().map(|p| p.label.clone()).collect();
    let mut records = Vec::new();
    for (v, (rep, plan)) in reports.iter().zip(plans).enumerate() {
        let mut rec = micro::record::record(
            rep,
            &format!("{base} [{}]", plan.label),
            &argv,
            environment.clone(),
        );
        let knobs: BTreeMap<&str, &str> = plan
            .knobs
            .iter()
            .map(|(p, v)| (p.as_str(), v.as_str()))
            .collect();
        rec.experiment.design["interleaved"] = serde_json::json!({
            "group": group,
            "index": v,
            "label": plan.label,
            "labels": labels,
            "knobs": knobs,
            "seed": seed,
            "order": if micro::record::invocations(rep) > 1 {
                "invocation by invocation, ABBA (seeded)"
            } else {
                "round by round, ABBA (seeded)"
            },
        });
        records.push(rec);
    }
    records
}

/// Store every record, say where, and read them back: the comparison printed is the one
/// `abperf compare` gives.
pub(super) fn store_and_read_back(
    s: &mut Store,
    records: &[Record],
    labels: &[String],
    args: &MicroArgs,
) -> anyhow::Result<Vec<Dataset>> {
    let mut ids = Vec::new();
    for rec in records {
        ids.push(super::micro_args::save(rec, s, args)?);
    }
    crate::error::stderr_line(&format!(
        "abperf: stored as experiments {} in {} (variants {}, measured interleaved); \
         compare them again with `abperf compare {}{}`",
        ids.iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        s.path().display(),
        labels.join(" | "),
        ids[0],
        if ids.len() > 2 {
            format!(" {}", ids[1])
        } else {
            String::new()
        }
    ));
    ids.iter().map(|&id| s.load(id)).collect()
}

/// The comparison of the first variant with every other, on stdout.
pub(super) fn print_comparisons(
    args: &MicroArgs,
    records: &[Record],
    data: &[Dataset],
    labels: &[String],
) -> anyhow::Result<()> {
    let findings: Vec<&[MicroFinding]> = records.iter().map(|r| r.findings.as_slice()).collect();
    let inv: Vec<Invocations> = records.iter().map(|r| Invocations::of(&r.rounds)).collect();
    let mut out = String::new();
    for v in 1..records.len() {
        let r = super::compare_micro::build(
            [&data[0], &data[v]],
            [labels[0].clone(), labels[v].clone()],
            [findings[0], findings[v]],
            [&inv[0], &inv[v]],
            None,
            &output::AnalysisArgs::default(),
        )?;
        out += &args.format.render(&r)?;
    }
    output::write(&out, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(p: &str, v: &[&str]) -> KnobSpec {
        KnobSpec {
            path: p.into(),
            values: v.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn plans_combine_and_number_repeats() {
        let p = plans(&[spec(
            "/sys/kernel/mm/transparent_hugepage/enabled",
            &["always", "never"],
        )])
        .unwrap();
        let l: Vec<&str> = p.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(
            l,
            [
                "transparent_hugepage/enabled=always",
                "transparent_hugepage/enabled=never"
            ]
        );
        let aa = plans(&[spec("/proc/sys/kernel/x", &["1", "1"])]).unwrap();
        assert_eq!(aa[0].label, "kernel/x=1 #1");
        assert_eq!(aa[1].label, "kernel/x=1 #2");
        let two = plans(&[spec("/a/b", &["1", "2"]), spec("/c/d", &["x", "y"])]).unwrap();
        assert_eq!(two.len(), 4);
        assert_eq!(two[1].label, "a/b=1 c/d=y");
        let e = plans(&[spec("/a/b", &["1"]), spec("/a/b", &["2"])]).unwrap_err();
        assert!(format!("{e}").contains("given twice"), "{e}");
    }
}
