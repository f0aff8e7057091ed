//! [`BlockingQueue`]: a store under one lock with leader/follower waiting (I1, I2, I5,
//! I7 in `queue/mod.rs`), behind `DelayQueue` and `PriorityBlockingQueue`; [`Locked`],
//! the guard that alone hands out its state. Its async take and the timer thread that
//! wakes it are in `timer.rs`.

use std::fmt;
use std::time::Instant;

use crate::clock::{AdvanceListener, Clock, Ticks, NEVER};
use crate::sync::{Condvar, Mutex, MutexGuard};
use std::task::Waker;

use super::store::Store;
use super::waiters::{HandOn, Leaving, Signals, Taker, Waiters};
use super::{Handle, SpinPolicy, Timed};

/// What the lock guards.
pub(crate) struct State<E> {
    /// Pending entries: the heap and the ready lane (`store.rs`, I1, I7).
    pub(super) store: Store<E>,
    /// The waiting takers (I2, `waiters.rs`).
    waiters: Waiters,
    /// Next FIFO sequence number.
    seq: u64,
    /// The owner closed the queue ([`BlockingQueue::close`]): closable takes stop waiting.
    pub(crate) closed: bool,
    /// Wakers of async takes waiting for a due entry (I8), each under the number of the
    /// take that registered it: a take that goes away removes its own registration only,
    /// also where several takes share one waker (two branches of one `select!`).
    pub(super) async_waiters: Vec<AsyncWaiter>,
    /// The timer thread of the async takes runs (I8).
    pub(super) timer_running: bool,
    /// The deadline by which the running timer re-reads the queue unasked: the earliest
    /// deadline after the time it last looked (`NEVER`: none, or not known). Whoever
    /// makes a head earlier than this, or registers a waker while the head is, notifies
    /// the timer; a later head wakes no one (I8).
    pub(super) timer_until: Ticks,
    /// The earliest deadline a take on its own timer armed for (`NEVER`: none): a head
    /// before it notifies the timer, which wakes those takes (I8). Recomputed by
    /// [`State::registrations_changed`] whenever a registration comes, goes or changes,
    /// with `queue_timed`.
    pub(super) own_min: Ticks,
    /// Some registered take sleeps on the queue's timer.
    pub(super) queue_timed: bool,
    /// The last take to register sleeps on its own timer: the timer, lingering, expects
    /// another such and follows no deadline (I8).
    pub(super) last_own: bool,
}

impl<E> State<E> {
    /// I8: `own_min` follows the registrations (a stale one could hold back the
    /// notification a take on its own timer needs).
    pub(super) fn registrations_changed(&mut self) {
        let own = self.async_waiters.iter().filter_map(|w| w.own_until).min();
        self.own_min = own.unwrap_or(NEVER);
        self.queue_timed = self.async_waiters.iter().any(|w| w.own_until.is_none());
    }
}

/// An async take's registration (I8).
pub(crate) struct AsyncWaiter {
    /// The take's number: a take that goes away removes its own registration only.
    pub(super) take: u64,
    pub(super) waker: Waker,
    /// `None`: the queue's timer wakes the take when the head is due. `Some(d)`: the take
    /// sleeps on its async runtime's timer until `d`, the head's deadline when it
    /// registered (`NEVER`: there was none), and the queue's timer wakes it only for a
    /// head before `d` or a close.
    pub(super) own_until: Option<Ticks>,
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
    pub(super) state: Mutex<State<E>>,
    /// The takers' condition variables (I2, I5, `waiters.rs`).
    signals: Signals,
    /// The async takes' timer thread waits here (I8).
    pub(super) timer_cv: Condvar,
    pub(super) clock: Clock,
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
                timer_until: NEVER,
                own_min: NEVER,
                queue_timed: false,
                last_own: false,
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
    /// follower takes the lead. I8: the timer only if the head is now earlier than its
    /// wake-up.
    #[inline]
    pub(super) fn signal_head_changed(&self, state: &State<E>) {
        self.signals.head_changed(&state.waiters, !state.is_empty());
        self.signal_timer_if_earlier(state);
    }

    /// I8: notifies the running timer if the head falls before the deadline it sleeps to
    /// for the takes on the queue's timer, or before one a take on its own timer armed
    /// for; a head at or after both is seen when the timer wakes (or the take's timer
    /// fires), so it costs no wake-up.
    /// With no take registered nobody needs it: a take that registers later checks the
    /// head against the timer's wake-up itself.
    #[inline]
    pub(super) fn signal_timer_if_earlier(&self, state: &State<E>) {
        if !state.timer_running || state.async_waiters.is_empty() {
            return;
        }
        let queue_timer = if state.queue_timed {
            state.timer_until
        } else {
            NEVER
        };
        let wake_up = queue_timer.min(state.own_min);
        if state.head_deadline().is_some_and(|d| d < wake_up) {
            self.timer_cv.notify_one();
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
                if state.async_waiters[i].take == take {
                    gone.push(state.async_waiters.swap_remove(i).waker);
                } else {
                    i += 1;
                }
            }
            state.registrations_changed();
            if state.timer_running && state.async_waiters.is_empty() {
                self.timer_cv.notify_one();
            }
        }
        gone.into_iter().for_each(crate::user::drop_waker);
    }
}

impl<E: Timed + Send> AdvanceListener for BlockingQueue<E> {
    /// C3 (`clock.rs`): the time moved; the leader re-reads it under the lock, and so does
    /// the timer once the time reaches its wake-up (I8).
    fn on_advance(&self) {
        let state = self.state.lock();
        self.signals.head_changed(&state.waiters, !state.is_empty());
        if state.timer_running && self.clock.now() >= state.timer_until {
            self.timer_cv.notify_one();
        }
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

    /// Removes the entry `h` names (I5 if it was the head). O(log n): a handle names a
    /// heap slot (the public queues never use the ready lane).
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

    /// Takes out the entry a push or a re-key whose comparison panicked left out of
    /// order (the caller drops it after unlocking, I4); signals a waiter, as the head may
    /// have been it.
    pub(crate) fn take_detached(&mut self) -> Option<E> {
        let out = self.state.store.take_detached();
        if out.is_some() {
            self.queue.signal_head_changed(&self.state);
        }
        out
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
        // I2/F3: every way out of this loop, a panicking `stop` included, hands on.
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
    /// F3 under the queue's one lock, which the guard holds.
    #[inline]
    fn hand_on(&mut self) {
        let has_head = !self.state.is_empty();
        self.queue.signals.hand_on(&self.state.waiters, has_head);
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
