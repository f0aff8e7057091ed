//! `Shared`: the core behind every handle, future and worker. Submission, cancel and
//! reschedule, the run-after-shutdown policies and the shutdown sequence; the worker
//! lifecycle is in `worker.rs`, the control state in `control.rs`. Invariants E1–E5 are
//! stated in `pool/mod.rs`.

use crate::sync::Ordering;
use std::fmt;
use std::time::Instant;

use super::control::{Control, RunState};
use super::{Policy, PoolRef, Stripe, Tally};
use crate::builder::{Config, RejectionPolicy};
use crate::clock::{AdvanceListener, Clock, Ticks};
use crate::error::{run_caught, ScheduleError, TaskError};
use crate::future::CancelHandle;
use crate::periodic::{Periodic, Schedule};
use crate::queue::sharded::{AllShards, ShardGuard, ShardedQueue};

use crate::queue::{Ordered, Position, Timed, Tracked};
use crate::stats::{self, Counters, Lateness};
use crate::sync::{Arc, AtomicBool, AtomicU64, AtomicUsize, Weak};
use crate::task::sleepers::Sleepers;
use crate::task::{
    state::State, submitter_span, Host, Job, Label, Linked, OnceBody, OnceTask, PeriodicBody,
    PeriodicTask, Plain, RunEnv, TaskRef, TypedTask, NO_DEADLINE,
};
use crate::throttle::Throttle;

/// A queued task: 16 bytes, its deadline inline and the task behind a thin pointer. The
/// FIFO sequence number that breaks a tie between equal deadlines lives in the task while
/// it is queued (`Header::seq`, written before the push under the home shard's lock), so
/// a sift reads a task only on a tie; when the node leaves the queue it hands its deadline
/// back to the task (`Tracked::left`).
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) deadline: Ticks,
    pub(crate) value: TaskRef,
}

impl Entry {
    /// The FIFO sequence number (T4: under the home shard's lock, while queued).
    #[inline]
    pub(crate) fn seq(&self) -> u64 {
        self.value.header().seq()
    }
}

impl Ordered for Entry {
    #[inline]
    fn before(&self, other: &Self) -> bool {
        self.deadline < other.deadline
            || (self.deadline == other.deadline && self.seq() < other.seq())
    }
}

impl Timed for Entry {
    #[inline]
    fn deadline(&self) -> Ticks {
        self.deadline
    }
}

/// A task accepted by the pool: what its future holds.
pub(crate) type Scheduled<T> = (TypedTask<T>, PoolRef);

impl Tracked for Entry {
    /// T4: the task's place in its home shard.
    #[inline]
    fn position(&self) -> &Position {
        &self.value.header().position
    }

    /// Out of the queue the task keeps its own deadline (`Header::when`).
    #[inline]
    fn left(&self) {
        self.value.header().set_deadline(self.deadline);
    }
}

/// Java: `DelayedWorkQueue`, sharded (`queue/sharded.rs`).
pub(crate) type Queue = ShardedQueue<Entry, Tally>;
/// One shard of the queue with its lock held.
pub(crate) type Guard<'a> = ShardGuard<'a, Entry, Tally>;
/// Every shard locked.
pub(crate) type All<'a> = AllShards<'a, Entry, Tally>;

/// How many shards the queue gets: one per CPU, rounded up to a power of two (at most
/// `queue::sharded::MAX_SHARDS`). Models use two, so that every cross-shard path is
/// explored. A build with `--cfg schedpool_probe` takes `SCHEDPOOL_SHARDS` from the
/// environment instead, so a small machine can count what grows with the shard count of a
/// large one (`scripts/scaling.sh`).
fn shard_count() -> usize {
    if cfg!(all(test, loom)) {
        return 2;
    }
    #[cfg(all(schedpool_probe, not(loom)))]
    if let Some(n) = crate::probe::shards() {
        return n;
    }
    num_cpus::get()
}

/// The core behind every handle, future and worker.
pub(crate) struct Shared {
    pub(crate) queue: Queue,
    /// Run state, worker and thread counts, termination (`control.rs`); not under the
    /// queue lock.
    pub(crate) control: Control,
    pub(crate) config: Config,
    pub(super) core_pool_size: AtomicUsize,
    continue_periodic: AtomicBool,
    execute_delayed: AtomicBool,
    remove_on_cancel: AtomicBool,
    /// Live `ScheduledThreadPoolExecutor` handles; the last one to drop shuts down.
    handles: AtomicUsize,
    pub(crate) counters: Counters,
    pub(crate) lateness: Lateness,
    /// Bumped when the core size shrinks: idle workers re-check whether they are surplus.
    /// Relaxed: written before `wake_all` takes the queue's coordinator lock and read by
    /// a waiting worker under that lock, which orders them.
    pub(super) epoch: AtomicU64,
    /// Rate limits of the "task started late" and "task rejected" warnings (`throttle.rs`).
    pub(super) late_log: Throttle,
    /// Tasks asleep in `TaskContext::sleep` (`sleepers.rs`).
    pub(crate) sleepers: Sleepers,
    reject_log: Throttle,
}

impl AdvanceListener for Shared {
    fn on_advance(&self) {
        self.queue.on_advance();
        self.sleepers.wake(); // S1: tasks asleep on virtual time re-read it
    }
}

impl Shared {
    /// The core of a new executor, registered with its clock.
    pub(crate) fn new(config: Config) -> Arc<Shared> {
        let clock = config.clock.clone().map_or_else(Clock::real, Clock::Manual);
        let shared = Arc::new(Shared {
            queue: ShardedQueue::new(
                clock.clone(),
                shard_count(),
                config.spin_policy,
                config.timer_precision,
                Tally::default,
            ),
            core_pool_size: AtomicUsize::new(config.core_pool_size),
            continue_periodic: AtomicBool::new(
                config.continue_existing_periodic_tasks_after_shutdown,
            ),
            execute_delayed: AtomicBool::new(config.execute_existing_delayed_tasks_after_shutdown),
            remove_on_cancel: AtomicBool::new(config.remove_on_cancel),
            control: Control::new(),
            handles: AtomicUsize::new(1),
            counters: Counters::new(),
            lateness: Lateness::new(),
            epoch: AtomicU64::new(0),
            late_log: Throttle::default(),
            reject_log: Throttle::default(),
            sleepers: Sleepers::new(),
            config,
        });
        let listener: Weak<dyn AdvanceListener> =
            Arc::downgrade(&shared) as Weak<dyn AdvanceListener>;
        clock.register(listener);
        for g in shared.queue.lock_all().shards() {
            g.ext().stripe = Some(Stripe::new(shared.clone())); // until `release_stripes`
        }
        shared
    }

    /// The last executor handle is gone: the shards give up their stripes, so the pool is
    /// freed once the last future and worker let go of it. (No submission can follow: it
    /// would need a handle.)
    pub(crate) fn release_stripes(&self) {
        let stripes: Vec<Option<PoolRef>> = self
            .queue
            .lock_all()
            .shards()
            .map(|g| g.ext().stripe.take())
            .collect();
        drop(stripes); // outside the locks: it may drop the pool's memory's last holders
    }

    /// Builds and submits a one-shot task named `name` (`()`: unnamed); `due` as for
    /// [`submit`](Self::submit). Inside a span that tracing records, the task is linked
    /// to it (`task::Linked`).
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
        let (task, queued): (TypedTask<T>, TaskRef) = match submitter_span() {
            None => TaskRef::new_typed_pair(OnceTask::named(deadline, task, name)),
            Some(parent) => TaskRef::new_typed_pair(OnceTask::named(
                deadline,
                Linked { body: task, parent },
                name,
            )),
        };
        match self.submit(queued, now, true) {
            Ok(stripe) => Ok((task, stripe.unwrap_or_else(|| Stripe::new(self.clone())))),
            Err(err) => {
                crate::task::drop_quietly(task); // a refused closure's panicking Drop is contained
                Err(err)
            }
        }
    }

    /// Submits a one-shot without a future (`execute`).
    pub(crate) fn execute<F>(self: &Arc<Self>, task: F) -> Result<(), ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        let deadline = self.clock().now();
        let task: TaskRef = match submitter_span() {
            None => TaskRef::new(OnceTask::new(deadline, Plain(task))),
            Some(parent) => TaskRef::new(OnceTask::new(
                deadline,
                Linked {
                    body: Plain(task),
                    parent,
                },
            )),
        };
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
            on_error: _,  // read by the fallible adaptor (`context.rs`) before this
            exclusive: _, // read by the handle, which wraps the closure (`cluster/run.rs`)
            name,
            aligned,
            catch_up_now,
        } = spec;
        if schedule.is_zero() {
            return Err(ScheduleError::ZeroPeriod);
        }
        let clock = self.clock();
        let now = clock.now();
        let earliest = crate::clock::add(now, initial_delay);
        let first = match &schedule {
            Schedule::Trigger(trigger) => {
                run_caught(|| trigger.0.lock().first_deadline(clock.instant_of(earliest)))
                    .map(|at| at.map(|at| clock.ticks_of(at)))
            }
            Schedule::FixedRate(period, _) | Schedule::FixedDelay(period) => {
                Ok(Some(match aligned {
                    Some(offset) => {
                        let wall = std::time::SystemTime::now();
                        crate::clock::add(
                            earliest,
                            to_grid(wall, crate::clock::since(earliest, now), *period, offset),
                        )
                    }
                    None => earliest,
                }))
            }
            Schedule::Once => Ok(Some(earliest)),
        };
        // `Exclusive::catch_up`: one run at once, and then the first deadline as scheduled
        // for a fixed-rate task (its grid), through the `rescheduled` cell a run's
        // re-queue reads instead of the rule; a fixed-delay task goes on from the run's end.
        let mut first = first;
        let mut then = None;
        if let (true, Ok(Some(at))) = (catch_up_now, &mut first) {
            if matches!(schedule, Schedule::FixedRate(..)) && *at > now {
                then = Some(*at);
            }
            *at = (*at).min(now);
        }
        let deadline = first.as_ref().ok().copied().flatten().unwrap_or(earliest);
        self.submit_periodic(
            now,
            first,
            limits.max_runs,
            PeriodicTask::new(deadline, schedule, limits, name, task).then_at(then),
        )
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

    /// The environment of a run of `job` on the calling thread, now (`CallerRuns`,
    /// `PendingTask::run`): the pool's clock and the pool itself, no counters.
    pub(crate) fn env_now<'a>(self: &'a Arc<Self>, job: &'a TaskRef) -> RunEnv<'a> {
        RunEnv {
            now: self.clock().now(),
            clock: self.clock(),
            counters: None,
            job: Some(job),
            pool: Some(self),
            on_worker: false,
        }
    }

    /// A handle was cloned. Relaxed: a new handle is made from a live one, which keeps the
    /// count above zero.
    pub(crate) fn handle_cloned(&self) {
        self.handles.fetch_add(1, Ordering::Relaxed);
    }

    /// A handle was dropped; `true` if it was the last. AcqRel: the last handle's shutdown
    /// happens after every other handle's use.
    pub(crate) fn handle_dropped(&self) -> bool {
        self.handles.fetch_sub(1, Ordering::AcqRel) == 1
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        !self.control.load().is_running()
    }

    /// `shutdown_now` was called: running tasks are asked to stop (`TaskContext::is_cancelled`).
    pub(crate) fn is_stopping(&self) -> bool {
        self.control.load().run_state() == RunState::Stop
    }

    pub(crate) fn is_terminating(&self) -> bool {
        self.is_shutdown() && !self.is_terminated()
    }

    pub(crate) fn is_terminated(&self) -> bool {
        self.control.is_terminated()
    }

    pub(crate) fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// A policy flag's value. Relaxed: a setting (E4).
    pub(crate) fn policy(&self, policy: Policy) -> bool {
        self.flag(policy).load(Ordering::Relaxed)
    }

    fn flag(&self, policy: Policy) -> &AtomicBool {
        match policy {
            Policy::ContinuePeriodic => &self.continue_periodic,
            Policy::ExecuteDelayed => &self.execute_delayed,
            Policy::RemoveOnCancel => &self.remove_on_cancel,
        }
    }

    #[inline]
    /// The pool's name, the `pool` field of its log events.
    pub(crate) fn name(&self) -> &str {
        self.config.pool_name()
    }

    pub(crate) fn clock(&self) -> &Clock {
        self.queue.clock()
    }

    #[inline]
    pub(crate) fn core_pool_size(&self) -> usize {
        self.core_pool_size.load(Ordering::Relaxed)
    }

    /// Queues a new task, or applies the rejection policy. `now`: the clock reading the
    /// caller computed the task's deadline from, if it made one: the stamp of the task's
    /// sequence number (`queue/sharded.rs`, Q3), and if the deadline is not after it, the
    /// task is due and may take the ready lane (`queue/lane.rs`). Returns the shard's [`PoolRef`] for the task's future when
    /// it was queued and `future` says the caller makes a future (`None` when a policy
    /// took it, or the pool was being dropped).
    pub(crate) fn submit(
        self: &Arc<Self>,
        job: TaskRef,
        now: Option<Ticks>,
        future: bool,
    ) -> Result<Option<PoolRef>, ScheduleError> {
        let published = if self.config.max_queued_tasks == usize::MAX {
            let mut q = self.queue.lock(self.queue.local_shard());
            self.publish(&mut q, job, now, 0, future)
        } else {
            // A bounded queue counts every shard's tasks under every shard's lock.
            let mut all = self.queue.lock_all();
            let queued = all.len();
            self.publish(
                all.shard(self.queue.local_shard()),
                job,
                now,
                queued,
                future,
            )
        };
        match published {
            Ok(p) => {
                if let Some(index) = p.spawn {
                    if !self.start_worker(index) {
                        let job = p.job.as_deref().expect("kept when a worker is started");
                        if let Some(job) = self.unqueue_if_workerless(job, true) {
                            stats::bump(&self.counters.rejected);
                            crate::task::drop_quietly(job);
                            return Err(ScheduleError::ThreadSpawn);
                        }
                    }
                }
                Ok(p.stripe)
            }
            Err((job, reason)) => self.refuse(job, reason).map(|()| None),
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
        job: TaskRef,
        now: Option<Ticks>,
        queued: usize,
        future: bool,
    ) -> Result<Published, (TaskRef, ScheduleError)> {
        // E2: the run state is read in the critical section that publishes the task, and
        // `shutdown` changes it before its own pass over the queue.
        if !self.control.load().is_running() {
            return Err((job, ScheduleError::Shutdown));
        }
        if queued >= self.config.max_queued_tasks {
            return Err((job, ScheduleError::QueueFull));
        }
        // E1: reserved in the same critical section, so a worker releasing its slot in
        // its own critical section either is seen here or sees this task.
        let spawn = self.control.reserve_for_task(self.core_pool_size());
        let deadline = job.header().deadline();
        let due = now.is_some_and(|now| deadline <= now);
        let seq = q.next_seq(now);
        job.header().settle(q.index()); // the task's home shard from now on (T4)
        job.header().set_seq(seq); // queued from here on: the node holds the deadline
        q.ext().submitted += 1; // counted in the critical section that accepts it
                                // A copy to take the task back by if the worker cannot be started (E1): only
                                // when one is to be started, so the common path counts no reference.
        let kept = spawn.is_some().then(|| job.clone());
        q.push_tracked(
            Entry {
                deadline,
                value: job,
            },
            due,
        );
        Ok(Published {
            job: kept,
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
            if let Some(suppressed) = self.reject_log.admit() {
                crate::user::traced(
                    || tracing::warn!(target: "schedpool", pool = self.name(), reason = %ScheduleError::Shutdown, suppressed, occurrences = suppressed + 1, "task rejected"),
                );
            }
            return Err(ScheduleError::Shutdown);
        }
        Ok(())
    }

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

    /// The rejection policy, applied outside the lock.
    #[cold]
    fn refuse(self: &Arc<Self>, job: TaskRef, reason: ScheduleError) -> Result<(), ScheduleError> {
        stats::bump(&self.counters.rejected);
        let policy = match reason {
            ScheduleError::QueueFull => self.config.rejection_policy,
            _ => RejectionPolicy::Abort,
        };
        if let Some(suppressed) = self.reject_log.admit() {
            // At most one line a second; `suppressed`: the rejections since the last line.
            crate::user::traced(
                || tracing::warn!(target: "schedpool", pool = self.name(), reason = %reason, policy = ?policy, suppressed, occurrences = suppressed + 1, "task rejected"),
            );
        }
        match policy {
            RejectionPolicy::Abort => {
                crate::task::drop_quietly(job); // a panicking Drop stays contained
                Err(reason)
            }
            RejectionPolicy::CallerRuns => {
                let report = job.run_now(&self.env_now(&job), false);
                if let Some(next) = report.next {
                    self.requeue(job, next);
                }
                Ok(())
            }
            RejectionPolicy::Discard => {
                if job.header().cancel() {
                    job.finish_cancelled();
                }
                Ok(())
            }
        }
    }

    /// After a failed thread start: if no worker is left, takes `job` back out of the
    /// queue so it is not stranded (E1), and returns it; `new`: it was a new submission
    /// (un-counted again), not a re-queue.
    #[cold]
    pub(super) fn unqueue_if_workerless(&self, job: &dyn Job, new: bool) -> Option<TaskRef> {
        // E1: workers release their slots only under every shard's lock, so this shard's
        // lock orders the check against them.
        let mut q = self.queue.lock(job.header().home()); // T4
        if self.control.load().workers() > 0 {
            return None;
        }
        let removed = q.remove_tracked(&job.header().position);
        if new && removed.is_some() {
            q.ext().submitted -= 1; // refused after all: not a task the pool took
        }
        removed.map(|e| e.value)
    }

    /// Re-queues a periodic task after a run, if the run state allows (E2). For runs on
    /// the caller's thread (`CallerRuns`); workers re-queue inside `next_task`.
    pub(crate) fn requeue(self: &Arc<Self>, job: TaskRef, next: Ticks) {
        let home = job.header().home();
        // A copy to take the task back by if a worker cannot be started (E1); this path
        // (`CallerRuns`) is not a hot one.
        let kept = job.clone();
        let mut q = self.queue.lock(home);
        let outcome = self.requeue_locked(&mut q, job, next);
        let spawn = match outcome {
            Requeued::Queued => self.control.reserve_for_task(self.core_pool_size()),
            _ => None,
        };
        drop(q);
        match outcome {
            Requeued::Refused(job) => job.finish_cancelled(),
            Requeued::Dropped(job) => crate::task::drop_quietly(job), // U1: unlocked
            Requeued::Queued => {}
        }
        if let Some(index) = spawn {
            if !self.start_worker(index) {
                if let Some(job) = self.unqueue_if_workerless(&*kept, false) {
                    if job.header().cancel() {
                        job.finish_cancelled();
                    }
                }
            }
        }
    }

    /// The decision and the push of a re-queue, under the lock of the task's home shard
    /// (E2, T4). A refused task has been cancelled here and must be finished by the
    /// caller after unlocking (T2, I4).
    pub(super) fn requeue_locked(&self, q: &mut Guard<'_>, job: TaskRef, next: Ticks) -> Requeued {
        let header = job.header();
        debug_assert_eq!(q.index(), header.home(), "T4: the home shard");
        if header.state() != State::Scheduled {
            return Requeued::Dropped(job); // cancelled since its run ended; the canceller completes it
        }
        let allowed = match self.control.load().run_state() {
            RunState::Running => true,
            RunState::Shutdown => self.continue_periodic.load(Ordering::Relaxed),
            RunState::Stop => false,
        };
        if !allowed {
            return if header.cancel() {
                Requeued::Refused(job)
            } else {
                Requeued::Dropped(job)
            };
        }
        let rescheduled = job
            .rescheduled()
            .map_or(NO_DEADLINE, |c| q.replace(c, NO_DEADLINE));
        let next = match rescheduled {
            NO_DEADLINE => next,
            at => at,
        };
        let seq = q.next_seq(None);
        header.set_seq(seq); // queued from here on: the node holds the deadline
        q.push_tracked(
            Entry {
                deadline: next,
                value: job,
            },
            false,
        );
        Requeued::Queued
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

    /// Java `shutdown`: no new tasks; queued ones follow the run-after-shutdown policies.
    pub(crate) fn shutdown(&self) {
        // E2: the run state changes before the pass over the queue; E5: this call holds
        // a finisher slot until the futures of the tasks it removed are complete, so
        // termination means that work is done too.
        let before = self.control.shut_down(RunState::Shutdown);
        let removed = self.apply_shutdown_policies(&mut self.queue.lock_all());
        self.queue.wake_all(); // E3: idle workers re-check; they exit if drained
        if before == RunState::Running {
            crate::user::traced(
                || tracing::info!(target: "schedpool", pool = self.name(), "executor shut down"),
            );
        }
        finish_removed(removed);
        self.flush_logs();
        self.finisher_done();
    }

    /// Gives back a finisher slot (E5), tracing termination if that was the last party.
    fn finisher_done(&self) {
        if self.control.finisher_done() {
            self.log_terminated();
        }
    }

    /// Writes the counts the rate-limited warnings still hold (`throttle.rs`), so that the
    /// `occurrences` of the pool's lines add up to its counters. At shutdown and at
    /// termination.
    pub(super) fn flush_logs(&self) {
        let late = self.late_log.flush();
        if late > 0 {
            crate::user::traced(
                || tracing::warn!(target: "schedpool", pool = self.name(), suppressed = late, occurrences = late, "task started late"),
            );
        }
        let rejected = self.reject_log.flush();
        if rejected > 0 {
            crate::user::traced(
                || tracing::warn!(target: "schedpool", pool = self.name(), suppressed = rejected, occurrences = rejected, "task rejected"),
            );
        }
    }

    /// The pool terminated: its `terminated()` futures are woken (every caller got `true`
    /// from a latch and holds no lock, U1), then the last counts and the line.
    pub(super) fn log_terminated(&self) {
        self.control.wake_terminated();
        self.flush_logs();
        crate::user::traced(
            || tracing::info!(target: "schedpool", pool = self.name(), "executor terminated"),
        );
    }

    /// Removes the queued tasks the run-after-shutdown policies no longer allow (and
    /// cancelled ones) from every shard; cancels them under the locks, so `is_cancelled`
    /// is true by the time the locks are released. Does nothing before shutdown. The
    /// caller wakes the workers after unlocking (E3).
    pub(super) fn apply_shutdown_policies(&self, q: &mut All<'_>) -> Vec<(Entry, bool)> {
        if self.control.load().is_running() {
            return Vec::new();
        }
        let keep_periodic = self.continue_periodic.load(Ordering::Relaxed);
        let keep_delayed = self.execute_delayed.load(Ordering::Relaxed);
        let now = self.clock().now();
        let removed = q.extract_if(|e| {
            let h = e.value.header();
            h.state() == State::Cancelled
                || if h.is_periodic() {
                    !keep_periodic
                } else {
                    !keep_delayed && e.deadline > now
                }
        });
        removed
            .into_iter()
            .map(|e| {
                let won = e.value.header().cancel();
                (e, won)
            })
            .collect()
    }

    /// Stops the pool and hands back the queued tasks not yet cancelled, in deadline order.
    pub(crate) fn shutdown_now(&self) -> Vec<TaskRef> {
        let before = self.control.shut_down(RunState::Stop); // E2: before the pass
        self.sleepers.wake(); // S1: running tasks asleep in `TaskContext::sleep` stop
        let entries = self
            .queue
            .lock_all()
            .drain_sorted(|e| (e.deadline, e.seq()));
        self.queue.wake_all();
        if before == RunState::Running {
            crate::user::traced(
                || tracing::info!(target: "schedpool", pool = self.name(), "executor shut down (shutdown_now)"),
            );
        }
        // The handed-out tasks are the caller's to run or drop, not the pool's work.
        self.flush_logs();
        self.finisher_done();
        entries
            .into_iter()
            .map(|e| e.value)
            .filter(|job| job.header().state() == State::Scheduled)
            .collect()
    }

    pub(crate) fn await_termination(&self, until: Option<Instant>) -> bool {
        self.control.await_termination(until)
    }

    /// Polls for termination (`ScheduledThreadPoolExecutor::terminated`).
    pub(crate) fn poll_termination(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        self.control.poll_termination(cx)
    }

    /// A new executor handle from a weak one: `false` once the last handle is gone (the
    /// pool was shut down by that drop). AcqRel: as `handle_dropped`, whose zero this
    /// must not resurrect.
    pub(crate) fn handle_revived(&self) -> bool {
        self.handles
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n > 0).then_some(n + 1)
            })
            .is_ok()
    }

    pub(crate) fn purge(&self) -> usize {
        let removed = self
            .queue
            .lock_all()
            .extract_if(|e| e.value.header().state() == State::Cancelled);
        wake_if_drained(self);
        removed.len()
    }

    /// Sets a policy flag; the run-after-shutdown ones are re-applied at once after
    /// shutdown.
    pub(crate) fn set_policy(&self, policy: Policy, value: bool) {
        if policy == Policy::RemoveOnCancel {
            // Relaxed: read by later cancels; tasks already cancelled stay until `purge`.
            self.remove_on_cancel.store(value, Ordering::Relaxed);
            return;
        }
        self.control.finisher_start(); // E5: removals after shutdown are pool work
        let removed = {
            let mut all = self.queue.lock_all();
            self.flag(policy).store(value, Ordering::Relaxed); // E4: under every shard's lock
            self.apply_shutdown_policies(&mut all)
        };
        wake_if_drained(self); // E3
        finish_removed(removed);
        self.finisher_done();
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

/// `Periodic::aligned`: how long after the instant `ahead` past the wall-clock time `wall`
/// the next point of the grid `k · period + offset` (after the Unix epoch) comes; zero if
/// that instant is on it. `period` is not zero (checked before).
fn to_grid(
    wall: std::time::SystemTime,
    ahead: std::time::Duration,
    period: std::time::Duration,
    offset: std::time::Duration,
) -> std::time::Duration {
    let p = period.as_nanos();
    let at = match wall.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => (d + ahead).as_nanos(),
        Err(e) => ahead.as_nanos().saturating_sub(e.duration().as_nanos()), // a clock before 1970
    };
    let phase = (at + p - offset.as_nanos() % p) % p;
    let wait = if phase == 0 { 0 } else { p - phase };
    std::time::Duration::from_nanos(wait as u64) // < period, which fits
}

/// A queued submission, as `Shared::publish` leaves it.
pub(crate) struct Published {
    /// A reference to the task, kept only when a worker is to be started for it, to take
    /// it back by if that fails (E1).
    pub(crate) job: Option<TaskRef>,
    /// A worker slot reserved for it, to start after unlocking (E1).
    pub(crate) spawn: Option<usize>,
    /// The shard's reference to the pool for the task's future.
    pub(crate) stripe: Option<PoolRef>,
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

/// E3: after shutdown, a drained queue wakes every idle worker so it can exit. Called
/// with no shard locked, after a removal; `is_empty_synced` makes sure that of two
/// threads emptying the last two shards at once, one sees both empty.
pub(super) fn wake_if_drained(shared: &Shared) {
    if !shared.control.load().is_running() && shared.queue.is_empty_synced() {
        shared.queue.wake_all();
    }
}

/// Completes the futures of tasks removed by a policy, outside the lock (I4).
pub(super) fn finish_removed(removed: Vec<(Entry, bool)>) {
    for (entry, won) in removed {
        if won {
            entry.value.finish_cancelled();
        }
        crate::task::drop_quietly(entry);
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("control", &self.control)
            .field("queued", &self.queue_len())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, loom))]
impl Shared {
    /// Models: reserve a worker slot that the model's own thread plays, so no thread starts.
    pub(crate) fn pretend_worker(&self) {
        let reserved = self.control.reserve_if(|_| true);
        debug_assert!(reserved.is_some());
    }
}

#[cfg(all(test, not(loom)))]
mod grid_tests {
    use super::to_grid;
    use std::time::{Duration, UNIX_EPOCH};

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_first_deadline_is_the_next_point_of_the_grid() {
        let ms = Duration::from_millis;
        let at = |secs: u64, millis: u64| UNIX_EPOCH + Duration::from_secs(secs) + ms(millis);
        // On a whole second: on the grid.
        assert_eq!(
            to_grid(at(100, 0), Duration::ZERO, S, Duration::ZERO),
            Duration::ZERO
        );
        // 300 ms past: 700 ms to the next second.
        assert_eq!(
            to_grid(at(100, 300), Duration::ZERO, S, Duration::ZERO),
            ms(700)
        );
        // An offset of 250 ms: 950 ms from 300 ms past to 1.250.
        assert_eq!(to_grid(at(100, 300), Duration::ZERO, S, ms(250)), ms(950));
        // An offset beyond the period is taken modulo it.
        assert_eq!(to_grid(at(100, 300), Duration::ZERO, S, ms(2250)), ms(950));
        // The earliest allowed instant is `ahead` past the wall time read.
        assert_eq!(to_grid(at(100, 300), ms(800), S, Duration::ZERO), ms(900));
        // A minute grid from 12:00:59.
        let m = Duration::from_secs(60);
        assert_eq!(
            to_grid(at(43_259, 0), Duration::ZERO, m, Duration::ZERO),
            Duration::from_secs(1)
        );
    }
}
