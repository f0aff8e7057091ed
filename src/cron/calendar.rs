//! Which years hold a date that a cron expression matches: [`prune_years`], run once
//! when the expression is parsed, so that no search can take long.
//!
//! # Design
//! croner finds the next match by stepping the calendar: a year at a time while the
//! year does not match, a month at a time while the month does not, a day at a time
//! while the day does not. A year that matches but holds no matching day (29 February
//! in a common year, 31 April in every year) costs it a walk through that year's
//! months and days, and an expression that matches no date at all (`0 0 31 4 *`) walks
//! every year up to its limit, 5000: some 10 to 20 ms, on the thread that called
//! `schedule_periodic`.
//!
//! Whether a month holds a matching day depends on nothing but the month, whether the
//! year is a leap year, and the weekday the month begins on: croner's day test reads the
//! year only for the month's length, and every other weekday it needs from the day's
//! own. So 12 × 2 × 7 month shapes, each tried on its days with croner's own
//! `day_match`, say which months of which years hold a match; years that hold none are
//! cleared from the expression's year field. A search then starts at the first year
//! left ([`next_year`], a scan of croner's year bits), croner crosses any later cleared
//! year in one step, and it finds a match in the first year it stops in (bar the rest of
//! the year a search starts in, and a daylight-saving gap that swallows every time of a
//! day): at most two years' days and the years between, one step each. Tens of
//! microseconds at worst (`docs/BENCHMARKS.md`, "Cron searches"). An expression whose
//! field is left empty matches no date: `CronTrigger::parse` refuses it.
//!
//! # Invariants
//! - CR5: [`prune_years`] clears a year only if no date in it matches the day, month
//!   and year fields, so croner finds the same matches afterwards; it also clears the
//!   year 5000, where croner's search stops, so that "no year left" means "no match".

use croner::{CronPattern, Weekday, YEAR_LOWER_LIMIT, YEAR_UPPER_LIMIT};

/// For each month (index 0 is January) and year kind (index 1: a leap year), the
/// weekdays (bit 0 is Sunday) a month may begin on for it to hold a matching day.
type Shapes = [[u8; 2]; 12];

/// Clears from `pattern`'s year field every year that holds no matching date, and the
/// year [`YEAR_UPPER_LIMIT`] (CR5). Returns whether a year is left.
pub(super) fn prune_years(pattern: &mut CronPattern) -> bool {
    let kinds = year_kinds(&shapes(pattern));
    let mut any = false;
    // The weekday of 1 January, kept in step year by year from year 1 (a Monday in the
    // proleptic Gregorian calendar, as croner and jiff count).
    let mut new_year = Weekday::Monday;
    for year in YEAR_LOWER_LIMIT..=YEAR_UPPER_LIMIT {
        let leap = is_leap(year);
        if pattern.year_match(year).unwrap_or(false) {
            let kind = kinds[new_year.num_days_from_sunday() as usize][usize::from(leap)];
            if year < YEAR_UPPER_LIMIT && kind {
                any = true;
            } else if let Ok(position) = u16::try_from(year) {
                // A position in the field's range: croner's `unset_bit` cannot fail.
                let _ = pattern.years.unset_bit(position, ALL_BIT);
            }
        }
        new_year = new_year.shift(if leap { 366 } else { 365 });
    }
    any
}

/// The first of the time fields (seconds, minutes, hours) that matches no value, if one
/// does: such an expression matches no time, and croner would walk every day to the year
/// 5000 before saying so.
pub(super) fn empty_time_field(pattern: &CronPattern) -> Option<&'static str> {
    let any = |range: std::ops::Range<u32>, m: &dyn Fn(u32) -> bool| range.into_iter().any(m);
    if !any(0..60, &|s| pattern.second_match(s).unwrap_or(false)) {
        Some("seconds")
    } else if !any(0..60, &|m| pattern.minute_match(m).unwrap_or(false)) {
        Some("minutes")
    } else if !any(0..24, &|h| pattern.hour_match(h).unwrap_or(false)) {
        Some("hours")
    } else {
        None
    }
}

/// The first year from `year` on that is left in `pattern`'s pruned year field, if any.
/// A search that starts before it can start at its first instant: no date before it
/// matches (CR5).
pub(super) fn next_year(pattern: &CronPattern, year: i32) -> Option<i32> {
    (year.max(YEAR_LOWER_LIMIT)..YEAR_UPPER_LIMIT).find(|&y| pattern.year_match(y).unwrap_or(false))
}

/// For each weekday 1 January may fall on (index 0 is Sunday) and year kind (index 1: a
/// leap year), whether such a year holds a matching day: a year's months begin on
/// weekdays that follow from its first day and its kind alone.
fn year_kinds(shapes: &Shapes) -> [[bool; 2]; 7] {
    let mut kinds = [[false; 2]; 7];
    for (begins, kind) in kinds.iter_mut().enumerate() {
        // A common and a leap year, as in `shapes`.
        for (leap, year) in [2023, 2024].into_iter().enumerate() {
            let mut first = Weekday::from_days_from_sunday(begins as u32);
            kind[leap] = (1u32..=12).zip(shapes).any(|(month, shape)| {
                let holds = shape[leap] & (1 << first.num_days_from_sunday()) != 0;
                first = first.shift(days_in(year, month) as i32);
                holds
            });
        }
    }
    kinds
}

/// The month shapes of `pattern` that hold a matching day: months outside its month
/// field hold none.
fn shapes(pattern: &CronPattern) -> Shapes {
    let mut shapes = [[0u8; 2]; 12];
    for (month, shape) in (1u32..=12).zip(shapes.iter_mut()) {
        if !pattern.month_match(month).unwrap_or(false) {
            continue;
        }
        // A common and a leap year: only February's length differs between them, so
        // other months are tried once.
        let kinds: &[i32] = if month == 2 { &[2023, 2024] } else { &[2023] };
        for (kind, &year) in kinds.iter().enumerate() {
            let length = days_in(year, month);
            for begins in 0..7 {
                let first = Weekday::from_days_from_sunday(begins);
                let matches = (1..=length).any(|day| {
                    let weekday = first.shift(day as i32 - 1);
                    pattern
                        .day_match(year, month, day, weekday)
                        .unwrap_or(false)
                });
                if matches {
                    shape[kind] |= 1 << begins;
                }
            }
        }
        if month != 2 {
            shape[1] = shape[0];
        }
    }
    shapes
}

/// croner's bit for a plain value of a field (`ALL_BIT` in its `component.rs`, which it
/// does not export): the bit a listed year has. Should croner change it, clearing would
/// leave years listed, which costs search time but changes no match; the unit test
/// `pruning_clears_the_years` catches it.
const ALL_BIT: u8 = 1;

fn is_leap(year: i32) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in(year: i32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use croner::parser::{CronParser, Seconds, Year};

    fn parse(expr: &str) -> CronPattern {
        let parser = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Optional)
            .build();
        parser.parse(expr).unwrap().pattern
    }

    /// Whether some day of `year` matches, asked of croner day by day.
    fn brute_force(pattern: &CronPattern, year: i32) -> bool {
        let mut weekday = Weekday::Monday; // 1 January of year 1
        for y in 1..year {
            weekday = weekday.shift(if is_leap(y) { 366 } else { 365 });
        }
        for month in 1..=12 {
            for day in 1..=days_in(year, month) {
                let listed =
                    pattern.year_match(year).unwrap() && pattern.month_match(month).unwrap();
                if listed && pattern.day_match(year, month, day, weekday).unwrap() {
                    return true;
                }
                weekday = weekday.shift(1);
            }
        }
        false
    }

    /// croner reads a lone `,` as a field with no value (`CronTrigger::parse` refuses the
    /// text before croner sees it; this asks croner directly): such a time field is found.
    #[test]
    fn a_time_field_with_no_value_is_found() {
        assert_eq!(empty_time_field(&parse(", * * * * *")), Some("seconds"));
        assert_eq!(empty_time_field(&parse("0 , * * * *")), Some("minutes"));
        assert_eq!(empty_time_field(&parse(", * DEC * *")), Some("minutes"));
        assert_eq!(empty_time_field(&parse("0 0 , * * *")), Some("hours"));
        assert_eq!(
            empty_time_field(&parse("0 0 0 31 4 *")),
            None,
            "a date matter"
        );
        assert_eq!(empty_time_field(&parse("*/7 5 3 * * *")), None);
    }

    #[test]
    fn year_one_begins_on_a_monday() {
        let monday = jiff::civil::Weekday::Monday;
        assert_eq!(jiff::civil::date(1, 1, 1).weekday(), monday);
        // and so 2024 does, counted on from it as `prune_years` counts
        let mut weekday = Weekday::Monday;
        for year in 1..2024 {
            weekday = weekday.shift(if is_leap(year) { 366 } else { 365 });
        }
        assert_eq!(weekday, Weekday::Monday);
    }

    #[test]
    fn pruning_clears_the_years() {
        let mut p = parse("0 0 0 29 2 * 2023-2030");
        assert!(prune_years(&mut p));
        let kept: Vec<i32> = (2020..2035).filter(|&y| p.year_match(y).unwrap()).collect();
        assert_eq!(kept, [2024, 2028]);
        let mut never = parse("0 0 0 29 2 * 2025-2027");
        assert!(!prune_years(&mut never));
        assert!(!prune_years(&mut parse("0 0 0 31 4 *")));
        assert!(!prune_years(&mut parse("0 0 0 30 2 *")));
        assert!(
            !prune_years(&mut parse("0 0 0 1 1 * 5000")),
            "croner's last year"
        );
        let mut yearly = parse("@yearly");
        assert!(prune_years(&mut yearly));
        assert!(yearly.year_match(4999).unwrap() && !yearly.year_match(5000).unwrap());
    }

    /// CR5: a year is kept exactly when croner's own day test matches a day in it.
    #[test]
    fn pruning_agrees_with_croner_day_by_day() {
        for expr in [
            "0 0 0 29 2 +MON",
            "0 0 0 13 * +FRI",
            "0 0 0 31 * *",
            "0 0 0 LW 2 *",
            "0 0 0 15W * *",
            "0 0 0 * 2 5#5",
            "0 0 0 * * 1L",
            "0 0 0 29 2 * 1896-1912",
            "0 0 0 1 1 * */7",
        ] {
            let original = parse(expr);
            let mut pruned = original.clone();
            prune_years(&mut pruned);
            for year in (1890..1920).chain(2090..2110).chain([2400, 4999]) {
                assert_eq!(
                    pruned.year_match(year).unwrap(),
                    brute_force(&original, year),
                    "{expr} in {year}"
                );
            }
        }
    }
}
