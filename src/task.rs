//! `ScheduledFutureTask`: a task's state machine, its closure, its next deadline and the
//! slot its outcome is delivered through.
//!
//! # Design
//! A task is one allocation: an `Arc` holding the [`Header`] (atomic state, deadline,
//! heap handle), the closure behind a small mutex, and the [`Completion`] its futures wait
//! on. The queue holds it as `Arc<dyn Job>`; a [`ScheduledFuture`](crate::ScheduledFuture)
//! holds the same allocation as `Arc<dyn TypedJob<T>>`, which knows the output type.
//!
//! Task states (`Header::state`, one `AtomicU8`):
//!
//! ```text
//!   SCHEDULED --start--> RUNNING --finish, one-shot-----------> DONE
//!       |                   |-----finish, periodic------------> SCHEDULED (next deadline)
//!       |                   |-----panic-----------------------> PANICKED
//!       |                   '-----cancel (periodic only)------> CANCELLED (this run completes;
//!       |                                                                  no re-enqueue)
//!       '--cancel--> CANCELLED
//! ```
//!
//! DONE, PANICKED and CANCELLED are terminal. Only `start` enters RUNNING, and only from
//! SCHEDULED, so two runs of one task never overlap (T1). A one-shot that has started
//! cannot be cancelled: `cancel` returns false and the run's outcome stands.
//!
//! # Invariants
//! - T1: at most one thread is between a successful `start` and the end of that run.
//! - T2: exactly one transition into a terminal state succeeds; its author, and only it,
//!   completes the [`Completion`] (so a future's outcome is written once).
//! - T3: the closure lives in `body` while SCHEDULED. The thread that moved the task to
//!   RUNNING takes it out for the run; a periodic run puts it back only if its
//!   RUNNING -> SCHEDULED exchange succeeds, which it attempts while holding `body`'s lock.
//!   A canceller takes whatever is in `body` after its own exchange. So exactly one thread
//!   drops the closure, and a cancelled task never keeps it.
//! - T4: `Header::handle` is read and written only under the owning queue's lock.
//!
//! # Ordering
//! `state` transitions use `AcqRel` compare-exchange: a canceller that wins sees everything
//! the scheduler wrote before queueing; a runner that starts sees the same. Terminal
//! stores are `Release`, paired with the `Acquire` loads in `is_done` / `is_cancelled`,
//! so a caller that observes DONE also observes the run's side effects. The outcome itself
//! travels through the `Completion` mutex, which orders it on its own.

use std::any::Any;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::clock::{self, Clock, Ticks};
use crate::error::TaskError;
use crate::heap::Handle;
use crate::periodic::{MissedTicks, OnPanic, SharedTrigger, TriggerContext};
use crate::stats::Counters;
use crate::sync::{AtomicU64, AtomicU8, Condvar, Mutex};

/// Task states; see the module diagram.
pub(crate) mod state {
    pub(crate) const SCHEDULED: u8 = 0;
    pub(crate) const RUNNING: u8 = 1;
    pub(crate) const DONE: u8 = 2;
    pub(crate) const PANICKED: u8 = 3;
    pub(crate) const CANCELLED: u8 = 4;

    /// DONE, PANICKED or CANCELLED.
    #[inline]
    pub(crate) fn is_terminal(s: u8) -> bool {
        s >= DONE
    }
}

/// What kind of schedule a task follows (the `kind` field of the `task` span).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Once,
    FixedRate,
    FixedDelay,
    Trigger,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Once => "once",
            Kind::FixedRate => "fixed_rate",
            Kind::FixedDelay => "fixed_delay",
            Kind::Trigger => "trigger",
        }
    }
}

/// The part of a task every holder can see, whatever its output type.
pub(crate) struct Header {
    /// See the module diagram (T1, T2).
    state: AtomicU8,
    pub(crate) kind: Kind,
    pub(crate) id: u64,
    /// The current run's deadline, then the next one (API.md: `deadline()`). Written by
    /// the thread that owns the task's schedule at that moment (the submitter, the running
    /// worker, or `reschedule` under the queue lock); `Relaxed` reads only report it.
    deadline: AtomicU64,
    /// The task's heap handle while it is queued, `Handle::NONE` otherwise (T4). `Relaxed`:
    /// the queue lock orders every access.
    handle: AtomicU64,
    /// A deadline set by `reschedule` while a periodic task was out of the queue (running),
    /// used instead of its rule's next deadline when it is re-queued; `NO_DEADLINE` if none.
    /// Only under the queue lock, like `handle` (T4).
    rescheduled: AtomicU64,
}

/// "No deadline" in `Header::rescheduled`.
const NO_DEADLINE: u64 = u64::MAX;

impl Header {
    pub(crate) fn new(kind: Kind, id: u64, deadline: Ticks) -> Self {
        Header {
            state: AtomicU8::new(state::SCHEDULED),
            kind,
            id,
            deadline: AtomicU64::new(deadline),
            handle: AtomicU64::new(Handle::NONE.to_bits()),
            rescheduled: AtomicU64::new(NO_DEADLINE),
        }
    }

    #[inline]
    pub(crate) fn state(&self) -> u8 {
        // Acquire: pairs with the Release of terminal stores (see module notes).
        self.state.load(Ordering::Acquire)
    }

    #[inline]
    pub(crate) fn is_periodic(&self) -> bool {
        self.kind != Kind::Once
    }

    #[inline]
    pub(crate) fn deadline(&self) -> Ticks {
        self.deadline.load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn set_deadline(&self, d: Ticks) {
        self.deadline.store(d, Ordering::Relaxed);
    }

    /// T4: call only under the queue lock.
    #[inline]
    pub(crate) fn handle(&self) -> Handle {
        Handle::from_bits(self.handle.load(Ordering::Relaxed))
    }

    /// T4: call only under the queue lock.
    #[inline]
    pub(crate) fn set_handle(&self, h: Handle) {
        self.handle.store(h.to_bits(), Ordering::Relaxed);
    }

    /// T4: call only under the queue lock. Records a deadline for the next re-queue.
    #[inline]
    pub(crate) fn set_rescheduled(&self, d: Ticks) {
        self.rescheduled.store(d, Ordering::Relaxed);
    }

    /// T4: call only under the queue lock. Takes the deadline `set_rescheduled` left.
    #[inline]
    pub(crate) fn take_rescheduled(&self) -> Option<Ticks> {
        let d = self.rescheduled.swap(NO_DEADLINE, Ordering::Relaxed);
        (d != NO_DEADLINE).then_some(d)
    }

    /// SCHEDULED -> RUNNING (T1). `false` if the task is not SCHEDULED (cancelled).
    #[must_use]
    #[inline]
    pub(crate) fn start(&self) -> bool {
        self.transition(state::SCHEDULED, state::RUNNING)
    }

    /// -> CANCELLED from SCHEDULED, or from RUNNING for a periodic task. `true` if this
    /// call made the transition (T2: the caller must then run `Job::finish_cancelled`).
    #[must_use]
    pub(crate) fn cancel(&self) -> bool {
        let mut cur = self.state.load(Ordering::Acquire);
        loop {
            let allowed = cur == state::SCHEDULED || (cur == state::RUNNING && self.is_periodic());
            if !allowed {
                return false;
            }
            // AcqRel: see module notes.
            match self.state.compare_exchange_weak(
                cur,
                state::CANCELLED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }

    #[must_use]
    #[inline]
    fn transition(&self, from: u8, to: u8) -> bool {
        // AcqRel: see module notes.
        self.state
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Header")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("state", &self.state())
            .field("deadline", &self.deadline())
            .finish()
    }
}

/// What a worker learns from one run.
#[derive(Debug)]
pub(crate) struct RunReport {
    /// The closure ran (false: the task was cancelled before it could start, or skipped).
    pub(crate) ran: bool,
    /// The run was skipped for `max_lateness`.
    pub(crate) skipped: bool,
    /// The run panicked; the message, for tracing.
    pub(crate) panic: Option<String>,
    /// Periodic and still SCHEDULED: re-enqueue at this deadline.
    pub(crate) next: Option<Ticks>,
}

impl RunReport {
    const NOT_RUN: RunReport = RunReport {
        ran: false,
        skipped: false,
        panic: None,
        next: None,
    };
}

/// A task as the queue and the workers see it.
pub(crate) trait Job: Send + Sync {
    fn header(&self) -> &Header;

    /// Runs the task once on a worker (Java: `run`, or `runAndReset` for a periodic task).
    /// `now` is the time the worker took it.
    /// `counters`: the pool's, counted before the future completes (so a caller that saw
    /// the outcome sees the run counted); `None` where runs are not counted.
    fn run(&self, now: Ticks, clock: &Clock, counters: Option<&Counters>) -> RunReport;

    /// Runs the task once on this thread for a `PendingTask` or `CallerRuns`: a one-shot
    /// completes; a periodic task runs once and then, if `then_cancel`, ends cancelled.
    /// Returns the report (`next` is set for a periodic task that may continue).
    fn run_now(&self, clock: &Clock, then_cancel: bool) -> RunReport;

    /// After `Header::cancel` returned true: drops the closure (if this thread holds the
    /// last copy, T3) and completes the future with `Cancelled` (T2). Never under a lock.
    fn finish_cancelled(&self);
}

/// A task whose output type is known: what a `ScheduledFuture<T>` holds.
pub(crate) trait TypedJob<T>: Job {
    fn completion(&self) -> &Completion<T>;
}

/// The slot a task's outcome is delivered through, with its waiters.
pub(crate) struct Completion<T> {
    slot: Mutex<Slot<T>>,
    /// Threads blocked in `wait`; notified after the slot becomes `Ready`.
    done: Condvar,
}

enum Slot<T> {
    /// Not done yet; the last async waker to be told.
    Waiting(Option<Waker>),
    Ready(Result<T, TaskError>),
    /// The outcome was moved out by `get` or `poll`.
    Taken,
}

impl<T> Completion<T> {
    pub(crate) fn new() -> Self {
        Completion {
            slot: Mutex::new(Slot::Waiting(None)),
            done: Condvar::new(),
        }
    }

    /// Stores the outcome and wakes every waiter (T2: called once).
    pub(crate) fn complete(&self, outcome: Result<T, TaskError>) {
        let waker = {
            let mut slot = self.slot.lock();
            match std::mem::replace(&mut *slot, Slot::Ready(outcome)) {
                Slot::Waiting(waker) => waker,
                previous => {
                    // T2 broken: keep the first outcome (drop the new one after unlocking).
                    debug_assert!(false, "a task completed twice");
                    let second = std::mem::replace(&mut *slot, previous);
                    drop(slot);
                    drop(second);
                    return;
                }
            }
        };
        // The slot is Ready before this notify; a waiter either saw it under the lock or is
        // parked on `done` already (it released the lock by waiting).
        self.done.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_ready(&self) -> bool {
        !matches!(*self.slot.lock(), Slot::Waiting(_))
    }

    /// Blocks until the outcome is stored, or `until` passes; `true` if it is stored.
    pub(crate) fn wait(&self, until: Option<Instant>) -> bool {
        let mut slot = self.slot.lock();
        while matches!(*slot, Slot::Waiting(_)) {
            match until {
                None => self.done.wait(&mut slot),
                Some(until) => {
                    if self.done.wait_until(&mut slot, until) {
                        return !matches!(*slot, Slot::Waiting(_));
                    }
                }
            }
        }
        true
    }

    /// Moves the outcome out after `wait` returned true.
    ///
    /// # Panics
    /// If the outcome was already taken (the future was polled to completion before).
    pub(crate) fn take(&self) -> Result<T, TaskError> {
        match std::mem::replace(&mut *self.slot.lock(), Slot::Taken) {
            Slot::Ready(outcome) => outcome,
            Slot::Waiting(_) => unreachable!("take before the task completed"),
            Slot::Taken => panic!("ScheduledFuture outcome taken twice (polled after Ready?)"),
        }
    }

    /// The `Future::poll` of a `ScheduledFuture`.
    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<Result<T, TaskError>> {
        let mut slot = self.slot.lock();
        match &mut *slot {
            Slot::Waiting(waker) => {
                if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
            Slot::Ready(_) => match std::mem::replace(&mut *slot, Slot::Taken) {
                Slot::Ready(outcome) => Poll::Ready(outcome),
                _ => unreachable!(),
            },
            Slot::Taken => panic!("ScheduledFuture polled after it returned Ready"),
        }
    }
}

/// Runs `f` catching a panic; returns the payload and its message.
pub(crate) fn run_caught<R>(f: impl FnOnce() -> R) -> Result<R, Caught> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let msg = crate::error::panic_message(payload.as_ref())
            .unwrap_or("<non-string payload>")
            .to_owned();
        (payload, msg)
    })
}

/// Counts a finished run (and its panic) before its outcome is published.
fn count_run(counters: Option<&Counters>, panicked: bool) {
    if let Some(c) = counters {
        crate::stats::bump(&c.completed);
        if panicked {
            crate::stats::bump(&c.panicked);
        }
    }
}

/// Drops a user value, containing a panic from its `Drop` (traced, then ignored).
pub(crate) fn drop_quietly<V>(value: V) {
    if let Err((_, msg)) = run_caught(move || drop(value)) {
        tracing::error!(target: "schedpool", panic = %msg, "a task's closure panicked while being dropped");
    }
}

/// A one-shot task (Java: `ScheduledFutureTask` with `period == 0`).
pub(crate) struct OnceTask<F, T> {
    header: Header,
    /// The closure while SCHEDULED (T3).
    body: Mutex<Option<F>>,
    done: Completion<T>,
}

impl<F, T> OnceTask<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    pub(crate) fn new(id: u64, deadline: Ticks, f: F) -> Self {
        OnceTask {
            header: Header::new(Kind::Once, id, deadline),
            body: Mutex::new(Some(f)),
            done: Completion::new(),
        }
    }

    /// The run after a successful `start`.
    fn run_started(&self, counters: Option<&Counters>) -> RunReport {
        let Some(f) = self.body.lock().take() else {
            debug_assert!(false, "T3: a started one-shot has its closure");
            return RunReport::NOT_RUN;
        };
        let outcome = run_caught(f);
        count_run(counters, outcome.is_err());
        match outcome {
            Ok(value) => {
                let finished = self.header.transition(state::RUNNING, state::DONE);
                debug_assert!(
                    finished,
                    "T1: only the runner leaves RUNNING for a one-shot"
                );
                self.done.complete(Ok(value));
                RunReport {
                    ran: true,
                    skipped: false,
                    panic: None,
                    next: None,
                }
            }
            Err((payload, msg)) => {
                let finished = self.header.transition(state::RUNNING, state::PANICKED);
                debug_assert!(
                    finished,
                    "T1: only the runner leaves RUNNING for a one-shot"
                );
                self.done.complete(Err(TaskError::Panicked(payload)));
                RunReport {
                    ran: true,
                    skipped: false,
                    panic: Some(msg),
                    next: None,
                }
            }
        }
    }
}

impl<F, T> Job for OnceTask<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    fn header(&self) -> &Header {
        &self.header
    }

    fn run(&self, _now: Ticks, _clock: &Clock, counters: Option<&Counters>) -> RunReport {
        if !self.header.start() {
            return RunReport::NOT_RUN;
        }
        self.run_started(counters)
    }

    fn run_now(&self, clock: &Clock, _then_cancel: bool) -> RunReport {
        self.run(clock.now(), clock, None)
    }

    fn finish_cancelled(&self) {
        let f = self.body.lock().take();
        drop_quietly(f);
        self.done.complete(Err(TaskError::Cancelled));
    }
}

impl<F, T> TypedJob<T> for OnceTask<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    fn completion(&self) -> &Completion<T> {
        &self.done
    }
}

/// How a periodic task finds its next deadline (built from a [`Periodic`](crate::Periodic)).
#[derive(Clone, Debug)]
pub(crate) enum Rule {
    /// Java `scheduleAtFixedRate`: previous deadline + period, with a missed-tick policy.
    FixedRate(Duration, MissedTicks),
    /// Java `scheduleWithFixedDelay`: end of the previous run + delay.
    FixedDelay(Duration),
    /// A user trigger.
    Trigger(SharedTrigger),
}

/// The times of a run, in ticks, for [`Rule::next`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunTimes {
    pub(crate) scheduled: Ticks,
    pub(crate) started: Ticks,
    pub(crate) finished: Ticks,
    pub(crate) runs: u64,
    pub(crate) panicked: bool,
}

impl Rule {
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Rule::FixedRate(..) => Kind::FixedRate,
            Rule::FixedDelay(_) => Kind::FixedDelay,
            Rule::Trigger(_) => Kind::Trigger,
        }
    }

    /// A zero period or delay (rejected with `ScheduleError::ZeroPeriod`).
    pub(crate) fn is_zero(&self) -> bool {
        match self {
            Rule::FixedRate(d, _) | Rule::FixedDelay(d) => d.is_zero(),
            Rule::Trigger(_) => false,
        }
    }

    /// Whether `next` needs the time a run finished (else the clock is not read again).
    fn needs_finish_time(&self) -> bool {
        !matches!(self, Rule::FixedRate(..))
    }

    /// The next deadline after a run; `Ok(None)` when a trigger finishes the task, `Err`
    /// when the trigger panicked.
    pub(crate) fn next(&self, t: RunTimes, clock: &Clock) -> Result<Option<Ticks>, Caught> {
        // A fixed rule's next deadline lies strictly after `floor`; only saturation at the
        // clock's cap can break that, and then the task is never due again (C1).
        let after =
            |floor: Ticks, next: Ticks| Ok(Some(if next > floor { next } else { clock::NEVER }));
        match self {
            Rule::FixedRate(period, missed) => {
                let on_time = clock::add(t.scheduled, *period);
                if t.started < on_time {
                    return after(t.scheduled, on_time); // no tick missed: keep the schedule
                }
                match missed {
                    MissedTicks::Burst => after(t.scheduled, on_time),
                    MissedTicks::Delay => after(t.started, clock::add(t.started, *period)),
                    MissedTicks::Skip => {
                        after(t.started, next_tick_after(t.scheduled, *period, t.started))
                    }
                }
            }
            Rule::FixedDelay(delay) => after(t.finished, clock::add(t.finished, *delay)),
            Rule::Trigger(trigger) => {
                let ctx = TriggerContext {
                    scheduled: clock.instant_of(t.scheduled),
                    started: clock.instant_of(t.started),
                    finished: clock.instant_of(t.finished),
                    runs: t.runs,
                    panicked: t.panicked,
                };
                let next = run_caught(|| trigger.0.lock().next_deadline(&ctx))?;
                Ok(next.map(|at| clock.ticks_of(at)))
            }
        }
    }
}

/// The first `anchor + k × period` (k ≥ 1) strictly after `after`, saturating.
fn next_tick_after(anchor: Ticks, period: Duration, after: Ticks) -> Ticks {
    let p = period.as_nanos().max(1);
    let k = u128::from(after.saturating_sub(anchor)) / p + 1;
    let next = u128::from(anchor).saturating_add(k.saturating_mul(p));
    u64::try_from(next)
        .unwrap_or(u64::MAX)
        .min(clock::FAR_FUTURE)
}

/// A caught panic: its payload and message.
pub(crate) type Caught = (Box<dyn Any + Send>, String);

/// The limits a periodic task applies after each run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) on_panic: OnPanic,
    pub(crate) max_lateness: Option<Duration>,
    pub(crate) max_runs: Option<u64>,
}

/// The closure of a periodic task and its run count, kept together in `body` (T3).
struct Body<F> {
    f: F,
    runs: u64,
}

/// A periodic task (Java: `ScheduledFutureTask` with `period != 0`, run with `runAndReset`).
pub(crate) struct PeriodicTask<F> {
    header: Header,
    rule: Rule,
    limits: Limits,
    /// The closure while SCHEDULED (T3).
    body: Mutex<Option<Body<F>>>,
    done: Completion<()>,
}

impl<F: FnMut() + Send + 'static> PeriodicTask<F> {
    pub(crate) fn new(id: u64, deadline: Ticks, rule: Rule, limits: Limits, f: F) -> Self {
        PeriodicTask {
            header: Header::new(rule.kind(), id, deadline),
            rule,
            limits,
            body: Mutex::new(Some(Body { f, runs: 0 })),
            done: Completion::new(),
        }
    }

    /// Ends a task that never ran (zero `max_runs`, a trigger with no first deadline or a
    /// panicking one): SCHEDULED -> DONE or PANICKED.
    pub(crate) fn finish_unrun(&self, outcome: Result<(), TaskError>) {
        let to = if outcome.is_ok() {
            state::DONE
        } else {
            state::PANICKED
        };
        if self.header.transition(state::SCHEDULED, to) {
            drop_quietly(self.body.lock().take());
            self.done.complete(outcome);
        }
    }

    /// Ends the task from RUNNING with `outcome` (T2: only if this exchange wins; a
    /// canceller that won first completed it) and drops the closure (T3).
    fn finish(&self, to: u8, outcome: Result<(), TaskError>, body: Body<F>) {
        if self.header.transition(state::RUNNING, to) {
            self.done.complete(outcome);
        }
        drop_quietly(body);
    }

    /// One run after a successful `start`; `next` is `None` if the task ended.
    fn run_started(
        &self,
        now: Ticks,
        clock: &Clock,
        then_cancel: bool,
        counters: Option<&Counters>,
    ) -> RunReport {
        let Some(mut body) = self.body.lock().take() else {
            // T3: a canceller got here between our start and this take: no run.
            return RunReport::NOT_RUN;
        };
        let scheduled = self.header.deadline();
        let mut report = RunReport::NOT_RUN;
        let times = if !then_cancel
            && self
                .limits
                .max_lateness
                .is_some_and(|max| clock::since(now, scheduled) > max)
        {
            // Skipped: the rule runs as if the run had started and finished now.
            report.skipped = true;
            RunTimes {
                scheduled,
                started: now,
                finished: now,
                runs: body.runs,
                panicked: false,
            }
        } else {
            let outcome = run_caught(&mut body.f);
            count_run(counters, outcome.is_err());
            body.runs += 1;
            report.ran = true;
            let panicked = match outcome {
                Ok(()) => false,
                Err((payload, msg)) => {
                    report.panic = Some(msg);
                    if self.limits.on_panic == OnPanic::Stop || then_cancel {
                        self.finish(state::PANICKED, Err(TaskError::Panicked(payload)), body);
                        return report;
                    }
                    true // OnPanic::Continue: counted and traced by the worker
                }
            };
            if then_cancel {
                self.finish(state::CANCELLED, Err(TaskError::Cancelled), body);
                return report;
            }
            if self.limits.max_runs.is_some_and(|max| body.runs >= max) {
                self.finish(state::DONE, Ok(()), body);
                return report;
            }
            let finished = if self.rule.needs_finish_time() {
                clock.now()
            } else {
                now
            };
            RunTimes {
                scheduled,
                started: now,
                finished,
                runs: body.runs,
                panicked,
            }
        };
        match self.rule.next(times, clock) {
            Err((payload, msg)) => {
                if let Some(c) = counters {
                    crate::stats::bump(&c.panicked); // the trigger panicked
                }
                report.panic = Some(msg);
                self.finish(state::PANICKED, Err(TaskError::Panicked(payload)), body);
            }
            Ok(None) => self.finish(state::DONE, Ok(()), body),
            Ok(Some(next)) => {
                let mut slot = self.body.lock();
                // T3: the exchange and the put-back happen under `body`'s lock.
                self.header.set_deadline(next);
                if self.header.transition(state::RUNNING, state::SCHEDULED) {
                    *slot = Some(body);
                    report.next = Some(next);
                } else {
                    drop(slot);
                    self.header.set_deadline(scheduled);
                    drop_quietly(body); // cancelled during the run; the canceller completed it
                }
            }
        }
        report
    }
}

impl<F: FnMut() + Send + 'static> Job for PeriodicTask<F> {
    fn header(&self) -> &Header {
        &self.header
    }

    fn run(&self, now: Ticks, clock: &Clock, counters: Option<&Counters>) -> RunReport {
        if !self.header.start() {
            return RunReport::NOT_RUN;
        }
        self.run_started(now, clock, false, counters)
    }

    fn run_now(&self, clock: &Clock, then_cancel: bool) -> RunReport {
        if !self.header.start() {
            return RunReport::NOT_RUN;
        }
        self.run_started(clock.now(), clock, then_cancel, None)
    }

    fn finish_cancelled(&self) {
        let body = self.body.lock().take();
        drop_quietly(body);
        self.done.complete(Err(TaskError::Cancelled));
    }
}

impl<F: FnMut() + Send + 'static> TypedJob<()> for PeriodicTask<F> {
    fn completion(&self) -> &Completion<()> {
        &self.done
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc as StdArc;

    const LIMITS: Limits = Limits {
        on_panic: OnPanic::Stop,
        max_lateness: None,
        max_runs: None,
    };

    fn clock() -> Clock {
        Clock::Manual(crate::ManualClock::new())
    }

    /// Counts drops of the value it is captured in.
    struct DropCount(StdArc<AtomicUsize>);
    impl Drop for DropCount {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn one_shot_runs_once_and_completes() {
        let t = OnceTask::new(1, 0, || 5);
        let report = t.run(0, &clock(), None);
        assert!(report.ran && report.next.is_none() && report.panic.is_none());
        assert_eq!(t.header.state(), state::DONE);
        assert!(t.done.wait(None));
        assert_eq!(t.done.take().unwrap(), 5);
        assert!(!t.run(0, &clock(), None).ran, "T1: no second run");
        assert!(
            !t.header.cancel(),
            "a finished one-shot cannot be cancelled"
        );
    }

    #[test]
    fn one_shot_panic_is_captured() {
        let t = OnceTask::new(1, 0, || -> u8 { panic!("boom") });
        let report = t.run(0, &clock(), None);
        assert_eq!(report.panic.as_deref(), Some("boom"));
        assert_eq!(t.header.state(), state::PANICKED);
        assert_eq!(t.done.take().unwrap_err().panic_message(), Some("boom"));
    }

    #[test]
    fn cancel_before_start_drops_the_closure_and_prevents_the_run() {
        let drops = StdArc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let t = OnceTask::new(1, 0, move || drop(guard));
        assert!(t.header.cancel());
        assert!(!t.header.cancel(), "T2: only one cancel wins");
        t.finish_cancelled();
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "T3: dropped at cancel time"
        );
        assert!(!t.run(0, &clock(), None).ran);
        assert!(t.done.take().unwrap_err().is_cancelled());
    }

    #[test]
    fn a_started_one_shot_cannot_be_cancelled() {
        let t = OnceTask::new(1, 0, || 1);
        assert!(t.header.start());
        assert!(!t.header.cancel());
        let report = t.run_started(None);
        assert!(report.ran);
        assert_eq!(t.done.take().unwrap(), 1);
    }

    #[test]
    fn periodic_reschedules_by_its_rule() {
        let c = clock();
        let rate = PeriodicTask::new(
            1,
            100,
            Rule::FixedRate(Duration::from_nanos(10), MissedTicks::Burst),
            LIMITS,
            || {},
        );
        assert_eq!(
            rate.run(150, &c, None).next,
            Some(110),
            "previous deadline + period"
        );
        assert_eq!(rate.header.state(), state::SCHEDULED);
        assert_eq!(rate.header.deadline(), 110);
        let delay = PeriodicTask::new(
            2,
            100,
            Rule::FixedDelay(Duration::from_nanos(10)),
            LIMITS,
            || {},
        );
        if let Clock::Manual(m) = &c {
            m.advance(Duration::from_nanos(500));
        }
        assert_eq!(
            delay.run(500, &c, None).next,
            Some(510),
            "end of run + delay"
        );
    }

    #[test]
    fn cancel_during_a_periodic_run_lets_it_finish_and_stops_it() {
        let drops = StdArc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let t = StdArc::new_cyclic(
            |weak: &std::sync::Weak<PeriodicTask<Box<dyn FnMut() + Send>>>| {
                let weak = weak.clone();
                let f: Box<dyn FnMut() + Send> = Box::new(move || {
                    let _keep = &guard;
                    let me = weak.upgrade().unwrap();
                    assert!(
                        me.header.cancel(),
                        "a running periodic task can be cancelled"
                    );
                    me.finish_cancelled(); // the closure is with the runner: nothing to drop yet
                });
                PeriodicTask::new(
                    1,
                    0,
                    Rule::FixedRate(Duration::from_millis(1), MissedTicks::Burst),
                    LIMITS,
                    f,
                )
            },
        );
        let report = t.run(0, &clock(), None);
        assert!(
            report.ran && report.next.is_none(),
            "no re-enqueue after cancel"
        );
        assert_eq!(t.header.state(), state::CANCELLED);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "T3: the runner dropped the closure"
        );
        assert!(t.done.take().unwrap_err().is_cancelled());
    }

    #[test]
    fn periodic_panic_stops_the_task() {
        let t = PeriodicTask::new(
            1,
            0,
            Rule::FixedDelay(Duration::from_millis(1)),
            LIMITS,
            || panic!("periodic boom"),
        );
        let report = t.run(0, &clock(), None);
        assert!(report.next.is_none());
        assert_eq!(t.header.state(), state::PANICKED);
        assert_eq!(
            t.done.take().unwrap_err().panic_message(),
            Some("periodic boom")
        );
    }

    #[test]
    fn run_now_then_cancel_runs_a_periodic_task_once() {
        let runs = StdArc::new(AtomicUsize::new(0));
        let r = runs.clone();
        let t = PeriodicTask::new(
            1,
            0,
            Rule::FixedRate(Duration::from_millis(1), MissedTicks::Burst),
            LIMITS,
            move || {
                r.fetch_add(1, Ordering::SeqCst);
            },
        );
        let report = t.run_now(&clock(), true);
        assert!(report.ran && report.next.is_none());
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert!(t.done.take().unwrap_err().is_cancelled());
    }

    #[test]
    fn completion_wait_times_out_and_wakes() {
        let c = StdArc::new(Completion::<u8>::new());
        assert!(!c.wait(Some(Instant::now() + Duration::from_millis(5))));
        let c2 = c.clone();
        let waiter = std::thread::spawn(move || c2.wait(None));
        c.complete(Ok(3));
        assert!(waiter.join().unwrap());
        assert!(c.is_ready());
        assert_eq!(c.take().unwrap(), 3);
    }
}
