//! Where `abperf compare` gets its numbers besides one stored experiment: two stored
//! experiments (one variant of each, side by side) or plain files of numbers (ministat mode).

use crate::error::usage;
use crate::model::{Dataset, Experiment, Metric, Run, Source, Variant};
use crate::store::Store;
use std::path::Path;

/// One variant of each of two stored experiments (the first is the baseline), renamed
/// `#ID:NAME`; runs of different experiments share no schedule, so no drift test applies.
/// Also returns the environment differences of the two experiments.
pub fn two_experiments(
    store: &Store,
    ids: [i64; 2],
    variant: Option<&str>,
) -> anyhow::Result<(Dataset, Vec<crate::report::EnvDiff>)> {
    let mut experiments: Vec<Experiment> = Vec::new();
    let mut variants = Vec::new();
    let mut runs = Vec::new();
    let mut boots = Vec::new();
    let mut sources = Vec::new();
    let mut accels: Vec<String> = Vec::new();
    for id in ids {
        let ds = store.load(id)?;
        accels.push(accelerator_words(&ds));
        let pos = match variant {
            Some(n) => ds.position(n).ok_or_else(|| {
                usage(format!(
                    "--variant {n:?}: experiment {id} has no such variant (variants: {})",
                    ds.variant_names()
                ))
            })?,
            None => 0,
        };
        let v = ds
            .variants
            .get(pos)
            .ok_or_else(|| usage(format!("experiment {id} has no variants")))?;
        let at = variants.len();
        variants.push(Variant {
            name: format!("#{id}:{}", v.name),
            ..v.clone()
        });
        runs.extend(ds.runs.iter().filter(|r| r.variant == pos).map(|r| Run {
            variant: at,
            ..r.clone()
        }));
        boots.extend(
            ds.boots
                .iter()
                .filter(|b| b.variant == pos)
                .map(|b| crate::model::Boot {
                    variant: at,
                    ..b.clone()
                }),
        );
        sources.push(ds.source.clone());
        experiments.extend(ds.experiments);
    }
    if accels[0] != accels[1] {
        return Err(usage(format!(
            "experiment {} ran {} and experiment {} ran {}: abperf does not compare timings across              accelerators (a TCG timing says nothing about hardware costs)",
            ids[0], accels[0], ids[1], accels[1]
        )));
    }
    let mut diffs =
        crate::measure::env::differences(&experiments[0].environment, &experiments[1].environment);
    diffs.extend(crate::micro::pressure_difference(
        &experiments[0].design,
        &experiments[1].design,
    ));
    let source = format!("{} (baseline) and {}", sources[0], sources[1]);
    let mut ds = Dataset::new(experiments, variants, runs, source);
    ds.boots = boots;
    Ok((ds, diffs))
}

/// How an experiment's runs were executed, for the accelerator check of `compare A B`.
fn accelerator_words(ds: &Dataset) -> String {
    match ds.accelerators().as_slice() {
        [] => "on the host (no VM)".to_string(),
        a => format!("its kernels under {}", a.join("+").to_uppercase()),
    }
}

/// The non-blank, non-`#` lines of `text` (a leading UTF-8 byte-order mark skipped) as
/// (1-based line number, whitespace-separated fields).
fn lines(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    text.strip_prefix('\u{feff}')
        .unwrap_or(text)
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, t)| !t.is_empty() && !t.starts_with('#'))
        .map(|(i, t)| (i, t.split_whitespace().collect()))
}

/// A finite number in `field`, or an error naming file, line and column (invisible characters
/// shown escaped).
fn number(field: &str, file: &str, lineno: usize, column: usize) -> anyhow::Result<f64> {
    // At most 40 characters of it: a field can be megabytes long.
    let cut: String = field.chars().take(40).collect();
    let more = if cut.len() < field.len() { "..." } else { "" };
    let shown = format!("{}{more}", cut.escape_debug());
    let v: f64 = field.parse().map_err(|_| {
        usage(format!(
            "{file}:{lineno}: column {column}: expected a number, got '{shown}'"
        ))
    })?;
    if !v.is_finite() {
        return Err(usage(format!(
            "{file}:{lineno}: column {column}: '{shown}' is not a finite number"
        )));
    }
    // Magnitudes the statistics can carry (1e80 made Welch's df NaN and statrs loop forever).
    if let Some(why) = crate::import::out_of_range(v) {
        return Err(usage(format!("{file}:{lineno}: column {column}: {why}")));
    }
    Ok(v)
}

/// Parse a file of `mean sd n` lines (summaries of n runs each, as perf stat -r prints them):
/// (line, mean, sd, n).
pub fn parse_summaries(text: &str, file: &str) -> anyhow::Result<Vec<(usize, f64, f64, u32)>> {
    let mut out = Vec::new();
    for (lineno, f) in lines(text) {
        if f.len() != 3 {
            return Err(usage(format!(
                "{file}:{lineno}: --summary expects 'mean sd n', got {} field(s)",
                f.len()
            )));
        }
        let mean = number(f[0], file, lineno, 1)?;
        let sd = number(f[1], file, lineno, 2)?;
        let n: u32 = f[2].parse().map_err(|_| {
            usage(format!(
                "{file}:{lineno}: column 3: expected the number of runs (a whole number), got '{}'",
                f[2].escape_debug()
            ))
        })?;
        if sd < 0.0 || n == 0 {
            return Err(usage(format!(
                "{file}:{lineno}: expected sd >= 0 and n >= 1, got sd {sd} n {n}"
            )));
        }
        out.push((lineno, mean, sd, n));
    }
    if out.is_empty() {
        return Err(usage(format!(
            "{file}: no 'mean sd n' lines found (blank and '#' lines are ignored)"
        )));
    }
    Ok(out)
}

/// Parse a file of numbers: one value per line, `#` lines and blank lines ignored; `column`
/// (1-based) picks a whitespace-separated field. Values must be finite (negative ones are fine:
/// a comparison only needs a positive baseline mean).
pub fn parse_numbers(text: &str, file: &str, column: usize) -> anyhow::Result<Vec<f64>> {
    if column == 0 {
        return Err(usage("-c: columns are numbered from 1"));
    }
    let mut out = Vec::new();
    for (lineno, fields) in lines(text) {
        let field = fields.get(column - 1).ok_or_else(|| {
            usage(format!(
                "{file}:{lineno}: has {} column(s), -c {column} asks for column {column}",
                fields.len()
            ))
        })?;
        out.push(number(field, file, lineno, column)?);
    }
    if out.is_empty() {
        return Err(usage(format!(
            "{file}: no numbers found (blank and '#' lines are ignored)"
        )));
    }
    Ok(out)
}

/// Ministat mode: each file is one variant named by its file name; the metric is "value" (or
/// "column N").
pub fn from_files(paths: &[String], column: usize, summary: bool) -> anyhow::Result<Dataset> {
    let metric = if column == 1 {
        "value".to_string()
    } else {
        format!("column {column}")
    };
    let names: Vec<String> = paths
        .iter()
        .map(|p| {
            Path::new(p)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.clone())
        })
        .collect();
    let mut variants = Vec::new();
    let mut runs = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let text = super::import::read_bounded(Path::new(path), crate::import::MAX_INPUT_BYTES)?;
        // Two files with the same base name: use the path as given.
        let name = if names.iter().filter(|n| **n == names[i]).count() > 1 {
            path.clone()
        } else {
            names[i].clone()
        };
        variants.push(Variant::named(&name));
        if summary {
            for (line, mean, sd, n) in parse_summaries(&text, path)? {
                runs.push(Run {
                    source: Some(Source {
                        format: "summary".into(),
                        file: path.clone(),
                        line: line as u32,
                        summary: true,
                        repeats: Some(n),
                    }),
                    ..Run::ok(
                        runs.len() as u32,
                        i,
                        vec![
                            Metric::new(metric.clone(), mean, ""),
                            Metric::new(format!("{metric}.sd"), sd, ""),
                        ],
                    )
                });
            }
            continue;
        }
        let values = parse_numbers(&text, path, column)?;
        for v in values {
            runs.push(Run::ok(
                runs.len() as u32,
                i,
                vec![Metric::new(metric.clone(), v, "")],
            ));
        }
    }
    let mut ds = Dataset::new(
        Vec::new(),
        variants,
        runs,
        format!("files {}", paths.join(", ")),
    );
    ds.ordered = false;
    Ok(ds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_columns_comments_and_reports_lines() {
        let text = "# seed 000\nn 879.25 77.50\n\n  y 874.62 77.98\n";
        assert_eq!(parse_numbers(text, "f", 2).unwrap(), vec![879.25, 874.62]);
        let e = parse_numbers(text, "f", 1).unwrap_err().to_string();
        assert_eq!(e, "f:2: column 1: expected a number, got 'n'");
        assert_eq!(
            parse_numbers("1\n2\n-3\n", "g", 1).unwrap(),
            [1.0, 2.0, -3.0]
        );
        assert_eq!(parse_numbers("\u{feff}1\n2\n", "g", 1).unwrap(), [1.0, 2.0]);
        let e = parse_numbers("1\n2\u{200b}\n", "g", 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("got '2\\u{200b}'"), "{e}");
        assert_eq!(
            parse_summaries("# perf stat -r 5\n100.5 1.2 5\n", "s").unwrap(),
            [(2, 100.5, 1.2, 5)]
        );
        let e = parse_summaries("100 1\n", "s").unwrap_err().to_string();
        assert_eq!(e, "s:1: --summary expects 'mean sd n', got 2 field(s)");
        let e = parse_numbers("1\nNaN\n", "g", 1).unwrap_err().to_string();
        assert!(e.starts_with("g:2:"), "{e}");
        let e = parse_numbers("1 2\n", "g", 3).unwrap_err().to_string();
        assert_eq!(e, "g:1: has 2 column(s), -c 3 asks for column 3");
        assert!(parse_numbers("# nothing\n", "g", 1).is_err());
    }
}
