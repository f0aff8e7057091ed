//! The executor's control state: run state, worker and thread counts, termination
//! (Java's `ctl`, plus what `ThreadPoolExecutor` keeps under its `mainLock`). Guarded by
//! the queue lock: `Control` is the queue's extra state `X` (`queue/mod.rs`).

/// Java's run states, ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum RunState {
    Running,
    Shutdown,
    Stop,
}

/// The executor's control state, guarded by the queue lock.
#[derive(Debug)]
pub(crate) struct Control {
    pub(crate) run_state: RunState,
    /// Latched by the last thread to exit after shutdown (E5).
    pub(crate) terminated: bool,
    /// Workers that take tasks: reserved before their thread starts, released when they
    /// decide to exit (E1).
    pub(crate) workers: usize,
    /// Threads not yet finished (their stop hook not yet run) (E5).
    pub(crate) threads: usize,
    pub(crate) largest: usize,
    /// Next worker index for thread names; never reused.
    pub(crate) next_index: usize,
    /// Workers between taking a task and asking for the next one.
    pub(crate) active: usize,
    /// Bumped when the core size shrinks: idle workers re-check whether they are surplus.
    pub(crate) epoch: u64,
    /// Threads blocked in `wait_idle`.
    pub(crate) idle_waiters: usize,
}

impl Control {
    /// Reserves a worker slot and returns its index (E1, E5).
    pub(super) fn reserve(&mut self) -> usize {
        self.workers += 1;
        self.threads += 1;
        self.largest = self.largest.max(self.workers);
        let index = self.next_index;
        self.next_index += 1;
        index
    }

    /// Java `ensurePrestart`: one thread per submission while fewer than `core` run, and
    /// one in all when `core` is 0.
    pub(super) fn reserve_for_task(&mut self, core: usize) -> Option<usize> {
        (self.workers < core.max(1)).then(|| self.reserve())
    }

    pub(super) fn is_drained_after_shutdown(&self, queued: usize) -> bool {
        self.run_state == RunState::Stop || (self.run_state == RunState::Shutdown && queued == 0)
    }
}
