//! What a cancel costs the other waiting runs: with `WAKEUPS_RUNS` (1,000) async runs
//! pending on their workers, each awaiting a future that never completes, the main thread
//! interrupts `WAKEUPS_CANCELS` (100) of them one by one, each after the one before has
//! ended, and counts how many times the runs' wakers were woken, and the polls they cost.
//! Not a criterion bench: what it measures is a count, the same on every machine.
//!
//! The runs' runtime is a parking one whose waker counts its wake-ups; a future polled is
//! counted as a poll. An interrupt must wake its own run (one wake-up, one poll that drops
//! the future); every other wake-up is a spurious poll of a run that had nothing to do.
//!
//! It prints one line: the runs, the cancels, the wake-ups and polls per cancel (counted
//! once the interrupted runs have ended), and the wall time per cancel (from the
//! interrupt to its future's `Cancelled`, which comes at once).
//!
//! Usage: `cargo bench --bench cancel_wakeups`.
//! Results: `docs/BENCHMARKS.md`, "A cancel wakes its own run".

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use schedpool::{AsyncRuntime, ScheduledThreadPoolExecutor};

/// A parking runtime that counts its wakers' wake-ups and its polls.
#[derive(Clone, Default)]
struct Counting {
    wakes: Arc<AtomicUsize>,
    polls: Arc<AtomicUsize>,
    pending: Arc<AtomicUsize>,
}

struct Unpark {
    thread: Thread,
    wakes: Arc<AtomicUsize>,
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::Relaxed);
        self.thread.unpark();
    }
}

impl AsyncRuntime for Counting {
    fn block_on(&self, mut future: Pin<&mut (dyn Future<Output = ()> + '_)>) {
        let waker = Waker::from(Arc::new(Unpark {
            thread: thread::current(),
            wakes: self.wakes.clone(),
        }));
        let mut cx = Context::from_waker(&waker);
        let mut first = true;
        loop {
            self.polls.fetch_add(1, Ordering::Relaxed);
            if future.as_mut().poll(&mut cx).is_ready() {
                return;
            }
            if first {
                // The run is listed among the waiting runs by now (its first pending poll).
                self.pending.fetch_add(1, Ordering::Release);
                first = false;
            }
            thread::park();
        }
    }
}

/// A future that never completes and never wakes anyone.
struct Never;

impl Future for Never {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        Poll::Pending
    }
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let runs = env("WAKEUPS_RUNS", 1_000);
    let cancels = env("WAKEUPS_CANCELS", 100).min(runs);
    let rt = Counting::default();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(runs)
        .thread_stack_size(64 * 1024)
        .build();
    let mut futures: Vec<_> = (0..runs)
        .map(|_| {
            pool.schedule_async(Duration::ZERO, rt.clone(), || Never)
                .expect("accepted")
        })
        .collect();
    let give_up = Instant::now() + Duration::from_secs(120);
    while rt.pending.load(Ordering::Acquire) < runs {
        assert!(Instant::now() < give_up, "the runs did not all start");
        thread::sleep(Duration::from_millis(10));
    }
    let (wakes0, polls0) = (
        rt.wakes.load(Ordering::Relaxed),
        rt.polls.load(Ordering::Relaxed),
    );
    let start = Instant::now();
    for f in futures.drain(..cancels) {
        f.interrupt();
        assert!(f.get().is_err(), "an interrupted run ends cancelled");
    }
    let took = start.elapsed();
    // An interrupted one-shot's future says `Cancelled` at once; its run ends on its worker
    // after the wake-up's poll. Counted once every interrupted run has ended.
    while pool.stats().active_count > runs - cancels {
        assert!(Instant::now() < give_up, "the interrupted runs did not end");
        thread::sleep(Duration::from_millis(1));
    }
    let wakes = rt.wakes.load(Ordering::Relaxed) - wakes0;
    let polls = rt.polls.load(Ordering::Relaxed) - polls0;
    println!(
        "cancel_wakeups: {runs} runs, {cancels} interrupts: {:.1} wake-ups and {:.1} polls \
         per interrupt, {:.1} µs per interrupt",
        wakes as f64 / cancels as f64,
        polls as f64 / cancels as f64,
        took.as_secs_f64() * 1e6 / cancels as f64,
    );
    pool.shutdown_now();
    drop(futures);
    pool.close();
}
