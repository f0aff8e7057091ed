//! Memory: closures, outputs and the pool itself are freed, and freed when they should be.
//!
//! Drop counters captured by closures (and by a thread hook, which lives as long as the
//! pool's shared core) show that `cancel` drops a task's closure before it returns, that a
//! pool dropped, closed or stopped with tasks still queued frees them, that unclaimed
//! outputs are freed, and that the pool's core is freed once the last handle, future and
//! worker thread are gone. `scripts/memcheck.sh` runs this and the other test binaries
//! under valgrind to catch what counters cannot.
//!
//! Everything runs on a `ManualClock` unless it needs real threads to exit; waits for
//! threads are bounded and assert no speed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

use schedpool::{
    Builder, DelayQueue, ManualClock, Periodic, PriorityBlockingQueue, RejectionPolicy,
    ScheduleError, ScheduledThreadPoolExecutor, TaskError,
};

mod common;
use common::{counter, load, sec, wait_until, DropCount, BOUND};

/// What tells us the pool's shared core was freed: a token captured by its stop hook,
/// which the core owns, and a count of worker threads that finished.
struct Core {
    freed: Arc<AtomicUsize>,
    stopped: Arc<AtomicUsize>,
}

impl Core {
    fn builder(core: usize, clock: &ManualClock) -> (Builder, Core) {
        let (freed, stopped) = (counter(), counter());
        let token = DropCount(freed.clone());
        let s = stopped.clone();
        let builder = ScheduledThreadPoolExecutor::builder()
            .core_pool_size(core)
            .thread_name_prefix("memory-")
            .clock(clock.clone())
            .on_thread_stop(move || {
                let _keep = &token;
                s.fetch_add(1, Ordering::SeqCst);
            });
        (builder, Core { freed, stopped })
    }

    fn is_freed(&self) -> bool {
        load(&self.freed) == 1
    }
}

/// A task body that captures `drops`' token.
fn body(drops: &Arc<AtomicUsize>) -> impl FnMut() + Send + 'static {
    let token = DropCount(drops.clone());
    move || {
        let _keep = &token;
    }
}

// ---------------------------------------------------------------------------------------
// cancel

#[test]
fn cancel_drops_the_closure_before_it_returns() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .build();
    let drops = counter();
    let once = pool.schedule(sec(1), body(&drops)).unwrap();
    let rate = pool
        .schedule_at_fixed_rate(sec(1), sec(1), body(&drops))
        .unwrap();
    let delay = pool
        .schedule_with_fixed_delay(sec(1), sec(1), body(&drops))
        .unwrap();
    let spec = pool
        .schedule_periodic(
            Periodic::at_fixed_rate(sec(1))
                .initial_delay(sec(1))
                .max_runs(3),
            body(&drops),
        )
        .unwrap();
    // A handle whose future is already gone.
    let orphan = pool.schedule(sec(1), body(&drops)).unwrap().cancel_handle();
    assert_eq!(pool.queue_len(), 5);
    assert_eq!(load(&drops), 0);
    let cancels: [&dyn Fn() -> bool; 5] = [
        &|| once.cancel(),
        &|| rate.cancel(),
        &|| delay.cancel(),
        &|| spec.cancel_handle().cancel(),
        &|| orphan.cancel(),
    ];
    for (i, cancel) in cancels.iter().enumerate() {
        assert!(cancel());
        assert_eq!(
            load(&drops),
            i + 1,
            "closure {i} dropped before cancel returned"
        );
        assert_eq!(pool.queue_len(), 4 - i, "and removed from the queue");
    }
    pool.close();
}

#[test]
fn with_remove_on_cancel_off_the_closure_is_freed_no_later_than_purge() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .remove_on_cancel(false)
        .build();
    let drops = counter();
    let futs: Vec<_> = (0..3)
        .map(|_| pool.schedule(sec(1), body(&drops)).unwrap())
        .collect();
    assert!(futs.iter().all(|f| f.cancel()));
    assert_eq!(
        pool.queue_len(),
        3,
        "cancelled tasks stay queued until purged"
    );
    assert_eq!(pool.purge(), 3);
    assert_eq!(load(&drops), 3);
    assert_eq!(pool.queue_len(), 0);
    pool.close();
}

#[test]
fn cancelling_a_running_periodic_task_frees_its_closure_when_the_run_ends() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .build();
    let drops = counter();
    let token = DropCount(drops.clone());
    let (started_tx, started) = mpsc::channel();
    let (go, go_rx) = mpsc::channel::<()>();
    let fut = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            let _keep = &token;
            started_tx.send(()).unwrap();
            go_rx.recv_timeout(BOUND).unwrap();
        })
        .unwrap();
    clock.advance(sec(1));
    started.recv_timeout(BOUND).unwrap();
    assert!(fut.cancel());
    assert_eq!(load(&drops), 0, "the running closure is still in use");
    go.send(()).unwrap();
    assert!(wait_until(|| load(&drops) == 1), "freed when its run ended");
    assert!(fut.get().unwrap_err().is_cancelled());
    pool.close();
}

// ---------------------------------------------------------------------------------------
// Pools dropped, closed or stopped with tasks queued

#[test]
fn dropping_the_last_handle_frees_queued_periodic_tasks_at_once_and_the_core_later() {
    let clock = ManualClock::new();
    let (builder, core) = Core::builder(2, &clock);
    let pool = builder.build();
    let drops = counter();
    for _ in 0..4 {
        pool.schedule_at_fixed_rate(sec(1), sec(1), body(&drops))
            .unwrap();
        pool.schedule_with_fixed_delay(sec(1), sec(1), body(&drops))
            .unwrap();
    }
    drop(pool); // shutdown: the default policy cancels queued periodic tasks
    assert_eq!(load(&drops), 8, "freed by the drop itself");
    assert!(
        wait_until(|| core.is_freed()),
        "workers exit, then the core is freed"
    );
    assert_eq!(load(&core.stopped), 2);
}

#[test]
fn dropping_the_last_handle_runs_kept_delayed_tasks_then_frees_everything() {
    let clock = ManualClock::new();
    let (builder, core) = Core::builder(1, &clock);
    let pool = builder.build();
    let drops = counter();
    let ran = counter();
    for i in 0..5 {
        let (token, ran) = (DropCount(drops.clone()), ran.clone());
        pool.schedule(sec(1 + i), move || {
            let _keep = &token;
            ran.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    }
    drop(pool); // the default policy keeps delayed one-shots
    assert_eq!(load(&drops), 0);
    assert!(!core.is_freed(), "a worker still waits for the kept tasks");
    clock.advance(sec(5));
    assert!(wait_until(|| load(&drops) == 5));
    assert_eq!(load(&ran), 5);
    assert!(wait_until(|| core.is_freed()));
}

#[test]
fn dropping_the_last_handle_frees_delayed_tasks_the_policy_cancels() {
    let clock = ManualClock::new();
    let (builder, core) = Core::builder(1, &clock);
    let pool = builder
        .execute_existing_delayed_tasks_after_shutdown(false)
        .build();
    let drops = counter();
    let futs: Vec<_> = (0..5)
        .map(|i| pool.schedule(sec(1 + i), body(&drops)).unwrap())
        .collect();
    drop(pool);
    assert_eq!(load(&drops), 5, "freed by the drop itself");
    assert!(futs.iter().all(|f| f.is_cancelled()));
    drop(futs);
    assert!(wait_until(|| core.is_freed()));
}

#[test]
fn close_and_shutdown_now_free_every_queued_task() {
    let clock = ManualClock::new();
    let (builder, core) = Core::builder(2, &clock);
    let pool = builder.build();
    let drops = counter();
    for i in 0..6 {
        pool.schedule(sec(1 + i), body(&drops)).unwrap();
    }
    let periodic = pool
        .schedule_at_fixed_rate(sec(1), sec(1), body(&drops))
        .unwrap();
    let pending = pool.shutdown_now();
    assert_eq!(pending.len(), 7);
    assert_eq!(
        load(&drops),
        0,
        "the pending tasks still hold their closures"
    );
    let mut pending = pending.into_iter();
    pending.next().unwrap().run(); // runs (and frees) one on this thread
    assert_eq!(load(&drops), 1);
    drop(pending);
    assert_eq!(load(&drops), 7, "dropping the rest frees them");
    assert!(periodic.is_cancelled());
    pool.close();
    drop(pool);
    assert!(!core.is_freed(), "a future still holds the core");
    drop(periodic);
    assert!(wait_until(|| core.is_freed()));
}

#[test]
fn futures_and_handles_that_outlive_the_pool_free_it_when_they_go() {
    let clock = ManualClock::new();
    let (builder, core) = Core::builder(1, &clock);
    let pool = builder.build();
    let fut = pool.schedule(sec(1), || 1).unwrap();
    let handle = fut.cancel_handle();
    drop(pool);
    clock.advance(sec(1));
    assert_eq!(fut.get().unwrap(), 1);
    assert!(wait_until(|| load(&core.stopped) == 1), "the worker exited");
    assert!(!core.is_freed(), "the cancel handle still holds the core");
    drop(handle);
    assert!(wait_until(|| core.is_freed()));
}

// ---------------------------------------------------------------------------------------
// Outputs

#[test]
fn unclaimed_outputs_are_freed() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .build();
    let outputs = counter();
    let make = || {
        let outputs = outputs.clone();
        move || DropCount(outputs)
    };
    // Future dropped before the run: the worker frees the output after it.
    drop(pool.schedule(sec(1), make()).unwrap());
    // Future kept past the run, then dropped unclaimed.
    let kept = pool.schedule(sec(1), make()).unwrap();
    // Output taken by `get`, then dropped by the caller.
    let taken = pool.schedule(sec(1), make()).unwrap();
    // Output of a task handed back by `shutdown_now` and run on this thread.
    let pending_fut = pool.schedule(sec(2), make()).unwrap();
    clock.advance(sec(1));
    assert!(pool.wait_idle(BOUND));
    assert!(wait_until(|| load(&outputs) == 1));
    drop(kept);
    assert_eq!(load(&outputs), 2);
    drop(taken.get().unwrap());
    assert_eq!(load(&outputs), 3);
    for p in pool.shutdown_now() {
        p.run();
    }
    drop(pending_fut);
    assert_eq!(load(&outputs), 4);
    assert!(pool.await_termination(BOUND));
}

#[test]
fn panic_payloads_nobody_claims_are_freed() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let payloads = counter();
    let p = payloads.clone();
    let fut = pool
        .submit(move || -> u8 { std::panic::panic_any(DropCount(p)) })
        .unwrap();
    match fut.get() {
        Err(TaskError::Panicked(payload)) => drop(payload),
        other => panic!("expected a panic, got {other:?}"),
    }
    assert_eq!(load(&payloads), 1);
    let p = payloads.clone();
    pool.execute(move || std::panic::panic_any(DropCount(p)))
        .unwrap();
    pool.close();
    assert_eq!(
        load(&payloads),
        2,
        "the worker freed the payload nobody could claim"
    );
}

// ---------------------------------------------------------------------------------------
// Refused submissions

#[test]
fn refused_submissions_free_their_closures_before_returning() {
    let drops = counter();
    let full = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .max_queued_tasks(0)
        .build();
    assert_eq!(
        full.schedule(sec(1), body(&drops)).unwrap_err(),
        ScheduleError::QueueFull
    );
    assert_eq!(load(&drops), 1);
    full.shutdown();
    assert_eq!(
        full.schedule_at_fixed_rate(sec(1), sec(1), body(&drops))
            .unwrap_err(),
        ScheduleError::Shutdown
    );
    assert_eq!(load(&drops), 2);
    let discard = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .max_queued_tasks(0)
        .rejection_policy(RejectionPolicy::Discard)
        .build();
    let fut = discard.schedule(sec(1), body(&drops)).unwrap();
    assert_eq!(load(&drops), 3);
    assert!(fut.is_cancelled());
    let no_threads = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .thread_stack_size(usize::MAX)
        .build();
    assert!(matches!(
        no_threads.schedule(sec(1), body(&drops)).unwrap_err(),
        ScheduleError::ThreadSpawn(_)
    ));
    assert_eq!(load(&drops), 4);
    for pool in [full, discard, no_threads] {
        pool.close();
    }
}

// ---------------------------------------------------------------------------------------
// The public queues

#[test]
fn delay_and_priority_queues_free_their_elements() {
    #[derive(Debug)]
    struct Item {
        key: u32,
        _token: DropCount,
    }
    impl PartialEq for Item {
        fn eq(&self, other: &Self) -> bool {
            self.key == other.key
        }
    }
    impl Eq for Item {}
    impl PartialOrd for Item {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Item {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            self.key.cmp(&other.key)
        }
    }

    let drops = counter();
    let item = |key| Item {
        key,
        _token: DropCount(drops.clone()),
    };
    let clock = ManualClock::new();
    let dq = DelayQueue::with_clock(clock.clone());
    let key = dq.offer(item(1), sec(1));
    for v in 2..=4 {
        dq.offer(item(v), sec(v.into()));
    }
    drop(dq.remove(key));
    assert_eq!(load(&drops), 1);
    dq.clear();
    assert_eq!(load(&drops), 4);
    for v in 5..=7 {
        dq.offer(item(v), sec(1));
    }
    drop(dq);
    assert_eq!(load(&drops), 7, "a dropped DelayQueue frees its elements");

    let pq = PriorityBlockingQueue::new();
    let key = pq.offer(item(1));
    for v in 2..=4 {
        pq.offer(item(v));
    }
    drop(pq.remove(key));
    pq.clear();
    assert_eq!(load(&drops), 11);
    for v in 5..=7 {
        pq.offer(item(v));
    }
    drop(pq);
    assert_eq!(
        load(&drops),
        14,
        "a dropped PriorityBlockingQueue frees its elements"
    );
}

/// A trigger that keeps its own task's handle (to cancel itself from `next_deadline`,
/// say): task → trigger → handle → task. The trigger, and what it keeps, is dropped when
/// the task ends, however it ends; at 31fc6b6 the cycle kept both for good.
struct SelfAware {
    own: Arc<std::sync::Mutex<Option<schedpool::CancelHandle>>>,
    /// Dropped with the trigger.
    _token: DropCount,
    /// `None` from `next_deadline` after this many runs (0: never).
    stop_after: u64,
    /// Cancels its own task from `next_deadline` after this many runs (0: never), the
    /// handle kept.
    cancel_after: u64,
}

impl schedpool::Trigger for SelfAware {
    fn first_deadline(&mut self, earliest: std::time::Instant) -> Option<std::time::Instant> {
        Some(earliest)
    }

    fn next_deadline(&mut self, ctx: &schedpool::TriggerContext) -> Option<std::time::Instant> {
        let own = self.own.lock().unwrap();
        if self.cancel_after != 0 && ctx.runs == self.cancel_after {
            assert!(
                own.as_ref().unwrap().cancel(),
                "its own cancel, from inside"
            );
        }
        (self.stop_after == 0 || ctx.runs < self.stop_after).then(|| ctx.scheduled + sec(10))
    }
}

#[test]
fn a_trigger_that_keeps_its_own_task_is_dropped_when_the_task_ends() {
    use schedpool::{Next, TaskContext};
    for (name, stop_after, max_runs, stop_run, cancel_after) in [
        ("max_runs", 0, Some(2), false, 0),
        ("cancel", 0, None, false, 0),
        ("the trigger's None", 2, None, false, 0),
        ("Next::Stop", 0, None, true, 0),
        ("shutdown", 0, None, false, 0),
        ("its own cancel from next_deadline", 0, None, false, 2),
    ] {
        let clock = ManualClock::new();
        let pool = ScheduledThreadPoolExecutor::builder()
            .core_pool_size(1)
            .clock(clock.clone())
            .build();
        let own = Arc::new(std::sync::Mutex::new(None));
        let dropped = counter();
        let trigger = SelfAware {
            own: own.clone(),
            _token: DropCount(dropped.clone()),
            stop_after,
            cancel_after,
        };
        let mut spec = Periodic::with_trigger(trigger);
        if let Some(max) = max_runs {
            spec = spec.max_runs(max);
        }
        let mut runs = 0;
        let fut = pool
            .schedule_periodic_with_context(spec, move |_: &TaskContext<'_>| {
                runs += 1;
                if stop_run && runs == 2 {
                    Next::Stop
                } else {
                    Next::Continue
                }
            })
            .unwrap();
        *own.lock().unwrap() = Some(fut.cancel_handle()); // the cycle
        assert!(pool.wait_idle(BOUND));
        assert_eq!(load(&dropped), 0, "{name}: alive while the task is");
        match name {
            "cancel" => assert!(fut.cancel()),
            "shutdown" => {
                pool.shutdown();
                assert!(pool.await_termination(BOUND));
            }
            _ => {
                clock.advance(sec(30));
                assert!(pool.wait_idle(BOUND));
            }
        }
        assert!(fut.is_done(), "{name}: ended");
        drop(fut);
        assert!(
            wait_until(|| load(&dropped) == 1),
            "{name}: the trigger is dropped once its task ended"
        );
        pool.close();
    }
}
