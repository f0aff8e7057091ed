//! A report on every second, scheduled by a cron expression with a seconds field, then a
//! clean shutdown. Runs for about four seconds.
//!
//! The expression is read in local time (the `TZ` variable, else the system's zone);
//! pass `--utc` to read it in UTC. Each report prints the wall-clock time it ran at: just
//! after a whole second, since no task runs before its deadline.
//!
//! ```text
//! cargo run --example cron_report --features cron [-- --utc]
//! ```

use std::time::Duration;

use chrono::{Local, Utc};
use schedpool::{CronTrigger, Periodic, ScheduledThreadPoolExecutor};

/// Six fields, seconds first: every second.
const EXPR: &str = "*/1 * * * * *";
const REPORTS: u64 = 4;

fn main() {
    let utc = std::env::args().any(|arg| arg == "--utc");
    let trigger = CronTrigger::parse(EXPR).expect("a valid cron expression");
    let trigger = if utc {
        trigger
    } else {
        trigger.in_local_time()
    };
    let zone = if utc {
        "UTC".to_owned()
    } else {
        format!("local time (now UTC{})", Local::now().format("%:z"))
    };
    println!("expression {EXPR:?} in {zone}: {REPORTS} reports, one a second");

    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .thread_name_prefix("report-")
        .build();
    let spec = Periodic::with_trigger(trigger).max_runs(REPORTS);
    let reports = pool
        .schedule_periodic(spec, move || {
            let at = if utc {
                Utc::now().format("%H:%M:%S%.3f UTC").to_string()
            } else {
                Local::now().format("%H:%M:%S%.3f %:z").to_string()
            };
            println!("report at {at}");
        })
        .expect("accepted");

    // The future completes with Ok(()) after the last report.
    reports.get().expect("no report panicked");
    pool.shutdown();
    let terminated = pool.await_termination(Duration::from_secs(5));
    println!("{REPORTS} reports done; shut down, terminated: {terminated}");
}
