//! [`NextRun`]: where a periodic task goes at its next re-queue, the one owner of that
//! decision beside the schedule's rule. Its handles move it (`reschedule`), ask for one
//! extra run (`run_now`), and the re-queue after a run asks it where the task goes
//! ([`NextRun::at_requeue`]). Every transition is a method that takes the home shard's
//! guard as proof of its lock (T4 in `task/mod.rs`).
//!
//! # States
//! Two [`LockedCell`]s, `at` and `after`, encode one [`Planned`] state:
//!
//! | state                          | `at`          | `after`                       |
//! |--------------------------------|---------------|-------------------------------|
//! | `Rule`                         | `EMPTY`       | `EMPTY`                       |
//! | `Moved(t)`                     | `t`           | `EMPTY`                       |
//! | `ExtraPending { at: t, back }` | `t`           | `back` (never `EMPTY`)        |
//! | `ExtraQueued { back }`         | `EMPTY`       | `back` (never `EMPTY`)        |
//!
//! and `back`, what comes after the extra run, is a deadline or one of three sentinels:
//! `RULE_AFTER` (the rule, counted from the extra run: a fixed delay), `RULE_NOW` (the
//! rule's next deadline as the current run computes it: a fixed-rate task's grid or a
//! trigger's next time, known only at the re-queue; only while pending), `BACK_NEVER`
//! (the rule's `NEVER`, which a cell cannot hold as itself: it is `EMPTY`).
//!
//! The transitions:
//!
//! | from \ call                 | `move_to(t)` | `clear` | `ask_extra(now)`, queued at `d` | `ask_extra(now)`, out of the queue      | `at_requeue(next)`                   |
//! |-----------------------------|--------------|---------|---------------------------------|-----------------------------------------|--------------------------------------|
//! | `Rule`                      | `Moved(t)`   | `Rule`  | `ExtraQueued{d or RULE_AFTER}`  | `ExtraPending{now, RULE_NOW or AFTER}`  | `next`, `Rule`                       |
//! | `Moved(t)`                  | `Moved(t')`  | `Rule`  | `ExtraQueued{t or RULE_AFTER}`  | `ExtraPending{now, t or RULE_AFTER}`    | `t`, `Rule`                          |
//! | `ExtraPending{a, b}`        | `Moved(t)`   | `Rule`  | merged                          | merged                                  | `a`, `ExtraQueued{b, RULE_NOW: next}`|
//! | `ExtraQueued{b}`            | `Moved(t)`   | `Rule`  | merged (the extra is queued)    | `ExtraPending{now, b}` (it is running)  | `b` (or `next`), `Rule`              |
//!
//! A fixed-delay task always goes back by `RULE_AFTER`: its delay counts from the extra
//! run. A task is queued in `Moved` only before its first run (a catch-up's, due at once:
//! [`NextRun::new`]); an extra run asked for then is that run. `ExtraQueued` at a re-queue means the run that ended was the extra one: the state
//! is entered only when the extra run's entry is queued (a re-key to `now`, or the
//! re-queue of `ExtraPending` at its `at`), and it is left by any move (`clear`,
//! `move_to`), so the next run of the task is that entry's.
//!
//! # Invariants
//! - NX1: `at` and `after` are read and written only under the task's home shard's lock
//!   (T4), and always hold one of the four encodings above; a deadline stored in either
//!   is at most `FAR_FUTURE` (C1 in `clock.rs`), which keeps it apart from the sentinels
//!   at the top of the `u64` range (asserted in debug builds).

use crate::clock::{Ticks, FAR_FUTURE, NEVER};
use crate::queue::sharded::ShardGuard;
use crate::queue::{LockedCell, Timed, Tracked};
use crate::sync::{AtomicBool, Ordering};

/// Nothing in a cell.
const EMPTY: u64 = u64::MAX;
/// After the extra run, the rule, counted from it (a fixed delay).
const RULE_AFTER: u64 = u64::MAX - 1;
/// After the extra run, the rule's next deadline as the current run computes it.
const RULE_NOW: u64 = u64::MAX - 2;
/// After the extra run, the rule's [`NEVER`] (which is [`EMPTY`] itself).
const BACK_NEVER: u64 = u64::MAX - 3;

// C1 keeps every deadline below the sentinels. Update this if a sentinel is added below.
const _: () = assert!(FAR_FUTURE < BACK_NEVER && NEVER == EMPTY);

/// What comes after an extra run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Back {
    /// The rule, counted from the extra run (a fixed delay).
    RuleAfter,
    /// The rule's next deadline as the run in progress computes it (fixed rate, trigger).
    RuleNow,
    /// This deadline (or [`NEVER`]).
    At(Ticks),
}

impl Back {
    fn encode(self) -> u64 {
        match self {
            Back::RuleAfter => RULE_AFTER,
            Back::RuleNow => RULE_NOW,
            Back::At(NEVER) => BACK_NEVER,
            Back::At(t) => checked(t),
        }
    }

    fn decode(v: u64) -> Back {
        match v {
            RULE_AFTER => Back::RuleAfter,
            RULE_NOW => Back::RuleNow,
            BACK_NEVER => Back::At(NEVER),
            t => Back::At(t),
        }
    }
}

/// A deadline about to be stored in a cell (NX1).
fn checked(t: Ticks) -> u64 {
    debug_assert!(
        t <= FAR_FUTURE,
        "NX1: a stored deadline is at most FAR_FUTURE (C1)"
    );
    t
}

/// The decoded state (module notes, "States").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Planned {
    /// The rule decides.
    Rule,
    /// A handle moved the next run here while the task was out of the queue.
    Moved(Ticks),
    /// An extra run was asked for while the task was out of the queue: at the re-queue it
    /// goes to `at`, and then `back`.
    ExtraPending { at: Ticks, back: Back },
    /// The extra run's entry is queued (or it is running): after it, `back`.
    ExtraQueued { back: Back },
}

/// What `run_now` must do after [`NextRun::ask_extra`].
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Extra {
    /// An extra run is already asked for and not started: it stands for this one.
    Merged,
    /// The task is queued: re-key its entry to now; it goes back after that run.
    RekeyNow,
    /// The task is out of the queue (running, or taken for a run): its re-queue puts it
    /// at the extra run's deadline.
    AfterThisRun,
}

/// Where a periodic task goes at its next re-queue, beside its rule (module notes).
#[derive(Debug)]
pub(crate) struct NextRun {
    at: LockedCell,
    after: LockedCell,
}

impl NextRun {
    /// `Rule`, or `Moved(at)` before the task is shared (`Exclusive::catch_up`: one run
    /// at once, then the first deadline as scheduled).
    pub(crate) fn new(at: Option<Ticks>) -> Self {
        NextRun {
            at: LockedCell::new(at.map_or(EMPTY, checked)),
            after: LockedCell::new(EMPTY),
        }
    }

    fn load<E: Timed + Tracked, X>(&self, q: &ShardGuard<'_, E, X>) -> Planned {
        match (q.read(&self.at), q.read(&self.after)) {
            (EMPTY, EMPTY) => Planned::Rule,
            (t, EMPTY) => Planned::Moved(t),
            (EMPTY, back) => Planned::ExtraQueued {
                back: Back::decode(back),
            },
            (at, back) => Planned::ExtraPending {
                at,
                back: Back::decode(back),
            },
        }
    }

    fn store<E: Timed + Tracked, X>(&self, q: &mut ShardGuard<'_, E, X>, state: Planned) {
        let (at, after) = match state {
            Planned::Rule => (EMPTY, EMPTY),
            Planned::Moved(t) => (checked(t), EMPTY),
            Planned::ExtraPending { at, back } => (checked(at), back.encode()),
            Planned::ExtraQueued { back } => {
                debug_assert!(back != Back::RuleNow, "resolved at the re-queue");
                (EMPTY, back.encode())
            }
        };
        let _ = q.replace(&self.at, at);
        let _ = q.replace(&self.after, after);
    }

    /// An explicit move of a task out of the queue (`reschedule` while it runs): its next
    /// run is at `at`, and an extra run asked for before is forgotten.
    pub(crate) fn move_to<E: Timed + Tracked, X>(&self, q: &mut ShardGuard<'_, E, X>, at: Ticks) {
        self.store(q, Planned::Moved(at));
    }

    /// An explicit move of a queued task (`reschedule`, which re-keys its entry): an extra
    /// run asked for before is forgotten, and the rule decides after the moved run.
    pub(crate) fn clear<E: Timed + Tracked, X>(&self, q: &mut ShardGuard<'_, E, X>) {
        self.store(q, Planned::Rule);
    }

    /// `run_now`: one extra run as soon as a worker is free. `queued`: the deadline of the
    /// task's entry if it is queued; `fixed_delay`: its rule counts from a run's end (it
    /// then goes back by the rule, from the extra run).
    pub(crate) fn ask_extra<E: Timed + Tracked, X>(
        &self,
        q: &mut ShardGuard<'_, E, X>,
        now: Ticks,
        queued: Option<Ticks>,
        fixed_delay: bool,
    ) -> Extra {
        let by_rule = |back: Back| if fixed_delay { Back::RuleAfter } else { back };
        let (next, extra) = match (self.load(q), queued) {
            (Planned::ExtraPending { .. }, _) | (Planned::ExtraQueued { .. }, Some(_)) => {
                return Extra::Merged;
            }
            // Queued and moved: only a catch-up's first run (`new`), due at once. The extra
            // run is that run, and then the deadline it was to go on at.
            (Planned::Moved(t), Some(_)) => (
                Planned::ExtraQueued {
                    back: by_rule(Back::At(t)),
                },
                Extra::RekeyNow,
            ),
            (_, Some(d)) => (
                Planned::ExtraQueued {
                    back: by_rule(Back::At(d)),
                },
                Extra::RekeyNow,
            ),
            (Planned::Rule, None) => (
                Planned::ExtraPending {
                    at: now,
                    back: by_rule(Back::RuleNow),
                },
                Extra::AfterThisRun,
            ),
            (Planned::Moved(t), None) => (
                Planned::ExtraPending {
                    at: now,
                    back: by_rule(Back::At(t)),
                },
                Extra::AfterThisRun,
            ),
            // The extra run itself is running: one more after it, then where it went back to.
            (Planned::ExtraQueued { back }, None) => {
                (Planned::ExtraPending { at: now, back }, Extra::AfterThisRun)
            }
        };
        self.store(q, next);
        extra
    }

    /// The re-queue after a run: where the task goes, given the rule's next deadline
    /// `next` for the run that ended (module notes, the last column).
    pub(crate) fn at_requeue<E: Timed + Tracked, X>(
        &self,
        q: &mut ShardGuard<'_, E, X>,
        next: Ticks,
    ) -> Ticks {
        let (go, then) = match self.load(q) {
            Planned::Rule => return next,
            Planned::Moved(t) => (t, Planned::Rule),
            Planned::ExtraPending { at, back } => {
                let back = match back {
                    Back::RuleNow => Back::At(next),
                    b => b,
                };
                (at, Planned::ExtraQueued { back })
            }
            Planned::ExtraQueued { back } => match back {
                Back::At(t) => (t, Planned::Rule),
                Back::RuleAfter | Back::RuleNow => (next, Planned::Rule),
            },
        };
        self.store(q, then);
        go
    }
}

/// What only a periodic task has for its handles: where it goes next ([`NextRun`]) and
/// its pause switch (`ScheduledFuture::pause`).
#[derive(Debug)]
pub(crate) struct PeriodicControl {
    pub(crate) next: NextRun,
    /// Paused: each run that comes due is skipped and counted, and the rule goes on from
    /// it. `Relaxed`: a switch each run reads once; nothing else is published through it.
    paused: AtomicBool,
}

impl PeriodicControl {
    pub(crate) fn new(at: Option<Ticks>) -> Self {
        PeriodicControl {
            next: NextRun::new(at),
            paused: AtomicBool::new(false),
        }
    }

    /// Whether the task is paused.
    #[inline]
    pub(crate) fn is_paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed) // a switch (the field's note)
    }

    /// Sets the switch; `true` if this call changed it (of two racing calls, one).
    pub(crate) fn set_paused(&self, paused: bool) -> bool {
        self.paused.swap(paused, Ordering::Relaxed) != paused // a switch (the field's note)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::queue::sharded::ShardedQueue;
    use crate::queue::{Position, SpinPolicy, TimedEntry};
    use crate::sync::Arc;
    use std::time::Duration;

    type Q = ShardedQueue<TimedEntry<Arc<(u32, Position)>>, ()>;

    fn queue() -> Q {
        Q::new(
            Clock::Manual(crate::ManualClock::new()),
            1,
            SpinPolicy::Adaptive,
            Duration::ZERO,
            || (),
        )
    }

    /// The state after `steps`, each given the guard, from a fresh `NextRun`.
    fn after(
        start: Option<Ticks>,
        steps: impl FnOnce(&NextRun, &mut ShardGuard<'_, TimedEntry<Arc<(u32, Position)>>, ()>),
    ) -> Planned {
        let q = queue();
        let next = NextRun::new(start);
        let mut g = q.lock(0);
        steps(&next, &mut g);
        next.load(&g)
    }

    #[test]
    fn a_move_out_of_the_queue_is_read_once_by_the_requeue() {
        let q = queue();
        let next = NextRun::new(None);
        let mut g = q.lock(0);
        next.move_to(&mut g, 50);
        assert_eq!(next.load(&g), Planned::Moved(50));
        assert_eq!(next.at_requeue(&mut g, 10), 50, "the move, not the rule");
        assert_eq!(next.at_requeue(&mut g, 20), 20, "then the rule again");
    }

    #[test]
    fn an_extra_run_of_a_queued_task_goes_back_to_its_deadline() {
        let q = queue();
        let next = NextRun::new(None);
        let mut g = q.lock(0);
        assert_eq!(next.ask_extra(&mut g, 5, Some(60), false), Extra::RekeyNow);
        assert_eq!(
            next.ask_extra(&mut g, 6, Some(5), false),
            Extra::Merged,
            "queued already"
        );
        assert_eq!(
            next.at_requeue(&mut g, 65),
            60,
            "the extra run ended: back to 60"
        );
        assert_eq!(next.load(&g), Planned::Rule);
    }

    #[test]
    fn a_fixed_delay_task_goes_back_by_its_rule() {
        let q = queue();
        let next = NextRun::new(None);
        let mut g = q.lock(0);
        assert_eq!(next.ask_extra(&mut g, 5, Some(60), true), Extra::RekeyNow);
        assert_eq!(
            next.at_requeue(&mut g, 35),
            35,
            "the delay from the extra run"
        );
        assert_eq!(next.ask_extra(&mut g, 40, None, true), Extra::AfterThisRun);
        assert_eq!(next.at_requeue(&mut g, 70), 40, "the extra run first");
        assert_eq!(next.at_requeue(&mut g, 75), 75, "then the delay from it");
    }

    #[test]
    fn an_extra_run_asked_during_a_run_comes_after_it_and_keeps_the_grid() {
        let q = queue();
        let next = NextRun::new(None);
        let mut g = q.lock(0);
        assert_eq!(next.ask_extra(&mut g, 12, None, false), Extra::AfterThisRun);
        assert_eq!(next.ask_extra(&mut g, 13, None, false), Extra::Merged);
        assert_eq!(next.at_requeue(&mut g, 20), 12, "the extra run, at once");
        assert_eq!(
            next.at_requeue(&mut g, 22),
            20,
            "then the grid the run computed"
        );
        assert_eq!(next.at_requeue(&mut g, 30), 30);
    }

    #[test]
    fn an_extra_run_asked_during_the_extra_run_comes_after_it() {
        let q = queue();
        let next = NextRun::new(None);
        let mut g = q.lock(0);
        assert_eq!(next.ask_extra(&mut g, 5, Some(60), false), Extra::RekeyNow);
        // The extra run was taken (out of the queue): one more after it.
        assert_eq!(next.ask_extra(&mut g, 7, None, false), Extra::AfterThisRun);
        assert_eq!(next.at_requeue(&mut g, 15), 7);
        assert_eq!(
            next.at_requeue(&mut g, 17),
            60,
            "then back where the first went"
        );
    }

    #[test]
    fn a_move_before_an_extra_run_is_where_it_goes_back_to() {
        let q = queue();
        let next = NextRun::new(None);
        let mut g = q.lock(0);
        next.move_to(&mut g, 90);
        assert_eq!(next.ask_extra(&mut g, 12, None, false), Extra::AfterThisRun);
        assert_eq!(next.at_requeue(&mut g, 20), 12);
        assert_eq!(
            next.at_requeue(&mut g, 22),
            90,
            "the move survives the extra run"
        );
    }

    #[test]
    fn a_move_forgets_an_extra_run() {
        assert_eq!(
            after(None, |n, g| {
                let _ = n.ask_extra(g, 12, None, false);
                n.move_to(g, 70);
            }),
            Planned::Moved(70)
        );
        assert_eq!(
            after(None, |n, g| {
                let _ = n.ask_extra(g, 12, Some(60), false);
                n.clear(g);
            }),
            Planned::Rule
        );
    }

    #[test]
    fn a_catch_up_runs_once_and_then_goes_on_at_its_grid() {
        let q = queue();
        let next = NextRun::new(Some(100));
        let mut g = q.lock(0);
        assert_eq!(
            next.ask_extra(&mut g, 3, Some(0), false),
            Extra::RekeyNow,
            "the catch-up"
        );
        assert_eq!(
            next.at_requeue(&mut g, 10),
            100,
            "its grid after the one run"
        );
        assert_eq!(next.at_requeue(&mut g, 200), 200);
    }

    #[test]
    fn never_is_kept_apart_from_an_empty_cell() {
        let q = queue();
        let next = NextRun::new(None);
        let mut g = q.lock(0);
        assert_eq!(next.ask_extra(&mut g, 12, None, false), Extra::AfterThisRun);
        assert_eq!(next.at_requeue(&mut g, NEVER), 12);
        assert_eq!(
            next.load(&g),
            Planned::ExtraQueued {
                back: Back::At(NEVER)
            }
        );
        assert_eq!(
            next.at_requeue(&mut g, 30),
            NEVER,
            "back to never, not to the rule"
        );
    }
}
