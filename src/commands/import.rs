//! `abperf import`: store `/usr/bin/time`, `perf stat` or hyperfine output, or a table of runs
//! (CSV or JSONL), as runs.
//!
//! Every file is parsed before the store is touched, and everything is written in one
//! transaction: a malformed line anywhere means nothing is stored.

use crate::error::usage;
use crate::import::{self, Format, Imported};
use crate::model::{Kind, NewExperiment};
use crate::store::{ImportOutcome, ImportTarget, Store};
use anyhow::Context;
use std::path::{Path, PathBuf};

/// Import measurements made by other tools.
#[derive(Debug, clap::Args)]
#[command(after_help = "Formats:
  time       GNU /usr/bin/time: default two-line output, -v output, or one run per line with the
             variant label first (\"n 879.25 77.50 4:15.52 374%CPU (0avgtext+...) ...\"); mail
             quoting ('> ') is stripped
  perf-stat  perf stat human output (each 'Performance counter stats' block is one run; with -r N
             it is the mean of N runs and the '+-' column is kept as EVENT.stderr_pct) or -x, CSV
  hyperfine  hyperfine --export-json: one variant per command, one run per entry of \"times\"
  csv        a table, one run per row: variant, metric columns \"NAME [UNIT]\", optional seq, block,
             invocation, boot, host, param.NAME, warmup, status, started_ns, ended_ns
             (docs/import.md#tables; what `abperf export --format csv` writes)
  jsonl      the same table as one JSON object per line
  perf-script  `perf script` text of perf record -g recordings, stored as profiled runs (not
             timed runs): a FILE is one run of --variant (default: its name without extension),
             a DIRECTORY one variant (default: its name) with one run per file
             (docs/profile.md#importing-recordings)

Runs without a label go to --variant, else to a variant named after the file.")]
pub struct ImportArgs {
    /// Add the runs to this existing experiment (number or 'latest'); variants are matched by name
    #[arg(long, value_name = "ID", conflicts_with = "new")]
    pub experiment: Option<String>,
    /// Create a new experiment with this name (default: a new one named after the first file)
    #[arg(long, value_name = "NAME")]
    pub new: Option<String>,
    /// Put every run of a file into this variant (for files that hold one variant)
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// Label every run of these files that names no host with NAME: measurements from several
    /// machines, imported one machine at a time into one experiment (--experiment), are then
    /// judged with the machines as the top replication level (docs/statistics.md)
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Label every run of these files that names no boot with NAME (one file per boot, as
    /// measured between reboots): the boots become a replication level
    #[arg(long, value_name = "NAME")]
    pub boot: Option<String>,
    /// Label the new experiment (repeatable): what `abperf history` orders and names its points
    /// by, e.g. --label commit=3f2a9c1 --label date=2026-11-27 (a new experiment only)
    #[arg(
        long = "label",
        value_name = "KEY=VALUE",
        conflicts_with = "experiment"
    )]
    pub labels: Vec<String>,
    /// Input format
    #[arg(long, value_enum)]
    pub format: Format,
    /// Files to import ('-' for standard input)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub db: crate::commands::DbArgs,
}

fn file_stem(p: &Path) -> String {
    if p.as_os_str() == "-" {
        return "stdin".to_string();
    }
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "imported".to_string())
}

/// Read at most `limit` bytes of `p` ('-': standard input) as UTF-8 text; a larger input is an
/// error naming it (nothing is read past the limit, so a huge file or endless stream costs
/// nothing).
pub fn read_bounded(p: &Path, limit: usize) -> anyhow::Result<String> {
    use std::io::Read;
    let shown = if p.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        p.display().to_string()
    };
    let mut bytes = Vec::new();
    let take = limit as u64 + 1;
    let read = if p.as_os_str() == "-" {
        std::io::stdin().lock().take(take).read_to_end(&mut bytes)
    } else {
        let f = std::fs::File::open(p).map_err(|e| usage(format!("{shown}: cannot read: {e}")))?;
        if !f.metadata().is_ok_and(|m| m.is_file()) {
            return Err(usage(format!("{shown}: not a regular file")));
        }
        f.take(take).read_to_end(&mut bytes)
    };
    read.map_err(|e| usage(format!("{shown}: cannot read: {e}")))?;
    if bytes.len() > limit {
        return Err(usage(format!(
            "{shown}: larger than {} MiB, the most abperf reads from one input file",
            limit >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        let upto = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = upto.iter().filter(|&&b| b == b'\n').count() + 1;
        usage(format!("{shown}:{line}: not UTF-8 text"))
    })
}

fn read_input(p: &Path) -> anyhow::Result<String> {
    read_bounded(p, import::MAX_INPUT_BYTES)
}

/// `--host`/`--boot` checked: a name with something in it.
fn label_flag(flag: &str, v: &Option<String>) -> anyhow::Result<Option<String>> {
    match v {
        Some(s) if s.trim().is_empty() => Err(usage(format!(
            "{flag}: expected a name for the runs' {}, got an empty one",
            &flag[2..]
        ))),
        _ => Ok(v.clone()),
    }
}

/// `--host` and `--boot` given to every run of `imp` that names none of its own.
fn label_runs(imp: &mut Imported, host: &Option<String>, boot: &Option<String>) {
    for r in &mut imp.runs {
        if r.labels.host.is_none() {
            r.labels.host = host.clone();
        }
        if r.labels.boot.is_none() {
            r.labels.boot = boot.clone();
        }
    }
}

/// Parse every file; apply `--variant`, `--host` and `--boot`.
pub fn parse_files(args: &ImportArgs) -> anyhow::Result<Vec<Imported>> {
    let host = label_flag("--host", &args.host)?;
    let boot = label_flag("--boot", &args.boot)?;
    let mut all = Vec::new();
    for p in &args.files {
        let text = read_input(p)?;
        let shown = if p.as_os_str() == "-" {
            "<stdin>".to_string()
        } else {
            p.display().to_string()
        };
        let default = args.variant.clone().unwrap_or_else(|| file_stem(p));
        let mut imp = import::parse(args.format, &shown, &text, &default)
            .map_err(|e| usage(e.to_string()))?;
        if let Some(name) = &args.variant {
            if imp.variants.len() > 1 {
                let names: Vec<&str> = imp.variants.iter().map(|v| v.name.as_str()).collect();
                return Err(usage(format!(
                    "{shown} holds {} variants ({}); --variant applies only to a file with one",
                    names.len(),
                    names.join(", ")
                )));
            }
            imp.variants[0].name = name.clone();
        }
        label_runs(&mut imp, &host, &boot);
        all.push(imp);
    }
    Ok(all)
}

/// Store the import: into an SQLite store in one transaction; on a PostgreSQL store, a new
/// experiment built in memory and written there whole in one transaction
/// (`store::import_to_server`), runs added to an experiment there through a working copy of it,
/// in one transaction on the server. Returns the target (an existing experiment resolved) and
/// what was stored, under the store's ids.
fn store_import(
    args: &ImportArgs,
    target: Option<ImportTarget>,
    variants: &[crate::model::Variant],
    runs: &[crate::model::Run],
) -> anyhow::Result<(ImportTarget, ImportOutcome)> {
    let at = args.db.location()?;
    if let Some(ImportTarget::New(exp, labels)) = &target {
        let out = crate::store::import_new(&at, exp, labels, variants, runs)?;
        return Ok((ImportTarget::New(exp.clone(), labels.clone()), out));
    }
    let mut store = Store::open_to_take_over(&at)?;
    let target = match target {
        Some(t) => t,
        None => ImportTarget::Existing(super::lookup::experiment_id(
            &store,
            args.experiment.as_deref().unwrap_or("latest"),
        )?),
    };
    let out = store
        .import_runs(&target, variants, runs)
        .context("import not stored")?;
    Ok((target, out))
}

/// Runs added to an experiment that leave some of its runs naming a host (boot, invocation)
/// and others none: a warning now, as `compare` gives one beside its verdicts.
fn warn_mixed_labels(args: &ImportArgs, id: i64) -> anyhow::Result<()> {
    let store = Store::open_to_read(&args.db.location()?)?;
    let data = store.load(id)?;
    for (level, named, unnamed) in data.mixed_labels() {
        let name = level.name();
        crate::error::stderr_line(&format!(
            "abperf: warning: experiment {id} now has {named} counted runs that name a {name} and \
             {unnamed} that name none: compare either pools them all as independent runs or, with \
             two or more {} named, judges the named runs alone, and says which (label the others \
             by importing them again with --{name})",
            level.plural()
        ));
    }
    Ok(())
}

pub fn run(args: ImportArgs) -> anyhow::Result<i32> {
    let labels = crate::model::label::parse_all(&args.labels).map_err(usage)?;
    let imports = parse_files(&args)?;
    let (variants, runs) = import::merge(&imports);
    let target = match &args.experiment {
        Some(_) => None,
        None => {
            let name = args
                .new
                .clone()
                .unwrap_or_else(|| file_stem(&args.files[0]));
            if name.trim().is_empty() {
                return Err(usage("--new: the experiment name is empty"));
            }
            let files: Vec<String> = args.files.iter().map(|p| p.display().to_string()).collect();
            Some(ImportTarget::New(
                NewExperiment {
                    name,
                    kind: Kind::Import,
                    command_line: crate::store::redacted_args(std::env::args()),
                    design: serde_json::json!({
                        // A table with `seq` on every row gives the run order (drift tests apply).
                        "order": if imports.len() == 1 && imports[0].run_order { "seq" } else { "imported" },
                        "format": args.format.to_string(),
                        "files": files,
                    }),
                    seed: None,
                    environment: serde_json::json!({
                        "imported": true,
                        "note": "measured elsewhere by another tool; the measuring machine is not recorded",
                    }),
                },
                labels,
            ))
        }
    };
    let (target, out) = store_import(&args, target, &variants, &runs)?;
    if matches!(target, ImportTarget::Existing(_)) {
        warn_mixed_labels(&args, out.experiment_id)?;
    }
    for imp in &imports {
        for note in &imp.notes {
            crate::error::stderr_line(&format!("abperf: note: {note}"));
        }
    }
    let summaries = runs
        .iter()
        .filter(|r| r.source.as_ref().is_some_and(|s| s.summary))
        .count();
    if summaries > 0 {
        crate::error::stderr_line(&format!(
            "abperf: note: {summaries} imported row(s) are means over repeats (perf stat -r), not single runs; \
             tests count each as one observation"
        ));
    }
    let per_variant: Vec<String> = variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            format!(
                "{}: {}",
                v.name,
                runs.iter().filter(|r| r.variant == i).count()
            )
        })
        .collect();
    // Variant names come from the imported files: escaped like every message (a name with
    // terminal escapes cannot drive the terminal).
    crate::error::stdout_line(&crate::model::escape::message(&format!(
        "imported {} run(s) ({}) from {} file(s) into experiment {}{}",
        runs.len(),
        per_variant.join(", "),
        imports.len(),
        out.experiment_id,
        if out.new_variants.is_empty() || matches!(target, ImportTarget::New(..)) {
            String::new()
        } else {
            format!(", new variant(s): {}", out.new_variants.join(", "))
        }
    )));
    Ok(0)
}
