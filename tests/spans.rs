//! The `task` span: its fields (`pool`, `task_name`, `kind`), the names of one-shots, and its
//! link to the span the task was submitted in (`follows_from`), which the task holds open
//! until its closure is dropped.
//!
//! One test in this binary: it installs a process-wide subscriber (the workers open their
//! spans on their own threads, so a thread-local one would miss them).

mod common;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use common::{manual_pool, sec, wait_until, FieldMap, BOUND};
use schedpool::{Periodic, ScheduledFuture, TaskContext, TaskError};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};
use tracing_core::span::Current;

/// What the subscriber knows of one span.
#[derive(Clone, Debug, Default)]
struct SpanRec {
    name: &'static str,
    fields: HashMap<&'static str, String>,
    /// The spans this one follows from.
    follows: Vec<u64>,
    /// Open handles (`new_span` and `clone_span` add one, `try_close` takes one).
    refs: u64,
    closed: bool,
}

#[derive(Default)]
struct Recorder {
    next: AtomicU64,
    spans: Mutex<HashMap<u64, SpanRec>>,
    meta: Mutex<HashMap<u64, &'static Metadata<'static>>>,
    /// `(message, name field)` of every event (`"-"` for an event without the field).
    events: Mutex<Vec<(String, String)>>,
}

thread_local! {
    /// The spans this thread is in, innermost last.
    static STACK: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

impl Recorder {
    fn span(&self, id: u64) -> SpanRec {
        self.spans.lock().unwrap()[&id].clone()
    }

    /// The `task` spans whose `name` field is `name`.
    fn tasks_named(&self, name: &str) -> Vec<SpanRec> {
        self.spans
            .lock()
            .unwrap()
            .values()
            .filter(|s| {
                s.name == "task" && s.fields.get("task_name").map(String::as_str) == Some(name)
            })
            .cloned()
            .collect()
    }
}

impl Subscriber for &'static Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let mut fields = FieldMap::default();
        attrs.record(&mut fields);
        let rec = SpanRec {
            name: attrs.metadata().name(),
            fields: fields.0,
            refs: 1,
            ..SpanRec::default()
        };
        self.spans.lock().unwrap().insert(id, rec);
        self.meta.lock().unwrap().insert(id, attrs.metadata());
        Id::from_u64(id)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, span: &Id, follows: &Id) {
        if let Some(s) = self.spans.lock().unwrap().get_mut(&span.into_u64()) {
            s.follows.push(follows.into_u64());
        }
    }
    fn event(&self, event: &Event<'_>) {
        let mut f = FieldMap::default();
        event.record(&mut f);
        let message = f.0.get("message").cloned().unwrap_or_default();
        let name = f.0.get("task_name").cloned().unwrap_or_else(|| "-".into());
        self.events.lock().unwrap().push((message, name));
    }
    fn enter(&self, span: &Id) {
        STACK.with(|s| s.borrow_mut().push(span.into_u64()));
    }
    fn exit(&self, _: &Id) {
        STACK.with(|s| s.borrow_mut().pop());
    }
    fn current_span(&self) -> Current {
        match STACK.with(|s| s.borrow().last().copied()) {
            Some(id) => Current::new(Id::from_u64(id), self.meta.lock().unwrap()[&id]),
            None => Current::none(),
        }
    }
    fn clone_span(&self, id: &Id) -> Id {
        if let Some(s) = self.spans.lock().unwrap().get_mut(&id.into_u64()) {
            s.refs += 1;
        }
        id.clone()
    }
    fn try_close(&self, id: Id) -> bool {
        let mut spans = self.spans.lock().unwrap();
        let Some(s) = spans.get_mut(&id.into_u64()) else {
            return false;
        };
        s.refs -= 1;
        s.closed = s.refs == 0;
        s.closed
    }
}

/// The outcome of `fut`, which must complete within [`BOUND`].
fn got<T>(fut: ScheduledFuture<T>) -> Result<T, TaskError> {
    assert!(fut.wait_timeout(BOUND), "the task completes");
    fut.get()
}

#[test]
fn task_spans_carry_name_and_kind_and_follow_from_the_submitters_span() {
    let rec: &'static Recorder = Box::leak(Box::default());
    tracing::subscriber::set_global_default(rec).expect("the only subscriber here");
    let (clock, pool) = manual_pool(2);

    // A named one-shot submitted inside a request's span: its task span follows from it,
    // and the request's span stays open until the task has run, though the caller closed
    // its own handle long before.
    let request = tracing::info_span!(target: "app", "request");
    let request_id = request.id().unwrap().into_u64();
    let timeouts = pool.named("request-timeout");
    let fut = request.in_scope(|| timeouts.schedule(sec(5), || 7).unwrap());
    drop(request);
    assert!(
        !rec.span(request_id).closed,
        "the queued task holds the submitter's span"
    );
    let queued = pool.scheduled_tasks();
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].name.as_deref(), Some("request-timeout"));
    assert_eq!(queued[0].kind, schedpool::TaskKind::Once);
    clock.advance(sec(5));
    assert_eq!(got(fut).unwrap(), 7);
    let spans = rec.tasks_named("request-timeout");
    assert_eq!(spans.len(), 1, "{spans:?}");
    let task = &spans[0];
    assert_eq!(
        task.fields["id"],
        queued[0].id.to_string(),
        "the task list's id is the span's"
    );
    assert_eq!(task.fields["kind"], "once");
    assert_eq!(task.fields["pool"], pool.name());
    assert_eq!(
        task.follows,
        vec![request_id],
        "linked to the submitter's span"
    );
    assert!(
        wait_until(|| rec.span(request_id).closed),
        "the submitter's span is released once the closure is gone"
    );

    // Each kind of periodic task names its kind; each run's span follows from the span
    // the task was submitted in.
    let setup = tracing::info_span!(target: "app", "setup");
    let setup_id = setup.id().unwrap().into_u64();
    let (rate, delay) = setup.in_scope(|| {
        let rate = pool
            .schedule_periodic(
                Periodic::at_fixed_rate(sec(1)).name("metrics").max_runs(2),
                || (),
            )
            .unwrap();
        let delay = pool
            .schedule_periodic(
                Periodic::with_fixed_delay(sec(1))
                    .name("poller")
                    .max_runs(1),
                || (),
            )
            .unwrap();
        (rate, delay)
    });
    drop(setup);
    for n in 1..=2 {
        clock.advance(sec(1));
        assert!(wait_until(|| rec.tasks_named("metrics").len() >= n));
        assert!(pool.wait_idle(BOUND));
    }
    assert!(got(rate).is_ok() && got(delay).is_ok());
    let metrics = rec.tasks_named("metrics");
    assert_eq!(metrics.len(), 2, "{metrics:?}");
    assert!(metrics
        .iter()
        .all(|s| s.fields["kind"] == "fixed_rate" && s.follows == vec![setup_id]));
    let poller = rec.tasks_named("poller");
    assert_eq!(poller.len(), 1, "{poller:?}");
    assert_eq!(poller[0].fields["kind"], "fixed_delay");
    assert_eq!(
        metrics[0].fields["id"], metrics[1].fields["id"],
        "a periodic task keeps its id across runs"
    );
    assert_ne!(metrics[0].fields["id"], poller[0].fields["id"]);
    assert!(wait_until(|| rec.span(setup_id).closed));

    // Task ids are never reused in the pool's life: each of these one-shots is freed
    // before the next is allocated, so an id that was the task's address repeated.
    let sequential = pool.named("sequential");
    for _ in 0..50 {
        got(sequential.submit(|| ()).unwrap()).unwrap();
    }
    let ids: std::collections::HashSet<u64> = rec
        .tasks_named("sequential")
        .iter()
        .map(|s| s.fields["id"].parse().expect("a readable number"))
        .collect();
    assert_eq!(ids.len(), 50, "{ids:?}");

    // Outside any span: no link. A named context closure sees its name.
    let fut = pool
        .named("plain")
        .schedule_with_context(Duration::ZERO, |ctx: &TaskContext<'_>| {
            ctx.name().map(str::to_owned)
        })
        .unwrap();
    assert_eq!(got(fut).unwrap().as_deref(), Some("plain"));
    let plain = rec.tasks_named("plain");
    assert_eq!(plain.len(), 1);
    assert!(plain[0].follows.is_empty(), "{plain:?}");

    // A named one-shot's panic log carries its name; a cancelled one releases its span.
    let fut = pool
        .named("doomed")
        .submit(|| -> u8 { panic!("boom") })
        .unwrap();
    assert!(got(fut).unwrap_err().is_panicked());
    assert!(wait_until(|| rec
        .events
        .lock()
        .unwrap()
        .iter()
        .any(|(m, n)| m == "task panicked" && n == "doomed")));
    let cancelled = tracing::info_span!(target: "app", "cancelled");
    let cancelled_id = cancelled.id().unwrap().into_u64();
    let fut = cancelled.in_scope(|| pool.schedule(sec(60), || ()).unwrap());
    drop(cancelled);
    assert!(!rec.span(cancelled_id).closed);
    assert!(fut.cancel());
    assert!(
        rec.span(cancelled_id).closed,
        "a cancel drops the closure, and the span with it"
    );

    // An unnamed task's span and panic log leave `task_name` out; a task named "" records
    // it, empty: the two are told apart.
    let fut = pool.submit(|| -> u8 { panic!("anonymous boom") }).unwrap();
    assert!(got(fut).unwrap_err().is_panicked());
    let fut = pool.named("").submit(|| 1).unwrap();
    assert_eq!(got(fut).unwrap(), 1);
    assert!(wait_until(|| rec
        .events
        .lock()
        .unwrap()
        .iter()
        .any(|(m, n)| m == "task panicked" && n == "-")));
    let spans = rec.spans.lock().unwrap();
    let tasks = spans.values().filter(|s| s.name == "task");
    let (named_empty, unnamed) = tasks.fold((0, 0), |(e, u), s| match s.fields.get("task_name") {
        Some(n) if n.is_empty() => (e + 1, u),
        None => (e, u + 1),
        Some(_) => (e, u),
    });
    drop(spans);
    assert_eq!(named_empty, 1, "the task named \"\"");
    assert!(unnamed >= 1, "unnamed tasks have no task_name field");
    pool.close();

    // The late-start warning, written outside the task's span, names the task itself (a
    // pool of its own: its warnings are not held back by the other pool's).
    let (clock, late_pool) = manual_pool(1);
    let fut = late_pool
        .named("late-report")
        .schedule(sec(1), || ())
        .unwrap();
    clock.advance(sec(10)); // nine seconds late
    got(fut).unwrap();
    assert!(wait_until(|| rec
        .events
        .lock()
        .unwrap()
        .iter()
        .any(|(m, n)| m == "task started late" && n == "late-report")));
    late_pool.close();
}
