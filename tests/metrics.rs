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
        let named = pool.named("job"); // its series cannot be made: it runs without one
        (pool, named)
    });
    metrics::with_local_recorder(&recorder, || pool.publish_metrics());
    assert!(recorder.0.load(Ordering::SeqCst), "the recorder was asked");
    assert_eq!(named.submit(|| 7).unwrap().get().unwrap(), 7);
    pool.close();
}
