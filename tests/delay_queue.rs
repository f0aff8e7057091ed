//! `DelayQueue<T>`: deadline order with FIFO ties, the non-blocking calls, removal by key
//! (stale and foreign keys included), the blocking `take` on virtual and real time, and a
//! model-based property test of the whole public API on a `ManualClock`.
//!
//! Order is checked on a `ManualClock`. Real-time tests wait for conditions with a 10 s
//! bound and assert order and counts, never speed.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use schedpool::{DelayKey, DelayQueue, ManualClock};

mod common;
use common::ms;

/// The bound on every real-time wait for something that must happen.
const BOUND: Duration = Duration::from_secs(10);
/// How long a check that something must *not* happen watches for it. A bug makes such a
/// check fail; a slow machine only makes it weaker, never wrong.
const QUIET: Duration = Duration::from_millis(30);

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn manual<T: Send + 'static>() -> (ManualClock, DelayQueue<T>) {
    let clock = ManualClock::new();
    let q = DelayQueue::with_clock(clock.clone());
    (clock, q)
}

/// Runs `take` on another thread; the element arrives on the returned channel.
fn spawn_taker<T: Send + 'static>(q: &Arc<DelayQueue<T>>) -> mpsc::Receiver<T> {
    let (tx, rx) = mpsc::channel();
    let q = Arc::clone(q);
    thread::spawn(move || {
        let _ = tx.send(q.take());
    });
    rx
}

/// Asserts that nothing arrives on `rx` for a short while.
fn assert_quiet<T: std::fmt::Debug>(rx: &mpsc::Receiver<T>, what: &str) {
    match rx.recv_timeout(QUIET) {
        Err(mpsc::RecvTimeoutError::Timeout) => {}
        other => panic!("{what}: expected no element yet, got {other:?}"),
    }
}

fn recv<T>(rx: &mpsc::Receiver<T>, what: &str) -> T {
    rx.recv_timeout(BOUND)
        .unwrap_or_else(|e| panic!("{what}: nothing within {BOUND:?} ({e})"))
}

/// Counts drops, to see when the queue releases its elements.
struct Tracked(Arc<AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn public_types_are_send_sync_and_keys_are_plain_data() {
    fn send_sync<T: Send + Sync>() {}
    fn key<K: Copy + Clone + std::fmt::Debug + PartialEq + Eq + std::hash::Hash>() {}
    send_sync::<DelayQueue<String>>();
    send_sync::<DelayKey>();
    key::<DelayKey>();
    let q: DelayQueue<u8> = DelayQueue::default();
    assert!(format!("{q:?}").contains("DelayQueue"));
}

// ---------------------------------------------------------------------------------------
// Order, poll, peek, drain, len, clear
// ---------------------------------------------------------------------------------------

#[test]
fn due_elements_come_out_in_deadline_order_ties_in_offer_order() {
    let (clock, q) = manual();
    for (delay, v) in [
        (30, "a"),
        (10, "b"),
        (20, "c"),
        (10, "d"),
        (0, "e"),
        (20, "f"),
    ] {
        q.offer(v, ms(delay));
    }
    assert_eq!(q.len(), 6);
    clock.advance(ms(30));
    let order: Vec<_> = std::iter::from_fn(|| q.poll()).collect();
    assert_eq!(order, vec!["e", "b", "d", "c", "f", "a"]);
    assert!(q.is_empty());
}

#[test]
fn many_equal_deadlines_keep_offer_order() {
    let (clock, q) = manual();
    for i in 0..500u32 {
        q.offer(i, ms(7));
    }
    clock.advance(ms(7));
    let got: Vec<u32> = (0..500).map(|_| q.take()).collect();
    assert_eq!(got, (0..500).collect::<Vec<_>>());
}

#[test]
fn offer_at_and_offer_share_one_timeline() {
    let (clock, q) = manual();
    let t0 = clock.now();
    q.offer("by delay", ms(20));
    q.offer_at("by instant, same deadline, later", t0 + ms(20));
    q.offer_at("by instant, earlier", t0 + ms(5));
    clock.advance(ms(20));
    assert_eq!(
        q.drain_expired(),
        vec![
            "by instant, earlier",
            "by delay",
            "by instant, same deadline, later"
        ]
    );
}

#[test]
fn poll_returns_only_due_elements() {
    let (clock, q) = manual();
    assert_eq!(q.poll(), None::<u32>);
    q.offer(1, ms(10));
    assert_eq!(q.poll(), None);
    clock.advance(ms(9));
    assert_eq!(q.poll(), None);
    assert_eq!(q.len(), 1);
    clock.advance(ms(1));
    assert_eq!(q.poll(), Some(1));
    assert_eq!(q.poll(), None);
    assert!(q.is_empty());
}

#[test]
fn past_and_zero_deadlines_are_due_at_once() {
    let (clock, q) = manual();
    let origin = clock.now();
    clock.advance(secs(10));
    q.offer("zero", Duration::ZERO);
    q.offer_at("now", clock.now());
    q.offer_at("a second ago", clock.now() - secs(1));
    assert_eq!(q.drain_expired(), vec!["a second ago", "zero", "now"]);
    // Before the clock's origin: due, and sorted as the origin itself.
    if let Some(long_ago) = origin.checked_sub(secs(3600)) {
        q.offer_at("at the origin", origin);
        q.offer_at("before the origin", long_ago);
        assert_eq!(q.peek_deadline(), Some(origin));
        assert_eq!(
            q.drain_expired(),
            vec!["at the origin", "before the origin"]
        );
    }
}

#[test]
fn peek_deadline_follows_the_earliest_element() {
    let (clock, q) = manual();
    assert_eq!(q.peek_deadline(), None);
    let t0 = clock.now();
    q.offer(1, ms(50));
    assert_eq!(q.peek_deadline(), Some(t0 + ms(50)));
    let k = q.offer(2, ms(20));
    assert_eq!(q.peek_deadline(), Some(t0 + ms(20)));
    q.offer(3, ms(30));
    assert_eq!(q.peek_deadline(), Some(t0 + ms(20)));
    assert_eq!(q.remove(k), Some(2));
    assert_eq!(q.peek_deadline(), Some(t0 + ms(30)));
    clock.advance(ms(100));
    // Due or not, peek reports the head's deadline and leaves it in place.
    assert_eq!(q.peek_deadline(), Some(t0 + ms(30)));
    assert_eq!(q.len(), 2);
    assert_eq!(q.drain_expired(), vec![3, 1]);
    assert_eq!(q.peek_deadline(), None);
}

#[test]
fn duration_max_is_practically_never_and_does_not_panic() {
    let (clock, q) = manual();
    let t0 = clock.now();
    q.offer("never", Duration::MAX);
    q.offer("soon", secs(1));
    let years_100 = secs(100 * 365 * 24 * 3600);
    clock.advance(years_100);
    assert_eq!(q.drain_expired(), vec!["soon"]);
    let head = q.peek_deadline().expect("one element left");
    assert!(head > t0 + years_100, "the far future is beyond 100 years");
    assert_eq!(q.poll(), None);
    clock.advance(Duration::MAX); // saturates
    assert_eq!(q.poll(), Some("never"));
}

#[test]
fn drain_expired_takes_every_due_element_and_nothing_else() {
    let (clock, q) = manual();
    assert!(q.drain_expired().is_empty());
    for (delay, v) in [(5, 50), (1, 10), (9, 90), (3, 30), (3, 31)] {
        q.offer(v, ms(delay));
    }
    assert!(q.drain_expired().is_empty());
    clock.advance(ms(5));
    assert_eq!(q.drain_expired(), vec![10, 30, 31, 50]);
    assert_eq!(q.len(), 1);
    assert!(q.drain_expired().is_empty());
    clock.advance(ms(4));
    assert_eq!(q.drain_expired(), vec![90]);
    assert!(q.is_empty());
}

#[test]
fn len_is_empty_and_clear() {
    let (clock, q) = manual();
    assert!(q.is_empty());
    assert_eq!(q.len(), 0);
    let keys: Vec<_> = (0..10).map(|i| q.offer(i, ms(i))).collect();
    assert_eq!(q.len(), 10);
    assert!(!q.is_empty());
    q.clear();
    assert_eq!(q.len(), 0);
    assert!(q.is_empty());
    assert_eq!(q.peek_deadline(), None);
    clock.advance(secs(1));
    assert_eq!(q.poll(), None);
    for k in keys {
        assert_eq!(q.remove(k), None, "cleared keys are stale");
    }
    // The queue is usable after clear.
    q.offer(42, Duration::ZERO);
    assert_eq!(q.poll(), Some(42));
    q.clear(); // clearing an empty queue is fine
    assert!(q.is_empty());
}

#[test]
fn clear_and_drop_release_every_element() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (_clock, q) = manual();
    for i in 0..5 {
        q.offer(Tracked(drops.clone()), ms(i));
    }
    q.clear();
    assert_eq!(drops.load(Ordering::SeqCst), 5);
    for i in 0..3 {
        q.offer(Tracked(drops.clone()), ms(i));
    }
    drop(q);
    assert_eq!(drops.load(Ordering::SeqCst), 8);
}

// ---------------------------------------------------------------------------------------
// Removal by key
// ---------------------------------------------------------------------------------------

#[test]
fn remove_by_key_anywhere_in_the_heap() {
    let (clock, q) = manual();
    let keys: Vec<DelayKey> = (0..100u64).map(|i| q.offer(i, ms(i % 17))).collect();
    // Every third element, from the back: root, middle and leaves all get hit.
    let mut removed = BTreeSet::new();
    for i in (0..100u64).rev().step_by(3) {
        assert_eq!(q.remove(keys[i as usize]), Some(i));
        removed.insert(i);
    }
    assert_eq!(q.len(), 100 - removed.len());
    clock.advance(ms(17));
    let got = q.drain_expired();
    let mut expected: Vec<u64> = (0..100).filter(|i| !removed.contains(i)).collect();
    expected.sort_by_key(|i| (i % 17, *i));
    assert_eq!(got, expected);
}

#[test]
fn removing_the_head_exposes_the_next() {
    let (clock, q) = manual();
    let a = q.offer("a", ms(1));
    q.offer("b", ms(2));
    assert_eq!(q.remove(a), Some("a"));
    clock.advance(ms(1));
    assert_eq!(q.poll(), None, "b is not due yet");
    clock.advance(ms(1));
    assert_eq!(q.poll(), Some("b"));
}

#[test]
fn stale_keys_return_none_and_touch_nothing() {
    let (clock, q) = manual();

    // Taken by poll.
    let taken = q.offer("taken", Duration::ZERO);
    assert_eq!(q.poll(), Some("taken"));
    assert_eq!(q.remove(taken), None);

    // Taken by take and by drain_expired.
    let by_take = q.offer("by take", Duration::ZERO);
    assert_eq!(q.take(), "by take");
    assert_eq!(q.remove(by_take), None);
    let drained = q.offer("drained", Duration::ZERO);
    assert_eq!(q.drain_expired(), vec!["drained"]);
    assert_eq!(q.remove(drained), None);

    // Removed twice.
    let twice = q.offer("twice", secs(1));
    assert_eq!(q.remove(twice), Some("twice"));
    assert_eq!(q.remove(twice), None);

    // Cleared.
    let cleared = q.offer("cleared", secs(1));
    q.clear();
    assert_eq!(q.remove(cleared), None);

    // Slot reused: a freed slot is handed to the next offer; the old key must not
    // reach the new element.
    let old = q.offer("old", secs(1));
    assert_eq!(q.remove(old), Some("old"));
    let new = q.offer("new", secs(1));
    assert_ne!(old, new);
    assert_eq!(q.remove(old), None);
    assert_eq!(q.len(), 1);
    assert_eq!(q.remove(new), Some("new"));

    // Many cycles through the same slots.
    let mut stale = Vec::new();
    for round in 0..50u32 {
        let k = q.offer("cycle", ms(u64::from(round)));
        for s in &stale {
            assert_eq!(q.remove(*s), None);
        }
        assert_eq!(q.len(), 1);
        assert_eq!(q.remove(k), Some("cycle"));
        stale.push(k);
    }
    let unique: std::collections::HashSet<_> = stale.iter().collect();
    assert_eq!(unique.len(), stale.len(), "every offer gets a fresh key");

    clock.advance(secs(2));
    assert!(q.is_empty());
}

#[test]
fn keys_from_another_queue_are_not_found() {
    let (_clock, a) = manual();
    let (_clock_b, b) = manual();
    let ka = a.offer("from a", secs(1));
    let kb = b.offer("from b", secs(1));
    // Same slot, same generation in two fresh queues: the keys still differ.
    assert_ne!(ka, kb);
    assert_eq!(b.remove(ka), None);
    assert_eq!(a.remove(kb), None);
    assert_eq!((a.len(), b.len()), (1, 1));
    assert_eq!(a.remove(ka), Some("from a"));
    assert_eq!(b.remove(kb), Some("from b"));

    // A queue on the real clock and one of another element type: still no match.
    let c: DelayQueue<u64> = DelayQueue::new();
    let kc = c.offer(7, secs(60));
    assert_eq!(a.remove(kc), None);
    assert_eq!(c.len(), 1);
    assert_eq!(c.remove(kc), Some(7));
}

#[test]
fn removed_elements_are_handed_back_not_dropped() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (_clock, q) = manual();
    let k = q.offer(Tracked(drops.clone()), secs(1));
    let item = q.remove(k).expect("present");
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(item);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

// ---------------------------------------------------------------------------------------
// Blocking take on virtual time
// ---------------------------------------------------------------------------------------

#[test]
fn take_returns_a_due_element_without_blocking() {
    let (clock, q) = manual();
    q.offer(1, ms(5));
    clock.advance(ms(5));
    assert_eq!(q.take(), 1);
}

#[test]
fn take_blocks_until_advance_makes_the_head_due() {
    let (clock, q) = manual();
    let q = Arc::new(q);
    q.offer("an hour later", secs(3600));
    let rx = spawn_taker(&q);
    assert_quiet(&rx, "nothing is due");
    clock.advance(secs(1800));
    assert_quiet(&rx, "half way");
    clock.advance(secs(1800));
    assert_eq!(recv(&rx, "advance wakes the taker"), "an hour later");
    assert!(q.is_empty());
}

#[test]
fn take_on_an_empty_queue_waits_for_an_offer() {
    let (_clock, q) = manual();
    let q = Arc::new(q);
    let rx = spawn_taker(&q);
    assert_quiet(&rx, "empty queue");
    q.offer(5, Duration::ZERO);
    assert_eq!(recv(&rx, "an offer of a due element wakes the taker"), 5);
}

#[test]
fn an_earlier_offer_wakes_the_waiting_taker() {
    let (clock, q) = manual();
    let q = Arc::new(q);
    q.offer("late", secs(3600));
    let rx = spawn_taker(&q);
    assert_quiet(&rx, "the head is an hour away");
    // The taker sleeps on the hour-away head with no timeout (virtual time): only the
    // new head's signal can make it look again.
    q.offer("due now", Duration::ZERO);
    assert_eq!(recv(&rx, "a new due head"), "due now");
    assert_eq!(q.len(), 1);

    let rx = spawn_taker(&q);
    assert_quiet(&rx, "still an hour away");
    q.offer("in ten seconds", secs(10));
    assert_quiet(&rx, "the new head is not due");
    clock.advance(secs(10));
    assert_eq!(
        recv(&rx, "the taker re-armed for the new head"),
        "in ten seconds"
    );
    assert_eq!(q.len(), 1);
}

#[test]
fn removing_the_awaited_head_makes_the_taker_wait_for_the_next() {
    let (clock, q) = manual();
    let q = Arc::new(q);
    let first = q.offer("first", secs(10));
    q.offer("second", secs(20));
    let rx = spawn_taker(&q);
    assert_quiet(&rx, "nothing due");
    assert_eq!(q.remove(first), Some("first"));
    clock.advance(secs(10));
    assert_quiet(&rx, "the removed head must not be delivered");
    clock.advance(secs(10));
    assert_eq!(recv(&rx, "the next head"), "second");
}

#[test]
fn several_blocked_takers_all_receive_elements() {
    let (clock, q) = manual();
    let q = Arc::new(q);
    let (tx, rx) = mpsc::channel();
    let takers: Vec<_> = (0..4)
        .map(|_| {
            let q = Arc::clone(&q);
            let tx = tx.clone();
            thread::spawn(move || tx.send(q.take()).unwrap())
        })
        .collect();
    drop(tx);
    assert_quiet(&rx, "empty queue");
    for (i, delay) in [40u64, 10, 30, 20].into_iter().enumerate() {
        q.offer(i, secs(delay));
    }
    assert_quiet(&rx, "nothing due");
    clock.advance(secs(15));
    assert_eq!(recv(&rx, "the first due element"), 1);
    assert_quiet(&rx, "only one element is due");
    clock.advance(secs(25));
    let mut rest: Vec<usize> = (0..3).map(|_| recv(&rx, "the others")).collect();
    rest.sort();
    assert_eq!(rest, vec![0, 2, 3]);
    for t in takers {
        t.join().unwrap();
    }
    assert!(q.is_empty());
}

#[test]
fn blocked_takers_are_all_served_when_many_fall_due_at_once() {
    let (clock, q) = manual();
    let q = Arc::new(q);
    let (tx, rx) = mpsc::channel();
    for _ in 0..6 {
        let q = Arc::clone(&q);
        let tx = tx.clone();
        thread::spawn(move || {
            for _ in 0..5 {
                tx.send(q.take()).unwrap();
            }
        });
    }
    drop(tx);
    for i in 0..30u32 {
        q.offer(i, secs(60));
    }
    assert_quiet(&rx, "nothing due");
    clock.advance(secs(60));
    let mut got: Vec<u32> = (0..30).map(|_| recv(&rx, "every element")).collect();
    got.sort();
    assert_eq!(got, (0..30).collect::<Vec<_>>());
    // Every taker took exactly five and exited, closing the channel.
    assert_eq!(
        rx.recv_timeout(BOUND),
        Err(mpsc::RecvTimeoutError::Disconnected)
    );
}

#[test]
fn poll_timeout_is_real_time_even_on_a_manual_clock() {
    let (clock, q) = manual();
    q.offer(1, secs(1));
    let start = Instant::now();
    assert_eq!(q.poll_timeout(ms(20)), None);
    assert!(start.elapsed() >= ms(20), "returned before its timeout");
    assert_eq!(q.len(), 1);
    clock.advance(secs(1));
    assert_eq!(q.poll_timeout(ms(20)), Some(1));
    assert_eq!(q.poll_timeout(Duration::ZERO), None);
}

#[test]
fn poll_timeout_is_woken_by_advance_and_by_offer() {
    let (clock, q) = manual();
    let q = Arc::new(q);
    q.offer("advanced", secs(5));
    let (tx, rx) = mpsc::channel();
    {
        let q = Arc::clone(&q);
        thread::spawn(move || {
            tx.send(q.poll_timeout(BOUND)).unwrap();
            tx.send(q.poll_timeout(BOUND)).unwrap();
        });
    }
    assert_quiet(&rx, "not due");
    clock.advance(secs(5));
    assert_eq!(recv(&rx, "advance"), Some("advanced"));
    assert_quiet(&rx, "empty");
    q.offer("offered", Duration::ZERO);
    assert_eq!(recv(&rx, "offer"), Some("offered"));
}

// ---------------------------------------------------------------------------------------
// Real time
// ---------------------------------------------------------------------------------------

#[test]
fn real_clock_take_never_returns_early() {
    let q = DelayQueue::new();
    let start = Instant::now();
    let at = start + ms(15);
    q.offer_at("b", at + ms(5));
    q.offer_at("a", at);
    assert_eq!(q.poll(), None);
    assert_eq!(q.take(), "a");
    assert!(Instant::now() >= at);
    assert_eq!(q.take(), "b");
    assert!(Instant::now() >= at + ms(5));
}

#[test]
fn real_clock_far_future_head_does_not_block_others() {
    let q = Arc::new(DelayQueue::new());
    q.offer("never", Duration::MAX);
    let start = Instant::now();
    assert_eq!(q.poll_timeout(ms(20)), None);
    assert!(start.elapsed() >= ms(20));
    let rx = spawn_taker(&q);
    assert_quiet(&rx, "the head is centuries away");
    q.offer("now", Duration::ZERO);
    assert_eq!(recv(&rx, "a due offer"), "now");
    assert_eq!(q.len(), 1);
}

#[test]
fn real_clock_timed_out_waiter_hands_the_wait_on() {
    // One consumer gives up (poll_timeout) while another waits in take: the one left must
    // still be woken when the head falls due, whichever of them was sleeping on it.
    let q = Arc::new(DelayQueue::new());
    q.offer("due", ms(200));
    let (tx, rx) = mpsc::channel();
    {
        let q = Arc::clone(&q);
        thread::spawn(move || tx.send(q.poll_timeout(ms(20))).unwrap());
    }
    assert_eq!(recv(&rx, "poll_timeout gives up"), None);
    let rx = spawn_taker(&q);
    assert_eq!(recv(&rx, "the remaining taker"), "due");

    // Now with the timed waiter starting first, so it is the one asleep on the head.
    q.offer("due again", ms(200));
    let (tx, timed_rx) = mpsc::channel();
    {
        let q = Arc::clone(&q);
        thread::spawn(move || tx.send(q.poll_timeout(ms(60))).unwrap());
    }
    assert_quiet(&timed_rx, "the timed waiter is asleep");
    let rx = spawn_taker(&q);
    assert_eq!(recv(&timed_rx, "the timed waiter gives up"), None);
    assert_eq!(recv(&rx, "the taker was handed the wait"), "due again");
}

#[test]
fn advance_after_queues_were_dropped() {
    let clock = ManualClock::new();
    for i in 0..10u32 {
        let q = DelayQueue::with_clock(clock.clone());
        q.offer(i, secs(1));
    }
    clock.advance(secs(1));
    let q = DelayQueue::with_clock(clock.clone());
    q.offer(99u32, secs(1));
    clock.advance(secs(1));
    assert_eq!(q.poll(), Some(99));
}

#[test]
fn real_clock_producers_and_consumers_see_every_element_exactly_once() {
    const PRODUCERS: u32 = 4;
    const CONSUMERS: usize = 4;
    const PER_PRODUCER: u32 = 500;
    // Elements carry their deadline; `None` tells a consumer to stop.
    let q: Arc<DelayQueue<Option<(u32, Instant)>>> = Arc::new(DelayQueue::new());

    let (done_tx, done_rx) = mpsc::channel();
    for _ in 0..CONSUMERS {
        let q = Arc::clone(&q);
        let done_tx = done_tx.clone();
        thread::spawn(move || {
            let mut got = Vec::new();
            while let Some((id, due)) = q.take() {
                let now = Instant::now();
                assert!(now >= due, "element {id} came out before its deadline");
                got.push(id);
            }
            done_tx.send(got).unwrap();
        });
    }
    drop(done_tx);

    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let q = Arc::clone(&q);
            thread::spawn(move || {
                let mut latest = Instant::now();
                for i in 0..PER_PRODUCER {
                    let id = p * PER_PRODUCER + i;
                    // Short, varied delays: 0..=4 ms.
                    let delay = ms(u64::from((id * 7) % 5));
                    let before = Instant::now() + delay;
                    if id % 3 == 0 {
                        q.offer_at(Some((id, before)), before);
                    } else {
                        // `offer` reads the clock itself: its deadline lies between
                        // `before` and the clock read after it returns.
                        q.offer(Some((id, before)), delay);
                    }
                    latest = latest.max(Instant::now() + delay);
                }
                latest
            })
        })
        .collect();
    let latest = producers
        .into_iter()
        .map(|p| p.join().unwrap())
        .max()
        .unwrap();
    // The stop markers fall due after every element, so they come out last.
    for _ in 0..CONSUMERS {
        q.offer_at(None, latest + ms(1));
    }

    let mut all = Vec::new();
    for _ in 0..CONSUMERS {
        let got = done_rx
            .recv_timeout(BOUND)
            .expect("a consumer did not finish within the bound");
        all.extend(got);
    }
    let total = (PRODUCERS * PER_PRODUCER) as usize;
    assert_eq!(all.len(), total, "every element exactly once");
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), total, "no element twice");
    assert!(q.is_empty());
}

#[test]
fn real_clock_removal_races_with_consumers_exactly_once() {
    // Producers offer, a canceller removes half by key, consumers take the rest: every
    // element ends up either removed or taken, never both, never lost.
    const N: u32 = 2_000;
    let q: Arc<DelayQueue<Option<u32>>> = Arc::new(DelayQueue::new());
    let (key_tx, key_rx) = mpsc::channel::<(u32, DelayKey)>();
    let (done_tx, done_rx) = mpsc::channel();
    for _ in 0..3 {
        let q = Arc::clone(&q);
        let done_tx = done_tx.clone();
        thread::spawn(move || {
            let mut got = Vec::new();
            while let Some(id) = q.take() {
                got.push(id);
            }
            done_tx.send(got).unwrap();
        });
    }
    let canceller = {
        let q = Arc::clone(&q);
        thread::spawn(move || {
            let mut removed = Vec::new();
            for (id, key) in key_rx {
                if id % 2 == 0 {
                    if let Some(v) = q.remove(key) {
                        assert_eq!(v, Some(id), "a key removed another element");
                        removed.push(id);
                    }
                }
            }
            removed
        })
    };
    for id in 0..N {
        let key = q.offer(Some(id), ms(u64::from(id % 4)));
        key_tx.send((id, key)).unwrap();
    }
    drop(key_tx);
    let removed = canceller.join().unwrap();
    let stop_at = Instant::now() + ms(10);
    for _ in 0..3 {
        q.offer_at(None, stop_at);
    }
    let mut taken = Vec::new();
    for _ in 0..3 {
        taken.extend(done_rx.recv_timeout(BOUND).expect("consumer finished"));
    }
    let mut all: Vec<u32> = taken.iter().chain(&removed).copied().collect();
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
    Offer {
        delay_ms: u64,
    },
    /// An absolute deadline, in ms after the clock's start; may lie in the past.
    OfferAt {
        at_ms: u64,
    },
    /// A deadline before the clock's origin.
    OfferBeforeOrigin,
    Poll,
    PollTimeoutZero,
    /// Remove by any key ever handed out (live or stale).
    Remove {
        pick: prop::sample::Index,
    },
    RemoveForeign {
        pick: prop::sample::Index,
    },
    Advance {
        ms: u64,
    },
    DrainExpired,
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..40).prop_map(|delay_ms| Op::Offer { delay_ms }),
        2 => (0u64..200).prop_map(|at_ms| Op::OfferAt { at_ms }),
        1 => Just(Op::OfferBeforeOrigin),
        3 => Just(Op::Poll),
        1 => Just(Op::PollTimeoutZero),
        4 => any::<prop::sample::Index>().prop_map(|pick| Op::Remove { pick }),
        1 => any::<prop::sample::Index>().prop_map(|pick| Op::RemoveForeign { pick }),
        3 => (0u64..25).prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::DrainExpired),
        1 => Just(Op::Clear),
    ]
}

/// The reference: live elements sorted by `(deadline, seq)`, plus the live keys.
#[derive(Default)]
struct Model {
    now_ms: u64,
    seq: u64,
    /// `(deadline_ms, seq, id)`, sorted.
    sorted: Vec<(u64, u64, u32)>,
    live: HashMap<DelayKey, (u64, u32)>,
}

impl Model {
    fn insert(&mut self, key: DelayKey, deadline_ms: u64, id: u32) {
        let seq = self.seq;
        self.seq += 1;
        let entry = (deadline_ms, seq, id);
        let at = self.sorted.partition_point(|e| *e < entry);
        self.sorted.insert(at, entry);
        assert!(
            self.live.insert(key, (seq, id)).is_none(),
            "a key was handed out twice"
        );
    }

    fn pop_due(&mut self) -> Option<u32> {
        match self.sorted.first() {
            Some(&(deadline, _, id)) if deadline <= self.now_ms => {
                self.sorted.remove(0);
                self.live.retain(|_, (_, v)| *v != id);
                Some(id)
            }
            _ => None,
        }
    }

    fn remove(&mut self, key: DelayKey) -> Option<u32> {
        let (seq, id) = self.live.remove(&key)?;
        self.sorted.retain(|e| e.1 != seq);
        Some(id)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn delay_queue_matches_the_model(ops in prop::collection::vec(op(), 1..80)) {
        let clock = ManualClock::new();
        let start = clock.now();
        let q: DelayQueue<u32> = DelayQueue::with_clock(clock.clone());
        let foreign: DelayQueue<u32> = DelayQueue::with_clock(clock.clone());
        let foreign_keys: Vec<DelayKey> = (0..4).map(|i| foreign.offer(1000 + i, ms(5))).collect();
        let mut model = Model::default();
        let mut keys: Vec<DelayKey> = Vec::new();
        let mut next_id = 0u32;

        for op in ops {
            match op {
                Op::Offer { delay_ms } => {
                    let key = q.offer(next_id, ms(delay_ms));
                    model.insert(key, model.now_ms + delay_ms, next_id);
                    keys.push(key);
                    next_id += 1;
                }
                Op::OfferAt { at_ms } => {
                    let key = q.offer_at(next_id, start + ms(at_ms));
                    model.insert(key, at_ms, next_id);
                    keys.push(key);
                    next_id += 1;
                }
                Op::OfferBeforeOrigin => {
                    if let Some(at) = start.checked_sub(secs(1)) {
                        let key = q.offer_at(next_id, at);
                        model.insert(key, 0, next_id);
                        keys.push(key);
                        next_id += 1;
                    }
                }
                Op::Poll => prop_assert_eq!(q.poll(), model.pop_due()),
                Op::PollTimeoutZero => {
                    prop_assert_eq!(q.poll_timeout(Duration::ZERO), model.pop_due());
                }
                Op::Remove { pick } => {
                    if !keys.is_empty() {
                        let key = *pick.get(&keys);
                        prop_assert_eq!(q.remove(key), model.remove(key));
                    }
                }
                Op::RemoveForeign { pick } => {
                    prop_assert_eq!(q.remove(*pick.get(&foreign_keys)), None);
                }
                Op::Advance { ms: by } => {
                    clock.advance(ms(by));
                    model.now_ms += by;
                }
                Op::DrainExpired => {
                    let expected: Vec<u32> = std::iter::from_fn(|| model.pop_due()).collect();
                    prop_assert_eq!(q.drain_expired(), expected);
                }
                Op::Clear => {
                    q.clear();
                    model.sorted.clear();
                    model.live.clear();
                }
            }
            prop_assert_eq!(q.len(), model.sorted.len());
            prop_assert_eq!(q.is_empty(), model.sorted.is_empty());
            prop_assert_eq!(
                q.peek_deadline(),
                model.sorted.first().map(|e| start + ms(e.0))
            );
        }
        prop_assert_eq!(clock.now(), start + ms(model.now_ms));
        // The foreign queue never lost anything.
        prop_assert_eq!(foreign.len(), 4);
        // Finally everything left comes out in model order.
        clock.advance(secs(3600));
        model.now_ms += 3_600_000;
        let expected: Vec<u32> = std::iter::from_fn(|| model.pop_due()).collect();
        prop_assert_eq!(q.drain_expired(), expected);
        prop_assert!(q.is_empty());
    }
}

// ---------------------------------------------------------------------------------------
// reset / reset_at
// ---------------------------------------------------------------------------------------

#[test]
fn reset_moves_the_deadline_both_ways_and_keeps_the_key() {
    let clock = ManualClock::new();
    let q = DelayQueue::with_clock(clock.clone());
    let a = q.offer("a", secs(10));
    let b = q.offer("b", secs(20));
    assert!(q.reset(b, secs(5)), "earlier");
    assert_eq!(q.peek_deadline(), Some(clock.now() + secs(5)));
    assert!(q.reset(a, secs(30)), "later");
    clock.advance(secs(5));
    assert_eq!(q.poll(), Some("b"));
    clock.advance(secs(24));
    assert_eq!(q.poll(), None, "a moved to 30 s");
    assert!(q.reset(a, secs(1)), "the key survived both resets");
    assert_eq!(q.remove(a), Some("a"), "and still removes");
    assert!(!q.reset(a, secs(1)), "a removed element");
    assert!(!q.reset(b, secs(1)), "a taken element");
    assert_eq!(q.len(), 0);
}

#[test]
fn reset_at_the_past_makes_the_element_due_and_foreign_keys_change_nothing() {
    let clock = ManualClock::new();
    let q = DelayQueue::with_clock(clock.clone());
    let other = DelayQueue::with_clock(clock.clone());
    let k = q.offer(1, secs(60));
    let foreign = other.offer(2, secs(60));
    assert!(!q.reset_at(foreign, clock.now()), "a key of another queue");
    assert!(!other.reset(k, Duration::ZERO));
    assert_eq!(other.poll(), None);
    assert!(q.reset_at(k, clock.now() - secs(1)));
    assert_eq!(q.poll(), Some(1));
}

#[test]
fn a_reset_to_now_wakes_a_blocked_taker() {
    // Virtual time: the taker leads without a timeout, so only the reset's signal can
    // wake it.
    let clock = ManualClock::new();
    let q = Arc::new(DelayQueue::with_clock(clock.clone()));
    let key = q.offer(7u32, Duration::from_secs(3600));
    let (tx, rx) = mpsc::channel();
    let taker = {
        let q = Arc::clone(&q);
        thread::spawn(move || tx.send(q.take()).unwrap())
    };
    assert!(rx.recv_timeout(QUIET).is_err(), "not due yet");
    assert!(q.reset(key, Duration::ZERO));
    assert_eq!(rx.recv_timeout(BOUND), Ok(7));
    taker.join().unwrap();
}

#[test]
fn a_reset_later_keeps_a_blocked_taker_waiting_for_the_new_deadline() {
    let clock = ManualClock::new();
    let q = Arc::new(DelayQueue::with_clock(clock.clone()));
    let key = q.offer(9u32, secs(10));
    let (tx, rx) = mpsc::channel();
    let taker = {
        let q = Arc::clone(&q);
        thread::spawn(move || tx.send(q.take()).unwrap())
    };
    assert!(q.reset(key, secs(20)));
    clock.advance(secs(10));
    assert!(
        rx.recv_timeout(QUIET).is_err(),
        "the old deadline no longer holds"
    );
    clock.advance(secs(10));
    assert_eq!(rx.recv_timeout(BOUND), Ok(9));
    taker.join().unwrap();
}

// ---------------------------------------------------------------------------------------
// close / take_until_closed / peek_with
// ---------------------------------------------------------------------------------------

#[test]
fn close_wakes_blocked_takers_after_the_due_elements_are_out() {
    let clock = ManualClock::new();
    let q = Arc::new(DelayQueue::with_clock(clock.clone()));
    q.offer("due", Duration::ZERO);
    q.offer("later", secs(60));
    let (tx, rx) = mpsc::channel();
    let takers: Vec<_> = (0..3)
        .map(|_| {
            let (q, tx) = (Arc::clone(&q), tx.clone());
            thread::spawn(move || {
                let mut got = Vec::new();
                while let Some(v) = q.take_until_closed() {
                    got.push(v);
                }
                tx.send(got).unwrap();
            })
        })
        .collect();
    assert!(
        rx.recv_timeout(QUIET).is_err(),
        "open: they wait for \"later\""
    );
    assert!(q.close());
    assert!(!q.close() && q.is_closed());
    let mut all: Vec<&str> = (0..3)
        .flat_map(|_| rx.recv_timeout(BOUND).unwrap())
        .collect();
    all.sort();
    assert_eq!(
        all,
        ["due"],
        "each element once; nothing waited for after the close"
    );
    takers.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(q.len(), 1, "closing keeps the elements");
    // Everything else works as before on a closed queue.
    q.offer("after", Duration::ZERO);
    assert_eq!(
        q.take_until_closed(),
        Some("after"),
        "still due: returned, not refused"
    );
    assert_eq!(q.take_until_closed(), None);
    clock.advance(secs(60));
    assert_eq!(
        q.take(),
        "later",
        "take keeps its promise on a closed queue"
    );
}

#[test]
fn peek_with_sees_the_head_and_its_deadline_without_taking_it() {
    let clock = ManualClock::new();
    let q = DelayQueue::with_clock(clock.clone());
    assert_eq!(q.peek_with(|v: &u32, _| *v), None);
    q.offer(2u32, secs(20));
    q.offer(1u32, secs(10));
    assert_eq!(
        q.peek_with(|v, at| (*v, at)),
        Some((1, clock.now() + secs(10)))
    );
    assert_eq!(q.len(), 2);
}

#[test]
fn entries_come_out_with_their_key_and_deadline() {
    let clock = ManualClock::new();
    let q = Arc::new(DelayQueue::with_clock(clock.clone()));
    let t0 = clock.now();
    let a = q.offer("a", secs(1));
    let b = q.offer("b", secs(2));
    assert!(q.poll_entry().is_none(), "nothing due");
    clock.advance(secs(1));
    let first = q.poll_entry().expect("a is due");
    assert_eq!(
        (first.key(), first.deadline(), *first.get_ref()),
        (a, t0 + secs(1), "a")
    );
    assert_eq!(q.remove(first.key()), None, "the key is stale once taken");
    let taker = {
        let q = Arc::clone(&q);
        thread::spawn(move || q.take_entry())
    };
    clock.advance(secs(1));
    let mut second = taker.join().unwrap();
    assert_eq!((second.key(), second.deadline()), (b, t0 + secs(2)));
    *second.get_mut() = "b, changed";
    assert_eq!(second.into_inner(), "b, changed");
    assert!(q.is_empty());
}

// ---------------------------------------------------------------------------------------
// next_expired: the async face
// ---------------------------------------------------------------------------------------

#[test]
fn next_expired_hands_each_element_to_one_awaiting_task_on_any_runtime() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let q = Arc::new(DelayQueue::new());
    let got = rt.block_on(async {
        let consumers: Vec<_> = (0..3)
            .map(|_| {
                let q = Arc::clone(&q);
                tokio::spawn(async move { q.next_expired().await })
            })
            .collect();
        for i in 0..3u32 {
            q.offer(i, ms(5 * u64::from(i)));
        }
        let mut got = Vec::new();
        for c in consumers {
            got.push(tokio::time::timeout(BOUND, c).await.unwrap().unwrap());
        }
        got
    });
    let mut got: Vec<u32> = got.into_iter().map(Option::unwrap).collect();
    got.sort();
    assert_eq!(got, [0, 1, 2], "each element to exactly one consumer");
    assert!(q.is_empty());
}

#[test]
fn next_expired_follows_virtual_time_and_ends_with_none_at_close() {
    let clock = ManualClock::new();
    let q = Arc::new(DelayQueue::with_clock(clock.clone()));
    q.offer("a", secs(10));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let q = Arc::clone(&q);
        thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            let first = rt.block_on(q.next_expired());
            tx.send(first).unwrap();
            rt.block_on(q.next_expired())
        })
    };
    assert!(rx.recv_timeout(QUIET).is_err(), "not due on virtual time");
    clock.advance(secs(10));
    assert_eq!(rx.recv_timeout(BOUND).unwrap(), Some("a"));
    q.close();
    assert_eq!(waiter.join().unwrap(), None, "closed with nothing due");
    // A dropped future leaves nothing behind: a later one still works.
    rt.block_on(async {
        let pending = q.next_expired();
        drop(pending);
        q.offer("b", Duration::ZERO);
        assert_eq!(q.next_expired().await, Some("b"));
    });
}

// ---------------------------------------------------------------------------------------
// take_entry_until_closed, and a dropped queue closes
// ---------------------------------------------------------------------------------------

/// The reaper's loop: every due entry with its key, then `None` once the queue is closed,
/// and a reaper blocked on a far deadline wakes at the close.
#[test]
fn take_entry_until_closed_hands_out_keys_then_stops_at_close() {
    let clock = ManualClock::new();
    let q = Arc::new(DelayQueue::with_clock(clock.clone()));
    let a = q.offer("a", Duration::from_secs(1));
    let b = q.offer("b", Duration::from_secs(2));
    let far = q.offer("far", Duration::from_secs(3600));
    let (tx, rx) = mpsc::channel();
    let reaper = {
        let q = Arc::clone(&q);
        thread::spawn(move || {
            while let Some(e) = q.take_entry_until_closed() {
                tx.send((e.key(), e.into_inner())).unwrap();
            }
        })
    };
    clock.advance(Duration::from_secs(2));
    let got: Vec<_> = (0..2).map(|_| rx.recv_timeout(BOUND).unwrap()).collect();
    assert_eq!(
        got,
        [(a, "a"), (b, "b")],
        "in deadline order, each with its key"
    );
    assert!(q.close(), "wakes the reaper blocked on the hour-away head");
    reaper.join().unwrap();
    assert!(rx.try_recv().is_err(), "nothing after the close");
    assert_eq!(q.remove(far), Some("far"), "closing keeps the elements");
}

#[test]
fn take_entry_until_closed_returns_what_is_due_before_none() {
    let q = DelayQueue::new();
    let k = q.offer(7, Duration::ZERO);
    q.close();
    let e = q
        .take_entry_until_closed()
        .expect("due, so handed out after the close");
    assert_eq!((e.key(), e.into_inner()), (k, 7));
    assert!(q.take_entry_until_closed().is_none());
}

/// Dropping the queue closes it: a spawned `next_expired` future (which holds the queue's
/// core) resolves to `None` instead of waiting for an element nobody can take any more,
/// on an empty queue and on one whose head is an hour away.
#[test]
fn dropping_the_queue_resolves_a_pending_next_expired_to_none() {
    for far_head in [false, true] {
        let q: DelayQueue<u32> = DelayQueue::new();
        if far_head {
            q.offer(1, Duration::from_secs(3600));
        }
        let pending = q.next_expired();
        let (tx, rx) = mpsc::channel();
        let waiter = thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            tx.send(rt.block_on(pending)).unwrap();
        });
        // Either order is right: polled first (then woken by the drop) or after the drop
        // (then it finds the queue closed). The pause makes the first the usual one.
        thread::sleep(Duration::from_millis(5));
        drop(q);
        assert_eq!(
            rx.recv_timeout(BOUND).expect("woken by the drop"),
            None,
            "far head: {far_head}"
        );
        waiter.join().unwrap();
    }
}

#[test]
fn dropping_the_queue_wakes_a_taker_of_the_async_face_spawned_on_tokio() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let got = rt.block_on(async {
        let q: DelayQueue<&str> = DelayQueue::new();
        let task = tokio::spawn(q.next_expired());
        tokio::task::yield_now().await;
        drop(q);
        task.await.unwrap()
    });
    assert_eq!(got, None);
}

// ---------------------------------------------------------------------------------------
// The async face: one timer thread for a consumer loop, the Stream, cancel safety
// ---------------------------------------------------------------------------------------

/// A minimal executor: polls `fut` on this thread, parking between polls; its waker
/// records the thread that woke it.
fn block_on_recording<F: std::future::Future>(fut: F, wakers: &Arc<WakeLog>) -> F::Output {
    use std::task::{Context, Poll, Waker};
    let waker = Waker::from(Arc::clone(wakers));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        thread::park_timeout(BOUND);
    }
}

struct WakeLog {
    owner: thread::Thread,
    by: std::sync::Mutex<BTreeSet<String>>,
}

impl std::task::Wake for WakeLog {
    fn wake(self: Arc<Self>) {
        let me = thread::current();
        let name = format!("{:?} {:?}", me.id(), me.name());
        self.by.lock().unwrap().insert(name);
        self.owner.unpark();
    }
}

/// A `while let Some(x) = q.next_expired().await` loop over elements 1 ms apart is woken
/// by one timer thread that lingers between awaits, not by a new thread per element.
#[test]
fn a_consumer_loop_of_next_expired_is_woken_by_one_timer_thread() {
    let q = DelayQueue::new();
    for i in 0..40u32 {
        q.offer(i, Duration::from_millis(u64::from(i) + 1));
    }
    let log = Arc::new(WakeLog {
        owner: thread::current(),
        by: std::sync::Mutex::new(BTreeSet::new()),
    });
    let got = block_on_recording(
        async {
            let mut got = Vec::new();
            while got.len() < 40 {
                got.push(q.next_expired().await.expect("open"));
            }
            got
        },
        &log,
    );
    assert_eq!(got, (0..40).collect::<Vec<_>>());
    let by = log.by.lock().unwrap();
    assert!(
        by.len() <= 3,
        "{} threads woke 40 awaits (one timer that lingers would be one): {by:?}",
        by.len()
    );
}

/// The stream yields each element with its key, in deadline order, and ends once the
/// queue is closed and nothing is due.
#[test]
fn expirations_yield_keys_in_order_and_end_at_close() {
    use futures_core::Stream;
    use std::task::{Context, Poll};
    let clock = ManualClock::new();
    let q = DelayQueue::with_clock(clock.clone());
    let b = q.offer("b", Duration::from_secs(2));
    let a = q.offer("a", Duration::from_secs(1));
    let mut s = q.expirations();
    let waker = std::task::Waker::noop();
    let mut cx = Context::from_waker(waker);
    assert!(std::pin::Pin::new(&mut s).poll_next(&mut cx).is_pending());
    clock.advance(Duration::from_secs(2));
    let mut next = || match std::pin::Pin::new(&mut s).poll_next(&mut cx) {
        Poll::Ready(item) => item.map(|e| (e.key(), e.into_inner())),
        Poll::Pending => panic!("due elements are ready"),
    };
    assert_eq!(next(), Some((a, "a")));
    assert_eq!(next(), Some((b, "b")));
    q.offer("due", Duration::ZERO);
    q.close();
    assert_eq!(
        next().map(|(_, v)| v),
        Some("due"),
        "what is due comes first"
    );
    assert_eq!(next(), None, "then the stream ends");
}

/// Cancel safety: a stream or a `next_expired` future dropped while it waits takes nothing
/// with it; the element is there for the next taker.
#[test]
fn a_dropped_pending_stream_or_future_loses_nothing() {
    use futures_core::Stream;
    use std::future::Future;
    use std::task::Context;
    let clock = ManualClock::new();
    let q = DelayQueue::with_clock(clock.clone());
    q.offer(1, Duration::from_millis(10));
    q.offer(2, Duration::from_millis(10));
    let waker = std::task::Waker::noop();
    let mut cx = Context::from_waker(waker);
    let mut s = q.expirations();
    assert!(std::pin::Pin::new(&mut s).poll_next(&mut cx).is_pending());
    let mut f = Box::pin(q.next_expired());
    assert!(f.as_mut().poll(&mut cx).is_pending());
    clock.advance(Duration::from_millis(10));
    drop(s);
    drop(f);
    assert_eq!(q.drain_expired(), [1, 2], "both still queued");
}

/// A waker that counts its wakes.
struct CountingWaker(AtomicUsize);

impl std::task::Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Waits (with a generous bound) until `waker` has been woken `n` times.
fn await_wakes(waker: &CountingWaker, n: usize) {
    let start = std::time::Instant::now();
    while waker.0.load(Ordering::SeqCst) < n {
        assert!(start.elapsed() < BOUND, "wake {n} never came");
        thread::yield_now();
    }
}

/// The stream's consumer is woken once per batch of due elements and takes the whole
/// batch in its polls; a head moved later, or an element moved later behind it, wakes it
/// not at all, and it is woken again at the new deadline.
#[test]
fn expirations_wake_once_per_batch_and_not_for_a_later_head() {
    use futures_core::Stream;
    use std::task::{Context, Poll};
    let clock = ManualClock::new();
    let q = DelayQueue::with_clock(clock.clone());
    let ms = Duration::from_millis;
    let a1 = q.offer("a1", ms(10));
    q.offer("a2", ms(10));
    q.offer("a3", ms(10));
    let b = q.offer("b", ms(20));
    q.offer("c", ms(30));
    let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
    let waker = std::task::Waker::from(Arc::clone(&counter));
    let mut cx = Context::from_waker(&waker);
    let mut s = q.expirations();
    let mut ready = || -> Vec<&str> {
        let mut out = Vec::new();
        while let Poll::Ready(e) = std::pin::Pin::new(&mut s).poll_next(&mut cx) {
            out.push(e.expect("open").into_inner());
        }
        out
    };
    assert!(ready().is_empty());
    assert!(q.reset(a1, ms(25)), "the head, later");
    assert!(q.reset(b, ms(40)), "behind the head, later");
    clock.advance(ms(10));
    await_wakes(&counter, 1);
    assert_eq!(ready(), ["a2", "a3"], "the batch in one wake-up");
    clock.advance(ms(15));
    await_wakes(&counter, 2);
    assert_eq!(ready(), ["a1"]);
    clock.advance(ms(15));
    await_wakes(&counter, 3);
    assert_eq!(ready(), ["c", "b"]);
    assert_eq!(
        counter.0.load(Ordering::SeqCst),
        3,
        "one wake per batch, no other"
    );
}

// ---------------------------------------------------------------------------------------
// `on_tokio_timer` (feature `tokio`): the async takes asleep on tokio's timer
// ---------------------------------------------------------------------------------------

#[cfg(feature = "tokio")]
mod on_tokio_timer {
    use super::*;
    use futures_core::Stream;
    use std::future::poll_fn;
    use std::pin::Pin;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap()
    }

    async fn next<S: Stream + Unpin>(s: &mut S) -> Option<S::Item> {
        poll_fn(|cx| Pin::new(&mut *s).poll_next(cx)).await
    }

    /// Elements 1 ms apart come out in order, none before its deadline.
    #[test]
    fn the_stream_yields_every_element_in_order_never_early() {
        runtime().block_on(async {
            let q = DelayQueue::new();
            for i in 0..50u32 {
                q.offer(i, ms(u64::from(i) + 1));
            }
            let mut s = q.expirations().on_tokio_timer();
            for i in 0..50u32 {
                let e = tokio::time::timeout(BOUND, next(&mut s))
                    .await
                    .expect("an element within the bound")
                    .expect("open");
                assert!(e.deadline() <= Instant::now(), "never before its deadline");
                assert_eq!(e.into_inner(), i);
            }
        });
    }

    /// A take armed for a far head is woken for an earlier one (offered from another
    /// task, so that nothing else polls it), for a head moved later it waits for the new
    /// deadline, and a close ends it.
    #[test]
    fn an_earlier_head_a_later_head_and_a_close_reach_the_armed_take() {
        let rt = runtime();
        let q = Arc::new(DelayQueue::new());
        q.offer("far", Duration::from_secs(3600));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let consumer = {
            let mut s = q.expirations().on_tokio_timer();
            rt.spawn(async move {
                while let Some(e) = poll_fn(|cx| Pin::new(&mut s).poll_next(cx)).await {
                    tx.send(e.into_inner()).unwrap();
                }
            })
        };
        rt.block_on(async {
            // The consumer is armed for "far" by now, or sees these when it first polls.
            tokio::time::sleep(ms(5)).await;
            let moved = q.offer("moved", ms(5));
            q.offer("next", ms(25));
            assert!(q.reset(moved, ms(40)), "the new head, later");
            for want in ["next", "moved"] {
                let got = tokio::time::timeout(BOUND, rx.recv()).await;
                assert_eq!(got.expect("woken before the bound"), Some(want));
            }
            q.close();
            tokio::time::timeout(BOUND, consumer)
                .await
                .expect("closed: the stream ends")
                .unwrap();
        });
    }

    /// On a `ManualClock`, and polled outside a tokio runtime, the take sleeps on the
    /// queue's timer as before.
    #[test]
    fn a_manual_clock_or_no_runtime_falls_back_to_the_queue_timer() {
        let (clock, q) = manual::<&str>();
        q.offer("virtual", Duration::from_secs(60));
        let rt = runtime();
        let waiting = {
            let mut s = q.expirations().on_tokio_timer();
            rt.spawn(async move {
                let e = poll_fn(|cx| Pin::new(&mut s).poll_next(cx)).await;
                e.map(schedpool::Expired::into_inner)
            })
        };
        clock.advance(Duration::from_secs(60));
        let got = rt.block_on(async { tokio::time::timeout(BOUND, waiting).await });
        assert_eq!(got.expect("within the bound").unwrap(), Some("virtual"));

        let real = DelayQueue::new();
        real.offer("no runtime", ms(2));
        let log = Arc::new(WakeLog {
            owner: thread::current(),
            by: std::sync::Mutex::new(BTreeSet::new()),
        });
        let got = block_on_recording(real.next_expired().on_tokio_timer(), &log);
        assert_eq!(got, Some("no runtime"));
    }
}
