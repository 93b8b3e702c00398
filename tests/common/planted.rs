//! Seeded data with planted effects, in seed 001's design (3 patterns x 2 ops x 3
//! implementations, 31 runs each), imported as hyperfine JSON with the three as parameters:
//! every sample is normal with a mean of 100 ms and an SD of 1 ms, except the planted ones:
//!
//! - pattern=seq op=read: implementation `b` 10% faster (mean 90 ms);
//! - pattern=random op=write: implementation `c` with 5x the SD (same mean);
//! - pattern=hot op=read: implementation `c` 2.5x slower (mean 250 ms).
//!
//! So the decisive results are exactly: seq/read `b` faster than `a`, `c` slower than `b`;
//! random/write `c` more variation than `a` and than `b`; hot/read `c` slower than `a` and `b`.

use super::Lab;

pub const PATTERNS: [&str; 3] = ["seq", "random", "hot"];
pub const OPS: [&str; 2] = ["read", "write"];
pub const IMPLS: [&str; 3] = ["a", "b", "c"];
pub const RUNS: usize = 31;

/// splitmix64: a small seeded generator, so the data are the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// Box-Muller.
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// (mean in seconds, SD in seconds) of one cell of the design.
fn cell(pattern: &str, op: &str, imp: &str) -> (f64, f64) {
    match (pattern, op, imp) {
        ("seq", "read", "b") => (0.090, 0.001),
        ("random", "write", "c") => (0.100, 0.005),
        ("hot", "read", "c") => (0.250, 0.001),
        _ => (0.100, 0.001),
    }
}

/// Import the planted experiment into `lab` as experiment 1.
pub fn import(lab: &Lab) {
    let mut rng = Rng(2018);
    let mut results = Vec::new();
    for p in PATTERNS {
        for o in OPS {
            for i in IMPLS {
                let (mean, sd) = cell(p, o, i);
                let times: Vec<f64> = (0..RUNS).map(|_| mean + sd * rng.normal()).collect();
                results.push(serde_json::json!({
                    "command": format!("{i} {p} {o}"),
                    "times": times,
                    "exit_codes": vec![0; RUNS],
                    "parameters": {"pattern": p, "op": o, "impl": i},
                }));
            }
        }
    }
    let f = lab.write(
        "planted.json",
        serde_json::json!({ "results": results }).to_string(),
    );
    lab.ok(&["import", "--format", "hyperfine", "--new", "planted", &f]);
}

/// Seed 001's comparison of the planted experiment over both factors.
pub const COMPARE: [&str; 12] = [
    "compare",
    "1",
    "--pairs",
    "all",
    "--by",
    "pattern,op",
    "--test",
    "mean,variability",
    "--alpha",
    "0.01",
    "--resamples",
    "1000",
];
