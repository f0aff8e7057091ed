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
    /// The clones of one [`Periodic`](crate::Periodic) share their trigger, so a spec
    /// scheduled on two executors follows the clock of the last one.
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

/// A trigger shared by the clones of one [`Periodic`](crate::Periodic) and by the tasks
/// made from them, with its latest description.
///
/// Each holder (a spec, a task) counts once in the cell's `holders`; the trigger is
/// dropped when the last lets go: a clone's drop, or [`retire`](Self::retire) when a task
/// ends. A task retires its holding at its end rather than at its own drop, so that a
/// trigger that keeps its own task's handle (to cancel itself from `next_deadline`) is
/// not kept alive by the task it keeps alive: task → trigger → handle → task.
pub(crate) struct SharedTrigger {
    cell: Arc<TriggerCell>,
    /// This holder let go already (`retire`): its drop counts nothing more.
    retired: crate::sync::AtomicBool,
}

impl SharedTrigger {
    /// The trigger's latest description ([`Trigger::describe`]; `trigger` until it
    /// answers): plain data under a leaf lock, no user code.
    pub(crate) fn described(&self) -> String {
        self.cell.described.lock().clone()
    }
}

struct TriggerCell {
    /// The user's trigger, under its spec's own mutex (U1's exception in `user.rs`: only
    /// the runs and the scheduling of this one task take it, one at a time); `None` once
    /// every holder let go.
    trigger: Mutex<Option<Box<dyn Trigger>>>,
    /// The holders still holding (`SharedTrigger`'s notes). AcqRel: the last holder's
    /// drop of the trigger comes after every holder's use of it.
    holders: std::sync::atomic::AtomicUsize,
    /// The last holder let go from inside a call of this trigger on the calling thread
    /// (the trigger cancelled its own task): the call drops it as it ends. Written and
    /// read by that one thread; `Relaxed`.
    drop_after_call: std::sync::atomic::AtomicBool,
    /// Its latest [`Trigger::describe`], asked after each call of its deadlines while the
    /// trigger's mutex is held, and read by snapshots (`TaskInfo::schedule`) under this
    /// leaf lock, which runs no user code and is held only to store or copy the string.
    described: Mutex<String>,
}

impl SharedTrigger {
    pub(crate) fn new(trigger: Box<dyn Trigger>) -> Self {
        SharedTrigger {
            cell: Arc::new(TriggerCell {
                trigger: Mutex::new(Some(trigger)),
                holders: std::sync::atomic::AtomicUsize::new(1),
                drop_after_call: std::sync::atomic::AtomicBool::new(false),
                described: Mutex::new(String::from("trigger")),
            }),
            retired: crate::sync::AtomicBool::new(false),
        }
    }

    /// Calls `f` on the trigger under its own mutex (U1's exception) and then asks it to
    /// describe itself. `Err` if `f` panicked; a panic of `describe` is reported
    /// (after the trigger's mutex is released) and keeps the previous description.
    /// `Ok(None)` if the trigger is gone (its task ended, and every other holder).
    pub(crate) fn call<R>(
        &self,
        f: impl FnOnce(&mut dyn Trigger) -> R,
    ) -> Result<Option<R>, Caught> {
        let ran = run_caught(|| {
            let mut t = self.cell.trigger.lock();
            let t = t.as_mut()?;
            let _inside = Inside::enter(&self.cell);
            Some(crate::user::under_own_lock(|| {
                let out = f(&mut **t);
                let described =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.describe()));
                (out, described)
            }))
        });
        // Its last holder let go during the call, on this thread: dropped now, unlocked.
        if self
            .cell
            .drop_after_call
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            let trigger = self.cell.trigger.lock().take();
            crate::user::drop_quietly(trigger);
        }
        let ran = ran?;
        let Some((out, described)) = ran else {
            return Ok(None);
        };
        match described {
            Ok(words) => *self.cell.described.lock() = words,
            Err(panic) => crate::user::report(crate::user::Door::Describe, panic),
        }
        Ok(Some(out))
    }

    /// This holder lets go of the trigger (a task that ended); the last holder's letting
    /// go drops it, outside its mutex (U1) with its panic contained (U2). Once per holder.
    pub(crate) fn retire(&self) {
        // Relaxed: the flag only keeps one holder from counting twice; the count's own
        // RMW orders the drop.
        if self
            .retired
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        if self
            .cell
            .holders
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel)
            == 1
        {
            if Inside::is_in(&self.cell) {
                // This thread holds the trigger's mutex (the trigger is ending its own
                // task from a deadline call): the call drops it as it ends.
                self.cell
                    .drop_after_call
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                return;
            }
            let trigger = self.cell.trigger.lock().take();
            crate::user::drop_quietly(trigger);
        }
    }
}

thread_local! {
    /// The triggers this thread is calling now (nested: a trigger that submits a task
    /// with a trigger of its own), by address.
    static INSIDE: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// This thread is inside a call of a trigger (under its mutex) while this lives.
struct Inside(usize);

impl Inside {
    fn enter(cell: &Arc<TriggerCell>) -> Inside {
        let at = Arc::as_ptr(cell) as usize;
        INSIDE.with(|i| i.borrow_mut().push(at));
        Inside(at)
    }

    fn is_in(cell: &Arc<TriggerCell>) -> bool {
        let at = Arc::as_ptr(cell) as usize;
        INSIDE.with(|i| i.borrow().contains(&at))
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.with(|i| {
            let mut i = i.borrow_mut();
            if let Some(k) = i.iter().rposition(|&a| a == self.0) {
                i.remove(k);
            }
        });
    }
}

impl Clone for SharedTrigger {
    fn clone(&self) -> Self {
        // Relaxed: a new holder is made from a live one, which keeps the count above zero.
        self.cell
            .holders
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        SharedTrigger {
            cell: self.cell.clone(),
            retired: crate::sync::AtomicBool::new(false),
        }
    }
}

impl Drop for SharedTrigger {
    fn drop(&mut self) {
        self.retire();
    }
}

impl fmt::Debug for SharedTrigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Trigger")
    }
}
