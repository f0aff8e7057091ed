//! [`DelayQueue<T>`] and [`DelayKey`]: Java's `DelayQueue`, indexed, as a thin layer over
//! the public queues' blocking queue (`queue/blocking.rs`) and heap (`queue/heap.rs`); the
//! executor's own queue is the sharded one (`queue/sharded.rs`).
//!
//! # Design
//! Java's `DelayQueue` wraps a `PriorityQueue` with one lock and the leader/follower wait;
//! its `remove(Object)` is a linear scan. Here each offer returns a [`DelayKey`] (the
//! heap handle plus the queue's identity), so `remove` is O(log n), and a key whose element
//! is gone — taken, removed, cleared, or from another queue — is simply not found: the heap
//! checks a generation (no ABA) and the key checks the queue. Elements are dropped after the
//! lock is released (`clear`), or handed to the caller.

use std::fmt;
use std::time::{Duration, Instant};

use crate::clock::{self, AdvanceListener, Clock, ManualClock};
use crate::queue::Handle;
use crate::queue::{AsyncTake, BlockingQueue, TimedEntry};
use crate::sync::{unique_id, Arc, Weak};

/// An unbounded blocking queue whose elements become available at their deadline
/// (Java: `java.util.concurrent.DelayQueue`).
///
/// `take` blocks until the earliest element is due, with the leader/follower wait: one
/// consumer sleeps until the head's deadline, the others without a timeout. Elements with
/// equal deadlines come out in offer order. Share it between threads with `Arc`.
///
/// ```
/// use schedpool::{DelayQueue, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let q = DelayQueue::with_clock(clock.clone());
/// q.offer("later", Duration::from_secs(20));
/// let key = q.offer("cancelled", Duration::from_secs(5));
/// q.offer("sooner", Duration::from_secs(10));
/// assert_eq!(q.remove(key), Some("cancelled"));
/// assert_eq!(q.poll(), None); // nothing due yet
/// clock.advance(Duration::from_secs(30));
/// assert_eq!(q.drain_expired(), vec!["sooner", "later"]);
/// ```
pub struct DelayQueue<T> {
    inner: Arc<BlockingQueue<TimedEntry<T>>>,
    id: u64,
}

/// Names one element of one [`DelayQueue`]; returned by `offer`, used by `remove`.
///
/// A key stays safe forever: once its element is gone, `remove` returns `None`, also after
/// the element's slot is reused, and a key from another queue matches nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DelayKey {
    queue: u64,
    handle: Handle,
}

/// The future of [`DelayQueue::next_expired`]: the next element to fall due, or `None`
/// once the queue is closed and nothing is due.
#[must_use = "a future does nothing unless polled"]
pub struct NextExpired<T> {
    waiting: AsyncTake<TimedEntry<T>>,
}

impl<T: Send + 'static> std::future::Future for NextExpired<T> {
    type Output = Option<T>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<T>> {
        self.waiting
            .poll(cx)
            .map(|taken| taken.map(|(entry, _)| entry.value))
    }
}

/// The stream of [`DelayQueue::expirations`]: each element as it falls due, with its key
/// and deadline, until the queue is closed (or dropped) and nothing in it is due. It holds
/// the queue's core, not a borrow, so it can be moved into a spawned task.
///
/// Cancel safety: an element leaves the queue only in the poll that yields it, so dropping
/// the stream, or a pending `next()` on it (a `select!` branch that lost), loses nothing:
/// the element is still in the queue for the next taker. While it waits, the queue's one
/// timer thread wakes it (shared with [`next_expired`](DelayQueue::next_expired) and every
/// other waiter, and kept between consecutive waits).
#[must_use = "streams do nothing unless polled"]
pub struct Expirations<T> {
    waiting: AsyncTake<TimedEntry<T>>,
    id: u64,
}

impl<T: Send + 'static> futures_core::Stream for Expirations<T> {
    type Item = Expired<T>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Expired<T>>> {
        let id = self.id;
        let polled = self.waiting.poll(cx);
        polled.map(|taken| {
            taken.map(|(entry, handle)| expired(self.waiting.queue(), id, entry, handle))
        })
    }
}

/// The text of `on_tokio_timer`, shared by the future and the stream.
#[cfg(feature = "tokio")]
macro_rules! on_tokio_timer_doc {
    ($what:literal) => {
        concat!(
            "Sleeps on tokio's timer instead of the queue's timer thread (feature `tokio`): ",
            "each pending poll arms a `tokio::time::Sleep` at the head's deadline, and the ",
            "queue's thread wakes this ",
            $what,
            " only for an earlier head or a close. ",
            "Expirations then share the runtime's timer wheel and its wake-ups, as ",
            "tokio-util's `DelayQueue` does: with many expirations a second that is less ",
            "than half the CPU time of the queue's thread, at the wheel's millisecond ",
            "(elements come up to a millisecond or so after their deadline, where the ",
            "queue's thread is within tens of microseconds; `docs/BENCHMARKS.md`, \"Idle ",
            "timeouts through `expirations()`\").\n\n",
            "The runtime must have its timers on (`enable_time` or `enable_all`; ",
            "`#[tokio::main]` has them), as for `tokio::time::sleep`. Polled outside a tokio ",
            "runtime, or on a queue with a `ManualClock`, it sleeps on the queue's thread as ",
            "before. tokio's paused time (`test-util`) does not move the queue's deadlines, ",
            "which are real time."
        )
    };
}

impl<T: Send + 'static> NextExpired<T> {
    #[doc = on_tokio_timer_doc!("future")]
    ///
    /// ```
    /// use schedpool::DelayQueue;
    /// use std::time::Duration;
    ///
    /// # let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    /// # rt.block_on(async {
    /// let q = DelayQueue::new();
    /// q.offer("soon", Duration::from_millis(5));
    /// assert_eq!(q.next_expired().on_tokio_timer().await, Some("soon"));
    /// # });
    /// ```
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub fn on_tokio_timer(mut self) -> Self {
        self.waiting.use_tokio_timer();
        self
    }
}

impl<T: Send + 'static> Expirations<T> {
    #[doc = on_tokio_timer_doc!("stream")]
    ///
    /// ```
    /// use schedpool::DelayQueue;
    /// use std::future::poll_fn;
    /// use std::pin::Pin;
    /// use std::time::Duration;
    /// use futures_core::Stream;
    ///
    /// # let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    /// # rt.block_on(async {
    /// let q = DelayQueue::new();
    /// q.offer("later", Duration::from_millis(20));
    /// let mut expired = q.expirations().on_tokio_timer();
    /// let offer_earlier = async {
    ///     tokio::time::sleep(Duration::from_millis(1)).await;
    ///     q.offer("earlier", Duration::from_millis(2)); // before the armed head: woken
    /// };
    /// let next = poll_fn(|cx| Pin::new(&mut expired).poll_next(cx));
    /// let (first, ()) = tokio::join!(next, offer_earlier);
    /// assert_eq!(first.unwrap().into_inner(), "earlier");
    /// # });
    /// ```
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub fn on_tokio_timer(mut self) -> Self {
        self.waiting.use_tokio_timer();
        self
    }
}

impl<T> fmt::Debug for Expirations<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Expirations")
            .field("waiting", &self.waiting.registered())
            .finish()
    }
}

/// An entry taken from queue `id` as the [`Expired`] the API hands out.
fn expired<T>(
    queue: &BlockingQueue<TimedEntry<T>>,
    id: u64,
    entry: TimedEntry<T>,
    handle: Handle,
) -> Expired<T> {
    Expired {
        deadline: queue.clock().instant_of(entry.deadline),
        value: entry.value,
        key: DelayKey { queue: id, handle },
    }
}

impl<T> fmt::Debug for NextExpired<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NextExpired")
            .field("waiting", &self.waiting.registered())
            .finish()
    }
}

/// An element taken out of a [`DelayQueue`] with its key and deadline
/// ([`take_entry`](DelayQueue::take_entry), [`poll_entry`](DelayQueue::poll_entry)), as
/// tokio-util's `Expired`: the key is stale now, and serves to find the element's entry in
/// the caller's own maps.
#[derive(Debug)]
pub struct Expired<T> {
    value: T,
    key: DelayKey,
    deadline: Instant,
}

impl<T> Expired<T> {
    /// The element.
    pub fn get_ref(&self) -> &T {
        &self.value
    }

    /// The element, mutably.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.value
    }

    /// The element, by value.
    pub fn into_inner(self) -> T {
        self.value
    }

    /// The key the element had (it names nothing any more).
    pub fn key(&self) -> DelayKey {
        self.key
    }

    /// The deadline the element was due at, in the queue's clock.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }
}

impl<T: Send + 'static> DelayQueue<T> {
    /// An empty queue on the real monotonic clock.
    pub fn new() -> Self {
        Self::on(Clock::real())
    }

    /// An empty queue on virtual time: elements fall due as `c` advances, and every
    /// `advance` wakes the waiting consumer.
    pub fn with_clock(c: ManualClock) -> Self {
        Self::on(Clock::Manual(c))
    }

    fn on(clock: Clock) -> Self {
        let inner = Arc::new(BlockingQueue::new(clock.clone(), 0));
        let listener: Weak<dyn AdvanceListener> =
            Arc::downgrade(&inner) as Weak<dyn AdvanceListener>;
        clock.register(listener);
        DelayQueue {
            inner,
            id: unique_id(),
        }
    }

    /// Adds `item`, due `delay` from now (any delay; `Duration::MAX` means practically
    /// never). O(log n). Wakes a waiting consumer if it is the new head.
    pub fn offer(&self, item: T, delay: Duration) -> DelayKey {
        let deadline = self.inner.clock().deadline_after(delay);
        self.push(item, deadline)
    }

    /// Adds `item`, due at `deadline` (in the queue's clock; the past means due now).
    pub fn offer_at(&self, item: T, deadline: Instant) -> DelayKey {
        let deadline = self.inner.clock().ticks_of(deadline);
        self.push(item, deadline)
    }

    fn push(&self, value: T, deadline: clock::Ticks) -> DelayKey {
        let mut q = self.inner.lock();
        let seq = q.next_seq();
        let handle = q.push(TimedEntry {
            deadline,
            seq,
            value,
        });
        DelayKey {
            queue: self.id,
            handle,
        }
    }

    /// Removes and returns the earliest element, blocking until it is due.
    pub fn take(&self) -> T {
        self.inner.take_blocking().value
    }

    /// As [`take`](Self::take), but it can be told to stop: after [`close`](Self::close)
    /// it returns the elements still due, then `None` at once, and a taker blocked in it
    /// wakes up. The consumer loop of a queue that is shut down:
    ///
    /// ```
    /// use schedpool::DelayQueue;
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let q = Arc::new(DelayQueue::new());
    /// q.offer("now", Duration::ZERO);
    /// q.offer("in an hour", Duration::from_secs(3600));
    /// let consumer = {
    ///     let q = Arc::clone(&q);
    ///     std::thread::spawn(move || {
    ///         let mut got = Vec::new();
    ///         while let Some(item) = q.take_until_closed() {
    ///             got.push(item);
    ///         }
    ///         got
    ///     })
    /// };
    /// while !q.peek_deadline().is_some_and(|d| d > std::time::Instant::now()) {
    ///     std::thread::yield_now(); // wait until "now" was taken
    /// }
    /// q.close(); // the consumer stops waiting for the hour
    /// assert_eq!(consumer.join().unwrap(), ["now"]);
    /// assert_eq!(q.len(), 1, "closing keeps the elements");
    /// ```
    pub fn take_until_closed(&self) -> Option<T> {
        self.inner.take_until_closed().map(|e| e.value)
    }

    /// The async face of [`take_until_closed`](Self::take_until_closed): a future of the
    /// next element to fall due (`None` once the queue is closed and nothing is due),
    /// usable from any async runtime. While such futures wait, one helper thread per
    /// queue sleeps until the head's deadline and wakes them; it stays a second after the
    /// last one stopped waiting (so a consumer loop keeps one thread, not one per
    /// element), then exits. The future holds the queue's core, not a borrow, so it can be
    /// spawned. Cancel-safe: an element leaves the queue only when the future returns it.
    /// For a stream of elements with their keys, see [`expirations`](Self::expirations).
    ///
    /// ```
    /// use schedpool::DelayQueue;
    /// use std::time::Duration;
    ///
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// # rt.block_on(async {
    /// let q = DelayQueue::new();
    /// q.offer("soon", Duration::from_millis(5));
    /// assert_eq!(q.next_expired().await, Some("soon"));
    /// q.close();
    /// assert_eq!(q.next_expired().await, None);
    /// # });
    /// ```
    pub fn next_expired(&self) -> NextExpired<T> {
        NextExpired {
            waiting: AsyncTake::new(&self.inner),
        }
    }

    /// A [`Stream`](futures_core::Stream) of the elements as they fall due, with their
    /// keys and deadlines ([`Expired`]), that ends once the queue is closed (or dropped)
    /// and nothing in it is due; polled again after its end it returns `None` again (a
    /// closed queue stays closed). Cancel-safe: see [`Expirations`].
    ///
    /// `Stream` is the `futures-core` trait, which has no `next`: with
    /// `while let Some(e) = expirations.next().await`, take `next` from
    /// `futures_util::StreamExt` (crate `futures-util`, or `futures`) or
    /// `tokio_stream::StreamExt` (crate `tokio-stream`); both work on this stream. Without
    /// either, a `poll_fn` does it, as below.
    ///
    /// ```
    /// use schedpool::DelayQueue;
    /// use std::future::poll_fn;
    /// use std::pin::Pin;
    /// use std::time::Duration;
    /// use futures_core::Stream;
    ///
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// # rt.block_on(async {
    /// let q = DelayQueue::new();
    /// let first = q.offer("first", Duration::from_millis(1));
    /// q.offer("second", Duration::from_millis(2));
    /// let mut expired = q.expirations();
    /// // `StreamExt::next` of the `futures` crate does the same.
    /// async fn next<S: Stream + Unpin>(s: &mut S) -> Option<S::Item> {
    ///     poll_fn(|cx| Pin::new(&mut *s).poll_next(cx)).await
    /// }
    /// let e = next(&mut expired).await.unwrap();
    /// assert_eq!((e.key(), e.into_inner()), (first, "first"));
    /// assert_eq!(next(&mut expired).await.unwrap().into_inner(), "second");
    /// drop(q); // a dropped queue is closed: the stream ends
    /// assert!(next(&mut expired).await.is_none());
    /// assert!(next(&mut expired).await.is_none(), "and stays ended");
    /// # });
    /// ```
    ///
    /// What it costs: the queue's timer thread sleeps until the head's deadline and wakes
    /// the stream from there, so each expiration costs that thread a wake-up besides the
    /// consumer's, and the stream gets each element within tens of microseconds of its
    /// deadline. On tokio, with many expirations a second,
    /// `Expirations::on_tokio_timer` (feature `tokio`) puts the stream
    /// to sleep on the runtime's timer wheel instead: the CPU time of tokio-util's
    /// `DelayQueue`, at the wheel's millisecond.
    pub fn expirations(&self) -> Expirations<T> {
        Expirations {
            waiting: AsyncTake::new(&self.inner),
            id: self.id,
        }
    }

    /// Closes the queue for waiting: every taker blocked in
    /// [`take_until_closed`](Self::take_until_closed) or awaiting
    /// [`next_expired`](Self::next_expired) wakes, and from now on those return `None` as
    /// soon as no element is due. Nothing else changes: elements stay,
    /// `offer` still adds, `poll` and `drain_expired` still return due elements, and
    /// [`take`](Self::take), whose signature promises an element, keeps waiting for one
    /// (it never panics on a closed queue). `true` if this call closed it.
    pub fn close(&self) -> bool {
        self.inner.close()
    }

    /// `true` once [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Applies `f` to the earliest element and its deadline, due or not, without removing
    /// it. `f` runs under the queue's lock: it must not use this queue.
    pub fn peek_with<R>(&self, f: impl FnOnce(&T, Instant) -> R) -> Option<R> {
        let q = self.inner.lock();
        let head = q.peek()?;
        let at = self.inner.clock().instant_of(head.deadline);
        // The caller's closure under the queue's lock, as documented (U1's exception).
        Some(crate::user::under_own_lock(|| f(&head.value, at)))
    }

    /// As [`take`](Self::take), with the element's key and deadline.
    ///
    /// ```
    /// use schedpool::DelayQueue;
    /// use std::collections::HashMap;
    /// use std::time::Duration;
    ///
    /// let q = DelayQueue::new();
    /// let mut sessions = HashMap::new();
    /// let key = q.offer("alice", Duration::ZERO);
    /// sessions.insert(key, "alice's state");
    /// let expired = q.take_entry();
    /// assert_eq!(sessions.remove(&expired.key()), Some("alice's state"));
    /// assert_eq!(expired.into_inner(), "alice");
    /// ```
    pub fn take_entry(&self) -> Expired<T> {
        let (entry, handle) = self.inner.take_blocking_keyed();
        self.expired(entry, handle)
    }

    /// As [`take_entry`](Self::take_entry), but it can be told to stop, as
    /// [`take_until_closed`](Self::take_until_closed) is: after [`close`](Self::close) (or
    /// the queue's drop) it returns the entries still due, then `None` at once. The reaper
    /// of a TTL cache, which needs the key to tell a stale entry from a re-inserted one:
    ///
    /// ```
    /// use schedpool::DelayQueue;
    /// use std::collections::HashMap;
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    ///
    /// let q = Arc::new(DelayQueue::new());
    /// let cache = Arc::new(Mutex::new(HashMap::new()));
    /// let key = q.offer("alice", Duration::ZERO);
    /// cache.lock().unwrap().insert("alice", (key, "alice's session"));
    /// let reaper = {
    ///     let (q, cache) = (Arc::clone(&q), Arc::clone(&cache));
    ///     std::thread::spawn(move || {
    ///         while let Some(expired) = q.take_entry_until_closed() {
    ///             let mut cache = cache.lock().unwrap();
    ///             // Only the entry this key was issued for: a re-inserted one has a new key.
    ///             if cache.get(expired.get_ref()).is_some_and(|(k, _)| *k == expired.key()) {
    ///                 cache.remove(expired.get_ref());
    ///             }
    ///         }
    ///     })
    /// };
    /// while !cache.lock().unwrap().is_empty() {
    ///     std::thread::yield_now(); // until the reaper took alice out
    /// }
    /// q.close(); // the reaper stops
    /// reaper.join().unwrap();
    /// ```
    pub fn take_entry_until_closed(&self) -> Option<Expired<T>> {
        let (entry, handle) = self.inner.take_until_closed_keyed()?;
        Some(self.expired(entry, handle))
    }

    /// As [`poll`](Self::poll), with the element's key and deadline.
    pub fn poll_entry(&self) -> Option<Expired<T>> {
        let taken = self.inner.lock().poll_keyed();
        taken.map(|(entry, handle)| self.expired(entry, handle))
    }

    fn expired(&self, entry: TimedEntry<T>, handle: Handle) -> Expired<T> {
        expired(&self.inner, self.id, entry, handle)
    }

    /// The earliest element if it is due now, else `None`; never blocks.
    pub fn poll(&self) -> Option<T> {
        self.inner.lock().poll().map(|e| e.value)
    }

    /// As [`take`](Self::take), giving up after `timeout` (real time).
    pub fn poll_timeout(&self, timeout: Duration) -> Option<T> {
        self.inner.take_timeout(timeout).map(|e| e.value)
    }

    /// The earliest element's deadline, due or not.
    pub fn peek_deadline(&self) -> Option<Instant> {
        let deadline = self.inner.lock().head_deadline()?;
        Some(self.inner.clock().instant_of(deadline))
    }

    /// Removes the element `key` names, in O(log n). `None` if it was already taken,
    /// removed or cleared, or if the key belongs to another queue.
    pub fn remove(&self, key: DelayKey) -> Option<T> {
        if key.queue != self.id {
            return None;
        }
        self.inner.lock().remove(key.handle).map(|e| e.value)
    }

    /// Moves the element `key` names to be due `delay` from now (the queue's clock), in
    /// O(log n); the key stays valid. `false`, and nothing changes, if the element was
    /// taken, removed or cleared, or if the key belongs to another queue. A blocked taker
    /// sees the new deadline at once: an earlier one wakes it, a later one keeps it
    /// waiting. Among elements with equal deadlines, the order after a reset is
    /// unspecified (today: as if the element had been offered at the reset).
    ///
    /// ```
    /// use schedpool::{DelayQueue, ManualClock};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let sessions = DelayQueue::with_clock(clock.clone());
    /// let key = sessions.offer("alice", Duration::from_secs(30));
    /// clock.advance(Duration::from_secs(20));
    /// assert!(sessions.reset(key, Duration::from_secs(30))); // activity: 30 s more
    /// clock.advance(Duration::from_secs(20));
    /// assert_eq!(sessions.poll(), None); // would have expired without the reset
    /// clock.advance(Duration::from_secs(10));
    /// assert_eq!(sessions.poll(), Some("alice"));
    /// assert!(!sessions.reset(key, Duration::ZERO)); // gone: the key names nothing
    /// ```
    pub fn reset(&self, key: DelayKey, delay: Duration) -> bool {
        let deadline = self.inner.clock().deadline_after(delay);
        self.reset_to(key, deadline)
    }

    /// As [`reset`](Self::reset), to the instant `deadline` (in the queue's clock; the past
    /// means due now).
    pub fn reset_at(&self, key: DelayKey, deadline: Instant) -> bool {
        let deadline = self.inner.clock().ticks_of(deadline);
        self.reset_to(key, deadline)
    }

    fn reset_to(&self, key: DelayKey, deadline: clock::Ticks) -> bool {
        if key.queue != self.id {
            return false;
        }
        let mut q = self.inner.lock();
        let seq = q.next_seq();
        q.update(key.handle, |e| {
            e.deadline = deadline;
            e.seq = seq;
        })
    }

    /// Removes and returns every due element, in deadline order (ties in offer order).
    pub fn drain_expired(&self) -> Vec<T> {
        let mut q = self.inner.lock();
        let now = self.inner.clock().now();
        q.drain_due(now).into_iter().map(|e| e.value).collect()
    }

    /// The number of elements, due or not.
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

/// Dropping the queue closes it ([`close`](DelayQueue::close)): a pending
/// [`next_expired`](DelayQueue::next_expired) future, which holds the queue's core, then
/// resolves to `None` once nothing in it is due, instead of waiting for deadlines nobody
/// can add to or take from any more.
impl<T> Drop for DelayQueue<T> {
    fn drop(&mut self) {
        self.inner.close();
    }
}

impl<T: Send + 'static> Default for DelayQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for DelayQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayQueue")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}
