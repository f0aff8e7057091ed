//! The waiter table: who waits for which one-shot, kept outside the tasks.
//!
//! # Design
//! Most one-shots are never waited for (timeouts that get cancelled, `execute`), so a
//! one-shot keeps no room for waiters (`docs/DESIGN.md`, "Memory"). A thread blocked in
//! `ScheduledFuture::get` or a `poll` that returned `Pending` registers here instead,
//! under its task's address, in one of [`SHARDS`] mutex-guarded lists; the task's state
//! word records that someone did ([`WAITING`](super::state::WAITING)). This is the
//! shape of `parking_lot_core`'s parking lot (a table keyed by address), with wakers
//! beside threads.
//!
//! # Invariants
//! - W1: a waiter registers in the critical section of its shard in which
//!   [`TaskState::wait_on`] succeeded (the task was not terminal); the author of the
//!   terminal transition, if it then sees `WAITING`, takes the task's registrations in a
//!   critical section of the same shard and wakes them after unlocking. So a waiter either
//!   sees the task terminal, or is registered before the author's critical section and
//!   is woken (an unpark before the park makes the park return at once).
//! - W2: registrations under a task's address belong to that task: the waker takes them
//!   all when the task ends, a timed-out thread takes its own, and a task freed before it
//!   ended (`Drop`, with `WAITING` set) takes what is left. So an address reused by a
//!   later task starts with no registration.
//!
//! # Ordering
//! The lists are behind mutexes; the flag's orderings are in `state.rs`. A woken thread
//! re-reads the state word (Acquire) before it reads the outcome.

use std::task::Waker;

use super::state::TaskState;
use crate::sync::{thread, Mutex};

/// The table's shards: enough that waiters on different tasks rarely share a lock.
const SHARDS: usize = 64;

/// One registration.
enum Waiter {
    /// A thread blocked in `wait`.
    Thread(thread::Thread),
    /// The last waker a `poll` of the task's future left.
    Waker(Waker),
}

impl Waiter {
    fn wake(self) {
        match self {
            Waiter::Thread(t) => t.unpark(),
            Waiter::Waker(w) => w.wake(),
        }
    }
}

/// The table (see the module notes).
struct Table {
    shards: [Mutex<Vec<(usize, Waiter)>>; SHARDS],
}

impl Table {
    fn new() -> Self {
        Table {
            shards: std::array::from_fn(|_| Mutex::new(Vec::new())),
        }
    }

    fn shard(&self, key: usize) -> &Mutex<Vec<(usize, Waiter)>> {
        // Tasks are at least 8-byte aligned and a few dozen bytes long: drop the low bits.
        &self.shards[(key >> 5) % SHARDS]
    }
}

#[cfg(not(all(test, loom)))]
fn table() -> &'static Table {
    static TABLE: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    TABLE.get_or_init(Table::new)
}

#[cfg(all(test, loom))]
fn table() -> &'static Table {
    loom::lazy_static! {
        static ref TABLE: Table = Table::new();
    }
    &TABLE
}

/// Registers this thread as a waiter of the task at `key` (W1); `None` if the task is
/// already terminal, else this thread's handle (for [`leave`]).
pub(super) fn register_thread(key: usize, state: &TaskState) -> Option<thread::Thread> {
    let mut list = table().shard(key).lock();
    if !state.wait_on() {
        return None;
    }
    let me = thread::current();
    list.push((key, Waiter::Thread(me.clone())));
    Some(me)
}

/// Takes back this thread's registration after a timed-out wait (W2).
pub(super) fn leave(key: usize, me: &thread::Thread) {
    let mut list = table().shard(key).lock();
    if let Some(i) = list
        .iter()
        .position(|(k, w)| *k == key && matches!(w, Waiter::Thread(t) if t.id() == me.id()))
    {
        list.swap_remove(i);
    }
}

/// Registers `waker` for the task at `key`, replacing the one an earlier poll left (W1);
/// `false` if the task is already terminal.
pub(super) fn register_waker(key: usize, state: &TaskState, waker: &Waker) -> bool {
    let mut list = table().shard(key).lock();
    if !state.wait_on() {
        return false;
    }
    match list
        .iter_mut()
        .find(|(k, w)| *k == key && matches!(w, Waiter::Waker(_)))
    {
        Some((_, Waiter::Waker(old))) => {
            if !old.will_wake(waker) {
                *old = waker.clone();
            }
        }
        _ => list.push((key, Waiter::Waker(waker.clone()))),
    }
    true
}

/// Wakes every waiter of the task at `key`: called by the author of its terminal
/// transition when [`TaskState::is_waited`] says someone registered (W1).
pub(super) fn wake_all(key: usize) {
    let mut woken = Vec::new();
    {
        let mut list = table().shard(key).lock();
        let mut i = 0;
        while i < list.len() {
            if list[i].0 == key {
                woken.push(list.swap_remove(i).1);
            } else {
                i += 1;
            }
        }
    }
    // W1: after unlocking (a waker may run arbitrary code).
    for w in woken {
        w.wake();
    }
}

/// Drops what is left under `key` without waking it: a task freed before it ended (W2).
pub(super) fn forget(key: usize) {
    let left: Vec<(usize, Waiter)> = {
        let mut list = table().shard(key).lock();
        let (mine, others) = std::mem::take(&mut *list)
            .into_iter()
            .partition(|(k, _)| *k == key);
        *list = others;
        mine
    };
    drop(left); // outside the lock: a waker's drop may run arbitrary code
}

/// How many registrations the task at `key` has (tests).
#[cfg(all(test, not(loom)))]
pub(super) fn count(key: usize) -> usize {
    table()
        .shard(key)
        .lock()
        .iter()
        .filter(|(k, _)| *k == key)
        .count()
}
