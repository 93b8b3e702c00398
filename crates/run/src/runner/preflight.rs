//! Checks made before an experiment is stored: every `-k` value against the choices its file
//! lists (`always [madvise] never`), or that a sibling file lists (`scaling_governor` and
//! `scaling_available_governors`), so that a typo is a usage error instead of a failure after the
//! first variant's runs.

use crate::design::KnobSpec;
use abperf_model::error::usage;
use std::path::Path;

/// Files whose choices are listed in a sibling file: (file name, sibling).
const SIBLING_CHOICES: &[(&str, &str)] = &[
    ("scaling_governor", "scaling_available_governors"),
    (
        "energy_performance_preference",
        "energy_performance_available_preferences",
    ),
    ("current_clocksource", "available_clocksource"),
];

/// The choices of a multiple-choice file: one line of words, exactly one of them bracketed
/// (`always [madvise] never` -> always, madvise, never). `None` for anything else.
pub fn bracketed_choices(content: &str) -> Option<Vec<String>> {
    let t = content.trim();
    if t.is_empty() || t.lines().count() != 1 {
        return None;
    }
    let words: Vec<&str> = t.split_whitespace().collect();
    let bracketed = words
        .iter()
        .filter(|w| w.len() > 2 && w.starts_with('[') && w.ends_with(']'))
        .count();
    if bracketed != 1
        || words
            .iter()
            .any(|w| w.contains(['[', ']']) && !w.starts_with('['))
    {
        return None;
    }
    Some(
        words
            .iter()
            .map(|w| w.trim_start_matches('[').trim_end_matches(']').to_string())
            .collect(),
    )
}

/// The values `path` accepts, where the file (or its sibling) lists them; `None` when it does
/// not (numbers, free text) or cannot be read (the knob guard reports that).
pub fn knob_choices(path: &str) -> Option<(Vec<String>, String)> {
    // Through the knob reader: a FIFO or device is refused before it is opened (the knob guard
    // then says why), and at most 1 MiB is read.
    let content = super::knobs::read_raw(path).ok()?;
    if let Some(c) = bracketed_choices(&content) {
        return Some((c, path.to_string()));
    }
    let p = Path::new(path);
    let name = p.file_name()?.to_str()?;
    let (_, sibling) = SIBLING_CHOICES.iter().find(|(f, _)| *f == name)?;
    let sib = p.with_file_name(sibling);
    let list = super::knobs::read_raw(sib.to_str()?).ok()?;
    let choices: Vec<String> = list.split_whitespace().map(str::to_string).collect();
    (!choices.is_empty()).then(|| (choices, sib.display().to_string()))
}

/// Every value of every knob against the choices its file lists.
pub fn check_knob_values(knobs: &[KnobSpec]) -> anyhow::Result<()> {
    for k in knobs {
        let Some((choices, from)) = knob_choices(&k.path) else {
            continue;
        };
        for v in &k.values {
            if !choices.iter().any(|c| c == v.trim()) {
                return Err(usage(format!(
                    "-k {}={}: '{v}' is not a value this knob accepts; {from} lists: {}",
                    k.path,
                    k.values.join(","),
                    choices.join(", ")
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_of_multiple_choice_files() {
        assert_eq!(
            bracketed_choices("always [madvise] never\n").unwrap(),
            ["always", "madvise", "never"]
        );
        assert_eq!(
            bracketed_choices("[none] mq-deadline kyber").unwrap(),
            ["none", "mq-deadline", "kyber"]
        );
        assert!(bracketed_choices("33\n").is_none());
        assert!(bracketed_choices("a b c").is_none());
        assert!(bracketed_choices("[a] [b]").is_none());
        assert!(bracketed_choices("[a]\n[b]\n").is_none());
    }

    #[test]
    fn a_value_outside_the_choices_is_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("enabled");
        std::fs::write(&p, "always [madvise] never\n").unwrap();
        let path = p.display().to_string();
        let ok = KnobSpec {
            path: path.clone(),
            values: vec!["always".into(), "never".into()],
        };
        check_knob_values(&[ok]).unwrap();
        let bad = KnobSpec {
            path: path.clone(),
            values: vec!["always".into(), "bogus".into()],
        };
        let e = check_knob_values(&[bad]).unwrap_err();
        assert_eq!(abperf_model::error::exit_code(&e), 2);
        assert!(
            e.to_string()
                .contains("'bogus' is not a value this knob accepts"),
            "{e}"
        );
        assert!(e.to_string().contains("always, madvise, never"), "{e}");
        // A governor file lists its choices next door.
        let g = dir.path().join("scaling_governor");
        std::fs::write(&g, "performance\n").unwrap();
        std::fs::write(
            dir.path().join("scaling_available_governors"),
            "performance powersave\n",
        )
        .unwrap();
        let e = check_knob_values(&[KnobSpec {
            path: g.display().to_string(),
            values: vec!["ondemand".into()],
        }])
        .unwrap_err();
        assert!(e.to_string().contains("performance, powersave"), "{e}");
        // A number file lists nothing: anything goes here (the write is verified later).
        let n = dir.path().join("ceiling");
        std::fs::write(&n, "33\n").unwrap();
        check_knob_values(&[KnobSpec {
            path: n.display().to_string(),
            values: vec!["x".into()],
        }])
        .unwrap();
    }
}
