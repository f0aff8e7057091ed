//! `CronTrigger::in_local_time` across daylight-saving changes, in US Eastern time.
//!
//! Every test here sets `TZ` to a POSIX rule (no zoneinfo files needed) before it reads a
//! local time, so this file is its own test binary: setting `TZ` cannot disturb tests
//! elsewhere, and all tests here set the same value.
//!
//! 2024 in `EST5EDT,M3.2.0,M11.1.0`: clocks spring forward on 10 March at 02:00 EST
//! (07:00 UTC) to 03:00 EDT, and fall back on 3 November at 02:00 EDT (06:00 UTC) to
//! 01:00 EST, so 01:00-01:59 happens twice.
#![cfg(feature = "cron")]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, FixedOffset, Local, TimeZone, Utc};
use proptest::prelude::*;
use schedpool::{
    CronTrigger, ManualClock, Periodic, ScheduledThreadPoolExecutor, Trigger, TriggerContext,
};

const EASTERN: &str = "EST5EDT,M3.2.0,M11.1.0";

/// Sets `TZ` once, before any test of this binary reads a local time.
fn eastern() {
    static SET: Once = Once::new();
    SET.call_once(|| std::env::set_var("TZ", EASTERN));
}

fn est(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    let zone = FixedOffset::west_opt(5 * 3600).unwrap();
    zone.with_ymd_and_hms(y, mo, d, h, mi, 0)
        .unwrap()
        .with_timezone(&Utc)
}

fn edt(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    let zone = FixedOffset::west_opt(4 * 3600).unwrap();
    zone.with_ymd_and_hms(y, mo, d, h, mi, 0)
        .unwrap()
        .with_timezone(&Utc)
}

/// A trigger read in local time, anchored so that instants read as UTC from `wall0` on.
struct Wall {
    t0: Instant,
    wall0: DateTime<Utc>,
}

impl Wall {
    fn starting(wall0: DateTime<Utc>) -> Self {
        Wall {
            t0: Instant::now(),
            wall0,
        }
    }

    fn trigger(&self, expr: &str) -> CronTrigger {
        CronTrigger::parse(expr)
            .unwrap()
            .in_local_time()
            .anchored_at(self.t0, SystemTime::from(self.wall0))
    }

    fn instant(&self, wall: DateTime<Utc>) -> Instant {
        self.t0 + (wall - self.wall0).to_std().expect("not before the anchor")
    }

    fn wall(&self, at: Instant) -> DateTime<Utc> {
        self.wall0 + at.duration_since(self.t0)
    }

    fn first(&self, trigger: &mut CronTrigger, earliest: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let at = trigger.first_deadline(self.instant(earliest))?;
        Some(self.wall(at))
    }

    fn next(&self, trigger: &mut CronTrigger, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let at = self.instant(after);
        let ctx = TriggerContext {
            scheduled: at,
            started: at,
            finished: at,
            runs: 1,
            panicked: false,
        };
        Some(self.wall(trigger.next_deadline(&ctx)?))
    }

    fn series(
        &self,
        trigger: &mut CronTrigger,
        from: DateTime<Utc>,
        n: usize,
    ) -> Vec<DateTime<Utc>> {
        let mut out = vec![self.first(trigger, from).unwrap()];
        while out.len() < n {
            let last = *out.last().unwrap();
            out.push(self.next(trigger, last).unwrap());
        }
        out
    }
}

#[test]
fn chrono_local_follows_the_tz_rule() {
    eastern();
    let offset = |t: DateTime<Utc>| t.with_timezone(&Local).offset().local_minus_utc();
    assert_eq!(offset(est(2024, 1, 15, 12, 0)), -5 * 3600);
    assert_eq!(offset(edt(2024, 7, 15, 12, 0)), -4 * 3600);
    assert_eq!(offset(est(2024, 3, 10, 1, 59)), -5 * 3600);
    assert_eq!(offset(edt(2024, 3, 10, 3, 0)), -4 * 3600);
}

#[test]
fn a_time_in_the_spring_gap_runs_at_the_first_valid_time() {
    eastern();
    let w = Wall::starting(est(2024, 3, 8, 12, 0));
    let mut t = w.trigger("0 30 2 * * *");
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
    let mut t = w.trigger("0 30 1 * * *");
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
        w.next(&mut t, est(2024, 11, 3, 1, 15)),
        Some(est(2024, 11, 4, 1, 30))
    );
    assert_eq!(
        w.first(&mut t, est(2024, 11, 3, 1, 15)),
        Some(est(2024, 11, 4, 1, 30))
    );
    // A run ending between the two passes: next day too.
    assert_eq!(
        w.next(&mut t, edt(2024, 11, 3, 1, 45)),
        Some(est(2024, 11, 4, 1, 30))
    );
}

#[test]
fn a_frequent_job_skips_the_gap_and_the_second_pass_of_the_fold() {
    eastern();
    let w = Wall::starting(est(2024, 3, 10, 0, 0));
    let mut t = w.trigger("0 */30 * * * *");
    assert_eq!(
        w.series(&mut t, est(2024, 3, 10, 1, 0), 4),
        vec![
            est(2024, 3, 10, 1, 0),
            est(2024, 3, 10, 1, 30),
            edt(2024, 3, 10, 3, 0), // 02:00 moves to 03:00, once
            edt(2024, 3, 10, 3, 30),
        ]
    );
    let w = Wall::starting(edt(2024, 11, 3, 0, 0));
    let mut t = w.trigger("0 */30 * * * *");
    assert_eq!(
        w.series(&mut t, edt(2024, 11, 3, 0, 30), 5),
        vec![
            edt(2024, 11, 3, 0, 30),
            edt(2024, 11, 3, 1, 0),
            edt(2024, 11, 3, 1, 30),
            est(2024, 11, 3, 2, 0), // 01:00 and 01:30 EST already ran, as EDT
            est(2024, 11, 3, 2, 30),
        ]
    );
}

#[test]
fn a_seconds_job_waits_out_the_second_pass() {
    eastern();
    let w = Wall::starting(edt(2024, 11, 3, 0, 0));
    let mut t = w.trigger("*/10 * * * * *");
    // 01:15 EST is in the second pass: every match up to 02:00 ran an hour ago, as EDT.
    assert_eq!(
        w.first(&mut t, est(2024, 11, 3, 1, 15)),
        Some(est(2024, 11, 3, 2, 0))
    );
    let last_edt = edt(2024, 11, 3, 1, 59) + Duration::from_secs(50);
    assert_eq!(w.next(&mut t, last_edt), Some(est(2024, 11, 3, 2, 0)));
}

#[test]
fn hourly_on_a_manual_clock_across_spring_forward() {
    eastern();
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .build();
    let start = clock.now();
    // The clock starts at 00:30 EST on the spring-forward night.
    let wall0 = est(2024, 3, 10, 0, 30);
    let hourly = CronTrigger::parse("0 0 * * * *")
        .unwrap()
        .in_local_time()
        .anchored_at(start, SystemTime::from(wall0));
    let runs = Arc::new(AtomicU32::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_periodic(Periodic::with_trigger(hourly), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let at = |wall: DateTime<Utc>| start + (wall - wall0).to_std().unwrap();
    assert_eq!(fut.deadline(), at(est(2024, 3, 10, 1, 0)));
    let hour = Duration::from_secs(3600);
    let half = Duration::from_secs(1800);
    clock.advance(half); // 01:00 EST
    assert!(pool.wait_idle(Duration::from_secs(10)));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // One real hour later it is 03:00 EDT: the one run for local 02:00 and 03:00.
    assert_eq!(fut.deadline(), at(edt(2024, 3, 10, 3, 0)));
    clock.advance(hour);
    assert!(pool.wait_idle(Duration::from_secs(10)));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(fut.deadline(), at(edt(2024, 3, 10, 4, 0)));
    clock.advance(hour);
    assert!(pool.wait_idle(Duration::from_secs(10)));
    assert_eq!(runs.load(Ordering::SeqCst), 3);
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
            "0 30 2 * * *", "0 0 2 * * *", "0 0 * * * *", "0 59 1 * * *",
        ]),
        fall in any::<bool>(),
        offset_ms in 0u64..(6 * 3600 * 1000),
    ) {
        eastern();
        // From 23:00 local the evening before each change, for six hours.
        let base = if fall { edt(2024, 11, 2, 23, 0) } else { est(2024, 3, 9, 23, 0) };
        let w = Wall::starting(base);
        let mut t = w.trigger(expr);
        let from = base + Duration::from_millis(offset_ms);
        let mut last = w.first(&mut t, from).unwrap();
        prop_assert!(last >= from);
        for _ in 0..5 {
            let next = w.next(&mut t, last).unwrap();
            prop_assert!(next > last, "{} then {}", last, next);
            prop_assert!(next - last <= chrono::TimeDelta::hours(25));
            last = next;
        }
    }
}
