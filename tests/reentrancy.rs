//! Calling back into the executor from inside a running task (or a task's destructor):
//! schedule, cancel, drop the last handle, shutdown, shutdown_now, close. None deadlocks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use schedpool::{CancelHandle, ScheduledFuture};

mod common;
use common::{close, counted_pool, manual_pool, outcome, sec, wait_for, BOUND};

#[test]
fn task_schedules_another_task() {
    let (clock, pool) = manual_pool(1);
    let inner_pool = pool.clone();
    let outer = pool
        .submit(move || inner_pool.schedule(sec(5), || "inner").unwrap())
        .unwrap();
    assert!(outer.wait_timeout(BOUND));
    let inner = outcome(outer).unwrap();
    assert!(!inner.is_done());
    clock.advance(sec(5));
    assert!(inner.wait_timeout(BOUND));
    assert_eq!(outcome(inner).unwrap(), "inner");
    close(&pool);
}

#[test]
fn periodic_task_schedules_one_shots() {
    let (clock, pool) = manual_pool(2);
    let spawned: Arc<Mutex<Vec<ScheduledFuture<u32>>>> = Arc::default();
    let (p, s) = (pool.clone(), spawned.clone());
    let mut n = 0;
    let fut = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            n += 1;
            let i = n;
            s.lock().unwrap().push(p.submit(move || i).unwrap());
        })
        .unwrap();
    for k in 1..=3 {
        clock.advance(sec(1));
        wait_for("a run", || spawned.lock().unwrap().len() == k);
    }
    assert!(fut.cancel());
    let results: Vec<u32> = std::mem::take(&mut *spawned.lock().unwrap())
        .into_iter()
        .map(|f| outcome(f).unwrap())
        .collect();
    assert_eq!(results, [1, 2, 3]);
    close(&pool);
}

#[test]
fn task_cancels_another_task() {
    let (clock, pool) = manual_pool(1);
    let drops = Arc::new(AtomicUsize::new(0));
    struct DropCount(Arc<AtomicUsize>);
    impl Drop for DropCount {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let guard = DropCount(drops.clone());
    let victim = pool
        .schedule(sec(2), move || {
            let _keep = &guard;
        })
        .unwrap();
    let handle = victim.cancel_handle();
    let killer = pool.schedule(sec(1), move || handle.cancel()).unwrap();
    clock.advance(sec(1));
    assert!(killer.wait_timeout(BOUND));
    assert!(outcome(killer).unwrap(), "the victim was pending");
    assert!(victim.is_cancelled());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(pool.queue_len(), 0);
    assert!(victim.get().unwrap_err().is_cancelled());
    close(&pool);
}

#[test]
fn one_shot_cancelling_itself_gets_false_and_completes() {
    let (clock, pool) = manual_pool(1);
    let me: Arc<OnceLock<CancelHandle>> = Arc::new(OnceLock::new());
    let m = me.clone();
    let fut = pool
        .schedule(sec(1), move || m.get().unwrap().cancel())
        .unwrap();
    me.set(fut.cancel_handle()).unwrap();
    clock.advance(sec(1));
    assert!(fut.wait_timeout(BOUND));
    assert!(!fut.is_cancelled());
    assert!(!outcome(fut).unwrap(), "it had already started");
    close(&pool);
}

#[test]
fn periodic_task_cancelling_itself_stops_after_the_run() {
    let (clock, pool) = manual_pool(1);
    let me: Arc<OnceLock<CancelHandle>> = Arc::new(OnceLock::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let result = Arc::new(Mutex::new(None));
    let (m, r, res) = (me.clone(), runs.clone(), result.clone());
    let fut = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
            let h = m.get().unwrap();
            *res.lock().unwrap() = Some((h.cancel(), h.is_cancelled(), h.is_done()));
        })
        .unwrap();
    me.set(fut.cancel_handle()).unwrap();
    clock.advance(sec(1));
    assert!(fut.wait_timeout(BOUND));
    wait_for("the run ended", || result.lock().unwrap().is_some());
    assert_eq!(*result.lock().unwrap(), Some((true, true, true)));
    clock.advance(sec(5));
    assert!(pool.submit(|| ()).unwrap().wait_timeout(BOUND));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(outcome(fut).unwrap_err().is_cancelled());
    close(&pool);
}

#[test]
fn task_drops_the_last_executor_handle() {
    let (clock, pool, stopped) = counted_pool(2);
    let last = pool.clone();
    let fut = pool
        .schedule(sec(1), move || {
            drop(last);
            "dropped"
        })
        .unwrap();
    drop(pool);
    clock.advance(sec(1));
    assert!(
        fut.wait_timeout(BOUND),
        "dropping the last handle deadlocked"
    );
    assert_eq!(outcome(fut).unwrap(), "dropped");
    wait_for("the worker exited", || stopped.load(Ordering::SeqCst) == 1);
}

#[test]
fn closure_holding_the_last_handle_is_dropped_by_its_run() {
    let (clock, pool, stopped) = counted_pool(1);
    let last = pool.clone();
    let fut = pool
        .schedule(sec(1), move || {
            let _captured = &last;
        })
        .unwrap();
    drop(pool);
    clock.advance(sec(1));
    assert!(fut.wait_timeout(BOUND));
    wait_for("the worker exited", || stopped.load(Ordering::SeqCst) == 1);
}

#[test]
fn cancel_drops_a_closure_holding_the_last_handle() {
    let (_clock, pool, stopped) = counted_pool(1);
    let last = pool.clone();
    let fut = pool
        .schedule(sec(60), move || {
            let _captured = &last;
        })
        .unwrap();
    assert_eq!(pool.stats().pool_size, 1);
    drop(pool);
    assert!(fut.cancel(), "cancel deadlocked or failed");
    assert!(fut.is_cancelled());
    wait_for("the worker exited", || stopped.load(Ordering::SeqCst) == 1);
}

#[test]
fn task_calls_shutdown() {
    let (clock, pool) = manual_pool(2);
    let p = pool.clone();
    let later = pool.schedule(sec(5), || "delayed").unwrap();
    let fut = pool
        .submit(move || {
            p.shutdown();
            p.is_shutdown()
        })
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert!(outcome(fut).unwrap());
    assert!(pool.is_shutdown());
    clock.advance(sec(5));
    assert_eq!(
        outcome(later).unwrap(),
        "delayed",
        "delayed tasks still run"
    );
    assert!(pool.await_termination(BOUND));
}

#[test]
fn periodic_task_calls_shutdown_and_is_not_run_again() {
    let (clock, pool) = manual_pool(1);
    let p = pool.clone();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
            p.shutdown();
        })
        .unwrap();
    clock.advance(sec(1));
    assert!(fut.wait_timeout(BOUND));
    assert!(outcome(fut).unwrap_err().is_cancelled());
    assert!(pool.await_termination(BOUND));
    clock.advance(sec(5));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn task_calls_shutdown_now() {
    let (_clock, pool) = manual_pool(1);
    let queued: Vec<_> = (0..3)
        .map(|i| pool.schedule(sec(60 + i), move || i).unwrap())
        .collect();
    let p = pool.clone();
    let fut = pool
        .submit(move || {
            let pending = p.shutdown_now();
            pending.len()
        })
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(outcome(fut).unwrap(), 3);
    for f in queued {
        assert!(
            outcome(f).unwrap_err().is_cancelled(),
            "dropped PendingTask"
        );
    }
    assert!(pool.await_termination(BOUND));
}

#[test]
fn task_runs_pending_tasks_from_shutdown_now() {
    let (_clock, pool) = manual_pool(1);
    let queued = pool.schedule(sec(60), || 8).unwrap();
    let p = pool.clone();
    let fut = pool
        .submit(move || {
            for task in p.shutdown_now() {
                task.run();
            }
        })
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(outcome(queued).unwrap(), 8);
    assert!(pool.await_termination(BOUND));
}

#[test]
fn task_calls_close_which_returns_at_once() {
    let (_clock, pool, stopped) = counted_pool(2);
    let p = pool.clone();
    let fut = pool
        .submit(move || {
            p.close();
            p.is_shutdown()
        })
        .unwrap();
    assert!(fut.wait_timeout(BOUND), "close from a worker deadlocked");
    assert!(outcome(fut).unwrap());
    assert!(pool.await_termination(BOUND));
    assert!(pool.is_terminated());
    assert_eq!(stopped.load(Ordering::SeqCst), 1);
}

#[test]
fn task_waits_for_a_task_on_another_worker() {
    let (_clock, pool) = manual_pool(2);
    assert_eq!(pool.prestart_all_core_threads(), 2);
    let p = pool.clone();
    let fut = pool
        .submit(move || {
            let inner = p.submit(|| 21).unwrap();
            inner.wait_timeout(BOUND).then(|| inner.get().unwrap() * 2)
        })
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(outcome(fut).unwrap(), Some(42));
    close(&pool);
}

#[test]
fn task_reads_stats_and_queue_len() {
    let (_clock, pool) = manual_pool(1);
    let p = pool.clone();
    let _later = pool.schedule(sec(60), || ()).unwrap();
    let fut = pool
        .submit(move || (p.queue_len(), p.stats().active_count, p.purge()))
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(outcome(fut).unwrap(), (1, 1, 0));
    drop(pool.shutdown_now());
    assert!(pool.await_termination(BOUND));
}

/// Runs `f` when dropped.
struct OnDrop<F: FnMut()>(F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

#[test]
fn closure_whose_drop_cancels_another_task_can_be_cancelled() {
    let (_clock, pool) = manual_pool(1);
    let other = pool.schedule(sec(60), || ()).unwrap();
    let handle = other.cancel_handle();
    let result = Arc::new(Mutex::new(None));
    let r = result.clone();
    let guard = OnDrop(move || *r.lock().unwrap() = Some(handle.cancel()));
    let fut = pool
        .schedule(sec(60), move || {
            let _keep = &guard;
        })
        .unwrap();
    assert!(fut.cancel());
    assert_eq!(*result.lock().unwrap(), Some(true));
    assert!(other.is_cancelled());
    assert_eq!(pool.queue_len(), 0);
    close(&pool);
}

#[test]
fn closure_whose_drop_schedules_is_dropped_by_shutdown() {
    let (_clock, pool) = manual_pool(1);
    let p = pool.clone();
    let result = Arc::new(Mutex::new(None));
    let r = result.clone();
    let guard = OnDrop(move || {
        *r.lock().unwrap() = Some(p.schedule(sec(1), || ()).map(|_| ()));
    });
    let fut = pool
        .schedule_at_fixed_rate(sec(60), sec(1), move || {
            let _keep = &guard;
        })
        .unwrap();
    pool.shutdown(); // periodic tasks are cancelled at shutdown; the drop runs here
    assert!(fut.is_cancelled());
    assert_eq!(
        *result.lock().unwrap(),
        Some(Err(schedpool::ScheduleError::Shutdown))
    );
    assert!(pool.await_termination(BOUND));
}

#[test]
fn closure_whose_drop_schedules_is_dropped_with_its_pending_task() {
    let (_clock, pool) = manual_pool(1);
    let p = pool.clone();
    let result = Arc::new(Mutex::new(None));
    let r = result.clone();
    let guard = OnDrop(move || {
        *r.lock().unwrap() = Some(p.submit(|| ()).map(|_| ()));
    });
    let fut = pool
        .schedule(sec(60), move || {
            let _keep = &guard;
        })
        .unwrap();
    let pending = pool.shutdown_now();
    assert_eq!(pending.len(), 1);
    drop(pending);
    assert!(outcome(fut).unwrap_err().is_cancelled());
    assert_eq!(
        *result.lock().unwrap(),
        Some(Err(schedpool::ScheduleError::Shutdown))
    );
    assert!(pool.await_termination(BOUND));
}
