//! A task's state machine: one `AtomicU8`, its named states and its transitions.
//!
//! ```text
//!   SCHEDULED --start--> RUNNING --finish, one-shot-----------> DONE
//!       |                   |-----finish, periodic------------> SCHEDULED (next deadline)
//!       |                   |-----panic-----------------------> PANICKED
//!       |                   '-----cancel (periodic), --------> CANCELLED (this run completes;
//!       |                         interrupt (any)                          no re-enqueue)
//!       |--cancel--> CANCELLED
//!       '--end unrun (periodic)--> DONE or PANICKED
//! ```
//!
//! The last edge is `PeriodicTask::finish_unrun` (`periodic.rs`): a periodic task that
//! never runs ends at once, DONE for `max_runs(0)` or a trigger with no first deadline,
//! PANICKED for a `first_deadline` that panicked (`pool/shared.rs`).
//!
//! DONE, PANICKED and CANCELLED are terminal. Only [`TaskState::start`] enters RUNNING,
//! and only from SCHEDULED, so two runs of one task never overlap (T1, `task/mod.rs`). A
//! one-shot that has started cannot be cancelled by `cancel`: it returns false and the
//! run's outcome stands. An *interrupt* (`ScheduledFuture::interrupt`, Java's
//! `cancel(true)`) cancels a running one-shot too: the future reports `Cancelled` at once,
//! the run goes on until its closure notices (`TaskContext::is_cancelled`) or ends, and
//! its runner, whose RUNNING -> DONE exchange then fails, drops the output.
//!
//! # Ordering
//! Every transition is an `AcqRel` compare-exchange and every read an `Acquire` load. A
//! canceller that wins sees everything the scheduler wrote before queueing; a runner that
//! starts sees the same; whoever reads a terminal state sees the writes of the thread
//! that stored it, in particular the effects of the run before DONE or PANICKED (the
//! outcome itself travels through the `Completion` mutex, which orders it on its own).
//! There are no plain stores: every change of state is one of the exchanges below.

use crate::sync::Ordering;

use crate::sync::AtomicU8;

pub(crate) const SCHEDULED: u8 = 0;
pub(crate) const RUNNING: u8 = 1;
pub(crate) const DONE: u8 = 2;
pub(crate) const PANICKED: u8 = 3;
pub(crate) const CANCELLED: u8 = 4;

/// DONE, PANICKED or CANCELLED.
#[inline]
pub(crate) fn is_terminal(s: u8) -> bool {
    s >= DONE
}

/// The name of a state, for `Debug` output.
pub(crate) fn name(s: u8) -> &'static str {
    match s {
        SCHEDULED => "scheduled",
        RUNNING => "running",
        DONE => "done",
        PANICKED => "panicked",
        CANCELLED => "cancelled",
        _ => "invalid",
    }
}

/// The atomic state word of one task (see the module diagram).
#[derive(Debug)]
pub(crate) struct TaskState(AtomicU8);

impl TaskState {
    pub(crate) fn new() -> Self {
        TaskState(AtomicU8::new(SCHEDULED))
    }

    /// The current state. Acquire: pairs with the AcqRel exchange that stored it.
    #[inline]
    pub(crate) fn load(&self) -> u8 {
        self.0.load(Ordering::Acquire)
    }

    /// SCHEDULED -> RUNNING (T1). `false` if the task is not SCHEDULED (cancelled).
    #[must_use]
    #[inline]
    pub(crate) fn start(&self) -> bool {
        self.transition(SCHEDULED, RUNNING)
    }

    /// -> CANCELLED from SCHEDULED, or from RUNNING when `periodic`. `true` if this call
    /// made the transition (T2: the caller must then run `Job::finish_cancelled`).
    #[must_use]
    pub(crate) fn cancel(&self, periodic: bool) -> bool {
        let mut cur = self.0.load(Ordering::Acquire);
        loop {
            let allowed = cur == SCHEDULED || (cur == RUNNING && periodic);
            if !allowed {
                return false;
            }
            // AcqRel: see the module notes.
            match self
                .0
                .compare_exchange_weak(cur, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }

    /// -> CANCELLED from SCHEDULED or RUNNING, whatever the kind (an interrupt). `true` if
    /// this call made the transition (T2, as for [`cancel`](Self::cancel)).
    #[must_use]
    pub(crate) fn interrupt(&self) -> bool {
        self.cancel(true)
    }

    /// `from` -> `to`; `true` if this call made it.
    #[must_use]
    #[inline]
    pub(crate) fn transition(&self, from: u8, to: u8) -> bool {
        // AcqRel: see the module notes.
        self.0
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn only_scheduled_starts_and_cancel_respects_the_kind() {
        let s = TaskState::new();
        assert!(s.start());
        assert!(!s.start(), "T1: no second start");
        assert!(!s.cancel(false), "a running one-shot is not cancellable");
        assert!(s.cancel(true), "a running periodic task is");
        assert!(!s.cancel(true), "T2: one cancel wins");
        assert!(is_terminal(s.load()));
        assert_eq!(name(s.load()), "cancelled");
    }
}
