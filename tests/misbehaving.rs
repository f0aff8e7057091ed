//! User code that misbehaves at the doors other than the task's closure: wakers that
//! panic or call back into the pool from `wake` or `drop`, a `PriorityBlockingQueue`
//! element whose `Ord` panics. Each test accounts exactly: every future resolved, every
//! waiter woken, the pool terminates, no worker lost, no element lost.
//!
//! A call into the pool that would deadlock is run on a helper thread, so that a failure
//! is a bounded wait that fails, not a test binary that hangs.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use common::{close, counter, load, manual_pool, outcome, sec, BOUND};
use schedpool::{
    CancelHandle, PriorityBlockingQueue, ScheduledFuture, ScheduledThreadPoolExecutor, TaskError,
};

/// A waker that counts its wakes and then panics.
struct PanickyWake(AtomicUsize);

impl Wake for PanickyWake {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("a waker that panics in wake");
    }
}

/// A waker that counts its wakes.
struct CountingWake(AtomicUsize);

impl Wake for CountingWake {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A waker whose drop cancels a task (calls back into the pool from a destructor).
struct CancelOnDrop(Mutex<Option<CancelHandle>>, Arc<AtomicUsize>);

impl Wake for CancelOnDrop {
    fn wake(self: Arc<Self>) {}
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(h) = self.0.lock().unwrap().take() {
            h.cancel();
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Polls `fut` once with `waker`.
fn poll_with<T: Send>(fut: &mut ScheduledFuture<T>, waker: &Waker) -> Poll<Result<T, TaskError>> {
    Pin::new(fut).poll(&mut Context::from_waker(waker))
}

/// Runs `f` on a helper thread and waits at most [`BOUND`] for it: `None` if it did not
/// return in time (a deadlock; the thread is left behind).
fn bounded<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(BOUND).ok()
}

/// This process's threads (Linux: `/proc/self/task`; elsewhere none).
fn threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until a thread started after `before` is asleep (state `S`: parked, the only
/// place the thread the test started can sleep), at most [`BOUND`]. Where `/proc` is
/// missing it returns at once, and the test still holds, testing less.
fn wait_asleep(before: &[String]) {
    if before.is_empty() {
        return;
    }
    common::wait_for("the new thread to block", || {
        threads().iter().filter(|t| !before.contains(t)).any(|t| {
            std::fs::read_to_string(format!("/proc/self/task/{t}/stat"))
                .ok()
                .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('S')))
                .unwrap_or(false)
        })
    });
}

/// Row 1 (one-shot): a waker whose `wake` panics does not keep the task's other waiters
/// asleep, and the worker that completed the task lives on.
#[test]
fn a_panicking_wake_leaves_the_other_waiters_woken_and_the_worker_alive() {
    let (clock, pool, stopped) = common::counted_pool(1);
    let mut fut = pool.schedule(sec(1), || 7).unwrap();
    let panicky = Arc::new(PanickyWake(AtomicUsize::new(0)));
    assert!(poll_with(&mut fut, &Waker::from(panicky.clone())).is_pending());
    let fut = Arc::new(fut);
    let f = fut.clone();
    let before = threads();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        f.wait(); // untimed: only the task's completion wakes it
        let _ = tx.send(());
    });
    // The thread waits (registered, parked) before the task runs.
    wait_asleep(&before);
    clock.advance(sec(1));
    assert!(
        rx.recv_timeout(BOUND).is_ok(),
        "the blocked thread was woken"
    );
    // Threads are unparked before wakers are woken: the wake may come just after.
    assert!(
        common::wait_until(|| panicky.0.load(Ordering::SeqCst) == 1),
        "the waker was woken"
    );
    // The same worker runs the next task: it did not die with the waker's panic.
    let next = pool.submit(|| 8).unwrap();
    assert_eq!(outcome(next).unwrap(), 8);
    assert_eq!(load(&stopped), 0, "no worker stopped");
    close(&pool);
    assert_eq!(load(&stopped), 1);
}

/// Row 1 (periodic): the same for a periodic task's stage, woken by its cancel.
#[test]
fn a_panicking_wake_on_a_periodic_task_does_not_stop_its_cancel() {
    let (_clock, pool) = manual_pool(1);
    let mut fut = pool.schedule_at_fixed_rate(sec(1), sec(1), || ()).unwrap();
    let panicky = Arc::new(PanickyWake(AtomicUsize::new(0)));
    assert!(poll_with(&mut fut, &Waker::from(panicky.clone())).is_pending());
    assert!(
        fut.cancel(),
        "the cancel returns, the waker's panic contained"
    );
    assert_eq!(panicky.0.load(Ordering::SeqCst), 1);
    assert!(fut.is_cancelled() && fut.is_done());
    assert_eq!(pool.queue_len(), 0);
    close(&pool);
}

/// Row 2: a panicking waker inside `shutdown()` with delayed tasks dropped: every removed
/// task is completed and woken, and the pool terminates.
#[test]
fn a_panicking_wake_inside_shutdown_finishes_every_removed_task() {
    let clock = schedpool::ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .execute_existing_delayed_tasks_after_shutdown(false)
        .build();
    let panicky = Arc::new(PanickyWake(AtomicUsize::new(0)));
    let counting = Arc::new(CountingWake(AtomicUsize::new(0)));
    let mut futs: Vec<ScheduledFuture<u32>> = (0..6)
        .map(|i| pool.schedule(sec(5 + i), move || i as u32).unwrap())
        .collect();
    for (i, f) in futs.iter_mut().enumerate() {
        let w = if i % 2 == 0 {
            Waker::from(panicky.clone())
        } else {
            Waker::from(counting.clone())
        };
        assert!(poll_with(f, &w).is_pending());
    }
    let p = pool.clone();
    assert!(bounded(move || p.shutdown()).is_some(), "shutdown returned");
    assert_eq!(panicky.0.load(Ordering::SeqCst), 3);
    assert_eq!(counting.0.load(Ordering::SeqCst), 3, "every waiter woken");
    for f in futs {
        assert!(f.is_cancelled());
        assert!(matches!(f.get(), Err(TaskError::Cancelled)));
    }
    assert!(pool.await_termination(BOUND), "the pool terminates");
}

/// Polls `fut` with a waker whose drop cancels `fut`'s task, then with a new waker, which
/// replaces (drops) the first: the drop must run with no lock held, so the cancel goes
/// through, and the new waker is woken by it or the poll sees it.
fn replace_a_waker_that_cancels_on_drop<T: Send + 'static>(fut: ScheduledFuture<T>) {
    let cancelled = counter();
    let done = bounded({
        let cancelled = cancelled.clone();
        move || {
            let mut fut = fut;
            let old = Waker::from(Arc::new(CancelOnDrop(
                Mutex::new(Some(fut.cancel_handle())),
                cancelled,
            )));
            assert!(poll_with(&mut fut, &old).is_pending());
            drop(old); // the registration holds the last reference
            let new = Arc::new(CountingWake(AtomicUsize::new(0)));
            let first = poll_with(&mut fut, &Waker::from(new.clone()));
            (first.is_pending(), new.0.load(Ordering::SeqCst), fut)
        }
    });
    let (pending, woken, fut) = done.expect("the poll returned: no deadlock");
    assert_eq!(
        load(&cancelled),
        1,
        "the old waker's drop cancelled the task"
    );
    assert!(fut.is_cancelled());
    // Either the cancel came before the new registration (the poll saw it) or after it
    // (the new waker was woken).
    assert!(!pending || woken == 1);
}

/// Row 3 (one-shot): through the waiter table.
#[test]
fn a_replaced_waker_whose_drop_cancels_its_task_does_not_deadlock() {
    let (_clock, pool) = manual_pool(1);
    replace_a_waker_that_cancels_on_drop(pool.schedule(sec(5), || 1).unwrap());
    assert_eq!(pool.queue_len(), 0);
    close(&pool);
}

/// Row 3 (periodic): through a periodic task's stage mutex.
#[test]
fn a_replaced_waker_whose_drop_cancels_its_periodic_task_does_not_deadlock() {
    let (_clock, pool) = manual_pool(1);
    let fut = pool
        .schedule_with_fixed_delay(sec(5), sec(5), || ())
        .unwrap();
    replace_a_waker_that_cancels_on_drop(fut);
    assert_eq!(pool.queue_len(), 0);
    close(&pool);
}

/// An element whose `Ord` panics once, when the countdown it shares reaches zero.
#[derive(Debug)]
struct Touchy {
    key: u32,
    countdown: Arc<AtomicUsize>,
}

impl PartialEq for Touchy {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Touchy {}

impl PartialOrd for Touchy {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Touchy {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if self
            .countdown
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            == Ok(1)
        {
            panic!("an Ord that panics once");
        }
        self.key.cmp(&other.key)
    }
}

/// Row 6: a comparison that panics during `poll` leaves every key reaching its own
/// element, and nothing lost.
#[test]
fn a_panicking_ord_during_poll_leaves_every_key_true() {
    let countdown = Arc::new(AtomicUsize::new(0));
    let q = PriorityBlockingQueue::new();
    let keys: Vec<_> = (0..40u32)
        .map(|k| {
            let key = (k * 17) % 40;
            (
                key,
                q.offer(Touchy {
                    key,
                    countdown: countdown.clone(),
                }),
            )
        })
        .collect();
    // The third comparison of the next poll panics (in its sift-down).
    countdown.store(3, Ordering::SeqCst);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| q.poll()));
    assert!(r.is_err(), "the comparison panicked");
    assert_eq!(q.len(), 40, "the polled element went back");
    // Every key reaches its own element; every element comes out once.
    let mut seen = Vec::new();
    for (key, k) in keys.iter().filter(|(key, _)| key % 2 == 0) {
        let e = q.remove(*k).expect("a live key reaches its element");
        assert_eq!(e.key, *key, "and not another's");
        seen.push(e.key);
    }
    while let Some(e) = q.poll() {
        seen.push(e.key);
    }
    seen.sort();
    assert_eq!(
        seen,
        (0..40).collect::<Vec<_>>(),
        "nothing lost, nothing twice"
    );
}

/// Row 6, through `drain_to`.
#[test]
fn a_panicking_ord_during_drain_to_loses_nothing() {
    let countdown = Arc::new(AtomicUsize::new(0));
    let q = PriorityBlockingQueue::new();
    let keys: Vec<_> = (0..30u32)
        .map(|key| {
            q.offer(Touchy {
                key: 29 - key,
                countdown: countdown.clone(),
            })
        })
        .collect();
    countdown.store(25, Ordering::SeqCst);
    let mut out = Vec::new();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| q.drain_to(&mut out, 30)));
    assert!(r.is_err());
    assert_eq!(out.len() + q.len(), 30, "the drained and the queued add up");
    for (i, k) in keys.into_iter().enumerate() {
        let key = 29 - i as u32;
        if let Some(e) = q.remove(k) {
            assert_eq!(e.key, key);
        } else {
            assert!(
                out.iter().any(|e| e.key == key),
                "a key that reaches nothing was drained"
            );
        }
    }
    assert!(q.is_empty());
}

/// A panic at any comparison of `offer`, `poll`, `drain_to`, `remove` or `update` leaves
/// the queue in priority order for the rest of its life: the interrupted sift is undone
/// (the element being taken goes back), and an offered or re-keyed element the queue
/// could not place is taken out (dropped after the lock, with its key then reaching
/// nothing). Every panic point of each operation is tried.
#[test]
fn a_panicking_ord_at_any_point_leaves_the_queue_in_order() {
    type Op = fn(&PriorityBlockingQueue<Touchy>, &[schedpool::PriorityKey], &Arc<AtomicUsize>);
    let ops: [(&str, Op); 5] = [
        ("offer", |q, _, c| {
            q.offer(Touchy {
                key: 0,
                countdown: c.clone(),
            });
        }),
        ("poll", |q, _, _| drop(q.poll())),
        ("drain_to", |q, _, _| {
            let _ = q.drain_to(&mut Vec::new(), 10);
        }),
        ("remove", |q, k, _| drop(q.remove(k[7]))),
        ("update", |q, k, _| {
            let _ = q.update(k[20], |e| e.key = 1);
        }),
    ];
    for (name, op) in ops {
        for point in 1..=60 {
            let countdown = Arc::new(AtomicUsize::new(0));
            let q = PriorityBlockingQueue::new();
            let keys: Vec<_> = (0..40u32)
                .map(|i| {
                    q.offer(Touchy {
                        key: (i * 17) % 40 + 2,
                        countdown: countdown.clone(),
                    })
                })
                .collect();
            countdown.store(point, Ordering::SeqCst);
            let before = q.len();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                op(&q, &keys, &countdown)
            }));
            countdown.store(0, Ordering::SeqCst);
            let after = q.len();
            if r.is_err() {
                // Undone (offer, poll, remove), or less the element left unplaced
                // (update), or less what was drained before the panic (drain_to).
                let most = if name == "drain_to" { 10 } else { 1 };
                assert!(
                    after <= before && before - after <= most,
                    "{name} at {point}"
                );
                if matches!(name, "offer" | "poll" | "remove") {
                    assert_eq!(after, before, "{name} at {point}: undone");
                }
            }
            let mut last = None;
            while let Some(e) = q.poll() {
                if let Some(l) = last {
                    assert!(e.key >= l, "{name}, panic at {point}: {} after {l}", e.key);
                }
                last = Some(e.key);
            }
        }
    }
}

/// A trigger that runs its task again at once, and whose drop calls the pool.
struct CallsPoolOnDrop {
    pool: schedpool::WeakExecutor,
    dropped: Arc<AtomicUsize>,
}

impl schedpool::Trigger for CallsPoolOnDrop {
    fn next_deadline(&mut self, ctx: &schedpool::TriggerContext) -> Option<std::time::Instant> {
        Some(ctx.finished)
    }
}

impl Drop for CallsPoolOnDrop {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.upgrade() {
            let _ = pool.queue_len(); // takes every shard's lock
        }
        self.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

/// Row 5: a periodic task cancelled between its run and its re-queue, with every handle
/// gone, is dropped by the worker; its trigger's destructor, which calls the pool, runs
/// with no lock held. A race, so many rounds: on a tree that dropped it under the home
/// shard's lock, a round deadlocks within a few hundred (the bounded wait then fails).
#[test]
fn a_trigger_whose_drop_calls_the_pool_never_runs_under_a_lock() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    let dropped = counter();
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(3);
    let mut rounds = 0;
    while rounds < 2_000 && std::time::Instant::now() < give_up {
        let trigger = CallsPoolOnDrop {
            pool: pool.downgrade(),
            dropped: dropped.clone(),
        };
        let fut = pool
            .schedule_periodic(schedpool::Periodic::with_trigger(trigger), || ())
            .unwrap();
        let handle = fut.cancel_handle();
        drop(fut);
        // Cancel at a varying point of the run / re-queue cycle.
        for _ in 0..(rounds % 64) * 16 {
            std::hint::spin_loop();
        }
        assert!(handle.cancel());
        drop(handle);
        rounds += 1;
        let done = common::wait_until(|| load(&dropped) == rounds);
        assert!(
            done,
            "round {rounds}: the trigger's drop never finished (a deadlock)"
        );
    }
    close(&pool);
}

/// Row 7: two async takes polled by one task with one waker (two branches of one
/// `select!`); dropping the one that lost leaves the other registered, and the queue's
/// timer wakes it when its element falls due.
#[test]
fn two_async_takes_sharing_a_waker_keep_each_others_registration() {
    let clock = schedpool::ManualClock::new();
    let q = schedpool::DelayQueue::with_clock(clock.clone());
    q.offer("due", std::time::Duration::from_millis(200));
    let woken = Arc::new(CountingWake(AtomicUsize::new(0)));
    let waker = Waker::from(woken.clone());
    let mut cx = Context::from_waker(&waker);
    let mut lost = Box::pin(q.next_expired());
    let mut won = Box::pin(q.next_expired());
    assert!(lost.as_mut().poll(&mut cx).is_pending());
    assert!(won.as_mut().poll(&mut cx).is_pending());
    drop(lost); // the branch that lost
    clock.advance(std::time::Duration::from_millis(200));
    assert!(
        common::wait_until(|| woken.0.load(Ordering::SeqCst) >= 1),
        "the remaining take was woken"
    );
    assert_eq!(won.as_mut().poll(&mut cx), Poll::Ready(Some("due")));
}

/// Row 7, for a stream and a future of one queue sharing a waker.
#[test]
fn a_dropped_take_leaves_a_stream_on_the_same_waker_registered() {
    let clock = schedpool::ManualClock::new();
    let q = schedpool::DelayQueue::with_clock(clock.clone());
    q.offer(1u32, sec(1));
    let woken = Arc::new(CountingWake(AtomicUsize::new(0)));
    let waker = Waker::from(woken.clone());
    let mut cx = Context::from_waker(&waker);
    let mut stream = q.expirations();
    let mut next = Box::pin(q.next_expired());
    assert!(next.as_mut().poll(&mut cx).is_pending());
    let mut poll_stream =
        |cx: &mut Context<'_>| futures_core::Stream::poll_next(Pin::new(&mut stream), cx);
    assert!(poll_stream(&mut cx).is_pending());
    drop(next);
    clock.advance(sec(1));
    assert!(common::wait_until(|| woken.0.load(Ordering::SeqCst) >= 1));
    match poll_stream(&mut cx) {
        Poll::Ready(Some(e)) => assert_eq!(*e.get_ref(), 1),
        other => panic!("expected the element, got {:?}", other.map(|o| o.is_some())),
    }
}

/// A waker that calls back into the pool from `wake` (it asks for the queue's length,
/// which takes every shard's lock) and counts its wakes.
struct CallsPoolOnWake(ScheduledThreadPoolExecutor, AtomicUsize);

impl Wake for CallsPoolOnWake {
    fn wake(self: Arc<Self>) {
        let _ = self.0.queue_len();
        let _ = self.0.submit(|| ()); // refused after shutdown; must not deadlock either
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

/// The `terminated()` future's waker calls the pool: the worker whose exit terminates
/// the pool wakes it after unlocking every shard.
#[test]
fn a_terminated_waker_that_calls_the_pool_is_woken_with_no_lock_held() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    assert_eq!(outcome(pool.submit(|| 1).unwrap()).unwrap(), 1); // a worker exists
    let waker = Arc::new(CallsPoolOnWake(pool.clone(), AtomicUsize::new(0)));
    let mut terminated = Box::pin(pool.terminated());
    let w = Waker::from(waker.clone());
    assert!(terminated
        .as_mut()
        .poll(&mut Context::from_waker(&w))
        .is_pending());
    pool.shutdown();
    assert!(pool.await_termination(BOUND));
    assert!(
        common::wait_until(|| waker.1.load(Ordering::SeqCst) == 1),
        "the waker ran to its end"
    );
    assert!(terminated
        .as_mut()
        .poll(&mut Context::from_waker(&w))
        .is_ready());
}

/// A future's waker that calls the pool from `wake`, on the worker that completed the
/// task: the worker holds no lock, so it neither deadlocks nor stops.
#[test]
fn a_future_waker_that_calls_the_pool_runs_on_the_worker_unlocked() {
    let (clock, pool) = manual_pool(1);
    let mut fut = pool.schedule(sec(1), || 5).unwrap();
    let waker = Arc::new(CallsPoolOnWake(pool.clone(), AtomicUsize::new(0)));
    assert!(poll_with(&mut fut, &Waker::from(waker.clone())).is_pending());
    clock.advance(sec(1));
    assert!(common::wait_until(|| waker.1.load(Ordering::SeqCst) == 1));
    assert_eq!(outcome(fut).unwrap(), 5);
    // The task the waker submitted ran too.
    common::flush(&pool);
    close(&pool);
}

/// A waker that blocks in `wake` until the test opens a gate: only the worker that
/// completed its task waits; the other worker goes on running tasks meanwhile.
#[test]
fn a_waker_that_blocks_holds_up_only_its_own_worker() {
    struct Blocks(common::Gate, AtomicUsize);
    impl Wake for Blocks {
        fn wake(self: Arc<Self>) {
            self.0.wait();
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }
    let (clock, pool) = manual_pool(2);
    let mut fut = pool.schedule(sec(1), || 1).unwrap();
    let blocks = Arc::new(Blocks(common::Gate::default(), AtomicUsize::new(0)));
    assert!(poll_with(&mut fut, &Waker::from(blocks.clone())).is_pending());
    clock.advance(sec(1));
    assert!(
        fut.wait_timeout(BOUND),
        "the outcome is stored before the wake"
    );
    // One worker is inside the waker; the other one runs these.
    let others: Vec<_> = (0..10u32)
        .map(|i| pool.submit(move || i).unwrap())
        .collect();
    for (i, f) in others.into_iter().enumerate() {
        assert_eq!(outcome(f).unwrap(), i as u32);
    }
    assert_eq!(blocks.1.load(Ordering::SeqCst), 0, "still blocked");
    blocks.0.open();
    assert!(common::wait_until(|| blocks.1.load(Ordering::SeqCst) == 1));
    assert_eq!(outcome(fut).unwrap(), 1);
    close(&pool);
}

/// A `DelayQueue` waker that calls back into the queue from `wake`.
struct CallsQueueOnWake(Arc<schedpool::DelayQueue<u32>>, AtomicUsize);

impl Wake for CallsQueueOnWake {
    fn wake(self: Arc<Self>) {
        let _ = self.0.len(); // takes the queue's lock
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

/// The `DelayQueue` door: the timer thread wakes every waiting take with no lock held, a
/// waker that panics does not stop it (the others are woken, and later takes are woken
/// too: the timer lives on), and a waker that calls the queue goes through.
#[test]
fn delay_queue_wakers_that_panic_or_call_the_queue_stop_nothing() {
    let clock = schedpool::ManualClock::new();
    let q = Arc::new(schedpool::DelayQueue::with_clock(clock.clone()));
    q.offer(1u32, sec(1));
    let panicky = Arc::new(PanickyWake(AtomicUsize::new(0)));
    let calls = Arc::new(CallsQueueOnWake(q.clone(), AtomicUsize::new(0)));
    let (wp, wc) = (Waker::from(panicky.clone()), Waker::from(calls.clone()));
    let mut a = Box::pin(q.next_expired());
    let mut b = Box::pin(q.next_expired());
    assert!(a.as_mut().poll(&mut Context::from_waker(&wp)).is_pending());
    assert!(b.as_mut().poll(&mut Context::from_waker(&wc)).is_pending());
    clock.advance(sec(1));
    assert!(
        common::wait_until(|| calls.1.load(Ordering::SeqCst) == 1),
        "the waker after the panicking one was woken"
    );
    assert!(common::wait_until(|| panicky.0.load(Ordering::SeqCst) == 1));
    assert_eq!(
        b.as_mut().poll(&mut Context::from_waker(&wc)),
        Poll::Ready(Some(1))
    );
    // The timer still serves the next take.
    q.offer(2, sec(1));
    assert!(a.as_mut().poll(&mut Context::from_waker(&wc)).is_pending());
    clock.advance(sec(1));
    assert!(common::wait_until(|| calls.1.load(Ordering::SeqCst) == 2));
    assert_eq!(
        a.as_mut().poll(&mut Context::from_waker(&wc)),
        Poll::Ready(Some(2))
    );
}

/// A waker that blocks in `wake` until its gate opens, counting the wakes that returned.
struct BlocksOnWake(common::Gate, AtomicUsize, AtomicUsize);

impl Wake for BlocksOnWake {
    fn wake(self: Arc<Self>) {
        self.1.fetch_add(1, Ordering::SeqCst); // entered
        self.0.wait();
        self.2.fetch_add(1, Ordering::SeqCst); // returned
    }
}

fn blocks_on_wake() -> Arc<BlocksOnWake> {
    Arc::new(BlocksOnWake(
        common::Gate::default(),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    ))
}

/// A `DelayQueue` waker that blocks holds up the queue's timer thread, which wakes the
/// async takes, and nothing else: offers, blocking polls and the queue's other calls go
/// on meanwhile; an async take that waits for the timer is woken once the waker returns;
/// nothing is lost.
#[test]
fn a_delay_queue_waker_that_blocks_holds_up_only_the_timer_thread() {
    let clock = schedpool::ManualClock::new();
    let q = Arc::new(schedpool::DelayQueue::with_clock(clock.clone()));
    q.offer(1u32, sec(1));
    let blocks = blocks_on_wake();
    let wb = Waker::from(blocks.clone());
    let mut a = Box::pin(q.next_expired());
    assert!(a.as_mut().poll(&mut Context::from_waker(&wb)).is_pending());
    clock.advance(sec(1));
    assert!(
        common::wait_until(|| blocks.1.load(Ordering::SeqCst) == 1),
        "the timer thread is inside the waker"
    );
    // The queue's lock is free: offers, reads and blocking polls go on.
    q.offer(2, sec(0));
    assert_eq!(q.len(), 2);
    assert_eq!(q.poll(), Some(1));
    // A second async take, registered while the timer is held up, is woken after it.
    q.offer(3, sec(1));
    let counting = Arc::new(CountingWake(AtomicUsize::new(0)));
    let wc = Waker::from(counting.clone());
    let mut b = Box::pin(q.next_expired());
    assert_eq!(
        b.as_mut().poll(&mut Context::from_waker(&wc)),
        Poll::Ready(Some(2)),
        "a due element is taken at once, without the timer"
    );
    assert!(b.as_mut().poll(&mut Context::from_waker(&wc)).is_pending());
    clock.advance(sec(1));
    blocks.0.open();
    assert!(common::wait_until(|| blocks.2.load(Ordering::SeqCst) == 1));
    assert!(
        common::wait_until(|| counting.0.load(Ordering::SeqCst) >= 1),
        "the timer thread went on after the waker returned"
    );
    assert_eq!(
        b.as_mut().poll(&mut Context::from_waker(&wc)),
        Poll::Ready(Some(3))
    );
    assert!(a.as_mut().poll(&mut Context::from_waker(&wc)).is_pending());
    assert!(q.is_empty(), "nothing lost, nothing taken twice");
}

/// The `terminated()` future's waker blocks: it holds up only the thread that latched
/// termination (the last worker to exit, or the caller of `shutdown` when the workers
/// were gone before its own part ended, as Java's `terminated()` hook runs on either),
/// after the latch, so the pool reads as terminated meanwhile.
#[test]
fn a_terminated_waker_that_blocks_holds_up_only_the_latching_thread() {
    let pool = ScheduledThreadPoolExecutor::new(2);
    let futs: Vec<_> = (0..4).map(|i| pool.submit(move || i).unwrap()).collect();
    assert_eq!(futs.into_iter().map(|f| f.get().unwrap()).sum::<i32>(), 6);
    let blocks = blocks_on_wake();
    let w = Waker::from(blocks.clone());
    let mut terminated = Box::pin(pool.terminated());
    assert!(terminated
        .as_mut()
        .poll(&mut Context::from_waker(&w))
        .is_pending());
    let p = pool.clone();
    let shutdown = std::thread::spawn(move || p.shutdown());
    assert!(
        pool.await_termination(BOUND),
        "terminated while the waker blocks"
    );
    assert!(pool.is_terminated());
    assert!(common::wait_until(|| blocks.1.load(Ordering::SeqCst) == 1));
    assert!(terminated
        .as_mut()
        .poll(&mut Context::from_waker(&w))
        .is_ready());
    blocks.0.open();
    assert!(common::wait_until(|| blocks.2.load(Ordering::SeqCst) == 1));
    shutdown.join().unwrap();
}

/// A trigger that calls back into the pool from `first_deadline` and `next_deadline`:
/// it reads the queue and the task list, submits a task, and after its second run
/// cancels its own task. Only its own task's runs hold the spec's mutex it runs under,
/// so none of it deadlocks: the task ends cancelled after two runs, and what the trigger
/// submitted ran.
struct CallsPoolFromNext {
    pool: schedpool::WeakExecutor,
    /// Its own task's handle, taken (and so dropped) by the cancel: a handle kept in the
    /// task's own trigger would make a reference cycle, task -> trigger -> handle -> task.
    me: Arc<Mutex<Option<CancelHandle>>>,
    submitted: Arc<Mutex<Vec<ScheduledFuture<u32>>>>,
}

impl CallsPoolFromNext {
    fn call(&self) {
        let pool = self.pool.upgrade().expect("the pool is alive");
        let _ = pool.queue_len();
        let _ = pool.scheduled_tasks();
        let fut = pool.submit(|| 3).expect("running");
        self.submitted.lock().unwrap().push(fut);
    }
}

impl schedpool::Trigger for CallsPoolFromNext {
    fn first_deadline(&mut self, earliest: std::time::Instant) -> Option<std::time::Instant> {
        self.call();
        Some(earliest)
    }

    fn next_deadline(&mut self, ctx: &schedpool::TriggerContext) -> Option<std::time::Instant> {
        self.call();
        if ctx.runs == 2 {
            let me = self.me.lock().unwrap().take().expect("set");
            assert!(me.cancel(), "its own cancel wins");
        }
        Some(ctx.finished + sec(1))
    }
}

#[test]
fn a_trigger_that_calls_the_pool_from_its_deadlines_does_not_deadlock() {
    let (clock, pool) = manual_pool(1);
    let me: Arc<Mutex<Option<CancelHandle>>> = Arc::default();
    let submitted: Arc<Mutex<Vec<ScheduledFuture<u32>>>> = Arc::default();
    let runs = counter();
    let r = runs.clone();
    let trigger = CallsPoolFromNext {
        pool: pool.downgrade(),
        me: me.clone(),
        submitted: submitted.clone(),
    };
    let p = pool.clone();
    let fut = bounded(move || {
        p.schedule_periodic(schedpool::Periodic::with_trigger(trigger), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap()
    })
    .expect("schedule_periodic returned");
    *me.lock().unwrap() = Some(fut.cancel_handle());
    assert!(pool.wait_idle(BOUND), "the first run and its next deadline");
    clock.advance(sec(1));
    assert!(pool.wait_idle(BOUND), "the second run and its cancel");
    assert!(fut.wait_timeout(BOUND));
    assert!(fut.get().unwrap_err().is_cancelled());
    assert_eq!(load(&runs), 2);
    let from_trigger = std::mem::take(&mut *submitted.lock().unwrap());
    assert_eq!(
        from_trigger.len(),
        3,
        "first deadline and two next deadlines"
    );
    for f in from_trigger {
        assert_eq!(outcome(f).unwrap(), 3);
    }
    close(&pool);
}

/// A `terminated()` waker that panics: contained on the thread that latched termination
/// (which goes on to end normally), and the pool's other `terminated()` futures are
/// woken too.
#[test]
fn a_panicking_terminated_waker_leaves_the_others_woken() {
    let pool = ScheduledThreadPoolExecutor::new(1);
    assert_eq!(outcome(pool.submit(|| 1).unwrap()).unwrap(), 1);
    let panicky = Arc::new(PanickyWake(AtomicUsize::new(0)));
    let counting = Arc::new(CountingWake(AtomicUsize::new(0)));
    let (wp, wc) = (Waker::from(panicky.clone()), Waker::from(counting.clone()));
    let mut first = Box::pin(pool.terminated());
    let mut second = Box::pin(pool.terminated());
    assert!(first
        .as_mut()
        .poll(&mut Context::from_waker(&wp))
        .is_pending());
    assert!(second
        .as_mut()
        .poll(&mut Context::from_waker(&wc))
        .is_pending());
    let p = pool.clone();
    assert!(bounded(move || p.shutdown()).is_some());
    assert!(pool.await_termination(BOUND));
    assert!(common::wait_until(
        || load(&panicky.0) == 1 && load(&counting.0) == 1
    ));
    assert!(first
        .as_mut()
        .poll(&mut Context::from_waker(&wc))
        .is_ready());
    assert!(second
        .as_mut()
        .poll(&mut Context::from_waker(&wc))
        .is_ready());
}

/// A waker whose drop panics, dropped by the pool when a poll with another waker replaces
/// its registration (the pool held the last reference): the panic is contained, the new
/// registration stands, and the outcome is delivered to it.
#[test]
fn a_waker_whose_drop_panics_is_contained_when_replaced() {
    struct PanicsOnDrop(Arc<AtomicUsize>);
    impl Wake for PanicsOnDrop {
        fn wake(self: Arc<Self>) {}
    }
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
            panic!("a waker whose drop panics");
        }
    }
    let (clock, pool) = manual_pool(1);
    let mut fut = pool.schedule(sec(1), || 8u32).unwrap();
    let drops = counter();
    let odd = Waker::from(Arc::new(PanicsOnDrop(drops.clone())));
    assert!(poll_with(&mut fut, &odd).is_pending());
    drop(odd); // the pool's registration holds the last reference now
    assert_eq!(load(&drops), 0);
    let counting = Arc::new(CountingWake(AtomicUsize::new(0)));
    let wc = Waker::from(counting.clone());
    assert!(
        poll_with(&mut fut, &wc).is_pending(),
        "the replaced waker's drop panicked inside the pool, contained"
    );
    assert_eq!(load(&drops), 1);
    clock.advance(sec(1));
    assert!(common::wait_until(|| load(&counting.0) == 1));
    assert!(matches!(poll_with(&mut fut, &wc), Poll::Ready(Ok(8))));
    close(&pool);
}

/// A trigger that shuts the pool down from `next_deadline`, under its own spec's mutex
/// (U1's documented exception): the shutdown goes through (its log lines, its pass over
/// the queue), and the task ends cancelled by the shutdown's policy, not with a panic.
#[test]
fn a_trigger_that_shuts_the_pool_down_ends_cancelled() {
    struct ShutsDown(schedpool::WeakExecutor);
    impl schedpool::Trigger for ShutsDown {
        fn next_deadline(&mut self, ctx: &schedpool::TriggerContext) -> Option<std::time::Instant> {
            if let Some(pool) = self.0.upgrade() {
                pool.shutdown();
            }
            Some(ctx.finished + sec(1))
        }
    }
    let (_clock, pool) = manual_pool(1);
    let fut = pool
        .schedule_periodic(
            schedpool::Periodic::with_trigger(ShutsDown(pool.downgrade())),
            || (),
        )
        .unwrap();
    assert!(pool.await_termination(BOUND));
    assert!(fut.wait_timeout(BOUND));
    let err = fut.get().unwrap_err();
    assert!(err.is_cancelled(), "cancelled by the shutdown, not {err:?}");
}
