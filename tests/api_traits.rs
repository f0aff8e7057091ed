//! Auto traits and standard traits of every public type (checked at compile time; each
//! test also exercises the trait once at run time).

use std::cell::Cell;
use std::collections::HashSet;
use std::error::Error;
use std::fmt::{Debug, Display};
use std::hash::Hash;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use schedpool::{
    AsyncRuntime, Builder, CancelHandle, DelayKey, DelayQueue, ManualClock, MissedTicks, OnPanic,
    ParkingRuntime, PendingTask, Periodic, PoolStats, PriorityBlockingQueue, PriorityKey,
    RejectionPolicy, ScheduleError, ScheduledFuture, ScheduledThreadPoolExecutor, SpinPolicy,
    TaskError, TriggerContext,
};

mod common;
use common::{close, outcome};

fn send<T: Send>() {}
fn sync<T: Sync>() {}
fn clone<T: Clone>() {}
fn debug<T: Debug>() {}
fn unpin<T: Unpin>() {}
fn error<T: Error + Display + Debug + Send + Sync + 'static>() {}
fn key<T: Copy + Clone + Debug + PartialEq + Eq + Hash>() {}

/// `Send` but not `Sync`: proves a bound asks only for `T: Send`.
type SendOnly = Receiver<u8>;

#[test]
fn executor_is_clone_send_sync_debug() {
    send::<ScheduledThreadPoolExecutor>();
    sync::<ScheduledThreadPoolExecutor>();
    clone::<ScheduledThreadPoolExecutor>();
    debug::<ScheduledThreadPoolExecutor>();
    let pool = ScheduledThreadPoolExecutor::new(1);
    let copy = pool.clone();
    assert!(format!("{copy:?}").contains("ScheduledThreadPoolExecutor"));
    drop(copy);
    assert!(
        !pool.is_shutdown(),
        "dropping a clone is not the last handle"
    );
    close(&pool);
}

#[test]
fn builder_is_debug_and_default() {
    debug::<Builder>();
    let b = Builder::default().core_pool_size(3);
    let shown = format!("{b:?}");
    assert!(shown.contains("max_queued_tasks: unbounded"), "{shown}");
    assert!(!shown.contains(&usize::MAX.to_string()), "{shown}");
    let bounded = format!("{:?}", Builder::new().max_queued_tasks(64));
    assert!(bounded.contains("max_queued_tasks: 64"), "{bounded}");
    assert_eq!(b.build().core_pool_size(), 3);
}

#[test]
fn debug_output_names_states_and_shows_deadlines_as_durations() {
    let clock = ManualClock::new();
    let pool = Builder::new()
        .core_pool_size(1)
        .clock(clock.clone())
        .build();
    let fut = pool.schedule(Duration::from_secs(90), || ()).unwrap();
    let shown = format!("{fut:?}");
    assert!(shown.contains("state: \"scheduled\""), "{shown}");
    assert!(shown.contains("deadline: 90s"), "{shown}");
    // A pending task taken out by `shutdown_now` shows its deadline the same way.
    let other = Builder::new().clock(clock.clone()).build();
    let _kept = other.schedule(Duration::from_secs(60), || ()).unwrap();
    let pending = other.shutdown_now();
    let shown = format!("{:?}", pending[0]);
    assert!(shown.contains("deadline: 60s"), "{shown}");
    assert!(!shown.contains("tv_sec"), "no raw Instant: {shown}");
    fut.cancel();
    assert!(format!("{fut:?}").contains("state: \"cancelled\""));

    // Running, done and panicked, each as the future's Debug shows it.
    let (started_tx, started) = std::sync::mpsc::channel();
    let (go, go_rx) = std::sync::mpsc::channel::<()>();
    let running = pool
        .submit(move || {
            started_tx.send(()).unwrap();
            go_rx.recv().unwrap();
        })
        .unwrap();
    started.recv().unwrap();
    assert!(
        format!("{running:?}").contains("state: \"running\""),
        "{running:?}"
    );
    go.send(()).unwrap();
    assert!(running.wait_timeout(Duration::from_secs(10)));
    assert!(
        format!("{running:?}").contains("state: \"done\""),
        "{running:?}"
    );
    let boom = pool.submit(|| -> u8 { panic!("boom") }).unwrap();
    assert!(boom.wait_timeout(Duration::from_secs(10)));
    assert!(
        format!("{boom:?}").contains("state: \"panicked\""),
        "{boom:?}"
    );
    pool.shutdown();
}

#[test]
fn scheduled_future_is_send_sync_unpin_debug_when_t_is_send() {
    send::<ScheduledFuture<u32>>();
    sync::<ScheduledFuture<u32>>();
    unpin::<ScheduledFuture<u32>>();
    debug::<ScheduledFuture<u32>>();
    send::<ScheduledFuture<Cell<u8>>>();
    sync::<ScheduledFuture<Cell<u8>>>();
    send::<ScheduledFuture<SendOnly>>();
    sync::<ScheduledFuture<SendOnly>>();
    unpin::<ScheduledFuture<SendOnly>>();
    let pool = ScheduledThreadPoolExecutor::new(1);
    let fut = pool.submit(|| Cell::new(7u8)).unwrap();
    assert!(!format!("{fut:?}").is_empty());
    let fut = std::thread::spawn(move || fut).join().unwrap();
    assert_eq!(outcome(fut).unwrap().get(), 7);
    close(&pool);
}

#[test]
fn cancel_handle_is_clone_send_sync_debug() {
    send::<CancelHandle>();
    sync::<CancelHandle>();
    clone::<CancelHandle>();
    debug::<CancelHandle>();
    let clock = ManualClock::new();
    let pool = Builder::new().core_pool_size(1).clock(clock).build();
    let fut = pool.schedule(Duration::from_secs(1), || ()).unwrap();
    let handle = fut.cancel_handle().clone();
    assert!(!format!("{handle:?}").is_empty());
    assert!(std::thread::spawn(move || handle.cancel()).join().unwrap());
    assert!(fut.is_cancelled());
}

#[test]
fn pending_task_is_send_debug() {
    send::<PendingTask>();
    debug::<PendingTask>();
    let clock = ManualClock::new();
    let pool = Builder::new().core_pool_size(1).clock(clock).build();
    let fut = pool.schedule(Duration::from_secs(1), || 5).unwrap();
    let mut pending = pool.shutdown_now();
    assert_eq!(pending.len(), 1);
    let task = pending.pop().unwrap();
    assert!(!format!("{task:?}").is_empty());
    std::thread::spawn(move || task.run()).join().unwrap();
    assert_eq!(outcome(fut).unwrap(), 5);
}

#[test]
fn pool_stats_is_debug_clone_send_sync() {
    debug::<PoolStats>();
    clone::<PoolStats>();
    send::<PoolStats>();
    sync::<PoolStats>();
    let pool = ScheduledThreadPoolExecutor::new(1);
    let stats = pool.stats();
    let copy = stats.clone();
    assert_eq!(copy.core_pool_size, stats.core_pool_size);
    assert!(format!("{copy:?}").contains("core_pool_size"));
}

#[test]
fn manual_clock_is_clone_send_sync_debug_default() {
    send::<ManualClock>();
    sync::<ManualClock>();
    clone::<ManualClock>();
    debug::<ManualClock>();
    let clock = ManualClock::default();
    let copy = clock.clone();
    let t0 = clock.now();
    copy.advance(Duration::from_secs(2));
    assert_eq!(
        clock.now(),
        t0 + Duration::from_secs(2),
        "clones share time"
    );
    assert!(!format!("{clock:?}").is_empty());
}

#[test]
fn task_error_is_error_and_send() {
    error::<TaskError>();
    let cancelled: Box<dyn Error + Send + Sync> = Box::new(TaskError::Cancelled);
    assert!(!cancelled.to_string().is_empty());
    let panicked = TaskError::Panicked(schedpool::PanicPayload::new(Box::new("boom")));
    assert_eq!(panicked.panic_message(), Some("boom"));
    assert!(panicked.to_string().contains("boom"));
    assert!(format!("{panicked:?}").contains("Panicked"));
    assert_eq!(TaskError::Cancelled.panic_message(), None);
}

#[test]
fn schedule_error_is_error_clone_eq() {
    error::<ScheduleError>();
    sync::<ScheduleError>();
    clone::<ScheduleError>();
    fn eq<T: PartialEq + Eq>() {}
    eq::<ScheduleError>();
    let all = [
        ScheduleError::Shutdown,
        ScheduleError::QueueFull,
        ScheduleError::ZeroPeriod,
    ];
    for (i, a) in all.iter().enumerate() {
        assert_eq!(a.clone(), *a);
        assert!(!a.to_string().is_empty());
        for (j, b) in all.iter().enumerate() {
            assert_eq!(a == b, i == j);
        }
    }
}

#[test]
fn parking_runtime_is_copy_eq_debug_default_and_a_shareable_runtime() {
    fn copy_eq<T: Copy + Clone + Debug + PartialEq + Eq + Send + Sync + Default>() {}
    fn runtime<R: AsyncRuntime>() {}
    copy_eq::<ParkingRuntime>();
    runtime::<ParkingRuntime>();
    runtime::<std::sync::Arc<dyn AsyncRuntime>>(); // object-safe: one runtime for many jobs
    runtime::<Box<ParkingRuntime>>();
    runtime::<&'static ParkingRuntime>();
    assert_eq!(format!("{:?}", ParkingRuntime), "ParkingRuntime");
    let shared: std::sync::Arc<dyn AsyncRuntime> = std::sync::Arc::new(ParkingRuntime);
    let pool = ScheduledThreadPoolExecutor::new(1);
    let job = pool
        .schedule_async(Duration::ZERO, shared, || async { 3 })
        .unwrap();
    assert_eq!(outcome(job).unwrap(), 3);
    close(&pool);
}

#[test]
fn spin_policy_is_copy_eq_debug_default() {
    fn copy_eq<T: Copy + Clone + Debug + PartialEq + Eq + Send + Sync + Default>() {}
    copy_eq::<SpinPolicy>();
    assert_eq!(SpinPolicy::default(), SpinPolicy::Adaptive);
    assert_eq!(format!("{:?}", SpinPolicy::Never), "Never");
}

#[test]
fn rejection_policy_is_copy_eq_debug() {
    fn copy_eq<T: Copy + Clone + Debug + PartialEq + Eq + Send + Sync>() {}
    copy_eq::<RejectionPolicy>();
    let p = RejectionPolicy::CallerRuns;
    let q = p;
    assert_eq!(p, q);
    assert_ne!(RejectionPolicy::Abort, RejectionPolicy::Discard);
    assert_eq!(format!("{:?}", RejectionPolicy::Abort), "Abort");
}

#[test]
fn delay_queue_is_send_sync_debug_when_t_is_send() {
    send::<DelayQueue<u32>>();
    sync::<DelayQueue<u32>>();
    debug::<DelayQueue<u32>>();
    send::<DelayQueue<SendOnly>>();
    sync::<DelayQueue<SendOnly>>();
    let q = std::sync::Arc::new(DelayQueue::new());
    let q2 = q.clone();
    std::thread::spawn(move || {
        q2.offer(1u32, Duration::ZERO);
    })
    .join()
    .unwrap();
    assert_eq!(q.len(), 1);
    assert!(!format!("{q:?}").is_empty());
}

#[test]
fn priority_queue_is_send_sync_debug_when_t_is_send() {
    send::<PriorityBlockingQueue<u32>>();
    sync::<PriorityBlockingQueue<u32>>();
    debug::<PriorityBlockingQueue<u32>>();
    send::<PriorityBlockingQueue<Cell<u8>>>();
    sync::<PriorityBlockingQueue<Cell<u8>>>();
    let q = PriorityBlockingQueue::new();
    q.offer(2u32);
    assert!(!format!("{q:?}").is_empty());
    assert_eq!(q.poll(), Some(2));
}

#[test]
fn keys_are_copy_eq_hash_debug_send_sync() {
    key::<DelayKey>();
    key::<PriorityKey>();
    send::<DelayKey>();
    sync::<DelayKey>();
    send::<PriorityKey>();
    sync::<PriorityKey>();
    let dq = DelayQueue::new();
    let a = dq.offer('a', Duration::from_secs(60));
    let b = dq.offer('b', Duration::from_secs(60));
    let a2 = a;
    assert_eq!(a, a2);
    assert_ne!(a, b);
    assert_eq!(HashSet::from([a, a2, b]).len(), 2);
    assert!(!format!("{a:?}").is_empty());
    let pq = PriorityBlockingQueue::new();
    let x = pq.offer(1);
    let y = pq.offer(1);
    assert_ne!(x, y);
    assert_eq!(HashSet::from([x, x, y]).len(), 2);
}

#[test]
fn scheduling_control_types_have_their_traits() {
    fn copy_eq<T: Copy + Clone + Debug + PartialEq + Eq + Send + Sync>() {}
    fn copy_debug<T: Copy + Clone + Debug>() {}
    copy_eq::<MissedTicks>();
    copy_eq::<OnPanic>();
    copy_debug::<TriggerContext>();
    clone::<Periodic>();
    debug::<Periodic>();
    let spec = Periodic::at_fixed_rate(Duration::from_secs(1))
        .missed_ticks(MissedTicks::Skip)
        .on_panic(OnPanic::Continue);
    assert!(!format!("{:?}", spec.clone()).is_empty());
    assert_ne!(MissedTicks::Burst, MissedTicks::Delay);
    assert_ne!(OnPanic::Stop, OnPanic::Continue);
    let t0 = std::time::Instant::now();
    let ctx = TriggerContext {
        scheduled: t0,
        started: t0,
        finished: t0,
        runs: 1,
        panicked: false,
    };
    let copy = ctx;
    assert_eq!((copy.runs, ctx.runs), (1, 1));
    assert!(format!("{ctx:?}").contains("runs"));
}

#[cfg(feature = "cron")]
#[test]
fn cron_types_are_debug_and_cron_error_is_an_error() {
    use schedpool::{CronError, CronTrigger};
    debug::<CronTrigger>();
    error::<CronError>();
    let err = CronTrigger::parse("nonsense").unwrap_err();
    assert!(!err.to_string().is_empty());
    assert!(!format!("{err:?}").is_empty());
}
