//! What the pool shows of itself: the statistics snapshot and the task list (the queued
//! tasks and the workers' runs in progress, `running.rs`). Reads only: each takes every
//! shard's lock once, briefly.

use super::running::Running;
use super::shared::Pool;
use crate::clock::{Clock, Ticks};
use crate::stats::{self, PoolStats, TaskInfo};
use crate::task::{drop_quietly, state::State, Suspended, TaskRef};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant, SystemTime};

impl Pool {
    /// The counters, the lateness summary and the queue's size
    /// (`ScheduledThreadPoolExecutor::stats`).
    pub(crate) fn stats(&self) -> PoolStats {
        let (lateness_p50, lateness_p99, lateness_max) = self.lateness.summary();
        let (queued, submitted, cancelled) = {
            let mut all = self.queue.lock_all();
            let submitted: u64 = all.shards().map(|g| g.ext().submitted).sum();
            let cancelled: u64 = all.shards().map(|g| g.ext().cancelled).sum();
            (all.len(), submitted, cancelled)
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
            cancelled_count: stats::read(&c.cancelled) + cancelled,
            panicked_count: stats::read(&c.panicked),
            late_count: stats::read(&c.late),
            skipped_runs: stats::read(&c.skipped),
            paused_runs: stats::read(&c.paused),
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

    /// The task numbered `id`, queued or running (`ScheduledThreadPoolExecutor::task`):
    /// read as the snapshot reads them.
    pub(crate) fn find_task(&self, id: u64) -> Option<TaskRef> {
        let (queued, runs) = {
            let all = self.queue.lock_all();
            let mut queued = None;
            all.for_each(|e| {
                if queued.is_none() && e.task.header().id() == id {
                    queued = Some(e.task.clone());
                }
            });
            (queued, self.runs_in_progress())
        };
        let (runs, copies) = runs;
        drop_quietly(copies); // outside the locks (RN1)
                              // A suspended run's entry stands for its task.
        let queued = queued.map(|task| match Suspended::of(&task) {
            Some(run) => run.task().clone(),
            None => task,
        });
        // Outside the locks: the copies may be the last references (I4, RN1).
        let found = queued.or_else(|| {
            runs.into_iter()
                .map(|r| r.task)
                .find(|task| task.header().id() == id)
        });
        found.filter(|task| !task.header().state().is_terminal())
    }

    /// A snapshot of the queued and running tasks, earliest deadline first
    /// (`ScheduledThreadPoolExecutor::scheduled_tasks`). The queue and the workers' slots
    /// are read under every shard's lock, so no task moves between the two reads
    /// (`running.rs`).
    pub(crate) fn scheduled_tasks(&self) -> Vec<TaskInfo> {
        let mut queued: Vec<(Ticks, u64, TaskRef)> = Vec::new();
        let (mut runs, copies) = {
            let all = self.queue.lock_all();
            all.for_each(|e| queued.push((e.deadline, e.seq(), e.task.clone())));
            self.runs_in_progress()
        };
        drop_quietly(copies); // outside the locks (RN1)
                              // A woken suspended run's entry is its task's run in progress, not a queued task.
        let (woken, tasks): (Vec<_>, Vec<_>) = queued
            .into_iter()
            .partition(|(_, _, task)| Suspended::of(task).is_some());
        queued = tasks;
        runs.extend(woken.iter().filter_map(|(_, _, run)| running_of(run)));
        drop_quietly(woken);
        // Outside the shard locks: a trigger's description takes its own lock, and the
        // copies may be the last references (a task's drop runs user code, I4). The
        // order is the queue's, (deadline, seq), running tasks first among equal
        // deadlines.
        let rows = Rows::read(self.clock());
        let mut infos: Vec<(Ticks, u64, TaskInfo)> = Vec::with_capacity(queued.len() + runs.len());
        for run in current_runs(&runs, &queued) {
            let row = rows.info(&run.task, run.deadline, Some(run.started));
            infos.push((run.deadline, 0, row));
        }
        for (deadline, seq, task) in &queued {
            let row = rows.info(task, *deadline, None);
            infos.push((*deadline, seq.saturating_add(1), row));
        }
        infos.sort_by_key(|&(deadline, seq, _)| (deadline, seq));
        let infos = infos.into_iter().map(|(_, _, row)| row).collect();
        drop_quietly(queued);
        drop_quietly(runs);
        infos
    }
}

impl Pool {
    /// The runs in progress: the workers' slots, and the async runs off their worker
    /// (`awaiting.rs`, AW1), each as its task's run. Read while the caller holds every
    /// shard's lock: a run moves between a slot, the list and the queue only in a shard's
    /// critical section or by joining the new place before it leaves the old one, so none
    /// is missed (`running.rs`; a run seen twice is one row, `current_runs`).
    /// The suspended runs come back too, to be dropped by the caller after unlocking
    /// (RN1: copies are never dropped under a lock).
    fn runs_in_progress(&self) -> (Vec<Running>, Vec<TaskRef>) {
        let mut runs = self.running.snapshot();
        let suspended = self.sleepers.suspended_runs();
        let mut copies = Vec::new();
        for run in &mut runs {
            if let Some(of) = running_of(&run.task) {
                // A worker polling a suspended run: its task's run.
                copies.push(std::mem::replace(run, of).task);
            }
        }
        runs.extend(suspended.iter().filter_map(running_of));
        copies.extend(suspended);
        (runs, copies)
    }
}

/// The run in progress a suspended run (`task/suspended.rs`) is, or `None` for any other
/// task.
fn running_of(task: &TaskRef) -> Option<Running> {
    let run = Suspended::of(task)?;
    let (started, deadline) = run.facts();
    Some(Running {
        task: run.task().clone(),
        started,
        deadline,
    })
}

/// The runs in progress that are a task's current row. RN1: a periodic task between its
/// re-queue and its worker's `leave` is in the queue too, or already in another worker's
/// slot for its next run: the queue's row, else the latest run's, is the current one. A
/// run whose task has just ended (DONE or PANICKED, its worker not yet out of its slot)
/// is over; a task cancelled during its run is still running.
fn current_runs<'r>(runs: &'r [Running], queued: &[(Ticks, u64, TaskRef)]) -> Vec<&'r Running> {
    let in_slots: HashSet<u64> = runs.iter().map(|r| r.task.header().id()).collect();
    let in_queue: HashSet<u64> = queued
        .iter()
        .map(|(_, _, task)| task.header().id())
        .filter(|id| in_slots.contains(id))
        .collect();
    let mut current: HashMap<u64, &Running> = HashMap::new();
    for run in runs {
        let id = run.task.header().id();
        let over = matches!(run.task.header().state(), State::Done | State::Panicked);
        if over || in_queue.contains(&id) {
            continue;
        }
        let latest = current
            .get(&id)
            .is_none_or(|seen| seen.started <= run.started);
        if latest {
            current.insert(id, run);
        }
    }
    current.into_values().collect()
}

/// The task list's clocks, read once for a snapshot: the pool's clock, its reading, and the
/// wall clock beside the monotonic one, read together.
struct Rows<'c> {
    clock: &'c Clock,
    now: Ticks,
    now_at: Instant,
    wall_now: SystemTime,
}

impl<'c> Rows<'c> {
    fn read(clock: &'c Clock) -> Self {
        let (now_at, wall_now) = crate::clock::WallClock::of(clock).now();
        Rows {
            clock,
            now: clock.now(),
            now_at,
            wall_now,
        }
    }

    /// The wall-clock time of `ticks`, offset from the snapshot's reading.
    fn wall(&self, ticks: Ticks) -> SystemTime {
        let at = self.clock.instant_of(ticks);
        match at.checked_duration_since(self.now_at) {
            Some(ahead) => self.wall_now.checked_add(ahead),
            None => self
                .wall_now
                .checked_sub(self.now_at.saturating_duration_since(at)),
        }
        .unwrap_or(self.wall_now)
    }

    /// The row of `task`, due at `deadline`; `running`: the start of its run in progress.
    fn info(&self, task: &TaskRef, deadline: Ticks, running: Option<Ticks>) -> TaskInfo {
        let record = task.record();
        let started = running.or(record.started);
        let pause = record.pause.as_ref();
        TaskInfo {
            id: task.header().id(),
            name: task.name().map(str::to_owned),
            kind: task.schedule().kind(),
            schedule: task.schedule().describe(),
            deadline: self.clock.instant_of(deadline),
            next_run_at: self.wall(deadline),
            due_in: match running {
                Some(_) => Duration::ZERO,
                None => crate::clock::since(deadline, self.now),
            },
            running: running.is_some(),
            last_started: started.map(|t| self.clock.instant_of(t)),
            last_started_at: started.map(|t| self.wall(t)),
            runs: record.runs,
            last_run: record.last,
            cancelled: task.header().state() == State::Cancelled,
            paused: pause.is_some() || task.periodic().is_some_and(|c| c.is_paused()),
            paused_by: pause.map(|p| p.by.clone()),
            paused_since: pause.map(|p| p.since),
            paused_until: pause.and_then(|p| p.until),
        }
    }
}
