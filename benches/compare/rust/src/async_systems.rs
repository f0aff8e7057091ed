//! The systems of workload A1 (`async_jobs.rs`), each on a tokio multi-thread runtime with
//! default settings (`Runtime::new()`: one worker per CPU) and each used the way its
//! documentation suggests:
//!
//! - `schedpool`: the crate's default pool (`ScheduledThreadPoolExecutor::new` with the
//!   CPU count, as `Builder::new()` does), jobs submitted with
//!   `schedule_periodic_async(Periodic::at_fixed_rate(1 s).initial_delay(T0 - now),
//!   handle, ...)`, the runtime's `Handle` running each run's future;
//! - `tokio`: one task per job, `interval_at(T0, 1 s)` (`MissedTickBehavior::Burst`) and
//!   the run awaited in the task;
//! - `tcs`: tokio-cron-scheduler, one `Job::new_repeated_async(1 s, ...)` per job.

use std::future::Future;
use std::time::{Duration, Instant};

use schedpool::{Periodic, ScheduleError, ScheduledFuture, ScheduledThreadPoolExecutor};
use tokio::runtime::{Handle, Runtime};
use tokio_cron_scheduler::job::JobId;
use tokio_cron_scheduler::{Job, JobScheduler};

use crate::async_jobs::{lead, run_once, AsyncJobs, Runs, PERIOD, T0};
use crate::util::{instant_at, now_ns, rss_bytes, Json};

/// tokio's multi-thread runtime with its default settings, its timer warmed up.
fn default_runtime() -> Runtime {
    let rt = Runtime::new().expect("tokio runtime");
    rt.block_on(async { tokio::time::sleep(Duration::from_millis(1)).await });
    rt
}

/// Gives up once `began` is `limit` old.
fn check_limit(began: Instant, limit: Duration, done: usize, n: usize) -> Result<(), String> {
    if began.elapsed() > limit {
        Err(over_limit(limit, done, n))
    } else {
        Ok(())
    }
}

fn over_limit(limit: Duration, done: usize, n: usize) -> String {
    format!(
        "registering stopped after {:.0} s: {done} of {n} jobs registered",
        limit.as_secs_f64()
    )
}

// ---------------------------------------------------------------------------------------
// schedpool
// ---------------------------------------------------------------------------------------

/// The schedpool systems of workload A1, one per method that submits async jobs.
#[derive(Clone, Copy, Debug)]
pub enum Submit {
    /// `schedule_periodic_async`: system `schedpool` (each run holds its worker).
    PeriodicAsync,
    /// `schedule_periodic_async_send`: system `schedpool-send` (a pending run gives its
    /// worker back).
    PeriodicAsyncSend,
}

impl Submit {
    /// The schedpool system called `name`, if there is one.
    pub fn for_system(name: &str) -> Option<Submit> {
        match name {
            "schedpool" => Some(Submit::PeriodicAsync),
            "schedpool-send" => Some(Submit::PeriodicAsyncSend),
            _ => None,
        }
    }

    /// Submits one job: the one place that chooses the crate's method. Another system
    /// (a method for `Send` futures, say) is a variant above and an arm here; the job's
    /// future is already `Send`, so it suits either kind.
    fn submit<F, Fut>(
        self,
        pool: &ScheduledThreadPoolExecutor,
        spec: Periodic,
        runtime: Handle,
        job: F,
    ) -> Result<ScheduledFuture<()>, ScheduleError>
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        match self {
            Submit::PeriodicAsync => pool.schedule_periodic_async(spec, runtime, job),
            Submit::PeriodicAsyncSend => pool.schedule_periodic_async_send(spec, runtime, job),
        }
    }

    fn method(self) -> &'static str {
        match self {
            Submit::PeriodicAsync => "schedule_periodic_async",
            Submit::PeriodicAsyncSend => "schedule_periodic_async_send",
        }
    }
}

pub struct SchedpoolJobs {
    submit: Submit,
    rt: Runtime,
    pool: ScheduledThreadPoolExecutor,
    handles: Vec<Option<ScheduledFuture<()>>>,
    /// Latest first deadline the pool set, after T0 (it reads its clock after ours).
    skew_ns: i64,
}

impl SchedpoolJobs {
    pub fn start(submit: Submit, n: usize) -> Self {
        let rt = default_runtime();
        let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
        let pool = ScheduledThreadPoolExecutor::new(cpus);
        pool.prestart_all_core_threads();
        // One async run first: the workers and their runtime context are warm.
        let warm = pool
            .schedule_async(Duration::ZERO, rt.handle().clone(), || async {
                tokio::time::sleep(Duration::from_millis(1)).await
            })
            .expect("schedpool: warm-up job refused");
        assert!(
            warm.wait_timeout(Duration::from_secs(10)),
            "schedpool: warm-up job did not run"
        );
        let mut handles = Vec::with_capacity(n);
        handles.resize_with(n, || None);
        SchedpoolJobs {
            submit,
            rt,
            pool,
            handles,
            skew_ns: 0,
        }
    }
}

impl AsyncJobs for SchedpoolJobs {
    fn register(&mut self, n: usize, runs: &'static Runs, limit: Duration) -> Result<T0, String> {
        let t0 = T0::after(lead(n));
        let first = instant_at(t0.ns);
        let began = Instant::now();
        for (i, slot) in self.handles.iter_mut().enumerate() {
            // The pool adds the delay to its own clock, read a moment later than ours.
            let spec = Periodic::at_fixed_rate(PERIOD)
                .initial_delay(first.saturating_duration_since(Instant::now()));
            let handle = self
                .submit
                .submit(&self.pool, spec, self.rt.handle().clone(), move || {
                    run_once(runs, i)
                })
                .map_err(|e| format!("{} refused job {i}: {e}", self.submit.method()))?;
            let skew = match handle.deadline().checked_duration_since(first) {
                Some(d) => d.as_nanos() as i64,
                None => -(first.duration_since(handle.deadline()).as_nanos() as i64),
            };
            self.skew_ns = self.skew_ns.max(skew);
            *slot = Some(handle);
            if i % 1024 == 1023 {
                check_limit(began, limit, i + 1, n)?;
            }
        }
        Ok(t0)
    }

    fn describe(&self, json: Json) -> Json {
        json.str("method", self.submit.method())
            .int("pool_workers", self.pool.core_pool_size() as i64)
            .int("runtime_workers", self.rt.metrics().num_workers() as i64)
            .num("first_due_skew_us", self.skew_ns as f64 / 1_000.0)
    }

    /// `shutdown_now` (queued runs dropped, running futures dropped at their await),
    /// `await_termination`, then the runtime.
    fn stop(self, limit: Duration) -> Result<(), String> {
        drop(self.pool.shutdown_now());
        let terminated = self.pool.await_termination(limit);
        drop(self.handles);
        self.rt.shutdown_timeout(limit);
        if terminated {
            Ok(())
        } else {
            Err(format!(
                "pool not terminated {:.0} s after shutdown_now",
                limit.as_secs_f64()
            ))
        }
    }
}

// ---------------------------------------------------------------------------------------
// tokio
// ---------------------------------------------------------------------------------------

pub struct TokioJobs {
    rt: Runtime,
    handles: Vec<Option<tokio::task::JoinHandle<()>>>,
}

impl TokioJobs {
    pub fn start(n: usize) -> Self {
        let mut handles = Vec::with_capacity(n);
        handles.resize_with(n, || None);
        TokioJobs {
            rt: default_runtime(),
            handles,
        }
    }
}

impl AsyncJobs for TokioJobs {
    fn register(&mut self, n: usize, runs: &'static Runs, limit: Duration) -> Result<T0, String> {
        let t0 = T0::after(lead(n));
        let first = tokio::time::Instant::from_std(instant_at(t0.ns));
        let began = Instant::now();
        for (i, slot) in self.handles.iter_mut().enumerate() {
            *slot = Some(self.rt.spawn(async move {
                let mut ticks = tokio::time::interval_at(first, PERIOD);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
                loop {
                    ticks.tick().await;
                    run_once(runs, i).await;
                }
            }));
            if i % 1024 == 1023 {
                check_limit(began, limit, i + 1, n)?;
            }
        }
        Ok(t0)
    }

    fn describe(&self, json: Json) -> Json {
        json.str("method", "spawn+interval_at")
            .int("runtime_workers", self.rt.metrics().num_workers() as i64)
    }

    /// Every task aborted, then the runtime shut down (it drops the tasks).
    fn stop(self, limit: Duration) -> Result<(), String> {
        for h in self.handles.iter().flatten() {
            h.abort();
        }
        let began = Instant::now();
        self.rt.shutdown_timeout(limit);
        if began.elapsed() < limit {
            Ok(())
        } else {
            Err("runtime still busy at its shutdown timeout".into())
        }
    }
}

// ---------------------------------------------------------------------------------------
// tokio-cron-scheduler
// ---------------------------------------------------------------------------------------

/// tokio-cron-scheduler 0.15 with its in-memory store. Its scheduler loop wakes every
/// 500 ms, lists every job's next tick and, for each job due, sends an activation through
/// a broadcast channel to a runner task that spawns the run. Ticks are whole seconds.
///
/// - Repeated jobs (`Job::new_repeated_async`) keep a fixed-rate grid: next tick =
///   previous tick + 1 s, so a job's k-th run is due at its first tick + k s. A cron
///   schedule would compute the next tick from the moment the loop saw the job due,
///   dropping missed ticks, and a run's due instant could only be guessed from its start.
/// - A repeated job's first tick is the whole second after its creation; the jobs are
///   added with the scheduler stopped, then every job's first tick is set to T0 in the
///   scheduler's own store (`MetaDataStorage::set_next_and_last_tick`, public API) and
///   the scheduler is started, so all N are in phase.
/// - Its channels hold 200 messages by default (`JobScheduler::new`); with N jobs due at
///   once the runner falls behind the activations and a broadcast channel drops the
///   oldest. The scheduler is made with `new_with_channel_size(max(N, 200))` instead
///   (`COMPARE_TCS_CHANNEL` overrides), after the memory baseline: its ten channels
///   allocate their slots up front, a cost that grows with N.
pub struct TcsJobs {
    rt: Runtime,
    sched: Option<JobScheduler>,
    ids: Vec<JobId>,
    channel: usize,
    /// RSS growth per job from making the scheduler (its channels, sized for N).
    scheduler_bytes_per_job: f64,
}

impl TcsJobs {
    pub fn start(n: usize) -> Self {
        let channel = std::env::var("COMPARE_TCS_CHANNEL")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&c: &usize| c > 0)
            .unwrap_or(n.max(200));
        TcsJobs {
            rt: default_runtime(),
            sched: None,
            ids: vec![JobId::nil(); n],
            channel,
            scheduler_bytes_per_job: 0.0,
        }
    }
}

impl AsyncJobs for TcsJobs {
    fn register(&mut self, n: usize, runs: &'static Runs, limit: Duration) -> Result<T0, String> {
        let channel = self.channel;
        let ids = &mut self.ids;
        let scheduler_bytes = &mut self.scheduler_bytes_per_job;
        let slot = &mut self.sched;
        let register = async move {
            let began = Instant::now();
            let rss0 = rss_bytes();
            let sched = JobScheduler::new_with_channel_size(channel)
                .await
                .map_err(|e| format!("JobScheduler: {e:?}"))?;
            *scheduler_bytes = (rss_bytes() as f64 - rss0 as f64) / n as f64;
            // Kept even if registering fails, so that `stop` shuts it down.
            *slot = Some(sched.clone());
            for (i, id) in ids.iter_mut().enumerate() {
                let job =
                    Job::new_repeated_async(PERIOD, move |_id, _sched| Box::pin(run_once(runs, i)))
                        .map_err(|e| format!("Job::new_repeated_async: {e:?}"))?;
                let left = limit.saturating_sub(began.elapsed());
                *id = tokio::time::timeout(left, sched.add(job))
                    .await
                    .map_err(|_| over_limit(limit, i, n))?
                    .map_err(|e| format!("add job {i}: {e:?}"))?;
                check_limit(began, limit, i + 1, n)?;
            }
            let t0 = T0::after(lead(n));
            let first = chrono::DateTime::from_timestamp(t0.unix_secs as i64, 0);
            let context = sched.context();
            let mut store = context.metadata_storage.write().await;
            for id in ids.iter() {
                store
                    .set_next_and_last_tick(*id, first, None)
                    .await
                    .map_err(|e| format!("set first tick: {e:?}"))?;
            }
            drop(store);
            sched.start().await.map_err(|e| format!("start: {e:?}"))?;
            Ok(t0)
        };
        // Adding has its own limit; this one bounds the rest too (making the scheduler,
        // setting the first ticks, starting it).
        let whole = limit + Duration::from_secs(10);
        self.rt.block_on(async move {
            tokio::time::timeout(whole, register)
                .await
                .unwrap_or_else(|_| Err(format!("registering not done after {whole:?}")))
        })
    }

    fn describe(&self, json: Json) -> Json {
        json.str("method", "Job::new_repeated_async")
            .int("runtime_workers", self.rt.metrics().num_workers() as i64)
            .int("tcs_channel_size", self.channel as i64)
            .num("mem_scheduler_bytes_per_job", self.scheduler_bytes_per_job)
    }

    /// Every activation is a run the loop decided on and advanced the job's next tick for
    /// (in a task of its own, apart from the activation), so after the loop has stopped
    /// and the runner has drained, a job's next tick − T0 is the number of runs it was
    /// sent. Fewer runs started: activations lost (a broadcast channel overwrote them
    /// before the runner read them, and the later runs of that job are then counted one
    /// tick early, so their lateness by count is too high by a second per loss). More:
    /// a tick run twice.
    fn audit(&mut self, runs: &Runs, t0: T0, json: Json) -> (Json, Vec<String>) {
        let Some(sched) = self.sched.as_mut() else {
            return (json, Vec::new());
        };
        let shut = self.rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), sched.shutdown()).await
        });
        if !matches!(shut, Ok(Ok(()))) {
            return (json, vec!["tcs: shutdown for the audit failed".into()]);
        }
        // The loop may be asleep and send one more batch: wait until no run has started
        // for 1 s (its 500 ms sleep and the batch's processing), 20 s at most.
        let began = Instant::now();
        let (mut seen, mut quiet) = (runs.total(), Instant::now());
        let drained = loop {
            std::thread::sleep(Duration::from_millis(100));
            let total = runs.total();
            if total != seen {
                (seen, quiet) = (total, Instant::now());
            } else if quiet.elapsed() >= Duration::from_secs(1) {
                break true;
            }
            if began.elapsed() > Duration::from_secs(20) {
                break false;
            }
        };
        let ids = &self.ids;
        let count = async {
            let context = sched.context();
            let mut store = context.metadata_storage.write().await;
            let (mut sent, mut lost, mut extra) = (0u64, 0u64, 0u64);
            for (i, id) in ids.iter().enumerate() {
                if let Ok(Some(data)) = store.get(*id).await {
                    let ticks = data.next_tick.saturating_sub(t0.unix_secs);
                    let started = runs.count(i);
                    sent += ticks;
                    lost += ticks.saturating_sub(started);
                    extra += started.saturating_sub(ticks);
                }
            }
            (sent, lost, extra)
        };
        // The timer is made inside the runtime's context.
        let counted = self
            .rt
            .block_on(async { tokio::time::timeout(Duration::from_secs(10), count).await });
        let Ok((sent, lost, extra)) = counted else {
            return (json, vec!["tcs: its store not readable within 10 s".into()]);
        };
        let json = json
            .int("tcs_runs_sent", sent as i64)
            .int("tcs_runs_lost", lost as i64)
            .int("tcs_runs_extra", extra as i64)
            .num("tcs_drain_ms", began.elapsed().as_secs_f64() * 1e3);
        let mut notes = Vec::new();
        if !drained {
            notes.push("tcs: runs still starting 20 s after its loop stopped".into());
        }
        if lost > 0 {
            notes.push(format!(
                "tcs lost {lost} of {sent} activations (broadcast channel overrun): lateness \
                 by run count overstates its jobs' later runs"
            ));
        }
        (json, notes)
    }

    /// `JobScheduler::shutdown` (its loop stops at its next wake-up; already done by the
    /// audit, again here), then the runtime, which drops the runs in flight.
    fn stop(self, limit: Duration) -> Result<(), String> {
        let mut result = Ok(());
        if let Some(mut sched) = self.sched {
            let t = now_ns();
            let stopped = self
                .rt
                .block_on(async { tokio::time::timeout(limit, sched.shutdown()).await });
            result = match stopped {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(format!("JobScheduler::shutdown: {e:?}")),
                Err(_) => Err(format!(
                    "JobScheduler::shutdown still waiting after {:.0} ms",
                    (now_ns() - t) as f64 / 1e6
                )),
            };
        }
        let began = Instant::now();
        self.rt.shutdown_timeout(limit);
        if result.is_ok() && began.elapsed() >= limit {
            result = Err("runtime still busy at its shutdown timeout".into());
        }
        result
    }
}
