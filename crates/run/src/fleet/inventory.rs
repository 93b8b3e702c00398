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
/// comma-separated) when given; a name abperf does not dispatch to ([`bad_name`]) among them is
/// an error naming the inventory's file and line.
pub fn hosts(inventory: &Path, limit: Option<&str>) -> anyhow::Result<Vec<String>> {
    let picked = listed(inventory, limit)?;
    refuse_bad_names(inventory, &picked)?;
    Ok(picked)
}

/// [`hosts`] without the check of their names (a resume checks those it dispatches to).
pub fn listed(inventory: &Path, limit: Option<&str>) -> anyhow::Result<Vec<String>> {
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

/// Why abperf does not dispatch to a host called `name` (None: it does). A name is what
/// Ansible's patterns and templates take literally: letters, digits, `.`, `-` and `_`, starting
/// with a letter or digit, at most 253 bytes (a DNS name's length). Anything else could be a
/// template (`{{ lookup('pipe', ...) }}` runs a command on the coordinator), a pattern (`*`,
/// `!`, `~`, `&`, `:`, `,`) or an escape sequence on a terminal.
pub fn bad_name(name: &str) -> Option<&'static str> {
    let first_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    if name.is_empty() || name.len() > 253 {
        Some("a host name has 1 to 253 characters")
    } else if !first_ok {
        Some("a host name starts with a letter or a digit")
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    {
        Some(
            "a host name is letters, digits, '.', '-' and '_' (Ansible would read other \
             characters as a template or a pattern)",
        )
    } else {
        None
    }
}

/// The first line of the inventory file that holds `name` (None: a directory, a script's
/// output, or the name written otherwise, e.g. with YAML escapes).
fn line_of(inventory: &Path, name: &str) -> Option<usize> {
    let text = std::fs::read(inventory).ok()?;
    let text = String::from_utf8_lossy(&text);
    text.lines().position(|l| l.contains(name)).map(|i| i + 1)
}

/// A usage error for the first of `names` abperf does not dispatch to ([`bad_name`]), naming
/// the inventory's file and line where it is, the name (escaped) and why.
pub fn refuse_bad_names<'a>(
    inventory: &Path,
    names: impl IntoIterator<Item = &'a String>,
) -> anyhow::Result<()> {
    for name in names {
        if let Some(why) = bad_name(name) {
            let at = line_of(inventory, name).map_or(String::new(), |l| format!(":{l}"));
            return Err(usage(format!(
                "inventory {}{at}: host {:?} is refused: {why}",
                inventory.display(),
                abperf_model::escape::shorten(name, 80)
            )));
        }
    }
    Ok(())
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

    #[test]
    fn only_plain_host_names_are_dispatched_to() {
        for good in ["lab-a", "epyc_1.lab.example", "10.0.0.11", "x"] {
            assert_eq!(bad_name(good), None, "{good}");
        }
        for bad in [
            "h1{{ lookup('pipe','touch X') }}",
            "{% raw %}",
            "a,b",
            "!a",
            "~a.*",
            "-a",
            "a b",
            "a\u{1b}[2J",
            "",
            "web*",
            "fe80::1",
        ] {
            assert!(bad_name(bad).is_some(), "{bad}");
        }
        let dir = tempfile::tempdir().unwrap();
        let inv = dir.path().join("inv.yml");
        std::fs::write(&inv, "all:\n  hosts:\n    ok:\n    \"h{{ x }}\":\n").unwrap();
        let names = ["ok".to_string(), "h{{ x }}".to_string()];
        let e = refuse_bad_names(&inv, &names).unwrap_err().to_string();
        assert!(e.contains("inv.yml:4: host \"h{{ x }}\" is refused"), "{e}");
    }
}
