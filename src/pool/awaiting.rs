//! The pool's side of the async runs that give their worker back (`task/suspended.rs`):
//! a worker whose run's future is pending moves the run into a suspended run and goes back
//! to the queue; a wake-up queues the run into its task's home shard like a submission;
//! whichever worker takes it polls it, and the one whose poll ends the run accounts for it
//! and re-queues its task as it would its own run's (`worker.rs`). A stop (an interrupt,
//! `shutdown_now`) and a wake-up after `shutdown_now` end a run off the workers, on their
//! own thread: accounted here the same way.
//!
//! # Invariants
//! - AW1: from its first pending poll (on its worker, whose take still counts) until it
//!   ends, a run off its worker holds a count of its own in `active` (Q4 in
//!   `queue/sharded.rs`, `hold`: `wait_idle` and `active_count` see it), a finisher party
//!   in the control word's `threads` (E5: termination waits for it), and its place in the
//!   sleepers' list (S1: a stop finds it; the task list shows it running). Whoever ends it
//!   gives the three back, the count last, after its task's re-queue.
//! - AW2: a woken run is queued only in a critical section of its home shard that read
//!   the run state as not Stop, and with a worker reserved there if none is (E1, E2);
//!   after `shutdown_now` has begun, the thread that woke it polls it to its end itself
//!   (the poll sees the stop and drops the future), so no run waits for a worker that
//!   will not come.

use super::control::RunState;
use super::entry::Entry;
use super::shutdown::wake_if_drained;
use super::worker::account;
use super::Pool;
use crate::clock::{self, Ticks};
use crate::sync::Arc;
use crate::task::sleepers;
use crate::task::{
    drop_quietly, Host, Pending, Polled, Resumed, RunEnv, RunReport, Suspended, TaskRef,
};

impl Pool {
    /// A worker's run (of `task`, taken at `started` for `deadline`) returned pending:
    /// moves it into a suspended run and polls it once, in `env` (the worker's).
    /// `Pending`: it goes on without the worker (AW1's three taken); `Ended`: it ended in
    /// that poll, and the worker accounts for it as for any run of its own.
    pub(super) fn suspend(
        self: &Arc<Self>,
        task: TaskRef,
        pending: Pending,
        (deadline, started): (Ticks, Ticks),
        host: &Arc<dyn Host>,
        env: &RunEnv<'_>,
    ) -> Polled {
        let key = sleepers::key(&*task);
        let run = Suspended::start(task, pending, host.clone(), deadline, started);
        // A run that ends in its first poll never leaves its worker: only one that is
        // pending takes AW1's three, while the worker's take still counts and before the
        // worker gives the run up (S1: a stop made before the listing is seen by the poll
        // `Suspended::poll` then makes).
        let mut listed = false;
        let mut list = || {
            self.queue.hold(); // AW1: its own count in `active` (Q4)
            self.control.finisher_start(); // AW1: termination waits for the run
            self.sleepers.join_run(key, run.clone()); // AW1, S1
            listed = true;
        };
        let polled = Suspended::poll(&run, env, Some(&mut list));
        if listed && matches!(polled, Polled::Ended(..)) {
            self.run_left(&run); // a stop's poll ended it: nothing to re-queue
        }
        polled
    }

    /// A suspended run ended: it leaves the sleepers' list, gives its finisher party
    /// back, and then its count in `active` (AW1: the caller has re-queued its task).
    pub(super) fn run_left(&self, run: &TaskRef) {
        drop_quietly(self.sleepers.leave_run(run));
        if self.control.finisher_done() {
            self.log_terminated();
        }
        self.queue.finished();
    }

    /// Queues a woken suspended run (the caller owns it: QUEUED) for a worker (AW2).
    pub(crate) fn resume(self: &Arc<Self>, run: TaskRef) {
        let now = self.clock().now();
        let core = self.core_pool_size();
        let mut q = self.queue.lock(run.header().home());
        // AW2, E2: read in the critical section that pushes; `shutdown_now` changes it
        // before its drain.
        if self.control.load().run_state() == RunState::Stop {
            drop(q);
            return self.poll_here(run);
        }
        // AW2, E1: a worker reserved in the critical section that pushes (after shutdown
        // too: the run is the pool's work, as a queued task is).
        let spawn = self
            .control
            .reserve_if(|c| c.run_state() != RunState::Stop && c.workers() < core.max(1));
        let seq = q.next_seq(Some(now));
        run.header().set_seq(seq); // queued from here on: the node holds the deadline
        let kept = spawn.is_some().then(|| run.clone());
        q.push_tracked(
            Entry {
                deadline: now,
                task: run,
            },
            true,
        );
        drop(q);
        if let (Some(index), Some(run)) = (spawn, kept) {
            if self.start_worker(index).is_err() {
                // No worker to take it: polled here instead.
                if let Some(run) = self.unqueue_if_workerless(&*run, false) {
                    self.poll_here(run);
                }
            }
        }
    }

    /// Polls a suspended run that the caller took over (QUEUED) on this thread: a wake-up
    /// after `shutdown_now` (the poll sees the stop and ends the run, AW2), or one no worker
    /// could take.
    fn poll_here(self: &Arc<Self>, run: TaskRef) {
        if Suspended::take_queued(&run) {
            self.poll_off_worker(run);
        }
    }

    /// Ends the suspended runs a stop claimed (`Sleepers::stop_runs`), on this thread: each
    /// poll sees the stop and drops its future.
    pub(super) fn stop_claimed(self: &Arc<Self>, runs: Vec<TaskRef>) {
        for run in runs {
            self.poll_off_worker(run);
        }
    }

    /// Polls a suspended run that this thread owns (POLLING), not on a worker; a run that
    /// ends is accounted for as a worker would (AW1).
    pub(super) fn poll_off_worker(self: &Arc<Self>, run: TaskRef) {
        let env = RunEnv {
            now: self.clock().now(),
            clock: self.clock(),
            counters: Some(&self.counters),
            task: Some(&run),
            pool: Some(self),
            on_worker: true,
            handoff: None,
        };
        if let Polled::Ended(report, facts) = Suspended::poll(&run, &env, None) {
            self.ended_off_worker(&run, &report, facts);
        }
        drop_quietly(run);
    }

    /// The end of a suspended run off the workers: accounted, its task re-queued (if the
    /// run state allows) or dropped, and then AW1's three given back.
    fn ended_off_worker(self: &Arc<Self>, run: &TaskRef, report: &RunReport, facts: Resumed) {
        let lateness = clock::since(facts.started, facts.deadline);
        #[cfg(feature = "metrics")]
        if report.ran {
            let took = self.clock().now().saturating_sub(facts.started);
            self.run_time.record(0, took);
            if let Some(timer) = facts.task.timer() {
                timer.record(std::time::Duration::from_nanos(took));
            }
        }
        account(
            self,
            0,
            &facts.task,
            report,
            facts.started,
            facts.deadline,
            lateness,
        );
        match report.next {
            Some(next) => self.requeue(facts.task, next),
            None => drop_quietly(facts.task),
        }
        self.run_left(run);
        wake_if_drained(self); // E3
    }
}
