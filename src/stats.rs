//! Counters and the [`PoolStats`] snapshot.
//!
//! # Design
//! The hot counters (completed runs) are bumped by every worker after every run, so each
//! counter sits on its own cache line (`CachePadded`) and is `Relaxed`: no other memory is
//! published through a counter. A snapshot is therefore not one atomic instant; it is
//! exact once the pool is quiet, and final once `await_termination` has returned true
//! (each worker bumps its counters before it exits, and exit is recorded under the queue
//! lock that `await_termination` reads).
//!
//! The gauges (pool size, active workers, queue length) live under the queue lock with the
//! state they describe and are read there.

use crossbeam_utils::CachePadded;
use std::sync::atomic::Ordering;

use crate::sync::AtomicU64;

/// A point-in-time snapshot of an executor's counters (Java: the `getXxxCount` getters).
///
/// ```
/// use schedpool::ScheduledThreadPoolExecutor;
///
/// let pool = ScheduledThreadPoolExecutor::new(1);
/// pool.submit(|| ()).unwrap().wait();
/// pool.close();
/// let s = pool.stats();
/// assert_eq!((s.task_count, s.completed_task_count, s.pool_size), (1, 1, 0));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// The configured core size.
    pub core_pool_size: usize,
    /// Live worker threads.
    pub pool_size: usize,
    /// Workers running a task right now.
    pub active_count: usize,
    /// The most workers that were ever alive at once.
    pub largest_pool_size: usize,
    /// Tasks in the queue, cancelled-but-not-yet-removed ones included.
    pub queued: usize,
    /// Accepted submissions (a periodic task counts once; refused ones do not count).
    pub task_count: u64,
    /// Runs finished on the pool's workers, panicked ones included (each periodic run
    /// counts; `CallerRuns` runs and `PendingTask::run` do not).
    pub completed_task_count: u64,
    /// Refused submissions, whatever the policy or reason (`ZeroPeriod` is an argument
    /// error and does not count).
    pub rejected_count: u64,
    /// Runs that panicked.
    pub panicked_count: u64,
}

/// The executor's monotonic counters.
#[derive(Debug)]
pub(crate) struct Counters {
    pub(crate) task_count: CachePadded<AtomicU64>,
    pub(crate) completed: CachePadded<AtomicU64>,
    pub(crate) rejected: CachePadded<AtomicU64>,
    pub(crate) panicked: CachePadded<AtomicU64>,
}

impl Counters {
    pub(crate) fn new() -> Self {
        Counters {
            task_count: CachePadded::new(AtomicU64::new(0)),
            completed: CachePadded::new(AtomicU64::new(0)),
            rejected: CachePadded::new(AtomicU64::new(0)),
            panicked: CachePadded::new(AtomicU64::new(0)),
        }
    }
}

/// Adds one to a counter. `Relaxed`: a statistic; nothing is published through it.
#[inline]
pub(crate) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Reads a counter (`Relaxed`, see `bump`).
#[inline]
pub(crate) fn read(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}
