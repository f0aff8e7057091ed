//! A `tracing` subscriber that misbehaves where the pool calls it (issue 28, row 4): when
//! a worker creates, enters, leaves or closes a task's span, and on the pool's events. It
//! panics, or calls back into the pool, at each door in turn, and then blocks a worker.
//! The task runs anyway, its future completes, a periodic task is re-queued, shutdown
//! finishes; a call back into the pool returns (no lock of the pool is held at any door);
//! a block holds up only the worker it blocks.
//!
//! One test in this binary: it installs a process-wide subscriber (the workers call it on
//! their own threads), and runs the doors one after the other.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

use common::{close, counter, load, manual_pool, outcome, sec, wait_for, Gate};
use schedpool::{ScheduledThreadPoolExecutor, TaskError};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Where the subscriber panics now.
static PANIC_AT: AtomicU8 = AtomicU8::new(NOWHERE);
const NOWHERE: u8 = 0;
const NEW_SPAN: u8 = 1;
const ENTER: u8 = 2;
const EXIT: u8 = 3;
const CLOSE: u8 = 4;
const EVENT: u8 = 5;

/// What the subscriber does at `PANIC_AT`: panic, or call the pool in `POOL`.
static CALL_INSTEAD: AtomicBool = AtomicBool::new(false);
/// The pool a calling subscriber reads (queue, stats, task list).
static POOL: Mutex<Option<ScheduledThreadPoolExecutor>> = Mutex::new(None);
/// How many times the subscriber called the pool and got an answer.
static CALLS: AtomicU64 = AtomicU64::new(0);
/// The gate a worker's first span entry waits at, in the blocking round.
static BLOCK: Mutex<Option<Gate>> = Mutex::new(None);
/// The blocking round's worker threads' name prefix.
const BLOCKED_PREFIX: &str = "blocked-by-subscriber-";

fn panic_if(at: u8) {
    if PANIC_AT.load(Ordering::SeqCst) == at {
        if CALL_INSTEAD.load(Ordering::SeqCst) {
            let pool = POOL.lock().unwrap().clone();
            if let Some(pool) = pool {
                let _ = pool.queue_len();
                let _ = pool.stats();
                let _ = pool.scheduled_tasks();
                CALLS.fetch_add(1, Ordering::SeqCst);
            }
        } else {
            panic!("a subscriber that panics");
        }
    }
}

/// In the blocking round: the first span entry on one of its workers waits at the gate.
fn block_if_first() {
    let on_worker = std::thread::current()
        .name()
        .is_some_and(|n| n.starts_with(BLOCKED_PREFIX));
    if on_worker {
        let gate = BLOCK.lock().unwrap().take();
        if let Some(gate) = gate {
            gate.wait();
        }
    }
}

struct Panicky {
    next: AtomicU64,
}

impl Subscriber for Panicky {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        panic_if(NEW_SPAN);
        Id::from_u64(self.next.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {
        panic_if(EVENT);
    }
    fn enter(&self, _: &Id) {
        panic_if(ENTER);
        block_if_first();
    }
    fn exit(&self, _: &Id) {
        panic_if(EXIT);
    }
    fn try_close(&self, _: Id) -> bool {
        panic_if(CLOSE);
        true
    }
}

/// One round: one-shots, a panicking one-shot, and a periodic task over three ticks.
fn round(door: u8) {
    PANIC_AT.store(NOWHERE, Ordering::SeqCst);
    let (clock, pool) = manual_pool(2);
    *POOL.lock().unwrap() = Some(pool.clone());
    let ran = counter();
    let r = ran.clone();
    let periodic = pool
        .schedule_at_fixed_rate(sec(1), sec(1), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    PANIC_AT.store(door, Ordering::SeqCst);
    let shots: Vec<_> = (0..20u32)
        .map(|i| pool.submit(move || i).unwrap())
        .collect();
    let boom = pool
        .submit(|| -> u32 { panic!("a task that panics") })
        .unwrap();
    for (i, f) in shots.into_iter().enumerate() {
        assert_eq!(outcome(f).unwrap(), i as u32, "door {door}: a one-shot ran");
    }
    assert!(
        matches!(outcome(boom), Err(TaskError::Panicked(_))),
        "door {door}"
    );
    for tick in 1..=3 {
        clock.advance(sec(1));
        wait_for("the periodic run", || load(&ran) == tick);
    }
    assert!(periodic.cancel());
    close(&pool);
    PANIC_AT.store(NOWHERE, Ordering::SeqCst);
    POOL.lock().unwrap().take();
}

/// The blocking round: a worker's first span entry blocks until the gate opens; the
/// other worker runs every task meanwhile, and the blocked one's task runs after.
fn blocking_round() {
    let gate = Gate::default();
    *BLOCK.lock().unwrap() = Some(gate.clone());
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .thread_name_prefix(BLOCKED_PREFIX)
        .build();
    let first = pool.submit(|| 0u32).unwrap();
    wait_for("a worker to block in the subscriber", || {
        BLOCK.lock().unwrap().is_none()
    });
    let rest: Vec<_> = (1..=20u32)
        .map(|i| pool.submit(move || i).unwrap())
        .collect();
    for (i, f) in (1..).zip(rest) {
        assert_eq!(outcome(f).unwrap(), i, "the other worker ran it");
    }
    gate.open();
    let _ = outcome(first); // the blocked worker's task, if it was the first
    close(&pool);
}

#[test]
fn a_panicking_subscriber_costs_its_lines_never_a_task() {
    tracing::subscriber::set_global_default(Panicky {
        next: AtomicU64::new(0),
    })
    .expect("the only subscriber of this binary");
    for door in [NEW_SPAN, ENTER, EXIT, CLOSE, EVENT] {
        round(door);
    }
    CALL_INSTEAD.store(true, Ordering::SeqCst);
    for door in [NEW_SPAN, ENTER, EXIT, CLOSE, EVENT] {
        let before = CALLS.load(Ordering::SeqCst);
        round(door);
        assert!(
            CALLS.load(Ordering::SeqCst) > before,
            "door {door}: the subscriber called the pool, and it answered"
        );
    }
    CALL_INSTEAD.store(false, Ordering::SeqCst);
    blocking_round();
}
