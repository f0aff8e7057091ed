//! The contract's cases on the lease itself: ShedLock's shared and storage-based provider
//! suites, fencing (LK2), the trait's edge inputs and names, and the lease's times by
//! the store's clock (LK1, LK3, LK4).
//!
//! Time is read only from this process's monotonic clock, around each call: a lease
//! acquired by a call that started at `t0` cannot end before `t0 + at_most_for` by any
//! clock that runs at the speed of time, and must end by the end of that call plus
//! `at_most_for`, give or take [`Ctx::slack`] for the calls that see it.

use std::time::{Duration, Instant};

use super::check::{ensure, ms, Checked, Ctx, Failure, Node};
use crate::cluster::Lease;

/// A lease that outlasts its case.
const LONG: u32 = 50;

/// `lease`, which the store must have granted (`what` says why).
pub(super) fn granted(lease: Option<Lease>, what: &str) -> Result<Lease, Failure> {
    lease.ok_or_else(|| Failure::Broken(format!("not granted: {what}")))
}

// ---- shared (ShedLock's `AbstractLockProviderIntegrationTest`) ----

/// A free lock is granted; while held, neither another node nor the holder's own gets
/// it (LK1); a release of a valid lease answers `true` and frees it.
pub(super) fn one_holder_until_released(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let name = cx.name("job");
    let lease = granted(a.acquire(&name, cx.units(LONG))?, "a free lock")?;
    ensure!(
        lease.name() == name,
        "the lease names {:?}, not {name:?}",
        lease.name()
    );
    ensure!(
        b.acquire(&name, cx.units(LONG))?.is_none(),
        "LK1: another node got a held lock"
    );
    ensure!(
        a.acquire(&name, cx.units(LONG))?.is_none(),
        "LK1: the holder's node got it twice"
    );
    ensure!(
        a.release(lease, Duration::ZERO)?,
        "the release of a valid lease answered false"
    );
    let again = granted(b.acquire(&name, cx.units(LONG))?, "free after a release")?;
    ensure!(
        b.release(again, Duration::ZERO)?,
        "the second holder's release answered false"
    );
    Ok(())
}

/// A lock whose record exists (acquired and released before) is granted again, time
/// after time.
pub(super) fn granted_again_after_each_release(cx: &Ctx) -> Checked {
    let a = cx.node();
    let name = cx.name("job");
    for round in 0..3 {
        let lease = granted(a.acquire(&name, cx.units(LONG))?, &format!("round {round}"))?;
        ensure!(
            a.release(lease, Duration::ZERO)?,
            "round {round}: the release answered false"
        );
    }
    Ok(())
}

/// Locks of other names are other locks.
pub(super) fn names_are_independent(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let (x, y) = (cx.name("x"), cx.name("y"));
    let lx = granted(a.acquire(&x, cx.units(LONG))?, "x")?;
    let ly = granted(b.acquire(&y, cx.units(LONG))?, "y, while x is held")?;
    ensure!(
        b.is_held(&x, cx.units(1))?,
        "x is no longer held after y was taken"
    );
    ensure!(
        a.release(lx, Duration::ZERO)? && b.release(ly, Duration::ZERO)?,
        "releases"
    );
    Ok(())
}

/// A release made after `at_least_for` has passed frees the lock at once.
pub(super) fn a_late_enough_release_frees_at_once(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let name = cx.name("job");
    let lease = granted(a.acquire(&name, cx.units(LONG))?, "a free lock")?;
    std::thread::sleep(cx.units(2));
    ensure!(a.release(lease, cx.units(1))?, "the release answered false");
    let again = b.acquire(&name, cx.units(LONG))?;
    ensure!(
        again.is_some(),
        "held after a release whose at_least_for had passed"
    );
    Ok(())
}

// ---- storage-based (ShedLock's `AbstractStorageBasedLockProviderIntegrationTest`) ----

/// The lease is in the store, not in the handle: a handle made after the acquisition
/// sees it held.
pub(super) fn a_new_handle_sees_the_lease(cx: &Ctx) -> Checked {
    let a = cx.node();
    let name = cx.name("job");
    let lease = granted(a.acquire(&name, cx.units(LONG))?, "a free lock")?;
    let fresh = cx.node();
    ensure!(
        fresh.is_held(&name, cx.units(1))?,
        "a new handle got a lock held by another"
    );
    ensure!(
        a.release(lease, Duration::ZERO)?,
        "the release answered false"
    );
    Ok(())
}

/// The record of a lease that ran out (its holder gone) is taken over by a new handle.
pub(super) fn an_expired_record_is_taken_over(cx: &Ctx) -> Checked {
    let name = cx.name("job");
    {
        let a = cx.node();
        granted(a.acquire(&name, cx.units(1))?, "a free lock")?;
    } // its holder is gone, its lease left to run out
    std::thread::sleep(cx.units(1) + cx.tenths(5));
    let fresh = cx.node();
    let lease = granted(
        fresh.acquire(&name, cx.units(LONG))?,
        "a lease that ran out",
    )?;
    ensure!(
        fresh.release(lease, Duration::ZERO)?,
        "the release answered false"
    );
    Ok(())
}

// ---- fencing (LK2) ----

/// Every acquisition of a name gets a larger token than every earlier one, whichever
/// node makes it, and after a lease ran out.
pub(super) fn tokens_grow_with_every_acquisition(cx: &Ctx) -> Checked {
    let nodes = [cx.node(), cx.node(), cx.node()];
    let name = cx.name("job");
    let mut last = None;
    for (i, node) in nodes.iter().cycle().take(6).enumerate() {
        let lease = granted(node.acquire(&name, cx.units(LONG))?, &format!("round {i}"))?;
        let token = lease.token();
        ensure!(
            last.is_none_or(|l| token > l),
            "LK2: token {token} after {last:?}"
        );
        last = Some(token);
        ensure!(
            node.release(lease, Duration::ZERO)?,
            "round {i}: the release answered false"
        );
    }
    let short = granted(nodes[0].acquire(&name, cx.units(1))?, "free")?;
    let next = cx.poll(cx.units(3), || nodes[1].acquire(&name, cx.units(LONG)))?;
    let next = granted(next, "a lease that ran out")?;
    ensure!(
        next.token() > short.token(),
        "LK2: {} after {}",
        next.token(),
        short.token()
    );
    nodes[1].release(next, Duration::ZERO)?;
    Ok(())
}

/// A release by a holder whose lease ran out and was taken over answers `false` and
/// leaves the new holder's lease alone (LK2).
pub(super) fn a_late_release_leaves_the_new_holder_alone(cx: &Ctx) -> Checked {
    let (a, b, c) = (cx.node(), cx.node(), cx.node());
    let name = cx.name("job");
    let old = granted(a.acquire(&name, cx.units(1))?, "a free lock")?;
    let new = cx.poll(cx.units(3), || b.acquire(&name, cx.units(LONG)))?;
    let new = granted(new, "a lease that ran out")?;
    ensure!(
        !a.release(old, Duration::ZERO)?,
        "a release after the takeover answered true"
    );
    ensure!(
        c.is_held(&name, cx.units(1))?,
        "LK2: a stale release freed the new holder's lock"
    );
    ensure!(
        b.release(new, Duration::ZERO)?,
        "the new holder's release answered false"
    );
    Ok(())
}

/// A release after `at_most_for` answers `false` (an overrun), even with nobody after.
pub(super) fn a_release_after_at_most_for_is_an_overrun(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let name = cx.name("job");
    let lease = granted(a.acquire(&name, cx.units(1))?, "a free lock")?;
    std::thread::sleep(cx.units(2));
    ensure!(
        !a.release(lease, Duration::ZERO)?,
        "a release after at_most_for answered true"
    );
    ensure!(
        !b.is_held(&name, cx.units(1))?,
        "the lock is held after its lease ran out"
    );
    Ok(())
}

// ---- the trait's edge inputs ----

/// A zero `at_most_for` is over as soon as granted: it keeps nobody out, and its release
/// answers `false`.
pub(super) fn a_zero_at_most_for_keeps_nobody_out(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let name = cx.name("job");
    let zero = granted(
        a.acquire(&name, Duration::ZERO)?,
        "a free lock, for no time",
    )?;
    let next = granted(
        b.acquire(&name, cx.units(LONG))?,
        "a lock whose lease lasts 0",
    )?;
    ensure!(
        !a.release(zero, Duration::ZERO)?,
        "the release of a 0 lease answered true"
    );
    ensure!(
        b.release(next, Duration::ZERO)?,
        "the next holder's release answered false"
    );
    Ok(())
}

/// `at_least_for` beyond the lease's `at_most_for` is capped at it.
pub(super) fn at_least_for_is_capped_at_at_most_for(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let name = cx.name("job");
    let lease = granted(a.acquire(&name, cx.units(2))?, "a free lock")?;
    ensure!(
        a.release(lease, cx.units(1000))?,
        "the release answered false"
    );
    let bound = cx.units(2) + cx.slack() * 3;
    let free = cx.poll(bound, || b.acquire(&name, cx.units(LONG)))?;
    ensure!(
        free.is_some(),
        "held past at_most_for ({}): not capped",
        ms(cx.units(2))
    );
    Ok(())
}

/// Odd names (spaces, control characters, Unicode in two normal forms, case, SQL and
/// glob characters, a long one, a hash tag) are names like any other, each its own lock,
/// compared byte for byte. A name with a NUL byte may be refused with an error (SQL's
/// text refuses it), but never confused with another.
pub(super) fn odd_names_are_names_like_any_other(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let long = "n".repeat(300);
    let tails = [
        " ",
        "a b",
        "a",
        "A",
        "a ",
        "\t",
        "a\nb",
        "é",
        "e\u{301}",
        "ünï·cödé 🔒",
        "*",
        "?",
        "[x]",
        "{tag}",
        "x:y",
        "%s%d",
        "'; DROP TABLE t; --",
        "\\",
        "\"",
        &long,
    ];
    let mut leases = Vec::new();
    for tail in tails {
        let name = cx.name(tail);
        leases.push(granted(
            a.acquire(&name, cx.units(LONG))?,
            &format!("{name:?}"),
        )?);
    }
    for lease in &leases {
        let name = lease.name();
        ensure!(
            b.is_held(name, cx.units(1))?,
            "{name:?} is not held after its acquisition"
        );
    }
    for lease in leases {
        let name = lease.name().to_owned();
        ensure!(
            a.release(lease, Duration::ZERO)?,
            "{name:?}: the release answered false"
        );
    }
    let nul = cx.name("a\0b");
    if let Ok(lease) = a.acquire(&nul, cx.units(LONG)) {
        let lease = granted(lease, "a name with a NUL byte, free")?;
        ensure!(
            b.is_held(&nul, cx.units(1))?,
            "{nul:?} is not held after its acquisition"
        );
        ensure!(
            !b.is_held(&cx.name("a"), cx.units(1))?,
            "{nul:?} was taken as another name"
        );
        ensure!(
            a.release(lease, Duration::ZERO)?,
            "{nul:?}: the release answered false"
        );
    }
    Ok(())
}

/// The empty name is a name: one lock, held and released as any other. (It is not in the
/// run's own space, so a lease an earlier run left is waited out first.)
pub(super) fn the_empty_name_is_a_name(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    cx.wait_free(&a, "", cx.units(5))?;
    let lease = granted(a.acquire("", cx.units(3))?, "the empty name")?;
    ensure!(
        b.is_held("", cx.units(1))?,
        "the empty name is not held after its acquisition"
    );
    ensure!(!b.is_held(" ", cx.units(1))?, "\"\" and \" \" are one lock");
    ensure!(
        a.release(lease, Duration::ZERO)?,
        "the release answered false"
    );
    Ok(())
}

// ---- the lease's times by the store's clock ----

/// A lease lasts `at_most_for` by the time that passes (LK1, LK4): no other node gets
/// the lock before, and one gets it soon after.
pub(super) fn a_lease_lasts_its_at_most_for(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let name = cx.name("job");
    let at_most_for = cx.units(3);
    let t0 = Instant::now();
    let lease = granted(a.acquire(&name, at_most_for)?, "a free lock")?;
    let t1 = Instant::now();
    taken_over_in_time(cx, &b, &name, at_most_for, (t0, t1), "at_most_for")?;
    ensure!(
        !a.release(lease, Duration::ZERO)?,
        "a release after the takeover answered true"
    );
    Ok(())
}

/// A released lease keeps the lock until `at_least_for` after its acquisition, by the
/// time that passes (LK3, LK4), and no longer.
pub(super) fn at_least_for_keeps_the_lock_after_a_release(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let name = cx.name("job");
    let at_least_for = cx.units(3);
    let t0 = Instant::now();
    let lease = granted(a.acquire(&name, cx.units(LONG))?, "a free lock")?;
    let t1 = Instant::now();
    ensure!(
        a.release(lease, at_least_for)?,
        "the release answered false"
    );
    taken_over_in_time(cx, &b, &name, at_least_for, (t0, t1), "at_least_for")
}

/// Polls `node` for `name` until it gets it; checks that this came no sooner than `held`
/// after the start of the acquisition that `made` spans, and no later than `held` after
/// its end, give or take the slack.
pub(super) fn taken_over_in_time(
    cx: &Ctx,
    node: &Node,
    name: &str,
    held: Duration,
    made: (Instant, Instant),
    what: &str,
) -> Checked {
    let (t0, t1) = made;
    let bound = held + cx.slack() * 3;
    let lease = cx.poll(bound, || node.acquire(name, cx.units(LONG)))?;
    let got = Instant::now();
    let lease = granted(
        lease,
        &format!("still held {} after {what} ({})", ms(got - t1), ms(held)),
    )?;
    // A tenth of a unit for a store whose clock counts in coarse steps.
    ensure!(
        got - t0 + cx.tenths(1) >= held,
        "taken over {} after the acquisition began: before {what} ({}) ran out",
        ms(got - t0),
        ms(held)
    );
    ensure!(
        got - t1 <= held + cx.slack(),
        "taken over {} after the acquisition: {what} is {}",
        ms(got - t1),
        ms(held)
    );
    node.release(lease, Duration::ZERO)?;
    Ok(())
}
