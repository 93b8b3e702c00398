//! Short labels for variants in plots and narrow table headers. Names made from `-L` and `-k`
//! lists are long and alike (`pages=33 tlb/ceiling=33 work/iters.knob=1000`); cutting them at a
//! width makes them identical. A label keeps what differs: words every name shares are dropped,
//! then knob paths are shortened to their last component, then the middle is elided, and labels
//! that are still alike are numbered. The HTML report maps each label to its full name.

/// `name` without the "PARAM=value" (or bare "value") tokens of `c`'s family (`--by`), which
/// add nothing inside the family; the whole name when nothing else is left.
pub fn in_family(
    a: &abperf_stats::analysis::Analysis,
    name: &str,
    c: &abperf_stats::compare::Comparison,
) -> String {
    let tokens: Vec<String> = match (&a.by, &c.family) {
        (Some(by), Some(f)) => {
            let params = abperf_stats::analysis::by_params(by);
            let values: Vec<&str> = if params.len() == 1 {
                vec![f.as_str()]
            } else {
                f.split(',').collect()
            };
            params
                .iter()
                .zip(values)
                .flat_map(|(p, v)| [format!("{p}={v}"), v.to_string()])
                .collect()
        }
        _ => return super::fmt::one_line(name),
    };
    let rest: Vec<&str> = name
        .split_whitespace()
        .filter(|t| !tokens.iter().any(|k| k == t))
        .collect();
    if rest.is_empty() {
        super::fmt::one_line(name)
    } else {
        super::fmt::one_line(&rest.join(" "))
    }
}

/// Elision mark.
const ELLIPSIS: char = '…';

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// `s` cut to `width` characters by taking out its middle.
pub fn elide_middle(s: &str, width: usize) -> String {
    let n = chars(s);
    if n <= width || width < 3 {
        return s.to_string();
    }
    let keep = width - 1;
    let head = keep / 2;
    let tail = keep - head;
    let mut out: String = s.chars().take(head).collect();
    out.push(ELLIPSIS);
    out.extend(s.chars().skip(n - tail));
    out
}

/// `path/to/knob=value` -> `knob=value` (the last path component before `=`).
fn short_knob(token: &str) -> String {
    match token.split_once('=') {
        Some((k, v)) if k.contains('/') => {
            let last = k.rsplit('/').find(|p| !p.is_empty()).unwrap_or(k);
            format!("{last}={v}")
        }
        _ => token.to_string(),
    }
}

fn distinct(labels: &[String]) -> bool {
    let mut seen = std::collections::BTreeSet::new();
    labels.iter().all(|l| seen.insert(l.as_str()))
}

fn fits(labels: &[String], width: usize) -> bool {
    labels.iter().all(|l| chars(l) <= width)
}

/// One label of at most `width` characters per name, all distinct, each keeping the part of
/// its name that tells it from the others. Names that fit and differ are their own labels.
pub fn short_labels(names: &[&str], width: usize) -> Vec<String> {
    let width = width.max(8);
    let mut labels: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    if fits(&labels, width) && distinct(&labels) {
        return labels;
    }
    // 1. Words every name has say nothing about the difference.
    let words: Vec<Vec<&str>> = names
        .iter()
        .map(|n| n.split_whitespace().collect())
        .collect();
    if names.len() > 1 {
        let common: Vec<&str> = words[0]
            .iter()
            .copied()
            .filter(|w| words.iter().all(|ws| ws.contains(w)))
            .collect();
        let reduced: Vec<String> = words
            .iter()
            .map(|ws| {
                ws.iter()
                    .copied()
                    .filter(|w| !common.contains(w))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        if reduced.iter().all(|r| !r.is_empty()) && distinct(&reduced) {
            labels = reduced;
        }
    }
    // 2. Knob paths: their last component.
    if !fits(&labels, width) {
        let shorter: Vec<String> = labels
            .iter()
            .map(|l| {
                l.split_whitespace()
                    .map(short_knob)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        if distinct(&shorter) {
            labels = shorter;
        }
    }
    // 3. The middle goes; 4. still alike: numbered.
    let elided: Vec<String> = labels.iter().map(|l| elide_middle(l, width)).collect();
    if distinct(&elided) {
        return elided;
    }
    labels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let tag = format!("{}: ", i + 1);
            let room = width.saturating_sub(chars(&tag));
            format!("{tag}{}", elide_middle(l, room))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_distinct_names_stay() {
        assert_eq!(short_labels(&["old", "new"], 24), ["old", "new"]);
    }

    #[test]
    fn shared_words_go_and_the_difference_stays() {
        let names = [
            "pages=33 work/iters.knob=always",
            "pages=33 work/iters.knob=never",
            "pages=34 work/iters.knob=always",
            "pages=34 work/iters.knob=never",
        ];
        let l = short_labels(&names, 20);
        assert_eq!(
            l,
            [
                "pages=33 iters.knob=always",
                "pages=33 iters.knob=never",
                "pages=34 iters.knob=always",
                "pages=34 iters.knob=never",
            ]
            .map(|s| elide_middle(s, 20))
        );
        assert!(distinct(&l) && fits(&l, 20), "{l:?}");
    }

    #[test]
    fn labels_are_always_distinct_and_fit() {
        let long = "x".repeat(40);
        let names = [
            format!("{long}a{long}"),
            format!("{long}b{long}"),
            format!("{long}c{long}"),
        ];
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let l = short_labels(&refs, 16);
        assert!(distinct(&l) && fits(&l, 16), "{l:?}");
        assert!(l[0].starts_with("1: "), "{l:?}");
        // Common words dropped.
        let l = short_labels(
            &[
                "transparent_hugepage/enabled=always common-word-that-is-long",
                "transparent_hugepage/enabled=never common-word-that-is-long",
            ],
            24,
        );
        assert_eq!(l, ["enabled=always", "enabled=never"]);
    }
}
