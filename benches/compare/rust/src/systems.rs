//! The three Rust schedulers behind one small trait, each used the way its documentation
//! suggests, with 2 worker threads.
//!
//! Every system gets a *relative* delay and computes its own deadline from its own clock
//! read, as `ScheduledThreadPoolExecutor.schedule(task, delay, unit)` does in Java; the
//! workloads compute their reference deadline (for lateness) just before the call.

use std::time::Duration;

/// What a workload needs from a scheduler.
pub trait System: Sync + Sized {
    /// What `schedule` returns; dropping it must not cancel the task.
    type Handle: Send + 'static;

    /// A pool with `workers` worker threads, started (so that thread creation is not
    /// part of any timed region).
    fn start(workers: usize) -> Self;

    /// One-shot task after `delay`.
    fn schedule<F: FnOnce() + Send + 'static>(&self, delay: Duration, f: F) -> Self::Handle;

    /// Fixed rate: run k is due at `first + k * period`.
    fn fixed_rate<F: FnMut() + Send + 'static>(
        &self,
        initial: Duration,
        period: Duration,
        f: F,
    ) -> Self::Handle;

    /// Fixed delay: the next run is due `delay` after the previous one ended.
    fn fixed_delay<F: FnMut() + Send + 'static>(
        &self,
        initial: Duration,
        delay: Duration,
        f: F,
    ) -> Self::Handle;

    /// Cancels; `Some(true)` if the system reports the task was cancelled by this call,
    /// `None` if the API does not say.
    fn cancel(&self, h: &Self::Handle) -> Option<bool>;

    /// Re-arms a pending timeout: the task behind `h` becomes due `delay` from now. The
    /// default, for systems without a way to move a queued task, cancels it and schedules
    /// `f` in its place (replacing the handle). Returns the method used, for the report.
    fn rearm<F: FnOnce() + Send + 'static>(
        &self,
        h: &mut Self::Handle,
        delay: Duration,
        f: F,
    ) -> &'static str {
        self.cancel(h);
        *h = self.schedule(delay, f);
        "cancel+schedule"
    }

    /// Tasks the scheduler still holds (cancelled-but-not-yet-removed included), if the
    /// API tells.
    fn pending(&self) -> Option<usize>;

    /// Stops the pool without running what is still pending and without waiting for
    /// pending deadlines.
    fn dispose(self);
}

// ---------------------------------------------------------------------------------------
// schedpool
// ---------------------------------------------------------------------------------------

pub struct Schedpool(schedpool::ScheduledThreadPoolExecutor);

impl System for Schedpool {
    type Handle = schedpool::ScheduledFuture<()>;

    fn start(workers: usize) -> Self {
        // remove_on_cancel is the default (true), as setRemoveOnCancelPolicy(true) in Java.
        // The settings the precision table varies (`benches/compare/precision.py`):
        // SCHEDPOOL_PRECISION_US (default 0) and SCHEDPOOL_SPIN (adaptive, never, unbounded).
        let precision = std::env::var("SCHEDPOOL_PRECISION_US")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(Duration::ZERO, Duration::from_micros);
        let spin = match std::env::var("SCHEDPOOL_SPIN").as_deref() {
            Ok("never") => schedpool::SpinPolicy::Never,
            Ok("unbounded") => schedpool::SpinPolicy::Unbounded,
            _ => schedpool::SpinPolicy::Adaptive,
        };
        let pool = schedpool::ScheduledThreadPoolExecutor::builder()
            .core_pool_size(workers)
            .timer_precision(precision)
            .spin_policy(spin)
            .build();
        pool.prestart_all_core_threads();
        Schedpool(pool)
    }

    fn schedule<F: FnOnce() + Send + 'static>(&self, delay: Duration, f: F) -> Self::Handle {
        self.0
            .schedule(delay, f)
            .expect("schedpool: schedule rejected")
    }

    fn fixed_rate<F: FnMut() + Send + 'static>(
        &self,
        initial: Duration,
        period: Duration,
        f: F,
    ) -> Self::Handle {
        self.0
            .schedule_at_fixed_rate(initial, period, f)
            .expect("schedpool: schedule_at_fixed_rate rejected")
    }

    fn fixed_delay<F: FnMut() + Send + 'static>(
        &self,
        initial: Duration,
        delay: Duration,
        f: F,
    ) -> Self::Handle {
        self.0
            .schedule_with_fixed_delay(initial, delay, f)
            .expect("schedpool: schedule_with_fixed_delay rejected")
    }

    fn cancel(&self, h: &Self::Handle) -> Option<bool> {
        Some(h.cancel())
    }

    /// `ScheduledFuture::reschedule_after` moves the queued task (same handle, same
    /// closure) to `delay` from the executor's clock, read once, as the peers' `schedule`
    /// reads theirs once. If it refuses (the task already started: the producer was off
    /// the CPU past the deadline), a new task takes its place, as the default does.
    fn rearm<F: FnOnce() + Send + 'static>(
        &self,
        h: &mut Self::Handle,
        delay: Duration,
        f: F,
    ) -> &'static str {
        if !h.reschedule_after(delay) {
            *h = self.schedule(delay, f);
        }
        "reschedule_after"
    }

    fn pending(&self) -> Option<usize> {
        Some(self.0.queue_len())
    }

    fn dispose(self) {
        drop(self.0.shutdown_now()); // dropping a PendingTask cancels it
        if !self.0.await_termination(Duration::from_secs(30)) {
            eprintln!("schedpool: pool not terminated 30 s after shutdown_now");
        }
    }
}

// ---------------------------------------------------------------------------------------
// scheduled-thread-pool
// ---------------------------------------------------------------------------------------

/// The `scheduled-thread-pool` crate: a `BinaryHeap` under one mutex. Its `cancel` only
/// sets a flag; the job stays in the heap until its deadline, when a worker pops and
/// skips it.
pub struct Stp(scheduled_thread_pool::ScheduledThreadPool);

impl System for Stp {
    type Handle = scheduled_thread_pool::JobHandle;

    fn start(workers: usize) -> Self {
        // Threads start in `build`. Discard on drop, so `dispose` does not wait for
        // deadlines hours away.
        Stp(scheduled_thread_pool::ScheduledThreadPool::builder()
            .num_threads(workers)
            .on_drop_behavior(scheduled_thread_pool::OnPoolDropBehavior::DiscardPendingScheduled)
            .build())
    }

    fn schedule<F: FnOnce() + Send + 'static>(&self, delay: Duration, f: F) -> Self::Handle {
        self.0.execute_after(delay, f)
    }

    fn fixed_rate<F: FnMut() + Send + 'static>(
        &self,
        initial: Duration,
        period: Duration,
        f: F,
    ) -> Self::Handle {
        self.0.execute_at_fixed_rate(initial, period, f)
    }

    fn fixed_delay<F: FnMut() + Send + 'static>(
        &self,
        initial: Duration,
        delay: Duration,
        f: F,
    ) -> Self::Handle {
        self.0.execute_with_fixed_delay(initial, delay, f)
    }

    fn cancel(&self, h: &Self::Handle) -> Option<bool> {
        h.cancel();
        None
    }

    fn pending(&self) -> Option<usize> {
        None // not exposed by the crate
    }

    fn dispose(self) {
        drop(self.0); // sets shutdown; the workers exit on their own (not joinable)
    }
}

// ---------------------------------------------------------------------------------------
// tokio
// ---------------------------------------------------------------------------------------

/// tokio's multi-thread runtime with 2 workers. A one-shot task is
/// `spawn(async { sleep_until(deadline).await; f() })`, cancelled with `abort()`.
/// tokio's timer wheel has a 1 ms resolution: deadlines are rounded up to the next
/// millisecond, which shows in the lateness figures.
pub struct Tokio(tokio::runtime::Runtime);

impl System for Tokio {
    type Handle = tokio::task::JoinHandle<()>;

    fn start(workers: usize) -> Self {
        Tokio(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .enable_time()
                .build()
                .expect("tokio runtime"),
        )
    }

    fn schedule<F: FnOnce() + Send + 'static>(&self, delay: Duration, f: F) -> Self::Handle {
        // Deadline fixed at the call, like the other systems (not at the first poll).
        let deadline = tokio::time::Instant::now() + delay;
        self.0.spawn(async move {
            tokio::time::sleep_until(deadline).await;
            f()
        })
    }

    fn fixed_rate<F: FnMut() + Send + 'static>(
        &self,
        initial: Duration,
        period: Duration,
        mut f: F,
    ) -> Self::Handle {
        let first = tokio::time::Instant::now() + initial;
        self.0.spawn(async move {
            // Burst (the default) catches up on missed ticks: Java's fixed-rate semantics.
            let mut ticks = tokio::time::interval_at(first, period);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            loop {
                ticks.tick().await;
                f();
            }
        })
    }

    fn fixed_delay<F: FnMut() + Send + 'static>(
        &self,
        initial: Duration,
        delay: Duration,
        mut f: F,
    ) -> Self::Handle {
        let first = tokio::time::Instant::now() + initial;
        self.0.spawn(async move {
            tokio::time::sleep_until(first).await;
            loop {
                f();
                tokio::time::sleep(delay).await;
            }
        })
    }

    fn cancel(&self, h: &Self::Handle) -> Option<bool> {
        h.abort();
        None
    }

    fn pending(&self) -> Option<usize> {
        // Tasks alive in the runtime: an aborted task counts until a worker has dropped it.
        Some(self.0.metrics().num_alive_tasks())
    }

    fn dispose(self) {
        self.0.shutdown_background();
    }
}
