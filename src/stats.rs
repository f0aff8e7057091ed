//! Counters and the [`PoolStats`] snapshot.
//!
//! # Design
//! A run is counted (completed, panicked) before its future completes, so a caller that
//! has seen a task's outcome also sees its run in `stats()`.
//!
//! The hot counters (completed runs) are bumped by every worker after every run, so each
//! counter sits on its own cache line (`CachePadded`) and is `Relaxed`: no other memory is
//! published through a counter. A snapshot is therefore not one atomic instant; it is
//! exact once the pool is quiet, and final once `await_termination` has returned true
//! (each worker bumps its counters before it releases its thread in the control word, an
//! `AcqRel` exchange that the termination latch follows).
//!
//! Lateness (and, with the `metrics` feature, run time) is kept in a log-linear
//! histogram ([`Histogram`]): values below 32 ns exactly, larger ones in 32 sub-buckets
//! per power of two, so a reported percentile (the bucket's lower bound) is within 1/32 ≈
//! 3.1 % of the true nearest-rank value. Recording is one `Relaxed` `fetch_add` on stripe
//! `worker index % STRIPES`, and for lateness one `fetch_max` beside it (the run-time
//! histogram keeps no maximum: nobody reads one), so up to `STRIPES` workers record
//! without sharing a cache line (beyond that, workers share stripes); a snapshot merges
//! the stripes. `lateness_max` is exact.
//!
//! The gauges are read where they live: the pool size and the largest size from the
//! control word (`pool/control.rs`), the queue length under every shard's lock, active
//! workers from the count the queue keeps in each take's critical section (`active`, Q4 in
//! `queue/sharded.rs`), read after the locks are released.

use crate::sync::Ordering;
use crossbeam_utils::CachePadded;
use std::time::{Duration, Instant, SystemTime};

use crate::sync::{AtomicU64, StatCounter};

/// A point-in-time snapshot of an executor's counters (Java: the `getXxxCount` getters).
///
/// ```
/// use schedpool::ScheduledThreadPoolExecutor;
///
/// let pool = ScheduledThreadPoolExecutor::new(1);
/// pool.submit(|| ()).unwrap().wait();
/// pool.close();
/// let s = pool.stats();
/// assert_eq!((s.task_count, s.completed_task_count, s.pool_size), (1, 1, 0));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// The configured core size.
    pub core_pool_size: usize,
    /// Live worker threads.
    pub pool_size: usize,
    /// Workers running a task right now.
    pub active_count: usize,
    /// The most workers that were ever alive at once.
    pub largest_pool_size: usize,
    /// Tasks in the queue, cancelled-but-not-yet-removed ones included.
    pub queued: usize,
    /// Accepted submissions (a periodic task counts once; refused ones do not count).
    pub task_count: u64,
    /// Runs finished on the pool's workers, panicked ones included (each periodic run
    /// counts; `CallerRuns` runs and `PendingTask::run` do not).
    pub completed_task_count: u64,
    /// Refused submissions, whatever the policy or reason (`ZeroPeriod` is an argument
    /// error and does not count).
    pub rejected_count: u64,
    /// Tasks cancelled: by their future's or handle's `cancel` or `interrupt` (each task
    /// once, whatever the number of calls), by shutdown's run-after-shutdown policies,
    /// or as a periodic task refused its re-queue after shutdown. A refused submission
    /// (`RejectionPolicy::Discard`) counts as rejected, and a task handed back by
    /// `shutdown_now` counts when its `PendingTask` is dropped unrun.
    pub cancelled_count: u64,
    /// Runs on the pool's workers that panicked, and triggers that panicked (a panic in a
    /// `CallerRuns` run or in `PendingTask::run` goes into its future and is not counted,
    /// like the run itself).
    pub panicked_count: u64,
    /// Runs that started more than `late_threshold` after their deadline.
    pub late_count: u64,
    /// Periodic runs skipped because they would have started more than their
    /// `max_lateness` after their deadline.
    pub skipped_runs: u64,
    /// Periodic runs skipped because their task was paused
    /// ([`ScheduledFuture::pause`](crate::ScheduledFuture::pause)).
    pub paused_runs: u64,
    /// Runs of fallible periodic tasks
    /// ([`schedule_fallible`](crate::ScheduledThreadPoolExecutor::schedule_fallible)) that
    /// returned an error.
    pub failed_runs: u64,
    /// Runs of [exclusive](crate::Periodic::exclusive) tasks that acquired their cluster
    /// lock (and so ran).
    pub lock_acquired: u64,
    /// Runs of exclusive tasks skipped because another node held the lock.
    pub lock_skipped: u64,
    /// Lock operations of exclusive tasks that failed (the store unreachable or too
    /// slow): a failed acquisition skips the run, a failed release leaves the lock to run
    /// out at `at_most_for`, a failed extension is tried again at the next interval.
    pub lock_failed: u64,
    /// Runs of exclusive tasks that outlasted their lock's `at_most_for` (found at the
    /// release: the lease had run out).
    pub lock_overruns: u64,
    /// Leases extended while their runs went on
    /// ([`Exclusive::keep_alive`](crate::cluster::Exclusive::keep_alive)).
    pub lock_extended: u64,
    /// Median lateness (start − deadline) over the runs so far (±3 %).
    pub lateness_p50: Duration,
    /// 99th-percentile lateness over the runs so far (±3 %).
    pub lateness_p99: Duration,
    /// The largest lateness so far (exact).
    pub lateness_max: Duration,
}

/// One task, queued or running, as
/// [`scheduled_tasks`](crate::ScheduledThreadPoolExecutor::scheduled_tasks) shows it
/// (Java: an element of `getQueue()`; Spring: a `ScheduledTask` of
/// `/actuator/scheduledtasks`). A snapshot: the task may run, move or end right after it
/// was taken.
///
/// Its [`Display`](std::fmt::Display) is one line of `key=value` pairs, for a printout or
/// a log:
///
/// ```
/// use schedpool::{ManualClock, Periodic, ScheduledThreadPoolExecutor};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let pool = ScheduledThreadPoolExecutor::builder().clock(clock.clone()).build();
/// let job = Periodic::at_fixed_rate(Duration::from_secs(60)).name("report");
/// pool.schedule_periodic(job, || ()).unwrap();
/// clock.advance(Duration::from_secs(1));
/// pool.wait_idle(Duration::from_secs(10));
/// let line = pool.scheduled_tasks()[0].to_string();
/// assert!(line.contains(r#"name="report" kind=fixed_rate schedule="fixed rate 1m" running=false"#), "{line}");
/// assert!(line.contains("runs=1 last_run=completed"), "{line}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskInfo {
    /// The task's number: the `id` field of its `task` span and of its log lines (unique
    /// in the process, and a periodic task's for all its runs), so a task list can be
    /// joined with the logs.
    pub id: u64,
    /// The name given with [`Periodic::name`](crate::Periodic::name), if any.
    pub name: Option<String>,
    /// How it is scheduled.
    pub kind: TaskKind,
    /// The schedule in words: `once`, `fixed rate 1m` (with the missed-tick policy where
    /// it is not the default), `fixed delay 5s`, or a trigger's own
    /// [`describe`](crate::Trigger::describe) (a cron trigger: its expression and time
    /// zone).
    pub schedule: String,
    /// When it runs next, in the executor's clock; for a running task, the deadline of the
    /// run in progress.
    pub deadline: Instant,
    /// How long until then, from the snapshot (zero if it is due or running).
    pub due_in: Duration,
    /// [`deadline`](Self::deadline) in wall-clock time (the system clock's, or a
    /// [`ManualClock`](crate::ManualClock)'s fake one), as read at the snapshot: for a
    /// dashboard, which cannot show an `Instant`.
    pub next_run_at: SystemTime,
    /// It is running now on one of the pool's workers. Running tasks are listed with the
    /// queued ones, so a periodic task is in every snapshot from its submission to its
    /// end (a one-shot until its run ends).
    pub running: bool,
    /// When its last run started, in the executor's clock (for a running task, the run in
    /// progress; a run skipped for `max_lateness` counts); `None` before the first.
    pub last_started: Option<Instant>,
    /// [`last_started`](Self::last_started) in wall-clock time, as
    /// [`next_run_at`](Self::next_run_at).
    pub last_started_at: Option<SystemTime>,
    /// Runs so far (a periodic task's, the one in progress excluded; 0 for a one-shot).
    pub runs: u64,
    /// How the last finished run went, if there was one.
    pub last_run: Option<LastRun>,
    /// Cancelled but still queued (only with `remove_on_cancel` off, until a purge or its
    /// deadline).
    pub cancelled: bool,
    /// Paused: by its handle ([`ScheduledFuture::pause`](crate::ScheduledFuture::pause)),
    /// or, for an exclusive task, on every node through its cluster lock
    /// ([`ClusterLock::pause`](crate::cluster::ClusterLock::pause), as its last run found
    /// it). Its runs are skipped until it is resumed.
    pub paused: bool,
    /// Who paused it cluster-wide, as its last run found the pause; `None` otherwise.
    pub paused_by: Option<String>,
    /// Since when it is paused cluster-wide (the store's wall-clock time).
    pub paused_since: Option<SystemTime>,
    /// Until when it is paused cluster-wide; `None` if not, or until resumed.
    pub paused_until: Option<SystemTime>,
}

/// How a task is scheduled ([`TaskInfo::kind`]); [`as_str`](TaskKind::as_str) is the
/// `kind` field of its `task` span.
///
/// ```
/// use schedpool::TaskKind;
///
/// assert_eq!(TaskKind::FixedRate.as_str(), "fixed_rate");
/// assert_eq!(TaskKind::Once.to_string(), "once");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskKind {
    /// A one-shot (`schedule`, `submit`, `execute`, `named`).
    Once,
    /// Fixed rate (`schedule_at_fixed_rate`, `Periodic::at_fixed_rate`).
    FixedRate,
    /// Fixed delay (`schedule_with_fixed_delay`, `Periodic::with_fixed_delay`).
    FixedDelay,
    /// A [`Trigger`](crate::Trigger) (cron among them).
    Trigger,
}

impl TaskKind {
    /// `"once"`, `"fixed_rate"`, `"fixed_delay"` or `"trigger"`: the `kind` field of the
    /// task's span.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskKind::Once => "once",
            TaskKind::FixedRate => "fixed_rate",
            TaskKind::FixedDelay => "fixed_delay",
            TaskKind::Trigger => "trigger",
        }
    }
}

impl std::fmt::Display for TaskKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for TaskInfo {
    /// `id=7 name="report" kind=fixed_rate schedule="fixed rate 1m" running=false
    /// due_in=59.5s runs=1 last_run=completed
    /// last_started_at=2026-12-05T09:30:00.000Z`: `due_in` to the millisecond, `name`,
    /// `last_run` and `last_started_at` (RFC 3339, UTC) only where there is one,
    /// `cancelled=true` only for a cancelled task, `paused=true` only for a paused one (and
    /// `paused_by` for a cluster-wide pause).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "id={}", self.id)?;
        if let Some(name) = &self.name {
            write!(f, " name={name:?}")?;
        }
        // `due_in` to the millisecond: a line for people, not a clock.
        let due_in = Duration::from_millis(self.due_in.as_millis().try_into().unwrap_or(u64::MAX));
        write!(
            f,
            " kind={} schedule={:?} running={} due_in={:?} runs={}",
            self.kind, self.schedule, self.running, due_in, self.runs
        )?;
        if let Some(last) = self.last_run {
            write!(f, " last_run={last}")?;
        }
        if let Some(at) = self.last_started_at {
            write!(f, " last_started_at={}", crate::clock::rfc3339(at))?;
        }
        if self.cancelled {
            f.write_str(" cancelled=true")?;
        }
        if self.paused {
            f.write_str(" paused=true")?;
        }
        if let Some(by) = &self.paused_by {
            write!(f, " paused_by={by:?}")?;
        }
        Ok(())
    }
}

/// How a periodic task's last run went ([`TaskInfo::last_run`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LastRun {
    /// It ran and returned.
    Completed,
    /// It panicked (and the task went on: `OnPanic::Continue`).
    Panicked,
    /// A fallible task's run returned an error.
    Failed,
    /// It was skipped for `max_lateness`.
    Skipped,
    /// An [`exclusive`](crate::Periodic::exclusive) task's run was skipped because another
    /// node held the cluster lock (`PoolStats::lock_skipped`).
    LockHeld,
    /// An exclusive task's run was skipped because the cluster lock's store could not be
    /// asked (`PoolStats::lock_failed`).
    LockFailed,
    /// The run was skipped because the task is paused
    /// ([`ScheduledFuture::pause`](crate::ScheduledFuture::pause); `PoolStats::paused_runs`).
    Paused,
}

impl LastRun {
    /// `"completed"`, `"panicked"`, `"failed"`, `"skipped"`, `"lock_held"`,
    /// `"lock_failed"` or `"paused"`: the `outcome` label of the run counter with the
    /// `metrics` feature, and the `Display`.
    pub fn as_str(self) -> &'static str {
        match self {
            LastRun::Completed => "completed",
            LastRun::Panicked => "panicked",
            LastRun::Failed => "failed",
            LastRun::Skipped => "skipped",
            LastRun::LockHeld => "lock_held",
            LastRun::LockFailed => "lock_failed",
            LastRun::Paused => "paused",
        }
    }

    /// A byte for an atomic (`task/periodic.rs`); 0 is "none yet".
    pub(crate) fn code(self) -> u8 {
        self as u8 + 1
    }

    /// The outcome a [`code`](Self::code) stands for.
    pub(crate) fn from_code(code: u8) -> Option<LastRun> {
        const ALL: [LastRun; 7] = [
            LastRun::Completed,
            LastRun::Panicked,
            LastRun::Failed,
            LastRun::Skipped,
            LastRun::LockHeld,
            LastRun::LockFailed,
            LastRun::Paused,
        ];
        ALL.get(usize::from(code).checked_sub(1)?).copied()
    }
}

impl std::fmt::Display for LastRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The executor's monotonic counters.
#[derive(Debug)]
pub(crate) struct Counters {
    pub(crate) task_count: CachePadded<AtomicU64>,
    pub(crate) completed: CachePadded<AtomicU64>,
    pub(crate) rejected: CachePadded<AtomicU64>,
    pub(crate) panicked: CachePadded<AtomicU64>,
    pub(crate) late: CachePadded<AtomicU64>,
    pub(crate) skipped: CachePadded<AtomicU64>,
    /// Runs skipped while their task was paused (`PoolStats::paused_runs`).
    pub(crate) paused: CachePadded<AtomicU64>,
    pub(crate) failed: CachePadded<AtomicU64>,
    pub(crate) lock_acquired: CachePadded<AtomicU64>,
    pub(crate) lock_skipped: CachePadded<AtomicU64>,
    pub(crate) lock_failed: CachePadded<AtomicU64>,
    pub(crate) lock_overruns: CachePadded<AtomicU64>,
    pub(crate) lock_extended: CachePadded<AtomicU64>,
    /// Tasks cancelled that a cancel did not take out of their shard (`PoolStats::cancelled_count`,
    /// with each shard's `Tally::cancelled`).
    pub(crate) cancelled: CachePadded<AtomicU64>,
    /// Runs that panicked (`panicked` also counts panicking triggers).
    pub(crate) run_panicked: CachePadded<AtomicU64>,
    /// Runs skipped because the cluster lock's store failed (`lock_failed` counts every
    /// failed call to it).
    pub(crate) lock_failed_runs: CachePadded<AtomicU64>,
    /// Operators' controls of a task (`pause`, `resume`, `run_now` that took effect):
    /// rare, so unpadded.
    pub(crate) paused_tasks: AtomicU64,
    pub(crate) resumed_tasks: AtomicU64,
    pub(crate) run_now_tasks: AtomicU64,
}

impl Counters {
    pub(crate) fn new() -> Self {
        Counters {
            task_count: CachePadded::new(AtomicU64::new(0)),
            completed: CachePadded::new(AtomicU64::new(0)),
            rejected: CachePadded::new(AtomicU64::new(0)),
            panicked: CachePadded::new(AtomicU64::new(0)),
            late: CachePadded::new(AtomicU64::new(0)),
            skipped: CachePadded::new(AtomicU64::new(0)),
            paused: CachePadded::new(AtomicU64::new(0)),
            failed: CachePadded::new(AtomicU64::new(0)),
            lock_acquired: CachePadded::new(AtomicU64::new(0)),
            lock_skipped: CachePadded::new(AtomicU64::new(0)),
            lock_failed: CachePadded::new(AtomicU64::new(0)),
            lock_overruns: CachePadded::new(AtomicU64::new(0)),
            lock_extended: CachePadded::new(AtomicU64::new(0)),
            cancelled: CachePadded::new(AtomicU64::new(0)),
            run_panicked: CachePadded::new(AtomicU64::new(0)),
            lock_failed_runs: CachePadded::new(AtomicU64::new(0)),
            paused_tasks: AtomicU64::new(0),
            resumed_tasks: AtomicU64::new(0),
            run_now_tasks: AtomicU64::new(0),
        }
    }
}

/// Adds one to a counter. `Relaxed`: a statistic; nothing is published through it.
#[inline]
pub(crate) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Reads a counter (`Relaxed`, see `bump`).
#[inline]
pub(crate) fn read(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

/// Exact buckets below this value; log-linear above.
const EXACT: u64 = 32;
/// Sub-buckets per power of two (5 bits: ≤ 1/32 relative error).
const SUB_BITS: u32 = 5;
const BUCKETS: usize = EXACT as usize + (64 - SUB_BITS as usize) * (1 << SUB_BITS);
/// Stripes of the histogram; worker `i` records into stripe `i % STRIPES`.
const STRIPES: usize = 4;

fn bucket_of(v: u64) -> usize {
    if v < EXACT {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= SUB_BITS
    let sub = (v >> (e - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    EXACT as usize + (e - SUB_BITS) as usize * (1 << SUB_BITS) + sub as usize
}

fn lower_bound(b: usize) -> u64 {
    if b < EXACT as usize {
        return b as u64;
    }
    let i = b - EXACT as usize;
    let e = (i >> SUB_BITS) as u32 + SUB_BITS;
    let sub = (i & ((1 << SUB_BITS) - 1)) as u64;
    (1u64 << e) | (sub << (e - SUB_BITS))
}

/// A histogram's largest value, where one is kept: a [`StatCounter`] (lateness), or `()`
/// (run time, whose maximum nobody reads: no second write per run).
pub(crate) trait Maximum: Default {
    /// Notes value `v`. `Relaxed`: statistics only.
    fn note(&self, v: u64);
    /// The largest value noted (0 where none is kept).
    fn read(&self) -> u64;
}

impl Maximum for StatCounter {
    #[inline]
    fn note(&self, v: u64) {
        self.fetch_max(v, Ordering::Relaxed);
    }

    fn read(&self) -> u64 {
        self.load(Ordering::Relaxed)
    }
}

impl Maximum for () {
    #[inline]
    fn note(&self, _: u64) {}

    fn read(&self) -> u64 {
        0
    }
}

/// One stripe of a [`Histogram`]: its buckets and, where kept, its maximum.
struct HistStripe<M> {
    buckets: Box<[StatCounter]>,
    max: M,
}

/// A log-linear histogram of nanoseconds (see the module notes): lateness, with its
/// maximum, and with the `metrics` feature run time, without one ([`RunTimeHistogram`]).
pub(crate) struct Histogram<M = StatCounter> {
    stripes: Box<[CachePadded<HistStripe<M>>]>,
}

/// The run-time histogram: counts only.
#[cfg(feature = "metrics")]
pub(crate) type RunTimeHistogram = Histogram<()>;

impl<M: Maximum> Histogram<M> {
    pub(crate) fn new() -> Self {
        let stripe = || {
            CachePadded::new(HistStripe {
                buckets: (0..BUCKETS).map(|_| StatCounter::new(0)).collect(),
                max: M::default(),
            })
        };
        Histogram {
            stripes: (0..STRIPES).map(|_| stripe()).collect(),
        }
    }

    /// Records one value in nanoseconds (a run's lateness or duration) on worker
    /// `worker`'s stripe. `Relaxed`: statistics only.
    #[inline]
    pub(crate) fn record(&self, worker: usize, nanos: u64) {
        let stripe = &self.stripes[worker % STRIPES];
        stripe.buckets[bucket_of(nanos)].fetch_add(1, Ordering::Relaxed);
        stripe.max.note(nanos);
    }

    /// Every bucket's count, the stripes merged, and the largest value (0 where none is
    /// kept). `Relaxed` reads: a snapshot, not one instant.
    pub(crate) fn merged(&self) -> (Vec<u64>, u64) {
        let mut merged = vec![0u64; BUCKETS];
        let mut max = 0;
        for stripe in self.stripes.iter() {
            for (m, b) in merged.iter_mut().zip(stripe.buckets.iter()) {
                *m += b.load(Ordering::Relaxed);
            }
            max = max.max(stripe.max.read());
        }
        (merged, max)
    }
}

impl Histogram {
    /// (p50, p99, max), nearest rank; zeros before the first run.
    pub(crate) fn summary(&self) -> (Duration, Duration, Duration) {
        let (merged, max) = self.merged();
        let total: u64 = merged.iter().sum();
        let rank = |p: u64| -> Duration {
            if total == 0 {
                return Duration::ZERO;
            }
            let want = (total * p).div_ceil(100).max(1);
            let mut seen = 0;
            for (b, &n) in merged.iter().enumerate() {
                seen += n;
                if seen >= want {
                    return Duration::from_nanos(lower_bound(b).min(max));
                }
            }
            Duration::from_nanos(max)
        };
        (rank(50), rank(99), Duration::from_nanos(max))
    }
}

impl<M> std::fmt::Debug for Histogram<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram").finish_non_exhaustive()
    }
}

/// The counts of a pool's histograms already handed to the `metrics` recorder (feature
/// `metrics`; MX2 in `pool/publish.rs`).
#[cfg(feature = "metrics")]
#[derive(Debug, Default)]
pub(crate) struct Handed {
    pub(crate) lateness: HandedCounts,
    pub(crate) run_time: HandedCounts,
}

/// One histogram's counts already handed over, bucket by bucket.
#[cfg(feature = "metrics")]
#[derive(Debug, Default)]
pub(crate) struct HandedCounts(Vec<u64>);

/// A bucket's new runs, handed to one publication: the bucket, its value in seconds,
/// and the count.
#[cfg(feature = "metrics")]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Share {
    bucket: usize,
    pub(crate) secs: f64,
    pub(crate) count: u64,
}

#[cfg(feature = "metrics")]
impl HandedCounts {
    /// The new counts of `h` since the last call, a share per bucket; the counts handed
    /// over advance with them.
    pub(crate) fn delta<M: Maximum>(&mut self, h: &Histogram<M>) -> Vec<Share> {
        let (now, _) = h.merged();
        self.0.resize(now.len(), 0);
        let mut out = Vec::new();
        for (b, (&n, seen)) in now.iter().zip(self.0.iter_mut()).enumerate() {
            if n > *seen {
                out.push(Share {
                    bucket: b,
                    secs: lower_bound(b) as f64 / 1e9,
                    count: n - *seen,
                });
                *seen = n;
            }
        }
        out
    }

    /// Shares a publication did not get into the recorder (it panicked first): handed
    /// over again by the next one.
    pub(crate) fn give_back(&mut self, shares: &[Share]) {
        for s in shares {
            if let Some(seen) = self.0.get_mut(s.bucket) {
                *seen = seen.saturating_sub(s.count);
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_below_32_and_within_a_32nd_above() {
        for v in 0..EXACT {
            assert_eq!(lower_bound(bucket_of(v)), v);
        }
        let mut x = 33u64;
        while x < u64::MAX / 3 {
            let lb = lower_bound(bucket_of(x));
            assert!(
                lb <= x && (x - lb) as f64 / x as f64 <= 1.0 / 32.0,
                "{x} -> {lb}"
            );
            x = x * 3 / 2 + 7;
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn last_run_codes_round_trip_and_zero_is_none() {
        assert_eq!(LastRun::from_code(0), None);
        for last in [
            LastRun::Completed,
            LastRun::Panicked,
            LastRun::Failed,
            LastRun::Skipped,
            LastRun::LockHeld,
            LastRun::LockFailed,
            LastRun::Paused,
        ] {
            assert_ne!(last.code(), 0);
            assert_eq!(LastRun::from_code(last.code()), Some(last));
        }
        assert_eq!(LastRun::from_code(8), None);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let h = Histogram::new();
        assert_eq!(
            h.summary(),
            (Duration::ZERO, Duration::ZERO, Duration::ZERO)
        );
        for v in 1..=100u64 {
            h.record(v as usize, v * 1000); // spread over the stripes
        }
        let (p50, p99, max) = h.summary();
        let near = |d: Duration, want: u64| {
            let got = d.as_nanos() as f64;
            (got - want as f64).abs() / want as f64 <= 1.0 / 32.0
        };
        assert!(near(p50, 50_000), "{p50:?}");
        assert!(near(p99, 99_000), "{p99:?}");
        assert_eq!(max, Duration::from_micros(100));
    }
}
