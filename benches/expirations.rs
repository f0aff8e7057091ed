//! Idle timeouts on a tokio runtime through a delay queue's stream of expirations:
//! schedpool's `DelayQueue::expirations` against tokio-util's `DelayQueue`, the path a
//! tokio user tries first. Not a criterion bench: what it measures is the whole process's
//! CPU time and wake-ups over a fixed stretch of real time, which criterion's iterations
//! cannot express.
//!
//! The workload: `EXP_CONNS` connections (10,000) each hold one timeout `EXP_TIMEOUT_MS`
//! (5,000 ms) ahead, first spread evenly over the timeout. One task, on a multi-thread
//! runtime with `EXP_WORKERS` workers (2), selects over a tick of `EXP_REARMS` re-arms a
//! second (1,000: a packet on a random connection, fixed-seed xorshift, pushes its timeout
//! back to a full timeout from now) and the queue's next expiration (the connection is
//! closed and a new one takes its place with a full timeout), for `EXP_SECS` seconds
//! (10). Every expiration is a wake-up of the consumer in both systems; a re-arm of the
//! earliest timeout moves the head to a later deadline.
//!
//! It prints one line per system: the process's CPU time (user + system, from
//! `/proc/self/stat`, all threads), the expirations and re-arms done, the context switches
//! of the threads alive at the end (`/proc/self/task/*/status`) and the lateness of the
//! expirations (delivery time minus deadline). For the futex calls, run it under strace:
//!
//! ```sh
//! cargo bench --bench expirations --no-run
//! strace -f -c -e trace=futex target/release/deps/expirations-* schedpool
//! ```
//!
//! Usage: `cargo bench --features tokio --bench expirations [-- SYSTEM]`, SYSTEM one of
//! `schedpool` (`expirations()`), `schedpool-on-tokio-timer` (`expirations()
//! .on_tokio_timer()`, with the feature) and `tokio-util` (all by default).
//! Results: `docs/BENCHMARKS.md`, "Idle timeouts through `expirations()`".

use std::future::poll_fn;
use std::time::{Duration, Instant};

use futures_core::Stream;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Params {
    conns: u32,
    timeout: Duration,
    rearms_per_s: u64,
    run: Duration,
    workers: usize,
}

impl Params {
    fn from_env() -> Self {
        Params {
            conns: env("EXP_CONNS", 10_000) as u32,
            timeout: Duration::from_millis(env("EXP_TIMEOUT_MS", 5_000)),
            rearms_per_s: env("EXP_REARMS", 1_000).max(1),
            run: Duration::from_secs(env("EXP_SECS", 10)),
            workers: env("EXP_WORKERS", 2).max(1) as usize,
        }
    }

    /// Connection `i`'s first timeout: spread evenly over one timeout.
    fn first(&self, i: u32) -> Duration {
        self.timeout * (i + 1) / self.conns
    }
}

/// The run's counts.
#[derive(Default)]
struct Tally {
    expired: u64,
    rearmed: u64,
    /// Delivery time minus deadline, in microseconds, one per expiration.
    lateness_us: Vec<u64>,
}

impl Tally {
    /// An element due at `deadline` came out now.
    fn expired(&mut self, deadline: Instant) {
        let late = Instant::now().saturating_duration_since(deadline);
        self.lateness_us.push(late.as_micros() as u64);
        self.expired += 1;
    }
}

struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u32) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % u64::from(n)) as u32
    }
}

/// The process's CPU time so far (user + system, every thread, live or exited).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at ")".
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // utime and stime are fields 14 and 15 of the line: 12 and 13 after ")".
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    // USER_HZ is 100 on every Linux build that matters here.
    Duration::from_millis(ticks * 10)
}

/// Context switches, voluntary and not, of the threads alive now.
fn context_switches() -> (u64, u64) {
    let mut sums = (0, 0);
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return sums;
    };
    for task in tasks.flatten() {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        for line in status.lines() {
            let number = |l: &str| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            if line.starts_with("voluntary_ctxt_switches") {
                sums.0 += number(line);
            } else if line.starts_with("nonvoluntary_ctxt_switches") {
                sums.1 += number(line);
            }
        }
    }
    sums
}

fn runtime(p: &Params) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(p.workers)
        .enable_time()
        .build()
        .expect("a tokio runtime")
}

/// Runs `work` on a fresh runtime; its tally and the context switches of the threads alive
/// at its end.
fn on_runtime(p: &Params, work: impl std::future::Future<Output = Tally>) -> (Tally, (u64, u64)) {
    let rt = runtime(p);
    let tally = rt.block_on(work);
    let switches = context_switches();
    drop(rt);
    (tally, switches)
}

fn rearm_tick(p: &Params) -> tokio::time::Interval {
    let mut tick = tokio::time::interval(Duration::from_nanos(1_000_000_000 / p.rearms_per_s));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    tick
}

fn schedpool(p: &Params) -> (Tally, (u64, u64)) {
    schedpool_with(p, schedpool::DelayQueue::expirations)
}

/// The workload on schedpool's queue, through the stream `stream` makes.
fn schedpool_with(
    p: &Params,
    stream: impl FnOnce(&schedpool::DelayQueue<u32>) -> schedpool::Expirations<u32>,
) -> (Tally, (u64, u64)) {
    on_runtime(p, async {
        let q = schedpool::DelayQueue::new();
        let mut keys: Vec<_> = (0..p.conns).map(|i| q.offer(i, p.first(i))).collect();
        let mut expired = stream(&q);
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let mut tick = rearm_tick(p);
        let end = tokio::time::sleep(p.run);
        tokio::pin!(end);
        let mut t = Tally::default();
        loop {
            tokio::select! {
                biased;
                _ = &mut end => break,
                _ = tick.tick() => {
                    let i = rng.below(p.conns);
                    if q.reset(keys[i as usize], p.timeout) {
                        t.rearmed += 1;
                    }
                }
                e = poll_fn(|cx| std::pin::Pin::new(&mut expired).poll_next(cx)) => {
                    let e = e.expect("the queue stays open");
                    t.expired(e.deadline());
                    let i = e.into_inner();
                    keys[i as usize] = q.offer(i, p.timeout);
                }
            }
        }
        t
    })
}

/// `expirations().on_tokio_timer()` (feature `tokio`): the stream asleep on tokio's timer
/// wheel instead of the queue's timer thread.
#[cfg(feature = "tokio")]
fn schedpool_on_tokio_timer(p: &Params) -> (Tally, (u64, u64)) {
    schedpool_with(p, |q| q.expirations().on_tokio_timer())
}

fn tokio_util(p: &Params) -> (Tally, (u64, u64)) {
    on_runtime(p, async {
        let mut q = tokio_util::time::DelayQueue::with_capacity(p.conns as usize);
        let mut keys: Vec<_> = (0..p.conns).map(|i| q.insert(i, p.first(i))).collect();
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let mut tick = rearm_tick(p);
        let end = tokio::time::sleep(p.run);
        tokio::pin!(end);
        let mut t = Tally::default();
        loop {
            tokio::select! {
                biased;
                _ = &mut end => break,
                _ = tick.tick() => {
                    let i = rng.below(p.conns);
                    q.reset(&keys[i as usize], p.timeout);
                    t.rearmed += 1;
                }
                e = poll_fn(|cx| q.poll_expired(cx)) => {
                    let e = e.expect("the queue is never empty");
                    t.expired(e.deadline().into_std());
                    let i = e.into_inner();
                    keys[i as usize] = q.insert(i, p.timeout);
                }
            }
        }
        t
    })
}

fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    // `cargo bench` passes `--bench`; a system name picks one.
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let p = Params::from_env();
    println!(
        "idle timeouts: {} connections, timeout {} ms, {} re-arms/s, {} s, {} tokio workers",
        p.conns,
        p.timeout.as_millis(),
        p.rearms_per_s,
        p.run.as_secs(),
        p.workers
    );
    type Run = fn(&Params) -> (Tally, (u64, u64));
    let systems: &[(&str, Run)] = &[
        ("schedpool", schedpool),
        #[cfg(feature = "tokio")]
        ("schedpool-on-tokio-timer", schedpool_on_tokio_timer),
        ("tokio-util", tokio_util),
    ];
    for &(name, run) in systems {
        if !wanted.is_empty() && !wanted.iter().any(|w| w == name) {
            continue;
        }
        let cpu0 = cpu_time();
        let (mut t, (vol, invol)) = run(&p);
        let cpu = cpu_time() - cpu0;
        t.lateness_us.sort_unstable();
        println!(
            "{name:>24}: cpu {:.2} s, {} expired, {} re-armed, {vol} voluntary + {invol} \
             involuntary context switches, lateness p50 {} us p99 {} us max {} us",
            cpu.as_secs_f64(),
            t.expired,
            t.rearmed,
            percentile(&t.lateness_us, 0.5),
            percentile(&t.lateness_us, 0.99),
            t.lateness_us.last().copied().unwrap_or(0),
        );
    }
}
