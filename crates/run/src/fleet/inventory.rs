//! The hosts of an Ansible inventory, as Ansible itself reads it (`ansible-inventory --list`,
//! JSON): abperf never parses an inventory's INI or YAML. `--limit` picks hosts and groups by
//! name from what Ansible listed.

use abperf_model::error::usage;
use anyhow::Context;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

/// Environment that makes Ansible fail on an inventory it cannot parse (by default it warns
/// and goes on with no hosts).
pub const STRICT_INVENTORY: &[(&str, &str)] = &[
    ("ANSIBLE_INVENTORY_UNPARSED_FAILED", "true"),
    ("ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED", "true"),
];

/// What Ansible said, shortened to its lines that tell something (its warnings and errors).
pub fn ansible_words(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join(" ")
}

/// The hosts of `inventory` (sorted by name), only those `limit` names (hosts or groups,
/// comma-separated) when given.
pub fn hosts(inventory: &Path, limit: Option<&str>) -> anyhow::Result<Vec<String>> {
    if !inventory.exists() {
        return Err(usage(format!(
            "-i/--inventory {}: no such file",
            inventory.display()
        )));
    }
    // Ansible's own temporary files stay out of ~/.ansible.
    let local = tempfile::tempdir().context("cannot make a temporary directory")?;
    let out = Command::new("ansible-inventory")
        .arg("-i")
        .arg(inventory)
        .arg("--list")
        .envs(STRICT_INVENTORY.iter().copied())
        .env("ANSIBLE_LOCAL_TEMP", local.path())
        .stdin(Stdio::null())
        .output()
        .context("cannot run ansible-inventory (is Ansible installed? Debian: ansible-core)")?;
    if !out.status.success() {
        anyhow::bail!(
            "inventory {}: Ansible cannot read it ({}): {}",
            inventory.display(),
            out.status,
            ansible_words(&out.stderr)
        );
    }
    let list: Value = serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "inventory {}: ansible-inventory --list did not print JSON",
            inventory.display()
        )
    })?;
    let picked = pick(&list, limit)
        .map_err(|e| usage(format!("--limit: {e} in inventory {}", inventory.display())))?;
    if picked.is_empty() {
        return Err(usage(format!(
            "inventory {}: no hosts{}",
            inventory.display(),
            limit.map_or(String::new(), |l| format!(" match --limit {l}"))
        )));
    }
    Ok(picked.into_iter().collect())
}

/// The hosts of group `name` and of its children, into `out`.
fn group_hosts(list: &Value, name: &str, out: &mut BTreeSet<String>, depth: usize) {
    let Some(g) = list.get(name) else {
        return;
    };
    for h in g["hosts"].as_array().into_iter().flatten() {
        if let Some(h) = h.as_str() {
            out.insert(h.to_string());
        }
    }
    if depth < 64 {
        for c in g["children"].as_array().into_iter().flatten() {
            if let Some(c) = c.as_str() {
                group_hosts(list, c, out, depth + 1);
            }
        }
    }
}

/// The hosts `limit` picks from `ansible-inventory --list`'s `list` (all without a limit).
fn pick(list: &Value, limit: Option<&str>) -> Result<BTreeSet<String>, String> {
    let mut all = BTreeSet::new();
    group_hosts(list, "all", &mut all, 0);
    if let Some(vars) = list["_meta"]["hostvars"].as_object() {
        all.extend(vars.keys().cloned());
    }
    let Some(limit) = limit else {
        return Ok(all);
    };
    let mut picked = BTreeSet::new();
    for name in limit.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let before = picked.len();
        if all.contains(name) {
            picked.insert(name.to_string());
        } else {
            group_hosts(list, name, &mut picked, 0);
        }
        if picked.len() == before && list.get(name).is_none() {
            return Err(format!("'{name}' is neither a host nor a group"));
        }
    }
    Ok(picked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list() -> Value {
        serde_json::json!({
            "_meta": {"hostvars": {"a": {}, "b": {}, "c": {}}},
            "all": {"children": ["ungrouped", "zen", "lab"]},
            "lab": {"children": ["skl"]},
            "skl": {"hosts": ["b", "c"]},
            "zen": {"hosts": ["a"]},
            "ungrouped": {}
        })
    }

    #[test]
    fn a_limit_picks_hosts_and_groups_with_their_children() {
        let all = pick(&list(), None).unwrap();
        assert_eq!(all.into_iter().collect::<Vec<_>>(), ["a", "b", "c"]);
        let lab = pick(&list(), Some("lab")).unwrap();
        assert_eq!(lab.into_iter().collect::<Vec<_>>(), ["b", "c"]);
        let some = pick(&list(), Some("a, c")).unwrap();
        assert_eq!(some.into_iter().collect::<Vec<_>>(), ["a", "c"]);
        assert!(pick(&list(), Some("nope")).unwrap_err().contains("'nope'"));
    }
}
