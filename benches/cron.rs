//! What a cron search costs the thread that asks: `CronTrigger::parse` (with its pruning
//! of the year field) and `first_deadline`, which `schedule_periodic` calls on the
//! caller's thread, for the slow shapes: an expression whose matches are all past
//! (refused as `NeverDue`), rare matches, a year far away, a year list that croner would
//! otherwise walk day by day, and an every-second job across a daylight-saving gap.
//!
//! `cargo bench --bench cron`. Plain `Instant` timing, each figure the median of
//! `REPEATS` runs of `CALLS` calls (with the smallest and largest), printed as a markdown
//! table. A few seconds.

#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant, UNIX_EPOCH};

use schedpool::{CronTrigger, ManualClock, Periodic, ScheduledThreadPoolExecutor, Trigger};

const REPEATS: usize = 7;
const CALLS: u32 = 200;

/// 2024-06-01 00:00 UTC, and 2024-03-10 06:59:58 UTC (01:59:58 EST, two seconds before
/// New York springs forward).
const JUNE_2024: u64 = 1_717_200_000;
const NEW_YORK_GAP: u64 = 1_710_053_998;

/// Median, smallest and largest µs per call of `REPEATS` runs of `CALLS` calls of `f`.
fn measure(mut f: impl FnMut()) -> [f64; 3] {
    let mut v: Vec<f64> = (0..REPEATS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..CALLS {
                f();
            }
            start.elapsed().as_secs_f64() * 1e6 / f64::from(CALLS)
        })
        .collect();
    v.sort_by(|a, b| a.total_cmp(b));
    [v[REPEATS / 2], v[0], v[REPEATS - 1]]
}

fn row(what: &str, [median, min, max]: [f64; 3]) {
    println!("| {what} | {median:.1} | {min:.1} – {max:.1} |");
}

/// `first_deadline(t0 + after)` of `expr` read in `zone`, `t0` being `wall` seconds after
/// the Unix epoch.
fn first_deadline(expr: &str, zone: Option<&str>, wall: u64, after: Duration) -> [f64; 3] {
    let t0 = Instant::now();
    let wall = UNIX_EPOCH + Duration::from_secs(wall);
    let mut trigger = CronTrigger::parse(expr).unwrap();
    if let Some(name) = zone {
        trigger = trigger.in_time_zone(name).unwrap();
    }
    let mut trigger = trigger.anchored_at(t0, wall);
    measure(|| {
        black_box(trigger.first_deadline(black_box(t0 + after)));
    })
}

fn main() {
    println!("| call | µs per call, median | min – max |");
    println!("|---|---|---|");
    for expr in [
        "@hourly",
        "0 0 0 29 2 +MON",
        "0 0 0 29 2 * 2025-4991/2,4992",
    ] {
        let parser = croner::parser::CronParser::builder()
            .seconds(croner::parser::Seconds::Optional)
            .build();
        row(
            &format!("croner's own `parse(\"{expr}\")`, for comparison"),
            measure(|| {
                black_box(parser.parse(black_box(expr)).unwrap());
            }),
        );
        row(
            &format!("`parse(\"{expr}\")`"),
            measure(|| {
                black_box(CronTrigger::parse(black_box(expr)).unwrap());
            }),
        );
    }
    let ny = Some("America/New_York");
    let (zero, ms) = (Duration::ZERO, Duration::from_millis(1));
    let cases = [
        ("every minute", "0 * * * * *", None, JUNE_2024, zero),
        (
            "all years past (`… 2000-2023`): `None`",
            "0 0 0 1 1 * 2000-2023",
            None,
            JUNE_2024,
            zero,
        ),
        (
            "29 February on a Monday (2044)",
            "0 0 0 29 2 +MON",
            None,
            JUNE_2024,
            zero,
        ),
        (
            "a year far away (4999)",
            "0 0 0 1 1 * 4999",
            None,
            JUNE_2024,
            zero,
        ),
        (
            "29 February in odd years and 4992",
            "0 0 0 29 2 * 2025-4991/2,4992",
            None,
            JUNE_2024,
            zero,
        ),
        // From 01:59:59.001 EST: croner walks the hour that does not exist, second by second.
        (
            "every second, into New York's spring gap",
            "* * * * * *",
            ny,
            NEW_YORK_GAP + 1,
            ms,
        ),
        (
            "02:30 daily, New York, the night of the gap",
            "0 30 2 * * *",
            ny,
            NEW_YORK_GAP,
            zero,
        ),
    ];
    for (what, expr, zone, wall, after) in cases {
        row(
            &format!("`first_deadline`: {what}"),
            first_deadline(expr, zone, wall, after),
        );
    }
    // The whole refusal, on the caller's thread: `schedule_periodic` with all years past.
    let clock = ManualClock::new();
    clock.set_wall_time(UNIX_EPOCH + Duration::from_secs(JUNE_2024));
    let pool = ScheduledThreadPoolExecutor::builder().clock(clock).build();
    let past = CronTrigger::parse("0 0 0 1 1 * 2000-2023").unwrap();
    row(
        "`schedule_periodic` refusing all years past (`NeverDue`)",
        measure(|| {
            let spec = Periodic::with_trigger(past.clone());
            black_box(pool.schedule_periodic(spec, || ()).unwrap_err());
        }),
    );
}
