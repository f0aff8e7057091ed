//! The guards of the sharded queue's locks: [`ShardGuard`] (one shard) and [`AllShards`]
//! (every shard, in index order). A guard is the only way to a shard's store; dropping it
//! publishes the shard's head (Q2) and its bit in the non-empty mask (Q6), refreshes its
//! group's minimum (Q7), and then, with no shard locked, sends the wake-ups the change
//! owes (Q1, `wait_idle`). The invariants are stated in `queue/sharded.rs` and
//! `heads.rs`.

use super::{Shard, ShardState, ShardedQueue, EMPTY, NEVER_DUE};
use crate::clock::Ticks;
use crate::queue::heap::InEntry;
use crate::queue::store::Store;
use crate::queue::{LockedCell, Position, Timed, Tracked};
use crate::sync::{MutexGuard, Ordering};

/// One shard with its lock held. Handles and [`Position`]s are per shard: one is only
/// ever passed to its own shard's guard (the task's home, T4 in `task/mod.rs`); in another
/// shard it could name an unrelated entry. Dropping it publishes the shard's head (Q2) and then,
/// with the lock released, sends the wake-ups the change owes (Q1, `wait_idle`).
pub(crate) struct ShardGuard<'a, E: Timed + Tracked, X> {
    pub(super) queue: &'a ShardedQueue<E, X>,
    pub(super) shard: &'a Shard<E, X>,
    pub(super) index: usize,
    /// `Some` until dropped.
    pub(super) state: Option<MutexGuard<'a, ShardState<E, X>>>,
}

impl<E: Timed + Tracked, X> ShardGuard<'_, E, X> {
    /// This shard's number.
    #[inline]
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    #[inline]
    pub(super) fn state(&self) -> &ShardState<E, X> {
        self.state.as_ref().expect("present until drop")
    }

    #[inline]
    pub(super) fn state_mut(&mut self) -> &mut ShardState<E, X> {
        self.state.as_mut().expect("present until drop")
    }

    #[inline]
    pub(super) fn store(&self) -> &Store<E, InEntry> {
        &self.state().store
    }

    #[inline]
    pub(super) fn store_mut(&mut self) -> &mut Store<E, InEntry> {
        &mut self.state_mut().store
    }

    /// The owner's per-shard state.
    #[inline]
    pub(crate) fn ext(&mut self) -> &mut X {
        &mut self.state_mut().ext
    }

    /// Entries in this shard.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.store().len()
    }

    /// A fresh sequence number for an entry queued in this shard now (Q3): larger than
    /// every number this shard handed out before, and not below the operation's stamp
    /// (`now`: the caller's clock reading, if it made one).
    #[inline]
    pub(crate) fn next_seq(&mut self, now: Option<Ticks>) -> u64 {
        let stamp = self.queue.stamp(now);
        let state = self.state_mut();
        let seq = stamp.max(state.next_seq);
        state.next_seq = seq.saturating_add(1);
        seq
    }

    /// Pops the head and counts the take (Q4), in this critical section.
    #[inline]
    pub(super) fn pop_counted(&mut self) -> Option<E> {
        let entry = self.store_mut().pop_head();
        if entry.is_some() {
            self.queue.active.fetch_add(1, Ordering::AcqRel);
        }
        entry
    }

    /// Inserts an entry; its store keeps its [`Position`] (I6). `due` as for
    /// [`Store::push_tracked`]. O(1) into the lane, O(log n) into the heap.
    #[inline]
    pub(crate) fn push_tracked(&mut self, entry: E, due: bool) {
        self.store_mut().push_tracked(entry, due);
    }

    /// Removes the entry that owns `position`, if it is queued in this shard.
    #[inline]
    pub(crate) fn remove_tracked(&mut self, position: &Position) -> Option<E> {
        self.store_mut().remove_tracked(position).0
    }

    /// Re-keys the entry that owns `position` (see [`Store::update_tracked`]); `false`
    /// if it is not queued in this shard.
    pub(crate) fn update_tracked(&mut self, position: &Position, f: impl FnOnce(&mut E)) -> bool {
        self.store_mut().update_tracked(position, f).is_some()
    }

    /// `true` if the entry that owns `position` is queued in this shard.
    #[inline]
    pub(crate) fn contains_tracked(&self, position: &Position) -> bool {
        self.store().contains_tracked(position)
    }

    /// The entry that owns `position`, if it is queued in this shard.
    #[inline]
    pub(crate) fn get_tracked(&self, position: &Position) -> Option<&E> {
        self.store().get_tracked(position)
    }

    /// The value of a [`LockedCell`] guarded by this shard (I6).
    #[inline]
    pub(crate) fn read(&self, cell: &LockedCell) -> u64 {
        self.store().read(cell)
    }

    /// Replaces the value of a [`LockedCell`] guarded by this shard (I6).
    #[inline]
    pub(crate) fn replace(&mut self, cell: &LockedCell, value: u64) -> u64 {
        self.store_mut().replace(cell, value)
    }

    /// The head if it is due now (never blocks), counted as a take (Q4).
    #[cfg(test)]
    pub(crate) fn poll(&mut self) -> Option<E> {
        let d = self.store().head_deadline()?;
        if d <= self.queue.clock.now() {
            self.pop_counted()
        } else {
            None
        }
    }
}

/// A wake-up a released shard still owes (sent with no shard locked).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Owed {
    Nothing,
    /// The head became earlier: Q1's check against `wake_at`, with the new deadline.
    EarlierHead(Ticks),
    /// The head left or moved later: a `wait_idle` waiting on a due head re-checks.
    Idle,
}

impl<E: Timed + Tracked, X> ShardGuard<'_, E, X> {
    /// Publishes the shard's head (Q2) and releases the lock; returns the wake-up owed.
    pub(super) fn release(&mut self) -> Owed {
        let Some(state) = self.state.take() else {
            return Owed::Nothing;
        };
        let shard = self.shard;
        let new = state
            .store
            .head_deadline()
            .map_or(EMPTY, |d| d.min(NEVER_DUE));
        // Relaxed: only lock holders write it, and this thread holds the lock (Q2).
        let old = shard.head.load(Ordering::Relaxed);
        if new != old {
            // Q2, before the unlock.
            shard.head.store(new, Ordering::Release);
            // Q6, after the head and before the unlock: a scan that sees the bit sees the
            // head. AcqRel RMWs: only this shard's lock holder changes its bit, and the
            // mask is shared by every shard.
            let bit = 1u64 << self.index;
            if old == EMPTY {
                self.queue.nonempty.fetch_or(bit, Ordering::AcqRel);
            } else if new == EMPTY {
                self.queue.nonempty.fetch_and(!bit, Ordering::AcqRel);
            }
        }
        drop(state);
        if new != old {
            self.queue.refresh_group(self.index); // Q7, before the wake-up is sent
        }
        if new < old {
            Owed::EarlierHead(new)
        } else if new > old {
            Owed::Idle
        } else {
            Owed::Nothing
        }
    }
}

impl<E: Timed + Tracked, X> ShardedQueue<E, X> {
    /// Sends a wake-up a released shard owes. Call with no shard locked, and without the
    /// coordinator unless `owed` is `Nothing` (lock order, module notes).
    #[inline]
    pub(super) fn send(&self, owed: Owed) {
        match owed {
            Owed::Nothing => {}
            Owed::EarlierHead(new) => {
                // Q1: an RMW read, ordered against a waiter's publish.
                if new < self.wake_at.fetch_add(0, Ordering::AcqRel) {
                    self.signal();
                }
            }
            Owed::Idle => self.notify_idle(),
        }
    }
}

impl<E: Timed + Tracked, X> Drop for ShardGuard<'_, E, X> {
    fn drop(&mut self) {
        let owed = self.release();
        self.queue.send(owed);
    }
}

/// Every shard locked, in index order. Dropping it releases every shard before it sends
/// any wake-up (lock order). A thread holding the coordinator may use it only to read:
/// a change would owe a wake-up that needs the coordinator.
pub(crate) struct AllShards<'a, E: Timed + Tracked, X> {
    pub(super) guards: Vec<ShardGuard<'a, E, X>>,
}

impl<E: Timed + Tracked, X> Drop for AllShards<'_, E, X> {
    fn drop(&mut self) {
        let owed: Vec<Owed> = self.guards.iter_mut().map(ShardGuard::release).collect();
        if let Some(g) = self.guards.first() {
            let queue = g.queue;
            for o in owed {
                queue.send(o);
            }
        }
    }
}

impl<'a, E: Timed + Tracked, X> AllShards<'a, E, X> {
    /// Entries queued.
    pub(crate) fn len(&self) -> usize {
        self.guards.iter().map(ShardGuard::len).sum()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.guards.iter().all(|g| g.store().is_empty())
    }

    /// `true` if some entry is due at `now`.
    pub(crate) fn any_due(&self, now: Ticks) -> bool {
        self.guards
            .iter()
            .any(|g| g.store().head_deadline().is_some_and(|d| d <= now))
    }

    /// Each shard's guard.
    pub(crate) fn shards(&mut self) -> impl Iterator<Item = &mut ShardGuard<'a, E, X>> {
        self.guards.iter_mut()
    }

    /// The guard of shard `index`.
    pub(crate) fn shard(&mut self, index: usize) -> &mut ShardGuard<'a, E, X> {
        let n = self.guards.len();
        &mut self.guards[index & (n - 1)]
    }

    /// Calls `f` on every entry of every shard, in no particular order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&E)) {
        for g in &self.guards {
            g.store().iter().for_each(&mut f);
        }
    }

    /// Removes every entry `remove` selects, from every shard.
    pub(crate) fn extract_if(&mut self, mut remove: impl FnMut(&E) -> bool) -> Vec<E> {
        let mut out = Vec::new();
        for g in &mut self.guards {
            out.extend(g.store_mut().extract_if(&mut remove));
        }
        out
    }

    /// Removes every entry, in the order of `key` (the caller's `(deadline, seq)`), read
    /// from each entry while it is still queued: a task's header gives its sequence
    /// number up for its deadline when it leaves (`Tracked::left`), so ties across shards
    /// could not be ordered afterwards. Each shard gives its entries up in its own order,
    /// and the sort is stable.
    pub(crate) fn drain_sorted<K: Ord>(&mut self, key: impl Fn(&E) -> K) -> Vec<E> {
        let mut keyed = Vec::new();
        for g in &mut self.guards {
            let store = g.store_mut();
            while let Some(head) = store.peek() {
                let k = key(head);
                keyed.extend(store.pop_head().map(|e| (k, e)));
            }
        }
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        keyed.into_iter().map(|(_, e)| e).collect()
    }
}
