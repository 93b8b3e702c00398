//! Tracepoint capture and analysis. The only module that touches tracefs.
//!
//! - [`instance`]: our own tracefs instance (clock, buffer, events, filters), removed at the end
//! - [`format`]: header_page, header_event and event format files
//! - [`ring`]: the binary ring-buffer page decoder
//! - [`mapped`]: read-only file windows for decoding raw captures without a copy
//! - [`record`]: per-CPU trace_pipe_raw readers, raw capture files
//! - [`text`]: ftrace text import
//! - [`event`]: the event model both paths feed to [`tables`]
//! - [`tables`]: TLB flush histogram, begin/end pair durations, counts
//! - [`tsc`]: TSC frequency
//! - [`render`]: text, JSON and CSV output of the tables

pub mod ceiling;
mod ceiling_boot;
mod ceiling_counts;
mod ceiling_fit;
mod ceiling_inputs;
mod ceiling_words;
pub mod cost;
pub mod event;
pub mod format;
pub mod instance;
pub mod mapped;
pub mod record;
pub mod ring;
pub mod tables;
pub mod text;
pub mod tsc;
pub mod workload;

use anyhow::{Context, Result, anyhow, bail};
use std::time::{Duration, Instant};

/// Events enabled when `-e` is not given: what the standard tables need. Missing ones are
/// skipped with a note (kernels differ).
pub const DEFAULT_EVENTS: &[&str] = &[
    "tlb:tlb_flush",
    "irq_vectors:call_function_entry",
    "irq_vectors:call_function_exit",
    "irq_vectors:call_function_single_entry",
    "irq_vectors:call_function_single_exit",
    "syscalls:sys_enter_madvise",
    "syscalls:sys_exit_madvise",
    "syscalls:sys_enter_munmap",
    "syscalls:sys_exit_munmap",
    "syscalls:sys_enter_mprotect",
    "syscalls:sys_exit_mprotect",
    "x86_fpu:x86_fpu_before_save",
    "x86_fpu:x86_fpu_after_save",
];

/// Whose events to record.
#[derive(Debug, Clone, PartialEq)]
pub enum ScopeRequest {
    /// The command's process tree (the default); system-wide when there is no command.
    Workload,
    SystemWide,
    /// These processes, their threads and descendants.
    Pids(Vec<i32>),
    /// The tasks of a cgroup (directory or path under a cgroup mount).
    Cgroup(String),
}

/// What to record.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// `-e` specs (`sys:name`, `sys:*`, `sys`); empty = [`DEFAULT_EVENTS`].
    pub events: Vec<String>,
    /// (event, filter expression)
    pub filters: Vec<(String, String)>,
    pub buffer_kib: u64,
    pub duration: Option<Duration>,
    pub command: Vec<String>,
    /// Write the ftrace text (`trace` file) here; the pages are then read after the workload.
    pub save_text: Option<std::path::PathBuf>,
    pub scope: ScopeRequest,
}

/// A finished recording.
#[derive(Debug)]
pub struct Recorded {
    pub raw: record::RawCapture,
    pub events: Vec<String>,
    pub skipped_events: Vec<String>,
    pub wall_ns: u64,
    pub exit_code: Option<i32>,
    /// The workload was killed by this signal.
    pub signal: Option<i32>,
    /// The first SIGINT/SIGTERM/SIGHUP abperf received (it stopped the recording).
    pub stopped_by_signal: Option<i32>,
    /// What ended the recording, in words.
    pub stop: String,
    pub scope: Scope,
    /// User + system time of the workload, ns.
    pub cpu_ns: Option<u64>,
    /// Leftovers of dead abperf processes removed before recording, in words.
    pub cleaned: Vec<String>,
}

/// Why the loop ended.
enum Ending {
    WorkloadExited,
    Duration,
    Signal(i32),
}

/// Record while running `opts.command` (or for `opts.duration`, or until SIGINT/SIGTERM/SIGHUP)
/// in a tracefs instance of our own scoped to the workload's process tree (or `--pid`,
/// `--cgroup`, or everything). The first signal stops the recording and the capture is
/// returned; a second one aborts (an error saying so, nothing returned). The instance is
/// removed before this returns, whatever happens.
pub fn record(opts: &RecordOptions) -> Result<Recorded> {
    use instance::Events;
    workload::Stop::install()?;
    // leftovers of abperf processes killed hard (their instances still trace)
    let cleaned = instance::clean_leftovers();
    for c in &cleaned {
        abperf_model::error::stderr_line(&format!("abperf: {c}"));
    }
    let tfs = instance::Tracefs::open()?;
    let ph = tfs.page_header()?;
    let header_page = tfs.read("events/header_page")?;
    let header_event = tfs.read("events/header_event")?;
    let (names, skipped) = events_to_record(&tfs, opts)?;
    let mut formats = Vec::new();
    for n in &names {
        let (f, text) = tfs.event_format(n)?;
        formats.push((f.system.clone(), text));
    }
    check_filters(opts, &names)?;
    // resolve what to run and whom to follow before anything is created
    let cmd = if opts.command.is_empty() {
        None
    } else {
        Some(abperf_measure::command::Prepared::from_argv(&opts.command)?)
    };
    let cgroup = match &opts.scope {
        ScopeRequest::Cgroup(c) => Some(workload::cgroup_dir(c)?),
        _ => None,
    };
    let inst = instance::Instance::create(
        tfs,
        &instance::InstanceOptions {
            buffer_kib: opts.buffer_kib,
            ..Default::default()
        },
    )?;
    for n in &names {
        inst.enable(n)?;
    }
    for (ev, expr) in &opts.filters {
        inst.filter(ev, expr)?;
    }
    let page_size = inst.page_size(&ph);
    // the workload waits at its gate until its pid is in scope
    let mut child = match &cmd {
        Some(c) => Some(workload::Gated::start(c)?),
        None => None,
    };
    let scope = scope_to(&inst, &opts.scope, child.as_ref(), cgroup.as_deref())?;
    let streaming = opts.save_text.is_none();
    let mut readers = if streaming {
        Some(record::Readers::start(&inst, page_size)?)
    } else {
        None
    };
    inst.tracing_on(true)?;
    let t0 = Instant::now();
    let run = wait_for_end(
        opts,
        &inst,
        child.as_mut(),
        cmd.as_ref(),
        cgroup.as_deref(),
        t0,
    );
    // stop recording first: what follows (stopping the workload) is not part of the capture
    let wall_ns = t0.elapsed().as_nanos() as u64;
    inst.tracing_on(false)?;
    let (exit_code, signal, cpu_ns) = match child.as_mut() {
        Some(ch) => stop_workload(ch, &run)?,
        None => (None, None, None),
    };
    let ending = match run {
        Ok(e) => e,
        Err(e) => {
            drop(readers.take());
            inst.remove()?;
            return Err(e);
        }
    };
    if workload::Stop::aborted() {
        drop(readers.take());
        inst.remove()?;
        return Err(Aborted(workload::Stop::first().unwrap_or(libc::SIGINT)).into());
    }
    let (pages, lost_stats, clock) = drain(inst, readers, opts, page_size)?;
    if workload::Stop::aborted() {
        return Err(Aborted(workload::Stop::first().unwrap_or(libc::SIGINT)).into());
    }
    let (stop, stopped_by_signal) = stop_text(&ending, opts, cmd.is_some());
    let raw = record::RawCapture {
        meta: record::RawMeta {
            clock,
            page_size,
            header_page,
            header_event,
            formats,
            lost_stats,
            boot_id: record::boot_id(),
        },
        cpus: pages,
    };
    Ok(Recorded {
        raw,
        events: names,
        skipped_events: skipped,
        wall_ns,
        exit_code,
        signal,
        stopped_by_signal,
        stop,
        scope,
        cpu_ns,
        cleaned,
    })
}

/// The events to record, each once: the `-e` specs expanded, or [`DEFAULT_EVENTS`] (those this
/// kernel lacks are returned second, as skipped).
fn events_to_record(
    tfs: &instance::Tracefs,
    opts: &RecordOptions,
) -> Result<(Vec<String>, Vec<String>)> {
    use instance::Events;
    let mut names = Vec::new();
    let mut skipped = Vec::new();
    if opts.events.is_empty() {
        for e in DEFAULT_EVENTS {
            match tfs.expand(e) {
                Ok(v) => names.extend(v),
                Err(_) => skipped.push(e.to_string()),
            }
        }
    } else {
        for spec in &opts.events {
            names.extend(tfs.expand(spec)?);
        }
    }
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    if names.is_empty() {
        bail!("none of the events to record exists on this kernel");
    }
    Ok((names, skipped))
}

/// Every --filter names an event that is recorded.
fn check_filters(opts: &RecordOptions, names: &[String]) -> Result<()> {
    for (ev, _) in &opts.filters {
        if !names.contains(ev) {
            return Err(abperf_model::error::usage(format!(
                "--filter {ev}:...: event {ev} is not recorded (add it with -e)"
            )));
        }
    }
    Ok(())
}

/// Scope the instance to whom `request` names (the workload `child`, pids, the tasks of
/// `cgroup`, or everything); the scope as stored.
fn scope_to(
    inst: &instance::Instance,
    request: &ScopeRequest,
    child: Option<&workload::Gated>,
    cgroup: Option<&std::path::Path>,
) -> Result<Scope> {
    Ok(match (request, child) {
        (ScopeRequest::Workload, Some(ch)) => {
            inst.scope_tasks(&[ch.pid], false)?;
            Scope {
                kind: "workload".into(),
                pids: vec![ch.pid],
                cgroup: None,
            }
        }
        (ScopeRequest::Workload, None) | (ScopeRequest::SystemWide, _) => Scope::system_wide(),
        (ScopeRequest::Pids(p), _) => {
            inst.scope_tasks(&workload::tasks_of_pids(p)?, false)?;
            Scope {
                kind: "pid".into(),
                pids: p.clone(),
                cgroup: None,
            }
        }
        (ScopeRequest::Cgroup(_), _) => {
            let dir = cgroup.expect("resolved above");
            inst.scope_tasks(&[], false)?;
            let tids = workload::tasks_of_cgroup(dir)?;
            if tids.is_empty() {
                abperf_model::error::stderr_line(&format!(
                    "abperf: note: cgroup {} has no tasks yet; tasks that join it are added every 100 ms",
                    dir.display()
                ));
            } else {
                inst.scope_tasks(&tids, false)?;
            }
            Scope {
                kind: "cgroup".into(),
                pids: Vec::new(),
                cgroup: Some(dir.display().to_string()),
            }
        }
    })
}

/// Release the workload from its gate and wait for what ends the recording: a signal, the
/// workload's exit, or --duration; the tasks that joined `cgroup` are added every 100 ms.
fn wait_for_end(
    opts: &RecordOptions,
    inst: &instance::Instance,
    mut child: Option<&mut workload::Gated>,
    cmd: Option<&abperf_measure::command::Prepared>,
    cgroup: Option<&std::path::Path>,
    t0: Instant,
) -> Result<Ending> {
    if let Some(ch) = child.as_deref_mut() {
        ch.release(&cmd.expect("a command").text)?;
    }
    let mut last_refresh = Instant::now();
    let ending = loop {
        if let Some(s) = workload::Stop::first() {
            break Ending::Signal(s);
        }
        if let Some(ch) = child.as_deref_mut()
            && ch.poll()?.is_some()
        {
            break Ending::WorkloadExited;
        }
        if opts.duration.is_some_and(|d| t0.elapsed() >= d) {
            break Ending::Duration;
        }
        if let Some(dir) = cgroup
            && last_refresh.elapsed() >= Duration::from_millis(100)
        {
            last_refresh = Instant::now();
            let have: std::collections::HashSet<i32> = inst.scoped_tasks().into_iter().collect();
            let new: Vec<i32> = workload::tasks_of_cgroup(dir)
                .unwrap_or_default()
                .into_iter()
                .filter(|t| !have.contains(t))
                .collect();
            if !new.is_empty() {
                inst.scope_tasks(&new, true)?;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ok(ending)
}

/// Stop the workload as the recording's end asks (or reap it when it exited); its exit code,
/// the signal that killed it (unless we sent it), and its CPU time.
fn stop_workload(
    ch: &mut workload::Gated,
    run: &Result<Ending>,
) -> Result<(Option<i32>, Option<i32>, Option<u64>)> {
    let (mut exit_code, mut signal) = (None, None);
    let ended = match run {
        Ok(Ending::Signal(s)) => ch.stop(*s, Duration::from_secs(2))?,
        Ok(Ending::Duration) => ch.stop(libc::SIGTERM, Duration::from_secs(2))?,
        Ok(Ending::WorkloadExited) => ch.poll()?.expect("exited"),
        Err(_) => ch.stop(libc::SIGKILL, Duration::from_secs(2))?,
    };
    match (ended, run) {
        // stopped by us (--duration, a signal we forwarded): not the workload's failure
        (workload::Ended::Signal(_), Ok(Ending::Duration | Ending::Signal(_))) => {}
        (workload::Ended::Code(c), _) => exit_code = Some(c),
        (workload::Ended::Signal(s), _) => signal = Some(s),
    }
    Ok((exit_code, signal, ch.cpu_ns()))
}

/// Pages per CPU, the lost-event counts per CPU, and the instance's trace clock.
type Drained = (Vec<(u32, Vec<u8>)>, Vec<(u32, u64)>, String);

/// Read what was recorded and remove the instance: with --save-text the ftrace text is copied
/// first and the pages drained after; the lost-event counts per CPU and the clock go with them.
fn drain(
    inst: instance::Instance,
    mut readers: Option<record::Readers>,
    opts: &RecordOptions,
    page_size: usize,
) -> Result<Drained> {
    if let Some(path) = &opts.save_text {
        // `trace` does not consume: copy it, then drain the pages
        let text =
            std::fs::read(inst.path("trace")).context("reading the instance's trace file")?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        readers = Some(record::Readers::start(&inst, page_size)?);
    }
    let pages = readers.take().expect("readers started").finish()?;
    let mut lost_stats = Vec::new();
    for (cpu, _) in &pages {
        lost_stats.push((*cpu, inst.lost_stats(*cpu).unwrap_or(0)));
    }
    let clock = inst.clock.clone();
    inst.remove()?;
    Ok((pages, lost_stats, clock))
}

/// What ended the recording, in words, and the signal that did (if one did).
fn stop_text(ending: &Ending, opts: &RecordOptions, has_command: bool) -> (String, Option<i32>) {
    match *ending {
        Ending::WorkloadExited => ("the workload exiting".to_string(), None),
        Ending::Duration => (
            format!(
                "--duration {} s{}",
                opts.duration.map(|d| d.as_secs_f64()).unwrap_or(0.0),
                if has_command {
                    " (the workload was stopped: SIGTERM)"
                } else {
                    ""
                }
            ),
            None,
        ),
        Ending::Signal(s) => (
            format!(
                "{}{}",
                workload::signal_name(s),
                if has_command {
                    " (forwarded to the workload)"
                } else {
                    ""
                }
            ),
            Some(s),
        ),
    }
}

/// A second signal aborted the recording; nothing is stored. Exit 128 + the first signal.
#[derive(Debug, thiserror::Error)]
#[error("interrupted twice ({}): recording aborted, nothing stored, tracing instance removed", workload::signal_name(*.0))]
pub struct Aborted(pub i32);

/// Hints for text import from the local format files: fields printed as bare hex, and the
/// system of each event name. Empty when tracefs is not mounted (numbers with a-f digits are
/// still read as hex; events then have no system prefix).
pub fn local_text_hints() -> text::TextOptions {
    let mut out = std::collections::HashMap::new();
    let mut systems = std::collections::HashMap::new();
    for root in [
        "/sys/kernel/tracing/events",
        "/sys/kernel/debug/tracing/events",
    ] {
        let Ok(dirs) = std::fs::read_dir(root) else {
            continue;
        };
        for sys in dirs.flatten() {
            let Ok(evs) = std::fs::read_dir(sys.path()) else {
                continue;
            };
            for ev in evs.flatten() {
                if !ev.path().join("format").exists() {
                    continue;
                }
                systems.insert(
                    ev.file_name().to_string_lossy().into_owned(),
                    sys.file_name().to_string_lossy().into_owned(),
                );
                let Ok(text) = instance::read_whole(&ev.path().join("format")) else {
                    continue;
                };
                let Some(line) = text.lines().find(|l| l.starts_with("print fmt:")) else {
                    continue;
                };
                let hex = format::hex_fields(line.trim_start_matches("print fmt:").trim());
                if !hex.is_empty() {
                    out.insert(
                        ev.file_name().to_string_lossy().into_owned(),
                        hex.into_iter().collect(),
                    );
                }
            }
        }
        break;
    }
    text::TextOptions {
        lenient: false,
        hex: out,
        systems,
    }
}

/// Parse `EVENT:EXPR` where EVENT is `system:name`.
pub fn parse_filter(s: &str) -> Result<(String, String)> {
    let mut it = s.splitn(3, ':');
    match (it.next(), it.next(), it.next()) {
        (Some(sys), Some(name), Some(expr))
            if !sys.is_empty() && !name.is_empty() && !expr.trim().is_empty() =>
        {
            Ok((format!("{sys}:{name}"), expr.trim().to_string()))
        }
        _ => Err(anyhow!(abperf_model::error::UsageError(format!(
            "--filter {s:?}: expected SYSTEM:EVENT:EXPRESSION, e.g. 'tlb:tlb_flush:reason != 0'"
        )))),
    }
}

pub use abperf_model::trace::{CaptureInfo, LostCpu, Scope, Units};
