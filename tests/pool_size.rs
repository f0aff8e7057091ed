//! Pool size: lazy thread start, `set_core_pool_size` (grow and shrink),
//! `prestart_core_thread` / `prestart_all_core_threads`, `largest_pool_size`,
//! `allow_core_thread_timeout` with `keep_alive`, and thread names.
//!
//! `keep_alive` is real time, so tests about idle workers wait for `pool_size` to drop
//! with a bounded wait, and never assert how fast it drops.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use schedpool::{ManualClock, ScheduledFuture, ScheduledThreadPoolExecutor};

mod common;
use common::{counter, load, manual_pool, sec, wait_until, Gate, BOUND};

/// Submits a task that signals `started` and blocks on `gate`.
fn blocker(
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

fn pool_size(pool: &ScheduledThreadPoolExecutor) -> usize {
    pool.stats().pool_size
}

fn finish(pool: &ScheduledThreadPoolExecutor) {
    common::shutdown_now_and_wait(pool);
    assert_eq!(pool_size(pool), 0);
}

#[test]
fn threads_start_lazily_one_per_submission_up_to_the_core_size() {
    let (_clock, pool) = manual_pool(3);
    assert_eq!(pool.core_pool_size(), 3);
    assert_eq!(pool_size(&pool), 0);
    for expected in [1, 2, 3, 3, 3] {
        pool.schedule(sec(10), || ()).unwrap();
        assert_eq!(pool_size(&pool), expected);
    }
    let stats = pool.stats();
    assert_eq!((stats.largest_pool_size, stats.core_pool_size), (3, 3));
    finish(&pool);
    assert_eq!(pool.stats().largest_pool_size, 3);
}

#[test]
fn a_core_size_of_zero_still_runs_tasks_on_one_thread() {
    let (clock, pool) = manual_pool(0);
    let futs: Vec<_> = (0..3)
        .map(|i| pool.schedule(sec(1), move || i).unwrap())
        .collect();
    assert_eq!(pool_size(&pool), 1);
    clock.advance(sec(1));
    let values: Vec<i32> = futs.into_iter().map(|f| f.get().unwrap()).collect();
    assert_eq!(values, vec![0, 1, 2]);
    assert_eq!(pool.stats().largest_pool_size, 1);
    finish(&pool);
}

#[test]
fn prestart_core_thread_and_prestart_all_core_threads() {
    let (_clock, pool) = manual_pool(3);
    assert!(pool.prestart_core_thread());
    assert_eq!(pool_size(&pool), 1);
    assert_eq!(pool.prestart_all_core_threads(), 2);
    assert_eq!(pool_size(&pool), 3);
    assert!(!pool.prestart_core_thread());
    assert_eq!(pool.prestart_all_core_threads(), 0);
    assert_eq!(pool.stats().largest_pool_size, 3);
    // A submission to a full core set starts nothing more.
    pool.schedule(sec(1), || ()).unwrap();
    assert_eq!(pool_size(&pool), 3);
    pool.shutdown();
    assert!(!pool.prestart_core_thread());
    assert_eq!(pool.prestart_all_core_threads(), 0);
    finish(&pool);
}

#[test]
fn prestart_with_a_core_size_of_zero_starts_nothing() {
    let (_clock, pool) = manual_pool(0);
    assert!(!pool.prestart_core_thread());
    assert_eq!(pool.prestart_all_core_threads(), 0);
    assert_eq!(pool_size(&pool), 0);
    finish(&pool);
}

#[test]
fn prestarted_threads_run_the_start_hook_and_idle_core_threads_stay() {
    let starts = counter();
    let s = starts.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .keep_alive(Duration::from_millis(1))
        .on_thread_start(move || {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    assert_eq!(pool.prestart_all_core_threads(), 2);
    assert!(wait_until(|| load(&starts) == 2));
    // Core threads do not time out by default: idle for many times keep_alive, both
    // are still there.
    thread::sleep(Duration::from_millis(30));
    assert_eq!(pool_size(&pool), 2);
    let fut = pool.submit(|| ()).unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(pool_size(&pool), 2);
    assert_eq!(load(&starts), 2);
    finish(&pool);
}

#[test]
fn growing_the_core_size_starts_threads_for_queued_tasks() {
    let (_clock, pool) = manual_pool(1);
    let (gate, started) = (Gate::default(), counter());
    let first = blocker(&pool, &gate, &started);
    assert!(wait_until(|| load(&started) == 1));
    // The only worker is busy: these wait in the queue.
    let waiting: Vec<_> = (0..2).map(|i| pool.submit(move || i).unwrap()).collect();
    assert_eq!(pool.queue_len(), 2);
    assert_eq!(pool_size(&pool), 1);

    pool.set_core_pool_size(3);
    assert_eq!(pool.core_pool_size(), 3);
    assert_eq!(pool.stats().core_pool_size, 3);
    // New threads run them while the first worker is still blocked.
    for (i, f) in waiting.into_iter().enumerate() {
        assert!(f.wait_timeout(BOUND));
        assert_eq!(f.get().unwrap(), i as i32);
    }
    assert!(!first.is_done());
    assert_eq!(pool_size(&pool), 3);
    assert_eq!(pool.stats().largest_pool_size, 3);
    gate.open();
    first.get().unwrap();
    finish(&pool);
}

#[test]
fn growing_the_core_size_with_an_empty_queue_starts_threads_on_demand() {
    let (_clock, pool) = manual_pool(1);
    pool.prestart_all_core_threads();
    pool.set_core_pool_size(4);
    assert_eq!(pool_size(&pool), 1, "no queued task needs a new thread");
    let (gate, started) = (Gate::default(), counter());
    let blockers: Vec<_> = (0..4).map(|_| blocker(&pool, &gate, &started)).collect();
    assert!(wait_until(|| load(&started) == 4), "four tasks run at once");
    assert_eq!(pool_size(&pool), 4);
    assert_eq!(pool.stats().active_count, 4);
    gate.open();
    for b in blockers {
        b.get().unwrap();
    }
    finish(&pool);
}

#[test]
fn surplus_workers_exit_after_shrinking() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(3)
        .keep_alive(Duration::from_millis(5))
        .build();
    assert_eq!(pool.prestart_all_core_threads(), 3);
    pool.set_core_pool_size(1);
    assert_eq!(pool.core_pool_size(), 1);
    assert!(wait_until(|| pool_size(&pool) == 1));
    // The remaining core worker still runs tasks.
    assert_eq!(pool.submit(|| 9).unwrap().get().unwrap(), 9);
    assert_eq!(pool_size(&pool), 1);
    assert_eq!(pool.stats().largest_pool_size, 3);
    finish(&pool);
}

#[test]
fn busy_surplus_workers_exit_once_their_tasks_finish() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(3)
        .keep_alive(Duration::from_millis(5))
        .build();
    let (gate, started) = (Gate::default(), counter());
    let blockers: Vec<_> = (0..3).map(|_| blocker(&pool, &gate, &started)).collect();
    assert!(wait_until(|| load(&started) == 3));
    pool.set_core_pool_size(1);
    assert_eq!(pool_size(&pool), 3, "running workers are not stopped");
    gate.open();
    for b in blockers {
        b.get().unwrap();
    }
    assert!(wait_until(|| pool_size(&pool) == 1));
    assert_eq!(pool.stats().completed_task_count, 3);
    finish(&pool);
}

#[test]
fn idle_core_workers_time_out_when_allowed_and_the_pool_restarts_them() {
    let (starts, stops) = (counter(), counter());
    let (a, b) = (starts.clone(), stops.clone());
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .thread_name_prefix("timeout-")
        .keep_alive(Duration::from_millis(5))
        .allow_core_thread_timeout(true)
        .on_thread_start(move || {
            a.fetch_add(1, Ordering::SeqCst);
        })
        .on_thread_stop(move || {
            b.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    assert_eq!(pool.prestart_all_core_threads(), 2);
    assert!(wait_until(|| pool_size(&pool) == 0));
    assert!(wait_until(|| load(&stops) == 2));
    assert!(!pool.is_shutdown() && !pool.is_terminated());

    // On demand again: a new thread, with a new index.
    let name = pool
        .submit(|| thread::current().name().unwrap().to_owned())
        .unwrap()
        .get()
        .unwrap();
    assert_eq!(name, "timeout-2");
    assert!(wait_until(|| pool_size(&pool) == 0));
    assert!(wait_until(|| load(&starts) == 3 && load(&stops) == 3));
    assert_eq!(pool.stats().largest_pool_size, 2);
    finish(&pool);
}

#[test]
fn a_due_task_is_never_stranded_by_core_thread_timeout() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .clock(clock.clone())
        .keep_alive(Duration::from_millis(1))
        .allow_core_thread_timeout(true)
        .build();
    let futs: Vec<_> = (1..=5u64)
        .map(|i| pool.schedule(sec(i), move || i).unwrap())
        .collect();
    // Idle for far longer than keep_alive: one worker may leave, the last one stays
    // because tasks are queued.
    for _ in 0..20 {
        thread::sleep(Duration::from_millis(2));
        assert!(
            pool_size(&pool) >= 1,
            "a queued task was left without a worker"
        );
    }
    for (i, f) in futs.into_iter().enumerate() {
        clock.advance(sec(1));
        assert!(f.wait_timeout(BOUND), "task {i} stranded");
        assert_eq!(f.get().unwrap(), i as u64 + 1);
        thread::sleep(Duration::from_millis(2));
    }
    assert!(wait_until(|| pool_size(&pool) == 0));
    finish(&pool);
}

#[test]
fn real_time_tasks_outlive_a_tiny_keep_alive() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .keep_alive(Duration::from_nanos(1))
        .allow_core_thread_timeout(true)
        .build();
    let futs: Vec<_> = (1..=3u64)
        .map(|i| {
            pool.schedule(Duration::from_millis(10 * i), move || i)
                .unwrap()
        })
        .collect();
    for (i, f) in futs.into_iter().enumerate() {
        assert!(f.wait_timeout(BOUND), "task {i} stranded");
        assert_eq!(f.get().unwrap(), i as u64 + 1);
    }
    finish(&pool);
}

#[test]
fn largest_pool_size_is_a_high_water_mark() {
    let (_clock, pool) = manual_pool(2);
    assert_eq!(pool.stats().largest_pool_size, 0);
    let (gate, started) = (Gate::default(), counter());
    let bs: Vec<_> = (0..2).map(|_| blocker(&pool, &gate, &started)).collect();
    assert!(wait_until(|| load(&started) == 2));
    assert_eq!(pool.stats().largest_pool_size, 2);
    pool.set_core_pool_size(1);
    gate.open();
    for b in bs {
        b.get().unwrap();
    }
    assert!(wait_until(|| pool_size(&pool) == 1));
    assert_eq!(pool.stats().largest_pool_size, 2);
    pool.set_core_pool_size(3);
    pool.prestart_all_core_threads();
    assert_eq!(pool.stats().largest_pool_size, 3);
    finish(&pool);
    assert_eq!(pool.stats().largest_pool_size, 3);
}

#[test]
fn worker_names_use_the_prefix_and_indices_in_start_order() {
    let (_clock, pool) = {
        let clock = ManualClock::new();
        let pool = ScheduledThreadPoolExecutor::builder()
            .core_pool_size(3)
            .thread_name_prefix("sized-")
            .clock(clock.clone())
            .build();
        (clock, pool)
    };
    let (gate, started) = (Gate::default(), counter());
    let names: Vec<_> = (0..3)
        .map(|_| {
            let (gate, started) = (gate.clone(), started.clone());
            pool.submit(move || {
                started.fetch_add(1, Ordering::SeqCst);
                gate.wait();
                thread::current().name().unwrap().to_owned()
            })
            .unwrap()
        })
        .collect();
    assert!(wait_until(|| load(&started) == 3));
    gate.open();
    let names: BTreeSet<String> = names.into_iter().map(|f| f.get().unwrap()).collect();
    let expected: BTreeSet<String> = (0..3).map(|i| format!("sized-{i}")).collect();
    assert_eq!(names, expected);
    finish(&pool);
}

#[test]
fn with_a_core_size_of_zero_the_idle_thread_is_surplus_and_exits() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(0)
        .keep_alive(Duration::from_millis(5))
        .build();
    assert_eq!(pool.submit(|| 1).unwrap().get().unwrap(), 1);
    assert!(wait_until(|| pool_size(&pool) == 0));
    assert_eq!(pool.submit(|| 2).unwrap().get().unwrap(), 2);
    finish(&pool);
}

/// F3 of `queue/waiters.rs` on the real clock (what loom, without timeouts, cannot see):
/// two core workers on a keep-alive, whose keep-alives end at different times. The task
/// is due after the first worker's keep-alive ends and before the second's. Without the
/// hand-on, the first worker led the task, gave up at its keep-alive and left the second
/// asleep until its own keep-alive ended: the task ran `STAGGER - GAP` late (≈ 180 ms
/// here). With F4 the first worker does not lead at all, and with F3 its exit wakes the
/// second, which leads and runs the task on time. The bound is a third of that lateness,
/// generous for a loaded machine, never a speed target.
#[test]
fn a_worker_whose_keep_alive_ends_before_the_head_is_due_hands_the_head_on() {
    use std::time::Instant;
    const KEEP_ALIVE: Duration = Duration::from_millis(600);
    const STAGGER: Duration = Duration::from_millis(400); // the second worker's refresh
    const DELAY: Duration = Duration::from_millis(400);
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .allow_core_thread_timeout(true)
        .keep_alive(KEEP_ALIVE)
        .build();
    let started = Instant::now();
    assert_eq!(pool.prestart_all_core_threads(), 2); // both wait until ≈ KEEP_ALIVE
    thread::sleep(STAGGER);
    // One worker runs this and starts a new keep-alive, ending ≈ STAGGER + KEEP_ALIVE.
    pool.submit(|| ()).unwrap().get().unwrap();
    thread::sleep(Duration::from_millis(20));
    let due = Instant::now() + DELAY;
    // What the bug would cost must stay well above a loaded machine's wake-up delays
    // (valgrind runs this too): with less, the bound below says nothing.
    const MIN_STRANDED: Duration = Duration::from_millis(120);
    if due + MIN_STRANDED >= started + STAGGER + KEEP_ALIVE || due <= started + KEEP_ALIVE {
        // The machine stalled so long that the staging did not happen as planned: the
        // scenario this test is about was not set up, and nothing can be concluded.
        eprintln!(
            "skipped: the staging ran {:?} late",
            Instant::now() - started
        );
        pool.close();
        return;
    }
    let ran = pool
        .schedule(DELAY, Instant::now)
        .unwrap()
        .get()
        .expect("the task ran");
    assert!(ran >= due, "never before its deadline");
    let late = ran - due;
    let stranded = started + STAGGER + KEEP_ALIVE - due; // what the bug cost
    assert!(
        late < stranded / 3,
        "late by {late:?}: the head was stranded until a keep-alive ended (≈ {stranded:?})"
    );
    pool.close();
}

/// Lowering the core size restarts the keep-alive of a worker that was already waiting
/// one out (Java's `setCorePoolSize` interrupts idle workers, whose timed poll starts
/// over): no worker exits sooner than `keep_alive` after the change.
#[test]
fn lowering_the_core_size_restarts_a_running_keep_alive() {
    let keep_alive = std::time::Duration::from_millis(300);
    let pool = schedpool::ScheduledThreadPoolExecutor::builder()
        .core_pool_size(3)
        .keep_alive(keep_alive)
        .build();
    assert_eq!(pool.prestart_all_core_threads(), 3);
    // One worker is surplus: it waits out a keep-alive.
    pool.set_core_pool_size(2);
    // Part of that keep-alive passes (the assertion below holds however long this is; it
    // only gives the surplus worker time to be in its timed wait at the next change).
    thread::sleep(keep_alive / 3);
    let changed = std::time::Instant::now();
    pool.set_core_pool_size(1); // ... and starts a fresh one
    assert!(
        common::wait_until(|| pool.stats().pool_size < 3),
        "a surplus worker exits"
    );
    assert!(
        changed.elapsed() >= keep_alive,
        "a worker exited {:?} after the change, before its keep-alive of {keep_alive:?}",
        changed.elapsed()
    );
    assert!(common::wait_until(|| pool.stats().pool_size == 1));
    pool.shutdown();
    assert!(pool.await_termination(common::BOUND));
}
