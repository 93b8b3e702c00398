//! Per-run event counts with perf_event_open(2): software events, tracepoints (`subsys:event`),
//! hardware and hardware-cache events, `rNNNN` raw events. Counters are opened on the workload's
//! pid before it execs (`enable_on_exec`) with `inherit`, so they count the workload and every
//! child it starts, and nothing of abperf itself.
//!
//! The attribute layout and constants are those of include/uapi/linux/perf_event.h.

use abperf_model::Metric;
use std::fs;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_TYPE_HW_CACHE: u32 = 3;
const PERF_TYPE_RAW: u32 = 4;

const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_ENABLE_ON_EXEC: u64 = 1 << 12;

const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;

/// `struct perf_event_attr` up to `config3` (PERF_ATTR_SIZE_VER8, 136 bytes). Older kernels
/// accept a larger size as long as the fields they do not know are zero.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
    aux_sample_size: u32,
    reserved_3: u32,
    sig_data: u64,
    config3: u64,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 136);

/// A parsed event: its canonical name (the stored metric name), unit and perf type/config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSpec {
    pub name: String,
    pub unit: &'static str,
    type_: u32,
    config: u64,
}

impl EventSpec {
    /// Hardware events are the ones a VM typically cannot count.
    pub fn is_hardware(&self) -> bool {
        matches!(
            self.type_,
            PERF_TYPE_HARDWARE | PERF_TYPE_HW_CACHE | PERF_TYPE_RAW
        )
    }
}

const SOFTWARE: &[(&[&str], u64, &str)] = &[
    (&["cpu-clock"], 0, "ns"),
    (&["task-clock"], 1, "ns"),
    (&["page-faults", "faults"], 2, "count"),
    (&["context-switches", "cs"], 3, "count"),
    (&["cpu-migrations", "migrations"], 4, "count"),
    (&["minor-faults"], 5, "count"),
    (&["major-faults"], 6, "count"),
    (&["alignment-faults"], 7, "count"),
    (&["emulation-faults"], 8, "count"),
];

const HARDWARE: &[(&[&str], u64)] = &[
    (&["cycles", "cpu-cycles"], 0),
    (&["instructions"], 1),
    (&["cache-references"], 2),
    (&["cache-misses"], 3),
    (&["branches", "branch-instructions"], 4),
    (&["branch-misses"], 5),
    (&["bus-cycles"], 6),
    (&["stalled-cycles-frontend"], 7),
    (&["stalled-cycles-backend"], 8),
    (&["ref-cycles"], 9),
];

/// perf's hardware-cache names: cache id, operation, result.
const CACHES: &[(&str, u64)] = &[
    ("L1-dcache", 0),
    ("L1-icache", 1),
    ("LLC", 2),
    ("dTLB", 3),
    ("iTLB", 4),
    ("branch", 5),
    ("node", 6),
];

fn parse_cache(name: &str) -> Option<u64> {
    for (prefix, id) in CACHES {
        let Some(rest) = name.strip_prefix(prefix).and_then(|r| r.strip_prefix('-')) else {
            continue;
        };
        let (op, result) = match rest {
            "loads" => (0, 0),
            "load-misses" => (0, 1),
            "stores" => (1, 0),
            "store-misses" => (1, 1),
            "prefetches" => (2, 0),
            "prefetch-misses" => (2, 1),
            _ => return None,
        };
        return Some(id | (op << 8) | (result << 16));
    }
    None
}

/// The perf type id of tracepoint `subsys:event`, read from tracefs (found where it is mounted,
/// else mounted privately for the look-up and unmounted again, by `measure::tracefs::Tracefs`).
fn tracepoint_id(subsys: &str, event: &str) -> Result<u64, String> {
    let valid = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    if !valid(subsys) || !valid(event) {
        return Err(format!(
            "'{subsys}:{event}': a tracepoint is subsys:event, letters, digits and '_'"
        ));
    }
    let tracefs = crate::tracefs::Tracefs::open().map_err(|e| format!("{e:#}"))?;
    let rel = format!("events/{subsys}/{event}/id");
    let text = tracefs.read(&rel).map_err(|_| {
        format!(
            "no tracepoint {subsys}:{event} (no {rel} under {})",
            tracefs.root.display()
        )
    })?;
    text.trim()
        .parse()
        .map_err(|_| format!("{rel} does not hold a number"))
}

/// Parse one event name as perf stat spells it.
pub fn parse_event(name: &str) -> Result<EventSpec, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("empty event name".into());
    }
    for (names, config, unit) in SOFTWARE {
        if names.contains(&name) {
            return Ok(EventSpec {
                name: names[0].into(),
                unit,
                type_: PERF_TYPE_SOFTWARE,
                config: *config,
            });
        }
    }
    for (names, config) in HARDWARE {
        if names.contains(&name) {
            return Ok(EventSpec {
                name: names[0].into(),
                unit: "count",
                type_: PERF_TYPE_HARDWARE,
                config: *config,
            });
        }
    }
    if let Some(config) = parse_cache(name) {
        return Ok(EventSpec {
            name: name.into(),
            unit: "count",
            type_: PERF_TYPE_HW_CACHE,
            config,
        });
    }
    if let Some(hex) = name.strip_prefix('r')
        && !hex.is_empty()
        && let Ok(config) = u64::from_str_radix(hex, 16)
    {
        return Ok(EventSpec {
            name: name.into(),
            unit: "count",
            type_: PERF_TYPE_RAW,
            config,
        });
    }
    if let Some((subsys, event)) = name.split_once(':') {
        let config = tracepoint_id(subsys, event)?;
        return Ok(EventSpec {
            name: name.into(),
            unit: "count",
            type_: PERF_TYPE_TRACEPOINT,
            config,
        });
    }
    Err(format!(
        "unknown event '{name}' (expected a perf software or hardware event such as task-clock, \
         page-faults, cycles, dTLB-load-misses, a raw rNNNN, or a tracepoint subsys:event)"
    ))
}

fn perf_event_open(spec: &EventSpec, pid: libc::pid_t, flags: u64) -> std::io::Result<OwnedFd> {
    let attr = PerfEventAttr {
        type_: spec.type_,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: spec.config,
        read_format: PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
        flags,
        ..Default::default()
    };
    // SAFETY: attr is a fully initialised perf_event_attr of the size it declares; the other
    // arguments are plain integers. The returned fd is owned by us alone.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            pid,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor returned by the kernel and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Why an event cannot be counted here, in words a user can act on.
fn explain(spec: &EventSpec, err: &std::io::Error) -> String {
    let paranoid = fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
    match err.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) if spec.is_hardware() => {
            "not supported on this machine (no hardware PMU exposed, e.g. in a VM)".to_string()
        }
        Some(libc::EACCES) | Some(libc::EPERM) => {
            format!(
                "not permitted (perf_event_paranoid = {}; run as root or lower it)",
                paranoid.trim()
            )
        }
        _ => format!("cannot be counted here ({err})"),
    }
}

/// Try each event on this process, without counting anything. Returns the events that work and,
/// for each one that does not, its name and the reason.
pub fn probe(specs: &[EventSpec]) -> (Vec<EventSpec>, Vec<(String, String)>) {
    let mut ok = Vec::new();
    let mut bad = Vec::new();
    for s in specs {
        match perf_event_open(s, 0, FLAG_DISABLED) {
            Ok(fd) => {
                if s.type_ == PERF_TYPE_TRACEPOINT {
                    // Kept open as the tracepoint's holder (see [`Holders`]): closing it here
                    // would unregister the tracepoint only for the experiment to register it
                    // again.
                    probed().push((s.name.clone(), fd));
                }
                ok.push(s.clone())
            }
            Err(e) => bad.push((s.name.clone(), explain(s, &e))),
        }
    }
    (ok, bad)
}

/// Tracepoint events [`probe`] opened, waiting to become [`Holders`].
fn probed() -> std::sync::MutexGuard<'static, Vec<(String, OwnedFd)>> {
    static PROBED: std::sync::Mutex<Vec<(String, OwnedFd)>> = std::sync::Mutex::new(Vec::new());
    PROBED.lock().unwrap_or_else(|e| e.into_inner())
}

/// One disabled perf event per tracepoint, held open on this process for a whole experiment.
/// The kernel registers a tracepoint's perf probe when the first perf event on it is created
/// and unregisters it when the last one is closed (each a text patch and an RCU grace period:
/// tens of ms). Without a holder every run's counter does both; with one, a run's counter only
/// joins and leaves an already registered tracepoint. The holders count nothing (disabled, on
/// abperf itself) and are closed when dropped, on every way out of the experiment.
#[derive(Default)]
pub struct Holders {
    held: Vec<(String, OwnedFd)>,
}

impl Holders {
    /// Open a holder for each tracepoint among `specs` (other events need none). A tracepoint
    /// whose holder cannot be opened is left out: its runs are counted all the same, only
    /// slower.
    /// The events [`probe`] opened on this process serve as holders (no second registration).
    pub fn open(specs: &[EventSpec]) -> Holders {
        let mut probed = probed();
        let held = specs
            .iter()
            .filter(|s| s.type_ == PERF_TYPE_TRACEPOINT)
            .filter_map(|s| match probed.iter().position(|(n, _)| *n == s.name) {
                Some(i) => Some(probed.swap_remove(i)),
                None => perf_event_open(s, 0, FLAG_DISABLED)
                    .ok()
                    .map(|fd| (s.name.clone(), fd)),
            })
            .collect();
        Holders { held }
    }

    /// The tracepoints held.
    pub fn names(&self) -> Vec<&str> {
        self.held.iter().map(|(n, _)| n.as_str()).collect()
    }
}

/// Counters attached to one workload process (and, by inheritance, its children).
pub struct Counters {
    open: Vec<(EventSpec, OwnedFd)>,
}

impl Counters {
    /// Attach to `pid`, which must not have exec'd yet: counting starts at its exec.
    pub fn attach(pid: libc::pid_t, specs: &[EventSpec]) -> anyhow::Result<Counters> {
        let mut open = Vec::with_capacity(specs.len());
        for s in specs {
            let fd = perf_event_open(s, pid, FLAG_DISABLED | FLAG_INHERIT | FLAG_ENABLE_ON_EXEC)
                .map_err(|e| anyhow::anyhow!("event {}: {}", s.name, explain(s, &e)))?;
            open.push((s.clone(), fd));
        }
        Ok(Counters { open })
    }

    /// Read every counter, scaled for multiplexing (value * enabled / running, as perf does).
    /// An event that never ran is left out (it was not measured), with its name returned.
    pub fn read(&self) -> (Vec<Metric>, Vec<String>) {
        let mut metrics = Vec::new();
        let mut missing = Vec::new();
        for (spec, fd) in &self.open {
            let mut buf = [0u64; 3];
            // SAFETY: buf is 24 writable bytes, matching the read_format we asked for.
            let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), 24) };
            let [value, enabled, running] = buf;
            if n != 24 || (running == 0 && value == 0 && enabled > 0) {
                missing.push(spec.name.clone());
                continue;
            }
            let scaled = if running > 0 && running < enabled {
                value as f64 * enabled as f64 / running as f64
            } else {
                value as f64
            };
            metrics.push(Metric::new(spec.name.clone(), scaled, spec.unit));
        }
        (metrics, missing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_perf_spells_them() {
        assert_eq!(parse_event("faults").unwrap().name, "page-faults");
        assert_eq!(parse_event("task-clock").unwrap().unit, "ns");
        assert!(parse_event("cycles").unwrap().is_hardware());
        let d = parse_event("dTLB-load-misses").unwrap();
        assert_eq!(d.config, 3 | (1 << 16));
        assert_eq!(parse_event("r1a2b").unwrap().config, 0x1a2b);
        let e = parse_event("bogus").unwrap_err();
        assert!(e.contains("unknown event 'bogus'"), "{e}");
        assert!(
            parse_event("nosuch:event")
                .unwrap_err()
                .contains("no tracepoint nosuch:event")
        );
        assert!(parse_event("../x:y").is_err());
    }

    #[test]
    fn holders_only_for_tracepoints() {
        let mut specs: Vec<_> = ["task-clock", "page-faults"]
            .iter()
            .map(|n| parse_event(n).unwrap())
            .collect();
        assert!(Holders::open(&specs).names().is_empty());
        // A tracepoint, where tracefs and permissions allow (an independent probe: its id file).
        let Ok(tp) = parse_event("sched:sched_process_exec") else {
            return;
        };
        if perf_event_open(&tp, 0, FLAG_DISABLED).is_err() {
            return;
        }
        specs.push(tp);
        let h = Holders::open(&specs);
        assert_eq!(h.names(), vec!["sched:sched_process_exec"]);
        // A holder counts nothing: it is disabled.
        let mut buf = [0u64; 3];
        let fd = h.held[0].1.as_raw_fd();
        // SAFETY: 24 writable bytes, the read_format asked for.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), 24) };
        assert_eq!((n, buf[0]), (24, 0));
    }

    #[test]
    fn software_events_probe_ok_here() {
        let specs: Vec<_> = ["task-clock", "page-faults"]
            .iter()
            .map(|n| parse_event(n).unwrap())
            .collect();
        let (ok, bad) = probe(&specs);
        assert_eq!(ok.len(), 2, "{bad:?}");
    }
}
