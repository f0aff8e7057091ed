//! What a task's handles and its run ask of the pool (`task::Host`): its deadline, a
//! reschedule and a cancel, each under the task's home shard's lock (T4 in
//! `task/mod.rs`), and a run on the caller's thread; a cancel wakes a run asleep in
//! `TaskContext::sleep` (S1 in `task/sleepers.rs`).

use crate::sync::Ordering;

use super::control::RunState;
use super::shutdown::wake_if_drained;
use super::{Shared, Stripe};
use crate::clock::{Clock, Ticks};
use crate::future::CancelHandle;
use crate::sync::Arc;
use crate::task::sleepers::Sleepers;
use crate::task::{state::State, Host, Job, TaskRef};

impl Shared {
    /// A task's deadline, wherever it is: in its node while it is queued (read under its
    /// home shard's lock, T4), in its header otherwise (`Header::when`).
    pub(crate) fn deadline_of(&self, job: &dyn Job) -> Ticks {
        let header = job.header();
        let q = self.queue.lock(header.home());
        q.get_tracked(&header.position)
            .map_or_else(|| header.deadline(), |e| e.deadline)
    }

    /// Moves the next run of a task to `at`; see `ScheduledFuture::reschedule`. O(log n).
    /// `now`: the caller's reading of the clock, if it made one for `at`
    /// (`reschedule_after`); the sequence number is stamped with it instead of a second
    /// reading (Q3 holds: the reading was made within this operation).
    pub(crate) fn reschedule(&self, job: &dyn Job, at: Ticks, now: Option<Ticks>) -> bool {
        let header = job.header();
        let mut q = self.queue.lock(header.home()); // T4: the home shard
        match header.state() {
            State::Scheduled if q.contains_tracked(&header.position) => {
                let seq = q.next_seq(now);
                // A due head moving away wakes `wait_idle` (sharded.rs).
                q.update_tracked(&header.position, |e| {
                    e.deadline = at;
                    // FIFO among equal deadlines by the time of the reschedule.
                    e.value.header().set_seq(seq);
                });
                true
            }
            // Out of the queue for a run (or just popped for one): the next run moves.
            // After shutdown_now nothing is re-queued (and handed-out tasks stay put).
            State::Scheduled | State::Running
                if header.is_periodic() && self.control.load().run_state() != RunState::Stop =>
            {
                match job.rescheduled() {
                    Some(cell) => {
                        q.replace(cell, at); // T4: read back by `requeue` under the lock
                        true
                    }
                    None => false,
                }
            }
            // A one-shot taken for its run, or any task after shutdown_now.
            State::Scheduled | State::Running => false,
            State::Done | State::Panicked | State::Cancelled => false,
        }
    }

    /// Cancels a task; with `remove_on_cancel`, removes it from the queue first. With
    /// `interrupt` (Java's `cancel(true)`), a running one-shot is cancelled too
    /// (`task/state.rs`); its run sees it through its context. Returns true if this call
    /// cancelled it.
    pub(crate) fn cancel(&self, job: &dyn Job, interrupt: bool) -> bool {
        let header = job.header();
        let won = if interrupt {
            header.interrupt()
        } else {
            header.cancel()
        };
        if !won {
            return false;
        }
        // A task taken out of the queue here was not running, so it cannot be asleep in
        // `TaskContext::sleep`; any other may be.
        let mut was_queued = false;
        // Relaxed: a setting; the removal itself is ordered by the home shard's lock (T4).
        if self.remove_on_cancel.load(Ordering::Relaxed) {
            let removed = self
                .queue
                .lock(header.home())
                .remove_tracked(&header.position); // T4
            if removed.is_some() {
                was_queued = true;
                wake_if_drained(self); // E3
            }
            drop(removed); // I4: outside the lock
        }
        job.finish_cancelled();
        if !was_queued {
            self.sleepers.wake(); // S1: the task may be running, asleep in `sleep`
        }
        true
    }
}

/// What reaches the pool's core from a [`Host`]: the core itself, or one of its stripes.
pub(crate) trait Core: Send + Sync {
    fn core(&self) -> &Arc<Shared>;
}

impl Core for Arc<Shared> {
    #[inline]
    fn core(&self) -> &Arc<Shared> {
        self
    }
}

impl Core for Stripe {
    #[inline]
    fn core(&self) -> &Arc<Shared> {
        &self.shared
    }
}

/// The seam a run and a task's handles see (`task::Host`): on the `Arc`, so a task
/// context can make a cancel handle from it, and on a `Stripe`, which futures hold.
impl<C: Core> Host for C {
    fn name(&self) -> &str {
        Shared::name(self.core())
    }

    fn is_stopping(&self) -> bool {
        Shared::is_stopping(self.core())
    }

    fn sleepers(&self) -> &Sleepers {
        &self.core().sleepers
    }

    fn cancel_handle(&self, job: &TaskRef) -> CancelHandle {
        CancelHandle::new(job.clone(), Stripe::new(Arc::clone(self.core())))
    }

    #[inline]
    fn clock(&self) -> &Clock {
        Shared::clock(self.core())
    }

    fn cancel(&self, job: &dyn Job, interrupt: bool) -> bool {
        Shared::cancel(self.core(), job, interrupt)
    }

    fn reschedule(&self, job: &dyn Job, at: Ticks, now: Option<Ticks>) -> bool {
        Shared::reschedule(self.core(), job, at, now)
    }

    fn deadline_of(&self, job: &dyn Job) -> Ticks {
        Shared::deadline_of(self.core(), job)
    }

    fn run_here(&self, job: &TaskRef) {
        let report = job.run_now(&Shared::env_now(self.core(), job), true);
        debug_assert!(report.next.is_none(), "a pending task runs once");
    }
}
