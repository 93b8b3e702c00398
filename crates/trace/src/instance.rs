//! Our own tracefs instance (`instances/abperf-<random hex>`): clock, buffer size, events,
//! filters and the task scope (`set_event_pid`, `options/event-fork`) are set there only, so the
//! global tracing state (tracing_on, set_event, current_tracer, trace_clock) is never touched.
//! The instance is removed by [`Instance::remove`] or, on any error or panic, by its `Drop`; an
//! ownership marker (`measure::trace_owner`) lets the next abperf remove it after a `kill -9`
//! ([`clean_leftovers`]). When tracefs is not mounted anywhere, it is mounted privately in a
//! temporary directory and unmounted again afterwards, so the system's mounts stay as they
//! were.

use super::format::{
    EventFormat, EventHeader, PageHeader, parse_event_format, parse_header_event, parse_header_page,
};
use anyhow::{Context, Result, anyhow};
use std::fs;
use std::io::Write;
use std::path::PathBuf;

use abperf_measure::trace_owner::{self, Claim};

pub use abperf_measure::tracefs::{Tracefs, read_whole};

/// What the trace module reads from tracefs: the ring buffer's headers, event formats, the
/// events that exist, and the global state a capture must leave alone.
pub trait Events {
    fn page_header(&self) -> Result<PageHeader>;
    fn event_header(&self) -> Result<EventHeader>;
    /// Format of `system:name`, with the raw text (kept in raw captures).
    fn event_format(&self, full: &str) -> Result<(EventFormat, String)>;
    /// Expand `sys:name`, `sys:*` and `sys` into event names that exist.
    fn expand(&self, spec: &str) -> Result<Vec<String>>;
    /// The global state a capture must leave alone (for checks and tests).
    fn global_state(&self) -> Result<String>;
}

impl Events for Tracefs {
    fn page_header(&self) -> Result<PageHeader> {
        parse_header_page(&self.read("events/header_page")?).map_err(|e| anyhow!("{e}"))
    }
    fn event_header(&self) -> Result<EventHeader> {
        parse_header_event(&self.read("events/header_event")?).map_err(|e| anyhow!("{e}"))
    }

    /// Format of `system:name`, with the raw text (kept in raw captures).
    fn event_format(&self, full: &str) -> Result<(EventFormat, String)> {
        let (sys, name) = full
            .split_once(':')
            .ok_or_else(|| anyhow!("event {full:?}: expected SYSTEM:NAME"))?;
        let text = self
            .read(&format!("events/{sys}/{name}/format"))
            .map_err(|_| {
                abperf_model::error::usage(format!(
                    "event {full:?} does not exist in {}/events",
                    self.root.display()
                ))
            })?;
        let f = parse_event_format(sys, &text).map_err(|e| anyhow!("{e}"))?;
        Ok((f, text))
    }

    /// Expand `sys:name`, `sys:*` and `sys` into event names that exist.
    fn expand(&self, spec: &str) -> Result<Vec<String>> {
        let (sys, name) = spec.split_once(':').unwrap_or((spec, "*"));
        let dir = self.root.join("events").join(sys);
        if !dir.is_dir() {
            return Err(abperf_model::error::usage(format!(
                "-e {spec}: no event system {sys:?} in {}/events",
                self.root.display()
            )));
        }
        if name != "*" {
            if !dir.join(name).join("format").exists() {
                return Err(abperf_model::error::usage(format!(
                    "-e {spec}: no event {name:?} in system {sys:?}"
                )));
            }
            return Ok(vec![format!("{sys}:{name}")]);
        }
        let mut out: Vec<String> = fs::read_dir(&dir)?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("format").exists())
            .map(|e| format!("{sys}:{}", e.file_name().to_string_lossy()))
            .collect();
        out.sort();
        Ok(out)
    }

    /// The global state a capture must leave alone (for checks and tests).
    fn global_state(&self) -> Result<String> {
        let mut s = String::new();
        for f in [
            "tracing_on",
            "current_tracer",
            "trace_clock",
            "set_event",
            "buffer_size_kb",
        ] {
            s.push_str(&format!("{f}: {}\n", self.read(f)?.trim()));
        }
        Ok(s)
    }
}

/// Options for a new instance.
#[derive(Debug, Clone)]
pub struct InstanceOptions {
    pub buffer_kib: u64,
    /// Preferred clocks in order; the first one offered is used.
    pub clocks: Vec<String>,
}

impl Default for InstanceOptions {
    fn default() -> Self {
        let clocks = if cfg!(target_arch = "x86_64") {
            vec!["x86-tsc".into(), "mono".into()]
        } else {
            vec!["mono".into()]
        };
        InstanceOptions {
            buffer_kib: 8192,
            clocks,
        }
    }
}

/// A tracefs instance that we created and will remove.
#[derive(Debug)]
pub struct Instance {
    pub dir: PathBuf,
    pub name: String,
    pub clock: String,
    removed: bool,
    // dropped after the instance directory is removed (field order): the marker, then the
    // (possibly private) mount
    claim: Option<Claim>,
    pub tracefs: Tracefs,
}

/// Remove what abperf processes that died (kill -9) left in tracefs: their instances (still
/// tracing), private mounts and markers. Returns one message per removal; leftovers whose
/// owner cannot be judged from here (another PID namespace, no marker) are left alone.
pub fn clean_leftovers() -> Vec<String> {
    let mut out = Vec::new();
    for l in trace_owner::leftovers(&trace_owner::REAL) {
        if !l.removable() {
            continue;
        }
        match trace_owner::remove(&l) {
            Ok(done) => out.push(format!("{}: {done}", l.describe())),
            Err(e) => out.push(format!("could not clean up {}: {e:#}", l.describe())),
        }
    }
    out
}

impl Instance {
    pub fn create(tracefs: Tracefs, opts: &InstanceOptions) -> Result<Instance> {
        let name = trace_owner::random_name();
        let dir = tracefs.root.join("instances").join(&name);
        let claim = Claim::new("instance", &dir, tracefs.private_mount())?;
        fs::create_dir(&dir)
            .with_context(|| format!("creating tracefs instance {}", dir.display()))?;
        let mut inst = Instance {
            dir,
            name,
            clock: String::new(),
            removed: false,
            claim: Some(claim),
            tracefs,
        };
        // nothing is traced until we say so
        inst.write("tracing_on", "0")?;
        let offered = inst.read("trace_clock")?;
        let offered: Vec<String> = offered
            .split_whitespace()
            .map(|c| c.trim_matches(['[', ']']).to_string())
            .collect();
        let clock = opts
            .clocks
            .iter()
            .find(|c| offered.contains(c))
            .cloned()
            .ok_or_else(|| {
                anyhow!(
                    "none of the clocks {:?} is offered (trace_clock: {offered:?})",
                    opts.clocks
                )
            })?;
        inst.write("trace_clock", &clock)?;
        inst.clock = clock;
        if opts.buffer_kib == 0 {
            return Err(abperf_model::error::usage(
                "--buffer-kib must be at least 1",
            ));
        }
        inst.write("buffer_size_kb", &opts.buffer_kib.to_string())?;
        Ok(inst)
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }
    pub fn read(&self, rel: &str) -> Result<String> {
        read_whole(&self.path(rel))
    }
    pub fn write(&self, rel: &str, v: &str) -> Result<()> {
        let p = self.path(rel);
        fs::write(&p, v).with_context(|| format!("writing {v:?} to {}", p.display()))
    }

    pub fn enable(&self, event: &str) -> Result<()> {
        self.enable_to(event, true)
    }

    /// Enable or disable `system:name` in this instance.
    pub fn enable_to(&self, event: &str, on: bool) -> Result<()> {
        let (sys, name) = event
            .split_once(':')
            .ok_or_else(|| anyhow!("event {event:?}: expected SYSTEM:NAME"))?;
        self.write(
            &format!("events/{sys}/{name}/enable"),
            if on { "1" } else { "0" },
        )
    }

    /// Set an event filter; a rejected expression is a usage error quoting the kernel's reason.
    pub fn filter(&self, event: &str, expr: &str) -> Result<()> {
        let (sys, name) = event
            .split_once(':')
            .ok_or_else(|| anyhow!("event {event:?}: expected SYSTEM:NAME"))?;
        let p = self.path(&format!("events/{sys}/{name}/filter"));
        if let Err(e) = fs::write(&p, expr) {
            let log = self.read("error_log").unwrap_or_default();
            let why = log
                .lines()
                .rev()
                .take(3)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join(" | ");
            return Err(abperf_model::error::usage(format!(
                "--filter {event}:{expr}: the kernel rejected the filter ({e}){}",
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {why}")
                }
            )));
        }
        Ok(())
    }

    /// Record only these tasks (thread ids) and, with event-fork, every task they start.
    /// `append` adds to the list instead of replacing it. Errors when this kernel's instances
    /// have no `set_event_pid` or `options/event-fork`.
    pub fn scope_tasks(&self, tids: &[i32], append: bool) -> Result<()> {
        for f in ["set_event_pid", "options/event-fork"] {
            if !self.path(f).exists() {
                return Err(abperf_model::error::usage(format!(
                    "this kernel's tracefs instances have no {f} (needed to record only the workload's tasks): use --system-wide"
                )));
            }
        }
        if !append {
            self.write("options/event-fork", "1")?;
        }
        if tids.is_empty() {
            return Ok(());
        }
        let text: String = tids.iter().map(|t| format!("{t} ")).collect();
        let p = self.path("set_event_pid");
        let mut f = fs::OpenOptions::new()
            .write(true)
            .truncate(!append)
            .append(append)
            .open(&p)
            .with_context(|| format!("opening {}", p.display()))?;
        match f.write_all(text.trim_end().as_bytes()) {
            Ok(()) => Ok(()),
            // a task that exited between listing and writing: ESRCH is not an error worth
            // failing for when appending
            Err(e) if append && e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
            Err(e) => Err(anyhow!("writing pids to {}: {e}", p.display())),
        }
    }

    /// The tasks `set_event_pid` holds now.
    pub fn scoped_tasks(&self) -> Vec<i32> {
        self.read("set_event_pid")
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect()
    }

    pub fn tracing_on(&self, on: bool) -> Result<()> {
        self.write("tracing_on", if on { "1" } else { "0" })
    }

    /// Sub-buffer (page) size in bytes for trace_pipe_raw reads.
    pub fn page_size(&self, header: &PageHeader) -> usize {
        self.read("buffer_subbuf_size_kb")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .map(|k| k * 1024)
            .unwrap_or(header.data_offset + header.data_size)
    }

    /// CPUs that have a per_cpu directory.
    pub fn cpus(&self) -> Result<Vec<u32>> {
        let mut v: Vec<u32> = fs::read_dir(self.path("per_cpu"))?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                e.file_name()
                    .to_string_lossy()
                    .strip_prefix("cpu")
                    .and_then(|n| n.parse().ok())
            })
            .collect();
        v.sort();
        Ok(v)
    }

    /// Events lost on a CPU according to its stats file (overrun + dropped + commit overrun).
    pub fn lost_stats(&self, cpu: u32) -> Result<u64> {
        let s = self.read(&format!("per_cpu/cpu{cpu}/stats"))?;
        let mut n = 0;
        for l in s.lines() {
            if let Some((k, v)) = l.split_once(':')
                && matches!(k.trim(), "overrun" | "dropped events" | "commit overrun")
            {
                n += v.trim().parse::<u64>().unwrap_or(0);
            }
        }
        Ok(n)
    }

    /// Stop tracing and remove the instance. Files opened in it must be closed first.
    pub fn remove(mut self) -> Result<()> {
        self.do_remove()
    }

    fn do_remove(&mut self) -> Result<()> {
        if self.removed {
            return Ok(());
        }
        let _ = self.tracing_on(false);
        // rmdir fails with EBUSY while a reader still has a file open: retry briefly
        let mut last = None;
        for _ in 0..50 {
            match fs::remove_dir(&self.dir) {
                Ok(()) => {
                    self.removed = true;
                    self.claim.take();
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // keep the marker: the instance outlives us, and the next abperf (or doctor --fix)
        // removes it once we are gone
        if let Some(c) = self.claim.take() {
            std::mem::forget(c);
        }
        Err(anyhow!(
            "removing tracefs instance {}: {}",
            self.dir.display(),
            last.unwrap()
        ))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Err(e) = self.do_remove() {
            abperf_model::error::stderr_line(&format!(
                "abperf: warning: {e:#}; remove it with: rmdir {}",
                self.dir.display()
            ));
        }
    }
}
