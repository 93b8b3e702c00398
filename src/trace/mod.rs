//! Tracepoint capture and analysis. The only module that touches tracefs.
//!
//! - [`instance`]: our own tracefs instance (clock, buffer, events, filters), removed at the end
//! - [`format`]: header_page, header_event and event format files
//! - [`ring`]: the binary ring-buffer page decoder
//! - [`record`]: per-CPU trace_pipe_raw readers, raw capture files
//! - [`text`]: ftrace text import
//! - [`event`]: the event model both paths feed to [`tables`]
//! - [`tables`]: TLB flush histogram, begin/end pair durations, counts
//! - [`tsc`]: TSC frequency
//! - [`render`]: text, JSON and CSV output of the tables

pub mod event;
pub mod format;
pub mod instance;
pub mod record;
pub mod ring;
pub mod tables;
pub mod text;
pub mod tsc;

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
}

/// A finished recording.
#[derive(Debug)]
pub struct Recorded {
    pub raw: record::RawCapture,
    pub events: Vec<String>,
    pub skipped_events: Vec<String>,
    pub wall_ns: u64,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub interrupted: bool,
}

/// Record while running `opts.command` (or for `opts.duration`), until SIGINT, SIGTERM or SIGHUP
/// (watched by `runner::signals`, which also kills the workload). The instance is removed before
/// this returns, whatever happens.
pub fn record(opts: &RecordOptions) -> Result<Recorded> {
    use crate::runner::signals;
    signals::install()?;
    use instance::Events;
    let tfs = instance::Tracefs::open()?;
    let ph = tfs.page_header()?;
    let eh = tfs.event_header()?;
    let header_page = tfs.read("events/header_page")?;
    let header_event = tfs.read("events/header_event")?;
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
    let mut formats = Vec::new();
    for n in &names {
        let (f, text) = tfs.event_format(n)?;
        formats.push((f.system.clone(), text));
    }
    for (ev, _) in &opts.filters {
        if !names.contains(ev) {
            return Err(crate::error::usage(format!(
                "--filter {ev}:...: event {ev} is not recorded (add it with -e)"
            )));
        }
    }
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
    let _ = eh;
    let streaming = opts.save_text.is_none();
    let mut readers = if streaming {
        Some(record::Readers::start(&inst, page_size)?)
    } else {
        None
    };
    inst.tracing_on(true)?;
    let t0 = Instant::now();
    let mut exit_code = None;
    let mut signal = None;
    let mut interrupted = false;
    let run = (|| -> Result<()> {
        if !opts.command.is_empty() {
            // The workload runs through the runner: own process group, killed (with its
            // children) after --duration or when a signal arrives.
            use crate::runner::spawn::{self, Exit, SpawnOptions};
            let cmd = crate::runner::Prepared::from_argv(&opts.command)?;
            let spawn_opts = SpawnOptions {
                pin: None,
                timeout: opts.duration,
                events: &[],
                quiet: false,
            };
            let out = spawn::run(&cmd, &spawn_opts)?;
            match out.exit {
                Exit::Code(c) => exit_code = Some(c),
                Exit::Signal(s) => signal = Some(s),
                Exit::TimedOut => {}
            }
            interrupted = signals::received().is_some();
        } else {
            let d = opts
                .duration
                .ok_or_else(|| crate::error::usage("give --duration SECONDS or -- COMMAND"))?;
            while t0.elapsed() < d {
                if signals::received().is_some() {
                    interrupted = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        Ok(())
    })();
    let wall_ns = t0.elapsed().as_nanos() as u64;
    inst.tracing_on(false)?;
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
    run?;
    let raw = record::RawCapture {
        meta: record::RawMeta {
            clock,
            page_size,
            header_page,
            header_event,
            formats,
            lost_stats,
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
        interrupted,
    })
}

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
        _ => Err(anyhow!(crate::error::UsageError(format!(
            "--filter {s:?}: expected SYSTEM:EVENT:EXPRESSION, e.g. 'tlb:tlb_flush:reason != 0'"
        )))),
    }
}

pub use crate::model::trace::{CaptureInfo, LostCpu, Units};
