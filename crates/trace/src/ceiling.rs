//! The ceiling advisor (seed 002's open question): which `tlb_single_page_flush_ceiling` suits
//! this CPU and this workload.
//!
//! The kernel flushes a range of `n` pages page by page (one INVLPG each) when `n` is at most
//! the ceiling, and the whole TLB above it. Page by page costs more with every page; a full
//! flush costs a fixed amount plus the refill of the TLB entries the workload still needed.
//! Weighted by how often each flush size occurs in the workload, on the CPU that asked for it,
//! on each CPU that received the shootdown and for the sender that waits for them, the
//! predicted cost per second of every ceiling value follows:
//!
//! ```text
//! cost(c) = sum over local flushes of n pages:  rate(n) * ( n <= c ? a + (z + p) n : a + F + z n + R )
//!         + sum over receipts of n pages:       rate(n) * ( n <= c ? p n : F + R )
//!         + sum over shootdowns sent of n pages: rate(n) * ( n <= c ? p n : F )
//! ```
//!
//! `a, z, p, F` come from the micro's madvise curve (`ceiling_fit`: least squares with every
//! term at or above 0), `R` from `micro tlb-refill` (re-touching a working set after a full
//! against after a partial flush; or `tlb-miss`'s cost per miss times the working set), the
//! counts from the capture (`ceiling_counts`: receipts are not local flushes). Per local
//! flush, a full flush is cheaper above `n* = (F + R) / p` pages.
//!
//! Uncertainty: a bootstrap over the micro samples (every configuration resampled, its median
//! retaken, the curve refitted) and over the flush counts (Poisson), seeded; the band is where
//! 95% of the replicates put their best ceiling. A term whose unconstrained band holds 0 is
//! reported as not resolvable, with the measurement that would resolve it (`ceiling_words`).

use crate::ceiling_boot::{Replicates, Setup, estimate, median_estimate};
use crate::ceiling_counts::{Counts, counts};
use crate::ceiling_inputs::{
    Rates, capture_seconds, fit, measured_ceiling, miss_per_page, net_medians, pct, refill_source,
    samples, working_set,
};
use crate::ceiling_words::{
    TermInputs, assumptions, checks, cost_warnings, model_text, terms, validation,
};
use abperf_model::ceiling::{CeilingAdvice, CeilingPoint, Change, FlushCosts, FlushMix};
use abperf_model::trace::{CaptureInfo, Tables};

pub use crate::ceiling_inputs::{DEFAULT_CEILING, KNOB, Micro, Options};

/// Ceiling values evaluated: 0..=64, every flush size of the workload (the predicted cost
/// changes only there), and steps of about 1.5x up to the largest.
fn ceilings(sizes: &[u64]) -> Vec<u64> {
    let max_size = sizes.iter().copied().max().unwrap_or(64);
    let mut v: Vec<u64> = (0..=64).chain(sizes.iter().copied()).collect();
    let mut c = 96u64;
    while c < max_size.max(64) {
        v.push(c);
        c = if c.is_power_of_two() {
            c * 3 / 2
        } else {
            c / 3 * 4
        };
    }
    if max_size > 64 {
        v.push(max_size);
    }
    v.sort();
    v.dedup();
    v
}

/// The best (smallest) ceiling and the range of ceilings with the same cost: up to just
/// below the next evaluated ceiling that costs more (the grid holds every flush size, where
/// alone the cost changes).
fn best_of(costs: &[(u64, f64)]) -> (u64, (u64, u64)) {
    let min = costs.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
    let tol = min.abs() * 1e-12 + 1e-9;
    let i = costs
        .iter()
        .position(|c| c.1 <= min + tol)
        .expect("nonempty");
    let hi = costs[i + 1..]
        .iter()
        .find(|c| c.1 > min + tol)
        .map(|c| c.0 - 1)
        .unwrap_or(costs[costs.len() - 1].0);
    (costs[i].0, (costs[i].0, hi))
}

/// The predicted change from ceiling `from` to `to` in percent less, its band from the paired
/// replicates (`reps[i]` are the replicates of `curve[i]`).
fn change(curve: &[(u64, f64)], reps: &[Vec<f64>], from: u64, to: u64) -> Change {
    // the prediction at a ceiling not evaluated is that of the evaluated one below it
    let at = |c: u64| curve.iter().rposition(|p| p.0 <= c).unwrap_or(0);
    let (i, j) = (at(from), at(to));
    let less = |a: f64, b: f64| if a > 0.0 { 100.0 * (a - b) / a } else { 0.0 };
    let mut r: Vec<f64> = reps[i]
        .iter()
        .zip(&reps[j])
        .map(|(a, b)| less(*a, *b))
        .collect();
    let mut d: Vec<f64> = reps[i].iter().zip(&reps[j]).map(|(a, b)| a - b).collect();
    Change {
        from,
        to,
        percent_less: estimate(less(curve[i].1, curve[j].1), &mut r),
        cycles_less: estimate(curve[i].1 - curve[j].1, &mut d),
    }
}

/// The workload's duration and flush counts (local, received, sent), with warnings about
/// them.
fn workload(
    info: &CaptureInfo,
    t: &Tables,
    c0: u64,
    warnings: &mut Vec<String>,
) -> Result<(f64, Counts), String> {
    let seconds = capture_seconds(info)?;
    let cnt = counts(t, c0)?;
    if cnt.local.events == 0 {
        return Err(format!(
            "capture {} holds no local range flushes (tlb_flush with reason local shootdown or local MM shootdown)",
            info.id.unwrap_or(0)
        ));
    }
    if cnt.local.events < 100 {
        warnings.push(format!(
            "only {} flushes in the capture: the flush rates are uncertain",
            cnt.local.events
        ));
    }
    if info.has_losses() {
        warnings.push(format!(
            "the capture lost {} events: flush counts are too low",
            info.lost_total()
        ));
    }
    Ok((seconds, cnt))
}

/// The flush mix as the advice shows it.
fn mix(cnt: &Counts, rates0: &Rates, seconds: f64) -> FlushMix {
    FlushMix {
        rates: rates0.local.clone(),
        always_full: rates0.local_full,
        flushes: cnt.local.events,
        seconds,
        remote: cnt.received.events,
        sent: cnt.sent.events,
        received_rates: rates0.received.clone(),
        received_always_full: rates0.received_full,
        sent_rates: rates0.sent.clone(),
        sent_always_full: rates0.sent_full,
        recovered: cnt.recovered,
    }
}

/// Where 95% of the replicates put their best ceiling (`best` without replicates).
fn band_of(reps: &mut [f64], best: u64) -> (u64, u64) {
    if reps.is_empty() {
        (best, best)
    } else {
        (
            pct(reps, 0.025).floor() as u64,
            pct(reps, 0.975).ceil() as u64,
        )
    }
}

/// Predict the flush cost per second of every ceiling for the workload of `capture` on the
/// machine of `micro`.
pub fn advise(
    info: &CaptureInfo,
    t: &Tables,
    micro: &Micro,
    opts: &Options,
) -> Result<CeilingAdvice, String> {
    let mut warnings = Vec::new();
    let s = samples(micro)?;
    let (c0, c0_source) = measured_ceiling(micro, opts);
    let (nl, nr) = (
        s.flush.iter().filter(|f| f.0 <= c0).count(),
        s.flush.iter().filter(|f| f.0 > c0).count(),
    );
    if nl < 3 || nr < 3 {
        return Err(format!(
            "the micro curve has {nl} sizes at or below its ceiling {c0} and {nr} above (3 each needed to fit the two lines)"
        ));
    }
    let ws = working_set(&s, micro, opts);
    let refill_source = refill_source(&s, micro, ws);
    let (params, raw) = fit(
        &net_medians(&s.flush),
        &net_medians(&s.refill),
        miss_per_page(&s.miss),
        c0,
        ws,
    );
    let (seconds, cnt) = workload(info, t, c0, &mut warnings)?;
    let rates0 = Rates::new(&cnt, seconds);
    let cs = ceilings(&rates0.sizes());
    let curve0: Vec<(u64, f64)> = cs.iter().map(|c| (*c, params.cost(&rates0, *c))).collect();
    let (best, best_range) = best_of(&curve0);
    let min0 = curve0.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
    let setup = Setup {
        s: &s,
        cnt: &cnt,
        cs: &cs,
        c0,
        ws,
        seconds,
        best,
    };
    let mut reps = Replicates::draw(&setup, opts, |c| best_of(c).0);
    let band = band_of(&mut reps.best, best);
    let change = change(&curve0, &reps.cost, c0, best);
    let changes = opts
        .changes_to
        .iter()
        .map(|c| self::change(&curve0, &reps.cost, c0, *c))
        .collect();
    let curve: Vec<CeilingPoint> = curve0
        .iter()
        .enumerate()
        .map(|(i, (c, v))| CeilingPoint {
            ceiling: *c,
            cycles_per_s: estimate(*v, &mut reps.cost[i]),
            above_best: median_estimate(v - min0, &mut reps.above[i]),
        })
        .collect();
    let terms = terms(
        &TermInputs {
            micro,
            s: &s,
            p: &params,
            raw: &raw,
            ws,
            c0,
            c0_source: &c0_source,
            refill_source: &refill_source,
        },
        &mut reps,
        info,
        t,
    );
    let term = |sym: &str| terms.iter().find(|t| t.symbol == sym).map(|t| t.estimate);
    let costs = FlushCosts {
        per_page: term("p").expect("listed"),
        full_extra: term("F").expect("listed"),
        refill: term("R").expect("listed"),
        working_set: ws,
        measured_ceiling: c0,
        ceiling_source: c0_source,
        refill_source,
        partial_line: params.t.partial(),
        full_line: params.t.full(),
        terms,
    };
    warnings.extend(cost_warnings(&costs));
    let checks = checks(info, t, micro);
    let crossover = estimate(params.crossover(), &mut reps.crossover);
    let mix = mix(&cnt, &rates0, seconds);
    Ok(CeilingAdvice {
        capture_id: info.id.unwrap_or(0),
        micro_id: micro.id,
        model: model_text(micro, &costs, opts),
        assumptions: assumptions(c0, ws, rates0.local_full),
        validation: validation(checks.is_empty()),
        mix,
        costs,
        curve,
        best,
        best_range,
        band,
        crossover,
        default_ceiling: DEFAULT_CEILING,
        change,
        changes,
        knob_check: None,
        resamples: opts.resamples,
        seed: opts.seed,
        checks,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::trace::{Bin, PairRow, PairTable, TlbRow, TlbTable};
    use abperf_model::{Dataset, Experiment, Kind, Metric, MicroFinding, Run, Status, Variant};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A micro dataset whose madvise curve is `zap*n + flush*n` up to `c0` and
    /// `zap*n + full` above, with noise, and a refill of `refill` at K=512.
    fn micro(c0: u64, zap: f64, per_page: f64, full: f64, refill: f64) -> Dataset {
        let mut variants = Vec::new();
        let mut runs = Vec::new();
        let mut seq = 0;
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut add = |name: String, centre: f64, variants: &mut Vec<Variant>| {
            let pos = variants.len();
            variants.push(Variant::named(&name));
            for _ in 0..41 {
                let noise = rng.random_range(-0.02..0.02) * centre.abs().max(100.0);
                runs.push(Run::ok(
                    seq,
                    pos,
                    vec![Metric::new("cycles", centre + noise, "cycles")],
                ));
                seq += 1;
            }
        };
        for n in 1..=64u64 {
            let x = n as f64;
            let touched = 1000.0 + zap * x + if n <= c0 { per_page * x } else { full };
            add(
                format!("tlb-flush/madvise/touched/n={n}"),
                touched,
                &mut variants,
            );
            add(
                format!("tlb-flush/madvise/empty/n={n}"),
                1000.0,
                &mut variants,
            );
        }
        for (k, r) in [(64u64, refill / 8.0), (512, refill)] {
            add(format!("tlb-refill/partial/k={k}"), 5000.0, &mut variants);
            add(format!("tlb-refill/full/k={k}"), 5000.0 + r, &mut variants);
        }
        let e = Experiment {
            id: 1,
            name: "micro".into(),
            kind: Kind::Micro,
            created: String::new(),
            command_line: vec![],
            design: serde_json::json!({}),
            seed: None,
            environment: serde_json::json!({}),
            status: Status::Complete,
            labels: Default::default(),
        };
        Dataset::new(vec![e], variants, runs, String::new())
    }

    /// A capture with `per_size` local flushes of each size in `sizes` over one second, sizes
    /// above 33 recorded as full flushes inside madvise calls of that length.
    fn capture(sizes: &[(i64, u64)]) -> (CaptureInfo, Tables) {
        let mut rows = Vec::new();
        let mut pair_rows = Vec::new();
        let mut full = 0;
        for (n, count) in sizes {
            let bin = Bin {
                count: *count,
                ..Default::default()
            };
            if *n > 33 {
                full += count;
                pair_rows.push(PairRow {
                    key: *n,
                    bin: bin.clone(),
                    flushes: vec![(-1, *count)],
                });
            } else {
                rows.push(TlbRow {
                    reason: 3,
                    pages: *n,
                    bin: bin.clone(),
                });
                pair_rows.push(PairRow {
                    key: *n,
                    bin,
                    flushes: vec![(*n, *count)],
                });
            }
        }
        rows.push(TlbRow {
            reason: 3,
            pages: -1,
            bin: Bin {
                count: full,
                ..Default::default()
            },
        });
        let t = Tables {
            tlb: Some(TlbTable {
                event: "tlb:tlb_flush".into(),
                reasons: vec![(3, "local MM shootdown".into())],
                rows,
            }),
            pairs: vec![PairTable {
                name: "madvise".into(),
                begin: vec![],
                end: vec![],
                key: "requested pages".into(),
                rows: pair_rows,
                unmatched: 0,
            }],
            ..Default::default()
        };
        let info = CaptureInfo {
            id: Some(9),
            clock: "x86-tsc".into(),
            tsc_hz: Some(2.6e9),
            wall_ns: Some(1_000_000_000),
            ..Default::default()
        };
        (info, t)
    }

    fn opts() -> Options {
        Options {
            resamples: 200,
            ..Default::default()
        }
    }

    #[test]
    fn synthetic_optimum_is_found() {
        // per page 300, full flush 6000 beyond a partial, refill 3000 at 512 pages: a full
        // flush is cheaper above (6000 + 3000) / 300 = 30 pages
        let ds = micro(33, 200.0, 300.0, 6000.0, 3000.0);
        let f = vec![MicroFinding {
            bench: "tlb-flush".into(),
            key: "madvise-knee".into(),
            value: Some(33.0),
            unit: "pages".into(),
            text: String::new(),
        }];
        let m = Micro {
            id: 1,
            data: &ds,
            findings: &f,
        };
        // every size from 1 to 64 used: the best ceiling is the crossover
        let sizes: Vec<(i64, u64)> = (1..=64).map(|n| (n, 100)).collect();
        let (info, t) = capture(&sizes);
        let a = advise(&info, &t, &m, &opts()).unwrap();
        assert!(
            (a.costs.per_page.value - 300.0).abs() < 15.0,
            "{:?}",
            a.costs
        );
        assert!(
            (a.costs.refill.value - 3000.0).abs() < 200.0,
            "{:?}",
            a.costs
        );
        assert!((a.crossover.value - 30.0).abs() < 2.0, "{:?}", a.crossover);
        assert!((28..=32).contains(&a.best), "best {}", a.best);
        assert!(a.band.0 <= a.best && a.best <= a.band.1, "{:?}", a.band);
        assert!(a.band.1 - a.band.0 <= 6, "{:?}", a.band);
        assert_eq!(a.mix.recovered, 31 * 100);
        // the curve is lowest at the best and rises on both sides
        let at = |c| a.at(c).unwrap().cycles_per_s.value;
        assert!(at(a.best) < at(1) && at(a.best) < at(64));
        assert!(a.at(a.best).unwrap().above_best.value.abs() < 1e-6);
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
        every_estimate_inside_its_band(&a);
    }

    /// Every estimate the advice prints is inside its own band (issue 45: "33 is predicted to
    /// cost 1,214 cycles/s more (95% 9,723 .. 2,194,372)", the value from the point curve, the
    /// band from each replicate's own best): each ceiling's cost and its cost above the best,
    /// every term of the model (constrained and not), the crossover and every change.
    fn every_estimate_inside_its_band(a: &CeilingAdvice) {
        let inside = |what: String, e: &abperf_model::ceiling::Estimate| {
            assert!(e.low <= e.value && e.value <= e.high, "{what}: {e:?}");
        };
        for p in &a.curve {
            inside(format!("cycles/s at {}", p.ceiling), &p.cycles_per_s);
            inside(format!("above best at {}", p.ceiling), &p.above_best);
        }
        for t in &a.costs.terms {
            inside(format!("term {}", t.symbol), &t.estimate);
            inside(format!("term {} unconstrained", t.symbol), &t.unconstrained);
        }
        inside("crossover".into(), &a.crossover);
        for c in a.changes.iter().chain([&a.change]) {
            inside(format!("{} -> {} %", c.from, c.to), &c.percent_less);
            inside(format!("{} -> {} cycles", c.from, c.to), &c.cycles_less);
        }
    }

    #[test]
    fn the_mix_decides_where_the_curve_is_flat() {
        // only 1-page and 200-page flushes: every ceiling from 1 to 199 costs the same
        let ds = micro(33, 200.0, 300.0, 6000.0, 3000.0);
        let m = Micro {
            id: 1,
            data: &ds,
            findings: &[],
        };
        let (info, t) = capture(&[(1, 1000), (200, 10)]);
        let a = advise(&info, &t, &m, &opts()).unwrap();
        assert_eq!(a.best, 1);
        assert_eq!(a.best_range, (1, 199));
        // the 200-page flushes: partial would cost 60,000 per flush against 9,000 full
        assert!(a.at(200).unwrap().above_best.value > 10.0 * 51_000.0 * 0.9);
        every_estimate_inside_its_band(&a);
        // no knee finding: the refill configuration's ceiling, else the default
        assert_eq!(a.costs.measured_ceiling, 33);
    }

    #[test]
    fn expensive_refills_favour_partial_flushes() {
        // a refill of 30,000 cycles: full flushes pay only above (6000 + 30000) / 300 = 120
        let ds = micro(33, 200.0, 300.0, 6000.0, 30_000.0);
        let m = Micro {
            id: 1,
            data: &ds,
            findings: &[],
        };
        let sizes: Vec<(i64, u64)> = [1, 8, 33, 64, 100, 119, 121, 150, 400]
            .iter()
            .map(|n| (*n, 50))
            .collect();
        let (info, t) = capture(&sizes);
        let a = advise(&info, &t, &m, &opts()).unwrap();
        assert!((a.crossover.value - 120.0).abs() < 8.0, "{:?}", a.crossover);
        assert_eq!(a.best, 119, "{:?}", a.best_range);
        every_estimate_inside_its_band(&a);
    }

    /// Issue 29: a micro curve that drops above the ceiling (unconstrained F = -630) and a
    /// refill indistinguishable from 0 (-30 cycles in noise of +-100): no cost, band or
    /// prediction is negative, and the unresolvable terms are named with what would resolve
    /// them.
    #[test]
    fn negative_fits_are_constrained_and_named() {
        let ds = micro(33, 200.0, 300.0, -630.0, -30.0);
        let m = Micro {
            id: 5,
            data: &ds,
            findings: &[],
        };
        let sizes: Vec<(i64, u64)> = (1..=64).map(|n| (n, 100)).collect();
        let (info, t) = capture(&sizes);
        let a = advise(&info, &t, &m, &opts()).unwrap();
        every_estimate_inside_its_band(&a);
        let terms = &a.costs.terms;
        let f = terms.iter().find(|t| t.symbol == "F").unwrap();
        assert!(f.unconstrained.value < -500.0, "{f:?}");
        assert!(f.unconstrained.high < 0.0, "{f:?}");
        assert_eq!(f.estimate.value, 0.0, "{f:?}");
        let r = terms.iter().find(|t| t.symbol == "R").unwrap();
        assert!(!r.resolved, "{r:?}");
        assert!(
            r.to_resolve
                .as_deref()
                .is_some_and(|s| s.contains("abperf micro tlb-refill --samples ")),
            "{r:?}"
        );
        for t in terms {
            let e = t.estimate;
            assert!(e.value >= 0.0 && e.low >= 0.0 && e.high >= e.low, "{t:?}");
        }
        for p in &a.curve {
            assert!(p.cycles_per_s.low >= 0.0, "{p:?}");
            assert!(p.above_best.low >= 0.0, "{p:?}");
        }
        assert!(a.crossover.low >= 0.0, "{:?}", a.crossover);
        let w = a.warnings.join("\n");
        assert!(
            w.contains(
                "refill after a full flush, working set 512 pages (R) is not resolvable here: |"
            ),
            "{w}"
        );
        assert!(
            w.contains("under the constraint that a cost is not negative"),
            "{w}"
        );
        assert!(
            w.contains("full flush beyond a partial one (F) fits below 0 (-6"),
            "{w}"
        );
        // a full flush costs nothing more and refills nothing: full flushes everywhere
        assert_eq!(a.best, 0, "{:?}", a.best_range);
    }

    #[test]
    fn missing_inputs_are_named() {
        let ds = micro(33, 200.0, 300.0, 6000.0, 3000.0);
        let m = Micro {
            id: 4,
            data: &ds,
            findings: &[],
        };
        let (info, mut t) = capture(&[(1, 10)]);
        t.tlb = None;
        let e = advise(&info, &t, &m, &opts()).unwrap_err();
        assert!(e.contains("no tlb:tlb_flush"), "{e}");
        let empty = Dataset::new(vec![], vec![], vec![], String::new());
        let m = Micro {
            id: 4,
            data: &empty,
            findings: &[],
        };
        let (info, t) = capture(&[(1, 10)]);
        let e = advise(&info, &t, &m, &opts()).unwrap_err();
        assert!(e.contains("micro experiment 4 has no tlb-flush"), "{e}");
    }
}
