//! SIGINT, SIGTERM, SIGHUP and SIGPIPE during an experiment: a watcher thread records the signal
//! and kills the workload's process group; the experiment loop sees the flag, stops, restores every
//! knob and marks the experiment interrupted (exit 128+N).
//!
//! SIGPIPE is caught rather than left to kill abperf: a closed output pipe (`abperf run ... | head
//! -1`) then stops the experiment like Ctrl-C, after its knobs are put back, instead of killing
//! abperf with every knob still changed. Writes to the closed pipe fail with EPIPE and are dropped
//! (`error::stderr_line`).

pub use abperf_measure::signals::name;
use signal_hook::consts::{SIGHUP, SIGINT, SIGPIPE, SIGTERM};
use signal_hook::iterator::Signals;
use std::sync::Once;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signal that interrupted us (0 = none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// Process group of the child being waited for (0 = none). Cleared before the child is reaped,
/// so the group id cannot have been reused when the watcher kills it.
static CHILD_PGID: AtomicI32 = AtomicI32::new(0);
static INSTALL: Once = Once::new();

/// Start watching (idempotent). Errors if the handlers cannot be installed.
pub fn install() -> anyhow::Result<()> {
    let mut result = Ok(());
    // One watcher per process: the VM guard (kernel variants) leaves the signals to this one. A
    // closed pipe stops the VMs too: the experiment stops as on Ctrl-C.
    INSTALL.call_once(|| match Signals::new([SIGINT, SIGTERM, SIGHUP, SIGPIPE]) {
        Ok(mut signals) => {
            abperf_vm::guard::external_watcher();
            std::thread::spawn(move || {
                for sig in signals.forever() {
                    RECEIVED.store(sig, Ordering::SeqCst);
                    abperf_vm::guard::on_signal(sig);
                    let pgid = CHILD_PGID.load(Ordering::SeqCst);
                    if pgid > 0 {
                        // SAFETY: plain syscall; pgid is a live, unreaped child's group.
                        unsafe { libc::kill(-pgid, libc::SIGKILL) };
                    }
                }
            });
        }
        Err(e) => result = Err(anyhow::anyhow!("cannot install signal handlers: {e}")),
    });
    result
}

/// The signal received since `install`, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

pub fn set_child(pgid: libc::pid_t) {
    CHILD_PGID.store(pgid, Ordering::SeqCst);
}

pub fn clear_child() {
    CHILD_PGID.store(0, Ordering::SeqCst);
}
