//! What a task's handles and its run ask of the pool (`task::Host`): its deadline, a
//! reschedule, a cancel and an operator's `run_now`, each under the task's home shard's
//! lock (T4 in `task/mod.rs`), a pause or resume (a switch the task's runs read), and a
//! run on the caller's thread; a cancel wakes a run asleep in `TaskContext::sleep` or
//! awaiting in an async body (S1 in `task/sleepers.rs`).

use crate::sync::Ordering;

use super::control::RunState;
use super::entry::Guard;
use super::shutdown::wake_if_drained;
use super::{Pool, Stripe};
use crate::clock::{Clock, Ticks};
use crate::schedule::Schedule;
use crate::sync::Arc;
use crate::task::sleepers::{self, Sleepers};
use crate::task::{state::State, Extra, Header, Host, Task, TaskRef};

impl Pool {
    /// A task's deadline, wherever it is: in its node while it is queued (read under its
    /// home shard's lock, T4), in its header otherwise (`Header::when`).
    pub(crate) fn deadline_of(&self, task: &dyn Task) -> Ticks {
        let header = task.header();
        let q = self.queue.lock(header.home());
        q.get_tracked(&header.position)
            .map_or_else(|| header.deadline(), |e| e.deadline)
    }

    /// Moves the next run of a task to `at`; see `ScheduledFuture::reschedule`. O(log n).
    /// `now`: the caller's reading of the clock, if it made one for `at`
    /// (`reschedule_after`); the sequence number is stamped with it instead of a second
    /// reading (Q3 holds: the reading was made within this operation).
    pub(crate) fn reschedule(&self, task: &dyn Task, at: Ticks, now: Option<Ticks>) -> bool {
        let header = task.header();
        let mut q = self.queue.lock(header.home()); // T4: the home shard
        let control = task.periodic();
        match header.state() {
            State::Scheduled if q.contains_tracked(&header.position) => {
                if let Some(c) = control {
                    c.next.clear(&mut q); // an explicit move replaces `run_now`'s extra run
                }
                Self::rekey(&mut q, header, at, now)
            }
            // Out of the queue for a run (or just popped for one): the next run moves.
            // After shutdown_now nothing is re-queued (and handed-out tasks stay put).
            State::Scheduled | State::Running
                if self.control.load().run_state() != RunState::Stop =>
            {
                match control {
                    Some(c) => {
                        c.next.move_to(&mut q, at); // read back by the re-queue (NX1)
                        true
                    }
                    None => false, // a one-shot taken for its run
                }
            }
            // Any task after shutdown_now, or an ended one.
            _ => false,
        }
    }

    /// Moves the queued entry of `header`'s task to `at`, with a new sequence number
    /// stamped with `now` (FIFO among equal deadlines by the time of the move, Q3); under
    /// its home shard's lock (T4). A due head moving away wakes `wait_idle`
    /// (`sharded.rs`). `false` if the task is not queued there.
    fn rekey(q: &mut Guard<'_>, header: &Header, at: Ticks, now: Option<Ticks>) -> bool {
        let seq = q.next_seq(now);
        q.update_tracked(&header.position, |e| {
            e.deadline = at;
            e.task.header().set_seq(seq);
        })
    }

    /// Pauses (`pause`) or resumes a periodic task (`ScheduledFuture::pause`, `resume`):
    /// `true` if this call changed it; `false` for a one-shot, an ended task, or one
    /// already so. A paused task stays queued; each run that comes due is skipped
    /// (`task/periodic.rs`).
    pub(crate) fn pause(&self, task: &dyn Task, pause: bool) -> bool {
        let header = task.header();
        let Some(control) = task.periodic() else {
            return false;
        };
        if header.state().is_terminal() || !control.set_paused(pause) {
            return false;
        }
        let (counter, message) = if pause {
            (&self.counters.paused_tasks, "task paused")
        } else {
            (&self.counters.resumed_tasks, "task resumed")
        };
        crate::stats::bump(counter);
        crate::user::traced(
            || tracing::info!(target: "schedpool", pool = self.name(), id = header.id(), task_name = task.name(), "{message}"),
        );
        true
    }

    /// One extra run of a task as soon as a worker is free (`ScheduledFuture::run_now`),
    /// under its home shard's lock (T4). A queued task is moved to now; a periodic one
    /// then goes back to the deadline it had (a fixed-rate task to its grid, a trigger
    /// to its next time), or, with a fixed delay, counts its delay from the extra run. A
    /// periodic task running now runs again right after (its `after_extra` cell, read by
    /// `requeue_locked`). `false` for an ended, paused or (after `shutdown_now`) stopping
    /// task, and a one-shot that is not queued.
    pub(crate) fn run_now(&self, task: &dyn Task, now: Ticks) -> bool {
        let header = task.header();
        let control = task.periodic();
        if control.is_some_and(|c| c.is_paused()) {
            return false;
        }
        let mut q = self.queue.lock(header.home()); // T4: the home shard
        let queued = q.get_tracked(&header.position).map(|e| e.deadline);
        let asked = match (header.state(), control) {
            // A queued one-shot runs now.
            (State::Scheduled, None) if queued.is_some() => {
                Self::rekey(&mut q, header, now, Some(now))
            }
            (State::Scheduled, Some(c)) if queued.is_some() => {
                let fixed_delay = matches!(task.schedule(), Schedule::FixedDelay(_));
                match c.next.ask_extra(&mut q, now, queued, fixed_delay) {
                    Extra::Merged => true,
                    Extra::RekeyNow => Self::rekey(&mut q, header, now, Some(now)),
                    Extra::AfterThisRun => unreachable!("a queued task is re-keyed"),
                }
            }
            // Out of the queue for a run: the run after it is the extra one (NX1).
            (State::Scheduled | State::Running, Some(c))
                if self.control.load().run_state() != RunState::Stop =>
            {
                let fixed_delay = matches!(task.schedule(), Schedule::FixedDelay(_));
                let extra = c.next.ask_extra(&mut q, now, None, fixed_delay);
                debug_assert!(extra != Extra::RekeyNow, "out of the queue");
                true
            }
            _ => false,
        };
        drop(q);
        if asked {
            crate::stats::bump(&self.counters.run_now_tasks);
            crate::user::traced(
                || tracing::info!(target: "schedpool", pool = self.name(), id = header.id(), task_name = task.name(), "task run requested now"),
            );
        }
        asked
    }

    /// Cancels a task; with `remove_on_cancel`, removes it from the queue first. With
    /// `interrupt` (Java's `cancel(true)`), a running one-shot is cancelled too
    /// (`task/state.rs`); its run sees it through its context. Returns true if this call
    /// cancelled it.
    pub(crate) fn cancel(self: &Arc<Self>, task: &dyn Task, interrupt: bool) -> bool {
        let header = task.header();
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
            // A removed task is counted in the shard it leaves, not in a line that every
            // canceller shares (`Tally::cancelled`).
            let removed = {
                let mut shard = self.queue.lock(header.home());
                let removed = shard.remove_tracked(&header.position); // T4
                shard.ext().cancelled += u64::from(removed.is_some());
                removed
            };
            if removed.is_some() {
                was_queued = true;
                wake_if_drained(self); // E3
            }
            drop(removed); // I4: outside the lock
        }
        if !was_queued {
            crate::stats::bump(&self.counters.cancelled);
        }
        // Counted before the task is seen cancelled: a waiter that wakes reads the count.
        task.finish_cancelled();
        if !was_queued {
            // S1: the task may be running, asleep or awaiting; its own runs are woken.
            let key = sleepers::key(task);
            self.sleepers.wake_task(key);
            if interrupt {
                // An interrupt drops a suspended run's future at once, here if nobody
                // polls it (`awaiting.rs`).
                self.stop_claimed(self.sleepers.stop_runs(Some(key)));
            }
        }
        true
    }
}

impl Pool {
    /// The pool as a suspended run keeps it (`task/suspended.rs`): its `Arc` in a small box of
    /// its own (not a 128-byte `Stripe`: a pending run pays for this one).
    pub(crate) fn owned(self: &Arc<Self>) -> Arc<dyn Host> {
        Arc::new(Arc::clone(self))
    }
}

/// What reaches the pool from a [`Host`]: the pool's `Arc` itself, or one of its stripes.
pub(crate) trait AsPool: Send + Sync {
    fn pool(&self) -> &Arc<Pool>;
}

impl AsPool for Arc<Pool> {
    #[inline]
    fn pool(&self) -> &Arc<Pool> {
        self
    }
}

impl AsPool for Stripe {
    #[inline]
    fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }
}

/// The seam a run and a task's handles see (`task::Host`): on the `Arc`, so a task
/// context can make a cancel handle from it, and on a `Stripe`, which futures hold.
impl<P: AsPool> Host for P {
    fn name(&self) -> &str {
        Pool::name(self.pool())
    }

    fn is_stopping(&self) -> bool {
        Pool::is_stopping(self.pool())
    }

    fn sleepers(&self) -> &Sleepers {
        &self.pool().sleepers
    }

    fn handle_host(&self) -> Arc<dyn Host> {
        Stripe::new(Arc::clone(self.pool()))
    }

    #[inline]
    fn clock(&self) -> &Clock {
        Pool::clock(self.pool())
    }

    fn counters(&self) -> &crate::stats::Counters {
        &self.pool().counters
    }

    fn async_permits(&self) -> &crate::task::AsyncPermits {
        &self.pool().async_permits
    }

    fn cancel(&self, task: &dyn Task, interrupt: bool) -> bool {
        Pool::cancel(self.pool(), task, interrupt)
    }

    fn reschedule(&self, task: &dyn Task, at: Ticks, now: Option<Ticks>) -> bool {
        Pool::reschedule(self.pool(), task, at, now)
    }

    fn deadline_of(&self, task: &dyn Task) -> Ticks {
        Pool::deadline_of(self.pool(), task)
    }

    fn pause(&self, task: &dyn Task, pause: bool) -> bool {
        Pool::pause(self.pool(), task, pause)
    }

    fn run_now(&self, task: &dyn Task) -> bool {
        let now = Pool::clock(self.pool()).now();
        Pool::run_now(self.pool(), task, now)
    }

    fn run_here(&self, task: &TaskRef) {
        let report = task.run_now(&Pool::env_now(self.pool(), task), true);
        debug_assert!(report.next.is_none(), "a pending task runs once");
    }

    fn resume(&self, run: TaskRef) {
        Pool::resume(self.pool(), run);
    }
}
