//! What the cargo feature `metrics` publishes through the `metrics` facade: the names of
//! the series ([`names`]), and [`TaskTimer`], the run-time histogram a named task
//! carries. The pool's part (the publication of its counters, gauges and histograms,
//! and the thread that does it every interval) is `pool/publish.rs`.
//!
//! # Design
//! A run costs the recorder nothing: the pool's own counters and histograms (`stats.rs`),
//! which it keeps anyway, are read and handed to the recorder every
//! `Builder::metrics_interval` by one thread of the process (and by
//! `publish_metrics`), as counters set to their totals (`absolute`), gauges, and
//! histogram deltas (each bucket's new count, recorded at the bucket's value, within
//! 1/32 of the true one). The one exception is the run time of a *named* task, which
//! goes to its own series at each run ([`TaskTimer`]): a handle resolved when the task
//! is submitted, so a recorder installed later does not see it (as every `metrics`
//! exporter advises, install the recorder first).
//!
//! Without the feature [`TaskTimer`] is an empty type and none of this is compiled.

/// The series, as `docs/METRICS.md` lists them. Every one carries the label `pool` (the
/// pool's name); the per-task histogram also `task`, the runs counter `outcome`.
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) mod names {
    /// Counter: accepted submissions (`PoolStats::task_count`).
    pub(crate) const SUBMITTED: &str = "schedpool_tasks_submitted_total";
    /// Counter: refused submissions (`PoolStats::rejected_count`).
    pub(crate) const REJECTED: &str = "schedpool_tasks_rejected_total";
    /// Counter: tasks cancelled (`PoolStats::cancelled_count`).
    pub(crate) const CANCELLED: &str = "schedpool_tasks_cancelled_total";
    /// Counter: runs by `outcome` (`LastRun::as_str`: completed, panicked, failed,
    /// skipped, lock_held, lock_failed).
    pub(crate) const RUNS: &str = "schedpool_runs_total";
    /// Counter: runs that started later than `late_threshold` (`PoolStats::late_count`).
    pub(crate) const LATE: &str = "schedpool_runs_late_total";
    /// Counter: cluster leases extended (`PoolStats::lock_extended`).
    pub(crate) const LOCK_EXTENDED: &str = "schedpool_lock_extensions_total";
    /// Counter: exclusive runs that outlasted their lease (`PoolStats::lock_overruns`).
    pub(crate) const LOCK_OVERRUNS: &str = "schedpool_lock_overruns_total";
    /// Counter: failed calls to a cluster lock's store (`PoolStats::lock_failed`).
    pub(crate) const LOCK_ERRORS: &str = "schedpool_lock_errors_total";
    /// Histogram: start − deadline of every run, in seconds.
    pub(crate) const LATENESS: &str = "schedpool_lateness_seconds";
    /// Histogram: every run's duration, in seconds.
    pub(crate) const RUN_DURATION: &str = "schedpool_run_duration_seconds";
    /// Histogram: a named task's run durations, in seconds (label `task`).
    pub(crate) const TASK_RUN_DURATION: &str = "schedpool_task_run_duration_seconds";
    /// Gauge: tasks in the queue (`PoolStats::queued`).
    pub(crate) const QUEUED: &str = "schedpool_queued_tasks";
    /// Gauge: live worker threads (`PoolStats::pool_size`).
    pub(crate) const WORKERS: &str = "schedpool_workers";
    /// Gauge: workers running a task (`PoolStats::active_count`).
    pub(crate) const ACTIVE: &str = "schedpool_workers_active";
}

/// A named task's run-time series (`schedpool_task_run_duration_seconds{pool, task}`):
/// the recorder's handle, resolved once when the task is submitted.
#[cfg(feature = "metrics")]
#[derive(Clone)]
pub(crate) struct TaskTimer(metrics::Histogram);

#[cfg(feature = "metrics")]
impl TaskTimer {
    /// The series of a task named `task` of pool `pool` (none for an unnamed task).
    pub(crate) fn named(pool: &str, task: Option<&str>) -> Option<Self> {
        task.map(|task| Self::new(pool, task))
    }

    /// The series of task `task` of pool `pool`, from the recorder installed now (a
    /// call into it: user code, whose panic leaves the task without a timer).
    fn new(pool: &str, task: &str) -> Self {
        let (pool, task) = (pool.to_owned(), task.to_owned());
        let histogram = crate::user::contain(
            move || metrics::histogram!(names::TASK_RUN_DURATION, "pool" => pool, "task" => task),
        );
        match histogram {
            Ok(h) => TaskTimer(h),
            Err(panic) => {
                crate::user::report(crate::user::Door::Recorder, panic);
                TaskTimer(metrics::Histogram::noop())
            }
        }
    }

    /// One run's duration (a call into the recorder, contained: its panic costs the
    /// sample, not the run's accounting).
    pub(crate) fn record(&self, run: std::time::Duration) {
        if let Err(panic) = crate::user::contain(|| self.0.record(run.as_secs_f64())) {
            crate::user::report(crate::user::Door::Recorder, panic);
        }
    }
}

/// Without the feature: nothing, for nothing.
#[cfg(not(feature = "metrics"))]
#[derive(Clone)]
pub(crate) struct TaskTimer;

#[cfg(not(feature = "metrics"))]
impl TaskTimer {
    /// No series without the feature.
    #[inline]
    pub(crate) fn named(_pool: &str, _task: Option<&str>) -> Option<Self> {
        None
    }
}
