//! Built-in workloads as variants of `abperf run`.
//!
//! A COMMAND that starts with `@` names a built-in workload (`abperf workload list`):
//!
//! - `@NAME:K=V,K=V` runs `abperf workload exec NAME K=V K=V seed=N` through abperf's own binary
//!   (argv, never a shell). `{P}` placeholders are filled from `-L P=...` lists as in any
//!   command: `@page-aging:pattern={pattern},op={op} -L pattern=seq,random,hot -L op=read,write`.
//! - `@NAME` alone (or with some `K=V`) takes every `-L` list named after one of NAME's
//!   parameters that the command does not use as a placeholder: `@page-aging -L
//!   pattern=seq,random,hot -L op=read,write` is the same six variants ([`expand`]). A
//!   parameter fixed in the command and listed by `-L` as well is a usage error.
//!
//! Every variant's parameters are checked before anything runs ([`check`]: usage error naming
//! the variant, the parameter and what it accepts). Per run:
//!
//! - the workload's untimed prepare step (`abperf workload prepare NAME K=V ...`) runs after
//!   the user's `--pre` and before the noise controls (kbuild: configure, `make clean`, `make
//!   prepare`; page-aging: data set, left-over cgroups); workloads without one skip it;
//! - `seed=` is the experiment's seed plus the run's sequence number (wrapping), unless the
//!   command fixes `seed` (or `-L seed=...` does): deterministic given the experiment's seed, a
//!   different access/operation sequence for every run, and the same in the VM guest (seq is
//!   global);
//! - `$ABPERF_METRICS_FILE` names a fresh file (removed before the run, see [`MetricsFile`]);
//!   after a normal exit its metric lines are read ([`WorkloadCommand::collect`]) and stored with
//!   the run, each with its unit and declared direction. A missing, empty or malformed file, or a
//!   metric the workload does not declare, makes the run a failed one with a message saying so;
//! - after a run that did not exit normally (killed by abperf's signal watcher, timed out,
//!   failed), [`WorkloadCommand::clean_up`] removes what a killed run leaves (page-aging's
//!   cgroup).
//!
//! The workload's name, version and resolved parameters are stored with the variant
//! ([`WorkloadCommand::reference`]); every run of a variant uses that version, because
//! `run --resume` refuses an abperf whose workload has another ([`check_versions`]).

use super::command::Prepared;
use crate::design::ParamList;
use crate::design::placeholders::placeholders;
use abperf_model::error::usage;
use abperf_model::{Metric, Variant, WorkloadRef};
use abperf_workload::{self as workload, Workload, metrics as wm, params::Params};
use anyhow::{Context, Result, bail};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The first character of a workload command.
pub const SIGIL: char = '@';

/// Whether `command` names a built-in workload.
pub fn is_workload(command: &str) -> bool {
    command.starts_with(SIGIL)
}

/// `@NAME[:K=V,...]` split into the name and its words (placeholders left as they are).
fn split(command: &str) -> Result<(&str, Vec<String>)> {
    let body = command.strip_prefix(SIGIL).unwrap_or(command);
    if body.chars().any(char::is_whitespace) {
        return Err(usage(format!(
            "workload command '{command}': no spaces; write @NAME:K=V,K=V (e.g. \
             @page-aging:pattern=random,op=read)"
        )));
    }
    let (name, rest) = match body.split_once(':') {
        Some((n, r)) => (n, Some(r)),
        None => (body, None),
    };
    if name.is_empty() {
        return Err(usage(format!(
            "workload command '{command}': expected @NAME or @NAME:K=V,K=V (workloads: {})",
            names()
        )));
    }
    let words: Vec<String> = match rest {
        None => Vec::new(),
        Some(r) => r.split(',').map(str::to_string).collect(),
    };
    if words.iter().any(|w| w.is_empty()) {
        return Err(usage(format!(
            "workload command '{command}': empty parameter (expected @{name}:K=V,K=V)"
        )));
    }
    Ok((name, words))
}

fn names() -> String {
    workload::all()
        .iter()
        .map(|w| w.name)
        .collect::<Vec<_>>()
        .join(", ")
}

fn find(command: &str, name: &str) -> Result<&'static Workload> {
    workload::find(name).with_context(|| format!("workload command '{command}'"))
}

fn param_names(w: &Workload) -> String {
    w.params
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The commands with `-L` lists passed to the workloads that take them: to `@NAME[:...]`, every
/// list named after a parameter of NAME that the command neither uses as `{P}` nor fixes is
/// appended as `P={P}`. A list that is no workload's parameter and appears nowhere as `{P}` (in
/// the commands or `others`: --pre, --post, --setup, --cleanup) is a usage error naming the
/// workloads' parameters.
pub fn expand(commands: &[String], lists: &[ParamList], others: &[&str]) -> Result<Vec<String>> {
    let mut out = Vec::with_capacity(commands.len());
    let mut taken: BTreeSet<&str> = BTreeSet::new();
    let mut workloads: Vec<&'static Workload> = Vec::new();
    for c in commands {
        if !is_workload(c) {
            out.push(c.clone());
            continue;
        }
        let (name, words) = split(c)?;
        let w = find(c, name)?;
        workloads.push(w);
        let used = placeholders(c);
        let mut text = c.clone();
        for l in lists {
            if !w.params.iter().any(|p| p.name == l.name) || used.contains(&l.name) {
                continue;
            }
            if let Some(fixed) = words
                .iter()
                .find(|word| word.split_once('=').map(|(k, _)| k) == Some(l.name.as_str()))
            {
                return Err(usage(format!(
                    "'{c}' fixes {fixed} and -L {}={} lists it too: write {}={{{}}} in the \
                     command, or drop one",
                    l.name,
                    l.values.join(","),
                    l.name,
                    l.name
                )));
            }
            text.push(if text.contains(':') { ',' } else { ':' });
            text.push_str(&format!("{}={{{}}}", l.name, l.name));
            taken.insert(&l.name);
        }
        out.push(text);
    }
    if !workloads.is_empty() {
        for l in lists {
            let anywhere = commands
                .iter()
                .map(String::as_str)
                .chain(others.iter().copied())
                .any(|t| placeholders(t).contains(&l.name));
            if !taken.contains(l.name.as_str()) && !anywhere {
                let params: Vec<String> = workloads
                    .iter()
                    .map(|w| format!("{}: {}", w.name, param_names(w)))
                    .collect();
                return Err(usage(format!(
                    "-L {}={}: not a parameter of the workload ({}), and {{{}}} appears in no \
                     command, --pre, --post, --setup or --cleanup",
                    l.name,
                    l.values.join(","),
                    params.join("; "),
                    l.name
                )));
            }
        }
    }
    Ok(out)
}

/// Check the workload commands of planned variants (`(variant name, command)`), before anything
/// runs: a usage error names the variant, the parameter and what it accepts.
pub fn check<'a>(variants: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<()> {
    for (name, command) in variants {
        if is_workload(command) {
            WorkloadCommand::parse(command).with_context(|| format!("variant '{name}'"))?;
        }
    }
    Ok(())
}

/// A resumed experiment's workload variants must find the version they were made with.
pub fn check_versions(variants: &[Variant]) -> Result<()> {
    for v in variants {
        let Some(r) = &v.workload else { continue };
        let w = workload::find(&r.name)
            .with_context(|| format!("variant '{}' ran workload {}", v.name, r.name))?;
        if w.version != r.version {
            bail!(
                "variant '{}' ran workload {} version {}; this abperf has version {}, which \
                 measures something else: its runs cannot be mixed (start a new experiment)",
                v.name,
                r.name,
                r.version,
                w.version
            );
        }
    }
    Ok(())
}

/// abperf's own binary, which runs the workloads.
fn exe() -> Result<&'static Path> {
    static EXE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    EXE.get_or_init(|| {
        let p = std::env::current_exe().map_err(|e| format!("cannot find abperf's binary: {e}"))?;
        if p.to_string_lossy().ends_with(" (deleted)") {
            return Err(format!(
                "abperf's binary {} was replaced while it runs; workloads run through it",
                p.display()
            ));
        }
        Ok(p)
    })
    .as_deref()
    .map_err(|e| anyhow::anyhow!("{e}"))
}

fn prepared(argv: Vec<std::ffi::OsString>) -> Result<Prepared> {
    let words: Vec<String> = argv
        .into_iter()
        .map(|a| {
            a.into_string()
                .map_err(|a| anyhow::anyhow!("abperf's path {a:?} is not UTF-8"))
        })
        .collect::<Result<_>>()?;
    Prepared::from_argv(&words)
}

/// A variant's workload command, checked.
#[derive(Clone)]
pub struct WorkloadCommand {
    pub workload: &'static Workload,
    /// The parameters as written (after `{P}` substitution).
    pub words: Vec<String>,
    pub params: Params,
    /// The command (or `-L seed`) fixes `seed`: every run uses it.
    pub fixed_seed: bool,
}

impl WorkloadCommand {
    /// The workload command `command` (`@NAME[:K=V,...]`, placeholders substituted), checked;
    /// usage errors name the parameter and what it accepts.
    pub fn parse(command: &str) -> Result<WorkloadCommand> {
        let (name, words) = split(command)?;
        if let Some(p) = placeholders(command).first() {
            return Err(usage(format!(
                "workload command '{command}': {{{p}}} is not defined by any -L"
            )));
        }
        let w = find(command, name)?;
        let params = w.parse(&words)?;
        let fixed_seed = words.iter().any(|x| x.starts_with("seed="));
        Ok(WorkloadCommand {
            workload: w,
            words,
            params,
            fixed_seed,
        })
    }

    /// What is stored with the variant.
    pub fn reference(&self) -> WorkloadRef {
        WorkloadRef {
            name: self.workload.name.to_string(),
            version: self.workload.version,
            params: self
                .params
                .map()
                .iter()
                .filter(|(k, _)| self.fixed_seed || **k != "seed")
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            per_run_seed: !self.fixed_seed,
        }
    }

    /// The seed of the run with sequence number `seq` of an experiment seeded `seed` (None: the
    /// command fixes it).
    pub fn run_seed(&self, seed: u64, seq: u32) -> Option<u64> {
        (!self.fixed_seed).then(|| seed.wrapping_add(seq as u64))
    }

    /// The timed command of one run: `abperf workload exec NAME K=V ... [seed=N]`.
    pub fn exec(&self, seed: Option<u64>) -> Result<Prepared> {
        let mut words = self.words.clone();
        if let Some(s) = seed {
            words.push(format!("seed={s}"));
        }
        prepared(workload::exec_argv(exe()?, self.workload.name, &words))
    }

    /// The untimed step before each timed run (None: the workload has nothing to prepare).
    pub fn prepare(&self) -> Result<Option<Prepared>> {
        if self.workload.prepare.is_none() {
            return Ok(None);
        }
        prepared(workload::prepare_argv(
            exe()?,
            self.workload.name,
            &self.words,
        ))
        .map(Some)
    }

    /// After a run that did not exit normally: remove what it may have left (notes in words;
    /// failures to clean are notes too, never an error that hides the run's own outcome).
    pub fn clean_up(&self) -> Vec<String> {
        match self.workload.clean_up(&self.params) {
            Ok(notes) => notes,
            Err(e) => vec![format!(
                "abperf: warning: cleaning up after {}: {e:#}",
                self.workload.name
            )],
        }
    }

    /// The metrics a run wrote to `file`, checked against the workload's declarations and the
    /// names already measured (`taken`), as stored metrics with their declared direction.
    pub fn collect(&self, file: &Path, taken: &[Metric]) -> Result<Vec<Metric>> {
        let w = self.workload;
        let text = read_bounded(file).with_context(|| {
            format!(
                "workload {} wrote no metrics file (${}={})",
                w.name,
                wm::METRICS_ENV,
                file.display()
            )
        })?;
        let lines = wm::parse_lines(&text, &format!("${}", wm::METRICS_ENV))
            .with_context(|| format!("workload {} wrote a malformed metrics file", w.name))?;
        if lines.is_empty() {
            bail!(
                "workload {} exited normally but wrote no metrics to ${}",
                w.name,
                wm::METRICS_ENV
            );
        }
        let mut out: Vec<Metric> = Vec::new();
        for m in lines {
            let Some(spec) = w.metrics.iter().find(|s| s.name == m.name) else {
                bail!(
                    "workload {} reported metric {:?}, which it does not declare (declared: {})",
                    w.name,
                    m.name,
                    w.metrics
                        .iter()
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            };
            if spec.unit != m.unit || spec.direction != m.direction {
                bail!(
                    "workload {} reported {} in {} ({}), but declares it in {} ({})",
                    w.name,
                    m.name,
                    m.unit,
                    wm::direction_word(m.direction),
                    spec.unit,
                    wm::direction_word(spec.direction)
                );
            }
            if out.iter().chain(taken).any(|x| x.name == m.name) {
                bail!(
                    "workload {}: metric {} reported twice (or also measured by abperf)",
                    w.name,
                    m.name
                );
            }
            out.push(Metric::new(m.name, m.value, m.unit).declared(m.direction));
        }
        Ok(out)
    }
}

/// A metrics file larger than this is not a workload's (a few lines per run).
const MAX_METRICS_BYTES: u64 = 1 << 20;

fn read_bounded(file: &Path) -> Result<String> {
    let len = std::fs::metadata(file)
        .with_context(|| format!("{}", file.display()))?
        .len();
    if len > MAX_METRICS_BYTES {
        bail!(
            "{}: {len} bytes, more than the {MAX_METRICS_BYTES} a workload's metrics take",
            file.display()
        );
    }
    std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))
}

/// `$ABPERF_METRICS_FILE` of this process's workload runs: `metrics.jsonl` in a private
/// directory (mode 0700) `abperf-metrics.<pid>.<start>` in the temporary directory. The
/// variable is set once per process, before the first workload run, and inherited by every
/// child; [`MetricsFile::fresh`] removes the file before each run (the workload creates it) and
/// [`MetricsFile::finish`] removes the directory when the experiment's execution ends.
/// Directories of abperf processes that are gone (killed) are removed when the next one starts.
pub struct MetricsFile {
    dir: PathBuf,
    file: PathBuf,
}

const DIR_PREFIX: &str = "abperf-metrics.";

impl MetricsFile {
    /// This process's metrics file (the variable is set on the first call).
    pub fn get() -> Result<&'static MetricsFile> {
        static FILE: OnceLock<Result<MetricsFile, String>> = OnceLock::new();
        FILE.get_or_init(|| {
            let pid = std::process::id();
            let start = workload::sys::process_start(pid)
                .ok_or_else(|| format!("cannot read /proc/{pid}/stat"))?;
            let base = std::env::temp_dir();
            sweep(&base);
            let dir = base.join(format!("{DIR_PREFIX}{pid}.{start}"));
            let file = dir.join("metrics.jsonl");
            // SAFETY: set once per process, before the first workload run. The threads that
            // may exist (the signal watcher, a spawn's timeout watchdog, a VM's spawner) never
            // read the environment through libc; Rust's own accesses are serialised by std.
            unsafe { std::env::set_var(wm::METRICS_ENV, &file) };
            Ok(MetricsFile { dir, file })
        })
        .as_ref()
        .map_err(|e| anyhow::anyhow!("${}: {e}", wm::METRICS_ENV))
    }

    pub fn path(&self) -> &Path {
        &self.file
    }

    /// Before a run: the directory exists (ours, 0700), the file does not.
    pub fn fresh(&self) -> Result<()> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        match std::fs::DirBuilder::new().mode(0o700).create(&self.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let m = std::fs::symlink_metadata(&self.dir)?;
                // SAFETY: geteuid has no preconditions.
                let me = unsafe { libc::geteuid() };
                if !m.is_dir() || m.uid() != me || m.mode() & 0o077 != 0 {
                    bail!(
                        "{} exists and is not abperf's private directory (a directory of uid \
                         {me}, mode 0700)",
                        self.dir.display()
                    );
                }
            }
            Err(e) => {
                return Err(e).with_context(|| format!("creating {}", self.dir.display()));
            }
        }
        match std::fs::remove_file(&self.file) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).with_context(|| format!("removing {}", self.file.display())),
        }
    }

    /// When the experiment's execution ends: remove the file and the directory.
    pub fn finish(&self) {
        let _ = std::fs::remove_file(&self.file);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Remove the metrics directories of abperf processes that are gone.
fn sweep(base: &Path) {
    let Ok(rd) = std::fs::read_dir(base) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((pid, start)) = name
            .strip_prefix(DIR_PREFIX)
            .and_then(|r| r.split_once('.'))
            .and_then(|(p, s)| Some((p.parse::<u32>().ok()?, s.parse::<u64>().ok()?)))
        else {
            continue;
        };
        if workload::sys::process_start(pid) != Some(start) {
            remove_dead_dir(&e.path());
        }
    }
}

/// Remove a dead process's metrics directory in the shared temporary directory, which anyone
/// may have planted: only a real directory (never followed if it is a symlink) owned by this
/// user, and its `metrics.jsonl` is unlinked inside the directory opened (`unlinkat`), so a
/// directory swapped for a symlink in between deletes nothing elsewhere.
fn remove_dead_dir(dir: &Path) {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let Ok(m) = std::fs::symlink_metadata(dir) else {
        return;
    };
    if !m.is_dir() || m.uid() != me {
        return;
    }
    let Ok(d) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir)
    else {
        return;
    };
    let Ok(opened) = d.metadata() else {
        return;
    };
    if opened.dev() != m.dev() || opened.ino() != m.ino() || opened.uid() != me {
        return;
    }
    let name = c"metrics.jsonl";
    // SAFETY: unlinkat on an open directory fd and a NUL-terminated name; not a directory.
    unsafe { libc::unlinkat(d.as_raw_fd(), name.as_ptr(), 0) };
    drop(d);
    // rmdir never follows a symlink and fails on a directory that is not empty.
    let _ = std::fs::remove_dir(dir);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::parse_param_list;
    use abperf_model::Direction;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn lists(v: &[&str]) -> Vec<ParamList> {
        v.iter().map(|l| parse_param_list(l).unwrap()).collect()
    }

    #[test]
    fn lists_named_after_parameters_are_passed() {
        let l = lists(&["pattern=seq,random,hot", "op=read,write"]);
        let e = expand(&s(&["@page-aging"]), &l, &[]).unwrap();
        assert_eq!(e, ["@page-aging:pattern={pattern},op={op}"]);
        let e = expand(&s(&["@page-aging:data=16M"]), &l, &[]).unwrap();
        assert_eq!(e, ["@page-aging:data=16M,pattern={pattern},op={op}"]);
        // used as placeholders: left alone
        let c = "@page-aging:op={op},pattern={pattern}";
        assert_eq!(expand(&s(&[c]), &l, &[]).unwrap(), [c]);
        // other commands are untouched
        let e = expand(&s(&["sleep {op}", "@page-aging:op={op}"]), &l, &[]).unwrap();
        assert_eq!(e, ["sleep {op}", "@page-aging:op={op},pattern={pattern}"]);
    }

    #[test]
    fn spelling_errors_are_usage_errors() {
        let l = lists(&["pattern=seq,hot"]);
        let e = expand(&s(&["@page-aging:pattern=seq"]), &l, &[]).unwrap_err();
        assert_eq!(abperf_model::error::exit_code(&e), 2);
        assert!(
            e.to_string()
                .contains("fixes pattern=seq and -L pattern=seq,hot lists it too"),
            "{e}"
        );
        let e = expand(&s(&["@page-aging"]), &lists(&["colour=red,blue"]), &[]).unwrap_err();
        assert_eq!(abperf_model::error::exit_code(&e), 2);
        assert!(
            e.to_string().contains(
                "-L colour=red,blue: not a parameter of the workload (page-aging: backing, pattern"
            ),
            "{e}"
        );
        // used by --pre instead: fine
        expand(
            &s(&["@page-aging"]),
            &lists(&["colour=red,blue"]),
            &["echo {colour}"],
        )
        .unwrap();
        for (bad, want) in [
            ("@nope", "unknown workload \"nope\""),
            ("@", "expected @NAME"),
            ("@page-aging pattern=seq", "no spaces"),
            ("@page-aging:pattern=seq,,op=read", "empty parameter"),
            ("@page-aging:", "empty parameter"),
        ] {
            let e = expand(&s(&[bad]), &[], &[]).unwrap_err();
            assert_eq!(abperf_model::error::exit_code(&e), 2, "{bad}");
            assert!(format!("{e:#}").contains(want), "{bad}: {e:#}");
        }
    }

    #[test]
    fn parameters_are_checked_per_variant() {
        let e = check([("pattern=zig", "@page-aging:pattern=zig")]).unwrap_err();
        assert_eq!(abperf_model::error::exit_code(&e), 2);
        assert_eq!(
            format!("{e:#}"),
            "variant 'pattern=zig': page-aging: pattern=zig: expected one of seq, random, hot"
        );
        check([("a", "sleep 1"), ("b", "@ctxsw:round_trips=10")]).unwrap();
        let e = check([("a", "@ctxsw:round_trips={n}")]).unwrap_err();
        assert!(format!("{e:#}").contains("{n} is not defined"), "{e:#}");
    }

    #[test]
    fn seeds_and_references() {
        let c = WorkloadCommand::parse("@page-aging:op=write,data=16M").unwrap();
        assert_eq!(c.run_seed(u64::MAX, 3), Some(2));
        assert_eq!(c.run_seed(10, 0), Some(10));
        let r = c.reference();
        assert_eq!((r.name.as_str(), r.version), ("page-aging", 1));
        assert!(r.per_run_seed);
        assert_eq!(r.params["op"], "write");
        assert_eq!(r.params["pattern"], "seq", "defaults filled in");
        assert!(!r.params.contains_key("seed"));
        let a = c.exec(Some(7)).unwrap();
        let words: Vec<String> = a
            .argv
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            words[1..],
            s(&[
                "workload",
                "exec",
                "page-aging",
                "op=write",
                "data=16M",
                "seed=7"
            ])
        );
        let p = c.prepare().unwrap().unwrap();
        assert_eq!(p.argv[2].to_string_lossy(), "prepare");
        let fixed = WorkloadCommand::parse("@ctxsw:seed=4").unwrap();
        assert_eq!(fixed.run_seed(10, 3), None);
        assert!(!fixed.reference().per_run_seed);
        assert_eq!(fixed.reference().params["seed"], "4");
        assert!(fixed.prepare().unwrap().is_none(), "ctxsw prepares nothing");
    }

    #[test]
    fn metrics_are_checked_against_the_declarations() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("m.jsonl");
        let c = WorkloadCommand::parse("@flush-storm").unwrap();
        let line = |name: &str, unit: &str, dir: &str| {
            format!(r#"{{"name":"{name}","value":12.5,"unit":"{unit}","direction":"{dir}"}}"#)
        };
        let e = c.collect(&f, &[]).unwrap_err();
        assert!(format!("{e:#}").contains("wrote no metrics file"), "{e:#}");
        std::fs::write(&f, "").unwrap();
        let e = c.collect(&f, &[]).unwrap_err();
        assert!(format!("{e:#}").contains("wrote no metrics to"), "{e:#}");
        std::fs::write(&f, "{not json\n").unwrap();
        let e = c.collect(&f, &[]).unwrap_err();
        assert!(
            format!("{e:#}").contains("malformed metrics file: $ABPERF_METRICS_FILE:1"),
            "{e:#}"
        );
        std::fs::write(&f, line("bogus", "x", "count")).unwrap();
        let e = c.collect(&f, &[]).unwrap_err();
        assert!(format!("{e:#}").contains("does not declare"), "{e:#}");
        std::fs::write(&f, line("ops_per_s", "ops/s", "count")).unwrap();
        let e = c.collect(&f, &[]).unwrap_err();
        assert!(format!("{e:#}").contains("but declares it in"), "{e:#}");
        let ok = format!(
            "{}\n{}\n",
            line("ops_per_s", "ops/s", "higher_is_better"),
            line("ops", "ops", "count")
        );
        std::fs::write(&f, &ok).unwrap();
        let ms = c.collect(&f, &[]).unwrap();
        assert_eq!(ms[0].direction, Some(Direction::HigherIsBetter));
        assert_eq!(ms[1].direction, Some(Direction::Count));
        assert_eq!(ms[1].unit, "ops");
        let e = c
            .collect(&f, &[Metric::new("ops", 1.0, "count")])
            .unwrap_err();
        assert!(format!("{e:#}").contains("reported twice"), "{e:#}");
    }

    #[test]
    fn declared_metrics_never_clash_with_the_runners() {
        for w in workload::all() {
            for m in w.metrics {
                assert!(
                    abperf_model::metric::WELL_KNOWN
                        .iter()
                        .all(|(k, _)| *k != m.name),
                    "{}: {}",
                    w.name,
                    m.name
                );
                // the declared direction is what a stored run says, whatever the unit suggests
                let d = m.direction;
                let stored = Metric::new(m.name, 1.0, m.unit).declared(d);
                assert_eq!(abperf_model::MetricInfo::of(&stored).direction, d);
            }
        }
    }
}
