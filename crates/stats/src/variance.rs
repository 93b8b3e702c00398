//! Brown-Forsythe test for equal variability (Levene's test with the group medians; scipy
//! `levene(..., center='median')`): one-way ANOVA on |x - median of its group|.

use super::StatsError;
use super::dist::f_sf;
use abperf_model::describe::{mean, median};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BrownForsythe {
    pub f: f64,
    pub df1: f64,
    pub df2: f64,
    pub p: f64,
}

/// Brown-Forsythe test over two or more groups.
pub fn brown_forsythe(groups: &[&[f64]]) -> Result<BrownForsythe, StatsError> {
    let k = groups.len();
    if k < 2 {
        return Err(StatsError::TooFew {
            what: "Brown-Forsythe (groups)",
            need: 2,
            got: k,
        });
    }
    let mut z: Vec<Vec<f64>> = Vec::with_capacity(k);
    for g in groups {
        if g.len() < 2 {
            return Err(StatsError::TooFew {
                what: "Brown-Forsythe (values per group)",
                need: 2,
                got: g.len(),
            });
        }
        let med = median(g);
        z.push(g.iter().map(|x| (x - med).abs()).collect());
    }
    let total: usize = z.iter().map(Vec::len).sum();
    let all: Vec<f64> = z.iter().flatten().copied().collect();
    let grand = mean(&all);
    let between: f64 = z
        .iter()
        .map(|g| g.len() as f64 * (mean(g) - grand).powi(2))
        .sum();
    let within: f64 = z
        .iter()
        .map(|g| {
            let m = mean(g);
            g.iter().map(|v| (v - m).powi(2)).sum::<f64>()
        })
        .sum();
    let df1 = (k - 1) as f64;
    let df2 = (total - k) as f64;
    if within == 0.0 {
        return Err(StatsError::ZeroVariance(
            "Brown-Forsythe (absolute deviations)",
        ));
    }
    let f = (between / df1) / (within / df2);
    Ok(BrownForsythe {
        f,
        df1,
        df2,
        p: f_sf(f, df1, df2),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{Reference, assert_rel};

    #[test]
    fn matches_scipy_levene_median() {
        let r = Reference::load();
        for c in r.cases("levene") {
            let (a, b) = (c.vec("a"), c.vec("b"));
            let bf = brown_forsythe(&[&a, &b]).unwrap();
            assert_rel(bf.f, c.num("f"), 1e-9, "BF F");
            assert_rel(bf.p, c.num("p"), 1e-9, "BF p");
        }
        for c in r.cases("levene3") {
            let (a, b, d) = (c.vec("a"), c.vec("b"), c.vec("c"));
            let bf = brown_forsythe(&[&a, &b, &d]).unwrap();
            assert_rel(bf.p, c.num("p"), 1e-9, "BF p (3 groups)");
        }
    }

    #[test]
    fn degenerate_inputs() {
        assert!(brown_forsythe(&[&[1.0, 2.0]]).is_err());
        assert!(brown_forsythe(&[&[1.0; 4], &[2.0; 4]]).is_err());
    }
}
