//! Async job bodies (`schedule_async` and its periodic forms): a run awaits its future on
//! the job's worker, with a closure's semantics (output, error, panic, one run at a time,
//! a fixed delay from the future's completion), and an interrupt or `shutdown_now` drops
//! the future at its await point.
//!
//! The semantics run on every runtime: `ParkingRuntime` in every build, and with the
//! cargo feature `tokio` (`cargo test --features tokio --test async_bodies`) a
//! `multi_thread` tokio runtime's `Handle` too (the `on_each_runtime!` modules). The
//! bodies await what the test controls (`tokio::sync` channels, which need no reactor),
//! so the pool's `ManualClock` decides every deadline. The `current_thread` cases are at
//! the end, feature `tokio` only.

mod common;

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use common::{counter, load, manual_pool, ms, outcome, sec, wait_for, DropCount, BOUND};
use schedpool::{
    AsyncRuntime, Backoff, Next, OnPanic, ParkingRuntime, Periodic, ScheduledThreadPoolExecutor,
    TaskError,
};
use tokio::sync::oneshot;

/// A future that is pending once (its waker woken at once), then ready.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A future that never completes (and is woken by nobody but the pool).
async fn forever() {
    std::future::pending::<()>().await
}

/// A job's start, told to the test from inside the future (before it awaits).
fn started() -> (mpsc::Sender<()>, mpsc::Receiver<()>) {
    mpsc::channel()
}

fn wait_started(rx: &mpsc::Receiver<()>) {
    rx.recv_timeout(BOUND).expect("the job's future started");
}

fn output<R: AsyncRuntime>(rt: R) {
    let (clock, pool) = manual_pool(1);
    let job = pool
        .schedule_async(sec(5), rt, || async {
            YieldOnce(false).await;
            6 * 7
        })
        .unwrap();
    assert!(!job.is_done(), "not due");
    clock.advance(sec(5));
    assert_eq!(outcome(job).unwrap(), 42);
    assert_eq!(pool.stats().completed_task_count, 1);
}

fn error_output<R: AsyncRuntime>(rt: R) {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let job = pool
        .schedule_async(Duration::ZERO, rt, || async {
            YieldOnce(false).await;
            "12x".parse::<u32>()
        })
        .unwrap();
    assert!(outcome(job).unwrap().is_err(), "the error is the output");
    assert_eq!(pool.stats().panicked_count, 0);
}

fn a_future_that_is_not_send<R: AsyncRuntime>(rt: R) {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let job = pool
        .schedule_async(Duration::ZERO, rt, || async {
            let here = Rc::new(Cell::new(1)); // held across an await: the future is !Send
            YieldOnce(false).await;
            here.set(here.get() + 1);
            here.get()
        })
        .unwrap();
    assert_eq!(outcome(job).unwrap(), 2);
}

fn panics<R: AsyncRuntime + Clone>(rt: R) {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let drops = counter();
    let guard = DropCount(drops.clone());
    let job = pool
        .schedule_async(Duration::ZERO, rt.clone(), move || async move {
            let _guard = guard;
            YieldOnce(false).await;
            if load(&AtomicUsize::new(1)) == 1 {
                panic!("boom after an await");
            }
        })
        .unwrap();
    match outcome(job) {
        Err(TaskError::Panicked(p)) => assert_eq!(p.message(), Some("boom after an await")),
        other => panic!("expected the panic, got {other:?}"),
    }
    assert_eq!(load(&drops), 1, "the future was dropped");
    let made = pool
        .schedule_async(Duration::ZERO, rt.clone(), || -> YieldOnce {
            panic!("boom while making it")
        })
        .unwrap();
    let err = outcome(made).unwrap_err();
    assert_eq!(err.panic_message(), Some("boom while making it"));
    let after = pool
        .schedule_async(Duration::ZERO, rt, || async { 1 })
        .unwrap();
    assert_eq!(outcome(after).unwrap(), 1, "the worker survived");
    assert_eq!(pool.stats().panicked_count, 2);
}

fn periodic_panics_follow_on_panic<R: AsyncRuntime + Clone>(rt: R) {
    let (clock, pool) = manual_pool(1);
    let runs = counter();
    let r = runs.clone();
    let spec = Periodic::at_fixed_rate(sec(1))
        .on_panic(OnPanic::Continue)
        .max_runs(3);
    let going_on = pool
        .schedule_periodic_async(spec, rt.clone(), move || {
            let n = r.fetch_add(1, Ordering::SeqCst);
            async move {
                YieldOnce(false).await;
                assert!(n != 0, "the first run panics");
            }
        })
        .unwrap();
    for _ in 0..2 {
        pool.wait_idle(BOUND);
        clock.advance(sec(1));
    }
    assert_eq!(
        outcome(going_on).unwrap(),
        (),
        "OnPanic::Continue: three runs"
    );
    assert_eq!(load(&runs), 3);
    let stops = pool
        .schedule_periodic_async(Periodic::at_fixed_rate(sec(1)), rt, || async {
            panic!("stop here")
        })
        .unwrap();
    assert_eq!(
        outcome(stops).unwrap_err().panic_message(),
        Some("stop here")
    );
    assert_eq!(pool.stats().panicked_count, 2);
}

/// The future of a running job awaits something that never comes; an interrupt drops it
/// there, its future says `Cancelled` at once, and the worker is free.
fn interrupt_drops_the_future_mid_await<R: AsyncRuntime + Clone>(rt: R) {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let drops = counter();
    let guard = DropCount(drops.clone());
    let (tx, rx) = started();
    let job = pool
        .schedule_async(Duration::ZERO, rt.clone(), move || async move {
            let _guard = guard;
            tx.send(()).unwrap();
            forever().await;
            unreachable!("never woken but to be dropped")
        })
        .unwrap();
    wait_started(&rx);
    assert!(
        !job.cancel(),
        "a plain cancel leaves a running one-shot alone"
    );
    assert!(job.interrupt());
    wait_for("the future was dropped", || load(&drops) == 1);
    assert!(matches!(outcome(job), Err(TaskError::Cancelled)));
    assert!(pool.wait_idle(BOUND), "the worker is free");
    let next = pool
        .schedule_async(Duration::ZERO, rt, || async { 7 })
        .unwrap();
    assert_eq!(outcome(next).unwrap(), 7);
    let stats = pool.stats();
    assert_eq!((stats.panicked_count, stats.completed_task_count), (0, 2));
}

/// `cancel` of a running one-shot: the future runs to completion and its output counts.
fn cancel_lets_a_running_one_shot_complete<R: AsyncRuntime>(rt: R) {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let (tx, rx) = started();
    let (release, released) = oneshot::channel::<u32>();
    let job = pool
        .schedule_async(Duration::ZERO, rt, move || async move {
            tx.send(()).unwrap();
            released.await.unwrap() * 2
        })
        .unwrap();
    wait_started(&rx);
    assert!(!job.cancel());
    assert!(!job.is_done());
    release.send(21).unwrap();
    assert_eq!(outcome(job).unwrap(), 42);
}

/// `cancel` of a running periodic task: the current run's future completes (it is not
/// dropped), and no run follows; an interrupt instead drops it.
fn periodic_cancel_completes_the_run_interrupt_drops_it<R: AsyncRuntime + Clone>(rt: R) {
    let (clock, pool) = manual_pool(1);
    let (tx, rx) = started();
    let (done_tx, done_rx) = mpsc::channel::<&str>();
    let (release, released) = oneshot::channel::<()>();
    let mut released = Some(released);
    let cancelled = pool
        .schedule_periodic_async(Periodic::at_fixed_rate(sec(1)), rt.clone(), move || {
            let (tx, done_tx) = (tx.clone(), done_tx.clone());
            let released = released.take().expect("one run only");
            async move {
                tx.send(()).unwrap();
                released.await.unwrap();
                done_tx.send("completed").unwrap();
            }
        })
        .unwrap();
    wait_started(&rx);
    assert!(cancelled.cancel(), "a running periodic task is cancelled");
    assert!(cancelled.is_done());
    clock.advance(sec(5)); // no second run, however late
    release.send(()).unwrap();
    assert_eq!(done_rx.recv_timeout(BOUND), Ok("completed"), "not dropped");
    assert!(matches!(outcome(cancelled), Err(TaskError::Cancelled)));
    assert!(pool.wait_idle(BOUND));

    let drops = counter();
    let d = drops.clone();
    let (tx, rx) = started();
    let interrupted = pool
        .schedule_periodic_async(Periodic::at_fixed_rate(sec(1)), rt, move || {
            let (guard, tx) = (DropCount(d.clone()), tx.clone());
            async move {
                let _guard = guard;
                tx.send(()).unwrap();
                forever().await
            }
        })
        .unwrap();
    wait_started(&rx);
    assert!(interrupted.interrupt());
    wait_for("the run's future was dropped", || load(&drops) == 1);
    assert!(matches!(outcome(interrupted), Err(TaskError::Cancelled)));
    assert!(pool.wait_idle(BOUND));
    assert_eq!(
        pool.stats().completed_task_count,
        2,
        "each run counted once"
    );
}

/// `shutdown_now` drops the futures of running async jobs, one-shot and periodic (even
/// one at its `max_runs`), and the pool terminates.
fn shutdown_now_drops_running_futures<R: AsyncRuntime + Clone>(rt: R) {
    let pool = ScheduledThreadPoolExecutor::new(2);
    let drops = counter();
    let (tx, rx) = started();
    let (guard, tx1) = (DropCount(drops.clone()), tx.clone());
    let once = pool
        .schedule_async(Duration::ZERO, rt.clone(), move || async move {
            let _guard = guard;
            tx1.send(()).unwrap();
            forever().await
        })
        .unwrap();
    let d = drops.clone();
    let periodic = pool
        .schedule_periodic_async(Periodic::at_fixed_rate(sec(1)).max_runs(1), rt, move || {
            let (guard, tx) = (DropCount(d.clone()), tx.clone());
            async move {
                let _guard = guard;
                tx.send(()).unwrap();
                forever().await
            }
        })
        .unwrap();
    wait_started(&rx);
    wait_started(&rx);
    assert!(pool.shutdown_now().is_empty());
    assert!(pool.await_termination(BOUND), "both runs ended");
    assert_eq!(load(&drops), 2);
    assert!(matches!(outcome(once), Err(TaskError::Cancelled)));
    assert!(
        matches!(outcome(periodic), Err(TaskError::Cancelled)),
        "stopped, not done by max_runs"
    );
}

/// Fixed delay counts from the future's completion: a run that awaits while the clock
/// moves 5 s is followed by one 10 s after it completed; the worker stays busy (one run at
/// a time, `active_count`, `wait_idle`).
fn fixed_delay_from_completion<R: AsyncRuntime>(rt: R) {
    let (clock, pool) = manual_pool(2);
    let t0 = clock.now();
    let (tx, rx) = started();
    let (release_tx, release_rx) = mpsc::channel::<oneshot::Sender<()>>();
    let runs = counter();
    let r = runs.clone();
    let job = pool
        .schedule_periodic_async(Periodic::with_fixed_delay(sec(10)), rt, move || {
            r.fetch_add(1, Ordering::SeqCst);
            let (release, released) = oneshot::channel();
            release_tx.send(release).unwrap();
            let tx = tx.clone();
            async move {
                tx.send(()).unwrap();
                released.await.unwrap();
            }
        })
        .unwrap();
    wait_started(&rx);
    clock.advance(sec(5)); // the run still awaits at t0 + 5
    assert!(!pool.wait_idle(ms(50)), "an awaiting run is a running one");
    assert_eq!(pool.stats().active_count, 1);
    assert_eq!(load(&runs), 1, "one run at a time");
    release_rx.recv_timeout(BOUND).unwrap().send(()).unwrap();
    assert!(pool.wait_idle(BOUND));
    assert_eq!(job.deadline(), t0 + sec(15), "completion + delay");
    clock.advance(sec(10));
    wait_started(&rx);
    assert_eq!(load(&runs), 2);
    job.cancel();
    release_rx.recv_timeout(BOUND).unwrap().send(()).unwrap();
    assert!(pool.wait_idle(BOUND));
}

/// A fallible async task: its errors are counted and backed off, and the one that stops
/// it is its future's.
fn fallible<R: AsyncRuntime>(rt: R) {
    let (clock, pool) = manual_pool(1);
    let calls = counter();
    let c = calls.clone();
    let spec = Periodic::with_fixed_delay(sec(1))
        .backoff(Backoff::new(sec(10), sec(60)).jitter(0.0))
        .stop_after_errors(2);
    let job = pool
        .schedule_fallible_async(spec, rt, move |ctx| {
            let n = c.fetch_add(1, Ordering::SeqCst) + 1;
            let runs = ctx.runs();
            async move {
                YieldOnce(false).await;
                match n {
                    1 => Ok(Next::Continue),
                    _ => Err(format!("failed in run {runs}")),
                }
            }
        })
        .unwrap();
    pool.wait_idle(BOUND);
    clock.advance(sec(1));
    pool.wait_idle(BOUND);
    clock.advance(sec(10)); // the back-off after the first error
    assert_eq!(outcome(job).unwrap(), Err("failed in run 3".to_string()));
    assert_eq!((load(&calls), pool.stats().failed_runs), (3, 2));
}

/// Runs each named test function once per runtime: `ParkingRuntime`, and with the
/// feature `tokio` a `multi_thread` runtime's `Handle`.
macro_rules! on_each_runtime {
    ($($name:ident),* $(,)?) => {
        mod parking {
            use schedpool::ParkingRuntime;
            $(#[test]
            fn $name() {
                super::$name(ParkingRuntime);
            })*
        }

        #[cfg(feature = "tokio")]
        mod tokio_multi_thread {
            $(#[test]
            fn $name() {
                let rt = super::multi_thread();
                super::$name(rt.handle().clone());
            })*
        }
    };
}

on_each_runtime!(
    output,
    error_output,
    a_future_that_is_not_send,
    panics,
    periodic_panics_follow_on_panic,
    interrupt_drops_the_future_mid_await,
    cancel_lets_a_running_one_shot_complete,
    periodic_cancel_completes_the_run_interrupt_drops_it,
    shutdown_now_drops_running_futures,
    fixed_delay_from_completion,
    fallible,
);

/// A parking runtime of one run that counts its waker's wake-ups, and tells when the run
/// first went pending (by then the pool lists it among the waiting runs).
#[derive(Clone, Default)]
struct CountingRuntime {
    wakes: Arc<AtomicUsize>,
    pending: Arc<AtomicUsize>,
}

struct CountedUnpark(std::thread::Thread, Arc<AtomicUsize>);

impl std::task::Wake for CountedUnpark {
    fn wake(self: Arc<Self>) {
        self.1.fetch_add(1, Ordering::SeqCst);
        self.0.unpark();
    }
}

impl AsyncRuntime for CountingRuntime {
    fn block_on(&self, mut future: Pin<&mut (dyn Future<Output = ()> + '_)>) {
        let unpark = CountedUnpark(std::thread::current(), self.wakes.clone());
        let waker = std::task::Waker::from(Arc::new(unpark));
        let mut cx = Context::from_waker(&waker);
        while future.as_mut().poll(&mut cx).is_pending() {
            self.pending.fetch_add(1, Ordering::SeqCst);
            std::thread::park();
        }
    }
}

/// An interrupt wakes its own task's run only: three others awaiting beside it on their
/// workers are not woken (a cancel used to wake every waiting run: with a thousand
/// awaiting, a thousand spurious polls; `docs/BENCHMARKS.md`, "A cancel wakes its own
/// run"). `shutdown_now` then wakes them all.
#[test]
fn an_interrupt_wakes_its_own_run_and_no_other() {
    let pool = ScheduledThreadPoolExecutor::new(4);
    let runtimes: Vec<CountingRuntime> = (0..4).map(|_| CountingRuntime::default()).collect();
    let jobs: Vec<_> = runtimes
        .iter()
        .map(|rt| {
            pool.schedule_async(Duration::ZERO, rt.clone(), forever)
                .unwrap()
        })
        .collect();
    wait_for("every run awaits", || {
        runtimes
            .iter()
            .all(|rt| rt.pending.load(Ordering::SeqCst) > 0)
    });
    let mut jobs = jobs.into_iter();
    let first = jobs.next().unwrap();
    assert!(first.interrupt());
    assert!(matches!(outcome(first), Err(TaskError::Cancelled)));
    assert_eq!(
        runtimes[0].wakes.load(Ordering::SeqCst),
        1,
        "its own run is woken"
    );
    for rt in &runtimes[1..] {
        assert_eq!(rt.wakes.load(Ordering::SeqCst), 0, "another run was woken");
    }
    let rest: Vec<_> = jobs.collect();
    pool.shutdown_now();
    for job in rest {
        assert!(matches!(outcome(job), Err(TaskError::Cancelled)));
    }
    for rt in &runtimes[1..] {
        assert_eq!(
            rt.wakes.load(Ordering::SeqCst),
            1,
            "shutdown_now wakes every run"
        );
    }
    pool.close();
}

/// An async job handed back by `shutdown_now` runs on the caller's thread
/// (`PendingTask::run`), where `shutdown_now` does not stop it: its future completes.
#[test]
fn a_pending_async_job_runs_on_the_callers_thread() {
    let (_clock, pool) = manual_pool(1);
    let caller = std::thread::current().id();
    let job = pool
        .schedule_async(sec(60), ParkingRuntime, move || async move {
            YieldOnce(false).await;
            std::thread::current().id() == caller
        })
        .unwrap();
    let mut pending = pool.shutdown_now();
    assert_eq!(pending.len(), 1);
    pending.pop().unwrap().run();
    assert!(outcome(job).unwrap(), "polled on this thread, to its end");
}

/// A future that needs a reactor, on `ParkingRuntime`: tokio's own panic, reported by the
/// job's future, not a hang.
#[test]
fn a_timer_without_its_runtime_fails_clearly() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let job = pool
        .schedule_async(Duration::ZERO, ParkingRuntime, || async {
            tokio::time::sleep(ms(1)).await
        })
        .unwrap();
    let msg = outcome(job).unwrap_err().panic_message().map(str::to_owned);
    assert!(
        msg.as_deref().is_some_and(|m| m.contains("reactor")),
        "tokio's message: {msg:?}"
    );
}

/// An awaited `ScheduledFuture` of an async job: an async caller gets the output.
#[test]
fn the_scheduled_future_is_awaited() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let job = pool
        .schedule_async(ms(1), ParkingRuntime, || async { "pong" })
        .unwrap();
    let got = ParkingRuntimeBlockOn::run(job); // `.await`ed by a caller's executor
    assert_eq!(got.unwrap(), "pong");
}

/// `ParkingRuntime` as a caller's `block_on`, for the test above.
struct ParkingRuntimeBlockOn;

impl ParkingRuntimeBlockOn {
    fn run<T>(f: impl Future<Output = T>) -> T {
        let mut out = None;
        {
            let driven = std::pin::pin!(async { out = Some(f.await) });
            ParkingRuntime.block_on(driven);
        }
        out.expect("block_on returns once the future is done")
    }
}

#[cfg(feature = "tokio")]
fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[cfg(feature = "tokio")]
fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// With tokio's timers: a job whose closure makes the timer itself (outside an `async`
/// block: the trap of `handle.block_on(tokio::time::sleep(d))`, "no reactor running")
/// works, since the pool makes the future inside the runtime's context; an interrupt
/// drops a sleep of an hour at once.
#[cfg(feature = "tokio")]
#[test]
fn tokio_timers_in_a_job() {
    let rt = multi_thread();
    let pool = ScheduledThreadPoolExecutor::new(1);
    let job = pool
        .schedule_async(Duration::ZERO, rt.handle().clone(), || {
            tokio::time::sleep(ms(5))
        })
        .unwrap();
    assert_eq!(outcome(job).unwrap(), ());
    let drops = counter();
    let guard = DropCount(drops.clone());
    let (tx, rx) = started();
    let long = pool
        .schedule_async(Duration::ZERO, rt.handle().clone(), move || async move {
            let _guard = guard;
            tx.send(()).unwrap();
            tokio::time::sleep(Duration::from_secs(3600)).await
        })
        .unwrap();
    wait_started(&rx);
    assert!(long.interrupt());
    wait_for("the sleeping future was dropped", || load(&drops) == 1);
    assert!(pool.wait_idle(BOUND));
}

/// `current_thread`, driven: the program's thread is in `Runtime::block_on`, awaiting the
/// job's `ScheduledFuture` (with a timeout, in `select!`), so the runtime's timers fire
/// for the job the worker runs through a `Handle`.
#[cfg(feature = "tokio")]
#[test]
fn current_thread_driven_by_the_awaiting_thread() {
    let rt = current_thread();
    let pool = ScheduledThreadPoolExecutor::new(1);
    let job = pool
        .schedule_async(Duration::ZERO, rt.handle().clone(), || async {
            tokio::time::sleep(ms(5)).await;
            "slept"
        })
        .unwrap();
    let got = rt.block_on(async {
        tokio::select! {
            out = job => out.ok(),
            _ = tokio::time::sleep(BOUND) => None,
        }
    });
    assert_eq!(got, Some("slept"));
}

/// `current_thread` through a `Handle`, driven by nobody: the job's timer never fires
/// (tokio's documented limit; nothing outside tokio can see it), so the run hangs, still
/// counted as running, until an interrupt drops the future. Through the `Runtime` itself
/// (`Arc<Runtime>`), the worker drives the runtime and the same job completes.
#[cfg(feature = "tokio")]
#[test]
fn current_thread_undriven_hangs_through_a_handle_not_through_the_runtime() {
    let rt = Arc::new(current_thread());
    let pool = ScheduledThreadPoolExecutor::new(1);
    let drops = counter();
    let guard = DropCount(drops.clone());
    let stuck = pool
        .schedule_async(Duration::ZERO, rt.handle().clone(), move || async move {
            let _guard = guard;
            tokio::time::sleep(ms(1)).await
        })
        .unwrap();
    // A 1 ms timer, given 200 times as long: it does not fire.
    assert!(
        !stuck.wait_timeout(ms(200)),
        "hangs: nobody drives the runtime"
    );
    assert_eq!(pool.stats().active_count, 1);
    assert!(stuck.interrupt());
    wait_for("the stuck future was dropped", || load(&drops) == 1);
    assert!(matches!(outcome(stuck), Err(TaskError::Cancelled)));

    let driven = pool
        .schedule_async(Duration::ZERO, rt.clone(), || async {
            tokio::time::sleep(ms(1)).await;
            tokio::spawn(async { 40 }).await.unwrap() + 2
        })
        .unwrap();
    assert_eq!(outcome(driven).unwrap(), 42, "the worker drove the runtime");
}

/// Two workers running jobs on one undriven `current_thread` runtime (`Arc<Runtime>`):
/// one drives it, and its drivers fire the other's timer too.
#[cfg(feature = "tokio")]
#[test]
fn current_thread_runtime_shared_by_two_workers() {
    let rt = Arc::new(current_thread());
    let pool = ScheduledThreadPoolExecutor::new(2);
    let jobs: Vec<_> = (0..2u64)
        .map(|i| {
            pool.schedule_async(Duration::ZERO, rt.clone(), move || async move {
                tokio::time::sleep(ms(5 * (i + 1))).await;
                i
            })
            .unwrap()
        })
        .collect();
    for (i, job) in jobs.into_iter().enumerate() {
        assert_eq!(outcome(job).unwrap(), i as u64);
    }
}
