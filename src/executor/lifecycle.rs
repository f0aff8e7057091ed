//! The pool's life through its handle: [`wait_idle`](ScheduledThreadPoolExecutor::wait_idle),
//! the ways to stop it (`shutdown`, `shutdown_graceful`, `shutdown_now`, `close`, and what
//! dropping the last handle does), waiting for termination (`await_termination`, the
//! [`Terminated`] future), the weak handle ([`WeakExecutor`]), and the readings and
//! settings a running pool offers (`stats`, sizes, the shutdown policies). What shutdown
//! does inside the pool is `pool/shutdown.rs` (E3-E5).

use std::fmt;
use std::time::Duration;

use super::ScheduledThreadPoolExecutor;
use crate::clock;
use crate::future::PendingTask;
use crate::pool::{self, Policy, Pool};
use crate::stats::PoolStats;
use crate::sync::{Arc, Weak};

impl ScheduledThreadPoolExecutor {
    /// Blocks until no task is due (by the executor's clock) and none is running on the
    /// pool's workers, or `timeout` (real time) passes; `true` if idle. Called from one of
    /// the pool's own workers it returns `false` at once (it is itself running).
    ///
    /// With a [`ManualClock`](crate::ManualClock), `clock.advance(d)` followed by
    /// `wait_idle` returns once everything due by the new time has finished, which makes
    /// multi-threaded tests deterministic:
    ///
    /// ```
    /// use schedpool::{ManualClock, ScheduledThreadPoolExecutor};
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(4).clock(clock.clone()).build();
    /// let runs = Arc::new(AtomicU32::new(0));
    /// for minute in 1..=10u64 {
    ///     let runs = runs.clone();
    ///     pool.schedule(Duration::from_secs(60 * minute), move || { runs.fetch_add(1, Ordering::SeqCst); }).unwrap();
    /// }
    /// clock.advance(Duration::from_secs(5 * 60));
    /// assert!(pool.wait_idle(Duration::from_secs(10)));
    /// assert_eq!(runs.load(Ordering::SeqCst), 5); // exactly the five due by now
    /// ```
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        self.pool.wait_idle(clock::timeout_at(timeout))
    }

    /// Stops accepting tasks. Queued tasks follow the run-after-shutdown policies: periodic
    /// tasks are cancelled unless `continue_existing_periodic_tasks_after_shutdown`;
    /// delayed one-shots still run at their deadline unless
    /// `execute_existing_delayed_tasks_after_shutdown` is false (then only those already
    /// due run). Cancelled tasks still queued are removed. Never blocks; workers exit once
    /// the queue is drained. Calling it again does nothing more.
    pub fn shutdown(&self) {
        self.pool.shutdown();
    }

    /// The graceful mode: stops accepting tasks, drops the delayed one-shots and the
    /// periodic tasks still queued (their futures complete with `Err(Cancelled)`), and
    /// lets the running tasks and the one-shots already due finish. It is
    /// [`shutdown`](Self::shutdown) with both run-after-shutdown policies off
    /// (`set_execute_existing_delayed_tasks_after_shutdown(false)`,
    /// `set_continue_existing_periodic_tasks_after_shutdown(false)`), so nothing that was
    /// waiting for a later deadline keeps the pool alive.
    ///
    /// ```
    /// use schedpool::ScheduledThreadPoolExecutor;
    /// use std::time::Duration;
    ///
    /// let pool = ScheduledThreadPoolExecutor::new(1);
    /// let later = pool.schedule(Duration::from_secs(1800), || "never").unwrap();
    /// let now = pool.submit(|| "runs").unwrap();
    /// pool.shutdown_graceful();
    /// assert!(pool.await_termination(Duration::from_secs(10)));
    /// assert_eq!(now.get().unwrap(), "runs");
    /// assert!(later.get().unwrap_err().is_cancelled());
    /// ```
    pub fn shutdown_graceful(&self) {
        self.pool.set_policy(Policy::ExecuteDelayed, false);
        self.pool.set_policy(Policy::ContinuePeriodic, false);
        self.pool.shutdown();
    }

    /// Stops accepting tasks, starts no further task, and returns the queued tasks that
    /// were not cancelled, in deadline order (Java: `shutdownNow`). Running tasks finish;
    /// Rust cannot interrupt a thread, but a task scheduled with a context sees
    /// [`TaskContext::is_cancelled`](crate::TaskContext::is_cancelled) become true and may
    /// stop early. Each returned [`PendingTask`] can be run on the caller's thread;
    /// dropping it completes its future with `Err(Cancelled)`.
    pub fn shutdown_now(&self) -> Vec<PendingTask> {
        let pool: Arc<dyn crate::task::Host> = pool::Stripe::new(self.pool.clone());
        self.pool
            .shutdown_now()
            .into_iter()
            .map(|task| PendingTask::new(task, pool.clone()))
            .collect()
    }

    /// Blocks until every worker has exited after shutdown, or `timeout` (real time)
    /// passes; `true` if terminated.
    pub fn await_termination(&self, timeout: Duration) -> bool {
        self.pool.await_termination(clock::timeout_at(timeout))
    }

    /// [`shutdown`](Self::shutdown), then waits for termination without a limit (Java 19's
    /// `close`). Called from one of the pool's own workers, it shuts down and returns at
    /// once (waiting there would wait for itself).
    pub fn close(&self) {
        self.pool.shutdown();
        if !pool::is_worker_of(&self.pool) {
            self.pool.await_termination(None);
        }
    }

    /// [`shutdown`](Self::shutdown), then [`await_termination`](Self::await_termination)
    /// with `timeout` (real time): `true` if the pool terminated within it. A pool whose
    /// queue still holds a delayed one-shot waits for that task's deadline (Java's default
    /// policy), so where shutdown must not hang on a forgotten long timer, this is the call
    /// to make; after a `false`, [`shutdown_now`](Self::shutdown_now) drops what is left.
    /// Called from one of the pool's own workers it shuts down and returns `false` at once
    /// (waiting there would wait for itself).
    ///
    /// ```
    /// use schedpool::ScheduledThreadPoolExecutor;
    /// use std::time::Duration;
    ///
    /// let pool = ScheduledThreadPoolExecutor::new(1);
    /// let forgotten = pool.schedule(Duration::from_secs(1800), || ()).unwrap();
    /// assert!(!pool.close_timeout(Duration::from_millis(20))); // still waiting for it
    /// drop(pool.shutdown_now()); // its future completes with Err(Cancelled)
    /// assert!(forgotten.get().unwrap_err().is_cancelled());
    /// assert!(pool.await_termination(Duration::from_secs(10)));
    /// ```
    pub fn close_timeout(&self, timeout: Duration) -> bool {
        self.pool.shutdown();
        if pool::is_worker_of(&self.pool) {
            return false;
        }
        self.pool.await_termination(clock::timeout_at(timeout))
    }

    /// A future that completes once the pool has terminated: the async form of
    /// [`await_termination`](Self::await_termination), usable from any runtime. It holds
    /// the pool's core, not a handle, so it does not keep the pool from shutting down when
    /// the last handle is dropped.
    ///
    /// ```
    /// use schedpool::ScheduledThreadPoolExecutor;
    ///
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// # rt.block_on(async {
    /// let pool = ScheduledThreadPoolExecutor::new(2);
    /// let done = pool.terminated();
    /// pool.submit(|| ()).unwrap().await.unwrap();
    /// pool.shutdown();
    /// done.await; // the workers have exited
    /// assert!(pool.is_terminated());
    /// # });
    /// ```
    pub fn terminated(&self) -> Terminated {
        Terminated {
            pool: self.pool.clone(),
        }
    }

    /// A handle that does not keep the pool alive: for a periodic task that needs the
    /// pool (to schedule follow-up work) without creating a cycle. A strong handle moved
    /// into a task lives as long as the task, and a periodic task lives until it is
    /// cancelled, so the pool's last handle is never dropped and the pool never shuts
    /// down by itself. [`WeakExecutor::upgrade`] gives a strong handle back while another
    /// one exists.
    ///
    /// ```
    /// use schedpool::ScheduledThreadPoolExecutor;
    /// use std::time::Duration;
    ///
    /// let pool = ScheduledThreadPoolExecutor::new(1);
    /// let weak = pool.downgrade();
    /// let ticker = pool
    ///     .schedule_at_fixed_rate(Duration::ZERO, Duration::from_millis(5), move || {
    ///         if let Some(pool) = weak.upgrade() {
    ///             let _ = pool.execute(|| ()); // follow-up work
    ///         }
    ///     })
    ///     .unwrap();
    /// drop(pool); // the last handle: the pool shuts down, the ticker is cancelled
    /// assert!(ticker.get().unwrap_err().is_cancelled());
    /// ```
    pub fn downgrade(&self) -> WeakExecutor {
        WeakExecutor {
            pool: Arc::downgrade(&self.pool),
        }
    }

    /// `true` once [`shutdown`](Self::shutdown) or [`shutdown_now`](Self::shutdown_now) has
    /// been called.
    pub fn is_shutdown(&self) -> bool {
        self.pool.is_shutdown()
    }

    /// `true` after shutdown while workers are still running.
    pub fn is_terminating(&self) -> bool {
        self.pool.is_terminating()
    }

    /// `true` once every worker has exited after shutdown.
    pub fn is_terminated(&self) -> bool {
        self.pool.is_terminated()
    }

    /// Removes cancelled tasks still in the queue (left there when `remove_on_cancel` is
    /// off) and returns how many.
    pub fn purge(&self) -> usize {
        self.pool.purge()
    }

    /// Tasks waiting in the queue, cancelled-but-not-yet-removed ones included.
    pub fn queue_len(&self) -> usize {
        self.pool.queue_len()
    }

    /// Hands the pool's metrics to the `metrics` recorder installed now (feature
    /// `metrics`): what the metrics thread does every
    /// [`metrics_interval`](crate::Builder::metrics_interval), at once. For a test that
    /// reads a recorder, or a program about to exit; the series are in `docs/METRICS.md`.
    ///
    /// ```
    /// use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    /// use schedpool::ScheduledThreadPoolExecutor;
    /// use std::time::Duration;
    ///
    /// let recorder = DebuggingRecorder::new();
    /// let snapshots = recorder.snapshotter();
    /// let pool = ScheduledThreadPoolExecutor::builder()
    ///     .name("jobs")
    ///     .metrics_interval(Duration::ZERO) // no thread: published when asked
    ///     .build();
    /// pool.submit(|| ()).unwrap().get().unwrap();
    /// metrics::with_local_recorder(&recorder, || pool.publish_metrics());
    /// let submitted = snapshots.snapshot().into_vec().into_iter().find_map(|(key, _, _, value)| {
    ///     (key.key().name() == "schedpool_tasks_submitted_total").then_some(value)
    /// });
    /// assert_eq!(submitted, Some(DebugValue::Counter(1)));
    /// # pool.close();
    /// ```
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn publish_metrics(&self) {
        self.pool.publish_metrics();
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> PoolStats {
        self.pool.stats()
    }

    /// The configured core size.
    pub fn core_pool_size(&self) -> usize {
        self.pool.core_pool_size()
    }

    /// Changes the core size. Growing starts threads for queued tasks that need them;
    /// shrinking lets surplus workers exit once idle for `keep_alive`, counted from the
    /// change: as in Java, an idle worker that was already waiting out a keep-alive starts
    /// a fresh one.
    pub fn set_core_pool_size(&self, n: usize) {
        self.pool.set_core_pool_size(n);
    }

    /// Starts one core thread if fewer than `core_pool_size` run; `true` if it did.
    pub fn prestart_core_thread(&self) -> bool {
        self.pool.prestart(1) == 1
    }

    /// Starts every missing core thread; returns how many it started.
    pub fn prestart_all_core_threads(&self) -> usize {
        self.pool.prestart(usize::MAX)
    }

    /// Whether periodic tasks keep running after shutdown. Default false.
    pub fn continue_existing_periodic_tasks_after_shutdown(&self) -> bool {
        self.pool.policy(Policy::ContinuePeriodic)
    }

    /// Sets the policy; set to false after shutdown, it cancels queued periodic tasks now.
    pub fn set_continue_existing_periodic_tasks_after_shutdown(&self, value: bool) {
        self.pool.set_policy(Policy::ContinuePeriodic, value);
    }

    /// Whether delayed one-shots still run after shutdown. Default true.
    pub fn execute_existing_delayed_tasks_after_shutdown(&self) -> bool {
        self.pool.policy(Policy::ExecuteDelayed)
    }

    /// Sets the policy; set to false after shutdown, it cancels queued one-shots whose
    /// delay has not elapsed now.
    pub fn set_execute_existing_delayed_tasks_after_shutdown(&self, value: bool) {
        self.pool.set_policy(Policy::ExecuteDelayed, value);
    }

    /// Whether `cancel` removes the task from the queue at once. Default true.
    pub fn remove_on_cancel(&self) -> bool {
        self.pool.policy(Policy::RemoveOnCancel)
    }

    /// Sets the remove-on-cancel policy for later cancels.
    pub fn set_remove_on_cancel(&self, value: bool) {
        self.pool.set_policy(Policy::RemoveOnCancel, value);
    }
}

impl Drop for ScheduledThreadPoolExecutor {
    fn drop(&mut self) {
        if self.pool.handle_dropped() {
            self.pool.shutdown(); // the last handle
            self.pool.release_stripes();
        }
    }
}

/// A handle to a pool that does not keep it alive; see
/// [`ScheduledThreadPoolExecutor::downgrade`].
#[derive(Clone)]
pub struct WeakExecutor {
    pool: Weak<Pool>,
}

impl WeakExecutor {
    /// A strong handle, if one still exists (`None` once the last one was dropped, which
    /// shut the pool down). The pool may be shut down already: its methods then say so.
    pub fn upgrade(&self) -> Option<ScheduledThreadPoolExecutor> {
        let pool = self.pool.upgrade()?;
        // Built only once the count says so: a handle's `Drop` counts it gone (so not
        // `then_some`, which would build, and drop, one on the way to `None`).
        if pool.handle_revived() {
            Some(ScheduledThreadPoolExecutor { pool })
        } else {
            None
        }
    }
}

impl fmt::Debug for WeakExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeakExecutor")
            .field("alive", &self.upgrade().is_some())
            .finish()
    }
}

/// A future that completes when a pool has terminated; see
/// [`ScheduledThreadPoolExecutor::terminated`].
#[must_use = "a future does nothing unless polled"]
pub struct Terminated {
    pool: Arc<Pool>,
}

impl std::future::Future for Terminated {
    type Output = ();

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        self.pool.poll_termination(cx)
    }
}

impl fmt::Debug for Terminated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Terminated")
            .field("terminated", &self.pool.is_terminated())
            .finish()
    }
}
