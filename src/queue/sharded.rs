//! `ShardedQueue`: the executor's delayed work queue (Java: `DelayedWorkQueue`), split
//! into shards so that producers, cancellers and workers do not all take one lock.
//!
//! # Design
//! The queue is `S` shards (a power of two up to 64, `Pool::new` picks it from the CPU
//! count), each a [`Store`] (heap + ready lane) under its own mutex, plus one
//! *coordinator* mutex for the waiting takers:
//!
//! - A thread submits into its own shard (a thread-local number modulo `S`), so two
//!   producers rarely meet on a lock or a cache line. A task due at once goes to the
//!   first shard whose lock is free, starting from that one
//!   ([`ShardedQueue::lock_to_submit`]): the workers pop due tasks from the producer's
//!   shard, and a producer that waited for a popping worker's lock spent a fifth of its
//!   time yielding (`docs/BENCHMARKS.md`, "W1: where the producer's 300 ns go"). A task
//!   remembers the shard it was first queued in (its *home*, `Header::home`); its cancel,
//!   reschedule and re-queue lock that shard, so its `Position` always belongs to one lock
//!   (T4 in `task/mod.rs`).
//! - Every shard publishes its head's deadline in an atomic (`Shard::head`, written by the
//!   lock holder when a [`ShardGuard`] is dropped). A taker scans the heads without a
//!   lock (with more than eight shards, through each group's least head: `heads.rs`),
//!   locks the shard with the earliest one, checks under that lock that no other
//!   shard's head is earlier (a re-scan: an entry queued before the take started is seen,
//!   Q2) and pops. Equal deadlines in two shards are decided under all their locks by
//!   `(deadline, seq)`, then by shard number (Q3).
//! - Sequence numbers (FIFO among equal deadlines) cost no shared write. On the real
//!   clock a shard's next number is the operation's clock reading in nanoseconds (the one
//!   the deadline was computed from), or one more than the shard's last number if that is
//!   larger; on a `ManualClock`, whose time stands still, they come from one shared
//!   counter. A shared counter cost half of workload W4's throughput
//!   (`docs/BENCHMARKS.md`).
//! - Waiting is leader/follower with the protocol of `waiters.rs` (F1–F5), on the
//!   coordinator: the leader sleeps until the earliest head, the followers without a
//!   timeout (or until their own), and every exit of a take hands on (F3). The coordinator
//!   publishes in `wake_at` the deadline before which a new head needs a wake-up: the
//!   leader's deadline, `u64::MAX` when followers wait with no leader, 0 when nobody
//!   waits. A producer whose push makes an earlier shard head reads `wake_at` and takes
//!   the coordinator's lock only if it must wake someone (Q1). In the common case (a
//!   timeout scheduled behind the head, or a busy pool) a submission and a cancel touch
//!   one shard lock and no shared line (on a `ManualClock`, also the sequence counter).
//! - A take that found nothing due locks the coordinator with a bounded wait
//!   ([`ShardedQueue::coord_for_take`], real clock): parking_lot's fair unlock may hand
//!   the mutex to a woken waiter that is not on a CPU yet, and a head that falls due
//!   meanwhile needs only its shard's lock to be popped.
//! - Rare operations that need the whole queue (`len`, shutdown's passes, `purge`,
//!   `stats`, a worker's exit, `wait_idle`) lock every shard in index order
//!   ([`AllShards`]).
//!
//! Lock order: the coordinator before any shard; shards in index order; a group's lock
//! (Q7) is a leaf. A
//! [`ShardGuard`] never takes the coordinator while its shard is locked: the wake-ups it
//! owes are sent from its `Drop`, after the shard's mutex is released.
//!
//! # Invariants
//! - Q1 (no lost wake-up): a push that makes a shard head earlier than `wake_at` wakes
//!   the leader, or a follower if there is no leader. A taker that is about to wait
//!   publishes `wake_at` with a read-modify-write and then re-scans the heads; a producer
//!   stores its shard's head and then reads `wake_at` with a read-modify-write
//!   (`fetch_add(0)`). The two RMWs on `wake_at` are ordered; whichever comes second sees
//!   the other's effect (the producer sees the new `wake_at` and wakes the taker, or the
//!   taker's re-scan sees the new head). The wake-up itself is sent under the
//!   coordinator's lock, which the waiter holds from its re-scan until it sleeps.
//! - Q2: `Shard::head` is the deadline of the shard's head (`EMPTY` if none; a head due
//!   at `clock::NEVER` publishes `NEVER_DUE`) whenever its mutex is free; only the lock
//!   holder writes it.
//! - Q3: a take returns the entry with the least `(deadline, seq)` among the due entries
//!   queued before it started: the popped head was checked under its shard's lock against
//!   every other shard's published head, and ties were compared under all the tied locks.
//!   Sequence numbers follow submission order: within a shard they grow under its lock;
//!   across shards, of two submissions where one returns before the other starts, the
//!   second's clock reading is not smaller (the monotonic clock), and larger unless the
//!   clock did not tick during the hand-off between the two threads or, for one thread's
//!   two due submissions in different shards (`lock_to_submit`), between the two (it
//!   does on a nanosecond clock: a submission alone takes longer); a `ManualClock` pool
//!   uses one counter, whose order agrees with happens-before.
//! - Q4: `active` counts takes not yet `finished`; a take increments it in the critical
//!   section that pops, so a thread holding every shard lock sees each due entry either
//!   queued or counted (`wait_idle`). A run that goes on after its take finished holds a
//!   count of its own (`hold`), taken while the take's still counts.
//! - Q6: bit `i` of `nonempty` is set iff shard `i`'s published head is not `EMPTY`,
//!   whenever that shard's lock is free; only its lock holder changes the bit, after the
//!   head and before the unlock. So every scan (the take's pick and Q3's re-scan, the
//!   emptiness hint) reads only the shards the mask names, and everything Q1 and Q3
//!   order through a shard's head (the RMWs on `wake_at`, a shard lock's hand-over)
//!   orders the bit too.
//! - Above eight shards, Q7 of `heads.rs`: each group of eight publishes its least
//!   head, refreshed under the group's lock after a head change and before the wake-up
//!   it owes; scans read the minima and then one group's heads, so a take's cost grows
//!   with the logarithm of the shard count (`docs/BENCHMARKS.md`, "Many workers, by
//!   simulation").
//! - Q5: F1–F5 of `waiters.rs` hold on the coordinator: at most one leader, who clears
//!   its lead itself, at most one backup behind it, and every exit of a take (an element, a
//!   timeout, a stop condition) goes through a [`Leaving`] guard that, with a head left,
//!   followers waiting and no leader, wakes one of them. The guard drops after the
//!   coordinator is released, and reads `wake_at == EMPTY` ("followers, no leader") as its
//!   hint before it locks.
//!
//! # Ordering
//! Shard contents are under their mutexes; `Shard::head` is stored `Release` by the lock
//! holder and loaded `Acquire` by scanners (a hint that the lock re-checks, except in Q1's
//! pattern, which orders through the RMWs on `wake_at`: `AcqRel`); `nonempty` is changed by
//! `AcqRel` RMWs after the head store and loaded `Acquire` before the heads (Q6). `seq`
//! (the `ManualClock` counter) is `Relaxed`: its modification order already agrees with
//! happens-before, which is all FIFO needs. `active` and `idle_waiters` are RMWs (`AcqRel`)
//! on both sides of `wait_idle`'s check, for the same reason as Q1. The waiters'
//! `head_changes` is a `Relaxed` hint for spinners (`waiters.rs`, `park.rs`).

use crate::sync::Ordering;
use std::cell::Cell;
use std::fmt;
use std::time::Instant;

use crossbeam_utils::CachePadded;

use self::heads::Group;
use super::heap::InEntry;
use super::store::Store;
use super::waiters::{HandOn, Leaving, Signals, Taker, Waiters};
use super::{SpinPolicy, Take, Timed, Tracked};
use crate::clock::{AdvanceListener, Clock, Ticks};
use crate::sync::{AtomicU64, AtomicUsize, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// `Shard::head` of an empty shard. A head due at `clock::NEVER` (the same value: a
/// periodic task whose next run saturated) is published as [`NEVER_DUE`] instead, so a
/// published head never looks empty; nothing that decides on emptiness for good trusts
/// the hint without the locks.
const EMPTY: Ticks = Ticks::MAX;

/// What a head due at `clock::NEVER` publishes: later than any clock reading (C1 in
/// `clock.rs`: time stops at `FAR_FUTURE`), so it is never due, yet not [`EMPTY`].
const NEVER_DUE: Ticks = EMPTY - 1;

/// How long a take that found nothing due waits for the coordinator before it looks at
/// the heads again ([`ShardedQueue::coord_for_take`]).
#[cfg(not(loom))]
const COORD_PATIENCE: Duration = Duration::from_micros(50);

/// The most shards a queue has.
pub(crate) const MAX_SHARDS: usize = 64;

// Q6: one bit per shard in `nonempty`.
const _: () = assert!(MAX_SHARDS <= u64::BITS as usize);

/// One shard: a store under its own mutex and its published head.
struct Shard<E: Tracked, X> {
    state: Mutex<ShardState<E, X>>,
    /// The head's deadline, or [`EMPTY`] (Q2).
    head: AtomicU64,
}

/// What a shard's mutex guards.
pub(crate) struct ShardState<E: Tracked, X> {
    store: Store<E, InEntry>,
    /// The least sequence number this shard may hand out next: one more than its last
    /// (Q3).
    next_seq: u64,
    /// The owner's per-shard state.
    pub(crate) ext: X,
}

/// The sharded queue (module notes).
pub(crate) struct ShardedQueue<E: Tracked, X> {
    shards: Box<[CachePadded<Shard<E, X>>]>,
    /// The coordinator: the waiting takers' state (Q5, `waiters.rs`). Padded, as
    /// `wake_at`, `seq` and `active` are: takers write it as they go to wait, and what
    /// every submission reads (`shards`, `clock`) must not share its lines.
    coord: CachePadded<Mutex<Waiters>>,
    /// The takers' condition variables, on the coordinator mutex.
    signals: Signals,
    /// `wait_idle`'s wait, on the coordinator mutex.
    idle_cv: Condvar,
    /// The deadline before which a new head must wake a taker (Q1).
    wake_at: CachePadded<AtomicU64>,
    /// Bit `i` set iff shard `i` publishes a head (Q6): scans read only those shards.
    nonempty: CachePadded<AtomicU64>,
    /// With more than `heads::FANOUT` shards, each group's least head (Q7); else empty.
    groups: Box<[CachePadded<Group>]>,
    /// Next FIFO stamp on a `ManualClock` (Q3; the real clock stamps with its readings).
    seq: CachePadded<AtomicU64>,
    /// Takes not yet finished (Q4). Padded: every take and every finish writes it, and
    /// unpadded it shared a line with `clock`, which every submission and take reads.
    active: CachePadded<AtomicUsize>,
    /// Threads in `wait_idle`.
    idle_waiters: AtomicUsize,
    clock: Clock,
}

/// Which lock a thread waits for, for the probe (`probe.rs`).
#[derive(Clone, Copy)]
enum Contended {
    Shard,
    Coord,
}

/// Locks `m`; with `--cfg schedpool_probe`, a contended wait is recorded as `which`.
#[inline]
fn lock_as<T>(m: &Mutex<T>, which: Contended) -> MutexGuard<'_, T> {
    #[cfg(all(schedpool_probe, not(loom)))]
    {
        use crate::probe::{self, State};
        let state = match which {
            Contended::Shard => State::ShardLock,
            Contended::Coord => State::CoordLock,
        };
        probe::lock(m, state)
    }
    #[cfg(not(all(schedpool_probe, not(loom))))]
    {
        let _ = which;
        m.lock()
    }
}

thread_local! {
    /// This thread's shard number (modulo a queue's shard count); assigned on first use.
    static LOCAL_SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The next thread's number ([`local_number`]). std's atomic in every build: a static
/// outside any model. Relaxed: uniqueness only.
static NEXT_THREAD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// This thread's shard number: threads are numbered round-robin on first use, so the
/// first `S` threads that submit get `S` different shards.
fn local_number() -> usize {
    LOCAL_SHARD.with(|c| {
        let n = c.get();
        if n != usize::MAX {
            return n;
        }
        let n = NEXT_THREAD.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        c.set(n);
        n
    })
}

impl<E: Timed + Tracked, X> ShardedQueue<E, X> {
    /// A queue of `shards` shards (rounded up to a power of two, at most [`MAX_SHARDS`]),
    /// each with its own `ext`; its leader waits with `spin` and wakes at deadlines rounded
    /// up to `precision` (`park.rs`).
    pub(crate) fn new(
        clock: Clock,
        shards: usize,
        spin: SpinPolicy,
        precision: Duration,
        mut ext: impl FnMut() -> X,
    ) -> Self {
        let n = shards.clamp(1, MAX_SHARDS).next_power_of_two();
        ShardedQueue {
            shards: (0..n)
                .map(|_| {
                    CachePadded::new(Shard {
                        state: Mutex::new(ShardState {
                            store: Store::with_capacity(0),
                            next_seq: 0,
                            ext: ext(),
                        }),
                        head: AtomicU64::new(EMPTY),
                    })
                })
                .collect(),
            coord: CachePadded::new(Mutex::new(Waiters::new(spin, precision))),
            signals: Signals::new(),
            idle_cv: Condvar::new(),
            wake_at: CachePadded::new(AtomicU64::new(0)),
            nonempty: CachePadded::new(AtomicU64::new(0)),
            groups: heads::groups(n),
            seq: CachePadded::new(AtomicU64::new(0)),
            active: CachePadded::new(AtomicUsize::new(0)),
            idle_waiters: AtomicUsize::new(0),
            clock,
        }
    }

    #[inline]
    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The calling thread's shard.
    #[inline]
    pub(crate) fn local_shard(&self) -> usize {
        local_number() & (self.shards.len() - 1)
    }

    /// The stamp a sequence number starts from (Q3): on the real clock, the time of the
    /// operation (`now`, a clock reading the caller made, or a fresh one); on a
    /// `ManualClock`, whose time stands still, one shared counter.
    #[inline]
    fn stamp(&self, now: Option<Ticks>) -> u64 {
        match self.clock {
            Clock::Real { .. } => now.unwrap_or_else(|| self.clock.now()),
            // Relaxed: the counter's modification order agrees with happens-before.
            Clock::Manual(_) => self.seq.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Locks the shard a submission goes to: the calling thread's own, or, for a task
    /// `due` at once, the first one after it whose lock is free, so that the submission
    /// does not wait for a worker popping in its own (module notes). With every shard
    /// locked it waits for its own.
    #[inline]
    pub(crate) fn lock_to_submit(&self, due: bool) -> ShardGuard<'_, E, X> {
        let own = self.local_shard();
        if due {
            let mask = self.shards.len() - 1;
            for index in (own..own + self.shards.len()).map(|i| i & mask) {
                let shard = &self.shards[index];
                if let Some(state) = shard.state.try_lock() {
                    return ShardGuard {
                        queue: self,
                        shard,
                        index,
                        state: Some(state),
                    };
                }
            }
        }
        self.lock(own)
    }

    /// Locks shard `index` (taken modulo the shard count).
    #[inline]
    pub(crate) fn lock(&self, index: usize) -> ShardGuard<'_, E, X> {
        let index = index & (self.shards.len() - 1);
        let shard = &self.shards[index];
        ShardGuard {
            queue: self,
            shard,
            index,
            state: Some(lock_as(&shard.state, Contended::Shard)),
        }
    }

    /// Locks the coordinator.
    #[inline]
    fn coord(&self) -> MutexGuard<'_, Waiters> {
        lock_as(&self.coord, Contended::Coord)
    }

    /// Locks the coordinator for a take that found nothing due, waiting at most
    /// [`COORD_PATIENCE`] on the real clock (`None` then: the caller looks at the heads
    /// again). The coordinator is held for a few hundred nanoseconds, so a longer wait
    /// means its holder, or the thread the mutex was handed to (a woken waiter, which
    /// parking_lot's fair unlock makes the owner before it runs), is not on a CPU; a head
    /// that falls due meanwhile needs no coordinator to be popped.
    #[inline]
    fn coord_for_take(&self) -> Option<MutexGuard<'_, Waiters>> {
        #[cfg(not(loom))]
        if matches!(self.clock, Clock::Real { .. }) {
            if let Some(c) = self.coord.try_lock() {
                return Some(c);
            }
            probe!(CoordLock);
            let c = self.coord.try_lock_for(COORD_PATIENCE);
            probe!(Take);
            return c;
        }
        Some(self.coord())
    }

    /// Locks every shard, in index order.
    pub(crate) fn lock_all(&self) -> AllShards<'_, E, X> {
        AllShards {
            guards: (0..self.shards.len()).map(|i| self.lock(i)).collect(),
        }
    }

    /// Entries queued (locks every shard).
    pub(crate) fn len(&self) -> usize {
        self.lock_all().len()
    }

    /// As [`is_empty_hint`](Self::is_empty_hint), ordered after every shard-emptying
    /// critical section that this thread's own preceded or that read this call's RMW, so
    /// of two threads that each empty a shard and then ask, at least one sees both empty
    /// (E3's wake-up after shutdown cannot be lost between two of them).
    pub(crate) fn is_empty_synced(&self) -> bool {
        self.wake_at.fetch_add(0, Ordering::AcqRel); // the RMW that orders (Q1's pattern)
        self.is_empty_hint()
    }

    /// Wakes one waiter after a new earliest head (Q1, F2): the leader, or a follower.
    #[cold]
    fn signal(&self) {
        let c = self.coord();
        self.signals.head_changed(&c, true);
    }

    /// Wakes every waiting taker; each re-checks its condition.
    pub(crate) fn wake_all(&self) {
        let _c = self.coord(); // a taker between its check and its wait holds it
        self.signals.wake_all();
    }

    /// Publishes `wake_at` for the coordinator's state `w` (Q1). AcqRel: Q1's RMW.
    #[inline]
    fn publish_wake(&self, w: &Waiters) {
        let at = match w.lead_until() {
            Some(until) => until,
            None if w.followers() > 0 => EMPTY,
            None => 0,
        };
        self.wake_at.swap(at, Ordering::AcqRel);
    }

    /// Pops the earliest entry if it is due now (Q3). Never blocks on the coordinator.
    #[cfg(test)]
    fn pop_due(&self) -> Option<(E, Ticks)> {
        self.pop_due_with(&mut |_, _| ())
    }

    /// Pops the earliest entry if it is due now (Q3); `on_take` sees it and the take's time
    /// in the critical section that pops it (Q4), with the shard still locked. Never
    /// blocks on the coordinator.
    fn pop_due_with(&self, on_take: &mut impl FnMut(&E, Ticks)) -> Option<(E, Ticks)> {
        loop {
            let (best, at, tie) = self.scan();
            if best == EMPTY {
                return None;
            }
            let now = self.clock.now();
            if best > now {
                return None;
            }
            if tie {
                return self.pop_tied(now, on_take);
            }
            let mut g = self.lock(at);
            let Some(head) = g.store().head_deadline().filter(|&d| d <= now) else {
                continue; // taken or moved since the scan
            };
            // Q3: re-scan the others under this lock (an entry queued in another shard
            // after the scan but before this lock was taken may come first: the model
            // `loom_fifo_across_shards_while_a_taker_scans`).
            let (earlier, tied) = self.others_before(at, head);
            if earlier {
                continue;
            }
            if tied {
                drop(g);
                return self.pop_tied(now, on_take);
            }
            let entry = g.pop_counted();
            if let Some(e) = &entry {
                on_take(e, now);
            }
            return entry.map(|e| (e, now));
        }
    }

    /// [`pop_due`](Self::pop_due) for the models, which take without waiting.
    #[cfg(all(test, loom))]
    pub(crate) fn pop_due_for_models(&self) -> Option<(E, Ticks)> {
        self.pop_due()
    }

    /// Pops the least `(deadline, seq)` among the due heads, under every shard's lock
    /// (Q3's tie-break; rare on the real clock).
    #[cold]
    fn pop_tied(&self, now: Ticks, on_take: &mut impl FnMut(&E, Ticks)) -> Option<(E, Ticks)> {
        let mut all = self.lock_all();
        let mut best: Option<usize> = None;
        for (i, g) in all.guards.iter().enumerate() {
            if let Some(head) = g.store().peek().filter(|h| h.deadline() <= now) {
                let better = match best {
                    None => true,
                    Some(b) => {
                        let current = all.guards[b].store().peek().expect("seen above");
                        head.before(current)
                    }
                };
                if better {
                    best = Some(i);
                }
            }
        }
        let b = best?;
        let entry = all.guards[b].pop_counted()?;
        on_take(&entry, now);
        Some((entry, now))
    }

    /// [`take_with`](Self::take_with) with nothing to do at the pop (the tests and the
    /// models).
    #[cfg(test)]
    pub(crate) fn take(&self, timeout: Option<Instant>, stop: impl FnMut(bool) -> bool) -> Take<E> {
        self.take_with(timeout, stop, |_, _| ())
    }

    /// Waits for a due entry with the leader/follower protocol on the coordinator (Java:
    /// `take` / timed `poll`). Returns early when `stop` holds (checked when no entry is
    /// due on entry, before every wait and after every wake-up; its argument is
    /// [`is_empty_hint`]) or when the real-time `timeout` passes. A taken entry is
    /// counted in `active` until [`finished`](Self::finished) (Q4). `on_take` sees the
    /// taken entry and the take's time in the critical section that pops it, with its
    /// shard still locked (a worker puts the run in its slot there, so that a snapshot
    /// under every shard's lock finds it: `pool/running.rs`); it must take no shard's
    /// and not the coordinator's lock.
    ///
    /// [`is_empty_hint`]: Self::is_empty_hint
    pub(crate) fn take_with(
        &self,
        timeout: Option<Instant>,
        mut stop: impl FnMut(bool) -> bool,
        mut on_take: impl FnMut(&E, Ticks),
    ) -> Take<E> {
        // Q5/F3: every way out of this loop hands on. Declared first, so it drops after the
        // coordinator guard of the iteration that returns (lock order: no coordinator
        // held while it locks one).
        let _leaving = Leaving(self);
        // A due entry is taken before the stop condition is asked: a stop that holds
        // with an entry due (a smaller core size) can wait for the next take, and the
        // common take saves a scan.
        if let Some((entry, now)) = self.pop_due_with(&mut on_take) {
            return Take::Item(entry, now);
        }
        let mut taker = Taker::new(&self.clock, timeout);
        loop {
            if stop(self.is_empty_hint()) {
                return Take::Stopped;
            }
            if let Some((entry, now)) = self.pop_due_with(&mut on_take) {
                return Take::Item(entry, now);
            }
            let Some(mut c) = self.coord_for_take() else {
                continue; // the coordinator is held by a thread off its CPU: look again
            };
            if stop(self.is_empty_hint()) {
                return Take::Stopped;
            }
            let (head, _, _) = self.scan();
            if head != EMPTY && head <= self.clock.now() {
                continue; // due: pop it without the coordinator
            }
            if taker.expired() {
                return Take::TimedOut; // only after one last look at the heads (Java's poll)
            }
            // Q1: each change to the waiters is published in `wake_at`, and before it
            // sleeps the taker re-scans the heads.
            taker.wait(
                &self.signals,
                &mut c,
                |w| w,
                &self.clock,
                (head != EMPTY).then_some(head),
                |w| {
                    self.publish_wake(w);
                    self.scan().0
                },
            );
        }
    }

    /// A taken entry's run is over (Q4); wakes `wait_idle` callers if the pool may be
    /// idle now.
    #[inline]
    pub(crate) fn finished(&self) {
        // AcqRel RMWs on both sides of `wait_idle`'s check (module notes).
        if self.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.notify_idle();
        }
    }

    /// One more take in progress, not a pop's: a run that goes on after its worker's take
    /// finishes (an async run off its worker, `pool/awaiting.rs`), made while that take
    /// still counts, so `active` does not reach zero between the two (Q4); given back by
    /// [`finished`](Self::finished).
    #[inline]
    pub(crate) fn hold(&self) {
        // AcqRel: as the pop's increment (module notes).
        self.active.fetch_add(1, Ordering::AcqRel);
    }

    /// Takes in progress (Q4).
    #[inline]
    pub(crate) fn active(&self) -> usize {
        self.active.load(Ordering::Acquire)
    }

    /// Wakes `wait_idle` callers, if any.
    #[inline]
    fn notify_idle(&self) {
        if self.idle_waiters.load(Ordering::Acquire) > 0 {
            let _c = self.coord(); // a waiter between its check and its wait holds it
            self.idle_cv.notify_all();
        }
    }

    /// Waits until no entry is due and no take is in progress (`wait_idle`); `false` if
    /// `until` passed first.
    pub(crate) fn wait_idle(&self, until: Option<Instant>) -> bool {
        let mut c = self.coord();
        self.idle_waiters.fetch_add(1, Ordering::AcqRel);
        let idle = loop {
            let idle = {
                let all = self.lock_all();
                let now = self.clock.now();
                // Q4: an RMW read, ordered against `finished`'s decrement.
                !all.any_due(now) && self.active.fetch_add(0, Ordering::AcqRel) == 0
            };
            if idle {
                break true;
            }
            let timed_out = match until {
                Some(until) => self.idle_cv.wait_until(&mut c, until),
                None => {
                    self.idle_cv.wait(&mut c);
                    false
                }
            };
            if timed_out && until.is_some_and(|u| Instant::now() >= u) {
                let all = self.lock_all();
                break !all.any_due(self.clock.now()) && self.active() == 0;
            }
        };
        self.idle_waiters.fetch_sub(1, Ordering::AcqRel);
        idle
    }
}

impl<E: Timed + Tracked, X> HandOn for &ShardedQueue<E, X> {
    /// Q5/F3: with heads left, followers waiting and no leader, one follower must take the
    /// lead. `wake_at == EMPTY` says exactly "followers, no leader" (a hint; the wake-up is
    /// decided under the coordinator). Called with no lock held.
    #[inline]
    fn hand_on(&mut self) {
        // Acquire: a hint (Q1's publish is the RMW under the coordinator).
        if self.wake_at.load(Ordering::Acquire) == EMPTY && !self.is_empty_hint() {
            let c = self.coord();
            self.signals.hand_on(&c, !self.is_empty_hint());
        }
    }
}

impl<E: Timed + Tracked + Send, X: Send> AdvanceListener for ShardedQueue<E, X> {
    /// C3 (`clock.rs`): the time moved; the leader re-reads it, or with no leader one
    /// follower takes the lead of a head that may now be due.
    fn on_advance(&self) {
        let c = self.coord();
        self.signals.head_changed(&c, !self.is_empty_hint());
        // `wait_idle` re-checks for due entries too.
        drop(c);
        self.notify_idle();
    }
}

impl<E: Tracked, X> fmt::Debug for ShardedQueue<E, X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedQueue")
            .field("shards", &self.shards.len())
            .finish_non_exhaustive()
    }
}

mod guard;
mod heads;

pub(crate) use guard::{AllShards, ShardGuard};

#[cfg(all(test, not(loom)))]
mod tests;
