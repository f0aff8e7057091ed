//! The pool's metrics through the `metrics` facade (cargo feature `metrics`): what one
//! publication hands the recorder ([`Pool::publish_metrics`]), and the one thread of the
//! process that publishes every watched pool at its interval ([`watch`]). The series and
//! why runs cost the recorder nothing are in `telemetry.rs`; `docs/METRICS.md` lists them
//! for users.
//!
//! # Design
//! A publication reads what the pool keeps anyway: `stats()` (the counters, the gauges
//! read where they live), and the lateness and run-time histograms. Counters go to the
//! recorder as totals (`Counter::absolute`, which a recorder keeps monotonic), gauges as
//! values, histograms as deltas: each bucket's count since the last publication,
//! recorded at the bucket's value (`stats::Handed` keeps the counts already handed over,
//! so two publications never hand the same runs over twice). Labels: `pool`, and
//! `outcome` on the runs counter.
//!
//! The thread starts with the first watched pool, sleeps until the earliest publication
//! due, and ends when no live pool is left (a later pool starts it again). It holds only
//! `Weak` references: a pool's publications end when it is dropped; a pool that
//! terminates publishes its final values itself (`Pool::log_terminated`) and is then
//! forgotten.
//!
//! # Invariants
//! - MX1: the recorder (user code) is called with no lock of the crate held (U1) and
//!   through the door (U2: a recorder that panics is reported once a second and costs
//!   the rest of that publication's calls; counters and gauges are totals, so the next
//!   publication sets them right, and histograms follow MX2); `Pool::handed`'s lock
//!   is held only to take or give back a delta, the sampler's only to read and update its
//!   list.
//! - MX2: every run recorded in the pool's histograms is handed to the recorder once, by
//!   one publication: the delta is taken and the counts advanced in one critical
//!   section of `Pool::handed`, and the shares a panicking recorder did not take
//!   (each bucket's `record_many` that did not return) are given back in another, for the
//!   next publication. (A `record_many` that panics half-way may have kept part of its
//!   share, which is then handed again: the recorder's own doing.)

use std::time::{Duration, Instant};

use metrics::{counter, gauge, histogram, Unit};

use super::shared::Pool;
use crate::stats;
use crate::sync::{Arc, Condvar, Mutex, Weak};
use crate::telemetry::names;
use crate::user;

/// Tells the recorder what each series means (each publication: a recorder installed
/// after the first one learns it too; recorders keep the first description).
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(names::SUBMITTED, "Tasks accepted by the pool");
    describe_counter!(names::REJECTED, "Submissions the pool refused");
    describe_counter!(
        names::CANCELLED,
        "Tasks cancelled before they ended by themselves"
    );
    describe_counter!(names::RUNS, "Runs of tasks, by outcome");
    describe_counter!(
        names::CONTROLS,
        "Pauses, resumes and extra runs asked for by operators"
    );
    describe_counter!(
        names::LATE,
        "Runs that started later than the late threshold"
    );
    describe_counter!(
        names::LOCK_EXTENDED,
        "Cluster leases extended by keep-alive"
    );
    describe_counter!(
        names::LOCK_OVERRUNS,
        "Exclusive runs that outlasted their lease"
    );
    describe_counter!(names::LOCK_ERRORS, "Failed calls to a cluster lock's store");
    describe_histogram!(names::LATENESS, Unit::Seconds, "Run start minus deadline");
    describe_histogram!(names::RUN_DURATION, Unit::Seconds, "Run durations");
    describe_histogram!(
        names::TASK_RUN_DURATION,
        Unit::Seconds,
        "Run durations of named tasks"
    );
    describe_gauge!(names::QUEUED, "Tasks waiting in the queue");
    describe_gauge!(names::WORKERS, "Live worker threads");
    describe_gauge!(names::ACTIVE, "Workers running a task");
}

impl Pool {
    /// Hands the pool's counters, gauges and new histogram counts to the recorder
    /// installed now (`ScheduledThreadPoolExecutor::publish_metrics`; the sampler; the
    /// termination). MX1: no lock held while the recorder runs.
    pub(crate) fn publish_metrics(&self) {
        let s = self.stats();
        let c = &self.counters;
        let (lateness, run_time) = {
            let mut seen = self.handed.lock();
            let seen = &mut *seen;
            (
                seen.lateness.delta(&self.lateness),
                seen.run_time.delta(&self.run_time),
            )
        };
        let pool = self.name();
        let run_panicked = stats::read(&c.run_panicked);
        let runs = [
            (
                "completed",
                s.completed_task_count
                    .saturating_sub(run_panicked)
                    .saturating_sub(s.failed_runs),
            ),
            ("panicked", run_panicked),
            ("failed", s.failed_runs),
            ("skipped", s.skipped_runs),
            ("paused", s.paused_runs),
            ("lock_held", s.lock_skipped),
            ("lock_failed", stats::read(&c.lock_failed_runs)),
        ];
        let controls = [
            ("pause", stats::read(&c.paused_tasks)),
            ("resume", stats::read(&c.resumed_tasks)),
            ("run_now", stats::read(&c.run_now_tasks)),
        ];
        // How many shares of each histogram reached the recorder (MX2: the rest goes back).
        let mut recorded = (0, 0);
        let published = user::contain(|| {
            describe();
            let p = || pool.to_owned();
            counter!(names::SUBMITTED, "pool" => p()).absolute(s.task_count);
            counter!(names::REJECTED, "pool" => p()).absolute(s.rejected_count);
            counter!(names::CANCELLED, "pool" => p()).absolute(s.cancelled_count);
            for (outcome, n) in runs {
                counter!(names::RUNS, "pool" => p(), "outcome" => outcome).absolute(n);
            }
            for (action, n) in controls {
                counter!(names::CONTROLS, "pool" => p(), "action" => action).absolute(n);
            }
            counter!(names::LATE, "pool" => p()).absolute(s.late_count);
            counter!(names::LOCK_EXTENDED, "pool" => p()).absolute(s.lock_extended);
            counter!(names::LOCK_OVERRUNS, "pool" => p()).absolute(s.lock_overruns);
            counter!(names::LOCK_ERRORS, "pool" => p()).absolute(s.lock_failed);
            gauge!(names::QUEUED, "pool" => p()).set(s.queued as f64);
            gauge!(names::WORKERS, "pool" => p()).set(s.pool_size as f64);
            gauge!(names::ACTIVE, "pool" => p()).set(s.active_count as f64);
            let late = histogram!(names::LATENESS, "pool" => p());
            for share in &lateness {
                late.record_many(
                    share.secs,
                    usize::try_from(share.count).unwrap_or(usize::MAX),
                );
                recorded.0 += 1;
            }
            let runs = histogram!(names::RUN_DURATION, "pool" => p());
            for share in &run_time {
                runs.record_many(
                    share.secs,
                    usize::try_from(share.count).unwrap_or(usize::MAX),
                );
                recorded.1 += 1;
            }
        });
        if let Err(panic) = published {
            {
                let mut seen = self.handed.lock(); // MX2: for the next publication
                seen.lateness.give_back(&lateness[recorded.0..]);
                seen.run_time.give_back(&run_time[recorded.1..]);
            }
            user::report(user::Door::Recorder, panic);
        }
    }
}

/// The publishing thread's list of pools (MX1: held only to read and update it).
struct Sampler {
    state: Mutex<Watching>,
    changed: Condvar,
}

#[derive(Default)]
struct Watching {
    pools: Vec<Watched>,
    /// A thread is serving the list.
    running: bool,
}

struct Watched {
    pool: Weak<Pool>,
    every: Duration,
    next: Instant,
}

static SAMPLER: Sampler = Sampler {
    state: Mutex::new(Watching {
        pools: Vec::new(),
        running: false,
    }),
    changed: Condvar::new(),
};

/// Publishes `pool` every `every` from now on, until it is dropped or terminates.
pub(crate) fn watch(pool: &Arc<Pool>, every: Duration) {
    let start = {
        let mut w = SAMPLER.state.lock();
        w.pools.push(Watched {
            pool: Arc::downgrade(pool),
            every,
            next: Instant::now() + every,
        });
        !std::mem::replace(&mut w.running, true)
    };
    if start {
        let spawned = crate::sync::thread::Builder::new()
            .name("schedpool-metrics".into())
            .spawn(serve);
        if let Err(err) = spawned {
            SAMPLER.state.lock().running = false; // the next pool tries again
            user::traced(
                || tracing::error!(target: "schedpool", error = %err, "could not start the metrics thread; metrics are published at termination and by publish_metrics"),
            );
        }
    } else {
        SAMPLER.changed.notify_one();
    }
}

/// The publishing thread: publishes each pool when due, sleeps until the next is.
/// Pools are upgraded only to publish them, and dropped after the lock is released (a
/// last reference's drop runs user code: U1).
fn serve() {
    let mut done: Vec<Weak<Pool>> = Vec::new();
    loop {
        let due: Vec<Arc<Pool>> = {
            let mut w = SAMPLER.state.lock();
            w.pools
                .retain(|p| p.pool.strong_count() > 0 && !done.iter().any(|d| d.ptr_eq(&p.pool)));
            done.clear();
            loop {
                if w.pools.is_empty() {
                    w.running = false;
                    return;
                }
                let now = Instant::now();
                let due: Vec<Arc<Pool>> = w
                    .pools
                    .iter_mut()
                    .filter(|p| p.next <= now)
                    .filter_map(|p| {
                        p.next = now + p.every;
                        p.pool.upgrade()
                    })
                    .collect();
                if !due.is_empty() {
                    break due;
                }
                let next = w.pools.iter().map(|p| p.next).min().expect("not empty");
                SAMPLER.changed.wait_until(&mut w, next);
                w.pools.retain(|p| p.pool.strong_count() > 0);
            }
        };
        for pool in due {
            // A terminated pool published its final values itself.
            if pool.is_terminated() {
                done.push(Arc::downgrade(&pool));
            } else {
                pool.publish_metrics();
            }
            user::drop_quietly(pool); // may be the last reference: its drop runs user code
        }
    }
}
