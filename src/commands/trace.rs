//! `abperf trace record|import|report|compare`: tracepoint captures into seed 002's tables.

use crate::report::{Format, View, Which};
use crate::store::Store;
use crate::trace::record::RawCapture;
use crate::trace::tables::{Spec, Tables};
use crate::trace::text::{self, TextClock, TextOptions};
use crate::trace::{self, CaptureInfo, LostCpu, RecordOptions};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub cmd: TraceCmd,
}

#[derive(Debug, clap::Subcommand)]
pub enum TraceCmd {
    /// Record COMMAND's tracepoint events (its process tree; -a: every task) in a private tracefs
    /// instance until it exits, --duration ends, or Ctrl-C (the capture is kept either way)
    Record(RecordArgs),
    /// Import an ftrace text file (`cat trace`, trace_pipe, `trace-cmd report`) or a raw capture
    /// written by `record --keep-raw`
    Import(ImportArgs),
    /// Show a stored capture's tables
    Report(ReportArgs),
    /// Captures side by side (TLB table and pair tables): one per side is described, several
    /// per side (A1,A2,... B1,B2,...) are compared with the capture as the unit
    Compare(CompareArgs),
}

#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// Events, comma-separated or repeated: SYSTEM:NAME, SYSTEM:* or SYSTEM (default: tlb_flush,
    /// call_function[_single] entry/exit, madvise/munmap/mprotect enter/exit, x86_fpu save)
    #[arg(
        short = 'e',
        long = "event",
        value_delimiter = ',',
        value_name = "EVENTS"
    )]
    pub events: Vec<String>,
    /// Kernel event filter, SYSTEM:EVENT:EXPRESSION (e.g. 'tlb:tlb_flush:reason != 0'); repeatable
    #[arg(long, value_name = "EVENT:EXPR")]
    pub filter: Vec<String>,
    /// Ring buffer per CPU, KiB
    #[arg(long, default_value_t = 8192, value_name = "N")]
    pub buffer_kib: u64,
    /// Record for S seconds (with a COMMAND: stop it after S seconds). Without COMMAND and
    /// --duration, record until Ctrl-C
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// Record every task on every CPU (default: only the COMMAND's process tree, through
    /// tracefs set_event_pid with event-fork)
    #[arg(short = 'a', long, conflicts_with_all = ["pid", "cgroup"])]
    pub system_wide: bool,
    /// Record these running processes (comma-separated pids), their threads and every task
    /// they start, instead of COMMAND's tree (COMMAND, if given, only sets how long)
    #[arg(
        short = 'p',
        long,
        value_delimiter = ',',
        value_name = "PIDS",
        conflicts_with = "cgroup"
    )]
    pub pid: Vec<i32>,
    /// Record the tasks of this cgroup (a directory, or a path under /sys/fs/cgroup), checked
    /// every 100 ms for tasks that join it
    #[arg(short = 'G', long, value_name = "CGROUP")]
    pub cgroup: Option<String>,
    /// Do not measure this machine's per-event tracing cost (measured once per machine and
    /// stored, about 0.3 s, after the first recording)
    #[arg(long)]
    pub no_cost: bool,
    /// Also keep the raw ring-buffer pages in FILE (re-analysis with other --begin/--end/--key)
    #[arg(long, value_name = "FILE")]
    pub keep_raw: Option<PathBuf>,
    /// Also write the ftrace text of the capture to FILE. The buffer is then read after the
    /// workload, so it must hold the whole capture (raise --buffer-kib)
    #[arg(long, value_name = "FILE")]
    pub save_text: Option<PathBuf>,
    /// Name of the stored capture (default: "trace: COMMAND")
    #[arg(long)]
    pub name: Option<String>,
    /// Record N separate captures of the workload one after the other, each stored on its own
    /// (the unit of `trace compare A1,A2,... B1,B2,...`)
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub captures: u32,
    /// Do not print the tables after recording
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub db: crate::commands::DbArgs,
    /// The workload
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// ftrace text file or abperf raw capture
    pub file: PathBuf,
    /// Skip lines that do not parse (counted and reported) instead of failing
    #[arg(long)]
    pub lenient: bool,
    /// Clock of integer timestamps in a text file (x86-tsc: ticks are cycles)
    #[arg(long, default_value = "x86-tsc")]
    pub clock: String,
    /// TSC frequency of the machine that made the trace, MHz, to convert between cycles and ns
    /// (default: calibrated here for a raw capture recorded in this boot; otherwise times stay
    /// in the capture's clock units)
    #[arg(long, value_name = "MHZ")]
    pub tsc_mhz: Option<f64>,
    /// Name of the stored capture (default: "trace import: FILE")
    #[arg(long)]
    pub name: Option<String>,
    /// Do not print the tables after importing
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub db: crate::commands::DbArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TableKind {
    Tlb,
    Fpu,
    Pair,
    Count,
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Capture id (or `latest`)
    pub id: String,
    /// Which table (default: all)
    #[arg(long)]
    pub table: Option<TableKind>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Begin event of a custom pair (with --table pair)
    #[arg(long, value_name = "EVENT")]
    pub begin: Option<String>,
    /// End event of a custom pair (with --table pair)
    #[arg(long, value_name = "EVENT")]
    pub end: Option<String>,
    /// Event to count (with --table count)
    #[arg(long, value_name = "EVENT")]
    pub event: Option<String>,
    /// Key field: of the begin event (pair) or of the counted event (count)
    #[arg(long, value_name = "FIELD")]
    pub key: Option<String>,
    #[command(flatten)]
    pub db: crate::commands::DbArgs,
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// A's captures: one id (or `latest`), or several comma-separated (`3,5,7`)
    pub id_a: String,
    /// B's captures, likewise
    pub id_b: String,
    #[command(flatten)]
    pub db: crate::commands::DbArgs,
}

pub fn run(args: TraceArgs) -> Result<i32> {
    match args.cmd {
        TraceCmd::Record(a) => record(a),
        TraceCmd::Import(a) => import(a),
        TraceCmd::Report(a) => report(a),
        TraceCmd::Compare(a) => compare(a),
    }
}

fn argv() -> Vec<String> {
    std::env::args().collect()
}

/// Losses per CPU block: the kernel's stats (from the meta data) and the pages' flags.
fn lost_from_raw(meta: &trace::record::RawMeta, dec: &trace::record::Decoded) -> Vec<LostCpu> {
    dec.lost_pages
        .iter()
        .map(|&(cpu, pages)| {
            let stats = meta
                .lost_stats
                .iter()
                .find(|(c, _)| *c == cpu)
                .map(|(_, n)| *n);
            LostCpu {
                cpu,
                stats,
                counted: pages.counted,
                flagged: pages.flagged_uncounted,
            }
        })
        .collect()
}

fn record(a: RecordArgs) -> Result<i32> {
    let opts = record_options(&a)?;
    if a.captures == 0 {
        anyhow::bail!("--captures must be at least 1");
    }
    if a.captures > 1 && a.command.is_empty() && opts.duration.is_none() {
        anyhow::bail!(
            "--captures {} needs a COMMAND or --duration to end each capture",
            a.captures
        );
    }
    // Open the store first: a bad --db fails before anything is traced.
    let mut store = Store::open_to_write(&a.db.location()?)?;
    let mut ids = Vec::new();
    for k in 1..=a.captures {
        let (status, id) = record_once(&a, &opts, &mut store, k)?;
        ids.extend(id);
        if status != 0 {
            return Ok(status);
        }
    }
    if a.captures > 1 {
        let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
        crate::error::stderr_line(&format!("abperf: captures {}", ids.join(",")));
    }
    Ok(0)
}

/// One capture (`k` of `--captures`): recorded, analysed and stored; its exit status and id
/// (none when it was aborted before it was stored).
fn record_once(
    a: &RecordArgs,
    opts: &RecordOptions,
    store: &mut Store,
    k: u32,
) -> Result<(i32, Option<i64>)> {
    // The TSC is calibrated (0.1 s, mostly asleep) on a thread while the recording runs.
    let calibration = std::thread::spawn(|| trace::tsc::calibrate(Duration::from_millis(100)));
    let until_ctrl_c = a.command.is_empty() && opts.duration.is_none();
    if until_ctrl_c {
        crate::error::stderr_line("abperf: recording until Ctrl-C (SIGINT); the capture is kept");
    }
    // Other processes' CPU use, load and pressure over the recording, not in a sleep after it.
    let sampling = crate::doctor::Sampling::start();
    let rec = match trace::record(opts) {
        Ok(r) => r,
        Err(e) => {
            if let Some(ab) = e.downcast_ref::<trace::Aborted>() {
                crate::error::stderr_line(&format!("abperf: {ab}"));
                return Ok((128 + ab.0, None));
            }
            return Err(e);
        }
    };
    for s in &rec.skipped_events {
        crate::error::stderr_line(&format!(
            "abperf: note: event {s} does not exist on this kernel; not recorded"
        ));
    }
    if let Some(s) = rec.stopped_by_signal {
        crate::error::stderr_line(&format!(
            "abperf: {}: recording stopped; keeping the capture (a second signal aborts)",
            trace::workload::signal_name(s)
        ));
    }
    let dec = rec.raw.analyze(&[Spec::Standard])?;
    if let Some(p) = &a.keep_raw {
        rec.raw.write(p)?;
    }
    let event_cost = event_cost(store, a.no_cost)?;
    if trace::workload::Stop::aborted() {
        let s = trace::workload::Stop::first().unwrap_or(libc::SIGINT);
        crate::error::stderr_line(&format!("abperf: {}", trace::Aborted(s)));
        return Ok((128 + s, None));
    }
    let info = CaptureInfo {
        id: None,
        source: "record".into(),
        events: rec.events.clone(),
        clock: rec.raw.meta.clock.clone(),
        tsc_hz: calibration.join().ok().flatten(),
        wall_ns: Some(rec.wall_ns),
        span_ticks: dec.span,
        event_count: dec.events,
        lost: lost_from_raw(&rec.raw.meta, &dec),
        command: a.command.clone(),
        raw_path: a.keep_raw.as_ref().map(|p| absolute(p)),
        text_path: None,
        skipped_lines: 0,
        exit_code: rec.exit_code,
        scope: rec.scope.clone(),
        stop: Some(rec.stop.clone()),
        cpu_ns: rec.cpu_ns,
        event_cost,
    };
    let mut name = a.name.clone().unwrap_or_else(|| {
        if a.command.is_empty() {
            "trace".into()
        } else {
            format!("trace: {}", shell_words::join(&a.command))
        }
    });
    if a.captures > 1 {
        name += &format!(" (capture {k} of {})", a.captures);
    }
    let id = store.save_capture(
        &name,
        &argv(),
        crate::doctor::merged(
            crate::doctor::environment_unsampled(),
            &sampling.finish("during the recording"),
        ),
        &info,
        &dec.tables,
    )?;
    if !a.quiet {
        print_tables(store, id)?;
    }
    crate::error::stderr_line(&format!(
        "abperf: stored capture {id} in {}",
        store.path().display()
    ));
    Ok((record_status(&rec, until_ctrl_c, id), Some(id)))
}

/// What to record, from the arguments, each checked: filters, --duration, --buffer-kib, --pid,
/// and whose events (-a, --pid, --cgroup, else the command's).
fn record_options(a: &RecordArgs) -> Result<RecordOptions> {
    let filters = a
        .filter
        .iter()
        .map(|f| trace::parse_filter(f))
        .collect::<Result<Vec<_>>>()?;
    let duration = a
        .duration
        .map(|d| crate::commands::positive_seconds("--duration", d))
        .transpose()?;
    if a.buffer_kib == 0 {
        return Err(crate::error::usage("--buffer-kib must be at least 1"));
    }
    if let Some(p) = a.pid.iter().find(|p| **p <= 0) {
        return Err(crate::error::usage(format!(
            "--pid {p}: expected a process id (a positive number)"
        )));
    }
    let scope = if a.system_wide {
        trace::ScopeRequest::SystemWide
    } else if !a.pid.is_empty() {
        trace::ScopeRequest::Pids(a.pid.clone())
    } else if let Some(c) = &a.cgroup {
        trace::ScopeRequest::Cgroup(c.clone())
    } else {
        trace::ScopeRequest::Workload
    };
    Ok(RecordOptions {
        events: a.events.clone(),
        filters,
        buffer_kib: a.buffer_kib,
        duration,
        command: a.command.clone(),
        save_text: a.save_text.clone(),
        scope,
    })
}

/// The per-event cost of this machine: measured once (unless --no-cost, or aborted), stored,
/// used by every capture.
fn event_cost(store: &mut Store, no_cost: bool) -> Result<Option<crate::model::trace::EventCost>> {
    let machine = trace::cost::machine_key();
    let mut event_cost = store.event_cost(&machine)?;
    if event_cost.is_none() && !no_cost && !trace::workload::Stop::aborted() {
        match trace::cost::measure() {
            Ok(c) => {
                store.set_event_cost(&machine, &c)?;
                event_cost = Some(c);
            }
            Err(e) => crate::error::stderr_line(&format!(
                "abperf: note: the tracing cost could not be measured: {e:#}"
            )),
        }
    }
    Ok(event_cost)
}

/// The exit status of a stored recording: 128 + the signal that stopped it (0 for the Ctrl-C
/// that ends a recording without command or duration), 1 when the command failed, else 0.
fn record_status(rec: &trace::Recorded, until_ctrl_c: bool, id: i64) -> i32 {
    if let Some(s) = rec.stopped_by_signal {
        // Ctrl-C is how a recording without a command or duration is meant to end
        if until_ctrl_c && s == libc::SIGINT {
            return 0;
        }
        return 128 + s;
    }
    if let Some(sig) = rec.signal {
        crate::error::stderr_line(&format!(
            "abperf: the command was killed by {}",
            trace::workload::signal_name(sig)
        ));
        return 1;
    }
    match rec.exit_code {
        Some(0) | None => 0,
        Some(c) => {
            crate::error::stderr_line(&format!(
                "abperf: the command exited with status {c}; capture {id} is stored but marked failed"
            ));
            1
        }
    }
}

fn absolute(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

fn is_raw(path: &Path) -> Result<bool> {
    use std::io::Read;
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut m = [0u8; 17];
    let n = f.read(&mut m)?;
    Ok(n == 17 && &m == b"ABPERF-TRACE-RAW1")
}

/// Analyse a text trace, streamed from the file (two passes; the events are not kept).
fn analyze_text(path: &Path, lenient: bool, specs: &[Spec]) -> Result<(text::TextCapture, Tables)> {
    let opts = TextOptions {
        lenient,
        ..trace::local_text_hints()
    };
    let (cap, an) = text::stream(
        path,
        &opts,
        |schema| trace::tables::Analyzer::new(schema, specs),
        |an, e| an.event(e),
    )
    .map_err(|e| match e {
        text::StreamError::Io(..) => anyhow::anyhow!("{e}"),
        _ => crate::error::usage(e.to_string()),
    })?;
    let t = an.finish(&cap.schema);
    Ok((cap, t))
}

fn import(a: ImportArgs) -> Result<i32> {
    let mut store = Store::open_to_write(&a.db.location()?)?;
    if let Some(m) = a.tsc_mhz
        && !(m.is_finite() && m > 0.0)
    {
        return Err(crate::error::usage(format!(
            "--tsc-mhz {m}: expected a positive frequency in MHz"
        )));
    }
    // The TSC is calibrated (0.1 s, asleep) on a thread while the capture is read, and only for
    // a raw capture recorded in this very boot (its header names the boot id): a capture from
    // another machine or boot, or a text capture (which records neither), keeps its clock's
    // units unless --tsc-mhz gives the frequency.
    let raw = is_raw(&a.file)?;
    let this_boot = raw
        && a.tsc_mhz.is_none()
        && RawCapture::read_meta(&a.file)
            .ok()
            .and_then(|m| m.boot_id)
            .is_some_and(|b| Some(b) == trace::record::boot_id());
    let calibration =
        this_boot.then(|| std::thread::spawn(|| trace::tsc::calibrate(Duration::from_millis(100))));
    let (mut info, tables) = if raw {
        import_raw(&a)?
    } else {
        import_text(&a)?
    };
    info.tsc_hz = a
        .tsc_mhz
        .map(|m| m * 1e6)
        .or_else(|| calibration.and_then(|h| h.join().ok().flatten()));
    let tsc = tsc_note(&a, &info, raw, this_boot);
    let name = a
        .name
        .clone()
        .unwrap_or_else(|| format!("trace import: {}", a.file.display()));
    let environment = serde_json::json!({
        "imported": true,
        "note": if this_boot {
            "recorded in this boot of this machine (the raw capture's boot id)"
        } else {
            "captured elsewhere; the capturing machine is not recorded"
        },
        "tsc": tsc,
    });
    let id = store.save_capture(&name, &argv(), environment, &info, &tables)?;
    if !a.quiet {
        print_tables(&store, id)?;
    }
    crate::error::stderr_line(&format!(
        "abperf: stored capture {id} in {}",
        store.path().display()
    ));
    Ok(0)
}

/// A raw capture (`record --keep-raw`), streamed: decoding errors name the page and byte; the
/// file is named here.
fn import_raw(a: &ImportArgs) -> Result<(CaptureInfo, Tables)> {
    let (meta, dec) = RawCapture::analyze_file(&a.file, &[Spec::Standard])
        .with_context(|| a.file.display().to_string())?;
    let info = CaptureInfo {
        source: "import".into(),
        events: meta
            .formats
            .iter()
            .filter_map(|(s, t)| {
                trace::format::parse_event_format(s, t)
                    .ok()
                    .map(|f| f.full_name())
            })
            .collect(),
        clock: meta.clock.clone(),
        tsc_hz: None, // set by the caller
        span_ticks: dec.span,
        event_count: dec.events,
        lost: lost_from_raw(&meta, &dec),
        raw_path: Some(absolute(&a.file)),
        ..Default::default()
    };
    Ok((info, dec.tables))
}

/// An ftrace text file; empty is a usage error, skipped lines (--lenient) are reported.
fn import_text(a: &ImportArgs) -> Result<(CaptureInfo, Tables)> {
    let (cap, t) = analyze_text(&a.file, a.lenient, &[Spec::Standard])?;
    if cap.is_empty() {
        return Err(crate::error::usage(format!(
            "{}: no trace events found",
            a.file.display()
        )));
    }
    let clock = match cap.clock {
        // seconds with a fraction: ns (whatever the clock was)
        Some(TextClock::Seconds) => "text-seconds".to_string(),
        _ => a.clock.clone(),
    };
    let cpus = cap.cpus();
    let info = CaptureInfo {
        source: "import".into(),
        events: cap.schema.types.iter().map(|t| t.full_name()).collect(),
        clock,
        tsc_hz: None, // set by the caller
        span_ticks: cap.span(),
        event_count: cap.len() as u64,
        lost: (0..cpus.max(cap.lost.keys().map(|c| c + 1).max().unwrap_or(0)))
            .map(|c| LostCpu {
                cpu: c,
                stats: None,
                counted: cap.lost.get(&c).copied().unwrap_or(0),
                flagged: 0,
            })
            .collect(),
        text_path: Some(absolute(&a.file)),
        skipped_lines: cap.skipped,
        ..Default::default()
    };
    if let Some((line, msg)) = &cap.first_bad_line {
        crate::error::stderr_line(&format!(
            "abperf: {} lines skipped (--lenient); first: {}: line {line}: {msg}",
            cap.skipped,
            a.file.display()
        ));
    }
    Ok((info, t))
}

/// Where the TSC frequency of an imported capture came from, in words (stored with it); when
/// it is unknown, a note on stderr too.
fn tsc_note(a: &ImportArgs, info: &CaptureInfo, raw: bool, this_boot: bool) -> String {
    match (a.tsc_mhz, this_boot, info.tsc_hz) {
        (Some(_), ..) => "from --tsc-mhz".to_string(),
        (None, true, Some(_)) => {
            "calibrated: the capture was recorded in this boot of this machine".to_string()
        }
        _ => {
            let units = if crate::model::trace::Units::for_clock(&info.clock, None).ticks_are_cycles
            {
                "cycles (not converted to ns)"
            } else {
                "ns (not converted to cycles)"
            };
            let why = if this_boot {
                "no TSC on this machine"
            } else if raw {
                "the capture is not from this boot of this machine"
            } else {
                "a text capture does not say which machine recorded it"
            };
            let note = format!(
                "not calibrated ({why}): times are in the capture's clock units, {units}; --tsc-mhz gives the frequency"
            );
            crate::error::stderr_line(&format!("abperf: TSC {note}"));
            note
        }
    }
}

fn report(a: ReportArgs) -> Result<i32> {
    let store = Store::open_to_read(&a.db.location()?)?;
    let id = super::lookup::experiment_id(&store, &a.id)?;
    let (info, stored) = store.load_capture(id)?;
    let custom = match (a.table, &a.begin, &a.end, &a.event) {
        (Some(TableKind::Pair) | None, Some(b), Some(e), None) => Some(Spec::Pair {
            begin: b.clone(),
            end: e.clone(),
            key: a.key.clone(),
        }),
        (_, Some(_), None, _) | (_, None, Some(_), _) => {
            return Err(crate::error::usage("--begin and --end go together"));
        }
        (Some(TableKind::Count) | None, None, None, Some(ev)) => {
            let key = a.key.clone().ok_or_else(|| {
                crate::error::usage("--event needs --key FIELD (the field to count by)")
            })?;
            Some(Spec::Count {
                event: ev.clone(),
                key,
            })
        }
        (None | Some(_), None, None, None) => {
            if a.key.is_some() {
                return Err(crate::error::usage(
                    "--key goes with --begin/--end or --event",
                ));
            }
            None
        }
        _ => {
            return Err(crate::error::usage(
                "--begin/--end go with --table pair, --event with --table count",
            ));
        }
    };
    let tables = match &custom {
        None => stored,
        Some(spec) => {
            let specs = [spec.clone()];
            if let Some(raw_path) = info.raw_path.as_deref() {
                let mut t = RawCapture::analyze_file(Path::new(raw_path), &specs)
                    .with_context(|| format!("capture {id}: re-reading its raw pages {raw_path}"))?
                    .1
                    .tables;
                t.events = stored.events.clone();
                t
            } else if let Some(txt) = info.text_path.as_deref() {
                analyze_text(Path::new(txt), info.skipped_lines > 0, &specs)?.1
            } else {
                return Err(crate::error::usage(format!(
                    "capture {id} has no raw pages to re-analyse; record with --keep-raw FILE to compute other pairs or counts"
                )));
            }
        }
    };
    let which = match (a.table, &custom) {
        (_, Some(Spec::Pair { .. })) => Which::Pair,
        (_, Some(Spec::Count { .. })) => Which::Count,
        (Some(TableKind::Tlb), _) => Which::Tlb,
        (Some(TableKind::Fpu), _) => Which::Fpu,
        (Some(TableKind::Pair), _) => Which::Pair,
        (Some(TableKind::Count), _) => Which::Count,
        (None, _) => Which::All,
    };
    let mut r = super::output::load(&store, id, View::Trace(which))?;
    r.trace = Some(crate::report::TraceSection { info, tables });
    super::output::write(&a.format.render(&r)?, None)?;
    Ok(0)
}

/// The stored capture `id`'s tables, as text.
fn print_tables(store: &Store, id: i64) -> Result<()> {
    let r = super::output::load(store, id, View::Trace(Which::All))?;
    super::output::write(&Format::Text.render(&r)?, None)
}

/// One side's captures, from `ID[,ID...]`.
fn load_side(store: &Store, ids: &str) -> Result<Vec<(CaptureInfo, Tables)>> {
    ids.split(',')
        .map(|id| {
            let id = super::lookup::experiment_id(store, id.trim())?;
            store.load_capture(id)
        })
        .collect()
}

/// One capture per side: the within-capture table as a description, no call. Several: the
/// comparison over captures (the capture is the unit).
fn compare(a: CompareArgs) -> Result<i32> {
    let store = Store::open_to_read(&a.db.location()?)?;
    let (sa, sb) = (load_side(&store, &a.id_a)?, load_side(&store, &a.id_b)?);
    let text = if let ([(ca, ta)], [(cb, tb)]) = (&sa[..], &sb[..]) {
        crate::report::trace_compare::compare((ca, ta), (cb, tb))
    } else {
        crate::report::trace_captures::compare_captures(&sa, &sb)
    };
    super::output::write(&text, None)?;
    Ok(0)
}
