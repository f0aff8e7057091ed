//! Unit tests of the contract kit: a store with one planted bug at a time, each caught by
//! the case that should catch it (and a store without optional methods, reported as
//! unsupported, not failed). The crate's own stores pass the whole kit in
//! `tests/contract.rs`.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

use super::*;
use crate::cluster::{Lease, LockError, Pause};
use crate::sync::Mutex;

/// The bug a [`Planted`] store carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bug {
    None,
    /// Grants a held lock.
    NoExclusion,
    /// Reads, then writes in another critical section.
    NonAtomicAcquire,
    /// Every token is 1.
    TokenStays,
    /// A release frees the lock whatever its token.
    ReleaseIgnoresToken,
    /// A release frees the lock at once.
    NoAtLeastFor,
    /// An extension whatever the token.
    ExtendIgnoresHolder,
    /// An extension of a lease that ran out revives it.
    ExtendRevives,
    /// Names are compared without case.
    NamesFolded,
    /// A pause never ends by itself.
    PauseForgetsUntil,
    /// A release counts as the last acquisition.
    ReleaseMovesLastAcquired,
    /// A lease lasts half its `at_most_for`.
    EarlyExpiry,
    /// Every call panics.
    Panics,
}

#[derive(Clone, Copy)]
struct Row {
    until: Instant,
    at: Instant,
    token: u64,
}

/// A store in memory on the real clock, with one planted bug.
struct Planted {
    bug: Bug,
    rows: Mutex<HashMap<String, Row>>,
    pauses: Mutex<HashMap<String, Pause>>,
}

impl Planted {
    fn new(bug: Bug) -> Arc<Self> {
        Arc::new(Planted {
            bug,
            rows: Mutex::new(HashMap::new()),
            pauses: Mutex::new(HashMap::new()),
        })
    }

    fn key(&self, name: &str) -> String {
        if self.bug == Bug::NamesFolded {
            name.to_lowercase()
        } else {
            name.to_owned()
        }
    }

    fn valid(&self, lease: &Lease, row: Option<&Row>, now: Instant) -> bool {
        row.is_some_and(|r| r.token == lease.token() && r.until > now)
    }
}

impl ClusterLock for Planted {
    fn try_acquire(&self, name: &str, at_most_for: Duration) -> Result<Option<Lease>, LockError> {
        assert!(self.bug != Bug::Panics, "a store that panics");
        let key = self.key(name);
        let now = Instant::now();
        let last = self.rows.lock().get(&key).copied();
        if last.is_some_and(|r| r.until > now) && self.bug != Bug::NoExclusion {
            return Ok(None);
        }
        if self.bug == Bug::NonAtomicAcquire {
            std::thread::sleep(Duration::from_millis(1));
        }
        let token = match self.bug {
            Bug::TokenStays => 1,
            _ => last.map_or(1, |r| r.token + 1),
        };
        let lasts = if self.bug == Bug::EarlyExpiry {
            at_most_for / 2
        } else {
            at_most_for
        };
        let mut rows = self.rows.lock();
        let current = rows.get(&key).map_or(0, |r| r.token);
        let token = if self.bug == Bug::NonAtomicAcquire {
            token.max(current + 1)
        } else {
            token
        };
        rows.insert(
            key,
            Row {
                until: now + lasts,
                at: now,
                token,
            },
        );
        Ok(Some(Lease::new(name, token, at_most_for)))
    }

    fn release(&self, lease: Lease, at_least_for: Duration) -> Result<bool, LockError> {
        let now = Instant::now();
        let mut rows = self.rows.lock();
        let key = self.key(lease.name());
        let valid = self.valid(&lease, rows.get(&key), now);
        let Some(row) = rows.get_mut(&key) else {
            return Ok(false);
        };
        if valid || self.bug == Bug::ReleaseIgnoresToken {
            let keep = if self.bug == Bug::NoAtLeastFor {
                Duration::ZERO
            } else {
                at_least_for
            };
            row.until = (row.at + keep.min(lease.at_most_for())).max(now);
            if self.bug == Bug::ReleaseMovesLastAcquired {
                row.at = now;
            }
        }
        Ok(valid)
    }

    fn extend(&self, lease: &Lease, at_most_for: Duration) -> Result<bool, LockError> {
        let now = Instant::now();
        let mut rows = self.rows.lock();
        let key = self.key(lease.name());
        let valid = self.valid(lease, rows.get(&key), now);
        let extends = valid
            || self.bug == Bug::ExtendIgnoresHolder
            || (self.bug == Bug::ExtendRevives
                && rows.get(&key).is_some_and(|r| r.token == lease.token()));
        if let (true, Some(row)) = (extends, rows.get_mut(&key)) {
            row.until = now + at_most_for;
            return Ok(true);
        }
        Ok(false)
    }

    fn last_acquired(&self, name: &str) -> Result<Option<Duration>, LockError> {
        let rows = self.rows.lock();
        Ok(rows.get(&self.key(name)).map(|r| r.at.elapsed()))
    }

    fn pause(&self, name: &str, by: &str, until: Option<SystemTime>) -> Result<(), LockError> {
        let pause = Pause::new(by, SystemTime::now(), until);
        self.pauses.lock().insert(self.key(name), pause);
        Ok(())
    }

    fn resume(&self, name: &str) -> Result<bool, LockError> {
        let old = self.pauses.lock().remove(&self.key(name));
        Ok(old.is_some_and(|p| self.in_force(&p)))
    }

    fn paused(&self, name: &str) -> Result<Option<Pause>, LockError> {
        let pauses = self.pauses.lock();
        Ok(pauses
            .get(&self.key(name))
            .filter(|p| self.in_force(p))
            .cloned())
    }
}

impl Planted {
    fn in_force(&self, p: &Pause) -> bool {
        self.bug == Bug::PauseForgetsUntil || p.until.is_none_or(|u| u > SystemTime::now())
    }
}

/// Runs `cases` against a store with `bug`, on a short unit.
fn run(bug: Bug, cases: &[&str]) -> Report {
    let store = Planted::new(bug);
    Contract::new(move || Arc::clone(&store))
        .unit(Duration::from_millis(30))
        .fuzz(4, 30)
        .only(cases)
        .run()
}

/// The outcome of `case` in `report`.
fn outcome<'a>(report: &'a Report, case: &str) -> &'a Outcome {
    report
        .results()
        .iter()
        .find(|r| r.name() == case)
        .map(CaseResult::outcome)
        .unwrap_or_else(|| panic!("{case} did not run:\n{report}"))
}

#[test]
fn a_store_without_the_bug_passes_the_cases_that_catch_them() {
    let report = run(
        Bug::None,
        &[
            "shared",
            "fencing",
            "extensible",
            "edges",
            "pause",
            "catch-up",
            "clock",
            "fuzz",
        ],
    );
    println!("{report}");
    assert!(report.passed(), "{report}");
    assert_eq!(report.unsupported().count(), 0, "{report}");
}

#[test]
fn each_planted_bug_fails_the_case_that_looks_for_it() {
    for (bug, case) in [
        (Bug::NoExclusion, "one_holder_until_released"),
        (Bug::NonAtomicAcquire, "contending_nodes_never_share_a_lock"),
        (Bug::TokenStays, "tokens_grow_with_every_acquisition"),
        (
            Bug::ReleaseIgnoresToken,
            "a_late_release_leaves_the_new_holder_alone",
        ),
        (
            Bug::NoAtLeastFor,
            "at_least_for_keeps_the_lock_after_a_release",
        ),
        (
            Bug::ExtendIgnoresHolder,
            "a_stale_lease_does_not_extend_the_new_one",
        ),
        (Bug::ExtendRevives, "an_expired_lease_is_not_extended"),
        (Bug::NamesFolded, "odd_names_are_names_like_any_other"),
        (Bug::PauseForgetsUntil, "a_pause_ends_at_its_until"),
        (
            Bug::ReleaseMovesLastAcquired,
            "last_acquired_is_the_age_of_the_last_acquisition",
        ),
        (Bug::EarlyExpiry, "a_lease_lasts_its_at_most_for"),
    ] {
        let report = run(bug, &[case]);
        assert!(
            matches!(outcome(&report, case), Outcome::Failed(_)),
            "{bug:?} was not caught by {case}:\n{report}"
        );
        assert!(!report.passed());
    }
}

#[test]
fn a_store_that_panics_fails_its_cases_and_the_run_goes_on() {
    let report = run(
        Bug::Panics,
        &["one_holder_until_released", "names_are_independent"],
    );
    assert_eq!(report.failures().count(), 2, "{report}");
    let Outcome::Failed(why) = outcome(&report, "names_are_independent") else {
        unreachable!()
    };
    assert!(why.contains("a store that panics"), "{why}");
    let shown = report.to_string();
    assert!(
        shown.starts_with("store contract: 0 passed, 2 failed"),
        "{shown}"
    );
}

/// A store with the required methods only.
struct Bare(Arc<Planted>);

impl ClusterLock for Bare {
    fn try_acquire(&self, name: &str, at_most_for: Duration) -> Result<Option<Lease>, LockError> {
        self.0.try_acquire(name, at_most_for)
    }

    fn release(&self, lease: Lease, at_least_for: Duration) -> Result<bool, LockError> {
        self.0.release(lease, at_least_for)
    }
}

#[test]
fn a_store_without_the_optional_methods_is_unsupported_there_not_failed() {
    let store = Planted::new(Bug::None);
    let report = Contract::new(move || Bare(Arc::clone(&store)))
        .unit(Duration::from_millis(30))
        .only(&["shared", "extensible", "catch-up", "pause"])
        .run();
    assert!(report.passed(), "{report}");
    let unsupported: Vec<_> = report.unsupported().map(|r| r.suite()).collect();
    assert!(unsupported.contains(&Suite::Extensible), "{report}");
    assert!(unsupported.contains(&Suite::CatchUp), "{report}");
    assert!(unsupported.contains(&Suite::Pause), "{report}");
    assert!(!unsupported.contains(&Suite::Shared), "{report}");
}

#[test]
fn the_cases_have_unique_names_and_a_filter_selects_by_case_or_suite() {
    let mut names: Vec<_> = Contract::cases().map(|(_, n)| n).collect();
    let all = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all);
    let store = Planted::new(Bug::None);
    let contract = Contract::new(move || Arc::clone(&store)).unit(Duration::from_millis(30));
    let report = contract.clone().only(&["storage"]).run();
    assert_eq!(report.results().len(), 2, "{report}");
    assert!(report.results().iter().all(|r| r.suite() == Suite::Storage));
}
