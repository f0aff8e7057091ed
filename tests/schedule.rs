//! One-shot scheduling: `schedule`, `schedule_at`, `submit`, `execute`; deadline order,
//! FIFO ties, past and huge deadlines, `deadline()` / `delay()`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedpool::{ScheduledFuture, ScheduledThreadPoolExecutor};

mod common;
use common::{close, flush, manual_pool, outcome, sec, shutdown_now_and_wait, BOUND};

const HUNDRED_YEARS: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

#[test]
fn schedule_runs_after_its_delay_and_yields_the_value() {
    let (clock, pool) = manual_pool(1);
    let fut = pool.schedule(sec(5), || "done").unwrap();
    assert!(!fut.is_periodic());
    clock.advance(sec(5));
    assert!(fut.wait_timeout(BOUND));
    assert!(fut.is_done() && !fut.is_cancelled());
    assert_eq!(outcome(fut).unwrap(), "done");
    close(&pool);
    assert_eq!(pool.stats().completed_task_count, 1);
}

#[test]
fn schedule_at_runs_at_the_instant_in_the_executor_clock() {
    let (clock, pool) = manual_pool(1);
    let at = clock.now() + sec(30);
    let fut = pool.schedule_at(at, || 3).unwrap();
    assert_eq!(fut.deadline(), at);
    assert_eq!(fut.delay(), sec(30));
    clock.advance(sec(29));
    flush(&pool);
    assert!(!fut.is_done());
    clock.advance(sec(1));
    assert_eq!(outcome(fut).unwrap(), 3);
    close(&pool);
}

#[test]
fn submit_runs_at_once_without_advancing_the_clock() {
    let (_clock, pool) = manual_pool(2);
    let fut = pool.submit(|| 40 + 2).unwrap();
    assert_eq!(fut.delay(), Duration::ZERO);
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(outcome(fut).unwrap(), 42);
    close(&pool);
}

#[test]
fn execute_runs_at_once_without_a_handle() {
    let (_clock, pool) = manual_pool(2);
    let (tx, rx) = mpsc::channel();
    pool.execute(move || tx.send(7).unwrap()).unwrap();
    assert_eq!(rx.recv_timeout(BOUND), Ok(7));
    close(&pool);
    let s = pool.stats();
    assert_eq!((s.task_count, s.completed_task_count), (1, 1));
}

#[test]
fn tasks_run_in_deadline_order() {
    let (clock, pool) = manual_pool(1);
    let order = Arc::new(Mutex::new(Vec::new()));
    let delays = [50, 10, 40, 20, 30, 5, 45, 15];
    let futs: Vec<ScheduledFuture<()>> = delays
        .iter()
        .map(|&d| {
            let order = order.clone();
            pool.schedule(Duration::from_millis(d), move || {
                order.lock().unwrap().push(d);
            })
            .unwrap()
        })
        .collect();
    clock.advance(sec(1));
    for f in &futs {
        assert!(f.wait_timeout(BOUND));
    }
    let mut sorted = delays.to_vec();
    sorted.sort_unstable();
    assert_eq!(*order.lock().unwrap(), sorted);
    close(&pool);
}

#[test]
fn equal_deadlines_run_in_submission_order() {
    let (clock, pool) = manual_pool(1);
    let order = Arc::new(Mutex::new(Vec::new()));
    let at = clock.now() + sec(10);
    let mut futs = Vec::new();
    for i in 0..100 {
        let order = order.clone();
        let f = if i % 2 == 0 {
            pool.schedule(sec(10), move || order.lock().unwrap().push(i))
        } else {
            pool.schedule_at(at, move || order.lock().unwrap().push(i))
        };
        futs.push(f.unwrap());
    }
    clock.advance(sec(10));
    for f in &futs {
        assert!(f.wait_timeout(BOUND));
    }
    assert_eq!(*order.lock().unwrap(), (0..100).collect::<Vec<_>>());
    close(&pool);
}

#[test]
fn ties_interleaved_with_other_deadlines_keep_fifo_within_each_deadline() {
    let (clock, pool) = manual_pool(1);
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut futs = Vec::new();
    for i in 0..30u64 {
        let order = order.clone();
        let d = sec(3 - i % 3);
        futs.push(
            pool.schedule(d, move || order.lock().unwrap().push(i))
                .unwrap(),
        );
    }
    clock.advance(sec(3));
    for f in &futs {
        assert!(f.wait_timeout(BOUND));
    }
    let mut expected: Vec<u64> = (0..30).collect();
    expected.sort_by_key(|i| (3 - i % 3, *i));
    assert_eq!(*order.lock().unwrap(), expected);
    close(&pool);
}

#[test]
fn past_deadline_runs_without_advancing_the_clock() {
    let (clock, pool) = manual_pool(1);
    clock.advance(sec(3600));
    let past = clock.now() - sec(1800);
    let fut = pool.schedule_at(past, || 1).unwrap();
    assert_eq!(fut.delay(), Duration::ZERO);
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(outcome(fut).unwrap(), 1);
    close(&pool);
}

#[test]
fn deadline_before_the_clock_origin_runs_at_once() {
    let (clock, pool) = manual_pool(1);
    let Some(long_ago) = clock.now().checked_sub(sec(60)) else {
        return; // the platform's Instant cannot go back that far
    };
    let fut = pool.schedule_at(long_ago, || 2).unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(outcome(fut).unwrap(), 2);
    close(&pool);
}

#[test]
fn past_deadline_runs_on_the_real_clock() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let past = Instant::now();
    std::thread::sleep(Duration::from_millis(2));
    let fut = pool.schedule_at(past, || 9).unwrap();
    assert_eq!(fut.delay(), Duration::ZERO);
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(outcome(fut).unwrap(), 9);
    close(&pool);
}

#[test]
fn max_delay_is_far_in_the_future_and_does_not_run_after_a_century() {
    let (clock, pool) = manual_pool(1);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let t0 = clock.now();
    let fut = pool
        .schedule(Duration::MAX, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert!(fut.deadline() > t0 + HUNDRED_YEARS);
    assert!(fut.delay() > HUNDRED_YEARS);
    clock.advance(HUNDRED_YEARS);
    flush(&pool);
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert!(!fut.is_done());
    assert!(fut.delay() > Duration::ZERO);
    assert_eq!(pool.queue_len(), 1);
    shutdown_now_and_wait(&pool);
    assert!(outcome(fut).unwrap_err().is_cancelled());
}

#[test]
fn max_delay_on_the_real_clock_does_not_overflow() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let fut = pool.schedule(Duration::MAX, || ()).unwrap();
    assert!(fut.deadline() > Instant::now() + HUNDRED_YEARS);
    assert!(fut.delay() > HUNDRED_YEARS);
    assert!(!fut.wait_timeout(Duration::from_millis(10)));
    let rate = pool
        .schedule_at_fixed_rate(Duration::MAX, Duration::MAX, || ())
        .unwrap();
    let delay = pool
        .schedule_with_fixed_delay(Duration::MAX, Duration::MAX, || ())
        .unwrap();
    assert!(rate.delay() > HUNDRED_YEARS && delay.delay() > HUNDRED_YEARS);
    assert_eq!(pool.queue_len(), 3);
    shutdown_now_and_wait(&pool);
}

#[test]
fn max_delay_added_to_an_advanced_clock_saturates() {
    let (clock, pool) = manual_pool(1);
    clock.advance(HUNDRED_YEARS);
    let fut = pool.schedule(Duration::MAX, || ()).unwrap();
    assert!(fut.deadline() > clock.now());
    assert!(fut.delay() > Duration::ZERO);
    flush(&pool);
    assert!(!fut.is_done());
    shutdown_now_and_wait(&pool);
}

#[test]
fn deadline_and_delay_follow_the_manual_clock() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let fut = pool.schedule(sec(10), || ()).unwrap();
    assert_eq!(fut.deadline(), t0 + sec(10));
    assert_eq!(fut.delay(), sec(10));
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(fut.delay(), sec(10), "real time does not count");
    clock.advance(sec(4));
    assert_eq!(fut.deadline(), t0 + sec(10));
    assert_eq!(fut.delay(), sec(6));
    clock.advance(sec(20));
    assert_eq!(fut.delay(), Duration::ZERO);
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(fut.deadline(), t0 + sec(10), "the last deadline stays");
    assert_eq!(fut.delay(), Duration::ZERO);
    close(&pool);
}

#[test]
fn never_runs_before_its_deadline() {
    let (clock, pool) = manual_pool(2);
    let fut = pool.schedule(sec(10), || ()).unwrap();
    clock.advance(sec(10) - Duration::from_nanos(1));
    assert_eq!(fut.delay(), Duration::from_nanos(1));
    // Virtual time stands still; a task that ran early would be done within this wait.
    assert!(!fut.wait_timeout(Duration::from_millis(50)));
    assert!(!fut.is_done());
    clock.advance(Duration::from_nanos(1));
    assert!(fut.wait_timeout(BOUND));
    close(&pool);
}

#[test]
fn a_later_task_does_not_run_before_an_earlier_one_is_due() {
    let (clock, pool) = manual_pool(1);
    let order = Arc::new(Mutex::new(Vec::new()));
    let o = order.clone();
    let late = pool
        .schedule(sec(20), move || o.lock().unwrap().push("late"))
        .unwrap();
    let o = order.clone();
    let early = pool
        .schedule(sec(10), move || o.lock().unwrap().push("early"))
        .unwrap();
    clock.advance(sec(15));
    assert!(early.wait_timeout(BOUND));
    flush(&pool);
    assert_eq!(*order.lock().unwrap(), ["early"]);
    assert!(!late.is_done());
    clock.advance(sec(5));
    assert!(late.wait_timeout(BOUND));
    assert_eq!(*order.lock().unwrap(), ["early", "late"]);
    close(&pool);
}

#[test]
fn many_workers_run_every_task_exactly_once() {
    let (clock, pool) = manual_pool(4);
    let runs = Arc::new(AtomicUsize::new(0));
    let futs: Vec<_> = (0..200u64)
        .map(|i| {
            let runs = runs.clone();
            pool.schedule(Duration::from_millis(i % 7), move || {
                runs.fetch_add(1, Ordering::SeqCst);
                i
            })
            .unwrap()
        })
        .collect();
    clock.advance(sec(1));
    for (i, f) in futs.into_iter().enumerate() {
        assert_eq!(outcome(f).unwrap(), i as u64);
    }
    close(&pool);
    assert_eq!(runs.load(Ordering::SeqCst), 200);
    let s = pool.stats();
    assert_eq!((s.task_count, s.completed_task_count), (200, 200));
}

#[test]
fn deadline_before_the_executor_was_built_runs_at_once() {
    let before = Instant::now();
    std::thread::sleep(Duration::from_millis(2));
    let pool = ScheduledThreadPoolExecutor::new(1);
    let fut = pool.schedule_at(before, || 4).unwrap();
    assert_eq!(fut.delay(), Duration::ZERO);
    assert_eq!(outcome(fut).unwrap(), 4);
    close(&pool);
}

#[test]
fn every_spin_policy_runs_tasks_in_order_and_never_early() {
    use schedpool::SpinPolicy;
    for policy in [
        SpinPolicy::Adaptive,
        SpinPolicy::Unbounded,
        SpinPolicy::Never,
    ] {
        let pool = ScheduledThreadPoolExecutor::builder()
            .core_pool_size(1)
            .spin_policy(policy)
            .build();
        let order = Arc::new(Mutex::new(Vec::new()));
        // Deadlines from one instant, so their order does not depend on how long the
        // submissions take (under valgrind, milliseconds each).
        let base = Instant::now() + Duration::from_millis(20);
        let futs: Vec<_> = [15u64, 5, 10, 0]
            .into_iter()
            .map(|ms| {
                let order = order.clone();
                let due = base + Duration::from_millis(ms);
                pool.schedule_at(due, move || {
                    assert!(Instant::now() >= due, "{policy:?}: never early");
                    order.lock().unwrap().push(ms);
                })
                .unwrap()
            })
            .collect();
        for fut in futs {
            outcome(fut).unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 5, 10, 15], "{policy:?}");
        close(&pool);
    }
}

/// FIFO among equal deadlines holds across submitting threads on the real clock: each
/// round, this thread schedules a task at an instant and then a fresh thread (started
/// after it, joined before the next round) schedules another at the same instant.
/// Threads submit into their own queue shards, so across rounds many pairs sit in two
/// shards and their order comes from the sequence numbers, not from one heap. This
/// thread also schedules an unrelated far task per round, so per-thread numbering could
/// not order the ties by luck. The one worker is held busy until every task is queued,
/// so every tie is decided by the queue.
#[test]
fn equal_deadlines_from_two_threads_run_in_submission_order() {
    const ROUNDS: usize = 200;
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .build();
    let (release, gate) = mpsc::channel::<()>();
    let blocker = pool
        .submit(move || gate.recv_timeout(BOUND).is_ok())
        .unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let at = Instant::now() + Duration::from_millis(1);
    let mut futures = Vec::new();
    let mut far = Vec::new();
    for round in 0..ROUNDS {
        far.push(pool.schedule(HUNDRED_YEARS, || ()).unwrap());
        let first = order.clone();
        futures.push(
            pool.schedule_at(at, move || first.lock().unwrap().push((round, 'A')))
                .unwrap(),
        );
        let second = order.clone();
        let pool = &pool;
        futures.push(std::thread::scope(|s| {
            s.spawn(move || {
                pool.schedule_at(at, move || second.lock().unwrap().push((round, 'B')))
                    .unwrap()
            })
            .join()
            .unwrap()
        }));
    }
    for f in far {
        assert!(f.cancel());
    }
    release.send(()).unwrap();
    assert!(outcome(blocker).unwrap());
    for fut in futures {
        outcome(fut).unwrap();
    }
    let want: Vec<(usize, char)> = (0..ROUNDS).flat_map(|r| [(r, 'A'), (r, 'B')]).collect();
    assert_eq!(*order.lock().unwrap(), want);
    close(&pool);
}

#[test]
fn one_manual_clock_wakes_every_executor_and_queue_built_on_it() {
    // Each executor and queue registers itself with the clock; an advance must wake them
    // all, not just the last one registered. Each round waits until the workers and the
    // taker are idle (parked on their deadlines) before advancing.
    let clock = schedpool::ManualClock::new();
    let pools: Vec<ScheduledThreadPoolExecutor> = (0..3)
        .map(|_| {
            ScheduledThreadPoolExecutor::builder()
                .core_pool_size(1)
                .clock(clock.clone())
                .build()
        })
        .collect();
    let queue = Arc::new(schedpool::DelayQueue::with_clock(clock.clone()));
    for round in 0..10u32 {
        let futs: Vec<_> = pools
            .iter()
            .map(|p| p.schedule(sec(1), move || round).unwrap())
            .collect();
        queue.offer(round, sec(1));
        let q = queue.clone();
        let taker = std::thread::spawn(move || q.take());
        assert!(common::wait_until(|| pools.iter().all(|p| p
            .stats()
            .pool_size
            == 1
            && p.stats().active_count == 0)));
        clock.advance(sec(1));
        for fut in futs {
            assert!(
                fut.wait_timeout(BOUND),
                "round {round}: every executor woke"
            );
            assert_eq!(fut.get().unwrap(), round);
        }
        assert_eq!(taker.join().unwrap(), round, "the queue's taker woke");
    }
    for p in &pools {
        close(p);
    }
}
