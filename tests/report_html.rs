//! The HTML report in a real browser: headless Chromium (Debian package `chromium`) loads it
//! without console messages, the SVG plots are in the DOM, a screenshot is written, and a
//! variant named `<script>alert(1)</script>` shows as text.
//!
//! Needs chromium: `apt-get install -y chromium` (or set ABPERF_CHROMIUM to a Chrome/Chromium
//! binary). Without it this test FAILS with that message; it never passes silently.

mod common;
use common::{Lab, data};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let lab = Lab::new();
    let dir = &lab.dir;
    lab.ok(&[
        "import",
        "--format",
        "time",
        "--new",
        "invpcid <b>&",
        &data("seed000-time.txt"),
    ]);
    let evil = "<script>alert(1)</script>";
    lab.ok(&[
        "import",
        "--experiment",
        "1",
        "--format",
        "time",
        "--variant",
        evil,
        &data("time-default.txt"),
    ]);
    let html = dir.path().join("report.html");
    lab.ok(&[
        "report",
        "1",
        "--format",
        "html",
        "--metric",
        "user_ns",
        "-o",
        html.to_str().unwrap(),
    ]);
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

/// `abperf micro tlb-flush --quick` into a fresh store, reported as HTML: the flush curves (per
/// call and per page, against pages on a log2 axis) with the p10-p90 band and, when the run
/// found a knee, the implied ceiling as a labelled vertical line; the page loads in headless
/// Chromium without console messages. Also the text report's micro table.
#[test]
fn micro_curves_in_html_report() {
    let lab = Lab::new();
    let dir = &lab.dir;
    let out = lab.ok(&["micro", "tlb-flush", "--quick"]).stdout;
    assert!(out.contains("tlb-flush"), "{out}");
    let html = dir.path().join("micro.html");
    lab.ok(&[
        "report",
        "1",
        "--format",
        "html",
        "-o",
        html.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    // The knee findings as stored by `abperf micro`, read back through the JSON-free text report.
    let text = lab.ok(&["report", "1", "--format", "text"]).stdout;
    assert!(text.contains("== tlb-flush =="), "{text}");
    assert!(
        text.contains("tlb-flush: median cycles per call (touched minus empty range) and per page"),
        "micro flush table missing: {text}"
    );
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("33 ")),
        "the flush table misses 33 pages: {text}"
    );
    assert!(text.contains("no verdicts against the first"), "{text}");
    let knees: Vec<u64> = text
        .lines()
        .filter_map(|l| {
            l.split_once(": knee after ")?
                .1
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    let judged = text
        .lines()
        .filter(|l| l.contains(": knee after ") || l.contains(": no clear knee"))
        .count();
    assert_eq!(judged, 2, "one knee finding per operation: {text}");

    let url = format!("file://{}", html.display());
    let (ok, dom, stderr) = headless(dir.path(), "micro", &["--dump-dom"], &url);
    assert!(ok, "chromium --dump-dom failed: {stderr}");
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(dom.contains("</html>"), "no DOM dumped");
    for plot in ["tlb-flush per-call", "tlb-flush per-page"] {
        let start = dom
            .find(&format!("class=\"plot micro-curve {plot}\""))
            .unwrap_or_else(|| panic!("no {plot} curve in the DOM"));
        let svg = &dom[start..start + dom[start..].find("</svg>").unwrap()];
        // One line per operation (plus the dashed empty range in the per-call plot), bands.
        assert!(svg.matches("<polyline").count() >= 2, "{plot}: {svg}");
        assert_eq!(svg.matches("class=\"band\"").count(), 2, "{plot}");
        for op in ["madvise", "mprotect"] {
            assert!(svg.contains(&format!(">{op}</text>")), "{plot}: no {op}");
        }
        // log2 x axis: powers of two from 1 to 512.
        for t in ["1", "32", "512"] {
            assert!(svg.contains(&format!(">{t}</text>")), "{plot}: no tick {t}");
        }
        // 67 sizes per operation, each a point.
        assert_eq!(svg.matches("<circle").count(), 2 * 67, "{plot}");
        // The implied ceiling of every knee found, as a vertical line labelled with its value.
        for k in &knees {
            assert!(
                svg.contains(&format!("class=\"ceiling\" data-pages=\"{k}\"")),
                "{plot}: no ceiling line at {k}"
            );
            assert!(
                svg.contains(&format!(">implied ceiling {k} (")),
                "{plot}: no ceiling label {k}"
            );
        }
        assert_eq!(
            svg.matches("class=\"ceiling\"").count(),
            {
                let mut k = knees.clone();
                k.sort();
                k.dedup();
                k.len()
            },
            "{plot}: one line per distinct knee"
        );
    }
    // The compact table of configurations and the findings.
    assert!(dom.contains("class=\"micro-table\" data-bench=\"tlb-flush\""));
    assert!(dom.contains("tlb-flush/madvise/empty/n=512"));
    assert!(dom.contains("madvise: "), "madvise knee finding missing");
    assert!(!page.contains("NaN"));
    assert!(!dom.contains("<script"));
}
