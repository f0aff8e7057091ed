//! Async jobs whose runs give their worker back (the `*_send` forms): a run whose future
//! is pending holds no worker, and every promise of the async family still holds: one run
//! at a time per task, `active_count` and `wait_idle` count a pending run, a fixed delay
//! from the future's completion, lateness from the start, the output or the panic in the
//! `ScheduledFuture`, `interrupt` and `shutdown_now` drop a pending future at once (on the
//! caller's thread when no worker polls it), `shutdown`, `close` and `await_termination`
//! wait for pending runs, `pause`, `run_now`, `reschedule` and the cluster lock behave as
//! for a closure, and a runtime with only `block_on` keeps the worker-holding path.
//!
//! The bodies await what the test controls (`tokio::sync` channels, which need no
//! reactor) on `ParkingRuntime`, so the pool's `ManualClock` decides every deadline; the
//! cases marked so also run on a `multi_thread` tokio runtime's `Handle` (feature `tokio`).

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread::ThreadId;
use std::time::Duration;

use common::{close, counter, load, manual_pool, outcome, sec, wait_for, BOUND};
use schedpool::cluster::{ClusterLock, Exclusive, LocalLock};
use schedpool::{
    AsyncRuntime, Next, ParkingRuntime, Periodic, ScheduledThreadPoolExecutor, TaskError,
};
use tokio::sync::{oneshot, watch};

/// A gate futures await: closed until `open`.
#[derive(Clone)]
struct Gate(watch::Sender<bool>);

impl Gate {
    fn new() -> Self {
        Gate(watch::channel(false).0)
    }

    fn open(&self) {
        self.0.send_replace(true);
    }

    fn close(&self) {
        self.0.send_replace(false);
    }

    /// Waits until the gate is open.
    fn passed(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.0.subscribe();
        async move {
            let _ = rx.wait_for(|open| *open).await;
        }
    }
}

/// Records the thread that dropped it.
struct DroppedOn(Arc<Mutex<Option<ThreadId>>>);

impl Drop for DroppedOn {
    fn drop(&mut self) {
        *self.0.lock().unwrap() = Some(std::thread::current().id());
    }
}

fn dropped_on() -> (DroppedOn, Arc<Mutex<Option<ThreadId>>>) {
    let at = Arc::new(Mutex::new(None));
    (DroppedOn(at.clone()), at)
}

/// Waits until the pool counts `n` runs in progress.
fn wait_active(pool: &ScheduledThreadPoolExecutor, n: usize) {
    wait_for("the runs are in progress", || {
        pool.stats().active_count == n
    });
}

/// [`wait_active`], and then until the pool's one worker has run a closure submitted after
/// the runs: each of them has had its first poll by then, so a pending one is idle,
/// waiting for its waker with no worker polling it. (The closure counts as a completed
/// task.)
fn wait_idle_runs(pool: &ScheduledThreadPoolExecutor, n: usize) {
    wait_active(pool, n);
    let after = pool.submit(|| ()).unwrap();
    assert!(after.wait_timeout(BOUND), "the worker is free");
}

/// One worker, many pending runs: the worker runs other work meanwhile, and every run
/// completes when its future does. (With a run that held its worker, the closure would
/// wait for the first run, which waits for the closure.)
#[test]
fn pending_runs_give_their_worker_back() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let gate = Gate::new();
    let jobs: Vec<_> = (0..50u32)
        .map(|i| {
            let passed = gate.passed();
            pool.schedule_async_send(Duration::ZERO, ParkingRuntime, move || async move {
                passed.await;
                i
            })
            .unwrap()
        })
        .collect();
    wait_active(&pool, 50);
    let g = gate.clone();
    let opener = pool.submit(move || g.open()).unwrap();
    assert!(
        opener.wait_timeout(BOUND),
        "the one worker is free to run it"
    );
    for (i, job) in jobs.into_iter().enumerate() {
        assert_eq!(outcome(job).unwrap(), i as u32);
    }
    assert!(pool.wait_idle(BOUND));
    assert_eq!(pool.stats().completed_task_count, 51);
    close(&pool);
}

/// A run's future pending while its task comes due again, many times: no second run
/// starts beside it; the missed ticks run after it, one at a time (fixed rate, burst).
#[test]
fn one_run_at_a_time_per_task() {
    let (clock, pool) = manual_pool(2);
    let (gate, in_run, most) = (Gate::new(), counter(), counter());
    let (g, i, m) = (gate.clone(), in_run.clone(), most.clone());
    let job = pool
        .schedule_periodic_async_send(
            Periodic::at_fixed_rate(sec(1)).max_runs(4),
            ParkingRuntime,
            move || {
                let (passed, i, m) = (g.passed(), i.clone(), m.clone());
                async move {
                    let now = i.fetch_add(1, Ordering::SeqCst) + 1;
                    m.fetch_max(now, Ordering::SeqCst);
                    passed.await;
                    i.fetch_sub(1, Ordering::SeqCst);
                }
            },
        )
        .unwrap();
    wait_active(&pool, 1);
    clock.advance(sec(5)); // three more ticks due while the first run is pending
    assert!(!pool.wait_idle(Duration::from_millis(50)));
    assert_eq!(pool.stats().completed_task_count, 0);
    gate.open();
    assert_eq!(outcome(job).unwrap(), ());
    assert_eq!(load(&most), 1, "never two runs of one task at once");
    assert_eq!(pool.stats().completed_task_count, 4);
    close(&pool);
}

/// A pending run is a run in progress: `active_count` counts it, `wait_idle` waits for
/// it, and the task list shows it running.
#[test]
fn a_pending_run_counts_in_active_count_wait_idle_and_the_task_list() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let gate = Gate::new();
    let passed = gate.passed();
    let job = pool
        .named("pending")
        .schedule_async_send(Duration::ZERO, ParkingRuntime, move || passed)
        .unwrap();
    wait_active(&pool, 1);
    assert!(
        !pool.wait_idle(Duration::from_millis(30)),
        "a run in progress"
    );
    let rows = pool.scheduled_tasks();
    assert_eq!(rows.len(), 1, "listed once: {rows:?}");
    assert!(rows[0].running && rows[0].name.as_deref() == Some("pending"));
    assert_eq!(pool.task(job.id()).map(|h| h.id()), Some(job.id()));
    gate.open();
    assert!(pool.wait_idle(BOUND));
    assert_eq!(pool.stats().active_count, 0);
    assert!(pool.scheduled_tasks().is_empty());
    assert_eq!(outcome(job).unwrap(), ());
    close(&pool);
}

/// A fixed delay counts from the future's completion, and lateness from the run's start
/// (its take), not its completion: a run taken 2 s late that is pending while the clock
/// moves 5 s is followed by one 10 s after it completed, and records 2 s.
#[test]
fn fixed_delay_from_completion_lateness_from_the_start() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let gate = Gate::new();
    let (seen_tx, seen) = mpsc::channel::<Duration>();
    let (g, c) = (gate.clone(), clock.clone());
    let job = pool
        .schedule_periodic_async_send(
            Periodic::with_fixed_delay(sec(10))
                .initial_delay(sec(1))
                .max_runs(2),
            ParkingRuntime,
            move || {
                let (passed, c, seen_tx) = (g.passed(), c.clone(), seen_tx.clone());
                async move {
                    seen_tx.send(c.now() - t0).unwrap();
                    passed.await;
                }
            },
        )
        .unwrap();
    clock.advance(sec(3)); // due at 1 s, taken at 3 s
    assert_eq!(seen.recv_timeout(BOUND), Ok(sec(3)));
    wait_idle_runs(&pool, 1); // pending: its end comes from a later poll
    clock.advance(sec(5));
    gate.open(); // completes at 8 s
    wait_for("the first run ended", || {
        pool.stats().completed_task_count == 2 // and the closure of `wait_idle_runs`
    });
    assert_eq!(job.delay(), sec(10), "10 s after the completion at 8 s");
    let stats = pool.stats();
    assert_eq!(
        stats.lateness_max,
        sec(2),
        "the start's lateness: {stats:?}"
    );
    clock.advance(sec(10));
    assert_eq!(seen.recv_timeout(BOUND), Ok(sec(18)));
    assert_eq!(outcome(job).unwrap(), ());
    close(&pool);
}

/// The output, an error, and a panic in any part of the run reach the `ScheduledFuture`;
/// the worker goes on.
#[test]
fn output_and_panics_reach_the_future() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let gate = Gate::new();
    let passed = gate.passed();
    let output = pool
        .schedule_async_send(Duration::ZERO, ParkingRuntime, move || async move {
            passed.await;
            "done"
        })
        .unwrap();
    let passed = gate.passed();
    let in_poll = pool
        .schedule_async_send(Duration::ZERO, ParkingRuntime, move || async move {
            passed.await;
            panic!("after the await");
        })
        .unwrap();
    let in_make = pool
        .schedule_async_send(
            Duration::ZERO,
            ParkingRuntime,
            || -> std::future::Ready<u8> { panic!("making the future") },
        )
        .unwrap();
    struct PanicsOnDrop;
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("dropping the future");
        }
    }
    let passed = gate.passed();
    let in_drop = pool
        .schedule_async_send(Duration::ZERO, ParkingRuntime, move || async move {
            let _bomb = PanicsOnDrop;
            passed.await;
            7
        })
        .unwrap();
    wait_active(&pool, 3);
    gate.open();
    assert_eq!(outcome(output).unwrap(), "done");
    let message =
        |r: Result<_, TaskError>| r.err().and_then(|e| e.panic_message().map(str::to_owned));
    assert_eq!(
        message(outcome(in_poll).map(|_: ()| ())).as_deref(),
        Some("after the await")
    );
    assert_eq!(
        message(outcome(in_make).map(drop)).as_deref(),
        Some("making the future")
    );
    assert_eq!(
        message(outcome(in_drop).map(drop)).as_deref(),
        Some("dropping the future")
    );
    assert!(pool.wait_idle(BOUND));
    assert_eq!(pool.stats().panicked_count, 3);
    let after = pool.schedule_async_send(Duration::ZERO, ParkingRuntime, || async { 1 });
    assert_eq!(outcome(after.unwrap()).unwrap(), 1, "the worker goes on");
    close(&pool);
}

/// An interrupt drops a pending future that nobody polls at once, on the interrupting
/// thread, before `interrupt` returns (its destructors run: a connection goes back); the
/// future says `Cancelled`, and the run no longer counts.
#[test]
fn an_interrupt_drops_a_pending_future_at_once_on_its_thread() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let (guard, dropped) = dropped_on();
    let job = pool
        .schedule_async_send(Duration::ZERO, ParkingRuntime, move || async move {
            let _guard = guard;
            std::future::pending::<u32>().await
        })
        .unwrap();
    wait_idle_runs(&pool, 1);
    assert!(
        !job.cancel(),
        "a plain cancel leaves a running one-shot alone"
    );
    assert!(dropped.lock().unwrap().is_none());
    assert!(job.interrupt());
    assert_eq!(
        *dropped.lock().unwrap(),
        Some(std::thread::current().id()),
        "dropped by the interrupt itself"
    );
    assert!(matches!(outcome(job), Err(TaskError::Cancelled)));
    assert!(pool.wait_idle(BOUND));
    assert_eq!(pool.stats().active_count, 0);
    close(&pool);
}

/// A periodic run: `cancel` lets the pending run complete (not dropped) and no run
/// follows; `interrupt` drops it at once.
#[test]
fn cancel_lets_a_pending_periodic_run_complete_interrupt_drops_it() {
    let (clock, pool) = manual_pool(1);
    let gate = Gate::new();
    let completed = counter();
    let (g, c) = (gate.clone(), completed.clone());
    let cancelled = pool
        .schedule_periodic_async_send(Periodic::at_fixed_rate(sec(1)), ParkingRuntime, move || {
            let (passed, c) = (g.passed(), c.clone());
            async move {
                passed.await;
                c.fetch_add(1, Ordering::SeqCst);
            }
        })
        .unwrap();
    wait_idle_runs(&pool, 1);
    assert!(cancelled.cancel());
    clock.advance(sec(5));
    gate.open();
    assert!(matches!(outcome(cancelled), Err(TaskError::Cancelled)));
    assert!(pool.wait_idle(BOUND));
    assert_eq!(load(&completed), 1, "the run completed, and none followed");

    let (guard, dropped) = dropped_on();
    let mut guard = Some(guard);
    let interrupted = pool
        .schedule_periodic_async_send(Periodic::at_fixed_rate(sec(1)), ParkingRuntime, move || {
            let guard = guard.take();
            async move {
                let _guard = guard;
                std::future::pending::<()>().await
            }
        })
        .unwrap();
    wait_idle_runs(&pool, 1);
    assert!(interrupted.interrupt());
    assert!(
        dropped.lock().unwrap().is_some(),
        "dropped before interrupt returned"
    );
    assert!(matches!(outcome(interrupted), Err(TaskError::Cancelled)));
    assert!(pool.wait_idle(BOUND));
    close(&pool);
}

/// `shutdown_now` drops every pending future before it returns, hands back only the
/// queued tasks, and the pool terminates.
#[test]
fn shutdown_now_drops_pending_futures_and_terminates() {
    let (_clock, pool) = manual_pool(1);
    let drops = counter();
    let mut jobs = Vec::new();
    for _ in 0..20 {
        let d = common::DropCount(drops.clone());
        let once = pool.schedule_async_send(Duration::ZERO, ParkingRuntime, move || async move {
            let _d = d;
            std::future::pending::<()>().await
        });
        jobs.push(once.unwrap());
    }
    let d = drops.clone();
    let periodic = pool
        .schedule_periodic_async_send(Periodic::at_fixed_rate(sec(1)), ParkingRuntime, move || {
            let d = common::DropCount(d.clone());
            async move {
                let _d = d;
                std::future::pending::<()>().await
            }
        })
        .unwrap();
    let queued = pool.schedule(sec(3600), || ()).unwrap();
    wait_idle_runs(&pool, 21);
    let returned = pool.shutdown_now();
    assert_eq!(
        load(&drops),
        21,
        "every pending future dropped by shutdown_now"
    );
    assert_eq!(returned.len(), 1, "only the queued task");
    assert!(pool.await_termination(BOUND));
    for job in jobs {
        assert!(matches!(outcome(job), Err(TaskError::Cancelled)));
    }
    assert!(matches!(outcome(periodic), Err(TaskError::Cancelled)));
    drop(returned);
    assert!(matches!(outcome(queued), Err(TaskError::Cancelled)));
}

/// `shutdown` and `close` wait for pending runs: the pool is not terminated while one is
/// pending, and terminates when it completes. Every wait is bounded: a run that never
/// gives its finisher party back fails the test instead of hanging it.
#[test]
fn shutdown_and_termination_wait_for_pending_runs() {
    let pool = Arc::new(ScheduledThreadPoolExecutor::new(2));
    let gate = Gate::new();
    let passed = gate.passed();
    let job = pool
        .schedule_async_send(Duration::ZERO, ParkingRuntime, move || async move {
            passed.await;
            5
        })
        .unwrap();
    wait_active(&pool, 1);
    pool.shutdown();
    assert!(!pool.await_termination(Duration::from_millis(50)));
    assert!(!pool.is_terminated() && pool.is_terminating());
    // `close` on a thread of its own, so that a close that never returns is seen here.
    let (closed_tx, closed) = mpsc::channel();
    let p = pool.clone();
    std::thread::spawn(move || {
        p.close();
        let _ = closed_tx.send(());
    });
    assert!(
        closed.recv_timeout(Duration::from_millis(50)).is_err(),
        "close waits for the pending run"
    );
    gate.open();
    assert!(
        pool.await_termination(BOUND),
        "terminated once the run completed"
    );
    assert_eq!(closed.recv_timeout(BOUND), Ok(()), "close returned");
    assert_eq!(outcome(job).unwrap(), 5);
}

/// `pause`, `run_now` and `reschedule` of a periodic task whose run is pending act on the
/// runs after it, as for a closure's run in progress.
#[test]
fn controls_of_a_pending_periodic_run_act_after_it() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let gate = Gate::new();
    let (starts_tx, starts) = mpsc::channel::<Duration>();
    let (g, c) = (gate.clone(), clock.clone());
    let job = pool
        .schedule_periodic_async_send(
            Periodic::at_fixed_rate(sec(10)).initial_delay(sec(10)),
            ParkingRuntime,
            move || {
                let (passed, c, starts_tx) = (g.passed(), c.clone(), starts_tx.clone());
                async move {
                    starts_tx.send(c.now() - t0).unwrap();
                    passed.await;
                }
            },
        )
        .unwrap();
    clock.advance(sec(10));
    assert_eq!(starts.recv_timeout(BOUND), Ok(sec(10)));
    wait_idle_runs(&pool, 1);
    assert!(job.run_now(), "an extra run after the pending one");
    assert!(job.run_now(), "asked already: one extra run");
    gate.open();
    assert_eq!(
        starts.recv_timeout(BOUND),
        Ok(sec(10)),
        "the extra run, at once"
    );
    assert!(pool.wait_idle(BOUND));
    assert_eq!(job.delay(), sec(10), "then back to its grid: 20 s");
    gate.close();
    clock.advance(sec(10));
    assert_eq!(starts.recv_timeout(BOUND), Ok(sec(20)));
    wait_idle_runs(&pool, 1);
    assert!(
        job.reschedule_after(sec(25)),
        "moves the run after the pending one"
    );
    assert!(job.pause());
    gate.open();
    assert!(pool.wait_idle(BOUND));
    assert_eq!(job.delay(), sec(25));
    clock.advance(sec(25));
    assert!(pool.wait_idle(BOUND));
    assert!(starts.try_recv().is_err(), "paused: skipped");
    assert!(job.resume());
    clock.advance(sec(10));
    assert_eq!(starts.recv_timeout(BOUND), Ok(sec(55)));
    assert!(job.cancel());
    close(&pool);
}

/// An exclusive async job keeps its lease while its future is pending (another node
/// cannot take the lock), and its keep-alive extends it meanwhile; the lease goes back
/// when the run completes.
#[test]
fn an_exclusive_job_keeps_its_lease_and_keep_alive_while_pending() {
    let (clock, pool) = manual_pool(1);
    let lock = Arc::new(LocalLock::with_clock(clock.clone()));
    let spec = Exclusive::new(lock.clone(), "report", sec(60)).keep_alive(sec(20));
    let gate = Gate::new();
    let g = gate.clone();
    let job = pool
        .schedule_periodic_async_with_context_send(
            Periodic::at_fixed_rate(sec(3600))
                .exclusive(spec)
                .max_runs(1),
            ParkingRuntime,
            move |ctx| {
                assert!(ctx.lease().is_some(), "the run holds the lease");
                let passed = g.passed();
                async move {
                    passed.await;
                    Next::Continue
                }
            },
        )
        .unwrap();
    // The worker's take counts before the run asks for the lease: a `try_acquire` made
    // in between would win it, and the run would skip.
    wait_for("the run took the lease", || pool.stats().lock_acquired == 1);
    assert!(
        lock.try_acquire("report", sec(60)).unwrap().is_none(),
        "held while pending"
    );
    for n in 1..=4 {
        clock.advance(sec(20)); // 80 s in all: past at_most_for without the keep-alive
        wait_for("the keep-alive extended the lease", || {
            pool.stats().lock_extended >= n
        });
    }
    assert!(
        lock.try_acquire("report", sec(60)).unwrap().is_none(),
        "still held at 80 s"
    );
    gate.open();
    assert_eq!(outcome(job).unwrap(), ());
    assert!(
        lock.try_acquire("report", sec(60)).unwrap().is_some(),
        "given back"
    );
    close(&pool);
}

/// A runtime with only `block_on` (written against the crate before `can_enter`) keeps
/// the worker-holding path through the `*_send` forms: its run occupies its worker.
#[test]
fn a_runtime_with_only_block_on_keeps_its_worker() {
    #[derive(Clone)]
    struct BlockOnOnly;
    impl AsyncRuntime for BlockOnOnly {
        fn block_on(&self, future: Pin<&mut (dyn Future<Output = ()> + '_)>) {
            ParkingRuntime.block_on(future)
        }
    }
    let pool = ScheduledThreadPoolExecutor::new(1);
    let (tx, rx) = oneshot::channel::<u32>();
    let job = pool
        .schedule_async_send(Duration::ZERO, BlockOnOnly, move || async move {
            rx.await.unwrap_or(0)
        })
        .unwrap();
    wait_active(&pool, 1);
    let other = pool.submit(|| 1).unwrap();
    assert!(
        !other.wait_timeout(Duration::from_millis(50)),
        "the one worker is held by the run"
    );
    tx.send(3).unwrap();
    assert_eq!(outcome(job).unwrap(), 3);
    assert_eq!(outcome(other).unwrap(), 1);
    close(&pool);
}

/// A future that keeps its waker and calls it whenever the test says.
struct Stash {
    waker: Arc<Mutex<Option<Waker>>>,
    polls: Arc<AtomicUsize>,
    done: Arc<Mutex<bool>>,
}

impl Future for Stash {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        *self.waker.lock().unwrap() = Some(cx.waker().clone());
        if *self.done.lock().unwrap() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// Wakers that misbehave: called twice, after the run ended, from a destructor, never.
/// Each costs at most a poll; nothing runs twice, nothing is lost, nothing leaks.
#[test]
fn misbehaving_wakers() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let (waker, polls, done) = (
        Arc::new(Mutex::new(None::<Waker>)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(Mutex::new(false)),
    );
    let (w, p, d) = (waker.clone(), polls.clone(), done.clone());
    let job = pool
        .schedule_async_send(Duration::ZERO, ParkingRuntime, move || Stash {
            waker: w,
            polls: p,
            done: d,
        })
        .unwrap();
    wait_for("first poll", || load(&polls) == 1);
    let stashed = waker.lock().unwrap().clone().expect("kept");
    stashed.wake_by_ref();
    stashed.wake_by_ref(); // twice: one poll owed
    wait_for("the woken poll", || load(&polls) >= 2);
    assert!(!pool.wait_idle(Duration::from_millis(30)), "still pending");
    *done.lock().unwrap() = true;
    stashed.wake_by_ref();
    assert_eq!(outcome(job).unwrap(), ());
    let before = load(&polls);
    stashed.wake_by_ref(); // after the run ended: nothing
    let owned = stashed.clone();
    owned.wake(); // by value, its count given back
    assert!(pool.wait_idle(BOUND));
    assert_eq!(load(&polls), before, "no poll after the end");
    drop(stashed);

    // From a destructor: the future's own drop wakes it (at an interrupt's drop).
    struct WakesOnDrop(Arc<Mutex<Option<Waker>>>);
    impl Drop for WakesOnDrop {
        fn drop(&mut self) {
            if let Some(w) = self.0.lock().unwrap().take() {
                w.wake();
            }
        }
    }
    let keep = Arc::new(Mutex::new(None::<Waker>));
    let k = keep.clone();
    let job = pool
        .schedule_async_send(Duration::ZERO, ParkingRuntime, move || {
            let k2 = k.clone();
            let guard = WakesOnDrop(k);
            std::future::poll_fn(move |cx| {
                let _g = &guard;
                *k2.lock().unwrap() = Some(cx.waker().clone());
                Poll::<()>::Pending
            })
        })
        .unwrap();
    wait_active(&pool, 1);
    assert!(job.interrupt());
    assert!(matches!(outcome(job), Err(TaskError::Cancelled)));
    assert!(pool.wait_idle(BOUND));

    // Never called: the run stays in progress until an interrupt, which ends it.
    let never = pool
        .schedule_async_send(Duration::ZERO, ParkingRuntime, || {
            std::future::pending::<()>()
        })
        .unwrap();
    wait_active(&pool, 1);
    assert!(!pool.wait_idle(Duration::from_millis(30)));
    assert!(never.interrupt());
    assert!(pool.wait_idle(BOUND));
    close(&pool);
}

/// `Builder::max_async_runs`: at the bound, later runs wait for a permit without a
/// worker, and get them in the order they asked as earlier futures are dropped; a
/// waiting run can be interrupted; nothing is lost.
#[test]
fn max_async_runs_bounds_the_futures_in_progress() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .max_async_runs(2)
        .build();
    let (made, order) = (counter(), Arc::new(Mutex::new(Vec::new())));
    let gates: Vec<Gate> = (0..5).map(|_| Gate::new()).collect();
    let jobs: Vec<_> = (0..5)
        .map(|i| {
            let (m, o, passed) = (made.clone(), order.clone(), gates[i].passed());
            pool.schedule_async_send(Duration::ZERO, ParkingRuntime, move || {
                m.fetch_add(1, Ordering::SeqCst);
                o.lock().unwrap().push(i);
                passed
            })
            .unwrap()
        })
        .collect();
    wait_active(&pool, 5);
    assert!(!pool.wait_idle(Duration::from_millis(30)));
    assert_eq!(load(&made), 2, "two futures at most");
    let other = pool.submit(|| 9).unwrap();
    assert_eq!(
        outcome(other).unwrap(),
        9,
        "the waiting runs hold no worker"
    );
    let mut jobs = jobs.into_iter();
    let (first, second, third) = (
        jobs.next().unwrap(),
        jobs.next().unwrap(),
        jobs.next().unwrap(),
    );
    assert!(third.interrupt(), "a run waiting for a permit ends at once");
    assert!(matches!(outcome(third), Err(TaskError::Cancelled)));
    gates[0].open();
    assert_eq!(outcome(first).unwrap(), ());
    wait_for("the next run's future is made", || load(&made) == 3);
    assert_eq!(*order.lock().unwrap(), [0, 1, 3], "in the order they asked");
    for gate in &gates {
        gate.open();
    }
    assert_eq!(outcome(second).unwrap(), ());
    for job in jobs {
        assert_eq!(outcome(job).unwrap(), ());
    }
    assert_eq!(load(&made), 4, "the interrupted run never made its future");
    assert!(pool.wait_idle(BOUND));
    close(&pool);
}

/// A runtime whose `enter` panics, before the poll or after it: the run ends with the
/// panic in its future, the job's future (made or not) dropped; the worker goes on.
#[test]
fn a_runtime_whose_enter_panics() {
    #[derive(Clone)]
    struct Panics {
        after: bool,
    }
    impl AsyncRuntime for Panics {
        fn block_on(&self, future: Pin<&mut (dyn Future<Output = ()> + '_)>) {
            ParkingRuntime.block_on(future)
        }
        fn can_enter(&self) -> bool {
            true
        }
        fn enter(&self, poll: &mut dyn FnMut()) {
            if self.after {
                poll();
            }
            panic!("enter");
        }
    }
    let pool = ScheduledThreadPoolExecutor::new(1);
    for after in [false, true] {
        let (guard, dropped) = dropped_on();
        let made = counter();
        let m = made.clone();
        let job = pool
            .schedule_async_send(Duration::ZERO, Panics { after }, move || {
                m.fetch_add(1, Ordering::SeqCst);
                async move {
                    let _guard = guard;
                    std::future::pending::<u32>().await
                }
            })
            .unwrap();
        let err = outcome(job).unwrap_err();
        assert_eq!(err.panic_message(), Some("enter"));
        assert_eq!(
            load(&made),
            usize::from(after),
            "made only where enter polled"
        );
        // The future, or the closure that never made it (dropped with the run's end).
        wait_for("dropped", || dropped.lock().unwrap().is_some());
    }
    assert_eq!(
        outcome(pool.submit(|| 1).unwrap()).unwrap(),
        1,
        "the worker goes on"
    );
    close(&pool);
}

/// The fallible form: errors counted and backed off, the last error in the future.
#[test]
fn fallible_async_send() {
    let (clock, pool) = manual_pool(1);
    let gate = Gate::new();
    let g = gate.clone();
    let spec = Periodic::with_fixed_delay(sec(1)).stop_after_errors(2);
    let job = pool
        .schedule_fallible_async_send(spec, ParkingRuntime, move |_ctx| {
            let passed = g.passed();
            async move {
                passed.await;
                Err::<Next, _>("503")
            }
        })
        .unwrap();
    gate.open();
    wait_for("the first failure", || pool.stats().failed_runs == 1);
    assert!(pool.wait_idle(BOUND)); // re-queued, 1 s after the failure
    clock.advance(sec(1));
    assert_eq!(outcome(job).unwrap(), Err("503"));
    assert_eq!(pool.stats().failed_runs, 2);
    close(&pool);
}

/// The named one-shots: the name in the context and the task list.
#[test]
fn named_async_send() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let fut = pool
        .named("fetch")
        .schedule_async_with_context_send(Duration::ZERO, ParkingRuntime, |ctx| {
            let name = ctx.name().map(str::to_owned);
            async move { name }
        })
        .unwrap();
    assert_eq!(outcome(fut).unwrap().as_deref(), Some("fetch"));
    close(&pool);
}

/// A future that wakes itself during its own poll `left` times (as
/// `tokio::task::yield_now` does), then completes; it counts its polls and the most
/// polls of it in progress at once.
struct WakesItself {
    left: usize,
    in_poll: AtomicUsize,
    most: Arc<AtomicUsize>,
    polls: Arc<AtomicUsize>,
}

impl Future for WakesItself {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let now = self.in_poll.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        self.polls.fetch_add(1, Ordering::SeqCst);
        let out = if self.left == 0 {
            Poll::Ready(())
        } else {
            self.left -= 1;
            // Woken during its own poll, which goes on a moment after the wake: a wake
            // that queued the run then (a second owner) would have the other worker take
            // it meanwhile.
            cx.waker().wake_by_ref();
            std::thread::sleep(Duration::from_millis(1));
            Poll::Pending
        };
        self.in_poll.fetch_sub(1, Ordering::SeqCst);
        out
    }
}

/// A wake during the run's own poll (SU1, SU2 in `src/task/suspended.rs`), on two
/// workers: it costs exactly one more poll, made after the poll that was woken (never a
/// second poller beside it, and no worker dies of one), and it is never lost (the run
/// completes).
#[test]
fn a_wake_during_the_runs_own_poll_costs_one_more_poll() {
    const WAKES: usize = 50;
    let starts = counter();
    let st = starts.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .on_thread_start(move || {
            st.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    let (most, polls) = (counter(), counter());
    let jobs: Vec<_> = (0..4)
        .map(|_| {
            let (m, p) = (most.clone(), polls.clone());
            pool.schedule_async_send(Duration::ZERO, ParkingRuntime, move || WakesItself {
                left: WAKES,
                in_poll: AtomicUsize::new(0),
                most: m,
                polls: p,
            })
            .unwrap()
        })
        .collect();
    for job in jobs {
        assert_eq!(outcome(job).unwrap(), (), "no wake during a poll is lost");
    }
    assert!(pool.wait_idle(BOUND));
    assert_eq!(load(&most), 1, "SU1: one poller at a time");
    assert_eq!(
        load(&polls),
        4 * (WAKES + 1),
        "SU2: one poll per wake, no more"
    );
    assert_eq!(load(&starts), 2, "no worker died");
    close(&pool);
}

/// The late-start counter (and the "task started late" event) reads the run's start,
/// its take, as the lateness histogram does: a run taken 2 s late is under a 3 s
/// threshold, even though it ends 7 s after its deadline.
#[test]
fn a_pending_runs_late_start_counts_from_its_start() {
    let clock = schedpool::ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .late_threshold(sec(3))
        .build();
    let gate = Gate::new();
    let g = gate.clone();
    let job = pool
        .schedule_async_send(sec(1), ParkingRuntime, move || g.passed())
        .unwrap();
    clock.advance(sec(3)); // due at 1 s, taken at 3 s: 2 s late
    wait_idle_runs(&pool, 1); // pending: its end comes from a later poll
    clock.advance(sec(5));
    gate.open(); // ends at 8 s, 7 s after its deadline
    assert_eq!(outcome(job).unwrap(), ());
    assert!(pool.wait_idle(BOUND));
    let stats = pool.stats();
    assert_eq!(stats.lateness_max, sec(2), "{stats:?}");
    assert_eq!(stats.late_count, 0, "2 s late is under 3 s: {stats:?}");
    close(&pool);
}

/// The rule is told the run's start, not the time of the poll that ended it: a
/// fixed-rate run taken late (`MissedTicks::Delay`) that is pending while the clock moves
/// on goes on at its start plus the period.
#[test]
fn missed_ticks_delay_counts_from_a_pending_runs_start() {
    let (clock, pool) = manual_pool(1);
    let gate = Gate::new();
    let g = gate.clone();
    let job = pool
        .schedule_periodic_async_send(
            Periodic::at_fixed_rate(sec(10))
                .missed_ticks(schedpool::MissedTicks::Delay)
                .initial_delay(sec(10))
                .max_runs(2),
            ParkingRuntime,
            move || g.passed(),
        )
        .unwrap();
    clock.advance(sec(25)); // due at 10 s, taken at 25 s: the tick at 20 s missed
    wait_idle_runs(&pool, 1); // pending: its end comes from a later poll
    clock.advance(sec(7));
    gate.open(); // completes at 32 s
    wait_for("the first run ended", || {
        pool.stats().completed_task_count == 2 // and the closure of `wait_idle_runs`
    });
    assert_eq!(
        job.delay(),
        sec(3),
        "its start (25 s) + 10 s = 35 s, 3 s after 32 s"
    );
    clock.advance(sec(3));
    assert_eq!(outcome(job).unwrap(), ());
    close(&pool);
}

/// A periodic run that panics after a pending poll: the panic reaches the task's future
/// (`OnPanic::Stop`, the default) and is counted; no run follows.
#[test]
fn a_periodic_panic_after_a_pending_poll_reaches_the_future() {
    let (_clock, pool) = manual_pool(1);
    let gate = Gate::new();
    let g = gate.clone();
    let job = pool
        .schedule_periodic_async_send(Periodic::at_fixed_rate(sec(1)), ParkingRuntime, move || {
            let passed = g.passed();
            async move {
                passed.await;
                panic!("periodic, after the await");
            }
        })
        .unwrap();
    wait_idle_runs(&pool, 1); // pending: the panic comes in a later poll
    gate.open();
    let err = outcome(job).err();
    assert_eq!(
        err.as_ref().and_then(|e| e.panic_message()),
        Some("periodic, after the await"),
        "{err:?}"
    );
    assert!(pool.wait_idle(BOUND));
    assert_eq!(pool.stats().panicked_count, 1);
    close(&pool);
}

/// `shutdown_now` with woken runs waiting in the queue (their one worker busy): they are
/// the pool's runs in progress, not tasks to hand back; `shutdown_now` drops their
/// futures before it returns, and the pool terminates once the busy worker is free.
#[test]
fn shutdown_now_ends_woken_runs_waiting_in_the_queue() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let (drops, gate) = (counter(), Gate::new());
    let jobs: Vec<_> = (0..5)
        .map(|_| {
            let (d, passed) = (common::DropCount(drops.clone()), gate.passed());
            pool.schedule_async_send(Duration::ZERO, ParkingRuntime, move || async move {
                let _d = d;
                passed.await;
                std::future::pending::<()>().await
            })
            .unwrap()
        })
        .collect();
    wait_active(&pool, 5);
    // Runs after the five first polls (one worker), and holds the worker.
    let (entered_tx, entered) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let blocker = pool
        .submit(move || {
            entered_tx.send(()).unwrap();
            let _ = released.recv_timeout(BOUND);
        })
        .unwrap();
    entered.recv_timeout(BOUND).unwrap();
    gate.open(); // the five runs are woken: queued behind the busy worker
    assert_eq!(load(&drops), 0);
    let queued = pool.schedule(sec(3600), || ()).unwrap();
    let returned = pool.shutdown_now();
    assert_eq!(returned.len(), 1, "only the queued task");
    assert_eq!(
        load(&drops),
        5,
        "the woken runs' futures dropped by shutdown_now"
    );
    release.send(()).unwrap();
    assert!(pool.await_termination(BOUND));
    for job in jobs {
        assert!(matches!(outcome(job), Err(TaskError::Cancelled)));
    }
    assert_eq!(outcome(blocker).unwrap(), ());
    drop(returned);
    assert!(matches!(outcome(queued), Err(TaskError::Cancelled)));
}

/// A run of a `*_send` job on `runtime` gives the pool's one worker back while it is
/// pending: the worker runs a closure, which completes the run.
fn gives_its_worker_back<R: AsyncRuntime>(pool: &ScheduledThreadPoolExecutor, runtime: R) {
    let (tx, rx) = oneshot::channel::<u32>();
    let job = pool
        .schedule_async_send(Duration::ZERO, runtime, move || async move {
            rx.await.unwrap_or(0)
        })
        .unwrap();
    let tx = Arc::new(Mutex::new(Some(tx)));
    let t = tx.clone();
    let other = pool
        .submit(move || {
            if let Some(tx) = t.lock().unwrap().take() {
                let _ = tx.send(7);
            }
        })
        .unwrap();
    let freed = other.wait_timeout(BOUND);
    if let Some(tx) = tx.lock().unwrap().take() {
        let _ = tx.send(0); // a run that holds the worker: let it end, then fail
    }
    assert!(freed, "the one worker is free while the run is pending");
    assert_eq!(outcome(job).unwrap(), 7);
}

/// The runtimes that wrap one the pool can enter (`Arc<R>`, `Arc<dyn AsyncRuntime>`,
/// `Box<R>`, `&'static R`) forward `can_enter` and `enter`: their runs give the worker
/// back as the wrapped runtime's do.
#[test]
fn wrapped_runtimes_give_their_worker_back() {
    static PARKING: ParkingRuntime = ParkingRuntime;
    let pool = ScheduledThreadPoolExecutor::new(1);
    gives_its_worker_back(&pool, Arc::new(ParkingRuntime));
    let shared: Arc<dyn AsyncRuntime> = Arc::new(ParkingRuntime);
    gives_its_worker_back(&pool, shared);
    gives_its_worker_back(&pool, Box::new(ParkingRuntime));
    let borrowed: &'static ParkingRuntime = &PARKING;
    gives_its_worker_back(&pool, borrowed);
    assert!(pool.wait_idle(BOUND));
    close(&pool);
}

/// `max_async_runs(1)`: a run interrupted while it holds the permit (its future made and
/// pending) gives it back as its future is dropped, and the waiting run is handed it and
/// makes its future.
#[test]
fn an_interrupted_permit_holder_passes_its_permit_on() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .max_async_runs(1)
        .build();
    let (made, drops) = (counter(), counter());
    let jobs: Vec<_> = (0..2)
        .map(|_| {
            let (m, d) = (made.clone(), drops.clone());
            pool.schedule_async_send(Duration::ZERO, ParkingRuntime, move || {
                m.fetch_add(1, Ordering::SeqCst);
                let d = common::DropCount(d);
                async move {
                    let _d = d;
                    std::future::pending::<()>().await
                }
            })
            .unwrap()
        })
        .collect();
    wait_idle_runs(&pool, 2);
    assert_eq!(load(&made), 1, "one future at most");
    let mut jobs = jobs.into_iter();
    let (holder, waiter) = (jobs.next().unwrap(), jobs.next().unwrap());
    assert!(holder.interrupt());
    assert_eq!(
        load(&drops),
        1,
        "the holder's future dropped by the interrupt"
    );
    assert!(matches!(outcome(holder), Err(TaskError::Cancelled)));
    wait_for("the waiting run is handed the permit", || load(&made) == 2);
    assert!(waiter.interrupt());
    assert!(matches!(outcome(waiter), Err(TaskError::Cancelled)));
    assert_eq!(load(&drops), 2);
    assert!(pool.wait_idle(BOUND));
    close(&pool);
}

/// A wake after the run ended (its poll that ended it has returned: the pool is idle)
/// does nothing: no queue entry, no take, no poll, and no worker dies (the pool starts
/// its one thread once).
#[test]
fn a_wake_after_the_run_ended_does_nothing() {
    let starts = counter();
    let st = starts.clone();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .on_thread_start(move || {
            st.fetch_add(1, Ordering::SeqCst);
        })
        .build();
    let (waker, polls, done) = (
        Arc::new(Mutex::new(None::<Waker>)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(Mutex::new(false)),
    );
    let (w, p, d) = (waker.clone(), polls.clone(), done.clone());
    let job = pool
        .schedule_async_send(Duration::ZERO, ParkingRuntime, move || Stash {
            waker: w,
            polls: p,
            done: d,
        })
        .unwrap();
    wait_for("first poll", || load(&polls) == 1);
    let stashed = waker.lock().unwrap().clone().expect("kept");
    *done.lock().unwrap() = true;
    stashed.wake_by_ref();
    assert_eq!(outcome(job).unwrap(), ());
    assert!(pool.wait_idle(BOUND)); // the poll that ended the run has returned: DONE
    let before = pool.stats();
    stashed.wake_by_ref();
    let owned = stashed.clone();
    owned.wake(); // by value
    assert_eq!(pool.stats().queued, 0, "nothing queued");
    assert!(pool.wait_idle(BOUND));
    assert_eq!(outcome(pool.submit(|| 1).unwrap()).unwrap(), 1);
    let after = pool.stats();
    assert_eq!(load(&starts), 1, "no worker died: {after:?}");
    assert_eq!(load(&polls), 2, "no poll after the end");
    assert_eq!(after.panicked_count, 0, "{after:?}");
    assert_eq!(
        after.completed_task_count,
        before.completed_task_count + 1,
        "no take but the closure's: {after:?}"
    );
    drop(stashed);
    close(&pool);
}

#[cfg(feature = "tokio")]
mod on_tokio {
    use super::*;

    /// 200 jobs awaiting tokio timers on a pool of two workers: every run is made, none
    /// holds a worker while it awaits (two would take 10 s for what is here 100 ms).
    #[test]
    fn many_jobs_await_tokio_timers_on_two_workers() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let pool = ScheduledThreadPoolExecutor::new(2);
        let started = std::time::Instant::now();
        let jobs: Vec<_> = (0..200)
            .map(|_| {
                pool.schedule_async_send(Duration::ZERO, rt.handle().clone(), || async {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    std::thread::current().id()
                })
                .unwrap()
            })
            .collect();
        for job in jobs {
            outcome(job).unwrap();
        }
        assert!(
            started.elapsed() < Duration::from_secs(9),
            "the runs awaited side by side, not two at a time"
        );
        drop(pool.shutdown_now());
        assert!(pool.await_termination(BOUND));
    }

    /// An interrupt drops a future pending on a tokio timer at once.
    #[test]
    fn an_interrupt_drops_a_future_pending_on_a_tokio_timer() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let pool = ScheduledThreadPoolExecutor::new(1);
        let (guard, dropped) = dropped_on();
        let job = pool
            .schedule_async_send(Duration::ZERO, rt.handle().clone(), move || async move {
                let _guard = guard;
                tokio::time::sleep(Duration::from_secs(3600)).await;
            })
            .unwrap();
        wait_idle_runs(&pool, 1);
        assert!(job.interrupt());
        assert!(dropped.lock().unwrap().is_some());
        assert!(matches!(outcome(job), Err(TaskError::Cancelled)));
        close(&pool);
    }
}
