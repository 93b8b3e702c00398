//! Our own tracefs instance (`instances/abperf-<pid>`): clock, buffer size, events and filters
//! are set there only, so the global tracing state (tracing_on, set_event, current_tracer,
//! trace_clock) is never touched. The instance is removed by [`Instance::remove`] or, on any
//! error or panic, by its `Drop`. When tracefs is not mounted anywhere, it is mounted privately
//! in a temporary directory and unmounted again afterwards, so the system's mounts stay as they
//! were.

use super::format::{
    EventFormat, EventHeader, PageHeader, parse_event_format, parse_header_event, parse_header_page,
};
use anyhow::{Context, Result, anyhow, bail};
use std::ffi::CString;
use std::fs;
use std::path::{Path, PathBuf};

/// A tracefs mount point, possibly our private one.
#[derive(Debug)]
pub struct Tracefs {
    pub root: PathBuf,
    private: bool,
}

impl Tracefs {
    /// Find a mounted tracefs, or mount one privately.
    pub fn open() -> Result<Tracefs> {
        if let Some(root) = find_mounted() {
            return Ok(Tracefs {
                root,
                private: false,
            });
        }
        let dir = std::env::temp_dir().join(format!("abperf-tracefs.{}", std::process::id()));
        fs::create_dir_all(&dir)
            .with_context(|| format!("creating mount point {}", dir.display()))?;
        let target = CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
        let fstype = CString::new("tracefs").unwrap();
        let src = CString::new("nodev").unwrap();
        // SAFETY: valid NUL-terminated strings; no data argument.
        let rc = unsafe {
            libc::mount(
                src.as_ptr(),
                target.as_ptr(),
                fstype.as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            let _ = fs::remove_dir(&dir);
            bail!(
                "tracefs is not mounted and mounting it on {} failed: {e} (are you root? is CONFIG_TRACING set?)",
                dir.display()
            );
        }
        Ok(Tracefs {
            root: dir,
            private: true,
        })
    }

    pub fn read(&self, rel: &str) -> Result<String> {
        read_whole(&self.root.join(rel))
    }

    pub fn page_header(&self) -> Result<PageHeader> {
        parse_header_page(&self.read("events/header_page")?).map_err(|e| anyhow!("{e}"))
    }
    pub fn event_header(&self) -> Result<EventHeader> {
        parse_header_event(&self.read("events/header_event")?).map_err(|e| anyhow!("{e}"))
    }

    /// Format of `system:name`, with the raw text (kept in raw captures).
    pub fn event_format(&self, full: &str) -> Result<(EventFormat, String)> {
        let (sys, name) = full
            .split_once(':')
            .ok_or_else(|| anyhow!("event {full:?}: expected SYSTEM:NAME"))?;
        let text = self
            .read(&format!("events/{sys}/{name}/format"))
            .map_err(|_| {
                crate::error::usage(format!(
                    "event {full:?} does not exist in {}/events",
                    self.root.display()
                ))
            })?;
        let f = parse_event_format(sys, &text).map_err(|e| anyhow!("{e}"))?;
        Ok((f, text))
    }

    /// Expand `sys:name`, `sys:*` and `sys` into event names that exist.
    pub fn expand(&self, spec: &str) -> Result<Vec<String>> {
        let (sys, name) = spec.split_once(':').unwrap_or((spec, "*"));
        let dir = self.root.join("events").join(sys);
        if !dir.is_dir() {
            return Err(crate::error::usage(format!(
                "-e {spec}: no event system {sys:?} in {}/events",
                self.root.display()
            )));
        }
        if name != "*" {
            if !dir.join(name).join("format").exists() {
                return Err(crate::error::usage(format!(
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
    pub fn global_state(&self) -> Result<String> {
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

impl Drop for Tracefs {
    fn drop(&mut self) {
        if self.private {
            let target = CString::new(self.root.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: valid path string.
            unsafe { libc::umount2(target.as_ptr(), 0) };
            let _ = fs::remove_dir(&self.root);
        }
    }
}

/// Read a tracefs file with one large read first: some files (events/header_page on 6.18)
/// return only the first chunk and then EOF to small reads, as `read_to_string` starts with.
pub fn read_whole(p: &Path) -> Result<String> {
    use std::io::Read;
    let mut f = fs::File::open(p).with_context(|| format!("reading {}", p.display()))?;
    let mut buf = vec![0u8; 1 << 18];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(anyhow!("reading {}: {e}", p.display())),
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|_| anyhow!("{}: not UTF-8 text", p.display()))
}

fn find_mounted() -> Option<PathBuf> {
    let m = fs::read_to_string("/proc/self/mounts").ok()?;
    let mut found: Vec<PathBuf> = m
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let _src = it.next()?;
            let dir = it.next()?;
            let ty = it.next()?;
            (ty == "tracefs").then(|| PathBuf::from(dir.replace("\\040", " ")))
        })
        .filter(|p| p.join("instances").is_dir())
        .collect();
    found.sort_by_key(|p| p != Path::new("/sys/kernel/tracing"));
    found.into_iter().next()
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
    // dropped after the instance directory is removed (field order)
    pub tracefs: Tracefs,
}

impl Instance {
    pub fn create(tracefs: Tracefs, opts: &InstanceOptions) -> Result<Instance> {
        let name = format!("abperf-{}", std::process::id());
        let dir = tracefs.root.join("instances").join(&name);
        fs::create_dir(&dir)
            .with_context(|| format!("creating tracefs instance {}", dir.display()))?;
        let mut inst = Instance {
            dir,
            name,
            clock: String::new(),
            removed: false,
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
            return Err(crate::error::usage("--buffer-kib must be at least 1"));
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
        let (sys, name) = event
            .split_once(':')
            .ok_or_else(|| anyhow!("event {event:?}: expected SYSTEM:NAME"))?;
        self.write(&format!("events/{sys}/{name}/enable"), "1")
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
            return Err(crate::error::usage(format!(
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
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
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
            eprintln!(
                "abperf: warning: {e:#}; remove it with: rmdir {}",
                self.dir.display()
            );
        }
    }
}
