//! Cron schedules (feature `cron`): [`CronTrigger`], a [`Trigger`] whose deadlines are the
//! times a cron expression matches, in UTC, the local time zone or a named one, and
//! [`CronError`].
//!
//! # Design
//! croner (4.x) parses the expression and finds the next matching wall-clock time,
//! searching through this crate's own date type over a jiff time zone (`zone.rs`);
//! `calendar.rs` prunes the expression's years once, at parse, so that no search takes
//! long; this file maps between the executor's monotonic `Instant`s and wall-clock time.
//! `docs/DESIGN.md` says why croner and jiff.
//!
//! **One anchor, re-anchored when the clocks part.** An `Instant` has no calendar, so
//! every deadline goes through wall-clock time and back: `wall = anchor.wall + (instant −
//! anchor.instant)`, with one (`Instant`, `SystemTime`) pair, the anchor. Instants before
//! the anchor map to the anchor, as clock.rs maps instants before a clock's origin to
//! tick 0. Each deadline computation first reads both clocks again ([`WallClock`]: the
//! real ones, or the executor's `ManualClock` and its fake wall clock, handed over by
//! [`Trigger::use_clock`]) and keeps the anchor while the reading agrees with it to
//! within [`REANCHOR_AFTER`]; past that, the reading becomes the anchor (CR4). So a step
//! of the system clock (NTP, an operator) or a suspend (the monotonic clock stops while
//! the machine sleeps, the wall clock does not) is followed from the next deadline on,
//! while the slow slewing of NTP, and the jitter between two clock reads, never moves a
//! deadline: re-reading the pair at every computation would let deadlines wobble by the
//! read delay, and the threshold keeps one mapping for a whole run of matches. The cost:
//! a deadline already queued keeps its instant, so the run due next after a step or a
//! suspend comes that much early or late; the deadlines after it follow the new wall
//! clock. After a step back, matches of the repeated stretch run again, as they would in
//! a fall-back hour. [`CronTrigger::anchored_at`] pins the anchor instead (tests and
//! simulations): it is never re-read.
//!
//! **Whole seconds.** Cron matches whole seconds. `first_deadline(earliest)` is the first
//! match at or after `earliest`; `next_deadline` the first strictly after the later of the
//! run's `scheduled` and `finished` (`zone::next_match` says how a fractional start is
//! searched).
//!
//! **Daylight saving** follows croner's rules, which sort expressions into two kinds:
//! *fixed-time*, whose seconds, minutes and hours are each one plain value
//! (`0 30 2 * * *`), and *interval*, any other (`*`, a step, a range or a list in one of
//! them: `0 */15 * * * *`, `0 0 * * * *`).
//! - In a gap (a spring-forward night's skipped hour) a fixed-time match runs at the
//!   first valid time after it (02:30 runs at 03:00); interval matches in the gap are
//!   skipped.
//! - In a fold (a fall-back night's repeated hour) a fixed-time match runs once, at the
//!   earlier instant; an interval expression runs at every match of both passes.
//!
//! croner's walk of a fold needs the two instants in time order; `zone.rs` gives them in
//! jiff's order (earlier first), so the workaround that croner 2 on chrono's `Local`
//! needed (chrono returns that pair reversed) is gone.
//!
//! **Never matching.** An expression that matches no date at all (31 April; 29 February
//! in listed common years) is a [`CronError`] at parse (`calendar.rs`). One whose matches
//! are all past (`0 0 0 1 1 * 2020`) has no first deadline, and says that is a mistake
//! ([`Trigger::refuse_if_never_due`]), so `schedule_periodic` refuses it with
//! `ScheduleError::NeverDue` instead of completing at once with `Ok(())`.
//!
//! # Invariants
//! - CR1: `first_deadline(e)` is `None` or at or after `e`.
//! - CR2: `next_deadline(ctx)` is `None` or strictly after `max(ctx.scheduled,
//!   ctx.finished)`, so the next run never repeats the deadline just served.
//! - CR3: nothing here panics, whatever the expression, zone, clock or instant: a bad
//!   expression or zone name is a [`CronError`]; later failures (no match before
//!   croner's last year, a time out of range) are `None`.
//! - CR4: unless pinned by `anchored_at`, each deadline is computed with an anchor that
//!   agrees with a reading of the trigger's clock taken for that computation, to within
//!   [`REANCHOR_AFTER`].

mod calendar;
mod zone;

use std::fmt;
use std::time::{Duration, Instant, SystemTime};

use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use jiff::Timestamp;

use crate::clock::WallClock;
use crate::schedule::{Trigger, TriggerContext};
use zone::Zone;

/// How far the wall clock may drift from the anchor's mapping before the trigger
/// re-anchors (CR4): more than clock reads jitter or NTP slews between two matches,
/// less than any step worth following.
const REANCHOR_AFTER: Duration = Duration::from_secs(1);

/// A [`Trigger`] that runs a task whenever a cron expression matches (feature `cron`).
///
/// The syntax is croner's: five fields (`minute hour day-of-month month day-of-week`),
/// six with seconds first, or seven with a year last (`0 0 9 1 1 * 2030`: 09:00 on
/// 1 January 2030; years 1 to 4999, with lists, ranges and steps), with lists, ranges and
/// steps (`1,15`, `9-17`, `*/5`, and `0/5` for `0-59/5`), names (`JAN`, `MON`), `L` (last
/// day of the month, or the last given weekday: `5L`), `W` (nearest weekday: `15W`), `#`
/// (nth weekday: `MON#2`), `+` before the day of week (the day of month *and* the day of
/// week must match: `0 0 13 * +FRI`) and the nicknames `@yearly`, `@monthly`, `@weekly`,
/// `@daily`, `@hourly`. Otherwise, as in Vixie cron, a restricted day of month *or* a
/// restricted day of week matches.
///
/// The first deadline is the first match at or after `now + initial_delay`; after each run
/// the next is the first match strictly after the later of the run's deadline and its end,
/// so a run that overruns a match skips it instead of running late. When the matches run
/// out (a year field), the task finishes with `Ok(())`. An expression that matches no
/// date is refused by [`parse`](Self::parse); one whose matches are all past, by
/// `schedule_periodic` (`ScheduleError::NeverDue`).
///
/// The expression is read in UTC unless [`in_local_time`](Self::in_local_time) or
/// [`in_time_zone`](Self::in_time_zone) says otherwise. Deadlines are `Instant`s on the
/// executor's clock, mapped to wall-clock time through an (`Instant`, `SystemTime`) pair
/// that follows the executor's clock: a step of the system clock, or a suspend, of more
/// than a second is followed from the next deadline on (on a
/// [`ManualClock`](crate::ManualClock), its fake wall clock, which
/// [`set_wall_time`](crate::ManualClock::set_wall_time) steps). The deadline already
/// queued keeps its instant.
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
/// // The clock's wall time: 2024-01-01 00:00:30 UTC.
/// clock.set_wall_time(UNIX_EPOCH + Duration::from_secs(1_704_067_230));
/// let pool = ScheduledThreadPoolExecutor::builder().core_pool_size(1).clock(clock.clone()).build();
/// let every_minute = CronTrigger::parse("0 * * * * *")?;
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
    /// The expression as given, for `Debug` and errors.
    expr: String,
    /// croner's parse, its years pruned (`calendar.rs`).
    cron: Cron,
    zone: Zone,
    anchor: Anchor,
    /// The clock the anchor follows, or none (pinned).
    follows: Option<WallClock>,
}

impl CronTrigger {
    /// Parses a cron expression (five fields, six with seconds first, or seven with a
    /// year last), read in UTC.
    ///
    /// The trigger maps instants to wall-clock time through the real clocks until an
    /// executor hands it its own ([`Trigger::use_clock`]).
    ///
    /// ```
    /// use schedpool::CronTrigger;
    ///
    /// assert!(CronTrigger::parse("*/5 * * * *").is_ok()); // every five minutes
    /// assert!(CronTrigger::parse("*/10 * * * * *").is_ok()); // every ten seconds
    /// assert!(CronTrigger::parse("0 0 12 L * *").is_ok()); // noon, last day of the month
    /// assert!(CronTrigger::parse("0 0 9 1 1 * 2030").is_ok()); // 09:00 on 1 January 2030
    /// let err = CronTrigger::parse("0 0 25 * * *").unwrap_err(); // there is no hour 25
    /// assert!(err.to_string().contains("0 0 25 * * *"));
    /// let never = CronTrigger::parse("0 0 0 31 4 *").unwrap_err(); // 31 April
    /// assert!(never.to_string().contains("matches no date"), "{never}");
    /// ```
    ///
    /// # Errors
    /// [`CronError`] if croner refuses the expression (it shows the expression and
    /// croner's message), or if the expression matches no date before the year 5000.
    pub fn parse(expr: &str) -> Result<Self, CronError> {
        // An empty list element is an error, as in other cron implementations (croner
        // reads a lone `,` as "no value", which matches nothing).
        for (i, field) in expr.split_whitespace().enumerate() {
            if field.split(',').any(str::is_empty) {
                return Err(CronError::new(
                    expr,
                    ErrorKind::EmptyElement { field: i + 1 },
                ));
            }
        }
        let mut cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Optional)
            // `0/5` and `/5` for `0-59/5`, as croner 2 and Quartz read them.
            .sloppy_ranges(true)
            .build()
            .parse(expr)
            .map_err(|e| CronError::new(expr, ErrorKind::Syntax(e)))?;
        if let Some(field) = calendar::empty_time_field(&cron.pattern) {
            return Err(CronError::new(expr, ErrorKind::NoTime(field)));
        }
        if !calendar::prune_years(&mut cron.pattern) {
            return Err(CronError::new(expr, ErrorKind::NoDate));
        }
        let clock = WallClock::system();
        Ok(CronTrigger {
            expr: expr.to_owned(),
            cron,
            zone: Zone::Utc,
            anchor: Anchor::from(clock.now()),
            follows: Some(clock),
        })
    }

    /// Reads the expression in the local time zone instead of UTC: the `TZ` environment
    /// variable (an IANA name such as `Europe/Berlin`, or a POSIX rule such as
    /// `EST5EDT,M3.2.0,M11.1.0`), else the system's zone; read again every few minutes.
    ///
    /// Daylight-saving changes follow croner's rules. A *fixed-time* expression (one
    /// plain value in each of seconds, minutes and hours) runs at the first valid time
    /// after a gap, and once, at the earlier instant, in a fold; an *interval* expression
    /// (`*`, a step, a range or a list there) skips its matches in a gap and runs at
    /// those of both passes of a fold:
    ///
    /// ```text
    /// US Eastern time       local time                    runs at
    /// "0 30 2 * * *"        02:30 does not exist          03:00 EDT, the first valid time
    /// "0 */30 2 * * *"      02:00-02:59 do not exist      not at all that night
    /// "0 30 1 * * *"        01:30 happens twice           01:30 EDT only
    /// "0 */30 1 * * *"      01:00-01:59 happen twice      01:00, 01:30 EDT, 01:00, 01:30 EST
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

    /// Reads the expression in the time zone `name` of the IANA time zone database
    /// (`"Europe/Berlin"`, `"America/New_York"`, `"UTC"`): the system's copy where it
    /// has one (`/usr/share/zoneinfo`, or the directory in `TZDIR`), else the copy
    /// built into the crate. Daylight-saving changes follow the rules of
    /// [`in_local_time`](Self::in_local_time).
    ///
    /// ```
    /// use schedpool::{CronTrigger, Trigger};
    /// use std::time::{Duration, Instant, UNIX_EPOCH};
    ///
    /// // 09:00 on weekdays in Berlin: 08:00 UTC in winter.
    /// let t0 = Instant::now();
    /// let monday_7_utc = UNIX_EPOCH + Duration::from_secs(1_704_697_200); // 2024-01-08 07:00 UTC
    /// let mut standup = CronTrigger::parse("0 9 * * MON-FRI")?
    ///     .in_time_zone("Europe/Berlin")?
    ///     .anchored_at(t0, monday_7_utc);
    /// assert_eq!(standup.first_deadline(t0), Some(t0 + Duration::from_secs(3600)));
    ///
    /// let err = CronTrigger::parse("@daily")?.in_time_zone("Europe/Berln").unwrap_err();
    /// assert!(err.to_string().contains("Europe/Berln"), "{err}");
    /// # Ok::<(), schedpool::CronError>(())
    /// ```
    ///
    /// # Errors
    /// [`CronError`] if the database has no zone of that name.
    pub fn in_time_zone(mut self, name: &str) -> Result<Self, CronError> {
        self.zone = Zone::named(name).map_err(|e| {
            CronError::new(
                &self.expr,
                ErrorKind::Zone {
                    name: name.to_owned(),
                    reason: e.to_string(),
                },
            )
        })?;
        Ok(self)
    }

    /// For tests and simulations: pins the mapping from the executor's clock to
    /// wall-clock time, `instant` to `wall`, so that every deadline is deterministic.
    /// Other instants map at the same distance; instants before `instant` map to `wall`.
    /// A pinned trigger follows no clock: not the system's, and not the executor's
    /// ([`Trigger::use_clock`]).
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
        self.follows = None;
        self
    }

    /// The first match at or after `from` (`inclusive`), or strictly after it, with the
    /// anchor brought up to date first (CR4).
    fn search(&mut self, from: Instant, inclusive: bool) -> Option<Instant> {
        if let Some(clock) = &self.follows {
            self.anchor = self.anchor.follow(clock.now());
        }
        let from = self.anchor.wall_of(from)?;
        let found = zone::next_match(&self.cron, &self.zone.time_zone(), from, inclusive)?;
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

    /// Follows the executor's clock from now on, anchored at its current reading;
    /// a pinned trigger ([`anchored_at`](Self::anchored_at)) stays pinned.
    fn use_clock(&mut self, clock: &WallClock) {
        if self.follows.is_some() {
            self.anchor = Anchor::from(clock.now());
            self.follows = Some(clock.clone());
        }
    }

    /// `true`: an expression with no match from now on is refused by `schedule_periodic`.
    fn refuse_if_never_due(&self) -> bool {
        true
    }

    /// `cron "0 0 2 * * *" Europe/Berlin`: the expression as given and the zone it is
    /// read in (`UTC`, `local time`, or the zone's name), for a task list.
    ///
    /// ```
    /// use schedpool::{CronTrigger, Trigger};
    ///
    /// let nightly = CronTrigger::parse("0 0 2 * * *").unwrap().in_time_zone("Europe/Berlin").unwrap();
    /// assert_eq!(nightly.describe(), r#"cron "0 0 2 * * *" Europe/Berlin"#);
    /// assert_eq!(CronTrigger::parse("*/5 * * * *").unwrap().describe(), r#"cron "*/5 * * * *" UTC"#);
    /// ```
    fn describe(&self) -> String {
        format!("cron {:?} {}", self.expr, self.zone.name())
    }
}

impl fmt::Debug for CronTrigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CronTrigger")
            .field("expr", &self.expr)
            .field("zone", &self.zone)
            .field("anchor", &self.anchor)
            .field("follows", &self.follows)
            .finish()
    }
}

/// The (`Instant`, `SystemTime`) pair that maps the executor's clock to wall-clock time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Anchor {
    instant: Instant,
    wall: SystemTime,
}

impl From<(Instant, SystemTime)> for Anchor {
    fn from((instant, wall): (Instant, SystemTime)) -> Self {
        Anchor { instant, wall }
    }
}

impl Anchor {
    /// The anchor to compute with, given a fresh `reading` of both clocks: this one while
    /// the reading agrees with it to within [`REANCHOR_AFTER`], else the reading (CR4).
    fn follow(self, reading: (Instant, SystemTime)) -> Anchor {
        let (instant, wall) = reading;
        let expected = match instant.checked_duration_since(self.instant) {
            Some(ahead) => self.wall.checked_add(ahead),
            None => self.wall.checked_sub(self.instant.duration_since(instant)),
        };
        let drift = expected.map(|expected| match wall.duration_since(expected) {
            Ok(ahead) => ahead,
            Err(behind) => behind.duration(),
        });
        match drift {
            Some(drift) if drift <= REANCHOR_AFTER => self,
            _ => Anchor::from(reading),
        }
    }

    /// The wall-clock time of `at`; instants before the anchor map to the anchor. `None`
    /// beyond jiff's range (years -9999 to 9999).
    fn wall_of(&self, at: Instant) -> Option<Timestamp> {
        let since = at.saturating_duration_since(self.instant);
        Timestamp::try_from(self.wall.checked_add(since)?).ok()
    }

    /// The instant of `wall`; times before the anchor map to the anchor.
    fn instant_of(&self, wall: Timestamp) -> Option<Instant> {
        let since = SystemTime::try_from(wall)
            .ok()?
            .duration_since(self.wall)
            .unwrap_or(Duration::ZERO);
        self.instant.checked_add(since)
    }
}

/// Why [`CronTrigger::parse`] or [`CronTrigger::in_time_zone`] refused (feature `cron`).
///
/// It displays the expression and the reason:
///
/// ```
/// use schedpool::CronTrigger;
///
/// let err = CronTrigger::parse("nonsense").unwrap_err();
/// assert!(err.to_string().starts_with("invalid cron expression `nonsense`: "));
/// let err = CronTrigger::parse("0 0 0 29 2 * 2025").unwrap_err(); // not a leap year
/// assert_eq!(
///     err.to_string(),
///     "invalid cron expression `0 0 0 29 2 * 2025`: it matches no date \
///      (no day it names exists in the months and years it names, before the year 5000)"
/// );
/// ```
#[derive(Debug)]
pub struct CronError {
    expr: String,
    kind: ErrorKind,
}

#[derive(Debug)]
enum ErrorKind {
    /// croner refused the expression.
    Syntax(croner::errors::CronError),
    /// It parses, but no date matches it (`calendar.rs`).
    NoDate,
    /// It parses, but a time field (seconds, minutes, hours) matches no value.
    NoTime(&'static str),
    /// A list with an empty element (`1,,2`, `,5`, a lone `,`) in field `field` (from 1).
    EmptyElement { field: usize },
    /// The time zone database has no zone of this name.
    Zone { name: String, reason: String },
}

impl CronError {
    fn new(expr: &str, kind: ErrorKind) -> Self {
        CronError {
            expr: expr.to_owned(),
            kind,
        }
    }
}

impl fmt::Display for CronError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let expr = &self.expr;
        match &self.kind {
            ErrorKind::Syntax(e) => write!(f, "invalid cron expression `{expr}`: {e}"),
            ErrorKind::NoDate => write!(
                f,
                "invalid cron expression `{expr}`: it matches no date (no day it names exists \
                 in the months and years it names, before the year 5000)"
            ),
            ErrorKind::NoTime(field) => write!(
                f,
                "invalid cron expression `{expr}`: its {field} field matches no value, so it \
                 matches no time"
            ),
            ErrorKind::EmptyElement { field } => write!(
                f,
                "invalid cron expression `{expr}`: field {field} has an empty element in a \
                 list (a `,` with no value before or after it)"
            ),
            ErrorKind::Zone { name, reason } => write!(
                f,
                "unknown time zone `{name}` for cron expression `{expr}`: {reason}"
            ),
        }
    }
}

/// croner's and jiff's messages are part of `Display`, so `source` stays `None` and error
/// reports do not print them twice.
impl std::error::Error for CronError {}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn anchor_saturates_before_itself() {
        let now = Instant::now();
        let anchor = Anchor {
            instant: now + 10 * S,
            wall: SystemTime::UNIX_EPOCH + 1_000 * S,
        };
        assert_eq!(anchor.wall_of(now).unwrap().as_second(), 1_000);
        let before = Timestamp::from_second(999).unwrap();
        assert_eq!(anchor.instant_of(before), Some(anchor.instant));
    }

    /// CR4: a reading within `REANCHOR_AFTER` of the mapping keeps the anchor; one
    /// further off, either way, becomes it.
    #[test]
    fn an_anchor_follows_steps_but_not_drift() {
        let t0 = Instant::now();
        let anchor = Anchor {
            instant: t0,
            wall: SystemTime::UNIX_EPOCH + 1_000_000 * S,
        };
        let at = |secs: u32, wall: SystemTime| (t0 + S * secs, wall);
        let on_time = anchor.wall + 60 * S;
        // Slewed or jittered by up to a second: kept.
        for wall in [on_time, on_time + REANCHOR_AFTER, on_time - REANCHOR_AFTER] {
            assert_eq!(anchor.follow(at(60, wall)), anchor);
        }
        // Stepped forward (or a suspend), or back: the reading is the new anchor.
        for wall in [on_time + 2 * S, on_time + 3600 * S, on_time - 2 * S] {
            assert_eq!(anchor.follow(at(60, wall)), Anchor::from(at(60, wall)));
        }
        // A reading before the anchor (a pinned anchor in the future) compares the same way.
        let ahead = Anchor {
            instant: t0 + 100 * S,
            wall: anchor.wall + 100 * S,
        };
        assert_eq!(ahead.follow(at(40, anchor.wall + 40 * S)), ahead);
    }

    #[test]
    fn a_search_from_a_fractional_second_never_goes_back() {
        let cron = CronTrigger::parse("* * * * * *").unwrap().cron;
        let zone = jiff::tz::TimeZone::UTC;
        let from = Timestamp::new(1_000, 500_000_000).unwrap();
        let at = zone::next_match(&cron, &zone, from, true).unwrap();
        assert_eq!((at.as_second(), at.subsec_nanosecond()), (1_001, 0));
        let at = zone::next_match(&cron, &zone, from, false).unwrap();
        assert_eq!(at.as_second(), 1_001);
        // Before 1970 a fraction belongs to the second below.
        let from = Timestamp::new(-1_000, -500_000_000).unwrap();
        let at = zone::next_match(&cron, &zone, from, true).unwrap();
        assert_eq!(at.as_second(), -1_000);
    }
}
