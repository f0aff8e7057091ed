//! The door to user code: every call the crate makes into code it does not own.
//!
//! User code reaches the pool through more than its closures: a `Waker` (its `wake`,
//! `clone` and `drop`), a `tracing` subscriber behind every span and event, a `Trigger`
//! and its drop, the `Ord` of a queue's elements, a thread hook, a `ClusterLock`. Any of
//! them may panic, block, or call back into the pool. Two rules hold at every door
//! (`docs/DESIGN.md`, "User code"):
//!
//! - U1: no user code runs while this thread holds a lock of the crate. [`call`] and
//!   [`contain`] assert it in debug builds (tests included) from the count the crate's
//!   guards keep (`sync::held`); the exceptions are the calls a structure cannot make
//!   otherwise, each under a lock of that one structure and documented as such: a
//!   queue's `Ord` and a `peek_with` closure under that queue's lock (I4 in
//!   `queue/mod.rs`), a `Trigger` under its own spec's mutex. They go through
//!   [`under_own_lock`], which marks them where they are called.
//! - U2: no user panic stops a protocol half-way. Where a protocol must go on after the
//!   call (wake every remaining waiter, finish every removed task, run or end the task
//!   whose span failed), the call goes through [`contain`], which hands the panic back
//!   as a value; the caller finishes its step and then reports the panic
//!   ([`report`]) or re-raises it where a caller of ours expects it.
//!
//! A contained panic of a waker or a subscriber is reported once a second at most
//! (`error`, target `schedpool`, with `door`), through the same subscriber that may have
//! panicked: that report is contained too, and a panic payload whose own drop panics is
//! contained as well (its panic's payload dropped in turn), never let out.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::task::Waker;

use crate::sync::held;
use crate::throttle::Throttle;

/// A panic payload, as `catch_unwind` gives it.
pub(crate) type Panic = Box<dyn Any + Send + 'static>;

/// Which kind of user code panicked (the `door` field of the report).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Door {
    /// `Waker::wake` of a future's or a queue's waiter.
    Wake,
    /// A `Waker`'s drop (a replaced or forgotten registration).
    WakerDrop,
    /// A `tracing` subscriber, at a task's span or one of the pool's events.
    Subscriber,
    /// A `Trigger`'s or closure's destructor run where the protocol had to go on.
    Drop,
    /// A `Trigger`'s `describe` (a task list keeps its previous answer).
    Describe,
    /// A `metrics` recorder (feature `metrics`): its panic costs that publication.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    Recorder,
}

impl Door {
    fn name(self) -> &'static str {
        match self {
            Door::Wake => "waker wake",
            Door::WakerDrop => "waker drop",
            Door::Subscriber => "tracing subscriber",
            Door::Drop => "destructor",
            Door::Describe => "trigger describe",
            Door::Recorder => "metrics recorder",
        }
    }

    fn throttle(self) -> &'static Throttle {
        static THROTTLES: [Throttle; 6] = [
            Throttle::new(),
            Throttle::new(),
            Throttle::new(),
            Throttle::new(),
            Throttle::new(),
            Throttle::new(),
        ];
        &THROTTLES[self as usize]
    }
}

/// Asserts U1 (debug builds): this thread holds no lock of the crate.
#[inline]
#[track_caller]
fn assert_unlocked() {
    debug_assert_eq!(
        held::count(),
        0,
        "schedpool: user code called while the crate holds a lock (U1, src/user.rs)"
    );
}

/// Calls user code whose panic may unwind into the caller (U1 checked).
#[inline]
#[track_caller]
pub(crate) fn call<R>(f: impl FnOnce() -> R) -> R {
    assert_unlocked();
    f()
}

/// Calls user code under the one lock of the structure it belongs to: a queue's `Ord`
/// and `peek_with` under that queue's lock, a `Trigger` under its spec's mutex (the
/// documented exceptions to U1). That lock is not counted while the code runs, so what
/// the code calls (another queue, the pool, which traces through [`traced`]) is checked
/// against the crate's other locks only; calling the same structure again deadlocks, as
/// documented. Its panic unwinds: the caller's structure stays true across it (the heap's
/// hole, `queue/heap.rs`).
#[inline]
pub(crate) fn under_own_lock<R>(f: impl FnOnce() -> R) -> R {
    let _own = crate::sync::held::Own::new(); // counted again when it drops
    f()
}

/// Calls user code and contains its panic (U1 checked, U2): `Err` carries the payload.
#[inline]
#[track_caller]
pub(crate) fn contain<R>(f: impl FnOnce() -> R) -> Result<R, Panic> {
    assert_unlocked();
    panic::catch_unwind(AssertUnwindSafe(f))
}

/// Calls into the `tracing` subscriber (an event, a span's creation, entry, exit or
/// close) with its panic contained and reported (U2): `None` if it panicked. Every span
/// and event of the crate goes through here, so a subscriber that panics costs its line,
/// never a task.
#[inline]
#[track_caller]
pub(crate) fn traced<R>(f: impl FnOnce() -> R) -> Option<R> {
    match contain(f) {
        Ok(r) => Some(r),
        Err(p) => {
            report(Door::Subscriber, p);
            None
        }
    }
}

/// Wakes `waker` with its panic contained and reported (U2): the caller goes on to its
/// other waiters whatever this one does.
#[inline]
pub(crate) fn wake(waker: Waker) {
    if let Err(p) = contain(|| waker.wake()) {
        report(Door::Wake, p);
    }
}

/// Drops a waker with its panic contained and reported.
#[inline]
pub(crate) fn drop_waker(waker: Waker) {
    if let Err(p) = contain(|| drop(waker)) {
        report(Door::WakerDrop, p);
    }
}

/// Drops `value` (user code in its destructor: a closure, an output, a trigger, a task
/// whose last reference this is) with the panic contained and reported.
pub(crate) fn drop_quietly<T>(value: T) {
    if let Err(p) = contain(|| drop(value)) {
        report(Door::Drop, p);
    }
}

/// Reports a contained panic (at most one line a second per door) and drops its payload;
/// neither the report's subscriber nor the payload's destructor gets out.
pub(crate) fn report(door: Door, payload: Panic) {
    if let Some(suppressed) = door.throttle().admit() {
        let message = crate::error::panic_message(&*payload).unwrap_or("<non-string payload>");
        let _ = contain(|| {
            tracing::error!(
                target: "schedpool",
                door = door.name(),
                panic = %message,
                suppressed,
                "user code panicked; the pool went on"
            )
        });
    }
    forget_payload(payload);
}

/// Drops a panic payload, containing a panic of its destructor: that panic's own payload
/// (usually a message) is dropped the same way, and only after a few payloads in a row
/// that each panic again is the last one leaked, so that nothing unwinds out of a
/// protocol.
pub(crate) fn forget_payload(payload: Panic) {
    let mut payload = payload;
    for _ in 0..4 {
        match panic::catch_unwind(AssertUnwindSafe(|| drop(payload))) {
            Ok(()) => return,
            Err(again) => payload = again,
        }
    }
    std::mem::forget(payload);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct Panicky(AtomicUsize);

    impl Wake for Panicky {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
            panic!("a waker that panics");
        }
    }

    #[test]
    fn a_panicking_wake_is_contained() {
        let w = Arc::new(Panicky(AtomicUsize::new(0)));
        wake(Waker::from(w.clone()));
        wake(Waker::from(w.clone()));
        assert_eq!(w.0.load(Ordering::SeqCst), 2, "both woken, neither got out");
    }

    #[test]
    fn a_payload_whose_drop_panics_is_contained_not_raised() {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("payload drop");
            }
        }
        forget_payload(Box::new(Bomb));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "U1")]
    fn user_code_under_a_crate_lock_is_caught_in_debug_builds() {
        let m = Mutex::new(());
        let _g = m.lock();
        call(|| ());
    }

    #[test]
    fn a_lock_released_by_unlocked_is_not_counted() {
        let m = Mutex::new(());
        let mut g = m.lock();
        crate::sync::unlocked(&mut g, || call(|| ()));
        drop(g);
        call(|| ());
    }
}
