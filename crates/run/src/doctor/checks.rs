//! The checks of `abperf doctor`, one function each. A check never fails: a file this kernel
//! does not have gives the status "not available" and says which file was missing.

use super::sys::Sys;
use abperf_model::doctor::{Check, Status};
use std::collections::BTreeMap;
use std::time::Duration;

fn check(name: &'static str, status: Status, finding: String, why: &'static str) -> Check {
    Check {
        name,
        status,
        finding,
        why,
        fix: None,
    }
}

fn not_available(name: &'static str, what: String, why: &'static str) -> Check {
    check(name, Status::NotAvailable, what, why)
}

/// `value: count` pairs of a list, e.g. "performance x2, powersave x6".
fn tally<'a>(values: impl Iterator<Item = &'a str>) -> String {
    let mut m: BTreeMap<&str, usize> = BTreeMap::new();
    for v in values {
        *m.entry(v).or_default() += 1;
    }
    m.iter()
        .map(|(v, n)| format!("{v} on {n} CPU(s)"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn selected(s: &str) -> String {
    abperf_measure::env::selected_choice(s)
}

pub fn cpufreq_governor(sys: &Sys) -> Check {
    const WHY: &str = "a power-saving governor changes the clock with load: the first runs, short \
                       runs and runs after a pause are slower, and the two variants may run at \
                       different frequencies";
    let govs: Vec<(u32, String)> = sys
        .per_cpu("cpufreq/scaling_governor")
        .into_iter()
        .filter_map(|(n, p)| Some((n, sys.read(&p)?)))
        .collect();
    if govs.is_empty() {
        return not_available(
            "cpufreq_governor",
            "no cpufreq driver (no /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor): the \
             governor cannot be read or set here; in a VM the host decides the frequency"
                .into(),
            WHY,
        );
    }
    let finding = tally(govs.iter().map(|(_, g)| g.as_str()));
    if govs.iter().all(|(_, g)| g == "performance") {
        check("cpufreq_governor", Status::Ok, finding, WHY)
    } else {
        check("cpufreq_governor", Status::Warn, finding, WHY)
            .fix("abperf doctor --fix (or run --tune) sets every CPU to 'performance'")
    }
}

/// Boost/turbo files and the value meaning "boost on" for each.
pub(crate) const BOOST_FILES: &[(&str, &str)] = &[
    ("/sys/devices/system/cpu/cpufreq/boost", "1"),
    ("/sys/devices/system/cpu/intel_pstate/no_turbo", "0"),
];

pub fn cpu_boost(sys: &Sys) -> Check {
    const WHY: &str = "with turbo/boost the clock depends on temperature and on how many cores \
                       are busy, so it drifts during an experiment and differs between runs";
    let mut found = Vec::new();
    let mut on = false;
    for (p, on_value) in BOOST_FILES {
        if let Some(v) = sys.read(p) {
            on |= v == *on_value;
            found.push(format!("{p} = {v}"));
        }
    }
    for (_, p) in policy_boost_files(sys) {
        if let Some(v) = sys.read(&p) {
            on |= v == "1";
            found.push(format!("{p} = {v}"));
        }
    }
    if found.is_empty() {
        return not_available(
            "cpu_boost",
            "no boost/turbo control (no cpufreq/boost, intel_pstate/no_turbo or per-policy boost \
             file)"
                .into(),
            WHY,
        );
    }
    let c = check(
        "cpu_boost",
        if on { Status::Warn } else { Status::Ok },
        found.join("; "),
        WHY,
    );
    if on {
        c.fix("abperf doctor --fix (or run --tune) turns boost off")
    } else {
        c
    }
}

/// Per-policy boost files (newer kernels: /sys/devices/system/cpu/cpufreq/policyN/boost).
pub(crate) fn policy_boost_files(sys: &Sys) -> Vec<(String, String)> {
    sys.list("/sys/devices/system/cpu/cpufreq")
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.starts_with("policy"))
        .map(|n| {
            let p = format!("/sys/devices/system/cpu/cpufreq/{n}/boost");
            (n, p)
        })
        .filter(|(_, p)| sys.exists(p))
        .collect()
}

pub fn smt(sys: &Sys) -> Check {
    const WHY: &str = "a hyperthread sibling shares the core's caches, TLB and execution units: \
                       whatever runs on it slows the workload by a varying amount";
    let Some(control) = sys.read("/sys/devices/system/cpu/smt/control") else {
        return not_available(
            "smt",
            "/sys/devices/system/cpu/smt/control is absent".into(),
            WHY,
        );
    };
    match control.as_str() {
        "on" => check(
            "smt",
            Status::Warn,
            "SMT is on: sibling threads share cores".into(),
            WHY,
        )
        .fix(
            "pin the workload (--pin) to one thread per core and keep the siblings idle, or \
             echo off > /sys/devices/system/cpu/smt/control (takes CPUs offline; not done by --fix)",
        ),
        "notsupported" => check(
            "smt",
            Status::Ok,
            "SMT not supported (no sibling threads)".into(),
            WHY,
        ),
        "notimplemented" => check(
            "smt",
            Status::Ok,
            "SMT control not implemented on this architecture".into(),
            WHY,
        ),
        other => check("smt", Status::Ok, format!("SMT is {other}"), WHY),
    }
}

pub fn aslr(sys: &Sys) -> Check {
    const WHY: &str = "abperf keeps ASLR on: with it, every run gets a different layout and \
                       layout luck (alignment, cache-set and TLB conflicts) averages out over the \
                       runs; with it off one frozen layout can make a variant look faster or slower";
    let Some(v) = sys.read("/proc/sys/kernel/randomize_va_space") else {
        return not_available(
            "aslr",
            "/proc/sys/kernel/randomize_va_space is absent".into(),
            WHY,
        );
    };
    match v.as_str() {
        "2" => check("aslr", Status::Ok, "full randomization (2)".into(), WHY),
        "1" => check(
            "aslr",
            Status::Warn,
            "partial randomization (1): the heap (brk) is not randomized".into(),
            WHY,
        )
        .fix("abperf doctor --fix (or run --tune) sets it to 2"),
        "0" => check(
            "aslr",
            Status::Warn,
            "ASLR is off (0): every run has the same layout".into(),
            WHY,
        )
        .fix("abperf doctor --fix (or run --tune) sets it to 2"),
        other => check(
            "aslr",
            Status::Info,
            format!("randomize_va_space = {other}"),
            WHY,
        ),
    }
}

pub const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
pub const THP_DEFRAG: &str = "/sys/kernel/mm/transparent_hugepage/defrag";

pub fn thp(sys: &Sys) -> Check {
    const WHY: &str = "with THP 'always', whether memory gets 2 MiB pages depends on how \
                       fragmented free memory is and on when khugepaged collapses it, which varies \
                       run to run (TLB misses change); defrag 'always' adds compaction stalls to \
                       page faults";
    let Some(enabled) = sys.read(THP_ENABLED).map(|s| selected(&s)) else {
        return not_available(
            "thp",
            format!("{THP_ENABLED} is absent (kernel without THP)"),
            WHY,
        );
    };
    let defrag = sys.read(THP_DEFRAG).map(|s| selected(&s));
    let finding = format!(
        "enabled: {enabled}, defrag: {}",
        defrag.as_deref().unwrap_or("not available")
    );
    if enabled == "always" || defrag.as_deref() == Some("always") {
        check("thp", Status::Warn, finding, WHY)
            .fix("abperf doctor --fix (or run --tune) sets 'always' to 'madvise' (only programs that ask get huge pages)")
    } else {
        check("thp", Status::Ok, finding, WHY)
    }
}

pub fn numa_balancing(sys: &Sys) -> Check {
    const WHY: &str = "automatic NUMA balancing unmaps pages to sample accesses and migrates \
                       them: extra page faults, TLB flushes and migrations at unpredictable times";
    let Some(v) = sys.read("/proc/sys/kernel/numa_balancing") else {
        return not_available(
            "numa_balancing",
            "/proc/sys/kernel/numa_balancing is absent (kernel without NUMA balancing)".into(),
            WHY,
        );
    };
    let nodes = sys
        .list("/sys/devices/system/node")
        .map(|v| v.iter().filter(|n| n.starts_with("node")).count())
        .unwrap_or(0);
    let finding = format!(
        "numa_balancing = {v}{}",
        if nodes > 0 {
            format!(" ({nodes} NUMA node(s))")
        } else {
            String::new()
        }
    );
    if v == "0" {
        check("numa_balancing", Status::Ok, finding, WHY)
    } else {
        check("numa_balancing", Status::Warn, finding, WHY)
            .fix("abperf doctor --fix (or run --tune) sets it to 0")
    }
}

pub fn swap(sys: &Sys) -> Check {
    const WHY: &str = "pages swapped out during an experiment come back as major faults in \
                       whichever run touches them next";
    let Some(swaps) = sys.read("/proc/swaps") else {
        return not_available("swap", "/proc/swaps is absent".into(), WHY);
    };
    let mut total = 0u64;
    let mut used = 0u64;
    let mut n = 0;
    for l in swaps.lines().skip(1) {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() >= 4 {
            n += 1;
            total += f[2].parse::<u64>().unwrap_or(0);
            used += f[3].parse::<u64>().unwrap_or(0);
        }
    }
    if n == 0 {
        return check("swap", Status::Ok, "no swap".into(), WHY);
    }
    let finding = format!(
        "{n} swap area(s), {} MiB, {} MiB used",
        total / 1024,
        used / 1024
    );
    if used > 0 {
        check("swap", Status::Warn, finding, WHY)
            .fix("free memory or run swapoff -a before measuring (not done by --fix)")
    } else {
        check("swap", Status::Info, finding, WHY)
    }
}

pub fn perf_event_paranoid(sys: &Sys) -> Check {
    const WHY: &str = "above 1, unprivileged users cannot count kernel-mode events, so counters \
                       silently miss the kernel's share of the work";
    let Some(v) = sys.read("/proc/sys/kernel/perf_event_paranoid") else {
        return not_available(
            "perf_event_paranoid",
            "/proc/sys/kernel/perf_event_paranoid is absent (no perf events)".into(),
            WHY,
        );
    };
    let level: i32 = v.parse().unwrap_or(i32::MAX);
    // SAFETY: plain syscall.
    let root = unsafe { libc::geteuid() } == 0;
    if level <= 1 {
        check("perf_event_paranoid", Status::Ok, v.clone(), WHY)
    } else if root {
        check(
            "perf_event_paranoid",
            Status::Info,
            format!("{v} (abperf runs as root, which is not limited by it)"),
            WHY,
        )
    } else {
        check(
            "perf_event_paranoid",
            Status::Warn,
            format!("{v}: kernel-mode counting refused to this user"),
            WHY,
        )
        .fix("abperf doctor --fix (as root) sets it to 1")
    }
}

pub fn nmi_watchdog(sys: &Sys) -> Check {
    const WHY: &str = "the NMI watchdog interrupts every CPU periodically and holds one hardware \
                       counter, leaving fewer for measurements";
    let Some(v) = sys.read("/proc/sys/kernel/nmi_watchdog") else {
        return not_available(
            "nmi_watchdog",
            "/proc/sys/kernel/nmi_watchdog is absent".into(),
            WHY,
        );
    };
    if v == "0" {
        check("nmi_watchdog", Status::Ok, "off".into(), WHY)
    } else {
        check("nmi_watchdog", Status::Warn, format!("on ({v})"), WHY)
            .fix("abperf doctor --fix (or run --tune) turns it off")
    }
}

/// Processes whose command name is `comm`.
fn processes_named(sys: &Sys, comm: &str) -> Vec<u32> {
    sys.list("/proc")
        .unwrap_or_default()
        .into_iter()
        .filter_map(|n| n.parse::<u32>().ok())
        .filter(|pid| sys.read(&format!("/proc/{pid}/comm")).as_deref() == Some(comm))
        .collect()
}

pub fn irqbalance(sys: &Sys) -> Check {
    irqbalance_pids(&processes_named(sys, "irqbalance"))
}

/// The irqbalance check from the pids of the processes named irqbalance.
pub fn irqbalance_pids(pids: &[u32]) -> Check {
    const WHY: &str = "irqbalance moves interrupts between CPUs every few seconds, so a run may \
                       suddenly share its CPU with a device's interrupts";
    if pids.is_empty() {
        check("irqbalance", Status::Ok, "not running".into(), WHY)
    } else {
        check(
            "irqbalance",
            Status::Warn,
            format!("running (pid {})", pids[0]),
            WHY,
        )
        .fix("stop it for the measurement: systemctl stop irqbalance (not done by --fix)")
    }
}

/// CPU time of every process at one instant, plus the machine's steal and total time.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// pid -> (command name, utime + stime in clock ticks)
    procs: BTreeMap<u32, (String, u64)>,
    /// (steal, total) jiffies of the `cpu` line of /proc/stat
    stat: Option<(u64, u64)>,
}

/// Parse one /proc/PID/stat line: (comm, utime + stime). The command name may hold spaces and
/// parentheses, so fields are counted after the last ')'.
pub fn parse_stat(line: &str) -> Option<(String, u64)> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let comm = line.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state); utime is field 14, stime field 15.
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((comm, utime + stime))
}

fn parse_cpu_line(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal guest guest_nice; guest is in user already.
    let total: u64 = v.iter().take(8).sum();
    Some((v.get(7).copied().unwrap_or(0), total))
}

impl Sample {
    /// The pids of the sampled processes whose command name is `comm`.
    pub fn pids_named(&self, comm: &str) -> Vec<u32> {
        self.procs
            .iter()
            .filter(|(_, (c, _))| c == comm)
            .map(|(pid, _)| *pid)
            .collect()
    }

    /// Only /proc/stat's `cpu` line (steal time): what a window too short for a scan of the
    /// processes still measures.
    pub fn cpu_only(sys: &Sys) -> Sample {
        Sample {
            procs: BTreeMap::new(),
            stat: sys.read("/proc/stat").and_then(|s| parse_cpu_line(&s)),
        }
    }

    pub fn take(sys: &Sys) -> Sample {
        let mut procs = BTreeMap::new();
        for n in sys.list("/proc").unwrap_or_default() {
            let Ok(pid) = n.parse::<u32>() else { continue };
            if let Some(s) = sys.read(&format!("/proc/{pid}/stat"))
                && let Some(p) = parse_stat(&s)
            {
                procs.insert(pid, p);
            }
        }
        Sample {
            procs,
            stat: sys.read("/proc/stat").and_then(|s| parse_cpu_line(&s)),
        }
    }
}

/// What happened between two samples.
#[derive(Debug, Clone)]
pub struct Activity {
    /// (pid, command, % of one CPU), busiest first; `exclude` left out.
    pub busy: Vec<(u32, String, f64)>,
    /// Steal time as % of all CPU time (VMs), when /proc/stat was readable.
    pub steal_pct: Option<f64>,
    pub window: Duration,
}

impl Activity {
    /// No activity sampled (the setting checks, which do not look at it).
    pub fn none() -> Activity {
        Activity {
            busy: Vec::new(),
            steal_pct: None,
            window: Duration::ZERO,
        }
    }
}

pub fn activity(a: &Sample, b: &Sample, window: Duration, exclude: &[u32]) -> Activity {
    let hz = clock_ticks();
    let secs = window.as_secs_f64().max(1e-3);
    let mut busy: Vec<(u32, String, f64)> = b
        .procs
        .iter()
        .filter(|(pid, _)| !exclude.contains(pid))
        .filter_map(|(pid, (comm, t1))| {
            let t0 = a.procs.get(pid).map(|(_, t)| *t).unwrap_or(*t1);
            let pct = t1.saturating_sub(t0) as f64 / hz / secs * 100.0;
            (pct > 0.0).then(|| (*pid, comm.clone(), pct))
        })
        .collect();
    busy.sort_by(|x, y| y.2.total_cmp(&x.2));
    let steal_pct = match (a.stat, b.stat) {
        (Some((s0, t0)), Some((s1, t1))) if t1 > t0 => {
            Some(s1.saturating_sub(s0) as f64 / (t1 - t0) as f64 * 100.0)
        }
        _ => None,
    };
    Activity {
        busy,
        steal_pct,
        window,
    }
}

fn clock_ticks() -> f64 {
    // SAFETY: plain libc call.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

pub fn busy_processes(act: &Activity) -> Check {
    const WHY: &str = "other processes compete for CPUs, caches and memory bandwidth; when they \
                       come and go, runs differ for reasons that have nothing to do with the change \
                       under test";
    let total: f64 = act.busy.iter().map(|b| b.2).sum();
    let top: Vec<String> = act
        .busy
        .iter()
        .filter(|b| b.2 >= 1.0)
        .take(5)
        .map(|(pid, comm, pct)| format!("{comm} (pid {pid}) {pct:.0}%"))
        .collect();
    let secs = act.window.as_secs_f64();
    let window = if secs < 1.0 {
        format!("{:.0} ms", secs * 1e3)
    } else {
        format!("{secs:.1} s")
    };
    if top.is_empty() {
        return check(
            "busy_processes",
            Status::Ok,
            format!("no other process used 1% of a CPU or more over {window}"),
            WHY,
        );
    }
    let finding = format!(
        "other processes used {total:.0}% of a CPU over {window}; busiest: {}",
        top.join(", ")
    );
    let status = if total >= 20.0 {
        Status::Warn
    } else {
        Status::Info
    };
    check("busy_processes", status, finding, WHY)
        .fix("stop the busiest processes, or pin them away from the workload's CPUs (--pin)")
}

pub fn load_average(sys: &Sys, cpus: usize) -> Check {
    const WHY: &str = "a load near or above the number of CPUs means runs wait for a CPU; the \
                       waiting shows up as wall time";
    let Some(l) = sys.read("/proc/loadavg") else {
        return not_available("load_average", "/proc/loadavg is absent".into(), WHY);
    };
    let f: Vec<&str> = l.split_whitespace().collect();
    let load1: f64 = f.first().and_then(|v| v.parse().ok()).unwrap_or(0.0);
    let finding = format!(
        "{} {} {} (1, 5, 15 min) on {cpus} CPU(s)",
        f.first().unwrap_or(&"?"),
        f.get(1).unwrap_or(&"?"),
        f.get(2).unwrap_or(&"?")
    );
    let status = if load1 >= cpus as f64 {
        Status::Bad
    } else if load1 >= 0.5 * cpus as f64 {
        Status::Warn
    } else {
        Status::Ok
    };
    let c = check("load_average", status, finding, WHY);
    if status == Status::Ok {
        c
    } else {
        c.fix("wait until the machine is idle, or find the load with `abperf doctor` (busy_processes)")
    }
}

/// The hypervisor's name from CPUID leaf 0x40000000 ("KVMKVMKVM", "Microsoft Hv", ...).
fn hypervisor_vendor() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        #[allow(unused_unsafe)]
        // SAFETY: cpuid exists on every x86-64 CPU; leaf 0x40000000 is reserved for hypervisors.
        let r = unsafe { std::arch::x86_64::__cpuid(0x4000_0000) };
        let mut b = Vec::with_capacity(12);
        for w in [r.ebx, r.ecx, r.edx] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        let s: String = String::from_utf8_lossy(&b)
            .trim_matches(char::from(0))
            .trim()
            .to_string();
        let s = match s.as_str() {
            "KVMKVMKVM" => "KVM".to_string(),
            "Microsoft Hv" => "Hyper-V".to_string(),
            "VMwareVMware" => "VMware".to_string(),
            "XenVMMXenVMM" => "Xen".to_string(),
            "TCGTCGTCGTCG" => "QEMU (TCG)".to_string(),
            _ => s,
        };
        if s.is_empty() || !s.chars().all(|c| c.is_ascii_graphic() || c == ' ') {
            return None;
        }
        Some(s)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

pub fn virtualization(sys: &Sys, steal_pct: Option<f64>) -> Check {
    const WHY: &str = "in a virtual machine the host schedules the vCPUs, its other guests share \
                       the caches, the clock may be paravirtual, and hardware counters are often \
                       missing: expect more noise than on bare metal and confirm small effects there";
    let cpuinfo = sys.read("/proc/cpuinfo").unwrap_or_default();
    let flags = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or("");
    let under = flags.split_whitespace().any(|f| f == "hypervisor");
    let steal = steal_pct
        .map(|s| format!("; steal time {s:.1}% during the sample"))
        .unwrap_or_default();
    if !under {
        if cpuinfo.is_empty() {
            return not_available("virtualization", "/proc/cpuinfo is absent".into(), WHY);
        }
        return check(
            "virtualization",
            Status::Ok,
            format!("bare metal (no hypervisor flag){steal}"),
            WHY,
        );
    }
    let vendor = hypervisor_vendor()
        .or_else(|| sys.read("/sys/hypervisor/type"))
        .unwrap_or_else(|| "unknown hypervisor".into());
    check(
        "virtualization",
        Status::Warn,
        format!("virtual machine ({vendor}){steal}"),
        WHY,
    )
    .fix("confirm sub-1% results on bare metal; on the host, pin the vCPUs and keep other guests idle")
}

/// Virtio feature bit of a balloon that reports freed pages to the host
/// (VIRTIO_BALLOON_F_REPORTING, virtio spec 5.5.3).
const BALLOON_F_REPORTING: usize = 5;

pub fn free_page_reporting(sys: &Sys) -> Check {
    const WHY: &str = "a virtio balloon with free page reporting hands the memory the guest frees \
                       back to the host; the next touch of it faults on the host and may be backed \
                       by small host pages, so the cost of the same page fault, flush or cache miss \
                       depends on how long ago the memory was freed";
    let Some(devices) = sys.list("/sys/bus/virtio/devices") else {
        return check(
            "free_page_reporting",
            Status::Ok,
            "no virtio devices".into(),
            WHY,
        );
    };
    // Device id 5 is the balloon; `features` is one character per feature bit, bit 0 first.
    let balloons: Vec<String> = devices
        .iter()
        .filter(|d| {
            sys.read(&format!("/sys/bus/virtio/devices/{d}/device"))
                .is_some_and(|id| id == "0x0005")
        })
        .cloned()
        .collect();
    if balloons.is_empty() {
        return check(
            "free_page_reporting",
            Status::Ok,
            "no virtio balloon".into(),
            WHY,
        );
    }
    let reporting: Vec<&String> = balloons
        .iter()
        .filter(|d| {
            sys.read(&format!("/sys/bus/virtio/devices/{d}/features"))
                .is_some_and(|f| f.as_bytes().get(BALLOON_F_REPORTING) == Some(&b'1'))
        })
        .collect();
    if reporting.is_empty() {
        check(
            "free_page_reporting",
            Status::Ok,
            format!(
                "virtio balloon ({}) without free page reporting",
                balloons.join(", ")
            ),
            WHY,
        )
    } else {
        check(
            "free_page_reporting",
            Status::Warn,
            format!(
                "virtio balloon {} reports freed pages to the host",
                reporting
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            WHY,
        )
        .fix(
            "let a benchmark reuse its own memory (allocate once, touch, then measure); \
             on the host, start the VM without free page reporting when measuring memory paths",
        )
    }
}

pub fn mitigations(sys: &Sys) -> Check {
    const WHY: &str = "speculation mitigations (page-table isolation, retpolines, buffer clearing) \
                       change the cost of syscalls, interrupts and context switches by tens of \
                       percent: both sides of a comparison need the same ones";
    let dir = "/sys/devices/system/cpu/vulnerabilities";
    let Some(names) = sys.list(dir) else {
        return not_available("mitigations", format!("{dir} is absent"), WHY);
    };
    let mut mitigated = Vec::new();
    let mut vulnerable = Vec::new();
    for n in &names {
        let v = sys.read(&format!("{dir}/{n}")).unwrap_or_default();
        if v.starts_with("Vulnerable") {
            vulnerable.push(n.clone());
        } else if v.starts_with("Mitigation") {
            mitigated.push(n.clone());
        }
    }
    let cmdline = sys.read("/proc/cmdline").unwrap_or_default();
    let param = cmdline
        .split_whitespace()
        .find(|w| w.starts_with("mitigations="))
        .map(|w| format!("; kernel command line {w}"))
        .unwrap_or_default();
    check(
        "mitigations",
        Status::Info,
        format!(
            "{} mitigated ({}), {} vulnerable{}{param}",
            mitigated.len(),
            mitigated.join(" "),
            vulnerable.len(),
            if vulnerable.is_empty() {
                String::new()
            } else {
                format!(" ({})", vulnerable.join(" "))
            }
        ),
        WHY,
    )
}

pub fn clocksource(sys: &Sys) -> Check {
    const WHY: &str = "timestamps come from the clocksource: 'tsc' is read in nanoseconds from \
                       user space, others (hpet, acpi_pm) cost a microsecond per read and a TSC \
                       without constant_tsc/nonstop_tsc changes rate with frequency and sleep";
    let cur = sys.read("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    let cpuinfo = sys.read("/proc/cpuinfo").unwrap_or_default();
    let flags: Vec<&str> = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let has = |f: &str| flags.contains(&f);
    let Some(cur) = cur else {
        return not_available(
            "clocksource",
            "/sys/devices/system/clocksource/clocksource0/current_clocksource is absent".into(),
            WHY,
        );
    };
    let tsc_flags: Vec<&str> = ["constant_tsc", "nonstop_tsc", "tsc_reliable"]
        .into_iter()
        .filter(|f| has(f))
        .collect();
    let finding = format!(
        "clocksource {cur}; TSC flags: {}",
        if tsc_flags.is_empty() {
            "none".to_string()
        } else {
            tsc_flags.join(" ")
        }
    );
    let x86 = cfg!(target_arch = "x86_64");
    if !x86 {
        return check("clocksource", Status::Info, finding, WHY);
    }
    let stable = has("constant_tsc") && has("nonstop_tsc");
    match (cur.as_str(), stable) {
        ("tsc", true) => check("clocksource", Status::Ok, finding, WHY),
        ("tsc", false) => check("clocksource", Status::Warn, finding, WHY)
            .fix("the TSC may change rate: prefer a CPU with constant_tsc and nonstop_tsc"),
        ("kvm-clock", _) => check("clocksource", Status::Info, finding, WHY),
        _ => check("clocksource", Status::Warn, finding, WHY).fix(
            "the kernel fell back from the TSC (marked unstable?): check dmesg for 'clocksource'; \
             timing reads are slow with this clock",
        ),
    }
}

pub fn tracing(sys: &Sys) -> Check {
    const WHY: &str = "active tracing costs time in every traced event and fills the ring \
                       buffers: the workload pays for someone else's trace";
    let base = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .into_iter()
        .find(|b| sys.exists(&format!("{b}/tracing_on")));
    let Some(base) = base else {
        return not_available(
            "tracing",
            "tracefs is not mounted (no /sys/kernel/tracing/tracing_on)".into(),
            WHY,
        );
    };
    let on = sys.read(&format!("{base}/tracing_on")).as_deref() == Some("1");
    let events: Vec<String> = sys
        .read(&format!("{base}/set_event"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    let tracer = sys
        .read(&format!("{base}/current_tracer"))
        .unwrap_or_else(|| "nop".into());
    let instances = sys.list(&format!("{base}/instances")).unwrap_or_default();
    let mut active = Vec::new();
    if on && !events.is_empty() {
        let shown: Vec<&str> = events.iter().take(5).map(String::as_str).collect();
        active.push(format!(
            "{} event(s) enabled ({}{})",
            events.len(),
            shown.join(", "),
            if events.len() > 5 { ", ..." } else { "" }
        ));
    }
    if on && tracer != "nop" {
        active.push(format!("tracer '{tracer}'"));
    }
    if !instances.is_empty() {
        active.push(format!("instance(s) {}", instances.join(", ")));
    }
    if active.is_empty() {
        check(
            "tracing",
            Status::Ok,
            format!(
                "no tracing active (tracing_on {}, tracer {tracer}, no events, no instances)",
                if on { 1 } else { 0 }
            ),
            WHY,
        )
    } else {
        check("tracing", Status::Warn, active.join("; "), WHY).fix(format!(
            "stop the other tracer: echo 0 > {base}/tracing_on, echo > {base}/set_event, \
             echo nop > {base}/current_tracer; instances belong to whoever made them"
        ))
    }
}

/// What abperf processes that died (kill -9) left in tracefs: instances that still trace,
/// private mounts, markers (`measure::trace_owner`).
pub fn trace_leftovers(sys: &Sys) -> Check {
    use abperf_measure::trace_owner::{Files, leftovers};
    const WHY: &str = "a tracefs instance left by a killed abperf keeps tracing: every traced \
                       event costs the workload time and its ring buffers hold memory";
    let read = |p: &str| sys.read(p);
    let list = |p: &str| sys.list(p);
    let link = |p: &str| {
        std::fs::read_link(sys.path(p))
            .ok()
            .map(|t| t.to_string_lossy().into_owned())
    };
    let exists = |p: &str| sys.exists(p);
    let found = leftovers(&Files {
        read: &read,
        list: &list,
        link: &link,
        exists: &exists,
    });
    if found.is_empty() {
        return check(
            "trace_leftovers",
            Status::Ok,
            "no tracefs instances, mounts or markers left by abperf processes".into(),
            WHY,
        );
    }
    let (dead, other): (Vec<_>, Vec<_>) = found.iter().partition(|l| l.removable());
    let mut parts = Vec::new();
    if !dead.is_empty() {
        parts.push(format!(
            "left by dead abperf processes: {}",
            dead.iter()
                .map(|l| l.describe())
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    if !other.is_empty() {
        parts.push(format!(
            "abperf-named, owner unknown: {}",
            other
                .iter()
                .map(|l| l.describe())
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let finding = parts.join(". ");
    if !dead.is_empty() {
        check("trace_leftovers", Status::Warn, finding, WHY).fix(
            "abperf doctor --fix removes them (so does the next abperf trace record, at its start)",
        )
    } else {
        let paths: Vec<String> = other.iter().map(|l| l.path.display().to_string()).collect();
        check("trace_leftovers", Status::Info, finding, WHY).fix(format!(
            "once sure that no abperf (in this or another container) still uses them: rmdir {}",
            paths.join(" ")
        ))
    }
}

/// `avg10` of the `some` line of a /proc/pressure file.
fn some_avg10(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with("some"))?;
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("avg10="))?
        .parse()
        .ok()
}

pub fn memory_pressure(sys: &Sys) -> Check {
    const WHY: &str = "memory pressure means reclaim: page cache is evicted and refaulted, and \
                       allocations stall, so run times depend on what else wants memory";
    let Some(text) = sys.read("/proc/pressure/memory") else {
        return not_available(
            "memory_pressure",
            "/proc/pressure/memory is absent (kernel without PSI, or psi=0)".into(),
            WHY,
        );
    };
    let Some(avg10) = some_avg10(&text) else {
        return not_available(
            "memory_pressure",
            "/proc/pressure/memory has no 'some avg10=' field".into(),
            WHY,
        );
    };
    let avail = sys.read("/proc/meminfo").and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
    });
    let finding = format!(
        "tasks stalled on memory {avg10:.2}% of the last 10 s{}",
        avail
            .map(|a| format!("; {} MiB available", a / 1024))
            .unwrap_or_default()
    );
    if avg10 >= 1.0 {
        check("memory_pressure", Status::Warn, finding, WHY)
            .fix("free memory (stop memory-hungry processes) before measuring")
    } else {
        check("memory_pressure", Status::Ok, finding, WHY)
    }
}

/// Every check, in a fixed order, sampling process activity over `window`.
pub fn run_all(sys: &Sys, window: Duration) -> Vec<Check> {
    let a = Sample::take(sys);
    std::thread::sleep(window);
    let b = Sample::take(sys);
    let me = std::process::id();
    let act = activity(&a, &b, window, &[me]);
    run_with(sys, &act)
}

/// The checks whose finding is a sample of activity over `act`'s window (other processes' CPU
/// use, load, steal time, memory pressure), in [`run_with`]'s order.
pub fn sampled(sys: &Sys, act: &Activity) -> Vec<Check> {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    vec![
        busy_processes(act),
        load_average(sys, cpus),
        virtualization(sys, act.steal_pct),
        memory_pressure(sys),
    ]
}

/// Every check's name, in the order `abperf doctor` shows them.
pub const ORDER: [&str; 19] = [
    "cpufreq_governor",
    "cpu_boost",
    "smt",
    "aslr",
    "thp",
    "numa_balancing",
    "swap",
    "perf_event_paranoid",
    "nmi_watchdog",
    "irqbalance",
    "busy_processes",
    "load_average",
    "virtualization",
    "free_page_reporting",
    "mitigations",
    "clocksource",
    "tracing",
    "trace_leftovers",
    "memory_pressure",
];

/// The checks that read a setting: neither a sample of activity ([`sampled`]) nor the process
/// list ([`irqbalance`]), so they cost a few file reads.
pub fn settings(sys: &Sys) -> Vec<Check> {
    vec![
        cpufreq_governor(sys),
        cpu_boost(sys),
        smt(sys),
        aslr(sys),
        thp(sys),
        numa_balancing(sys),
        swap(sys),
        perf_event_paranoid(sys),
        nmi_watchdog(sys),
        free_page_reporting(sys),
        mitigations(sys),
        clocksource(sys),
        tracing(sys),
        trace_leftovers(sys),
    ]
}

/// Every check, in [`ORDER`], with process activity `act` sampled by the caller.
pub fn run_with(sys: &Sys, act: &Activity) -> Vec<Check> {
    let mut all = settings(sys);
    all.push(irqbalance(sys));
    all.extend(sampled(sys, act));
    all.sort_by_key(|c| ORDER.iter().position(|n| *n == c.name));
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::doctor::sys::put;

    #[test]
    fn free_page_reporting_from_the_balloon_feature_bits() {
        let d = tempfile::tempdir().unwrap();
        let sys = Sys::at(d.path());
        assert_eq!(free_page_reporting(&sys).status, Status::Ok);
        put(
            d.path(),
            "/sys/bus/virtio/devices/virtio1/device",
            "0x0002\n",
        );
        put(
            d.path(),
            "/sys/bus/virtio/devices/virtio1/features",
            "0010011\n",
        );
        let c = free_page_reporting(&sys);
        assert_eq!(
            (c.status, c.finding.as_str()),
            (Status::Ok, "no virtio balloon")
        );
        // This machine's balloon: bits 1 (stats), 2 (deflate on OOM), 5 (reporting), 7.
        put(
            d.path(),
            "/sys/bus/virtio/devices/virtio0/device",
            "0x0005\n",
        );
        put(
            d.path(),
            "/sys/bus/virtio/devices/virtio0/features",
            "01100101000000\n",
        );
        let c = free_page_reporting(&sys);
        assert_eq!(c.status, Status::Warn);
        assert!(
            c.finding.contains("virtio0 reports freed pages"),
            "{}",
            c.finding
        );
        assert!(c.fix.is_some());
        put(
            d.path(),
            "/sys/bus/virtio/devices/virtio0/features",
            "01100001000000\n",
        );
        let c = free_page_reporting(&sys);
        assert_eq!(c.status, Status::Ok);
        assert!(
            c.finding.contains("without free page reporting"),
            "{}",
            c.finding
        );
    }

    #[test]
    fn governor_powersave_is_a_warning_and_absent_is_not_available() {
        let d = tempfile::tempdir().unwrap();
        let sys = Sys::at(d.path());
        assert_eq!(cpufreq_governor(&sys).status, Status::NotAvailable);
        put(
            d.path(),
            "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            "powersave\n",
        );
        put(
            d.path(),
            "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
            "performance\n",
        );
        let c = cpufreq_governor(&sys);
        assert_eq!(c.status, Status::Warn);
        assert!(c.finding.contains("powersave on 1 CPU(s)"), "{}", c.finding);
        assert!(c.fix.is_some());
    }

    #[test]
    fn boost_on_and_off() {
        let d = tempfile::tempdir().unwrap();
        let sys = Sys::at(d.path());
        assert_eq!(cpu_boost(&sys).status, Status::NotAvailable);
        put(
            d.path(),
            "/sys/devices/system/cpu/intel_pstate/no_turbo",
            "0\n",
        );
        assert_eq!(cpu_boost(&sys).status, Status::Warn);
        put(
            d.path(),
            "/sys/devices/system/cpu/intel_pstate/no_turbo",
            "1\n",
        );
        assert_eq!(cpu_boost(&sys).status, Status::Ok);
    }

    #[test]
    fn thp_always_smt_on_aslr_off() {
        let d = tempfile::tempdir().unwrap();
        let sys = Sys::at(d.path());
        put(d.path(), THP_ENABLED, "[always] madvise never\n");
        put(
            d.path(),
            THP_DEFRAG,
            "always defer defer+madvise [madvise] never\n",
        );
        let c = thp(&sys);
        assert_eq!(c.status, Status::Warn);
        assert_eq!(c.finding, "enabled: always, defrag: madvise");
        put(d.path(), "/sys/devices/system/cpu/smt/control", "on\n");
        assert_eq!(smt(&sys).status, Status::Warn);
        put(d.path(), "/proc/sys/kernel/randomize_va_space", "0\n");
        assert_eq!(aslr(&sys).status, Status::Warn);
    }

    #[test]
    fn trace_leftovers_of_dead_owners_are_warned_about() {
        let d = tempfile::tempdir().unwrap();
        let sys = Sys::at(d.path());
        assert_eq!(trace_leftovers(&sys).status, Status::Ok);
        put(
            d.path(),
            "/proc/self/mounts",
            "nodev /sys/kernel/tracing tracefs rw 0 0\n",
        );
        put(
            d.path(),
            "/sys/kernel/tracing/instances/abperf-0123456789ab/tracing_on",
            "1\n",
        );
        // no marker: reported, not for --fix
        let c = trace_leftovers(&sys);
        assert_eq!(c.status, Status::Info, "{c:?}");
        assert!(c.finding.contains("owner unknown"), "{}", c.finding);
        assert!(c.fix.unwrap().contains("rmdir"));
        // a marker whose owner (pid 999999999) is gone: warn, --fix removes it
        put(
            d.path(),
            "/run/abperf/trace/abperf-0123456789ab.json",
            r#"{"name":"abperf-0123456789ab","kind":"instance",
                "path":"/sys/kernel/tracing/instances/abperf-0123456789ab","mount":null,
                "pid":999999999,"start_ticks":5,"boot_id":"","pid_ns":""}"#,
        );
        let c = trace_leftovers(&sys);
        assert_eq!(c.status, Status::Warn, "{c:?}");
        assert!(c.finding.contains("pid 999999999 is gone"), "{}", c.finding);
        assert!(c.fix.unwrap().contains("doctor --fix"));
    }

    #[test]
    fn stat_lines_with_odd_command_names() {
        let l = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 5 0 0";
        assert_eq!(parse_stat(l), Some(("a (b) c".to_string(), 10)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn activity_names_the_busiest_and_excludes_ourselves() {
        let mut a = Sample::default();
        let mut b = Sample::default();
        let hz = clock_ticks() as u64;
        a.procs.insert(10, ("cc1".into(), 0));
        b.procs.insert(10, ("cc1".into(), hz)); // one full CPU-second
        a.procs.insert(11, ("abperf".into(), 0));
        b.procs.insert(11, ("abperf".into(), hz));
        a.stat = Some((0, 100));
        b.stat = Some((5, 200));
        let act = activity(&a, &b, Duration::from_secs(1), &[11]);
        assert_eq!(act.busy.len(), 1);
        assert_eq!(act.busy[0].1, "cc1");
        assert!((act.busy[0].2 - 100.0).abs() < 1e-9);
        assert_eq!(act.steal_pct, Some(5.0));
        let c = busy_processes(&act);
        assert_eq!(c.status, Status::Warn);
        assert!(c.finding.contains("cc1 (pid 10) 100%"), "{}", c.finding);
    }

    #[test]
    fn tracing_with_events_and_instances_is_reported() {
        let d = tempfile::tempdir().unwrap();
        let sys = Sys::at(d.path());
        assert_eq!(tracing(&sys).status, Status::NotAvailable);
        put(d.path(), "/sys/kernel/tracing/tracing_on", "1\n");
        put(d.path(), "/sys/kernel/tracing/current_tracer", "nop\n");
        put(d.path(), "/sys/kernel/tracing/set_event", "");
        std::fs::create_dir_all(d.path().join("sys/kernel/tracing/instances")).unwrap();
        assert_eq!(tracing(&sys).status, Status::Ok);
        put(d.path(), "/sys/kernel/tracing/set_event", "tlb:tlb_flush\n");
        let c = tracing(&sys);
        assert_eq!(c.status, Status::Warn);
        assert!(c.finding.contains("tlb:tlb_flush"));
        std::fs::create_dir_all(d.path().join("sys/kernel/tracing/instances/foo")).unwrap();
        assert!(tracing(&sys).finding.contains("instance(s) foo"));
    }

    #[test]
    fn pressure_and_swap() {
        let d = tempfile::tempdir().unwrap();
        let sys = Sys::at(d.path());
        assert_eq!(memory_pressure(&sys).status, Status::NotAvailable);
        put(
            d.path(),
            "/proc/pressure/memory",
            "some avg10=3.50 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
        );
        assert_eq!(memory_pressure(&sys).status, Status::Warn);
        put(
            d.path(),
            "/proc/swaps",
            "Filename Type Size Used Priority\n/swap file 1048576 2048 -2\n",
        );
        let c = swap(&sys);
        assert_eq!(c.status, Status::Warn);
        assert!(c.finding.contains("1024 MiB, 2 MiB used"), "{}", c.finding);
    }

    #[test]
    fn every_check_runs_on_this_machine() {
        let checks = run_all(&Sys::real(), Duration::from_millis(50));
        assert_eq!(checks.len(), 19);
        let mut names: Vec<&str> = checks.iter().map(|c| c.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 19);
        for c in &checks {
            assert!(!c.finding.is_empty(), "{}", c.name);
        }
    }
}
