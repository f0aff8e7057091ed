//! The time zone a cron expression is read in ([`Zone`]), and the bridge that lets croner
//! search in it: [`Second`], croner's `CronDateTime` over a jiff time zone, and
//! [`next_match`], one search.
//!
//! # Design
//! croner walks the wall clock and asks its date type, through the `CronDateTime` trait,
//! to resolve each candidate wall-clock time in the zone: one instant, two (a fold, when
//! the clock is set back) or none (a gap, when it is set forward). Its own backends are
//! chrono and jiff 0.2; this crate implements the trait for [`Second`], a whole second on
//! the time line with its wall-clock reading in a borrowed jiff 1 [`TimeZone`]. That keeps
//! one code path for UTC, the local zone and named zones, orders the two instants of a
//! fold by jiff's rule (earlier first, which chrono's `Local` reverses), and clones no
//! time zone while croner searches. croner walks a gap a second at a time; [`InZone`]
//! keeps the last gap met, so that only the first second of it asks the zone's rules.

use std::cell::Cell;
use std::cmp::Ordering;
use std::fmt;

use croner::errors::CronError as CronerError;
use croner::{CivilDate, CivilDateTime, CivilTime, Cron, CronDateTime, Resolution, Weekday};
use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::Timestamp;

/// The most croner searches one deadline takes; see [`next_match`].
const SEARCHES: u32 = 3;

/// The time zone an expression is read in.
#[derive(Clone)]
pub(super) enum Zone {
    Utc,
    /// The system's zone: the `TZ` environment variable (an IANA name, a path or a POSIX
    /// rule), else `/etc/localtime`. jiff caches it and looks again after a few minutes,
    /// so it is read for each search.
    Local,
    /// A zone of the tz database, by its IANA name.
    Named(TimeZone),
}

impl Zone {
    /// The zone named `name` in the tz database (the system's, else the one bundled
    /// with the crate).
    pub(super) fn named(name: &str) -> Result<Zone, jiff::Error> {
        TimeZone::get(name).map(Zone::Named)
    }

    /// The zone now (for `Local`, the system's zone as jiff last read it).
    pub(super) fn time_zone(&self) -> TimeZone {
        match self {
            Zone::Utc => TimeZone::UTC,
            Zone::Local => TimeZone::system(),
            Zone::Named(tz) => tz.clone(),
        }
    }
}

impl Zone {
    /// The zone's name for a task list: `UTC`, `local time`, or the IANA name.
    pub(super) fn name(&self) -> &str {
        match self {
            Zone::Utc => "UTC",
            Zone::Local => "local time",
            Zone::Named(tz) => tz.iana_name().unwrap_or("a named zone"),
        }
    }
}

impl fmt::Debug for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Zone::Utc => f.write_str("Utc"),
            Zone::Local => f.write_str("Local"),
            Zone::Named(tz) => f
                .debug_tuple("Named")
                .field(&tz.iana_name().unwrap_or("?"))
                .finish(),
        }
    }
}

/// The first time `cron` (its years pruned: `calendar.rs`) matches in `zone` at or after
/// (`inclusive`) or strictly after `from`, or `None` if there is none before croner's
/// last year or beyond jiff's range.
///
/// Matches are whole seconds: the search starts from the second `from` falls in,
/// including it only if `from` is exactly that second, which gives the answer an exact
/// search would, since croner reads its start to the second. croner's answer is after
/// its start (forwards it walks only forwards, and over a fold it searches the second
/// pass after the first); should it ever not be after `from`, the search goes on after
/// it, at most [`SEARCHES`] times, so CR1 and CR2 hold whatever croner returns.
pub(super) fn next_match(
    cron: &Cron,
    zone: &TimeZone,
    from: Timestamp,
    inclusive: bool,
) -> Option<Timestamp> {
    let wanted = |at: Timestamp| if inclusive { at >= from } else { at > from };
    let zone = &InZone::new(zone);
    // `as_second` truncates towards zero; before 1970 a fraction belongs to the second
    // below.
    let floor = from.as_second() - i64::from(from.subsec_nanosecond() < 0);
    let mut start = Second::new(floor, zone)?;
    let mut include = inclusive && from.subsec_nanosecond() == 0;
    // No date matches before the first year left in the pruned year field (CR5): when
    // that is a later year, croner starts at its first instant instead of stepping
    // there a year at a time; when there is none, there is no match.
    let year = start.civil.year();
    let first_year = super::calendar::next_year(&cron.pattern, year)?;
    if first_year > year {
        let new_year = jiff::civil::date(i16::try_from(first_year).ok()?, 1, 1)
            .to_zoned_datetime(zone.zone.clone())
            .ok()?;
        start = Second::new(new_year.timestamp().as_second(), zone)?;
        include = true;
    }
    for _ in 0..SEARCHES {
        // croner's errors: no match before its last year, or a time beyond its range;
        // either way, no deadline (CR3).
        let found = cron.find_next_occurrence(&start, include).ok()?;
        let at = Timestamp::from_second(found.second).ok()?;
        if wanted(at) {
            return Some(at);
        }
        start = found;
        include = false;
    }
    None
}

/// A time zone as one search sees it: the zone, and the last gap a resolution fell in.
///
/// croner walks an interval expression through a gap (and a fixed-time one past it) a
/// second at a time, resolving each wall-clock time; an hour's gap is 3,600 lookups in
/// the zone's rules, about 0.7 ms (`docs/BENCHMARKS.md`, "Cron searches"). The first
/// one finds the gap's ends and keeps them, and the rest answer from them.
pub(super) struct InZone<'z> {
    zone: &'z TimeZone,
    /// The wall-clock times `[start, end)` of the last gap met, if any.
    gap: Cell<Option<(CivilDateTime, CivilDateTime)>>,
}

impl<'z> InZone<'z> {
    fn new(zone: &'z TimeZone) -> Self {
        InZone {
            zone,
            gap: Cell::new(None),
        }
    }

    /// Whether `civil` lies in the last gap met.
    fn in_known_gap(&self, civil: CivilDateTime) -> bool {
        self.gap
            .get()
            .is_some_and(|(start, end)| start <= civil && civil < end)
    }

    /// Keeps the ends of the gap that `local` lies in, given the offsets before and after
    /// it: the wall clock jumps from `before` to `after` at the transition `t`, so the
    /// times `[t + before, t + after)` never happen, and `local − after` is before `t`.
    fn learn_gap(&self, local: DateTime, before: Offset, after: Offset) {
        let Ok(early) = after.to_timestamp(local) else {
            return;
        };
        if let Some(t) = self.zone.following(early).next() {
            let start = civil_of(before.to_datetime(t.timestamp())).0;
            let end = civil_of(after.to_datetime(t.timestamp())).0;
            self.gap.set(Some((start, end)));
        }
    }
}

/// A whole second on the time line, with its wall-clock reading in `zone`: what croner
/// searches over (its `CronDateTime`).
#[derive(Clone)]
pub(super) struct Second<'z> {
    /// Seconds since the Unix epoch.
    second: i64,
    /// The wall-clock date and time of `second` in `zone`.
    civil: CivilDateTime,
    weekday: Weekday,
    zone: &'z InZone<'z>,
}

impl<'z> Second<'z> {
    /// The second `second` (since the Unix epoch) in `zone`; `None` beyond jiff's range.
    fn new(second: i64, zone: &'z InZone<'z>) -> Option<Self> {
        let at = Timestamp::from_second(second).ok()?;
        Some(Second::at(second, zone.zone.to_datetime(at), zone))
    }

    /// The second `second`, whose wall-clock reading in `zone` is `local`.
    fn at(second: i64, local: DateTime, zone: &'z InZone<'z>) -> Self {
        let (civil, weekday) = civil_of(local);
        Second {
            second,
            civil,
            weekday,
            zone,
        }
    }
}

/// jiff's wall-clock time as croner's, with its weekday.
fn civil_of(local: DateTime) -> (CivilDateTime, Weekday) {
    let civil = CivilDateTime::new(
        // jiff's parts are in range, as croner's unchecked constructors need.
        CivilDate::from_parts_unchecked(
            i32::from(local.year()),
            local.month().unsigned_abs().into(),
            local.day().unsigned_abs().into(),
        ),
        CivilTime::from_parts_unchecked(
            local.hour().unsigned_abs().into(),
            local.minute().unsigned_abs().into(),
            local.second().unsigned_abs().into(),
        ),
    );
    let weekday = Weekday::from_days_from_sunday(
        local
            .weekday()
            .to_sunday_zero_offset()
            .unsigned_abs()
            .into(),
    );
    (civil, weekday)
}

impl CronDateTime for Second<'_> {
    fn to_civil(&self) -> CivilDateTime {
        self.civil
    }

    fn civil_weekday(&self) -> Weekday {
        self.weekday
    }

    /// The instants whose wall-clock reading in the zone is `civil`: jiff's
    /// disambiguation, the earlier instant of a fold first.
    fn resolve_civil(&self, civil: CivilDateTime) -> Result<Resolution<Self>, CronerError> {
        if self.zone.in_known_gap(civil) {
            return Ok(Resolution::Gap);
        }
        let local = to_jiff(civil)?;
        let ambiguous = self.zone.zone.to_ambiguous_timestamp(local);
        let second = |t: Result<Timestamp, jiff::Error>| {
            t.map(|t| Second::at(t.as_second(), local, self.zone))
                .map_err(|_| CronerError::InvalidTime)
        };
        Ok(match ambiguous.offset() {
            AmbiguousOffset::Unambiguous { .. } => {
                Resolution::Single(second(ambiguous.unambiguous())?)
            }
            AmbiguousOffset::Fold { .. } => {
                Resolution::Ambiguous(second(ambiguous.earlier())?, second(ambiguous.later())?)
            }
            AmbiguousOffset::Gap { before, after } => {
                self.zone.learn_gap(local, before, after);
                Resolution::Gap
            }
        })
    }

    fn checked_add_seconds(&self, seconds: i64) -> Option<Self> {
        Second::new(self.second.checked_add(seconds)?, self.zone)
    }

    fn cmp_instant(&self, other: &Self) -> Ordering {
        self.second.cmp(&other.second)
    }
}

/// croner's wall-clock time as jiff's; an error beyond jiff's years (-9999 to 9999).
fn to_jiff(civil: CivilDateTime) -> Result<DateTime, CronerError> {
    let part = |v: u32| i8::try_from(v).map_err(|_| CronerError::InvalidTime);
    let year = i16::try_from(civil.year()).map_err(|_| CronerError::InvalidDate)?;
    DateTime::new(
        year,
        part(civil.month())?,
        part(civil.day())?,
        part(civil.hour())?,
        part(civil.minute())?,
        part(civil.second())?,
        0,
    )
    .map_err(|_| CronerError::InvalidDate)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What jiff says of `civil` in `zone`: a gap, one instant or a fold's two.
    fn jiff_says(zone: &TimeZone, civil: CivilDateTime) -> Vec<i64> {
        let local = to_jiff(civil).unwrap();
        let ambiguous = zone.to_ambiguous_timestamp(local);
        match ambiguous.offset() {
            AmbiguousOffset::Gap { .. } => vec![],
            AmbiguousOffset::Unambiguous { .. } => {
                vec![ambiguous.unambiguous().unwrap().as_second()]
            }
            AmbiguousOffset::Fold { .. } => vec![
                ambiguous.earlier().unwrap().as_second(),
                ambiguous.later().unwrap().as_second(),
            ],
        }
    }

    fn says(r: Resolution<Second<'_>>) -> Vec<i64> {
        match r {
            Resolution::Gap => vec![],
            Resolution::Single(s) => vec![s.second],
            Resolution::Ambiguous(a, b) => vec![a.second, b.second],
        }
    }

    /// The gap kept by the first resolution answers every later one as jiff would, for
    /// each second around an hour's gap (New York), a half hour's (Lord Howe), and a fold.
    #[test]
    fn the_kept_gap_answers_as_jiff_does() {
        for (name, y, m, d) in [
            ("America/New_York", 2024, 3, 10),
            ("Australia/Lord_Howe", 2024, 10, 6),
            ("Europe/Berlin", 2024, 10, 27),
        ] {
            let zone = TimeZone::get(name).unwrap();
            let in_zone = InZone::new(&zone);
            let origin = Second::new(0, &in_zone).unwrap();
            let mut gaps = 0;
            for s in 0..4 * 3600 {
                let civil = civil_of(
                    jiff::civil::date(y, m, d).at(1, 0, 0, 0) + jiff::SignedDuration::from_secs(s),
                )
                .0;
                let ours = says(origin.resolve_civil(civil).unwrap());
                gaps += usize::from(ours.is_empty());
                assert_eq!(ours, jiff_says(&zone, civil), "{name} {civil}");
            }
            assert!(
                name == "Europe/Berlin" || gaps >= 1800,
                "{name}: {gaps} seconds in the gap"
            );
        }
    }
}
