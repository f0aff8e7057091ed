//! [`ScheduledThreadPoolExecutor`]: the public handle, like tokio's
//! `multi_thread/handle.rs`: the machinery (control state, queue, workers) is in `pool/`.
//! The handle builds what a task runs: the user's closure in the wrappers of `body/` its
//! submission asks for (the submitter's span link, a context, a fallible body, an
//! exclusive spec's lock), and hands it to the pool, which queues it. It decides
//! nothing itself: whether an exclusive job owes a catch-up run, which needs the lock's
//! store before the pool sees the task, and `run_exclusive`'s locked run on the
//! caller's thread are asked of `body/exclusive.rs`.

use std::fmt;
use std::time::{Duration, Instant};

use crate::body::{
    owes_catch_up, submitter_span, Fallible, Guarded, Linked, TaskContext, WithContext,
};
use crate::builder::Builder;
use crate::clock::{self, Ticks};
use crate::error::ScheduleError;
use crate::future::ScheduledFuture;
use crate::pool::Pool;
use crate::schedule::{Next, Periodic};
use crate::stats::TaskInfo;
use crate::sync::Arc;
use crate::task::{Label, OnceBody, PeriodicBody, Plain};

mod async_jobs;
mod cluster;
mod lifecycle;
mod named;

pub use lifecycle::{Terminated, WeakExecutor};
pub use named::Named;

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
    pool: Arc<Pool>,
}

impl ScheduledThreadPoolExecutor {
    /// Same as `Builder::new().core_pool_size(core_pool_size).build()`.
    pub fn new(core_pool_size: usize) -> Self {
        Builder::new().core_pool_size(core_pool_size).build()
    }

    /// The pool's name ([`Builder::name`]; by default the thread name prefix without its
    /// trailing `-`), the `pool` field of every log event it emits.
    pub fn name(&self) -> &str {
        self.pool.name()
    }

    /// The current time in the pool's clock (the real monotonic clock, or its
    /// [`ManualClock`](crate::ManualClock)), for deadlines given to
    /// [`schedule_at`](Self::schedule_at) and [`ScheduledFuture::reschedule`] without
    /// knowing which clock the pool uses.
    ///
    /// ```
    /// use schedpool::{ManualClock, ScheduledThreadPoolExecutor};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().clock(clock.clone()).build();
    /// clock.advance(Duration::from_secs(60));
    /// assert_eq!(pool.now(), clock.now());
    /// let fut = pool.schedule_at(pool.now() + Duration::from_secs(1), || ()).unwrap();
    /// assert_eq!(fut.delay(), Duration::from_secs(1));
    /// ```
    pub fn now(&self) -> Instant {
        let clock = self.pool.clock();
        clock.instant_of(clock.now())
    }

    /// A snapshot of the tasks, queued or running, earliest deadline first: id, name,
    /// kind, the schedule in words, next deadline, whether it is running, runs so far,
    /// when the last run started and how it went (Java's `getQueue()`, Spring's
    /// `ScheduledTaskHolder`: a dashboard's task list, or a printout with
    /// [`TaskInfo`]'s `Display`). A periodic task is listed from its submission to its
    /// end, also while a run of it is in progress (`running`); a running one-shot is
    /// listed until its run ends. It locks every shard of the queue once, briefly, and
    /// copies: O(n).
    ///
    /// ```
    /// use schedpool::{ManualClock, Periodic, ScheduledThreadPoolExecutor, TaskKind};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(1).clock(clock.clone()).build();
    /// let flush = Periodic::at_fixed_rate(Duration::from_secs(60))
    ///     .initial_delay(Duration::from_secs(1))
    ///     .name("metrics flush");
    /// pool.schedule_periodic(flush, || ()).unwrap();
    /// pool.schedule(Duration::from_secs(5), || ()).unwrap();
    /// let tasks = pool.scheduled_tasks();
    /// assert_eq!(tasks.len(), 2);
    /// assert_eq!(tasks[0].name.as_deref(), Some("metrics flush")); // due in 1 s
    /// assert_eq!((tasks[1].kind, tasks[1].deadline), (TaskKind::Once, clock.now() + Duration::from_secs(5)));
    /// assert_eq!(tasks[1].due_in, Duration::from_secs(5));
    /// ```
    pub fn scheduled_tasks(&self) -> Vec<TaskInfo> {
        self.pool.scheduled_tasks()
    }

    /// A handle to the task numbered `id` ([`TaskInfo::id`](crate::TaskInfo::id),
    /// [`ScheduledFuture::id`]), queued or running, to pause, resume, run now, reschedule
    /// or cancel it from an admin endpoint with no bookkeeping of the caller's; `None` if
    /// no such task is in the pool (it ended, or was never this pool's). It searches the
    /// queue under every shard's lock, as [`scheduled_tasks`](Self::scheduled_tasks) does:
    /// for operators, not for hot paths.
    ///
    /// ```
    /// use schedpool::{ManualClock, Periodic, ScheduledThreadPoolExecutor};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().clock(clock.clone()).build();
    /// let spec = Periodic::at_fixed_rate(Duration::from_secs(60)).name("report");
    /// pool.schedule_periodic(spec, || ()).unwrap();
    /// let id = pool.scheduled_tasks()[0].id; // what a `/tasks` page shows
    /// let handle = pool.task(id).expect("listed");   // what `POST /tasks/{id}/pause` does
    /// assert!(handle.pause());
    /// assert!(pool.scheduled_tasks()[0].paused);
    /// pool.close();
    /// ```
    pub fn task(&self, id: u64) -> Option<crate::future::CancelHandle> {
        let task = self.pool.find_task(id)?;
        Some(crate::future::CancelHandle::new(
            task,
            crate::pool::Stripe::new(self.pool.clone()),
        ))
    }

    /// A [`Builder`] with the defaults.
    pub fn builder() -> Builder {
        Builder::new()
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
        self.once_after(delay, Plain(task), ())
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
        self.once_at(deadline, Plain(task), ())
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
        // Inside a span that tracing records, the task is linked to it (`body::Linked`).
        match submitter_span(self.pool.config.task_span_level) {
            None => self.pool.execute(Plain(task)),
            Some(parent) => self.pool.execute(Linked {
                body: Plain(task),
                parent,
            }),
        }
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
        self.once_after(Duration::ZERO, Plain(task), ())
    }

    /// Runs `task` once after `delay`, as [`schedule`](Self::schedule) does, handing it a
    /// [`TaskContext`]: its own cancel handle (usable from the first run on, with no race
    /// against the future being returned), its deadline, its run count, and whether it
    /// has been asked to stop ([`ScheduledFuture::interrupt`], `shutdown_now`).
    ///
    /// ```
    /// use schedpool::{ScheduledThreadPoolExecutor, TaskContext};
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    ///
    /// let pool = ScheduledThreadPoolExecutor::new(1);
    /// let (tx, rx) = mpsc::channel();
    /// let fut = pool
    ///     .schedule_with_context(Duration::from_millis(5), move |ctx: &TaskContext<'_>| {
    ///         tx.send(ctx.cancel_handle()).unwrap(); // e.g. into a registry of running work
    ///         ctx.runs()
    ///     })
    ///     .unwrap();
    /// let handle = rx.recv().unwrap();
    /// assert_eq!(fut.get().unwrap(), 1);
    /// assert!(handle.is_done());
    /// pool.close();
    /// ```
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule).
    pub fn schedule_with_context<F, T>(
        &self,
        delay: Duration,
        task: F,
    ) -> Result<ScheduledFuture<T>, ScheduleError>
    where
        F: FnOnce(&TaskContext<'_>) -> T + Send + 'static,
        T: Send + 'static,
    {
        self.once_after(delay, WithContext(task), ())
    }

    /// Submits a one-shot with body `task`, named `name` (`()`: unnamed), due `delay`
    /// from now (what `schedule`, `submit` and their `Named` forms share).
    pub(crate) fn once_after<B, T, N>(
        &self,
        delay: Duration,
        task: B,
        name: N,
    ) -> Result<ScheduledFuture<T>, ScheduleError>
    where
        B: OnceBody<T>,
        T: Send + 'static,
        N: Label,
    {
        let now = self.pool.clock().now();
        self.schedule_body(clock::add(now, delay), Some(now), task, name)
    }

    /// As [`once_after`](Self::once_after), due at `deadline` in the executor's clock.
    pub(crate) fn once_at<B, T, N>(
        &self,
        deadline: Instant,
        task: B,
        name: N,
    ) -> Result<ScheduledFuture<T>, ScheduleError>
    where
        B: OnceBody<T>,
        T: Send + 'static,
        N: Label,
    {
        let deadline = self.pool.clock().ticks_of(deadline);
        self.schedule_body(deadline, None, task, name)
    }

    /// Submits a one-shot due at `deadline`; `now`: the clock reading it was computed
    /// from, if any (`Pool::submit`).
    fn schedule_body<B, T, N>(
        &self,
        deadline: Ticks,
        now: Option<Ticks>,
        task: B,
        name: N,
    ) -> Result<ScheduledFuture<T>, ScheduleError>
    where
        B: OnceBody<T>,
        T: Send + 'static,
        N: Label,
    {
        // Inside a span that tracing records, the task is linked to it (`body::Linked`).
        let (task, pool) = match submitter_span(self.pool.config.task_span_level) {
            None => self.pool.schedule_once(deadline, now, task, name)?,
            Some(parent) => {
                let body = Linked { body: task, parent };
                self.pool.schedule_once(deadline, now, body, name)?
            }
        };
        Ok(ScheduledFuture::new(task, pool))
    }

    /// Runs `task` periodically as `spec` says: fixed rate (with a [`MissedTicks`]
    /// policy), fixed delay, or a [`Trigger`]; with optional `max_lateness`, `max_runs`
    /// and [`OnPanic`] policy. The Java-style methods are this with the defaults.
    ///
    /// A trigger is first handed the executor's clock (`Trigger::use_clock`), then asked
    /// for its first deadline, `trigger.first_deadline(now + initial_delay)`; if it
    /// returns `None` (or `max_runs` is 0) the future completes with `Ok(())` without a
    /// run, unless the trigger calls that a mistake (`Trigger::refuse_if_never_due`, as
    /// a [`CronTrigger`](crate::CronTrigger) whose expression matches no time from now
    /// on does); if it panics, the task is accepted and its future yields
    /// `Err(Panicked)`.
    ///
    /// [`MissedTicks`]: crate::MissedTicks
    /// [`Trigger`]: crate::Trigger
    /// [`OnPanic`]: crate::OnPanic
    ///
    /// # Errors
    /// [`ScheduleError::ZeroPeriod`] for a zero period or delay;
    /// [`ScheduleError::NeverDue`] for a trigger with no first deadline that refuses to
    /// be scheduled without one; else as [`schedule`](Self::schedule).
    pub fn schedule_periodic<F>(
        &self,
        spec: Periodic,
        task: F,
    ) -> Result<ScheduledFuture<()>, ScheduleError>
    where
        F: FnMut() + Send + 'static,
    {
        self.schedule_guarded(spec, Plain(task))
    }

    /// As [`schedule_periodic`](Self::schedule_periodic), with a closure that gets a
    /// [`TaskContext`] and says what comes next ([`Next`]): carry on with the spec's rule,
    /// run next after a delay or at an instant of its choosing, or stop (the future then
    /// completes with `Ok(())`). A poller that backs off while there is nothing to do,
    /// without a shared atomic or a custom [`Trigger`](crate::Trigger):
    ///
    /// ```
    /// use schedpool::{ManualClock, Next, Periodic, ScheduledThreadPoolExecutor};
    /// use std::collections::VecDeque;
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(1).clock(clock.clone()).build();
    /// let inbox = Arc::new(Mutex::new(VecDeque::from([1, 2])));
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let (q, out) = (inbox.clone(), seen.clone());
    /// let poller = pool
    ///     .schedule_periodic_with_context(Periodic::with_fixed_delay(Duration::from_millis(10)), move |_ctx| {
    ///         match q.lock().unwrap().pop_front() {
    ///             Some(0) => Next::Stop,                                    // "shut down" message
    ///             Some(m) => { out.lock().unwrap().push(m); Next::Continue } // again in 10 ms
    ///             None => Next::After(Duration::from_secs(1)),              // idle: back off
    ///         }
    ///     })
    ///     .unwrap();
    /// for _ in 0..3 {
    ///     clock.advance(Duration::from_millis(10));
    ///     pool.wait_idle(Duration::from_secs(10));
    /// }
    /// assert_eq!(*seen.lock().unwrap(), [1, 2]); // the third run found nothing
    /// inbox.lock().unwrap().push_back(0);
    /// clock.advance(Duration::from_millis(10));
    /// pool.wait_idle(Duration::from_secs(10));
    /// assert!(!poller.is_done(), "backing off: not run 10 ms later");
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(poller.get().unwrap(), ()); // stopped by the message
    /// ```
    ///
    /// # Errors
    /// As [`schedule_periodic`](Self::schedule_periodic).
    pub fn schedule_periodic_with_context<F>(
        &self,
        spec: Periodic,
        task: F,
    ) -> Result<ScheduledFuture<()>, ScheduleError>
    where
        F: FnMut(&TaskContext<'_>) -> Next + Send + 'static,
    {
        self.schedule_guarded(spec, WithContext(task))
    }

    /// A periodic task whose closure may fail: it gets a [`TaskContext`] and returns
    /// `Ok(Next)` (as for [`schedule_periodic_with_context`](Self::schedule_periodic_with_context))
    /// or `Err(e)`. A failed run is counted (`PoolStats::failed_runs`) and traced at
    /// `warn` with its error; the next run comes after the spec's
    /// [`backoff`](Periodic::backoff) wait if it has one (else by the rule), and after
    /// [`stop_after_errors`](Periodic::stop_after_errors) failures in a row the task stops.
    /// The future yields `Ok(Ok(()))` when the task ends by itself, `Ok(Err(e))` with the
    /// last error when errors stopped it, and `Err(TaskError)` when it was cancelled or
    /// panicked. A poller that backs off on errors:
    ///
    /// ```
    /// use schedpool::{Backoff, ManualClock, Next, Periodic, ScheduledThreadPoolExecutor};
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(1).clock(clock.clone()).build();
    /// let calls = Arc::new(AtomicU32::new(0));
    /// let c = calls.clone();
    /// let spec = Periodic::with_fixed_delay(Duration::from_secs(1))
    ///     .backoff(Backoff::new(Duration::from_secs(10), Duration::from_secs(60)))
    ///     .stop_after_errors(3);
    /// let poller = pool
    ///     .schedule_fallible(spec, move |_ctx| {
    ///         c.fetch_add(1, Ordering::SeqCst);
    ///         Err::<Next, _>("the server is down") // every call fails
    ///     })
    ///     .unwrap();
    /// for wait in [10, 20] {
    ///     pool.wait_idle(Duration::from_secs(10));
    ///     clock.advance(Duration::from_secs(wait)); // 10 s, then 20 s after each failure
    /// }
    /// assert_eq!(poller.get().unwrap(), Err("the server is down"));
    /// assert_eq!(calls.load(Ordering::SeqCst), 3);
    /// assert_eq!(pool.stats().failed_runs, 3);
    /// ```
    ///
    /// # Errors
    /// As [`schedule_periodic`](Self::schedule_periodic).
    pub fn schedule_fallible<F, E>(
        &self,
        spec: Periodic,
        task: F,
    ) -> Result<ScheduledFuture<Result<(), E>>, ScheduleError>
    where
        F: FnMut(&TaskContext<'_>) -> Result<Next, E> + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        let on_error = spec.on_error;
        self.schedule_guarded(spec, Fallible::new(task, on_error))
    }

    /// Submits a periodic task with body `body`, wrapped in what its spec adds around each
    /// run (`body/`): the link to the caller's span, the cluster lock.
    fn schedule_guarded<B: PeriodicBody>(
        &self,
        mut spec: Periodic,
        body: B,
    ) -> Result<ScheduledFuture<B::Output>, ScheduleError> {
        let lock = spec.exclusive.take();
        if let Some(exclusive) = lock.as_ref().filter(|e| e.catch_up) {
            spec.catch_up_now = owes_catch_up(exclusive, &spec.schedule, self.name());
        }
        let body = Guarded::new(body, submitter_span(self.pool.config.task_span_level), lock);
        let (task, pool) = self.pool.schedule_periodic(spec, body)?;
        Ok(ScheduledFuture::new(task, pool))
    }
}

#[cfg(all(test, loom))]
impl ScheduledThreadPoolExecutor {
    pub(crate) fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }
}

impl Clone for ScheduledThreadPoolExecutor {
    fn clone(&self) -> Self {
        self.pool.handle_cloned();
        ScheduledThreadPoolExecutor {
            pool: self.pool.clone(),
        }
    }
}

impl fmt::Debug for ScheduledThreadPoolExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduledThreadPoolExecutor")
            .field("name", &self.name())
            .field("core_pool_size", &self.core_pool_size())
            .field("pool", &*self.pool)
            .finish()
    }
}

impl Builder {
    /// Builds the executor. No thread starts until a task needs one (with the feature
    /// `metrics`, the process's metrics thread starts with the first pool that has a
    /// `metrics_interval`).
    pub fn build(self) -> ScheduledThreadPoolExecutor {
        let pool = Pool::new(self.into_config());
        #[cfg(feature = "metrics")]
        if !pool.config.metrics_interval.is_zero() {
            crate::pool::watch(&pool, pool.config.metrics_interval);
        }
        ScheduledThreadPoolExecutor { pool }
    }
}
