//! Bounded waits on a PostgreSQL store: the connection and login run on their own thread and
//! are given up after the limit (`--db-timeout`); once connected, a watcher thread reads the
//! socket's TCP_INFO each half second: when abperf sent the last data and has heard nothing
//! since, it is waiting for the server. After a few seconds it says so on stderr; past the limit
//! it shuts the socket down, so the statement in flight fails as a lost connection does and the
//! command stops as after any failed commit (knobs restored, the resume command printed). The
//! server also cancels any statement that runs longer (`statement_timeout`), and TCP keepalives
//! notice a server that is gone. A Unix-socket connection is not watched (no network between).

use crate::wait_limit::wait_limit;
use std::collections::BTreeSet;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// After how long a wait is said on stderr.
const SAY_AFTER: Duration = Duration::from_secs(3);
const TICK: Duration = Duration::from_millis(500);

/// `connect` run on its own thread, given up past the limit; the connection's TCP socket (a
/// duplicate, for the watcher) with it.
pub(crate) fn connect_bounded<F>(
    shown: &str,
    connect: F,
) -> anyhow::Result<(postgres::Client, Option<OwnedFd>)>
where
    F: FnOnce() -> Result<postgres::Client, postgres::Error> + Send + 'static,
{
    let before = sockets();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let client = connect();
        let fd = client.is_ok().then(|| new_tcp_socket(&before)).flatten();
        let _ = tx.send((client, fd));
    });
    let limit = wait_limit();
    let start = Instant::now();
    let mut said = false;
    loop {
        match rx.recv_timeout(TICK) {
            Ok((client, fd)) => {
                let client = client.map_err(|e| {
                    anyhow::anyhow!(
                        "cannot connect to the PostgreSQL store {shown}: {}",
                        why(&e)
                    )
                })?;
                return Ok((client, fd));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                anyhow::bail!("connecting to the PostgreSQL store {shown} failed")
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let waited = start.elapsed();
        if waited >= limit {
            anyhow::bail!(
                "the PostgreSQL store {shown} did not complete the connection and login in {} s \
                 (--db-timeout): gave up",
                limit.as_secs_f64()
            );
        }
        if waited >= SAY_AFTER && !said {
            said = true;
            say(&format!(
                "abperf: waiting for the PostgreSQL store {shown} to accept the connection and \
                 login ({} s so far; giving up after {} s, --db-timeout)",
                waited.as_secs(),
                limit.as_secs_f64()
            ));
        }
    }
}

/// What went wrong, with its causes ("error connecting to server: Connection refused ...").
pub(crate) fn why(e: &postgres::Error) -> String {
    let mut out = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        out.push_str(&format!(": {c}"));
        cause = c.source();
    }
    out
}

/// A connection's watcher; stops (closing its duplicate of the socket) when dropped.
pub(crate) struct Watch {
    stop: Arc<AtomicBool>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Watch the connection whose TCP socket `fd` duplicates (None: nothing to watch).
pub(crate) fn watch(fd: Option<OwnedFd>, shown: &str) -> Watch {
    let stop = Arc::new(AtomicBool::new(false));
    if let Some(fd) = fd {
        let stop = stop.clone();
        let shown = shown.to_string();
        std::thread::spawn(move || watcher(fd, &shown, &stop));
    }
    Watch { stop }
}

fn watcher(fd: OwnedFd, shown: &str, stop: &AtomicBool) {
    let limit = wait_limit();
    let mut said = false;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(TICK);
        let Some(waited) = waiting_for(&fd) else {
            said = false;
            continue;
        };
        if waited >= limit {
            say(&format!(
                "abperf: the PostgreSQL store {shown} has not answered for {} s \
                 (--db-timeout): giving up",
                waited.as_secs()
            ));
            // SAFETY: shutdown on a socket this thread owns a duplicate of.
            unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
            return;
        }
        if waited >= SAY_AFTER && !said {
            said = true;
            say(&format!(
                "abperf: waiting for the PostgreSQL store {shown} to answer ({} s so far; \
                 giving up after {} s, --db-timeout)",
                waited.as_secs(),
                limit.as_secs_f64()
            ));
        }
    }
}

/// How long abperf has waited on this socket: the time since it last sent, when it has heard
/// nothing since (None: not waiting, or not a TCP socket).
fn waiting_for(fd: &OwnedFd) -> Option<Duration> {
    let info = tcp_info(fd)?;
    let (sent, heard) = (info.tcpi_last_data_sent, info.tcpi_last_data_recv);
    (sent < heard).then(|| Duration::from_millis(u64::from(sent)))
}

/// The kernel's TCP_INFO of a socket (None: not a TCP socket).
fn tcp_info(fd: &OwnedFd) -> Option<libc::tcp_info> {
    // SAFETY: tcp_info is plain data; getsockopt writes at most `len` bytes into it.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: as above, on a descriptor the caller owns.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(info)
}

/// A line on stderr (nothing when stderr is closed).
fn say(line: &str) {
    abperf_model::error::stderr_line(line);
}

/// The inodes of this process's open sockets.
fn sockets() -> BTreeSet<(i32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return BTreeSet::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let fd = e.file_name().to_str()?.parse().ok()?;
            let link = std::fs::read_link(e.path()).ok()?;
            let link = link.to_str()?.to_string();
            link.starts_with("socket:").then_some((fd, link))
        })
        .collect()
}

/// A duplicate of the TCP socket opened since `before` (the new connection's).
fn new_tcp_socket(before: &BTreeSet<(i32, String)>) -> Option<OwnedFd> {
    for (fd, _) in sockets().difference(before) {
        // SAFETY: F_DUPFD_CLOEXEC on an fd number: at worst it fails (EBADF).
        let dup = unsafe { libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            continue;
        }
        // SAFETY: `dup` is a new descriptor this function owns.
        let owned = unsafe { OwnedFd::from_raw_fd(dup) };
        if tcp_info(&owned).is_some() {
            return Some(owned);
        }
    }
    None
}
