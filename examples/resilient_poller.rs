//! A polling loop that survives failures and can be nudged: fixed delay between polls,
//! `OnPanic::Continue` so one failing poll does not kill the loop, `max_lateness` so a
//! poll that could not start in time is skipped instead of piling up, and `reschedule` to
//! poll right now when someone asks. Runs in about a second and a half.
//!
//! `cargo run --example resilient_poller`

use schedpool::{OnPanic, Periodic, ScheduledThreadPoolExecutor};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    std::panic::set_hook(Box::new(|_| {})); // failures are reported through the stats below
    let start = Instant::now();
    let ms = move || start.elapsed().as_millis();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .late_threshold(Duration::from_millis(50))
        .build();

    let polls = Arc::new(AtomicU32::new(0));
    let spec = Periodic::with_fixed_delay(Duration::from_millis(200))
        .on_panic(OnPanic::Continue)
        .max_lateness(Duration::from_millis(100));
    let p = polls.clone();
    let poller = pool
        .schedule_periodic(spec, move || {
            let n = p.fetch_add(1, Ordering::SeqCst) + 1;
            if n == 3 {
                println!(
                    "[{:>4} ms] poll #{n}: the upstream is down (this poll panics)",
                    ms()
                );
                panic!("upstream unavailable");
            }
            println!("[{:>4} ms] poll #{n}: ok", ms());
        })
        .expect("accepted");

    // A slow job hogs the only worker, so the poll due meanwhile is too late: skipped.
    std::thread::sleep(Duration::from_millis(700));
    pool.execute(move || {
        println!("[{:>4} ms] a slow job occupies the worker for 400 ms", ms());
        std::thread::sleep(Duration::from_millis(400));
    })
    .expect("accepted");

    // Someone needs fresh data now: move the next poll to this instant.
    std::thread::sleep(Duration::from_millis(500));
    println!(
        "[{:>4} ms] fresh data requested: rescheduling the next poll to now",
        ms()
    );
    assert!(poller.reschedule(Instant::now()));
    std::thread::sleep(Duration::from_millis(150));

    poller.cancel();
    pool.close();
    let stats = pool.stats();
    println!(
        "[{:>4} ms] done: {} polls ran, {} panicked and the loop went on, {} skipped as too late, {} started late (> 50 ms)",
        ms(),
        polls.load(Ordering::SeqCst),
        stats.panicked_count,
        stats.skipped_runs,
        stats.late_count
    );
}
