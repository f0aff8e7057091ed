//! Periodic jobs across replicas: a run happens on one node at a time, cluster-wide, by
//! taking a time-bounded lock in a store the nodes share (ShedLock's model).
//!
//! A periodic task made [`exclusive`](crate::Periodic::exclusive) asks its
//! [`ClusterLock`] for a [`Lease`] before each run. If another node holds the lock, the
//! run is *skipped*, not queued: the task keeps its schedule and tries again at its next
//! deadline. The lease lasts at most `at_most_for` (so a crashed holder blocks the others
//! for at most that long); when the run ends it is given back, but the lock stays taken
//! until `at_least_for` after it was acquired (so a fast node cannot run the same tick
//! again just after another finished it).
//!
//! The same lock serves a one-shot that must run once cluster-wide
//! ([`schedule_exclusive`](crate::ScheduledThreadPoolExecutor::schedule_exclusive)) and
//! any block of code ([`run_exclusive`](crate::ScheduledThreadPoolExecutor::run_exclusive)).
//! A long run keeps its lease alive ([`Exclusive::keep_alive`]); a job missed while every
//! node was down is caught up once ([`Exclusive::catch_up`]); ticks shared by nodes that
//! started at different times come from [`Periodic::aligned`](crate::Periodic::aligned).
//!
//! Providers: [`LocalLock`] (in-process, for tests and single-node use); with the cargo
//! feature `postgres`, `PgLock` (a table in PostgreSQL, with the database's clock; over
//! TLS with the feature `postgres-tls`); with the feature `redis`, `RedisLock` (a hash per
//! lock in Redis, with the server's clock; over TLS with `redis-tls`). With the feature
//! `contract`, `contract` runs the store contract against any of them, or a store of
//! your own.
//!
//! ```
//! use schedpool::cluster::{Exclusive, LocalLock};
//! use schedpool::{Periodic, ScheduledThreadPoolExecutor};
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! let lock = Arc::new(LocalLock::new());
//! let pool = ScheduledThreadPoolExecutor::new(1);
//! let job = Periodic::at_fixed_rate(Duration::from_secs(60))
//!     .name("cleanup")
//!     .exclusive(Exclusive::new(lock, "cleanup", Duration::from_secs(300))
//!         .at_least_for(Duration::from_secs(30)));
//! let fut = pool.schedule_periodic(job, || { /* delete old rows */ }).unwrap();
//! # fut.cancel();
//! pool.close();
//! ```
//!
//! # The lease protocol
//! A lock is a record `(name, lock_until, token)` in the store; the store's own clock
//! decides every comparison.
//! - LK1 (one holder): `try_acquire` succeeds only if `lock_until <= now` in the store,
//!   and sets `lock_until = now + at_most_for` in the same atomic step; so no two leases
//!   of one name are valid at the same store instant.
//! - LK2 (fencing): each successful `try_acquire` of a name returns a token larger than
//!   every earlier one. `release` changes the record only if its token is still the
//!   record's and the lease is still valid (`lock_until > now`), so a holder whose lease
//!   ran out never shortens the lease of the node that took over.
//! - LK3 (at least): `release` sets `lock_until = max(acquired + at_least_for, now)`, so
//!   the lock stays taken until `at_least_for` after the acquisition.
//! - LK5 (keep-alive): `extend` sets `lock_until = now + at_most_for` only if the lease's
//!   token is still the record's and the lease is still valid (`lock_until > now`), so an
//!   extension never revives a lease that ran out, never touches a lease another node
//!   took over, and a holder that dies stops extending: its lease runs out at its last
//!   extension plus `at_most_for`.
//! - LK4 (no skew): the times in LK1–LK3 are the store's (`now()` in PostgreSQL, the
//!   process's monotonic clock in `LocalLock`); a node's own clock never enters them, so
//!   clock skew between nodes cannot make two leases overlap.
//!
//! A run that outlasts `at_most_for` keeps running (a running closure cannot be stopped
//! from outside); its lease has expired, so another node may start the job's next run
//! meanwhile. `release` then reports it ([`ClusterLock::release`] returns `false`), and
//! the run is counted in `PoolStats::lock_overruns` and traced as a warning. Choose
//! `at_most_for` well above the longest run.
//!
//! A job can be paused on every node at once ([`ClusterLock::pause`]): before each
//! exclusive run the node asks the store ([`ClusterLock::paused`]) and skips the run if
//! the job is paused (`docs/CLUSTER.md`, "Pausing a job on every node"). The question
//! comes before the acquisition, not in its atomic step: a run whose check came just
//! before the pause still runs, as a run in progress does.

#[cfg(feature = "contract")]
#[cfg_attr(docsrs, doc(cfg(feature = "contract")))]
pub mod contract;
mod local;
#[cfg(feature = "postgres")]
mod pg;
#[cfg(feature = "redis")]
mod redis;

#[cfg(all(test, loom))]
mod loom;

use std::error::Error;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use self::redis::{RedisLock, RedisLockBuilder};
pub use local::LocalLock;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use pg::{PgLock, PgLockBuilder};

/// A time-bounded lock shared by the nodes of a cluster (ShedLock's `LockProvider`).
///
/// Implementations must keep LK1–LK5 (module docs), and must return within a bounded time:
/// a worker thread waits for each call.
///
/// Edge inputs, as both providers of the crate treat them (and as an implementation
/// should):
/// - any string is a name, the empty one included; names are compared byte for byte;
/// - a zero `at_most_for` is a lease that is over as soon as it is granted: it keeps
///   nobody out, and its `release` returns `Ok(false)` (an overrun);
/// - `at_least_for` longer than the lease's `at_most_for` is capped at it, so a release
///   never holds the lock longer than the acquisition promised
///   ([`Exclusive::at_least_for`] caps it the same way).
pub trait ClusterLock: Send + Sync + 'static {
    /// Takes the lock `name` for at most `at_most_for`, if no valid lease of it exists:
    /// `Ok(Some(lease))` if this node now holds it, `Ok(None)` if another holder's lease
    /// is still valid.
    ///
    /// # Errors
    /// [`LockError`] if the store could not be asked (unreachable, too slow); the caller
    /// then does not hold the lock.
    fn try_acquire(&self, name: &str, at_most_for: Duration) -> Result<Option<Lease>, LockError>;

    /// Gives `lease` back: the lock stays taken until `at_least_for` after the
    /// acquisition, or is free now if that has passed (LK3). `Ok(true)` if the lease was
    /// still valid; `Ok(false)` if it had run out (`at_most_for` passed; another node may
    /// hold the lock now, and is left alone, LK2).
    ///
    /// # Errors
    /// [`LockError`] if the store could not be reached; the lease then runs out by itself
    /// at `at_most_for`.
    fn release(&self, lease: Lease, at_least_for: Duration) -> Result<bool, LockError>;

    /// Extends `lease` while its run goes on (ShedLock's `LockExtender`): the lock is
    /// taken until `at_most_for` from the store's now, if `lease` is still the current,
    /// valid lease of its name (LK5). `Ok(true)` if it was extended; `Ok(false)` if it
    /// had run out or another holder took over, and nothing changed.
    ///
    /// The default answers [`LockError::Unsupported`]: a store that cannot extend makes
    /// [`Exclusive::keep_alive`] fail its extensions (counted and traced), and its runs
    /// then keep the lease they were given.
    /// # Errors
    /// [`LockError`] if the store could not be asked; the lease then runs out at its last
    /// extension plus `at_most_for`.
    fn extend(&self, lease: &Lease, at_most_for: Duration) -> Result<bool, LockError> {
        let _ = (lease, at_most_for);
        Err(LockError::Unsupported("this lock cannot extend a lease"))
    }

    /// How long ago the lock `name` was last acquired, on the store's clock (`None` if it
    /// never was): the start of the job's last run anywhere in the cluster, since a lease
    /// is taken only to run. [`Exclusive::catch_up`] reads it.
    ///
    /// The default answers [`LockError::Unsupported`] (no catch-up).
    /// # Errors
    /// [`LockError`] if the store could not be asked.
    fn last_acquired(&self, name: &str) -> Result<Option<Duration>, LockError> {
        let _ = name;
        Err(LockError::Unsupported(
            "this lock does not keep its last acquisition",
        ))
    }

    /// Pauses the job `name` on every node that shares this store (an operator's "stop
    /// the nightly report during the migration"): until `until` (wall-clock time, by the
    /// store's clock), or until [`resume`](Self::resume) if `None`; `by` says who (an
    /// operator, a node) for the task list and the logs. Each node then skips the job's
    /// runs that come due ([`LastRun::Paused`](crate::LastRun::Paused)) and keeps its
    /// schedule; a run in progress finishes. The pause is the store's, so it survives a
    /// restart of any node, and a node started meanwhile sees it at its first tick. A
    /// second pause replaces the first.
    ///
    /// The default answers [`LockError::Unsupported`].
    /// # Errors
    /// [`LockError`] if the store could not be asked, or cannot pause.
    fn pause(&self, name: &str, by: &str, until: Option<SystemTime>) -> Result<(), LockError> {
        let _ = (name, by, until);
        Err(LockError::Unsupported("this lock cannot pause a job"))
    }

    /// Ends a pause of the job `name` ([`pause`](Self::pause)): its next tick runs on one
    /// node again. `Ok(true)` if it was paused.
    ///
    /// The default answers [`LockError::Unsupported`].
    /// # Errors
    /// [`LockError`] if the store could not be asked, or cannot pause.
    fn resume(&self, name: &str) -> Result<bool, LockError> {
        let _ = name;
        Err(LockError::Unsupported("this lock cannot pause a job"))
    }

    /// The pause in force for the job `name` now, if any (one whose `until` has passed is
    /// none). Asked before each exclusive run; the default, for a store that cannot
    /// pause, is `Ok(None)`.
    /// # Errors
    /// [`LockError`] if the store could not be asked (the run is then skipped, as for a
    /// failed acquisition).
    fn paused(&self, name: &str) -> Result<Option<Pause>, LockError> {
        let _ = name;
        Ok(None)
    }
}

/// A job paused on every node ([`ClusterLock::pause`]), as the store keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pause {
    /// Who paused it (`pause`'s `by`).
    pub by: String,
    /// When, in wall-clock time by the store's clock.
    pub since: SystemTime,
    /// Until when; `None`: until resumed.
    pub until: Option<SystemTime>,
}

impl Pause {
    /// A pause by `by` since `since`, until `until` (for a store's implementation).
    pub fn new(by: impl Into<String>, since: SystemTime, until: Option<SystemTime>) -> Self {
        Pause {
            by: by.into(),
            since,
            until,
        }
    }
}

/// What an exclusive run did, in one enum
/// ([`run_exclusive_outcome`](crate::ScheduledThreadPoolExecutor::run_exclusive_outcome),
/// [`schedule_exclusive_outcome`](crate::ScheduledThreadPoolExecutor::schedule_exclusive_outcome)):
/// the same facts as `run_exclusive`'s `Result<Option<T>, LockError>`, with a paused job
/// told apart from a lease held elsewhere.
///
/// ```
/// use schedpool::cluster::{ClusterLock, Exclusive, ExclusiveOutcome, LocalLock};
/// use schedpool::ScheduledThreadPoolExecutor;
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let lock = Arc::new(LocalLock::new());
/// let pool = ScheduledThreadPoolExecutor::new(1);
/// let report = Exclusive::new(lock.clone(), "report", Duration::from_secs(60));
/// match pool.run_exclusive_outcome(&report, |lease| lease.token()) {
///     ExclusiveOutcome::Ran(token) => assert_eq!(token, 1),
///     other => panic!("{other:?}"),
/// }
/// lock.pause("report", "ops", None).unwrap();
/// let paused = pool.run_exclusive_outcome(&report, |_| ());
/// assert!(matches!(paused, ExclusiveOutcome::Paused(ref p) if p.by == "ops"));
/// assert_eq!(paused.into_result().unwrap(), None, "the nested shape: not run");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ExclusiveOutcome<T> {
    /// This node got the lease and ran the job: its output.
    Ran(T),
    /// Another node holds the lease: the job did not run here.
    HeldElsewhere,
    /// The job is paused on every node ([`ClusterLock::pause`]): it did not run.
    Paused(Pause),
    /// The lock's store could not be asked: the job did not run.
    StoreFailed(LockError),
}

impl<T> ExclusiveOutcome<T> {
    /// The output, if the job ran here.
    pub fn ran(self) -> Option<T> {
        match self {
            ExclusiveOutcome::Ran(out) => Some(out),
            _ => None,
        }
    }

    /// `true` if the job ran here.
    pub fn is_ran(&self) -> bool {
        matches!(self, ExclusiveOutcome::Ran(_))
    }

    /// The shape of `run_exclusive` and `schedule_exclusive`: `Ok(Some(output))` if it
    /// ran, `Ok(None)` if it was held elsewhere or paused, `Err` if the store failed.
    ///
    /// # Errors
    /// [`ExclusiveOutcome::StoreFailed`]'s [`LockError`].
    pub fn into_result(self) -> Result<Option<T>, LockError> {
        match self {
            ExclusiveOutcome::Ran(out) => Ok(Some(out)),
            ExclusiveOutcome::HeldElsewhere | ExclusiveOutcome::Paused(_) => Ok(None),
            ExclusiveOutcome::StoreFailed(e) => Err(e),
        }
    }
}

impl<T> From<ExclusiveOutcome<T>> for Result<Option<T>, LockError> {
    fn from(outcome: ExclusiveOutcome<T>) -> Self {
        outcome.into_result()
    }
}

impl<L: ClusterLock + ?Sized> ClusterLock for Arc<L> {
    fn try_acquire(&self, name: &str, at_most_for: Duration) -> Result<Option<Lease>, LockError> {
        (**self).try_acquire(name, at_most_for)
    }

    fn release(&self, lease: Lease, at_least_for: Duration) -> Result<bool, LockError> {
        (**self).release(lease, at_least_for)
    }

    fn extend(&self, lease: &Lease, at_most_for: Duration) -> Result<bool, LockError> {
        (**self).extend(lease, at_most_for)
    }

    fn last_acquired(&self, name: &str) -> Result<Option<Duration>, LockError> {
        (**self).last_acquired(name)
    }

    fn pause(&self, name: &str, by: &str, until: Option<SystemTime>) -> Result<(), LockError> {
        (**self).pause(name, by, until)
    }

    fn resume(&self, name: &str) -> Result<bool, LockError> {
        (**self).resume(name)
    }

    fn paused(&self, name: &str) -> Result<Option<Pause>, LockError> {
        (**self).paused(name)
    }
}

/// A held lock: what [`ClusterLock::try_acquire`] returns and
/// [`ClusterLock::release`] takes back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    name: Arc<str>,
    token: u64,
    at_most_for: Duration,
    acquired: Instant,
}

impl Lease {
    /// A lease of `name` with fencing token `token` (LK2), valid for `at_most_for` from
    /// now: for implementations of [`ClusterLock`].
    pub fn new(name: &str, token: u64, at_most_for: Duration) -> Self {
        Lease {
            name: Arc::from(name),
            token,
            at_most_for,
            acquired: Instant::now(),
        }
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The fencing token: larger for every later acquisition of the same name (LK2). A
    /// job can pass it to the systems it writes to, so that they refuse a write from a
    /// holder whose lease has run out.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// How long the lease lasts at most.
    pub fn at_most_for(&self) -> Duration {
        self.at_most_for
    }

    /// When this process got the lease (its own clock: for reports only, LK4).
    pub fn acquired(&self) -> Instant {
        self.acquired
    }
}

/// Why a [`ClusterLock`] could not answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum LockError {
    /// The store did not answer within this bound.
    Timeout(Duration),
    /// The store refused the request or could not be reached.
    Store(Box<dyn Error + Send + Sync>),
    /// The lock was configured wrongly (for example an invalid table name).
    Config(String),
    /// The store cannot do what was asked (a lock without [`ClusterLock::extend`]).
    Unsupported(&'static str),
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::Timeout(d) => write!(f, "the lock store did not answer within {d:?}"),
            LockError::Store(e) => {
                write!(f, "lock store error: {e}")?;
                // The causes too: a database error's own text says only "db error".
                let mut cause = e.source();
                while let Some(c) = cause {
                    write!(f, ": {c}")?;
                    cause = c.source();
                }
                Ok(())
            }
            LockError::Config(msg) => write!(f, "lock configuration error: {msg}"),
            LockError::Unsupported(what) => write!(f, "{what}"),
        }
    }
}

impl Error for LockError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            LockError::Store(e) => Some(&**e),
            _ => None,
        }
    }
}

/// What makes a job exclusive across the cluster: the lock, the lock's name (the same on
/// every node that runs the job), the lease's bounds, and optionally its keep-alive
/// ([`keep_alive`](Self::keep_alive)) and catch-up after downtime
/// ([`catch_up`](Self::catch_up)). Used by a periodic task
/// ([`Periodic::exclusive`](crate::Periodic::exclusive)), a one-shot
/// ([`schedule_exclusive`](crate::ScheduledThreadPoolExecutor::schedule_exclusive)) and
/// any closure ([`run_exclusive`](crate::ScheduledThreadPoolExecutor::run_exclusive)).
#[derive(Clone)]
pub struct Exclusive {
    pub(crate) lock: Arc<dyn ClusterLock>,
    pub(crate) name: Arc<str>,
    pub(crate) at_most_for: Duration,
    pub(crate) at_least_for: Duration,
    /// The rate limit of the store's warnings, shared by the spec's clones.
    pub(crate) warnings: Arc<crate::throttle::Throttle>,
    /// `Exclusive::keep_alive`: how often a running holder extends its lease.
    pub(crate) keep_alive: Option<Duration>,
    /// `Exclusive::catch_up`.
    pub(crate) catch_up: bool,
}

impl Exclusive {
    /// Each run holds `lock`'s lock `name` for at most `at_most_for` (ShedLock's
    /// `lockAtMostFor`: how long a crashed holder blocks the others; keep it well above
    /// the longest run). `at_least_for` is zero until set.
    pub fn new(lock: Arc<dyn ClusterLock>, name: impl Into<String>, at_most_for: Duration) -> Self {
        Exclusive {
            lock,
            name: Arc::from(name.into()),
            at_most_for,
            at_least_for: Duration::ZERO,
            warnings: Arc::default(),
            keep_alive: None,
            catch_up: false,
        }
    }

    /// Catch-up after downtime (Quartz's "fire once now" misfire instruction): when a
    /// fixed-rate or fixed-delay task with this spec is scheduled, and the store says the
    /// lock was last taken more than one period ago ([`ClusterLock::last_acquired`], on
    /// the store's clock; a lease is taken only to run, so that is the job's last run
    /// anywhere), the task's first run is due at once: one run, whatever the number of
    /// ticks missed, and then the schedule goes on from its own grid (a fixed-rate task's
    /// next run is the first deadline it would have had without catching up). The
    /// catch-up's lease is given back by that deadline whatever
    /// [`at_least_for`](Self::at_least_for) says (a catch-up has no tick of its own to
    /// protect), so the grid's first tick runs too. A lock never taken is not caught up
    /// (the job is new). If the store cannot be asked, or
    /// does not keep the time (a `ClusterLock` without `last_acquired`), the task is
    /// scheduled as usual, with a warning. All nodes that start together after downtime
    /// catch up at once: the lock gives the run to one of them, as for any tick. Ignored
    /// by a trigger and by a one-shot.
    #[must_use]
    pub fn catch_up(mut self) -> Self {
        self.catch_up = true;
        self
    }

    /// While a run holds the lease, extends it every `every` (on the pool's clock) to
    /// `at_most_for` from the store's now ([`ClusterLock::extend`], LK5; ShedLock's
    /// `KeepAliveLockProvider`). A job that may run for a minute or for an hour then takes
    /// an `at_most_for` of a few minutes: a live holder keeps the lock as long as its run
    /// lasts, and a crashed one blocks the others for at most its last extension plus
    /// `at_most_for`. `every` must be shorter than `at_most_for` to be of use; zero, or
    /// one not shorter, is taken as half of `at_most_for`.
    ///
    /// The extensions come from a thread of the run's own, started with the run and
    /// stopped (and joined) before the lease is given back. Each is counted in
    /// `PoolStats::lock_extended`; a failed one in `lock_failed`, traced as a warning, and
    /// tried again at the next interval; an extension that finds the lease gone (it ran
    /// out, or another node took over) stops them, and the run's release then reports the
    /// overrun.
    #[must_use]
    pub fn keep_alive(mut self, every: Duration) -> Self {
        let every = if every.is_zero() || every >= self.at_most_for {
            self.at_most_for / 2
        } else {
            every
        };
        self.keep_alive = Some(every);
        self
    }

    /// The lock stays taken until `d` after each acquisition, even if the run ended
    /// sooner (ShedLock's `lockAtLeastFor`): set it to a good part of the period, so that
    /// nodes whose schedules are slightly apart do not run the same tick one after the
    /// other. Capped at `at_most_for`.
    #[must_use]
    pub fn at_least_for(mut self, d: Duration) -> Self {
        self.at_least_for = d.min(self.at_most_for);
        self
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for Exclusive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exclusive")
            .field("name", &&*self.name)
            .field("at_most_for", &self.at_most_for)
            .field("at_least_for", &self.at_least_for)
            .field("keep_alive", &self.keep_alive)
            .field("catch_up", &self.catch_up)
            .finish_non_exhaustive()
    }
}

/// A node's default name in a store: the host name and the process id, `host:pid`.
#[cfg(any(feature = "postgres", feature = "redis"))]
fn default_node_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown-host".to_owned());
    format!("{host}:{}", std::process::id())
}
