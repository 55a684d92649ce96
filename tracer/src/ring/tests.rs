use super::Ring;
use gpuledger_trace_wire::{Api, Event, Op, Platform};
use proptest::prelude::*;
use std::sync::Arc;

fn event(n: u64) -> Event {
    Event {
        t_ns: n,
        pid: 1,
        tid: 2,
        api: Api::Device,
        op: Op::Alloc,
        platform: Platform::Cuda,
        device: Some(0),
        bytes: n * 10,
        address: n,
        flags: 0,
        result: 0,
    }
}

fn popped(b: [u8; gpuledger_trace_wire::EVENT_BYTES]) -> u64 {
    Event::decode(&b).unwrap().t_ns
}

proptest! {
    /// Any interleaving of pushes and pops: pushes into a full ring fail at once and are
    /// counted, pops return what was accepted in order.
    #[test]
    fn never_blocks_counts_drops_keeps_order(ops in proptest::collection::vec(any::<bool>(), 0..400)) {
        let ring: Ring<16> = Ring::new();
        let mut model = std::collections::VecDeque::new();
        let (mut next, mut dropped) = (0u64, 0u64);
        for push in ops {
            if push {
                let ok = ring.push(&event(next));
                prop_assert_eq!(ok, model.len() < 16);
                if ok { model.push_back(next) } else { dropped += 1 }
                next += 1;
            } else {
                prop_assert_eq!(ring.pop().map(popped), model.pop_front());
            }
        }
        prop_assert_eq!(ring.take_dropped(), dropped);
        prop_assert_eq!(ring.take_dropped(), 0);
    }
}

#[test]
fn threads_push_while_one_pops_and_nothing_is_lost_or_doubled() {
    let ring: Arc<Ring<64>> = Arc::new(Ring::new());
    let pushers: Vec<_> = (0..4u64)
        .map(|t| {
            let r = ring.clone();
            std::thread::spawn(move || {
                (0..5000u64)
                    .filter(|i| r.push(&event(t * 100_000 + i)))
                    .count() as u64
            })
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    let mut accepted = 0;
    let mut done = false;
    while !done {
        done = pushers.iter().all(|p| p.is_finished());
        while let Some(b) = ring.pop() {
            assert!(seen.insert(popped(b)), "an event came out twice");
        }
    }
    for p in pushers {
        accepted += p.join().unwrap();
    }
    while let Some(b) = ring.pop() {
        assert!(seen.insert(popped(b)));
    }
    assert_eq!(seen.len() as u64, accepted);
    assert_eq!(accepted + ring.take_dropped(), 20_000);
}

#[test]
fn reset_empties() {
    let ring: Ring<4> = Ring::new();
    for i in 0..6 {
        ring.push(&event(i));
    }
    ring.reset();
    assert!(ring.pop().is_none());
    assert_eq!(ring.take_dropped(), 0);
    assert!(ring.push(&event(9)));
    assert_eq!(ring.pop().map(popped), Some(9));
}
