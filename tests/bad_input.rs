//! Bad input: `Duration::MAX` and zero delays, deadlines far in the past and far in the
//! future, zero periods, `core_pool_size(0)` and very large sizes, stale `DelayKey` and
//! `PriorityKey` values, `max_queued_tasks(0)`, extreme timeouts and odd builder values.
//! Each must give defined behaviour or a clear error: never a panic, an overflow or a hang.
//!
//! Order and "has not run" are checked on a `ManualClock`, where nothing runs unless the
//! test advances time. Real-time waits have a generous bound and assert no speed.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use schedpool::{
    DelayQueue, ManualClock, MissedTicks, Periodic, PriorityBlockingQueue, RejectionPolicy,
    ScheduleError, ScheduledThreadPoolExecutor,
};

mod common;
use common::{
    bump, counter, is_cancelled, load, sec, shutdown_now_and_wait, wait_until, DropCount, BOUND,
};

const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

/// Delays are capped at no less than 100 years (`clock.rs`, C1).
const CAP_AT_LEAST: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// `common::manual_pool`, with the workers named `bad-input-N`.
fn manual_pool(core: usize) -> (ManualClock, ScheduledThreadPoolExecutor) {
    common::manual_pool_named(core, "bad-input-")
}

/// The earliest instant before `from` that this platform's `Instant` can represent, up to
/// `back` earlier (some platforms cannot go before boot).
fn before(from: Instant, back: Duration) -> Instant {
    let mut back = back;
    loop {
        if let Some(at) = from.checked_sub(back) {
            return at;
        }
        back /= 2;
    }
}

// ---------------------------------------------------------------------------------------
// Duration::MAX, zero, and deadlines far away

#[test]
fn duration_max_delays_are_accepted_and_practically_never_run() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let runs = counter();
    let r = runs.clone();
    let once = pool
        .schedule(Duration::MAX, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let rate = pool
        .schedule_at_fixed_rate(Duration::MAX, Duration::MAX, bump(&runs))
        .unwrap();
    let delay = pool
        .schedule_with_fixed_delay(Duration::MAX, sec(1), bump(&runs))
        .unwrap();
    let spec = pool
        .schedule_periodic(
            Periodic::at_fixed_rate(sec(1)).initial_delay(Duration::MAX),
            bump(&runs),
        )
        .unwrap();
    for fut in [&rate, &delay, &spec] {
        assert!(fut.deadline() >= t0 + CAP_AT_LEAST);
        assert!(fut.delay() >= CAP_AT_LEAST);
    }
    assert!(once.deadline() >= t0 + CAP_AT_LEAST);
    assert!(once.delay() >= CAP_AT_LEAST);

    clock.advance(99 * YEAR);
    assert!(pool.wait_idle(BOUND));
    assert_eq!(load(&runs), 0, "nothing is due within 100 years");
    assert_eq!(pool.queue_len(), 4);
    assert!(!once.is_done() && !rate.is_done() && !delay.is_done() && !spec.is_done());
    assert!(once.cancel() && rate.cancel() && delay.cancel() && spec.cancel());
    assert_eq!(pool.queue_len(), 0);
    shutdown_now_and_wait(&pool);
    assert_eq!(load(&runs), 0);
}

#[test]
fn duration_max_on_the_real_clock_does_not_overflow() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let before = Instant::now();
    let once = pool.schedule(Duration::MAX, || 1).unwrap();
    let rate = pool
        .schedule_at_fixed_rate(Duration::MAX, Duration::MAX, || {})
        .unwrap();
    assert!(once.deadline() >= before + CAP_AT_LEAST);
    assert!(rate.delay() >= CAP_AT_LEAST);
    assert!(!once.wait_timeout(Duration::from_millis(20)));
    assert!(once.cancel() && rate.cancel());
    pool.close();
    assert!(pool.is_terminated());
    assert!(is_cancelled(once));
}

#[test]
fn a_period_of_duration_max_runs_once_then_practically_never() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let runs = counter();
    let rate = pool
        .schedule_at_fixed_rate(Duration::ZERO, Duration::MAX, bump(&runs))
        .unwrap();
    let delay = pool
        .schedule_with_fixed_delay(Duration::ZERO, Duration::MAX, bump(&runs))
        .unwrap();
    assert!(pool.wait_idle(BOUND));
    assert_eq!(load(&runs), 2, "both run once at their zero initial delay");
    assert!(rate.deadline() >= t0 + CAP_AT_LEAST);
    assert!(delay.deadline() >= t0 + CAP_AT_LEAST);
    clock.advance(99 * YEAR);
    assert!(pool.wait_idle(BOUND));
    assert_eq!(load(&runs), 2);
    assert!(!rate.is_done() && !delay.is_done());
    shutdown_now_and_wait(&pool);
    assert!(is_cancelled(rate) && is_cancelled(delay));
}

#[test]
fn zero_delays_run_without_advancing_the_clock() {
    let (clock, pool) = manual_pool(1);
    let runs = counter();
    let r = runs.clone();
    let a = pool
        .schedule(Duration::ZERO, move || r.fetch_add(1, Ordering::SeqCst))
        .unwrap();
    let b = pool.schedule_at(clock.now(), || 7).unwrap();
    let rate = pool
        .schedule_at_fixed_rate(Duration::ZERO, sec(1), bump(&runs))
        .unwrap();
    let delay = pool
        .schedule_with_fixed_delay(Duration::ZERO, sec(1), bump(&runs))
        .unwrap();
    assert!(pool.wait_idle(BOUND));
    assert_eq!(a.get().unwrap(), 0);
    assert_eq!(b.get().unwrap(), 7);
    assert_eq!(
        load(&runs),
        3,
        "one-shot plus the first run of each periodic task"
    );
    assert_eq!(rate.delay(), sec(1));
    assert_eq!(delay.delay(), sec(1));
    shutdown_now_and_wait(&pool);
}

/// A submission that is expected to fail, and its error.
type Attempt<'a> = Box<dyn Fn(&ScheduledThreadPoolExecutor) -> ScheduleError + 'a>;

#[test]
fn zero_periods_are_an_argument_error_that_wins_over_everything_else() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock)
        .max_queued_tasks(0)
        .build();
    let drops = counter();
    let attempts: Vec<Attempt> = vec![
        Box::new(|p| {
            let d = DropCount(drops.clone());
            p.schedule_at_fixed_rate(sec(1), Duration::ZERO, move || {
                let _keep = &d;
            })
            .unwrap_err()
        }),
        Box::new(|p| {
            let d = DropCount(drops.clone());
            p.schedule_with_fixed_delay(Duration::ZERO, Duration::ZERO, move || {
                let _keep = &d;
            })
            .unwrap_err()
        }),
        Box::new(|p| {
            let d = DropCount(drops.clone());
            let spec = Periodic::at_fixed_rate(Duration::ZERO).max_runs(0);
            p.schedule_periodic(spec, move || {
                let _keep = &d;
            })
            .unwrap_err()
        }),
        Box::new(|p| {
            let d = DropCount(drops.clone());
            let spec = Periodic::with_fixed_delay(Duration::ZERO).initial_delay(Duration::MAX);
            p.schedule_periodic(spec, move || {
                let _keep = &d;
            })
            .unwrap_err()
        }),
    ];
    for (i, attempt) in attempts.iter().enumerate() {
        assert_eq!(attempt(&pool), ScheduleError::ZeroPeriod, "attempt {i}");
        assert_eq!(
            load(&drops),
            i + 1,
            "the closure is dropped before the error returns"
        );
    }
    // A full queue (bound 0) and then a shut-down pool do not hide the argument error.
    pool.shutdown();
    for attempt in &attempts {
        assert_eq!(attempt(&pool), ScheduleError::ZeroPeriod);
    }
    let stats = pool.stats();
    assert_eq!((stats.task_count, stats.rejected_count), (0, 0));
    assert!(pool.await_termination(BOUND));
}

#[test]
fn deadlines_in_the_past_run_at_once_in_deadline_order() {
    let (clock, pool) = manual_pool(1);
    clock.advance(sec(3600));
    let now = clock.now();
    // Block the only worker so the order of the three is decided by the queue alone.
    let (release, hold) = std::sync::mpsc::channel::<()>();
    let blocker = pool
        .submit(move || hold.recv_timeout(BOUND).unwrap())
        .unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let push = |tag: &'static str| {
        let order = order.clone();
        move || order.lock().unwrap().push(tag)
    };
    let due_now = pool.schedule(Duration::ZERO, push("now")).unwrap();
    let one_sec_ago = pool
        .schedule_at(now.checked_sub(sec(1)).unwrap(), push("1 s ago"))
        .unwrap();
    let long_ago = pool
        .schedule_at(before(now, 50 * YEAR), push("long ago"))
        .unwrap();
    release.send(()).unwrap();
    blocker.get().unwrap();
    assert!(pool.wait_idle(BOUND));
    assert_eq!(*order.lock().unwrap(), ["long ago", "1 s ago", "now"]);
    assert!(long_ago.deadline() <= now && long_ago.delay() == Duration::ZERO);
    for fut in [due_now, one_sec_ago, long_ago] {
        fut.get().unwrap();
    }
    shutdown_now_and_wait(&pool);
}

#[test]
fn reschedule_after_the_longest_delay_is_capped_not_a_panic() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let fut = pool.schedule(Duration::from_secs(1), || "ran").unwrap();
    assert!(fut.reschedule_after(Duration::MAX), "accepted");
    assert!(
        fut.deadline() >= t0 + CAP_AT_LEAST,
        "capped no lower than 100 years"
    );
    clock.advance(99 * YEAR);
    assert!(pool.wait_idle(BOUND));
    assert!(!fut.is_done(), "not due");
    assert!(
        fut.cancel_handle().reschedule_after(Duration::ZERO),
        "and back to now"
    );
    assert!(pool.wait_idle(BOUND));
    assert_eq!(fut.get().unwrap(), "ran");
    shutdown_now_and_wait(&pool);
}

#[test]
fn deadlines_far_in_the_future_are_capped_and_can_be_moved_back() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let far = t0
        .checked_add(1000 * YEAR)
        .expect("Instant holds 1000 years");
    let fut = pool.schedule_at(far, || "ran").unwrap();
    assert!(
        fut.deadline() >= t0 + CAP_AT_LEAST,
        "capped no lower than 100 years"
    );
    assert!(fut.deadline() <= far);
    clock.advance(99 * YEAR);
    assert!(pool.wait_idle(BOUND));
    assert!(!fut.is_done());
    assert!(
        fut.reschedule(far),
        "moving it to another far deadline is fine"
    );
    assert!(
        fut.reschedule(before(clock.now(), 10_000 * YEAR)),
        "and back into the past"
    );
    assert!(pool.wait_idle(BOUND));
    assert_eq!(fut.get().unwrap(), "ran");
    shutdown_now_and_wait(&pool);
}

#[test]
fn advancing_the_clock_by_duration_max_saturates_without_overflow() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let never = pool.schedule(Duration::MAX, || 1).unwrap();
    clock.advance(Duration::MAX);
    clock.advance(Duration::MAX);
    let now = clock.now();
    assert!(now >= t0 + CAP_AT_LEAST);
    assert!(pool.wait_idle(BOUND));
    // At the cap, a deadline at the cap is due: defined, and it ran exactly once.
    assert_eq!(never.get().unwrap(), 1);
    let later = pool.schedule(Duration::MAX, || 2).unwrap();
    assert!(later.deadline() >= now || later.deadline() >= t0 + CAP_AT_LEAST);
    assert!(pool.wait_idle(BOUND));
    assert_eq!(later.get().unwrap(), 2);
    shutdown_now_and_wait(&pool);
}

/// Runs `spec` on a fresh pool, advances its clock to the cap and returns the runs that
/// happened, or `None` if the pool never settled.
fn runs_after_advancing_to_the_cap(spec: Periodic) -> Option<usize> {
    let (clock, pool) = manual_pool(1);
    let runs = counter();
    let fut = pool.schedule_periodic(spec, bump(&runs)).unwrap();
    clock.advance(Duration::MAX);
    let settled = pool.wait_idle(Duration::from_secs(2));
    fut.cancel();
    shutdown_now_and_wait(&pool);
    settled.then(|| load(&runs))
}

#[test]
fn periodic_tasks_at_the_clock_cap_do_not_run_back_to_back_forever() {
    // Each rule puts the next run one period after the run's start (fixed delay, Delay)
    // or strictly after it (Skip): never at the same instant, so one run is all there is.
    for (name, spec) in [
        (
            "fixed delay",
            Periodic::with_fixed_delay(sec(1)).initial_delay(sec(1)),
        ),
        (
            "fixed rate, Delay",
            Periodic::at_fixed_rate(sec(1))
                .initial_delay(sec(1))
                .missed_ticks(MissedTicks::Delay),
        ),
        (
            "fixed rate, Skip",
            Periodic::at_fixed_rate(sec(1))
                .initial_delay(sec(1))
                .missed_ticks(MissedTicks::Skip),
        ),
    ] {
        assert_eq!(runs_after_advancing_to_the_cap(spec), Some(1), "{name}");
    }
}

// ---------------------------------------------------------------------------------------
// Pool sizes

/// The one worker of a pool without core threads is surplus: with the queue empty for a
/// whole `keep_alive` (between two submissions of a slow test thread) it would exit and a
/// second would start. A long `keep_alive` keeps this test about the thread count alone.
#[test]
fn core_pool_size_zero_runs_everything_on_one_thread() {
    let clock = ManualClock::new();
    let starts = counter();
    let s = starts.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(0)
        .keep_alive(BOUND)
        .clock(clock.clone())
        .on_thread_start(move || {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    assert!(!pool.prestart_core_thread());
    assert_eq!(pool.prestart_all_core_threads(), 0);
    let threads = Arc::new(Mutex::new(Vec::<ThreadId>::new()));
    let record = || {
        let threads = threads.clone();
        move || threads.lock().unwrap().push(thread::current().id())
    };
    let futs: Vec<_> = (0..8)
        .map(|i| pool.schedule(sec(i % 3), record()).unwrap())
        .collect();
    let rec = record();
    let periodic = pool.schedule_at_fixed_rate(sec(1), sec(1), rec).unwrap();
    clock.advance(sec(3));
    assert!(pool.wait_idle(BOUND));
    for fut in futs {
        fut.get().unwrap();
    }
    let threads = threads.lock().unwrap();
    assert_eq!(
        threads.len(),
        8 + 3,
        "eight one-shots and three periodic runs"
    );
    assert!(
        threads.iter().all(|t| *t == threads[0]),
        "one thread in all"
    );
    assert_eq!(load(&starts), 1);
    assert_eq!(pool.stats().pool_size, 1);
    assert!(periodic.cancel());
    shutdown_now_and_wait(&pool);
}

#[test]
fn core_pool_size_zero_with_core_timeout_starts_a_thread_again_when_needed() {
    let stops = counter();
    let s = stops.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(0)
        .allow_core_thread_timeout(true)
        .keep_alive(Duration::from_millis(1))
        .on_thread_stop(move || {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    for round in 1..=3 {
        assert_eq!(pool.submit(move || round).unwrap().get().unwrap(), round);
        assert!(
            wait_until(|| load(&stops) == round && pool.stats().pool_size == 0),
            "the idle thread times out"
        );
    }
    pool.close();
    assert_eq!(pool.stats().completed_task_count, 3);
}

#[test]
fn shrinking_the_core_size_to_zero_keeps_one_thread_for_queued_tasks() {
    let (clock, pool) = manual_pool(3);
    assert_eq!(pool.prestart_all_core_threads(), 3);
    let queued = pool.schedule(sec(1), || "still runs").unwrap();
    pool.set_core_pool_size(0);
    assert_eq!(pool.core_pool_size(), 0);
    assert!(
        wait_until(|| pool.stats().pool_size == 1),
        "surplus threads time out, one stays for the queued task"
    );
    clock.advance(sec(1));
    assert_eq!(queued.get().unwrap(), "still runs");
    // With nothing queued, the last thread may go too; a new task starts one again.
    assert!(wait_until(|| pool.stats().pool_size == 0));
    let fut = pool.schedule(sec(1), || "runs again").unwrap();
    assert_eq!(pool.stats().pool_size, 1);
    clock.advance(sec(1));
    assert_eq!(fut.get().unwrap(), "runs again");
    shutdown_now_and_wait(&pool);
}

#[test]
fn a_very_large_core_size_starts_one_thread_per_submission_and_no_more() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(usize::MAX)
        .thread_name_prefix("huge-core-")
        .build();
    assert_eq!(pool.core_pool_size(), usize::MAX);
    let arrived = counter();
    let futs: Vec<_> = (0..8)
        .map(|_| {
            let arrived = arrived.clone();
            pool.submit(move || {
                arrived.fetch_add(1, Ordering::SeqCst);
                // All eight run at once: each submission started its own thread.
                wait_until(|| arrived.load(Ordering::SeqCst) == 8)
            })
            .unwrap()
        })
        .collect();
    assert!(futs.into_iter().all(|f| f.get().unwrap()));
    let stats = pool.stats();
    assert_eq!((stats.pool_size, stats.largest_pool_size), (8, 8));
    assert_eq!(stats.core_pool_size, usize::MAX);
    // Growing to the same huge size with nothing queued starts nothing.
    pool.set_core_pool_size(usize::MAX);
    assert_eq!(pool.stats().pool_size, 8);
    pool.close();
    assert_eq!(pool.stats().pool_size, 0);
}

#[test]
fn growing_to_a_huge_core_size_starts_at_most_one_thread_per_queued_task() {
    let (clock, pool) = manual_pool(1);
    let futs: Vec<_> = (0..3)
        .map(|i| pool.schedule(sec(1), move || i).unwrap())
        .collect();
    assert_eq!(pool.stats().pool_size, 1);
    pool.set_core_pool_size(usize::MAX);
    assert!(pool.stats().pool_size <= 1 + 3);
    clock.advance(sec(1));
    let got: Vec<i32> = futs.into_iter().map(|f| f.get().unwrap()).collect();
    assert_eq!(got, [0, 1, 2]);
    shutdown_now_and_wait(&pool);
}

#[test]
fn odd_stack_sizes_still_run_tasks() {
    for size in [0, 1, 4097] {
        let pool = ScheduledThreadPoolExecutor::builder()
            .core_pool_size(1)
            .thread_stack_size(size)
            .build();
        assert_eq!(pool.submit(move || size).unwrap().get().unwrap(), size);
        pool.close();
    }
}

#[test]
fn an_interior_nul_in_the_thread_name_prefix_is_not_a_panic_or_a_hang() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .thread_name_prefix("bad\0name-")
        .build();
    let outcome = catch_unwind(AssertUnwindSafe(|| pool.submit(|| 5)));
    pool.shutdown();
    let terminated = pool.await_termination(Duration::from_secs(2));
    // Either the task runs (the name was fixed up) or the submission is refused cleanly.
    match outcome.expect("submit must not panic") {
        Ok(fut) => assert_eq!(fut.get().unwrap(), 5),
        Err(e) => assert!(matches!(e, ScheduleError::ThreadSpawn(_)), "{e:?}"),
    }
    assert!(terminated, "the pool terminates");
}

/// A pool named with a NUL byte runs a kept-alive exclusive run: the keep-alive thread's
/// name (which std refuses with a NUL) is fixed up, not a panic.
#[test]
fn an_interior_nul_in_the_pool_name_does_not_break_a_kept_alive_run() {
    use schedpool::cluster::{Exclusive, LocalLock};
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .name("bad\0pool")
        .build();
    let spec = Exclusive::new(Arc::new(LocalLock::new()), "job", sec(60)).keep_alive(sec(1));
    let ran = pool.run_exclusive(&spec, |lease| lease.token());
    assert_eq!(ran.unwrap(), Some(1));
    pool.close();
}

// ---------------------------------------------------------------------------------------
// max_queued_tasks(0)

fn bound_zero(policy: RejectionPolicy) -> (ManualClock, ScheduledThreadPoolExecutor) {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .max_queued_tasks(0)
        .rejection_policy(policy)
        .build();
    (clock, pool)
}

#[test]
fn max_queued_zero_with_abort_refuses_everything_and_drops_the_closure() {
    let (_clock, pool) = bound_zero(RejectionPolicy::Abort);
    let drops = counter();
    let d = DropCount(drops.clone());
    let err = pool.schedule(sec(1), move || drop(d)).unwrap_err();
    assert_eq!(err, ScheduleError::QueueFull);
    assert_eq!(load(&drops), 1, "dropped before schedule returned");
    assert_eq!(pool.execute(|| ()).unwrap_err(), ScheduleError::QueueFull);
    assert_eq!(pool.submit(|| ()).unwrap_err(), ScheduleError::QueueFull);
    assert_eq!(
        pool.schedule_at_fixed_rate(sec(1), sec(1), || ())
            .unwrap_err(),
        ScheduleError::QueueFull
    );
    let stats = pool.stats();
    assert_eq!((stats.task_count, stats.rejected_count), (0, 4));
    assert_eq!(stats.pool_size, 0, "a refused task starts no thread");
    pool.shutdown();
    assert_eq!(pool.submit(|| ()).unwrap_err(), ScheduleError::Shutdown);
    assert!(pool.await_termination(BOUND));
}

#[test]
fn max_queued_zero_with_caller_runs_runs_on_the_caller_at_once() {
    let (_clock, pool) = bound_zero(RejectionPolicy::CallerRuns);
    let me = thread::current().id();
    let fut = pool
        .schedule(sec(3600), move || thread::current().id() == me)
        .unwrap();
    assert!(fut.is_done(), "done before schedule returned");
    assert!(fut.get().unwrap());
    let panicked = pool
        .submit(|| -> u8 { panic!("caller-runs boom") })
        .unwrap();
    assert_eq!(
        panicked.get().unwrap_err().panic_message(),
        Some("caller-runs boom")
    );
    let stats = pool.stats();
    assert_eq!((stats.rejected_count, stats.completed_task_count), (2, 0));
    shutdown_now_and_wait(&pool);
}

#[test]
fn max_queued_zero_with_discard_returns_a_cancelled_future_and_drops_the_closure() {
    let (_clock, pool) = bound_zero(RejectionPolicy::Discard);
    let drops = counter();
    let d = DropCount(drops.clone());
    let fut = pool.schedule(sec(1), move || drop(d)).unwrap();
    assert_eq!(load(&drops), 1);
    assert!(fut.is_done() && fut.is_cancelled());
    assert!(!fut.cancel());
    assert!(!fut.reschedule(Instant::now()));
    assert!(is_cancelled(fut));
    let periodic = pool
        .schedule_with_fixed_delay(sec(1), sec(1), || ())
        .unwrap();
    assert!(periodic.is_cancelled());
    assert_eq!(pool.stats().rejected_count, 2);
    shutdown_now_and_wait(&pool);
}

// ---------------------------------------------------------------------------------------
// Stale and foreign keys

#[test]
fn stale_and_foreign_delay_keys_return_none_and_remove_nothing_else() {
    let clock = ManualClock::new();
    let q: DelayQueue<u32> = DelayQueue::with_clock(clock.clone());
    let other: DelayQueue<u32> = DelayQueue::with_clock(clock.clone());
    let taken = q.offer(1, Duration::ZERO);
    assert_eq!(q.poll(), Some(1));
    let removed = q.offer(2, sec(5));
    assert_eq!(q.remove(removed), Some(2));
    let cleared = q.offer(3, sec(5));
    q.clear();
    let drained = q.offer(4, Duration::ZERO);
    assert_eq!(q.drain_expired(), [4]);
    let timed = q.offer(5, Duration::ZERO);
    assert_eq!(q.poll_timeout(Duration::MAX), Some(5));
    // Slots are reused now: the stale keys must not name the new elements.
    let live: Vec<_> = (10..20).map(|v| q.offer(v, sec(v.into()))).collect();
    let foreign = other.offer(99, sec(1));
    let dropped_queue_key = {
        let gone: DelayQueue<u32> = DelayQueue::new();
        gone.offer(7, sec(1))
    };
    for key in [
        taken,
        removed,
        cleared,
        drained,
        timed,
        foreign,
        dropped_queue_key,
    ] {
        assert_eq!(q.remove(key), None, "{key:?}");
        assert_eq!(q.remove(key), None, "twice");
    }
    assert_eq!(q.len(), 10);
    for (key, v) in live.iter().zip(10..) {
        assert_eq!(other.remove(*key), None, "a key of q is foreign to other");
        assert_eq!(q.remove(*key), Some(v));
    }
    assert_eq!(other.len(), 1);
}

#[test]
fn stale_and_foreign_priority_keys_return_none_and_remove_nothing_else() {
    let q = PriorityBlockingQueue::new();
    let other = PriorityBlockingQueue::new();
    let polled = q.offer(1);
    assert_eq!(q.poll(), Some(1));
    let removed = q.offer(2);
    assert_eq!(q.remove(removed), Some(2));
    let cleared = q.offer(3);
    q.clear();
    let drained = q.offer(4);
    let mut out = Vec::new();
    assert_eq!(q.drain_to(&mut out, usize::MAX), 1);
    let taken = q.offer(5);
    assert_eq!(q.take(), 5);
    let timed = q.offer(6);
    assert_eq!(q.poll_timeout(Duration::MAX), Some(6));
    let live: Vec<_> = (10..20).map(|v| q.offer(v)).collect();
    let foreign = other.offer(99);
    let dropped_queue_key = PriorityBlockingQueue::new().offer(7);
    for key in [
        polled,
        removed,
        cleared,
        drained,
        taken,
        timed,
        foreign,
        dropped_queue_key,
    ] {
        assert_eq!(q.remove(key), None, "{key:?}");
    }
    assert_eq!(q.len(), 10);
    for (key, v) in live.iter().zip(10..) {
        assert_eq!(other.remove(*key), None);
        assert_eq!(q.remove(*key), Some(v));
    }
    assert_eq!(other.len(), 1);
}

#[test]
fn stale_keys_stay_stale_across_many_empty_and_refill_cycles() {
    // The queues may shrink or reset their slot tables when emptied; a key from any
    // earlier cycle must still name nothing.
    let clock = ManualClock::new();
    let dq: DelayQueue<u32> = DelayQueue::with_clock(clock);
    let pq: PriorityBlockingQueue<u32> = PriorityBlockingQueue::new();
    let (mut old_d, mut old_p) = (Vec::new(), Vec::new());
    for cycle in 0..40u32 {
        let n = 1 + (cycle * 7) % 97;
        let live_d: Vec<_> = (0..n).map(|v| dq.offer(v, sec(v.into()))).collect();
        let live_p: Vec<_> = (0..n).map(|v| pq.offer(v)).collect();
        for key in &old_d {
            assert_eq!(
                dq.remove(*key),
                None,
                "cycle {cycle}: a stale DelayKey matched"
            );
        }
        for key in &old_p {
            assert_eq!(
                pq.remove(*key),
                None,
                "cycle {cycle}: a stale PriorityKey matched"
            );
        }
        assert_eq!((dq.len(), pq.len()), (n as usize, n as usize));
        // Empty them a different way each cycle; every live key still works until then.
        match cycle % 3 {
            0 => {
                for (key, v) in live_d.iter().zip(0..) {
                    assert_eq!(dq.remove(*key), Some(v));
                }
                for (key, v) in live_p.iter().zip(0..) {
                    assert_eq!(pq.remove(*key), Some(v));
                }
            }
            1 => {
                dq.clear();
                pq.clear();
            }
            _ => {
                assert_eq!(dq.remove(live_d[0]), Some(0));
                dq.clear();
                let mut out = Vec::new();
                assert_eq!(pq.drain_to(&mut out, usize::MAX), n as usize);
            }
        }
        assert!(dq.is_empty() && pq.is_empty());
        old_d.extend(live_d);
        old_p.extend(live_p);
    }
}

#[test]
fn drain_to_with_a_zero_or_huge_maximum() {
    let q = PriorityBlockingQueue::new();
    for v in [3, 1, 2] {
        q.offer(v);
    }
    let mut out = Vec::new();
    assert_eq!(q.drain_to(&mut out, 0), 0);
    assert_eq!(q.drain_to(&mut out, usize::MAX), 3);
    assert_eq!(out, [1, 2, 3]);
    assert_eq!(q.drain_to(&mut out, usize::MAX), 0);
}

#[test]
fn a_huge_priority_queue_capacity_is_not_a_panic() {
    let q = catch_unwind(|| PriorityBlockingQueue::<u64>::with_capacity(usize::MAX))
        .expect("with_capacity must not panic");
    q.offer(1);
    assert_eq!(q.poll(), Some(1));
}

// ---------------------------------------------------------------------------------------
// DelayQueue extremes

#[test]
fn delay_queue_extreme_deadlines() {
    let clock = ManualClock::new();
    let t0 = clock.now();
    let q: DelayQueue<&str> = DelayQueue::with_clock(clock.clone());
    q.offer("never", Duration::MAX);
    q.offer_at("far future", t0.checked_add(1000 * YEAR).unwrap());
    assert_eq!(q.poll(), None);
    assert_eq!(q.poll_timeout(Duration::ZERO), None);
    assert!(q.peek_deadline().unwrap() >= t0 + CAP_AT_LEAST);
    q.offer_at("long ago", before(t0, 50 * YEAR));
    q.offer("zero", Duration::ZERO);
    assert_eq!(
        q.peek_deadline(),
        Some(t0),
        "a past deadline is due at the origin"
    );
    assert_eq!(q.poll_timeout(Duration::MAX), Some("long ago"));
    assert_eq!(q.drain_expired(), ["zero"]);
    clock.advance(Duration::MAX);
    let mut rest = q.drain_expired();
    rest.sort_unstable();
    assert_eq!(rest, ["far future", "never"]);
    assert!(q.is_empty());
}

// ---------------------------------------------------------------------------------------
// Timeouts and other durations

#[test]
fn timeouts_of_zero_and_duration_max_do_not_overflow() {
    let (clock, pool) = manual_pool(1);
    let pending = pool.schedule(sec(1), || 3).unwrap();
    assert!(!pending.wait_timeout(Duration::ZERO));
    assert!(!pool.await_termination(Duration::ZERO));
    assert!(pool.wait_idle(Duration::ZERO));
    clock.advance(sec(1));
    assert!(pool.wait_idle(Duration::MAX));
    assert!(pending.wait_timeout(Duration::MAX));
    assert_eq!(pending.get().unwrap(), 3);
    pool.shutdown();
    assert!(pool.await_termination(Duration::MAX));

    let pq = PriorityBlockingQueue::new();
    assert_eq!(pq.poll_timeout(Duration::ZERO), None);
    pq.offer(1);
    assert_eq!(pq.poll_timeout(Duration::MAX), Some(1));
}

#[test]
fn keep_alive_of_duration_max_and_zero_are_accepted() {
    for keep_alive in [Duration::MAX, Duration::ZERO] {
        let pool = ScheduledThreadPoolExecutor::builder()
            .core_pool_size(1)
            .keep_alive(keep_alive)
            .build();
        pool.set_core_pool_size(2);
        let futs: Vec<_> = (0..4).map(|i| pool.submit(move || i).unwrap()).collect();
        let got: Vec<i32> = futs.into_iter().map(|f| f.get().unwrap()).collect();
        assert_eq!(got, [0, 1, 2, 3]);
        pool.set_core_pool_size(1);
        pool.close();
        assert!(pool.is_terminated());
    }
}

/// CPU time (user + system, in clock ticks) that thread `tid` of this process has used.
#[cfg(target_os = "linux")]
fn thread_cpu_ticks(tid: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// CPU ticks the only worker of a pool built as `core`/`allow_core_timeout` with a zero
/// keep-alive uses over half a second while a task an hour away is queued, and the wall
/// ticks of that window.
#[cfg(target_os = "linux")]
fn idle_worker_cpu_with_zero_keep_alive(core: usize, allow_core_timeout: bool) -> (u64, u64) {
    let tid = Arc::new(Mutex::new(String::new()));
    let t = tid.clone();
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(core)
        .keep_alive(Duration::ZERO)
        .allow_core_thread_timeout(allow_core_timeout)
        .clock(clock.clone())
        .on_thread_start(move || {
            let me = std::fs::read_link("/proc/thread-self").unwrap();
            *t.lock().unwrap() = me.file_name().unwrap().to_string_lossy().into_owned();
        })
        .build();
    // The worker may not exit (a task is queued) and has nothing due: it should sleep.
    let fut = pool.schedule(sec(3600), || "ran").unwrap();
    assert!(wait_until(|| !tid.lock().unwrap().is_empty()));
    let tid = tid.lock().unwrap().clone();
    let (ticks0, t0) = (thread_cpu_ticks(&tid), Instant::now());
    thread::sleep(Duration::from_millis(500));
    let used = thread_cpu_ticks(&tid) - ticks0;
    let wall_ticks = t0.elapsed().as_millis() as u64 / 10; // USER_HZ is 100 on Linux
    clock.advance(sec(3600));
    assert_eq!(fut.get().unwrap(), "ran");
    shutdown_now_and_wait(&pool);
    (used, wall_ticks)
}

#[cfg(target_os = "linux")]
#[test]
fn a_zero_keep_alive_does_not_make_an_idle_worker_spin() {
    let mut spinning = Vec::new();
    for (core, allow_core_timeout) in [(1, true), (0, false)] {
        let (used, wall) = idle_worker_cpu_with_zero_keep_alive(core, allow_core_timeout);
        // An idle worker uses next to nothing; a spinning one most of a core. A quarter
        // of the window leaves room for any load on the machine.
        if used * 4 >= wall {
            spinning.push(format!(
                "core {core}, allow_core_thread_timeout {allow_core_timeout}: \
                 {used} of {wall} ticks"
            ));
        }
    }
    assert!(spinning.is_empty(), "idle workers spun: {spinning:?}");
}

#[test]
fn extreme_lateness_limits_and_run_counts() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .late_threshold(Duration::MAX)
        .build();
    let runs = counter();
    let never_skips = pool
        .schedule_periodic(
            Periodic::at_fixed_rate(sec(1))
                .initial_delay(sec(1))
                .max_lateness(Duration::MAX)
                .max_runs(u64::MAX),
            bump(&runs),
        )
        .unwrap();
    clock.advance(sec(5));
    assert!(pool.wait_idle(BOUND));
    assert_eq!(load(&runs), 5, "ticks 1..=5 all run (burst), none skipped");
    let stats = pool.stats();
    assert_eq!((stats.skipped_runs, stats.late_count), (0, 0));
    assert!(never_skips.cancel());

    // max_lateness(ZERO): only a run strictly later than its deadline is skipped.
    let skipping = counter();
    let zero = pool
        .schedule_periodic(
            Periodic::at_fixed_rate(sec(1))
                .initial_delay(sec(1))
                .max_lateness(Duration::ZERO),
            bump(&skipping),
        )
        .unwrap();
    clock.advance(sec(1));
    assert!(pool.wait_idle(BOUND));
    assert_eq!(load(&skipping), 1, "on time: lateness 0 is not more than 0");
    clock.advance(Duration::from_millis(2500));
    assert!(pool.wait_idle(BOUND));
    assert_eq!(
        load(&skipping),
        1,
        "ticks at 2 s and 3 s are stale and skipped"
    );
    assert_eq!(pool.stats().skipped_runs, 2);
    assert!(zero.cancel());
    shutdown_now_and_wait(&pool);
}
