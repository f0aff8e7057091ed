//! The queues: this file's blocking delayed queue behind
//! [`DelayQueue`](crate::DelayQueue) and [`PriorityBlockingQueue`](crate::PriorityBlockingQueue),
//! and the executor's sharded queue (Java: `DelayedWorkQueue`) in `sharded.rs`. Both keep
//! their entries in a [`Store`] (`store.rs`: the indexed heap of `heap.rs` and the ready
//! lane of `lane.rs`); the sharded queue has one per shard.
//!
//! # Design
//! One `Mutex<State>` guards the store, the waiting takers' state and the sequence
//! counter. Waiting is leader/follower, as in Java's `DelayedWorkQueue` and `DelayQueue`:
//! the protocol (W1–W4: one leader on its own condition variable, a new head reaching a
//! waiter, the hand-on at every exit of a take, Java's lead rule) is `waiters.rs`'s, shared
//! with the executor's sharded queue; this file's `take` loop looks at the head under the
//! lock and calls it for each wait. How the leader sleeps or spins on the real clock is
//! `park.rs`'s plan.
//!
//! No offer ever wakes more than one thread; only `close` wakes all.
//!
//! The heap (`heap.rs`) is private to this module: owners see entries, handles and
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
//! - I1: heap invariants H1–H3 (`heap.rs`) hold whenever the lock is free.
//! - I2: W1–W4 of `waiters.rs` hold under this queue's lock: one leader, who clears its
//!   lead itself; every exit of a take hands the lead on when a head is left (W3).
//! - I4: no user code runs under the lock (task bodies, element destructors, tracing
//!   subscribers, an async take's waker: its clone, drop and wake): callers get removed
//!   entries back and drop them after unlocking, and wakers go through the door of
//!   `user.rs` (U1). The exceptions are the user's own ordering and inspection code,
//!   which the API runs on the queue as it is: `PriorityBlockingQueue`'s `Ord`, and the
//!   closures of both queues' `peek_with` (`user::under_own_lock`).
//! - I5: whoever makes a new head (offer, re-key) or removes a head that is not yet due
//!   (remove by handle, `clear`) signals the leader if there is one, else one follower
//!   (W2). Taking a *due* head (`poll`, `drain_due`, `pop`, a take) needs no signal: the
//!   leader waiting for it is already awake or about to be (its timed wait ends at the
//!   deadline, and on virtual time the advance that made it due signalled it), and it
//!   re-checks the heap under the lock.
//! - I6: a [`Position`] (an entry's place in its store, kept in the entry's owner so
//!   that removal needs no search) and a [`LockedCell`] are read and written only by the
//!   [`Store`] they belong to, through the lock guard of its owner (a shard's guard in
//!   `sharded.rs`; T4 in `task/mod.rs`, made a type).
//! - I8 (async takes): a poll that finds nothing due registers its waker and makes sure
//!   the timer thread runs, in the same critical section; the timer checks for wakers and
//!   for a due head (or a close) under the lock and waits on `timer_cv` with it released
//!   atomically, and every head change, clock advance and close notifies `timer_cv` under
//!   the lock. So a registered waker is woken once its head is due or the queue closes.
//!   A new waker registered while the timer runs notifies `timer_cv` too. The timer
//!   exits when no waker is registered (a dropped future takes its own out): on the real
//!   clock only after lingering `TIMER_LINGER` for a new one, so a consumer loop keeps one
//!   thread.
//! - I7: the ready lane (`lane.rs`) holds only entries that were due when queued, in
//!   order; the head is the earlier of the lane's front and the heap's root, so entries
//!   leave in exactly the order a heap alone would give (`store.rs`).
//!
//! # Ordering
//! The heap, the waiters' state, the sequence counter and the waiting policy's state are
//! under the mutex. Outside it: the waiters' `head_changes` (`Relaxed`, a hint for
//! spinners, see `waiters.rs`) and the cells of [`Position`] and [`LockedCell`] (`Relaxed` atomics so that
//! they can live in shared task headers; the mutex orders every access, I6).

mod heap;
mod lane;
mod park;
pub(crate) mod sharded;
mod store;
mod waiters;

#[cfg(all(test, loom))]
mod loom_blocking;
#[cfg(all(test, loom))]
mod loom_sharded;

use crate::sync::Ordering;
use std::fmt;
use std::time::Instant;

use crate::clock::{AdvanceListener, Clock, Ticks};
use crate::sync::{thread, unlocked, Arc, AtomicU32, AtomicU64, Condvar, Mutex, MutexGuard};
use heap::Handle as HeapHandle;
use std::task::{Context, Poll, Waker};
use store::Store;
use waiters::{wait, HandOn, Leaving, Signals, Taker, Waiters};

pub use park::SpinPolicy;

pub(crate) use heap::Ordered;

/// Names an entry of a public queue (a slab handle of its heap, `heap.rs`). `Copy`,
/// never dangling: an entry that left the queue is simply not found. (The public queues
/// never use the ready lane: their takers always go through the heap.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Handle(HeapHandle);

/// Set in a [`Position`] that holds a lane ticket: the top bit, above the ticket's low
/// [`lane::LOW_BITS`] bits.
const LANE_BIT: u32 = 1 << lane::LOW_BITS;

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
enum Place {
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
pub(crate) struct Position(AtomicU32);

impl Position {
    /// "Not stored".
    const NONE: u32 = LANE_BIT - 1;

    /// A position that names no entry.
    pub(crate) fn new() -> Self {
        Position(AtomicU32::new(Self::NONE))
    }

    /// The bits for heap index `index` (below `heap::MAX_LEN`).
    #[inline]
    fn heap(index: usize) -> u32 {
        debug_assert!(index < heap::MAX_LEN, "heap index {index}");
        index as u32
    }

    /// The bits for lane ticket `ticket`: [`LANE_BIT`] and its low bits.
    #[inline]
    fn lane(ticket: u64) -> u32 {
        LANE_BIT | (ticket & lane::LOW_MASK) as u32
    }

    /// Decodes a position's bits.
    #[inline]
    fn place(bits: u32) -> Place {
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
/// lock: read and written only through [`Store::replace`], under that lock (I6).
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
pub(crate) struct State<E> {
    /// Pending entries: the heap and the ready lane (`store.rs`, I1, I7).
    store: Store<E>,
    /// The waiting takers (I2, `waiters.rs`).
    waiters: Waiters,
    /// Next FIFO sequence number.
    seq: u64,
    /// The owner closed the queue ([`BlockingQueue::close`]): closable takes stop waiting.
    pub(crate) closed: bool,
    /// Wakers of async takes waiting for a due entry (I8), each under the number of the
    /// take that registered it: a take that goes away removes its own registration only,
    /// also where several takes share one waker (two branches of one `select!`).
    async_waiters: Vec<(u64, Waker)>,
    /// The timer thread of the async takes runs (I8).
    timer_running: bool,
}

impl<E: Timed> State<E> {
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
        self.store.head_deadline()
    }

    /// The head, if any: the earlier of the lane's front and the heap's root (I7).
    #[inline]
    pub(crate) fn peek(&self) -> Option<&E> {
        self.store.peek()
    }

    /// Entries queued.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.store.len()
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.store.is_empty()
    }
}

/// How long the async takes' timer thread waits for a new waiter before it exits (real
/// clock): longer than the gap between two awaits of a consumer loop, short enough that an
/// idle queue holds no thread for long.
const TIMER_LINGER: std::time::Duration = std::time::Duration::from_secs(1);

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
pub(crate) struct BlockingQueue<E> {
    state: Mutex<State<E>>,
    /// The takers' condition variables (I2, I5, `waiters.rs`).
    signals: Signals,
    /// The async takes' timer thread waits here (I8).
    timer_cv: Condvar,
    clock: Clock,
}

impl<E: Timed> BlockingQueue<E> {
    pub(crate) fn new(clock: Clock, capacity: usize) -> Self {
        BlockingQueue {
            state: Mutex::new(State {
                store: Store::with_capacity(capacity),
                waiters: Waiters::new(SpinPolicy::Adaptive, std::time::Duration::ZERO),
                seq: 0,
                closed: false,
                async_waiters: Vec::new(),
                timer_running: false,
            }),
            signals: Signals::new(),
            timer_cv: Condvar::new(),
            clock,
        }
    }

    #[inline]
    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Takes the lock.
    #[inline]
    pub(crate) fn lock(&self) -> Locked<'_, E> {
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

    /// Takes a due entry with its handle, blocking as long as it takes.
    pub(crate) fn take_blocking_keyed(&self) -> (E, Handle) {
        loop {
            if let Take::Item(entry, _) = self.lock().take_keyed(None, |_| false) {
                return entry;
            }
        }
    }

    /// Takes a due entry, blocking until one is due or the queue is closed; after
    /// [`close`](Self::close) it returns the entries still due, then `None` without
    /// waiting.
    pub(crate) fn take_until_closed(&self) -> Option<E> {
        self.take_until_closed_keyed().map(|(entry, _)| entry)
    }

    /// As [`take_until_closed`](Self::take_until_closed), with the taken entry's handle.
    pub(crate) fn take_until_closed_keyed(&self) -> Option<(E, Handle)> {
        let clock = &self.clock;
        loop {
            let stop =
                |st: &State<E>| st.closed && st.head_deadline().is_none_or(|d| d > clock.now());
            match self.lock().take_keyed(None, stop) {
                Take::Item(entry, _) => return Some(entry),
                Take::Stopped => return None,
                Take::TimedOut => {}
            }
        }
    }

    /// Closes the queue: every taker blocked in
    /// [`take_until_closed`](Self::take_until_closed) wakes and returns (`None` once
    /// nothing is due). Entries stay, and other takes and offers work as before. `true` if
    /// this call closed it.
    pub(crate) fn close(&self) -> bool {
        let mut state = self.state.lock();
        if state.closed {
            return false;
        }
        state.closed = true;
        // Every sleeper re-checks its stop condition: the leader, the followers, and a
        // spinner.
        self.signals.wake_all();
        self.timer_cv.notify_one(); // I8: async takes return None
        true
    }

    /// `true` once [`close`](Self::close) was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.state.lock().closed
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
    fn signal_head_changed(&self, state: &State<E>) {
        self.signals.head_changed(&state.waiters, !state.is_empty());
        if state.timer_running {
            self.timer_cv.notify_one(); // I8: the timer re-reads the head
        }
    }
}

impl<E> BlockingQueue<E> {
    /// An async take that will not be polled again forgets its waker, so the timer can
    /// stop when nobody waits (I8). Only take `take`'s registration goes; the wakers are
    /// dropped after unlocking (U1 in `user.rs`).
    pub(crate) fn forget_waker(&self, take: u64) {
        let mut gone = Vec::new();
        {
            let mut state = self.state.lock();
            let mut i = 0;
            while i < state.async_waiters.len() {
                if state.async_waiters[i].0 == take {
                    gone.push(state.async_waiters.swap_remove(i).1);
                } else {
                    i += 1;
                }
            }
            if state.timer_running && state.async_waiters.is_empty() {
                self.timer_cv.notify_one();
            }
        }
        gone.into_iter().for_each(crate::user::drop_waker);
    }
}

/// The async take (`DelayQueue::next_expired`, `DelayQueue::expirations`): an entry due
/// now, or `None` once the queue is closed and nothing is due; else its waker waits in the
/// queue, and the queue's timer thread wakes it (I8).
impl<E: Timed + Send + 'static> BlockingQueue<E> {
    /// One poll of async take `take` (a number from `sync::unique_id`), with the taken
    /// entry's handle. An entry leaves the queue only in a poll that returns it: a future
    /// or stream dropped while pending loses nothing (cancel safety).
    ///
    /// U1: the waker is cloned, dropped and (if no timer thread could start) woken with
    /// the lock released; a clone made unlocked is put in a second look at the state.
    pub(crate) fn poll_take_keyed(
        self: &Arc<Self>,
        cx: &mut Context<'_>,
        take: u64,
    ) -> Poll<Option<(E, Handle)>> {
        let mut fresh: Option<Waker> = None;
        let mut state = self.state.lock();
        let (replaced, wake_now) = loop {
            let due = state.head_deadline().is_some_and(|d| d <= self.clock.now());
            if due || state.closed {
                let entry = if due {
                    let entry = state.store.pop_keyed();
                    self.signal_head_changed(&state); // the head moved on: takers re-check
                    entry
                } else {
                    None
                };
                // A ready take is registered no more (a poll of its own came first).
                let mine = state.async_waiters.iter().position(|(t, _)| *t == take);
                let left = mine.map(|i| state.async_waiters.swap_remove(i).1);
                drop(state);
                left.into_iter()
                    .chain(fresh)
                    .for_each(crate::user::drop_waker);
                return Poll::Ready(entry);
            }
            // I8: registered, and the timer known to run, in the critical section that saw
            // nothing due.
            let mine = state.async_waiters.iter().position(|(t, _)| *t == take);
            let replaced = match (mine, fresh.take()) {
                // Registered already; a clone made meanwhile is dropped after unlocking.
                (Some(i), unused) if state.async_waiters[i].1.will_wake(cx.waker()) => unused,
                (Some(i), Some(new)) => Some(std::mem::replace(&mut state.async_waiters[i].1, new)),
                (None, Some(new)) => {
                    state.async_waiters.push((take, new));
                    if state.timer_running {
                        self.timer_cv.notify_one(); // a lingering timer takes the new waiter on
                    }
                    None
                }
                (_, None) => {
                    drop(state);
                    fresh = Some(crate::user::call(|| cx.waker().clone()));
                    state = self.state.lock();
                    continue;
                }
            };
            let mut wake_now = false;
            if !state.timer_running {
                state.timer_running = true;
                let queue = Arc::clone(self);
                let started = thread::Builder::new()
                    .name("schedpool-delay-timer".into())
                    .spawn(move || queue.run_timer());
                if started.is_err() {
                    // No thread could be started: the future is woken at once and polls
                    // again (and tries again), so it cannot wait forever.
                    state.timer_running = false;
                    wake_now = true;
                }
            }
            break (replaced, wake_now);
        };
        drop(state);
        if let Some(old) = replaced {
            crate::user::drop_waker(old);
        }
        if let Some(unused) = fresh {
            crate::user::drop_waker(unused);
        }
        if wake_now {
            crate::user::call(|| cx.waker().wake_by_ref());
        }
        Poll::Pending
    }

    /// The timer thread of the async takes (I8): while wakers wait, it sleeps until the
    /// head is due (or changes, or the clock advances, or the queue closes), then wakes
    /// them all; they poll again and one takes the head. When none waits it lingers for
    /// [`TIMER_LINGER`] on the real clock (an open queue), so that a loop awaiting one
    /// element after another keeps one thread instead of starting one per element; it
    /// exits when the linger ends with no waiter, at once on virtual time, or once closed.
    fn run_timer(self: Arc<Self>) {
        let real = matches!(self.clock, Clock::Real { .. });
        let mut state = self.state.lock();
        // When the current linger ends (real clock, no waiter since it began).
        let mut linger_until: Option<Instant> = None;
        loop {
            if state.async_waiters.is_empty() {
                if real && !state.closed {
                    let until = *linger_until.get_or_insert_with(|| Instant::now() + TIMER_LINGER);
                    if Instant::now() < until {
                        // Woken early by a head change or a dropped future: linger on.
                        wait(&self.timer_cv, &mut state, Some(until));
                        continue;
                    }
                }
                state.timer_running = false;
                return;
            }
            linger_until = None;
            let head = state.head_deadline();
            if state.closed || head.is_some_and(|d| d <= self.clock.now()) {
                let wakers = std::mem::take(&mut state.async_waiters);
                // U1, U2: unlocked, and each waker through the door.
                unlocked(&mut state, || {
                    wakers.into_iter().for_each(|(_, w)| crate::user::wake(w))
                });
                continue;
            }
            let until = head.filter(|_| real).map(|d| self.clock.instant_of(d));
            wait(&self.timer_cv, &mut state, until);
        }
    }
}

impl<E: Timed + Send> AdvanceListener for BlockingQueue<E> {
    /// C3 (`clock.rs`): the time moved; the leader re-reads it under the lock.
    fn on_advance(&self) {
        let state = self.state.lock();
        self.signal_head_changed(&state);
    }
}

impl<E> fmt::Debug for BlockingQueue<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockingQueue").finish_non_exhaustive()
    }
}

/// The queue with its lock held. Only this guard hands out `&mut State`, so every
/// function that takes it runs under the lock by construction.
pub(crate) struct Locked<'a, E> {
    queue: &'a BlockingQueue<E>,
    state: MutexGuard<'a, State<E>>,
}

impl<E: Timed> std::ops::Deref for Locked<'_, E> {
    type Target = State<E>;
    #[inline]
    fn deref(&self) -> &State<E> {
        &self.state
    }
}

impl<E: Timed> std::ops::DerefMut for Locked<'_, E> {
    #[inline]
    fn deref_mut(&mut self) -> &mut State<E> {
        &mut self.state
    }
}

impl<E: Timed> Locked<'_, E> {
    /// Inserts an entry into the heap; signals a waiter if it is the new head (I5).
    /// O(log n).
    #[inline]
    pub(crate) fn push(&mut self, entry: E) -> Handle {
        let (handle, head) = self.state.store.push(entry);
        if head {
            self.queue.signal_head_changed(&self.state);
        }
        handle
    }

    /// Removes the entry `h` names (I5 if it was the head). O(log n) in the heap, O(1) in
    /// the lane (whose entries are due: no signal, I5).
    #[inline]
    pub(crate) fn remove(&mut self, h: Handle) -> Option<E> {
        let (entry, was_head) = self.state.store.remove(h);
        if was_head {
            self.queue.signal_head_changed(&self.state);
        }
        entry
    }

    /// Changes the key of the entry `h` names with `f` (I5: signals a waiter if the head
    /// may have changed); `false` for a stale handle. O(log n).
    pub(crate) fn update(&mut self, h: Handle, f: impl FnOnce(&mut E)) -> bool {
        match self.state.store.update(h, f) {
            Some(head_changed) => {
                if head_changed {
                    self.queue.signal_head_changed(&self.state);
                }
                true
            }
            None => false,
        }
    }

    /// Removes everything (entries in no particular order).
    pub(crate) fn clear(&mut self) -> Vec<E> {
        let out = self.state.store.clear();
        self.queue.signal_head_changed(&self.state);
        out
    }

    /// The head with its handle, if it is due now (never blocks).
    pub(crate) fn poll_keyed(&mut self) -> Option<(E, Handle)> {
        let deadline = self.state.head_deadline()?;
        if deadline <= self.queue.clock.now() {
            self.state.store.pop_keyed()
        } else {
            None
        }
    }

    /// The head if it is due now (never blocks).
    #[inline]
    pub(crate) fn poll(&mut self) -> Option<E> {
        let deadline = self.state.head_deadline()?;
        if deadline <= self.queue.clock.now() {
            self.state.store.pop_head()
        } else {
            None
        }
    }

    /// Removes the head whether due or not, without a signal: for queues whose entries are
    /// always due (the priority queue, where nobody leads) and for draining.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<E> {
        self.state.store.pop_head()
    }

    /// Every entry due at `now`, in order.
    pub(crate) fn drain_due(&mut self, now: Ticks) -> Vec<E> {
        self.state.store.drain_due(now)
    }

    /// Waits for a due entry with the leader/follower protocol (Java: `take` / timed
    /// `poll`). Returns early when `stop` holds (checked on entry and after every
    /// wake-up) or when the real-time `timeout` passes. The lock is held again on return.
    pub(crate) fn take(
        &mut self,
        timeout: Option<Instant>,
        stop: impl FnMut(&State<E>) -> bool,
    ) -> Take<E> {
        match self.take_keyed(timeout, stop) {
            Take::Item((entry, _), now) => Take::Item(entry, now),
            Take::TimedOut => Take::TimedOut,
            Take::Stopped => Take::Stopped,
        }
    }

    /// As [`take`](Self::take), with the taken entry's handle (its key in the public
    /// queues, now stale).
    pub(crate) fn take_keyed(
        &mut self,
        timeout: Option<Instant>,
        mut stop: impl FnMut(&State<E>) -> bool,
    ) -> Take<(E, Handle)> {
        // I2/W3: every way out of this loop, a panicking `stop` included, hands on.
        let mut this = Leaving(self);
        let queue = this.queue;
        let mut taker = Taker::new(&queue.clock, timeout);
        loop {
            if stop(&this.state) {
                return Take::Stopped;
            }
            let head = this.state.head_deadline();
            let now = head.map_or(0, |_| queue.clock.now());
            if head.is_some_and(|d| d <= now) {
                let entry = this
                    .state
                    .store
                    .pop_keyed()
                    .expect("the head was just seen");
                return Take::Item(entry, now);
            }
            if taker.expired() {
                return Take::TimedOut; // only after one last look at the head (Java's poll)
            }
            // The head cannot change while this lock is held: nothing to re-scan.
            let seen = head.unwrap_or(Ticks::MAX);
            taker.wait(
                &queue.signals,
                &mut this.state,
                |st| &mut st.waiters,
                &queue.clock,
                head,
                |_| seen,
            );
        }
    }
}

impl<E: Timed> HandOn for &mut Locked<'_, E> {
    /// W3 under the queue's one lock, which the guard holds.
    #[inline]
    fn hand_on(&mut self) {
        let has_head = !self.state.is_empty();
        self.queue.signals.hand_on(&self.state.waiters, has_head);
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, not(loom)))]
mod position_tests {
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
