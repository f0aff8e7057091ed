//! What every case of the contract kit stands on: [`Ctx`] (the store's handles, names of
//! the run's own, the kit's time unit and waits), [`Failure`] and the [`ensure!`] of a
//! case.
//!
//! Every call into the user's store goes through the door to user code
//! (`crate::user::call`, U1): no lock of the crate is held, and the case's panic is
//! contained by the runner (`mod.rs`).

use std::fmt;
use std::time::{Duration, Instant, SystemTime};

use crate::cluster::{ClusterLock, Lease, LockError, Pause};
use crate::sync::Arc;

/// Why a case did not pass.
#[derive(Debug)]
pub(super) enum Failure {
    /// The store broke the contract: what was seen.
    Broken(String),
    /// The store answered [`LockError::Unsupported`] to an optional method the case needs.
    Unsupported(String),
}

impl From<String> for Failure {
    fn from(msg: String) -> Self {
        Failure::Broken(msg)
    }
}

/// A case's result.
pub(super) type Checked = Result<(), Failure>;

/// Fails the case with the message unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err($crate::cluster::contract::check::Failure::Broken(format!($($msg)+)));
        }
    };
}
pub(super) use ensure;

/// The factory of the store's handles, as the user gave it.
pub(super) type Factory = Arc<dyn Fn() -> Arc<dyn ClusterLock> + Send + Sync>;

/// One case's view of the store.
pub(super) struct Ctx {
    factory: Factory,
    /// The kit's time unit: leases last a few of them.
    pub(super) unit: Duration,
    /// Names of this run and case: `{run}/{case}/`.
    space: String,
    /// The fuzz's threads and rounds.
    pub(super) fuzz: (usize, usize),
}

impl Ctx {
    pub(super) fn new(
        factory: Factory,
        unit: Duration,
        space: String,
        fuzz: (usize, usize),
    ) -> Self {
        Ctx {
            factory,
            unit,
            space,
            fuzz,
        }
    }

    /// A new handle on the store (another node, as the factory makes it).
    pub(super) fn node(&self) -> Node {
        Node(crate::user::call(|| (self.factory)()))
    }

    /// The lock name `tail`, in this run's and case's own space.
    pub(super) fn name(&self, tail: &str) -> String {
        format!("{}{tail}", self.space)
    }

    /// `n` time units.
    pub(super) fn units(&self, n: u32) -> Duration {
        self.unit * n
    }

    /// `n` tenths of a time unit.
    pub(super) fn tenths(&self, n: u32) -> Duration {
        self.unit * n / 10
    }

    /// The slack a store's answer may take beyond a bound: a time unit.
    pub(super) fn slack(&self) -> Duration {
        self.unit
    }

    /// Polls `f` every tenth of a unit until it gives `Some`, at most `bound`.
    pub(super) fn poll<T>(
        &self,
        bound: Duration,
        mut f: impl FnMut() -> Result<Option<T>, Failure>,
    ) -> Result<Option<T>, Failure> {
        let give_up = Instant::now() + bound;
        loop {
            if let Some(v) = f()? {
                return Ok(Some(v));
            }
            if Instant::now() >= give_up {
                return Ok(None);
            }
            std::thread::sleep(self.tenths(1));
        }
    }

    /// Waits until `name` is free (acquired by `node` and released at once), for a name
    /// an earlier run may still hold: at most `bound`.
    pub(super) fn wait_free(&self, node: &Node, name: &str, bound: Duration) -> Checked {
        let lease = self.poll(bound, || node.acquire(name, self.units(1)))?;
        ensure!(lease.is_some(), "{name:?} stayed held for {bound:?}");
        if let Some(lease) = lease {
            node.release(lease, Duration::ZERO)?;
        }
        Ok(())
    }
}

/// A handle on the user's store, each call through the door (U1) with its error made a
/// [`Failure`] that says which call failed.
pub(super) struct Node(Arc<dyn ClusterLock>);

impl Node {
    pub(super) fn acquire(
        &self,
        name: &str,
        at_most_for: Duration,
    ) -> Result<Option<Lease>, Failure> {
        let r = crate::user::call(|| self.0.try_acquire(name, at_most_for));
        r.map_err(|e| failed("try_acquire", name, &e))
    }

    pub(super) fn release(&self, lease: Lease, at_least_for: Duration) -> Result<bool, Failure> {
        let name = lease.name().to_owned();
        let r = crate::user::call(|| self.0.release(lease, at_least_for));
        r.map_err(|e| failed("release", &name, &e))
    }

    pub(super) fn extend(&self, lease: &Lease, at_most_for: Duration) -> Result<bool, Failure> {
        let r = crate::user::call(|| self.0.extend(lease, at_most_for));
        r.map_err(|e| failed("extend", lease.name(), &e))
    }

    pub(super) fn last_acquired(&self, name: &str) -> Result<Option<Duration>, Failure> {
        let r = crate::user::call(|| self.0.last_acquired(name));
        r.map_err(|e| failed("last_acquired", name, &e))
    }

    pub(super) fn pause(&self, name: &str, by: &str, until: Option<SystemTime>) -> Checked {
        let r = crate::user::call(|| self.0.pause(name, by, until));
        r.map_err(|e| failed("pause", name, &e))
    }

    pub(super) fn resume(&self, name: &str) -> Result<bool, Failure> {
        let r = crate::user::call(|| self.0.resume(name));
        r.map_err(|e| failed("resume", name, &e))
    }

    pub(super) fn paused(&self, name: &str) -> Result<Option<Pause>, Failure> {
        let r = crate::user::call(|| self.0.paused(name));
        r.map_err(|e| failed("paused", name, &e))
    }

    /// Whether `name` is held now: an acquisition fails (one that succeeds is given back
    /// at once, with no `at_least_for`).
    pub(super) fn is_held(&self, name: &str, probe_for: Duration) -> Result<bool, Failure> {
        match self.acquire(name, probe_for)? {
            Some(lease) => {
                self.release(lease, Duration::ZERO)?;
                Ok(false)
            }
            None => Ok(true),
        }
    }
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Node")
    }
}

/// A store's error as the case's failure: `Unsupported` stays apart.
fn failed(call: &str, name: &str, e: &LockError) -> Failure {
    match e {
        LockError::Unsupported(what) => Failure::Unsupported(format!("{call}: {what}")),
        other => Failure::Broken(format!("{call}({name:?}) failed: {other}")),
    }
}

/// `d` in milliseconds, for a message.
pub(super) fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}
