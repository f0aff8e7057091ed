//! The executor's control state: run state, worker and thread counts in one packed
//! atomic word (Java's `ctl`), and the termination latch.
//!
//! # Design
//! The word is not guarded by a queue lock: readers (`is_shutdown`, `stats`, `Debug`,
//! the thread-exit path) load it without taking any lock, and every change is one
//! compare-exchange that computes the next [`Snapshot`] from the current one, so two
//! fields that must change together (a worker reservation and its thread; the run state and the
//! shutdown caller's finisher slot) do. What the queue decides (is it empty? may this
//! task be accepted?) is decided by reading the word inside a shard's critical section, or
//! under every shard's lock;
//! the protocols that need both are written out as E1, E2 and E5 in `pool/mod.rs`.
//!
//! Layout of the word (`u64`):
//!
//! ```text
//!   bits 0..2    run state: 0 Running, 1 Shutdown, 2 Stop (never decreases)
//!   bits 2..32   workers: worker reservations (a worker takes tasks while it holds one)
//!   bits 32..62  threads: parties still doing the pool's work: worker threads until their
//!                stop hook has run, and a shutdown call completing the futures of the
//!                tasks it removed
//! ```
//!
//! The pool is *terminal* when the run state is Shutdown or Stop and `threads` is 0; the
//! change that makes it terminal latches [`Termination`]. `threads` can rise again after
//! that only for a finisher slot (`set_policy` after termination, which finds the queue
//! empty), so termination is the latch, never the word.
//!
//! # Ordering
//! Every change is an `AcqRel` compare-exchange and every read an `Acquire` load: a change
//! publishes whatever its author wrote before it (the worker's last accounting before it
//! releases its thread; the shutdown caller's completed futures before it releases its
//! finisher slot), and whoever sees the change sees those writes. The orderings between
//! this word and the queue come from the shard locks, not from these atomics (E1 and E2
//! in `pool/mod.rs`).

use crate::sync::Ordering;
use std::fmt;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Condvar, Mutex};

/// Java's run states, ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum RunState {
    Running,
    Shutdown,
    Stop,
}

const STATE_MASK: u64 = 0b11;
const WORKER_SHIFT: u32 = 2;
const THREAD_SHIFT: u32 = 32;
const COUNT_MASK: u64 = (1 << 30) - 1;

/// The most workers or threads the word can count; reservations stop there.
pub(crate) const MAX_COUNT: usize = COUNT_MASK as usize;

/// One loaded value of the control word.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Snapshot(u64);

impl Snapshot {
    const INITIAL: Snapshot = Snapshot(0);

    #[inline]
    pub(crate) fn run_state(self) -> RunState {
        match self.0 & STATE_MASK {
            0 => RunState::Running,
            1 => RunState::Shutdown,
            _ => RunState::Stop,
        }
    }

    #[inline]
    pub(crate) fn is_running(self) -> bool {
        self.0 & STATE_MASK == 0
    }

    /// Worker reservations.
    #[inline]
    pub(crate) fn workers(self) -> usize {
        ((self.0 >> WORKER_SHIFT) & COUNT_MASK) as usize
    }

    /// Threads (and finishers) still doing the pool's work.
    #[inline]
    pub(crate) fn threads(self) -> usize {
        ((self.0 >> THREAD_SHIFT) & COUNT_MASK) as usize
    }

    /// Shut down and nobody left working: termination.
    #[inline]
    pub(crate) fn is_terminal(self) -> bool {
        !self.is_running() && self.threads() == 0
    }

    /// Java's `runStateAtLeast(SHUTDOWN) && workQueue.isEmpty()`, or STOP: a worker exits.
    #[inline]
    pub(crate) fn is_drained(self, queued: usize) -> bool {
        match self.run_state() {
            RunState::Running => false,
            RunState::Shutdown => queued == 0,
            RunState::Stop => true,
        }
    }

    fn with_state(self, s: RunState) -> Snapshot {
        Snapshot((self.0 & !STATE_MASK) | s as u64)
    }

    fn with_workers(self, n: usize) -> Snapshot {
        debug_assert!(n <= MAX_COUNT);
        Snapshot((self.0 & !(COUNT_MASK << WORKER_SHIFT)) | ((n as u64) << WORKER_SHIFT))
    }

    fn with_threads(self, n: usize) -> Snapshot {
        debug_assert!(n <= MAX_COUNT);
        Snapshot((self.0 & !(COUNT_MASK << THREAD_SHIFT)) | ((n as u64) << THREAD_SHIFT))
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("run_state", &self.run_state())
            .field("workers", &self.workers())
            .field("threads", &self.threads())
            .finish()
    }
}

/// What a thread leaving the pool learned (see [`Control::thread_exit`]).
#[derive(Debug)]
pub(crate) struct ThreadExit {
    /// A replacement worker was reserved: start it.
    pub(crate) replacement: Option<usize>,
    /// This exit terminated the pool.
    pub(crate) terminated: bool,
}

/// The control word plus the counters that only report (largest size, next thread index)
/// and the termination latch.
pub(crate) struct Control {
    word: AtomicU64,
    /// The largest `workers` ever reserved. Relaxed: reporting only.
    largest: AtomicUsize,
    /// Next worker index for thread names; never reused. Relaxed: uniqueness only.
    next_index: AtomicUsize,
    termination: Termination,
}

impl Control {
    pub(crate) fn new() -> Self {
        Control {
            word: AtomicU64::new(Snapshot::INITIAL.0),
            largest: AtomicUsize::new(0),
            next_index: AtomicUsize::new(0),
            termination: Termination::new(),
        }
    }

    /// The current value. Acquire: see the module notes.
    #[inline]
    pub(crate) fn load(&self) -> Snapshot {
        Snapshot(self.word.load(Ordering::Acquire))
    }

    /// Applies `f` to the current value until the exchange succeeds; `f` returning `None`
    /// leaves the word alone. Returns (old, new), new = old if `f` declined.
    fn update(&self, mut f: impl FnMut(Snapshot) -> Option<Snapshot>) -> (Snapshot, Snapshot) {
        let mut cur = self.load();
        loop {
            let Some(next) = f(cur) else {
                return (cur, cur);
            };
            // AcqRel: see the module notes.
            match self.word.compare_exchange_weak(
                cur.0,
                next.0,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return (cur, next),
                Err(actual) => cur = Snapshot(actual),
            }
        }
    }

    /// Reserves a worker and its thread if `allow` says so for the current value;
    /// returns the new worker's index (E1, E5).
    #[must_use]
    pub(crate) fn reserve_if(&self, mut allow: impl FnMut(Snapshot) -> bool) -> Option<usize> {
        let (old, new) = self.update(|c| {
            (allow(c) && c.workers() < MAX_COUNT && c.threads() < MAX_COUNT).then(|| {
                c.with_workers(c.workers() + 1)
                    .with_threads(c.threads() + 1)
            })
        });
        if old == new {
            return None;
        }
        // Relaxed: reporting and naming only.
        self.largest.fetch_max(new.workers(), Ordering::Relaxed);
        Some(self.next_index.fetch_add(1, Ordering::Relaxed))
    }

    /// Java `ensurePrestart`: reserve while fewer than `core` workers are reserved (one in
    /// all when `core` is 0), only while running.
    #[must_use]
    pub(crate) fn reserve_for_task(&self, core: usize) -> Option<usize> {
        self.reserve_if(|c| c.is_running() && c.workers() < core.max(1))
    }

    /// Gives back a worker reservation if `allow` says so for the current value; `true` if it did.
    /// The worker keeps its thread until [`thread_exit`](Self::thread_exit).
    #[must_use]
    pub(crate) fn release_worker_if(&self, mut allow: impl FnMut(Snapshot) -> bool) -> bool {
        let (old, new) =
            self.update(|c| (c.workers() > 0 && allow(c)).then(|| c.with_workers(c.workers() - 1)));
        old != new
    }

    /// A reserved worker whose thread could not start gives back slot and thread.
    /// Returns true if that terminated the pool.
    pub(crate) fn unreserve(&self) -> bool {
        let (old, new) = self.update(|c| {
            Some(
                c.with_workers(c.workers().saturating_sub(1))
                    .with_threads(c.threads().saturating_sub(1)),
            )
        });
        self.latch_if_terminal(old, new)
    }

    /// A thread is leaving: gives back its thread (and its reservation unless `released`), and in
    /// the same exchange reserves a replacement if `replace` says so for the value after
    /// the exit (E1 after an abnormal death). Latches termination if this exit made the
    /// pool terminal.
    pub(crate) fn thread_exit(
        &self,
        released: bool,
        mut replace: impl FnMut(Snapshot) -> bool,
    ) -> ThreadExit {
        let mut replaced = false;
        let (old, new) = self.update(|c| {
            let workers = if released {
                c.workers()
            } else {
                c.workers().saturating_sub(1)
            };
            let after = c
                .with_workers(workers)
                .with_threads(c.threads().saturating_sub(1));
            replaced = replace(after);
            Some(if replaced {
                after
                    .with_workers(workers + 1)
                    .with_threads(after.threads() + 1)
            } else {
                after
            })
        });
        let replacement = replaced.then(|| {
            self.largest.fetch_max(new.workers(), Ordering::Relaxed);
            self.next_index.fetch_add(1, Ordering::Relaxed)
        });
        ThreadExit {
            replacement,
            terminated: self.latch_if_terminal(old, new),
        }
    }

    /// Moves the run state up to `to` (never down) and takes a finisher slot for the
    /// caller, who completes the futures of the tasks it removes and then calls
    /// [`finisher_done`](Self::finisher_done) (E5). Returns the state before.
    pub(crate) fn shut_down(&self, to: RunState) -> RunState {
        let (old, _) = self.update(|c| {
            Some(
                c.with_state(c.run_state().max(to))
                    .with_threads(c.threads() + 1),
            )
        });
        old.run_state()
    }

    /// Takes a finisher slot without changing the run state (a policy change after
    /// shutdown that may remove tasks).
    pub(crate) fn finisher_start(&self) {
        self.update(|c| Some(c.with_threads(c.threads() + 1)));
    }

    /// Gives back a finisher slot; `true` if that terminated the pool.
    pub(crate) fn finisher_done(&self) -> bool {
        let (old, new) = self.update(|c| Some(c.with_threads(c.threads().saturating_sub(1))));
        self.latch_if_terminal(old, new)
    }

    /// Latches termination if `old -> new` made the pool terminal (E5: once).
    fn latch_if_terminal(&self, old: Snapshot, new: Snapshot) -> bool {
        new.is_terminal() && !old.is_terminal() && self.termination.latch()
    }

    /// The largest number of workers ever reserved.
    pub(crate) fn largest(&self) -> usize {
        // Relaxed: reporting only.
        self.largest.load(Ordering::Relaxed)
    }

    /// `true` once the pool has terminated.
    pub(crate) fn is_terminated(&self) -> bool {
        self.termination.is_latched()
    }

    /// Waits for termination until `until` (`None`: forever); `true` if terminated.
    pub(crate) fn await_termination(&self, until: Option<Instant>) -> bool {
        self.termination.wait(until)
    }

    /// After a call that returned `true` for termination, with no lock held: wakes the
    /// `terminated()` futures.
    pub(crate) fn wake_terminated(&self) {
        self.termination.wake_waiters();
    }

    /// Polls for termination (the `terminated()` future).
    pub(crate) fn poll_termination(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.termination.poll(cx)
    }

    /// Models: the latch alone, as the last party to finish sets it.
    #[cfg(all(test, loom))]
    pub(crate) fn latch_for_model(&self) -> bool {
        let latched = self.termination.latch();
        if latched {
            self.termination.wake_waiters();
        }
        latched
    }
}

impl fmt::Debug for Control {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Control")
            .field("word", &self.load())
            .field("terminated", &self.is_terminated())
            .finish_non_exhaustive()
    }
}

/// The termination latch: set once, waited for by `await_termination` and by the
/// `terminated()` future.
struct Termination {
    /// Guards the wait; `true` once latched, with the wakers of `terminated()` futures
    /// polled before (taken and woken by the latch).
    latched: Mutex<(bool, Vec<Waker>)>,
    cv: Condvar,
    /// A lock-free mirror for `is_terminated`. Release on latch / Acquire on read: a caller
    /// that sees it set sees the work of every party that finished before (they published
    /// it to the control word, which the latching exchange read).
    flag: AtomicBool,
}

impl Termination {
    fn new() -> Self {
        Termination {
            latched: Mutex::new((false, Vec::new())),
            cv: Condvar::new(),
            flag: AtomicBool::new(false),
        }
    }

    /// Sets the latch; `true` if this call set it. The `terminated()` futures' wakers
    /// stay registered: the caller that got `true` wakes them with
    /// [`wake_waiters`](Self::wake_waiters) once it holds no lock (U1 in `user.rs`; a
    /// worker's exit latches under every shard's lock).
    fn latch(&self) -> bool {
        let mut latched = self.latched.lock();
        if latched.0 {
            return false;
        }
        latched.0 = true;
        self.flag.store(true, Ordering::Release);
        self.cv.notify_all();
        true
    }

    /// Wakes the futures that waited for the latch (U1: with no lock held; U2: every
    /// waker, whatever the others do). Ready polls after the latch register nothing.
    fn wake_waiters(&self) {
        let wakers = std::mem::take(&mut self.latched.lock().1);
        wakers.into_iter().for_each(crate::user::wake);
    }

    /// The `terminated()` future's poll: ready once latched, else the waker is kept (one
    /// per future: a re-poll with the same waker does not add it again).
    ///
    /// U1: the clone is made with the lock released, and put in a second look.
    fn poll(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut fresh: Option<Waker> = None;
        loop {
            let mut latched = self.latched.lock();
            let ready = latched.0;
            if ready || latched.1.iter().any(|w| w.will_wake(cx.waker())) {
                drop(latched);
                if let Some(w) = fresh {
                    crate::user::drop_waker(w);
                }
                return if ready {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                };
            }
            match fresh.take() {
                Some(w) => {
                    latched.1.push(w);
                    return Poll::Pending;
                }
                None => {
                    drop(latched);
                    fresh = Some(crate::user::call(|| cx.waker().clone()));
                }
            }
        }
    }

    fn is_latched(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    fn wait(&self, until: Option<Instant>) -> bool {
        let mut latched = self.latched.lock();
        while !latched.0 {
            let timed_out = match until {
                Some(until) => self.cv.wait_until(&mut latched, until),
                None => {
                    self.cv.wait(&mut latched);
                    false
                }
            };
            if timed_out {
                return latched.0;
            }
        }
        true
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn fields_pack_and_unpack() {
        let s = Snapshot::INITIAL
            .with_state(RunState::Shutdown)
            .with_workers(MAX_COUNT)
            .with_threads(7);
        assert_eq!(s.run_state(), RunState::Shutdown);
        assert_eq!(s.workers(), MAX_COUNT);
        assert_eq!(s.threads(), 7);
        let s = s.with_workers(3).with_state(RunState::Stop);
        assert_eq!(
            (s.run_state(), s.workers(), s.threads()),
            (RunState::Stop, 3, 7)
        );
    }

    #[test]
    fn reserve_release_and_termination() {
        let c = Control::new();
        assert_eq!(c.reserve_for_task(2), Some(0));
        assert_eq!(c.reserve_for_task(2), Some(1));
        assert_eq!(c.reserve_for_task(2), None, "core size reached");
        assert_eq!(c.largest(), 2);
        assert!(c.release_worker_if(|s| s.workers() > 1));
        assert!(
            !c.release_worker_if(|s| s.workers() > 1),
            "the last one stays"
        );
        assert_eq!(c.shut_down(RunState::Shutdown), RunState::Running);
        assert_eq!(c.reserve_for_task(2), None, "no reservation after shutdown");
        let exit = c.thread_exit(true, |_| false);
        assert!(!exit.terminated && exit.replacement.is_none());
        let exit = c.thread_exit(false, |_| false);
        assert!(!exit.terminated, "the shutdown caller still finishes");
        assert!(!c.is_terminated());
        assert!(c.finisher_done(), "the last party terminates the pool");
        assert!(c.is_terminated() && c.await_termination(None));
        c.finisher_start();
        assert!(!c.finisher_done(), "latched once");
    }

    #[test]
    fn run_state_never_goes_down() {
        let c = Control::new();
        c.shut_down(RunState::Stop);
        assert!(c.finisher_done());
        assert_eq!(c.shut_down(RunState::Shutdown), RunState::Stop);
        assert_eq!(c.load().run_state(), RunState::Stop);
    }

    #[test]
    fn a_thread_exit_can_reserve_its_replacement_in_the_same_exchange() {
        let c = Control::new();
        assert_eq!(c.reserve_for_task(1), Some(0));
        let exit = c.thread_exit(false, |after| after.workers() == 0);
        assert_eq!(exit.replacement, Some(1));
        let s = c.load();
        assert_eq!((s.workers(), s.threads()), (1, 1));
    }
}
