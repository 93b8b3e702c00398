//! The playbook abperf generates for one dispatch (written as JSON, which Ansible's YAML loader
//! reads), and the callback plugin that tells abperf which host failed and why.
//!
//! On every host, in one play: make the experiment's directory (`~/.abperf-fleet/TOKEN/POS`,
//! mode 0700 like the directories above it, TOKEN random per experiment, so that experiments of
//! other coordinators and stores never share one, and POS the host's place in the plan, so that
//! hosts sharing a home directory over NFS do not either), copy the coordinator's abperf there
//! (and the spawn helper beside it) unless the host's installed abperf is used
//! (`--remote-abperf`), check that `abperf --version` there prints the coordinator's, copy the
//! host's share (0600: it may name the store with its credentials), run it (`abperf run
//! --fleet-share share.json --lines lines.jsonl`), fetch lines.jsonl back and remove the share,
//! also when the run failed, and, when it did not, remove the copied binaries.
//!
//! No host name is ever put where Ansible templates (`hosts:` is `all`; the hosts are picked by
//! a `--limit @FILE` file): a name is the inventory's text, and a template in it would run on
//! the coordinator.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The remote file the host's runs are appended to.
pub const LINES: &str = "lines.jsonl";

/// The abperf a host runs.
#[derive(Debug, Clone)]
pub enum RemoteAbperf {
    /// The coordinator's own binary, copied, with the spawn helper beside it when there is one.
    Copy {
        exe: PathBuf,
        spawn: Option<PathBuf>,
    },
    /// A binary already on the host (`--remote-abperf PATH`).
    Installed(String),
}

/// One dispatch: the hosts, where their files are on the coordinator, what they run.
pub struct Dispatch<'a> {
    pub token: &'a str,
    pub abperf: &'a RemoteAbperf,
    /// What `abperf --version` prints on the coordinator.
    pub version: &'a str,
    /// Per host: its place in the plan, its share file on the coordinator, and where its lines
    /// file is fetched to.
    pub places: BTreeMap<String, usize>,
    pub shares: BTreeMap<String, PathBuf>,
    pub fetched: BTreeMap<String, PathBuf>,
}

fn path_map(m: &BTreeMap<String, PathBuf>) -> Value {
    m.iter()
        .map(|(h, p)| (h.clone(), Value::String(p.display().to_string())))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// The tasks that put abperf on the host (none for an installed one) and check its version.
fn abperf_tasks(d: &Dispatch) -> Vec<Value> {
    let mut tasks = Vec::new();
    if let RemoteAbperf::Copy { exe, spawn } = d.abperf {
        let mut files = vec![(exe.clone(), "abperf")];
        files.extend(spawn.iter().map(|s| (s.clone(), "abperf-spawn")));
        for (src, name) in files {
            tasks.push(json!({
                "name": format!("copy {name}"),
                "ansible.builtin.copy": {
                    "src": src.display().to_string(),
                    "dest": format!("{{{{ abperf_dir.stdout }}}}/{name}"),
                    "mode": "0755"
                }
            }));
        }
    }
    tasks.push(json!({
        "name": "abperf --version",
        "ansible.builtin.command": {"argv": ["{{ abperf_bin }}", "--version"]},
        "register": "abperf_version",
        "changed_when": false
    }));
    tasks.push(json!({
        "name": "the same abperf as the coordinator's",
        "ansible.builtin.fail": {
            "msg": "{{ abperf_bin }} --version prints '{{ abperf_version.stdout }}'; the coordinator's is '{{ abperf_coordinator }}'"
        },
        "when": "abperf_version.stdout != abperf_coordinator"
    }));
    tasks
}

/// The text of the file `ansible-playbook --limit @FILE` reads: one host a line (each one
/// checked by `inventory::bad_name`, so a line is a host's name, never a pattern).
pub fn limit_file(hosts: &[String]) -> String {
    hosts.iter().map(|h| format!("{h}\n")).collect()
}

/// The playbook of dispatch `d` (to every host of the inventory: the hosts are picked by
/// [`limit_file`]).
pub fn playbook(d: &Dispatch) -> Value {
    let bin = match d.abperf {
        RemoteAbperf::Copy { .. } => "{{ abperf_dir.stdout }}/abperf".to_string(),
        RemoteAbperf::Installed(p) => p.clone(),
    };
    let mut tasks = vec![json!({
        "name": "the experiment's directory",
        "ansible.builtin.shell": format!(
            "umask 077 && mkdir -p \"$HOME/.abperf-fleet/{t}/$POS\" && \
             chmod 700 \"$HOME/.abperf-fleet\" \"$HOME/.abperf-fleet/{t}\" \"$HOME/.abperf-fleet/{t}/$POS\" && \
             cd \"$HOME/.abperf-fleet/{t}/$POS\" && pwd",
            t = d.token
        ),
        "environment": {"POS": "{{ abperf_places[inventory_hostname] }}"},
        "register": "abperf_dir",
        "changed_when": false
    })];
    tasks.extend(abperf_tasks(d));
    tasks.push(json!({
        "name": "copy the host's share",
        "ansible.builtin.copy": {
            "src": "{{ abperf_shares[inventory_hostname] }}",
            "dest": "{{ abperf_dir.stdout }}/share.json",
            "mode": "0600"
        }
    }));
    tasks.push(json!({
        "name": "run the share",
        "block": [{
            "name": "abperf run --fleet-share",
            "ansible.builtin.command": {
                "argv": ["{{ abperf_bin }}", "run", "--fleet-share",
                    "{{ abperf_dir.stdout }}/share.json", "--lines",
                    format!("{{{{ abperf_dir.stdout }}}}/{LINES}")],
                "chdir": "{{ abperf_dir.stdout }}"
            }
        }],
        "always": [{
            "name": "fetch the runs",
            "ansible.builtin.fetch": {
                "src": format!("{{{{ abperf_dir.stdout }}}}/{LINES}"),
                "dest": "{{ abperf_fetched[inventory_hostname] }}",
                "flat": true,
                "fail_on_missing": false
            }
        }, {
            // The share may name the store with its credentials: it does not outlive the run.
            "name": "remove the share",
            "ansible.builtin.file": {
                "path": "{{ abperf_dir.stdout }}/share.json",
                "state": "absent"
            }
        }]
    }));
    if matches!(d.abperf, RemoteAbperf::Copy { .. }) {
        // The share ran and its runs are fetched: the copied binaries are not needed any more
        // (a resume copies them again); the lines file stays.
        tasks.push(json!({
            "name": "remove the copied abperf",
            "ansible.builtin.file": {
                "path": "{{ item }}",
                "state": "absent"
            },
            "loop": ["{{ abperf_dir.stdout }}/abperf", "{{ abperf_dir.stdout }}/abperf-spawn"]
        }));
    }
    json!([{
        "name": format!("abperf fleet {}", d.token),
        // Never a host's name here: Ansible templates `hosts:`, and a name is the inventory's
        // text. The hosts are picked by `--limit @FILE` ([`limit_file`]), which is not.
        "hosts": "all",
        "gather_facts": false,
        "vars": {
            "abperf_bin": bin,
            "abperf_coordinator": d.version,
            "abperf_places": d.places,
            "abperf_shares": path_map(&d.shares),
            "abperf_fetched": path_map(&d.fetched)
        },
        "tasks": tasks
    }])
}

/// The callback plugin's name (`ANSIBLE_CALLBACKS_ENABLED`).
pub const CALLBACK: &str = "abperf_fleet";

/// A callback plugin that appends one JSON line per failed or unreachable host to the file
/// `$ABPERF_FLEET_EVENTS`: the host, the task, and Ansible's reason.
pub const CALLBACK_PLUGIN: &str = r#"# Written by abperf fleet run for one dispatch; removed after it.
import json
import os

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "abperf_fleet"
    CALLBACK_NEEDS_ENABLED = True

    def _event(self, result, what):
        r = result._result
        why = r.get("msg") or r.get("stderr") or r.get("module_stderr") or ""
        if not why and "rc" in r:
            why = "exit status %s" % r["rc"]
        line = json.dumps({
            "host": result._host.get_name(),
            "task": result._task.get_name(),
            "what": what,
            "why": str(why).strip(),
        })
        with open(os.environ["ABPERF_FLEET_EVENTS"], "a") as f:
            f.write(line + "\n")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if not ignore_errors:
            self._event(result, "failed")

    def v2_runner_on_unreachable(self, result):
        self._event(result, "unreachable")
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_installed_abperf_is_not_copied_and_every_host_has_its_files() {
        let shares = BTreeMap::from([("a".to_string(), PathBuf::from("/t/0.json"))]);
        let fetched = BTreeMap::from([("a".to_string(), PathBuf::from("/t/0.jsonl"))]);
        let installed = RemoteAbperf::Installed("/usr/local/bin/abperf".into());
        let d = Dispatch {
            token: "f00",
            abperf: &installed,
            version: "abperf 1",
            places: BTreeMap::from([("a".to_string(), 2)]),
            shares,
            fetched,
        };
        let p = playbook(&d);
        let text = p.to_string();
        assert_eq!(p[0]["hosts"], "all");
        assert_eq!(limit_file(&["a".into(), "b".into()]), "a\nb\n");
        assert!(!text.contains("copy abperf"));
        assert_eq!(p[0]["vars"]["abperf_bin"], "/usr/local/bin/abperf");
        assert_eq!(p[0]["vars"]["abperf_shares"]["a"], "/t/0.json");
        assert!(text.contains(".abperf-fleet/f00"));
    }
}
