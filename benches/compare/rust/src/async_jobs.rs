//! Workload A1, async jobs: N periodic jobs, each run every second awaiting 100 ms of
//! `tokio::time::sleep` (standing in for an HTTP call or a database query), all due at
//! the same instants, measured over a 5 s window. The systems are in `async_systems.rs`.
//!
//! Timeline of one process (one system, one N):
//! 1. the per-run record (`Runs`) is allocated and written, and the system is started
//!    (runtime threads up, the caller's handle slots allocated and written);
//! 2. RSS "before" (after `malloc_trim`, as W3);
//! 3. the N jobs are registered, within a time limit; every job's first run is due at T0,
//!    the first whole second of the wall clock at least `lead(n)` after the moment the
//!    system needs it (tokio-cron-scheduler counts time in whole seconds; the others take
//!    the same kind of instant), then every second: runs due at T0, T0 + 1 s, ... T0 + 4 s
//!    lie in the window [T0, T0 + 5 s), 5 N in all;
//! 4. RSS "registered"; a helper thread samples RSS every 50 ms through the window;
//! 5. process CPU time is read at T0 and at T0 + 5 s;
//! 6. the system is stopped (each wait bounded) and the record is read.
//!
//! A run's due instant is known by counting: all three systems run a job's runs one after
//! the other, on a fixed-rate grid that never skips a tick (schedpool and tokio: burst
//! after missed ticks; tokio-cron-scheduler's repeated jobs: next tick = previous tick +
//! 1 s), so the job's k-th run (from 0) is due at T0 + k s. A run that starts before the
//! instant it is counted for is reported (`runs_early`): it would mean a system ran a tick
//! twice.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::util::*;

/// Every job runs once a second...
pub const PERIOD: Duration = Duration::from_secs(1);
/// ...and each run awaits this long.
pub const AWAIT: Duration = Duration::from_millis(100);
/// The window is this many periods: runs 0..5 of every job are due in it.
const WINDOW_RUNS: u64 = 5;
/// Runs recorded per job (a correct system starts at most 5 in the window, plus the one
/// that may start while the driver is stopping it).
const SLOTS: usize = 8;
/// A slot not written yet.
const NONE: u64 = u64::MAX;
/// Registering N jobs may take this long; past it the run reports how far it got.
const REGISTER_LIMIT: Duration = Duration::from_secs(60);
/// Each wait of a system's `stop`.
const STOP_LIMIT: Duration = Duration::from_secs(10);
/// RSS sampling period through the window.
const SAMPLE_NS: u64 = 50 * MS;

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

// ---------------------------------------------------------------------------------------
// Per-run record
// ---------------------------------------------------------------------------------------

/// One job's runs: how many started, and each one's start and end (`now_ns`). Only the
/// job's own runs write here, one at a time, so the counter is uncontended; a run costs
/// two clock reads, one `fetch_add` and two stores, with no lock and no allocation.
struct JobRuns {
    count: AtomicU32,
    start: [AtomicU64; SLOTS],
    end: [AtomicU64; SLOTS],
}

/// The record of every run of every job, preallocated.
pub struct Runs {
    jobs: Vec<JobRuns>,
}

impl Runs {
    /// Slots for `n` jobs, every one written (with `NONE`, not zero, so the allocator
    /// cannot hand out untouched zero pages): the record is resident before the memory
    /// baseline and adds nothing to the figures.
    pub fn new(n: usize) -> Self {
        Runs {
            jobs: (0..n)
                .map(|_| JobRuns {
                    count: AtomicU32::new(0),
                    start: std::array::from_fn(|_| AtomicU64::new(NONE)),
                    end: std::array::from_fn(|_| AtomicU64::new(NONE)),
                })
                .collect(),
        }
    }

    /// Records the start of job `i`'s next run; returns its number (0 = the run due at T0).
    #[inline]
    fn started(&self, i: usize) -> usize {
        let now = now_ns();
        let job = &self.jobs[i];
        let k = job.count.fetch_add(1, Ordering::Relaxed) as usize;
        if k < SLOTS {
            job.start[k].store(now, Ordering::Relaxed);
        }
        k
    }

    #[inline]
    fn ended(&self, i: usize, k: usize) {
        if k < SLOTS {
            self.jobs[i].end[k].store(now_ns(), Ordering::Relaxed);
        }
    }

    /// Runs of job `i` started so far.
    pub fn count(&self, i: usize) -> u64 {
        self.jobs[i].count.load(Ordering::Relaxed) as u64
    }

    /// Runs of all jobs started so far.
    pub fn total(&self) -> u64 {
        (0..self.jobs.len()).map(|i| self.count(i)).sum()
    }
}

/// One run of job `i`, the same future on every system: the clock read at its first
/// poll, 100 ms awaited on tokio's timer, the clock read when the await is over.
pub async fn run_once(runs: &'static Runs, i: usize) {
    let k = runs.started(i);
    tokio::time::sleep(AWAIT).await;
    runs.ended(i, k);
}

// ---------------------------------------------------------------------------------------
// T0
// ---------------------------------------------------------------------------------------

/// The instant every job's first run is due: a whole second of the wall clock, as
/// `now_ns()` and as Unix seconds.
#[derive(Clone, Copy, Debug)]
pub struct T0 {
    pub ns: u64,
    pub unix_secs: u64,
}

impl T0 {
    /// The first whole second of the wall clock at least `lead` from now.
    pub fn after(lead: Duration) -> T0 {
        let mono = now_ns();
        let wall = unix_now_ns();
        let due = (wall + lead.as_nanos() as u64).div_ceil(SEC) * SEC;
        T0 {
            ns: mono + (due - wall),
            unix_secs: due / SEC,
        }
    }
}

/// How far ahead a system picks T0: 300 ms, plus 10 µs per job for the systems that must
/// know T0 before registering (registration takes 1–3 µs per job for them here); the
/// rounding up to a whole second adds 0–1 s.
pub fn lead(n: usize) -> Duration {
    Duration::from_millis(300) + Duration::from_micros(10 * n as u64)
}

// ---------------------------------------------------------------------------------------
// Systems
// ---------------------------------------------------------------------------------------

/// What workload A1 needs from a system of async jobs (constructed by the caller: its
/// runtime started, its handle slots allocated, before the memory baseline).
pub trait AsyncJobs: Sized {
    /// Registers `n` jobs, job `i`'s every run being `run_once(runs, i)`, the first run
    /// of every job due at the returned T0 and the next ones every `PERIOD`. Gives up
    /// with a message once registering has taken `limit`.
    fn register(&mut self, n: usize, runs: &'static Runs, limit: Duration) -> Result<T0, String>;

    /// The system's own facts for the report (its threads, the method used, ...).
    fn describe(&self, json: Json) -> Json;

    /// After the window, before `stop`: the system's own check that every run it decided
    /// on was counted (see `TcsJobs`); fields for the report and notes. Default: none.
    fn audit(&mut self, _runs: &Runs, _t0: T0, json: Json) -> (Json, Vec<String>) {
        (json, Vec::new())
    }

    /// Stops the system (its jobs, its scheduler, its runtime), each wait bounded by
    /// `limit`; the message says what did not stop.
    fn stop(self, limit: Duration) -> Result<(), String>;
}

// ---------------------------------------------------------------------------------------
// The workload
// ---------------------------------------------------------------------------------------

/// Runs workload A1 with `n` jobs on the system `start(n)` makes.
pub fn async_jobs<S: AsyncJobs>(n: usize, start: impl FnOnce(usize) -> S) -> Json {
    let runs = leak(Runs::new(n));
    let mut system = start(n);
    let due = WINDOW_RUNS * n as u64;
    let mut json = Json::default()
        .int("jobs", n as i64)
        .int("period_ms", PERIOD.as_millis() as i64)
        .int("await_ms", AWAIT.as_millis() as i64)
        .int("window_s", WINDOW_RUNS as i64)
        .int("runs_due", due as i64);

    let rss_before = trimmed_rss_bytes();
    let reg_start = now_ns();
    let registered = system.register(n, runs, REGISTER_LIMIT);
    let reg_end = now_ns();
    json = json.num("register_ms", ms(reg_end - reg_start));
    let t0 = match registered {
        Ok(t0) if reg_end + 50 * MS <= t0.ns => t0,
        Ok(t0) => {
            let err = format!(
                "registering {n} jobs took {:.0} ms, past T0 - 50 ms (T0 was {:.0} ms after \
                 the registration began)",
                ms(reg_end - reg_start),
                t0.ns as f64 / MS as f64 - reg_start as f64 / MS as f64
            );
            return stop_and_report(system, json.str("error", &err));
        }
        Err(err) => return stop_and_report(system, json.str("error", &err)),
    };
    let rss_registered = trimmed_rss_bytes();
    let window_end = t0.ns + WINDOW_RUNS * SEC;

    // RSS through the window, sampled 25 ms after each due instant and every 50 ms after
    // that: all N runs of a tick are in flight for 100 ms after it, if on time.
    let sampler = std::thread::spawn(move || {
        let mut peak = 0;
        let mut at = t0.ns + 25 * MS;
        while at < window_end {
            sleep_until_ns(at);
            peak = peak.max(rss_bytes());
            at += SAMPLE_NS;
        }
        peak
    });

    sleep_until_ns(t0.ns);
    let cpu0 = process_cpu_ns();
    sleep_until_ns(window_end);
    let cpu1 = process_cpu_ns();
    let rss_peak = sampler.join().expect("RSS sampler panicked");
    let rss_hwm = rss_peak_bytes();

    json = system
        .describe(json)
        .num("lead_ms", (t0.ns - reg_end) as f64 / MS as f64);
    let (audited, mut notes) = system.audit(runs, t0, json);
    json = audited;
    let stop_start = now_ns();
    let stopped = system.stop(STOP_LIMIT);
    json = json.num("stop_ms", ms(now_ns() - stop_start));

    // Every run due in the window and started in it is measured; it is done if it also
    // ended in it.
    let mut lateness = Vec::with_capacity(due as usize);
    let (mut done, mut idle_jobs, mut unrecorded) = (0u64, 0u64, 0u64);
    for job in &runs.jobs {
        let count = job.count.load(Ordering::Acquire) as usize;
        unrecorded += count.saturating_sub(SLOTS) as u64;
        let mut ran = false;
        for k in 0..count.min(WINDOW_RUNS as usize) {
            let start = job.start[k].load(Ordering::Relaxed);
            if start == NONE || start >= window_end {
                continue;
            }
            ran = true;
            lateness.push(start as i64 - (t0.ns + k as u64 * SEC) as i64);
            let end = job.end[k].load(Ordering::Relaxed);
            if end != NONE && end < window_end {
                done += 1;
            }
        }
        if !ran {
            idle_jobs += 1;
        }
    }
    lateness.sort_unstable();
    let early = lateness.iter().filter(|&&l| l < 0).count();
    let started = lateness.len() as u64;
    let late = |q: f64| (!lateness.is_empty()).then(|| percentile(&lateness, q));
    let cpu = cpu1 - cpu0;
    json = json
        .int("runs_done", done as i64)
        .int("runs_started", started as i64)
        .int("runs_not_started", (due - started) as i64)
        .int("jobs_without_run", idle_jobs as i64)
        .opt_num("late_p50_ms", late(0.50).map(ms_signed))
        .opt_num("late_p99_ms", late(0.99).map(ms_signed))
        .opt_num("late_max_ms", lateness.last().map(|&l| ms_signed(l)))
        .opt_num("late_min_ms", lateness.first().map(|&l| ms_signed(l)))
        .int("runs_early", early as i64)
        .num("cpu_ms", ms(cpu))
        .num("cpu_pct", 100.0 * cpu as f64 / (WINDOW_RUNS * SEC) as f64)
        .int("rss_before", rss_before as i64)
        .int("rss_registered", rss_registered as i64)
        .int("rss_peak", rss_peak as i64)
        .int("rss_hwm", rss_hwm as i64)
        .num(
            "mem_registered_bytes_per_job",
            (rss_registered as f64 - rss_before as f64) / n as f64,
        )
        .num(
            "mem_peak_bytes_per_job",
            (rss_peak as f64 - rss_before as f64) / n as f64,
        )
        .int("runs_unrecorded", unrecorded as i64);
    if early > 0 {
        notes.push(format!(
            "{early} runs started before the instant their count gives them: the system ran \
             some tick twice, or ran one early"
        ));
    }
    if !notes.is_empty() {
        json = json.str("note", &notes.join("; "));
    }
    match stopped {
        Ok(()) => json.bool("stopped_clean", true),
        Err(err) => json
            .bool("stopped_clean", false)
            .str("error", &format!("stop: {err}")),
    }
}

/// Stops a system after a failed registration and returns the report as it is.
fn stop_and_report<S: AsyncJobs>(system: S, json: Json) -> Json {
    let json = system.describe(json);
    match system.stop(STOP_LIMIT) {
        Ok(()) => json.bool("stopped_clean", true),
        Err(err) => json.bool("stopped_clean", false).str("stop_error", &err),
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / MS as f64
}

fn ms_signed(ns: i64) -> f64 {
    ns as f64 / MS as f64
}
