//! `perf script` text: the samples of one recording (`perf record -g`), each a header line and
//! its call chain, innermost frame first, one frame per indented line:
//!
//! ```text
//! t 13189 11381.862186:     500000 cpu-clock:
//!         ffffffff81234567 zap_pte_range+0x2a8 ([kernel.kallsyms])
//!                     1161 hot+0x28 (/tmp/t)
//!                    2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)
//! ```
//!
//! A recording without call chains has the one frame on the header line after the event. Each
//! sample counts once (shares are of samples, not of periods: with `cpu-clock` every sample is
//! the same period). One file is one profiled run; a file holding two events is refused (the
//! shares of different events cannot be added).

use super::ParseError;
use abperf_model::profile::Counts;

/// The longest symbol name kept; longer ones (a hostile or mangled input) are cut, marked `...`.
const MAX_SYMBOL: usize = 512;

/// One recording: its event and sample counts per symbol.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    pub event: String,
    pub counts: Counts,
}

/// The symbol a frame line names (`ADDR SYMBOL[+0xOFF] (DSO)`, or `SYMBOL (DSO)` when printed
/// without addresses): the offset and the DSO are dropped; `[unknown]` stays as perf prints it.
fn frame_symbol(frame: &str) -> &str {
    let mut rest = frame.trim();
    if let Some((first, after)) = rest.split_once(char::is_whitespace)
        && !first.is_empty()
        && first.chars().all(|c| c.is_ascii_hexdigit())
    {
        rest = after.trim_start();
    }
    if rest.ends_with(')')
        && let Some(i) = rest.rfind(" (")
    {
        rest = rest[..i].trim_end();
    }
    if let Some(i) = rest.rfind("+0x")
        && rest.len() > i + 3
        && rest[i + 3..].chars().all(|c| c.is_ascii_hexdigit())
    {
        rest = &rest[..i];
    }
    if rest.is_empty() { "[unknown]" } else { rest }
}

fn bounded(symbol: &str) -> String {
    if symbol.len() <= MAX_SYMBOL {
        return symbol.to_string();
    }
    let mut end = MAX_SYMBOL;
    while !symbol.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &symbol[..end])
}

/// `SECONDS.FRACTION:`, the timestamp word of a sample header.
fn is_time(w: &str) -> bool {
    w.strip_suffix(':')
        .is_some_and(|t| t.contains('.') && t.parse::<f64>().is_ok())
}

fn has_time(line: &str) -> bool {
    line.split_whitespace().any(is_time)
}

/// A sample header's event name and whatever follows it (the frame of a recording without call
/// chains). `comm pid[/tid] [cpu] time: [period] event: [frame]`; the command name may hold
/// spaces, so the event is found after the timestamp (`SECONDS.FRACTION:`), or, for output
/// without times, as the first word after the first that ends in `:` and is not a number.
fn header(line: &str) -> Option<(&str, &str)> {
    let words: Vec<(usize, &str)> = line
        .split_whitespace()
        .map(|w| (w.as_ptr() as usize - line.as_ptr() as usize, w))
        .collect();
    let start = words
        .iter()
        .position(|(_, w)| is_time(w))
        .map_or(1, |i| i + 1);
    let (at, event) = words.iter().skip(start).find(|(_, w)| {
        w.len() > 1 && w.ends_with(':') && !is_time(w) && w[..w.len() - 1].parse::<f64>().is_err()
    })?;
    let name = event.strip_suffix(':')?;
    Some((name, line[at + event.len()..].trim()))
}

/// Parse the `perf script` output of one recording; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Recording, ParseError> {
    let mut counts = Counts::default();
    let mut event: Option<(String, usize)> = None;
    let mut stack: Vec<String> = Vec::new();
    let mut open = false;
    let mut flush = |stack: &mut Vec<String>, open: &mut bool| {
        if *open {
            if stack.is_empty() {
                stack.push("[unknown]".to_string());
            }
            counts.add_stack(stack.iter().map(String::as_str));
            stack.clear();
            *open = false;
        }
    };
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            flush(&mut stack, &mut open);
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        // Frames are indented (perf prints a tab); a header may be too, when perf pads the
        // command name, but only a header has a timestamp word.
        if line.starts_with('\t') || (line.starts_with(' ') && !has_time(line)) {
            if !open {
                return Err(ParseError::new(
                    file,
                    n,
                    "a call-chain frame before any sample header",
                ));
            }
            stack.push(bounded(frame_symbol(line)));
            continue;
        }
        flush(&mut stack, &mut open);
        let (name, frame) = header(line).ok_or_else(|| {
            ParseError::new(
                file,
                n,
                "not a perf script sample header ('COMM PID TIME: PERIOD EVENT:' expected)",
            )
        })?;
        match &event {
            None => event = Some((name.to_string(), n)),
            Some((first, at)) if first != name => {
                return Err(ParseError::new(
                    file,
                    n,
                    format!(
                        "a sample of event '{name}' after samples of '{first}' (line {at}): \
                         one event per recording"
                    ),
                ));
            }
            Some(_) => {}
        }
        open = true;
        if !frame.is_empty() {
            stack.push(bounded(frame_symbol(frame)));
        }
    }
    flush(&mut stack, &mut open);
    match event {
        Some((event, _)) => Ok(Recording { event, counts }),
        None => Err(ParseError::new(
            file,
            1,
            "no samples (is this `perf script` output?)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::profile::ShareKind;

    const TWO: &str = "\
# ========
# captured on    : Fri Nov 27 17:20:00 2026
t 13189 11381.861686:     500000 cpu-clock: 
\t            1161 hot+0x28 (/tmp/prof_h/t)
\t            11a2 main+0x1f (/tmp/prof_h/t)
\t           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)

t 13189/13189 [001] 11381.862186:     500000 cpu-clock:u: 
\tffffffffa1234567 zap_pte_range+0x2a8 ([kernel.kallsyms])
\tffffffffa1234000 unmap_page_range ([kernel.kallsyms])
\t            11a2 main+0x1f (/tmp/prof_h/t)
\t               0 [unknown] ([unknown])

";

    #[test]
    fn stacks_give_self_and_inclusive_counts() {
        let text = TWO.replace("cpu-clock:u:", "cpu-clock:");
        let r = parse(&text, "x").unwrap();
        assert_eq!(r.event, "cpu-clock");
        assert_eq!(r.counts.samples, 2);
        assert_eq!(r.counts.by_symbol["hot"], (1, 1));
        assert_eq!(r.counts.by_symbol["main"], (0, 2));
        assert_eq!(r.counts.by_symbol["zap_pte_range"], (1, 1));
        assert_eq!(r.counts.by_symbol["unmap_page_range"], (0, 1));
        assert_eq!(r.counts.by_symbol["[unknown]"], (0, 1));
        let p = r.counts.profile(&r.event, 10);
        assert_eq!(p.shares(ShareKind::Inclusive)["main"], 1.0);
        assert_eq!(p.shares(ShareKind::SelfShare)["hot"], 0.5);
    }

    #[test]
    fn two_events_are_refused_with_both_lines() {
        let e = parse(TWO, "rec.txt").unwrap_err();
        assert_eq!(e.line, 8);
        assert!(
            e.msg.contains("'cpu-clock:u'") && e.msg.contains("line 3"),
            "{e}"
        );
        assert_eq!(e.file, "rec.txt");
    }

    #[test]
    fn frames_without_chains_and_odd_names() {
        let text = "\
my prog 7 1.000001:  1 cycles:P:  401000 foo+0x1 (/bin/x)
my prog 7 1.000002:  1 cycles:P:  401000 operator+(int, int)+0x10 (/bin/x)
my prog 7 1.000003:  1 cycles:P:  401000 std::vector<int>::push_back(int const&) (/bin/x)
my prog 7 1.000004:  1 cycles:P:
";
        let r = parse(text, "x").unwrap();
        assert_eq!(r.event, "cycles:P");
        assert_eq!(r.counts.samples, 4);
        assert_eq!(r.counts.by_symbol["foo"], (1, 1));
        assert_eq!(r.counts.by_symbol["operator+(int, int)"], (1, 1));
        assert_eq!(
            r.counts.by_symbol["std::vector<int>::push_back(int const&)"],
            (1, 1)
        );
        assert_eq!(r.counts.by_symbol["[unknown]"], (1, 1));
    }

    #[test]
    fn a_padded_header_is_a_header() {
        let text = "         swapper     0 [000] 12.500000:  1 cpu-clock:\n\tffffffff81000000 default_idle ([kernel.kallsyms])\n";
        let r = parse(text, "x").unwrap();
        assert_eq!(r.counts.samples, 1);
        assert_eq!(r.counts.by_symbol["default_idle"], (1, 1));
    }

    #[test]
    fn output_without_times_finds_the_event() {
        let text = "t 12/12 500000 cpu-clock:\n\t1161 hot (/t)\n";
        let r = parse(text, "x").unwrap();
        assert_eq!(r.event, "cpu-clock");
        assert_eq!(r.counts.by_symbol["hot"], (1, 1));
    }

    #[test]
    fn malformed_inputs_name_the_line() {
        let e = parse("\t1161 hot (/t)\n", "f").unwrap_err();
        assert_eq!((e.line, e.file.as_str()), (1, "f"));
        let e = parse("Performance counter stats\n", "f").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.msg.contains("sample header"), "{e}");
        let e = parse("", "f").unwrap_err();
        assert!(e.msg.contains("no samples"), "{e}");
    }

    #[test]
    fn long_symbols_are_cut_on_a_character_boundary() {
        let long = "é".repeat(400);
        let text = format!("t 1 1.5: 1 cpu-clock:\n\t10 {long} (/t)\n");
        let r = parse(&text, "x").unwrap();
        let name = r.counts.by_symbol.keys().next().unwrap();
        assert!(name.ends_with("...") && name.len() <= MAX_SYMBOL + 3);
    }
}
