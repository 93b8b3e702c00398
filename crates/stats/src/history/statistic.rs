//! The inverse-variance-weighted likelihood-ratio statistic of one change in a segment.
//!
//! For points x_i with known variances se_i^2 (weights w_i = 1/se_i^2), the log-likelihood ratio
//! of "a step between k-1 and k" against "one level" on the segment [s, e) is half of
//! T(k) = W_L W_R / (W_L + W_R) (m_L - m_R)^2, where W and m are the weights' sum and the
//! weighted mean left and right of the split. T(k) is also the drop in the weighted residual sum
//! of squares, and under "one level" it is chi-squared with 1 degree of freedom for a fixed k.

/// Fewest points on each side of a change: one point alone is an outlier, not a level.
pub(super) const MIN_SEGMENT: usize = 2;

/// Prefix sums of weights and weighted values, for T(k) of any segment in O(1).
pub(super) struct Prefix {
    w: Vec<f64>,
    wx: Vec<f64>,
}

impl Prefix {
    /// `x` is centred on its weighted mean first, so that large levels (nanoseconds in the
    /// billions) do not cost precision in the differences of sums.
    pub(super) fn new(x: &[f64], se: &[f64]) -> Self {
        let weights: Vec<f64> = se.iter().map(|s| 1.0 / (s * s)).collect();
        let total: f64 = weights.iter().sum();
        let centre = x.iter().zip(&weights).map(|(x, w)| x * w).sum::<f64>() / total;
        let mut w = Vec::with_capacity(x.len() + 1);
        let mut wx = Vec::with_capacity(x.len() + 1);
        let (mut sw, mut swx) = (0.0, 0.0);
        w.push(0.0);
        wx.push(0.0);
        for (xi, wi) in x.iter().zip(&weights) {
            sw += wi;
            swx += wi * (xi - centre);
            w.push(sw);
            wx.push(swx);
        }
        Prefix { w, wx }
    }

    pub(super) fn len(&self) -> usize {
        self.w.len() - 1
    }

    /// Sum of weights and weighted mean of [a, b) (the mean relative to the centre).
    pub(super) fn level(&self, a: usize, b: usize) -> (f64, f64) {
        let w = self.w[b] - self.w[a];
        (w, (self.wx[b] - self.wx[a]) / w)
    }

    /// T(k) for the split of [s, e) into [s, k) and [k, e).
    pub(super) fn split(&self, s: usize, k: usize, e: usize) -> f64 {
        let (wl, ml) = self.level(s, k);
        let (wr, mr) = self.level(k, e);
        wl * wr / (wl + wr) * (ml - mr) * (ml - mr)
    }

    /// The splits of [s, e) that leave [`MIN_SEGMENT`] points on each side.
    pub(super) fn candidates(s: usize, e: usize) -> std::ops::Range<usize> {
        (s + MIN_SEGMENT)..(e + 1).saturating_sub(MIN_SEGMENT).max(s + MIN_SEGMENT)
    }

    /// The largest T(k) over the candidate splits of [s, e), with its k (the first of equals).
    pub(super) fn best(&self, s: usize, e: usize) -> Option<(usize, f64)> {
        let mut best: Option<(usize, f64)> = None;
        for k in Self::candidates(s, e) {
            let t = self.split(s, k, e);
            if best.is_none_or(|(_, b)| t > b) {
                best = Some((k, t));
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Weighted residual sum of squares of [a, b) around its own weighted mean, computed
    /// directly.
    fn rss(x: &[f64], se: &[f64], a: usize, b: usize) -> f64 {
        let w: Vec<f64> = se[a..b].iter().map(|s| 1.0 / (s * s)).collect();
        let m = x[a..b].iter().zip(&w).map(|(x, w)| x * w).sum::<f64>() / w.iter().sum::<f64>();
        x[a..b]
            .iter()
            .zip(&w)
            .map(|(x, w)| w * (x - m) * (x - m))
            .sum()
    }

    #[test]
    fn split_is_the_drop_in_weighted_residual_sum_of_squares() {
        let x = [
            1e9 + 3.0,
            1e9 - 1.0,
            1e9 + 2.5,
            1e9 + 7.0,
            1e9 + 6.0,
            1e9 + 8.5,
            1e9 + 5.0,
        ];
        let se = [1.0, 2.0, 0.5, 1.5, 3.0, 0.7, 1.1];
        let p = Prefix::new(&x, &se);
        for s in 0..3 {
            for e in (s + 4)..=x.len() {
                for k in Prefix::candidates(s, e) {
                    let brute = rss(&x, &se, s, e) - rss(&x, &se, s, k) - rss(&x, &se, k, e);
                    let got = p.split(s, k, e);
                    assert!(
                        (got - brute).abs() <= 1e-6 * brute.max(1.0),
                        "s {s} k {k} e {e}: {got} against {brute}"
                    );
                }
            }
        }
    }

    #[test]
    fn best_leaves_two_points_each_side_and_finds_the_step() {
        let x = [0.0, 0.1, -0.1, 0.0, 5.0, 5.1, 4.9];
        let se = [1.0; 7];
        let p = Prefix::new(&x, &se);
        assert_eq!(Prefix::candidates(0, 7), 2..6);
        assert_eq!(Prefix::candidates(0, 3), 2..2);
        assert_eq!(p.best(0, 7).map(|b| b.0), Some(4));
        assert_eq!(p.best(0, 3), None);
    }
}
