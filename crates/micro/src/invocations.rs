//! A suite measured in several invocations (`abperf micro --invocations N`): N processes, each
//! with fresh buffers, their own alignment and physical pages, each measuring its share of
//! every configuration's samples and rounds ([`super::Options::share`]). The N suite reports
//! become one: every configuration's rounds in invocation order, each labelled with its
//! invocation, so that a comparison can take the invocations as its replicates (the variance
//! between processes, which rounds within one process do not show).

use super::{Finding, Measurement, Skip, SuiteReport};
use abperf_model::describe::Summary;

/// One suite report of the `reports` of invocations 0, 1, ... (in that order): measurements
/// joined by configuration name (rounds and samples appended, each round labelled with its
/// invocation, the summaries recomputed), findings by benchmark and key (the median of the
/// invocations' values, the first one's text with every value listed), skips, failures and
/// notes once each. The timer and CPU are the first invocation's; `elapsed_s` is the whole.
pub fn merge(reports: Vec<SuiteReport>, elapsed_s: f64) -> anyhow::Result<SuiteReport> {
    let n = reports.len();
    let mut it = reports.into_iter();
    let Some(mut out) = it.next() else {
        anyhow::bail!("internal: no invocation to merge");
    };
    for m in &mut out.measurements {
        m.invocations = vec![0; m.rounds.len()];
    }
    let mut findings: Vec<Vec<Finding>> = out.findings.drain(..).map(|f| vec![f]).collect();
    let mut probes = Vec::new();
    for (i, r) in it.enumerate() {
        let inv = i as u32 + 1;
        for m in r.measurements {
            join(&mut out.measurements, m, inv);
        }
        for f in r.findings {
            match findings
                .iter_mut()
                .find(|g| g[0].bench == f.bench && g[0].key == f.key)
            {
                Some(g) => g.push(f),
                None => findings.push(vec![f]),
            }
        }
        once(&mut out.skips, r.skips);
        once(&mut out.failures, r.failures);
        for note in r.notes {
            if !out.notes.contains(&note) {
                out.notes.push(note);
            }
        }
        probes.push(r.adds_per_cycle);
    }
    let hz = out.timer.hz;
    for m in &mut out.measurements {
        m.summarise(hz);
    }
    out.findings = findings.into_iter().map(|g| finding(g, n)).collect();
    out.adds_per_cycle = pooled(out.adds_per_cycle, &probes);
    out.notes.push(format!(
        "measured in {n} invocations (separate processes, fresh buffers), each with 1/{n} of \
         every configuration's samples and rounds"
    ));
    out.elapsed_s = elapsed_s;
    Ok(out)
}

/// Append measurement `m` of invocation `inv` to the one of the same name (or add it).
fn join(into: &mut Vec<Measurement>, mut m: Measurement, inv: u32) {
    m.invocations = vec![inv; m.rounds.len()];
    match into.iter_mut().find(|x| x.name == m.name) {
        Some(x) => {
            x.samples.extend(m.samples);
            x.rounds.extend(m.rounds);
            x.invocations.extend(m.invocations);
        }
        None => into.push(m),
    }
}

fn once(into: &mut Vec<Skip>, more: Vec<Skip>) {
    for s in more {
        if !into.contains(&s) {
            into.push(s);
        }
    }
}

/// How far from the median (a factor) an invocation's value of a reach may lie and still agree.
const DISAGREE: f64 = 2.0;

/// The invocations' values of one finding as one: the invocation holding the median (the lower
/// of the middle two for an even count), its value and its own text, so that the words ("knee
/// after 32 pages") and the value a plot or a ceiling reads agree; every value listed after it.
/// A reach (key `*-reach`) gets no value unless most of the invocations lie within [`DISAGREE`]
/// times of the median: its text then says the invocations disagree, with every value.
fn finding(mut g: Vec<Finding>, n: usize) -> Finding {
    if g.len() == 1 && n == 1 {
        return g.remove(0);
    }
    let mut valued: Vec<(f64, usize)> = g
        .iter()
        .enumerate()
        .filter_map(|(i, f)| Some((f.value?, i)))
        .collect();
    if valued.is_empty() {
        return g.remove(0);
    }
    let listed: Vec<String> = valued.iter().map(|(v, _)| format!("{v:.4}")).collect();
    valued.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mid = (valued.len() - 1) / 2;
    let near = |v: f64| v <= DISAGREE * valued[mid].0 && valued[mid].0 <= DISAGREE * v;
    let agreeing = valued.iter().filter(|(v, _)| near(*v)).count();
    if g[0].key.ends_with("-reach") && 2 * agreeing <= valued.len() {
        // A reach names a level (a TLB's size): when no majority of the invocations lies near
        // their median, they measured different things, and the median would name a level
        // that half of them did not see.
        let mut f = g.swap_remove(valued[0].1);
        f.text = format!(
            "{}: the {} invocations disagree, no majority within {DISAGREE:.0}x of the median \
             ({} {}): no level named",
            f.key,
            valued.len(),
            listed.join(", "),
            f.unit
        );
        f.value = None;
        return f;
    }
    let lower = valued.len().is_multiple_of(2) && valued[mid].0 != valued[mid + 1].0;
    let mut f = g.swap_remove(valued[mid].1);
    f.text = format!(
        "{} [median of {} invocations{}: {}]",
        f.text,
        valued.len(),
        if lower { " (the lower middle one)" } else { "" },
        listed.join(", ")
    );
    f
}

/// The SMT probe's summary over all invocations, approximated from their summaries: min and
/// max exact, the rest the medians of the invocations' figures, n the total.
fn pooled(first: Summary, more: &[Summary]) -> Summary {
    let all: Vec<&Summary> = std::iter::once(&first)
        .chain(more)
        .filter(|s| s.n > 0)
        .collect();
    if all.len() <= 1 {
        return first;
    }
    let med = |f: fn(&Summary) -> f64| {
        super::harness::median(&all.iter().map(|s| f(s)).collect::<Vec<_>>())
    };
    Summary {
        n: all.iter().map(|s| s.n).sum(),
        min: all.iter().map(|s| s.min).fold(f64::INFINITY, f64::min),
        p10: med(|s| s.p10),
        median: med(|s| s.median),
        p90: med(|s| s.p90),
        max: all.iter().map(|s| s.max).fold(f64::NEG_INFINITY, f64::max),
        mean: med(|s| s.mean),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::micro::RoundProbe;

    fn probe(tpc: f64) -> RoundProbe {
        RoundProbe {
            started_ns: 0,
            ticks_per_core_cycle: tpc,
            adds_per_cycle: f64::NAN,
        }
    }

    fn report(inv: u32, value: f64) -> SuiteReport {
        let json = serde_json::json!({
            "arch": "x86_64", "quick": true, "cpu": 0, "remote_cpu": null,
            "timer": {"counter": "tsc", "hz": 1e9, "hz_source": "t", "hz_calibrated": 1e9,
                      "overhead": 0.0, "empty_pair": Summary::default(), "core_ghz": 1.0,
                      "resolution": 1},
            "cpu_info": crate::cpu::CpuInfo::default(),
            "benches": ["b"], "measurements": [], "findings": [], "skips": [], "failures": [],
            "notes": ["n"], "adds_per_cycle": Summary::of(&[2.0 + inv as f64]), "elapsed_s": 1.0,
        });
        let mut r: SuiteReport = serde_json::from_value(json).unwrap();
        let mut m = Measurement {
            bench: "b".into(),
            name: "b/x".into(),
            params: Default::default(),
            per: "call".into(),
            pages: 1,
            samples: vec![value, value + 1.0, value + 2.0],
            cycles: Summary::default(),
            ns: Summary::default(),
            core_ghz: 0.0,
            core_cycles: Summary::default(),
            rounds: vec![(2, probe(0.5)), (1, probe(0.5))],
            invocations: vec![0, 0],
        };
        m.summarise(1e9);
        r.measurements.push(m);
        r.findings.push(Finding {
            bench: "b".into(),
            key: "knee".into(),
            value: Some(value),
            unit: "pages".into(),
            text: "knee".into(),
        });
        r
    }

    #[test]
    fn invocations_join_by_configuration_with_their_rounds_labelled() {
        // Through JSON, as a child process hands its report to the parent.
        let reports: Vec<SuiteReport> = [10.0, 20.0, 30.0]
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let text = serde_json::to_string(&report(i as u32, v)).unwrap();
                serde_json::from_str(&text).unwrap()
            })
            .collect();
        let m = merge(reports, 7.5).unwrap();
        assert_eq!(m.measurements.len(), 1);
        let x = &m.measurements[0];
        assert_eq!(x.samples.len(), 9);
        assert_eq!(x.rounds.len(), 6);
        assert_eq!(x.invocations, [0, 0, 1, 1, 2, 2]);
        assert_eq!(x.cycles.median, 21.0);
        // Core cycles over 0.5 ticks per cycle; the clock 2 GHz at 1e9 ticks per second.
        assert_eq!(x.core_cycles.median, 42.0);
        assert_eq!(x.core_ghz, 2.0);
        assert_eq!(m.findings.len(), 1);
        assert_eq!(m.findings[0].value, Some(20.0));
        assert!(m.findings[0].text.contains("median of 3 invocations"));
        // Four invocations, the middle two apart: the lower one's value and its own words.
        let reports: Vec<SuiteReport> = [33.0, 32.0, 34.0, 32.0]
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let mut r = report(i as u32, v);
                r.findings[0].text = format!("knee after {v} pages");
                r
            })
            .collect();
        let f = &merge(reports, 1.0).unwrap().findings[0];
        assert_eq!(f.value, Some(32.0));
        assert_eq!(
            f.text,
            "knee after 32 pages [median of 4 invocations (the lower middle one): 33.0000, \
             32.0000, 34.0000, 32.0000]"
        );
        // A reach whose invocations fall into two modes names no level; one that most of them
        // agree on (within 2x of the median) does, every value listed.
        let reach = |values: &[f64]| {
            let reports: Vec<SuiteReport> = values
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    let mut r = report(i as u32, v);
                    r.findings[0].key = "4k-l1-reach".into();
                    r.findings[0].text = format!("L1 DTLB reach ~{v} pages");
                    r
                })
                .collect();
            merge(reports, 1.0).unwrap().findings.remove(0)
        };
        let f = reach(&[57.0, 1405.0, 1600.0, 68.0]);
        assert_eq!(f.value, None);
        assert_eq!(
            f.text,
            "4k-l1-reach: the 4 invocations disagree, no majority within 2x of the median \
             (57.0000, 1405.0000, 1600.0000, 68.0000 pages): no level named"
        );
        assert_eq!(reach(&[1533.0, 1405.0, 1405.0, 1745.0]).value, Some(1405.0));
        let f = reach(&[96.0, 96.0, 1988.0, 104.0]);
        assert_eq!(f.value, Some(96.0));
        assert!(
            f.text.contains("96.0000, 96.0000, 1988.0000, 104.0000"),
            "{}",
            f.text
        );
        assert_eq!(reach(&[60.0, 1500.0, 64.0]).value, Some(64.0));
        assert_eq!(reach(&[60.0, 1500.0]).value, None);
        assert_eq!(m.notes.iter().filter(|n| *n == "n").count(), 1);
        assert!(m.notes.last().unwrap().contains("3 invocations"));
        assert_eq!(m.adds_per_cycle.min, 2.0);
        assert_eq!(m.adds_per_cycle.max, 4.0);
        assert_eq!(m.elapsed_s, 7.5);
        assert!(merge(Vec::new(), 0.0).is_err());
    }

    #[test]
    fn shares_divide_samples_rounds_and_span() {
        let mut o = crate::Options {
            quick: true,
            samples: None,
            cpu: 0,
            remote_cpu: None,
            remote_counts: None,
            cpus: vec![0],
            realtime: false,
            span: Some(std::time::Duration::from_secs(4)),
            share: 1,
        };
        assert_eq!(o.samples(1001, 2001), 1001);
        assert_eq!(o.rounds(1001).count(), 32);
        o.share = 4;
        assert_eq!(o.samples(1001, 2001), 251);
        assert_eq!(o.samples(7, 21), 3);
        assert_eq!(o.samples(2, 21), 2);
        assert_eq!(o.rounds(251).count(), 8);
    }
}
