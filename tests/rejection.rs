//! Rejection: `max_queued_tasks` with each `RejectionPolicy`, the precedence of
//! `ZeroPeriod` over `Shutdown` over `QueueFull`, the `rejected_count` counter, and the
//! rule that a periodic task's re-queue is never bounded.
//!
//! Everything runs on a `ManualClock`, so tasks scheduled in the future stay queued and
//! keep the queue full for as long as a test needs.

use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use schedpool::{ManualClock, RejectionPolicy, ScheduleError, ScheduledThreadPoolExecutor};

mod common;
use common::{bump, counter, is_cancelled, load, sec, shutdown_now_and_wait, wait_until, BOUND};

fn bounded_pool(max: usize, policy: RejectionPolicy) -> (ManualClock, ScheduledThreadPoolExecutor) {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .thread_name_prefix("rejection-worker-")
        .clock(clock.clone())
        .max_queued_tasks(max)
        .rejection_policy(policy)
        .build();
    (clock, pool)
}

#[test]
fn abort_refuses_every_kind_of_submission_when_full() {
    let (clock, pool) = bounded_pool(2, RejectionPolicy::Abort);
    let ran = counter();
    let first = pool.schedule(sec(10), bump(&ran)).unwrap();
    let _second = pool
        .schedule_at_fixed_rate(sec(10), sec(1), bump(&ran))
        .unwrap();
    assert_eq!(pool.queue_len(), 2);

    let full = Err(ScheduleError::QueueFull);
    assert_eq!(pool.schedule(sec(1), bump(&ran)).map(drop), full);
    assert_eq!(pool.schedule_at(clock.now(), bump(&ran)).map(drop), full);
    assert_eq!(
        pool.schedule_at_fixed_rate(sec(1), sec(1), bump(&ran))
            .map(drop),
        full
    );
    assert_eq!(
        pool.schedule_with_fixed_delay(sec(1), sec(1), bump(&ran))
            .map(drop),
        full
    );
    assert_eq!(pool.execute(bump(&ran)), full);
    assert_eq!(pool.submit(bump(&ran)).map(drop), full);
    assert_eq!(pool.queue_len(), 2);
    let stats = pool.stats();
    assert_eq!((stats.task_count, stats.rejected_count), (2, 6));

    // Cancelling makes room (remove_on_cancel is on by default).
    assert!(first.cancel());
    assert_eq!(pool.queue_len(), 1);
    let third = pool.schedule(sec(10), || 3).unwrap();
    assert_eq!(pool.submit(|| ()).map(drop), full);
    clock.advance(sec(10));
    assert_eq!(third.get().unwrap(), 3);
    let stats = pool.stats();
    assert_eq!((stats.task_count, stats.rejected_count), (3, 7));
    assert_eq!(load(&ran), 1, "only the accepted periodic task ran");
    shutdown_now_and_wait(&pool);
}

#[test]
fn a_bound_of_zero_refuses_everything() {
    let (_clock, pool) = bounded_pool(0, RejectionPolicy::Abort);
    assert_eq!(pool.submit(|| ()).map(drop), Err(ScheduleError::QueueFull));
    assert_eq!(pool.execute(|| ()), Err(ScheduleError::QueueFull));
    let stats = pool.stats();
    assert_eq!(
        (stats.task_count, stats.rejected_count, stats.pool_size),
        (0, 2, 0)
    );
    shutdown_now_and_wait(&pool);
}

#[test]
fn room_frees_up_when_workers_take_due_tasks() {
    let (clock, pool) = bounded_pool(1, RejectionPolicy::Abort);
    let first = pool.schedule(sec(5), || 1).unwrap();
    assert_eq!(
        pool.schedule(sec(5), || 2).map(drop),
        Err(ScheduleError::QueueFull)
    );
    clock.advance(sec(5));
    assert_eq!(first.get().unwrap(), 1);
    assert!(wait_until(|| pool.queue_len() == 0));
    let second = pool.schedule(sec(5), || 2).unwrap();
    clock.advance(sec(5));
    assert_eq!(second.get().unwrap(), 2);
    assert_eq!(pool.stats().rejected_count, 1);
    shutdown_now_and_wait(&pool);
}

#[test]
fn cancelled_tasks_left_in_the_queue_count_against_the_bound_until_purged() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .max_queued_tasks(1)
        .remove_on_cancel(false)
        .build();
    let a = pool.schedule(sec(5), || ()).unwrap();
    assert!(a.cancel());
    assert_eq!(pool.queue_len(), 1);
    assert_eq!(
        pool.schedule(sec(5), || ()).map(drop),
        Err(ScheduleError::QueueFull)
    );
    assert_eq!(pool.purge(), 1);
    let b = pool.schedule(sec(5), || "b").unwrap();
    clock.advance(sec(5));
    assert_eq!(b.get().unwrap(), "b");
    assert_eq!(pool.stats().rejected_count, 1);
    shutdown_now_and_wait(&pool);
}

#[test]
fn caller_runs_runs_at_once_on_the_calling_thread_ignoring_the_delay() {
    let (_clock, pool) = bounded_pool(1, RejectionPolicy::CallerRuns);
    let queued = pool.schedule(sec(10), || ()).unwrap();
    let me = thread::current().id();

    let fut = pool
        .schedule(Duration::from_secs(3600), || thread::current().id())
        .unwrap();
    assert!(fut.is_done() && !fut.is_cancelled(), "ran before returning");
    assert_eq!(fut.get().unwrap(), me);

    let ran_on = Arc::new(std::sync::Mutex::new(None));
    let r = ran_on.clone();
    pool.execute(move || *r.lock().unwrap() = Some(thread::current().id()))
        .unwrap();
    assert_eq!(*ran_on.lock().unwrap(), Some(me));

    let fut = pool.submit(|| 5).unwrap();
    assert_eq!(fut.get().unwrap(), 5);

    assert_eq!(pool.queue_len(), 1);
    assert!(!queued.is_done());
    let stats = pool.stats();
    assert_eq!(stats.rejected_count, 3);
    assert_eq!(stats.task_count, 1, "caller-run submissions are refusals");
    assert_eq!(stats.completed_task_count, 0, "caller runs are not counted");
    shutdown_now_and_wait(&pool);
}

#[test]
fn caller_runs_puts_a_panic_into_the_future_not_the_caller() {
    let (_clock, pool) = bounded_pool(1, RejectionPolicy::CallerRuns);
    pool.schedule(sec(10), || ()).unwrap();
    let fut = pool
        .schedule(sec(1), || -> u32 { panic!("caller boom") })
        .unwrap();
    assert!(fut.is_done());
    let err = fut.get().unwrap_err();
    assert!(err.is_panicked());
    assert_eq!(err.panic_message(), Some("caller boom"));
    // execute has no future: the panic is contained all the same.
    pool.execute(|| panic!("execute boom")).unwrap();
    let stats = pool.stats();
    assert_eq!(stats.rejected_count, 2);
    assert_eq!(stats.completed_task_count, 0);
    shutdown_now_and_wait(&pool);
}

#[test]
fn caller_runs_runs_a_periodic_task_once_then_the_pool_takes_over() {
    let (clock, pool) = bounded_pool(1, RejectionPolicy::CallerRuns);
    let filler = pool.schedule(sec(10), || ()).unwrap();
    let me = thread::current().id();
    let (tx, rx) = mpsc::channel();
    let periodic = pool
        .schedule_at_fixed_rate(Duration::ZERO, sec(1), move || {
            tx.send(thread::current()).unwrap();
        })
        .unwrap();
    let first = rx.try_recv().expect("the first run happened on the caller");
    assert_eq!(first.id(), me);
    assert!(!periodic.is_done());
    // Its next run was re-queued although the queue was full (re-queues are unbounded).
    assert_eq!(pool.queue_len(), 2);

    clock.advance(sec(1));
    let second = rx.recv_timeout(BOUND).unwrap();
    assert_ne!(second.id(), me);
    assert!(second.name().unwrap().starts_with("rejection-worker-"));
    assert!(periodic.cancel());
    assert!(is_cancelled(periodic));
    let stats = pool.stats();
    assert_eq!((stats.task_count, stats.rejected_count), (1, 1));
    assert!(wait_until(|| pool.stats().completed_task_count == 1));
    assert!(!filler.is_done());
    shutdown_now_and_wait(&pool);
}

#[test]
fn discard_returns_a_future_that_is_already_cancelled() {
    let (clock, pool) = bounded_pool(1, RejectionPolicy::Discard);
    let queued = pool.schedule(sec(10), || "kept").unwrap();
    let ran = counter();

    let dropped_closure = Arc::new(());
    let witness = dropped_closure.clone();
    let r = ran.clone();
    let once = pool
        .schedule(sec(1), move || {
            let _keep = &witness;
            r.fetch_add(1, Ordering::SeqCst)
        })
        .unwrap();
    assert!(once.is_done() && once.is_cancelled());
    assert_eq!(Arc::strong_count(&dropped_closure), 1, "closure dropped");

    let periodic = pool
        .schedule_with_fixed_delay(sec(1), sec(1), bump(&ran))
        .unwrap();
    assert!(periodic.is_done() && periodic.is_cancelled());
    assert!(!periodic.cancel(), "already cancelled");
    pool.execute(bump(&ran)).unwrap();
    let submitted = pool.submit(bump(&ran)).unwrap();
    assert!(submitted.is_cancelled());

    assert_eq!(pool.queue_len(), 1);
    clock.advance(sec(20));
    assert_eq!(queued.get().unwrap(), "kept");
    assert!(is_cancelled(once) && is_cancelled(periodic) && is_cancelled(submitted));
    assert_eq!(load(&ran), 0);
    let stats = pool.stats();
    assert_eq!((stats.task_count, stats.rejected_count), (1, 4));
    shutdown_now_and_wait(&pool);
}

#[test]
fn precedence_is_zero_period_then_shutdown_then_queue_full() {
    for policy in [
        RejectionPolicy::Abort,
        RejectionPolicy::CallerRuns,
        RejectionPolicy::Discard,
    ] {
        let (_clock, pool) = bounded_pool(1, policy);
        let ran = counter();
        pool.schedule(sec(10), || ()).unwrap();

        // Full and running: a zero period is an argument error, whatever the policy.
        assert_eq!(
            pool.schedule_at_fixed_rate(sec(1), Duration::ZERO, bump(&ran))
                .map(drop),
            Err(ScheduleError::ZeroPeriod)
        );
        assert_eq!(
            pool.schedule_with_fixed_delay(sec(1), Duration::ZERO, bump(&ran))
                .map(drop),
            Err(ScheduleError::ZeroPeriod)
        );
        assert_eq!(pool.stats().rejected_count, 0, "{policy:?}");

        pool.shutdown();
        assert_eq!(
            pool.queue_len(),
            1,
            "the delayed task is kept, the queue stays full"
        );
        // Full and shut down: Shutdown, for every policy, and nothing runs.
        assert_eq!(
            pool.schedule(sec(1), bump(&ran)).map(drop),
            Err(ScheduleError::Shutdown),
            "{policy:?}"
        );
        assert_eq!(pool.execute(bump(&ran)), Err(ScheduleError::Shutdown));
        assert_eq!(
            pool.schedule_at_fixed_rate(sec(1), sec(1), bump(&ran))
                .map(drop),
            Err(ScheduleError::Shutdown)
        );
        assert_eq!(
            pool.schedule_with_fixed_delay(sec(1), Duration::ZERO, bump(&ran))
                .map(drop),
            Err(ScheduleError::ZeroPeriod)
        );
        assert_eq!(load(&ran), 0, "{policy:?}");
        let stats = pool.stats();
        assert_eq!(
            (stats.task_count, stats.rejected_count),
            (1, 3),
            "{policy:?}"
        );
        shutdown_now_and_wait(&pool);
    }
}

#[test]
fn queue_full_comes_only_after_the_argument_check_with_abort() {
    let (_clock, pool) = bounded_pool(1, RejectionPolicy::Abort);
    pool.schedule(sec(10), || ()).unwrap();
    assert_eq!(
        pool.schedule_at_fixed_rate(sec(1), Duration::ZERO, || ())
            .map(drop),
        Err(ScheduleError::ZeroPeriod)
    );
    assert_eq!(
        pool.schedule_at_fixed_rate(sec(1), sec(1), || ()).map(drop),
        Err(ScheduleError::QueueFull)
    );
    assert_eq!(pool.stats().rejected_count, 1);
    shutdown_now_and_wait(&pool);
}

#[test]
fn periodic_requeues_are_not_bounded() {
    let (clock, pool) = bounded_pool(2, RejectionPolicy::Abort);
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (ran_tx, ran_rx) = mpsc::channel::<u32>();
    let mut run = 0;
    // The first run blocks until the test has filled the queue behind it.
    let periodic = pool
        .schedule_at_fixed_rate(Duration::ZERO, sec(1), move || {
            run += 1;
            ran_tx.send(run).unwrap();
            if run == 1 {
                release_rx.recv_timeout(BOUND).unwrap();
            }
        })
        .unwrap();
    assert_eq!(ran_rx.recv_timeout(BOUND).unwrap(), 1);
    assert_eq!(pool.queue_len(), 0);
    let a = pool.schedule(sec(60), || ()).unwrap();
    let b = pool.schedule(sec(60), || ()).unwrap();
    assert_eq!(pool.submit(|| ()).map(drop), Err(ScheduleError::QueueFull));
    release_tx.send(()).unwrap();

    // The run ends and re-queues its next run past the bound.
    assert!(wait_until(|| pool.queue_len() == 3));
    for expected in 2..=4 {
        clock.advance(sec(1));
        assert_eq!(ran_rx.recv_timeout(BOUND).unwrap(), expected);
        assert!(wait_until(|| pool.queue_len() == 3));
    }
    assert!(!periodic.is_done());
    assert_eq!(pool.submit(|| ()).map(drop), Err(ScheduleError::QueueFull));
    assert!(periodic.cancel() && a.cancel() && b.cancel());
    assert_eq!(pool.queue_len(), 0);
    let stats = pool.stats();
    assert_eq!((stats.task_count, stats.rejected_count), (3, 2));
    shutdown_now_and_wait(&pool);
}

#[test]
fn every_refusal_is_counted_whatever_the_policy() {
    let mut expected_rejected = 0;
    for policy in [
        RejectionPolicy::Abort,
        RejectionPolicy::CallerRuns,
        RejectionPolicy::Discard,
    ] {
        let (_clock, pool) = bounded_pool(3, policy);
        for _ in 0..3 {
            pool.schedule(sec(10), || ()).unwrap();
        }
        for i in 0..5 {
            let result = pool.schedule(sec(10), move || i);
            match policy {
                RejectionPolicy::Abort => {
                    assert_eq!(result.map(drop), Err(ScheduleError::QueueFull))
                }
                RejectionPolicy::CallerRuns => assert_eq!(result.unwrap().get().unwrap(), i),
                RejectionPolicy::Discard => assert!(is_cancelled(result.unwrap())),
                other => unreachable!("not in the list above: {other:?}"),
            }
        }
        let stats = pool.stats();
        assert_eq!(stats.task_count, 3, "{policy:?}");
        assert_eq!(stats.rejected_count, 5, "{policy:?}");
        assert_eq!(stats.queued, 3, "{policy:?}");
        expected_rejected += stats.rejected_count;
        shutdown_now_and_wait(&pool);
    }
    assert_eq!(expected_rejected, 15);
}

#[test]
fn rejection_policy_default_is_abort() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock)
        .max_queued_tasks(1)
        .build();
    pool.schedule(sec(1), || ()).unwrap();
    assert_eq!(
        pool.schedule(sec(1), || ()).map(drop),
        Err(ScheduleError::QueueFull)
    );
    assert_eq!(RejectionPolicy::default(), RejectionPolicy::Abort);
    shutdown_now_and_wait(&pool);
}
