//! Cron schedules (feature `cron`): [`CronTrigger`], a [`Trigger`] whose deadlines are the
//! times a cron expression matches, in UTC or the local time zone, and [`CronError`].
//!
//! # Design
//! croner parses the expression and finds the next matching wall-clock time; this file
//! maps between the executor's monotonic `Instant`s and wall-clock time, and resolves
//! local times that happen twice. `docs/DESIGN.md` says why croner.
//!
//! **One anchor.** An `Instant` has no calendar, so every deadline goes through wall-clock
//! time and back: `wall = anchor.wall + (instant − anchor.instant)`, with one (`Instant`,
//! `SystemTime`) pair read when the trigger is created (or set by
//! [`CronTrigger::anchored_at`]). Instants before the anchor map to the anchor, as
//! clock.rs maps instants before a clock's origin to tick 0. We rejected reading
//! `SystemTime::now()` for each deadline: a step of the system clock (NTP, an operator)
//! would move deadlines under a task, and could make one match look due twice; and a task
//! on a `ManualClock` would stop being deterministic. The cost: after a step of the system
//! clock, the trigger stays on the old wall clock until it is created again.
//!
//! **Whole seconds.** Cron matches whole seconds. `first_deadline(earliest)` is the first
//! match at or after `earliest`; `next_deadline` the first strictly after the later of the
//! run's `scheduled` and `finished`. A search from a fractional time starts at the whole
//! second before it, exclusive, which gives the same answer as an exact search and keeps
//! croner, which truncates to the second, from returning a time before the start.
//!
//! **Daylight saving** (local time only). A match in a gap (a local time that does not
//! exist) moves forward to the first valid local time: that is croner's rule, and 02:30 on
//! a US spring-forward night runs at 03:00. A match in a fold (a local time that happens
//! twice) takes the earlier instant. croner means to do the same (it takes the first of
//! chrono's `Ambiguous(earliest, latest)`), but chrono's `Local` returns that pair in the
//! reverse order (chrono issue #1625, open as of 0.4.45), so croner alone would take the
//! later one. [`earlier_instant`] picks the earlier of the pair itself, which holds
//! whichever order chrono uses; it keeps only instants that read back as the matched local
//! time, because chrono also calls the end of a fold (02:00 on a US fall-back night)
//! ambiguous and offers 06:00 UTC, which reads as 01:00 EST. A match whose earlier
//! instant has already passed (a search that starts in the second pass of a fold) does
//! not count; the search goes on after it, at most [`FOLD_SEARCH_LIMIT`] times. So each
//! local time runs at most once, and a frequent job pauses for the second pass.
//!
//! # Invariants
//! - CR1: `first_deadline(e)` is `None` or at or after `e`.
//! - CR2: `next_deadline(ctx)` is `None` or strictly after `max(ctx.scheduled,
//!   ctx.finished)`, so the next run never repeats the deadline just served.
//! - CR3: nothing here panics, whatever the expression, anchor or instant: a bad expression
//!   is a [`CronError`]; later failures (no match before croner's search limit, a time out
//!   of range) are `None`, which finishes the task with `Ok(())`.

use std::fmt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Local, LocalResult, TimeZone, Utc};
use croner::Cron;

use crate::schedule::{Trigger, TriggerContext};

/// The most croner searches one deadline may take while its matches fall in the already
/// passed first pass of a fold; each search moves on by at least a second. A fold is an
/// hour in nearly every zone and about a day at the worst on record (a date-line
/// change), so two days of seconds covers any fold and still bounds the work.
const FOLD_SEARCH_LIMIT: u32 = 2 * 86_400;

/// A [`Trigger`] that runs a task whenever a cron expression matches (feature `cron`).
///
/// The syntax is croner's: five fields (`minute hour day-of-month month day-of-week`) or
/// six with seconds first, with lists, ranges and steps (`1,15`, `9-17`, `*/5`), names
/// (`JAN`, `MON`), `L` (last day of the month, or the last given weekday: `5L`), `W`
/// (nearest weekday: `15W`), `#` (nth weekday: `MON#2`) and the nicknames `@yearly`,
/// `@monthly`, `@weekly`, `@daily`, `@hourly`. As in Vixie cron, a restricted day of month
/// *or* a restricted day of week matches.
///
/// The first deadline is the first match at or after `now + initial_delay`; after each run
/// the next is the first match strictly after the later of the run's deadline and its end,
/// so a run that overruns a match skips it instead of running late. If there is no next
/// match (croner searches up to the year 5000), the task finishes with `Ok(())`.
///
/// The expression is read in UTC unless [`in_local_time`](Self::in_local_time) says
/// otherwise. Deadlines are `Instant`s on the executor's clock, mapped to wall-clock time
/// through one (`Instant`, `SystemTime`) pair taken when the trigger is created; see
/// [`anchored_at`](Self::anchored_at).
///
/// Every minute on the minute, on a [`ManualClock`](crate::ManualClock):
///
/// ```
/// use schedpool::{CronTrigger, ManualClock, Periodic, ScheduledThreadPoolExecutor};
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::sync::Arc;
/// use std::time::{Duration, UNIX_EPOCH};
///
/// let clock = ManualClock::new();
/// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(1).clock(clock.clone()).build();
/// // Pretend the clock starts at 2024-01-01 00:00:30 UTC.
/// let wall = UNIX_EPOCH + Duration::from_secs(1_704_067_230);
/// let every_minute = CronTrigger::parse("0 * * * * *")?.anchored_at(clock.now(), wall);
/// let runs = Arc::new(AtomicU32::new(0));
/// let r = runs.clone();
/// let fut = pool.schedule_periodic(Periodic::with_trigger(every_minute).max_runs(3), move || {
///     r.fetch_add(1, Ordering::SeqCst);
/// })?;
/// assert_eq!(fut.deadline(), clock.now() + Duration::from_secs(30)); // 00:01:00
/// for _ in 0..3 {
///     clock.advance(Duration::from_secs(30));
///     assert!(pool.wait_idle(Duration::from_secs(10)));
///     clock.advance(Duration::from_secs(30));
///     assert!(pool.wait_idle(Duration::from_secs(10)));
/// }
/// fut.get()?; // Ok(()) after three runs: 00:01, 00:02, 00:03
/// assert_eq!(runs.load(Ordering::SeqCst), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct CronTrigger {
    /// The expression as given, for `Debug`.
    expr: String,
    cron: Cron,
    zone: Zone,
    anchor: Anchor,
}

/// The time zone an expression is read in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Zone {
    Utc,
    /// chrono's `Local`: the `TZ` environment variable, else the system's zone, looked up
    /// at each search (chrono caches it per thread and re-checks at most once a second).
    Local,
}

impl CronTrigger {
    /// Parses a cron expression (five fields, or six with seconds first), read in UTC.
    ///
    /// The trigger maps instants to wall-clock time through `(Instant::now(),
    /// SystemTime::now())`, read here.
    ///
    /// ```
    /// use schedpool::CronTrigger;
    ///
    /// assert!(CronTrigger::parse("*/5 * * * *").is_ok()); // every five minutes
    /// assert!(CronTrigger::parse("*/10 * * * * *").is_ok()); // every ten seconds
    /// assert!(CronTrigger::parse("0 0 12 L * *").is_ok()); // noon, last day of the month
    /// let err = CronTrigger::parse("0 0 25 * * *").unwrap_err(); // there is no hour 25
    /// assert!(err.to_string().contains("0 0 25 * * *"));
    /// ```
    ///
    /// # Errors
    /// [`CronError`] if croner refuses the expression; it shows the expression and
    /// croner's message.
    pub fn parse(expr: &str) -> Result<Self, CronError> {
        let cron = Cron::new(expr)
            .with_seconds_optional()
            .parse()
            .map_err(|source| CronError {
                expr: expr.to_owned(),
                source,
            })?;
        Ok(CronTrigger {
            expr: expr.to_owned(),
            cron,
            zone: Zone::Utc,
            anchor: Anchor {
                instant: Instant::now(),
                wall: SystemTime::now(),
            },
        })
    }

    /// Reads the expression in the local time zone (chrono's `Local`: the `TZ`
    /// environment variable, else the system's zone) instead of UTC.
    ///
    /// Daylight-saving changes follow croner's rules: a match in the gap of a
    /// spring-forward night moves to the first valid local time; a local time that
    /// happens twice runs once, at the earlier instant, and matches in the repeated
    /// stretch's second pass do not run (an every-15-minutes job pauses for that hour).
    ///
    /// ```text
    /// US Eastern time        local time              runs at
    /// "0 30 2 * * *"         02:30 does not exist    03:00 EDT, the first valid time
    /// "0 30 1 * * *"         01:30 happens twice     01:30 EDT, the earlier; not at 01:30 EST
    /// "0 */15 * * * *"       01:00-01:59 twice       every 15 min of the EDT pass, then 02:00 EST
    /// ```
    ///
    /// ```
    /// use schedpool::{CronTrigger, Trigger};
    /// use std::time::{Duration, Instant};
    ///
    /// let mut daily = CronTrigger::parse("0 30 2 * * *")?.in_local_time();
    /// let now = Instant::now();
    /// let next = daily.first_deadline(now).unwrap();
    /// // Within a day of now, give or take a daylight-saving change.
    /// assert!(next >= now && next <= now + Duration::from_secs(25 * 3600));
    /// # Ok::<(), schedpool::CronError>(())
    /// ```
    pub fn in_local_time(mut self) -> Self {
        self.zone = Zone::Local;
        self
    }

    /// For tests and simulations: maps `instant` on the executor's clock to the wall-clock
    /// time `wall`, replacing the pair that [`parse`](Self::parse) read. Other instants map
    /// at the same distance; instants before `instant` map to `wall`.
    ///
    /// With a [`ManualClock`](crate::ManualClock), `anchored_at(clock.now(), fixed_time)`
    /// makes every deadline deterministic.
    ///
    /// ```
    /// use schedpool::{CronTrigger, Trigger, TriggerContext};
    /// use std::time::{Duration, Instant, UNIX_EPOCH};
    ///
    /// let t0 = Instant::now();
    /// // t0 is 2024-01-01 10:02:30 UTC.
    /// let wall = UNIX_EPOCH + Duration::from_secs(1_704_103_350);
    /// let mut every_5_min = CronTrigger::parse("*/5 * * * *")?.anchored_at(t0, wall);
    /// let first = every_5_min.first_deadline(t0).unwrap();
    /// assert_eq!(first, t0 + Duration::from_secs(150)); // 10:05:00
    /// let ctx = TriggerContext { scheduled: first, started: first, finished: first, runs: 1, panicked: false };
    /// assert_eq!(every_5_min.next_deadline(&ctx), Some(t0 + Duration::from_secs(450))); // 10:10:00
    /// # Ok::<(), schedpool::CronError>(())
    /// ```
    pub fn anchored_at(mut self, instant: Instant, wall: SystemTime) -> Self {
        self.anchor = Anchor { instant, wall };
        self
    }

    /// The first match at or after `from` (`inclusive`), or strictly after it.
    fn search(&self, from: Instant, inclusive: bool) -> Option<Instant> {
        let from = self.anchor.wall_of(from)?;
        let found = match self.zone {
            Zone::Utc => next_match(&self.cron, &Utc, from, inclusive),
            Zone::Local => next_match(&self.cron, &Local, from, inclusive),
        }?;
        self.anchor.instant_of(found)
    }
}

impl Trigger for CronTrigger {
    /// The first match at or after `earliest` (CR1).
    fn first_deadline(&mut self, earliest: Instant) -> Option<Instant> {
        self.search(earliest, true)
    }

    /// The first match strictly after the later of the run's deadline and its end (CR2).
    fn next_deadline(&mut self, ctx: &TriggerContext) -> Option<Instant> {
        self.search(ctx.scheduled.max(ctx.finished), false)
    }
}

impl fmt::Debug for CronTrigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CronTrigger")
            .field("expr", &self.expr)
            .field("zone", &self.zone)
            .field("anchor", &self.anchor)
            .finish()
    }
}

/// The one (`Instant`, `SystemTime`) pair that maps the executor's clock to wall-clock
/// time.
#[derive(Clone, Copy, Debug)]
struct Anchor {
    instant: Instant,
    wall: SystemTime,
}

impl Anchor {
    /// The wall-clock time of `at`; instants before the anchor map to the anchor.
    fn wall_of(&self, at: Instant) -> Option<DateTime<Utc>> {
        let since = at.saturating_duration_since(self.instant);
        utc_of(self.wall.checked_add(since)?)
    }

    /// The instant of `wall`; times before the anchor map to the anchor.
    fn instant_of(&self, wall: DateTime<Utc>) -> Option<Instant> {
        let since = system_time_of(wall)?
            .duration_since(self.wall)
            .unwrap_or(Duration::ZERO);
        self.instant.checked_add(since)
    }
}

/// The first time `cron` matches in `zone` at or after (`inclusive`) or strictly after
/// `from`, taking the earlier instant of a local time that happens twice.
fn next_match<Tz: TimeZone>(
    cron: &Cron,
    zone: &Tz,
    from: DateTime<Utc>,
    inclusive: bool,
) -> Option<DateTime<Utc>> {
    let wanted = |at: &DateTime<Utc>| if inclusive { *at >= from } else { *at > from };
    // Matches are whole seconds: search from the second `from` falls in, including it only
    // if `from` is exactly that second (see "Whole seconds" in the module notes).
    let floor = DateTime::from_timestamp(from.timestamp(), 0)?;
    let mut cursor = floor.with_timezone(zone);
    let mut include = inclusive && floor == from;
    for _ in 0..FOLD_SEARCH_LIMIT {
        // croner's errors here are "no match before its search limit" or a time out of
        // range: either way there is no next deadline (CR3).
        let found = cron.find_next_occurrence(&cursor, include).ok()?;
        let at = earlier_instant(zone, &found);
        if wanted(&at) {
            return Some(at);
        }
        // Only in a fold: this local time already happened, at the earlier instant.
        cursor = found;
        include = false;
    }
    None
}

/// `found` in UTC; when its local time happens twice, the earlier of the two instants,
/// whichever order the time zone reports them in (module notes, "Daylight saving").
fn earlier_instant<Tz: TimeZone>(zone: &Tz, found: &DateTime<Tz>) -> DateTime<Utc> {
    let local = found.naive_local();
    // Only an instant that reads back as `local` counts: chrono also calls the end of a
    // fold ambiguous, offering an instant that reads as the fold's start.
    let reads_as_local = |t: &DateTime<Tz>| t.with_timezone(zone).naive_local() == local;
    let earlier = match zone.from_local_datetime(&local) {
        LocalResult::Ambiguous(a, b) => [a, b].into_iter().filter(reads_as_local).min(),
        _ => None,
    };
    earlier.unwrap_or_else(|| found.clone()).with_timezone(&Utc)
}

/// `t` as a chrono time, or `None` beyond chrono's range (chrono's own `From` panics there).
fn utc_of(t: SystemTime) -> Option<DateTime<Utc>> {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => DateTime::from_timestamp(i64::try_from(d.as_secs()).ok()?, d.subsec_nanos()),
        Err(before) => {
            let d = before.duration();
            let secs = i64::try_from(d.as_secs()).ok()?.checked_neg()?;
            match d.subsec_nanos() {
                0 => DateTime::from_timestamp(secs, 0),
                n => DateTime::from_timestamp(secs.checked_sub(1)?, 1_000_000_000 - n),
            }
        }
    }
}

/// `t` as a `SystemTime`, or `None` beyond what it holds.
fn system_time_of(t: DateTime<Utc>) -> Option<SystemTime> {
    let secs = Duration::from_secs(t.timestamp().unsigned_abs());
    let whole = if t.timestamp() >= 0 {
        UNIX_EPOCH.checked_add(secs)?
    } else {
        UNIX_EPOCH.checked_sub(secs)?
    };
    whole.checked_add(Duration::from_nanos(u64::from(t.timestamp_subsec_nanos())))
}

/// A cron expression that [`CronTrigger::parse`] refused (feature `cron`).
///
/// It displays the expression and croner's message:
///
/// ```
/// use schedpool::CronTrigger;
///
/// let err = CronTrigger::parse("nonsense").unwrap_err();
/// assert!(err.to_string().starts_with("invalid cron expression `nonsense`: "));
/// ```
#[derive(Debug)]
pub struct CronError {
    expr: String,
    source: croner::errors::CronError,
}

impl fmt::Display for CronError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid cron expression `{}`: {}",
            self.expr, self.source
        )
    }
}

/// croner's message is part of `Display`, so `source` stays `None` and error reports
/// do not print it twice.
impl std::error::Error for CronError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_time_round_trips_through_chrono() {
        for t in [
            UNIX_EPOCH,
            UNIX_EPOCH + Duration::new(1_704_067_200, 123_456_789),
            UNIX_EPOCH - Duration::new(86_400, 1),
            UNIX_EPOCH - Duration::from_secs(3600),
        ] {
            let utc = utc_of(t).expect("in range");
            assert_eq!(system_time_of(utc), Some(t), "{utc}");
        }
    }

    #[test]
    fn times_beyond_chrono_are_none() {
        let far = UNIX_EPOCH + Duration::from_secs(1 << 60);
        assert_eq!(utc_of(far), None);
    }

    #[test]
    fn anchor_saturates_before_itself() {
        let now = Instant::now();
        let anchor = Anchor {
            instant: now + Duration::from_secs(10),
            wall: UNIX_EPOCH + Duration::from_secs(1_000),
        };
        let wall = anchor.wall_of(now).unwrap();
        assert_eq!(wall.timestamp(), 1_000);
        let before = DateTime::from_timestamp(999, 0).unwrap();
        assert_eq!(anchor.instant_of(before), Some(anchor.instant));
    }

    #[test]
    fn a_search_from_a_fractional_second_never_goes_back() {
        let cron = Cron::new("* * * * * *")
            .with_seconds_optional()
            .parse()
            .unwrap();
        let from = DateTime::from_timestamp(1_000, 500_000_000).unwrap();
        let at = next_match(&cron, &Utc, from, true).unwrap();
        assert_eq!((at.timestamp(), at.timestamp_subsec_nanos()), (1_001, 0));
        let at = next_match(&cron, &Utc, from, false).unwrap();
        assert_eq!(at.timestamp(), 1_001);
    }
}
