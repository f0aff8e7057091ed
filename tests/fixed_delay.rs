//! `schedule_with_fixed_delay`: next deadline = end of run + delay, `ZeroPeriod`, a task
//! that stops itself.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use schedpool::{CancelHandle, ScheduleError, ScheduledThreadPoolExecutor};

mod common;
use common::{close, flush, manual_pool, outcome, sec, shutdown_now_and_wait, wait_for, BOUND};

#[test]
fn zero_delay_is_rejected_without_running_or_counting() {
    let (_clock, pool) = manual_pool(1);
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let err = pool
        .schedule_with_fixed_delay(sec(1), Duration::ZERO, move || {
            r.store(true, Ordering::SeqCst)
        })
        .unwrap_err();
    assert_eq!(err, ScheduleError::ZeroPeriod);
    let err = pool
        .schedule_with_fixed_delay(Duration::ZERO, Duration::ZERO, || ())
        .unwrap_err();
    assert_eq!(err, ScheduleError::ZeroPeriod);
    let s = pool.stats();
    assert_eq!((s.task_count, s.rejected_count, s.queued), (0, 0, 0));
    close(&pool);
    assert!(!ran.load(Ordering::SeqCst));
}

#[test]
fn next_deadline_is_end_of_run_plus_delay() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let starts = Arc::new(Mutex::new(Vec::new()));
    let (s, c) = (starts.clone(), clock.clone());
    let fut = pool
        .schedule_with_fixed_delay(sec(10), sec(10), move || {
            s.lock().unwrap().push(c.now() - t0);
            c.advance(sec(5)); // the run takes 5 s of virtual time
        })
        .unwrap();
    assert!(fut.is_periodic());
    assert_eq!(fut.deadline(), t0 + sec(10));
    clock.advance(sec(10));
    wait_for("the first run ended", || fut.deadline() == t0 + sec(25));
    assert_eq!(clock.now(), t0 + sec(15));
    assert_eq!(fut.delay(), sec(10));
    clock.advance(sec(9)); // t = 24: a fixed-rate task would have run at 20
    flush(&pool);
    assert_eq!(starts.lock().unwrap().len(), 1);
    clock.advance(sec(1)); // t = 25
    wait_for("the second run ended", || fut.deadline() == t0 + sec(40));
    assert_eq!(*starts.lock().unwrap(), [sec(10), sec(25)]);
    shutdown_now_and_wait(&pool);
    assert!(outcome(fut).unwrap_err().is_cancelled());
}

#[test]
fn a_late_start_shifts_every_later_run() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_with_fixed_delay(sec(1), sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    clock.advance(sec(100)); // one late run, not 100 back to back
    wait_for("the late run ended", || fut.deadline() == t0 + sec(101));
    flush(&pool);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    clock.advance(sec(1));
    wait_for("the next run ended", || fut.deadline() == t0 + sec(102));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    shutdown_now_and_wait(&pool);
}

#[test]
fn run_durations_add_up_over_many_runs() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let starts = Arc::new(Mutex::new(Vec::new()));
    let (s, c) = (starts.clone(), clock.clone());
    let fut = pool
        .schedule_with_fixed_delay(Duration::ZERO, sec(3), move || {
            s.lock().unwrap().push((c.now() - t0).as_secs());
            c.advance(sec(2));
        })
        .unwrap();
    for k in 1..=10u64 {
        wait_for("the run ended", || fut.deadline() == t0 + sec(5 * k));
        clock.advance(sec(3));
    }
    wait_for("the last run ended", || fut.deadline() == t0 + sec(55));
    let expected: Vec<u64> = (0..=10).map(|k| 5 * k).collect();
    assert_eq!(*starts.lock().unwrap(), expected);
    shutdown_now_and_wait(&pool);
}

#[test]
fn task_cancels_itself_through_its_cancel_handle() {
    let (clock, pool) = manual_pool(1);
    let me: Arc<OnceLock<CancelHandle>> = Arc::new(OnceLock::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let verdict = Arc::new(Mutex::new(None));
    let (m, r, v) = (me.clone(), runs.clone(), verdict.clone());
    let fut = pool
        .schedule_with_fixed_delay(sec(1), sec(1), move || {
            if r.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                *v.lock().unwrap() = Some(m.get().unwrap().cancel());
            }
        })
        .unwrap();
    me.set(fut.cancel_handle()).unwrap();
    for _ in 0..3 {
        clock.advance(sec(1));
        flush(&pool);
    }
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(*verdict.lock().unwrap(), Some(true));
    assert!(fut.is_cancelled() && fut.is_done());
    clock.advance(sec(10));
    flush(&pool);
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(pool.queue_len(), 0);
    assert!(outcome(fut).unwrap_err().is_cancelled());
    close(&pool);
}

#[test]
fn fixed_delay_on_the_real_clock_runs_until_cancelled() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_with_fixed_delay(Duration::ZERO, Duration::from_millis(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    wait_for("3 runs", || runs.load(Ordering::SeqCst) >= 3);
    assert!(fut.cancel());
    assert!(fut.is_cancelled() && fut.is_done());
    close(&pool);
    assert!(outcome(fut).unwrap_err().is_cancelled());
}
