//! The A/A self-check of docs/statistics.md#self-check on simulated data: the same variant twice
//! must be called faster or slower about alpha of the time, also with a linear drift under
//! randomised ABBA order; with the same drift under sequential order (all A, then all B) the drift
//! check fires.

#[cfg(test)]
mod tests {
    use crate::compare::{Options, Sample, compare};
    use crate::dist::norm_ppf;
    use crate::verdict::Verdict;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const DATASETS: usize = 3000;
    const N: usize = 12;

    fn normal(rng: &mut ChaCha8Rng) -> f64 {
        norm_ppf(rng.random_range(f64::EPSILON..1.0))
    }

    /// Schedule of 2N runs: true = variant B. ABBA or BAAB per block by the PRNG, or sequential.
    fn schedule(rng: &mut ChaCha8Rng, abba: bool) -> Vec<bool> {
        if !abba {
            return (0..2 * N).map(|i| i >= N).collect();
        }
        let mut s = Vec::new();
        for _ in 0..N / 2 {
            let blk = if rng.random::<bool>() {
                [false, true, true, false]
            } else {
                [true, false, false, true]
            };
            s.extend(blk);
        }
        s
    }

    /// Returns (false faster/slower rate, drift detection rate).
    fn simulate(seed: u64, abba: bool, drift_total_pct: f64) -> (f64, f64) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let opts = Options {
            resamples: 0,
            outlier_recheck: false,
            ..Options::default()
        };
        let (mut false_calls, mut drift_found) = (0, 0);
        for _ in 0..DATASETS {
            let sched = schedule(&mut rng, abba);
            let (mut a, mut b, mut ia, mut ib) = (vec![], vec![], vec![], vec![]);
            for (i, &is_b) in sched.iter().enumerate() {
                let drift = drift_total_pct / 100.0 * 100.0 * i as f64 / (2 * N - 1) as f64;
                let v = 100.0 + drift + 0.3 * normal(&mut rng);
                if is_b {
                    b.push(v);
                    ib.push(i as f64);
                } else {
                    a.push(v);
                    ia.push(i as f64);
                }
            }
            let c = compare(
                "t",
                Sample::with_order("A", &a, &ia),
                Sample::with_order("A'", &b, &ib),
                &opts,
            )
            .unwrap();
            if matches!(c.verdict, Verdict::Faster | Verdict::Slower) {
                false_calls += 1;
            }
            if c.drift_p.is_some_and(|p| p < opts.alpha) {
                drift_found += 1;
            }
        }
        let rates = (
            false_calls as f64 / DATASETS as f64,
            drift_found as f64 / DATASETS as f64,
        );
        abperf_model::error::stderr_line(&format!(
            "A/A abba={abba} drift={drift_total_pct}%: false faster/slower {:.4}, drift found {:.4}",
            rates.0, rates.1
        ));
        rates
    }

    #[test]
    fn aa_false_positive_rate_is_alpha() {
        let (rate, _) = simulate(101, true, 0.0);
        assert!(
            (0.04..=0.06).contains(&rate),
            "no drift: false faster/slower rate {rate}"
        );
        let (rate, drift) = simulate(102, true, 2.0);
        assert!(
            (0.04..=0.06).contains(&rate),
            "ABBA with +2% drift: false rate {rate} (drift found {drift})"
        );
    }

    #[test]
    fn sequential_order_with_drift_fires_the_drift_check() {
        let (rate, drift) = simulate(103, false, 2.0);
        assert!(
            drift > 0.9,
            "sequential + drift: drift check fired in {drift} of data sets (false rate {rate})"
        );
    }
}
