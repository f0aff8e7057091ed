//! `CronTrigger` in UTC: deadlines from `first_deadline` and `next_deadline` on a pinned
//! anchor, month boundaries, the year field, parse errors and expressions that never
//! match, and end-to-end runs on a `ManualClock` whose wall clock steps, goes back and
//! jumps as in a suspend. Local time and daylight saving are in `cron_local.rs` (which
//! sets `TZ`), named time zones in `cron_zone.rs`.
#![cfg(feature = "cron")]

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cron::{system, utc, Wall};
use jiff::Timestamp;
use proptest::prelude::*;
use schedpool::{
    CronError, CronTrigger, ManualClock, Periodic, ScheduleError, ScheduledThreadPoolExecutor,
    Trigger,
};

const IDLE: Duration = Duration::from_secs(10);

#[test]
fn every_five_minutes() {
    let w = Wall::starting(utc(2024, 1, 1, 10, 0, 0));
    let from = utc(2024, 1, 1, 10, 2, 30);
    let expected = vec![
        utc(2024, 1, 1, 10, 5, 0),
        utc(2024, 1, 1, 10, 10, 0),
        utc(2024, 1, 1, 10, 15, 0),
    ];
    // Five fields (seconds 0) and six fields mean the same; so does the Quartz-style
    // `0/5` for `0-59/5`.
    assert_eq!(w.series(&mut w.trigger("*/5 * * * *"), from, 3), expected);
    assert_eq!(w.series(&mut w.trigger("0 */5 * * * *"), from, 3), expected);
    assert_eq!(w.series(&mut w.trigger("0 0/5 * * * *"), from, 3), expected);
}

#[test]
fn every_ten_seconds() {
    let w = Wall::starting(utc(2024, 1, 1, 10, 0, 0));
    let mut t = w.trigger("*/10 * * * * *");
    assert_eq!(
        w.series(&mut t, utc(2024, 1, 1, 10, 0, 33), 4),
        vec![
            utc(2024, 1, 1, 10, 0, 40),
            utc(2024, 1, 1, 10, 0, 50),
            utc(2024, 1, 1, 10, 1, 0),
            utc(2024, 1, 1, 10, 1, 10),
        ]
    );
}

#[test]
fn first_of_the_month_across_a_month_boundary() {
    let w = Wall::starting(utc(2024, 1, 1, 0, 0, 0));
    let mut t = w.trigger("0 0 0 1 * *");
    assert_eq!(
        w.first(&mut t, utc(2024, 1, 31, 23, 59, 59)),
        Some(utc(2024, 2, 1, 0, 0, 0))
    );
    // Across the year boundary too.
    assert_eq!(
        w.next(&mut t, utc(2024, 12, 1, 0, 0, 0), utc(2024, 12, 1, 0, 0, 1)),
        Some(utc(2025, 1, 1, 0, 0, 0))
    );
}

#[test]
fn the_31st_skips_shorter_months() {
    let w = Wall::starting(utc(2024, 1, 1, 0, 0, 0));
    let mut t = w.trigger("0 0 12 31 * *");
    assert_eq!(
        w.series(&mut t, utc(2024, 1, 31, 12, 0, 1), 5),
        vec![
            utc(2024, 3, 31, 12, 0, 0),
            utc(2024, 5, 31, 12, 0, 0),
            utc(2024, 7, 31, 12, 0, 0),
            utc(2024, 8, 31, 12, 0, 0),
            utc(2024, 10, 31, 12, 0, 0),
        ]
    );
}

#[test]
fn leap_day_and_last_day_of_month() {
    let w = Wall::starting(utc(2023, 1, 1, 0, 0, 0));
    let mut leap = w.trigger("0 0 0 29 2 *");
    assert_eq!(
        w.series(&mut leap, utc(2023, 3, 1, 0, 0, 0), 2),
        vec![utc(2024, 2, 29, 0, 0, 0), utc(2028, 2, 29, 0, 0, 0)]
    );
    let mut last = w.trigger("0 0 18 L * *");
    assert_eq!(
        w.series(&mut last, utc(2023, 2, 1, 0, 0, 0), 3),
        vec![
            utc(2023, 2, 28, 18, 0, 0),
            utc(2023, 3, 31, 18, 0, 0),
            utc(2023, 4, 30, 18, 0, 0),
        ]
    );
    // The second Friday of each month.
    let mut second_friday = w.trigger("0 9 * * FRI#2");
    assert_eq!(
        w.series(&mut second_friday, utc(2023, 1, 1, 0, 0, 0), 2),
        vec![utc(2023, 1, 13, 9, 0, 0), utc(2023, 2, 10, 9, 0, 0)]
    );
    // 29 February on a Monday (`+`: day of month and day of week): 28 years apart, and
    // 40 across 2100, which is no leap year.
    let mut rare = w.trigger("0 0 0 29 2 +MON");
    assert_eq!(
        w.series(&mut rare, utc(2023, 1, 1, 0, 0, 0), 3),
        vec![
            utc(2044, 2, 29, 0, 0, 0),
            utc(2072, 2, 29, 0, 0, 0),
            utc(2112, 2, 29, 0, 0, 0),
        ]
    );
}

#[test]
fn the_year_field() {
    let w = Wall::starting(utc(2024, 6, 1, 0, 0, 0));
    // Seven fields: a year last.
    let mut new_year_2030 = w.trigger("0 0 0 1 1 * 2030");
    assert_eq!(
        w.series(&mut new_year_2030, utc(2024, 6, 1, 0, 0, 0), 3),
        vec![utc(2030, 1, 1, 0, 0, 0)],
        "one match, then none"
    );
    // Lists, ranges and steps of years.
    let mut every_third = w.trigger("0 30 9 1 6 * 2024-2031/3");
    assert_eq!(
        w.series(&mut every_third, utc(2024, 6, 1, 0, 0, 0), 5),
        vec![
            utc(2024, 6, 1, 9, 30, 0),
            utc(2027, 6, 1, 9, 30, 0),
            utc(2030, 6, 1, 9, 30, 0),
        ]
    );
    let mut listed = w.trigger("0 0 12 29 2 * 2025,2027,2028,2032");
    assert_eq!(
        w.series(&mut listed, utc(2024, 6, 1, 0, 0, 0), 5),
        vec![utc(2028, 2, 29, 12, 0, 0), utc(2032, 2, 29, 12, 0, 0)],
        "the common years hold no 29 February"
    );
    // A year far away.
    let mut far = w.trigger("0 0 0 1 1 * 4999");
    assert_eq!(
        w.first(&mut far, utc(2024, 6, 1, 0, 0, 0)),
        Some(utc(4999, 1, 1, 0, 0, 0))
    );
    // All years past: no deadline.
    let mut past = w.trigger("0 0 0 1 1 * 2000-2023");
    assert_eq!(w.first(&mut past, utc(2024, 6, 1, 0, 0, 0)), None);
}

#[test]
fn first_deadline_is_at_or_after_earliest() {
    let w = Wall::starting(utc(2024, 1, 1, 10, 0, 0));
    let mut t = w.trigger("0 * * * * *");
    // A matching instant is its own first deadline.
    let on_the_minute = utc(2024, 1, 1, 10, 1, 0);
    assert_eq!(w.first(&mut t, on_the_minute), Some(on_the_minute));
    // Half a second past a match is past it: never a deadline before `earliest`.
    let half_past = on_the_minute + Duration::from_millis(500);
    assert_eq!(w.first(&mut t, half_past), Some(utc(2024, 1, 1, 10, 2, 0)));
    let just_before = on_the_minute - Duration::from_nanos(1);
    assert_eq!(w.first(&mut t, just_before), Some(on_the_minute));
}

#[test]
fn next_deadline_is_strictly_after_the_later_of_scheduled_and_finished() {
    let w = Wall::starting(utc(2024, 1, 1, 10, 0, 0));
    let mut t = w.trigger("0 * * * * *");
    let ten = utc(2024, 1, 1, 10, 0, 0);
    // A quick run: the next minute.
    assert_eq!(
        w.next(&mut t, ten, ten + Duration::from_millis(5)),
        Some(utc(2024, 1, 1, 10, 1, 0))
    );
    // A run that ends exactly on the next match does not get it again.
    assert_eq!(
        w.next(&mut t, ten, utc(2024, 1, 1, 10, 1, 0)),
        Some(utc(2024, 1, 1, 10, 2, 0))
    );
    // A run that overran 10:01 and 10:02 skips them.
    assert_eq!(
        w.next(&mut t, ten, utc(2024, 1, 1, 10, 2, 30)),
        Some(utc(2024, 1, 1, 10, 3, 0))
    );
    // The deadline itself never matches again, even if `finished` reads earlier.
    assert_eq!(w.next(&mut t, ten, ten), Some(utc(2024, 1, 1, 10, 1, 0)));
}

#[test]
fn instants_before_the_anchor_read_as_the_anchor() {
    let t0 = Instant::now();
    let wall0 = utc(2024, 1, 1, 10, 0, 30);
    let mut t = CronTrigger::parse("0 * * * * *")
        .unwrap()
        .anchored_at(t0, system(wall0));
    let expected = t0 + Duration::from_secs(30);
    assert_eq!(t.first_deadline(t0), Some(expected));
    if let Some(earlier) = t0.checked_sub(Duration::from_secs(3600)) {
        assert_eq!(t.first_deadline(earlier), Some(expected));
    }
}

#[test]
fn expressions_that_match_no_date_are_refused_at_parse() {
    for expr in [
        "0 0 0 31 4 *",      // 31 April
        "0 0 0 30 2 *",      // 30 February
        "0 0 31 6,9,11 *",   // months of 30 days
        "0 0 0 29 2 * 2025", // a common year
        "0 0 0 29 2 * 2025-2027",
        "0 0 0 31 4 +MON",
    ] {
        let err = CronTrigger::parse(expr).expect_err(expr);
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!(
                "invalid cron expression `{expr}`: it matches no date"
            )),
            "{msg}"
        );
    }
    // Each of these matches somewhere.
    for expr in ["0 0 0 31 4 MON", "0 0 0 29 2 * 2024", "0 0 0 31 * *"] {
        assert!(CronTrigger::parse(expr).is_ok(), "{expr}");
    }
}

/// A list with an empty element is an error at parse, as in other cron implementations:
/// croner read a lone `,` as "no value", so `", * DEC * *"` matched no time and its first
/// search walked every day to the year 5000 (160 ms on the caller's thread) before
/// `schedule_periodic` refused it with `NeverDue`.
#[test]
fn an_empty_list_element_is_refused_at_parse() {
    for (expr, field) in [
        (", * DEC * *", 1),
        ("31  , 12 * 5", 2),
        ("0 , * * *", 2),
        ("0 0 , * * *", 3),
        ("1,,2 * * * *", 1),
        ("1, * * * *", 1),
        (",1 * * * *", 1),
        ("0 0 0 1 1 * 2030,", 7),
        ("0 0 * * MON,", 5),
        // Found by `tests/fuzz.rs` on 31fc6b6 (accepted there, with no deadline at all).
        (",  *  4,28  11  */26", 1),
    ] {
        let err = CronTrigger::parse(expr).expect_err(expr).to_string();
        assert!(
            err.contains(&format!("field {field} has an empty element in a list")),
            "{expr}: {err}"
        );
    }
    assert!(CronTrigger::parse("1,2 * * * *").is_ok());
}

#[test]
fn bad_expressions_are_errors_with_the_expression_and_reason() {
    for expr in [
        "",
        "nonsense",
        "* * *",
        "* * * * * * * *",
        "60 * * * *",
        "0 0 32 * *",
        "*/0 * * * *",
        "5-1 * * * *",
        "0 0 * * MON#6",
        "0 0 0 1 1 * 6000",
        "99999999999999999999 * * * *",
    ] {
        let err = CronTrigger::parse(expr).expect_err(expr);
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("invalid cron expression `{expr}`: ")),
            "{msg}"
        );
        assert!(msg.len() > format!("invalid cron expression `{expr}`: ").len());
        assert!(format!("{err:?}").contains("CronError"));
    }
    let err: Box<dyn std::error::Error + Send + Sync> =
        Box::new(CronTrigger::parse("nonsense").unwrap_err());
    assert!(err.to_string().contains("between 5 and 7 fields"), "{err}");
}

#[test]
fn debug_shows_expression_and_zone_and_clones_agree() {
    let w = Wall::starting(utc(2024, 1, 1, 0, 0, 0));
    let t = w.trigger("@hourly");
    let debug = format!("{t:?}");
    assert!(
        debug.contains("@hourly") && debug.contains("Utc"),
        "{debug}"
    );
    assert!(format!("{:?}", t.clone().in_local_time()).contains("Local"));
    let (mut a, mut b) = (t.clone(), t);
    let from = w.instant(utc(2024, 1, 1, 0, 30, 0));
    assert_eq!(a.first_deadline(from), b.first_deadline(from));
    assert_eq!(
        a.first_deadline(from),
        Some(w.instant(utc(2024, 1, 1, 1, 0, 0)))
    );
}

#[test]
fn cron_trigger_and_error_are_send_sync() {
    fn send_sync<T: Send + Sync + 'static>() {}
    send_sync::<CronTrigger>();
    send_sync::<CronError>();
}

/// An executor with one worker on `clock`.
fn pool(clock: &ManualClock) -> ScheduledThreadPoolExecutor {
    ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .build()
}

/// A clock whose wall time reads `wall`, and an executor on it.
fn pool_at(wall: Timestamp) -> (ManualClock, ScheduledThreadPoolExecutor) {
    let clock = ManualClock::new();
    clock.set_wall_time(system(wall));
    let pool = pool(&clock);
    (clock, pool)
}

fn counter() -> (Arc<AtomicU32>, impl FnMut() + Send + 'static) {
    let runs = Arc::new(AtomicU32::new(0));
    let r = runs.clone();
    (runs, move || {
        r.fetch_add(1, Ordering::SeqCst);
    })
}

/// Advances `clock` by `d` and waits until the pool has run what came due.
fn advance(clock: &ManualClock, pool: &ScheduledThreadPoolExecutor, d: Duration) {
    clock.advance(d);
    assert!(pool.wait_idle(IDLE));
}

#[test]
fn every_minute_on_a_manual_clock() {
    // The clock's wall time starts at 12:00:30, half way between two matches; the
    // trigger reads it from the executor's clock.
    let (clock, pool) = pool_at(utc(2024, 6, 1, 12, 0, 30));
    let start = clock.now();
    let every_minute = CronTrigger::parse("0 * * * * *").unwrap();
    let (runs, task) = counter();
    let fut = pool
        .schedule_periodic(Periodic::with_trigger(every_minute), task)
        .unwrap();
    assert_eq!(fut.deadline(), start + Duration::from_secs(30));
    assert!(pool.wait_idle(IDLE));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    advance(&clock, &pool, Duration::from_secs(29));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "12:00:59");
    advance(&clock, &pool, Duration::from_secs(1));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "12:01:00");
    for minute in 2..=30u32 {
        advance(&clock, &pool, Duration::from_secs(60));
        assert_eq!(runs.load(Ordering::SeqCst), minute, "12:{minute:02}:00");
        let next = start + Duration::from_secs(30 + 60 * u64::from(minute));
        assert_eq!(fut.deadline(), next);
    }
    // A jump of ten minutes at once runs the one overdue match, then goes on from now.
    advance(&clock, &pool, Duration::from_secs(600));
    assert_eq!(runs.load(Ordering::SeqCst), 31);
    assert_eq!(fut.deadline(), start + Duration::from_secs(30 + 60 * 40)); // 12:41
    assert!(fut.cancel());
    pool.close();
}

#[test]
fn initial_delay_and_max_runs_on_a_manual_clock() {
    let clock = ManualClock::new();
    let pool = pool(&clock);
    let start = clock.now();
    // Pinned instead of read from the clock: the same deadlines.
    let trigger = CronTrigger::parse("0 * * * * *")
        .unwrap()
        .anchored_at(start, system(utc(2024, 6, 1, 12, 0, 30)));
    let (runs, task) = counter();
    // now + 90 s is 12:02:00 exactly, a match: it is the first deadline (at or after).
    let spec = Periodic::with_trigger(trigger)
        .initial_delay(Duration::from_secs(90))
        .max_runs(2);
    let fut = pool.schedule_periodic(spec, task).unwrap();
    assert_eq!(fut.deadline(), start + Duration::from_secs(90));
    for _ in 0..5 {
        advance(&clock, &pool, Duration::from_secs(60));
    }
    fut.get().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    pool.close();
}

#[test]
fn a_run_that_overruns_matches_skips_them() {
    let (clock, pool) = pool_at(utc(2024, 6, 1, 12, 0, 30));
    let start = clock.now();
    let trigger = CronTrigger::parse("0 * * * * *").unwrap();
    let runs = Arc::new(AtomicU32::new(0));
    let (r, c) = (runs.clone(), clock.clone());
    let fut = pool
        .schedule_periodic(Periodic::with_trigger(trigger), move || {
            // The first run (12:01:00) takes 150 s of virtual time, ending at 12:03:30.
            if r.fetch_add(1, Ordering::SeqCst) == 0 {
                c.advance(Duration::from_secs(150));
            }
        })
        .unwrap();
    advance(&clock, &pool, Duration::from_secs(30));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // 12:02 and 12:03 were overrun; the next is 12:04.
    assert_eq!(fut.deadline(), start + Duration::from_secs(210));
    advance(&clock, &pool, Duration::from_secs(30));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert!(fut.cancel());
    pool.close();
}

#[test]
fn an_expression_with_no_match_from_now_on_is_refused() {
    let (_clock, pool) = pool_at(utc(2024, 6, 1, 12, 0, 0));
    let (runs, task) = counter();
    // It parses (2023 held a 1 January), but its only match is past.
    let past = CronTrigger::parse("0 0 0 1 1 * 2023").unwrap();
    let refused = pool.schedule_periodic(Periodic::with_trigger(past), task);
    assert_eq!(refused.unwrap_err(), ScheduleError::NeverDue);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(pool.stats().task_count, 0, "not accepted");
    assert!(ScheduleError::NeverDue.to_string().contains("never run"));
    pool.close();
}

#[test]
fn the_matches_of_a_year_range_run_out_with_ok() {
    let (clock, pool) = pool_at(utc(2024, 12, 31, 23, 0, 0));
    let (runs, task) = counter();
    // New Year's Day of 2025 and 2026 at midnight: two runs, then the future completes.
    let trigger = CronTrigger::parse("0 0 0 1 1 * 2025-2026").unwrap();
    let fut = pool
        .schedule_periodic(Periodic::with_trigger(trigger), task)
        .unwrap();
    advance(&clock, &pool, Duration::from_secs(3600));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(!fut.is_done());
    advance(&clock, &pool, Duration::from_secs(365 * 86_400));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    fut.get().expect("over: Ok(())");
    pool.close();
}

/// An hourly job on a clock at 12:00:30 whose first run (13:00) is done; returns the
/// clock, the pool, the job's future, and the clock's instant at 12:00:30.
fn hourly_after_its_first_run() -> (
    ManualClock,
    ScheduledThreadPoolExecutor,
    schedpool::ScheduledFuture<()>,
    Instant,
) {
    let (clock, pool) = pool_at(utc(2024, 6, 1, 12, 0, 30));
    let start = clock.now();
    let hourly = CronTrigger::parse("0 0 * * * *").unwrap();
    let fut = pool
        .schedule_periodic(Periodic::with_trigger(hourly), || {})
        .unwrap();
    advance(&clock, &pool, Duration::from_secs(3570)); // 13:00
    assert_eq!(fut.deadline(), start + Duration::from_secs(7170)); // 14:00
    (clock, pool, fut, start)
}

#[test]
fn a_step_of_the_wall_clock_forward_is_followed_from_the_next_deadline() {
    let (clock, pool, fut, start) = hourly_after_its_first_run();
    // At 13:00 the wall clock steps 30 minutes forward, to 13:30.
    clock.set_wall_time(system(utc(2024, 6, 1, 13, 30, 0)));
    // The queued deadline keeps its instant: the run comes an hour later, at 14:30.
    assert_eq!(fut.deadline(), start + Duration::from_secs(7170));
    advance(&clock, &pool, Duration::from_secs(3600));
    // Re-anchored there: the next is 15:00 on the new wall clock, half an hour later
    // (15:00 on the old mapping would be an hour and a half away).
    assert_eq!(fut.deadline(), start + Duration::from_secs(7170 + 1800));
    assert!(fut.cancel());
    pool.close();
}

#[test]
fn a_step_of_the_wall_clock_back_is_followed_from_the_next_deadline() {
    let (clock, pool, fut, start) = hourly_after_its_first_run();
    // At 13:00 the wall clock steps back to 12:30.
    clock.set_wall_time(system(utc(2024, 6, 1, 12, 30, 0)));
    // The queued run, at 13:30 now.
    advance(&clock, &pool, Duration::from_secs(3600));
    // The next is 14:00 on the new wall clock, 30 minutes on; on the old one it would be
    // 15:00, 90 minutes on.
    assert_eq!(fut.deadline(), start + Duration::from_secs(7170 + 1800));
    assert!(fut.cancel());
    pool.close();
}

#[test]
fn a_suspend_is_followed_from_the_next_deadline() {
    let (clock, pool) = pool_at(utc(2024, 6, 1, 2, 0, 0));
    let start = clock.now();
    let daily = CronTrigger::parse("0 0 3 * * *").unwrap();
    let (runs, task) = counter();
    let fut = pool
        .schedule_periodic(Periodic::with_trigger(daily), task)
        .unwrap();
    advance(&clock, &pool, Duration::from_secs(3600)); // 03:00, the first run
    let day = 86_400;
    assert_eq!(fut.deadline(), start + Duration::from_secs(3600 + day));
    // The machine sleeps five hours: the wall clock goes on, monotonic time does not.
    let before = clock.now();
    clock.set_wall_time(clock.wall_time() + Duration::from_secs(5 * 3600));
    assert_eq!(clock.now(), before);
    // The queued run comes at 08:00 the next day, five hours late on the wall clock.
    advance(&clock, &pool, Duration::from_secs(day));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(clock.wall_time(), system(utc(2024, 6, 2, 8, 0, 0)));
    // From there the schedule is the wall clock's again: 03:00 on 3 June, 19 hours on.
    assert_eq!(fut.deadline(), clock.now() + Duration::from_secs(19 * 3600));
    assert!(fut.cancel());
    pool.close();
}

#[test]
fn drift_within_a_second_and_a_pinned_trigger_move_no_deadline() {
    let (clock, pool, fut, start) = hourly_after_its_first_run();
    let pinned = CronTrigger::parse("0 30 * * * *")
        .unwrap()
        .anchored_at(start, system(utc(2024, 6, 1, 12, 0, 30)));
    let half_past = pool
        .schedule_periodic(Periodic::with_trigger(pinned), || {})
        .unwrap();
    assert_eq!(half_past.deadline(), start + Duration::from_secs(5370)); // 13:30

    // NTP slews the wall clock 900 ms ahead: within a second, the anchor stays.
    clock.set_wall_time(clock.wall_time() + Duration::from_millis(900));
    advance(&clock, &pool, Duration::from_secs(3600));
    assert_eq!(fut.deadline(), start + Duration::from_secs(7170 + 3600)); // 15:00

    // A pinned trigger ignores even a step.
    clock.set_wall_time(clock.wall_time() + Duration::from_secs(600));
    advance(&clock, &pool, Duration::from_secs(1800));
    assert_eq!(
        half_past.deadline(),
        start + Duration::from_secs(5370 + 2 * 3600)
    );
    assert!(fut.cancel() && half_past.cancel());
    pool.close();
}

/// Expressions for the properties below, with every kind of field.
const EXPRS: &[&str] = &[
    "* * * * * *",
    "*/7 * * * * *",
    "0 */5 * * * *",
    "15 30 2 * * *",
    "0 0 0 1 * *",
    "0 0 12 31 * *",
    "0 0 0 29 2 *",
    "0 0 9 * * MON-FRI",
    "0 0 18 L * *",
    "0 0 9 15W * *",
    "0 0 9 * * FRI#2",
    "0 0 9 * * 5L",
    "0 0 9 13 * +FRI",
    "0 0 9 * * * 2020-2040",
    "@weekly",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// CR3: parsing any string returns, never panics.
    #[test]
    fn parse_never_panics(expr in "[0-9*/,LW#?@+A-Za-z -]{0,40}") {
        let _ = CronTrigger::parse(&expr);
    }

    /// CR1 and CR2, and that the search skips no match: the first deadline at or after a
    /// match is that match, and so is the next deadline after any instant just before it.
    #[test]
    fn deadlines_move_forward_and_skip_no_match(
        i in 0..EXPRS.len(),
        offset_s in 0u64..(4 * 366 * 86_400),
        nanos in 0u32..1_000_000_000,
    ) {
        // Anchored half a second before a whole second, so `first - 1 ns` is never
        // before the anchor.
        let w = Wall::starting(utc(2020, 1, 1, 0, 0, 0) - Duration::from_millis(500));
        let mut t = w.trigger(EXPRS[i]);
        let from = w.wall0 + Duration::new(offset_s, nanos);
        let first = w.first(&mut t, from).unwrap();
        prop_assert!(first >= from);
        prop_assert_eq!(w.first(&mut t, first), Some(first));
        let before = first - Duration::from_nanos(1);
        prop_assert_eq!(w.next(&mut t, before, before), Some(first));
        let second = w.next(&mut t, first, first).unwrap();
        prop_assert!(second > first);
        prop_assert_eq!(w.first(&mut t, first + Duration::from_nanos(1)), Some(second));
    }
}
