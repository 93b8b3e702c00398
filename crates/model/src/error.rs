//! Errors that callers branch on. The command layer wraps everything else in `anyhow` with
//! context; `UsageError` anywhere in the chain makes the process exit with code 2.

use thiserror::Error;

/// A mistake in what the user asked for (flag, value, file content). Exit code 2.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The kernel would not take a knob value: the write was refused, or the knob reads back something
/// else. Resuming would write the same value again, so the runner's caller does not suggest it.
#[derive(Debug, Error)]
#[error("knob {path}: {reason}")]
pub struct KnobRefused {
    pub path: String,
    pub reason: String,
}

/// Whether `err` is, or was caused by, a [`KnobRefused`].
pub fn is_knob_refused(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|e| e.downcast_ref::<KnobRefused>().is_some())
}

/// Build an `anyhow::Error` that carries a [`UsageError`].
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// Exit code for an error: 2 for usage errors, 1 for everything else.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    if err
        .chain()
        .any(|e| e.downcast_ref::<UsageError>().is_some())
    {
        2
    } else {
        1
    }
}

/// Write one line to standard error, never panicking: `eprintln!` panics when stderr is a closed
/// pipe or a hung-up terminal, which in a `Drop` that restores knobs (or during unwinding) would
/// abort the process with settings left changed. Control characters other than the line breaks
/// and tabs of the layout are written as escapes ([`crate::escape::message`]): a message quoting
/// a command, a name or a workload's stderr cannot drive the terminal. Every message to stderr
/// goes through here (`clippy.toml` forbids `eprintln!`).
pub fn stderr_line(line: &str) {
    use std::io::Write;
    let mut e = std::io::stderr().lock();
    let _ = e
        .write_all(crate::escape::message(line).as_bytes())
        .and_then(|_| e.write_all(b"\n"));
}

/// Write one line to standard output, never panicking (see [`stderr_line`]); a closed pipe or a
/// hung-up terminal loses the text, and the signal that comes with it (SIGPIPE, SIGHUP) stops
/// what is running through the signal watcher.
pub fn stdout_line(line: &str) {
    stdout_text(&format!("{line}\n"));
}

/// Write text to standard output, never panicking (see [`stdout_line`]).
pub fn stdout_text(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes()).and_then(|_| o.flush());
}
