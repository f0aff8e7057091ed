//! [`Named`]: one-shots submitted under a name, for spans, panic logs and snapshots.

use std::fmt;
use std::future::Future;
use std::time::{Duration, Instant};

use super::ScheduledThreadPoolExecutor;
use crate::body::{Async, SendAsync, TaskContext, WithContext};
use crate::error::ScheduleError;
use crate::future::ScheduledFuture;
use crate::runtime::AsyncRuntime;
use crate::sync::Arc;
use crate::task::{Plain, TaskName};

impl ScheduledThreadPoolExecutor {
    /// A one-shot's name, with its run-time series if `metered` (feature `metrics`;
    /// within the pool's `max_task_series`).
    pub(crate) fn task_name(&self, name: &str, metered: bool) -> Arc<TaskName> {
        Arc::new(TaskName {
            name: name.into(),
            timer: if metered {
                self.pool.task_timer(Some(name))
            } else {
                None
            },
        })
    }

    /// A way to submit one-shots under `name`, which their `task` spans, panic logs and
    /// [`scheduled_tasks`](Self::scheduled_tasks) then show (a periodic task is named by
    /// [`Periodic::name`](crate::Periodic::name)). The name is shared by every task
    /// submitted through the returned [`Named`], so naming costs a reference count per
    /// task, and nothing for tasks submitted without a name. The `Named` holds a handle to
    /// the pool, like a clone of this one, so it can be stored and moved.
    ///
    /// A name may carry an id (`format!("email-{user}")`): it reaches the logs and the
    /// task list, not the metrics' labels. With feature `metrics`, the one-shots of a
    /// `Named` get a run-time series of their own only if it is
    /// [`metered`](Named::metered).
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
}

/// Submits one-shot tasks under a name (from
/// [`ScheduledThreadPoolExecutor::named`]). Each method behaves as the executor's method
/// of the same name, and its task carries the name: in the `task_name` field of its `task`
/// span and of a panic's log line, in [`TaskInfo::name`](crate::TaskInfo::name), and in
/// [`TaskContext::name`].
///
/// It owns a handle to the pool, as a clone of the executor does (the pool is not shut
/// down by the drop of the last other handle while it exists), so it can be stored beside
/// the pool, in a struct, or moved into another thread; it is `Clone`, `Send` and `Sync`.
/// Like any strong handle, one moved into a periodic task of its own pool keeps the pool
/// alive (`docs/JAVA.md` §6.4; a [`WeakExecutor`](crate::WeakExecutor) avoids that).
///
/// ```
/// use schedpool::{ScheduledThreadPoolExecutor, TaskContext};
/// use std::time::Duration;
///
/// let pool = ScheduledThreadPoolExecutor::new(1);
/// let flush = pool.named("flush");
/// let fut = flush
///     .schedule_with_context(Duration::from_millis(1), |ctx: &TaskContext<'_>| {
///         ctx.name().map(str::to_owned)
///     })
///     .unwrap();
/// assert_eq!(fut.get().unwrap().as_deref(), Some("flush"));
/// pool.close();
/// ```
#[derive(Clone)]
pub struct Named {
    pool: ScheduledThreadPoolExecutor,
    name: Arc<TaskName>,
}

impl Named {
    pub(crate) fn new(pool: ScheduledThreadPoolExecutor, name: String) -> Self {
        let name = pool.task_name(&name, false);
        Named { pool, name }
    }

    /// The name the tasks get.
    pub fn name(&self) -> &str {
        &self.name.name
    }

    /// The same name, whose tasks' run times also go to a series of their own (feature
    /// `metrics`): `schedpool_task_run_duration_seconds{pool, task}`, with the name as
    /// `task`. For a name that stands for a kind of job (`"request-timeout"`,
    /// `"flush"`), not for one that carries an id: every distinct name is a series that
    /// the recorder keeps for the life of the process, so the pool gives at most
    /// [`Builder::max_task_series`](crate::Builder) names their own (default 256) and
    /// records the tasks of later ones under `task="other"`. The series is resolved
    /// here, from the recorder installed now. Without the feature it changes nothing.
    ///
    /// ```
    /// use schedpool::ScheduledThreadPoolExecutor;
    /// use std::time::Duration;
    ///
    /// let pool = ScheduledThreadPoolExecutor::new(1);
    /// let flushes = pool.named("flush").metered(); // one series, every flush in it
    /// let fut = flushes.schedule(Duration::from_millis(1), || "flushed").unwrap();
    /// assert_eq!(fut.get().unwrap(), "flushed");
    /// pool.close();
    /// ```
    #[must_use]
    pub fn metered(self) -> Self {
        let name = self.pool.task_name(&self.name.name, true);
        Named { name, ..self }
    }

    /// As [`ScheduledThreadPoolExecutor::schedule`], named.
    ///
    /// # Errors
    /// As [`ScheduledThreadPoolExecutor::schedule`].
    pub fn schedule<F, T>(
        &self,
        delay: Duration,
        task: F,
    ) -> Result<ScheduledFuture<T>, ScheduleError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.pool.once_after(delay, Plain(task), self.name.clone())
    }

    /// As [`ScheduledThreadPoolExecutor::schedule_at`], named.
    ///
    /// # Errors
    /// As [`ScheduledThreadPoolExecutor::schedule`].
    pub fn schedule_at<F, T>(
        &self,
        deadline: Instant,
        task: F,
    ) -> Result<ScheduledFuture<T>, ScheduleError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.pool.once_at(deadline, Plain(task), self.name.clone())
    }

    /// As [`ScheduledThreadPoolExecutor::submit`], named.
    ///
    /// # Errors
    /// As [`ScheduledThreadPoolExecutor::schedule`].
    pub fn submit<F, T>(&self, task: F) -> Result<ScheduledFuture<T>, ScheduleError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.pool
            .once_after(Duration::ZERO, Plain(task), self.name.clone())
    }

    /// As [`ScheduledThreadPoolExecutor::schedule_with_context`], named.
    ///
    /// # Errors
    /// As [`ScheduledThreadPoolExecutor::schedule`].
    pub fn schedule_with_context<F, T>(
        &self,
        delay: Duration,
        task: F,
    ) -> Result<ScheduledFuture<T>, ScheduleError>
    where
        F: FnOnce(&TaskContext<'_>) -> T + Send + 'static,
        T: Send + 'static,
    {
        self.pool
            .once_after(delay, WithContext(task), self.name.clone())
    }
}

impl Named {
    /// As [`ScheduledThreadPoolExecutor::schedule_async`], named: the run's `task` span,
    /// its log lines and its row carry the name, and its context's
    /// [`name`](TaskContext::name) is it.
    ///
    /// ```
    /// use schedpool::{ParkingRuntime, ScheduledThreadPoolExecutor};
    /// use std::time::Duration;
    ///
    /// let pool = ScheduledThreadPoolExecutor::new(1);
    /// let fetch = pool.named("fetch");
    /// let fut = fetch
    ///     .schedule_async(Duration::from_millis(1), ParkingRuntime, || async { 7 })
    ///     .unwrap();
    /// assert_eq!(fut.get().unwrap(), 7);
    /// pool.close();
    /// ```
    ///
    /// # Errors
    /// As [`ScheduledThreadPoolExecutor::schedule`].
    pub fn schedule_async<R, F, Fut>(
        &self,
        delay: Duration,
        runtime: R,
        task: F,
    ) -> Result<ScheduledFuture<Fut::Output>, ScheduleError>
    where
        R: AsyncRuntime,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future,
        Fut::Output: Send + 'static,
    {
        let make = move |_: &TaskContext<'_>| task();
        self.pool
            .once_after(delay, Async::new(runtime, make), self.name.clone())
    }

    /// As [`ScheduledThreadPoolExecutor::schedule_async_with_context`], named: the
    /// context's [`name`](TaskContext::name) is this one.
    ///
    /// ```
    /// use schedpool::{ParkingRuntime, ScheduledThreadPoolExecutor, TaskContext};
    /// use std::time::Duration;
    ///
    /// let pool = ScheduledThreadPoolExecutor::new(1);
    /// let fut = pool
    ///     .named("fetch")
    ///     .schedule_async_with_context(Duration::ZERO, ParkingRuntime, |ctx: &TaskContext<'_>| {
    ///         let name = ctx.name().map(str::to_owned);
    ///         async move { name }
    ///     })
    ///     .unwrap();
    /// assert_eq!(fut.get().unwrap().as_deref(), Some("fetch"));
    /// pool.close();
    /// ```
    ///
    /// # Errors
    /// As [`ScheduledThreadPoolExecutor::schedule`].
    pub fn schedule_async_with_context<R, F, Fut>(
        &self,
        delay: Duration,
        runtime: R,
        task: F,
    ) -> Result<ScheduledFuture<Fut::Output>, ScheduleError>
    where
        R: AsyncRuntime,
        F: FnOnce(&TaskContext<'_>) -> Fut + Send + 'static,
        Fut: Future,
        Fut::Output: Send + 'static,
    {
        self.pool
            .once_after(delay, Async::new(runtime, task), self.name.clone())
    }

    /// As [`ScheduledThreadPoolExecutor::schedule_async_send`], named: a `Send` future,
    /// whose run gives its worker back while it is pending.
    ///
    /// # Errors
    /// As [`ScheduledThreadPoolExecutor::schedule`].
    pub fn schedule_async_send<R, F, Fut>(
        &self,
        delay: Duration,
        runtime: R,
        task: F,
    ) -> Result<ScheduledFuture<Fut::Output>, ScheduleError>
    where
        R: AsyncRuntime,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        let make = move |_: &TaskContext<'_>| task();
        let body = SendAsync::<R, _, Fut>::new(runtime, make);
        self.pool.once_after(delay, body, self.name.clone())
    }

    /// As [`ScheduledThreadPoolExecutor::schedule_async_with_context_send`], named.
    ///
    /// # Errors
    /// As [`ScheduledThreadPoolExecutor::schedule`].
    pub fn schedule_async_with_context_send<R, F, Fut>(
        &self,
        delay: Duration,
        runtime: R,
        task: F,
    ) -> Result<ScheduledFuture<Fut::Output>, ScheduleError>
    where
        R: AsyncRuntime,
        F: FnOnce(&TaskContext<'_>) -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        let body = SendAsync::<R, F, Fut>::new(runtime, task);
        self.pool.once_after(delay, body, self.name.clone())
    }
}

impl fmt::Debug for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Named")
            .field("pool", &self.pool.name())
            .field("name", &&*self.name.name)
            .finish()
    }
}
