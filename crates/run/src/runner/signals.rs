//! SIGINT, SIGTERM, SIGHUP and SIGPIPE during an experiment: a watcher thread records the signal
//! and kills the workload's process group; the experiment loop sees the flag, stops, restores every
//! knob and marks the experiment interrupted (exit 128+N).
//!
//! SIGPIPE is caught rather than left to kill abperf: a closed output pipe (`abperf run ... | head
//! -1`) then stops the experiment like Ctrl-C, after its knobs are put back, instead of killing
//! abperf with every knob still changed. Writes to the closed pipe fail with EPIPE and are dropped
//! (`error::stderr_line`). A closed pipe is noticed when it closes, not at abperf's next write
//! to it (`watch_output_pipes`).

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
    if result.is_ok() {
        WATCH_PIPES.call_once(watch_output_pipes);
    }
    result
}

static WATCH_PIPES: Once = Once::new();

/// Standard output and error, those of them that are pipes or sockets, watched for their reader
/// going away: the first one that does raises SIGPIPE, which stops the experiment as above. A
/// closed pipe raises SIGPIPE by itself only when abperf next writes to it, and an experiment
/// writes nothing until it ends: `abperf run ... 2>&1 | head -1` would otherwise run every run
/// and only then stop. `poll` with no events reports just the error and hang-up of a pipe whose
/// reader is gone; the thread sleeps in it and costs nothing.
fn watch_output_pipes() {
    let mut fds: Vec<libc::pollfd> = [libc::STDOUT_FILENO, libc::STDERR_FILENO]
        .into_iter()
        .filter(|&fd| {
            // SAFETY: fstat into a zeroed stat buffer of our own.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            let ok = unsafe { libc::fstat(fd, &mut st) } == 0;
            let kind = st.st_mode & libc::S_IFMT;
            ok && (kind == libc::S_IFIFO || kind == libc::S_IFSOCK)
        })
        .map(|fd| libc::pollfd {
            fd,
            events: 0,
            revents: 0,
        })
        .collect();
    if fds.is_empty() {
        return;
    }
    std::thread::spawn(move || {
        loop {
            // SAFETY: poll on descriptors of this process, with a buffer of the right length.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            if n <= 0 || fds.iter().any(|f| f.revents & libc::POLLNVAL != 0) {
                return;
            }
            if fds
                .iter()
                .any(|f| f.revents & (libc::POLLERR | libc::POLLHUP) != 0)
            {
                // SAFETY: plain syscall, a signal to this process.
                unsafe { libc::kill(libc::getpid(), libc::SIGPIPE) };
                return;
            }
        }
    });
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
