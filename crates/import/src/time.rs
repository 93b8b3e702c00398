//! GNU `/usr/bin/time` output.
//!
//! Three shapes are accepted, mixed freely in one file:
//! - the default format, two lines per run (optionally preceded by `Command exited with non-zero
//!   status N` or `Command terminated by signal N`):
//!   `0.00user 0.00system 0:00.00elapsed 100%CPU (0avgtext+0avgdata 1008maxresident)k`
//!   `80inputs+8outputs (1major+73minor)pagefaults 0swaps`
//! - the same two lines joined on one line, optionally with a variant label in front and the
//!   `user`/`system`/`elapsed` suffixes dropped, as in seed 000:
//!   `n 879.25 77.50 4:15.52 374%CPU (0avgtext+0avgdata 798736maxresident)k 0inputs+4452416outputs (1major+58366597minor)pagefaults 0swaps`
//! - `-v` verbose records (`Command being timed: ...` to `Exit status: N`).
//!
//! Mail quoting (`> `) is stripped, blank lines and `#` comments are skipped; any other line is an
//! error, so a truncated or mangled run is never dropped silently.

use super::{Exit, Imported, Metric, ParseError, RunKind, parse_num, secs_to_ns, unit, unquote};
use crate::Format;

/// Parse `/usr/bin/time` output; unlabelled runs go to `default_variant`.
pub fn parse(file: &str, text: &str, default_variant: &str) -> Result<Imported, ParseError> {
    let mut out = Imported::new(file, Format::Time);
    let lines: Vec<&str> = text.lines().collect();
    let mut pending_exit: Option<Exit> = None;
    let mut verbose: Option<Verbose> = None;
    let mut i = 0;
    while i < lines.len() {
        let lineno = i + 1;
        let line = unquote(lines[i]).trim_end();
        i += 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let err = |msg: String| ParseError::new(file, lineno, msg);
        if let Some(rest) = line.strip_prefix("Command exited with non-zero status ") {
            let code = rest
                .trim()
                .parse::<i32>()
                .map_err(|_| err(format!("bad exit status {rest:?}")))?;
            pending_exit = Some(Exit::Code(code));
            continue;
        }
        if let Some(rest) = line.strip_prefix("Command terminated by signal ") {
            let sig = rest
                .trim()
                .parse::<i32>()
                .map_err(|_| err(format!("bad signal number {rest:?}")))?;
            pending_exit = Some(Exit::Signal(Some(sig)));
            continue;
        }
        if let Some(v) = verbose.as_mut()
            && v.take_line(line).map_err(err)?
        {
            if v.finished {
                let v = verbose.take().expect("verbose record");
                v.finish(file, &mut out, default_variant, pending_exit.take())?;
            }
            continue;
        }
        if line.starts_with("Command being timed:") || verbose_key(line).is_some() {
            if let Some(v) = verbose.take() {
                v.finish(file, &mut out, default_variant, pending_exit.take())?;
            }
            let mut v = Verbose::new(lineno);
            v.take_line(line).map_err(err)?;
            verbose = Some(v);
            continue;
        }
        if line.contains("%CPU") && line.contains("maxresident)k") {
            if let Some(v) = verbose.take() {
                v.finish(file, &mut out, default_variant, pending_exit.take())?;
            }
            let mut record = line.to_string();
            if !line.contains("pagefaults") {
                // Default format: the second line follows (blank lines allowed in between).
                while i < lines.len() && unquote(lines[i]).trim().is_empty() {
                    i += 1;
                }
                let second = lines.get(i).map(|l| unquote(l).trim());
                match second {
                    Some(s) if s.contains("inputs+") && s.contains("pagefaults") => {
                        record.push(' ');
                        record.push_str(s);
                        i += 1;
                    }
                    _ => {
                        return Err(ParseError::new(
                            file,
                            (i + 1).min(lines.len().max(1)),
                            format!(
                                "expected the second /usr/bin/time line \
                                 'NNinputs+NNoutputs (NNmajor+NNminor)pagefaults NNswaps' after line {lineno}"
                            ),
                        ));
                    }
                }
            }
            let (label, metrics) = parse_record(&record).map_err(err)?;
            let name = label.unwrap_or(default_variant);
            // GNU time's own output says "Command exited with non-zero status N" before a failed
            // run, so a record in its default format without that line exited 0. The squashed
            // form has lost that line, so there the status is unknown.
            let gnu_default = record
                .split_whitespace()
                .next()
                .is_some_and(|t| t.ends_with("user"));
            let exit = pending_exit.take().or(gnu_default.then_some(Exit::Code(0)));
            out.push_run(name, lineno, metrics, exit, RunKind::Single);
            continue;
        }
        return Err(err(format!(
            "not /usr/bin/time output: {:?} (expected 'Uuser Ssystem Eelapsed P%CPU ...', \
             'LABEL U S E P%CPU ...' or a -v record)",
            shorten(line)
        )));
    }
    if let Some(v) = verbose.take() {
        v.finish(file, &mut out, default_variant, pending_exit.take())?;
    }
    Ok(out)
}

fn shorten(s: &str) -> String {
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(60).collect::<String>())
    } else {
        s.to_string()
    }
}

/// `[h:]mm:ss[.ff]` (GNU time's `%E`) or plain seconds, to seconds. Minutes and seconds after
/// the first part are below 60, as GNU time prints them (`0:99.44` and `99:99:99` are no
/// elapsed times it can print).
fn parse_elapsed(s: &str) -> Option<f64> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() > 3 {
        return None;
    }
    let mut secs = 0.0;
    for (k, p) in parts.iter().enumerate() {
        let last = k + 1 == parts.len();
        if !last && (p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
            return None;
        }
        let v = parse_num(p)?;
        if k > 0 && v >= 60.0 {
            return None;
        }
        secs = secs * 60.0 + v;
    }
    Some(secs)
}

/// Why GNU time cannot have printed `cpu_pct` for these user, system and elapsed times: it
/// prints (user + system) / elapsed as a whole percentage, from times it prints truncated to
/// hundredths, so the percentage is at most what those hundredths allow (any, when elapsed is
/// below a hundredth). Only a percentage above that is refused: one below it is as impossible
/// but harmless (`cpu_pct` is not what a verdict is made from), and hand-written records have it.
fn cpu_pct_impossible(metrics: &[Metric]) -> Option<String> {
    let get = |n: &str| metrics.iter().find(|m| m.name == n).map(|m| m.value / 1e9);
    let (Some(u), Some(s), Some(e), Some(pct)) = (
        get("user_ns"),
        get("sys_ns"),
        get("wall_ns"),
        metrics
            .iter()
            .find(|m| m.name == "cpu_pct")
            .map(|m| m.value),
    ) else {
        return None;
    };
    let slack = 0.011;
    if e <= slack {
        return None;
    }
    let high = ((u + s + 2.0 * slack) / (e - slack) * 100.0 + 1.0).ceil();
    (pct > high).then(|| {
        format!(
            "%CPU: {pct}% cannot come with {u:.2} s user + {s:.2} s system in {e:.2} s elapsed \
             (GNU time prints (user+system)/elapsed: at most {high}% here)"
        )
    })
}

fn num_field(tok: &str, suffix: &str, what: &str) -> Result<f64, String> {
    let v = tok
        .strip_suffix(suffix)
        .ok_or_else(|| format!("expected {what} as 'N{suffix}', found {tok:?}"))?;
    parse_num(v).ok_or_else(|| format!("bad {what}: {v:?} is not a non-negative number"))
}

/// `A+B` between a prefix and suffix, e.g. `(1major+73minor)pagefaults`.
fn pair_field(
    tok: &str,
    prefix: &str,
    mid: &str,
    suffix: &str,
    what: &str,
) -> Result<(f64, f64), String> {
    let bad = || format!("expected {what} as '{prefix}N{mid}N{suffix}', found {tok:?}");
    let inner = tok
        .strip_prefix(prefix)
        .and_then(|t| t.strip_suffix(suffix))
        .ok_or_else(bad)?;
    let (a, b) = inner.split_once(mid).ok_or_else(bad)?;
    let a = parse_num(a).ok_or_else(bad)?;
    let b = parse_num(b).ok_or_else(bad)?;
    Ok((a, b))
}

/// `tok` without `suffix` when it ends with it.
fn opt_suffix<'a>(tok: &'a str, suffix: &str) -> &'a str {
    tok.strip_suffix(suffix).unwrap_or(tok)
}

/// One default-format record joined on one line, optionally labelled.
fn parse_record(record: &str) -> Result<(Option<&str>, Vec<Metric>), String> {
    let toks: Vec<&str> = record.split_whitespace().collect();
    let cpu = toks
        .iter()
        .position(|t| t.ends_with("%CPU"))
        .ok_or("missing the 'P%CPU' field")?;
    let head = &toks[..cpu];
    let tail = &toks[cpu..];
    // GNU time's own "Uuser Ssystem Eelapsed", or the labelled form of seed 000 ("LABEL U S E",
    // with or without GNU time's suffixes), or bare "U S E".
    let (label, u, s, e, gnu) = match head {
        [u, s, e] if u.ends_with("user") => (None, *u, *s, *e, true),
        [l, u, s, e] => (Some(*l), *u, *s, *e, false),
        [u, s, e] => (None, *u, *s, *e, false),
        _ => {
            return Err(format!(
                "expected 'Uuser Ssystem Eelapsed' or 'LABEL U S E' before the %CPU field, found {} fields",
                head.len()
            ));
        }
    };
    let (user, sys, wall) = if gnu {
        (
            num_field(u, "user", "user time")?,
            num_field(s, "system", "system time")?,
            parse_elapsed(
                e.strip_suffix("elapsed")
                    .ok_or(format!("expected 'Eelapsed', found {e:?}"))?,
            )
            .ok_or(format!(
                "bad elapsed time {e:?} (expected [h:]m:ss.ff, minutes and seconds below 60)"
            ))?,
        )
    } else {
        (
            parse_num(opt_suffix(u, "user"))
                .ok_or(format!("bad user time {u:?} (expected seconds)"))?,
            parse_num(opt_suffix(s, "system"))
                .ok_or(format!("bad system time {s:?} (expected seconds)"))?,
            parse_elapsed(opt_suffix(e, "elapsed")).ok_or(format!(
                "bad elapsed time {e:?} (expected [h:]m:ss.ff, minutes and seconds below 60)"
            ))?,
        )
    };
    if tail.len() != 6 {
        return Err(format!(
            "expected 6 fields from %CPU on ('P%CPU (Xavgtext+Yavgdata Mmaxresident)k \
             Iinputs+Ooutputs (Fmajor+Rminor)pagefaults Wswaps'), found {}",
            tail.len()
        ));
    }
    let mut m = vec![
        Metric::new("user_ns", secs_to_ns(user), unit::NS),
        Metric::new("sys_ns", secs_to_ns(sys), unit::NS),
        Metric::new("wall_ns", secs_to_ns(wall), unit::NS),
    ];
    // GNU time prints "?%CPU" when elapsed time is zero.
    if tail[0] != "?%CPU" {
        m.push(Metric::new(
            "cpu_pct",
            num_field(tail[0], "%CPU", "CPU percentage")?,
            unit::PERCENT,
        ));
    }
    pair_field(
        tail[1],
        "(",
        "avgtext+",
        "avgdata",
        "average text+data size",
    )?;
    m.push(Metric::new(
        "maxrss_kib",
        num_field(tail[2], "maxresident)k", "max resident size")?,
        unit::KIB,
    ));
    let (inb, outb) = pair_field(tail[3], "", "inputs+", "outputs", "block I/O")?;
    m.push(Metric::new("inblock", inb, unit::COUNT));
    m.push(Metric::new("oublock", outb, unit::COUNT));
    let (maj, min) = pair_field(tail[4], "(", "major+", "minor)pagefaults", "page faults")?;
    m.push(Metric::new("majflt", maj, unit::COUNT));
    m.push(Metric::new("minflt", min, unit::COUNT));
    m.push(Metric::new(
        "nswap",
        num_field(tail[5], "swaps", "swaps")?,
        unit::COUNT,
    ));
    if let Some(why) = cpu_pct_impossible(&m) {
        return Err(why);
    }
    Ok((label, m))
}

/// Known `-v` keys and the metric each one becomes (None: recognised, not stored).
const VERBOSE_KEYS: &[(&str, Option<(&str, &str)>)] = &[
    ("User time (seconds)", Some(("user_ns", unit::NS))),
    ("System time (seconds)", Some(("sys_ns", unit::NS))),
    (
        "Percent of CPU this job got",
        Some(("cpu_pct", unit::PERCENT)),
    ),
    (
        "Elapsed (wall clock) time (h:mm:ss or m:ss)",
        Some(("wall_ns", unit::NS)),
    ),
    ("Average shared text size (kbytes)", None),
    ("Average unshared data size (kbytes)", None),
    ("Average stack size (kbytes)", None),
    ("Average total size (kbytes)", None),
    (
        "Maximum resident set size (kbytes)",
        Some(("maxrss_kib", unit::KIB)),
    ),
    ("Average resident set size (kbytes)", None),
    (
        "Major (requiring I/O) page faults",
        Some(("majflt", unit::COUNT)),
    ),
    (
        "Minor (reclaiming a frame) page faults",
        Some(("minflt", unit::COUNT)),
    ),
    ("Voluntary context switches", Some(("nvcsw", unit::COUNT))),
    (
        "Involuntary context switches",
        Some(("nivcsw", unit::COUNT)),
    ),
    ("Swaps", Some(("nswap", unit::COUNT))),
    ("File system inputs", Some(("inblock", unit::COUNT))),
    ("File system outputs", Some(("oublock", unit::COUNT))),
    ("Socket messages sent", None),
    ("Socket messages received", None),
    ("Signals delivered", None),
    ("Page size (bytes)", None),
    ("Exit status", None),
];

/// `(key, value)` when `line` is a known `-v` line.
fn verbose_key(line: &str) -> Option<(&'static str, &str)> {
    let (k, v) = line.rsplit_once(": ")?;
    let k = k.trim();
    VERBOSE_KEYS
        .iter()
        .find(|(name, _)| *name == k)
        .map(|(name, _)| (*name, v.trim()))
}

struct Verbose {
    line: usize,
    command: Option<String>,
    metrics: Vec<Metric>,
    exit: Option<i32>,
    finished: bool,
}

impl Verbose {
    fn new(line: usize) -> Self {
        Verbose {
            line,
            command: None,
            metrics: Vec::new(),
            exit: None,
            finished: false,
        }
    }

    /// Consume one line of a `-v` record; Ok(false) when the line is not part of one.
    fn take_line(&mut self, line: &str) -> Result<bool, String> {
        if let Some(cmd) = line.strip_prefix("Command being timed:") {
            if self.command.is_some() || !self.metrics.is_empty() {
                return Ok(false);
            }
            let cmd = cmd.trim();
            let cmd = cmd
                .strip_prefix('"')
                .and_then(|c| c.strip_suffix('"'))
                .unwrap_or(cmd);
            self.command = Some(cmd.to_string());
            return Ok(true);
        }
        let Some((key, value)) = verbose_key(line) else {
            return Ok(false);
        };
        if key == "Exit status" {
            let code = value
                .parse::<i32>()
                .map_err(|_| format!("bad exit status {value:?}"))?;
            self.exit = Some(code);
            self.finished = true;
            return Ok(true);
        }
        let Some((name, unit_)) = VERBOSE_KEYS
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, m)| *m)
        else {
            return Ok(true);
        };
        if self.metrics.iter().any(|m| m.name == name) {
            // The same key twice: a new record without "Command being timed" or "Exit status".
            return Ok(false);
        }
        let v = match name {
            "wall_ns" => parse_elapsed(value).map(secs_to_ns),
            "user_ns" | "sys_ns" => parse_num(value).map(secs_to_ns),
            "cpu_pct" if value == "?%" => return Ok(true),
            "cpu_pct" => value.strip_suffix('%').and_then(parse_num),
            _ => parse_num(value),
        };
        let v = v.ok_or_else(|| format!("bad value {value:?} for {key:?}"))?;
        self.metrics.push(Metric::new(name, v, unit_));
        Ok(true)
    }

    fn finish(
        self,
        file: &str,
        out: &mut Imported,
        variant: &str,
        exit: Option<Exit>,
    ) -> Result<(), ParseError> {
        for need in ["user_ns", "sys_ns", "wall_ns"] {
            if !self.metrics.iter().any(|m| m.name == need) {
                return Err(ParseError::new(
                    file,
                    self.line,
                    format!(
                        "incomplete -v record: no {need} ('User time', 'System time', 'Elapsed (wall clock) time')"
                    ),
                ));
            }
        }
        if let Some(why) = cpu_pct_impossible(&self.metrics) {
            return Err(ParseError::new(file, self.line, why));
        }
        // A signal death prints "Command terminated by signal N" and then "Exit status: 0".
        let exit = match exit {
            Some(Exit::Signal(s)) => Some(Exit::Signal(s)),
            _ => self.exit.map(Exit::Code),
        };
        let v = out.variant_mut(variant);
        if v.command.is_none() {
            v.command = self.command;
        }
        out.push_run(variant, self.line, self.metrics, exit, RunKind::Single);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ParsedRun;

    const SQUASHED: &str = "> n 879.25 77.50 4:15.52 374%CPU (0avgtext+0avgdata 798736maxresident)k 0inputs+4452416outputs (1major+58366597minor)pagefaults 0swaps\n\
> y 874.62 77.98 4:14.47 374%CPU (0avgtext+0avgdata 799620maxresident)k 0inputs+4452416outputs (1major+58400992minor)pagefaults 0swaps\n";

    #[test]
    fn squashed_labelled_lines() {
        let imp = parse("d.txt", SQUASHED, "x").unwrap();
        assert_eq!(imp.variants.len(), 2);
        let n = &imp.variants[0];
        let n_runs = imp.runs_at(0);
        assert_eq!(n.name, "n");
        let r = n_runs[0];
        assert_eq!(r.line(), 1);
        assert_eq!(r.exit(), None);
        assert_eq!(r.metric("user_ns"), Some(879_250_000_000.0));
        assert_eq!(r.metric("sys_ns"), Some(77_500_000_000.0));
        assert_eq!(r.metric("wall_ns"), Some(255_520_000_000.0));
        assert_eq!(r.metric("cpu_pct"), Some(374.0));
        assert_eq!(r.metric("maxrss_kib"), Some(798736.0));
        assert_eq!(r.metric("inblock"), Some(0.0));
        assert_eq!(r.metric("oublock"), Some(4452416.0));
        assert_eq!(r.metric("majflt"), Some(1.0));
        assert_eq!(r.metric("minflt"), Some(58366597.0));
        assert_eq!(r.metric("nswap"), Some(0.0));
        assert_eq!(imp.variants[1].name, "y");
        assert_eq!(imp.runs_at(1)[0].line(), 2);
    }

    #[test]
    fn default_two_line_format_with_exit_status() {
        let text = "0.01user 0.02system 0:00.03elapsed 100%CPU (0avgtext+0avgdata 1008maxresident)k\n\
80inputs+8outputs (1major+73minor)pagefaults 0swaps\n\
Command exited with non-zero status 3\n\
1.50user 0.25system 1:02:03elapsed 0%CPU (0avgtext+0avgdata 1628maxresident)k\n\
0inputs+0outputs (0major+88minor)pagefaults 0swaps\n\
Command terminated by signal 9\n\
0.00user 0.00system 0:00.00elapsed ?%CPU (0avgtext+0avgdata 1428maxresident)k\n\
0inputs+0outputs (0major+84minor)pagefaults 0swaps\n";
        let imp = parse("t.txt", text, "base").unwrap();
        assert_eq!(imp.variants.len(), 1);
        let runs = imp.runs_at(0);
        assert_eq!(runs.len(), 3);
        assert_eq!(runs[0].metric("user_ns"), Some(10_000_000.0));
        assert_eq!(runs[0].metric("inblock"), Some(80.0));
        assert_eq!(runs[0].exit(), Some(Exit::Code(0)));
        assert_eq!(runs[1].exit(), Some(Exit::Code(3)));
        assert_eq!(runs[1].metric("wall_ns"), Some(3723e9));
        assert_eq!(runs[1].line(), 4);
        assert_eq!(runs[2].exit(), Some(Exit::Signal(Some(9))));
        assert_eq!(runs[2].metric("cpu_pct"), None);
    }

    #[test]
    fn verbose_records() {
        let text = "\tCommand being timed: \"sh -c exit 3\"\n\tUser time (seconds): 0.12\n\tSystem time (seconds): 0.03\n\
\tPercent of CPU this job got: 10%\n\tElapsed (wall clock) time (h:mm:ss or m:ss): 0:01.50\n\
\tAverage shared text size (kbytes): 0\n\tMaximum resident set size (kbytes): 1792\n\
\tMajor (requiring I/O) page faults: 2\n\tMinor (reclaiming a frame) page faults: 76\n\
\tVoluntary context switches: 5\n\tInvoluntary context switches: 7\n\tSwaps: 0\n\
\tFile system inputs: 8\n\tFile system outputs: 16\n\tSocket messages sent: 0\n\tPage size (bytes): 4096\n\
\tExit status: 3\n\
Command terminated by signal 9\n\tCommand being timed: \"sleep 9\"\n\tUser time (seconds): 0.00\n\
\tSystem time (seconds): 0.00\n\tElapsed (wall clock) time (h:mm:ss or m:ss): 0:00.00\n\tExit status: 0\n";
        let imp = parse("v.txt", text, "base").unwrap();
        let v = &imp.variants[0];
        let v_runs = imp.runs_at(0);
        assert_eq!(v.command.as_deref(), Some("sh -c exit 3"));
        assert_eq!(v_runs.len(), 2);
        let r = &v_runs[0];
        assert_eq!(r.metric("user_ns"), Some(120_000_000.0));
        assert_eq!(r.metric("wall_ns"), Some(1_500_000_000.0));
        assert_eq!(r.metric("nvcsw"), Some(5.0));
        assert_eq!(r.metric("nivcsw"), Some(7.0));
        assert_eq!(r.metric("oublock"), Some(16.0));
        assert_eq!(r.exit(), Some(Exit::Code(3)));
        assert_eq!(v_runs[1].exit(), Some(Exit::Signal(Some(9))));
        assert_eq!(v_runs[1].line(), 19);
    }

    #[test]
    fn malformed_lines_name_the_line() {
        let bad = "n 879.25 77.50 4:15.52 374%CPU (0avgtext+0avgdata 798736maxresident)k 0inputs+4452416outputs (1major+58366597minor)pagefaults 0swaps\n\
n 879.79 77.5x 4:15.25 375%CPU (0avgtext+0avgdata 799840maxresident)k 0inputs+4452416outputs (1major+58381178minor)pagefaults 0swaps\n";
        let e = parse("d.txt", bad, "x").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().starts_with("d.txt:2: bad system time"), "{e}");

        let e = parse("d.txt", "n 879.25 77.50 4:15.52\n", "x").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.msg.contains("not /usr/bin/time output"), "{e}");

        let e = parse(
            "d.txt",
            "\n0.01user 0.02system 0:00.03elapsed 100%CPU (0avgtext+0avgdata 1008maxresident)k\n",
            "x",
        )
        .unwrap_err();
        assert!(e.msg.contains("second /usr/bin/time line"), "{e}");

        let e = parse("d.txt", "n 1 2 3:99:1:2 374%CPU (0avgtext+0avgdata 1maxresident)k 0inputs+0outputs (1major+5minor)pagefaults 0swaps", "x")
            .unwrap_err();
        assert!(e.msg.contains("elapsed"), "{e}");

        let e = parse(
            "v.txt",
            "\tUser time (seconds): 0.12\n\tExit status: 0\n",
            "x",
        )
        .unwrap_err();
        assert!(e.msg.contains("incomplete -v record"), "{e}");
    }

    #[test]
    fn elapsed_forms() {
        assert_eq!(parse_elapsed("4:15.52"), Some(255.52));
        assert_eq!(parse_elapsed("1:02:03"), Some(3723.0));
        assert_eq!(parse_elapsed("0:00.00"), Some(0.0));
        assert_eq!(parse_elapsed("x:00"), None);
        assert_eq!(parse_elapsed("1:2:3:4"), None);
        assert_eq!(parse_elapsed("0:99.44"), None);
        assert_eq!(parse_elapsed("99:99:99"), None);
        assert_eq!(parse_elapsed("1:59:59.99"), Some(7199.99));
        assert_eq!(parse_elapsed("600:00.00"), Some(36000.0));
    }

    #[test]
    fn what_gnu_time_cannot_print_is_refused_naming_the_line_and_field() {
        let rec = |t: &str, cpu: &str| {
            format!(
                "# a comment\n{t} {cpu}%CPU (0avgtext+0avgdata 1maxresident)k\n\
                 0inputs+0outputs (0major+5minor)pagefaults 0swaps\n"
            )
        };
        for (t, cpu, field) in [
            ("0.00user 0.00system 0:99.44elapsed", "0", "elapsed"),
            ("0.00user 0.00system 99:99:99elapsed", "0", "elapsed"),
            ("1.00user 0.00system 0:01.00elapsed", "99999", "%CPU"),
            ("0.10user 0.00system 0:10.00elapsed", "100", "%CPU"),
        ] {
            let e = parse("t.txt", &rec(t, cpu), "x").unwrap_err();
            assert_eq!(e.line, 2, "{e}");
            assert!(e.msg.contains(field), "{t}: {e}");
        }
        // Rounding to hundredths allows some spread; a tiny elapsed time allows any percentage.
        for (t, cpu) in [
            ("1.00user 0.00system 0:01.00elapsed", "99"),
            ("0.50user 0.50system 0:01.00elapsed", "100"),
            ("0.00user 0.00system 0:00.00elapsed", "100"),
            ("0.01user 0.00system 0:00.01elapsed", "66"),
        ] {
            parse("t.txt", &rec(t, cpu), "x").unwrap_or_else(|e| panic!("{t} {cpu}: {e}"));
        }
        let v = "\tUser time (seconds): 1.00\n\tSystem time (seconds): 0.00\n\
                 \tPercent of CPU this job got: 99999%\n\
                 \tElapsed (wall clock) time (h:mm:ss or m:ss): 0:01.00\n\tExit status: 0\n";
        let e = parse("v.txt", v, "x").unwrap_err();
        assert!(e.msg.contains("%CPU"), "{e}");
    }
}
