//! [`PeriodicTask`]: a task that runs again and again (Java: `ScheduledFutureTask` with
//! `period != 0`, run with `runAndReset`). After each run it applies, in order, the panic
//! policy, `max_runs`, what the closure said comes next ([`Step`]: a context closure may
//! stop the task or name its next deadline), then its [`Schedule`]'s next deadline; the
//! worker re-queues it.
//! T1–T3 are stated in `task/mod.rs`; the RUNNING -> SCHEDULED exchange and the put-back
//! of the closure happen under the stage's lock (T3, K3 in `completion.rs`).

use super::state::{End, Exchange, Start};
use super::NO_DEADLINE;
use super::{
    count_run, drop_quietly, Completion, Declined, Header, Outcome, PeriodicBody, PeriodicControl,
    Record, RunCx, RunEnv, RunReport, Step, Task, TypedTask,
};
use crate::clock::{self, Ticks};
use crate::cluster::Pause;
use crate::error::{run_caught, PanicPayload, TaskError};
use crate::schedule::{Limits, OnPanic, RunTimes, Schedule};
use crate::stats::LastRun;
use crate::sync::{Arc, Mutex, Ordering, StatByte, StatCounter};
use crate::telemetry::TaskTimer;
use std::ops::ControlFlow;
use std::task::{Poll, Waker};

use super::run::{Pending, Resume, ToWorker};

/// The closure of a periodic task, in the stage while the task is not running (T3).
struct Body<F> {
    f: F,
}

/// What a snapshot reads of a periodic task's runs, running or not: written only by the
/// task's runner (T1: one at a time, and each run's start is ordered after the previous
/// run's end by the queue's lock), read by snapshots (`TaskInfo`). `Relaxed`: reporting
/// only; the runner reads back its own writes.
struct RunLog {
    /// Runs so far (skipped ones excluded).
    runs: StatCounter,
    /// How the last run went (`stats::LastRun::code`; 0: none yet).
    last: StatByte,
    /// When the last run (or skip) started, in ticks; [`NO_DEADLINE`]: none yet.
    started: StatCounter,
    /// The cluster-wide pause its last run found (`ClusterLock::pause`), for the task
    /// list: written by the runner, read by snapshots, under its own leaf lock (no user
    /// code runs under it: the pause is plain data).
    pause: Mutex<Option<Pause>>,
}

impl RunLog {
    fn runs(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }

    fn set_pause(&self, pause: Option<Pause>) {
        let mut p = self.pause.lock();
        if p.is_some() || pause.is_some() {
            let old = std::mem::replace(&mut *p, pause);
            drop(p);
            drop(old);
        }
    }

    fn set_last(&self, last: LastRun) {
        self.last.store(last.code(), Ordering::Relaxed);
    }
}

/// What one run decided, applied by one `match` in `PeriodicTask::run_started`.
enum AfterRun {
    /// RUNNING -> DONE with the closure's output: `max_runs` reached, the closure said
    /// stop, or the rule has no next deadline.
    Done,
    /// RUNNING -> PANICKED: the run panicked under `OnPanic::Stop` (or in a caller's run
    /// that cancels after), or the rule itself panicked.
    Panicked(PanicPayload),
    /// RUNNING -> CANCELLED: a run on the caller's thread that cancels the task after it
    /// (`then_cancel`), or a run stopped before it ended ([`Step::Stopped`]).
    Cancelled,
    /// RUNNING -> SCHEDULED at this deadline, unless a cancel came during the run.
    Requeue(Ticks),
    /// The body's future is pending: the run goes on without this thread (still RUNNING),
    /// and [`PeriodicRun`] applies its end.
    Suspended,
}

/// The continuation of a periodic run whose future is pending (`suspended.rs`): the body,
/// out of the stage for the run (T3), and the run's facts; its end is applied as a run's
/// that ended on its worker.
struct PeriodicRun<F> {
    /// `None` once the run ended.
    body: Option<Body<F>>,
    scheduled: Ticks,
    then_cancel: bool,
}

impl<F: PeriodicBody> Resume for PeriodicRun<F> {
    fn resume(&mut self, env: &RunEnv<'_>, waker: &Waker) -> Poll<RunReport> {
        let task: &PeriodicTask<F> = env
            .task
            .and_then(|t| t.as_any().downcast_ref())
            .expect("a run resumes in its task's environment");
        let body = self.body.as_mut().expect("not resumed after its end");
        let cx = task.cx(env, self.scheduled);
        let outcome = match run_caught(|| body.f.resume(&cx, waker)) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(step)) => Ok(step),
            Err(caught) => Err(caught),
        };
        let mut report = RunReport::NOT_RUN;
        let after = match task.after_call(
            env,
            self.then_cancel,
            self.scheduled,
            body,
            &mut report,
            outcome,
        ) {
            ControlFlow::Continue(times) => task.by_rule(env, times, &mut report),
            ControlFlow::Break(after) => after,
        };
        let body = self.body.take().expect("taken once");
        let ended = task.end_run(env, after, (self.scheduled, body), report, self.then_cancel);
        Poll::Ready(ended)
    }
}

/// A periodic task (Java: `ScheduledFutureTask` with `period != 0`, run with `runAndReset`).
/// `repr(C)`, header first: a [`TaskRef`](super::TaskRef) points at it (R1, `raw/mod.rs`).
#[repr(C)]
pub(crate) struct PeriodicTask<F: PeriodicBody> {
    header: Header,
    /// `Periodic::name`, for logs and snapshots.
    name: Option<Arc<str>>,
    /// Where it goes at its next re-queue beside its rule (`reschedule`, `run_now`,
    /// `next.rs`: NX1, under the home shard's lock, T4), and its pause switch.
    control: PeriodicControl,
    schedule: Schedule,
    limits: Limits,
    /// Runs so far and how the last one went, for snapshots.
    log: RunLog,
    /// A named task's run-time series (feature `metrics`).
    timer: Option<TaskTimer>,
    /// The closure while SCHEDULED (T3), then the outcome.
    done: Completion<Body<F>, F::Output>,
}

impl<F: PeriodicBody> PeriodicTask<F> {
    pub(crate) fn new(
        deadline: Ticks,
        schedule: Schedule,
        limits: Limits,
        name: Option<Arc<str>>,
        f: F,
    ) -> Self {
        debug_assert!(
            schedule.is_periodic(),
            "a periodic task needs a periodic schedule"
        );
        PeriodicTask {
            header: Header::new(true, deadline),
            name,
            control: PeriodicControl::new(None),
            schedule,
            limits,
            log: RunLog {
                runs: StatCounter::new(0),
                last: StatByte::new(0),
                started: StatCounter::new(NO_DEADLINE),
                pause: Mutex::new(None),
            },
            timer: None,
            done: Completion::new(Body { f }),
        }
    }

    /// The deadline of the run after the first, instead of the rule's (set before the
    /// task is shared: `Exclusive::catch_up` runs once at once and then keeps the grid).
    pub(crate) fn then_at(mut self, next: Option<Ticks>) -> Self {
        self.control = PeriodicControl::new(next); // not shared yet: T4 holds trivially
        self
    }

    /// The run-time series its runs go to (a named task, feature `metrics`).
    pub(crate) fn timed_by(mut self, timer: Option<TaskTimer>) -> Self {
        self.timer = timer;
        self
    }

    /// Ends a task that never ran (zero `max_runs`, a trigger with no first deadline or a
    /// panicking one): SCHEDULED -> DONE or PANICKED.
    pub(crate) fn finish_unrun(&self, outcome: Result<(), TaskError>) {
        let end = if outcome.is_ok() {
            End::Done
        } else {
            End::Panicked
        };
        self.schedule.retire(); // the task ends here either way
        if self.header.end_unrun(end) == Exchange::Won {
            let mut body = self.done.take_body();
            let outcome = outcome.map(|()| match &mut body {
                Some(b) => b.f.output(),
                None => unreachable!("T3: a task that never ran has its closure"),
            });
            drop_quietly(body);
            self.done.complete(outcome);
        }
    }

    /// Ends the task from RUNNING with `outcome` (T2: only if this exchange wins; a
    /// canceller that won first completed it) and drops the closure (T3).
    fn finish(&self, end: End, outcome: Result<F::Output, TaskError>, body: Body<F>) {
        if self.header.finish(end) == Exchange::Won {
            self.done.complete(outcome);
        }
        drop_quietly(body);
        self.schedule.retire(); // ended: by this run, or by a cancel that came first
    }

    /// One run after a successful `start`; `next` is `None` if the task ended. The run
    /// decides ([`decide`](Self::decide)), and one `match` applies the decision.
    fn run_started(&self, env: &RunEnv<'_>, then_cancel: bool) -> RunReport {
        let Some(mut body) = self.done.take_body() else {
            // T3: a canceller got here between our start and this take: no run.
            return RunReport::NOT_RUN;
        };
        let scheduled = self.header.deadline();
        let mut report = RunReport::NOT_RUN;
        let after = self.decide(env, then_cancel, scheduled, &mut body, &mut report);
        self.end_run(env, after, (scheduled, body), report, then_cancel)
    }

    /// Applies what a run decided (one `match`): the task ends, is re-queued, or its run
    /// goes on without this thread, its future pending (`suspended.rs`).
    #[inline(always)] // a closure's run, as before the async path shared it
    fn end_run(
        &self,
        env: &RunEnv<'_>,
        after: AfterRun,
        (scheduled, mut body): (Ticks, Body<F>),
        report: RunReport,
        then_cancel: bool,
    ) -> RunReport {
        match after {
            AfterRun::Done => {
                let out = body.f.output();
                self.finish(End::Done, Ok(out), body);
            }
            AfterRun::Panicked(payload) => {
                self.finish(End::Panicked, Err(TaskError::Panicked(payload)), body);
            }
            AfterRun::Cancelled => self.finish(End::Cancelled, Err(TaskError::Cancelled), body),
            AfterRun::Requeue(next) => return self.requeue_at(next, scheduled, body, report),
            AfterRun::Suspended => {
                let run = PeriodicRun {
                    body: Some(body),
                    scheduled,
                    then_cancel,
                };
                // `SendAsync` suspends only where the worker takes the hand-off.
                let handoff = env.handoff.expect("a run off its worker is a worker's run");
                handoff.set(Some(ToWorker::GoesOn(Pending(Box::new(run)))));
                return RunReport::HANDED;
            }
        }
        report
    }

    /// The run, or its skip (paused, or late past `max_lateness`), and then, in the order
    /// of the module notes, what comes after it.
    fn decide(
        &self,
        env: &RunEnv<'_>,
        then_cancel: bool,
        scheduled: Ticks,
        body: &mut Body<F>,
        report: &mut RunReport,
    ) -> AfterRun {
        let now = env.now;
        let skipped = || RunTimes {
            scheduled,
            started: now,
            finished: now,
            runs: self.log.runs(),
            panicked: false,
        };
        let times = if self.control.is_paused() && !then_cancel {
            // Paused: no run, and none started; the rule goes on as if it had run now (a
            // fixed-rate task keeps its grid). A run on the caller's thread
            // (`PendingTask::run`) runs.
            report.paused = true;
            self.log.set_last(LastRun::Paused);
            skipped()
        } else {
            self.log.started.store(now, Ordering::Relaxed);
            let late = self
                .limits
                .max_lateness
                .is_some_and(|max| clock::since(now, scheduled) > max);
            if late && !then_cancel {
                // Skipped: the rule runs as if the run had started and finished now.
                report.skipped = true;
                self.log.set_last(LastRun::Skipped);
                skipped()
            } else {
                match self.call(env, then_cancel, scheduled, body, report) {
                    ControlFlow::Continue(times) => times,
                    ControlFlow::Break(after) => return after,
                }
            }
        };
        self.by_rule(env, times, report)
    }

    /// What the rule says after a run (or a skip) with these times.
    fn by_rule(&self, env: &RunEnv<'_>, times: RunTimes, report: &mut RunReport) -> AfterRun {
        match self.schedule.next(times, env.clock) {
            Err((payload, msg)) => {
                if let Some(c) = env.counters {
                    crate::stats::bump(&c.panicked); // the trigger panicked
                }
                report.panic = Some(msg);
                AfterRun::Panicked(payload)
            }
            Ok(None) => AfterRun::Done,
            Ok(Some(next)) => AfterRun::Requeue(next),
        }
    }

    /// Calls the closure. `Break` with what the run itself decided (the panic policy, a
    /// caller's run that cancels after, `max_runs`, the closure's [`Step`]); `Continue`
    /// with the times the schedule's rule needs for the next deadline.
    fn call(
        &self,
        env: &RunEnv<'_>,
        then_cancel: bool,
        scheduled: Ticks,
        body: &mut Body<F>,
        report: &mut RunReport,
    ) -> ControlFlow<AfterRun, RunTimes> {
        let cx = self.cx(env, scheduled);
        let outcome = run_caught(|| body.f.call(&cx));
        if let Ok(Step::Pending) = outcome {
            return ControlFlow::Break(AfterRun::Suspended); // the run goes on (`suspended.rs`)
        }
        self.after_call(env, then_cancel, scheduled, body, report, outcome)
    }

    /// The context of a run due at `scheduled` (this run counted).
    fn cx<'a>(&'a self, env: &'a RunEnv<'a>, scheduled: Ticks) -> RunCx<'a> {
        RunCx {
            env,
            header: &self.header,
            deadline: scheduled,
            runs: self.log.runs() + 1,
            task_name: self.name.as_deref(),
            lease: None,
        }
    }

    /// What the run decided once its body ended (on this thread, or on the thread that
    /// resumed it: `PeriodicRun`): as [`call`](Self::call).
    fn after_call(
        &self,
        env: &RunEnv<'_>,
        then_cancel: bool,
        scheduled: Ticks,
        body: &mut Body<F>,
        report: &mut RunReport,
        outcome: Result<Step, crate::error::Caught>,
    ) -> ControlFlow<AfterRun, RunTimes> {
        debug_assert!(!matches!(outcome, Ok(Step::Pending)), "a run that ended");
        let times = |runs, panicked| self.times(env, scheduled, runs, panicked);
        if let Ok(Step::Skip(why)) = outcome {
            // The closure declined the run (its cluster lock is held elsewhere or
            // unreachable, or its job is paused): the rule goes on from now.
            if then_cancel {
                return ControlFlow::Break(AfterRun::Cancelled);
            }
            self.declined(why, report);
            return ControlFlow::Continue(times(self.log.runs(), false));
        }
        self.log.set_pause(None);
        count_run(env.counters, outcome.is_err());
        let runs = self.log.runs() + 1;
        self.log.runs.store(runs, Ordering::Relaxed);
        report.ran = true;
        self.log.set_last(if outcome.is_err() {
            LastRun::Panicked
        } else if body.f.last_failed() {
            LastRun::Failed
        } else {
            LastRun::Completed
        });
        let (step, panicked) = match outcome {
            Ok(step) => (step, false),
            Err((payload, msg)) => {
                report.panic = Some(msg);
                if self.limits.on_panic == OnPanic::Stop || then_cancel {
                    return ControlFlow::Break(AfterRun::Panicked(payload));
                }
                (Step::Continue, true) // OnPanic::Continue: counted and traced by the worker
            }
        };
        if then_cancel || step == Step::Stopped {
            // A stopped run (an async body dropped at `shutdown_now` or an interrupt)
            // ends the task as the stop asked, whatever `max_runs` or the rule says.
            return ControlFlow::Break(AfterRun::Cancelled);
        }
        if self.limits.max_runs.is_some_and(|max| runs >= max) || step == Step::Stop {
            return ControlFlow::Break(AfterRun::Done);
        }
        if let Step::At(next) = step {
            return ControlFlow::Break(AfterRun::Requeue(next));
        }
        ControlFlow::Continue(times(runs, panicked))
    }

    /// What the schedule's rule is told of a run scheduled at `scheduled`, started at the
    /// worker's `now`; the finish time is read only for a rule that needs it.
    fn times(&self, env: &RunEnv<'_>, scheduled: Ticks, runs: u64, panicked: bool) -> RunTimes {
        RunTimes {
            scheduled,
            started: env.now,
            finished: if self.schedule.needs_finish_time() {
                env.clock.now()
            } else {
                env.now
            },
            runs,
            panicked,
        }
    }

    /// A run the closure declined ([`Step::Skip`]): not counted as a run; the log keeps
    /// why, and the job's pause while its store reports one.
    fn declined(&self, why: Declined, report: &mut RunReport) {
        let last = match why {
            Declined::LockHeld => LastRun::LockHeld,
            Declined::LockFailed => LastRun::LockFailed,
            Declined::Paused(pause) => {
                report.paused = true; // counted as a paused run
                self.log.set_pause(Some(pause));
                LastRun::Paused
            }
        };
        if last != LastRun::Paused {
            // The store answered "held" (not paused), or could not be asked: no pause known.
            self.log.set_pause(None);
        }
        self.log.set_last(last);
    }

    /// The end of a run that continues: RUNNING -> SCHEDULED with the next deadline, or,
    /// if the task was cancelled during the run, the closure dropped.
    fn requeue_at(
        &self,
        next: Ticks,
        scheduled: Ticks,
        body: Body<F>,
        mut report: RunReport,
    ) -> RunReport {
        // T3: the exchange and the put-back happen under the stage's lock.
        self.header.set_deadline(next);
        let refused = self
            .done
            .put_back(body, || self.header.requeue() == Exchange::Won);
        match refused {
            None => report.next = Some(next),
            Some(body) => {
                self.header.set_deadline(scheduled);
                drop_quietly(body); // cancelled during the run; the canceller completed it
            }
        }
        report
    }
}

impl<F: PeriodicBody> Task for PeriodicTask<F> {
    fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }

    fn header(&self) -> &Header {
        &self.header
    }

    fn periodic(&self) -> Option<&PeriodicControl> {
        Some(&self.control)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    fn timer(&self) -> Option<&TaskTimer> {
        self.timer.as_ref()
    }

    fn record(&self) -> Record {
        let started = self.log.started.load(Ordering::Relaxed);
        Record {
            runs: self.log.runs(),
            last: LastRun::from_code(self.log.last.load(Ordering::Relaxed)),
            started: (started != NO_DEADLINE).then_some(started),
            pause: self.log.pause.lock().clone(),
        }
    }

    fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    fn run(&self, env: &RunEnv<'_>) -> RunReport {
        self.run_now(env, false)
    }

    fn run_now(&self, env: &RunEnv<'_>, then_cancel: bool) -> RunReport {
        match self.header.start() {
            Start::Run => self.run_started(env, then_cancel),
            Start::NotScheduled => RunReport::NOT_RUN,
        }
    }

    fn finish_cancelled(&self) {
        drop_quietly(self.done.cancel()); // T3: dropped outside the stage's lock
        self.schedule.retire();
    }
}

impl<F: PeriodicBody> TypedTask<F::Output> for PeriodicTask<F> {
    fn outcome(&self) -> &dyn Outcome<F::Output> {
        &self.done
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::task::state::State;
    use crate::task::testing::{clock, env, DropCount};
    use crate::task::Plain;
    use crate::MissedTicks;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc as StdArc;
    use std::time::Duration;

    /// A periodic task whose closure is boxed (so it can refer to its own task).
    type Boxed = PeriodicTask<Plain<Box<dyn FnMut() + Send>>>;

    const LIMITS: Limits = Limits {
        on_panic: OnPanic::Stop,
        max_lateness: None,
        max_runs: None,
    };

    #[test]
    fn periodic_reschedules_by_its_rule() {
        let c = clock();
        let rate = PeriodicTask::new(
            100,
            Schedule::FixedRate(Duration::from_nanos(10), MissedTicks::Burst),
            LIMITS,
            None,
            Plain(|| {}),
        );
        assert_eq!(
            rate.run(&env(&c, 150)).next,
            Some(110),
            "previous deadline + period"
        );
        assert_eq!(rate.header.state(), State::Scheduled);
        assert_eq!(rate.header.deadline(), 110);
        let delay = PeriodicTask::new(
            100,
            Schedule::FixedDelay(Duration::from_nanos(10)),
            LIMITS,
            None,
            Plain(|| {}),
        );
        if let Clock::Manual(m) = &c {
            m.advance(Duration::from_nanos(500));
        }
        assert_eq!(
            delay.run(&env(&c, 500)).next,
            Some(510),
            "end of run + delay"
        );
    }

    #[test]
    fn cancel_during_a_periodic_run_lets_it_finish_and_stops_it() {
        let drops = StdArc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let t = StdArc::new_cyclic(|weak: &std::sync::Weak<Boxed>| {
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
                0,
                Schedule::FixedRate(Duration::from_millis(1), MissedTicks::Burst),
                LIMITS,
                None,
                Plain(f),
            )
        });
        let report = t.run(&env(&clock(), 0));
        assert!(
            report.ran && report.next.is_none(),
            "no re-enqueue after cancel"
        );
        assert_eq!(t.header.state(), State::Cancelled);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "T3: the runner dropped the closure"
        );
        assert!(t.done.wait_take().unwrap_err().is_cancelled());
    }

    #[test]
    fn periodic_panic_stops_the_task() {
        let t = PeriodicTask::new(
            0,
            Schedule::FixedDelay(Duration::from_millis(1)),
            LIMITS,
            None,
            Plain(|| panic!("periodic boom")),
        );
        let report = t.run(&env(&clock(), 0));
        assert!(report.next.is_none());
        assert_eq!(t.header.state(), State::Panicked);
        assert_eq!(
            t.done.wait_take().unwrap_err().panic_message(),
            Some("periodic boom")
        );
    }

    #[test]
    fn run_now_then_cancel_runs_a_periodic_task_once() {
        let runs = StdArc::new(AtomicUsize::new(0));
        let r = runs.clone();
        let t = PeriodicTask::new(
            0,
            Schedule::FixedRate(Duration::from_millis(1), MissedTicks::Burst),
            LIMITS,
            None,
            Plain(move || {
                r.fetch_add(1, Ordering::SeqCst);
            }),
        );
        let report = t.run_now(&env(&clock(), 0), true);
        assert!(report.ran && report.next.is_none());
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert!(t.done.wait_take().unwrap_err().is_cancelled());
    }

    /// A closure that says what comes next, one answer per run.
    struct Steps(std::vec::IntoIter<Step>, StdArc<AtomicUsize>);

    impl PeriodicBody for Steps {
        type Output = ();

        fn output(&mut self) {}

        fn call(&mut self, cx: &RunCx<'_>) -> Step {
            let n = self.1.fetch_add(1, Ordering::SeqCst) as u64 + 1;
            assert_eq!(cx.runs, n, "the context counts runs, this one included");
            self.0.next().unwrap_or(Step::Continue)
        }
    }

    #[test]
    fn a_run_can_name_the_next_deadline_or_stop_the_task() {
        let c = clock();
        let runs = StdArc::new(AtomicUsize::new(0));
        let t = PeriodicTask::new(
            100,
            Schedule::FixedRate(Duration::from_nanos(10), MissedTicks::Burst),
            LIMITS,
            None,
            Steps(
                vec![Step::At(1_000), Step::Continue, Step::Stop].into_iter(),
                runs.clone(),
            ),
        );
        assert_eq!(
            t.run(&env(&c, 100)).next,
            Some(1_000),
            "the run's own deadline"
        );
        assert_eq!(t.header.deadline(), 1_000);
        assert_eq!(
            t.run(&env(&c, 1_000)).next,
            Some(1_010),
            "the rule, from the new deadline"
        );
        let last = t.run(&env(&c, 1_010));
        assert!(last.ran && last.next.is_none(), "stopped");
        assert_eq!(t.header.state(), State::Done);
        assert_eq!(t.done.wait_take().unwrap(), ());
        assert_eq!(runs.load(Ordering::SeqCst), 3);
    }
}
