//! The workloads, generic over [`System`]. `Compare.java` implements the same steps in
//! the same order; the comments here are the reference for both.
//!
//! Conventions:
//! - Every pool has 2 workers and runs a few no-op tasks before anything is timed, so
//!   that thread start-up is outside every measurement.
//! - Task closures capture `&'static` state (see [`leak`]), not an `Arc`, so the only
//!   per-task cost is the scheduler's own.
//! - Lateness = (clock read at the first instruction of the task) − (clock read just
//!   before the `schedule` call + delay). Each system computes its own deadline inside
//!   `schedule` from a slightly later clock read, so the figure includes the (tiny) time
//!   between the two reads, the same way for every system.
//! - Any wait for tasks has a timeout; a scheduler that loses or never runs a task is
//!   reported (`"error"` key) instead of hanging the harness.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{mpsc, Barrier};
use std::time::Duration;

use crate::systems::System;
use crate::trace;
use crate::util::*;

/// A positive count from the environment variable `name`, else `default`.
fn count_from_env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

/// Worker threads per pool: 2, or `COMPARE_WORKERS` (`scripts/scaling.sh` runs W2, W4
/// and W6 with 8 to 64 to count what grows with them).
fn workers() -> usize {
    count_from_env("COMPARE_WORKERS", 2)
}

/// W7's producer threads: 8, or `COMPARE_PRODUCERS` (`scripts/scaling.sh` runs W7 with
/// as many producers as workers).
fn producer_threads() -> usize {
    count_from_env("COMPARE_PRODUCERS", 8)
}

const SEED: u64 = 0x5EED_2024;
const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;
const HOUR: u64 = 3600 * SEC;

/// Sizes of every workload; `--quick` scales them down for smoke tests.
pub struct Params {
    pub quick: bool,
    pub burst_n: u64,
    pub delayed_n: usize,
    pub cancel_n: usize,
    pub timeouts_per_producer: u64,
    pub producers_threads: usize,
    pub producers_per_thread: u64,
    pub rearm_per_producer: u64,
    pub idle_timeouts: usize,
    pub idle_rearms: u64,
    pub periodic_tasks: usize,
    pub periodic_secs: u64,
    pub wake_n: usize,
    pub scaling_sizes: Vec<usize>,
    pub scaling_ops: usize,
}

impl Params {
    pub fn new(quick: bool) -> Self {
        if quick {
            Params {
                quick,
                burst_n: 50_000,
                delayed_n: 10_000,
                cancel_n: 50_000,
                timeouts_per_producer: 25_000,
                producers_threads: producer_threads(),
                producers_per_thread: 20_000,
                rearm_per_producer: 50_000,
                idle_timeouts: 10_000,
                idle_rearms: 100_000,
                periodic_tasks: 1_000,
                periodic_secs: 1,
                wake_n: 200,
                scaling_sizes: vec![1_000, 10_000, 100_000],
                scaling_ops: 20_000,
            }
        } else {
            Params {
                quick,
                burst_n: 1_000_000,
                delayed_n: 200_000,
                cancel_n: 1_000_000,
                timeouts_per_producer: 500_000,
                producers_threads: producer_threads(),
                producers_per_thread: 200_000,
                rearm_per_producer: 500_000,
                idle_timeouts: 100_000,
                idle_rearms: 1_000_000,
                periodic_tasks: 1_000,
                periodic_secs: 3,
                wake_n: 2_000,
                scaling_sizes: vec![1_000, 10_000, 100_000, 1_000_000],
                scaling_ops: 200_000,
            }
        }
    }
}

fn start<S: System>() -> S {
    let s = S::start(workers());
    warm_up(&s);
    s
}

/// Runs a few no-op tasks and waits for them: every worker thread exists afterwards.
fn warm_up<S: System>(s: &S) {
    let left = leak(AtomicU64::new(4));
    let done = leak(Latch::default());
    for _ in 0..4 {
        drop(s.schedule(Duration::ZERO, move || {
            if left.fetch_sub(1, Ordering::AcqRel) == 1 {
                done.open();
            }
        }));
    }
    assert!(
        done.wait(Duration::from_secs(10)),
        "warm-up tasks did not run"
    );
}

fn ns_per_op(total_ns: u64, ops: usize) -> f64 {
    total_ns as f64 / ops as f64
}

fn us(ns: i64) -> f64 {
    ns as f64 / 1_000.0
}

/// Lateness summary in microseconds.
fn lateness(json: Json, prefix: &str, lat: &[AtomicI64]) -> Json {
    let mut v: Vec<i64> = lat.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    v.sort_unstable();
    json.num(&format!("{prefix}p50_us"), us(percentile(&v, 0.50)))
        .num(&format!("{prefix}p99_us"), us(percentile(&v, 0.99)))
        .num(&format!("{prefix}p999_us"), us(percentile(&v, 0.999)))
        .num(&format!("{prefix}max_us"), us(*v.last().unwrap()))
        .num(&format!("{prefix}min_us"), us(v[0]))
}

// ---------------------------------------------------------------------------------------
// W1 burst
// ---------------------------------------------------------------------------------------

struct Burst {
    ran: AtomicU64,
    target: u64,
    end_ns: AtomicU64,
    done: Latch,
}

/// One producer submits N zero-delay tasks; each increments a shared counter, and the one
/// that brings it to N records the time. Throughput = N / (that time − first submit).
pub fn burst<S: System>(p: &Params) -> Json {
    let n = p.burst_n;
    let s = start::<S>();
    let st = leak(Burst {
        ran: AtomicU64::new(0),
        target: n,
        end_ns: AtomicU64::new(0),
        done: Latch::default(),
    });
    let t0 = now_ns();
    for _ in 0..n {
        drop(s.schedule(Duration::ZERO, move || {
            if st.ran.fetch_add(1, Ordering::Relaxed) + 1 == st.target {
                st.end_ns.store(now_ns(), Ordering::Relaxed);
                st.done.open();
            }
        }));
    }
    let submitted = now_ns();
    let ok = st.done.wait(Duration::from_secs(120));
    let ran = st.ran.load(Ordering::Relaxed);
    let mut json = Json::default().int("n", n as i64);
    if ok {
        let elapsed = st.end_ns.load(Ordering::Relaxed) - t0;
        json = json
            .num("tasks_per_s", n as f64 * SEC as f64 / elapsed as f64)
            .num("elapsed_ms", elapsed as f64 / MS as f64)
            .num("submit_ns_per_op", ns_per_op(submitted - t0, n as usize));
    } else {
        json = json.str(
            "error",
            &format!("only {ran} of {n} tasks ran within 120 s"),
        );
    }
    s.dispose();
    json.int("ran", ran as i64)
}

// ---------------------------------------------------------------------------------------
// W2 delayed
// ---------------------------------------------------------------------------------------

struct Delayed {
    lat: Vec<AtomicI64>,
    /// Each task's start (ns) and the worker that ran it, for the causes of lateness.
    start: Vec<AtomicU64>,
    worker: Vec<AtomicU64>,
    left: AtomicU64,
    done: Latch,
    /// Each task's end and thread id, with `COMPARE_TRACE` (`trace.rs`).
    trace: trace::Tasks,
}

/// A number per thread that runs a task (1, 2, …), assigned on first use.
fn thread_number() -> u64 {
    use std::cell::Cell;
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local!(static N: Cell<u64> = const { Cell::new(0) });
    N.with(|n| {
        if n.get() == 0 {
            n.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        n.get()
    })
}

/// W2's lateness by cause (`docs/BENCHMARKS.md`, "Where W2's tail comes from"). Each task
/// is put in one class by what the worker that ran it was doing when the task fell due:
///
/// - `burst`: it fell due while the producer was still submitting (both cores shared
///   with the submission loop);
/// - `backlog`: its worker started another task after this one's deadline and before this
///   one, so the task waited behind due work (the take's cost, scan included, times the
///   queue of due tasks);
/// - `wake`: its worker had been idle since before the deadline, so the lateness is the
///   wake-up (a timer that fired late, a futex hand-off, a spin budget spent).
///
/// For each class: its share of all tasks, its own p50/p99, and its share of the tail
/// (the tasks at or above the overall p99). Then the p99 per 100 ms of deadlines.
fn causes(mut json: Json, deadlines: &[u64], submit_end: u64, t0: u64, st: &Delayed) -> Json {
    let n = deadlines.len();
    let lat: Vec<i64> = st.lat.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    let start: Vec<u64> = st.start.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    let worker: Vec<u64> = st
        .worker
        .iter()
        .map(|a| a.load(Ordering::Relaxed))
        .collect();
    // The previous start on the same worker, for every task.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by_key(|&i| (worker[i], start[i]));
    let mut prev = vec![0u64; n];
    for w in order.windows(2) {
        if worker[w[0]] == worker[w[1]] {
            prev[w[1]] = start[w[0]];
        }
    }
    let class = |i: usize| {
        if deadlines[i] < submit_end {
            0 // burst
        } else if prev[i] >= deadlines[i] {
            1 // backlog
        } else {
            2 // wake
        }
    };
    let mut sorted = lat.clone();
    sorted.sort_unstable();
    let p99 = percentile(&sorted, 0.99);
    let tail = lat.iter().filter(|&&l| l >= p99).count().max(1);
    for (c, name) in ["burst", "backlog", "wake"].iter().enumerate() {
        let mut v: Vec<i64> = (0..n).filter(|&i| class(i) == c).map(|i| lat[i]).collect();
        let in_tail = (0..n).filter(|&i| class(i) == c && lat[i] >= p99).count();
        json = json
            .num(
                &format!("cause_{name}_pct"),
                100.0 * v.len() as f64 / n as f64,
            )
            .num(
                &format!("cause_{name}_tail_pct"),
                100.0 * in_tail as f64 / tail as f64,
            );
        if !v.is_empty() {
            v.sort_unstable();
            json = json
                .num(&format!("cause_{name}_p50_us"), us(percentile(&v, 0.50)))
                .num(&format!("cause_{name}_p99_us"), us(percentile(&v, 0.99)));
        }
    }
    // p99 by deadline, in 100 ms slots from the first submission.
    let slots = 10;
    let mut by: Vec<Vec<i64>> = vec![Vec::new(); slots];
    for i in 0..n {
        let slot = (deadlines[i].saturating_sub(t0) / (100 * MS)) as usize;
        by[slot.min(slots - 1)].push(lat[i]);
    }
    let p99s: Vec<f64> = by
        .iter_mut()
        .map(|v| {
            v.sort_unstable();
            if v.is_empty() {
                0.0
            } else {
                us(percentile(v, 0.99))
            }
        })
        .collect();
    json = json
        .num("submit_ms", (submit_end - t0) as f64 / MS as f64)
        .nums("late_p99_us_by_100ms", &p99s);
    json
}

/// N one-shot tasks with delays uniform in [0, 1 s), submitted back to back; schedule
/// ns/op over the submit loop (delays drawn beforehand), lateness of every task.
pub fn delayed<S: System>(p: &Params) -> Json {
    let n = p.delayed_n;
    let mut rng = SplitMix64::new(SEED);
    let delays: Vec<u64> = (0..n).map(|_| rng.below(SEC)).collect();
    let s = start::<S>();
    let st = leak(Delayed {
        lat: (0..n).map(|_| AtomicI64::new(i64::MIN)).collect(),
        start: (0..n).map(|_| AtomicU64::new(0)).collect(),
        worker: (0..n).map(|_| AtomicU64::new(0)).collect(),
        left: AtomicU64::new(n as u64),
        done: Latch::default(),
        trace: trace::Tasks::new(n),
    });
    let mut deadlines = Vec::with_capacity(n);
    let t0 = now_ns();
    for (i, &d) in delays.iter().enumerate() {
        let deadline = now_ns() + d;
        deadlines.push(deadline);
        drop(s.schedule(Duration::from_nanos(d), move || {
            let started = now_ns();
            let late = started as i64 - deadline as i64;
            st.lat[i].store(late, Ordering::Relaxed);
            st.start[i].store(started, Ordering::Relaxed);
            st.worker[i].store(thread_number(), Ordering::Relaxed);
            st.trace.ended(i);
            if st.left.fetch_sub(1, Ordering::AcqRel) == 1 {
                st.done.open();
            }
        }));
    }
    let t1 = now_ns();
    let ok = st.done.wait(Duration::from_secs(60));
    let mut json = Json::default()
        .int("n", n as i64)
        .num("schedule_ns_per_op", ns_per_op(t1 - t0, n));
    if ok {
        json = lateness(json, "late_", &st.lat);
        json = causes(json, &deadlines, t1, t0, st);
        let starts: Vec<u64> = st.start.iter().map(|a| a.load(Ordering::Relaxed)).collect();
        trace::write(
            &[("workload", "w2".into()), ("submit_end", t1.to_string())],
            &deadlines,
            &starts,
            &st.trace,
        );
    } else {
        let left = st.left.load(Ordering::Relaxed);
        json = json.str(
            "error",
            &format!("{left} of {n} tasks had not run 59 s after their deadline"),
        );
    }
    s.dispose();
    json
}

// ---------------------------------------------------------------------------------------
// W3 cancel
// ---------------------------------------------------------------------------------------

/// N tasks due in 1–2 hours, then all cancelled in a shuffled order.
///
/// Memory: the handle vector, delays and order are allocated and touched *before* the
/// baseline, so the deltas count what the scheduler allocates per task (its task object,
/// closure, queue slot, handle object) and not the caller's slot for the handle; Java
/// pre-allocates its handle array the same way. Two Rust figures: RSS delta (after
/// `malloc_trim`, so freed-but-cached pages do not count) and the counting allocator's net
/// bytes (the analogue of Java's heap after GC). "Retained" is measured after every
/// handle has been dropped (slots set to `None`, like nulling a Java array) and 0.5 s of
/// settling, which lets runtimes that free cancelled tasks asynchronously (tokio, FJP)
/// finish.
pub fn cancel<S: System>(p: &Params) -> Json {
    let n = p.cancel_n;
    let mut rng = SplitMix64::new(SEED);
    let delays: Vec<u64> = (0..n).map(|_| HOUR + rng.below(HOUR)).collect();
    let order = rng.permutation(n);
    let mut handles: Vec<Option<S::Handle>> = Vec::with_capacity(n);
    handles.resize_with(n, || None);
    let s = start::<S>();
    let noop = || {};

    settle();
    start_heap_counting();
    let rss0 = trimmed_rss_bytes();
    let heap0 = live_heap_bytes();

    let t0 = now_ns();
    for (h, &d) in handles.iter_mut().zip(&delays) {
        *h = Some(s.schedule(Duration::from_nanos(d), noop));
    }
    let t1 = now_ns();

    settle();
    let rss1 = trimmed_rss_bytes();
    let heap1 = live_heap_bytes();
    let pending_before = s.pending();

    let mut cancelled = 0u64;
    let mut refused = 0u64;
    let t2 = now_ns();
    for &i in &order {
        match s.cancel(handles[i as usize].as_ref().unwrap()) {
            Some(true) => cancelled += 1,
            Some(false) => refused += 1,
            None => {}
        }
    }
    let t3 = now_ns();
    let pending_after = s.pending();

    for h in handles.iter_mut() {
        *h = None;
    }
    std::thread::sleep(Duration::from_millis(500));
    let rss2 = trimmed_rss_bytes();
    let heap2 = live_heap_bytes();
    stop_heap_counting();

    let per = |a: u64, b: u64| (a as f64 - b as f64) / n as f64;
    let mut json = Json::default()
        .int("n", n as i64)
        .num("schedule_ns_per_op", ns_per_op(t1 - t0, n))
        .num("cancel_ns_per_op", ns_per_op(t3 - t2, n))
        .opt_int("queue_before_cancel", pending_before.map(|v| v as i64))
        .opt_int("queue_after_cancel", pending_after.map(|v| v as i64))
        .num("mem_bytes_per_task", per(rss1, rss0))
        .num("mem_retained_bytes_per_task", per(rss2, rss0))
        .num("heap_bytes_per_task", (heap1 - heap0) as f64 / n as f64)
        .num(
            "heap_retained_bytes_per_task",
            (heap2 - heap0) as f64 / n as f64,
        );
    if cancelled + refused > 0 {
        json = json
            .int("cancel_true", cancelled as i64)
            .int("cancel_false", refused as i64);
    }
    s.dispose();
    json
}

/// A short pause before a memory reading, so asynchronous work (tokio's workers polling
/// freshly spawned tasks, say) is done; Java pays the same pause plus its GC.
fn settle() {
    std::thread::sleep(Duration::from_millis(200));
}

// ---------------------------------------------------------------------------------------
// W4 timeouts
// ---------------------------------------------------------------------------------------

/// The timeout pattern: 2 producers × M iterations of "schedule a 50 ms task, cancel it at
/// once", except every 100th, which is left to fire. Throughput over the producers' loops;
/// then wait for the survivors and check that exactly M/50 fired in all.
pub fn timeouts<S: System>(p: &Params) -> Json {
    let m = p.timeouts_per_producer;
    let expected = 2 * (m / 100);
    let s = start::<S>();
    let fired = leak(AtomicU64::new(0));
    let refused = AtomicU64::new(0);
    let gate = Barrier::new(3);
    let mut t0 = 0;
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                gate.wait();
                let mut local_refused = 0;
                for i in 0..m {
                    let h = s.schedule(Duration::from_millis(50), move || {
                        fired.fetch_add(1, Ordering::Relaxed);
                    });
                    if i % 100 != 99 && s.cancel(&h) == Some(false) {
                        local_refused += 1;
                    }
                }
                refused.fetch_add(local_refused, Ordering::Relaxed);
            });
        }
        gate.wait();
        t0 = now_ns();
        // Leaving the scope joins both producers.
    });
    let t1 = now_ns();
    let got = wait_for_survivors(fired, expected);
    let iters = 2 * m;
    let mut json = Json::default()
        .int("iterations", iters as i64)
        .num(
            "iterations_per_s",
            iters as f64 * SEC as f64 / (t1 - t0) as f64,
        )
        .int("fired", got as i64)
        .int("expected_fired", expected as i64)
        .bool("exact", got == expected)
        .int("cancel_false", refused.load(Ordering::Relaxed) as i64);
    json = fired_verdict(json, got, expected, refused.load(Ordering::Relaxed));
    s.dispose();
    json
}

/// W4 and W7: waits for the survivors (due 50 ms after their submission), then a little
/// longer so that a cancelled task that fires anyway would be counted; returns the count.
fn wait_for_survivors(fired: &AtomicU64, expected: u64) -> u64 {
    let limit = now_ns() + 30 * SEC;
    while fired.load(Ordering::Relaxed) < expected && now_ns() < limit {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(200));
    fired.load(Ordering::Relaxed)
}

/// W4 and W7: an error if the fired count is wrong; a note if it is consistent but not
/// exact because `late_cancels` cancels found their task started (the producer thread was
/// off the CPU for more than 50 ms between schedule and cancel).
fn fired_verdict(json: Json, got: u64, expected: u64, late_cancels: u64) -> Json {
    if got != expected + late_cancels {
        json.str("error", &format!("{got} tasks fired, expected {expected}"))
    } else if late_cancels > 0 {
        json.str(
            "note",
            &format!(
                "{got} tasks fired: {late_cancels} cancel(s) came after the task had started \
                 (producer descheduled for over 50 ms)"
            ),
        )
    } else {
        json
    }
}

// ---------------------------------------------------------------------------------------
// W7 many producers
// ---------------------------------------------------------------------------------------

/// W7 times every this many iterations (a clock read costs about as much as a cheap
/// schedule; reading it twice per iteration would distort the throughput).
const LAT_EVERY: u64 = 16;

/// The timeout pattern with more producers than cores: P producers × M iterations of
/// "schedule a 50 ms task, cancel it at once", except every 100th, which is left to fire.
/// Throughput over all producers' loops, the fired count checked as in W4, and the
/// latency of one schedule + cancel pair: every 16th iteration (i % 16 == 0, never one of
/// the firing ones) is timed with the monotonic clock into a per-thread vector allocated
/// before the start. Descheduling of a producer inside a timed pair is part of the figure:
/// that is what a caller on an oversubscribed machine sees.
pub fn producers<S: System>(p: &Params) -> Json {
    let threads = p.producers_threads;
    let m = p.producers_per_thread;
    let expected = threads as u64 * (m / 100);
    let s = start::<S>();
    let fired = leak(AtomicU64::new(0));
    let refused = AtomicU64::new(0);
    let gate = Barrier::new(threads + 1);
    let buffers: Vec<Vec<u64>> = (0..threads)
        .map(|_| Vec::with_capacity(m.div_ceil(LAT_EVERY) as usize))
        .collect();
    let mut t0 = 0;
    let mut samples: Vec<u64> = Vec::new();
    std::thread::scope(|scope| {
        let joins: Vec<_> = buffers
            .into_iter()
            .map(|mut lat| {
                let (s, gate, refused) = (&s, &gate, &refused);
                scope.spawn(move || {
                    gate.wait();
                    let mut local_refused = 0;
                    for i in 0..m {
                        let timed = i % LAT_EVERY == 0;
                        let start = if timed { now_ns() } else { 0 };
                        let h = s.schedule(Duration::from_millis(50), move || {
                            fired.fetch_add(1, Ordering::Relaxed);
                        });
                        if i % 100 != 99 && s.cancel(&h) == Some(false) {
                            local_refused += 1;
                        }
                        if timed {
                            lat.push(now_ns() - start);
                        }
                    }
                    refused.fetch_add(local_refused, Ordering::Relaxed);
                    lat
                })
            })
            .collect();
        gate.wait();
        t0 = now_ns();
        for j in joins {
            samples.extend(j.join().expect("producer panicked"));
        }
    });
    let t1 = now_ns();
    let got = wait_for_survivors(fired, expected);
    let late_cancels = refused.load(Ordering::Relaxed);
    let iters = threads as u64 * m;
    let mut lat: Vec<i64> = samples.iter().map(|&v| v as i64).collect();
    lat.sort_unstable();
    let mut json = Json::default()
        .int("producers", threads as i64)
        .int("iterations", iters as i64)
        .num(
            "iterations_per_s",
            iters as f64 * SEC as f64 / (t1 - t0) as f64,
        )
        .int("lat_every", LAT_EVERY as i64)
        .int("lat_samples", lat.len() as i64)
        .int("lat_p50_ns", percentile(&lat, 0.50))
        .int("lat_p99_ns", percentile(&lat, 0.99))
        .int("lat_max_ns", *lat.last().unwrap())
        .int("fired", got as i64)
        .int("expected_fired", expected as i64)
        .bool("exact", got == expected)
        .int("cancel_false", late_cancels as i64);
    json = fired_verdict(json, got, expected, late_cancels);
    s.dispose();
    json
}

// ---------------------------------------------------------------------------------------
// W8 re-arm
// ---------------------------------------------------------------------------------------

/// Re-arming a pending timeout (a connection's idle timer pushed back on every packet):
/// 2 producers each keep one task due 50 ms ahead and, M times, move it 50 ms ahead
/// again: `System::rearm` (schedpool: `reschedule`; everyone else: cancel + schedule,
/// replacing the handle). Throughput over the loops; no task may fire. Each producer
/// reads the clock every 1024 iterations to record its longest gap: a task can only fire
/// legitimately if its producer was off the CPU for 50 ms. Each producer cancels its last
/// pending task as soon as its own loop ends (one producer may finish well before the
/// other: a task left pending meanwhile would reach its deadline); throughput runs from
/// the start to the last loop's end, and the fired count is read 200 ms after the join.
pub fn rearm<S: System>(p: &Params) -> Json {
    const PRODUCERS: usize = 2;
    let m = p.rearm_per_producer;
    let s = start::<S>();
    let fired = leak(AtomicU64::new(0));
    let gate = Barrier::new(PRODUCERS + 1);
    let delay = Duration::from_millis(50);
    let mut t0 = 0;
    // Per producer: (method, longest gap, loop end, cancel of the last task refused).
    let mut ends: Vec<(&'static str, u64, u64, bool)> = Vec::with_capacity(PRODUCERS);
    std::thread::scope(|scope| {
        let joins: Vec<_> = (0..PRODUCERS)
            .map(|_| {
                scope.spawn(|| {
                    let task = move || {
                        fired.fetch_add(1, Ordering::Relaxed);
                    };
                    let mut h = s.schedule(delay, task);
                    let mut method = "";
                    let mut max_gap = 0;
                    gate.wait();
                    let mut last = now_ns();
                    for i in 0..m {
                        method = s.rearm(&mut h, delay, task);
                        if i % 1024 == 1023 {
                            let now = now_ns();
                            max_gap = max_gap.max(now - last);
                            last = now;
                        }
                    }
                    let end = now_ns();
                    let refused = s.cancel(&h) == Some(false);
                    (method, max_gap.max(end - last), end, refused)
                })
            })
            .collect();
        gate.wait();
        t0 = now_ns();
        for j in joins {
            ends.push(j.join().expect("producer panicked"));
        }
    });
    let during = fired.load(Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(200));
    let got = fired.load(Ordering::Relaxed);
    let method = ends[0].0;
    let max_gap = ends.iter().map(|e| e.1).max().unwrap();
    let t1 = ends.iter().map(|e| e.2).max().unwrap();
    let cancel_false = ends.iter().filter(|e| e.3).count() as i64;
    let iters = PRODUCERS as u64 * m;
    let mut json = Json::default()
        .int("producers", PRODUCERS as i64)
        .int("iterations", iters as i64)
        .num(
            "iterations_per_s",
            iters as f64 * SEC as f64 / (t1 - t0) as f64,
        )
        .str("method", method)
        .int("fired_during_loop", during as i64)
        .int("fired", got as i64)
        .bool("none_fired", got == 0)
        .int("last_cancel_false", cancel_false)
        .num("max_gap_ms", max_gap as f64 / MS as f64);
    if got > 0 {
        if max_gap >= 50 * MS {
            json = json.str(
                "note",
                &format!(
                    "{got} task(s) fired: a producer was off the CPU for {:.1} ms, past the \
                     50 ms deadline",
                    max_gap as f64 / MS as f64
                ),
            );
        } else {
            json = json.str(
                "error",
                &format!(
                    "{got} task(s) fired ({during} during the loop), expected none; longest \
                     producer gap {:.1} ms",
                    max_gap as f64 / MS as f64
                ),
            );
        }
    }
    s.dispose();
    json
}

// ---------------------------------------------------------------------------------------
// W9 idle timeouts
// ---------------------------------------------------------------------------------------

/// A server's idle timeouts: one thread keeps N timeouts pending 60 s ahead (one per
/// connection) and, M times, pushes a random one of them back to 60 s from now, as a
/// packet on that connection would: `System::rearm` (schedpool: `reschedule`; everyone
/// else: cancel + schedule). The random choice is a fixed-seed xorshift, the same in the
/// Java harness. Re-arms per second over the loop; no task may fire.
pub fn idle<S: System>(p: &Params) -> Json {
    let (n, m) = (p.idle_timeouts, p.idle_rearms);
    let s = start::<S>();
    let fired = leak(AtomicU64::new(0));
    let delay = Duration::from_secs(60);
    let task = move || {
        fired.fetch_add(1, Ordering::Relaxed);
    };
    let mut handles: Vec<S::Handle> = (0..n).map(|_| s.schedule(delay, task)).collect();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut method = "";
    let t0 = now_ns();
    for _ in 0..m {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let i = (x.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize;
        method = s.rearm(&mut handles[i], delay, task);
    }
    let t1 = now_ns();
    let pending = s.pending();
    for h in &handles {
        s.cancel(h);
    }
    let got = fired.load(Ordering::Relaxed);
    let mut json = Json::default()
        .int("timeouts", n as i64)
        .int("rearms", m as i64)
        .num("rearms_per_s", m as f64 * SEC as f64 / (t1 - t0) as f64)
        .num("ns_per_rearm", (t1 - t0) as f64 / m as f64)
        .str("method", method)
        .int("fired", got as i64)
        .bool("none_fired", got == 0);
    if let Some(pending) = pending {
        json = json.int("pending_after", pending as i64);
    }
    if got > 0 {
        json = json.str("error", &format!("{got} task(s) fired, expected none"));
    }
    drop(handles);
    s.dispose();
    json
}

// ---------------------------------------------------------------------------------------
// W5 periodic
// ---------------------------------------------------------------------------------------

/// 1,000 periodic tasks with a 10 ms period for T seconds, first with fixed rate, then (on
/// a fresh pool) with fixed delay. Task i starts after i/1000 of a period, so the runs
/// are spread over the period. Process CPU time (all threads) over the window.
/// Fixed rate must give exactly T/10 ms runs per task, ±1 for the run racing the cancel at
/// the end; fixed delay drifts by each run's lateness, so its counts are only reported.
pub fn periodic<S: System>(p: &Params) -> Json {
    let mut json = Json::default()
        .int("tasks", p.periodic_tasks as i64)
        .int("period_ms", 10)
        .int("secs", p.periodic_secs as i64);
    for (prefix, fixed_rate) in [("rate_", true), ("delay_", false)] {
        json = periodic_one::<S>(p, json, prefix, fixed_rate);
    }
    json
}

fn periodic_one<S: System>(p: &Params, mut json: Json, prefix: &str, fixed_rate: bool) -> Json {
    let n = p.periodic_tasks;
    let period = 10 * MS;
    let window = p.periodic_secs * SEC;
    let s = start::<S>();
    let counts: &'static [AtomicU64] = leak((0..n).map(|_| AtomicU64::new(0)).collect::<Vec<_>>());
    let mut handles = Vec::with_capacity(n);
    let mut first_due = Vec::with_capacity(n);
    let cpu0 = process_cpu_ns();
    let t0 = now_ns();
    for (i, c) in counts.iter().enumerate() {
        let initial = period * i as u64 / n as u64;
        let task = move || {
            c.fetch_add(1, Ordering::Relaxed);
        };
        first_due.push(now_ns() + initial);
        let (initial, period) = (Duration::from_nanos(initial), Duration::from_nanos(period));
        handles.push(if fixed_rate {
            s.fixed_rate(initial, period, task)
        } else {
            s.fixed_delay(initial, period, task)
        });
    }
    let scheduled = now_ns();
    sleep_until_ns(t0 + window);
    let cancel_start = now_ns();
    for h in &handles {
        s.cancel(h);
    }
    let cancel_end = now_ns();
    let cpu1 = process_cpu_ns();
    let wall = now_ns() - t0;
    std::thread::sleep(Duration::from_millis(50)); // let a run in progress finish
    let runs: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let expect = window / period;
    let min = *runs.iter().min().unwrap();
    let max = *runs.iter().max().unwrap();
    let total: u64 = runs.iter().sum();
    json = json
        .int(&format!("{prefix}runs_min"), min as i64)
        .int(&format!("{prefix}runs_max"), max as i64)
        .num(&format!("{prefix}runs_mean"), total as f64 / n as f64)
        .num(&format!("{prefix}cpu_ms"), (cpu1 - cpu0) as f64 / MS as f64)
        .num(
            &format!("{prefix}cpu_pct"),
            100.0 * (cpu1 - cpu0) as f64 / wall as f64,
        )
        .num(
            &format!("{prefix}schedule_ms"),
            (scheduled - t0) as f64 / MS as f64,
        )
        .num(
            &format!("{prefix}cancel_late_ms"),
            (cancel_start as f64 - (t0 + window) as f64) / MS as f64,
        );
    if fixed_rate {
        // The check: every task ran window/period times, ± 1.
        let exact = min + 1 >= expect && max <= expect + 1;
        // The same check against the times the driver actually cancelled: a task must
        // have run every time that fell due before the cancel loop began, less at most
        // one (late or racing the cancel), and never more than the runs due before the
        // loop ended. This separates a scheduler's miscount from a driver thread that
        // woke late.
        let due = |t: u64, first: u64| t.saturating_sub(first).div_ceil(period);
        let off = runs
            .iter()
            .zip(&first_due)
            .filter(|&(&r, &f)| r + 1 < due(cancel_start, f) || r > due(cancel_end, f))
            .count();
        json = json
            .int("rate_expected_runs", expect as i64)
            .bool("rate_exact", exact)
            .int("rate_tasks_off", off as i64);
        let late = (cancel_start as f64 - (t0 + window) as f64) / MS as f64;
        if off > 0 {
            json = json.str(
                "error",
                &format!(
                    "fixed rate: {off} tasks ran a number of times inconsistent with when they \
                     were cancelled (runs per task in [{min}, {max}], cancel began {late:.1} ms \
                     after the window)"
                ),
            );
        } else if !exact {
            let sched_ms = (scheduled - t0) as f64 / MS as f64;
            json = json.str(
                "note",
                &format!(
                    "fixed-rate runs per task in [{min}, {max}], not {expect} ± 1, yet each \
                     count matches when the driver scheduled the task (the loop took \
                     {sched_ms:.1} ms) and cancelled it (began {late:.1} ms late)"
                ),
            );
        }
    }
    s.dispose();
    json
}

// ---------------------------------------------------------------------------------------
// W6 wake latency
// ---------------------------------------------------------------------------------------

/// N times in sequence: schedule one task 2 ms ahead on an otherwise idle pool and wait
/// for it. Lateness is measured inside the task, so how the driver is woken afterwards
/// does not count.
pub fn wake<S: System>(p: &Params) -> Json {
    let n = p.wake_n;
    let s = start::<S>();
    let lat: &'static [AtomicI64] = leak((0..n).map(|_| AtomicI64::new(0)).collect::<Vec<_>>());
    let ends: &'static trace::Tasks = leak(trace::Tasks::new(n));
    let mut deadlines = Vec::with_capacity(n);
    let mut json = Json::default().int("n", n as i64);
    for (i, slot) in lat.iter().enumerate() {
        let (tx, rx) = mpsc::sync_channel::<()>(1);
        let deadline = now_ns() + 2 * MS;
        deadlines.push(deadline);
        drop(s.schedule(Duration::from_millis(2), move || {
            slot.store(now_ns() as i64 - deadline as i64, Ordering::Relaxed);
            ends.ended(i);
            let _ = tx.send(());
        }));
        if rx.recv_timeout(Duration::from_secs(10)).is_err() {
            json = json.str("error", &format!("iteration {i}: task not run within 10 s"));
            s.dispose();
            return json;
        }
    }
    json = lateness(json, "late_", lat);
    let starts: Vec<u64> = (0..n)
        .map(|i| (deadlines[i] as i64 + lat[i].load(Ordering::Relaxed)) as u64)
        .collect();
    trace::write(&[("workload", "w6".into())], &deadlines, &starts, ends);
    s.dispose();
    json
}

// ---------------------------------------------------------------------------------------
// Scaling
// ---------------------------------------------------------------------------------------

/// Schedule and cancel cost against the number of pending tasks. For each size P: a fresh
/// pool is filled with P no-op tasks due in 1–2 hours (untimed); then, in rounds, a batch
/// of K = min(1000, P/10) more tasks (random deadlines in the same range, so they land
/// anywhere in the queue) is scheduled (timed) and cancelled in a shuffled order (timed),
/// until about `scaling_ops` of each have been measured (after one untimed round). The
/// queue stays at P..P+K pending — for systems whose cancel removes the task; with
/// `scheduled-thread-pool`, whose cancel only flags, the cancelled tasks pile up.
pub fn scaling<S: System>(p: &Params) -> Json {
    let mut sched = Vec::new();
    let mut canc = Vec::new();
    let mut left = Vec::new();
    let mut rng = SplitMix64::new(SEED);
    let noop = || {};
    for &size in &p.scaling_sizes {
        let s = start::<S>();
        for _ in 0..size {
            drop(s.schedule(Duration::from_nanos(HOUR + rng.below(HOUR)), noop));
        }
        let k = (size / 10).min(1000);
        let rounds = p.scaling_ops.div_ceil(k);
        let mut batch: Vec<Option<S::Handle>> = Vec::with_capacity(k);
        batch.resize_with(k, || None);
        let (mut sched_ns, mut cancel_ns) = (0u64, 0u64);
        // One untimed round first: allocator and caches warm, queue storage grown.
        for round in 0..=rounds {
            let delays: Vec<u64> = (0..k).map(|_| HOUR + rng.below(HOUR)).collect();
            let order = rng.permutation(k);
            let t0 = now_ns();
            for (h, &d) in batch.iter_mut().zip(&delays) {
                *h = Some(s.schedule(Duration::from_nanos(d), noop));
            }
            let t1 = now_ns();
            for &i in &order {
                s.cancel(batch[i as usize].as_ref().unwrap());
            }
            let t2 = now_ns();
            if round > 0 {
                sched_ns += t1 - t0;
                cancel_ns += t2 - t1;
            }
            for h in batch.iter_mut() {
                *h = None;
            }
        }
        sched.push(ns_per_op(sched_ns, rounds * k));
        canc.push(ns_per_op(cancel_ns, rounds * k));
        left.push(s.pending().map_or(-1, |v| v as i64));
        s.dispose();
    }
    let sizes: Vec<i64> = p.scaling_sizes.iter().map(|&v| v as i64).collect();
    Json::default()
        .ints("sizes", &sizes)
        .nums("schedule_ns_per_op", &sched)
        .nums("cancel_ns_per_op", &canc)
        .ints("pending_at_end", &left)
}

// ---------------------------------------------------------------------------------------
// Machine floor for W6
// ---------------------------------------------------------------------------------------

/// The machine's own wake-up latency, for context: no pool, one thread parks with a 2 ms
/// timeout (a futex wait with timeout, the primitive under the pools' timed waits) until
/// the deadline has passed, N times; lateness measured as in W6. A pool cannot wake a
/// worker sooner than this.
pub fn timer_floor(p: &Params) -> Json {
    let n = p.wake_n;
    let lat: Vec<AtomicI64> = (0..n).map(|_| AtomicI64::new(0)).collect();
    for slot in &lat {
        let deadline = now_ns() + 2 * MS;
        loop {
            let now = now_ns();
            if now >= deadline {
                break;
            }
            std::thread::park_timeout(Duration::from_nanos(deadline - now));
        }
        slot.store(now_ns() as i64 - deadline as i64, Ordering::Relaxed);
    }
    lateness(Json::default().int("n", n as i64), "late_", &lat)
}
