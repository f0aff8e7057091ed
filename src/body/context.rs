//! [`TaskContext`]: what a running task knows about itself, for the closures of
//! [`schedule_with_context`](crate::ScheduledThreadPoolExecutor::schedule_with_context) and
//! [`schedule_periodic_with_context`](crate::ScheduledThreadPoolExecutor::schedule_periodic_with_context).
//!
//! # Design
//! The task layer (`task/`) calls every closure with a `RunCx`: the run's environment
//! (clock, the task as the queue holds it, the pool as a `task::Host`) and this run's facts
//! (deadline, run count). A context closure is wrapped in [`WithContext`], which turns
//! that into a `TaskContext` borrowed for the call; a plain closure is wrapped in
//! `task::Plain`, which ignores it, so plain tasks pay nothing. The context is a view: it
//! holds no reference count and allocates nothing until [`TaskContext::cancel_handle`]
//! is called.
//!
//! # Cancellation, cooperatively
//! Rust has no thread interrupts. A run asks [`TaskContext::is_cancelled`], which is true
//! once the task was cancelled (a periodic task by [`cancel`](crate::ScheduledFuture::cancel),
//! any task by [`interrupt`](crate::ScheduledFuture::interrupt)) or the pool was stopped by
//! [`shutdown_now`](crate::ScheduledThreadPoolExecutor::shutdown_now). What each caller
//! sees is a table in [`TaskContext::is_cancelled`]'s public docs (one place).
//!
//! A run that waits inside itself (a back-off between attempts) uses
//! [`TaskContext::sleep`], which each of these ends early: the pool keeps a list of
//! sleeping runs (`task/sleepers.rs`, S1) that a cancel, an interrupt, `shutdown_now` and
//! a `ManualClock` advance wake.

use std::fmt;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use super::exclusive::{keep_locked, run_locked, KeptLease, Ledger, Locked};
use super::span::link_to;
use crate::clock::{Clock, Ticks};
use crate::cluster::{Exclusive, Lease};
use crate::future::CancelHandle;
use crate::schedule::{Next, OnError};

use crate::sync::park_until;
use crate::task::{
    sleepers, state::State, Declined, Host, OnceBody, PeriodicBody, Ran, RunCx, Step,
};

/// What a running task knows about itself: handed to the closures of
/// [`schedule_with_context`](crate::ScheduledThreadPoolExecutor::schedule_with_context) and
/// [`schedule_periodic_with_context`](crate::ScheduledThreadPoolExecutor::schedule_periodic_with_context)
/// for the length of one run. Times are in the executor's clock.
///
/// ```
/// use schedpool::{ManualClock, Next, Periodic, ScheduledThreadPoolExecutor};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(1).clock(clock.clone()).build();
/// let t0 = clock.now();
/// let fut = pool
///     .schedule_periodic_with_context(Periodic::at_fixed_rate(Duration::from_secs(1)), move |ctx| {
///         assert_eq!(ctx.deadline(), t0 + Duration::from_secs(ctx.runs() - 1));
///         if ctx.runs() == 3 { Next::Stop } else { Next::Continue }
///     })
///     .unwrap();
/// for _ in 0..2 {
///     pool.wait_idle(Duration::from_secs(10));
///     clock.advance(Duration::from_secs(1));
/// }
/// assert_eq!(fut.get().unwrap(), ()); // three runs, then it stopped itself
/// ```
pub struct TaskContext<'a> {
    cx: &'a RunCx<'a>,
}

impl<'a> TaskContext<'a> {
    /// The view of `cx` (an adaptor's, for the call it makes).
    pub(super) fn of(cx: &'a RunCx<'a>) -> Self {
        TaskContext { cx }
    }
}

impl TaskContext<'_> {
    /// Runs of this task so far, this one included (1 for a one-shot).
    pub fn runs(&self) -> u64 {
        self.cx.runs
    }

    /// This run's deadline.
    pub fn deadline(&self) -> Instant {
        self.cx.env.clock.instant_of(self.cx.deadline)
    }

    /// When this run started (the time the worker took it).
    pub fn started(&self) -> Instant {
        self.cx.env.clock.instant_of(self.cx.env.now)
    }

    /// The task's name ([`Periodic::name`](crate::Periodic::name), or
    /// [`ScheduledThreadPoolExecutor::named`](crate::ScheduledThreadPoolExecutor::named)
    /// for a one-shot), for the closure's own logs; `None` if it has none.
    pub fn name(&self) -> Option<&str> {
        self.cx.task_name
    }

    /// The cluster lease this run holds, for an
    /// [exclusive](crate::Periodic::exclusive) task (`None` for any other). Its
    /// [`token`](crate::cluster::Lease::token) grows with every acquisition of the lock:
    /// pass it along with the run's writes, and a store that keeps the largest token seen
    /// can refuse the writes of a run whose lease ran out after another node took over.
    pub fn lease(&self) -> Option<&Lease> {
        self.cx.lease
    }

    /// `true` for a periodic task.
    pub fn is_periodic(&self) -> bool {
        self.cx.header.is_periodic()
    }

    /// `true` once this run is asked to stop: the task was cancelled (a periodic task by
    /// `cancel`, any task by `interrupt`), or the pool was stopped by `shutdown_now` while
    /// the task ran on one of its workers. (A task the caller runs itself, as a
    /// `PendingTask` handed back by `shutdown_now`, is not asked to stop by it.) A run that
    /// does long work checks it now and then and returns early. What each caller sees:
    ///
    /// | call on a running task | returns | the future reports | the run |
    /// |---|---|---|---|
    /// | `cancel()`, one-shot | `false` | the run's outcome | goes on; `is_cancelled()` stays false |
    /// | `cancel()`, periodic | `true` | `Cancelled` (after this run) | goes on, sees `is_cancelled()`; no further run |
    /// | `interrupt()`, either | `true` | `Cancelled`, at once | goes on, sees `is_cancelled()`; its output is dropped |
    /// | `shutdown_now()` | the queued tasks | a one-shot: the run's outcome; a periodic task: `Cancelled` | sees `is_cancelled()` |
    ///
    /// A run that waits inside itself uses [`sleep`](Self::sleep), which each of these
    /// ends early.
    pub fn is_cancelled(&self) -> bool {
        self.cx.header.state() == State::Cancelled
            || (self.cx.env.on_worker && self.pool().is_some_and(|p| p.is_stopping()))
    }

    /// Sleeps for up to `d` of the pool's clock, and returns early, with `false`, as soon
    /// as the run is asked to stop ([`is_cancelled`](Self::is_cancelled): a cancel of a
    /// periodic task, an interrupt, `shutdown_now`); `true` if the whole time passed. On
    /// a [`ManualClock`](crate::ManualClock) it returns once the clock has been advanced
    /// by `d` (reaching it is enough). The worker's thread sleeps meanwhile, so a pool
    /// with fewer threads than sleeping tasks runs nothing else: keep long waits between
    /// runs in the schedule, and use this for a back-off inside one run.
    ///
    /// A sleeping task is a running one:
    /// [`wait_idle`](crate::ScheduledThreadPoolExecutor::wait_idle) waits for it, and
    /// `shutdown`, `shutdown_graceful` and `close` let the sleep end by itself (they do not
    /// ask running tasks to stop); only the stops above cut it short.
    ///
    /// ```
    /// use schedpool::ScheduledThreadPoolExecutor;
    /// use std::time::Duration;
    ///
    /// let pool = ScheduledThreadPoolExecutor::new(1);
    /// let fut = pool
    ///     .schedule_with_context(Duration::ZERO, |cx| {
    ///         for attempt in 1.. {
    ///             if attempt == 3 || !cx.sleep(Duration::from_millis(10)) {
    ///                 return attempt; // done, or interrupted while backing off
    ///             }
    ///         }
    ///         unreachable!()
    ///     })
    ///     .unwrap();
    /// assert_eq!(fut.get().unwrap(), 3);
    /// ```
    pub fn sleep(&self, d: Duration) -> bool {
        let clock = self.cx.env.clock;
        let until = clock.deadline_after(d);
        // S1 (`task/sleepers.rs`): listed before every check below.
        let key = self.cx.env.task.map_or(0, |t| sleepers::key(&**t));
        let _asleep = self.pool().map(|p| p.sleepers().join(key));
        loop {
            if self.is_cancelled() {
                return false;
            }
            if clock.now() >= until {
                return true;
            }
            let at = match clock {
                Clock::Real { .. } => Some(clock.instant_of(until)),
                Clock::Manual(_) => None, // an advance unparks it
            };
            park_until(at);
        }
    }

    /// A handle that cancels, interrupts or reschedules this task, as its future's
    /// [`cancel_handle`](crate::ScheduledFuture::cancel_handle) does; it may be kept
    /// beyond the run. Made on demand (one small allocation).
    ///
    /// # Panics
    /// Never for a task the pool runs; only a task run outside any pool (the crate's own
    /// unit tests) has none.
    pub fn cancel_handle(&self) -> CancelHandle {
        let task = self.cx.env.task.expect("a pool's task knows itself");
        let pool = self.pool().expect("a pool's task knows its pool");
        CancelHandle::new(task.clone(), pool.handle_host())
    }

    /// The pool that runs the task (`RunEnv::pool`).
    fn pool(&self) -> Option<&dyn Host> {
        self.cx.env.pool
    }
}

impl std::fmt::Debug for TaskContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext")
            .field("task", self.cx.header)
            .field("runs", &self.cx.runs)
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

/// A closure that takes a [`TaskContext`], as the task layer calls it.
pub(crate) struct WithContext<G>(pub(crate) G);

impl<G, T> OnceBody<T> for WithContext<G>
where
    G: FnOnce(&TaskContext<'_>) -> T + Send + 'static,
{
    #[inline]
    fn call(self, cx: &RunCx<'_>) -> Ran<T> {
        Ran::Output((self.0)(&TaskContext { cx }))
    }
}

impl<G> PeriodicBody for WithContext<G>
where
    G: FnMut(&TaskContext<'_>) -> Next + Send + 'static,
{
    type Output = ();

    fn output(&mut self) {}

    #[inline]
    fn call(&mut self, cx: &RunCx<'_>) -> Step {
        step_of((self.0)(&TaskContext { cx }), cx)
    }
}

/// A fallible periodic closure (`schedule_fallible`): what it says on success, and what
/// the spec's [`OnError`] says after an error. The task's future yields `Ok(())`, or the
/// last error if errors stopped the task.
pub(crate) struct Fallible<G, E> {
    f: G,
    on_error: OnError,
    /// Failed runs in a row.
    failures: u32,
    /// The error that stopped the task, for its future.
    stopped_by: Option<E>,
    /// xorshift64 state for the back-off's jitter; seeded at the first failure.
    rng: u64,
}

impl<G, E> Fallible<G, E> {
    pub(crate) fn new(f: G, on_error: OnError) -> Self {
        Fallible {
            f,
            on_error,
            failures: 0,
            stopped_by: None,
            rng: 0,
        }
    }

    /// A number in `[0, 1)` (xorshift64: statistical quality is not needed here).
    fn unit(&mut self, seed: u64) -> f64 {
        if self.rng == 0 {
            self.rng = seed | 1;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What a fallible periodic body calls for one run: a closure returning
/// `Result<Next, E>`, or an async body (`async_run.rs`) whose future returns one and which
/// may be stopped before it does.
pub(crate) trait Attempt<E>: Send + 'static {
    /// The run's verdict; `None` if the run was stopped before it had one (an async body
    /// dropped at an interrupt or `shutdown_now`); `Pending` if the run goes on without
    /// its worker (an async body whose future is `Send`: [`resume_attempt`](Self::resume_attempt)).
    fn attempt(&mut self, cx: &RunCx<'_>) -> Poll<Option<Result<Next, E>>>;

    /// As `PeriodicBody::runs_off_worker`.
    fn runs_off_worker(&self, _cx: &RunCx<'_>) -> bool {
        false
    }

    /// Polls a run whose [`attempt`](Self::attempt) was `Pending` again.
    fn resume_attempt(&mut self, _cx: &RunCx<'_>, _waker: &Waker) -> Poll<Option<Result<Next, E>>> {
        unreachable!("only an attempt that was pending is resumed")
    }
}

impl<G, E> Attempt<E> for G
where
    G: FnMut(&TaskContext<'_>) -> Result<Next, E> + Send + 'static,
{
    #[inline]
    fn attempt(&mut self, cx: &RunCx<'_>) -> Poll<Option<Result<Next, E>>> {
        Poll::Ready(Some(self(&TaskContext { cx })))
    }
}

impl<G, E> PeriodicBody for Fallible<G, E>
where
    G: Attempt<E>,
    E: fmt::Display + Send + 'static,
{
    type Output = Result<(), E>;

    fn call(&mut self, cx: &RunCx<'_>) -> Step {
        match self.f.attempt(cx) {
            Poll::Ready(verdict) => self.verdict(cx, verdict),
            Poll::Pending => Step::Pending,
        }
    }

    fn runs_off_worker(&self, cx: &RunCx<'_>) -> bool {
        self.f.runs_off_worker(cx)
    }

    fn resume(&mut self, cx: &RunCx<'_>, waker: &Waker) -> Poll<Step> {
        self.f
            .resume_attempt(cx, waker)
            .map(|verdict| self.verdict(cx, verdict))
    }

    fn output(&mut self) -> Result<(), E> {
        self.stopped_by.take().map_or(Ok(()), Err)
    }

    fn last_failed(&self) -> bool {
        self.failures > 0
    }
}

impl<G: Attempt<E>, E: fmt::Display + Send + 'static> Fallible<G, E> {
    /// What a run's verdict means for the task (`None`: the run was stopped).
    fn verdict(&mut self, cx: &RunCx<'_>, verdict: Option<Result<Next, E>>) -> Step {
        let Some(verdict) = verdict else {
            return Step::Stopped;
        };
        let error = match verdict {
            Ok(next) => {
                self.failures = 0;
                return step_of(next, cx);
            }
            Err(e) => e,
        };
        self.failures = self.failures.saturating_add(1);
        // Reported as a panic is: counted, traced, and on the future if it stops the task.
        if let Some(c) = cx.env.counters {
            crate::stats::bump(&c.failed);
        }
        let view = TaskContext { cx };
        let pool = view.pool().map_or("", |p| p.name());
        crate::user::traced(|| {
            tracing::warn!(
                target: "schedpool",
                pool,
                id = cx.header.id(),
                task_name = cx.task_name,
                failures = self.failures,
                // `{:#}`: the error with its causes where its type prints them so (`anyhow`).
                error = %format_args!("{error:#}"),
                "periodic run failed"
            )
        });
        if self.on_error.stop_after.is_some_and(|n| self.failures >= n) {
            self.stopped_by = Some(error);
            return Step::Stop;
        }
        match self.on_error.backoff {
            Some(b) => {
                let unit = self.unit(cx.header.id() ^ cx.env.now);
                let wait = b.delay(self.failures, unit);
                Step::At(crate::clock::add(cx.env.clock.now(), wait))
            }
            None => Step::Continue,
        }
    }
}

/// Gives a kept lease back when dropped: at a run's end, and while its poll unwinds.
struct ReleaseAtEnd<'a, 'c> {
    kept: &'a mut Option<Box<KeptLease>>,
    cx: &'a RunCx<'c>,
}

impl Drop for ReleaseAtEnd<'_, '_> {
    fn drop(&mut self) {
        if let Some(kept) = self.kept.take() {
            kept.release(&Ledger::of(self.cx));
        }
    }
}

/// A context closure's answer as the task layer's step.
pub(super) fn step_of(next: Next, cx: &RunCx<'_>) -> Step {
    let clock = cx.env.clock;
    match next {
        Next::Continue => Step::Continue,
        Next::After(d) => Step::At(crate::clock::add(clock.now(), d)),
        Next::At(at) => Step::At(clock.ticks_of(at)),
        Next::Stop => Step::Stop,
    }
}

/// A periodic closure with what its spec adds around each run: the link of the run's span
/// to the submitter's span, and the cluster lock of an exclusive task (either may be
/// absent; the locked run itself is `exclusive.rs`'s `run_locked`).
pub(crate) struct Guarded<B> {
    body: B,
    /// The submitter's span (`span.rs`'s `Linked` explains why the span itself is held).
    parent: Option<tracing::Span>,
    lock: Option<Box<Exclusive>>,
    /// A catch-up run's successor's deadline (`PeriodicBody::catch_up_until`): a run due
    /// before it (the catch-up) releases its lease by then, whatever `at_least_for` says
    /// (a catch-up has no tick of its own to protect, and must not take the next one).
    /// Cleared by the first run due at or after it.
    catch_up_until: Option<Ticks>,
    /// The lease of a run whose future is pending (its body `runs_off_worker`), kept
    /// across the run's polls until its end (boxed: every periodic task has the field,
    /// and few an exclusive async job's lease).
    kept: Option<Box<KeptLease>>,
}

impl<B: PeriodicBody> Guarded<B> {
    pub(crate) fn new(body: B, parent: Option<tracing::Span>, lock: Option<Exclusive>) -> Self {
        Guarded {
            body,
            parent,
            lock: lock.map(Box::new),
            catch_up_until: None,
            kept: None,
        }
    }
}

impl<B: PeriodicBody> PeriodicBody for Guarded<B> {
    type Output = B::Output;

    fn call(&mut self, cx: &RunCx<'_>) -> Step {
        if let Some(parent) = &self.parent {
            link_to(parent);
        }
        let Some(spec) = self.lock.as_deref() else {
            return self.body.call(cx);
        };
        let body = &mut self.body;
        // Only a run due before the catch-up's successor is the catch-up (one skipped
        // for lateness never reaches here, and then its successor keeps the full hold).
        let hold_until = match self.catch_up_until {
            Some(until) if cx.deadline < until => Some(until),
            _ => {
                self.catch_up_until = None;
                None
            }
        };
        if body.runs_off_worker(cx) {
            // The run goes on without its worker: the lease is kept across its polls.
            let host = cx.env.pool.map(Host::handle_host);
            return match keep_locked(spec, &Ledger::of(cx), hold_until, host) {
                Ok(Locked::Ran(kept)) => {
                    let step = body.call(&RunCx {
                        lease: Some(kept.lease()),
                        ..*cx
                    });
                    debug_assert_eq!(step, Step::Pending, "a run off its worker");
                    self.kept = Some(Box::new(kept));
                    step
                }
                Ok(Locked::Held) => Step::Skip(Declined::LockHeld),
                Ok(Locked::Paused(pause)) => Step::Skip(Declined::Paused(pause)),
                Err(_) => Step::Skip(Declined::LockFailed),
            };
        }
        let ran = run_locked(spec, &Ledger::of(cx), hold_until, |lease| {
            body.call(&RunCx {
                lease: Some(lease),
                ..*cx
            })
        });
        match ran {
            Ok(Locked::Ran(step)) => step,
            Ok(Locked::Held) => Step::Skip(Declined::LockHeld),
            Ok(Locked::Paused(pause)) => Step::Skip(Declined::Paused(pause)),
            Err(_) => Step::Skip(Declined::LockFailed),
        }
    }

    fn runs_off_worker(&self, cx: &RunCx<'_>) -> bool {
        self.body.runs_off_worker(cx)
    }

    /// Each poll of a run off its worker is linked to the submitter's span too (each is
    /// a `task` span of its own); the kept lease goes back when the run ends, or when its
    /// poll unwinds.
    fn resume(&mut self, cx: &RunCx<'_>, waker: &Waker) -> Poll<Step> {
        if let Some(parent) = &self.parent {
            link_to(parent);
        }
        let kept = ReleaseAtEnd {
            kept: &mut self.kept,
            cx,
        };
        let cx = RunCx {
            lease: kept.kept.as_deref().map(KeptLease::lease),
            ..*cx
        };
        let polled = self.body.resume(&cx, waker);
        if polled.is_pending() {
            std::mem::forget(kept); // kept for the next poll
        }
        polled
    }

    fn output(&mut self) -> B::Output {
        self.body.output()
    }

    fn last_failed(&self) -> bool {
        self.body.last_failed()
    }

    fn catch_up_until(&mut self, next: Ticks) {
        self.catch_up_until = Some(next);
        self.body.catch_up_until(next);
    }
}
