//! [`Trigger`]: a user's rule for a periodic task's deadlines, what it learns after each
//! run ([`TriggerContext`]), and [`SharedTrigger`], the trigger as the clones of one
//! `Periodic` and its task share it, with its latest description for the task list. The
//! rules the crate itself applies (fixed rate, fixed delay) and the spec are in
//! `schedule.rs`.
//!
//! A trigger is user code run under its own spec's mutex (U1's exception in `user.rs`):
//! only the scheduling and the runs of its one task take that mutex, one at a time, and
//! a snapshot reads the kept description under a leaf lock of its own instead, so a
//! trigger that asks for the task list does not wait for itself.

use std::fmt;
use std::time::Instant;

use crate::clock::WallClock;
use crate::error::{run_caught, Caught};
use crate::sync::{Arc, Mutex};

/// What a [`Trigger`] learns about the run that just ended. All times are in the
/// executor's clock. Plain data: build one yourself to unit-test a trigger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TriggerContext {
    /// The deadline of the run that just ended.
    pub scheduled: Instant,
    /// When it started.
    pub started: Instant,
    /// When it finished.
    pub finished: Instant,
    /// Runs so far, this one included (skipped runs excluded).
    pub runs: u64,
    /// This run panicked (only seen with [`OnPanic::Continue`](crate::OnPanic::Continue)).
    pub panicked: bool,
}

/// Computes the deadlines of a periodic task.
///
/// ```
/// use schedpool::{Trigger, TriggerContext};
/// use std::time::{Duration, Instant};
///
/// /// Doubles the pause after each run, five runs in all. (Named so as not to clash with
/// /// `schedpool::Backoff`, the fallible tasks' retry spacing, under a glob import.)
/// struct Doubling(Duration);
/// impl Trigger for Doubling {
///     fn next_deadline(&mut self, ctx: &TriggerContext) -> Option<Instant> {
///         self.0 *= 2;
///         (ctx.runs < 5).then(|| ctx.finished + self.0)
///     }
/// }
///
/// let t0 = Instant::now();
/// let ctx = TriggerContext { scheduled: t0, started: t0, finished: t0, runs: 1, panicked: false };
/// assert_eq!(Doubling(Duration::from_secs(1)).next_deadline(&ctx), Some(t0 + Duration::from_secs(2)));
/// ```
pub trait Trigger: Send + 'static {
    /// The first deadline, given the earliest allowed (`now + initial_delay`); `None`
    /// finishes the task without a run (or refuses it, see
    /// [`refuse_if_never_due`](Self::refuse_if_never_due)). The default returns
    /// `earliest`.
    fn first_deadline(&mut self, earliest: Instant) -> Option<Instant> {
        Some(earliest)
    }

    /// The next deadline after a run, or `None` to finish (the future completes with
    /// `Ok(())`). A deadline in the past runs as soon as possible.
    fn next_deadline(&mut self, ctx: &TriggerContext) -> Option<Instant>;

    /// Called by the executor when it schedules the task, before
    /// [`first_deadline`](Self::first_deadline): its clock, with the wall-clock time at
    /// each instant of it. A trigger that works in calendar time keeps it and reads it
    /// where it maps instants to dates, so that it follows the executor's clock, real
    /// or a [`ManualClock`](crate::ManualClock)'s. The default ignores it.
    ///
    /// The clones of one [`Periodic`](crate::Periodic) share their trigger, so a spec scheduled on two
    /// executors follows the clock of the last one.
    fn use_clock(&mut self, clock: &WallClock) {
        let _ = clock;
    }

    /// What a `None` from [`first_deadline`](Self::first_deadline) means to
    /// [`schedule_periodic`](crate::ScheduledThreadPoolExecutor::schedule_periodic):
    /// with `false` (the default) a schedule that is over before it starts, whose future
    /// completes with `Ok(())` without a run; with `true` a mistake, which refuses the
    /// task with [`ScheduleError::NeverDue`](crate::ScheduleError::NeverDue).
    /// [`CronTrigger`](crate::CronTrigger) says `true`: an expression that matches no
    /// time from now on (its years are past) is almost certainly a typo.
    ///
    /// ```
    /// use schedpool::{ScheduleError, ScheduledThreadPoolExecutor, Periodic, Trigger, TriggerContext};
    /// use std::time::Instant;
    ///
    /// /// A trigger that has no deadline at all, and says so.
    /// struct Nowhere;
    /// impl Trigger for Nowhere {
    ///     fn first_deadline(&mut self, _: Instant) -> Option<Instant> { None }
    ///     fn next_deadline(&mut self, _: &TriggerContext) -> Option<Instant> { None }
    ///     fn refuse_if_never_due(&self) -> bool { true }
    /// }
    ///
    /// let pool = ScheduledThreadPoolExecutor::new(1);
    /// let refused = pool.schedule_periodic(Periodic::with_trigger(Nowhere), || ());
    /// assert_eq!(refused.unwrap_err(), ScheduleError::NeverDue);
    /// ```
    fn refuse_if_never_due(&self) -> bool {
        false
    }

    /// The schedule in words, for a task list
    /// ([`TaskInfo::schedule`](crate::TaskInfo::schedule)); a cron trigger gives its
    /// expression and time zone. The default is `"trigger"`. Asked after
    /// [`first_deadline`](Self::first_deadline) and after each
    /// [`next_deadline`](Self::next_deadline), under the same lock, and kept: a task list
    /// shows the latest answer, so a snapshot never waits for a trigger (nor for one
    /// that calls `scheduled_tasks` itself).
    fn describe(&self) -> String {
        String::from("trigger")
    }
}

/// A trigger shared by the clones of one [`Periodic`](crate::Periodic), with its latest description.
#[derive(Clone)]
pub(crate) struct SharedTrigger(Arc<TriggerCell>);

impl SharedTrigger {
    /// The trigger's latest description ([`Trigger::describe`]; `trigger` until it
    /// answers): plain data under a leaf lock, no user code.
    pub(crate) fn described(&self) -> String {
        self.0.described.lock().clone()
    }
}

struct TriggerCell {
    /// The user's trigger, under its spec's own mutex (U1's exception in `user.rs`: only
    /// the runs and the scheduling of this one task take it, one at a time).
    trigger: Mutex<Box<dyn Trigger>>,
    /// Its latest [`Trigger::describe`], asked after each call of its deadlines while the
    /// trigger's mutex is held, and read by snapshots (`TaskInfo::schedule`) under this
    /// leaf lock, which runs no user code and is held only to store or copy the string.
    described: Mutex<String>,
}

impl SharedTrigger {
    pub(crate) fn new(trigger: Box<dyn Trigger>) -> Self {
        SharedTrigger(Arc::new(TriggerCell {
            trigger: Mutex::new(trigger),
            described: Mutex::new(String::from("trigger")),
        }))
    }

    /// Calls `f` on the trigger under its own mutex (U1's exception) and then asks it to
    /// describe itself. `Err` if `f` panicked; a panic of `describe` is reported
    /// (after the trigger's mutex is released) and keeps the previous description.
    pub(crate) fn call<R>(&self, f: impl FnOnce(&mut dyn Trigger) -> R) -> Result<R, Caught> {
        let (out, described) = run_caught(|| {
            let mut t = self.0.trigger.lock();
            crate::user::under_own_lock(|| {
                let out = f(&mut **t);
                let described =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.describe()));
                (out, described)
            })
        })?;
        match described {
            Ok(words) => *self.0.described.lock() = words,
            Err(panic) => crate::user::report(crate::user::Door::Describe, panic),
        }
        Ok(out)
    }
}

impl fmt::Debug for SharedTrigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Trigger")
    }
}
