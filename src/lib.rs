//! A scheduled thread pool in the spirit of Java's `ScheduledThreadPoolExecutor`: run
//! tasks after a delay, at a fixed rate or with a fixed delay, on a pool of worker threads,
//! with cancellable futures and O(log n) cancel.
//!
//! Workers pull tasks from an indexed `DelayedWorkQueue`: a heap whose entries know their
//! position, so cancelling removes a task at once instead of leaving it to rot in the
//! queue. Workers wait leader/follower style: one sleeps until the head's deadline, the
//! others without a timeout. The same heap serves two standalone queues from Java,
//! [`DelayQueue`] and [`PriorityBlockingQueue`].
//!
//! ```
//! use schedpool::ScheduledThreadPoolExecutor;
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! let pool = ScheduledThreadPoolExecutor::new(2);
//! let answer = pool.schedule(Duration::from_millis(10), || 6 * 7).unwrap();
//! let ticks = Arc::new(AtomicU32::new(0));
//! let t = ticks.clone();
//! let heartbeat = pool
//!     .schedule_at_fixed_rate(Duration::ZERO, Duration::from_millis(5), move || {
//!         t.fetch_add(1, Ordering::Relaxed);
//!     })
//!     .unwrap();
//! assert_eq!(answer.get().unwrap(), 42);
//! heartbeat.cancel();
//! pool.close();
//! assert!(ticks.load(Ordering::Relaxed) >= 1);
//! ```
//!
//! # Guarantees
//! - No task runs before its deadline.
//! - Tasks with equal deadlines run in submission order.
//! - Runs of one periodic task never overlap, and each run happens-before the next.
//! - A task's effects happen-before [`ScheduledFuture::get`] returns.
//! - Dropping a [`ScheduledFuture`] does not cancel its task.
//! - A panicking task never kills its worker; its future reports the panic.
//! - With `remove_on_cancel` (the default), [`ScheduledFuture::cancel`] has removed the
//!   task from the queue, in O(log n), and dropped its closure when it returns.
//!
//! # Testing with virtual time
//! Build the executor with [`Builder::clock`] and a [`ManualClock`]: tasks fire when
//! [`ManualClock::advance`] reaches their deadline, with no real-time waiting, so an hour
//! of schedule runs in milliseconds.
//!
//! # Beyond Java
//! [`ScheduledThreadPoolExecutor::schedule_periodic`] takes a [`Periodic`] spec: a
//! missed-tick policy ([`MissedTicks`]), a user [`Trigger`] (or, with the cargo feature
//! `cron`, a `CronTrigger`), a panic policy ([`OnPanic`]), `max_lateness` and `max_runs`.
//! [`ScheduledFuture::reschedule`] moves a pending or running task in O(log n)
//! ([`reschedule_after`](ScheduledFuture::reschedule_after): by a delay from now);
//! [`ScheduledThreadPoolExecutor::wait_idle`] waits until nothing is due or running, which
//! makes `ManualClock` tests of multi-threaded pools deterministic; [`PoolStats`] reports
//! late and skipped runs and a lateness summary.
//!
//! # Async jobs
//! [`ScheduledThreadPoolExecutor::schedule_async`] and
//! [`schedule_periodic_async`](ScheduledThreadPoolExecutor::schedule_periodic_async) take
//! a closure that makes a future; the job's worker awaits it on an [`AsyncRuntime`]
//! (tokio's with the feature `tokio`) with a closure's semantics, and an
//! [`interrupt`](ScheduledFuture::interrupt) or `shutdown_now` drops it at its await
//! point. The [`ScheduledFuture`] is itself a `Future`, for async callers.
//!
//! # Across replicas
//! [`Periodic::exclusive`] makes a periodic job run on one node at a time, cluster-wide:
//! each run takes a time-bounded lock ([`cluster`]) in a store the nodes share, and a node
//! that finds it held skips that run (ShedLock's model). `PgLock` keeps the locks in
//! PostgreSQL, with the database's clock; `RedisLock` in Redis, with the server's clock;
//! [`cluster::LocalLock`] in the process. The contract kit (`cluster::contract`) proves
//! any store, a store of your own included.
//!
//! # Observability
//! `tracing` spans and events, target `schedpool` (no subscriber is installed), each with
//! the field `pool` (the pool's name, `Builder::name`): a `task` span per run (trace level,
//! or `Builder::task_span_level`) with fields `id`, `task_name` (`Periodic::name`,
//! [`ScheduledThreadPoolExecutor::named`]; not `name`, which JSON formatters use for the
//! span's own name; left out for an unnamed task, as in the task's events), `kind` and
//! `lateness_us`, which follows from the span the task was submitted in (when `schedpool`
//! is traced at the span's level); `warn` on a late start and on a rejection (each at most
//! once a second per pool, with `suppressed`, the occurrences since the last line, and
//! `occurrences`, the ones the line stands for; what is still counted is written at
//! shutdown and termination, so a pool's `occurrences` add up to its counters), `warn` on
//! a failed run of a fallible task (the error with `{:#}`, which prints an `anyhow`
//! error's causes), `error` on
//! a panicking task, `info` on shutdown and termination, `debug` on worker start and exit;
//! for exclusive jobs, `debug` on each lock acquired or held elsewhere and `warn` on a lock
//! store that fails (at most once a second per task) and on a run that outlasted its
//! lease.
//!
//! The design notes ship with the crate and are rendered here: [`design`] (the
//! architecture, its invariants and orderings) and [`java`] (the mapping from Java's
//! `ScheduledThreadPoolExecutor`, behaviour by behaviour). The measurements are in the
//! repository's `docs/BENCHMARKS.md`, the proofs and tests in `docs/RELIABILITY.md`.
//!
//! # Cargo features
//! - `cron` (default): [`CronTrigger`], cron expressions in UTC, local time or a named
//!   time zone. `default-features = false` leaves its dependencies (croner, jiff) out.
//! - `postgres`: `cluster::PgLock`, cluster locks in a PostgreSQL table (the `postgres`
//!   crate).
//! - `postgres-tls` (implies `postgres`): `PgLock` over TLS (rustls with ring; no
//!   OpenSSL), configured as libpq is: `sslmode` (`require`, `verify-ca`,
//!   `verify-full`), `sslrootcert` (a PEM file, or `system` for the operating system's
//!   store), client certificates (`sslcert`, `sslkey`), the variables `PGSSLMODE`,
//!   `PGSSLROOTCERT`, `PGSSLCERT`, `PGSSLKEY`, and the defaults in `~/.postgresql`.
//! - `redis`: `cluster::RedisLock`, cluster locks in Redis (5 or later, Valkey too; the
//!   `redis` crate's synchronous client): `redis://` URLs, ACL user and password,
//!   database index, key prefix.
//! - `redis-tls` (implies `redis`): `RedisLock` over TLS (`rediss://`; rustls with ring,
//!   no OpenSSL): the system's roots or a CA file, a client certificate.
//! - `contract`: `cluster::contract`, the store contract as a kit that runs against any
//!   `ClusterLock` (no dependencies).
//! - `metrics`: the pools' counters, gauges and histograms through the `metrics` facade,
//!   so any of its exporters (Prometheus, OpenTelemetry, StatsD) shows them with no
//!   code of yours: every series labelled with the pool's name, published every
//!   [`Builder::metrics_interval`] by one thread of the process. A run pays a clock
//!   reading (its duration) and one `Relaxed` add; a run of a task with a series of its
//!   own (a named periodic task, `Named::metered`, at most
//!   `Builder::max_task_series` names a pool) also a call into the recorder. The series:
//!   [`metrics`].
//! - `tokio`: [`AsyncRuntime`] for tokio's `Handle` and `Runtime`, so that async jobs
//!   ([`ScheduledThreadPoolExecutor::schedule_async`] and its periodic forms) await on a
//!   tokio runtime (its timers and IO). The async jobs themselves and [`ParkingRuntime`]
//!   need no feature. And `on_tokio_timer` for a [`DelayQueue`]'s async takes
//!   (`NextExpired::on_tokio_timer`, `Expirations::on_tokio_timer`): they sleep on
//!   tokio's timer wheel instead of the queue's thread.
//! - `serde`: `serde::Serialize` for [`TaskInfo`], [`PoolStats`], [`LastRun`] and
//!   [`TaskKind`], with wall-clock times in RFC 3339: the task list as JSON.

#![doc(test(attr(deny(warnings))))]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The metrics thread's list of pools is a `static`, which loom's types cannot be.
#[cfg(all(loom, feature = "metrics"))]
compile_error!("the loom models run without the `metrics` feature");

/// Records a pool thread's state change for the tail analysis (`probe.rs`); nothing unless
/// the crate is built with `--cfg schedpool_probe`.
macro_rules! probe {
    ($state:ident) => {
        #[cfg(all(schedpool_probe, not(loom)))]
        {
            let _ = $crate::probe::set($crate::probe::State::$state);
        }
    };
}

mod body;
mod builder;
mod clock;
pub mod cluster;
mod config;
#[cfg(feature = "cron")]
mod cron;
mod delay_queue;
mod error;
mod executor;
mod future;
mod pool;
mod priority_queue;
#[cfg(all(schedpool_probe, not(loom)))]
#[doc(hidden)]
pub mod probe;
mod queue;
mod runtime;
mod schedule;
#[cfg(feature = "serde")]
mod serialize;
mod stats;
mod sync;
mod task;
mod telemetry;
mod throttle;
mod trigger;
mod user;

pub use body::TaskContext;
pub use builder::Builder;
pub use clock::{ManualClock, WallClock};
pub use config::RejectionPolicy;
#[cfg(feature = "cron")]
#[cfg_attr(docsrs, doc(cfg(feature = "cron")))]
pub use cron::{CronError, CronTrigger};
pub use delay_queue::{DelayKey, DelayQueue, Expirations, Expired, NextExpired};
pub use error::{PanicPayload, ScheduleError, SpawnError, TaskError};
pub use executor::Named;
pub use executor::{ScheduledThreadPoolExecutor, Terminated, WeakExecutor};
pub use future::{CancelHandle, PendingTask, ScheduledFuture};
pub use priority_queue::{PriorityBlockingQueue, PriorityKey};
pub use queue::SpinPolicy;
pub use runtime::{AsyncRuntime, ParkingRuntime};
pub use schedule::{Backoff, MissedTicks, Next, OnPanic, Periodic, Trigger, TriggerContext};
pub use stats::{LastRun, PoolStats, TaskInfo, TaskKind};

/// The design notes (`docs/DESIGN.md`): the architecture, its invariants and orderings.
#[doc = include_str!("../docs/DESIGN.md")]
pub mod design {}

/// The metrics the cargo feature `metrics` publishes, and how a task list and the logs
/// join them (`docs/METRICS.md`).
#[doc = include_str!("../docs/METRICS.md")]
pub mod metrics {}

/// Java's `ScheduledThreadPoolExecutor` mapped to this crate (`docs/JAVA.md`).
#[doc = include_str!("../docs/JAVA.md")]
pub mod java {}

/// The README's example, compiled and run as a doctest so it cannot drift.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
