//! [`PriorityBlockingQueue<T>`] and [`PriorityKey`]: Java's `PriorityBlockingQueue`,
//! indexed, as a thin layer over `queue/blocking.rs` and `queue/heap.rs`.
//!
//! # Design
//! Every entry is due at tick 0, so the blocking queue's leader/follower wait degenerates
//! to "wait while empty": no consumer ever becomes leader, an offer into an empty queue
//! wakes one consumer, and a consumer that leaves with elements left wakes the next (F3 in
//! `queue/waiters.rs`). The element itself is the heap key (`Ord`, ties by offer order). Java's
//! `remove(Object)` is O(n); here `remove(PriorityKey)` is O(log n).
//!
//! Unlike the executor's queue, user code does run under the lock here: the element's
//! `Ord` (it is the key) and `peek_with`'s closure. Neither may call back into the same
//! queue.
//!
//! An `Ord` that panics never leaves the queue out of order (`queue/heap/mod.rs`): a
//! sift whose comparison panics is undone, so a `poll`, `remove` or `drain_to` puts back
//! the element it was taking; an element `offer` or `update` could not place is taken
//! out and dropped, after the lock, before the panic goes on.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use crate::clock::{Clock, Ticks};
use crate::queue::{BlockingQueue, Timed};
use crate::queue::{Handle, Ordered};
use crate::sync::unique_id;

/// After a panic in an `offer` or an `update` (the element's `Ord`, or `update`'s
/// closure): the element the heap could not place is taken out, so that every other
/// element stays in priority order, and dropped with the lock released (I4); then the
/// panic goes on.
#[cold]
fn refuse<T: Ord>(mut q: crate::queue::Locked<'_, Prioritized<T>>, panic: crate::user::Panic) -> ! {
    let refused = q.take_detached();
    drop(q);
    crate::user::drop_quietly(refused);
    std::panic::resume_unwind(panic)
}

/// A heap entry ordered by the element, then by offer order.
struct Prioritized<T> {
    item: T,
    seq: u64,
}

impl<T: Ord> Ordered for Prioritized<T> {
    const MAY_PANIC: bool = true;

    #[inline]
    fn before(&self, other: &Self) -> bool {
        // The user's `Ord`, under the queue's own lock (U1's exception, `user.rs`): a
        // panic unwinds through the heap, whose positions stay true (`heap.rs`).
        match crate::user::under_own_lock(|| self.item.cmp(&other.item)) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Equal => self.seq < other.seq,
            std::cmp::Ordering::Greater => false,
        }
    }
}

impl<T: Ord> Timed for Prioritized<T> {
    #[inline]
    fn deadline(&self) -> Ticks {
        0 // always due
    }
}

/// An unbounded blocking min-priority queue: the smallest element by `Ord` comes out
/// first, equal elements in offer order (Java: `java.util.concurrent.PriorityBlockingQueue`).
///
/// ```
/// use schedpool::PriorityBlockingQueue;
///
/// let q = PriorityBlockingQueue::new();
/// q.offer(30);
/// let key = q.offer(10);
/// q.offer(20);
/// assert_eq!(q.remove(key), Some(10)); // O(log n), Java's is O(n)
/// assert_eq!(q.peek_with(|v| *v), Some(20));
/// let mut out = Vec::new();
/// assert_eq!(q.drain_to(&mut out, 10), 2);
/// assert_eq!(out, vec![20, 30]);
/// ```
pub struct PriorityBlockingQueue<T> {
    inner: BlockingQueue<Prioritized<T>>,
    id: u64,
}

/// Names one element of one [`PriorityBlockingQueue`]; safe forever like a
/// [`DelayKey`](crate::DelayKey).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PriorityKey {
    queue: u64,
    handle: Handle,
}

impl<T: Ord + Send + 'static> PriorityBlockingQueue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty queue with room for `n` elements before it reallocates (a hint: a size
    /// the allocator cannot provide is not reserved).
    pub fn with_capacity(n: usize) -> Self {
        PriorityBlockingQueue {
            inner: BlockingQueue::new(Clock::real(), n),
            id: unique_id(),
        }
    }

    /// Adds `item`. O(log n). Wakes one waiting consumer if the queue was empty.
    ///
    /// If `item`'s `Ord` panics, the panic goes on to the caller, `item` is not added (it
    /// is dropped, after the queue's lock), and the queue is as it was, in order.
    pub fn offer(&self, item: T) -> PriorityKey {
        let mut q = self.inner.lock();
        let seq = q.next_seq();
        let pushed = catch_unwind(AssertUnwindSafe(|| q.push(Prioritized { item, seq })));
        match pushed {
            Ok(handle) => PriorityKey {
                queue: self.id,
                handle,
            },
            Err(panic) => refuse(q, panic),
        }
    }

    /// Removes and returns the smallest element, blocking while the queue is empty.
    pub fn take(&self) -> T {
        self.inner.take_blocking().item
    }

    /// As [`take`](Self::take), but it can be told to stop: after [`close`](Self::close)
    /// it returns the elements still queued, then `None` at once, and a taker blocked in
    /// it wakes up.
    pub fn take_until_closed(&self) -> Option<T> {
        self.inner.take_until_closed().map(|e| e.item)
    }

    /// Closes the queue for waiting: every taker blocked in
    /// [`take_until_closed`](Self::take_until_closed) wakes, and from now on that call
    /// returns `None` once the queue is empty. Nothing else changes: `offer` still adds,
    /// and [`take`](Self::take) keeps waiting for an element (it never panics on a closed
    /// queue). `true` if this call closed it.
    pub fn close(&self) -> bool {
        self.inner.close()
    }

    /// `true` once [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Changes the element `key` names in place with `f` and moves it to its new place in
    /// O(log n) (a priority change: Java's queue needs a remove and a re-insert, O(n));
    /// the key stays valid. `false`, and `f` is not called, if the element is gone or the
    /// key belongs to another queue. `f` runs under the queue's lock: it must not use this
    /// queue. Among equal elements the changed one goes last, as if offered now.
    ///
    /// If the element's `Ord` (or `f`) panics, the panic goes on to the caller and the
    /// queue stays in order: the element is still there with its old value if the panic
    /// came before `f` changed it, and is otherwise taken out and dropped (a key the queue
    /// cannot compare has no place in it), its key then reaching nothing.
    ///
    /// ```
    /// use schedpool::PriorityBlockingQueue;
    ///
    /// let q = PriorityBlockingQueue::new();
    /// q.offer((5, "routine"));
    /// let urgent = q.offer((9, "was low"));
    /// assert!(q.update(urgent, |job| job.0 = 1)); // escalate
    /// assert_eq!(q.poll(), Some((1, "was low")));
    /// ```
    pub fn update(&self, key: PriorityKey, f: impl FnOnce(&mut T)) -> bool {
        if key.queue != self.id {
            return false;
        }
        let mut q = self.inner.lock();
        let seq = q.next_seq();
        let updated = catch_unwind(AssertUnwindSafe(|| {
            q.update(key.handle, |e| {
                f(&mut e.item);
                e.seq = seq;
            })
        }));
        match updated {
            Ok(found) => found,
            Err(panic) => refuse(q, panic),
        }
    }

    /// The smallest element, or `None` if the queue is empty; never blocks.
    pub fn poll(&self) -> Option<T> {
        self.inner.lock().pop().map(|e| e.item)
    }

    /// As [`take`](Self::take), giving up after `timeout` (real time).
    pub fn poll_timeout(&self, timeout: Duration) -> Option<T> {
        self.inner.take_timeout(timeout).map(|e| e.item)
    }

    /// Applies `f` to the smallest element without removing it. `f` runs under the
    /// queue's lock: it must not use this queue.
    pub fn peek_with<R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        // The caller's closure under the queue's lock, as documented (U1's exception).
        self.inner
            .lock()
            .peek()
            .map(|e| crate::user::under_own_lock(|| f(&e.item)))
    }

    /// Removes the element `key` names, in O(log n). `None` if it is gone or the key
    /// belongs to another queue.
    pub fn remove(&self, key: PriorityKey) -> Option<T> {
        if key.queue != self.id {
            return None;
        }
        self.inner.lock().remove(key.handle).map(|e| e.item)
    }

    /// Moves up to `max` elements, smallest first, to the end of `out`; returns how many
    /// (Java: `drainTo`).
    pub fn drain_to(&self, out: &mut Vec<T>, max: usize) -> usize {
        let mut q = self.inner.lock();
        let n = max.min(q.len());
        out.reserve(n);
        for _ in 0..n {
            out.extend(q.pop().map(|e| e.item));
        }
        n
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.inner.lock().len()
    }

    /// `true` if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every element; they are dropped after the lock is released.
    pub fn clear(&self) {
        let removed = self.inner.lock().clear();
        drop(removed);
    }
}

impl<T: Ord + Send + 'static> Default for PriorityBlockingQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for PriorityBlockingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PriorityBlockingQueue")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}
