//! `Lane`: the ready lane, a FIFO of entries that were already due when they were queued,
//! beside the heap. No locks, no clock, no threads.
//!
//! # Design
//! A zero-delay task (`execute`, `submit`, `schedule(0)`) is due the moment it is queued,
//! and a burst of them is taken in the order it was queued. Through the heap each costs a
//! push and a pop, and the pop sifts a leaf down through every level (the heap's largest
//! per-operation cost, `docs/BENCHMARKS.md`). The lane is a `VecDeque` instead: O(1) push
//! and pop. An entry goes into the lane only if it is due and not `before` the lane's
//! last entry (L2), so the lane is sorted, and a take compares the lane's front with the
//! heap's root and takes the earlier: the order is exactly the heap-only order.
//!
//! Entries are named by a *ticket*, the number of entries ever pushed before them, so a
//! removal by ticket is O(1): its position is `ticket - front`. A removed entry leaves a
//! tombstone (`None`) that the ends trim away (L1). A ticket below the front is never
//! handed out again; the tickets trimmed off the back are (L4), so a lane whose back
//! entries come and go behind a front that stays keeps its length, instead of refilling
//! a tombstone for every ticket trimmed since (which made such a loop quadratic).
//!
//! # Invariants
//! - L1: the first and the last slot of `slots` are live (tombstones never sit at an
//!   end); `live` counts the live slots.
//! - L2: live entries are in order: none is `before` an earlier one.
//! - L3: the slot at index `i` holds ticket `front + i`, and `front + slots.len() <= next`.
//! - L4: a ticket below `front` is never handed out again (`front` only grows, and
//!   `next >= front`). Trimming the back hands its tickets out again (`next` goes back
//!   to `front + slots.len()`): an entry that left has no place any more (its owner's
//!   position is cleared as it leaves, I6 in `queue/mod.rs`), and `Store::find` checks
//!   that the entry at a ticket owns the position that named it, so a reused ticket never
//!   names an entry for a stale position.
//! - L5: the lane spans fewer than 2^[`LOW_BITS`] slots (`slots.len() <= MAX_SLOTS`), so
//!   the tickets of its slots, `[front, front + slots.len())`, differ in their low
//!   [`LOW_BITS`] bits, and [`ticket_of`](Lane::ticket_of) recovers a ticket from them.
//!   That is what lets a task's 32-bit `queue::Position` name a lane entry. A lane never
//!   grows to `MAX_SLOTS + 1` slots: [`accepts`](Lane::accepts) refuses an entry whose
//!   push would (tombstones count, so a live front with many entries pushed and trimmed
//!   off the back behind it can reach this with few live entries), and the store puts a
//!   refused entry into the heap, as it does one that is `before` the lane's last: the
//!   order is the same, only the O(1) path is lost until the front moves on. (Reaching
//!   `MAX_SLOTS` takes tens of gigabytes of the executor's entries, or 2^31 tickets
//!   handed out behind one front that never moved: the bound is there to make L5 a
//!   fact, not as a limit a pool meets.)
//!
//! `check_invariants` asserts L1–L3 and L5; the tests call it after every mutation.

use std::collections::VecDeque;

use super::heap::Ordered;

/// How many low bits of a ticket name it within a lane (L5).
pub(crate) const LOW_BITS: u32 = 31;

/// The low [`LOW_BITS`] bits of a ticket.
pub(crate) const LOW_MASK: u64 = (1 << LOW_BITS) - 1;

/// The most slots (live or tombstones) a lane holds (L5): fewer than 2^[`LOW_BITS`].
pub(crate) const MAX_SLOTS: u64 = LOW_MASK;

/// The ready lane (see the module notes).
#[derive(Debug)]
pub(crate) struct Lane<E> {
    slots: VecDeque<Option<E>>,
    /// The ticket of `slots[0]` (L3).
    front: u64,
    /// The next ticket to hand out; goes back when the back is trimmed (L4).
    next: u64,
    live: usize,
}

impl<E: Ordered> Lane<E> {
    pub(crate) fn new() -> Self {
        Lane {
            slots: VecDeque::new(),
            front: 0,
            next: 0,
            live: 0,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Every live entry, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &E> {
        self.slots.iter().flatten()
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The first entry (L1: the front slot is live).
    #[inline]
    pub(crate) fn peek(&self) -> Option<&E> {
        self.slots.front().and_then(Option::as_ref)
    }

    /// Whether `entry` may join the lane without breaking L2 or L5. (The caller checks
    /// that it is due.)
    #[inline]
    pub(crate) fn accepts(&self, entry: &E) -> bool {
        self.slots
            .back()
            .and_then(Option::as_ref)
            .is_none_or(|last| !entry.before(last))
            && self.has_room()
    }

    /// L5: a push keeps the lane within `MAX_SLOTS` slots. On an empty lane it makes one
    /// slot; else `next - front + 1` (L3: the tombstones for the tickets trimmed off the
    /// back, then the new slot).
    #[inline]
    fn has_room(&self) -> bool {
        self.slots.is_empty() || self.next - self.front < MAX_SLOTS
    }

    /// The ticket whose low [`LOW_BITS`] bits are `low` and that could name a slot: the one
    /// in `[front, front + 2^LOW_BITS)`, a range that holds every slot's ticket (L5). Only
    /// [`get`](Self::get) or [`remove`](Self::remove) says whether an entry is there.
    #[inline]
    pub(crate) fn ticket_of(&self, low: u64) -> u64 {
        debug_assert!(low <= LOW_MASK, "{low:#x} has more than LOW_BITS bits");
        // 2^LOW_BITS divides 2^64, so the wrapped difference keeps its low bits.
        self.front + (low.wrapping_sub(self.front) & LOW_MASK)
    }

    /// Appends an entry the caller checked with [`accepts`](Self::accepts); returns its
    /// ticket. O(1) amortized.
    #[inline]
    pub(crate) fn push(&mut self, entry: E) -> u64 {
        debug_assert!(self.accepts(&entry), "L2, L5");
        if self.slots.is_empty() {
            self.front = self.next;
        }
        // L3: tombstones for tickets skipped without a slot. `trim` hands the tickets it
        // trims back (L4), so only a lane whose `next` was moved ahead (the tests'
        // `skip_tickets`) gets here with a gap.
        while self.front + (self.slots.len() as u64) < self.next {
            self.slots.push_back(None);
        }
        let ticket = self.next;
        self.next += 1;
        self.slots.push_back(Some(entry));
        self.live += 1;
        ticket
    }

    /// Removes the first entry. O(1) amortized.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<E> {
        let entry = self.slots.pop_front()??;
        self.front += 1;
        self.live -= 1;
        self.trim();
        Some(entry)
    }

    /// The entry `ticket` names, if it is still in the lane.
    #[inline]
    pub(crate) fn get(&self, ticket: u64) -> Option<&E> {
        let i = usize::try_from(ticket.checked_sub(self.front)?).ok()?;
        self.slots.get(i)?.as_ref()
    }

    /// Removes the entry `ticket` names. O(1) amortized.
    pub(crate) fn remove(&mut self, ticket: u64) -> Option<E> {
        let i = usize::try_from(ticket.checked_sub(self.front)?).ok()?;
        let entry = self.slots.get_mut(i)?.take()?;
        self.live -= 1;
        self.trim();
        Some(entry)
    }

    /// Removes every entry `remove` selects, in lane order. O(n).
    pub(crate) fn extract_if(&mut self, mut remove: impl FnMut(&E) -> bool) -> Vec<E> {
        let mut out = Vec::new();
        for slot in &mut self.slots {
            if slot.as_ref().is_some_and(&mut remove) {
                out.extend(slot.take());
            }
        }
        self.live -= out.len();
        self.trim();
        out
    }

    /// Removes everything, in lane order.
    pub(crate) fn clear(&mut self) -> Vec<E> {
        self.front = self.next;
        self.live = 0;
        self.slots.drain(..).flatten().collect()
    }

    /// L1: drops tombstones from both ends.
    fn trim(&mut self) {
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.front += 1;
        }
        while matches!(self.slots.back(), Some(None)) {
            self.slots.pop_back();
        }
        // L4: the back's tickets are handed out again (L3 then holds with equality, and
        // the next push adds one slot, not a tombstone per trimmed ticket).
        self.next = self.front + self.slots.len() as u64;
        if self.slots.is_empty() && self.slots.capacity() > 1024 {
            self.slots = VecDeque::new(); // give a burst's memory back
        }
    }

    /// A lane whose first ticket is `ticket`, as if that many entries had come and gone
    /// (tests: tickets near a multiple of 2^[`LOW_BITS`]).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn starting_at(ticket: u64) -> Self {
        Lane {
            front: ticket,
            next: ticket,
            ..Self::new()
        }
    }

    /// Hands out no ticket for the next `n`: the next push leaves a tombstone for each
    /// (tests: a wide span without allocating it; a trim hands them out again).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn skip_tickets(&mut self, n: u64) {
        self.next += n;
    }

    /// Every live entry with its ticket, in order (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn tickets(&self) -> impl Iterator<Item = (u64, &E)> {
        (self.front..)
            .zip(&self.slots)
            .filter_map(|(t, slot)| Some((t, slot.as_ref()?)))
    }

    /// Asserts L1–L3 and L5 (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn check_invariants(&self) {
        assert!(!matches!(self.slots.front(), Some(None)), "L1: front live");
        assert!(!matches!(self.slots.back(), Some(None)), "L1: back live");
        assert_eq!(
            self.live,
            self.slots.iter().flatten().count(),
            "L1: live count"
        );
        assert!(self.front + self.slots.len() as u64 <= self.next, "L3");
        assert!(self.slots.len() as u64 <= MAX_SLOTS, "L5");
        let live: Vec<&E> = self.slots.iter().flatten().collect();
        for pair in live.windows(2) {
            assert!(!pair[1].before(pair[0]), "L2: in order");
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct E(u64);
    impl Ordered for E {
        fn before(&self, other: &Self) -> bool {
            self.0 < other.0
        }
    }

    #[test]
    fn a_ticket_trimmed_off_the_back_is_handed_out_again_and_one_below_the_front_never() {
        let mut lane = Lane::new();
        let a = lane.push(E(1));
        let b = lane.push(E(2));
        assert_eq!(lane.remove(b), Some(E(2)));
        assert_eq!(lane.get(b), None, "the trimmed ticket names nothing");
        let c = lane.push(E(3));
        lane.check_invariants();
        assert_eq!(c, b, "L4: the back's ticket again");
        assert_eq!(lane.remove(a), Some(E(1)));
        assert_eq!(lane.pop(), Some(E(3)));
        let d = lane.push(E(4));
        assert!(d > c, "L4: below the front, never again");
        lane.check_invariants();
    }

    /// Entries that come and go at the back of a lane whose front stays keep it at its
    /// length: each push adds one slot (L4). With tickets never handed out again, every
    /// push refilled a tombstone per ticket trimmed before it: quadratic in the loop.
    #[test]
    fn a_back_that_comes_and_goes_behind_a_front_that_stays_keeps_the_lane_short() {
        let mut lane = Lane::new();
        lane.push(E(0));
        for i in 1..10_000 {
            let t = lane.push(E(i));
            assert_eq!(lane.slots.len(), 2, "one slot per push");
            assert_eq!(lane.remove(t), Some(E(i)));
        }
        lane.check_invariants();
        assert_eq!(lane.slots.len(), 1);
        assert_eq!(lane.pop(), Some(E(0)));
    }

    #[test]
    fn fifo_with_removal_by_ticket_anywhere() {
        let mut lane = Lane::new();
        assert!(lane.is_empty());
        let t: Vec<u64> = (0..5).map(|i| lane.push(E(i))).collect();
        assert!(!lane.is_empty());
        lane.check_invariants();
        assert_eq!(lane.remove(t[2]), Some(E(2)), "middle: a tombstone");
        lane.check_invariants();
        assert_eq!(
            lane.iter().collect::<Vec<_>>(),
            [&E(0), &E(1), &E(3), &E(4)],
            "every live entry, in order, past the tombstone"
        );
        assert_eq!(lane.remove(t[2]), None, "a removed ticket names nothing");
        assert_eq!(lane.remove(t[4]), Some(E(4)), "back: trimmed");
        lane.check_invariants();
        assert_eq!(lane.pop(), Some(E(0)));
        assert_eq!(lane.pop(), Some(E(1)));
        lane.check_invariants();
        assert_eq!(lane.pop(), Some(E(3)), "the tombstone was skipped");
        assert!(lane.is_empty() && lane.pop().is_none());
        let next = lane.push(E(9));
        assert_eq!(
            next, t[4],
            "L4: the ticket trimmed off the back, below no front"
        );
        assert_eq!(lane.get(t[0]), None);
        assert_eq!(lane.get(next), Some(&E(9)));
    }

    #[test]
    fn accepts_only_entries_that_keep_the_order() {
        let mut lane = Lane::new();
        assert!(lane.accepts(&E(5)));
        lane.push(E(5));
        assert!(lane.accepts(&E(5)), "ties keep queue order");
        assert!(lane.accepts(&E(6)));
        assert!(!lane.accepts(&E(4)), "L2");
    }

    /// A burst larger than the lane's give-back threshold (1,024 slots): trimming after a
    /// pop keeps every live entry, in order (a survivor of the mutation run dropped them
    /// all once the capacity passed the threshold).
    #[test]
    fn a_large_burst_keeps_its_entries_through_trims() {
        let mut lane = Lane::new();
        for i in 0..2000 {
            lane.push(E(i));
        }
        assert_eq!(lane.pop(), Some(E(0)));
        assert_eq!(lane.len(), 1999);
        lane.check_invariants();
        for i in 1..2000 {
            assert_eq!(lane.pop(), Some(E(i)));
        }
        assert!(lane.is_empty() && lane.pop().is_none());
    }

    /// L5: tickets on both sides of a multiple of 2^LOW_BITS are recovered from their low
    /// bits, and a removal by a recovered ticket takes the right entry.
    #[test]
    fn tickets_are_recovered_from_their_low_bits_across_the_wrap() {
        for start in [
            (1 << LOW_BITS) - 2,
            (2 << LOW_BITS) - 3,
            u64::from(u32::MAX) - 1,
        ] {
            let mut lane = Lane::starting_at(start);
            let t: Vec<u64> = (0..6).map(|i| lane.push(E(i))).collect();
            assert_eq!(t[0], start);
            assert!(t[0] & LOW_MASK > t[5] & LOW_MASK, "the low bits wrapped");
            for (i, &ticket) in t.iter().enumerate() {
                assert_eq!(lane.ticket_of(ticket & LOW_MASK), ticket);
                assert_eq!(
                    lane.get(lane.ticket_of(ticket & LOW_MASK)),
                    Some(&E(i as u64))
                );
            }
            let wrapped = t[4];
            assert_eq!(lane.remove(lane.ticket_of(wrapped & LOW_MASK)), Some(E(4)));
            lane.check_invariants();
            assert_eq!(
                lane.get(lane.ticket_of(wrapped & LOW_MASK)),
                None,
                "removed"
            );
            // The front moves past the wrap: the rest are still found.
            for i in 0..4 {
                assert_eq!(lane.pop(), Some(E(i)));
            }
            lane.check_invariants();
            assert_eq!(lane.ticket_of(t[5] & LOW_MASK), t[5]);
            assert_eq!(lane.remove(lane.ticket_of(t[5] & LOW_MASK)), Some(E(5)));
            assert!(lane.is_empty());
            let stale = lane.ticket_of(t[0] & LOW_MASK);
            assert_eq!(lane.get(stale), None, "a ticket that left names nothing");
        }
    }

    /// L5: no push takes the lane past `MAX_SLOTS` slots, tombstones included; once the
    /// front moves on (here: the lane empties), it accepts again.
    #[test]
    fn refuses_an_entry_that_would_span_too_many_slots() {
        let mut lane = Lane::starting_at(7);
        lane.push(E(1));
        // As if MAX_SLOTS - 2 entries had been pushed behind it and removed from the back.
        lane.skip_tickets(MAX_SLOTS - 2);
        assert!(lane.accepts(&E(2)), "the push would make MAX_SLOTS slots");
        lane.skip_tickets(1);
        assert!(!lane.accepts(&E(2)), "L5: one slot too many");
        lane.check_invariants();
        assert_eq!(lane.pop(), Some(E(1)));
        assert!(lane.accepts(&E(2)), "empty: the next push starts afresh");
        let t = lane.push(E(2));
        assert_eq!(
            t, 8,
            "L4: the skipped tickets were never used; the front's never again"
        );
        assert_eq!(lane.ticket_of(t & LOW_MASK), t);
        lane.check_invariants();
    }

    #[test]
    fn extract_and_clear() {
        let mut lane = Lane::new();
        for i in 0..6 {
            lane.push(E(i));
        }
        let odd = lane.extract_if(|e| e.0 % 2 == 1);
        assert_eq!(odd, vec![E(1), E(3), E(5)]);
        lane.check_invariants();
        assert_eq!(lane.len(), 3);
        assert_eq!(lane.clear(), vec![E(0), E(2), E(4)]);
        lane.check_invariants();
        assert!(lane.is_empty());
    }
}
