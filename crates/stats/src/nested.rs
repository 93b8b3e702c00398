//! Variance components of nested replication levels (hosts > boots > invocations > runs) by
//! restricted maximum likelihood (REML), the estimator statsmodels' MixedLM and R's lme4 use
//! (docs/statistics.md#levels).
//!
//! The model of one variant's values: y = mu + u_1 + ... + u_K + e, with one random effect per
//! level (u_k ~ N(0, sigma_k^2), one draw per unit of level k, every unit inside one unit of the
//! level above) and the run-to-run residual e ~ N(0, sigma_e^2). Its covariance V is block
//! diagonal by top-level unit, so every step works on one top-level unit's runs at a time.
//!
//! Fisher scoring on the components (Harville 1977): with W = V^-1, w = W 1, c = 1'W1 and the
//! GLS residual r = y - 1 (1'W y) / c, so that P y = W r for the REML projection
//! P = W - w w' / c, the score of component k (covariance A_k: 1 where two runs share a unit of
//! level k, the identity for the residual) is -tr(P A_k) / 2 + r'W A_k W r / 2, and the expected
//! information tr(P A_k P A_l) / 2. A component that would go negative is held at 0 (the REML
//! estimate on the boundary). Balanced data start from the nested ANOVA estimates, which are the
//! REML estimates when none is negative (one step confirms them).
//!
//! Pure computation: no I/O.

use super::StatsError;
use abperf_model::describe::mean;
use nalgebra::DMatrix;
use serde::Serialize;

/// One variant's values and, per random level from the top down, the unit of each value.
/// `units[k][i]` is the unit of value `i` at level `k`, numbered from 0 across the whole level
/// (two boots of different hosts are different units); every unit of level k + 1 lies inside
/// one unit of level k.
#[derive(Debug, Clone, PartialEq)]
pub struct NestedData {
    pub values: Vec<f64>,
    pub units: Vec<Vec<usize>>,
}

/// How the components were estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// REML by Fisher scoring, converged.
    Reml,
    /// Nested ANOVA moment estimates (data too large for REML here; exact REML when balanced and
    /// no estimate is negative).
    Anova,
}

/// The variance components of one variant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NestedComponents {
    /// Units per random level, top down, then the number of values.
    pub units: Vec<usize>,
    /// Whether every unit of a level has the same number of units (or values) below it.
    pub balanced: bool,
    /// sigma_k^2 per random level, top down, then the residual (run) variance sigma_e^2.
    pub variances: Vec<f64>,
    /// sigma_k^2 / total variance, per level as `variances` (the residual's share last).
    pub shares: Vec<f64>,
    /// The GLS estimate of the mean at the components (the plain mean when balanced).
    pub mean: f64,
    pub method: Method,
    /// Fisher-scoring iterations (0 for ANOVA).
    pub iterations: usize,
}

/// The most values, and the most values in one top-level unit, REML is fitted to (it inverts
/// one dense matrix per top-level unit per iteration); above either, nested ANOVA.
pub const REML_MAX_VALUES: usize = 20_000;
pub const REML_MAX_BLOCK: usize = 600;

/// Iterations before giving up, and the relative change of every component that ends them.
const MAX_ITERATIONS: usize = 500;
const TOLERANCE: f64 = 1e-13;

/// The values of each top-level unit, with their units at every level re-numbered from 0 inside
/// it (so a block's covariance is built from its own labels).
struct Block {
    values: Vec<f64>,
    /// `units[k][i]`: unit of the block's value `i` at level k (k = 0 is the block itself).
    units: Vec<Vec<usize>>,
}

fn check(d: &NestedData) -> Result<(), StatsError> {
    super::check_finite(&d.values)?;
    if d.values.len() < 2 {
        return Err(StatsError::TooFew {
            what: "variance components",
            need: 2,
            got: d.values.len(),
        });
    }
    for (k, level) in d.units.iter().enumerate() {
        if level.len() != d.values.len() {
            return Err(StatsError::Invalid(format!(
                "level {k}: {} unit labels for {} values",
                level.len(),
                d.values.len()
            )));
        }
        if k > 0 {
            // Nested: each unit of level k lies in one unit of level k - 1.
            let mut parent = std::collections::HashMap::new();
            for (u, p) in level.iter().zip(&d.units[k - 1]) {
                if *parent.entry(*u).or_insert(*p) != *p {
                    return Err(StatsError::Invalid(format!(
                        "level {k}: unit {u} lies in two units of the level above (not nested)"
                    )));
                }
            }
        }
    }
    Ok(())
}

fn blocks(d: &NestedData) -> Vec<Block> {
    let mut order: Vec<usize> = Vec::new();
    let mut index = std::collections::HashMap::new();
    let mut out: Vec<Block> = Vec::new();
    for (i, &v) in d.values.iter().enumerate() {
        let top = d.units.first().map(|l| l[i]).unwrap_or(0);
        let b = *index.entry(top).or_insert_with(|| {
            order.push(top);
            out.push(Block {
                values: Vec::new(),
                units: vec![Vec::new(); d.units.len()],
            });
            out.len() - 1
        });
        out[b].values.push(v);
        for (k, level) in d.units.iter().enumerate() {
            out[b].units[k].push(level[i]);
        }
    }
    out
}

/// Distinct units per level, and whether the design is balanced.
fn shape(d: &NestedData) -> (Vec<usize>, bool) {
    use std::collections::{BTreeMap, BTreeSet};
    let mut counts = Vec::new();
    let mut balanced = true;
    for (k, level) in d.units.iter().enumerate() {
        counts.push(level.iter().collect::<BTreeSet<_>>().len());
        // Children (units of the level below, or values) per unit of this level.
        let mut children: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        for i in 0..d.values.len() {
            let child = d.units.get(k + 1).map(|l| l[i]).unwrap_or(i);
            children.entry(level[i]).or_default().insert(child);
        }
        let sizes: BTreeSet<usize> = children.values().map(BTreeSet::len).collect();
        balanced &= sizes.len() == 1;
    }
    counts.push(d.values.len());
    (counts, balanced)
}

/// Nested ANOVA: sums of squares of each level's unit means about their parents' means, with
/// the expected mean squares of a balanced design (m_k values per unit of level k):
/// E[MS_k] = sigma_e^2 + sum_{j >= k} m_j sigma_j^2. Unbalanced data use m_k = N / units_k.
fn anova(d: &NestedData, counts: &[usize]) -> Vec<f64> {
    let n = d.values.len();
    let k_levels = d.units.len();
    // Means of every unit at every level, and of the whole.
    let unit_means = |level: Option<&Vec<usize>>| -> Vec<f64> {
        let mut sums: std::collections::HashMap<usize, (f64, usize)> = Default::default();
        for i in 0..n {
            let u = level.map(|l| l[i]).unwrap_or(0);
            let e = sums.entry(u).or_default();
            e.0 += d.values[i];
            e.1 += 1;
        }
        (0..n)
            .map(|i| {
                let (s, c) = sums[&level.map(|l| l[i]).unwrap_or(0)];
                s / c as f64
            })
            .collect()
    };
    // means[k]: per value, the mean of its unit at level k-1 (k = 0: the grand mean; k = K + 1:
    // the value itself).
    let mut means = vec![unit_means(None)];
    for level in &d.units {
        means.push(unit_means(Some(level)));
    }
    means.push(d.values.clone());
    let mut ms = Vec::with_capacity(k_levels + 1);
    for k in 0..=k_levels {
        let ss: f64 = (0..n)
            .map(|i| (means[k + 1][i] - means[k][i]).powi(2))
            .sum();
        let parents = if k == 0 { 1 } else { counts[k - 1] };
        let df = counts[k].saturating_sub(parents).max(1);
        ms.push(ss / df as f64);
    }
    let mut var = vec![0.0; k_levels + 1];
    var[k_levels] = ms[k_levels];
    for k in (0..k_levels).rev() {
        let m = n as f64 / counts[k] as f64;
        var[k] = (ms[k] - ms[k + 1]) / m;
    }
    var
}

/// Per block and component: the covariance pattern A_k (1 where two values share a unit of level
/// k; the identity for the residual).
fn pattern(b: &Block, k: usize) -> DMatrix<f64> {
    let n = b.values.len();
    if k == b.units.len() {
        return DMatrix::identity(n, n);
    }
    DMatrix::from_fn(n, n, |i, j| f64::from(b.units[k][i] == b.units[k][j]))
}

/// One Fisher-scoring step's ingredients summed over blocks.
struct Sums {
    c: f64,
    wy: f64,
    tr_wa: Vec<f64>,
    tr_wawa: DMatrix<f64>,
}

/// The REML score and information at `theta`, and the GLS mean.
fn score(
    blocks: &[(Block, Vec<DMatrix<f64>>)],
    theta: &[f64],
) -> Option<(Vec<f64>, DMatrix<f64>, f64)> {
    let p = theta.len();
    let mut s = Sums {
        c: 0.0,
        wy: 0.0,
        tr_wa: vec![0.0; p],
        tr_wawa: DMatrix::zeros(p, p),
    };
    let mut per_block = Vec::with_capacity(blocks.len());
    for (b, a) in blocks {
        let mut v = a[p - 1].clone() * theta[p - 1];
        for k in 0..p - 1 {
            v += &a[k] * theta[k];
        }
        let w = v.cholesky()?.inverse();
        let y = nalgebra::DVector::from_column_slice(&b.values);
        let one = nalgebra::DVector::from_element(y.len(), 1.0);
        let wone = &w * &one;
        s.c += wone.sum();
        s.wy += wone.dot(&y);
        let wa: Vec<DMatrix<f64>> = a.iter().map(|ak| &w * ak).collect();
        for k in 0..p {
            s.tr_wa[k] += wa[k].trace();
            for l in 0..=k {
                let t = wa[k].component_mul(&wa[l].transpose()).sum();
                s.tr_wawa[(k, l)] += t;
            }
        }
        per_block.push((w, wone, y, wa));
    }
    let beta = s.wy / s.c;
    let mut g = vec![0.0; p];
    let mut info = DMatrix::<f64>::zeros(p, p);
    // w'A_k w, w'A_k W A_l w and r'W A_k W r, per block, summed.
    let mut waw = vec![0.0; p];
    let mut wawaw = DMatrix::<f64>::zeros(p, p);
    let mut quad = vec![0.0; p];
    for ((_, a), (w, wone, y, wa)) in blocks.iter().zip(&per_block) {
        let r = y.add_scalar(-beta);
        let q = w * &r;
        let aw: Vec<nalgebra::DVector<f64>> = a.iter().map(|ak| ak * wone).collect();
        for k in 0..p {
            waw[k] += wone.dot(&aw[k]);
            quad[k] += q.dot(&(&a[k] * &q));
            for l in 0..=k {
                wawaw[(k, l)] += aw[k].dot(&(&wa[l] * wone));
            }
        }
    }
    for k in 0..p {
        g[k] = -0.5 * (s.tr_wa[k] - waw[k] / s.c) + 0.5 * quad[k];
        for l in 0..=k {
            let f = 0.5
                * (s.tr_wawa[(k, l)] - 2.0 * wawaw[(k, l)] / s.c + waw[k] * waw[l] / (s.c * s.c));
            info[(k, l)] = f;
            info[(l, k)] = f;
        }
    }
    Some((g, info, beta))
}

/// Each block with its covariance patterns A_0..A_{p-1} (the residual's last).
fn with_patterns(blocks: Vec<Block>, p: usize) -> Vec<(Block, Vec<DMatrix<f64>>)> {
    blocks
        .into_iter()
        .map(|b| {
            let a = (0..p).map(|k| pattern(&b, k)).collect();
            (b, a)
        })
        .collect()
}

/// Fisher scoring from `start`; components at 0 that the score pushes below 0 stay there.
fn reml(blocks: Vec<Block>, start: Vec<f64>) -> Result<(Vec<f64>, f64, usize), StatsError> {
    let p = start.len();
    let with_patterns = with_patterns(blocks, p);
    let mut theta = start;
    let total: f64 = theta.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let failed = || StatsError::Invalid("REML did not converge".into());
    for it in 1..=MAX_ITERATIONS {
        let (g, info, _) = score(&with_patterns, &theta).ok_or_else(failed)?;
        // Components held at the boundary drop out of the step.
        let free: Vec<usize> = (0..p)
            .filter(|&k| !(theta[k] <= 0.0 && g[k] <= 0.0))
            .collect();
        let sub = DMatrix::from_fn(free.len(), free.len(), |i, j| info[(free[i], free[j])]);
        let rhs = nalgebra::DVector::from_iterator(free.len(), free.iter().map(|&k| g[k]));
        let step = sub.lu().solve(&rhs).ok_or_else(failed)?;
        let mut change: f64 = 0.0;
        for (i, &k) in free.iter().enumerate() {
            let next = (theta[k] + step[i]).max(0.0);
            change = change.max((next - theta[k]).abs());
            theta[k] = next;
        }
        if theta[p - 1] <= 0.0 {
            return Err(StatsError::Invalid(
                "REML: the run-to-run variance went to 0".into(),
            ));
        }
        if change <= TOLERANCE * total {
            let (_, _, beta) = score(&with_patterns, &theta).ok_or_else(failed)?;
            return Ok((theta, beta, it));
        }
    }
    Err(failed())
}

/// The variance components of `d`: REML, or nested ANOVA for data above [`REML_MAX_VALUES`] or
/// with a top-level unit above [`REML_MAX_BLOCK`] values. With no random level, the residual
/// variance is the sample variance.
pub fn components(d: &NestedData) -> Result<NestedComponents, StatsError> {
    check(d)?;
    let (units, balanced) = shape(d);
    let start = anova(d, &units);
    let blocks = blocks(d);
    let largest = blocks.iter().map(|b| b.values.len()).max().unwrap_or(0);
    let total_var = *start.last().unwrap_or(&0.0)
        + start[..start.len() - 1]
            .iter()
            .map(|v| v.max(0.0))
            .sum::<f64>();
    if total_var <= 0.0 {
        return Err(StatsError::ZeroVariance("variance components"));
    }
    let (variances, mu, method, iterations) =
        if d.values.len() > REML_MAX_VALUES || largest > REML_MAX_BLOCK {
            let v: Vec<f64> = start.iter().map(|x| x.max(0.0)).collect();
            (v, mean(&d.values), Method::Anova, 0)
        } else {
            // Balanced: the ANOVA estimates (clipped at 0). Unbalanced: the total variance split
            // evenly, a start Fisher scoring converges from.
            let start: Vec<f64> = if balanced {
                start.iter().map(|x| x.max(total_var * 1e-3)).collect()
            } else {
                vec![total_var / units.len() as f64; units.len()]
            };
            let (v, mu, it) = reml(blocks, start)?;
            (v, mu, Method::Reml, it)
        };
    let total: f64 = variances.iter().sum();
    Ok(NestedComponents {
        units,
        balanced,
        shares: variances.iter().map(|v| v / total).collect(),
        variances,
        mean: mu,
        method,
        iterations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{assert_rel, normal};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// `hosts` x `boots` x `runs` values with SDs `sd` = [host, boot, run]; `keep` says how many
    /// runs of boot (h, b) are kept (unbalanced designs).
    fn simulate(
        rng: &mut ChaCha8Rng,
        shape: [usize; 3],
        sd: [f64; 3],
        keep: impl Fn(usize, usize) -> usize,
    ) -> NestedData {
        let mut d = NestedData {
            values: Vec::new(),
            units: vec![Vec::new(), Vec::new()],
        };
        for h in 0..shape[0] {
            let uh = sd[0] * normal(rng);
            for b in 0..shape[1] {
                let ub = sd[1] * normal(rng);
                for _ in 0..keep(h, b).min(shape[2]) {
                    d.values.push(100.0 + uh + ub + sd[2] * normal(rng));
                    d.units[0].push(h);
                    d.units[1].push(h * shape[1] + b);
                }
            }
        }
        d
    }

    #[test]
    fn balanced_reml_is_the_anova_and_one_level_matches_levels_rs() {
        let g = vec![
            vec![1.0, 2.0, 3.0],
            vec![4.0, 5.0, 6.0],
            vec![7.0, 8.0, 9.5],
        ];
        let d = NestedData {
            values: g.iter().flatten().copied().collect(),
            units: vec![vec![0, 0, 0, 1, 1, 1, 2, 2, 2]],
        };
        let c = components(&d).unwrap();
        let old = crate::levels::components(&g).unwrap();
        assert!(c.balanced);
        assert_eq!(c.method, Method::Reml);
        assert_rel(c.variances[0], old.var_boot.unwrap(), 1e-10, "boot");
        assert_rel(c.variances[1], old.var_run.unwrap(), 1e-10, "run");
        assert_rel(c.shares[0], old.icc.unwrap(), 1e-10, "icc");
        assert_rel(c.mean, old.mean, 1e-12, "mean");
        // Three levels, balanced: REML = nested ANOVA.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let d = simulate(&mut rng, [4, 3, 5], [2.0, 1.0, 0.5], |_, _| 5);
        let c = components(&d).unwrap();
        let a = anova(&d, &c.units);
        assert!(c.balanced && a.iter().all(|&v| v > 0.0), "{a:?}");
        for (v, a) in c.variances.iter().zip(&a) {
            assert_rel(*v, *a, 1e-9, "level");
        }
        assert_eq!(c.units, [4, 12, 60]);
    }

    #[test]
    fn unbalanced_reml_is_a_stationary_point_and_recovers_components() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let trials = 200;
        let mut sums = [0.0; 3];
        for _ in 0..trials {
            let d = simulate(&mut rng, [6, 4, 6], [2.0, 1.0, 0.5], |h, b| 2 + (h + b) % 5);
            let c = components(&d).unwrap();
            assert!(!c.balanced);
            for (sum, v) in sums.iter_mut().zip(&c.variances) {
                *sum += v;
            }
            if c.variances.iter().all(|&v| v > 0.0) {
                // Interior optimum: the score is zero there.
                let bl = with_patterns(blocks(&d), 3);
                let (g, info, _) = score(&bl, &c.variances).unwrap();
                for k in 0..3 {
                    assert!(g[k].abs() < 1e-6 * info[(k, k)].sqrt(), "score {g:?}");
                }
            }
        }
        let m: Vec<f64> = sums.iter().map(|s| s / trials as f64).collect();
        // Host variance 4 from 6 hosts: SE ~ 4 * sqrt(2/5) / sqrt(200) ~ 0.18.
        assert!((m[0] - 4.0).abs() < 0.7, "host {m:?}");
        assert!((m[1] - 1.0).abs() < 0.1, "boot {m:?}");
        assert!((m[2] - 0.25).abs() < 0.01, "run {m:?}");
    }

    #[test]
    fn a_component_without_variance_is_held_at_zero() {
        // No host effect: in many draws the REML optimum is on the boundary (host variance 0);
        // there the score of the held component must not point inside, and the free ones must
        // be stationary.
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut on_boundary = 0;
        for _ in 0..60 {
            let d = simulate(&mut rng, [4, 3, 4], [0.0, 1.0, 0.5], |h, b| 2 + (h + b) % 3);
            let c = components(&d).unwrap();
            assert!(c.variances.iter().all(|&v| v >= 0.0), "{c:?}");
            if c.variances[0] == 0.0 {
                on_boundary += 1;
                let bl = with_patterns(blocks(&d), 3);
                let (g, info, _) = score(&bl, &c.variances).unwrap();
                assert!(
                    g[0] <= 1e-9 * info[(0, 0)].sqrt(),
                    "held component's score {g:?}"
                );
                for k in 1..3 {
                    assert!(g[k].abs() < 1e-6 * info[(k, k)].sqrt(), "score {g:?}");
                }
            }
        }
        assert!(on_boundary > 5, "{on_boundary} of 60 on the boundary");
    }

    #[test]
    fn bad_input_is_an_error() {
        let d = NestedData {
            values: vec![1.0, 2.0, 3.0],
            units: vec![vec![0, 0, 1], vec![0, 1, 1]],
        };
        assert!(components(&d).is_err(), "boot 1 in two hosts");
        let d = NestedData {
            values: vec![1.0, f64::NAN],
            units: vec![vec![0, 1]],
        };
        assert!(components(&d).is_err());
        let d = NestedData {
            values: vec![1.0, 1.0, 1.0],
            units: vec![vec![0, 1, 1]],
        };
        assert!(components(&d).is_err(), "zero variance");
        // No random level: the sample variance.
        let d = NestedData {
            values: vec![1.0, 2.0, 3.0],
            units: vec![],
        };
        let c = components(&d).unwrap();
        assert_rel(c.variances[0], 1.0, 1e-12, "var");
    }
}
