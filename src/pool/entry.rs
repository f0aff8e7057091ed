//! The queue's node for the executor ([`Entry`]) and the queue's types: a task's deadline
//! inline and the task behind a thin pointer, its order (deadline, then the FIFO number
//! the task holds while queued) and its deadline handed back to the task when it leaves
//! (T4 in `task/mod.rs`).

use crate::clock::Ticks;
use crate::queue::sharded::{AllShards, ShardGuard, ShardedQueue};
use crate::queue::{Ordered, Position, Timed, Tracked};
use crate::task::TaskRef;

use super::Tally;

/// A queued task: 16 bytes, its deadline inline and the task behind a thin pointer. The
/// FIFO sequence number that breaks a tie between equal deadlines lives in the task while
/// it is queued (`Header::seq`, written before the push under the home shard's lock), so
/// a sift reads a task only on a tie; when the node leaves the queue it hands its deadline
/// back to the task (`Tracked::left`).
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) deadline: Ticks,
    pub(crate) task: TaskRef,
}

impl Entry {
    /// The FIFO sequence number (T4: under the home shard's lock, while queued).
    #[inline]
    pub(crate) fn seq(&self) -> u64 {
        self.task.header().seq()
    }
}

impl Ordered for Entry {
    #[inline]
    fn before(&self, other: &Self) -> bool {
        self.deadline < other.deadline
            || (self.deadline == other.deadline && self.seq() < other.seq())
    }
}

impl Timed for Entry {
    #[inline]
    fn deadline(&self) -> Ticks {
        self.deadline
    }
}

impl Tracked for Entry {
    /// T4: the task's place in its home shard.
    #[inline]
    fn position(&self) -> &Position {
        &self.task.header().position
    }

    /// Out of the queue the task keeps its own deadline (`Header::when`).
    #[inline]
    fn left(&self) {
        self.task.header().set_deadline(self.deadline);
    }
}

/// Java: `DelayedWorkQueue`, sharded (`queue/sharded.rs`).
pub(crate) type Queue = ShardedQueue<Entry, Tally>;
/// One shard of the queue with its lock held.
pub(crate) type Guard<'a> = ShardGuard<'a, Entry, Tally>;
/// Every shard locked.
pub(crate) type All<'a> = AllShards<'a, Entry, Tally>;
