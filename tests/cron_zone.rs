//! `CronTrigger::in_time_zone`: a named time zone per job, across its daylight-saving
//! changes both ways, next to other zones and whatever `TZ` says.
//!
//! The zones come from the machine's tz database where it has one (`/usr/share/zoneinfo`),
//! else from the copy built into the crate; the first test checks that the built-in copy
//! is there and agrees with the one in use at every instant these tests depend on, so
//! they pass on a machine without zoneinfo files too.
//!
//! 2024 in Europe/Berlin: clocks spring forward on 31 March at 02:00 CET (01:00 UTC) to
//! 03:00 CEST, and fall back on 27 October at 03:00 CEST (01:00 UTC) to 02:00 CET, so
//! 02:00-02:59 happens twice.
#![cfg(feature = "cron")]

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::cron::{at_offset, system, utc, Wall};
use jiff::Timestamp;
use schedpool::{CronTrigger, ManualClock, Periodic, ScheduledThreadPoolExecutor};

fn cet(y: i16, mo: i8, d: i8, h: i8, mi: i8) -> Timestamp {
    at_offset(y, mo, d, h, mi, 0, 1)
}

fn cest(y: i16, mo: i8, d: i8, h: i8, mi: i8) -> Timestamp {
    at_offset(y, mo, d, h, mi, 0, 2)
}

/// `expr` in the zone `name`, pinned to `w`.
fn zoned(w: &Wall, expr: &str, name: &str) -> CronTrigger {
    w.pin(
        CronTrigger::parse(expr)
            .unwrap()
            .in_time_zone(name)
            .unwrap(),
    )
}

fn berlin(w: &Wall, expr: &str) -> CronTrigger {
    zoned(w, expr, "Europe/Berlin")
}

#[test]
fn the_built_in_database_agrees_with_the_one_in_use() {
    let built_in = jiff::tz::TimeZoneDatabase::bundled();
    let zones = [
        "Europe/Berlin",
        "America/New_York",
        "Asia/Kolkata",
        "Australia/Lord_Howe",
        "UTC",
    ];
    // Every hour of 2024, which holds every change these tests cross.
    let hours = (0..366 * 24).map(|h| utc(2024, 1, 1, 0, 0, 0) + Duration::from_secs(h * 3600));
    for name in zones {
        let ours = built_in.get(name).expect("in the built-in database");
        let in_use = jiff::tz::TimeZone::get(name).unwrap();
        for t in hours.clone() {
            assert_eq!(ours.to_offset(t), in_use.to_offset(t), "{name} at {t}");
        }
    }
}

#[test]
fn a_fixed_time_in_the_spring_gap_runs_after_it() {
    let w = Wall::starting(cet(2024, 3, 29, 12, 0));
    let mut t = berlin(&w, "0 30 2 * * *");
    assert_eq!(
        w.series(&mut t, cet(2024, 3, 29, 12, 0), 4),
        vec![
            cet(2024, 3, 30, 2, 30),
            cest(2024, 3, 31, 3, 0), // 02:30 does not exist: the first time after the gap
            cest(2024, 4, 1, 2, 30),
            cest(2024, 4, 2, 2, 30),
        ]
    );
}

#[test]
fn an_interval_job_skips_the_spring_gap() {
    let w = Wall::starting(cet(2024, 3, 31, 0, 0));
    let mut t = berlin(&w, "0 */30 * * * *");
    assert_eq!(
        w.series(&mut t, cet(2024, 3, 31, 1, 0), 4),
        vec![
            cet(2024, 3, 31, 1, 0),
            cet(2024, 3, 31, 1, 30),
            cest(2024, 3, 31, 3, 0), // 02:00 and 02:30 do not exist
            cest(2024, 3, 31, 3, 30),
        ]
    );
}

#[test]
fn a_fixed_time_in_the_fall_fold_runs_once() {
    let w = Wall::starting(cest(2024, 10, 25, 12, 0));
    let mut t = berlin(&w, "0 30 2 * * *");
    assert_eq!(
        w.series(&mut t, cest(2024, 10, 25, 12, 0), 4),
        vec![
            cest(2024, 10, 26, 2, 30),
            cest(2024, 10, 27, 2, 30), // the earlier 02:30, not 02:30 CET as well
            cet(2024, 10, 28, 2, 30),
            cet(2024, 10, 29, 2, 30),
        ]
    );
    // From inside the second pass, today's 02:30 has run: the next is tomorrow's.
    assert_eq!(
        w.first(&mut t, cet(2024, 10, 27, 2, 15)),
        Some(cet(2024, 10, 28, 2, 30))
    );
}

#[test]
fn an_interval_job_runs_both_passes_of_the_fall_fold() {
    let w = Wall::starting(cest(2024, 10, 27, 0, 0));
    let mut t = berlin(&w, "0 */30 2 * * *");
    assert_eq!(
        w.series(&mut t, cest(2024, 10, 27, 0, 0), 5),
        vec![
            cest(2024, 10, 27, 2, 0),
            cest(2024, 10, 27, 2, 30),
            cet(2024, 10, 27, 2, 0), // the same wall-clock times, an hour later
            cet(2024, 10, 27, 2, 30),
            cet(2024, 10, 28, 2, 0),
        ]
    );
    // A search that starts in the second pass stays in it.
    assert_eq!(
        w.first(&mut t, cet(2024, 10, 27, 2, 10)),
        Some(cet(2024, 10, 27, 2, 30))
    );
}

#[test]
fn each_job_keeps_its_own_zone() {
    let w = Wall::starting(utc(2024, 7, 1, 0, 0, 0));
    let nine = "0 0 9 * * *";
    let first = |name: &str| w.first(&mut zoned(&w, nine, name), w.wall0);
    assert_eq!(first("Europe/Berlin"), Some(utc(2024, 7, 1, 7, 0, 0))); // CEST
    assert_eq!(first("America/New_York"), Some(utc(2024, 7, 1, 13, 0, 0))); // EDT
    assert_eq!(first("Asia/Kolkata"), Some(utc(2024, 7, 1, 3, 30, 0))); // +05:30, no DST
    assert_eq!(first("UTC"), Some(utc(2024, 7, 1, 9, 0, 0)));
    // A later year: midnight on New Year's Day 2030 in Berlin is 23:00 UTC the day before.
    let new_year = zoned(&w, "0 0 0 1 1 * 2030", "Europe/Berlin");
    assert_eq!(
        w.first(&mut { new_year }, w.wall0),
        Some(utc(2029, 12, 31, 23, 0, 0))
    );
    // Lord Howe Island moves its clocks by half an hour: 01:30-01:59 happens twice on
    // 7 April 2024 (+11 back to +10:30), and a quarter-hourly job runs in both passes.
    let w = Wall::starting(utc(2024, 4, 6, 12, 0, 0));
    let mut howe = zoned(&w, "0 */15 1 * * *", "Australia/Lord_Howe");
    let at = |h: i8, mi: i8, summer: bool| {
        let local = at_offset(2024, 4, 7, h, mi, 0, 0);
        local - Duration::from_secs(if summer { 11 * 3600 } else { 10 * 3600 + 1800 })
    };
    assert_eq!(
        w.series(&mut howe, utc(2024, 4, 6, 12, 0, 0), 6),
        vec![
            at(1, 0, true),
            at(1, 15, true),
            at(1, 30, true),
            at(1, 45, true),
            at(1, 30, false),
            at(1, 45, false),
        ]
    );
}

#[test]
fn an_unknown_zone_is_an_error_with_its_name() {
    let err = CronTrigger::parse("0 9 * * *")
        .unwrap()
        .in_time_zone("Mars/Olympus_Mons")
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("unknown time zone `Mars/Olympus_Mons` for cron expression `0 9 * * *`: "),
        "{msg}"
    );
    let debug = format!(
        "{:?}",
        CronTrigger::parse("@daily")
            .unwrap()
            .in_time_zone("Europe/Berlin")
            .unwrap()
    );
    assert!(debug.contains("Named(\"Europe/Berlin\")"), "{debug}");
}

#[test]
fn daily_in_berlin_on_a_manual_clock_across_the_fold() {
    let clock = ManualClock::new();
    clock.set_wall_time(system(cest(2024, 10, 26, 12, 0)));
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .build();
    let daily = CronTrigger::parse("0 30 2 * * *")
        .unwrap()
        .in_time_zone("Europe/Berlin")
        .unwrap();
    let runs = Arc::new(AtomicU32::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_periodic(Periodic::with_trigger(daily), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let start = clock.now();
    let wall0 = cest(2024, 10, 26, 12, 0);
    let instant = |t: Timestamp| start + Duration::try_from(t.duration_since(wall0)).unwrap();
    // 02:30 CEST on 27 October, then 02:30 CET on the 28th: 25 hours apart.
    assert_eq!(fut.deadline(), instant(cest(2024, 10, 27, 2, 30)));
    clock.advance(Duration::from_secs(14 * 3600 + 1800));
    assert!(pool.wait_idle(Duration::from_secs(10)));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(fut.deadline(), instant(cet(2024, 10, 28, 2, 30)));
    clock.advance(Duration::from_secs(24 * 3600));
    assert!(pool.wait_idle(Duration::from_secs(10)));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "no run at 02:30 CET on the 27th"
    );
    clock.advance(Duration::from_secs(3600));
    assert!(pool.wait_idle(Duration::from_secs(10)));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert!(fut.cancel());
    pool.close();
}
