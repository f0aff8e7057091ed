//! The synchronization primitives the crate uses, in one place.
//!
//! Normal builds use `parking_lot`'s `Mutex` and `Condvar` (no poisoning, one byte per
//! mutex, `notify_*` is a single atomic load when nobody waits) and `std`'s atomics and
//! threads. Under `cfg(all(test, loom))` the same names come from `loom`, so the queue and
//! task protocols can be model-checked without touching their code. Every protocol takes
//! its primitives from here (the `Ordering` enum, which loom shares with `std`, is
//! re-exported too). The deliberate exceptions stay out of the models because no protocol
//! depends on them, and each says so where it is:
//! - `std`'s atomics in statics: thread and queue numbering (`unique_id` here,
//!   `local_number` in `queue/sharded.rs`), the task numbers' blocks (`task/header.rs`),
//!   the log rate limits (`throttle.rs`) and the contract kit's run numbers
//!   (`cluster/contract/`);
//! - reference counts: `Arc` (below) and a task's own count (`task/raw/`);
//! - the `parking_lot` mutex that only makes a panic payload `Sync` (`error.rs`);
//! - `std`'s `Arc` and `mpsc` in `cluster/`, whose stores are tested against real servers
//!   and modelled in `cluster/loom.rs` through `LocalLock`;
//! - `std`'s scoped threads of the contract kit's fuzz case (`cluster/contract/`), which
//!   races a user's store from several threads and is no protocol of the crate;
//! - `std`'s scoped thread that keeps a cluster lease alive during a run
//!   (`body/exclusive.rs`): it only extends the lease, which `cluster/loom.rs` models as
//!   a plain `extend` from another thread (LK5);
//! - `std`'s thread park in `runtime.rs`'s `ParkingRuntime`, a user's runtime that polls
//!   a job's future, not a protocol of the crate;
//! - `std`'s mutex of the timing probes (`probe.rs`), built only with
//!   `--cfg schedpool_probe`, never under loom.
//!
//! The API is parking_lot's shape: `lock()` returns a guard, `Condvar::wait` takes
//! `&mut guard`. `wait_until` returns `true` when it timed out. loom has no clock: its timed
//! wait behaves as an untimed wait that may return spuriously, which the callers treat as
//! any other wake-up (every wait sits in a loop that re-checks its condition).

#[cfg(not(all(test, loom)))]
mod imp {
    pub(crate) use std::sync::atomic::{
        fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize,
    };
    pub(crate) use std::thread;

    use std::time::Instant;

    use std::ops::{Deref, DerefMut};

    use super::held;

    /// A mutex without poisoning: the user code that does run under one of ours (a
    /// `PriorityBlockingQueue`'s `Ord`, a `peek_with` closure, a `Trigger` under its
    /// spec's mutex; I4 in `queue/mod.rs`) may panic, and that must not break the queue
    /// or the pool for every later caller. parking_lot's, with a guard that counts the
    /// crate's locks this thread holds in debug builds (`sync::held`), so
    /// that the door to user code (`user.rs`) can assert none is held.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(parking_lot::Mutex<T>);

    /// The guard of a [`Mutex`]; counted while it lives (debug builds).
    #[derive(Debug)]
    pub(crate) struct MutexGuard<'a, T> {
        inner: parking_lot::MutexGuard<'a, T>,
        _held: held::Token,
    }

    impl<T> Mutex<T> {
        #[inline]
        pub(crate) const fn new(value: T) -> Self {
            Self(parking_lot::Mutex::new(value))
        }

        #[inline]
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            let inner = self.0.lock();
            MutexGuard {
                inner,
                _held: held::Token::new(),
            }
        }

        #[inline]
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            let inner = self.0.try_lock()?;
            Some(MutexGuard {
                inner,
                _held: held::Token::new(),
            })
        }

        #[inline]
        pub(crate) fn try_lock_for(
            &self,
            patience: std::time::Duration,
        ) -> Option<MutexGuard<'_, T>> {
            let inner = self.0.try_lock_for(patience)?;
            Some(MutexGuard {
                inner,
                _held: held::Token::new(),
            })
        }
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        #[inline]
        fn deref(&self) -> &T {
            &self.inner
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        #[inline]
        fn deref_mut(&mut self) -> &mut T {
            &mut self.inner
        }
    }

    /// A condition variable with the crate's timed-wait convention.
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(parking_lot::Condvar);

    impl Condvar {
        pub(crate) const fn new() -> Self {
            Self(parking_lot::Condvar::new())
        }

        #[inline]
        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            self.0.wait(&mut guard.inner);
        }

        /// Waits until notified or `until` passes; `true` if it timed out.
        #[inline]
        pub(crate) fn wait_until<T>(&self, guard: &mut MutexGuard<'_, T>, until: Instant) -> bool {
            self.0.wait_until(&mut guard.inner, until).timed_out()
        }

        #[inline]
        pub(crate) fn notify_one(&self) -> bool {
            self.0.notify_one()
        }

        #[inline]
        pub(crate) fn notify_all(&self) -> usize {
            self.0.notify_all()
        }
    }

    /// Runs `f` with the lock released (and not counted), then takes it again.
    #[inline]
    pub(crate) fn unlocked<T, R>(guard: &mut MutexGuard<'_, T>, f: impl FnOnce() -> R) -> R {
        parking_lot::MutexGuard::unlocked(&mut guard.inner, || {
            let _released = held::Released::new();
            f()
        })
    }

    /// `std`'s `UnsafeCell` behind loom's API (tokio's `loom/std/unsafe_cell.rs`): every
    /// access goes through `with` or `with_mut`, so a model checks each one.
    #[derive(Debug)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        #[inline]
        pub(crate) const fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }

        /// Writes (or reads) through the raw pointer `f` is given.
        #[inline]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }

    /// Parks this thread until it is unparked, `until` passes, or spuriously (callers
    /// re-check their condition); `true` once `until` has passed.
    pub(crate) fn park_until(until: Option<Instant>) -> bool {
        match until {
            None => thread::park(),
            Some(until) => {
                let now = Instant::now();
                if now >= until {
                    return true;
                }
                thread::park_timeout(until - now);
            }
        }
        until.is_some_and(|u| Instant::now() >= u)
    }
}

/// How many of the crate's mutexes this thread holds, counted by their guards in debug
/// builds (tests included) and not at all in release builds; outside loom models, whose
/// threads share one OS thread's locals. The door to user code asserts the count is zero
/// (`user.rs`), as tokio's runtime asserts it is not entered twice.
pub(crate) mod held {
    #[cfg(all(debug_assertions, not(all(test, loom))))]
    std::thread_local! {
        static HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// The crate's locks this thread holds (always 0 in release builds and in models).
    #[inline]
    pub(crate) fn count() -> usize {
        #[cfg(all(debug_assertions, not(all(test, loom))))]
        return HELD.with(|h| h.get());
        #[cfg(not(all(debug_assertions, not(all(test, loom)))))]
        0
    }

    #[inline]
    #[allow(unused_variables)]
    fn add(by: isize) {
        #[cfg(all(debug_assertions, not(all(test, loom))))]
        HELD.with(|h| h.set(h.get().wrapping_add_signed(by)));
    }

    /// Counts one lock for as long as it lives (a guard's field).
    #[derive(Debug)]
    pub(crate) struct Token(());

    impl Token {
        #[inline]
        #[allow(dead_code)] // loom builds count nothing
        pub(crate) fn new() -> Self {
            add(1);
            Token(())
        }
    }

    impl Drop for Token {
        #[inline]
        fn drop(&mut self) {
            add(-1);
        }
    }

    /// Uncounts the lock of the structure whose own user code runs, if the thread holds
    /// one, for as long as it lives (`user::under_own_lock`).
    pub(crate) struct Own(bool);

    impl Own {
        #[inline]
        pub(crate) fn new() -> Self {
            let held = count() > 0;
            if held {
                add(-1);
            }
            Own(held)
        }
    }

    impl Drop for Own {
        #[inline]
        fn drop(&mut self) {
            if self.0 {
                add(1);
            }
        }
    }

    /// Uncounts one lock for as long as it lives (`unlocked`).
    pub(crate) struct Released(());

    impl Released {
        #[inline]
        #[allow(dead_code)]
        pub(crate) fn new() -> Self {
            add(-1);
            Released(())
        }
    }

    impl Drop for Released {
        #[inline]
        fn drop(&mut self) {
            add(1);
        }
    }
}

#[cfg(all(test, loom))]
mod imp {
    pub(crate) use loom::cell::UnsafeCell;
    pub(crate) use loom::sync::atomic::{
        fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize,
    };
    pub(crate) use loom::thread;

    use std::ops::{Deref, DerefMut};
    use std::time::{Duration, Instant};

    /// loom's mutex behind parking_lot's API (no poisoning: unwrap is fine in models).
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    /// The guard keeps loom's guard in an `Option` so `Condvar::wait` can move it out and
    /// back through `&mut`.
    #[derive(Debug)]
    pub(crate) struct MutexGuard<'a, T>(Option<loom::sync::MutexGuard<'a, T>>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().unwrap()))
        }

        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock().ok().map(|g| MutexGuard(Some(g)))
        }
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.0.as_ref().expect("guard present outside wait")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("guard present outside wait")
        }
    }

    #[derive(Debug, Default)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Self(loom::sync::Condvar::new())
        }

        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let inner = guard.0.take().expect("guard present");
            guard.0 = Some(self.0.wait(inner).unwrap());
        }

        pub(crate) fn wait_until<T>(&self, guard: &mut MutexGuard<'_, T>, _until: Instant) -> bool {
            let inner = guard.0.take().expect("guard present");
            let (inner, result) = self.0.wait_timeout(inner, Duration::from_secs(1)).unwrap();
            guard.0 = Some(inner);
            result.timed_out()
        }

        pub(crate) fn notify_one(&self) -> bool {
            self.0.notify_one();
            true
        }

        pub(crate) fn notify_all(&self) -> usize {
            self.0.notify_all();
            0
        }
    }

    loom::thread_local! {
        /// Whether this model thread's timed parks time out (see [`timeouts_fire`]).
        static TIMEOUTS_FIRE: std::cell::Cell<bool> = std::cell::Cell::new(false);
    }

    /// Makes this model thread's timed parks time out: each returns `true` (timed out)
    /// after a yield, without being woken. loom has no clock, so a timeout cannot come
    /// "later"; returning at once, with a scheduling point before it, lets loom place it
    /// at every point of the other threads' steps, which is what a timeout racing a wake
    /// can do. A model that needs a timed-out waiter's exit (the waiter table's `leave`,
    /// A2 in `task/waiting.rs`) calls this on that waiter's thread.
    pub(crate) fn timeouts_fire() {
        TIMEOUTS_FIRE.with(|t| t.set(true));
    }

    /// loom has no clock: a timed park is an untimed one (callers re-check, and no model
    /// waits with a timeout for something that never comes), unless the thread asked for
    /// its timeouts to fire ([`timeouts_fire`]).
    pub(crate) fn park_until(until: Option<Instant>) -> bool {
        if until.is_some() && TIMEOUTS_FIRE.with(|t| t.get()) {
            thread::yield_now();
            return true;
        }
        thread::park();
        false
    }

    /// Models never get here: only the real clock spins (`queue/park.rs`), and every model runs
    /// on virtual time. Keeps the lock, which is the conservative choice if one ever did.
    pub(crate) fn unlocked<T, R>(_guard: &mut MutexGuard<'_, T>, f: impl FnOnce() -> R) -> R {
        f()
    }
}

pub(crate) use imp::*;

/// Memory orderings: the same enum for `std`'s and loom's atomics.
pub(crate) use std::sync::atomic::Ordering;

/// Reference counting stays `std`'s in every build (`Arc` here, and a task's own count in
/// `task/raw/`): loom's `Arc` cannot coerce to a trait object. The models check the
/// protocols built on the mutexes, condition variables and atomics, not reference counts.
pub(crate) use std::sync::{Arc, Weak};

/// A process-wide unique number (queue identities for keys). Always `std`'s atomic: it is
/// a `static`, outside any model. `Relaxed`: only uniqueness matters.
pub(crate) fn unique_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// `std`'s atomic in every build, for statistics that no protocol depends on (the lateness
/// histogram has thousands of buckets; as loom objects they would swamp a model).
pub(crate) use std::sync::atomic::AtomicU64 as StatCounter;
/// `std`'s byte-wide atomic in every build, for a reported state no protocol depends on (a
/// periodic task's last outcome, `task/periodic.rs`).
pub(crate) use std::sync::atomic::AtomicU8 as StatByte;
