//! Numeric extremes for every numeric flag (issue 31): each flag whose value clap parses as a
//! number is given -1, 0, NaN, inf, 1e308, 2^64 and a 30-digit integer, on a command that is
//! cheap to run. abperf takes the value or refuses it naming the flag; it never panics, never
//! hangs and never exits with anything but 0, 1 or 2. Subcommands that would boot a VM or record
//! a trace are checked by the parser only.

mod common;
use common::{Lab, run_within};
use std::time::Duration;

const EXTREMES: &[&str] = &[
    "-1",
    "0",
    "NaN",
    "inf",
    "1e308",
    "18446744073709551616",
    "999999999999999999999999999999",
];

fn numeric(arg: &clap::Arg) -> bool {
    matches!(common::value_kind(arg), "whole number" | "number")
}

/// Every (subcommand path, numeric flag's long name) of the command line.
fn numeric_flags() -> Vec<(Vec<String>, String)> {
    fn walk(c: &clap::Command, path: Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
        for a in c.get_arguments().filter(|a| numeric(a)) {
            let long = a.get_long().expect("numeric flags have a long name");
            out.push((path.clone(), long.to_string()));
        }
        for s in c.get_subcommands() {
            let mut p = path.clone();
            p.push(s.get_name().to_string());
            walk(s, p, out);
        }
    }
    let mut out = Vec::new();
    walk(&abperf::cli::parser(), Vec::new(), &mut out);
    out
}

/// The arguments that make a subcommand cheap to run here (long flags, so that the flag under
/// test replaces its own default), or None where it is checked by the parser only.
fn cheap(path: &[String], exp: &str, capture: &str) -> Option<Vec<String>> {
    let v = |a: &[&str]| Some(a.iter().map(|s| s.to_string()).collect());
    match path
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["run"] => v(&["--no-store", "--runs", "1", "--warmup", "0", "true"]),
        ["compare"] | ["report"] => v(&[exp, "--resamples", "0"]),
        ["plan"] => v(&["--effect", "1", "--from", exp]),
        ["doctor"] => v(&["--sample", "0.1"]),
        ["micro"] => v(&["timer", "--quick", "--no-store"]),
        ["trace", "import"] => v(&["--new", "x", capture]),
        _ => None,
    }
}

/// `base` with `--flag value` in front and any `--flag X` of its own taken out.
fn with_flag(path: &[String], base: &[String], flag: &str, value: &str) -> Vec<String> {
    let mut args: Vec<String> = path.to_vec();
    args.extend([format!("--{flag}"), value.to_string()]);
    let mut rest = base.iter();
    while let Some(a) = rest.next() {
        if *a == format!("--{flag}") {
            rest.next();
        } else {
            args.push(a.clone());
        }
    }
    args
}

#[test]
fn every_numeric_flag_takes_or_refuses_extremes_without_a_panic() {
    let lab = Lab::new();
    lab.seed000("x");
    let capture = common::data("small-capture.raw");
    let flags = numeric_flags();
    assert!(flags.len() >= 30, "{flags:?}");
    let mut executed = 0;
    for (path, flag) in &flags {
        for value in EXTREMES {
            let Some(base) = cheap(path, "1", &capture) else {
                let mut argv = vec!["abperf".to_string()];
                argv.extend(with_flag(path, &[], flag, value));
                // Parser only: a refusal names the flag.
                if let Err(e) = abperf::cli::parser().try_get_matches_from(&argv) {
                    let text = e.to_string();
                    assert!(
                        text.contains(&format!("--{flag}")) || !text.contains("invalid value"),
                        "{argv:?}: {text}"
                    );
                }
                continue;
            };
            let args = with_flag(path, &base, flag, value);
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = run_within(lab.cmd(&argv), Duration::from_secs(60), &args.join(" "));
            executed += 1;
            assert!(matches!(o.code, Some(0..=2)), "{args:?}: {o}");
            assert!(!o.stderr.contains("panicked"), "{args:?}: {o}");
            if o.code == Some(2) {
                assert!(o.stderr.contains(&format!("--{flag}")), "{args:?}: {o}");
            }
        }
    }
    assert!(executed >= 100, "{executed}");
}
