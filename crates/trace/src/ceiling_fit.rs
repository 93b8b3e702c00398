//! The fit of the micro's madvise curve for the ceiling advisor, with the physical constraint
//! that no cost is negative.
//!
//! The net cost of a call on `n` touched pages (minus the same call on `n` empty ones) is
//!
//! ```text
//! net(n) = a + z n + p n [n <= c0] + F [n > c0]
//! ```
//!
//! with `a` the fixed cost of flushing at all, `z` the zap per page, `p` the INVLPG per page
//! (flushed page by page at and below the micro kernel's ceiling `c0`) and `F` what a full
//! flush costs beyond that (above `c0`). These four are the two straight lines of the curve
//! (below: `a + (z + p) n`, above: `a + F + z n`), so the unconstrained least-squares fit is
//! the fit of the two lines. Each of the four is a cost and cannot be negative: the
//! constrained fit is the least-squares solution with all four at or above 0 (non-negative
//! least squares, solved exactly by trying every set of terms held at 0 and keeping the
//! feasible solution with the smallest residual, which for a convex problem is the optimum).

use nalgebra::{DMatrix, DVector};

/// The four terms of the curve, in cycles (per page for `z` and `p`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Terms {
    pub a: f64,
    pub z: f64,
    pub p: f64,
    pub f: f64,
}

impl Terms {
    /// The line at and below the ceiling: (intercept, slope).
    pub fn partial(&self) -> (f64, f64) {
        (self.a, self.z + self.p)
    }
    /// The line above it (without refill).
    pub fn full(&self) -> (f64, f64) {
        (self.a + self.f, self.z)
    }
}

/// The design row of a size `n` for a curve split at `c0`: columns a, z, p, F.
fn row(n: f64, c0: u64) -> [f64; 4] {
    let below = n <= c0 as f64;
    [
        1.0,
        n,
        if below { n } else { 0.0 },
        if below { 0.0 } else { 1.0 },
    ]
}

/// Least squares over the columns in `free` (the others held at 0); the terms and the residual
/// sum of squares, or None when the columns are degenerate.
fn solve(points: &[(f64, f64)], c0: u64, free: &[usize]) -> Option<([f64; 4], f64)> {
    let mut x = [0.0; 4];
    if free.is_empty() {
        let rss = points.iter().map(|(_, y)| y * y).sum();
        return Some((x, rss));
    }
    let m = DMatrix::from_fn(points.len(), free.len(), |i, j| {
        row(points[i].0, c0)[free[j]]
    });
    let y = DVector::from_iterator(points.len(), points.iter().map(|p| p.1));
    let sol = m.clone().svd(true, true).solve(&y, 1e-9).ok()?;
    if sol.iter().any(|v| !v.is_finite()) {
        return None;
    }
    for (j, c) in free.iter().enumerate() {
        x[*c] = sol[j];
    }
    let rss = (m * sol - y).norm_squared();
    Some((x, rss))
}

fn terms(x: [f64; 4]) -> Terms {
    Terms {
        a: x[0],
        z: x[1],
        p: x[2],
        f: x[3],
    }
}

/// The unconstrained least-squares fit (the two lines as they come).
pub fn unconstrained(points: &[(f64, f64)], c0: u64) -> Terms {
    terms(
        solve(points, c0, &[0, 1, 2, 3])
            .map(|s| s.0)
            .unwrap_or([0.0; 4]),
    )
}

/// The least-squares fit with every term at or above 0.
pub fn constrained(points: &[(f64, f64)], c0: u64) -> Terms {
    let mut best: Option<([f64; 4], f64)> = None;
    for mask in 0u8..16 {
        let free: Vec<usize> = (0..4).filter(|i| mask & (1 << i) != 0).collect();
        let Some((x, rss)) = solve(points, c0, &free) else {
            continue;
        };
        // a term at -0.0 or a rounding error below 0 counts as 0
        if x.iter().any(|v| *v < -1e-9 * (1.0 + v.abs())) {
            continue;
        }
        if best.is_none_or(|b| rss < b.1 * (1.0 - 1e-12)) {
            best = Some((x.map(|v| v.max(0.0)), rss));
        }
    }
    terms(best.map(|b| b.0).unwrap_or([0.0; 4]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(a: f64, z: f64, p: f64, f: f64, c0: u64) -> Vec<(f64, f64)> {
        (1..=64)
            .map(|n| {
                let x = n as f64;
                (x, a + z * x + if n <= c0 { p * x } else { f })
            })
            .collect()
    }

    #[test]
    fn a_feasible_curve_is_fitted_exactly_either_way() {
        let pts = curve(100.0, 20.0, 300.0, 6000.0, 33);
        for t in [unconstrained(&pts, 33), constrained(&pts, 33)] {
            assert!((t.a - 100.0).abs() < 1e-6, "{t:?}");
            assert!((t.z - 20.0).abs() < 1e-6, "{t:?}");
            assert!((t.p - 300.0).abs() < 1e-6, "{t:?}");
            assert!((t.f - 6000.0).abs() < 1e-6, "{t:?}");
        }
    }

    #[test]
    fn a_negative_full_flush_cost_is_held_at_zero() {
        // the curve drops by 630 cycles above the ceiling: unconstrained F = -630
        let pts = curve(100.0, 20.0, 300.0, -630.0, 33);
        let u = unconstrained(&pts, 33);
        assert!((u.f + 630.0).abs() < 1e-6, "{u:?}");
        let c = constrained(&pts, 33);
        assert_eq!(c.f, 0.0, "{c:?}");
        assert!(c.a >= 0.0 && c.z >= 0.0 && c.p >= 0.0, "{c:?}");
        // the constrained fit is no better than the unconstrained one, and no other feasible
        // point with F = 0 is better than it
        let rss = |t: Terms| -> f64 {
            pts.iter()
                .map(|(x, y)| {
                    let r = row(*x, 33);
                    let fit = r[0] * t.a + r[1] * t.z + r[2] * t.p + r[3] * t.f;
                    (y - fit).powi(2)
                })
                .sum()
        };
        assert!(rss(c) >= rss(u) - 1e-6);
        for (da, dz, dp) in [(1.0, 0.0, 0.0), (0.0, 0.1, 0.0), (0.0, 0.0, 0.1)] {
            for s in [-1.0, 1.0] {
                let t = Terms {
                    a: (c.a + s * da).max(0.0),
                    z: (c.z + s * dz).max(0.0),
                    p: (c.p + s * dp).max(0.0),
                    f: 0.0,
                };
                assert!(rss(t) >= rss(c) - 1e-6, "{t:?} beats {c:?}");
            }
        }
    }

    #[test]
    fn a_flatter_curve_below_than_above_has_no_per_page_cost() {
        // slope 50 below, 80 above: unconstrained p = -30
        let pts: Vec<(f64, f64)> = (1..=64)
            .map(|n| {
                let x = n as f64;
                (x, if n <= 33 { 50.0 * x } else { 80.0 * x - 990.0 })
            })
            .collect();
        assert!(unconstrained(&pts, 33).p < -29.0);
        let c = constrained(&pts, 33);
        assert_eq!(c.p, 0.0, "{c:?}");
        assert!(c.a >= 0.0 && c.z >= 0.0 && c.f >= 0.0, "{c:?}");
    }
}
