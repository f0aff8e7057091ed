//! Exclusive periodic tasks (`Periodic::exclusive`) on the in-process `LocalLock`, on a
//! `ManualClock` shared by the "nodes" (executors) and the lock: one run per tick across
//! the nodes, skipped runs, a store that fails, a run that outlasts its lease, a panic.
//! The same protocol against PostgreSQL is in `tests/cluster_pg.rs`.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{sec, wait_until, BOUND};
use schedpool::cluster::{
    ClusterLock, Exclusive, ExclusiveOutcome, Lease, LocalLock, LockError, Pause,
};
use schedpool::{ManualClock, Next, OnPanic, Periodic, ScheduledThreadPoolExecutor, TaskContext};

const PERIOD: Duration = Duration::from_secs(10);

/// The `schedpool` warnings seen by this test binary: `(message, lock, error)`.
static WARNINGS: Mutex<Vec<(String, String, String)>> = Mutex::new(Vec::new());

/// The same warnings' `(message, task_name, id)`, `"-"` for a warning without the field.
static WARNED_TASKS: Mutex<Vec<(String, String, String)>> = Mutex::new(Vec::new());

/// Records every `schedpool` warning (installed once for the whole binary: the workers
/// log on their own threads).
struct Warnings;

#[derive(Default)]
struct Fields(String, String, String, Option<String>, Option<String>);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let v = format!("{value:?}").trim_matches('"').to_owned();
        match field.name() {
            "message" => self.0 = v,
            "lock" => self.1 = v,
            "error" => self.2 = v,
            "ran_ms" => self.2 = format!("ran_ms={v}"),
            "task_name" => self.3 = Some(v),
            "id" => self.4 = Some(v),
            _ => {}
        }
    }
}

impl tracing::Subscriber for Warnings {
    fn enabled(&self, m: &tracing::Metadata<'_>) -> bool {
        m.target() == "schedpool" && *m.level() == tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut f = Fields::default();
        event.record(&mut f);
        let task = f.3.unwrap_or_else(|| "-".into());
        let id = f.4.unwrap_or_else(|| "-".into());
        WARNED_TASKS.lock().unwrap().push((f.0.clone(), task, id));
        WARNINGS.lock().unwrap().push((f.0, f.1, f.2));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn record_warnings() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| tracing::subscriber::set_global_default(Warnings).unwrap());
}

/// Whether a warning with `message` about lock `lock` (and an error containing
/// `error`) was seen.
fn warned(message: &str, lock: &str, error: &str) -> bool {
    WARNINGS
        .lock()
        .unwrap()
        .iter()
        .any(|(m, l, e)| m.starts_with(message) && l == lock && e.contains(error))
}

/// A node on `clock` running `spec`, each run counted in `runs`.
fn counting_node(
    clock: &ManualClock,
    spec: Periodic,
    runs: &Arc<AtomicU64>,
) -> (ScheduledThreadPoolExecutor, schedpool::ScheduledFuture<()>) {
    let pool = node(clock);
    let r = runs.clone();
    let fut = pool
        .schedule_periodic(spec, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    (pool, fut)
}

fn node(clock: &ManualClock) -> ScheduledThreadPoolExecutor {
    ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .build()
}

fn job(lock: Arc<dyn ClusterLock>) -> Periodic {
    Periodic::at_fixed_rate(PERIOD)
        .exclusive(Exclusive::new(lock, "report", sec(60)).at_least_for(PERIOD / 2))
}

fn settle(pools: &[ScheduledThreadPoolExecutor]) {
    for p in pools {
        assert!(p.wait_idle(BOUND));
    }
}

#[test]
fn each_tick_runs_once_across_the_nodes_and_the_others_skip_it() {
    let clock = ManualClock::new();
    let lock = Arc::new(LocalLock::with_clock(clock.clone()));
    let nodes: Vec<_> = (0..3).map(|_| node(&clock)).collect();
    let runs: Arc<Mutex<Vec<(usize, u64)>>> = Arc::default(); // (node, tick)
    let origin = clock.now();
    let futs: Vec<_> = nodes
        .iter()
        .enumerate()
        .map(|(i, pool)| {
            let runs = runs.clone();
            pool.schedule_periodic_with_context(job(lock.clone()), move |ctx: &TaskContext<'_>| {
                let tick = (ctx.deadline() - origin).as_secs() / PERIOD.as_secs();
                runs.lock().unwrap().push((i, tick));
                Next::Continue
            })
            .unwrap()
        })
        .collect();
    const TICKS: u64 = 12;
    settle(&nodes); // tick 0 is due at once
    for _ in 1..TICKS {
        clock.advance(PERIOD);
        settle(&nodes);
    }
    let mut ticks: Vec<u64> = runs.lock().unwrap().iter().map(|&(_, t)| t).collect();
    ticks.sort_unstable();
    assert_eq!(
        ticks,
        (0..TICKS).collect::<Vec<_>>(),
        "each tick exactly once"
    );
    let stats: Vec<_> = nodes.iter().map(|p| p.stats()).collect();
    assert_eq!(stats.iter().map(|s| s.lock_acquired).sum::<u64>(), TICKS);
    assert_eq!(
        stats.iter().map(|s| s.lock_skipped).sum::<u64>(),
        2 * TICKS,
        "the other two nodes skip every tick"
    );
    assert!(stats
        .iter()
        .all(|s| s.lock_failed == 0 && s.lock_overruns == 0));
    assert_eq!(
        stats.iter().map(|s| s.completed_task_count).sum::<u64>(),
        TICKS,
        "a skipped run is not a completed run"
    );
    for f in &futs {
        assert!(!f.is_done(), "skips keep the schedule");
        assert!(f.cancel());
    }
    for p in &nodes {
        p.close();
    }
}

#[test]
fn skipped_runs_do_not_count_as_runs() {
    let clock = ManualClock::new();
    let lock = Arc::new(LocalLock::with_clock(clock.clone()));
    let pool = node(&clock);
    // Another node holds the lock for the first two ticks.
    let other = lock.try_acquire("report", PERIOD * 2).unwrap().unwrap();
    let seen: Arc<Mutex<Vec<u64>>> = Arc::default();
    let s = seen.clone();
    let fut = pool
        .schedule_periodic_with_context(
            job(lock.clone()).max_runs(2),
            move |ctx: &TaskContext<'_>| {
                s.lock().unwrap().push(ctx.runs());
                Next::Continue
            },
        )
        .unwrap();
    for tick in 0..4 {
        assert!(pool.wait_idle(BOUND));
        if tick == 1 {
            let info = pool.scheduled_tasks();
            assert_eq!(
                info[0].last_run,
                Some(schedpool::LastRun::LockHeld),
                "a held lock, told apart from a max_lateness skip"
            );
        }
        clock.advance(PERIOD);
    }
    assert!(fut.wait_timeout(BOUND));
    fut.get().unwrap();
    assert_eq!(*seen.lock().unwrap(), [1, 2], "two runs, numbered 1 and 2");
    let s = pool.stats();
    assert_eq!((s.lock_skipped, s.lock_acquired), (2, 2));
    assert!(
        !lock.release(other, Duration::ZERO).unwrap(),
        "the other lease ran out"
    );
    pool.close();
}

/// A store that fails while `down` is set, else delegates to a `LocalLock`.
struct Flaky {
    inner: LocalLock,
    down: AtomicBool,
    calls: AtomicU64,
}

impl Flaky {
    fn new(clock: &ManualClock, down: bool) -> Arc<Self> {
        Arc::new(Flaky {
            inner: LocalLock::with_clock(clock.clone()),
            down: AtomicBool::new(down),
            calls: AtomicU64::new(0),
        })
    }
}

impl ClusterLock for Flaky {
    fn try_acquire(&self, name: &str, at_most_for: Duration) -> Result<Option<Lease>, LockError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) {
            return Err(LockError::Timeout(Duration::from_secs(1)));
        }
        self.inner.try_acquire(name, at_most_for)
    }

    fn release(&self, lease: Lease, at_least_for: Duration) -> Result<bool, LockError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(LockError::Store("connection reset".into()));
        }
        self.inner.release(lease, at_least_for)
    }

    fn paused(&self, name: &str) -> Result<Option<Pause>, LockError> {
        self.inner.paused(name)
    }
}

#[test]
fn an_unreachable_store_skips_runs_and_keeps_the_schedule() {
    record_warnings();
    let clock = ManualClock::new();
    let store = Flaky::new(&clock, true);
    let pool = node(&clock);
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_periodic(
            Periodic::at_fixed_rate(PERIOD).exclusive(Exclusive::new(
                store.clone(),
                "flaky",
                sec(60),
            )),
            move || {
                r.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap();
    for _ in 0..3 {
        assert!(pool.wait_idle(BOUND));
        clock.advance(PERIOD);
    }
    assert!(pool.wait_idle(BOUND));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(store.calls.load(Ordering::SeqCst), 4, "asked at every tick");
    assert_eq!(pool.stats().lock_failed, 4);
    assert_eq!(
        pool.scheduled_tasks()[0].last_run,
        Some(schedpool::LastRun::LockFailed)
    );
    assert!(
        warned(
            "run skipped: the cluster lock could not be acquired",
            "flaky",
            "did not answer"
        ),
        "a clear traced error: {:?}",
        WARNINGS.lock().unwrap()
    );
    store.down.store(false, Ordering::SeqCst);
    clock.advance(PERIOD);
    assert!(
        wait_until(|| runs.load(Ordering::SeqCst) == 1),
        "runs resume"
    );
    assert!(!fut.is_done());
    fut.cancel();
    pool.close();
}

#[test]
fn a_run_that_outlasts_at_most_for_is_counted_and_leaves_the_next_holder_alone() {
    record_warnings();
    let clock = ManualClock::new();
    let lock = Arc::new(LocalLock::with_clock(clock.clone()));
    let pool = node(&clock);
    let (c, l) = (clock.clone(), lock.clone());
    let taken_over = Arc::new(AtomicBool::new(false));
    let t = taken_over.clone();
    let fut = pool
        .schedule_periodic(
            job(lock.clone()).max_runs(1).name("nightly-report"),
            move || {
                // The run takes longer than at_most_for (60 s); meanwhile another node
                // takes the lock.
                c.advance(sec(61));
                t.store(
                    l.try_acquire("report", sec(60)).unwrap().is_some(),
                    Ordering::SeqCst,
                );
            },
        )
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    let id = fut.id();
    fut.get().unwrap();
    assert!(
        taken_over.load(Ordering::SeqCst),
        "the expired lease was taken over"
    );
    assert_eq!(pool.stats().lock_overruns, 1);
    assert!(
        warned(
            "a run outlasted its cluster lock's at_most_for",
            "report",
            "ran_ms=61000"
        ),
        "ran_ms is the pool's clock's time: {:?}",
        WARNINGS.lock().unwrap()
    );
    assert!(
        WARNED_TASKS
            .lock()
            .unwrap()
            .iter()
            .any(|(m, t, got)| m.starts_with("a run outlasted")
                && t == "nightly-report"
                && *got == id.to_string()),
        "the overrun warning names its task and its id: {:?}",
        WARNED_TASKS.lock().unwrap()
    );
    assert!(
        lock.is_held("report"),
        "the late release did not free the new holder's lock"
    );
    pool.close();
}

#[test]
fn a_panicking_run_gives_its_lease_back() {
    let clock = ManualClock::new();
    let lock = Arc::new(LocalLock::with_clock(clock.clone()));
    let pool = node(&clock);
    let spec = Periodic::at_fixed_rate(PERIOD)
        .on_panic(OnPanic::Continue)
        .exclusive(Exclusive::new(lock.clone(), "report", sec(60)));
    let fut = pool.schedule_periodic(spec, || panic!("boom")).unwrap();
    assert!(pool.wait_idle(BOUND));
    assert!(!lock.is_held("report"), "released on unwind");
    clock.advance(PERIOD);
    assert!(pool.wait_idle(BOUND));
    let s = pool.stats();
    assert_eq!(
        (s.panicked_count, s.lock_acquired, s.lock_skipped),
        (2, 2, 0)
    );
    fut.cancel();
    pool.close();
}

#[test]
fn a_fallible_job_can_be_exclusive() {
    let clock = ManualClock::new();
    let lock = Arc::new(LocalLock::with_clock(clock.clone()));
    let pool = node(&clock);
    let fut = pool
        .schedule_fallible(
            job(lock.clone()).stop_after_errors(1),
            |_ctx: &TaskContext<'_>| -> Result<Next, String> { Err("store down".into()) },
        )
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(fut.get().unwrap(), Err("store down".to_owned()));
    assert!(
        lock.is_held("report"),
        "released with at_least_for: held 5 s more"
    );
    clock.advance(PERIOD / 2);
    assert!(!lock.is_held("report"));
    assert_eq!(pool.stats().failed_runs, 1);
    pool.close();
}

/// A store whose release panics.
struct PanickyRelease(LocalLock);

impl ClusterLock for PanickyRelease {
    fn try_acquire(&self, name: &str, at_most_for: Duration) -> Result<Option<Lease>, LockError> {
        self.0.try_acquire(name, at_most_for)
    }

    fn release(&self, _: Lease, _: Duration) -> Result<bool, LockError> {
        panic!("release exploded")
    }
}

#[test]
fn a_store_that_panics_in_release_while_the_run_panics_does_not_abort() {
    let clock = ManualClock::new();
    let store = Arc::new(PanickyRelease(LocalLock::with_clock(clock.clone())));
    let pool = node(&clock);
    let spec = Periodic::at_fixed_rate(PERIOD)
        .on_panic(OnPanic::Continue)
        .exclusive(Exclusive::new(store, "report", PERIOD));
    let fut = pool
        .schedule_periodic(spec, || panic!("run exploded"))
        .unwrap();
    assert!(pool.wait_idle(BOUND));
    clock.advance(PERIOD); // the unreleased lease has run out by then
    assert!(pool.wait_idle(BOUND));
    let s = pool.stats();
    assert_eq!(
        (s.panicked_count, s.lock_acquired, s.lock_failed),
        (2, 2, 2)
    );
    assert!(!fut.is_done(), "the task goes on");
    fut.cancel();
    pool.close();
}

#[test]
fn a_run_sees_its_lease_and_fencing_tokens_grow() {
    let clock = ManualClock::new();
    let lock = Arc::new(LocalLock::with_clock(clock.clone()));
    let pool = node(&clock);
    let tokens: Arc<Mutex<Vec<u64>>> = Arc::default();
    let t = tokens.clone();
    let fut = pool
        .schedule_periodic_with_context(
            job(lock.clone()).max_runs(3),
            move |ctx: &TaskContext<'_>| {
                let lease = ctx.lease().expect("an exclusive run holds its lease");
                assert_eq!(lease.name(), "report");
                t.lock().unwrap().push(lease.token());
                Next::Continue
            },
        )
        .unwrap();
    for _ in 0..3 {
        assert!(pool.wait_idle(BOUND));
        clock.advance(PERIOD);
    }
    assert!(fut.wait_timeout(BOUND));
    fut.get().unwrap();
    let tokens = tokens.lock().unwrap().clone();
    assert_eq!(tokens.len(), 3);
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
    let plain = pool
        .schedule_with_context(Duration::ZERO, |ctx: &TaskContext<'_>| {
            ctx.lease().is_none()
        })
        .unwrap();
    assert!(plain.wait_timeout(BOUND) && plain.get().unwrap());
    pool.close();
}

/// An exclusive one-shot, scheduled on every node: the node that takes the lock runs it,
/// the others complete with `Ok(None)`; each outcome is counted; the task carries the
/// lock's name.
#[test]
fn an_exclusive_one_shot_runs_on_one_node() {
    let clock = ManualClock::new();
    let lock = Arc::new(LocalLock::with_clock(clock.clone()));
    let nodes: Vec<_> = (0..3).map(|_| node(&clock)).collect();
    let spec = Exclusive::new(lock.clone(), "invoice-run", sec(60)).at_least_for(sec(30));
    let futs: Vec<_> = nodes
        .iter()
        .map(|n| {
            n.schedule_exclusive(sec(5), spec.clone(), |lease: &Lease| lease.token())
                .unwrap()
        })
        .collect();
    assert_eq!(
        nodes[0].scheduled_tasks()[0].name.as_deref(),
        Some("invoice-run")
    );
    clock.advance(sec(5));
    let outcomes: Vec<Option<u64>> = futs
        .into_iter()
        .map(|f| {
            assert!(f.wait_timeout(BOUND));
            f.get()
                .expect("ran or skipped")
                .expect("the store answered")
        })
        .collect();
    assert_eq!(outcomes.iter().flatten().count(), 1, "{outcomes:?}");
    assert_eq!(
        outcomes.iter().flatten().next(),
        Some(&1),
        "the fencing token"
    );
    let stats: Vec<_> = nodes.iter().map(|n| n.stats()).collect();
    assert_eq!(stats.iter().map(|s| s.lock_acquired).sum::<u64>(), 1);
    assert_eq!(stats.iter().map(|s| s.lock_skipped).sum::<u64>(), 2);
    assert!(
        lock.is_held("invoice-run"),
        "at_least_for keeps late nodes out"
    );
    clock.advance(sec(30));
    assert!(!lock.is_held("invoice-run"));
    for n in nodes {
        n.close();
    }
}

/// An exclusive one-shot whose store fails completes with the error (it did not run), and
/// one whose closure panics gives the lease back and completes with `Panicked`.
#[test]
fn an_exclusive_one_shot_reports_a_failing_store_and_releases_after_a_panic() {
    let clock = ManualClock::new();
    let pool = node(&clock);
    let store = Flaky::new(&clock, true);
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let fut = pool
        .schedule_exclusive(
            Duration::ZERO,
            Exclusive::new(store.clone(), "once", sec(60)),
            move |_: &Lease| r.store(true, Ordering::SeqCst),
        )
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert!(matches!(fut.get().unwrap(), Err(LockError::Timeout(_))));
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(pool.stats().lock_failed, 1);

    store.down.store(false, Ordering::SeqCst);
    let fut = pool
        .schedule_exclusive(
            Duration::ZERO,
            Exclusive::new(store.clone(), "once", sec(60)),
            |_: &Lease| -> u8 { panic!("boom") },
        )
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert!(fut.get().unwrap_err().is_panicked());
    assert!(!store.inner.is_held("once"), "the lease was given back");
    pool.close();
}

/// `run_exclusive`: any closure on the caller's thread, under the lock, counted in the
/// pool's stats; a panic gives the lease back and reaches the caller.
#[test]
fn run_exclusive_runs_any_closure_under_the_lock() {
    let clock = ManualClock::new();
    let lock = Arc::new(LocalLock::with_clock(clock.clone()));
    let pool = node(&clock);
    let spec = Exclusive::new(lock.clone(), "migration", sec(60));
    let token = pool
        .run_exclusive(&spec, |lease| {
            assert!(lock.is_held("migration"), "held while it runs");
            lease.token()
        })
        .unwrap();
    assert_eq!(token, Some(1));
    assert!(!lock.is_held("migration"), "given back");
    let other = lock.try_acquire("migration", sec(60)).unwrap().unwrap();
    assert_eq!(
        pool.run_exclusive(&spec, |_| unreachable!()).unwrap(),
        None::<()>
    );
    assert!(lock.release(other, Duration::ZERO).unwrap());
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.run_exclusive(&spec, |_| -> () { panic!("migration failed") })
    }));
    assert!(panicked.is_err(), "the panic reaches the caller");
    assert!(!lock.is_held("migration"), "after the lease was given back");
    let s = pool.stats();
    assert_eq!((s.lock_acquired, s.lock_skipped), (2, 1));
    pool.close();
}

/// The `_outcome` forms tell every way an exclusive run ends apart: ran, held elsewhere,
/// paused on every node, store failed; and their nested shape is the old methods'.
#[test]
fn the_outcome_forms_tell_held_paused_and_failed_apart() {
    let clock = ManualClock::new();
    let store = Flaky::new(&clock, false);
    let pool = node(&clock);
    let spec = Exclusive::new(store.clone(), "report", sec(60));
    let scheduled = |pool: &ScheduledThreadPoolExecutor| {
        let fut = pool
            .schedule_exclusive_outcome(Duration::ZERO, spec.clone(), |lease: &Lease| lease.token())
            .unwrap();
        assert!(fut.wait_timeout(BOUND));
        fut.get().expect("no panic")
    };
    assert!(matches!(scheduled(&pool), ExclusiveOutcome::Ran(1)));
    assert!(matches!(
        pool.run_exclusive_outcome(&spec, |lease| lease.token()),
        ExclusiveOutcome::Ran(2)
    ));

    let other = store.inner.try_acquire("report", sec(60)).unwrap().unwrap();
    assert!(matches!(scheduled(&pool), ExclusiveOutcome::HeldElsewhere));
    let held = pool.run_exclusive_outcome(&spec, |_| unreachable!());
    assert!(matches!(held, ExclusiveOutcome::HeldElsewhere));
    assert_eq!(held.into_result().unwrap(), None::<u64>);
    assert!(store.inner.release(other, Duration::ZERO).unwrap());

    store.inner.pause("report", "ops", None).unwrap();
    let paused = scheduled(&pool);
    assert!(
        matches!(&paused, ExclusiveOutcome::Paused(p) if p.by == "ops"),
        "{paused:?}"
    );
    assert_eq!(paused.ran(), None);
    assert!(store.inner.resume("report").unwrap());

    store.down.store(true, Ordering::SeqCst);
    let failed = scheduled(&pool);
    assert!(matches!(
        failed,
        ExclusiveOutcome::StoreFailed(LockError::Timeout(_))
    ));
    let nested: Result<Option<u64>, LockError> = failed.into();
    assert!(matches!(nested, Err(LockError::Timeout(_))));
    let s = pool.stats();
    assert_eq!((s.lock_acquired, s.lock_skipped, s.lock_failed), (2, 2, 1));
    pool.close();
}

/// A store that counts the extensions that succeeded, and can refuse to answer them.
struct Counting {
    inner: LocalLock,
    extended: AtomicU64,
    extend_down: AtomicBool,
    refused: AtomicU64,
}

impl Counting {
    /// A counting store over a `LocalLock` on `clock`, answering every call.
    fn on(clock: &ManualClock) -> Arc<Self> {
        Arc::new(Counting {
            inner: LocalLock::with_clock(clock.clone()),
            extended: AtomicU64::new(0),
            extend_down: AtomicBool::new(false),
            refused: AtomicU64::new(0),
        })
    }
}

impl ClusterLock for Counting {
    fn try_acquire(&self, name: &str, at_most_for: Duration) -> Result<Option<Lease>, LockError> {
        self.inner.try_acquire(name, at_most_for)
    }

    fn release(&self, lease: Lease, at_least_for: Duration) -> Result<bool, LockError> {
        self.inner.release(lease, at_least_for)
    }

    fn extend(&self, lease: &Lease, at_most_for: Duration) -> Result<bool, LockError> {
        if self.extend_down.load(Ordering::SeqCst) {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return Err(LockError::Store("connection reset".into()));
        }
        let extended = self.inner.extend(lease, at_most_for)?;
        if extended {
            self.extended.fetch_add(1, Ordering::SeqCst);
        }
        Ok(extended)
    }
}

/// `Exclusive::keep_alive`: a run three times longer than `at_most_for` keeps the lock
/// all along, no other node gets it meanwhile, and it is released at the end.
#[test]
fn a_kept_alive_run_holds_the_lock_for_as_long_as_it_lasts() {
    let clock = ManualClock::new();
    let store = Counting::on(&clock);
    let pool = node(&clock);
    let other = store.clone(); // another node's handle on the same store
    let (c, s) = (clock.clone(), store.clone());
    let steps_ok = Arc::new(AtomicU64::new(0));
    let ok = steps_ok.clone();
    let spec = Exclusive::new(store.clone(), "long", sec(60)).keep_alive(sec(20));
    let fut = pool
        .schedule_exclusive(Duration::ZERO, spec, move |_| {
            for step in 1..=9 {
                c.advance(sec(20)); // 180 s in all: three times at_most_for
                assert!(
                    wait_until(|| s.extended.load(Ordering::SeqCst) >= step),
                    "extension {step} came"
                );
                if other.try_acquire("long", sec(60)).unwrap().is_none() {
                    ok.fetch_add(1, Ordering::SeqCst);
                }
            }
        })
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(fut.get().unwrap().unwrap(), Some(()));
    assert_eq!(steps_ok.load(Ordering::SeqCst), 9, "held at every step");
    let stats = pool.stats();
    assert_eq!((stats.lock_extended, stats.lock_overruns), (9, 0));
    assert!(!store.inner.is_held("long"), "released at the end");
    pool.close();
}

/// `Exclusive::keep_alive` on every path that runs under a lock (they share one locked
/// run, `body/exclusive.rs`): a run three times longer than `at_most_for`, extended all
/// along, is no overrun, since its release is judged against its last extension.
#[test]
fn a_kept_alive_run_is_no_overrun_on_any_path() {
    for path in [
        "periodic",
        "schedule_exclusive",
        "schedule_exclusive_at",
        "run_exclusive",
    ] {
        let clock = ManualClock::new();
        let store = Counting::on(&clock);
        let pool = node(&clock);
        let spec = Exclusive::new(store.clone(), "long", sec(60)).keep_alive(sec(20));
        let (c, s) = (clock.clone(), store.clone());
        let run = move || {
            for step in 1..=9 {
                c.advance(sec(20)); // 180 s in all: three times at_most_for
                assert!(
                    wait_until(|| s.extended.load(Ordering::SeqCst) >= step),
                    "{path}: extension {step} came"
                );
            }
        };
        match path {
            "periodic" => {
                let job = Periodic::at_fixed_rate(sec(600))
                    .max_runs(1)
                    .exclusive(spec);
                let fut = pool.schedule_periodic(job, run).unwrap();
                assert!(fut.wait_timeout(BOUND), "{path}");
            }
            "schedule_exclusive" => {
                let fut = pool
                    .schedule_exclusive(Duration::ZERO, spec, move |_| run())
                    .unwrap();
                assert!(fut.wait_timeout(BOUND), "{path}");
                assert_eq!(fut.get().unwrap().unwrap(), Some(()), "{path}");
            }
            "schedule_exclusive_at" => {
                let fut = pool
                    .schedule_exclusive_at(pool.now(), spec, move |_| run())
                    .unwrap();
                assert!(fut.wait_timeout(BOUND), "{path}");
                assert_eq!(fut.get().unwrap().unwrap(), Some(()), "{path}");
            }
            _ => assert_eq!(pool.run_exclusive(&spec, |_| run()).unwrap(), Some(())),
        }
        assert!(pool.wait_idle(BOUND));
        let stats = pool.stats();
        assert_eq!((stats.lock_extended, stats.lock_overruns), (9, 0), "{path}");
        assert!(!store.inner.is_held("long"), "{path}: released at the end");
        pool.close();
    }
}

/// A holder whose extensions stop reaching the store loses the lock at its last
/// extension plus `at_most_for`, not before; the failures are counted.
#[test]
fn a_lease_whose_extensions_fail_runs_out_after_the_last_one() {
    let clock = ManualClock::new();
    let store = Counting::on(&clock);
    let pool = node(&clock);
    let (c, s) = (clock.clone(), store.clone());
    let seen: Arc<Mutex<Vec<bool>>> = Arc::default();
    let held = seen.clone();
    let spec = Exclusive::new(store.clone(), "job", sec(60)).keep_alive(sec(20));
    let fut = pool
        .schedule_exclusive(Duration::ZERO, spec, move |_| {
            c.advance(sec(20));
            assert!(wait_until(|| s.extended.load(Ordering::SeqCst) == 1)); // until 80 s
            s.extend_down.store(true, Ordering::SeqCst); // the store stops answering
            for k in 1..=3 {
                c.advance(sec(20)); // 40, 60, 80 s: extensions fail
                assert!(wait_until(|| s.refused.load(Ordering::SeqCst) >= k));
                held.lock().unwrap().push(s.inner.is_held("job"));
            }
        })
        .unwrap();
    assert!(fut.wait_timeout(BOUND));
    assert_eq!(
        *seen.lock().unwrap(),
        [true, true, false],
        "held until the last extension (20 s) plus at_most_for (60 s)"
    );
    let stats = pool.stats();
    assert_eq!(stats.lock_overruns, 1, "the release found the lease gone");
    assert_eq!(stats.lock_failed, 3, "each failed extension counted");
    fut.get().unwrap().unwrap();
    pool.close();
}

/// `Exclusive::catch_up`: with every node down over two ticks, the node that starts next
/// runs the job once at once, not once per missed tick, and then keeps its schedule; a
/// node that starts while the last run is recent, or for a job never run, does not.
#[test]
fn catch_up_runs_a_missed_job_once_at_once_then_keeps_the_schedule() {
    let clock = ManualClock::new();
    let lock = Arc::new(LocalLock::with_clock(clock.clone()));
    let spec = || {
        Periodic::at_fixed_rate(PERIOD)
            .initial_delay(PERIOD)
            .exclusive(Exclusive::new(lock.clone(), "nightly", sec(60)).catch_up())
    };
    let start = |runs: &Arc<AtomicU64>| counting_node(&clock, spec(), runs);

    // A job never run: nothing to catch up.
    let runs_a = Arc::new(AtomicU64::new(0));
    let (a, fut_a) = start(&runs_a);
    assert!(a.wait_idle(BOUND));
    assert_eq!(
        runs_a.load(Ordering::SeqCst),
        0,
        "a new job is not caught up"
    );
    clock.advance(PERIOD); // t = 10 s: node A runs the job
    assert!(wait_until(|| runs_a.load(Ordering::SeqCst) == 1));
    assert!(a.wait_idle(BOUND));

    // Node B starts while the last run is recent: no catch-up.
    clock.advance(sec(5)); // t = 15 s
    let runs_b = Arc::new(AtomicU64::new(0));
    let (b, fut_b) = start(&runs_b);
    assert!(b.wait_idle(BOUND));
    assert_eq!(runs_b.load(Ordering::SeqCst), 0, "the last run is 5 s old");

    // Every node goes down, over two ticks.
    fut_a.cancel();
    fut_b.cancel();
    a.close();
    b.close();
    clock.advance(sec(20)); // t = 35 s: the last run is 25 s old, two ticks missed

    let runs_c = Arc::new(AtomicU64::new(0));
    let (c, fut_c) = start(&runs_c);
    assert!(
        wait_until(|| runs_c.load(Ordering::SeqCst) == 1),
        "caught up at once"
    );
    assert!(c.wait_idle(BOUND));
    assert_eq!(
        runs_c.load(Ordering::SeqCst),
        1,
        "once, not once per missed tick"
    );
    clock.advance(sec(9)); // t = 44 s
    assert!(c.wait_idle(BOUND));
    assert_eq!(
        runs_c.load(Ordering::SeqCst),
        1,
        "then the schedule: next at 45 s"
    );
    clock.advance(sec(1));
    assert!(wait_until(|| runs_c.load(Ordering::SeqCst) == 2));
    fut_c.cancel();
    c.close();
}

/// `Exclusive::catch_up` with `at_least_for`: the catch-up's lease does not take the next
/// tick. The job last ran 32 s ago (period 10 s); the catch-up runs at once and the first
/// deadline of the grid, 3 s later and so within `at_least_for` (5 s) of the catch-up,
/// runs too; it used to find the lock held by the catch-up's own lease and skip
/// (`LastRun::LockHeld`), its next run a whole period later. An ordinary run still keeps
/// the lock for `at_least_for`.
#[test]
fn a_catch_up_lease_does_not_take_the_next_tick() {
    let clock = ManualClock::new();
    let lock = Arc::new(LocalLock::with_clock(clock.clone()));
    let last = lock.try_acquire("report", sec(60)).unwrap().unwrap(); // the job ran ...
    lock.release(last, Duration::ZERO).unwrap();
    clock.advance(sec(32)); // ... 32 s ago
    let spec = Periodic::at_fixed_rate(PERIOD)
        .initial_delay(sec(3))
        .exclusive(
            Exclusive::new(lock.clone(), "report", sec(60))
                .at_least_for(sec(5))
                .catch_up(),
        );
    let runs = Arc::new(AtomicU64::new(0));
    let (pool, fut) = counting_node(&clock, spec, &runs);
    assert!(
        wait_until(|| runs.load(Ordering::SeqCst) == 1),
        "caught up at once"
    );
    assert!(pool.wait_idle(BOUND));
    clock.advance(sec(3)); // the grid's first deadline
    assert!(
        wait_until(|| runs.load(Ordering::SeqCst) == 2),
        "the first tick runs: {:?}",
        pool.scheduled_tasks()
    );
    assert!(pool.wait_idle(BOUND));
    let stats = pool.stats();
    assert_eq!((stats.lock_acquired, stats.lock_skipped), (2, 0));
    assert_eq!(
        pool.scheduled_tasks()[0].last_run,
        Some(schedpool::LastRun::Completed)
    );
    clock.advance(sec(4)); // 4 s after the tick's run: its at_least_for still holds
    assert!(
        lock.try_acquire("report", sec(60)).unwrap().is_none(),
        "an ordinary run keeps the lock for at_least_for"
    );
    fut.cancel();
    pool.close();
}

/// `Exclusive::catch_up` of a fixed-rate job whose first deadline here is less than a
/// period away: after the run at once, the next run is that first deadline (the job's
/// grid), not one period after the catch-up run.
#[test]
fn catch_up_keeps_a_first_deadline_nearer_than_a_period() {
    let clock = ManualClock::new();
    let lock = Arc::new(LocalLock::with_clock(clock.clone()));
    let spec = || {
        Periodic::at_fixed_rate(PERIOD)
            .initial_delay(sec(3))
            .exclusive(Exclusive::new(lock.clone(), "grid", sec(60)).catch_up())
    };
    let start = |runs: &Arc<AtomicU64>| counting_node(&clock, spec(), runs);

    // Node A runs the job once, at t = 3 s, and goes down.
    let runs_a = Arc::new(AtomicU64::new(0));
    let (a, fut_a) = start(&runs_a);
    clock.advance(sec(3));
    assert!(wait_until(|| runs_a.load(Ordering::SeqCst) == 1));
    fut_a.cancel();
    a.close();
    clock.advance(sec(17)); // t = 20 s: the last run is 17 s old

    // Node B catches up at once; its first deadline as scheduled is 23 s.
    let runs_b = Arc::new(AtomicU64::new(0));
    let (b, fut_b) = start(&runs_b);
    assert!(
        wait_until(|| runs_b.load(Ordering::SeqCst) == 1),
        "caught up at once"
    );
    assert!(b.wait_idle(BOUND));
    clock.advance(sec(3)); // t = 23 s
    assert!(b.wait_idle(BOUND));
    assert_eq!(
        runs_b.load(Ordering::SeqCst),
        2,
        "the first deadline as scheduled, 3 s after the catch-up run"
    );
    clock.advance(sec(9)); // t = 32 s
    assert!(b.wait_idle(BOUND));
    assert_eq!(runs_b.load(Ordering::SeqCst), 2, "next at 33 s");
    clock.advance(sec(1));
    assert!(wait_until(|| runs_b.load(Ordering::SeqCst) == 3));
    fut_b.cancel();
    b.close();
}

/// A store that keeps no time of its last acquisition: the task is scheduled as usual.
#[test]
fn catch_up_with_a_store_that_cannot_tell_schedules_as_usual() {
    record_warnings();
    let clock = ManualClock::new();
    let store = Flaky::new(&clock, false);
    let pool = node(&clock);
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_periodic(
            Periodic::at_fixed_rate(PERIOD)
                .initial_delay(PERIOD)
                .exclusive(Exclusive::new(store, "tellless", sec(60)).catch_up()),
            move || {
                r.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap();
    assert!(pool.wait_idle(BOUND));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(warned(
        "could not ask the lock's store when the job last ran",
        "tellless",
        "does not keep"
    ));
    clock.advance(PERIOD);
    assert!(wait_until(|| runs.load(Ordering::SeqCst) == 1));
    fut.cancel();
    pool.close();
}

/// A store that calls back into the pool from every method: `try_acquire` reads the
/// queue and submits a task, `release` lists the tasks and, on the second run, cancels
/// the job it serves. The store is called with no lock of the pool held, so none of it
/// deadlocks; every task it submitted runs, and the job ends cancelled after two runs.
struct CallsPool {
    inner: LocalLock,
    pool: std::sync::OnceLock<ScheduledThreadPoolExecutor>,
    job: std::sync::OnceLock<schedpool::CancelHandle>,
    submitted: Mutex<Vec<schedpool::ScheduledFuture<()>>>,
    releases: AtomicU64,
}

impl ClusterLock for CallsPool {
    fn try_acquire(&self, name: &str, at_most_for: Duration) -> Result<Option<Lease>, LockError> {
        let pool = self.pool.get().expect("set before the first run");
        let _ = pool.queue_len();
        let fut = pool.submit(|| ()).expect("the pool is running");
        self.submitted.lock().unwrap().push(fut);
        self.inner.try_acquire(name, at_most_for)
    }

    fn release(&self, lease: Lease, at_least_for: Duration) -> Result<bool, LockError> {
        let pool = self.pool.get().expect("set before the first run");
        assert!(!pool.scheduled_tasks().is_empty(), "the job is listed");
        if self.releases.fetch_add(1, Ordering::SeqCst) == 1 {
            assert!(
                self.job.get().expect("set").cancel(),
                "the job is cancelled"
            );
        }
        self.inner.release(lease, at_least_for)
    }

    fn extend(&self, lease: &Lease, at_most_for: Duration) -> Result<bool, LockError> {
        let _ = self.pool.get().expect("set").stats();
        self.inner.extend(lease, at_most_for)
    }
}

#[test]
fn a_store_that_calls_the_pool_from_every_method_does_not_deadlock() {
    let clock = ManualClock::new();
    let store = Arc::new(CallsPool {
        inner: LocalLock::with_clock(clock.clone()),
        pool: Default::default(),
        job: Default::default(),
        submitted: Mutex::default(),
        releases: AtomicU64::new(0),
    });
    let pool = node(&clock);
    assert!(store.pool.set(pool.clone()).is_ok());
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let spec = Periodic::at_fixed_rate(PERIOD)
        .initial_delay(PERIOD)
        .exclusive(Exclusive::new(store.clone(), "report", sec(60)));
    let fut = pool
        .schedule_periodic(spec, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert!(store.job.set(fut.cancel_handle()).is_ok());
    for _ in 0..2 {
        clock.advance(PERIOD);
        assert!(pool.wait_idle(BOUND), "a store call deadlocked the worker");
    }
    assert!(
        wait_until(|| fut.is_done()),
        "the release's cancel took effect"
    );
    assert!(fut.get().unwrap_err().is_cancelled());
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let submitted = std::mem::take(&mut *store.submitted.lock().unwrap());
    assert_eq!(submitted.len(), 2);
    for f in submitted {
        assert!(f.wait_timeout(BOUND), "what the store submitted ran");
        f.get().unwrap();
    }
    pool.shutdown();
    assert!(pool.await_termination(BOUND));
}

/// A store whose `try_acquire` blocks until a gate opens: it holds up only the worker
/// that runs the exclusive job; the other worker runs other tasks meanwhile, and the
/// job's run follows when the store answers.
struct Blocks {
    inner: LocalLock,
    gate: common::Gate,
    entered: AtomicBool,
}

impl ClusterLock for Blocks {
    fn try_acquire(&self, name: &str, at_most_for: Duration) -> Result<Option<Lease>, LockError> {
        self.entered.store(true, Ordering::SeqCst);
        self.gate.wait();
        self.inner.try_acquire(name, at_most_for)
    }

    fn release(&self, lease: Lease, at_least_for: Duration) -> Result<bool, LockError> {
        self.inner.release(lease, at_least_for)
    }
}

#[test]
fn a_store_that_blocks_holds_up_only_its_own_run() {
    let clock = ManualClock::new();
    let store = Arc::new(Blocks {
        inner: LocalLock::with_clock(clock.clone()),
        gate: common::Gate::default(),
        entered: AtomicBool::new(false),
    });
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .clock(clock.clone())
        .build();
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let spec = Periodic::at_fixed_rate(PERIOD)
        .max_runs(1)
        .exclusive(Exclusive::new(store.clone(), "report", sec(60)));
    let fut = pool
        .schedule_periodic(spec, move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert!(wait_until(|| store.entered.load(Ordering::SeqCst)));
    // One worker waits in the store; the other runs these.
    for i in 0..10u64 {
        let f = pool.submit(move || i).unwrap();
        assert!(f.wait_timeout(BOUND), "the other worker is free");
        assert_eq!(f.get().unwrap(), i);
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the job waits for its store"
    );
    store.gate.open();
    assert!(fut.wait_timeout(BOUND));
    assert!(fut.get().is_ok());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    pool.shutdown();
    assert!(pool.await_termination(BOUND));
}

// ---- a job paused on every node through its lock's store ----

#[test]
fn a_job_paused_in_the_store_skips_its_ticks_on_every_node_until_resumed() {
    let clock = ManualClock::new();
    clock.set_wall_time(std::time::UNIX_EPOCH + sec(1_764_927_000));
    let lock = Arc::new(LocalLock::with_clock(clock.clone()));
    let nodes: Vec<_> = (0..2).map(|_| node(&clock)).collect();
    let runs = Arc::new(AtomicU64::new(0));
    let futs: Vec<_> = nodes
        .iter()
        .map(|pool| {
            let r = runs.clone();
            pool.schedule_periodic(job(lock.clone()).name("report"), move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap()
        })
        .collect();
    settle(&nodes); // tick 0 runs on one node
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(lock.paused("report").unwrap(), None);
    lock.pause("report", "ops on call", None).unwrap();
    let pause = lock.paused("report").unwrap().expect("paused");
    assert_eq!(pause.by, "ops on call");
    assert_eq!(pause.since, clock.wall_time());
    for _ in 0..3 {
        clock.advance(PERIOD);
        settle(&nodes);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "no node ran a paused tick");
    for pool in &nodes {
        let row = &pool.scheduled_tasks()[0];
        assert!(row.paused, "{row}");
        assert_eq!(row.last_run, Some(schedpool::LastRun::Paused));
        assert_eq!(row.paused_by.as_deref(), Some("ops on call"));
        assert_eq!(row.paused_since, Some(pause.since));
        assert_eq!(row.paused_until, None);
        assert!(
            row.to_string()
                .contains(r#"paused=true paused_by="ops on call""#),
            "{row}"
        );
        assert_eq!(pool.stats().paused_runs, 3, "each node skipped each tick");
        assert_eq!(pool.stats().lock_acquired + pool.stats().lock_skipped, 1);
    }
    assert!(lock.resume("report").unwrap());
    assert!(!lock.resume("report").unwrap(), "not paused any more");
    clock.advance(PERIOD);
    settle(&nodes);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the next tick runs, on one node"
    );
    for pool in &nodes {
        let row = &pool.scheduled_tasks()[0];
        assert!(!row.paused && row.paused_by.is_none(), "{row}");
    }
    for (f, p) in futs.iter().zip(&nodes) {
        assert!(f.cancel());
        p.close();
    }
}

#[test]
fn a_pause_until_a_time_ends_by_itself() {
    let clock = ManualClock::new();
    let lock = Arc::new(LocalLock::with_clock(clock.clone()));
    let pool = node(&clock);
    let runs = Arc::new(AtomicU64::new(0));
    let r = runs.clone();
    let fut = pool
        .schedule_periodic(job(lock.clone()).initial_delay(PERIOD), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let until = clock.wall_time() + PERIOD * 2 + sec(5); // ticks 1 and 2 paused
    lock.pause("report", "migration", Some(until)).unwrap();
    for _ in 0..4 {
        clock.advance(PERIOD);
        settle(std::slice::from_ref(&pool));
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2, "ticks 3 and 4 ran");
    assert_eq!(lock.paused("report").unwrap(), None, "over");
    assert!(
        !lock.resume("report").unwrap(),
        "an expired pause was no pause"
    );
    assert_eq!(pool.stats().paused_runs, 2);
    fut.cancel();
    pool.close();
}

#[test]
fn run_now_of_an_exclusive_job_runs_it_once_on_the_node_asked() {
    let clock = ManualClock::new();
    let lock = Arc::new(LocalLock::with_clock(clock.clone()));
    let (a, b) = (node(&clock), node(&clock));
    let ran_on: Arc<Mutex<Vec<&str>>> = Arc::default();
    let spec = job(lock.clone()).initial_delay(PERIOD); // no tick before the extra run
    let (ra, rb) = (ran_on.clone(), ran_on.clone());
    let fut_a = a
        .schedule_periodic(spec.clone(), move || ra.lock().unwrap().push("a"))
        .unwrap();
    let fut_b = b
        .schedule_periodic(spec, move || rb.lock().unwrap().push("b"))
        .unwrap();
    assert!(fut_a.run_now());
    settle(&[a.clone(), b.clone()]);
    assert_eq!(*ran_on.lock().unwrap(), ["a"], "one run, on the node asked");
    assert_eq!(fut_a.delay(), PERIOD, "back to its tick");
    // While the job is paused in the store, an extra run is skipped like a tick.
    lock.pause("report", "ops", None).unwrap();
    clock.advance(PERIOD / 2 + sec(1)); // past at_least_for: the lock is free again
    assert!(fut_b.run_now());
    settle(&[a.clone(), b.clone()]);
    assert_eq!(*ran_on.lock().unwrap(), ["a"]);
    assert_eq!(
        b.scheduled_tasks()[0].last_run,
        Some(schedpool::LastRun::Paused)
    );
    fut_a.cancel();
    fut_b.cancel();
    a.close();
    b.close();
}

/// A store that cannot pause (the trait's defaults): its jobs run as before, and a pause
/// is refused with `Unsupported`.
#[test]
fn a_store_without_pauses_runs_its_jobs_and_refuses_a_pause() {
    let clock = ManualClock::new();
    let store = Flaky::new(&clock, true);
    assert!(matches!(
        store.pause("report", "ops", None),
        Err(LockError::Unsupported(_))
    ));
    assert!(matches!(
        store.resume("report"),
        Err(LockError::Unsupported(_))
    ));
    assert_eq!(store.paused("report").unwrap(), None);
}
