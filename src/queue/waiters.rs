//! The leader/follower waiting protocol, once for both queues: the blocking queue of the
//! public queues (`queue/blocking.rs`) and the executor's sharded queue (`sharded.rs`). Java
//! keeps it in `DelayedWorkQueue.take`/`poll`; tokio and rayon keep theirs in one module
//! too (`park.rs`, `sleep/`).
//!
//! # Design
//! At most one waiting taker, the *leader*, sleeps until the head's deadline; every other
//! taker, a *follower*, sleeps untimed (or until its own timeout). The two kinds wait on
//! their own condition variables ([`Signals`]), so a new head reaches exactly the thread
//! that must re-arm its timer (Java signals one waiter of a shared condition, which is
//! harmless only because its leader also wakes on its timeout; a `ManualClock` leader has
//! none).
//!
//! With leader/follower alone a due head waits for one particular thread: when the
//! operating system keeps the leader off a CPU (preempted, or its virtual CPU not run by
//! the host), every other worker sleeps on while the head falls due, for a time slice or
//! more (`docs/BENCHMARKS.md`, "Where the tail comes from, per task"). So the first
//! follower behind a leader is its *backup*: on the real clock it sleeps with a timer of its
//! own, [`BACKUP_GRACE`] past the moment the leader means to take its head, on a third
//! condition variable. If the leader has not taken the head by then, the backup pops it
//! (a pop needs no lead). Every wake-up meant for a follower goes to the backup first, as
//! it is the one awake soonest; and a hand-on leaves a backup asleep whose timer fires
//! within the grace anyway, so in a dense schedule the backup's timer replaces the hand-on's
//! futex wake instead of adding a timer to it (a timer armed and cancelled per lead cost a
//! tenth more CPU in workload W5). A leader that sleeps long ([`RECRUIT_AFTER`]) wakes a
//! follower asleep without a timer to come back as its backup: an idle pool's one
//! deadline then has two independent wake-ups, as scheduled-thread-pool's all-timed
//! waiters give it.
//!
//! A queue owns the mutex: the waiters' state ([`Waiters`]) lives in the data it guards
//! (the blocking queue's one lock, the sharded queue's coordinator). A `take` loop looks at
//! the head under that lock, pops what is due, and otherwise calls [`Taker::wait`] for one
//! wait; every way out of the loop goes through a [`Leaving`] guard, whose `Drop` hands
//! leadership on (F3). How the leader sleeps, spins or coarsens its wake-up is `park.rs`'s
//! plan, which this module carries out with the lock released while spinning.
//!
//! # Invariants
//! - F1 (one leader): `Waiters::leader` is true only while one taker is between deciding
//!   to lead and leaving its timed wait or spin; that taker sets it and clears it itself,
//!   under the lock, and nothing else writes it.
//! - F2 (a new head reaches a waiter): whoever makes a head earlier, removes a head that
//!   is not yet due or advances a `ManualClock` calls [`Signals::head_changed`] with the
//!   waiters' state under the lock: the leader is woken, or with no leader one follower,
//!   which then leads. (The sharded queue decides *whether* to call it from its published
//!   `wake_at`, Q1 in `sharded.rs`.)
//! - F3 (hand-on): a taker that leaves `take` by any way — an element, a timeout, a close
//!   or stop condition, a panic in the caller's stop condition — with a head left, no
//!   leader and followers waiting wakes one follower ([`Leaving`]'s `Drop`). So a queued
//!   head always has a taker that will lead it: a leader that gives up its lead (a worker's
//!   keep-alive ending) never strands the head with sleeping followers (Java: `finally {
//!   if (leader == null && queue[0] != null) available.signal(); }`).
//! - F4 (Java's lead rule): on the real clock a taker leads only if its own timeout
//!   outlasts the head's delay; otherwise it waits as a follower until its timeout and
//!   hands on when it leaves (F3). So a leader never holds a lead it is about to drop.
//!   On a `ManualClock` a deadline and a real-time timeout cannot be compared, and a
//!   taker leads regardless; F3 covers its give-up.
//! - F5 (backup): `Waiters::backup` is true only while one follower, which set it and
//!   clears it itself under the lock, is between joining behind a leader with a head and
//!   leaving its wait on `backup_cv`; it counts among the followers for F2 and F3, which
//!   wake it before any other follower. On the real clock its wait ends at the latest
//!   [`BACKUP_GRACE`] past the leader's take time (`Waiters::lead_take_at`), and F3 may
//!   leave it asleep only when that timer (`Waiters::backup_at`, never the caller's own
//!   timeout) fires within the grace. On a `ManualClock` it waits untimed, as a follower.
//!   So a due head never waits longer than the grace plus one wake-up for the leader, and
//!   a wake-up sent to the backup is never lost: it waits on its own condition variable
//!   for as long as the flag says so.
//!
//! # Ordering
//! [`Waiters`] is under its owner's lock. [`Signals::head_changes`] is a `Relaxed` hint for
//! spinners (`park.rs`): nothing is published through it, and a spinner re-checks
//! everything under the lock when it stops.

use crate::sync::Ordering;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

use super::park::{self, earliest, Lead, Park, SpinPolicy};
use crate::clock::{Clock, Ticks};
use crate::sync::{unlocked, Condvar, MutexGuard, StatCounter};

/// "No head" in the deadlines this module compares.
const NO_HEAD: Ticks = Ticks::MAX;

/// How long past the moment the leader means to take its head the backup's timer is set
/// (F5): about one healthy wake-up on a loaded machine, so a leader that is merely slow is
/// not raced, and a leader the operating system has not put on a CPU costs at most this
/// plus the backup's own wake-up.
const BACKUP_GRACE: Duration = Duration::from_micros(50);

/// A leader that will sleep at least this long before it takes its head wakes a follower
/// asleep without a timer to come back as its backup (F5), at the cost of that one
/// wake-up. Shorter leads are a dense schedule's, where the workers coming back from
/// their runs become the backup without being woken.
const RECRUIT_AFTER: Duration = Duration::from_micros(200);

/// The waiting takers' state, guarded by its owner's lock (module notes).
#[derive(Debug)]
pub(super) struct Waiters {
    /// A taker leads (F1).
    leader: bool,
    /// The deadline the leader waits for, while there is one.
    lead_until: Ticks,
    /// When the leader means to take its head (real clock): the deadline as its plan
    /// rounds it, or the end of a coarse sleep past the spin budget (`park.rs`). The
    /// backup's timer is set past it (F5).
    lead_take_at: Option<Instant>,
    /// Takers waiting (or idle-spinning) as followers, the backup not counted.
    followers: usize,
    /// A follower waits as the backup, on its own condition variable (F5).
    backup: bool,
    /// When the backup's timer fires, if it set one.
    backup_at: Option<Instant>,
    /// A leader woke a follower to come back as the backup and it has not yet left its
    /// wait: no second recruit (F5).
    recruiting: bool,
    /// The real-clock waiting policy (`park.rs`).
    park: Park,
}

impl Waiters {
    pub(super) fn new(spin: SpinPolicy, precision: Duration) -> Self {
        Waiters {
            leader: false,
            lead_until: NO_HEAD,
            lead_take_at: None,
            followers: 0,
            backup: false,
            backup_at: None,
            recruiting: false,
            park: Park::new(spin, precision),
        }
    }

    /// A taker leads (F1).
    #[inline]
    #[cfg(all(test, not(loom)))]
    pub(super) fn leader(&self) -> bool {
        self.leader
    }

    /// The leader's deadline, if a taker leads.
    #[inline]
    pub(super) fn lead_until(&self) -> Option<Ticks> {
        self.leader.then_some(self.lead_until)
    }

    /// Takers waiting as followers, the backup included.
    #[inline]
    pub(super) fn followers(&self) -> usize {
        self.followers + usize::from(self.backup)
    }

    /// A follower waits as the backup (F5).
    #[inline]
    #[cfg(all(test, not(loom)))]
    pub(super) fn backup(&self) -> bool {
        self.backup
    }

    /// F5: a backup waits whose own timer fires within [`BACKUP_GRACE`] of `now`: a
    /// hand-on may leave it asleep, as it comes anyway.
    #[inline]
    fn backup_comes(&self, now: Instant) -> bool {
        self.backup
            && self
                .backup_at
                .is_some_and(|t| now.checked_add(BACKUP_GRACE).is_some_and(|soon| t <= soon))
    }

    /// Records a leader for `head` that means to take it at `take_at` and then never runs
    /// again (a thread the machine keeps off its CPU), for the tests of F5.
    #[cfg(all(test, not(loom)))]
    pub(super) fn pretend_leader(&mut self, head: Ticks, take_at: Instant) {
        self.leader = true;
        self.lead_until = head;
        self.lead_take_at = Some(take_at);
    }
}

/// The waiters' condition variables and the spinners' hint, beside the lock.
pub(super) struct Signals {
    /// Only the leader waits here (F1, F2).
    leader_cv: Condvar,
    /// Only the backup waits here (F5).
    backup_cv: Condvar,
    /// Every other taker (F2, F3).
    followers_cv: Condvar,
    /// Bumped with every wake-up sent, so a spinning taker notices without the lock. A
    /// hint only (module notes); `std`'s atomic in every build.
    head_changes: StatCounter,
}

impl fmt::Debug for Signals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signals").finish_non_exhaustive()
    }
}

impl Signals {
    pub(super) fn new() -> Self {
        Signals {
            leader_cv: Condvar::new(),
            backup_cv: Condvar::new(),
            followers_cv: Condvar::new(),
            head_changes: StatCounter::new(0),
        }
    }

    /// F2: the head changed (or the time moved): the leader re-arms, or with no leader and
    /// a head (`has_head`) one follower takes the lead, the backup first (F5). Call under
    /// the waiters' lock.
    #[inline]
    pub(super) fn head_changed(&self, w: &Waiters, has_head: bool) {
        // Relaxed: a hint (module notes).
        self.head_changes.fetch_add(1, Ordering::Relaxed);
        if w.leader {
            self.leader_cv.notify_one();
        } else if has_head {
            self.wake_a_follower(w);
        }
    }

    /// F3: a taker is leaving; with a head left (`has_head`), no leader and followers
    /// waiting, one follower takes its place, the backup first (F5). Call under the
    /// waiters' lock.
    #[inline]
    pub(super) fn hand_on(&self, w: &Waiters, has_head: bool) {
        if has_head && !w.leader && w.followers() > 0 && !w.backup_comes(Instant::now()) {
            self.head_changes.fetch_add(1, Ordering::Relaxed);
            self.wake_a_follower(w);
        }
    }

    /// Wakes the backup if one waits, else one follower (F5: the backup is awake soonest
    /// on its own timer, and a woken backup leaves room for the next).
    #[inline]
    fn wake_a_follower(&self, w: &Waiters) {
        if w.backup {
            self.backup_cv.notify_one();
        } else if w.followers > 0 {
            self.followers_cv.notify_one();
        }
    }

    /// Wakes every waiting taker; each re-checks its condition. Call under the waiters'
    /// lock (a taker between its check and its wait holds it).
    pub(super) fn wake_all(&self) {
        self.head_changes.fetch_add(1, Ordering::Relaxed);
        self.leader_cv.notify_all();
        self.backup_cv.notify_all();
        self.followers_cv.notify_all();
    }
}

/// What leaves a `take`: a queue's way to perform F3 (its lock, its head). Implemented by
/// the blocking queue's lock guard and by the sharded queue.
pub(super) trait HandOn {
    /// F3: if a head is left, nobody leads and followers wait, wake one follower.
    fn hand_on(&mut self);
}

/// The guard every way out of a `take` goes through: dropping it performs F3 (a
/// returned element, a timeout, a stop condition, or a panic that unwinds through the
/// caller's stop condition). It derefs to what it guards, so the take loop works through
/// it.
pub(super) struct Leaving<Q: HandOn>(pub(super) Q);

impl<Q: HandOn> Deref for Leaving<Q> {
    type Target = Q;
    #[inline]
    fn deref(&self) -> &Q {
        &self.0
    }
}

impl<Q: HandOn> DerefMut for Leaving<Q> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Q {
        &mut self.0
    }
}

impl<Q: HandOn> Drop for Leaving<Q> {
    #[inline]
    fn drop(&mut self) {
        self.0.hand_on();
    }
}

/// One `take`'s waiting state: its timeout and what it did so far.
#[derive(Debug)]
pub(super) struct Taker {
    /// The caller's real-time timeout.
    timeout: Option<Instant>,
    /// The queue runs on the real clock (only then does it sleep timed, spin, or apply F4).
    real: bool,
    /// This take already spun once for a new head (`park.rs`: one idle spin per take).
    spun: bool,
    /// The timeout passed at the end of the last wait.
    expired: bool,
}

impl Taker {
    pub(super) fn new(clock: &Clock, timeout: Option<Instant>) -> Self {
        Taker {
            timeout,
            real: matches!(clock, Clock::Real { .. }),
            spun: false,
            expired: false,
        }
    }

    /// The timeout passed: the caller takes one last look at the head and returns (Java's
    /// timed `poll`).
    #[inline]
    pub(super) fn expired(&self) -> bool {
        self.expired
    }

    /// One wait, with the lock held in `guard` on entry and on return. `head` is the
    /// earliest deadline as the caller saw it under this lock, not due (or `None`);
    /// `waiters` finds the waiters' state in the guarded data.
    ///
    /// The taker leads if there is a head, nobody leads and (F4) its timeout outlasts the
    /// head's delay; else it follows. After each change to the waiters' state (joining,
    /// then leaving) it calls `sync` under the lock; before it sleeps, `sync` returns the
    /// earliest head now, and if that is earlier than the one it decided on the taker
    /// returns at once to re-decide (the sharded queue's Q1 re-scan; the blocking queue,
    /// whose head cannot change under its lock, returns `head`). On return the taker is
    /// neither leader nor follower again, and [`expired`](Self::expired) says whether its
    /// timeout passed.
    pub(super) fn wait<T>(
        &mut self,
        signals: &Signals,
        guard: &mut MutexGuard<'_, T>,
        waiters: fn(&mut T) -> &mut Waiters,
        clock: &Clock,
        head: Option<Ticks>,
        mut sync: impl FnMut(&Waiters) -> Ticks,
    ) {
        let timeout = self.timeout;
        let lead = match head {
            Some(h) if !waiters(guard).leader => {
                // F4: a taker that would give up before the head is due does not lead.
                !self.real || timeout.is_none_or(|t| t >= clock.instant_of(h))
            }
            _ => false,
        };
        let mut waiting = WaitCx {
            signals,
            guard,
            waiters,
            clock,
            sync: &mut sync,
        };
        let timed_out = match head.filter(|_| lead) {
            Some(h) => self.lead(&mut waiting, h),
            None => self.follow(&mut waiting, head),
        };
        self.expired = timed_out && timeout.is_some_and(|t| Instant::now() >= t);
    }

    /// [`wait`](Self::wait) as the leader of head `h` (F1): until `h` is due on `park.rs`'s
    /// plan, or until a new head wakes it (F2). `true` if its timed wait ran out.
    fn lead<T>(&mut self, cx: &mut WaitCx<'_, '_, T>, h: Ticks) -> bool {
        let timeout = self.timeout;
        let w = cx.waiters();
        w.leader = true; // F1
        w.lead_until = h;
        let fired = if cx.sync() < h {
            false // an earlier head arrived meanwhile: re-decide
        } else if self.real {
            let clock = cx.clock;
            let (plan, take_at) = cx.waiters().park.plan_lead(clock, h, timeout);
            let w = cx.waiters();
            w.lead_take_at = Some(take_at);
            let long = take_at.saturating_duration_since(Instant::now()) >= RECRUIT_AFTER;
            if long && !w.backup && !w.recruiting && w.followers > 0 {
                // F5: a follower asleep without a timer comes back as the backup.
                w.recruiting = true;
                cx.signals.followers_cv.notify_one();
            }
            match plan {
                Lead::Sleep(until) => {
                    probe!(LeaderSleep);
                    wait(&cx.signals.leader_cv, cx.guard, until)
                }
                Lead::Spin(until) => {
                    probe!(LeaderSpin);
                    let changes = &cx.signals.head_changes;
                    let spun = unlocked(cx.guard, || park::spin(changes, until));
                    cx.waiters().park.charge_lead(spun);
                    timeout.is_some_and(|t| Instant::now() >= t)
                }
            }
        } else {
            probe!(LeaderSleep);
            wait(&cx.signals.leader_cv, cx.guard, timeout)
        };
        probe!(Take);
        let w = cx.waiters();
        w.leader = false; // F1: cleared by the leader itself
        w.lead_until = NO_HEAD;
        w.lead_take_at = None;
        cx.sync();
        fired
    }

    /// [`wait`](Self::wait) as a follower: the backup of a leader with a head (F5), one
    /// idle spin for a new head of an empty queue, or an untimed sleep until a wake-up or
    /// the caller's timeout. `true` if its timed wait ran out.
    fn follow<T>(&mut self, cx: &mut WaitCx<'_, '_, T>, head: Option<Ticks>) -> bool {
        let timeout = self.timeout;
        let w = cx.waiters();
        // F5: the first follower behind a leader with a head backs it up.
        let backup = head.is_some() && w.leader && !w.backup;
        if backup {
            w.backup = true;
        } else {
            w.followers += 1;
        }
        let now_head = cx.sync();
        let fired = if !cx.waiters().leader && now_head < head.unwrap_or(NO_HEAD) {
            false // a head nobody leads arrived meanwhile: re-decide
        } else if backup {
            // On the real clock the backup's timer is set a grace period past the moment
            // the leader means to take its head (or this taker's own, if later); on
            // virtual time it waits for a wake-up, as a follower does.
            let until = match (self.real, head) {
                (true, Some(h)) => {
                    let clock = cx.clock;
                    let w = cx.waiters();
                    let own = clock.instant_of(w.park.wake_tick(h));
                    let take_at = w.lead_take_at.map_or(own, |t| t.max(own));
                    take_at.checked_add(BACKUP_GRACE)
                }
                _ => None,
            };
            // Only its own timer, not the caller's timeout, lets a hand-on skip it.
            cx.waiters().backup_at = until.filter(|&u| timeout.is_none_or(|t| u <= t));
            probe!(BackupSleep);
            wait(&cx.signals.backup_cv, cx.guard, earliest(until, timeout))
        } else if self.real && !self.spun && head.is_none() {
            match cx.waiters().park.begin_idle_spin(timeout) {
                // One taker of an empty queue spins briefly for a new head before parking
                // (`park.rs`). With a head, the leader's plan covers it.
                Some(until) => {
                    self.spun = true;
                    probe!(IdleSpin);
                    let changes = &cx.signals.head_changes;
                    let spun = unlocked(cx.guard, || park::spin(changes, until));
                    cx.waiters().park.end_idle_spin(spun);
                    timeout.is_some_and(|t| Instant::now() >= t)
                }
                None => {
                    probe!(FollowerSleep);
                    wait(&cx.signals.followers_cv, cx.guard, timeout)
                }
            }
        } else {
            probe!(FollowerSleep);
            wait(&cx.signals.followers_cv, cx.guard, timeout)
        };
        probe!(Take);
        let w = cx.waiters();
        if backup {
            w.backup = false;
            w.backup_at = None;
        } else {
            w.followers -= 1;
        }
        w.recruiting = false;
        cx.sync();
        fired
    }
}

/// What one [`Taker::wait`] works with: the queue's signals, its lock held in `guard`, the
/// way to the waiters' state in the guarded data, the clock, and the caller's `sync`.
struct WaitCx<'a, 'g, T> {
    signals: &'a Signals,
    guard: &'a mut MutexGuard<'g, T>,
    waiters: fn(&mut T) -> &mut Waiters,
    clock: &'a Clock,
    sync: &'a mut dyn FnMut(&Waiters) -> Ticks,
}

impl<T> WaitCx<'_, '_, T> {
    fn waiters(&mut self) -> &mut Waiters {
        (self.waiters)(self.guard)
    }

    /// The caller's `sync` after a change to the waiters' state: the earliest head now.
    fn sync(&mut self) -> Ticks {
        let w = (self.waiters)(self.guard);
        (self.sync)(w)
    }
}

/// One wait on `cv`, timed if `until` is given; `true` if it timed out.
pub(super) fn wait<T>(cv: &Condvar, guard: &mut MutexGuard<'_, T>, until: Option<Instant>) -> bool {
    match until {
        Some(until) => cv.wait_until(guard, until),
        None => {
            cv.wait(guard);
            false
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// F5: a hand-on leaves the backup asleep only when the backup's own timer is due
    /// within the grace, and never when it has none (virtual time, or only the caller's
    /// timeout).
    #[test]
    fn a_hand_on_skips_only_a_backup_whose_timer_is_due_within_the_grace() {
        let now = Instant::now();
        let mut w = Waiters::new(SpinPolicy::Adaptive, Duration::ZERO);
        w.backup_at = Some(now);
        assert!(!w.backup_comes(now), "no backup waits");
        w.backup = true;
        assert!(w.backup_comes(now));
        w.backup_at = Some(now + BACKUP_GRACE);
        assert!(w.backup_comes(now), "due at the grace's end");
        w.backup_at = Some(now + BACKUP_GRACE + Duration::from_micros(1));
        assert!(!w.backup_comes(now), "due later: woken");
        w.backup_at = None;
        assert!(!w.backup_comes(now), "no timer of its own: woken");
    }
}
