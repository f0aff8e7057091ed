//! The contract's fuzz case (ShedLock's `FuzzTester`): threads, each with a handle of
//! its own, race for two locks; each holder updates a counter of its lock in two steps
//! (read, pause, write) that only exclusion keeps whole.
//!
//! At the end each counter must equal its lock's acquisitions (an overlap loses an
//! update), no two holders of one lock may have been inside at once (a count of
//! holders), each holder's token must be larger than its lock's previous holder's (LK2,
//! checked inside the exclusion), every release of a held lease must answer `true`, and
//! no call may fail.

use std::time::Duration;

use super::check::{ensure, Checked, Ctx, Failure, Node};
use crate::sync::{AtomicU64, AtomicUsize, Mutex, Ordering};

/// What one lock's holders share. `SeqCst` on the atomics: a test oracle, where the
/// simplest order is the clearest; the store's own exclusion is what is under test.
struct Shared {
    /// Holders inside now: 0 or 1 if the store excludes.
    inside: AtomicUsize,
    /// The two-step counter: bumped by a read and a later write.
    counter: AtomicU64,
    /// Acquisitions granted.
    acquired: AtomicU64,
    /// The latest holder's token.
    last_token: AtomicU64,
}

impl Shared {
    fn new() -> Self {
        Shared {
            inside: AtomicUsize::new(0),
            counter: AtomicU64::new(0),
            acquired: AtomicU64::new(0),
            last_token: AtomicU64::new(0),
        }
    }
}

/// Threads race for two locks; see the module notes.
pub(super) fn contending_nodes_never_share_a_lock(cx: &Ctx) -> Checked {
    let (threads, rounds) = cx.fuzz;
    let names = [cx.name("a"), cx.name("b")];
    let shared = [Shared::new(), Shared::new()];
    let broken: Mutex<Vec<String>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for t in 0..threads {
            let node = cx.node();
            let (names, shared, broken) = (&names, &shared, &broken);
            s.spawn(move || {
                for r in 0..rounds {
                    let i = (t + r) % 2;
                    if let Err(e) = round(cx, &node, &names[i], &shared[i]) {
                        let msg = match e {
                            Failure::Broken(m) | Failure::Unsupported(m) => m,
                        };
                        broken.lock().push(format!("thread {t}, round {r}: {msg}"));
                        return;
                    }
                }
            });
        }
    });
    let broken = std::mem::take(&mut *broken.lock());
    ensure!(
        broken.is_empty(),
        "{} broken rounds; the first: {}",
        broken.len(),
        broken[0]
    );
    for (name, s) in names.iter().zip(&shared) {
        let (counter, acquired) = (
            s.counter.load(Ordering::SeqCst),
            s.acquired.load(Ordering::SeqCst),
        );
        ensure!(
            acquired > 0,
            "{name:?} was never acquired in {threads} x {rounds} tries"
        );
        ensure!(
            counter == acquired,
            "{name:?}: {acquired} acquisitions made {counter} updates"
        );
    }
    Ok(())
}

/// One try: acquire, and if granted, the two-step update inside, then release.
fn round(cx: &Ctx, node: &Node, name: &str, shared: &Shared) -> Checked {
    let Some(lease) = node.acquire(name, cx.units(50))? else {
        std::thread::yield_now();
        return Ok(());
    };
    let others = shared.inside.fetch_add(1, Ordering::SeqCst);
    ensure!(
        others == 0,
        "LK1: {others} other holders of {name:?} inside"
    );
    let last = shared.last_token.swap(lease.token(), Ordering::SeqCst);
    ensure!(
        lease.token() > last,
        "LK2: token {} after {last}",
        lease.token()
    );
    let seen = shared.counter.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_micros(200));
    shared.counter.store(seen + 1, Ordering::SeqCst);
    shared.acquired.fetch_add(1, Ordering::SeqCst);
    shared.inside.fetch_sub(1, Ordering::SeqCst);
    ensure!(
        node.release(lease, Duration::ZERO)?,
        "a held lease's release answered false"
    );
    Ok(())
}
