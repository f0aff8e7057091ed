//! [`Named`]: one-shots submitted under a name, for spans, panic logs and snapshots.

use std::fmt;
use std::time::{Duration, Instant};

use crate::context::{TaskContext, WithContext};
use crate::error::ScheduleError;
use crate::executor::ScheduledThreadPoolExecutor;
use crate::future::ScheduledFuture;
use crate::sync::Arc;
use crate::task::Plain;

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
    name: Arc<str>,
}

impl Named {
    pub(crate) fn new(pool: ScheduledThreadPoolExecutor, name: String) -> Self {
        Named {
            pool,
            name: name.into(),
        }
    }

    /// The name the tasks get.
    pub fn name(&self) -> &str {
        &self.name
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

impl fmt::Debug for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Named")
            .field("pool", &self.pool.name())
            .field("name", &&*self.name)
            .finish()
    }
}
