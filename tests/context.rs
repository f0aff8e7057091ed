//! Tasks that know their context (`TaskContext`), cooperative interrupts
//! (`ScheduledFuture::interrupt`, `shutdown_now`) and periodic closures that steer
//! themselves (`Next`).
//!
//! Schedules run on a `ManualClock`; waits for another thread are bounded by `BOUND` and
//! wait for a condition, never for time to pass.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use schedpool::{
    CancelHandle, ManualClock, Next, Periodic, RejectionPolicy, ScheduledThreadPoolExecutor,
    TaskContext, TaskError,
};

mod common;
use common::{manual_pool, sec, DropCount, BOUND};

/// Starts a one-shot that signals once it runs, then spins until its context says stop,
/// and returns what it was holding. Returns its future and the "started" receiver.
fn spinner<T: Send + 'static>(
    pool: &ScheduledThreadPoolExecutor,
    out: T,
) -> (schedpool::ScheduledFuture<T>, mpsc::Receiver<()>) {
    let (started, on_start) = mpsc::channel();
    let fut = pool
        .schedule_with_context(Duration::ZERO, move |ctx| {
            started.send(()).unwrap();
            let give_up = Instant::now() + BOUND;
            while !ctx.is_cancelled() {
                assert!(Instant::now() < give_up, "never asked to stop");
                thread::yield_now();
            }
            out
        })
        .unwrap();
    (fut, on_start)
}

#[test]
fn a_one_shot_sees_its_deadline_run_count_and_kind() {
    let (clock, pool) = manual_pool(1);
    let due = clock.now() + sec(5);
    let (tx, rx) = mpsc::channel();
    let fut = pool
        .schedule_with_context(sec(5), move |ctx: &TaskContext<'_>| {
            tx.send((
                ctx.deadline(),
                ctx.started(),
                ctx.runs(),
                ctx.is_periodic(),
                ctx.is_cancelled(),
            ))
            .unwrap();
            "done"
        })
        .unwrap();
    clock.advance(sec(5));
    assert_eq!(fut.get().unwrap(), "done");
    let (deadline, started, runs, periodic, cancelled) = rx.recv_timeout(BOUND).unwrap();
    assert_eq!(deadline, due);
    assert!(started >= deadline);
    assert_eq!((runs, periodic, cancelled), (1, false, false));
    pool.close();
}

#[test]
fn a_periodic_task_can_cancel_itself_from_its_first_run() {
    // No Arc<OnceLock<CancelHandle>> and no race with the future being returned: the
    // handle comes from the context.
    let (clock, pool) = manual_pool(1);
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_periodic_with_context(Periodic::at_fixed_rate(sec(1)), move |ctx| {
            r.fetch_add(1, Ordering::SeqCst);
            assert!(ctx.is_periodic());
            assert!(
                ctx.cancel_handle().cancel(),
                "a running periodic task is cancellable"
            );
            assert!(ctx.is_cancelled(), "and the run sees it");
            Next::Continue
        })
        .unwrap();
    assert!(fut.get().unwrap_err().is_cancelled());
    clock.advance(sec(10));
    assert!(pool.wait_idle(BOUND));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "no run after the cancel");
    pool.close();
}

#[test]
fn a_cancel_handle_from_the_context_outlives_the_run() {
    let (clock, pool) = manual_pool(1);
    let (tx, rx) = mpsc::channel::<CancelHandle>();
    let fut = pool
        .schedule_periodic_with_context(Periodic::at_fixed_rate(sec(1)), move |ctx| {
            if ctx.runs() == 1 {
                tx.send(ctx.cancel_handle()).unwrap();
            }
            Next::Continue
        })
        .unwrap();
    let handle = rx.recv_timeout(BOUND).unwrap();
    assert!(pool.wait_idle(BOUND));
    assert!(!handle.is_done());
    assert!(
        handle.reschedule(clock.now() + sec(60)),
        "it re-times the task too"
    );
    assert!(handle.cancel());
    assert!(fut.get().unwrap_err().is_cancelled());
    pool.close();
}

#[test]
fn interrupt_cancels_a_running_one_shot_at_once_and_drops_its_output() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let drops = Arc::new(AtomicUsize::new(0));
    let (fut, on_start) = spinner(&pool, DropCount(drops.clone()));
    on_start.recv_timeout(BOUND).unwrap();
    assert!(
        !fut.cancel(),
        "a plain cancel leaves a running one-shot alone"
    );
    assert!(!fut.is_cancelled());
    assert!(fut.interrupt(), "an interrupt cancels it");
    assert!(fut.is_cancelled() && fut.is_done());
    assert!(!fut.interrupt(), "only once");
    assert!(matches!(fut.get(), Err(TaskError::Cancelled)));
    assert!(pool.wait_idle(BOUND), "the run noticed and ended");
    assert_eq!(drops.load(Ordering::SeqCst), 1, "its output was dropped");
    let stats = pool.stats();
    assert_eq!(
        stats.completed_task_count, 1,
        "the run still counts as a run"
    );
    pool.close();
}

#[test]
fn interrupt_of_a_pending_task_is_a_cancel_and_of_a_finished_one_nothing() {
    let (clock, pool) = manual_pool(1);
    let drops = Arc::new(AtomicUsize::new(0));
    let guard = DropCount(drops.clone());
    let pending = pool
        .schedule_with_context(sec(5), move |_| drop(guard))
        .unwrap();
    assert!(pending.cancel_handle().interrupt());
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the closure is dropped at once"
    );
    assert_eq!(pool.queue_len(), 0);
    assert!(pending.get().unwrap_err().is_cancelled());
    let finished = pool.submit(|| 1).unwrap();
    assert!(finished.wait_timeout(BOUND));
    assert!(!finished.interrupt());
    assert_eq!(finished.get().unwrap(), 1);
    clock.advance(sec(5));
    pool.close();
}

#[test]
fn interrupt_of_a_running_periodic_task_ends_it_after_this_run() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let runs = Arc::new(AtomicU64::new(0));
    let saw_stop = Arc::new(AtomicBool::new(false));
    let (started, on_start) = mpsc::channel();
    let (r, s) = (runs.clone(), saw_stop.clone());
    let fut = pool
        .schedule_periodic_with_context(
            Periodic::with_fixed_delay(Duration::from_millis(1)),
            move |ctx| {
                r.fetch_add(1, Ordering::SeqCst);
                let _ = started.send(());
                let give_up = Instant::now() + BOUND;
                while !ctx.is_cancelled() && Instant::now() < give_up {
                    thread::yield_now();
                }
                s.store(ctx.is_cancelled(), Ordering::SeqCst);
                Next::Continue
            },
        )
        .unwrap();
    on_start.recv_timeout(BOUND).unwrap();
    assert!(fut.interrupt());
    assert!(fut.get().unwrap_err().is_cancelled());
    assert!(pool.wait_idle(BOUND));
    assert!(saw_stop.load(Ordering::SeqCst));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    pool.close();
}

#[test]
fn shutdown_now_asks_running_tasks_to_stop_and_their_futures_keep_their_outcome() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let (fut, on_start) = spinner(&pool, 7u32);
    on_start.recv_timeout(BOUND).unwrap();
    let queued = pool.shutdown_now();
    assert!(queued.is_empty());
    assert_eq!(
        fut.get().unwrap(),
        7,
        "a one-shot that stops early keeps what it returned"
    );
    assert!(pool.await_termination(BOUND));
}

#[test]
fn a_pending_task_run_on_the_callers_thread_has_its_context() {
    let (_clock, pool) = manual_pool(1);
    let (tx, rx) = mpsc::channel();
    let fut = pool
        .schedule_with_context(sec(60), move |ctx| {
            tx.send(ctx.cancel_handle()).unwrap();
            assert!(
                !ctx.is_cancelled(),
                "the caller chose to run it: not asked to stop"
            );
            (ctx.runs(), thread::current().id())
        })
        .unwrap();
    let mut pending = pool.shutdown_now();
    assert_eq!(pending.len(), 1);
    pending.pop().unwrap().run();
    assert_eq!(fut.get().unwrap(), (1, thread::current().id()));
    assert!(rx.recv_timeout(BOUND).unwrap().is_done());
    assert!(pool.await_termination(BOUND));
}

#[test]
fn caller_runs_gives_a_rejected_task_its_context() {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .max_queued_tasks(1)
        .rejection_policy(RejectionPolicy::CallerRuns)
        .build();
    let _filler = pool.schedule(sec(60), || ()).unwrap();
    let here = thread::current().id();
    let fut = pool
        .schedule_with_context(sec(60), move |ctx| {
            assert_eq!(thread::current().id(), here, "run by the caller");
            assert!(
                !ctx.cancel_handle().cancel(),
                "already running: a one-shot stays"
            );
            ctx.runs()
        })
        .unwrap();
    assert_eq!(fut.get().unwrap(), 1);
    drop(pool.shutdown_now());
    assert!(pool.await_termination(BOUND));
}

// ---------------------------------------------------------------------------------------
// Periodic closures that steer themselves
// ---------------------------------------------------------------------------------------

/// What a run answers, given its context.
type Answer = Box<dyn Fn(&TaskContext<'_>) -> Next + Send>;

/// Runs a self-steering periodic task on virtual time and records when each run was due.
fn steer(
    spec: Periodic,
    answers: Vec<Answer>,
) -> (
    ManualClock,
    ScheduledThreadPoolExecutor,
    schedpool::ScheduledFuture<()>,
    Arc<Mutex<Vec<Duration>>>,
) {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let due = Arc::new(Mutex::new(Vec::new()));
    let d = due.clone();
    let mut answers = answers.into_iter();
    let fut = pool
        .schedule_periodic_with_context(spec, move |ctx| {
            d.lock().unwrap().push(ctx.deadline() - t0);
            answers.next().map_or(Next::Continue, |a| a(ctx))
        })
        .unwrap();
    (clock, pool, fut, due)
}

fn says(n: Next) -> Answer {
    Box::new(move |_| n)
}

/// Advances virtual time `ms` by `ms`, letting every due run finish after each step.
fn walk(clock: &ManualClock, pool: &ScheduledThreadPoolExecutor, steps: u64, ms: u64) {
    for _ in 0..steps {
        assert!(pool.wait_idle(BOUND));
        clock.advance(Duration::from_millis(ms));
    }
    assert!(pool.wait_idle(BOUND));
}

#[test]
fn next_after_and_at_move_the_next_run_and_the_rule_goes_on_from_there() {
    let ms = Duration::from_millis;
    let (clock, pool, fut, due) = steer(
        Periodic::at_fixed_rate(ms(10)).initial_delay(ms(10)),
        vec![
            says(Next::Continue),
            says(Next::After(ms(25))),
            says(Next::Continue),
            // An instant in the past: as soon as possible.
            Box::new(|ctx| Next::At(ctx.started() - Duration::from_millis(1))),
        ],
    );
    walk(&clock, &pool, 20, 5);
    let got = due.lock().unwrap().clone();
    assert_eq!(
        &got[..5],
        &[ms(10), ms(20), ms(45), ms(55), ms(54)],
        "rate; 25 ms after the run; rate from there; the named instant"
    );
    assert_eq!(got[5], ms(64), "the rate counts from the moved deadline");
    assert!(fut.cancel());
    pool.close();
}

#[test]
fn next_stop_completes_the_future_with_ok() {
    let (clock, pool, fut, due) = steer(
        Periodic::with_fixed_delay(sec(1)),
        vec![says(Next::Continue), says(Next::Stop)],
    );
    walk(&clock, &pool, 3, 1000);
    assert_eq!(fut.get().unwrap(), ());
    assert_eq!(due.lock().unwrap().len(), 2, "no run after Stop");
    pool.close();
}

#[test]
fn max_runs_still_bounds_a_self_steering_task() {
    let (clock, pool, fut, due) = steer(Periodic::at_fixed_rate(sec(1)).max_runs(2), vec![]);
    walk(&clock, &pool, 4, 1000);
    assert_eq!(fut.get().unwrap(), ());
    assert_eq!(due.lock().unwrap().len(), 2);
    pool.close();
}

// ---------------------------------------------------------------------------------------
// Fallible periodic tasks with back-off
// ---------------------------------------------------------------------------------------

/// A pool, a fallible task's future and the deadlines of its runs.
type Fallible = (
    ManualClock,
    ScheduledThreadPoolExecutor,
    schedpool::ScheduledFuture<Result<(), String>>,
    Arc<Mutex<Vec<Duration>>>,
);

/// Runs a fallible task on virtual time that fails or succeeds as `script` says (true:
/// fail), recording each run's deadline relative to the start.
fn fallible(spec: Periodic, script: Vec<bool>) -> Fallible {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let due = Arc::new(Mutex::new(Vec::new()));
    let d = due.clone();
    let mut script = script.into_iter();
    let fut = pool
        .schedule_fallible(spec, move |ctx| {
            d.lock().unwrap().push(ctx.deadline() - t0);
            match script.next() {
                Some(true) => Err(format!("failure at run {}", ctx.runs())),
                _ => Ok(Next::Continue),
            }
        })
        .unwrap();
    (clock, pool, fut, due)
}

#[test]
fn failed_runs_back_off_exponentially_up_to_the_cap_and_a_success_resets_it() {
    let ms = Duration::from_millis;
    let spec = Periodic::at_fixed_rate(ms(10)).backoff(schedpool::Backoff::new(ms(20), ms(50)));
    // fail, fail, fail, fail, ok, fail, ok, ok
    let (clock, pool, fut, due) = fallible(
        spec,
        vec![true, true, true, true, false, true, false, false],
    );
    walk(&clock, &pool, 60, 5);
    let got = due.lock().unwrap().clone();
    // Run 1 at 0 fails: wait 20; run 2 at 20 fails: 40; run 3 at 60 fails: 80 capped at 50;
    // run 4 at 110 fails: 50; run 5 at 160 succeeds: the rate, 170; run 6 at 170 fails:
    // back to the base, 20; run 7 at 190 succeeds: 200; run 8 at 200.
    assert_eq!(
        &got[..8],
        &[
            ms(0),
            ms(20),
            ms(60),
            ms(110),
            ms(160),
            ms(170),
            ms(190),
            ms(200)
        ],
        "{got:?}"
    );
    assert_eq!(pool.stats().failed_runs, 5);
    assert!(
        !fut.is_done(),
        "errors alone never stop a task without stop_after_errors"
    );
    assert!(fut.cancel());
    assert!(matches!(fut.get(), Err(TaskError::Cancelled)));
    pool.close();
}

#[test]
fn jitter_shortens_each_wait_by_at_most_its_fraction() {
    let ms = Duration::from_millis;
    let spec = Periodic::with_fixed_delay(ms(1000))
        .backoff(schedpool::Backoff::new(ms(100), ms(100)).jitter(0.5));
    let (clock, pool, fut, due) = fallible(spec, vec![true; 30]);
    walk(&clock, &pool, 300, 10);
    let got = due.lock().unwrap().clone();
    assert!(got.len() >= 20, "{got:?}");
    let waits: Vec<Duration> = got.windows(2).map(|w| w[1] - w[0]).collect();
    // Each wait is 50–100 ms from the end of the failed run, and a run starts up to one
    // 10 ms step of the walk after its deadline: 50–110 ms between deadlines.
    assert!(
        waits.iter().all(|w| *w >= ms(50) && *w <= ms(110)),
        "{waits:?}"
    );
    assert!(
        waits.iter().any(|w| *w < ms(90)),
        "some wait was shortened: {waits:?}"
    );
    assert!(fut.cancel());
    pool.close();
}

#[test]
fn stop_after_errors_ends_the_task_with_its_last_error_on_the_future() {
    let spec = Periodic::at_fixed_rate(sec(1)).stop_after_errors(2);
    // fail, ok (resets), fail, fail: stops at run 4.
    let (clock, pool, fut, due) = fallible(spec, vec![true, false, true, true, false]);
    walk(&clock, &pool, 6, 1000);
    assert_eq!(fut.get().unwrap(), Err("failure at run 4".to_owned()));
    assert_eq!(due.lock().unwrap().len(), 4, "no run after it stopped");
    assert_eq!(pool.stats().failed_runs, 3);
    pool.close();
}

#[test]
fn a_fallible_task_that_stops_itself_or_panics_reports_like_any_periodic_task() {
    let (clock, pool) = manual_pool(1);
    let fine = pool
        .schedule_fallible(Periodic::at_fixed_rate(sec(1)), |ctx| {
            Ok::<_, String>(if ctx.runs() == 2 {
                Next::Stop
            } else {
                Next::Continue
            })
        })
        .unwrap();
    let boom = pool
        .schedule_fallible(
            Periodic::at_fixed_rate(sec(1)),
            |_| -> Result<Next, String> { panic!("fallible boom") },
        )
        .unwrap();
    walk(&clock, &pool, 3, 1000);
    assert_eq!(fine.get().unwrap(), Ok(()));
    assert_eq!(
        boom.get().unwrap_err().panic_message(),
        Some("fallible boom")
    );
    pool.close();
}

// ---------------------------------------------------------------------------------------
// TaskContext::sleep
// ---------------------------------------------------------------------------------------

#[test]
fn sleep_returns_true_once_the_whole_time_passed() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let d = Duration::from_millis(20);
    let f = pool
        .schedule_with_context(Duration::ZERO, move |cx| {
            let start = Instant::now();
            (cx.sleep(d), start.elapsed())
        })
        .unwrap();
    let (whole, slept) = f.get().unwrap();
    assert!(whole, "not cancelled");
    assert!(slept >= d, "slept {slept:?} of {d:?}");
    pool.close();
}

/// A sleep of an hour that each way of asking a run to stop cuts short: an interrupt of a
/// one-shot, a cancel of a periodic task, `shutdown_now`. The sleep returns `false`.
#[test]
fn sleep_returns_false_as_soon_as_the_run_is_asked_to_stop() {
    for how in ["interrupt", "cancel periodic", "shutdown_now"] {
        let pool = ScheduledThreadPoolExecutor::new(1);
        let (asleep_tx, asleep) = mpsc::channel();
        let (woke_tx, woke) = mpsc::channel();
        let body = move |cx: &schedpool::TaskContext<'_>| {
            asleep_tx.send(()).unwrap();
            woke_tx.send(cx.sleep(Duration::from_secs(3600))).unwrap();
        };
        let handle = if how == "cancel periodic" {
            pool.schedule_periodic_with_context(
                schedpool::Periodic::at_fixed_rate(Duration::from_secs(7200)),
                move |cx| {
                    body(cx);
                    schedpool::Next::Continue
                },
            )
            .unwrap()
            .cancel_handle()
        } else {
            pool.schedule_with_context(Duration::ZERO, body)
                .unwrap()
                .cancel_handle()
        };
        asleep.recv_timeout(BOUND).expect("the run started");
        // Either order is right: asked before the sleep began (it returns at once) or
        // while it sleeps (it must be woken). The pause makes the second the usual one,
        // which is the one a missing wake-up would fail.
        thread::sleep(Duration::from_millis(20));
        match how {
            "interrupt" => assert!(handle.interrupt()),
            "cancel periodic" => assert!(handle.cancel()),
            _ => drop(pool.shutdown_now()),
        }
        assert_eq!(
            woke.recv_timeout(BOUND),
            Ok(false),
            "{how}: woken long before the hour"
        );
        pool.close();
    }
}

/// On a `ManualClock` a sleep waits for the clock, not for real time: it returns `true`
/// once the clock was advanced by its whole length from where the sleep began, however
/// the advances interleave with its start.
#[test]
fn sleep_on_a_manual_clock_waits_for_the_clock() {
    let (clock, pool) = manual_pool(1);
    let c = clock.clone();
    let f = pool
        .schedule_with_context(Duration::ZERO, move |cx| {
            let before = c.now();
            let whole = cx.sleep(sec(10));
            (whole, c.now() - before)
        })
        .unwrap();
    let real = Instant::now();
    let mut steps = 0;
    while !f.wait_timeout(Duration::from_millis(1)) {
        assert!(steps < 1_000, "never woke up");
        clock.advance(sec(1));
        steps += 1;
    }
    let (whole, slept) = f.get().unwrap();
    assert!(whole, "the whole time passed");
    assert!(slept >= sec(10), "woke after {slept:?} of virtual time");
    assert!(steps >= 10, "it took the clock's advances");
    assert!(real.elapsed() < sec(10), "not ten seconds of real time");
    pool.close();
}
