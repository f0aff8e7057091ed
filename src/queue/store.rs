//! `Store`: the heap and the ready lane side by side. No locks, no clock, no waiting: the
//! blocking queue (`queue/blocking.rs`) keeps one store under its lock, the sharded queue
//! (`sharded.rs`) one per shard. Each mutation says whether the head may have changed, so
//! the owner decides whom to wake (I5 in `queue/mod.rs`).
//!
//! Entries are found again in one of two ways, chosen by the heap's keeper (`heap.rs`):
//! - `Store<E, SlotTable>` (the public queues): by [`Handle`]s, which a push returns.
//! - `Store<E, InEntry>` (the executor): by the [`Position`] each entry carries
//!   ([`Tracked`]). The store writes an entry's place (heap index, or the low bits of its
//!   lane ticket, from which the lane recovers the ticket: L5) into it on every move and
//!   clears it when the entry leaves, so the position is exact while the entry is stored
//!   (H1); a lookup also checks that the entry it finds is the one that owns the
//!   position.
//!
//! # Invariants
//! The heap's H1–H4 (`heap.rs`) and the lane's L1–L5 (`lane.rs`) hold, and:
//! - I7: the lane holds only entries that were due when queued, in order, and the head
//!   is the earlier of the lane's front and the heap's root, so entries leave in exactly
//!   the order a heap alone would give.
//!
//! # Ordering
//! A store is always behind its owner's mutex. The cells of [`Position`] and
//! [`LockedCell`] are `Relaxed` atomics (they live in shared task headers); the owner's
//! mutex orders every access (I6 in `queue/mod.rs`).

use crate::sync::Ordering;

use super::heap::{InEntry, IndexedHeap, Keeper, SlotTable, DEFAULT_ARITY};
use super::lane::Lane;
use super::{Handle, LockedCell, Place, Position, Timed, Tracked};
use crate::clock::Ticks;

/// What a store tells its entries about the lane (the heap tells its keeper itself).
pub(crate) trait LaneKeeper<E>: Keeper<E> {
    /// `entry` is now in the lane under `ticket`, or (`None`) left the store.
    fn in_lane(entry: &E, ticket: Option<u64>);
}

impl<E> LaneKeeper<E> for SlotTable {
    #[inline]
    fn in_lane(_: &E, _: Option<u64>) {}
}

impl<E: Tracked> LaneKeeper<E> for InEntry {
    #[inline]
    fn in_lane(entry: &E, ticket: Option<u64>) {
        let bits = ticket.map_or(Position::NONE, Position::lane);
        // Relaxed: under the owner's lock (I6).
        entry.position().0.store(bits, Ordering::Relaxed);
        if ticket.is_none() {
            entry.left();
        }
    }
}

/// The heap and the ready lane (module notes).
pub(crate) struct Store<E, K: Keeper<E> = SlotTable> {
    /// Pending entries, first out at the root (H1–H3).
    heap: IndexedHeap<E, DEFAULT_ARITY, K>,
    /// Entries that were due when queued, in order (`lane.rs`, I7).
    lane: Lane<E>,
}

impl<E: Timed, K: LaneKeeper<E>> Store<E, K> {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Store {
            heap: IndexedHeap::with_capacity(capacity),
            lane: Lane::new(),
        }
    }

    /// The head, if any: the earlier of the lane's front and the heap's root (I7).
    #[inline]
    pub(crate) fn peek(&self) -> Option<&E> {
        match (self.lane.peek(), self.heap.peek()) {
            (Some(l), Some(h)) => Some(if h.before(l) { h } else { l }),
            (l, h) => l.or(h),
        }
    }

    /// The head's deadline, if any.
    #[inline]
    pub(crate) fn head_deadline(&self) -> Option<Ticks> {
        self.peek().map(Timed::deadline)
    }

    /// Removes the head (I7).
    #[inline]
    pub(crate) fn pop_head(&mut self) -> Option<E> {
        let from_heap = match (self.lane.peek(), self.heap.peek()) {
            (Some(l), Some(h)) => h.before(l),
            (None, _) => true,
            (Some(_), None) => false,
        };
        if from_heap {
            self.heap.pop()
        } else {
            let entry = self.lane.pop();
            if let Some(e) = &entry {
                K::in_lane(e, None);
            }
            entry
        }
    }

    /// Every entry, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &E> {
        self.lane.iter().chain(self.heap.iter())
    }

    /// Entries stored.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.heap.len() + self.lane.len()
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.lane.is_empty()
    }

    /// Removes every entry `remove` selects.
    pub(crate) fn extract_if(&mut self, mut remove: impl FnMut(&E) -> bool) -> Vec<E> {
        let mut out = self.lane.extract_if(&mut remove);
        out.iter().for_each(|e| K::in_lane(e, None));
        out.extend(self.heap.extract_if(remove));
        out
    }

    /// Removes everything (entries in no particular order).
    pub(crate) fn clear(&mut self) -> Vec<E> {
        let mut out = self.lane.clear();
        out.iter().for_each(|e| K::in_lane(e, None));
        out.extend(self.heap.clear());
        out
    }

    /// Every entry due at `now`, in order.
    pub(crate) fn drain_due(&mut self, now: Ticks) -> Vec<E> {
        let mut out = Vec::new();
        while self.head_deadline().is_some_and(|d| d <= now) {
            out.extend(self.pop_head());
        }
        out
    }

    /// The earliest deadline after `now` (`Some(None)`: none), or `None` if finding it
    /// would walk more than `budget` due entries. Lane entries were due when queued, so
    /// only the heap holds deadlines after `now` (`IndexedHeap::first_not`: O(k · D) for
    /// k due).
    pub(crate) fn first_after(&self, now: Ticks, budget: usize) -> Option<Option<Ticks>> {
        self.heap
            .first_not(|e| e.deadline() <= now, Timed::deadline, budget)
    }

    /// The value of a [`LockedCell`] (I6).
    #[inline]
    pub(crate) fn read(&self, cell: &LockedCell) -> u64 {
        // Relaxed: under the owner's lock (I6).
        cell.0.load(Ordering::Relaxed)
    }

    /// Replaces the value of a [`LockedCell`] and returns the old one (I6).
    #[inline]
    pub(crate) fn replace(&mut self, cell: &LockedCell, value: u64) -> u64 {
        // Relaxed: under the owner's lock (I6).
        cell.0.swap(value, Ordering::Relaxed)
    }

    /// `true` if the heap's root is `entry` (the head, unless the lane's front is earlier).
    #[inline]
    fn heap_head_is(&self, entry: &E) -> bool {
        self.lane.peek().is_none_or(|l| !l.before(entry))
    }
}

/// The public queues' store: entries named by [`Handle`]s.
impl<E: Timed> Store<E, SlotTable> {
    /// Inserts an entry into the heap; `true` if it became the head. O(log n).
    #[inline]
    pub(crate) fn push(&mut self, entry: E) -> (Handle, bool) {
        let h = self.heap.push(entry);
        let head = self.heap.position(h) == Some(0)
            && self.heap_head_is(self.heap.peek().expect("just pushed"));
        (Handle(h), head)
    }

    /// Removes the entry `h` names. Returns it and whether it was the head. O(log n).
    #[inline]
    pub(crate) fn remove(&mut self, h: Handle) -> (Option<E>, bool) {
        let Some(at) = self.heap.position(h.0) else {
            return (None, false);
        };
        (self.heap.remove(h.0), at == 0)
    }

    /// Removes the head with its handle (the public queues never use the lane, so the
    /// head is the heap's root).
    #[inline]
    pub(crate) fn pop_keyed(&mut self) -> Option<(E, Handle)> {
        debug_assert!(self.lane.is_empty(), "the public queues never use the lane");
        self.heap.pop_keyed().map(|(e, h)| (e, Handle(h)))
    }

    /// Changes the key of the entry `h` names with `f`; `None` for a stale handle, else
    /// whether the head may have changed (it was or became the heap's root). O(log n).
    #[inline]
    pub(crate) fn update(&mut self, h: Handle, f: impl FnOnce(&mut E)) -> Option<bool> {
        let at = self.heap.position(h.0)?;
        let now = self.heap.update_at(at, f);
        Some(at == 0 || now == 0)
    }

    /// The entry a push or re-key whose comparison panicked left out of order, taken out
    /// (`IndexedHeap::take_detached`).
    pub(crate) fn take_detached(&mut self) -> Option<E> {
        self.heap.take_detached()
    }
}

/// Where a tracked entry's [`Position`] says it is.
enum At {
    Heap(usize),
    Lane(u64),
    Nowhere,
}

/// The executor's store: entries carry their own [`Position`] ([`Tracked`]).
impl<E: Timed + Tracked> Store<E, InEntry> {
    /// Inserts an entry and records its place in its [`Position`] (I6); `true` if it
    /// became the head. With `due` (the caller read the clock and the entry's deadline is
    /// not after it), the entry goes into the ready lane when that keeps the lane in
    /// order: O(1); else into the heap: O(log n).
    #[inline]
    pub(crate) fn push_tracked(&mut self, entry: E, due: bool) -> bool {
        if due && self.lane.accepts(&entry) {
            let head = self.lane.is_empty() && self.heap.peek().is_none_or(|h| !h.before(&entry));
            let ticket = self.lane.push(entry);
            if let Some(e) = self.lane.get(ticket) {
                InEntry::in_lane(e, Some(ticket));
            }
            head
        } else {
            let pos = self.heap.push_indexed(entry);
            pos == 0 && self.heap_head_is(self.heap.peek().expect("just pushed"))
        }
    }

    /// Where `position` says its entry is, if that entry is stored here: the place is
    /// checked against the entry found there (it must own `position`).
    #[inline]
    fn find(&self, position: &Position) -> At {
        let owns = |e: &E| std::ptr::eq(e.position(), position);
        // Relaxed: under the owner's lock (I6).
        match Position::place(position.0.load(Ordering::Relaxed)) {
            Place::LaneLow(low) => {
                // L5: the only ticket with these low bits that can name a slot.
                let ticket = self.lane.ticket_of(low);
                match self.lane.get(ticket) {
                    Some(e) if owns(e) => At::Lane(ticket),
                    _ => At::Nowhere,
                }
            }
            Place::Nowhere => At::Nowhere,
            Place::HeapAt(pos) if self.heap.get_at(pos).is_some_and(owns) => At::Heap(pos),
            Place::HeapAt(_) => At::Nowhere,
        }
    }

    /// The entry that owns `position`, if it is stored here.
    #[inline]
    pub(crate) fn get_tracked(&self, position: &Position) -> Option<&E> {
        match self.find(position) {
            At::Heap(pos) => self.heap.get_at(pos),
            At::Lane(ticket) => self.lane.get(ticket),
            At::Nowhere => None,
        }
    }

    /// `true` if the entry that owns `position` is stored here.
    #[inline]
    pub(crate) fn contains_tracked(&self, position: &Position) -> bool {
        !matches!(self.find(position), At::Nowhere)
    }

    /// Removes the entry that owns `position`. Returns it and whether a head that was not
    /// yet due left (the heap's root; lane entries are due, I5). O(log n) in the heap,
    /// O(1) in the lane.
    #[inline]
    pub(crate) fn remove_tracked(&mut self, position: &Position) -> (Option<E>, bool) {
        match self.find(position) {
            At::Heap(pos) => (Some(self.heap.remove_at(pos)), pos == 0),
            At::Lane(ticket) => {
                let entry = self.lane.remove(ticket);
                if let Some(e) = &entry {
                    InEntry::in_lane(e, None);
                }
                (entry, false)
            }
            At::Nowhere => (None, false),
        }
    }

    /// Changes the key of the entry that owns `position`; its position follows it. An
    /// entry in the lane moves to the heap. Returns `None` if the entry is not stored,
    /// else whether the head may have changed. O(log n).
    pub(crate) fn update_tracked(
        &mut self,
        position: &Position,
        f: impl FnOnce(&mut E),
    ) -> Option<bool> {
        match self.find(position) {
            At::Heap(pos) => {
                let now = self.heap.update_at(pos, f);
                Some(pos == 0 || now == 0)
            }
            At::Lane(ticket) => {
                let mut entry = self.lane.remove(ticket)?;
                f(&mut entry);
                self.push_tracked(entry, false);
                Some(true)
            }
            At::Nowhere => None,
        }
    }

    /// Asserts H1–H2, L1–L3, L5 and that every entry's position names it (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn check_invariants(&self) {
        self.lane.check_invariants();
        // Relaxed: the tests own the store (I6).
        let place = |e: &E| Position::place(e.position().0.load(Ordering::Relaxed));
        self.heap.check_indexed(|e| match place(e) {
            Place::HeapAt(pos) => Some(pos),
            _ => None,
        });
        for (ticket, e) in self.lane.tickets() {
            let Place::LaneLow(low) = place(e) else {
                panic!("a lane entry's position is {:?}", place(e));
            };
            assert_eq!(
                self.lane.ticket_of(low),
                ticket,
                "L5: its ticket from its position"
            );
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::lane::{LOW_BITS, MAX_SLOTS};
    use super::*;
    use crate::queue::TimedEntry;
    use crate::sync::Arc;

    type Entry = TimedEntry<Arc<(u32, Position)>>;

    fn entry(deadline: Ticks, seq: u64) -> Entry {
        TimedEntry {
            deadline,
            seq,
            value: Arc::new((seq as u32, Position::new())),
        }
    }

    /// A store whose lane hands out `first` as its next ticket.
    fn store_with_lane_at(first: u64) -> Store<Entry, InEntry> {
        let mut store = Store::with_capacity(0);
        store.lane = Lane::starting_at(first);
        store
    }

    fn bits(e: &Arc<(u32, Position)>) -> u32 {
        // Relaxed: the test owns the store (I6).
        e.1 .0.load(Ordering::Relaxed)
    }

    /// L5 through the store: lane entries whose tickets straddle 2^31 are found, removed
    /// and re-keyed by their 32-bit positions, the ticket recovered from its low bits.
    #[test]
    fn lane_positions_name_their_entries_across_the_ticket_wrap() {
        let first = (1 << LOW_BITS) - 2;
        let mut store = store_with_lane_at(first);
        let values: Vec<_> = (0..5)
            .map(|seq| {
                let e = entry(0, seq);
                let value = Arc::clone(&e.value);
                store.push_tracked(e, true);
                value
            })
            .collect();
        store.check_invariants();
        let lows: Vec<u64> = values
            .iter()
            .map(|v| match Position::place(bits(v)) {
                Place::LaneLow(low) => low,
                other => panic!("in the lane, not {other:?}"),
            })
            .collect();
        assert_eq!(lows, [(1 << LOW_BITS) - 2, (1 << LOW_BITS) - 1, 0, 1, 2]);
        assert!(values.iter().all(|v| store.contains_tracked(&v.1)));

        // Ticket 2^31 (low bits 0): its position wrapped; the removal takes it.
        let (removed, was_head) = store.remove_tracked(&values[2].1);
        assert_eq!(removed.map(|e| e.seq), Some(2));
        assert!(!was_head, "lane entries are due: no signal (I5)");
        assert_eq!(bits(&values[2]), Position::NONE, "it left");
        assert!(!store.contains_tracked(&values[2].1));
        assert_eq!(store.remove_tracked(&values[2].1).0.map(|e| e.seq), None);
        store.check_invariants();

        // Ticket 2^31 + 1, re-keyed: it moves to the heap and its position follows it.
        assert_eq!(
            store.update_tracked(&values[3].1, |e| e.deadline = 5),
            Some(true)
        );
        assert_eq!(Position::place(bits(&values[3])), Place::HeapAt(0));
        store.check_invariants();

        // The front moves past the wrap; what is left still comes out in order.
        let order: Vec<u64> = std::iter::from_fn(|| store.pop_head().map(|e| e.seq)).collect();
        assert_eq!(order, [0, 1, 4, 3]);
        assert!(values.iter().all(|v| bits(v) == Position::NONE));
        store.check_invariants();
    }

    /// The pointer-identity check stays: a position whose bits name a live lane entry it
    /// does not own finds nothing, and removes nothing.
    #[test]
    fn a_position_that_names_another_entry_finds_nothing() {
        let mut store = store_with_lane_at((1 << LOW_BITS) - 1);
        let e = entry(0, 7);
        let owner = Arc::clone(&e.value);
        store.push_tracked(e, true);
        let stranger = Position::new();
        // Relaxed: the test owns the store (I6).
        stranger.0.store(bits(&owner), Ordering::Relaxed);
        assert!(!store.contains_tracked(&stranger));
        assert!(store.remove_tracked(&stranger).0.is_none());
        assert!(store.contains_tracked(&owner.1), "still there");
        store.check_invariants();
    }

    /// L5 through the store: an entry the full lane refuses goes into the heap, and the
    /// order is the same.
    #[test]
    fn an_entry_the_full_lane_refuses_goes_to_the_heap_in_order() {
        let mut store = store_with_lane_at(3);
        store.push_tracked(entry(0, 0), true);
        // The lane now spans MAX_SLOTS tickets: one more slot would break L5.
        store.lane.skip_tickets(MAX_SLOTS - 1);
        let later = entry(0, 1);
        let value = Arc::clone(&later.value);
        assert!(!store.push_tracked(later, true), "not the head");
        assert_eq!(Position::place(bits(&value)), Place::HeapAt(0));
        store.check_invariants();
        let order: Vec<u64> = std::iter::from_fn(|| store.pop_head().map(|e| e.seq)).collect();
        assert_eq!(order, [0, 1]);
    }

    /// `first_after` against a sorted model, with removals, and its budget.
    fn check_first_after(deadlines: &[Ticks], removed: &[usize], now: Ticks) {
        let mut store = Store::<TimedEntry<()>>::with_capacity(0);
        let handles: Vec<Handle> = deadlines
            .iter()
            .enumerate()
            .map(|(seq, &deadline)| {
                let e = TimedEntry {
                    deadline,
                    seq: seq as u64,
                    value: (),
                };
                store.push(e).0
            })
            .collect();
        for &r in removed {
            if let Some(&h) = handles.get(r % handles.len().max(1)) {
                store.remove(h);
            }
        }
        let mut left: Vec<Ticks> = store.iter().map(|e| e.deadline).collect();
        left.sort_unstable();
        let due = left.iter().take_while(|&&d| d <= now).count();
        let want = left.get(due).copied();
        assert_eq!(store.first_after(now, due), Some(want));
        assert_eq!(store.first_after(now, usize::MAX), Some(want));
        if due > 0 {
            assert_eq!(store.first_after(now, due - 1), None, "over budget");
        }
    }

    #[test]
    fn first_after_finds_the_first_deadline_past_the_due_ones() {
        check_first_after(&[], &[], 5);
        check_first_after(&[1, 2, 3], &[], 5); // all due
        check_first_after(&[9, 1, 8, 2, 7, 3, 6], &[], 5);
        check_first_after(&[5, 5, 6, 6, 5], &[], 5);
    }

    proptest::proptest! {
        #[test]
        fn first_after_matches_a_sorted_model(
            deadlines in proptest::collection::vec(0u64..50, 0..120),
            removed in proptest::collection::vec(0usize..120, 0..20),
            now in 0u64..55,
        ) {
            check_first_after(&deadlines, &removed, now);
        }
    }
}
