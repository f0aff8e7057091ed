//! How a taker waits on the real clock: when to sleep, when to spin, the spin budget and
//! the timer precision (tokio keeps the same concern in `multi_thread/park.rs`). The
//! waiting protocol (`waiters.rs`) owns the condition variables and asks this module what
//! to do; virtual time never gets here (a `ManualClock` leader waits untimed for
//! `advance`).
//!
//! # Design
//! A futex wake-up on a loaded machine costs tens of microseconds, more than the wait it
//! ends when deadlines are close. So two short spins replace a sleep:
//!
//! - the leader sleeps until `LEADER_SPIN` before the head's deadline and spins the rest
//!   with the lock released ([`Park::plan_lead`] returns [`Lead::Spin`]);
//! - one taker of an empty queue at a time spins `IDLE_SPIN` for a new head before it
//!   parks, so a burst of submissions finds a taker awake ([`Park::begin_idle_spin`]).
//!
//! A spinner watches the waiters' `head_changes` counter (`waiters.rs`, [`spin`]) and re-checks
//! everything under the lock when it stops, exactly as after a wake-up.
//!
//! Under [`SpinPolicy::Adaptive`] (the default), spinning is capped at `1 / SPIN_SHARE` of
//! every `SPIN_WINDOW` of wall time per queue (5 %); `Unbounded` lifts the cap and `Never`
//! never spins; an idle spin that a new head ends is not charged (it replaced a futex
//! wake-up). Past the cap, a leader whose deadline is that close sleeps at least
//! `LEADER_SPIN` and takes what fell due meanwhile in one go (a longer [`Lead::Sleep`]), so
//! a dense schedule costs neither a spinning core nor a futex round trip per deadline.
//! A window that spent its whole share was such a schedule, and the next `DENSE_REST`
//! windows start no spin at all: there the coarse sleeps set the lateness, and the spin
//! buys little of it back for a fifth of the CPU (workload W5, `docs/BENCHMARKS.md`,
//! "W5: the leader's spin"), so a dense schedule spins at most a fifth of the share.
//!
//! With a timer precision `p` ([`Builder::timer_precision`](crate::Builder::timer_precision)),
//! the leader wakes at the head's deadline rounded up to a multiple of `p` (of the clock's
//! ticks), so every deadline in one such slot is served by one wake-up, and it never spins
//! once `p` reaches `LEADER_SPIN`: the user allowed the lateness a spin would save. A task
//! is still popped only once its own deadline has passed.
//!
//! # Invariants
//! - P1: at most one idle spinner per queue (`Park::spinning`).
//! - P2: the time charged per window never exceeds the window's share by more than one
//!   spin (a spin starts only while `spent < share`, and lasts at most `LEADER_SPIN`).
//! - P3: no spin starts in the `DENSE_REST` windows after one that spent its share (idle
//!   windows count: a pool that went quiet spins again once they have passed).
//!
//! # Ordering
//! [`Park`] lives in the queue's `Waiters` (`waiters.rs`), under the lock that guards them
//! (the blocking queue's one lock, the sharded queue's coordinator). `head_changes` is a hint read
//! `Relaxed` while spinning: nothing is published through it, and the spinner re-checks
//! the heap under the lock.

use crate::sync::Ordering;
use std::time::{Duration, Instant};

use crate::clock::{Clock, Ticks};
use crate::sync::StatCounter;

/// How long before the head's deadline the leader stops sleeping and spins.
const LEADER_SPIN: Duration = Duration::from_micros(50);
/// [`LEADER_SPIN`] in ticks: a precision at least this coarse never spins.
const LEADER_SPIN_TICKS: Ticks = LEADER_SPIN.as_nanos() as Ticks;
/// How long one taker of an empty queue spins for a new head before it parks.
const IDLE_SPIN: Duration = Duration::from_micros(20);
/// The spin budget's window of wall time.
const SPIN_WINDOW: Duration = Duration::from_millis(10);
/// Spinning may use `1 / SPIN_SHARE` of each window (5 %).
const SPIN_SHARE: u32 = 20;
/// After a window that spent its share, this many windows start no spin (P3): a dense
/// schedule spins in one window of `DENSE_REST + 1`, at most 1 % of wall time.
const DENSE_REST: u32 = 4;

/// How a pool's workers wait on the real clock: whether they may spin instead of sleeping
/// (set with [`Builder::spin_policy`](crate::Builder::spin_policy)). A `ManualClock`
/// never spins, whatever the policy.
///
/// ```text
/// policy      leader near a deadline           idle worker            CPU cost
/// Adaptive    spins the last 50 µs             spins 20 µs, then      spinning capped at 5 %
///             (within the cap), else sleeps    parks                  of wall time per pool,
///                                                                     1 % in a dense schedule
/// Unbounded   always spins the last 50 µs      spins 20 µs, then      uncapped: a dense schedule
///                                              parks                  keeps a core busy
/// Never       sleeps until the deadline        parks at once          none: every wait is a sleep
/// ```
///
/// A sleep ends as late as the operating system wakes the thread: tens of microseconds
/// on a loaded machine (`docs/BENCHMARKS.md` measures it), which is the precision
/// `Never` gives.
///
/// ```
/// use schedpool::{ScheduledThreadPoolExecutor, SpinPolicy};
///
/// let pool = ScheduledThreadPoolExecutor::builder()
///     .core_pool_size(1)
///     .spin_policy(SpinPolicy::Never) // a server that must not burn CPU
///     .build();
/// assert_eq!(pool.submit(|| 1).unwrap().get().unwrap(), 1);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SpinPolicy {
    /// Spin near deadlines and briefly when idle, at most 5 % of wall time per pool and 1 %
    /// once a schedule is dense enough to reach that cap (the default).
    #[default]
    Adaptive,
    /// Spin near every deadline and briefly when idle, without a cap: the best precision
    /// under dense schedules, at the cost of a busy core.
    Unbounded,
    /// Never spin: every wait sleeps.
    Never,
}

/// The waiting policy's state for one queue; guarded by the queue's lock (the
/// coordinator's, for the sharded queue).
#[derive(Debug)]
pub(super) struct Park {
    policy: SpinPolicy,
    window_start: Instant,
    spent: Duration,
    /// An idle taker is spinning with the lock released (P1).
    spinning: bool,
    /// The timer precision in ticks (nanoseconds); 0 for none.
    precision: Ticks,
    /// Windows left, the current one included, in which no spin starts (P3).
    rest: u32,
}

/// What the leader does next (real clock).
#[derive(Debug)]
pub(super) enum Lead {
    /// Sleep on the leader condition until this instant.
    Sleep(Option<Instant>),
    /// Spin until this instant, the lock released.
    Spin(Instant),
}

impl Park {
    pub(super) fn new(policy: SpinPolicy, precision: Duration) -> Self {
        Park {
            policy,
            window_start: Instant::now(),
            spent: Duration::ZERO,
            spinning: false,
            rest: 0,
            precision: u64::try_from(precision.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// The tick at which a leader wakes for a head due at `head`: the deadline rounded up
    /// to the precision (module notes); never earlier than the deadline.
    #[inline]
    pub(super) fn wake_tick(&self, head: Ticks) -> Ticks {
        if self.precision <= 1 {
            return head;
        }
        head.checked_next_multiple_of(self.precision)
            .unwrap_or(head)
    }

    /// Whether a spin may start at `now` (P2).
    fn allows(&mut self, now: Instant) -> bool {
        match self.policy {
            SpinPolicy::Never => return false,
            SpinPolicy::Unbounded => return true,
            SpinPolicy::Adaptive => {}
        }
        let share = SPIN_WINDOW / SPIN_SHARE;
        let elapsed = now.saturating_duration_since(self.window_start);
        if elapsed >= SPIN_WINDOW {
            // The window that ended rested one of its windows, or spent its share and
            // starts a rest (P3); the windows since, with no spin asked for, rested too.
            let idle = elapsed.as_nanos() / SPIN_WINDOW.as_nanos() - 1;
            let rest = if self.spent >= share {
                DENSE_REST
            } else {
                self.rest.saturating_sub(1)
            };
            self.rest = rest.saturating_sub(u32::try_from(idle).unwrap_or(u32::MAX));
            self.window_start = now;
            self.spent = Duration::ZERO;
        }
        self.rest == 0 && self.spent < share
    }

    /// The leader's plan for a head due at tick `head` of `clock` (the real clock), with
    /// the caller's `timeout`.
    /// Also returns when the leader means to take the head: the deadline as rounded to
    /// the precision, or the end of a coarse sleep past the budget.
    pub(super) fn plan_lead(
        &mut self,
        clock: &Clock,
        head: Ticks,
        timeout: Option<Instant>,
    ) -> (Lead, Instant) {
        let due = clock.instant_of(self.wake_tick(head));
        if self.policy == SpinPolicy::Never || self.precision >= LEADER_SPIN_TICKS {
            return (Lead::Sleep(earliest(Some(due), timeout)), due);
        }
        let spin_from = due.checked_sub(LEADER_SPIN).unwrap_or(due);
        let now = Instant::now();
        if now < spin_from {
            (Lead::Sleep(earliest(Some(spin_from), timeout)), due)
        } else if self.allows(now) {
            (Lead::Spin(earliest(Some(due), timeout).unwrap_or(due)), due)
        } else {
            // Out of budget: a dense schedule. Sleep at least LEADER_SPIN (a coarse timer,
            // as the default timer slack would give) and take what fell due meanwhile in
            // one go, instead of a futex round trip per deadline.
            let coarse = now.checked_add(LEADER_SPIN).map_or(due, |c| c.max(due));
            (Lead::Sleep(earliest(Some(coarse), timeout)), coarse)
        }
    }

    /// An idle taker (empty queue, first wait of this `take`) may spin until the returned
    /// instant; `None` if another one spins or the budget is spent. Marks it spinning
    /// (P1): the caller must call [`end_idle_spin`](Self::end_idle_spin).
    pub(super) fn begin_idle_spin(&mut self, timeout: Option<Instant>) -> Option<Instant> {
        if self.spinning || !self.allows(Instant::now()) {
            return None;
        }
        let until = earliest(crate::clock::timeout_at(IDLE_SPIN), timeout)?;
        self.spinning = true;
        Some(until)
    }

    /// Ends an idle spin begun with [`begin_idle_spin`](Self::begin_idle_spin).
    pub(super) fn end_idle_spin(&mut self, spun: Spun) {
        self.spinning = false;
        if !spun.new_head {
            self.spent += spun.length; // a spin a new head ended replaced a wake-up: free
        }
    }

    /// Charges a leader's spin.
    pub(super) fn charge_lead(&mut self, spun: Spun) {
        self.spent += spun.length;
    }
}

/// How a spin ended.
#[derive(Clone, Copy, Debug)]
pub(super) struct Spun {
    length: Duration,
    new_head: bool,
}

/// Spins until `until` or until `head_changes` moves. Call with the lock released.
pub(super) fn spin(head_changes: &StatCounter, until: Instant) -> Spun {
    // Relaxed: a hint (module notes).
    let seen = head_changes.load(Ordering::Relaxed);
    let start = Instant::now();
    loop {
        let now = Instant::now();
        let new_head = head_changes.load(Ordering::Relaxed) != seen;
        if new_head || now >= until {
            return Spun {
                length: now.saturating_duration_since(start),
                new_head,
            };
        }
        for _ in 0..16 {
            std::hint::spin_loop();
        }
    }
}

/// The earlier of two optional instants.
pub(super) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A head `d` from now on `clock`, and its instant.
    fn head_in(clock: &Clock, d: Duration) -> (Ticks, Instant) {
        let head = clock.deadline_after(d);
        (head, clock.instant_of(head))
    }

    #[test]
    fn never_sleeps_until_the_deadline_and_never_idles_spinning() {
        let mut p = Park::new(SpinPolicy::Never, Duration::ZERO);
        let clock = Clock::real();
        let (head, due) = head_in(&clock, Duration::from_micros(10));
        assert!(matches!(p.plan_lead(&clock, head, None).0, Lead::Sleep(Some(u)) if u == due));
        assert!(p.begin_idle_spin(None).is_none());
    }

    #[test]
    fn unbounded_spins_past_the_budget() {
        let mut p = Park::new(SpinPolicy::Unbounded, Duration::ZERO);
        let clock = Clock::real();
        p.charge_lead(Spun {
            length: SPIN_WINDOW,
            new_head: false,
        });
        let (head, due) = head_in(&clock, Duration::from_micros(10));
        assert!(matches!(p.plan_lead(&clock, head, None).0, Lead::Spin(u) if u == due));
        assert!(p.begin_idle_spin(None).is_some());
    }

    #[test]
    fn a_far_deadline_sleeps_until_the_spin_window() {
        let mut p = Park::new(SpinPolicy::Adaptive, Duration::ZERO);
        let clock = Clock::real();
        let (head, due) = head_in(&clock, Duration::from_secs(1));
        match p.plan_lead(&clock, head, None).0 {
            Lead::Sleep(Some(until)) => assert_eq!(until, due - LEADER_SPIN),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_near_deadline_spins_until_the_budget_is_spent() {
        let mut p = Park::new(SpinPolicy::Adaptive, Duration::ZERO);
        let clock = Clock::real();
        let (head, due) = head_in(&clock, Duration::from_micros(10));
        assert!(matches!(p.plan_lead(&clock, head, None).0, Lead::Spin(u) if u == due));
        p.charge_lead(Spun {
            length: SPIN_WINDOW,
            new_head: false,
        });
        assert!(
            matches!(p.plan_lead(&clock, head, None).0, Lead::Sleep(Some(u)) if u >= due),
            "past the budget the leader sleeps, never waking before the deadline"
        );
    }

    #[test]
    fn a_window_that_spent_its_share_rests_the_next_ones() {
        let mut p = Park::new(SpinPolicy::Adaptive, Duration::ZERO);
        let t0 = p.window_start;
        let window = |k: u32| t0 + SPIN_WINDOW * k;
        assert!(p.allows(t0));
        p.charge_lead(Spun {
            length: SPIN_WINDOW / SPIN_SHARE,
            new_head: false,
        });
        assert!(!p.allows(t0), "the share is spent");
        assert!(!p.allows(window(1)), "P3: the next window rests");
        for k in 2..=DENSE_REST {
            assert!(!p.allows(window(k)), "P3: window {k} rests");
        }
        assert!(p.allows(window(DENSE_REST + 1)), "the rest is over");
        // Idle windows rest too: after a dense window, a pool quiet for the rest's length
        // spins at once.
        p.charge_lead(Spun {
            length: SPIN_WINDOW,
            new_head: false,
        });
        assert!(
            !p.allows(window(2 * DENSE_REST + 1)),
            "one window of the rest left"
        );
        assert!(p.allows(window(2 * DENSE_REST + 2)));
        // A window that spins but stays within its share starts no rest.
        p.charge_lead(Spun {
            length: SPIN_WINDOW / SPIN_SHARE / 2,
            new_head: false,
        });
        assert!(p.allows(window(2 * DENSE_REST + 3)));
    }

    #[test]
    fn one_idle_spinner_at_a_time_and_a_new_head_is_not_charged() {
        let mut p = Park::new(SpinPolicy::Adaptive, Duration::ZERO);
        assert!(p.begin_idle_spin(None).is_some());
        assert!(p.begin_idle_spin(None).is_none(), "P1");
        p.end_idle_spin(Spun {
            length: SPIN_WINDOW,
            new_head: true,
        });
        assert!(p.begin_idle_spin(None).is_some(), "not charged");
        p.end_idle_spin(Spun {
            length: SPIN_WINDOW,
            new_head: false,
        });
        assert!(p.begin_idle_spin(None).is_none(), "charged: budget spent");
    }

    #[test]
    fn a_precision_rounds_the_wake_up_up_to_its_slot_and_never_spins() {
        let ms = Duration::from_millis(1);
        let mut p = Park::new(SpinPolicy::Unbounded, ms);
        let clock = Clock::real();
        let head = clock.deadline_after(Duration::from_micros(10));
        let slot = head.next_multiple_of(1_000_000);
        match p.plan_lead(&clock, head, None).0 {
            Lead::Sleep(Some(u)) => assert_eq!(u, clock.instant_of(slot), "the slot's end"),
            other => panic!("a 1 ms precision sleeps, never spins: {other:?}"),
        }
        // Two deadlines in one slot wake at one instant; a deadline on the grid wakes at it.
        assert_eq!(p.wake_tick(slot - 999_999), slot);
        assert_eq!(p.wake_tick(slot), slot);
        assert_eq!(p.wake_tick(slot + 1), slot + 1_000_000);
        assert_eq!(
            p.wake_tick(u64::MAX - 1),
            u64::MAX - 1,
            "no overflow: never earlier"
        );
        // Below LEADER_SPIN the leader still spins, until its slot's end.
        let mut fine = Park::new(SpinPolicy::Unbounded, Duration::from_micros(1));
        let head = clock.deadline_after(Duration::from_micros(10));
        let slot = head.next_multiple_of(1_000);
        assert!(
            matches!(fine.plan_lead(&clock, head, None).0, Lead::Spin(u) if u == clock.instant_of(slot))
        );
    }

    #[test]
    fn spin_stops_at_a_head_change() {
        let c = StatCounter::new(0);
        let far = Instant::now() + Duration::from_secs(60);
        let done = std::thread::scope(|s| {
            let h = s.spawn(|| spin(&c, far));
            // Keep changing the head until the spinner notices (it may start late).
            while !h.is_finished() {
                c.fetch_add(1, Ordering::Relaxed);
                std::thread::yield_now();
            }
            h.join().unwrap()
        });
        assert!(
            done.new_head,
            "stopped by the head change, not by the 60 s limit"
        );
    }
}
