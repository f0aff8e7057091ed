//! Unit tests of the blocking queue (`queue/blocking.rs`).

use super::*;
use crate::clock::{add, ManualClock};
use crate::queue::TimedEntry;
use crate::sync::Arc;
use std::time::Duration;

type Q = BlockingQueue<TimedEntry<u32>>;

fn manual() -> (ManualClock, Arc<Q>) {
    let c = ManualClock::new();
    let q = Arc::new(Q::new(Clock::Manual(c.clone()), 0));
    let weak = Arc::downgrade(&q);
    Clock::Manual(c.clone()).register(weak);
    (c, q)
}

fn offer(q: &Q, deadline: Ticks, v: u32) -> Handle {
    let mut g = q.lock();
    let seq = g.next_seq();
    g.push(TimedEntry {
        deadline,
        seq,
        value: v,
    })
}

fn take(q: &Q) -> u32 {
    match q.lock().take(None, |_| false) {
        Take::Item(e, _) => e.value,
        other => panic!("unexpected {other:?}"),
    }
}

const MS: Ticks = 1_000_000;

#[test]
fn due_entries_come_out_in_deadline_then_fifo_order() {
    let (c, q) = manual();
    for (d, v) in [(30, 0), (10, 1), (20, 2), (10, 3)] {
        offer(&q, d * MS, v);
    }
    c.advance(Duration::from_millis(30));
    assert_eq!(
        (0..4).map(|_| take(&q)).collect::<Vec<_>>(),
        vec![1, 3, 2, 0]
    );
}

#[test]
fn poll_returns_only_due_entries() {
    let (c, q) = manual();
    offer(&q, 5 * MS, 7);
    assert!(q.lock().poll().is_none());
    c.advance(Duration::from_millis(5));
    assert_eq!(q.lock().poll().map(|e| e.value), Some(7));
}

#[test]
fn timed_take_times_out_in_real_time() {
    let (_c, q) = manual();
    offer(&q, add(0, Duration::MAX), 1);
    let until = Instant::now() + Duration::from_millis(20);
    assert!(matches!(
        q.lock().take(Some(until), |_| false),
        Take::TimedOut
    ));
    assert!(Instant::now() >= until);
}

#[test]
fn advance_wakes_the_leader() {
    let (c, q) = manual();
    offer(&q, 3_600_000 * MS, 42);
    let q2 = q.clone();
    let taker = std::thread::spawn(move || take(&q2));
    wait_for(|| q.lock().waiters.leader());
    c.advance(Duration::from_secs(3600));
    assert_eq!(taker.join().unwrap(), 42);
}

#[test]
fn an_earlier_offer_wakes_the_leader_and_every_taker_gets_one() {
    let (c, q) = manual();
    offer(&q, 100 * MS, 1);
    let takers: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            std::thread::spawn(move || take(&q))
        })
        .collect();
    wait_for(|| q.lock().waiters.leader());
    offer(&q, 10 * MS, 2); // new head: the leader re-arms for it
    offer(&q, 50 * MS, 3);
    c.advance(Duration::from_millis(100));
    let mut got: Vec<u32> = takers.into_iter().map(|t| t.join().unwrap()).collect();
    got.sort();
    assert_eq!(got, vec![1, 2, 3]);
}

#[test]
fn real_clock_leader_wakes_at_the_deadline() {
    let q = Q::new(Clock::real(), 0);
    let at = q.clock().deadline_after(Duration::from_millis(15));
    offer(&q, at, 9);
    assert_eq!(take(&q), 9);
    assert!(q.clock().now() >= at, "never early");
}

#[test]
fn remove_of_the_head_and_stop() {
    let (_c, q) = manual();
    let h = offer(&q, 5 * MS, 1);
    assert_eq!(q.lock().remove(h).map(|e| e.value), Some(1));
    assert!(q.lock().remove(h).is_none());
    let mut g = q.lock();
    assert!(matches!(g.take(None, |s| s.is_empty()), Take::Stopped));
}

fn wait_for(cond: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < end, "condition not reached in 10 s");
        std::thread::yield_now();
    }
}

/// F3 through a panic: a leader whose stop condition panics (caller code that runs inside
/// the take) unwinds through the exit guard, which hands the head on to the follower.
#[test]
fn a_leader_whose_stop_condition_panics_hands_the_head_on() {
    let (c, q) = manual();
    offer(&q, 10 * MS, 1);
    let leader = {
        let (q, c) = (q.clone(), c.clone());
        std::thread::spawn(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                q.lock().take(None, |_| {
                    assert!(c.ticks() < 10 * MS, "the stop condition panics");
                    false
                })
            }))
            .is_err()
        })
    };
    wait_for(|| q.lock().waiters.leader());
    let (tx, rx) = std::sync::mpsc::channel();
    let follower = {
        let q = q.clone();
        std::thread::spawn(move || tx.send(take(&q)).unwrap())
    };
    wait_for(|| q.lock().waiters.followers() == 1);
    c.advance(Duration::from_millis(10)); // wakes the leader only; it panics
    assert!(
        leader.join().unwrap(),
        "the leader's stop condition panicked"
    );
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10)),
        Ok(1),
        "the follower was handed the head"
    );
    follower.join().unwrap();
}
