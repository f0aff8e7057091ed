//! `ScheduledFutureTask`: what a task is to the queue, the workers and its futures.
//!
//! # Design
//! A task is one allocation that starts with its [`Header`] (state word, deadline, queue
//! position, reference count, vtable). The queue, the workers and the handles hold it
//! through a [`TaskRef`], a counted thin pointer (`raw/`: tokio's `RawTask` shape); a
//! [`ScheduledFuture`](crate::ScheduledFuture) holds a [`TypedRef`], which also knows the
//! output type. A one-shot keeps its closure, then its outcome, in one slot guarded by
//! flags in its state word (`raw/`, R4); its waiters wait in a table outside it
//! (`waiting.rs`). A periodic task keeps the mutex-guarded stage of `completion.rs`, which
//! its runs put the closure back into.
//!
//! - `header.rs`: the [`Header`], what every holder sees (T4 for its deadline word).
//! - `run.rs`: what a run sees and runs: [`RunEnv`], [`RunCx`], [`Host`] (the pool as a
//!   run and a handle see it), the body traits ([`OnceBody`], [`PeriodicBody`],
//!   [`Plain`]), [`Label`], [`RunReport`].
//! - `state.rs`: the state machine (diagram there) and its flags, one `AtomicU8`.
//! - `raw/`: the one `unsafe` module: [`TaskRef`] (`ptr.rs`) and a one-shot's slot
//!   (`slot.rs`), R1–R4 in its `mod.rs`.
//! - `waiting.rs`: the waiter table of one-shots.
//! - `completion.rs`: a periodic task's stage and its waiters.
//! - `once.rs`: [`OnceTask`], a one-shot (Java: `ScheduledFutureTask` with `period == 0`).
//! - `periodic.rs`: [`PeriodicTask`], run with `run_and_reset` semantics and re-queued by
//!   the worker; its next deadline comes from its `Schedule` (`schedule.rs`), unless its
//!   handles moved it or asked for an extra run (`next.rs`: [`PeriodicControl`]).
//!
//! # Invariants
//! - T1: at most one thread is between a successful `start` and the end of that run. (An
//!   interrupt moves a running task to CANCELLED; its runner is still the only thread in
//!   the run, and its own terminal exchange then fails.)
//! - T2: exactly one transition into a terminal state succeeds; its author, and only it,
//!   completes the task for its futures: a one-shot's runner stores the outcome before
//!   that transition (`raw/`, R4) and wakes the waiters after it (`waiting.rs`, A1); a
//!   periodic task's author completes its [`Completion`].
//! - T3: the closure lives in the task while SCHEDULED. The thread that moved the task to
//!   RUNNING takes it out for the run. A one-shot's canceller takes it after its own
//!   exchange (R4: the `CLOSURE` flag is cleared once). A periodic run puts it back only
//!   if its RUNNING -> SCHEDULED exchange succeeds, which it attempts while holding the
//!   stage's lock, and a periodic canceller takes whatever is in the stage in the
//!   critical section that stores `Cancelled`. So exactly one thread drops the closure,
//!   and a cancelled task never keeps it.
//! - T4: `Header::position`, `Header::when` while the task is queued (its sequence
//!   number), and a periodic task's [`NextRun`](next::NextRun) cells (NX1 in `next.rs`)
//!   are read and written only under the lock of the task's home shard (`Header::home`,
//!   `queue/sharded.rs`);
//!   their types (`queue::Position`, `queue::LockedCell`) make that a fact: only the
//!   shard's store, through its guard, reaches their contents (I6 in `queue/mod.rs`).
//!
//! # Ordering
//! The state word's orderings are in `state.rs`. `when` (the deadline out of the queue,
//! the sequence number in it) is `Relaxed`: out of the queue it is written by whoever
//! owns the task's schedule at that moment (the submitter before publishing it, the
//! running worker), and in the queue only under the home shard's lock, which also hands
//! the deadline back when the node leaves; its readers that matter (the worker that runs
//! the task: the next deadline, `max_lateness`, `TaskContext::deadline`; a future's
//! `deadline`, which reads under that lock) got the task or the value through the home
//! shard's lock, which orders the store before their load.
//! `position` and the `NextRun` cells are ordered by the home shard's lock (T4).
//!
//! # Memory
//! A pending one-shot with a closure and output of at most 8 bytes each is a 40-byte
//! block, a 48-byte malloc chunk: the 32-byte header and the 8-byte slot; its queue node
//! is 16 bytes (`pool/entry.rs`, `Entry`)
//! (`docs/DESIGN.md`, "Memory"; a unit test in `raw/tests.rs` pins the sizes). The header holds
//! only what every task needs; what only periodic tasks need (`NextRun`, the stage's
//! mutex) lives in [`PeriodicTask`], and a task's number for logs fits in the bytes the
//! header's alignment would otherwise leave as padding.

mod completion;
mod header;
mod next;
mod once;
mod periodic;
mod permits;
mod raw;
mod run;
pub(crate) mod sleepers;
pub(crate) mod state;
mod suspended;
mod waiting;

#[cfg(all(test, loom))]
mod loom;

use crate::schedule::Schedule;
use crate::stats::LastRun;

pub(crate) use completion::{Completion, Outcome};
pub(crate) use header::{Header, NO_DEADLINE};
pub(crate) use next::{Extra, PeriodicControl};
pub(crate) use once::OnceTask;
pub(crate) use periodic::PeriodicTask;
pub(crate) use permits::{AsyncPermits, Permit};
pub(crate) use raw::{TaskRef, TypedRef};
use run::count_run;
pub(crate) use run::{
    Declined, Handoff, Host, Label, OnceBody, OnceResume, Pending, PeriodicBody, Plain, Ran,
    Resumed, RunCx, RunEnv, RunReport, Step, TaskName, ToWorker, HANDED,
};
pub(crate) use suspended::{Polled, Suspended};

/// A task as the queue and the workers see it.
pub(crate) trait Task: Send + Sync {
    fn header(&self) -> &Header;

    /// The header, mutably, before the task is shared: a task type a [`TaskRef`] holds
    /// has its [`Header`] as its first field under `#[repr(C)]` (R1 in `raw/mod.rs`;
    /// `TaskRef::new` checks it), and hands it out here (R2).
    fn header_mut(&mut self) -> &mut Header
    where
        Self: Sized;

    /// The task as `Any`, for a continuation that knows its task's type (`suspended.rs`:
    /// a run resumed by another thread reaches its task through its `TaskRef`).
    fn as_any(&self) -> &dyn std::any::Any;

    /// A waker of the task was woken ([`TaskRef::with_waker`]; `me` is the waker's
    /// reference): a suspended run queues itself (`suspended.rs`). Nothing for any other
    /// task, which makes no wakers.
    fn wake(&self, _me: &TaskRef) {}

    /// What a periodic task's handles control (`next.rs`): where it goes at its next
    /// re-queue (T4) and its pause switch; `None` for a one-shot, which is never re-queued
    /// or paused.
    fn periodic(&self) -> Option<&PeriodicControl> {
        None
    }

    /// When the task runs (the `kind` of its `task` span).
    fn schedule(&self) -> &Schedule;

    /// The task's name, if it was given one (`Periodic::name`, `named`).
    fn name(&self) -> Option<&str> {
        None
    }

    /// A named task's run-time series (feature `metrics`, `telemetry.rs`).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))] // read by the worker with the feature
    fn timer(&self) -> Option<&crate::telemetry::TaskTimer> {
        None
    }

    /// Runs so far, how the last one went and when it started, for a snapshot
    /// (`TaskInfo`); a one-shot has none (its run is the worker's, `pool/running.rs`).
    fn record(&self) -> Record {
        Record::default()
    }

    /// Runs the task once on a worker (Java: `run`, or `runAndReset` for a periodic task),
    /// in the environment `env` (its `now` is the time the worker took it).
    fn run(&self, env: &RunEnv<'_>) -> RunReport;

    /// Runs the task once on this thread for a `PendingTask` or `CallerRuns` (`env.now`:
    /// the clock's reading now): a one-shot completes; a periodic task runs once and then,
    /// if `then_cancel`, ends cancelled. Returns the report (`next` is set for a periodic
    /// task that may continue).
    fn run_now(&self, env: &RunEnv<'_>, then_cancel: bool) -> RunReport;

    /// After `Header::cancel` returned true: drops the closure (if this thread holds the
    /// last copy, T3) and completes the future with `Cancelled` (T2). Never under a lock.
    fn finish_cancelled(&self);
}

/// What a snapshot shows of a task's runs ([`Task::record`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct Record {
    /// Runs so far (skipped ones excluded).
    pub(crate) runs: u64,
    /// How the last run went.
    pub(crate) last: Option<LastRun>,
    /// When the last run (or skip) started.
    pub(crate) started: Option<crate::clock::Ticks>,
    /// The cluster-wide pause the last run found (an exclusive task's).
    pub(crate) pause: Option<crate::cluster::Pause>,
}

/// A task whose output type is known: what a `ScheduledFuture<T>` holds.
pub(crate) trait TypedTask<T>: Task {
    /// Where the outcome is delivered (a one-shot itself, `once.rs`; a periodic task's
    /// `Completion`).
    fn outcome(&self) -> &dyn Outcome<T>;
}

/// Helpers the task modules' unit tests share.
#[cfg(all(test, not(loom)))]
pub(crate) mod testing {
    use crate::clock::Clock;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A fresh manual clock.
    pub(crate) fn clock() -> Clock {
        Clock::Manual(crate::ManualClock::new())
    }

    /// The environment of a bare task's run at `now` (no pool, no counters).
    pub(crate) fn env(clock: &Clock, now: crate::clock::Ticks) -> super::RunEnv<'_> {
        super::RunEnv {
            now,
            clock,
            counters: None,
            task: None,
            pool: None,
            on_worker: false,
            handoff: None,
        }
    }

    /// Counts drops of the value it is captured in.
    pub(crate) struct DropCount(pub(crate) Arc<AtomicUsize>);

    impl Drop for DropCount {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Drops a user value, its destructor's panic contained (the door, `user.rs`).
pub(crate) use crate::user::drop_quietly;

/// How many registrations the waiter table holds for the one-shot at `key` (the loom
/// models; A2 in `waiting.rs`).
#[cfg(all(test, loom))]
pub(crate) fn waiter_count(key: usize) -> usize {
    waiting::count(key)
}
