//! Helpers the integration tests share (each test file that needs them says `mod common;`).
//!
//! Every wait here is for a condition, bounded by [`BOUND`]; none waits for time to pass.

// Each test binary uses a different subset.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use schedpool::{ManualClock, ScheduledFuture, ScheduledThreadPoolExecutor, TaskError};

/// The bound on every real-time wait for something that must happen.
pub(crate) const BOUND: Duration = Duration::from_secs(10);

/// `n` seconds.
pub(crate) fn sec(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// `n` milliseconds.
pub(crate) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A pool of `core` workers on a fresh virtual clock.
pub(crate) fn manual_pool(core: usize) -> (ManualClock, ScheduledThreadPoolExecutor) {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(core)
        .clock(clock.clone())
        .build();
    (clock, pool)
}

/// As [`manual_pool`], with the workers named `{prefix}N` (a test file's own threads,
/// told apart in a log or a panic message).
pub(crate) fn manual_pool_named(
    core: usize,
    prefix: &str,
) -> (ManualClock, ScheduledThreadPoolExecutor) {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(core)
        .thread_name_prefix(prefix)
        .clock(clock.clone())
        .build();
    (clock, pool)
}

/// A pool of `core` workers on a fresh virtual clock whose workers count their exits
/// (the stop hook): the clock, the pool and the count.
pub(crate) fn counted_pool(
    core: usize,
) -> (ManualClock, ScheduledThreadPoolExecutor, Arc<AtomicUsize>) {
    let clock = ManualClock::new();
    let stopped = Arc::new(AtomicUsize::new(0));
    let s = stopped.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(core)
        .clock(clock.clone())
        .on_thread_stop(move || {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    (clock, pool, stopped)
}

/// Polls `cond` until it holds or [`BOUND`] passes; `true` if it held.
pub(crate) fn wait_until(mut cond: impl FnMut() -> bool) -> bool {
    let give_up = Instant::now() + BOUND;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= give_up {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Counts drops of the value it is captured in.
#[derive(Debug)]
pub(crate) struct DropCount(pub(crate) Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[cfg(any(feature = "postgres", feature = "redis"))]
pub(crate) mod certs;
#[cfg(feature = "postgres")]
pub(crate) mod pg;
#[cfg(feature = "redis")]
pub(crate) mod redis;

#[cfg(feature = "cron")]
pub(crate) mod cron;

/// Waits until `cond` holds, panicking with `what` if [`BOUND`] passes first.
pub(crate) fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let end = Instant::now() + BOUND;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// A fresh shared counter.
pub(crate) fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

/// A counter's value.
pub(crate) fn load(c: &AtomicUsize) -> usize {
    c.load(Ordering::SeqCst)
}

/// A task that adds one to `c` each time it runs.
pub(crate) fn bump(c: &Arc<AtomicUsize>) -> impl FnMut() + Send + 'static {
    let c = c.clone();
    move || {
        c.fetch_add(1, Ordering::SeqCst);
    }
}

/// A gate tasks block on until the test opens it (Java's `CountDownLatch(1)` as a release
/// signal); the wait is bounded, so a failing test cannot wedge a worker forever.
#[derive(Clone, Default)]
pub(crate) struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    pub(crate) fn open(&self) {
        let (lock, cv) = &*self.0;
        *lock.lock().unwrap() = true;
        cv.notify_all();
    }

    pub(crate) fn wait(&self) {
        let (lock, cv) = &*self.0;
        let guard = lock.lock().unwrap();
        let (guard, _) = cv.wait_timeout_while(guard, BOUND, |open| !*open).unwrap();
        assert!(*guard, "gate never opened");
    }
}

/// The outcome of `fut`, waiting at most [`BOUND`] for it.
pub(crate) fn outcome<T>(fut: ScheduledFuture<T>) -> Result<T, TaskError> {
    assert!(fut.wait_timeout(BOUND), "the task did not finish in time");
    fut.get()
}

/// Whether `fut` ended cancelled, waiting at most [`BOUND`] for it to end.
pub(crate) fn is_cancelled<T>(fut: ScheduledFuture<T>) -> bool {
    assert!(fut.wait_timeout(BOUND), "the task did not end in time");
    matches!(fut.get(), Err(TaskError::Cancelled))
}

/// Shuts down and waits, at most [`BOUND`], for termination.
pub(crate) fn close(pool: &ScheduledThreadPoolExecutor) {
    pool.shutdown();
    assert!(pool.await_termination(BOUND), "the pool did not terminate");
}

/// On a one-worker pool, a task due now runs after every task due earlier.
pub(crate) fn flush(pool: &ScheduledThreadPoolExecutor) {
    assert!(pool.submit(|| ()).unwrap().wait_timeout(BOUND));
}

/// `shutdown_now`, its tasks dropped, and termination within [`BOUND`].
pub(crate) fn shutdown_now_and_wait(pool: &ScheduledThreadPoolExecutor) {
    drop(pool.shutdown_now());
    assert!(pool.await_termination(BOUND), "the pool did not terminate");
}

/// The fields of a span or an event, each as its `Debug` (a `&str` as itself): what the
/// tests' subscribers read.
#[derive(Default)]
pub(crate) struct FieldMap(pub(crate) std::collections::HashMap<&'static str, String>);

impl tracing::field::Visit for FieldMap {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name(), value.to_owned());
    }
}
