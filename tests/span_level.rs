//! `Builder::task_span_level`: at the default (`TRACE`) an `info` filter records no `task`
//! span; at `INFO` it does, and a job's own `info` lines are inside it, so they carry the
//! task's context.
//!
//! One test in this binary: it installs a process-wide subscriber (the workers open their
//! spans on their own threads).

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use common::{manual_pool, sec, FieldMap, BOUND};
use schedpool::{ManualClock, ScheduledThreadPoolExecutor};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Records what an `info` filter lets through: spans (name, level, `pool` field) and the
/// events with the span they were in.
#[derive(Default)]
struct InfoFilter {
    next: AtomicU64,
    /// Span id -> (name, level, pool).
    spans: Mutex<HashMap<u64, (&'static str, Level, String)>>,
    /// (message, the span the event was in, if any).
    events: Mutex<Vec<(String, Option<u64>)>>,
    /// Span id -> the spans it follows from.
    follows: Mutex<HashMap<u64, Vec<u64>>>,
    meta: Mutex<HashMap<u64, &'static Metadata<'static>>>,
}

std::thread_local! {
    static CURRENT: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Subscriber for &'static InfoFilter {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= Level::INFO
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let mut f = FieldMap::default();
        attrs.record(&mut f);
        let pool = f.0.remove("pool").unwrap_or_default();
        self.spans.lock().unwrap().insert(
            id,
            (attrs.metadata().name(), *attrs.metadata().level(), pool),
        );
        self.meta.lock().unwrap().insert(id, attrs.metadata());
        Id::from_u64(id)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, span: &Id, follows: &Id) {
        self.follows
            .lock()
            .unwrap()
            .entry(span.into_u64())
            .or_default()
            .push(follows.into_u64());
    }
    fn event(&self, event: &Event<'_>) {
        let mut f = FieldMap::default();
        event.record(&mut f);
        let message = f.0.remove("message").unwrap_or_default();
        let current = CURRENT.with(|c| c.borrow().last().copied());
        self.events.lock().unwrap().push((message, current));
    }
    fn enter(&self, span: &Id) {
        CURRENT.with(|c| c.borrow_mut().push(span.into_u64()));
    }
    fn exit(&self, _: &Id) {
        CURRENT.with(|c| c.borrow_mut().pop());
    }
    fn current_span(&self) -> tracing_core::span::Current {
        match CURRENT.with(|c| c.borrow().last().copied()) {
            Some(id) => {
                tracing_core::span::Current::new(Id::from_u64(id), self.meta.lock().unwrap()[&id])
            }
            None => tracing_core::span::Current::none(),
        }
    }
}

/// The ids of the `task` spans of pool `pool`.
fn task_spans(rec: &InfoFilter, pool: &str) -> Vec<(u64, Level)> {
    rec.spans
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, (name, _, p))| *name == "task" && p == pool)
        .map(|(id, (_, level, _))| (*id, *level))
        .collect()
}

#[test]
fn the_task_span_is_recorded_at_the_level_the_builder_sets() {
    let rec: &'static InfoFilter = Box::leak(Box::default());
    tracing::subscriber::set_global_default(rec).expect("the only subscriber here");

    // The default: an `info` filter sees no task span, and the job's line is in none.
    let (clock, quiet) = manual_pool(1);
    let fut = quiet
        .schedule(sec(1), || tracing::info!(target: "app", "quiet job ran"))
        .unwrap();
    clock.advance(sec(1));
    assert!(fut.wait_timeout(BOUND));
    assert!(task_spans(rec, quiet.name()).is_empty());

    // At INFO: the task span is recorded, and the job's own info line is inside it.
    let clock = ManualClock::new();
    let loud = ScheduledThreadPoolExecutor::builder()
        .name("loud")
        .core_pool_size(1)
        .clock(clock.clone())
        .task_span_level(Level::INFO)
        .build();
    let fut = loud
        .schedule(sec(1), || tracing::info!(target: "app", "loud job ran"))
        .unwrap();
    clock.advance(sec(1));
    assert!(fut.wait_timeout(BOUND));
    let spans = task_spans(rec, "loud");
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert_eq!(spans[0].1, Level::INFO);
    let events = rec.events.lock().unwrap().clone();
    assert!(
        events.contains(&("loud job ran".to_owned(), Some(spans[0].0))),
        "the job's line is in its task span: {events:?}"
    );
    assert!(
        events.contains(&("quiet job ran".to_owned(), None)),
        "{events:?}"
    );

    // A task submitted inside an info span is linked to it at that level too.
    let request = tracing::info_span!(target: "app", "request");
    let request_id = request.id().expect("recorded at info").into_u64();
    let fut = request.in_scope(|| loud.schedule(sec(1), || ()).unwrap());
    clock.advance(sec(1));
    assert!(fut.wait_timeout(BOUND));
    let linked = rec.follows.lock().unwrap().clone();
    assert!(
        linked.values().any(|from| from.contains(&request_id)),
        "{linked:?}"
    );
    quiet.close();
    loud.close();
}
