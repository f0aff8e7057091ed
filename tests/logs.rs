//! Logs fit for production: every event names its pool, and a flood of late starts or
//! rejections becomes a few warnings that carry how many they stand for.
//!
//! One test in this binary: it installs a process-wide subscriber that counts the events
//! (the workers log on their own threads, so a thread-local one would miss them).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedpool::{ManualClock, RejectionPolicy, ScheduledThreadPoolExecutor};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

const BOUND: Duration = Duration::from_secs(10);

/// Counts events by message; keeps the `pool` fields seen and sums `suppressed`.
#[derive(Default)]
struct Counting {
    late_lines: AtomicUsize,
    late_suppressed: AtomicU64,
    late_occurrences: AtomicU64,
    rejected_lines: AtomicUsize,
    rejected_suppressed: AtomicU64,
    rejected_occurrences: AtomicU64,
    /// Warnings that lack a field of their kind (`id` and `lateness_us`; `reason` and
    /// `policy`), the closing lines included.
    without_fields: AtomicUsize,
    events: AtomicUsize,
    without_pool: AtomicUsize,
    pools: Mutex<Vec<String>>,
    failed_errors: Mutex<Vec<String>>,
}

#[derive(Default)]
struct Fields {
    message: String,
    pool: Option<String>,
    suppressed: u64,
    occurrences: u64,
    error: String,
    id: bool,
    lateness_us: bool,
    reason: bool,
    policy: bool,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "error" => self.error = format!("{value:?}"),
            "reason" => self.reason = true,
            "policy" => self.policy = true,
            "pool" => self.pool = Some(format!("{value:?}").trim_matches('"').to_owned()),
            _ => {}
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "pool" {
            self.pool = Some(value.to_owned());
        }
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "suppressed" => self.suppressed = value,
            "occurrences" => self.occurrences = value,
            "id" => self.id = true,
            "lateness_us" => self.lateness_us = true,
            _ => {}
        }
    }
}

impl Subscriber for &'static Counting {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "schedpool" && *metadata.level() <= Level::WARN
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut f = Fields::default();
        event.record(&mut f);
        self.events.fetch_add(1, Ordering::SeqCst);
        match f.pool {
            Some(p) => self.pools.lock().unwrap().push(p),
            None => {
                self.without_pool.fetch_add(1, Ordering::SeqCst);
            }
        }
        if f.message == "periodic run failed" {
            self.failed_errors.lock().unwrap().push(f.error.clone());
        }
        let complete = match f.message.as_str() {
            "task started late" => f.id && f.lateness_us,
            "task rejected" => f.reason && f.policy,
            _ => true,
        };
        if !complete {
            self.without_fields.fetch_add(1, Ordering::SeqCst);
        }
        if f.message == "task started late" {
            self.late_lines.fetch_add(1, Ordering::SeqCst);
            self.late_suppressed
                .fetch_add(f.suppressed, Ordering::SeqCst);
            self.late_occurrences
                .fetch_add(f.occurrences, Ordering::SeqCst);
        } else if f.message == "task rejected" {
            self.rejected_lines.fetch_add(1, Ordering::SeqCst);
            self.rejected_suppressed
                .fetch_add(f.suppressed, Ordering::SeqCst);
            self.rejected_occurrences
                .fetch_add(f.occurrences, Ordering::SeqCst);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn floods_of_late_starts_and_rejections_become_a_few_lines_that_name_their_pool() {
    let counting: &'static Counting = Box::leak(Box::default());
    tracing::subscriber::set_global_default(counting).expect("the only subscriber here");

    // 5,000 tasks that all start 1 s late.
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .name("jobs")
        .core_pool_size(2)
        .clock(clock.clone())
        .build();
    assert_eq!(pool.name(), "jobs");
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..5_000 {
        let r = ran.clone();
        pool.schedule(Duration::from_secs(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    }
    let t0 = Instant::now();
    clock.advance(Duration::from_secs(2));
    assert!(pool.wait_idle(BOUND));
    let elapsed = t0.elapsed().as_secs();
    assert_eq!(ran.load(Ordering::SeqCst), 5_000);
    assert_eq!(
        pool.stats().late_count,
        5_000,
        "every late start is counted"
    );
    let lines = counting.late_lines.load(Ordering::SeqCst);
    assert!(lines >= 1, "the flood is reported");
    assert!(
        lines as u64 <= 2 + elapsed,
        "{lines} lines for 5,000 late starts in {elapsed} s: at most one a second"
    );
    let told = counting.late_occurrences.load(Ordering::SeqCst);
    assert!(
        told <= 5_000,
        "each late start is in at most one line's count: {told}"
    );

    // A bounded pool that rejects 2,000 submissions.
    let full = ScheduledThreadPoolExecutor::builder()
        .name("bounded")
        .core_pool_size(1)
        .clock(ManualClock::new())
        .max_queued_tasks(1)
        .rejection_policy(RejectionPolicy::Abort)
        .build();
    full.schedule(Duration::from_secs(60), || ()).unwrap();
    let t0 = Instant::now();
    for _ in 0..2_000 {
        assert!(full.schedule(Duration::from_secs(60), || ()).is_err());
    }
    let elapsed = t0.elapsed().as_secs();
    assert_eq!(full.stats().rejected_count, 2_000);
    let rejected = counting.rejected_lines.load(Ordering::SeqCst);
    assert!(
        rejected >= 1 && rejected as u64 <= 2 + elapsed,
        "{rejected} rejection lines for 2,000 in {elapsed} s"
    );
    assert!(rejected as u64 + counting.rejected_suppressed.load(Ordering::SeqCst) <= 2_000);

    // A failed run's warning prints the error with `{:#}`, which is how an `anyhow` error
    // (or any type that does the same) shows its causes.
    struct WithCause;
    impl std::fmt::Display for WithCause {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("sync failed")?;
            if f.alternate() {
                f.write_str(": disk full")?;
            }
            Ok(())
        }
    }
    let failing = pool
        .schedule_fallible(
            schedpool::Periodic::at_fixed_rate(Duration::from_secs(1)).stop_after_errors(1),
            |_| Err::<schedpool::Next, _>(WithCause),
        )
        .unwrap();
    clock.advance(Duration::from_secs(1));
    assert!(pool.wait_idle(BOUND));
    assert!(failing.get().unwrap().is_err());
    assert_eq!(
        *counting.failed_errors.lock().unwrap(),
        ["sync failed: disk full"],
        "the error with its cause"
    );

    drop(full.shutdown_now());
    pool.close();
    assert!(full.await_termination(BOUND));
    // Shutdown and termination write what the rate limit still held: the lines'
    // `occurrences` add up to the counters exactly.
    assert_eq!(
        counting.late_occurrences.load(Ordering::SeqCst),
        pool.stats().late_count,
        "5,000 late starts and the failing task's late run"
    );
    assert_eq!(
        counting.rejected_occurrences.load(Ordering::SeqCst),
        2_000,
        "the rejections counted since the last line are written at shutdown_now"
    );
    assert_eq!(
        counting.without_pool.load(Ordering::SeqCst),
        0,
        "every event carries its pool's name"
    );
    assert_eq!(
        counting.without_fields.load(Ordering::SeqCst),
        0,
        "every warning, the closing lines too, carries the fields of its kind"
    );
    let pools = counting.pools.lock().unwrap();
    assert!(pools.iter().any(|p| p == "jobs") && pools.iter().any(|p| p == "bounded"));
    assert!(
        pools.iter().all(|p| p == "jobs" || p == "bounded"),
        "{pools:?}"
    );
}
