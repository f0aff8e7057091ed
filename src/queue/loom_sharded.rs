//! loom models of the sharded queue's protocols (`queue/sharded.rs`): Q1 (a push into one
//! shard against a taker about to wait on another shard's head, or on an empty queue),
//! Q3 (FIFO across shards while a taker scans),
//! the hand-on of Q5 (after a take, and after a leader gives up), E3's wake-up when two
//! threads empty the last two shards, Q4's count of takes against `wait_idle`, and Q7
//! (the groups' minima: a push into another group against a leader going to sleep, two
//! shards of one group changing at once, FIFO across groups).
//!
//! Every queue runs on a `ManualClock`: a leader waits without a timeout, so a lost
//! wake-up is a deadlock, which loom reports. The deliberate breaks that make each model
//! fail are listed in `docs/RELIABILITY.md`.

use std::time::Duration;

use crate::clock::{AdvanceListener, Clock, ManualClock, Ticks};
use crate::queue::sharded::ShardedQueue;
use crate::queue::{Position, SpinPolicy, Take, TimedEntry};
use crate::sync::{thread, Arc, Weak};

type Entry = TimedEntry<Arc<(u32, Position)>>;
type Q = ShardedQueue<Entry, ()>;

const MS: Ticks = 1_000_000;

fn queue() -> (ManualClock, Arc<Q>) {
    queue_of(2)
}

/// A queue of four shards: two groups of two under loom (Q7, `sharded/heads.rs`).
fn grouped() -> (ManualClock, Arc<Q>) {
    queue_of(4)
}

fn queue_of(shards: usize) -> (ManualClock, Arc<Q>) {
    let clock = ManualClock::new();
    let q = Arc::new(Q::new(
        Clock::Manual(clock.clone()),
        shards,
        SpinPolicy::Adaptive,
        Duration::ZERO,
        || (),
    ));
    let listener: Weak<dyn AdvanceListener> = Arc::downgrade(&q) as Weak<dyn AdvanceListener>;
    Clock::Manual(clock.clone()).register(listener);
    (clock, q)
}

fn offer(q: &Q, shard: usize, ms: Ticks, v: u32) -> Arc<(u32, Position)> {
    let value = Arc::new((v, Position::new()));
    let mut g = q.lock(shard);
    let seq = g.next_seq(None);
    g.push_tracked(
        TimedEntry {
            deadline: ms * MS,
            seq,
            value: value.clone(),
        },
        false,
    );
    value
}

fn spawn_taker(q: &Arc<Q>) -> thread::JoinHandle<u32> {
    let q = q.clone();
    thread::spawn(move || loop {
        if let Take::Item(e, _) = q.take(None, |_| false) {
            q.finished();
            return e.value.0;
        }
    })
}

/// Q1: a due entry pushed into shard 1 while a taker leads (or is about to lead) for a
/// later head in shard 0 wakes it, with no clock advance. A lost wake-up deadlocks.
#[test]
fn loom_push_into_another_shard_vs_the_leader_going_to_sleep() {
    loom::model(|| {
        let (_clock, q) = queue();
        offer(&q, 0, 100, 1);
        let taker = spawn_taker(&q);
        offer(&q, 1, 0, 2);
        assert_eq!(
            taker.join().unwrap(),
            2,
            "the due entry, not the later head"
        );
        assert_eq!(q.len(), 1);
    });
}

/// Q1 for followers: a push into an empty queue reaches a taker that is about to wait
/// with no head at all (`wake_at` = "followers, no leader").
#[test]
fn loom_push_into_an_empty_queue_vs_a_follower_going_to_sleep() {
    loom::model(|| {
        let (_clock, q) = queue();
        let taker = spawn_taker(&q);
        offer(&q, 1, 0, 7);
        assert_eq!(taker.join().unwrap(), 7);
        assert_eq!(q.len(), 0);
    });
}

/// Q5: two takers and two entries in different shards that fall due by one advance: both
/// are taken, whichever taker led (the one that leaves with a head left hands the lead on).
#[test]
fn loom_two_takers_two_shards_one_advance() {
    loom::model(|| {
        let (clock, q) = queue();
        offer(&q, 0, 10, 1);
        offer(&q, 1, 10, 2);
        let (a, b) = (spawn_taker(&q), spawn_taker(&q));
        clock.advance(Duration::from_millis(10));
        let mut got = [a.join().unwrap(), b.join().unwrap()];
        got.sort_unstable();
        assert_eq!(got, [1, 2]);
    });
}

/// E3's building block: two threads each empty one of the last two shards and then ask
/// `is_empty_synced`; at least one of them sees the whole queue empty, so the waiting
/// taker (stopping on an empty queue) is woken. Without the RMW both may see the other's
/// shard still full, and the taker sleeps forever.
#[test]
fn loom_two_removals_emptying_the_last_shards_wake_the_taker() {
    loom::model(|| {
        let (_clock, q) = queue();
        let a = offer(&q, 0, 100, 1);
        let b = offer(&q, 1, 100, 2);
        let taker = {
            let q = q.clone();
            thread::spawn(move || matches!(q.take(None, |empty| empty), Take::Stopped))
        };
        let remover = {
            let q = q.clone();
            thread::spawn(move || {
                assert!(q.lock(1).remove_tracked(&b.1).is_some());
                if q.is_empty_synced() {
                    q.wake_all();
                }
            })
        };
        assert!(q.lock(0).remove_tracked(&a.1).is_some());
        if q.is_empty_synced() {
            q.wake_all();
        }
        remover.join().unwrap();
        assert!(taker.join().unwrap(), "stopped on the empty queue");
    });
}

/// Q3: two due entries with equal deadlines pushed one after the other into two shards,
/// while a taker is looking: the taker gets the first one (FIFO across shards). The
/// second goes into a shard that already holds a later entry, so its bit in the
/// non-empty mask (Q6) was set before the taker looked: without the re-scan under the
/// popped shard's lock the taker can read the mask before the first push and the second
/// shard's head after the second.
#[test]
fn loom_fifo_across_shards_while_a_taker_scans() {
    loom::model(|| {
        let (_clock, q) = queue();
        offer(&q, 1, 100, 3);
        let taker = spawn_taker(&q);
        offer(&q, 0, 0, 1);
        offer(&q, 1, 0, 2);
        assert_eq!(taker.join().unwrap(), 1, "FIFO among equal deadlines");
        assert_eq!(q.len(), 2);
    });
}

/// Q5/F3 (`waiters.rs`): a leader that gives up, with the head still queued, hands the
/// lead on. loom has no clock, so the give-up is explicit: the quitter's stop condition
/// turns true once the clock reaches the head's deadline, as a keep-alive that ends when
/// the head falls due. If the quitter leads, the advance wakes only it, it gives up, and
/// only its hand-on can wake the stayer, asleep as a follower: without it the join of the
/// stayer deadlocks. Whoever takes the head wakes every taker afterwards (standing for
/// the other's timeout or stop), so the model ends in every other order.
#[test]
fn loom_a_leader_that_gives_up_hands_the_head_on() {
    use crate::sync::{AtomicBool, Ordering};
    loom::model(|| {
        let (clock, q) = queue();
        offer(&q, 0, 10, 1);
        let quitter_got = Arc::new(AtomicBool::new(false));
        let quitter = {
            let (q, clock, got) = (q.clone(), clock.clone(), quitter_got.clone());
            thread::spawn(move || match q.take(None, |_| clock.ticks() >= 10 * MS) {
                Take::Item(e, _) => {
                    q.finished();
                    got.store(true, Ordering::SeqCst);
                    q.wake_all();
                    Some(e.value.0)
                }
                _ => None,
            })
        };
        let stayer = {
            let (q, got) = (q.clone(), quitter_got.clone());
            thread::spawn(move || match q.take(None, |_| got.load(Ordering::SeqCst)) {
                Take::Item(e, _) => {
                    q.finished();
                    q.wake_all();
                    Some(e.value.0)
                }
                _ => None,
            })
        };
        clock.advance(Duration::from_millis(10));
        let got = [stayer.join().unwrap(), quitter.join().unwrap()];
        assert_eq!(got.iter().flatten().collect::<Vec<_>>(), [&1], "taken once");
        assert_eq!(q.len(), 0);
    });
}

/// Q4 and `wait_idle`: a take finishing while another thread starts `wait_idle`. The
/// waiter returns (idle) whichever comes first: `finished` sees the waiter and wakes it,
/// or the waiter's read of `active` sees the take finished. A lost wake-up deadlocks.
#[test]
fn loom_finished_vs_wait_idle() {
    loom::model(|| {
        let (_clock, q) = queue();
        offer(&q, 1, 0, 1);
        let (entry, _) = q.pop_due_for_models().expect("due at 0");
        let finisher = {
            let q = q.clone();
            thread::spawn(move || {
                drop(entry);
                q.finished();
            })
        };
        assert!(q.wait_idle(None), "idle once the take finished");
        finisher.join().unwrap();
        assert_eq!(q.active(), 0);
    });
}

/// Q7 with Q1: a due entry pushed into shard 2 (the second group) while a taker leads for
/// a later head in shard 0 (the first) wakes it. The producer refreshes its group's
/// minimum before it reads `wake_at`; refreshed after, the taker can find the old
/// minimum in its re-scan while the producer finds no one to wake, and sleeps forever.
#[test]
fn loom_push_into_another_group_vs_the_leader_going_to_sleep() {
    loom::model(|| {
        let (_clock, q) = grouped();
        offer(&q, 0, 100, 1);
        let taker = spawn_taker(&q);
        offer(&q, 2, 0, 2);
        assert_eq!(
            taker.join().unwrap(),
            2,
            "the due entry, not the later head"
        );
        assert_eq!(q.len(), 1);
    });
}

/// Q7's lock: shards 0 and 1 (one group) change at once, one emptied and one given a due
/// head, while a taker leads for a later head in shard 2 (the other group). Each refresh
/// reads both heads under the group's lock, so the last one sees both changes; computed
/// without the lock, the emptying refresh can read shard 1 before its push and store its
/// stale minimum last, and the taker, woken, finds the group empty and sleeps again.
#[test]
fn loom_two_shards_of_one_group_change_at_once() {
    loom::model(|| {
        let (_clock, q) = grouped();
        let a = offer(&q, 0, 50, 1);
        offer(&q, 2, 100, 2);
        let taker = spawn_taker(&q);
        let remover = {
            let q = q.clone();
            thread::spawn(move || assert!(q.lock(0).remove_tracked(&a.1).is_some()))
        };
        offer(&q, 1, 0, 3);
        remover.join().unwrap();
        assert_eq!(
            taker.join().unwrap(),
            3,
            "the due entry of the changed group"
        );
    });
}

/// Q3 across groups: equal deadlines pushed one after the other into shard 0 and shard 2
/// (two groups, shard 2 already holding a later entry) while a taker looks: the taker
/// gets the first, found by the re-scan of the other groups' minima under the popped
/// shard's lock.
#[test]
fn loom_fifo_across_groups_while_a_taker_scans() {
    loom::model(|| {
        let (_clock, q) = grouped();
        offer(&q, 2, 100, 3);
        let taker = spawn_taker(&q);
        offer(&q, 0, 0, 1);
        offer(&q, 2, 0, 2);
        assert_eq!(taker.join().unwrap(), 1, "FIFO among equal deadlines");
        assert_eq!(q.len(), 2);
    });
}
