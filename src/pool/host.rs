//! What a task's handles and its run ask of the pool (`task::Host`): its deadline, a
//! reschedule, a cancel and an operator's `run_now`, each under the task's home shard's
//! lock (T4 in `task/mod.rs`), a pause or resume (a switch the task's runs read), and a
//! run on the caller's thread; a cancel wakes a run asleep in `TaskContext::sleep` or
//! awaiting in an async body (S1 in `task/sleepers.rs`).

use crate::sync::Ordering;

use super::control::RunState;
use super::shutdown::wake_if_drained;
use super::{Pool, Stripe};
use crate::clock::{Clock, Ticks};
use crate::schedule::Schedule;
use crate::sync::Arc;
use crate::task::sleepers::{self, Sleepers};
use crate::task::{state::State, Host, Task, TaskRef, NO_DEADLINE};

/// `after_extra` of a task running when `run_now` asked for an extra run: its re-queue
/// puts it at the extra run's deadline and keeps its rule's next deadline to go back to
/// (`Pool::requeue_locked`).
pub(super) const PENDING_EXTRA: Ticks = NO_DEADLINE - 1;

/// `after_extra` of a task whose extra run is queued and whose next deadline after it is
/// its rule's (a fixed delay counted from the extra run).
pub(super) const BY_RULE: Ticks = NO_DEADLINE - 2;

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
        if let Some(after) = task.after_extra() {
            let _ = q.replace(after, NO_DEADLINE); // an explicit move replaces `run_now`'s
        }
        match header.state() {
            State::Scheduled if q.contains_tracked(&header.position) => {
                let seq = q.next_seq(now);
                // A due head moving away wakes `wait_idle` (sharded.rs).
                q.update_tracked(&header.position, |e| {
                    e.deadline = at;
                    // FIFO among equal deadlines by the time of the reschedule.
                    e.task.header().set_seq(seq);
                });
                true
            }
            // Out of the queue for a run (or just popped for one): the next run moves.
            // After shutdown_now nothing is re-queued (and handed-out tasks stay put).
            State::Scheduled | State::Running
                if header.is_periodic() && self.control.load().run_state() != RunState::Stop =>
            {
                match task.rescheduled() {
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

    /// Pauses (`pause`) or resumes a periodic task (`ScheduledFuture::pause`, `resume`):
    /// `true` if this call changed it; `false` for a one-shot, an ended task, or one
    /// already so. A paused task stays queued; each run that comes due is skipped
    /// (`task/periodic.rs`).
    pub(crate) fn pause(&self, task: &dyn Task, pause: bool) -> bool {
        let header = task.header();
        let Some(switch) = task.pause_switch() else {
            return false;
        };
        if header.state().is_terminal() {
            return false;
        }
        // Relaxed: a switch (`periodic.rs`); the swap tells one of two racing calls.
        if switch.swap(pause, Ordering::Relaxed) == pause {
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
        if task
            .pause_switch()
            .is_some_and(|p| p.load(Ordering::Relaxed))
        {
            return false;
        }
        let mut q = self.queue.lock(header.home()); // T4: the home shard
        let queued = q.contains_tracked(&header.position);
        // What an extra run already asked for left in the cell (put back as it was).
        let pending = task.after_extra().map(|cell| {
            let v = q.replace(cell, NO_DEADLINE);
            let _ = q.replace(cell, v);
            v
        });
        let asked = match (header.state(), task.after_extra()) {
            // An extra run is pending already: it stands for this one too.
            (State::Scheduled | State::Running, Some(_)) if pending != Some(NO_DEADLINE) => true,
            (State::Scheduled, after) if queued => {
                if let Some(cell) = after {
                    let back = match task.schedule() {
                        Schedule::FixedDelay(_) => BY_RULE,
                        _ => q
                            .get_tracked(&header.position)
                            .map_or(BY_RULE, |e| e.deadline),
                    };
                    let _ = q.replace(cell, back);
                }
                let seq = q.next_seq(Some(now));
                q.update_tracked(&header.position, |e| {
                    e.deadline = now;
                    e.task.header().set_seq(seq); // FIFO among equal deadlines from now
                })
            }
            // Out of the queue for a run: the run after it is the extra one, and where it
            // goes back to is the rule's next deadline, or one a `reschedule` set.
            (State::Scheduled | State::Running, Some(after))
                if self.control.load().run_state() != RunState::Stop =>
            {
                let rescheduled = task.rescheduled().expect("a periodic task has the cell");
                let back = q.replace(rescheduled, now);
                let back = match task.schedule() {
                    Schedule::FixedDelay(_) => BY_RULE,
                    _ if back == NO_DEADLINE => PENDING_EXTRA,
                    _ => back,
                };
                let _ = q.replace(after, back);
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
    pub(crate) fn cancel(&self, task: &dyn Task, interrupt: bool) -> bool {
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
            self.sleepers.wake_task(sleepers::key(task));
        }
        true
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
}
