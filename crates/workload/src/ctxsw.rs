//! `ctxsw`: one byte ping-ponged over two pipes between two threads or two processes, on one CPU
//! (every hand-over is a context switch) or on two (every hand-over is a cross-CPU wake-up).

use super::Workload;
use super::metrics::{Direction, Metric, MetricSpec, metric};
use super::params::{Kind, ParamSpec, Params, SEED};
use super::sys;
use anyhow::{Context, Result, anyhow, bail};
use std::os::fd::IntoRawFd;
use std::time::Instant;

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "round_trips",
        default: "250000",
        kind: Kind::Int {
            min: 1,
            max: 1_000_000_000,
        },
        help: "round trips of the byte",
    },
    ParamSpec {
        name: "mode",
        default: "threads",
        kind: Kind::Choice(&["threads", "processes"]),
        help: "threads of one process (same mm: no page-table switch) or two processes",
    },
    ParamSpec {
        name: "cpus",
        default: "same",
        kind: Kind::Choice(&["same", "split"]),
        help: "same: both sides pinned to one CPU (a switch per hand-over); split: one CPU each \
               (a wake-up IPI or idle exit per hand-over)",
    },
    SEED,
];

pub const METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: "round_trips_per_s",
        unit: "round trips/s",
        direction: Direction::HigherIsBetter,
        help: "round trips per second",
    },
    MetricSpec {
        name: "ns_per_round_trip",
        unit: "ns",
        direction: Direction::LowerIsBetter,
        help: "mean round trip (two hand-overs)",
    },
    MetricSpec {
        name: "round_trips",
        unit: "round trips",
        direction: Direction::Count,
        help: "round trips done",
    },
];

pub const WORKLOAD: Workload = Workload {
    name: "ctxsw",
    version: 1,
    summary: "pipe ping-pong between two threads or processes, on one CPU or two",
    stresses: "the scheduler's switch path (same CPU) or cross-CPU wake-ups (split), pipe \
               read/write and their wait queues",
    kernel_paths: &[
        "pipe_write -> __wake_up_sync_key -> try_to_wake_up; pipe_read -> wait_event",
        "__schedule -> context_switch -> switch_mm_irqs_off (processes) / lazy TLB (threads), \
         switch_to (FPU state)",
        "split: ttwu_queue_wakelist / send_call_function_single_ipi, idle entry and exit",
    ],
    modelled_on: "seed 004's syscall and switch costs (Lutomirski/Molnar on xstate latency) and \
                  seed 000's CR3-switch question: a quick A/B of switch-path knobs \
                  (mitigations, PCID, idle=poll, ...)",
    runtime: "defaults (250000 round trips, threads, one CPU): median 1.0 s of 10 runs at load \
              average 9, CV of round trips/s 23%; cpus=split is about 50x slower here",
    params: PARAMS,
    metrics: METRICS,
    prepare: None,
    exec,
    prepare_fn: None,
    clean_up_fn: None,
};

/// A close-on-exec pipe (std's) as raw descriptors (read end, write end), closed by hand: each
/// side closes its ends the moment it is done, so that the other sees EOF rather than waiting.
fn pipe() -> Result<(i32, i32)> {
    let (r, w) = std::io::pipe().context("pipe2")?;
    Ok((r.into_raw_fd(), w.into_raw_fd()))
}

fn xfer(fd: i32, write: bool) -> std::io::Result<()> {
    let mut b = [0u8; 1];
    loop {
        // SAFETY: one-byte buffer we own.
        let r = unsafe {
            if write {
                libc::write(fd, b.as_ptr() as *const _, 1)
            } else {
                libc::read(fd, b.as_mut_ptr() as *mut _, 1)
            }
        };
        if r == 1 {
            return Ok(());
        }
        if r == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the other side closed its pipe",
            ));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The echoing side: read from `rd`, write to `wr`, `n` times.
fn echo(rd: i32, wr: i32, n: u64) -> std::io::Result<()> {
    for _ in 0..n {
        xfer(rd, false)?;
        xfer(wr, true)?;
    }
    Ok(())
}

fn exec(p: &Params) -> Result<Vec<Metric>> {
    let n = p.u64("round_trips");
    let cpus = sys::allowed_cpus();
    let (ca, cb) = match p.str("cpus") {
        "same" => (cpus[0], cpus[0]),
        _ => {
            if cpus.len() < 2 {
                bail!("ctxsw: cpus=split needs two CPUs and this process may use only {cpus:?}");
            }
            (cpus[0], cpus[1])
        }
    };
    let (a_rd, b_wr) = pipe()?; // b -> a
    let (b_rd, a_wr) = pipe()?; // a -> b
    let close = |fds: &[i32]| {
        for &f in fds {
            // SAFETY: our own fds.
            unsafe { libc::close(f) };
        }
    };
    // This side: pinned, `n` round trips through the partner, timed.
    let ping = || -> Result<u64> {
        sys::pin(ca)?;
        let t0 = Instant::now();
        for _ in 0..n {
            xfer(a_wr, true)?;
            xfer(a_rd, false)?;
        }
        Ok(t0.elapsed().as_nanos() as u64)
    };
    let ns = if p.str("mode") == "threads" {
        let h = std::thread::spawn(move || -> Result<()> {
            let r =
                sys::pin(cb).and_then(|()| echo(b_rd, b_wr, n).context("ctxsw: echoing thread"));
            // on an error here the main thread sees EOF instead of waiting forever
            close(&[b_rd, b_wr]);
            r
        });
        let r = ping();
        // on our error the pipe closes and the echoing thread sees EOF
        close(&[a_wr, a_rd]);
        let hr = h
            .join()
            .map_err(|_| anyhow!("ctxsw: the echoing thread panicked"))?;
        let ns = r.context("ctxsw")?;
        hr?;
        ns
    } else {
        // SAFETY: single-threaded here; the child only pins, echoes and _exits.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(std::io::Error::last_os_error()).context("fork");
        }
        if pid == 0 {
            // SAFETY: child side; dies with its parent.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
            close(&[a_rd, a_wr]);
            let ok = sys::pin(cb).is_ok() && echo(b_rd, b_wr, n).is_ok();
            // SAFETY: leave without the parent's destructors.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        close(&[b_rd, b_wr]);
        let r = ping();
        close(&[a_wr, a_rd]);
        let mut st = 0;
        // SAFETY: reaping our child.
        unsafe { libc::waitpid(pid, &mut st, 0) };
        let ns = r.context("ctxsw")?;
        if !(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0) {
            bail!("ctxsw: the echoing process failed (wait status {st:#x})");
        }
        ns
    };
    let secs = ns as f64 / 1e9;
    Ok(vec![
        metric(METRICS, "round_trips_per_s", n as f64 / secs.max(1e-9)),
        metric(METRICS, "ns_per_round_trip", ns as f64 / n as f64),
        metric(METRICS, "round_trips", n as f64),
    ])
}
