//! [`Completion`]: the slot a task's outcome is delivered through, with its waiters.
//!
//! # Design
//! One mutex guards the outcome and the last async waker; one condition variable carries
//! the wake-up of threads blocked in [`Completion::wait`]. The task's author writes the
//! outcome once (T2, `task/mod.rs`); `get` or `poll` moves it out once.
//!
//! # Invariants
//! - K1: the slot goes `Waiting -> Ready -> Taken`, never back; `complete` is the only way
//!   into `Ready` and runs once per task (T2).
//! - K2: `complete` wakes every blocked waiter and the last registered waker after the
//!   slot is `Ready`, so no waiter misses the outcome.
//!
//! # Ordering
//! Everything goes through the mutex: the outcome written under it happens-before a
//! waiter's read under it.

use std::task::{Context, Poll, Waker};
use std::time::Instant;

use crate::error::TaskError;
use crate::sync::{Condvar, Mutex};

/// The slot a task's outcome is delivered through, with its waiters.
pub(crate) struct Completion<T> {
    slot: Mutex<Slot<T>>,
    /// Threads blocked in `wait`; notified after the slot becomes `Ready`.
    done: Condvar,
}

enum Slot<T> {
    /// Not done yet; the last async waker to be told.
    Waiting(Option<Waker>),
    Ready(Result<T, TaskError>),
    /// The outcome was moved out by `get` or `poll`.
    Taken,
}

impl<T> Completion<T> {
    pub(crate) fn new() -> Self {
        Completion {
            slot: Mutex::new(Slot::Waiting(None)),
            done: Condvar::new(),
        }
    }

    /// Stores the outcome and wakes every waiter (T2: called once).
    pub(crate) fn complete(&self, outcome: Result<T, TaskError>) {
        let waker = {
            let mut slot = self.slot.lock();
            match std::mem::replace(&mut *slot, Slot::Ready(outcome)) {
                Slot::Waiting(waker) => waker,
                previous => {
                    // T2 broken: keep the first outcome (drop the new one after unlocking).
                    debug_assert!(false, "a task completed twice");
                    let second = std::mem::replace(&mut *slot, previous);
                    drop(slot);
                    drop(second);
                    return;
                }
            }
        };
        // The slot is Ready before this notify; a waiter either saw it under the lock or is
        // parked on `done` already (it released the lock by waiting).
        self.done.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    #[cfg(test)]
    pub(crate) fn is_ready(&self) -> bool {
        !matches!(*self.slot.lock(), Slot::Waiting(_))
    }

    /// Blocks until the outcome is stored, or `until` passes; `true` if it is stored.
    pub(crate) fn wait(&self, until: Option<Instant>) -> bool {
        let mut slot = self.slot.lock();
        while matches!(*slot, Slot::Waiting(_)) {
            match until {
                None => self.done.wait(&mut slot),
                Some(until) => {
                    if self.done.wait_until(&mut slot, until) {
                        return !matches!(*slot, Slot::Waiting(_));
                    }
                }
            }
        }
        true
    }

    /// Moves the outcome out after `wait` returned true.
    ///
    /// # Panics
    /// If the outcome was already taken (the future was polled to completion before).
    pub(crate) fn take(&self) -> Result<T, TaskError> {
        match std::mem::replace(&mut *self.slot.lock(), Slot::Taken) {
            Slot::Ready(outcome) => outcome,
            Slot::Waiting(_) => unreachable!("take before the task completed"),
            Slot::Taken => panic!("ScheduledFuture outcome taken twice (polled after Ready?)"),
        }
    }

    /// The `Future::poll` of a `ScheduledFuture`.
    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<Result<T, TaskError>> {
        let mut slot = self.slot.lock();
        match &mut *slot {
            Slot::Waiting(waker) => {
                if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
            Slot::Ready(_) => match std::mem::replace(&mut *slot, Slot::Taken) {
                Slot::Ready(outcome) => Poll::Ready(outcome),
                _ => unreachable!(),
            },
            Slot::Taken => panic!("ScheduledFuture polled after it returned Ready"),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn completion_wait_times_out_and_wakes() {
        let c = Arc::new(Completion::<u8>::new());
        assert!(!c.wait(Some(Instant::now() + Duration::from_millis(5))));
        let c2 = c.clone();
        let waiter = std::thread::spawn(move || c2.wait(None));
        c.complete(Ok(3));
        assert!(waiter.join().unwrap());
        assert!(c.is_ready());
        assert_eq!(c.take().unwrap(), 3);
    }
}
