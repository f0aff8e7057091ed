//! Graceful shutdown: what happens to periodic jobs and delayed tasks under each
//! run-after-shutdown policy, what `shutdown_now` hands back, and how `await_termination`
//! reports the end.
//!
//! Run with `cargo run --example graceful_shutdown`; it finishes in well under a second.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use schedpool::{ScheduledFuture, ScheduledThreadPoolExecutor, TaskError};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A periodic job that counts its runs and tells the main thread after each one.
fn ticker(runs: &Arc<AtomicU32>, tick: &mpsc::Sender<()>) -> impl FnMut() + Send + 'static {
    let (runs, tick) = (runs.clone(), tick.clone());
    move || {
        runs.fetch_add(1, Ordering::Relaxed);
        let _ = tick.send(());
    }
}

/// Waits for `n` ticks (bounded, so the example cannot hang).
fn wait_ticks(ticks: &mpsc::Receiver<()>, n: usize) {
    for _ in 0..n {
        ticks
            .recv_timeout(Duration::from_secs(5))
            .expect("a periodic job stopped ticking");
    }
}

/// One line about a task that is done (or not yet).
fn describe<T: std::fmt::Debug>(name: &str, fut: ScheduledFuture<T>) {
    let state = if !fut.is_done() {
        "still pending".to_owned()
    } else {
        match fut.get() {
            Ok(value) => format!("ran, returned {value:?}"),
            Err(TaskError::Cancelled) => "cancelled".to_owned(),
            Err(err) => format!("failed: {err}"),
        }
    };
    println!("    {name:<28} {state}");
}

fn default_policies() {
    println!("1. shutdown() with the default policies");
    println!("   (periodic tasks are cancelled, delayed one-shots still run)");
    let pool = ScheduledThreadPoolExecutor::new(2);
    let (tick_tx, ticks) = mpsc::channel();
    let heartbeat_runs = Arc::new(AtomicU32::new(0));
    let heartbeat = pool
        .schedule_at_fixed_rate(Duration::ZERO, ms(10), ticker(&heartbeat_runs, &tick_tx))
        .unwrap();
    let poller = pool
        .schedule_with_fixed_delay(ms(5), ms(15), || ())
        .unwrap();
    let report = pool.schedule(ms(80), || "daily report").unwrap();
    let cleanup = pool
        .schedule(Duration::from_secs(3600), || "hourly cleanup")
        .unwrap();

    wait_ticks(&ticks, 3);
    pool.shutdown();
    println!(
        "   after shutdown: heartbeat ran {} times; is_shutdown={} is_terminating={}",
        heartbeat_runs.load(Ordering::Relaxed),
        pool.is_shutdown(),
        pool.is_terminating()
    );
    heartbeat.wait();
    poller.wait();
    describe("heartbeat (fixed rate)", heartbeat);
    describe("poller (fixed delay)", poller);

    // The report is kept and runs at its deadline; the hour-long cleanup is kept too, so
    // the pool cannot terminate yet.
    report.wait();
    describe("report (delayed 80 ms)", report);
    let terminated = pool.await_termination(ms(50));
    println!("   await_termination(50 ms) = {terminated}: the 1-hour cleanup is still queued");

    // Turning the delayed-task policy off after shutdown cancels it at once.
    pool.set_execute_existing_delayed_tasks_after_shutdown(false);
    describe("cleanup (delayed 1 hour)", cleanup);
    let terminated = pool.await_termination(Duration::from_secs(5));
    println!(
        "   await_termination = {terminated}, queue_len = {}",
        pool.queue_len()
    );
    print_stats(&pool);
}

fn keep_periodic_drop_delayed() {
    println!("2. shutdown() with continue_existing_periodic_tasks_after_shutdown(true)");
    println!("   and execute_existing_delayed_tasks_after_shutdown(false)");
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .continue_existing_periodic_tasks_after_shutdown(true)
        .execute_existing_delayed_tasks_after_shutdown(false)
        .build();
    let (tick_tx, ticks) = mpsc::channel();
    let heartbeat_runs = Arc::new(AtomicU32::new(0));
    let heartbeat = pool
        .schedule_at_fixed_rate(Duration::ZERO, ms(10), ticker(&heartbeat_runs, &tick_tx))
        .unwrap();
    let report = pool.schedule(ms(200), || "report").unwrap();
    let due_now = pool.submit(|| "due at once").unwrap();

    wait_ticks(&ticks, 2);
    pool.shutdown();
    let at_shutdown = heartbeat_runs.load(Ordering::Relaxed);
    describe("report (delayed 200 ms)", report);
    due_now.wait();
    describe("task due at once", due_now);
    match pool.submit(|| ()) {
        Ok(_) => println!("    new submission               accepted (unexpected)"),
        Err(err) => println!("    new submission               rejected: {err}"),
    }

    wait_ticks(&ticks, 3);
    println!(
        "    heartbeat                    still ticking: {} runs at shutdown, {} now",
        at_shutdown,
        heartbeat_runs.load(Ordering::Relaxed)
    );
    heartbeat.cancel();
    describe("heartbeat after cancel()", heartbeat);
    let terminated = pool.await_termination(Duration::from_secs(5));
    println!("   await_termination = {terminated}");
    print_stats(&pool);
}

fn shutdown_now_hands_back_pending_tasks() {
    println!("3. shutdown_now() on a busy one-thread pool");
    let pool = ScheduledThreadPoolExecutor::new(1);
    let (started_tx, started) = mpsc::channel();
    let long_job = pool
        .schedule_with_context(Duration::ZERO, move |cx| {
            let _ = started_tx.send(());
            // A wait inside the run that shutdown_now (or an interrupt) cuts short.
            if cx.sleep(ms(400)) {
                "long job finished"
            } else {
                "long job stopped early: asked to stop while it slept"
            }
        })
        .unwrap();
    started.recv_timeout(Duration::from_secs(5)).unwrap();
    let email = pool
        .named("email")
        .schedule(ms(30), || "email sent")
        .unwrap();
    let backup = pool
        .named("backup")
        .schedule(ms(10), || "backup done")
        .unwrap();
    let metrics = pool.schedule_at_fixed_rate(ms(20), ms(20), || ()).unwrap();

    let begun = Instant::now();
    let pending = pool.shutdown_now();
    println!(
        "   shutdown_now returned {} pending tasks, in deadline order (queue_len now {})",
        pending.len(),
        pool.queue_len()
    );
    let mut pending = pending.into_iter();
    // Run the first one ourselves, on this thread; drop the rest (their futures are
    // cancelled). The running job was asked to stop: its `cx.sleep` returns early.
    if let Some(first) = pending.next() {
        println!(
            "   running the first pending task ({:?}, due {:?} after shutdown_now) on the caller's thread",
            first.name().unwrap_or("unnamed"),
            first.deadline().saturating_duration_since(begun)
        );
        first.run();
    }
    for task in pending {
        let kind = if task.is_periodic() {
            "periodic"
        } else {
            "one-shot"
        };
        println!(
            "   dropping a pending {kind} task ({:?})",
            task.name().unwrap_or("unnamed")
        );
        drop(task);
    }
    describe("backup (10 ms)", backup);
    describe("metrics (fixed rate, 20 ms)", metrics);
    describe("email (30 ms)", email);
    let terminated = pool.await_termination(Duration::from_secs(5));
    describe("long job (was running)", long_job);
    println!(
        "   await_termination = {terminated} after {:?} (the running job, asked to stop, returned early)",
        begun.elapsed()
    );
    print_stats(&pool);
}

fn print_stats(pool: &ScheduledThreadPoolExecutor) {
    let s = pool.stats();
    println!(
        "   stats: tasks {}, completed runs {}, rejected {}, pool size {}, terminated {}\n",
        s.task_count,
        s.completed_task_count,
        s.rejected_count,
        s.pool_size,
        pool.is_terminated()
    );
}

fn main() {
    default_policies();
    keep_periodic_drop_delayed();
    shutdown_now_hands_back_pending_tasks();
}
