//! Scheduling control beyond Java: the [`Periodic`] spec, [`MissedTicks`], [`OnPanic`],
//! [`Trigger`] and [`TriggerContext`].
//!
//! # Design
//! The Java-style `schedule_at_fixed_rate` and `schedule_with_fixed_delay` are
//! [`Periodic`] specs with the defaults, so one code path runs every periodic task. The
//! spec is turned into a `Rule` (fixed rate with a missed-tick policy, fixed delay, or a
//! user trigger) plus limits (`max_lateness`, `max_runs`, `on_panic`) that the task
//! applies after each run; see `task.rs`.
//!
//! A fixed-rate run has *missed* ticks when it starts a whole period or more after its
//! deadline (the next tick was already due). Only then do the policies differ; a run late
//! by less than a period keeps the schedule under every policy, so real-clock jitter never
//! makes `Delay` drift.

use std::fmt;
use std::time::{Duration, Instant};

use crate::sync::{Arc, Mutex};

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

/// What a periodic task does when a run panics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OnPanic {
    /// Java's behaviour: no further run; the future yields `Err(TaskError::Panicked)`.
    #[default]
    Stop,
    /// The panic is counted (`PoolStats::panicked_count`), traced at `error`, shown to the
    /// trigger as `TriggerContext::panicked`, and runs go on.
    Continue,
}

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
    /// This run panicked (only seen with [`OnPanic::Continue`]).
    pub panicked: bool,
}

/// Computes the deadlines of a periodic task.
///
/// ```
/// use schedpool::{Trigger, TriggerContext};
/// use std::time::{Duration, Instant};
///
/// /// Doubles the pause after each run, five runs in all.
/// struct Backoff(Duration);
/// impl Trigger for Backoff {
///     fn next_deadline(&mut self, ctx: &TriggerContext) -> Option<Instant> {
///         self.0 *= 2;
///         (ctx.runs < 5).then(|| ctx.finished + self.0)
///     }
/// }
///
/// let t0 = Instant::now();
/// let ctx = TriggerContext { scheduled: t0, started: t0, finished: t0, runs: 1, panicked: false };
/// assert_eq!(Backoff(Duration::from_secs(1)).next_deadline(&ctx), Some(t0 + Duration::from_secs(2)));
/// ```
pub trait Trigger: Send + 'static {
    /// The first deadline, given the earliest allowed (`now + initial_delay`); `None`
    /// finishes the task without a run. The default returns `earliest`.
    fn first_deadline(&mut self, earliest: Instant) -> Option<Instant> {
        Some(earliest)
    }

    /// The next deadline after a run, or `None` to finish (the future completes with
    /// `Ok(())`). A deadline in the past runs as soon as possible.
    fn next_deadline(&mut self, ctx: &TriggerContext) -> Option<Instant>;
}

/// A trigger shared by the clones of one [`Periodic`].
#[derive(Clone)]
pub(crate) struct SharedTrigger(pub(crate) Arc<Mutex<Box<dyn Trigger>>>);

impl fmt::Debug for SharedTrigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Trigger")
    }
}

/// The schedule rule of a [`Periodic`].
#[derive(Clone, Debug)]
pub(crate) enum Every {
    FixedRate(Duration),
    FixedDelay(Duration),
    Trigger(SharedTrigger),
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
    pub(crate) every: Every,
    pub(crate) initial_delay: Duration,
    pub(crate) missed_ticks: MissedTicks,
    pub(crate) on_panic: OnPanic,
    pub(crate) max_lateness: Option<Duration>,
    pub(crate) max_runs: Option<u64>,
}

impl Periodic {
    fn new(every: Every) -> Self {
        Periodic {
            every,
            initial_delay: Duration::ZERO,
            missed_ticks: MissedTicks::Burst,
            on_panic: OnPanic::Stop,
            max_lateness: None,
            max_runs: None,
        }
    }

    /// Runs every `period`, measured from the previous run's deadline (Java:
    /// `scheduleAtFixedRate`). A zero period is refused with `ScheduleError::ZeroPeriod`.
    pub fn at_fixed_rate(period: Duration) -> Self {
        Self::new(Every::FixedRate(period))
    }

    /// Runs `delay` after the end of each run (Java: `scheduleWithFixedDelay`). A zero
    /// delay is refused with `ScheduleError::ZeroPeriod`.
    pub fn with_fixed_delay(delay: Duration) -> Self {
        Self::new(Every::FixedDelay(delay))
    }

    /// Runs at the deadlines `trigger` computes. Clones of the spec share the trigger.
    pub fn with_trigger<G: Trigger>(trigger: G) -> Self {
        Self::new(Every::Trigger(SharedTrigger(Arc::new(Mutex::new(
            Box::new(trigger),
        )))))
    }

    /// Delay before the first run (for a trigger: the earliest first deadline). Default 0.
    pub fn initial_delay(mut self, d: Duration) -> Self {
        self.initial_delay = d;
        self
    }

    /// What a fixed-rate task does after missed ticks; ignored by the other rules.
    /// Default [`MissedTicks::Burst`] (Java).
    pub fn missed_ticks(mut self, m: MissedTicks) -> Self {
        self.missed_ticks = m;
        self
    }

    /// What a panicking run does to the task. Default [`OnPanic::Stop`] (Java).
    pub fn on_panic(mut self, p: OnPanic) -> Self {
        self.on_panic = p;
        self
    }

    /// A run that would start more than `d` after its deadline is skipped: it is counted
    /// in `PoolStats::skipped_runs` and the next deadline follows the rule as if the
    /// skipped run had started and finished when it was skipped.
    pub fn max_lateness(mut self, d: Duration) -> Self {
        self.max_lateness = Some(d);
        self
    }

    /// After `n` runs the future completes with `Ok(())` (`0`: at once, without a run).
    /// Panicked runs under [`OnPanic::Continue`] count; skipped runs do not.
    pub fn max_runs(mut self, n: u64) -> Self {
        self.max_runs = Some(n);
        self
    }
}
