//! `ScheduledFuture` as a `std::future::Future` (driven by a small `block_on`), and its
//! blocking waits.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use schedpool::TaskError;

mod common;
use common::{close, manual_pool, outcome, sec, BOUND};

fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let end = Instant::now() + BOUND;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting until {what}");
        thread::sleep(Duration::from_micros(200));
    }
}

/// Unparks a thread and counts its wakes.
struct ThreadWaker {
    thread: Thread,
    wakes: AtomicUsize,
}

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.thread.unpark();
    }
}

fn thread_waker() -> (Arc<ThreadWaker>, Waker) {
    let state = Arc::new(ThreadWaker {
        thread: thread::current(),
        wakes: AtomicUsize::new(0),
    });
    (state.clone(), Waker::from(state))
}

/// Polls `fut` on this thread, parking between polls, for at most `timeout`.
fn block_on_timeout<F: Future>(fut: F, timeout: Duration) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let (_state, waker) = thread_waker();
    let mut cx = Context::from_waker(&waker);
    let end = Instant::now() + timeout;
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return Some(out);
        }
        let now = Instant::now();
        if now >= end {
            return None;
        }
        thread::park_timeout(end - now);
    }
}

fn block_on<F: Future>(fut: F) -> F::Output {
    block_on_timeout(fut, BOUND).expect("the future was not woken in time")
}

#[test]
fn a_completed_future_is_ready_at_the_first_poll() {
    let (_clock, pool) = manual_pool(1);
    let mut fut = pool.submit(|| 5).unwrap();
    assert!(fut.wait_timeout(BOUND));
    let (state, waker) = thread_waker();
    let mut cx = Context::from_waker(&waker);
    match std::pin::Pin::new(&mut fut).poll(&mut cx) {
        Poll::Ready(Ok(v)) => assert_eq!(v, 5),
        other => panic!("expected Ready(Ok(5)), got {other:?}"),
    }
    assert_eq!(state.wakes.load(Ordering::SeqCst), 0);
    close(&pool);
}

#[test]
fn completion_wakes_a_pending_future() {
    let (clock, pool) = manual_pool(1);
    let mut fut = pool.schedule(sec(5), || "woken").unwrap();
    let (state, waker) = thread_waker();
    let mut cx = Context::from_waker(&waker);
    assert!(std::pin::Pin::new(&mut fut).poll(&mut cx).is_pending());
    assert_eq!(state.wakes.load(Ordering::SeqCst), 0);
    clock.advance(sec(5));
    wait_until("the waker was woken", || {
        state.wakes.load(Ordering::SeqCst) == 1
    });
    match std::pin::Pin::new(&mut fut).poll(&mut cx) {
        Poll::Ready(Ok(v)) => assert_eq!(v, "woken"),
        other => panic!("expected Ready(Ok), got {other:?}"),
    }
    assert_eq!(state.wakes.load(Ordering::SeqCst), 1);
    close(&pool);
}

#[test]
fn cancel_wakes_a_pending_future_with_cancelled() {
    let (_clock, pool) = manual_pool(1);
    let mut fut = pool.schedule(sec(5), || ()).unwrap();
    let handle = fut.cancel_handle();
    let (state, waker) = thread_waker();
    let mut cx = Context::from_waker(&waker);
    assert!(std::pin::Pin::new(&mut fut).poll(&mut cx).is_pending());
    assert!(thread::spawn(move || handle.cancel()).join().unwrap());
    wait_until("the waker was woken", || {
        state.wakes.load(Ordering::SeqCst) == 1
    });
    match std::pin::Pin::new(&mut fut).poll(&mut cx) {
        Poll::Ready(Err(TaskError::Cancelled)) => {}
        other => panic!("expected Ready(Err(Cancelled)), got {other:?}"),
    }
    close(&pool);
}

#[test]
fn the_latest_waker_is_the_one_woken() {
    let (clock, pool) = manual_pool(1);
    let mut fut = pool.schedule(sec(1), || 1).unwrap();
    let (_first, first_waker) = thread_waker();
    let (second, second_waker) = thread_waker();
    let mut cx1 = Context::from_waker(&first_waker);
    let mut cx2 = Context::from_waker(&second_waker);
    assert!(std::pin::Pin::new(&mut fut).poll(&mut cx1).is_pending());
    assert!(std::pin::Pin::new(&mut fut).poll(&mut cx2).is_pending());
    clock.advance(sec(1));
    wait_until("the second waker was woken", || {
        second.wakes.load(Ordering::SeqCst) == 1
    });
    assert!(matches!(
        std::pin::Pin::new(&mut fut).poll(&mut cx2),
        Poll::Ready(Ok(1))
    ));
    close(&pool);
}

#[test]
fn block_on_returns_once_another_thread_advances_the_clock() {
    let (clock, pool) = manual_pool(1);
    let fut = pool.schedule(sec(30), || 6 * 7).unwrap();
    let advancer = thread::spawn(move || {
        thread::sleep(Duration::from_millis(5)); // likely after block_on parks; either order is fine
        clock.advance(sec(30));
    });
    assert_eq!(block_on(fut).unwrap(), 42);
    advancer.join().unwrap();
    close(&pool);
}

#[test]
fn block_on_times_out_while_virtual_time_stands_still() {
    let (clock, pool) = manual_pool(1);
    let fut = pool.schedule(sec(30), || ()).unwrap();
    let handle = fut.cancel_handle();
    assert!(block_on_timeout(fut, Duration::from_millis(30)).is_none());
    assert!(!handle.is_done());
    clock.advance(sec(1));
    assert!(handle.cancel());
    close(&pool);
}

#[test]
fn futures_compose_in_an_async_block() {
    let (clock, pool) = manual_pool(2);
    let a = pool.schedule(sec(1), || 20).unwrap();
    let b = pool.schedule(sec(2), || 22).unwrap();
    let c = pool.schedule(sec(3), || 0).unwrap();
    assert!(c.cancel());
    let both = async move {
        let sum = a.await.unwrap() + b.await.unwrap();
        (sum, c.await.unwrap_err().is_cancelled())
    };
    let advancer = thread::spawn(move || clock.advance(sec(2)));
    assert_eq!(block_on(both), (42, true));
    advancer.join().unwrap();
    close(&pool);
}

#[test]
fn awaiting_a_panicked_task_yields_panicked() {
    let (_clock, pool) = manual_pool(1);
    let fut = pool.submit(|| -> u8 { panic!("async boom") }).unwrap();
    let err = block_on(fut).unwrap_err();
    assert_eq!(err.panic_message(), Some("async boom"));
    close(&pool);
}

#[test]
fn awaiting_a_periodic_task_ends_when_it_is_cancelled() {
    let (clock, pool) = manual_pool(1);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let handle = fut.cancel_handle();
    let driver = thread::spawn(move || {
        for _ in 0..3 {
            clock.advance(sec(1));
        }
        wait_until("3 runs", || runs.load(Ordering::SeqCst) == 3);
        handle.cancel()
    });
    assert!(block_on(fut).unwrap_err().is_cancelled());
    assert!(driver.join().unwrap());
    close(&pool);
}

#[test]
fn wait_timeout_is_false_until_done_then_true() {
    let (clock, pool) = manual_pool(1);
    let fut = pool.schedule(sec(10), || "value").unwrap();
    assert!(!fut.wait_timeout(Duration::from_millis(20)));
    assert!(!fut.wait_timeout(Duration::ZERO));
    assert!(!fut.is_done());
    clock.advance(sec(10));
    assert!(fut.wait_timeout(BOUND));
    assert!(fut.wait_timeout(Duration::ZERO), "stays true");
    assert!(fut.is_done());
    assert_eq!(outcome(fut).unwrap(), "value");
    close(&pool);
}

#[test]
fn wait_then_get_returns_the_value() {
    let (clock, pool) = manual_pool(1);
    let fut = pool.schedule(sec(1), || vec![1, 2, 3]).unwrap();
    let advancer = thread::spawn(move || clock.advance(sec(1)));
    fut.wait();
    assert!(fut.is_done());
    fut.wait();
    assert_eq!(outcome(fut).unwrap(), [1, 2, 3]);
    advancer.join().unwrap();
    close(&pool);
}

#[test]
fn get_blocks_until_the_task_runs() {
    let (clock, pool) = manual_pool(1);
    let fut = pool.schedule(sec(1), || 'x').unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || tx.send(fut.get().unwrap()).unwrap());
    // Virtual time stands still, so `get` cannot have returned within this wait.
    assert!(rx.recv_timeout(Duration::from_millis(20)).is_err());
    clock.advance(sec(1));
    assert_eq!(rx.recv_timeout(BOUND), Ok('x'));
    close(&pool);
}

#[test]
fn wait_timeout_with_a_huge_timeout_does_not_overflow() {
    let (_clock, pool) = manual_pool(1);
    let fut = pool.submit(|| 1).unwrap();
    assert!(fut.wait_timeout(Duration::MAX));
    assert_eq!(outcome(fut).unwrap(), 1);
    close(&pool);
}

#[test]
fn task_effects_are_visible_after_get() {
    let (_clock, pool) = manual_pool(2);
    let cell = Arc::new(std::sync::Mutex::new(Vec::new()));
    let futs: Vec<_> = (0..20)
        .map(|i| {
            let cell = cell.clone();
            pool.submit(move || cell.lock().unwrap().push(i)).unwrap()
        })
        .collect();
    for f in futs {
        block_on(f).unwrap();
    }
    let mut seen = cell.lock().unwrap().clone();
    seen.sort_unstable();
    assert_eq!(seen, (0..20).collect::<Vec<_>>());
    close(&pool);
}

/// A queued task's deadline lives in its queue node and its FIFO number in the task
/// (`pool/entry.rs`, `Entry`); the future reports the deadline in every phase: queued,
/// re-keyed in the queue, running, done, and handed back by `shutdown_now`. Tasks with
/// equal deadlines still run in submission order, a rescheduled one behind those already
/// at its new deadline.
#[test]
fn a_future_reports_its_deadline_queued_rescheduled_running_and_done() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let note = |n: u32| {
        let order = order.clone();
        move || order.lock().unwrap().push(n)
    };
    let a = pool.schedule(sec(10), note(1)).unwrap();
    let b = pool.schedule(sec(5), note(2)).unwrap();
    let _c = pool.schedule(sec(10), note(3)).unwrap();
    assert_eq!(a.deadline(), t0 + sec(10));
    assert_eq!(b.deadline(), t0 + sec(5));
    assert_eq!(b.delay(), sec(5));
    // `b` joins `a` and `c` at 10 s: it was re-keyed last, so it runs last of the three.
    assert!(b.reschedule(t0 + sec(10)));
    assert_eq!(b.deadline(), t0 + sec(10));
    assert_eq!(
        a.deadline(),
        t0 + sec(10),
        "a neighbour's deadline is untouched"
    );
    let (started, on_start) = std::sync::mpsc::channel();
    let (release, on_release) = std::sync::mpsc::channel::<()>();
    let d = pool
        .schedule(sec(20), move || {
            started.send(()).unwrap();
            on_release.recv().unwrap();
        })
        .unwrap();
    clock.advance(sec(10));
    assert!(pool.wait_idle(BOUND));
    assert_eq!(
        *order.lock().unwrap(),
        vec![1, 3, 2],
        "FIFO among equal deadlines"
    );
    assert_eq!(a.deadline(), t0 + sec(10), "done: the deadline it ran at");
    clock.advance(sec(10));
    on_start.recv_timeout(BOUND).unwrap();
    assert_eq!(d.deadline(), t0 + sec(20), "running");
    release.send(()).unwrap();
    assert!(d.wait_timeout(BOUND));
    assert_eq!(d.deadline(), t0 + sec(20), "done");
    let e = pool.schedule(sec(30), || ()).unwrap();
    let pending = pool.shutdown_now();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].deadline(), t0 + sec(50));
    assert_eq!(
        e.deadline(),
        t0 + sec(50),
        "out of the queue, in the task again"
    );
}
