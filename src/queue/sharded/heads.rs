//! What a taker reads to find the earliest entry without a lock: each shard's published
//! head (Q2), the mask of shards that hold entries (Q6) and, with more than [`FANOUT`]
//! shards, each group's least head (Q7).
//!
//! # Design
//! A take needs the least head among `S` shards, twice (to pick the shard, and Q3's
//! re-scan under its lock), and once more before it sleeps (Q1). With more than
//! [`FANOUT`] shards, they form groups of `FANOUT` and each group publishes the least
//! head of its shards, so a scan whose non-empty shards span several groups reads the
//! groups' minima and then the heads of one group: at most `FANOUT` loads per level, two
//! levels for the [`MAX_SHARDS`] a queue may have (`FANOUT`² = 64). While the non-empty
//! shards sit in one group (the case of one submitting thread), or with no groups, a scan
//! reads the heads the mask names, at most `FANOUT` of them too. The cost of a take grows
//! with the logarithm of the shard count, not with the shards that hold entries
//! (`docs/BENCHMARKS.md`, "Many workers, by simulation").
//!
//! A group's minimum is kept under a lock of its own, by the shard lock holders whose
//! head changed; it lags the heads while a refresh is in flight. The summary is only
//! ever a filter: whatever it decides is compared against the heads themselves (a scan
//! whose best group's minimum is not that group's least head falls back to the flat scan
//! of every shard the mask names; Q3's re-scan confirms every minimum at or before the
//! popped head from that group's heads), so a lagging minimum costs one flat scan, never
//! a wrong pick.
//!
//! # Invariants
//! - Q7: `Group::min` is the least published head of the group's shards ([`EMPTY`] if
//!   none) whenever no shard of the group is between a change of its head and the
//!   refresh that follows it. A shard's lock holder whose head changed refreshes its
//!   group after the shard's unlock and before it sends the wake-up it owes (Q1), under
//!   the group's lock, from the heads it reads under that lock; so the last refresh read
//!   every head stored before it, and everything Q1 orders through a head (the RMWs on
//!   `wake_at`) it orders through the group's minimum too. The group lock is a leaf:
//!   nothing is locked while it is held.
//!
//! # Ordering
//! `Group::min` is stored `Release` under the group's lock and loaded `Acquire` by
//! scanners (a hint, confirmed as above); the heads inside a refresh are loaded
//! `Acquire`, ordered after the stores of every earlier refresher by the group lock and
//! after this thread's own store by program order.

#[cfg(not(loom))]
use super::MAX_SHARDS;
use super::{Shard, ShardedQueue, Tracked, EMPTY};
use crate::clock::Ticks;
use crate::queue::Timed;
use crate::sync::{AtomicU64, Mutex, Ordering};
use crossbeam_utils::CachePadded;

/// Shards per group, and groups per level. Two under loom, so that its models engage the
/// groups with four shards.
#[cfg(not(loom))]
pub(super) const FANOUT: usize = 8;
#[cfg(loom)]
pub(super) const FANOUT: usize = 2;

/// Whether a scan of `mask`'s shards reads them flat, through no minima: when they all
/// sit in one group (at most [`FANOUT`] heads to read, as few as the two levels; the
/// case of one submitting thread). Never under loom, whose models are about the minima.
#[inline]
fn flat(mask: u64) -> bool {
    if cfg!(loom) {
        return false;
    }
    let low = mask.trailing_zeros() as usize; // 64 when empty
    low >= u64::BITS as usize || mask >> (low / FANOUT * FANOUT) < 1 << FANOUT
}

// Two levels cover every queue: a scan reads at most FANOUT minima and FANOUT heads
// (under loom more groups, each read: the models use four shards).
#[cfg(not(loom))]
const _: () = assert!(FANOUT * FANOUT >= MAX_SHARDS);
const _: () = assert!(FANOUT < u64::BITS as usize);

/// One group of [`FANOUT`] shards: the least head of its shards (Q7).
pub(super) struct Group {
    /// Serialises the refreshes of `min` (Q7). A leaf lock.
    lock: Mutex<()>,
    pub(super) min: AtomicU64,
}

/// The groups of a queue of `shards` shards: none up to [`FANOUT`] (the flat scan is
/// the tree's only level).
pub(super) fn groups(shards: usize) -> Box<[CachePadded<Group>]> {
    let n = if shards > FANOUT { shards / FANOUT } else { 0 };
    (0..n)
        .map(|_| {
            CachePadded::new(Group {
                lock: Mutex::new(()),
                min: AtomicU64::new(EMPTY),
            })
        })
        .collect()
}

/// The mask bits of group `g`'s shards.
#[inline]
fn group_bits(g: usize) -> u64 {
    ((1u64 << FANOUT) - 1) << (g * FANOUT)
}

/// The set bits of a shard mask, lowest first.
struct Bits(u64);

impl Iterator for Bits {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(i)
    }
}

/// The least of the heads of `mask`'s shards: `(deadline, shard, tied)`.
#[inline]
fn least<E: Tracked, X>(shards: &[CachePadded<Shard<E, X>>], mask: u64) -> (Ticks, usize, bool) {
    let (mut best, mut at, mut tie) = (EMPTY, 0, false);
    for i in Bits(mask) {
        // Acquire: pairs with the lock holder's Release store (a hint, Q2).
        let d = shards[i].head.load(Ordering::Acquire);
        if d < best {
            (best, at, tie) = (d, i, false);
        } else if d == best && d != EMPTY {
            tie = true;
        }
    }
    (best, at, tie)
}

/// Whether a head of `mask`'s shards is before `head`, and whether one ties with it.
#[inline]
fn compare<E: Tracked, X>(
    shards: &[CachePadded<Shard<E, X>>],
    mask: u64,
    head: Ticks,
) -> (bool, bool) {
    let (mut earlier, mut tied) = (false, false);
    for i in Bits(mask) {
        // Acquire: as in `least`.
        let d = shards[i].head.load(Ordering::Acquire);
        earlier |= d < head;
        tied |= d == head;
    }
    (earlier, tied)
}

impl<E: Timed + Tracked, X> ShardedQueue<E, X> {
    /// The shards that publish a head, as a bit set (Q6). Acquire: pairs with the lock
    /// holder's RMW, so the heads of the shards it names are read as published (a hint).
    #[inline]
    pub(super) fn nonempty(&self) -> u64 {
        self.nonempty.load(Ordering::Acquire)
    }

    /// `true` if no shard publishes a head (a hint: the locks decide). One load (Q6).
    #[inline]
    pub(crate) fn is_empty_hint(&self) -> bool {
        self.nonempty() == 0
    }

    /// The earliest published head and its shard, and whether another shard ties with it
    /// (module notes: the flat scan of the non-empty shards when there are at most
    /// [`FANOUT`] of them, through the groups' minima when there are more).
    #[inline]
    pub(super) fn scan(&self) -> (Ticks, usize, bool) {
        let mask = self.nonempty();
        if self.groups.is_empty() || flat(mask) {
            return least(&self.shards, mask);
        }
        self.scan_groups(mask)
    }

    /// [`scan`](Self::scan) through the groups' minima (Q7), for `mask`'s shards.
    #[inline(never)]
    fn scan_groups(&self, mask: u64) -> (Ticks, usize, bool) {
        let (mut best, mut group, mut tie) = (EMPTY, 0, false);
        for (g, grp) in self.groups.iter().enumerate() {
            if mask & group_bits(g) == 0 {
                continue;
            }
            // Acquire: pairs with the refresher's Release store (a hint, Q7).
            let m = grp.min.load(Ordering::Acquire);
            if m < best {
                (best, group, tie) = (m, g, false);
            } else if m == best && m != EMPTY {
                tie = true;
            }
        }
        let (d, at, t) = least(&self.shards, mask & group_bits(group));
        if d != best || d == EMPTY {
            // A refresh is in flight (Q7), or every non-empty group's minimum lags: the
            // heads decide.
            return least(&self.shards, mask);
        }
        (d, at, tie || t)
    }

    /// Q3's re-scan, under shard `at`'s lock with its head at `head`: whether another
    /// shard's published head is before it, and whether one ties with it. A group's
    /// minimum only selects the groups whose heads are compared (Q7: one at or before
    /// `head` is confirmed from the heads; a lagging one costs a look, never a miss of
    /// an entry whose submission returned).
    #[inline]
    pub(super) fn others_before(&self, at: usize, head: Ticks) -> (bool, bool) {
        let mask = self.nonempty() & !(1 << at);
        if self.groups.is_empty() || flat(mask) {
            return compare(&self.shards, mask, head);
        }
        self.others_before_groups(at, mask, head)
    }

    /// [`others_before`](Self::others_before) through the groups' minima (Q7).
    #[inline(never)]
    fn others_before_groups(&self, at: usize, mask: u64, head: Ticks) -> (bool, bool) {
        let own = at / FANOUT;
        let (mut earlier, mut tied) = compare(&self.shards, mask & group_bits(own), head);
        for (g, grp) in self.groups.iter().enumerate() {
            let bits = mask & group_bits(g);
            // Acquire: as in `scan`.
            if g == own || bits == 0 || grp.min.load(Ordering::Acquire) > head {
                continue;
            }
            let (e, t) = compare(&self.shards, bits, head);
            earlier |= e;
            tied |= t;
        }
        (earlier, tied)
    }

    /// Q7: recomputes the minimum of shard `index`'s group from its heads, after that
    /// shard's head changed and its lock was released. No lock held but the group's.
    #[inline]
    pub(super) fn refresh_group(&self, index: usize) {
        if !self.groups.is_empty() {
            self.refresh(index); // else no groups: the flat scan reads the heads
        }
    }

    #[inline(never)]
    fn refresh(&self, index: usize) {
        let grp = &self.groups[index / FANOUT];
        let _serial = grp.lock.lock();
        let (min, _, _) = least(&self.shards, self.nonempty() & group_bits(index / FANOUT));
        // Release: the heads it was computed from are read before the minimum (Q7).
        grp.min.store(min, Ordering::Release);
    }
}
