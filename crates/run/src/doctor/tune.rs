//! The safe recommended settings that `abperf doctor --fix` and `abperf run --tune` apply:
//! only files that exist on this kernel and hold something else now. They are written, read
//! back and verified through the runner's `KnobGuard`, and their originals go to the store.
//!
//! Decisions:
//! - governor `performance` and boost/turbo off: a fixed clock (seed 003: "cpufreq artifacts").
//! - ASLR stays on, at full randomization (2): turning it off freezes one address-space layout
//!   for every run, so a variant can win by layout luck (alignment, cache-set and TLB conflicts)
//!   and more runs do not average it out. pyperf's `system tune` makes the same choice (it checks
//!   for full randomization rather than disabling it), and Ingo Molnar's recipe perturbs layout
//!   on purpose rather than fixing it. `--fix` therefore only raises 0 or 1 to 2.
//! - THP `always` -> `madvise` (enabled and defrag): with `always`, whether memory gets huge pages
//!   depends on fragmentation and khugepaged timing; `madvise` is a fixed rule that still gives
//!   huge pages to programs that ask (TLB microbenchmarks use MADV_HUGEPAGE). `never` and
//!   `madvise` are left alone: they are already fixed modes.
//! - NUMA balancing off, NMI watchdog off.
//! - perf_event_paranoid above 1 -> 1: lets an unprivileged user count kernel-mode events of their
//!   own processes (needed for kernel-side counts); it is restored like everything else.
//! - Not touched (not safe to flip automatically): SMT (takes CPUs offline), swap, irqbalance.

use super::checks::{BOOST_FILES, THP_DEFRAG, THP_ENABLED, policy_boost_files};
use super::sys::Sys;
use abperf_model::Setting;

fn current(sys: &Sys, path: &str) -> Option<String> {
    sys.read(path)
        .map(|s| abperf_measure::env::selected_choice(&s))
}

/// The settings that would change this machine (files that exist and differ), in a fixed order.
pub fn recommended(sys: &Sys) -> Vec<Setting> {
    let mut out = Vec::new();
    let mut want = |path: &str, value: &str, when: &dyn Fn(&str) -> bool| {
        if let Some(cur) = current(sys, path)
            && cur != value
            && when(&cur)
        {
            out.push(Setting {
                path: path.to_string(),
                value: value.to_string(),
                current: cur,
            });
        }
    };
    for (n, gov) in sys.per_cpu("cpufreq/scaling_governor") {
        let avail = sys
            .read(&format!(
                "/sys/devices/system/cpu/cpu{n}/cpufreq/scaling_available_governors"
            ))
            .unwrap_or_default();
        // intel_pstate lists only "performance powersave"; acpi-cpufreq lists more. Without the
        // list we cannot know it is accepted: skip rather than fail half-way.
        if avail.split_whitespace().any(|g| g == "performance") {
            want(&gov, "performance", &|_| true);
        }
    }
    for (path, on) in BOOST_FILES {
        let off = if *on == "1" { "0" } else { "1" };
        want(path, off, &|_| true);
    }
    for (_, path) in policy_boost_files(sys) {
        want(&path, "0", &|_| true);
    }
    want("/proc/sys/kernel/randomize_va_space", "2", &|c| {
        c == "0" || c == "1"
    });
    want(THP_ENABLED, "madvise", &|c| c == "always");
    want(THP_DEFRAG, "madvise", &|c| c == "always");
    want("/proc/sys/kernel/numa_balancing", "0", &|_| true);
    want("/proc/sys/kernel/nmi_watchdog", "0", &|_| true);
    want("/proc/sys/kernel/perf_event_paranoid", "1", &|c| {
        c.parse::<i32>().map(|v| v > 1).unwrap_or(false)
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::doctor::sys::put;

    #[test]
    fn only_existing_files_that_differ() {
        let d = tempfile::tempdir().unwrap();
        let sys = Sys::at(d.path());
        assert!(recommended(&sys).is_empty());
        put(d.path(), THP_ENABLED, "[always] madvise never\n");
        put(
            d.path(),
            THP_DEFRAG,
            "always defer defer+madvise [madvise] never\n",
        );
        put(d.path(), "/proc/sys/kernel/randomize_va_space", "2\n");
        put(d.path(), "/proc/sys/kernel/perf_event_paranoid", "2\n");
        put(d.path(), "/proc/sys/kernel/nmi_watchdog", "1\n");
        put(
            d.path(),
            "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            "powersave\n",
        );
        put(
            d.path(),
            "/sys/devices/system/cpu/cpu0/cpufreq/scaling_available_governors",
            "performance powersave\n",
        );
        put(
            d.path(),
            "/sys/devices/system/cpu/intel_pstate/no_turbo",
            "0\n",
        );
        let r = recommended(&sys);
        let got: Vec<(String, String)> = r
            .iter()
            .map(|s| (s.path.trim_start_matches('/').to_string(), s.value.clone()))
            .collect();
        let want: Vec<(String, String)> = [
            (
                "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
                "performance",
            ),
            ("sys/devices/system/cpu/intel_pstate/no_turbo", "1"),
            ("sys/kernel/mm/transparent_hugepage/enabled", "madvise"),
            ("proc/sys/kernel/nmi_watchdog", "0"),
            ("proc/sys/kernel/perf_event_paranoid", "1"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        assert_eq!(got, want);
        assert_eq!(r[2].current, "always");
    }

    #[test]
    fn aslr_is_raised_never_lowered() {
        let d = tempfile::tempdir().unwrap();
        let sys = Sys::at(d.path());
        put(d.path(), "/proc/sys/kernel/randomize_va_space", "0\n");
        let r = recommended(&sys);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].value, "2");
    }
}
