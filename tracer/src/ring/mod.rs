//! A bounded multi-producer, single-consumer ring of events, allocated once (a static): pushing
//! never blocks and never allocates; when the ring is full the event is counted as dropped.
//!
//! Each slot carries a sequence number (Vyukov's bounded queue). Stored relative to the slot's
//! index so that an all-zero ring is an empty one: slot `i` is free for position `p` (with
//! `p % N == i`) when its sequence is `p - i`, holds position `p`'s event when it is `p - i + 1`.
//! Event fields are atomics, so no `unsafe` is needed; a reader sees a slot's fields only after
//! the sequence store that publishes them (release/acquire).

use gpuledger_trace_wire::{Event, EVENT_BYTES};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Events the ring holds.
pub const CAPACITY: usize = 8192;

const WORDS: usize = EVENT_BYTES / 8;

struct Slot {
    seq: AtomicUsize,
    words: [AtomicU64; WORDS],
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            seq: AtomicUsize::new(0),
            words: [const { AtomicU64::new(0) }; WORDS],
        }
    }
}

/// The ring.
pub struct Ring<const N: usize> {
    slots: [Slot; N],
    head: AtomicUsize,
    tail: AtomicUsize,
    dropped: AtomicU64,
}

impl<const N: usize> Ring<N> {
    /// An empty ring (usable in a static).
    pub const fn new() -> Self {
        Ring {
            slots: [const { Slot::new() }; N],
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// Adds an event; `false` (and one more dropped) when the ring is full.
    pub fn push(&self, e: &Event) -> bool {
        let mut pos = self.tail.load(Ordering::Relaxed);
        loop {
            let i = pos % N;
            let slot = &self.slots[i];
            let seq = slot.seq.load(Ordering::Acquire);
            let free = pos.wrapping_sub(i);
            if seq == free {
                match self.tail.compare_exchange_weak(
                    pos,
                    pos.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        let mut b = [0u8; EVENT_BYTES];
                        e.encode(&mut b);
                        for (w, c) in slot.words.iter().zip(b.chunks_exact(8)) {
                            let mut x = [0u8; 8];
                            x.copy_from_slice(c);
                            w.store(u64::from_le_bytes(x), Ordering::Relaxed);
                        }
                        slot.seq.store(free.wrapping_add(1), Ordering::Release);
                        return true;
                    }
                    Err(now) => pos = now,
                }
            } else if (seq as isize).wrapping_sub(free as isize) < 0 {
                // The slot still holds the event of the previous lap: full.
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return false;
            } else {
                pos = self.tail.load(Ordering::Relaxed);
            }
        }
    }

    /// Takes the oldest event's bytes (single consumer).
    pub fn pop(&self) -> Option<[u8; EVENT_BYTES]> {
        let pos = self.head.load(Ordering::Relaxed);
        let i = pos % N;
        let slot = &self.slots[i];
        let full = pos.wrapping_sub(i).wrapping_add(1);
        if slot.seq.load(Ordering::Acquire) != full {
            return None;
        }
        let mut b = [0u8; EVENT_BYTES];
        for (w, c) in slot.words.iter().zip(b.chunks_exact_mut(8)) {
            c.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
        }
        self.head.store(pos.wrapping_add(1), Ordering::Relaxed);
        slot.seq
            .store(pos.wrapping_sub(i).wrapping_add(N), Ordering::Release);
        Some(b)
    }

    /// Adds `n` to the dropped count (events lost after leaving the ring).
    pub fn add_dropped(&self, n: u64) {
        self.dropped.fetch_add(n, Ordering::Relaxed);
    }

    /// Takes the dropped count, leaving 0.
    pub fn take_dropped(&self) -> u64 {
        self.dropped.swap(0, Ordering::Relaxed)
    }

    /// Empties the ring; only for a forked child, where no other thread exists.
    pub fn reset(&self) {
        for s in &self.slots {
            s.seq.store(0, Ordering::Relaxed);
        }
        self.head.store(0, Ordering::Relaxed);
        self.tail.store(0, Ordering::Relaxed);
        self.dropped.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;
