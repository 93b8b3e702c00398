//! Per-host effects (docs/statistics.md#hosts-as-blocks): when the top replicated level is the
//! host and every host ran both variants of a pair, each host gives its own effect, combined by
//! a random-effects model ([`super::meta_analysis`]); [`super::hosts`] makes that the verdict
//! instead of the unpaired comparison of host means. A machine's own speed then cancels
//! out of its effect, and the spread of the effect between machines (tau^2) is estimated and
//! tested.
//!
//! A host's effect is the log ratio of the two variants' means on it, ln(mean_B / mean_A); each
//! mean is the mean of that host's units at the next replicated level below the host (boots, or
//! invocations), or of its runs when no level below is replicated: the unit means are the
//! independent replicates inside a host, as host means are across hosts
//! (docs/statistics.md#levels). Its variance by the delta method is
//! s_A^2 / (n_A mean_A^2) + s_B^2 / (n_B mean_B^2), with s^2 the variance of those unit means
//! and Satterthwaite's degrees of freedom.
//!
//! Pure computation: no I/O.

use super::dist::t_ppf;
use super::meta_analysis::{RandomEffects, random_effects};
use super::verdict::{fmt_p, fmt_signed_pct};
use abperf_model::describe::{mean, variance};
use abperf_model::{Dataset, Level};
use serde::Serialize;
use std::collections::BTreeMap;

/// One host's effect.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostEffect {
    pub host: String,
    /// Units its standard error comes from (`HostsComparison::within`), baseline then variant.
    pub units: [usize; 2],
    pub runs: [usize; 2],
    pub mean_baseline: f64,
    pub mean_variant: f64,
    /// ln(mean_variant / mean_baseline), its standard error and Satterthwaite df.
    pub log_ratio: f64,
    pub se: f64,
    pub df: f64,
    /// (mean_variant / mean_baseline - 1) * 100 and its interval at the analysis' 1 - alpha (t
    /// at `df`), in percent.
    pub change_pct: f64,
    pub ci_pct: [f64; 2],
    /// Its share of the random-effects weight (0..1).
    pub weight: f64,
}

/// A pair of variants compared host by host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostsComparison {
    pub baseline: String,
    pub variant: String,
    pub metric: String,
    /// The level a host's standard error comes from: "boot", "invocation" or "run".
    pub within: String,
    pub hosts: Vec<HostEffect>,
    /// The combination of the hosts' log ratios.
    pub combined: RandomEffects,
    /// exp of the combined mean, interval and prediction interval: the ratio of means on a
    /// typical host (a geometric mean over hosts).
    pub ratio: f64,
    pub ratio_ci: [f64; 2],
    pub prediction_ratio: Option<[f64; 2]>,
    /// SD of one host's effect, percent: 100 sqrt(tau^2 + the mean of the hosts' variances).
    pub effect_sd_pct: f64,
    /// The effect differs between hosts: Welch's test of equal effects p < alpha.
    pub heterogeneous: bool,
    /// Said in the verdict line when `heterogeneous`.
    pub heterogeneity: Option<String>,
}

/// Per host, variant `pos`'s values of `metric` grouped by unit at `within` (each run its own
/// unit when None).
fn per_host(
    ds: &Dataset,
    pos: usize,
    metric: &str,
    within: Option<Level>,
) -> BTreeMap<String, BTreeMap<String, Vec<f64>>> {
    let mut out: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for (i, r) in ds.counted(pos).enumerate() {
        let (Some(host), Some(v)) = (ds.unit_at(r, Level::Host), r.value(metric)) else {
            continue;
        };
        let unit = match within {
            Some(l) => ds.unit_at(r, l).unwrap_or_else(|| format!("#{i}")),
            None => format!("#{i}"),
        };
        out.entry(host)
            .or_default()
            .entry(unit)
            .or_default()
            .push(v);
    }
    out
}

/// The mean of a host's unit means, the variance of that mean relative to its square, the
/// degrees of freedom, the units and the runs.
struct Side {
    mean: f64,
    rel_var: f64,
    df: f64,
    units: usize,
    runs: usize,
}

fn side(units: &BTreeMap<String, Vec<f64>>) -> Side {
    let means: Vec<f64> = units.values().map(|v| mean(v)).collect();
    let m = mean(&means);
    let n = means.len();
    Side {
        mean: m,
        rel_var: variance(&means) / n as f64 / (m * m),
        df: n as f64 - 1.0,
        units: n,
        runs: units.values().map(Vec::len).sum(),
    }
}

/// One host's effect from its two sides, or why there is none.
fn host_effect(
    host: &str,
    a: &Side,
    b: &Side,
    within: &str,
    level: f64,
) -> Result<HostEffect, String> {
    if a.units < 2 || b.units < 2 {
        return Err(format!(
            "host {host} has {}+{} {within}(s) of the two variants: its effect needs at least 2 \
             of each for a standard error",
            a.units, b.units
        ));
    }
    if !(a.mean > 0.0 && b.mean > 0.0) {
        return Err(format!("host {host}: a ratio needs positive means"));
    }
    let v = a.rel_var + b.rel_var;
    if !(v > 0.0 && v.is_finite()) {
        return Err(format!(
            "host {host}: every {within} of both variants gave the same mean (no spread to \
             weigh the host by)"
        ));
    }
    let df = v * v / (a.rel_var.powi(2) / a.df + b.rel_var.powi(2) / b.df);
    let y = (b.mean / a.mean).ln();
    let h = t_ppf(0.5 + level / 2.0, df) * v.sqrt();
    let pct = |x: f64| (x.exp() - 1.0) * 100.0;
    Ok(HostEffect {
        host: host.to_string(),
        units: [a.units, b.units],
        runs: [a.runs, b.runs],
        mean_baseline: a.mean,
        mean_variant: b.mean,
        log_ratio: y,
        se: v.sqrt(),
        df,
        change_pct: pct(y),
        ci_pct: [pct(y - h), pct(y + h)],
        weight: 0.0,
    })
}

/// Hosts that ran only one of the two variants, for the reason the pair is not blocked.
fn unshared<V>(
    a: &BTreeMap<String, V>,
    b: &BTreeMap<String, V>,
    na: &str,
    nb: &str,
) -> Option<String> {
    let only = |x: &BTreeMap<String, V>, y: &BTreeMap<String, V>| -> Vec<String> {
        x.keys().filter(|h| !y.contains_key(*h)).cloned().collect()
    };
    let (oa, ob) = (only(a, b), only(b, a));
    let mut parts = Vec::new();
    if !oa.is_empty() {
        parts.push(format!("{} ran {na} only", oa.join(", ")));
    }
    if !ob.is_empty() {
        parts.push(format!("{} ran {nb} only", ob.join(", ")));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The host-by-host comparison of variant `ib` against `ia` on `metric`, with each host's
/// standard error from its units at `within` (its runs when None) and intervals at 1 - `alpha`;
/// Err with the reason when the hosts are not blocks of this pair.
pub fn compare_hosts(
    ds: &Dataset,
    (ia, ib): (usize, usize),
    metric: &str,
    within: Option<Level>,
    alpha: f64,
) -> Result<HostsComparison, String> {
    let (na, nb) = (&ds.variants[ia].name, &ds.variants[ib].name);
    let (a, b) = (
        per_host(ds, ia, metric, within),
        per_host(ds, ib, metric, within),
    );
    if let Some(why) = unshared(&a, &b, na, nb) {
        return Err(format!("not every host ran both variants ({why})"));
    }
    if a.len() < 2 {
        return Err("one host: no spread between hosts to estimate".into());
    }
    let within_name = within.map_or("run", Level::name);
    let hosts = a
        .iter()
        .map(|(host, units)| {
            let (sa, sb) = (side(units), side(&b[host]));
            host_effect(host, &sa, &sb, within_name, 1.0 - alpha)
        })
        .collect::<Result<Vec<HostEffect>, String>>()?;
    combine(na, nb, metric, within_name, hosts, alpha)
}

/// The hosts' effects combined (weights filled in), with the heterogeneity sentence.
fn combine(
    na: &str,
    nb: &str,
    metric: &str,
    within: &str,
    mut hosts: Vec<HostEffect>,
    alpha: f64,
) -> Result<HostsComparison, String> {
    let y: Vec<f64> = hosts.iter().map(|h| h.log_ratio).collect();
    let v: Vec<f64> = hosts.iter().map(|h| h.se * h.se).collect();
    let df: Vec<f64> = hosts.iter().map(|h| h.df).collect();
    let re = random_effects(&y, &v, Some(&df), alpha).map_err(|e| e.to_string())?;
    for (h, w) in hosts.iter_mut().zip(&re.weights) {
        h.weight = *w;
    }
    let mean_v = mean(&v);
    let mut c = HostsComparison {
        baseline: na.to_string(),
        variant: nb.to_string(),
        metric: metric.to_string(),
        within: within.to_string(),
        ratio: re.mean.exp(),
        ratio_ci: re.ci.map(f64::exp),
        prediction_ratio: re.prediction.map(|p| p.map(f64::exp)),
        effect_sd_pct: 100.0 * (re.tau2 + mean_v).sqrt(),
        heterogeneous: false,
        heterogeneity: None,
        hosts,
        combined: re,
    };
    c.heterogeneity = heterogeneity(&c, alpha);
    c.heterogeneous = c.heterogeneity.is_some();
    Ok(c)
}

/// Most hosts named in the heterogeneity sentence: the largest and smallest effects beyond it.
const NAMED_HOSTS: usize = 6;

/// "the effect differs between hosts (Welch's test of equal effects p=0.0031; I^2 87%, tau
/// 1.60%): +3.10% on zen4-a, -0.20% on skylake-b" when the test's p < alpha.
fn heterogeneity(c: &HostsComparison, alpha: f64) -> Option<String> {
    let re = &c.combined;
    let w = re.welch.as_ref()?;
    if w.p >= alpha {
        return None;
    }
    let mut by: Vec<&HostEffect> = c.hosts.iter().collect();
    by.sort_by(|x, y| y.change_pct.total_cmp(&x.change_pct));
    let say = |h: &&HostEffect| format!("{} on {}", fmt_signed_pct(h.change_pct), h.host);
    let named: Vec<String> = if by.len() <= NAMED_HOSTS {
        by.iter().map(say).collect()
    } else {
        let half = NAMED_HOSTS / 2;
        let mut v: Vec<String> = by[..half].iter().map(say).collect();
        v.push("...".into());
        v.extend(by[by.len() - half..].iter().map(say));
        v
    };
    Some(format!(
        "the effect differs between hosts (Welch's test of equal effects {}; I^2 {:.0}%, tau {}): {}",
        fmt_p(w.p),
        re.i2 * 100.0,
        super::verdict::fmt_pct(re.tau * 100.0),
        named.join(", ")
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::reference::normal;
    use abperf_model::{Labels, Metric, Run, Variant};
    use rand::SeedableRng;

    /// Seeded runs of variants a and b: per host its name, its speed and b's true effect
    /// (relative), `boots` boots of each variant on each host with `runs` runs each; relative
    /// SDs 0.4% between boots and 1% between runs.
    pub(crate) fn dataset(
        hosts: &[(&str, f64, f64)],
        boots: usize,
        runs: usize,
        seed: u64,
    ) -> Dataset {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut out = Vec::new();
        for &(host, speed, effect) in hosts {
            for v in 0..2 {
                for b in 0..boots {
                    let ub = 0.004 * normal(&mut rng);
                    for _ in 0..runs {
                        let e = if v == 1 { effect } else { 0.0 };
                        let value = speed * (1.0 + e) * (1.0 + ub + 0.01 * normal(&mut rng));
                        let seq = out.len() as u32;
                        out.push(Run {
                            labels: Labels {
                                invocation: None,
                                boot: Some(format!("v{v}b{b}")),
                                host: Some(host.to_string()),
                            },
                            ..Run::ok(seq, v, vec![Metric::new("wall_ns", value, "ns")])
                        });
                    }
                }
            }
        }
        let variants = vec![Variant::named("a"), Variant::named("b")];
        Dataset::new(vec![], variants, out, "t".into())
    }

    fn hosts_of(n: usize, effect: f64) -> Vec<(String, f64, f64)> {
        (0..n)
            .map(|h| (format!("h{h}"), 1000.0 + 150.0 * h as f64, effect))
            .collect()
    }

    fn refs(h: &[(String, f64, f64)]) -> Vec<(&str, f64, f64)> {
        h.iter().map(|(n, s, e)| (n.as_str(), *s, *e)).collect()
    }

    #[test]
    fn a_host_gives_the_log_ratio_of_its_boot_means() {
        let ds = dataset(&[("x", 1000.0, 0.0), ("y", 2000.0, 0.0)], 3, 4, 1);
        let c = compare_hosts(&ds, (0, 1), "wall_ns", Some(Level::Boot), 0.05).unwrap();
        assert_eq!(c.within, "boot");
        let x = &c.hosts[0];
        assert_eq!((x.host.as_str(), x.units, x.runs), ("x", [3, 3], [12, 12]));
        let boot_means = |v: usize| -> Vec<f64> {
            (0..3)
                .map(|b| {
                    let vals: Vec<f64> = ds
                        .runs
                        .iter()
                        .filter(|r| r.variant == v && r.labels.host.as_deref() == Some("x"))
                        .filter(|r| r.labels.boot.as_deref() == Some(&format!("v{v}b{b}")))
                        .filter_map(|r| r.value("wall_ns"))
                        .collect();
                    mean(&vals)
                })
                .collect()
        };
        let (a, b) = (boot_means(0), boot_means(1));
        let (ma, mb) = (mean(&a), mean(&b));
        assert!((x.log_ratio - (mb / ma).ln()).abs() < 1e-12);
        let v = variance(&a) / 3.0 / (ma * ma) + variance(&b) / 3.0 / (mb * mb);
        assert!((x.se - v.sqrt()).abs() < 1e-12 * v.sqrt());
        // The machine's own speed (2x) cancels: both effects are small.
        assert!(c.hosts.iter().all(|h| h.change_pct.abs() < 3.0), "{c:?}");
        // Runs as the units when no level below the host is named.
        let r = compare_hosts(&ds, (0, 1), "wall_ns", None, 0.05).unwrap();
        assert_eq!((r.within.as_str(), r.hosts[0].units), ("run", [12, 12]));
    }

    #[test]
    fn hosts_that_did_not_run_both_variants_are_no_blocks() {
        let mut ds = dataset(
            &[("x", 1000.0, 0.0), ("y", 1200.0, 0.0), ("z", 900.0, 0.0)],
            3,
            4,
            2,
        );
        ds.runs
            .retain(|r| !(r.variant == 1 && r.labels.host.as_deref() == Some("z")));
        let e = compare_hosts(&ds, (0, 1), "wall_ns", Some(Level::Boot), 0.05).unwrap_err();
        assert_eq!(e, "not every host ran both variants (z ran a only)");
        // One boot of b on host y: no standard error for that host.
        let mut one = dataset(&[("x", 1000.0, 0.0), ("y", 1200.0, 0.0)], 2, 4, 3);
        one.runs.retain(|r| {
            !(r.variant == 1
                && r.labels.boot.as_deref() == Some("v1b1")
                && r.labels.host.as_deref() == Some("y"))
        });
        let e = compare_hosts(&one, (0, 1), "wall_ns", Some(Level::Boot), 0.05).unwrap_err();
        assert!(e.contains("host y has 2+1 boot(s)"), "{e}");
    }

    /// A/A over hosts: the combined interval (truncated HKSJ) covers 0 in about 1 - alpha of
    /// seeded data sets (6 hosts x 3 boots x 4 runs); the planted-effect case is detected.
    #[test]
    fn a_a_over_hosts_covers_and_heterogeneity_is_found() {
        let hosts = hosts_of(6, 0.0);
        let (mut covered, mut flagged, n) = (0, 0, 400);
        for seed in 0..n {
            let ds = dataset(&refs(&hosts), 3, 4, 1000 + seed);
            let c = compare_hosts(&ds, (0, 1), "wall_ns", Some(Level::Boot), 0.05).unwrap();
            let [lo, hi] = c.combined.ci;
            covered += usize::from(lo <= 0.0 && 0.0 <= hi);
            flagged += usize::from(c.heterogeneous);
        }
        let cover = covered as f64 / n as f64;
        assert!((0.925..=0.99).contains(&cover), "coverage {cover}");
        let false_het = flagged as f64 / n as f64;
        assert!(
            false_het <= 0.08,
            "heterogeneity said in {false_het} of A/A data sets"
        );
        // -3% on two hosts, nothing on two: found in most seeded data sets, and said.
        let planted = [
            ("zen4-a", 1000.0, -0.03),
            ("zen4-b", 1040.0, -0.03),
            ("skylake-a", 1300.0, 0.0),
            ("skylake-b", 1350.0, 0.0),
        ];
        let mut found = 0;
        for seed in 0..50 {
            let ds = dataset(&planted, 3, 5, 5000 + seed);
            let c = compare_hosts(&ds, (0, 1), "wall_ns", Some(Level::Boot), 0.05).unwrap();
            if let Some(text) = &c.heterogeneity {
                assert!(
                    text.starts_with("the effect differs between hosts (Welch's test"),
                    "{text}"
                );
                assert!(
                    text.contains("% on zen4-a") && text.contains("% on skylake-b"),
                    "{text}"
                );
                found += 1;
            }
        }
        assert!(found >= 40, "heterogeneity found in {found} of 50");
    }
}
