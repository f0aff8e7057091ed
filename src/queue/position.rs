//! Where an entry sits in its store, kept by the entry's owner: [`Position`] (a heap
//! index or a lane ticket's low bits, in 32 bits), [`Tracked`] entries that carry one,
//! [`LockedCell`] (a value outside the queue under the queue's lock), and the public
//! queues' [`Handle`]. Only the store reads them, under its owner's lock (I6 in
//! `queue/mod.rs`).

use crate::sync::Ordering;
use crate::sync::{AtomicU32, AtomicU64};

use super::heap::{self, Handle as HeapHandle};
use super::lane;
#[cfg(test)]
use super::TimedEntry;

/// Names an entry of a public queue (a slab handle of its heap, `heap.rs`). `Copy`,
/// never dangling: an entry that left the queue is simply not found. (The public queues
/// never use the ready lane: their takers always go through the heap.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Handle(pub(super) HeapHandle);

/// Set in a [`Position`] that holds a lane ticket: the top bit, above the ticket's low
/// [`lane::LOW_BITS`] bits.
pub(super) const LANE_BIT: u32 = 1 << lane::LOW_BITS;

const _: () = {
    assert!(
        lane::LOW_BITS == u32::BITS - 1,
        "a lane position is LANE_BIT and the low bits"
    );
    // Every heap index is below `MAX_LEN`, so below NONE, and never has LANE_BIT.
    assert!(heap::MAX_LEN <= Position::NONE as usize);
};

/// Where a [`Position`] points.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// A heap index, kept exact by the store (`store.rs`).
    HeapAt(usize),
    /// The low [`lane::LOW_BITS`] bits of a ticket in the ready lane, from which the lane
    /// recovers the ticket ([`lane::Lane::ticket_of`], L5 in `lane.rs`).
    LaneLow(u64),
    Nowhere,
}

/// An entry's place in its store, kept in the entry's owner (a task header) so that a
/// removal finds the entry without a search: its heap index (the store rewrites it on
/// every move, `heap.rs`'s intrusive keeper) or its lane ticket's low bits, and "nowhere"
/// once it left. Only the store reaches the value inside, through its owner's lock guard
/// (I6).
///
/// 32 bits, so that 4 bytes of the task header stay free for another field:
///
/// | bits                     | place                                              |
/// |--------------------------|----------------------------------------------------|
/// | below [`Position::NONE`] | heap index (below `heap::MAX_LEN`, `heap.rs`)      |
/// | [`Position::NONE`]       | nowhere                                            |
/// | [`LANE_BIT`] set         | lane ticket's low [`lane::LOW_BITS`] bits below it |
///
/// "Nowhere" is `LANE_BIT - 1`, not `u32::MAX`: every value with `LANE_BIT` set is some
/// ticket's (`u32::MAX` is the ticket `2^31 - 1`'s), and no heap index reaches
/// `LANE_BIT - 1`.
#[derive(Debug)]
pub(crate) struct Position(pub(super) AtomicU32);

impl Position {
    /// "Not stored".
    pub(super) const NONE: u32 = LANE_BIT - 1;

    /// A position that names no entry.
    pub(crate) fn new() -> Self {
        Position(AtomicU32::new(Self::NONE))
    }

    /// The bits for heap index `index` (below `heap::MAX_LEN`).
    #[inline]
    pub(super) fn heap(index: usize) -> u32 {
        debug_assert!(index < heap::MAX_LEN, "heap index {index}");
        index as u32
    }

    /// The bits for lane ticket `ticket`: [`LANE_BIT`] and its low bits.
    #[inline]
    pub(super) fn lane(ticket: u64) -> u32 {
        LANE_BIT | (ticket & lane::LOW_MASK) as u32
    }

    /// Decodes a position's bits.
    #[inline]
    pub(super) fn place(bits: u32) -> Place {
        if bits & LANE_BIT != 0 {
            Place::LaneLow(u64::from(bits & !LANE_BIT))
        } else if bits == Self::NONE {
            Place::Nowhere
        } else {
            Place::HeapAt(bits as usize)
        }
    }
}

impl Default for Position {
    fn default() -> Self {
        Self::new()
    }
}

/// An entry that carries its own [`Position`]: the executor's tasks. Its store keeps the
/// position exact while the entry is stored (`store.rs`).
pub(crate) trait Tracked {
    fn position(&self) -> &Position;

    /// The entry has left its store (popped, removed, cleared), under its owner's lock;
    /// the executor's entries hand their deadline back to their task here
    /// (`pool/entry.rs`, `Entry`).
    #[inline]
    fn left(&self) {}
}

/// The test entries of the sharded queue's unit tests and loom models.
#[cfg(test)]
impl Tracked for TimedEntry<crate::sync::Arc<(u32, Position)>> {
    fn position(&self) -> &Position {
        &self.value.1
    }
}

impl<E: Tracked> heap::Indexed for E {
    #[inline]
    fn set_index(&self, pos: Option<usize>) {
        let bits = pos.map_or(Position::NONE, Position::heap);
        // Relaxed: only the store writes it, under its owner's lock (I6).
        self.position().0.store(bits, Ordering::Relaxed);
        if pos.is_none() {
            self.left();
        }
    }
}

/// A `u64` that lives outside the queue (in a task header) but is guarded by a queue's
/// lock: read and written only through [`Store::replace`](super::store::Store::replace),
/// under that lock (I6).
#[derive(Debug)]
pub(crate) struct LockedCell(pub(super) AtomicU64);

impl LockedCell {
    pub(crate) fn new(value: u64) -> Self {
        LockedCell(AtomicU64::new(value))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_position_is_four_bytes() {
        assert_eq!(std::mem::size_of::<Position>(), 4);
    }

    #[test]
    fn a_new_position_is_nowhere() {
        // Relaxed: nothing else sees it.
        let bits = Position::new().0.load(Ordering::Relaxed);
        assert_eq!(Position::place(bits), Place::Nowhere);
    }

    #[test]
    fn heap_indices_round_trip() {
        for index in [0, 1, 4, 12_345, heap::MAX_LEN - 2, heap::MAX_LEN - 1] {
            let bits = Position::heap(index);
            assert_eq!(Position::place(bits), Place::HeapAt(index));
            assert_ne!(bits, Position::NONE);
            assert_eq!(bits & LANE_BIT, 0);
        }
    }

    /// A lane position keeps a ticket's low bits, whatever the ticket: none of them is
    /// "nowhere" or a heap index (the lane recovers the ticket, L5 in `lane.rs`).
    #[test]
    fn lane_tickets_round_trip_to_their_low_bits() {
        let mask = lane::LOW_MASK;
        for ticket in [
            0,
            1,
            mask - 1,
            mask,
            mask + 1,
            u64::from(u32::MAX),
            u64::from(u32::MAX) + 1,
            (1 << 40) + 5,
            u64::MAX,
        ] {
            let bits = Position::lane(ticket);
            assert_eq!(
                Position::place(bits),
                Place::LaneLow(ticket & mask),
                "{ticket:#x}"
            );
            assert_ne!(bits, Position::NONE);
        }
    }
}
