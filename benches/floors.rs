//! This machine's physical floors: what a cache miss, an uncontended lock, a clock read, a
//! futex hand-off between threads, a cache line bouncing between cores and a small
//! allocation cost here, so that per-operation costs (`scripts/opcount.sh`) can be read
//! against them.
//!
//! `cargo bench --bench floors`. Plain `Instant` timing, each figure the median of
//! `REPEATS` runs (with the smallest and largest), printed as a markdown table. About 15
//! seconds; needs about 300 MiB of memory.

#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

const REPEATS: usize = 7;

/// Runs `f` `REPEATS` times; `f` returns (elapsed, operations); yields ns/op figures.
fn measure(mut f: impl FnMut() -> (Duration, u64)) -> Vec<f64> {
    let mut v: Vec<f64> = (0..REPEATS)
        .map(|_| {
            let (d, ops) = f();
            d.as_nanos() as f64 / ops as f64
        })
        .collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

fn row(what: &str, unit: &str, v: &[f64]) {
    println!(
        "| {what} | {:.1} | {:.1}–{:.1} | {unit} |",
        v[v.len() / 2],
        v[0],
        v[v.len() - 1]
    );
}

/// xorshift64*: a fixed-seed generator for the permutation.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// One cache line; the chase stores the next line's index in the first word.
#[repr(align(64))]
#[derive(Clone, Copy)]
struct Line([u64; 8]);

/// `lines` cache lines linked into one random cycle (Sattolo's algorithm), so every hop
/// goes to an unpredictable line and depends on the previous load.
fn cycle(lines: usize) -> Vec<Line> {
    let mut order: Vec<u64> = (0..lines as u64).collect();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for i in (1..lines).rev() {
        let j = (rng.next() % i as u64) as usize; // j < i: one single cycle
        order.swap(i, j);
    }
    let mut mem = vec![Line([0; 8]); lines];
    for w in 0..lines {
        mem[order[w] as usize].0[0] = order[(w + 1) % lines];
    }
    mem
}

fn chase(mem: &[Line], hops: u64) -> (Duration, u64) {
    let mut at = 0u64;
    let start = Instant::now();
    for _ in 0..hops {
        at = mem[at as usize].0[0];
    }
    let d = start.elapsed();
    black_box(at);
    (d, hops)
}

fn pointer_chase(bytes: usize, hops: u64) -> Vec<f64> {
    let mem = cycle(bytes / 64);
    chase(&mem, hops / 4); // warm-up: page faults, TLB, caches
    measure(|| chase(&mem, hops))
}

fn mutex() -> Vec<f64> {
    let m = parking_lot::Mutex::new(0u64);
    let n = 5_000_000;
    measure(|| {
        let start = Instant::now();
        for _ in 0..n {
            *black_box(&m).lock() += 1;
        }
        (start.elapsed(), n)
    })
}

fn clock_read() -> Vec<f64> {
    let n = 2_000_000;
    measure(|| {
        let start = Instant::now();
        for _ in 0..n {
            black_box(Instant::now());
        }
        (start.elapsed(), n)
    })
}

/// Two threads hand a turn back and forth with `park`/`unpark`: each hand-off wakes a
/// parked thread (a futex wake, the wake-up, the futex wait returning). ns per one-way
/// hand-off.
fn park_ping_pong() -> Vec<f64> {
    let rounds: u64 = 20_000;
    measure(|| {
        let turn = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::channel();
        let me = thread::current();
        let t = turn.clone();
        let peer = thread::spawn(move || {
            tx.send(thread::current()).expect("main waits");
            for i in 0..rounds {
                while t.load(Ordering::Acquire) != 2 * i + 1 {
                    thread::park();
                }
                t.store(2 * i + 2, Ordering::Release);
                me.unpark();
            }
        });
        let peer_handle = rx.recv().expect("peer started");
        let start = Instant::now();
        for i in 0..rounds {
            turn.store(2 * i + 1, Ordering::Release);
            peer_handle.unpark();
            while turn.load(Ordering::Acquire) != 2 * i + 2 {
                thread::park();
            }
        }
        let d = start.elapsed();
        peer.join().expect("peer");
        (d, 2 * rounds)
    })
}

#[repr(align(128))]
struct Padded(AtomicU64);

/// Two threads on two cores bounce a value through two atomics on separate cache lines,
/// each spinning until the other's store arrives: ns per one-way transfer of a line.
fn line_ping_pong() -> Vec<f64> {
    let rounds: u64 = 200_000;
    measure(|| {
        let ping = Arc::new(Padded(AtomicU64::new(0)));
        let pong = Arc::new(Padded(AtomicU64::new(0)));
        let ready = Arc::new(AtomicBool::new(false));
        let (pi, po, r) = (ping.clone(), pong.clone(), ready.clone());
        let peer = thread::spawn(move || {
            r.store(true, Ordering::Release);
            for i in 1..=rounds {
                while pi.0.load(Ordering::Acquire) != i {
                    std::hint::spin_loop();
                }
                po.0.store(i, Ordering::Release);
            }
        });
        while !ready.load(Ordering::Acquire) {
            std::hint::spin_loop();
        }
        let start = Instant::now();
        for i in 1..=rounds {
            ping.0.store(i, Ordering::Release);
            while pong.0.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
        }
        let d = start.elapsed();
        peer.join().expect("peer");
        (d, 2 * rounds)
    })
}

type Block = Box<[u8; 64]>;

fn alloc_loop() -> Vec<f64> {
    let n = 5_000_000;
    measure(|| {
        let start = Instant::now();
        for _ in 0..n {
            drop(black_box(Box::new([0u8; 64])));
        }
        (start.elapsed(), n)
    })
}

const BATCH: usize = 1_000;
const BATCHES: usize = 200;

/// Allocates `BATCH` blocks into `v` and returns the time taken.
fn fill(v: &mut Vec<Block>) -> Duration {
    let start = Instant::now();
    for _ in 0..BATCH {
        v.push(black_box(Box::new([0u8; 64])));
    }
    start.elapsed()
}

fn free(v: &mut Vec<Block>) -> Duration {
    let start = Instant::now();
    v.clear();
    start.elapsed()
}

/// Allocate a batch, free it on the same thread; the time of both, per block.
fn alloc_batch_same() -> Vec<f64> {
    let mut v = Vec::with_capacity(BATCH);
    measure(|| {
        let mut d = Duration::ZERO;
        for _ in 0..BATCHES {
            d += fill(&mut v);
            d += free(&mut v);
        }
        (d, (BATCH * BATCHES) as u64)
    })
}

/// Allocate a batch here, free it on another thread (as a task allocated by the caller
/// and dropped by a worker); the allocating and the freeing time, per block, not counting
/// the hand-offs between the threads.
fn alloc_batch_remote() -> Vec<f64> {
    let (to_peer, peer_rx) = mpsc::channel::<Vec<Block>>();
    let (to_main, main_rx) = mpsc::channel::<(Vec<Block>, Duration)>();
    let peer = thread::spawn(move || {
        for mut v in peer_rx {
            let d = free(&mut v);
            to_main.send((v, d)).expect("main waits");
        }
    });
    let mut v = Some(Vec::with_capacity(BATCH));
    let figures = measure(|| {
        let mut d = Duration::ZERO;
        for _ in 0..BATCHES {
            let mut batch = v.take().expect("returned");
            d += fill(&mut batch);
            to_peer.send(batch).expect("peer alive");
            let (batch, freed) = main_rx.recv().expect("peer alive");
            d += freed;
            v = Some(batch);
        }
        (d, (BATCH * BATCHES) as u64)
    });
    drop(to_peer);
    peer.join().expect("peer");
    figures
}

fn main() {
    let started = Instant::now();
    println!(
        "Floors: median of {REPEATS} runs (min–max); {} CPUs.\n",
        thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("| floor | median | min–max | unit |");
    println!("|---|---:|---:|---|");
    row(
        "dependent load, random cycle over 256 MiB (beyond L3: DRAM, TLB miss)",
        "ns per load",
        &pointer_chase(256 << 20, 2_000_000),
    );
    row(
        "dependent load, random cycle over 32 MiB (fits L3, not L2)",
        "ns per load",
        &pointer_chase(32 << 20, 4_000_000),
    );
    row(
        "dependent load, random cycle over 1 MiB (fits L2, not L1)",
        "ns per load",
        &pointer_chase(1 << 20, 10_000_000),
    );
    row(
        "dependent load, random cycle over 16 KiB (fits L1)",
        "ns per load",
        &pointer_chase(16 << 10, 10_000_000),
    );
    row(
        "`parking_lot::Mutex` lock + unlock, uncontended",
        "ns per pair",
        &mutex(),
    );
    row("`Instant::now()`", "ns per call", &clock_read());
    row(
        "futex hand-off: `park`/`unpark` ping-pong, 2 threads",
        "ns per one-way hand-off",
        &park_ping_pong(),
    );
    row(
        "cache-line ping-pong: 2 threads spinning on 2 atomics",
        "ns per one-way transfer",
        &line_ping_pong(),
    );
    row(
        "`Box<[u8; 64]>` new + drop, same thread, one at a time",
        "ns per block",
        &alloc_loop(),
    );
    row(
        "`Box<[u8; 64]>`: 1 000 new then 1 000 drop, same thread",
        "ns per block",
        &alloc_batch_same(),
    );
    row(
        "`Box<[u8; 64]>`: 1 000 new here, 1 000 drop on another thread",
        "ns per block",
        &alloc_batch_remote(),
    );
    println!("\n(took {:.1} s)", started.elapsed().as_secs_f64());
}
