//! A profile of one profiled run: each symbol's self and inclusive share of the run's samples,
//! kept compactly (the top symbols plus "other").
//!
//! *Self* is the share of samples whose innermost frame is the symbol; *inclusive* is the share
//! of samples with the symbol anywhere on the stack (a recursive symbol counts once per sample).
//! Shares are fractions of the run's samples, in 0..=1 (docs/profile.md).

use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// How many symbols a stored profile keeps (by self share and by inclusive share, the union).
pub const TOP_SYMBOLS: usize = 200;

/// The name of the self share of everything not kept.
pub const OTHER: &str = "[other]";

/// One symbol's shares of one run's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SymbolShare {
    pub symbol: String,
    /// Fraction of samples whose innermost frame is this symbol.
    pub self_share: f64,
    /// Fraction of samples with this symbol anywhere on the stack.
    pub inclusive_share: f64,
}

/// The shares of one profiled run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The sampled event, as perf names it (`cpu-clock`, `cycles`).
    pub event: String,
    /// Samples in the run.
    pub samples: u64,
    /// Kept symbols, by inclusive share then self share (largest first), then name.
    pub symbols: Vec<SymbolShare>,
    /// Self share of the symbols not kept.
    pub other_self: f64,
}

/// A profiled run as stored: which variant, its place among the experiment's profiled runs, what
/// it cost (wall time under perf, perf's own work included) and its shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfiledRun {
    pub variant: usize,
    pub seq: u32,
    pub wall_ns: i64,
    pub profile: Profile,
    /// Its call stacks, for the flame graph (absent in runs stored before them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacks: Option<Stacks>,
}

/// How many collapsed stacks a stored profile keeps (the rest counted as [`Stacks::other`]).
pub const TOP_STACKS: usize = 200;

/// The most frames a stored stack may hold (perf's default chain limit is 127).
pub const MAX_FRAMES: usize = 512;

/// One run's call stacks, compactly: the [`TOP_STACKS`] collapsed stacks with the most samples
/// (frames root first, joined by `;`, as Brendan Gregg's `stackcollapse` writes them) with their
/// sample counts, and the samples of every other stack.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stacks {
    /// `("root;caller;callee", samples)`, most samples first, then by stack.
    pub stacks: Vec<(String, u64)>,
    /// Samples of the stacks not kept.
    pub other: u64,
}

impl Stacks {
    /// Whether stacks that came from elsewhere (a store row, a guest) are ones
    /// [`Counts::stacks`] could have made: at most [`TOP_STACKS`] stacks of 1..=[`MAX_FRAMES`]
    /// non-empty frames of at most [`MAX_SYMBOL_LEN`] bytes, no more samples than `samples`.
    /// The error names the field.
    pub fn check(&self, samples: u64) -> Result<(), String> {
        if self.stacks.len() > TOP_STACKS {
            return Err(format!(
                "{} stacks, more than the {TOP_STACKS} a profile keeps",
                self.stacks.len()
            ));
        }
        let mut total = self.other;
        for (i, (stack, n)) in self.stacks.iter().enumerate() {
            let frames = stack.split(';').count();
            if frames > MAX_FRAMES {
                return Err(format!("stack {i} has {frames} frames (1..={MAX_FRAMES})"));
            }
            if let Some(f) = stack
                .split(';')
                .find(|f| f.is_empty() || f.len() > MAX_SYMBOL_LEN)
            {
                return Err(format!(
                    "stack {i} has a frame of {} bytes (1..={MAX_SYMBOL_LEN})",
                    f.len()
                ));
            }
            total = total.saturating_add(*n);
        }
        if total > samples {
            return Err(format!(
                "the stacks hold {total} samples, more than the run's {samples}"
            ));
        }
        Ok(())
    }

    /// Each frame path's (`a`, `a;b`, `a;b;c`, ...) share of the run's `samples`: the samples
    /// of the kept stacks that pass through it (a flame graph's frame widths).
    pub fn path_shares(&self, samples: u64) -> HashMap<String, f64> {
        let n = samples.max(1) as f64;
        let mut out: HashMap<String, f64> = HashMap::new();
        for (stack, count) in &self.stacks {
            let mut end = 0;
            for f in stack.split(';') {
                end += f.len();
                *out.entry(stack[..end].to_string()).or_default() += *count as f64 / n;
                end += 1;
            }
        }
        out
    }
}

/// The longest symbol name a profile sent by a guest may hold (bytes).
pub const MAX_SYMBOL_LEN: usize = 4096;

impl ProfiledRun {
    /// Whether a profiled run that came from elsewhere (a guest's results channel: untrusted)
    /// is one [`Counts::profile`] could have made: at most twice [`TOP_SYMBOLS`] symbols with
    /// names of at most [`MAX_SYMBOL_LEN`] bytes, shares in 0..=1, a self share at most the
    /// inclusive one, an event name and a cost. The error names the field.
    pub fn check(&self) -> Result<(), String> {
        let p = &self.profile;
        if p.event.is_empty() || p.event.len() > 256 || p.event.chars().any(char::is_control) {
            return Err(format!("event {:?} is not an event name", p.event));
        }
        if self.wall_ns < 0 {
            return Err(format!("wall_ns {} is negative", self.wall_ns));
        }
        if p.symbols.len() > 2 * TOP_SYMBOLS {
            return Err(format!(
                "{} symbols, more than the {} a profile keeps",
                p.symbols.len(),
                2 * TOP_SYMBOLS
            ));
        }
        let share = |x: f64, what: &dyn std::fmt::Display| {
            if (0.0..=1.0).contains(&x) {
                Ok(())
            } else {
                Err(format!("{what} is {x}, not a share of samples in 0..=1"))
            }
        };
        share(p.other_self, &"other_self")?;
        if let Some(st) = &self.stacks {
            st.check(p.samples).map_err(|e| format!("stacks: {e}"))?;
        }
        for (i, s) in p.symbols.iter().enumerate() {
            if s.symbol.is_empty() || s.symbol.len() > MAX_SYMBOL_LEN {
                return Err(format!(
                    "symbol {i} has a name of {} bytes (1..={MAX_SYMBOL_LEN})",
                    s.symbol.len()
                ));
            }
            share(s.self_share, &format_args!("symbol {i}'s self share"))?;
            share(
                s.inclusive_share,
                &format_args!("symbol {i}'s inclusive share"),
            )?;
            if s.self_share > s.inclusive_share {
                return Err(format!(
                    "symbol {i}'s self share {} exceeds its inclusive share {}",
                    s.self_share, s.inclusive_share
                ));
            }
        }
        Ok(())
    }
}

/// Sample counts per symbol while a run's samples are read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub samples: u64,
    /// symbol -> (self samples, inclusive samples)
    pub by_symbol: HashMap<String, (u64, u64)>,
    /// collapsed stack (frames root first, `;` between them) -> samples
    pub stacks: HashMap<String, u64>,
}

/// A frame's name in a collapsed stack: `;` (the separator) becomes `:`, an empty name
/// `[unknown]`.
fn frame_name(f: &str) -> std::borrow::Cow<'_, str> {
    if f.is_empty() {
        "[unknown]".into()
    } else if f.contains(';') {
        f.replace(';', ":").into()
    } else {
        f.into()
    }
}

impl Counts {
    /// Count one sample whose stack is `frames`, innermost first.
    pub fn add_stack<'a>(&mut self, frames: impl IntoIterator<Item = &'a str>) {
        let mut seen: Vec<&str> = Vec::new();
        let mut chain: Vec<&str> = Vec::new();
        for (i, f) in frames.into_iter().enumerate() {
            if chain.len() < MAX_FRAMES {
                chain.push(f);
            }
            if i == 0 {
                self.by_symbol.entry(f.to_string()).or_default().0 += 1;
            }
            if !seen.contains(&f) {
                seen.push(f);
                self.by_symbol.entry(f.to_string()).or_default().1 += 1;
            }
        }
        if !chain.is_empty() {
            let collapsed: Vec<_> = chain.iter().rev().map(|f| frame_name(f)).collect();
            *self.stacks.entry(collapsed.join(";")).or_default() += 1;
        }
        self.samples += 1;
    }

    /// The `top` stacks with the most samples (ties by stack, so the same counts always keep
    /// the same stacks), the rest counted as other.
    pub fn stacks(&self, top: usize) -> Stacks {
        let mut all: Vec<(&String, u64)> = self.stacks.iter().map(|(s, &n)| (s, n)).collect();
        all.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(y.0)));
        let other = all.iter().skip(top).map(|x| x.1).sum();
        Stacks {
            stacks: all
                .into_iter()
                .take(top)
                .map(|(s, n)| (s.clone(), n))
                .collect(),
            other,
        }
    }

    /// The shares, keeping the `top` symbols by self share and the `top` by inclusive share
    /// (ties broken by name, so the same counts always keep the same symbols).
    pub fn profile(&self, event: &str, top: usize) -> Profile {
        let n = self.samples.max(1) as f64;
        let mut all: Vec<(&String, u64, u64)> = self
            .by_symbol
            .iter()
            .map(|(s, &(a, b))| (s, a, b))
            .collect();
        let mut keep: HashSet<&String> = HashSet::new();
        all.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(y.0)));
        keep.extend(all.iter().take(top).map(|x| x.0));
        all.sort_by(|x, y| y.2.cmp(&x.2).then_with(|| x.0.cmp(y.0)));
        keep.extend(all.iter().take(top).map(|x| x.0));
        let (mut kept, dropped): (Vec<_>, Vec<_>) =
            all.into_iter().partition(|x| keep.contains(x.0));
        kept.sort_by(|x, y| y.2.cmp(&x.2).then(y.1.cmp(&x.1)).then_with(|| x.0.cmp(y.0)));
        let other: u64 = dropped.iter().map(|x| x.1).sum();
        Profile {
            event: event.to_string(),
            samples: self.samples,
            symbols: kept
                .into_iter()
                .map(|(s, a, b)| SymbolShare {
                    symbol: s.clone(),
                    self_share: a as f64 / n,
                    inclusive_share: b as f64 / n,
                })
                .collect(),
            other_self: other as f64 / n,
        }
    }
}

/// Which share a differential compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ShareKind {
    /// Samples in the symbol itself.
    #[serde(rename = "self")]
    SelfShare,
    /// Samples with the symbol on the stack.
    Inclusive,
}

impl ShareKind {
    pub fn name(self) -> &'static str {
        match self {
            ShareKind::SelfShare => "self",
            ShareKind::Inclusive => "inclusive",
        }
    }
}

impl Profile {
    /// The share of `kind` per kept symbol (self shares also name [`OTHER`]).
    pub fn shares(&self, kind: ShareKind) -> HashMap<&str, f64> {
        let mut out: HashMap<&str, f64> = self
            .symbols
            .iter()
            .map(|s| {
                let v = match kind {
                    ShareKind::SelfShare => s.self_share,
                    ShareKind::Inclusive => s.inclusive_share,
                };
                (s.symbol.as_str(), v)
            })
            .collect();
        if kind == ShareKind::SelfShare && self.other_self > 0.0 {
            out.insert(OTHER, self.other_self);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts() -> Counts {
        let mut c = Counts::default();
        for _ in 0..6 {
            c.add_stack(["hot", "main", "_start"]);
        }
        for _ in 0..3 {
            c.add_stack(["cold", "main", "_start"]);
        }
        c.add_stack(["rec", "rec", "rec", "main", "_start"]);
        c
    }

    #[test]
    fn self_and_inclusive_shares() {
        let p = counts().profile("cpu-clock", 100);
        assert_eq!(p.samples, 10);
        let s = p.shares(ShareKind::SelfShare);
        let i = p.shares(ShareKind::Inclusive);
        assert_eq!(s["hot"], 0.6);
        assert_eq!(s["cold"], 0.3);
        assert_eq!(s["main"], 0.0);
        assert_eq!(i["main"], 1.0);
        // A recursive symbol counts once per sample.
        assert_eq!(i["rec"], 0.1);
        assert_eq!(s["rec"], 0.1);
        assert_eq!(p.other_self, 0.0);
        assert!(!s.contains_key(OTHER));
        let self_sum: f64 = p.symbols.iter().map(|x| x.self_share).sum();
        assert!((self_sum - 1.0).abs() < 1e-12);
        // Largest inclusive first.
        assert_eq!(p.symbols[0].inclusive_share, 1.0);
    }

    #[test]
    fn a_profile_from_elsewhere_is_checked_field_by_field() {
        let good = ProfiledRun {
            variant: 0,
            seq: 3,
            wall_ns: 5,
            profile: counts().profile("cpu-clock", 100),
            stacks: Some(counts().stacks(2)),
        };
        assert_eq!(good.check(), Ok(()));
        let back: ProfiledRun =
            serde_json::from_str(&serde_json::to_string(&good).unwrap()).unwrap();
        assert_eq!(back, good);
        let bad = |f: &dyn Fn(&mut ProfiledRun), want: &str| {
            let mut r = good.clone();
            f(&mut r);
            let e = r.check().unwrap_err();
            assert!(e.contains(want), "{e}");
        };
        bad(
            &|r| r.profile.symbols[0].self_share = 1.5,
            "self share is 1.5",
        );
        bad(
            &|r| r.profile.symbols[1].inclusive_share = f64::NAN,
            "symbol 1",
        );
        bad(&|r| r.profile.other_self = -0.1, "other_self");
        bad(
            &|r| {
                let hot = r.profile.symbols.iter_mut().find(|s| s.symbol == "hot");
                hot.unwrap().inclusive_share = 0.5;
            },
            "exceeds",
        );
        bad(
            &|r| r.profile.symbols[0].symbol = "x".repeat(5000),
            "5000 bytes",
        );
        bad(&|r| r.profile.event = "a\nb".into(), "event");
        bad(&|r| r.wall_ns = -1, "negative");
        bad(
            &|r| {
                let s = r.profile.symbols[0].clone();
                r.profile.symbols = vec![s; 2 * TOP_SYMBOLS + 1];
            },
            "more than",
        );
    }

    #[test]
    fn stacks_are_collapsed_root_first_and_the_rest_is_other() {
        let mut c = counts();
        c.add_stack(["a;b", ""]);
        let all = c.stacks(10);
        assert_eq!(
            all.stacks,
            [
                ("_start;main;hot".to_string(), 6),
                ("_start;main;cold".to_string(), 3),
                ("[unknown];a:b".to_string(), 1),
                ("_start;main;rec;rec;rec".to_string(), 1),
            ]
        );
        assert_eq!((all.other, all.check(c.samples)), (0, Ok(())));
        let top = c.stacks(2);
        assert_eq!(top.stacks.len(), 2);
        assert_eq!(top.other, 2);
        let w = top.path_shares(c.samples);
        assert!((w["_start"] - 9.0 / 11.0).abs() < 1e-12);
        assert!((w["_start;main;hot"] - 6.0 / 11.0).abs() < 1e-12);
        assert!(!w.contains_key("_start;main;rec"));
        let bad = |s: Stacks, want: &str| {
            let e = s.check(c.samples).unwrap_err();
            assert!(e.contains(want), "{e}");
        };
        bad(
            Stacks {
                other: 20,
                ..top.clone()
            },
            "more than the run's 11",
        );
        bad(
            Stacks {
                stacks: vec![(vec!["f"; MAX_FRAMES + 1].join(";"), 1)],
                other: 0,
            },
            "frames",
        );
        bad(
            Stacks {
                stacks: vec![("x".into(), 0); TOP_STACKS + 1],
                other: 0,
            },
            "more than the 200",
        );
    }

    #[test]
    fn the_rest_goes_to_other() {
        // Keep 1 by self (hot) and 1 by inclusive (main or _start: a tie, by name: _start).
        let p = counts().profile("cpu-clock", 1);
        let names: Vec<&str> = p.symbols.iter().map(|s| s.symbol.as_str()).collect();
        assert_eq!(names, ["_start", "hot"]);
        assert!((p.other_self - 0.4).abs() < 1e-12);
        let s = p.shares(ShareKind::SelfShare);
        assert!((s[OTHER] - 0.4).abs() < 1e-12);
    }
}
