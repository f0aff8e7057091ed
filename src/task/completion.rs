//! [`Completion`]: a periodic task's stage, the one slot that holds first its closure and
//! then its outcome, with the waiters of its futures. (A one-shot keeps neither a mutex nor
//! room for waiters: its slot is in `raw/slot.rs`, its waiters in `waiting.rs`.)
//!
//! # Design
//! One mutex guards the stage: `Pending` (the closure while the task is not running, and
//! whoever waits) until the task ends, then `Ready` (the outcome), then `Taken`. Closure
//! and outcome share the storage, as tokio's `Stage` does, and one lock covers both, so a
//! cancel takes the closure and stores `Cancelled` in one critical section and `get` on a
//! finished future waits and takes in one.
//!
//! Nothing is kept for waiters until someone waits: most periodic tasks are never waited
//! for (nobody blocks on a job that runs until the pool stops). The first waiter boxes a
//! [`Waiters`] into the stage: the last async waker of `poll`, and the threads blocked in
//! [`Outcome::wait`], which park (`sync::park_until`, loom's in the models) and are
//! unparked by the completion. A per-task condition variable would cost 8 bytes in every
//! task, which is what kept a one-shot in an 80-byte malloc chunk while one-shots still
//! used this stage (`docs/DESIGN.md`, Memory).
//!
//! # Invariants
//! - K1: the stage goes `Pending -> Ready -> Taken`, never back; [`Completion::complete`]
//!   and [`Completion::cancel`] are the only ways into `Ready` and their caller won the
//!   task's terminal transition (T2), so the outcome is written once.
//! - K2: a waiter registers itself in the critical section in which it saw `Pending`;
//!   whoever moves the stage to `Ready` takes the registrations in its critical section
//!   and, after unlocking, wakes the waker and unparks every thread. So a waiter either
//!   sees `Ready` or is woken after it (an unpark that comes before the park makes the
//!   park return at once).
//! - K3 (T3's storage): the closure is in the stage only while `Pending`; the thread that
//!   takes it out owns it, and a periodic run puts it back only together with its
//!   RUNNING -> SCHEDULED exchange ([`Completion::put_back`]).
//!
//! # Ordering
//! Everything goes through the mutex: the outcome written under it happens-before a
//! waiter's read under it. Park and unpark carry no data; a woken thread re-checks under
//! the lock.

use std::task::{Context, Poll, Waker};
use std::time::Instant;

use crate::error::TaskError;
use crate::sync::{park_until, thread, Mutex};
use crate::user;

/// A task's stage; `B` is what the task keeps while pending (its closure), `T` its output.
pub(crate) struct Completion<B, T> {
    stage: Mutex<Stage<B, T>>,
}

enum Stage<B, T> {
    /// Not done yet: the closure (`None` while a run holds it) and, once someone waits,
    /// the waiters (K2).
    Pending {
        body: Option<B>,
        waiters: Option<Box<Waiters>>,
    },
    Ready(Result<T, TaskError>),
    /// The outcome was moved out by `get` or `poll`.
    Taken,
}

/// Who waits for a pending task (K2).
#[derive(Default)]
struct Waiters {
    /// The last waker a `poll` registered.
    waker: Option<Waker>,
    /// Threads blocked in `wait`, one entry per blocked call.
    threads: Vec<thread::Thread>,
}

impl Waiters {
    /// K2: after the stage became `Ready`, outside the lock. The threads first, then the
    /// waker through the door (U2 in `user.rs`): its panic is contained, so every waiter
    /// is woken whatever the waker does.
    fn wake(self) {
        for t in self.threads {
            t.unpark();
        }
        if let Some(waker) = self.waker {
            user::wake(waker);
        }
    }
}

/// What a future needs from a task's completion, whatever the task's closure type.
pub(crate) trait Outcome<T>: Send + Sync {
    /// Blocks until the outcome is stored, or `until` passes; `true` if it is stored.
    fn wait(&self, until: Option<Instant>) -> bool;

    /// Blocks until the outcome is stored and moves it out.
    ///
    /// # Panics
    /// If the outcome was already taken (the future was polled to completion before).
    fn wait_take(&self) -> Result<T, TaskError>;

    /// The `Future::poll` of a `ScheduledFuture`.
    fn poll(&self, cx: &mut Context<'_>) -> Poll<Result<T, TaskError>>;

    /// `true` once the outcome is stored (or taken).
    #[cfg(test)]
    fn is_ready(&self) -> bool;
}

impl<B, T> Completion<B, T> {
    pub(crate) fn new(body: B) -> Self {
        Completion {
            stage: Mutex::new(Stage::Pending {
                body: Some(body),
                waiters: None,
            }),
        }
    }

    /// Takes the closure out (K3): `None` if a run holds it or the task has ended.
    pub(crate) fn take_body(&self) -> Option<B> {
        match &mut *self.stage.lock() {
            Stage::Pending { body, .. } => body.take(),
            Stage::Ready(_) | Stage::Taken => None,
        }
    }

    /// Puts a periodic task's closure back if `exchange` (its RUNNING -> SCHEDULED
    /// transition, attempted under this lock) succeeds; else hands it back to the caller
    /// to drop outside the lock (K3).
    pub(crate) fn put_back(&self, b: B, exchange: impl FnOnce() -> bool) -> Option<B> {
        let mut stage = self.stage.lock();
        match &mut *stage {
            Stage::Pending { body, .. } if exchange() => {
                debug_assert!(body.is_none(), "K3: one closure");
                *body = Some(b);
                None
            }
            _ => Some(b),
        }
    }

    /// Stores the outcome and wakes every waiter (K1, K2: called once, by the author of
    /// the terminal transition).
    pub(crate) fn complete(&self, outcome: Result<T, TaskError>) {
        let (waiters, leftover) = {
            let mut stage = self.stage.lock();
            match std::mem::replace(&mut *stage, Stage::Ready(outcome)) {
                Stage::Pending { body, waiters } => (waiters, body),
                previous => {
                    // K1 broken: keep the first outcome (drop the new one after unlocking).
                    debug_assert!(false, "a task completed twice");
                    let second = std::mem::replace(&mut *stage, previous);
                    drop(stage);
                    drop(second);
                    return;
                }
            }
        };
        debug_assert!(leftover.is_none(), "K3: the closure left before completion");
        drop(leftover);
        if let Some(w) = waiters {
            w.wake();
        }
    }

    /// For a cancel that won its transition (T2): takes the closure out (for the caller
    /// to drop, outside the lock) and stores `Cancelled`, in one critical section (K1,
    /// K2, K3).
    pub(crate) fn cancel(&self) -> Option<B> {
        let (waiters, body) = {
            let mut stage = self.stage.lock();
            match std::mem::replace(&mut *stage, Stage::Ready(Err(TaskError::Cancelled))) {
                Stage::Pending { body, waiters } => (waiters, body),
                previous => {
                    debug_assert!(false, "a cancelled task had completed");
                    *stage = previous;
                    return None;
                }
            }
        };
        if let Some(w) = waiters {
            w.wake();
        }
        body
    }
}

impl<B: Send, T: Send> Outcome<T> for Completion<B, T> {
    fn wait(&self, until: Option<Instant>) -> bool {
        // This thread's handle, fetched only once it has to wait (a reference count).
        let mut me: Option<thread::Thread> = None;
        loop {
            {
                let mut stage = self.stage.lock();
                let Stage::Pending { waiters, .. } = &mut *stage else {
                    return true;
                };
                if me.is_none() {
                    // K2: registered in the critical section that saw Pending.
                    let current = thread::current();
                    let list = waiters.get_or_insert_with(Box::default);
                    list.threads.push(current.clone());
                    me = Some(current);
                }
            }
            if park_until(until) {
                let me = me.as_ref().expect("registered before parking");
                // Timed out: leave the list (a completion may have come meanwhile).
                let mut stage = self.stage.lock();
                let Stage::Pending { waiters, .. } = &mut *stage else {
                    return true;
                };
                if let Some(w) = waiters {
                    if let Some(i) = w.threads.iter().position(|t| t.id() == me.id()) {
                        w.threads.swap_remove(i);
                    }
                }
                return false;
            }
        }
    }

    fn wait_take(&self) -> Result<T, TaskError> {
        let mut stage = self.stage.lock();
        if matches!(*stage, Stage::Pending { .. }) {
            drop(stage);
            self.wait(None);
            stage = self.stage.lock();
        }
        match std::mem::replace(&mut *stage, Stage::Taken) {
            Stage::Ready(outcome) => outcome,
            Stage::Pending { .. } => unreachable!("waited until not pending"),
            Stage::Taken => panic!("ScheduledFuture outcome taken twice (polled after Ready?)"),
        }
    }

    fn poll(&self, cx: &mut Context<'_>) -> Poll<Result<T, TaskError>> {
        let mut stage = self.stage.lock();
        let mut fresh = None;
        loop {
            match &mut *stage {
                Stage::Pending { waiters, .. } => {
                    // K2: registered in the critical section that saw Pending.
                    let w = waiters.get_or_insert_with(Box::default);
                    if w.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        drop(stage);
                        if let Some(unused) = fresh {
                            user::drop_waker(unused);
                        }
                        return Poll::Pending;
                    }
                    if let Some(new) = fresh.take() {
                        let old = w.waker.replace(new);
                        drop(stage);
                        // U1: the replaced waker's drop is user code, outside the lock.
                        if let Some(old) = old {
                            user::drop_waker(old);
                        }
                        return Poll::Pending;
                    }
                    // U1: the clone is user code: made with the lock released, then the
                    // stage is looked at again.
                    drop(stage);
                    fresh = Some(user::call(|| cx.waker().clone()));
                    stage = self.stage.lock();
                }
                Stage::Ready(_) => {
                    let Stage::Ready(outcome) = std::mem::replace(&mut *stage, Stage::Taken) else {
                        unreachable!()
                    };
                    drop(stage);
                    if let Some(unused) = fresh {
                        user::drop_waker(unused);
                    }
                    return Poll::Ready(outcome);
                }
                Stage::Taken => {
                    drop(stage);
                    panic!("ScheduledFuture polled after it returned Ready")
                }
            }
        }
    }

    #[cfg(test)]
    fn is_ready(&self) -> bool {
        !matches!(*self.stage.lock(), Stage::Pending { .. })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn completion_wait_times_out_and_wakes() {
        let c = Arc::new(Completion::<(), u8>::new(()));
        assert!(!c.wait(Some(Instant::now() + Duration::from_millis(5))));
        assert_eq!(
            c.take_body(),
            Some(()),
            "K3: the closure leaves before the run"
        );
        let c2 = c.clone();
        let waiter = std::thread::spawn(move || c2.wait(None));
        c.complete(Ok(3));
        assert!(waiter.join().unwrap());
        assert!(c.is_ready());
        assert_eq!(c.wait_take().unwrap(), 3);
    }

    #[test]
    fn cancel_hands_the_closure_back_and_stores_cancelled() {
        let c = Completion::<u8, ()>::new(7);
        assert_eq!(c.cancel(), Some(7));
        assert!(c.wait_take().unwrap_err().is_cancelled());
        assert_eq!(c.take_body(), None, "K1: never back to pending");
    }

    #[test]
    fn put_back_only_with_a_successful_exchange() {
        let c = Completion::<u8, ()>::new(1);
        let b = c.take_body().unwrap();
        assert_eq!(
            c.put_back(b, || false),
            Some(1),
            "a failed exchange hands it back"
        );
        assert_eq!(c.put_back(1, || true), None);
        assert_eq!(c.take_body(), Some(1));
    }

    #[test]
    fn many_blocked_waiters_are_all_woken_and_a_timed_out_one_leaves_the_list() {
        let c = Arc::new(Completion::<(), u8>::new(()));
        // A waiter that gives up leaves no registration behind.
        for _ in 0..3 {
            assert!(!c.wait(Some(Instant::now() + Duration::from_millis(1))));
        }
        match &*c.stage.lock() {
            Stage::Pending { waiters, .. } => {
                assert_eq!(waiters.as_ref().map_or(0, |w| w.threads.len()), 0)
            }
            _ => panic!("still pending"),
        }
        assert_eq!(
            c.take_body(),
            Some(()),
            "K3: the run takes the closure first"
        );
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || c.wait(None))
            })
            .collect();
        c.complete(Ok(1));
        for w in waiters {
            assert!(w.join().unwrap());
        }
        assert!(
            c.wait(Some(Instant::now())),
            "a finished task needs no wait"
        );
    }
}
