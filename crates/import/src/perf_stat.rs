//! `perf stat` output: the human form (with or without `-r`) and the `-x,` CSV form.
//!
//! Human form: every `Performance counter stats for 'CMD' [(N runs)]:` block becomes one run
//! (several blocks, e.g. from `-o FILE --append` in a loop, give several runs). With `-r N` perf
//! prints only means, so the run is a [`RunKind::Summary`] of N repeats, and the `( +- X% )` column
//! (perf's standard error of the mean relative to the mean) is kept as `EVENT.stderr_pct`.
//! A multiplexed counter's `(P%)` running share is kept as `EVENT.running_pct`.
//! `seconds time elapsed`, `seconds user` and `seconds sys` become `wall_ns`, `user_ns`,
//! `sys_ns`; counters keep perf's event name; times in msec/usec are stored in ns, other units as
//! printed, plain counts as `count`. `<not supported>` and `<not counted>` counters are not stored
//! (there is no value) but reported in [`Imported::notes`].
//!
//! Text outside blocks (the workload's own output, perf's warnings) is skipped; inside a block
//! every line must be a counter, a `#` continuation, or one of the time lines.
//!
//! CSV form (`-x,`): `value,unit,event[,stderr%],run_time,running%,metric,metric_unit`; a block
//! ends at a `#` comment line (`# started on ...` from `--append`) or when an event repeats. CSV
//! carries neither the command nor the run count nor the elapsed time.

use super::{Imported, Metric, ParseError, RunKind, unit};
use crate::Format;

/// Parse perf stat output; all runs go to `default_variant`.
pub fn parse(file: &str, text: &str, default_variant: &str) -> Result<Imported, ParseError> {
    if text
        .lines()
        .any(|l| l.trim_start().starts_with("Performance counter stats for"))
    {
        parse_human(file, text, default_variant)
    } else {
        parse_csv(file, text, default_variant)
    }
}

struct Block {
    line: usize,
    command: Option<String>,
    repeats: Option<u32>,
    metrics: Vec<Metric>,
    elapsed_seen: bool,
}

impl Block {
    fn push(&mut self, file: &str, line: usize, m: Metric) -> Result<(), ParseError> {
        if self.metrics.iter().any(|x| x.name == m.name) {
            return Err(ParseError::new(
                file,
                line,
                format!("{} appears twice in one perf stat block", m.name),
            ));
        }
        self.metrics.push(m);
        Ok(())
    }
}

/// A block that counted nothing (a header and no counter, no elapsed time, or only
/// `<not supported>` ones) is no run: perf stat prints at least one figure of every run.
fn counted(out: &Imported, b: &Block) -> Result<(), ParseError> {
    if b.metrics.is_empty() {
        return Err(ParseError::new(
            &out.file,
            b.line,
            "counters: this perf stat block has no counted event and no elapsed time \
             (perf stat prints at least one for every run)",
        ));
    }
    Ok(())
}

fn finish(out: &mut Imported, variant: &str, b: Block) -> Result<(), ParseError> {
    counted(out, &b)?;
    let kind = match b.repeats {
        Some(n) => RunKind::Summary { repeats: Some(n) },
        None => RunKind::Single,
    };
    let v = out.variant_mut(variant);
    if v.command.is_none() {
        v.command = b.command.clone();
    } else if b.command.is_some() && v.command != b.command {
        let note = format!(
            "{}:{}: command {:?} differs from the first block's {:?}; stored in the same variant",
            out.file,
            b.line,
            b.command.as_deref().unwrap_or(""),
            out.variants
                .iter()
                .find(|v| v.name == variant)
                .and_then(|v| v.command.clone())
                .unwrap_or_default()
        );
        out.notes.push(note);
    }
    out.push_run(variant, b.line, b.metrics, None, kind);
    Ok(())
}

/// `Performance counter stats for 'CMD' (N runs):` -> (command, repeats).
fn parse_header(t: &str) -> Result<(Option<String>, Option<u32>), String> {
    let rest = t.trim_start_matches("Performance counter stats for").trim();
    let rest = rest.strip_suffix(':').unwrap_or(rest).trim();
    let (cmd_part, repeats) = match rest.rfind(" runs)") {
        Some(end) if rest.ends_with(" runs)") => {
            let open = rest[..end].rfind('(').ok_or("unbalanced '(N runs)'")?;
            let n: u32 = rest[open + 1..end]
                .trim()
                .parse()
                .map_err(|_| format!("bad run count in {:?}", &rest[open..]))?;
            (rest[..open].trim(), Some(n))
        }
        _ => (rest, None),
    };
    let command = cmd_part
        .strip_prefix('\'')
        .and_then(|c| c.strip_suffix('\''))
        .map(str::to_string)
        .or_else(|| {
            // "process id '1234'", "'system wide'", "CPU(s) 0": keep as printed.
            (!cmd_part.is_empty()).then(|| cmd_part.to_string())
        });
    Ok((command, repeats))
}

/// A perf count: plain digits or C-locale grouping (`1,234,567`), optionally with decimals.
fn parse_count(s: &str) -> Option<f64> {
    let mut groups = s.split(',');
    let first = groups.next()?;
    let mut digits = first.to_string();
    for g in groups {
        let (int, _frac) = g.split_once('.').unwrap_or((g, ""));
        if int.len() != 3 || !int.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.push_str(g);
    }
    if first.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let v: f64 = digits.parse().ok()?;
    v.is_finite().then_some(v)
}

/// perf's unit column -> (stored value, stored unit).
fn convert_unit(value: f64, unit_: &str) -> (f64, String) {
    match unit_ {
        "" => (value, unit::COUNT.to_string()),
        "msec" => (value * 1e6, unit::NS.to_string()),
        "usec" => (value * 1e3, unit::NS.to_string()),
        "ns" | "nsec" => (value, unit::NS.to_string()),
        other => (value, other.to_string()),
    }
}

/// Remove `( +- X% )` from `s`, returning X.
fn take_stderr(s: &mut String) -> Result<Option<f64>, String> {
    let Some(start) = s.find("( +-").or_else(|| s.find("(+-")) else {
        return Ok(None);
    };
    let end = s[start..]
        .find(')')
        .map(|e| start + e)
        .ok_or("unclosed '( +- X% )'")?;
    let inner = s[start + 1..end].trim().trim_start_matches("+-").trim();
    let pct = inner
        .strip_suffix('%')
        .and_then(|p| p.trim().parse::<f64>().ok())
        .filter(|p| p.is_finite() && *p >= 0.0)
        .ok_or_else(|| format!("bad '( +- X% )' column: {:?}", &s[start..=end]))?;
    s.replace_range(start..=end, " ");
    Ok(Some(pct))
}

/// Remove a trailing `(P%)` (share of time the counter was running, under multiplexing).
fn take_running(s: &mut String) -> Result<Option<f64>, String> {
    let t = s.trim_end();
    if !t.ends_with("%)") {
        return Ok(None);
    }
    let open = t.rfind('(').ok_or("unbalanced '(P%)'")?;
    let inner = &t[open + 1..t.len() - 2];
    let pct = inner
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && (0.0..=100.0).contains(p))
        .ok_or_else(|| format!("bad running-time column {:?}", &t[open..]))?;
    s.truncate(open);
    Ok(Some(pct))
}

fn parse_human(file: &str, text: &str, variant: &str) -> Result<Imported, ParseError> {
    let mut out = Imported::new(file, Format::PerfStat);
    let mut block: Option<Block> = None;
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let t = raw.trim();
        let err = |msg: String| ParseError::new(file, lineno, msg);
        if t.starts_with("Performance counter stats for") {
            if let Some(b) = block.take() {
                finish(&mut out, variant, b)?;
            }
            let (command, repeats) = parse_header(t).map_err(err)?;
            block = Some(Block {
                line: lineno,
                command,
                repeats,
                metrics: Vec::new(),
                elapsed_seen: false,
            });
            continue;
        }
        let Some(b) = block.as_mut() else { continue };
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if t.contains("seconds time elapsed") {
            let mut s = t.to_string();
            let stderr = take_stderr(&mut s).map_err(err)?;
            let first = s.split_whitespace().next().unwrap_or("");
            let secs =
                parse_count(first).ok_or_else(|| err(format!("bad elapsed time {first:?}")))?;
            b.push(
                file,
                lineno,
                Metric::new("wall_ns", super::secs_to_ns(secs), unit::NS),
            )?;
            if let Some(p) = stderr {
                b.push(
                    file,
                    lineno,
                    Metric::new("wall_ns.stderr_pct", p, unit::PERCENT),
                )?;
            }
            b.elapsed_seen = true;
            continue;
        }
        if let Some((num, which)) = t
            .strip_suffix(" user")
            .map(|n| (n, "user_ns"))
            .or_else(|| t.strip_suffix(" sys").map(|n| (n, "sys_ns")))
            && let Some(num) = num.trim().strip_suffix("seconds")
        {
            let secs =
                parse_count(num.trim()).ok_or_else(|| err(format!("bad time {:?}", num.trim())))?;
            b.push(
                file,
                lineno,
                Metric::new(which, super::secs_to_ns(secs), unit::NS),
            )?;
            continue;
        }
        if b.elapsed_seen {
            // perf's hints after the block ("Some events weren't counted...") and program output.
            let b = block.take().expect("block");
            finish(&mut out, variant, b)?;
            continue;
        }
        parse_counter_line(t, b, &mut out.notes, file, lineno)?;
    }
    if let Some(b) = block.take() {
        finish(&mut out, variant, b)?;
    }
    Ok(out)
}

fn parse_counter_line(
    t: &str,
    b: &mut Block,
    notes: &mut Vec<String>,
    file: &str,
    lineno: usize,
) -> Result<(), ParseError> {
    let err = |msg: String| ParseError::new(file, lineno, msg);
    for missing in ["<not supported>", "<not counted>"] {
        if let Some(rest) = t.strip_prefix(missing) {
            let event = rest
                .split_whitespace()
                .next()
                .ok_or_else(|| err(format!("{missing} without an event name")))?;
            notes.push(format!("{file}:{lineno}: {event} {missing}, not stored"));
            return Ok(());
        }
    }
    let mut s = t.to_string();
    let running = take_running(&mut s).map_err(err)?;
    let stderr = take_stderr(&mut s).map_err(err)?;
    let head = s.split('#').next().unwrap_or("");
    let toks: Vec<&str> = head.split_whitespace().collect();
    let (value, unit_, event) = match toks.as_slice() {
        [v, e] => (*v, "", *e),
        [v, u, e] => (*v, *u, *e),
        _ => {
            return Err(err(format!(
                "expected a perf stat counter line 'VALUE [UNIT] EVENT [# ...] [( +- X% )] [(P%)]', found {t:?}"
            )));
        }
    };
    let value = parse_count(value)
        .ok_or_else(|| err(format!("bad counter value {value:?} for {event}")))?;
    let (value, unit_) = convert_unit(value, unit_);
    b.push(file, lineno, Metric::new(event, value, unit_.clone()))?;
    if let Some(p) = stderr {
        b.push(
            file,
            lineno,
            Metric::new(format!("{event}.stderr_pct"), p, unit::PERCENT),
        )?;
    }
    if let Some(p) = running {
        b.push(
            file,
            lineno,
            Metric::new(format!("{event}.running_pct"), p, unit::PERCENT),
        )?;
    }
    Ok(())
}

fn parse_csv(file: &str, text: &str, variant: &str) -> Result<Imported, ParseError> {
    let mut out = Imported::new(file, Format::PerfStat);
    let mut block: Option<(Block, bool)> = None;
    let close = |out: &mut Imported, block: &mut Option<(Block, bool)>| {
        if let Some((mut b, summary)) = block.take() {
            counted(out, &b)?;
            b.repeats = None;
            let kind = if summary {
                RunKind::Summary { repeats: None }
            } else {
                RunKind::Single
            };
            out.push_run(variant, b.line, b.metrics, None, kind);
        }
        Ok::<(), ParseError>(())
    };
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let t = raw.trim();
        let err = |msg: String| ParseError::new(file, lineno, msg);
        if t.is_empty() {
            continue;
        }
        if t.starts_with('#') {
            close(&mut out, &mut block)?;
            continue;
        }
        let f: Vec<&str> = t.split(',').collect();
        if f.len() < 5 {
            return Err(err(format!(
                "expected perf stat -x, CSV 'value,unit,event,[stderr%,]run_time,running%,...', found {} field(s)",
                f.len()
            )));
        }
        let (value, unit_, event) = (f[0].trim(), f[1].trim(), f[2].trim());
        if value.is_empty() && event.is_empty() {
            continue; // metric-only continuation line
        }
        if event.is_empty() {
            return Err(err("empty event name (third CSV field)".to_string()));
        }
        let (stderr, pcnt) = if let Some(p) = f[3].trim().strip_suffix('%') {
            (Some(p), f.get(5).copied().unwrap_or(""))
        } else {
            (None, f[4])
        };
        if block
            .as_ref()
            .is_some_and(|(b, _)| b.metrics.iter().any(|m| m.name == event))
        {
            close(&mut out, &mut block)?;
        }
        let (b, summary) = block.get_or_insert_with(|| {
            (
                Block {
                    line: lineno,
                    command: None,
                    repeats: None,
                    metrics: Vec::new(),
                    elapsed_seen: false,
                },
                false,
            )
        });
        if value.starts_with('<') {
            if value != "<not supported>" && value != "<not counted>" {
                return Err(err(format!("bad counter value {value:?} for {event}")));
            }
            out.notes
                .push(format!("{file}:{lineno}: {event} {value}, not stored"));
            *summary |= stderr.is_some();
            continue;
        }
        let v = value
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| err(format!("bad counter value {value:?} for {event}")))?;
        let (v, u) = convert_unit(v, unit_);
        b.push(file, lineno, Metric::new(event, v, u.clone()))?;
        if let Some(p) = stderr {
            let p = p
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|p| p.is_finite() && *p >= 0.0)
                .ok_or_else(|| err(format!("bad stderr column {:?} for {event}", f[3])))?;
            b.push(
                file,
                lineno,
                Metric::new(format!("{event}.stderr_pct"), p, unit::PERCENT),
            )?;
            *summary = true;
        }
        let pcnt = pcnt.trim();
        if !pcnt.is_empty() {
            let p = pcnt
                .parse::<f64>()
                .ok()
                .filter(|p| p.is_finite() && (0.0..=100.0).contains(p))
                .ok_or_else(|| err(format!("bad running% column {pcnt:?} for {event}")))?;
            if p < 100.0 {
                b.push(
                    file,
                    lineno,
                    Metric::new(format!("{event}.running_pct"), p, unit::PERCENT),
                )?;
            }
        }
    }
    close(&mut out, &mut block)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ParsedRun;

    const R5: &str = "
 Performance counter stats for 'true' (5 runs):

              0.47 msec task-clock                       #    0.274 CPUs utilized            ( +- 12.66% )
                 0      context-switches                 #    0.000 /sec
                49      page-faults                      #   72.120 K/sec                    ( +-  0.76% )
   <not supported>      cycles
     3,105,214,416      instructions                     #    1.02  insn per cycle           ( +-  0.45% )  (66.53%)
     <not counted>      branches                                                                (0.00%)
                                                  #    0.40  stalled cycles per insn

          0.001728 +- 0.000230 seconds time elapsed  ( +- 13.33% )

Some events weren't counted. Try disabling the NMI watchdog:
";

    #[test]
    fn human_with_repeats() {
        let imp = parse("p.txt", R5, "base").unwrap();
        let v = &imp.variants[0];
        let v_runs = imp.runs_at(0);
        assert_eq!(v.name, "base");
        assert_eq!(v.command.as_deref(), Some("true"));
        assert_eq!(v_runs.len(), 1);
        let r = &v_runs[0];
        assert_eq!(r.kind(), RunKind::Summary { repeats: Some(5) });
        assert_eq!(r.line(), 2);
        assert!((r.metric("task-clock").unwrap() - 470_000.0).abs() < 1e-6);
        assert_eq!(
            r.metrics
                .iter()
                .find(|m| m.name == "task-clock")
                .unwrap()
                .unit,
            "ns"
        );
        assert_eq!(r.metric("task-clock.stderr_pct"), Some(12.66));
        assert_eq!(r.metric("context-switches"), Some(0.0));
        assert_eq!(r.metric("page-faults"), Some(49.0));
        assert_eq!(r.metric("instructions"), Some(3_105_214_416.0));
        assert_eq!(r.metric("instructions.stderr_pct"), Some(0.45));
        assert_eq!(r.metric("instructions.running_pct"), Some(66.53));
        assert_eq!(r.metric("cycles"), None);
        assert_eq!(r.metric("wall_ns"), Some(1_728_000.0));
        assert_eq!(r.metric("wall_ns.stderr_pct"), Some(13.33));
        assert_eq!(imp.notes.len(), 2);
        assert!(
            imp.notes[0].contains("p.txt:7: cycles <not supported>"),
            "{:?}",
            imp.notes
        );
        assert!(
            imp.notes[1].contains("branches <not counted>"),
            "{:?}",
            imp.notes
        );
    }

    #[test]
    fn human_single_blocks_appended() {
        let one = "# started on Sun Nov 22 05:21:17 2026\n\n Performance counter stats for 'sh -c x':\n\n\
              0.71 msec task-clock                       #    0.448 CPUs utilized\n\
                48      page-faults                      #   67.394 K/sec\n\n\
       0.001590322 seconds time elapsed\n\n       0.001534000 seconds user\n       0.000000000 seconds sys\n\n";
        let text = format!("{one}{one}");
        let imp = parse("p.txt", &text, "base").unwrap();
        let runs = imp.runs_at(0);
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].kind(), RunKind::Single);
        assert_eq!(runs[1].line(), 3 + 12);
        assert_eq!(runs[0].metric("wall_ns"), Some(1_590_322.0));
        assert_eq!(runs[0].metric("user_ns"), Some(1_534_000.0));
        assert_eq!(runs[0].metric("sys_ns"), Some(0.0));
        assert_eq!(runs[0].metric("wall_ns.stderr_pct"), None);
    }

    #[test]
    fn seed_003_elapsed_only() {
        let t = "Performance counter stats for 'make -j128' (30 runs):\n\n26.334767571 seconds time elapsed (+- 0.09% )\n";
        let imp = parse("s.txt", t, "b").unwrap();
        let r = &imp.runs_at(0)[0];
        assert_eq!(r.metric("wall_ns"), Some(26_334_767_571.0));
        assert_eq!(r.metric("wall_ns.stderr_pct"), Some(0.09));
        assert_eq!(r.kind(), RunKind::Summary { repeats: Some(30) });
    }

    #[test]
    fn csv_forms() {
        let r5 = "0.59,msec,task-clock,3.71%,590988,100.00,0.455,CPUs utilized\n\
47,,page-faults,1.28%,590988,100.00,74.970,K/sec\n\
<not supported>,,cycles,0.00%,0,100.00,,\n\
123456,,instructions,0.50%,590988,49.95,,\n";
        let imp = parse("p.csv", r5, "b").unwrap();
        let r = &imp.runs_at(0)[0];
        assert_eq!(r.kind(), RunKind::Summary { repeats: None });
        assert!((r.metric("task-clock").unwrap() - 590_000.0).abs() < 1e-6);
        assert_eq!(r.metric("task-clock.stderr_pct"), Some(3.71));
        assert_eq!(r.metric("page-faults"), Some(47.0));
        assert_eq!(r.metric("instructions.running_pct"), Some(49.95));
        assert_eq!(r.metric("page-faults.running_pct"), None);
        assert_eq!(imp.notes.len(), 1);

        let single = "0.64,msec,task-clock,639890,100.00,0.531,CPUs utilized\n49,,page-faults,639890,100.00,76.576,K/sec\n\
# started on x\n0.70,msec,task-clock,639890,100.00,0.531,CPUs utilized\n50,,page-faults,639890,100.00,76.576,K/sec\n\
0.71,msec,task-clock,639890,100.00,0.531,CPUs utilized\n";
        let imp = parse("p.csv", single, "b").unwrap();
        let runs = imp.runs_at(0);
        assert_eq!(runs.len(), 3);
        assert_eq!(runs[0].kind(), RunKind::Single);
        assert_eq!(runs[1].metric("page-faults"), Some(50.0));
        assert_eq!(runs[2].line(), 6);
    }

    #[test]
    fn malformed() {
        let bad = "\n Performance counter stats for 'true' (5 runs):\n\n   12x4      page-faults\n";
        let e = parse("p.txt", bad, "b").unwrap_err();
        assert_eq!(e.line, 4);
        assert!(
            e.to_string().starts_with("p.txt:4: bad counter value"),
            "{e}"
        );

        let bad = " Performance counter stats for 'true':\n 1 2 3 4 page-faults\n";
        assert_eq!(parse("p.txt", bad, "b").unwrap_err().line, 2);

        let bad = " Performance counter stats for 'true':\n 12 page-faults ( +- x% )\n";
        assert!(parse("p.txt", bad, "b").unwrap_err().msg.contains("+-"));

        let bad = "0.59,msec,task-clock,3.71%,590988,100.00\n47,,page-faults\n";
        let e = parse("p.csv", bad, "b").unwrap_err();
        assert_eq!(e.line, 2);
        let bad = "0.59,msec,task-clock,3.71%,590988,100.00\nabc,,page-faults,1%,1,100.00\n";
        assert!(
            parse("p.csv", bad, "b")
                .unwrap_err()
                .to_string()
                .starts_with("p.csv:2: bad counter value")
        );
        let bad = "1,,a,1,100.0\n1,,b,1,190.0\n";
        assert!(
            parse("p.csv", bad, "b")
                .unwrap_err()
                .msg
                .contains("running%")
        );
    }

    #[test]
    fn a_block_that_counted_nothing_is_refused() {
        let empty = "\n Performance counter stats for 'true':\n\n\
                     Performance counter stats for 'true':\n\n 1.0 seconds time elapsed\n";
        let e = parse("p.txt", empty, "b").unwrap_err();
        assert_eq!((e.line, e.msg.starts_with("counters:")), (2, true), "{e}");
        let last = " Performance counter stats for 'true':\n\n 1.0 seconds time elapsed\n\n\
                    Performance counter stats for 'true':\n";
        assert_eq!(parse("p.txt", last, "b").unwrap_err().line, 5);
        let unsupported = "<not supported>,,cycles,0.00%,0,100.00,,\n";
        let e = parse("p.csv", unsupported, "b").unwrap_err();
        assert!(e.to_string().starts_with("p.csv:1: counters:"), "{e}");
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("1,234,567"), Some(1234567.0));
        assert_eq!(parse_count("0.47"), Some(0.47));
        assert_eq!(parse_count("0,59"), None);
        assert_eq!(parse_count("-1"), None);
        assert_eq!(parse_count("NaN"), None);
    }
}
