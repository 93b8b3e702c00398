//! What one recorded event costs the traced task on this machine, measured once per machine
//! (the command stores it) so that every capture can say how much its tracing added.
//!
//! Method: a thread of ours touches one page and calls `madvise(MADV_DONTNEED)` on it (a page
//! fault, a syscall, a zap and a local TLB flush: the events of the default set fire as in a
//! flush-heavy workload), [`CALLS`] times per block, alternately with the default events enabled
//! in an instance of ours (scoped to the thread with `set_event_pid`) and with them disabled.
//! The thread's CPU time (CLOCK_THREAD_CPUTIME_ID, so that preemption by other load does not
//! count) per block and the events the block recorded (the instance's per-CPU `entries` plus
//! `overrun`) give, per pair of blocks, `(on - off) / events`. The median of [`PAIRS`] pairs is the
//! figure, the 10th and 90th percentiles its spread.

use super::instance::{Instance, InstanceOptions, Tracefs};
use abperf_model::trace::EventCost;
use anyhow::{Result, bail};

/// Calls per block.
pub const CALLS: usize = 2000;
/// Pairs of blocks (on, off).
pub const PAIRS: usize = 15;

fn thread_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Host, kernel release and CPU model: what the stored cost is keyed by.
pub fn machine_key() -> String {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    unsafe { libc::uname(&mut u) };
    let s = |f: &[libc::c_char]| {
        // SAFETY: uname NUL-terminates every field.
        unsafe { std::ffi::CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("{} / {} / {model}", s(&u.nodename), s(&u.release))
}

/// `2025-11-22 20:31 UTC` from seconds since the epoch (civil-from-days, proleptic Gregorian).
pub fn utc(secs: u64) -> String {
    let (y, m, d, hh, mm, _) = abperf_model::time::utc_fields(secs as i64);
    format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02} UTC")
}

fn percentile(s: &[f64], q: f64) -> f64 {
    let h = (s.len() - 1) as f64 * q;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    s[lo] + (h - lo as f64) * (s[hi] - s[lo])
}

/// Events recorded so far in the instance: per CPU, those in the buffer plus those overwritten.
fn recorded(inst: &Instance) -> u64 {
    let mut n = 0;
    for cpu in inst.cpus().unwrap_or_default() {
        let s = inst
            .read(&format!("per_cpu/cpu{cpu}/stats"))
            .unwrap_or_default();
        for l in s.lines() {
            if let Some((k, v)) = l.split_once(':')
                && matches!(k.trim(), "entries" | "overrun")
            {
                n += v.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    n
}

/// Measure the per-event cost (see the module documentation).
pub fn measure() -> Result<EventCost> {
    use super::instance::Events;
    let tfs = Tracefs::open()?;
    let mut events = Vec::new();
    for e in super::DEFAULT_EVENTS {
        if let Ok(v) = tfs.expand(e) {
            events.extend(v);
        }
    }
    if events.is_empty() {
        bail!("none of the default events exists on this kernel");
    }
    let inst = Instance::create(
        tfs,
        &InstanceOptions {
            buffer_kib: 1024,
            ..Default::default()
        },
    )?;
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    inst.scope_tasks(&[tid], false)?;
    inst.tracing_on(true)?;
    // SAFETY: an anonymous private mapping of one page, unmapped below.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if page == libc::MAP_FAILED {
        bail!("mmap: {}", std::io::Error::last_os_error());
    }
    let block = || {
        let t0 = thread_ns();
        for _ in 0..CALLS {
            // SAFETY: our own mapping: touch it, then drop it (fault, zap, flush).
            unsafe {
                std::ptr::write_volatile(page as *mut u8, 1);
                libc::madvise(page, 4096, libc::MADV_DONTNEED);
            }
        }
        thread_ns() - t0
    };
    let set = |on: bool| -> Result<()> {
        for e in &events {
            inst.enable_to(e, on)?;
        }
        Ok(())
    };
    let mut per = Vec::with_capacity(PAIRS);
    let result = (|| -> Result<()> {
        // warm up both paths
        set(true)?;
        block();
        set(false)?;
        block();
        for i in 0..PAIRS {
            // alternate which comes first, so a drift within a pair cancels over the pairs
            let off_first = i % 2 == 1;
            let mut off = 0;
            if off_first {
                set(false)?;
                off = block();
            }
            set(true)?;
            let n0 = recorded(&inst);
            let on = block();
            let n = recorded(&inst).saturating_sub(n0);
            set(false)?;
            if !off_first {
                off = block();
            }
            if n > 0 {
                per.push((on as f64 - off as f64) / n as f64);
            }
        }
        Ok(())
    })();
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(page, 4096) };
    inst.remove()?;
    result?;
    if per.len() < PAIRS / 2 {
        bail!("the instance recorded no events of the measuring thread");
    }
    per.sort_by(f64::total_cmp);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Ok(EventCost {
        ns_per_event: percentile(&per, 0.5).max(0.0),
        low: percentile(&per, 0.1).max(0.0),
        high: percentile(&per, 0.9).max(0.0),
        how: format!(
            "measured on this machine {}: {PAIRS} pairs of {CALLS} touch + madvise calls with the default events on and off",
            utc(now)
        ),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(super::utc(1_763_843_460), "2025-11-22 20:31 UTC");
        assert_eq!(super::utc(951_782_400), "2000-02-29 00:00 UTC");
    }
}
