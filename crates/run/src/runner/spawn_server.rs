//! abperf's side of the spawn server: one helper process per experiment instead of one helper
//! exec per run (issue 13: the exec of `abperf-spawn` cost more than the run of `true` itself).
//!
//! Inside a [`Scope`] (an experiment's runs), the first workload starts `abperf-spawn --server`
//! (or `abperf __abperf-spawn-helper --server`); each run then sends it one request (argv, the
//! CPUs to pin to, and the workload's stdin/stdout/stderr, gate, exec-error pipe and working
//! directory as fds) and gets back the pid of a workload that the server created with
//! clone(CLONE_PARENT): abperf's own child, forked from a small process so that its max RSS is
//! its own. The protocol is in `runner::spawn_fork`. The environment is the one abperf had when
//! the server started (the experiment's first run); the working directory is abperf's at each
//! run. The server dies with its socket: when the scope ends (it is killed and reaped), when
//! abperf exits, or when abperf is killed (EOF on the socket). If the server dies meanwhile, the
//! run fails with an error that says so; abperf never waits for it longer than
//! [`ANSWER_TIMEOUT`].

use super::command::Prepared;
use super::cpuset::CpuSet;
use super::spawn_fork::{FLAG_PIN, MAGIC, REQUEST_FDS, SERVER_ARG, SERVER_FD};
use super::spawn_helper::HELPER_ARG;
use super::spawn_posix::{devnull, high_fd, spawn_in_group};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Larger requests (a huge command line) go the one-shot helper's way: a request is one
/// SOCK_SEQPACKET message, which must fit the socket's buffer.
const MAX_REQUEST: usize = 64 * 1024;

/// How long abperf waits for the server's answer to one request before giving up on it.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

struct Server {
    sock: OwnedFd,
    pid: libc::pid_t,
    cwd: Cwd,
}

/// abperf's working directory as an O_PATH fd, opened once and reopened only when the directory
/// "." names has changed (another device or inode: a chdir, or the directory replaced), so that a
/// run costs one stat instead of an open and a close (issue 13).
#[derive(Default)]
struct Cwd(Option<(OwnedFd, libc::dev_t, libc::ino_t)>);

impl Cwd {
    /// The fd of the current working directory (valid while `self` is not changed).
    fn current(&mut self) -> std::io::Result<RawFd> {
        // SAFETY: stat is plain data that stat fills; the path is a valid C string.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::stat(c".".as_ptr(), &mut st) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if let Some((fd, dev, ino)) = &self.0
            && *dev == st.st_dev
            && *ino == st.st_ino
        {
            return Ok(fd.as_raw_fd());
        }
        self.0 = None;
        // SAFETY: a valid C string; the fd is fresh and owned by nobody else.
        let fd = unsafe {
            libc::open(
                c".".as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: as above.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // What was opened, not what was stat'ed (the two may differ if "." changed between).
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let raw = fd.as_raw_fd();
        self.0 = Some((fd, st.st_dev, st.st_ino));
        Ok(raw)
    }
}

static SCOPES: AtomicUsize = AtomicUsize::new(0);
static SERVER: Mutex<Option<Server>> = Mutex::new(None);

fn server() -> std::sync::MutexGuard<'static, Option<Server>> {
    SERVER.lock().unwrap_or_else(|e| e.into_inner())
}

/// While a scope lives, workloads are started by the spawn server (see the module doc); when
/// the last scope ends, the server is stopped.
pub struct Scope(());

impl Scope {
    pub fn enter() -> Scope {
        SCOPES.fetch_add(1, Ordering::SeqCst);
        Scope(())
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if SCOPES.fetch_sub(1, Ordering::SeqCst) == 1
            && let Some(s) = server().take()
        {
            s.stop();
        }
    }
}

/// Whether a [`Scope`] is open.
pub fn active() -> bool {
    SCOPES.load(Ordering::SeqCst) > 0
}

/// The running server's pid, if one runs.
pub fn pid() -> Option<libc::pid_t> {
    server().as_ref().map(|s| s.pid)
}

impl Server {
    fn start() -> anyhow::Result<Server> {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid array of two ints.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        } != 0
        {
            anyhow::bail!(
                "cannot create the socket to abperf's spawn server: {}",
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: both fds are fresh and owned by nobody else.
        let (ours, theirs) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // Above 3, so that placing it at SERVER_FD never finds it already there.
        let theirs = high_fd(theirs)?;
        let timeout = libc::timeval {
            tv_sec: ANSWER_TIMEOUT.as_secs() as libc::time_t,
            tv_usec: 0,
        };
        // SAFETY: a valid timeval of the size passed.
        unsafe {
            libc::setsockopt(
                ours.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&timeout as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        let helper = super::spawn_helper::program();
        let mut args = vec![CString::new("abperf-spawn").expect("no NUL")];
        if helper.is_self {
            args.push(CString::new(HELPER_ARG).expect("no NUL"));
        }
        args.push(CString::new(SERVER_ARG).expect("no NUL"));
        let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        let null = devnull()?.as_raw_fd();
        let mut dups: Vec<(i32, i32)> = (0..3).map(|fd| (null, fd)).collect();
        dups.push((theirs.as_raw_fd(), SERVER_FD));
        let (pid, _) = spawn_in_group(&helper.path, &argv, &dups).map_err(|rc| {
            anyhow::anyhow!(
                "cannot start abperf's spawn server {}: {}",
                helper.path.to_string_lossy(),
                std::io::Error::from_raw_os_error(rc)
            )
        })?;
        Ok(Server {
            sock: ours,
            pid,
            cwd: Cwd::default(),
        })
    }

    /// Kill and reap the server (it holds nothing that needs a goodbye).
    fn stop(self) {
        drop(self.sock);
        kill_and_reap(self.pid);
    }

    /// The server broke off (`what` happened): reap it and say how it ended.
    fn gone(self, what: &str, cmd: &Prepared) -> anyhow::Error {
        let pid = self.pid;
        drop(self.sock);
        let mut status = 0;
        let mut ended = None;
        for _ in 0..1000 {
            // SAFETY: plain syscall on our own child.
            if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
                ended = Some(status);
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let how = match ended {
            Some(s) if libc::WIFSIGNALED(s) => {
                format!("was killed by {}", super::signals::name(libc::WTERMSIG(s)))
            }
            Some(s) => format!("exited with status {}", libc::WEXITSTATUS(s)),
            None => {
                // Alive but not answering: end it.
                kill_and_reap(pid);
                "stopped answering (killed now)".to_string()
            }
        };
        anyhow::anyhow!(
            "abperf's spawn server (pid {pid}, the process that starts every run) {how} ({what}): \
             cannot start '{}'",
            cmd.text
        )
    }
}

fn kill_and_reap(pid: libc::pid_t) {
    // SAFETY: plain syscalls on our own unreaped child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
    }
}

/// One request: the bytes of a message (see `spawn_fork`).
fn request(cmd: &Prepared, pin: Option<&CpuSet>) -> Vec<u8> {
    let argc = cmd.argv.len() as u32;
    let flags = if pin.is_some() { FLAG_PIN } else { 0 };
    let mut msg = Vec::with_capacity(
        16 + 128
            + cmd.program.as_bytes_with_nul().len()
            + cmd
                .argv
                .iter()
                .map(|a| a.as_bytes_with_nul().len())
                .sum::<usize>(),
    );
    for word in [MAGIC, flags, argc, 0] {
        msg.extend_from_slice(&word.to_ne_bytes());
    }
    if let Some(p) = pin {
        let raw: &libc::cpu_set_t = p.mask().raw();
        // SAFETY: cpu_set_t is plain data of its size.
        msg.extend_from_slice(unsafe {
            std::slice::from_raw_parts(
                (raw as *const libc::cpu_set_t).cast::<u8>(),
                std::mem::size_of::<libc::cpu_set_t>(),
            )
        });
    }
    msg.extend_from_slice(cmd.program.as_bytes_with_nul());
    for a in &cmd.argv {
        msg.extend_from_slice(a.as_bytes_with_nul());
    }
    msg
}

/// Ask the server (started first if need be) for `cmd`'s workload, waiting at the gate
/// `gate_r`, with `stdio` as its stdin/stdout/stderr and `err_w` as its exec-error pipe.
/// Returns its pid (abperf's child), or `None` when the request is too large for the server
/// (then the caller starts it the one-shot helper's way).
pub(super) fn start_workload(
    cmd: &Prepared,
    pin: Option<&CpuSet>,
    stdio: [RawFd; 3],
    gate_r: &OwnedFd,
    err_w: &OwnedFd,
) -> anyhow::Result<Option<libc::pid_t>> {
    let mut msg = request(cmd, pin);
    if msg.len() > MAX_REQUEST {
        return Ok(None);
    }
    let mut guard = server();
    if guard.is_none() {
        *guard = Some(Server::start()?);
    }
    let cwd = guard
        .as_mut()
        .expect("started above")
        .cwd
        .current()
        .map_err(|e| {
            anyhow::anyhow!("cannot open the working directory for '{}': {e}", cmd.text)
        })?;
    let fds: [RawFd; REQUEST_FDS] = [
        stdio[0],
        stdio[1],
        stdio[2],
        gate_r.as_raw_fd(),
        err_w.as_raw_fd(),
        cwd,
    ];
    let sock = guard.as_ref().expect("started above").sock.as_raw_fd();
    // SAFETY: the control buffer is sized and aligned for REQUEST_FDS fds (CMSG_SPACE), the
    // iovec covers msg, and every pointer outlives the call.
    let sent = unsafe {
        let mut cbuf = [0u64; 8];
        let space = libc::CMSG_SPACE((REQUEST_FDS * 4) as u32) as usize;
        debug_assert!(space <= std::mem::size_of_val(&cbuf));
        let mut iov = libc::iovec {
            iov_base: msg.as_mut_ptr().cast(),
            iov_len: msg.len(),
        };
        let mut hdr: libc::msghdr = std::mem::zeroed();
        hdr.msg_iov = &mut iov;
        hdr.msg_iovlen = 1;
        hdr.msg_control = cbuf.as_mut_ptr().cast();
        hdr.msg_controllen = space as _;
        let c = libc::CMSG_FIRSTHDR(&hdr);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN((REQUEST_FDS * 4) as u32) as _;
        let data = libc::CMSG_DATA(c) as *mut RawFd;
        for (i, fd) in fds.iter().enumerate() {
            data.add(i).write_unaligned(*fd);
        }
        loop {
            let n = libc::sendmsg(sock, &hdr, libc::MSG_NOSIGNAL);
            if n >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break n;
            }
        }
    };
    if sent != msg.len() as isize {
        let e = std::io::Error::last_os_error();
        let s = guard.take().expect("checked above");
        return Err(s.gone(&format!("sending the request: {e}"), cmd));
    }
    let mut reply = [0u8; 4];
    let n = loop {
        // SAFETY: reply is 4 writable bytes.
        let n = unsafe { libc::recv(sock, reply.as_mut_ptr().cast(), 4, 0) };
        if n >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break n;
        }
    };
    if n != 4 {
        let what = match n {
            0 => "its socket closed".to_string(),
            _ => match std::io::Error::last_os_error() {
                e if e.raw_os_error() == Some(libc::EAGAIN) => {
                    format!("no answer in {} s", ANSWER_TIMEOUT.as_secs())
                }
                e => format!("reading its answer: {e}"),
            },
        };
        let s = guard.take().expect("checked above");
        return Err(s.gone(&what, cmd));
    }
    let pid = i32::from_ne_bytes(reply);
    if pid <= 0 {
        anyhow::bail!(
            "abperf's spawn server could not start '{}': {}",
            cmd.text,
            std::io::Error::from_raw_os_error(-pid)
        );
    }
    Ok(Some(pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same_dir(fd: RawFd, path: &std::ffi::CStr) -> bool {
        // SAFETY: plain data filled by the calls; valid fd and C string.
        let mut a: libc::stat = unsafe { std::mem::zeroed() };
        let mut b: libc::stat = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::fstat(fd, &mut a) == 0 && libc::stat(path.as_ptr(), &mut b) == 0 };
        ok && a.st_dev == b.st_dev && a.st_ino == b.st_ino
    }

    #[test]
    fn the_working_directory_fd_is_kept_until_the_directory_changes() {
        let mut cwd = Cwd::default();
        let fd = cwd.current().unwrap();
        assert!(same_dir(fd, c"."));
        assert_eq!(
            cwd.current().unwrap(),
            fd,
            "kept while the directory is the same"
        );
        // A chdir (in a child process, as the working directory is the test process's).
        let dir = tempfile::tempdir().unwrap();
        let path = CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: the child makes only syscalls on memory prepared before the fork, then exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            unsafe {
                let ok = libc::chdir(path.as_ptr()) == 0
                    && match cwd.current() {
                        Ok(new) => same_dir(new, path.as_c_str()) && !same_dir(new, c"/proc"),
                        Err(_) => false,
                    };
                libc::_exit(if ok { 0 } else { 1 });
            }
        }
        let mut status = 0;
        // SAFETY: our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "after a chdir the fd is the new directory's ({status:#x})"
        );
    }

    #[test]
    fn requests_are_laid_out_as_the_server_reads_them() {
        let cmd = Prepared::new("true x", false).unwrap();
        let m = request(&cmd, None);
        assert_eq!(&m[..4], &MAGIC.to_ne_bytes());
        assert_eq!(&m[4..8], &0u32.to_ne_bytes());
        assert_eq!(&m[8..12], &2u32.to_ne_bytes());
        let strings: Vec<&[u8]> = m[16..m.len() - 1].split(|b| *b == 0).collect();
        assert_eq!(strings.len(), 3);
        assert!(strings[0].ends_with(b"/true"));
        assert_eq!(&strings[1..], [&b"true"[..], &b"x"[..]]);
        let pin = CpuSet::parse("0").unwrap();
        let m = request(&cmd, Some(&pin));
        assert_eq!(&m[4..8], &FLAG_PIN.to_ne_bytes());
        assert_eq!(m[16], 1, "CPU 0 set");
        assert_eq!(
            m.len(),
            16 + std::mem::size_of::<libc::cpu_set_t>() + cmd.program.as_bytes_with_nul().len() + 7
        );
    }
}
