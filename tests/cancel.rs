//! Cancel: before start, during a run (one-shot and periodic), `remove_on_cancel` on and
//! off, `purge`, `CancelHandle`, and dropping a future.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use schedpool::{ManualClock, ScheduledFuture, ScheduledThreadPoolExecutor, TaskError};

mod common;
use common::{close, counter, flush, manual_pool, outcome, sec, wait_for, DropCount, BOUND};

fn manual_pool_with(core: usize, remove: bool) -> (ManualClock, ScheduledThreadPoolExecutor) {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(core)
        .remove_on_cancel(remove)
        .clock(clock.clone())
        .build();
    (clock, pool)
}

/// A gate a task blocks on: the task reports it started, then waits to be let go.
struct Gate {
    started: mpsc::Receiver<()>,
    go: mpsc::Sender<()>,
}

fn gate() -> (Gate, impl FnMut() + Send + 'static) {
    let (started_tx, started) = mpsc::channel();
    let (go, go_rx) = mpsc::channel();
    let wait = move || {
        started_tx.send(()).unwrap();
        go_rx.recv_timeout(BOUND).unwrap();
    };
    (Gate { started, go }, wait)
}

#[test]
fn cancel_before_start_prevents_the_run() {
    let (clock, pool) = manual_pool(1);
    let runs = counter();
    let r = runs.clone();
    let fut = pool
        .schedule(sec(5), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert!(!fut.is_cancelled() && !fut.is_done());
    assert!(fut.cancel());
    assert!(fut.is_cancelled());
    assert!(fut.is_done());
    assert!(!fut.cancel(), "only the first cancel moves it");
    clock.advance(sec(10));
    flush(&pool);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(matches!(outcome(fut), Err(TaskError::Cancelled)));
    close(&pool);
    assert_eq!(pool.stats().completed_task_count, 1, "only the flush ran");
}

#[test]
fn cancel_of_a_periodic_task_before_its_first_run() {
    let (clock, pool) = manual_pool(1);
    let runs = counter();
    let r = runs.clone();
    let fut = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert!(fut.cancel());
    assert!(fut.is_cancelled() && fut.is_done());
    clock.advance(sec(10));
    flush(&pool);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(outcome(fut).unwrap_err().is_cancelled());
    close(&pool);
}

#[test]
fn cancel_of_a_running_one_shot_returns_false_and_the_outcome_stands() {
    let (_clock, pool) = manual_pool(1);
    let (gate, mut wait) = gate();
    let fut = pool
        .submit(move || {
            wait();
            "finished"
        })
        .unwrap();
    gate.started.recv_timeout(BOUND).unwrap();
    assert!(!fut.cancel());
    assert!(!fut.cancel_handle().cancel());
    assert!(!fut.is_cancelled());
    assert!(!fut.is_done());
    gate.go.send(()).unwrap();
    assert_eq!(outcome(fut).unwrap(), "finished");
    close(&pool);
}

#[test]
fn cancel_of_a_finished_one_shot_returns_false() {
    let (_clock, pool) = manual_pool(1);
    let fut = pool.submit(|| 1).unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert!(!fut.cancel());
    assert!(!fut.is_cancelled() && fut.is_done());
    assert_eq!(outcome(fut).unwrap(), 1);
    close(&pool);
}

#[test]
fn cancel_of_a_running_periodic_task_lets_the_run_finish_and_stops_it() {
    let (clock, pool) = manual_pool(1);
    let (gate, mut wait) = gate();
    let starts = counter();
    let ends = counter();
    let (s, e) = (starts.clone(), ends.clone());
    let fut = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            s.fetch_add(1, Ordering::SeqCst);
            wait();
            e.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    clock.advance(sec(1));
    gate.started.recv_timeout(BOUND).unwrap();
    assert!(fut.cancel());
    assert!(fut.is_cancelled(), "at once, while the run goes on");
    assert!(fut.is_done());
    assert!(!fut.cancel());
    assert_eq!(ends.load(Ordering::SeqCst), 0);
    gate.go.send(()).unwrap();
    wait_for("the run ended", || ends.load(Ordering::SeqCst) == 1);
    clock.advance(sec(10));
    flush(&pool);
    assert_eq!(starts.load(Ordering::SeqCst), 1);
    assert_eq!(pool.queue_len(), 0);
    assert!(outcome(fut).unwrap_err().is_cancelled());
    close(&pool);
    assert_eq!(
        pool.stats().completed_task_count,
        2,
        "the cancelled run counts"
    );
}

#[test]
fn cancel_removes_the_task_and_drops_its_closure_before_returning() {
    let (_clock, pool) = manual_pool(1);
    assert!(pool.remove_on_cancel(), "the default");
    let drops = counter();
    let guard = DropCount(drops.clone());
    let fut = pool
        .schedule(sec(60), move || {
            let _keep = &guard;
        })
        .unwrap();
    let other = pool.schedule(sec(60), || ()).unwrap();
    assert_eq!(pool.queue_len(), 2);
    assert!(fut.cancel());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(pool.queue_len(), 1);
    assert_eq!(pool.stats().queued, 1);
    assert_eq!(pool.purge(), 0);
    assert!(other.cancel());
    assert_eq!(pool.queue_len(), 0);
    close(&pool);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn cancel_of_a_periodic_task_drops_its_closure_before_returning() {
    let (_clock, pool) = manual_pool(1);
    let drops = counter();
    let guard = DropCount(drops.clone());
    let fut = pool
        .schedule_with_fixed_delay(sec(60), sec(1), move || {
            let _keep = &guard;
        })
        .unwrap();
    assert!(fut.cancel_handle().cancel());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(pool.queue_len(), 0);
    close(&pool);
}

#[test]
fn closure_of_a_cancelled_running_periodic_task_is_dropped_once_the_run_ends() {
    let (clock, pool) = manual_pool(1);
    let (gate, mut wait) = gate();
    let drops = counter();
    let guard = DropCount(drops.clone());
    let fut = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            let _keep = &guard;
            wait();
        })
        .unwrap();
    clock.advance(sec(1));
    gate.started.recv_timeout(BOUND).unwrap();
    assert!(fut.cancel());
    assert_eq!(drops.load(Ordering::SeqCst), 0, "the run still uses it");
    gate.go.send(()).unwrap();
    wait_for("the closure was dropped", || {
        drops.load(Ordering::SeqCst) == 1
    });
    close(&pool);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn without_remove_on_cancel_the_task_stays_queued_until_purge() {
    let (clock, pool) = manual_pool_with(1, false);
    assert!(!pool.remove_on_cancel());
    let runs = counter();
    let r = runs.clone();
    let fut = pool
        .schedule(sec(60), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let keep = pool.schedule(sec(120), || ()).unwrap();
    assert!(fut.cancel());
    assert!(fut.is_cancelled() && fut.is_done());
    assert_eq!(pool.queue_len(), 2);
    assert_eq!(pool.stats().queued, 2);
    assert_eq!(pool.purge(), 1);
    assert_eq!(pool.queue_len(), 1);
    assert_eq!(pool.purge(), 0);
    clock.advance(sec(60));
    flush(&pool);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(outcome(fut).unwrap_err().is_cancelled());
    assert!(keep.cancel());
    assert_eq!(pool.queue_len(), 1);
    close(&pool);
    assert_eq!(pool.queue_len(), 0, "shutdown purges cancelled tasks");
}

#[test]
fn a_cancelled_task_left_in_the_queue_never_runs() {
    let (clock, pool) = manual_pool_with(1, false);
    let runs = counter();
    let r = runs.clone();
    let fut = pool
        .schedule(sec(5), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert!(fut.cancel());
    assert_eq!(pool.queue_len(), 1);
    clock.advance(sec(5));
    flush(&pool);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(pool.queue_len(), 0, "taken and discarded by the worker");
    close(&pool);
}

#[test]
fn set_remove_on_cancel_applies_to_later_cancels() {
    let (_clock, pool) = manual_pool(1);
    pool.set_remove_on_cancel(false);
    assert!(!pool.remove_on_cancel());
    let a = pool.schedule(sec(60), || ()).unwrap();
    assert!(a.cancel());
    assert_eq!(pool.queue_len(), 1);
    pool.set_remove_on_cancel(true);
    let b = pool.schedule(sec(60), || ()).unwrap();
    assert!(b.cancel());
    assert_eq!(pool.queue_len(), 1, "only b was removed at once");
    assert_eq!(pool.purge(), 1);
    assert_eq!(pool.queue_len(), 0);
    close(&pool);
}

#[test]
fn cancel_handle_clones_cancel_the_same_task() {
    let (_clock, pool) = manual_pool(1);
    let fut = pool.schedule(sec(60), || 3).unwrap();
    let h1 = fut.cancel_handle();
    let h2 = h1.clone();
    assert!(!h1.is_cancelled() && !h2.is_done());
    let winner = std::thread::spawn(move || h2.cancel()).join().unwrap();
    assert!(winner);
    assert!(!h1.cancel(), "already cancelled by the clone");
    assert!(!fut.cancel());
    assert!(h1.is_cancelled() && h1.is_done());
    assert!(fut.is_cancelled());
    assert_eq!(pool.queue_len(), 0);
    assert!(outcome(fut).unwrap_err().is_cancelled());
    assert!(h1.is_cancelled(), "a handle outlives its future");
    close(&pool);
}

#[test]
fn cancel_handle_reports_completion() {
    let (_clock, pool) = manual_pool(1);
    let fut = pool.submit(|| ()).unwrap();
    let handle = fut.cancel_handle();
    outcome(fut).unwrap();
    assert!(handle.is_done() && !handle.is_cancelled());
    assert!(!handle.cancel());
    close(&pool);
}

#[test]
fn dropping_a_future_does_not_cancel_its_task() {
    let (clock, pool) = manual_pool(1);
    let (tx, rx) = mpsc::channel();
    let fut = pool
        .schedule(sec(5), move || tx.send("ran").unwrap())
        .unwrap();
    drop(fut);
    assert_eq!(pool.queue_len(), 1);
    clock.advance(sec(5));
    assert_eq!(rx.recv_timeout(BOUND), Ok("ran"));
    close(&pool);
}

#[test]
fn dropping_a_periodic_future_does_not_cancel_its_task() {
    let (clock, pool) = manual_pool(1);
    let (tx, rx) = mpsc::channel();
    let mut n = 0;
    drop(
        pool.schedule_at_fixed_rate(sec(1), sec(1), move || {
            n += 1;
            tx.send(n).unwrap();
        })
        .unwrap(),
    );
    for i in 1..=3 {
        clock.advance(sec(1));
        assert_eq!(rx.recv_timeout(BOUND), Ok(i));
    }
    drop(pool.shutdown_now());
    assert!(pool.await_termination(BOUND));
}

#[test]
fn cancel_of_many_tasks_keeps_the_rest_in_order() {
    let (clock, pool) = manual_pool(1);
    let (tx, rx) = mpsc::channel();
    let futs: Vec<_> = (0..50u64)
        .map(|i| {
            let tx = tx.clone();
            pool.schedule(sec(1 + i % 5), move || tx.send(i).unwrap())
                .unwrap()
        })
        .collect();
    for (i, f) in futs.iter().enumerate() {
        if i % 3 == 0 {
            assert!(f.cancel());
        }
    }
    assert_eq!(pool.queue_len(), 50 - 17);
    clock.advance(sec(5));
    let mut expected: Vec<u64> = (0..50).filter(|i| i % 3 != 0).collect();
    expected.sort_by_key(|i| (i % 5, *i));
    let got: Vec<u64> = (0..expected.len())
        .map(|_| rx.recv_timeout(BOUND).unwrap())
        .collect();
    assert_eq!(got, expected);
    close(&pool);
}

#[test]
fn cancelling_a_running_task_leaves_the_other_queued_tasks_alone() {
    let (clock, pool) = manual_pool(1);
    let (gate, wait) = gate();
    let fut = pool
        .schedule_with_fixed_delay(sec(1), sec(1), wait)
        .unwrap();
    clock.advance(sec(1));
    gate.started.recv_timeout(BOUND).unwrap();
    let others: Vec<_> = (0..3)
        .map(|i| pool.schedule(sec(5), move || i).unwrap())
        .collect();
    assert_eq!(pool.queue_len(), 3);
    assert!(fut.cancel());
    assert_eq!(pool.queue_len(), 3, "the running task was not queued");
    gate.go.send(()).unwrap();
    clock.advance(sec(5));
    for (i, f) in others.into_iter().enumerate() {
        assert_eq!(outcome(f).unwrap(), i);
    }
    assert!(outcome(fut).unwrap_err().is_cancelled());
    close(&pool);
}

/// Tasks submitted from several threads (so from several queue shards) and cancelled
/// from yet another: every cancel wins, leaves the queue at once and drops its closure,
/// and a reschedule from a third thread moves the survivors; nothing is lost or run
/// twice.
#[test]
fn cancel_and_reschedule_from_other_threads_than_the_submitters() {
    const THREADS: usize = 4;
    const PER_THREAD: usize = 250;
    let (clock, pool) = manual_pool(2);
    let drops = Arc::new(AtomicUsize::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    struct CountDrop(Arc<AtomicUsize>);
    impl Drop for CountDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let futures: Vec<ScheduledFuture<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (pool, drops, runs) = (&pool, drops.clone(), runs.clone());
                s.spawn(move || {
                    (0..PER_THREAD)
                        .map(|i| {
                            let guard = CountDrop(drops.clone());
                            let runs = runs.clone();
                            let delay = Duration::from_millis(10 + (t * PER_THREAD + i) as u64);
                            pool.schedule(delay, move || {
                                let _owned = &guard;
                                runs.fetch_add(1, Ordering::SeqCst);
                            })
                            .unwrap()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let total = THREADS * PER_THREAD;
    assert_eq!(pool.queue_len(), total);
    // Cancel every other task from one thread, reschedule the rest from another.
    std::thread::scope(|s| {
        s.spawn(|| {
            for f in futures.iter().step_by(2) {
                assert!(f.cancel(), "a pending task is cancellable from any thread");
            }
        });
        s.spawn(|| {
            for f in futures.iter().skip(1).step_by(2) {
                // Still pending (never cancelled): the reschedule finds it in its shard.
                assert!(f.reschedule(clock.now() + Duration::from_secs(3600)));
            }
        });
    });
    assert_eq!(
        pool.queue_len(),
        total / 2,
        "cancelled tasks left the queue"
    );
    assert_eq!(
        drops.load(Ordering::SeqCst),
        total / 2,
        "their closures are dropped"
    );
    clock.advance(Duration::from_secs(1));
    assert!(pool.wait_idle(BOUND));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the survivors moved an hour ahead"
    );
    clock.advance(Duration::from_secs(3600));
    assert!(pool.wait_idle(BOUND));
    assert_eq!(runs.load(Ordering::SeqCst), total / 2);
    for f in futures.into_iter().step_by(2) {
        assert!(f.get().unwrap_err().is_cancelled());
    }
    assert_eq!(pool.queue_len(), 0);
    close(&pool);
}
