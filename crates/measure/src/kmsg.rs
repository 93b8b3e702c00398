//! What the kernel said at boot about its command line, from its log (klogctl(2), as `dmesg`
//! reads it): the parameters it did not know. A variant's `--append` word the kernel reports
//! unknown changed nothing in the kernel (it is handed to init as an argument or environment
//! variable), so a comparison on it compares the same kernel configuration.

/// The parameters the kernel reported unknown at boot ("Unknown kernel command line parameters
/// \"...\", will be passed to user space."; older kernels: "Unknown command line parameters:"),
/// or None when its log cannot be read (dmesg_restrict without root) or no longer holds the boot
/// messages.
pub fn unknown_cmdline_params() -> Option<Vec<String>> {
    let log = kernel_log()?;
    if !log.contains("Command line:") && !log.contains("Kernel command line:") {
        return None; // the ring buffer has wrapped past the boot messages
    }
    Some(parse_unknown(&log))
}

/// The kernel's log buffer as text.
fn kernel_log() -> Option<String> {
    const SYSLOG_ACTION_READ_ALL: libc::c_int = 3;
    const SYSLOG_ACTION_SIZE_BUFFER: libc::c_int = 10;
    // SAFETY: SIZE_BUFFER takes no buffer.
    let size = unsafe { libc::klogctl(SYSLOG_ACTION_SIZE_BUFFER, std::ptr::null_mut(), 0) };
    if size <= 0 {
        return None;
    }
    let mut buf = vec![0u8; size as usize];
    // SAFETY: buf is valid for `size` bytes; the kernel writes at most that many.
    let n = unsafe { libc::klogctl(SYSLOG_ACTION_READ_ALL, buf.as_mut_ptr().cast(), size) };
    if n < 0 {
        return None;
    }
    buf.truncate(n as usize);
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// The unknown parameters a kernel log reports, in its order, without repeats.
fn parse_unknown(log: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in log.lines() {
        let words =
            if let Some((_, rest)) = line.split_once("Unknown kernel command line parameters \"") {
                rest.rsplit_once('"').map_or(rest, |(w, _)| w)
            } else if let Some((_, rest)) = line.split_once("Unknown command line parameters:") {
                rest
            } else {
                continue;
            };
        for w in words.split_whitespace() {
            if !out.iter().any(|o| o == w) {
                out.push(w.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_parameters_of_new_and_old_kernels() {
        let log = "<6>[    0.000000] Command line: console=ttyS0 pit=on abperf_test=1\n\
                   <5>[    0.051234] Unknown kernel command line parameters \"pit=on abperf_test=1\", will be passed to user space.\n\
                   <6>[    0.100000] random: crng init done\n";
        assert_eq!(parse_unknown(log), vec!["pit=on", "abperf_test=1"]);
        let old = "<5>[0.05] Unknown command line parameters: foo=1 bar\n";
        assert_eq!(parse_unknown(old), vec!["foo=1", "bar"]);
        assert!(parse_unknown("<6>[0.0] Command line: quiet\n").is_empty());
    }
}
