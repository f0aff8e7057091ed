//! What surrounds a user's closure when it runs: the layer between the public handle
//! (`executor/`, which chooses the wrappers a submission asks for) and the task layer
//! (`task/`, which calls a body through `task::OnceBody` or `task::PeriodicBody`). The
//! pool never sees these types: it queues a task whatever its body.
//!
//! - `span.rs`: the link of a run's `task` span to the submitter's span (`Linked`,
//!   `link_to`, `submitter_span`).
//! - `context.rs`: [`TaskContext`], what a running task knows about itself, and the
//!   adaptors that give it to a closure (`WithContext`), turn a fallible body's errors
//!   into a policy (`Fallible`), and add a periodic spec's span link and cluster lock
//!   around each run (`Guarded`).
//! - `async_run.rs`: async bodies (`Async`): a closure that makes a future per run,
//!   awaited on the job's worker through an [`AsyncRuntime`](crate::AsyncRuntime), and
//!   dropped at an interrupt or `shutdown_now`.
//! - `exclusive.rs`: the locked run (`run_locked`, the one place where a run takes its
//!   cluster lock, runs, keeps its lease alive and gives it back), the exclusive
//!   one-shot (`LockedOnce`) and the catch-up question (`owes_catch_up`). The lease
//!   protocol itself (LK1–LK5) is `cluster/`'s.
//!
//! Dependencies point down: `body/` uses `task/`'s traits and `cluster/`'s lease types;
//! neither of them uses `body/`.

mod async_run;
mod context;
mod exclusive;
mod span;

pub(crate) use async_run::{Async, SendAsync};
pub use context::TaskContext;
pub(crate) use context::{Fallible, Guarded, WithContext};
pub(crate) use exclusive::{
    owes_catch_up, run_locked, Ledger, Locked, LockedOnce, NestedShape, OutcomeShape,
};
pub(crate) use span::{submitter_span, Linked};
