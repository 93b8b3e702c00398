//! `abperf import --format perf-script`: someone else's recordings (`perf script` text, one
//! recording per file) stored as profiled runs (docs/profile.md#importing-recordings). A FILE is
//! one profiled run of `--variant` (default: the file's name without its extension); a
//! DIRECTORY is one variant (`--variant`, default: the directory's name) whose every regular
//! file, by name, is one profiled run. Every file is parsed before the store is touched, and
//! everything is written in one transaction.

use super::import::{ImportArgs, read_bounded};
use crate::error::usage;
use crate::import::perf_script;
use crate::model::profile::{ProfiledRun, TOP_STACKS, TOP_SYMBOLS};
use crate::model::{Kind, NewExperiment, Variant};
use crate::store::{ImportTarget, Store};
use std::path::{Path, PathBuf};

/// The most files one directory may hold (each is read whole).
const MAX_FILES: usize = 10_000;

fn name_of(p: &Path, stem: bool) -> String {
    let n = if stem { p.file_stem() } else { p.file_name() };
    n.map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "imported".to_string())
}

/// The files of one argument with the variant they belong to: a directory's regular files by
/// name (its name the variant), or the file itself.
fn files_of(arg: &Path, variant: &Option<String>) -> anyhow::Result<Vec<(PathBuf, String)>> {
    let shown = arg.display();
    let meta = std::fs::metadata(arg).map_err(|e| usage(format!("{shown}: cannot read: {e}")))?;
    if !meta.is_dir() {
        let v = variant.clone().unwrap_or_else(|| name_of(arg, true));
        return Ok(vec![(arg.to_path_buf(), v)]);
    }
    let v = variant.clone().unwrap_or_else(|| name_of(arg, false));
    let mut files = Vec::new();
    for entry in std::fs::read_dir(arg).map_err(|e| usage(format!("{shown}: cannot read: {e}")))? {
        let entry = entry.map_err(|e| usage(format!("{shown}: cannot read: {e}")))?;
        // Regular files only (not followed through links: a directory is read as it is).
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            files.push(entry.path());
        }
        if files.len() > MAX_FILES {
            return Err(usage(format!(
                "{shown}: more than {MAX_FILES} files; import them in parts"
            )));
        }
    }
    if files.is_empty() {
        return Err(usage(format!(
            "{shown}: a directory without a file to import"
        )));
    }
    files.sort();
    Ok(files.into_iter().map(|f| (f, v.clone())).collect())
}

/// Parse every recording: the variants in order of first appearance and one profiled run per
/// file; all must sample one event.
fn parse_all(args: &ImportArgs) -> anyhow::Result<(Vec<Variant>, Vec<ProfiledRun>)> {
    let mut variants: Vec<Variant> = Vec::new();
    let mut runs = Vec::new();
    for arg in &args.files {
        if arg.as_os_str() == "-" {
            return Err(usage(
                "--format perf-script reads files or directories, not standard input",
            ));
        }
        for (file, variant) in files_of(arg, &args.variant)? {
            let shown = file.display().to_string();
            let text = read_bounded(&file, crate::import::MAX_INPUT_BYTES)?;
            let rec = perf_script::parse(&text, &shown).map_err(|e| usage(e.to_string()))?;
            if let Some(first) = runs.first().map(|r: &ProfiledRun| &r.profile.event)
                && *first != rec.event
            {
                return Err(usage(format!(
                    "{shown}: samples {}, the files before it {first}: one event per import \
                     (shares of different events are not compared)",
                    crate::model::escape::control(&rec.event)
                )));
            }
            let pos = match variants.iter().position(|v| v.name == variant) {
                Some(p) => p,
                None => {
                    variants.push(Variant::named(&variant));
                    variants.len() - 1
                }
            };
            runs.push(ProfiledRun {
                variant: pos,
                seq: runs.len() as u32,
                // Measured elsewhere: what the recording cost is not known.
                wall_ns: 0,
                profile: rec.counts.profile(&rec.event, TOP_SYMBOLS),
                stacks: Some(rec.counts.stacks(TOP_STACKS)),
            });
        }
    }
    Ok((variants, runs))
}

pub fn run(args: ImportArgs) -> anyhow::Result<i32> {
    if args.host.is_some() || args.boot.is_some() {
        return Err(usage(
            "--host and --boot label timed runs; profiled runs (--format perf-script) have no such labels",
        ));
    }
    let labels = crate::model::label::parse_all(&args.labels).map_err(usage)?;
    let (variants, runs) = parse_all(&args)?;
    let mut store = Store::open_to_take_over(&args.db.location()?)?;
    let target = match &args.experiment {
        Some(e) => ImportTarget::Existing(super::lookup::experiment_id(&store, e)?),
        None => {
            let name = args
                .new
                .clone()
                .unwrap_or_else(|| name_of(&args.files[0], true));
            if name.trim().is_empty() {
                return Err(usage("--new: the experiment name is empty"));
            }
            let files: Vec<String> = args.files.iter().map(|p| p.display().to_string()).collect();
            ImportTarget::New(
                NewExperiment {
                    name,
                    kind: Kind::Import,
                    command_line: crate::store::redacted_args(std::env::args()),
                    design: serde_json::json!({
                        "order": "imported",
                        "format": args.format.to_string(),
                        "files": files,
                    }),
                    seed: None,
                    environment: serde_json::json!({
                        "imported": true,
                        "note": "recorded elsewhere by perf; the recording machine is not recorded",
                    }),
                },
                labels,
            )
        }
    };
    let out = store.import_profiles(&target, &variants, &runs)?;
    let per_variant: Vec<String> = variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let n = runs.iter().filter(|r| r.variant == i).count();
            format!("{}: {n}", v.name)
        })
        .collect();
    crate::error::stdout_line(&crate::model::escape::message(&format!(
        "imported {} profiled run(s) of {} ({}) into experiment {}",
        runs.len(),
        runs[0].profile.event,
        per_variant.join(", "),
        out.experiment_id
    )));
    Ok(0)
}
