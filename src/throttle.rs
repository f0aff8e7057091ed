//! [`Throttle`]: at most one log line per second for an event that can come in floods (a
//! task started late, a rejected submission); the occurrences in between are counted and
//! reported with the next line, so a burst of 5,000 late starts is a handful of lines that
//! still add up to 5,000. The statistics (`PoolStats::late_count`, `rejected_count`) count
//! every occurrence regardless.
//!
//! Each line carries `occurrences`, the occurrences it stands for: its own and the
//! `suppressed` ones before it. What is still counted when the pool shuts down or
//! terminates is written then, in a line of the same message whose `occurrences` are all
//! suppressed ones ([`flush`](Throttle::flush)), so the `occurrences` of a pool's lines add
//! up to its counter; [`Sampled`] keeps the fields of the latest suppressed occurrence for
//! that line, which then reads like the others. An occurrence after a quiet second is
//! written at once, with the count of the burst before it.
//!
//! # Ordering
//! Both words are `Relaxed` and `std`'s in every build: a rate limit publishes no data, and
//! an occurrence counted on either side of a line's `swap` is reported by one line or the
//! next, never twice.

use crate::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Lines at most this often.
const INTERVAL: Duration = Duration::from_secs(1);

/// One event kind's rate limit.
#[derive(Debug, Default)]
pub(crate) struct Throttle {
    /// When the next line may be written, in nanoseconds since [`epoch`].
    next_ns: AtomicU64,
    /// Occurrences not written since the last line.
    suppressed: AtomicU64,
}

impl Throttle {
    /// A throttle whose first occurrence gets a line (for statics; as `default`).
    pub(crate) const fn new() -> Self {
        Throttle {
            next_ns: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    /// `Some(n)` if this occurrence gets a line (`n`: the occurrences suppressed since the
    /// last line), else `None` (it was counted for the next line).
    pub(crate) fn admit(&self) -> Option<u64> {
        self.admit_at(Instant::now())
    }

    /// As [`admit`](Self::admit), for an occurrence at `at`, a real-clock reading the
    /// caller already made (the intervals are real seconds).
    pub(crate) fn admit_at(&self, at: Instant) -> Option<u64> {
        let since = at.saturating_duration_since(epoch());
        let now = u64::try_from(since.as_nanos()).unwrap_or(u64::MAX);
        let next = self.next_ns.load(Ordering::Relaxed);
        let due = now >= next
            && self
                .next_ns
                .compare_exchange(
                    next,
                    now.saturating_add(INTERVAL.as_nanos() as u64),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok();
        if due {
            Some(self.suppressed.swap(0, Ordering::Relaxed))
        } else {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

impl Throttle {
    /// Takes the occurrences counted since the last line, for a closing line.
    pub(crate) fn flush(&self) -> u64 {
        self.suppressed.swap(0, Ordering::Relaxed)
    }
}

/// A [`Throttle`] that keeps the fields of the latest suppressed occurrence, so that the
/// closing line ([`flush`](Sampled::flush)) says what it stands for, as the lines before
/// it did. The sample is taken only where a line is not written, under a leaf lock that
/// a busy moment skips (`try_lock`: then the sample is an earlier occurrence of the same
/// burst); no user code runs under it (the sample is plain data).
#[derive(Debug)]
pub(crate) struct Sampled<S> {
    throttle: Throttle,
    latest: Mutex<Option<S>>,
}

impl<S> Default for Sampled<S> {
    fn default() -> Self {
        Sampled {
            throttle: Throttle::new(),
            latest: Mutex::new(None),
        }
    }
}

impl<S> Sampled<S> {
    /// As [`Throttle::admit`]; a suppressed occurrence leaves `sample()` as the latest.
    pub(crate) fn admit(&self, sample: impl FnOnce() -> S) -> Option<u64> {
        self.admit_at(Instant::now(), sample)
    }

    /// As [`admit`](Self::admit), for an occurrence at `at` ([`Throttle::admit_at`]).
    pub(crate) fn admit_at(&self, at: Instant, sample: impl FnOnce() -> S) -> Option<u64> {
        let admitted = self.throttle.admit_at(at);
        let replaced = match admitted {
            // A line is written: the samples before it are its own.
            Some(_) => self.latest.lock().take(),
            None => self.latest.try_lock().and_then(|mut l| l.replace(sample())),
        };
        drop(replaced); // outside the lock
        admitted
    }

    /// The occurrences since the last line and the latest of them, for a closing line;
    /// `None` if there were none.
    pub(crate) fn flush(&self) -> Option<(u64, Option<S>)> {
        let n = self.throttle.flush();
        let latest = self.latest.lock().take();
        (n > 0).then_some((n, latest))
    }
}

/// The process's time origin for every throttle.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_and_nothing_lost() {
        let t = Throttle::default();
        assert_eq!(t.admit(), Some(0), "the first occurrence is written");
        for _ in 0..999 {
            assert_eq!(t.admit(), None, "the rest of the burst is counted");
        }
        // The next interval: pretend it has come.
        t.next_ns.store(0, Ordering::Relaxed);
        assert_eq!(t.admit(), Some(999), "and reported with the next line");
        assert_eq!(t.admit(), None);
    }

    #[test]
    fn an_occurrence_at_a_given_instant_is_timed_by_it() {
        let t = Throttle::default();
        let t0 = Instant::now();
        assert_eq!(t.admit_at(t0), Some(0));
        assert_eq!(t.admit_at(t0 + INTERVAL / 2), None, "within the interval");
        assert_eq!(
            t.admit_at(t0 + 2 * INTERVAL),
            Some(1),
            "a later instant opens the next interval, with no clock read"
        );
        assert_eq!(t.admit_at(t0 + 2 * INTERVAL), None);
    }
}
