//! Unit tests of `sharded.rs`.

use super::*;
use crate::clock::ManualClock;
use crate::queue::{Position, TimedEntry};
use crate::sync::Arc;
use std::time::Duration;

type Entry = TimedEntry<Arc<(u32, Position)>>;
type Q = ShardedQueue<Entry, ()>;
const MS: Ticks = 1_000_000;

fn manual(shards: usize) -> (ManualClock, Arc<Q>) {
    let c = ManualClock::new();
    let q = Arc::new(Q::new(
        Clock::Manual(c.clone()),
        shards,
        SpinPolicy::Adaptive,
        Duration::ZERO,
        || (),
    ));
    let weak = Arc::downgrade(&q);
    Clock::Manual(c.clone()).register(weak);
    (c, q)
}

/// A queue of `shards` on the real clock.
fn real_clock_queue(shards: usize) -> Q {
    Q::new(
        Clock::real(),
        shards,
        SpinPolicy::Adaptive,
        Duration::ZERO,
        || (),
    )
}

fn offer(q: &Q, shard: usize, deadline: Ticks, v: u32) -> Arc<(u32, Position)> {
    let value = Arc::new((v, Position::new()));
    let mut g = q.lock(shard);
    let seq = g.next_seq(None);
    g.push_tracked(
        TimedEntry {
            deadline,
            seq,
            value: value.clone(),
        },
        false,
    );
    value
}

fn take(q: &Q) -> u32 {
    match q.take(None, |_| false) {
        Take::Item(e, _) => {
            q.finished();
            e.value.0
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn deadline_then_fifo_order_across_shards() {
    let (c, q) = manual(4);
    // Equal deadlines in different shards come out by sequence (Q3).
    for (shard, d, v) in [(0, 30, 0), (1, 10, 1), (2, 20, 2), (3, 10, 3), (0, 10, 4)] {
        offer(&q, shard, d * MS, v);
    }
    c.advance(Duration::from_millis(30));
    assert_eq!(
        (0..5).map(|_| take(&q)).collect::<Vec<_>>(),
        vec![1, 3, 4, 2, 0]
    );
    assert_eq!(q.len(), 0);
}

#[test]
fn a_push_into_another_shard_wakes_the_leader() {
    let (c, q) = manual(2);
    offer(&q, 0, 100 * MS, 1);
    let q2 = q.clone();
    let taker = std::thread::spawn(move || take(&q2));
    wait_for(|| q.coord.lock().leader());
    offer(&q, 1, 10 * MS, 2); // an earlier head in the other shard: the leader re-arms
    c.advance(Duration::from_millis(10));
    assert_eq!(taker.join().unwrap(), 2);
}

#[test]
fn a_push_into_an_empty_queue_wakes_a_follower() {
    let (_c, q) = manual(2);
    let q2 = q.clone();
    let taker = std::thread::spawn(move || take(&q2));
    wait_for(|| q.coord.lock().followers() == 1);
    offer(&q, 1, 0, 7);
    assert_eq!(taker.join().unwrap(), 7);
}

#[test]
fn removal_and_rekeying_stay_in_the_home_shard() {
    let (c, q) = manual(2);
    let a = offer(&q, 0, 50 * MS, 1);
    let b = offer(&q, 1, 60 * MS, 2);
    assert_eq!(q.lock(0).remove_tracked(&a.1).map(|e| e.value.0), Some(1));
    let mut g = q.lock(1);
    let seq = g.next_seq(None);
    assert!(g.update_tracked(&b.1, |e| {
        e.deadline = 5 * MS;
        e.seq = seq;
    },));
    drop(g);
    c.advance(Duration::from_millis(5));
    assert_eq!(take(&q), 2);
    assert!(q.is_empty_hint());
}

/// A submission due at once takes the first free shard after its thread's own when that
/// one is locked (a worker popping there), and waits for nothing; a later one, or one
/// whose own shard is free, goes to its own.
#[test]
fn a_due_submission_takes_the_next_free_shard_when_its_own_is_locked() {
    use std::sync::mpsc;
    let (_c, q) = manual(4);
    let (to_test, from_producer) = mpsc::channel();
    let (go, wait_go) = mpsc::channel::<()>();
    let producer = {
        let q = q.clone();
        std::thread::spawn(move || {
            let own = q.local_shard();
            to_test.send(own).unwrap();
            wait_go.recv().unwrap();
            to_test.send(q.lock_to_submit(true).index()).unwrap();
            wait_go.recv().unwrap();
            let due = q.lock_to_submit(true).index();
            let later = q.lock_to_submit(false).index();
            (own, (due, later))
        })
    };
    let own = from_producer.recv().unwrap();
    let held = q.lock(own);
    go.send(()).unwrap();
    let took = from_producer.recv_timeout(Duration::from_secs(60));
    drop(held); // a producer that waited for it returns now, and the test fails below
    assert_eq!(took, Ok((own + 1) % 4), "the next shard, without waiting");
    go.send(()).unwrap();
    let (own_again, free) = producer.join().unwrap();
    assert_eq!(own_again, own);
    assert_eq!(free, (own, own), "its own shard when that is free");
}

/// One thread's due submissions with one deadline, the first spilled to another shard
/// and the second in its own, come out first to last: on the real clock each is numbered
/// from its own clock reading (Q3), so the spill keeps FIFO among equal deadlines.
#[test]
fn due_submissions_that_spill_keep_fifo_among_equal_deadlines() {
    let q = real_clock_queue(2);
    let deadline = q.clock().now();
    let submit = |v: u32| {
        let mut g = q.lock_to_submit(true);
        let seq = g.next_seq(None);
        g.push_tracked(
            TimedEntry {
                deadline,
                seq,
                value: Arc::new((v, Position::new())),
            },
            true,
        );
        g.index()
    };
    for round in 0..100 {
        let own = q.local_shard();
        let held = q.lock(own);
        let first = submit(2 * round);
        drop(held);
        // Q3's premise: the clock ticks between the two (a nanosecond clock always has).
        let read = q.clock().now();
        while q.clock().now() == read {
            std::hint::spin_loop();
        }
        let second = submit(2 * round + 1);
        assert_eq!((first, second), (own ^ 1, own), "spilled, then its own");
        assert_eq!(take(&q), 2 * round);
        assert_eq!(take(&q), 2 * round + 1);
    }
}

#[test]
fn wait_idle_waits_for_due_entries_and_active_takes() {
    let (c, q) = manual(2);
    assert!(q.wait_idle(None));
    offer(&q, 1, 0, 1);
    assert!(!q.wait_idle(Some(Instant::now() + Duration::from_millis(10))));
    let e = q.lock(1).poll().expect("due");
    assert_eq!(q.active(), 1);
    assert!(
        !q.wait_idle(Some(Instant::now() + Duration::from_millis(10))),
        "Q4: nothing due, but a take is in progress"
    );
    let q2 = q.clone();
    let waiter = std::thread::spawn(move || q2.wait_idle(None));
    wait_for(|| q.idle_waiters.load(Ordering::Acquire) == 1);
    q.finished();
    assert!(waiter.join().unwrap());
    drop((e, c));
}

#[test]
fn timed_take_times_out_and_stop_stops() {
    let (_c, q) = manual(2);
    offer(&q, 0, 3_600_000 * MS, 1);
    let until = Instant::now() + Duration::from_millis(20);
    assert!(matches!(q.take(Some(until), |_| false), Take::TimedOut));
    assert!(Instant::now() >= until);
    assert!(matches!(q.take(None, |empty| !empty), Take::Stopped));
}

#[test]
fn real_clock_leader_wakes_at_the_deadline() {
    let q = real_clock_queue(2);
    let at = q.clock().deadline_after(Duration::from_millis(15));
    offer(&q, 1, at, 9);
    assert_eq!(take(&q), 9);
    assert!(q.clock().now() >= at, "never early");
}

/// The real clock and real threads across 64 shards in eight groups: four producers push
/// entries a few hundred microseconds ahead into every shard while four takers take them
/// and a remover takes some back; every entry is taken or removed exactly once, and a
/// take that times out leaves no entry queued that was due before it started. (The
/// order and the groups' minima are checked exactly by
/// `grouped_shards_match_a_sorted_model` and the loom models; a lagging minimum that
/// only delays a take does not fail this test.)
#[test]
fn sixty_four_shards_lose_nothing_under_producers_and_takers() {
    use std::collections::HashSet;
    use std::sync::Mutex as StdMutex;
    const PER: u32 = 2_000;
    let q = Arc::new(Q::new(
        Clock::real(),
        64,
        SpinPolicy::Adaptive,
        Duration::ZERO,
        || (),
    ));
    assert_eq!(q.groups.len(), 8);
    let taken = Arc::new(StdMutex::new(Vec::new()));
    let removed = Arc::new(StdMutex::new(Vec::new()));
    let pending = Arc::new(StdMutex::new(Vec::<(usize, Arc<(u32, Position)>)>::new()));
    std::thread::scope(|s| {
        for p in 0..4u32 {
            let (q, pending) = (&q, &pending);
            s.spawn(move || {
                let mut x = 0x9E37_79B9_u64 ^ u64::from(p);
                for i in 0..PER {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let shard = (x % 64) as usize;
                    let at = q.clock().deadline_after(Duration::from_micros(x % 500));
                    let v = offer(q, shard, at, p * PER + i);
                    if i % 7 == 0 {
                        pending.lock().unwrap().push((shard, v));
                    }
                }
            });
        }
        {
            let (q, pending, removed) = (&q, &pending, &removed);
            s.spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(60);
                while Instant::now() < deadline {
                    let next = pending.lock().unwrap().pop();
                    match next {
                        Some((shard, v)) => {
                            if q.lock(shard).remove_tracked(&v.1).is_some() {
                                removed.lock().unwrap().push(v.0);
                            }
                        }
                        None if removed.lock().unwrap().len() > 100 => return,
                        None => std::thread::yield_now(),
                    }
                }
            });
        }
        for _ in 0..4 {
            let (q, taken, removed) = (&q, &taken, &removed);
            s.spawn(move || {
                let give_up = Instant::now() + Duration::from_secs(60);
                loop {
                    let done = taken.lock().unwrap().len() + removed.lock().unwrap().len();
                    if done == (4 * PER) as usize || Instant::now() > give_up {
                        return;
                    }
                    let started = q.clock().now();
                    let until = Instant::now() + Duration::from_millis(200);
                    match q.take(Some(until), |_| false) {
                        Take::Item(e, _) => {
                            q.finished();
                            taken.lock().unwrap().push(e.value.0);
                        }
                        Take::TimedOut => {
                            // A timed-out take looked at the heads once more before it
                            // returned, 200 ms after it started: an entry due before it
                            // started and still queued now was missed (Q3, Q7).
                            let all = q.lock_all();
                            assert!(!all.any_due(started), "a due entry was left queued");
                        }
                        other => panic!("unexpected {other:?}"),
                    }
                }
            });
        }
    });
    let taken = taken.lock().unwrap().clone();
    let removed = removed.lock().unwrap().clone();
    let all: HashSet<u32> = taken.iter().chain(&removed).copied().collect();
    assert_eq!(
        taken.len() + removed.len(),
        all.len(),
        "nothing taken twice"
    );
    assert_eq!(
        all.len(),
        (4 * PER) as usize,
        "every entry taken or removed"
    );
    assert_eq!(q.len(), 0);
}

#[test]
fn a_head_that_is_never_due_does_not_look_empty() {
    let (c, q) = manual(2);
    offer(&q, 1, crate::clock::NEVER, 1);
    assert!(!q.is_empty_hint(), "Q2: published as NEVER_DUE, not EMPTY");
    c.advance(Duration::MAX);
    let until = Instant::now() + Duration::from_millis(5);
    assert!(matches!(q.take(Some(until), |_| false), Take::TimedOut));
    assert_eq!(q.len(), 1);
}

/// The thread-to-shard mapping (module notes): a thread keeps its number, threads are
/// numbered in the order they first ask, and a number picks its shard modulo the count,
/// so the first `S` threads that submit get `S` different shards.
#[test]
fn threads_numbered_one_after_another_get_different_shards() {
    let (_c, q) = manual(4);
    let shards = q.shards.len();
    assert_eq!(shards, 4);
    let before = NEXT_THREAD.load(std::sync::atomic::Ordering::Relaxed);
    let seen: Vec<(usize, usize, usize)> = (0..2 * shards)
        .map(|_| {
            let q = q.clone();
            std::thread::spawn(move || (local_number(), q.local_shard(), local_number()))
                .join()
                .unwrap()
        })
        .collect();
    let after = NEXT_THREAD.load(std::sync::atomic::Ordering::Relaxed);
    for &(n, shard, again) in &seen {
        assert_eq!(n, again, "a thread keeps its number");
        assert_eq!(
            shard,
            n % shards,
            "its shard is its number modulo the count"
        );
    }
    assert!(
        seen.windows(2).all(|w| w[0].0 < w[1].0),
        "numbered in the order they ask: {seen:?}"
    );
    if after - before == seen.len() {
        // No other test's thread was numbered meanwhile: the numbers are consecutive, so
        // every shard was handed out, each twice.
        for shard in 0..shards {
            assert_eq!(seen.iter().filter(|s| s.1 == shard).count(), 2, "{seen:?}");
        }
    }
}

/// Changes made through every shard's guard are published when it drops (Q2): a drain
/// empties the published heads, a push through it publishes its head.
#[test]
fn the_every_shard_guard_publishes_the_heads_it_changed() {
    let (_c, q) = manual(4);
    offer(&q, 2, 7 * MS, 1);
    assert_eq!(q.scan().0, 7 * MS);
    assert_eq!(q.lock_all().drain_sorted(|e| (e.deadline, e.seq)).len(), 1);
    assert!(
        q.is_empty_hint(),
        "the drained shard's head is published as empty"
    );
    {
        let mut all = q.lock_all();
        let g = all.shard(3);
        let seq = g.next_seq(None);
        g.push_tracked(
            TimedEntry {
                deadline: 3 * MS,
                seq,
                value: Arc::new((2, Position::new())),
            },
            false,
        );
    }
    assert_eq!(
        q.scan(),
        (3 * MS, 3, false),
        "published when the guard dropped"
    );
    assert!(format!("{q:?}").contains("shards: 4"), "{q:?}");
}

#[test]
fn drain_sorted_merges_the_shards() {
    let (_c, q) = manual(4);
    for (shard, d, v) in [(3, 5, 0), (0, 1, 1), (2, 5, 2), (1, 0, 3)] {
        offer(&q, shard, d, v);
    }
    let got: Vec<u32> = q
        .lock_all()
        .drain_sorted(|e| (e.deadline, e.seq))
        .into_iter()
        .map(|e| e.value.0)
        .collect();
    assert_eq!(got, vec![3, 1, 0, 2]);
}

#[derive(Clone, Debug)]
enum Op {
    /// Offer `delay` ms ahead into `shard`; `hint`: offer a zero delay as due (the lane).
    Push {
        delay: u64,
        hint: bool,
        shard: usize,
    },
    Advance(u64),
    Poll,
    Remove(usize),
    Update(usize, u64),
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    prop_oneof![
        4 => (0..3u64, any::<bool>(), any::<usize>())
            .prop_map(|(delay, hint, shard)| Op::Push { delay, hint, shard }),
        1 => (0..3u64).prop_map(Op::Advance),
        3 => Just(Op::Poll),
        2 => any::<usize>().prop_map(Op::Remove),
        1 => (any::<usize>(), 0..3u64).prop_map(|(i, d)| Op::Update(i, d)),
    ]
}

/// The body of the model test with `shards` shards (see below).
fn matches_a_sorted_model(
    shards: usize,
    ops: Vec<Op>,
) -> Result<(), proptest::test_runner::TestCaseError> {
    let (clock, q) = manual(shards);
    let mut model: Vec<(Ticks, u64, u32)> = Vec::new(); // (deadline, seq, id)
    let mut issued: Vec<(Arc<(u32, Position)>, usize)> = Vec::new(); // (entry, home)
    let mut now: Ticks = 0;
    for op in ops {
        match op {
            Op::Push { delay, hint, shard } => {
                let shard = shard % shards;
                let id = issued.len() as u32;
                let value = Arc::new((id, Position::new()));
                issued.push((value.clone(), shard));
                let deadline = now + delay * MS;
                let mut g = q.lock(shard);
                let seq = g.next_seq(None);
                let due = hint && delay == 0;
                g.push_tracked(
                    TimedEntry {
                        deadline,
                        seq,
                        value,
                    },
                    due,
                );
                model.push((deadline, seq, id));
            }
            Op::Advance(ms) => {
                clock.advance(Duration::from_millis(ms));
                now += ms * MS;
            }
            Op::Poll => {
                model.sort();
                let want = model.first().filter(|m| m.0 <= now).copied();
                let got = q.pop_due().map(|(e, _)| (e.deadline, e.seq, e.value.0));
                if got.is_some() {
                    q.finished();
                }
                proptest::prop_assert_eq!(got, want);
                if want.is_some() {
                    model.remove(0);
                }
            }
            Op::Remove(i) if !issued.is_empty() => {
                let (target, home) = issued[i % issued.len()].clone();
                let got = q.lock(home).remove_tracked(&target.1).map(|e| e.value.0);
                let at = model.iter().position(|m| m.2 == target.0);
                proptest::prop_assert_eq!(got, at.map(|k| model[k].2));
                if let Some(k) = at {
                    model.remove(k);
                }
            }
            Op::Update(i, delay) if !issued.is_empty() => {
                let (target, home) = issued[i % issued.len()].clone();
                let deadline = now + delay * MS;
                let mut g = q.lock(home);
                let seq = g.next_seq(None);
                let moved = g.update_tracked(&target.1, |e| {
                    e.deadline = deadline;
                    e.seq = seq;
                });
                let at = model.iter().position(|m| m.2 == target.0);
                proptest::prop_assert_eq!(moved, at.is_some());
                if let Some(k) = at {
                    model[k] = (deadline, seq, target.0);
                }
            }
            Op::Remove(_) | Op::Update(..) => {}
        }
        let mut all = q.lock_all();
        for g in all.shards() {
            g.store().check_invariants();
            let published = q.shards[g.index()].head.load(Ordering::Relaxed);
            let head = g
                .store()
                .head_deadline()
                .map_or(EMPTY, |d| d.min(NEVER_DUE));
            proptest::prop_assert_eq!(published, head);
        }
        // Q7: every group's minimum is its least head once no refresh is in flight.
        for (g, grp) in q.groups.iter().enumerate() {
            let least = (g * heads::FANOUT..(g + 1) * heads::FANOUT)
                .map(|i| q.shards[i].head.load(Ordering::Relaxed))
                .min()
                .unwrap_or(EMPTY);
            proptest::prop_assert_eq!(grp.min.load(Ordering::Relaxed), least);
        }
        model.sort();
        proptest::prop_assert_eq!(all.len(), model.len());
        drop(all);
        let head = q.scan().0;
        proptest::prop_assert_eq!(head, model.first().map_or(EMPTY, |m| m.0));
        proptest::prop_assert_eq!(q.active(), 0);
    }
    Ok(())
}

proptest::proptest! {
    /// Q3 and I7: with four shards, each a heap with a ready lane, entries leave in
    /// exactly the (deadline, seq) order of one sorted model; removal and re-keying by
    /// position in the home shard work wherever the entry sits; stale positions name
    /// nothing; every shard's published head is its head (Q2).
    #[test]
    fn shards_heaps_and_lanes_match_a_sorted_model(
        ops in proptest::collection::vec(op(), 0..120)
    ) {
        matches_a_sorted_model(4, ops)?;
    }

    /// The same with 32 shards in four groups: the scans go through the groups' minima,
    /// and every minimum is its group's least head after each operation (Q7).
    #[test]
    fn grouped_shards_match_a_sorted_model(
        ops in proptest::collection::vec(op(), 0..120)
    ) {
        matches_a_sorted_model(32, ops)?;
    }
}

fn wait_for(cond: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < end, "condition not reached in 10 s");
        std::thread::yield_now();
    }
}

/// Q5/F3 through a panic, as in the blocking queue's test: the exit guard of a leader
/// whose stop condition panics hands the head on, from any shard.
#[test]
fn a_leader_whose_stop_condition_panics_hands_the_head_on() {
    let (c, q) = manual(2);
    offer(&q, 1, 10 * MS, 1);
    let leader = {
        let (q, c) = (q.clone(), c.clone());
        std::thread::spawn(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                q.take(None, |_| {
                    assert!(c.ticks() < 10 * MS, "the stop condition panics");
                    false
                })
            }))
            .is_err()
        })
    };
    wait_for(|| q.coord.lock().leader());
    let (tx, rx) = std::sync::mpsc::channel();
    let follower = {
        let q = q.clone();
        std::thread::spawn(move || tx.send(take(&q)).unwrap())
    };
    wait_for(|| q.coord.lock().followers() == 1);
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

/// F5: a due head does not wait for a leader the machine keeps off its CPU. The leader is
/// only its record in the waiters' state (a taker that decided to lead and never ran
/// again); a second taker backs it up with a timer a grace past the leader's take time,
/// and pops the head itself.
#[test]
fn a_backup_takes_the_head_of_a_leader_that_never_runs() {
    let q = Arc::new(Q::new(
        Clock::real(),
        1,
        SpinPolicy::Never,
        Duration::ZERO,
        || (),
    ));
    let due = q.clock().deadline_after(Duration::from_millis(5));
    offer(&q, 0, due, 1);
    let take_at = q.clock().instant_of(due);
    q.coord.lock().pretend_leader(due, take_at);
    let (tx, rx) = std::sync::mpsc::channel();
    let backup = {
        let q = q.clone();
        std::thread::spawn(move || tx.send(take(&q)).unwrap())
    };
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10)),
        Ok(1),
        "the backup took the head its leader never took"
    );
    backup.join().unwrap();
    assert!(Instant::now() >= take_at, "not before its deadline");
}

/// F5: a leader's hand-on goes to its backup, not to a follower that waits without a
/// timer: the backup is the one that is awake soonest.
#[test]
fn the_hand_on_wakes_the_backup_first() {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let (c, q) = manual(1);
    offer(&q, 0, 10 * MS, 1);
    offer(&q, 0, 20 * MS, 2);
    let quit = Arc::new(AtomicBool::new(false));
    let leader = {
        let (q, quit) = (q.clone(), quit.clone());
        std::thread::spawn(move || matches!(q.take(None, |_| quit.load(SeqCst)), Take::Stopped))
    };
    wait_for(|| q.coord.lock().leader());
    let (tx, rx) = std::sync::mpsc::channel();
    let spawn = |name: &'static str| {
        let (q, tx) = (q.clone(), tx.clone());
        std::thread::spawn(move || tx.send((name, take(&q))).unwrap())
    };
    let backup = spawn("backup");
    wait_for(|| q.coord.lock().backup());
    let follower = spawn("follower");
    wait_for(|| q.coord.lock().followers() == 2);
    // An advance short of the head wakes the leader alone; it sees its stop condition and
    // leaves, and its hand-on picks who leads next.
    quit.store(true, SeqCst);
    c.advance(Duration::from_millis(5));
    assert!(leader.join().unwrap(), "the leader gave up");
    wait_for(|| {
        let w = q.coord.lock();
        w.leader() && w.followers() == 1
    });
    c.advance(Duration::from_millis(5));
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(("backup", 1)));
    c.advance(Duration::from_millis(10));
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10)),
        Ok(("follower", 2))
    );
    backup.join().unwrap();
    follower.join().unwrap();
}
