//! loom models of the blocking queue's wake-up protocol (`queue/mod.rs`: I2, which is
//! F1–F4 of `queue/waiters.rs`, I5 and I8), of `close` against waiting takers, and of
//! `DelayQueue::remove` against `take`.
//!
//! loom has no clock: every queue here runs on a `ManualClock`, so a leader waits without
//! a timeout and a lost wake-up shows up as a deadlock, which loom reports.

use std::time::Duration;

use crate::clock::{AdvanceListener, Clock, ManualClock, Ticks};
use crate::queue::Handle;
use crate::queue::{BlockingQueue, Take, TimedEntry};
use crate::sync::{thread, Arc, Weak};

type Q = BlockingQueue<TimedEntry<u32>>;

const MS: Ticks = 1_000_000;

fn queue() -> (ManualClock, Arc<Q>) {
    let clock = ManualClock::new();
    let q = Arc::new(Q::new(Clock::Manual(clock.clone()), 4));
    let listener: Weak<dyn AdvanceListener> = Arc::downgrade(&q) as Weak<dyn AdvanceListener>;
    Clock::Manual(clock.clone()).register(listener);
    (clock, q)
}

fn offer(q: &Q, ms: Ticks, value: u32) -> Handle {
    let mut g = q.lock();
    let seq = g.next_seq();
    g.push(TimedEntry {
        deadline: ms * MS,
        seq,
        value,
    })
}

fn take(q: &Q) -> u32 {
    loop {
        if let Take::Item(e, _) = q.lock().take(None, |_| false) {
            return e.value;
        }
    }
}

fn spawn_taker(q: &Arc<Q>) -> thread::JoinHandle<u32> {
    let q = q.clone();
    thread::spawn(move || take(&q))
}

/// I5: an offer of an earlier head while a taker leads (or is about to) reaches the taker,
/// which then takes the earlier element once it is due. A lost wake-up deadlocks.
#[test]
fn loom_take_vs_offer_of_an_earlier_head() {
    loom::model(|| {
        let (clock, q) = queue();
        offer(&q, 20, 1);
        let taker = spawn_taker(&q);
        offer(&q, 10, 2);
        clock.advance(Duration::from_millis(10));
        assert_eq!(taker.join().unwrap(), 2, "the earlier head comes out first");
        assert_eq!(q.lock().len(), 1);
    });
}

/// F3 and I5: two takers and a removal of the head; every remaining element reaches a
/// taker (no taker sleeps while a due element exists) and the removed one never does.
#[test]
fn loom_two_takers_and_a_remove_of_the_head() {
    loom::model(|| {
        let (clock, q) = queue();
        let head = offer(&q, 10, 1);
        offer(&q, 20, 2);
        let a = spawn_taker(&q);
        let b = spawn_taker(&q);
        assert_eq!(q.lock().remove(head).map(|e| e.value), Some(1));
        offer(&q, 20, 3);
        clock.advance(Duration::from_millis(20));
        let mut got = [a.join().unwrap(), b.join().unwrap()];
        got.sort_unstable();
        assert_eq!(got, [2, 3]);
    });
}

/// C3 (`clock.rs`): an advance racing with a leader going to sleep is never missed.
#[test]
fn loom_advance_vs_a_waiting_leader() {
    loom::model(|| {
        let (clock, q) = queue();
        offer(&q, 5, 7);
        let taker = spawn_taker(&q);
        let advancer = {
            let clock = clock.clone();
            thread::spawn(move || clock.advance(Duration::from_millis(5)))
        };
        advancer.join().unwrap();
        assert_eq!(taker.join().unwrap(), 7);
    });
}

/// `DelayQueue::remove` vs `take`: an element is either removed or taken, never both,
/// never neither.
#[test]
fn loom_delay_queue_remove_vs_take() {
    loom::model(|| {
        let clock = ManualClock::new();
        let q = Arc::new(crate::DelayQueue::with_clock(clock.clone()));
        let key = q.offer(1u32, Duration::from_millis(1));
        q.offer(2u32, Duration::from_millis(2));
        clock.advance(Duration::from_millis(2));
        let taker = {
            let q = q.clone();
            thread::spawn(move || q.take())
        };
        let removed = q.remove(key);
        let taken = taker.join().unwrap();
        let left = q.poll();
        let mut seen: Vec<u32> = removed.into_iter().chain([taken]).chain(left).collect();
        seen.sort_unstable();
        assert_eq!(seen, vec![1, 2], "each element exactly once");
    });
}

/// I2/F3 (`waiters.rs`): a leader that gives up with the head still queued hands the lead
/// on (the same model as `loom_sharded.rs`'s (beside this file), on the one-lock queue):
/// the quitter's stop condition turns true once the clock reaches the head's deadline.
/// Without the hand-on at that exit, the stayer sleeps as a follower forever. Whoever takes
/// the head closes the queue afterwards (standing for the other's timeout), so the model
/// ends in every other order.
#[test]
fn loom_a_leader_that_gives_up_hands_the_head_on() {
    loom::model(|| {
        let (clock, q) = queue();
        offer(&q, 10, 1);
        let quitter = {
            let (q, clock) = (q.clone(), clock.clone());
            thread::spawn(move || {
                let taken = q.lock().take(None, |_| clock.ticks() >= 10 * MS);
                match taken {
                    Take::Item(e, _) => {
                        q.close();
                        Some(e.value)
                    }
                    _ => None,
                }
            })
        };
        let stayer = {
            let q = q.clone();
            thread::spawn(move || {
                let taken = q.lock().take(None, |st| st.closed);
                match taken {
                    Take::Item(e, _) => {
                        q.close();
                        Some(e.value)
                    }
                    _ => None,
                }
            })
        };
        clock.advance(Duration::from_millis(10));
        let got = [stayer.join().unwrap(), quitter.join().unwrap()];
        assert_eq!(got.iter().flatten().collect::<Vec<_>>(), [&1], "taken once");
    });
}

/// `close` against two takers of `take_until_closed` about to wait, one as the leader (a
/// head not yet due) and one as a follower: both wake and return `None`, whatever the
/// order. A close that forgets either sleeper deadlocks.
#[test]
fn loom_close_vs_waiting_takers() {
    loom::model(|| {
        let (_clock, q) = queue();
        offer(&q, 10, 1); // never due: virtual time does not move
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let q = q.clone();
                thread::spawn(move || q.take_until_closed().map(|e| e.value))
            })
            .collect();
        assert!(q.close());
        for t in takers {
            assert_eq!(t.join().unwrap(), None);
        }
        assert_eq!(q.lock().len(), 1, "closing keeps the elements");
    });
}

/// `close` against a taker of `take_until_closed` waiting on an empty queue, where no
/// hand-on between takers (F3) could reach it: only the close's own wake-up of the
/// followers does.
#[test]
fn loom_close_vs_a_taker_of_an_empty_queue() {
    loom::model(|| {
        let (_clock, q) = queue();
        let taker = {
            let q = q.clone();
            thread::spawn(move || q.take_until_closed().map(|e| e.value))
        };
        assert!(q.close());
        assert!(!q.close(), "once");
        assert_eq!(taker.join().unwrap(), None);
    });
}

/// An async take's waker on a thread of the model: it unparks the thread.
struct Unpark(thread::Thread);

impl std::task::Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// A poller waiting on virtual time, with the timer thread its poll starts. Its waker
/// unparks it; it parks between polls.
fn async_poller(q: &Arc<Q>) -> thread::JoinHandle<Option<u32>> {
    let q = q.clone();
    thread::spawn(move || async_takes(&q, 1).pop().flatten())
}

/// `n` async takes one after another on the calling thread, as a stream's consumer
/// makes them.
fn async_takes(q: &Arc<Q>, n: usize) -> Vec<Option<u32>> {
    use std::task::{Context, Poll, Waker};

    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let take = crate::sync::unique_id();
    (0..n)
        .map(|_| loop {
            if let Poll::Ready(e) = q.poll_take_keyed(&mut cx, take, false, &mut None) {
                break e.map(|(e, _)| e.value);
            }
            thread::park(); // until the timer thread wakes it (I8); a lost wake-up deadlocks
        })
        .collect()
}

/// I8: an async take waiting for a head that falls due by a clock advance is woken (by
/// the timer thread its poll started) and takes it.
#[test]
fn loom_async_take_vs_advance() {
    loom::model(|| {
        let (clock, q) = queue();
        offer(&q, 10, 7);
        let poller = async_poller(&q);
        clock.advance(Duration::from_millis(10));
        assert_eq!(poller.join().unwrap(), Some(7));
        q.close(); // the queue's timer exits (on virtual time it has no linger to end)
    });
}

/// I8: an async take waiting on a queue that is closed returns `None`.
#[test]
fn loom_async_take_vs_close() {
    loom::model(|| {
        let (_clock, q) = queue();
        offer(&q, 10, 7); // never due
        let poller = async_poller(&q);
        assert!(q.close());
        assert_eq!(poller.join().unwrap(), None);
    });
}

/// I8: an earlier head offered while an async take waits for a later one reaches the
/// timer (asleep until the later head), which wakes the take when the clock reaches the
/// earlier one; on virtual time an advance notifies the timer only once the time reaches
/// its wake-up, so a head that did not notify is never seen.
#[test]
fn loom_async_take_vs_an_earlier_head() {
    loom::model(|| {
        let (clock, q) = queue();
        offer(&q, 20, 9);
        let poller = async_poller(&q);
        offer(&q, 10, 7);
        clock.advance(Duration::from_millis(10));
        assert_eq!(poller.join().unwrap(), Some(7));
        q.close(); // the queue's timer exits (on virtual time it has no linger to end)
    });
}

/// I8: a consumer that takes a due head and waits for the next registers without
/// notifying the timer (asleep until the first deadline after the due one), and is woken
/// when the clock reaches it; a head moved later in between notifies no one and is
/// taken at its new deadline.
#[test]
fn loom_async_stream_vs_advances_and_a_later_head() {
    loom::model(|| {
        let (clock, q) = queue();
        offer(&q, 10, 7);
        let second = offer(&q, 20, 8);
        let consumer = {
            let q = q.clone();
            thread::spawn(move || async_takes(&q, 2))
        };
        clock.advance(Duration::from_millis(10));
        assert!(q.lock().update(second, |e| e.deadline = 30 * MS));
        clock.advance(Duration::from_millis(20));
        assert_eq!(consumer.join().unwrap(), [Some(7), Some(8)]);
    });
}

/// I8 for a take on its own timer (a runtime's, as `on_tokio_timer`'s): it registers with
/// the head's deadline and sleeps until its own timer fires there; the queue's timer wakes
/// it only for an earlier head. Here the own timer is `armed`, which the advancing thread
/// fires (an unpark) once the clock reaches it, and which fires at once when armed at a
/// deadline already passed, as a runtime's timer does.
#[test]
fn loom_own_timer_take_vs_an_earlier_head() {
    use crate::sync::Mutex;
    use std::task::{Context, Poll, Waker};

    loom::model(|| {
        let (clock, q) = queue();
        offer(&q, 20, 9);
        let armed = Arc::new(Mutex::new(crate::clock::NEVER));
        let poller = {
            let (q, armed, clock) = (q.clone(), armed.clone(), clock.clone());
            thread::spawn(move || {
                let waker = Waker::from(Arc::new(Unpark(thread::current())));
                let mut cx = Context::from_waker(&waker);
                let take = crate::sync::unique_id();
                loop {
                    let mut at = None;
                    if let Poll::Ready(e) = q.poll_take_keyed(&mut cx, take, true, &mut at) {
                        return e.map(|(e, _)| e.value);
                    }
                    let mut armed = armed.lock();
                    *armed = at.unwrap_or(crate::clock::NEVER);
                    let fired = Clock::Manual(clock.clone()).now() >= *armed;
                    drop(armed);
                    if !fired {
                        thread::park(); // its timer or the queue's timer; a lost one deadlocks
                    }
                }
            })
        };
        offer(&q, 10, 7); // before the head the poller armed for
        clock.advance(Duration::from_millis(10));
        if *armed.lock() <= 10 * MS {
            poller.thread().unpark(); // its own timer fires
        }
        assert_eq!(poller.join().unwrap(), Some(7));
        q.close(); // the queue's timer exits (on virtual time it has no linger to end)
    });
}
