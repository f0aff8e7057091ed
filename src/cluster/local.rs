//! [`LocalLock`]: the lease protocol (LK1–LK5, `cluster/mod.rs`) in one process, for tests
//! and single-node use: the store is a map under a mutex, its clock the process's
//! monotonic clock (or a [`ManualClock`]).

use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, SystemTime};

use crate::sync::Mutex;

use super::{ClusterLock, Lease, LockError, Pause};
use crate::clock::ManualClock;
use crate::clock::{self, Clock, Ticks, WallClock};

/// One lock's record.
#[derive(Clone, Copy, Debug)]
struct LeaseRow {
    /// Taken until then (LK1).
    until: Ticks,
    /// When the current lease was acquired (for LK3).
    acquired: Ticks,
    /// The current lease's token (LK2).
    token: u64,
}

/// An in-process [`ClusterLock`]: exclusive among the executors of one process that
/// share it (and among threads), with the same semantics as a database-backed lock. Its
/// calls never fail.
///
/// ```
/// use schedpool::cluster::{ClusterLock, LocalLock};
/// use std::time::Duration;
///
/// let lock = LocalLock::new();
/// let lease = lock.try_acquire("report", Duration::from_secs(60)).unwrap().unwrap();
/// assert!(lock.try_acquire("report", Duration::from_secs(60)).unwrap().is_none());
/// assert!(lock.release(lease, Duration::ZERO).unwrap()); // released in time
/// assert!(lock.try_acquire("report", Duration::from_secs(60)).unwrap().is_some());
/// ```
pub struct LocalLock {
    clock: Clock,
    /// The rows by name; the mutex makes each call one atomic step (LK1).
    rows: Mutex<HashMap<String, LeaseRow>>,
    /// The jobs paused cluster-wide (`ClusterLock::pause`), by name.
    pauses: Mutex<HashMap<String, Pause>>,
}

impl LocalLock {
    /// A lock on the process's monotonic clock.
    pub fn new() -> Self {
        LocalLock {
            clock: Clock::real(),
            rows: Mutex::new(HashMap::new()),
            pauses: Mutex::new(HashMap::new()),
        }
    }

    /// A lock whose leases follow `clock` (for tests: share the executor's clock).
    pub fn with_clock(clock: ManualClock) -> Self {
        LocalLock {
            clock: Clock::Manual(clock),
            rows: Mutex::new(HashMap::new()),
            pauses: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a valid lease of `name` exists now.
    pub fn is_held(&self, name: &str) -> bool {
        let now = self.clock.now();
        self.rows.lock().get(name).is_some_and(|r| r.until > now)
    }
}

impl Default for LocalLock {
    fn default() -> Self {
        Self::new()
    }
}

impl ClusterLock for LocalLock {
    fn try_acquire(&self, name: &str, at_most_for: Duration) -> Result<Option<Lease>, LockError> {
        let now = self.clock.now();
        let mut rows = self.rows.lock();
        let token = match rows.get(name) {
            Some(r) if r.until > now => return Ok(None), // LK1: a valid lease exists
            Some(r) => r.token + 1,
            None => 1,
        };
        rows.insert(
            name.to_owned(),
            LeaseRow {
                until: clock::add(now, at_most_for),
                acquired: now,
                token,
            },
        );
        Ok(Some(Lease::new(name, token, at_most_for)))
    }

    fn release(&self, lease: Lease, at_least_for: Duration) -> Result<bool, LockError> {
        let now = self.clock.now();
        let mut rows = self.rows.lock();
        match rows.get_mut(lease.name()) {
            // LK2: only the current, still valid lease changes the record.
            Some(r) if r.token == lease.token() && r.until > now => {
                // LK3, with `at_least_for` capped at the lease's `at_most_for`.
                let at_least_for = at_least_for.min(lease.at_most_for());
                r.until = clock::add(r.acquired, at_least_for).max(now);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn extend(&self, lease: &Lease, at_most_for: Duration) -> Result<bool, LockError> {
        let now = self.clock.now();
        let mut rows = self.rows.lock();
        match rows.get_mut(lease.name()) {
            // LK5: only the current, still valid lease is extended.
            Some(r) if r.token == lease.token() && r.until > now => {
                r.until = clock::add(now, at_most_for);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn last_acquired(&self, name: &str) -> Result<Option<Duration>, LockError> {
        let now = self.clock.now();
        Ok(self
            .rows
            .lock()
            .get(name)
            .map(|r| clock::since(now, r.acquired)))
    }

    /// The store's clock for a pause is its wall clock: the system's, or the
    /// [`ManualClock`]'s fake one.
    fn pause(&self, name: &str, by: &str, until: Option<SystemTime>) -> Result<(), LockError> {
        let (_, now) = WallClock::of(&self.clock).now();
        let pause = Pause::new(by, now, until);
        let old = self.pauses.lock().insert(name.to_owned(), pause);
        drop(old); // plain data, outside the lock all the same
        Ok(())
    }

    fn resume(&self, name: &str) -> Result<bool, LockError> {
        let (_, now) = WallClock::of(&self.clock).now();
        let old = self.pauses.lock().remove(name);
        Ok(old.is_some_and(|p| p.until.is_none_or(|u| u > now)))
    }

    fn paused(&self, name: &str) -> Result<Option<Pause>, LockError> {
        let (_, now) = WallClock::of(&self.clock).now();
        let pauses = self.pauses.lock();
        Ok(pauses
            .get(name)
            .filter(|p| p.until.is_none_or(|u| u > now))
            .cloned())
    }
}

impl fmt::Debug for LocalLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalLock")
            .field("locks", &self.rows.lock().len())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    /// The trait's edge inputs: an empty name is a name, a zero `at_most_for` is over at
    /// once, and `at_least_for` is capped at the lease's `at_most_for`.
    #[test]
    fn edge_inputs_behave_as_the_trait_says() {
        let clock = ManualClock::new();
        let lock = LocalLock::with_clock(clock.clone());
        let empty = lock
            .try_acquire("", MIN)
            .unwrap()
            .expect("a name like any other");
        assert!(lock.try_acquire("", MIN).unwrap().is_none());
        assert!(lock.release(empty, Duration::ZERO).unwrap());
        let zero = lock
            .try_acquire("z", Duration::ZERO)
            .unwrap()
            .expect("granted");
        assert!(!lock.is_held("z"), "over as soon as granted");
        assert!(
            lock.try_acquire("z", MIN).unwrap().is_some(),
            "keeps nobody out"
        );
        assert!(!lock.release(zero, Duration::ZERO).unwrap(), "an overrun");
        let short = lock.try_acquire("cap", MIN).unwrap().unwrap();
        assert!(lock.release(short, MIN * 10).unwrap());
        clock.advance(MIN);
        assert!(
            !lock.is_held("cap"),
            "held for at_most_for, not at_least_for"
        );
    }

    #[test]
    fn one_valid_lease_per_name_with_growing_tokens() {
        let clock = ManualClock::new();
        let lock = LocalLock::with_clock(clock.clone());
        let a = lock.try_acquire("job", MIN).unwrap().unwrap();
        assert!(lock.try_acquire("job", MIN).unwrap().is_none(), "LK1");
        assert!(
            lock.try_acquire("other", MIN).unwrap().is_some(),
            "names are independent"
        );
        clock.advance(MIN); // the lease runs out at at_most_for
        let b = lock.try_acquire("job", MIN).unwrap().unwrap();
        assert!(b.token() > a.token(), "LK2: tokens grow");
        assert!(
            !lock.release(a, Duration::ZERO).unwrap(),
            "an expired lease reports it"
        );
        assert!(
            lock.is_held("job"),
            "LK2: ... and leaves the new holder alone"
        );
        assert!(lock.release(b, Duration::ZERO).unwrap());
        assert!(!lock.is_held("job"));
    }

    #[test]
    fn at_least_for_keeps_the_lock_after_an_early_release() {
        let clock = ManualClock::new();
        let lock = LocalLock::with_clock(clock.clone());
        let lease = lock.try_acquire("job", MIN).unwrap().unwrap();
        clock.advance(Duration::from_secs(1));
        assert!(lock.release(lease, Duration::from_secs(10)).unwrap());
        clock.advance(Duration::from_secs(8)); // 9 s after the acquisition
        assert!(lock.try_acquire("job", MIN).unwrap().is_none(), "LK3");
        clock.advance(Duration::from_secs(1));
        assert!(lock.try_acquire("job", MIN).unwrap().is_some());
    }

    #[test]
    fn a_release_after_at_least_for_frees_the_lock_at_once() {
        let clock = ManualClock::new();
        let lock = LocalLock::with_clock(clock.clone());
        let lease = lock.try_acquire("job", MIN).unwrap().unwrap();
        clock.advance(Duration::from_secs(20));
        assert!(lock.release(lease, Duration::from_secs(10)).unwrap());
        assert!(!lock.is_held("job"));
    }
}
