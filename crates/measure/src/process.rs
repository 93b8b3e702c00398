//! This process as an owner (pid, start time, boot id, host), and whether a recorded owner still
//! lives: the probing side of `model::owner`.

use abperf_model::{Liveness, Owner};

/// Start time of process `pid` in clock ticks after boot (field 22 of `/proc/PID/stat`); `None`
/// when there is no such process (or it is a zombie about to go: its start time still reads).
pub fn start_time(pid: i32) -> Option<u64> {
    if pid <= 0 {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_time(&stat)
}

/// Field 22 of a `/proc/PID/stat` line. The command name (field 2) is in parentheses and may hold
/// spaces and parentheses itself, so fields are counted from the last ')'.
pub fn parse_start_time(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After ')' come field 3 (state), 4 (ppid), ...: field 22 is the 20th.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`), or "" where the file is missing.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// This machine's host name.
pub fn host() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its length; gethostname NUL-terminates within it or truncates.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// This process as an owner.
pub fn current_owner() -> Owner {
    let pid = std::process::id() as i32;
    Owner {
        pid,
        start_time: start_time(pid).unwrap_or(0),
        boot_id: boot_id(),
        host: host(),
    }
}

/// Whether `owner` still runs, as far as this machine can tell.
pub fn liveness(owner: &Owner) -> Liveness {
    let here = host();
    let boot = boot_id();
    // Only look the pid up when it is meaningful here (same host, same boot).
    let now = if owner.host == here && owner.boot_id == boot {
        start_time(owner.pid)
    } else {
        None
    };
    owner.liveness(&boot, &here, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_field_22_past_odd_command_names() {
        let line =
            "1234 (a) b (c) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 1000 100";
        assert_eq!(parse_start_time(line), Some(987654));
        assert_eq!(parse_start_time("garbage"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_dead_pid_is_not() {
        let me = current_owner();
        assert!(me.start_time > 0);
        assert!(!me.boot_id.is_empty());
        assert_eq!(liveness(&me), Liveness::Alive);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        let gone = Owner { pid, ..me.clone() };
        assert!(matches!(liveness(&gone), Liveness::Dead(_)));
        let older = Owner {
            start_time: me.start_time - 1,
            ..me
        };
        assert!(matches!(liveness(&older), Liveness::Dead(_)));
    }
}
