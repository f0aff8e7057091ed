//! Operators' control of a running schedule: `pause`, `resume` and `run_now` on a task's
//! future or handle, and `pool.task(id)`, on a `ManualClock`, alone and against
//! `shutdown`, `shutdown_now`, `cancel`, `reschedule` and `wait_idle`.

use std::sync::{Arc, Mutex};

use schedpool::{
    LastRun, ManualClock, MissedTicks, Periodic, ScheduledFuture, ScheduledThreadPoolExecutor,
    TaskInfo,
};

mod common;
use common::{manual_pool, sec, Gate, BOUND};

/// The times (seconds since `start` on the pool's clock) at which a task ran.
#[derive(Clone, Default)]
struct Runs(Arc<Mutex<Vec<u64>>>);

impl Runs {
    fn recorder(&self, clock: &ManualClock) -> impl FnMut() + Send + 'static {
        let (runs, clock, start) = (self.0.clone(), clock.clone(), clock.now());
        move || {
            let at = clock.now().duration_since(start).as_secs();
            runs.lock().unwrap().push(at);
        }
    }

    fn at(&self) -> Vec<u64> {
        self.0.lock().unwrap().clone()
    }
}

/// Advances the clock by `secs`, a second at a time, letting each second's runs finish.
fn step(clock: &ManualClock, pool: &ScheduledThreadPoolExecutor, secs: u64) {
    for _ in 0..secs {
        clock.advance(sec(1));
        assert!(pool.wait_idle(BOUND));
    }
}

fn row(pool: &ScheduledThreadPoolExecutor, id: u64) -> TaskInfo {
    pool.scheduled_tasks()
        .into_iter()
        .find(|t| t.id == id)
        .expect("listed")
}

fn every(period: u64) -> Periodic {
    Periodic::at_fixed_rate(sec(period)).initial_delay(sec(period))
}

/// A task every 10 s, in its first run (at 10 s) until the returned gate opens.
fn held_in_its_first_run(
    clock: &ManualClock,
    pool: &ScheduledThreadPoolExecutor,
) -> (ScheduledFuture<()>, Gate) {
    let (entered, release) = (Gate::default(), Gate::default());
    let (e, r) = (entered.clone(), release.clone());
    let job = pool
        .schedule_periodic(every(10), move || {
            e.open();
            r.wait();
        })
        .unwrap();
    clock.advance(sec(10));
    entered.wait();
    (job, release)
}

fn periodic(
    pool: &ScheduledThreadPoolExecutor,
    clock: &ManualClock,
    spec: Periodic,
) -> (ScheduledFuture<()>, Runs) {
    let runs = Runs::default();
    let fut = pool.schedule_periodic(spec, runs.recorder(clock)).unwrap();
    (fut, runs)
}

#[test]
fn a_paused_fixed_rate_task_skips_its_ticks_and_resumes_on_its_grid() {
    let (clock, pool) = manual_pool(1);
    let (job, runs) = periodic(&pool, &clock, every(10).name("report"));
    step(&clock, &pool, 10);
    assert_eq!(runs.at(), [10]);
    assert!(job.pause(), "this call paused it");
    assert!(!job.pause(), "paused already");
    assert!(job.is_paused());
    let info = row(&pool, job.id());
    assert!(info.paused);
    assert!(info.to_string().contains("paused=true"), "{info}");
    step(&clock, &pool, 25); // the ticks at 20 and 30 are skipped
    assert_eq!(runs.at(), [10]);
    let info = row(&pool, job.id());
    assert_eq!(info.last_run, Some(LastRun::Paused));
    assert_eq!(info.runs, 1, "skips are not runs");
    assert_eq!(pool.stats().paused_runs, 2);
    assert!(job.resume());
    assert!(!job.resume(), "not paused any more");
    assert!(!row(&pool, job.id()).paused);
    step(&clock, &pool, 15); // 40 and 50: on its grid, no burst of the missed ticks
    assert_eq!(runs.at(), [10, 40, 50]);
    pool.close();
}

#[test]
fn a_resumed_burst_policy_task_does_not_catch_up_the_paused_ticks() {
    let (clock, pool) = manual_pool(1);
    let spec = every(10).missed_ticks(MissedTicks::Burst);
    let (job, runs) = periodic(&pool, &clock, spec);
    assert!(job.pause());
    clock.advance(sec(45)); // one jump over four ticks: each due tick is skipped
    assert!(pool.wait_idle(BOUND));
    assert!(job.resume());
    step(&clock, &pool, 5);
    assert_eq!(
        runs.at(),
        [50],
        "the missed ticks were skipped, not kept for a burst"
    );
    pool.close();
}

#[test]
fn run_now_runs_once_and_a_fixed_rate_task_goes_back_to_its_grid() {
    let (clock, pool) = manual_pool(1);
    let (job, runs) = periodic(&pool, &clock, every(60));
    step(&clock, &pool, 15);
    assert!(job.run_now());
    assert!(pool.wait_idle(BOUND));
    assert_eq!(runs.at(), [15], "the extra run, at once");
    assert_eq!(job.delay(), sec(45), "back to its tick at 60");
    step(&clock, &pool, 45);
    assert_eq!(runs.at(), [15, 60]);
    assert_eq!(row(&pool, job.id()).runs, 2, "the extra run counts");
    pool.close();
}

#[test]
fn run_now_of_a_fixed_delay_task_counts_the_next_delay_from_the_extra_run() {
    let (clock, pool) = manual_pool(1);
    let spec = Periodic::with_fixed_delay(sec(60)).initial_delay(sec(60));
    let (job, runs) = periodic(&pool, &clock, spec);
    step(&clock, &pool, 20);
    assert!(job.run_now());
    assert!(pool.wait_idle(BOUND));
    assert_eq!(job.delay(), sec(60), "60 s from the extra run");
    step(&clock, &pool, 60);
    assert_eq!(runs.at(), [20, 80]);
    pool.close();
}

#[cfg(feature = "cron")]
#[test]
fn run_now_of_a_cron_task_goes_back_to_its_next_time() {
    use schedpool::CronTrigger;
    let (clock, pool) = manual_pool(1);
    let cron = CronTrigger::parse("0 0 * * * *").unwrap(); // every hour, UTC
    let (job, runs) = periodic(&pool, &clock, Periodic::with_trigger(cron));
    let before = job.delay();
    assert!(job.run_now());
    assert!(pool.wait_idle(BOUND));
    assert_eq!(runs.at(), [0]);
    assert_eq!(job.delay(), before, "the next full hour, as before");
    pool.close();
}

#[test]
fn run_now_twice_before_the_extra_run_asks_for_one() {
    let (clock, pool) = manual_pool(1);
    let gate = Gate::default();
    let g = gate.clone();
    // The worker is held busy, so the extra run waits in the queue.
    pool.submit(move || g.wait()).unwrap();
    let (job, runs) = periodic(&pool, &clock, every(60));
    assert!(job.run_now());
    assert!(job.run_now(), "pending already: true, and nothing more");
    gate.open();
    assert!(pool.wait_idle(BOUND));
    assert_eq!(runs.at(), [0]);
    assert_eq!(job.delay(), sec(60));
    pool.close();
}

#[test]
fn run_now_during_a_run_runs_once_more_after_it_never_beside_it() {
    let (clock, pool) = manual_pool(2);
    let (entered, release) = (Gate::default(), Gate::default());
    let log = Arc::new(Mutex::new(Vec::new()));
    let (e, r, l) = (entered.clone(), release.clone(), log.clone());
    let mut first = true;
    let job = pool
        .schedule_periodic(every(60), move || {
            l.lock().unwrap().push("start");
            if std::mem::take(&mut first) {
                e.open();
                r.wait();
            }
            l.lock().unwrap().push("end");
        })
        .unwrap();
    step(&clock, &pool, 0);
    clock.advance(sec(60));
    entered.wait(); // the tick at 60 runs
    assert!(job.run_now(), "asked during the run");
    assert!(job.run_now(), "and again: still one extra run");
    release.open();
    assert!(pool.wait_idle(BOUND));
    assert_eq!(
        *log.lock().unwrap(),
        ["start", "end", "start", "end"],
        "the extra run after the first, never beside it"
    );
    assert_eq!(job.delay(), sec(60), "then back to its grid: 120");
    pool.close();
}

#[test]
fn run_now_of_a_paused_or_ended_task_is_refused() {
    let (clock, pool) = manual_pool(1);
    let (job, runs) = periodic(&pool, &clock, every(60));
    assert!(job.pause());
    assert!(!job.run_now(), "resume it first");
    assert!(job.cancel());
    assert!(!job.run_now());
    assert!(!job.pause() && !job.resume(), "ended");
    assert!(runs.at().is_empty());
    pool.close();
}

#[test]
fn a_queued_one_shot_runs_now_and_cannot_be_paused() {
    let (_clock, pool) = manual_pool(1);
    let fut = pool.schedule(sec(3600), || 42).unwrap();
    assert!(!fut.pause(), "a one-shot has no schedule to pause");
    assert!(!fut.is_paused());
    assert!(fut.run_now());
    assert_eq!(fut.get().unwrap(), 42);
    let done = pool.schedule(sec(1), || ()).unwrap();
    assert!(done.cancel());
    assert!(!done.run_now(), "ended");
    pool.close();
}

#[test]
fn a_task_by_its_id_from_the_task_list() {
    let (clock, pool) = manual_pool(1);
    let (job, runs) = periodic(&pool, &clock, every(10).name("poll"));
    let id = pool.scheduled_tasks()[0].id;
    assert_eq!(id, job.id());
    let handle = pool.task(id).expect("queued");
    assert_eq!(handle.name(), Some("poll"));
    assert!(handle.is_periodic());
    assert!(handle.pause());
    assert!(job.is_paused(), "the same task");
    assert!(handle.resume());
    assert!(handle.run_now());
    assert!(pool.wait_idle(BOUND));
    assert_eq!(runs.at(), [0]);
    assert!(handle.cancel());
    assert!(pool.task(id).is_none(), "ended: gone");
    assert!(pool.task(u64::MAX).is_none());
    pool.close();
}

#[test]
fn a_running_task_is_found_by_its_id() {
    let (clock, pool) = manual_pool(1);
    let (job, release) = held_in_its_first_run(&clock, &pool);
    let handle = pool.task(job.id()).expect("running");
    assert!(handle.pause(), "paused during its run");
    release.open();
    assert!(pool.wait_idle(BOUND));
    step(&clock, &pool, 20);
    assert_eq!(row(&pool, job.id()).last_run, Some(LastRun::Paused));
    pool.close();
}

#[test]
fn reschedule_moves_a_paused_task_and_replaces_a_pending_extra_run() {
    let (clock, pool) = manual_pool(1);
    let gate = Gate::default();
    let g = gate.clone();
    pool.submit(move || g.wait()).unwrap();
    let (job, runs) = periodic(&pool, &clock, every(60));
    assert!(job.run_now());
    assert!(job.reschedule_after(sec(30)), "the explicit move wins");
    gate.open();
    assert!(pool.wait_idle(BOUND));
    assert!(runs.at().is_empty(), "no extra run any more");
    assert!(job.pause());
    assert!(job.reschedule_after(sec(5)));
    assert!(job.is_paused(), "still paused");
    step(&clock, &pool, 10);
    assert!(runs.at().is_empty());
    pool.close();
}

#[test]
fn wait_idle_returns_while_a_paused_task_skips_its_ticks() {
    let (clock, pool) = manual_pool(1);
    let (job, runs) = periodic(&pool, &clock, every(1));
    assert!(job.pause());
    clock.advance(sec(100));
    assert!(pool.wait_idle(BOUND), "the skips are done at once");
    assert!(runs.at().is_empty());
    assert_eq!(
        pool.stats().paused_runs,
        100,
        "every tick it missed (MissedTicks::Burst, the default) skipped and counted"
    );
    pool.close();
}

#[test]
fn shutdown_and_shutdown_now_treat_a_paused_task_as_any_periodic_task() {
    let (clock, pool) = manual_pool(1);
    let (paused, _) = periodic(&pool, &clock, every(60));
    assert!(paused.pause());
    let pending = pool.shutdown_now();
    assert_eq!(pending.len(), 1, "handed back");
    drop(pending);
    assert!(paused.is_cancelled());
    assert!(pool.await_termination(BOUND));

    let (clock, pool) = manual_pool(1);
    let (paused, _) = periodic(&pool, &clock, every(60));
    assert!(paused.pause());
    pool.shutdown(); // periodic tasks do not continue after shutdown (Java's default)
    assert!(pool.await_termination(BOUND));
    assert!(paused.is_cancelled());
    assert!(!paused.resume() && !paused.run_now());
}

#[test]
fn controls_after_shutdown_now_are_refused_where_they_would_run() {
    let (clock, pool) = manual_pool(1);
    let (job, release) = held_in_its_first_run(&clock, &pool);
    drop(pool.shutdown_now());
    assert!(!job.run_now(), "stopping: no run is asked for");
    release.open();
    assert!(pool.await_termination(BOUND));
}
