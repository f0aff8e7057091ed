//! loom models of the task state machine (`task.rs`, T1–T3) and of its interplay with the
//! executor's queue (`executor.rs`, E2): cancel vs start, cancel vs periodic re-enqueue,
//! and waiting for a future vs its completion.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::clock::{Clock, ManualClock};
use crate::executor::Shared;
use crate::sync::{thread, Arc};
use crate::task::{state, Job, Limits, OnceTask, PeriodicTask, Rule, TypedJob};
use crate::{Builder, MissedTicks, OnPanic};

/// Counts drops of the closure that owns it.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// T1–T3: a one-shot is either run or cancelled, never both; its closure is dropped exactly
/// once; its future's outcome matches.
#[test]
fn loom_cancel_vs_start() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let runs = Arc::new(AtomicUsize::new(0));
        let (guard, r) = (DropCount(drops.clone()), runs.clone());
        let task = Arc::new(OnceTask::new(0, 0, move || {
            let _owned = &guard;
            r.fetch_add(1, Ordering::SeqCst);
            5
        }));
        let clock = Clock::Manual(ManualClock::new());
        let runner = {
            let task = task.clone();
            thread::spawn(move || task.run(0, &clock).ran)
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
        let outcome = task.completion().take();
        assert_eq!(outcome.is_ok(), ran);
    });
}

/// E2 with T3: cancelling a periodic task while its worker re-queues it never leaves it in
/// the queue, and its closure is dropped exactly once.
#[test]
fn loom_cancel_vs_periodic_requeue() {
    loom::model(|| {
        let clock = ManualClock::new();
        let ex = Builder::new()
            .core_pool_size(1)
            .clock(clock.clone())
            .build();
        let shared: Arc<Shared> = ex.shared().clone();
        shared.pretend_worker(); // the model's thread below plays the only worker
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let rule = Rule::FixedRate(Duration::from_millis(1), MissedTicks::Burst);
        let limits = Limits {
            on_panic: OnPanic::Stop,
            max_lateness: None,
            max_runs: None,
        };
        let task = Arc::new(PeriodicTask::new(0, 0, rule, limits, move || {
            let _owned = &guard;
        }));
        let job: Arc<dyn Job> = task.clone();
        shared.submit(job).unwrap();
        let worker = {
            let shared = shared.clone();
            thread::spawn(move || {
                // None: the cancel below removed it first.
                let polled = shared.queue.lock().poll();
                if let Some(entry) = polled {
                    let report = entry.value.run(0, shared.clock());
                    if let Some(next) = report.next {
                        shared.requeue(entry.value, next);
                    }
                }
            })
        };
        assert!(
            shared.cancel(&*task),
            "a periodic task is cancellable until it ends"
        );
        worker.join().unwrap();
        assert_eq!(
            shared.queue.lock().heap.len(),
            0,
            "E2: not left in the queue"
        );
        assert_eq!(task.header().state(), state::CANCELLED);
        assert_eq!(drops.load(Ordering::SeqCst), 1, "T3");
        assert!(task.completion().take().unwrap_err().is_cancelled());
        drop(ex);
    });
}

/// T2: a waiter blocked on a future is woken by the completion, whichever comes first.
#[test]
fn loom_wait_vs_complete() {
    loom::model(|| {
        let task = Arc::new(OnceTask::new(0, 0, || 9));
        let waiter = {
            let task = task.clone();
            thread::spawn(move || {
                task.completion().wait(None);
                task.completion().take().unwrap()
            })
        };
        let clock = Clock::Manual(ManualClock::new());
        assert!(task.run(0, &clock).ran);
        assert_eq!(waiter.join().unwrap(), 9);
    });
}
