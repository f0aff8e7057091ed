//! The store contract, as a kit that proves any [`ClusterLock`]: this crate's stores and
//! one of your own (etcd, DynamoDB, a table of your database), against the real store
//! (cargo feature `contract`, no dependencies).
//!
//! [`Contract::new`] takes a factory of handles on the store (each call a new handle, as
//! another node would make it; clones of one `Arc` where a handle keeps no state) and
//! [`run`](Contract::run) runs every case against it, in its own lock names, and
//! reports each: passed, failed with what was seen, or unsupported (an optional method,
//! [`extend`](ClusterLock::extend), [`last_acquired`](ClusterLock::last_acquired) or
//! the pauses, answered [`LockError::Unsupported`](super::LockError::Unsupported)).
//!
//! ```no_run
//! use schedpool::cluster::contract::Contract;
//! use schedpool::cluster::LocalLock;
//! use std::sync::Arc;
//!
//! let store = Arc::new(LocalLock::new()); // your store: a handle per call of the factory
//! let report = Contract::new(move || Arc::clone(&store)).run();
//! println!("{report}");
//! report.assert_passed();
//! ```
//!
//! # The cases
//! ShedLock's provider suites, and this crate's own protocol (LK1–LK5, `cluster/mod.rs`):
//! - [`Suite::Shared`] (ShedLock's `AbstractLockProviderIntegrationTest`): one holder
//!   until released, a lock granted again after each release, names independent, a
//!   late enough release frees at once.
//! - [`Suite::Storage`] (`AbstractStorageBasedLockProviderIntegrationTest`): the lease is
//!   in the store (a new handle sees it), an expired record is taken over.
//! - [`Suite::Extensible`] (`AbstractExtensibleLockProviderIntegrationTest`): an
//!   extension outlasts the first `at_most_for`; an expired, stale or released lease is
//!   not extended (LK5).
//! - [`Suite::KeepAlive`]: a lease extended every half of its `at_most_for` is kept,
//!   and ends `at_most_for` after the last extension, not before.
//! - [`Suite::Fencing`]: tokens grow with every acquisition; a late release answers
//!   `false` and leaves the new holder alone (LK2).
//! - [`Suite::Clock`]: `at_most_for` and `at_least_for` last as long as the time that
//!   passes (LK1, LK3, LK4), measured only with this process's monotonic clock around
//!   the calls, so a store on its own clock passes whatever the nodes' wall clocks say.
//!   (A store that reads a node's wall clock passes here too while the clocks agree:
//!   the crate's own stores are run with nodes whose clocks are set apart in their
//!   node-process tests.)
//! - [`Suite::Edges`]: the trait's edge inputs (a zero `at_most_for`, `at_least_for`
//!   capped), odd names (spaces, control characters, two Unicode normal forms, case,
//!   SQL and glob characters, a long one, the empty one), each its own lock.
//! - [`Suite::CatchUp`]: `last_acquired` is the age of the last acquisition on the
//!   store's clock, which `Exclusive::catch_up` reads.
//! - [`Suite::Pause`]: a pause through one node is seen by every node until resumed or
//!   its end by the store's clock; a second pause replaces the first.
//! - [`Suite::Fuzz`] (ShedLock's `FuzzTester`): threads with handles of their own race
//!   for two locks, and each holder's two-step update of a counter survives only if
//!   the store excludes; no call fails.
//!
//! Times are counted in a unit (200 ms unless [`unit`](Contract::unit) says): leases
//! last a few units, and a store may answer a unit late. A whole run takes about 45
//! units and the fuzz: some 10 s at the default, against a server on the same machine;
//! raise the unit for a store far away or whose clock counts in coarse steps.

use std::fmt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::ClusterLock;
use crate::sync::Arc;

mod check;
mod extend;
mod fuzz;
mod lease;
mod state;

use check::{Checked, Ctx, Factory, Failure};

/// The default time unit ([`Contract::unit`]).
const DEFAULT_UNIT: Duration = Duration::from_millis(200);

/// The suites of the contract (module docs, "The cases").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Suite {
    /// ShedLock's shared provider suite.
    Shared,
    /// ShedLock's storage-based provider suite.
    Storage,
    /// ShedLock's extensible provider suite (LK5).
    Extensible,
    /// A holder that keeps its lease alive.
    KeepAlive,
    /// Fencing tokens (LK2).
    Fencing,
    /// The lease's times, by the store's clock (LK1, LK3, LK4).
    Clock,
    /// The trait's edge inputs and odd names.
    Edges,
    /// The last acquisition (catch-up).
    CatchUp,
    /// Pauses on every node.
    Pause,
    /// Contending threads (ShedLock's fuzz tester).
    Fuzz,
}

impl Suite {
    /// The suite's name: `shared`, `storage`, `extensible`, `keep-alive`, `fencing`,
    /// `clock`, `edges`, `catch-up`, `pause`, `fuzz`.
    pub fn as_str(self) -> &'static str {
        match self {
            Suite::Shared => "shared",
            Suite::Storage => "storage",
            Suite::Extensible => "extensible",
            Suite::KeepAlive => "keep-alive",
            Suite::Fencing => "fencing",
            Suite::Clock => "clock",
            Suite::Edges => "edges",
            Suite::CatchUp => "catch-up",
            Suite::Pause => "pause",
            Suite::Fuzz => "fuzz",
        }
    }
}

/// One case: its suite, its name and its check.
struct Case {
    suite: Suite,
    name: &'static str,
    check: fn(&Ctx) -> Checked,
}

/// Every case, in the order a run takes them.
const CASES: &[Case] = &[
    case(
        Suite::Shared,
        "one_holder_until_released",
        lease::one_holder_until_released,
    ),
    case(
        Suite::Shared,
        "granted_again_after_each_release",
        lease::granted_again_after_each_release,
    ),
    case(
        Suite::Shared,
        "names_are_independent",
        lease::names_are_independent,
    ),
    case(
        Suite::Shared,
        "a_late_enough_release_frees_at_once",
        lease::a_late_enough_release_frees_at_once,
    ),
    case(
        Suite::Storage,
        "a_new_handle_sees_the_lease",
        lease::a_new_handle_sees_the_lease,
    ),
    case(
        Suite::Storage,
        "an_expired_record_is_taken_over",
        lease::an_expired_record_is_taken_over,
    ),
    case(
        Suite::Extensible,
        "an_extension_outlasts_the_first_at_most_for",
        extend::an_extension_outlasts_the_first_at_most_for,
    ),
    case(
        Suite::Extensible,
        "an_expired_lease_is_not_extended",
        extend::an_expired_lease_is_not_extended,
    ),
    case(
        Suite::Extensible,
        "a_stale_lease_does_not_extend_the_new_one",
        extend::a_stale_lease_does_not_extend_the_new_one,
    ),
    case(
        Suite::Extensible,
        "a_released_lease_is_not_extended",
        extend::a_released_lease_is_not_extended,
    ),
    case(
        Suite::KeepAlive,
        "a_kept_alive_lease_ends_after_its_last_extension",
        extend::a_kept_alive_lease_ends_after_its_last_extension,
    ),
    case(
        Suite::Fencing,
        "tokens_grow_with_every_acquisition",
        lease::tokens_grow_with_every_acquisition,
    ),
    case(
        Suite::Fencing,
        "a_late_release_leaves_the_new_holder_alone",
        lease::a_late_release_leaves_the_new_holder_alone,
    ),
    case(
        Suite::Fencing,
        "a_release_after_at_most_for_is_an_overrun",
        lease::a_release_after_at_most_for_is_an_overrun,
    ),
    case(
        Suite::Clock,
        "a_lease_lasts_its_at_most_for",
        lease::a_lease_lasts_its_at_most_for,
    ),
    case(
        Suite::Clock,
        "at_least_for_keeps_the_lock_after_a_release",
        lease::at_least_for_keeps_the_lock_after_a_release,
    ),
    case(
        Suite::Edges,
        "a_zero_at_most_for_keeps_nobody_out",
        lease::a_zero_at_most_for_keeps_nobody_out,
    ),
    case(
        Suite::Edges,
        "at_least_for_is_capped_at_at_most_for",
        lease::at_least_for_is_capped_at_at_most_for,
    ),
    case(
        Suite::Edges,
        "odd_names_are_names_like_any_other",
        lease::odd_names_are_names_like_any_other,
    ),
    case(
        Suite::Edges,
        "the_empty_name_is_a_name",
        lease::the_empty_name_is_a_name,
    ),
    case(
        Suite::CatchUp,
        "last_acquired_is_the_age_of_the_last_acquisition",
        state::last_acquired_is_the_age_of_the_last_acquisition,
    ),
    case(
        Suite::Pause,
        "a_pause_is_seen_by_every_node_until_resumed",
        state::a_pause_is_seen_by_every_node_until_resumed,
    ),
    case(
        Suite::Pause,
        "a_second_pause_replaces_the_first",
        state::a_second_pause_replaces_the_first,
    ),
    case(
        Suite::Pause,
        "a_pause_ends_at_its_until",
        state::a_pause_ends_at_its_until,
    ),
    case(
        Suite::Fuzz,
        "contending_nodes_never_share_a_lock",
        fuzz::contending_nodes_never_share_a_lock,
    ),
];

const fn case(suite: Suite, name: &'static str, check: fn(&Ctx) -> Checked) -> Case {
    Case { suite, name, check }
}

/// The contract kit's run against one store (module docs).
#[derive(Clone)]
pub struct Contract {
    factory: Factory,
    unit: Duration,
    fuzz: (usize, usize),
    only: Option<Vec<String>>,
}

impl Contract {
    /// A run against the store whose handles `factory` makes: each call a new handle on
    /// the same store, as another node would make it.
    pub fn new<L, F>(factory: F) -> Self
    where
        L: ClusterLock,
        F: Fn() -> L + Send + Sync + 'static,
    {
        Contract {
            factory: Arc::new(move || Arc::new(factory()) as Arc<dyn ClusterLock>),
            unit: DEFAULT_UNIT,
            fuzz: (4, 100),
            only: None,
        }
    }

    /// The time unit (default 200 ms; at least 10 ms): leases in the cases last a few
    /// units, and a store may answer a unit late.
    #[must_use]
    pub fn unit(mut self, unit: Duration) -> Self {
        self.unit = unit.max(Duration::from_millis(10));
        self
    }

    /// The fuzz case's threads and each thread's tries (default 4 and 100).
    #[must_use]
    pub fn fuzz(mut self, threads: usize, tries: usize) -> Self {
        self.fuzz = (threads.max(2), tries.max(1));
        self
    }

    /// Runs only the cases named here (a case's name, or a suite's,
    /// [`Suite::as_str`]); every case by default.
    #[must_use]
    pub fn only<S: AsRef<str>>(mut self, cases: &[S]) -> Self {
        self.only = Some(cases.iter().map(|c| c.as_ref().to_owned()).collect());
        self
    }

    /// Every case's suite and name, in the order a run takes them.
    pub fn cases() -> impl Iterator<Item = (Suite, &'static str)> {
        CASES.iter().map(|c| (c.suite, c.name))
    }

    /// Runs the cases, one after the other, each in lock names of its own (under
    /// `contract:{run}:{case}/`, the empty name aside): a report of every case.
    pub fn run(&self) -> Report {
        let space = run_space();
        let results = CASES
            .iter()
            .filter(|c| self.selects(c))
            .map(|c| self.run_case(c, &space))
            .collect();
        Report { results }
    }

    fn selects(&self, case: &Case) -> bool {
        self.only.as_ref().is_none_or(|only| {
            only.iter()
                .any(|o| o == case.name || o == case.suite.as_str())
        })
    }

    fn run_case(&self, case: &Case, space: &str) -> CaseResult {
        let cx = Ctx::new(
            Arc::clone(&self.factory),
            self.unit,
            format!("{space}:{}/", case.name),
            self.fuzz,
        );
        let t0 = Instant::now();
        // U2: the user's store (or the factory) may panic; the run goes on to the next
        // case, and this one reports it.
        let outcome = match crate::user::contain(|| (case.check)(&cx)) {
            Ok(Ok(())) => Outcome::Passed,
            Ok(Err(Failure::Broken(msg))) => Outcome::Failed(msg),
            Ok(Err(Failure::Unsupported(msg))) => Outcome::Unsupported(msg),
            Err(panic) => {
                let msg = crate::error::panic_message(&*panic).unwrap_or("<non-string payload>");
                let msg = format!("panicked: {msg}");
                crate::user::forget_payload(panic);
                Outcome::Failed(msg)
            }
        };
        CaseResult {
            suite: case.suite,
            name: case.name,
            outcome,
            took: t0.elapsed(),
        }
    }
}

impl fmt::Debug for Contract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Contract")
            .field("unit", &self.unit)
            .field("fuzz", &self.fuzz)
            .field("only", &self.only)
            .finish_non_exhaustive()
    }
}

/// A run's lock names: `contract:{pid}.{n}.{µs since the epoch}`, apart from any other
/// run's, this process's or another's, now or later.
fn run_space() -> String {
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    // Relaxed: a number, publishing nothing.
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    format!("contract:{}.{n}.{micros}", std::process::id())
}

/// What a case found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The store kept the contract.
    Passed,
    /// The store broke it: what was seen.
    Failed(String),
    /// The store does not offer an optional method the case needs (`LockError::Unsupported`).
    Unsupported(String),
}

/// One case's result.
#[derive(Clone, Debug)]
pub struct CaseResult {
    suite: Suite,
    name: &'static str,
    outcome: Outcome,
    took: Duration,
}

impl CaseResult {
    /// The case's suite.
    pub fn suite(&self) -> Suite {
        self.suite
    }

    /// The case's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// What it found.
    pub fn outcome(&self) -> &Outcome {
        &self.outcome
    }

    /// How long it took.
    pub fn took(&self) -> Duration {
        self.took
    }
}

/// A run's results, case by case; its `Display` is a table of them.
#[derive(Clone, Debug)]
pub struct Report {
    results: Vec<CaseResult>,
}

impl Report {
    /// Every case's result, in the order they ran.
    pub fn results(&self) -> &[CaseResult] {
        &self.results
    }

    /// The cases that failed.
    pub fn failures(&self) -> impl Iterator<Item = &CaseResult> {
        self.results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Failed(_)))
    }

    /// The cases the store could not run (an optional method unsupported).
    pub fn unsupported(&self) -> impl Iterator<Item = &CaseResult> {
        self.results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Unsupported(_)))
    }

    /// `true` if no case failed (unsupported ones do not fail a run).
    pub fn passed(&self) -> bool {
        self.failures().next().is_none()
    }

    /// Panics, with the report, unless every case passed or was unsupported.
    ///
    /// # Panics
    /// If a case failed.
    #[track_caller]
    pub fn assert_passed(&self) {
        assert!(self.passed(), "the store broke the contract:\n{self}");
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = |o: fn(&Outcome) -> bool| self.results.iter().filter(|r| o(&r.outcome)).count();
        writeln!(
            f,
            "store contract: {} passed, {} failed, {} unsupported",
            count(|o| *o == Outcome::Passed),
            count(|o| matches!(o, Outcome::Failed(_))),
            count(|o| matches!(o, Outcome::Unsupported(_))),
        )?;
        for r in &self.results {
            let (word, why) = match &r.outcome {
                Outcome::Passed => ("ok", ""),
                Outcome::Failed(why) => ("FAILED", why.as_str()),
                Outcome::Unsupported(why) => ("unsupported", why.as_str()),
            };
            let case = format!("{}/{}", r.suite.as_str(), r.name);
            write!(f, "  {word:<11} {case} ({:.2} s)", r.took.as_secs_f64())?;
            if why.is_empty() {
                writeln!(f)?;
            } else {
                writeln!(f, ": {why}")?;
            }
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
