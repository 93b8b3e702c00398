//! `abperf workload list | show NAME | exec NAME [k=v ...] | prepare NAME [k=v ...]`: the
//! built-in workloads.

use crate::report::{self, plain::PlainFormat as Format};
use crate::workload::{self, Interrupted, metrics};
use anyhow::Result;

#[derive(Debug, clap::Args)]
pub struct WorkloadArgs {
    #[command(subcommand)]
    pub cmd: WorkloadCmd,
}

#[derive(Debug, clap::Subcommand)]
pub enum WorkloadCmd {
    /// List the built-in workloads
    List {
        /// Output format
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// What a workload stresses, its kernel paths, parameters, metrics and run time here
    Show {
        /// The workload (see `workload list`)
        name: String,
        /// Output format
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Run a workload in this process. Metrics: one JSON line each to the file named by
    /// $ABPERF_METRICS_FILE, else a table on stderr
    Exec {
        /// The workload (see `workload list`)
        name: String,
        /// Parameters (see `workload show NAME`); seed=N fixes every random choice
        #[arg(value_name = "NAME=VALUE")]
        params: Vec<String>,
    },
    /// The untimed step to run before each timed `exec` (kbuild: configure, make clean)
    Prepare {
        /// The workload (see `workload list`)
        name: String,
        /// Parameters, the same as the timed `exec` will get
        #[arg(value_name = "NAME=VALUE")]
        params: Vec<String>,
    },
}

pub fn run(args: WorkloadArgs) -> Result<i32> {
    match args.cmd {
        WorkloadCmd::List { format } => {
            list(format)?;
            Ok(0)
        }
        WorkloadCmd::Show { name, format } => show(&name, format),
        WorkloadCmd::Exec { name, params } => {
            let w = workload::find(&name)?;
            let p = w.parse(&params)?;
            match w.exec(&p) {
                Ok(ms) => {
                    metrics::emit(&w.title(&p), &ms)?;
                    Ok(0)
                }
                Err(e) => interrupted(w.name, e),
            }
        }
        WorkloadCmd::Prepare { name, params } => {
            let w = workload::find(&name)?;
            let p = w.parse(&params)?;
            match w.prepare(&p) {
                Ok(()) => Ok(0),
                Err(e) => interrupted(w.name, e),
            }
        }
    }
}

/// A workload stopped by a signal has cleaned up: exit 128+N, as a shell would report it.
fn interrupted(name: &str, e: anyhow::Error) -> Result<i32> {
    match e.downcast_ref::<Interrupted>() {
        Some(Interrupted(sig)) => {
            crate::error::stderr_line(&format!(
                "abperf: workload {name}: stopped by signal {sig}, cleaned up"
            ));
            Ok(128 + sig)
        }
        None => Err(e),
    }
}

fn list(format: Format) -> Result<()> {
    let all: Vec<_> = workload::all().iter().map(|w| w.describe()).collect();
    print!("{}", format.render(&report::workloads::List(&all))?);
    Ok(())
}

/// Findings about this machine that decide whether the workload can run here.
fn machine_notes(name: &str) -> Vec<String> {
    match name {
        "page-aging" => {
            let mut v = workload::cgroup::describe();
            let swap = workload::sys::meminfo_kib("SwapTotal").unwrap_or(0);
            v.push(if swap == 0 {
                "swap: none (backing=anon cannot be reclaimed; backing=file works)".into()
            } else {
                format!("swap: {} MiB (backing=anon usable)", swap / 1024)
            });
            v
        }
        "kbuild" => {
            let mut v = Vec::new();
            let missing: Vec<&str> = ["make", "gcc", "bc", "flex", "bison", "xz", "tar"]
                .into_iter()
                .filter(|c| !on_path(c))
                .collect();
            v.push(if missing.is_empty() {
                "tools: make gcc bc flex bison xz tar found".into()
            } else {
                format!(
                    "tools missing: {} (Debian: make gcc libc6-dev bc flex bison xz-utils tar)",
                    missing.join(" ")
                )
            });
            v.push(match workload::kbuild::debian_tarball() {
                Ok(t) => format!("tree=debian: {}", t.display()),
                Err(_) => format!(
                    "tree=debian: no linux-source-*.tar.* in /usr/src or {}/usr/src (apt-get \
                     install linux-source, or apt-get download and dpkg-deb -x it there)",
                    workload::kbuild::unpacked_package_dir().display()
                ),
            });
            v
        }
        "flush-storm" => vec![format!(
            "CPUs this process may use: {:?}",
            workload::sys::allowed_cpus()
        )],
        _ => Vec::new(),
    }
}

fn on_path(cmd: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(d.join(cmd))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

fn show(name: &str, format: Format) -> Result<i32> {
    let w = workload::find(name)?;
    let d = w.describe();
    let notes = machine_notes(w.name);
    let show = report::workloads::Show {
        workload: &d,
        this_machine: &notes,
    };
    print!("{}", format.render(&show)?);
    Ok(0)
}
