//! Scheduling control beyond Java: missed-tick policies, triggers, panic policy, start
//! deadlines, run limits, reschedule, wait_idle and lateness telemetry. All on ManualClock.

use schedpool::{
    Builder, ManualClock, MissedTicks, OnPanic, Periodic, ScheduleError,
    ScheduledThreadPoolExecutor, TaskError, Trigger, TriggerContext, WallClock,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

mod common;
use common::ms;

const LONG: Duration = Duration::from_secs(10);

fn pool(clock: &ManualClock, threads: usize) -> ScheduledThreadPoolExecutor {
    Builder::new()
        .core_pool_size(threads)
        .clock(clock.clone())
        .build()
}

/// A task that appends `name` to `order` when it runs.
fn recorder(order: &Arc<Mutex<Vec<&'static str>>>, name: &'static str) -> impl FnOnce() + Send {
    let order = order.clone();
    move || order.lock().unwrap().push(name)
}

/// Milliseconds of `clock` since `t0`.
fn at(clock: &ManualClock, t0: Instant) -> u64 {
    (clock.now() - t0).as_millis() as u64
}

/// Advances in `step` increments up to `until` ms, waiting for the pool to settle each time.
fn run_until(
    pool: &ScheduledThreadPoolExecutor,
    clock: &ManualClock,
    t0: Instant,
    step: u64,
    until: u64,
) {
    while at(clock, t0) < until {
        clock.advance(ms(step));
        assert!(pool.wait_idle(LONG));
    }
}

/// Period 10, first deadline 10, the first run takes 25 (it advances the clock itself):
/// the start times of `MissedTicks`'s table (its rustdoc).
fn missed_ticks_starts(policy: MissedTicks) -> Vec<u64> {
    let clock = ManualClock::new();
    let t0 = clock.now();
    let pool = pool(&clock, 1);
    let starts = Arc::new(Mutex::new(Vec::new()));
    let (s, c) = (starts.clone(), clock.clone());
    let spec = Periodic::at_fixed_rate(ms(10))
        .initial_delay(ms(10))
        .missed_ticks(policy);
    pool.schedule_periodic(spec, move || {
        let now = at(&c, t0);
        let mut starts = s.lock().unwrap();
        starts.push(now);
        if starts.len() == 1 {
            c.advance(ms(25)); // the first run takes 25
        }
    })
    .unwrap();
    run_until(&pool, &clock, t0, 5, 55);
    let starts = starts.lock().unwrap().clone();
    starts
}

#[test]
fn missed_ticks_burst_runs_overdue_ticks_back_to_back() {
    assert_eq!(
        missed_ticks_starts(MissedTicks::Burst),
        vec![10, 35, 35, 40, 50]
    );
}

#[test]
fn missed_ticks_delay_shifts_the_schedule_from_the_late_start() {
    assert_eq!(
        missed_ticks_starts(MissedTicks::Delay),
        vec![10, 35, 45, 55]
    );
}

#[test]
fn missed_ticks_skip_drops_missed_ticks() {
    assert_eq!(missed_ticks_starts(MissedTicks::Skip), vec![10, 35, 40, 50]);
}

#[test]
fn a_run_late_by_less_than_a_period_keeps_the_schedule_under_every_policy() {
    for policy in [MissedTicks::Burst, MissedTicks::Delay, MissedTicks::Skip] {
        let clock = ManualClock::new();
        let t0 = clock.now();
        let pool = pool(&clock, 1);
        let starts = Arc::new(Mutex::new(Vec::new()));
        let (s, c) = (starts.clone(), clock.clone());
        let spec = Periodic::at_fixed_rate(ms(10)).missed_ticks(policy);
        pool.schedule_periodic(spec, move || s.lock().unwrap().push(at(&c, t0)))
            .unwrap();
        assert!(pool.wait_idle(LONG)); // run at 0
        clock.advance(ms(14)); // the tick at 10 starts 4 late
        assert!(pool.wait_idle(LONG));
        run_until(&pool, &clock, t0, 1, 30);
        assert_eq!(*starts.lock().unwrap(), vec![0, 14, 20, 30], "{policy:?}");
    }
}

#[test]
fn on_panic_continue_counts_and_goes_on() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 1);
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let spec = Periodic::at_fixed_rate(ms(10))
        .on_panic(OnPanic::Continue)
        .max_runs(4);
    let fut = pool
        .schedule_periodic(spec, move || {
            if r.fetch_add(1, Ordering::SeqCst) % 2 == 0 {
                panic!("every other run fails");
            }
        })
        .unwrap();
    for _ in 0..4 {
        assert!(pool.wait_idle(LONG));
        clock.advance(ms(10));
    }
    assert!(fut.wait_timeout(LONG));
    assert!(
        fut.get().is_ok(),
        "panicked runs count toward max_runs; then Ok(())"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 4);
    let stats = pool.stats();
    assert_eq!(stats.panicked_count, 2);
    assert_eq!(stats.completed_task_count, 4);
}

#[test]
fn on_panic_stop_is_the_default() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 1);
    let fut = pool
        .schedule_periodic(Periodic::with_fixed_delay(ms(10)), || panic!("stop"))
        .unwrap();
    assert!(fut.wait_timeout(LONG));
    assert_eq!(fut.get().unwrap_err().panic_message(), Some("stop"));
}

#[test]
fn max_lateness_skips_stale_ticks_one_by_one() {
    let clock = ManualClock::new();
    let t0 = clock.now();
    let pool = pool(&clock, 1);
    let starts = Arc::new(Mutex::new(Vec::new()));
    let (s, c) = (starts.clone(), clock.clone());
    let spec = Periodic::at_fixed_rate(ms(10))
        .initial_delay(ms(10))
        .max_lateness(ms(5));
    pool.schedule_periodic(spec, move || s.lock().unwrap().push(at(&c, t0)))
        .unwrap();
    clock.advance(ms(30)); // ticks 10 and 20 are more than 5 late; tick 30 is on time
    assert!(pool.wait_idle(LONG));
    assert_eq!(*starts.lock().unwrap(), vec![30]);
    let stats = pool.stats();
    assert_eq!(stats.skipped_runs, 2);
    assert_eq!(
        stats.completed_task_count, 1,
        "skipped runs are not completed runs"
    );
    assert_eq!(stats.late_count, 0, "skipped runs are not late runs");
}

#[test]
fn lateness_equal_to_the_limit_is_not_skipped() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 1);
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let spec = Periodic::at_fixed_rate(ms(100))
        .initial_delay(ms(10))
        .max_lateness(ms(5));
    pool.schedule_periodic(spec, move || {
        r.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    clock.advance(ms(15)); // exactly 5 late: runs
    assert!(pool.wait_idle(LONG));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(pool.stats().skipped_runs, 0);
}

#[test]
fn max_runs_zero_completes_without_a_run() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 1);
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let fut = pool
        .schedule_periodic(Periodic::at_fixed_rate(ms(1)).max_runs(0), move || {
            r.store(true, Ordering::SeqCst)
        })
        .unwrap();
    assert!(fut.is_done());
    assert!(fut.get().is_ok());
    clock.advance(ms(10));
    assert!(pool.wait_idle(LONG));
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(pool.queue_len(), 0);
}

#[test]
fn zero_period_is_refused_for_every_rule() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 1);
    for spec in [
        Periodic::at_fixed_rate(Duration::ZERO),
        Periodic::with_fixed_delay(Duration::ZERO),
    ] {
        assert_eq!(
            pool.schedule_periodic(spec, || {}).unwrap_err(),
            ScheduleError::ZeroPeriod
        );
    }
    assert_eq!(pool.stats().rejected_count, 0);
}

/// Records every context it sees; finishes after `limit` runs; doubles the pause.
struct Backoff {
    pause: Duration,
    limit: u64,
    seen: Arc<Mutex<Vec<TriggerContext>>>,
}

impl Trigger for Backoff {
    fn next_deadline(&mut self, ctx: &TriggerContext) -> Option<Instant> {
        self.seen.lock().unwrap().push(*ctx);
        self.pause *= 2;
        (ctx.runs < self.limit).then(|| ctx.finished + self.pause)
    }
}

#[test]
fn a_trigger_sets_every_deadline_and_none_finishes_the_task() {
    let clock = ManualClock::new();
    let t0 = clock.now();
    let pool = pool(&clock, 1);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let starts = Arc::new(Mutex::new(Vec::new()));
    let trigger = Backoff {
        pause: ms(5),
        limit: 3,
        seen: seen.clone(),
    };
    let (s, c) = (starts.clone(), clock.clone());
    let fut = pool
        .schedule_periodic(
            Periodic::with_trigger(trigger).initial_delay(ms(1)),
            move || s.lock().unwrap().push(at(&c, t0)),
        )
        .unwrap();
    run_until(&pool, &clock, t0, 1, 40);
    assert!(fut.wait_timeout(LONG));
    assert!(fut.get().is_ok());
    // first at 1; then finished + 10 = 11; then + 20 = 31; the third run finishes the task
    assert_eq!(*starts.lock().unwrap(), vec![1, 11, 31]);
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.iter().map(|c| c.runs).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(seen[1].scheduled, t0 + ms(11));
    assert!(seen.iter().all(|c| !c.panicked));
}

#[test]
fn a_trigger_sees_panicked_runs_under_continue() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 1);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let trigger = Backoff {
        pause: ms(1),
        limit: 2,
        seen: seen.clone(),
    };
    let spec = Periodic::with_trigger(trigger).on_panic(OnPanic::Continue);
    let fut = pool.schedule_periodic(spec, || panic!("always")).unwrap();
    for _ in 0..5 {
        assert!(pool.wait_idle(LONG));
        clock.advance(ms(5));
    }
    assert!(fut.wait_timeout(LONG));
    assert!(fut.get().is_ok());
    assert!(seen.lock().unwrap().iter().all(|c| c.panicked));
}

struct Panicky {
    in_first: bool,
}

impl Trigger for Panicky {
    fn first_deadline(&mut self, earliest: Instant) -> Option<Instant> {
        if self.in_first {
            panic!("first");
        }
        Some(earliest)
    }
    fn next_deadline(&mut self, _: &TriggerContext) -> Option<Instant> {
        panic!("next");
    }
}

#[test]
fn a_panicking_trigger_stops_its_task() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 1);
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_periodic(
            Periodic::with_trigger(Panicky { in_first: false }),
            move || {
                r.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap();
    assert!(fut.wait_timeout(LONG));
    assert_eq!(fut.get().unwrap_err().panic_message(), Some("next"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let fut = pool
        .schedule_periodic(Periodic::with_trigger(Panicky { in_first: true }), || {})
        .expect("a trigger panicking in first_deadline is accepted");
    assert_eq!(fut.get().unwrap_err().panic_message(), Some("first"));
}

struct Never;

impl Trigger for Never {
    fn first_deadline(&mut self, _: Instant) -> Option<Instant> {
        None
    }
    fn next_deadline(&mut self, _: &TriggerContext) -> Option<Instant> {
        None
    }
}

#[test]
fn a_trigger_without_a_first_deadline_completes_at_once() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 1);
    let fut = pool
        .schedule_periodic(Periodic::with_trigger(Never), || {})
        .unwrap();
    assert!(fut.is_done());
    assert!(fut.get().is_ok());
}

/// `Never`, calling its missing first deadline a mistake.
struct NeverIsAMistake;

impl Trigger for NeverIsAMistake {
    fn first_deadline(&mut self, _: Instant) -> Option<Instant> {
        None
    }
    fn next_deadline(&mut self, _: &TriggerContext) -> Option<Instant> {
        None
    }
    fn refuse_if_never_due(&self) -> bool {
        true
    }
}

#[test]
fn a_trigger_that_calls_no_first_deadline_a_mistake_is_refused() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 1);
    let refused = pool.schedule_periodic(Periodic::with_trigger(NeverIsAMistake), || {});
    assert_eq!(refused.unwrap_err(), ScheduleError::NeverDue);
    assert_eq!(pool.stats().task_count, 0);
    // An argument error: it comes before the shutdown check, as `ZeroPeriod` does.
    pool.shutdown();
    let refused = pool.schedule_periodic(Periodic::with_trigger(NeverIsAMistake), || {});
    assert_eq!(refused.unwrap_err(), ScheduleError::NeverDue);
    // `max_runs(0)` ends a task that has a first deadline; it refuses nothing more.
    let clock = ManualClock::new();
    let pool = self::pool(&clock, 1);
    let fut = pool
        .schedule_periodic(Periodic::with_trigger(Never).max_runs(0), || {})
        .unwrap();
    assert!(fut.get().is_ok());
}

/// Records the clock it is handed and what it reads through it.
struct Clocked(Arc<Mutex<Vec<(Instant, SystemTime)>>>, Option<WallClock>);

impl Trigger for Clocked {
    fn first_deadline(&mut self, earliest: Instant) -> Option<Instant> {
        let clock = self.1.as_ref().expect("handed a clock first");
        self.0.lock().unwrap().push(clock.now());
        Some(earliest)
    }
    fn next_deadline(&mut self, ctx: &TriggerContext) -> Option<Instant> {
        let clock = self.1.as_ref().expect("kept");
        self.0.lock().unwrap().push(clock.now());
        (ctx.runs < 2).then(|| ctx.finished + ms(10))
    }
    fn use_clock(&mut self, clock: &WallClock) {
        self.1 = Some(clock.clone());
    }
}

#[test]
fn a_trigger_is_handed_the_executors_clock_and_its_wall_time() {
    let clock = ManualClock::new();
    let noon = SystemTime::UNIX_EPOCH + Duration::from_secs(1_717_243_200);
    clock.set_wall_time(noon);
    let pool = pool(&clock, 1);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let t0 = clock.now();
    let fut = pool
        .schedule_periodic(Periodic::with_trigger(Clocked(seen.clone(), None)), || {})
        .unwrap();
    assert!(pool.wait_idle(LONG));
    clock.advance(ms(10));
    fut.get().unwrap();
    // Read at scheduling, after run 1 (at t0) and after run 2 (10 ms on): the virtual
    // instants, and the fake wall clock moving with them.
    let readings = seen.lock().unwrap().clone();
    assert_eq!(
        readings,
        [(t0, noon), (t0, noon), (t0 + ms(10), noon + ms(10)),]
    );
}

/// Counts calls; every deadline is 1 ms after the previous finish.
struct Counting(Arc<AtomicU64>);

impl Trigger for Counting {
    fn next_deadline(&mut self, ctx: &TriggerContext) -> Option<Instant> {
        self.0.fetch_add(1, Ordering::SeqCst);
        (ctx.runs < 2).then(|| ctx.finished + ms(1))
    }
}

#[test]
fn clones_of_a_trigger_spec_share_one_trigger() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 2);
    let calls = Arc::new(AtomicU64::new(0));
    let spec = Periodic::with_trigger(Counting(calls.clone()));
    let a = pool.schedule_periodic(spec.clone(), || {}).unwrap();
    let b = pool.schedule_periodic(spec, || {}).unwrap();
    for _ in 0..3 {
        assert!(pool.wait_idle(LONG));
        clock.advance(ms(1));
    }
    assert!(a.wait_timeout(LONG) && b.wait_timeout(LONG));
    // Both tasks consult the same trigger object (2 runs each => 4 calls on one counter).
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[test]
fn reschedule_moves_a_queued_one_shot_both_ways() {
    let clock = ManualClock::new();
    let t0 = clock.now();
    let pool = pool(&clock, 1);
    let fut = pool.schedule(ms(100), || 1).unwrap();
    assert!(fut.reschedule(t0 + ms(10)));
    assert_eq!(fut.deadline(), t0 + ms(10));
    clock.advance(ms(10));
    assert!(fut.wait_timeout(LONG), "ran at the earlier deadline");

    let late = pool.schedule(ms(5), || 2).unwrap();
    assert!(late.cancel_handle().reschedule(t0 + ms(500)));
    clock.advance(ms(100));
    assert!(pool.wait_idle(LONG));
    assert!(!late.is_done(), "the old deadline no longer applies");
    clock.advance(ms(400));
    assert_eq!(late.get().unwrap(), 2);
}

#[test]
fn a_rescheduled_task_goes_behind_tasks_with_the_same_deadline() {
    let clock = ManualClock::new();
    let t0 = clock.now();
    let pool = pool(&clock, 1);
    let order = Arc::new(Mutex::new(Vec::new()));
    let push = |name: &'static str| recorder(&order, name);
    let a = pool.schedule(ms(10), push("a")).unwrap();
    pool.schedule(ms(10), push("b")).unwrap();
    assert!(a.reschedule(t0 + ms(10))); // same deadline, new sequence number
    clock.advance(ms(10));
    assert!(pool.wait_idle(LONG));
    assert_eq!(*order.lock().unwrap(), vec!["b", "a"]);
}

#[test]
fn reschedule_after_counts_the_delay_from_the_executors_clock() {
    let clock = ManualClock::new();
    let t0 = clock.now();
    let pool = pool(&clock, 1);
    let fut = pool.schedule(ms(100), || 1).unwrap();
    clock.advance(ms(30));
    assert!(fut.reschedule_after(ms(50)), "later");
    assert_eq!(fut.deadline(), t0 + ms(80));
    clock.advance(ms(49));
    assert!(pool.wait_idle(LONG));
    assert!(!fut.is_done(), "not before its new deadline");
    clock.advance(ms(1));
    assert!(fut.wait_timeout(LONG));
    assert_eq!(fut.get().unwrap(), 1);

    let handle_side = pool.schedule(ms(500), || 2).unwrap();
    assert!(
        handle_side.cancel_handle().reschedule_after(ms(10)),
        "earlier, through a CancelHandle"
    );
    assert_eq!(handle_side.deadline(), t0 + ms(90));
    clock.advance(ms(10));
    assert_eq!(handle_side.get().unwrap(), 2);

    let zero = pool.schedule(ms(500), || 3).unwrap();
    assert!(zero.reschedule_after(Duration::ZERO), "due now");
    assert_eq!(zero.get().unwrap(), 3, "runs without the clock moving");
}

#[test]
fn a_task_rescheduled_after_a_delay_goes_behind_tasks_with_the_same_deadline() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 1);
    let order = Arc::new(Mutex::new(Vec::new()));
    let push = |name: &'static str| recorder(&order, name);
    let a = pool.schedule(ms(10), push("a")).unwrap();
    let b = pool.schedule(ms(10), push("b")).unwrap();
    pool.schedule(ms(10), push("c")).unwrap();
    assert!(b.reschedule_after(ms(10))); // the same deadline, a new sequence number
    assert!(a.reschedule_after(ms(10)));
    clock.advance(ms(10));
    assert!(pool.wait_idle(LONG));
    assert_eq!(*order.lock().unwrap(), vec!["c", "b", "a"]);
}

#[test]
fn reschedule_after_returns_false_when_it_cannot_apply() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 1);
    let done = pool.submit(|| ()).unwrap();
    assert!(done.wait_timeout(LONG));
    assert!(!done.reschedule_after(ms(1)), "finished");
    let cancelled = pool.schedule(ms(5), || ()).unwrap();
    assert!(cancelled.cancel());
    assert!(!cancelled.reschedule_after(ms(1)), "cancelled");
    assert!(
        !cancelled.cancel_handle().reschedule_after(ms(1)),
        "cancelled, through a handle"
    );
    let pending = pool.schedule(ms(50), || ()).unwrap();
    assert_eq!(pool.shutdown_now().len(), 1);
    assert!(
        !pending.reschedule_after(ms(1)),
        "handed out by shutdown_now"
    );
}

#[test]
fn reschedule_of_a_running_periodic_task_moves_its_next_run() {
    let clock = ManualClock::new();
    let t0 = clock.now();
    let pool = pool(&clock, 1);
    let starts = Arc::new(Mutex::new(Vec::new()));
    let handle = Arc::new(Mutex::new(None::<schedpool::CancelHandle>));
    let (s, c, h) = (starts.clone(), clock.clone(), handle.clone());
    let fut = pool
        .schedule_periodic(
            Periodic::at_fixed_rate(ms(10)).initial_delay(ms(10)),
            move || {
                let mut starts = s.lock().unwrap();
                starts.push(at(&c, t0));
                if starts.len() == 1 {
                    let handle = h.lock().unwrap();
                    assert!(handle.as_ref().unwrap().reschedule(t0 + ms(100)));
                }
            },
        )
        .unwrap();
    *handle.lock().unwrap() = Some(fut.cancel_handle());
    run_until(&pool, &clock, t0, 10, 120);
    assert_eq!(*starts.lock().unwrap(), vec![10, 100, 110, 120]);
}

#[test]
fn reschedule_returns_false_when_it_cannot_apply() {
    let clock = ManualClock::new();
    let t0 = clock.now();
    let pool = pool(&clock, 1);
    let done = pool.submit(|| ()).unwrap();
    assert!(done.wait_timeout(LONG));
    assert!(!done.reschedule(t0 + ms(1)), "finished");
    let cancelled = pool.schedule(ms(5), || ()).unwrap();
    cancelled.cancel();
    assert!(!cancelled.reschedule(t0 + ms(1)), "cancelled");

    let (entered_tx, entered_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let running = pool
        .submit(move || {
            entered_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        })
        .unwrap();
    entered_rx.recv_timeout(LONG).unwrap();
    assert!(!running.reschedule(t0 + ms(1)), "a running one-shot");
    release_tx.send(()).unwrap();
    assert!(running.wait_timeout(LONG));

    let pending = pool.schedule(ms(50), || ()).unwrap();
    let handed_out = pool.shutdown_now();
    assert_eq!(handed_out.len(), 1);
    assert!(
        !pending.reschedule(t0 + ms(1)),
        "handed out by shutdown_now"
    );
}

/// A periodic task running when `shutdown_now` comes is not re-queued after its run, so
/// its next run cannot be moved: `reschedule` says false (a survivor of the mutation run
/// turned that guard into `true`).
#[test]
fn reschedule_of_a_periodic_task_running_through_shutdown_now_is_refused() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 1);
    let (entered_tx, entered_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let fut = pool
        .schedule_periodic(Periodic::at_fixed_rate(ms(10)), move || {
            entered_tx.send(()).unwrap();
            let _ = release_rx.recv();
        })
        .unwrap();
    entered_rx.recv_timeout(LONG).unwrap();
    assert!(
        fut.reschedule(clock.now() + ms(50)),
        "running, before shutdown_now"
    );
    assert!(
        pool.shutdown_now().is_empty(),
        "nothing queued: it is running"
    );
    assert!(
        !fut.reschedule(clock.now() + ms(50)),
        "after shutdown_now its next run will not be queued"
    );
    release_tx.send(()).unwrap();
    assert!(fut.wait_timeout(LONG));
    assert!(fut.get().unwrap_err().is_cancelled());
}

#[test]
fn wait_idle_from_a_worker_returns_false_at_once() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 1);
    let inner = pool.clone();
    let fut = pool.submit(move || inner.wait_idle(LONG)).unwrap();
    assert!(!fut.get().unwrap());
}

#[test]
fn wait_idle_times_out_while_a_task_runs() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 1);
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (entered_tx, entered_rx) = mpsc::channel();
    let fut = pool
        .submit(move || {
            entered_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        })
        .unwrap();
    entered_rx.recv_timeout(LONG).unwrap();
    assert!(!pool.wait_idle(ms(20)));
    release_tx.send(()).unwrap();
    assert!(pool.wait_idle(LONG));
    assert!(fut.is_done());
}

#[test]
fn lateness_telemetry_counts_late_runs_and_summarises() {
    let clock = ManualClock::new();
    let pool = Builder::new()
        .core_pool_size(1)
        .clock(clock.clone())
        .late_threshold(ms(5))
        .build();
    for delay in [10, 20, 30, 40] {
        pool.schedule(ms(delay), || ()).unwrap();
    }
    clock.advance(ms(25)); // due at 10 and 20: 15 and 5 late
    assert!(pool.wait_idle(LONG));
    clock.advance(ms(15)); // due at 30 and 40: 10 and 0 late
    assert!(pool.wait_idle(LONG));
    let stats = pool.stats();
    assert_eq!(stats.completed_task_count, 4);
    assert_eq!(
        stats.late_count, 2,
        "15 and 10 are late; 5 is not (strictly greater)"
    );
    assert_eq!(stats.lateness_max, ms(15));
    let near = |d: Duration, want: Duration| d <= want && want - d <= want / 32;
    assert!(near(stats.lateness_p50, ms(5)), "{:?}", stats.lateness_p50);
    assert!(near(stats.lateness_p99, ms(15)), "{:?}", stats.lateness_p99);
}

#[test]
fn java_style_methods_are_periodic_specs_with_defaults() {
    let clock = ManualClock::new();
    let pool = pool(&clock, 1);
    let fut = pool
        .schedule_at_fixed_rate(Duration::ZERO, ms(10), || panic!("x"))
        .unwrap();
    assert!(fut.wait_timeout(LONG));
    assert!(
        matches!(fut.get(), Err(TaskError::Panicked(_))),
        "OnPanic::Stop by default"
    );
}
