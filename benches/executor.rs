//! Executor benchmarks, each against a simple baseline in the same run: a two-thread
//! scheduler built on `Mutex<BinaryHeap>` + `Condvar::notify_all`, cancelling lazily with
//! a flag (the way a `Timer` without an indexed queue does it).
//!
//! - `burst`: submit N zero-delay tasks, wait until all ran (throughput);
//! - `schedule_cancel`: schedule N tasks an hour out, cancel them all, then purge what is
//!   still queued (a no-op for schedpool, whose cancel removes at once);
//! - `wake`: one task 200 µs out, wait for it (wake-up latency + the delay).
//!
//! `cargo bench --bench executor`. The side-by-side comparison with Java and other crates
//! lives in `benches/compare/`.

#![allow(missing_docs)] // criterion's macros generate undocumented items

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use schedpool::ScheduledThreadPoolExecutor;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What each benchmark needs from a scheduler.
trait Scheduler: Sized {
    type Handle;
    fn new(threads: usize) -> Self;
    fn schedule(&self, delay: Duration, f: Box<dyn FnOnce() + Send>) -> Self::Handle;
    fn cancel(&self, h: &Self::Handle);
    /// Drops cancelled tasks still queued (a no-op where cancel already removed them).
    fn purge(&self);
    fn queued(&self) -> usize;
}

impl Scheduler for ScheduledThreadPoolExecutor {
    type Handle = schedpool::ScheduledFuture<()>;
    fn new(threads: usize) -> Self {
        ScheduledThreadPoolExecutor::new(threads)
    }
    fn schedule(&self, delay: Duration, f: Box<dyn FnOnce() + Send>) -> Self::Handle {
        ScheduledThreadPoolExecutor::schedule(self, delay, f).expect("accepted")
    }
    fn cancel(&self, h: &Self::Handle) {
        h.cancel();
    }
    fn purge(&self) {
        ScheduledThreadPoolExecutor::purge(self);
    }
    fn queued(&self) -> usize {
        self.queue_len()
    }
}

type Job = (
    Reverse<(Instant, u64)>,
    Arc<AtomicBool>,
    Box<dyn FnOnce() + Send>,
);

struct Entry(Job);

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.0 .0 == other.0 .0
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0 .0.cmp(&other.0 .0)
    }
}

#[derive(Default)]
struct BaselineState {
    heap: BinaryHeap<Entry>,
    seq: u64,
    stop: bool,
}

/// The baseline: one mutex, one condvar, broadcast on every offer, lazy cancel.
struct Baseline {
    shared: Arc<(Mutex<BaselineState>, Condvar)>,
    threads: Vec<JoinHandle<()>>,
}

impl Scheduler for Baseline {
    type Handle = Arc<AtomicBool>;
    fn new(threads: usize) -> Self {
        let shared = Arc::new((Mutex::new(BaselineState::default()), Condvar::new()));
        let threads = (0..threads)
            .map(|_| {
                let shared = shared.clone();
                std::thread::spawn(move || baseline_worker(&shared))
            })
            .collect();
        Baseline { shared, threads }
    }
    fn schedule(&self, delay: Duration, f: Box<dyn FnOnce() + Send>) -> Self::Handle {
        let cancelled = Arc::new(AtomicBool::new(false));
        let (lock, cv) = &*self.shared;
        let mut s = lock.lock().unwrap();
        s.seq += 1;
        let key = Reverse((Instant::now() + delay, s.seq));
        s.heap.push(Entry((key, cancelled.clone(), f)));
        cv.notify_all();
        cancelled
    }
    fn cancel(&self, h: &Self::Handle) {
        h.store(true, Ordering::Relaxed);
    }
    fn purge(&self) {
        let mut s = self.shared.0.lock().unwrap();
        s.heap.retain(|e| !e.0 .1.load(Ordering::Relaxed));
    }
    fn queued(&self) -> usize {
        self.shared.0.lock().unwrap().heap.len()
    }
}

fn baseline_worker(shared: &(Mutex<BaselineState>, Condvar)) {
    let (lock, cv) = shared;
    let mut s = lock.lock().unwrap();
    loop {
        if s.stop {
            return;
        }
        let now = Instant::now();
        match s.heap.peek().map(|e| e.0 .0 .0 .0) {
            Some(at) if at <= now => {
                let Entry((_, cancelled, f)) = s.heap.pop().unwrap();
                drop(s);
                if !cancelled.load(Ordering::Relaxed) {
                    f();
                }
                s = lock.lock().unwrap();
            }
            Some(at) => s = cv.wait_timeout(s, at - now).unwrap().0,
            None => s = cv.wait(s).unwrap(),
        }
    }
}

impl Drop for Baseline {
    fn drop(&mut self) {
        self.shared.0.lock().unwrap().stop = true;
        self.shared.1.notify_all();
        for t in self.threads.drain(..) {
            t.join().unwrap();
        }
    }
}

fn burst<S: Scheduler>(s: &S, n: usize) {
    let done = Arc::new(AtomicUsize::new(0));
    for _ in 0..n {
        let done = done.clone();
        s.schedule(
            Duration::ZERO,
            Box::new(move || {
                done.fetch_add(1, Ordering::Relaxed);
            }),
        );
    }
    while done.load(Ordering::Relaxed) < n {
        std::thread::yield_now();
    }
}

fn schedule_cancel<S: Scheduler>(s: &S, n: usize) -> usize {
    let handles: Vec<S::Handle> = (0..n)
        .map(|i| s.schedule(Duration::from_secs(3600 + i as u64), Box::new(|| ())))
        .collect();
    for h in &handles {
        s.cancel(h);
    }
    s.purge();
    s.queued()
}

fn wake<S: Scheduler>(s: &S) {
    let fired = Arc::new(AtomicBool::new(false));
    let f = fired.clone();
    s.schedule(
        Duration::from_micros(200),
        Box::new(move || f.store(true, Ordering::Release)),
    );
    while !fired.load(Ordering::Acquire) {
        std::hint::spin_loop();
    }
}

fn run<S: Scheduler>(c: &mut Criterion, name: &str) {
    let s = S::new(2);
    let n = 10_000;
    let mut g = c.benchmark_group("executor/burst");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_with_input(BenchmarkId::new(name, n), &n, |b, &n| {
        b.iter(|| burst(&s, n))
    });
    g.finish();

    let mut g = c.benchmark_group("executor/schedule_cancel");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_with_input(BenchmarkId::new(name, n), &n, |b, &n| {
        b.iter(|| schedule_cancel(&s, n));
    });
    g.finish();
    println!(
        "{name}: tasks still queued after cancelling {n}: {}",
        schedule_cancel(&s, n)
    );

    let mut g = c.benchmark_group("executor/wake_200us");
    g.bench_function(name, |b| b.iter(|| wake(&s)));
    g.finish();
}

fn bench(c: &mut Criterion) {
    run::<ScheduledThreadPoolExecutor>(c, "schedpool");
    run::<Baseline>(c, "mutex+binaryheap+notify_all");
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
