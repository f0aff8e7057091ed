//! Scheduling control beyond Java: the [`Periodic`] spec, [`MissedTicks`], [`OnPanic`],
//! [`Trigger`] and [`TriggerContext`].
//!
//! # Design
//! The Java-style `schedule_at_fixed_rate` and `schedule_with_fixed_delay` are
//! [`Periodic`] specs with the defaults, so one code path runs every periodic task. The
//! spec holds a [`Schedule`] (fixed rate with a missed-tick policy, fixed delay, or a
//! user trigger; `Once` for one-shots) plus [`Limits`] (`max_lateness`, `max_runs`,
//! `on_panic`) that the task applies after each run (`task/periodic.rs`). `Schedule` is
//! the crate's one description of when a task runs: the task keeps it, the worker names
//! it in the `task` span, and [`Schedule::first`] and [`Schedule::next`] compute the
//! first and the next deadline. (The task that runs on such a schedule is
//! `task/periodic.rs`; this file is its spec.)
//!
//! A fixed-rate run has *missed* ticks when it starts a whole period or more after its
//! deadline (the next tick was already due). Only then do the policies differ; a run late
//! by less than a period keeps the schedule under every policy, so real-clock jitter never
//! makes `Delay` drift.

use std::time::{Duration, Instant};

use crate::clock::{self, Clock, Ticks, WallClock};
use crate::cluster::Exclusive;
use crate::error::Caught;
use crate::sync::Arc;
pub(crate) use crate::trigger::SharedTrigger;
pub use crate::trigger::{Trigger, TriggerContext};

/// What a fixed-rate task does after a run that started so late that later ticks were
/// already due (tokio calls this `MissedTickBehavior`).
///
/// Period 10, first deadline 10, the first run takes 25 (so the tick at 20 is missed and
/// the one at 30 too), later runs take no time:
///
/// ```text
/// policy   run starts            next deadline after the late run (started at 35)
/// Burst    10, 35, 35, 40, 50    previous deadline + period: 30 is due too, runs at once
/// Delay    10, 35, 45, 55        the late run's start + period
/// Skip     10, 35, 40, 50        the first tick (10 + k × 10) strictly after 35
/// ```
///
/// The first overdue run always starts as soon as possible. A run late by less than one
/// period has missed no tick and keeps the schedule under every policy.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MissedTicks {
    /// Java's behaviour: late runs go back to back until the schedule has caught up.
    #[default]
    Burst,
    /// The schedule shifts: the next deadline is the late run's start plus the period.
    Delay,
    /// Missed ticks are dropped: the next deadline is the next tick of the original
    /// schedule after the late run's start.
    Skip,
}

/// What a periodic run says comes next, for the closures of
/// [`schedule_periodic_with_context`](crate::ScheduledThreadPoolExecutor::schedule_periodic_with_context).
/// Times are in the executor's clock.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// The spec's rule decides (fixed rate, fixed delay or trigger), as for a plain
    /// periodic closure.
    Continue,
    /// The next run is due this long after this run ends. The rule goes on from there: a
    /// fixed-rate task counts its periods from the new deadline.
    After(Duration),
    /// The next run is due at this instant (the past: as soon as possible).
    At(Instant),
    /// No more runs: the future completes with `Ok(())`.
    Stop,
}

/// What a periodic task does when a run panics.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OnPanic {
    /// Java's behaviour: no further run; the future yields `Err(TaskError::Panicked)`.
    #[default]
    Stop,
    /// The panic is counted (`PoolStats::panicked_count`), traced at `error`, shown to the
    /// trigger as `TriggerContext::panicked`, and runs go on.
    Continue,
}

/// A task's schedule: the one description of "when does it run" that the spec, the
/// task and the worker share. `Once` is a one-shot; the others are periodic rules.
#[derive(Clone, Debug)]
pub(crate) enum Schedule {
    /// A one-shot (Java: `schedule`, `execute`, `submit`).
    Once,
    /// Java `scheduleAtFixedRate`: previous deadline + period, with a missed-tick policy.
    FixedRate(Duration, MissedTicks),
    /// Java `scheduleWithFixedDelay`: end of the previous run + delay.
    FixedDelay(Duration),
    /// A user trigger.
    Trigger(SharedTrigger),
}

/// A period in the largest unit that holds it whole: `1d`, `2h`, `1m`, `90s`, `1.5s`,
/// `300ms` (days, hours and minutes when exact; otherwise `Duration`'s `Debug`).
fn human(d: Duration) -> String {
    const UNITS: [(u64, &str); 3] = [(86_400, "d"), (3_600, "h"), (60, "m")];
    if d.subsec_nanos() == 0 && d.as_secs() > 0 {
        for (secs, unit) in UNITS {
            if d.as_secs() % secs == 0 {
                return format!("{}{unit}", d.as_secs() / secs);
            }
        }
    }
    format!("{d:?}")
}

/// The times of a run, in ticks, for [`Schedule::next`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunTimes {
    pub(crate) scheduled: Ticks,
    pub(crate) started: Ticks,
    pub(crate) finished: Ticks,
    pub(crate) runs: u64,
    pub(crate) panicked: bool,
}

impl Schedule {
    /// How it schedules ([`TaskInfo::kind`](crate::TaskInfo::kind)).
    pub(crate) fn kind(&self) -> crate::stats::TaskKind {
        match self {
            Schedule::Once => crate::stats::TaskKind::Once,
            Schedule::FixedRate(..) => crate::stats::TaskKind::FixedRate,
            Schedule::FixedDelay(_) => crate::stats::TaskKind::FixedDelay,
            Schedule::Trigger(_) => crate::stats::TaskKind::Trigger,
        }
    }

    /// The `kind` field of the `task` span.
    pub(crate) fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// The schedule in words ([`TaskInfo::schedule`](crate::TaskInfo::schedule)): `once`,
    /// `fixed rate 1m`, `fixed delay 5s` (with the missed-tick policy where it is not the
    /// default), or what the trigger last said of itself ([`Trigger::describe`], kept by
    /// [`SharedTrigger`]; `trigger` until it answers). Runs no user code.
    pub(crate) fn describe(&self) -> String {
        match self {
            Schedule::Once => String::from("once"),
            Schedule::FixedRate(period, MissedTicks::Burst) => {
                format!("fixed rate {}", human(*period))
            }
            Schedule::FixedRate(period, MissedTicks::Delay) => {
                format!("fixed rate {}, missed ticks delay", human(*period))
            }
            Schedule::FixedRate(period, MissedTicks::Skip) => {
                format!("fixed rate {}, missed ticks skipped", human(*period))
            }
            Schedule::FixedDelay(delay) => format!("fixed delay {}", human(*delay)),
            Schedule::Trigger(trigger) => trigger.described(),
        }
    }

    /// The task that holds this schedule ended: a trigger's holding is let go at once
    /// (`SharedTrigger::retire`), so a trigger that keeps its own task's handle does not
    /// keep the task, and itself, alive.
    pub(crate) fn retire(&self) {
        if let Schedule::Trigger(trigger) = self {
            trigger.retire();
        }
    }

    /// Every schedule but `Once` runs more than once.
    pub(crate) fn is_periodic(&self) -> bool {
        !matches!(self, Schedule::Once)
    }

    /// A zero period or delay (rejected with `ScheduleError::ZeroPeriod`).
    pub(crate) fn is_zero(&self) -> bool {
        match self {
            Schedule::FixedRate(d, _) | Schedule::FixedDelay(d) => d.is_zero(),
            Schedule::Once | Schedule::Trigger(_) => false,
        }
    }

    /// Whether `next` needs the time a run finished (else the clock is not read again).
    pub(crate) fn needs_finish_time(&self) -> bool {
        matches!(self, Schedule::FixedDelay(_) | Schedule::Trigger(_))
    }

    /// The next deadline after a run; `Ok(None)` when the task is over (a one-shot, or a
    /// trigger that finishes), `Err` when the trigger panicked.
    pub(crate) fn next(&self, t: RunTimes, clock: &Clock) -> Result<Option<Ticks>, Caught> {
        // A fixed rule's next deadline lies strictly after `floor`; only saturation at the
        // clock's cap can break that, and then the task is never due again (C1).
        let after =
            |floor: Ticks, next: Ticks| Ok(Some(if next > floor { next } else { clock::NEVER }));
        match self {
            Schedule::Once => Ok(None),
            Schedule::FixedRate(period, missed) => {
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
            Schedule::FixedDelay(delay) => after(t.finished, clock::add(t.finished, *delay)),
            Schedule::Trigger(trigger) => {
                let ctx = TriggerContext {
                    scheduled: clock.instant_of(t.scheduled),
                    started: clock.instant_of(t.started),
                    finished: clock.instant_of(t.finished),
                    runs: t.runs,
                    panicked: t.panicked,
                };
                // A trigger that is gone (its task ended meanwhile) has no next run.
                let next = trigger.call(|t| t.next_deadline(&ctx))?.flatten();
                Ok(next.map(|at| clock.ticks_of(at)))
            }
        }
    }
}

/// Where a periodic task made from a spec starts ([`Schedule::first`]).
pub(crate) struct First {
    /// The first deadline: `Ok(None)` if the task ends before any run (a trigger with
    /// no first deadline), `Err` if the trigger's `first_deadline` panicked.
    pub(crate) deadline: Result<Option<Ticks>, Caught>,
    /// The trigger has no first deadline and says that is a mistake
    /// ([`Trigger::refuse_if_never_due`]): the task is refused.
    pub(crate) never_due: bool,
    /// After a catch-up run at once, the deadline the run after it keeps: a fixed-rate
    /// task's first deadline on its own schedule (its grid).
    pub(crate) then: Option<Ticks>,
    /// `now + initial_delay`: the earliest a run may come, and the deadline a task that
    /// never runs holds.
    pub(crate) earliest: Ticks,
}

impl Schedule {
    /// The first deadline of a periodic task made from a spec with this schedule, at the
    /// clock reading `now`: `now + initial_delay`, or the trigger's `first_deadline` of
    /// it, or with `aligned` the next point of the wall-clock grid `k · period + offset`
    /// from it; with `catch_up_now` (`Exclusive::catch_up` found the job's last run
    /// missed) a run at once, and for a fixed-rate task the grid's deadline after it.
    pub(crate) fn first(
        &self,
        clock: &Clock,
        now: Ticks,
        initial_delay: Duration,
        aligned: Option<Duration>,
        catch_up_now: bool,
    ) -> First {
        let earliest = clock::add(now, initial_delay);
        let mut never_due = false;
        let mut deadline = match self {
            Schedule::Trigger(trigger) => {
                // Under its own spec's mutex, as `next_deadline` (U1's exception): the
                // clock, then the first deadline, and if there is none, what that means.
                let wall = WallClock::of(clock);
                let first = trigger.call(|t| {
                    t.use_clock(&wall);
                    let at = t.first_deadline(clock.instant_of(earliest));
                    (at, at.is_none() && t.refuse_if_never_due())
                });
                first.map(|called| {
                    let (at, refuse) = called.unwrap_or((None, false)); // gone: no run
                    never_due = refuse;
                    at.map(|at| clock.ticks_of(at))
                })
            }
            Schedule::FixedRate(period, _) | Schedule::FixedDelay(period) => {
                Ok(Some(match aligned {
                    Some(offset) => {
                        // The wall-clock time now: the system's, or a manual clock's.
                        let wall = WallClock::of(clock).now().1;
                        clock::add(
                            earliest,
                            to_grid(wall, clock::since(earliest, now), *period, offset),
                        )
                    }
                    None => earliest,
                }))
            }
            Schedule::Once => Ok(Some(earliest)),
        };
        // `Exclusive::catch_up`: one run at once, and then the first deadline as scheduled
        // for a fixed-rate task (its grid), through the `rescheduled` cell a run's
        // re-queue reads instead of the rule; a fixed-delay task goes on from the run's end.
        let mut then = None;
        if let (true, Ok(Some(at))) = (catch_up_now, &mut deadline) {
            if matches!(self, Schedule::FixedRate(..)) && *at > now {
                then = Some(*at);
            }
            *at = (*at).min(now);
        }
        First {
            deadline,
            never_due,
            then,
            earliest,
        }
    }
}

/// `Periodic::aligned`: how long after the instant `ahead` past the wall-clock time `wall`
/// the next point of the grid `k · period + offset` (after the Unix epoch) comes; zero if
/// that instant is on it. `period` is not zero (checked before).
fn to_grid(
    wall: std::time::SystemTime,
    ahead: std::time::Duration,
    period: std::time::Duration,
    offset: std::time::Duration,
) -> std::time::Duration {
    let p = period.as_nanos();
    let at = match wall.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => (d + ahead).as_nanos(),
        Err(e) => ahead.as_nanos().saturating_sub(e.duration().as_nanos()), // a clock before 1970
    };
    let phase = (at + p - offset.as_nanos() % p) % p;
    let wait = if phase == 0 { 0 } else { p - phase };
    std::time::Duration::from_nanos(wait as u64) // < period, which fits
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

/// The limits a periodic task applies after each run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) on_panic: OnPanic,
    pub(crate) max_lateness: Option<Duration>,
    pub(crate) max_runs: Option<u64>,
}

/// How a fallible periodic task waits after a failed run
/// ([`Periodic::backoff`]): the first failure waits `base`, each further failure in a row
/// twice as long as the one before, never more than `max`; a run that succeeds resets it.
/// With `jitter` j, each wait is shortened by a random fraction up to j (so that many tasks
/// failing together do not retry together).
///
/// ```
/// use schedpool::Backoff;
/// use std::time::Duration;
///
/// let b = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
/// assert_eq!(b.delay_after(1), Duration::from_millis(100));
/// assert_eq!(b.delay_after(3), Duration::from_millis(400));
/// assert_eq!(b.delay_after(40), Duration::from_secs(5)); // capped
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    jitter: f64,
}

impl Backoff {
    /// Waits of `base`, doubling after each further failure, at most `max` (a `max`
    /// below `base` is taken as `base`). No jitter.
    #[must_use]
    pub fn new(base: Duration, max: Duration) -> Self {
        Backoff {
            base,
            max: max.max(base),
            jitter: 0.0,
        }
    }

    /// Shortens each wait by a random fraction of it, up to `fraction` (clamped to
    /// `0.0..=1.0`; not a number counts as 0).
    #[must_use]
    pub fn jitter(mut self, fraction: f64) -> Self {
        self.jitter = if fraction.is_nan() {
            0.0
        } else {
            fraction.clamp(0.0, 1.0)
        };
        self
    }

    /// The wait after `failures` failed runs in a row (1 for the first), before jitter.
    pub fn delay_after(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(63);
        self.base
            .checked_mul(1u32.checked_shl(doublings).unwrap_or(u32::MAX))
            .map_or(self.max, |d| d.min(self.max))
    }

    /// The wait after `failures` failures, with jitter; `unit` is a random number in
    /// `[0, 1)`.
    pub(crate) fn delay(&self, failures: u32, unit: f64) -> Duration {
        self.delay_after(failures).mul_f64(1.0 - self.jitter * unit)
    }
}

/// What a fallible periodic task does after a failed run (`Periodic::backoff`,
/// `Periodic::stop_after_errors`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OnError {
    pub(crate) backoff: Option<Backoff>,
    pub(crate) stop_after: Option<u32>,
}

/// A specification for
/// [`schedule_periodic`](crate::ScheduledThreadPoolExecutor::schedule_periodic): the
/// rule (fixed rate, fixed delay or a [`Trigger`]) and its options.
///
/// ```
/// use schedpool::{ManualClock, MissedTicks, OnPanic, Periodic, ScheduledThreadPoolExecutor};
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(1).clock(clock.clone()).build();
/// let runs = Arc::new(AtomicU32::new(0));
/// let r = runs.clone();
/// let spec = Periodic::at_fixed_rate(Duration::from_secs(60))
///     .missed_ticks(MissedTicks::Skip)
///     .on_panic(OnPanic::Continue)
///     .max_runs(3);
/// let fut = pool.schedule_periodic(spec, move || { r.fetch_add(1, Ordering::SeqCst); }).unwrap();
/// for _ in 0..3 {
///     assert!(pool.wait_idle(Duration::from_secs(10)));
///     clock.advance(Duration::from_secs(60));
/// }
/// fut.get().unwrap(); // completes with Ok(()) after three runs
/// assert_eq!(runs.load(Ordering::SeqCst), 3);
/// ```
#[derive(Clone, Debug)]
pub struct Periodic {
    pub(crate) schedule: Schedule,
    pub(crate) initial_delay: Duration,
    pub(crate) limits: Limits,
    /// For fallible tasks only (`schedule_fallible`).
    pub(crate) on_error: OnError,
    /// `Periodic::name`.
    pub(crate) name: Option<Arc<str>>,
    /// `Periodic::exclusive`.
    pub(crate) exclusive: Option<Exclusive>,
    /// `Periodic::aligned`: the offset of the wall-clock grid the first deadline is put on.
    pub(crate) aligned: Option<Duration>,
    /// The first run is due at once (`Exclusive::catch_up` found the job's last run more
    /// than one period old); set by the handle, not by users.
    pub(crate) catch_up_now: bool,
}

impl Periodic {
    fn new(schedule: Schedule) -> Self {
        Periodic {
            schedule,
            initial_delay: Duration::ZERO,
            limits: Limits {
                on_panic: OnPanic::Stop,
                max_lateness: None,
                max_runs: None,
            },
            on_error: OnError::default(),
            name: None,
            exclusive: None,
            aligned: None,
            catch_up_now: false,
        }
    }

    /// Runs every `period`, measured from the previous run's deadline (Java:
    /// `scheduleAtFixedRate`). A zero period is refused with `ScheduleError::ZeroPeriod`.
    ///
    /// The first run is at once, as the spec's [`initial_delay`](Self::initial_delay)
    /// is zero unless set: a job whose first run needs something not up yet (a server
    /// still starting) sets one, `Periodic::at_fixed_rate(p).initial_delay(p)`.
    #[must_use]
    pub fn at_fixed_rate(period: Duration) -> Self {
        Self::new(Schedule::FixedRate(period, MissedTicks::Burst))
    }

    /// Runs `delay` after the end of each run (Java: `scheduleWithFixedDelay`). A zero
    /// delay is refused with `ScheduleError::ZeroPeriod`.
    ///
    /// The first run is at once, as for [`at_fixed_rate`](Self::at_fixed_rate), unless
    /// an [`initial_delay`](Self::initial_delay) is set.
    #[must_use]
    pub fn with_fixed_delay(delay: Duration) -> Self {
        Self::new(Schedule::FixedDelay(delay))
    }

    /// Runs at the deadlines `trigger` computes. Clones of the spec share the trigger.
    /// It is dropped when the last of them and of the tasks made from them lets go of
    /// it; a task lets go when it ends (its run's end, a cancel, `max_runs`, shutdown),
    /// so a trigger may keep its own task's handle without keeping the task alive.
    #[must_use]
    pub fn with_trigger<G: Trigger>(trigger: G) -> Self {
        Self::new(Schedule::Trigger(SharedTrigger::new(Box::new(trigger))))
    }

    /// Delay before the first run (for a trigger: the earliest first deadline). Default 0.
    #[must_use]
    pub fn initial_delay(mut self, d: Duration) -> Self {
        self.initial_delay = d;
        self
    }

    /// What a fixed-rate task does after missed ticks; ignored by the other rules.
    /// Default [`MissedTicks::Burst`] (Java).
    #[must_use]
    pub fn missed_ticks(mut self, m: MissedTicks) -> Self {
        if let Schedule::FixedRate(_, missed) = &mut self.schedule {
            *missed = m;
        }
        self
    }

    /// What a panicking run does to the task. Default [`OnPanic::Stop`] (Java).
    #[must_use]
    pub fn on_panic(mut self, p: OnPanic) -> Self {
        self.limits.on_panic = p;
        self
    }

    /// A run that would start more than `d` after its deadline is skipped: it is counted
    /// in `PoolStats::skipped_runs` and the next deadline follows the rule as if the
    /// skipped run had started and finished when it was skipped.
    #[must_use]
    pub fn max_lateness(mut self, d: Duration) -> Self {
        self.limits.max_lateness = Some(d);
        self
    }

    /// A name for the task: carried by its `task` span and its panic and failure logs,
    /// and shown by [`scheduled_tasks`](crate::ScheduledThreadPoolExecutor::scheduled_tasks).
    /// With feature `metrics` its runs also go to a series of their own,
    /// `schedpool_task_run_duration_seconds{task}`, while the pool has room for the name
    /// (`Builder::max_task_series`, 256 names by default; later names share
    /// `task="other"`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(Arc::from(name.into()));
        self
    }

    /// For a fallible task
    /// ([`schedule_fallible`](crate::ScheduledThreadPoolExecutor::schedule_fallible)):
    /// after a failed run, the next one is due after `backoff`'s wait (from the end of
    /// the failed run) instead of by the rule; a run that succeeds goes back to the rule.
    /// Without it, a failed run is followed by the rule's next run. Other tasks ignore it.
    #[must_use]
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.on_error.backoff = Some(backoff);
        self
    }

    /// For a fallible task: after `n` failed runs in a row the task stops, and its future
    /// completes with `Ok(Err(error))`, the last error (`0` counts as 1). Without it,
    /// errors never stop the task. Other tasks ignore it.
    #[must_use]
    pub fn stop_after_errors(mut self, n: u32) -> Self {
        self.on_error.stop_after = Some(n.max(1));
        self
    }

    /// Makes the task exclusive across the nodes that share `exclusive`'s lock: before
    /// each run it takes the lock (a [`Lease`](crate::cluster::Lease) of at most
    /// `at_most_for`); if another node holds it, or the lock's store cannot be reached,
    /// the run is skipped, not queued, and the task keeps its schedule. Skipped runs do
    /// not count as runs (`max_runs`, [`TaskContext::runs`](crate::TaskContext::runs));
    /// they are counted in `PoolStats::lock_skipped` and `lock_failed`. See
    /// [`cluster`](crate::cluster) for the protocol.
    #[must_use]
    pub fn exclusive(mut self, exclusive: Exclusive) -> Self {
        self.exclusive = Some(exclusive);
        self
    }

    /// Puts the ticks on the wall clock's grid: the first deadline is the first instant,
    /// no earlier than `initial_delay` from now, whose wall-clock time is a whole multiple
    /// of the period after the Unix epoch, plus `offset` (taken modulo the period). A
    /// fixed-rate task then keeps that grid (`every 1 min` runs at hh:mm:00 + `offset`);
    /// a fixed-delay task starts on it. Nodes that schedule the same aligned job at
    /// different times share its ticks without arithmetic of their own, which is what
    /// [`exclusive`](Self::exclusive) needs to run each tick once cluster-wide. Ignored by
    /// a trigger (it has its own deadlines).
    ///
    /// The wall-clock time is read once, when the task is scheduled: a later step of the
    /// system clock moves the grid, not the task (a [`CronTrigger`](crate::CronTrigger),
    /// whose deadlines are wall-clock times, follows such a step). On a
    /// [`ManualClock`](crate::ManualClock) it is the clock's fake
    /// [`wall_time`](crate::ManualClock::wall_time).
    ///
    /// ```
    /// use schedpool::{Periodic, ScheduledThreadPoolExecutor};
    /// use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
    ///
    /// let pool = ScheduledThreadPoolExecutor::new(1);
    /// let every_minute = Periodic::at_fixed_rate(Duration::from_secs(60))
    ///     .aligned(Duration::from_secs(5)); // at hh:mm:05
    /// let fut = pool.schedule_periodic(every_minute, || ()).unwrap();
    /// // Where the first run falls on the wall clock:
    /// let wall = SystemTime::now() + fut.deadline().duration_since(Instant::now());
    /// let secs = wall.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    /// assert!((secs - 5.0).rem_euclid(60.0) < 0.5 || (secs - 5.0).rem_euclid(60.0) > 59.5);
    /// # fut.cancel();
    /// ```
    #[must_use]
    pub fn aligned(mut self, offset: Duration) -> Self {
        self.aligned = Some(offset);
        self
    }

    /// After `n` runs the future completes with `Ok(())` (`0`: at once, without a run).
    /// Panicked runs under [`OnPanic::Continue`] count; skipped runs do not.
    #[must_use]
    pub fn max_runs(mut self, n: u64) -> Self {
        self.limits.max_runs = Some(n);
        self
    }
}

#[cfg(all(test, not(loom)))]
mod grid_tests {
    use super::to_grid;
    use std::time::{Duration, UNIX_EPOCH};

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_first_deadline_is_the_next_point_of_the_grid() {
        let ms = Duration::from_millis;
        let at = |secs: u64, millis: u64| UNIX_EPOCH + Duration::from_secs(secs) + ms(millis);
        // On a whole second: on the grid.
        assert_eq!(
            to_grid(at(100, 0), Duration::ZERO, S, Duration::ZERO),
            Duration::ZERO
        );
        // 300 ms past: 700 ms to the next second.
        assert_eq!(
            to_grid(at(100, 300), Duration::ZERO, S, Duration::ZERO),
            ms(700)
        );
        // An offset of 250 ms: 950 ms from 300 ms past to 1.250.
        assert_eq!(to_grid(at(100, 300), Duration::ZERO, S, ms(250)), ms(950));
        // An offset beyond the period is taken modulo it.
        assert_eq!(to_grid(at(100, 300), Duration::ZERO, S, ms(2250)), ms(950));
        // The earliest allowed instant is `ahead` past the wall time read.
        assert_eq!(to_grid(at(100, 300), ms(800), S, Duration::ZERO), ms(900));
        // A minute grid from 12:00:59.
        let m = Duration::from_secs(60);
        assert_eq!(
            to_grid(at(43_259, 0), Duration::ZERO, m, Duration::ZERO),
            Duration::from_secs(1)
        );
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::human;
    use std::time::Duration;

    #[test]
    fn periods_read_in_the_largest_whole_unit() {
        let s = Duration::from_secs;
        assert_eq!(human(s(60)), "1m");
        assert_eq!(human(s(3600)), "1h");
        assert_eq!(human(s(86_400)), "1d");
        assert_eq!(human(s(2 * 86_400 + 3600)), "49h");
        assert_eq!(human(s(90)), "90s");
        assert_eq!(human(s(5)), "5s");
        assert_eq!(human(Duration::from_millis(1500)), "1.5s");
        assert_eq!(human(Duration::from_millis(300)), "300ms");
        assert_eq!(human(Duration::ZERO), "0ns");
    }
}
