//! [`ScheduledThreadPoolExecutor`]: the public handle, like tokio's
//! `multi_thread/handle.rs`: the machinery (control state, queue, workers) is in `pool/`.
//! The handle builds what a task runs: the user's closure in the adaptors its submission
//! asks for (the submitter's span link, `task::Linked`; a context or a fallible body and
//! an exclusive spec's lock, `context.rs`), and hands it to the pool, which queues it.
//! Two things of the exclusive jobs are decided here because they need the lock's store
//! before the pool sees the task: whether a catch-up run is owed
//! (`missed_its_last_run`), and `run_exclusive`'s locked run on the caller's thread.

use std::fmt;
use std::time::{Duration, Instant};

use crate::builder::Builder;
use crate::clock::{self, Ticks};
use crate::cluster::run::{run_locked, Ledger, LockedOnce};
use crate::cluster::{Exclusive, Lease, LockError};
use crate::context::Guarded;
use crate::context::{Fallible, TaskContext, WithContext};
use crate::error::ScheduleError;
use crate::future::{PendingTask, ScheduledFuture};
use crate::named::Named;
use crate::pool::{self, Policy, Shared};
use crate::schedule::{Next, Periodic};
use crate::stats::{PoolStats, TaskInfo};
use crate::sync::{Arc, Weak};
use crate::task::{submitter_span, Label, Linked, OnceBody, PeriodicBody, Plain};

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

    /// The pool's name ([`Builder::name`]; by default the thread name prefix without its
    /// trailing `-`), the `pool` field of every log event it emits.
    pub fn name(&self) -> &str {
        self.shared.name()
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
        let clock = self.shared.clock();
        clock.instant_of(clock.now())
    }

    /// A snapshot of the tasks waiting in the queue, earliest deadline first: name, kind,
    /// next deadline, runs so far and how the last run went (Java's `getQueue()`,
    /// Spring's `ScheduledTaskHolder`). Tasks running right now are not in the queue and
    /// not listed. It locks every shard of the queue once, briefly, and copies: O(n).
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
        self.shared.scheduled_tasks()
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
        // Inside a span that tracing records, the task is linked to it (`task::Linked`).
        match submitter_span() {
            None => self.shared.execute(Plain(task)),
            Some(parent) => self.shared.execute(Linked {
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
        let now = self.shared.clock().now();
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
        let deadline = self.shared.clock().ticks_of(deadline);
        self.schedule_body(deadline, None, task, name)
    }

    /// Submits a one-shot due at `deadline`; `now`: the clock reading it was computed
    /// from, if any (`Shared::submit`).
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
        // Inside a span that tracing records, the task is linked to it (`task::Linked`).
        let (task, pool) = match submitter_span() {
            None => self.shared.schedule_once(deadline, now, task, name)?,
            Some(parent) => {
                let body = Linked { body: task, parent };
                self.shared.schedule_once(deadline, now, body, name)?
            }
        };
        Ok(ScheduledFuture::new(task, pool))
    }

    /// A way to submit one-shots under `name`, which their `task` spans, panic logs and
    /// [`scheduled_tasks`](Self::scheduled_tasks) then show (a periodic task is named by
    /// [`Periodic::name`]). The name is shared by every task submitted through the
    /// returned [`Named`], so naming costs a reference count per task, and nothing for
    /// tasks submitted without a name. The `Named` holds a handle to the pool, like a clone
    /// of this one, so it can be stored and moved.
    ///
    /// ```
    /// use schedpool::{ManualClock, ScheduledThreadPoolExecutor};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().clock(clock.clone()).build();
    /// let timeouts = pool.named("request-timeout");
    /// let fut = timeouts.schedule(Duration::from_secs(30), || "timed out").unwrap();
    /// let queued = pool.scheduled_tasks();
    /// assert_eq!(queued[0].name.as_deref(), Some("request-timeout"));
    /// clock.advance(Duration::from_secs(30));
    /// assert_eq!(fut.get().unwrap(), "timed out");
    /// pool.close();
    /// ```
    pub fn named(&self, name: impl Into<String>) -> Named {
        Named::new(self.clone(), name.into())
    }

    /// Runs `task` once after `delay` on one node of the cluster: every node schedules it,
    /// and the node that takes `exclusive`'s lock at the deadline runs it (ShedLock's
    /// `executeWithLock` for a one-shot: "the invoice run at 02:00, once, whichever node").
    /// The future completes with `Ok(Some(output))` on the node that ran it, `Ok(None)` on
    /// a node that found the lock held, and `Err(LockError)` on a node whose store could
    /// not be asked (then the task did not run there). The run sees its
    /// [`Lease`] (its fencing token); the lease is given back when
    /// the closure returns or panics (a panic completes the future with
    /// `Err(TaskError::Panicked)`, as for any task). Counted and traced as the runs of an
    /// exclusive periodic task are (`PoolStats::lock_acquired`, `lock_skipped`,
    /// `lock_failed`, `lock_overruns`); the task carries the lock's name (spans,
    /// [`scheduled_tasks`](Self::scheduled_tasks)).
    ///
    /// Nodes whose one-shots fall due a little apart must not run it one after the other:
    /// give `exclusive` an `at_least_for` longer than that spread, and compute the
    /// deadline from the wall clock on every node (as [`schedule_exclusive_at`] does with
    /// an `Instant` the caller derives from it).
    ///
    /// [`schedule_exclusive_at`]: Self::schedule_exclusive_at
    ///
    /// ```
    /// use schedpool::cluster::{Exclusive, LocalLock};
    /// use schedpool::ScheduledThreadPoolExecutor;
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let lock = Arc::new(LocalLock::new()); // a PgLock shared by the nodes, in production
    /// let nightly = Exclusive::new(lock, "invoice-run", Duration::from_secs(3600))
    ///     .at_least_for(Duration::from_secs(60));
    /// let (a, b) = (ScheduledThreadPoolExecutor::new(1), ScheduledThreadPoolExecutor::new(1));
    /// let on_a = a.schedule_exclusive(Duration::ZERO, nightly.clone(), |lease| lease.token()).unwrap();
    /// let on_b = b.schedule_exclusive(Duration::ZERO, nightly, |lease| lease.token()).unwrap();
    /// let (ran_a, ran_b) = (on_a.get().unwrap().unwrap(), on_b.get().unwrap().unwrap());
    /// assert!(ran_a.is_some() != ran_b.is_some(), "exactly one node ran it");
    /// ```
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule).
    pub fn schedule_exclusive<F, T>(
        &self,
        delay: Duration,
        exclusive: Exclusive,
        task: F,
    ) -> Result<ScheduledFuture<Result<Option<T>, LockError>>, ScheduleError>
    where
        F: FnOnce(&Lease) -> T + Send + 'static,
        T: Send + 'static,
    {
        let name = Arc::clone(&exclusive.name);
        self.once_after(
            delay,
            LockedOnce {
                f: task,
                spec: exclusive,
            },
            name,
        )
    }

    /// As [`schedule_exclusive`](Self::schedule_exclusive), due at `deadline` in the
    /// executor's clock.
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule).
    pub fn schedule_exclusive_at<F, T>(
        &self,
        deadline: Instant,
        exclusive: Exclusive,
        task: F,
    ) -> Result<ScheduledFuture<Result<Option<T>, LockError>>, ScheduleError>
    where
        F: FnOnce(&Lease) -> T + Send + 'static,
        T: Send + 'static,
    {
        let name = Arc::clone(&exclusive.name);
        self.once_at(
            deadline,
            LockedOnce {
                f: task,
                spec: exclusive,
            },
            name,
        )
    }

    /// Runs `f` now, on the calling thread, if this node takes `exclusive`'s lock
    /// (ShedLock's `LockingTaskExecutor.executeWithLock`): `Ok(Some(output))` if it ran,
    /// `Ok(None)` if another node holds the lock, `Err` if the store could not be asked.
    /// The same protocol as an exclusive task's runs: `f` sees its
    /// [`Lease`], the lease is given back when `f` returns or
    /// unwinds (a panic in `f` then goes on to the caller), and the outcome is counted in
    /// this pool's [`stats`](Self::stats) and traced under its name.
    ///
    /// ```
    /// use schedpool::cluster::{Exclusive, LocalLock};
    /// use schedpool::ScheduledThreadPoolExecutor;
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let pool = ScheduledThreadPoolExecutor::new(1);
    /// let migrate = Exclusive::new(Arc::new(LocalLock::new()), "schema-migration", Duration::from_secs(600));
    /// let ran = pool.run_exclusive(&migrate, |lease| format!("migrated under token {}", lease.token()));
    /// assert_eq!(ran.unwrap().as_deref(), Some("migrated under token 1"));
    /// assert_eq!(pool.stats().lock_acquired, 1);
    /// ```
    ///
    /// # Errors
    /// [`LockError`] if the lock's store could not be asked; `f` did not run.
    pub fn run_exclusive<T>(
        &self,
        exclusive: &Exclusive,
        f: impl FnOnce(&Lease) -> T,
    ) -> Result<Option<T>, LockError> {
        let ledger = Ledger {
            pool: self.shared.name(),
            counters: Some(&self.shared.counters),
            clock: self.shared.clock(),
        };
        run_locked(exclusive, &ledger, f)
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
    /// run (`cluster/run.rs`): the link to the caller's span, the cluster lock.
    fn schedule_guarded<B: PeriodicBody>(
        &self,
        mut spec: Periodic,
        body: B,
    ) -> Result<ScheduledFuture<B::Output>, ScheduleError> {
        let lock = spec.exclusive.take();
        if let Some(exclusive) = lock.as_ref().filter(|e| e.catch_up) {
            spec.catch_up_now = self.missed_its_last_run(exclusive, &spec.schedule);
        }
        let body = Guarded::new(body, submitter_span(), lock);
        let (task, pool) = self.shared.schedule_periodic(spec, body)?;
        Ok(ScheduledFuture::new(task, pool))
    }

    /// `Exclusive::catch_up`: whether the job's last run anywhere (the lock's last
    /// acquisition, on the store's clock) is more than one period old. A store that
    /// cannot tell means no catch-up, with a warning.
    fn missed_its_last_run(
        &self,
        exclusive: &Exclusive,
        schedule: &crate::schedule::Schedule,
    ) -> bool {
        use crate::schedule::Schedule;
        let period = match schedule {
            Schedule::FixedRate(p, _) | Schedule::FixedDelay(p) => *p,
            Schedule::Trigger(_) | Schedule::Once => return false,
        };
        match crate::user::call(|| exclusive.lock.last_acquired(&exclusive.name)) {
            Ok(Some(age)) if age > period => {
                crate::user::traced(
                    || tracing::info!(target: "schedpool", pool = self.name(), lock = exclusive.name(), last_run_ago_ms = u64::try_from(age.as_millis()).unwrap_or(u64::MAX), "the job's last run is more than a period old: its first run here is due at once"),
                );
                true
            }
            Ok(_) => false,
            Err(error) => {
                crate::user::traced(
                    || tracing::warn!(target: "schedpool", pool = self.name(), lock = exclusive.name(), error = %error, "could not ask the lock's store when the job last ran: no catch-up"),
                );
                false
            }
        }
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
        self.shared.set_policy(Policy::ExecuteDelayed, false);
        self.shared.set_policy(Policy::ContinuePeriodic, false);
        self.shared.shutdown();
    }

    /// Stops accepting tasks, starts no further task, and returns the queued tasks that
    /// were not cancelled, in deadline order (Java: `shutdownNow`). Running tasks finish;
    /// Rust cannot interrupt a thread, but a task scheduled with a context sees
    /// [`TaskContext::is_cancelled`] become true and may stop early. Each returned
    /// [`PendingTask`] can be run on the caller's thread; dropping it completes its
    /// future with `Err(Cancelled)`.
    pub fn shutdown_now(&self) -> Vec<PendingTask> {
        let pool: Arc<dyn crate::task::Host> = pool::Stripe::new(self.shared.clone());
        self.shared
            .shutdown_now()
            .into_iter()
            .map(|job| PendingTask::new(job, pool.clone()))
            .collect()
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
        if !pool::is_worker_of(&self.shared) {
            self.shared.await_termination(None);
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
        self.shared.shutdown();
        if pool::is_worker_of(&self.shared) {
            return false;
        }
        self.shared.await_termination(clock::timeout_at(timeout))
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
            shared: self.shared.clone(),
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
            shared: Arc::downgrade(&self.shared),
        }
    }

    /// `true` once [`shutdown`](Self::shutdown) or [`shutdown_now`](Self::shutdown_now) has
    /// been called.
    pub fn is_shutdown(&self) -> bool {
        self.shared.is_shutdown()
    }

    /// `true` after shutdown while workers are still running.
    pub fn is_terminating(&self) -> bool {
        self.shared.is_terminating()
    }

    /// `true` once every worker has exited after shutdown.
    pub fn is_terminated(&self) -> bool {
        self.shared.is_terminated()
    }

    /// Removes cancelled tasks still in the queue (left there when `remove_on_cancel` is
    /// off) and returns how many.
    pub fn purge(&self) -> usize {
        self.shared.purge()
    }

    /// Tasks waiting in the queue, cancelled-but-not-yet-removed ones included.
    pub fn queue_len(&self) -> usize {
        self.shared.queue_len()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> PoolStats {
        self.shared.stats()
    }

    /// The configured core size.
    pub fn core_pool_size(&self) -> usize {
        self.shared.core_pool_size()
    }

    /// Changes the core size. Growing starts threads for queued tasks that need them;
    /// shrinking lets surplus workers exit once idle for `keep_alive`, counted from the
    /// change: as in Java, an idle worker that was already waiting out a keep-alive starts
    /// a fresh one.
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
        self.shared.policy(Policy::ContinuePeriodic)
    }

    /// Sets the policy; set to false after shutdown, it cancels queued periodic tasks now.
    pub fn set_continue_existing_periodic_tasks_after_shutdown(&self, value: bool) {
        self.shared.set_policy(Policy::ContinuePeriodic, value);
    }

    /// Whether delayed one-shots still run after shutdown. Default true.
    pub fn execute_existing_delayed_tasks_after_shutdown(&self) -> bool {
        self.shared.policy(Policy::ExecuteDelayed)
    }

    /// Sets the policy; set to false after shutdown, it cancels queued one-shots whose
    /// delay has not elapsed now.
    pub fn set_execute_existing_delayed_tasks_after_shutdown(&self, value: bool) {
        self.shared.set_policy(Policy::ExecuteDelayed, value);
    }

    /// Whether `cancel` removes the task from the queue at once. Default true.
    pub fn remove_on_cancel(&self) -> bool {
        self.shared.policy(Policy::RemoveOnCancel)
    }

    /// Sets the remove-on-cancel policy for later cancels.
    pub fn set_remove_on_cancel(&self, value: bool) {
        self.shared.set_policy(Policy::RemoveOnCancel, value);
    }
}

#[cfg(all(test, loom))]
impl ScheduledThreadPoolExecutor {
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

impl Clone for ScheduledThreadPoolExecutor {
    fn clone(&self) -> Self {
        self.shared.handle_cloned();
        ScheduledThreadPoolExecutor {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for ScheduledThreadPoolExecutor {
    fn drop(&mut self) {
        if self.shared.handle_dropped() {
            self.shared.shutdown(); // the last handle
            self.shared.release_stripes();
        }
    }
}

/// A handle to a pool that does not keep it alive; see
/// [`ScheduledThreadPoolExecutor::downgrade`].
#[derive(Clone)]
pub struct WeakExecutor {
    shared: Weak<Shared>,
}

impl WeakExecutor {
    /// A strong handle, if one still exists (`None` once the last one was dropped, which
    /// shut the pool down). The pool may be shut down already: its methods then say so.
    pub fn upgrade(&self) -> Option<ScheduledThreadPoolExecutor> {
        let shared = self.shared.upgrade()?;
        // Built only once the count says so: a handle's `Drop` counts it gone (so not
        // `then_some`, which would build, and drop, one on the way to `None`).
        if shared.handle_revived() {
            Some(ScheduledThreadPoolExecutor { shared })
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
    shared: Arc<Shared>,
}

impl std::future::Future for Terminated {
    type Output = ();

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        self.shared.poll_termination(cx)
    }
}

impl fmt::Debug for Terminated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Terminated")
            .field("terminated", &self.shared.is_terminated())
            .finish()
    }
}

impl fmt::Debug for ScheduledThreadPoolExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduledThreadPoolExecutor")
            .field("name", &self.name())
            .field("core_pool_size", &self.core_pool_size())
            .field("pool", &*self.shared)
            .finish()
    }
}

impl Builder {
    /// Builds the executor. No thread starts until a task needs one.
    pub fn build(self) -> ScheduledThreadPoolExecutor {
        ScheduledThreadPoolExecutor {
            shared: Shared::new(self.into_config()),
        }
    }
}
