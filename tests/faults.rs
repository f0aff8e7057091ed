//! Faults: tasks that panic (one-shot and periodic), panic payloads and closures whose
//! `Drop` panics, thread hooks that panic or shut the pool down, a task that blocks for a
//! long time while others are due, tasks and destructors that call `close` or
//! `shutdown_now` on their own pool, and thread-spawn failure. In each case the pool keeps
//! its guarantees or fails with a clear error, and never hangs: every wait here is bounded.
//!
//! Order and "has not run yet" are checked on a `ManualClock` or against a task that the
//! test itself holds blocked; real-time waits have a generous bound and assert no speed.

use std::panic::{catch_unwind, panic_any, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use schedpool::{
    ManualClock, Periodic, RejectionPolicy, ScheduleError, ScheduledFuture,
    ScheduledThreadPoolExecutor,
};

mod common;
use common::{
    bump, counter, is_cancelled, load, sec, shutdown_now_and_wait, wait_until, DropCount, Gate,
    BOUND,
};

/// `common::manual_pool`, with the workers named `faults-N`.
fn manual_pool(core: usize) -> (ManualClock, ScheduledThreadPoolExecutor) {
    common::manual_pool_named(core, "faults-")
}

/// Runs `f` on another thread and waits for it at most `BOUND`: a deadlock fails the test
/// instead of hanging it.
fn within_bound<R: Send + 'static>(what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(BOUND)
        .unwrap_or_else(|_| panic!("{what} did not return within {BOUND:?}"))
}

/// Counts its drops, then panics: a closure capturing it panics while being dropped.
struct PanicOnDrop(Arc<AtomicUsize>);

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("closure drop");
    }
}

/// Submits a task that reports its start on the returned receiver, then waits on `gate`.
fn block_a_worker(
    pool: &ScheduledThreadPoolExecutor,
    gate: &Gate,
) -> (ScheduledFuture<()>, mpsc::Receiver<()>) {
    let (started_tx, started) = mpsc::channel();
    let gate = gate.clone();
    let fut = pool
        .submit(move || {
            started_tx.send(()).unwrap();
            gate.wait();
        })
        .unwrap();
    (fut, started)
}

// ---------------------------------------------------------------------------------------
// Panicking tasks

#[test]
fn many_panicking_one_shots_leave_every_worker_alive() {
    let starts = counter();
    let s = starts.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .on_thread_start(move || {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    let futs: Vec<_> = (0..100)
        .map(|i| {
            pool.submit(move || {
                if i % 2 == 0 {
                    panic!("task {i}");
                }
                i
            })
            .unwrap()
        })
        .collect();
    for (i, fut) in futs.into_iter().enumerate() {
        match fut.get() {
            Ok(v) => assert_eq!(v, i, "odd tasks succeed"),
            Err(e) => {
                assert_eq!(i % 2, 0, "only even tasks panic");
                assert_eq!(e.panic_message(), Some(format!("task {i}").as_str()));
            }
        }
    }
    pool.close();
    let stats = pool.stats();
    assert_eq!(stats.panicked_count, 50);
    assert_eq!(stats.completed_task_count, 100);
    assert_eq!(stats.largest_pool_size, 2);
    assert_eq!(load(&starts), 2, "no worker died and had to be replaced");
}

#[test]
fn a_panicking_periodic_task_stops_alone() {
    let (clock, pool) = manual_pool(1);
    let bad_runs = counter();
    let b = bad_runs.clone();
    let bad = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            if b.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                panic!("third run");
            }
        })
        .unwrap();
    let good_runs = counter();
    let good = pool
        .schedule_with_fixed_delay(sec(1), sec(1), bump(&good_runs))
        .unwrap();
    for _ in 0..5 {
        clock.advance(sec(1));
        assert!(pool.wait_idle(BOUND));
    }
    assert_eq!(load(&bad_runs), 3, "no run after the panic");
    assert_eq!(load(&good_runs), 5, "the other task goes on");
    assert!(bad.is_done() && !bad.is_cancelled());
    assert!(!good.is_done());
    assert_eq!(bad.get().unwrap_err().panic_message(), Some("third run"));
    assert_eq!(pool.stats().panicked_count, 1);
    assert!(good.cancel());
    shutdown_now_and_wait(&pool);
}

/// A panic payload that panics again when it is dropped.
struct PanickyPayload;

impl Drop for PanickyPayload {
    fn drop(&mut self) {
        panic!("payload drop");
    }
}

#[test]
fn a_panic_payload_whose_drop_panics_is_contained() {
    let (clock, pool) = manual_pool(1);
    // `execute` has no future: the worker itself drops the stored payload.
    pool.execute(|| panic_any(PanickyPayload)).unwrap();
    // A future dropped before the run leaves the payload to the worker too.
    drop(
        pool.schedule(sec(1), || -> u8 { panic_any(PanickyPayload) })
            .unwrap(),
    );
    clock.advance(sec(1));
    assert!(pool.wait_idle(BOUND));
    assert_eq!(pool.submit(|| "alive").unwrap().get().unwrap(), "alive");
    assert!(
        pool.wait_idle(BOUND),
        "counters are settled once the pool is idle"
    );
    let stats = pool.stats();
    assert_eq!((stats.panicked_count, stats.completed_task_count), (2, 3));
    assert_eq!(stats.pool_size, 1);
    shutdown_now_and_wait(&pool);
}

// ---------------------------------------------------------------------------------------
// Closures whose Drop panics

#[test]
fn a_closure_whose_drop_panics_after_its_run_is_contained() {
    let (clock, pool) = manual_pool(1);
    let drops = counter();
    let guard = PanicOnDrop(drops.clone());
    let once = pool
        .submit(move || {
            let _keep = &guard;
            5
        })
        .unwrap();
    // The run finished, but dropping the closure panicked: either outcome is defined, as
    // long as the future completes and the panic goes nowhere else.
    match once.get() {
        Ok(v) => assert_eq!(v, 5),
        Err(e) => assert_eq!(e.panic_message(), Some("closure drop")),
    }
    assert_eq!(load(&drops), 1);

    let guard = PanicOnDrop(drops.clone());
    let runs = counter();
    let r = runs.clone();
    let periodic = pool
        .schedule_periodic(Periodic::at_fixed_rate(sec(1)).max_runs(2), move || {
            let _keep = &guard;
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    clock.advance(sec(1));
    assert!(periodic.wait_timeout(BOUND));
    assert_eq!(load(&runs), 2);
    assert!(
        periodic.get().is_ok(),
        "max_runs reached: Ok, the drop panic is contained"
    );
    // The closure may be dropped just after the future completes.
    assert!(wait_until(|| load(&drops) == 2));
    assert_eq!(pool.submit(|| "alive").unwrap().get().unwrap(), "alive");
    shutdown_now_and_wait(&pool);
}

#[test]
fn cancelling_closures_whose_drop_panics_does_not_unwind() {
    for remove_on_cancel in [true, false] {
        let clock = ManualClock::new();
        let pool = ScheduledThreadPoolExecutor::builder()
            .core_pool_size(1)
            .clock(clock.clone())
            .remove_on_cancel(remove_on_cancel)
            .build();
        let drops = counter();
        let g1 = PanicOnDrop(drops.clone());
        let once = pool
            .schedule(sec(1), move || {
                let _keep = &g1;
            })
            .unwrap();
        let g2 = PanicOnDrop(drops.clone());
        let periodic = pool
            .schedule_at_fixed_rate(sec(1), sec(1), move || {
                let _keep = &g2;
            })
            .unwrap();
        let g3 = PanicOnDrop(drops.clone());
        let by_handle = pool
            .schedule_with_fixed_delay(sec(1), sec(1), move || {
                let _keep = &g3;
            })
            .unwrap()
            .cancel_handle();
        assert!(catch_unwind(AssertUnwindSafe(|| once.cancel())).expect("cancel unwound"));
        assert!(catch_unwind(AssertUnwindSafe(|| periodic.cancel())).expect("cancel unwound"));
        assert!(catch_unwind(AssertUnwindSafe(|| by_handle.cancel())).expect("cancel unwound"));
        assert_eq!(load(&drops), 3, "remove_on_cancel {remove_on_cancel}");
        assert!(by_handle.is_cancelled());
        let expected_left = if remove_on_cancel { 0 } else { 3 };
        assert_eq!(pool.purge(), expected_left);
        clock.advance(sec(5));
        assert!(pool.wait_idle(BOUND));
        assert!(is_cancelled(once) && is_cancelled(periodic));
        assert_eq!(pool.stats().completed_task_count, 0);
        shutdown_now_and_wait(&pool);
    }
}

#[test]
fn shutdown_dropping_closures_whose_drop_panics_does_not_unwind() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock)
        .execute_existing_delayed_tasks_after_shutdown(false)
        .build();
    let drops = counter();
    let g1 = PanicOnDrop(drops.clone());
    let periodic = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            let _keep = &g1;
        })
        .unwrap();
    let g2 = PanicOnDrop(drops.clone());
    let delayed = pool
        .schedule(sec(1), move || {
            let _keep = &g2;
        })
        .unwrap();
    catch_unwind(AssertUnwindSafe(|| pool.shutdown())).expect("shutdown unwound");
    assert_eq!(load(&drops), 2);
    assert!(is_cancelled(periodic) && is_cancelled(delayed));
    assert!(pool.await_termination(BOUND));
}

#[test]
fn pending_tasks_whose_closures_panic_on_drop_can_be_run_or_dropped() {
    let (_clock, pool) = manual_pool(1);
    let drops = counter();
    let futs: Vec<ScheduledFuture<()>> = (0..3)
        .map(|i| {
            let guard = PanicOnDrop(drops.clone());
            if i == 2 {
                pool.schedule_at_fixed_rate(sec(3), sec(1), move || {
                    let _keep = &guard;
                })
            } else {
                pool.schedule(sec(1 + i), move || {
                    let _keep = &guard;
                })
            }
            .unwrap()
        })
        .collect();
    let mut pending = pool.shutdown_now();
    assert_eq!(pending.len(), 3);
    let periodic = pending.pop().unwrap();
    assert!(periodic.is_periodic());
    let ran = pending.pop().unwrap();
    let dropped = pending.pop().unwrap();
    catch_unwind(AssertUnwindSafe(|| drop(dropped))).expect("dropping a PendingTask unwound");
    catch_unwind(AssertUnwindSafe(|| ran.run())).expect("PendingTask::run unwound");
    catch_unwind(AssertUnwindSafe(|| periodic.run())).expect("PendingTask::run unwound");
    assert_eq!(load(&drops), 3);
    let mut futs = futs.into_iter();
    assert!(is_cancelled(futs.next().unwrap()), "the dropped one");
    match futs.next().unwrap().get() {
        Ok(()) => {}
        Err(e) => assert_eq!(e.panic_message(), Some("closure drop")),
    }
    assert!(
        is_cancelled(futs.next().unwrap()),
        "a periodic pending task runs once, then is cancelled"
    );
    assert!(pool.await_termination(BOUND));
}

#[test]
fn discarding_a_closure_whose_drop_panics_does_not_unwind() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .max_queued_tasks(0)
        .rejection_policy(RejectionPolicy::Discard)
        .build();
    let drops = counter();
    let guard = PanicOnDrop(drops.clone());
    let fut = catch_unwind(AssertUnwindSafe(|| {
        pool.schedule(sec(1), move || {
            let _keep = &guard;
        })
    }))
    .expect("a discarded submission unwound")
    .unwrap();
    assert_eq!(load(&drops), 1);
    assert!(fut.is_cancelled());
    pool.close();
}

/// Submits a closure whose drop panics to `pool`, which must refuse it with `expected`.
/// The refused closure is dropped on the caller's thread with its panic contained: the
/// caller gets the error, not the unwind.
fn refuse_a_panicking_closure(pool: &ScheduledThreadPoolExecutor, expected: ScheduleError) {
    let drops = counter();
    let guard = PanicOnDrop(drops.clone());
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        pool.schedule(sec(1), move || {
            let _keep = &guard;
        })
        .map(|_| ())
    }));
    assert_eq!(
        outcome.ok(),
        Some(Err(expected)),
        "the Drop's panic is contained"
    );
    assert_eq!(load(&drops), 1, "dropped exactly once");
    let stats = pool.stats();
    assert_eq!((stats.rejected_count, stats.task_count), (1, 0));
    assert_eq!(pool.queue_len(), 0);
}

#[test]
fn a_refused_closure_whose_drop_panics_leaves_the_pool_consistent() {
    let full = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .max_queued_tasks(0)
        .build();
    refuse_a_panicking_closure(&full, ScheduleError::QueueFull);
    assert_eq!(full.submit(|| ()).unwrap_err(), ScheduleError::QueueFull);
    full.close();

    let (_clock, pool) = manual_pool(1);
    pool.shutdown();
    refuse_a_panicking_closure(&pool, ScheduleError::Shutdown);
    assert!(pool.await_termination(BOUND));
}

// ---------------------------------------------------------------------------------------
// Thread hooks

#[test]
fn panicking_thread_hooks_do_not_stop_the_pool() {
    let starts = counter();
    let stops = counter();
    let (s, t) = (starts.clone(), stops.clone());
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(3)
        .on_thread_start(move || {
            s.fetch_add(1, Ordering::SeqCst);
            panic!("start hook");
        })
        .on_thread_stop(move || {
            t.fetch_add(1, Ordering::SeqCst);
            panic!("stop hook");
        })
        .build();
    let arrived = counter();
    let futs: Vec<_> = (0..3)
        .map(|_| {
            let arrived = arrived.clone();
            pool.submit(move || {
                arrived.fetch_add(1, Ordering::SeqCst);
                wait_until(|| arrived.load(Ordering::SeqCst) == 3)
            })
            .unwrap()
        })
        .collect();
    assert!(
        futs.into_iter().all(|f| f.get().unwrap()),
        "three workers ran at once"
    );
    let more: Vec<_> = (0..10).map(|i| pool.submit(move || i).unwrap()).collect();
    let sum: i32 = more.into_iter().map(|f| f.get().unwrap()).sum();
    assert_eq!(sum, 45);
    assert_eq!(load(&starts), 3);
    pool.shutdown();
    assert!(pool.await_termination(BOUND));
    assert_eq!(load(&stops), 3, "every stop hook ran, panicking or not");
    assert_eq!(pool.stats().completed_task_count, 13);
}

/// A pool handle a hook can reach; the test empties it at the end to break the cycle
/// (pool -> hook -> handle -> pool).
type Slot = Arc<Mutex<Option<ScheduledThreadPoolExecutor>>>;

#[test]
fn a_start_hook_that_calls_shutdown_now_cancels_the_task_that_started_it() {
    let slot: Slot = Arc::default();
    let s = slot.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .on_thread_start(move || {
            let pool = s.lock().unwrap().clone();
            if let Some(pool) = pool {
                drop(pool.shutdown_now());
            }
        })
        .build();
    *slot.lock().unwrap() = Some(pool.clone());
    let ran = counter();
    let r = ran.clone();
    let fut = pool
        .submit(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert!(
        is_cancelled(fut),
        "the hook ran before the first task and dropped it"
    );
    assert!(pool.await_termination(BOUND));
    assert_eq!(load(&ran), 0);
    slot.lock().unwrap().take();
}

#[test]
fn a_stop_hook_that_calls_close_does_not_deadlock() {
    let slot: Slot = Arc::default();
    let s = slot.clone();
    let stops = counter();
    let t = stops.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .on_thread_stop(move || {
            let pool = s.lock().unwrap().clone();
            if let Some(pool) = pool {
                pool.close(); // on a worker: shuts down and returns at once
            }
            t.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    *slot.lock().unwrap() = Some(pool.clone());
    let futs: Vec<_> = (0..4).map(|i| pool.submit(move || i).unwrap()).collect();
    assert_eq!(futs.into_iter().map(|f| f.get().unwrap()).sum::<i32>(), 6);
    let p = pool.clone();
    within_bound("close", move || p.close());
    assert!(pool.is_terminated());
    assert_eq!(load(&stops), 2);
    slot.lock().unwrap().take();
}

/// A start hook that blocks (until a gate opens) holds up only its own worker: the other
/// worker starts, runs every task, and the blocked one joins once its hook returns.
#[test]
fn a_start_hook_that_blocks_holds_up_only_its_own_worker() {
    let gate = Gate::default();
    let g = gate.clone();
    let first = Arc::new(AtomicBool::new(true));
    let blocked = counter();
    let b = blocked.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .on_thread_start(move || {
            if first.swap(false, Ordering::SeqCst) {
                b.fetch_add(1, Ordering::SeqCst);
                g.wait();
            }
        })
        .build();
    // The first submission starts the worker whose hook blocks, the second another one.
    let futs: Vec<_> = (0..10).map(|i| pool.submit(move || i).unwrap()).collect();
    assert!(wait_until(|| load(&blocked) == 1));
    assert_eq!(
        futs.into_iter().map(|f| f.get().unwrap()).sum::<i32>(),
        45,
        "the other worker ran them all"
    );
    gate.open();
    let both = counter();
    let arrived: Vec<_> = (0..2)
        .map(|_| {
            let both = both.clone();
            pool.submit(move || {
                both.fetch_add(1, Ordering::SeqCst);
                wait_until(|| load(&both) == 2)
            })
            .unwrap()
        })
        .collect();
    assert!(
        arrived.into_iter().all(|f| f.get().unwrap()),
        "the worker whose hook blocked runs tasks once it returned"
    );
    pool.shutdown();
    assert!(pool.await_termination(BOUND));
}

/// A stop hook that blocks delays termination until it returns (termination means every
/// worker has ended, hooks included) and holds up nothing else: `shutdown` returns, the
/// other worker exits.
#[test]
fn a_stop_hook_that_blocks_delays_termination_only() {
    let gate = Gate::default();
    let g = gate.clone();
    let first = Arc::new(AtomicBool::new(true));
    let stops = counter();
    let t = stops.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .on_thread_stop(move || {
            if first.swap(false, Ordering::SeqCst) {
                g.wait();
            }
            t.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    let futs: Vec<_> = (0..4).map(|i| pool.submit(move || i).unwrap()).collect();
    assert_eq!(futs.into_iter().map(|f| f.get().unwrap()).sum::<i32>(), 6);
    let p = pool.clone();
    within_bound("shutdown", move || p.shutdown());
    assert!(wait_until(|| load(&stops) == 1), "the other worker exited");
    assert!(
        !pool.await_termination(Duration::from_millis(20)),
        "not terminated while a stop hook runs"
    );
    gate.open();
    assert!(pool.await_termination(BOUND));
    assert_eq!(load(&stops), 2);
}

/// Hooks that call back into the pool (read it, submit to it) run with no lock of the pool
/// held: the start hook's task runs, the stop hooks' reads return.
#[test]
fn hooks_that_call_the_pool_do_not_deadlock() {
    let slot: Slot = Arc::default();
    let (s1, s2) = (slot.clone(), slot.clone());
    let submitted: Arc<Mutex<Vec<schedpool::ScheduledFuture<u32>>>> = Arc::default();
    let sub = submitted.clone();
    let stops = counter();
    let t = stops.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .on_thread_start(move || {
            let pool = s1.lock().unwrap().clone();
            if let Some(pool) = pool {
                let _ = pool.queue_len();
                let _ = pool.scheduled_tasks();
                sub.lock().unwrap().push(pool.submit(|| 7).unwrap());
            }
        })
        .on_thread_stop(move || {
            let pool = s2.lock().unwrap().clone();
            if let Some(pool) = pool {
                let _ = pool.stats();
                let _ = pool.queue_len();
                let _ = pool.is_shutdown();
            }
            t.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    *slot.lock().unwrap() = Some(pool.clone());
    let futs: Vec<_> = (0..4).map(|i| pool.submit(move || i).unwrap()).collect();
    assert_eq!(futs.into_iter().map(|f| f.get().unwrap()).sum::<i32>(), 6);
    assert!(
        wait_until(|| submitted.lock().unwrap().len() == 2),
        "each worker's start hook submitted its task"
    );
    let from_hooks = std::mem::take(&mut *submitted.lock().unwrap());
    for f in from_hooks {
        assert!(f.wait_timeout(BOUND));
        assert_eq!(f.get().unwrap(), 7);
    }
    let p = pool.clone();
    within_bound("shutdown", move || p.shutdown());
    assert!(pool.await_termination(BOUND));
    assert_eq!(load(&stops), 2);
    slot.lock().unwrap().take();
}

// ---------------------------------------------------------------------------------------
// A task that blocks for a long time

#[test]
fn a_long_blocking_task_does_not_hold_up_due_tasks_on_other_workers() {
    let (clock, pool) = manual_pool(2);
    let gate = Gate::default();
    let (blocker, started) = block_a_worker(&pool, &gate);
    started.recv_timeout(BOUND).unwrap();
    let futs: Vec<_> = (1..=10)
        .map(|i| pool.schedule(sec(i), move || i).unwrap())
        .collect();
    let periodic_runs = counter();
    let periodic = pool
        .schedule_at_fixed_rate(sec(1), sec(1), bump(&periodic_runs))
        .unwrap();
    clock.advance(sec(10));
    for (i, fut) in (1..).zip(futs) {
        assert!(fut.wait_timeout(BOUND), "task {i} ran on the free worker");
        assert_eq!(fut.get().unwrap(), i);
    }
    assert!(wait_until(|| load(&periodic_runs) == 10));
    assert!(!blocker.is_done(), "the blocker is still blocked");
    gate.open();
    blocker.get().unwrap();
    assert!(pool.wait_idle(BOUND));
    assert_eq!(load(&periodic_runs), 10);
    assert!(periodic.cancel());
    shutdown_now_and_wait(&pool);
}

#[test]
fn on_one_worker_a_blocking_task_delays_due_tasks_but_loses_none() {
    let (clock, pool) = manual_pool(1);
    let gate = Gate::default();
    let (blocker, started) = block_a_worker(&pool, &gate);
    started.recv_timeout(BOUND).unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let futs: Vec<_> = [3u64, 1, 5, 2, 4]
        .into_iter()
        .map(|s| {
            let order = order.clone();
            pool.schedule(sec(s), move || order.lock().unwrap().push(s))
                .unwrap()
        })
        .collect();
    clock.advance(sec(10));
    // The only worker is blocked, so nothing else can have run.
    assert_eq!(pool.stats().pool_size, 1);
    assert!(order.lock().unwrap().is_empty());
    assert!(!pool.wait_idle(Duration::from_millis(20)), "due tasks wait");
    gate.open();
    blocker.get().unwrap();
    assert!(pool.wait_idle(BOUND));
    assert_eq!(*order.lock().unwrap(), [1, 2, 3, 4, 5], "deadline order");
    assert!(futs.into_iter().all(|f| f.get().is_ok()));
    shutdown_now_and_wait(&pool);
}

#[test]
fn a_long_periodic_run_never_overlaps_the_next_and_catches_up_after() {
    let (clock, pool) = manual_pool(2);
    let gate = Gate::default();
    let (started_tx, started) = mpsc::channel();
    let in_run = Arc::new(AtomicBool::new(false));
    let overlaps = counter();
    let runs = counter();
    let (g, ir, ov, r) = (gate.clone(), in_run.clone(), overlaps.clone(), runs.clone());
    let rate = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            if ir.swap(true, Ordering::SeqCst) {
                ov.fetch_add(1, Ordering::SeqCst);
            }
            if r.fetch_add(1, Ordering::SeqCst) == 0 {
                started_tx.send(()).unwrap();
                g.wait();
            }
            ir.store(false, Ordering::SeqCst);
        })
        .unwrap();
    clock.advance(sec(1));
    started.recv_timeout(BOUND).unwrap();
    clock.advance(sec(4)); // ticks 2..=5 fall due while run 1 blocks
    assert_eq!(
        load(&runs),
        1,
        "the free worker must not start a second run"
    );
    gate.open();
    assert!(pool.wait_idle(BOUND));
    assert_eq!(
        load(&runs),
        5,
        "fixed rate: the missed ticks run back to back"
    );
    assert_eq!(load(&overlaps), 0);
    assert!(rate.cancel());
    shutdown_now_and_wait(&pool);
}

#[test]
fn a_blocked_task_does_not_block_shutdown_now_and_termination_follows_it() {
    let (_clock, pool) = manual_pool(1);
    let gate = Gate::default();
    let (blocker, started) = block_a_worker(&pool, &gate);
    started.recv_timeout(BOUND).unwrap();
    let queued: Vec<_> = (0..3).map(|i| pool.submit(move || i).unwrap()).collect();
    let p = pool.clone();
    let pending = within_bound("shutdown_now", move || p.shutdown_now().len());
    assert_eq!(
        pending, 3,
        "the queued tasks come back; the running one stays"
    );
    assert!(queued.into_iter().all(is_cancelled));
    assert!(!pool.is_terminated(), "the blocked worker is still running");
    gate.open();
    assert!(pool.await_termination(BOUND));
    assert!(blocker.get().is_ok(), "the run in progress completed");
}

// ---------------------------------------------------------------------------------------
// A task (or a destructor) that closes its own pool

#[test]
fn a_task_that_calls_close_on_its_own_pool_returns_and_the_pool_drains() {
    let (clock, pool) = manual_pool(2);
    let later = pool
        .schedule(sec(5), || "kept by the default policy")
        .unwrap();
    let p = pool.clone();
    let closer = pool
        .submit(move || {
            p.close();
            p.is_shutdown()
        })
        .unwrap();
    assert!(
        closer.wait_timeout(BOUND),
        "close inside a task returns at once"
    );
    assert!(closer.get().unwrap());
    assert!(!pool.is_terminated(), "a delayed task is still queued");
    clock.advance(sec(5));
    assert_eq!(later.get().unwrap(), "kept by the default policy");
    assert!(pool.await_termination(BOUND));
}

#[test]
fn a_task_that_calls_shutdown_now_on_its_own_pool_gets_the_queue() {
    let (clock, pool) = manual_pool(1);
    let drops = counter();
    let ran = counter();
    let queued: Vec<_> = (0..4)
        .map(|i| {
            let (d, r) = (DropCount(drops.clone()), ran.clone());
            pool.schedule(sec(10 + i), move || {
                let _keep = &d;
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap()
        })
        .collect();
    let p = pool.clone();
    let stopper = pool
        .schedule(sec(1), move || {
            let mut pending = p.shutdown_now();
            let n = pending.len();
            pending.remove(0).run(); // run the earliest here, drop the rest
            n
        })
        .unwrap();
    clock.advance(sec(1));
    assert_eq!(stopper.get().unwrap(), 4);
    assert!(pool.await_termination(BOUND));
    assert_eq!((load(&ran), load(&drops)), (1, 4));
    let outcomes: Vec<bool> = queued.into_iter().map(|f| f.get().is_ok()).collect();
    assert_eq!(outcomes, [true, false, false, false]);
}

#[test]
fn a_periodic_task_that_closes_its_own_pool_is_not_run_again() {
    let (clock, pool) = manual_pool(1);
    let runs = counter();
    let (p, r) = (pool.clone(), runs.clone());
    let periodic = pool
        .schedule_with_fixed_delay(sec(1), sec(1), move || {
            if r.fetch_add(1, Ordering::SeqCst) + 1 == 2 {
                p.close();
            }
        })
        .unwrap();
    for _ in 0..4 {
        clock.advance(sec(1));
        assert!(pool.wait_idle(BOUND));
    }
    assert_eq!(load(&runs), 2);
    assert!(is_cancelled(periodic));
    assert!(pool.await_termination(BOUND));
}

/// Calls `close` on the pool it holds when dropped.
struct CloseOnDrop(Option<ScheduledThreadPoolExecutor>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if let Some(pool) = self.0.take() {
            pool.close();
        }
    }
}

#[test]
fn a_closure_that_closes_its_pool_when_dropped_by_cancel_does_not_deadlock() {
    let (_clock, pool) = manual_pool(1);
    let closer = CloseOnDrop(Some(pool.clone()));
    let fut = pool
        .schedule(sec(1), move || {
            let _keep = &closer;
        })
        .unwrap();
    assert!(within_bound("cancel", move || fut.cancel()));
    assert!(
        pool.is_terminated(),
        "close ran inside cancel and waited for termination"
    );
}

/// Calls `shutdown_now` on the pool it holds when dropped.
struct ShutdownNowOnDrop(Option<ScheduledThreadPoolExecutor>, Arc<AtomicUsize>);

impl Drop for ShutdownNowOnDrop {
    fn drop(&mut self) {
        if let Some(pool) = self.0.take() {
            self.1
                .fetch_add(pool.shutdown_now().len(), Ordering::SeqCst);
        }
    }
}

#[test]
fn a_closure_that_calls_shutdown_now_when_dropped_by_shutdown_does_not_deadlock() {
    let (_clock, pool) = manual_pool(1);
    let handed = counter();
    let guard = ShutdownNowOnDrop(Some(pool.clone()), handed.clone());
    let periodic = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            let _keep = &guard;
        })
        .unwrap();
    let delayed = pool.schedule(sec(2), || "handed out").unwrap();
    let p = pool.clone();
    within_bound("shutdown", move || p.shutdown());
    assert!(is_cancelled(periodic));
    assert_eq!(
        load(&handed),
        1,
        "the delayed task came back from shutdown_now"
    );
    assert!(is_cancelled(delayed), "and was dropped");
    assert!(pool.await_termination(BOUND));
}

// ---------------------------------------------------------------------------------------
// Thread-spawn failure

#[test]
fn thread_spawn_failure_is_a_clear_error_and_nothing_leaks() {
    for stack in [usize::MAX, 1 << 44] {
        let pool = ScheduledThreadPoolExecutor::builder()
            .core_pool_size(2)
            .thread_stack_size(stack)
            .build();
        let drops = counter();
        let d = || DropCount(drops.clone());
        let (d1, d2, d3, d4, d5) = (d(), d(), d(), d(), d());
        let errors = [
            pool.schedule(sec(1), move || drop(d1)).map(|_| ()),
            pool.submit(move || drop(d2)).map(|_| ()),
            pool.execute(move || drop(d3)),
            pool.schedule_at_fixed_rate(sec(1), sec(1), move || {
                let _keep = &d4;
            })
            .map(|_| ()),
            pool.schedule_with_fixed_delay(Duration::ZERO, sec(1), move || {
                let _keep = &d5;
            })
            .map(|_| ()),
        ];
        for e in errors {
            let Err(e @ ScheduleError::ThreadSpawn(_)) = e else {
                panic!("stack {stack:#x}: {e:?}");
            };
            assert!(!e.to_string().is_empty());
            // The operating system's error is the source, and two refusals compare equal.
            let io = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<std::io::Error>());
            assert!(io.is_some(), "stack {stack:#x}: {e:?}");
            assert_eq!(e.clone(), e);
        }
        assert_eq!(load(&drops), 5, "every refused closure was dropped");
        let stats = pool.stats();
        assert_eq!(
            (
                stats.task_count,
                stats.rejected_count,
                stats.queued,
                stats.pool_size
            ),
            (0, 5, 0, 0)
        );
        assert!(!pool.prestart_core_thread());
        assert_eq!(pool.prestart_all_core_threads(), 0);
        pool.set_core_pool_size(4);
        assert_eq!(pool.stats().pool_size, 0);
        let p = pool.clone();
        within_bound("close", move || p.close());
        assert!(pool.is_terminated());
    }
}

#[test]
fn thread_spawn_failure_after_a_caller_runs_periodic_run_ends_its_future() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .thread_stack_size(usize::MAX)
        .max_queued_tasks(0)
        .rejection_policy(RejectionPolicy::CallerRuns)
        .build();
    let runs = counter();
    let fut = pool
        .schedule_at_fixed_rate(Duration::ZERO, sec(1), bump(&runs))
        .unwrap();
    assert_eq!(load(&runs), 1, "ran once on the caller");
    // Its next run cannot get a thread: the future must still complete, not hang.
    assert!(fut.wait_timeout(BOUND));
    assert!(fut.is_done());
    let p = pool.clone();
    within_bound("close", move || p.close());
    assert!(pool.is_terminated());
}

// ---------------------------------------------------------------------------------------
// A tracing subscriber is user code too

/// Pools a subscriber calls back into on every span and event.
static WATCHED: Mutex<Vec<ScheduledThreadPoolExecutor>> = Mutex::new(Vec::new());
static CALLBACKS: AtomicUsize = AtomicUsize::new(0);

/// Calls into every watched pool: if the pool emitted the event while holding its queue
/// lock, this deadlocks.
fn call_back_into_the_pools() {
    let pools = WATCHED.lock().unwrap().clone();
    for pool in &pools {
        let _ = (pool.stats(), pool.queue_len(), pool.is_terminated());
    }
    if !pools.is_empty() {
        CALLBACKS.fetch_add(1, Ordering::SeqCst);
    }
}

/// A subscriber that sees everything `schedpool` emits and calls back into the pool.
struct CallingBack;

impl tracing::Subscriber for CallingBack {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        metadata.target() == "schedpool"
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        call_back_into_the_pools();
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, _: &tracing::Event<'_>) {
        call_back_into_the_pools();
    }

    fn enter(&self, _: &tracing::span::Id) {
        call_back_into_the_pools();
    }

    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn a_tracing_subscriber_that_calls_back_into_the_pool_does_not_deadlock() {
    // Global: workers are other threads. Other tests in this binary then emit to it too,
    // which only calls into the pools this test watches.
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| tracing::subscriber::set_global_default(CallingBack).unwrap());

    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .clock(clock.clone())
        .max_queued_tasks(3)
        .late_threshold(Duration::ZERO)
        .on_thread_start(|| panic!("start hook"))
        .build();
    let no_threads = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .thread_stack_size(usize::MAX)
        .build();
    WATCHED
        .lock()
        .unwrap()
        .extend([pool.clone(), no_threads.clone()]);
    let before = CALLBACKS.load(Ordering::SeqCst);
    let (p, c, n) = (pool.clone(), clock.clone(), no_threads.clone());
    let outcome = within_bound("the traced scenario", move || {
        // Task spans, a late run (warn), a panic (error), hooks that panic (error), worker
        // start and exit (debug), a refusal (warn), a spawn failure (error), shutdown and
        // termination (info).
        let late = p.schedule(sec(1), || 1).unwrap();
        let periodic = p.schedule_at_fixed_rate(sec(1), sec(1), || ()).unwrap();
        let panicking = p
            .schedule(sec(1), || -> u8 { panic!("traced panic") })
            .unwrap();
        c.advance(sec(3));
        assert!(p.wait_idle(BOUND));
        for _ in 0..3 {
            let _ = p.schedule(sec(10), || 0);
        }
        let refused = p.schedule(sec(10), || 0).map(|_| ());
        let spawn = n.submit(|| ()).map(|_| ());
        assert!(periodic.cancel());
        close_after(&p, &c);
        n.close();
        (late.get().ok(), panicking.get().is_err(), refused, spawn)
    });
    let (late, panicked, refused, spawn) = outcome;
    assert_eq!(
        (late, panicked, refused),
        (Some(1), true, Err(ScheduleError::QueueFull))
    );
    assert!(
        matches!(spawn, Err(ScheduleError::ThreadSpawn(_))),
        "{spawn:?}"
    );
    WATCHED.lock().unwrap().clear();
    assert!(
        CALLBACKS.load(Ordering::SeqCst) > before,
        "the subscriber saw the pool's spans and events"
    );
    assert!(pool.is_terminated() && no_threads.is_terminated());
}

/// `close` for a pool on a manual clock that may still hold delayed tasks: lets them run.
fn close_after(pool: &ScheduledThreadPoolExecutor, clock: &ManualClock) {
    pool.shutdown();
    clock.advance(sec(3600));
    pool.close();
}
