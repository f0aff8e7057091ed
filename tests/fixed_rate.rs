//! `schedule_at_fixed_rate`: next deadline = previous deadline + period, catch-up after an
//! overrun, no overlapping runs, an hour of virtual time, `ZeroPeriod`, `deadline()`.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedpool::{ScheduleError, ScheduledThreadPoolExecutor};

mod common;
use common::{close, flush, manual_pool, ms, outcome, sec, shutdown_now_and_wait, wait_for, BOUND};

#[test]
fn zero_period_is_rejected_without_running_or_counting() {
    let (_clock, pool) = manual_pool(1);
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let err = pool
        .schedule_at_fixed_rate(sec(1), Duration::ZERO, move || {
            r.store(true, Ordering::SeqCst)
        })
        .unwrap_err();
    assert_eq!(err, ScheduleError::ZeroPeriod);
    let err = pool
        .schedule_at_fixed_rate(Duration::ZERO, Duration::ZERO, || ())
        .unwrap_err();
    assert_eq!(err, ScheduleError::ZeroPeriod);
    let s = pool.stats();
    assert_eq!((s.task_count, s.rejected_count, s.queued), (0, 0, 0));
    assert_eq!(s.pool_size, 0, "no thread for a refused task");
    close(&pool);
    assert!(!ran.load(Ordering::SeqCst));
}

#[test]
fn next_deadline_is_previous_deadline_plus_period_not_end_of_run() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let starts = Arc::new(Mutex::new(Vec::new()));
    let (s, c) = (starts.clone(), clock.clone());
    let fut = pool
        .schedule_at_fixed_rate(sec(10), sec(10), move || {
            s.lock().unwrap().push(c.now() - t0);
            c.advance(sec(3)); // the run takes 3 s of virtual time
        })
        .unwrap();
    assert!(fut.is_periodic());
    assert_eq!(fut.deadline(), t0 + sec(10));
    clock.advance(sec(10));
    wait_for("the first run ended", || fut.deadline() == t0 + sec(20));
    assert_eq!(clock.now(), t0 + sec(13));
    assert_eq!(fut.delay(), sec(7));
    clock.advance(sec(6)); // t = 19
    flush(&pool);
    assert_eq!(starts.lock().unwrap().len(), 1);
    clock.advance(sec(1)); // t = 20
    wait_for("the second run ended", || fut.deadline() == t0 + sec(30));
    assert_eq!(*starts.lock().unwrap(), [sec(10), sec(20)]);
    assert!(!fut.is_done());
    shutdown_now_and_wait(&pool);
    assert!(outcome(fut).unwrap_err().is_cancelled());
}

#[test]
fn overrun_is_caught_up_back_to_back() {
    // Period 10, first deadline 10, the first run takes 25: starts 10, 35, 35, 40, 50.
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let starts = Arc::new(Mutex::new(Vec::new()));
    let (s, c) = (starts.clone(), clock.clone());
    let fut = pool
        .schedule_at_fixed_rate(ms(10), ms(10), move || {
            let mut starts = s.lock().unwrap();
            starts.push((c.now() - t0).as_millis());
            if starts.len() == 1 {
                c.advance(ms(25));
            }
        })
        .unwrap();
    clock.advance(ms(10));
    wait_for("the overdue runs ended", || fut.deadline() == t0 + ms(40));
    assert_eq!(*starts.lock().unwrap(), [10, 35, 35]);
    clock.advance(ms(5));
    wait_for("the run at 40 ended", || fut.deadline() == t0 + ms(50));
    clock.advance(ms(10));
    wait_for("the run at 50 ended", || fut.deadline() == t0 + ms(60));
    assert_eq!(*starts.lock().unwrap(), [10, 35, 35, 40, 50]);
    shutdown_now_and_wait(&pool);
    assert_eq!(pool.stats().completed_task_count, 5);
}

#[test]
fn a_long_gap_replays_every_missed_run() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    clock.advance(sec(50));
    wait_for("50 runs", || runs.load(Ordering::SeqCst) == 50);
    wait_for("the next deadline", || fut.deadline() == t0 + sec(51));
    flush(&pool);
    assert_eq!(runs.load(Ordering::SeqCst), 50);
    shutdown_now_and_wait(&pool);
}

#[test]
fn runs_never_overlap_and_each_sees_the_previous_one() {
    let (clock, pool) = manual_pool(4);
    assert_eq!(pool.prestart_all_core_threads(), 4);
    let running = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(AtomicU64::new(0));
    let (r, o, s) = (running.clone(), overlaps.clone(), seen.clone());
    let mut local: u64 = 0; // owned by the closure; runs must be ordered to count right
    let fut = pool
        .schedule_at_fixed_rate(ms(1), ms(1), move || {
            if r.swap(true, Ordering::SeqCst) {
                o.fetch_add(1, Ordering::SeqCst);
            }
            local += 1;
            for _ in 0..20 {
                std::thread::yield_now();
            }
            s.store(local, Ordering::SeqCst);
            r.store(false, Ordering::SeqCst);
        })
        .unwrap();
    let t0 = clock.now();
    clock.advance(ms(300));
    wait_for("300 runs", || seen.load(Ordering::SeqCst) == 300);
    wait_for("the next deadline", || fut.deadline() == t0 + ms(301));
    assert_eq!(overlaps.load(Ordering::SeqCst), 0);
    shutdown_now_and_wait(&pool);
    assert_eq!(pool.stats().completed_task_count, 300);
}

#[test]
fn an_hour_in_one_second_steps_runs_3600_times() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let (tx, rx) = mpsc::channel();
    let mut n = 0u64;
    let fut = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            n += 1;
            tx.send(n).unwrap();
        })
        .unwrap();
    for i in 1..=3600 {
        clock.advance(sec(1));
        assert_eq!(rx.recv_timeout(BOUND), Ok(i));
    }
    wait_for("the last run ended", || fut.deadline() == t0 + sec(3601));
    flush(&pool);
    assert_eq!(rx.try_recv(), Err(mpsc::TryRecvError::Empty));
    shutdown_now_and_wait(&pool);
    let s = pool.stats();
    assert_eq!(
        (s.task_count, s.completed_task_count),
        (2, 3601),
        "with flush"
    );
}

#[test]
fn an_hour_in_ten_minute_steps_runs_3601_times_from_zero() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_at_fixed_rate(Duration::ZERO, sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    wait_for("the run at 0", || runs.load(Ordering::SeqCst) == 1);
    for step in 1..=6 {
        clock.advance(sec(600));
        let expected = 1 + 600 * step;
        wait_for("a step's runs", || runs.load(Ordering::SeqCst) == expected);
    }
    wait_for("the next deadline", || fut.deadline() == t0 + sec(3601));
    flush(&pool);
    assert_eq!(runs.load(Ordering::SeqCst), 3601);
    shutdown_now_and_wait(&pool);
    assert_eq!(pool.stats().completed_task_count, 3602, "with flush");
}

#[test]
fn deadline_is_the_current_runs_until_it_ends_then_the_next() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let (started_tx, started) = mpsc::channel();
    let (go, go_rx) = mpsc::channel::<()>();
    let fut = pool
        .schedule_at_fixed_rate(sec(10), sec(10), move || {
            started_tx.send(()).unwrap();
            go_rx.recv_timeout(BOUND).unwrap();
        })
        .unwrap();
    clock.advance(sec(10));
    started.recv_timeout(BOUND).unwrap();
    assert_eq!(fut.deadline(), t0 + sec(10));
    assert_eq!(fut.delay(), Duration::ZERO);
    go.send(()).unwrap();
    wait_for("the run ended", || fut.deadline() == t0 + sec(20));
    assert_eq!(fut.delay(), sec(10));
    clock.advance(sec(10));
    started.recv_timeout(BOUND).unwrap();
    assert_eq!(fut.deadline(), t0 + sec(20));
    go.send(()).unwrap();
    wait_for("the run ended", || fut.deadline() == t0 + sec(30));
    assert!(!fut.is_done());
    shutdown_now_and_wait(&pool);
}

#[test]
fn initial_delay_counts_from_scheduling_time() {
    let (clock, pool) = manual_pool(1);
    clock.advance(sec(100));
    let t = clock.now();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_at_fixed_rate(sec(5), sec(2), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert_eq!(fut.deadline(), t + sec(5));
    clock.advance(sec(4));
    flush(&pool);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    clock.advance(sec(1));
    wait_for("the first run", || fut.deadline() == t + sec(7));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    shutdown_now_and_wait(&pool);
}

#[test]
fn huge_period_saturates_instead_of_overflowing() {
    let (clock, pool) = manual_pool(1);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_at_fixed_rate(sec(1), Duration::MAX, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    clock.advance(sec(1));
    let t1 = clock.now();
    wait_for("the first run ended", || fut.deadline() > t1);
    assert!(fut.delay() > Duration::from_secs(100 * 365 * 24 * 3600));
    clock.advance(Duration::from_secs(3600 * 24 * 365));
    flush(&pool);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(!fut.is_done(), "no panic, no second run");
    shutdown_now_and_wait(&pool);
}

#[test]
fn fixed_rate_on_the_real_clock_keeps_running_until_cancelled() {
    let pool = ScheduledThreadPoolExecutor::new(2);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_at_fixed_rate(Duration::ZERO, ms(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    wait_for("5 runs", || runs.load(Ordering::SeqCst) >= 5);
    assert!(fut.cancel());
    let after_cancel = runs.load(Ordering::SeqCst);
    close(&pool);
    assert!(
        runs.load(Ordering::SeqCst) <= after_cancel + 1,
        "at most the run in progress"
    );
    assert!(outcome(fut).unwrap_err().is_cancelled());
}

/// `Periodic::aligned`: two nodes that schedule the same job at different times get the
/// same ticks, on the wall clock's grid of the period plus the offset.
#[test]
fn aligned_ticks_fall_on_the_wall_clock_grid_whatever_the_start() {
    use std::time::{Instant, SystemTime, UNIX_EPOCH};
    let period = Duration::from_millis(400);
    let offset = Duration::from_millis(100);
    let spec = || schedpool::Periodic::at_fixed_rate(period).aligned(offset);
    let a = ScheduledThreadPoolExecutor::new(1);
    let fa = a.schedule_periodic(spec(), || ()).unwrap();
    std::thread::sleep(Duration::from_millis(150)); // the second node starts later
    let b = ScheduledThreadPoolExecutor::new(1);
    let fb = b.schedule_periodic(spec(), || ()).unwrap();
    let (da, db) = (fa.deadline(), fb.deadline());
    let apart = if da > db { da - db } else { db - da };
    // The same tick, or the next one if `b` was scheduled after `a`'s first tick. Each
    // side turns the wall-clock grid into an `Instant` from one reading of both clocks,
    // which a preempted thread may take a few milliseconds apart (valgrind, a loaded
    // machine): 20 ms of slack, against the 150 ms that an unaligned `b` would be off.
    const SLACK_MS: f64 = 20.0;
    let ticks_apart = apart.as_secs_f64() / period.as_secs_f64();
    assert!(
        (ticks_apart - ticks_apart.round()).abs() * period.as_secs_f64() * 1e3 < SLACK_MS,
        "{apart:?} apart"
    );
    // On the grid: the deadline's wall-clock time is k * 400 ms + 100 ms.
    let (now_i, now_w) = (Instant::now(), SystemTime::now());
    let wall = now_w + db.saturating_duration_since(now_i) - now_i.saturating_duration_since(db);
    let ms = wall.duration_since(UNIX_EPOCH).unwrap().as_nanos() as f64 / 1e6;
    let phase = (ms - 100.0).rem_euclid(400.0);
    assert!(
        !(SLACK_MS..=400.0 - SLACK_MS).contains(&phase),
        "phase {phase} ms"
    );
    assert!(
        db.saturating_duration_since(now_i) <= period,
        "no later than one period"
    );
    fa.cancel();
    fb.cancel();
    a.close();
    b.close();
}

/// On a `ManualClock`, an aligned first deadline lies within one period of the earliest
/// allowed instant, on the grid of the clock's wall time, and a fixed-rate task keeps
/// the period from there.
#[test]
fn an_aligned_task_on_a_manual_clock_starts_within_one_period() {
    let clock = schedpool::ManualClock::new();
    // 2024-06-01 12:00:30.25 UTC: the grid's next point after 7 s is 12:01:00.
    let wall0 = std::time::UNIX_EPOCH + Duration::from_millis(1_717_243_230_250);
    clock.set_wall_time(wall0);
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .build();
    let period = Duration::from_secs(60);
    let initial = Duration::from_secs(7);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_periodic(
            schedpool::Periodic::at_fixed_rate(period)
                .initial_delay(initial)
                .aligned(Duration::ZERO),
            move || {
                r.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap();
    let first = fut.deadline();
    assert!(first >= clock.now() + initial && first < clock.now() + initial + period);
    assert_eq!(first, clock.now() + Duration::from_millis(29_750));
    clock.advance(first - clock.now());
    // On the grid of the clock's own wall time.
    let wall = clock
        .wall_time()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    assert_eq!(wall.as_nanos() % period.as_nanos(), 0, "{wall:?}");
    assert!(common::wait_until(|| runs.load(Ordering::SeqCst) == 1));
    assert!(pool.wait_idle(common::BOUND));
    assert_eq!(fut.deadline(), first + period, "then the period");
    fut.cancel();
    pool.close();
}
