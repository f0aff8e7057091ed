//! `Builder::timer_precision`: wake-ups shared among deadlines within one precision,
//! never a task before its deadline, and nothing changed on a `ManualClock`.
//!
//! The real-clock tests assert order (never early) and a lateness bound far above any
//! precision used here (so a unit slip, milliseconds read as seconds, fails), never a
//! speed target.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedpool::{Builder, ManualClock, ScheduledThreadPoolExecutor, SpinPolicy};

mod common;
use common::BOUND;

/// Tasks with delays spread over 40 ms on a pool with `precision`: each starts at or
/// after its deadline, and less than `precision` + a generous second after it.
fn spread(precision: Duration, spin: SpinPolicy) {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .timer_precision(precision)
        .spin_policy(spin)
        .build();
    let futures: Vec<_> = (0..40u64)
        .map(|i| {
            let delay = Duration::from_micros(i * 1_013);
            let asked = Instant::now();
            let f = pool.schedule(delay, Instant::now).unwrap();
            (asked + delay, f)
        })
        .collect();
    for (i, (due, f)) in futures.into_iter().enumerate() {
        assert!(f.wait_timeout(BOUND), "task {i} ran");
        let ran = f.get().expect("ran");
        assert!(ran >= due, "task {i} started {:?} early", due - ran);
        assert!(
            ran - due < precision + Duration::from_secs(1),
            "task {i} late by {:?} with precision {precision:?}",
            ran - due
        );
    }
    pool.close();
}

#[test]
fn no_task_starts_before_its_deadline_whatever_the_precision() {
    for p in [0, 50, 1_000, 10_000] {
        spread(Duration::from_micros(p), SpinPolicy::Adaptive);
    }
    spread(Duration::from_millis(1), SpinPolicy::Never);
    spread(Duration::from_micros(20), SpinPolicy::Unbounded);
}

#[test]
fn a_periodic_task_keeps_its_rate_with_a_coarse_precision() {
    // Fixed rate: run k is due at first + k·period, however late the runs start.
    let pool = Builder::new()
        .core_pool_size(1)
        .timer_precision(Duration::from_millis(5))
        .build();
    let starts = Arc::new(Mutex::new(Vec::new()));
    let s = starts.clone();
    let asked = Instant::now();
    let initial = Duration::from_millis(3);
    let period = Duration::from_millis(7);
    let h = pool
        .schedule_at_fixed_rate(initial, period, move || {
            s.lock().unwrap().push(Instant::now())
        })
        .unwrap();
    assert!(common::wait_until(|| starts.lock().unwrap().len() >= 6));
    h.cancel();
    for (k, &at) in starts.lock().unwrap().iter().enumerate() {
        let due = asked + initial + period * k as u32;
        assert!(at >= due, "run {k} started {:?} early", due - at);
    }
    pool.close();
}

#[test]
fn a_manual_clock_is_not_affected_by_the_precision() {
    let clock = ManualClock::new();
    let pool = Builder::new()
        .core_pool_size(1)
        .clock(clock.clone())
        .timer_precision(Duration::from_secs(3600))
        .build();
    let f = pool.schedule(Duration::from_millis(5), || 7).unwrap();
    clock.advance(Duration::from_millis(4));
    assert!(pool.wait_idle(BOUND));
    assert!(!f.is_done(), "not before its deadline");
    clock.advance(Duration::from_millis(1));
    assert!(f.wait_timeout(BOUND), "at its deadline, not an hour later");
    assert_eq!(f.get().unwrap(), 7);
    pool.close();
}

#[test]
fn the_builder_shows_the_precision() {
    let b = Builder::new().timer_precision(Duration::from_micros(250));
    assert!(format!("{b:?}").contains("timer_precision: 250µs"));
}

#[test]
fn a_precision_of_duration_max_is_capped_and_tasks_still_run() {
    let b = Builder::new().timer_precision(Duration::MAX);
    assert!(
        format!("{b:?}").contains("timer_precision: 1s"),
        "capped at Builder::MAX_TIMER_PRECISION: {b:?}"
    );
    let pool = b.core_pool_size(1).build();
    let asked = Instant::now();
    let f = pool
        .schedule(Duration::from_millis(1), Instant::now)
        .unwrap();
    assert!(f.wait_timeout(BOUND), "ran, at most a second late");
    assert!(f.get().unwrap() >= asked + Duration::from_millis(1));
    pool.close();
}
