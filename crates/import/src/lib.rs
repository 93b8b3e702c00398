//! Importers: turn the text other tools print into abperf runs.
//!
//! Each parser is pure (text in, plain structs out) so it is unit-tested with strings:
//! - [`time`]: GNU `/usr/bin/time` default two-line output, `-v` verbose output, and the squashed
//!   one-line form from seed 000 (`n 879.25 77.50 4:15.52 374%CPU (...) ...`), variant label first.
//! - [`perf_stat`]: `perf stat` human output (with and without `-r`, `+-` column, multiplexing
//!   percentages, `<not supported>`/`<not counted>`) and `-x,` CSV output.
//! - [`hyperfine`]: `hyperfine --export-json` files.
//! - [`table`]: long-format tables of runs (CSV or JSONL), as `abperf export --format csv` writes.
//!
//! Parsers write the model directly ([`Imported`] holds [`Variant`]s and [`Run`]s with their
//! [`Source`]); metric names follow the store's conventions: `wall_ns`, `user_ns`, `sys_ns`,
//! `maxrss_kib`, `minflt`, `majflt`, `nvcsw`, `nivcsw`, `inblock`, `oublock`, `nswap`, and perf
//! events under their perf name (`task-clock`, `page-faults`, `cycles`).

pub mod hyperfine;
pub mod perf_script;
pub mod perf_stat;
pub mod table;
pub mod time;

pub use abperf_model::Metric;
pub use abperf_model::metric::unit;
use abperf_model::{Run, RunStatus, Source, SummaryValue, Variant};
use std::collections::HashMap;
use std::fmt;

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
    /// A long-format table of runs: a header row, one row per run (docs/import.md#tables).
    Csv,
    /// The same table as JSON Lines: one object per run.
    Jsonl,
    /// `perf script` text of one recording per file: profiled runs, not timed ones
    /// ([`perf_script`]; `abperf import` stores them as profiles).
    PerfScript,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Time => "time",
            Format::PerfStat => "perf-stat",
            Format::Hyperfine => "hyperfine",
            Format::Csv => "csv",
            Format::Jsonl => "jsonl",
            Format::PerfScript => "perf-script",
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

/// How an imported run ended, where the input says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    /// Killed by a signal (None: the input says so without the number, as hyperfine does).
    Signal(Option<i32>),
}

/// Whether an imported row is one run or a tool's summary over several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    Single,
    /// Means over `repeats` runs (None: the input does not say how many, as with perf stat -x, -r).
    Summary {
        repeats: Option<u32>,
    },
}

/// Everything parsed from one input file, in the model's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub file: String,
    pub format: Format,
    /// Variants in order of first appearance.
    pub variants: Vec<Variant>,
    /// Runs in input order: `seq` counts from 0, `variant` indexes `variants`, `source` says
    /// where each came from.
    pub runs: Vec<Run>,
    /// Things the input reported that were not stored (`cycles: <not supported>`), one per line.
    pub notes: Vec<String>,
    /// Variant name -> position, so that finding a run's variant does not scan the list.
    index: HashMap<String, usize>,
    /// Per run, the order a table gives it (`seq`), while a table is read.
    order: Vec<u64>,
    /// Whether the input gives a real run order (a table with `seq` on every row), so that drift
    /// tests apply.
    pub run_order: bool,
}

impl Imported {
    pub fn new(file: &str, format: Format) -> Self {
        Imported {
            file: file.to_string(),
            format,
            variants: Vec::new(),
            runs: Vec::new(),
            notes: Vec::new(),
            index: HashMap::new(),
            order: Vec::new(),
            run_order: false,
        }
    }

    fn position(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.variants.push(Variant::named(name));
        self.index.insert(name.to_string(), self.variants.len() - 1);
        self.variants.len() - 1
    }

    /// Whether a variant called `name` exists.
    pub fn has_variant(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// The variant called `name`, created at the end if it does not exist yet.
    pub fn variant_mut(&mut self, name: &str) -> &mut Variant {
        let i = self.position(name);
        &mut self.variants[i]
    }

    /// Record a figure the tool reported once for variant `name` (hyperfine's mean user time).
    pub fn summary(&mut self, name: &str, key: &str, value: f64, unit: &str) {
        self.variant_mut(name).summary.insert(
            key.to_string(),
            SummaryValue {
                value,
                unit: unit.to_string(),
            },
        );
    }

    /// Add a run of variant `name` whose record starts at `line`. It failed when the input says
    /// it exited non-zero or was killed.
    pub fn push_run(
        &mut self,
        name: &str,
        line: usize,
        metrics: Vec<Metric>,
        exit: Option<Exit>,
        kind: RunKind,
    ) {
        let variant = self.position(name);
        let (exit_code, signal) = match exit {
            Some(Exit::Code(c)) => (Some(c), None),
            Some(Exit::Signal(s)) => (None, Some(s.unwrap_or(0))),
            None => (None, None),
        };
        let failed = exit_code.is_some_and(|c| c != 0) || signal.is_some();
        let (summary, repeats) = match kind {
            RunKind::Single => (false, None),
            RunKind::Summary { repeats } => (true, repeats),
        };
        self.runs.push(Run {
            status: if failed {
                RunStatus::Failed
            } else {
                RunStatus::Ok
            },
            exit_code,
            signal,
            source: Some(Source {
                format: self.format.to_string(),
                file: self.file.clone(),
                line: line as u32,
                summary,
                repeats,
            }),
            ..Run::ok(self.runs.len() as u32, variant, metrics)
        });
    }

    /// The runs of the variant called `name`, in input order.
    pub fn runs_of(&self, name: &str) -> Vec<&Run> {
        match self.variants.iter().position(|v| v.name == name) {
            Some(p) => self.runs.iter().filter(|r| r.variant == p).collect(),
            None => Vec::new(),
        }
    }

    /// The runs of the variant at position `pos`, in input order.
    pub fn runs_at(&self, pos: usize) -> Vec<&Run> {
        self.runs.iter().filter(|r| r.variant == pos).collect()
    }

    pub fn run_count(&self) -> usize {
        self.runs.len()
    }
}

/// What the parsers' tests read back from a run, in the parsers' own terms.
#[cfg(test)]
pub(crate) trait ParsedRun {
    fn metric(&self, name: &str) -> Option<f64>;
    fn line(&self) -> u32;
    fn exit(&self) -> Option<Exit>;
    fn kind(&self) -> RunKind;
}

#[cfg(test)]
impl ParsedRun for Run {
    fn metric(&self, name: &str) -> Option<f64> {
        self.value(name)
    }
    fn line(&self) -> u32 {
        self.source.as_ref().map(|s| s.line).unwrap_or(0)
    }
    fn exit(&self) -> Option<Exit> {
        match (self.exit_code, self.signal) {
            (Some(c), _) => Some(Exit::Code(c)),
            (None, Some(0)) => Some(Exit::Signal(None)),
            (None, Some(s)) => Some(Exit::Signal(Some(s))),
            (None, None) => None,
        }
    }
    fn kind(&self) -> RunKind {
        match &self.source {
            Some(s) if s.summary => RunKind::Summary { repeats: s.repeats },
            _ => RunKind::Single,
        }
    }
}

/// Several parsed files as one set of variants (merged by name, in order of first appearance)
/// and their runs, in file order.
pub fn merge(imports: &[Imported]) -> (Vec<Variant>, Vec<Run>) {
    let mut variants: Vec<Variant> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut runs = Vec::new();
    for imp in imports {
        let mut map = Vec::with_capacity(imp.variants.len());
        for v in &imp.variants {
            let idx = match by_name.get(&v.name).copied() {
                Some(i) => {
                    let x = &mut variants[i];
                    if x.command.is_none() {
                        x.command = v.command.clone();
                    }
                    x.summary
                        .extend(v.summary.iter().map(|(k, s)| (k.clone(), s.clone())));
                    i
                }
                None => {
                    variants.push(v.clone());
                    by_name.insert(v.name.clone(), variants.len() - 1);
                    variants.len() - 1
                }
            };
            map.push(idx);
        }
        for r in &imp.runs {
            runs.push(Run {
                seq: runs.len() as u32,
                variant: map[r.variant],
                ..r.clone()
            });
        }
    }
    (variants, runs)
}

/// The largest input file of any format (64 MiB: about 400,000 `/usr/bin/time` runs or 4 million
/// numbers; everything is held in memory and written in one transaction).
pub const MAX_INPUT_BYTES: usize = 64 << 20;

/// The most variants one import may create: abperf compares a handful of variants; thousands of
/// distinct labels mean the labels are not what they should be (and every report would list
/// them all).
pub const MAX_VARIANTS: usize = 1000;

/// Every stored value must be 0 or have a magnitude in [`MIN_MAGNITUDE`, `MAX_MAGNITUDE`]. The
/// statistics square values and then square variances (Welch's degrees of freedom), so
/// magnitudes above ~1e77 overflow to infinity and below ~1e-77 underflow to 0, and a NaN
/// degree of freedom made the Student t quantile loop forever. 1e18 is above anything real in
/// every unit abperf stores (1e18 ns = 31.7 years; 1e18 events = 6 years of cycles at 5 GHz;
/// 1e18 KiB = 1 ZiB) and below 2^63, and keeps squared variances under 1e72; 1e-30 keeps any
/// two distinct values' variance far from underflow.
pub const MAX_MAGNITUDE: f64 = 1e18;
pub const MIN_MAGNITUDE: f64 = 1e-30;

/// Why `value` cannot be stored, if it cannot: not finite, or outside the magnitudes the
/// statistics can carry ([`MAX_MAGNITUDE`]).
pub fn out_of_range(value: f64) -> Option<String> {
    if !value.is_finite() {
        return Some(format!("{value} is not a finite number"));
    }
    let m = value.abs();
    if m > MAX_MAGNITUDE || (m != 0.0 && m < MIN_MAGNITUDE) {
        return Some(format!(
            "{value:e} is out of range (a value must be 0 or between {MIN_MAGNITUDE:e} and \
             {MAX_MAGNITUDE:e} in magnitude)"
        ));
    }
    None
}

/// Metrics that time or count something (GNU time's and getrusage's, perf stat's spreads):
/// no tool prints a negative one, so a negative value is a mangled input, not a measurement.
pub fn never_negative(name: &str) -> bool {
    const NAMES: [&str; 12] = [
        "wall_ns",
        "user_ns",
        "sys_ns",
        "cpu_pct",
        "maxrss_kib",
        "minflt",
        "majflt",
        "nvcsw",
        "nivcsw",
        "inblock",
        "oublock",
        "nswap",
    ];
    NAMES.contains(&name) || name.ends_with(".stderr_pct") || name.ends_with(".running_pct")
}

/// Why a run's `started_ns`/`ended_ns` (0: not given) cannot be a run's: negative, or an end
/// before the start.
fn impossible_times(started: i64, ended: i64) -> Option<String> {
    if started < 0 || ended < 0 {
        let (field, v) = if started < 0 {
            ("started_ns", started)
        } else {
            ("ended_ns", ended)
        };
        return Some(format!(
            "{field}: {v} is negative (nanoseconds since the epoch)"
        ));
    }
    (started != 0 && ended != 0 && ended < started).then(|| {
        format!("ended_ns: {ended} is before started_ns {started} (a run ends after it starts)")
    })
}

/// Check every value of an import against [`out_of_range`] and [`never_negative`], every run's
/// start and end against each other, naming FILE:LINE and the field, and the number of
/// variants against [`MAX_VARIANTS`].
pub fn check_bounds(imp: &Imported) -> Result<(), ParseError> {
    if imp.variants.len() > MAX_VARIANTS {
        let line = imp
            .runs
            .iter()
            .find(|r| r.variant == MAX_VARIANTS)
            .and_then(|r| r.source.as_ref().map(|s| s.line as usize))
            .unwrap_or(1);
        return Err(ParseError::new(
            &imp.file,
            line,
            format!(
                "more than {MAX_VARIANTS} variants ({} distinct labels): check the labels; \
                 abperf compares a handful of variants",
                imp.variants.len()
            ),
        ));
    }
    for r in &imp.runs {
        let line = r.source.as_ref().map(|s| s.line as usize).unwrap_or(1);
        for m in &r.metrics {
            let why = out_of_range(m.value).or_else(|| {
                (m.value < 0.0 && never_negative(&m.name))
                    .then(|| format!("{} is negative: no tool measures a negative one", m.value))
            });
            if let Some(why) = why {
                return Err(ParseError::new(
                    &imp.file,
                    line,
                    format!("{} ({}): {why}", m.name, m.unit),
                ));
            }
        }
        if let Some(why) = impossible_times(r.started_ns, r.ended_ns) {
            return Err(ParseError::new(&imp.file, line, why));
        }
    }
    for v in &imp.variants {
        for (name, s) in &v.summary {
            if let Some(why) = out_of_range(s.value) {
                return Err(ParseError::new(
                    &imp.file,
                    1,
                    format!("variant {:?}: {name} ({}): {why}", v.name, s.unit),
                ));
            }
        }
    }
    Ok(())
}

/// Parse `text` (the content of `file`) in `format`. Runs whose input carries no variant label go
/// to the variant `default_variant`. Inputs over [`MAX_INPUT_BYTES`], values out of range and
/// more than [`MAX_VARIANTS`] variants are errors naming the file (and line).
pub fn parse(
    format: Format,
    file: &str,
    text: &str,
    default_variant: &str,
) -> Result<Imported, ParseError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(ParseError::new(
            file,
            1,
            format!(
                "{} bytes: larger than {} MiB, the most abperf imports from one file",
                text.len(),
                MAX_INPUT_BYTES >> 20
            ),
        ));
    }
    let imported = match format {
        Format::Time => time::parse(file, text, default_variant)?,
        Format::PerfStat => perf_stat::parse(file, text, default_variant)?,
        Format::Hyperfine => hyperfine::parse(file, text)?,
        Format::Csv => table::parse_csv(file, text)?,
        Format::Jsonl => table::parse_jsonl(file, text)?,
        Format::PerfScript => {
            return Err(ParseError::new(
                file,
                1,
                "perf script text holds profiled runs, not timed runs (perf_script::parse reads it)",
            ));
        }
    };
    if imported.run_count() == 0 {
        return Err(ParseError::new(
            file,
            1,
            format!("no {format} output found (is this the right --format?)"),
        ));
    }
    check_bounds(&imported)?;
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
    use crate::ParsedRun;

    fn fixture(name: &str) -> String {
        let p = format!("{}/../../tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    fn mean(imp: &Imported, variant: &str, metric: &str) -> f64 {
        let xs: Vec<f64> = imp
            .runs_of(variant)
            .iter()
            .map(|r| r.value(metric).unwrap())
            .collect();
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
        assert_eq!(imp.runs_at(0).len(), 12);
        assert_eq!(imp.runs_at(1).len(), 12);
        assert!((mean(&imp, "n", "user_ns") / 1e9 - 880.4375).abs() < 1e-9);
        assert!((mean(&imp, "y", "user_ns") / 1e9 - 875.3466666).abs() < 1e-6);
        let bad = parse(Format::Time, "time-bad.txt", &fixture("time-bad.txt"), "x").unwrap_err();
        assert_eq!(bad.line, 6, "{bad}");
        assert!(bad.msg.contains("page faults"), "{bad}");
    }

    #[test]
    fn time_fixtures() {
        let imp = parse(Format::Time, "t", &fixture("time-default.txt"), "base").unwrap();
        assert_eq!(imp.runs_at(0).len(), 4);
        assert_eq!(imp.runs_at(0)[3].exit(), Some(Exit::Code(3)));
        let imp = parse(Format::Time, "t", &fixture("time-verbose.txt"), "base").unwrap();
        assert_eq!(imp.runs_at(0).len(), 2);
        assert!(
            imp.runs_at(0)
                .iter()
                .all(|r| r.metric("nvcsw").is_some() && r.exit() == Some(Exit::Code(0)))
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
            let r = &imp.runs_at(0)[0];
            assert!(matches!(r.kind(), RunKind::Summary { .. }), "{f}");
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
        let r = &imp.runs_at(0)[0];
        assert_eq!(r.kind(), RunKind::Single);
        assert!(
            r.metric("user_ns").is_some()
                && r.metric("sys_ns").is_some()
                && r.metric("wall_ns").is_some()
        );
        let imp = parse(Format::PerfStat, "s", &fixture("perf-stat-single.csv"), "b").unwrap();
        assert_eq!(imp.runs_at(0)[0].kind(), RunKind::Single);
        let imp = parse(Format::PerfStat, "a", &fixture("perf-stat-append.txt"), "b").unwrap();
        assert_eq!(imp.runs_at(0).len(), 3);
        assert!(
            imp.runs_at(0)
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
        let r = &imp.runs_at(0)[0];
        assert_eq!(r.kind(), RunKind::Summary { repeats: Some(3) });
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
                .all(|v| imp.runs_of(&v.name).len() == 5 && v.summary.contains_key("user_ns_mean"))
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
        assert_eq!(imp.runs_at(1)[0].exit(), Some(Exit::Code(1)));
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
