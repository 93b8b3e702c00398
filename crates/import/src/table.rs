//! Long-format tables of runs: CSV (a header row, then one row per run) or JSONL (one JSON object
//! per line, keyed like the CSV header), as docs/import.md#tables specifies. The same columns as
//! `abperf export --format csv` writes, so an export imports back to the same runs.
//!
//! Columns: `variant` (required); `seq` (order: rows are stored in `seq` order, input order
//! among equal ones); `block`; `warmup`, `status`, `counted`, `exit_code`, `signal`;
//! `started_ns`, `ended_ns`; the replication labels `invocation`, `boot`, `host`;
//! `param.NAME` (a variant parameter: one value per variant); `experiment` (the id an export
//! came from; not stored); any other column is a metric, `NAME [UNIT]`. An empty cell (JSON
//! null, or a missing key) is "not given". Errors name the file, the line and the column.

use super::{Format, Imported, ParseError};
use abperf_model::escape::spreadsheet_undone;
use abperf_model::{Labels, Metric, Run, RunStatus, Source};

/// What a column holds.
#[derive(Debug, Clone, PartialEq)]
enum Column {
    Variant,
    Seq,
    Block,
    Warmup,
    Status,
    Counted,
    ExitCode,
    Signal,
    StartedNs,
    EndedNs,
    Invocation,
    Boot,
    Host,
    Experiment,
    Param(String),
    Metric { name: String, unit: String },
}

fn column(name: &str) -> Result<Column, String> {
    let name = spreadsheet_undone(name.trim());
    Ok(match name {
        "variant" => Column::Variant,
        "seq" => Column::Seq,
        "block" => Column::Block,
        "warmup" => Column::Warmup,
        "status" => Column::Status,
        "counted" => Column::Counted,
        "exit_code" => Column::ExitCode,
        "signal" => Column::Signal,
        "started_ns" => Column::StartedNs,
        "ended_ns" => Column::EndedNs,
        "invocation" => Column::Invocation,
        "boot" => Column::Boot,
        "host" => Column::Host,
        "experiment" => Column::Experiment,
        _ => {
            if let Some(p) = name.strip_prefix("param.") {
                if p.is_empty() {
                    return Err("a parameter column needs a name (param.NAME)".into());
                }
                return Ok(Column::Param(p.to_string()));
            }
            let metric = name
                .strip_suffix(']')
                .and_then(|s| s.rsplit_once('['))
                .map(|(n, u)| (n.trim(), u.trim()));
            match metric {
                Some((n, u)) if !n.is_empty() && !u.is_empty() => Column::Metric {
                    name: n.to_string(),
                    unit: u.to_string(),
                },
                _ => {
                    return Err(format!(
                        "unknown column {name:?}: a metric column is \"NAME [UNIT]\" \
                         (e.g. \"wall_ns [ns]\"); see docs/import.md#tables"
                    ));
                }
            }
        }
    })
}

/// Whether two columns hold the same field: a metric once, whatever the units its columns name
/// (`wall_ns [KiB]` beside `wall_ns [ns]` would give a run two values of one metric).
fn same_field(a: &Column, b: &Column) -> bool {
    match (a, b) {
        (Column::Metric { name: x, .. }, Column::Metric { name: y, .. }) => x == y,
        _ => a == b,
    }
}

/// A JSON object's members in input order, a key given twice kept twice (serde_json's own map
/// keeps the last one silently).
struct Members(Vec<(String, serde_json::Value)>);

impl<'de> serde::Deserialize<'de> for Members {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Members, A::Error> {
                let mut out = Vec::new();
                while let Some(member) = a.next_entry::<String, serde_json::Value>()? {
                    out.push(member);
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// One row being read: its cells by column, and where it is (for errors).
struct Row<'a> {
    file: &'a str,
    line: usize,
    cells: Vec<(&'a Column, String, String)>,
}

impl Row<'_> {
    fn err(&self, col: &str, msg: impl std::fmt::Display) -> ParseError {
        ParseError::new(self.file, self.line, format!("column {col}: {msg}"))
    }

    /// The non-empty cell of `c`, with its column's name.
    fn get(&self, c: &Column) -> Option<(&str, &str)> {
        self.cells
            .iter()
            .find(|(k, _, v)| *k == c && !v.is_empty())
            .map(|(_, n, v)| (n.as_str(), v.as_str()))
    }

    fn int<T: std::str::FromStr>(&self, c: &Column) -> Result<Option<T>, ParseError> {
        match self.get(c) {
            None => Ok(None),
            Some((n, v)) => v
                .parse()
                .map(Some)
                .map_err(|_| self.err(n, format!("{v:?} is not an integer in range"))),
        }
    }

    fn flag(&self, c: &Column) -> Result<Option<bool>, ParseError> {
        match self.get(c) {
            None => Ok(None),
            Some((_, "true")) => Ok(Some(true)),
            Some((_, "false")) => Ok(Some(false)),
            Some((n, v)) => Err(self.err(n, format!("{v:?} is not true or false"))),
        }
    }

    fn text(&self, c: &Column) -> Option<String> {
        self.get(c).map(|(_, v)| spreadsheet_undone(v).to_string())
    }
}

/// Store one row as a run of `imp`.
fn push(imp: &mut Imported, row: &Row, format: Format) -> Result<(), ParseError> {
    let Some(variant) = row.text(&Column::Variant) else {
        return Err(row.err("variant", "missing or empty (every row names its variant)"));
    };
    let status = match row.get(&Column::Status) {
        None | Some((_, "ok")) => RunStatus::Ok,
        Some((_, "failed")) => RunStatus::Failed,
        Some((_, "timeout")) => RunStatus::Timeout,
        Some((n, v)) => return Err(row.err(n, format!("{v:?} is not ok, failed or timeout"))),
    };
    let warmup = row.flag(&Column::Warmup)?.unwrap_or(false);
    let counted = row.flag(&Column::Counted)?;
    let mut metrics = Vec::new();
    for (c, n, v) in &row.cells {
        if let Column::Metric { name, unit } = c {
            if v.is_empty() {
                continue;
            }
            let value: f64 = v
                .parse()
                .map_err(|_| row.err(n, format!("{v:?} is not a number")))?;
            if let Some(why) = super::out_of_range(value) {
                return Err(row.err(n, why));
            }
            metrics.push(Metric::new(name.as_str(), value, unit.as_str()));
        }
    }
    let pos = imp.position(&variant);
    for (c, n, v) in &row.cells {
        if let Column::Param(p) = c {
            let params = &mut imp.variants[pos].parameters;
            match params.get(p) {
                Some(old) if old != spreadsheet_undone(v) => {
                    return Err(row.err(
                        n,
                        format!(
                            "variant {variant:?} has {p}={old:?} on an earlier row, {v:?} here"
                        ),
                    ));
                }
                _ => {
                    params.insert(p.clone(), spreadsheet_undone(v).to_string());
                }
            }
        }
    }
    let excluded = (counted == Some(false) && status == RunStatus::Ok && !warmup)
        .then(|| "not counted where the table came from".to_string());
    let run = Run {
        warmup,
        block: row.int(&Column::Block)?.unwrap_or(0),
        status,
        exit_code: row.int(&Column::ExitCode)?,
        signal: row.int(&Column::Signal)?,
        started_ns: row.int(&Column::StartedNs)?.unwrap_or(0),
        ended_ns: row.int(&Column::EndedNs)?.unwrap_or(0),
        excluded,
        source: Some(Source {
            format: format.to_string(),
            file: row.file.to_string(),
            line: row.line as u32,
            summary: false,
            repeats: None,
        }),
        labels: Labels {
            invocation: row.text(&Column::Invocation),
            boot: row.text(&Column::Boot),
            host: row.text(&Column::Host),
        },
        ..Run::ok(imp.runs.len() as u32, pos, metrics)
    };
    let seq: Option<u64> = row.int(&Column::Seq)?;
    imp.runs.push(run);
    imp.order.push(seq.unwrap_or(u64::MAX));
    Ok(())
}

/// Runs in `seq` order (stable), numbered again from 0.
fn finish(mut imp: Imported) -> Imported {
    let order = std::mem::take(&mut imp.order);
    imp.run_order = !order.is_empty() && order.iter().all(|&s| s != u64::MAX);
    let mut runs: Vec<(u64, Run)> = order.into_iter().zip(imp.runs.drain(..)).collect();
    runs.sort_by_key(|(s, _)| *s);
    imp.runs = runs
        .into_iter()
        .enumerate()
        .map(|(i, (_, r))| Run { seq: i as u32, ..r })
        .collect();
    imp
}

/// A CSV table (RFC 4180; the first row is the header).
pub fn parse_csv(file: &str, text: &str) -> Result<Imported, ParseError> {
    let mut imp = Imported::new(file, Format::Csv);
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes());
    let mut header: Option<Vec<(Column, String)>> = None;
    for rec in rd.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map(|p| p.line() as usize).unwrap_or(1);
            ParseError::new(file, line, format!("not CSV: {e}"))
        })?;
        let line = rec.position().map(|p| p.line() as usize).unwrap_or(1);
        let Some(cols) = &header else {
            let mut cols = Vec::new();
            for (i, name) in rec.iter().enumerate() {
                let c = column(name).map_err(|m| {
                    ParseError::new(file, line, format!("column {} ({name:?}): {m}", i + 1))
                })?;
                if let Some((_, first)) = cols.iter().find(|(x, _)| same_field(x, &c)) {
                    return Err(ParseError::new(
                        file,
                        line,
                        format!(
                            "column {} ({name:?}): the same field as column {first:?} (a field \
                             is given once)",
                            i + 1
                        ),
                    ));
                }
                cols.push((c, name.to_string()));
            }
            if !cols.iter().any(|(c, _)| *c == Column::Variant) {
                return Err(ParseError::new(file, line, "no variant column"));
            }
            header = Some(cols);
            continue;
        };
        let row = Row {
            file,
            line,
            cells: cols
                .iter()
                .zip(rec.iter())
                .enumerate()
                .map(|(i, ((c, n), v))| (c, format!("{} ({n})", i + 1), v.trim().to_string()))
                .collect(),
        };
        push(&mut imp, &row, Format::Csv)?;
    }
    Ok(finish(imp))
}

/// A JSON scalar as the text of a cell (null: empty).
fn cell(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Null => Some(String::new()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// JSONL: one object per line (blank lines skipped), keyed like the CSV header.
pub fn parse_jsonl(file: &str, text: &str) -> Result<Imported, ParseError> {
    let mut imp = Imported::new(file, Format::Jsonl);
    let mut columns: Vec<(String, Column)> = Vec::new();
    for (i, text) in text.lines().enumerate() {
        let line = i + 1;
        if text.trim().is_empty() {
            continue;
        }
        let Members(obj) = serde_json::from_str(text).map_err(|e| {
            ParseError::new(
                file,
                line,
                format!("column {}: not a JSON object: {e}", e.column()),
            )
        })?;
        let mut seen = std::collections::HashSet::new();
        let mut cells = Vec::new();
        for (k, v) in &obj {
            if !seen.insert(k.as_str()) {
                return Err(ParseError::new(
                    file,
                    line,
                    format!("key {k:?} twice in one object (a field is given once)"),
                ));
            }
            if !columns.iter().any(|(n, _)| n == k) {
                let c = column(k)
                    .map_err(|m| ParseError::new(file, line, format!("key {k:?}: {m}")))?;
                if let Some((first, _)) = columns.iter().find(|(_, x)| same_field(x, &c)) {
                    return Err(ParseError::new(
                        file,
                        line,
                        format!(
                            "key {k:?}: the same field as key {first:?} (a field is given once)"
                        ),
                    ));
                }
                columns.push((k.clone(), c));
            }
            let Some(v) = cell(v) else {
                return Err(ParseError::new(
                    file,
                    line,
                    format!("key {k:?}: a value is a string, number, true, false or null"),
                ));
            };
            cells.push((k.as_str(), v));
        }
        let row = Row {
            file,
            line,
            cells: cells
                .into_iter()
                .map(|(k, v)| {
                    let c = &columns.iter().find(|(n, _)| n == k).expect("added above").1;
                    (c, format!("{k:?}"), v)
                })
                .collect(),
        };
        push(&mut imp, &row, Format::Jsonl)?;
    }
    Ok(finish(imp))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "experiment,variant,seq,warmup,status,counted,exit_code,signal,started_ns,ended_ns,block,invocation,boot,host,param.thp,wall_ns [ns],cycles [count]
7,base,1,false,ok,true,0,,100,200,0,p1,b1,h1,never,1000.5,
7,base,0,true,ok,false,0,,50,90,-1,p1,b1,h1,never,999,42
7,'-new,2,false,ok,false,0,,300,400,1,p2,b2,h1,always,1100,43
7,'-new,3,false,failed,false,1,,400,500,1,,,,always,,
";

    #[test]
    fn csv_rows_become_runs_in_seq_order() {
        let imp = parse_csv("t.csv", CSV).unwrap();
        assert_eq!(imp.variants.len(), 2);
        assert_eq!(imp.variants[1].name, "-new");
        assert_eq!(imp.variants[1].parameters["thp"], "always");
        assert_eq!(imp.runs.len(), 4);
        assert!(imp.run_order, "every row has a seq");
        let w = &imp.runs[0];
        assert!(
            w.warmup && w.excluded.is_none(),
            "a warm-up is not counted anyway"
        );
        assert_eq!(
            (w.block, w.started_ns, w.value("cycles")),
            (-1, 50, Some(42.0))
        );
        let r = &imp.runs[1];
        assert_eq!(r.value("wall_ns"), Some(1000.5));
        assert_eq!(r.metrics[0].unit, "ns");
        assert_eq!(r.labels.host.as_deref(), Some("h1"));
        assert_eq!(r.source.as_ref().unwrap().line, 2);
        assert!(
            imp.runs[2].excluded.is_some(),
            "ok, not a warm-up, not counted: excluded"
        );
        assert_eq!(imp.runs[3].status, RunStatus::Failed);
        assert_eq!(imp.runs[3].exit_code, Some(1));
        assert!(imp.runs[3].labels.is_empty() && imp.runs[3].metrics.is_empty());
    }

    #[test]
    fn csv_errors_name_file_line_and_column() {
        let cases = [
            (
                "variant,wall_ns\na,1\n",
                "t.csv:1: column 2 (\"wall_ns\"): unknown column",
            ),
            (
                "variant,x [ns]\na,1e30\n",
                "t.csv:2: column 2 (x [ns]): 1e30 is out of range",
            ),
            (
                "variant,x [ns]\na,abc\n",
                "t.csv:2: column 2 (x [ns]): \"abc\" is not a number",
            ),
            ("variant,x [ns]\n,1\n", "t.csv:2: column variant: missing"),
            ("variant,x [ns]\na,1,2\n", "t.csv:2: not CSV"),
            ("x [ns]\n1\n", "t.csv:1: no variant column"),
            (
                "variant,seq,x [ns]\na,-1,1\n",
                "t.csv:2: column 2 (seq): \"-1\" is not an integer",
            ),
            (
                "variant,warmup\na,yes\n",
                "t.csv:2: column 2 (warmup): \"yes\" is not true",
            ),
            (
                "variant,status\na,crashed\n",
                "column 2 (status): \"crashed\"",
            ),
            (
                "variant,param.k\na,1\na,2\n",
                "t.csv:3: column 2 (param.k): variant \"a\" has k=\"1\"",
            ),
            (
                "variant,host,host\na,1,2\n",
                "t.csv:1: column 3 (\"host\"): the same field as column \"host\"",
            ),
            (
                "variant,wall_ns [ns],wall_ns [KiB]\na,1,2\n",
                "t.csv:1: column 3 (\"wall_ns [KiB]\"): the same field as column \"wall_ns [ns]\"",
            ),
        ];
        for (text, want) in cases {
            let e = parse_csv("t.csv", text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn jsonl_is_the_same_table() {
        let text = "{\"variant\":\"a\",\"seq\":1,\"wall_ns [ns]\":5,\"boot\":\"b1\",\"host\":null}\n\n\
                    {\"variant\":\"a\",\"seq\":0,\"wall_ns [ns]\":6.5,\"warmup\":false}\n";
        let imp = parse_jsonl("t.jsonl", text).unwrap();
        assert_eq!(imp.runs.len(), 2);
        assert_eq!(imp.runs[0].value("wall_ns"), Some(6.5));
        let no_seq = parse_jsonl("t.jsonl", "{\"variant\":\"a\"}\n").unwrap();
        assert!(!no_seq.run_order);
        assert_eq!(imp.runs[1].labels.boot.as_deref(), Some("b1"));
        assert_eq!(imp.runs[1].labels.host, None);
        assert_eq!(imp.runs[1].source.as_ref().unwrap().line, 1);
        for (text, want) in [
            (
                "{\"variant\":\"a\"\n",
                "t.jsonl:1: column 14: not a JSON object",
            ),
            (
                "{\"variant\":\"a\",\"x [ns]\":[1]}\n",
                "t.jsonl:1: key \"x [ns]\": a value is",
            ),
            (
                "\n{\"variant\":\"a\",\"y\":1}\n",
                "t.jsonl:2: key \"y\": unknown column",
            ),
            (
                "{\"variant\":\"a\",\"x [ns]\":\"z\"}\n",
                "column \"x [ns]\": \"z\" is not a number",
            ),
            (
                "{\"variant\":\"a\",\"x [ns]\":1,\"x [ns]\":2}\n",
                "t.jsonl:1: key \"x [ns]\" twice in one object",
            ),
            (
                "{\"variant\":\"a\",\"x [ns]\":1}\n{\"variant\":\"a\",\"x [KiB]\":2}\n",
                "t.jsonl:2: key \"x [KiB]\": the same field as key \"x [ns]\"",
            ),
        ] {
            let e = parse_jsonl("t.jsonl", text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn values_no_run_can_have_are_refused_with_line_and_field() {
        for (text, want) in [
            (
                "variant,wall_ns [ns]\na,1\na,-5\n",
                "t.csv:3: wall_ns (ns): -5 is negative",
            ),
            (
                "variant,started_ns,ended_ns\na,10,20\na,30,20\n",
                "t.csv:3: ended_ns: 20 is before started_ns 30",
            ),
            (
                "variant,started_ns\na,-3\n",
                "t.csv:2: started_ns: -3 is negative",
            ),
        ] {
            let e = crate::parse(Format::Csv, "t.csv", text, "x")
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        // What a tool can print stays accepted: a negative value of a metric of a workload's
        // own, an end without a start.
        let ok = "variant,delta [ns],ended_ns\na,-5,20\n";
        crate::parse(Format::Csv, "t.csv", ok, "x").unwrap();
    }
}
