//! loom models of the task state machine (`task/`, T1–T3) and of its interplay with the
//! pool (`pool/`, E2): cancel vs start, cancel vs periodic re-enqueue,
//! and waiting for a future vs its completion, and an interrupt vs a one-shot's run.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::clock::{Clock, ManualClock};
use crate::pool::Pool;
use crate::schedule::{Limits, Schedule};
use crate::sync::{thread, Arc};
use crate::task::{state::State, OnceTask, PeriodicTask, Plain, RunEnv, TaskRef};

/// The environment of a bare run at time 0 (no pool, no counters).
fn bare_env(clock: &Clock) -> RunEnv<'_> {
    RunEnv {
        handoff: None,
        now: 0,
        clock,
        counters: None,
        task: None,
        pool: None,
        on_worker: false,
    }
}
use crate::{Builder, MissedTicks, OnPanic};

/// Counts drops of the closure that owns it.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// An executor on a `ManualClock` whose only worker is played by a model thread (no
/// thread starts), and its core.
fn pool_with_model_worker() -> (crate::ScheduledThreadPoolExecutor, Arc<Pool>) {
    crate::pool::loom::model_pool(Builder::new())
}

/// T1–T3: a one-shot is either run or cancelled, never both; its closure is dropped exactly
/// once; its future's outcome matches.
#[test]
fn loom_cancel_vs_start() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let runs = Arc::new(AtomicUsize::new(0));
        let (guard, r) = (DropCount(drops.clone()), runs.clone());
        let task = TaskRef::new_typed(OnceTask::new(
            0,
            Plain(move || {
                let _owned = &guard;
                r.fetch_add(1, Ordering::SeqCst);
                5
            }),
        ));
        let clock = Clock::Manual(ManualClock::new());
        let runner = {
            let task = task.clone();
            thread::spawn(move || task.run(&bare_env(&clock)).ran)
        };
        let cancelled = task.header().cancel();
        if cancelled {
            task.finish_cancelled();
        }
        let ran = runner.join().unwrap();
        assert!(ran != cancelled, "exactly one of run and cancel wins");
        assert_eq!(runs.load(Ordering::SeqCst), usize::from(ran));
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "T3: the closure is dropped once"
        );
        let outcome = task.outcome().wait_take();
        assert_eq!(outcome.is_ok(), ran);
    });
}

/// E2 with T3: cancelling a periodic task while its worker re-queues it never leaves it in
/// the queue, and its closure is dropped exactly once.
#[test]
fn loom_cancel_vs_periodic_requeue() {
    loom::model(|| {
        let (ex, pool) = pool_with_model_worker();
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let rule = Schedule::FixedRate(Duration::from_millis(1), MissedTicks::Burst);
        let limits = Limits {
            on_panic: OnPanic::Stop,
            max_lateness: None,
            max_runs: None,
        };
        let task = TaskRef::new_typed(PeriodicTask::new(
            0,
            rule,
            limits,
            None,
            Plain(move || {
                let _owned = &guard;
            }),
        ));
        let job = task.task().clone();
        pool.submit(job, None, true).unwrap();
        let home = task.header().home();
        let worker = {
            let pool = pool.clone();
            thread::spawn(move || {
                // None: the cancel below removed it first.
                let polled = pool.queue.lock(home).poll();
                if let Some(entry) = polled {
                    let report = entry.task.run(&bare_env(pool.clock()));
                    if let Some(next) = report.next {
                        pool.requeue(entry.task, next);
                    }
                }
            })
        };
        assert!(
            pool.cancel(&**task, false),
            "a periodic task is cancellable until it ends"
        );
        worker.join().unwrap();
        assert_eq!(pool.queue.len(), 0, "E2: not left in the queue");
        assert_eq!(task.header().state(), State::Cancelled);
        assert_eq!(drops.load(Ordering::SeqCst), 1, "T3");
        assert!(task.outcome().wait_take().unwrap_err().is_cancelled());
        drop(ex);
    });
}

/// T1–T3 with an interrupt (`ScheduledFuture::interrupt`): against a one-shot that starts
/// and ends, exactly one terminal transition wins. If the interrupt wins, the future says
/// `Cancelled` and the run's output (if it ran) is dropped by the runner; if the run wins,
/// the interrupt returns false and the future has the value. The closure and the output
/// are each dropped exactly once.
#[test]
fn loom_interrupt_vs_completion() {
    loom::model(|| {
        let closure_drops = Arc::new(AtomicUsize::new(0));
        let output_drops = Arc::new(AtomicUsize::new(0));
        let guard = DropCount(closure_drops.clone());
        let out = output_drops.clone();
        let task = TaskRef::new_typed(OnceTask::new(
            0,
            Plain(move || {
                let _owned = &guard;
                DropCount(out)
            }),
        ));
        let clock = Clock::Manual(ManualClock::new());
        let runner = {
            let task = task.clone();
            thread::spawn(move || task.run(&bare_env(&clock)).ran)
        };
        let interrupted = task.header().interrupt();
        if interrupted {
            task.finish_cancelled();
        }
        let dropped_by_interrupter = interrupted && closure_drops.load(Ordering::SeqCst) == 1;
        let ran = runner.join().unwrap();
        assert!(ran || interrupted, "the task ran or was interrupted first");
        assert_eq!(
            closure_drops.load(Ordering::SeqCst),
            1,
            "T3: the closure once"
        );
        assert!(
            ran || dropped_by_interrupter,
            "T3: an interrupt that stops the run returns with the closure dropped"
        );
        let outcome = task.outcome().wait_take();
        assert_eq!(
            outcome.is_err(),
            interrupted,
            "the future matches the interrupt"
        );
        drop(outcome);
        assert_eq!(
            output_drops.load(Ordering::SeqCst),
            usize::from(ran),
            "the output, if made, dropped once (by the runner or with the outcome)"
        );
        assert_eq!(
            task.header().state(),
            if interrupted {
                State::Cancelled
            } else {
                State::Done
            }
        );
    });
}

/// T2: a waiter blocked on a future is woken by the completion, whichever comes first
/// (A1, `task/waiting.rs`). Break: dropping `wake_waiters` after a won finish
/// (`task/once.rs`) deadlocks it.
#[test]
fn loom_wait_vs_complete() {
    loom::model(|| {
        let task = TaskRef::new_typed(OnceTask::new(0, Plain(|| 9)));
        let waiter = {
            let task = task.clone();
            thread::spawn(move || {
                task.outcome().wait(None);
                task.outcome().wait_take().unwrap()
            })
        };
        let clock = Clock::Manual(ManualClock::new());
        assert!(task.run(&bare_env(&clock)).ran);
        assert_eq!(waiter.join().unwrap(), 9);
    });
}

/// T2 for async callers: a future polled before completion registers its waker, and the
/// completion either wakes it or is seen by the poll; never neither. R4 (`task/raw/mod.rs`):
/// the slot is reached through loom's `UnsafeCell`. Breaks: writing the outcome after the
/// exchange in `OnceCore::finish` fails it (the poll's read races the write); dropping
/// `wake_waiters` fails it too.
#[test]
fn loom_async_waker_vs_complete() {
    use std::task::{Context, Poll, Wake, Waker};

    struct Flag(crate::sync::AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::Release);
        }
    }

    loom::model(|| {
        let task = TaskRef::new_typed(OnceTask::new(0, Plain(|| 4)));
        let poller = {
            let task = task.clone();
            thread::spawn(move || {
                let flag = Arc::new(Flag(crate::sync::AtomicBool::new(false)));
                let waker = Waker::from(flag.clone());
                let mut cx = Context::from_waker(&waker);
                if let Poll::Ready(v) = task.outcome().poll(&mut cx) {
                    return v.unwrap();
                }
                while !flag.0.load(Ordering::Acquire) {
                    thread::yield_now(); // woken exactly when the outcome is stored
                }
                match task.outcome().poll(&mut cx) {
                    Poll::Ready(v) => v.unwrap(),
                    Poll::Pending => panic!("woken but not ready"),
                }
            })
        };
        let clock = Clock::Manual(ManualClock::new());
        assert!(task.run(&bare_env(&clock)).ran);
        assert_eq!(poller.join().unwrap(), 4);
    });
}

/// A waker that sets a flag (the pollers of the models below spin on it).
struct Flag(crate::sync::AtomicBool);

impl std::task::Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

/// Polls `task`'s outcome with `flag`'s waker; if pending, waits for the wake (the flag)
/// and polls again, which must be ready: a wake that never comes spins until the model
/// fails.
fn poll_until_ready(
    task: &crate::task::TypedRef<u32>,
    flag: &Arc<Flag>,
) -> Result<u32, crate::TaskError> {
    use std::task::{Context, Poll, Waker};
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    if let Poll::Ready(v) = task.outcome().poll(&mut cx) {
        return v;
    }
    while !flag.0.load(Ordering::Acquire) {
        thread::yield_now(); // woken exactly when the outcome is stored
    }
    match task.outcome().poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("woken but not ready"),
    }
}

/// T2 for async callers, by a cancel instead of a run: a future polled before the cancel
/// is woken by it or sees it (one-shot: the waiter table, `task/waiting.rs`).
#[test]
fn loom_async_waker_vs_cancel() {
    loom::model(|| {
        let task = TaskRef::new_typed(OnceTask::new(0, Plain(|| 4u32)));
        let poller = {
            let task = task.clone();
            thread::spawn(move || {
                let flag = Arc::new(Flag(crate::sync::AtomicBool::new(false)));
                poll_until_ready(&task, &flag)
            })
        };
        if task.header().cancel() {
            task.finish_cancelled();
        }
        assert!(poller.join().unwrap().unwrap_err().is_cancelled());
    });
}

/// U1's two-step registration (`task/waiting.rs`): a poll with a new waker clones it with
/// the table unlocked and registers it in a second critical section that looks at the
/// task again. Against a completion racing between the two, the new waker is woken or
/// the poll sees the outcome. Break: registering in the second section without checking
/// the state again (`wait_on`) fails it (the waker is registered after the completion
/// took the registrations, and never woken).
#[test]
fn loom_replaced_waker_vs_complete() {
    use std::task::{Context, Waker};
    loom::model(|| {
        let task = TaskRef::new_typed(OnceTask::new(0, Plain(|| 6u32)));
        let poller = {
            let task = task.clone();
            thread::spawn(move || {
                // A first poll with another waker, then polls with this one.
                let first = Arc::new(Flag(crate::sync::AtomicBool::new(false)));
                let waker = Waker::from(first);
                if let std::task::Poll::Ready(v) =
                    task.outcome().poll(&mut Context::from_waker(&waker))
                {
                    return v;
                }
                let flag = Arc::new(Flag(crate::sync::AtomicBool::new(false)));
                poll_until_ready(&task, &flag)
            })
        };
        let clock = Clock::Manual(ManualClock::new());
        assert!(task.run(&bare_env(&clock)).ran);
        assert_eq!(poller.join().unwrap().unwrap(), 6);
    });
}

/// A taker blocked in `get` against an interrupt of the one-shot it waits for, which may
/// land before the run, between its start and its closure take, during the run, or after
/// it: the taker is woken and its outcome is `Cancelled` exactly when the interrupt won;
/// the output, if made, is dropped once (by the runner whose finish lost, or with the
/// taker's outcome). Break: `finish_cancelled` waking the waiters only when it took the
/// closure (so an interrupt of a started run leaves the wake to a runner whose finish
/// then loses and wakes no one): the taker is never woken, a deadlock.
#[test]
fn loom_blocked_get_vs_interrupt() {
    loom::model(|| {
        let output_drops = Arc::new(AtomicUsize::new(0));
        let out = output_drops.clone();
        let task = TaskRef::new_typed(OnceTask::new(0, Plain(move || DropCount(out))));
        let runner = {
            let task = task.clone();
            thread::spawn(move || {
                let clock = Clock::Manual(ManualClock::new());
                task.run(&bare_env(&clock)).ran
            })
        };
        let taker = {
            let task = task.clone();
            thread::spawn(move || task.outcome().wait_take().map(drop))
        };
        let interrupted = task.header().interrupt();
        if interrupted {
            task.finish_cancelled();
        }
        let outcome = taker.join().unwrap();
        let ran = runner.join().unwrap();
        assert_eq!(
            outcome.as_ref().is_err_and(|e| e.is_cancelled()),
            interrupted,
            "the taker sees Cancelled exactly when the interrupt won"
        );
        assert!(outcome.is_err() || ran, "a value only from a run");
        assert_eq!(
            output_drops.load(Ordering::SeqCst),
            usize::from(ran),
            "the output, if made, dropped once"
        );
    });
}

/// A2 with a loom-visible timeout (`sync::timeouts_fire`): a waiter whose timed wait
/// times out leaves the waiter table while the one-shot completes and another thread
/// waits untimed. The timed-out waiter takes back only its own registration: the other
/// waiter is woken by the completion, and the table holds nothing for the task after.
/// Break: `leave` taking every registration of the task instead of its own (the other
/// waiter, registered before the completion, is never woken: a deadlock).
#[test]
fn loom_timed_out_waiter_leaves_only_its_own_registration() {
    loom::model(|| {
        let task = TaskRef::new_typed(OnceTask::new(0, Plain(|| 9u32)));
        let key = task.header().key();
        let timed = {
            let task = task.clone();
            thread::spawn(move || {
                crate::sync::timeouts_fire();
                let done = task.outcome().wait(Some(std::time::Instant::now()));
                // A timed-out wait returns whether the task ended meanwhile.
                assert!(!done || task.header().state().is_terminal());
            })
        };
        let untimed = {
            let task = task.clone();
            thread::spawn(move || task.outcome().wait(None))
        };
        let clock = Clock::Manual(ManualClock::new());
        assert!(task.run(&bare_env(&clock)).ran);
        assert!(untimed.join().unwrap(), "the untimed waiter is woken");
        timed.join().unwrap();
        assert_eq!(
            crate::task::waiter_count(key),
            0,
            "A2: no registration outlives the wait"
        );
        assert_eq!(task.outcome().wait_take().unwrap(), 9);
    });
}

/// E2: a submission racing with `shutdown` is either accepted (then queued, since delayed
/// one-shots survive shutdown by default) or refused with `Shutdown`; never accepted and
/// lost, never both.
#[test]
fn loom_shutdown_vs_schedule() {
    loom::model(|| {
        let (ex, pool) = pool_with_model_worker();
        let task = TaskRef::new_typed(OnceTask::new(1_000_000, Plain(|| ())));
        let submitter = {
            let (pool, task) = (pool.clone(), task.clone());
            thread::spawn(move || {
                let job = task.task().clone();
                pool.submit(job, None, true).is_ok()
            })
        };
        ex.shutdown();
        let accepted = submitter.join().unwrap();
        let queued = pool.queue.len();
        assert_eq!(queued, usize::from(accepted), "accepted ⇔ queued");
        assert_eq!(task.header().state(), State::Scheduled);
        let stats = ex.stats();
        assert_eq!(stats.task_count + stats.rejected_count, 1);
    });
}

/// E2: a periodic task finishing a run while `shutdown` runs ends cancelled and out of the
/// queue (default policy), whichever goes first; its future completes.
#[test]
fn loom_shutdown_vs_periodic_requeue() {
    loom::model(|| {
        let (ex, pool) = pool_with_model_worker();
        let rule = Schedule::FixedRate(Duration::from_millis(1), MissedTicks::Burst);
        let limits = Limits {
            on_panic: OnPanic::Stop,
            max_lateness: None,
            max_runs: None,
        };
        let task = TaskRef::new_typed(PeriodicTask::new(0, rule, limits, None, Plain(|| ())));
        let job = task.task().clone();
        pool.submit(job, None, true).unwrap();
        let entry = pool
            .queue
            .lock(task.header().home())
            .poll()
            .expect("due at 0");
        let worker = {
            let pool = pool.clone();
            thread::spawn(move || {
                let report = entry.task.run(&bare_env(pool.clock()));
                if let Some(next) = report.next {
                    pool.requeue(entry.task, next);
                }
            })
        };
        ex.shutdown();
        worker.join().unwrap();
        assert_eq!(pool.queue.len(), 0, "not re-queued after shutdown");
        assert_eq!(task.header().state(), State::Cancelled);
        assert!(task.outcome().wait_take().unwrap_err().is_cancelled());
    });
}

/// Cancel vs reschedule: the task ends cancelled and out of the queue whatever the order;
/// a reschedule never resurrects it.
#[test]
fn loom_cancel_vs_reschedule() {
    loom::model(|| {
        let (_ex, pool) = pool_with_model_worker();
        let task = TaskRef::new_typed(OnceTask::new(5_000_000, Plain(|| ())));
        let job = task.task().clone();
        pool.submit(job, None, true).unwrap();
        let rescheduler = {
            let (pool, task) = (pool.clone(), task.clone());
            thread::spawn(move || pool.reschedule(&**task, 1_000_000, None))
        };
        assert!(pool.cancel(&**task, false));
        rescheduler.join().unwrap();
        assert_eq!(pool.queue.len(), 0);
        assert_eq!(task.header().state(), State::Cancelled);
    });
}
