//! What the cargo feature `metrics` publishes through the `metrics` facade: the names of
//! the series ([`names`]), [`TaskTimer`], the run-time histogram a named task carries,
//! and [`TaskSeries`], the pool's bounded set of task names that have a series of their
//! own. The pool's part (the publication of its counters, gauges and histograms, and the
//! thread that does it every interval) is `pool/publish.rs`.
//!
//! # Design
//! A run costs the recorder nothing: the pool's own counters and histograms (`stats.rs`),
//! which it keeps anyway, are read and handed to the recorder every
//! `Builder::metrics_interval` by one thread of the process (and by
//! `publish_metrics`), as counters set to their totals (`absolute`), gauges, and
//! histogram deltas (each bucket's new count, recorded at the bucket's value, within
//! 1/32 of the true one). The one exception is the run time of a task that has a series
//! of its own, which goes to it at each run ([`TaskTimer`]): a handle resolved when the
//! task is submitted, so a recorder installed later does not see it (as every `metrics`
//! exporter advises, install the recorder first).
//!
//! Which tasks have one is bounded, since a recorder keeps every series it is handed
//! for the life of the process (the facade has no way to delete one): a periodic task
//! with a name, an exclusive one-shot (its lock's name), and the one-shots of a
//! `Named` that asked for it (`Named::metered`); the names of one-shots otherwise stay
//! out of the labels, as they may carry ids. Each pool gives at most
//! `Builder::max_task_series` distinct names a series of their own ([`TaskSeries`]);
//! the tasks of later names share `task="other"`, and a rate-limited warning says so.
//!
//! Without the feature [`TaskTimer`] is an empty type and none of this is compiled.
//!
//! # Invariants
//! - MX3: a pool's task-series labels take at most `max_task_series` distinct task
//!   names, plus `other`, over the pool's life: a name is admitted under
//!   `TaskSeries`'s lock only while the set holds fewer, and never leaves it (a recorder
//!   keeps the series it saw, so a name that left would not free its room there).

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
    /// Counter: operators' controls of a task that took effect, by `action` (`pause`,
    /// `resume`, `run_now`).
    pub(crate) const CONTROLS: &str = "schedpool_task_controls_total";
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

/// The label a task's own series has when the pool's names are all taken (MX3).
#[cfg(feature = "metrics")]
pub(crate) const OTHER: &str = "other";

/// A task's run-time series (`schedpool_task_run_duration_seconds{pool, task}`): the
/// recorder's handle, resolved once when the task is submitted.
#[cfg(feature = "metrics")]
#[derive(Clone)]
pub(crate) struct TaskTimer(metrics::Histogram);

#[cfg(feature = "metrics")]
impl TaskTimer {
    /// The series labelled `task` of pool `pool`, from the recorder installed now (a
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

/// A pool's task names that have a series of their own (MX3): at most `cap`, admitted
/// in the order the pool first sees them and kept for its life; later names share
/// [`OTHER`]. Its lock is a leaf, held only to look a name up and admit it (the
/// recorder and the warning run after it: U1).
#[cfg(feature = "metrics")]
pub(crate) struct TaskSeries {
    cap: usize,
    names: crate::sync::Mutex<std::collections::HashSet<Box<str>>>,
    /// The "task series limit reached" warning: at most one a second, the name of the
    /// latest one not written kept for the closing line (`throttle.rs`).
    pub(crate) overflow_log: crate::throttle::Sampled<Box<str>>,
}

#[cfg(feature = "metrics")]
impl TaskSeries {
    /// Room for `cap` names (`Builder::max_task_series`).
    pub(crate) fn new(cap: usize) -> Self {
        TaskSeries {
            cap,
            names: crate::sync::Mutex::default(),
            overflow_log: crate::throttle::Sampled::default(),
        }
    }

    /// The timer of a task named `task` of pool `pool`: its own series if the name has
    /// one or there is room for it (MX3), else the shared `other` one, with the warning.
    pub(crate) fn timer(&self, pool: &str, task: &str) -> TaskTimer {
        let own = {
            let mut names = self.names.lock();
            names.contains(task) || (names.len() < self.cap && names.insert(task.into()))
        };
        if own {
            return TaskTimer::new(pool, task);
        }
        if let Some(suppressed) = self.overflow_log.admit(|| task.into()) {
            self.warn(pool, Some(task), suppressed, suppressed + 1);
        }
        TaskTimer::new(pool, OTHER)
    }

    /// The warning that names went to `other`: `occurrences` of them since the last
    /// line, `suppressed` of which had no line; `task_name` the latest (at the closing
    /// line of a shutdown, the latest suppressed one).
    pub(crate) fn warn(
        &self,
        pool: &str,
        task_name: Option<&str>,
        suppressed: u64,
        occurrences: u64,
    ) {
        let max_task_series = self.cap;
        crate::user::traced(
            || tracing::warn!(target: "schedpool", pool, task_name, max_task_series, suppressed, occurrences, "task series limit reached: runs recorded under task=\"other\" (Builder::max_task_series)"),
        );
    }

    /// The names with a series of their own now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.names.lock().len()
    }
}

/// Without the feature: nothing, for nothing.
#[cfg(not(feature = "metrics"))]
#[derive(Clone)]
pub(crate) struct TaskTimer;

#[cfg(all(test, feature = "metrics", not(loom)))]
mod tests {
    use super::TaskSeries;

    #[test]
    fn names_are_admitted_up_to_the_cap_and_kept() {
        let series = TaskSeries::new(2);
        for name in ["a", "b", "c", "a", "d", "b"] {
            let _ = series.timer("pool", name);
        }
        assert_eq!(
            series.len(),
            2,
            "a and b, the first two; c and d went to other"
        );
        let none = TaskSeries::new(0);
        let _ = none.timer("pool", "a");
        assert_eq!(none.len(), 0, "a cap of zero admits no name");
    }
}
