//! Stress on the real clock, with exact accounting.
//!
//! Each round builds a pool with a random core size, random run-after-shutdown and
//! remove-on-cancel policies and, in a third of the rounds, a small queue bound with a
//! random rejection policy (`Abort`, `CallerRuns` or `Discard`). Several threads then
//! schedule one-shots (`schedule`, `submit`, `execute`), fixed-rate and fixed-delay tasks
//! and periodic tasks with `max_runs` (as plain closures, context closures, named
//! one-shots and exclusive tasks on an in-process cluster lock, each with a lock of its
//! own so that it always gets it), with delays and periods of a few milliseconds,
//! cancel (a third of the time with `interrupt`, which also cancels a running one-shot)
//! and reschedule random tasks, and the main thread resizes the pool; tasks
//! themselves schedule, cancel and reschedule other tasks. At a random moment the pool is
//! shut down: `shutdown`, `shutdown_now` or `close` from the main thread, or `shutdown`,
//! `shutdown_now` or `close` from inside a running task. Submissions go on after it and
//! must be refused with `ScheduleError::Shutdown`. Finally `shutdown_now` hands back what
//! is left (some run on the caller, the rest dropped) and the pool must terminate within
//! 30 s. Before that, with the periodic tasks cancelled, the pool must settle
//! (`wait_idle`): a due task left without a worker would otherwise only show up among the
//! tasks `shutdown_now` hands back. Some rounds let core threads time out after a keep-alive
//! of up to 2 ms, so that workers exit and start all the time.
//!
//! Every closure carries a token that records its runs and its drop, and the thread-local
//! reason for the drop (a `cancel` call, a dropped `PendingTask`, a shutdown policy, a
//! refused submission, or none: after its run). After each round:
//! - every closure was dropped exactly once;
//! - every accepted one-shot either ran exactly once (future `Ok`) or never ran and was
//!   dropped by a cancel, a shutdown policy or a dropped `PendingTask` (future
//!   `Err(Cancelled)`): never both, never neither; a `cancel` that returned true means it
//!   never ran; a refused one never ran and was dropped by the refusing call, unless the
//!   policy ran it on the caller (once) or discarded it (future `Err(Cancelled)`);
//! - no periodic task's runs overlapped, and none started after a successful `cancel`
//!   returned (one already running may finish); its future ends `Err(Cancelled)`, or
//!   `Ok(())` after exactly `max_runs` runs;
//! - every future is done;
//! - `task_count` (queued submissions), `rejected_count` (every refusal, whatever the
//!   policy did with it) and `completed_task_count` (runs on workers only, not
//!   `PendingTask::run` or `CallerRuns`) match the counts kept by the test; the pool has
//!   no thread left.
//!
//! A round that overruns its plan by two minutes is a hang: a watchdog prints the
//! round's settings and ends the process (exit status 3) rather than let it wait forever.
//!
//! Scale: `SCHEDPOOL_STRESS_SECS` (default 2) is the time spent in rounds. With
//! `SCHEDPOOL_STRESS_REPORT=1` the test prints one `stress totals:` line. The soak setting
//! (`scripts/soak.sh`) is ten minutes in release mode:
//!
//! ```text
//! SCHEDPOOL_STRESS_SECS=600 SCHEDPOOL_STRESS_REPORT=1 \
//!     cargo test --release --test stress -- --nocapture
//! ```

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use schedpool::cluster::{Exclusive, LocalLock};
use schedpool::{
    CancelHandle, Next, PendingTask, Periodic, RejectionPolicy, ScheduleError, ScheduledFuture,
    ScheduledThreadPoolExecutor, TaskContext, TaskError,
};

/// Bound for termination and for any future to be done after it.
const TERMINATION_BOUND: Duration = Duration::from_secs(30);
/// A round that takes this much longer than planned is stuck: the watchdog ends the test
/// process with a message instead of letting it hang.
const STUCK_AFTER: Duration = Duration::from_secs(120);
/// Submitting threads per round, besides the main thread.
const SUBMITTERS: usize = 4;
/// Closures per round at most (nested submissions included).
const MAX_TASKS_PER_ROUND: usize = 20_000;
/// Periodic tasks per round at most.
const MAX_PERIODIC_PER_ROUND: usize = 24;

// ---------------------------------------------------------------------------------------
// A small PRNG (xorshift64*), seeded per thread.

struct Rng(u64);

impl Rng {
    fn seeded() -> Self {
        let seed = RandomState::new().hash_one(thread::current().id()) | 1;
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn micros(&mut self, max: u64) -> Duration {
        Duration::from_micros(self.below(max + 1))
    }
}

thread_local! {
    static RNG: std::cell::RefCell<Rng> = std::cell::RefCell::new(Rng::seeded());
    /// Why a closure dropped on this thread right now is being dropped.
    static CAUSE: Cell<u8> = const { Cell::new(cause::NONE) };
    /// A `PendingTask::run` is in progress on this thread.
    static IN_PENDING_RUN: Cell<bool> = const { Cell::new(false) };
    /// The record whose submission is in progress on this thread (`usize::MAX`: none): a
    /// closure that runs inside its own submission ran by `RejectionPolicy::CallerRuns`.
    static SUBMITTING: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn rand_below(n: u64) -> u64 {
    RNG.with(|r| r.borrow_mut().below(n))
}

fn rand_chance(percent: u64) -> bool {
    RNG.with(|r| r.borrow_mut().chance(percent))
}

fn rand_micros(max: u64) -> Duration {
    RNG.with(|r| r.borrow_mut().micros(max))
}

/// Drop causes a token records.
mod cause {
    /// No reason set: the closure ran (or something dropped it unexpectedly).
    pub(super) const NONE: u8 = 0;
    pub(super) const CANCEL: u8 = 1;
    pub(super) const PENDING_DROP: u8 = 2;
    pub(super) const SHUTDOWN: u8 = 3;
    pub(super) const REFUSED: u8 = 4;
    /// Not dropped yet.
    pub(super) const ALIVE: u8 = 255;
}

/// Runs `f` with the drop cause set to `c` on this thread.
fn with_cause<R>(c: u8, f: impl FnOnce() -> R) -> R {
    let previous = CAUSE.with(|x| x.replace(c));
    let r = f();
    CAUSE.with(|x| x.set(previous));
    r
}

// ---------------------------------------------------------------------------------------
// Records and tokens

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Schedule,
    Submit,
    Execute,
    FixedRate,
    FixedDelay,
    /// `schedule_periodic` with `max_runs` of 1 to 3.
    Limited,
}

impl Kind {
    fn is_periodic(self) -> bool {
        matches!(self, Kind::FixedRate | Kind::FixedDelay | Kind::Limited)
    }
}

/// What the test learns about one closure.
#[derive(Debug)]
struct Record {
    id: usize,
    kind: Kind,
    /// 0: not decided yet, 1: accepted, 2: refused.
    verdict: AtomicU8,
    /// Runs started (on a worker or by `PendingTask::run`).
    runs: AtomicU64,
    /// Runs started on a worker.
    worker_runs: AtomicU64,
    /// Runs started inside the record's own submission (`CallerRuns`).
    caller_runs: AtomicU64,
    /// `max_runs` of a `Limited` task.
    max_runs: u64,
    in_run: AtomicBool,
    overlaps: AtomicU64,
    drops: AtomicU64,
    drop_cause: AtomicU8,
    /// A `cancel` (or an `interrupt`) returned true; `runs` at that moment.
    cancelled: AtomicBool,
    runs_at_cancel: AtomicU64,
    /// It was an `interrupt` that returned true: a one-shot may have been running, so it
    /// may have run once and its future still says `Cancelled`.
    interrupted: AtomicBool,
}

impl Record {
    fn new(id: usize, kind: Kind) -> Self {
        Record {
            id,
            kind,
            verdict: AtomicU8::new(0),
            runs: AtomicU64::new(0),
            worker_runs: AtomicU64::new(0),
            caller_runs: AtomicU64::new(0),
            max_runs: 1 + rand_below(3),
            in_run: AtomicBool::new(false),
            overlaps: AtomicU64::new(0),
            drops: AtomicU64::new(0),
            drop_cause: AtomicU8::new(cause::ALIVE),
            cancelled: AtomicBool::new(false),
            runs_at_cancel: AtomicU64::new(0),
            interrupted: AtomicBool::new(false),
        }
    }

    /// Called at the start of every run.
    fn enter(&self) {
        if self.in_run.swap(true, Ordering::SeqCst) {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        self.runs.fetch_add(1, Ordering::SeqCst);
        if SUBMITTING.with(Cell::get) == self.id {
            self.caller_runs.fetch_add(1, Ordering::SeqCst);
        } else if !IN_PENDING_RUN.with(Cell::get) {
            self.worker_runs.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn leave(&self) {
        self.in_run.store(false, Ordering::SeqCst);
    }
}

/// Lives inside a closure; its drop is the closure's drop.
struct Token(Arc<Record>);

impl Drop for Token {
    fn drop(&mut self) {
        let c = CAUSE.with(Cell::get);
        if self.0.drops.fetch_add(1, Ordering::SeqCst) == 0 {
            self.0.drop_cause.store(c, Ordering::SeqCst);
        }
    }
}

/// Everything a round shares between the main thread, the submitters and the tasks.
struct Ctx {
    pool: ScheduledThreadPoolExecutor,
    records: Mutex<Vec<Arc<Record>>>,
    /// Accepted tasks, to cancel and reschedule at random.
    handles: Mutex<Vec<(Arc<Record>, CancelHandle)>>,
    futures: Mutex<Vec<(Arc<Record>, ScheduledFuture<()>)>>,
    periodic: AtomicUsize,
    /// Set by the main thread: the next task to run shuts the pool down from inside
    /// (1: shutdown, 2: shutdown_now, 3: close).
    inside_shutdown: AtomicU8,
    pending_run: AtomicU64,
    pending_dropped: AtomicU64,
    /// `QueueFull` is an expected refusal (a bounded queue with `Abort`).
    queue_full_allowed: bool,
    /// Periodic tasks stop at shutdown, so `close` returns. (A task run by `CallerRuns`
    /// runs on a submitting thread, where `close` waits for termination.)
    close_returns: bool,
    /// Refusals with an error other than `Shutdown` (or an allowed `QueueFull`).
    unexpected_errors: Mutex<Vec<String>>,
}

impl Ctx {
    fn new_record(&self, kind: Kind) -> Option<Arc<Record>> {
        let mut records = self.records.lock().unwrap();
        if records.len() >= MAX_TASKS_PER_ROUND {
            return None;
        }
        if kind.is_periodic()
            && self.periodic.fetch_add(1, Ordering::SeqCst) >= MAX_PERIODIC_PER_ROUND
        {
            return None;
        }
        let rec = Arc::new(Record::new(records.len(), kind));
        records.push(rec.clone());
        Some(rec)
    }

    /// Any accepted task, or (half the time) one of the 64 most recent, which are more
    /// likely still pending.
    fn random_handle(&self) -> Option<(Arc<Record>, CancelHandle)> {
        let handles = self.handles.lock().unwrap();
        let n = handles.len() as u64;
        if n == 0 {
            return None;
        }
        let i = if rand_chance(50) {
            n - 1 - rand_below(n.min(64))
        } else {
            rand_below(n)
        };
        Some(handles[i as usize].clone())
    }

    /// Records the verdict of a submission.
    fn settle(
        &self,
        rec: &Arc<Record>,
        result: Result<Option<ScheduledFuture<()>>, ScheduleError>,
    ) {
        match result {
            Ok(fut) => {
                rec.verdict.store(1, Ordering::SeqCst);
                if let Some(fut) = fut {
                    let handle = fut.cancel_handle();
                    self.handles.lock().unwrap().push((rec.clone(), handle));
                    self.futures.lock().unwrap().push((rec.clone(), fut));
                }
            }
            Err(e) => {
                rec.verdict.store(2, Ordering::SeqCst);
                let expected = e == ScheduleError::Shutdown
                    || (e == ScheduleError::QueueFull && self.queue_full_allowed);
                if !expected {
                    self.unexpected_errors
                        .lock()
                        .unwrap()
                        .push(format!("task {}: {e:?}", rec.id));
                }
            }
        }
    }

    /// Handles what `shutdown_now` returned: runs some on this thread, drops the rest.
    fn handle_pending(&self, pending: Vec<PendingTask>) {
        for p in pending {
            if rand_chance(50) {
                let outer = IN_PENDING_RUN.with(|x| x.replace(true));
                with_cause(cause::NONE, || p.run());
                IN_PENDING_RUN.with(|x| x.set(outer));
                self.pending_run.fetch_add(1, Ordering::SeqCst);
            } else {
                with_cause(cause::PENDING_DROP, || drop(p));
                self.pending_dropped.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

/// A cancel, or (a third of the time) an interrupt: the cooperative `cancel(true)`, which
/// also cancels a running one-shot.
fn cancel(h: &(Arc<Record>, CancelHandle)) {
    let (rec, handle) = h;
    let interrupt = rand_chance(33);
    with_cause(cause::CANCEL, || {
        let won = if interrupt {
            handle.interrupt()
        } else {
            handle.cancel()
        };
        if won {
            if interrupt {
                rec.interrupted.store(true, Ordering::SeqCst);
            }
            rec.runs_at_cancel
                .store(rec.runs.load(Ordering::SeqCst), Ordering::SeqCst);
            rec.cancelled.store(true, Ordering::SeqCst);
        }
    });
}

fn reschedule(h: &(Arc<Record>, CancelHandle)) {
    h.1.reschedule(Instant::now() + rand_micros(4000));
}

/// One random submission. `nested` is true inside a task.
fn submit_random(ctx: &Arc<Ctx>, nested: bool) {
    let kind = match rand_below(100) {
        0..=44 => Kind::Schedule,
        45..=59 => Kind::Submit,
        60..=74 => Kind::Execute,
        75..=84 => Kind::FixedRate,
        85..=93 => Kind::FixedDelay,
        _ => Kind::Limited,
    };
    let kind = if nested && kind.is_periodic() {
        Kind::Schedule
    } else {
        kind
    };
    let Some(rec) = ctx.new_record(kind) else {
        return;
    };
    let pool = &ctx.pool;
    let outer = SUBMITTING.with(|x| x.replace(rec.id));
    let result = with_cause(cause::REFUSED, || match kind {
        Kind::Schedule => {
            let (delay, body) = (rand_micros(3000), once_body(ctx, &rec));
            match rand_below(3) {
                0 => pool.schedule(delay, body),
                1 => pool.schedule_with_context(delay, move |_: &TaskContext<'_>| body()),
                _ => pool.named("stress").schedule(delay, body),
            }
            .map(Some)
        }
        Kind::Submit => pool.submit(once_body(ctx, &rec)).map(Some),
        Kind::Execute => pool.execute(once_body(ctx, &rec)).map(|()| None),
        Kind::FixedRate => pool
            .schedule_at_fixed_rate(
                rand_micros(2000),
                Duration::from_micros(500) + rand_micros(2500),
                periodic_body(ctx, &rec),
            )
            .map(Some),
        Kind::FixedDelay => pool
            .schedule_with_fixed_delay(
                rand_micros(2000),
                Duration::from_micros(500) + rand_micros(2500),
                periodic_body(ctx, &rec),
            )
            .map(Some),
        Kind::Limited => {
            let period = Duration::from_micros(500) + rand_micros(2500);
            let spec = if rand_chance(50) {
                Periodic::at_fixed_rate(period)
            } else {
                Periodic::with_fixed_delay(period)
            };
            let spec = spec.initial_delay(rand_micros(2000)).max_runs(rec.max_runs);
            let mut body = periodic_body(ctx, &rec);
            match rand_below(3) {
                0 => pool.schedule_periodic(spec, body),
                1 => pool.schedule_periodic_with_context(spec, move |_: &TaskContext<'_>| {
                    body();
                    Next::Continue
                }),
                _ => {
                    let lock = Exclusive::new(
                        cluster_lock(),
                        format!("task-{}", rec.id),
                        Duration::from_secs(60),
                    );
                    pool.schedule_periodic(spec.exclusive(lock), body)
                }
            }
            .map(Some)
        }
    });
    SUBMITTING.with(|x| x.set(outer));
    ctx.settle(&rec, result);
}

/// The in-process cluster lock of the exclusive tasks (each locks a name of its own).
fn cluster_lock() -> Arc<LocalLock> {
    static LOCK: std::sync::OnceLock<Arc<LocalLock>> = std::sync::OnceLock::new();
    LOCK.get_or_init(|| Arc::new(LocalLock::new())).clone()
}

/// What a running task may do besides counting its run.
fn act_inside(ctx: &Arc<Ctx>) {
    let shutdown = ctx.inside_shutdown.swap(0, Ordering::SeqCst);
    match shutdown {
        1 => with_cause(cause::SHUTDOWN, || ctx.pool.shutdown()),
        2 => {
            let pending = ctx.pool.shutdown_now();
            ctx.handle_pending(pending);
        }
        3 if ctx.close_returns => with_cause(cause::SHUTDOWN, || ctx.pool.close()),
        3 => with_cause(cause::SHUTDOWN, || ctx.pool.shutdown()),
        _ => {}
    }
    if !rand_chance(20) {
        return;
    }
    match rand_below(3) {
        0 => submit_random(ctx, true),
        1 => {
            if let Some(h) = ctx.random_handle() {
                cancel(&h);
            }
        }
        _ => {
            if let Some(h) = ctx.random_handle() {
                reschedule(&h);
            }
        }
    }
}

fn once_body(ctx: &Arc<Ctx>, rec: &Arc<Record>) -> impl FnOnce() + Send + 'static {
    let (ctx, token) = (Arc::downgrade(ctx), Token(rec.clone()));
    move || {
        let token = token; // dropped at the end of the run
        token.0.enter();
        // A body run by `CallerRuns` runs inside its submission's cause: reset it.
        with_cause(cause::NONE, || {
            if let Some(ctx) = ctx.upgrade() {
                act_inside(&ctx);
            }
        });
        token.0.leave();
    }
}

fn periodic_body(ctx: &Arc<Ctx>, rec: &Arc<Record>) -> impl FnMut() + Send + 'static {
    let (ctx, token) = (Arc::downgrade(ctx), Token(rec.clone()));
    move || {
        token.0.enter();
        with_cause(cause::NONE, || {
            if let Some(ctx) = ctx.upgrade() {
                act_inside(&ctx);
            }
        });
        token.0.leave();
    }
}

// ---------------------------------------------------------------------------------------
// A round

#[derive(Debug, Default)]
struct Totals {
    rounds: u64,
    tasks: u64,
    one_shot_run: u64,
    one_shot_cancelled: u64,
    periodic_tasks: u64,
    periodic_runs: u64,
    rejected: u64,
    /// Refused by a full queue, yet run by the caller or discarded.
    refused_but_handled: u64,
    pending_run: u64,
    pending_dropped: u64,
    lost: u64,
    /// One-shots that ran and whose future says `Cancelled`: interrupted while running.
    interrupted_running: u64,
}

/// Runs one round of about `active` and returns its violations (empty if all is well).
fn round(active: Duration, totals: &mut Totals) -> Vec<String> {
    let core = 1 + rand_below(4) as usize;
    let continue_periodic = rand_chance(25);
    let execute_delayed = rand_chance(70);
    let remove_on_cancel = rand_chance(80);
    // Threads that time out and come back: the "a queued task always has a worker" rule.
    let (core_timeout, keep_alive) = if rand_chance(30) {
        (true, rand_micros(2000))
    } else {
        (false, Duration::from_millis(10))
    };
    // A third of the rounds bound the queue, with a random rejection policy.
    let (max_queued, policy) = if rand_chance(33) {
        let policy = match rand_below(3) {
            0 => RejectionPolicy::Abort,
            1 => RejectionPolicy::CallerRuns,
            _ => RejectionPolicy::Discard,
        };
        (1 + rand_below(64) as usize, policy)
    } else {
        (usize::MAX, RejectionPolicy::Abort)
    };
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(core)
        .thread_name_prefix("stress-")
        .continue_existing_periodic_tasks_after_shutdown(continue_periodic)
        .execute_existing_delayed_tasks_after_shutdown(execute_delayed)
        .remove_on_cancel(remove_on_cancel)
        .max_queued_tasks(max_queued)
        .rejection_policy(policy)
        .allow_core_thread_timeout(core_timeout)
        .keep_alive(keep_alive)
        .build();
    let setting = format!(
        "core {core}, core timeout {core_timeout} ({keep_alive:?}), continue_periodic {continue_periodic}, execute_delayed \
         {execute_delayed}, remove_on_cancel {remove_on_cancel}, max_queued {max_queued}, \
         {policy:?}"
    );
    *ROUND.lock().unwrap() = Some((Instant::now() + active + STUCK_AFTER, setting.clone()));
    let ctx = Arc::new(Ctx {
        pool,
        records: Mutex::default(),
        handles: Mutex::default(),
        futures: Mutex::default(),
        periodic: AtomicUsize::new(0),
        inside_shutdown: AtomicU8::new(0),
        pending_run: AtomicU64::new(0),
        pending_dropped: AtomicU64::new(0),
        queue_full_allowed: max_queued != usize::MAX && policy == RejectionPolicy::Abort,
        close_returns: !continue_periodic,
        unexpected_errors: Mutex::default(),
    });
    let end = Instant::now() + active;
    let shutdown_at = Instant::now() + active.mul_f64(0.3 + 0.7 * rand_below(1000) as f64 / 1000.0);
    thread::scope(|s| {
        for _ in 0..SUBMITTERS {
            let ctx = &ctx;
            s.spawn(move || {
                while Instant::now() < end {
                    match rand_below(100) {
                        0..=59 => submit_random(ctx, false),
                        60..=79 => {
                            if let Some(h) = ctx.random_handle() {
                                cancel(&h);
                            }
                        }
                        80..=94 => {
                            if let Some(h) = ctx.random_handle() {
                                reschedule(&h);
                            }
                        }
                        _ => thread::sleep(rand_micros(200)),
                    }
                    if rand_chance(30) {
                        thread::sleep(rand_micros(100)); // let real time pass
                    }
                }
            });
        }
        // The main thread resizes the pool now and then and shuts it down once.
        let mut shut = false;
        while Instant::now() < end {
            thread::sleep(rand_micros(5000));
            if rand_chance(20) {
                ctx.pool.set_core_pool_size(rand_below(5) as usize);
            }
            if !shut && Instant::now() >= shutdown_at {
                shut = true;
                match rand_below(10) {
                    0..=2 => with_cause(cause::SHUTDOWN, || ctx.pool.shutdown()),
                    3..=5 => {
                        let pending = ctx.pool.shutdown_now();
                        ctx.handle_pending(pending);
                    }
                    // close waits for termination: only when periodic tasks stop.
                    6 if !continue_periodic => {
                        with_cause(cause::SHUTDOWN, || ctx.pool.close());
                    }
                    n => ctx
                        .inside_shutdown
                        .store(1 + (n % 3) as u8, Ordering::SeqCst),
                }
            }
        }
    });
    let mut violations = Vec::new();
    // With the periodic tasks cancelled, every due task must get a worker and run, so the
    // pool settles (a task stranded without a worker would be handed back by the
    // `shutdown_now` below and go unnoticed otherwise).
    let periodic: Vec<_> = ctx
        .handles
        .lock()
        .unwrap()
        .iter()
        .filter(|(rec, _)| rec.kind.is_periodic())
        .cloned()
        .collect();
    periodic.iter().for_each(cancel);
    if !ctx.pool.wait_idle(TERMINATION_BOUND) {
        violations.push(format!(
            "due tasks never ran: the pool never settled ({setting})"
        ));
    }
    // Whatever is left: hand it back, then the pool must terminate.
    ctx.inside_shutdown.store(0, Ordering::SeqCst);
    let pending = ctx.pool.shutdown_now();
    ctx.handle_pending(pending);
    if !ctx.pool.await_termination(TERMINATION_BOUND) {
        violations.push(format!("the pool did not terminate ({setting})"));
        return violations;
    }
    check(&ctx, &setting, totals, &mut violations);
    violations
}

/// How a submission that returned `Ok` was handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handled {
    /// Queued (counted in `task_count`).
    Queued,
    /// Refused, run on the submitting thread (`CallerRuns`).
    CallerRan,
    /// Refused, dropped at once (`Discard`).
    Discarded,
}

fn handled(rec: &Record) -> Handled {
    if rec.caller_runs.load(Ordering::SeqCst) > 0 {
        Handled::CallerRan
    } else if rec.runs.load(Ordering::SeqCst) == 0
        && rec.drop_cause.load(Ordering::SeqCst) == cause::REFUSED
    {
        // Dropped on the submitting thread inside its own submission: only `Discard`
        // does that to an accepted closure.
        Handled::Discarded
    } else {
        Handled::Queued
    }
}

/// A future's outcome, or `None` if it never completed.
type Outcome = Option<Result<(), TaskError>>;

/// The accounting described in the module notes.
fn check(ctx: &Ctx, setting: &str, totals: &mut Totals, v: &mut Vec<String>) {
    let mut fail = |msg: String| v.push(format!("{msg} ({setting})"));
    for e in ctx.unexpected_errors.lock().unwrap().iter() {
        fail(format!("unexpected refusal: {e}"));
    }
    // Each future's outcome, or `None` if it never completed.
    let outcomes: Vec<(Arc<Record>, Outcome)> = {
        let futures = std::mem::take(&mut *ctx.futures.lock().unwrap());
        futures
            .into_iter()
            .map(|(rec, fut)| {
                let outcome = fut.wait_timeout(TERMINATION_BOUND).then(|| fut.get());
                (rec, outcome)
            })
            .collect()
    };
    let records = ctx.records.lock().unwrap().clone();
    let (mut queued, mut refused, mut worker_runs) = (0u64, 0u64, 0u64);
    for rec in &records {
        let runs = rec.runs.load(Ordering::SeqCst);
        let drops = rec.drops.load(Ordering::SeqCst);
        let dropped_by = rec.drop_cause.load(Ordering::SeqCst);
        worker_runs += rec.worker_runs.load(Ordering::SeqCst);
        let id = format!("task {} ({:?})", rec.id, rec.kind);
        if drops != 1 {
            fail(format!("{id}: dropped {drops} times"));
        }
        let how = match rec.verdict.load(Ordering::SeqCst) {
            1 => handled(rec),
            2 => {
                refused += 1;
                if runs != 0 || dropped_by != cause::REFUSED {
                    fail(format!(
                        "{id}: refused, yet ran {runs} times, dropped by {dropped_by}"
                    ));
                }
                continue;
            }
            other => {
                fail(format!("{id}: no verdict ({other})"));
                continue;
            }
        };
        if how == Handled::Queued {
            queued += 1;
        } else {
            refused += 1;
            totals.refused_but_handled += 1;
        }
        if rec.kind.is_periodic() {
            totals.periodic_tasks += 1;
            totals.periodic_runs += runs;
            if rec.overlaps.load(Ordering::SeqCst) != 0 {
                fail(format!("{id}: runs overlapped"));
            }
            if rec.cancelled.load(Ordering::SeqCst)
                && runs > rec.runs_at_cancel.load(Ordering::SeqCst) + 1
            {
                fail(format!("{id}: a run started after cancel returned true"));
            }
            if rec.kind == Kind::Limited && runs > rec.max_runs {
                fail(format!("{id}: ran {runs} times, max_runs {}", rec.max_runs));
            }
            if rec.caller_runs.load(Ordering::SeqCst) > 1 {
                fail(format!("{id}: ran on the caller more than once"));
            }
            continue;
        }
        let cancelled_by = [cause::CANCEL, cause::PENDING_DROP, cause::SHUTDOWN];
        match (runs, how) {
            (1, Handled::Queued) => {
                totals.one_shot_run += 1;
                if rec.interrupted.load(Ordering::SeqCst) {
                    totals.interrupted_running += 1;
                }
                if dropped_by != cause::NONE {
                    fail(format!("{id}: ran, but was dropped by cause {dropped_by}"));
                }
                // An interrupt may land while the one-shot runs; a cancel never does.
                if rec.cancelled.load(Ordering::SeqCst) && !rec.interrupted.load(Ordering::SeqCst) {
                    fail(format!("{id}: ran after cancel returned true"));
                }
            }
            (1, Handled::CallerRan) => totals.one_shot_run += 1,
            (0, Handled::Queued) => {
                totals.one_shot_cancelled += 1;
                if !cancelled_by.contains(&dropped_by) {
                    totals.lost += 1;
                    fail(format!(
                        "{id}: never ran and was not cancelled (cause {dropped_by})"
                    ));
                }
            }
            (0, Handled::Discarded) => totals.one_shot_cancelled += 1,
            (n, how) => fail(format!("{id}: ran {n} times ({how:?})")),
        }
    }
    for (rec, outcome) in outcomes {
        let runs = rec.runs.load(Ordering::SeqCst);
        let id = format!("task {} ({:?})", rec.id, rec.kind);
        let cancelled = rec.cancelled.load(Ordering::SeqCst);
        let interrupted = rec.interrupted.load(Ordering::SeqCst);
        match outcome {
            None => fail(format!("{id}: its future never completed")),
            // An interrupt that returned true makes the future say Cancelled, run or not.
            Some(Ok(())) if !rec.kind.is_periodic() && runs == 1 && !interrupted => {}
            Some(Ok(())) if rec.kind == Kind::Limited && runs == rec.max_runs && !cancelled => {}
            Some(Err(TaskError::Cancelled))
                if rec.kind.is_periodic() || runs == 0 || interrupted => {}
            Some(other) => fail(format!(
                "{id}: ran {runs} times, cancelled {cancelled}, future {other:?}"
            )),
        }
    }
    let stats = ctx.pool.stats();
    if stats.task_count != queued || stats.rejected_count != refused {
        fail(format!(
            "task_count {} / rejected_count {}, expected {queued} / {refused}",
            stats.task_count, stats.rejected_count
        ));
    }
    if stats.completed_task_count != worker_runs {
        fail(format!(
            "completed_task_count {}, expected {worker_runs}",
            stats.completed_task_count
        ));
    }
    if (stats.pool_size, stats.active_count, stats.queued) != (0, 0, 0) {
        fail(format!("after termination: {stats:?}"));
    }
    totals.rounds += 1;
    totals.tasks += records.len() as u64;
    totals.rejected += refused;
    totals.pending_run += ctx.pending_run.load(Ordering::SeqCst);
    totals.pending_dropped += ctx.pending_dropped.load(Ordering::SeqCst);
}

/// The deadline of the round in progress and its settings, for the watchdog.
static ROUND: Mutex<Option<(Instant, String)>> = Mutex::new(None);

/// Ends the process if a round overruns its deadline (a hang in the pool or the test).
fn start_watchdog() {
    thread::spawn(|| loop {
        thread::sleep(Duration::from_secs(1));
        if let Some((deadline, setting)) = &*ROUND.lock().unwrap() {
            if Instant::now() > *deadline {
                eprintln!("stress: a round is stuck ({setting}); aborting the test process");
                std::process::exit(3);
            }
        }
    });
}

fn budget() -> Duration {
    let secs = std::env::var("SCHEDPOOL_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(2.0);
    Duration::from_secs_f64(secs.max(0.0))
}

#[test]
fn stress_schedule_cancel_reschedule_and_shutdown_with_exact_accounting() {
    let budget = budget();
    let start = Instant::now();
    start_watchdog();
    let mut totals = Totals::default();
    let mut violations = Vec::new();
    loop {
        let active = Duration::from_millis(100) + rand_micros(300_000);
        violations.extend(round(active, &mut totals));
        *ROUND.lock().unwrap() = None;
        if !violations.is_empty() || start.elapsed() >= budget {
            break;
        }
    }
    if std::env::var_os("SCHEDPOOL_STRESS_REPORT").is_some() {
        println!(
            "stress totals: seconds={:.0} rounds={} tasks={} one_shot_run={} \
             one_shot_cancelled={} periodic_tasks={} periodic_runs={} rejected={} \
             caller_ran_or_discarded={} pending_run={} pending_dropped={} lost={} \
             interrupted_running={} violations={}",
            start.elapsed().as_secs_f64(),
            totals.rounds,
            totals.tasks,
            totals.one_shot_run,
            totals.one_shot_cancelled,
            totals.periodic_tasks,
            totals.periodic_runs,
            totals.rejected,
            totals.refused_but_handled,
            totals.pending_run,
            totals.pending_dropped,
            totals.lost,
            totals.interrupted_running,
            violations.len(),
        );
    }
    assert!(
        violations.is_empty(),
        "{} violations (first 20): {:#?}",
        violations.len(),
        &violations[..violations.len().min(20)]
    );
    assert!(totals.rounds >= 1 && totals.tasks > 0);
}
