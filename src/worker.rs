//! The worker loop: take a task, run it, account for it, re-queue it if periodic; exit
//! when `Shared::next_task` says so. Panic containment and the thread hooks live here.
//!
//! # Invariants
//! - W1: a worker holds its worker slot from its reservation until `next_task` releases
//!   it or, if the loop itself unwinds (a crate bug: user code is contained), until
//!   [`ExitGuard`] releases it; either way `Shared::worker_exited` runs exactly once.
//! - W2: user code (task bodies, hooks, destructors of task outputs) runs with no lock
//!   held, inside `catch_unwind`.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::builder::Hook;
use crate::clock;
use crate::executor::{Entry, Shared};
use crate::stats;
use crate::sync::Arc;
use crate::task::{drop_quietly, Job};

thread_local! {
    /// The address of the `Shared` this thread works for; 0 on other threads.
    static CURRENT_POOL: Cell<usize> = const { Cell::new(0) };
}

/// `true` on one of `shared`'s own worker threads (so `close` must not wait for itself).
pub(crate) fn is_worker_of(shared: &Shared) -> bool {
    CURRENT_POOL.with(|p| p.get() == shared as *const Shared as usize)
}

/// W1: runs `worker_exited` even if the loop unwinds.
struct ExitGuard {
    shared: Arc<Shared>,
    released: bool,
    active: bool,
}

impl Drop for ExitGuard {
    fn drop(&mut self) {
        self.shared.worker_exited(self.released, self.active);
    }
}

/// The body of worker thread `index`.
pub(crate) fn run(shared: Arc<Shared>, index: usize) {
    CURRENT_POOL.with(|p| p.set(Arc::as_ptr(&shared) as usize));
    reduce_timer_slack();
    tracing::debug!(target: "schedpool", worker = index, "worker started");
    let mut guard = ExitGuard {
        shared,
        released: false,
        active: false,
    };
    run_hook(
        guard.shared.config.on_thread_start.as_ref(),
        "on_thread_start",
    );
    let mut requeue = None;
    loop {
        let finished = guard.active;
        guard.active = false;
        match guard.shared.next_task(finished, requeue.take()) {
            Some((entry, now)) => {
                guard.active = true;
                requeue = run_task(&guard.shared, index, entry, now);
            }
            None => {
                guard.released = true;
                break;
            }
        }
    }
    run_hook(
        guard.shared.config.on_thread_stop.as_ref(),
        "on_thread_stop",
    );
    tracing::debug!(target: "schedpool", worker = index, "worker exiting");
    CURRENT_POOL.with(|p| p.set(0));
}

/// Runs one task taken from the queue at `now` by worker `index` (W2), and records its
/// lateness (start − deadline). Returns a periodic task's next run, for `next_task` to
/// re-queue in the same critical section as the next take.
fn run_task(
    shared: &Arc<Shared>,
    index: usize,
    entry: Entry,
    now: clock::Ticks,
) -> Option<(Arc<dyn Job>, clock::Ticks)> {
    let Entry {
        deadline,
        value: job,
        ..
    } = entry;
    let header = job.header();
    let lateness = clock::since(now, deadline);
    let span = tracing::trace_span!(
        target: "schedpool",
        "task",
        id = header.id,
        kind = job.schedule().name(),
        lateness_us = lateness.as_micros() as u64,
    );
    let report = span.in_scope(|| job.run(now, shared.clock(), Some(&shared.counters)));
    if report.ran {
        shared.lateness.record(index, now.saturating_sub(deadline));
        if lateness > shared.config.late_threshold {
            stats::bump(&shared.counters.late);
            tracing::warn!(
                target: "schedpool",
                id = header.id,
                lateness_us = lateness.as_micros() as u64,
                "task started late"
            );
        }
    }
    if report.skipped {
        stats::bump(&shared.counters.skipped);
        tracing::debug!(target: "schedpool", id = header.id, "periodic run skipped (max_lateness)");
    }
    if let Some(msg) = report.panic {
        tracing::error!(target: "schedpool", id = header.id, panic = %msg, "task panicked");
    }
    match report.next {
        Some(next) => Some((job, next)),
        None => {
            drop_quietly(job); // may drop the task and an unclaimed output (W2)
            None
        }
    }
}

/// Linux lets a timed sleep end up to the thread's "timer slack" late (50 µs by default)
/// so the kernel can batch wake-ups. A leader sleeping until a deadline wants the deadline:
/// workers ask for 1 ns of slack. (`rustix` wraps `prctl(PR_SET_TIMERSLACK)` without
/// `unsafe` in this crate.) Elsewhere this does nothing.
fn reduce_timer_slack() {
    #[cfg(target_os = "linux")]
    if let Err(err) = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1)) {
        tracing::debug!(target: "schedpool", error = %err, "could not reduce the timer slack");
    }
}

/// Runs a thread hook; a panic is caught and traced (API.md: the pool goes on).
fn run_hook(hook: Option<&Hook>, name: &'static str) {
    if let Some(hook) = hook {
        if catch_unwind(AssertUnwindSafe(|| hook())).is_err() {
            tracing::error!(target: "schedpool", hook = name, "thread hook panicked");
        }
    }
}
