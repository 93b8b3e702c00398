//! Recording: every CPU's `trace_pipe_raw` is read by its own thread while the workload runs;
//! the pages are kept in memory ([`RawCapture`]), optionally written to a raw file
//! (`--keep-raw`) that [`RawCapture::read`] loads again for re-analysis.
//!
//! Raw file layout: `ABPERF-TRACE-RAW1\n`, u32 length + JSON [`RawMeta`] (clock, page size,
//! header_page, header_event and the format file of every event), then per CPU: u32 cpu,
//! u64 byte count, the pages.

use super::event::{Ev, Schema};
use super::format::{parse_event_format, parse_header_event, parse_header_page};
use super::instance::Instance;
use super::ring::{Lost, Ring};
use super::tables::{Analyzer, Spec, Tables};
use anyhow::{Context, Result, anyhow, bail};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

const MAGIC: &[u8] = b"ABPERF-TRACE-RAW1\n";

/// Everything needed to decode the pages again.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RawMeta {
    pub clock: String,
    pub page_size: usize,
    pub header_page: String,
    pub header_event: String,
    /// (system, format file text) per enabled event.
    pub formats: Vec<(String, String)>,
    /// Lost events per CPU according to the kernel's per-CPU stats at the end.
    pub lost_stats: Vec<(u32, u64)>,
    /// The recording machine's boot id (`/proc/sys/kernel/random/boot_id`): an import
    /// calibrates the TSC only for a capture of this very boot (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
}

/// This machine's boot id (`/proc/sys/kernel/random/boot_id`), `None` when unreadable.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// A recorded capture: per-CPU pages.
#[derive(Debug)]
pub struct RawCapture {
    pub meta: RawMeta,
    pub cpus: Vec<(u32, Vec<u8>)>,
}

/// Result of decoding a capture.
#[derive(Debug, Clone)]
pub struct Decoded {
    pub tables: Tables,
    pub events: u64,
    /// Per CPU: losses flagged in the pages.
    pub lost_pages: Vec<(u32, Lost)>,
    /// Time from the first to the last event (clock ticks).
    pub span: u64,
}

impl RawCapture {
    pub fn ring(&self) -> Result<Ring> {
        let ph = parse_header_page(&self.meta.header_page).map_err(|e| anyhow!("{e}"))?;
        let eh = parse_header_event(&self.meta.header_event).map_err(|e| anyhow!("{e}"))?;
        Ok(Ring::new(ph, eh, self.meta.page_size))
    }

    pub fn schema(&self) -> Result<Schema> {
        let mut f = Vec::new();
        for (sys, text) in &self.meta.formats {
            f.push(parse_event_format(sys, text).map_err(|e| anyhow!("{e}"))?);
        }
        Ok(Schema::from_formats(&f))
    }

    /// Decode all pages and aggregate with `specs`.
    pub fn analyze(&self, specs: &[Spec]) -> Result<Decoded> {
        let mut d = PageDecoder::new(&self.meta, specs)?;
        for (cpu, pages) in &self.cpus {
            let mut lost = Lost::default();
            d.pages(*cpu, pages, 0, &mut lost)?;
            d.lost_pages.push((*cpu, lost));
        }
        Ok(d.finish())
    }

    /// Decode the raw capture at `path` with `specs` in one pass over the file, mapping 4 MiB
    /// of pages at a time (no copy: the decoder touches only the committed part of each page;
    /// a file that cannot be mapped is read instead): memory independent of the file's size
    /// (what `RawCapture::read(path)?.analyze(specs)` gives, without holding the pages).
    pub fn analyze_file(path: &Path, specs: &[Spec]) -> Result<(RawMeta, Decoded)> {
        let (mut r, meta, file_len) = open_raw(path)?;
        let bad = |what: &str| anyhow!("{}: not an abperf raw capture ({what})", path.display());
        let mut d = PageDecoder::new(&meta, specs)?;
        let page = meta.page_size.max(1);
        let chunk = (4usize << 20).div_ceil(page) * page;
        let msg = super::mapped::shrink_message(path);
        let mut buf = Vec::new();
        while let Some((cpu, len)) = next_block(&mut r, path, &meta, file_len)? {
            let at = r.stream_position()?;
            if at + len as u64 > file_len {
                return Err(bad("truncated CPU block"));
            }
            let mut lost = Lost::default();
            let (mut done, mut page_no) = (0, 0);
            while done < len {
                let n = chunk.min(len - done);
                match super::mapped::Window::map(r.get_ref(), at + done as u64, n, &msg) {
                    Some(w) => d.pages(cpu, w.bytes(), page_no, &mut lost)?,
                    None => {
                        buf.resize(n, 0);
                        r.seek(SeekFrom::Start(at + done as u64))?;
                        r.read_exact(&mut buf)
                            .map_err(|_| bad("truncated CPU block"))?;
                        d.pages(cpu, &buf, page_no, &mut lost)?;
                    }
                }
                page_no += (n / meta.page_size) as u64;
                done += n;
            }
            r.seek(SeekFrom::Start(at + len as u64))?;
            d.lost_pages.push((cpu, lost));
        }
        Ok((meta, d.finish()))
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        let f = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut w = BufWriter::new(f);
        let meta = serde_json::to_vec(&self.meta)?;
        w.write_all(MAGIC)?;
        w.write_all(&(meta.len() as u32).to_le_bytes())?;
        w.write_all(&meta)?;
        for (cpu, pages) in &self.cpus {
            w.write_all(&cpu.to_le_bytes())?;
            w.write_all(&(pages.len() as u64).to_le_bytes())?;
            w.write_all(pages)?;
        }
        w.flush()
            .with_context(|| format!("writing {}", path.display()))
    }

    pub fn read(path: &Path) -> Result<RawCapture> {
        let (mut r, meta, file_len) = open_raw(path)?;
        let bad = |what: &str| anyhow!("{}: not an abperf raw capture ({what})", path.display());
        let mut cpus = Vec::new();
        while let Some((cpu, len)) = next_block(&mut r, path, &meta, file_len)? {
            let mut pages = vec![0u8; len];
            r.read_exact(&mut pages)
                .map_err(|_| bad("truncated CPU block"))?;
            cpus.push((cpu, pages));
        }
        Ok(RawCapture { meta, cpus })
    }

    /// Only the header of the raw capture at `path`.
    pub fn read_meta(path: &Path) -> Result<RawMeta> {
        Ok(open_raw(path)?.1)
    }

    pub fn bytes(&self) -> usize {
        self.cpus.iter().map(|(_, p)| p.len()).sum()
    }
}

/// Open a raw capture and read its header: the reader (at the first CPU block), the meta
/// data and the file's length.
fn open_raw(path: &Path) -> Result<(BufReader<File>, RawMeta, u64)> {
    let f = File::open(path).with_context(|| format!("opening raw capture {}", path.display()))?;
    let file_len = f.metadata().map(|m| m.len()).unwrap_or(0);
    {
        use std::os::fd::AsRawFd;
        // read once from start to end: let the kernel read ahead further (a hint; errors
        // change nothing)
        // SAFETY: a valid open descriptor; no memory is passed.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL) };
    }
    let mut r = BufReader::new(f);
    let mut magic = vec![0u8; MAGIC.len()];
    let bad = |what: &str| anyhow!("{}: not an abperf raw capture ({what})", path.display());
    r.read_exact(&mut magic).map_err(|_| bad("too short"))?;
    if magic != MAGIC {
        return Err(bad("wrong magic"));
    }
    let mut n4 = [0u8; 4];
    r.read_exact(&mut n4).map_err(|_| bad("truncated header"))?;
    let meta_len = u32::from_le_bytes(n4) as u64;
    if meta_len > file_len {
        return Err(bad("header longer than the file"));
    }
    let mut meta = vec![0u8; meta_len as usize];
    r.read_exact(&mut meta)
        .map_err(|_| bad("truncated header"))?;
    let meta: RawMeta = serde_json::from_slice(&meta)
        .map_err(|e| anyhow!("{}: bad header: {e}", path.display()))?;
    Ok((r, meta, file_len))
}

/// The next CPU block's header: its CPU and byte count (checked against the page size and the
/// file); `None` at the end of the file. The reader is left at the block's pages.
fn next_block(
    r: &mut BufReader<File>,
    path: &Path,
    meta: &RawMeta,
    file_len: u64,
) -> Result<Option<(u32, usize)>> {
    let bad = |what: &str| anyhow!("{}: not an abperf raw capture ({what})", path.display());
    let mut n4 = [0u8; 4];
    match r.read_exact(&mut n4) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let mut n8 = [0u8; 8];
    r.read_exact(&mut n8)
        .map_err(|_| bad("truncated CPU block"))?;
    let len = u64::from_le_bytes(n8) as usize;
    if meta.page_size == 0 || !len.is_multiple_of(meta.page_size) {
        bail!(
            "{}: CPU block of {len} bytes is not a multiple of the page size {}",
            path.display(),
            meta.page_size
        );
    }
    // a corrupt length must not make us allocate more than the file holds
    if len as u64 > file_len {
        return Err(bad("CPU block longer than the file"));
    }
    let cpu = u32::from_le_bytes(n4);
    if cpu >= super::tables::MAX_CPUS {
        return Err(bad(&format!(
            "CPU number {cpu}, expected below {}",
            super::tables::MAX_CPUS
        )));
    }
    Ok(Some((cpu, len)))
}

/// Decodes ring-buffer pages into one analysis, block by block.
struct PageDecoder {
    ring: Ring,
    schema: Schema,
    an: Analyzer,
    events: u64,
    first: u64,
    last: u64,
    lost_pages: Vec<(u32, Lost)>,
}

impl PageDecoder {
    fn new(meta: &RawMeta, specs: &[Spec]) -> Result<PageDecoder> {
        let ph = parse_header_page(&meta.header_page).map_err(|e| anyhow!("{e}"))?;
        let eh = parse_header_event(&meta.header_event).map_err(|e| anyhow!("{e}"))?;
        let mut f = Vec::new();
        for (sys, text) in &meta.formats {
            f.push(parse_event_format(sys, text).map_err(|e| anyhow!("{e}"))?);
        }
        let schema = Schema::from_formats(&f);
        let an = Analyzer::new(&schema, specs).map_err(abperf_model::error::usage)?;
        Ok(PageDecoder {
            ring: Ring::new(ph, eh, meta.page_size),
            schema,
            an,
            events: 0,
            first: u64::MAX,
            last: 0,
            lost_pages: Vec::new(),
        })
    }

    /// Decode whole pages of `cpu`, the first being page `page_no` of its block.
    fn pages(&mut self, cpu: u32, pages: &[u8], page_no: u64, lost: &mut Lost) -> Result<()> {
        let (schema, an) = (&self.schema, &mut self.an);
        let (first, last) = (&mut self.first, &mut self.last);
        for (i, page) in pages.chunks(self.ring.page_size).enumerate() {
            let st = self
                .ring
                .parse_page(page, page_no + i as u64, |ts, d| {
                    if d.len() < 8 {
                        return;
                    }
                    let id = u16::from_le_bytes([d[0], d[1]]);
                    let Some(ty) = schema.by_kernel_id(id) else {
                        return;
                    };
                    let pid = i32::from_le_bytes([d[4], d[5], d[6], d[7]]);
                    *first = (*first).min(ts);
                    *last = (*last).max(ts);
                    an.event(&Ev {
                        cpu,
                        ts,
                        ty,
                        pid,
                        raw: d,
                        slots: &[],
                    });
                })
                .with_context(|| format!("CPU {cpu}"))?;
            self.events += st.events;
            lost.add(st.missed);
        }
        Ok(())
    }

    fn finish(self) -> Decoded {
        Decoded {
            tables: self.an.finish(&self.schema),
            events: self.events,
            lost_pages: self.lost_pages,
            span: self.last.saturating_sub(self.first),
        }
    }
}

/// Read every CPU's trace_pipe_raw until `stop`; returns pages per CPU. The caller turns
/// tracing off before setting `stop`, so the final drain sees everything.
pub struct Readers {
    handles: Vec<(u32, std::thread::JoinHandle<Result<Vec<u8>>>)>,
    stop: Arc<AtomicBool>,
}

impl Readers {
    pub fn start(inst: &Instance, page_size: usize) -> Result<Readers> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::new();
        for cpu in inst.cpus()? {
            let path = inst.path(&format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
                .with_context(|| format!("opening {}", path.display()))?;
            let stop = stop.clone();
            let h = std::thread::Builder::new()
                .name(format!("trace-cpu{cpu}"))
                .spawn(move || read_cpu(f, page_size, &stop))?;
            handles.push((cpu, h));
        }
        Ok(Readers { handles, stop })
    }

    /// Signal the threads to drain and finish; collect their pages.
    pub fn finish(mut self) -> Result<Vec<(u32, Vec<u8>)>> {
        self.stop.store(true, Ordering::SeqCst);
        let mut out = Vec::new();
        for (cpu, h) in std::mem::take(&mut self.handles) {
            let pages = h
                .join()
                .map_err(|_| anyhow!("reader thread of CPU {cpu} panicked"))??;
            out.push((cpu, pages));
        }
        Ok(out)
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        // on an early return: make the threads exit (they close their files, so the instance
        // can be removed)
        self.stop.store(true, Ordering::SeqCst);
        for (_, h) in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

fn read_cpu(mut f: File, page_size: usize, stop: &AtomicBool) -> Result<Vec<u8>> {
    use std::os::fd::AsRawFd;
    let mut out = Vec::with_capacity(page_size * 64);
    let mut buf = vec![0u8; page_size];
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        // read everything available now
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) if n == page_size => out.extend_from_slice(&buf),
                Ok(n) => {
                    bail!("short read of {n} bytes from trace_pipe_raw (page size {page_size})")
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(anyhow!("reading trace_pipe_raw: {e}")),
            }
        }
        if stopping {
            return Ok(out);
        }
        let mut pfd = libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, 50) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_number_beyond_linux_is_refused_when_read() {
        // Found by benches/fuzz.sh: CPU 4294967295 made the decoder allocate per-CPU state for
        // every number up to it (103 GB).
        let d = tempfile::tempdir().unwrap();
        let meta = RawMeta {
            clock: "global".into(),
            page_size: 4096,
            header_page: String::new(),
            header_event: String::new(),
            formats: vec![],
            lost_stats: vec![],
            boot_id: None,
        };
        for (cpu, ok) in [(0, true), (8191, true), (8192, false), (u32::MAX, false)] {
            let p = d.path().join(format!("{cpu}.raw"));
            let cap = RawCapture {
                meta: meta.clone(),
                cpus: vec![(cpu, vec![])],
            };
            cap.write(&p).unwrap();
            match RawCapture::read(&p) {
                Ok(r) => assert!(ok && r.cpus[0].0 == cpu, "CPU {cpu} accepted"),
                Err(e) => {
                    assert!(!ok, "CPU {cpu}: {e:#}");
                    let e = format!("{e:#}");
                    assert!(
                        e.contains(&p.display().to_string()) && e.contains("8192"),
                        "{e}"
                    );
                }
            }
        }
    }
}
