//! Variants: several commands, `-L NAME=V1,V2` parameter lists and `-k PATH=V1,V2` knobs, combined
//! as every combination (commands x parameters x knobs).

use abperf_model::KnobSetting;
use abperf_model::error::usage;
use std::collections::BTreeMap;

/// `-L NAME=V1,V2,...`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamList {
    pub name: String,
    pub values: Vec<String>,
}

/// `-k PATH=V1,V2,...`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnobSpec {
    pub path: String,
    pub values: Vec<String>,
}

/// One variant as planned: its name, command (with parameters substituted), parameter values
/// and knob values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantPlan {
    pub name: String,
    pub command: String,
    pub parameters: BTreeMap<String, String>,
    pub knobs: Vec<KnobSetting>,
}

fn split_values(flag: &str, arg: &str, rhs: &str) -> anyhow::Result<Vec<String>> {
    let values: Vec<String> = rhs.split(',').map(str::to_string).collect();
    if values.iter().any(|v| v.is_empty()) {
        return Err(usage(format!(
            "{flag} '{arg}': empty value in the list (expected V1,V2,...)"
        )));
    }
    Ok(values)
}

/// Parse `-L NAME=V1,V2,...`.
pub fn parse_param_list(arg: &str) -> anyhow::Result<ParamList> {
    let (name, rhs) = arg.split_once('=').ok_or_else(|| {
        usage(format!(
            "-L/--parameter-list '{arg}': expected NAME=V1,V2,..."
        ))
    })?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(usage(format!(
            "-L/--parameter-list '{arg}': the name must be letters, digits, '_' or '-' (it is used as {{NAME}})"
        )));
    }
    Ok(ParamList {
        name: name.into(),
        values: split_values("-L/--parameter-list", arg, rhs)?,
    })
}

/// Parse `-k PATH=V1,V2,...` (syntax only; the file is checked by the runner before any run).
pub fn parse_knob(arg: &str) -> anyhow::Result<KnobSpec> {
    let (path, rhs) = arg
        .split_once('=')
        .ok_or_else(|| usage(format!("-k/--knob '{arg}': expected PATH=V1,V2,...")))?;
    if !path.starts_with('/') {
        return Err(usage(format!(
            "-k/--knob '{arg}': the path must be absolute (e.g. /sys/kernel/mm/...)"
        )));
    }
    Ok(KnobSpec {
        path: path.into(),
        values: split_values("-k/--knob", arg, rhs)?,
    })
}

/// What makes two knob paths the same knob: the canonical path where it exists on this machine
/// (`..`, `.`, `//` and symlinks resolved, as the knob lock does), else the path with `.`, `..`
/// and repeated slashes resolved by name (a knob that exists only inside a guest).
pub fn knob_identity(path: &str) -> std::path::PathBuf {
    if let Ok(c) = std::fs::canonicalize(path) {
        return c;
    }
    let mut out = std::path::PathBuf::from("/");
    for part in std::path::Path::new(path).components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(p) => out.push(p),
            _ => {}
        }
    }
    out
}

/// Replace every `{NAME}` of `params` in `text`.
pub fn substitute(text: &str, params: &BTreeMap<String, String>) -> String {
    let mut out = text.to_string();
    for (k, v) in params {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

/// A short label for a knob: its last two path components (`transparent_hugepage/enabled`).
pub fn knob_label(path: &str) -> String {
    let parts: Vec<&str> = path.trim_end_matches('/').rsplitn(3, '/').collect();
    match parts.as_slice() {
        [last, parent, _] | [last, parent] if !parent.is_empty() => format!("{parent}/{last}"),
        [last, ..] => last.to_string(),
        [] => path.to_string(),
    }
}

/// Every combination of odometer-style indices over lists of the given lengths.
fn combinations(lengths: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for &len in lengths {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                (0..len).map(move |i| {
                    let mut p = prefix.clone();
                    p.push(i);
                    p
                })
            })
            .collect();
    }
    out
}

/// Build the variants. `names` (from `-n`) name the commands, or every variant when there are as
/// many names as variants.
pub fn build_variants(
    commands: &[String],
    names: &[String],
    params: &[ParamList],
    knobs: &[KnobSpec],
) -> anyhow::Result<Vec<VariantPlan>> {
    if commands.is_empty() || commands.iter().any(|c| c.trim().is_empty()) {
        return Err(usage(
            "no command to run: give at least one non-empty COMMAND",
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for p in params {
        if !seen.insert(format!("L:{}", p.name)) {
            return Err(usage(format!(
                "-L/--parameter-list: parameter '{}' given twice",
                p.name
            )));
        }
    }
    let mut knob_spellings = std::collections::BTreeMap::new();
    for k in knobs {
        if let Some(first) = knob_spellings.insert(knob_identity(&k.path), &k.path) {
            let also = if *first == k.path {
                String::new()
            } else {
                format!(" (also as '{first}')")
            };
            return Err(usage(format!(
                "-k/--knob: knob '{}' given twice{also}: give each knob once, with all its values",
                k.path
            )));
        }
    }
    let mut lengths = vec![commands.len()];
    lengths.extend(params.iter().map(|p| p.values.len()));
    lengths.extend(knobs.iter().map(|k| k.values.len()));
    let combos = combinations(&lengths);
    let total = combos.len();
    if !names.is_empty() && names.len() != commands.len() && names.len() != total {
        return Err(usage(format!(
            "-n/--name given {} times, but there are {} commands and {} variants",
            names.len(),
            commands.len(),
            total
        )));
    }
    let mut out = Vec::with_capacity(total);
    for combo in combos {
        let ci = combo[0];
        let parameters: BTreeMap<String, String> = params
            .iter()
            .zip(&combo[1..])
            .map(|(p, &i)| (p.name.clone(), p.values[i].clone()))
            .collect();
        let knob_values: Vec<KnobSetting> = knobs
            .iter()
            .zip(&combo[1 + params.len()..])
            .map(|(k, &i)| KnobSetting {
                path: k.path.clone(),
                value: k.values[i].clone(),
                original: None,
            })
            .collect();
        let command = substitute(&commands[ci], &parameters);
        let mut parts: Vec<String> = Vec::new();
        if commands.len() > 1 || (params.is_empty() && knobs.is_empty()) {
            parts.push(
                match names.len() == commands.len() && names.len() != total {
                    true => names[ci].clone(),
                    false => command.clone(),
                },
            );
        }
        parts.extend(parameters.iter().map(|(k, v)| format!("{k}={v}")));
        parts.extend(
            knob_values
                .iter()
                .map(|k| format!("{}={}", knob_label(&k.path), k.value)),
        );
        let name = if names.len() == total {
            names[out.len()].clone()
        } else {
            parts.join(" ")
        };
        out.push(VariantPlan {
            name,
            command,
            parameters,
            knobs: knob_values,
        });
    }
    let mut unique = std::collections::BTreeSet::new();
    for v in &out {
        if !unique.insert(v.name.clone()) {
            return Err(usage(format!(
                "two variants would both be named '{}': name them with -n",
                v.name
            )));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn commands_params_and_knobs_combine() {
        let p = parse_param_list("n=1,2").unwrap();
        let k = parse_knob("/sys/kernel/mm/transparent_hugepage/enabled=always,never").unwrap();
        let v = build_variants(&s(&["sleep {n}"]), &[], &[p], &[k]).unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(v[0].command, "sleep 1");
        assert_eq!(v[0].name, "n=1 transparent_hugepage/enabled=always");
        assert_eq!(v[3].knobs[0].value, "never");
    }

    #[test]
    fn names_apply_to_commands() {
        let v = build_variants(&s(&["true", "false"]), &s(&["A", "B"]), &[], &[]).unwrap();
        assert_eq!(v[1].name, "B");
        let v = build_variants(&s(&["true", "false"]), &[], &[], &[]).unwrap();
        assert_eq!(v[0].name, "true");
        assert!(build_variants(&s(&["true"]), &s(&["a", "b", "c"]), &[], &[]).is_err());
        assert!(
            build_variants(&s(&["true", "true"]), &[], &[], &[])
                .unwrap_err()
                .to_string()
                .contains("-n")
        );
    }

    #[test]
    fn malformed_flags_are_usage_errors() {
        for bad in ["n", "=1,2", "n=", "n=1,,2", "a b=1"] {
            let e = parse_param_list(bad).unwrap_err();
            assert_eq!(abperf_model::error::exit_code(&e), 2, "{bad}");
            assert!(e.to_string().contains(bad), "{e}");
        }
        assert!(parse_knob("relative=1").is_err());
        // One knob under two spellings is one knob (it would otherwise wait for its own lock).
        let proc = [
            "/proc/sys/kernel/../kernel/msgmni=1",
            "/proc/sys//kernel/msgmni=2",
        ];
        let guest = ["/no/such/../such/knob=1", "/no/such/./knob=2"];
        for pair in [proc, guest] {
            let ks: Vec<KnobSpec> = pair.iter().map(|a| parse_knob(a).unwrap()).collect();
            let e = build_variants(&["true".into()], &[], &[], &ks).unwrap_err();
            assert!(e.to_string().contains("given twice (also as"), "{e}");
        }
        assert!(parse_knob("/x").is_err());
        assert!(build_variants(&s(&[" "]), &[], &[], &[]).is_err());
    }
}
