//! Run order. The default is seeded randomised ABBA blocks: per block a random permutation of the
//! variants followed by its reverse, so each variant's mean position inside a block is the same
//! and a linear drift cancels (hyperfine's "all A then all B" turns drift into a false difference).

use abperf_model::Slot;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Seeded randomised ABBA blocks (a permutation, then its reverse): cancels linear drift.
    Abba,
    /// Seeded shuffle of all runs.
    Random,
    /// All runs of one variant, then the next (drift biases the comparison).
    Sequential,
}

impl Order {
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Abba => "abba",
            Order::Random => "random",
            Order::Sequential => "sequential",
        }
    }
}

/// The full schedule: warm-ups first (`warmup` rounds, each variant once per round, block -1),
/// then `runs` timed runs per variant in the requested order. Same seed, same schedule.
pub fn build_schedule(
    order: Order,
    variants: usize,
    runs: u32,
    warmup: u32,
    seed: u64,
) -> Vec<Slot> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out: Vec<Slot> = Vec::new();
    let push = |variant: usize, block: i32, warmup: bool, out: &mut Vec<Slot>| {
        out.push(Slot {
            seq: out.len() as u32,
            variant,
            block,
            warmup,
        });
    };
    let identity: Vec<usize> = (0..variants).collect();
    for _ in 0..warmup {
        let mut perm = identity.clone();
        perm.shuffle(&mut rng);
        for &v in &perm {
            push(v, -1, true, &mut out);
        }
    }
    match order {
        Order::Abba => {
            let mut block = 0;
            let mut left = runs;
            while left > 0 {
                let mut perm = identity.clone();
                perm.shuffle(&mut rng);
                for &v in &perm {
                    push(v, block, false, &mut out);
                }
                if left >= 2 {
                    for &v in perm.iter().rev() {
                        push(v, block, false, &mut out);
                    }
                    left -= 2;
                } else {
                    left -= 1;
                }
                block += 1;
            }
        }
        Order::Random => {
            let mut all: Vec<usize> = (0..variants)
                .flat_map(|v| std::iter::repeat_n(v, runs as usize))
                .collect();
            all.shuffle(&mut rng);
            for v in all {
                push(v, 0, false, &mut out);
            }
        }
        Order::Sequential => {
            for v in 0..variants {
                for _ in 0..runs {
                    push(v, v as i32, false, &mut out);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(s: &[Slot]) -> Vec<usize> {
        s.iter().filter(|x| !x.warmup).map(|x| x.variant).collect()
    }

    #[test]
    fn abba_is_reproducible_and_balanced() {
        let a = build_schedule(Order::Abba, 3, 10, 1, 42);
        assert_eq!(a, build_schedule(Order::Abba, 3, 10, 1, 42));
        assert_ne!(timed(&a), timed(&build_schedule(Order::Abba, 3, 10, 1, 43)));
        assert_eq!(a.iter().filter(|s| s.warmup).count(), 3);
        for v in 0..3 {
            assert_eq!(timed(&a).iter().filter(|&&x| x == v).count(), 10);
        }
        // Within every block, each variant's positions sum to the same value: linear drift cancels.
        for block in 0..5 {
            let slots: Vec<&Slot> = a.iter().filter(|s| s.block == block).collect();
            assert_eq!(slots.len(), 6);
            let sums: Vec<u32> = (0..3)
                .map(|v| slots.iter().filter(|s| s.variant == v).map(|s| s.seq).sum())
                .collect();
            assert!(
                sums.iter().all(|&x| x == sums[0]),
                "block {block}: {sums:?}"
            );
        }
        assert!(a.windows(2).all(|w| w[1].seq == w[0].seq + 1));
    }

    #[test]
    fn odd_runs_end_with_a_half_block() {
        let a = build_schedule(Order::Abba, 2, 5, 0, 7);
        assert_eq!(a.len(), 10);
        assert_eq!(a.iter().filter(|s| s.block == 2).count(), 2);
    }

    #[test]
    fn random_and_sequential() {
        let r = build_schedule(Order::Random, 2, 50, 0, 1);
        assert_eq!(timed(&r).iter().filter(|&&v| v == 0).count(), 50);
        assert_ne!(timed(&r)[..50], vec![0; 50][..]);
        let s = build_schedule(Order::Sequential, 2, 3, 0, 1);
        assert_eq!(timed(&s), vec![0, 0, 0, 1, 1, 1]);
    }
}
