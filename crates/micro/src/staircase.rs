//! A staircase of rising logistic steps fitted in log N: how `tlb-miss` finds where the cost per
//! access steps up (the reach of a TLB or cache level, at the step's midpoint) and by how much.
//! Least squares over a grid of midpoints and widths; the number of steps (0, 1, 2) by BIC.
//! The chases' sizes are a geometric [`grid`], the x axis the fit works in.

/// Geometric grid from `lo` up to `hi`, `per_octave` points per doubling, rounded and distinct.
pub fn grid(lo: usize, hi: usize, per_octave: u32) -> Vec<usize> {
    let mut v: Vec<usize> = Vec::new();
    for k in 0.. {
        let x = (lo as f64 * 2f64.powf(k as f64 / per_octave as f64)).round() as usize;
        if x > hi {
            break;
        }
        if v.last() != Some(&x) {
            v.push(x);
        }
    }
    v
}

/// One step of a staircase fitted in log N.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// N at the step's midpoint (half of its height reached): the reach.
    pub at: f64,
    /// Rise of the curve across the step.
    pub height: f64,
    /// Width of the logistic in ln N (0.02: a cliff within 2%; 0.3: spread over an octave).
    pub width: f64,
}

impl Step {
    /// N at which the step has risen by a tenth of its height: where misses begin.
    pub fn onset(&self) -> f64 {
        self.at * (-self.width * 9f64.ln()).exp()
    }
}

/// `y = base + sum of height * logistic((ln N - ln at) / width)` fitted to the points.
#[derive(Debug, Clone, PartialEq)]
pub struct Staircase {
    pub base: f64,
    pub steps: Vec<Step>,
    /// Residual standard deviation of the fit.
    pub sigma: f64,
}

/// Fit up to `max_steps` (1 or 2) rising steps to `(N, y)` points (N ascending, at least 6), by
/// least squares over a grid of midpoints (1/16 octave) and widths; the number of steps is the
/// one with the lowest BIC among fits whose every step rises by more than `min_height` and by
/// more than 4 noise standard deviations (estimated from successive differences). A midpoint must lie between the first and last N
/// (10% inside), with steps at least 1.5x apart.
pub fn fit_staircase(points: &[(f64, f64)], max_steps: usize, min_height: f64) -> Staircase {
    let n = points.len();
    let y: Vec<f64> = points.iter().map(|p| p.1).collect();
    let mean = y.iter().sum::<f64>() / n.max(1) as f64;
    let sse0: f64 = y.iter().map(|v| (v - mean).powi(2)).sum();
    let flat = |sse: f64| Staircase {
        base: mean,
        steps: vec![],
        sigma: (sse / n.saturating_sub(1).max(1) as f64).sqrt(),
    };
    if n < 6 || max_steps == 0 {
        return flat(sse0);
    }
    let lx: Vec<f64> = points.iter().map(|p| p.0.ln()).collect();
    let bases = bases(&lx, &y, lx[0] + 0.1, lx[n - 1] - 0.1);
    let fit = Fit::new(&y, min_height);
    let mut best = (fit.bic(sse0, 0), flat(sse0));
    for b in &bases {
        if let Some(f) = fit.one_step(b)
            && f.0 < best.0
        {
            best = f;
        }
    }
    if max_steps >= 2 {
        for (i, b1) in bases.iter().enumerate() {
            for b2 in &bases[i + 1..] {
                if b2.c < b1.c + 1.5f64.ln() {
                    continue;
                }
                if let Some(f) = fit.two_steps(b1, b2)
                    && f.0 < best.0
                {
                    best = f;
                }
            }
        }
    }
    best.1
}

/// One candidate step: a logistic of midpoint `c` and width `w` (in ln N) at the points (`s`),
/// with the sums the normal equations take (s.s, sum of s, s.y).
struct Basis {
    c: f64,
    w: f64,
    s: Vec<f64>,
    ss: f64,
    s1: f64,
    sy: f64,
}

/// The candidate steps: midpoints every 1/16 octave from `lo` to `hi` (ln N), five widths each.
fn bases(lx: &[f64], y: &[f64], lo: f64, hi: f64) -> Vec<Basis> {
    let mut bases = Vec::new();
    let mut c = lo;
    while c <= hi {
        for w in [0.02, 0.05, 0.1, 0.2, 0.35] {
            let s: Vec<f64> = lx
                .iter()
                .map(|x| 1.0 / (1.0 + (-(x - c) / w).exp()))
                .collect();
            let ss = s.iter().map(|v| v * v).sum();
            let s1 = s.iter().sum();
            let sy = s.iter().zip(y).map(|(a, b)| a * b).sum();
            bases.push(Basis {
                c,
                w,
                s,
                ss,
                s1,
                sy,
            });
        }
        c += std::f64::consts::LN_2 / 16.0;
    }
    bases
}

/// The points' sums, their noise and the least rise of a step: what judges a fit.
struct Fit {
    nn: f64,
    sy: f64,
    yy: f64,
    noise: f64,
    min_height: f64,
}

impl Fit {
    fn new(y: &[f64], min_height: f64) -> Fit {
        // Noise from successive differences (robust to the steps themselves and to a misfit of
        // the step's shape): a step must rise by more than 4 of these.
        let mut d: Vec<f64> = y.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
        d.sort_by(f64::total_cmp);
        Fit {
            nn: y.len() as f64,
            sy: y.iter().sum::<f64>(),
            yy: y.iter().map(|v| v * v).sum(),
            noise: 1.4826 * d[d.len() / 2] / std::f64::consts::SQRT_2,
            min_height,
        }
    }

    /// The BIC of a fit of `k` steps leaving `sse`.
    fn bic(&self, sse: f64, k: usize) -> f64 {
        let nn = self.nn;
        nn * (sse / nn).max(1e-12).ln() + (1 + 3 * k) as f64 * nn.ln()
    }

    /// Whether every step rises by more than `min_height` and more than 4 noise deviations.
    fn ok(&self, h: &[f64]) -> bool {
        h.iter()
            .all(|&h| h > self.min_height && h > 4.0 * self.noise)
    }

    /// One step: y = a + h s; its BIC and staircase, when the step rises enough.
    fn one_step(&self, b: &Basis) -> Option<(f64, Staircase)> {
        let (nn, sy, yy) = (self.nn, self.sy, self.yy);
        let det = nn * b.ss - b.s1 * b.s1;
        if det.abs() < 1e-12 {
            return None;
        }
        let h = (nn * b.sy - b.s1 * sy) / det;
        let a = (sy - h * b.s1) / nn;
        let sse = (yy - 2.0 * (a * sy + h * b.sy) + a * a * nn + 2.0 * a * h * b.s1 + h * h * b.ss)
            .max(0.0);
        if !self.ok(&[h]) {
            return None;
        }
        Some((
            self.bic(sse, 1),
            Staircase {
                base: a,
                steps: vec![Step {
                    at: b.c.exp(),
                    height: h,
                    width: b.w,
                }],
                sigma: (sse / (nn - 4.0).max(1.0)).sqrt(),
            },
        ))
    }

    /// Two steps: y = a + h1 s1 + h2 s2; their BIC and staircase, when both rise enough.
    fn two_steps(&self, b1: &Basis, b2: &Basis) -> Option<(f64, Staircase)> {
        let (nn, sy, yy) = (self.nn, self.sy, self.yy);
        let s12: f64 = b1.s.iter().zip(&b2.s).map(|(a, b)| a * b).sum();
        // Normal equations for (a, h1, h2).
        let m = [[nn, b1.s1, b2.s1], [b1.s1, b1.ss, s12], [b2.s1, s12, b2.ss]];
        let r = [sy, b1.sy, b2.sy];
        let [a, h1, h2] = solve3(m, r)?;
        // Least squares: SSE = y.y - beta . (X'y).
        let sse = (yy - (a * r[0] + h1 * r[1] + h2 * r[2])).max(0.0);
        if !self.ok(&[h1, h2]) {
            return None;
        }
        Some((
            self.bic(sse, 2),
            Staircase {
                base: a,
                steps: vec![
                    Step {
                        at: b1.c.exp(),
                        height: h1,
                        width: b1.w,
                    },
                    Step {
                        at: b2.c.exp(),
                        height: h2,
                        width: b2.w,
                    },
                ],
                sigma: (sse / (nn - 7.0).max(1.0)).sqrt(),
            },
        ))
    }
}

/// Solve a 3x3 linear system (Cramer's rule); None when singular.
fn solve3(m: [[f64; 3]; 3], r: [f64; 3]) -> Option<[f64; 3]> {
    let det = |m: &[[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(&m);
    if d.abs() < 1e-9 * (1.0 + m[0][0].abs() * m[1][1].abs() * m[2][2].abs()) {
        return None;
    }
    let mut out = [0.0; 3];
    for (col, o) in out.iter_mut().enumerate() {
        let mut mc = m;
        for row in 0..3 {
            mc[row][col] = r[row];
        }
        *o = det(&mc) / d;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn grid_is_geometric_and_distinct() {
        let g = grid(8, 8192, 4);
        assert_eq!(g[0], 8);
        assert_eq!(*g.last().unwrap(), 8192);
        assert!(g.contains(&64) && g.contains(&1024));
        assert!(g.windows(2).all(|w| w[1] > w[0]));
        assert_eq!(g.len(), 41);
    }

    fn curve(ns: &[usize], f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        ns.iter().map(|&n| (n as f64, f(n as f64))).collect()
    }

    #[test]
    fn staircase_finds_two_cliffs() {
        let ns = grid(8, 8192, 4);
        // L1 step of 5 at 96 (a cliff), a walk step of 37 spread around 2048.
        let truth = |n: f64| {
            5.0 / (1.0 + (-(n.ln() - 96f64.ln()) / 0.03).exp())
                + 37.0 / (1.0 + (-(n.ln() - 2048f64.ln()) / 0.2).exp())
        };
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for _ in 0..10 {
            let pts: Vec<(f64, f64)> = curve(&ns, truth)
                .into_iter()
                .map(|(n, y)| (n, y + rng.random_range(-0.6..0.6)))
                .collect();
            let f = fit_staircase(&pts, 2, 1.0);
            assert_eq!(f.steps.len(), 2, "{f:?}");
            let (a, b) = (f.steps[0], f.steps[1]);
            assert!((a.at / 96.0 - 1.0).abs() < 0.12, "{f:?}");
            assert!((b.at / 2048.0 - 1.0).abs() < 0.12, "{f:?}");
            assert!(
                (a.height - 5.0).abs() < 1.0 && (b.height - 37.0).abs() < 2.0,
                "{f:?}"
            );
        }
    }

    #[test]
    fn staircase_does_not_invent_steps() {
        let ns = grid(8, 8192, 4);
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let flat: Vec<(f64, f64)> = curve(&ns, |_| 3.5)
            .into_iter()
            .map(|(n, y)| (n, y + rng.random_range(-0.3..0.3)))
            .collect();
        assert!(fit_staircase(&flat, 2, 1.0).steps.is_empty());
        // A slow linear drift in log N is not a step either (below min_height across the range).
        let drift = curve(&ns, |n| 0.05 * n.ln());
        assert!(fit_staircase(&drift, 2, 1.0).steps.is_empty());
        // One step only.
        let one = curve(&ns, |n| if n > 100.0 { 6.0 } else { 0.0 });
        let f = fit_staircase(&one, 2, 1.0);
        assert_eq!(f.steps.len(), 1, "{f:?}");
        assert!(f.steps[0].at > 91.0 && f.steps[0].at < 108.0, "{f:?}");
        assert!(
            fit_staircase(&one[..4], 2, 1.0).steps.is_empty(),
            "too few points"
        );
    }

    #[test]
    fn staircase_of_this_vm() {
        // tlb-miss --quick on the development VM (2026-12): 4k minus dense, ticks per access.
        let pts = [
            (8.0, -0.0),
            (10.0, 0.0),
            (11.0, 0.0),
            (13.0, 0.0),
            (16.0, -0.0),
            (19.0, -0.0),
            (23.0, 0.0),
            (27.0, 0.0),
            (32.0, 0.0),
            (38.0, 0.0),
            (45.0, 0.0),
            (54.0, 0.0),
            (64.0, 0.0),
            (76.0, 0.0),
            (91.0, 0.0),
            (108.0, 3.9),
            (128.0, 5.1),
            (152.0, 5.1),
            (181.0, 5.1),
            (215.0, 5.1),
            (256.0, 5.1),
            (304.0, 5.1),
            (362.0, 5.1),
            (431.0, 5.1),
            (512.0, 5.1),
            (609.0, 5.1),
            (724.0, 5.1),
            (861.0, 5.2),
            (1024.0, 5.1),
            (1218.0, 5.2),
            (1448.0, 9.4),
            (1722.0, 17.5),
            (2048.0, 21.5),
            (2435.0, 38.0),
            (2896.0, 38.9),
            (3444.0, 39.9),
            (4096.0, 42.9),
            (4871.0, 41.6),
            (5793.0, 41.8),
            (6889.0, 42.5),
            (8192.0, 44.2),
        ];
        let f = fit_staircase(&pts, 2, 1.0);
        assert_eq!(f.steps.len(), 2, "{f:?}");
        assert!((92.0..=110.0).contains(&f.steps[0].at), "{f:?}");
        assert!((1700.0..=2300.0).contains(&f.steps[1].at), "{f:?}");
    }

    #[test]
    fn solve3_solves_and_refuses_singular() {
        let x = solve3(
            [[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]],
            [3.0, 5.0, 5.0],
        )
        .unwrap();
        assert!(
            (x[0] - 1.0).abs() < 1e-9 && (x[1] - 1.0).abs() < 1e-9 && (x[2] - 1.0).abs() < 1e-9
        );
        assert_eq!(
            solve3(
                [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 1.0, 1.0]],
                [1.0, 2.0, 3.0]
            ),
            None
        );
    }
}
