//! Reader for the kernel's binary ring-buffer pages, as `per_cpu/cpuN/trace_pipe_raw` returns
//! them: a page header (timestamp, commit = bytes of data + flag bits) followed by records, each
//! with a 32-bit header (type_len, time_delta) whose layout `events/header_event` describes.
//!
//! Record types (type_len): 1..=28 data of type_len*4 bytes; 0 data with the length in the next
//! word; padding (29: discarded record or end of page), time extend (30: adds a delta too large
//! for 27 bits), time stamp (31: absolute time). Flags in the commit word: bit 31 "events were
//! missed before this page", bit 30 "the number missed is stored after the data".

use super::format::{EventHeader, PageHeader};
use thiserror::Error;

const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const COMMIT_MASK: u64 = (1 << 27) - 1;
const TS_MSB: u64 = 0xf8 << 56;

#[derive(Debug, Error, PartialEq)]
pub enum RingError {
    #[error("page {page}: commit {commit} bytes exceeds the page's data area of {max} bytes")]
    Commit { page: u64, commit: u64, max: usize },
    #[error("page {page}: record at byte {at} runs past the committed data ({commit} bytes)")]
    Overrun { page: u64, at: usize, commit: usize },
    #[error("page {page}: page is {len} bytes, expected {expected}")]
    Short {
        page: u64,
        len: usize,
        expected: usize,
    },
}

/// Events lost before a page, from its commit flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Missed {
    #[default]
    None,
    /// The kernel flagged a loss but had no room to store how many.
    Unknown,
    Count(u64),
}

/// Per-page result of [`Ring::parse_page`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageStats {
    pub events: u64,
    pub missed: Missed,
}

/// A page's header as [`Ring::parse_page`] starts from.
struct PageStart<'a> {
    /// The page's timestamp: the first record's delta adds to it.
    ts: u64,
    /// The data area (after the header).
    data: &'a [u8],
    /// Bytes of records in `data`.
    commit: usize,
    missed: Missed,
}

/// Decoder configured from header_page / header_event and the sub-buffer size.
#[derive(Debug, Clone, Copy)]
pub struct Ring {
    pub page: PageHeader,
    pub hdr: EventHeader,
    pub page_size: usize,
}

impl Ring {
    pub fn new(page: PageHeader, hdr: EventHeader, page_size: usize) -> Ring {
        Ring {
            page,
            hdr,
            page_size,
        }
    }

    /// Decode one page, calling `f(timestamp, payload)` for every data record in order.
    /// `page_no` only labels errors.
    #[inline]
    pub fn parse_page<F: FnMut(u64, &[u8])>(
        &self,
        buf: &[u8],
        page_no: u64,
        mut f: F,
    ) -> Result<PageStats, RingError> {
        let PageStart {
            mut ts,
            data,
            commit,
            missed,
        } = self.page_start(buf, page_no)?;
        let mut stats = PageStats { events: 0, missed };
        let tl_mask = (1u32 << self.hdr.type_len_bits) - 1;
        let td_shift = self.hdr.type_len_bits;
        let (pad, ext, abs, maxd) = (
            self.hdr.padding,
            self.hdr.time_extend,
            self.hdr.time_stamp,
            self.hdr.data_max_type_len,
        );
        let overrun = |at| RingError::Overrun {
            page: page_no,
            at,
            commit,
        };
        let mut pos = 0usize;
        while pos + 4 <= commit {
            let h = u32::from_le_bytes(data[pos..pos + 4].try_into().unwrap());
            let type_len = h & tl_mask;
            let delta = (h >> td_shift) as u64;
            let word = |p: usize| -> Result<u32, RingError> {
                data.get(p..p + 4)
                    .filter(|_| p + 4 <= commit)
                    .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
                    .ok_or(overrun(p))
            };
            if type_len == 0 {
                // length in array[0] counts itself; payload follows it, 4-byte aligned
                let len = word(pos + 4)? as usize;
                let plen = len.saturating_sub(4);
                let start = pos + 8;
                let end = start + plen;
                if len < 4 || end > commit {
                    return Err(overrun(pos));
                }
                ts = ts.wrapping_add(delta);
                f(ts, &data[start..end]);
                stats.events += 1;
                pos = start + ((plen + 3) & !3);
            } else if type_len <= maxd {
                let start = pos + 4;
                let end = start + type_len as usize * 4;
                if end > commit {
                    return Err(overrun(pos));
                }
                ts = ts.wrapping_add(delta);
                f(ts, &data[start..end]);
                stats.events += 1;
                pos = end;
            } else if type_len == pad {
                if delta == 0 {
                    // null padding: the rest of the page is empty
                    break;
                }
                // a discarded record: array[0] is its length after the header
                let len = word(pos + 4)? as usize;
                pos += 4 + len.max(4);
            } else if type_len == ext {
                let hi = word(pos + 4)? as u64;
                ts = ts.wrapping_add((hi << self.hdr.time_delta_bits) + delta);
                pos += 8;
            } else if type_len == abs {
                let hi = word(pos + 4)? as u64;
                let mut t = (hi << self.hdr.time_delta_bits) | delta;
                // only the low 59 bits are stored; the top bits come from the current time
                if ts & TS_MSB != 0 {
                    t |= ts & TS_MSB;
                    if t < ts {
                        t = t.wrapping_add(1 << 59);
                    }
                }
                ts = t;
                pos += 8;
            } else {
                return Err(overrun(pos));
            }
        }
        Ok(stats)
    }

    /// Read a page's header: its length checked, the timestamp the first record's delta adds
    /// to, the committed data (checked against the data area) and the loss flagged before it.
    #[inline(always)]
    fn page_start<'a>(&self, buf: &'a [u8], page_no: u64) -> Result<PageStart<'a>, RingError> {
        if buf.len() != self.page_size {
            return Err(RingError::Short {
                page: page_no,
                len: buf.len(),
                expected: self.page_size,
            });
        }
        let ph = &self.page;
        let ts = u64::from_le_bytes(buf[ph.ts_offset..ph.ts_offset + 8].try_into().unwrap());
        let commit_raw = if ph.commit_size == 8 {
            u64::from_le_bytes(
                buf[ph.commit_offset..ph.commit_offset + 8]
                    .try_into()
                    .unwrap(),
            )
        } else {
            u32::from_le_bytes(
                buf[ph.commit_offset..ph.commit_offset + 4]
                    .try_into()
                    .unwrap(),
            ) as u64
        };
        let data = &buf[ph.data_offset..];
        let commit = commit_raw & COMMIT_MASK;
        if commit as usize > data.len() {
            return Err(RingError::Commit {
                page: page_no,
                commit,
                max: data.len(),
            });
        }
        let commit = commit as usize;
        let mut missed = Missed::None;
        if commit_raw & MISSED_EVENTS != 0 {
            missed = Missed::Unknown;
            if commit_raw & MISSED_STORED != 0 {
                let n = ph.commit_size;
                if let Some(b) = data.get(commit..commit + n) {
                    let v = if n == 8 {
                        u64::from_le_bytes(b.try_into().unwrap())
                    } else {
                        u32::from_le_bytes(b.try_into().unwrap()) as u64
                    };
                    missed = Missed::Count(v);
                }
            }
        }
        Ok(PageStart {
            ts,
            data,
            commit,
            missed,
        })
    }
}

/// Per-CPU lost-event tally from page flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Lost {
    /// Sum of the stored counts.
    pub counted: u64,
    /// Pages that flagged a loss without a count.
    pub flagged_uncounted: u64,
}

impl Lost {
    pub fn add(&mut self, m: Missed) {
        match m {
            Missed::None => {}
            Missed::Unknown => self.flagged_uncounted += 1,
            Missed::Count(n) => self.counted += n,
        }
    }
    pub fn any(&self) -> bool {
        self.counted > 0 || self.flagged_uncounted > 0
    }
}

/// Build pages for tests and benchmarks: the inverse of [`Ring::parse_page`] for the standard
/// x86-64 layout (8-byte timestamp and commit, data at 16, 5/27-bit record headers).
pub mod build {
    /// Accumulates records into pages of `page_size` bytes.
    pub struct PageBuilder {
        page_size: usize,
        pub pages: Vec<u8>,
        cur: Vec<u8>,
        page_ts: u64,
        last_ts: u64,
        open: bool,
    }

    impl PageBuilder {
        pub fn new(page_size: usize) -> PageBuilder {
            PageBuilder {
                page_size,
                pages: Vec::new(),
                cur: Vec::new(),
                page_ts: 0,
                last_ts: 0,
                open: false,
            }
        }
        fn cap(&self) -> usize {
            self.page_size - 16
        }
        /// Append a record with absolute time `ts` (>= previous) and a payload (multiple of 4
        /// bytes for the compact form; other lengths use the type_len 0 form).
        pub fn push(&mut self, ts: u64, payload: &[u8]) {
            let compact =
                payload.len().is_multiple_of(4) && payload.len() / 4 <= 28 && !payload.is_empty();
            let need = if compact {
                4 + payload.len()
            } else {
                8 + payload.len().div_ceil(4) * 4
            };
            let mut delta = ts - if self.open { self.last_ts } else { ts };
            let ext = delta >= (1 << 27);
            let total = need + if ext { 8 } else { 0 };
            if !self.open || self.cur.len() + total > self.cap() {
                self.flush_page(0);
                self.open = true;
                self.page_ts = ts;
                self.last_ts = ts;
                delta = 0;
            }
            if delta >= (1 << 27) {
                let h: u32 = 30 | (((delta & ((1 << 27) - 1)) as u32) << 5);
                self.cur.extend_from_slice(&h.to_le_bytes());
                self.cur
                    .extend_from_slice(&((delta >> 27) as u32).to_le_bytes());
                delta = 0;
            }
            if compact {
                let h: u32 = (payload.len() / 4) as u32 | ((delta as u32) << 5);
                self.cur.extend_from_slice(&h.to_le_bytes());
                self.cur.extend_from_slice(payload);
            } else {
                let h: u32 = (delta as u32) << 5;
                self.cur.extend_from_slice(&h.to_le_bytes());
                self.cur
                    .extend_from_slice(&((payload.len() + 4) as u32).to_le_bytes());
                self.cur.extend_from_slice(payload);
                self.cur.resize(
                    self.cur.len() + (payload.len().div_ceil(4) * 4 - payload.len()),
                    0,
                );
            }
            self.last_ts = ts;
        }
        /// Close the current page; `flags` are or-ed into the commit word (missed-event bits).
        pub fn flush_page(&mut self, flags: u64) {
            if !self.open {
                return;
            }
            let start = self.pages.len();
            self.pages.extend_from_slice(&self.page_ts.to_le_bytes());
            self.pages
                .extend_from_slice(&((self.cur.len() as u64) | flags).to_le_bytes());
            self.pages.extend_from_slice(&self.cur);
            self.pages.resize(start + self.page_size, 0);
            self.cur.clear();
            self.open = false;
        }
        pub fn finish(mut self) -> Vec<u8> {
            self.flush_page(0);
            self.pages
        }
    }
}

#[cfg(test)]
mod tests {
    use super::build::PageBuilder;
    use super::*;

    fn ring() -> Ring {
        let page = PageHeader {
            ts_offset: 0,
            ts_size: 8,
            commit_offset: 8,
            commit_size: 8,
            data_offset: 16,
            data_size: 4080,
        };
        let hdr = EventHeader {
            type_len_bits: 5,
            time_delta_bits: 27,
            padding: 29,
            time_extend: 30,
            time_stamp: 31,
            data_max_type_len: 28,
        };
        Ring::new(page, hdr, 4096)
    }

    fn collect(r: &Ring, pages: &[u8]) -> (Vec<(u64, Vec<u8>)>, Vec<PageStats>) {
        let mut out = Vec::new();
        let mut st = Vec::new();
        for (i, p) in pages.chunks(4096).enumerate() {
            st.push(
                r.parse_page(p, i as u64, |ts, d| out.push((ts, d.to_vec())))
                    .unwrap(),
            );
        }
        (out, st)
    }

    #[test]
    fn round_trip_with_extends_and_long_records() {
        let mut b = PageBuilder::new(4096);
        let mut want = Vec::new();
        let mut ts = 1_000_000u64;
        for i in 0..2000u64 {
            // every 100th record is far in time (time extend) and every 7th is odd-sized (type_len 0)
            ts += if i % 100 == 0 { 1 << 33 } else { 3 + i % 5 };
            let len = if i % 7 == 0 {
                130
            } else {
                8 + 4 * (i as usize % 4)
            };
            let payload: Vec<u8> = (0..len).map(|k| (i as usize + k) as u8).collect();
            b.push(ts, &payload);
            want.push((ts, payload));
        }
        let pages = b.finish();
        assert!(pages.len() > 4096 * 10);
        let (got, st) = collect(&ring(), &pages);
        let got: Vec<(u64, Vec<u8>)> = got
            .into_iter()
            .zip(want.iter())
            .map(|((t, d), (_, w))| (t, d[..w.len()].to_vec()))
            .collect();
        assert_eq!(got, want);
        assert_eq!(st.iter().map(|s| s.events).sum::<u64>(), 2000);
    }

    #[test]
    fn padding_absolute_and_missed() {
        // hand-made page: data(2 words), discarded record (padding, len 8), absolute ts, data,
        // then null padding.
        let mut d = Vec::new();
        d.extend_from_slice(&(2u32 | (5 << 5)).to_le_bytes());
        d.extend_from_slice(&[1, 0, 0, 0, 9, 9, 9, 9]);
        d.extend_from_slice(&(29u32 | (7 << 5)).to_le_bytes());
        d.extend_from_slice(&8u32.to_le_bytes());
        d.extend_from_slice(&[0; 4]);
        let abs: u64 = 5_000_000_000;
        d.extend_from_slice(&(31u32 | (((abs & ((1 << 27) - 1)) as u32) << 5)).to_le_bytes());
        d.extend_from_slice(&((abs >> 27) as u32).to_le_bytes());
        d.extend_from_slice(&(1u32 | (3 << 5)).to_le_bytes());
        d.extend_from_slice(&[2, 0, 0, 0]);
        let commit = d.len() as u64;
        d.extend_from_slice(&(29u32).to_le_bytes()); // null padding past commit is ignored anyway
        let mut page = Vec::new();
        page.extend_from_slice(&100u64.to_le_bytes());
        page.extend_from_slice(&(commit | MISSED_EVENTS | MISSED_STORED).to_le_bytes());
        page.extend_from_slice(&d[..commit as usize]);
        page.extend_from_slice(&42u64.to_le_bytes()); // stored missed count
        page.resize(4096, 0);
        let (got, st) = collect(&ring(), &page);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, 105);
        assert_eq!(got[1].0, abs + 3);
        assert_eq!(st[0].missed, Missed::Count(42));
    }

    #[test]
    fn corrupt_pages_are_errors() {
        let r = ring();
        let mut page = vec![0u8; 4096];
        page[8..16].copy_from_slice(&5000u64.to_le_bytes());
        assert!(matches!(
            r.parse_page(&page, 3, |_, _| {}),
            Err(RingError::Commit { page: 3, .. })
        ));
        page[8..16].copy_from_slice(&8u64.to_le_bytes());
        page[16..20].copy_from_slice(&20u32.to_le_bytes()); // claims 80 bytes
        assert!(matches!(
            r.parse_page(&page, 0, |_, _| {}),
            Err(RingError::Overrun { .. })
        ));
        assert!(matches!(
            r.parse_page(&page[..100], 0, |_, _| {}),
            Err(RingError::Short { .. })
        ));
    }
}
