//! [`OnceTask`]: a one-shot task (Java: `ScheduledFutureTask` with `period == 0`).
//!
//! SCHEDULED -> RUNNING -> DONE or PANICKED, or SCHEDULED -> CANCELLED. A started one-shot
//! cannot be cancelled by `cancel`, but an interrupt cancels it while it runs (RUNNING ->
//! CANCELLED, `state.rs`): its future says `Cancelled` at once, and the run's output is
//! dropped when it ends (`run` below). T1–T3 are stated in `task/mod.rs`.

use super::state::{End, Exchange, Start};
use super::{
    count_run, drop_quietly, Completion, Header, Job, Label, OnceBody, Outcome, RunCx, RunEnv,
    RunReport, TypedJob,
};
use crate::clock::Ticks;
use crate::error::{run_caught, TaskError};
use crate::periodic::Schedule;

/// A one-shot task (Java: `ScheduledFutureTask` with `period == 0`); `N`: its name, `()`
/// (zero-sized) for an unnamed one.
pub(crate) struct OnceTask<F, T, N = ()> {
    header: Header,
    /// The closure while SCHEDULED (T3), then the outcome.
    done: Completion<F, T>,
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
            header: Header::new(false, deadline),
            done: Completion::new(f),
            name,
        }
    }

    /// The run after a successful `start`.
    fn run_started(&self, env: &RunEnv<'_>) -> RunReport {
        let Some(f) = self.done.take_body() else {
            // T3: an interrupt came between the start and this take, and its author took
            // the closure: no run.
            return RunReport::NOT_RUN;
        };
        let cx = RunCx {
            env,
            header: &self.header,
            deadline: self.header.deadline(),
            runs: 1,
            task_name: self.name.get(),
            lease: None,
        };
        let outcome = run_caught(|| f.call(&cx));
        count_run(env.counters, outcome.is_err());
        // T2: the exchange fails only if an interrupt cancelled the run meanwhile; the
        // interrupter completed the future, and the outcome is dropped here.
        match outcome {
            Ok(value) => {
                match self.header.edges().finish(End::Done) {
                    Exchange::Won => self.done.complete(Ok(value)),
                    Exchange::Lost => drop_quietly(value),
                }
                RunReport {
                    ran: true,
                    skipped: false,
                    panic: None,
                    next: None,
                }
            }
            Err((payload, msg)) => {
                match self.header.edges().finish(End::Panicked) {
                    Exchange::Won => self.done.complete(Err(TaskError::Panicked(payload))),
                    Exchange::Lost => drop_quietly(payload),
                }
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

impl<F, T, N> Job for OnceTask<F, T, N>
where
    F: OnceBody<T>,
    T: Send + 'static,
    N: Label,
{
    fn header(&self) -> &Header {
        &self.header
    }

    fn name(&self) -> Option<&str> {
        self.name.get()
    }

    fn schedule(&self) -> &Schedule {
        static ONCE: Schedule = Schedule::Once;
        &ONCE
    }

    fn run(&self, env: &RunEnv<'_>) -> RunReport {
        match self.header.start() {
            Start::Run => self.run_started(env),
            Start::NotScheduled => RunReport::NOT_RUN,
        }
    }

    fn run_now(&self, env: &RunEnv<'_>, _then_cancel: bool) -> RunReport {
        self.run(env)
    }

    fn finish_cancelled(&self) {
        drop_quietly(self.done.cancel()); // T3: dropped outside the stage's lock
    }
}

impl<F, T, N> TypedJob<T> for OnceTask<F, T, N>
where
    F: OnceBody<T>,
    T: Send + 'static,
    N: Label,
{
    fn outcome(&self) -> &dyn Outcome<T> {
        &self.done
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::task::state::{Start, State};
    use crate::task::testing::{clock, env, DropCount};
    use crate::task::Plain;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc as StdArc;

    #[test]
    fn one_shot_runs_once_and_completes() {
        let t = OnceTask::new(0, Plain(|| 5));
        let report = t.run(&env(&clock(), 0));
        assert!(report.ran && report.next.is_none() && report.panic.is_none());
        assert_eq!(t.header.state(), State::Done);
        assert!(t.done.wait(None));
        assert_eq!(t.done.wait_take().unwrap(), 5);
        assert!(!t.run(&env(&clock(), 0)).ran, "T1: no second run");
        assert!(
            !t.header.cancel(),
            "a finished one-shot cannot be cancelled"
        );
    }

    #[test]
    fn one_shot_panic_is_captured() {
        let t = OnceTask::new(0, Plain(|| -> u8 { panic!("boom") }));
        let report = t.run(&env(&clock(), 0));
        assert_eq!(report.panic.as_deref(), Some("boom"));
        assert_eq!(t.header.state(), State::Panicked);
        assert_eq!(
            t.done.wait_take().unwrap_err().panic_message(),
            Some("boom")
        );
    }

    #[test]
    fn cancel_before_start_drops_the_closure_and_prevents_the_run() {
        let drops = StdArc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let t = OnceTask::new(0, Plain(move || drop(guard)));
        assert!(t.header.cancel());
        assert!(!t.header.cancel(), "T2: only one cancel wins");
        t.finish_cancelled();
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "T3: dropped at cancel time"
        );
        assert!(!t.run(&env(&clock(), 0)).ran);
        assert!(t.done.wait_take().unwrap_err().is_cancelled());
    }

    #[test]
    fn a_started_one_shot_cannot_be_cancelled() {
        let t = OnceTask::new(0, Plain(|| 1));
        assert_eq!(t.header.start(), Start::Run);
        assert!(!t.header.cancel());
        let report = t.run_started(&env(&clock(), 0));
        assert!(report.ran);
        assert_eq!(t.done.wait_take().unwrap(), 1);
    }

    #[test]
    fn an_interrupt_between_start_and_run_takes_the_closure_and_prevents_the_run() {
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
        assert_eq!(t.header.start(), Start::Run);
        assert!(
            !t.header.cancel(),
            "a plain cancel does not stop a started one-shot"
        );
        assert!(t.header.interrupt(), "an interrupt does");
        assert!(!t.header.interrupt(), "T2: once");
        t.finish_cancelled(); // the interrupter's part: the future reports Cancelled now
        assert!(t.done.wait_take().unwrap_err().is_cancelled());
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "T3: the closure went with the stage"
        );
        assert!(!t.run_started(&env(&clock(), 0)).ran);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert_eq!(t.header.state(), State::Cancelled);
    }
}
