//! The contract's cases on what a store keeps besides the lease: the last acquisition
//! (`last_acquired`, which `Exclusive::catch_up` reads) and the pauses (`pause`,
//! `resume`, `paused`).

use std::time::{Duration, Instant, SystemTime};

use super::check::{ensure, ms, Checked, Ctx};
use super::lease::granted;

/// A day: how far a store's wall clock may be from this process's for the kit to take
/// a pause's `since` as "now".
const DAY: Duration = Duration::from_secs(24 * 3600);

/// `last_acquired` is `None` for a lock never acquired; after an acquisition it is the
/// time since, on the store's clock (it grows as time passes, and neither a failed
/// acquisition nor a release changes it); a new acquisition starts it again.
pub(super) fn last_acquired_is_the_age_of_the_last_acquisition(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let name = cx.name("job");
    ensure!(
        b.last_acquired(&name)?.is_none(),
        "a lock never acquired has an age"
    );
    let t0 = Instant::now();
    let lease = granted(a.acquire(&name, cx.units(50))?, "a free lock")?;
    let t1 = Instant::now();
    let young = b.last_acquired(&name)?;
    let Some(young) = young else {
        return Err("no age after an acquisition".to_owned().into());
    };
    ensure!(
        young <= t0.elapsed() + cx.tenths(1),
        "an age of {} after {}",
        ms(young),
        ms(t0.elapsed())
    );
    std::thread::sleep(cx.units(2));
    ensure!(
        b.acquire(&name, cx.units(50))?.is_none(),
        "LK1: a held lock was granted"
    );
    ensure!(
        a.release(lease, Duration::ZERO)?,
        "the release answered false"
    );
    let t2 = Instant::now();
    let old = b.last_acquired(&name)?.unwrap_or_default();
    ensure!(
        old + cx.tenths(1) >= t2 - t1 && old <= t0.elapsed() + cx.tenths(1),
        "an age of {} for an acquisition {} to {} ago (a failed acquisition or the release \
         moved it?)",
        ms(old),
        ms(t2 - t1),
        ms(t2 - t0)
    );
    let again = granted(b.acquire(&name, cx.units(50))?, "free after the release")?;
    let fresh = a.last_acquired(&name)?.unwrap_or(Duration::MAX);
    ensure!(
        fresh < cx.units(1),
        "a new acquisition left the age at {}",
        ms(fresh)
    );
    b.release(again, Duration::ZERO)?;
    Ok(())
}

/// A pause made through one node is seen by every node, by name, until resumed;
/// `resume` answers whether a pause was in force.
pub(super) fn a_pause_is_seen_by_every_node_until_resumed(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let name = cx.name("job");
    ensure!(a.paused(&name)?.is_none(), "a job never paused is paused");
    ensure!(
        !a.resume(&name)?,
        "resume of a job never paused answered true"
    );
    a.pause(&name, "ops: migration", None)?;
    let pause = b.paused(&name)?;
    let Some(pause) = pause else {
        return Err("a pause is not seen by another node".to_owned().into());
    };
    ensure!(pause.by == "ops: migration", "paused by {:?}", pause.by);
    ensure!(
        pause.until.is_none(),
        "a pause until resumed ends at {:?}",
        pause.until
    );
    let now = SystemTime::now();
    let near = pause
        .since
        .max(now)
        .duration_since(pause.since.min(now))
        .unwrap_or_default();
    ensure!(
        near < DAY,
        "a pause since {:?}: not the store's now",
        pause.since
    );
    ensure!(
        b.paused(&cx.name("other"))?.is_none(),
        "a pause of one job pauses another"
    );
    ensure!(b.resume(&name)?, "resume of a job in force answered false");
    ensure!(
        a.paused(&name)?.is_none(),
        "resumed, the job is still paused"
    );
    ensure!(!a.resume(&name)?, "a second resume answered true");
    Ok(())
}

/// A second pause replaces the first; one until a time already past is no pause.
pub(super) fn a_second_pause_replaces_the_first(cx: &Ctx) -> Checked {
    let (a, b) = (cx.node(), cx.node());
    let name = cx.name("job");
    a.pause(&name, "one", None)?;
    let since = b
        .paused(&name)?
        .map(|p| p.since)
        .unwrap_or_else(SystemTime::now);
    let until = since + Duration::from_secs(3600);
    b.pause(&name, "two", Some(until))?;
    let pause = a.paused(&name)?;
    ensure!(
        pause
            .as_ref()
            .is_some_and(|p| p.by == "two" && p.until.is_some()),
        "after a second pause: {pause:?}"
    );
    let past = SystemTime::now() - DAY;
    a.pause(&name, "past", Some(past))?;
    ensure!(
        b.paused(&name)?.is_none(),
        "a pause until a day ago is in force"
    );
    ensure!(
        !b.resume(&name)?,
        "resume of a pause that ended answered true"
    );
    Ok(())
}

/// A pause until a time ends then, by the store's clock: its `until` is read against the
/// `since` the store gave a pause made just before.
pub(super) fn a_pause_ends_at_its_until(cx: &Ctx) -> Checked {
    let a = cx.node();
    let name = cx.name("job");
    a.pause(&name, "ops", None)?;
    let since = a.paused(&name)?.map(|p| p.since);
    let Some(since) = since else {
        return Err("a pause is not seen".to_owned().into());
    };
    let t0 = Instant::now();
    a.pause(&name, "ops", Some(since + cx.units(3)))?;
    ensure!(
        a.paused(&name)?.is_some(),
        "a pause until {} from now is not in force",
        ms(cx.units(3))
    );
    let bound = cx.units(3) + cx.slack() * 3;
    let over = cx.poll(bound, || Ok(a.paused(&name)?.is_none().then_some(())))?;
    ensure!(
        over.is_some(),
        "still paused {} after a pause until {} on",
        ms(t0.elapsed()),
        ms(cx.units(3))
    );
    Ok(())
}
