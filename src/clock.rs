//! Time: the real monotonic clock, [`ManualClock`] for tests, and the one saturating
//! helper that does all deadline arithmetic.
//!
//! # Design
//! Inside the crate a deadline is a [`Ticks`] value: nanoseconds since the clock's origin,
//! a `u64`. That keeps heap entries small (8 bytes instead of a 16-byte `Instant`), makes
//! comparisons one instruction, and gives overflow a single place to be handled:
//! [`add`] saturates at [`FAR_FUTURE`] (about 500 years), which is the crate's "practically
//! never" (the public contract asks for a cap of no less than 100 years; Java caps at
//! about 146).
//! Instants before the origin map to tick 0, so a deadline in the past is simply due.
//!
//! A [`Clock`] is either real (`Instant::now` minus an origin) or manual (an atomic offset
//! that only [`ManualClock::advance`] moves). A manual clock keeps a list of listeners
//! (queues built on it); `advance` calls each so a leader waiting for a deadline in
//! virtual time re-checks the clock at once.
//!
//! **Wall-clock time.** Deadlines never read the wall clock, but a trigger that works in
//! calendar time (`CronTrigger`) must map the executor's instants to it. [`WallClock`]
//! hands a trigger one reading of both: `(Instant::now(), SystemTime::now())` on the real
//! clock; on a manual clock, its instant and a fake wall clock that `advance` moves with
//! it and [`ManualClock::set_wall_time`] steps alone, either way, as an NTP step or a
//! suspend moves the real one (monotonic time stands still in a suspend while wall time
//! goes on). The fake wall clock is `wall_origin + offset`: one field for the step, so
//! `advance` stays a single store and a reading of both is taken under `wall_origin`'s
//! lock. `wall_origin` is filled from `SystemTime::now()` at the first reading (standing
//! for the creation time), not at creation, so a manual clock that no calendar trigger
//! reads never touches the real wall clock (an interpreter that isolates the program from
//! it, such as Miri, has none).
//!
//! # Invariants
//! - C1: clock readings and every sum made by [`add`] never exceed [`FAR_FUTURE`], so
//!   `origin + ticks` never overflows `Instant`. One deadline lies beyond it on purpose:
//!   [`NEVER`] (a periodic rule with no representable next run), which no reading
//!   reaches; [`Clock::instant_of`] clamps it, and the sharded queue publishes it as a
//!   head that is never due (`NEVER_DUE` in `queue/sharded.rs`).
//! - C2: a manual clock's time never goes backwards (`advance` only adds, saturating).
//! - C3: `advance` publishes the new time before it notifies any listener, and each
//!   listener re-reads the time under its own lock, so no waiter misses an advance.
//!
//! # Ordering
//! `offset` is written with `Release` in `advance` and read with `Acquire` in `now`:
//! a thread that sees the new time also sees whatever the advancing thread did before.
//! Waiters do not rely on it for wake-ups: C3 goes through the listener's mutex.

use std::fmt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::sync::Ordering;
use crate::sync::{Arc, AtomicU64, Mutex, Weak};

/// Nanoseconds since a clock's origin.
pub(crate) type Ticks = u64;

/// The largest deadline: about 500 years after the origin (C1).
pub(crate) const FAR_FUTURE: Ticks = 500 * 365 * 24 * 3600 * 1_000_000_000;

/// A deadline that is never due: beyond `FAR_FUTURE`, which no clock passes. A fixed
/// periodic rule uses it when the clock has reached the cap and no later deadline can be
/// represented (otherwise the task would run back to back forever).
pub(crate) const NEVER: Ticks = u64::MAX;

/// Saturating `ticks + d`: the only place deadline arithmetic happens (C1).
#[inline]
pub(crate) fn add(ticks: Ticks, d: Duration) -> Ticks {
    let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    ticks.saturating_add(d).min(FAR_FUTURE)
}

/// `Duration` from `earlier` to `later`, zero if `later` is not after `earlier`.
#[inline]
pub(crate) fn since(later: Ticks, earlier: Ticks) -> Duration {
    Duration::from_nanos(later.saturating_sub(earlier))
}

/// The real-time instant `d` from now, or `None` if that is beyond what `Instant` holds
/// (callers then wait without a limit). Used for timeouts, which never follow a
/// `ManualClock`.
#[inline]
pub(crate) fn timeout_at(d: Duration) -> Option<Instant> {
    Instant::now().checked_add(d)
}

/// Something that must re-check the time when a [`ManualClock`] advances.
pub(crate) trait AdvanceListener: Send + Sync {
    /// Called after the clock moved (C3). Must not call back into the clock's listener list.
    fn on_advance(&self);
}

/// The time source of an executor or queue.
#[derive(Clone, Debug)]
pub(crate) enum Clock {
    /// `Instant::now()` relative to `origin`.
    Real { origin: Instant },
    /// Virtual time.
    Manual(ManualClock),
}

impl Clock {
    /// The real monotonic clock, with its origin now.
    pub(crate) fn real() -> Self {
        Clock::Real {
            origin: Instant::now(),
        }
    }

    fn origin(&self) -> Instant {
        match self {
            Clock::Real { origin } => *origin,
            Clock::Manual(m) => m.inner.origin,
        }
    }

    /// The current time in ticks.
    #[inline]
    pub(crate) fn now(&self) -> Ticks {
        match self {
            Clock::Real { origin } => {
                let d = origin.elapsed();
                add(0, d)
            }
            Clock::Manual(m) => m.ticks(),
        }
    }

    /// The deadline `d` from now.
    #[inline]
    pub(crate) fn deadline_after(&self, d: Duration) -> Ticks {
        add(self.now(), d)
    }

    /// Ticks of an `Instant`; instants before the origin are tick 0 (due).
    pub(crate) fn ticks_of(&self, at: Instant) -> Ticks {
        add(0, at.saturating_duration_since(self.origin()))
    }

    /// The real time of a reading `ticks` of this clock: its `Instant` on the real clock
    /// (no second read); on a manual clock, whose time is not real, a fresh reading of
    /// the real one.
    pub(crate) fn real_instant_of(&self, ticks: Ticks) -> Instant {
        match self {
            Clock::Real { .. } => self.instant_of(ticks),
            Clock::Manual(_) => Instant::now(),
        }
    }

    /// The `Instant` of a tick value (never overflows: C1; [`NEVER`] is clamped to
    /// [`FAR_FUTURE`]).
    pub(crate) fn instant_of(&self, ticks: Ticks) -> Instant {
        let origin = self.origin();
        let d = Duration::from_nanos(ticks.min(FAR_FUTURE));
        origin.checked_add(d).unwrap_or(origin)
    }

    /// Registers a listener to be told of every advance (manual clocks only).
    pub(crate) fn register(&self, listener: Weak<dyn AdvanceListener>) {
        if let Clock::Manual(m) = self {
            let mut listeners = m.inner.listeners.lock();
            listeners.retain(|l| l.strong_count() > 0);
            listeners.push(listener);
        }
    }
}

/// Virtual time for tests: an executor or queue built on it sees time move only when
/// [`advance`](ManualClock::advance) is called.
///
/// A `ManualClock` starts frozen at the `Instant` it was created. Clones share the same
/// time. Only deadlines follow it: timeouts (`wait_timeout`, `await_termination`,
/// `poll_timeout`) and `keep_alive` stay in real time.
///
/// ```
/// use schedpool::{ManualClock, ScheduledThreadPoolExecutor};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(1).clock(clock.clone()).build();
/// let fut = pool.schedule(Duration::from_secs(3600), || "an hour later").unwrap();
/// assert!(!fut.wait_timeout(Duration::from_millis(20))); // virtual time has not moved
/// clock.advance(Duration::from_secs(3600));
/// assert_eq!(fut.get().unwrap(), "an hour later");
/// ```
#[derive(Clone)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

struct ManualInner {
    origin: Instant,
    /// Ticks since `origin`; only `advance` writes it (C2).
    offset: AtomicU64,
    /// Queues and executors built on this clock (C3). Dead entries are pruned on register.
    listeners: Mutex<Vec<Weak<dyn AdvanceListener>>>,
    /// The fake wall clock's time at `origin`: its time now is this plus `offset`. `None`
    /// until the first reading fills it from `SystemTime::now()`; `set_wall_time` writes
    /// it; readers of both clocks hold this lock while they read `offset`, so they get a
    /// pair that `set_wall_time` made or left whole.
    wall_origin: Mutex<Option<SystemTime>>,
}

impl ManualClock {
    /// A clock frozen at the current `Instant`, its fake wall clock at the current
    /// `SystemTime` (see [`wall_time`](Self::wall_time) and
    /// [`set_wall_time`](Self::set_wall_time)).
    pub fn new() -> Self {
        ManualClock {
            inner: Arc::new(ManualInner {
                origin: Instant::now(),
                offset: AtomicU64::new(0),
                listeners: Mutex::new(Vec::new()),
                wall_origin: Mutex::new(None),
            }),
        }
    }

    /// The clock's current time.
    pub fn now(&self) -> Instant {
        Clock::Manual(self.clone()).instant_of(self.ticks())
    }

    #[inline]
    pub(crate) fn ticks(&self) -> Ticks {
        // Acquire: pairs with the Release in `advance`.
        self.inner.offset.load(Ordering::Acquire)
    }

    /// Moves time forward by `by` (saturating at the far future) and wakes every executor
    /// and [`DelayQueue`](crate::DelayQueue) that uses this clock, so tasks due by the new
    /// time run without any real-time waiting.
    pub fn advance(&self, by: Duration) {
        // The listener lock also serialises concurrent advances, keeping C2 simple.
        let listeners: Vec<Arc<dyn AdvanceListener>> = {
            let listeners = self.inner.listeners.lock();
            let now = self.inner.offset.load(Ordering::Relaxed);
            // Release: pairs with the Acquire in `ticks` (C3: published before notifying).
            self.inner.offset.store(add(now, by), Ordering::Release);
            listeners.iter().filter_map(Weak::upgrade).collect()
        };
        for listener in &listeners {
            listener.on_advance();
        }
    }

    /// The clock's fake wall-clock time: the `SystemTime` at the clock's creation, moved
    /// by every [`advance`](Self::advance) and set by
    /// [`set_wall_time`](Self::set_wall_time). The real wall clock is read at the first
    /// reading, not when the clock is made, and stands for the creation time: a
    /// `ManualClock` that nothing asks for wall time works where no real wall clock can
    /// be read (Miri with its isolation on). Triggers that work in calendar time
    /// ([`CronTrigger`](crate::CronTrigger)) read it, through [`WallClock`], when they run
    /// on an executor built on this clock.
    pub fn wall_time(&self) -> SystemTime {
        self.now_and_wall().1
    }

    /// Steps the fake wall clock to `wall`, forward or back, while the monotonic time
    /// ([`now`](Self::now)) stays where it is: what an NTP step or an operator does to the
    /// system clock, or, forward, what a suspend does (the monotonic clock stops while
    /// the machine sleeps; the wall clock does not). Later advances move both again.
    ///
    /// ```
    /// use schedpool::ManualClock;
    /// use std::time::{Duration, UNIX_EPOCH};
    ///
    /// let clock = ManualClock::new();
    /// let noon = UNIX_EPOCH + Duration::from_secs(1_717_243_200); // 2024-06-01 12:00 UTC
    /// clock.set_wall_time(noon);
    /// clock.advance(Duration::from_secs(60));
    /// assert_eq!(clock.wall_time(), noon + Duration::from_secs(60));
    /// // A suspend of an hour: the wall clock jumps, monotonic time stands still.
    /// let before = clock.now();
    /// clock.set_wall_time(clock.wall_time() + Duration::from_secs(3600));
    /// assert_eq!((clock.now(), clock.wall_time()), (before, noon + Duration::from_secs(3660)));
    /// ```
    pub fn set_wall_time(&self, wall: SystemTime) {
        let mut origin = self.inner.wall_origin.lock();
        let since = Duration::from_nanos(self.ticks());
        // A wall time too early to hold the elapsed time before it (before about 292
        // billion BC) keeps `wall` as the origin: the reading is then off by `since`.
        *origin = Some(wall.checked_sub(since).unwrap_or(wall));
    }

    /// The clock's instant and its fake wall-clock time, read together.
    pub(crate) fn now_and_wall(&self) -> (Instant, SystemTime) {
        let mut origin = self.inner.wall_origin.lock();
        let ticks = self.ticks();
        let since = Duration::from_nanos(ticks);
        // The real wall clock read now stands for its reading at the clock's creation.
        let origin = *origin.get_or_insert_with(SystemTime::now);
        // Within `FAR_FUTURE` of a `SystemTime`, which holds far more: no overflow in
        // practice; a wall clock set near its end stays there.
        let wall = origin.checked_add(since).unwrap_or(origin);
        (Clock::Manual(self.clone()).instant_of(ticks), wall)
    }
}

/// The executor's clock as a [`Trigger`](crate::Trigger) sees it: the current instant,
/// read together with the wall-clock time at that instant. On the real clock that is
/// `(Instant::now(), SystemTime::now())`; on a [`ManualClock`], its
/// [`now`](ManualClock::now) and its fake [`wall_time`](ManualClock::wall_time).
///
/// The executor hands it to a trigger when it schedules the task
/// ([`Trigger::use_clock`](crate::Trigger::use_clock)), so that a trigger working in
/// calendar time follows the executor's clock, real or virtual.
///
/// ```
/// use schedpool::{ManualClock, WallClock};
/// use std::time::{Duration, UNIX_EPOCH};
///
/// let clock = ManualClock::new();
/// clock.set_wall_time(UNIX_EPOCH + Duration::from_secs(1_000_000));
/// let wall = WallClock::from(clock.clone());
/// clock.advance(Duration::from_secs(5));
/// assert_eq!(wall.now(), (clock.now(), UNIX_EPOCH + Duration::from_secs(1_000_005)));
/// ```
#[derive(Clone, Debug)]
pub struct WallClock {
    manual: Option<ManualClock>,
}

impl WallClock {
    /// The real clocks: `Instant::now()` and `SystemTime::now()`.
    pub fn system() -> Self {
        WallClock { manual: None }
    }

    /// The current instant and the wall-clock time at it, read together.
    pub fn now(&self) -> (Instant, SystemTime) {
        match &self.manual {
            None => (Instant::now(), SystemTime::now()),
            Some(m) => m.now_and_wall(),
        }
    }

    /// The wall clock of an executor's clock.
    pub(crate) fn of(clock: &Clock) -> Self {
        match clock {
            Clock::Real { .. } => WallClock::system(),
            Clock::Manual(m) => WallClock::from(m.clone()),
        }
    }
}

/// A manual clock's instants with its fake wall clock.
impl From<ManualClock> for WallClock {
    fn from(clock: ManualClock) -> Self {
        WallClock {
            manual: Some(clock),
        }
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("elapsed", &Duration::from_nanos(self.ticks()))
            .field("wall_time", &self.wall_time())
            .finish()
    }
}

/// `t` in RFC 3339, UTC, to the millisecond (`2026-12-05T09:30:00.250Z`): the task list's
/// wall-clock times. Times before 1970 or after 9999 are clamped to those years' ends.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    // 253402300799: 9999-12-31T23:59:59Z.
    let secs = since.as_secs().min(253_402_300_799);
    let millis = if secs == since.as_secs() {
        since.subsec_millis()
    } else {
        999
    };
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days that are not negative).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097; // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March first
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_utc_to_the_millisecond() {
        let at = |secs, ms| UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(ms);
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(at(1_717_243_200, 250)), "2024-06-01T12:00:00.250Z");
        assert_eq!(
            rfc3339(at(951_782_400, 0)),
            "2000-02-29T00:00:00.000Z",
            "leap day"
        );
        assert_eq!(rfc3339(at(4_107_542_399, 999)), "2100-02-28T23:59:59.999Z");
        assert_eq!(
            rfc3339(at(4_107_542_400, 0)),
            "2100-03-01T00:00:00.000Z",
            "no leap"
        );
        assert_eq!(
            rfc3339(UNIX_EPOCH - Duration::from_secs(1)),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(rfc3339(at(u64::MAX / 2, 0)), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn add_saturates_at_far_future() {
        assert_eq!(add(0, Duration::MAX), FAR_FUTURE);
        assert_eq!(add(FAR_FUTURE, Duration::from_secs(1)), FAR_FUTURE);
        assert_eq!(add(u64::MAX, Duration::ZERO), FAR_FUTURE);
        assert_eq!(add(5, Duration::from_nanos(7)), 12);
        let years_100 = Duration::from_secs(100 * 365 * 24 * 3600);
        assert!(add(0, years_100) < FAR_FUTURE, "the cap is above 100 years");
    }

    #[test]
    fn far_future_converts_to_an_instant() {
        let clock = Clock::real();
        let at = clock.instant_of(add(0, Duration::MAX));
        assert!(at > Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600));
        assert_eq!(clock.ticks_of(at), FAR_FUTURE);
    }

    #[test]
    fn past_instants_are_tick_zero() {
        let past = Instant::now();
        let clock = Clock::real();
        assert_eq!(clock.ticks_of(past), 0);
        assert_eq!(since(3, 5), Duration::ZERO);
    }

    #[test]
    fn manual_clock_moves_only_on_advance() {
        let c = ManualClock::new();
        let t0 = c.now();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(c.now(), t0);
        c.advance(Duration::from_secs(3600));
        assert_eq!(c.now(), t0 + Duration::from_secs(3600));
        c.advance(Duration::MAX);
        assert_eq!(c.ticks(), FAR_FUTURE);
        let clone = c.clone();
        assert_eq!(clone.now(), c.now());
    }

    #[test]
    fn the_fake_wall_clock_moves_with_advance_and_steps_alone() {
        let c = ManualClock::new();
        let wall0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        c.set_wall_time(wall0);
        let t0 = c.now();
        c.advance(Duration::from_secs(10));
        assert_eq!(
            c.now_and_wall(),
            (
                t0 + Duration::from_secs(10),
                wall0 + Duration::from_secs(10)
            )
        );
        // Back and forward, the monotonic time standing still.
        c.set_wall_time(wall0);
        assert_eq!(c.now_and_wall(), (t0 + Duration::from_secs(10), wall0));
        c.advance(Duration::from_secs(5));
        assert_eq!(c.wall_time(), wall0 + Duration::from_secs(5));
        // A wall clock before the epoch.
        let early = SystemTime::UNIX_EPOCH - Duration::from_secs(86_400);
        c.set_wall_time(early);
        assert_eq!(c.wall_time(), early);
        // Clones share it, and so does a `WallClock` made from one.
        let wall = WallClock::from(c.clone());
        c.advance(Duration::from_secs(1));
        assert_eq!(wall.now(), c.clone().now_and_wall());
        assert_eq!(
            WallClock::of(&Clock::Manual(c.clone())).now(),
            c.now_and_wall()
        );
        // A clock first read after an advance: the real wall clock stands for the
        // creation, and the advance moves it.
        let before = SystemTime::now();
        let late = ManualClock::new();
        late.advance(Duration::from_secs(3600));
        let w = late.wall_time();
        assert!(w >= before + Duration::from_secs(3600));
        assert!(w <= SystemTime::now() + Duration::from_secs(3600));
        let before = SystemTime::now();
        let (_, real) = WallClock::of(&Clock::real()).now();
        assert!(real >= before);
    }

    #[test]
    fn advance_notifies_live_listeners() {
        struct Count(std::sync::atomic::AtomicUsize);
        impl AdvanceListener for Count {
            fn on_advance(&self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let c = ManualClock::new();
        let clock = Clock::Manual(c.clone());
        let l = Arc::new(Count(Default::default()));
        let weak: Weak<dyn AdvanceListener> = Arc::downgrade(&l) as Weak<dyn AdvanceListener>;
        clock.register(weak);
        let second = Arc::new(Count(Default::default()));
        clock.register(Arc::downgrade(&second) as Weak<dyn AdvanceListener>);
        c.advance(Duration::from_millis(1));
        c.advance(Duration::from_millis(1));
        assert_eq!(
            l.0.load(Ordering::SeqCst),
            2,
            "a second listener keeps the first"
        );
        assert_eq!(second.0.load(Ordering::SeqCst), 2);
        drop(l);
        c.advance(Duration::from_millis(1)); // a dropped listener is skipped
        assert_eq!(second.0.load(Ordering::SeqCst), 3);
        let third = Arc::new(Count(Default::default()));
        clock.register(Arc::downgrade(&third) as Weak<dyn AdvanceListener>);
        assert_eq!(
            c.inner.listeners.lock().len(),
            2,
            "a registration prunes the dropped listeners"
        );
    }
}
