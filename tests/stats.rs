//! `PoolStats`: every field, counted exactly.
//!
//! Counters are bumped by a worker before its task's future completes, so a test that has
//! seen a future complete reads the run's counts at once; gauges and counts that other
//! workers may still be changing are waited for (bounded), and once the pool is quiet, or
//! has terminated, every count is asserted equal.

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Barrier};
use std::time::Duration;

use schedpool::{
    ManualClock, PoolStats, RejectionPolicy, ScheduleError, ScheduledFuture,
    ScheduledThreadPoolExecutor, TaskError,
};

mod common;
use common::{bump, counter, load, manual_pool, sec, wait_until, Gate, BOUND};

/// Waits until the pool has finished `n` runs and no worker is between runs.
fn wait_completed(pool: &ScheduledThreadPoolExecutor, n: u64) {
    assert!(
        wait_until(|| {
            let s = pool.stats();
            s.completed_task_count >= n && s.active_count == 0
        }),
        "stats never reached {n} completed: {:?}",
        pool.stats()
    );
    assert_eq!(pool.stats().completed_task_count, n);
}

fn finish(pool: &ScheduledThreadPoolExecutor) -> PoolStats {
    common::shutdown_now_and_wait(pool);
    let s = pool.stats();
    assert_eq!((s.pool_size, s.active_count, s.queued), (0, 0, 0));
    s
}

#[test]
fn a_fresh_pool_has_zero_counters() {
    let (_clock, pool) = manual_pool(3);
    let s = pool.stats();
    assert_eq!(s.core_pool_size, 3);
    assert_eq!(
        (s.pool_size, s.active_count, s.largest_pool_size, s.queued),
        (0, 0, 0, 0)
    );
    assert_eq!(
        (
            s.task_count,
            s.completed_task_count,
            s.rejected_count,
            s.panicked_count
        ),
        (0, 0, 0, 0)
    );
    assert_eq!(s, pool.stats(), "a snapshot is plain data");
    let copy = s.clone();
    assert_eq!(format!("{copy:?}"), format!("{s:?}"));
    finish(&pool);
}

#[test]
fn task_count_counts_accepted_submissions_and_a_periodic_task_once() {
    let (clock, pool) = manual_pool(2);
    let runs = counter();
    pool.schedule(sec(1), || ()).unwrap();
    pool.schedule_at(clock.now() + sec(1), || ()).unwrap();
    let rate = pool
        .schedule_at_fixed_rate(sec(1), sec(1), bump(&runs))
        .unwrap();
    let delay = pool
        .schedule_with_fixed_delay(sec(1), sec(1), bump(&runs))
        .unwrap();
    pool.execute(|| ()).unwrap();
    pool.submit(|| ()).unwrap();
    assert_eq!(pool.stats().task_count, 6);

    // Argument errors are not submissions.
    assert_eq!(
        pool.schedule_at_fixed_rate(sec(1), Duration::ZERO, || ())
            .map(drop),
        Err(ScheduleError::ZeroPeriod)
    );
    assert_eq!(pool.stats().task_count, 6);

    // Execute and submit ran at once.
    wait_completed(&pool, 2);
    // Several periodic runs do not add to the task count.
    for round in 1..=3 {
        // Before the first advance the two one-shots are queued too.
        let queued = if round == 1 { 4 } else { 2 };
        assert!(wait_until(|| {
            let s = pool.stats();
            s.queued == queued && s.active_count == 0
        }));
        clock.advance(sec(1));
        assert!(wait_until(|| load(&runs) == 2 * round));
    }
    assert!(rate.cancel() && delay.cancel());
    assert_eq!(pool.stats().task_count, 6);

    pool.shutdown();
    assert_eq!(pool.submit(|| ()).map(drop), Err(ScheduleError::Shutdown));
    let s = finish(&pool);
    assert_eq!(s.task_count, 6);
    assert_eq!(s.rejected_count, 1);
    assert_eq!(s.completed_task_count, 4 + 6);
}

#[test]
fn completed_task_count_counts_each_periodic_run() {
    let (clock, pool) = manual_pool(1);
    let runs = counter();
    let rate = pool
        .schedule_at_fixed_rate(Duration::ZERO, sec(1), bump(&runs))
        .unwrap();
    assert!(wait_until(|| load(&runs) == 1));
    wait_completed(&pool, 1);
    for n in 2..=5 {
        clock.advance(sec(1));
        assert!(wait_until(|| load(&runs) == n));
        wait_completed(&pool, n as u64);
    }
    // Fixed rate catches up: five missed periods give five back-to-back runs.
    clock.advance(sec(5));
    assert!(wait_until(|| load(&runs) == 10));
    wait_completed(&pool, 10);
    assert!(rate.cancel());
    let s = finish(&pool);
    assert_eq!(
        (s.completed_task_count, s.task_count, s.panicked_count),
        (10, 1, 0)
    );
}

#[test]
fn panicked_runs_count_as_completed_and_as_panicked() {
    let (clock, pool) = manual_pool(1);
    let once = pool.submit(|| -> u8 { panic!("one-shot boom") }).unwrap();
    assert!(once.get().unwrap_err().is_panicked());
    wait_completed(&pool, 1);
    assert_eq!(pool.stats().panicked_count, 1);

    let runs = counter();
    let r = runs.clone();
    let periodic = pool
        .schedule_with_fixed_delay(Duration::ZERO, sec(1), move || {
            if r.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                panic!("third run boom");
            }
        })
        .unwrap();
    for done in 1..3 {
        // Run `done` has ended and the next one is queued (fixed delay: from its end).
        assert!(wait_until(|| {
            let s = pool.stats();
            load(&runs) == done && s.queued == 1 && s.active_count == 0
        }));
        clock.advance(sec(1));
    }
    assert_eq!(
        periodic.get().unwrap_err().panic_message(),
        Some("third run boom")
    );
    wait_completed(&pool, 4);
    // Not run again after the panic.
    clock.advance(sec(10));
    let ok = pool.submit(|| 1).unwrap();
    assert_eq!(ok.get().unwrap(), 1);
    wait_completed(&pool, 5);
    let s = finish(&pool);
    assert_eq!(
        (s.completed_task_count, s.panicked_count, s.task_count),
        (5, 2, 3)
    );
}

#[test]
fn caller_runs_and_pending_task_runs_are_not_completed_runs() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .max_queued_tasks(1)
        .rejection_policy(RejectionPolicy::CallerRuns)
        .build();
    let queued = pool.schedule(sec(10), || "pending").unwrap();
    let ran_by_caller = pool.schedule(sec(10), || "caller").unwrap();
    assert_eq!(ran_by_caller.get().unwrap(), "caller");
    let s = pool.stats();
    assert_eq!(
        (s.task_count, s.rejected_count, s.completed_task_count),
        (1, 1, 0)
    );

    let pending = pool.shutdown_now();
    assert_eq!(pending.len(), 1);
    for p in pending {
        p.run();
    }
    assert_eq!(queued.get().unwrap(), "pending");
    let s = finish(&pool);
    assert_eq!(
        (s.task_count, s.rejected_count, s.completed_task_count),
        (1, 1, 0)
    );
    assert_eq!(s.panicked_count, 0);
}

#[test]
fn rejected_count_counts_every_refusal_but_not_zero_period() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .max_queued_tasks(1)
        .build();
    pool.schedule(sec(10), || ()).unwrap();
    for _ in 0..4 {
        assert_eq!(pool.submit(|| ()).map(drop), Err(ScheduleError::QueueFull));
    }
    for _ in 0..3 {
        assert_eq!(
            pool.schedule_with_fixed_delay(sec(1), Duration::ZERO, || ())
                .map(drop),
            Err(ScheduleError::ZeroPeriod)
        );
    }
    assert_eq!(pool.stats().rejected_count, 4);
    pool.shutdown();
    for _ in 0..2 {
        assert_eq!(pool.execute(|| ()), Err(ScheduleError::Shutdown));
    }
    let s = pool.stats();
    assert_eq!((s.rejected_count, s.task_count), (6, 1));
    clock.advance(sec(10));
    assert!(pool.await_termination(BOUND));
    assert_eq!(pool.stats().rejected_count, 6);
}

#[test]
fn queued_counts_cancelled_tasks_until_they_are_removed() {
    let (_clock, pool) = manual_pool(1);
    let futs: Vec<_> = (0..4)
        .map(|_| pool.schedule(sec(10), || ()).unwrap())
        .collect();
    assert_eq!(pool.stats().queued, 4);
    assert!(futs[0].cancel());
    assert_eq!(
        pool.stats().queued,
        3,
        "remove_on_cancel (default) removes at once"
    );

    pool.set_remove_on_cancel(false);
    assert!(futs[1].cancel() && futs[2].cancel());
    assert_eq!(pool.stats().queued, 3, "cancelled but still queued");
    assert_eq!(pool.queue_len(), 3);
    assert_eq!(pool.purge(), 2);
    assert_eq!(pool.stats().queued, 1);
    assert_eq!(pool.purge(), 0);
    finish(&pool);
}

#[test]
fn active_count_and_pool_size_while_tasks_block() {
    let (_clock, pool) = manual_pool(3);
    let gate = Gate::default();
    let barrier = Arc::new(Barrier::new(3));
    let blockers: Vec<ScheduledFuture<()>> = (0..2)
        .map(|_| {
            let (gate, barrier) = (gate.clone(), barrier.clone());
            pool.submit(move || {
                barrier.wait();
                gate.wait();
            })
            .unwrap()
        })
        .collect();
    barrier.wait(); // both tasks are running now
    let s = pool.stats();
    assert_eq!((s.active_count, s.pool_size, s.queued), (2, 2, 0));
    assert_eq!(s.completed_task_count, 0);
    gate.open();
    for b in blockers {
        b.get().unwrap();
    }
    wait_completed(&pool, 2);
    let s = pool.stats();
    assert_eq!(
        (s.active_count, s.pool_size, s.largest_pool_size),
        (0, 2, 2)
    );
    finish(&pool);
}

#[test]
fn active_count_is_seen_from_inside_the_running_task() {
    let (_clock, pool) = manual_pool(2);
    let inner = pool.clone();
    let (tx, rx) = mpsc::channel();
    let gate = Gate::default();
    let g = gate.clone();
    let fut = pool
        .submit(move || {
            tx.send(inner.stats()).unwrap();
            g.wait();
        })
        .unwrap();
    let seen = rx.recv_timeout(BOUND).unwrap();
    assert_eq!((seen.active_count, seen.pool_size), (1, 1));
    assert_eq!(pool.stats().active_count, 1);
    gate.open();
    fut.get().unwrap();
    wait_completed(&pool, 1);
    finish(&pool);
}

/// Every way a task is cancelled counts it once: a queued task removed at once, one left
/// queued (remove-on-cancel off) and purged later, a running one-shot interrupted, and a
/// periodic task that shutdown cancels.
#[test]
fn cancelled_count_counts_each_cancelled_task_once_whichever_way() {
    let (_clock, pool) = manual_pool(1);
    let cancelled = |pool: &ScheduledThreadPoolExecutor| pool.stats().cancelled_count;
    let removed = pool.schedule(sec(10), || ()).unwrap();
    assert!(removed.cancel() && !removed.cancel());
    assert_eq!(cancelled(&pool), 1, "removed at once (remove-on-cancel)");

    pool.set_remove_on_cancel(false);
    let left = pool.schedule(sec(10), || ()).unwrap();
    assert!(left.cancel() && !left.cancel());
    assert_eq!(cancelled(&pool), 2, "left in the queue");
    assert_eq!(pool.purge(), 1);
    assert_eq!(cancelled(&pool), 2, "a purge is no second cancel");
    pool.set_remove_on_cancel(true);

    let (gate, started) = (Gate::default(), counter());
    let (g, s) = (gate.clone(), started.clone());
    let running = pool
        .submit(move || {
            s.fetch_add(1, Ordering::SeqCst);
            g.wait();
        })
        .unwrap();
    assert!(wait_until(|| load(&started) == 1));
    assert!(!running.cancel(), "a running one-shot is not cancelled");
    assert!(running.interrupt() && !running.interrupt());
    assert_eq!(cancelled(&pool), 3, "interrupted while it ran");
    gate.open();

    let periodic = pool.schedule_at_fixed_rate(sec(5), sec(5), || ()).unwrap();
    pool.shutdown();
    assert!(periodic.is_cancelled());
    assert_eq!(cancelled(&pool), 4, "cancelled by shutdown");
    assert_eq!(finish(&pool).cancelled_count, 4);
}

#[test]
fn a_periodic_run_in_progress_when_cancelled_counts_when_it_finishes() {
    let (_clock, pool) = manual_pool(1);
    let (gate, started) = (Gate::default(), counter());
    let (g, s) = (gate.clone(), started.clone());
    let periodic = pool
        .schedule_at_fixed_rate(Duration::ZERO, sec(1), move || {
            s.fetch_add(1, Ordering::SeqCst);
            g.wait();
        })
        .unwrap();
    assert!(wait_until(|| load(&started) == 1));
    assert!(
        periodic.cancel(),
        "a running periodic task can be cancelled"
    );
    assert!(periodic.is_cancelled() && periodic.is_done());
    assert_eq!(pool.stats().completed_task_count, 0);
    assert_eq!(pool.stats().active_count, 1);
    gate.open();
    wait_completed(&pool, 1);
    assert!(matches!(periodic.get(), Err(TaskError::Cancelled)));
    let s = finish(&pool);
    assert_eq!((s.completed_task_count, s.task_count), (1, 1));
}

#[test]
fn counters_are_final_and_pool_size_zero_after_await_termination() {
    let (clock, pool) = manual_pool(2);
    let runs = counter();
    for i in 0..6 {
        pool.schedule(sec(i % 3), bump(&runs)).unwrap();
    }
    pool.submit(|| -> u8 { panic!("counted") }).unwrap();
    pool.shutdown();
    assert_eq!(pool.submit(|| ()).map(drop), Err(ScheduleError::Shutdown));
    clock.advance(sec(2));
    assert!(pool.await_termination(BOUND));
    let s = pool.stats();
    assert_eq!(load(&runs), 6);
    assert_eq!(s.pool_size, 0);
    assert_eq!(s.active_count, 0);
    assert_eq!(s.queued, 0);
    assert_eq!(s.task_count, 7);
    assert_eq!(s.completed_task_count, 7);
    assert_eq!(s.rejected_count, 1);
    assert_eq!(s.panicked_count, 1);
    assert_eq!(s.largest_pool_size, 2);
    assert_eq!(s.core_pool_size, 2);
    // Nothing changes afterwards.
    assert_eq!(pool.stats(), s);
}

#[test]
fn core_pool_size_field_follows_set_core_pool_size() {
    let (_clock, pool) = manual_pool(2);
    pool.set_core_pool_size(5);
    assert_eq!(pool.stats().core_pool_size, 5);
    pool.set_core_pool_size(1);
    assert_eq!(pool.stats().core_pool_size, 1);
    finish(&pool);
}

#[test]
fn a_submission_refused_for_want_of_a_thread_is_not_counted_as_accepted() {
    // No thread can be created with this stack size: the task is refused.
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .thread_stack_size(1 << 60)
        .build();
    assert!(matches!(
        pool.submit(|| ()).map(drop),
        Err(ScheduleError::ThreadSpawn(_))
    ));
    let s = pool.stats();
    assert_eq!((s.pool_size, s.queued), (0, 0));
    assert_eq!(s.rejected_count, 1);
    assert_eq!(
        s.task_count, 0,
        "a refused submission is not an accepted one"
    );
    pool.shutdown();
    assert!(pool.await_termination(BOUND));
}

// ---------------------------------------------------------------------------------------
// scheduled_tasks: the snapshot of the queue
// ---------------------------------------------------------------------------------------

#[test]
fn scheduled_tasks_shows_names_kinds_deadlines_runs_and_last_outcomes() {
    use schedpool::{LastRun, Next, OnPanic, Periodic, TaskKind};
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .remove_on_cancel(false)
        .build();
    let t0 = clock.now();
    let s = Duration::from_secs;
    pool.schedule_periodic(Periodic::at_fixed_rate(s(10)).name("ok"), || ())
        .unwrap();
    pool.schedule_periodic(
        Periodic::at_fixed_rate(s(10))
            .name("panics")
            .on_panic(OnPanic::Continue),
        || panic!("every time"),
    )
    .unwrap();
    pool.schedule_fallible(Periodic::with_fixed_delay(s(20)).name("fails"), |_| {
        Err::<Next, _>("down")
    })
    .unwrap();
    let cancelled = pool.schedule(s(5), || ()).unwrap();
    assert!(cancelled.cancel());
    pool.schedule(s(30), || ()).unwrap();
    assert!(
        pool.wait_idle(BOUND),
        "the three periodic tasks ran once, at 0"
    );

    let tasks = pool.scheduled_tasks();
    let view: Vec<_> = tasks
        .iter()
        .map(|t| {
            (
                t.name.as_deref(),
                t.kind,
                t.deadline - t0,
                t.runs,
                t.last_run,
                t.cancelled,
            )
        })
        .collect();
    assert_eq!(
        view,
        [
            (None, TaskKind::Once, s(5), 0, None, true),
            (
                Some("ok"),
                TaskKind::FixedRate,
                s(10),
                1,
                Some(LastRun::Completed),
                false
            ),
            (
                Some("panics"),
                TaskKind::FixedRate,
                s(10),
                1,
                Some(LastRun::Panicked),
                false
            ),
            (
                Some("fails"),
                TaskKind::FixedDelay,
                s(20),
                1,
                Some(LastRun::Failed),
                false
            ),
            (None, TaskKind::Once, s(30), 0, None, false),
        ],
        "earliest first; equal deadlines in submission order"
    );
    let now = clock.now();
    assert!(
        tasks.iter().all(|t| t.due_in == t.deadline - now),
        "due_in is the time left at the snapshot"
    );
    drop(pool.shutdown_now());
    assert!(pool.scheduled_tasks().is_empty());
}

/// Due tasks waiting for a busy worker sit in a shard's ready lane; `scheduled_tasks`
/// and `queue_len` count them like any queued task (and the list shows the busy one too).
#[test]
fn scheduled_tasks_lists_due_tasks_waiting_for_a_busy_worker() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let gate = Gate::default();
    let started = Arc::new(Barrier::new(2));
    let (g, s) = (gate.clone(), started.clone());
    let busy = pool
        .submit(move || {
            s.wait();
            g.wait();
        })
        .unwrap();
    started.wait(); // the only worker is busy
    let due: Vec<_> = (0..3)
        .map(|_| pool.named("due").submit(|| ()).unwrap())
        .collect();
    let listed = pool.scheduled_tasks();
    assert_eq!(
        listed.len(),
        4,
        "the running one and the three due: {listed:?}"
    );
    assert!(listed[0].running && listed[0].name.is_none(), "{listed:?}");
    assert!(listed[1..]
        .iter()
        .all(|t| t.name.as_deref() == Some("due") && !t.running));
    assert_eq!(pool.queue_len(), 3);
    gate.open();
    busy.get().unwrap();
    for f in due {
        assert!(f.wait_timeout(BOUND));
    }
    pool.close();
}
