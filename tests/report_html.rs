//! The HTML report in a real browser: headless Chromium (Debian package `chromium`) loads it
//! without console messages, the SVG plots are in the DOM, a screenshot is written, and a
//! variant named `<script>alert(1)</script>` shows as text.
//!
//! Needs headless Chromium: `apt-get install --no-install-recommends chromium-headless-shell`
//! (scripts/test.sh does it), or the full `chromium`, or ABPERF_CHROMIUM set to a Chrome/Chromium
//! binary. Without one this test FAILS with that message; it never passes silently.

mod common;
use common::{Lab, data};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The headless browser: `$ABPERF_CHROMIUM`, else the first Chromium/Chrome on $PATH.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ABPERF_CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    [
        "chromium-headless-shell",
        "chromium",
        "chromium-browser",
        "google-chrome",
    ]
    .into_iter()
    .find(|name| common::on_path(name))
    .map(PathBuf::from)
}

/// The browser, or None after reporting the test skipped (none on $PATH; scripts/test.sh
/// installs chromium-headless-shell).
fn browser_or_skip() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        common::skip(
            "no headless Chromium on $PATH and no ABPERF_CHROMIUM (apt-get install \
             --no-install-recommends chromium-headless-shell)",
        );
    }
    found
}

/// Run headless chromium with `extra` args on `url` (output to files, so a full pipe cannot
/// stall it); its whole process group is killed after 120 s.
fn headless(
    browser: &Path,
    dir: &Path,
    tag: &str,
    extra: &[&str],
    url: &str,
) -> (bool, String, String) {
    use std::os::unix::process::CommandExt;
    let out_path = dir.join(format!("{tag}.stdout"));
    let err_path = dir.join(format!("{tag}.stderr"));
    let mut child = Command::new(browser)
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
    lab.import_variant("1", evil, "time", &data("time-default.txt"));
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

    let Some(browser) = browser_or_skip() else {
        return;
    };
    let (ok, dom, stderr) = headless(&browser, dir.path(), "dom", &["--dump-dom"], &url);
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
        &browser,
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

/// Every `<text class="label" ...>LABEL</text>` inside `svg` (an SVG element's markup).
fn svg_labels(svg: &str) -> Vec<String> {
    svg.split("class=\"label\"")
        .skip(1)
        .filter_map(|rest| {
            let start = rest.find('>')? + 1;
            let rest = &rest[start..];
            // A label may carry a <title> with the full name first.
            let rest = match rest.strip_prefix("<title>") {
                Some(r) => &r[r.find("</title>")? + "</title>".len()..],
                None => rest,
            };
            Some(rest[..rest.find('<')?].to_string())
        })
        .collect()
}

/// The markup of the first `<svg` element whose opening tag contains `class`.
fn svg_with<'a>(dom: &'a str, class: &str) -> &'a str {
    let start = dom
        .find(class)
        .unwrap_or_else(|| panic!("no {class} in the DOM"));
    let start = dom[..start].rfind("<svg").unwrap();
    &dom[start..start + dom[start..].find("</svg>").unwrap()]
}

/// What headless Chromium's `--dump-dom` gave for a page.
struct Loaded {
    ok: bool,
    dom: String,
    stderr: String,
}

impl Loaded {
    fn load(browser: &Path, dir: &Path, tag: &str, url: &str) -> Loaded {
        let (ok, dom, stderr) = headless(browser, dir, tag, &["--dump-dom"], url);
        Loaded { ok, dom, stderr }
    }

    /// The DOM, once Chromium is known to have succeeded.
    fn dom(&self) -> &str {
        assert!(self.ok, "chromium --dump-dom failed: {}", self.stderr);
        &self.dom
    }

    /// The page loaded without console messages.
    fn assert_quiet(&self) {
        self.dom();
        let console: Vec<&str> = self
            .stderr
            .lines()
            .filter(|l| l.contains(":CONSOLE"))
            .collect();
        assert!(console.is_empty(), "console messages: {console:#?}");
    }
}

/// Six variants with long names that differ only in the middle (what `-L pages=33,34 -k
/// .../enabled=always,madvise,never` makes): every label distinct, every variant in every legend,
/// a label-to-name map, tables that scroll instead of overflowing, and a sentence instead of a plot
/// for a metric that never varies. The screenshot is kept next to the report for a human to look at
/// (`ABPERF_KEEP_SCREENSHOT=DIR` copies it there).
///
/// The tests of the six variants share one lab: the report is made once, loaded once.
struct Six {
    lab: Lab,
    names: Vec<String>,
    html: PathBuf,
    url: String,
    loaded: OnceLock<Loaded>,
}

/// The six variants imported (6 runs each of `/usr/bin/time` lines) and reported as HTML.
fn six() -> &'static Six {
    static SIX: OnceLock<Six> = OnceLock::new();
    SIX.get_or_init(|| {
        let lab = Lab::shared("report-html-six");
        let mut names = Vec::new();
        for pages in [33, 34] {
            for knob in ["always", "madvise", "never"] {
                names.push(format!(
                    "pages={pages} /sys/kernel/mm/transparent_hugepage/enabled={knob} work=iterations-1000000"
                ));
            }
        }
        for (i, name) in names.iter().enumerate() {
            let mut text = String::new();
            for r in 0..6 {
                let user = 1.0 + 0.07 * i as f64 + 0.01 * ((r * 7 + i) % 5) as f64;
                let sys = 0.2 + 0.01 * ((r * 3 + i) % 4) as f64;
                let minor = 1400 + 10 * i + r;
                text.push_str(&format!(
                    "{user:.2}user {sys:.2}system 0:{:05.2}elapsed 99%CPU (0avgtext+0avgdata 7132maxresident)k\n\
                     0inputs+0outputs (0major+{minor}minor)pagefaults 0swaps\n",
                    user + sys + 0.01
                ));
            }
            let file = lab.write(&format!("v{i}.txt"), text);
            let mut args = vec!["import", "--format", "time", "--variant", name.as_str()];
            if i == 0 {
                args.extend(["--new", "six variants"]);
            } else {
                args.extend(["--experiment", "latest"]);
            }
            args.push(&file);
            lab.ok(&args);
        }
        let html = lab.path("six.html");
        lab.ok(&[
            "report",
            "latest",
            "--format",
            "html",
            "--metric",
            "user",
            "-o",
            html.to_str().unwrap(),
        ]);
        let url = format!("file://{}", html.display());
        Six {
            lab,
            names,
            html,
            url,
            loaded: OnceLock::new(),
        }
    })
}

/// The six variants' report as Chromium loaded it (None, reported skipped, without Chromium).
fn six_loaded() -> Option<(&'static Six, &'static Loaded)> {
    let six = six();
    let browser = browser_or_skip()?;
    let loaded = six
        .loaded
        .get_or_init(|| Loaded::load(&browser, six.lab.dir.path(), "six", &six.url));
    Some((six, loaded))
}

/// The labels of the run-order legend (checked in [`six_variants_run_order_legend`]).
fn run_order_labels(dom: &str) -> Vec<String> {
    svg_labels(svg_with(dom, "class=\"plot run-order\""))
}

#[test]
fn six_variants_load_without_console_messages() {
    let Some((_, loaded)) = six_loaded() else {
        return;
    };
    loaded.assert_quiet();
}

// The run-order legend: every variant, each with its full name, six distinct labels.
#[test]
fn six_variants_run_order_legend() {
    let Some((six, loaded)) = six_loaded() else {
        return;
    };
    let order = svg_with(loaded.dom(), "class=\"plot run-order\"");
    assert_eq!(
        order.matches("class=\"legend-entry\"").count(),
        6,
        "{order}"
    );
    for n in &six.names {
        assert!(
            order.contains(&format!("data-variant=\"{n}\"")),
            "{n} not in the legend"
        );
    }
    let legend = svg_labels(order);
    let distinct: std::collections::BTreeSet<&String> = legend.iter().collect();
    assert_eq!(distinct.len(), 6, "labels alike: {legend:?}");
    for l in &legend {
        assert!(l.chars().count() <= 24, "{l}");
        assert!(l.contains("pages=3"), "the differing part is kept: {l}");
    }
}

// The distribution plot names the same six rows by the same labels.
#[test]
fn six_variants_distribution_plot_uses_the_legend_labels() {
    let Some((_, loaded)) = six_loaded() else {
        return;
    };
    let dom = loaded.dom();
    let dist = svg_with(dom, "class=\"plot distribution\" data-metric=\"user_ns\"");
    assert_eq!(svg_labels(dist), run_order_labels(dom));
}

// The forest plot has the five comparisons, each label distinct.
#[test]
fn six_variants_forest_plot_has_five_distinct_comparisons() {
    let Some((_, loaded)) = six_loaded() else {
        return;
    };
    let forest = svg_labels(svg_with(loaded.dom(), "class=\"plot forest\""));
    assert_eq!(forest.len(), 5, "{forest:?}");
    assert_eq!(
        forest
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        5
    );
}

// The variants table maps each label to the full name.
#[test]
fn six_variants_table_maps_labels_to_names() {
    let Some((six, loaded)) = six_loaded() else {
        return;
    };
    let dom = loaded.dom();
    let legend = run_order_labels(dom);
    let table = &dom[dom.find("id=\"variants\"").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    for (l, n) in legend.iter().zip(&six.names) {
        let row = table
            .split("<tr>")
            .find(|r| r.contains(&format!("<span class=\"label\">{l}</span>")))
            .unwrap_or_else(|| panic!("no row for label {l}"));
        assert!(
            row.contains(n.as_str()),
            "label {l} is not mapped to {n}: {row}"
        );
    }
}

// Wide tables scroll inside the page.
#[test]
fn six_variants_wide_tables_scroll() {
    let Some((_, loaded)) = six_loaded() else {
        return;
    };
    let dom = loaded.dom();
    for id in ["summary", "variants", "runs"] {
        let at = dom.find(&format!("<table id=\"{id}\"")).unwrap();
        assert!(
            dom[..at].ends_with("<div class=\"scroll\">"),
            "table {id} is not in a scrolling box"
        );
    }
}

// Metrics that never vary get a sentence, not a plot.
#[test]
fn six_variants_constant_metrics_get_a_sentence_not_a_plot() {
    let Some((_, loaded)) = six_loaded() else {
        return;
    };
    let dom = loaded.dom();
    for m in ["majflt", "maxrss_kib", "nswap"] {
        assert!(
            !dom.contains(&format!("class=\"plot distribution\" data-metric=\"{m}\"")),
            "a plot of constant {m}"
        );
        assert!(
            dom.contains(&format!("class=\"note no-variation\" data-metric=\"{m}\"")),
            "no sentence for constant {m}"
        );
    }
    assert!(
        dom.contains("maxrss_kib: every run of every variant gave 7.0 MiB (no variation: no plot)"),
        "{dom}"
    );
    assert!(dom.contains("class=\"plot distribution\" data-metric=\"minflt\""));
}

#[test]
fn six_variants_screenshot() {
    let six = six();
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let shot = six.lab.path("six.png");
    let (ok, _, stderr) = headless(
        &browser,
        six.lab.dir.path(),
        "six-shot",
        &[&format!("--screenshot={}", shot.display())],
        &six.url,
    );
    assert!(ok, "chromium --screenshot failed: {stderr}");
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000);
    if let Some(dir) = std::env::var_os("ABPERF_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, Path::new(&dir).join("six-variants.png")).unwrap();
        std::fs::copy(&six.html, Path::new(&dir).join("six-variants.html")).unwrap();
    }
}

/// `abperf micro tlb-flush --quick` into a fresh store, reported as HTML: the flush curves (per
/// call and per page, against pages on a log2 axis) with the p10-p90 band and, when the run
/// found a knee, the implied ceiling as a labelled vertical line; the page loads in headless
/// Chromium without console messages. Also the text report's micro table.
///
/// The tests of this report share one lab: the suite runs once, the page is loaded once.
struct MicroReport {
    lab: Lab,
    /// What `abperf micro` printed.
    out: String,
    /// The HTML report's file and its text.
    html: PathBuf,
    page: String,
    /// The text report.
    text: String,
    loaded: OnceLock<Loaded>,
}

fn micro_report() -> &'static MicroReport {
    static MICRO: OnceLock<MicroReport> = OnceLock::new();
    MICRO.get_or_init(|| {
        let lab = Lab::shared("report-html-micro");
        let out = lab.ok(&["micro", "tlb-flush", "--quick"]).stdout;
        let html = lab.path("micro.html");
        lab.ok(&[
            "report",
            "1",
            "--format",
            "html",
            "-o",
            html.to_str().unwrap(),
        ]);
        let page = std::fs::read_to_string(&html).unwrap();
        // The knee findings as stored by `abperf micro`, read back through the JSON-free text
        // report.
        let text = lab.ok(&["report", "1", "--format", "text"]).stdout;
        MicroReport {
            lab,
            out,
            html,
            page,
            text,
            loaded: OnceLock::new(),
        }
    })
}

/// The micro report as Chromium loaded it (None, reported skipped, without Chromium).
fn micro_loaded() -> Option<(&'static MicroReport, &'static Loaded)> {
    let m = micro_report();
    let browser = browser_or_skip()?;
    let url = format!("file://{}", m.html.display());
    let loaded = m
        .loaded
        .get_or_init(|| Loaded::load(&browser, m.lab.dir.path(), "micro", &url));
    Some((m, loaded))
}

/// The pages after which the text report found a knee (one entry per operation with a knee).
fn knees(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|l| {
            l.split_once(": knee after ")?
                .1
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

#[test]
fn micro_report_text_has_the_flush_table() {
    let m = micro_report();
    let (out, text) = (&m.out, &m.text);
    assert!(out.contains("tlb-flush"), "{out}");
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
}

#[test]
fn micro_report_text_judges_one_knee_per_operation() {
    let text = &micro_report().text;
    let judged = text
        .lines()
        .filter(|l| l.contains(": knee after ") || l.contains(": no clear knee"))
        .count();
    assert_eq!(judged, 2, "one knee finding per operation: {text}");
}

#[test]
fn micro_html_loads_without_console_messages() {
    let Some((_, loaded)) = micro_loaded() else {
        return;
    };
    loaded.assert_quiet();
    assert!(loaded.dom().contains("</html>"), "no DOM dumped");
}

/// The flush curve `plot` of the micro report: one line and band per operation, a log2 axis of
/// pages, a point per size, and the implied ceiling of every knee found.
fn assert_flush_curve(plot: &str) {
    let Some((m, loaded)) = micro_loaded() else {
        return;
    };
    let dom = loaded.dom();
    let knees = knees(&m.text);
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

#[test]
fn micro_html_per_call_flush_curve() {
    assert_flush_curve("tlb-flush per-call");
}

#[test]
fn micro_html_per_page_flush_curve() {
    assert_flush_curve("tlb-flush per-page");
}

// The compact table of configurations and the findings.
#[test]
fn micro_html_table_and_findings() {
    let Some((m, loaded)) = micro_loaded() else {
        return;
    };
    let dom = loaded.dom();
    assert!(dom.contains("class=\"micro-table\" data-bench=\"tlb-flush\""));
    assert!(dom.contains("tlb-flush/madvise/empty/n=512"));
    assert!(dom.contains("madvise: "), "madvise knee finding missing");
    assert!(!m.page.contains("NaN"));
    assert!(!dom.contains("<script"));
}

/// The profile differential of an experiment with profiled runs: an inline SVG chart (bars and
/// interval whiskers, no script) that loads without console messages; a hostile symbol name is
/// text.
#[test]
fn profile_differential_in_headless_chromium() {
    let lab = Lab::new();
    lab.ok(&[
        "import",
        "--format",
        "time",
        "--variant",
        "A",
        "--new",
        "profiled",
        &data("time-default.txt"),
    ]);
    lab.import_variant("1", "B", "time", &data("time-default.txt"));
    let evil = "<script>alert(2)</script>";
    for (variant, hot) in [("A", 300u32), ("B", 450)] {
        for i in 0..3u32 {
            let text = common::perf_script_text(&[
                ("hot", hot + 7 * i),
                ("cold", 600 - 5 * i),
                (evil, 40 + 3 * i),
            ]);
            lab.write(&format!("{variant}/r{i}.txt"), text);
        }
    }
    lab.ok(&[
        "import",
        "--format",
        "perf-script",
        "--experiment",
        "1",
        &lab.p("A"),
        &lab.p("B"),
    ]);
    let html = lab.path("profile.html");
    lab.ok(&[
        "report",
        "1",
        "--format",
        "html",
        "-o",
        html.to_str().unwrap(),
    ]);
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let url = format!("file://{}", html.display());
    let loaded = Loaded::load(&browser, lab.dir.path(), "profile", &url);
    loaded.assert_quiet();
    let dom = loaded.dom();
    let svg = svg_with(dom, "class=\"plot profile-diff\"");
    assert_eq!(svg.matches("class=\"bar\"").count(), 3, "{svg}");
    assert_eq!(svg.matches("class=\"ci\"").count(), 3, "{svg}");
    assert!(svg.contains(">hot<"), "{svg}");
    // The differential flame graph of the imported stacks (main above nothing, three callees):
    // hot grew (red), cold shrank (blue), main is on every stack (grey, not tested).
    let flame = svg_with(dom, "class=\"plot flame-diff\"");
    assert_eq!(flame.matches("class=\"frame\"").count(), 4, "{flame}");
    assert_eq!(flame.matches("<title>").count(), 4, "{flame}");
    let fill_of = |name: &str| {
        let at = flame.find(&format!("<title>{name}\n")).expect(name);
        let rest = &flame[at..];
        let f = rest.find("fill=\"").unwrap() + 6;
        rest[f..f + 7].to_string()
    };
    assert_eq!(fill_of("main"), "#D0D0D0", "{flame}");
    let (hot, cold) = (fill_of("hot"), fill_of("cold"));
    let rgb = |c: &str| u32::from_str_radix(&c[1..], 16).unwrap();
    assert!(rgb(&hot) >> 16 > rgb(&hot) & 0xFF, "hot is red: {hot}");
    assert!(rgb(&cold) >> 16 < rgb(&cold) & 0xFF, "cold is blue: {cold}");
    assert!(
        flame.contains(">hot<") && flame.contains(">main<"),
        "{flame}"
    );
    assert!(dom.contains("&lt;script&gt;alert(2)&lt;/script&gt;"));
    assert!(
        !dom.contains("<script"),
        "a script element made it into the DOM"
    );
}
