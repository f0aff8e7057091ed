//! `Store`: the heap and the ready lane side by side, with entries named by [`Handle`]s
//! and tracked through [`Position`]s. No locks, no clock, no waiting: the blocking queue
//! (`queue/mod.rs`) keeps one store under its lock, the sharded queue (`sharded.rs`) one
//! per shard. Each mutation says whether the head may have changed, so the owner decides
//! whom to wake (I5 in `queue/mod.rs`).
//!
//! # Invariants
//! The heap's H1–H3 (`heap.rs`), the lane's L1–L4 (`lane.rs`), and I7: the lane holds
//! only entries that were due when queued, in order, and the head is the earlier of the
//! lane's front and the heap's root, so entries leave in exactly the order a heap alone
//! would give.
//!
//! # Ordering
//! A store is always behind its owner's mutex. The cells of [`Position`] and
//! [`LockedCell`] are `Relaxed` atomics (they live in shared task headers); the owner's
//! mutex orders every access (I6 in `queue/mod.rs`).

use crate::sync::Ordering;

use super::heap::{Handle as HeapHandle, IndexedHeap};
use super::lane::Lane;
use super::{Handle, LockedCell, Place, Position, Timed};
use crate::clock::Ticks;

/// The heap and the ready lane (module notes).
pub(crate) struct Store<E> {
    /// Pending entries, first out at the root (H1–H3).
    heap: IndexedHeap<E>,
    /// Entries that were due when queued, in order (`lane.rs`, I7).
    lane: Lane<E>,
}

impl<E: Timed> Store<E> {
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
            self.lane.pop()
        }
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

    /// Inserts an entry into the heap; `true` if it became the head. O(log n).
    #[inline]
    pub(crate) fn push(&mut self, entry: E) -> (Handle, bool) {
        let (h, head) = self.push_heap(entry);
        (Handle::heap(h), head)
    }

    #[inline]
    fn push_heap(&mut self, entry: E) -> (HeapHandle, bool) {
        let h = self.heap.push(entry);
        let head = self.heap.position(h) == Some(0) && {
            let root = self.heap.peek().expect("just pushed");
            self.lane.peek().is_none_or(|l| !l.before(root))
        };
        (h, head)
    }

    /// Inserts an entry and records its handle in the [`Position`] that `position` finds
    /// in it (I6); `true` if it became the head. With `due` (the caller read the clock and
    /// the entry's deadline is not after it), the entry goes into the ready lane when that
    /// keeps the lane in order: O(1); else into the heap: O(log n).
    #[inline]
    pub(crate) fn push_tracked(
        &mut self,
        entry: E,
        due: bool,
        position: impl FnOnce(&E) -> &Position,
    ) -> (Handle, bool) {
        let (handle, head, stored) = if due && self.lane.accepts(&entry) {
            let head = self.lane.is_empty() && self.heap.peek().is_none_or(|h| !h.before(&entry));
            let ticket = self.lane.push(entry);
            (Handle::lane(ticket), head, self.lane.get(ticket))
        } else {
            let (h, head) = self.push_heap(entry);
            (Handle::heap(h), head, self.heap.get(h))
        };
        if let Some(entry) = stored {
            // Relaxed: under the owner's lock (I6).
            position(entry).0.store(handle.0, Ordering::Relaxed);
        }
        (handle, head)
    }

    /// The handle a [`Position`] holds (I6).
    #[inline]
    pub(crate) fn handle_at(&self, position: &Position) -> Handle {
        // Relaxed: under the owner's lock (I6).
        Handle(position.0.load(Ordering::Relaxed))
    }

    /// Replaces the value of a [`LockedCell`] and returns the old one (I6).
    #[inline]
    pub(crate) fn replace(&mut self, cell: &LockedCell, value: u64) -> u64 {
        // Relaxed: under the owner's lock (I6).
        cell.0.swap(value, Ordering::Relaxed)
    }

    /// Removes the entry `h` names. Returns it and whether a head that was not yet due
    /// left (the heap's root; lane entries are due, I5). O(log n) in the heap, O(1) in
    /// the lane.
    #[inline]
    pub(crate) fn remove(&mut self, h: Handle) -> (Option<E>, bool) {
        match h.place() {
            Place::Heap(h) => {
                let Some(at) = self.heap.position(h) else {
                    return (None, false);
                };
                (self.heap.remove(h), at == 0)
            }
            Place::Lane(ticket) => (self.lane.remove(ticket), false),
            Place::Nowhere => (None, false),
        }
    }

    /// Changes the key of the entry at `position` and keeps `position` naming it
    /// (`position_of` finds it in the entry). An entry in the lane moves to the heap.
    /// Returns `None` if the entry is not stored, else whether the head may have changed.
    /// O(log n).
    pub(crate) fn update_tracked(
        &mut self,
        position: &Position,
        f: impl FnOnce(&mut E),
        position_of: impl FnOnce(&E) -> &Position,
    ) -> Option<bool> {
        match self.handle_at(position).place() {
            Place::Heap(h) => {
                let old = self.heap.position(h)?;
                self.heap.update(h, f);
                Some(old == 0 || self.heap.position(h) == Some(0))
            }
            Place::Lane(ticket) => {
                let mut entry = self.lane.remove(ticket)?;
                f(&mut entry);
                self.push_tracked(entry, false, position_of);
                Some(true)
            }
            Place::Nowhere => None,
        }
    }

    /// `true` if the entry `h` names is stored.
    #[inline]
    pub(crate) fn contains(&self, h: Handle) -> bool {
        match h.place() {
            Place::Heap(h) => self.heap.position(h).is_some(),
            Place::Lane(ticket) => self.lane.get(ticket).is_some(),
            Place::Nowhere => false,
        }
    }

    /// Removes every entry `remove` selects.
    pub(crate) fn extract_if(&mut self, mut remove: impl FnMut(&E) -> bool) -> Vec<E> {
        let mut out = self.lane.extract_if(&mut remove);
        out.extend(self.heap.extract_if(remove));
        out
    }

    /// Removes everything (entries in no particular order).
    pub(crate) fn clear(&mut self) -> Vec<E> {
        let mut out = self.lane.clear();
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

    /// Asserts H1–H3 and L1–L2 (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn check_invariants(&self) {
        self.lane.check_invariants();
        self.heap.check_invariants();
    }
}
