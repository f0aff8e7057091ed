//! loom models of the async runs that give their worker back (`task/suspended.rs`,
//! `pool/awaiting.rs`): a wake while the run is being polled (SU2), a wake against an
//! interrupt of an idle run (SU1), an interrupt and `shutdown_now` against a run's first
//! poll (S1 with AW1's listing), a wake after `shutdown_now` (AW2), a periodic run woken by
//! a thread outside the pool and re-queued by the worker while its task is rescheduled
//! (AW1's takes), and termination against a pending run (AW1's party, E5). The model's
//! thread plays the pool's one worker (`Pool::model_step`); the job's future awaits a
//! [`Gate`] a model thread opens. Each names its invariant; the deliberate break that makes
//! it fail is listed in `docs/RELIABILITY.md`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::loom::model_pool;
use super::Pool;
use crate::sync::{thread, Arc, AtomicBool, AtomicUsize, Mutex, Ordering};
use crate::task::Host;
use crate::{Builder, ParkingRuntime, Periodic, ScheduledFuture, ScheduledThreadPoolExecutor};

/// What a model's future awaits: closed until [`open`](Gate::open), which wakes the waker
/// of the future's last poll.
struct Gate {
    open: AtomicBool,
    waker: Mutex<Option<Waker>>,
    /// Futures made so far.
    made: AtomicUsize,
    /// Futures dropped so far.
    drops: AtomicUsize,
}

impl Gate {
    fn new() -> Arc<Gate> {
        Arc::new(Gate {
            open: AtomicBool::new(false),
            waker: Mutex::new(None),
            made: AtomicUsize::new(0),
            drops: AtomicUsize::new(0),
        })
    }

    fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
        let waker = self.waker.lock().take();
        if let Some(w) = waker {
            w.wake(); // unlocked: the pool's waker queues the run
        }
    }

    fn drops(&self) -> usize {
        self.drops.load(Ordering::SeqCst)
    }

    fn made(&self) -> usize {
        self.made.load(Ordering::SeqCst)
    }

    /// A future awaiting this gate (the job's closure makes one per run).
    fn future(self: &Arc<Self>) -> Await {
        self.made.fetch_add(1, Ordering::SeqCst);
        Await(self.clone())
    }
}

/// A future pending until its gate opens; counts its drop.
struct Await(Arc<Gate>);

impl Future for Await {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.open.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        let old = self.0.waker.lock().replace(cx.waker().clone());
        drop(old);
        if self.0.open.load(Ordering::SeqCst) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Drop for Await {
    fn drop(&mut self) {
        self.0.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// A model pool, its worker's handle on it, and an async one-shot awaiting `gate`, queued.
fn one_shot(
    gate: &Arc<Gate>,
) -> (
    ScheduledThreadPoolExecutor,
    Arc<Pool>,
    Worker,
    ScheduledFuture<()>,
) {
    let (ex, pool) = model_pool(Builder::new());
    let g = gate.clone();
    let job = ex
        .schedule_async_send(Duration::ZERO, ParkingRuntime, move || g.future())
        .unwrap();
    let worker = Worker::of(&pool);
    (ex, pool, worker, job)
}

/// The model's worker: its handle on the pool and its run slot.
struct Worker {
    pool: Arc<Pool>,
    host: Arc<dyn Host>,
    slot: Arc<super::running::RunSlot>,
}

impl Worker {
    fn of(pool: &Arc<Pool>) -> Worker {
        Worker {
            pool: pool.clone(),
            host: pool.owned(),
            slot: pool.running.register(),
        }
    }

    /// One take and run, if anything is due.
    fn step(&self) -> bool {
        self.pool.model_step(&self.host, &self.slot)
    }

    /// Takes and runs until nothing is due.
    fn drain(&self) {
        while self.step() {}
    }
}

/// SU2: a wake while the run is being polled (its future's waker woken between the poll's
/// registration and its return) is not lost: the poller, whose move to IDLE fails on
/// NOTIFIED, queues the run again, and the run ends.
#[test]
fn loom_wake_while_the_run_is_polled() {
    loom::model(|| {
        let gate = Gate::new();
        let (_ex, pool, worker, job) = one_shot(&gate);
        let opener = {
            let gate = gate.clone();
            thread::spawn(move || gate.open())
        };
        assert!(worker.step(), "the run starts");
        opener.join().unwrap();
        worker.drain();
        assert!(job.is_done(), "SU2: the wake reached the run");
        assert_eq!(pool.queue.active(), 0, "AW1: its take finished");
        assert_eq!(gate.drops(), 1);
    });
}

/// SU1: an idle run woken and interrupted at once has one owner: the waker's queue entry
/// (its poll then sees the interrupt) or the interrupt's claim (it polls the run to its end
/// on its own thread); the future is dropped once, the task ends cancelled once.
#[test]
fn loom_wake_vs_interrupt_of_an_idle_run() {
    loom::model(|| {
        let gate = Gate::new();
        let (_ex, pool, worker, job) = one_shot(&gate);
        assert!(worker.step(), "the run starts and is pending");
        let opener = {
            let gate = gate.clone();
            thread::spawn(move || gate.open())
        };
        assert!(job.interrupt());
        opener.join().unwrap();
        worker.drain();
        assert!(job.is_cancelled());
        assert_eq!(gate.drops(), 1, "SU1: dropped once");
        assert_eq!(pool.queue.active(), 0);
        assert_eq!(pool.stats().completed_task_count, 1, "its end counted once");
    });
}

/// S1 with AW1's listing: an interrupt against the run's first poll, which lists the run
/// only once its future is pending: the interrupt finds it listed (and claims or notifies
/// it), or the poll's check after the listing sees the interrupt; the future is dropped.
#[test]
fn loom_interrupt_vs_a_runs_first_poll() {
    loom::model(|| {
        let gate = Gate::new();
        let (_ex, pool, worker, job) = one_shot(&gate);
        let starter = thread::spawn(move || {
            worker.step(); // nothing, if the interrupt cancelled the queued task first
            worker
        });
        assert!(job.interrupt());
        let worker = starter.join().unwrap();
        worker.drain();
        assert_eq!(
            gate.drops(),
            gate.made(),
            "S1: a pending future was dropped"
        );
        assert!(job.is_cancelled());
        assert_eq!(pool.queue.active(), 0);
    });
}

/// As the model above, with `shutdown_now`: every run is stopped, its future dropped by
/// `shutdown_now`'s claim or by the poll that sees the stop, and nothing is left queued.
#[test]
fn loom_shutdown_now_vs_a_runs_first_poll() {
    loom::model(|| {
        let gate = Gate::new();
        let (ex, pool, worker, job) = one_shot(&gate);
        let starter = thread::spawn(move || {
            worker.step(); // nothing, if `shutdown_now` took the queued task first
            worker
        });
        drop(ex.shutdown_now()); // a task not yet taken comes back, and is cancelled
        let worker = starter.join().unwrap();
        worker.drain();
        assert_eq!(
            gate.drops(),
            gate.made(),
            "S1: a pending future was dropped"
        );
        assert!(job.is_cancelled());
        assert_eq!(pool.queue.len(), 0);
    });
}

/// AW2: a wake on a thread outside the pool against `shutdown_now`: the woken run is
/// queued before the drain (which ends it) or polled to its end by the waking thread; no
/// worker takes anything after `shutdown_now`, and none is needed.
#[test]
fn loom_a_wake_after_shutdown_now() {
    loom::model(|| {
        let gate = Gate::new();
        let (ex, pool, worker, job) = one_shot(&gate);
        assert!(worker.step(), "the run starts and is pending");
        let opener = {
            let gate = gate.clone();
            thread::spawn(move || gate.open())
        };
        assert!(ex.shutdown_now().is_empty());
        opener.join().unwrap();
        assert_eq!(gate.drops(), 1, "AW2: ended without a worker");
        assert!(job.is_done());
        assert_eq!(pool.queue.len(), 0, "nothing queued after the drain");
    });
}

/// AW1: a periodic run woken by a thread outside the pool is polled to its end by the
/// worker, which re-queues its task at the deadline a `reschedule` made meanwhile and only
/// then finishes the run's take and the poll's: one entry queued, no take left open.
#[test]
fn loom_a_periodic_run_woken_outside_the_pool_and_rescheduled() {
    loom::model(|| {
        let (ex, pool) = model_pool(Builder::new());
        let gate = Gate::new();
        let g = gate.clone();
        let spec = Periodic::at_fixed_rate(Duration::from_secs(60));
        let job = ex
            .schedule_periodic_async_send(spec, ParkingRuntime, move || g.future())
            .unwrap();
        let worker = Worker::of(&pool);
        assert!(worker.step(), "the first run starts and is pending");
        let opener = {
            let gate = gate.clone();
            thread::spawn(move || gate.open())
        };
        let at = pool.clock().now() + 5_000_000_000;
        let rescheduler = {
            let pool = pool.clone();
            let task = job.task().clone();
            thread::spawn(move || pool.reschedule(&**task, at, None))
        };
        opener.join().unwrap();
        worker.drain();
        assert!(rescheduler.join().unwrap());
        assert_eq!(pool.queue.len(), 1, "the task, queued once");
        assert_eq!(
            pool.deadline_of(&***job.task()),
            at,
            "where the reschedule put it"
        );
        assert_eq!(pool.queue.active(), 0, "AW1: every take finished");
        assert_eq!(pool.stats().completed_task_count, 1);
    });
}

/// AW1 with E5: `shutdown` while a run is pending, the model's worker leaving once the
/// queue is drained, and an interrupt that ends the run off the workers: the pool
/// terminates, and only after the run ended (its party kept termination back).
#[test]
fn loom_termination_waits_for_a_pending_run() {
    loom::model(|| {
        let gate = Gate::new();
        let (ex, pool, worker, job) = one_shot(&gate);
        assert!(worker.step(), "the run starts and is pending");
        let done = job.task().clone();
        let leaving = thread::spawn(move || {
            let pool = worker.pool.clone();
            loop {
                let q = pool.queue.lock_all();
                if pool.control.load().is_drained(q.len()) {
                    assert!(pool.control.release_worker_if(|_| true));
                    break;
                }
                drop(q);
                thread::yield_now();
            }
            drop(worker);
            pool.worker_exited(true, false);
            if pool.is_terminated() {
                assert!(
                    done.header().state().is_terminal(),
                    "E5: terminated before the run ended"
                );
            }
        });
        ex.shutdown();
        assert!(job.interrupt());
        leaving.join().unwrap();
        assert!(pool.is_terminated());
        assert_eq!(gate.drops(), 1);
    });
}
