//! The knee of the flush curve (the implied `tlb_single_page_flush_ceiling`) estimated once per
//! round, so that two suites' knees can be compared with the rounds as the unit: in round r, the
//! net cost of an N-page operation is the round's median of `touched/n=N` minus that of
//! `empty/n=N` (counter ticks), and [`super::tlb::find_knee`] runs on those points up to 64
//! pages, as the suite's own finding does on the medians over all rounds.

use abperf_model::Dataset;
use abperf_model::describe::median;
use std::collections::BTreeMap;

/// The knee of `bench`'s operation `op` (e.g. `tlb-flush`, `madvise`) in every round of `ds`,
/// in round order: `None` where that round's curve shows no clear knee. Empty when `ds` has no
/// such configurations.
pub fn round_knees(ds: &Dataset, bench: &str, op: &str) -> Vec<Option<usize>> {
    // round -> pages -> (touched samples, empty samples)
    type Sides = (Vec<f64>, Vec<f64>);
    let mut by_round: BTreeMap<i32, BTreeMap<usize, Sides>> = BTreeMap::new();
    for (pos, v) in ds.variants.iter().enumerate() {
        let p = &v.parameters;
        if p.get("bench").map(String::as_str) != Some(bench)
            || p.get("op").map(String::as_str) != Some(op)
        {
            continue;
        }
        let Some(n) = p.get("pages").and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        let touched = match p.get("range").map(String::as_str) {
            Some("touched") => true,
            Some("empty") => false,
            _ => continue,
        };
        if n > 64 {
            continue;
        }
        for r in ds.counted(pos) {
            if let Some(x) = r.value("cycles") {
                let e = by_round.entry(r.block).or_default().entry(n).or_default();
                if touched { &mut e.0 } else { &mut e.1 }.push(x);
            }
        }
    }
    by_round
        .into_values()
        .map(|sizes| {
            let points: Vec<(usize, f64)> = sizes
                .into_iter()
                .filter(|(_, (t, e))| !t.is_empty() && !e.is_empty())
                .map(|(n, (t, e))| (n, median(&t) - median(&e)))
                .collect();
            super::tlb::find_knee(&points).map(|k| k.at)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::{Metric, Run, Variant};

    /// Two rounds of a flush curve with a drop after `knee` pages (none when 0).
    fn curve(knees: &[usize]) -> Dataset {
        let mut variants = Vec::new();
        let mut runs = Vec::new();
        for n in 1..=40usize {
            for range in ["touched", "empty"] {
                let pos = variants.len();
                let mut v = Variant::named(&format!("tlb-flush/madvise/{range}/n={n}"));
                for (k, x) in [
                    ("bench", "tlb-flush".to_string()),
                    ("op", "madvise".into()),
                    ("range", range.into()),
                    ("pages", n.to_string()),
                ] {
                    v.parameters.insert(k.into(), x);
                }
                variants.push(v);
                for (r, &knee) in knees.iter().enumerate() {
                    let net = match range {
                        "empty" => 0.0,
                        _ if knee > 0 && n > knee => 1000.0 + 5.0 * n as f64,
                        _ => 300.0 * n as f64,
                    };
                    for i in 0..3 {
                        let x = 2000.0 + net + i as f64;
                        runs.push(Run {
                            block: r as i32,
                            ..Run::ok(runs.len() as u32, pos, vec![Metric::new("cycles", x, "")])
                        });
                    }
                }
            }
        }
        Dataset::new(Vec::new(), variants, runs, "t".into())
    }

    #[test]
    fn a_knee_per_round() {
        assert_eq!(
            round_knees(&curve(&[33, 16, 0]), "tlb-flush", "madvise"),
            [Some(33), Some(16), None]
        );
        assert!(round_knees(&curve(&[33]), "tlb-flush", "mprotect").is_empty());
    }
}
