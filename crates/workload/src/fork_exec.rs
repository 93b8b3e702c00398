//! `fork-exec`: create a process and wait for it, again and again: fork + exec of a small
//! program (default), fork + _exit, or posix_spawn (vfork + exec in glibc).

use super::Workload;
use super::metrics::{Direction, Metric, MetricSpec, metric};
use super::params::{Kind, ParamSpec, Params, SEED};
use anyhow::{Context, Result, bail};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::time::Instant;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "iterations",
        default: "1000",
        kind: Kind::Int {
            min: 1,
            max: 100_000_000,
        },
        help: "processes created (each waited for before the next)",
    },
    ParamSpec {
        name: "mode",
        default: "fork-exec",
        kind: Kind::Choice(&["fork-exec", "fork", "spawn"]),
        help: "fork-exec: fork then execve(exec); fork: the child _exits at once; spawn: \
               posix_spawn(exec)",
    },
    ParamSpec {
        name: "exec",
        default: "/bin/true",
        kind: Kind::Path,
        help: "program executed (no arguments); it must exit 0",
    },
    SEED,
];

pub const METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: "processes_per_s",
        unit: "processes/s",
        direction: Direction::HigherIsBetter,
        help: "processes created, run and reaped per second",
    },
    MetricSpec {
        name: "us_per_process",
        unit: "us",
        direction: Direction::LowerIsBetter,
        help: "mean time per process",
    },
    MetricSpec {
        name: "processes",
        unit: "processes",
        direction: Direction::Count,
        help: "processes created",
    },
];

pub const WORKLOAD: Workload = Workload {
    name: "fork-exec",
    version: 1,
    summary: "fork + exec + wait of a small program, in a loop",
    stresses: "process creation and teardown: copying and tearing down an mm, exec's new mm \
               and ELF loading, page faults of a fresh process, exit and reaping",
    kernel_paths: &[
        "kernel_clone -> copy_process -> dup_mm -> dup_mmap (copy_page_range, COW \
         write-protect + TLB flush of the parent)",
        "do_execveat_common -> bprm_execve -> load_elf_binary -> exec_mmap (mm switch)",
        "do_exit -> exit_mmap (unmap, free page tables), wait4",
    ],
    modelled_on: "the process churn of seeds 000 and 003's kernel builds (make forks a compiler \
                  per file) in a loop that runs in seconds",
    runtime: "defaults (1000 x fork+exec of /bin/true): median 1.7 s of 10 runs at load \
              average 8-9, CV of processes/s 10%",
    params: PARAMS,
    metrics: METRICS,
    prepare: None,
    exec,
    prepare_fn: None,
    clean_up_fn: None,
};

fn exec(p: &Params) -> Result<Vec<Metric>> {
    let n = p.u64("iterations");
    let mode = p.str("mode");
    let path = std::path::Path::new(p.str("exec"));
    let c_path = CString::new(path.as_os_str().as_bytes())
        .with_context(|| format!("fork-exec: exec={}: contains a NUL byte", path.display()))?;
    if mode != "fork" {
        // SAFETY: valid C string.
        if unsafe { libc::access(c_path.as_ptr(), libc::X_OK) } != 0 {
            bail!(
                "fork-exec: exec={}: not an executable file ({})",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
    }
    let argv = [c_path.as_ptr(), std::ptr::null()];
    let envp = [std::ptr::null::<libc::c_char>()];
    let t0 = Instant::now();
    for i in 0..n {
        let pid = match mode {
            "spawn" => {
                let mut pid = 0;
                // SAFETY: valid path, argv and envp arrays, NULL-terminated.
                let r = unsafe {
                    libc::posix_spawn(
                        &mut pid,
                        c_path.as_ptr(),
                        std::ptr::null(),
                        std::ptr::null(),
                        argv.as_ptr() as *const *mut _,
                        envp.as_ptr() as *const *mut _,
                    )
                };
                if r != 0 {
                    return Err(std::io::Error::from_raw_os_error(r))
                        .with_context(|| format!("fork-exec: posix_spawn {}", path.display()));
                }
                pid
            }
            _ => {
                // SAFETY: abperf is single-threaded here; the child only execs or _exits.
                let pid = unsafe { libc::fork() };
                if pid < 0 {
                    return Err(std::io::Error::last_os_error()).context("fork-exec: fork");
                }
                if pid == 0 {
                    // SAFETY: async-signal-safe calls only.
                    unsafe {
                        if mode == "fork-exec" {
                            libc::execve(c_path.as_ptr(), argv.as_ptr(), envp.as_ptr());
                            libc::_exit(127);
                        }
                        libc::_exit(0);
                    }
                }
                pid
            }
        };
        let mut st = 0;
        // SAFETY: reaping our child.
        if unsafe { libc::waitpid(pid, &mut st, 0) } != pid {
            return Err(std::io::Error::last_os_error()).context("fork-exec: waitpid");
        }
        if !(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0) {
            bail!(
                "fork-exec: process {} of {n} ({}) failed: wait status {st:#x}{}",
                i + 1,
                path.display(),
                if libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 127 {
                    " (exec failed)"
                } else {
                    ""
                }
            );
        }
    }
    let ns = t0.elapsed().as_nanos() as f64;
    Ok(vec![
        metric(METRICS, "processes_per_s", n as f64 / (ns / 1e9).max(1e-9)),
        metric(METRICS, "us_per_process", ns / 1e3 / n as f64),
        metric(METRICS, "processes", n as f64),
    ])
}
