//! The queues: the blocking delayed queue behind [`DelayQueue`](crate::DelayQueue) and
//! [`PriorityBlockingQueue`](crate::PriorityBlockingQueue) (`blocking.rs`, its async take
//! and timer thread in `timer.rs`), and the executor's sharded queue (Java:
//! `DelayedWorkQueue`) in `sharded.rs`. Entries find their place by a [`Position`]
//! (`position.rs`). This file states the blocking queue's invariants (I1–I8, but for I7,
//! the ready lane's, which `store.rs` states) and the entry traits both queues order by.
//! Both keep their entries in a [`Store`](store::Store) (`store.rs`: the indexed heap of
//! `heap/` and the ready lane of `lane.rs`); the sharded queue has one per shard.
//!
//! # Design
//! One `Mutex<State>` guards the store, the waiting takers' state and the sequence
//! counter. Waiting is leader/follower, as in Java's `DelayedWorkQueue` and `DelayQueue`:
//! the protocol (F1–F5: one leader on its own condition variable, a new head reaching a
//! waiter, the hand-on at every exit of a take, Java's lead rule, the leader's backup) is
//! `waiters.rs`'s, shared
//! with the executor's sharded queue; `blocking.rs`'s `take` loop looks at the head under
//! the lock and calls it for each wait. How the leader sleeps or spins on the real clock is
//! `park.rs`'s plan.
//!
//! No offer wakes more than one blocking taker (the leader, or with none one follower),
//! and with async takes registered at most the timer thread beside it, only for a head
//! earlier than the timer's wake-up (I8); only `close` wakes all.
//!
//! The heap (`heap/`) is private to this module: owners see entries, handles and
//! [`Position`]s, never heap indices.
//!
//! Entries whose deadline is always 0 (the priority queue) are always due: nobody ever
//! becomes leader and `take` degenerates to "wait while empty".
//!
//! The public queues keep one lock: their users are few threads, and removal by handle
//! needs a stable heap while it sifts. The executor's queue, which every producer,
//! canceller and worker uses, is sharded instead (`sharded.rs`, `docs/BENCHMARKS.md` for
//! the measurements).
//!
//! # Invariants
//! - I1: heap invariants H1–H3 (`heap/`) hold whenever the lock is free.
//! - I2: F1–F5 of `waiters.rs` hold under this queue's lock: one leader, who clears its
//!   lead itself; every exit of a take hands the lead on when a head is left (F3); the
//!   first follower behind a leader with a head backs it up (F5).
//! - I4: no user code runs under the lock (task bodies, element destructors, tracing
//!   subscribers, an async take's waker: its clone, drop and wake): callers get removed
//!   entries back and drop them after unlocking, and wakers go through the door of
//!   `user.rs` (U1). The exceptions are the user's own ordering and inspection code,
//!   which the API runs on the queue as it is: `PriorityBlockingQueue`'s `Ord`, and the
//!   closures of both queues' `peek_with` (`user::under_own_lock`).
//! - I5: whoever makes a new head (offer, re-key) or removes a head that is not yet due
//!   (remove by handle, `clear`) signals the leader if there is one, else one follower
//!   (F2). Taking a *due* head (`poll`, `drain_due`, `pop`, a take) needs no signal: the
//!   leader waiting for it is already awake or about to be (its timed wait ends at the
//!   deadline, and on virtual time the advance that made it due signalled it), and it
//!   re-checks the heap under the lock.
//! - I6: a [`Position`] (an entry's place in its store, kept in the entry's owner so that
//!   removal needs no search) and a [`LockedCell`] are read and written only by the
//!   [`Store`](store::Store) they belong to, through the lock guard of its owner (a shard's
//!   guard in `sharded.rs`; T4 in `task/mod.rs`, made a type).
//! - I8 (async takes): a poll that finds nothing due registers its waker and makes sure
//!   the timer thread runs, in the same critical section; the timer checks for wakers and
//!   for a due head (or a close) under the lock, wakes the wakers of a due head, and waits
//!   on `timer_cv` with the lock released atomically until `timer_until`: the first
//!   deadline after the time it looked (`Store::first_after`; `NEVER` when there is none
//!   or finding it would walk too many due entries), which it records under the lock
//!   before it waits. Whoever makes the head earlier than `timer_until` (an offer, a
//!   re-key), or registers a waker while the head is, notifies `timer_cv` under the lock;
//!   so does a clock advance that reaches `timer_until`, and `close`. A head that moves
//!   later, or leaves, notifies no one: the timer wakes at `timer_until`, which is no later
//!   than it, and looks again; a consumer that took the due entries registers for a head
//!   at or after `timer_until` without a notification. So a registered waker is woken once
//!   its head is due or the queue closes. A take on its own timer (`on_tokio_timer`)
//!   registers with the head's deadline (`own_until`) and sleeps on its runtime's timer
//!   until then; the queue's timer wakes it only for a head before `own_until` (or a
//!   close), so `own_min`, the least of them, joins `timer_until` in the notification rule,
//!   and with only such takes the queue's timer follows no deadline. With no take
//!   registered no head change notifies: a take that registers checks the head against
//!   the timer's wake-up itself. The timer exits when no waker is registered (a dropped
//!   future takes its own out, and notifies): on the real clock only after lingering
//!   `TIMER_LINGER` for a new one (looking every `TIMER_LINGER` while only takes on their
//!   own timers are registered, since they leave without notifying), so a consumer loop
//!   keeps one thread.
//! - The store under the lock keeps I7 (`store.rs`): its ready lane holds only entries
//!   that were due when queued, and entries leave in exactly the order a heap alone
//!   would give.
//!
//! # Ordering
//! The heap, the waiters' state, the sequence counter and the waiting policy's state are
//! under the mutex. Outside it: the waiters' `head_changes` (`Relaxed`, a hint for
//! spinners, see `waiters.rs`) and the cells of [`Position`] and [`LockedCell`] (`Relaxed`
//! atomics so that they can live in shared task headers; the mutex orders every access,
//! I6).

mod blocking;
mod heap;
mod lane;
mod park;
mod position;
pub(crate) mod sharded;
mod store;
mod timer;
mod waiters;

#[cfg(all(test, loom))]
mod loom_blocking;
#[cfg(all(test, loom))]
mod loom_sharded;

use crate::clock::Ticks;

pub use park::SpinPolicy;

pub(crate) use blocking::{BlockingQueue, Locked, Take};
pub(crate) use heap::Ordered;
use position::Place;
pub(crate) use position::{Handle, LockedCell, Position, Tracked};
pub(crate) use timer::AsyncTake;

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
