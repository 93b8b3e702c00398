//! The bisection's loop: the stored steps replayed into the state machine, then each next step
//! built and run until the machine ends; `bisect status` replays without running anything.

use super::builder::Builder;
use super::git::{self, Commit};
use super::report::{self, Source};
use super::revisions::{Built, Revisions};
use super::step::{self, End, Planned, Runs};
use super::stored::{self, Head, Mark, Stored};
use super::{Plan, StatusArgs};
use crate::commands::lookup;
use crate::runner::signals;
use crate::stats::bisect::{Bisection, Outcome, Step};
use crate::store::Store;

/// The machine after the stored steps: how far it is, and what was skipped.
struct Replayed {
    machine: Bisection,
    unbuildable: Vec<usize>,
    experiments: Vec<i64>,
}

/// The distinct revisions of a step, in ascending order.
fn distinct(revs: &[usize]) -> Vec<usize> {
    let mut d = revs.to_vec();
    d.sort_unstable();
    d.dedup();
    d
}

/// Replay the stored steps of a bisection into a new machine (their runs recorded, their
/// unbuildable revisions marked); a step that is not what the machine asks is an error. On a
/// PostgreSQL store each step's runs are read from the server into the working copy first.
fn replay(store: &mut Store, s: &Stored) -> anyhow::Result<Replayed> {
    let n = s.head.commits.len() - 1;
    let mut r = Replayed {
        machine: Bisection::new(n, s.settings),
        unbuildable: Vec::new(),
        experiments: Vec::new(),
    };
    for st in &s.steps {
        for &u in &st.mark.unbuildable {
            r.machine.unbuildable(u);
            r.unbuildable.push(u);
        }
        let asked = match r.machine.step() {
            Step::Measure(revs) => distinct(&revs),
            Step::Done(_) => Vec::new(),
        };
        if asked != st.mark.revisions {
            anyhow::bail!(
                "bisection {}: its step {} (experiment {}) measured revisions {:?} where the \
                 bisection asks for {:?}",
                s.id,
                st.mark.step,
                st.experiment,
                st.mark.revisions,
                asked
            );
        }
        store.catch_up(st.experiment)?;
        for (rev, v) in step::values(store, st.experiment, &st.mark, &s.head.metric)? {
            r.machine.record(rev, v);
        }
        r.experiments.push(st.experiment);
    }
    Ok(r)
}

/// The resumed bisection must be the one the user asks for again: the same range, commands,
/// metric and settings (a stored command is never run unless the user passed it again).
fn check_same(id: i64, stored: &Head, asked: &Head) -> anyhow::Result<()> {
    let fields = [
        ("--repo", stored.repo == asked.repo),
        ("--good/--bad", stored.commits == asked.commits),
        ("--build", stored.build == asked.build),
        ("the command", stored.command == asked.command),
        ("--metric", stored.metric == asked.metric),
        ("the settings", stored.settings == asked.settings),
    ];
    let differ: Vec<&str> = fields.iter().filter(|f| !f.1).map(|f| f.0).collect();
    if differ.is_empty() {
        return Ok(());
    }
    Err(crate::error::usage(format!(
        "--resume {id}: {} differ from what bisection {id} was started with; pass the same \
         options again (abperf bisect status {id} shows them)",
        differ.join(", ")
    )))
}

/// The merged branch of a candidate that is a merge, (fork point, tip), when the repository can
/// tell (a stored bisection's repository may be gone).
fn merged_branch(head: &Head, outcome: Option<&Outcome>) -> Option<(String, String)> {
    let &Outcome::Candidate { commit, .. } = outcome? else {
        return None;
    };
    let c = &head.commits[commit];
    git::merged_branch(std::path::Path::new(&head.repo), c)
        .ok()
        .flatten()
}

/// How a bisection ended: its exit code, and the merged branch to bisect next when the culprit
/// is a merge and `--descend-merges` asks for it.
pub struct Ended {
    pub code: i32,
    pub descend: Option<(String, String)>,
}

/// Bisect as `plan` says, each revision made ready and measured by `builder` (`build`: how
/// the head records it).
pub fn bisect<B: Builder>(plan: &Plan, builder: B, build: String) -> anyhow::Result<Ended> {
    let location = plan.db.location()?;
    let commits = git::range(&plan.repo, &plan.good, &plan.bad)?;
    let asked = Head {
        repo: plan.repo.display().to_string(),
        commits,
        build,
        command: plan.command.clone(),
        metric: plan.metric.clone(),
        settings: plan.settings,
        seed: plan.seed,
    };
    let (mut store, stored) = match &plan.resume {
        Some(reference) => {
            let store = Store::open_to_take_over(&location)?;
            let id = lookup::experiment_id(&store, reference)?;
            let stored = stored::load(&store, id)?;
            check_same(id, &stored.head, &asked)?;
            (store, Some(stored))
        }
        None => (Store::open_to_run(&location)?, None),
    };
    signals::install()?;
    let mut walk = Walk {
        head: stored.as_ref().map_or(asked.clone(), |s| s.head.clone()),
        id: stored.as_ref().map(|s| s.id),
        next: stored.as_ref().map_or(0, |s| s.steps.len()),
        pending: Vec::new(),
        trees: Revisions::new(builder)?,
        runs: Runs {
            command: plan.command.clone(),
            metric: plan.metric.clone(),
            warmup: plan.warmup,
            pre: plan.pre.clone(),
            pin: plan.pin.clone(),
            timeout: plan.timeout,
            show_output: plan.show_output,
        },
    };
    let mut state = match &stored {
        Some(s) => replay(&mut store, s)?,
        None => Replayed {
            machine: Bisection::new(asked.commits.len() - 1, plan.settings),
            unbuildable: Vec::new(),
            experiments: Vec::new(),
        },
    };
    if let Some(id) = walk.id {
        crate::error::stderr_line(&format!(
            "abperf: resuming bisection {id} after {} stored step(s), {} runs",
            walk.next,
            state.machine.runs().len()
        ));
    }
    let outcome = match walk.go(&mut store, &mut state)? {
        Ok(o) => o,
        Err(code) => {
            return Ok(Ended {
                code,
                descend: None,
            });
        }
    };
    let Some(id) = walk.id else {
        anyhow::bail!("the bisection ended before its first step was stored");
    };
    let branch = merged_branch(&walk.head, Some(&outcome));
    let r = report::build(&Source {
        id,
        head: &walk.head,
        machine: &state.machine,
        outcome: Some(&outcome),
        unbuildable: &state.unbuildable,
        experiments: state.experiments.clone(),
        merge_base: branch.as_ref().map(|b| b.0.clone()),
    });
    print!("{}", report::render(&r, plan.format)?);
    let confirmed = matches!(
        outcome,
        Outcome::Candidate {
            confirmed: true,
            ..
        }
    );
    Ok(Ended {
        code: 0,
        descend: branch.filter(|_| confirmed && plan.descend_merges),
    })
}

/// A bisection under way.
struct Walk<B: Builder> {
    head: Head,
    id: Option<i64>,
    /// The next step's number.
    next: usize,
    /// Revisions found unbuildable since the last stored step.
    pending: Vec<usize>,
    trees: Revisions<B>,
    runs: Runs,
}

impl<B: Builder> Walk<B> {
    fn commits(&self) -> &[Commit] {
        &self.head.commits
    }

    /// Run steps until the machine ends (its outcome) or a signal stops it (the exit code).
    fn go(
        &mut self,
        store: &mut Store,
        state: &mut Replayed,
    ) -> anyhow::Result<Result<Outcome, i32>> {
        let n = self.commits().len() - 1;
        loop {
            if let Some(sig) = signals::received() {
                return Ok(Err(self.stopped(sig)));
            }
            let revs = match state.machine.step() {
                Step::Done(o) => return Ok(Ok(o)),
                Step::Measure(revs) => revs,
            };
            let want = distinct(&revs);
            let per_round = revs.iter().filter(|&&r| r == want[0]).count();
            let Some(ready) = self.build(&want, state)? else {
                continue;
            };
            // A probe the search has left loses its worktree (the ends keep theirs).
            for held in self.trees.held() {
                if held != 0 && held != n && !want.contains(&held) {
                    self.trees.remove(held);
                }
            }
            let planned = self.plan(&want, state.machine.batch() * per_round);
            let (exp, end) = self
                .trees
                .builder()
                .run(store, &self.runs, &planned, &ready)?;
            if exp == 0 {
                return Ok(Err(
                    self.stopped(signals::received().unwrap_or(libc::SIGINT))
                ));
            }
            self.id.get_or_insert(exp);
            self.next += 1;
            state.experiments.push(exp);
            for (rev, v) in step::values(store, exp, &planned.mark, &self.runs.metric)? {
                state.machine.record(rev, v);
            }
            match end {
                End::Complete => {}
                End::Interrupted(sig) => return Ok(Err(self.stopped(sig))),
                End::Failed(variants) => {
                    for v in variants {
                        let r = want[v.min(want.len() - 1)];
                        self.skip(r, "its command failed", state)?;
                    }
                }
            }
        }
    }

    /// The revisions of `want`, each made ready; None when one does not build (it is skipped).
    fn build(
        &mut self,
        want: &[usize],
        state: &mut Replayed,
    ) -> anyhow::Result<Option<Vec<B::Ready>>> {
        let mut paths = Vec::new();
        for &r in want {
            let commit = self.head.commits[r].clone();
            match self.trees.get(r, &commit)? {
                Built::Ready(p) => paths.push(p),
                Built::Failed(why) => {
                    self.skip(r, &why, state)?;
                    return Ok(None);
                }
            }
        }
        Ok(Some(paths))
    }

    /// Revision `r` cannot be built or run: skipped (an end cannot be).
    fn skip(&mut self, r: usize, why: &str, state: &mut Replayed) -> anyhow::Result<()> {
        let n = self.commits().len() - 1;
        let c = &self.commits()[r];
        if r == 0 || r == n {
            let end = if r == 0 { "good" } else { "bad" };
            anyhow::bail!("the {end} end {} (\"{}\"): {why}", c.short(), c.subject);
        }
        crate::error::stderr_line(&format!(
            "abperf: bisect: {} (\"{}\"): {why}; skipped",
            c.short(),
            c.subject
        ));
        state.machine.unbuildable(r);
        state.unbuildable.push(r);
        self.pending.push(r);
        Ok(())
    }

    fn plan(&mut self, want: &[usize], rounds: usize) -> Planned {
        let n = self.commits().len() - 1;
        let names: Vec<String> = want
            .iter()
            .map(|&r| {
                let what = match r {
                    0 => "good",
                    r if r == n => "bad",
                    _ => "rev",
                };
                format!("{what}-{r}-{}", self.commits()[r].short())
            })
            .collect();
        let title = format!(
            "bisect {}: step {} ({})",
            self.id.map_or("new".to_string(), |i| i.to_string()),
            self.next,
            names.join(" ")
        );
        let mark = Mark {
            of: self.id,
            step: self.next,
            revisions: want.to_vec(),
            unbuildable: std::mem::take(&mut self.pending),
            head: self.id.is_none().then(|| self.head.clone()),
        };
        Planned {
            title,
            names,
            rounds: rounds.min(u32::MAX as usize) as u32,
            // Each step's own order, from the bisection's seed.
            seed: self.head.seed.wrapping_add(self.next as u64),
            mark,
        }
    }

    /// A signal stopped the bisection: say how to go on; the exit code.
    fn stopped(&self, sig: i32) -> i32 {
        let how = match self.id {
            Some(id) => format!(
                "bisection {id} stopped after {} step(s), every finished run stored; continue \
                 it with the same command and --resume {id}",
                self.next
            ),
            None => "the bisection stopped before its first step was stored".to_string(),
        };
        crate::error::stderr_line(&format!(
            "abperf: interrupted by {}: {how}",
            signals::name(sig)
        ));
        128 + sig
    }
}

/// `bisect status [ID]`: one bisection's report, or a line per bisection.
pub fn status(args: &StatusArgs) -> anyhow::Result<i32> {
    let mut store = Store::open_to_read(&args.db.location()?)?;
    let Some(reference) = &args.id else {
        for (id, head) in stored::heads(&store)? {
            let n = head.commits.len().saturating_sub(1);
            let (g, b) = (&head.commits[0], &head.commits[n]);
            println!(
                "{id}  {} commits {}..{}  {}",
                n,
                g.short(),
                b.short(),
                head.command
            );
        }
        return Ok(0);
    };
    let id = lookup::experiment_id(&store, reference)?;
    let s = stored::load(&store, id)?;
    let mut r = replay(&mut store, &s)?;
    let outcome = match r.machine.step() {
        Step::Done(o) => Some(o),
        Step::Measure(_) => None,
    };
    let rep = report::build(&Source {
        id,
        head: &s.head,
        machine: &r.machine,
        outcome: outcome.as_ref(),
        unbuildable: &r.unbuildable,
        experiments: std::mem::take(&mut r.experiments),
        merge_base: merged_branch(&s.head, outcome.as_ref()).map(|b| b.0),
    });
    print!("{}", report::render(&rep, args.format)?);
    Ok(0)
}
