//! Tasks asleep in [`TaskContext::sleep`](crate::TaskContext::sleep): the threads that
//! a cancel or interrupt, `shutdown_now` and a `ManualClock` advance unpark, so that each
//! re-checks whether its sleep is over.
//!
//! # Design
//! A sleeping task is rare and a cancel is not. A cancel that takes its task out of the
//! queue (the common case: a pending timeout) wakes nobody, since a queued task is not
//! running and so not asleep; any other cancel or interrupt (a running task, or any with
//! `remove_on_cancel` off) costs one `SeqCst` fence and a load of a line that only
//! sleepers write. `scripts/opcount.sh`: `cancel` and `cancel_shuffled` are 3
//! instructions above the code without the list, with the same atomics and misses. The
//! unparks happen only while someone sleeps. A sleeper parks its own thread (`park_until`) and re-checks its task's
//! state, the pool's run state and the time after every return, spurious or not.
//!
//! # Invariants
//! - S1 (no lost wake-up): a sleeper joins the list and counts itself in `count`, issues
//!   a `SeqCst` fence, and only then checks its condition and parks; a waker first makes
//!   its change (the task's state, the run state, the clock), issues a `SeqCst` fence, and
//!   then reads `count`. (A cancel that removed its task from the queue skips this: the
//!   task was not running, so no sleeper waits on it.) Of the two fences one comes first in their total order: either
//!   the waker's read sees the sleeper and unparks it (an unpark before the park makes the
//!   park return at once), or the sleeper's check sees the change.
//!
//! # Ordering
//! `count` is `Relaxed` on both sides: the fences order it (S1). The list is under its
//! mutex.

use crate::sync::{fence, thread, AtomicUsize, Mutex, Ordering};

/// The pool's sleeping tasks (module notes).
#[derive(Debug)]
pub(crate) struct Sleepers {
    /// Threads in the list (S1).
    count: AtomicUsize,
    threads: Mutex<Vec<thread::Thread>>,
}

impl Sleepers {
    pub(crate) fn new() -> Self {
        Sleepers {
            count: AtomicUsize::new(0),
            threads: Mutex::new(Vec::new()),
        }
    }

    /// Lists the calling thread until the returned guard drops. The caller checks its
    /// condition after this returns, and before every park (S1).
    pub(crate) fn join(&self) -> Asleep<'_> {
        self.threads.lock().push(thread::current());
        // Relaxed: the fence orders it (S1).
        self.count.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst); // S1: before the sleeper's check
        Asleep { sleepers: self }
    }

    /// Unparks every listed thread, if there is one. Call after the change a sleeper must
    /// see (S1).
    #[inline]
    pub(crate) fn wake(&self) {
        // S1: after the waker's change.
        fence(Ordering::SeqCst);
        // Relaxed: the fence orders it (S1).
        if self.count.load(Ordering::Relaxed) > 0 {
            self.wake_listed();
        }
    }

    #[cold]
    fn wake_listed(&self) {
        for t in self.threads.lock().iter() {
            t.unpark();
        }
    }
}

/// A thread's place in the list; leaving it takes the thread out.
#[derive(Debug)]
pub(crate) struct Asleep<'a> {
    sleepers: &'a Sleepers,
}

impl Drop for Asleep<'_> {
    fn drop(&mut self) {
        let me = thread::current().id();
        let mut threads = self.sleepers.threads.lock();
        if let Some(i) = threads.iter().position(|t| t.id() == me) {
            threads.swap_remove(i);
        }
        // Relaxed: the fences order it (S1); a stale non-zero only costs an unpark.
        self.sleepers.count.fetch_sub(1, Ordering::Relaxed);
    }
}
