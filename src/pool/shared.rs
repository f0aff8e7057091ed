//! `Pool`: the core behind every handle, future and worker: its fields, its
//! construction, and the reads every part of the pool makes. What it does is split by
//! protocol (invariants E1–E5 in `pool/mod.rs`): submission and re-queue in `submit.rs`
//! (E1, E2), what a task's handles ask of the pool in `host.rs` (T4, S1), shutdown and
//! the run-after-shutdown policies in `shutdown.rs` (E3–E5), the worker lifecycle in
//! `worker.rs`, the control state in `control.rs`, the snapshots in `introspect.rs`; the
//! queue's node is `entry.rs`.

use crate::sync::Ordering;
use std::fmt;
use std::time::Instant;

use super::control::{Control, RunState};
use super::entry::Queue;
use super::running::RunSlots;
use super::{Policy, Stripe, Tally};
use crate::clock::{AdvanceListener, Clock};
use crate::config::Config;
use crate::queue::sharded::ShardedQueue;
#[cfg(feature = "metrics")]
use crate::stats::RunTimeHistogram;
use crate::stats::{Counters, Histogram};
use crate::sync::{Arc, AtomicBool, AtomicU64, AtomicUsize, Weak};
use crate::task::sleepers::Sleepers;
use crate::task::{RunEnv, TaskRef};
use crate::throttle::Sampled;

/// How many shards the queue gets: one per CPU, rounded up to a power of two (at most
/// `queue::sharded::MAX_SHARDS`). Models use two, so that every cross-shard path is
/// explored. A build with `--cfg schedpool_probe` takes `SCHEDPOOL_SHARDS` from the
/// environment instead, so a small machine can count what grows with the shard count of a
/// large one (`scripts/scaling.sh`).
fn shard_count() -> usize {
    if cfg!(all(test, loom)) {
        return 2;
    }
    #[cfg(all(schedpool_probe, not(loom)))]
    if let Some(n) = crate::probe::shards() {
        return n;
    }
    num_cpus::get()
}

/// The fields of a "task started late" warning, kept for the closing line of a burst.
#[derive(Debug)]
pub(crate) struct LateStart {
    pub(crate) id: u64,
    pub(crate) task_name: Option<Box<str>>,
    pub(crate) lateness_us: u64,
}

/// The fields of a "task rejected" warning, kept likewise.
#[derive(Debug)]
pub(crate) struct Rejection {
    pub(crate) reason: crate::error::ScheduleError,
    pub(crate) policy: crate::config::RejectionPolicy,
}

/// The core behind every handle, future and worker.
pub(crate) struct Pool {
    pub(crate) queue: Queue,
    /// Run state, worker and thread counts, termination (`control.rs`); not under the
    /// queue lock.
    pub(crate) control: Control,
    pub(crate) config: Config,
    pub(super) core_pool_size: AtomicUsize,
    pub(super) continue_periodic: AtomicBool,
    pub(super) execute_delayed: AtomicBool,
    pub(super) remove_on_cancel: AtomicBool,
    /// Live `ScheduledThreadPoolExecutor` handles; the last one to drop shuts down.
    handles: AtomicUsize,
    pub(crate) counters: Counters,
    pub(crate) lateness: Histogram,
    /// Bumped when the core size shrinks: idle workers re-check whether they are surplus.
    /// Relaxed: written before `wake_all` takes the queue's coordinator lock and read by
    /// a waiting worker under that lock, which orders them.
    pub(super) epoch: AtomicU64,
    /// Rate limits of the "task started late" and "task rejected" warnings (`throttle.rs`).
    pub(super) late_log: Sampled<LateStart>,
    /// Runs asleep in `TaskContext::sleep` or awaiting in an async body (`sleepers.rs`).
    pub(crate) sleepers: Sleepers,
    /// The bound on the async runs off their worker (`task/permits.rs`).
    pub(crate) async_permits: crate::task::AsyncPermits,
    pub(super) reject_log: Sampled<Rejection>,
    /// The workers' runs in progress, for the task list (`running.rs`).
    pub(super) running: RunSlots,
    /// Every run's duration (feature `metrics`; recorded like `lateness`).
    #[cfg(feature = "metrics")]
    pub(crate) run_time: RunTimeHistogram,
    /// The histogram counts already handed to the recorder (`publish.rs`, MX2).
    #[cfg(feature = "metrics")]
    pub(super) handed: crate::sync::Mutex<crate::stats::Handed>,
    /// The task names with a run-time series of their own (`telemetry.rs`, MX3).
    #[cfg(feature = "metrics")]
    pub(super) task_series: crate::telemetry::TaskSeries,
}

impl AdvanceListener for Pool {
    fn on_advance(&self) {
        self.queue.on_advance();
        self.sleepers.wake_threads(); // S1: tasks asleep on virtual time re-read it
    }
}

impl Pool {
    /// The core of a new executor, registered with its clock.
    pub(crate) fn new(config: Config) -> Arc<Pool> {
        let clock = config.clock.clone().map_or_else(Clock::real, Clock::Manual);
        let pool = Arc::new(Pool {
            queue: ShardedQueue::new(
                clock.clone(),
                shard_count(),
                config.spin_policy,
                config.timer_precision,
                Tally::default,
            ),
            core_pool_size: AtomicUsize::new(config.core_pool_size),
            continue_periodic: AtomicBool::new(
                config.continue_existing_periodic_tasks_after_shutdown,
            ),
            execute_delayed: AtomicBool::new(config.execute_existing_delayed_tasks_after_shutdown),
            remove_on_cancel: AtomicBool::new(config.remove_on_cancel),
            control: Control::new(),
            handles: AtomicUsize::new(1),
            counters: Counters::new(),
            lateness: Histogram::new(),
            epoch: AtomicU64::new(0),
            late_log: Sampled::default(),
            reject_log: Sampled::default(),
            running: RunSlots::default(),
            #[cfg(feature = "metrics")]
            run_time: Histogram::new(),
            #[cfg(feature = "metrics")]
            handed: crate::sync::Mutex::default(),
            #[cfg(feature = "metrics")]
            task_series: crate::telemetry::TaskSeries::new(config.max_task_series),
            sleepers: Sleepers::new(),
            async_permits: crate::task::AsyncPermits::new(config.max_async_runs),
            config,
        });
        let listener: Weak<dyn AdvanceListener> =
            Arc::downgrade(&pool) as Weak<dyn AdvanceListener>;
        clock.register(listener);
        for g in pool.queue.lock_all().shards() {
            g.ext().stripe = Some(Stripe::new(pool.clone())); // until `release_stripes`
        }

        pool
    }

    /// The last executor handle is gone: the shards give up their stripes, so the pool is
    /// freed once the last future and worker let go of it. (No submission can follow: it
    /// would need a handle.)
    pub(crate) fn release_stripes(&self) {
        let stripes: Vec<Option<Arc<Stripe>>> = self
            .queue
            .lock_all()
            .shards()
            .map(|g| g.ext().stripe.take())
            .collect();
        drop(stripes); // outside the locks: it may drop the pool's memory's last holders
    }

    /// The environment of a run of `task` on the calling thread, now (`CallerRuns`,
    /// `PendingTask::run`): the pool's clock and the pool itself, no counters.
    pub(crate) fn env_now<'a>(self: &'a Arc<Self>, task: &'a TaskRef) -> RunEnv<'a> {
        RunEnv {
            now: self.clock().now(),
            clock: self.clock(),
            counters: None,
            task: Some(task),
            pool: Some(self),
            on_worker: false,
            handoff: None,
        }
    }

    /// A handle was cloned. Relaxed: a new handle is made from a live one, which keeps the
    /// count above zero.
    pub(crate) fn handle_cloned(&self) {
        self.handles.fetch_add(1, Ordering::Relaxed);
    }

    /// A handle was dropped; `true` if it was the last. AcqRel: the last handle's shutdown
    /// happens after every other handle's use.
    pub(crate) fn handle_dropped(&self) -> bool {
        self.handles.fetch_sub(1, Ordering::AcqRel) == 1
    }

    #[inline]
    pub(crate) fn is_shutdown(&self) -> bool {
        !self.control.load().is_running()
    }

    /// `shutdown_now` was called: running tasks are asked to stop (`TaskContext::is_cancelled`).
    #[inline]
    pub(crate) fn is_stopping(&self) -> bool {
        self.control.load().run_state() == RunState::Stop
    }

    pub(crate) fn is_terminating(&self) -> bool {
        self.is_shutdown() && !self.is_terminated()
    }

    pub(crate) fn is_terminated(&self) -> bool {
        self.control.is_terminated()
    }

    pub(crate) fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// A policy flag's value. Relaxed: a setting (E4).
    #[inline]
    pub(crate) fn policy(&self, policy: Policy) -> bool {
        self.flag(policy).load(Ordering::Relaxed)
    }

    #[inline]
    pub(super) fn flag(&self, policy: Policy) -> &AtomicBool {
        match policy {
            Policy::ContinuePeriodic => &self.continue_periodic,
            Policy::ExecuteDelayed => &self.execute_delayed,
            Policy::RemoveOnCancel => &self.remove_on_cancel,
        }
    }

    #[inline]
    /// The pool's name, the `pool` field of its log events.
    pub(crate) fn name(&self) -> &str {
        self.config.pool_name()
    }

    /// The run-time series of a task named `name` (feature `metrics`): its own while the
    /// pool has room for its name, else the shared `other` one (MX3 in `telemetry.rs`);
    /// none for an unnamed task or without the feature. Calls the recorder: no lock held.
    pub(crate) fn task_timer(&self, name: Option<&str>) -> Option<crate::telemetry::TaskTimer> {
        #[cfg(feature = "metrics")]
        return name.map(|name| self.task_series.timer(self.name(), name));
        #[cfg(not(feature = "metrics"))]
        {
            let _ = name;
            None
        }
    }

    #[inline]
    pub(crate) fn clock(&self) -> &Clock {
        self.queue.clock()
    }

    #[inline]
    pub(crate) fn core_pool_size(&self) -> usize {
        self.core_pool_size.load(Ordering::Relaxed)
    }

    pub(crate) fn await_termination(&self, until: Option<Instant>) -> bool {
        self.control.await_termination(until)
    }

    /// Polls for termination (`ScheduledThreadPoolExecutor::terminated`).
    pub(crate) fn poll_termination(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        self.control.poll_termination(cx)
    }

    /// A new executor handle from a weak one: `false` once the last handle is gone (the
    /// pool was shut down by that drop). AcqRel: as `handle_dropped`, whose zero this
    /// must not resurrect.
    pub(crate) fn handle_revived(&self) -> bool {
        self.handles
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n > 0).then_some(n + 1)
            })
            .is_ok()
    }
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("control", &self.control)
            .field("queued", &self.queue_len())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, loom))]
impl Pool {
    /// Models: reserve a worker slot that the model's own thread plays, so no thread starts.
    pub(crate) fn pretend_worker(&self) {
        let reserved = self.control.reserve_if(|_| true);
        debug_assert!(reserved.is_some());
    }
}
