//! Workload parameters: `NAME=VALUE` words checked against a workload's declarations.
//!
//! Values never contain a comma (the runner's `@name:k=v,k=v` spelling and `-L k=a,b` lists
//! split on commas); lists inside a value are joined with `+` (`sizes=1:57+33:3`).

use serde::Serialize;
use std::collections::BTreeMap;

/// What a parameter accepts.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// One of these words.
    Choice(&'static [&'static str]),
    /// An integer from `min` to `max`.
    Int { min: u64, max: u64 },
    /// A size in bytes: `N`, `NK`, `NM`, `NG` (powers of 1024), from `min` to `max` bytes.
    Size { min: u64, max: u64 },
    /// A size as above, or a percentage `N%` (1..=100) of something the workload names.
    SizeOrPercent { min: u64, max: u64 },
    /// A file-system path (existence is checked when the workload runs).
    Path,
    /// Checked by the workload's own parser; the text says what is allowed.
    Custom {
        check: fn(&str) -> Result<(), String>,
        allowed: &'static str,
    },
}

impl Kind {
    /// What is allowed, for messages and `workload show`.
    pub fn allowed(&self) -> String {
        match self {
            Kind::Choice(c) => format!("one of {}", c.join(", ")),
            Kind::Int { min, max } => format!("an integer from {min} to {max}"),
            Kind::Size { min, max } => format!(
                "a size from {} to {} (suffix K, M or G)",
                show_size(*min),
                show_size(*max)
            ),
            Kind::SizeOrPercent { min, max } => format!(
                "a size from {} to {} (suffix K, M or G) or a percentage N%",
                show_size(*min),
                show_size(*max)
            ),
            Kind::Path => "a path".into(),
            Kind::Custom { allowed, .. } => allowed.to_string(),
        }
    }

    fn expected(&self) -> String {
        format!("expected {}", self.allowed())
    }

    /// Ok, or why not ("expected ...").
    fn check(&self, v: &str) -> Result<(), String> {
        match self {
            Kind::Choice(c) => {
                if c.contains(&v) {
                    Ok(())
                } else {
                    Err(self.expected())
                }
            }
            Kind::Int { min, max } => match v.parse::<u64>() {
                Ok(n) if (*min..=*max).contains(&n) => Ok(()),
                _ => Err(self.expected()),
            },
            Kind::Size { min, max } => match parse_size(v) {
                Some(n) if (*min..=*max).contains(&n) => Ok(()),
                _ => Err(self.expected()),
            },
            Kind::SizeOrPercent { min, max } => {
                if let Some(p) = v.strip_suffix('%') {
                    return match p.parse::<u64>() {
                        Ok(n) if (1..=100).contains(&n) => Ok(()),
                        _ => Err(self.expected()),
                    };
                }
                match parse_size(v) {
                    Some(n) if (*min..=*max).contains(&n) => Ok(()),
                    _ => Err(self.expected()),
                }
            }
            Kind::Path => {
                if v.is_empty() {
                    Err(self.expected())
                } else {
                    Ok(())
                }
            }
            Kind::Custom { check, allowed } => {
                check(v).map_err(|e| format!("{e}; expected {allowed}"))
            }
        }
    }
}

/// One declared parameter.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    pub name: &'static str,
    pub default: &'static str,
    pub kind: Kind,
    pub help: &'static str,
}

/// Every workload takes `seed`.
pub const SEED: ParamSpec = ParamSpec {
    name: "seed",
    default: "0",
    kind: Kind::Int {
        min: 0,
        max: u64::MAX,
    },
    help: "seed of every random choice (same seed, same access/operation sequence)",
};

/// `1024`, `4K`, `256M`, `2G` (powers of 1024) -> bytes.
pub fn parse_size(s: &str) -> Option<u64> {
    let (num, mul) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1u64 << 10),
        b'm' | b'M' => (&s[..s.len() - 1], 1 << 20),
        b'g' | b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    num.parse::<u64>().ok()?.checked_mul(mul)
}

/// Bytes in the shortest exact K/M/G form.
pub fn show_size(n: u64) -> String {
    for (suf, sh) in [("G", 30), ("M", 20), ("K", 10)] {
        if n >= 1 << sh && n.is_multiple_of(1 << sh) {
            return format!("{}{suf}", n >> sh);
        }
    }
    n.to_string()
}

/// Checked values of every parameter of one workload (defaults filled in).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Params {
    pub workload: &'static str,
    values: BTreeMap<&'static str, String>,
}

/// A parameter error, worded for the user (the caller makes it a usage error).
pub fn parse(
    workload: &'static str,
    specs: &[ParamSpec],
    words: &[String],
) -> Result<Params, String> {
    let mut values = BTreeMap::new();
    let names = || specs.iter().map(|s| s.name).collect::<Vec<_>>().join(", ");
    for w in words {
        let Some((k, v)) = w.split_once('=') else {
            return Err(format!(
                "{workload}: {w:?}: expected NAME=VALUE (parameters: {})",
                names()
            ));
        };
        let Some(spec) = specs.iter().find(|s| s.name == k) else {
            return Err(format!(
                "{workload}: unknown parameter {k:?} (parameters: {})",
                names()
            ));
        };
        if values.contains_key(spec.name) {
            return Err(format!("{workload}: parameter {k} given twice"));
        }
        if v.contains(',') {
            return Err(format!(
                "{workload}: {k}={v}: values cannot contain ',' (join list items with '+')"
            ));
        }
        spec.kind
            .check(v)
            .map_err(|why| format!("{workload}: {k}={v}: {why}"))?;
        values.insert(spec.name, v.to_string());
    }
    for s in specs {
        values
            .entry(s.name)
            .or_insert_with(|| s.default.to_string());
    }
    Ok(Params { workload, values })
}

impl Params {
    /// The value of a declared parameter. Panics on an undeclared name (programming error).
    pub fn str(&self, name: &str) -> &str {
        self.values
            .get(name)
            .unwrap_or_else(|| panic!("{}: parameter {name} is not declared", self.workload))
    }

    pub fn u64(&self, name: &str) -> u64 {
        self.str(name).parse().unwrap_or_else(|_| {
            panic!(
                "{}: parameter {name} is not an integer (declared kind is wrong)",
                self.workload
            )
        })
    }

    pub fn size(&self, name: &str) -> u64 {
        parse_size(self.str(name)).unwrap_or_else(|| {
            panic!(
                "{}: parameter {name} is not a size (declared kind is wrong)",
                self.workload
            )
        })
    }

    pub fn seed(&self) -> u64 {
        self.u64("seed")
    }

    /// `k=v` words of every parameter, in name order (for titles and the runner's argv).
    pub fn words(&self) -> Vec<String> {
        self.values
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    }

    pub fn map(&self) -> &BTreeMap<&'static str, String> {
        &self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[ParamSpec] = &[
        ParamSpec {
            name: "pattern",
            default: "seq",
            kind: Kind::Choice(&["seq", "random", "hot"]),
            help: "",
        },
        ParamSpec {
            name: "n",
            default: "10",
            kind: Kind::Int { min: 1, max: 100 },
            help: "",
        },
        ParamSpec {
            name: "data",
            default: "256M",
            kind: Kind::Size {
                min: 1 << 20,
                max: 1 << 30,
            },
            help: "",
        },
        ParamSpec {
            name: "limit",
            default: "50%",
            kind: Kind::SizeOrPercent {
                min: 1 << 20,
                max: 1 << 30,
            },
            help: "",
        },
        SEED,
    ];

    fn w(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn defaults_and_values() {
        let p = parse("t", SPECS, &w(&["pattern=hot", "data=4M"])).unwrap();
        assert_eq!(p.str("pattern"), "hot");
        assert_eq!(p.size("data"), 4 << 20);
        assert_eq!(p.u64("n"), 10);
        assert_eq!(p.seed(), 0);
        assert_eq!(p.str("limit"), "50%");
        assert_eq!(
            p.words(),
            ["data=4M", "limit=50%", "n=10", "pattern=hot", "seed=0"]
        );
        let p = parse("t", SPECS, &w(&["seed=18446744073709551615", "limit=2M"])).unwrap();
        assert_eq!(p.seed(), u64::MAX);
    }

    #[test]
    fn errors_name_the_parameter_and_what_is_allowed() {
        let e = parse("t", SPECS, &w(&["pattern=zig"])).unwrap_err();
        assert_eq!(e, "t: pattern=zig: expected one of seq, random, hot");
        let e = parse("t", SPECS, &w(&["patern=seq"])).unwrap_err();
        assert_eq!(
            e,
            "t: unknown parameter \"patern\" (parameters: pattern, n, data, limit, seed)"
        );
        let e = parse("t", SPECS, &w(&["n=0"])).unwrap_err();
        assert_eq!(e, "t: n=0: expected an integer from 1 to 100");
        let e = parse("t", SPECS, &w(&["n=x"])).unwrap_err();
        assert!(e.contains("n=x: expected an integer from 1 to 100"), "{e}");
        let e = parse("t", SPECS, &w(&["data=2T"])).unwrap_err();
        assert_eq!(
            e,
            "t: data=2T: expected a size from 1M to 1G (suffix K, M or G)"
        );
        let e = parse("t", SPECS, &w(&["limit=0%"])).unwrap_err();
        assert!(e.contains("or a percentage N%"), "{e}");
        let e = parse("t", SPECS, &w(&["pattern"])).unwrap_err();
        assert!(e.contains("expected NAME=VALUE"), "{e}");
        let e = parse("t", SPECS, &w(&["n=1", "n=2"])).unwrap_err();
        assert_eq!(e, "t: parameter n given twice");
        let e = parse("t", SPECS, &w(&["pattern=seq,hot"])).unwrap_err();
        assert!(e.contains("cannot contain ','"), "{e}");
        let e = parse("t", SPECS, &w(&["seed=-1"])).unwrap_err();
        assert!(e.contains("seed=-1: expected an integer"), "{e}");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("4k"), Some(4096));
        assert_eq!(parse_size("3G"), Some(3 << 30));
        assert_eq!(parse_size("M"), None);
        assert_eq!(parse_size("1.5M"), None);
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("99999999999999999999G"), None);
        assert_eq!(show_size(256 << 20), "256M");
        assert_eq!(show_size(1 << 30), "1G");
        assert_eq!(show_size(1536), "1536");
        assert_eq!(show_size(1536 << 10), "1536K");
    }
}
