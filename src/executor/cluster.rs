//! The executor's methods for jobs that run on one node of a cluster at a time: an
//! exclusive one-shot ([`schedule_exclusive`](ScheduledThreadPoolExecutor::schedule_exclusive),
//! [`schedule_exclusive_at`](ScheduledThreadPoolExecutor::schedule_exclusive_at)) and any
//! closure under a lock on the caller's thread
//! ([`run_exclusive`](ScheduledThreadPoolExecutor::run_exclusive)), each also with its
//! outcome as one [`ExclusiveOutcome`] (the `_outcome` forms). They wrap the closure
//! in `body/exclusive.rs`'s locked run; the periodic exclusive job is
//! [`Periodic::exclusive`](crate::Periodic::exclusive) on `schedule_periodic`.

use std::time::{Duration, Instant};

use super::ScheduledThreadPoolExecutor;
use crate::body::{run_locked, Ledger, Locked, LockedOnce, NestedShape, OutcomeShape};
use crate::cluster::{Exclusive, ExclusiveOutcome, Lease, LockError};
use crate::error::ScheduleError;
use crate::future::ScheduledFuture;

impl ScheduledThreadPoolExecutor {
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
        let name = self.task_name(&exclusive.name, true);
        self.once_after(
            delay,
            LockedOnce::<_, NestedShape>::new(task, exclusive),
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
        let name = self.task_name(&exclusive.name, true);
        self.once_at(
            deadline,
            LockedOnce::<_, NestedShape>::new(task, exclusive),
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
        run_locked(exclusive, &self.ledger(), None, f).map(Locked::ran)
    }

    /// As [`schedule_exclusive`](Self::schedule_exclusive), with the run's outcome as one
    /// [`ExclusiveOutcome`]: `Ran(output)`, `HeldElsewhere`, `Paused` (the job is paused
    /// on every node: `ClusterLock::pause`) or `StoreFailed`.
    ///
    /// ```
    /// use schedpool::cluster::{Exclusive, LocalLock};
    /// use schedpool::ScheduledThreadPoolExecutor;
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let lock = Arc::new(LocalLock::new());
    /// let nightly = Exclusive::new(lock, "invoice-run", Duration::from_secs(3600))
    ///     .at_least_for(Duration::from_secs(60)); // the other node finds it held
    /// let (a, b) = (ScheduledThreadPoolExecutor::new(1), ScheduledThreadPoolExecutor::new(1));
    /// let on_a = a.schedule_exclusive_outcome(Duration::ZERO, nightly.clone(), |_| "a").unwrap();
    /// let on_b = b.schedule_exclusive_outcome(Duration::ZERO, nightly, |_| "b").unwrap();
    /// let (ran_a, ran_b) = (on_a.get().unwrap(), on_b.get().unwrap());
    /// assert!(ran_a.is_ran() != ran_b.is_ran(), "exactly one node ran it");
    /// ```
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule).
    pub fn schedule_exclusive_outcome<F, T>(
        &self,
        delay: Duration,
        exclusive: Exclusive,
        task: F,
    ) -> Result<ScheduledFuture<ExclusiveOutcome<T>>, ScheduleError>
    where
        F: FnOnce(&Lease) -> T + Send + 'static,
        T: Send + 'static,
    {
        let name = self.task_name(&exclusive.name, true);
        self.once_after(
            delay,
            LockedOnce::<_, OutcomeShape>::new(task, exclusive),
            name,
        )
    }

    /// As [`run_exclusive`](Self::run_exclusive), with the outcome as one
    /// [`ExclusiveOutcome`] (a paused job told apart from a lock held elsewhere).
    pub fn run_exclusive_outcome<T>(
        &self,
        exclusive: &Exclusive,
        f: impl FnOnce(&Lease) -> T,
    ) -> ExclusiveOutcome<T> {
        Locked::outcome(run_locked(exclusive, &self.ledger(), None, f))
    }

    /// Where a run on the caller's thread counts and traces: this pool's.
    fn ledger(&self) -> Ledger<'_> {
        Ledger {
            pool: self.pool.name(),
            id: None,
            task: None,
            counters: Some(&self.pool.counters),
            clock: self.pool.clock(),
        }
    }
}
