//! The blocking delayed queue behind the executor (Java: `DelayedWorkQueue`),
//! [`DelayQueue`](crate::DelayQueue) and [`PriorityBlockingQueue`](crate::PriorityBlockingQueue).
//!
//! # Design
//! One `Mutex<State>` guards the heap, the leader flag and whatever extra state `X` the
//! owner keeps beside it (the executor keeps its run state and worker counts there, so that
//! "is there a worker for this task?" and "is the queue empty?" are decided atomically).
//! Waiting is leader/follower, as in Java's `DelayedWorkQueue` and `DelayQueue`: at most
//! one thread, the leader, sleeps until the head's deadline; the others sleep without a
//! timeout. Unlike Java, the two kinds of sleeper wait on two condition variables:
//!
//! - `leader_cv`: only the leader waits here. An offer that becomes the new head, a removal
//!   of the head and a [`ManualClock`](crate::ManualClock) advance signal it, so the wake-up
//!   always reaches the one thread that must re-arm its timer. (Java signals one waiter of a
//!   shared condition; a follower may receive it, which is harmless only because the leader
//!   also wakes on its timeout. With virtual time the leader has no timeout.)
//! - `followers`: everyone else. A new head with no leader wakes one follower, which
//!   becomes the leader. A thread that leaves `take` with entries left and no leader wakes
//!   one follower to take its place.
//!
//! No offer ever wakes more than one thread; only shutdown and resizing wake all.
//!
//! On the real clock the waiting policy (when to sleep, when to spin, the spin budget)
//! is `park.rs`'s; this file does what it says, with the lock released while spinning.
//! The heap (`heap.rs`) is private to this module: owners see entries, handles and
//! [`Position`]s, never heap indices.
//!
//! Entries whose deadline is always 0 (the priority queue) are always due: nobody ever
//! becomes leader and `take` degenerates to "wait while empty".
//!
//! We rejected a lock-free queue: removal by handle needs a stable heap while it sifts, and
//! every critical section here is O(log n) with no user code inside (I4).
//!
//! # Invariants
//! - I1: heap invariants H1–H3 (`heap.rs`) hold whenever the lock is free.
//! - I2: `leader` is true only while one thread is between deciding to lead and leaving its
//!   timed wait on `leader_cv` (or its spin just before the deadline); that thread clears
//!   it itself before anything else.
//! - I3: a thread that leaves `take` with the heap non-empty and no leader signals one
//!   follower, so a due head always has a taker.
//! - I4: no user code (task bodies, element destructors, tracing subscribers) runs under
//!   the lock: callers get removed entries back and drop them after unlocking.
//! - I5: whoever makes a new head (offer, re-key) or removes a head that is not yet due
//!   (remove by handle, `extract_if`, `clear`) signals the leader if there is one, else one
//!   follower. Taking a *due* head (`poll`, `drain_due`, `pop`, a take) needs no signal:
//!   the leader waiting for it is already awake or about to be (its timed wait ends at the
//!   deadline, and on virtual time the advance that made it due signalled it), and it
//!   re-checks the heap under the lock. `drain_due` at `shutdown_now` is followed by
//!   `wake_all`.
//! - I6: a [`Position`] (an entry's handle, stored with the entry's owner so that
//!   removal needs no search) and a [`LockedCell`] are read and written only through a
//!   [`Locked`] guard of the queue they belong to (T4 in `task/mod.rs`, made a type).
//! - I7: the ready lane (`lane.rs`) holds only entries that were due when queued, in
//!   order; the head is the earlier of the lane's front and the heap's root, so entries
//!   leave in exactly the order a heap alone would give.
//!
//! # Ordering
//! The heap, the leader flag, the sequence counter and the waiting policy's state are
//! under the mutex. Outside it: `head_changes` (`Relaxed`, a hint for spinners, see
//! `park.rs`) and the cells of [`Position`] and [`LockedCell`] (`Relaxed` atomics so that
//! they can live in shared task headers; the mutex orders every access, I6).

mod heap;
mod lane;
mod park;

use crate::sync::Ordering;
use std::fmt;
use std::time::Instant;

use crate::clock::{AdvanceListener, Clock, Ticks};
use crate::sync::{unlocked, AtomicU64, Condvar, Mutex, MutexGuard, StatCounter};
use heap::{Handle as HeapHandle, IndexedHeap};
use lane::Lane;
use park::{Lead, Park};

pub use park::SpinPolicy;

pub(crate) use heap::Ordered;

/// Names a queued entry: a heap handle, or a ticket in the ready lane (`lane.rs`).
/// `Copy`, never dangling: an entry that left the queue is simply not found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Handle(u64);

/// Set in a lane ticket's handle. A heap handle's bits (`slot << 32 | gen`) never have it:
/// that would take 2^31 slots, a slot table of 16 GiB. Were it to happen, such an entry
/// would only be unreachable by handle (a cancel would leave it for the taker to skip).
const LANE_BIT: u64 = 1 << 63;

/// Where a handle points.
enum Place {
    Heap(HeapHandle),
    Lane(u64),
    Nowhere,
}

impl Handle {
    /// A handle that matches nothing.
    pub(crate) const NONE: Handle = Handle(u64::MAX);

    fn heap(h: HeapHandle) -> Handle {
        Handle(h.to_bits())
    }

    fn lane(ticket: u64) -> Handle {
        Handle(ticket | LANE_BIT)
    }

    fn place(self) -> Place {
        if self == Handle::NONE {
            Place::Nowhere
        } else if self.0 & LANE_BIT != 0 {
            Place::Lane(self.0 & !LANE_BIT)
        } else {
            Place::Heap(HeapHandle::from_bits(self.0))
        }
    }
}

/// An entry's place in its queue, kept by the entry's owner (a task header) so that a
/// removal finds the entry without a search. Only the queue reaches the handle inside,
/// through its lock guard (I6): [`Locked::push_tracked`] writes it, the `*_tracked`
/// methods read it. A handle left behind after the entry left the queue is stale and
/// matches nothing (H3 in `heap.rs`).
#[derive(Debug)]
pub(crate) struct Position(AtomicU64);

impl Position {
    /// A position that names no entry.
    pub(crate) fn new() -> Self {
        Position(AtomicU64::new(Handle::NONE.0))
    }
}

impl Default for Position {
    fn default() -> Self {
        Self::new()
    }
}

/// A `u64` that lives outside the queue (in a task header) but is guarded by the queue's
/// lock: read and written only through a [`Locked`] guard (I6).
#[derive(Debug)]
pub(crate) struct LockedCell(AtomicU64);

impl LockedCell {
    pub(crate) fn new(value: u64) -> Self {
        LockedCell(AtomicU64::new(value))
    }
}

/// An entry that becomes available at a deadline.
pub(crate) trait Timed: Ordered {
    fn deadline(&self) -> Ticks;
}

/// A heap entry ordered by `(deadline, seq)`: the deadline and the FIFO tie-break live
/// inline in the heap array, the payload beside them.
#[derive(Debug)]
pub(crate) struct TimedEntry<V> {
    pub(crate) deadline: Ticks,
    pub(crate) seq: u64,
    pub(crate) value: V,
}

impl<V> Ordered for TimedEntry<V> {
    #[inline]
    fn before(&self, other: &Self) -> bool {
        (self.deadline, self.seq) < (other.deadline, other.seq)
    }
}

impl<V> Timed for TimedEntry<V> {
    #[inline]
    fn deadline(&self) -> Ticks {
        self.deadline
    }
}

/// What the lock guards.
pub(crate) struct State<E, X> {
    /// Pending entries, first out at the root (I1).
    heap: IndexedHeap<E>,
    /// Entries that were due when queued, in order (`lane.rs`); a take takes the earlier
    /// of the lane's front and the heap's root (I7).
    lane: Lane<E>,
    /// A thread is the leader (I2).
    leader: bool,
    /// The real-clock waiting policy's state (`park.rs`).
    park: Park,
    /// Next FIFO sequence number.
    seq: u64,
    /// The owner's state, guarded by the same lock.
    pub(crate) ext: X,
}

impl<E: Timed, X> State<E, X> {
    /// A fresh sequence number: later calls get larger numbers.
    #[inline]
    pub(crate) fn next_seq(&mut self) -> u64 {
        let s = self.seq;
        self.seq += 1;
        s
    }

    /// The head's deadline, if any.
    #[inline]
    pub(crate) fn head_deadline(&self) -> Option<Ticks> {
        self.peek().map(Timed::deadline)
    }

    /// The head, if any: the earlier of the lane's front and the heap's root (I7).
    #[inline]
    pub(crate) fn peek(&self) -> Option<&E> {
        match (self.lane.peek(), self.heap.peek()) {
            (Some(l), Some(h)) => Some(if h.before(l) { h } else { l }),
            (l, h) => l.or(h),
        }
    }

    /// Removes the head (I7).
    #[inline]
    fn pop_head(&mut self) -> Option<E> {
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

    /// Entries queued.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.heap.len() + self.lane.len()
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.lane.is_empty()
    }
}

/// Outcome of [`Locked::take`].
#[derive(Debug)]
pub(crate) enum Take<E> {
    /// A due entry, and the time it was found due.
    Item(E, Ticks),
    /// The real-time timeout passed.
    TimedOut,
    /// The caller's stop condition held.
    Stopped,
}

/// The blocking queue: a heap under one lock with leader/follower waiting.
pub(crate) struct BlockingQueue<E, X = ()> {
    state: Mutex<State<E, X>>,
    /// The leader's timed wait (I2, I5).
    leader_cv: Condvar,
    /// Everyone else's untimed wait (I3, I5).
    followers: Condvar,
    /// Bumped with every head change (I5), so a spinning taker notices without the lock.
    /// A hint only: a spinner re-checks everything under the lock. `Relaxed` (and `std`'s
    /// atomic in every build) because nothing is published through it.
    head_changes: StatCounter,
    clock: Clock,
}

impl<E: Timed, X> BlockingQueue<E, X> {
    pub(crate) fn new(clock: Clock, capacity: usize, ext: X) -> Self {
        Self::with_spin(clock, capacity, ext, SpinPolicy::Adaptive)
    }

    /// As [`new`](Self::new), with the real-clock waiting policy.
    pub(crate) fn with_spin(clock: Clock, capacity: usize, ext: X, spin: SpinPolicy) -> Self {
        BlockingQueue {
            state: Mutex::new(State {
                heap: IndexedHeap::with_capacity(capacity),
                lane: Lane::new(),
                leader: false,
                park: Park::new(spin),
                seq: 0,
                ext,
            }),
            leader_cv: Condvar::new(),
            followers: Condvar::new(),
            head_changes: StatCounter::new(0),
            clock,
        }
    }

    #[inline]
    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Takes the lock.
    #[inline]
    pub(crate) fn lock(&self) -> Locked<'_, E, X> {
        Locked {
            queue: self,
            state: self.state.lock(),
        }
    }

    /// Takes a due entry, blocking as long as it takes (the public queues' `take`).
    pub(crate) fn take_blocking(&self) -> E {
        loop {
            if let Take::Item(entry, _) = self.lock().take(None, |_| false) {
                return entry;
            }
        }
    }

    /// Takes a due entry, waiting at most `timeout` of real time (`poll_timeout`).
    pub(crate) fn take_timeout(&self, timeout: std::time::Duration) -> Option<E> {
        match self
            .lock()
            .take(crate::clock::timeout_at(timeout), |_| false)
        {
            Take::Item(entry, _) => Some(entry),
            Take::TimedOut | Take::Stopped => None,
        }
    }

    /// I5: a new head, or the head left: the leader must re-arm; with no leader, one
    /// follower takes the lead.
    #[inline]
    fn signal_head_changed(&self, state: &State<E, X>) {
        self.head_changes.fetch_add(1, Ordering::Relaxed);
        if state.leader {
            self.leader_cv.notify_one();
        } else if !state.is_empty() {
            self.followers.notify_one();
        }
    }
}

impl<E: Timed + Send, X: Send> AdvanceListener for BlockingQueue<E, X> {
    /// C3 (`clock.rs`): the time moved; the leader re-reads it under the lock.
    fn on_advance(&self) {
        let state = self.state.lock();
        self.signal_head_changed(&state);
    }
}

impl<E, X> fmt::Debug for BlockingQueue<E, X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockingQueue").finish_non_exhaustive()
    }
}

/// The queue with its lock held. Only this guard hands out `&mut State`, so every
/// function that takes it runs under the lock by construction.
pub(crate) struct Locked<'a, E, X> {
    queue: &'a BlockingQueue<E, X>,
    state: MutexGuard<'a, State<E, X>>,
}

impl<E: Timed, X> std::ops::Deref for Locked<'_, E, X> {
    type Target = State<E, X>;
    #[inline]
    fn deref(&self) -> &State<E, X> {
        &self.state
    }
}

impl<E: Timed, X> std::ops::DerefMut for Locked<'_, E, X> {
    #[inline]
    fn deref_mut(&mut self) -> &mut State<E, X> {
        &mut self.state
    }
}

impl<E: Timed, X> Locked<'_, E, X> {
    /// Inserts an entry into the heap; signals a waiter if it is the new head (I5).
    /// O(log n).
    #[inline]
    pub(crate) fn push(&mut self, entry: E) -> Handle {
        Handle::heap(self.push_heap(entry))
    }

    #[inline]
    fn push_heap(&mut self, entry: E) -> HeapHandle {
        let h = self.state.heap.push(entry);
        if self.state.heap.position(h) == Some(0) {
            let root = self.state.heap.peek().expect("just pushed");
            if self.state.lane.peek().is_none_or(|l| !l.before(root)) {
                self.queue.signal_head_changed(&self.state);
            }
        }
        h
    }

    /// Inserts an entry and records its handle in the [`Position`] that `position` finds
    /// in it (I6); signals a waiter if it is the new head (I5). With `due` (the caller
    /// read the clock and the entry's deadline is not after it), the entry goes into the
    /// ready lane when that keeps the lane in order: O(1); else into the heap: O(log n).
    #[inline]
    pub(crate) fn push_tracked(
        &mut self,
        entry: E,
        due: bool,
        position: impl FnOnce(&E) -> &Position,
    ) -> Handle {
        let (handle, stored) = if due && self.state.lane.accepts(&entry) {
            let first = self.state.lane.is_empty()
                && self.state.heap.peek().is_none_or(|h| !h.before(&entry));
            let ticket = self.state.lane.push(entry);
            if first {
                self.queue.signal_head_changed(&self.state); // I5: a new (due) head
            }
            (Handle::lane(ticket), self.state.lane.get(ticket))
        } else {
            let h = self.push_heap(entry);
            (Handle::heap(h), self.state.heap.get(h))
        };
        if let Some(entry) = stored {
            // Relaxed: under the lock (I6).
            position(entry).0.store(handle.0, Ordering::Relaxed);
        }
        handle
    }

    /// The handle a [`Position`] holds (I6).
    #[inline]
    pub(crate) fn handle_at(&self, position: &Position) -> Handle {
        // Relaxed: under the lock (I6).
        Handle(position.0.load(Ordering::Relaxed))
    }

    /// Removes the entry at `position`, if it is still queued (I5 if it was the head).
    #[inline]
    pub(crate) fn remove_tracked(&mut self, position: &Position) -> Option<E> {
        let h = self.handle_at(position);
        self.remove(h)
    }

    /// Replaces the value of a [`LockedCell`] and returns the old one (I6).
    #[inline]
    pub(crate) fn replace(&mut self, cell: &LockedCell, value: u64) -> u64 {
        // Relaxed: under the lock (I6).
        cell.0.swap(value, Ordering::Relaxed)
    }

    /// Removes the entry `h` names (I5 if it was the head). O(log n) in the heap, O(1) in
    /// the lane (whose entries are due: no signal, I5).
    #[inline]
    pub(crate) fn remove(&mut self, h: Handle) -> Option<E> {
        match h.place() {
            Place::Heap(h) => {
                let was_root = self.state.heap.position(h)? == 0;
                let entry = self.state.heap.remove(h);
                if was_root {
                    self.queue.signal_head_changed(&self.state);
                }
                entry
            }
            Place::Lane(ticket) => self.state.lane.remove(ticket),
            Place::Nowhere => None,
        }
    }

    /// Changes the key of the entry at `position` (I5 if the head changed) and keeps
    /// `position` naming it (`position_of` finds it in the entry). An entry in the lane
    /// moves to the heap. O(log n).
    pub(crate) fn update_tracked(
        &mut self,
        position: &Position,
        f: impl FnOnce(&mut E),
        position_of: impl FnOnce(&E) -> &Position,
    ) -> bool {
        match self.handle_at(position).place() {
            Place::Heap(h) => {
                let Some(old) = self.state.heap.position(h) else {
                    return false;
                };
                self.state.heap.update(h, f);
                if old == 0 || self.state.heap.position(h) == Some(0) {
                    self.queue.signal_head_changed(&self.state);
                }
                true
            }
            Place::Lane(ticket) => {
                let Some(mut entry) = self.state.lane.remove(ticket) else {
                    return false;
                };
                f(&mut entry);
                self.push_tracked(entry, false, position_of);
                true
            }
            Place::Nowhere => false,
        }
    }

    /// `true` if the entry `h` names is queued.
    #[inline]
    pub(crate) fn contains(&self, h: Handle) -> bool {
        match h.place() {
            Place::Heap(h) => self.state.heap.position(h).is_some(),
            Place::Lane(ticket) => self.state.lane.get(ticket).is_some(),
            Place::Nowhere => false,
        }
    }

    /// Removes every entry `remove` selects; signals the leader (the head may have gone).
    pub(crate) fn extract_if(&mut self, mut remove: impl FnMut(&E) -> bool) -> Vec<E> {
        let mut out = self.state.lane.extract_if(&mut remove);
        out.extend(self.state.heap.extract_if(remove));
        if !out.is_empty() {
            self.queue.signal_head_changed(&self.state);
        }
        out
    }

    /// Removes everything (entries in no particular order).
    pub(crate) fn clear(&mut self) -> Vec<E> {
        let mut out = self.state.lane.clear();
        out.extend(self.state.heap.clear());
        self.queue.signal_head_changed(&self.state);
        out
    }

    /// The head if it is due now (never blocks).
    #[inline]
    pub(crate) fn poll(&mut self) -> Option<E> {
        let deadline = self.state.head_deadline()?;
        if deadline <= self.queue.clock.now() {
            self.state.pop_head()
        } else {
            None
        }
    }

    /// Removes the head whether due or not, without a signal: for queues whose entries are
    /// always due (the priority queue, where nobody leads) and for draining.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<E> {
        self.state.pop_head()
    }

    /// Every entry due at `now`, in order.
    pub(crate) fn drain_due(&mut self, now: Ticks) -> Vec<E> {
        let mut out = Vec::new();
        while self.state.head_deadline().is_some_and(|d| d <= now) {
            out.extend(self.state.pop_head());
        }
        out
    }

    /// Wakes every waiter; each re-checks its condition.
    pub(crate) fn wake_all(&self) {
        self.queue.leader_cv.notify_all();
        self.queue.followers.notify_all();
    }

    /// Waits on the owner's own condition variable with this lock; `true` if it timed out.
    pub(crate) fn wait_on(&mut self, cv: &Condvar, until: Option<Instant>) -> bool {
        wait(cv, &mut self.state, until)
    }

    /// Waits for a due entry with the leader/follower protocol (Java: `take` / timed
    /// `poll`). Returns early when `stop` holds (checked on entry and after every
    /// wake-up) or when the real-time `timeout` passes. The lock is held again on return.
    pub(crate) fn take(
        &mut self,
        timeout: Option<Instant>,
        mut stop: impl FnMut(&State<E, X>) -> bool,
    ) -> Take<E> {
        let queue = self.queue;
        let real = matches!(queue.clock, Clock::Real { .. });
        let mut expired = false;
        let mut spun = false;
        let result = loop {
            if stop(&self.state) {
                break Take::Stopped;
            }
            let head = self.state.head_deadline();
            let now = head.map_or(0, |_| queue.clock.now());
            if let Some(deadline) = head.filter(|&d| d <= now) {
                debug_assert!(deadline <= now);
                let entry = self.state.pop_head().expect("the head was just seen");
                break Take::Item(entry, now);
            }
            if expired {
                break Take::TimedOut; // only after one last look at the head (Java's poll)
            }
            let timed_out = match head {
                Some(deadline) if !self.state.leader => {
                    // I2: lead. Sleep until the head is due (virtual time: until an
                    // advance or the timeout); on the real clock `park.rs` may say spin.
                    self.state.leader = true;
                    let fired = if real {
                        let due = queue.clock.instant_of(deadline);
                        match self.state.park.plan_lead(due, timeout) {
                            Lead::Sleep(until) => wait(&queue.leader_cv, &mut self.state, until),
                            Lead::Spin(until) => {
                                let spun = unlocked(&mut self.state, || {
                                    park::spin(&queue.head_changes, until)
                                });
                                self.state.park.charge_lead(spun);
                                timeout.is_some_and(|t| Instant::now() >= t)
                            }
                        }
                    } else {
                        wait(&queue.leader_cv, &mut self.state, timeout)
                    };
                    self.state.leader = false; // I2: cleared before anything else
                    fired
                }
                None if real && !spun => match self.state.park.begin_idle_spin(timeout) {
                    // One taker of an empty queue spins briefly for a new head before
                    // parking (`park.rs`). With a head and a leader, the leader's spin
                    // covers the deadline: park at once.
                    Some(until) => {
                        spun = true;
                        let result =
                            unlocked(&mut self.state, || park::spin(&queue.head_changes, until));
                        self.state.park.end_idle_spin(result);
                        timeout.is_some_and(|t| Instant::now() >= t)
                    }
                    None => wait(&queue.followers, &mut self.state, timeout),
                },
                _ => wait(&queue.followers, &mut self.state, timeout),
            };
            expired = timed_out && timeout.is_some_and(|t| Instant::now() >= t);
        };
        // I3: hand leadership on before returning.
        if !self.state.is_empty() && !self.state.leader {
            queue.followers.notify_one();
        }
        result
    }
}

/// One wait on `cv`, timed if `until` is given; `true` if it timed out.
fn wait<T>(cv: &Condvar, guard: &mut MutexGuard<'_, T>, until: Option<Instant>) -> bool {
    match until {
        Some(until) => cv.wait_until(guard, until),
        None => {
            cv.wait(guard);
            false
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::{add, ManualClock};
    use crate::sync::Arc;
    use std::time::Duration;

    type Q = BlockingQueue<TimedEntry<u32>>;

    fn manual() -> (ManualClock, Arc<Q>) {
        let c = ManualClock::new();
        let q = Arc::new(Q::new(Clock::Manual(c.clone()), 0, ()));
        let weak = Arc::downgrade(&q);
        Clock::Manual(c.clone()).register(weak);
        (c, q)
    }

    fn offer(q: &Q, deadline: Ticks, v: u32) -> Handle {
        let mut g = q.lock();
        let seq = g.next_seq();
        g.push(TimedEntry {
            deadline,
            seq,
            value: v,
        })
    }

    fn take(q: &Q) -> u32 {
        match q.lock().take(None, |_| false) {
            Take::Item(e, _) => e.value,
            other => panic!("unexpected {other:?}"),
        }
    }

    const MS: Ticks = 1_000_000;

    #[test]
    fn due_entries_come_out_in_deadline_then_fifo_order() {
        let (c, q) = manual();
        for (d, v) in [(30, 0), (10, 1), (20, 2), (10, 3)] {
            offer(&q, d * MS, v);
        }
        c.advance(Duration::from_millis(30));
        assert_eq!(
            (0..4).map(|_| take(&q)).collect::<Vec<_>>(),
            vec![1, 3, 2, 0]
        );
    }

    #[test]
    fn poll_returns_only_due_entries() {
        let (c, q) = manual();
        offer(&q, 5 * MS, 7);
        assert!(q.lock().poll().is_none());
        c.advance(Duration::from_millis(5));
        assert_eq!(q.lock().poll().map(|e| e.value), Some(7));
    }

    #[test]
    fn timed_take_times_out_in_real_time() {
        let (_c, q) = manual();
        offer(&q, add(0, Duration::MAX), 1);
        let until = Instant::now() + Duration::from_millis(20);
        assert!(matches!(
            q.lock().take(Some(until), |_| false),
            Take::TimedOut
        ));
        assert!(Instant::now() >= until);
    }

    #[test]
    fn advance_wakes_the_leader() {
        let (c, q) = manual();
        offer(&q, 3_600_000 * MS, 42);
        let q2 = q.clone();
        let taker = std::thread::spawn(move || take(&q2));
        wait_for(|| q.lock().leader);
        c.advance(Duration::from_secs(3600));
        assert_eq!(taker.join().unwrap(), 42);
    }

    #[test]
    fn an_earlier_offer_wakes_the_leader_and_every_taker_gets_one() {
        let (c, q) = manual();
        offer(&q, 100 * MS, 1);
        let takers: Vec<_> = (0..3)
            .map(|_| {
                let q = q.clone();
                std::thread::spawn(move || take(&q))
            })
            .collect();
        wait_for(|| q.lock().leader);
        offer(&q, 10 * MS, 2); // new head: the leader re-arms for it
        offer(&q, 50 * MS, 3);
        c.advance(Duration::from_millis(100));
        let mut got: Vec<u32> = takers.into_iter().map(|t| t.join().unwrap()).collect();
        got.sort();
        assert_eq!(got, vec![1, 2, 3]);
    }

    #[test]
    fn real_clock_leader_wakes_at_the_deadline() {
        let q = Q::new(Clock::real(), 0, ());
        let at = q.clock().deadline_after(Duration::from_millis(15));
        offer(&q, at, 9);
        assert_eq!(take(&q), 9);
        assert!(q.clock().now() >= at, "never early");
    }

    #[test]
    fn remove_of_the_head_and_stop() {
        let (_c, q) = manual();
        let h = offer(&q, 5 * MS, 1);
        assert_eq!(q.lock().remove(h).map(|e| e.value), Some(1));
        assert!(q.lock().remove(h).is_none());
        let mut g = q.lock();
        assert!(matches!(g.take(None, |s| s.is_empty()), Take::Stopped));
    }

    /// An entry that tracks its own position, like a task.
    type Tracked = TimedEntry<Arc<(u32, Position)>>;

    #[derive(Clone, Debug)]
    enum Op {
        /// Offer `delay` ms ahead; `hint`: offer a zero delay as due (the lane).
        Push {
            delay: u64,
            hint: bool,
        },
        Advance(u64),
        Poll,
        Remove(usize),
        Update(usize, u64),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (0..3u64, any::<bool>()).prop_map(|(delay, hint)| Op::Push { delay, hint }),
            1 => (0..3u64).prop_map(Op::Advance),
            3 => Just(Op::Poll),
            2 => any::<usize>().prop_map(Op::Remove),
            1 => (any::<usize>(), 0..3u64).prop_map(|(i, d)| Op::Update(i, d)),
        ]
    }

    proptest::proptest! {
        /// I7: with the ready lane beside the heap, entries leave in exactly the
        /// (deadline, seq) order of a sorted model, removal and re-keying by position work
        /// wherever the entry sits, and stale positions name nothing.
        #[test]
        fn heap_and_lane_match_a_sorted_model(ops in proptest::collection::vec(op(), 0..120)) {
            let (clock, q) = {
                let c = ManualClock::new();
                (c.clone(), BlockingQueue::<Tracked>::new(Clock::Manual(c), 0, ()))
            };
            let mut model: Vec<(Ticks, u64, u32)> = Vec::new(); // (deadline, seq, id)
            let mut issued: Vec<Arc<(u32, Position)>> = Vec::new();
            let mut now: Ticks = 0;
            for op in ops {
                let mut g = q.lock();
                match op {
                    Op::Push { delay, hint } => {
                        let id = issued.len() as u32;
                        let value = Arc::new((id, Position::new()));
                        issued.push(value.clone());
                        let deadline = now + delay * MS;
                        let seq = g.next_seq();
                        let due = hint && delay == 0;
                        g.push_tracked(TimedEntry { deadline, seq, value }, due, |e| &e.value.1);
                        model.push((deadline, seq, id));
                    }
                    Op::Advance(ms) => {
                        drop(g);
                        clock.advance(Duration::from_millis(ms));
                        now += ms * MS;
                        continue;
                    }
                    Op::Poll => {
                        model.sort();
                        let want = model.first().filter(|m| m.0 <= now).copied();
                        let got = g.poll().map(|e| (e.deadline, e.seq, e.value.0));
                        proptest::prop_assert_eq!(got, want);
                        if want.is_some() {
                            model.remove(0);
                        }
                    }
                    Op::Remove(i) if !issued.is_empty() => {
                        let target = issued[i % issued.len()].clone();
                        let got = g.remove_tracked(&target.1).map(|e| e.value.0);
                        let at = model.iter().position(|m| m.2 == target.0);
                        proptest::prop_assert_eq!(got, at.map(|k| model[k].2));
                        if let Some(k) = at {
                            model.remove(k);
                        }
                    }
                    Op::Update(i, delay) if !issued.is_empty() => {
                        let target = issued[i % issued.len()].clone();
                        let deadline = now + delay * MS;
                        let seq = g.next_seq();
                        let moved = g.update_tracked(
                            &target.1,
                            |e| {
                                e.deadline = deadline;
                                e.seq = seq;
                            },
                            |e| &e.value.1,
                        );
                        let at = model.iter().position(|m| m.2 == target.0);
                        proptest::prop_assert_eq!(moved, at.is_some());
                        if let Some(k) = at {
                            model[k] = (deadline, seq, target.0);
                        }
                    }
                    Op::Remove(_) | Op::Update(..) => {}
                }
                g.state.lane.check_invariants();
                g.state.heap.check_invariants();
                model.sort();
                proptest::prop_assert_eq!(g.len(), model.len());
                proptest::prop_assert_eq!(g.head_deadline(), model.first().map(|m| m.0));
            }
        }
    }

    fn wait_for(cond: impl Fn() -> bool) {
        let end = Instant::now() + Duration::from_secs(10);
        while !cond() {
            assert!(Instant::now() < end, "condition not reached in 10 s");
            std::thread::yield_now();
        }
    }
}
