//! The worker loop: take a task, run it, account for it, re-queue it if periodic; exit
//! when `Pool::next_task` says so. Panic containment and the thread hooks live here.
//!
//! # Invariants
//! - WK1: a worker holds its reservation from its start until `next_task` releases
//!   it or, if the loop itself unwinds (a crate bug: user code is contained), until
//!   [`ExitGuard`] releases it; either way `Pool::worker_exited` runs exactly once.
//! - WK2: user code (task bodies, hooks, destructors of task outputs, the `task` span's
//!   subscriber) runs with no lock held, inside `catch_unwind` (U1 and U2 of `user.rs`):
//!   a periodic task cancelled before its re-queue is dropped after the home shard is
//!   unlocked, and a subscriber that panics at the span costs the span, not the run.

use crate::sync::Ordering;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use super::control::RunState;
use super::entry::Entry;
use super::running::RunSlot;
use super::shared::{LateStart, Pool};
use super::shutdown::wake_if_drained;
use super::submit::Requeued;
use crate::clock::{self, Ticks};
use crate::config::Hook;
use crate::queue::Take;
use crate::stats;
use crate::sync::Arc;
use crate::task::{
    drop_quietly, Handoff, Host, Polled, Resumed, RunEnv, RunReport, TaskRef, ToWorker, HANDED,
};

thread_local! {
    /// The address of the `Pool` this thread works for; 0 on other threads.
    static CURRENT_POOL: Cell<usize> = const { Cell::new(0) };
}

/// `true` on one of `pool`'s own worker threads (so `close` must not wait for itself).
pub(crate) fn is_worker_of(pool: &Pool) -> bool {
    CURRENT_POOL.with(|p| p.get() == pool as *const Pool as usize)
}

/// WK1: runs `worker_exited` even if the loop unwinds.
struct ExitGuard {
    pool: Arc<Pool>,
    released: bool,
    active: bool,
    /// The worker's run in progress, for the task list (`running.rs`).
    slot: Arc<RunSlot>,
}

impl Drop for ExitGuard {
    fn drop(&mut self) {
        self.pool.running.unregister(&self.slot);
        self.pool.worker_exited(self.released, self.active);
    }
}

/// The body of worker thread `index`.
pub(crate) fn run(pool: Arc<Pool>, index: usize) {
    CURRENT_POOL.with(|p| p.set(Arc::as_ptr(&pool) as usize));
    reduce_timer_slack(pool.name());
    crate::user::traced(
        || tracing::debug!(target: "schedpool", pool = pool.name(), worker = index, "worker started"),
    );
    let slot = pool.running.register();
    let mut guard = ExitGuard {
        pool,
        released: false,
        active: false,
        slot,
    };
    run_hook(
        guard.pool.config.on_thread_start.as_ref(),
        "on_thread_start",
        guard.pool.name(),
    );
    let mut requeue = None;
    // What this worker's suspended runs keep of the pool (`awaiting.rs`), and where an
    // async run hands something to the worker: made once.
    let (host, handoff) = (guard.pool.owned(), Handoff::new(None));
    loop {
        let finished = guard.active;
        guard.active = false;
        match guard.pool.next_task(finished, requeue.take(), &guard.slot) {
            Some((entry, now)) => {
                guard.active = true;
                let worker = (index, &host, &handoff);
                requeue = run_task(&guard.pool, worker, &guard.slot, entry, now);
            }
            None => {
                guard.released = true;
                break;
            }
        }
    }
    run_hook(
        guard.pool.config.on_thread_stop.as_ref(),
        "on_thread_stop",
        guard.pool.name(),
    );
    crate::user::traced(
        || tracing::debug!(target: "schedpool", pool = guard.pool.name(), worker = index, "worker exiting"),
    );
    CURRENT_POOL.with(|p| p.set(0));
}

/// Runs one task taken from the queue at `now` by worker `index` (WK2), and records its
/// lateness (start − deadline). The run is in the worker's `slot` from its take until
/// `next_task` has re-queued a periodic task (RN1 in `running.rs`). Returns a periodic
/// task's next run, which `next_task` re-queues into the task's home shard (one critical
/// section of its own) before it takes the next task. An async run that hands something
/// to the worker (`task::ToWorker`: it went on without it, or a suspended run's poll ended
/// its run) takes [`async_run_end`], so a closure's run pays only the look at the
/// hand-off.
fn run_task(
    pool: &Arc<Pool>,
    (index, host, handoff): (usize, &Arc<dyn Host>, &Handoff),
    slot: &RunSlot,
    entry: Entry,
    now: clock::Ticks,
) -> Option<(TaskRef, clock::Ticks)> {
    let Entry { deadline, task, .. } = entry;
    let lateness = clock::since(now, deadline);
    let report = run_in_span(pool, index, &task, (now, lateness), handoff);
    probe!(Take);
    account(pool, index, &task, &report, now, deadline, lateness);
    match report.next {
        // An async run left something to the worker (`task::ToWorker`); its report is
        // empty, so the accounting above did nothing.
        Some(HANDED) => {
            let left = handoff
                .take()
                .expect("a run that reports HANDED left something");
            async_run_end(pool, (index, host), slot, (task, deadline, now), left)
        }
        Some(next) => Some((task, next)), // leaves the slot after its re-queue
        None => {
            drop_quietly(slot.leave()); // RN1: before the worker's own reference
            drop_quietly(task); // may drop the task and an unclaimed output (WK2)
            None
        }
    }
}

/// What a worker does with what an async run left it (`awaiting.rs`, AW1):
/// - [`ToWorker::GoesOn`]: the run is moved into a suspended run and polled once; if it
///   is pending it goes on without the worker (its slot left: the sleepers' list shows it
///   now), else it ended there and is the worker's own run's end;
/// - [`ToWorker::Ended`]: this take was a suspended run's poll, which ended its run:
///   [`resumed_run_end`].
///
/// The worker's loop finishes this take, whatever it was.
#[cold]
fn async_run_end(
    pool: &Arc<Pool>,
    (index, host): (usize, &Arc<dyn Host>),
    slot: &RunSlot,
    (task, deadline, now): (TaskRef, clock::Ticks, clock::Ticks),
    left: ToWorker,
) -> Option<(TaskRef, clock::Ticks)> {
    let pending = match left {
        ToWorker::Ended(facts, report) => {
            resumed_run_end(pool, (index, slot), task, facts, &report);
            return None;
        }
        ToWorker::GoesOn(pending) => pending,
    };
    let env = RunEnv {
        now,
        clock: pool.clock(),
        counters: Some(&pool.counters),
        task: None,
        pool: Some(pool),
        on_worker: true,
        handoff: None,
    };
    let (report, facts) = match pool.suspend(task, pending, (deadline, now), host, &env) {
        Polled::Ended(report, facts) => (report, facts),
        Polled::Pending => {
            drop_quietly(slot.leave()); // AW1: listed before this
            return None;
        }
    };
    // It ended in its first poll, on this worker: the worker's own run's end.
    record_run_time(pool, index, &facts.task, &report, facts.started);
    let lateness = clock::since(facts.started, facts.deadline);
    account(
        pool,
        index,
        &facts.task,
        &report,
        facts.started,
        facts.deadline,
        lateness,
    );
    match report.next {
        Some(next) => Some((facts.task, next)), // leaves the slot after its re-queue
        None => {
            drop_quietly(slot.leave());
            drop_quietly(facts.task);
            None
        }
    }
}

/// A suspended run's poll (`entry`, the run's queue entry) ended its run: the run is
/// accounted for with its own deadline and start, its task re-queued, the worker's slot
/// left, and only then AW1's three given back (`Pool::run_left`).
fn resumed_run_end(
    pool: &Arc<Pool>,
    (index, slot): (usize, &RunSlot),
    entry: TaskRef,
    facts: Resumed,
    report: &RunReport,
) {
    record_run_time(pool, index, &facts.task, report, facts.started);
    let lateness = clock::since(facts.started, facts.deadline);
    account(
        pool,
        index,
        &facts.task,
        report,
        facts.started,
        facts.deadline,
        lateness,
    );
    match report.next {
        // RN1: the slot holds the entry until after the re-queue.
        Some(next) => pool.after_run(Some((facts.task, next)), slot),
        None => {
            drop_quietly(slot.leave());
            drop_quietly(facts.task);
        }
    }
    pool.run_left(&entry);
    drop_quietly(entry);
}

/// The run-time histograms of a run that `started` and ended now (feature `metrics`).
#[inline]
fn record_run_time(
    pool: &Pool,
    index: usize,
    task: &TaskRef,
    report: &RunReport,
    started: clock::Ticks,
) {
    #[cfg(feature = "metrics")]
    if report.ran {
        // The run's duration on the pool's clock (`telemetry.rs`): the striped
        // histogram the metrics thread publishes, and the task's own series.
        let took = pool.clock().now().saturating_sub(started);
        pool.run_time.record(index, took);
        if let Some(timer) = task.timer() {
            timer.record(std::time::Duration::from_nanos(took));
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (pool, index, task, report, started);
}

/// The run itself, in its `task` span at the pool's `task_span_level`, and, with the
/// `metrics` feature, its duration. U2: the subscriber's span creation, entry, exit and
/// close are contained; a task whose span failed runs without it, and its run's report
/// still reaches the re-queue.
#[inline]
fn run_in_span(
    pool: &Arc<Pool>,
    index: usize,
    task: &TaskRef,
    (now, lateness): (clock::Ticks, std::time::Duration),
    handoff: &Handoff,
) -> RunReport {
    let header = task.header();
    // A span's level is part of its callsite: one per level.
    macro_rules! task_span {
        ($level:expr) => {
            tracing::span!(
                target: "schedpool",
                $level,
                "task",
                pool = pool.name(),
                id = header.id(),
                task_name = task.name(), // left out for an unnamed task
                kind = task.schedule().name(),
                lateness_us = lateness.as_micros() as u64,
            )
        };
    }
    let span = crate::user::traced(|| {
        use tracing::Level;
        match pool.config.task_span_level {
            Level::TRACE => task_span!(Level::TRACE),
            Level::DEBUG => task_span!(Level::DEBUG),
            Level::INFO => task_span!(Level::INFO),
            Level::WARN => task_span!(Level::WARN),
            _ => task_span!(Level::ERROR),
        }
    });
    let env = RunEnv {
        now,
        clock: pool.clock(),
        counters: Some(&pool.counters),
        task: Some(task),
        pool: Some(pool),
        on_worker: true,
        handoff: Some(handoff),
    };
    probe!(Run);
    let span = span.unwrap_or_else(tracing::Span::none);
    let report = {
        let entered = crate::user::traced(|| span.enter());
        let report = task.run(&env);
        crate::user::traced(move || drop(entered));
        report
    };
    // An async run's hand-off (an empty report) records its own (`async_run_end`).
    #[cfg(feature = "metrics")]
    if report.ran {
        record_run_time(pool, index, task, &report, now);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = index;
    crate::user::traced(move || drop(span));
    report
}

/// What the pool keeps of a run that was due at `deadline` and taken at `now`: its
/// lateness, and the counters of a late start, a pause and a skip; the pool's events about
/// the run, if any, are [`run_events`]'s.
// Always: on a closure's path it is the worker's own accounting, inlined as it was before
// the async paths (which call it too, from their cold functions) existed.
#[inline(always)]
pub(super) fn account(
    pool: &Arc<Pool>,
    index: usize,
    task: &TaskRef,
    report: &RunReport,
    now: clock::Ticks,
    deadline: clock::Ticks,
    lateness: std::time::Duration,
) {
    let mut late_line = None;
    if report.ran {
        pool.lateness.record(index, now.saturating_sub(deadline));
        if lateness > pool.config.late_threshold {
            stats::bump(&pool.counters.late);
            // At most one line a second; `suppressed`: the late starts since the last line.
            let sample = || LateStart {
                id: task.header().id(),
                task_name: task.name().map(Box::from),
                lateness_us: lateness.as_micros() as u64,
            };
            // The take's reading stands for the time (on the real clock: no second read).
            late_line = pool
                .late_log
                .admit_at(pool.clock().real_instant_of(now), sample);
        }
    }
    if report.paused {
        stats::bump(&pool.counters.paused);
    }
    if report.skipped {
        stats::bump(&pool.counters.skipped);
    }
    if late_line.is_some() || report.paused || report.skipped || report.panic.is_some() {
        run_events(pool, task, report, late_line, lateness);
    }
}

/// The pool's events about a run (started late, skipped, panicked), written outside the
/// run's span, so each names its task; each in its own containment (U2): a subscriber that
/// panics at one costs that line. `late_line`: the late starts suppressed since the last
/// such line, if this run writes one.
#[cold]
fn run_events(
    pool: &Pool,
    task: &TaskRef,
    report: &RunReport,
    late_line: Option<u64>,
    lateness: std::time::Duration,
) {
    let (pool_name, id, task_name) = (pool.name(), task.header().id(), task.name());
    if let Some(suppressed) = late_line {
        crate::user::traced(|| {
            tracing::warn!(
                target: "schedpool",
                pool = pool_name,
                id,
                task_name,
                lateness_us = lateness.as_micros() as u64,
                suppressed,
                occurrences = suppressed + 1,
                "task started late"
            )
        });
    }
    if report.paused {
        crate::user::traced(
            || tracing::debug!(target: "schedpool", pool = pool_name, id, task_name, "periodic run skipped (paused)"),
        );
    }
    if report.skipped {
        crate::user::traced(
            || tracing::debug!(target: "schedpool", pool = pool_name, id, task_name, "periodic run skipped (max_lateness)"),
        );
    }
    if let Some(msg) = &report.panic {
        crate::user::traced(
            || tracing::error!(target: "schedpool", pool = pool_name, id, task_name, panic = %msg, "task panicked"),
        );
    }
}

/// Linux lets a timed sleep end up to the thread's "timer slack" late (50 µs by default)
/// so the kernel can batch wake-ups. A leader sleeping until a deadline wants the deadline:
/// workers ask for 1 ns of slack. (`rustix` wraps `prctl(PR_SET_TIMERSLACK)` without
/// `unsafe` in this crate.) Elsewhere this does nothing.
fn reduce_timer_slack(pool: &str) {
    #[cfg(target_os = "linux")]
    if let Err(err) = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1)) {
        crate::user::traced(
            || tracing::debug!(target: "schedpool", pool, error = %err, "could not reduce the timer slack"),
        );
    }
    #[cfg(not(target_os = "linux"))]
    let _ = pool;
}

/// Runs a thread hook; a panic is caught and traced, and the pool goes on (`Builder`'s
/// hook docs).
fn run_hook(hook: Option<&Hook>, name: &'static str, pool: &str) {
    if let Some(hook) = hook {
        if catch_unwind(AssertUnwindSafe(|| hook())).is_err() {
            crate::user::traced(
                || tracing::error!(target: "schedpool", pool, hook = name, "thread hook panicked"),
            );
        }
    }
}

/// The worker lifecycle: spawn, get-task (with keep-alive), exit; and `wait_idle`, which
/// waits for the workers to go idle.
impl Pool {
    pub(crate) fn wait_idle(&self, until: Option<Instant>) -> bool {
        if is_worker_of(self) {
            return false;
        }
        self.queue.wait_idle(until)
    }

    pub(crate) fn set_core_pool_size(self: &Arc<Self>, n: usize) {
        let old = self.core_pool_size.swap(n, Ordering::Relaxed);
        if n < old {
            // Relaxed: `wake_all` takes the coordinator lock the waiters hold (`epoch`).
            self.epoch.fetch_add(1, Ordering::Relaxed); // surplus idle workers re-check
            self.queue.wake_all();
            return;
        }
        // Java: start threads for queued tasks, at most one per new core slot.
        let wanted = (n - old).min(self.queue.len());
        let mut spawns = Vec::new();
        while spawns.len() < wanted {
            match self
                .control
                .reserve_if(|c| c.is_running() && c.workers() < n)
            {
                Some(index) => spawns.push(index),
                None => break,
            }
        }
        for index in spawns {
            // Traced by `start_worker`; a missing core thread starts with the next task.
            let _ = self.start_worker(index);
        }
    }

    /// Starts up to `max` missing core threads; returns how many started.
    pub(crate) fn prestart(self: &Arc<Self>, max: usize) -> usize {
        let mut started = 0;
        while started < max {
            let core = self.core_pool_size();
            let Some(index) = self
                .control
                .reserve_if(|c| c.is_running() && c.workers() < core)
            else {
                break;
            };
            if self.start_worker(index).is_err() {
                break;
            }
            started += 1;
        }
        started
    }

    /// Starts the thread for a worker reservation; on failure releases the reservation and
    /// returns the error.
    pub(super) fn start_worker(self: &Arc<Self>, index: usize) -> std::io::Result<()> {
        let mut builder = crate::sync::thread::Builder::new()
            .name(format!("{}{}", self.config.thread_name_prefix, index));
        if let Some(size) = self.config.thread_stack_size {
            builder = builder.stack_size(size);
        }
        let pool = self.clone();
        match builder.spawn(move || run(pool, index)) {
            Ok(_) => Ok(()),
            Err(err) => {
                crate::user::traced(
                    || tracing::error!(target: "schedpool", pool = self.name(), worker = index, error = %err, "could not start a worker thread"),
                );
                if self.control.unreserve() {
                    self.log_terminated();
                }
                Err(err)
            }
        }
    }

    /// The worker's next task (Java: `getTask`), with the worker's bookkeeping: `finished`
    /// says the caller just ran a task (its take, Q4), `requeue` carries a periodic task's next run
    /// (re-queued into its home shard first, and only then taken out of the worker's
    /// `slot`: RN1 in `running.rs`). Returns `None` when the worker must exit, having
    /// released its reservation under every shard's lock (E1).
    pub(crate) fn next_task(
        &self,
        finished: bool,
        requeue: Option<(TaskRef, Ticks)>,
        slot: &RunSlot,
    ) -> Option<(Entry, Ticks)> {
        self.after_run(requeue, slot);
        if finished {
            self.queue.finished(); // Q4; wakes `wait_idle` if the pool went idle
        }
        let mut timed_out = false;
        loop {
            let c = self.control.load();
            if !c.is_running() {
                // E1, E3: whether the queue is drained is decided under every shard's
                // lock, and the slot released there. (The run state never goes back.)
                let all = self.queue.lock_all();
                if c.is_drained(all.len()) {
                    let released = self.control.release_worker_if(|_| true);
                    debug_assert!(released, "WK1: a worker holds its reservation until here");
                    return None;
                }
            }
            // Java: a worker above the core size (with core 0: the single one) is surplus. A
            // last worker with tasks queued cannot exit (E1), so it waits for them untimed
            // rather than polling every `keep_alive`.
            let surplus =
                self.config.allow_core_thread_timeout || c.workers() > self.core_pool_size();
            let timed = surplus && (c.workers() > 1 || self.queue.is_empty_hint());
            if timed && timed_out && self.release_if_surplus() {
                return None;
            }
            // Relaxed: see `Pool::epoch`.
            let epoch = self.epoch.load(Ordering::Relaxed);
            let timeout = if timed {
                clock::timeout_at(self.config.keep_alive)
            } else {
                None
            };
            let taken = self.queue.take_with(
                timeout,
                |empty| {
                    self.control.load().is_drained(usize::from(!empty))
                        || self.epoch.load(Ordering::Relaxed) != epoch
                        || (surplus && !timed && empty) // may time out now: re-decide
                },
                // RN1: in the slot from the critical section that pops it.
                |entry, now| slot.enter(&entry.task, now, entry.deadline),
            );
            match taken {
                Take::Item(entry, now) => {
                    wake_if_drained(self); // E3
                    return Some((entry, now));
                }
                Take::TimedOut => timed_out = true,
                // Re-decide (a drained queue, a new core size, a last worker that may time
                // out now). As Java's interrupted `poll`, a stop is not a timeout: a
                // worker that became surplus waits a whole fresh `keep_alive` before it
                // exits, whatever part of one it had waited.
                Take::Stopped => timed_out = false,
            }
        }
    }

    /// What follows a run on its worker: a periodic task's re-queue into its home shard,
    /// and only then its leaving the worker's `slot` (RN1 in `running.rs`). Always inlined:
    /// the worker's own path, as before the async paths shared it.
    #[inline(always)]
    fn after_run(&self, requeue: Option<(TaskRef, Ticks)>, slot: &RunSlot) {
        if let Some((task, next)) = requeue {
            let mut q = self.queue.lock(task.header().home());
            let requeued = self.requeue_locked(&mut q, task, next);
            drop(q);
            // RN1: out of the slot once re-queued (never the copy's last holder), and
            // before a refused or dropped task loses the worker's reference.
            drop_quietly(slot.leave());
            match requeued {
                Requeued::Queued => {}
                // Rare (after shutdown): complete its future without the lock.
                Requeued::Refused(task) => task.finish_cancelled(),
                // U1: maybe the last reference, dropped unlocked.
                Requeued::Dropped(task) => drop_quietly(task),
            }
        }
    }

    /// A model's worker step (`pool/loom.rs`, whose thread plays the pool's one worker):
    /// takes one due entry, if any, and runs it as the worker's loop does (`run_task`,
    /// then `after_run`); `false` if nothing was due.
    #[cfg(all(test, loom))]
    pub(crate) fn model_step(self: &Arc<Self>, host: &Arc<dyn Host>, slot: &RunSlot) -> bool {
        let now = self.clock().now();
        let entry = {
            let mut all = self.queue.lock_all();
            let entry = all.shards().find_map(|g| g.poll());
            if let Some(e) = &entry {
                slot.enter(&e.task, now, e.deadline); // RN1: in the popping critical section
            }
            entry
        };
        let Some(entry) = entry else {
            return false;
        };
        let handoff = Handoff::new(None);
        let requeue = run_task(self, (0, host, &handoff), slot, entry, now);
        self.after_run(requeue, slot);
        self.queue.finished();
        true
    }

    /// E1: a surplus worker that timed out gives up its reservation if another worker remains or
    /// nothing is queued; `true` if it did. Decided under every shard's lock, against the
    /// value the exchange replaces, so a submission (which reserves in its shard's
    /// critical section) either sees the smaller count (and reserves a worker) or was seen
    /// here (the queue is not empty).
    ///
    /// Whether the worker is still surplus is decided against that same value: two
    /// surplus workers timing out together must not both leave when only one is above the
    /// core size.
    pub(crate) fn release_if_surplus(&self) -> bool {
        let all = self.queue.lock_all();
        let empty = all.is_empty();
        let core = self.core_pool_size();
        let timeout_core = self.config.allow_core_thread_timeout;
        self.control.release_worker_if(|c| {
            (timeout_core || c.workers() > core) && (c.workers() > 1 || empty)
        })
    }

    /// A worker thread is finishing (its stop hook has run). `released` says whether it
    /// already gave up its worker slot in `next_task`; `was_active` whether it dies in the
    /// middle of a task (only if the crate itself panicked: user code is contained).
    pub(crate) fn worker_exited(self: &Arc<Self>, released: bool, was_active: bool) {
        if was_active {
            self.queue.finished();
        }
        let exit = {
            let all = self.queue.lock_all();
            // E1 even if a worker died abnormally: a queued task always has a worker. The
            // replacement is reserved in the exchange that releases this thread, decided
            // against the queue as these critical sections see it.
            let empty = all.is_empty();
            let exit = self.control.thread_exit(released, |after| {
                after.workers() == 0 && !empty && after.run_state() != RunState::Stop
            });
            debug_assert!(
                !exit.terminated || empty || self.control.load().run_state() == RunState::Stop,
                "E1: termination leaves no queued task behind"
            );
            exit
        };
        let (replacement, terminated) = (exit.replacement, exit.terminated);
        if let Some(index) = replacement {
            crate::user::traced(
                || tracing::error!(target: "schedpool", pool = self.name(), "a worker died unexpectedly; starting another"),
            );
            let _ = self.start_worker(index); // traced by `start_worker`
        }
        if terminated {
            self.log_terminated();
        }
    }
}
