//! The public queues against two baselines, in one run: schedpool's `DelayQueue` and
//! `PriorityBlockingQueue`, a `Mutex<BinaryHeap>` + `Condvar` delay queue (what one writes
//! by hand, and what Java's `DelayQueue` is: removal is an O(n) scan), and tokio-util's
//! timer-wheel `DelayQueue` on a current-thread tokio runtime.
//!
//! Every workload is written once against the small [`Queue`] trait and runs on every
//! implementation:
//!
//! - `offer_take_due/N`: offer N elements whose deadline has already passed, then take
//!   them all. Reported per element (one offer plus one take).
//! - `offer_remove_random/N`: offer N elements due 1 to 61 s ahead, then remove them all
//!   by key in random order. Per element (one offer plus one remove). The baseline's
//!   O(n) removal makes N = 100 000 take minutes, so it sits that size out.
//! - `mixed_cancel_heavy/N`: N steps of a request-timeout pattern: each step arms a
//!   timeout; about 69 % of steps also cancel a random live one, 12 % re-arm one (tokio:
//!   `reset`; the others: remove plus offer), 12 % offer an already-due element and 6 %
//!   poll a due one. Per step.
//!
//! The priority queue has no clock: its element's priority is the delay in ms (0 for
//! "already due"), so it orders the same workloads the same way. tokio's queue is driven
//! inside the runtime's context with a no-op waker; the workloads only ever poll it for
//! elements that are already due, so no step waits on its timer.
//!
//! `cargo bench --bench queues` runs everything in about a minute; results and the
//! machine they came from are in `docs/BENCHMARKS.md`.

// `criterion_group!` generates an undocumented `pub fn`.
#![allow(missing_docs)]

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::sync::{Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use schedpool::{DelayKey, DelayQueue, PriorityBlockingQueue, PriorityKey};

// ---------------------------------------------------------------------------------------
// The trait every implementation runs behind
// ---------------------------------------------------------------------------------------

/// A delay queue as the workloads see it.
trait Queue {
    type Key: Copy;
    const NAME: &'static str;
    /// An empty queue (tokio's must be made inside the runtime's context).
    fn new() -> Self;
    /// Offers `v`, due after `delay`, or already due when `delay` is `None`.
    fn offer(&mut self, v: u64, delay: Option<Duration>) -> Self::Key;
    /// The next due element; the caller knows one is due.
    fn take(&mut self) -> u64;
    /// A due element, or `None`; never blocks.
    fn poll(&mut self) -> Option<u64>;
    fn remove(&mut self, k: Self::Key) -> Option<u64>;
    /// Moves `k`'s element to a new deadline; returns its key from now on.
    fn reset(&mut self, k: Self::Key, delay: Duration) -> Self::Key {
        let v = self.remove(k).expect("reset of a live key");
        self.offer(v, Some(delay))
    }
}

/// schedpool's `DelayQueue` on the real clock.
struct SchedDelay {
    q: DelayQueue<u64>,
    /// A deadline before the queue's origin: due.
    past: Instant,
}

impl Queue for SchedDelay {
    type Key = DelayKey;
    const NAME: &'static str = "schedpool::DelayQueue";
    fn new() -> Self {
        let past = Instant::now();
        SchedDelay {
            q: DelayQueue::new(),
            past,
        }
    }
    #[inline]
    fn offer(&mut self, v: u64, delay: Option<Duration>) -> DelayKey {
        match delay {
            Some(d) => self.q.offer(v, d),
            None => self.q.offer_at(v, self.past),
        }
    }
    #[inline]
    fn take(&mut self) -> u64 {
        self.q.take()
    }
    #[inline]
    fn poll(&mut self) -> Option<u64> {
        self.q.poll()
    }
    #[inline]
    fn remove(&mut self, k: DelayKey) -> Option<u64> {
        self.q.remove(k)
    }
}

/// An element ordered by its priority only (ties in offer order, by the queue).
struct Prio {
    prio: u64,
    v: u64,
}

impl PartialEq for Prio {
    fn eq(&self, other: &Self) -> bool {
        self.prio == other.prio
    }
}
impl Eq for Prio {}
impl PartialOrd for Prio {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Prio {
    fn cmp(&self, other: &Self) -> Ordering {
        self.prio.cmp(&other.prio)
    }
}

/// schedpool's `PriorityBlockingQueue`, the delay in ms as the priority.
struct SchedPriority(PriorityBlockingQueue<Prio>);

impl Queue for SchedPriority {
    type Key = PriorityKey;
    const NAME: &'static str = "schedpool::PriorityBlockingQueue";
    fn new() -> Self {
        SchedPriority(PriorityBlockingQueue::new())
    }
    #[inline]
    fn offer(&mut self, v: u64, delay: Option<Duration>) -> PriorityKey {
        let prio = delay.map_or(0, |d| d.as_millis() as u64);
        self.0.offer(Prio { prio, v })
    }
    #[inline]
    fn take(&mut self) -> u64 {
        self.0.take().v
    }
    #[inline]
    fn poll(&mut self) -> Option<u64> {
        self.0.poll().map(|p| p.v)
    }
    #[inline]
    fn remove(&mut self, k: PriorityKey) -> Option<u64> {
        self.0.remove(k).map(|p| p.v)
    }
}

/// The baseline: `Mutex<BinaryHeap>` + `Condvar`, ordered by `(deadline, seq)`, with
/// Java's `DelayQueue` logic: an offer that becomes the head wakes the waiters, `take`
/// waits until the head is due, and `remove` is an O(n) scan (`retain`).
struct Baseline {
    heap: Mutex<BinaryHeap<Reverse<(Instant, u64, u64)>>>,
    available: Condvar,
    seq: u64,
    past: Instant,
}

impl Queue for Baseline {
    type Key = u64;
    const NAME: &'static str = "Mutex<BinaryHeap>+Condvar";
    fn new() -> Self {
        Baseline {
            heap: Mutex::new(BinaryHeap::new()),
            available: Condvar::new(),
            seq: 0,
            past: Instant::now(),
        }
    }
    #[inline]
    fn offer(&mut self, v: u64, delay: Option<Duration>) -> u64 {
        let deadline = delay.map_or(self.past, |d| Instant::now() + d);
        let seq = self.seq;
        self.seq += 1;
        let mut heap = self.heap.lock().unwrap();
        heap.push(Reverse((deadline, seq, v)));
        if heap.peek().is_some_and(|Reverse(e)| e.1 == seq) {
            self.available.notify_all();
        }
        seq
    }
    fn take(&mut self) -> u64 {
        let mut heap = self.heap.lock().unwrap();
        loop {
            let now = Instant::now();
            match heap.peek() {
                Some(Reverse((deadline, _, _))) if *deadline <= now => {
                    return heap.pop().expect("peeked").0 .2;
                }
                Some(Reverse((deadline, _, _))) => {
                    let wait = *deadline - now;
                    heap = self.available.wait_timeout(heap, wait).unwrap().0;
                }
                None => heap = self.available.wait(heap).unwrap(),
            }
        }
    }
    #[inline]
    fn poll(&mut self) -> Option<u64> {
        let mut heap = self.heap.lock().unwrap();
        match heap.peek() {
            Some(Reverse((deadline, _, _))) if *deadline <= Instant::now() => {
                heap.pop().map(|Reverse(e)| e.2)
            }
            _ => None,
        }
    }
    fn remove(&mut self, k: u64) -> Option<u64> {
        let mut heap = self.heap.lock().unwrap();
        let mut found = None;
        heap.retain(|Reverse((_, seq, v))| {
            if *seq == k {
                found = Some(*v);
                false
            } else {
                true
            }
        });
        if found.is_some() {
            self.available.notify_all();
        }
        found
    }
}

/// tokio-util's hashed timer wheel; must be created and used inside a runtime context.
struct Tokio {
    q: tokio_util::time::DelayQueue<u64>,
    /// Before the queue's start: `insert_at` files it as expired at once.
    past: tokio::time::Instant,
}

impl Tokio {
    #[inline]
    fn poll_expired(&mut self) -> Option<u64> {
        let mut cx = Context::from_waker(Waker::noop());
        match self.q.poll_expired(&mut cx) {
            Poll::Ready(Some(e)) => Some(e.into_inner()),
            Poll::Ready(None) | Poll::Pending => None,
        }
    }
}

impl Queue for Tokio {
    type Key = tokio_util::time::delay_queue::Key;
    const NAME: &'static str = "tokio_util::time::DelayQueue";
    fn new() -> Self {
        let past = tokio::time::Instant::now();
        Tokio {
            q: tokio_util::time::DelayQueue::new(),
            past,
        }
    }
    #[inline]
    fn offer(&mut self, v: u64, delay: Option<Duration>) -> Self::Key {
        match delay {
            Some(d) => self.q.insert(v, d),
            None => self.q.insert_at(v, self.past),
        }
    }
    #[inline]
    fn take(&mut self) -> u64 {
        self.poll_expired().expect("an element is due")
    }
    #[inline]
    fn poll(&mut self) -> Option<u64> {
        self.poll_expired()
    }
    #[inline]
    fn remove(&mut self, k: Self::Key) -> Option<u64> {
        self.q.try_remove(&k).map(|e| e.into_inner())
    }
    #[inline]
    fn reset(&mut self, k: Self::Key, delay: Duration) -> Self::Key {
        self.q.reset(&k, delay);
        k
    }
}

// ---------------------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------------------

/// SplitMix64: a small deterministic generator, so every implementation sees the same
/// sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A delay 1 to 61 s ahead: never due during a run.
fn future_delay(rng: &mut Rng) -> Duration {
    Duration::from_millis(1_000 + rng.below(60_000))
}

fn offer_take_due<Q: Queue>(q: &mut Q, n: u64) {
    for i in 0..n {
        black_box(q.offer(i, None));
    }
    for _ in 0..n {
        black_box(q.take());
    }
}

/// Inputs of `offer_remove_random`: each element's delay and the removal order.
struct RemoveScript {
    delays: Vec<Duration>,
    order: Vec<usize>,
}

fn remove_script(n: usize) -> RemoveScript {
    let mut rng = Rng(0x5eed_0001 ^ n as u64);
    let delays = (0..n).map(|_| future_delay(&mut rng)).collect();
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    RemoveScript { delays, order }
}

fn offer_remove_random<Q: Queue>(q: &mut Q, script: &RemoveScript) {
    let keys: Vec<Q::Key> = script
        .delays
        .iter()
        .enumerate()
        .map(|(i, d)| q.offer(i as u64, Some(*d)))
        .collect();
    for &i in &script.order {
        let v = q.remove(keys[i]);
        debug_assert_eq!(v, Some(i as u64));
        black_box(v);
    }
}

fn mixed_cancel_heavy<Q: Queue>(q: &mut Q, steps: u64) {
    let mut rng = Rng(0x5eed_0002);
    let mut live: Vec<Q::Key> = Vec::new();
    let mut due = 0u64;
    for i in 0..steps {
        live.push(q.offer(i, Some(future_delay(&mut rng))));
        match rng.below(16) {
            0..=10 => {
                let at = rng.below(live.len() as u64) as usize;
                let k = live.swap_remove(at);
                black_box(q.remove(k));
            }
            11 | 12 => {
                let at = rng.below(live.len() as u64) as usize;
                live[at] = q.reset(live[at], future_delay(&mut rng));
            }
            13 | 14 => {
                q.offer(i, None);
                due += 1;
            }
            _ => {
                if due > 0 {
                    black_box(q.poll().expect("a due element"));
                    due -= 1;
                }
            }
        }
    }
    for _ in 0..due {
        black_box(q.poll().expect("a due element"));
    }
}

// ---------------------------------------------------------------------------------------
// Criterion glue
// ---------------------------------------------------------------------------------------

/// Runs `work` on a fresh `Q` per iteration; building and dropping the queue is not timed.
fn run<Q: Queue>(c: &mut Criterion, group: &str, elements: u64, mut work: impl FnMut(&mut Q)) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(elements));
    g.bench_function(Q::NAME, |b| {
        b.iter_batched(
            Q::new,
            |mut q| {
                work(&mut q);
                q
            },
            BatchSize::LargeInput,
        );
    });
    g.finish();
}

/// Runs one workload on every implementation (the baseline unless `skip_baseline`).
macro_rules! on_every_queue {
    ($c:expr, $group:expr, $elements:expr, $skip_baseline:expr, |$q:ident| $body:expr) => {{
        run::<SchedDelay>($c, $group, $elements, |$q| $body);
        run::<SchedPriority>($c, $group, $elements, |$q| $body);
        if !$skip_baseline {
            run::<Baseline>($c, $group, $elements, |$q| $body);
        }
        run::<Tokio>($c, $group, $elements, |$q| $body);
    }};
}

fn queues(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("tokio runtime");
    let _context = rt.enter();

    for n in [1_000u64, 100_000] {
        let group = format!("offer_take_due/{n}");
        on_every_queue!(c, &group, n, false, |q| offer_take_due(q, n));
    }
    for n in [1_000usize, 10_000, 100_000] {
        let script = remove_script(n);
        let group = format!("offer_remove_random/{n}");
        on_every_queue!(c, &group, n as u64, n > 10_000, |q| {
            offer_remove_random(q, &script)
        });
    }
    let steps = 10_000u64;
    let group = format!("mixed_cancel_heavy/{steps}");
    on_every_queue!(c, &group, steps, false, |q| mixed_cancel_heavy(q, steps));
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
}

criterion_group! {
    name = benches;
    config = config();
    targets = queues
}
criterion_main!(benches);
