//! What the pool shows of itself: the statistics snapshot and the snapshot of the
//! queued tasks. Reads only: each takes every shard's lock once, briefly.

use super::shared::Pool;
use crate::clock::Ticks;
use crate::stats::{self, PoolStats, TaskInfo};
use crate::task::{state::State, TaskRef};

impl Pool {
    /// The counters, the lateness summary and the queue's size
    /// (`ScheduledThreadPoolExecutor::stats`).
    pub(crate) fn stats(&self) -> PoolStats {
        let (lateness_p50, lateness_p99, lateness_max) = self.lateness.summary();
        let (queued, submitted) = {
            let mut all = self.queue.lock_all();
            let submitted: u64 = all.shards().map(|g| g.ext().submitted).sum();
            (all.len(), submitted)
        };
        let c = &self.counters;
        PoolStats {
            core_pool_size: self.core_pool_size(),
            pool_size: self.control.load().workers(),
            active_count: self.queue.active(),
            largest_pool_size: self.control.largest(),
            queued,
            task_count: stats::read(&c.task_count) + submitted,
            completed_task_count: stats::read(&c.completed),
            rejected_count: stats::read(&c.rejected),
            panicked_count: stats::read(&c.panicked),
            late_count: stats::read(&c.late),
            skipped_runs: stats::read(&c.skipped),
            failed_runs: stats::read(&c.failed),
            lock_acquired: stats::read(&c.lock_acquired),
            lock_skipped: stats::read(&c.lock_skipped),
            lock_failed: stats::read(&c.lock_failed),
            lock_overruns: stats::read(&c.lock_overruns),
            lock_extended: stats::read(&c.lock_extended),
            lateness_p50,
            lateness_p99,
            lateness_max,
        }
    }

    /// A snapshot of the queued tasks, earliest first
    /// (`ScheduledThreadPoolExecutor::scheduled_tasks`).
    pub(crate) fn scheduled_tasks(&self) -> Vec<TaskInfo> {
        let mut queued: Vec<(Ticks, u64, TaskRef)> = Vec::new();
        self.queue
            .lock_all()
            .for_each(|e| queued.push((e.deadline, e.seq(), e.value.clone())));
        // Outside the shard locks: each task's record takes its stage's lock, and the
        // copies may be the last references (a task's drop runs user code, I4). The
        // order is the queue's: (deadline, seq).
        queued.sort_by_key(|&(deadline, seq, _)| (deadline, seq));
        let clock = self.clock();
        let now = clock.now();
        queued
            .iter()
            .map(|(deadline, _, job)| {
                let (runs, last_run) = job.record();
                TaskInfo {
                    id: job.header().id(),
                    name: job.name().map(str::to_owned),
                    kind: job.schedule().kind(),
                    deadline: clock.instant_of(*deadline),
                    due_in: crate::clock::since(*deadline, now),
                    runs,
                    last_run,
                    cancelled: job.header().state() == State::Cancelled,
                }
            })
            .collect()
    }
}
