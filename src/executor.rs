//! [`ScheduledThreadPoolExecutor`]: the handle, and `Shared`, the core behind it: run
//! state, worker accounting, the run-after-shutdown policies and the shutdown sequence.
//!
//! # Design
//! The executor's control state ([`Control`]) lives inside the queue's lock, beside the
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

use std::fmt;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::builder::{Builder, Config, RejectionPolicy};
use crate::clock::{self, AdvanceListener, Clock, Ticks};
use crate::error::run_caught;
use crate::error::ScheduleError;
use crate::error::TaskError;
use crate::future::{PendingTask, ScheduledFuture};
use crate::periodic::{Periodic, Schedule};
use crate::queue::{BlockingQueue, Locked, TimedEntry};
use crate::stats::{self, Counters, Lateness, PoolStats};
use crate::sync::{Arc, AtomicBool, AtomicU64, AtomicUsize, Condvar, Weak};
use crate::task::{state, Job, OnceTask, PeriodicTask, TypedJob, NO_DEADLINE};
use crate::worker;

/// A queued task: deadline and sequence inline, the task behind a pointer.
pub(crate) type Entry = TimedEntry<Arc<dyn Job>>;
/// Java: `DelayedWorkQueue`.
pub(crate) type Queue = BlockingQueue<Entry, Control>;
/// The queue with its lock held.
pub(crate) type Guard<'a> = Locked<'a, Entry, Control>;

/// Java's run states, ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum RunState {
    Running,
    Shutdown,
    Stop,
}

/// The executor's control state, guarded by the queue lock.
#[derive(Debug)]
pub(crate) struct Control {
    pub(crate) run_state: RunState,
    /// Latched by the last thread to exit after shutdown (E5).
    pub(crate) terminated: bool,
    /// Workers that take tasks: reserved before their thread starts, released when they
    /// decide to exit (E1).
    pub(crate) workers: usize,
    /// Threads not yet finished (their stop hook not yet run) (E5).
    pub(crate) threads: usize,
    pub(crate) largest: usize,
    /// Next worker index for thread names; never reused.
    pub(crate) next_index: usize,
    /// Workers between taking a task and asking for the next one.
    pub(crate) active: usize,
    /// Bumped when the core size shrinks: idle workers re-check whether they are surplus.
    pub(crate) epoch: u64,
    /// Threads blocked in `wait_idle`.
    pub(crate) idle_waiters: usize,
}

impl Control {
    /// Reserves a worker slot and returns its index (E1, E5).
    fn reserve(&mut self) -> usize {
        self.workers += 1;
        self.threads += 1;
        self.largest = self.largest.max(self.workers);
        let index = self.next_index;
        self.next_index += 1;
        index
    }

    /// Java `ensurePrestart`: one thread per submission while fewer than `core` run, and
    /// one in all when `core` is 0.
    fn reserve_for_task(&mut self, core: usize) -> Option<usize> {
        (self.workers < core.max(1)).then(|| self.reserve())
    }

    fn is_drained_after_shutdown(&self, queued: usize) -> bool {
        self.run_state == RunState::Stop || (self.run_state == RunState::Shutdown && queued == 0)
    }
}

/// The core behind every handle, future and worker.
pub(crate) struct Shared {
    pub(crate) queue: Queue,
    pub(crate) config: Config,
    core_pool_size: AtomicUsize,
    continue_periodic: AtomicBool,
    execute_delayed: AtomicBool,
    remove_on_cancel: AtomicBool,
    is_shutdown: AtomicBool,
    /// Live `ScheduledThreadPoolExecutor` handles; the last one to drop shuts down.
    handles: AtomicUsize,
    next_id: AtomicU64,
    pub(crate) counters: Counters,
    pub(crate) lateness: Lateness,
    /// Signalled (under the queue lock) when `terminated` is latched.
    termination: Condvar,
    /// Signalled (under the queue lock) when the pool may have become idle (`wait_idle`).
    idle: Condvar,
}

/// A pool of worker threads that runs tasks after a delay or periodically: Rust's
/// `java.util.concurrent.ScheduledThreadPoolExecutor`.
///
/// The handle is cheap to clone (an `Arc` inside). Dropping the last handle calls
/// [`shutdown`](Self::shutdown) without blocking; call [`close`](Self::close) to wait.
///
/// Guarantees:
/// - no task runs before its deadline;
/// - tasks with equal deadlines run in submission order;
/// - runs of one periodic task never overlap, and each run happens-before the next;
/// - a task's effects happen-before [`ScheduledFuture::get`] returns its outcome;
/// - dropping a [`ScheduledFuture`] does not cancel its task;
/// - a panicking task never kills its worker.
///
/// ```
/// use schedpool::{ManualClock, ScheduledThreadPoolExecutor};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(2).clock(clock.clone()).build();
/// let later = pool.schedule(Duration::from_secs(10), || 2 + 2).unwrap();
/// clock.advance(Duration::from_secs(10));
/// assert_eq!(later.get().unwrap(), 4);
/// pool.close();
/// assert!(pool.is_terminated());
/// ```
///
/// Closures must be `Send`:
///
/// ```compile_fail
/// use schedpool::ScheduledThreadPoolExecutor;
/// let pool = ScheduledThreadPoolExecutor::new(1);
/// let rc = std::rc::Rc::new(1);
/// pool.execute(move || drop(rc)).unwrap();
/// ```
pub struct ScheduledThreadPoolExecutor {
    shared: Arc<Shared>,
}

impl ScheduledThreadPoolExecutor {
    /// Same as `Builder::new().core_pool_size(core_pool_size).build()`.
    pub fn new(core_pool_size: usize) -> Self {
        Builder::new().core_pool_size(core_pool_size).build()
    }

    /// A [`Builder`] with the defaults.
    pub fn builder() -> Builder {
        Builder::new()
    }

    pub(crate) fn from_config(config: Config) -> Self {
        let clock = config.clock.clone().map_or_else(Clock::real, Clock::Manual);
        let shared = Arc::new(Shared {
            queue: BlockingQueue::new(
                clock.clone(),
                0,
                Control {
                    run_state: RunState::Running,
                    terminated: false,
                    workers: 0,
                    threads: 0,
                    largest: 0,
                    next_index: 0,
                    active: 0,
                    epoch: 0,
                    idle_waiters: 0,
                },
            ),
            core_pool_size: AtomicUsize::new(config.core_pool_size),
            continue_periodic: AtomicBool::new(
                config.continue_existing_periodic_tasks_after_shutdown,
            ),
            execute_delayed: AtomicBool::new(config.execute_existing_delayed_tasks_after_shutdown),
            remove_on_cancel: AtomicBool::new(config.remove_on_cancel),
            is_shutdown: AtomicBool::new(false),
            handles: AtomicUsize::new(1),
            next_id: AtomicU64::new(0),
            counters: Counters::new(),
            lateness: Lateness::new(),
            termination: Condvar::new(),
            idle: Condvar::new(),
            config,
        });
        let listener: Weak<dyn AdvanceListener> =
            Arc::downgrade(&shared) as Weak<dyn AdvanceListener>;
        clock.register(listener);
        ScheduledThreadPoolExecutor { shared }
    }

    /// Runs `task` once after `delay` (Java: `schedule(Callable, delay, unit)`).
    ///
    /// Any delay is accepted; `Duration::MAX` means practically never (capped at about
    /// 500 years) and never overflows.
    ///
    /// # Errors
    /// [`ScheduleError::Shutdown`] after shutdown; [`ScheduleError::QueueFull`] when the
    /// queue is full and the policy is `Abort`; [`ScheduleError::ThreadSpawn`] if no worker
    /// thread exists and none could be started.
    pub fn schedule<F, T>(
        &self,
        delay: Duration,
        task: F,
    ) -> Result<ScheduledFuture<T>, ScheduleError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let deadline = self.shared.clock().deadline_after(delay);
        self.schedule_once(deadline, task)
    }

    /// Runs `task` once at `deadline`, read in the executor's clock. A deadline in the past
    /// runs as soon as possible.
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule).
    pub fn schedule_at<F, T>(
        &self,
        deadline: Instant,
        task: F,
    ) -> Result<ScheduledFuture<T>, ScheduleError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let deadline = self.shared.clock().ticks_of(deadline);
        self.schedule_once(deadline, task)
    }

    /// Runs `task` first after `initial_delay`, then every `period` measured from the
    /// previous run's *deadline* (Java: `scheduleAtFixedRate`). A run that overruns delays
    /// the next ones, which then run back to back until the schedule has caught up; runs
    /// never overlap. The task stops when cancelled, when it panics (its future yields
    /// `Err(Panicked)`), or at shutdown (unless
    /// `continue_existing_periodic_tasks_after_shutdown`).
    ///
    /// ```text
    /// period 10 ms; run #1 takes 25 ms, later runs take 2 ms
    ///              run       #1   #2   #3   #4   #5
    ///              due        0   10   20   30   40
    ///              started    0   25   27   30   40
    /// ```
    ///
    /// # Errors
    /// [`ScheduleError::ZeroPeriod`] if `period` is zero, else as
    /// [`schedule`](Self::schedule).
    pub fn schedule_at_fixed_rate<F>(
        &self,
        initial_delay: Duration,
        period: Duration,
        task: F,
    ) -> Result<ScheduledFuture<()>, ScheduleError>
    where
        F: FnMut() + Send + 'static,
    {
        self.schedule_periodic(
            Periodic::at_fixed_rate(period).initial_delay(initial_delay),
            task,
        )
    }

    /// Runs `task` first after `initial_delay`, then again `delay` after the *end* of each
    /// run (Java: `scheduleWithFixedDelay`).
    ///
    /// ```text
    /// delay 10 ms; run #1 takes 25 ms, later runs take 2 ms
    ///              started    0   35   47   59      each start = previous end + 10
    /// ```
    ///
    /// # Errors
    /// [`ScheduleError::ZeroPeriod`] if `delay` is zero, else as
    /// [`schedule`](Self::schedule).
    pub fn schedule_with_fixed_delay<F>(
        &self,
        initial_delay: Duration,
        delay: Duration,
        task: F,
    ) -> Result<ScheduledFuture<()>, ScheduleError>
    where
        F: FnMut() + Send + 'static,
    {
        self.schedule_periodic(
            Periodic::with_fixed_delay(delay).initial_delay(initial_delay),
            task,
        )
    }

    /// Runs `task` as soon as possible, without a handle (Java: `execute`).
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule).
    pub fn execute<F>(&self, task: F) -> Result<(), ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        let deadline = self.shared.clock().now();
        let id = self.shared.next_id();
        self.shared
            .submit(Arc::new(OnceTask::new(id, deadline, task)))
    }

    /// Runs `task` as soon as possible and returns its future (Java: `submit`).
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule).
    pub fn submit<F, T>(&self, task: F) -> Result<ScheduledFuture<T>, ScheduleError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let deadline = self.shared.clock().now();
        self.schedule_once(deadline, task)
    }

    fn schedule_once<F, T>(
        &self,
        deadline: Ticks,
        task: F,
    ) -> Result<ScheduledFuture<T>, ScheduleError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let id = self.shared.next_id();
        let task: Arc<dyn TypedJob<T>> = Arc::new(OnceTask::new(id, deadline, task));
        if let Err(err) = self.shared.submit(task.clone()) {
            crate::task::drop_quietly(task); // a refused closure's panicking Drop is contained
            return Err(err);
        }
        Ok(ScheduledFuture::new(task, self.shared.clone()))
    }

    /// Runs `task` periodically as `spec` says: fixed rate (with a [`MissedTicks`]
    /// policy), fixed delay, or a [`Trigger`]; with optional `max_lateness`, `max_runs`
    /// and [`OnPanic`] policy. The Java-style methods are this with the defaults.
    ///
    /// A trigger's first deadline is `trigger.first_deadline(now + initial_delay)`; if it
    /// returns `None` (or `max_runs` is 0) the future completes with `Ok(())` without a
    /// run; if it panics, the task is accepted and its future yields `Err(Panicked)`.
    ///
    /// [`MissedTicks`]: crate::MissedTicks
    /// [`Trigger`]: crate::Trigger
    /// [`OnPanic`]: crate::OnPanic
    ///
    /// # Errors
    /// [`ScheduleError::ZeroPeriod`] for a zero period or delay, else as
    /// [`schedule`](Self::schedule).
    pub fn schedule_periodic<F>(
        &self,
        spec: Periodic,
        task: F,
    ) -> Result<ScheduledFuture<()>, ScheduleError>
    where
        F: FnMut() + Send + 'static,
    {
        let Periodic {
            schedule,
            initial_delay,
            limits,
        } = spec;
        if schedule.is_zero() {
            return Err(ScheduleError::ZeroPeriod);
        }
        let clock = self.shared.clock();
        let earliest = clock.deadline_after(initial_delay);
        let first = match &schedule {
            Schedule::Trigger(trigger) => {
                run_caught(|| trigger.0.lock().first_deadline(clock.instant_of(earliest)))
                    .map(|at| at.map(|at| clock.ticks_of(at)))
            }
            _ => Ok(Some(earliest)),
        };
        let deadline = first.as_ref().ok().copied().flatten().unwrap_or(earliest);
        let id = self.shared.next_id();
        let task = Arc::new(PeriodicTask::new(id, deadline, schedule, limits, task));
        let ended = match first {
            Err((payload, msg)) => Some(Err((payload, msg))),
            Ok(None) => Some(Ok(())),
            Ok(Some(_)) if limits.max_runs == Some(0) => Some(Ok(())),
            Ok(Some(_)) => None,
        };
        let typed: Arc<dyn TypedJob<()>> = task.clone();
        match ended {
            None => {
                if let Err(err) = self.shared.submit(typed.clone()) {
                    crate::task::drop_quietly((task, typed)); // contain a panicking Drop
                    return Err(err);
                }
            }
            Some(outcome) => {
                // Accepted (unless shut down) but over before its first run.
                self.shared.refuse_if_shutdown()?;
                stats::bump(&self.shared.counters.task_count);
                let outcome = outcome.map_err(|(payload, msg)| {
                    stats::bump(&self.shared.counters.panicked);
                    tracing::error!(target: "schedpool", id, panic = %msg, "trigger panicked in first_deadline");
                    TaskError::Panicked(payload)
                });
                task.finish_unrun(outcome);
            }
        }
        Ok(ScheduledFuture::new(typed, self.shared.clone()))
    }

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
        self.shared.wait_idle(clock::timeout_at(timeout))
    }

    /// Stops accepting tasks. Queued tasks follow the run-after-shutdown policies: periodic
    /// tasks are cancelled unless `continue_existing_periodic_tasks_after_shutdown`;
    /// delayed one-shots still run at their deadline unless
    /// `execute_existing_delayed_tasks_after_shutdown` is false (then only those already
    /// due run). Cancelled tasks still queued are removed. Never blocks; workers exit once
    /// the queue is drained. Calling it again does nothing more.
    pub fn shutdown(&self) {
        self.shared.shutdown();
    }

    /// Stops accepting tasks, starts no further task, and returns the queued tasks that
    /// were not cancelled, in deadline order (Java: `shutdownNow`). Running tasks finish:
    /// Rust cannot interrupt a thread. Each returned [`PendingTask`] can be run on the
    /// caller's thread; dropping it completes its future with `Err(Cancelled)`.
    pub fn shutdown_now(&self) -> Vec<PendingTask> {
        self.shared.shutdown_now()
    }

    /// Blocks until every worker has exited after shutdown, or `timeout` (real time)
    /// passes; `true` if terminated.
    pub fn await_termination(&self, timeout: Duration) -> bool {
        self.shared.await_termination(clock::timeout_at(timeout))
    }

    /// [`shutdown`](Self::shutdown), then waits for termination without a limit (Java 19's
    /// `close`). Called from one of the pool's own workers, it shuts down and returns at
    /// once (waiting there would wait for itself).
    pub fn close(&self) {
        self.shared.shutdown();
        if !worker::is_worker_of(&self.shared) {
            self.shared.await_termination(None);
        }
    }

    /// `true` once [`shutdown`](Self::shutdown) or [`shutdown_now`](Self::shutdown_now) has
    /// been called.
    pub fn is_shutdown(&self) -> bool {
        self.shared.is_shutdown.load(Ordering::Relaxed)
    }

    /// `true` after shutdown while workers are still running.
    pub fn is_terminating(&self) -> bool {
        let q = self.shared.queue.lock();
        q.ext.run_state != RunState::Running && !q.ext.terminated
    }

    /// `true` once every worker has exited after shutdown.
    pub fn is_terminated(&self) -> bool {
        self.shared.queue.lock().ext.terminated
    }

    /// Removes cancelled tasks still in the queue (left there when `remove_on_cancel` is
    /// off) and returns how many.
    pub fn purge(&self) -> usize {
        self.shared.purge()
    }

    /// Tasks waiting in the queue, cancelled-but-not-yet-removed ones included.
    pub fn queue_len(&self) -> usize {
        self.shared.queue.lock().len()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> PoolStats {
        self.shared.stats()
    }

    /// The configured core size.
    pub fn core_pool_size(&self) -> usize {
        self.shared.core_pool_size.load(Ordering::Relaxed)
    }

    /// Changes the core size. Growing starts threads for queued tasks that need them;
    /// shrinking lets surplus workers exit once idle for `keep_alive`.
    pub fn set_core_pool_size(&self, n: usize) {
        self.shared.set_core_pool_size(n);
    }

    /// Starts one core thread if fewer than `core_pool_size` run; `true` if it did.
    pub fn prestart_core_thread(&self) -> bool {
        self.shared.prestart(1) == 1
    }

    /// Starts every missing core thread; returns how many it started.
    pub fn prestart_all_core_threads(&self) -> usize {
        self.shared.prestart(usize::MAX)
    }

    /// Whether periodic tasks keep running after shutdown. Default false.
    pub fn continue_existing_periodic_tasks_after_shutdown(&self) -> bool {
        self.shared.continue_periodic.load(Ordering::Relaxed)
    }

    /// Sets the policy; set to false after shutdown, it cancels queued periodic tasks now.
    pub fn set_continue_existing_periodic_tasks_after_shutdown(&self, value: bool) {
        self.shared
            .set_policy(&self.shared.continue_periodic, value);
    }

    /// Whether delayed one-shots still run after shutdown. Default true.
    pub fn execute_existing_delayed_tasks_after_shutdown(&self) -> bool {
        self.shared.execute_delayed.load(Ordering::Relaxed)
    }

    /// Sets the policy; set to false after shutdown, it cancels queued one-shots whose
    /// delay has not elapsed now.
    pub fn set_execute_existing_delayed_tasks_after_shutdown(&self, value: bool) {
        self.shared.set_policy(&self.shared.execute_delayed, value);
    }

    /// Whether `cancel` removes the task from the queue at once. Default true.
    pub fn remove_on_cancel(&self) -> bool {
        self.shared.remove_on_cancel.load(Ordering::Relaxed)
    }

    /// Sets the remove-on-cancel policy for later cancels.
    pub fn set_remove_on_cancel(&self, value: bool) {
        // Relaxed: read by later cancels; tasks already cancelled stay until `purge`.
        self.shared.remove_on_cancel.store(value, Ordering::Relaxed);
    }
}

#[cfg(all(test, loom))]
impl ScheduledThreadPoolExecutor {
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

#[cfg(all(test, loom))]
impl Shared {
    /// Models: reserve a worker slot that the model's own thread plays, so no thread starts.
    pub(crate) fn pretend_worker(&self) {
        self.queue.lock().ext.reserve();
    }
}

impl Clone for ScheduledThreadPoolExecutor {
    fn clone(&self) -> Self {
        // Relaxed: a new handle is made from a live one, which keeps the count above zero.
        self.shared.handles.fetch_add(1, Ordering::Relaxed);
        ScheduledThreadPoolExecutor {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for ScheduledThreadPoolExecutor {
    fn drop(&mut self) {
        // AcqRel: the last handle's shutdown happens after every other handle's use.
        if self.shared.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.shutdown();
        }
    }
}

impl fmt::Debug for ScheduledThreadPoolExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = self.shared.queue.lock();
        f.debug_struct("ScheduledThreadPoolExecutor")
            .field("core_pool_size", &self.core_pool_size())
            .field("run_state", &q.ext.run_state)
            .field("terminated", &q.ext.terminated)
            .field("workers", &q.ext.workers)
            .field("queued", &q.len())
            .finish()
    }
}

impl AdvanceListener for Shared {
    fn on_advance(&self) {
        self.queue.on_advance();
    }
}

impl Shared {
    #[inline]
    pub(crate) fn clock(&self) -> &Clock {
        self.queue.clock()
    }

    #[inline]
    fn next_id(&self) -> u64 {
        // Relaxed: a unique number; nothing is published through it.
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn core_pool_size(&self) -> usize {
        self.core_pool_size.load(Ordering::Relaxed)
    }

    /// Queues a new task, or applies the rejection policy.
    pub(crate) fn submit(self: &Arc<Self>, job: Arc<dyn Job>) -> Result<(), ScheduleError> {
        let deadline = job.header().deadline();
        let mut q = self.queue.lock();
        let refused = if q.ext.run_state != RunState::Running {
            ScheduleError::Shutdown
        } else if q.len() >= self.config.max_queued_tasks {
            ScheduleError::QueueFull
        } else {
            let seq = q.next_seq();
            let handle = q.push_tracked(
                TimedEntry {
                    deadline,
                    seq,
                    value: job,
                },
                |e| &e.value.header().position, // T4
            );
            let spawn = q.ext.reserve_for_task(self.core_pool_size()); // E1
            drop(q);
            if let Some(index) = spawn {
                if !self.start_worker(index) {
                    if let Some(job) = self.unqueue_if_workerless(handle) {
                        stats::bump(&self.counters.rejected);
                        crate::task::drop_quietly(job);
                        return Err(ScheduleError::ThreadSpawn);
                    }
                }
            }
            stats::bump(&self.counters.task_count);
            return Ok(());
        };
        drop(q);
        self.refuse(job, refused)
    }

    /// `Err(Shutdown)`, counted and traced, if the executor is shut down (for submissions
    /// that end before they are queued).
    fn refuse_if_shutdown(&self) -> Result<(), ScheduleError> {
        if self.is_shutdown.load(Ordering::Relaxed) {
            stats::bump(&self.counters.rejected);
            tracing::warn!(target: "schedpool", reason = %ScheduleError::Shutdown, "task rejected");
            return Err(ScheduleError::Shutdown);
        }
        Ok(())
    }

    /// Moves the next run of a task to `at`; see `ScheduledFuture::reschedule`. O(log n).
    pub(crate) fn reschedule(&self, job: &dyn Job, at: Ticks) -> bool {
        let header = job.header();
        let mut q = self.queue.lock();
        let handle = q.handle_at(&header.position); // T4
        match header.state() {
            state::SCHEDULED if q.contains(handle) => {
                let seq = q.next_seq();
                q.update(handle, |e| {
                    e.deadline = at;
                    e.seq = seq; // FIFO among equal deadlines by the time of the reschedule
                });
                header.set_deadline(at);
                self.notify_idle(&q); // a due head may have moved away
                true
            }
            // Out of the queue for a run (or just popped for one): the next run moves.
            // After shutdown_now nothing is re-queued (and handed-out tasks stay put).
            state::SCHEDULED | state::RUNNING
                if header.is_periodic() && q.ext.run_state != RunState::Stop =>
            {
                q.replace(&header.rescheduled, at); // T4: read back by `requeue` under the lock
                true
            }
            _ => false,
        }
    }

    fn wait_idle(&self, until: Option<Instant>) -> bool {
        if worker::is_worker_of(self) {
            return false;
        }
        let mut q = self.queue.lock();
        loop {
            let now = self.clock().now();
            let due = q.head_deadline().is_some_and(|d| d <= now);
            if !due && q.ext.active == 0 {
                return true;
            }
            q.ext.idle_waiters += 1;
            let timed_out = q.wait_on(&self.idle, until);
            q.ext.idle_waiters -= 1;
            if timed_out && until.is_some_and(|u| Instant::now() >= u) {
                let due = q.head_deadline().is_some_and(|d| d <= self.clock().now());
                return !due && q.ext.active == 0;
            }
        }
    }

    /// Wakes `wait_idle` callers after anything that may have made the pool idle: a worker
    /// finishing, a due task leaving the queue.
    #[inline]
    fn notify_idle(&self, q: &Guard<'_>) {
        if q.ext.idle_waiters > 0 {
            self.idle.notify_all();
        }
    }

    /// The rejection policy, applied outside the lock.
    #[cold]
    fn refuse(
        self: &Arc<Self>,
        job: Arc<dyn Job>,
        reason: ScheduleError,
    ) -> Result<(), ScheduleError> {
        stats::bump(&self.counters.rejected);
        let policy = match reason {
            ScheduleError::QueueFull => self.config.rejection_policy,
            _ => RejectionPolicy::Abort,
        };
        tracing::warn!(target: "schedpool", reason = %reason, policy = ?policy, "task rejected");
        match policy {
            RejectionPolicy::Abort => {
                crate::task::drop_quietly(job); // a panicking Drop stays contained
                Err(reason)
            }
            RejectionPolicy::CallerRuns => {
                let report = job.run_now(self.clock(), false);
                if let Some(next) = report.next {
                    self.requeue(job, next);
                }
                Ok(())
            }
            RejectionPolicy::Discard => {
                if job.header().cancel() {
                    job.finish_cancelled();
                }
                Ok(())
            }
        }
    }

    /// After a failed thread start: if no worker is left, takes the task `handle` names
    /// back out of the queue so it is not stranded (E1), and returns it.
    #[cold]
    fn unqueue_if_workerless(&self, handle: crate::queue::Handle) -> Option<Arc<dyn Job>> {
        let mut q = self.queue.lock();
        if q.ext.workers > 0 {
            return None;
        }
        let removed = q.remove(handle);
        self.notify_idle(&q);
        removed.map(|e| e.value)
    }

    /// Re-queues a periodic task after a run, if the run state allows (E2). For runs on
    /// the caller's thread (`CallerRuns`); workers re-queue inside `next_task`.
    pub(crate) fn requeue(self: &Arc<Self>, job: Arc<dyn Job>, next: Ticks) {
        let mut q = self.queue.lock();
        let outcome = self.requeue_locked(&mut q, job, next);
        let spawn = match outcome {
            Requeued::Queued(handle) => q
                .ext
                .reserve_for_task(self.core_pool_size())
                .map(|i| (i, handle)),
            _ => None,
        };
        drop(q);
        if let Requeued::Refused(job) = outcome {
            job.finish_cancelled();
        }
        if let Some((index, handle)) = spawn {
            if !self.start_worker(index) {
                if let Some(job) = self.unqueue_if_workerless(handle) {
                    if job.header().cancel() {
                        job.finish_cancelled();
                    }
                }
            }
        }
    }

    /// The decision and the push of a re-queue, under the lock (E2). A refused task has
    /// been cancelled here and must be finished by the caller after unlocking (T2, I4).
    fn requeue_locked(&self, q: &mut Guard<'_>, job: Arc<dyn Job>, next: Ticks) -> Requeued {
        let header = job.header();
        if header.state() != state::SCHEDULED {
            return Requeued::Dropped; // cancelled since its run ended; the canceller completes it
        }
        let allowed = match q.ext.run_state {
            RunState::Running => true,
            RunState::Shutdown => self.continue_periodic.load(Ordering::Relaxed),
            RunState::Stop => false,
        };
        if !allowed {
            return if header.cancel() {
                Requeued::Refused(job)
            } else {
                Requeued::Dropped
            };
        }
        let next = match q.replace(&header.rescheduled, NO_DEADLINE) {
            NO_DEADLINE => next,
            at => {
                header.set_deadline(at);
                at
            }
        };
        let seq = q.next_seq();
        let handle = q.push_tracked(
            TimedEntry {
                deadline: next,
                seq,
                value: job,
            },
            |e| &e.value.header().position, // T4
        );
        Requeued::Queued(handle)
    }

    /// Cancels a task; with `remove_on_cancel`, removes it from the queue first. Returns
    /// true if this call cancelled it.
    pub(crate) fn cancel(&self, job: &dyn Job) -> bool {
        let header = job.header();
        if !header.cancel() {
            return false;
        }
        // Relaxed: a setting; the removal itself is ordered by the queue lock (T4).
        if self.remove_on_cancel.load(Ordering::Relaxed) {
            let removed = {
                let mut q = self.queue.lock();
                let removed = q.remove_tracked(&header.position); // T4
                wake_if_drained(&q); // E3
                self.notify_idle(&q);
                removed
            };
            drop(removed); // I4: outside the lock
        }
        job.finish_cancelled();
        true
    }

    fn shutdown(&self) {
        let (first, removed, terminated) = {
            let mut q = self.queue.lock();
            let first = q.ext.run_state == RunState::Running;
            if first {
                q.ext.run_state = RunState::Shutdown;
                self.is_shutdown.store(true, Ordering::Relaxed);
            }
            let removed = self.apply_shutdown_policies(&mut q);
            q.wake_all(); // E3: idle workers re-check; they exit if drained
            (first, removed, self.check_terminated(&mut q))
        };
        if first {
            tracing::info!(target: "schedpool", "executor shut down");
        }
        finish_removed(removed);
        if terminated {
            tracing::info!(target: "schedpool", "executor terminated");
        }
    }

    /// Removes the queued tasks the run-after-shutdown policies no longer allow (and
    /// cancelled ones); cancels them under the lock, so `is_cancelled` is true by the time
    /// the lock is released. Does nothing before shutdown.
    fn apply_shutdown_policies(&self, q: &mut Guard<'_>) -> Vec<(Entry, bool)> {
        if q.ext.run_state == RunState::Running {
            return Vec::new();
        }
        let keep_periodic = self.continue_periodic.load(Ordering::Relaxed);
        let keep_delayed = self.execute_delayed.load(Ordering::Relaxed);
        let now = self.clock().now();
        let removed = q.extract_if(|e| {
            let h = e.value.header();
            h.state() == state::CANCELLED
                || if h.is_periodic() {
                    !keep_periodic
                } else {
                    !keep_delayed && e.deadline > now
                }
        });
        wake_if_drained(q);
        self.notify_idle(q);
        removed
            .into_iter()
            .map(|e| {
                let won = e.value.header().cancel();
                (e, won)
            })
            .collect()
    }

    fn shutdown_now(self: &Arc<Self>) -> Vec<PendingTask> {
        let (first, entries, terminated) = {
            let mut q = self.queue.lock();
            let first = q.ext.run_state == RunState::Running;
            q.ext.run_state = RunState::Stop;
            self.is_shutdown.store(true, Ordering::Relaxed);
            let entries = q.drain_due(Ticks::MAX);
            q.wake_all();
            self.notify_idle(&q);
            (first, entries, self.check_terminated(&mut q))
        };
        if first {
            tracing::info!(target: "schedpool", "executor shut down (shutdown_now)");
        }
        if terminated {
            tracing::info!(target: "schedpool", "executor terminated");
        }
        entries
            .into_iter()
            .map(|e| e.value)
            .filter(|job| job.header().state() == state::SCHEDULED)
            .map(|job| PendingTask::new(job, self.clone()))
            .collect()
    }

    fn await_termination(&self, until: Option<Instant>) -> bool {
        let mut q = self.queue.lock();
        while !q.ext.terminated {
            if q.wait_on(&self.termination, until) && !q.ext.terminated {
                return false;
            }
        }
        true
    }

    /// Latches `terminated` if shutdown and every thread is gone (E5); `true` if this call
    /// latched it.
    fn check_terminated(&self, q: &mut Guard<'_>) -> bool {
        let done = !q.ext.terminated && q.ext.run_state != RunState::Running && q.ext.threads == 0;
        if done {
            debug_assert!(q.is_empty() || q.ext.run_state == RunState::Stop, "E1");
            q.ext.terminated = true;
            self.termination.notify_all();
        }
        done
    }

    fn purge(&self) -> usize {
        let removed = {
            let mut q = self.queue.lock();
            let removed = q.extract_if(|e| e.value.header().state() == state::CANCELLED);
            wake_if_drained(&q);
            self.notify_idle(&q);
            removed
        };
        removed.len()
    }

    fn stats(&self) -> PoolStats {
        let (lateness_p50, lateness_p99, lateness_max) = self.lateness.summary();
        let q = self.queue.lock();
        let c = &self.counters;
        PoolStats {
            core_pool_size: self.core_pool_size(),
            pool_size: q.ext.workers,
            active_count: q.ext.active,
            largest_pool_size: q.ext.largest,
            queued: q.len(),
            task_count: stats::read(&c.task_count),
            completed_task_count: stats::read(&c.completed),
            rejected_count: stats::read(&c.rejected),
            panicked_count: stats::read(&c.panicked),
            late_count: stats::read(&c.late),
            skipped_runs: stats::read(&c.skipped),
            lateness_p50,
            lateness_p99,
            lateness_max,
        }
    }

    fn set_policy(&self, flag: &AtomicBool, value: bool) {
        let removed = {
            let mut q = self.queue.lock();
            flag.store(value, Ordering::Relaxed); // E4: under the lock
            self.apply_shutdown_policies(&mut q)
        };
        finish_removed(removed);
    }

    fn set_core_pool_size(self: &Arc<Self>, n: usize) {
        let spawns: Vec<usize> = {
            let mut q = self.queue.lock();
            let old = self.core_pool_size.swap(n, Ordering::Relaxed);
            if n < old {
                q.ext.epoch += 1; // surplus idle workers re-check and time out
                q.wake_all();
                Vec::new()
            } else if q.ext.run_state == RunState::Running {
                // Java: start threads for queued tasks, at most one per new core slot.
                let wanted = (n - old).min(q.len());
                let mut spawns = Vec::new();
                while spawns.len() < wanted && q.ext.workers < n {
                    spawns.push(q.ext.reserve());
                }
                spawns
            } else {
                Vec::new()
            }
        };
        for index in spawns {
            self.start_worker(index);
        }
    }

    /// Starts up to `max` missing core threads; returns how many started.
    fn prestart(self: &Arc<Self>, max: usize) -> usize {
        let mut started = 0;
        while started < max {
            let index = {
                let mut q = self.queue.lock();
                if q.ext.run_state != RunState::Running || q.ext.workers >= self.core_pool_size() {
                    break;
                }
                q.ext.reserve()
            };
            if !self.start_worker(index) {
                break;
            }
            started += 1;
        }
        started
    }

    /// Starts the thread for a reserved worker slot; on failure releases the slot and
    /// returns false.
    fn start_worker(self: &Arc<Self>, index: usize) -> bool {
        let mut builder = crate::sync::thread::Builder::new()
            .name(format!("{}{}", self.config.thread_name_prefix, index));
        if let Some(size) = self.config.thread_stack_size {
            builder = builder.stack_size(size);
        }
        let shared = self.clone();
        match builder.spawn(move || worker::run(shared, index)) {
            Ok(_) => true,
            Err(err) => {
                tracing::error!(target: "schedpool", worker = index, error = %err, "could not start a worker thread");
                let terminated = {
                    let mut q = self.queue.lock();
                    q.ext.workers -= 1;
                    q.ext.threads -= 1;
                    self.check_terminated(&mut q)
                };
                if terminated {
                    tracing::info!(target: "schedpool", "executor terminated");
                }
                false
            }
        }
    }

    /// The worker's next task (Java: `getTask`), with the worker's bookkeeping: `finished`
    /// says the caller just ran a task, `requeue` carries a periodic task's next run, both
    /// settled in the same critical section as the take. Returns `None` when the worker
    /// must exit, having released its worker slot under the lock (E1).
    pub(crate) fn next_task(
        &self,
        finished: bool,
        requeue: Option<(Arc<dyn Job>, Ticks)>,
    ) -> Option<(Entry, Ticks)> {
        let mut q = self.queue.lock();
        if let Some((job, next)) = requeue {
            if let Requeued::Refused(job) = self.requeue_locked(&mut q, job, next) {
                drop(q); // rare (after shutdown): complete its future without the lock
                job.finish_cancelled();
                q = self.queue.lock();
            }
        }
        if finished {
            q.ext.active -= 1;
            if q.ext.active == 0 {
                self.notify_idle(&q);
            }
        }
        let mut timed_out = false;
        loop {
            if q.ext.is_drained_after_shutdown(q.len()) {
                q.ext.workers -= 1;
                return None;
            }
            // Java: a worker above the core size (with core 0: the single one) is surplus. A
            // last worker with tasks queued cannot exit (E1), so it waits for them untimed
            // rather than polling every `keep_alive`.
            let surplus =
                self.config.allow_core_thread_timeout || q.ext.workers > self.core_pool_size();
            let timed = surplus && (q.ext.workers > 1 || q.is_empty());
            if timed && timed_out && (q.ext.workers > 1 || q.is_empty()) {
                q.ext.workers -= 1; // E1: another worker remains, or nothing is queued
                return None;
            }
            let epoch = q.ext.epoch;
            let timeout = if timed {
                clock::timeout_at(self.config.keep_alive)
            } else {
                None
            };
            let taken = q.take(timeout, |s| {
                s.ext.is_drained_after_shutdown(s.len())
                    || s.ext.epoch != epoch
                    || (surplus && !timed && s.is_empty()) // may time out now: re-decide
            });
            match taken {
                crate::queue::Take::Item(entry, now) => {
                    q.ext.active += 1;
                    wake_if_drained(&q); // E3
                    return Some((entry, now));
                }
                crate::queue::Take::TimedOut => timed_out = true,
                crate::queue::Take::Stopped => timed_out = timed && q.ext.epoch != epoch,
            }
        }
    }

    /// A worker thread is finishing (its stop hook has run). `released` says whether it
    /// already gave up its worker slot in `next_task`; `was_active` whether it dies in the
    /// middle of a task (only if the crate itself panicked: user code is contained).
    pub(crate) fn worker_exited(self: &Arc<Self>, released: bool, was_active: bool) {
        let (replacement, terminated) = {
            let mut q = self.queue.lock();
            if !released {
                q.ext.workers -= 1;
            }
            if was_active {
                q.ext.active -= 1;
                self.notify_idle(&q);
            }
            q.ext.threads -= 1;
            // E1 even if a worker died abnormally: a queued task always has a worker.
            let replacement =
                (q.ext.workers == 0 && !q.is_empty() && q.ext.run_state != RunState::Stop)
                    .then(|| q.ext.reserve());
            (replacement, self.check_terminated(&mut q))
        };
        if let Some(index) = replacement {
            tracing::error!(target: "schedpool", "a worker died unexpectedly; starting another");
            self.start_worker(index);
        }
        if terminated {
            tracing::info!(target: "schedpool", "executor terminated");
        }
    }
}

/// What became of a periodic task's re-queue.
enum Requeued {
    /// In the queue under this handle.
    Queued(crate::queue::Handle),
    /// Not allowed after shutdown and cancelled here: its future must be completed.
    Refused(Arc<dyn Job>),
    /// Cancelled by someone else meanwhile, who completes it.
    Dropped,
}

/// E3: after shutdown, a drained queue wakes every idle worker so it can exit.
fn wake_if_drained(q: &Guard<'_>) {
    if q.ext.run_state != RunState::Running && q.is_empty() {
        q.wake_all();
    }
}

/// Completes the futures of tasks removed by a policy, outside the lock (I4).
fn finish_removed(removed: Vec<(Entry, bool)>) {
    for (entry, won) in removed {
        if won {
            entry.value.finish_cancelled();
        }
        crate::task::drop_quietly(entry);
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}
