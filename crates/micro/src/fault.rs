//! `page-fault`: first-touch faults on anonymous memory (write, and read of the zero page) and on
//! private and shared mappings of a file already in the page cache. Per-page cycles, with the
//! faults per page the kernel actually took (file read faults map several pages at once:
//! fault-around).

use super::harness::collect;
use super::mem::{Mapping, PAGE, minor_faults};
use super::timer::{start, stop};
use super::{Options, Sink};
use anyhow::{Context, Result};
use std::io::Write;
use std::os::fd::AsRawFd;

const PAGES: usize = 256;

#[derive(Clone, Copy)]
enum Kind {
    AnonWrite,
    ZeroRead,
    PrivateFileWrite,
    PrivateFileRead,
    SharedFileWrite,
    SharedFileRead,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::AnonWrite => "anon-write",
            Kind::ZeroRead => "zero-page-read",
            Kind::PrivateFileWrite => "private-file-write",
            Kind::PrivateFileRead => "private-file-read",
            Kind::SharedFileWrite => "shared-file-write",
            Kind::SharedFileRead => "shared-file-read",
        }
    }
}

fn fs_type(path: &std::path::Path) -> String {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
        return "?".into();
    };
    let p = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let mut best = ("", "?");
    for l in mounts.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() > 2 && p.starts_with(f[1]) && f[1].len() >= best.0.len() {
            best = (f[1], f[2]);
        }
    }
    best.1.to_string()
}

/// An unlinked temporary file of `PAGES` pages in `dir` (nothing is left behind whatever
/// happens), written, synced and read into the page cache.
fn fresh_file(dir: &std::path::Path) -> Result<std::fs::File> {
    let path = dir.join(format!("abperf-micro-{}.tmp", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("creating temporary file {}", path.display()))?;
    std::fs::remove_file(&path).with_context(|| format!("unlinking {}", path.display()))?;
    file.write_all(&vec![7u8; PAGES * PAGE])
        .context("filling the temporary file")?;
    file.sync_all().ok();
    // Bring the file into the page cache.
    let m = Mapping::file(file.as_raw_fd(), PAGES * PAGE, libc::MAP_SHARED)?;
    m.touch_read(PAGES);
    drop(m);
    Ok(file)
}

pub fn bench(sink: &mut Sink, opts: &Options) -> Result<()> {
    let samples = opts.samples(31, 201);
    let oh = sink.timer.overhead;
    let dir = std::env::temp_dir();
    let fs = fs_type(&dir);
    let kinds = [
        Kind::AnonWrite,
        Kind::ZeroRead,
        Kind::PrivateFileWrite,
        Kind::PrivateFileRead,
        Kind::SharedFileWrite,
        Kind::SharedFileRead,
    ];
    // Per kind: samples, faults per page, the first error. Rounds spread over the span (see
    // harness::Rounds), every kind in each.
    let mut got: Vec<(Vec<f64>, Vec<f64>, Option<anyhow::Error>)> = kinds
        .iter()
        .map(|_| (Vec::new(), Vec::new(), None))
        .collect();
    let mut rounds = opts.rounds(samples);
    for r in 0..rounds.count() {
        sink.round(&mut rounds, r)?;
        let per = rounds.per(r);
        // A fresh file every round, in the same state each time (written, synced, read into
        // the page cache): with one file for the run, whether the flusher had written back its
        // dirty pages changed a shared write fault 100-fold between runs.
        let file = fresh_file(&dir)?;
        let fd = file.as_raw_fd();
        for (&kind, (s, faults, err)) in kinds.iter().zip(got.iter_mut()) {
            if err.is_some() {
                continue;
            }
            s.extend(collect(if r == 0 { 2 } else { 1 }, per, || {
                let m = match kind {
                    Kind::AnonWrite | Kind::ZeroRead => {
                        Mapping::anon(PAGES * PAGE, PAGE, Some(false))
                    }
                    Kind::PrivateFileWrite | Kind::PrivateFileRead => {
                        Mapping::file(fd, PAGES * PAGE, libc::MAP_PRIVATE)
                    }
                    Kind::SharedFileWrite | Kind::SharedFileRead => {
                        Mapping::file(fd, PAGES * PAGE, libc::MAP_SHARED)
                    }
                };
                let m = match m {
                    Ok(m) => m,
                    Err(e) => {
                        *err = Some(e);
                        return f64::NAN;
                    }
                };
                let f0 = minor_faults();
                let t0 = start();
                match kind {
                    Kind::AnonWrite | Kind::PrivateFileWrite | Kind::SharedFileWrite => {
                        m.touch_write(PAGES)
                    }
                    _ => {
                        std::hint::black_box(m.touch_read(PAGES));
                    }
                }
                let t1 = stop();
                faults.push((minor_faults() - f0) as f64 / PAGES as f64);
                (t1.wrapping_sub(t0) as f64 - oh) / PAGES as f64
            }));
        }
    }
    for (&kind, (s, faults, err)) in kinds.iter().zip(got) {
        if let Some(e) = err {
            sink.fail("page-fault", Some(kind.name().into()), format!("{e:#}"));
            continue;
        }
        let fpp = super::harness::median(&faults);
        let mut params = vec![
            ("kind", kind.name().to_string()),
            ("pages", PAGES.to_string()),
            ("faults_per_page", format!("{fpp:.4}")),
        ];
        if !matches!(kind, Kind::AnonWrite | Kind::ZeroRead) {
            params.push(("fs", fs.clone()));
        }
        sink.add(
            "page-fault",
            format!("page-fault/{}", kind.name()),
            &params,
            "page",
            1,
            s,
            &rounds,
        );
        if fpp > 0.0 {
            let c = sink.measurements.last().expect("just added").cycles.median;
            sink.finding(
                "page-fault",
                &format!("{}-per-fault", kind.name()),
                Some(c / fpp),
                "cycles",
                format!(
                    "{}: {:.3} faults per page ({}), {:.0} cycles per fault",
                    kind.name(),
                    fpp,
                    if fpp < 0.9 {
                        "several pages mapped per fault: fault-around or a large folio"
                    } else {
                        "one fault per page"
                    },
                    c / fpp
                ),
            );
        }
    }
    Ok(())
}
