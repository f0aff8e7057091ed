//! Shutdown: rejection after shutdown, the run-after-shutdown policies, `shutdown_now` and
//! its `PendingTask`s, the lifecycle flags, `await_termination`, `close`, dropping the last
//! handle, and submissions racing a shutdown.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use schedpool::{
    ManualClock, PendingTask, ScheduleError, ScheduledFuture, ScheduledThreadPoolExecutor,
    TaskError,
};

mod common;
use common::{bump, counter, is_cancelled, load, manual_pool, sec, wait_until, Gate, BOUND};

/// Submits a task that signals `started` and then blocks on `gate`.
fn block_a_worker(
    pool: &ScheduledThreadPoolExecutor,
    gate: &Gate,
    started: &Arc<AtomicUsize>,
) -> ScheduledFuture<()> {
    let (gate, started) = (gate.clone(), started.clone());
    pool.submit(move || {
        started.fetch_add(1, Ordering::SeqCst);
        gate.wait();
    })
    .unwrap()
}

/// A pool of `core` workers on a fresh virtual clock whose thread hooks count the
/// threads started and stopped.
fn hooked_pool(
    core: usize,
) -> (
    ManualClock,
    ScheduledThreadPoolExecutor,
    Arc<AtomicUsize>,
    Arc<AtomicUsize>,
) {
    let clock = ManualClock::new();
    let (starts, stops) = (counter(), counter());
    let (a, b) = (starts.clone(), stops.clone());
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(core)
        .clock(clock.clone())
        .on_thread_start(move || {
            a.fetch_add(1, Ordering::SeqCst);
        })
        .on_thread_stop(move || {
            b.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    (clock, pool, starts, stops)
}

#[test]
fn submissions_after_shutdown_are_rejected_and_counted() {
    let (clock, pool) = manual_pool(1);
    pool.shutdown();
    let ran = counter();
    let r = ran.clone();
    assert_eq!(
        pool.schedule(sec(1), move || r.fetch_add(1, Ordering::SeqCst))
            .unwrap_err(),
        ScheduleError::Shutdown
    );
    let r = ran.clone();
    assert_eq!(
        pool.schedule_at(clock.now(), move || r.fetch_add(1, Ordering::SeqCst))
            .unwrap_err(),
        ScheduleError::Shutdown
    );
    let r = ran.clone();
    assert_eq!(
        pool.schedule_at_fixed_rate(sec(1), sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap_err(),
        ScheduleError::Shutdown
    );
    let r = ran.clone();
    assert_eq!(
        pool.schedule_with_fixed_delay(sec(1), sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap_err(),
        ScheduleError::Shutdown
    );
    let r = ran.clone();
    assert_eq!(
        pool.execute(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap_err(),
        ScheduleError::Shutdown
    );
    let r = ran.clone();
    assert_eq!(
        pool.submit(move || r.fetch_add(1, Ordering::SeqCst))
            .unwrap_err(),
        ScheduleError::Shutdown
    );
    // An argument error still wins over shutdown, and is not a refusal.
    assert_eq!(
        pool.schedule_at_fixed_rate(sec(1), Duration::ZERO, || ())
            .unwrap_err(),
        ScheduleError::ZeroPeriod
    );
    let stats = pool.stats();
    assert_eq!(stats.rejected_count, 6);
    assert_eq!(stats.task_count, 0);
    assert!(pool.await_termination(BOUND));
    assert_eq!(load(&ran), 0);
}

#[test]
fn submissions_after_shutdown_now_are_rejected_and_counted() {
    let (_clock, pool) = manual_pool(1);
    pool.schedule(sec(5), || ()).unwrap();
    drop(pool.shutdown_now());
    assert_eq!(pool.submit(|| ()).unwrap_err(), ScheduleError::Shutdown);
    assert_eq!(pool.execute(|| ()).unwrap_err(), ScheduleError::Shutdown);
    assert_eq!(
        pool.schedule_with_fixed_delay(Duration::ZERO, sec(1), || ())
            .unwrap_err(),
        ScheduleError::Shutdown
    );
    let stats = pool.stats();
    assert_eq!((stats.task_count, stats.rejected_count), (1, 3));
    assert!(pool.await_termination(BOUND));
}

#[test]
fn periodic_tasks_are_cancelled_at_shutdown_by_default() {
    let (clock, pool) = manual_pool(2);
    assert!(!pool.continue_existing_periodic_tasks_after_shutdown());
    let (rate_runs, delay_runs) = (counter(), counter());
    let r = rate_runs.clone();
    let rate = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let d = delay_runs.clone();
    let delay = pool
        .schedule_with_fixed_delay(sec(1), sec(1), move || {
            d.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    clock.advance(sec(1));
    assert!(wait_until(
        || load(&rate_runs) == 1 && load(&delay_runs) == 1
    ));

    pool.shutdown();
    // A run may still be finishing; its re-queue then cancels the task.
    assert!(rate.wait_timeout(BOUND) && delay.wait_timeout(BOUND));
    assert!(rate.is_cancelled() && delay.is_cancelled());
    assert!(pool.await_termination(BOUND));
    assert_eq!(pool.queue_len(), 0);
    clock.advance(sec(10));
    assert_eq!((load(&rate_runs), load(&delay_runs)), (1, 1));
    assert!(is_cancelled(rate) && is_cancelled(delay));
}

#[test]
fn queued_periodic_tasks_are_cancelled_by_shutdown_itself() {
    let (_clock, pool) = manual_pool(1);
    let rate = pool.schedule_at_fixed_rate(sec(5), sec(1), || ()).unwrap();
    let delay = pool
        .schedule_with_fixed_delay(sec(5), sec(1), || ())
        .unwrap();
    assert_eq!(pool.queue_len(), 2);
    pool.shutdown();
    // Queued (not running): cancelled and removed before shutdown returns.
    assert!(rate.is_cancelled() && rate.is_done());
    assert!(delay.is_cancelled() && delay.is_done());
    assert_eq!(pool.queue_len(), 0);
    assert!(pool.await_termination(BOUND));
}

#[test]
fn periodic_tasks_keep_running_after_shutdown_when_enabled() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .continue_existing_periodic_tasks_after_shutdown(true)
        .build();
    assert!(pool.continue_existing_periodic_tasks_after_shutdown());
    let (rate_runs, delay_runs) = (counter(), counter());
    let r = rate_runs.clone();
    let rate = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let d = delay_runs.clone();
    let delay = pool
        .schedule_with_fixed_delay(sec(1), sec(1), move || {
            d.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    pool.shutdown();
    assert!(pool.is_shutdown() && pool.is_terminating() && !pool.is_terminated());
    assert!(!rate.is_done() && !delay.is_done());
    assert_eq!(pool.queue_len(), 2);

    for round in 1..=3 {
        // Both re-queued (fixed delay measures from the end of the run) before advancing.
        assert!(wait_until(|| {
            let s = pool.stats();
            s.queued == 2 && s.active_count == 0
        }));
        clock.advance(sec(1));
        assert!(wait_until(
            || load(&rate_runs) == round && load(&delay_runs) == round
        ));
    }
    assert!(!pool.await_termination(Duration::from_millis(20)));
    assert!(rate.cancel() && delay.cancel());
    assert!(pool.await_termination(BOUND));
    assert!(pool.is_terminated() && !pool.is_terminating());
    assert_eq!((load(&rate_runs), load(&delay_runs)), (3, 3));
    assert!(is_cancelled(rate) && is_cancelled(delay));
}

#[test]
fn delayed_tasks_run_at_their_deadline_after_shutdown_by_default() {
    let (clock, pool) = manual_pool(1);
    assert!(pool.execute_existing_delayed_tasks_after_shutdown());
    let fut = pool.schedule(sec(10), || "late").unwrap();
    pool.shutdown();
    assert!(pool.is_terminating() && !pool.is_terminated());
    assert!(!fut.is_done() && !fut.is_cancelled());
    assert_eq!(pool.queue_len(), 1);
    clock.advance(sec(9));
    assert!(!pool.await_termination(Duration::from_millis(20)));
    assert!(!fut.is_done());
    clock.advance(sec(1));
    assert_eq!(fut.get().unwrap(), "late");
    assert!(pool.await_termination(BOUND));
    assert_eq!(pool.stats().completed_task_count, 1);
}

#[test]
fn not_yet_due_delayed_tasks_are_cancelled_when_disabled_but_due_ones_run() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .execute_existing_delayed_tasks_after_shutdown(false)
        .build();
    assert!(!pool.execute_existing_delayed_tasks_after_shutdown());
    let (gate, started) = (Gate::default(), counter());
    let blocker = block_a_worker(&pool, &gate, &started);
    assert!(wait_until(|| load(&started) == 1));

    // The only worker is busy, so everything below stays queued.
    let due_now = pool.submit(|| "due now").unwrap();
    let became_due = pool.schedule(sec(5), || "became due").unwrap();
    let not_due = pool.schedule(sec(10), || "not due").unwrap();
    clock.advance(sec(5));
    assert_eq!(pool.queue_len(), 3);

    pool.shutdown();
    assert!(not_due.is_cancelled() && not_due.is_done());
    assert!(!due_now.is_done() && !became_due.is_done());
    assert_eq!(pool.queue_len(), 2);

    gate.open();
    assert!(blocker.get().is_ok());
    assert_eq!(due_now.get().unwrap(), "due now");
    assert_eq!(became_due.get().unwrap(), "became due");
    assert!(pool.await_termination(BOUND));
    assert!(is_cancelled(not_due));
    assert_eq!(pool.stats().completed_task_count, 3);
}

#[test]
fn disabling_a_policy_after_shutdown_cancels_affected_tasks_at_once() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .continue_existing_periodic_tasks_after_shutdown(true)
        .build();
    let periodic = pool.schedule_at_fixed_rate(sec(1), sec(1), || ()).unwrap();
    let delayed = pool.schedule(sec(10), || ()).unwrap();
    pool.shutdown();
    assert_eq!(pool.queue_len(), 2);
    assert!(!periodic.is_done() && !delayed.is_done());

    pool.set_continue_existing_periodic_tasks_after_shutdown(false);
    assert!(!pool.continue_existing_periodic_tasks_after_shutdown());
    assert!(periodic.is_cancelled() && periodic.is_done());
    assert!(!delayed.is_done());
    assert_eq!(pool.queue_len(), 1);

    pool.set_execute_existing_delayed_tasks_after_shutdown(false);
    assert!(!pool.execute_existing_delayed_tasks_after_shutdown());
    assert!(delayed.is_cancelled() && delayed.is_done());
    assert_eq!(pool.queue_len(), 0);

    assert!(pool.await_termination(BOUND));
    assert!(is_cancelled(periodic) && is_cancelled(delayed));
}

#[test]
fn disabling_a_policy_after_shutdown_keeps_due_one_shots() {
    let (clock, pool) = manual_pool(1);
    let (gate, started) = (Gate::default(), counter());
    let blocker = block_a_worker(&pool, &gate, &started);
    assert!(wait_until(|| load(&started) == 1));
    let due = pool.schedule(sec(3), || 1).unwrap();
    let not_due = pool.schedule(sec(4), || 2).unwrap();
    clock.advance(sec(3));
    pool.shutdown();
    assert_eq!(pool.queue_len(), 2);
    pool.set_execute_existing_delayed_tasks_after_shutdown(false);
    assert!(not_due.is_cancelled());
    assert!(!due.is_done());
    assert_eq!(pool.queue_len(), 1);
    gate.open();
    blocker.get().unwrap();
    assert_eq!(due.get().unwrap(), 1);
    assert!(pool.await_termination(BOUND));
    assert!(is_cancelled(not_due));
}

#[test]
fn disabling_a_policy_before_shutdown_cancels_nothing_yet() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .continue_existing_periodic_tasks_after_shutdown(true)
        .build();
    let periodic = pool.schedule_at_fixed_rate(sec(5), sec(1), || ()).unwrap();
    let delayed = pool.schedule(sec(5), || ()).unwrap();
    pool.set_continue_existing_periodic_tasks_after_shutdown(false);
    pool.set_execute_existing_delayed_tasks_after_shutdown(false);
    assert!(!periodic.is_done() && !delayed.is_done());
    assert_eq!(pool.queue_len(), 2);
    // Re-enabling before shutdown makes the later shutdown keep both.
    pool.set_continue_existing_periodic_tasks_after_shutdown(true);
    pool.set_execute_existing_delayed_tasks_after_shutdown(true);
    pool.shutdown();
    assert!(!periodic.is_done() && !delayed.is_done());
    assert_eq!(pool.queue_len(), 2);
    clock.advance(sec(5));
    delayed.get().unwrap();
    assert!(periodic.cancel());
    assert!(pool.await_termination(BOUND));
}

#[test]
fn shutdown_removes_cancelled_tasks_still_queued() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .remove_on_cancel(false)
        .build();
    assert!(!pool.remove_on_cancel());
    let futs: Vec<_> = (0..4)
        .map(|i| pool.schedule(sec(10), move || i).unwrap())
        .collect();
    assert!(futs[0].cancel() && futs[2].cancel());
    assert_eq!(
        pool.queue_len(),
        4,
        "remove_on_cancel(false) leaves them queued"
    );
    pool.shutdown();
    assert_eq!(pool.queue_len(), 2);
    clock.advance(sec(10));
    assert!(pool.await_termination(BOUND));
    let outcomes: Vec<Option<i32>> = futs.into_iter().map(|f| f.get().ok()).collect();
    assert_eq!(outcomes, vec![None, Some(1), None, Some(3)]);
    assert_eq!(pool.stats().completed_task_count, 2);
}

#[test]
fn shutdown_with_only_cancelled_tasks_queued_terminates_at_once() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .clock(clock)
        .remove_on_cancel(false)
        .build();
    let long = pool.schedule(Duration::from_secs(3600), || ()).unwrap();
    assert!(long.cancel());
    assert_eq!(pool.queue_len(), 1);
    pool.shutdown();
    assert_eq!(pool.queue_len(), 0);
    assert!(pool.await_termination(BOUND));
}

#[test]
fn shutdown_now_returns_pending_tasks_in_deadline_order() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .remove_on_cancel(false)
        .build();
    let order = Arc::new(Mutex::new(Vec::new()));
    let log = |label: &'static str| {
        let order = order.clone();
        move || order.lock().unwrap().push(label)
    };
    let a = pool.schedule(sec(30), log("a@30")).unwrap();
    let b = pool
        .schedule_at_fixed_rate(sec(10), sec(1), log("b@10"))
        .unwrap();
    let c = pool.schedule(sec(20), log("c@20")).unwrap();
    let d = pool
        .schedule_with_fixed_delay(sec(20), sec(1), log("d@20"))
        .unwrap();
    let e = pool.schedule(sec(5), log("e@5")).unwrap();
    assert!(e.cancel());
    assert_eq!(pool.queue_len(), 5);

    let pending = pool.shutdown_now();
    assert!(pool.is_shutdown());
    assert_eq!(pool.queue_len(), 0);
    let periodic: Vec<bool> = pending.iter().map(PendingTask::is_periodic).collect();
    assert_eq!(periodic, vec![true, false, true, false]);
    // Nothing ran yet: the returned tasks are neither done nor cancelled.
    for f in [&a, &c] {
        assert!(!f.is_done() && !f.is_cancelled());
    }
    assert!(!b.is_done() && !d.is_done());
    for task in pending {
        task.run();
    }
    assert_eq!(*order.lock().unwrap(), vec!["b@10", "c@20", "d@20", "a@30"]);
    assert!(a.get().is_ok() && c.get().is_ok());
    assert!(is_cancelled(b) && is_cancelled(d) && is_cancelled(e));
    assert!(pool.await_termination(BOUND));
}

#[test]
fn pending_task_runs_once_on_the_caller_thread_and_completes_its_future() {
    let (_clock, pool) = manual_pool(1);
    let fut = pool.schedule(sec(60), || thread::current().id()).unwrap();
    let mut pending = pool.shutdown_now();
    assert_eq!(pending.len(), 1);
    assert!(!pending[0].is_periodic());
    pending.pop().unwrap().run();
    assert!(fut.is_done() && !fut.is_cancelled());
    let ran_on: ThreadId = fut.get().unwrap();
    assert_eq!(ran_on, thread::current().id());
    assert!(pool.await_termination(BOUND));
    let stats = pool.stats();
    assert_eq!(
        stats.completed_task_count, 0,
        "PendingTask::run is not counted"
    );
    assert_eq!(stats.task_count, 1);
}

#[test]
fn pending_periodic_task_runs_once_then_is_cancelled() {
    let (_clock, pool) = manual_pool(1);
    let runs = counter();
    let r = runs.clone();
    let caller = Arc::new(Mutex::new(None));
    let seen = caller.clone();
    let fut = pool
        .schedule_with_fixed_delay(sec(60), sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
            *seen.lock().unwrap() = Some(thread::current().id());
        })
        .unwrap();
    let mut pending = pool.shutdown_now();
    assert_eq!(pending.len(), 1);
    assert!(pending[0].is_periodic());
    pending.pop().unwrap().run();
    assert_eq!(load(&runs), 1);
    assert_eq!(*caller.lock().unwrap(), Some(thread::current().id()));
    assert!(fut.is_done() && fut.is_cancelled());
    assert!(is_cancelled(fut));
    assert!(pool.await_termination(BOUND));
}

#[test]
fn a_panic_in_pending_task_run_goes_into_its_future() {
    let (_clock, pool) = manual_pool(1);
    let once = pool
        .schedule(sec(1), || -> u8 { panic!("pending boom") })
        .unwrap();
    let periodic = pool
        .schedule_at_fixed_rate(sec(2), sec(1), || panic!("periodic boom"))
        .unwrap();
    let pending = pool.shutdown_now();
    assert_eq!(pending.len(), 2);
    for task in pending {
        task.run(); // must not unwind into this thread
    }
    match once.get() {
        Err(TaskError::Panicked(payload)) => {
            assert_eq!(payload.message(), Some("pending boom"));
            assert!(payload.is::<&str>());
        }
        other => panic!("expected a panic, got {other:?}"),
    }
    let err = periodic.get().unwrap_err();
    assert_eq!(err.panic_message(), Some("periodic boom"));
    assert!(pool.await_termination(BOUND));
}

#[test]
fn dropping_a_pending_task_cancels_its_future() {
    let (_clock, pool) = manual_pool(1);
    let ran = counter();
    let r = ran.clone();
    let once = pool
        .schedule(sec(1), move || r.fetch_add(1, Ordering::SeqCst))
        .unwrap();
    let r = ran.clone();
    let periodic = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let pending = pool.shutdown_now();
    assert_eq!(pending.len(), 2);
    assert!(!once.is_done() && !periodic.is_done());
    drop(pending);
    assert!(once.is_cancelled() && periodic.is_cancelled());
    assert!(is_cancelled(once) && is_cancelled(periodic));
    assert_eq!(load(&ran), 0);
    assert!(pool.await_termination(BOUND));
}

#[test]
fn no_task_starts_after_shutdown_now() {
    let (clock, pool) = manual_pool(1);
    let (gate, started) = (Gate::default(), counter());
    let periodic_runs = counter();
    let (g, s, p) = (gate.clone(), started.clone(), periodic_runs.clone());
    // The only worker runs this periodic task's first run, which blocks.
    let periodic = pool
        .schedule_at_fixed_rate(Duration::ZERO, sec(1), move || {
            p.fetch_add(1, Ordering::SeqCst);
            s.fetch_add(1, Ordering::SeqCst);
            g.wait();
        })
        .unwrap();
    assert!(wait_until(|| load(&started) == 1));
    let queued_runs = counter();
    let queued: Vec<_> = (0..3)
        .map(|_| {
            let q = queued_runs.clone();
            pool.submit(move || q.fetch_add(1, Ordering::SeqCst))
                .unwrap()
        })
        .collect();
    assert_eq!(pool.queue_len(), 3);

    let pending = pool.shutdown_now();
    assert_eq!(pending.len(), 3);
    assert_eq!(pool.queue_len(), 0);
    assert!(pool.is_terminating());
    gate.open();
    // The running periodic task finishes its run and is not re-queued.
    assert!(periodic.wait_timeout(BOUND));
    assert!(periodic.is_cancelled());
    assert!(pool.await_termination(BOUND));
    clock.advance(sec(10));
    assert_eq!(load(&periodic_runs), 1);
    assert_eq!(load(&queued_runs), 0);
    assert!(queued.iter().all(|f| !f.is_done()));
    drop(pending);
    assert!(queued.into_iter().all(is_cancelled));
    assert_eq!(pool.stats().completed_task_count, 1);
}

#[test]
fn shutdown_now_after_shutdown_returns_the_tasks_the_policies_kept() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .continue_existing_periodic_tasks_after_shutdown(true)
        .build();
    let delayed = pool.schedule(sec(10), || ()).unwrap();
    let periodic = pool
        .schedule_with_fixed_delay(sec(20), sec(1), || ())
        .unwrap();
    pool.shutdown();
    assert_eq!(pool.queue_len(), 2);
    let pending = pool.shutdown_now();
    assert_eq!(pending.len(), 2);
    assert_eq!(
        pending
            .iter()
            .map(PendingTask::is_periodic)
            .collect::<Vec<_>>(),
        vec![false, true]
    );
    assert!(pool.await_termination(BOUND));
    assert!(!delayed.is_done() && !periodic.is_done());
    drop(pending);
    assert!(is_cancelled(delayed) && is_cancelled(periodic));
    // Calling it again finds nothing more.
    assert!(pool.shutdown_now().is_empty());
}

#[test]
fn lifecycle_flags_follow_shutdown_and_termination() {
    let (_clock, pool) = manual_pool(1);
    assert!(!pool.is_shutdown() && !pool.is_terminating() && !pool.is_terminated());
    let (gate, started) = (Gate::default(), counter());
    let blocker = block_a_worker(&pool, &gate, &started);
    assert!(wait_until(|| load(&started) == 1));
    assert!(!pool.is_shutdown() && !pool.is_terminating() && !pool.is_terminated());
    pool.shutdown();
    assert!(pool.is_shutdown() && pool.is_terminating() && !pool.is_terminated());
    assert!(!pool.await_termination(Duration::from_millis(20)));
    gate.open();
    assert!(pool.await_termination(BOUND));
    assert!(pool.is_shutdown() && !pool.is_terminating() && pool.is_terminated());
    blocker.get().unwrap();
    // Shutting down again changes nothing.
    pool.shutdown();
    assert!(pool.is_shutdown() && pool.is_terminated() && !pool.is_terminating());
    assert_eq!(pool.stats().pool_size, 0);
}

#[test]
fn a_pool_that_never_started_a_thread_terminates_at_shutdown() {
    let (_clock, pool) = manual_pool(3);
    assert_eq!(pool.stats().pool_size, 0);
    pool.shutdown();
    assert!(pool.is_shutdown() && pool.is_terminated() && !pool.is_terminating());
    assert!(pool.await_termination(Duration::ZERO));

    let (_clock, pool) = manual_pool(3);
    assert!(pool.shutdown_now().is_empty());
    assert!(pool.is_terminated());
}

#[test]
fn await_termination_times_out_while_a_kept_delayed_task_is_pending() {
    let (_clock, pool) = manual_pool(1);
    let hour = pool.schedule(Duration::from_secs(3600), || ()).unwrap();
    pool.shutdown();
    assert!(!pool.await_termination(Duration::from_millis(50)));
    assert!(pool.is_terminating() && !pool.is_terminated());
    assert!(!hour.is_done());
    assert!(hour.cancel());
    assert!(pool.await_termination(BOUND));
    assert!(pool.is_terminated());
}

#[test]
fn await_termination_times_out_on_the_real_clock_too() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let hour = pool.schedule(Duration::from_secs(3600), || ()).unwrap();
    pool.shutdown();
    assert!(!pool.await_termination(Duration::from_millis(50)));
    assert!(hour.cancel());
    assert!(pool.await_termination(BOUND));
}

#[test]
fn termination_is_prompt_when_the_policies_drop_long_delayed_tasks() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .execute_existing_delayed_tasks_after_shutdown(false)
        .build();
    let once = pool.schedule(Duration::from_secs(3600), || ()).unwrap();
    let rate = pool
        .schedule_at_fixed_rate(Duration::from_secs(3600), sec(1), || ())
        .unwrap();
    let never = pool.schedule(Duration::MAX, || ()).unwrap();
    assert_eq!(pool.stats().pool_size, 2);
    pool.shutdown();
    assert!(pool.await_termination(BOUND));
    assert!(is_cancelled(once) && is_cancelled(rate) && is_cancelled(never));
    assert_eq!(pool.stats().pool_size, 0);
}

#[test]
fn close_waits_for_the_delayed_tasks_that_are_kept() {
    let pool = ScheduledThreadPoolExecutor::new(2);
    let ran = counter();
    let r = ran.clone();
    let started = Instant::now();
    pool.schedule(Duration::from_millis(50), move || {
        r.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    let r = ran.clone();
    pool.execute(move || {
        r.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    pool.close();
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(load(&ran), 2);
    assert!(pool.is_terminated());
    assert_eq!(pool.stats().pool_size, 0);
    pool.close(); // a second close returns at once
}

#[test]
fn close_waits_for_a_running_task() {
    let (_clock, pool) = manual_pool(1);
    let (gate, started) = (Gate::default(), counter());
    let blocker = block_a_worker(&pool, &gate, &started);
    assert!(wait_until(|| load(&started) == 1));
    let closer = {
        let pool = pool.clone();
        thread::spawn(move || pool.close())
    };
    assert!(wait_until(|| pool.is_shutdown()));
    assert!(!closer.is_finished());
    assert!(!pool.is_terminated());
    gate.open();
    closer.join().unwrap();
    assert!(pool.is_terminated());
    assert!(blocker.is_done());
}

#[test]
fn close_called_from_inside_a_task_returns_at_once() {
    let (_clock, pool) = manual_pool(2);
    let inner = pool.clone();
    let fut = pool
        .submit(move || {
            inner.close();
            (inner.is_shutdown(), inner.is_terminated())
        })
        .unwrap();
    assert!(fut.wait_timeout(BOUND), "close inside a task deadlocked");
    assert_eq!(fut.get().unwrap(), (true, false));
    assert!(pool.await_termination(BOUND));
}

#[test]
fn shutdown_and_shutdown_now_from_inside_a_task() {
    let (_clock, pool) = manual_pool(1);
    let inner = pool.clone();
    let fut = pool.submit(move || inner.shutdown()).unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert!(pool.await_termination(BOUND));

    let (_clock, pool) = manual_pool(1);
    let later = pool.schedule(sec(5), || ()).unwrap();
    let inner = pool.clone();
    let fut = pool.submit(move || inner.shutdown_now().len()).unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(fut.get().unwrap(), 1);
    assert!(pool.await_termination(BOUND));
    assert!(
        is_cancelled(later),
        "the pending task was dropped inside the task"
    );
}

#[test]
fn dropping_the_last_handle_shuts_down() {
    let (clock, pool, starts, stops) = hooked_pool(2);
    let periodic = pool.schedule_at_fixed_rate(sec(1), sec(1), || ()).unwrap();
    let delayed = pool.schedule(sec(10), || 7).unwrap();
    let other = pool.clone();
    drop(other);
    assert!(!pool.is_shutdown(), "a clone's drop must not shut down");
    drop(pool);
    // The last handle's drop shut down: the periodic task is cancelled by the default
    // policy, the delayed one is kept and still runs at its deadline.
    assert!(periodic.wait_timeout(BOUND) && periodic.is_cancelled());
    assert!(!delayed.is_done());
    clock.advance(sec(10));
    assert_eq!(delayed.get().unwrap(), 7);
    // Every worker exits once the queue is drained.
    assert!(wait_until(|| load(&starts) == 2 && load(&stops) == 2));
}

#[test]
fn dropping_a_future_does_not_cancel_and_dropping_the_pool_does_not_block() {
    let (clock, pool) = manual_pool(1);
    let ran = counter();
    let r = ran.clone();
    drop(
        pool.schedule(sec(1), move || r.fetch_add(1, Ordering::SeqCst))
            .unwrap(),
    );
    let witness = pool.schedule(sec(2), || ()).unwrap();
    drop(pool); // must return although tasks are pending
    clock.advance(sec(2));
    assert!(witness.wait_timeout(BOUND));
    assert_eq!(load(&ran), 1);
}

#[derive(Default)]
struct Tally {
    submitted: Vec<ScheduledFuture<()>>,
    executed: usize,
    delayed: Vec<ScheduledFuture<()>>,
    periodic: Vec<ScheduledFuture<()>>,
    rejected: usize,
}

impl Tally {
    fn accepted(&self) -> usize {
        self.submitted.len() + self.executed + self.delayed.len() + self.periodic.len()
    }
}

struct RaceCounters {
    submit_ran: Arc<AtomicUsize>,
    execute_ran: Arc<AtomicUsize>,
    delayed_ran: Arc<AtomicUsize>,
    periodic_ran: Arc<AtomicUsize>,
}

impl RaceCounters {
    fn new() -> Self {
        RaceCounters {
            submit_ran: counter(),
            execute_ran: counter(),
            delayed_ran: counter(),
            periodic_ran: counter(),
        }
    }
}

const RACE_THREADS: usize = 4;
const RACE_PER_THREAD: usize = 400;

fn record<T>(
    result: Result<T, ScheduleError>,
    tally: &mut Tally,
    accept: impl FnOnce(T, &mut Tally),
) {
    match result {
        Ok(v) => accept(v, tally),
        Err(e) => {
            assert_eq!(e, ScheduleError::Shutdown);
            tally.rejected += 1;
        }
    }
}

/// Runs `RACE_THREADS` submitters against `stop`, which the main thread calls once some
/// submissions have been accepted. Returns the merged tally.
fn race<R>(
    pool: &ScheduledThreadPoolExecutor,
    c: &RaceCounters,
    stop: impl FnOnce() -> R,
) -> (Tally, R) {
    let start = Barrier::new(RACE_THREADS + 1);
    let (tallies, r) = thread::scope(|s| {
        let handles: Vec<_> = (0..RACE_THREADS)
            .map(|_| {
                let start = &start;
                s.spawn(move || {
                    let mut t = Tally::default();
                    start.wait();
                    for i in 0..RACE_PER_THREAD {
                        match i % 4 {
                            0 => record(pool.submit(bump(&c.submit_ran)), &mut t, |f, t| {
                                t.submitted.push(f)
                            }),
                            1 => record(pool.execute(bump(&c.execute_ran)), &mut t, |(), t| {
                                t.executed += 1
                            }),
                            2 => record(
                                pool.schedule(Duration::from_secs(3600), bump(&c.delayed_ran)),
                                &mut t,
                                |f, t| t.delayed.push(f),
                            ),
                            _ => record(
                                pool.schedule_at_fixed_rate(
                                    Duration::ZERO,
                                    sec(1),
                                    bump(&c.periodic_ran),
                                ),
                                &mut t,
                                |f, t| t.periodic.push(f),
                            ),
                        }
                    }
                    t
                })
            })
            .collect();
        start.wait();
        // Stop somewhere in the middle of the stream (or after it, on a slow machine:
        // the accounting below holds either way).
        wait_until(|| pool.stats().task_count >= (RACE_THREADS * RACE_PER_THREAD / 3) as u64);
        let r = stop();
        let tallies: Vec<Tally> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (tallies, r)
    });
    let mut all = Tally::default();
    for t in tallies {
        all.submitted.extend(t.submitted);
        all.executed += t.executed;
        all.delayed.extend(t.delayed);
        all.periodic.extend(t.periodic);
        all.rejected += t.rejected;
    }
    (all, r)
}

#[test]
fn submissions_racing_shutdown_are_accepted_and_run_or_rejected_never_lost() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .clock(clock.clone())
        .execute_existing_delayed_tasks_after_shutdown(false)
        .build();
    let c = RaceCounters::new();
    let (t, ()) = race(&pool, &c, || pool.shutdown());
    assert_eq!(t.accepted() + t.rejected, RACE_THREADS * RACE_PER_THREAD);
    assert!(pool.await_termination(BOUND));

    // Due one-shots always run; not-yet-due ones are cancelled by the policy; periodic
    // ones are cancelled by the default policy (after at most their first run).
    let submitted = t.submitted.len();
    let delayed = t.delayed.len();
    let periodic = t.periodic.len();
    assert!(t.submitted.into_iter().all(|f| f.get().is_ok()));
    assert_eq!(load(&c.submit_ran), submitted);
    assert_eq!(load(&c.execute_ran), t.executed);
    assert!(t.delayed.into_iter().all(is_cancelled));
    assert_eq!(load(&c.delayed_ran), 0);
    assert!(t.periodic.into_iter().all(is_cancelled));
    let periodic_runs = load(&c.periodic_ran);
    assert!(periodic_runs <= periodic);

    let stats = pool.stats();
    assert_eq!(
        stats.task_count as usize,
        submitted + t.executed + delayed + periodic
    );
    assert_eq!(stats.rejected_count as usize, t.rejected);
    assert_eq!(
        stats.completed_task_count as usize,
        submitted + t.executed + periodic_runs
    );
    assert_eq!(
        (stats.pool_size, stats.queued, stats.active_count),
        (0, 0, 0)
    );
}

#[test]
fn submissions_racing_shutdown_now_are_run_or_returned_or_rejected_never_lost() {
    let (clock, pool) = manual_pool(2);
    let c = RaceCounters::new();
    let (t, pending) = race(&pool, &c, || pool.shutdown_now());
    assert_eq!(t.accepted() + t.rejected, RACE_THREADS * RACE_PER_THREAD);
    assert!(pool.await_termination(BOUND));
    clock.advance(Duration::from_secs(7200));

    let pending_once = pending.iter().filter(|p| !p.is_periodic()).count();
    let pending_periodic = pending.len() - pending_once;
    let once_ran = load(&c.submit_ran) + load(&c.execute_ran);
    assert_eq!(load(&c.delayed_ran), 0);
    // Every accepted one-shot either ran before shutdown_now or came back pending.
    assert_eq!(
        once_ran + pending_once,
        t.submitted.len() + t.executed + t.delayed.len()
    );
    assert!(pending_periodic <= t.periodic.len());
    assert!(t.delayed.iter().all(|f| !f.is_done()));
    drop(pending);

    let stats = pool.stats();
    assert_eq!(stats.task_count as usize, t.accepted());
    assert_eq!(stats.rejected_count as usize, t.rejected);
    assert_eq!(
        stats.completed_task_count as usize,
        once_ran + load(&c.periodic_ran)
    );
    // Once the pending tasks are dropped every future is done: the value if it ran,
    // `Cancelled` if it came back pending.
    let mut submitted_ok = 0;
    for f in t.submitted {
        match f.get() {
            Ok(()) => submitted_ok += 1,
            Err(e) => assert!(e.is_cancelled()),
        }
    }
    assert_eq!(submitted_ok, load(&c.submit_ran));
    assert!(t.delayed.into_iter().all(is_cancelled));
    assert!(t.periodic.into_iter().all(is_cancelled));
}

#[test]
fn pending_task_run_does_nothing_once_its_future_was_cancelled() {
    let (_clock, pool) = manual_pool(1);
    let ran = counter();
    let r = ran.clone();
    let fut = pool
        .schedule(sec(5), move || r.fetch_add(1, Ordering::SeqCst))
        .unwrap();
    let mut pending = pool.shutdown_now();
    assert_eq!(pending.len(), 1);
    assert!(fut.cancel(), "still cancellable while handed back");
    pending.pop().unwrap().run();
    assert_eq!(load(&ran), 0);
    assert!(is_cancelled(fut));
    assert!(pool.await_termination(BOUND));
}

#[test]
fn await_termination_is_false_before_shutdown() {
    let (_clock, pool) = manual_pool(1);
    pool.schedule(sec(1), || ()).unwrap();
    assert!(!pool.await_termination(Duration::from_millis(20)));
    assert!(!pool.is_terminating() && !pool.is_terminated());
    pool.shutdown();
    assert!(!pool.await_termination(Duration::from_millis(20)));
    drop(pool.shutdown_now());
    assert!(pool.await_termination(BOUND));
}

#[test]
fn every_stop_hook_has_run_when_await_termination_returns_true() {
    let (starts, stops) = (counter(), counter());
    let (a, b) = (starts.clone(), stops.clone());
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(3)
        .on_thread_start(move || {
            a.fetch_add(1, Ordering::SeqCst);
        })
        .on_thread_stop(move || {
            thread::sleep(Duration::from_millis(5));
            b.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    assert_eq!(pool.prestart_all_core_threads(), 3);
    pool.shutdown();
    assert!(pool.await_termination(BOUND));
    assert_eq!((load(&starts), load(&stops)), (3, 3));
    assert_eq!(pool.stats().pool_size, 0);
}

#[test]
fn a_periodic_run_in_progress_is_cancelled_when_its_policy_is_turned_off_after_shutdown() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .continue_existing_periodic_tasks_after_shutdown(true)
        .build();
    let (gate, started) = (Gate::default(), counter());
    let (g, s) = (gate.clone(), started.clone());
    let periodic = pool
        .schedule_with_fixed_delay(Duration::ZERO, sec(1), move || {
            s.fetch_add(1, Ordering::SeqCst);
            g.wait();
        })
        .unwrap();
    assert!(wait_until(|| load(&started) == 1));
    pool.shutdown();
    pool.set_continue_existing_periodic_tasks_after_shutdown(false);
    assert!(!periodic.is_done(), "the running run is not interrupted");
    gate.open();
    assert!(periodic.wait_timeout(BOUND));
    assert!(pool.await_termination(BOUND));
    clock.advance(sec(5));
    assert_eq!(load(&started), 1);
    assert!(is_cancelled(periodic));
}

#[test]
fn shutdown_now_stops_periodic_tasks_even_when_they_may_continue() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .continue_existing_periodic_tasks_after_shutdown(true)
        .build();
    let (gate, started) = (Gate::default(), counter());
    let (g, s) = (gate.clone(), started.clone());
    let running = pool
        .schedule_at_fixed_rate(Duration::ZERO, sec(1), move || {
            s.fetch_add(1, Ordering::SeqCst);
            g.wait();
        })
        .unwrap();
    assert!(wait_until(|| load(&started) == 1));
    let queued = pool.schedule_at_fixed_rate(sec(1), sec(1), || ()).unwrap();
    let pending = pool.shutdown_now();
    assert_eq!(pending.len(), 1);
    gate.open();
    assert!(running.wait_timeout(BOUND) && running.is_cancelled());
    assert!(pool.await_termination(BOUND));
    clock.advance(sec(5));
    assert_eq!(load(&started), 1);
    drop(pending);
    assert!(is_cancelled(queued));
}

#[test]
fn a_periodic_task_that_shuts_its_pool_down_is_cancelled_after_its_run() {
    let (_clock, pool) = manual_pool(2);
    let inner = pool.clone();
    let runs = counter();
    let r = runs.clone();
    let periodic = pool
        .schedule_at_fixed_rate(Duration::ZERO, sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
            inner.shutdown();
        })
        .unwrap();
    assert!(periodic.wait_timeout(BOUND));
    assert!(is_cancelled(periodic));
    assert!(pool.await_termination(BOUND));
    assert_eq!(load(&runs), 1);
}

#[test]
fn the_last_handle_dropped_inside_a_task_shuts_the_pool_down() {
    let (clock, pool, starts, stops) = hooked_pool(1);
    let inner = pool.clone();
    let fut = pool
        .schedule(sec(1), move || {
            let shut_down_while_running = inner.is_shutdown();
            drop(inner); // the last handle: shuts down from inside the task
            shut_down_while_running
        })
        .unwrap();
    drop(pool);
    clock.advance(sec(1));
    assert!(fut.wait_timeout(BOUND));
    assert!(!fut.get().unwrap());
    assert!(wait_until(|| load(&starts) == 1 && load(&stops) == 1));
}

/// Blocks in `Drop` until released, after saying so.
struct BlockingDrop {
    dropping: Arc<Barrier>,
    release: Arc<Barrier>,
}

impl Drop for BlockingDrop {
    fn drop(&mut self) {
        self.dropping.wait();
        self.release.wait();
    }
}

#[test]
fn termination_waits_for_the_shutdown_caller_to_complete_removed_tasks() {
    // A periodic task removed by shutdown has its closure dropped and its future completed
    // by the thread that called `shutdown`. Termination must mean that work is done too:
    // with every worker gone, the pool still is not terminated while that thread is busy.
    let stops = counter();
    let s = stops.clone();
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .on_thread_stop(move || {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    let (dropping, release) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let blocker = BlockingDrop {
        dropping: dropping.clone(),
        release: release.clone(),
    };
    let fut = pool
        .schedule_at_fixed_rate(sec(60), sec(60), move || {
            let _held = &blocker;
        })
        .unwrap();
    assert_eq!(pool.stats().pool_size, 1);
    let shutter = {
        let pool = pool.clone();
        thread::spawn(move || pool.shutdown())
    };
    dropping.wait(); // the shutdown caller is inside the closure's Drop
    assert!(wait_until(|| load(&stops) == 1), "the only worker exits");
    assert!(
        !pool.is_terminated(),
        "the shutdown caller is still completing a future"
    );
    assert!(pool.is_terminating());
    release.wait();
    shutter.join().unwrap();
    assert!(pool.await_termination(BOUND));
    assert!(
        fut.is_done(),
        "terminated implies the removed task's future is complete"
    );
    assert!(is_cancelled(fut));
}

// ---------------------------------------------------------------------------------------
// close_timeout
// ---------------------------------------------------------------------------------------

#[test]
fn close_timeout_gives_up_on_a_forgotten_timer_and_terminates_once_it_has_run() {
    let (clock, pool) = manual_pool(1);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let forgotten = pool
        .schedule(sec(1800), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    // The delayed one-shot still runs after shutdown (Java's default), and virtual time
    // stands still: the pool cannot terminate, however long the wait.
    assert!(!pool.close_timeout(Duration::from_millis(20)));
    assert!(pool.is_shutdown() && !pool.is_terminated());
    assert!(
        pool.schedule(sec(1), || ()).is_err(),
        "shut down: no new tasks"
    );
    clock.advance(sec(1800));
    assert!(
        pool.close_timeout(BOUND),
        "the last task ran, the worker exited"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    forgotten.get().unwrap();
}

#[test]
fn close_timeout_on_an_idle_pool_terminates_and_repeats_harmlessly() {
    let pool = ScheduledThreadPoolExecutor::new(2);
    pool.submit(|| ()).unwrap().get().unwrap();
    assert!(pool.close_timeout(BOUND));
    assert!(pool.is_terminated());
    assert!(pool.close_timeout(Duration::ZERO), "already terminated");
}

#[test]
fn close_timeout_from_a_worker_shuts_down_and_returns_false_at_once() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let inner = pool.clone();
    // From inside, waiting for termination would wait for this very task: `false` at once
    // (the bound would make a hang fail the test rather than stall it).
    let from_worker = pool
        .submit(move || {
            let t0 = Instant::now();
            let terminated = inner.close_timeout(BOUND);
            (terminated, t0.elapsed() < BOUND)
        })
        .unwrap();
    assert_eq!(from_worker.get().unwrap(), (false, true));
    assert!(pool.is_shutdown());
    assert!(pool.await_termination(BOUND));
}

// ---------------------------------------------------------------------------------------
// shutdown_graceful, terminated(), WeakExecutor
// ---------------------------------------------------------------------------------------

#[test]
fn shutdown_graceful_drops_delayed_and_periodic_tasks_and_finishes_due_ones() {
    let (clock, pool) = manual_pool(1);
    let later = pool.schedule(sec(1800), || "later").unwrap();
    let ticker = pool.schedule_at_fixed_rate(sec(1), sec(1), || ()).unwrap();
    let due = pool.submit(|| "due").unwrap();
    pool.shutdown_graceful();
    assert!(
        pool.await_termination(BOUND),
        "nothing waits for a later deadline"
    );
    assert_eq!(due.get().unwrap(), "due");
    assert!(later.get().unwrap_err().is_cancelled());
    assert!(ticker.get().unwrap_err().is_cancelled());
    assert!(!pool.execute_existing_delayed_tasks_after_shutdown());
    clock.advance(sec(3600));
}

#[test]
fn the_terminated_future_completes_with_termination_on_any_executor_of_futures() {
    let pool = ScheduledThreadPoolExecutor::new(2);
    let early = pool.terminated();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        rt.block_on(early);
        tx.send(()).unwrap();
    });
    assert!(
        rx.recv_timeout(Duration::from_millis(30)).is_err(),
        "not before shutdown"
    );
    pool.submit(|| ()).unwrap().get().unwrap();
    pool.shutdown();
    rx.recv_timeout(BOUND).expect("woken by the termination");
    waiter.join().unwrap();
    // Polled after termination: ready at once.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(pool.terminated());
}

#[test]
fn a_weak_handle_upgrades_while_a_strong_one_lives_and_not_after() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let weak = pool.downgrade();
    let strong = weak.upgrade().expect("the pool is alive");
    assert_eq!(strong.submit(|| 3).unwrap().get().unwrap(), 3);
    drop(strong);
    assert!(
        !pool.is_shutdown(),
        "dropping a revived handle is not the last drop"
    );
    let watch = pool.terminated();
    drop(pool);
    assert!(weak.upgrade().is_none(), "the last handle is gone");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(watch); // the last drop shut it down, and it terminates
}

/// An `upgrade` that fails must not build a handle: its `Drop` would count one more
/// handle gone from zero, so every later `upgrade` overflowed (a panic with overflow
/// checks) or revived a handle to a pool that was shut down. Printing a weak handle
/// upgrades it, so `{:?}` alone was enough.
#[test]
fn a_failed_upgrade_leaves_the_handle_count_alone() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let weak = pool.downgrade();
    let _keeps_the_core_alive = pool.terminated(); // as a worker mid-run would
    drop(pool);
    for _ in 0..3 {
        assert!(
            weak.upgrade().is_none(),
            "never revived after the last drop"
        );
        assert!(format!("{weak:?}").contains("alive: false"));
    }
    let clone = weak.clone();
    assert!(clone.upgrade().is_none());
}

#[test]
fn a_periodic_task_holding_a_weak_handle_does_not_keep_the_pool_alive() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let weak = pool.downgrade();
    let follow_ups = Arc::new(AtomicUsize::new(0));
    let f = follow_ups.clone();
    let ticker = pool
        .schedule_at_fixed_rate(Duration::ZERO, Duration::from_millis(1), move || {
            if let Some(pool) = weak.upgrade() {
                let f = f.clone();
                let _ = pool.execute(move || {
                    f.fetch_add(1, Ordering::SeqCst);
                });
            }
        })
        .unwrap();
    assert!(wait_until(|| follow_ups.load(Ordering::SeqCst) > 0));
    let watch = pool.terminated();
    drop(pool);
    assert!(
        ticker.get().unwrap_err().is_cancelled(),
        "cancelled by the last drop's shutdown"
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(watch);
}

/// `PendingTask::name` and `deadline`: what `shutdown_now` hands back says which task it
/// is and when it was due, in the pool's clock, and its `Debug` shows both.
#[test]
fn a_pending_task_tells_its_name_and_deadline() {
    let (clock, pool) = manual_pool(1);
    let start = clock.now();
    let _a = pool.named("reminder").schedule(sec(30), || ()).unwrap();
    let _b = pool.schedule(sec(10), || ()).unwrap();
    let _c = pool
        .schedule_periodic(
            schedpool::Periodic::at_fixed_rate(sec(5))
                .initial_delay(sec(20))
                .name("poller"),
            || (),
        )
        .unwrap();
    clock.advance(sec(1));
    let pending = pool.shutdown_now();
    let mut seen: Vec<(Option<String>, Duration, bool)> = pending
        .iter()
        .map(|p| {
            (
                p.name().map(str::to_owned),
                p.deadline() - start,
                p.is_periodic(),
            )
        })
        .collect();
    seen.sort_by_key(|s| s.1);
    assert_eq!(
        seen,
        [
            (None, sec(10), false),
            (Some("poller".to_owned()), sec(20), true),
            (Some("reminder".to_owned()), sec(30), false),
        ]
    );
    let debug = format!(
        "{:?}",
        pending
            .iter()
            .find(|p| p.name() == Some("reminder"))
            .unwrap()
    );
    assert!(
        debug.contains("\"reminder\"") && debug.contains("deadline"),
        "{debug}"
    );
}

/// `Named` owns a handle: it can be stored in a struct beside nothing else, moved into a
/// thread, and it keeps the pool up as a clone of the executor would; the drop of the
/// last handle, the `Named` included, shuts the pool down.
#[test]
fn a_named_view_is_a_handle_that_can_be_stored_and_moved() {
    struct Mailer {
        timeouts: schedpool::Named,
    }
    let pool = ScheduledThreadPoolExecutor::new(1);
    let mailer = Mailer {
        timeouts: pool.named("mail-timeout"),
    };
    let watch = pool.terminated();
    drop(pool);
    let f = thread::spawn(move || {
        let f = mailer.timeouts.submit(|| 5).expect("the pool is still up");
        (f.get().unwrap(), mailer)
    });
    let (got, mailer) = f.join().unwrap();
    assert_eq!(got, 5);
    assert_eq!(mailer.timeouts.name(), "mail-timeout");
    drop(mailer); // the last handle
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(watch);
}

#[test]
fn names_show_in_the_debug_of_the_pool_and_of_futures() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .name("billing")
        .core_pool_size(1)
        .build();
    let f = pool
        .named("invoice")
        .schedule(Duration::from_secs(3600), || ())
        .unwrap();
    assert!(format!("{pool:?}").contains("\"billing\""), "{pool:?}");
    assert!(format!("{f:?}").contains("\"invoice\""), "{f:?}");
    let h = f.cancel_handle();
    assert!(format!("{h:?}").contains("\"invoice\""), "{h:?}");
    drop(pool.shutdown_now());
}

/// Collects the messages of the `schedpool` events logged on the thread it is the default
/// subscriber of (`tracing::subscriber::with_default`).
#[derive(Default)]
struct Messages(Mutex<Vec<String>>);

impl tracing::Subscriber for Messages {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        metadata.target() == "schedpool"
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut m = Message(String::new());
        event.record(&mut m);
        self.0.lock().unwrap().push(m.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The `info` line of a shutdown is written by the call that shuts the pool down, once:
/// `shutdown_now` on a running pool writes its own, a later `shutdown_now` none;
/// `shutdown` likewise; and a `shutdown_now` after `shutdown` none either.
#[test]
fn the_shutdown_lines_are_written_once_by_the_call_that_shuts_down() {
    let messages = Arc::new(Messages::default());
    let count = |line: &str| {
        let seen = messages.0.lock().unwrap();
        seen.iter().filter(|m| *m == line).count()
    };
    let (now_line, line) = ("executor shut down (shutdown_now)", "executor shut down");
    let (_clock, stopped) = manual_pool(1);
    let (_clock2, shut) = manual_pool(1);
    let guard = tracing::subscriber::set_default(messages.clone());
    // Callsites cache their interest process-wide; another test's thread swapping its own
    // default subscriber at the same moment can leave a stale one: re-read it now.
    tracing::callsite::rebuild_interest_cache();
    drop(stopped.shutdown_now());
    assert_eq!(count(now_line), 1, "the first shutdown_now writes its line");
    drop(stopped.shutdown_now());
    assert_eq!(count(now_line), 1, "a second one does not");
    shut.shutdown();
    assert_eq!(count(line), 1, "the first shutdown writes its line");
    shut.shutdown();
    drop(shut.shutdown_now());
    drop(guard);
    assert_eq!(
        (count(line), count(now_line)),
        (1, 1),
        "no line from a later shutdown or shutdown_now"
    );
    assert!(stopped.await_termination(BOUND) && shut.await_termination(BOUND));
}

/// Ties in `shutdown_now`: tasks with one deadline, submitted from two threads in turn
/// (so into two shards), come back in submission order, the order `scheduled_tasks`
/// lists them in.
#[test]
fn shutdown_now_returns_ties_in_submission_order_across_shards() {
    let (_clock, pool) = manual_pool(1);
    let names = ["a", "b", "c", "d", "e", "f"];
    for pair in names.chunks(2) {
        // One from this thread, then one from a fresh thread (another shard).
        pool.named(pair[0]).schedule(sec(5), || ()).unwrap();
        let p = pool.clone();
        let second = pair[1];
        thread::spawn(move || {
            p.named(second).schedule(sec(5), || ()).unwrap();
        })
        .join()
        .unwrap();
    }
    let listed: Vec<String> = pool
        .scheduled_tasks()
        .into_iter()
        .map(|t| t.name.unwrap_or_default())
        .collect();
    assert_eq!(listed, names, "scheduled_tasks: submission order");
    let returned: Vec<String> = pool
        .shutdown_now()
        .iter()
        .map(|t| t.name().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(returned, names, "shutdown_now: the same order");
    assert!(pool.await_termination(BOUND));
}
