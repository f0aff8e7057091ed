//! The contract's cases on `extend` (LK5): ShedLock's extensible provider suite, and
//! the keep-alive a running holder makes of it (`Exclusive::keep_alive`).

use std::time::{Duration, Instant};

use super::check::{ensure, ms, Checked, Ctx};
use super::lease::{granted, taken_over_in_time};

/// An extension before the lease ends answers `true`, and the lease then lasts
/// `at_most_for` from the extension, past its first end.
pub(super) fn an_extension_outlasts_the_first_at_most_for(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let name = cx.name("job");
    let lease = granted(a.acquire(&name, cx.units(3))?, "a free lock")?;
    std::thread::sleep(cx.units(2));
    let t0 = Instant::now();
    ensure!(
        a.extend(&lease, cx.units(3))?,
        "the extension of a valid lease answered false"
    );
    let t1 = Instant::now();
    std::thread::sleep(cx.units(2)); // past the first end, within the extension
    ensure!(
        b.is_held(&name, cx.units(1))?,
        "LK5: the extended lease ended at its first end"
    );
    taken_over_in_time(
        cx,
        &b,
        &name,
        cx.units(3),
        (t0, t1),
        "the extension's at_most_for",
    )
}

/// A lease that ran out is not revived by an extension: `false`, and the lock is free.
pub(super) fn an_expired_lease_is_not_extended(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let name = cx.name("job");
    let lease = granted(a.acquire(&name, cx.units(1))?, "a free lock")?;
    std::thread::sleep(cx.units(2));
    ensure!(
        !a.extend(&lease, cx.units(50))?,
        "LK5: a lease that ran out was extended"
    );
    let next = b.acquire(&name, cx.units(50))?;
    ensure!(
        next.is_some(),
        "LK5: an extension revived a lease that ran out"
    );
    Ok(())
}

/// A holder whose lease ran out and was taken over cannot extend the new holder's lease:
/// `false`, and the new lease ends when it would have.
pub(super) fn a_stale_lease_does_not_extend_the_new_one(cx: &Ctx) -> Checked {
    let (a, b, c) = (cx.node(), cx.node(), cx.node());
    let name = cx.name("job");
    let old = granted(a.acquire(&name, cx.units(1))?, "a free lock")?;
    let t0 = Instant::now();
    let new = cx.poll(cx.units(3), || b.acquire(&name, cx.units(3)))?;
    let t1 = Instant::now();
    let _new = granted(new, "a lease that ran out")?;
    ensure!(
        !a.extend(&old, cx.units(50))?,
        "LK5: a stale lease extended the new holder's"
    );
    // The new lease began within [t0, t1] and lasts 3 units, not the stale 50.
    let bound = t1 + cx.units(3) + cx.slack() * 3;
    let free = cx.poll(bound.saturating_duration_since(Instant::now()), || {
        c.acquire(&name, cx.units(50))
    })?;
    ensure!(
        free.is_some(),
        "LK5: the new holder's lease outlasted its at_most_for ({} after {})",
        ms(cx.units(3)),
        ms(t1 - t0)
    );
    Ok(())
}

/// A lease given back cannot be extended.
pub(super) fn a_released_lease_is_not_extended(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let name = cx.name("job");
    let lease = granted(a.acquire(&name, cx.units(50))?, "a free lock")?;
    ensure!(
        a.release(lease.clone(), Duration::ZERO)?,
        "the release answered false"
    );
    ensure!(
        !a.extend(&lease, cx.units(50))?,
        "LK5: a released lease was extended"
    );
    ensure!(
        b.acquire(&name, cx.units(50))?.is_some(),
        "held after an extension of a released lease"
    );
    Ok(())
}

/// A holder that extends its lease every half of its `at_most_for` keeps the lock three
/// times that long, no other node getting it; once it stops, the lease ends
/// `at_most_for` after its last extension, not before (`Exclusive::keep_alive`).
pub(super) fn a_kept_alive_lease_ends_after_its_last_extension(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let name = cx.name("job");
    let at_most_for = cx.units(2);
    let lease = granted(a.acquire(&name, at_most_for)?, "a free lock")?;
    let mut last = (Instant::now(), Instant::now());
    for i in 0..6 {
        std::thread::sleep(cx.units(1));
        let t0 = Instant::now();
        ensure!(
            a.extend(&lease, at_most_for)?,
            "extension {i} answered false"
        );
        last = (t0, Instant::now());
        ensure!(
            b.is_held(&name, cx.units(1))?,
            "another node got a kept-alive lock ({i})"
        );
    }
    taken_over_in_time(
        cx,
        &b,
        &name,
        at_most_for,
        last,
        "the last extension's at_most_for",
    )
}
