//! The `metrics` feature against a recorder: every series of `docs/METRICS.md`, with
//! exact values for a schedule on a `ManualClock`.
#![cfg(feature = "metrics")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use metrics::Key;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::CompositeKey;
use schedpool::cluster::{ClusterLock, Exclusive, Lease, LocalLock, LockError};
use schedpool::{ManualClock, Next, OnPanic, Periodic, ScheduledThreadPoolExecutor};

mod common;
use common::{sec, wait_until, Gate, BOUND};

/// What a recorder holds, by name and labels (`"name{a=1,b=2}"`).
struct Seen(HashMap<String, DebugValue>);

impl Seen {
    fn take(snapshots: &Snapshotter) -> Seen {
        let mut all = HashMap::new();
        for (key, _, _, value) in snapshots.snapshot().into_vec() {
            all.insert(render(&key), value);
        }
        Seen(all)
    }

    fn counter(&self, series: &str) -> u64 {
        match self.0.get(series) {
            Some(DebugValue::Counter(n)) => *n,
            other => panic!("{series}: {other:?} in {:?}", self.names()),
        }
    }

    fn gauge(&self, series: &str) -> f64 {
        match self.0.get(series) {
            Some(DebugValue::Gauge(g)) => g.into_inner(),
            other => panic!("{series}: {other:?}"),
        }
    }

    fn histogram(&self, series: &str) -> Vec<f64> {
        match self.0.get(series) {
            Some(DebugValue::Histogram(h)) => h.iter().map(|v| v.into_inner()).collect(),
            None => Vec::new(),
            other => panic!("{series}: {other:?}"),
        }
    }

    fn names(&self) -> Vec<&String> {
        let mut names: Vec<_> = self.0.keys().collect();
        names.sort();
        names
    }
}

fn render(key: &CompositeKey) -> String {
    let k: &Key = key.key();
    let mut labels: Vec<String> = k
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    labels.sort();
    format!("{}{{{}}}", k.name(), labels.join(","))
}

/// A pool on a manual clock that publishes only when asked.
fn pool(name: &str, clock: &ManualClock) -> ScheduledThreadPoolExecutor {
    ScheduledThreadPoolExecutor::builder()
        .name(name)
        .core_pool_size(1)
        .clock(clock.clone())
        .metrics_interval(Duration::ZERO)
        .build()
}

/// A store that is down.
struct Down;

impl ClusterLock for Down {
    fn try_acquire(&self, _: &str, _: Duration) -> Result<Option<Lease>, LockError> {
        Err(LockError::Timeout(sec(1)))
    }

    fn release(&self, _: Lease, _: Duration) -> Result<bool, LockError> {
        Err(LockError::Timeout(sec(1)))
    }
}

#[test]
fn a_manual_clock_schedule_gives_exact_counts() {
    let recorder = DebuggingRecorder::new();
    let snapshots = recorder.snapshotter();
    let clock = ManualClock::new();
    let held = Arc::new(LocalLock::with_clock(clock.clone()));
    let other = held.try_acquire("held", sec(3600)).unwrap().unwrap();
    // Resolved while the recorder is the thread's: the named tasks' run-time series are
    // bound at submission.
    let (pool, cancelled) = metrics::with_local_recorder(&recorder, || {
        let pool = pool("exact", &clock);
        let c = clock.clone();
        // Three runs at 0, 10, 20 s, each taking 2 s of the pool's clock.
        pool.schedule_periodic(
            Periodic::at_fixed_rate(sec(10)).max_runs(3).name("report"),
            move || c.advance(sec(2)),
        )
        .unwrap();
        // Panics twice and goes on.
        pool.schedule_periodic(
            Periodic::at_fixed_rate(sec(10))
                .max_runs(2)
                .on_panic(OnPanic::Continue),
            || panic!("boom"),
        )
        .unwrap();
        // Fails once, then stops.
        pool.schedule_fallible(Periodic::with_fixed_delay(sec(10)).max_runs(1), |_| {
            Err::<Next, _>("down")
        })
        .unwrap();
        // Skipped for lateness once (its 5 s deadline is reached only at 10 s).
        pool.schedule_periodic(
            Periodic::at_fixed_rate(sec(100))
                .initial_delay(sec(5))
                .max_lateness(sec(1)),
            || (),
        )
        .unwrap();
        // The lock held by another node, and a store that is down: one skip each.
        let lock = Exclusive::new(held.clone(), "held", sec(60));
        pool.schedule_periodic(Periodic::at_fixed_rate(sec(100)).exclusive(lock), || ())
            .unwrap();
        let down = Exclusive::new(Arc::new(Down), "down", sec(60));
        pool.schedule_periodic(Periodic::at_fixed_rate(sec(100)).exclusive(down), || ())
            .unwrap();
        let cancelled = pool.schedule(sec(1000), || ()).unwrap();
        (pool, cancelled)
    });
    assert!(cancelled.cancel());
    assert!(!cancelled.cancel(), "counted once");
    assert!(pool.wait_idle(BOUND));
    for _ in 0..2 {
        clock.advance(sec(10));
        assert!(pool.wait_idle(BOUND));
    }
    let s = pool.stats();
    metrics::with_local_recorder(&recorder, || pool.publish_metrics());
    let seen = Seen::take(&snapshots);

    assert_eq!(
        seen.counter("schedpool_tasks_submitted_total{pool=exact}"),
        7
    );
    assert_eq!(
        seen.counter("schedpool_tasks_cancelled_total{pool=exact}"),
        1
    );
    assert_eq!(
        seen.counter("schedpool_tasks_rejected_total{pool=exact}"),
        0
    );
    let runs = |outcome: &str| {
        seen.counter(&format!(
            "schedpool_runs_total{{outcome={outcome},pool=exact}}"
        ))
    };
    assert_eq!(runs("completed"), 3, "report's three runs");
    assert_eq!(runs("panicked"), 2);
    assert_eq!(runs("failed"), 1);
    assert_eq!(runs("skipped"), 1);
    assert_eq!(runs("lock_held"), 1);
    assert_eq!(runs("lock_failed"), 1);
    assert_eq!(
        runs("completed") + runs("panicked") + runs("failed"),
        s.completed_task_count,
        "the outcomes of the runs that ran add up to the completed count"
    );
    assert_eq!(
        seen.counter("schedpool_lock_errors_total{pool=exact}"),
        s.lock_failed
    );
    assert_eq!(
        seen.counter("schedpool_runs_late_total{pool=exact}"),
        s.late_count
    );
    assert_eq!(
        seen.gauge("schedpool_queued_tasks{pool=exact}"),
        s.queued as f64
    );
    assert_eq!(seen.gauge("schedpool_workers{pool=exact}"), 1.0);
    assert_eq!(seen.gauge("schedpool_workers_active{pool=exact}"), 0.0);

    // One lateness and one duration per run that ran.
    let lateness = seen.histogram("schedpool_lateness_seconds{pool=exact}");
    assert_eq!(lateness.len() as u64, s.completed_task_count);
    let durations = seen.histogram("schedpool_run_duration_seconds{pool=exact}");
    assert_eq!(durations.len() as u64, s.completed_task_count);
    let two_s = durations
        .iter()
        .filter(|&&d| (d - 2.0).abs() <= 2.0 / 32.0)
        .count();
    assert_eq!(
        two_s, 3,
        "report's runs took 2 s each (±1/32): {durations:?}"
    );
    // The named task's own series, exact.
    assert_eq!(
        seen.histogram("schedpool_task_run_duration_seconds{pool=exact,task=report}"),
        [2.0, 2.0, 2.0]
    );

    // A second publication hands over no run twice.
    metrics::with_local_recorder(&recorder, || pool.publish_metrics());
    let again = Seen::take(&snapshots);
    assert!(again
        .histogram("schedpool_lateness_seconds{pool=exact}")
        .is_empty());
    assert_eq!(
        again.counter("schedpool_tasks_submitted_total{pool=exact}"),
        7
    );
    held.release(other, Duration::ZERO).unwrap();
    drop(pool.shutdown_now());
    assert!(pool.await_termination(BOUND));
}

#[test]
fn rejections_and_gauges_while_tasks_run() {
    let recorder = DebuggingRecorder::new();
    let snapshots = recorder.snapshotter();
    let clock = ManualClock::new();
    let pool = pool("busy", &clock);
    let gate = Gate::default();
    let g = gate.clone();
    let running = pool.submit(move || g.wait()).unwrap();
    pool.schedule(sec(60), || ()).unwrap();
    pool.schedule(sec(90), || ()).unwrap();
    assert!(wait_until(|| pool.stats().active_count == 1));
    metrics::with_local_recorder(&recorder, || pool.publish_metrics());
    let seen = Seen::take(&snapshots);
    assert_eq!(seen.gauge("schedpool_workers_active{pool=busy}"), 1.0);
    assert_eq!(seen.gauge("schedpool_queued_tasks{pool=busy}"), 2.0);
    assert_eq!(seen.gauge("schedpool_workers{pool=busy}"), 1.0);
    gate.open();
    running.get().unwrap();
    drop(pool.shutdown_now());
    assert!(pool.submit(|| ()).is_err());
    assert!(pool.await_termination(BOUND));
    metrics::with_local_recorder(&recorder, || pool.publish_metrics());
    let seen = Seen::take(&snapshots);
    assert_eq!(seen.counter("schedpool_tasks_rejected_total{pool=busy}"), 1);
    assert_eq!(seen.gauge("schedpool_workers{pool=busy}"), 0.0);
    assert_eq!(
        seen.counter("schedpool_tasks_cancelled_total{pool=busy}"),
        2,
        "the two delayed tasks handed back by shutdown_now, dropped unrun"
    );
}

/// The metrics thread publishes on its own, through the global recorder: the one test
/// of this binary that installs it.
#[test]
fn the_metrics_thread_publishes_every_interval_and_at_termination() {
    let recorder = DebuggingRecorder::new();
    let snapshots = recorder.snapshotter();
    recorder
        .install()
        .expect("the only global recorder of this binary");
    let pool = ScheduledThreadPoolExecutor::builder()
        .name("sampled")
        .core_pool_size(1)
        .metrics_interval(Duration::from_millis(10))
        .build();
    pool.submit(|| ()).unwrap().get().unwrap();
    let series = "schedpool_runs_total{outcome=completed,pool=sampled}";
    assert!(
        wait_until(|| Seen::take(&snapshots).0.get(series) == Some(&DebugValue::Counter(1))),
        "published by the thread"
    );
    // The last values come with termination (just after it: the last worker publishes
    // them as it goes), whatever the interval. The recorder's snapshot drains what it
    // read (a counter reads 0 until it is set again).
    for _ in 0..5 {
        pool.submit(|| ()).unwrap().get().unwrap();
    }
    pool.close();
    assert!(
        wait_until(|| matches!(
            Seen::take(&snapshots).0.get(series),
            Some(DebugValue::Counter(6))
        )),
        "the final count"
    );
}

/// A recorder whose handles panic costs the publication, never the pool.
#[test]
fn a_panicking_recorder_is_contained() {
    use metrics::{Counter, Gauge, Histogram, KeyName, Metadata, Recorder, SharedString, Unit};
    struct Panics(AtomicBool);
    impl Recorder for Panics {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
            self.0.store(true, Ordering::SeqCst);
            panic!("recorder down")
        }
        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            panic!("recorder down")
        }
        fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
            panic!("recorder down")
        }
    }
    let recorder = Panics(AtomicBool::new(false));
    let clock = ManualClock::new();
    let (pool, named) = metrics::with_local_recorder(&recorder, || {
        let pool = pool("panicky", &clock);
        let named = pool.named("job").metered(); // its series cannot be made: it runs without one
        (pool, named)
    });
    metrics::with_local_recorder(&recorder, || pool.publish_metrics());
    assert!(recorder.0.load(Ordering::SeqCst), "the recorder was asked");
    assert_eq!(named.submit(|| 7).unwrap().get().unwrap(), 7);
    pool.close();
}

/// The task series a recorder was handed, by `task` label.
fn task_series(snapshots: &Snapshotter, pool: &str) -> HashMap<String, usize> {
    let mut series = HashMap::new();
    for (key, _, _, value) in snapshots.snapshot().into_vec() {
        let key = key.key();
        if key.name() != "schedpool_task_run_duration_seconds" {
            continue;
        }
        let label = |name: &str| {
            key.labels()
                .find(|l| l.key() == name)
                .map(|l| l.value().to_owned())
        };
        assert_eq!(label("pool").as_deref(), Some(pool), "{key:?}");
        let task = label("task").expect("every task series has a task");
        let runs = match value {
            DebugValue::Histogram(h) => h.len(),
            other => panic!("{key:?}: {other:?}"),
        };
        assert!(series.insert(task, runs).is_none(), "one series per task");
    }
    series
}

/// 100,000 one-shots named by an id: no series of their own unless metered, and then
/// at most `max_task_series` of them plus `other`; periodic tasks named before keep
/// theirs, exact; a name that has a series keeps it after the limit is reached.
#[test]
fn unique_task_names_cannot_grow_the_series_past_the_limit() {
    const TASKS: u64 = 100_000;
    const LIMIT: usize = 50;
    let recorder = DebuggingRecorder::new();
    let snapshots = recorder.snapshotter();
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .name("ids")
        .core_pool_size(1)
        .clock(clock.clone())
        .metrics_interval(Duration::ZERO)
        .max_task_series(LIMIT)
        .build();
    let runs = metrics::with_local_recorder(&recorder, || {
        // Two periodic jobs, named before the flood: runs at 0 and 10 s.
        for name in ["report", "cleanup"] {
            pool.schedule_periodic(
                Periodic::at_fixed_rate(sec(10)).max_runs(2).name(name),
                || (),
            )
            .unwrap();
        }
        // Named by an id, as for the logs: no series.
        for i in 0..TASKS {
            pool.named(format!("email-{i}"))
                .schedule(sec(5), || ())
                .unwrap();
        }
        // Metered, each name its own: the limit holds.
        let mut futures = Vec::new();
        for i in 0..TASKS {
            let named = pool.named(format!("metered-{i}")).metered();
            futures.push(named.schedule(sec(5), || ()).unwrap());
        }
        // After the limit: a periodic job of a new name goes to `other`, one whose name
        // has a series keeps it.
        futures.push(
            pool.schedule_periodic(
                Periodic::at_fixed_rate(sec(10))
                    .initial_delay(sec(5))
                    .max_runs(1)
                    .name("late-job"),
                || (),
            )
            .unwrap(),
        );
        futures.push(
            pool.named("report")
                .metered()
                .schedule(sec(5), || ())
                .unwrap(),
        );
        futures
    });
    clock.advance(sec(10));
    for f in runs {
        f.get().unwrap();
    }
    assert!(pool.wait_idle(BOUND));

    let series = task_series(&snapshots, "ids");
    assert_eq!(
        series.len(),
        LIMIT + 1,
        "the limit, plus other: {:?}",
        series.len()
    );
    assert!(
        !series.keys().any(|t| t.starts_with("email-")),
        "a one-shot's name is no label unless metered"
    );
    assert_eq!(series["report"], 3, "its two runs and the metered one-shot");
    assert_eq!(series["cleanup"], 2);
    let metered = series.keys().filter(|t| t.starts_with("metered-")).count();
    assert_eq!(metered, LIMIT - 2, "the names admitted before the limit");
    let own: usize = series
        .iter()
        .filter(|(t, _)| t.starts_with("metered-"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(own, LIMIT - 2, "one run each");
    assert_eq!(
        series["other"] as u64,
        TASKS - (LIMIT as u64 - 2) + 1,
        "every later metered run, and the late periodic job's"
    );
    pool.close();
}

/// The limit's warning: at most one line a second on the submitting thread, naming the
/// setting and the task; the closing line at shutdown stands for the rest, so the
/// lines' occurrences add up to the names that went to `other`.
#[test]
fn names_past_the_limit_are_warned_about_at_most_once_a_second() {
    use common::FieldMap;
    use std::sync::Mutex;
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    #[derive(Default)]
    struct Lines(Mutex<Vec<FieldMap>>);
    struct Sub(Arc<Lines>);
    impl Subscriber for Sub {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            let mut fields = FieldMap(HashMap::new());
            event.record(&mut fields);
            if fields
                .0
                .get("message")
                .is_some_and(|m| m.contains("task series limit"))
            {
                self.0 .0.lock().unwrap().push(fields);
            }
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    let lines = Arc::new(Lines::default());
    let recorder = DebuggingRecorder::new();
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .name("warned")
        .core_pool_size(1)
        .clock(clock.clone())
        .metrics_interval(Duration::ZERO)
        .max_task_series(2)
        .build();
    tracing::subscriber::with_default(Sub(lines.clone()), || {
        metrics::with_local_recorder(&recorder, || {
            for i in 0..1_000 {
                drop(pool.named(format!("n-{i}")).metered());
            }
        });
        pool.shutdown();
    });
    assert!(pool.await_termination(BOUND));
    let lines = lines.0.lock().unwrap();
    assert!(
        (2..=4).contains(&lines.len()),
        "one line, perhaps one more a second later, and the closing one: {}",
        lines.len()
    );
    let first = &lines[0].0;
    assert_eq!(first["task_name"], "n-2", "the first name past the limit");
    assert_eq!(first["max_task_series"], "2");
    assert!(first["message"].contains("Builder::max_task_series"));
    let occurrences: u64 = lines
        .iter()
        .map(|l| l.0["occurrences"].parse::<u64>().unwrap())
        .sum();
    assert_eq!(occurrences, 998, "every name past the limit, once");
    assert_eq!(
        lines.last().unwrap().0["task_name"],
        "n-999",
        "the closing line's latest"
    );
}

/// Operators' controls and the runs a pause skipped, as counters.
#[test]
fn pauses_resumes_and_extra_runs_are_counted() {
    let recorder = DebuggingRecorder::new();
    let snapshots = recorder.snapshotter();
    let clock = ManualClock::new();
    let pool = pool("controls", &clock);
    let job = pool
        .schedule_periodic(
            Periodic::at_fixed_rate(sec(10)).initial_delay(sec(10)),
            || (),
        )
        .unwrap();
    assert!(job.pause());
    clock.advance(sec(20)); // two ticks skipped
    assert!(pool.wait_idle(BOUND));
    assert!(job.resume());
    assert!(job.run_now());
    assert!(pool.wait_idle(BOUND));
    metrics::with_local_recorder(&recorder, || pool.publish_metrics());
    let seen = Seen::take(&snapshots);
    let control = |action: &str| {
        seen.counter(&format!(
            "schedpool_task_controls_total{{action={action},pool=controls}}"
        ))
    };
    assert_eq!(
        (control("pause"), control("resume"), control("run_now")),
        (1, 1, 1)
    );
    assert_eq!(
        seen.counter("schedpool_runs_total{outcome=paused,pool=controls}"),
        2
    );
    pool.close();
}

/// MX2: a recorder that panics loses no run. Its first publication's histogram calls
/// panic after the first bucket; the next publication hands over what it did not take,
/// so the recorder holds every run's lateness and duration exactly once.
#[test]
fn a_recorder_that_panics_loses_no_run() {
    use metrics::{
        Counter, Gauge, Histogram, HistogramFn, KeyName, Metadata, Recorder, SharedString, Unit,
    };
    use std::sync::atomic::AtomicUsize;

    /// Panics at the `armed`-th `record_many` from now (0: never), else records.
    struct Flaky {
        inner: DebuggingRecorder,
        armed: Arc<AtomicUsize>,
    }
    struct FlakyHistogram {
        inner: Histogram,
        armed: Arc<AtomicUsize>,
    }
    impl HistogramFn for FlakyHistogram {
        fn record(&self, value: f64) {
            self.record_many(value, 1);
        }
        fn record_many(&self, value: f64, count: usize) {
            if self
                .armed
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                == Ok(1)
            {
                panic!("the recorder is down");
            }
            self.inner.record_many(value, count);
        }
    }
    impl Recorder for Flaky {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, m: &Metadata<'_>) -> Counter {
            self.inner.register_counter(key, m)
        }
        fn register_gauge(&self, key: &Key, m: &Metadata<'_>) -> Gauge {
            self.inner.register_gauge(key, m)
        }
        fn register_histogram(&self, key: &Key, m: &Metadata<'_>) -> Histogram {
            Histogram::from_arc(Arc::new(FlakyHistogram {
                inner: self.inner.register_histogram(key, m),
                armed: self.armed.clone(),
            }))
        }
    }

    let inner = DebuggingRecorder::new();
    let snapshots = inner.snapshotter();
    let armed = Arc::new(AtomicUsize::new(0));
    let recorder = Flaky {
        inner,
        armed: armed.clone(),
    };
    let clock = ManualClock::new();
    let pool = pool("flaky", &clock);
    // Runs in different buckets: several shares a histogram.
    for delay in [1, 2, 3, 5, 8, 13, 21, 34] {
        let c = clock.clone();
        pool.schedule(sec(delay), move || c.advance(Duration::from_millis(delay)))
            .unwrap();
    }
    for _ in 0..40 {
        clock.advance(sec(1));
        assert!(pool.wait_idle(BOUND));
    }
    armed.store(2, Ordering::SeqCst); // the second record_many panics
    metrics::with_local_recorder(&recorder, || pool.publish_metrics());
    metrics::with_local_recorder(&recorder, || pool.publish_metrics()); // disarmed now
    let seen = Seen::take(&snapshots);
    let lateness = seen.histogram("schedpool_lateness_seconds{pool=flaky}");
    let durations = seen.histogram("schedpool_run_duration_seconds{pool=flaky}");
    assert_eq!(lateness.len(), 8, "every run's lateness once: {lateness:?}");
    assert_eq!(
        durations.len(),
        8,
        "every run's duration once: {durations:?}"
    );
    pool.close();
}
