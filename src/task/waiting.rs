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
//! - A1: a waiter registers in the critical section of its shard in which
//!   `Header::wait_on` succeeded (the task was not terminal); the author of the
//!   terminal transition, if it then sees `WAITING`, takes the task's registrations in a
//!   critical section of the same shard and wakes them after unlocking. So a waiter either
//!   sees the task terminal, or is registered before the author's critical section and
//!   is woken (an unpark before the park makes the park return at once).
//! - A2: registrations under a task's address belong to that task: the waker takes them
//!   all when the task ends, a timed-out thread takes its own, and a task freed before it
//!   ended (`Drop`, with `WAITING` set) takes what is left. So an address reused by a
//!   later task starts with no registration.
//!
//! # Ordering
//! The lists are behind mutexes; the flag's orderings are in `state.rs`. A woken thread
//! re-reads the state word (Acquire) before it reads the outcome.

use std::task::Waker;

use crate::sync::{thread, Mutex};
use crate::user;

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
    /// Through the door (U2 in `user.rs`): a waker's panic is contained, so the waiters
    /// after it are woken too.
    fn wake(self) {
        match self {
            Waiter::Thread(t) => t.unpark(),
            Waiter::Waker(w) => user::wake(w),
        }
    }

    /// Drops the registration; a waker's drop is user code (contained).
    fn forget(self) {
        match self {
            Waiter::Thread(t) => drop(t),
            Waiter::Waker(w) => user::drop_waker(w),
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

/// Registers this thread as a waiter of the task at `key` (A1); `None` if the task is
/// already terminal, else this thread's handle (for [`leave`]). `wait_on`: the task's
/// `Header::wait_on`, the edge that sets `WAITING` unless the task is terminal, taken
/// under the shard's lock.
pub(super) fn register_thread(key: usize, wait_on: impl Fn() -> bool) -> Option<thread::Thread> {
    let mut list = table().shard(key).lock();
    if !wait_on() {
        return None;
    }
    let me = thread::current();
    list.push((key, Waiter::Thread(me.clone())));
    Some(me)
}

/// Takes back this thread's registration after a timed-out wait (A2).
pub(super) fn leave(key: usize, me: &thread::Thread) {
    let mut list = table().shard(key).lock();
    if let Some(i) = list
        .iter()
        .position(|(k, w)| *k == key && matches!(w, Waiter::Thread(t) if t.id() == me.id()))
    {
        list.swap_remove(i);
    }
}

/// Registers `waker` for the task at `key`, replacing the one an earlier poll left (A1);
/// `false` if the task is already terminal. `wait_on` as for [`register_thread`].
///
/// U1: the waker's clone and the replaced waker's drop are user code, so neither runs
/// under the shard's lock: a first look keeps a registration that will wake the same
/// task; otherwise the clone is made unlocked and put in a second critical section
/// (which checks the state again, A1), and what it replaced is dropped after it.
pub(super) fn register_waker(key: usize, wait_on: impl Fn() -> bool, waker: &Waker) -> bool {
    {
        let list = table().shard(key).lock();
        if !wait_on() {
            return false;
        }
        if find_waker(&list, key).is_some_and(|old| old.will_wake(waker)) {
            return true;
        }
    }
    let fresh = user::call(|| waker.clone());
    let mut list = table().shard(key).lock();
    if !wait_on() {
        drop(list);
        user::drop_waker(fresh);
        return false;
    }
    let old = match list
        .iter_mut()
        .find(|(k, w)| *k == key && matches!(w, Waiter::Waker(_)))
    {
        Some((_, Waiter::Waker(old))) => Some(std::mem::replace(old, fresh)),
        _ => {
            list.push((key, Waiter::Waker(fresh)));
            None
        }
    };
    drop(list);
    if let Some(old) = old {
        user::drop_waker(old);
    }
    true
}

/// The waker registered for `key`, if any.
fn find_waker(list: &[(usize, Waiter)], key: usize) -> Option<&Waker> {
    list.iter().find_map(|(k, w)| match w {
        Waiter::Waker(w) if *k == key => Some(w),
        _ => None,
    })
}

/// Wakes every waiter of the task at `key`: called by the author of its terminal
/// transition when `Header::is_waited` says someone registered (A1).
pub(super) fn wake_all(key: usize) {
    let mut woken = Vec::new();
    {
        let mut list = table().shard(key).lock();
        let mut i = 0;
        while i < list.len() {
            if list[i].0 == key {
                woken.push(list.swap_remove(i));
            } else {
                i += 1;
            }
        }
    }
    // A1: after unlocking (a waker may run arbitrary code); U2: every one, whatever the
    // others do. Threads first: a waker that blocks holds up no blocked `wait`.
    woken.sort_by_key(|(_, w)| matches!(w, Waiter::Waker(_)));
    for (_, w) in woken {
        w.wake();
    }
}

/// Drops what is left under `key` without waking it: a task freed before it ended (A2).
pub(super) fn forget(key: usize) {
    let left: Vec<(usize, Waiter)> = {
        let mut list = table().shard(key).lock();
        let (mine, others) = std::mem::take(&mut *list)
            .into_iter()
            .partition(|(k, _)| *k == key);
        *list = others;
        mine
    };
    // Outside the lock (a waker's drop may run arbitrary code), each contained.
    left.into_iter().for_each(|(_, w)| w.forget());
}

/// How many registrations the task at `key` has (tests and models).
#[cfg(test)]
pub(super) fn count(key: usize) -> usize {
    table()
        .shard(key)
        .lock()
        .iter()
        .filter(|(k, _)| *k == key)
        .count()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::task::state::TaskState;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    /// Counts its wakes.
    struct Counter(AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counter() -> (Arc<Counter>, Waker) {
        let c = Arc::new(Counter(AtomicUsize::new(0)));
        (c.clone(), Waker::from(c))
    }

    /// Two keys in one shard. Odd, so no task (8-byte aligned) has either; each test
    /// takes its own `base`, since the table is shared by the tests that run at once.
    fn same_shard(base: usize) -> (usize, usize) {
        let (a, b) = (base, base + (SHARDS << 5));
        assert!(a % 2 == 1 && std::ptr::eq(table().shard(a), table().shard(b)));
        (a, b)
    }

    #[test]
    fn a_timed_out_thread_takes_back_only_its_own_registration() {
        let (key, _) = same_shard(0x11);
        let state = TaskState::new();
        let (woken, waker) = counter();
        assert!(register_waker(key, || state.wait_on(), &waker));
        let me = register_thread(key, || state.wait_on()).expect("not terminal");
        assert_eq!(count(key), 2);
        leave(key, &me);
        assert_eq!(count(key), 1, "the waker stays");
        wake_all(key);
        assert_eq!(woken.0.load(Ordering::SeqCst), 1, "and is woken");
        assert_eq!(count(key), 0);
    }

    #[test]
    fn a_waker_replaces_only_its_own_tasks_waker() {
        let (a, b) = same_shard(0x13);
        let state = TaskState::new();
        let (woken_a, waker_a) = counter();
        let (woken_b, waker_b) = counter();
        assert!(register_waker(a, || state.wait_on(), &waker_a));
        assert!(register_waker(b, || state.wait_on(), &waker_b));
        assert_eq!((count(a), count(b)), (1, 1), "one waker each");
        wake_all(a);
        wake_all(b);
        assert_eq!(woken_a.0.load(Ordering::SeqCst), 1);
        assert_eq!(woken_b.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn waking_one_task_leaves_its_shard_neighbours_registered() {
        let (a, b) = same_shard(0x15);
        let state = TaskState::new();
        let (woken_a, waker_a) = counter();
        let (woken_b, waker_b) = counter();
        // `b` first: `wake_all(a)` steps over it.
        assert!(register_waker(b, || state.wait_on(), &waker_b));
        assert!(register_waker(a, || state.wait_on(), &waker_a));
        wake_all(a);
        assert_eq!(woken_a.0.load(Ordering::SeqCst), 1);
        assert_eq!(woken_b.0.load(Ordering::SeqCst), 0, "not b's end");
        assert_eq!((count(a), count(b)), (0, 1));
        forget(b);
        assert_eq!(count(b), 0, "A2: taken without a wake");
        assert_eq!(woken_b.0.load(Ordering::SeqCst), 0);
    }
}
