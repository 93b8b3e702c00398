//! The experiment list of `abperf list`: one line per stored experiment (id, creation time,
//! kind, status, variants, runs stored of planned, name).

use super::labels::elide_middle;
use abperf_model::ExperimentSummary;
use abperf_model::escape::control;
use std::fmt::Write;
use std::path::Path;

/// Longest name shown (`abperf show ID` has the whole of it).
const NAME_WIDTH: usize = 60;

/// The experiments of the store at `store`, oldest first.
pub struct Experiments<'a> {
    pub store: &'a Path,
    pub experiments: &'a [ExperimentSummary],
}

impl Experiments<'_> {
    /// One line each under a header ("no experiments in STORE" for an empty store).
    pub fn text(&self) -> String {
        let mut s = String::new();
        if self.experiments.is_empty() {
            let _ = writeln!(s, "no experiments in {}", self.store.display());
            return s;
        }
        let _ = writeln!(
            s,
            "{:>5}  {:<20}  {:<6}  {:<11}  {:>8}  {:>9}  name",
            "id", "created", "kind", "status", "variants", "runs"
        );
        for e in self.experiments {
            let _ = writeln!(
                s,
                "{:>5}  {:<20}  {:<6}  {:<11}  {:>8}  {:>9}  {}",
                e.id,
                e.created,
                e.kind,
                e.status.as_str(),
                e.variants,
                format!("{}/{}", e.runs_done, e.runs_planned.max(e.runs_done)),
                // One line each, control characters escaped (a name can neither rewrite the
                // screen nor hide what follows it); a long name ("A vs B vs C ...") keeps its
                // start and end.
                elide_middle(&control(&e.name), NAME_WIDTH)
            );
        }
        s
    }
}
