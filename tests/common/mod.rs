//! Helpers the integration tests share (each test file that needs them says `mod common;`).
//!
//! Every wait here is for a condition, bounded by [`BOUND`]; none waits for time to pass.

// Each test binary uses a different subset.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use schedpool::{ManualClock, ScheduledThreadPoolExecutor};

/// The bound on every real-time wait for something that must happen.
pub(crate) const BOUND: Duration = Duration::from_secs(10);

/// `n` seconds.
pub(crate) fn sec(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// A pool of `core` workers on a fresh virtual clock.
pub(crate) fn manual_pool(core: usize) -> (ManualClock, ScheduledThreadPoolExecutor) {
    let clock = ManualClock::new();
    let pool = ScheduledThreadPoolExecutor::builder()
        .core_pool_size(core)
        .clock(clock.clone())
        .build();
    (clock, pool)
}

/// Polls `cond` until it holds or [`BOUND`] passes; `true` if it held.
pub(crate) fn wait_until(mut cond: impl FnMut() -> bool) -> bool {
    let give_up = Instant::now() + BOUND;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= give_up {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Counts drops of the value it is captured in.
pub(crate) struct DropCount(pub(crate) Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[cfg(feature = "postgres")]
pub(crate) mod pg;
