//! Per-operation cost probes, for instruction counting under valgrind.
//!
//! A plain binary (`harness = false`), not a timing harness: `cargo bench --bench ops --
//! OP N` (or `target/release/deps/ops-* OP N`, which is what `scripts/opcount.sh` runs
//! under callgrind and cachegrind) performs operation OP N times from the calling thread
//! and exits with `std::process::exit`, so that nothing proportional to N happens after
//! the measured part (no drop of N futures, no pool shutdown). Only the crate's public API
//! is used, so the same probes run unchanged on a restructured crate.
//!
//! Per-op figures come from two runs at N and 2N: `(count(2N) - count(N)) / N` cancels
//! process start, pool construction and everything else that does not grow with N. An op
//! that needs setup growing with N (cancel needs N scheduled tasks first) names a *base*
//! op doing exactly that setup; the script subtracts the base's per-op figure.
//!
//! | op | what is repeated N times | base |
//! |---|---|---|
//! | `schedule` | `pool.schedule(1 h, \|\| ())`, real clock, futures kept | — |
//! | `schedule_manual` | the same on a `ManualClock` pool (deadline 1 s ahead) | — |
//! | `execute` | `pool.execute(\|\| ())`, its worker busy in a blocker task | — |
//! | `cancel` | `fut.cancel()` in submission order | `schedule` |
//! | `cancel_shuffled` | `fut.cancel()` in a fixed-seed shuffled order | `schedule_perm` |
//! | `pair` | `pool.schedule(1 h, \|\| ())`, `fut.cancel()` and the future's drop, one after the other (workload W4's and W7's iteration: the heap stays small) | — |
//! | `schedule_perm` | `schedule` + building the shuffled order | — |
//! | `rearm` | `fut.reschedule(Instant::now() + 1 h)` of each pending task, in a fixed-seed shuffled order (a server's idle timeouts pushed back) | `schedule_perm` |
//! | `rearm_after` | `fut.reschedule_after(1 h)`, the same walk: one clock reading for the deadline and the sequence number | `schedule_perm` |
//! | `take_run` | the worker takes, runs and completes one task | `schedule_manual` |
//! | `schedule_spread` | `schedule_manual`, from 64 threads in turn (a share each), so every shard holds entries | — |
//! | `take_run_spread` | `take_run` of those tasks: every take scans every shard's head (the worst case of the head scan, `queue/sharded/heads.rs`) | `schedule_spread` |
//! | `get` | `fut.get()` on a finished future (and its drop) | `take_run` |
//! | `schedule_async` | `schedule_manual` of an async job (`ParkingRuntime`, a future ready at its first poll) | — |
//! | `take_run_async` | `take_run` of those: the run's `block_on`, one poll | `schedule_async` |
//! | `schedule_async_yield` | `schedule_async` of a future pending once (it wakes itself) | — |
//! | `take_run_async_yield` | `take_run` of those: a pending poll lists the run's waker among the waiting runs (`task/sleepers.rs`), a second poll completes it | `schedule_async_yield` |
//! | `schedule_async_send` | `schedule_async` through `schedule_async_send` (the future is `Send`) | — |
//! | `take_run_async_send` | `take_run` of those: the run gives its worker back if pending (`task/suspended.rs`); ready at once, it ends in its first poll | `schedule_async_send` |
//! | `schedule_async_send_yield` | `schedule_async_send` of a future pending once (it wakes itself) | — |
//! | `take_run_async_send_yield` | `take_run` of those: the run is suspended, queued again by its waker and polled to its end by a worker | `schedule_async_send_yield` |
//! | `schedule_async_tokio` | `schedule_async` on a `current_thread` tokio `Runtime` (`Arc<Runtime>`; feature `tokio`) | — |
//! | `take_run_async_tokio` | `take_run_async` of those: the worker takes the runtime's scheduler for each `block_on` | `schedule_async_tokio` |
//! | `lock` | `parking_lot::Mutex` lock + unlock (a yardstick) | — |
//! | `now` | `Instant::now()` (a yardstick) | — |
//!
//! Besides the counts valgrind collects, each run prints one line, `op=OP n=N ns_per_op=X`:
//! the wall time of the measured part only (noisy: one run, no repeats). `bytes N` runs
//! `schedule` and `execute` with the counting allocator below switched on for the
//! measured part and adds `allocs_per_op` (allocations and reallocations), `bytes_per_op`
//! (bytes requested), `live_per_op` (bytes still allocated at its end), each divided by N,
//! and `sizes=SIZExCOUNT,...`, the request sizes made at least N/10 times.
//!
//! Counting costs a relaxed load and a branch per allocation while it is off (every op
//! but `bytes` and the native runs) and three relaxed read-modify-writes while on.

#![allow(missing_docs)]
// `GlobalAlloc` can only be implemented with `unsafe impl`; it forwards to `System`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use schedpool::{
    AsyncRuntime, ManualClock, ParkingRuntime, ScheduledFuture, ScheduledThreadPoolExecutor,
};

/// The system allocator, counting while `COUNTING` is set.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);
static ALLOCATED: AtomicU64 = AtomicU64::new(0);
static FREED: AtomicU64 = AtomicU64::new(0);
/// Allocations (and reallocations) by requested size, for sizes up to `SIZES - 1`.
const SIZES: usize = 1025;
static BY_SIZE: [AtomicU64; SIZES] = [const { AtomicU64::new(0) }; SIZES];

fn count_alloc(size: usize) {
    if COUNTING.load(Relaxed) {
        ALLOCS.fetch_add(1, Relaxed);
        ALLOCATED.fetch_add(size as u64, Relaxed);
        BY_SIZE[size.min(SIZES - 1)].fetch_add(1, Relaxed);
    }
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the counters are plain atomics and never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_alloc(layout.size());
        // SAFETY: the caller's guarantees for `alloc` are passed on as they are.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_alloc(layout.size());
        // SAFETY: the caller's guarantees for `alloc_zeroed` are passed on as they are.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Relaxed) {
            FREED.fetch_add(layout.size() as u64, Relaxed);
        }
        // SAFETY: `ptr` came from this allocator (hence from `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_alloc(new_size);
        if COUNTING.load(Relaxed) {
            FREED.fetch_add(layout.size() as u64, Relaxed);
        }
        // SAFETY: the caller's guarantees for `realloc` are passed on as they are.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The allocator's counters at one moment.
#[derive(Clone, Copy)]
struct Snapshot {
    allocs: u64,
    allocated: u64,
    freed: u64,
}

fn snapshot() -> Snapshot {
    Snapshot {
        allocs: ALLOCS.load(Relaxed),
        allocated: ALLOCATED.load(Relaxed),
        freed: FREED.load(Relaxed),
    }
}

/// Times (and, if counting is on, counts allocations in) the measured part of an op.
struct Section {
    start: Instant,
    before: Snapshot,
    sizes: Vec<u64>,
}

impl Section {
    fn begin() -> Self {
        let sizes = BY_SIZE.iter().map(|c| c.load(Relaxed)).collect();
        let before = snapshot();
        Section {
            start: Instant::now(),
            before,
            sizes,
        }
    }

    fn end(self, op: &str, n: usize) {
        let ns = self.start.elapsed().as_nanos() as f64;
        let after = snapshot();
        let n_f = n as f64;
        print!("op={op} n={n} ns_per_op={:.1}", ns / n_f);
        if COUNTING.load(Relaxed) {
            let allocated = after.allocated - self.before.allocated;
            let freed = after.freed - self.before.freed;
            print!(
                " allocs_per_op={:.3} bytes_per_op={:.1} live_per_op={:.1} sizes=",
                (after.allocs - self.before.allocs) as f64 / n_f,
                allocated as f64 / n_f,
                (allocated as f64 - freed as f64) / n_f,
            );
            // The request sizes made at least N/10 times, with their counts.
            let common: Vec<String> = BY_SIZE
                .iter()
                .zip(&self.sizes)
                .enumerate()
                .map(|(size, (now, then))| (size, now.load(Relaxed) - then))
                .filter(|&(_, count)| count as usize >= n / 10)
                .map(|(size, count)| format!("{size}x{count}"))
                .collect();
            print!("{}", common.join(","));
        }
        println!();
    }
}

const FAR: Duration = Duration::from_secs(3600);
const SOON: Duration = Duration::from_secs(1);

/// The pools' worker count: 1, or `OPS_WORKERS` (`scripts/scaling.sh` counts what grows
/// with it).
fn workers() -> usize {
    std::env::var("OPS_WORKERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

/// A one-worker pool (or [`workers`]) on the real clock, its workers started and given time to park (its
/// idle spin is bounded by real time, so it must end before the measured part starts).
fn real_pool() -> ScheduledThreadPoolExecutor {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(workers())
        .build();
    pool.prestart_all_core_threads();
    std::thread::sleep(Duration::from_millis(20));
    pool
}

/// A one-worker pool (or [`workers`]) on a fresh `ManualClock`, workers started.
fn manual_pool() -> (ScheduledThreadPoolExecutor, ManualClock) {
    let clock = ManualClock::new();
    let builder = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(workers())
        .clock(clock.clone());
    // With `metrics`: no publishing thread, whose wake-ups would land in some counts and
    // not others (the publications are off the runs' path; `docs/BENCHMARKS.md`).
    #[cfg(feature = "metrics")]
    let builder = builder.metrics_interval(Duration::ZERO);
    let pool = builder.build();
    pool.prestart_all_core_threads();
    std::thread::sleep(Duration::from_millis(20));
    (pool, clock)
}

type Futures = Vec<ScheduledFuture<()>>;

fn schedule_n(pool: &ScheduledThreadPoolExecutor, delay: Duration, n: usize) -> Futures {
    let mut futs = Vec::with_capacity(n);
    for _ in 0..n {
        futs.push(pool.schedule(delay, || ()).expect("accepted"));
    }
    futs
}

/// A fixed-seed Fisher–Yates shuffle of `0..n` (xorshift64*).
fn permutation(n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in (1..n).rev() {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let j = (r % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// `schedule_manual`'s setup plus one last task that reports when it has run: every task
/// due at the same (virtual) instant runs in submission order, so it runs last.
fn manual_with_signal(
    n: usize,
) -> (
    ScheduledThreadPoolExecutor,
    ManualClock,
    Futures,
    mpsc::Receiver<()>,
) {
    let (pool, clock) = manual_pool();
    let (tx, rx) = mpsc::channel();
    let futs = schedule_n(&pool, SOON, n);
    pool.schedule(SOON, move || tx.send(()).expect("main waits"))
        .expect("accepted");
    (pool, clock, futs, rx)
}

/// Advances the clock so that every queued task is due and waits until the last has run.
/// The caller waits on a channel, not in `wait_idle`: a `wait_idle` caller would be woken
/// after every task (the pool becomes idle between two tasks) and add its own re-checks
/// to the count.
fn run_all(clock: &ManualClock, rx: &mpsc::Receiver<()>) {
    clock.advance(SOON);
    rx.recv().expect("the last task ran");
}

fn op_schedule(n: usize) {
    let pool = real_pool();
    let mut futs = Vec::with_capacity(n);
    let s = Section::begin();
    for _ in 0..n {
        futs.push(pool.schedule(FAR, || ()).expect("accepted"));
    }
    s.end("schedule", n);
    black_box(&futs);
    exit();
}

fn op_schedule_manual(n: usize) {
    let (pool, clock) = manual_pool();
    let (tx, _rx) = mpsc::channel::<()>();
    let mut futs = Vec::with_capacity(n);
    let s = Section::begin();
    for _ in 0..n {
        futs.push(pool.schedule(SOON, || ()).expect("accepted"));
    }
    s.end("schedule_manual", n);
    // The same last task as `take_run`, so the two differ only in the run.
    pool.schedule(SOON, move || tx.send(()).expect("alive"))
        .expect("accepted");
    black_box((&futs, &clock));
    exit();
}

fn op_execute(n: usize) {
    let pool = real_pool();
    // Keep the only worker busy, so the N tasks stay queued and nobody is woken.
    let _release = hold_the_worker(&pool);
    let s = Section::begin();
    for _ in 0..n {
        pool.execute(|| ()).expect("accepted");
    }
    s.end("execute", n);
    exit();
}

fn op_cancel(n: usize) {
    let pool = real_pool();
    let futs = schedule_n(&pool, FAR, n);
    let s = Section::begin();
    for f in &futs {
        assert!(f.cancel());
    }
    s.end("cancel", n);
    black_box(pool.queue_len());
    exit();
}

fn op_pair(n: usize) {
    let pool = real_pool();
    let s = Section::begin();
    for _ in 0..n {
        let f = pool.schedule(FAR, || ()).expect("accepted");
        assert!(f.cancel());
    }
    s.end("pair", n);
    black_box(pool.queue_len());
    exit();
}

fn op_schedule_perm(n: usize) {
    let pool = real_pool();
    let futs = schedule_n(&pool, FAR, n);
    let s = Section::begin();
    let order = permutation(n);
    s.end("schedule_perm", n);
    black_box((&futs, &order));
    exit();
}

fn op_cancel_shuffled(n: usize) {
    let pool = real_pool();
    let futs = schedule_n(&pool, FAR, n);
    let order = permutation(n);
    let s = Section::begin();
    for &i in &order {
        assert!(futs[i].cancel());
    }
    s.end("cancel_shuffled", n);
    black_box(pool.queue_len());
    exit();
}

fn op_rearm(n: usize) {
    let pool = real_pool();
    let futs = schedule_n(&pool, FAR, n);
    let order = permutation(n);
    let s = Section::begin();
    for &i in &order {
        assert!(futs[i].reschedule(Instant::now() + FAR));
    }
    s.end("rearm", n);
    black_box(pool.queue_len());
    exit();
}

fn op_rearm_after(n: usize) {
    let pool = real_pool();
    let futs = schedule_n(&pool, FAR, n);
    let order = permutation(n);
    let s = Section::begin();
    for &i in &order {
        assert!(futs[i].reschedule_after(FAR));
    }
    s.end("rearm_after", n);
    black_box(pool.queue_len());
    exit();
}

/// The threads `spread_n` submits from: one per shard of the largest queue (threads are
/// given shards round-robin as they first submit).
const SPREAD: usize = 64;

/// `n` tasks due just after `SOON`, scheduled from [`SPREAD`] threads in turn (a share
/// each), then the signalling last task from this thread. Task `j` of thread `i` is due
/// `j * SPREAD + i` ns after `SOON`: no two deadlines tie (a tie across shards is decided
/// under every shard's lock, another path), and consecutive takes pop from different
/// shards, so every take changes the shard that holds the earliest head.
fn spread_with_signal(
    pool: &ScheduledThreadPoolExecutor,
    n: usize,
) -> (Vec<Futures>, mpsc::Receiver<()>) {
    let (tx, rx) = mpsc::channel();
    let futs = std::thread::scope(|s| {
        (0..SPREAD)
            .map(|i| {
                let share = n / SPREAD + usize::from(i < n % SPREAD);
                s.spawn(move || {
                    (0..share)
                        .map(|j| {
                            let at = SOON + Duration::from_nanos((j * SPREAD + i) as u64);
                            pool.schedule(at, || ()).expect("accepted")
                        })
                        .collect()
                })
                .join()
                .expect("scheduled")
            })
            .collect()
    });
    pool.schedule(SOON + SPREAD_SPAN, move || tx.send(()).expect("main waits"))
        .expect("accepted");
    (futs, rx)
}

/// Past every deadline [`spread_with_signal`] sets (at most 2^20 tasks per thread).
const SPREAD_SPAN: Duration = Duration::from_millis(100);

fn op_schedule_spread(n: usize) {
    let (pool, clock) = manual_pool();
    let s = Section::begin();
    let (futs, _rx) = spread_with_signal(&pool, n);
    s.end("schedule_spread", n);
    black_box((&clock, &futs));
    exit();
}

fn op_take_run_spread(n: usize) {
    let (pool, clock) = manual_pool();
    let (futs, rx) = spread_with_signal(&pool, n);
    let s = Section::begin();
    clock.advance(SOON + SPREAD_SPAN);
    rx.recv().expect("the last task ran");
    s.end("take_run_spread", n);
    black_box(&futs);
    exit();
}

/// `schedule_manual` through a metered `Named` (whose tasks have a run-time series with
/// the `metrics` feature).
fn op_schedule_named_manual(n: usize) {
    let (pool, clock) = manual_pool();
    let named = pool.named("job").metered();
    let (tx, _rx) = mpsc::channel::<()>();
    let mut futs = Vec::with_capacity(n);
    let s = Section::begin();
    for _ in 0..n {
        futs.push(named.schedule(SOON, || ()).expect("accepted"));
    }
    s.end("schedule_named_manual", n);
    pool.schedule(SOON, move || tx.send(()).expect("alive"))
        .expect("accepted");
    black_box((&futs, &clock));
    exit();
}

/// `take_run` of metered named tasks: with `metrics` and a recorder, each run records
/// into the name's series.
fn op_take_run_named(n: usize) {
    let (pool, clock) = manual_pool();
    let named = pool.named("job").metered();
    let (tx, rx) = mpsc::channel();
    let futs: Futures = (0..n)
        .map(|_| named.schedule(SOON, || ()).expect("accepted"))
        .collect();
    pool.schedule(SOON, move || tx.send(()).expect("main waits"))
        .expect("accepted");
    let s = Section::begin();
    run_all(&clock, &rx);
    s.end("take_run_named", n);
    black_box(&futs);
    exit();
}

fn op_take_run(n: usize) {
    let (_pool, clock, futs, rx) = manual_with_signal(n);
    let s = Section::begin();
    run_all(&clock, &rx);
    s.end("take_run", n);
    black_box(&futs);
    exit();
}

/// A future pending at its first poll (which wakes it at once), ready at its second.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            return std::task::Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// `n` async jobs due `SOON` on `rt` (`pending`: each future is pending once),
/// then the signal task of [`manual_with_signal`] (for runs that give their worker back
/// while pending, an async job of their kind, which signals at its end).
fn schedule_async_n<R: AsyncRuntime + Clone>(
    pool: &ScheduledThreadPoolExecutor,
    rt: &R,
    n: usize,
    (pending, send): (bool, bool),
    tx: mpsc::Sender<()>,
) -> Futures {
    let mut futs = Vec::with_capacity(n);
    for _ in 0..n {
        let make = move || YieldOnce(!pending);
        let fut = if send {
            pool.schedule_async_send(SOON, rt.clone(), make)
        } else {
            pool.schedule_async(SOON, rt.clone(), make)
        };
        futs.push(fut.expect("accepted"));
    }
    if pending && send {
        // The runs end off their first take, in resumptions queued behind the signal
        // task's take: the signal is a run of the same kind, resumed after all of theirs.
        let make = move || {
            let tx = tx.clone();
            async move {
                YieldOnce(false).await;
                tx.send(()).expect("main waits");
            }
        };
        pool.schedule_async_send(SOON, rt.clone(), make)
            .expect("accepted");
    } else {
        pool.schedule(SOON, move || tx.send(()).expect("main waits"))
            .expect("accepted");
    }
    futs
}

/// `how`: (each future is pending once, submitted through `schedule_async_send`).
fn op_schedule_async<R: AsyncRuntime + Clone>(rt: R, n: usize, how: (bool, bool), name: &str) {
    let (pool, clock) = manual_pool();
    let (tx, _rx) = mpsc::channel::<()>();
    let s = Section::begin();
    let futs = schedule_async_n(&pool, &rt, n, how, tx);
    s.end(name, n);
    black_box((&futs, &clock));
    exit();
}

fn op_take_run_async<R: AsyncRuntime + Clone>(rt: R, n: usize, how: (bool, bool), name: &str) {
    let (pool, clock) = manual_pool();
    let (tx, rx) = mpsc::channel::<()>();
    let futs = schedule_async_n(&pool, &rt, n, how, tx);
    let s = Section::begin();
    run_all(&clock, &rx);
    s.end(name, n);
    black_box(&futs);
    exit();
}

/// A `current_thread` tokio runtime, shared: no thread of its own, so its cost is the
/// worker's (feature `tokio`).
#[cfg(feature = "tokio")]
fn current_thread() -> std::sync::Arc<tokio::runtime::Runtime> {
    let rt = tokio::runtime::Builder::new_current_thread().build();
    std::sync::Arc::new(rt.expect("a runtime"))
}

/// A `ManualClock` pool whose only worker is held by a blocker task, and the sender that
/// releases it: what is submitted next stays queued, due, until the release.
fn manual_held() -> (ScheduledThreadPoolExecutor, mpsc::Sender<()>) {
    let (pool, _clock) = manual_pool();
    let release = hold_the_worker(&pool);
    (pool, release)
}

/// Holds `pool`'s only worker with a blocker task until the returned sender sends (or is
/// dropped); returns once the blocker runs.
fn hold_the_worker(pool: &ScheduledThreadPoolExecutor) -> mpsc::Sender<()> {
    let (started_tx, started_rx) = mpsc::channel::<()>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    pool.execute(move || {
        started_tx.send(()).expect("main waits");
        let _ = release_rx.recv();
    })
    .expect("accepted");
    started_rx.recv().expect("the blocker started");
    release_tx
}

/// N zero-delay `submit`s, each due when queued, and a last one that reports when it ran.
fn submit_due_n(pool: &ScheduledThreadPoolExecutor, n: usize) -> (Futures, mpsc::Receiver<()>) {
    let mut futs = Vec::with_capacity(n);
    for _ in 0..n {
        futs.push(pool.submit(|| ()).expect("accepted"));
    }
    let (tx, rx) = mpsc::channel();
    pool.submit(move || tx.send(()).expect("main waits"))
        .expect("accepted");
    (futs, rx)
}

fn op_submit_due(n: usize) {
    let (pool, _release) = manual_held();
    let s = Section::begin();
    let (futs, rx) = submit_due_n(&pool, n);
    s.end("submit_due", n);
    black_box((&futs, &rx));
    exit();
}

fn op_take_run_due(n: usize) {
    let (pool, release) = manual_held();
    let s = Section::begin();
    let (futs, rx) = submit_due_n(&pool, n);
    release.send(()).expect("the blocker waits");
    rx.recv().expect("the last task ran");
    s.end("take_run_due", n);
    black_box(&futs);
    exit();
}

fn op_get(n: usize) {
    let (_pool, clock, futs, rx) = manual_with_signal(n);
    run_all(&clock, &rx);
    let s = Section::begin();
    for f in futs {
        f.get().expect("ran");
    }
    s.end("get", n);
    exit();
}

fn op_lock(n: usize) {
    let m = parking_lot::Mutex::new(0u64);
    let s = Section::begin();
    for _ in 0..n {
        *black_box(&m).lock() += 1;
    }
    s.end("lock", n);
    black_box(&m);
    exit();
}

fn op_now(n: usize) {
    let s = Section::begin();
    for _ in 0..n {
        black_box(Instant::now());
    }
    s.end("now", n);
    exit();
}

fn op_bytes(n: usize) {
    {
        let pool = real_pool();
        let mut futs = Vec::with_capacity(n);
        COUNTING.store(true, Relaxed);
        let s = Section::begin();
        for _ in 0..n {
            futs.push(pool.schedule(FAR, || ()).expect("accepted"));
        }
        s.end("schedule", n);
        COUNTING.store(false, Relaxed);
        // Leak the futures and the pool: this op only counts.
        std::mem::forget(futs);
        std::mem::forget(pool);
    }
    let pool = real_pool();
    let (started_tx, started_rx) = mpsc::channel::<()>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    pool.execute(move || {
        started_tx.send(()).expect("main waits");
        let _ = release_rx.recv();
    })
    .expect("accepted");
    started_rx.recv().expect("the blocker started");
    COUNTING.store(true, Relaxed);
    let s = Section::begin();
    for _ in 0..n {
        pool.execute(|| ()).expect("accepted");
    }
    s.end("execute", n);
    COUNTING.store(false, Relaxed);
    black_box(&release_tx);
    exit();
}

/// Ends the process at once: nothing that grows with N runs after the measured part.
fn exit() -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    std::process::exit(0)
}

/// An op's name and its body, which runs it N times and exits.
type Op = (&'static str, fn(usize));

const OPS: &[Op] = &[
    ("schedule", op_schedule),
    ("schedule_manual", op_schedule_manual),
    ("execute", op_execute),
    ("cancel", op_cancel),
    ("pair", op_pair),
    ("schedule_perm", op_schedule_perm),
    ("cancel_shuffled", op_cancel_shuffled),
    ("rearm", op_rearm),
    ("rearm_after", op_rearm_after),
    ("take_run", op_take_run),
    ("schedule_named_manual", op_schedule_named_manual),
    ("take_run_named", op_take_run_named),
    ("schedule_spread", op_schedule_spread),
    ("take_run_spread", op_take_run_spread),
    ("submit_due", op_submit_due),
    ("take_run_due", op_take_run_due),
    ("get", op_get),
    ("schedule_async", |n| {
        op_schedule_async(ParkingRuntime, n, (false, false), "schedule_async")
    }),
    ("take_run_async", |n| {
        op_take_run_async(ParkingRuntime, n, (false, false), "take_run_async")
    }),
    ("schedule_async_yield", |n| {
        op_schedule_async(ParkingRuntime, n, (true, false), "schedule_async_yield")
    }),
    ("take_run_async_yield", |n| {
        op_take_run_async(ParkingRuntime, n, (true, false), "take_run_async_yield")
    }),
    ("schedule_async_send", |n| {
        op_schedule_async(ParkingRuntime, n, (false, true), "schedule_async_send")
    }),
    ("take_run_async_send", |n| {
        op_take_run_async(ParkingRuntime, n, (false, true), "take_run_async_send")
    }),
    ("schedule_async_send_yield", |n| {
        op_schedule_async(ParkingRuntime, n, (true, true), "schedule_async_send_yield")
    }),
    ("take_run_async_send_yield", |n| {
        op_take_run_async(ParkingRuntime, n, (true, true), "take_run_async_send_yield")
    }),
    #[cfg(feature = "tokio")]
    ("schedule_async_tokio", |n| {
        op_schedule_async(current_thread(), n, (false, false), "schedule_async_tokio")
    }),
    #[cfg(feature = "tokio")]
    ("take_run_async_tokio", |n| {
        op_take_run_async(current_thread(), n, (false, false), "take_run_async_tokio")
    }),
    ("lock", op_lock),
    ("now", op_now),
    ("bytes", op_bytes),
];

fn usage() -> ! {
    let names: Vec<&str> = OPS.iter().map(|(name, _)| *name).collect();
    eprintln!("usage: ops OP N   (OP: {})", names.join(", "));
    std::process::exit(2)
}

fn main() {
    // `cargo bench` appends `--bench`; ignore flags.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let [op, n] = args.as_slice() else { usage() };
    // With `metrics`, the runs count with a recorder installed (Prometheus's, as a
    // service would have it).
    #[cfg(feature = "metrics")]
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .expect("the only recorder");
    let Ok(n) = n.parse::<usize>() else { usage() };
    let Some((_, run)) = OPS.iter().find(|(name, _)| name == op) else {
        usage()
    };
    run(n);
}
