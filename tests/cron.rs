//! `CronTrigger` in UTC: deadlines from `first_deadline` and `next_deadline` on a fixed
//! anchor, month boundaries, parse errors, and end-to-end runs on a `ManualClock`.
//! Local time and daylight saving are in `cron_local.rs`, which sets `TZ`.
#![cfg(feature = "cron")]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, TimeZone, Utc};
use proptest::prelude::*;
use schedpool::{
    CronError, CronTrigger, ManualClock, Periodic, ScheduledThreadPoolExecutor, Trigger,
    TriggerContext,
};

const IDLE: Duration = Duration::from_secs(10);

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
}

/// A fixed mapping between instants and UTC wall-clock time, so a test states deadlines
/// as dates.
struct Wall {
    t0: Instant,
    wall0: DateTime<Utc>,
}

impl Wall {
    /// Instants from now on are read as wall-clock times from `wall0` on.
    fn starting(wall0: DateTime<Utc>) -> Self {
        Wall {
            t0: Instant::now(),
            wall0,
        }
    }

    fn trigger(&self, expr: &str) -> CronTrigger {
        CronTrigger::parse(expr)
            .unwrap()
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

    fn next(
        &self,
        trigger: &mut CronTrigger,
        scheduled: DateTime<Utc>,
        finished: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let ctx = TriggerContext {
            scheduled: self.instant(scheduled),
            started: self.instant(scheduled),
            finished: self.instant(finished),
            runs: 1,
            panicked: false,
        };
        let at = trigger.next_deadline(&ctx)?;
        Some(self.wall(at))
    }

    /// The deadlines after `from`, each run ending at its deadline.
    fn series(
        &self,
        trigger: &mut CronTrigger,
        from: DateTime<Utc>,
        n: usize,
    ) -> Vec<DateTime<Utc>> {
        let mut out = vec![self.first(trigger, from).unwrap()];
        while out.len() < n {
            let last = *out.last().unwrap();
            out.push(self.next(trigger, last, last).unwrap());
        }
        out
    }
}

#[test]
fn every_five_minutes() {
    let w = Wall::starting(utc(2024, 1, 1, 10, 0, 0));
    let from = utc(2024, 1, 1, 10, 2, 30);
    let expected = vec![
        utc(2024, 1, 1, 10, 5, 0),
        utc(2024, 1, 1, 10, 10, 0),
        utc(2024, 1, 1, 10, 15, 0),
    ];
    // Five fields (seconds 0) and six fields mean the same.
    assert_eq!(w.series(&mut w.trigger("*/5 * * * *"), from, 3), expected);
    assert_eq!(w.series(&mut w.trigger("0 */5 * * * *"), from, 3), expected);
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
        .anchored_at(t0, SystemTime::from(wall0));
    let expected = t0 + Duration::from_secs(30);
    assert_eq!(t.first_deadline(t0), Some(expected));
    if let Some(earlier) = t0.checked_sub(Duration::from_secs(3600)) {
        assert_eq!(t.first_deadline(earlier), Some(expected));
    }
}

#[test]
fn a_pattern_that_never_matches_has_no_deadline() {
    let w = Wall::starting(utc(2024, 1, 1, 0, 0, 0));
    let mut t = w.trigger("0 0 0 30 2 *"); // February 30th
    assert_eq!(w.first(&mut t, utc(2024, 1, 1, 0, 0, 0)), None);
}

#[test]
fn bad_expressions_are_errors_with_the_expression_and_reason() {
    for expr in [
        "",
        "nonsense",
        "* * *",
        "* * * * * * *",
        "60 * * * *",
        "0 0 32 * *",
        "*/0 * * * *",
        "5-1 * * * *",
        "0 0 * * MON#6",
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
    assert!(err.to_string().contains("five or six fields"), "{err}");
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

/// An executor on a `ManualClock` whose start reads as `wall0` to `trigger`.
fn pool(clock: &ManualClock) -> ScheduledThreadPoolExecutor {
    ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .build()
}

fn counter() -> (Arc<AtomicU32>, impl FnMut() + Send + 'static) {
    let runs = Arc::new(AtomicU32::new(0));
    let r = runs.clone();
    (runs, move || {
        r.fetch_add(1, Ordering::SeqCst);
    })
}

#[test]
fn every_minute_on_a_manual_clock() {
    let clock = ManualClock::new();
    let pool = pool(&clock);
    let start = clock.now();
    // The clock starts at 12:00:30, half way between two matches.
    let wall0 = SystemTime::from(utc(2024, 6, 1, 12, 0, 30));
    let every_minute = CronTrigger::parse("0 * * * * *")
        .unwrap()
        .anchored_at(start, wall0);
    let (runs, task) = counter();
    let fut = pool
        .schedule_periodic(Periodic::with_trigger(every_minute), task)
        .unwrap();
    assert_eq!(fut.deadline(), start + Duration::from_secs(30));
    assert!(pool.wait_idle(IDLE));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    clock.advance(Duration::from_secs(29));
    assert!(pool.wait_idle(IDLE));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "12:00:59");
    clock.advance(Duration::from_secs(1));
    assert!(pool.wait_idle(IDLE));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "12:01:00");
    for minute in 2..=30u32 {
        clock.advance(Duration::from_secs(60));
        assert!(pool.wait_idle(IDLE));
        assert_eq!(runs.load(Ordering::SeqCst), minute, "12:{minute:02}:00");
        let next = start + Duration::from_secs(30 + 60 * u64::from(minute));
        assert_eq!(fut.deadline(), next);
    }
    // A jump of ten minutes at once runs the one overdue match, then goes on from now.
    clock.advance(Duration::from_secs(600));
    assert!(pool.wait_idle(IDLE));
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
    let wall0 = SystemTime::from(utc(2024, 6, 1, 12, 0, 30));
    let trigger = CronTrigger::parse("0 * * * * *")
        .unwrap()
        .anchored_at(start, wall0);
    let (runs, task) = counter();
    // now + 90 s is 12:02:00 exactly, a match: it is the first deadline (at or after).
    let spec = Periodic::with_trigger(trigger)
        .initial_delay(Duration::from_secs(90))
        .max_runs(2);
    let fut = pool.schedule_periodic(spec, task).unwrap();
    assert_eq!(fut.deadline(), start + Duration::from_secs(90));
    for _ in 0..5 {
        clock.advance(Duration::from_secs(60));
        assert!(pool.wait_idle(IDLE));
    }
    fut.get().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    pool.close();
}

#[test]
fn a_run_that_overruns_matches_skips_them() {
    let clock = ManualClock::new();
    let pool = pool(&clock);
    let start = clock.now();
    let wall0 = SystemTime::from(utc(2024, 6, 1, 12, 0, 30));
    let trigger = CronTrigger::parse("0 * * * * *")
        .unwrap()
        .anchored_at(start, wall0);
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
    clock.advance(Duration::from_secs(30));
    assert!(pool.wait_idle(IDLE));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // 12:02 and 12:03 were overrun; the next is 12:04.
    assert_eq!(fut.deadline(), start + Duration::from_secs(210));
    clock.advance(Duration::from_secs(30));
    assert!(pool.wait_idle(IDLE));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert!(fut.cancel());
    pool.close();
}

#[test]
fn no_match_finishes_the_task_without_a_run() {
    let clock = ManualClock::new();
    let pool = pool(&clock);
    let (runs, task) = counter();
    let never = CronTrigger::parse("0 0 0 31 4 *").unwrap(); // April 31st
    let fut = pool
        .schedule_periodic(Periodic::with_trigger(never), task)
        .unwrap();
    fut.get().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0);
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
    "@weekly",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// CR3: parsing any string returns, never panics.
    #[test]
    fn parse_never_panics(expr in "[0-9*/,LW#?@A-Za-z -]{0,40}") {
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
