//! Runs that wait inside themselves: a thread asleep in
//! [`TaskContext::sleep`](crate::TaskContext::sleep), which a cancel or interrupt,
//! `shutdown_now` and a `ManualClock` advance unpark, and an async run's future awaiting
//! something (`body/async_run.rs`), whose waker a cancel or interrupt and `shutdown_now`
//! wake, so that each re-checks whether it must stop.
//!
//! # Design
//! Each waiting run is listed under its task's key (the address of its header, [`key`]),
//! so a cancel or an interrupt wakes its own task's runs only ([`Sleepers::wake_task`]):
//! with a thousand async runs awaiting, an interrupt costs one wake-up, not a thousand
//! spurious polls (`docs/BENCHMARKS.md`, "A cancel wakes its own run"). `shutdown_now`
//! wakes every run ([`Sleepers::wake`]), a `ManualClock` advance every thread.
//!
//! A waiting run is rare and a cancel is not. A cancel that takes its task out of the
//! queue (the common case: a pending timeout) wakes nobody, since a queued task is not
//! running and so not waiting; any other cancel or interrupt (a running task, or any with
//! `remove_on_cancel` off) costs one `SeqCst` fence and a load of a line that only
//! sleepers write. `scripts/opcount.sh`: `cancel` and `cancel_shuffled` are 3
//! instructions above the code without the list, with the same atomics and misses. The
//! wake-ups happen only while someone waits. A sleeper parks its own thread
//! (`park_until`) and re-checks its task's state, the pool's run state and the time after
//! every return, spurious or not.
//!
//! An async run cannot be unparked: the runtime that polls its future parks the thread
//! its own way (tokio's `block_on` on a condition variable of its own). So it lists a
//! [`WakerSlot`] instead, which holds the waker of its latest poll; a wake-up takes the
//! waker out and wakes it, and the run's next poll checks whether it must stop and puts
//! its waker back. The waker is the runtime's code: it is cloned, woken and dropped with
//! no lock of ours held (U1, through `user.rs`), so the list's critical section only
//! clones the slots' `Arc`s, and each slot's own mutex only moves a waker in or out.
//!
//! # Invariants
//! - S1 (no lost wake-up): a sleeper joins the list under its task's key and counts
//!   itself in `count`, issues a `SeqCst` fence, and only then checks its condition and
//!   parks; a waker first makes its change (the task's state, the run state, the clock),
//!   issues a `SeqCst` fence, then reads `count`, and wakes every listed run its change
//!   concerns: those of its task's key (a cancel, an interrupt), or all (`shutdown_now`, an
//!   advance). A run only checks changes to its own task and to the pool, so a wake-up is
//!   owed only to the runs of the changed task's key, or to all. (A cancel that removed its
//!   task from the queue skips this: the task was not running, so no sleeper waits on it.)
//!   Of the two fences one comes first in their total order: either the waker's read sees
//!   the sleeper and unparks it (an unpark before the park makes the park return at once),
//!   or the sleeper's check sees the change. An async run joins with its waker already in
//!   its slot, so a wake-up that sees it finds a waker to wake.
//! - S2 (an async run's later polls): each poll that returns pending puts its waker back
//!   into its slot, under the slot's mutex, before that poll ends; a wake-up takes the
//!   waker out under the same mutex. So a wake-up whose take comes before the put finds
//!   the previous poll's waker (the same task: it is polled again) or, if an earlier
//!   wake-up took that, a poll already owed; and a change made before a take that found
//!   the slot empty is seen by the check of the poll that then puts its waker back (the
//!   mutex orders the change before it).
//!
//! # Ordering
//! `count` is `Relaxed` on both sides: the fences order it (S1). The list is under its
//! mutex, each slot's waker under the slot's (S2).

use std::task::Waker;

use super::{Suspended, TaskRef};
use crate::sync::{fence, thread, Arc, AtomicUsize, Mutex, Ordering};
use crate::user;

/// A task's key among the waiting runs: the address of its header, the same from the run
/// (`RunEnv::task`) and from a handle that cancels it. A listed run keeps its task alive,
/// so no other task has that address meanwhile.
#[inline]
pub(crate) fn key(task: &dyn super::Task) -> usize {
    std::ptr::from_ref(task.header()) as usize
}

/// The pool's waiting runs (module notes).
#[derive(Debug)]
pub(crate) struct Sleepers {
    /// Threads and slots in the list (S1).
    count: AtomicUsize,
    listed: Mutex<Listed>,
}

/// Who waits, each under its task's key: threads in `TaskContext::sleep`, async runs'
/// slots, and suspended runs (`suspended.rs`: an async run off its worker).
#[derive(Debug, Default)]
struct Listed {
    threads: Vec<(usize, thread::Thread)>,
    futures: Vec<(usize, Arc<WakerSlot>)>,
    /// A slab: each run knows its place (`Suspended::place`), so one leaves in O(1) however
    /// many are listed.
    runs: Vec<Option<(usize, TaskRef)>>,
    /// The free places in `runs`.
    free: Vec<usize>,
}

impl Sleepers {
    pub(crate) fn new() -> Self {
        Sleepers {
            count: AtomicUsize::new(0),
            listed: Mutex::new(Listed::default()),
        }
    }

    /// Lists the calling thread, a run of the task with key `key`, until the returned
    /// guard drops. The caller checks its condition after this returns, and before every
    /// park (S1).
    pub(crate) fn join(&self, key: usize) -> Asleep<'_> {
        self.listed.lock().threads.push((key, thread::current()));
        self.counted();
        Asleep { sleepers: self }
    }

    /// Lists an async run of the task with key `key` with `waker`, its latest poll's, until
    /// the returned guard drops. The caller checks its condition after this returns (S1),
    /// and each later poll that returns pending hands its waker to [`Awaiting::set`] (S2):
    /// [`pending`](Self::pending).
    fn join_waker(&self, key: usize, waker: &Waker) -> Awaiting<'_> {
        let slot = Arc::new(WakerSlot {
            // U1: the runtime's clone, with no lock held.
            waker: Mutex::new(Some(user::call(|| waker.clone()))),
        });
        self.listed.lock().futures.push((key, slot.clone()));
        self.counted();
        Awaiting {
            sleepers: self,
            slot,
        }
    }

    /// An async run of the task with key `key` whose future just returned pending: lists
    /// it with `waker` the first time (S1), puts `waker` back into its slot on later polls
    /// (S2), and only then asks `stop`. `true`: the run must stop (its caller drops the
    /// future); `false`: a wake-up after any change `stop` reads will poll it again.
    pub(crate) fn pending<'a>(
        &'a self,
        key: usize,
        listed: &mut Option<Awaiting<'a>>,
        waker: &Waker,
        stop: impl FnOnce() -> bool,
    ) -> bool {
        match listed {
            None => *listed = Some(self.join_waker(key, waker)), // S1
            Some(awaiting) => awaiting.set(waker),               // S2
        }
        stop()
    }

    /// Lists a suspended run of the task with key `key` (`suspended.rs`), from before its
    /// first poll until it ends ([`leave_run`](Self::leave_run)): a stop finds it here
    /// ([`stop_runs`](Self::stop_runs)). The first poll checks for a stop after this (S1).
    pub(crate) fn join_run(&self, key: usize, run: TaskRef) {
        {
            let mut listed = self.listed.lock();
            let place = match listed.free.pop() {
                Some(place) => place,
                None => {
                    listed.runs.push(None);
                    listed.runs.len() - 1
                }
            };
            Suspended::set_place(&run, place); // under the list's lock: `leave_run` reads it
            listed.runs[place] = Some((key, run));
        }
        self.counted();
    }

    /// A suspended run ended: it leaves the list. Its reference comes back, to be dropped
    /// by the caller after its own use (never the last one here: the caller holds one).
    #[must_use]
    pub(crate) fn leave_run(&self, run: &TaskRef) -> Option<TaskRef> {
        let left = {
            let mut listed = self.listed.lock();
            let place = Suspended::place(run);
            let here = listed.runs.get(place).and_then(Option::as_ref);
            if here.is_some_and(|(_, r)| std::ptr::eq(r.header(), run.header())) {
                listed.free.push(place);
                listed.runs[place].take().map(|(_, r)| r)
            } else {
                None
            }
        };
        if left.is_some() {
            self.uncounted();
        }
        left
    }

    /// The suspended runs a stop must end (S1): after its change, those of the task with
    /// key `key` (an interrupt), or all (`key` `None`: `shutdown_now`). Each that was idle
    /// is claimed and returned, for the caller to poll to its end (its future dropped);
    /// each being polled is notified, and its poller sees the stop (`suspended.rs`).
    pub(crate) fn stop_runs(&self, key: Option<usize>) -> Vec<TaskRef> {
        // S1: after the stop's change.
        fence(Ordering::SeqCst);
        // Relaxed: the fence orders it (S1).
        if self.count.load(Ordering::Relaxed) == 0 {
            return Vec::new();
        }
        let runs: Vec<TaskRef> = {
            let listed = self.listed.lock();
            let all = listed.runs.iter().flatten();
            let concerned = all.filter(|(k, _)| key.is_none_or(|key| key == *k));
            concerned.map(|(_, run)| run.clone()).collect()
        };
        runs.into_iter().filter(Suspended::claim).collect()
    }

    /// The suspended runs listed now (a snapshot of the task list: `pool/introspect.rs`).
    pub(crate) fn suspended_runs(&self) -> Vec<TaskRef> {
        let listed = self.listed.lock();
        listed
            .runs
            .iter()
            .flatten()
            .map(|(_, run)| run.clone())
            .collect()
    }

    /// One more listed, then the fence (S1).
    fn counted(&self) {
        // Relaxed: the fence orders it (S1).
        self.count.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst); // S1: before the sleeper's check
    }

    /// One fewer listed (the guards' drops).
    fn uncounted(&self) {
        // Relaxed: the fences order it (S1); a stale non-zero only costs a wake-up.
        self.count.fetch_sub(1, Ordering::Relaxed);
    }

    /// Wakes every listed thread and async run, if there is one: `shutdown_now`. Call
    /// after the change a sleeper must see (S1).
    #[inline]
    pub(crate) fn wake(&self) {
        self.wake_if_listed(None, true);
    }

    /// Wakes the listed threads and async runs of the task with key `key` ([`key`]), if
    /// there is one: its cancel or interrupt. Call after the change (S1).
    #[inline]
    pub(crate) fn wake_task(&self, key: usize) {
        self.wake_if_listed(Some(key), true);
    }

    /// As [`wake`](Self::wake), but only the threads: a `ManualClock` advance, which
    /// threads asleep on virtual time must see and async runs do not look at.
    #[inline]
    pub(crate) fn wake_threads(&self) {
        self.wake_if_listed(None, false);
    }

    /// `task`: only that key's runs (`None`: all); `futures`: the async runs too.
    #[inline]
    fn wake_if_listed(&self, task: Option<usize>, futures: bool) {
        // S1: after the waker's change.
        fence(Ordering::SeqCst);
        // Relaxed: the fence orders it (S1).
        if self.count.load(Ordering::Relaxed) > 0 {
            self.wake_listed(task, futures);
        }
    }

    #[cold]
    fn wake_listed(&self, task: Option<usize>, futures: bool) {
        let concerned = |key: usize| task.is_none_or(|k| k == key);
        let slots: Vec<Arc<WakerSlot>> = {
            let listed = self.listed.lock();
            for (_, t) in listed.threads.iter().filter(|(k, _)| concerned(*k)) {
                t.unpark();
            }
            if !futures {
                return;
            }
            let slots = listed.futures.iter().filter(|(k, _)| concerned(*k));
            slots.map(|(_, slot)| slot.clone()).collect()
        };
        // U1: the wakers are woken with the list unlocked.
        for slot in slots {
            slot.wake();
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
        {
            let mut listed = self.sleepers.listed.lock();
            if let Some(i) = listed.threads.iter().position(|(_, t)| t.id() == me) {
                listed.threads.swap_remove(i);
            }
        }
        self.sleepers.uncounted();
    }
}

/// Where a wake-up finds an async run's waker (S2).
#[derive(Debug)]
pub(crate) struct WakerSlot {
    /// The latest poll's waker; `None` once a wake-up took it, until the next poll that
    /// returns pending puts one back.
    waker: Mutex<Option<Waker>>,
}

impl WakerSlot {
    /// Takes the waker out and wakes it with the slot unlocked (S2, U1).
    fn wake(&self) {
        let waker = self.waker.lock().take();
        if let Some(w) = waker {
            user::wake(w);
        }
    }
}

/// An async run's place in the list; leaving it takes the slot out and drops its waker.
#[derive(Debug)]
pub(crate) struct Awaiting<'a> {
    sleepers: &'a Sleepers,
    slot: Arc<WakerSlot>,
}

impl Awaiting<'_> {
    /// Puts `waker` (this poll's) into the slot: called by each poll that returns pending,
    /// before its check (S2, [`Sleepers::pending`]). Clones it only if the slot's waker
    /// would not wake the same task; the clone and the drop of the waker it replaces run
    /// unlocked (U1).
    fn set(&self, waker: &Waker) {
        if self
            .slot
            .waker
            .lock()
            .as_ref()
            .is_some_and(|w| w.will_wake(waker))
        {
            return;
        }
        let fresh = user::call(|| waker.clone());
        let old = self.slot.waker.lock().replace(fresh);
        if let Some(old) = old {
            user::drop_waker(old);
        }
    }
}

impl Drop for Awaiting<'_> {
    fn drop(&mut self) {
        let listed = {
            let mut listed = self.sleepers.listed.lock();
            let i = listed
                .futures
                .iter()
                .position(|(_, s)| Arc::ptr_eq(s, &self.slot));
            i.map(|i| listed.futures.swap_remove(i))
        };
        drop(listed); // our own `Arc`: the waker is still in the slot, taken below
        self.sleepers.uncounted();
        let waker = self.slot.waker.lock().take();
        if let Some(w) = waker {
            user::drop_waker(w); // U1: unlocked
        }
    }
}
