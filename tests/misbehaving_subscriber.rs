//! A `tracing` subscriber that panics where the pool calls it (issue 28, row 4): when a
//! worker creates, enters, leaves or closes a task's span, and on the pool's events. The
//! task runs anyway, its future completes, a periodic task is re-queued, shutdown finishes.
//!
//! One test in this binary: it installs a process-wide subscriber (the workers call it on
//! their own threads), and runs the doors one after the other.

mod common;

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use common::{close, counter, load, manual_pool, outcome, sec, wait_for};
use schedpool::TaskError;
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

fn panic_if(at: u8) {
    if PANIC_AT.load(Ordering::SeqCst) == at {
        panic!("a subscriber that panics");
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
}
