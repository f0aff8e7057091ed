//! Measurement helpers shared by every workload: the clock, the fixed-seed generator,
//! memory and CPU probes, a latch with a timeout, percentiles and a tiny JSON writer.
//!
//! `Compare.java` has a line-for-line twin of each helper, so both sides draw the same
//! delays and shuffles and measure the same way.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------
// Clock
// ---------------------------------------------------------------------------------------

static BASE: OnceLock<Instant> = OnceLock::new();

/// Nanoseconds on the monotonic clock since the first call (CLOCK_MONOTONIC, the clock
/// `System.nanoTime()` reads on Linux). Lateness is always `now_ns()` at the first
/// instruction of the task minus a deadline computed with the same function.
pub fn now_ns() -> u64 {
    let base = *BASE.get_or_init(Instant::now);
    Instant::now().duration_since(base).as_nanos() as u64
}

/// The `Instant` that `now_ns()` reads as `t`, for APIs that take a deadline.
pub fn instant_at(t: u64) -> Instant {
    *BASE.get_or_init(Instant::now) + Duration::from_nanos(t)
}

/// Nanoseconds since the Unix epoch on the wall clock (CLOCK_REALTIME).
pub fn unix_now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("wall clock before 1970")
        .as_nanos() as u64
}

/// Sleeps until `now_ns() >= t`.
pub fn sleep_until_ns(t: u64) {
    loop {
        let now = now_ns();
        if now >= t {
            return;
        }
        std::thread::sleep(Duration::from_nanos(t - now));
    }
}

// ---------------------------------------------------------------------------------------
// Fixed-seed generator
// ---------------------------------------------------------------------------------------

/// SplitMix64 (Steele, Lea, Flood 2014). `Compare.java` implements the same steps, so a
/// given seed yields the same delays and shuffles in Rust and in Java.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, bound)`, through a double in `[0, 1)` built from the top 53 bits
    /// (IEEE arithmetic, so Java computes exactly the same value).
    pub fn below(&mut self, bound: u64) -> u64 {
        let unit = (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        (unit * bound as f64) as u64
    }

    /// A Fisher–Yates shuffle of `0..n`.
    pub fn permutation(&mut self, n: usize) -> Vec<u32> {
        let mut v: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
        v
    }
}

// ---------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------

/// Resident set size from `/proc/self/statm` (second field, in pages).
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("read /proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("parse /proc/self/statm");
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    pages * page
}

/// The process's peak RSS so far (`VmHWM` in `/proc/self/status`), in bytes.
pub fn rss_peak_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("parse VmHWM")
        * 1024
}

/// RSS after handing free heap pages back to the kernel. `malloc_trim` plays the part
/// that `System.gc()` plays on the Java side: without it, memory that the program has
/// freed but glibc keeps cached would look like memory still in use.
pub fn trimmed_rss_bytes() -> u64 {
    // SAFETY: malloc_trim has no preconditions; 0 = keep no extra pad.
    unsafe { libc::malloc_trim(0) };
    rss_bytes()
}

/// A pass-through global allocator that, while switched on, keeps a running total of the
/// bytes requested and not yet freed. It measures what the program holds on the heap,
/// without glibc's caching and chunk headers: the closest Rust analogue to Java's "heap
/// used after GC". Off by default: the only cost then is one relaxed load per call.
pub struct CountingAlloc;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counters are side effects.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() && COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() && COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) };
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() && COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}

/// Starts counting heap bytes from zero (frees of blocks allocated before this call are
/// subtracted too, so only differences between two readings are meaningful).
pub fn start_heap_counting() {
    LIVE.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
}

pub fn stop_heap_counting() {
    COUNTING.store(false, Ordering::Relaxed);
}

/// Net heap bytes allocated since `start_heap_counting`.
pub fn live_heap_bytes() -> i64 {
    LIVE.load(Ordering::Relaxed) as i64
}

// ---------------------------------------------------------------------------------------
// CPU time
// ---------------------------------------------------------------------------------------

/// CPU time used by the whole process, all threads, user + system
/// (`CLOCK_PROCESS_CPUTIME_ID`; Java's `getProcessCpuTime()` reads the same thing).
pub fn process_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

// ---------------------------------------------------------------------------------------
// Latch
// ---------------------------------------------------------------------------------------

/// A one-shot gate: tasks `open` it, the driver waits with a timeout so a scheduler that
/// loses a task shows up as a reported failure rather than a hung benchmark.
#[derive(Default)]
pub struct Latch {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Latch {
    pub fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }

    /// `true` if opened within `timeout`.
    pub fn wait(&self, timeout: Duration) -> bool {
        let guard = self.open.lock().unwrap();
        let (guard, _) = self
            .cv
            .wait_timeout_while(guard, timeout, |open| !*open)
            .unwrap();
        *guard
    }
}

/// Moves a value to the heap for the rest of the process, so task closures can capture a
/// plain `&'static` reference (no reference counting on the hot path, like a Java lambda
/// capturing an object reference).
pub fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

// ---------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------

/// Nearest-rank percentile of sorted data, `q` in [0, 1].
pub fn percentile(sorted: &[i64], q: f64) -> i64 {
    assert!(!sorted.is_empty());
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

// ---------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------

/// One flat JSON object, written in insertion order.
#[derive(Default)]
pub struct Json {
    body: String,
}

impl Json {
    fn key(&mut self, k: &str) {
        if !self.body.is_empty() {
            self.body.push(',');
        }
        write!(self.body, "\"{k}\":").unwrap();
    }

    pub fn str(mut self, k: &str, v: &str) -> Self {
        self.key(k);
        write!(
            self.body,
            "\"{}\"",
            v.replace('\\', "\\\\").replace('"', "\\\"")
        )
        .unwrap();
        self
    }

    pub fn int(mut self, k: &str, v: i64) -> Self {
        self.key(k);
        write!(self.body, "{v}").unwrap();
        self
    }

    pub fn num(mut self, k: &str, v: f64) -> Self {
        self.key(k);
        if v.is_finite() {
            write!(self.body, "{v:.3}").unwrap();
        } else {
            self.body.push_str("null");
        }
        self
    }

    pub fn opt_num(mut self, k: &str, v: Option<f64>) -> Self {
        match v {
            Some(v) => self.num(k, v),
            None => {
                self.key(k);
                self.body.push_str("null");
                self
            }
        }
    }

    pub fn opt_int(mut self, k: &str, v: Option<i64>) -> Self {
        self.key(k);
        match v {
            Some(v) => write!(self.body, "{v}").unwrap(),
            None => self.body.push_str("null"),
        }
        self
    }

    pub fn bool(mut self, k: &str, v: bool) -> Self {
        self.key(k);
        write!(self.body, "{v}").unwrap();
        self
    }

    pub fn nums(mut self, k: &str, v: &[f64]) -> Self {
        self.key(k);
        let items: Vec<String> = v.iter().map(|x| format!("{x:.3}")).collect();
        write!(self.body, "[{}]", items.join(",")).unwrap();
        self
    }

    pub fn ints(mut self, k: &str, v: &[i64]) -> Self {
        self.key(k);
        let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
        write!(self.body, "[{}]", items.join(",")).unwrap();
        self
    }

    pub fn finish(self) -> String {
        format!("{{{}}}", self.body)
    }
}
