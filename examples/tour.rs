//! A tour of schedpool: the main demonstration. Runs in about a second.
//!
//! `cargo run --release --example tour`

use schedpool::{CancelHandle, ScheduledThreadPoolExecutor, TaskError};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

fn main() {
    // Panics inside tasks are caught by the pool; keep the default hook's report short.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .copied()
            .unwrap_or("?");
        println!("       (a task panicked on {}: {msg})", thread_name());
    }));
    let start = Instant::now();
    let at = move || format!("{:>4}", start.elapsed().as_millis());
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .thread_name_prefix("tour-")
        .build();

    // 1. A one-shot task that returns a value.
    let answer = pool
        .schedule(Duration::from_millis(50), || 6 * 7)
        .expect("accepted");
    println!("[{} ms] one-shot scheduled, due in 50 ms", at());
    let value = answer.get().unwrap();
    println!("[{} ms] one-shot returned {value}", at());

    // 2. A fixed-rate heartbeat: every 100 ms, measured from the previous deadline.
    let beats = Arc::new(AtomicU32::new(0));
    let heartbeat = {
        let beats = beats.clone();
        pool.schedule_at_fixed_rate(Duration::ZERO, Duration::from_millis(100), move || {
            let n = beats.fetch_add(1, Ordering::SeqCst) + 1;
            println!("[{} ms] heartbeat #{n} on {}", at(), thread_name());
        })
        .expect("accepted")
    };

    // 3. A fixed-delay polling loop that stops itself through its CancelHandle: each poll
    //    starts 60 ms after the previous one ended; the fourth poll finds "the data" and
    //    cancels the loop from inside.
    let own_handle: Arc<OnceLock<CancelHandle>> = Arc::new(OnceLock::new());
    let polls = Arc::new(AtomicU32::new(0));
    let poller = {
        let own_handle = own_handle.clone();
        let polls = polls.clone();
        pool.schedule_with_fixed_delay(
            Duration::from_millis(30),
            Duration::from_millis(60),
            move || {
                let n = polls.fetch_add(1, Ordering::SeqCst) + 1;
                if n < 4 {
                    println!("[{} ms] poll #{n}: nothing yet", at());
                } else {
                    println!("[{} ms] poll #{n}: data found, stopping the poller", at());
                    own_handle
                        .get()
                        .expect("set before the first poll")
                        .cancel();
                }
            },
        )
        .expect("accepted")
    };
    own_handle.set(poller.cancel_handle()).expect("set once");

    // 4. A request timeout that is cancelled before it fires: the response came first.
    //    It is named, so the queue's snapshot (and its log lines) say what it is.
    let timeout = pool
        .named("request-timeout")
        .schedule(Duration::from_millis(300), || {
            println!("TIMEOUT (must not print)")
        })
        .expect("accepted");
    for task in pool.scheduled_tasks() {
        println!(
            "[{} ms] queued: {:<16} {:<11} due in {} ms",
            at(),
            task.name.as_deref().unwrap_or("(unnamed)"),
            task.kind,
            task.deadline
                .saturating_duration_since(Instant::now())
                .as_millis()
        );
    }
    std::thread::sleep(Duration::from_millis(20)); // the "response" arrives
    println!(
        "[{} ms] response arrived; timeout cancelled: {} (queue length now {})",
        at(),
        timeout.cancel(),
        pool.queue_len()
    );

    // 5. A task that panics: its future reports the panic, and the pool goes on.
    let boom = pool
        .submit(|| -> u32 { panic!("simulated failure") })
        .expect("accepted");
    match boom.get() {
        Err(err @ TaskError::Panicked(_)) => {
            println!("[{} ms] the panicking task reported: {err}", at())
        }
        other => println!("unexpected: {other:?}"),
    }
    let still_fine = pool
        .submit(|| "the pool still runs tasks")
        .expect("accepted");
    println!("[{} ms] {}", at(), still_fine.get().unwrap());

    // Let the heartbeat and the poller run for a while.
    poller.wait();
    println!(
        "[{} ms] poller done after {} polls (cancelled: {})",
        at(),
        polls.load(Ordering::SeqCst),
        poller.is_cancelled()
    );
    std::thread::sleep(Duration::from_millis(250));

    // 6. A clean shutdown: the heartbeat (periodic) is cancelled by the default policy,
    //    close() waits for the workers to exit.
    heartbeat.cancel();
    pool.close();
    let stats = pool.stats();
    println!(
        "[{} ms] shut down: terminated={} heartbeats={} completed runs={} panicked={} threads started={}",
        at(),
        pool.is_terminated(),
        beats.load(Ordering::SeqCst),
        stats.completed_task_count,
        stats.panicked_count,
        stats.largest_pool_size
    );
    println!();
    println!(
        "More examples: graceful_shutdown, resilient_poller, cron_report, delay_queue, \
         timeouts, priority_queue; async_jobs (--features tokio), service (--features \
         tokio,metrics,serde: metrics, a JSON task list, pause and run-now, SIGTERM), \
         cluster_job (--features postgres)."
    );
}

fn thread_name() -> String {
    std::thread::current().name().unwrap_or("?").to_owned()
}
