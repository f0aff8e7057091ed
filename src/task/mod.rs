//! `ScheduledFutureTask`: what a task is to the queue, the workers and its futures.
//!
//! # Design
//! A task is one allocation that starts with its [`Header`] (state word, deadline, queue
//! position, reference count, vtable). The queue, the workers and the handles hold it
//! through a [`TaskRef`], a counted thin pointer (`raw.rs`: tokio's `RawTask` shape); a
//! [`ScheduledFuture`](crate::ScheduledFuture) holds a [`TypedTask`], which also knows the
//! output type. A one-shot keeps its closure, then its outcome, in one slot guarded by
//! flags in its state word (`raw.rs`, R4); its waiters wait in a table outside it
//! (`waiting.rs`). A periodic task keeps the mutex-guarded stage of `completion.rs`, which
//! its runs put the closure back into.
//!
//! - `state.rs`: the state machine (diagram there) and its flags, one `AtomicU8`.
//! - `raw.rs`: the one `unsafe` module: [`TaskRef`] and a one-shot's slot.
//! - `waiting.rs`: the waiter table of one-shots.
//! - `completion.rs`: a periodic task's stage and its waiters.
//! - `once.rs`: [`OnceTask`], a one-shot (Java: `ScheduledFutureTask` with `period == 0`).
//! - `periodic.rs`: [`PeriodicTask`], run with `run_and_reset` semantics and re-queued by
//!   the worker; its next deadline comes from its `Schedule` (`schedule.rs`).
//!
//! # Invariants
//! - T1: at most one thread is between a successful `start` and the end of that run. (An
//!   interrupt moves a running task to CANCELLED; its runner is still the only thread in
//!   the run, and its own terminal exchange then fails.)
//! - T2: exactly one transition into a terminal state succeeds; its author, and only it,
//!   completes the task for its futures: a one-shot's runner stores the outcome before
//!   that transition (`raw.rs`, R4) and wakes the waiters after it (`waiting.rs`, W1); a
//!   periodic task's author completes its [`Completion`].
//! - T3: the closure lives in the task while SCHEDULED. The thread that moved the task to
//!   RUNNING takes it out for the run. A one-shot's canceller takes it after its own
//!   exchange (R4: the `CLOSURE` flag is cleared once). A periodic run puts it back only
//!   if its RUNNING -> SCHEDULED exchange succeeds, which it attempts while holding the
//!   stage's lock, and a periodic canceller takes whatever is in the stage in the
//!   critical section that stores `Cancelled`. So exactly one thread drops the closure,
//!   and a cancelled task never keeps it.
//! - T4: `Header::position`, `Header::when` while the task is queued (its sequence
//!   number), and a periodic task's `rescheduled` cell are read and written only under
//!   the lock of the task's home shard (`Header::home`, `queue/sharded.rs`);
//!   their types (`queue::Position`, `queue::LockedCell`) make that a fact: only the
//!   shard's store, through its guard, reaches their contents (I6 in `queue/mod.rs`).
//!
//! # Ordering
//! The state word's orderings are in `state.rs`. `when` (the deadline out of the queue,
//! the sequence number in it) is `Relaxed`: out of the queue it is written by whoever
//! owns the task's schedule at that moment (the submitter before publishing it, the
//! running worker), and in the queue only under the home shard's lock, which also hands
//! the deadline back when the node leaves; its readers that matter (the worker that runs
//! the task: the next deadline, `max_lateness`, `TaskContext::deadline`; a future's
//! `deadline`, which reads under that lock) got the task or the value through the home
//! shard's lock, which orders the store before their load.
//! `position` and `rescheduled` are ordered by the home shard's lock (T4).
//!
//! # Memory
//! A pending one-shot with a closure and output of at most 8 bytes each is a 40-byte
//! block, a 48-byte malloc chunk: the 32-byte header and the 8-byte slot; its queue node
//! is 16 bytes (`pool/entry.rs`, `Entry`)
//! (`docs/DESIGN.md`, "Memory"; a unit test in `raw.rs` pins the sizes). The header holds
//! only what every task needs; what only periodic tasks need (`rescheduled`, the stage's
//! mutex) lives in [`PeriodicTask`], and a task's number for logs fits in the bytes the
//! header's alignment would otherwise leave as padding.

mod completion;
mod once;
mod periodic;
mod raw;
pub(crate) mod sleepers;
pub(crate) mod state;
mod waiting;

#[cfg(all(test, loom))]
mod loom;

use crate::sync::{Arc, Ordering};
use std::fmt;

use crate::clock::{Clock, Ticks};
use crate::queue::{LockedCell, Position};
use crate::schedule::Schedule;
use crate::stats::{Counters, LastRun};
use crate::sync::{AtomicU64, AtomicU8};

pub(crate) use completion::{Completion, Outcome};
pub(crate) use once::OnceTask;
pub(crate) use periodic::PeriodicTask;
pub(crate) use raw::{Task, TaskRef, TypedTask};
use state::{Start, State, TaskState};

/// The part of a task every holder can see, whatever its output type.
pub(crate) struct Header {
    /// See `state.rs` (T1, T2).
    state: TaskState,
    /// The executor queue's shard the task lives in (`queue/sharded.rs`), [`NO_HOME`]
    /// before its first queueing: set then, under that shard's lock, and never changed, so
    /// `position` and `rescheduled` always belong to one lock (T4). Bit [`PERIODIC`] says
    /// the schedule is not a one-shot (a running periodic task is cancellable); it is set
    /// at construction and never changes. `Relaxed`: whoever reads the home got the task
    /// through that queueing (the submitter's future, a worker's take under the shard's
    /// lock), which orders the store before the load.
    home: AtomicU8,
    /// The task's number for logs and spans ([`Header::id`]): the high 16 and the low 32
    /// of its 48 bits, written at construction, before the task is shared.
    id_hi: u16,
    id_lo: u32,
    /// Out of the queue, the task's deadline: the current run's, then the next one.
    /// While the task is queued its heap node holds the deadline, and this word the
    /// node's FIFO sequence number (`Header::seq`): the queue writes the number before
    /// the push and hands the deadline back when the node leaves (`Tracked::left`), both
    /// under the home shard's lock (T4), so a 16-byte node needs no room for it. Written
    /// out of the queue by the thread that owns the task's schedule at that moment (the
    /// submitter, the running worker); `Relaxed` (module notes).
    when: AtomicU64,
    /// The task's place in the queue while it is queued (T4).
    pub(crate) position: Position,
    /// The number of [`TaskRef`]s to the task (R3, `raw.rs`).
    refs: std::sync::atomic::AtomicU32,
    /// The task's type as its [`TaskRef`]s see it (R2, `raw.rs`).
    vtable: &'static raw::VTable,
}

/// "Not queued yet" in `Header::home`'s low bits (shards number at most
/// `queue::sharded::MAX_SHARDS`).
const NO_HOME: u8 = 0x7f;

/// `Header::home`'s bit for a periodic task.
const PERIODIC: u8 = 0x80;

/// Task numbers: each thread hands out numbers from an aligned block of `ID_BLOCK` that
/// it reserves from one process-wide counter, so a submission costs a thread-local
/// increment and no shared write. Numbers start at 1, and none repeats in the process's
/// first 2^48 tasks (eight years at a million tasks a second); after that they wrap.
#[inline]
fn next_id() -> u64 {
    const ID_BLOCK: u64 = 1024;
    // std's atomic in every build: a static outside any model. Relaxed: uniqueness only
    // (one RMW's modification order).
    static NEXT_BLOCK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    thread_local! {
        /// This thread's next number; at a multiple of `ID_BLOCK` its block is used up.
        static NEXT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
    #[cold]
    fn new_block() -> u64 {
        // Block 0 starts at 1: no task is number 0.
        NEXT_BLOCK
            .fetch_add(ID_BLOCK, std::sync::atomic::Ordering::Relaxed)
            .max(1)
    }
    NEXT.with(|n| {
        let mut id = n.get();
        if id % ID_BLOCK == 0 {
            id = new_block();
        }
        n.set(id + 1);
        id
    })
}

/// "No deadline" in a periodic task's `rescheduled` cell.
pub(crate) const NO_DEADLINE: u64 = u64::MAX;

impl Header {
    /// A one-shot's header: SCHEDULED, with its closure in its slot (`raw.rs`, R4).
    #[inline]
    pub(crate) fn new_once(deadline: Ticks) -> Self {
        Header {
            state: TaskState::new_once(),
            ..Header::new(false, deadline)
        }
    }

    /// The task's address: its key in the waiter table (`waiting.rs`).
    #[inline]
    pub(crate) fn key(&self) -> usize {
        self as *const Header as usize
    }

    #[inline]
    pub(crate) fn new(periodic: bool, deadline: Ticks) -> Self {
        let id = next_id();
        Header {
            state: TaskState::new(),
            home: AtomicU8::new(if periodic {
                PERIODIC | NO_HOME
            } else {
                NO_HOME
            }),
            id_hi: (id >> 32) as u16,
            id_lo: id as u32,
            when: AtomicU64::new(deadline),
            position: Position::new(),
            refs: std::sync::atomic::AtomicU32::new(1),
            vtable: &raw::UNBOXED,
        }
    }

    /// The task's number for logs, spans and `Debug`: unique in the process ([`next_id`]),
    /// counted from 1, fixed for the task's life (a periodic task keeps it across runs).
    #[inline]
    pub(crate) fn id(&self) -> u64 {
        u64::from(self.id_hi) << 32 | u64::from(self.id_lo)
    }

    /// Fixes the task's home shard at its first queueing (later calls keep the first).
    #[inline]
    pub(crate) fn settle(&self, home: usize) {
        let bits = self.home.load(Ordering::Relaxed);
        if bits & NO_HOME == NO_HOME {
            debug_assert!(
                home < usize::from(NO_HOME),
                "queue::sharded::MAX_SHARDS fits below NO_HOME"
            );
            // Only the first queueing writes, under its shard's lock; the kind bit is kept.
            self.home
                .store(bits & PERIODIC | home as u8, Ordering::Relaxed);
        }
    }

    /// The task's home shard (0 before its first queueing, when no shard holds it).
    #[inline]
    pub(crate) fn home(&self) -> usize {
        match self.home.load(Ordering::Relaxed) & NO_HOME {
            NO_HOME => 0,
            h => usize::from(h),
        }
    }

    /// The current state (`state.rs`).
    #[inline]
    pub(crate) fn state(&self) -> State {
        self.state.load()
    }

    #[inline]
    pub(crate) fn is_periodic(&self) -> bool {
        self.home.load(Ordering::Relaxed) & PERIODIC != 0
    }

    /// The deadline of a task out of the queue (`when`); a queued task's is in
    /// its node (`Shared::deadline_of` finds either).
    #[inline]
    pub(crate) fn deadline(&self) -> Ticks {
        self.when.load(Ordering::Relaxed)
    }

    /// Sets the deadline of a task out of the queue.
    #[inline]
    pub(crate) fn set_deadline(&self, d: Ticks) {
        self.when.store(d, Ordering::Relaxed);
    }

    /// A queued task's FIFO sequence number (`when`): under the home shard's
    /// lock (T4).
    #[inline]
    pub(crate) fn seq(&self) -> u64 {
        self.when.load(Ordering::Relaxed)
    }

    /// Sets the sequence number of a task about to be queued, or re-keyed in the queue,
    /// under its home shard's lock (T4).
    #[inline]
    pub(crate) fn set_seq(&self, seq: u64) {
        self.when.store(seq, Ordering::Relaxed);
    }

    /// SCHEDULED -> RUNNING (T1); `NotScheduled` if the task is not SCHEDULED (cancelled).
    #[inline]
    pub(crate) fn start(&self) -> Start {
        self.state.start()
    }

    /// The state word's edges for the task's runner (`state.rs`).
    #[inline]
    pub(crate) fn edges(&self) -> &TaskState {
        &self.state
    }

    /// -> CANCELLED from SCHEDULED, or from RUNNING for a periodic task. `true` if this
    /// call made the transition (T2: the caller must then run `Job::finish_cancelled`).
    #[must_use]
    pub(crate) fn cancel(&self) -> bool {
        self.state.cancel(self.is_periodic())
    }

    /// -> CANCELLED from SCHEDULED or RUNNING, for any kind (`state.rs`: an interrupt).
    /// `true` if this call made the transition (T2, as for [`cancel`](Self::cancel)).
    #[must_use]
    pub(crate) fn interrupt(&self) -> bool {
        self.state.interrupt()
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Header")
            .field("id", &self.id())
            .field("periodic", &self.is_periodic())
            .field("state", &self.state().name())
            .finish()
    }
}

/// What a worker learns from one run.
#[derive(Debug)]
pub(crate) struct RunReport {
    /// The closure ran (false: the task was cancelled before it could start, or skipped).
    pub(crate) ran: bool,
    /// The run was skipped for `max_lateness`.
    pub(crate) skipped: bool,
    /// The run panicked; the message, for tracing.
    pub(crate) panic: Option<String>,
    /// Periodic and still SCHEDULED: re-enqueue at this deadline.
    pub(crate) next: Option<Ticks>,
}

impl RunReport {
    const NOT_RUN: RunReport = RunReport {
        ran: false,
        skipped: false,
        panic: None,
        next: None,
    };
}

/// What a run gets from whoever runs it.
pub(crate) struct RunEnv<'a> {
    /// When the run was taken (the worker's take, or the clock's reading for a run on the
    /// caller's thread).
    pub(crate) now: Ticks,
    pub(crate) clock: &'a Clock,
    /// The pool's counters, counted before the future completes (so a caller that saw the
    /// outcome sees the run counted); `None` where runs are not counted.
    pub(crate) counters: Option<&'a Counters>,
    /// The task as the queue holds it (for a task context's cancel handle); `None` in
    /// unit tests that run a bare task.
    pub(crate) job: Option<&'a TaskRef>,
    /// The pool that runs it, as far as a run may see it ([`Host`]: the task context,
    /// `context.rs`, and the exclusive runs, `cluster/run.rs`, use it).
    pub(crate) pool: Option<&'a dyn Host>,
    /// The run is on one of the pool's workers (not a `CallerRuns` run or a
    /// `PendingTask::run` on the caller's thread): `shutdown_now` asks it to stop.
    pub(crate) on_worker: bool,
}

/// What a run, and a task's handles, may ask of the pool that holds it: the seam between
/// the task layer and the pool (tokio's `task::Schedule`), implemented by the pool's
/// `Arc<Shared>` and its `Stripe`s (`pool/host.rs`). The closure adaptors (`context.rs`)
/// and the handles (`future.rs`: a future holds its pool as an `Arc<dyn Host>`, one of
/// the stripes) reach the pool only through it.
pub(crate) trait Host: Send + Sync {
    /// The pool's name, for traces.
    fn name(&self) -> &str;
    /// `shutdown_now` has begun: a run on a worker is asked to stop.
    fn is_stopping(&self) -> bool;
    /// The runs asleep in `TaskContext::sleep` (S1, `sleepers.rs`).
    fn sleepers(&self) -> &sleepers::Sleepers;
    /// A handle that cancels, interrupts or reschedules `job` through this pool.
    fn cancel_handle(&self, job: &TaskRef) -> crate::CancelHandle;
    /// The pool's clock.
    fn clock(&self) -> &Clock;
    /// Cancels `job` (`ScheduledFuture::cancel`); with `interrupt`, a running one-shot
    /// too (`ScheduledFuture::interrupt`). `true` if this call cancelled it.
    fn cancel(&self, job: &dyn Job, interrupt: bool) -> bool;
    /// Moves `job`'s next run to `at` (`ScheduledFuture::reschedule`); `now`, a reading
    /// of the pool's clock the caller made for `at`, stamps the move's sequence number
    /// (`None`: the queue reads the clock).
    fn reschedule(&self, job: &dyn Job, at: Ticks, now: Option<Ticks>) -> bool;
    /// `job`'s deadline, in its queue node or its header (T4).
    fn deadline_of(&self, job: &dyn Job) -> Ticks;
    /// Runs `job` once on this thread and then ends it (`PendingTask::run`).
    fn run_here(&self, job: &TaskRef);
}

/// What a task's closure is called with: the environment, and this run's facts.
pub(crate) struct RunCx<'a> {
    pub(crate) env: &'a RunEnv<'a>,
    pub(crate) header: &'a Header,
    /// This run's deadline.
    pub(crate) deadline: Ticks,
    /// Runs so far, this one included.
    pub(crate) runs: u64,
    /// The task's name (`Periodic::name`), for the closure's own logs.
    pub(crate) task_name: Option<&'a str>,
    /// The cluster lease this run holds (an exclusive task, `cluster/run.rs`).
    pub(crate) lease: Option<&'a crate::cluster::Lease>,
}

/// A one-shot's closure as its task calls it: a plain closure ([`Plain`]), or one that
/// takes a task context (`context.rs`).
pub(crate) trait OnceBody<T>: Send + 'static {
    fn call(self, cx: &RunCx<'_>) -> T;
}

/// A periodic task's closure as its task calls it; it says what comes next.
pub(crate) trait PeriodicBody: Send + 'static {
    /// What the task's future yields when the task ends by itself (its rule or trigger
    /// ended, `max_runs`, or the closure said stop): `()`, or a fallible task's verdict.
    type Output: Send + 'static;

    fn call(&mut self, cx: &RunCx<'_>) -> Step;

    /// The output, once the task ends by itself.
    fn output(&mut self) -> Self::Output;

    /// `true` if the last call failed (a fallible closure's error).
    fn last_failed(&self) -> bool {
        false
    }
}

/// What a periodic run says comes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The schedule's rule decides.
    Continue,
    /// The next run is due at this time.
    At(Ticks),
    /// No more runs: the future completes with `Ok(())`.
    Stop,
    /// The closure declined this run without running (its cluster lock is held elsewhere
    /// or unreachable, `cluster/run.rs`): not counted as a run (`runs`, `max_runs`, the
    /// completed count); the schedule goes on as after a `max_lateness` skip.
    Skip(Declined),
}

/// Why a closure declined a run ([`Step::Skip`]), as `TaskInfo::last_run` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Declined {
    /// Another node holds the cluster lock.
    LockHeld,
    /// The cluster lock's store could not be asked.
    LockFailed,
}

/// A closure that takes no context.
pub(crate) struct Plain<F>(pub(crate) F);

impl<F: FnOnce() -> T + Send + 'static, T> OnceBody<T> for Plain<F> {
    #[inline]
    fn call(self, _: &RunCx<'_>) -> T {
        (self.0)()
    }
}

impl<F: FnMut() + Send + 'static> PeriodicBody for Plain<F> {
    type Output = ();

    #[inline]
    fn call(&mut self, _: &RunCx<'_>) -> Step {
        (self.0)();
        Step::Continue
    }

    fn output(&mut self) {}
}

/// A one-shot's name (`ScheduledThreadPoolExecutor::named`), kept by its task for spans,
/// panic logs and snapshots: `()` for an unnamed one-shot, which so pays nothing for it.
pub(crate) trait Label: Send + Sync + 'static {
    fn get(&self) -> Option<&str>;
}

impl Label for () {
    #[inline]
    fn get(&self) -> Option<&str> {
        None
    }
}

impl Label for Arc<str> {
    #[inline]
    fn get(&self) -> Option<&str> {
        Some(self)
    }
}

/// A one-shot's closure submitted inside a span: the task's `task` span is linked to
/// that span (`follows_from`) when it runs (a periodic task's link is in
/// `context.rs`'s `Guarded`, with what else its spec adds around a run). It is chosen at submission only when such a link can be
/// recorded (`submitter_span`), so a task submitted without tracing pays nothing for it.
///
/// The submitter's span is held (kept open) until the closure is dropped: after a
/// one-shot's run or at its cancel, when a periodic task ends. A span id alone could be
/// reused by the subscriber once the span closed, and the link would then point at
/// another span.
pub(crate) struct Linked<B> {
    pub(crate) body: B,
    pub(crate) parent: tracing::Span,
}

/// Links the span this run is in (the worker's `task` span) to `parent`, the span the
/// task was submitted in.
#[inline]
pub(crate) fn link_to(parent: &tracing::Span) {
    let current = tracing::Span::current();
    if current
        .metadata()
        .is_some_and(|m| m.target() == "schedpool" && m.name() == "task")
    {
        current.follows_from(parent);
    }
}

impl<B: OnceBody<T>, T> OnceBody<T> for Linked<B> {
    #[inline]
    fn call(self, cx: &RunCx<'_>) -> T {
        link_to(&self.parent);
        self.body.call(cx)
    }
}

/// The span a task submitted now should be linked to: the caller's current span, if the
/// task's `task` span could be recorded at all (`None` costs a level check when tracing
/// is off). Always inlined: the check is a few instructions, a call costs more.
#[inline(always)]
pub(crate) fn submitter_span() -> Option<tracing::Span> {
    if !tracing::span_enabled!(target: "schedpool", tracing::Level::TRACE) {
        return None;
    }
    let current = tracing::Span::current();
    (!current.is_none()).then_some(current)
}

/// A task as the queue and the workers see it.
pub(crate) trait Job: Send + Sync {
    fn header(&self) -> &Header;

    /// A periodic task's `rescheduled` cell (T4); `None` for a one-shot, which is never
    /// re-queued.
    fn rescheduled(&self) -> Option<&LockedCell> {
        None
    }

    /// When the task runs (the `kind` of its `task` span).
    fn schedule(&self) -> &Schedule;

    /// The task's name, if it was given one (`Periodic::name`, `named`).
    fn name(&self) -> Option<&str> {
        None
    }

    /// Runs so far and how the last one went, for a snapshot (`TaskInfo`); takes the
    /// stage's lock, so never under a shard's lock.
    fn record(&self) -> (u64, Option<LastRun>) {
        (0, None)
    }

    /// Runs the task once on a worker (Java: `run`, or `runAndReset` for a periodic task),
    /// in the environment `env` (its `now` is the time the worker took it).
    fn run(&self, env: &RunEnv<'_>) -> RunReport;

    /// Runs the task once on this thread for a `PendingTask` or `CallerRuns` (`env.now`:
    /// the clock's reading now): a one-shot completes; a periodic task runs once and then,
    /// if `then_cancel`, ends cancelled. Returns the report (`next` is set for a periodic
    /// task that may continue).
    fn run_now(&self, env: &RunEnv<'_>, then_cancel: bool) -> RunReport;

    /// After `Header::cancel` returned true: drops the closure (if this thread holds the
    /// last copy, T3) and completes the future with `Cancelled` (T2). Never under a lock.
    fn finish_cancelled(&self);
}

/// A task whose output type is known: what a `ScheduledFuture<T>` holds.
pub(crate) trait TypedJob<T>: Job {
    /// Where the outcome is delivered (a one-shot itself, `once.rs`; a periodic task's
    /// `Completion`).
    fn outcome(&self) -> &dyn Outcome<T>;
}

/// Helpers the task modules' unit tests share.
#[cfg(all(test, not(loom)))]
pub(crate) mod testing {
    use crate::clock::Clock;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A fresh manual clock.
    pub(crate) fn clock() -> Clock {
        Clock::Manual(crate::ManualClock::new())
    }

    /// The environment of a bare task's run at `now` (no pool, no counters).
    pub(crate) fn env(clock: &Clock, now: crate::clock::Ticks) -> super::RunEnv<'_> {
        super::RunEnv {
            now,
            clock,
            counters: None,
            job: None,
            pool: None,
            on_worker: false,
        }
    }

    /// Counts drops of the value it is captured in.
    pub(crate) struct DropCount(pub(crate) Arc<AtomicUsize>);

    impl Drop for DropCount {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Counts a finished run (and its panic) before its outcome is published.
fn count_run(counters: Option<&Counters>, panicked: bool) {
    if let Some(c) = counters {
        crate::stats::bump(&c.completed);
        if panicked {
            crate::stats::bump(&c.panicked);
        }
    }
}

/// Drops a user value, its destructor's panic contained (the door, `user.rs`).
pub(crate) use crate::user::drop_quietly;

/// How many registrations the waiter table holds for the one-shot at `key` (the loom
/// models; W2 in `waiting.rs`).
#[cfg(all(test, loom))]
pub(crate) fn waiter_count(key: usize) -> usize {
    waiting::count(key)
}

#[cfg(all(test, not(loom)))]
mod header_tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_across_threads_and_blocks() {
        let per_thread = 3000; // more than one block each
        let ids: Vec<Vec<u64>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        (0..per_thread)
                            .map(|_| Header::new(false, 0).id())
                            .collect()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let all: HashSet<u64> = ids.iter().flatten().copied().collect();
        assert_eq!(all.len(), 4 * per_thread);
        assert!(!all.contains(&0), "numbers start at 1");
        for mine in &ids {
            assert!(mine.windows(2).all(|w| w[0] < w[1]), "one thread's grow");
        }
    }

    #[test]
    fn kind_and_home_share_a_byte_without_mixing() {
        let h = Header::new(true, 0);
        assert!(h.is_periodic());
        assert_eq!(h.home(), 0);
        h.settle(63);
        h.settle(5); // the first queueing's home stays
        assert_eq!(h.home(), 63);
        assert!(h.is_periodic());
        let once = Header::new(false, 0);
        once.settle(0);
        assert_eq!(once.home(), 0);
        assert!(!once.is_periodic());
        assert!(once.cancel(), "SCHEDULED -> CANCELLED");
    }
}
