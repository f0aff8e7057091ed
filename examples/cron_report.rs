//! A report on every second, scheduled by a cron expression with a seconds field, then a
//! clean shutdown. Runs for about four seconds.
//!
//! The expression is read in local time (the `TZ` variable, else the system's zone);
//! pass `--utc` to read it in UTC, or `--zone NAME` to read it in a named zone such as
//! `Asia/Tokyo`. Each report prints the wall-clock time it ran at, in that zone: just
//! after a whole second, since no task runs before its deadline.
//!
//! ```text
//! cargo run --example cron_report --features cron [-- --utc | --zone Asia/Tokyo]
//! ```

use std::time::Duration;

use jiff::tz::TimeZone;
use jiff::Timestamp;
use schedpool::{CronTrigger, Periodic, ScheduledThreadPoolExecutor};

/// Six fields, seconds first: every second.
const EXPR: &str = "*/1 * * * * *";
const REPORTS: u64 = 4;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let zone_name = args
        .iter()
        .position(|arg| arg == "--zone")
        .and_then(|i| args.get(i + 1));
    let trigger = CronTrigger::parse(EXPR).expect("a valid cron expression");
    let (trigger, zone, tz) = match zone_name {
        Some(name) => {
            let tz = TimeZone::get(name).expect("a time zone of the tz database");
            let trigger = trigger.in_time_zone(name).expect("the same zone");
            (trigger, name.clone(), tz)
        }
        None if args.iter().any(|arg| arg == "--utc") => (trigger, "UTC".to_owned(), TimeZone::UTC),
        None => {
            let tz = TimeZone::system();
            let offset = tz.to_offset(Timestamp::now());
            (
                trigger.in_local_time(),
                format!("local time (now UTC{offset})"),
                tz,
            )
        }
    };
    println!("expression {EXPR:?} in {zone}: {REPORTS} reports, one a second");

    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .thread_name_prefix("report-")
        .build();
    let spec = Periodic::with_trigger(trigger).max_runs(REPORTS);
    let reports = pool
        .schedule_periodic(spec, move || {
            let now = Timestamp::now().to_zoned_datetime(tz.clone());
            println!("report at {}", now.strftime("%H:%M:%S%.3f %:z"));
        })
        .expect("accepted");

    // The future completes with Ok(()) after the last report.
    reports.get().expect("no report panicked");
    pool.shutdown();
    let terminated = pool.await_termination(Duration::from_secs(5));
    println!("{REPORTS} reports done; shut down, terminated: {terminated}");
}
