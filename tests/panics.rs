//! Panicking tasks: the future reports the panic, a periodic task stops, the worker
//! survives, and `panicked_count` counts.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use schedpool::{ManualClock, ScheduledThreadPoolExecutor, TaskError};

mod common;
use common::{close, flush, outcome, sec, BOUND};

/// `common::manual_pool`, with the workers named `panics-N`.
fn manual_pool(core: usize) -> (ManualClock, ScheduledThreadPoolExecutor) {
    common::manual_pool_named(core, "panics-")
}

fn thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_owned()
}

#[test]
fn one_shot_panic_yields_panicked_with_its_message() {
    let (_clock, pool) = manual_pool(1);
    let fut = pool.submit(|| -> u32 { panic!("one-shot boom") }).unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert!(fut.is_done());
    assert!(!fut.is_cancelled());
    let err = outcome(fut).unwrap_err();
    assert!(matches!(err, TaskError::Panicked(_)));
    assert!(err.is_panicked() && !err.is_cancelled());
    assert_eq!(err.panic_message(), Some("one-shot boom"));
    assert_eq!(err.to_string(), "task panicked: one-shot boom");
    close(&pool);
}

#[test]
fn formatted_and_non_string_payloads_are_kept() {
    let (_clock, pool) = manual_pool(1);
    let n = 7;
    let formatted = pool.submit(move || -> () { panic!("code {n}") }).unwrap();
    let opaque = pool
        .submit(|| -> () { std::panic::panic_any(42u32) })
        .unwrap();
    let err = outcome(formatted).unwrap_err();
    assert_eq!(err.panic_message(), Some("code 7"));
    match outcome(opaque).unwrap_err() {
        TaskError::Panicked(payload) => {
            assert!(payload.is::<u32>());
            assert_eq!(payload.downcast::<u32>().map(|b| *b).ok(), Some(42));
        }
        TaskError::Cancelled => panic!("expected a panic"),
    }
    close(&pool);
}

#[test]
fn periodic_panic_stops_the_task_and_reports_it() {
    let (clock, pool) = manual_pool(1);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            if r.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                panic!("third run");
            }
        })
        .unwrap();
    for _ in 0..3 {
        clock.advance(sec(1));
        flush(&pool);
    }
    assert!(fut.wait_timeout(BOUND));
    assert!(fut.is_done() && !fut.is_cancelled());
    assert!(!fut.cancel(), "a panicked task cannot be cancelled");
    clock.advance(sec(10));
    flush(&pool);
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(pool.queue_len(), 0);
    let err = outcome(fut).unwrap_err();
    assert!(err.is_panicked());
    assert_eq!(err.panic_message(), Some("third run"));
    close(&pool);
    let s = pool.stats();
    assert_eq!(s.panicked_count, 1);
    assert_eq!(
        s.completed_task_count,
        3 + 4,
        "panicked runs count; 4 flushes"
    );
}

#[test]
fn fixed_delay_panic_stops_the_task() {
    let (clock, pool) = manual_pool(1);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_with_fixed_delay(sec(1), sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
            panic!("first run");
        })
        .unwrap();
    clock.advance(sec(1));
    assert!(fut.wait_timeout(BOUND));
    clock.advance(sec(10));
    flush(&pool);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(outcome(fut).unwrap_err().panic_message(), Some("first run"));
    close(&pool);
}

#[test]
fn the_worker_survives_a_panic_and_runs_later_tasks() {
    let (_clock, pool) = manual_pool(1);
    let first = outcome(pool.submit(thread_name).unwrap()).unwrap();
    for i in 0..5 {
        let fut = pool.submit(move || -> () { panic!("boom {i}") }).unwrap();
        assert!(outcome(fut).unwrap_err().is_panicked());
    }
    let after = outcome(pool.submit(thread_name).unwrap()).unwrap();
    assert_eq!(first, "panics-0");
    assert_eq!(after, "panics-0", "the same worker, not a replacement");
    let s = pool.stats();
    assert_eq!((s.pool_size, s.largest_pool_size), (1, 1));
    close(&pool);
    assert_eq!(pool.stats().panicked_count, 5);
}

#[test]
fn panicked_count_counts_one_shot_and_periodic_panics() {
    let (clock, pool) = manual_pool(2);
    let a = pool.submit(|| -> () { panic!("a") }).unwrap();
    let b = pool
        .schedule_at_fixed_rate(sec(1), sec(1), || panic!("b"))
        .unwrap();
    let ok = pool.submit(|| 1).unwrap();
    clock.advance(sec(1));
    assert!(outcome(a).unwrap_err().is_panicked());
    assert!(outcome(b).unwrap_err().is_panicked());
    assert_eq!(outcome(ok).unwrap(), 1);
    close(&pool);
    let s = pool.stats();
    assert_eq!(s.panicked_count, 2);
    assert_eq!(s.completed_task_count, 3);
}

#[test]
fn a_panic_in_a_dropped_output_does_not_break_the_pool() {
    struct PanicOnDrop;
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            if !std::thread::panicking() {
                panic!("drop of an unclaimed output");
            }
        }
    }
    let (clock, pool) = manual_pool(1);
    drop(pool.schedule(sec(1), || PanicOnDrop).unwrap()); // the output is never claimed
    clock.advance(sec(1));
    let after = pool.submit(|| 5).unwrap();
    assert_eq!(outcome(after).unwrap(), 5);
    close(&pool);
    assert!(pool.is_terminated());
}
