//! `PriorityBlockingQueue<T>`: smallest first with FIFO ties, blocking `take` and
//! `poll_timeout`, `peek_with`, removal by key (stale and foreign keys included),
//! `drain_to`, `clear`, many producers and consumers, and a model-based property test.
//!
//! Real-time waits are bounded at 10 s and assert order and counts, never speed.

use std::cmp::Ordering as CmpOrdering;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use schedpool::{PriorityBlockingQueue, PriorityKey};

const BOUND: Duration = Duration::from_secs(10);
/// How long a check that something must *not* happen watches for it.
const QUIET: Duration = Duration::from_millis(30);

/// Ordered by `prio` only; `id` tells equal elements apart, so FIFO among ties is visible.
#[derive(Debug, Clone, Copy)]
struct Job {
    prio: u32,
    id: u32,
}

fn job(prio: u32, id: u32) -> Job {
    Job { prio, id }
}

impl PartialEq for Job {
    fn eq(&self, other: &Self) -> bool {
        self.prio == other.prio
    }
}

impl Eq for Job {}

impl PartialOrd for Job {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for Job {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.prio.cmp(&other.prio)
    }
}

fn ids(jobs: &[Job]) -> Vec<u32> {
    jobs.iter().map(|j| j.id).collect()
}

fn spawn_taker<T: Ord + Send + 'static>(q: &Arc<PriorityBlockingQueue<T>>) -> mpsc::Receiver<T> {
    let (tx, rx) = mpsc::channel();
    let q = Arc::clone(q);
    thread::spawn(move || {
        let _ = tx.send(q.take());
    });
    rx
}

fn assert_quiet<T: std::fmt::Debug>(rx: &mpsc::Receiver<T>, what: &str) {
    match rx.recv_timeout(QUIET) {
        Err(mpsc::RecvTimeoutError::Timeout) => {}
        other => panic!("{what}: expected nothing yet, got {other:?}"),
    }
}

fn recv<T>(rx: &mpsc::Receiver<T>, what: &str) -> T {
    rx.recv_timeout(BOUND)
        .unwrap_or_else(|e| panic!("{what}: nothing within {BOUND:?} ({e})"))
}

/// Counts drops; ordered by its `u32`.
#[derive(Debug)]
struct Tracked(u32, Arc<AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}
impl PartialEq for Tracked {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Tracked {}
impl PartialOrd for Tracked {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Tracked {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.0.cmp(&other.0)
    }
}

#[test]
fn public_types_are_send_sync_and_keys_are_plain_data() {
    fn send_sync<T: Send + Sync>() {}
    fn key<K: Copy + Clone + std::fmt::Debug + PartialEq + Eq + std::hash::Hash>() {}
    send_sync::<PriorityBlockingQueue<String>>();
    send_sync::<PriorityKey>();
    key::<PriorityKey>();
    let q: PriorityBlockingQueue<u8> = PriorityBlockingQueue::default();
    assert!(format!("{q:?}").contains("PriorityBlockingQueue"));
}

// ---------------------------------------------------------------------------------------
// Order and the non-blocking calls
// ---------------------------------------------------------------------------------------

#[test]
fn smallest_first_equal_elements_in_offer_order() {
    let q = PriorityBlockingQueue::new();
    let input = [
        (3, 0),
        (1, 1),
        (2, 2),
        (1, 3),
        (3, 4),
        (0, 5),
        (2, 6),
        (1, 7),
    ];
    for (prio, id) in input {
        q.offer(job(prio, id));
    }
    assert_eq!(q.len(), input.len());
    let out: Vec<Job> = std::iter::from_fn(|| q.poll()).collect();
    assert_eq!(ids(&out), vec![5, 1, 3, 7, 2, 6, 0, 4]);
    assert!(q.is_empty());
    assert!(q.poll().is_none());
}

#[test]
fn many_equal_elements_keep_offer_order() {
    let q = PriorityBlockingQueue::with_capacity(1000);
    for id in 0..1000 {
        q.offer(job(7, id));
    }
    let out: Vec<u32> = (0..1000).map(|_| q.take().id).collect();
    assert_eq!(out, (0..1000).collect::<Vec<_>>());
}

#[test]
fn interleaved_offers_and_polls_keep_priority_and_fifo() {
    let q = PriorityBlockingQueue::new();
    q.offer(job(5, 0));
    q.offer(job(5, 1));
    assert_eq!(q.poll().map(|j| j.id), Some(0));
    q.offer(job(5, 2));
    q.offer(job(4, 3));
    assert_eq!(q.poll().map(|j| j.id), Some(3));
    assert_eq!(q.poll().map(|j| j.id), Some(1));
    assert_eq!(q.poll().map(|j| j.id), Some(2));
    assert!(q.poll().is_none());
}

#[test]
fn peek_with_sees_the_smallest_without_removing_it() {
    let q = PriorityBlockingQueue::new();
    assert_eq!(q.peek_with(|j: &Job| j.id), None);
    q.offer(job(9, 0));
    assert_eq!(q.peek_with(|j| j.id), Some(0));
    q.offer(job(3, 1));
    q.offer(job(3, 2));
    assert_eq!(q.peek_with(|j| (j.prio, j.id)), Some((3, 1)));
    assert_eq!(q.len(), 3);
    assert_eq!(q.poll().map(|j| j.id), Some(1));
    assert_eq!(q.peek_with(|j| j.id), Some(2));
}

#[test]
fn len_is_empty_and_clear() {
    let drops = Arc::new(AtomicUsize::new(0));
    let q = PriorityBlockingQueue::new();
    assert!(q.is_empty());
    let keys: Vec<_> = (0..6).map(|i| q.offer(Tracked(i, drops.clone()))).collect();
    assert_eq!(q.len(), 6);
    assert!(!q.is_empty());
    q.clear();
    assert_eq!(drops.load(Ordering::SeqCst), 6, "clear drops every element");
    assert!(q.is_empty());
    assert_eq!(q.len(), 0);
    assert!(q.poll().is_none());
    for k in keys {
        assert!(q.remove(k).is_none(), "cleared keys are stale");
    }
    q.offer(Tracked(1, drops.clone()));
    q.offer(Tracked(0, drops.clone()));
    assert_eq!(q.poll().map(|t| t.0), Some(0));
    q.clear();
    q.clear();
    assert_eq!(drops.load(Ordering::SeqCst), 8);
    q.offer(Tracked(5, drops.clone()));
    drop(q);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        9,
        "dropping the queue drops its elements"
    );
}

// ---------------------------------------------------------------------------------------
// drain_to
// ---------------------------------------------------------------------------------------

#[test]
fn drain_to_moves_up_to_max_in_priority_order() {
    let q = PriorityBlockingQueue::new();
    for (prio, id) in [(4, 0), (2, 1), (8, 2), (2, 3), (1, 4), (6, 5)] {
        q.offer(job(prio, id));
    }
    let mut out = vec![job(99, 99)];
    assert_eq!(q.drain_to(&mut out, 0), 0);
    assert_eq!(ids(&out), vec![99]);
    assert_eq!(q.drain_to(&mut out, 3), 3);
    assert_eq!(
        ids(&out),
        vec![99, 4, 1, 3],
        "appended after existing content"
    );
    assert_eq!(q.len(), 3);
    assert_eq!(q.drain_to(&mut out, 100), 3);
    assert_eq!(ids(&out), vec![99, 4, 1, 3, 0, 5, 2]);
    assert!(q.is_empty());
    assert_eq!(q.drain_to(&mut out, 5), 0);
    assert_eq!(out.len(), 7);
}

#[test]
fn drain_to_with_usize_max() {
    let q = PriorityBlockingQueue::new();
    for i in (0..50u32).rev() {
        q.offer(i);
    }
    let mut out = Vec::new();
    assert_eq!(q.drain_to(&mut out, usize::MAX), 50);
    assert_eq!(out, (0..50).collect::<Vec<_>>());
}

// ---------------------------------------------------------------------------------------
// Removal by key
// ---------------------------------------------------------------------------------------

#[test]
fn remove_by_key_anywhere() {
    let q = PriorityBlockingQueue::new();
    let keys: Vec<PriorityKey> = (0..100u32).map(|i| q.offer(job(i % 13, i))).collect();
    let mut removed = Vec::new();
    for i in (0..100u32).step_by(4) {
        assert_eq!(q.remove(keys[i as usize]).map(|j| j.id), Some(i));
        removed.push(i);
    }
    assert_eq!(q.len(), 75);
    let mut out = Vec::new();
    q.drain_to(&mut out, usize::MAX);
    let mut expected: Vec<u32> = (0..100).filter(|i| !removed.contains(i)).collect();
    expected.sort_by_key(|i| (i % 13, *i));
    assert_eq!(ids(&out), expected);
}

#[test]
fn removing_the_head_exposes_the_next() {
    let q = PriorityBlockingQueue::new();
    let head = q.offer(1);
    q.offer(3);
    q.offer(2);
    assert_eq!(q.remove(head), Some(1));
    assert_eq!(q.peek_with(|v| *v), Some(2));
    assert_eq!(q.poll(), Some(2));
}

#[test]
fn stale_keys_return_none_and_touch_nothing() {
    let q = PriorityBlockingQueue::new();

    let polled = q.offer(1);
    assert_eq!(q.poll(), Some(1));
    assert_eq!(q.remove(polled), None);

    let taken = q.offer(2);
    assert_eq!(q.take(), 2);
    assert_eq!(q.remove(taken), None);

    let drained = q.offer(3);
    let mut out = Vec::new();
    q.drain_to(&mut out, 1);
    assert_eq!(q.remove(drained), None);

    let twice = q.offer(4);
    assert_eq!(q.remove(twice), Some(4));
    assert_eq!(q.remove(twice), None);

    let cleared = q.offer(5);
    q.clear();
    assert_eq!(q.remove(cleared), None);

    // A reused slot: the old key must not reach the new element.
    let old = q.offer(6);
    assert_eq!(q.remove(old), Some(6));
    let new = q.offer(7);
    assert_ne!(old, new);
    assert_eq!(q.remove(old), None);
    assert_eq!(q.len(), 1);
    assert_eq!(q.remove(new), Some(7));

    let mut stale = Vec::new();
    for i in 0..50 {
        let k = q.offer(i);
        for s in &stale {
            assert_eq!(q.remove(*s), None);
        }
        assert_eq!(q.len(), 1);
        assert_eq!(q.remove(k), Some(i));
        stale.push(k);
    }
    let unique: std::collections::HashSet<_> = stale.iter().collect();
    assert_eq!(unique.len(), stale.len(), "every offer gets a fresh key");
    assert!(q.is_empty());
}

#[test]
fn keys_from_another_queue_are_not_found() {
    let a = PriorityBlockingQueue::new();
    let b = PriorityBlockingQueue::new();
    let ka = a.offer("a");
    let kb = b.offer("b");
    assert_ne!(ka, kb);
    assert_eq!(b.remove(ka), None);
    assert_eq!(a.remove(kb), None);
    assert_eq!((a.len(), b.len()), (1, 1));
    let c: PriorityBlockingQueue<u64> = PriorityBlockingQueue::new();
    let kc = c.offer(9);
    assert_eq!(a.remove(kc), None);
    assert_eq!(a.remove(ka), Some("a"));
    assert_eq!(b.remove(kb), Some("b"));
    assert_eq!(c.remove(kc), Some(9));
}

// ---------------------------------------------------------------------------------------
// Blocking
// ---------------------------------------------------------------------------------------

#[test]
fn take_blocks_while_empty_and_wakes_on_offer() {
    let q = Arc::new(PriorityBlockingQueue::new());
    let rx = spawn_taker(&q);
    assert_quiet(&rx, "empty queue");
    q.offer(42);
    assert_eq!(recv(&rx, "offer wakes the taker"), 42);
    assert!(q.is_empty());
}

#[test]
fn several_blocked_takers_are_each_woken() {
    let q = Arc::new(PriorityBlockingQueue::new());
    let (tx, rx) = mpsc::channel();
    for _ in 0..4 {
        let q = Arc::clone(&q);
        let tx = tx.clone();
        thread::spawn(move || tx.send(q.take()).unwrap());
    }
    drop(tx);
    assert_quiet(&rx, "empty queue");
    q.offer(10);
    assert_eq!(recv(&rx, "the first offer"), 10);
    assert_quiet(&rx, "empty again");
    // Three offers in a row: larger ones do not become the head, and still every
    // waiting taker must get one.
    q.offer(1);
    q.offer(2);
    q.offer(3);
    let mut rest: Vec<u32> = (0..3).map(|_| recv(&rx, "the others")).collect();
    rest.sort();
    assert_eq!(rest, vec![1, 2, 3]);
    assert_eq!(
        rx.recv_timeout(BOUND),
        Err(mpsc::RecvTimeoutError::Disconnected)
    );
}

#[test]
fn poll_timeout_waits_then_gives_up() {
    let q: PriorityBlockingQueue<u32> = PriorityBlockingQueue::new();
    let start = Instant::now();
    assert_eq!(q.poll_timeout(Duration::from_millis(20)), None);
    assert!(
        start.elapsed() >= Duration::from_millis(20),
        "gave up early"
    );
    assert_eq!(q.poll_timeout(Duration::ZERO), None);
    q.offer(3);
    q.offer(1);
    assert_eq!(q.poll_timeout(Duration::ZERO), Some(1));
    assert_eq!(q.poll_timeout(BOUND), Some(3));
}

#[test]
fn poll_timeout_is_woken_by_an_offer() {
    let q = Arc::new(PriorityBlockingQueue::new());
    let (tx, rx) = mpsc::channel();
    {
        let q = Arc::clone(&q);
        thread::spawn(move || tx.send(q.poll_timeout(BOUND)).unwrap());
    }
    assert_quiet(&rx, "empty queue");
    q.offer("hello");
    assert_eq!(recv(&rx, "the offer"), Some("hello"));
}

#[test]
fn producers_and_consumers_see_every_element_exactly_once() {
    const PRODUCERS: u32 = 4;
    const CONSUMERS: usize = 4;
    const PER_PRODUCER: u32 = 2_000;
    // The stop marker has the largest priority, so it comes out only once every element
    // offered before it is gone.
    const STOP: u32 = u32::MAX;
    let q: Arc<PriorityBlockingQueue<Job>> = Arc::new(PriorityBlockingQueue::new());

    let (done_tx, done_rx) = mpsc::channel();
    for _ in 0..CONSUMERS {
        let q = Arc::clone(&q);
        let done_tx = done_tx.clone();
        thread::spawn(move || {
            let mut got = Vec::new();
            let mut batch = Vec::new();
            loop {
                // Alternate take, poll_timeout and drain_to.
                let j = match got.len() % 3 {
                    0 => q.take(),
                    1 => match q.poll_timeout(Duration::from_millis(1)) {
                        Some(j) => j,
                        None => continue,
                    },
                    _ => {
                        batch.clear();
                        if q.drain_to(&mut batch, 4) == 0 {
                            thread::yield_now(); // a busy wait: let the producers run
                            continue;
                        }
                        // Put back a stop marker we drained with the batch; keep one.
                        let mut stop = false;
                        for j in batch.drain(..) {
                            if j.prio == STOP {
                                if stop {
                                    q.offer(j);
                                } else {
                                    stop = true;
                                }
                            } else {
                                got.push(j.id);
                            }
                        }
                        if stop {
                            break;
                        }
                        continue;
                    }
                };
                if j.prio == STOP {
                    break;
                }
                got.push(j.id);
            }
            done_tx.send(got).unwrap();
        });
    }
    drop(done_tx);

    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let q = Arc::clone(&q);
            thread::spawn(move || {
                for i in 0..PER_PRODUCER {
                    let id = p * PER_PRODUCER + i;
                    q.offer(job(id % 97, id));
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    for i in 0..CONSUMERS as u32 {
        q.offer(job(STOP, u32::MAX - i));
    }

    let mut all = Vec::new();
    for _ in 0..CONSUMERS {
        all.extend(
            done_rx
                .recv_timeout(BOUND)
                .expect("a consumer did not finish within the bound"),
        );
    }
    let total = (PRODUCERS * PER_PRODUCER) as usize;
    assert_eq!(all.len(), total, "every element exactly once");
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), total, "no element twice");
    assert!(q.is_empty());
}

#[test]
fn removal_races_with_consumers_exactly_once() {
    const N: u32 = 4_000;
    let q: Arc<PriorityBlockingQueue<Job>> = Arc::new(PriorityBlockingQueue::new());
    let (key_tx, key_rx) = mpsc::channel::<(u32, PriorityKey)>();
    let (done_tx, done_rx) = mpsc::channel();
    for _ in 0..2 {
        let q = Arc::clone(&q);
        let done_tx = done_tx.clone();
        thread::spawn(move || {
            let mut got = Vec::new();
            loop {
                let j = q.take();
                if j.prio == u32::MAX {
                    break;
                }
                got.push(j.id);
            }
            done_tx.send(got).unwrap();
        });
    }
    let canceller = {
        let q = Arc::clone(&q);
        thread::spawn(move || {
            let mut removed = Vec::new();
            for (id, key) in key_rx {
                if id % 2 == 1 {
                    if let Some(j) = q.remove(key) {
                        assert_eq!(j.id, id, "a key removed another element");
                        removed.push(id);
                    }
                }
            }
            removed
        })
    };
    for id in 0..N {
        let key = q.offer(job(id % 10, id));
        key_tx.send((id, key)).unwrap();
    }
    drop(key_tx);
    let removed = canceller.join().unwrap();
    q.offer(job(u32::MAX, 0));
    q.offer(job(u32::MAX, 1));
    let mut all = removed;
    for _ in 0..2 {
        all.extend(done_rx.recv_timeout(BOUND).expect("consumer finished"));
    }
    assert_eq!(all.len(), N as usize);
    all.sort_unstable();
    assert_eq!(all, (0..N).collect::<Vec<_>>());
    assert!(q.is_empty());
}

// ---------------------------------------------------------------------------------------
// Model-based property test
// ---------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Offer { prio: u32 },
    Poll,
    PollTimeoutZero,
    Peek,
    Remove { pick: prop::sample::Index },
    RemoveForeign { pick: prop::sample::Index },
    DrainTo { max: usize },
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u32..8).prop_map(|prio| Op::Offer { prio }),
        3 => Just(Op::Poll),
        1 => Just(Op::PollTimeoutZero),
        1 => Just(Op::Peek),
        4 => any::<prop::sample::Index>().prop_map(|pick| Op::Remove { pick }),
        1 => any::<prop::sample::Index>().prop_map(|pick| Op::RemoveForeign { pick }),
        2 => (0usize..6).prop_map(|max| Op::DrainTo { max }),
        1 => Just(Op::Clear),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn priority_queue_matches_the_model(ops in prop::collection::vec(op(), 1..80)) {
        let q: PriorityBlockingQueue<Job> = PriorityBlockingQueue::new();
        let foreign: PriorityBlockingQueue<Job> = PriorityBlockingQueue::new();
        let foreign_keys: Vec<PriorityKey> =
            (0..4).map(|i| foreign.offer(job(0, 1000 + i))).collect();
        // `(prio, seq)` sorted; the id equals the seq.
        let mut sorted: Vec<(u32, u32)> = Vec::new();
        let mut live: HashMap<PriorityKey, u32> = HashMap::new();
        let mut keys: Vec<PriorityKey> = Vec::new();
        let mut next = 0u32;

        for op in ops {
            match op {
                Op::Offer { prio } => {
                    let key = q.offer(job(prio, next));
                    let at = sorted.partition_point(|e| *e < (prio, next));
                    sorted.insert(at, (prio, next));
                    prop_assert!(live.insert(key, next).is_none(), "key handed out twice");
                    keys.push(key);
                    next += 1;
                }
                Op::Poll | Op::PollTimeoutZero => {
                    let got = if matches!(op, Op::Poll) {
                        q.poll()
                    } else {
                        q.poll_timeout(Duration::ZERO)
                    };
                    let expected = (!sorted.is_empty()).then(|| sorted.remove(0));
                    if let Some((_, id)) = expected {
                        live.retain(|_, v| *v != id);
                    }
                    prop_assert_eq!(got.map(|j| (j.prio, j.id)), expected);
                }
                Op::Peek => {
                    prop_assert_eq!(q.peek_with(|j| (j.prio, j.id)), sorted.first().copied());
                }
                Op::Remove { pick } => {
                    if !keys.is_empty() {
                        let key = *pick.get(&keys);
                        let expected = live.remove(&key);
                        if let Some(id) = expected {
                            sorted.retain(|e| e.1 != id);
                        }
                        prop_assert_eq!(q.remove(key).map(|j| j.id), expected);
                    }
                }
                Op::RemoveForeign { pick } => {
                    prop_assert_eq!(q.remove(*pick.get(&foreign_keys)).map(|j| j.id), None);
                }
                Op::DrainTo { max } => {
                    let mut out = Vec::new();
                    let n = q.drain_to(&mut out, max);
                    let k = max.min(sorted.len());
                    let expected: Vec<(u32, u32)> = sorted.drain(..k).collect();
                    for (_, id) in &expected {
                        live.retain(|_, v| v != id);
                    }
                    prop_assert_eq!(n, k);
                    prop_assert_eq!(out.iter().map(|j| (j.prio, j.id)).collect::<Vec<_>>(), expected);
                }
                Op::Clear => {
                    q.clear();
                    sorted.clear();
                    live.clear();
                }
            }
            prop_assert_eq!(q.len(), sorted.len());
            prop_assert_eq!(q.is_empty(), sorted.is_empty());
            prop_assert_eq!(live.len(), sorted.len());
        }
        prop_assert_eq!(foreign.len(), 4);
        let mut out = Vec::new();
        q.drain_to(&mut out, usize::MAX);
        prop_assert_eq!(out.iter().map(|j| (j.prio, j.id)).collect::<Vec<_>>(), sorted);
    }
}

// ---------------------------------------------------------------------------------------
// close / take_until_closed / update
// ---------------------------------------------------------------------------------------

#[test]
fn close_wakes_a_taker_blocked_on_an_empty_queue() {
    let q = std::sync::Arc::new(PriorityBlockingQueue::<u32>::new());
    let taker = {
        let q = std::sync::Arc::clone(&q);
        std::thread::spawn(move || q.take_until_closed())
    };
    assert!(q.close());
    assert_eq!(
        taker.join().unwrap(),
        None,
        "woken (or, if it came later, not waiting)"
    );
    assert!(q.is_closed());
    assert_eq!(q.take_until_closed(), None, "closed and empty: no wait");
    q.offer(1);
    assert_eq!(
        q.take_until_closed(),
        Some(1),
        "queued elements still come out"
    );
}

#[test]
fn update_changes_an_elements_priority_in_place_and_keeps_its_key() {
    let q = PriorityBlockingQueue::new();
    let a = q.offer(10);
    let b = q.offer(20);
    let c = q.offer(30);
    assert!(q.update(c, |v| *v = 5), "to the front");
    assert!(q.update(a, |v| *v = 25), "to the back");
    assert!(
        q.update(a, |v| *v = 20),
        "equal to b, and now after it (FIFO by the change)"
    );
    assert_eq!(q.remove(a), Some(20), "the key survived the updates");
    let a = q.offer(20);
    assert_eq!(q.poll(), Some(5));
    assert_eq!(q.peek_with(|v| *v), Some(20));
    assert_eq!(q.remove(b), Some(20), "b was first among the equals");
    assert_eq!(q.poll(), Some(20));
    assert!(!q.update(a, |_| unreachable!()), "a taken element");
    let other = PriorityBlockingQueue::new();
    let foreign = other.offer(1);
    assert!(
        !q.update(foreign, |_| unreachable!()),
        "a key of another queue"
    );
}
