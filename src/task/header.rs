//! [`Header`]: the part of a task every holder sees, whatever its output type: its state
//! word, home shard and kind, number, deadline or FIFO number (T4), queue position, and
//! the reference count and vtable of its [`TaskRef`](super::TaskRef)s (R1–R3, `raw/mod.rs`).

use crate::sync::Ordering;
use std::fmt;

use crate::clock::Ticks;
use crate::queue::Position;
use crate::sync::{AtomicU64, AtomicU8};

use super::raw;
use super::state::{End, Exchange, Start, State, TaskState};

/// The part of a task every holder can see, whatever its output type.
pub(crate) struct Header {
    /// See `state.rs` (T1, T2).
    state: TaskState,
    /// The executor queue's shard the task lives in (`queue/sharded.rs`), [`NO_HOME`]
    /// before its first queueing: set then, under that shard's lock, and never changed, so
    /// `position` and a periodic task's `NextRun` always belong to one lock (T4). Bit [`PERIODIC`] says
    /// the schedule is not a one-shot (a running periodic task is cancellable); it is set
    /// at construction and never changes. `Relaxed`: whoever reads the home got the task
    /// through that queueing (the submitter's future, a worker's take under the shard's
    /// lock), which orders the store before the load.
    home: AtomicU8,
    /// The task's number for logs and spans ([`Header::id`]): the high 16 and the low 32
    /// of its 48 bits, written at construction, before the task is shared.
    id_hi: u16,
    id_lo: u32,
    /// Out of the queue, the task's deadline: the current run's, then the next one.
    /// While the task is queued its heap node holds the deadline, and this word the
    /// node's FIFO sequence number (`Header::seq`): the queue writes the number before
    /// the push and hands the deadline back when the node leaves (`Tracked::left`), both
    /// under the home shard's lock (T4), so a 16-byte node needs no room for it. Written
    /// out of the queue by the thread that owns the task's schedule at that moment (the
    /// submitter, the running worker); `Relaxed` (module notes).
    when: AtomicU64,
    /// The task's place in the queue while it is queued (T4).
    pub(crate) position: Position,
    /// The number of [`TaskRef`](super::TaskRef)s to the task (R3, `raw/mod.rs`).
    pub(super) refs: std::sync::atomic::AtomicU32,
    /// The task's type as its [`TaskRef`](super::TaskRef)s see it (R2, `raw/mod.rs`).
    pub(super) vtable: &'static raw::VTable,
}

/// "Not queued yet" in `Header::home`'s low bits (shards number at most
/// `queue::sharded::MAX_SHARDS`).
const NO_HOME: u8 = 0x7f;

/// `Header::home`'s bit for a periodic task.
const PERIODIC: u8 = 0x80;

/// Task numbers: each thread hands out numbers from an aligned block of `ID_BLOCK` that
/// it reserves from one process-wide counter, so a submission costs a thread-local
/// increment and no shared write. Numbers start at 1, and none repeats in the process's
/// first 2^48 tasks (eight years at a million tasks a second); after that they wrap.
#[inline]
fn next_id() -> u64 {
    const ID_BLOCK: u64 = 1024;
    // std's atomic in every build: a static outside any model. Relaxed: uniqueness only
    // (one RMW's modification order).
    static NEXT_BLOCK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    thread_local! {
        /// This thread's next number; at a multiple of `ID_BLOCK` its block is used up.
        static NEXT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
    #[cold]
    fn new_block() -> u64 {
        // Block 0 starts at 1: no task is number 0.
        NEXT_BLOCK
            .fetch_add(ID_BLOCK, std::sync::atomic::Ordering::Relaxed)
            .max(1)
    }
    NEXT.with(|n| {
        let mut id = n.get();
        if id % ID_BLOCK == 0 {
            id = new_block();
        }
        n.set(id + 1);
        id
    })
}

/// "No deadline": a periodic task's last start before its first run (`periodic.rs`).
pub(crate) const NO_DEADLINE: u64 = u64::MAX;

impl Header {
    /// A one-shot's header: SCHEDULED, with its closure in its slot (`raw/slot.rs`, R4).
    #[inline]
    pub(crate) fn new_once(deadline: Ticks) -> Self {
        Header {
            state: TaskState::new_once(),
            ..Header::new(false, deadline)
        }
    }

    /// The task's address: its key in the waiter table (`waiting.rs`).
    #[inline]
    pub(crate) fn key(&self) -> usize {
        self as *const Header as usize
    }

    #[inline]
    pub(crate) fn new(periodic: bool, deadline: Ticks) -> Self {
        let id = next_id();
        Header {
            state: TaskState::new(),
            home: AtomicU8::new(if periodic {
                PERIODIC | NO_HOME
            } else {
                NO_HOME
            }),
            id_hi: (id >> 32) as u16,
            id_lo: id as u32,
            when: AtomicU64::new(deadline),
            position: Position::new(),
            refs: std::sync::atomic::AtomicU32::new(1),
            vtable: &raw::UNBOXED,
        }
    }

    /// The header of `task`'s suspended run (`suspended.rs`): its queue entry, with the
    /// task's number and home shard, so that its polls are the task's in spans and its
    /// entry stays in the task's shard.
    pub(crate) fn suspended(task: &Header) -> Self {
        let id = task.id();
        Header {
            home: AtomicU8::new(task.home.load(Ordering::Relaxed) & NO_HOME),
            id_hi: (id >> 32) as u16,
            id_lo: id as u32,
            ..Header::new(false, task.deadline())
        }
    }

    /// The task's number for logs, spans and `Debug`: unique in the process ([`next_id`]),
    /// counted from 1, fixed for the task's life (a periodic task keeps it across runs).
    #[inline]
    pub(crate) fn id(&self) -> u64 {
        u64::from(self.id_hi) << 32 | u64::from(self.id_lo)
    }

    /// Fixes the task's home shard at its first queueing (later calls keep the first).
    #[inline]
    pub(crate) fn settle(&self, home: usize) {
        let bits = self.home.load(Ordering::Relaxed);
        if bits & NO_HOME == NO_HOME {
            debug_assert!(
                home < usize::from(NO_HOME),
                "queue::sharded::MAX_SHARDS fits below NO_HOME"
            );
            // Only the first queueing writes, under its shard's lock; the kind bit is kept.
            self.home
                .store(bits & PERIODIC | home as u8, Ordering::Relaxed);
        }
    }

    /// The task's home shard (0 before its first queueing, when no shard holds it).
    #[inline]
    pub(crate) fn home(&self) -> usize {
        match self.home.load(Ordering::Relaxed) & NO_HOME {
            NO_HOME => 0,
            h => usize::from(h),
        }
    }

    /// The current state (`state.rs`).
    #[inline]
    pub(crate) fn state(&self) -> State {
        self.state.load()
    }

    #[inline]
    pub(crate) fn is_periodic(&self) -> bool {
        self.home.load(Ordering::Relaxed) & PERIODIC != 0
    }

    /// The deadline of a task out of the queue (`when`); a queued task's is in
    /// its node (`Pool::deadline_of` finds either).
    #[inline]
    pub(crate) fn deadline(&self) -> Ticks {
        self.when.load(Ordering::Relaxed)
    }

    /// Sets the deadline of a task out of the queue.
    #[inline]
    pub(crate) fn set_deadline(&self, d: Ticks) {
        self.when.store(d, Ordering::Relaxed);
    }

    /// A queued task's FIFO sequence number (`when`): under the home shard's
    /// lock (T4).
    #[inline]
    pub(crate) fn seq(&self) -> u64 {
        self.when.load(Ordering::Relaxed)
    }

    /// Sets the sequence number of a task about to be queued, or re-keyed in the queue,
    /// under its home shard's lock (T4).
    #[inline]
    pub(crate) fn set_seq(&self, seq: u64) {
        self.when.store(seq, Ordering::Relaxed);
    }

    // The state machine's one door: every edge of `state.rs` is taken through the header,
    // which adds the task's kind where an edge depends on it (`cancel`). Each forwards to
    // the method of the same name on the word, whose notes give its orderings.

    /// SCHEDULED -> RUNNING (T1); `NotScheduled` if the task is not SCHEDULED (cancelled).
    #[inline]
    pub(crate) fn start(&self) -> Start {
        self.state.start()
    }

    /// A one-shot's SCHEDULED -> RUNNING with its closure still in the slot (T1).
    #[inline]
    pub(crate) fn start_once(&self) -> Start {
        self.state.start_once()
    }

    /// A one-shot runner's RUNNING -> DONE or PANICKED, with `OUTPUT` set.
    #[inline]
    pub(crate) fn finish_with_output(&self, end: End) -> Exchange {
        self.state.finish_with_output(end)
    }

    /// Clears `CLOSURE` while the task is in state `state`; `true` if this call did.
    #[inline]
    pub(crate) fn take_closure(&self, state: State) -> bool {
        self.state.take_closure(state)
    }

    /// Clears `OUTPUT`; `true` if this call did.
    #[inline]
    pub(crate) fn take_output(&self) -> bool {
        self.state.take_output()
    }

    /// Sets `WAITING` unless the task is terminal (A1); `false` if it is.
    #[inline]
    pub(crate) fn wait_on(&self) -> bool {
        self.state.wait_on()
    }

    /// Someone registered as a waiter (`WAITING`).
    #[inline]
    pub(crate) fn is_waited(&self) -> bool {
        self.state.is_waited()
    }

    /// RUNNING -> DONE, PANICKED or CANCELLED: the end of a run, by its runner.
    #[inline]
    pub(crate) fn finish(&self, end: End) -> Exchange {
        self.state.finish(end)
    }

    /// RUNNING -> SCHEDULED: a periodic run that continues, by its runner.
    #[inline]
    pub(crate) fn requeue(&self) -> Exchange {
        self.state.requeue()
    }

    /// SCHEDULED -> DONE or PANICKED: a periodic task that ends before any run.
    #[inline]
    pub(crate) fn end_unrun(&self, end: End) -> Exchange {
        self.state.end_unrun(end)
    }

    /// The whole word, state and flags (`Debug` and the tests).
    #[inline]
    pub(crate) fn word(&self) -> u8 {
        self.state.word()
    }

    /// -> CANCELLED from SCHEDULED, or from RUNNING for a periodic task. `true` if this
    /// call made the transition (T2: the caller must then run `Task::finish_cancelled`).
    #[must_use]
    pub(crate) fn cancel(&self) -> bool {
        self.state.cancel(self.is_periodic())
    }

    /// -> CANCELLED from SCHEDULED or RUNNING, for any kind (`state.rs`: an interrupt).
    /// `true` if this call made the transition (T2, as for [`cancel`](Self::cancel)).
    #[must_use]
    pub(crate) fn interrupt(&self) -> bool {
        self.state.interrupt()
    }

    /// `true` if an [`interrupt`](Self::interrupt) cancelled the task (not a plain
    /// cancel, which also stops a running periodic task: `state.rs`, `INTERRUPTED`).
    #[inline]
    pub(crate) fn is_interrupted(&self) -> bool {
        self.state.is_interrupted()
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Header")
            .field("id", &self.id())
            .field("periodic", &self.is_periodic())
            .field("state", &self.state().name())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_across_threads_and_blocks() {
        let per_thread = 3000; // more than one block each
        let ids: Vec<Vec<u64>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        (0..per_thread)
                            .map(|_| Header::new(false, 0).id())
                            .collect()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let all: HashSet<u64> = ids.iter().flatten().copied().collect();
        assert_eq!(all.len(), 4 * per_thread);
        assert!(!all.contains(&0), "numbers start at 1");
        for mine in &ids {
            assert!(mine.windows(2).all(|w| w[0] < w[1]), "one thread's grow");
        }
    }

    #[test]
    fn kind_and_home_share_a_byte_without_mixing() {
        let h = Header::new(true, 0);
        assert!(h.is_periodic());
        assert_eq!(h.home(), 0);
        h.settle(63);
        h.settle(5); // the first queueing's home stays
        assert_eq!(h.home(), 63);
        assert!(h.is_periodic());
        let once = Header::new(false, 0);
        once.settle(0);
        assert_eq!(once.home(), 0);
        assert!(!once.is_periodic());
        assert!(once.cancel(), "SCHEDULED -> CANCELLED");
    }
}
