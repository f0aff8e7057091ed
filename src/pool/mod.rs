//! The machinery behind [`ScheduledThreadPoolExecutor`](crate::ScheduledThreadPoolExecutor):
//! `Shared` (`shared.rs`), the control state (`control.rs`) and the worker lifecycle
//! (`worker.rs`).
//!
//! # Design
//! The executor's control state (`Control`, `control.rs`) lives inside the queue's lock, beside the
//! heap, instead of under a second lock or in a packed atomic like Java's `ctl`. That makes
//! the questions that matter for liveness single critical sections: "accept this task and
//! is a worker there to run it?", "may this idle worker exit, or is the queue non-empty?",
//! "has shutdown been requested, and is the queue drained?". Submission already takes the
//! lock to push, so accounting costs no extra synchronisation on the hot path.
//!
//! Run states (Java's RUNNING / SHUTDOWN / STOP; TIDYING is not needed because
//! termination is one flag set under the lock):
//!
//! ```text
//!   Running --shutdown--> Shutdown --shutdown_now--> Stop
//!      '-----------shutdown_now------------------------^
//!   terminated = (run_state >= Shutdown && threads == 0), latched once true
//! ```
//!
//! # Invariants
//! - E1: every accepted task is queued while `workers >= 1`: a submission that finds no
//!   worker reserves one in the same critical section, and a worker decides to exit only
//!   under the lock, only if the heap is empty or another worker remains.
//! - E2: once `run_state >= Shutdown` no new task is accepted; a periodic task is re-queued
//!   only if `continue_existing_periodic_tasks_after_shutdown` allows it, decided under the
//!   lock, so a re-queue cannot race past `shutdown`.
//! - E3: whenever the heap becomes empty after shutdown, every waiting worker is woken so
//!   it can exit (`wake_if_drained`); so termination never waits for a deadline that no
//!   longer exists.
//! - E4: the policy flags are written under the lock; readers under the lock see the value
//!   that `shutdown` and the re-queue check agree on.
//! - E5: `threads >= workers`; `terminated` is set exactly once, under the lock, when the
//!   last thread has run its stop hook after shutdown.
//!
//! # Ordering
//! Atomics outside the lock: `core_pool_size` and the policy flags (`Relaxed`: settings read
//! under the lock or as hints; the lock orders what matters, E4), `is_shutdown` (a
//! `Relaxed` mirror of `run_state` for `is_shutdown()`; decisions re-read `run_state` under
//! the lock), `handles` (`AcqRel` so the last handle's drop sees all earlier uses), and the
//! statistics counters (`stats.rs`).

mod control;
mod shared;
mod worker;

pub(crate) use shared::Shared;
pub(crate) use worker::is_worker_of;

/// The executor's policy flags with setters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Java `continueExistingPeriodicTasksAfterShutdown`.
    ContinuePeriodic,
    /// Java `executeExistingDelayedTasksAfterShutdown`.
    ExecuteDelayed,
    /// Java `removeOnCancel`.
    RemoveOnCancel,
}
