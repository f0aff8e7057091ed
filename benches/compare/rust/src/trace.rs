//! Per-task traces for the tail analysis (`../tail.py`): with `COMPARE_TRACE=FILE`, W2
//! and W6 write every task's deadline, start, end and the kernel thread id that ran it,
//! the producer's thread id, the names of the process's threads, and (in a build with
//! `RUSTFLAGS="--cfg schedpool_probe"`) schedpool's own log of what each pool thread was
//! doing (`schedpool::probe`). Times are nanoseconds of CLOCK_MONOTONIC, the clock
//! `perf record -k CLOCK_MONOTONIC` stamps the kernel's scheduler events with, so the two
//! views line up.
//!
//! Format, one record a line, space-separated:
//! `M key value` (metadata), `T deadline start end tid` (a task), `N tid name` (a thread),
//! `P tid ns state` (a probe event: the thread is in `state` from `ns` on).

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::util::now_ns;

static ON: OnceLock<Option<String>> = OnceLock::new();
static TIDS_ON: AtomicBool = AtomicBool::new(false);

/// The trace file, if tracing is on.
pub fn path() -> Option<&'static str> {
    ON.get_or_init(|| {
        std::env::var("COMPARE_TRACE")
            .ok()
            .filter(|p| !p.is_empty())
    })
    .as_deref()
}

/// `true` when tasks should record their end and thread id.
#[inline]
pub fn on() -> bool {
    TIDS_ON.load(Ordering::Relaxed)
}

/// Turns the per-task recording on if `COMPARE_TRACE` is set; call before the workload.
pub fn init() {
    if path().is_some() {
        TIDS_ON.store(true, Ordering::Relaxed);
    }
}

/// This thread's kernel id, cached.
pub fn tid() -> u64 {
    use std::cell::Cell;
    thread_local!(static TID: Cell<u64> = const { Cell::new(0) });
    TID.with(|t| {
        if t.get() == 0 {
            // SAFETY: gettid has no preconditions.
            t.set(unsafe { libc::gettid() } as u64);
        }
        t.get()
    })
}

/// CLOCK_MONOTONIC in nanoseconds minus `now_ns()`, read back to back.
fn offset() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let before = now_ns();
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let after = now_ns();
    #[allow(clippy::unnecessary_cast)] // `time_t` and `c_long` are not `i64` everywhere
    let mono = ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64;
    mono - ((before + after) / 2) as i64
}

/// Per-task records of one workload.
pub struct Tasks {
    pub end: Vec<AtomicU64>,
    pub tid: Vec<AtomicU64>,
}

impl Tasks {
    pub fn new(n: usize) -> Self {
        let k = if on() { n } else { 0 };
        Tasks {
            end: (0..k).map(|_| AtomicU64::new(0)).collect(),
            tid: (0..k).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Task `i` ends now, on this thread.
    #[inline]
    pub fn ended(&self, i: usize) {
        if on() {
            self.end[i].store(now_ns(), Ordering::Relaxed);
            self.tid[i].store(tid(), Ordering::Relaxed);
        }
    }
}

/// Writes the trace file: `meta` pairs, then `(deadline, start)` of every task with the
/// records of `tasks`, the threads and the probe's log.
pub fn write(meta: &[(&str, String)], deadlines: &[u64], starts: &[u64], tasks: &Tasks) {
    let Some(path) = path() else {
        return;
    };
    let off = offset();
    let abs = |ns: u64| (ns as i64 + off) as u64;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("trace file"));
    for (k, v) in meta {
        writeln!(out, "M {k} {v}").unwrap();
    }
    writeln!(out, "M producer_tid {}", tid()).unwrap();
    for i in 0..deadlines.len() {
        writeln!(
            out,
            "T {} {} {} {}",
            abs(deadlines[i]),
            abs(starts[i]),
            abs(tasks.end[i].load(Ordering::Relaxed)),
            tasks.tid[i].load(Ordering::Relaxed)
        )
        .unwrap();
    }
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for e in dir.flatten() {
            let name = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            writeln!(
                out,
                "N {} {}",
                e.file_name().to_string_lossy(),
                name.trim().replace(' ', "_")
            )
            .unwrap();
        }
    }
    probe(&mut out, off);
    out.flush().unwrap();
}

#[cfg(schedpool_probe)]
fn probe(out: &mut impl std::io::Write, off: i64) {
    // Instants to `now_ns` through one pair read back to back, then to CLOCK_MONOTONIC.
    let (i0, n0) = (std::time::Instant::now(), now_ns());
    for log in schedpool::probe::drain() {
        writeln!(out, "N {} {}", log.tid, log.name.replace(' ', "_")).unwrap();
        for (at, state) in log.events {
            // Every event happened before `i0`.
            let ns = n0 as i64 - i0.saturating_duration_since(at).as_nanos() as i64;
            writeln!(out, "P {} {} {:?}", log.tid, ns + off, state).unwrap();
        }
    }
}

#[cfg(not(schedpool_probe))]
fn probe(_: &mut impl std::io::Write, _: i64) {}
