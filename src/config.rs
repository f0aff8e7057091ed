//! [`Config`]: the settings an executor is built with, as the pool reads them (the
//! [`Builder`](crate::Builder) makes one), and [`RejectionPolicy`].

use std::fmt;
use std::time::Duration;

use crate::clock::ManualClock;
use crate::queue::SpinPolicy;
use crate::sync::Arc;

/// A thread hook (`on_thread_start` / `on_thread_stop`).
pub(crate) type Hook = Arc<dyn Fn() + Send + Sync + 'static>;

/// What happens to a submission when the queue already holds `max_queued_tasks` tasks.
///
/// Rejections for any reason are counted in
/// [`PoolStats::rejected_count`](crate::PoolStats::rejected_count) and traced at `warn`.
/// After shutdown every policy gives [`ScheduleError::Shutdown`](crate::ScheduleError).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RejectionPolicy {
    /// Return [`ScheduleError::QueueFull`](crate::ScheduleError::QueueFull) (Java:
    /// `AbortPolicy`). The default.
    #[default]
    Abort,
    /// Run the task at once on the calling thread, ignoring its delay; its future completes
    /// (a panic goes into the future, not to the caller). A periodic task's later runs go
    /// to the pool as usual. Java: `CallerRunsPolicy`.
    CallerRuns,
    /// Accept silently: the returned future is already done and cancelled (Java:
    /// `DiscardPolicy`).
    Discard,
}

/// Everything `build` needs; immutable once the executor exists (the knobs with setters
/// live in `Pool`).
pub(crate) struct Config {
    pub(crate) core_pool_size: usize,
    /// The pool's name in every log event (`None`: from the thread name prefix).
    pub(crate) name: Option<String>,
    pub(crate) thread_name_prefix: String,
    pub(crate) thread_stack_size: Option<usize>,
    pub(crate) on_thread_start: Option<Hook>,
    pub(crate) on_thread_stop: Option<Hook>,
    pub(crate) keep_alive: Duration,
    pub(crate) allow_core_thread_timeout: bool,
    pub(crate) max_queued_tasks: usize,
    pub(crate) rejection_policy: RejectionPolicy,
    pub(crate) continue_existing_periodic_tasks_after_shutdown: bool,
    pub(crate) execute_existing_delayed_tasks_after_shutdown: bool,
    pub(crate) remove_on_cancel: bool,
    pub(crate) clock: Option<ManualClock>,
    pub(crate) late_threshold: Duration,
    /// The level of each run's `task` span (`Builder::task_span_level`).
    pub(crate) task_span_level: tracing::Level,
    pub(crate) spin_policy: SpinPolicy,
    pub(crate) timer_precision: Duration,
    /// The async runs in progress off their worker at once (`Builder::max_async_runs`;
    /// `usize::MAX`: no bound).
    pub(crate) max_async_runs: usize,
    /// How often the metrics thread publishes the pool (`Builder::metrics_interval`;
    /// zero: never, only `publish_metrics` and the termination).
    #[cfg(feature = "metrics")]
    pub(crate) metrics_interval: Duration,
    /// How many task names get a series of their own (`Builder::max_task_series`).
    #[cfg(feature = "metrics")]
    pub(crate) max_task_series: usize,
}

impl Config {
    /// The pool's name: the one given, or the thread prefix without a trailing `-`.
    pub(crate) fn pool_name(&self) -> &str {
        match &self.name {
            Some(n) => n,
            None => self.thread_name_prefix.trim_end_matches('-'),
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Builder");
        d.field("core_pool_size", &self.core_pool_size)
            .field("name", &self.pool_name())
            .field("thread_name_prefix", &self.thread_name_prefix)
            .field("thread_stack_size", &self.thread_stack_size)
            .field("keep_alive", &self.keep_alive)
            .field("allow_core_thread_timeout", &self.allow_core_thread_timeout)
            .field("max_queued_tasks", &Bound(self.max_queued_tasks))
            .field("rejection_policy", &self.rejection_policy)
            .field("remove_on_cancel", &self.remove_on_cancel)
            .field("manual_clock", &self.clock.is_some())
            .field("late_threshold", &self.late_threshold)
            .field("task_span_level", &self.task_span_level)
            .field("spin_policy", &self.spin_policy)
            .field("timer_precision", &self.timer_precision)
            .field("max_async_runs", &Bound(self.max_async_runs));
        #[cfg(feature = "metrics")]
        d.field("metrics_interval", &self.metrics_interval)
            .field("max_task_series", &self.max_task_series);
        d.finish_non_exhaustive()
    }
}

/// A limit in `Debug` output: "unbounded" for `usize::MAX`.
struct Bound(usize);

impl fmt::Debug for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            usize::MAX => f.write_str("unbounded"),
            n => n.fmt(f),
        }
    }
}
