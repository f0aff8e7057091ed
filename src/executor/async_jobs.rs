//! Async jobs: the submission methods whose closure makes a future, run on an
//! [`AsyncRuntime`]: the forms whose future need not be `Send`, whose run occupies its
//! worker until the future completes, and the `*_send` forms, whose run gives its worker
//! back while its future is pending (`body/async_run.rs` has the design; an interrupt or
//! `shutdown_now` drops the future at its next await point).

use std::fmt;
use std::future::Future;
use std::time::Duration;

use super::ScheduledThreadPoolExecutor;
use crate::body::{Async, Fallible, SendAsync, TaskContext};
use crate::error::ScheduleError;
use crate::future::ScheduledFuture;
use crate::runtime::AsyncRuntime;
use crate::schedule::{Next, Periodic};

/// Async jobs: a closure that makes a future, awaited on `runtime` by the job's worker.
/// These forms take futures that need not be `Send`; the `*_send` forms below take `Send`
/// futures and give the worker back while a future is pending.
///
/// A run is a run like a closure's: its worker is busy until the future completes (so a
/// pool runs as many of these at once as it has workers), a task's runs never overlap,
/// `active_count` and [`wait_idle`](Self::wait_idle) count it,
/// a fixed delay is counted from the future's completion, and its output (or its panic,
/// contained: [`TaskError::Panicked`](crate::TaskError::Panicked)) goes to the
/// [`ScheduledFuture`], which an async caller may `.await`. The future is made and
/// dropped on the worker, inside the runtime's context (so a tokio timer made in the
/// closure itself works), and it need not be `Send`.
///
/// Stopping, by what each call does to a running async job:
///
/// | call | the running future | the `ScheduledFuture` |
/// |---|---|---|
/// | `cancel()`, one-shot | runs to completion (`cancel` returns `false`, as for a closure) | the output |
/// | `cancel()`, periodic | runs to completion; no further run | `Cancelled` |
/// | [`interrupt()`](ScheduledFuture::interrupt) | dropped at its next await point | `Cancelled`, at once |
/// | [`shutdown_now()`](Self::shutdown_now) | dropped at its next await point | `Cancelled` |
///
/// Dropping the future is async code's own cancellation: its destructors run (a
/// connection goes back to its pool, a guard releases), and the code after the await
/// point never runs. A job that must not be cut short between two awaits keeps that part
/// out of the future (a closure job) or behind a plain `cancel`.
impl ScheduledThreadPoolExecutor {
    /// Runs the future that `task` makes once, after `delay`, on `runtime` (Java has no
    /// equivalent: a `Callable` that awaits). The job's worker polls the future to
    /// completion; its output is the [`ScheduledFuture`]'s.
    ///
    /// ```
    /// use schedpool::{ParkingRuntime, ScheduledThreadPoolExecutor};
    /// use std::time::Duration;
    ///
    /// let pool = ScheduledThreadPoolExecutor::new(1);
    /// let (reply, answer) = tokio::sync::oneshot::channel();
    /// let request = pool
    ///     .schedule_async(Duration::from_millis(5), ParkingRuntime, move || async move {
    ///         let body: String = answer.await?; // awaits, its worker parked meanwhile
    ///         Ok::<usize, tokio::sync::oneshot::error::RecvError>(body.len())
    ///     })
    ///     .unwrap();
    /// reply.send("{\"ok\":true}".to_string()).unwrap();
    /// assert_eq!(request.get().unwrap(), Ok(11));
    /// ```
    ///
    /// With the cargo feature `tokio`, `runtime` is typically a
    /// `tokio::runtime::Handle` (see [`AsyncRuntime`] for what works with a
    /// `current_thread` runtime).
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule).
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
        self.once_after(delay, Async::new(runtime, make), ())
    }

    /// As [`schedule_async`](Self::schedule_async), with a closure that gets the run's
    /// [`TaskContext`] before it makes the future: its deadline, its name (given through
    /// [`Named::schedule_async_with_context`](crate::Named::schedule_async_with_context)),
    /// its [`cancel_handle`](TaskContext::cancel_handle) (to move into the future). The
    /// future cannot borrow the context; a stop reaches it by being dropped.
    ///
    /// ```
    /// use schedpool::{ParkingRuntime, ScheduledThreadPoolExecutor};
    /// use std::time::Duration;
    ///
    /// let pool = ScheduledThreadPoolExecutor::new(1);
    /// let job = pool
    ///     .schedule_async_with_context(Duration::ZERO, ParkingRuntime, |ctx| {
    ///         let me = ctx.cancel_handle();
    ///         async move { me.is_done() } // running: not done yet
    ///     })
    ///     .unwrap();
    /// assert_eq!(job.get().unwrap(), false);
    /// ```
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule).
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
        self.once_after(delay, Async::new(runtime, task), ())
    }

    /// Runs the future that `task` makes, again and again as `spec` says, on `runtime`: a
    /// new future per run, each awaited to completion before the next run is scheduled
    /// (a fixed delay counts from its completion). The spec's every setting applies
    /// (`max_runs`, `max_lateness`, [`OnPanic`](crate::OnPanic), a name, an
    /// [`exclusive`](Periodic::exclusive) lock held for the run, the future included).
    ///
    /// ```
    /// use schedpool::{ManualClock, ParkingRuntime, Periodic, ScheduledThreadPoolExecutor};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use tokio::sync::Mutex; // an async lock: awaited, no reactor needed
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(1).clock(clock.clone()).build();
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let s = seen.clone();
    /// let poll = Periodic::with_fixed_delay(Duration::from_secs(30)).max_runs(3);
    /// let poller = pool
    ///     .schedule_periodic_async(poll, ParkingRuntime, move || {
    ///         let s = s.clone();
    ///         async move { s.lock().await.push("polled") }
    ///     })
    ///     .unwrap();
    /// for _ in 0..2 {
    ///     pool.wait_idle(Duration::from_secs(10));
    ///     clock.advance(Duration::from_secs(30));
    /// }
    /// assert_eq!(poller.get().unwrap(), ()); // three runs, then max_runs
    /// assert_eq!(seen.blocking_lock().len(), 3);
    /// ```
    ///
    /// # Errors
    /// As [`schedule_periodic`](Self::schedule_periodic).
    pub fn schedule_periodic_async<R, F, Fut>(
        &self,
        spec: Periodic,
        runtime: R,
        mut task: F,
    ) -> Result<ScheduledFuture<()>, ScheduleError>
    where
        R: AsyncRuntime,
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = ()>,
    {
        let make = move |_: &TaskContext<'_>| {
            let run = task();
            async move {
                run.await;
                Next::Continue
            }
        };
        self.schedule_guarded(spec, Async::new(runtime, make))
    }

    /// As [`schedule_periodic_async`](Self::schedule_periodic_async), with a closure that
    /// gets the run's [`TaskContext`] and a future that says what comes next ([`Next`]),
    /// as [`schedule_periodic_with_context`](Self::schedule_periodic_with_context)'s
    /// closures do.
    ///
    /// ```
    /// use schedpool::{ManualClock, Next, ParkingRuntime, Periodic, ScheduledThreadPoolExecutor};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(1).clock(clock.clone()).build();
    /// let spec = Periodic::at_fixed_rate(Duration::from_secs(1));
    /// let job = pool
    ///     .schedule_periodic_async_with_context(spec, ParkingRuntime, |ctx| {
    ///         let runs = ctx.runs();
    ///         async move { if runs == 2 { Next::Stop } else { Next::Continue } }
    ///     })
    ///     .unwrap();
    /// pool.wait_idle(Duration::from_secs(10));
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(job.get().unwrap(), ()); // stopped itself in its second run
    /// ```
    ///
    /// # Errors
    /// As [`schedule_periodic`](Self::schedule_periodic).
    pub fn schedule_periodic_async_with_context<R, F, Fut>(
        &self,
        spec: Periodic,
        runtime: R,
        task: F,
    ) -> Result<ScheduledFuture<()>, ScheduleError>
    where
        R: AsyncRuntime,
        F: FnMut(&TaskContext<'_>) -> Fut + Send + 'static,
        Fut: Future<Output = Next>,
    {
        self.schedule_guarded(spec, Async::new(runtime, task))
    }

    /// The async form of [`schedule_fallible`](Self::schedule_fallible): each run's future
    /// returns `Ok(Next)` or `Err(e)`; errors are counted, traced and backed off as the
    /// spec says, and the task's future yields `Ok(Ok(()))`, `Ok(Err(e))` with the error
    /// that stopped it, or `Err(TaskError)`.
    ///
    /// ```
    /// use schedpool::{Backoff, ManualClock, Next, ParkingRuntime, Periodic, ScheduledThreadPoolExecutor};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(1).clock(clock.clone()).build();
    /// let spec = Periodic::with_fixed_delay(Duration::from_secs(1))
    ///     .backoff(Backoff::new(Duration::from_secs(10), Duration::from_secs(60)))
    ///     .stop_after_errors(2);
    /// let job = pool
    ///     .schedule_fallible_async(spec, ParkingRuntime, |_ctx| async {
    ///         Err::<Next, _>("503 Service Unavailable")
    ///     })
    ///     .unwrap();
    /// pool.wait_idle(Duration::from_secs(10));
    /// clock.advance(Duration::from_secs(10)); // the back-off after the first error
    /// assert_eq!(job.get().unwrap(), Err("503 Service Unavailable"));
    /// assert_eq!(pool.stats().failed_runs, 2);
    /// ```
    ///
    /// # Errors
    /// As [`schedule_periodic`](Self::schedule_periodic).
    pub fn schedule_fallible_async<R, F, Fut, E>(
        &self,
        spec: Periodic,
        runtime: R,
        task: F,
    ) -> Result<ScheduledFuture<Result<(), E>>, ScheduleError>
    where
        R: AsyncRuntime,
        F: FnMut(&TaskContext<'_>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Next, E>>,
        E: fmt::Display + Send + 'static,
    {
        let on_error = spec.on_error;
        self.schedule_guarded(spec, Fallible::new(Async::new(runtime, task), on_error))
    }
}

/// Async jobs whose futures are `Send`: the `*_send` forms, whose runs give their worker
/// back while their future is pending.
///
/// Each method takes what its form without `_send` takes, and the future must be `Send`.
/// On a runtime the pool can enter ([`AsyncRuntime::can_enter`]: tokio's `Handle`, a
/// `multi_thread` `Runtime`, [`ParkingRuntime`](crate::ParkingRuntime)), a run whose
/// future is pending holds no worker: the worker goes back to the queue, the future's
/// waker queues the run again, and whichever worker is free polls it, inside the
/// runtime's context (tokio's timers and sockets are driven by tokio's own threads). So a
/// pool of two workers runs thousands of such jobs at once, each awaiting its I/O, where
/// the forms without `_send` run two (their runs occupy their worker, as a closure's).
/// A pool bounds the async runs in progress at once
/// ([`Builder::max_async_runs`](crate::Builder::max_async_runs)).
///
/// Everything else is as for the forms without `_send`: one run at a time per task;
/// `active_count` and [`wait_idle`](Self::wait_idle) count a run whose future is pending;
/// a fixed delay counts from the future's completion; lateness is the start's, and the
/// run-time histogram runs from the start to the completion; the output or the panic goes
/// to the [`ScheduledFuture`]; an [`interrupt`](ScheduledFuture::interrupt) or
/// [`shutdown_now`](Self::shutdown_now) drops the future at once, on the caller's thread
/// if no worker is polling it (its destructors run there); `shutdown`, `close` and
/// `await_termination` wait for the runs in progress; `pause`, `run_now`, `reschedule`
/// and an [`exclusive`](Periodic::exclusive) spec's lease (kept, and kept alive, while
/// the future is pending) behave as for a closure. With a runtime the pool cannot enter
/// (one that implements only `block_on`), or on the caller's thread (a `PendingTask`, the
/// `CallerRuns` policy), a run occupies its thread as the forms without `_send` do.
///
/// ```
/// use schedpool::{ParkingRuntime, Periodic, ScheduledThreadPoolExecutor};
/// use std::time::Duration;
///
/// let pool = ScheduledThreadPoolExecutor::new(1);
/// let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
/// // Pending on the channel, holding no worker:
/// let waiting = pool
///     .schedule_async_send(Duration::ZERO, ParkingRuntime, move || async move {
///         rx.await.unwrap_or(0)
///     })
///     .unwrap();
/// // so the one worker runs another task meanwhile, which completes the first.
/// pool.submit(move || tx.send(41).unwrap()).unwrap();
/// assert_eq!(waiting.get().unwrap(), 41);
/// assert!(pool.wait_idle(Duration::from_secs(10)));
/// # drop(Periodic::at_fixed_rate(Duration::from_secs(1)));
/// ```
impl ScheduledThreadPoolExecutor {
    /// As [`schedule_async`](Self::schedule_async), with a `Send` future, whose run gives
    /// its worker back while it is pending (see the `*_send` forms above).
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule).
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
        self.once_after(delay, SendAsync::<R, _, Fut>::new(runtime, make), ())
    }

    /// As [`schedule_async_with_context`](Self::schedule_async_with_context), with a
    /// `Send` future, whose run gives its worker back while it is pending (see the
    /// `*_send` forms above).
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule).
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
        self.once_after(delay, SendAsync::<R, F, Fut>::new(runtime, task), ())
    }

    /// As [`schedule_periodic_async`](Self::schedule_periodic_async), with `Send` futures,
    /// whose runs give their worker back while pending (see the `*_send` forms above):
    /// the way to run many periodic jobs that await I/O on a small pool.
    ///
    /// ```
    /// use schedpool::{ManualClock, ParkingRuntime, Periodic, ScheduledThreadPoolExecutor};
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(1).clock(clock.clone()).build();
    /// let (release, gate) = tokio::sync::watch::channel(false);
    /// let done = Arc::new(AtomicU32::new(0));
    /// // Three jobs, each awaiting the gate in its first run: all three pending at once on
    /// // one worker.
    /// let jobs: Vec<_> = (0..3)
    ///     .map(|_| {
    ///         let (gate, done) = (gate.clone(), done.clone());
    ///         let spec = Periodic::with_fixed_delay(Duration::from_secs(60)).max_runs(1);
    ///         pool.schedule_periodic_async_send(spec, ParkingRuntime, move || {
    ///             let (mut gate, done) = (gate.clone(), done.clone());
    ///             async move {
    ///                 let _ = gate.wait_for(|open| *open).await;
    ///                 done.fetch_add(1, Ordering::SeqCst);
    ///             }
    ///         })
    ///         .unwrap()
    ///     })
    ///     .collect();
    /// clock.advance(Duration::from_secs(60));
    /// while pool.stats().active_count < 3 {
    ///     std::thread::yield_now(); // the three runs start, one after the other
    /// }
    /// release.send(true).unwrap();
    /// for job in jobs {
    ///     assert_eq!(job.get().unwrap(), ());
    /// }
    /// assert_eq!(done.load(Ordering::SeqCst), 3);
    /// ```
    ///
    /// # Errors
    /// As [`schedule_periodic`](Self::schedule_periodic).
    pub fn schedule_periodic_async_send<R, F, Fut>(
        &self,
        spec: Periodic,
        runtime: R,
        mut task: F,
    ) -> Result<ScheduledFuture<()>, ScheduleError>
    where
        R: AsyncRuntime,
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let make = move |_: &TaskContext<'_>| {
            let run = task();
            async move {
                run.await;
                Next::Continue
            }
        };
        self.schedule_guarded(spec, SendAsync::new(runtime, make))
    }

    /// As [`schedule_periodic_async_with_context`](Self::schedule_periodic_async_with_context),
    /// with `Send` futures, whose runs give their worker back while pending (see the
    /// `*_send` forms above).
    ///
    /// # Errors
    /// As [`schedule_periodic`](Self::schedule_periodic).
    pub fn schedule_periodic_async_with_context_send<R, F, Fut>(
        &self,
        spec: Periodic,
        runtime: R,
        task: F,
    ) -> Result<ScheduledFuture<()>, ScheduleError>
    where
        R: AsyncRuntime,
        F: FnMut(&TaskContext<'_>) -> Fut + Send + 'static,
        Fut: Future<Output = Next> + Send + 'static,
    {
        self.schedule_guarded(spec, SendAsync::<R, F, Fut>::new(runtime, task))
    }

    /// As [`schedule_fallible_async`](Self::schedule_fallible_async), with `Send` futures,
    /// whose runs give their worker back while pending (see the `*_send` forms above).
    ///
    /// # Errors
    /// As [`schedule_periodic`](Self::schedule_periodic).
    pub fn schedule_fallible_async_send<R, F, Fut, E>(
        &self,
        spec: Periodic,
        runtime: R,
        task: F,
    ) -> Result<ScheduledFuture<Result<(), E>>, ScheduleError>
    where
        R: AsyncRuntime,
        F: FnMut(&TaskContext<'_>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Next, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        let on_error = spec.on_error;
        let attempt = SendAsync::<R, F, Fut>::new(runtime, task);
        self.schedule_guarded(spec, Fallible::new(attempt, on_error))
    }
}
