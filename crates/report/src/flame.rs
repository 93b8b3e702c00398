//! The differential flame graph's frames (issue 44, docs/profile.md#the-flame-graph): each
//! variant's stored stacks merged over its profiled runs into one mean share per frame path
//! (`main`, `main;work`, `main;work;hot`), laid out as B's flame graph (widths: B's mean share),
//! each frame with the change of its share from A to B: a bootstrap interval over runs and a
//! Welch p-value with Benjamini-Hochberg over the frames drawn, made by the same
//! [`profile_diff`] as the symbols' differential.

use abperf_model::profile::{Profile, ProfiledRun, ShareKind, SymbolShare};
use abperf_stats::profile_diff::{self, SymbolDiff};
use std::collections::{BTreeMap, HashMap};

/// The most frames drawn from root to tip (deeper ones are left out, and the note says so):
/// the graph's size and the differential's work stay bounded whatever the stored stacks hold.
pub const MAX_DEPTH: usize = 64;

/// One frame as drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The frame's path, root first, `;` between frames.
    pub path: String,
    /// Its own name (the path's last frame).
    pub name: String,
    /// 0 for a root frame.
    pub depth: usize,
    /// Left edge and width as fractions of B's samples.
    pub x: f64,
    pub width: f64,
    /// Mean share of A's and B's samples with this path on the stack.
    pub share_a: f64,
    pub share_b: f64,
    /// The change of its share from A to B (absent: not tested).
    pub change: Option<SymbolDiff>,
}

/// The merged frames of two variants' profiled runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Flame {
    /// Frames at least `min_width` wide, parents before their children.
    pub frames: Vec<Frame>,
    /// Mean share of B's samples in stacks not kept (not drawn).
    pub other_b: f64,
    /// Why no frame has an interval, when none has.
    pub untested: Option<String>,
    /// Whether frames deeper than [`MAX_DEPTH`] were left out.
    pub cut: bool,
}

/// Each run's share per frame path; `None` when a run has no stored stacks.
fn per_run(runs: &[&ProfiledRun]) -> Option<Vec<HashMap<String, f64>>> {
    runs.iter()
        .map(|r| r.stacks.as_ref().map(|s| s.path_shares(r.profile.samples)))
        .collect()
}

/// The mean over `runs` of each path's share (a path missing from a run counts 0 there).
fn mean(runs: &[HashMap<String, f64>]) -> BTreeMap<String, f64> {
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for r in runs {
        for (p, v) in r {
            *out.entry(p.clone()).or_default() += v;
        }
    }
    let n = runs.len().max(1) as f64;
    out.values_mut().for_each(|v| *v /= n);
    out
}

/// The frame paths of `b` at least `min_width` wide, laid out: siblings by name, each child
/// starting where its parent's previous child ended.
fn layout(b: &BTreeMap<String, f64>, min_width: f64) -> Vec<(String, usize, f64, f64)> {
    let mut kept: Vec<(&String, usize, f64)> = b
        .iter()
        .filter(|(_, w)| **w >= min_width)
        .map(|(p, w)| (p, p.matches(';').count(), *w))
        .filter(|x| x.1 < MAX_DEPTH)
        .collect();
    kept.sort_by(|x, y| x.1.cmp(&y.1).then_with(|| x.0.cmp(y.0)));
    // Next free left edge among each frame's children ("" is the roots' parent).
    let mut cursor: HashMap<&str, f64> = HashMap::new();
    let mut out = Vec::new();
    for (path, depth, w) in kept {
        let parent = path.rfind(';').map_or("", |i| &path[..i]);
        let Some(x) = cursor.get(parent).copied().or((depth == 0).then_some(0.0)) else {
            continue; // its parent was too narrow (only by rounding)
        };
        cursor.insert(parent, x + w);
        cursor.insert(path, x);
        out.push((path.clone(), depth, x, w));
    }
    out
}

/// The paths' shares per run as profiles the differential reads (inclusive shares).
fn as_profiles(runs: &[HashMap<String, f64>], paths: &[&str]) -> Vec<Profile> {
    runs.iter()
        .map(|r| Profile {
            event: String::new(),
            samples: 0,
            symbols: paths
                .iter()
                .filter_map(|p| {
                    r.get(*p).map(|&v| SymbolShare {
                        symbol: p.to_string(),
                        self_share: 0.0,
                        inclusive_share: v,
                    })
                })
                .collect(),
            other_self: 0.0,
        })
        .collect()
}

/// The flame graph of `b` against `a`: `None` unless every run of both has stored stacks (and
/// each variant has one). Frames narrower than `min_width` (a fraction of B's samples) are
/// left out.
pub fn merge(a: &[&ProfiledRun], b: &[&ProfiledRun], min_width: f64) -> Option<Flame> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (ra, rb) = (per_run(a)?, per_run(b)?);
    let (ma, mb) = (mean(&ra), mean(&rb));
    let laid = layout(&mb, min_width);
    let paths: Vec<&str> = laid.iter().map(|f| f.0.as_str()).collect();
    let opts = profile_diff::Options {
        kind: ShareKind::Inclusive,
        ..Default::default()
    };
    let (diff, untested) = match profile_diff::differential(
        &as_profiles(&ra, &paths),
        &as_profiles(&rb, &paths),
        opts,
    ) {
        Ok(d) => (
            d.symbols
                .into_iter()
                .map(|s| (s.symbol.clone(), s))
                .collect(),
            None,
        ),
        Err(e) => (HashMap::new(), Some(e.to_string())),
    };
    let mut diff: HashMap<String, SymbolDiff> = diff;
    let frames = laid
        .into_iter()
        .map(|(path, depth, x, width)| Frame {
            name: path.rsplit(';').next().unwrap_or("").to_string(),
            share_a: ma.get(&path).copied().unwrap_or(0.0),
            share_b: width,
            change: diff.remove(&path),
            path,
            depth,
            x,
            width,
        })
        .collect();
    let kept_b: f64 = mb
        .iter()
        .filter(|(p, _)| !p.contains(';'))
        .map(|x| x.1)
        .sum();
    Some(Flame {
        frames,
        other_b: (1.0 - kept_b).max(0.0),
        untested,
        cut: mb.keys().any(|p| p.matches(';').count() >= MAX_DEPTH),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use abperf_model::profile::Counts;

    fn run(variant: usize, hot: u32, cold: u32) -> ProfiledRun {
        let mut c = Counts::default();
        for _ in 0..hot {
            c.add_stack(["hot", "work", "main"]);
        }
        for _ in 0..cold {
            c.add_stack(["cold", "main"]);
        }
        c.add_stack(["tiny", "main"]);
        ProfiledRun {
            variant,
            seq: 0,
            wall_ns: 1,
            profile: c.profile("cpu-clock", 10),
            stacks: Some(c.stacks(10)),
        }
    }

    #[test]
    fn runs_merge_into_frames_laid_out_under_their_parents() {
        let a = [run(0, 30, 69), run(0, 32, 67), run(0, 29, 70)];
        let b = [run(1, 60, 39), run(1, 62, 37), run(1, 58, 41)];
        let (ra, rb): (Vec<_>, Vec<_>) = (a.iter().collect(), b.iter().collect());
        let f = merge(&ra, &rb, 0.005).unwrap();
        let got: Vec<(&str, usize)> = f
            .frames
            .iter()
            .map(|x| (x.path.as_str(), x.depth))
            .collect();
        assert_eq!(
            got,
            [
                ("main", 0),
                ("main;cold", 1),
                ("main;tiny", 1),
                ("main;work", 1),
                ("main;work;hot", 2)
            ]
        );
        let by = |p: &str| f.frames.iter().find(|x| x.path == p).unwrap();
        assert!((by("main").width - 1.0).abs() < 1e-12);
        // Siblings side by side from their parent's left edge, children inside their parent.
        assert_eq!(by("main;cold").x, 0.0);
        assert!((by("main;tiny").x - by("main;cold").width).abs() < 1e-12);
        assert_eq!(by("main;work;hot").x, by("main;work").x);
        assert!((by("main;work;hot").share_b - 0.6).abs() < 1e-12);
        assert!((by("main;work;hot").share_a - 91.0 / 300.0).abs() < 1e-12);
        // hot's and cold's changes are tested and exclude 0; main (100% in every run) is not.
        let hot = by("main;work;hot").change.as_ref().unwrap();
        assert!(hot.low > 0.0, "{hot:?}");
        assert!(by("main;cold").change.as_ref().unwrap().high < 0.0);
        assert!(by("main").change.is_none());
        assert_eq!(f.other_b, 0.0);
        assert_eq!(f.untested, None);
        // A wider threshold drops the narrow frame; a run without stacks gives no graph.
        let f = merge(&ra, &rb, 0.02).unwrap();
        assert!(f.frames.iter().all(|x| x.name != "tiny"));
        let mut old = run(0, 30, 69);
        old.stacks = None;
        assert_eq!(merge(&[&old], &rb, 0.005), None);
        // One run a side: frames, but nothing tested, and why.
        let f = merge(&ra[..1], &rb[..1], 0.005).unwrap();
        assert!(f.frames.iter().all(|x| x.change.is_none()));
        assert!(f.untested.is_some());
        assert!(!f.cut);
        // A stack deeper than the graph draws is cut, and said to be.
        let mut c = Counts::default();
        let deep: Vec<String> = (0..MAX_DEPTH + 5).map(|i| format!("f{i}")).collect();
        c.add_stack(deep.iter().map(String::as_str));
        let r = ProfiledRun {
            stacks: Some(c.stacks(10)),
            ..run(1, 1, 1)
        };
        let f = merge(&ra, &[&r], 0.005).unwrap();
        assert!(f.cut);
        assert_eq!(f.frames.iter().map(|x| x.depth).max(), Some(MAX_DEPTH - 1));
    }
}
