//! The event model shared by the binary and the text path: a [`Schema`] of event types with
//! named fields, and [`Ev`], one decoded event whose fields are read through a [`FieldLoc`]
//! resolved once per analysis (not per event).

use super::format::{EventFormat, read_int};
use std::collections::HashMap;

/// Sentinel for "field not present on this text line".
pub const ABSENT: i64 = i64::MIN;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldLoc {
    /// Binary record: bytes at offset/size with sign.
    Raw {
        offset: usize,
        size: usize,
        signed: bool,
    },
    /// Text line: index into the parsed values.
    Slot(usize),
}

impl FieldLoc {
    #[inline]
    pub fn get(&self, ev: &Ev) -> Option<i64> {
        match *self {
            FieldLoc::Raw {
                offset,
                size,
                signed,
            } => read_int(ev.raw, offset, size, signed),
            FieldLoc::Slot(i) => ev.slots.get(i).copied().filter(|v| *v != ABSENT),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct EventType {
    /// Subsystem (`tlb`), unknown for text imports.
    pub system: Option<String>,
    pub name: String,
    pub fields: Vec<(String, FieldLoc)>,
    pub symbols: HashMap<String, Vec<(i64, String)>>,
}

impl EventType {
    pub fn full_name(&self) -> String {
        match &self.system {
            Some(s) => format!("{s}:{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// Event types of one capture, indexed by a dense type number.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    pub types: Vec<EventType>,
    /// Kernel event id -> type number (u32::MAX: not in the capture); dense for speed.
    by_kernel_id: Vec<u32>,
}

impl Schema {
    /// From the kernel's format files (binary path).
    pub fn from_formats(formats: &[EventFormat]) -> Schema {
        let mut s = Schema::default();
        for f in formats {
            let fields = f
                .fields
                .iter()
                .filter(|x| x.is_scalar())
                .map(|x| {
                    (
                        x.name.clone(),
                        FieldLoc::Raw {
                            offset: x.offset,
                            size: x.size,
                            signed: x.signed,
                        },
                    )
                })
                .collect();
            let ty = s.types.len() as u32;
            s.types.push(EventType {
                system: Some(f.system.clone()),
                name: f.name.clone(),
                fields,
                symbols: f.symbols.clone(),
            });
            if s.by_kernel_id.len() <= f.id as usize {
                s.by_kernel_id.resize(f.id as usize + 1, u32::MAX);
            }
            s.by_kernel_id[f.id as usize] = ty;
        }
        s
    }

    /// Type number for a kernel event id (first two payload bytes).
    #[inline]
    pub fn by_kernel_id(&self, id: u16) -> Option<u32> {
        self.by_kernel_id
            .get(id as usize)
            .copied()
            .filter(|t| *t != u32::MAX)
    }

    /// Find a type by `system:name` or plain `name`. A `system:` prefix must match when both
    /// sides know the system.
    pub fn find(&self, query: &str) -> Option<u32> {
        let (sys, name) = match query.split_once(':') {
            Some((s, n)) => (Some(s), n),
            None => (None, query),
        };
        self.types
            .iter()
            .position(|t| {
                t.name == name
                    && (sys.is_none() || t.system.is_none() || t.system.as_deref() == sys)
            })
            .map(|i| i as u32)
    }

    pub fn field(&self, ty: u32, name: &str) -> Option<FieldLoc> {
        self.types
            .get(ty as usize)?
            .fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, l)| *l)
    }

    /// Text path: get or add a type by name.
    pub fn intern_type(&mut self, name: &str) -> u32 {
        if let Some(i) = self.types.iter().position(|t| t.name == name) {
            return i as u32;
        }
        self.types.push(EventType {
            system: None,
            name: name.to_string(),
            fields: Vec::new(),
            symbols: HashMap::new(),
        });
        (self.types.len() - 1) as u32
    }

    /// Text path: slot index of a field of a type, adding it when new.
    pub fn intern_field(&mut self, ty: u32, name: &str) -> usize {
        let t = &mut self.types[ty as usize];
        if let Some(i) = t.fields.iter().position(|(n, _)| n == name) {
            return i;
        }
        let i = t.fields.len();
        t.fields.push((name.to_string(), FieldLoc::Slot(i)));
        i
    }

    /// Symbolic name of a value, e.g. reason 1 -> "remote shootdown".
    pub fn symbol(&self, ty: u32, field: &str, v: i64) -> Option<&str> {
        self.types
            .get(ty as usize)?
            .symbols
            .get(field)?
            .iter()
            .find(|(k, _)| *k == v)
            .map(|(_, n)| n.as_str())
    }
}

/// One decoded event. Binary events carry the record payload, text events parsed values.
#[derive(Debug, Clone, Copy)]
pub struct Ev<'a> {
    pub cpu: u32,
    pub ts: u64,
    pub ty: u32,
    pub pid: i32,
    pub raw: &'a [u8],
    pub slots: &'a [i64],
}
