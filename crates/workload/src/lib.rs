//! Built-in workloads: named, versioned, parameterised programs shipped inside abperf, modelled on
//! the seeds' hand-made benchmarks (page aging, kernel builds, flush storms) plus small ones for
//! quick A/B of kernel knobs.
//!
//! - [`all`] / [`find`]: the registry. A [`Workload`] has a name, a version (bumped whenever
//!   what it measures changes, so results of different versions are never compared blindly),
//!   what it stresses and through which kernel paths, its parameters ([`params::ParamSpec`], with
//!   defaults and allowed values), the metrics it reports ([`metrics::MetricSpec`], with unit and
//!   direction) and its run time measured on the development VM.
//! - [`Workload::parse`] checks `NAME=VALUE` words; [`Workload::exec`] runs the workload in this
//!   process (page-aging and the ctxsw/fork-exec process modes fork children of their own) and
//!   returns its metrics; [`Workload::prepare`] is the untimed step a runner runs before each
//!   timed run (kbuild: configure and `make clean`; page-aging: the data file).
//! - [`metrics::emit`] delivers the metrics: one JSON line each to `$ABPERF_METRICS_FILE`, or a
//!   readable table on stderr.
//! - [`exec_argv`] / [`prepare_argv`]: the command lines a runner uses.
//!
//! Every random choice comes from ChaCha8 seeded with the `seed` parameter.
//!
//! Processes: `abperf run @NAME` starts `abperf workload exec NAME` like any other command
//! (`runner::workload` prepares it, `runner::spawn` starts it through the small spawn helper, so
//! its max RSS is its own). The forks and
//! `posix_spawn`s inside page-aging, ctxsw and fork-exec stay plain: they are the workload, what
//! it measures, not a runner starting something to be measured.

pub mod cgroup;
pub mod ctxsw;
pub mod flush_storm;
pub mod fork_exec;
pub mod kbuild;
pub mod metrics;
pub mod page_aging;
pub mod pagefault;
pub mod params;
pub mod sys;

pub use abperf_model::workload::{Description, ParamDescription};

use abperf_model::error::usage;
use anyhow::Result;
use metrics::{Metric, MetricSpec};
use params::{ParamSpec, Params};
use std::ffi::OsString;
use std::path::Path;
use thiserror::Error;

/// A workload stopped by SIGINT/SIGTERM/SIGHUP after cleaning up; the process exits 128+N.
#[derive(Debug, Error)]
#[error("interrupted by signal {0}")]
pub struct Interrupted(pub i32);

pub struct Workload {
    pub name: &'static str,
    /// Bumped whenever what the workload measures changes.
    pub version: u32,
    pub summary: &'static str,
    /// What it stresses.
    pub stresses: &'static str,
    /// The kernel paths it drives.
    pub kernel_paths: &'static [&'static str],
    /// Which seed it is modelled on.
    pub modelled_on: &'static str,
    pub params: &'static [ParamSpec],
    pub metrics: &'static [MetricSpec],
    /// Run time with default parameters, measured on the 2-vCPU development VM.
    pub runtime: &'static str,
    /// What the untimed prepare step does (None: nothing to prepare).
    pub prepare: Option<&'static str>,
    exec: fn(&Params) -> Result<Vec<Metric>>,
    prepare_fn: Option<fn(&Params) -> Result<()>>,
    clean_up_fn: Option<CleanUp>,
}

/// Removes what killed runs left behind; returns what it removed, in words.
type CleanUp = fn(&Params) -> Result<Vec<String>>;

static ALL: [Workload; 6] = [
    page_aging::WORKLOAD,
    kbuild::WORKLOAD,
    flush_storm::WORKLOAD,
    fork_exec::WORKLOAD,
    ctxsw::WORKLOAD,
    pagefault::WORKLOAD,
];

pub fn all() -> &'static [Workload] {
    &ALL
}

/// The workload called `name`, or a usage error listing the names.
pub fn find(name: &str) -> Result<&'static Workload> {
    ALL.iter().find(|w| w.name == name).ok_or_else(|| {
        usage(format!(
            "unknown workload {name:?} (workloads: {})",
            ALL.iter().map(|w| w.name).collect::<Vec<_>>().join(", ")
        ))
    })
}

impl Workload {
    /// Check `NAME=VALUE` words (usage error naming the parameter and what it accepts).
    pub fn parse(&self, words: &[String]) -> Result<Params> {
        params::parse(self.name, self.params, words).map_err(usage)
    }

    /// Run it here and return its metrics. Call it from a single-threaded process (as
    /// `abperf workload exec` is): page-aging, ctxsw mode=processes and fork-exec fork children
    /// that run Rust code.
    pub fn exec(&self, p: &Params) -> Result<Vec<Metric>> {
        (self.exec)(p)
    }

    /// The untimed step before a timed run (nothing for most workloads).
    pub fn prepare(&self, p: &Params) -> Result<()> {
        match self.prepare_fn {
            Some(f) => f(p),
            None => Ok(()),
        }
    }

    /// After a run of it was killed (SIGKILL leaves no chance to clean up): remove what such
    /// runs left behind (page-aging: cgroups whose run is gone). Returns what was removed, in
    /// words. Call it from the process that started the run, after reaping it.
    pub fn clean_up(&self, p: &Params) -> Result<Vec<String>> {
        match self.clean_up_fn {
            Some(f) => f(p),
            None => Ok(Vec::new()),
        }
    }

    /// Title line of its metrics: name, version and every parameter.
    pub fn title(&self, p: &Params) -> String {
        format!("{} v{} ({})", self.name, self.version, p.words().join(" "))
    }

    pub fn describe(&self) -> Description {
        Description {
            name: self.name,
            version: self.version,
            summary: self.summary,
            stresses: self.stresses,
            kernel_paths: self.kernel_paths,
            modelled_on: self.modelled_on,
            runtime: self.runtime,
            prepare: self.prepare,
            params: self
                .params
                .iter()
                .map(|p| ParamDescription {
                    name: p.name,
                    default: p.default,
                    allowed: p.kind.allowed(),
                    help: p.help,
                })
                .collect(),
            metrics: self.metrics,
        }
    }
}

/// The argv of a timed run: `EXE workload exec NAME k=v ...` (pass `seed=N` among the words;
/// the metrics go to `$ABPERF_METRICS_FILE` when the runner sets it).
pub fn exec_argv(exe: &Path, name: &str, words: &[String]) -> Vec<OsString> {
    argv(exe, "exec", name, words)
}

/// The argv of the untimed step before each run: `EXE workload prepare NAME k=v ...`.
pub fn prepare_argv(exe: &Path, name: &str, words: &[String]) -> Vec<OsString> {
    argv(exe, "prepare", name, words)
}

fn argv(exe: &Path, verb: &str, name: &str, words: &[String]) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec![exe.into(), "workload".into(), verb.into(), name.into()];
    v.extend(words.iter().map(OsString::from));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_is_consistent() {
        let mut names = std::collections::BTreeSet::new();
        for w in all() {
            assert!(names.insert(w.name), "duplicate {}", w.name);
            assert!(w.version >= 1);
            assert!(!w.runtime.is_empty() && !w.modelled_on.is_empty());
            // defaults pass their own checks, and every workload takes seed
            let p = w.parse(&[]).unwrap_or_else(|e| panic!("{}: {e:#}", w.name));
            assert_eq!(p.seed(), 0);
            let mut pn = std::collections::BTreeSet::new();
            for s in w.params {
                assert!(pn.insert(s.name), "{}: parameter {} twice", w.name, s.name);
            }
            let mut mn = std::collections::BTreeSet::new();
            for m in w.metrics {
                assert!(mn.insert(m.name), "{}: metric {} twice", w.name, m.name);
            }
            assert!(
                w.metrics
                    .iter()
                    .any(|m| m.direction != metrics::Direction::Count),
                "{} reports a score",
                w.name
            );
        }
        assert!(find("page-aging").is_ok());
        let Err(e) = find("nope") else {
            panic!("found a workload called nope")
        };
        assert!(
            format!("{e}").contains("workloads: page-aging, kbuild"),
            "{e}"
        );
        assert_eq!(abperf_model::error::exit_code(&e), 2);
    }

    #[test]
    fn argv_for_the_runner() {
        let a = exec_argv(
            Path::new("/usr/bin/abperf"),
            "page-aging",
            &["pattern=hot".into(), "seed=3".into()],
        );
        assert_eq!(
            a,
            [
                "/usr/bin/abperf",
                "workload",
                "exec",
                "page-aging",
                "pattern=hot",
                "seed=3"
            ]
            .map(OsString::from)
        );
        assert_eq!(
            prepare_argv(Path::new("abperf"), "kbuild", &[])[2],
            OsString::from("prepare")
        );
    }

    #[test]
    fn parse_errors_are_usage_errors() {
        let w = find("page-aging").unwrap();
        let e = w.parse(&["pattern=zig".into()]).unwrap_err();
        assert_eq!(
            format!("{e}"),
            "page-aging: pattern=zig: expected one of seq, random, hot"
        );
        assert_eq!(abperf_model::error::exit_code(&e), 2);
    }
}
