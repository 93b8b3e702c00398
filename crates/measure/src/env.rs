//! The environment snapshot stored with every experiment: what a reviewer asks before trusting a
//! number (kernel, cmdline, CPU, memory, THP, governor, mitigations, VM or bare metal). The
//! doctor's findings are added by `doctor::environment`.

use serde_json::{Map, Value, json};
use std::fs;
use std::path::Path;

/// Where the snapshot reads the kernel's files: [`Live`] reads them as they are now; the doctor's
/// reader can also remember what it read, so that the snapshot and the doctor's settings checks
/// taken together read each file once.
pub trait KernelFiles {
    /// Trimmed content of the file at the absolute kernel path `abs`; None when absent or
    /// unreadable.
    fn read(&self, abs: &str) -> Option<String>;
    /// Names of the entries of the directory `abs`, sorted; None when it is absent.
    fn list(&self, abs: &str) -> Option<Vec<String>>;
}

/// The running kernel's files, read directly.
pub struct Live;

impl KernelFiles for Live {
    fn read(&self, abs: &str) -> Option<String> {
        read_trimmed(Path::new(abs))
    }

    fn list(&self, abs: &str) -> Option<Vec<String>> {
        list_dir(Path::new(abs))
    }
}

/// Trimmed content of a file; None when absent or unreadable.
pub fn read_trimmed(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// Names of the entries of a directory, sorted; None when it is absent.
pub fn list_dir(path: &Path) -> Option<Vec<String>> {
    let mut v: Vec<String> = fs::read_dir(path)
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    Some(v)
}

/// The bracketed choice of a sysfs multiple-choice file (`always [madvise] never` -> `madvise`),
/// or the trimmed content when there is no bracket.
pub fn selected_choice(content: &str) -> String {
    let t = content.trim();
    match (t.find('['), t.find(']')) {
        (Some(a), Some(b)) if b > a => t[a + 1..b].to_string(),
        _ => t.to_string(),
    }
}

fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// `hypervisor` if the CPU reports running under one (cpuinfo flag), with the vendor where the
/// kernel exposes it; `bare metal` otherwise.
fn virtualization(files: &dyn KernelFiles, cpuinfo: &str) -> Value {
    let flags = cpuinfo_field(cpuinfo, "flags").unwrap_or_default();
    let under = flags.split_whitespace().any(|f| f == "hypervisor");
    let vendor = files
        .read("/sys/hypervisor/type")
        .or_else(|| files.read("/sys/class/dmi/id/sys_vendor"))
        .filter(|s| !s.is_empty());
    if under {
        json!({"kind": "virtual machine", "vendor": vendor})
    } else {
        json!({"kind": "bare metal"})
    }
}

fn vulnerabilities(files: &dyn KernelFiles) -> Value {
    const DIR: &str = "/sys/devices/system/cpu/vulnerabilities";
    let mut m = Map::new();
    for name in files.list(DIR).unwrap_or_default() {
        if let Some(v) = files.read(&format!("{DIR}/{name}")) {
            m.insert(name, Value::String(v));
        }
    }
    Value::Object(m)
}

fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: buf is valid for buf.len() bytes; gethostname NUL-terminates within it on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// The machine and kernel part of the snapshot (the doctor's findings are added by
/// `doctor::environment`). Fields that cannot be read on this machine are `null`, never guessed.
pub fn machine() -> Value {
    machine_from(&Live)
}

/// [`machine`] read through `files`.
pub fn machine_from(files: &dyn KernelFiles) -> Value {
    let read_trim = |abs: &str| files.read(abs);
    let cpuinfo = read_trim("/proc/cpuinfo").unwrap_or_default();
    let meminfo = read_trim("/proc/meminfo").unwrap_or_default();
    let mem_kib = cpuinfo_field(&meminfo, "MemTotal").and_then(|v| {
        v.split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
    });
    let governor = read_trim("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    json!({
        "kernel": read_trim("/proc/sys/kernel/osrelease"),
        "kernel_version": read_trim("/proc/sys/kernel/version"),
        "cmdline": read_trim("/proc/cmdline"),
        "arch": std::env::consts::ARCH,
        "cpu_model": cpuinfo_field(&cpuinfo, "model name"),
        "cpu_flags": cpuinfo_field(&cpuinfo, "flags"),
        "cpus_online": read_trim("/sys/devices/system/cpu/online"),
        "cpu_count": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "mem_total_kib": mem_kib,
        "thp_enabled": read_trim("/sys/kernel/mm/transparent_hugepage/enabled").map(|s| selected_choice(&s)),
        "thp_defrag": read_trim("/sys/kernel/mm/transparent_hugepage/defrag").map(|s| selected_choice(&s)),
        "cpufreq_governor": governor,
        "smt": read_trim("/sys/devices/system/cpu/smt/control"),
        "clocksource": read_trim("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "aslr": read_trim("/proc/sys/kernel/randomize_va_space"),
        "perf_event_paranoid": read_trim("/proc/sys/kernel/perf_event_paranoid"),
        "vulnerabilities": vulnerabilities(files),
        "virtualization": virtualization(files, &cpuinfo),
        "hostname": hostname(),
        "abperf_version": env!("CARGO_PKG_VERSION"),
        "abperf": super::build::identity(),
    })
}

/// Every field whose value differs between two snapshots, as (field, a, b), nested objects
/// flattened with dots (`vulnerabilities.spectre_v2`). `doctor_sampled` (CPU use, load,
/// pressure over a 0.2 s sample: different every time) is left out; the status of those checks is
/// compared under `doctor`.
pub fn differences(a: &Value, b: &Value) -> Vec<(String, String, String)> {
    fn walk(prefix: &str, a: &Value, b: &Value, out: &mut Vec<(String, String, String)>) {
        match (a, b) {
            (Value::Object(ma), Value::Object(mb)) => {
                let mut keys: Vec<&String> = ma
                    .keys()
                    .chain(mb.keys())
                    .filter(|k| !(prefix.is_empty() && k.as_str() == "doctor_sampled"))
                    .collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    let name = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(
                        &name,
                        ma.get(k).unwrap_or(&Value::Null),
                        mb.get(k).unwrap_or(&Value::Null),
                        out,
                    );
                }
            }
            _ if a != b => {
                let show = |v: &Value| match v {
                    Value::String(s) => s.clone(),
                    Value::Null => "(absent)".to_string(),
                    other => other.to_string(),
                };
                out.push((prefix.to_string(), show(a), show(b)));
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", a, b, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bracketed_choice() {
        assert_eq!(selected_choice("always [madvise] never\n"), "madvise");
        assert_eq!(selected_choice("33\n"), "33");
    }

    #[test]
    fn machine_reads_this_machine() {
        let s = machine();
        assert!(s["kernel"].as_str().is_some_and(|k| !k.is_empty()));
        assert!(s["cpu_count"].as_u64().unwrap() >= 1);
        assert!(s["mem_total_kib"].as_u64().unwrap() > 0);
    }

    #[test]
    fn differences_are_listed_flat() {
        let a = json!({"kernel": "6.1", "vulnerabilities": {"x": "Mitigated"}, "same": 1});
        let b = json!({"kernel": "6.2", "vulnerabilities": {"x": "Vulnerable"}, "same": 1, "new": true});
        let d = differences(&a, &b);
        assert_eq!(d.len(), 3);
        assert!(d.contains(&("kernel".into(), "6.1".into(), "6.2".into())));
        assert!(d.contains(&(
            "vulnerabilities.x".into(),
            "Mitigated".into(),
            "Vulnerable".into()
        )));
        assert!(d.contains(&("new".into(), "(absent)".into(), "true".into())));
        // Sampled doctor findings differ every time: left out; a status change is listed.
        let a = json!({"doctor": {"load_average": "ok", "thp": "ok: enabled: madvise"},
                       "doctor_sampled": {"load_average": "0.10 0.20 0.30"}});
        let b = json!({"doctor": {"load_average": "bad", "thp": "warn: enabled: always"},
                       "doctor_sampled": {"load_average": "5.00 4.00 3.00"}});
        let d = differences(&a, &b);
        assert_eq!(
            d,
            vec![
                ("doctor.load_average".into(), "ok".into(), "bad".into()),
                (
                    "doctor.thp".into(),
                    "ok: enabled: madvise".into(),
                    "warn: enabled: always".into()
                ),
            ]
        );
    }
}
