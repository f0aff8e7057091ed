//! loom models of the in-process lease store (`cluster/local.rs`): LK1 (one valid lease per
//! name), LK2 (a late release leaves the next holder alone), LK5 (a late extension revives
//! nothing), two nodes catching up after downtime (the job runs once), and a catch-up run's
//! release beside the next tick's acquisition (`body/exclusive.rs`: the catch-up's lease
//! leaves the tick its lock), under every interleaving of two threads. The deliberate
//! breaks that make them fail are listed in `docs/RELIABILITY.md`.

use std::time::Duration;

use crate::cluster::{ClusterLock, LocalLock};
use crate::sync::{thread, Arc, AtomicUsize, Ordering};
use crate::ManualClock;

const LEASE: Duration = Duration::from_secs(10);

/// LK1: two nodes try the same lock at once, and each gives back what it got: at no
/// point do both hold it.
#[test]
fn loom_cluster_one_holder() {
    loom::model(|| {
        let lock = Arc::new(LocalLock::with_clock(ManualClock::new()));
        let holding = Arc::new(AtomicUsize::new(0));
        let node = |lock: Arc<LocalLock>, holding: Arc<AtomicUsize>| {
            move || {
                let Some(lease) = lock.try_acquire("job", LEASE).unwrap() else {
                    return false;
                };
                assert_eq!(
                    holding.fetch_add(1, Ordering::SeqCst),
                    0,
                    "LK1: two holders"
                );
                holding.fetch_sub(1, Ordering::SeqCst);
                assert!(lock.release(lease, Duration::ZERO).unwrap());
                true
            }
        };
        let other = thread::spawn(node(lock.clone(), holding.clone()));
        let here = node(lock.clone(), holding)();
        let there = other.join().unwrap();
        assert!(here || there, "someone got the lock");
        assert!(!lock.is_held("job"), "both gave it back");
    });
}

/// LK2: a holder whose lease ran out releases it while another node takes the lock over:
/// whatever the order, the new holder's lease is left valid.
#[test]
fn loom_cluster_late_release_keeps_the_new_holder() {
    loom::model(|| {
        let clock = ManualClock::new();
        let lock = Arc::new(LocalLock::with_clock(clock.clone()));
        let old = lock.try_acquire("job", LEASE).unwrap().unwrap();
        clock.advance(LEASE); // the old lease has run out
        let late = {
            let lock = lock.clone();
            thread::spawn(move || lock.release(old, Duration::ZERO).unwrap())
        };
        let new = lock.try_acquire("job", LEASE).unwrap();
        let released = late.join().unwrap();
        assert!(!released, "an expired lease cannot be released");
        assert!(new.is_some(), "the expired lock was free");
        assert!(lock.is_held("job"), "LK2: the new holder's lease is intact");
    });
}

/// LK5: a holder's keep-alive comes after its lease ran out, while another node takes
/// the lock over: whatever the order, the old lease is not revived (the new node gets
/// the lock) and the new holder's lease is left as it is.
#[test]
fn loom_cluster_a_late_extension_revives_nothing() {
    loom::model(|| {
        let clock = ManualClock::new();
        let lock = Arc::new(LocalLock::with_clock(clock.clone()));
        let old = lock.try_acquire("job", LEASE).unwrap().unwrap();
        clock.advance(LEASE); // the old lease has run out
        let late = {
            let lock = lock.clone();
            thread::spawn(move || lock.extend(&old, LEASE * 5).unwrap())
        };
        let new = lock.try_acquire("job", LEASE).unwrap();
        let extended = late.join().unwrap();
        assert!(!extended, "LK5: an expired lease is not extended");
        let new = new.expect("the expired lock was free");
        clock.advance(LEASE);
        assert!(
            !lock.is_held("job"),
            "the new lease was not extended by the old holder"
        );
        assert!(
            !lock.release(new, Duration::ZERO).unwrap(),
            "it ran out as given"
        );
    });
}

/// Catch-up (`Exclusive::catch_up`): two nodes start together after downtime; each finds
/// the job's last run more than a period old and runs it at once if it gets the lock.
/// Whatever the interleaving, the job runs once: a node that asks after the other's run
/// finds the lock still taken (LK3: `at_least_for`) or the run recent.
#[test]
fn loom_cluster_two_nodes_catching_up_run_the_job_once() {
    loom::model(|| {
        let clock = ManualClock::new();
        let lock = Arc::new(LocalLock::with_clock(clock.clone()));
        let first = lock.try_acquire("job", LEASE).unwrap().unwrap();
        assert!(lock.release(first, Duration::ZERO).unwrap());
        clock.advance(LEASE * 3); // downtime: the last run is three periods old
        let runs = Arc::new(AtomicUsize::new(0));
        let node = |lock: Arc<LocalLock>, runs: Arc<AtomicUsize>| {
            move || {
                let age = lock.last_acquired("job").unwrap().expect("ran before");
                if age <= LEASE {
                    return; // recent: no catch-up
                }
                if let Some(lease) = lock.try_acquire("job", LEASE).unwrap() {
                    runs.fetch_add(1, Ordering::SeqCst);
                    assert!(lock.release(lease, LEASE / 2).unwrap());
                }
            }
        };
        let other = thread::spawn(node(lock.clone(), runs.clone()));
        node(lock.clone(), runs.clone())();
        other.join().unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1, "one catch-up run");
    });
}

/// A catch-up run's release beside the next tick's acquisition: the catch-up runs through
/// `run_locked` with its successor's deadline (3 s on, within `at_least_for`) while the
/// clock reaches that deadline and the tick tries the lock. Whenever the tick comes after
/// the release, it gets the lock. Break: the release keeps the full `at_least_for` (as
/// before the cap), and the tick finds the lock held by the catch-up's own lease.
#[test]
fn loom_cluster_a_catch_up_release_leaves_the_next_tick_its_lock() {
    use crate::body::{run_locked, Ledger};
    use crate::clock::Clock;
    use crate::cluster::Exclusive;
    use crate::sync::AtomicBool;
    const TO_TICK: Duration = Duration::from_secs(3);
    loom::model(|| {
        let manual = ManualClock::new();
        let clock = Clock::Manual(manual.clone());
        let lock = Arc::new(LocalLock::with_clock(manual.clone()));
        let spec = Exclusive::new(lock.clone(), "job", LEASE).at_least_for(LEASE / 2);
        let next_tick = crate::clock::add(clock.now(), TO_TICK);
        let released = Arc::new(AtomicBool::new(false));
        let catch_up = {
            let (clock, released) = (clock.clone(), released.clone());
            thread::spawn(move || {
                let ledger = Ledger {
                    pool: "",
                    id: None,
                    task: None,
                    counters: None,
                    clock: &clock,
                };
                // `None` when the tick took the lock first (its release then frees it).
                if run_locked(&spec, &ledger, Some(next_tick), |_| ())
                    .unwrap()
                    .ran()
                    .is_some()
                {
                    released.store(true, Ordering::SeqCst);
                }
            })
        };
        manual.advance(TO_TICK); // the tick's deadline
        let after_release = released.load(Ordering::SeqCst);
        let tick = lock.try_acquire("job", LEASE).unwrap();
        if after_release {
            assert!(
                tick.is_some(),
                "the catch-up's lease left the tick its lock"
            );
        }
        if let Some(lease) = tick {
            lock.release(lease, Duration::ZERO).unwrap();
        }
        catch_up.join().unwrap();
    });
}
