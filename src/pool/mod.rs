//! The machinery behind [`ScheduledThreadPoolExecutor`](crate::ScheduledThreadPoolExecutor):
//! `Pool` (`shared.rs`: its fields and reads), split by protocol into submission
//! (`submit.rs`: E1, E2), the task handles' requests (`host.rs`), shutdown (`shutdown.rs`:
//! E3–E5), the worker lifecycle (`worker.rs`: WK1–WK2), the control state (`control.rs`),
//! the workers' runs in progress (`running.rs`: RN1–RN2), the snapshots (`introspect.rs`)
//! and, with the `metrics` feature, the publications (`publish.rs`: MX1–MX2); the queue's
//! node is `entry.rs`.
//!
//! # Design
//! Five pieces of state, each with its own guard:
//!
//! - the **control word** (`control.rs`): run state, worker reservations and threads
//!   still working, one packed atomic like Java's `ctl`, plus the termination latch. Read
//!   without a lock by `is_shutdown`, `stats`, the thread-exit path and `Debug`;
//! - the **queue** (`queue/sharded.rs`): one shard per CPU, each a heap and a ready lane
//!   under its own lock, with [`Tally`] beside it; a coordinator lock for the waiting
//!   workers; `active` (takes not yet finished) counted by the queue in the critical
//!   section of the take;
//! - the **runs in progress** (`running.rs`): one mutex per worker's run slot, filled in
//!   the popping shard's critical section, and a registry mutex over the slots. Lock
//!   order: a shard's lock before a slot's (RN1);
//! - the **sleepers** (`task/sleepers.rs`): the runs asleep in `TaskContext::sleep` or
//!   awaiting in an async body, under their own lock, never taken with a shard's (S1, S2);
//! - settings (`core_pool_size`, the policy flags, the core-size `epoch`) in their own
//!   atomics; with the `metrics` feature, the counts already handed to the recorder under
//!   `Pool::handed`'s lock (MX2).
//!
//! A thread submits into its own shard; a task keeps that shard (its *home*) for life, and
//! its cancel, reschedule and re-queue lock only it. So the common operations take one
//! shard's lock, and the liveness questions ("accept this task, and is a worker there to
//! run it?", "may this worker exit, or is a task queued?", "was this submission before or
//! after shutdown?") are answered by reading or exchanging the control word *inside* the
//! critical sections where the queue part is decided, as E1 and E2 say: a submission in
//! its shard's, a worker's exit and shutdown's passes under *every* shard's lock. Any
//! shard's critical section and an every-shard one are ordered by that shard's lock;
//! whichever comes second sees the other's effect on both the queue and the word
//! (coherence does the rest: a load that happens after a store sees it or a later one).
//!
//! Run states (Java's RUNNING / SHUTDOWN / STOP; TIDYING is not needed because
//! termination is one latch):
//!
//! ```text
//!   Running --shutdown--> Shutdown --shutdown_now--> Stop
//!      '-----------shutdown_now------------------------^
//!   terminated = run_state >= Shutdown && threads == 0 (threads counts finishers too),
//!                latched once by the exchange that makes it true
//! ```
//!
//! # Invariants
//! - E1 (reserve-then-publish): a queued task always has a worker reservation. A
//!   submission reads the word, reserves a worker if fewer than the core size are
//!   reserved (one when the core size is 0), and pushes, all in the critical section of
//!   the submitting thread's shard (`Pool::publish`). A worker gives its reservation up
//!   only while it holds every shard's lock: when the queue is drained after shutdown, or
//!   as a timed-out surplus worker by an exchange that requires it still to be surplus and
//!   another reservation to remain or the queue to be empty (`Pool::release_if_surplus`).
//!   So a submission either sees the smaller count (and reserves) or is seen by the worker
//!   (which stays). A thread that dies abnormally reserves its replacement in the exchange
//!   that releases it. The one exception: a worker thread that could not be started
//!   gives its reservation back with no lock held (`Pool::start_worker`, `Control::unreserve`);
//!   the task it was reserved for then has no worker until `unqueue_if_workerless` takes
//!   it back out of the queue and fails its submission (`pool/submit.rs`).
//! - E2: a task is accepted only while running. `shutdown` and `shutdown_now` change the
//!   run state *before* their pass over every shard; a submission reads it in the
//!   critical section that pushes. So a submission after the pass sees the new state (and is
//!   refused), and one before it is in the queue when the pass applies the policies. A
//!   periodic task's re-queue reads the run state and the policy in its critical section
//!   the same way.
//! - E3: whenever the queue becomes empty after shutdown, every waiting worker is woken so
//!   it can exit (`wake_if_drained`, after the emptying critical section; of two threads
//!   emptying the last two shards at once, one sees both empty: `is_empty_synced`); so
//!   termination never waits for a deadline that no longer exists.
//! - E4: the run-after-shutdown flags are written under every shard's lock, so a re-queue
//!   (under its home shard's) and a policy pass agree on them; `remove_on_cancel` is a
//!   setting each cancel reads once (no protocol depends on when a change becomes
//!   visible).
//! - E5: `threads >= workers`; termination is latched exactly once, by the exchange that
//!   makes the pool shut down with no thread working. A `shutdown` (or a policy change
//!   after it) holds a finisher slot in `threads` while it completes the futures of the
//!   tasks it removed, so `await_termination` returning true means that work is done too.
//!
//! # Ordering
//! The control word's orderings are in `control.rs` (`AcqRel` exchanges, `Acquire`
//! loads). Settings (`core_pool_size`, the policy flags, `epoch`) are `Relaxed`: read as
//! hints or under a queue lock, which orders what matters (E4; `epoch` is bumped before
//! `wake_all` takes the coordinator lock a waiting worker holds when it reads it).
//! `handles` is `AcqRel` so the last handle's drop sees every earlier use. Statistics
//! counters: `stats.rs`.

mod awaiting;
pub(crate) mod control;
mod entry;
mod host;
mod introspect;
#[cfg(feature = "metrics")]
mod publish;
#[cfg(feature = "metrics")]
pub(crate) use publish::watch;
mod running;
mod shared;
mod shutdown;
mod submit;
mod worker;

#[cfg(all(test, loom))]
pub(crate) mod loom;
#[cfg(all(test, loom))]
mod loom_async;

#[cfg(all(test, not(loom)))]
pub(crate) use entry::Entry;
pub(crate) use shared::Pool;

use crate::sync::Arc;

/// One shard's reference to the pool, what futures and cancel handles hold (as an
/// `Arc<Stripe>`), so that futures made on different threads do not all count
/// references on the one `Arc<Pool>` (a contended cache line per `schedule` and per
/// drop; `docs/BENCHMARKS.md`). Derefs to [`Pool`]. Each shard's [`Tally`] holds one
/// until the last executor handle is dropped (`Pool::release_stripes`), so that a
/// submission clones it in its shard's critical section; each stripe holds the pool
/// alive as long as a future does.
///
/// Aligned to 128 bytes (two cache lines, as `crossbeam_utils::CachePadded` on x86-64),
/// so that the stripes, allocated one after the other, do not share a line: their
/// reference counts are written by different threads.
#[repr(align(128))]
pub(crate) struct Stripe {
    pool: Arc<Pool>,
}

impl Stripe {
    /// A stripe of its own, for the rare futures made without a shard (a periodic task
    /// over before its first run, a shut-down pool's handle).
    pub(crate) fn new(pool: Arc<Pool>) -> Arc<Stripe> {
        Arc::new(Stripe { pool })
    }
}

impl std::ops::Deref for Stripe {
    type Target = Pool;
    #[inline]
    fn deref(&self) -> &Pool {
        &self.pool
    }
}

impl std::fmt::Debug for Stripe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.pool.fmt(f)
    }
}
pub(crate) use worker::is_worker_of;

/// What each queue shard's lock guards for the executor beside its store (the sharded
/// queue's per-shard state `X`).
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Tasks accepted into this shard (`PoolStats::task_count`, with the few accepted
    /// without queueing, counted in `Counters::task_count`); counted under the shard's
    /// lock instead of in a shared atomic.
    pub(crate) submitted: u64,
    /// Tasks of this shard that a cancel took out of it (`PoolStats::cancelled_count`,
    /// with the cancels that found their task elsewhere — running, or left queued by
    /// remove-on-cancel off, or shutdown's — counted in `Counters::cancelled`): one
    /// shared counter bumped by every cancel cost workloads W4 and W7 a fifth of their
    /// throughput (`docs/BENCHMARKS.md`).
    pub(crate) cancelled: u64,
    /// This shard's reference to the pool for the futures of its submissions ([`Arc<Stripe>`]);
    /// `None` once the last executor handle is gone (which breaks the cycle
    /// `Pool` → `Tally` → `Stripe` → `Pool`).
    pub(crate) stripe: Option<Arc<Stripe>>,
}

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
