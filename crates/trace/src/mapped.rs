//! Read-only windows of a file mapped into memory, for decoding a raw capture without copying
//! it: `read(2)` copies every byte of every 4 KiB ring page (35% of a raw import's CPU time in
//! the kernel's copy and page-cache walk), while a ring page is often mostly empty and the
//! decoder touches only its committed bytes.
//!
//! A mapped file that shrinks under us (another process truncating it) turns the next access
//! into SIGBUS. While a window is mapped, a SIGBUS handler checks whether the faulting address
//! lies in it; if so it writes a clear error naming the file and ends the process with exit 1
//! (the import has stored nothing yet: its store transaction is never committed). A SIGBUS
//! anywhere else gets the default action, as without the handler.

use std::os::fd::AsRawFd;
use std::sync::Once;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// The mapped range of the current window (start, end; 0, 0 when none) and the message for a
/// fault in it. One window at a time per process (raw imports do not run concurrently).
static START: AtomicUsize = AtomicUsize::new(0);
static END: AtomicUsize = AtomicUsize::new(0);
static MSG: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static MSG_LEN: AtomicUsize = AtomicUsize::new(0);
static HANDLER: Once = Once::new();

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler; write and _exit are
    // async-signal-safe; MSG points to a live message while the range is set (see Window).
    unsafe {
        let addr = (*info).si_addr() as usize;
        if addr >= START.load(Ordering::SeqCst) && addr < END.load(Ordering::SeqCst) {
            let msg = MSG.load(Ordering::SeqCst);
            if !msg.is_null() {
                libc::write(
                    2,
                    msg as *const libc::c_void,
                    MSG_LEN.load(Ordering::SeqCst),
                );
            }
            libc::_exit(1);
        }
        // not ours: the default action on return, when the access faults again
        libc::signal(sig, libc::SIG_DFL);
    }
}

fn install_handler() {
    HANDLER.call_once(|| {
        // SAFETY: a zeroed sigaction with a valid handler and an empty mask is well-formed.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
        }
    });
}

/// The message a fault in a window of `path` prints (kept alive by the caller while mapped).
pub fn shrink_message(path: &std::path::Path) -> Box<[u8]> {
    format!(
        "abperf: error: {}: the file shrank while it was being read (SIGBUS in its mapping); \
         nothing was stored\n",
        path.display()
    )
    .into_bytes()
    .into_boxed_slice()
}

/// `len` bytes of a file from `offset`, mapped read-only and faulted in at once
/// (MAP_POPULATE). Unmapped on drop.
pub struct Window<'m> {
    base: *mut libc::c_void,
    map_len: usize,
    skip: usize,
    len: usize,
    _msg: &'m [u8],
}

impl<'m> Window<'m> {
    /// Map `len` (> 0) bytes of `file` at `offset`; `msg` is printed when the file shrinks
    /// while mapped ([`shrink_message`]). `None` when the file cannot be mapped (the caller
    /// reads instead).
    pub fn map(file: &std::fs::File, offset: u64, len: usize, msg: &'m [u8]) -> Option<Window<'m>> {
        // SAFETY: sysconf has no memory-safety preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
        let start = offset / page * page;
        let skip = (offset - start) as usize;
        let map_len = skip + len;
        install_handler();
        // SAFETY: a fresh read-only shared mapping of an open descriptor; the kernel checks the
        // range. The memory is only read through `bytes` while the window lives.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                file.as_raw_fd(),
                start as libc::off_t,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        MSG.store(msg.as_ptr() as *mut u8, Ordering::SeqCst);
        MSG_LEN.store(msg.len(), Ordering::SeqCst);
        START.store(base as usize, Ordering::SeqCst);
        END.store(base as usize + map_len, Ordering::SeqCst);
        Some(Window {
            base,
            map_len,
            skip,
            len,
            _msg: msg,
        })
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is map_len bytes from base, readable, and lives as long as self.
        unsafe { std::slice::from_raw_parts((self.base as *const u8).add(self.skip), self.len) }
    }
}

impl Drop for Window<'_> {
    fn drop(&mut self) {
        START.store(0, Ordering::SeqCst);
        END.store(0, Ordering::SeqCst);
        // SAFETY: unmapping exactly the mapping made in `map`; no reference to it outlives self.
        unsafe { libc::munmap(self.base, self.map_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn windows_see_the_file_at_any_offset() {
        let mut f = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        f.write_all(&data).unwrap();
        let msg = shrink_message(std::path::Path::new("x"));
        for (off, len) in [
            (0, 20_000),
            (1, 100),
            (4095, 2),
            (4096, 8192),
            (12_345, 7_655),
        ] {
            let w = Window::map(&f, off as u64, len, &msg).unwrap();
            assert_eq!(w.bytes(), &data[off..off + len]);
        }
    }

    /// A file cut short under a mapped window: the process (a forked child here) ends with
    /// exit 1 and the message naming the file, not a crash by SIGBUS.
    #[test]
    fn a_file_shrinking_under_a_window_is_a_clear_error() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&vec![7u8; 64 << 10]).unwrap();
        let msg = shrink_message(std::path::Path::new("/some/capture.raw"));
        let w = Window::map(&f, 0, 64 << 10, &msg).unwrap();
        let mut pipe = [0; 2];
        // SAFETY: plain pipe/fork; the child only makes async-signal-safe calls and _exits.
        unsafe {
            assert_eq!(libc::pipe(pipe.as_mut_ptr()), 0);
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                libc::dup2(pipe[1], 2);
                libc::ftruncate(std::os::fd::AsRawFd::as_raw_fd(&f), 0);
                let last = w.bytes().as_ptr().add((64 << 10) - 1);
                let v = std::ptr::read_volatile(last);
                libc::_exit(10 + v as i32); // not reached: the read faults
            }
            libc::close(pipe[1]);
            let mut status = 0;
            assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
            let mut out = vec![0u8; 4096];
            let n = libc::read(pipe[0], out.as_mut_ptr().cast(), out.len());
            libc::close(pipe[0]);
            let text = String::from_utf8_lossy(&out[..n.max(0) as usize]).into_owned();
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 1,
                "status {status:#x}, stderr {text:?}"
            );
            assert!(
                text.contains("/some/capture.raw: the file shrank"),
                "{text}"
            );
        }
    }
}
