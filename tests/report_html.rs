//! The HTML report in a real browser: headless Chromium (Debian package `chromium`) loads it
//! without console messages, the SVG plots are in the DOM, a screenshot is written, and a
//! variant named `<script>alert(1)</script>` shows as text.
//!
//! Needs chromium: `apt-get install -y chromium` (or set ABPERF_CHROMIUM to a Chrome/Chromium
//! binary). Without it this test FAILS with that message; it never passes silently.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn abperf(db: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_abperf"))
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("ABPERF_CHROMIUM").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "chromium not found: the HTML report test needs headless Chromium. Install the Debian package \
         (apt-get install -y chromium) or set ABPERF_CHROMIUM to a Chromium/Chrome binary."
    );
}

/// Run headless chromium with `extra` args on `url` (output to files, so a full pipe cannot
/// stall it); its whole process group is killed after 120 s.
fn headless(dir: &Path, tag: &str, extra: &[&str], url: &str) -> (bool, String, String) {
    use std::os::unix::process::CommandExt;
    let out_path = dir.join(format!("{tag}.stdout"));
    let err_path = dir.join(format!("{tag}.stderr"));
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
        ])
        .args([
            "--enable-logging=stderr",
            "--v=0",
            "--no-first-run",
            "--window-size=900,2600",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.join(format!("{tag}.profile")).display()
        ))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .process_group(0)
        .spawn()
        .expect("start chromium");
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(120) {
            // SAFETY: kill(2) on the process group we created; no memory is involved.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // Chromium's helpers share the group; make sure none outlives the test.
    // SAFETY: as above.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    (status.success(), read(&out_path), read(&err_path))
}

#[test]
fn html_report_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    abperf(
        &db,
        &[
            "import",
            "--format",
            "time",
            "--new",
            "invpcid <b>&",
            &data("seed000-time.txt"),
        ],
    );
    let evil = "<script>alert(1)</script>";
    abperf(
        &db,
        &[
            "import",
            "--experiment",
            "1",
            "--format",
            "time",
            "--variant",
            evil,
            &data("time-default.txt"),
        ],
    );
    let html = dir.path().join("report.html");
    abperf(
        &db,
        &[
            "report",
            "1",
            "--format",
            "html",
            "--metric",
            "user_ns",
            "-o",
            html.to_str().unwrap(),
        ],
    );
    let url = format!("file://{}", html.display());

    let (ok, dom, stderr) = headless(dir.path(), "dom", &["--dump-dom"], &url);
    assert!(ok, "chromium --dump-dom failed: {stderr}");
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(dom.contains("</html>"), "no DOM dumped: {dom}");
    // One distribution plot per metric, the run-order plot, all as inline SVG.
    assert!(dom.matches("<svg").count() >= 3, "{dom}");
    assert!(dom.contains("class=\"plot distribution\" data-metric=\"user_ns\""));
    assert!(dom.contains("class=\"plot run-order\" data-metric=\"user_ns\""));
    assert!(dom.contains("<circle"));
    // The forest plot of the ratio CIs, with the verdict from the statistics module.
    assert!(dom.contains("class=\"plot forest\""), "no forest plot");
    assert!(dom.contains("y is 0.58% faster than n"), "verdict missing");
    // The hostile name is text: escaped in the serialised DOM, never an element.
    assert!(
        dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "variant name not shown as text"
    );
    assert!(
        !dom.contains("<script"),
        "a script element made it into the DOM"
    );
    assert!(dom.contains("invpcid &lt;b&gt;&amp;"));

    let shot = dir.path().join("shot.png");
    let (ok, _, stderr) = headless(
        dir.path(),
        "shot",
        &[&format!("--screenshot={}", shot.display())],
        &url,
    );
    assert!(ok, "chromium --screenshot failed: {stderr}");
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.len() > 10_000 && png.starts_with(b"\x89PNG"),
        "screenshot is not a PNG of a page"
    );
}
