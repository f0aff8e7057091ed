//! `CronTrigger::in_local_time` across daylight-saving changes, in US Eastern time.
//!
//! Every test here sets `TZ` to a POSIX rule (no zoneinfo files needed) before it reads a
//! local time, so this file is its own test binary: setting `TZ` cannot disturb tests
//! elsewhere, and all tests here set the same value.
//!
//! 2024 in `EST5EDT,M3.2.0,M11.1.0`: clocks spring forward on 10 March at 02:00 EST
//! (07:00 UTC) to 03:00 EDT, and fall back on 3 November at 02:00 EDT (06:00 UTC) to
//! 01:00 EST, so 01:00-01:59 happens twice. croner's rules: a fixed-time expression (one
//! value in each of seconds, minutes, hours) runs after the gap and once in the fold; an
//! interval expression skips the gap and runs in both passes of the fold.
#![cfg(feature = "cron")]

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

use common::cron::{at_offset, system, Wall};
use jiff::Timestamp;
use proptest::prelude::*;
use schedpool::{CronTrigger, ManualClock, Periodic, ScheduledThreadPoolExecutor};

const EASTERN: &str = "EST5EDT,M3.2.0,M11.1.0";

/// Sets `TZ` once, before any test of this binary reads a local time.
fn eastern() {
    static SET: Once = Once::new();
    SET.call_once(|| std::env::set_var("TZ", EASTERN));
}

fn est(y: i16, mo: i8, d: i8, h: i8, mi: i8) -> Timestamp {
    at_offset(y, mo, d, h, mi, 0, -5)
}

fn edt(y: i16, mo: i8, d: i8, h: i8, mi: i8) -> Timestamp {
    at_offset(y, mo, d, h, mi, 0, -4)
}

/// `expr` read in local time, pinned to `w`.
fn local(w: &Wall, expr: &str) -> CronTrigger {
    w.pin(CronTrigger::parse(expr).unwrap().in_local_time())
}

/// The deadline after a run that was due, and ended, at `after`.
fn next(w: &Wall, t: &mut CronTrigger, after: Timestamp) -> Option<Timestamp> {
    w.next(t, after, after)
}

#[test]
fn the_local_zone_follows_the_tz_rule() {
    eastern();
    let offset = |t: Timestamp| jiff::tz::TimeZone::system().to_offset(t).seconds();
    assert_eq!(offset(est(2024, 1, 15, 12, 0)), -5 * 3600);
    assert_eq!(offset(edt(2024, 7, 15, 12, 0)), -4 * 3600);
    assert_eq!(offset(est(2024, 3, 10, 1, 59)), -5 * 3600);
    assert_eq!(offset(edt(2024, 3, 10, 3, 0)), -4 * 3600);
}

#[test]
fn a_time_in_the_spring_gap_runs_at_the_first_valid_time() {
    eastern();
    let w = Wall::starting(est(2024, 3, 8, 12, 0));
    let mut t = local(&w, "0 30 2 * * *");
    assert_eq!(
        w.series(&mut t, est(2024, 3, 8, 12, 0), 4),
        vec![
            est(2024, 3, 9, 2, 30),
            edt(2024, 3, 10, 3, 0), // 02:30 does not exist: 03:00 EDT
            edt(2024, 3, 11, 2, 30),
            edt(2024, 3, 12, 2, 30),
        ]
    );
}

#[test]
fn a_repeated_time_runs_once_at_the_earlier_instant() {
    eastern();
    let w = Wall::starting(edt(2024, 11, 1, 12, 0));
    let mut t = local(&w, "0 30 1 * * *");
    assert_eq!(
        w.series(&mut t, edt(2024, 11, 1, 12, 0), 4),
        vec![
            edt(2024, 11, 2, 1, 30),
            edt(2024, 11, 3, 1, 30), // 01:30 happens twice: the earlier, EDT
            est(2024, 11, 4, 1, 30),
            est(2024, 11, 5, 1, 30),
        ]
    );
    // From inside the second pass (01:15 EST), today's 01:30 has already run (at 01:30
    // EDT): the next is tomorrow's, not 01:30 EST.
    assert_eq!(
        next(&w, &mut t, est(2024, 11, 3, 1, 15)),
        Some(est(2024, 11, 4, 1, 30))
    );
    assert_eq!(
        w.first(&mut t, est(2024, 11, 3, 1, 15)),
        Some(est(2024, 11, 4, 1, 30))
    );
    // A run ending between the two passes: next day too.
    assert_eq!(
        next(&w, &mut t, edt(2024, 11, 3, 1, 45)),
        Some(est(2024, 11, 4, 1, 30))
    );
}

#[test]
fn an_interval_job_skips_the_gap_and_runs_both_passes_of_the_fold() {
    eastern();
    let w = Wall::starting(est(2024, 3, 10, 0, 0));
    let mut t = local(&w, "0 */30 * * * *");
    assert_eq!(
        w.series(&mut t, est(2024, 3, 10, 1, 0), 4),
        vec![
            est(2024, 3, 10, 1, 0),
            est(2024, 3, 10, 1, 30),
            edt(2024, 3, 10, 3, 0), // 02:00 and 02:30 do not exist: skipped
            edt(2024, 3, 10, 3, 30),
        ]
    );
    let w = Wall::starting(edt(2024, 11, 3, 0, 0));
    let mut t = local(&w, "0 */30 * * * *");
    assert_eq!(
        w.series(&mut t, edt(2024, 11, 3, 0, 30), 7),
        vec![
            edt(2024, 11, 3, 0, 30),
            edt(2024, 11, 3, 1, 0),
            edt(2024, 11, 3, 1, 30),
            est(2024, 11, 3, 1, 0), // the second pass: 01:00 and 01:30 again
            est(2024, 11, 3, 1, 30),
            est(2024, 11, 3, 2, 0),
            est(2024, 11, 3, 2, 30),
        ]
    );
    // A range of hours is an interval expression too: "0 0 1-2 * * *" runs at 01:00
    // twice.
    let mut t = local(&w, "0 0 1-2 * * *");
    assert_eq!(
        w.series(&mut t, edt(2024, 11, 3, 0, 30), 3),
        vec![
            edt(2024, 11, 3, 1, 0),
            est(2024, 11, 3, 1, 0),
            est(2024, 11, 3, 2, 0),
        ]
    );
}

#[test]
fn a_seconds_job_runs_through_the_second_pass() {
    eastern();
    let w = Wall::starting(edt(2024, 11, 3, 0, 0));
    let mut t = local(&w, "*/10 * * * * *");
    // 01:15 EST is in the second pass, and a match.
    let quarter_past = est(2024, 11, 3, 1, 15);
    assert_eq!(w.first(&mut t, quarter_past), Some(quarter_past));
    // After the first pass's last match, the second pass's first.
    let last_edt = edt(2024, 11, 3, 1, 59) + Duration::from_secs(50);
    assert_eq!(next(&w, &mut t, last_edt), Some(est(2024, 11, 3, 1, 0)));
    // And every ten seconds through it.
    assert_eq!(
        next(&w, &mut t, quarter_past),
        Some(quarter_past + Duration::from_secs(10))
    );
}

/// A pool on a clock whose wall time reads `wall0`, with an hourly job in local time;
/// returns the clock, the pool, the job's future and its run counter.
fn hourly_from(
    wall0: Timestamp,
) -> (
    ManualClock,
    ScheduledThreadPoolExecutor,
    schedpool::ScheduledFuture<()>,
    Arc<AtomicU32>,
) {
    eastern();
    let clock = ManualClock::new();
    clock.set_wall_time(system(wall0));
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .build();
    let hourly = CronTrigger::parse("0 0 * * * *").unwrap().in_local_time();
    let runs = Arc::new(AtomicU32::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_periodic(Periodic::with_trigger(hourly), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    (clock, pool, fut, runs)
}

/// The clock's instant at wall-clock time `wall`, on a clock that has not been stepped.
fn instant_at(clock: &ManualClock, wall: Timestamp) -> std::time::Instant {
    let now = Timestamp::try_from(clock.wall_time()).unwrap();
    clock.now() + std::time::Duration::try_from(wall.duration_since(now)).unwrap()
}

#[test]
fn hourly_on_a_manual_clock_across_spring_forward() {
    // The clock starts at 00:30 EST on the spring-forward night.
    let (clock, pool, fut, runs) = hourly_from(est(2024, 3, 10, 0, 30));
    assert_eq!(fut.deadline(), instant_at(&clock, est(2024, 3, 10, 1, 0)));
    let hour = Duration::from_secs(3600);
    clock.advance(Duration::from_secs(1800)); // 01:00 EST
    assert!(pool.wait_idle(Duration::from_secs(10)));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // One real hour later it is 03:00 EDT: local 02:00 never happens.
    assert_eq!(fut.deadline(), instant_at(&clock, edt(2024, 3, 10, 3, 0)));
    clock.advance(hour);
    assert!(pool.wait_idle(Duration::from_secs(10)));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(fut.deadline(), instant_at(&clock, edt(2024, 3, 10, 4, 0)));
    assert!(fut.cancel());
    pool.close();
}

#[test]
fn hourly_on_a_manual_clock_across_fall_back() {
    // The clock starts at 00:30 EDT on the fall-back night.
    let (clock, pool, fut, runs) = hourly_from(edt(2024, 11, 3, 0, 30));
    let expected = [
        edt(2024, 11, 3, 1, 0),
        est(2024, 11, 3, 1, 0), // both passes: 01:00 runs twice, an hour apart
        est(2024, 11, 3, 2, 0),
        est(2024, 11, 3, 3, 0),
    ];
    let mut step = Duration::from_secs(1800);
    for (n, at) in (1..).zip(expected) {
        assert_eq!(fut.deadline(), instant_at(&clock, at), "run {n}");
        clock.advance(step);
        assert!(pool.wait_idle(Duration::from_secs(10)));
        assert_eq!(runs.load(Ordering::SeqCst), n);
        step = Duration::from_secs(3600);
    }
    assert!(fut.cancel());
    pool.close();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// CR1 and CR2 on the nights clocks change: deadlines never go back or repeat.
    #[test]
    fn deadlines_move_forward_across_changes(
        expr in prop::sample::select(vec![
            "* * * * * *", "*/10 * * * * *", "0 */15 * * * *", "0 30 1 * * *",
            "0 30 2 * * *", "0 0 2 * * *", "0 0 * * * *", "0 59 1 * * *", "0 */30 1 * * *",
        ]),
        fall in any::<bool>(),
        offset_ms in 0u64..(6 * 3600 * 1000),
    ) {
        eastern();
        // From 23:00 local the evening before each change, for six hours.
        let base = if fall { edt(2024, 11, 2, 23, 0) } else { est(2024, 3, 9, 23, 0) };
        let w = Wall::starting(base);
        let mut t = local(&w, expr);
        let from = base + Duration::from_millis(offset_ms);
        let mut last = w.first(&mut t, from).unwrap();
        prop_assert!(last >= from);
        for _ in 0..5 {
            let following = next(&w, &mut t, last).unwrap();
            prop_assert!(following > last, "{} then {}", last, following);
            prop_assert!(following.duration_since(last) <= jiff::SignedDuration::from_hours(25));
            last = following;
        }
    }
}
