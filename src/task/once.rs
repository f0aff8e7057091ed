//! [`OnceTask`]: a one-shot task (Java: `ScheduledFutureTask` with `period == 0`).
//!
//! SCHEDULED -> RUNNING -> DONE or PANICKED, or SCHEDULED -> CANCELLED; a started
//! one-shot cannot be cancelled (`state.rs`). T1–T3 are stated in `task/mod.rs`.

use super::{count_run, drop_quietly, Completion, Header, Job, Outcome, RunReport, TypedJob};
use crate::clock::{Clock, Ticks};
use crate::error::{run_caught, TaskError};
use crate::periodic::Schedule;
use crate::stats::Counters;

/// A one-shot task (Java: `ScheduledFutureTask` with `period == 0`).
pub(crate) struct OnceTask<F, T> {
    header: Header,
    /// The closure while SCHEDULED (T3), then the outcome.
    done: Completion<F, T>,
}

impl<F, T> OnceTask<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    pub(crate) fn new(deadline: Ticks, f: F) -> Self {
        OnceTask {
            header: Header::new(false, deadline),
            done: Completion::new(f),
        }
    }

    /// The run after a successful `start`.
    fn run_started(&self, counters: Option<&Counters>) -> RunReport {
        let Some(f) = self.done.take_body() else {
            debug_assert!(false, "T3: a started one-shot has its closure");
            return RunReport::NOT_RUN;
        };
        let outcome = run_caught(f);
        count_run(counters, outcome.is_err());
        match outcome {
            Ok(value) => {
                let finished = self
                    .header
                    .transition(super::state::RUNNING, super::state::DONE);
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
                let finished = self
                    .header
                    .transition(super::state::RUNNING, super::state::PANICKED);
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

    fn schedule(&self) -> &Schedule {
        static ONCE: Schedule = Schedule::Once;
        &ONCE
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
        drop_quietly(self.done.cancel()); // T3: dropped outside the stage's lock
    }
}

impl<F, T> TypedJob<T> for OnceTask<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    fn outcome(&self) -> &dyn Outcome<T> {
        &self.done
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::task::state;
    use crate::task::testing::{clock, DropCount};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc as StdArc;

    #[test]
    fn one_shot_runs_once_and_completes() {
        let t = OnceTask::new(0, || 5);
        let report = t.run(0, &clock(), None);
        assert!(report.ran && report.next.is_none() && report.panic.is_none());
        assert_eq!(t.header.state(), state::DONE);
        assert!(t.done.wait(None));
        assert_eq!(t.done.wait_take().unwrap(), 5);
        assert!(!t.run(0, &clock(), None).ran, "T1: no second run");
        assert!(
            !t.header.cancel(),
            "a finished one-shot cannot be cancelled"
        );
    }

    #[test]
    fn one_shot_panic_is_captured() {
        let t = OnceTask::new(0, || -> u8 { panic!("boom") });
        let report = t.run(0, &clock(), None);
        assert_eq!(report.panic.as_deref(), Some("boom"));
        assert_eq!(t.header.state(), state::PANICKED);
        assert_eq!(
            t.done.wait_take().unwrap_err().panic_message(),
            Some("boom")
        );
    }

    #[test]
    fn cancel_before_start_drops_the_closure_and_prevents_the_run() {
        let drops = StdArc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let t = OnceTask::new(0, move || drop(guard));
        assert!(t.header.cancel());
        assert!(!t.header.cancel(), "T2: only one cancel wins");
        t.finish_cancelled();
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "T3: dropped at cancel time"
        );
        assert!(!t.run(0, &clock(), None).ran);
        assert!(t.done.wait_take().unwrap_err().is_cancelled());
    }

    #[test]
    fn a_started_one_shot_cannot_be_cancelled() {
        let t = OnceTask::new(0, || 1);
        assert!(t.header.start());
        assert!(!t.header.cancel());
        let report = t.run_started(None);
        assert!(report.ran);
        assert_eq!(t.done.wait_take().unwrap(), 1);
    }
}
