//! [`OnceTask`]: a one-shot task (Java: `ScheduledFutureTask` with `period == 0`).
//!
//! SCHEDULED -> RUNNING -> DONE or PANICKED, or SCHEDULED -> CANCELLED. A started one-shot
//! cannot be cancelled by `cancel`, but an interrupt cancels it while it runs (RUNNING ->
//! CANCELLED, `state.rs`): its future says `Cancelled` at once, and the run's output is
//! dropped when it ends (`run` below). A run stopped without an output (an async body
//! dropped at an interrupt or at `shutdown_now`, [`Ran::Stopped`]) ends the task
//! CANCELLED if the interrupt has not already. T1–T3 are stated in `task/mod.rs`.

use std::marker::PhantomData;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use super::raw::{OnceCore, Started, StartedRun};
use super::run::{Pending, Resume, ToWorker};
use super::{
    count_run, drop_quietly, waiting, Header, Label, OnceBody, OnceResume, Outcome, Ran, RunCx,
    RunEnv, RunReport, Task, TypedTask,
};
use crate::clock::Ticks;
use crate::error::{run_caught, TaskError};
use crate::schedule::Schedule;
use crate::sync::park_until;

/// A one-shot task (Java: `ScheduledFutureTask` with `period == 0`); `N`: its name, `()`
/// (zero-sized) for an unnamed one. `repr(C)`, core (and so header) first: a [`TaskRef`]
/// points at it (R1, `raw/mod.rs`).
///
/// [`TaskRef`]: super::TaskRef
#[repr(C)]
pub(crate) struct OnceTask<F, T, N = ()> {
    /// The header and the slot that holds the closure while SCHEDULED, then the outcome
    /// (T3, R4).
    core: OnceCore<F, T>,
    name: N,
}

impl<F, T> OnceTask<F, T>
where
    F: OnceBody<T>,
    T: Send + 'static,
{
    pub(crate) fn new(deadline: Ticks, f: F) -> Self {
        OnceTask::named(deadline, f, ())
    }
}

impl<F, T, N> OnceTask<F, T, N>
where
    F: OnceBody<T>,
    T: Send + 'static,
    N: Label,
{
    pub(crate) fn named(deadline: Ticks, f: F, name: N) -> Self {
        OnceTask {
            core: OnceCore::new(deadline, f),
            name,
        }
    }

    /// Wakes whoever waits for the task (A1, `waiting.rs`): called by the author of its
    /// terminal transition.
    #[inline]
    fn wake_waiters(&self) {
        let header = self.core.header();
        if header.is_waited() {
            waiting::wake_all(header.key());
        }
    }

    /// The run after a successful start, with the closure it took.
    fn run_started(&self, env: &RunEnv<'_>, f: F, run: Started<'_, F, T>) -> RunReport {
        let cx = self.cx(env);
        self.end_run(env, run, run_caught(|| f.call(&cx)))
    }

    /// A run whose body's future is pending goes on without this thread
    /// (`suspended.rs`), with its proof: handed to the worker.
    #[cold]
    fn goes_on(
        &self,
        env: &RunEnv<'_>,
        run: Started<'_, F, T>,
        body: Box<dyn OnceResume<T>>,
    ) -> RunReport {
        let run = OnceRun::<F, T, N> {
            body,
            run: Some(run.detach()),
            types: PhantomData,
        };
        // `SendAsync` suspends only where the worker takes the hand-off.
        let handoff = env.handoff.expect("a run off its worker is a worker's run");
        handoff.set(Some(ToWorker::GoesOn(Pending(Box::new(run)))));
        RunReport::HANDED
    }

    /// The context of the run.
    #[inline]
    fn cx<'a>(&'a self, env: &'a RunEnv<'a>) -> RunCx<'a> {
        let header = self.core.header();
        RunCx {
            env,
            header,
            deadline: header.deadline(),
            runs: 1,
            task_name: self.name.get(),
            lease: None,
        }
    }

    /// The end of the run, with what its body did (here, or on the thread that resumed
    /// it: `OnceRun`). Always inlined: a closure's run, as before the async path shared it.
    #[inline(always)]
    fn end_run(
        &self,
        env: &RunEnv<'_>,
        run: Started<'_, F, T>,
        outcome: Result<Ran<T>, crate::error::Caught>,
    ) -> RunReport {
        let (stored, panic) = match outcome {
            Ok(Ran::Output(value)) => (Ok(value), None),
            Ok(Ran::Stopped) => (Err(None), None),
            Err((payload, msg)) => (Err(Some(payload)), Some(msg)),
            // Only from the first call (`OnceRun`'s resume is never `Ready(Pending)`).
            Ok(Ran::Pending(body)) => return self.goes_on(env, run, body),
        };
        count_run(env.counters, panic.is_some());
        // T2: the exchange fails only if an interrupt cancelled the run meanwhile; the
        // interrupter completed the future, and the outcome is dropped here.
        let won = match stored {
            Ok(value) => self.core.finish(run, Ok(value)).map_err(drop_quietly),
            Err(Some(payload)) => self.core.finish(run, Err(payload)).map_err(drop_quietly),
            // Stopped (`shutdown_now` or an interrupt): no outcome; CANCELLED.
            Err(None) => self.core.finish_stopped(run),
        };
        if won.is_ok() {
            self.wake_waiters();
        }
        RunReport {
            ran: true,
            panic,
            ..RunReport::NOT_RUN
        }
    }
}

/// The continuation of a one-shot's run whose future is pending (`suspended.rs`): the
/// body's run and the proof of the run's start (`raw/slot.rs`, R4), for the thread that
/// resumes it.
struct OnceRun<F, T, N> {
    body: Box<dyn OnceResume<T>>,
    /// `None` once the run ended.
    run: Option<StartedRun>,
    types: PhantomData<fn() -> (F, N)>,
}

impl<F, T, N> Resume for OnceRun<F, T, N>
where
    F: OnceBody<T>,
    T: Send + 'static,
    N: Label,
{
    fn resume(&mut self, env: &RunEnv<'_>, waker: &Waker) -> Poll<RunReport> {
        let task: &OnceTask<F, T, N> = env
            .task
            .and_then(|t| t.as_any().downcast_ref())
            .expect("a run resumes in its task's environment");
        let cx = task.cx(env);
        let outcome = match run_caught(|| self.body.resume(&cx, waker)) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(ran)) => Ok(ran),
            Err(caught) => Err(caught),
        };
        let run = task
            .core
            .reattach(self.run.take().expect("not resumed after its end"));
        Poll::Ready(task.end_run(env, run, outcome))
    }
}

impl<F, T, N> Task for OnceTask<F, T, N>
where
    F: OnceBody<T>,
    T: Send + 'static,
    N: Label,
{
    fn header(&self) -> &Header {
        self.core.header()
    }

    fn header_mut(&mut self) -> &mut Header {
        self.core.header_mut()
    }

    fn name(&self) -> Option<&str> {
        self.name.get()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn timer(&self) -> Option<&crate::telemetry::TaskTimer> {
        self.name.timer()
    }

    fn schedule(&self) -> &Schedule {
        static ONCE: Schedule = Schedule::Once;
        &ONCE
    }

    fn run(&self, env: &RunEnv<'_>) -> RunReport {
        match self.core.start() {
            Some((f, run)) => self.run_started(env, f, run),
            None => RunReport::NOT_RUN,
        }
    }

    fn run_now(&self, env: &RunEnv<'_>, _then_cancel: bool) -> RunReport {
        self.run(env)
    }

    fn finish_cancelled(&self) {
        if let Some(f) = self.core.take_cancelled_closure() {
            drop_quietly(f); // T3: the canceller drops it, outside any lock
        }
        self.wake_waiters();
    }
}

impl<F, T, N> TypedTask<T> for OnceTask<F, T, N>
where
    F: OnceBody<T>,
    T: Send + 'static,
    N: Label,
{
    fn outcome(&self) -> &dyn Outcome<T> {
        self
    }
}

impl<F, T, N> Outcome<T> for OnceTask<F, T, N>
where
    F: OnceBody<T>,
    T: Send + 'static,
    N: Label,
{
    fn wait(&self, until: Option<Instant>) -> bool {
        let header = self.core.header();
        if header.state().is_terminal() {
            return true;
        }
        // A1: registered only while the task is not terminal.
        let Some(me) = waiting::register_thread(header.key(), || header.wait_on()) else {
            return true;
        };
        loop {
            if header.state().is_terminal() {
                return true;
            }
            if park_until(until) {
                waiting::leave(header.key(), &me); // A2
                return header.state().is_terminal();
            }
        }
    }

    fn wait_take(&self) -> Result<T, TaskError> {
        if let Some(outcome) = self.core.take_outcome() {
            return outcome;
        }
        self.wait(None);
        self.core
            .take_outcome()
            .expect("terminal after an untimed wait")
    }

    fn poll(&self, cx: &mut Context<'_>) -> Poll<Result<T, TaskError>> {
        let header = self.core.header();
        loop {
            if let Some(outcome) = self.core.take_outcome() {
                return Poll::Ready(outcome);
            }
            // A1: registered only while not terminal; else the outcome is there now.
            if waiting::register_waker(header.key(), || header.wait_on(), cx.waker()) {
                return Poll::Pending;
            }
        }
    }

    #[cfg(test)]
    fn is_ready(&self) -> bool {
        self.core.header().state().is_terminal()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::task::state::{State, CLOSURE, OUTPUT};
    use crate::task::testing::{clock, env, DropCount};
    use crate::task::Plain;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc as StdArc;

    #[test]
    fn one_shot_runs_once_and_completes() {
        let t = OnceTask::new(0, Plain(|| 5));
        let report = t.run(&env(&clock(), 0));
        assert!(report.ran && report.next.is_none() && report.panic.is_none());
        assert_eq!(t.header().state(), State::Done);
        assert!(t.wait(None));
        assert_eq!(t.wait_take().unwrap(), 5);
        assert!(!t.run(&env(&clock(), 0)).ran, "T1: no second run");
        assert!(
            !t.header().cancel(),
            "a finished one-shot cannot be cancelled"
        );
    }

    #[test]
    #[should_panic(expected = "taken twice")]
    fn an_outcome_is_taken_once() {
        let t = OnceTask::new(0, Plain(|| 5));
        assert!(t.run(&env(&clock(), 0)).ran);
        assert_eq!(t.wait_take().unwrap(), 5);
        let _ = t.wait_take();
    }

    #[test]
    fn one_shot_panic_is_captured() {
        let t = OnceTask::new(0, Plain(|| -> u8 { panic!("boom") }));
        let report = t.run(&env(&clock(), 0));
        assert_eq!(report.panic.as_deref(), Some("boom"));
        assert_eq!(t.header().state(), State::Panicked);
        assert_eq!(t.wait_take().unwrap_err().panic_message(), Some("boom"));
    }

    #[test]
    fn cancel_before_start_drops_the_closure_and_prevents_the_run() {
        let drops = StdArc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let t = OnceTask::new(0, Plain(move || drop(guard)));
        assert!(t.header().cancel());
        assert!(!t.header().cancel(), "T2: only one cancel wins");
        t.finish_cancelled();
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "T3: dropped at cancel time"
        );
        t.finish_cancelled();
        assert_eq!(drops.load(Ordering::SeqCst), 1, "R4: dropped once");
        assert!(!t.run(&env(&clock(), 0)).ran);
        assert!(t.wait_take().unwrap_err().is_cancelled());
    }

    #[test]
    fn a_started_one_shot_cannot_be_cancelled() {
        let t = OnceTask::new(0, Plain(|| 1));
        let (f, run) = t.core.start().expect("scheduled");
        assert!(!t.header().cancel());
        assert!(t.core.take_cancelled_closure().is_none(), "not cancelled");
        let report = t.run_started(&env(&clock(), 0), f, run);
        assert!(report.ran);
        assert_eq!(t.wait_take().unwrap(), 1);
    }

    #[test]
    fn an_interrupt_between_start_and_take_takes_the_closure_and_prevents_the_run() {
        use crate::task::state::Start;
        let drops = StdArc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let ran = StdArc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let t = OnceTask::new(
            0,
            Plain(move || {
                let _g = &guard;
                r.fetch_add(1, Ordering::SeqCst);
            }),
        );
        // The runner's start, before its take (`OnceCore::start` does both).
        assert_eq!(t.header().start_once(), Start::Run);
        assert!(
            !t.header().cancel(),
            "a plain cancel does not stop a started one-shot"
        );
        assert!(t.header().interrupt(), "an interrupt does");
        assert!(!t.header().interrupt(), "T2: once");
        t.finish_cancelled(); // the interrupter's part: the future reports Cancelled now
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "T3: the interrupter dropped it, before returning"
        );
        assert!(t.wait_take().unwrap_err().is_cancelled());
        assert!(
            !t.header().take_closure(State::Running),
            "R4: the runner's take finds nothing"
        );
        assert!(!t.run(&env(&clock(), 0)).ran);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert_eq!(t.header().state(), State::Cancelled);
    }

    #[test]
    fn an_interrupted_run_drops_its_output_and_the_future_says_cancelled() {
        let drops = StdArc::new(AtomicUsize::new(0));
        let out = DropCount(drops.clone());
        let t = OnceTask::new(0, Plain(move || out));
        let (f, run) = t.core.start().expect("scheduled");
        let Ran::Output(value) = f.call(&RunCx {
            env: &env(&clock(), 0),
            header: t.header(),
            deadline: 0,
            runs: 1,
            task_name: None,
            lease: None,
        }) else {
            unreachable!("a plain closure has an output")
        };
        assert!(t.header().interrupt());
        let lost = t
            .core
            .finish(run, Ok(value))
            .expect_err("the interrupt won");
        drop(lost);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert!(matches!(t.wait_take(), Err(e) if e.is_cancelled()));
    }

    /// A body stopped without an output (an async body dropped at `shutdown_now`).
    struct Stops;

    impl OnceBody<u8> for Stops {
        fn call(self, _: &RunCx<'_>) -> Ran<u8> {
            Ran::Stopped
        }
    }

    #[test]
    fn a_stopped_run_ends_the_task_cancelled_with_an_empty_slot() {
        let t = OnceTask::new(0, Stops);
        let report = t.run(&env(&clock(), 0));
        assert!(report.ran && report.panic.is_none());
        assert_eq!(t.header().state(), State::Cancelled);
        assert!(
            !t.header().is_interrupted(),
            "ended by its run, not an interrupt"
        );
        assert_eq!(t.header().word() & (CLOSURE | OUTPUT), 0, "R4: empty");
        assert!(t.wait_take().unwrap_err().is_cancelled());
        // An interrupt that came first: the run's finish loses, the interrupter completed it.
        let t = OnceTask::new(0, Stops);
        let (f, run) = t.core.start().expect("scheduled");
        assert!(t.header().interrupt());
        let c = clock();
        let cx = RunCx {
            env: &env(&c, 0),
            header: t.header(),
            deadline: 0,
            runs: 1,
            task_name: None,
            lease: None,
        };
        assert!(matches!(f.call(&cx), Ran::Stopped));
        assert!(t.core.finish_stopped(run).is_err(), "the interrupt won");
        assert!(t.header().is_interrupted());
    }

    #[test]
    fn a_task_dropped_unrun_or_untaken_drops_what_its_slot_holds() {
        let drops = StdArc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        drop(OnceTask::new(0, Plain(move || drop(guard))));
        assert_eq!(drops.load(Ordering::SeqCst), 1, "the closure");
        let out = DropCount(drops.clone());
        let t = OnceTask::new(0, Plain(move || out));
        assert!(t.run(&env(&clock(), 0)).ran);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "the output waits to be taken"
        );
        drop(t);
        assert_eq!(drops.load(Ordering::SeqCst), 2, "the output");
        let t = OnceTask::new(0, Plain(|| -> u8 { panic!("boom") }));
        assert!(t.run(&env(&clock(), 0)).ran);
        drop(t); // the payload: memcheck sees a leak if it stays
    }

    #[test]
    fn waiters_are_woken_by_the_run_and_a_timed_out_one_leaves_the_table() {
        let t = StdArc::new(OnceTask::new(0, Plain(|| 9)));
        for _ in 0..3 {
            assert!(!t.wait(Some(Instant::now() + std::time::Duration::from_millis(1))));
        }
        assert_eq!(waiting::count(t.header().key()), 0, "A2");
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let t = t.clone();
                std::thread::spawn(move || t.wait(None))
            })
            .collect();
        while waiting::count(t.header().key()) < 4 {
            std::thread::yield_now();
        }
        assert!(t.run(&env(&clock(), 0)).ran);
        for w in waiters {
            assert!(w.join().unwrap());
        }
        assert_eq!(
            waiting::count(t.header().key()),
            0,
            "A1: taken by the waker"
        );
        assert_eq!(t.wait_take().unwrap(), 9);
    }

    #[test]
    fn a_task_freed_unended_takes_its_wakers_out_of_the_table() {
        let t = Box::new(OnceTask::new(0, Plain(|| 1)));
        let key = t.header().key();
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(t.poll(&mut cx).is_pending());
        assert!(t.poll(&mut cx).is_pending());
        assert_eq!(waiting::count(key), 1, "one waker per task");
        drop(t);
        assert_eq!(waiting::count(key), 0, "A2");
    }
}

/// A one-shot's slot raced from several threads: the run, a cancel or an interrupt, a
/// `get` (blocking, timed or polled) and the drops of every reference, each on its own
/// thread. The accounting is exact: the closure is dropped once, the output once if it
/// was made, the future's outcome matches the transition that won. These are the tests
/// Miri runs with many seeds (`scripts/sanitize.sh`): its data-race detector sees an
/// access to the slot, or the free of the task, that the state word or the reference
/// count does not order; `cargo test` runs them for many rounds.
#[cfg(all(test, not(loom)))]
mod races {
    use super::*;
    use crate::task::testing::{clock, env, DropCount};
    use crate::task::{Plain, TaskRef, TypedRef};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;
    use std::thread;
    use std::time::Duration;

    /// One round under Miri (its seeds vary the schedule), many otherwise.
    fn rounds() -> usize {
        if cfg!(miri) {
            1
        } else {
            300
        }
    }

    /// Drop counters for one task: its closure, its output, and the runs of its body.
    #[derive(Default)]
    struct Counts {
        closure: Arc<AtomicUsize>,
        output: Arc<AtomicUsize>,
        ran: Arc<AtomicUsize>,
    }

    impl Counts {
        fn get(c: &Arc<AtomicUsize>) -> usize {
            c.load(Ordering::SeqCst)
        }
    }

    /// A one-shot whose closure and output count their drops, as the pool makes it: the
    /// future's typed reference and the queue's.
    fn one_shot(counts: &Counts) -> (TypedRef<DropCount>, TaskRef) {
        let guard = DropCount(counts.closure.clone());
        let output = counts.output.clone();
        let ran = counts.ran.clone();
        TaskRef::new_typed_pair(OnceTask::new(
            0,
            Plain(move || {
                let _g = guard;
                ran.fetch_add(1, Ordering::SeqCst);
                DropCount(output)
            }),
        ))
    }

    /// The worker's part: run the task once, then drop the queue's reference.
    fn run_and_drop(queued: TaskRef) {
        let clock = clock();
        let _ = queued.run(&env(&clock, 0));
        drop(queued);
    }

    /// A waker that unparks the polling thread.
    struct Unpark(thread::Thread);

    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    #[test]
    fn a_run_a_cancel_and_a_blocking_get_on_three_threads() {
        for _ in 0..rounds() {
            let counts = Counts::default();
            let (future, queued) = one_shot(&counts);
            let canceller = future.clone();
            let (outcome, cancelled) = thread::scope(|s| {
                s.spawn(move || run_and_drop(queued));
                let c = s.spawn(move || {
                    let won = canceller.header().cancel();
                    if won {
                        canceller.finish_cancelled(); // T3: drops the closure
                    }
                    won
                });
                let outcome = future.outcome().wait_take().map(drop);
                drop(future);
                (outcome, c.join().unwrap())
            });
            let ran = Counts::get(&counts.ran);
            assert_eq!(ran + cancelled as usize, 1, "T2: run or cancelled, one");
            assert_eq!(outcome.is_ok(), ran == 1);
            assert_eq!(Counts::get(&counts.closure), 1, "the closure, once");
            assert_eq!(Counts::get(&counts.output), ran, "the output, once if made");
        }
    }

    #[test]
    fn a_run_an_interrupt_and_a_poll_on_three_threads() {
        for _ in 0..rounds() {
            let counts = Counts::default();
            let (future, queued) = one_shot(&counts);
            let interrupter = future.clone();
            let (outcome, interrupted) = thread::scope(|s| {
                s.spawn(move || run_and_drop(queued));
                let i = s.spawn(move || {
                    let won = interrupter.header().interrupt();
                    if won {
                        interrupter.finish_cancelled();
                    }
                    drop(interrupter);
                    won
                });
                let waker = std::task::Waker::from(Arc::new(Unpark(thread::current())));
                let mut cx = Context::from_waker(&waker);
                let outcome = loop {
                    match future.outcome().poll(&mut cx) {
                        Poll::Ready(outcome) => break outcome.map(drop),
                        Poll::Pending => thread::park(),
                    }
                };
                (outcome, i.join().unwrap())
            });
            let ran = Counts::get(&counts.ran);
            assert_eq!(
                outcome.as_ref().is_err_and(|e| e.is_cancelled()),
                interrupted,
                "the future says Cancelled iff the interrupt won"
            );
            assert!(ran == 1 || interrupted, "no run only when interrupted");
            assert_eq!(Counts::get(&counts.closure), 1, "the closure, once");
            assert_eq!(
                Counts::get(&counts.output),
                ran,
                "the output: taken by the poll, or dropped by the runner whose finish lost"
            );
            drop(future);
            assert_eq!(Counts::get(&counts.output), ran);
        }
    }

    #[test]
    fn timed_gets_racing_the_run_are_woken_or_leave_the_table() {
        for _ in 0..rounds() {
            let counts = Counts::default();
            let (future, queued) = one_shot(&counts);
            let key = future.header().key();
            thread::scope(|s| {
                s.spawn(move || run_and_drop(queued));
                // Each wait that times out leaves the table before it returns (A2).
                while !future
                    .outcome()
                    .wait(Some(Instant::now() + Duration::from_micros(50)))
                {}
                assert!(future.outcome().wait_take().is_ok());
            });
            assert_eq!(waiting::count(key), 0, "A1, A2: no waiter left behind");
            drop(future);
            assert_eq!(Counts::get(&counts.closure), 1);
            assert_eq!(Counts::get(&counts.output), 1);
        }
    }

    #[test]
    fn every_reference_dropped_on_its_own_thread_frees_the_task_once() {
        for round in 0..rounds() {
            let counts = Counts::default();
            let (future, queued) = one_shot(&counts);
            let handle = future.task().clone(); // a cancel handle's reference
            thread::scope(|s| {
                s.spawn(move || run_and_drop(queued));
                s.spawn(move || {
                    // The handle reads the task (as `is_done` would) and lets go.
                    let _ = handle.header().state();
                    drop(handle);
                });
                s.spawn(move || {
                    // Half the rounds the future takes the output, half it never asks:
                    // then the task's own drop frees it, on whichever thread is last.
                    if round % 2 == 0 {
                        drop(future.outcome().wait_take());
                    }
                    drop(future);
                });
            });
            assert_eq!(Counts::get(&counts.closure), 1, "the closure, once");
            assert_eq!(Counts::get(&counts.output), 1, "the output, once");
        }
    }
}
