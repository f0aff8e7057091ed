//! Submission and re-queue (E1, E2 in `pool/mod.rs`): building a task for the queue,
//! the critical section that accepts it in the submitting thread's shard (the run state
//! read, a worker slot reserved, the push), the rejection policies, taking a task back
//! when no worker could be started, and a periodic task's re-queue after a run.

use crate::sync::Ordering;

use super::control::RunState;
use super::entry::{Entry, Guard};
use super::shared::Rejection;
use super::{Pool, Stripe};
use crate::clock::Ticks;
use crate::config::RejectionPolicy;
use crate::error::{ScheduleError, SpawnError, TaskError};
use crate::schedule::{First, Periodic};
use crate::stats;
use crate::sync::Arc;
use crate::task::{
    state::State, Label, OnceBody, OnceTask, PeriodicBody, PeriodicTask, Task, TaskRef, TypedRef,
};

/// A task accepted by the pool: what its future holds.
pub(crate) type Scheduled<T> = (TypedRef<T>, Arc<Stripe>);

impl Pool {
    /// Builds and submits a one-shot task named `name` (`()`: unnamed) with the body the
    /// handle chose (the closure, linked to the submitter's span or not); `now` as for
    /// [`submit`](Self::submit).
    #[inline]
    pub(crate) fn schedule_once<B, T, N>(
        self: &Arc<Self>,
        deadline: Ticks,
        now: Option<Ticks>,
        task: B,
        name: N,
    ) -> Result<Scheduled<T>, ScheduleError>
    where
        B: OnceBody<T>,
        T: Send + 'static,
        N: Label,
    {
        // The future's reference and the queue's, counted as two from the start.
        let (task, queued): (TypedRef<T>, TaskRef) =
            TaskRef::new_typed_pair(OnceTask::named(deadline, task, name));
        match self.submit(queued, now, true) {
            Ok(stripe) => Ok((task, stripe.unwrap_or_else(|| Stripe::new(self.clone())))),
            Err(err) => {
                crate::task::drop_quietly(task); // a refused closure's panicking Drop is contained
                Err(err)
            }
        }
    }

    /// Submits a one-shot without a future (`execute`), due now, with the body the
    /// handle chose.
    pub(crate) fn execute<B: OnceBody<()>>(self: &Arc<Self>, task: B) -> Result<(), ScheduleError> {
        let deadline = self.clock().now();
        let task = TaskRef::new(OnceTask::new(deadline, task));
        self.submit(task, Some(deadline), false).map(drop)
    }

    /// Builds and submits a periodic task (see
    /// `ScheduledThreadPoolExecutor::schedule_periodic`).
    pub(crate) fn schedule_periodic<B>(
        self: &Arc<Self>,
        spec: Periodic,
        task: B,
    ) -> Result<Scheduled<B::Output>, ScheduleError>
    where
        B: PeriodicBody,
    {
        let Periodic {
            schedule,
            initial_delay,
            limits,
            on_error: _,  // read by the fallible adaptor (`body/context.rs`) before this
            exclusive: _, // read by the handle, which wraps the closure (`body::Guarded`)
            name,
            aligned,
            catch_up_now,
        } = spec;
        if schedule.is_zero() {
            return Err(ScheduleError::ZeroPeriod);
        }
        let now = self.clock().now();
        let First {
            deadline: first,
            never_due,
            then,
            earliest,
        } = schedule.first(self.clock(), now, initial_delay, aligned, catch_up_now);
        if never_due {
            return Err(ScheduleError::NeverDue);
        }
        let deadline = first.as_ref().ok().copied().flatten().unwrap_or(earliest);
        let mut task = task;
        if let Some(next) = then {
            task.catch_up_until(next);
        }
        let timer = self.task_timer(name.as_deref());
        let task = PeriodicTask::new(deadline, schedule, limits, name, task)
            .then_at(then)
            .timed_by(timer);
        self.submit_periodic(now, first, limits.max_runs, task)
    }

    /// Submits a periodic task built by [`schedule_periodic`](Self::schedule_periodic),
    /// or ends it at once if `first` (its first deadline) or `max_runs` says it never runs.
    fn submit_periodic<B: PeriodicBody>(
        self: &Arc<Self>,
        now: Ticks,
        first: Result<Option<Ticks>, crate::error::Caught>,
        max_runs: Option<u64>,
        task: PeriodicTask<B>,
    ) -> Result<Scheduled<B::Output>, ScheduleError> {
        let ended = match first {
            Err((payload, msg)) => Some(Err((payload, msg))),
            Ok(None) => Some(Ok(())),
            Ok(Some(_)) if max_runs == Some(0) => Some(Ok(())),
            Ok(Some(_)) => None,
        };
        let mut stripe = None;
        let typed = match ended {
            None => {
                let (typed, queued) = TaskRef::new_typed_pair(task);
                match self.submit(queued, Some(now), true) {
                    Ok(s) => stripe = s,
                    Err(err) => {
                        crate::task::drop_quietly(typed); // contain a panicking Drop
                        return Err(err);
                    }
                }
                typed
            }
            Some(outcome) => {
                // Accepted (unless shut down) but over before its first run.
                self.refuse_if_shutdown()?;
                stats::bump(&self.counters.task_count);
                let outcome = outcome.map_err(|(payload, msg)| {
                    stats::bump(&self.counters.panicked);
                    crate::user::traced(|| tracing::error!(target: "schedpool", pool = self.name(), panic = %msg, "trigger panicked in first_deadline"));
                    TaskError::Panicked(payload)
                });
                task.finish_unrun(outcome);
                TaskRef::new_typed(task)
            }
        };
        Ok((typed, stripe.unwrap_or_else(|| Stripe::new(self.clone()))))
    }

    /// Queues a new task, or applies the rejection policy. `now`: the clock reading the
    /// caller computed the task's deadline from, if it made one: the stamp of the task's
    /// sequence number (`queue/sharded.rs`, Q3), and if the deadline is not after it, the
    /// task is due and may take the ready lane (`queue/lane.rs`). Returns the shard's
    /// [`Arc<Stripe>`] for the task's future when it was queued and `future` says the
    /// caller makes a future (`None` when a policy took it, or the pool was being dropped).
    #[inline]
    pub(crate) fn submit(
        self: &Arc<Self>,
        task: TaskRef,
        now: Option<Ticks>,
        future: bool,
    ) -> Result<Option<Arc<Stripe>>, ScheduleError> {
        let published = if self.config.max_queued_tasks == usize::MAX {
            let due = now.is_some_and(|now| task.header().deadline() <= now);
            let mut q = self.queue.lock_to_submit(due);
            self.publish(&mut q, task, now, 0, future)
        } else {
            // A bounded queue counts every shard's tasks under every shard's lock.
            let mut all = self.queue.lock_all();
            let queued = all.len();
            self.publish(
                all.shard(self.queue.local_shard()),
                task,
                now,
                queued,
                future,
            )
        };
        match published {
            Ok(p) => {
                if let Some(index) = p.spawn {
                    if let Err(error) = self.start_worker(index) {
                        let task = p.task.as_deref().expect("kept when a worker is started");
                        if let Some(task) = self.unqueue_if_workerless(task, true) {
                            stats::bump(&self.counters.rejected);
                            crate::task::drop_quietly(task);
                            return Err(ScheduleError::ThreadSpawn(SpawnError::new(error)));
                        }
                    }
                }
                Ok(p.stripe)
            }
            Err((task, reason)) => self.refuse(task, reason).map(|()| None),
        }
    }

    /// The critical section of a submission (E1, E2), in the submitting thread's shard:
    /// refuses after shutdown or when the queue is full (`queued`: the tasks queued in
    /// every shard, when the queue is bounded; the caller then holds every shard's lock);
    /// else reserves a worker if fewer than the core size are reserved
    /// (reserve-then-publish) and pushes the task. Returns what the caller needs after
    /// unlocking ([`Published`]).
    pub(crate) fn publish(
        &self,
        q: &mut Guard<'_>,
        task: TaskRef,
        now: Option<Ticks>,
        queued: usize,
        future: bool,
    ) -> Result<Published, (TaskRef, ScheduleError)> {
        // E2: the run state is read in the critical section that publishes the task, and
        // `shutdown` changes it before its own pass over the queue.
        if !self.control.load().is_running() {
            return Err((task, ScheduleError::Shutdown));
        }
        if queued >= self.config.max_queued_tasks {
            return Err((task, ScheduleError::QueueFull));
        }
        // E1: reserved in the same critical section, so a worker releasing its slot in
        // its own critical section either is seen here or sees this task.
        let spawn = self.control.reserve_for_task(self.core_pool_size());
        let deadline = task.header().deadline();
        let due = now.is_some_and(|now| deadline <= now);
        let seq = q.next_seq(now);
        task.header().settle(q.index()); // the task's home shard from now on (T4)
        task.header().set_seq(seq); // queued from here on: the node holds the deadline
        q.ext().submitted += 1; // counted in the critical section that accepts it

        // A copy to take the task back by if the worker cannot be started (E1): only when
        // one is to be started, so the common path counts no reference.
        let kept = spawn.is_some().then(|| task.clone());
        q.push_tracked(Entry { deadline, task }, due);
        Ok(Published {
            task: kept,
            spawn,
            // This shard's reference count, not the pool's; none for `execute`.
            stripe: if future { q.ext().stripe.clone() } else { None },
        })
    }

    /// `Err(Shutdown)`, counted and traced, if the executor is shut down (for submissions
    /// that end before they are queued).
    pub(super) fn refuse_if_shutdown(&self) -> Result<(), ScheduleError> {
        if self.is_shutdown() {
            stats::bump(&self.counters.rejected);
            let sample = || Rejection {
                reason: ScheduleError::Shutdown,
                policy: RejectionPolicy::Abort,
            };
            if let Some(suppressed) = self.reject_log.admit(sample) {
                crate::user::traced(
                    || tracing::warn!(target: "schedpool", pool = self.name(), reason = %ScheduleError::Shutdown, policy = ?RejectionPolicy::Abort, suppressed, occurrences = suppressed + 1, "task rejected"),
                );
            }
            return Err(ScheduleError::Shutdown);
        }
        Ok(())
    }

    /// The rejection policy, applied outside the lock.
    #[cold]
    fn refuse(self: &Arc<Self>, task: TaskRef, reason: ScheduleError) -> Result<(), ScheduleError> {
        stats::bump(&self.counters.rejected);
        let policy = match reason {
            ScheduleError::QueueFull => self.config.rejection_policy,
            _ => RejectionPolicy::Abort,
        };
        let sample = || Rejection {
            reason: reason.clone(),
            policy,
        };
        if let Some(suppressed) = self.reject_log.admit(sample) {
            // At most one line a second; `suppressed`: the rejections since the last line.
            crate::user::traced(
                || tracing::warn!(target: "schedpool", pool = self.name(), reason = %reason, policy = ?policy, suppressed, occurrences = suppressed + 1, "task rejected"),
            );
        }
        match policy {
            RejectionPolicy::Abort => {
                crate::task::drop_quietly(task); // a panicking Drop stays contained
                Err(reason)
            }
            RejectionPolicy::CallerRuns => {
                let report = task.run_now(&self.env_now(&task), false);
                if let Some(next) = report.next {
                    self.requeue(task, next);
                }
                Ok(())
            }
            RejectionPolicy::Discard => {
                if task.header().cancel() {
                    task.finish_cancelled();
                }
                Ok(())
            }
        }
    }

    /// After a failed thread start: if no worker is left, takes `task` back out of the
    /// queue so it is not stranded (E1), and returns it; `new`: it was a new submission
    /// (un-counted again), not a re-queue.
    #[cold]
    pub(super) fn unqueue_if_workerless(&self, task: &dyn Task, new: bool) -> Option<TaskRef> {
        // E1: workers release their slots only under every shard's lock, so this shard's
        // lock orders the check against them.
        let mut q = self.queue.lock(task.header().home()); // T4
        if self.control.load().workers() > 0 {
            return None;
        }
        let removed = q.remove_tracked(&task.header().position);
        if new && removed.is_some() {
            q.ext().submitted -= 1; // refused after all: not a task the pool took
        }
        removed.map(|e| e.task)
    }

    /// Re-queues a periodic task after a run, if the run state allows (E2). For runs on
    /// the caller's thread (`CallerRuns`); workers re-queue inside `next_task`.
    pub(crate) fn requeue(self: &Arc<Self>, task: TaskRef, next: Ticks) {
        let home = task.header().home();
        // A copy to take the task back by if a worker cannot be started (E1); this path
        // (`CallerRuns`) is not a hot one.
        let kept = task.clone();
        let mut q = self.queue.lock(home);
        let outcome = self.requeue_locked(&mut q, task, next);
        let spawn = match outcome {
            Requeued::Queued => self.control.reserve_for_task(self.core_pool_size()),
            _ => None,
        };
        drop(q);
        match outcome {
            Requeued::Refused(task) => task.finish_cancelled(),
            Requeued::Dropped(task) => crate::task::drop_quietly(task), // U1: unlocked
            Requeued::Queued => {}
        }
        if let Some(index) = spawn {
            if self.start_worker(index).is_err() {
                if let Some(task) = self.unqueue_if_workerless(&*kept, false) {
                    if task.header().cancel() {
                        task.finish_cancelled();
                    }
                }
            }
        }
    }

    /// The decision and the push of a re-queue, under the lock of the task's home shard
    /// (E2, T4). A refused task has been cancelled here and must be finished by the
    /// caller after unlocking (T2, I4).
    pub(super) fn requeue_locked(&self, q: &mut Guard<'_>, task: TaskRef, next: Ticks) -> Requeued {
        let header = task.header();
        debug_assert_eq!(q.index(), header.home(), "T4: the home shard");
        if header.state() != State::Scheduled {
            return Requeued::Dropped(task); // cancelled since its run ended; the canceller completes it
        }
        let allowed = match self.control.load().run_state() {
            RunState::Running => true,
            RunState::Shutdown => self.continue_periodic.load(Ordering::Relaxed),
            RunState::Stop => false,
        };
        if !allowed {
            return if header.cancel() {
                stats::bump(&self.counters.cancelled);
                Requeued::Refused(task)
            } else {
                Requeued::Dropped(task)
            };
        }
        // The rule's `next`, unless a handle moved the task or asked for an extra run (NX1).
        let next = match task.periodic() {
            Some(c) => c.next.at_requeue(q, next),
            None => next,
        };
        let seq = q.next_seq(None);
        header.set_seq(seq); // queued from here on: the node holds the deadline
        q.push_tracked(
            Entry {
                deadline: next,
                task,
            },
            false,
        );
        Requeued::Queued
    }
}

/// A queued submission, as `Pool::publish` leaves it.
pub(crate) struct Published {
    /// A reference to the task, kept only when a worker is to be started for it, to take
    /// it back by if that fails (E1).
    pub(crate) task: Option<TaskRef>,
    /// A worker slot reserved for it, to start after unlocking (E1).
    pub(crate) spawn: Option<usize>,
    /// The shard's reference to the pool for the task's future.
    pub(crate) stripe: Option<Arc<Stripe>>,
}

/// What became of a periodic task's re-queue.
pub(super) enum Requeued {
    /// In the queue.
    Queued,
    /// Not allowed after shutdown and cancelled here: its future must be completed.
    Refused(TaskRef),
    /// Cancelled by someone else meanwhile, who completes it. The reference comes back
    /// so the caller drops it after unlocking: it may be the task's last one, and the
    /// task's closure or trigger is user code (U1 in `user.rs`).
    Dropped(TaskRef),
}
