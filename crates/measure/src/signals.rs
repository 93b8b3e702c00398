//! The names of signals, as messages say how a process ended or what interrupted abperf.

/// The conventional name of a signal number.
pub fn name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGPIPE => "SIGPIPE".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGABRT => "SIGABRT".into(),
        other => format!("signal {other}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_signals_by_name_others_by_number() {
        assert_eq!(super::name(libc::SIGINT), "SIGINT");
        assert_eq!(super::name(libc::SIGKILL), "SIGKILL");
        assert_eq!(
            super::name(libc::SIGUSR1),
            format!("signal {}", libc::SIGUSR1)
        );
    }
}
