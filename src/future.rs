//! [`ScheduledFuture`], [`CancelHandle`] and [`PendingTask`]: what users hold.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::clock;
use crate::error::TaskError;
use crate::sync::Arc;
use crate::task::{state::State, Host, Task, TaskRef, TypedRef};

/// The handle to a scheduled task: cancel it, wait for it, or take its outcome (Java:
/// `ScheduledFuture`).
///
/// It is also a [`Future`] with output `Result<T, TaskError>`, usable from any async
/// runtime: the task's completion (or cancellation) wakes the last waker that polled it.
/// Dropping a `ScheduledFuture` does **not** cancel its task.
///
/// ```
/// use schedpool::{ManualClock, ScheduledThreadPoolExecutor, TaskError};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(1).clock(clock.clone()).build();
/// let fut = pool.schedule(Duration::from_secs(5), || 1).unwrap();
/// assert_eq!(fut.delay(), Duration::from_secs(5));
/// assert!(fut.cancel());
/// assert!(fut.is_cancelled() && fut.is_done());
/// assert!(matches!(fut.get(), Err(TaskError::Cancelled)));
/// ```
pub struct ScheduledFuture<T> {
    task: TypedRef<T>,
    /// The pool, as one of its stripes (`pool/mod.rs`, `Stripe`).
    host: Arc<dyn Host>,
}

impl<T> ScheduledFuture<T> {
    pub(crate) fn new(task: TypedRef<T>, host: Arc<dyn Host>) -> Self {
        ScheduledFuture { task, host }
    }

    fn erased(&self) -> &dyn Task {
        &**self.task.task()
    }

    /// Cancels the task. `true` if this call moved it to cancelled: it was pending, or it
    /// is periodic and not finished. A one-shot that has started returns false and its
    /// future yields the run's outcome; a running periodic task completes its current run
    /// and is not run again. With `remove_on_cancel` (the default) the task has left the
    /// queue and its closure has been dropped when this returns.
    pub fn cancel(&self) -> bool {
        self.host.cancel(self.erased(), false)
    }

    /// Cancels the task like [`cancel`](Self::cancel), and a *running* one-shot too: the
    /// cooperative form of Java's `cancel(true)` (Rust has no thread interrupts). `true`
    /// if this call cancelled the task: it was pending or running. When it returns true,
    /// the future is done and reports [`TaskError::Cancelled`] at once, as Java's does
    /// after `cancel(true)`, whatever a run still in progress later returns (its output
    /// is dropped). The run itself goes on until its closure notices, through
    /// [`TaskContext::is_cancelled`](crate::TaskContext::is_cancelled), or ends; a
    /// periodic task is not run again. `false` if the task had finished or was cancelled
    /// before.
    ///
    /// ```
    /// use schedpool::ScheduledThreadPoolExecutor;
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    ///
    /// let pool = ScheduledThreadPoolExecutor::new(1);
    /// let (started, on_start) = mpsc::channel();
    /// let fut = pool
    ///     .schedule_with_context(Duration::ZERO, move |ctx| {
    ///         started.send(()).unwrap();
    ///         let mut polls = 0u64;
    ///         while !ctx.is_cancelled() {
    ///             polls += 1; // a long job that checks now and then
    ///             std::thread::yield_now();
    ///         }
    ///         polls
    ///     })
    ///     .unwrap();
    /// on_start.recv().unwrap();
    /// assert!(!fut.cancel(), "a plain cancel leaves a running one-shot alone");
    /// assert!(fut.interrupt(), "an interrupt asks it to stop");
    /// assert!(fut.get().unwrap_err().is_cancelled());
    /// pool.close();
    /// ```
    pub fn interrupt(&self) -> bool {
        self.host.cancel(self.erased(), true)
    }

    /// `true` if the task was cancelled (by any means).
    pub fn is_cancelled(&self) -> bool {
        self.erased().header().state() == State::Cancelled
    }

    /// `true` once the task completed, panicked or was cancelled.
    pub fn is_done(&self) -> bool {
        self.erased().header().state().is_terminal()
    }

    /// `true` for a periodic task: fixed rate, fixed delay or a [`Trigger`](crate::Trigger).
    pub fn is_periodic(&self) -> bool {
        self.erased().header().is_periodic()
    }

    /// The task's number: the `id` of its `task` span, of its log lines and of its row in
    /// [`scheduled_tasks`](crate::ScheduledThreadPoolExecutor::scheduled_tasks) (unique in
    /// the process).
    ///
    /// ```
    /// use schedpool::ScheduledThreadPoolExecutor;
    /// use std::time::Duration;
    ///
    /// let pool = ScheduledThreadPoolExecutor::new(1);
    /// let fut = pool.schedule(Duration::from_secs(60), || ()).unwrap();
    /// assert_eq!(pool.scheduled_tasks()[0].id, fut.id());
    /// # pool.shutdown_now();
    /// ```
    pub fn id(&self) -> u64 {
        self.erased().header().id()
    }

    /// The next (or last) run's deadline, in the executor's clock. For a periodic task it
    /// is the current run's deadline until that run ends, then the next one.
    pub fn deadline(&self) -> Instant {
        self.host
            .clock()
            .instant_of(self.host.deadline_of(self.erased()))
    }

    /// Time left until [`deadline`](Self::deadline); zero when due or past (Java:
    /// `getDelay`).
    pub fn delay(&self) -> Duration {
        let clock = self.host.clock();
        clock::since(self.host.deadline_of(self.erased()), clock.now())
    }

    /// Blocks until the task is done.
    pub fn wait(&self) {
        self.task.outcome().wait(None);
    }

    /// Blocks until the task is done or `timeout` (real time) passes; `true` if done.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        self.task.outcome().wait(clock::timeout_at(timeout))
    }

    /// Blocks until the task is done and returns its outcome (Java: `get`).
    ///
    /// # Errors
    /// [`TaskError::Cancelled`] if it was cancelled; [`TaskError::Panicked`] if it panicked.
    ///
    /// # Panics
    /// If the future was already polled to completion as a `Future`.
    pub fn get(self) -> Result<T, TaskError> {
        self.task.outcome().wait_take()
    }

    /// Moves the task's next run to `deadline` (in the executor's clock) in O(log n),
    /// keeping this future; a periodic task continues from there with its own rule. For a
    /// running periodic task it is the next run that moves. Returns false if the task is
    /// done, cancelled, a one-shot already running, or was handed out by `shutdown_now`.
    /// The moved task takes a new place among tasks with the same deadline (FIFO by the
    /// time of the reschedule).
    ///
    /// ```
    /// use schedpool::{ManualClock, ScheduledThreadPoolExecutor};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(1).clock(clock.clone()).build();
    /// let fut = pool.schedule(Duration::from_secs(3600), || "ran").unwrap();
    /// assert!(fut.reschedule(clock.now() + Duration::from_secs(1)));
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(fut.get().unwrap(), "ran");
    /// ```
    pub fn reschedule(&self, deadline: Instant) -> bool {
        let at = self.host.clock().ticks_of(deadline);
        self.host.reschedule(self.erased(), at, None)
    }

    /// Moves the task's next run to `delay` from now, by the executor's clock (a
    /// `ManualClock`'s time, if it has one): [`reschedule`](Self::reschedule) to `now +
    /// delay`, with the same rules and return value. The idle timeout's re-arm ("push it
    /// back by the idle period"): the executor reads its clock once, for the deadline and
    /// for the place among equal deadlines, where `reschedule(Instant::now() + delay)`
    /// reads it twice. A `delay` past what the clock can represent is capped, as in
    /// [`schedule`](crate::ScheduledThreadPoolExecutor::schedule).
    ///
    /// ```
    /// use schedpool::{ManualClock, ScheduledThreadPoolExecutor};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(1).clock(clock.clone()).build();
    /// let idle = pool.schedule(Duration::from_secs(30), || "closed").unwrap();
    /// clock.advance(Duration::from_secs(20));
    /// assert!(idle.reschedule_after(Duration::from_secs(30)), "traffic: 30 s more");
    /// assert_eq!(idle.delay(), Duration::from_secs(30));
    /// clock.advance(Duration::from_secs(30));
    /// assert_eq!(idle.get().unwrap(), "closed");
    /// ```
    pub fn reschedule_after(&self, delay: Duration) -> bool {
        let now = self.host.clock().now();
        self.host
            .reschedule(self.erased(), clock::add(now, delay), Some(now))
    }

    /// Pauses a periodic task, as an operator stops a job for a while (Quartz's
    /// `pauseJob`, a Kubernetes CronJob's `suspend`): no run starts until
    /// [`resume`](Self::resume), and a run in progress finishes. The task stays queued,
    /// listed ([`TaskInfo::paused`](crate::TaskInfo::paused)) and on its schedule: each
    /// run that comes due while it is paused is skipped and counted
    /// ([`LastRun::Paused`](crate::LastRun::Paused), `PoolStats::paused_runs`, the
    /// `paused` outcome of the runs counter with the `metrics` feature) and its rule goes
    /// on from it, as for a run skipped for `max_lateness`: so a fixed-rate task keeps its
    /// grid, and a resumed task runs at its next tick, with no burst of the ticks it
    /// missed. `true` if this call paused it; `false` for a one-shot, a task that has
    /// ended, or one paused already. Traced at `info` ("task paused", with `id` and
    /// `task_name`).
    ///
    /// ```
    /// use schedpool::{LastRun, ManualClock, Periodic, ScheduledThreadPoolExecutor};
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().clock(clock.clone()).build();
    /// let runs = Arc::new(AtomicU32::new(0));
    /// let r = runs.clone();
    /// let spec = Periodic::at_fixed_rate(Duration::from_secs(60))
    ///     .initial_delay(Duration::from_secs(60))
    ///     .name("report");
    /// let job = pool
    ///     .schedule_periodic(spec, move || {
    ///         r.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .unwrap();
    /// assert!(job.pause());
    /// clock.advance(Duration::from_secs(120)); // two ticks, both skipped
    /// pool.wait_idle(Duration::from_secs(10));
    /// assert_eq!(runs.load(Ordering::SeqCst), 0);
    /// assert_eq!(pool.scheduled_tasks()[0].last_run, Some(LastRun::Paused));
    /// assert!(job.resume());
    /// clock.advance(Duration::from_secs(60)); // the next tick runs
    /// pool.wait_idle(Duration::from_secs(10));
    /// assert_eq!(runs.load(Ordering::SeqCst), 1);
    /// pool.close();
    /// ```
    pub fn pause(&self) -> bool {
        self.host.pause(self.erased(), true)
    }

    /// Resumes a task paused by [`pause`](Self::pause): its next run is the next one its
    /// rule has (the ticks it missed while paused were skipped, whatever its
    /// [`MissedTicks`](crate::MissedTicks)). `true` if this call resumed it; `false` if
    /// it was not paused or has ended. Traced at `info` ("task resumed").
    pub fn resume(&self) -> bool {
        self.host.pause(self.erased(), false)
    }

    /// `true` while the task is paused ([`pause`](Self::pause)).
    pub fn is_paused(&self) -> bool {
        is_paused(self.erased())
    }

    /// One extra run as soon as a worker is free (Quartz's `triggerJob`): for an operator
    /// who fixed a job's input and will not wait for its next time. A queued task is
    /// moved to now; a periodic one then goes back to the deadline it had (a fixed-rate
    /// task to its grid, a cron trigger to its next time), or, with a fixed delay, counts
    /// its delay from the extra run. A periodic task running now runs once more right
    /// after (never two runs of one task at once), and a second `run_now` before the
    /// extra run has started asks for nothing more. The extra run is a run like another
    /// (counted, `max_runs` included; an [exclusive](crate::Periodic::exclusive) one takes
    /// its cluster lock, so it runs on one node). `true` if an extra run is pending after
    /// this call; `false` if the task has ended, is paused ([`resume`](Self::resume) it
    /// first), is a one-shot already taken for its run, or the pool is stopping
    /// (`shutdown_now`). A later [`reschedule`](Self::reschedule) replaces it. Traced at
    /// `info` ("task run requested now").
    ///
    /// ```
    /// use schedpool::{ManualClock, Periodic, ScheduledThreadPoolExecutor};
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().clock(clock.clone()).build();
    /// let runs = Arc::new(AtomicU32::new(0));
    /// let r = runs.clone();
    /// let spec = Periodic::at_fixed_rate(Duration::from_secs(3600))
    ///     .initial_delay(Duration::from_secs(3600));
    /// let job = pool
    ///     .schedule_periodic(spec, move || {
    ///         r.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .unwrap();
    /// assert!(job.run_now());
    /// pool.wait_idle(Duration::from_secs(10));
    /// assert_eq!(runs.load(Ordering::SeqCst), 1);
    /// assert_eq!(job.delay(), Duration::from_secs(3600), "back on its grid");
    /// pool.close();
    /// ```
    pub fn run_now(&self) -> bool {
        self.host.run_now(self.erased())
    }

    /// A cloneable handle that can cancel the task from elsewhere.
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle {
            task: self.task.task().clone(),
            host: self.host.clone(),
        }
    }
}

#[cfg(all(test, loom))]
impl<T> ScheduledFuture<T> {
    /// Models: the task behind the future.
    pub(crate) fn task(&self) -> &TypedRef<T> {
        &self.task
    }
}

impl<T: Send> Future for ScheduledFuture<T> {
    type Output = Result<T, TaskError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.task.outcome().poll(cx)
    }
}

impl<T> fmt::Debug for ScheduledFuture<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The deadline as a duration on the executor's clock (its ticks).
        let deadline = Duration::from_nanos(self.host.deadline_of(self.erased()));
        f.debug_struct("ScheduledFuture")
            .field("name", &self.erased().name())
            .field("task", self.erased().header())
            .field("deadline", &deadline)
            .finish()
    }
}

/// A cloneable, type-erased handle that cancels a task (for example from inside the task
/// itself, or from another thread that does not care about its output).
#[derive(Clone)]
pub struct CancelHandle {
    task: TaskRef,
    host: Arc<dyn Host>,
}

impl CancelHandle {
    /// A handle for `task` in the pool `host` (a task context's, `body/context.rs`).
    pub(crate) fn new(task: TaskRef, host: Arc<dyn Host>) -> Self {
        CancelHandle { task, host }
    }

    /// As [`ScheduledFuture::cancel`].
    pub fn cancel(&self) -> bool {
        self.host.cancel(&*self.task, false)
    }

    /// As [`ScheduledFuture::interrupt`].
    pub fn interrupt(&self) -> bool {
        self.host.cancel(&*self.task, true)
    }

    /// As [`ScheduledFuture::is_cancelled`].
    pub fn is_cancelled(&self) -> bool {
        self.task.header().state() == State::Cancelled
    }

    /// As [`ScheduledFuture::is_done`].
    pub fn is_done(&self) -> bool {
        self.task.header().state().is_terminal()
    }

    /// As [`ScheduledFuture::id`].
    pub fn id(&self) -> u64 {
        self.task.header().id()
    }

    /// As [`ScheduledFuture::reschedule`].
    pub fn reschedule(&self, deadline: Instant) -> bool {
        let at = self.host.clock().ticks_of(deadline);
        self.host.reschedule(&*self.task, at, None)
    }

    /// As [`ScheduledFuture::reschedule_after`].
    pub fn reschedule_after(&self, delay: Duration) -> bool {
        let now = self.host.clock().now();
        self.host
            .reschedule(&*self.task, clock::add(now, delay), Some(now))
    }

    /// As [`ScheduledFuture::pause`].
    pub fn pause(&self) -> bool {
        self.host.pause(&*self.task, true)
    }

    /// As [`ScheduledFuture::resume`].
    pub fn resume(&self) -> bool {
        self.host.pause(&*self.task, false)
    }

    /// As [`ScheduledFuture::is_paused`].
    pub fn is_paused(&self) -> bool {
        is_paused(&*self.task)
    }

    /// As [`ScheduledFuture::run_now`].
    pub fn run_now(&self) -> bool {
        self.host.run_now(&*self.task)
    }

    /// `true` for a periodic task.
    pub fn is_periodic(&self) -> bool {
        self.task.header().is_periodic()
    }

    /// The task's name, if it was given one.
    pub fn name(&self) -> Option<&str> {
        self.task.name()
    }
}

/// Whether `task` is paused (`ScheduledFuture::is_paused`).
fn is_paused(task: &dyn Task) -> bool {
    task.periodic().is_some_and(|c| c.is_paused())
}

impl fmt::Debug for CancelHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelHandle")
            .field("name", &self.task.name())
            .field("task", self.task.header())
            .finish()
    }
}

/// A queued task handed back by
/// [`shutdown_now`](crate::ScheduledThreadPoolExecutor::shutdown_now).
///
/// [`run`](PendingTask::run) runs it once on the calling thread and completes its future
/// (a periodic task runs once and is then cancelled). Dropping it without running
/// completes its future with `Err(Cancelled)`.
pub struct PendingTask {
    task: Option<TaskRef>,
    host: Arc<dyn Host>,
}

impl PendingTask {
    pub(crate) fn new(task: TaskRef, host: Arc<dyn Host>) -> Self {
        PendingTask {
            task: Some(task),
            host,
        }
    }

    /// `true` for a periodic task: fixed rate, fixed delay or a [`Trigger`](crate::Trigger).
    pub fn is_periodic(&self) -> bool {
        self.task.as_ref().is_some_and(|j| j.header().is_periodic())
    }

    /// The task's name, if it was given one ([`Periodic::name`](crate::Periodic::name),
    /// [`named`](crate::ScheduledThreadPoolExecutor::named)).
    pub fn name(&self) -> Option<&str> {
        self.task.as_ref().and_then(|j| j.name())
    }

    /// Its next deadline, in the executor's clock (a `ManualClock`'s instants on a pool
    /// built with one).
    ///
    /// ```
    /// use schedpool::{ManualClock, ScheduledThreadPoolExecutor};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().clock(clock.clone()).build();
    /// let _fut = pool.named("nightly").schedule(Duration::from_secs(60), || ()).unwrap();
    /// let pending = pool.shutdown_now();
    /// assert_eq!(pending[0].name(), Some("nightly"));
    /// assert_eq!(pending[0].deadline(), clock.now() + Duration::from_secs(60));
    /// ```
    pub fn deadline(&self) -> Instant {
        let ticks = self.task.as_ref().map_or(0, |j| j.header().deadline());
        self.host.clock().instant_of(ticks)
    }

    /// Runs the task once on this thread; its future completes. A panic goes into the
    /// future; this call does not unwind. Does nothing if the task was cancelled meanwhile.
    pub fn run(mut self) {
        if let Some(task) = self.task.take() {
            self.host.run_here(&task);
            crate::task::drop_quietly(task);
        }
    }
}

impl Drop for PendingTask {
    /// Cancels the task through its pool (counted in `PoolStats::cancelled_count`).
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            self.host.cancel(&*task, false);
            crate::task::drop_quietly(task);
        }
    }
}

impl fmt::Debug for PendingTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("PendingTask");
        if let Some(task) = &self.task {
            // As a future shows it: not the deadline's `Instant`, whose Debug is the OS
            // clock's raw reading, but how far ahead it is on the pool's clock (zero once
            // due).
            let clock = self.host.clock();
            let due_in = clock::since(task.header().deadline(), clock.now());
            d.field("name", &self.name())
                .field("periodic", &self.is_periodic())
                .field("deadline", &due_in)
                .field("task", task.header());
        }
        d.finish()
    }
}
