//! A recorder of what each pool thread is doing, for the per-task tail analysis
//! (`benches/compare/tail.py`, `docs/BENCHMARKS.md`, "Where the tail comes from, per
//! task"). Compiled only with `RUSTFLAGS="--cfg schedpool_probe"`; in every other build
//! the [`probe!`] calls expand to nothing and this module does not exist.
//!
//! Each thread that records keeps its own log of `(instant, state)` changes, registered
//! once in a process-wide list so that [`drain`] can collect every thread's log at the
//! end of a run. A change costs one clock reading and one push under the thread's own
//! (uncontended) mutex; a lock wait is recorded only when the lock is contended
//! (`try_lock` first), so the uncontended paths pay one failed-or-not `try_lock`.
//!
//! The same builds take the queue's shard count from `SCHEDPOOL_SHARDS` (to count, on a
//! small machine, what grows with a large one's: `scripts/scaling.sh`), and record nothing
//! with `SCHEDPOOL_PROBE=0`.
//!
//! Not an API: `#[doc(hidden)]`, and absent unless the cfg is set.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// What a pool thread is doing. The harness names them in its tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    /// In the pool, on its own work: scanning heads, popping, publishing, accounting.
    Take = 0,
    /// Waiting for a shard's lock (contended).
    ShardLock = 1,
    /// Waiting for the coordinator's lock (contended).
    CoordLock = 2,
    /// Sleeping as the leader, timed until the head's deadline (or its spin window).
    LeaderSleep = 3,
    /// Spinning as the leader, the lock released.
    LeaderSpin = 4,
    /// Sleeping as a follower (untimed, or until its own timeout).
    FollowerSleep = 5,
    /// Spinning as an idle follower for a new head.
    IdleSpin = 6,
    /// Running a task's body.
    Run = 7,
    /// Sleeping as the leader's backup, timed just past the leader's take time.
    BackupSleep = 8,
}

/// One thread's log.
#[derive(Debug)]
pub struct ThreadLog {
    /// The thread's kernel id (Linux), 0 elsewhere.
    pub tid: u64,
    /// The thread's name, if it has one.
    pub name: String,
    /// `(instant, state)` in the order they happened; a state lasts until the next.
    pub events: Vec<(Instant, State)>,
}

static REGISTRY: OnceLock<Mutex<Vec<Arc<Mutex<ThreadLog>>>>> = OnceLock::new();

thread_local! {
    static LOCAL: RefCell<Option<(Arc<Mutex<ThreadLog>>, State)>> = const { RefCell::new(None) };
}

fn tid() -> u64 {
    #[cfg(target_os = "linux")]
    {
        rustix::thread::gettid().as_raw_nonzero().get() as u64
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// Whether to record: not when `SCHEDPOOL_PROBE=0` (a build that only wants
/// `SCHEDPOOL_SHARDS`, [`shards`]).
fn recording() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("SCHEDPOOL_PROBE").map_or(true, |v| v != "0"))
}

/// The shard count `SCHEDPOOL_SHARDS` asks for, if it is set to a positive number.
pub(crate) fn shards() -> Option<usize> {
    std::env::var("SCHEDPOOL_SHARDS")
        .ok()?
        .parse()
        .ok()
        .filter(|&n| n > 0)
}

/// Records that this thread now is in `state`; returns the state it was in (`Take` for a
/// thread that had recorded nothing, or when not [`recording`]).
pub fn set(state: State) -> State {
    if !recording() {
        return State::Take;
    }
    let at = Instant::now();
    LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        let (log, current) = l.get_or_insert_with(|| {
            let log = Arc::new(Mutex::new(ThreadLog {
                tid: tid(),
                name: std::thread::current().name().unwrap_or("").to_owned(),
                events: Vec::with_capacity(1 << 16),
            }));
            REGISTRY
                .get_or_init(Default::default)
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(log.clone());
            (log, State::Take)
        });
        let previous = std::mem::replace(current, state);
        log.lock()
            .unwrap_or_else(|e| e.into_inner())
            .events
            .push((at, state));
        previous
    })
}

/// Takes every thread's log recorded so far (the logs stay registered, emptied).
pub fn drain() -> Vec<ThreadLog> {
    let Some(registry) = REGISTRY.get() else {
        return Vec::new();
    };
    let registry = registry.lock().unwrap_or_else(|e| e.into_inner());
    registry
        .iter()
        .map(|log| {
            let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
            ThreadLog {
                tid: log.tid,
                name: log.name.clone(),
                events: std::mem::take(&mut log.events),
            }
        })
        .collect()
}

/// Locks `m`, recording `state` while it waits if the lock is contended.
#[inline]
pub(crate) fn lock<'a, T>(
    m: &'a crate::sync::Mutex<T>,
    state: State,
) -> crate::sync::MutexGuard<'a, T> {
    if let Some(g) = m.try_lock() {
        return g;
    }
    let previous = set(state);
    let g = m.lock();
    set(previous);
    g
}
