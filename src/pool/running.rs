//! The runs in progress on the pool's workers, so that the task list
//! ([`scheduled_tasks`](crate::ScheduledThreadPoolExecutor::scheduled_tasks)) shows a
//! task while it runs: one [`RunSlot`] per worker, filled before a run and emptied after it.
//!
//! # Design
//! A running task is in no queue: the worker that took it holds the queue's reference.
//! The worker copies that reference, the take's time and the deadline into a slot of its
//! own in the critical section that pops the task ([`RunSlot::enter`], called by the
//! queue's take), and takes the copy back after the run and after a periodic task's
//! re-queue ([`RunSlot::leave`]). A snapshot reads the queue and then the slots while it
//! holds every shard's lock, so no take and no re-queue happens between its two reads: a
//! task it does not find in the queue was taken before the snapshot and is in a slot. A
//! periodic task between its re-queue and `leave` is in the queue too, or, taken again by
//! another worker, in two slots: the snapshot keeps the queue's row, else the latest
//! run's. So a periodic task is in every snapshot, once, from its submission to its end
//! (`tests/task_list.rs` takes thousands of snapshots of a busy job; with the slot
//! filled after the take instead, it finds the job missing or twice within a few
//! hundred).
//!
//! Each slot is a mutex of its own on its own cache line: the worker's lock and unlock
//! are uncontended except against a snapshot, which copies each slot in turn. The
//! registry of slots ([`RunSlots`]) changes only when a worker starts or exits.
//! Rejected: a pool-wide list of the periodic tasks (no cost per run, but a running
//! one-shot would not be listed); filling the slot after the take (no lock inside the
//! shard's critical section, but a snapshot could miss a task between the take and the
//! slot). The cost per run is in `docs/BENCHMARKS.md` ("The task list's running slots").
//!
//! # Invariants
//! - RN1: a slot holds a task from its worker's `enter`, in the critical section that
//!   pops it, until its `leave` after the run (after a periodic task's re-queue), and its
//!   copy is never the task's last reference while it is there (the worker, or after a
//!   re-queue the queue, holds another), so no lock of ours drops a task; what a
//!   snapshot copies out is dropped by the snapshot's caller with no lock held (U1).
//! - RN2: the deadline in a slot is the one the run was taken for, read from the queue's
//!   node as it is popped, so a snapshot never reads a task's deadline word, which holds
//!   a sequence number while the task is queued (T4).
//!
//! # Lock order
//! A shard's lock before a slot's: a worker's take holds the popping shard's lock while
//! it fills its slot, and a snapshot holds every shard's, then the registry's, then one
//! slot's at a time. A worker empties its slot with no other lock held, and takes the
//! registry's lock alone when it starts or exits. A slot's lock is held for a copy only.

use crossbeam_utils::CachePadded;

use crate::clock::Ticks;
use crate::sync::{Arc, Mutex};
use crate::task::TaskRef;

/// What a slot holds during a run.
pub(crate) struct Running {
    pub(crate) task: TaskRef,
    /// When the worker took it (the run's start).
    pub(crate) started: Ticks,
    /// The deadline it was taken for (RN2).
    pub(crate) deadline: Ticks,
}

/// One worker's run in progress (RN1).
#[derive(Default)]
pub(crate) struct RunSlot(CachePadded<Mutex<Option<Running>>>);

impl RunSlot {
    /// A take: `task` was just popped by the calling worker, in the popping shard's
    /// critical section.
    #[inline]
    pub(crate) fn enter(&self, task: &TaskRef, started: Ticks, deadline: Ticks) {
        let run = Running {
            task: task.clone(),
            started,
            deadline,
        };
        let old = self.0.lock().replace(run);
        debug_assert!(old.is_none(), "RN1: one run at a time per worker");
    }

    /// After a run (and a periodic task's re-queue). The copy is handed back to be
    /// dropped by the caller after its own reference's use (RN1: never the last one
    /// here, but dropped with no lock held all the same).
    #[inline]
    pub(crate) fn leave(&self) -> Option<Running> {
        self.0.lock().take()
    }

    /// A copy of the run in progress, if any (a snapshot's read).
    fn copy(&self) -> Option<Running> {
        self.0.lock().as_ref().map(|r| Running {
            task: r.task.clone(),
            started: r.started,
            deadline: r.deadline,
        })
    }
}

/// The slots of the live workers.
#[derive(Default)]
pub(crate) struct RunSlots {
    slots: Mutex<Vec<Arc<RunSlot>>>,
}

impl RunSlots {
    /// A new worker's slot.
    pub(crate) fn register(&self) -> Arc<RunSlot> {
        let slot = Arc::new(RunSlot::default());
        self.slots.lock().push(slot.clone());
        slot
    }

    /// A worker is exiting: its slot leaves the registry (empty: the worker ran its last
    /// run to its `leave`, or unwound, in which case what it held is dropped here, after
    /// the registry's lock).
    pub(crate) fn unregister(&self, slot: &Arc<RunSlot>) {
        let mut slots = self.slots.lock();
        if let Some(i) = slots.iter().position(|s| Arc::ptr_eq(s, slot)) {
            slots.swap_remove(i);
        }
        drop(slots);
        crate::user::drop_quietly(slot.leave());
    }

    /// Copies of the runs in progress, taken while the caller holds every shard's lock
    /// (see the module notes). RN1: the caller drops them after unlocking.
    pub(crate) fn snapshot(&self) -> Vec<Running> {
        let slots: Vec<Arc<RunSlot>> = self.slots.lock().clone();
        slots.iter().filter_map(|s| s.copy()).collect()
    }
}
