//! Cases rewritten from the JSR-166 TCK: OpenJDK's
//! `test/jdk/java/util/concurrent/tck/ScheduledExecutorTest.java` and
//! `ScheduledExecutorSubclassTest.java`. Each test names its Java original(s).
//!
//! `ScheduledExecutorSubclassTest` repeats the `ScheduledExecutorTest` cases on a subclass
//! whose `decorateTask` wraps every task; the cases below port the shared intent once and
//! name both originals. Where a Java test is about order rather than real time, the port
//! runs on a `ManualClock`; real-time ports wait on conditions with generous bounds and
//! never assert speed. Java's `PoolCleaner` becomes an explicit shutdown at the end.
//!
//! Java-only tests that are not ported, and why:
//! - `testNullTaskSubmission`, and `testExecuteNull` / `testScheduleNull` of older
//!   revisions: a Rust closure cannot be null.
//! - `testSetThreadFactory`, `testSetThreadFactoryNull`: there are no `ThreadFactory`
//!   objects and no setter; the builder's `thread_name_prefix` and thread hooks replace them
//!   (`testGetThreadFactory` is ported as a check that workers come from that
//!   configuration).
//! - `testInvokeAny1`..`5`, `testInvokeAll1`..`5`, `testTimedInvokeAny1`..`5`,
//!   `testTimedInvokeAnyNullTimeUnit`, `testTimedInvokeAll1`..`6`,
//!   `testTimedInvokeAllNullTimeUnit`: `invokeAny` / `invokeAll` are not part of the API
//!   (and half of these cases test null arguments or null time units).
//! - The subclass hooks of `ScheduledExecutorSubclassTest` (`CustomExecutor.decorateTask`,
//!   `CustomTask.ran`): Rust has no subclassing and the crate no `decorateTask` hook.
//! - Interrupts: `shutdownNow` cannot interrupt a running task in Rust, so the ports of
//!   `testShutdownNow`, `testSubmittedTasksRejectedWhenShutdown` and `testPurge` release
//!   their blocked tasks explicitly instead of relying on `InterruptedException`.
//! - `SecurityException` branches: there is no security manager.
//! - `testShutdownNow` of older revisions (five delayed tasks all returned) is covered by
//!   the port of `testShutdownNow_delayedTasks`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use schedpool::{
    ManualClock, RejectionPolicy, ScheduleError, ScheduledFuture, ScheduledThreadPoolExecutor,
};

mod common;
use common::{bump, counter, is_cancelled, load, manual_pool, ms, wait_until, Gate, BOUND};

/// Java's `timeoutMillis()` for real-time ports: a lower bound only, never an upper one.
const SHORT: Duration = Duration::from_millis(30);
const HOUR: Duration = Duration::from_secs(3600);
static TEST_STRING: &str = "a test string";

/// Like `wait_until`, advancing `clock` by 1 ms between polls (virtual time flows while
/// real time is bounded).
fn advance_until(clock: &ManualClock, mut cond: impl FnMut() -> bool) -> bool {
    wait_until(|| {
        let done = cond();
        if !done {
            clock.advance(ms(1));
        }
        done
    })
}

/// A task that counts itself as started, then blocks until `gate` opens.
fn blocking_task(gate: &Gate, started: &Arc<AtomicUsize>) -> impl FnOnce() + Send + 'static {
    let (gate, started) = (gate.clone(), started.clone());
    move || {
        started.fetch_add(1, Ordering::SeqCst);
        gate.wait();
    }
}

/// Java's `PoolCleaner`: stop the pool and wait for its threads.
fn cleanup(pool: &ScheduledThreadPoolExecutor) {
    drop(pool.shutdown_now());
    assert!(pool.await_termination(BOUND));
}

/// Java's `assertTaskSubmissionsAreRejected`.
fn assert_submissions_are_rejected(pool: &ScheduledThreadPoolExecutor) {
    let before = pool.stats().rejected_count;
    let shutdown = Err(ScheduleError::Shutdown);
    assert_eq!(pool.execute(|| ()), shutdown);
    assert_eq!(pool.submit(|| ()).map(drop), shutdown);
    assert_eq!(pool.submit(|| true).map(drop), shutdown);
    assert_eq!(pool.schedule(ms(1), || ()).map(drop), shutdown);
    assert_eq!(
        pool.schedule_at_fixed_rate(ms(1), ms(1), || ()).map(drop),
        shutdown
    );
    assert_eq!(
        pool.schedule_with_fixed_delay(ms(1), ms(1), || ())
            .map(drop),
        shutdown
    );
    assert_eq!(pool.stats().rejected_count, before + 6);
}

// Java: ScheduledExecutorTest.testExecute, ScheduledExecutorSubclassTest.testExecute
#[test]
fn test_execute() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let (tx, rx) = mpsc::channel();
    pool.execute(move || tx.send(()).unwrap()).unwrap();
    rx.recv_timeout(BOUND).unwrap();
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testSchedule1, ScheduledExecutorSubclassTest.testSchedule1
#[test]
fn test_schedule1() {
    // Virtual time: not done one tick before the delay, done at it.
    let (clock, pool) = manual_pool(1);
    let delay = ms(12);
    let fut = pool.schedule(delay, || true).unwrap();
    clock.advance(delay - Duration::from_nanos(1));
    assert!(!fut.wait_timeout(ms(20)), "ran before its delay");
    clock.advance(Duration::from_nanos(1));
    assert!(fut.get().unwrap());
    cleanup(&pool);

    // Real time: the callable sees at least the delay elapsed, and so does the caller.
    let pool = ScheduledThreadPoolExecutor::new(1);
    let start = Instant::now();
    let fut = pool
        .schedule(SHORT, move || start.elapsed() >= SHORT)
        .unwrap();
    assert!(fut.get().unwrap());
    assert!(start.elapsed() >= SHORT);
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testSchedule3, ScheduledExecutorSubclassTest.testSchedule3
#[test]
fn test_schedule3() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let start = Instant::now();
    let (tx, rx) = mpsc::channel();
    let fut = pool
        .schedule(SHORT, move || tx.send(start.elapsed()).unwrap())
        .unwrap();
    assert!(rx.recv_timeout(BOUND).unwrap() >= SHORT);
    assert!(fut.wait_timeout(BOUND));
    fut.get().unwrap(); // Java: assertNull(f.get(...)) for a Runnable
    assert!(start.elapsed() >= SHORT);
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testSchedule4, ScheduledExecutorSubclassTest.testSchedule4
#[test]
fn test_schedule4() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let start = Instant::now();
    let (tx, rx) = mpsc::channel();
    let f = pool
        .schedule_at_fixed_rate(SHORT, BOUND, move || {
            let _ = tx.send(start.elapsed());
        })
        .unwrap();
    assert!(rx.recv_timeout(BOUND).unwrap() >= SHORT);
    assert!(start.elapsed() >= SHORT);
    assert!(f.cancel());
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testSchedule5, ScheduledExecutorSubclassTest.testSchedule5
#[test]
fn test_schedule5() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let start = Instant::now();
    let (tx, rx) = mpsc::channel();
    let f = pool
        .schedule_with_fixed_delay(SHORT, BOUND, move || {
            let _ = tx.send(start.elapsed());
        })
        .unwrap();
    assert!(rx.recv_timeout(BOUND).unwrap() >= SHORT);
    assert!(start.elapsed() >= SHORT);
    assert!(f.cancel());
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testFixedRateSequence,
//       ScheduledExecutorSubclassTest.testFixedRateSequence
// Java retries with longer periods until real time cooperates; virtual time makes the
// claim exact: with period d, run k starts at k*d, and (cycles - 1) * d of elapsed time
// gives exactly `cycles` runs, also when it elapses in one jump (runs catch up).
#[test]
fn test_fixed_rate_sequence() {
    const CYCLES: usize = 8;
    for delay in [ms(1), ms(3), ms(9)] {
        for one_jump in [false, true] {
            let (clock, pool) = manual_pool(1);
            let origin = clock.now();
            let starts = Arc::new(Mutex::new(Vec::new()));
            let (s, c) = (starts.clone(), clock.clone());
            let f = pool
                .schedule_at_fixed_rate(Duration::ZERO, delay, move || {
                    s.lock().unwrap().push(c.now() - origin)
                })
                .unwrap();
            let runs = || starts.lock().unwrap().len();
            if one_jump {
                clock.advance(delay * (CYCLES as u32 - 1));
            } else {
                for k in 1..CYCLES {
                    assert!(wait_until(|| runs() == k));
                    clock.advance(delay);
                }
            }
            assert!(wait_until(|| runs() == CYCLES));
            // No extra run: a due sentinel behind the periodic task's next deadline
            // (which is in the future) runs, and the count is still exact.
            assert!(pool.submit(|| ()).unwrap().wait_timeout(BOUND));
            assert_eq!(runs(), CYCLES);
            assert!(f.cancel());
            let starts = starts.lock().unwrap().clone();
            if !one_jump {
                let expected: Vec<Duration> = (0..CYCLES as u32).map(|k| delay * k).collect();
                assert_eq!(starts, expected, "period {delay:?}");
            }
            cleanup(&pool);
        }
    }
}

// Java: ScheduledExecutorTest.testFixedDelaySequence,
//       ScheduledExecutorSubclassTest.testFixedDelaySequence
// Each run "takes" some virtual time (it advances the clock itself); each start must be
// exactly the previous end plus the delay.
#[test]
fn test_fixed_delay_sequence() {
    const CYCLES: usize = 8;
    for delay in [ms(1), ms(3), ms(9)] {
        let (clock, pool) = manual_pool(1);
        let spans = Arc::new(Mutex::new(Vec::new()));
        let (s, c) = (spans.clone(), clock.clone());
        let mut k = 0u32;
        let f = pool
            .schedule_with_fixed_delay(Duration::ZERO, delay, move || {
                let start = c.now();
                k += 1;
                c.advance(ms(u64::from(k % 3))); // runs of 1, 2, 0, 1, ... ms
                s.lock().unwrap().push((start, c.now()));
            })
            .unwrap();
        for n in 1..CYCLES {
            assert!(wait_until(
                || spans.lock().unwrap().len() == n && pool.stats().active_count == 0
            ));
            clock.advance(delay);
        }
        assert!(wait_until(|| spans.lock().unwrap().len() == CYCLES));
        assert!(f.cancel());
        let spans = spans.lock().unwrap().clone();
        for pair in spans.windows(2) {
            let (_, prev_end) = pair[0];
            let (next_start, _) = pair[1];
            assert_eq!(next_start - prev_end, delay, "delay {delay:?}: {spans:?}");
        }
        cleanup(&pool);
    }
}

// Java: ScheduledExecutorTest.testSubmittedTasksRejectedWhenShutdown,
//       ScheduledExecutorSubclassTest.testSubmittedTasksRejectedWhenShutdown
// Java picks shutdown or shutdownNow at random; both are run here.
#[test]
fn test_submitted_tasks_rejected_when_shutdown() {
    for use_shutdown_now in [false, true] {
        const CORE: usize = 2;
        let pool = ScheduledThreadPoolExecutor::new(CORE);
        let (gate, started) = (Gate::default(), counter());
        pool.execute(blocking_task(&gate, &started)).unwrap();
        let f = pool.submit(blocking_task(&gate, &started)).unwrap();
        assert!(!f.is_done());
        assert!(wait_until(|| load(&started) == CORE));

        if use_shutdown_now {
            assert!(pool.shutdown_now().is_empty());
        } else {
            pool.shutdown();
        }
        // Shut down, but not yet terminated.
        assert_submissions_are_rejected(&pool);
        assert!(!pool.is_terminated());

        gate.open();
        assert!(pool.await_termination(BOUND));
        assert_submissions_are_rejected(&pool);
        assert_eq!(pool.stats().completed_task_count, CORE as u64);
    }
}

// Java: ScheduledExecutorTest.testGetActiveCount, ScheduledExecutorSubclassTest.testGetActiveCount
#[test]
fn test_get_active_count() {
    let pool = ScheduledThreadPoolExecutor::new(2);
    let (gate, started) = (Gate::default(), counter());
    assert_eq!(pool.stats().active_count, 0);
    let inner = pool.clone();
    let (tx, rx) = mpsc::channel();
    let run = blocking_task(&gate, &started);
    pool.execute(move || {
        tx.send(inner.stats().active_count).unwrap();
        run();
    })
    .unwrap();
    assert_eq!(rx.recv_timeout(BOUND).unwrap(), 1);
    assert!(wait_until(|| load(&started) == 1));
    assert_eq!(pool.stats().active_count, 1);
    gate.open();
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testGetCompletedTaskCount,
//       ScheduledExecutorSubclassTest.testGetCompletedTaskCount
#[test]
fn test_get_completed_task_count() {
    let pool = ScheduledThreadPoolExecutor::new(2);
    let (proceed, started) = (Gate::default(), counter());
    assert_eq!(pool.stats().completed_task_count, 0);
    let inner = pool.clone();
    let (tx, rx) = mpsc::channel();
    let run = blocking_task(&proceed, &started);
    let done = pool
        .submit(move || {
            tx.send(inner.stats().completed_task_count).unwrap();
            run();
        })
        .unwrap();
    assert_eq!(rx.recv_timeout(BOUND).unwrap(), 0);
    assert!(wait_until(|| load(&started) == 1));
    assert_eq!(pool.stats().completed_task_count, 0);
    proceed.open();
    assert!(done.wait_timeout(BOUND));
    assert!(wait_until(|| pool.stats().completed_task_count == 1));
    cleanup(&pool);
    assert_eq!(pool.stats().completed_task_count, 1);
}

// Java: ScheduledExecutorTest.testGetCorePoolSize,
//       ScheduledExecutorSubclassTest.testGetCorePoolSize
#[test]
fn test_get_core_pool_size() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    assert_eq!(pool.core_pool_size(), 1);
    assert_eq!(pool.stats().core_pool_size, 1);
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testGetLargestPoolSize,
//       ScheduledExecutorSubclassTest.testGetLargestPoolSize
#[test]
fn test_get_largest_pool_size() {
    const THREADS: usize = 3;
    let pool = ScheduledThreadPoolExecutor::new(THREADS);
    let (gate, started) = (Gate::default(), counter());
    assert_eq!(pool.stats().largest_pool_size, 0);
    let futs: Vec<_> = (0..THREADS)
        .map(|_| {
            let inner = pool.clone();
            let run = blocking_task(&gate, &started);
            pool.submit(move || {
                run();
                inner.stats().largest_pool_size
            })
            .unwrap()
        })
        .collect();
    assert!(wait_until(|| load(&started) == THREADS));
    assert_eq!(pool.stats().largest_pool_size, THREADS);
    gate.open();
    for f in futs {
        assert_eq!(f.get().unwrap(), THREADS);
    }
    cleanup(&pool);
    assert_eq!(pool.stats().largest_pool_size, THREADS);
}

// Java: ScheduledExecutorTest.testGetPoolSize, ScheduledExecutorSubclassTest.testGetPoolSize
#[test]
fn test_get_pool_size() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let (gate, started) = (Gate::default(), counter());
    assert_eq!(pool.stats().pool_size, 0);
    let inner = pool.clone();
    let run = blocking_task(&gate, &started);
    let f = pool
        .submit(move || {
            let seen = inner.stats().pool_size;
            run();
            seen
        })
        .unwrap();
    assert!(wait_until(|| load(&started) == 1));
    assert_eq!(pool.stats().pool_size, 1);
    gate.open();
    assert_eq!(f.get().unwrap(), 1);
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testGetTaskCount, ScheduledExecutorSubclassTest.testGetTaskCount
#[test]
fn test_get_task_count() {
    const TASKS: u64 = 3;
    let pool = ScheduledThreadPoolExecutor::new(1);
    let (gate, started) = (Gate::default(), counter());
    assert_eq!(pool.stats().task_count, 0);
    assert_eq!(pool.stats().completed_task_count, 0);
    pool.execute(blocking_task(&gate, &started)).unwrap();
    assert!(wait_until(|| load(&started) == 1));
    assert_eq!(pool.stats().task_count, 1);
    assert_eq!(pool.stats().completed_task_count, 0);
    for i in 0..TASKS {
        assert_eq!(pool.stats().task_count, 1 + i);
        let inner = pool.clone();
        let (g, s) = (gate.clone(), started.clone());
        pool.execute(move || {
            s.fetch_add(1, Ordering::SeqCst);
            assert_eq!(inner.stats().task_count, 1 + TASKS);
            g.wait();
        })
        .unwrap();
    }
    assert_eq!(pool.stats().task_count, 1 + TASKS);
    assert_eq!(pool.stats().completed_task_count, 0);
    gate.open();
    pool.close();
    let s = pool.stats();
    assert_eq!(
        (s.task_count, s.completed_task_count),
        (1 + TASKS, 1 + TASKS)
    );
    assert_eq!(s.panicked_count, 0, "a check inside a task failed");
    assert_eq!(load(&started), 1 + TASKS as usize);
}

// Java: ScheduledExecutorTest.testGetThreadFactory,
//       ScheduledExecutorSubclassTest.testGetThreadFactory
// No factory objects: the builder's name prefix and start hook are what the workers are
// made from.
#[test]
fn test_get_thread_factory() {
    let made = Arc::new(Mutex::new(Vec::new()));
    let m = made.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .thread_name_prefix("tck-factory-")
        .on_thread_start(move || {
            m.lock()
                .unwrap()
                .push(thread::current().name().unwrap().to_owned())
        })
        .build();
    let name = pool
        .submit(|| thread::current().name().unwrap().to_owned())
        .unwrap()
        .get()
        .unwrap();
    assert_eq!(name, "tck-factory-0");
    assert_eq!(*made.lock().unwrap(), vec!["tck-factory-0".to_owned()]);
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testDefaultRejectedExecutionHandler
#[test]
fn test_default_rejected_execution_handler() {
    assert_eq!(RejectionPolicy::default(), RejectionPolicy::Abort);
    let (_clock, pool) = {
        let clock = ManualClock::new();
        let pool = ScheduledThreadPoolExecutor::builder()
            .core_pool_size(1)
            .clock(clock.clone())
            .max_queued_tasks(1)
            .build();
        (clock, pool)
    };
    pool.schedule(HOUR, || ()).unwrap();
    assert_eq!(
        pool.schedule(HOUR, || ()).map(drop),
        Err(ScheduleError::QueueFull)
    );
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testIsShutdown, ScheduledExecutorSubclassTest.testIsShutdown
#[test]
fn test_is_shutdown() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    assert!(!pool.is_shutdown());
    pool.shutdown();
    assert!(pool.is_shutdown());
    assert!(pool.await_termination(BOUND));
}

// Java: ScheduledExecutorTest.testIsTerminated, ScheduledExecutorSubclassTest.testIsTerminated
#[test]
fn test_is_terminated() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let (gate, started) = (Gate::default(), counter());
    assert!(!pool.is_terminated());
    let inner = pool.clone();
    let run = blocking_task(&gate, &started);
    let f = pool
        .submit(move || {
            let seen = inner.is_terminated();
            run();
            seen
        })
        .unwrap();
    assert!(wait_until(|| load(&started) == 1));
    assert!(!pool.is_terminated());
    assert!(!pool.is_terminating());
    gate.open();
    pool.shutdown();
    assert!(pool.await_termination(BOUND));
    assert!(pool.is_terminated());
    assert!(!f.get().unwrap());
}

// Java: ScheduledExecutorTest.testIsTerminating, ScheduledExecutorSubclassTest.testIsTerminating
#[test]
fn test_is_terminating() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let (gate, started) = (Gate::default(), counter());
    assert!(!pool.is_terminating());
    let inner = pool.clone();
    let run = blocking_task(&gate, &started);
    let f = pool
        .submit(move || {
            let seen = inner.is_terminating();
            run();
            seen
        })
        .unwrap();
    assert!(wait_until(|| load(&started) == 1));
    assert!(!pool.is_terminating());
    pool.shutdown();
    assert!(pool.is_terminating(), "shut down while a task still runs");
    gate.open();
    assert!(pool.await_termination(BOUND));
    assert!(pool.is_terminated());
    assert!(!pool.is_terminating());
    assert!(!f.get().unwrap());
}

/// The setup shared by `testGetQueue` and `testRemove`: five tasks due at 1 ms on one
/// worker; the first runs and blocks, the other four wait in the queue.
fn five_queued_behind_a_blocker(
    clock: &ManualClock,
    pool: &ScheduledThreadPoolExecutor,
    gate: &Gate,
) -> Vec<ScheduledFuture<()>> {
    let started = counter();
    let tasks: Vec<_> = (0..5)
        .map(|_| pool.schedule(ms(1), blocking_task(gate, &started)).unwrap())
        .collect();
    clock.advance(ms(1));
    assert!(wait_until(|| load(&started) == 1));
    tasks
}

// Java: ScheduledExecutorTest.testGetQueue, ScheduledExecutorSubclassTest.testGetQueue
// No queue view: `queue_len` counts what Java's `getQueue().contains` inspects.
#[test]
fn test_get_queue() {
    let (clock, pool) = manual_pool(1);
    let gate = Gate::default();
    let tasks = five_queued_behind_a_blocker(&clock, &pool, &gate);
    assert_eq!(pool.queue_len(), 4);
    assert!(tasks.iter().all(|t| !t.is_done()));
    gate.open();
    for t in tasks {
        t.get().unwrap();
    }
    assert_eq!(pool.queue_len(), 0);
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testRemove, ScheduledExecutorSubclassTest.testRemove
// Java's `remove(task)` is `cancel` here (with `remove_on_cancel`, the default).
#[test]
fn test_remove() {
    let (clock, pool) = manual_pool(1);
    let gate = Gate::default();
    let tasks = five_queued_behind_a_blocker(&clock, &pool, &gate);
    assert!(!tasks[0].cancel(), "the running task cannot be removed");
    assert_eq!(pool.queue_len(), 4);
    assert!(tasks[4].cancel());
    assert!(!tasks[4].cancel());
    assert_eq!(pool.queue_len(), 3);
    assert!(tasks[3].cancel());
    assert_eq!(pool.queue_len(), 2);
    gate.open();
    let outcomes: Vec<bool> = tasks.into_iter().map(|t| t.get().is_ok()).collect();
    assert_eq!(outcomes, vec![true, true, true, false, false]);
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testPurge, ScheduledExecutorSubclassTest.testPurge
#[test]
fn test_purge() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock)
        .remove_on_cancel(false) // Java's default
        .build();
    let tasks: Vec<_> = (0..5)
        .map(|_| pool.schedule(BOUND, || ()).unwrap())
        .collect();
    let mut max = tasks.len();
    if tasks[4].cancel() {
        max -= 1;
    }
    if tasks[3].cancel() {
        max -= 1;
    }
    assert_eq!(max, 3);
    assert_eq!(pool.queue_len(), 5);
    assert_eq!(pool.purge(), 2);
    assert_eq!(pool.queue_len(), max);
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testShutdownNow, ScheduledExecutorSubclassTest.testShutdownNow
#[test]
fn test_shutdown_now() {
    const POOL: usize = 2;
    const COUNT: usize = 5;
    let pool = ScheduledThreadPoolExecutor::new(POOL);
    let (gate, started, ran) = (Gate::default(), counter(), counter());
    for _ in 0..COUNT {
        let (run, ran) = (blocking_task(&gate, &started), ran.clone());
        pool.execute(move || {
            run();
            ran.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    }
    assert!(wait_until(|| load(&started) == POOL));
    assert_eq!(pool.stats().active_count, POOL);
    assert_eq!(pool.stats().completed_task_count, 0);
    let queued = pool.shutdown_now();
    assert!(pool.is_shutdown());
    assert_eq!(pool.queue_len(), 0);
    assert_eq!(queued.len(), COUNT - POOL);
    gate.open(); // Java interrupts the sleeping waiters instead
    assert!(pool.await_termination(BOUND));
    assert!(pool.is_terminated());
    assert_eq!(load(&ran), POOL);
    assert_eq!(pool.stats().completed_task_count, POOL as u64);
}

// Java: ScheduledExecutorTest.testShutdownNow_delayedTasks,
//       ScheduledExecutorSubclassTest.testShutdownNow_delayedTasks
#[test]
fn test_shutdown_now_delayed_tasks() {
    let (_clock, pool) = manual_pool(1);
    let nine = Duration::from_secs(9);
    let mut tasks = Vec::new();
    for _ in 0..3 {
        tasks.push(pool.schedule(nine, || ()).unwrap());
        tasks.push(pool.schedule_at_fixed_rate(nine, nine, || ()).unwrap());
        tasks.push(pool.schedule_with_fixed_delay(nine, nine, || ()).unwrap());
    }
    assert_eq!(pool.queue_len(), tasks.len());
    let queued = pool.shutdown_now();
    assert!(pool.is_shutdown());
    assert_eq!(pool.queue_len(), 0);
    assert_eq!(queued.len(), tasks.len());
    let periodic = queued.iter().filter(|t| t.is_periodic()).count();
    assert_eq!(periodic, 6);
    for t in &tasks {
        assert!(!t.is_done());
        assert!(!t.is_cancelled());
    }
    assert!(pool.await_termination(BOUND));
    assert!(pool.is_terminated());
    // Rust difference: dropping the returned tasks completes their futures as cancelled.
    drop(queued);
    assert!(tasks.into_iter().all(is_cancelled));
}

#[derive(Clone, Copy, Debug)]
struct Policies {
    delayed: bool,
    periodic: bool,
    remove: bool,
    periodic_tasks_continue: bool,
    delay: Duration,
    rounds: i32,
}

// Java: ScheduledExecutorTest.testShutdown_cancellation,
//       ScheduledExecutorSubclassTest.testShutdown_cancellation
// Java draws the policies, the delay (0 or 1 ms) and the rounds (1 or 2) at random; every
// combination of policies runs here, with delay and rounds varied across them.
#[test]
fn test_shutdown_cancellation() {
    let fresh = ScheduledThreadPoolExecutor::new(1);
    assert!(fresh.execute_existing_delayed_tasks_after_shutdown());
    assert!(!fresh.continue_existing_periodic_tasks_after_shutdown());
    assert!(
        fresh.remove_on_cancel(),
        "Rust difference: Java's default is false"
    );
    fresh.close();

    let mut i = 0;
    for delayed in [true, false] {
        for periodic in [false, true] {
            for remove in [false, true] {
                let continues: &[bool] = if periodic { &[false, true] } else { &[false] };
                for &periodic_tasks_continue in continues {
                    shutdown_cancellation(Policies {
                        delayed,
                        periodic,
                        remove,
                        periodic_tasks_continue,
                        delay: ms(i % 2),
                        rounds: 1 + (i / 2 % 2) as i32,
                    });
                    i += 1;
                }
            }
        }
    }
}

fn shutdown_cancellation(p: Policies) {
    const POOL: usize = 4;
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(POOL)
        .clock(clock.clone())
        .build();
    pool.set_execute_existing_delayed_tasks_after_shutdown(p.delayed);
    pool.set_continue_existing_periodic_tasks_after_shutdown(p.periodic);
    pool.set_remove_on_cancel(p.remove);
    assert_eq!(
        pool.execute_existing_delayed_tasks_after_shutdown(),
        p.delayed
    );
    assert_eq!(
        pool.continue_existing_periodic_tasks_after_shutdown(),
        p.periodic
    );
    assert_eq!(pool.remove_on_cancel(), p.remove);

    // Strategy: wedge the pool with one wave of blocking tasks, then add a second wave
    // that waits in the queue until unblocked.
    let (ran, pool_blocked, unblock) = (counter(), counter(), Gate::default());
    let task = || {
        let (ran, pool_blocked, unblock) = (ran.clone(), pool_blocked.clone(), unblock.clone());
        move || {
            ran.fetch_add(1, Ordering::SeqCst);
            pool_blocked.fetch_add(1, Ordering::SeqCst);
            unblock.wait();
        }
    };
    let periodic_task = |rounds: i32| {
        let run = task();
        let mut rounds = rounds;
        move || {
            rounds -= 1;
            if rounds == 0 {
                run();
            }
            // Panic to surely end this periodic task, in a later run, detectably.
            if rounds == -1 {
                panic!("periodic task done");
            }
        }
    };
    let (mut immediates, mut delayeds, mut periodics) = (Vec::new(), Vec::new(), Vec::new());
    immediates.push(pool.submit(task()).unwrap());
    delayeds.push(pool.schedule(p.delay, task()).unwrap());
    periodics.push(
        pool.schedule_at_fixed_rate(p.delay, ms(1), periodic_task(p.rounds))
            .unwrap(),
    );
    periodics.push(
        pool.schedule_with_fixed_delay(p.delay, ms(1), periodic_task(p.rounds))
            .unwrap(),
    );
    assert!(
        advance_until(&clock, || load(&pool_blocked) == POOL),
        "{p:?}"
    );
    assert_eq!(load(&ran), POOL);
    assert_eq!(pool.stats().active_count, POOL);
    assert_eq!(pool.queue_len(), 0);

    // Second wave.
    immediates.push(pool.submit(task()).unwrap());
    let second_delay = if p.delayed { p.delay } else { HOUR };
    delayeds.push(pool.schedule(second_delay, task()).unwrap());
    periodics.push(
        pool.schedule_at_fixed_rate(p.delay, ms(1), periodic_task(p.rounds))
            .unwrap(),
    );
    periodics.push(
        pool.schedule_with_fixed_delay(p.delay, ms(1), periodic_task(p.rounds))
            .unwrap(),
    );
    assert_eq!(pool.queue_len(), POOL);
    assert_eq!(load(&ran), POOL);
    assert!(immediates.iter().all(|f| f.delay() == Duration::ZERO));
    assert!(immediates.iter().all(|f| !f.is_done()));
    assert!(delayeds.iter().all(|f| !f.is_done()));
    assert!(periodics.iter().all(|f| !f.is_done()));

    pool.shutdown();
    assert!(pool.is_shutdown());
    assert!(pool.is_terminating());
    assert!(!pool.is_terminated());
    assert_submissions_are_rejected(&pool);

    // Java checks queue membership; the count says the same here.
    let expected_queued = 1 + usize::from(p.delayed) + 2 * usize::from(p.periodic);
    assert_eq!(pool.queue_len(), expected_queued, "{p:?}");
    assert!(immediates.iter().all(|f| !f.is_done()));
    assert!(!delayeds[0].is_done());
    if p.delayed {
        assert!(!delayeds[1].is_done());
    } else {
        assert!(delayeds[1].is_cancelled());
    }
    if p.periodic {
        for f in &periodics {
            assert!(!f.is_done());
            if !p.periodic_tasks_continue {
                assert!(f.cancel());
                assert!(f.is_cancelled());
            }
        }
    } else {
        assert!(periodics[..2].iter().all(|f| !f.is_done()));
        assert!(periodics[2..].iter().all(|f| f.is_cancelled()));
    }

    unblock.open(); // release all pool threads
    assert!(advance_until(&clock, || pool.is_terminated()), "{p:?}");
    assert!(pool.await_termination(BOUND));
    assert!(!pool.is_terminating());
    assert!(pool.is_terminated());
    assert_eq!(pool.queue_len(), 0);

    assert!(immediates.iter().all(|f| f.is_done()));
    assert!(delayeds.iter().all(|f| f.is_done()));
    assert!(periodics.iter().all(|f| f.is_done()));
    for f in immediates {
        f.get().unwrap();
    }
    let mut delayeds = delayeds.into_iter();
    delayeds.next().unwrap().get().unwrap();
    let second = delayeds.next().unwrap();
    if p.delayed {
        second.get().unwrap();
    } else {
        assert!(is_cancelled(second));
    }
    for f in periodics {
        if p.periodic_tasks_continue {
            let err = f.get().unwrap_err();
            assert_eq!(err.panic_message(), Some("periodic task done"), "{p:?}");
        } else {
            assert!(is_cancelled(f), "{p:?}");
        }
    }
    assert_eq!(
        load(&ran),
        POOL + 1 + usize::from(p.delayed) + 2 * usize::from(p.periodic_tasks_continue),
        "{p:?}"
    );
}

// Java: ScheduledExecutorTest.testShutdown1 (older revisions)
// In the default setting, shutdown cancels periodic but not delayed tasks.
#[test]
fn test_shutdown1() {
    let (clock, pool) = manual_pool(1);
    assert!(pool.execute_existing_delayed_tasks_after_shutdown());
    assert!(!pool.continue_existing_periodic_tasks_after_shutdown());
    let tasks: Vec<_> = (0..5)
        .map(|_| pool.schedule(ms(10), || ()).unwrap())
        .collect();
    pool.shutdown();
    assert_eq!(pool.queue_len(), 5);
    for t in &tasks {
        assert!(!t.is_done() && !t.is_cancelled());
    }
    assert!(pool.is_shutdown());
    clock.advance(ms(10));
    assert!(pool.await_termination(BOUND));
    assert!(pool.is_terminated());
    for t in tasks {
        assert!(t.is_done() && !t.is_cancelled());
        t.get().unwrap();
    }
}

// Java: ScheduledExecutorTest.testShutdown2 (older revisions)
// With execute_existing_delayed_tasks_after_shutdown(false), delayed tasks are cancelled.
#[test]
fn test_shutdown2() {
    let (_clock, pool) = manual_pool(1);
    pool.set_execute_existing_delayed_tasks_after_shutdown(false);
    assert!(!pool.execute_existing_delayed_tasks_after_shutdown());
    assert!(!pool.continue_existing_periodic_tasks_after_shutdown());
    let tasks: Vec<_> = (0..5)
        .map(|_| pool.schedule(ms(10), || ()).unwrap())
        .collect();
    assert_eq!(pool.queue_len(), tasks.len());
    pool.shutdown();
    assert!(pool.is_shutdown());
    assert_eq!(pool.queue_len(), 0);
    assert!(pool.await_termination(BOUND));
    assert!(pool.is_terminated());
    for t in tasks {
        assert!(t.is_done() && t.is_cancelled());
    }
}

// Java: ScheduledExecutorTest.testShutdown3 (older revisions)
// With continue_existing_periodic_tasks_after_shutdown(false), periodic tasks are cancelled.
#[test]
fn test_shutdown3() {
    let (_clock, pool) = manual_pool(1);
    pool.set_continue_existing_periodic_tasks_after_shutdown(false);
    assert!(pool.execute_existing_delayed_tasks_after_shutdown());
    assert!(!pool.continue_existing_periodic_tasks_after_shutdown());
    let task = pool.schedule_at_fixed_rate(BOUND, ms(5), || ()).unwrap();
    pool.shutdown();
    assert!(pool.is_shutdown());
    assert_eq!(pool.queue_len(), 0);
    assert!(task.is_done() && task.is_cancelled());
    assert!(pool.await_termination(BOUND));
}

// Java: ScheduledExecutorTest.testShutdown4 (older revisions)
// With continue_existing_periodic_tasks_after_shutdown(true), periodic tasks go on.
#[test]
fn test_shutdown4() {
    let (clock, pool) = manual_pool(1);
    pool.set_continue_existing_periodic_tasks_after_shutdown(true);
    assert!(pool.execute_existing_delayed_tasks_after_shutdown());
    assert!(pool.continue_existing_periodic_tasks_after_shutdown());
    let runs = counter();
    let task = pool
        .schedule_at_fixed_rate(ms(1), ms(1), bump(&runs))
        .unwrap();
    assert!(!task.is_done() && !task.is_cancelled());
    pool.shutdown();
    assert!(!task.is_cancelled());
    assert!(!pool.is_terminated());
    assert!(pool.is_shutdown());
    assert!(advance_until(&clock, || load(&runs) >= 2));
    assert!(!task.is_cancelled());
    assert!(task.cancel());
    assert!(task.is_done() && task.is_cancelled());
    assert!(pool.await_termination(BOUND));
    assert!(pool.is_terminated());
}

// Java: ScheduledExecutorTest.testSchedule1_RejectedExecutionException (older revisions)
#[test]
fn test_schedule1_rejected_execution_exception() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    pool.shutdown();
    assert_eq!(
        pool.schedule(ms(50), || ()).map(drop),
        Err(ScheduleError::Shutdown)
    );
    assert!(pool.await_termination(BOUND));
}

// Java: ScheduledExecutorTest.testSchedule2_RejectedExecutionException (older revisions)
#[test]
fn test_schedule2_rejected_execution_exception() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    pool.shutdown();
    assert_eq!(
        pool.schedule(ms(50), || TEST_STRING).map(drop),
        Err(ScheduleError::Shutdown)
    );
    assert!(pool.await_termination(BOUND));
}

// Java: ScheduledExecutorTest.testSchedule3_RejectedExecutionException (older revisions)
// (The Java case repeats testSchedule2's callable; the port uses `schedule_at`.)
#[test]
fn test_schedule3_rejected_execution_exception() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    pool.shutdown();
    assert_eq!(
        pool.schedule_at(Instant::now() + ms(50), || TEST_STRING)
            .map(drop),
        Err(ScheduleError::Shutdown)
    );
    assert!(pool.await_termination(BOUND));
}

// Java: ScheduledExecutorTest.testScheduleAtFixedRate1_RejectedExecutionException
//       (older revisions)
#[test]
fn test_schedule_at_fixed_rate1_rejected_execution_exception() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    pool.shutdown();
    assert_eq!(
        pool.schedule_at_fixed_rate(ms(50), ms(50), || ()).map(drop),
        Err(ScheduleError::Shutdown)
    );
    assert!(pool.await_termination(BOUND));
}

// Java: ScheduledExecutorTest.testScheduleWithFixedDelay1_RejectedExecutionException
//       (older revisions)
#[test]
fn test_schedule_with_fixed_delay1_rejected_execution_exception() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    pool.shutdown();
    assert_eq!(
        pool.schedule_with_fixed_delay(ms(50), ms(50), || ())
            .map(drop),
        Err(ScheduleError::Shutdown)
    );
    assert!(pool.await_termination(BOUND));
}

// Java: no TCK case; ScheduledThreadPoolExecutor's javadoc: scheduleAtFixedRate and
//       scheduleWithFixedDelay throw IllegalArgumentException if period/delay <= 0.
#[test]
fn test_zero_period_is_an_argument_error() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    assert_eq!(
        pool.schedule_at_fixed_rate(ms(1), Duration::ZERO, || ())
            .map(drop),
        Err(ScheduleError::ZeroPeriod)
    );
    assert_eq!(
        pool.schedule_with_fixed_delay(ms(1), Duration::ZERO, || ())
            .map(drop),
        Err(ScheduleError::ZeroPeriod)
    );
    let s = pool.stats();
    assert_eq!((s.task_count, s.rejected_count), (0, 0));
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testSubmitCallable, ScheduledExecutorSubclassTest.testSubmitCallable
#[test]
fn test_submit_callable() {
    let pool = ScheduledThreadPoolExecutor::new(2);
    let result = pool.submit(|| TEST_STRING).unwrap().get().unwrap();
    assert!(std::ptr::eq(result, TEST_STRING)); // Java: assertSame
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testSubmitRunnable, ScheduledExecutorSubclassTest.testSubmitRunnable
#[test]
fn test_submit_runnable() {
    let pool = ScheduledThreadPoolExecutor::new(2);
    let future = pool.submit(|| ()).unwrap();
    assert!(future.wait_timeout(BOUND));
    assert!(future.is_done());
    future.get().unwrap();
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testSubmitRunnable2,
//       ScheduledExecutorSubclassTest.testSubmitRunnable2
// Java's `submit(runnable, result)` is a closure that runs the runnable, then returns the
// result.
#[test]
fn test_submit_runnable2() {
    let pool = ScheduledThreadPoolExecutor::new(2);
    let noop = || ();
    let result = pool
        .submit(move || {
            noop();
            TEST_STRING
        })
        .unwrap()
        .get()
        .unwrap();
    assert!(std::ptr::eq(result, TEST_STRING));
    cleanup(&pool);
}

// Java: ScheduledExecutorTest.testScheduleWithFixedDelay_overflow (JDK-8051859)
// A fixed-delay task with an overflowing delay must not keep a one-shot from running.
#[test]
fn test_schedule_with_fixed_delay_overflow() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let (delayed_tx, delayed_rx) = mpsc::channel();
    let (immediate_tx, immediate_rx) = mpsc::channel();
    let inner = pool.clone();
    pool.schedule_with_fixed_delay(Duration::ZERO, Duration::MAX, move || {
        let _ = delayed_tx.send(());
        let tx = immediate_tx.clone();
        inner
            .submit(move || {
                let _ = tx.send(());
            })
            .unwrap();
    })
    .unwrap();
    delayed_rx.recv_timeout(BOUND).unwrap();
    immediate_rx.recv_timeout(BOUND).unwrap();
    cleanup(&pool);
}

// Java: no TCK case; the fixed-rate twin of testScheduleWithFixedDelay_overflow, and
//       Long.MAX_VALUE delays (Duration::MAX here) in general.
#[test]
fn test_schedule_at_fixed_rate_and_schedule_overflow() {
    let (clock, pool) = manual_pool(1);
    let runs = counter();
    let rate = pool
        .schedule_at_fixed_rate(Duration::ZERO, Duration::MAX, bump(&runs))
        .unwrap();
    let never = pool.schedule(Duration::MAX, || ()).unwrap();
    let never_periodic = pool
        .schedule_with_fixed_delay(Duration::MAX, Duration::MAX, || ())
        .unwrap();
    assert!(wait_until(|| load(&runs) == 1));
    let ninety_nine_years = Duration::from_secs(99 * 365 * 24 * 3600);
    assert!(never.delay() > ninety_nine_years);
    assert!(never.deadline() > clock.now() + ninety_nine_years);
    clock.advance(ninety_nine_years);
    // A due sentinel runs; an overflowed (wrapped-around) deadline would have run first
    // on this single worker.
    assert!(pool.submit(|| ()).unwrap().wait_timeout(BOUND));
    assert_eq!(load(&runs), 1);
    assert!(!never.is_done() && !never_periodic.is_done() && !rate.is_done());
    assert!(rate.cancel() && never.cancel() && never_periodic.cancel());
    cleanup(&pool);
}
