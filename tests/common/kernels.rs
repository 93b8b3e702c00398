//! The Debian kernels the VM and boot-loop tests boot: two generic (9p-capable) packages of
//! different series, fetched with `abperf vm fetch-kernel` into abperf's kernel cache (kept
//! between runs).

use super::BIN;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

#[derive(Debug, Clone)]
pub struct Kernel {
    pub package: String,
    pub release: String,
    pub vmlinuz: PathBuf,
    /// Its modules directory (with modules.dep).
    pub modules: PathBuf,
}

/// Sort key of a Debian kernel ABI name such as 6.1.0-56 or 6.12.117+deb12: its numbers.
pub fn numbers(s: &str) -> Vec<u64> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().unwrap_or(0))
        .collect()
}

/// Two generic (9p-capable) kernel packages of different series (6.1 and 6.12 on Debian 12),
/// or one twice if the archive has one series. A series' cached package is preferred, so new
/// uploads do not cost a download per test run. `$ABPERF_TEST_KERNELS` ("pkg1 pkg2") overrides.
pub fn choose_packages() -> Result<Vec<String>, String> {
    if let Ok(v) = std::env::var("ABPERF_TEST_KERNELS") {
        let p: Vec<String> = v.split_whitespace().map(str::to_string).collect();
        if !p.is_empty() {
            return Ok(p);
        }
    }
    let list = || {
        Command::new("apt-cache")
            .args(["pkgnames", "linux-image-"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let mut names = list();
    if !names.contains("-amd64-unsigned") {
        let _ = Command::new("apt-get").args(["update", "-qq"]).status();
        names = list();
    }
    let cached: Vec<String> = {
        let o = Command::new(BIN)
            .args(["vm", "kernels", "--format", "json"])
            .output()
            .map_err(|e| e.to_string())?;
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|k| k["package"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    // series ("6.1", "6.12") -> packages
    let mut series: BTreeMap<(u64, u64), Vec<String>> = BTreeMap::new();
    for n in names.lines().map(str::trim) {
        let Some(abi) = n
            .strip_prefix("linux-image-")
            .and_then(|r| r.strip_suffix("-amd64-unsigned"))
        else {
            continue;
        };
        if abi.contains("cloud")
            || abi.contains("rt")
            || !abi.starts_with(|c: char| c.is_ascii_digit())
        {
            continue;
        }
        let k = numbers(abi);
        if k.len() < 2 {
            continue;
        }
        series.entry((k[0], k[1])).or_default().push(n.to_string());
    }
    let mut chosen: Vec<String> = series
        .values_mut()
        .rev()
        .take(2)
        .map(|pkgs| {
            pkgs.sort_by_key(|p| numbers(p));
            pkgs.iter()
                .rev()
                .find(|p| cached.contains(p))
                .unwrap_or_else(|| pkgs.last().unwrap())
                .clone()
        })
        .collect();
    match chosen.len() {
        0 => Err("apt-cache lists no linux-image-*-amd64-unsigned package".into()),
        1 => {
            chosen.push(chosen[0].clone());
            Ok(chosen)
        }
        _ => Ok(chosen),
    }
}

pub fn fetch(package: &str) -> Kernel {
    let o = Command::new(BIN)
        .args(["vm", "fetch-kernel", "--format", "json", package])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "fetch-kernel {package}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let k = &v[0];
    let kernel = Kernel {
        package: k["package"].as_str().unwrap().to_string(),
        release: k["release"].as_str().unwrap().to_string(),
        vmlinuz: PathBuf::from(k["vmlinuz"].as_str().unwrap()),
        modules: PathBuf::from(k["modules"].as_str().unwrap()),
    };
    assert!(kernel.vmlinuz.is_file(), "{kernel:?}");
    assert!(
        kernel.modules.join("modules.dep").is_file(),
        "depmod ran: {k}"
    );
    kernel
}
