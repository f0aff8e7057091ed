//! [`Builder`]: the executor's settings and their defaults; it builds the [`Config`] the
//! pool reads (`config.rs`).

use std::fmt;
use std::time::Duration;

use crate::clock::ManualClock;
use crate::config::{Config, RejectionPolicy};
use crate::queue::SpinPolicy;
use crate::sync::Arc;

/// `Builder::max_task_series`'s default: room for every job of a service, far below what
/// makes a scrape page heavy.
#[cfg(feature = "metrics")]
const DEFAULT_MAX_TASK_SERIES: usize = 256;

/// Configures and builds a [`ScheduledThreadPoolExecutor`](crate::ScheduledThreadPoolExecutor).
///
/// Defaults: `core_pool_size` = the number of CPUs, threads named `schedpool-worker-{i}`,
/// the platform's stack size, no hooks, `keep_alive` 10 ms (for threads above the core
/// size), no core thread time-out, an unbounded queue with [`RejectionPolicy::Abort`],
/// periodic tasks cancelled and delayed tasks kept at shutdown, `remove_on_cancel` **on**
/// (Java's default is off), and the real monotonic clock.
///
/// ```
/// use schedpool::{Builder, ManualClock};
///
/// let clock = ManualClock::new();
/// let pool = Builder::new()
///     .core_pool_size(2)
///     .thread_name_prefix("jobs-")
///     .clock(clock.clone())
///     .build();
/// assert_eq!(pool.core_pool_size(), 2);
/// ```
pub struct Builder {
    config: Config,
}

impl Builder {
    /// A builder with the defaults listed above.
    #[must_use]
    pub fn new() -> Self {
        Builder {
            config: Config {
                core_pool_size: num_cpus::get(),
                name: None,
                thread_name_prefix: String::from("schedpool-worker-"),
                thread_stack_size: None,
                on_thread_start: None,
                on_thread_stop: None,
                keep_alive: Duration::from_millis(10),
                allow_core_thread_timeout: false,
                max_queued_tasks: usize::MAX,
                rejection_policy: RejectionPolicy::Abort,
                continue_existing_periodic_tasks_after_shutdown: false,
                execute_existing_delayed_tasks_after_shutdown: true,
                remove_on_cancel: true,
                clock: None,
                late_threshold: Duration::from_millis(10),
                task_span_level: tracing::Level::TRACE,
                spin_policy: SpinPolicy::Adaptive,
                timer_precision: Duration::ZERO,
                max_async_runs: usize::MAX,
                #[cfg(feature = "metrics")]
                metrics_interval: Duration::from_secs(1),
                #[cfg(feature = "metrics")]
                max_task_series: DEFAULT_MAX_TASK_SERIES,
            },
        }
    }

    /// Worker threads kept even when idle. Threads start lazily, one per submission while
    /// fewer run; with 0, a single thread still runs the tasks (Java: `corePoolSize`).
    #[must_use]
    pub fn core_pool_size(mut self, n: usize) -> Self {
        self.config.core_pool_size = n;
        self
    }

    /// The pool's name, carried as the field `pool` by every log event it emits (and
    /// returned by
    /// [`ScheduledThreadPoolExecutor::name`](crate::ScheduledThreadPoolExecutor::name)).
    /// Default: the thread name prefix without its trailing `-` (`schedpool-worker`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.config.name = Some(name.into());
        self
    }

    /// Worker names are `{prefix}{index}`, indices from 0 in start order, never reused.
    /// A NUL character, which a thread name cannot hold, is replaced by `U+FFFD`.
    #[must_use]
    pub fn thread_name_prefix(mut self, p: impl Into<String>) -> Self {
        self.config.thread_name_prefix = p.into().replace('\0', "\u{FFFD}");
        self
    }

    /// Stack size of worker threads, in bytes.
    #[must_use]
    pub fn thread_stack_size(mut self, bytes: usize) -> Self {
        self.config.thread_stack_size = Some(bytes);
        self
    }

    /// Runs on each worker thread before its first task. A panic is caught and traced.
    #[must_use]
    pub fn on_thread_start<F: Fn() + Send + Sync + 'static>(mut self, f: F) -> Self {
        self.config.on_thread_start = Some(Arc::new(f));
        self
    }

    /// Runs on each worker thread as it exits. A panic is caught and traced. Every stop
    /// hook has run when `await_termination` returns true.
    #[must_use]
    pub fn on_thread_stop<F: Fn() + Send + Sync + 'static>(mut self, f: F) -> Self {
        self.config.on_thread_stop = Some(Arc::new(f));
        self
    }

    /// How long a thread above the core size (or any thread, with
    /// [`allow_core_thread_timeout`](Builder::allow_core_thread_timeout)) waits idle before
    /// it exits. Real time. Default 10 ms.
    ///
    /// A thread whose keep-alive ends before the next queued task is due does not wait
    /// for that task as the one that will run it (Java's rule for its leader): it waits
    /// behind a thread that does, and when its keep-alive ends it hands the task on to
    /// another waiting thread before it leaves, so a task is never left to a thread about
    /// to exit. A thread exits only while another one remains or nothing is queued: the
    /// last thread of a pool with queued tasks stays (on a `ManualClock`, whose deadlines
    /// cannot be compared with real time, threads wait for the task regardless).
    #[must_use]
    pub fn keep_alive(mut self, d: Duration) -> Self {
        self.config.keep_alive = d;
        self
    }

    /// Lets idle core threads exit after `keep_alive`; they restart on demand (see
    /// [`keep_alive`](Builder::keep_alive) for which thread waits for a task that is not
    /// due yet). Default false.
    #[must_use]
    pub fn allow_core_thread_timeout(mut self, v: bool) -> Self {
        self.config.allow_core_thread_timeout = v;
        self
    }

    /// Bounds the number of queued tasks for new submissions (a periodic task's next run
    /// is always re-queued). Default: unbounded.
    #[must_use]
    pub fn max_queued_tasks(mut self, n: usize) -> Self {
        self.config.max_queued_tasks = n;
        self
    }

    /// What a full queue does with a submission. Default [`RejectionPolicy::Abort`].
    #[must_use]
    pub fn rejection_policy(mut self, p: RejectionPolicy) -> Self {
        self.config.rejection_policy = p;
        self
    }

    /// Whether periodic tasks keep running after `shutdown`. Default false.
    #[must_use]
    pub fn continue_existing_periodic_tasks_after_shutdown(mut self, v: bool) -> Self {
        self.config.continue_existing_periodic_tasks_after_shutdown = v;
        self
    }

    /// Whether delayed one-shot tasks still run after `shutdown`. Default true.
    #[must_use]
    pub fn execute_existing_delayed_tasks_after_shutdown(mut self, v: bool) -> Self {
        self.config.execute_existing_delayed_tasks_after_shutdown = v;
        self
    }

    /// Whether `cancel` removes the task from the queue at once (O(log n)) and drops its
    /// closure. Default **true** (Java's default is false).
    #[must_use]
    pub fn remove_on_cancel(mut self, v: bool) -> Self {
        self.config.remove_on_cancel = v;
        self
    }

    /// Reads time from a [`ManualClock`] instead of the real clock.
    #[must_use]
    pub fn clock(mut self, c: ManualClock) -> Self {
        self.config.clock = Some(c);
        self
    }

    /// The level of the `task` span each run is in (its fields: `pool`, `id`, `task_name`,
    /// `kind`, `lateness_us`). Default `TRACE`, so that a usual `info` filter costs the
    /// runs nothing; at `INFO`, the lines a job logs at `info` carry the task's context:
    ///
    /// ```
    /// use schedpool::ScheduledThreadPoolExecutor;
    ///
    /// let pool = ScheduledThreadPoolExecutor::builder()
    ///     .task_span_level(tracing::Level::INFO)
    ///     .build();
    /// # pool.close();
    /// ```
    ///
    /// A task submitted inside a span is linked to it (`follows_from`) when its `task`
    /// span is recorded, at whatever level that is.
    #[must_use]
    pub fn task_span_level(mut self, level: tracing::Level) -> Self {
        self.config.task_span_level = level;
        self
    }

    /// How often the pool's metrics are handed to the `metrics` recorder (feature
    /// `metrics`): counters, gauges and the new histogram counts, by one thread of the
    /// process that serves every pool. Default one second; `Duration::ZERO` starts no
    /// thread for this pool, which then publishes only when asked
    /// ([`publish_metrics`](crate::ScheduledThreadPoolExecutor::publish_metrics)) and once
    /// more when it terminates. The series are listed in `docs/METRICS.md`.
    ///
    /// ```
    /// use schedpool::ScheduledThreadPoolExecutor;
    /// use std::time::Duration;
    ///
    /// let pool = ScheduledThreadPoolExecutor::builder()
    ///     .name("jobs")
    ///     .metrics_interval(Duration::from_secs(5))
    ///     .build();
    /// # pool.close();
    /// ```
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    #[must_use]
    pub fn metrics_interval(mut self, every: Duration) -> Self {
        self.config.metrics_interval = every;
        self
    }

    /// How many async runs may be in progress at once, off their worker, pool-wide: the
    /// runs of the `*_send` job forms (such as
    /// [`schedule_periodic_async_send`](crate::ScheduledThreadPoolExecutor::schedule_periodic_async_send))
    /// whose future is pending while they hold no worker. Default: no bound (each task
    /// has one run in progress at most, so the pool's async tasks bound it).
    ///
    /// At the bound, a run that comes due starts as any run (its task is running,
    /// `active_count` counts it, its lateness is measured at that start) but waits for a
    /// permit before it makes its future, holding no worker; runs get their permits in the
    /// order they asked, each when an earlier run's future is dropped (it completed,
    /// panicked or was stopped), so the wait shows in its run time. An interrupt or
    /// `shutdown_now` ends a waiting run at once. Use it to cap what the jobs do to what
    /// they await (at most 50 queries in flight to one database); `0` lets no async run
    /// of these forms make its future (every such run waits until it is stopped).
    ///
    /// ```
    /// use schedpool::ScheduledThreadPoolExecutor;
    ///
    /// let pool = ScheduledThreadPoolExecutor::builder().max_async_runs(50).build();
    /// # pool.close();
    /// ```
    #[must_use]
    pub fn max_async_runs(mut self, n: usize) -> Self {
        self.config.max_async_runs = n;
        self
    }

    /// How many distinct task names get a run-time series of their own,
    /// `schedpool_task_run_duration_seconds{task}` (feature `metrics`), over the pool's
    /// life. Default 256. Which tasks ask for one: a periodic task with a
    /// [`name`](crate::Periodic::name), an exclusive one-shot (its lock's name), and the
    /// one-shots of a [`Named`](crate::Named) that is
    /// [`metered`](crate::Named::metered). The tasks of the names that come after the
    /// limit share one series, `task="other"`, and a warning (at most one a second,
    /// target `schedpool`) names the task and this setting. A name keeps its room once it
    /// has one, also after its tasks end, because the recorder keeps every series it was
    /// handed (the `metrics` facade cannot delete one): so a pool never hands an exporter
    /// more than `n + 1` task series, whatever its tasks are named. `0` puts every task's
    /// runs under `other`.
    ///
    /// ```
    /// use schedpool::ScheduledThreadPoolExecutor;
    ///
    /// let pool = ScheduledThreadPoolExecutor::builder()
    ///     .name("jobs")
    ///     .max_task_series(1_000)
    ///     .build();
    /// # pool.close();
    /// ```
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    #[must_use]
    pub fn max_task_series(mut self, n: usize) -> Self {
        self.config.max_task_series = n;
        self
    }

    /// A run that starts more than `d` after its deadline counts in
    /// [`PoolStats::late_count`](crate::PoolStats::late_count) and is traced at `warn`.
    /// Default 10 ms.
    #[must_use]
    pub fn late_threshold(mut self, d: Duration) -> Self {
        self.config.late_threshold = d;
        self
    }

    /// Whether workers may spin instead of sleeping on the real clock (see
    /// [`SpinPolicy`]). Default [`SpinPolicy::Adaptive`].
    #[must_use]
    pub fn spin_policy(mut self, p: SpinPolicy) -> Self {
        self.config.spin_policy = p;
        self
    }

    /// How late a task may start so that wake-ups can be shared: time is cut into slots
    /// of `precision`, and the deadlines of one slot are served by one wake-up at the
    /// slot's end. Default `Duration::ZERO`: every deadline is served as precisely as the
    /// machine allows.
    ///
    /// With a precision `p`, a sleeping worker wakes at its task's deadline rounded up to
    /// the next multiple of `p` (the multiples counted from the moment the pool was
    /// built), and takes every task that fell due by then, one after another, without
    /// sleeping in between; at `p` of 50 µs or more it never spins (the [`SpinPolicy`]
    /// then only governs the idle spin). Two deadlines less than `p` apart may still fall
    /// in two slots, and so take two wake-ups. Only sleeping is rounded: a task already
    /// due when a worker looks for work is taken at once, never held back to its slot's
    /// end. A dense schedule thus costs one wake-up per `p` instead of one per deadline:
    /// the trade-off is measured in `docs/BENCHMARKS.md` (workload W2's lateness and
    /// workload W5's CPU at 0, 50 µs, 1 ms and 10 ms).
    ///
    /// A task never starts before its deadline, whatever the precision; on a
    /// `ManualClock` the precision changes nothing (a wake-up there is an `advance`).
    /// Precisions above [`MAX_TIMER_PRECISION`](Self::MAX_TIMER_PRECISION) (one second)
    /// are taken as it: the setting shares wake-ups among nearby deadlines, it does not
    /// postpone work (`Duration::MAX` would otherwise mean "never").
    ///
    /// ```
    /// use schedpool::ScheduledThreadPoolExecutor;
    /// use std::time::{Duration, Instant};
    ///
    /// // A thousand polling loops that may each start up to 1 ms late.
    /// let pool = ScheduledThreadPoolExecutor::builder()
    ///     .core_pool_size(2)
    ///     .timer_precision(Duration::from_millis(1))
    ///     .build();
    /// let asked = Instant::now();
    /// let started = pool.schedule(Duration::from_millis(3), Instant::now).unwrap();
    /// assert!(started.get().unwrap() >= asked + Duration::from_millis(3), "never early");
    /// ```
    #[must_use]
    pub fn timer_precision(mut self, precision: Duration) -> Self {
        self.config.timer_precision = precision.min(Self::MAX_TIMER_PRECISION);
        self
    }

    /// The coarsest [`timer_precision`](Self::timer_precision): one second.
    pub const MAX_TIMER_PRECISION: Duration = Duration::from_secs(1);

    /// The finished configuration (`build` is in `executor/mod.rs`, so this file does not
    /// depend on the executor).
    pub(crate) fn into_config(self) -> Config {
        self.config
    }
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.config.fmt(f)
    }
}
