//! `abperf micro --invocations N`: the suite measured in N processes. The parent runs itself
//! again once per invocation (and per -k variant: invocation i of every variant, in a seeded
//! ABBA order, before invocation i+1 of any), each child measuring 1/N of every configuration
//! (`micro::Options::share`) with fresh buffers, alignment and physical pages, and handing its
//! suite report back as JSON on stdout; the parent joins each variant's N reports
//! (`micro::invocations::merge`), every round labelled with its invocation.

use super::micro_args::{MicroArgs, progress_bar};
use crate::error::usage;
use crate::micro::{self, Options, SuiteReport};
use std::process::{Command, Stdio};

/// The most invocations `--invocations` accepts.
pub const MAX_INVOCATIONS: usize = 64;

/// Invocations of a suite measured alone when `--invocations` is not given: enough for two
/// separate experiments to compare with the processes as the unit (docs/micro.md).
pub const DEFAULT_INVOCATIONS: usize = 4;

/// `--invocations N` checked (from 1 to [`MAX_INVOCATIONS`]), or its default: 1 with -k or
/// --kernel, else [`DEFAULT_INVOCATIONS`].
pub fn checked(args: &MicroArgs) -> anyhow::Result<usize> {
    let alone = args.knobs.is_empty() && args.kernel.is_empty();
    let n = args
        .invocations
        .unwrap_or(if alone { DEFAULT_INVOCATIONS } else { 1 });
    if !(1..=MAX_INVOCATIONS).contains(&n) {
        return Err(usage(format!(
            "--invocations {n}: expected a number of processes from 1 to {MAX_INVOCATIONS}"
        )));
    }
    if let Some(i) = args.invocation_child
        && i >= n
    {
        return Err(usage(format!(
            "--invocation-child {i}: expected an invocation below --invocations {n}"
        )));
    }
    Ok(n)
}

/// A child's part: the suite with 1/N of every configuration, its report as JSON on stdout.
pub fn run_child(benches: &[&'static str], opts: &Options) -> anyhow::Result<i32> {
    let report = micro::run_suite(benches, opts, |_| {})?;
    // One line: a guest's results port delivers whole lines.
    let text = serde_json::to_string(&report)? + "\n";
    super::output::write(&text, None)?;
    Ok(0)
}

/// The arguments of a child measuring invocation `i` of `n` with `opts` (resolved: the CPUs
/// and span are the parent's, not chosen again; without `cpus`, as in a guest of another
/// machine's shape, the child chooses its CPUs itself).
pub fn child_args(benches: &[&str], opts: &Options, i: usize, n: usize, cpus: bool) -> Vec<String> {
    let mut a: Vec<String> = vec!["micro".into()];
    a.extend(benches.iter().map(|b| b.to_string()));
    a.extend([
        "--no-store".into(),
        "--invocations".into(),
        n.to_string(),
        "--invocation-child".into(),
        i.to_string(),
    ]);
    if cpus {
        a.extend(["--cpu".into(), opts.cpu.to_string()]);
    }
    if opts.quick {
        a.push("--quick".into());
    }
    if let Some(s) = opts.samples {
        a.extend(["--samples".into(), s.to_string()]);
    }
    if let Some(r) = opts.remote_cpu.filter(|_| cpus) {
        a.extend(["--remote-cpu".into(), r.to_string()]);
    }
    if let Some(c) = opts.remote_counts.as_ref().filter(|_| cpus) {
        let list: Vec<String> = c.iter().map(|x| x.to_string()).collect();
        a.extend(["--remote-cpus".into(), list.join(",")]);
    }
    if !opts.realtime {
        a.push("--no-rt".into());
    }
    if let Some(s) = opts.span {
        a.extend(["--span".into(), s.as_secs_f64().to_string()]);
    }
    a
}

/// Run invocation `i` of `n` in a child process and read its suite report.
fn child(benches: &[&str], opts: &Options, i: usize, n: usize) -> anyhow::Result<SuiteReport> {
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("--invocations: cannot find abperf's own program: {e}"))?;
    let out = Command::new(&exe)
        .args(child_args(benches, opts, i, n, true))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| anyhow::anyhow!("--invocations: cannot start {}: {e}", exe.display()))?;
    if !out.status.success() {
        anyhow::bail!(
            "invocation {} of {n} (a child abperf micro) failed ({}): {}",
            i + 1,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        anyhow::anyhow!(
            "invocation {} of {n}: its report could not be read ({e}); stderr: {}",
            i + 1,
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })
}

/// The suite of each of `variants` variants measured in `n` invocations: invocation i of every
/// variant (in the order `micro::interleave::order(variants, seed, i)`, `switch(v)` putting
/// variant v's settings in place before its child starts) before invocation i+1 of any. One
/// merged report per variant.
pub fn measure(
    benches: &[&'static str],
    opts: &Options,
    n: usize,
    variants: usize,
    seed: u64,
    switch: &dyn Fn(usize) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<SuiteReport>> {
    let started = std::time::Instant::now();
    let bar = progress_bar(
        n * variants,
        &format!("micro, {n} invocations [{{pos}}/{{len}}] {{msg}} {{elapsed}}"),
    );
    let mut parts: Vec<Vec<SuiteReport>> = (0..variants).map(|_| Vec::new()).collect();
    for i in 0..n {
        for v in micro::interleave::order(variants, seed, i) {
            bar.set_message(if variants > 1 {
                format!("invocation {} of variant {}", i + 1, v + 1)
            } else {
                format!("invocation {}", i + 1)
            });
            switch(v)?;
            let r = child(benches, opts, i, n);
            bar.inc(1);
            parts[v].push(r?);
        }
    }
    bar.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64();
    parts
        .into_iter()
        .map(|p| micro::invocations::merge(p, elapsed))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_gets_the_resolved_options() {
        let opts = Options {
            quick: true,
            samples: Some(11),
            cpu: 1,
            remote_cpu: Some(0),
            remote_counts: Some(vec![1]),
            cpus: vec![0, 1],
            realtime: false,
            span: Some(std::time::Duration::from_millis(1500)),
            share: 4,
        };
        let a = child_args(&["syscall", "xstate"], &opts, 2, 4, true).join(" ");
        assert_eq!(
            a,
            "micro syscall xstate --no-store --invocations 4 --invocation-child 2 --cpu 1 \
             --quick --samples 11 --remote-cpu 0 --remote-cpus 1 --no-rt --span 1.5"
        );
        // In a guest: its own CPUs.
        let g = child_args(&["timer"], &opts, 0, 1, false).join(" ");
        assert_eq!(
            g,
            "micro timer --no-store --invocations 1 --invocation-child 0 --quick --samples 11 \
             --no-rt --span 1.5"
        );
    }
}
