//! No QEMU outlives abperf. Each QEMU runs in its own process group and is started by one
//! long-lived spawner thread with PR_SET_PDEATHSIG=SIGKILL (the signal follows the death of the
//! *thread* that forked, so that thread must live as long as the process: a kill -9 of abperf
//! then kills every VM). Live groups are registered here; on SIGINT, SIGTERM or SIGHUP the
//! process's one signal watcher ([`install_watcher`]'s, or `runner::signals`' when that one runs,
//! which calls [`on_signal`]) kills them all and records the signal, which the VM's outcome
//! reports.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

/// Process groups of live (unreaped) QEMUs.
static LIVE: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());
/// The first of SIGINT/SIGTERM/SIGHUP received since the watcher started (0 = none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);
static WATCHER: OnceLock<Result<(), String>> = OnceLock::new();

type Request = (Command, mpsc::Sender<std::io::Result<Child>>);
static SPAWNER: OnceLock<Mutex<mpsc::Sender<Request>>> = OnceLock::new();

fn live() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Start the signal watcher (once per process). From then on SIGINT/SIGTERM/SIGHUP no longer
/// terminate the process by themselves: they kill every VM, and callers see
/// [`received`] / the VM's outcome and stop.
pub fn install_watcher() -> anyhow::Result<()> {
    let r = WATCHER.get_or_init(|| match Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(mut signals) => std::thread::Builder::new()
            .name("abperf-vm-signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    on_signal(sig);
                }
            })
            .map(|_| ())
            .map_err(|e| format!("cannot start the signal watcher: {e}")),
        Err(e) => Err(format!("cannot install signal handlers: {e}")),
    });
    r.clone().map_err(anyhow::Error::msg)
}

/// One signal watcher per process: a caller that watches SIGINT/SIGTERM/SIGHUP itself
/// (`runner::signals`) says so before any VM starts, and calls [`on_signal`] from its watcher;
/// [`install_watcher`] then installs nothing. Returns false when this module's own watcher runs
/// already (then both watch).
pub fn external_watcher() -> bool {
    let mut claimed = false;
    WATCHER.get_or_init(|| {
        claimed = true;
        Ok(())
    });
    claimed
}

/// What the watcher does on SIGINT/SIGTERM/SIGHUP: record the first signal and kill every live
/// VM's process group. Async-signal-safety is not needed: it runs on a watcher thread.
pub fn on_signal(sig: i32) {
    let _ = RECEIVED.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    for &pgid in live().iter() {
        // SAFETY: plain syscall; pgid is a registered, unreaped QEMU's group.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

/// The signal that made the watcher kill the VMs, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Spawn `cmd` in its own process group with SIGKILL as its parent-death signal, from the
/// long-lived spawner thread, and register its group. If a signal arrived meanwhile, the child is
/// killed at once (the caller's wait sees it dead).
pub fn spawn(mut cmd: Command) -> std::io::Result<Child> {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe syscalls.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let tx = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("abperf-vm-spawner".into())
            .spawn(move || {
                // Lives until the process ends: it is the parent thread of every QEMU.
                for (mut cmd, reply) in rx {
                    let r = cmd.spawn();
                    if let Ok(child) = &r {
                        live().insert(child.id() as i32);
                    }
                    let _ = reply.send(r);
                }
            })
            .expect("cannot start the VM spawner thread");
        Mutex::new(tx)
    });
    let (reply_tx, reply_rx) = mpsc::channel();
    tx.lock()
        .unwrap_or_else(|p| p.into_inner())
        .send((cmd, reply_tx))
        .map_err(|_| std::io::Error::other("the VM spawner thread is gone"))?;
    let child = reply_rx
        .recv()
        .map_err(|_| std::io::Error::other("the VM spawner thread is gone"))??;
    if received().is_some() {
        kill_group(child.id() as i32);
    }
    Ok(child)
}

/// SIGKILL a registered group (no-op if it is no longer registered, i.e. already reaped).
pub fn kill_group(pgid: i32) {
    let l = live();
    if l.contains(&pgid) {
        // SAFETY: plain syscall on a registered, unreaped child's group.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

/// Forget a group; call before reaping its leader so the id cannot be reused while registered.
pub fn unregister(pgid: i32) {
    live().remove(&pgid);
}

/// The conventional name of a signal number.
pub fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGKILL => "SIGKILL".into(),
        other => format!("signal {other}"),
    }
}
