//! [`AsyncPermits`]: the pool's bound on the async runs in progress off their worker
//! (`Builder::max_async_runs`). A run of the `*_send` forms takes a permit before it
//! makes its future (`body/async_run.rs`) and gives it back when the future is dropped;
//! at the bound it waits for one without a worker, its waker queued here, and runs get
//! their permits in the order they asked: a permit given back goes straight to the first
//! waiting run (no run that asks later takes it first), which its waker then polls.
//!
//! # Invariants
//! - PM1: `in_use` never exceeds the bound; a permit given back while runs wait is handed
//!   to the first of them (`granted`), under the one lock that also queues them, so a
//!   waiting run is never passed over and never left waiting with a permit free. A run
//!   that stops while it waits takes its place out, or passes on the permit it was
//!   granted.
//!
//! # Ordering
//! Everything is under `state`'s mutex; the wakers are woken after it (U1: they are the
//! pool's own, but the rule is the same for all).

use std::collections::{HashSet, VecDeque};
use std::task::Waker;

use crate::sync::Mutex;

/// A run's place with the permits ([`AsyncPermits::acquire`]).
#[derive(Debug, Default)]
pub(crate) enum Permit {
    /// Not asked yet (or given back).
    #[default]
    None,
    /// Waiting, with this ticket.
    Waiting(u64),
    /// Held: give it back with [`AsyncPermits::release`].
    Held,
}

/// The bound and the runs waiting under it (module notes).
#[derive(Debug)]
pub(crate) struct AsyncPermits {
    /// `usize::MAX`: no bound (nothing is counted).
    limit: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    in_use: usize,
    next_ticket: u64,
    waiting: VecDeque<(u64, Waker)>,
    /// Tickets handed a permit, not yet seen by their run.
    granted: HashSet<u64>,
}

impl AsyncPermits {
    pub(crate) fn new(limit: usize) -> Self {
        AsyncPermits {
            limit,
            state: Mutex::new(State::default()),
        }
    }

    /// Takes a permit for a run (`permit`: its place), or queues the run's `waker` for
    /// one; `true` once the run holds it (PM1).
    pub(crate) fn acquire(&self, permit: &mut Permit, waker: &Waker) -> bool {
        if self.limit == usize::MAX {
            *permit = Permit::Held; // no bound: nothing to count
            return true;
        }
        let mut state = self.state.lock();
        match *permit {
            Permit::Held => return true,
            Permit::Waiting(ticket) => {
                if state.granted.remove(&ticket) {
                    *permit = Permit::Held;
                    return true;
                }
                // Still waiting: its latest waker (the pool's own: a clone counts a reference).
                if let Some(slot) = state.waiting.iter_mut().find(|(t, _)| *t == ticket) {
                    slot.1.clone_from(waker);
                }
                return false;
            }
            Permit::None => {}
        }
        if state.in_use < self.limit && state.waiting.is_empty() {
            state.in_use += 1;
            *permit = Permit::Held;
            return true;
        }
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.waiting.push_back((ticket, waker.clone()));
        *permit = Permit::Waiting(ticket);
        false
    }

    /// A run's permit or place goes back (its future dropped, or its run stopped while it
    /// waited): a held permit, or one granted to it unseen, passes to the first waiting
    /// run (PM1).
    pub(crate) fn release(&self, permit: &mut Permit) {
        if self.limit == usize::MAX {
            *permit = Permit::None;
            return;
        }
        let woken = {
            let mut state = self.state.lock();
            let holds = match std::mem::take(permit) {
                Permit::None => false,
                Permit::Held => true,
                Permit::Waiting(ticket) => {
                    state.waiting.retain(|(t, _)| *t != ticket);
                    state.granted.remove(&ticket)
                }
            };
            if !holds {
                return;
            }
            match state.waiting.pop_front() {
                Some((ticket, waker)) => {
                    state.granted.insert(ticket); // handed on: `in_use` unchanged
                    Some(waker)
                }
                None => {
                    state.in_use -= 1;
                    None
                }
            }
        };
        if let Some(w) = woken {
            w.wake();
        }
    }

    /// Permits held now (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn in_use(&self) -> usize {
        self.state.lock().in_use
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn waker() -> (Waker, Arc<Count>) {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        (Waker::from(c.clone()), c)
    }

    #[test]
    fn runs_past_the_bound_wait_in_order_and_are_handed_the_permits() {
        let p = AsyncPermits::new(2);
        let (w, _) = waker();
        let (mut a, mut b) = (Permit::None, Permit::None);
        assert!(p.acquire(&mut a, &w) && p.acquire(&mut b, &w));
        let (wc, c_woken) = waker();
        let (wd, d_woken) = waker();
        let (mut c, mut d) = (Permit::None, Permit::None);
        assert!(!p.acquire(&mut c, &wc) && !p.acquire(&mut d, &wd));
        assert_eq!(p.in_use(), 2);
        p.release(&mut a);
        assert_eq!(c_woken.0.load(Ordering::SeqCst), 1, "the first waiting run");
        assert_eq!(d_woken.0.load(Ordering::SeqCst), 0);
        let mut e = Permit::None;
        assert!(
            !p.acquire(&mut e, &w),
            "a later run does not take the handed permit"
        );
        assert!(p.acquire(&mut c, &wc), "handed to the first");
        assert_eq!(p.in_use(), 2, "PM1");
        p.release(&mut b);
        p.release(&mut c);
        assert!(p.acquire(&mut d, &wd) && p.acquire(&mut e, &w));
        p.release(&mut d);
        p.release(&mut e);
        assert_eq!(p.in_use(), 0);
    }

    #[test]
    fn a_run_stopped_while_it_waits_passes_on_a_granted_permit() {
        let p = AsyncPermits::new(1);
        let (w, _) = waker();
        let (mut a, mut b, mut c) = (Permit::None, Permit::None, Permit::None);
        assert!(p.acquire(&mut a, &w));
        assert!(!p.acquire(&mut b, &w) && !p.acquire(&mut c, &w));
        p.release(&mut a); // granted to b, unseen
        p.release(&mut b); // b stops: its permit goes to c
        assert!(p.acquire(&mut c, &w));
        p.release(&mut c);
        assert_eq!(p.in_use(), 0);
        let mut d = Permit::None;
        assert!(p.acquire(&mut d, &w), "nobody waits: free");
        let mut e = Permit::None;
        assert!(!p.acquire(&mut e, &w));
        p.release(&mut e); // stops while waiting, never granted
        p.release(&mut d);
        assert_eq!(p.in_use(), 0, "nothing leaked");
    }

    #[test]
    fn no_bound_counts_nothing() {
        let p = AsyncPermits::new(usize::MAX);
        let (w, _) = waker();
        let mut a = Permit::None;
        for _ in 0..3 {
            assert!(p.acquire(&mut a, &w));
        }
        p.release(&mut a);
        assert_eq!(p.in_use(), 0);
    }
}
