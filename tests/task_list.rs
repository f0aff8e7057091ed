//! The task list (`scheduled_tasks`) as a dashboard reads it: queued and running tasks,
//! the schedule in words, when the last run started, and the one-line `Display`.

use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use schedpool::{
    LastRun, MissedTicks, Periodic, ScheduledThreadPoolExecutor, TaskInfo, TaskKind, Trigger,
    TriggerContext,
};

mod common;
use common::{manual_pool, sec, shutdown_now_and_wait, wait_until, Gate, BOUND};

/// The one row for the task named `name`, waiting (bounded) until `ready` holds for it.
fn row_when(
    pool: &ScheduledThreadPoolExecutor,
    name: &str,
    ready: impl Fn(&TaskInfo) -> bool,
) -> TaskInfo {
    let mut last = Vec::new();
    let found = wait_until(|| {
        last = pool.scheduled_tasks();
        last.iter()
            .any(|t| t.name.as_deref() == Some(name) && ready(t))
    });
    assert!(found, "no row for {name} as wanted: {last:?}");
    let rows: Vec<_> = last
        .into_iter()
        .filter(|t| t.name.as_deref() == Some(name))
        .collect();
    assert_eq!(rows.len(), 1, "one row per task: {rows:?}");
    rows.into_iter().next().unwrap()
}

#[test]
fn a_periodic_task_is_listed_while_it_runs_and_after() {
    let (clock, pool) = manual_pool(1);
    let t0 = clock.now();
    let gate = Gate::default();
    let g = gate.clone();
    let mut first = true;
    let job = Periodic::at_fixed_rate(sec(10)).name("report");
    pool.schedule_periodic(job, move || {
        if std::mem::take(&mut first) {
            g.wait();
        }
    })
    .unwrap();

    let running = row_when(&pool, "report", |t| t.running);
    assert_eq!(running.kind, TaskKind::FixedRate);
    assert_eq!(running.schedule, "fixed rate 10s");
    assert_eq!(running.deadline, t0, "the run in progress's deadline");
    assert_eq!(running.due_in, Duration::ZERO);
    assert_eq!(
        running.last_started,
        Some(t0),
        "the run in progress started at 0"
    );
    assert_eq!(
        (running.runs, running.last_run),
        (0, None),
        "no run finished yet"
    );
    assert!(!running.cancelled);
    assert_eq!(
        pool.queue_len(),
        0,
        "listed while out of the queue, not queued"
    );

    gate.open();
    let after = row_when(&pool, "report", |t| !t.running && t.runs == 1);
    assert_eq!(after.deadline, t0 + sec(10));
    assert_eq!(after.due_in, sec(10));
    assert_eq!(after.last_started, Some(t0));
    assert_eq!(after.last_run, Some(LastRun::Completed));

    clock.advance(sec(10));
    assert!(pool.wait_idle(BOUND));
    let second = row_when(&pool, "report", |t| t.runs == 2);
    assert_eq!(second.last_started, Some(t0 + sec(10)));
    assert_eq!(second.deadline, t0 + sec(20));
    pool.close();
}

#[test]
fn a_running_one_shot_is_listed_until_its_run_ends() {
    let (clock, pool) = manual_pool(1);
    let gate = Gate::default();
    let g = gate.clone();
    let fut = pool.named("import").submit(move || g.wait()).unwrap();
    let row = row_when(&pool, "import", |t| t.running);
    assert_eq!((row.kind, row.schedule.as_str()), (TaskKind::Once, "once"));
    assert_eq!(row.last_started, Some(clock.now()));
    assert_eq!(row.id, fut.id());
    gate.open();
    assert!(fut.wait_timeout(BOUND));
    assert!(
        wait_until(|| pool.scheduled_tasks().is_empty()),
        "gone once its run is over: {:?}",
        pool.scheduled_tasks()
    );
    pool.close();
}

#[test]
fn a_periodic_task_cancelled_during_its_run_shows_running_and_cancelled() {
    let (_clock, pool) = manual_pool(1);
    let gate = Gate::default();
    let g = gate.clone();
    let fut = pool
        .schedule_periodic(Periodic::with_fixed_delay(sec(1)).name("sync"), move || {
            g.wait()
        })
        .unwrap();
    row_when(&pool, "sync", |t| t.running);
    assert!(fut.cancel());
    let row = row_when(&pool, "sync", |t| t.running);
    assert!(row.cancelled, "{row:?}");
    gate.open();
    assert!(wait_until(|| pool.scheduled_tasks().is_empty()));
    pool.close();
}

/// The issue's flapping task list: a job that is often running must be in every
/// snapshot, exactly once. Two workers keep a short job busy on the real clock while this
/// thread takes snapshots; a take, a run, a re-queue or a `leave` between the snapshot's
/// reads must never make the job vanish or show twice.
#[test]
fn every_snapshot_lists_a_busy_periodic_job_exactly_once() {
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(2)
        .build();
    let job = Periodic::at_fixed_rate(Duration::from_micros(200)).name("busy");
    let (tx, rx) = mpsc::channel::<()>();
    pool.schedule_periodic(job, move || {
        let _ = tx.send(());
        let until = Instant::now() + Duration::from_micros(100);
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    })
    .unwrap();
    // Other tasks come and go on the same workers, so takes and re-queues interleave.
    let churn = pool
        .schedule_at_fixed_rate(Duration::ZERO, Duration::from_micros(150), || ())
        .unwrap();
    rx.recv_timeout(BOUND).expect("the job runs");
    let mut running_seen = 0;
    for i in 0..3_000 {
        let list = pool.scheduled_tasks();
        let rows: Vec<_> = list
            .iter()
            .filter(|t| t.name.as_deref() == Some("busy"))
            .collect();
        assert_eq!(rows.len(), 1, "snapshot {i}: {list:?}");
        running_seen += usize::from(rows[0].running);
    }
    assert!(running_seen > 0 || rx.try_iter().count() > 0);
    churn.cancel();
    pool.close();
}

/// A trigger that says what it is.
struct Nightly;

impl Trigger for Nightly {
    fn next_deadline(&mut self, ctx: &TriggerContext) -> Option<Instant> {
        Some(ctx.scheduled + sec(86_400))
    }

    fn describe(&self) -> String {
        String::from("nightly at 02:00")
    }
}

/// A trigger that does not say what it is, and one whose description panics.
struct Plain;

impl Trigger for Plain {
    fn next_deadline(&mut self, _: &TriggerContext) -> Option<Instant> {
        None
    }
}

struct Broken;

impl Trigger for Broken {
    fn next_deadline(&mut self, _: &TriggerContext) -> Option<Instant> {
        None
    }

    fn describe(&self) -> String {
        panic!("describe failed")
    }
}

#[test]
fn schedules_are_described_in_words() {
    let (_clock, pool) = manual_pool(1);
    let later = sec(100);
    let specs = [
        ("rate", Periodic::at_fixed_rate(sec(60))),
        (
            "skip",
            Periodic::at_fixed_rate(Duration::from_millis(1500)).missed_ticks(MissedTicks::Skip),
        ),
        (
            "shift",
            Periodic::at_fixed_rate(sec(1)).missed_ticks(MissedTicks::Delay),
        ),
        ("delay", Periodic::with_fixed_delay(sec(5))),
        ("nightly", Periodic::with_trigger(Nightly)),
        ("plain", Periodic::with_trigger(Plain)),
        ("broken", Periodic::with_trigger(Broken)),
    ];
    for (name, spec) in specs {
        pool.schedule_periodic(spec.initial_delay(later).name(name), || ())
            .unwrap();
    }
    pool.named("once").schedule(later, || ()).unwrap();
    let described: Vec<(String, String)> = pool
        .scheduled_tasks()
        .into_iter()
        .map(|t| (t.name.unwrap(), t.schedule))
        .collect();
    let want = [
        ("rate", "fixed rate 1m"),
        ("skip", "fixed rate 1.5s, missed ticks skipped"),
        ("shift", "fixed rate 1s, missed ticks delay"),
        ("delay", "fixed delay 5s"),
        ("nightly", "nightly at 02:00"),
        ("plain", "trigger"),
        ("broken", "trigger"),
        ("once", "once"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect();
    assert_eq!(described, want, "in submission order (equal deadlines)");
    // The panicking description cost its row's words, not the pool.
    assert!(pool.submit(|| 1).unwrap().get().is_ok());
    shutdown_now_and_wait(&pool);
}

#[test]
fn a_row_prints_as_one_line_of_fields() {
    let (clock, pool) = manual_pool(1);
    // 2025-12-05 09:30 UTC on the clock's fake wall clock: the start time's field.
    clock.set_wall_time(std::time::UNIX_EPOCH + sec(1_764_927_000));
    let job = Periodic::with_fixed_delay(sec(30)).name("poll \"db\"");
    pool.schedule_periodic(job, || ()).unwrap();
    let cancelled = pool.schedule(sec(90), || ()).unwrap();
    let pool_2 = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(1)
        .clock(clock.clone())
        .remove_on_cancel(false)
        .build();
    let kept = pool_2.schedule(sec(90), || ()).unwrap();
    assert!(kept.cancel());
    assert!(pool.wait_idle(BOUND));
    let rows = pool.scheduled_tasks();
    assert_eq!(
        rows[0].to_string(),
        format!(
            r#"id={} name="poll \"db\"" kind=fixed_delay schedule="fixed delay 30s" running=false due_in=30s runs=1 last_run=completed last_started_at=2025-12-05T09:30:00.000Z"#,
            rows[0].id
        )
    );
    assert_eq!(
        rows[1].to_string(),
        format!(
            r#"id={} kind=once schedule="once" running=false due_in=90s runs=0"#,
            rows[1].id
        )
    );
    let kept_row = &pool_2.scheduled_tasks()[0];
    assert!(
        kept_row.to_string().ends_with(" cancelled=true"),
        "{kept_row}"
    );
    drop(cancelled);
    shutdown_now_and_wait(&pool);
    shutdown_now_and_wait(&pool_2);
}

/// Snapshots taken from many threads while tasks come and go end with the pool: nothing
/// a snapshot copies keeps a task alive past it.
#[test]
fn snapshots_from_other_threads_keep_nothing_alive() {
    let pool = Arc::new(ScheduledThreadPoolExecutor::new(2));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let pool = pool.clone();
            thread::spawn(move || {
                for _ in 0..500 {
                    for t in pool.scheduled_tasks() {
                        assert!(t.runs <= 1_000_000);
                    }
                }
            })
        })
        .collect();
    let futs: Vec<_> = (0..2_000)
        .map(|i| pool.submit(move || i).unwrap())
        .collect();
    for r in readers {
        r.join().unwrap();
    }
    for (i, f) in futs.into_iter().enumerate() {
        assert_eq!(f.get().unwrap(), i);
    }
    assert!(pool.close_timeout(BOUND));
    assert!(pool.scheduled_tasks().is_empty());
}

#[cfg(feature = "cron")]
#[test]
fn a_cron_job_shows_its_expression_and_zone() {
    use schedpool::CronTrigger;
    let (_clock, pool) = manual_pool(1);
    let nightly = CronTrigger::parse("0 30 2 * * *")
        .unwrap()
        .in_time_zone("Europe/Berlin")
        .unwrap();
    pool.schedule_periodic(Periodic::with_trigger(nightly).name("backup"), || ())
        .unwrap();
    let row = &pool.scheduled_tasks()[0];
    assert_eq!(row.kind, TaskKind::Trigger);
    assert_eq!(row.schedule, r#"cron "0 30 2 * * *" Europe/Berlin"#);
    shutdown_now_and_wait(&pool);
}
