//! Hosts as blocks (docs/statistics.md#hosts-as-blocks): the analysis of runs whose top
//! replicated level is the host. Every pair runs on host means as before ([`super::analysis`]),
//! and a pair whose hosts all ran both variants is then judged host by host instead
//! ([`super::host_effects`]): the random-effects mean of the per-host effects, its HKSJ interval
//! and p, before the correction for the family. A pair whose hosts did not all run both variants
//! keeps the unpaired comparison of host means, and a note says why.

use super::analysis::{Analysis, Settings, analyse_with};
use super::compare::Comparison;
use super::host_effects::{HostsComparison, compare_hosts};
use super::replicated::within_level;
use abperf_model::{Dataset, Level};
use std::collections::HashMap;

/// The analysis of `ds` with hosts as blocks where they are (see the module comment).
pub fn analyse(ds: &Dataset, s: &Settings) -> Analysis {
    let means = ds.level_means(Level::Host);
    let mut within: HashMap<String, Option<Option<Level>>> = HashMap::new();
    let mut judge_pair = |ia: usize, ib: usize, c: &mut Comparison| {
        let w = *within
            .entry(c.metric.clone())
            .or_insert_with(|| within_level(ds, &c.metric));
        // Another top level for this metric: its host means stay unpaired.
        let Some(w) = w else {
            return;
        };
        match compare_hosts(ds, (ia, ib), &c.metric, w, c.options.alpha) {
            Ok(h) => judge(c, h),
            Err(why) => c.notes.push(format!(
                "hosts not used as blocks: {why}; the verdict is the unpaired comparison of \
                 host means"
            )),
        }
    };
    analyse_with(&means, s, &mut judge_pair)
}

/// Make `h` the evidence of `c` (the same pair and metric): the random-effects ratio, its
/// intervals and p, n the hosts, the SD of a host's effect as the spread for the units needed.
pub fn judge(c: &mut Comparison, h: HostsComparison) {
    let re = &h.combined;
    let (alpha, power, effect) = (c.options.alpha, c.options.power, c.options.effect_pct);
    let sd = h.effect_sd_pct;
    let ev = &mut c.evidence;
    ev.ratio = h.ratio;
    ev.ci95 = Some((h.ratio_ci[0], h.ratio_ci[1]));
    ev.ci90 = Some((re.ci_equivalence[0].exp(), re.ci_equivalence[1].exp()));
    ev.p = Some(re.p);
    ev.method = METHOD.into();
    ev.counted = super::verdict::Counted::HostEffects;
    (ev.n_baseline, ev.n_variant) = (re.k, re.k);
    ev.cv_pct = Some(sd);
    ev.detectable_pct = super::power::detectable_paired(re.k, alpha, power).map(|d| d * sd);
    ev.runs_needed = super::power::pairs_needed(sd, effect, alpha, power);
    ev.runs_needed_observed = super::power::pairs_needed(sd, (h.ratio - 1.0) * 100.0, alpha, power);
    c.primary = "hosts".into();
    c.disagree = None;
    // The floors of the unpaired test of host means do not apply to the paired one.
    c.notes.retain(|n| !n.starts_with("fewer than"));
    c.notes.push(format!(
        "hosts as blocks: every one of the {} hosts ran both variants, so the verdict is the \
         random-effects mean of the per-host effects (Paule-Mandel tau^2, HKSJ interval); \
         Welch on host means, unpaired, is in the details",
        re.k
    ));
    c.p_adjusted = Some(re.p);
    c.details.hosts = Some(h);
    c.refresh();
}

/// The method named at the end of a verdict line judged host by host.
pub const METHOD: &str = "random effects over hosts, HKSJ";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Options;
    use crate::host_effects::tests::dataset;

    fn settings() -> Settings {
        let options = Options {
            resamples: 0,
            ..Options::default()
        };
        Settings::against(0, vec!["wall_ns".into()], options)
    }

    #[test]
    fn every_host_ran_both_variants_so_the_verdict_is_paired() {
        // b is 2% faster on every host; the hosts' own speeds differ by 40%.
        let hosts = [
            ("h1", 1000.0, -0.02),
            ("h2", 1200.0, -0.02),
            ("h3", 1400.0, -0.02),
        ];
        let ds = dataset(&hosts, 4, 5, 7);
        let a = analyse(&ds, &settings());
        let c = &a.comparisons[0];
        assert_eq!(c.primary, "hosts");
        assert_eq!(c.verdict, crate::verdict::Verdict::Faster, "{}", c.line);
        assert!(
            c.line.contains(&format!("n=3 hosts, {METHOD})")),
            "{}",
            c.line
        );
        let h = c.details.hosts.as_ref().unwrap();
        assert_eq!(h.hosts.len(), 3);
        assert!(!h.heterogeneous);
        assert!((c.evidence.ratio - h.ratio).abs() < 1e-15);
        assert!(
            c.notes.iter().any(|n| n.starts_with("hosts as blocks")),
            "{:?}",
            c.notes
        );
        // With 3 host means per variant the unpaired test would have been a description only.
        assert!(c.p_welch.is_none());
    }

    #[test]
    fn a_host_without_both_variants_keeps_the_unpaired_analysis() {
        let hosts: Vec<(String, f64, f64)> = (0..5)
            .map(|h| (format!("h{h}"), 1000.0 + 100.0 * h as f64, 0.0))
            .collect();
        let refs: Vec<(&str, f64, f64)> =
            hosts.iter().map(|(n, s, e)| (n.as_str(), *s, *e)).collect();
        let mut ds = dataset(&refs, 3, 4, 8);
        ds.runs
            .retain(|r| !(r.variant == 1 && r.labels.host.as_deref() == Some("h4")));
        let a = analyse(&ds, &settings());
        let c = &a.comparisons[0];
        assert_eq!(c.primary, "welch");
        assert!(c.details.hosts.is_none());
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("not every host ran both variants (h4 ran a only)")),
            "{:?}",
            c.notes
        );
    }
}
