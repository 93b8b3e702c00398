//! The step both spawn helpers share (the `abperf-spawn` binary includes this file with
//! `#[path]`, abperf's own helper mode uses it as `runner::spawn_fork`): fork the workload,
//! which waits at the gate and then execs, and report its pid. Plain libc calls only, so that
//! the runtime-free binary can use it. The protocol is in `runner::spawn_helper`.

use std::ffi::{c_char, c_int};

/// The gate (read end): a byte starts the workload, EOF cancels it.
pub const GATE_FD: c_int = 3;
/// The exec-error pipe (write end): 4 bytes of errno if exec fails.
pub const ERR_FD: c_int = 4;
/// The report pipe: the workload's pid, 4 bytes.
pub const REPORT_FD: c_int = 5;

unsafe extern "C" {
    static environ: *const *const c_char;
}

/// Mark the control pipes close-on-exec, fork the workload `program` with `argv` (NULL-ended)
/// in a process group of its own, and report its pid on [`REPORT_FD`].
///
/// # Safety
///
/// `program` and `argv` are valid C strings (a NULL-ended array), and the calling process has
/// one thread (the child makes syscalls only, but no other thread may hold a lock it needs).
pub unsafe fn fork_workload(
    program: *const c_char,
    argv: *const *const c_char,
) -> Result<(), &'static str> {
    // SAFETY: plain syscalls on fds this process was given, on our own child, and on memory
    // the caller guarantees; the child runs only async-signal-safe calls before exec.
    unsafe {
        for fd in [GATE_FD, ERR_FD, REPORT_FD] {
            if libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) != 0 {
                return Err("the control pipes are missing (run only by abperf)");
            }
        }
        let pid = libc::fork();
        if pid < 0 {
            return Err("fork failed");
        }
        if pid == 0 {
            libc::setpgid(0, 0);
            // A Rust runtime ignores SIGPIPE; the workload gets the default.
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            libc::close(REPORT_FD);
            let mut b = 0u8;
            // EOF instead of a byte: abperf decided not to start the workload.
            if libc::read(GATE_FD, (&mut b as *mut u8).cast(), 1) != 1 {
                libc::_exit(126);
            }
            libc::execve(program, argv, environ);
            let e = *libc::__errno_location();
            libc::write(ERR_FD, (&e as *const c_int).cast(), 4);
            libc::_exit(127);
        }
        libc::setpgid(pid, pid);
        let bytes = pid.to_ne_bytes();
        if libc::write(REPORT_FD, bytes.as_ptr().cast(), 4) != 4 {
            libc::kill(pid, libc::SIGKILL);
            return Err("abperf did not take the workload's pid (it is gone)");
        }
    }
    Ok(())
}

// --- The spawn server: one helper process for a whole experiment --------------------------------
//
// `abperf-spawn --server` (or `abperf __abperf-spawn-helper --server`) with fd [`SERVER_FD`] a
// SOCK_SEQPACKET socket to abperf. Each message asks for one workload:
//
// - a header of four native-endian u32: [`MAGIC`], flags ([`FLAG_PIN`]), argc, 0;
// - with [`FLAG_PIN`], a `cpu_set_t` (the CPUs the workload may run on);
// - argc + 1 NUL-terminated strings: the program, then argv[0..argc];
// - SCM_RIGHTS with [`REQUEST_FDS`] fds: the workload's stdin, stdout and stderr, the gate (read
//   end), the exec-error pipe (write end) and its working directory (an O_PATH fd).
//
// The server creates the workload with clone(CLONE_PARENT): its parent is abperf itself, which
// waits for it, signals it and reads its rusage as for any child of its own, while the copy of
// memory that Linux folds into the workload's max RSS at exec is the server's (small) one. The
// reply is one native-endian i32: the workload's pid, or minus the errno of a failed request. The
// workload, in a process group of its own with SIGPIPE at its default and no signal blocked,
// takes its fds, enters its directory, pins itself, waits at the gate (EOF: exits 126) and execs;
// if a step fails it writes 8 bytes to the exec-error pipe (errno, then the step: [`STEP_EXEC`],
// [`STEP_CWD`], [`STEP_PIN`]) and exits 127. EOF on the socket ends the server.

/// The server's control socket.
pub const SERVER_FD: c_int = 3;
/// The argument that makes a helper a server.
pub const SERVER_ARG: &str = "--server";
/// The first word of every request ("ABSP").
pub const MAGIC: u32 = 0x4142_5350;
/// The request carries a `cpu_set_t`.
pub const FLAG_PIN: u32 = 1;
/// The fds every request carries, in order: stdin, stdout, stderr, gate, exec-error, cwd.
pub const REQUEST_FDS: usize = 6;
/// The failed step, after the errno, on the exec-error pipe.
pub const STEP_EXEC: i32 = 0;
pub const STEP_CWD: i32 = 1;
pub const STEP_PIN: i32 = 2;
pub const STEP_FDS: i32 = 3;
const HEADER: usize = 16;

/// The space for a control message carrying [`REQUEST_FDS`] fds (CMSG_SPACE, in u64 words).
const CMSG_WORDS: usize = 8;

/// Serve requests on [`SERVER_FD`] until abperf closes its end; returns the exit status.
///
/// # Safety
///
/// The calling process has one thread and [`SERVER_FD`] is the socket abperf gave it.
pub unsafe fn serve() -> c_int {
    // SAFETY: plain syscalls on this process's own fds and on memory it maps here.
    unsafe {
        if libc::fcntl(SERVER_FD, libc::F_SETFD, libc::FD_CLOEXEC) != 0 {
            return 126;
        }
        // Hold no directory (a --tmpfs-copy mount must stay unmountable): every request names its own.
        libc::chdir(c"/".as_ptr());
        loop {
            let mut header = [0u32; 4];
            let n = libc::recv(
                SERVER_FD,
                header.as_mut_ptr().cast(),
                HEADER,
                libc::MSG_PEEK | libc::MSG_TRUNC,
            );
            if n == 0 {
                return 0; // abperf is done (or gone)
            }
            if n < 0 {
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                return 1;
            }
            let reply = serve_one(n as usize, &header);
            let bytes = reply.to_ne_bytes();
            if libc::send(SERVER_FD, bytes.as_ptr().cast(), 4, libc::MSG_NOSIGNAL) != 4 {
                if reply > 0 {
                    libc::kill(reply, libc::SIGKILL);
                }
                return 1;
            }
        }
    }
}

/// Receive the request of `len` bytes (its header peeked), start its workload; the pid or -errno.
unsafe fn serve_one(len: usize, header: &[u32; 4]) -> i32 {
    // SAFETY: the mapping is ours, sized for the message and the argv pointers; every fd touched
    // came with the message.
    unsafe {
        let argc = if len >= HEADER { header[2] as usize } else { 0 };
        let ptrs_at = (len + 7) & !7;
        let map_len = ptrs_at + (argc.min(len) + 2) * std::mem::size_of::<usize>();
        let buf = libc::mmap(
            std::ptr::null_mut(),
            map_len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if buf == libc::MAP_FAILED {
            // Take the message off the socket (its fds are closed with it).
            libc::recv(SERVER_FD, std::ptr::null_mut(), 0, libc::MSG_TRUNC);
            return -libc::ENOMEM;
        }
        let mut cmsg = [0u64; CMSG_WORDS];
        let mut iov = libc::iovec {
            iov_base: buf,
            iov_len: len,
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cmsg.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&cmsg) as _;
        let got = libc::recvmsg(SERVER_FD, &mut msg, libc::MSG_CMSG_CLOEXEC);
        let mut fds = [-1 as c_int; REQUEST_FDS];
        let mut nfds = 0;
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c) as *const c_int;
                let count = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / 4;
                for i in 0..count {
                    let fd = data.add(i).read_unaligned();
                    if nfds < REQUEST_FDS {
                        fds[nfds] = fd;
                        nfds += 1;
                    } else {
                        libc::close(fd);
                    }
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        let result = if got as usize != len
            || nfds != REQUEST_FDS
            || msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0
        {
            -libc::EINVAL
        } else {
            parse_and_start(buf.cast(), len, ptrs_at, argc, &fds)
        };
        for fd in fds.iter().take(nfds) {
            libc::close(*fd);
        }
        libc::munmap(buf, map_len);
        result
    }
}

/// Check the request in `buf[..len]`, lay out its argv at `ptrs_at`, start the workload.
unsafe fn parse_and_start(
    buf: *mut u8,
    len: usize,
    ptrs_at: usize,
    argc: usize,
    fds: &[c_int; REQUEST_FDS],
) -> i32 {
    // SAFETY: every read stays within buf[..len], every pointer written within the mapping
    // (ptrs_at + (argc + 2) words, sized by the caller with argc <= len); the child makes only
    // async-signal-safe syscalls before exec.
    unsafe {
        let header = std::slice::from_raw_parts(buf as *const u32, HEADER / 4);
        if header[0] != MAGIC || argc == 0 || argc > len {
            return -libc::EINVAL;
        }
        let pin = header[1] & FLAG_PIN != 0;
        let mut at = HEADER;
        let cpus = if pin {
            let size = std::mem::size_of::<libc::cpu_set_t>();
            if len < at + size {
                return -libc::EINVAL;
            }
            let p = buf.add(at) as *const libc::cpu_set_t;
            at += size;
            p
        } else {
            std::ptr::null()
        };
        // The program and argc arguments, each ending in NUL, filling the rest exactly.
        let ptrs = buf.add(ptrs_at) as *mut *const c_char;
        let program = buf.add(at) as *const c_char;
        let mut strings = 0;
        let mut start = at;
        for i in at..len {
            if *buf.add(i) == 0 {
                if strings > 0 {
                    *ptrs.add(strings - 1) = buf.add(start) as *const c_char;
                }
                strings += 1;
                start = i + 1;
                if strings > argc + 1 {
                    return -libc::EINVAL;
                }
            }
        }
        if strings != argc + 1 || start != len {
            return -libc::EINVAL;
        }
        *ptrs.add(argc) = std::ptr::null();
        let argv = ptrs as *const *const c_char;
        let flags = (libc::CLONE_PARENT | libc::SIGCHLD) as libc::c_ulong;
        let pid = libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize);
        if pid < 0 {
            return -*libc::__errno_location();
        }
        if pid > 0 {
            return pid as i32;
        }
        // The workload.
        let fail = |step: c_int| child_failed(fds[4], step);
        libc::setpgid(0, 0);
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        for (i, fd) in fds.iter().take(3).enumerate() {
            if libc::dup2(*fd, i as c_int) < 0 {
                fail(STEP_FDS);
            }
        }
        if libc::fchdir(fds[5]) != 0 {
            fail(STEP_CWD);
        }
        if !cpus.is_null()
            && libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), cpus) != 0
        {
            fail(STEP_PIN);
        }
        let mut b = 0u8;
        // EOF instead of a byte: abperf decided not to start the workload.
        if libc::read(fds[3], (&mut b as *mut u8).cast(), 1) != 1 {
            libc::_exit(126);
        }
        libc::execve(program, argv, environ);
        fail(STEP_EXEC)
    }
}

/// In the workload: report the failed `step` and errno on `err_fd`, exit 127.
unsafe fn child_failed(err_fd: c_int, step: c_int) -> ! {
    // SAFETY: errno is thread-local; a write of 8 valid bytes; _exit has no preconditions.
    unsafe {
        let words = [*libc::__errno_location(), step];
        libc::write(err_fd, words.as_ptr().cast(), 8);
        libc::_exit(127)
    }
}
