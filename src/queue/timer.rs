//! The async take of a [`BlockingQueue`] (`DelayQueue::next_expired`,
//! `DelayQueue::expirations`) and the queue's one timer thread, which wakes the waiting
//! takes when the head falls due, the clock advances or the queue closes (I8 in
//! `queue/mod.rs`).

use std::time::Instant;

use crate::clock::{Clock, Ticks, NEVER};
use crate::sync::{thread, unlocked, Arc, MutexGuard};
use std::task::{Context, Poll, Waker};

use super::blocking::{AsyncWaiter, BlockingQueue, State};
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
    /// With `own_timer`, the take sleeps on its async runtime's timer: a pending poll
    /// registers it as such and sets `armed` to the head's deadline (the take arms its
    /// timer there; `None`: no head), and the queue's timer wakes it only for an earlier
    /// head or a close (I8).
    ///
    /// U1: the waker is cloned, dropped and (if no timer thread could start) woken with
    /// the lock released; a clone made unlocked is put in a second look at the state.
    pub(crate) fn poll_take_keyed(
        self: &Arc<Self>,
        cx: &mut Context<'_>,
        take: u64,
        own_timer: bool,
        armed: &mut Option<Ticks>,
    ) -> Poll<Option<(E, Handle)>> {
        let mut fresh: Option<Waker> = None;
        let mut state = self.state.lock();
        let (replaced, wake_now) = loop {
            let due = state.head_deadline().is_some_and(|d| d <= self.clock.now());
            if due || state.closed {
                return Poll::Ready(self.take_ready(state, take, due, fresh));
            }
            // I8: registered, and the timer known to run, in the critical section that saw
            // nothing due.
            match self.register(&mut state, cx.waker(), take, own_timer, &mut fresh) {
                Some(replaced) => {
                    *armed = state.head_deadline().filter(|_| own_timer);
                    break (replaced, self.ensure_timer(&mut state));
                }
                None => {
                    drop(state);
                    fresh = Some(crate::user::call(|| cx.waker().clone()));
                    state = self.state.lock();
                }
            }
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

    /// A ready poll of take `take`: the due head if `due` (else the queue is closed), and
    /// the take registered no more (a poll of its own came first). The take's waker and an
    /// unused clone (`fresh`) are dropped after unlocking (U1).
    fn take_ready(
        &self,
        mut state: MutexGuard<'_, State<E>>,
        take: u64,
        due: bool,
        fresh: Option<Waker>,
    ) -> Option<(E, Handle)> {
        let entry = if due {
            let entry = state.store.pop_keyed();
            self.signal_head_changed(&state); // the head moved on: takers re-check
            entry
        } else {
            None
        };
        let mine = state.async_waiters.iter().position(|w| w.take == take);
        let left = mine.map(|i| state.async_waiters.swap_remove(i).waker);
        state.registrations_changed();
        drop(state);
        left.into_iter()
            .chain(fresh)
            .for_each(crate::user::drop_waker);
        entry
    }

    /// Registers take `take` with `waker` (I8). A take on its own timer sleeps until the
    /// head's deadline (or, with no head, until the queue's timer wakes it for one). A
    /// new registration or a changed waker needs a clone made unlocked: `None` asks the
    /// caller for one in `fresh`. Else the waker it replaced, or the clone it did not
    /// need, to drop after unlocking.
    fn register(
        &self,
        state: &mut State<E>,
        waker: &Waker,
        take: u64,
        own_timer: bool,
        fresh: &mut Option<Waker>,
    ) -> Option<Option<Waker>> {
        let own_until = own_timer.then(|| state.head_deadline().unwrap_or(NEVER));
        let mine = state.async_waiters.iter().position(|w| w.take == take);
        let replaced = match (mine, fresh.take()) {
            // Registered already; a clone made meanwhile is dropped after unlocking.
            (Some(i), unused) if state.async_waiters[i].waker.will_wake(waker) => {
                state.async_waiters[i].own_until = own_until;
                unused
            }
            (Some(i), Some(new)) => {
                state.async_waiters[i].own_until = own_until;
                Some(std::mem::replace(&mut state.async_waiters[i].waker, new))
            }
            (None, Some(new)) => {
                state.async_waiters.push(AsyncWaiter {
                    take,
                    waker: new,
                    own_until,
                });
                None
            }
            (_, None) => return None,
        };
        state.registrations_changed();
        state.last_own = own_timer;
        // A take on its own timer needs the queue's timer only for a head before the one
        // it armed for: none now. For one on the queue's timer, a timer asleep past the
        // head (lingering on an unknown wake-up) wakes for the new waiter; one asleep
        // until the head or before it sees it then.
        if own_until.is_none() {
            self.signal_timer_if_earlier(state);
        }
        Some(replaced)
    }

    /// Starts the queue's timer thread unless it runs (I8). `true` if no thread could be
    /// started: the caller wakes its future at once, which polls again (and tries again),
    /// so it cannot wait forever.
    fn ensure_timer(self: &Arc<Self>, state: &mut State<E>) -> bool {
        if state.timer_running {
            return false;
        }
        state.timer_running = true;
        let queue = Arc::clone(self);
        let started = thread::Builder::new()
            .name("schedpool-delay-timer".into())
            .spawn(move || queue.run_timer());
        if started.is_err() {
            state.timer_running = false;
        }
        started.is_err()
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
            let head = state.head_deadline();
            let closed = state.closed;
            // Who is woken: everyone at a close; a take on the queue's timer once the head
            // is due; one on its own timer only for a head before the one it armed for.
            let woken = |w: &AsyncWaiter| {
                closed
                    || head.is_some_and(|d| match w.own_until {
                        None => d <= now,
                        Some(until) => d < until,
                    })
            };
            if state.async_waiters.iter().any(woken) {
                let mut wakers = Vec::new();
                let mut i = 0;
                while i < state.async_waiters.len() {
                    if woken(&state.async_waiters[i]) {
                        wakers.push(state.async_waiters.swap_remove(i).waker);
                    } else {
                        i += 1;
                    }
                }
                state.registrations_changed();
                // U1, U2: unlocked, and each waker through the door.
                unlocked(&mut state, || {
                    wakers.into_iter().for_each(crate::user::wake)
                });
                continue;
            }
            let on_queue_timer = state.queue_timed;
            if state.async_waiters.is_empty() {
                let lingered = !real
                    || closed
                    || Instant::now()
                        >= *linger_until.get_or_insert_with(|| Instant::now() + TIMER_LINGER);
                if lingered {
                    state.timer_running = false;
                    return;
                }
            } else {
                linger_until = None;
            }
            // I8: asleep until the first deadline after `now`, for the takes on this timer
            // (with them, that is the head: nothing is due) and for those that come while
            // it lingers after one; takes on their own timers need no deadline here. More than
            // FIRST_AFTER_BUDGET entries due and no waiter: not known, so every head and
            // every registration notifies.
            let next = if on_queue_timer || (state.async_waiters.is_empty() && !state.last_own) {
                state.store.first_after(now, FIRST_AFTER_BUDGET).flatten()
            } else {
                None
            };
            state.timer_until = next.unwrap_or(NEVER);
            let until = next.filter(|_| real).map(|d| self.clock.instant_of(d));
            let until = match (until, linger_until) {
                (Some(u), Some(l)) => Some(u.min(l)),
                (u, l) => u.or(l),
            };
            // Takes on their own timers leave without notifying (a ready poll): with only
            // them, the timer looks again every TIMER_LINGER, to linger and exit once they
            // are gone.
            let until = until.or_else(|| {
                (real && !on_queue_timer && !state.async_waiters.is_empty())
                    .then(|| Instant::now() + TIMER_LINGER)
            });
            wait(&self.timer_cv, &mut state, until);
        }
    }
}

/// What an async take of a queue holds (`DelayQueue::next_expired`, `expirations`): the
/// queue's core, and the number its waker is registered under there, so that dropping the
/// take removes its own registration and no other take's (I8 in `queue/mod.rs`).
pub(crate) struct AsyncTake<E> {
    queue: Arc<BlockingQueue<E>>,
    /// This take's number (process-wide unique).
    take: u64,
    /// A poll registered a waker that may still be in the queue.
    registered: bool,
    /// `on_tokio_timer`: the take sleeps on tokio's timer, armed at the head's deadline.
    #[cfg(feature = "tokio")]
    tokio_timer: Option<TokioTimer>,
}

/// A take's own timer on tokio (`on_tokio_timer`): armed at the head's deadline by each
/// pending poll; the queue's timer wakes the take only for an earlier head or a close.
#[cfg(feature = "tokio")]
#[derive(Default)]
struct TokioTimer {
    sleep: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    /// The deadline `sleep` is armed at.
    at: Option<Ticks>,
}

impl<E: Timed + Send + 'static> AsyncTake<E> {
    pub(crate) fn new(queue: &Arc<BlockingQueue<E>>) -> Self {
        AsyncTake {
            queue: Arc::clone(queue),
            take: crate::sync::unique_id(),
            registered: false,
            #[cfg(feature = "tokio")]
            tokio_timer: None,
        }
    }

    /// The queue taken from.
    pub(crate) fn queue(&self) -> &BlockingQueue<E> {
        &self.queue
    }

    /// From now on the take sleeps on tokio's timer where it can (`on_tokio_timer`).
    #[cfg(feature = "tokio")]
    pub(crate) fn use_tokio_timer(&mut self) {
        self.tokio_timer.get_or_insert_with(TokioTimer::default);
    }

    /// One poll of the async take.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<(E, Handle)>> {
        // A timer that reports its deadline passed as it is armed: look again, a few
        // times, then let the runtime poll again.
        for _ in 0..3 {
            let mut armed = None;
            let own = self.own_timer();
            let polled = self.queue.poll_take_keyed(cx, self.take, own, &mut armed);
            // A ready poll registered nothing; a pending one left its waker in the queue.
            self.registered = polled.is_pending();
            if !self.arm(cx, armed) {
                return polled;
            }
        }
        crate::user::call(|| cx.waker().wake_by_ref());
        Poll::Pending
    }

    /// Whether this poll sleeps on a timer of its own: asked for, on the real clock, in a
    /// tokio runtime's context.
    fn own_timer(&self) -> bool {
        #[cfg(feature = "tokio")]
        if self.tokio_timer.is_some() {
            return matches!(self.queue.clock(), Clock::Real { .. })
                && tokio::runtime::Handle::try_current().is_ok();
        }
        false
    }

    /// Arms the take's own timer at `armed` (a pending poll's head); `true` if it fired
    /// at once (the head is due by now: poll again).
    #[cfg_attr(not(feature = "tokio"), allow(unused_variables, clippy::unused_self))]
    fn arm(&mut self, cx: &mut Context<'_>, armed: Option<Ticks>) -> bool {
        #[cfg(feature = "tokio")]
        if let (Some(timer), Some(deadline)) = (self.tokio_timer.as_mut(), armed) {
            let at = tokio::time::Instant::from_std(self.queue.clock().instant_of(deadline));
            let sleep = match &mut timer.sleep {
                // Armed there already: polled again for this task's waker only.
                Some(sleep) if timer.at == Some(deadline) => sleep,
                Some(sleep) => {
                    sleep.as_mut().reset(at);
                    sleep
                }
                None => timer.sleep.insert(Box::pin(tokio::time::sleep_until(at))),
            };
            timer.at = Some(deadline);
            return std::future::Future::poll(sleep.as_mut(), cx).is_ready();
        }
        false
    }
}

impl<E> AsyncTake<E> {
    /// A poll registered a waker that may still be in the queue.
    pub(crate) fn registered(&self) -> bool {
        self.registered
    }
}

impl<E> Drop for AsyncTake<E> {
    fn drop(&mut self) {
        if self.registered {
            self.queue.forget_waker(self.take);
        }
    }
}
