//! Counting and listing the pairs of a sequence that are out of order, in O(n log n) time and
//! O(n) memory, for the pairwise statistics (Mann-Kendall's S, Sen's slope) that would
//! otherwise form all n(n-1)/2 pairs.

/// Dense ranks (0-based) of `v` in `f64::total_cmp` order, values equal by `==` (so -0.0 and
/// 0.0) sharing a rank; NaN gets `None`. Returns the ranks and the number of distinct ranks.
pub(crate) fn dense_ranks(v: &[f64]) -> (Vec<Option<u32>>, usize) {
    let mut idx: Vec<u32> = (0..v.len() as u32)
        .filter(|&i| !v[i as usize].is_nan())
        .collect();
    idx.sort_unstable_by(|&i, &j| v[i as usize].total_cmp(&v[j as usize]));
    let mut ranks = vec![None; v.len()];
    let mut r = 0u32;
    for (p, &i) in idx.iter().enumerate() {
        if p > 0 && v[idx[p - 1] as usize] != v[i as usize] {
            r += 1;
        }
        ranks[i as usize] = Some(r);
    }
    let distinct = if idx.is_empty() { 0 } else { r as usize + 1 };
    (ranks, distinct)
}

/// A Fenwick tree of counts over ranks 0..n.
pub(crate) struct Fenwick(Vec<u64>);

impl Fenwick {
    pub(crate) fn new(n: usize) -> Self {
        Fenwick(vec![0; n + 1])
    }

    pub(crate) fn add(&mut self, rank: u32) {
        let mut i = rank as usize + 1;
        while i < self.0.len() {
            self.0[i] += 1;
            i += i & i.wrapping_neg();
        }
    }

    /// How many added ranks are below `rank`.
    pub(crate) fn below(&self, rank: u32) -> u64 {
        let (mut i, mut s) = (rank as usize, 0);
        while i > 0 {
            s += self.0[i];
            i -= i & i.wrapping_neg();
        }
        s
    }
}

/// For a sequence cut into consecutive groups (`group_end[g]` is one past group g's last
/// position), the number of pairs p < q in different groups with `key[q] < key[p]` (strictly),
/// comparing in `f64::total_cmp` order except that values equal by `==` tie.
pub(crate) fn strict_inversions_across_groups(key: &[f64], group_end: &[usize]) -> u64 {
    let (ranks, distinct) = dense_ranks(key);
    let mut tree = Fenwick::new(distinct);
    let (mut inserted, mut count, mut start) = (0u64, 0u64, 0usize);
    for &end in group_end {
        for r in ranks[start..end].iter().flatten() {
            // Earlier elements with a larger key.
            count += inserted - tree.below(*r + 1);
        }
        for r in ranks[start..end].iter().flatten() {
            tree.add(*r);
            inserted += 1;
        }
        start = end;
    }
    count
}

/// Every pair of elements that two orders of the same elements `0..n` place differently:
/// `visit(i, j)` for each pair where `i` comes before `j` in `first` and after it in `second`.
/// O(n log n + pairs) time, O(n) memory (a merge sort of `second` by position in `first` that
/// reports what it crosses).
pub(crate) fn visit_discordant(first: &[u32], second: &[u32], mut visit: impl FnMut(u32, u32)) {
    let mut pos = vec![0u32; first.len()];
    for (p, &e) in first.iter().enumerate() {
        pos[e as usize] = p as u32;
    }
    let mut seq: Vec<(u32, u32)> = second.iter().map(|&e| (pos[e as usize], e)).collect();
    let mut buf = seq.clone();
    let n = seq.len();
    let mut width = 1;
    while width < n {
        let mut lo = 0;
        while lo < n {
            let mid = (lo + width).min(n);
            let hi = (lo + 2 * width).min(n);
            let (mut l, mut r, mut o) = (lo, mid, lo);
            while l < mid || r < hi {
                if r >= hi || (l < mid && seq[l].0 < seq[r].0) {
                    buf[o] = seq[l];
                    l += 1;
                } else {
                    // seq[r] comes first in `first` but after seq[l..mid] in `second`.
                    for left in &seq[l..mid] {
                        visit(seq[r].1, left.1);
                    }
                    buf[o] = seq[r];
                    r += 1;
                }
                o += 1;
            }
            lo = hi;
        }
        std::mem::swap(&mut seq, &mut buf);
        width *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn counts_and_lists_what_the_pairs_say() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for _ in 0..200 {
            let n = rng.random_range(0..40);
            let key: Vec<f64> = (0..n)
                .map(|_| match rng.random_range(0..4) {
                    0 => 0.0,
                    1 => -0.0,
                    _ => rng.random_range(-3..4) as f64,
                })
                .collect();
            let mut ends: Vec<usize> = (1..n).filter(|_| rng.random_bool(0.6)).collect();
            ends.push(n);
            let group = |p: usize| ends.iter().position(|&e| p < e).unwrap();
            let mut want = 0;
            for p in 0..n {
                for q in p + 1..n {
                    want += (group(p) != group(q) && key[q] < key[p]) as u64;
                }
            }
            assert_eq!(strict_inversions_across_groups(&key, &ends), want);

            let first: Vec<u32> = (0..n as u32).collect();
            let mut second = first.clone();
            second.sort_by(|&i, &j| key[i as usize].total_cmp(&key[j as usize]));
            let mut got = Vec::new();
            visit_discordant(&first, &second, |i, j| got.push((i, j)));
            got.sort();
            let at = |e: u32| second.iter().position(|&x| x == e).unwrap();
            let mut want = Vec::new();
            for i in 0..n as u32 {
                for j in i + 1..n as u32 {
                    if at(j) < at(i) {
                        want.push((i, j));
                    }
                }
            }
            assert_eq!(got, want);
        }
    }
}
