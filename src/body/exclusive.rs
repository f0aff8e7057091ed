//! What makes a run exclusive: [`run_locked`], the one place where a run takes its cluster
//! lock, runs and gives the lease back, used by
//! - `Guarded` (`context.rs`): what a periodic spec adds around each run of its closure (the
//!   link of the run's span to the submitter's span, and the cluster lock of an
//!   [`exclusive`](crate::Periodic::exclusive) task);
//! - [`LockedOnce`]: an exclusive one-shot
//!   ([`schedule_exclusive`](crate::ScheduledThreadPoolExecutor::schedule_exclusive));
//! - [`run_exclusive`](crate::ScheduledThreadPoolExecutor::run_exclusive): any closure, on
//!   the caller's thread.
//!
//! The adaptors sit on the task layer's run environment (`task::RunCx`: the pool's name
//! through `task::Host`, the counters, the clock) and are built by the executor's handle
//! around the closures, like the context adaptors; the pool never sees them. The lease
//! protocol is `cluster/`'s (`cluster/mod.rs`). [`owes_catch_up`] answers, before a
//! periodic exclusive job is queued, whether its first run is a catch-up.
//!
//! A locked run: `try_acquire`; held elsewhere (`Ok(None)`), or the store failed (`Err`),
//! and the closure does not run; else it runs and the lease is given back when it returns
//! or unwinds (`HeldLease`'s `Drop`), with the spec's `at_least_for`. Every outcome is counted
//! in the pool's counters and traced; failures of the store are warnings at most once a
//! second per [`Exclusive`] (its `Throttle`, shared by its clones).

use std::time::Duration;

use crate::clock::{AdvanceListener, Clock, Ticks};
use crate::cluster::{Exclusive, ExclusiveOutcome, Lease, LockError, Pause};
use crate::error::run_caught;
use crate::schedule::Schedule;
use crate::stats::{self, Counters};
use crate::sync::{Arc, Condvar, Mutex, Weak};
use crate::task::{drop_quietly, Host, OnceBody, Ran, RunCx};

/// Where a locked run counts and traces: the pool's name, its counters, its clock.
pub(crate) struct Ledger<'a> {
    pub(crate) pool: &'a str,
    /// The task's number, for the events (`id`; none for `run_exclusive`, no task's).
    pub(crate) id: Option<u64>,
    /// The task's name, if it has one, for the events (`task_name`).
    pub(crate) task: Option<&'a str>,
    pub(crate) counters: Option<&'a Counters>,
    pub(crate) clock: &'a Clock,
}

impl<'a> Ledger<'a> {
    /// A run's: the pool that runs it (none outside a pool).
    pub(crate) fn of(cx: &'a RunCx<'a>) -> Self {
        Ledger {
            pool: cx.env.pool.map_or("", |p| p.name()),
            id: Some(cx.header.id()),
            task: cx.task_name,
            counters: cx.env.counters,
            clock: cx.env.clock,
        }
    }
}

/// What [`run_locked`] did.
pub(crate) enum Locked<T> {
    /// This node got the lease and ran `f`.
    Ran(T),
    /// Another node holds the lock: no run.
    Held,
    /// The job is paused on every node (`ClusterLock::pause`): no run.
    Paused(Pause),
}

impl<T> Locked<T> {
    /// `Some(output)` if it ran (what a one-shot and `run_exclusive` return).
    pub(crate) fn ran(self) -> Option<T> {
        match self {
            Locked::Ran(out) => Some(out),
            Locked::Held | Locked::Paused(_) => None,
        }
    }

    /// A locked run's result as the public [`ExclusiveOutcome`].
    pub(crate) fn outcome(run: Result<Locked<T>, LockError>) -> ExclusiveOutcome<T> {
        match run {
            Ok(Locked::Ran(out)) => ExclusiveOutcome::Ran(out),
            Ok(Locked::Held) => ExclusiveOutcome::HeldElsewhere,
            Ok(Locked::Paused(pause)) => ExclusiveOutcome::Paused(pause),
            Err(e) => ExclusiveOutcome::StoreFailed(e),
        }
    }
}

/// What the store said before a run ([`acquire`]).
enum Acquired {
    /// This node got the lease.
    Lease(Lease),
    /// Another node holds the lock.
    Elsewhere,
    /// The job is paused cluster-wide.
    Paused(Pause),
}

/// Asks the store whether the job is paused cluster-wide, and if not, for the lease: what
/// a locked run starts with, counted in `ledger`'s counters and traced (`Err`: the store
/// could not be asked).
fn acquire(spec: &Exclusive, ledger: &Ledger<'_>) -> Result<Acquired, LockError> {
    let (pool, id, task_name) = (ledger.pool, ledger.id, ledger.task);
    // The user's `ClusterLock` through the door (U1: no crate lock held); its panic is the
    // run's panic, contained by the task's run.
    let paused = crate::user::call(|| spec.lock.paused(&spec.name));
    let acquired = match paused {
        Ok(Some(pause)) => {
            crate::user::traced(
                || tracing::debug!(target: "schedpool", pool, id, task_name, lock = &*spec.name, paused_by = %pause.by, "run skipped: the job is paused in the cluster"),
            );
            return Ok(Acquired::Paused(pause));
        }
        Ok(None) => crate::user::call(|| spec.lock.try_acquire(&spec.name, spec.at_most_for)),
        Err(error) => Err(error),
    };
    match acquired {
        Ok(Some(lease)) => {
            bump(ledger.counters, |c| &c.lock_acquired);
            crate::user::traced(
                || tracing::debug!(target: "schedpool", pool, id, task_name, lock = &*spec.name, token = lease.token(), "cluster lock acquired"),
            );
            Ok(Acquired::Lease(lease))
        }
        Ok(None) => {
            bump(ledger.counters, |c| &c.lock_skipped);
            crate::user::traced(
                || tracing::debug!(target: "schedpool", pool, id, task_name, lock = &*spec.name, "run skipped: the cluster lock is held elsewhere"),
            );
            Ok(Acquired::Elsewhere)
        }
        Err(error) => {
            bump(ledger.counters, |c| &c.lock_failed);
            bump(ledger.counters, |c| &c.lock_failed_runs);
            if let Some(suppressed) = spec.warnings.admit() {
                crate::user::traced(
                    || tracing::warn!(target: "schedpool", pool, id, task_name, lock = &*spec.name, error = %error, suppressed, "run skipped: the cluster lock could not be acquired"),
                );
            }
            Err(error)
        }
    }
}

/// Runs `f` under `spec`'s lock, unless the job is paused cluster-wide (asked first):
/// [`Locked::Ran`] if this node got the lease and ran it, `Held` if another node holds
/// the lock, `Paused` if the store says the job is paused, `Err` if the store could not
/// be asked. The lease is given back when `f` returns or unwinds (a panic in `f` goes on
/// unwinding after the release). Every outcome is counted in `ledger`'s counters and
/// traced.
pub(crate) fn run_locked<T>(
    spec: &Exclusive,
    ledger: &Ledger<'_>,
    hold_until: Option<Ticks>,
    f: impl FnOnce(&Lease) -> T,
) -> Result<Locked<T>, LockError> {
    let lease = match acquire(spec, ledger)? {
        Acquired::Lease(lease) => lease,
        Acquired::Elsewhere => return Ok(Locked::Held),
        Acquired::Paused(pause) => return Ok(Locked::Paused(pause)),
    };
    let held = HeldLease {
        spec,
        ledger,
        // Read after the acquisition returned: the store's `locked_at` is no later.
        started: ledger.clock.now(),
        hold_until,
        lease: Some(lease),
    };
    let lease = held.lease.as_ref().expect("held until dropped");
    let out = match spec.keep_alive {
        None => f(lease),
        // The extensions stop, and their thread is joined, before `held` drops
        // and gives the lease back (LK5: no extension after the release).
        Some(every) => kept_alive(spec, ledger, lease, every, f),
    };
    drop(held); // gives the lease back (also on unwind)
    Ok(Locked::Ran(out))
}

/// [`run_locked`]'s start for a run whose future is pending across several polls (an
/// exclusive async job whose run gives its worker back: `Guarded`): the lease, kept by the
/// run until its end ([`KeptLease::release`]), with its keep-alive on a thread of its own.
/// `host`: the pool, whose counters the keep-alive bumps.
pub(crate) fn keep_locked(
    spec: &Exclusive,
    ledger: &Ledger<'_>,
    hold_until: Option<Ticks>,
    host: Option<Arc<dyn Host>>,
) -> Result<Locked<KeptLease>, LockError> {
    let lease = match acquire(spec, ledger)? {
        Acquired::Lease(lease) => lease,
        Acquired::Elsewhere => return Ok(Locked::Held),
        Acquired::Paused(pause) => return Ok(Locked::Paused(pause)),
    };
    let mut kept = KeptLease {
        spec: spec.clone(),
        pool: ledger.pool.into(),
        started: ledger.clock.now(),
        hold_until,
        lease: Some(lease),
        keeper: None,
    };
    if let Some(every) = spec.keep_alive {
        let lease = kept.lease().clone();
        kept.keeper = KeepAlive::start(spec.clone(), lease, ledger, host, every);
    }
    Ok(Locked::Ran(kept))
}

/// A lease a run keeps across its polls ([`keep_locked`]); [`release`](Self::release)
/// gives it back at the run's end.
pub(crate) struct KeptLease {
    spec: Exclusive,
    /// The pool's name, for a release without a ledger (a run dropped before its end).
    pool: Box<str>,
    started: Ticks,
    hold_until: Option<Ticks>,
    /// `None` once given back.
    lease: Option<Lease>,
    keeper: Option<KeepAlive>,
}

impl KeptLease {
    pub(crate) fn lease(&self) -> &Lease {
        self.lease.as_ref().expect("kept until released")
    }

    /// The run ended: the keep-alive stops (joined: LK5, no extension after the release)
    /// and the lease is given back, counted in `ledger` (the ledger of the run's last poll).
    pub(crate) fn release(mut self, ledger: &Ledger<'_>) {
        if let Some(keeper) = self.keeper.take() {
            keeper.stop();
        }
        if let Some(lease) = self.lease.take() {
            give_back(&self.spec, ledger, self.started, self.hold_until, lease);
        }
    }
}

impl Drop for KeptLease {
    /// A run dropped before its end (never on a pool's own paths): the lease is given back
    /// all the same, uncounted.
    fn drop(&mut self) {
        if let Some(keeper) = self.keeper.take() {
            keeper.stop();
        }
        if let Some(lease) = self.lease.take() {
            let clock = Clock::real();
            let ledger = Ledger {
                pool: &self.pool,
                id: None,
                task: None,
                counters: None,
                clock: &clock,
            };
            give_back(&self.spec, &ledger, self.started, self.hold_until, lease);
        }
    }
}

/// A lease's keep-alive on a thread of its own (not scoped: it outlives the poll that
/// started it), stopped and joined by [`stop`](Self::stop).
struct KeepAlive {
    keeper: Arc<Keeper>,
    thread: std::thread::JoinHandle<()>,
}

impl KeepAlive {
    /// Starts extending `lease` every `every`; `None` (traced) if the thread cannot start,
    /// and the run keeps the lease it was given.
    fn start(
        spec: Exclusive,
        lease: Lease,
        ledger: &Ledger<'_>,
        host: Option<Arc<dyn Host>>,
        every: Duration,
    ) -> Option<KeepAlive> {
        let first = crate::clock::add(ledger.clock.now(), every); // as `kept_alive`
        let keeper = Keeper::new(ledger.clock);
        let (k, clock) = (keeper.clone(), ledger.clock.clone());
        let (pool, id) = (String::from(ledger.pool), ledger.id);
        let task = ledger.task.map(String::from);
        let started = std::thread::Builder::new()
            .name(format!("{}-keep-alive", ledger.pool).replace('\0', "\u{fffd}"))
            .spawn(move || {
                let ledger = Ledger {
                    pool: &pool,
                    id,
                    task: task.as_deref(),
                    counters: host.as_deref().map(|h| h.counters()),
                    clock: &clock,
                };
                keep_extending(&spec, &ledger, &lease, first, every, &k);
            });
        match started {
            Ok(thread) => Some(KeepAlive { keeper, thread }),
            Err(error) => {
                crate::user::traced(
                    || tracing::warn!(target: "schedpool", pool = ledger.pool, error = %error, "could not start the lease's keep-alive; the run keeps the lease it was given"),
                );
                None
            }
        }
    }

    fn stop(self) {
        drop(StopKeeper(&self.keeper));
        let _ = self.thread.join(); // a store's panic is contained inside it
    }
}

/// Runs `f` while a thread of its own extends `lease` every `every`
/// (`Exclusive::keep_alive`); the thread is stopped and joined before this returns or
/// unwinds. If the thread cannot be started, `f` runs without extensions (traced).
fn kept_alive<T>(
    spec: &Exclusive,
    ledger: &Ledger<'_>,
    lease: &Lease,
    every: Duration,
    f: impl FnOnce(&Lease) -> T,
) -> T {
    // The first extension is due `every` after now, read before the thread starts (a
    // `ManualClock` may move before it runs).
    let first = crate::clock::add(ledger.clock.now(), every);
    let keeper = Keeper::new(ledger.clock);
    // `std`'s scoped thread (`sync.rs` lists it): the keeper only extends the lease, which
    // `cluster/loom.rs` models as a plain `extend` from another thread (LK5).
    std::thread::scope(|scope| {
        // Dropped at the end of this closure, also while `f`'s panic unwinds, and so
        // before the scope joins the keeper.
        let _stop = StopKeeper(&keeper);
        let started = std::thread::Builder::new()
            // (std refuses a name with a NUL, which a pool's name may hold.)
            .name(format!("{}-keep-alive", ledger.pool).replace('\0', "\u{fffd}"))
            .spawn_scoped(scope, || {
                keep_extending(spec, ledger, lease, first, every, &keeper)
            });
        if let Err(error) = started {
            crate::user::traced(
                || tracing::warn!(target: "schedpool", pool = ledger.pool, lock = &*spec.name, error = %error, "could not start the lease's keep-alive; the run keeps the lease it was given"),
            );
        }
        f(lease)
    })
}

/// The stop signal of a lease's keep-alive thread (and its wake-up on a `ManualClock`).
struct Keeper {
    /// Set when the run is over.
    stop: Mutex<bool>,
    cv: Condvar,
}

impl Keeper {
    /// A keeper not yet stopped; on a `ManualClock`, listening to its advances (C3 in
    /// `clock.rs`: an advance wakes the keeper, which re-reads the time).
    fn new(clock: &Clock) -> Arc<Keeper> {
        let keeper = Arc::new(Keeper {
            stop: Mutex::new(false),
            cv: Condvar::new(),
        });
        if matches!(clock, Clock::Manual(_)) {
            let weak: Weak<dyn AdvanceListener> = Arc::downgrade(&keeper) as Weak<Keeper>;
            clock.register(weak);
        }
        keeper
    }
}

impl AdvanceListener for Keeper {
    fn on_advance(&self) {
        let _stop = self.stop.lock(); // the keeper holds it from its check to its wait
        self.cv.notify_all();
    }
}

/// Stops the keeper when dropped.
struct StopKeeper<'a>(&'a Keeper);

impl Drop for StopKeeper<'_> {
    fn drop(&mut self) {
        *self.0.stop.lock() = true;
        self.0.cv.notify_all();
    }
}

/// The keep-alive thread: at `first`, then every `every` of the pool's clock, extends
/// `lease` to `at_most_for` from the store's now, until stopped or until the lease is found
/// gone.
fn keep_extending(
    spec: &Exclusive,
    ledger: &Ledger<'_>,
    lease: &Lease,
    first: Ticks,
    every: Duration,
    keeper: &Keeper,
) {
    let (clock, pool, counters) = (ledger.clock, ledger.pool, ledger.counters);
    let (id, task_name) = (ledger.id, ledger.task);
    let mut next = first;
    loop {
        {
            let mut stop = keeper.stop.lock();
            loop {
                if *stop {
                    return;
                }
                if clock.now() >= next {
                    break;
                }
                match clock {
                    Clock::Real { .. } => {
                        keeper.cv.wait_until(&mut stop, clock.instant_of(next));
                    }
                    Clock::Manual(_) => keeper.cv.wait(&mut stop),
                }
            }
        }
        // A store's panic is contained, as in a release.
        let extended =
            match crate::user::call(|| run_caught(|| spec.lock.extend(lease, spec.at_most_for))) {
                Ok(extended) => extended,
                Err((payload, msg)) => {
                    drop_quietly(payload);
                    Err(LockError::Store(
                        format!("the lock's extension panicked: {msg}").into(),
                    ))
                }
            };
        match extended {
            Ok(true) => {
                bump(counters, |c| &c.lock_extended);
                crate::user::traced(
                    || tracing::debug!(target: "schedpool", pool, id, task_name, lock = &*spec.name, token = lease.token(), "cluster lock extended"),
                );
            }
            Ok(false) => {
                crate::user::traced(
                    || tracing::warn!(target: "schedpool", pool, id, task_name, lock = &*spec.name, token = lease.token(), "the cluster lock's lease was gone when its keep-alive came; another node may run the job meanwhile"),
                );
                return;
            }
            Err(error) => {
                bump(counters, |c| &c.lock_failed);
                if let Some(suppressed) = spec.warnings.admit() {
                    crate::user::traced(
                        || tracing::warn!(target: "schedpool", pool, id, task_name, lock = &*spec.name, token = lease.token(), error = %error, suppressed, "the cluster lock could not be extended; trying again at the next interval"),
                    );
                }
            }
        }
        next = crate::clock::add(clock.now(), every);
    }
}

/// An exclusive one-shot's closure: run under the lock, it completes its future with what
/// [`run_locked`] returns.
pub(crate) struct LockedOnce<F, Shape = NestedShape> {
    pub(crate) f: F,
    pub(crate) spec: Exclusive,
    pub(crate) shape: std::marker::PhantomData<Shape>,
}

/// A [`LockedOnce`] whose output is `Result<Option<T>, LockError>` (`schedule_exclusive`).
pub(crate) struct NestedShape;

/// A [`LockedOnce`] whose output is an [`ExclusiveOutcome`] (`schedule_exclusive_outcome`).
pub(crate) struct OutcomeShape;

impl<F, Shape> LockedOnce<F, Shape> {
    pub(crate) fn new(f: F, spec: Exclusive) -> Self {
        LockedOnce {
            f,
            spec,
            shape: std::marker::PhantomData,
        }
    }
}

impl<F, T> OnceBody<Result<Option<T>, LockError>> for LockedOnce<F, NestedShape>
where
    F: FnOnce(&Lease) -> T + Send + 'static,
{
    fn call(self, cx: &RunCx<'_>) -> Ran<Result<Option<T>, LockError>> {
        Ran::Output(run_locked(&self.spec, &Ledger::of(cx), None, self.f).map(Locked::ran))
    }
}

impl<F, T> OnceBody<ExclusiveOutcome<T>> for LockedOnce<F, OutcomeShape>
where
    F: FnOnce(&Lease) -> T + Send + 'static,
{
    fn call(self, cx: &RunCx<'_>) -> Ran<ExclusiveOutcome<T>> {
        Ran::Output(Locked::outcome(run_locked(
            &self.spec,
            &Ledger::of(cx),
            None,
            self.f,
        )))
    }
}

/// A lease held for one run; dropping it gives it back.
struct HeldLease<'a> {
    spec: &'a Exclusive,
    ledger: &'a Ledger<'a>,
    /// When the run took the lease, on the pool's clock (a `ManualClock`'s time in a
    /// test): the overrun warning's `ran_ms`.
    started: Ticks,
    /// A catch-up run's successor's deadline, on the pool's clock: the release keeps the
    /// lease at most until then (`Guarded`, `body/context.rs`).
    hold_until: Option<Ticks>,
    lease: Option<Lease>,
}

impl Drop for HeldLease<'_> {
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take() {
            give_back(self.spec, self.ledger, self.started, self.hold_until, lease);
        }
    }
}

/// Gives a run's lease back (its run started on the pool's clock at `started`; a
/// catch-up's hold ends by `hold_until`), counted and traced in `ledger`.
fn give_back(
    spec: &Exclusive,
    ledger: &Ledger<'_>,
    started: Ticks,
    hold_until: Option<Ticks>,
    lease: Lease,
) {
    let (pool, counters) = (ledger.pool, ledger.counters);
    let (id, task_name) = (ledger.id, ledger.task);
    let token = lease.token();
    let ran = crate::clock::since(ledger.clock.now(), started);
    // `at_least_for` counts from the acquisition (LK3); a catch-up's is capped at its
    // successor's deadline, so the lock is free when that tick comes.
    let at_least_for = match hold_until {
        Some(until) => spec.at_least_for.min(crate::clock::since(until, started)),
        None => spec.at_least_for,
    };
    // A store's panic is contained here: this may run while the closure's own panic
    // unwinds, where a second panic would abort the process.
    let released = match crate::user::call(|| run_caught(|| spec.lock.release(lease, at_least_for)))
    {
        Ok(released) => released,
        Err((payload, msg)) => {
            drop_quietly(payload);
            Err(LockError::Store(
                format!("the lock's release panicked: {msg}").into(),
            ))
        }
    };
    match released {
        Ok(true) => {}
        Ok(false) => {
            bump(counters, |c| &c.lock_overruns);
            crate::user::traced(|| {
                tracing::warn!(
                    target: "schedpool",
                    pool,
                    id,
                    task_name,
                    lock = &*spec.name,
                    token,
                    ran_ms = millis(ran),
                    at_most_for_ms = millis(spec.at_most_for),
                    "a run outlasted its cluster lock's at_most_for; another node may have run the job meanwhile"
                )
            });
        }
        Err(error) => {
            bump(counters, |c| &c.lock_failed);
            if let Some(suppressed) = spec.warnings.admit() {
                crate::user::traced(
                    || tracing::warn!(target: "schedpool", pool, id, task_name, lock = &*spec.name, token, error = %error, suppressed, "the cluster lock could not be released; it runs out at at_most_for"),
                );
            }
        }
    }
}

fn bump(
    counters: Option<&Counters>,
    which: impl Fn(&Counters) -> &crossbeam_utils::CachePadded<crate::sync::AtomicU64>,
) {
    if let Some(c) = counters {
        stats::bump(which(c));
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `Exclusive::catch_up`: whether the job's last run anywhere (the lock's last
/// acquisition, on the store's clock) is more than one period of `schedule` old. A store
/// that cannot tell means no catch-up, with a warning; `pool` names the pool in the
/// events.
pub(crate) fn owes_catch_up(exclusive: &Exclusive, schedule: &Schedule, pool: &str) -> bool {
    let period = match schedule {
        Schedule::FixedRate(p, _) | Schedule::FixedDelay(p) => *p,
        Schedule::Trigger(_) | Schedule::Once => return false,
    };
    match crate::user::call(|| exclusive.lock.last_acquired(&exclusive.name)) {
        Ok(Some(age)) if age > period => {
            crate::user::traced(
                || tracing::info!(target: "schedpool", pool, lock = exclusive.name(), last_run_ago_ms = u64::try_from(age.as_millis()).unwrap_or(u64::MAX), "the job's last run is more than a period old: its first run here is due at once"),
            );
            true
        }
        Ok(_) => false,
        Err(error) => {
            crate::user::traced(
                || tracing::warn!(target: "schedpool", pool, lock = exclusive.name(), error = %error, "could not ask the lock's store when the job last ran: no catch-up"),
            );
            false
        }
    }
}
