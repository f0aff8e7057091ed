//! [`Guarded`]: what a periodic spec adds around each run of its closure: the link of the
//! run's span to the submitter's span, and the cluster lock of an
//! [`exclusive`](crate::Periodic::exclusive) task (the lease protocol is in `mod.rs`).
//!
//! It sits on the task layer's run environment (`task::RunCx`: the pool's name through
//! `task::Host`, the counters) and is built by
//! the executor's handle around every periodic closure, like the context adaptors; the
//! pool never sees it.
//!
//! An exclusive run: `try_acquire`; held elsewhere, or the store failed, and the run is
//! skipped (`Step::Skip`: not a run, the schedule goes on); else the closure runs and the
//! lease is given back when it returns or unwinds (`Held`'s `Drop`), with the spec's
//! `at_least_for`. Every outcome is counted in the pool's counters and traced; failures
//! of the store are warnings at most once a second per task (`Throttle`).

use std::time::Duration;

use super::{Exclusive, Lease, LockError};
use crate::error::run_caught;
use crate::stats::{self, Counters};
use crate::task::{drop_quietly, Declined, PeriodicBody, RunCx, Step};
use crate::throttle::Throttle;

/// A periodic closure with its span link and cluster lock (either may be absent).
pub(crate) struct Guarded<B> {
    body: B,
    /// The submitter's span (`task::Linked` explains why the span itself is held).
    parent: Option<tracing::Span>,
    lock: Option<Box<Locking>>,
}

/// An exclusive task's lock and the rate limit of its warnings.
struct Locking {
    spec: Exclusive,
    warnings: Throttle,
}

impl<B: PeriodicBody> Guarded<B> {
    pub(crate) fn new(body: B, parent: Option<tracing::Span>, lock: Option<Exclusive>) -> Self {
        Guarded {
            body,
            parent,
            lock: lock.map(|spec| {
                Box::new(Locking {
                    spec,
                    warnings: Throttle::default(),
                })
            }),
        }
    }
}

/// The pool's name and counters for a run's traces (empty and none outside a pool).
fn whose<'a>(cx: &'a RunCx<'a>) -> (&'a str, Option<&'a Counters>) {
    let pool = cx.env.pool.map_or("", |p| p.name());
    (pool, cx.env.counters)
}

impl<B: PeriodicBody> PeriodicBody for Guarded<B> {
    type Output = B::Output;

    fn call(&mut self, cx: &RunCx<'_>) -> Step {
        if let Some(parent) = &self.parent {
            crate::task::link_to(parent);
        }
        let Some(locking) = self.lock.as_deref() else {
            return self.body.call(cx);
        };
        let spec = &locking.spec;
        let (pool, counters) = whose(cx);
        match spec.lock.try_acquire(&spec.name, spec.at_most_for) {
            Ok(Some(lease)) => {
                bump(counters, |c| &c.lock_acquired);
                tracing::debug!(target: "schedpool", pool, lock = &*spec.name, token = lease.token(), "cluster lock acquired");
                let held = Held {
                    locking,
                    lease: Some(lease),
                    started: cx.env.clock.now(),
                    cx,
                };
                let step = self.body.call(&RunCx {
                    lease: held.lease.as_ref(),
                    ..*cx
                });
                drop(held); // gives the lease back (also on unwind)
                step
            }
            Ok(None) => {
                bump(counters, |c| &c.lock_skipped);
                tracing::debug!(target: "schedpool", pool, lock = &*spec.name, "run skipped: the cluster lock is held elsewhere");
                Step::Skip(Declined::LockHeld)
            }
            Err(error) => {
                bump(counters, |c| &c.lock_failed);
                if let Some(suppressed) = locking.warnings.admit() {
                    tracing::warn!(target: "schedpool", pool, lock = &*spec.name, error = %error, suppressed, "run skipped: the cluster lock could not be acquired");
                }
                Step::Skip(Declined::LockFailed)
            }
        }
    }

    fn output(&mut self) -> B::Output {
        self.body.output()
    }

    fn last_failed(&self) -> bool {
        self.body.last_failed()
    }
}

/// A lease held for one run; dropping it gives it back.
struct Held<'a> {
    locking: &'a Locking,
    lease: Option<Lease>,
    /// When the run took the lease, on the pool's clock (a `ManualClock`'s time in a
    /// test): the overrun warning's `ran_ms`.
    started: crate::clock::Ticks,
    cx: &'a RunCx<'a>,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let Some(lease) = self.lease.take() else {
            return;
        };
        let spec = &self.locking.spec;
        let (pool, counters) = whose(self.cx);
        let token = lease.token();
        let ran = crate::clock::since(self.cx.env.clock.now(), self.started);
        // A store's panic is contained here: this may run while the closure's own panic
        // unwinds, where a second panic would abort the process.
        let released = match run_caught(|| spec.lock.release(lease, spec.at_least_for)) {
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
                tracing::warn!(
                    target: "schedpool",
                    pool,
                    lock = &*spec.name,
                    token,
                    ran_ms = millis(ran),
                    at_most_for_ms = millis(spec.at_most_for),
                    "a run outlasted its cluster lock's at_most_for; another node may have run the job meanwhile"
                );
            }
            Err(error) => {
                bump(counters, |c| &c.lock_failed);
                if let Some(suppressed) = self.locking.warnings.admit() {
                    tracing::warn!(target: "schedpool", pool, lock = &*spec.name, token, error = %error, suppressed, "the cluster lock could not be released; it runs out at at_most_for");
                }
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
