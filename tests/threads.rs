//! Worker threads: names, lazy start, `core_pool_size(0)`, thread hooks, and what dropping
//! the last executor handle does to them.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use schedpool::{ManualClock, ScheduledThreadPoolExecutor};

mod common;
use common::{close, counter, outcome, sec, wait_for, BOUND};

/// Drops `pool` on another thread; fails if that takes longer than `BOUND`.
fn drop_bounded(pool: ScheduledThreadPoolExecutor) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        drop(pool);
        tx.send(()).unwrap();
    });
    rx.recv_timeout(BOUND).expect("dropping the handle blocked");
}

/// Waits, at most `BOUND`, until `cond` holds; `false` if it never did.
fn eventually(cond: impl Fn() -> bool) -> bool {
    let end = Instant::now() + BOUND;
    while !cond() {
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    true
}

fn thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_owned()
}

#[test]
fn concurrent_tasks_run_on_workers_named_prefix_and_index() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(3)
        .thread_name_prefix("named-")
        .build();
    let arrived = counter();
    let futs: Vec<_> = (0..3)
        .map(|_| {
            let arrived = arrived.clone();
            pool.submit(move || {
                arrived.fetch_add(1, Ordering::SeqCst);
                let together = eventually(|| arrived.load(Ordering::SeqCst) == 3);
                (thread_name(), together)
            })
            .unwrap()
        })
        .collect();
    let mut names: Vec<String> = futs
        .into_iter()
        .map(|f| {
            let (name, together) = outcome(f).unwrap();
            assert!(together, "three workers ran at once");
            name
        })
        .collect();
    names.sort();
    assert_eq!(names, ["named-0", "named-1", "named-2"]);
    close(&pool);
}

#[test]
fn worker_indices_follow_start_order() {
    let started = Arc::new(Mutex::new(Vec::new()));
    let s = started.clone();
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(4)
        .thread_name_prefix("order-")
        .clock(clock)
        .on_thread_start(move || s.lock().unwrap().push(thread_name()))
        .build();
    for i in 0..4 {
        pool.schedule(sec(60), || ()).unwrap();
        wait_for("the new worker started", || {
            started.lock().unwrap().len() == i + 1
        });
    }
    assert_eq!(
        *started.lock().unwrap(),
        ["order-0", "order-1", "order-2", "order-3"]
    );
    drop(pool.shutdown_now());
    assert!(pool.await_termination(BOUND));
}

#[test]
fn default_names_start_with_schedpool_worker() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let name = outcome(pool.submit(thread_name).unwrap()).unwrap();
    assert_eq!(name, "schedpool-worker-0");
    close(&pool);
}

#[test]
fn worker_indices_are_never_reused() {
    let stopped = counter();
    let s = stopped.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .thread_name_prefix("reuse-")
        .allow_core_thread_timeout(true)
        .keep_alive(Duration::from_millis(1))
        .on_thread_stop(move || {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    let first = outcome(pool.submit(thread_name).unwrap()).unwrap();
    wait_for("the idle worker timed out", || {
        stopped.load(Ordering::SeqCst) == 1 && pool.stats().pool_size == 0
    });
    let second = outcome(pool.submit(thread_name).unwrap()).unwrap();
    assert_eq!((first.as_str(), second.as_str()), ("reuse-0", "reuse-1"));
    close(&pool);
}

#[test]
fn no_thread_starts_before_the_first_task() {
    let started = counter();
    let s = started.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(4)
        .on_thread_start(move || {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    let stats = pool.stats();
    assert_eq!((stats.pool_size, stats.largest_pool_size), (0, 0));
    assert_eq!(started.load(Ordering::SeqCst), 0);
    assert_eq!(pool.stats().pool_size, 0);
    close(&pool);
    assert!(pool.is_terminated(), "nothing to wait for");
    assert_eq!(started.load(Ordering::SeqCst), 0);
}

#[test]
fn each_submission_starts_one_thread_while_fewer_than_core_run() {
    let clock = ManualClock::new();
    let started = counter();
    let s = started.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(3)
        .clock(clock)
        .on_thread_start(move || {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    let mut futs = Vec::new();
    for expected in [1, 2, 3, 3, 3] {
        futs.push(pool.schedule(sec(60), || ()).unwrap());
        assert_eq!(pool.stats().pool_size, expected);
    }
    futs.push(pool.schedule_at_fixed_rate(sec(60), sec(1), || ()).unwrap());
    let stats = pool.stats();
    assert_eq!((stats.pool_size, stats.largest_pool_size), (3, 3));
    wait_for("3 workers started", || started.load(Ordering::SeqCst) == 3);
    drop(pool.shutdown_now());
    assert!(pool.await_termination(BOUND));
    assert_eq!(started.load(Ordering::SeqCst), 3);
}

/// With no core threads, the one worker is surplus and exits after `keep_alive` once the
/// queue is empty (`tests/pool_size.rs` shows that). Here `keep_alive` is long, so the
/// same thread runs every task, however long the test thread takes between submissions;
/// with the default 10 ms a slow machine saw the first worker go and a second start.
#[test]
fn core_size_zero_runs_every_task_on_one_thread() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(0)
        .keep_alive(BOUND)
        .thread_name_prefix("zero-")
        .build();
    assert_eq!(pool.core_pool_size(), 0);
    let futs: Vec<_> = (0..10).map(|_| pool.submit(thread_name).unwrap()).collect();
    for f in futs {
        assert_eq!(outcome(f).unwrap(), "zero-0");
    }
    let delayed = pool
        .schedule(Duration::from_millis(1), thread_name)
        .unwrap();
    assert!(delayed.wait_timeout(BOUND));
    assert_eq!(outcome(delayed).unwrap(), "zero-0");
    assert_eq!(pool.stats().largest_pool_size, 1);
    close(&pool);
    assert_eq!(pool.stats().completed_task_count, 11);
}

#[test]
fn on_thread_start_runs_on_the_worker_before_its_first_task() {
    thread_local! {
        static HOOKED: Cell<bool> = const { Cell::new(false) };
    }
    let hook_threads = Arc::new(Mutex::new(Vec::new()));
    let h = hook_threads.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .thread_name_prefix("hooked-")
        .on_thread_start(move || {
            HOOKED.with(|c| c.set(true));
            h.lock().unwrap().push(thread_name());
        })
        .build();
    let first = outcome(
        pool.submit(|| (HOOKED.with(Cell::get), thread_name()))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first, (true, "hooked-0".to_owned()));
    assert!(!HOOKED.with(Cell::get), "not on the submitting thread");
    close(&pool);
    assert_eq!(*hook_threads.lock().unwrap(), ["hooked-0"]);
}

#[test]
fn every_on_thread_stop_has_run_when_await_termination_returns() {
    let started = counter();
    let stopped = counter();
    let stop_threads = Arc::new(Mutex::new(Vec::new()));
    let (s1, s2, names) = (started.clone(), stopped.clone(), stop_threads.clone());
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(3)
        .thread_name_prefix("stop-")
        .on_thread_start(move || {
            s1.fetch_add(1, Ordering::SeqCst);
        })
        .on_thread_stop(move || {
            names.lock().unwrap().push(thread_name());
            std::thread::sleep(Duration::from_millis(5)); // a slow hook is waited for
            s2.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    assert_eq!(pool.prestart_all_core_threads(), 3);
    outcome(pool.submit(|| ()).unwrap()).unwrap();
    pool.shutdown();
    assert!(pool.await_termination(BOUND));
    assert!(pool.is_terminated());
    assert_eq!(started.load(Ordering::SeqCst), 3);
    assert_eq!(stopped.load(Ordering::SeqCst), 3);
    let mut names = stop_threads.lock().unwrap().clone();
    names.sort();
    assert_eq!(names, ["stop-0", "stop-1", "stop-2"]);
    assert_eq!(pool.stats().pool_size, 0);
}

#[test]
fn close_waits_for_every_on_thread_stop() {
    let stopped = counter();
    let s = stopped.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .on_thread_stop(move || {
            std::thread::sleep(Duration::from_millis(5)); // a slow hook is waited for
            s.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    let a = pool.submit(|| ()).unwrap();
    let b = pool.submit(|| ()).unwrap();
    outcome(a).unwrap();
    outcome(b).unwrap();
    let closer = pool.clone();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        closer.close();
        tx.send(()).unwrap();
    });
    rx.recv_timeout(BOUND).expect("close did not return");
    assert_eq!(stopped.load(Ordering::SeqCst), 2);
}

#[test]
fn panicking_hooks_do_not_break_the_pool() {
    let started = counter();
    let stopped = counter();
    let (s1, s2) = (started.clone(), stopped.clone());
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .thread_name_prefix("bad-hook-")
        .on_thread_start(move || {
            s1.fetch_add(1, Ordering::SeqCst);
            panic!("start hook");
        })
        .on_thread_stop(move || {
            s2.fetch_add(1, Ordering::SeqCst);
            panic!("stop hook");
        })
        .build();
    let futs: Vec<_> = (0..6)
        .map(|i| pool.submit(move || i * 2).unwrap())
        .collect();
    for (i, f) in futs.into_iter().enumerate() {
        assert_eq!(outcome(f).unwrap(), i * 2);
    }
    let name = outcome(pool.submit(thread_name).unwrap()).unwrap();
    assert!(name.starts_with("bad-hook-"));
    pool.shutdown();
    assert!(pool.await_termination(BOUND));
    assert_eq!(started.load(Ordering::SeqCst), 2);
    assert_eq!(stopped.load(Ordering::SeqCst), 2);
    assert_eq!(pool.stats().completed_task_count, 7);
}

#[test]
fn dropping_the_last_handle_does_not_block_and_workers_exit() {
    let stopped = counter();
    let s = stopped.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .on_thread_stop(move || {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    let release = Arc::new(AtomicBool::new(false));
    let running = counter();
    let futs: Vec<_> = (0..2)
        .map(|_| {
            let (release, running) = (release.clone(), running.clone());
            pool.submit(move || {
                running.fetch_add(1, Ordering::SeqCst);
                eventually(|| release.load(Ordering::SeqCst))
            })
            .unwrap()
        })
        .collect();
    wait_for("both tasks run", || running.load(Ordering::SeqCst) == 2);
    drop_bounded(pool); // returns while both tasks still run
    assert!(
        futs.iter().all(|f| !f.is_done()),
        "drop waited for the tasks"
    );
    assert_eq!(stopped.load(Ordering::SeqCst), 0);
    release.store(true, Ordering::SeqCst);
    for f in futs {
        assert!(outcome(f).unwrap(), "released, not timed out");
    }
    wait_for("both workers exited", || {
        stopped.load(Ordering::SeqCst) == 2
    });
}

#[test]
fn dropping_the_last_handle_of_an_idle_pool_stops_its_workers() {
    let stopped = counter();
    let s = stopped.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(3)
        .on_thread_stop(move || {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    assert_eq!(pool.prestart_all_core_threads(), 3);
    let clone = pool.clone();
    drop(pool);
    assert!(!clone.is_shutdown(), "a handle is still alive");
    assert_eq!(outcome(clone.submit(|| 1).unwrap()).unwrap(), 1);
    drop_bounded(clone);
    wait_for("every worker exited", || {
        stopped.load(Ordering::SeqCst) == 3
    });
}

#[test]
fn dropping_the_last_handle_still_runs_delayed_tasks_then_exits() {
    let clock = ManualClock::new();
    let stopped = counter();
    let s = stopped.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .on_thread_stop(move || {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    let fut = pool.schedule(sec(5), || "late").unwrap();
    drop_bounded(pool);
    assert!(!fut.is_done());
    clock.advance(sec(5));
    assert_eq!(outcome(fut).unwrap(), "late");
    wait_for("the worker exited", || stopped.load(Ordering::SeqCst) == 1);
}

#[test]
fn small_thread_stack_size_still_runs_tasks() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .thread_stack_size(256 * 1024)
        .build();
    let fut = pool.submit(|| (1..=10u64).product::<u64>()).unwrap();
    assert_eq!(outcome(fut).unwrap(), 3_628_800);
    close(&pool);
}
