//! Single-point excursions: a point far from the points on both sides of it is an outlier (a
//! bad night, a noisy neighbour), not a change of level, and is left out of the segmentation.
//! A change moves every point after it, so the point after a change is near its right-hand
//! neighbours and is kept.

/// The three nearest points on each side; at an end only the side that exists is asked.
const NEIGHBOURS: usize = 3;
/// Each side on its own must see the point at least this far off (a point after a step is far
/// from one side only).
const SIDE_Z: f64 = 2.5;

/// Which points are outliers: further than `z` standard errors of the difference from the
/// weighted mean of their neighbours on both sides, and at least [`SIDE_Z`] from each side on
/// its own, in the same direction (at an end, from the side that exists). The most extreme such
/// point is taken out first and the others are judged again without it, so an outlier does not
/// make its neighbours look like outliers; at most a quarter of the points go.
pub(super) fn outliers(x: &[f64], se: &[f64], z: f64) -> Vec<bool> {
    let n = x.len();
    let mut out = vec![false; n];
    let mut kept: Vec<usize> = (0..n).collect();
    for _ in 0..n / 4 {
        let worst = (0..kept.len())
            .map(|p| (p, score(x, se, &kept, p)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        match worst {
            Some((p, s)) if s > z => {
                out[kept[p]] = true;
                kept.remove(p);
            }
            _ => break,
        }
    }
    out
}

/// How far the kept point at position `p` is from its kept neighbours on both sides together,
/// or 0 when a side disagrees in direction or is nearer than [`SIDE_Z`].
fn score(x: &[f64], se: &[f64], kept: &[usize], p: usize) -> f64 {
    let from = p.saturating_sub(NEIGHBOURS);
    let to = (p + 1 + NEIGHBOURS).min(kept.len());
    let left = &kept[from..p];
    let right = &kept[(p + 1).min(to)..to];
    let mut sign = 0.0;
    for side in [left, right].into_iter().filter(|s| !s.is_empty()) {
        let d = deviation(x, se, kept[p], side);
        if d.abs() < SIDE_Z || (sign != 0.0 && d.signum() != sign) {
            return 0.0;
        }
        sign = d.signum();
    }
    let both: Vec<usize> = left.iter().chain(right).copied().collect();
    if both.is_empty() {
        return 0.0;
    }
    deviation(x, se, kept[p], &both).abs()
}

/// (x_i - weighted mean of the side) in standard errors of that difference.
fn deviation(x: &[f64], se: &[f64], i: usize, side: &[usize]) -> f64 {
    let (mut sw, mut swx) = (0.0, 0.0);
    for &j in side {
        let w = 1.0 / (se[j] * se[j]);
        sw += w;
        swx += w * x[j];
    }
    (x[i] - swx / sw) / (se[i] * se[i] + 1.0 / sw).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spike_is_an_outlier_and_a_step_is_not() {
        let se = [1.0; 8];
        let spike = [0.0, 0.3, -0.2, 9.0, 0.1, -0.3, 0.2, 0.0];
        assert_eq!(
            outliers(&spike, &se, 4.0),
            [false, false, false, true, false, false, false, false]
        );
        let step = [0.0, 0.3, -0.2, 9.0, 9.1, 8.7, 9.2, 9.0];
        assert!(outliers(&step, &se, 4.0).iter().all(|o| !o));
        // The last point alone cannot be told from a change: it is screened out.
        let end = [0.0, 0.3, -0.2, 0.1, 0.1, -0.3, 0.2, 9.0];
        assert!(outliers(&end, &se, 4.0)[7]);
        // Far on both sides but in opposite directions (a zig-zag) is not one excursion.
        let zig = [10.0, 10.0, 0.0, -10.0, -10.0, -10.0, -10.0, -10.0];
        assert!(!outliers(&zig, &se, 4.0)[2]);
        // An outlier next to the first point does not take the first point with it.
        let second = [0.0, 9.0, -0.2, 0.1, 0.1, -0.3, 0.2, 0.0];
        assert_eq!(
            outliers(&second, &se, 4.0),
            [false, true, false, false, false, false, false, false]
        );
    }
}
