//! The async take of a [`BlockingQueue`] (`DelayQueue::next_expired`,
//! `DelayQueue::expirations`) and the queue's one timer thread, which wakes the waiting
//! takes when the head falls due, the clock advances or the queue closes (I8 in
//! `queue/mod.rs`).

use std::time::Instant;

use crate::clock::{Clock, NEVER};
use crate::sync::{thread, unlocked, Arc};
use std::task::{Context, Poll, Waker};

use super::blocking::BlockingQueue;
use super::waiters::wait;
use super::{Handle, Timed};

/// How long the async takes' timer thread waits for a new waiter before it exits (real
/// clock): longer than the gap between two awaits of a consumer loop, short enough that an
/// idle queue holds no thread for long.
const TIMER_LINGER: std::time::Duration = std::time::Duration::from_secs(1);

/// How many due entries the timer walks to find the first deadline after them (a
/// consumer that fell behind); past it, the timer's wake-up is unknown and everyone
/// notifies it (I8).
const FIRST_AFTER_BUDGET: usize = 64;

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
                    // A timer asleep past the head (lingering on an unknown wake-up) wakes
                    // for the new waiter; one asleep until the head or before it sees it then.
                    self.signal_timer_if_earlier(&state);
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
    /// head is due (or an earlier head comes, the clock reaches it, or the queue closes),
    /// then wakes them all; they poll again and take every due entry. It then sleeps until
    /// the first deadline after the time it woke (`first_after`), not until someone tells
    /// it the next head: the pollers take the due entries and register again for a head
    /// at or after that deadline, which needs no notification, so one expiration costs
    /// the timer one wake-up. When none waits it lingers for [`TIMER_LINGER`] on the real
    /// clock (an open queue), so that a loop awaiting one element after another keeps one
    /// thread instead of starting one per element; it exits when the linger ends with no
    /// waiter, at once on virtual time, or once closed.
    fn run_timer(self: Arc<Self>) {
        let real = matches!(self.clock, Clock::Real { .. });
        let mut state = self.state.lock();
        // When the current linger ends (real clock, no waiter since it began).
        let mut linger_until: Option<Instant> = None;
        loop {
            let now = self.clock.now();
            if !state.async_waiters.is_empty()
                && (state.closed || state.head_deadline().is_some_and(|d| d <= now))
            {
                let wakers = std::mem::take(&mut state.async_waiters);
                // U1, U2: unlocked, and each waker through the door.
                unlocked(&mut state, || {
                    wakers.into_iter().for_each(|(_, w)| crate::user::wake(w))
                });
                continue;
            }
            if state.async_waiters.is_empty() {
                let lingered = !real
                    || state.closed
                    || Instant::now()
                        >= *linger_until.get_or_insert_with(|| Instant::now() + TIMER_LINGER);
                if lingered {
                    state.timer_running = false;
                    return;
                }
            } else {
                linger_until = None;
            }
            // I8: asleep until the first deadline after `now`; with waiters that is the
            // head (nothing is due). More than FIRST_AFTER_BUDGET entries due and no
            // waiter: not known, so every head and every registration notifies.
            let next = state.store.first_after(now, FIRST_AFTER_BUDGET).flatten();
            state.timer_until = next.unwrap_or(NEVER);
            let until = next.filter(|_| real).map(|d| self.clock.instant_of(d));
            let until = match (until, linger_until) {
                (Some(u), Some(l)) => Some(u.min(l)),
                (u, l) => u.or(l),
            };
            wait(&self.timer_cv, &mut state, until);
        }
    }
}
