//! Shutdown and the run-after-shutdown policies (E3, E4, E5 in `pool/mod.rs`): the run
//! state changed before the pass over every shard, the policies applied under every
//! shard's lock, the removed tasks completed outside it while a finisher slot keeps
//! termination back, the idle workers woken when the queue drains, and the termination
//! line.

use crate::sync::Ordering;

use super::control::RunState;
use super::entry::{All, Entry};
use super::{Policy, Pool};
use crate::sync::Arc;
use crate::task::{state::State, Suspended, TaskRef};

impl Pool {
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
        // The fields are the latest suppressed occurrence's (`throttle.rs`, `Sampled`).
        if let Some((n, last)) = self.late_log.flush() {
            let id = last.as_ref().map(|l| l.id);
            let task_name = last.as_ref().and_then(|l| l.task_name.as_deref());
            let lateness_us = last.as_ref().map(|l| l.lateness_us);
            crate::user::traced(
                || tracing::warn!(target: "schedpool", pool = self.name(), id, task_name, lateness_us, suppressed = n, occurrences = n, "task started late"),
            );
        }
        #[cfg(feature = "metrics")]
        if let Some((n, last)) = self.task_series.overflow_log.flush() {
            self.task_series.warn(self.name(), last.as_deref(), n, n);
        }
        if let Some((n, last)) = self.reject_log.flush() {
            let reason = last
                .as_ref()
                .map(|r| tracing::field::display(r.reason.clone()));
            let policy = last.as_ref().map(|r| tracing::field::debug(r.policy));
            crate::user::traced(
                || tracing::warn!(target: "schedpool", pool = self.name(), reason, policy, suppressed = n, occurrences = n, "task rejected"),
            );
        }
    }

    /// The pool terminated: its `terminated()` futures are woken (every caller got `true`
    /// from a latch and holds no lock, U1), then the last counts and the line.
    pub(super) fn log_terminated(&self) {
        self.control.wake_terminated();
        self.flush_logs();
        #[cfg(feature = "metrics")]
        self.publish_metrics(); // the final values (`publish.rs`)
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
            let h = e.task.header();
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
                let won = e.task.header().cancel();
                if won {
                    crate::stats::bump(&self.counters.cancelled);
                }
                (e, won)
            })
            .collect()
    }

    /// Stops the pool and hands back the queued tasks not yet cancelled, in deadline order.
    pub(crate) fn shutdown_now(self: &Arc<Self>) -> Vec<TaskRef> {
        let before = self.control.shut_down(RunState::Stop); // E2: before the pass
        self.sleepers.wake(); // S1: running tasks asleep in `TaskContext::sleep` or awaiting stop
                              // Suspended runs nobody polls end here, their futures dropped (`awaiting.rs`).
        self.stop_claimed(self.sleepers.stop_runs(None));
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
        // Woken suspended runs in the queue are the pool's: they end here too (AW2 in
        // `awaiting.rs`). The other tasks are the caller's to run or drop.
        let (suspended, tasks): (Vec<TaskRef>, Vec<TaskRef>) = entries
            .into_iter()
            .map(|e| e.task)
            .partition(|task| task.as_any().is::<Suspended>());
        for run in suspended {
            if Suspended::take_queued(&run) {
                self.poll_off_worker(run);
            }
        }
        self.flush_logs();
        self.finisher_done();
        let pending = tasks
            .into_iter()
            .filter(|t| t.header().state() == State::Scheduled);
        pending.collect()
    }

    pub(crate) fn purge(&self) -> usize {
        let removed = self
            .queue
            .lock_all()
            .extract_if(|e| e.task.header().state() == State::Cancelled);
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

/// E3: after shutdown, a drained queue wakes every idle worker so it can exit. Called
/// with no shard locked, after a removal; `is_empty_synced` makes sure that of two
/// threads emptying the last two shards at once, one sees both empty.
pub(super) fn wake_if_drained(pool: &Pool) {
    if !pool.control.load().is_running() && pool.queue.is_empty_synced() {
        pool.queue.wake_all();
    }
}

/// Completes the futures of tasks removed by a policy, outside the lock (I4).
pub(super) fn finish_removed(removed: Vec<(Entry, bool)>) {
    for (entry, won) in removed {
        if won {
            entry.task.finish_cancelled();
        }
        crate::task::drop_quietly(entry);
    }
}
