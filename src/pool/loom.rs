//! loom models of the pool's control protocol (`pool/`): the worker count against
//! submissions (E1), the run state against submissions (E2), termination against the
//! shutdown caller's completion of removed tasks (E5) and the `terminated()` future
//! against the latch, a run asleep in `TaskContext::sleep` against its cancel (S1), an
//! async run's waker against an interrupt after a wake-up that changed nothing (S1, S2),
//! and a future's deadline against its node leaving the queue (T4). Each names its
//! invariant; the deliberate break that makes it fail is listed in `docs/RELIABILITY.md`.

use std::time::Duration;

use crate::pool::Pool;
use crate::sync::{thread, Arc};
use crate::task::{state::State, OnceTask, Plain, TaskRef, TypedRef};
use crate::{Builder, ManualClock, ScheduledThreadPoolExecutor};

/// An executor on a `ManualClock` whose only worker is played by the model (no thread
/// starts while that worker holds its reservation), built from `builder`.
pub(crate) fn model_pool(builder: Builder) -> (ScheduledThreadPoolExecutor, Arc<Pool>) {
    let ex = builder.core_pool_size(1).clock(ManualClock::new()).build();
    let pool = ex.pool().clone();
    pool.pretend_worker();
    (ex, pool)
}

/// E1: a surplus worker timing out while a task is submitted: afterwards a queued task
/// always has a worker slot reserved (the worker stayed, or the submission reserved one).
#[test]
fn loom_submit_vs_surplus_exit() {
    loom::model(|| {
        let (_ex, pool) = model_pool(Builder::new().allow_core_thread_timeout(true));
        let task = TaskRef::new(OnceTask::new(1_000_000, Plain(|| ())));
        let submitter = {
            let (pool, task) = (pool.clone(), task.clone());
            thread::spawn(move || {
                // The submission's critical section, without starting the thread it may
                // reserve (the model checks the reservation, not a spawned worker).
                let mut q = pool.queue.lock(pool.queue.local_shard());
                let published = pool.publish(&mut q, task, None, 0, true);
                published.ok().map(|p| p.spawn.is_some())
            })
        };
        let exited = pool.release_if_surplus();
        let reserved = submitter.join().unwrap().expect("accepted while running");
        let workers = pool.control.load().workers();
        assert_eq!(pool.queue.len(), 1);
        assert!(workers >= 1, "E1: a queued task has a worker");
        assert_eq!(workers, 1 - usize::from(exited) + usize::from(reserved));
    });
}

/// E2: with `execute_existing_delayed_tasks_after_shutdown(false)`, a delayed one-shot
/// submitted while `shutdown` runs is refused, or accepted and then cancelled by the
/// shutdown's pass; it never stays queued after shutdown.
#[test]
fn loom_shutdown_vs_schedule_without_delayed_tasks() {
    loom::model(|| {
        let (ex, pool) =
            model_pool(Builder::new().execute_existing_delayed_tasks_after_shutdown(false));
        let task = TaskRef::new(OnceTask::new(1_000_000, Plain(|| ())));
        let submitter = {
            let (pool, task) = (pool.clone(), task.clone());
            thread::spawn(move || pool.submit(task, None, true).is_ok())
        };
        ex.shutdown();
        let accepted = submitter.join().unwrap();
        assert_eq!(pool.queue.len(), 0, "E2: nothing left queued");
        let cancelled = task.header().state() == State::Cancelled;
        assert_eq!(
            accepted, cancelled,
            "accepted tasks are cancelled by the policy"
        );
    });
}

/// E5: termination is observed only after the shutdown caller has completed the futures
/// of the tasks it removed, whichever of it and the last worker's exit comes last.
#[test]
fn loom_termination_vs_shutdown_completing_removed_tasks() {
    loom::model(|| {
        let (ex, pool) = model_pool(Builder::new());
        let fut = ex
            .schedule_at_fixed_rate(Duration::from_secs(1), Duration::from_secs(1), || ())
            .unwrap();
        let task: TypedRef<()> = fut.task().clone();
        let worker = {
            let (pool, task) = (pool.clone(), task.clone());
            thread::spawn(move || {
                // The model's worker: waits for the queue to drain after shutdown, as
                // `next_task` does, then leaves.
                loop {
                    let q = pool.queue.lock_all();
                    if pool.control.load().is_drained(q.len()) {
                        assert!(pool.control.release_worker_if(|_| true));
                        break;
                    }
                    drop(q);
                    thread::yield_now();
                }
                pool.worker_exited(true, false);
                if pool.is_terminated() {
                    assert!(task.outcome().is_ready(), "E5: terminated before done");
                }
            })
        };
        ex.shutdown();
        worker.join().unwrap();
        assert!(pool.is_terminated());
        assert!(task.outcome().is_ready());
        assert!(fut.is_cancelled());
    });
}

/// The `terminated()` future against the latch: a poll before the latch registers its
/// waker in the latch's critical section, and the latch wakes every registered waker after
/// it; so the poller is either ready at once or woken, never left pending.
#[test]
fn loom_terminated_future_vs_latch() {
    use std::task::{Context, Poll, Wake, Waker};

    struct Flag(crate::sync::AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, std::sync::atomic::Ordering::Release);
        }
    }

    loom::model(|| {
        let control = Arc::new(crate::pool::control::Control::new());
        let poller = {
            let control = control.clone();
            thread::spawn(move || {
                let flag = Arc::new(Flag(crate::sync::AtomicBool::new(false)));
                let waker = Waker::from(flag.clone());
                let mut cx = Context::from_waker(&waker);
                if control.poll_termination(&mut cx).is_ready() {
                    return;
                }
                while !flag.0.load(std::sync::atomic::Ordering::Acquire) {
                    thread::yield_now(); // woken exactly when the latch is set
                }
                assert_eq!(
                    control.poll_termination(&mut cx),
                    Poll::Ready(()),
                    "woken but not ready"
                );
            })
        };
        assert!(control.latch_for_model());
        poller.join().unwrap();
    });
}

/// Two tasks' keys among the waiting runs (`sleepers::key`).
const TASK_A: usize = 0x1000;
const TASK_B: usize = 0x2000;

/// S1 (`task/sleepers.rs`): a task asleep in `TaskContext::sleep` against the cancel that
/// must wake it. The sleeper lists itself, checks its condition and parks; the canceller
/// changes the condition and wakes the list. A lost wake-up deadlocks: loom's park has
/// no timeout.
#[test]
fn loom_sleeper_vs_cancel() {
    use crate::sync::{AtomicBool, Ordering};
    use crate::task::sleepers::Sleepers;
    loom::model(|| {
        let sleepers = Arc::new(Sleepers::new());
        let cancelled = Arc::new(AtomicBool::new(false));
        let sleeper = {
            let (sleepers, cancelled) = (sleepers.clone(), cancelled.clone());
            thread::spawn(move || {
                let _asleep = sleepers.join(TASK_A);
                // Relaxed: the state a real sleeper reads is ordered by S1's fences.
                while !cancelled.load(Ordering::Relaxed) {
                    thread::park();
                }
            })
        };
        cancelled.store(true, Ordering::Relaxed);
        sleepers.wake_task(TASK_A);
        sleeper.join().unwrap();
    });
}

/// S1 and S2 (`task/sleepers.rs`) for an async run (`body/async_run.rs`): each turn of
/// the run's loop is a poll whose future is pending, which lists the run with its waker
/// (the first) or puts the waker back (the later ones), and then checks for a stop. A
/// wake-up that changes nothing the run checks (a plain cancel of a periodic task) takes
/// the waker out first; the stop after it (an interrupt, `shutdown_now`) must still wake
/// the run, whether its take comes before the next poll's put or after. A lost wake-up
/// deadlocks: loom's park has no timeout. Break: `Sleepers::pending` checks before it
/// puts the waker back (the stop's take finds the slot empty, and the check came too
/// early to see the stop).
#[test]
fn loom_awaiting_run_vs_interrupt() {
    use crate::sync::{AtomicBool, Ordering};
    use crate::task::sleepers::Sleepers;
    use std::task::{Wake, Waker};

    /// The runtime's waker: unparks the thread that polls.
    struct Unpark(thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    loom::model(|| {
        let sleepers = Arc::new(Sleepers::new());
        let stopped = Arc::new(AtomicBool::new(false));
        let run = {
            let (sleepers, stopped) = (sleepers.clone(), stopped.clone());
            thread::spawn(move || {
                let waker = Waker::from(Arc::new(Unpark(thread::current())));
                let mut listed = None;
                // Relaxed: what a real run reads is ordered by S1's fences and S2's mutex.
                let stop = || stopped.load(Ordering::Relaxed);
                while !sleepers.pending(TASK_A, &mut listed, &waker, stop) {
                    thread::park();
                }
            })
        };
        let spurious = {
            let sleepers = sleepers.clone();
            thread::spawn(move || sleepers.wake_task(TASK_A))
        };
        stopped.store(true, Ordering::Relaxed);
        sleepers.wake_task(TASK_A);
        spurious.join().unwrap();
        run.join().unwrap();
    });
}

/// S1 per key (`task/sleepers.rs`): an interrupt of task A wakes A's awaiting run, and
/// never B's, which waits beside it; both are listed, A's run checks its stop and parks.
/// A lost wake-up of A deadlocks (loom's park has no timeout); a wake-up of B fails the
/// count. Break: `Sleepers::wake_task` waking every key (`wake`) fails it.
#[test]
fn loom_interrupt_of_one_task_leaves_the_other_asleep() {
    use crate::sync::{AtomicBool, AtomicUsize, Ordering};
    use crate::task::sleepers::Sleepers;
    use std::task::{Wake, Waker};

    /// The runtime's waker: counts its wake-ups and unparks the thread that polls.
    struct Counted(thread::Thread, Arc<AtomicUsize>);
    impl Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.unpark();
        }
    }

    loom::model(|| {
        let sleepers = Arc::new(Sleepers::new());
        let stopped = Arc::new(AtomicBool::new(false));
        // B: listed with its waker before A's interrupt, and never stopped.
        let b_wakes = Arc::new(AtomicUsize::new(0));
        let b_waker = Waker::from(Arc::new(Counted(thread::current(), b_wakes.clone())));
        let mut b_listed = None;
        assert!(!sleepers.pending(TASK_B, &mut b_listed, &b_waker, || false));
        let a = {
            let (sleepers, stopped) = (sleepers.clone(), stopped.clone());
            thread::spawn(move || {
                let wakes = Arc::new(AtomicUsize::new(0));
                let waker = Waker::from(Arc::new(Counted(thread::current(), wakes)));
                let mut listed = None;
                // Relaxed: what a real run reads is ordered by S1's fences and S2's mutex.
                let stop = || stopped.load(Ordering::Relaxed);
                while !sleepers.pending(TASK_A, &mut listed, &waker, stop) {
                    thread::park();
                }
            })
        };
        stopped.store(true, Ordering::Relaxed);
        sleepers.wake_task(TASK_A);
        a.join().unwrap();
        // Relaxed: B's wake-ups, had there been one, were made before A's join.
        assert_eq!(
            b_wakes.load(Ordering::Relaxed),
            0,
            "S1: A's interrupt woke B"
        );
        drop(b_listed);
    });
}

/// T4 with the 16-byte node (`pool/entry.rs`, `Entry`): a queued task's deadline is in
/// its node and its header holds the FIFO number, until the node leaves and hands the
/// deadline back, under the home shard's lock. A future's `deadline` racing with the
/// removal that takes the node (a worker's take, a cancel) reads the deadline, never the
/// number. Break: dropping `Entry::left`'s hand-back fails it (the header keeps the
/// number).
#[test]
fn loom_deadline_vs_the_node_leaving() {
    loom::model(|| {
        let (ex, pool) = model_pool(Builder::new());
        let fut = ex.schedule(Duration::from_secs(5), || ()).unwrap();
        let task = fut.task().task().clone();
        let deadline = pool.clock().now() + 5_000_000_000;
        let remover = {
            let (pool, task) = (pool.clone(), task.clone());
            thread::spawn(move || {
                let header = task.header();
                let mut q = pool.queue.lock(header.home());
                q.remove_tracked(&header.position).is_some()
            })
        };
        assert_eq!(pool.deadline_of(&*task), deadline);
        assert!(remover.join().unwrap(), "it was queued");
        assert_eq!(pool.deadline_of(&*task), deadline, "handed back");
        assert_eq!(task.header().deadline(), deadline);
    });
}
