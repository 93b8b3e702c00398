//! Importers: turn the text other tools print into abperf runs.
//!
//! Each parser is pure (text in, plain structs out) so it is unit-tested with strings:
//! - [`time`]: GNU `/usr/bin/time` default two-line output, `-v` verbose output, and the squashed
//!   one-line form from seed 000 (`n 879.25 77.50 4:15.52 374%CPU (...) ...`), variant label first.
//! - [`perf_stat`]: `perf stat` human output (with and without `-r`, `+-` column, multiplexing
//!   percentages, `<not supported>`/`<not counted>`) and `-x,` CSV output.
//! - [`hyperfine`]: `hyperfine --export-json` files.
//!
//! Metric names follow the store's conventions: `wall_ns`, `user_ns`, `sys_ns`, `maxrss_kib`,
//! `minflt`, `majflt`, `nvcsw`, `nivcsw`, `inblock`, `oublock`, `nswap`, and perf events under
//! their perf name (`task-clock`, `page-faults`, `cycles`).

pub mod hyperfine;
pub mod perf_stat;
pub mod time;

use std::collections::BTreeMap;
use std::fmt;

/// Units written into stored metric rows.
pub mod unit {
    pub const NS: &str = "ns";
    pub const KIB: &str = "KiB";
    pub const COUNT: &str = "count";
    pub const PERCENT: &str = "%";
}

/// Which importer to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// GNU /usr/bin/time: default, -v, or seed 000's squashed one-line form.
    Time,
    /// perf stat: human output (with or without -r) or -x, CSV.
    PerfStat,
    /// hyperfine --export-json.
    Hyperfine,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Time => "time",
            Format::PerfStat => "perf-stat",
            Format::Hyperfine => "hyperfine",
        })
    }
}

/// A malformed input: names the file and the 1-based line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}: {msg}")]
pub struct ParseError {
    pub file: String,
    pub line: usize,
    pub msg: String,
}

impl ParseError {
    pub fn new(file: &str, line: usize, msg: impl Into<String>) -> Self {
        ParseError {
            file: file.to_string(),
            line,
            msg: msg.into(),
        }
    }
}

/// One measured figure of one run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
}

impl Metric {
    pub fn new(name: &str, value: f64, unit: &str) -> Self {
        Metric {
            name: name.to_string(),
            value,
            unit: unit.to_string(),
        }
    }
}

/// How an imported run ended, where the input says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Exit {
    Code(i32),
    /// Killed by a signal (None: the input says so without the number, as hyperfine does).
    Signal(Option<i32>),
}

/// One imported run (or, for `perf stat -r N`, one summary of N runs: see `repeats`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Run {
    /// 1-based line in the input where the run's record starts.
    pub line: usize,
    pub metrics: Vec<Metric>,
    pub exit: Option<Exit>,
    /// A single run, or a summary of repeats (perf stat -r N prints only means).
    pub kind: RunKind,
}

/// Whether an imported row is one run or a tool's summary over several.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    Single,
    /// Means over `repeats` runs (None: the input does not say how many, as with perf stat -x, -r).
    Summary {
        repeats: Option<u32>,
    },
}

impl Run {
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.value)
    }
}

/// Runs of one variant, in input order.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Variant {
    pub name: String,
    /// The command the tool timed, when the input names it.
    pub command: Option<String>,
    /// hyperfine -L parameters.
    pub parameters: BTreeMap<String, String>,
    /// Per-variant figures the tool reports only as a mean (hyperfine's user/system), by name.
    /// Never copied onto runs: that would invent per-run values.
    pub summary: BTreeMap<String, f64>,
    pub runs: Vec<Run>,
}

impl Variant {
    pub fn new(name: &str) -> Self {
        Variant {
            name: name.to_string(),
            command: None,
            parameters: BTreeMap::new(),
            summary: BTreeMap::new(),
            runs: Vec::new(),
        }
    }
}

/// Everything parsed from one input file.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Imported {
    pub file: String,
    pub format: Format,
    /// Variants in order of first appearance.
    pub variants: Vec<Variant>,
    /// Things the input reported that were not stored (`cycles: <not supported>`), one per line.
    pub notes: Vec<String>,
}

impl Imported {
    pub fn new(file: &str, format: Format) -> Self {
        Imported {
            file: file.to_string(),
            format,
            variants: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The variant called `name`, created at the end if it does not exist yet.
    pub fn variant_mut(&mut self, name: &str) -> &mut Variant {
        let idx = match self.variants.iter().position(|v| v.name == name) {
            Some(i) => i,
            None => {
                self.variants.push(Variant::new(name));
                self.variants.len() - 1
            }
        };
        &mut self.variants[idx]
    }

    pub fn run_count(&self) -> usize {
        self.variants.iter().map(|v| v.runs.len()).sum()
    }
}

/// Parse `text` (the content of `file`) in `format`. Runs whose input carries no variant label go
/// to the variant `default_variant`.
pub fn parse(
    format: Format,
    file: &str,
    text: &str,
    default_variant: &str,
) -> Result<Imported, ParseError> {
    let imported = match format {
        Format::Time => time::parse(file, text, default_variant)?,
        Format::PerfStat => perf_stat::parse(file, text, default_variant)?,
        Format::Hyperfine => hyperfine::parse(file, text)?,
    };
    if imported.run_count() == 0 {
        return Err(ParseError::new(
            file,
            1,
            format!("no {format} output found (is this the right --format?)"),
        ));
    }
    Ok(imported)
}

/// Seconds (as printed, decimal) to integral nanoseconds.
pub(crate) fn secs_to_ns(s: f64) -> f64 {
    (s * 1e9).round()
}

/// Strip mail quoting (`> `, `>> `) from a line pasted out of a mailing-list post.
pub(crate) fn unquote(line: &str) -> &str {
    let mut s = line.trim_start();
    while let Some(rest) = s.strip_prefix('>') {
        s = rest.trim_start();
    }
    s
}

/// Parse a finite, non-negative decimal number.
pub(crate) fn parse_num(s: &str) -> Option<f64> {
    let v: f64 = s.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v)
}

#[cfg(test)]
mod fixture_tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    fn mean(imp: &Imported, variant: &str, metric: &str) -> f64 {
        let v = imp.variants.iter().find(|v| v.name == variant).unwrap();
        let xs: Vec<f64> = v.runs.iter().map(|r| r.metric(metric).unwrap()).collect();
        xs.iter().sum::<f64>() / xs.len() as f64
    }

    #[test]
    fn seed_000_lines() {
        let imp = parse(
            Format::Time,
            "seed000-time.txt",
            &fixture("seed000-time.txt"),
            "x",
        )
        .unwrap();
        let names: Vec<&str> = imp.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["n", "y"]);
        assert_eq!(imp.variants[0].runs.len(), 12);
        assert_eq!(imp.variants[1].runs.len(), 12);
        assert!((mean(&imp, "n", "user_ns") / 1e9 - 880.4375).abs() < 1e-9);
        assert!((mean(&imp, "y", "user_ns") / 1e9 - 875.3466666).abs() < 1e-6);
        let bad = parse(Format::Time, "time-bad.txt", &fixture("time-bad.txt"), "x").unwrap_err();
        assert_eq!(bad.line, 6, "{bad}");
        assert!(bad.msg.contains("page faults"), "{bad}");
    }

    #[test]
    fn time_fixtures() {
        let imp = parse(Format::Time, "t", &fixture("time-default.txt"), "base").unwrap();
        assert_eq!(imp.variants[0].runs.len(), 4);
        assert_eq!(imp.variants[0].runs[3].exit, Some(Exit::Code(3)));
        let imp = parse(Format::Time, "t", &fixture("time-verbose.txt"), "base").unwrap();
        assert_eq!(imp.variants[0].runs.len(), 2);
        assert!(
            imp.variants[0]
                .runs
                .iter()
                .all(|r| r.metric("nvcsw").is_some() && r.exit == Some(Exit::Code(0)))
        );
    }

    #[test]
    fn perf_stat_fixtures() {
        for f in [
            "perf-stat-r5.txt",
            "perf-stat-r5.csv",
            "perf-stat-unsupported.txt",
            "perf-stat-unsupported.csv",
        ] {
            let imp = parse(Format::PerfStat, f, &fixture(f), "b").unwrap();
            let r = &imp.variants[0].runs[0];
            assert!(matches!(r.kind, RunKind::Summary { .. }), "{f}");
            assert!(r.metric("page-faults").unwrap() > 0.0, "{f}");
            assert!(r.metric("task-clock.stderr_pct").is_some(), "{f}");
            assert!(
                imp.notes
                    .iter()
                    .any(|n| n.contains("cycles <not supported>")),
                "{f}: {:?}",
                imp.notes
            );
        }
        let imp = parse(Format::PerfStat, "s", &fixture("perf-stat-single.txt"), "b").unwrap();
        let r = &imp.variants[0].runs[0];
        assert_eq!(r.kind, RunKind::Single);
        assert!(
            r.metric("user_ns").is_some()
                && r.metric("sys_ns").is_some()
                && r.metric("wall_ns").is_some()
        );
        let imp = parse(Format::PerfStat, "s", &fixture("perf-stat-single.csv"), "b").unwrap();
        assert_eq!(imp.variants[0].runs[0].kind, RunKind::Single);
        let imp = parse(Format::PerfStat, "a", &fixture("perf-stat-append.txt"), "b").unwrap();
        assert_eq!(imp.variants[0].runs.len(), 3);
        assert!(
            imp.variants[0]
                .runs
                .iter()
                .all(|r| r.metric("context-switches").is_some())
        );
        let imp = parse(
            Format::PerfStat,
            "m",
            &fixture("perf-stat-multiplexed.txt"),
            "b",
        )
        .unwrap();
        let r = &imp.variants[0].runs[0];
        assert_eq!(r.kind, RunKind::Summary { repeats: Some(3) });
        assert_eq!(r.metric("cycles"), Some(3_105_214_416_123.0));
        assert_eq!(r.metric("cycles.running_pct"), Some(83.29));
        assert_eq!(r.metric("dTLB-load-misses.running_pct"), Some(49.95));
        assert_eq!(r.metric("wall_ns"), Some(233_894_500_000.0));
        assert_eq!(r.metric("task-clock"), Some(875_353_210_000.0));
        let e = parse(
            Format::PerfStat,
            "perf-stat-bad.txt",
            &fixture("perf-stat-bad.txt"),
            "b",
        )
        .unwrap_err();
        assert_eq!(e.line, 5, "{e}");
    }

    #[test]
    fn hyperfine_fixtures() {
        let imp = parse(Format::Hyperfine, "h", &fixture("hyperfine-two.json"), "b").unwrap();
        assert_eq!(imp.variants.len(), 2);
        assert!(
            imp.variants
                .iter()
                .all(|v| v.runs.len() == 5 && v.summary.contains_key("user_ns_mean"))
        );
        let imp = parse(
            Format::Hyperfine,
            "h",
            &fixture("hyperfine-params.json"),
            "b",
        )
        .unwrap();
        assert_eq!(
            imp.variants[1].parameters.get("n").map(String::as_str),
            Some("1")
        );
        assert_eq!(imp.variants[1].runs[0].exit, Some(Exit::Code(1)));
        let e = parse(
            Format::Hyperfine,
            "hyperfine-bad.json",
            &fixture("hyperfine-bad.json"),
            "b",
        )
        .unwrap_err();
        assert_eq!(e.line, 4, "{e}");
    }

    #[test]
    fn empty_input_is_an_error() {
        for f in [Format::Time, Format::PerfStat] {
            let e = parse(f, "e.txt", "\n\n", "b").unwrap_err();
            assert!(e.to_string().starts_with("e.txt:1: no "), "{e}");
        }
    }
}
