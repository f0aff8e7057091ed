//! Heap benchmarks: the indexed heap as binary and 4-ary, against `std`'s `BinaryHeap`
//! (no handles, so no removal) where the operation exists.
//!
//! Entries have the executor's shape: a `u64` deadline, a `u64` sequence number and a
//! pointer-sized payload. Run with `cargo bench --bench heap`.

#![allow(missing_docs)] // criterion's macros generate undocumented items

#[path = "../src/queue/heap/mod.rs"]
#[allow(dead_code, unreachable_pub)]
mod heap;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use heap::{Handle, IndexedHeap, Ordered};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::time::Duration;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    deadline: u64,
    seq: u64,
    payload: usize,
}

impl Ordered for Entry {
    #[inline]
    fn before(&self, other: &Self) -> bool {
        (self.deadline, self.seq) < (other.deadline, other.seq)
    }
}

/// splitmix64: a fixed-seed generator, so every variant sees the same keys.
fn keys(n: usize) -> Vec<Entry> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|i| {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            Entry {
                deadline: (z ^ (z >> 31)) % 3_600_000_000_000,
                seq: i as u64,
                payload: i,
            }
        })
        .collect()
}

fn shuffled(n: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    let order = keys(n);
    idx.sort_by_key(|&i| order[i].deadline);
    idx
}

fn push_pop<const D: usize>(entries: &[Entry]) {
    let mut h = IndexedHeap::<Entry, D>::with_capacity(entries.len());
    for e in entries {
        h.push(*e);
    }
    while let Some(e) = h.pop() {
        black_box(e);
    }
}

fn push_remove<const D: usize>(entries: &[Entry], order: &[usize]) {
    let mut h = IndexedHeap::<Entry, D>::with_capacity(entries.len());
    let handles: Vec<Handle> = entries.iter().map(|e| h.push(*e)).collect();
    for &i in order {
        black_box(h.remove(handles[i]));
    }
}

/// The classic "hold" model: a heap of steady size n; pop the head, push a later entry.
fn hold<const D: usize>(h: &mut IndexedHeap<Entry, D>, rounds: usize, step: u64) {
    for _ in 0..rounds {
        let mut e = h.pop().expect("non-empty");
        e.deadline += step;
        e.seq += 1 << 32;
        h.push(e);
    }
}

fn bench(c: &mut Criterion) {
    for n in [1_000usize, 100_000] {
        let entries = keys(n);
        let order = shuffled(n);

        let mut g = c.benchmark_group(format!("heap/push_pop/{n}"));
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function("binary", |b| b.iter(|| push_pop::<2>(&entries)));
        g.bench_function("4-ary", |b| b.iter(|| push_pop::<4>(&entries)));
        g.bench_function("std BinaryHeap", |b| {
            b.iter(|| {
                let mut h = BinaryHeap::with_capacity(n);
                for e in &entries {
                    h.push(Reverse(*e));
                }
                while let Some(e) = h.pop() {
                    black_box(e);
                }
            })
        });
        g.finish();

        let mut g = c.benchmark_group(format!("heap/push_remove_random/{n}"));
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function("binary", |b| b.iter(|| push_remove::<2>(&entries, &order)));
        g.bench_function("4-ary", |b| b.iter(|| push_remove::<4>(&entries, &order)));
        g.finish();

        let mut g = c.benchmark_group(format!("heap/hold/{n}"));
        let rounds = 10_000;
        g.throughput(Throughput::Elements(rounds as u64));
        g.bench_with_input(BenchmarkId::new("binary", n), &entries, |b, entries| {
            b.iter_batched_ref(
                || {
                    let mut h = IndexedHeap::<Entry, 2>::with_capacity(n);
                    for e in entries {
                        h.push(*e);
                    }
                    h
                },
                |h| hold(h, rounds, 1_000_000_000),
                BatchSize::LargeInput,
            )
        });
        g.bench_with_input(BenchmarkId::new("4-ary", n), &entries, |b, entries| {
            b.iter_batched_ref(
                || {
                    let mut h = IndexedHeap::<Entry, 4>::with_capacity(n);
                    for e in entries {
                        h.push(*e);
                    }
                    h
                },
                |h| hold(h, rounds, 1_000_000_000),
                BatchSize::LargeInput,
            )
        });
        g.finish();
    }
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
