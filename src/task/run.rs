//! What a run sees and what it runs: the environment a worker (or a caller's thread) runs
//! a task in ([`RunEnv`], [`RunCx`]), what a run may ask of its pool ([`Host`]), the
//! body traits a task holds ([`OnceBody`], [`PeriodicBody`], and [`Plain`], a closure
//! that takes nothing; what else wraps a closure is in `body/`), a task's name
//! ([`Label`]), and what a run reports ([`RunReport`]).

use std::fmt;
use std::task::{Poll, Waker};

use crate::clock::{Clock, Ticks};
use crate::stats::Counters;
use crate::sync::Arc;
use crate::telemetry::TaskTimer;

use super::permits::AsyncPermits;
use super::{sleepers, Header, Task, TaskRef};

/// What a worker learns from one run.
#[derive(Debug)]
pub(crate) struct RunReport {
    /// The closure ran (false: the task was cancelled before it could start, or skipped).
    pub(crate) ran: bool,
    /// The run was skipped for `max_lateness`.
    pub(crate) skipped: bool,
    /// The run was skipped because the task is paused (`ScheduledFuture::pause`).
    pub(crate) paused: bool,
    /// The run panicked; the message, for tracing.
    pub(crate) panic: Option<String>,
    /// Periodic and still SCHEDULED: re-enqueue at this deadline.
    pub(crate) next: Option<Ticks>,
}

impl RunReport {
    pub(crate) const NOT_RUN: RunReport = RunReport {
        ran: false,
        skipped: false,
        paused: false,
        panic: None,
        next: None,
    };
}

/// The `next` of a run's report that left something to its worker in
/// [`RunEnv::handoff`] ([`ToWorker`]); the rest of the report is empty. No deadline is
/// ever this (C1 in `clock.rs`: a deadline is at most `FAR_FUTURE`, or `NEVER`), and the
/// worker looks at it only where it looks at `next` already (a periodic task's
/// re-queue), so a one-shot closure's run pays nothing for it.
pub(crate) const HANDED: Ticks = u64::MAX - 1;

const _: () = assert!(crate::clock::FAR_FUTURE < HANDED && crate::clock::NEVER != HANDED);

/// What a run leaves to its worker, through [`RunEnv::handoff`], reporting
/// [`HANDED`]: only the runs of async bodies that give their worker back do.
#[derive(Debug)]
pub(crate) enum ToWorker {
    /// The run's future is pending: the run goes on without the worker, in a suspended
    /// run made from this continuation (`suspended.rs`).
    GoesOn(Pending),
    /// This was a suspended run's poll (its queue entry), and its run ended: that run's
    /// task and facts, and its report.
    Ended(Resumed, RunReport),
}

/// Where a run leaves what it hands its worker ([`ToWorker`]).
pub(crate) type Handoff = std::cell::Cell<Option<ToWorker>>;

impl RunReport {
    /// The report of a run that left something to its worker ([`HANDED`]).
    pub(crate) const HANDED: RunReport = RunReport {
        next: Some(HANDED),
        ..RunReport::NOT_RUN
    };
}

/// The continuation of a run whose body's future is pending ([`ToWorker::GoesOn`]):
/// polled by whoever resumes the run (`suspended.rs`), in that thread's environment
/// (`env.task` is the run's task, `env.now` the run's start). `Ready` carries the report
/// of the run's end, applied to its task as a run's end is (the task re-queued, or its
/// future completed).
pub(crate) trait Resume: Send {
    fn resume(&mut self, env: &RunEnv<'_>, waker: &Waker) -> Poll<RunReport>;
}

/// A [`Resume`] in a report.
pub(crate) struct Pending(pub(crate) Box<dyn Resume>);

impl fmt::Debug for Pending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Pending")
    }
}

/// The facts of a suspended run that ended ([`ToWorker::Ended`]).
#[derive(Debug)]
pub(crate) struct Resumed {
    /// The run's task (the reference the run's worker took from the queue).
    pub(crate) task: TaskRef,
    /// The deadline the run was taken for.
    pub(crate) deadline: Ticks,
    /// When the run started (its take).
    pub(crate) started: Ticks,
}

/// What a run gets from whoever runs it.
pub(crate) struct RunEnv<'a> {
    /// When the run was taken (the worker's take, or the clock's reading for a run on the
    /// caller's thread).
    pub(crate) now: Ticks,
    pub(crate) clock: &'a Clock,
    /// The pool's counters, counted before the future completes (so a caller that saw the
    /// outcome sees the run counted); `None` where runs are not counted.
    pub(crate) counters: Option<&'a Counters>,
    /// The task as the queue holds it (for a task context's cancel handle); `None` in
    /// unit tests that run a bare task.
    pub(crate) task: Option<&'a TaskRef>,
    /// The pool that runs it, as far as a run may see it ([`Host`]: the task context,
    /// `body/context.rs`, and the exclusive runs, `body/exclusive.rs`, use it).
    pub(crate) pool: Option<&'a dyn Host>,
    /// The run is on one of the pool's workers (not a `CallerRuns` run or a
    /// `PendingTask::run` on the caller's thread): `shutdown_now` asks it to stop.
    pub(crate) on_worker: bool,
    /// Where the run leaves what it hands its worker ([`ToWorker`]): on a worker only.
    pub(crate) handoff: Option<&'a Handoff>,
}

/// What a run, and a task's handles, may ask of the pool that holds it: the seam between
/// the task layer and the pool (tokio's `task::Schedule`), implemented by the pool's
/// `Arc<Pool>` and its `Stripe`s (`pool/host.rs`). The closure adaptors (`body/`)
/// and the handles (`future.rs`: a future holds its pool as an `Arc<dyn Host>`, one of
/// the stripes) reach the pool only through it.
pub(crate) trait Host: Send + Sync {
    /// The pool's name, for traces.
    fn name(&self) -> &str;
    /// `shutdown_now` has begun: a run on a worker is asked to stop.
    fn is_stopping(&self) -> bool;
    /// The runs asleep in `TaskContext::sleep` or awaiting in an async body (S1,
    /// `sleepers.rs`).
    fn sleepers(&self) -> &sleepers::Sleepers;
    /// This pool as a task's handles hold it (a new reference to one of its stripes): what
    /// a `CancelHandle` made during a run keeps (`TaskContext::cancel_handle`).
    fn handle_host(&self) -> Arc<dyn Host>;
    /// The pool's clock.
    fn clock(&self) -> &Clock;
    /// The pool's counters (a lease's keep-alive thread counts its extensions there).
    fn counters(&self) -> &Counters;
    /// Cancels `task` (`ScheduledFuture::cancel`); with `interrupt`, a running one-shot
    /// too (`ScheduledFuture::interrupt`). `true` if this call cancelled it.
    fn cancel(&self, task: &dyn Task, interrupt: bool) -> bool;
    /// Moves `task`'s next run to `at` (`ScheduledFuture::reschedule`); `now`, a reading
    /// of the pool's clock the caller made for `at`, stamps the move's sequence number
    /// (`None`: the queue reads the clock).
    fn reschedule(&self, task: &dyn Task, at: Ticks, now: Option<Ticks>) -> bool;
    /// `task`'s deadline, in its queue node or its header (T4).
    fn deadline_of(&self, task: &dyn Task) -> Ticks;
    /// Pauses or resumes a periodic `task` (`ScheduledFuture::pause`, `resume`); `true`
    /// if this call changed it.
    fn pause(&self, task: &dyn Task, pause: bool) -> bool;
    /// One extra run of `task` as soon as a worker is free (`ScheduledFuture::run_now`).
    fn run_now(&self, task: &dyn Task) -> bool;
    /// Runs `task` once on this thread and then ends it (`PendingTask::run`).
    fn run_here(&self, task: &TaskRef);
    /// The pool's bound on the async runs off their worker (`permits.rs`).
    fn async_permits(&self) -> &AsyncPermits;
    /// Queues a woken suspended run, which the caller owns (QUEUED), for a worker to poll;
    /// after `shutdown_now` has begun, polls it to its end on this thread instead (its
    /// future is dropped there, `pool/awaiting.rs`).
    fn resume(&self, run: TaskRef);
}

/// What a task's closure is called with: the environment, and this run's facts.
pub(crate) struct RunCx<'a> {
    pub(crate) env: &'a RunEnv<'a>,
    pub(crate) header: &'a Header,
    /// This run's deadline.
    pub(crate) deadline: Ticks,
    /// Runs so far, this one included.
    pub(crate) runs: u64,
    /// The task's name (`Periodic::name`), for the closure's own logs.
    pub(crate) task_name: Option<&'a str>,
    /// The cluster lease this run holds (an exclusive task, `body/exclusive.rs`).
    pub(crate) lease: Option<&'a crate::cluster::Lease>,
}

/// A one-shot's closure as its task calls it: a plain closure ([`Plain`]), one that
/// takes a task context (`body/context.rs`), or one that makes a future
/// (`body/async_run.rs`).
pub(crate) trait OnceBody<T>: Send + 'static {
    fn call(self, cx: &RunCx<'_>) -> Ran<T>;
}

/// How a one-shot's body ended, short of a panic.
pub(crate) enum Ran<T> {
    /// It returned its output.
    Output(T),
    /// It was stopped before it had one: an async body whose future was dropped at an
    /// interrupt or at `shutdown_now` (`body/async_run.rs`). The task ends CANCELLED
    /// (`finish(Cancelled)`, if the interrupt has not ended it already).
    Stopped,
    /// Its future is pending and the run gives its worker back: the run goes on in this
    /// body run (an async body on a pool that polls it, `body/async_run.rs`).
    Pending(Box<dyn OnceResume<T>>),
}

impl<T> fmt::Debug for Ran<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ran::Output(_) => "Output",
            Ran::Stopped => "Stopped",
            Ran::Pending(_) => "Pending",
        })
    }
}

/// A one-shot body's run whose future is pending ([`Ran::Pending`]), polled again by
/// whoever resumes the run; never `Ready(Ran::Pending)`.
pub(crate) trait OnceResume<T>: Send {
    fn resume(&mut self, cx: &RunCx<'_>, waker: &Waker) -> Poll<Ran<T>>;
}

/// A periodic task's closure as its task calls it; it says what comes next.
pub(crate) trait PeriodicBody: Send + 'static {
    /// What the task's future yields when the task ends by itself (its rule or trigger
    /// ended, `max_runs`, or the closure said stop): `()`, or a fallible task's verdict.
    type Output: Send + 'static;

    fn call(&mut self, cx: &RunCx<'_>) -> Step;

    /// The output, once the task ends by itself.
    fn output(&mut self) -> Self::Output;

    /// `true` if this run's [`call`](Self::call) returns [`Step::Pending`] and does its
    /// work in [`resume`](Self::resume): an async body whose run gives its worker back
    /// (what surrounds it, a cluster lock, is then kept across the run's polls).
    fn runs_off_worker(&self, _cx: &RunCx<'_>) -> bool {
        false
    }

    /// Polls the run again after [`call`](Self::call) returned [`Step::Pending`], with the
    /// run's context and the waker of the run's next poll; never `Ready(Step::Pending)`.
    /// Only a body whose `call` can return `Pending` is resumed.
    fn resume(&mut self, _cx: &RunCx<'_>, _waker: &Waker) -> Poll<Step> {
        unreachable!("only a body whose call returned Step::Pending is resumed")
    }

    /// `true` if the last call failed (a fallible closure's error).
    fn last_failed(&self) -> bool {
        false
    }

    /// Told before the task is shared, when its first run is an `Exclusive::catch_up`
    /// run at once: `next`, the deadline the schedule goes on at after it (a fixed-rate
    /// task's grid). The cluster lock's wrapper keeps the catch-up's lease from reaching
    /// into that tick (`body/context.rs`, `Guarded`).
    fn catch_up_until(&mut self, _next: Ticks) {}
}

/// What a periodic run says comes next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The schedule's rule decides.
    Continue,
    /// The next run is due at this time.
    At(Ticks),
    /// No more runs: the future completes with `Ok(())`.
    Stop,
    /// The closure declined this run without running (its cluster lock is held elsewhere
    /// or unreachable, `body/exclusive.rs`): not counted as a run (`runs`, `max_runs`, the
    /// completed count); the schedule goes on as after a `max_lateness` skip.
    Skip(Declined),
    /// The run was stopped before it ended: an async body whose future was dropped at an
    /// interrupt or at `shutdown_now` (`body/async_run.rs`). Counted as a run; the task
    /// ends CANCELLED, whatever `max_runs` or the rule would say.
    Stopped,
    /// The run's future is pending and the run gives its worker back: the body keeps its
    /// state, and [`PeriodicBody::resume`] polls it again (`body/async_run.rs`).
    Pending,
}

/// Why a closure declined a run ([`Step::Skip`]), as `TaskInfo::last_run` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Declined {
    /// Another node holds the cluster lock.
    LockHeld,
    /// The cluster lock's store could not be asked.
    LockFailed,
    /// The job is paused on every node (`ClusterLock::pause`).
    Paused(crate::cluster::Pause),
}

/// A closure that takes no context.
pub(crate) struct Plain<F>(pub(crate) F);

impl<F: FnOnce() -> T + Send + 'static, T> OnceBody<T> for Plain<F> {
    #[inline]
    fn call(self, _: &RunCx<'_>) -> Ran<T> {
        Ran::Output((self.0)())
    }
}

impl<F: FnMut() + Send + 'static> PeriodicBody for Plain<F> {
    type Output = ();

    #[inline]
    fn call(&mut self, _: &RunCx<'_>) -> Step {
        (self.0)();
        Step::Continue
    }

    fn output(&mut self) {}
}

/// A one-shot's name (`ScheduledThreadPoolExecutor::named`), kept by its task for spans,
/// panic logs and snapshots: `()` for an unnamed one-shot, which so pays nothing for it.
pub(crate) trait Label: Send + Sync + 'static {
    fn get(&self) -> Option<&str>;

    /// The name's run-time series (feature `metrics`).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))] // read by the worker with the feature
    fn timer(&self) -> Option<&TaskTimer> {
        None
    }
}

impl Label for () {
    #[inline]
    fn get(&self) -> Option<&str> {
        None
    }
}

/// The name every one-shot of one `Named` shares, with its run-time series.
pub(crate) struct TaskName {
    pub(crate) name: Box<str>,
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))] // read by the worker with the feature
    pub(crate) timer: Option<TaskTimer>,
}

impl Label for Arc<TaskName> {
    #[inline]
    fn get(&self) -> Option<&str> {
        Some(&self.name)
    }

    #[inline]
    fn timer(&self) -> Option<&TaskTimer> {
        self.timer.as_ref()
    }
}

/// Counts a finished run (and its panic) before its outcome is published.
pub(super) fn count_run(counters: Option<&Counters>, panicked: bool) {
    if let Some(c) = counters {
        crate::stats::bump(&c.completed);
        if panicked {
            crate::stats::bump(&c.panicked);
            crate::stats::bump(&c.run_panicked);
        }
    }
}
