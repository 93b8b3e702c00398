//! How `abperf run` ends when its output goes away or a signal comes at an awkward moment (issue
//! 12, item 5 and 7): a closed stdout pipe, a terminal hang-up, a signal during --pre, --post,
//! --setup or --cleanup. Each must restore the knob, store the experiment as interrupted and exit
//! 128+N, never panic.

mod common;
use common::Lab;
use std::io::{BufRead, BufReader};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two ints.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both fds are fresh and ours.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

fn latest_status(lab: &Lab) -> abperf::model::Status {
    let s = lab.store();
    let id = s.resolve_id("latest").unwrap();
    s.experiment(id).unwrap().status
}

fn wait_for_runs(lab: &Lab, n: usize) {
    let t = Instant::now();
    loop {
        if lab.db().exists()
            && let Ok(s) = abperf::store::Store::open(&lab.db())
            && let Ok(id) = s.resolve_id("latest")
            && s.runs(id).map(|r| r.len()).unwrap_or(0) >= n
        {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no run stored in 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait until the latest experiment exists (created, before its first run).
fn wait_for_experiment(lab: &Lab) {
    let t = Instant::now();
    while !(lab.db().exists()
        && abperf::store::Store::open(&lab.db())
            .and_then(|s| s.list())
            .is_ok_and(|l| !l.is_empty()))
    {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no experiment in 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait(child: &mut Child) -> Option<i32> {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("abperf did not stop within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_closed_stdout_pipe_restores_the_knob_and_exits_141() {
    let lab = Lab::with_own_locks();
    let k = lab.write("knob", "2000\n");
    let spec = format!("{k}=111,222");
    let (r, w) = pipe();
    let mut child = lab
        .cmd(&[
            "run",
            "-i",
            "-r",
            "50",
            "--warmup",
            "0",
            "-k",
            &spec,
            "sleep 0.02; exit 1",
        ])
        .stdout(Stdio::from(w.try_clone().unwrap()))
        .stderr(Stdio::from(w))
        .spawn()
        .unwrap();
    // `| head -1`: read one line, then go away.
    let mut first = String::new();
    BufReader::new(std::fs::File::from(r))
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("experiment"), "{first}");
    assert_eq!(wait(&mut child), Some(141));
    assert_eq!(std::fs::read_to_string(&k).unwrap().trim(), "2000");
    assert_eq!(latest_status(&lab), abperf::model::Status::Interrupted);
}

#[test]
fn a_terminal_hang_up_interrupts_without_a_panic() {
    let lab = Lab::with_own_locks();
    let k = lab.write("knob", "2000\n");
    let spec = format!("{k}=111,222");
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills two fds; the name and termios/winsize arguments may be NULL.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if rc != 0 {
        common::skip("no pseudo-terminal here (openpty failed)");
        return;
    }
    // SAFETY: both fds are fresh and ours. Close-on-exec: abperf must not hold the terminal's
    // master side itself (then closing ours would hang nothing up).
    let (master, slave) = unsafe {
        libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(slave, libc::F_SETFD, libc::FD_CLOEXEC);
        (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave))
    };
    let mut child = lab
        .cmd(&[
            "run",
            "-r",
            "100",
            "--warmup",
            "0",
            "-k",
            &spec,
            "sleep 0.05",
        ])
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    // A terminal shows what it is sent: read it (the progress bar) as a terminal would, until
    // the experiment is well under way.
    // SAFETY: fcntl on our own fd.
    unsafe { libc::fcntl(master.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    let mut term = std::fs::File::from(master);
    let drain = |term: &mut std::fs::File| {
        use std::io::Read;
        let mut buf = [0u8; 4096];
        while term.read(&mut buf).is_ok_and(|n| n > 0) {}
    };
    let t = Instant::now();
    loop {
        drain(&mut term);
        let runs = abperf::store::Store::open(&lab.db())
            .and_then(|s| s.runs(1))
            .map(|r| r.len())
            .unwrap_or(0);
        if runs >= 2 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no run stored in 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for _ in 0..25 {
        drain(&mut term);
        std::thread::sleep(Duration::from_millis(20));
    }
    // The terminal goes away (writes to it now fail with EIO), and the hang-up comes.
    drop(term);
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    assert_eq!(wait(&mut child), Some(128 + libc::SIGHUP));
    assert_eq!(std::fs::read_to_string(&k).unwrap().trim(), "2000");
    assert_eq!(latest_status(&lab), abperf::model::Status::Interrupted);
}

/// Run with `helper` set to a long sleep, send SIGTERM while it sleeps; abperf must exit 143
/// with the experiment interrupted and the knob restored.
fn signal_during(flag: &str) {
    let lab = Lab::with_own_locks();
    let k = lab.write("knob", "2000\n");
    let spec = format!("{k}=111,222");
    let mut args = vec!["run", "-r", "1", "--warmup", "0", "-k", &spec];
    args.extend([flag, "sleep 30"]);
    args.push("true");
    let mut child = lab
        .cmd(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_experiment(&lab);
    if flag == "--post" || flag == "--cleanup" {
        wait_for_runs(&lab, 1);
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    assert_eq!(wait(&mut child), Some(128 + libc::SIGTERM), "{flag}");
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "{flag}: the helper was stopped"
    );
    assert_eq!(
        latest_status(&lab),
        abperf::model::Status::Interrupted,
        "{flag}"
    );
    assert_eq!(
        std::fs::read_to_string(&k).unwrap().trim(),
        "2000",
        "{flag}"
    );
}

#[test]
fn a_signal_during_pre_interrupts() {
    signal_during("--pre");
}

#[test]
fn a_signal_during_post_interrupts() {
    signal_during("--post");
}

#[test]
fn a_signal_during_setup_interrupts() {
    signal_during("--setup");
}

#[test]
fn a_signal_during_cleanup_interrupts() {
    signal_during("--cleanup");
}

#[test]
fn a_signal_while_ten_million_planned_runs_are_stored_stops_at_once() {
    // Storing the plan takes tens of seconds here; SIGTERM used to wait for all of it.
    let lab = Lab::with_own_locks();
    let k = lab.write("knob", "2000\n");
    let spec = format!("{k}=1,2,3,4,5,6,7,8,9,10");
    let mut child = lab
        .cmd(&["run", "-r", "999999", "-k", &spec, "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    assert_eq!(wait(&mut child), Some(128 + libc::SIGTERM));
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(
        err.contains("while storing the plan; nothing was stored"),
        "{err}"
    );
    assert!(lab.store().list().unwrap().is_empty(), "nothing stored");
    assert_eq!(std::fs::read_to_string(&k).unwrap().trim(), "2000");
}
