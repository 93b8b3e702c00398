//! Labels of an experiment (`--label KEY=VALUE` on `run`, `fleet run`, `import`, `micro`): what
//! a team orders its history by (a commit, a date, a build number). Stored per experiment as a
//! JSON object (store migration 16); `abperf history` orders and names points by them.

use std::collections::BTreeMap;

/// An experiment's labels, by key.
pub type Labels = BTreeMap<String, String>;

/// Longest key and value accepted.
const MAX_KEY: usize = 64;
const MAX_VALUE: usize = 256;

/// Whether `key` is a label key: a letter, then letters, digits, `_`, `-` or `.`, at most 64.
pub fn valid_key(key: &str) -> bool {
    let mut chars = key.chars();
    key.len() <= MAX_KEY
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// One `KEY=VALUE`, checked: the key as [`valid_key`] says, the value non-empty, at most 256
/// bytes, without control characters.
pub fn parse(text: &str) -> Result<(String, String), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("--label '{text}': expected KEY=VALUE"))?;
    if !valid_key(key) {
        return Err(format!(
            "--label '{text}': the key must start with a letter and hold only letters, digits, \
             '_', '-' and '.' (at most {MAX_KEY})"
        ));
    }
    if value.is_empty() || value.len() > MAX_VALUE || value.chars().any(char::is_control) {
        return Err(format!(
            "--label '{key}=...': the value must be 1 to {MAX_VALUE} bytes without control characters"
        ));
    }
    Ok((key.to_string(), value.to_string()))
}

/// Every `--label` of a command, checked; a key given twice is refused.
pub fn parse_all(texts: &[String]) -> Result<Labels, String> {
    let mut labels = Labels::new();
    for t in texts {
        let (k, v) = parse(t)?;
        if labels.insert(k.clone(), v).is_some() {
            return Err(format!("--label {k}: given twice"));
        }
    }
    Ok(labels)
}

/// Labels as stored (a JSON object of strings, or NULL for none). A stored row is untrusted:
/// anything else is an error naming the experiment.
pub fn from_stored(id: i64, stored: Option<&str>) -> Result<Labels, String> {
    let Some(text) = stored else {
        return Ok(Labels::new());
    };
    let labels: Labels = serde_json::from_str(text).map_err(|e| {
        format!("experiment {id}: stored labels are not a JSON object of strings: {e}")
    })?;
    for (k, v) in &labels {
        if !valid_key(k) || v.chars().any(char::is_control) {
            return Err(format!(
                "experiment {id}: stored label '{k}' is not a valid label"
            ));
        }
    }
    Ok(labels)
}

/// Labels as stored: None for none (so that an unlabelled experiment's row is unchanged).
pub fn to_stored(labels: &Labels) -> Option<String> {
    (!labels.is_empty()).then(|| serde_json::to_string(labels).expect("strings serialise"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_are_checked() {
        assert_eq!(
            parse("commit=abc123").unwrap(),
            ("commit".into(), "abc123".into())
        );
        assert_eq!(parse("v=a=b").unwrap().1, "a=b");
        for bad in ["commit", "=x", "1c=x", "c d=x", "c=", "c=a\nb", "ké=x"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(parse(&format!("k={}", "x".repeat(257))).is_err());
        let e = parse_all(&["a=1".into(), "a=2".into()]).unwrap_err();
        assert!(e.contains("twice"), "{e}");
    }

    #[test]
    fn stored_labels_round_trip_and_bad_rows_are_refused() {
        let l = parse_all(&["commit=abc".into(), "date=2026-11-27".into()]).unwrap();
        let s = to_stored(&l);
        assert_eq!(from_stored(3, s.as_deref()).unwrap(), l);
        assert_eq!(to_stored(&Labels::new()), None);
        assert!(from_stored(3, None).unwrap().is_empty());
        let e = from_stored(3, Some("[1]")).unwrap_err();
        assert!(e.contains("experiment 3"), "{e}");
        assert!(from_stored(3, Some(r#"{"a b":"x"}"#)).is_err());
    }
}
