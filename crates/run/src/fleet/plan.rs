//! The whole fleet experiment planned before anything is dispatched: every host runs every
//! variant, in its own seeded schedule (the experiment's seed mixed with the host's place), one
//! after the other in the experiment's schedule: host `i` owns a contiguous range of seqs.

use crate::design::{Order, build_schedule};
use abperf_model::Slot;
use abperf_store::FleetHost;

/// The seed of host `pos`'s schedule (host 0's is the experiment's seed).
pub fn host_seed(seed: u64, pos: usize) -> u64 {
    seed.wrapping_add((pos as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// The experiment's schedule and its hosts with the slots each owns. Block numbers are the
/// experiment's (each host's blocks after the previous host's), so that no two hosts share one.
pub fn plan(
    hosts: &[String],
    order: Order,
    variants: usize,
    runs: u32,
    warmup: u32,
    seed: u64,
) -> (Vec<Slot>, Vec<FleetHost>) {
    let mut schedule = Vec::new();
    let mut owners = Vec::with_capacity(hosts.len());
    let mut block_base = 0;
    for (pos, name) in hosts.iter().enumerate() {
        let first = schedule.len() as u32;
        let own = build_schedule(order, variants, runs, warmup, host_seed(seed, pos));
        let mut last_block = -1;
        for s in own {
            let block = if s.block < 0 {
                s.block
            } else {
                s.block + block_base
            };
            last_block = last_block.max(block);
            schedule.push(Slot {
                seq: first + s.seq,
                block,
                ..s
            });
        }
        block_base = last_block + 1;
        owners.push(FleetHost {
            name: name.clone(),
            first_seq: first,
            end_seq: schedule.len() as u32,
            abperf: None,
            environment: None,
        });
    }
    (schedule, owners)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_runs_every_variant_in_its_own_seeded_order() {
        let hosts: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let (s, h) = plan(&hosts, Order::Abba, 2, 4, 1, 7);
        assert_eq!(s.len(), 3 * 2 * 5);
        assert!(s.iter().enumerate().all(|(i, x)| x.seq == i as u32));
        for o in &h {
            let mine: Vec<&Slot> = s.iter().filter(|x| o.owns(x.seq)).collect();
            assert_eq!(mine.len(), 10);
            for v in 0..2 {
                let timed = mine.iter().filter(|x| x.variant == v && !x.warmup).count();
                assert_eq!(timed, 4, "host {} variant {v}", o.name);
            }
        }
        // Blocks are the experiment's: no two hosts share one.
        let blocks = |o: &FleetHost| -> Vec<i32> {
            s.iter()
                .filter(|x| o.owns(x.seq) && x.block >= 0)
                .map(|x| x.block)
                .collect()
        };
        assert!(blocks(&h[0]).iter().all(|b| !blocks(&h[1]).contains(b)));
        // The same seed plans the same experiment.
        assert_eq!(plan(&hosts, Order::Abba, 2, 4, 1, 7).0, s);
    }
}
