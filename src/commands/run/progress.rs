//! How a run experiment shows its progress while it runs: a progress bar with ETA on stderr, and
//! `--until-decided`'s group-sequential stopping rule, looked at as runs complete.

use crate::commands::output;
use crate::model::SequentialPlan;
use crate::report::perfstat;
use crate::runner::experiment::{Progress, RunSink};
use crate::stats::sequential::Looks;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;

/// The group-sequential stopping rule of `--until-decided`: at each look (every variant has
/// run `runs_at(k)` timed runs) Welch's p of each variant against the first, on wall time,
/// against the look's O'Brien-Fleming boundary.
pub(crate) struct Sequential {
    plan: SequentialPlan,
    boundaries: Vec<f64>,
    next: usize,
    variants: usize,
}

impl Sequential {
    pub(crate) fn new(plan: SequentialPlan, variants: usize) -> Sequential {
        Sequential {
            boundaries: plan.boundaries(variants.saturating_sub(1)),
            plan,
            next: 1,
            variants,
        }
    }

    fn check(
        &mut self,
        sink: &dyn RunSink,
        done: &BTreeMap<usize, u32>,
    ) -> anyhow::Result<Option<String>> {
        if self.variants < 2 || self.next > self.plan.looks {
            return Ok(None);
        }
        let need = self.plan.runs_at(self.next);
        if (0..self.variants).any(|v| (done.get(&v).copied().unwrap_or(0) as usize) < need) {
            return Ok(None);
        }
        let k = self.next;
        self.next += 1;
        let Some(ds) = sink.stored()? else {
            return Ok(None);
        };
        let first = |pos: usize| -> Vec<f64> {
            let mut v = ds.values(pos, output::DEFAULT_METRIC);
            v.truncate(need);
            v
        };
        let base = first(0);
        let others: Vec<Vec<f64>> = (1..self.variants).map(first).collect();
        if base.len() < need || others.iter().any(|o| o.len() < need) {
            return Ok(None); // failed runs (with -i): wait for the next look
        }
        let refs: Vec<&[f64]> = others.iter().map(Vec::as_slice).collect();
        let look = self.plan.look(k, &self.boundaries, &base, &refs);
        crate::error::stderr_line(&format!(
            "abperf: look {k} of {} at {need} runs per variant: Welch {} against the boundary p < {:.2e} (|z| >= {:.3}){}",
            self.plan.looks,
            look.p
                .iter()
                .map(|p| crate::stats::verdict::fmt_p(*p))
                .collect::<Vec<_>>()
                .join(", "),
            look.nominal_p,
            look.boundary,
            if look.decided { ": decided" } else { "" }
        ));
        Ok(look.decided.then(|| {
            format!(
                "decided at look {k} of {} ({need} of up to {} runs per variant): every variant \
                 crossed the O'Brien-Fleming boundary p < {:.2e}",
                self.plan.looks, self.plan.max_runs, look.nominal_p
            )
        }))
    }
}

/// A progress bar with ETA on stderr (indicatif hides it when stderr is not a terminal), and
/// the sequential stopping rule when there is one.
pub(crate) struct Bar(
    pub(crate) Option<ProgressBar>,
    pub(crate) Option<Sequential>,
);

impl Progress for Bar {
    fn decided(
        &mut self,
        sink: &dyn RunSink,
        done: &BTreeMap<usize, u32>,
    ) -> anyhow::Result<Option<String>> {
        match self.1.as_mut() {
            Some(s) => s.check(sink, done),
            None => Ok(None),
        }
    }
    fn start(&mut self, total: u64) {
        let pb = ProgressBar::new(total);
        pb.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} ETA {eta} {msg}")
                .expect("static template")
                .progress_chars("=> "),
        );
        self.0 = Some(pb);
    }
    fn ran(&mut self, variant: &str, i: u32, of: u32, wall_ns: u64) {
        if let Some(pb) = &self.0 {
            // Not formatted when nobody sees it (stderr not a terminal): a per-run cost.
            if pb.is_hidden() {
                pb.inc(1);
                return;
            }
            let (n, u) = perfstat::human(wall_ns as f64, "ns");
            let variant = crate::model::escape::control(variant);
            pb.set_message(format!("{variant}: run {i} of {of}, last {n} {u}"));
            pb.inc(1);
        }
    }
    fn finish(&mut self) {
        if let Some(pb) = self.0.take() {
            pb.finish_and_clear();
        }
    }
    fn note(&mut self, msg: &str) {
        match &self.0 {
            Some(pb) => pb.suspend(|| crate::error::stderr_line(msg)),
            None => crate::error::stderr_line(msg),
        }
    }
}
