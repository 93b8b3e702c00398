//! Event descriptions from tracefs: `events/header_page`, `events/header_event` and each event's
//! `format` file. Pure parsing (strings in, structs out); reading the files is `instance`'s job.

use std::collections::HashMap;
use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum FormatError {
    #[error("{what}: line {line}: {msg}")]
    Line {
        what: String,
        line: usize,
        msg: String,
    },
    #[error("{what}: {msg}")]
    Missing { what: String, msg: String },
}

/// One field of an event record.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Field {
    pub name: String,
    /// C type as written in the format file (`unsigned long`, `char[16]`, `__data_loc char[]`).
    pub ctype: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    /// True for `name[N]` arrays and `__data_loc`/`__rel_loc` fields: not readable as a number.
    pub is_array: bool,
    /// The print format shows this field in hex without a `0x` prefix (`%llx`): text import
    /// must read bare digits as hex.
    pub print_hex: bool,
}

impl Field {
    /// Whether [`read_int`] can read this field as one integer.
    pub fn is_scalar(&self) -> bool {
        !self.is_array && matches!(self.size, 1 | 2 | 4 | 8)
    }
}

/// A parsed `events/<system>/<name>/format` file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EventFormat {
    pub system: String,
    pub name: String,
    pub id: u16,
    /// All fields, common_* first, in file order.
    pub fields: Vec<Field>,
    /// `__print_symbolic(REC->field, {value, "name"}, ...)` tables, by field name.
    pub symbols: HashMap<String, Vec<(i64, String)>>,
    pub print_fmt: String,
}

impl EventFormat {
    pub fn full_name(&self) -> String {
        format!("{}:{}", self.system, self.name)
    }
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
    /// Size of the fixed part of the record (end of the last field).
    pub fn min_size(&self) -> usize {
        self.fields
            .iter()
            .map(|f| f.offset + f.size)
            .max()
            .unwrap_or(0)
    }
}

/// Parse one event `format` file. `system` is the directory above the event (the file itself
/// does not name it).
pub fn parse_event_format(system: &str, text: &str) -> Result<EventFormat, FormatError> {
    let what = format!("format of event {system}:?");
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    let mut print_fmt = String::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let err = |msg: String| FormatError::Line {
            what: what.clone(),
            line: i + 1,
            msg,
        };
        if let Some(v) = line.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("ID:") {
            id = Some(
                v.trim()
                    .parse::<u16>()
                    .map_err(|_| err(format!("ID {:?} is not a number 0..65535", v.trim())))?,
            );
        } else if line.starts_with("field:") {
            fields.push(parse_field_line(line).map_err(err)?);
        } else if let Some(v) = line.strip_prefix("print fmt:") {
            print_fmt = v.trim().to_string();
        }
    }
    let name = name.ok_or_else(|| FormatError::Missing {
        what: what.clone(),
        msg: "no `name:` line".into(),
    })?;
    let id = id.ok_or_else(|| FormatError::Missing {
        what: what.clone(),
        msg: "no `ID:` line".into(),
    })?;
    if fields.is_empty() {
        return Err(FormatError::Missing {
            what,
            msg: "no `field:` lines".into(),
        });
    }
    let symbols = parse_print_symbolic(&print_fmt);
    for h in hex_fields(&print_fmt) {
        if let Some(f) = fields.iter_mut().find(|f| f.name == h) {
            f.print_hex = true;
        }
    }
    Ok(EventFormat {
        system: system.to_string(),
        name,
        id,
        fields,
        symbols,
        print_fmt,
    })
}

/// `field:unsigned long pages;\toffset:16;\tsize:8;\tsigned:0;`
fn parse_field_line(line: &str) -> Result<Field, String> {
    let mut decl = None;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for part in line.split(';') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("field:") {
            decl = Some(v.trim().to_string());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = Some(
                v.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("offset {v:?} is not a number"))?,
            );
        } else if let Some(v) = part.strip_prefix("size:") {
            size = Some(
                v.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("size {v:?} is not a number"))?,
            );
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let decl = decl.ok_or("field line without a declaration")?;
    let dynamic = decl.contains("__data_loc") || decl.contains("__rel_loc");
    let offset = offset.ok_or("field line without offset:")?;
    let size = size.ok_or("field line without size:")?;
    // The name is the last identifier of the declaration, before any [N].
    let (before_bracket, is_array) = match decl.find('[') {
        // `__data_loc char[] name`: the name follows the brackets
        _ if dynamic => (decl.as_str(), true),
        Some(p) => (&decl[..p], true),
        None => (decl.as_str(), false),
    };
    let name_start = before_bracket
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        // past that character (it may take more than one byte)
        .map(|p| p + before_bracket[p..].chars().next().map_or(1, char::len_utf8))
        .unwrap_or(0);
    let name = before_bracket[name_start..].to_string();
    if name.is_empty() {
        return Err(format!("no field name in {decl:?}"));
    }
    let ctype = format!(
        "{}{}",
        before_bracket[..name_start].trim(),
        if is_array { "[]" } else { "" }
    );
    Ok(Field {
        name,
        ctype,
        offset,
        size,
        signed,
        is_array,
        print_hex: false,
    })
}

/// Read a scalar field from a record payload (little-endian host); `None` if out of bounds.
#[inline]
pub fn read_int(data: &[u8], offset: usize, size: usize, signed: bool) -> Option<i64> {
    let b = data.get(offset..offset + size)?;
    Some(match (size, signed) {
        (1, false) => b[0] as i64,
        (1, true) => b[0] as i8 as i64,
        (2, false) => u16::from_le_bytes([b[0], b[1]]) as i64,
        (2, true) => i16::from_le_bytes([b[0], b[1]]) as i64,
        (4, false) => u32::from_le_bytes(b.try_into().ok()?) as i64,
        (4, true) => i32::from_le_bytes(b.try_into().ok()?) as i64,
        (8, _) => i64::from_le_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

/// Layout of a ring-buffer page from `events/header_page`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PageHeader {
    pub ts_offset: usize,
    pub ts_size: usize,
    pub commit_offset: usize,
    pub commit_size: usize,
    pub data_offset: usize,
    /// Size of the data area as the kernel printed it (page size minus header), for the default
    /// sub-buffer size. The actual page size comes from `buffer_subbuf_size_kb`.
    pub data_size: usize,
}

pub fn parse_header_page(text: &str) -> Result<PageHeader, FormatError> {
    let mut ts = None;
    let mut commit = None;
    let mut data = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with("field:") {
            continue;
        }
        let f = parse_field_line(line).map_err(|msg| FormatError::Line {
            what: "events/header_page".into(),
            line: i + 1,
            msg,
        })?;
        match f.name.as_str() {
            "timestamp" => ts = Some(f),
            "commit" => commit = Some(f),
            "data" => data = Some(f),
            _ => {}
        }
    }
    let miss = |n: &str| FormatError::Missing {
        what: "events/header_page".into(),
        msg: format!("no `{n}` field"),
    };
    let ts = ts.ok_or_else(|| miss("timestamp"))?;
    let commit = commit.ok_or_else(|| miss("commit"))?;
    let data = data.ok_or_else(|| miss("data"))?;
    if ts.size != 8 || !(commit.size == 4 || commit.size == 8) {
        return Err(FormatError::Missing {
            what: "events/header_page".into(),
            msg: format!(
                "unsupported sizes: timestamp {} (expected 8), commit {} (expected 4 or 8)",
                ts.size, commit.size
            ),
        });
    }
    Ok(PageHeader {
        ts_offset: ts.offset,
        ts_size: ts.size,
        commit_offset: commit.offset,
        commit_size: commit.size,
        data_offset: data.offset,
        data_size: data.size,
    })
}

/// Record header encoding from `events/header_event`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EventHeader {
    pub type_len_bits: u32,
    pub time_delta_bits: u32,
    pub padding: u32,
    pub time_extend: u32,
    pub time_stamp: u32,
    pub data_max_type_len: u32,
}

pub fn parse_header_event(text: &str) -> Result<EventHeader, FormatError> {
    let mut h = EventHeader {
        type_len_bits: 0,
        time_delta_bits: 0,
        padding: 0,
        time_extend: 0,
        time_stamp: 0,
        data_max_type_len: 0,
    };
    let num = |s: &str, line: usize| -> Result<u32, FormatError> {
        let digits: String = s.chars().filter(|c| c.is_ascii_digit()).collect();
        digits.parse::<u32>().map_err(|_| FormatError::Line {
            what: "events/header_event".into(),
            line,
            msg: format!("expected a number in {s:?}"),
        })
    };
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("data max type_len") {
            h.data_max_type_len = num(v, i + 1)?;
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let k = k.trim();
        let v = v.trim();
        match k {
            "type_len" => h.type_len_bits = num(v, i + 1)?,
            "time_delta" => h.time_delta_bits = num(v, i + 1)?,
            "padding" => h.padding = num(v, i + 1)?,
            "time_extend" => h.time_extend = num(v, i + 1)?,
            "time_stamp" => h.time_stamp = num(v, i + 1)?,
            _ => {}
        }
    }
    if h.type_len_bits + h.time_delta_bits != 32
        || h.data_max_type_len == 0
        || h.padding == 0
        || h.time_extend == 0
        || h.time_stamp == 0
    {
        return Err(FormatError::Missing {
            what: "events/header_event".into(),
            msg: format!(
                "unsupported record header {h:?} (expected type_len 5 + time_delta 27 bits, padding/time_extend/time_stamp types)"
            ),
        });
    }
    Ok(h)
}

/// `__print_symbolic(REC->reason, { 0, "flush on task switch" }, ...)` -> reason: [(0, ...)].
pub fn parse_print_symbolic(print_fmt: &str) -> HashMap<String, Vec<(i64, String)>> {
    let mut out = HashMap::new();
    let mut rest = print_fmt;
    while let Some(p) = rest.find("__print_symbolic(") {
        rest = &rest[p + "__print_symbolic(".len()..];
        let Some(comma) = rest.find(',') else { break };
        let arg = &rest[..comma];
        let Some(field) = rec_field(arg) else {
            continue;
        };
        let mut table = Vec::new();
        let mut body = &rest[comma + 1..];
        loop {
            let t = body.trim_start();
            if !t.starts_with('{') {
                break;
            }
            let Some(close) = t.find('}') else { break };
            let inner = &t[1..close];
            if let Some((v, name)) = inner.split_once(',') {
                let name = name.trim().trim_matches('"').to_string();
                if let Some(v) = parse_c_int(v.trim()) {
                    table.push((v, name));
                }
            }
            body = t[close + 1..].trim_start();
            match body.strip_prefix(',') {
                Some(b) => body = b,
                None => break,
            }
        }
        if !table.is_empty() {
            out.insert(field, table);
        }
        rest = body;
    }
    out
}

/// The field a C expression reads, if it reads exactly one: `REC->x`, `((unsigned long)(REC->x))`.
fn rec_field(expr: &str) -> Option<String> {
    let p = expr.find("REC->")?;
    let tail = &expr[p + 5..];
    if tail.contains("REC->") {
        return None;
    }
    let end = tail
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(tail.len());
    Some(tail[..end].to_string())
}

/// Parse a C integer literal (decimal, 0x hex, negative, with u/l suffixes).
pub fn parse_c_int(s: &str) -> Option<i64> {
    let s = s.trim().trim_end_matches(['u', 'U', 'l', 'L']);
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()? as i64
    } else {
        s.parse::<u64>().ok()? as i64
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Fields printed with a bare hex conversion (`%x`, `%lx`, `%llx` not preceded by `0x` and without
/// the `#` flag): text output shows them as hex digits without a prefix.
pub fn hex_fields(print_fmt: &str) -> Vec<String> {
    let Some(fmt_end) = closing_quote(print_fmt) else {
        return Vec::new();
    };
    let fmt = &print_fmt[1..fmt_end];
    let args = split_top_level(&print_fmt[fmt_end + 1..]);
    let convs = conversions(fmt);
    let mut out = Vec::new();
    for (i, (conv, prefixed)) in convs.iter().enumerate() {
        if *conv == 'x'
            && !prefixed
            && let Some(f) = args.get(i).and_then(|a| rec_field(a))
        {
            out.push(f);
        }
    }
    out
}

fn closing_quote(s: &str) -> Option<usize> {
    if !s.starts_with('"') {
        return None;
    }
    let b = s.as_bytes();
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Arguments after the format string, split at commas outside parentheses, braces and quotes.
fn split_top_level(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut in_str = false;
    let mut cur = String::new();
    let mut prev = '\0';
    for c in s.chars() {
        if in_str {
            cur.push(c);
            if c == '"' && prev != '\\' {
                in_str = false;
            }
        } else {
            match c {
                '"' => {
                    in_str = true;
                    cur.push(c)
                }
                '(' | '{' | '[' => {
                    depth += 1;
                    cur.push(c)
                }
                ')' | '}' | ']' => {
                    depth -= 1;
                    cur.push(c)
                }
                ',' if depth == 0 => {
                    if !cur.trim().is_empty() {
                        out.push(cur.trim().to_string());
                    }
                    cur.clear();
                }
                _ => cur.push(c),
            }
        }
        prev = c;
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// printf conversions in order: (conversion char, preceded by "0x" or with '#').
fn conversions(fmt: &str) -> Vec<(char, bool)> {
    let b: Vec<char> = fmt.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != '%' {
            i += 1;
            continue;
        }
        if b.get(i + 1) == Some(&'%') {
            i += 2;
            continue;
        }
        let prefixed = i >= 2 && b[i - 2] == '0' && (b[i - 1] == 'x' || b[i - 1] == 'X');
        let mut j = i + 1;
        let mut alt = false;
        while j < b.len() && "-+ #0".contains(b[j]) {
            alt |= b[j] == '#';
            j += 1;
        }
        while j < b.len() && (b[j].is_ascii_digit() || b[j] == '.' || b[j] == '*') {
            j += 1;
        }
        while j < b.len() && "hlLqjzt".contains(b[j]) {
            j += 1;
        }
        if j < b.len() {
            let c = if b[j] == 'X' { 'x' } else { b[j] };
            out.push((c, prefixed || alt));
            if c == 'p' {
                // %pS, %pI4 ...: the extension letters belong to the conversion
                while j + 1 < b.len() && b[j + 1].is_ascii_alphanumeric() {
                    j += 1;
                }
            }
        }
        i = j + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TLB: &str = "name: tlb_flush\nID: 188\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:int reason;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:unsigned long pages;\toffset:16;\tsize:8;\tsigned:0;\n\nprint fmt: \"pages:%ld reason:%s (%d)\", REC->pages, __print_symbolic(REC->reason, { 0, \"flush on task switch\" }, { 1, \"remote shootdown\" }, { 2, \"local shootdown\" }, { 3, \"local MM shootdown\" }, { 4, \"remote IPI send\" }, { 5, \"remote wrong CPU\" }), REC->reason\n";

    #[test]
    fn tlb_flush_format() {
        let f = parse_event_format("tlb", TLB).unwrap();
        assert_eq!(f.full_name(), "tlb:tlb_flush");
        assert_eq!(f.id, 188);
        let pages = f.field("pages").unwrap();
        assert_eq!((pages.offset, pages.size, pages.signed), (16, 8, false));
        let reason = f.field("reason").unwrap();
        assert_eq!(
            (
                reason.offset,
                reason.size,
                reason.signed,
                reason.ctype.as_str()
            ),
            (8, 4, true, "int")
        );
        let sym = &f.symbols["reason"];
        assert_eq!(sym.len(), 6);
        assert_eq!(sym[1], (1, "remote shootdown".to_string()));
        assert_eq!(sym[5], (5, "remote wrong CPU".to_string()));
        assert!(!pages.print_hex);
        assert_eq!(f.min_size(), 24);
    }

    #[test]
    fn arrays_and_hex() {
        let text = "name: x\nID: 7\nformat:\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:__data_loc char[] name;\toffset:24;\tsize:4;\tsigned:0;\n\tfield:u64 xfeatures;\toffset:32;\tsize:8;\tsigned:0;\n\tfield:u64 addr;\toffset:40;\tsize:8;\tsigned:0;\nprint fmt: \"c=%s x: %llx a=0x%lx %p\", REC->comm, REC->xfeatures, REC->addr, REC->comm\n";
        let f = parse_event_format("s", text).unwrap();
        assert!(f.field("comm").unwrap().is_array);
        assert!(f.field("name").unwrap().is_array);
        assert!(f.field("xfeatures").unwrap().print_hex);
        assert!(!f.field("addr").unwrap().print_hex);
    }

    #[test]
    fn a_multibyte_character_before_a_field_name_is_no_panic() {
        // Found by benches/fuzz.sh (raw captures): the name started inside the character.
        let text =
            "name: x\nID: 7\nformat:\n\tfield:int \u{e9}\u{e9}x;\toffset:8;\tsize:4;\tsigned:1;\n";
        let f = parse_event_format("s", text).unwrap();
        assert!(f.field("x").is_some());
        let text = "name: x\nID: 7\nformat:\n\tfield:int \u{e9};\toffset:8;\tsize:4;\tsigned:1;\n";
        assert!(parse_event_format("s", text).is_err());
    }

    #[test]
    fn bad_format_names_line() {
        let e = parse_event_format("s", "name: x\nID: abc\n").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = parse_event_format(
            "s",
            "name: x\nID: 3\nfield:int a;\toffset:zz;\tsize:4;\tsigned:1;\n",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("line 3") && e.to_string().contains("offset"),
            "{e}"
        );
    }

    #[test]
    fn headers() {
        let hp = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        let p = parse_header_page(hp).unwrap();
        assert_eq!(
            (p.commit_offset, p.commit_size, p.data_offset, p.data_size),
            (8, 8, 16, 4080)
        );
        let he = "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";
        let h = parse_header_event(he).unwrap();
        assert_eq!(
            (
                h.type_len_bits,
                h.time_delta_bits,
                h.padding,
                h.time_extend,
                h.time_stamp,
                h.data_max_type_len
            ),
            (5, 27, 29, 30, 31, 28)
        );
    }

    #[test]
    fn ints() {
        let d = [0xffu8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0];
        assert_eq!(read_int(&d, 0, 8, false), Some(-1));
        assert_eq!(read_int(&d, 0, 4, false), Some(0xffff_ffff));
        assert_eq!(read_int(&d, 0, 4, true), Some(-1));
        assert_eq!(read_int(&d, 8, 4, true), Some(2));
        assert_eq!(read_int(&d, 10, 4, true), None);
        assert_eq!(parse_c_int("0x10"), Some(16));
        assert_eq!(parse_c_int("-3"), Some(-3));
    }
}
