//! `{NAME}` placeholders and `-L` lists must match: a `-L` name that no command uses would make
//! variants that run identical commands, and a `{NAME}` that no `-L` defines would run with the
//! braces left in. Both are usage errors before anything runs.

use super::ParamList;
use abperf_model::error::usage;
use std::collections::BTreeSet;

/// The `{NAME}` placeholders in `text` (NAME as `-L` accepts it: letters, digits, `_`, `-`).
/// Shell parameter expansions (`${HOME}`) are not placeholders.
pub fn placeholders(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{' && (i == 0 || bytes[i - 1] != b'$') {
            let rest = &text[i + 1..];
            let len = rest
                .bytes()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
                .count();
            if len > 0 && rest.as_bytes().get(len) == Some(&b'}') {
                out.push(rest[..len].to_string());
                i += len + 2;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Check `texts` (what, text): the commands and --pre/--post/--setup/--cleanup, against the
/// `-L` lists, with or without any `-L`: a placeholder no `-L` defines is an error either way
/// (awk's `{print}` is one; `{print $1}`, `{ print }`, `{}`, `${HOME}` and `{a,b}` are not).
pub fn check(texts: &[(&str, &str)], params: &[ParamList]) -> anyhow::Result<()> {
    let defined: BTreeSet<&str> = params.iter().map(|p| p.name.as_str()).collect();
    let mut used = BTreeSet::new();
    for (what, text) in texts {
        for name in placeholders(text) {
            if !defined.contains(name.as_str()) {
                let list: Vec<String> = defined.iter().map(|d| format!("{{{d}}}")).collect();
                let defined = if list.is_empty() {
                    "no -L given".to_string()
                } else {
                    format!("defined: {}", list.join(", "))
                };
                return Err(usage(format!(
                    "{what} '{text}': {{{name}}} is not defined by any -L ({defined}); add \
                     -L {name}=V1,V2 or correct the name (for literal braces, as in awk, write \
                     '{{ {name} }}')"
                )));
            }
            used.insert(name);
        }
    }
    for p in params {
        if !used.contains(&p.name) {
            return Err(usage(format!(
                "-L {}={}: {{{}}} appears in no command, --pre, --post, --setup or --cleanup, \
                 so its variants would run identical commands",
                p.name,
                p.values.join(","),
                p.name
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::parse_param_list;

    #[test]
    fn finds_placeholders_not_shell_expansions() {
        assert_eq!(placeholders("./flush {pages} {n-1} x"), ["pages", "n-1"]);
        assert!(placeholders("echo ${HOME} {} {a b} {1..3} {a,b} {").is_empty());
        assert_eq!(placeholders("{{x}}"), ["x"]);
    }

    #[test]
    fn undefined_and_unused_names_are_usage_errors() {
        let x = parse_param_list("x=1,2").unwrap();
        let e = check(&[("COMMAND", "echo {y}")], std::slice::from_ref(&x)).unwrap_err();
        assert_eq!(abperf_model::error::exit_code(&e), 2);
        assert!(
            e.to_string().contains("{y} is not defined by any -L"),
            "{e}"
        );
        let e = check(&[("COMMAND", "echo hi")], std::slice::from_ref(&x)).unwrap_err();
        assert!(
            e.to_string()
                .contains("-L x=1,2: {x} appears in no command"),
            "{e}"
        );
        // Used only in --pre: fine.
        check(&[("COMMAND", "true"), ("--pre", "echo {x}")], &[x]).unwrap();
        // Without -L a placeholder is an error too; shell and awk syntax is none.
        let e = check(&[("COMMAND", "echo {foo}")], &[]).unwrap_err();
        assert_eq!(abperf_model::error::exit_code(&e), 2);
        assert!(
            e.to_string()
                .contains("{foo} is not defined by any -L (no -L given)"),
            "{e}"
        );
        assert!(check(&[("--pre", "awk '{print}'")], &[]).is_err());
        check(
            &[
                ("COMMAND", "awk '{print $1}' f; awk '{ print }' f"),
                ("COMMAND", "find . -exec ls {} +; echo ${HOME} {a,b} {1..3}"),
                ("--setup", "{ true; }"),
            ],
            &[],
        )
        .unwrap();
    }
}
