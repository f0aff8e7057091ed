//! Model-based property test of where a periodic task goes next, on a `ManualClock`.
//!
//! One periodic task (fixed rate or fixed delay) on a one-worker pool, and random orders
//! of `reschedule`, `run_now`, `pause`, `resume`, clock advances, a run held in progress
//! and its end, `cancel` and `shutdown_now`, applied to the pool and to a small model of
//! the task written in terms of runs: the queued entry (and whether it is an extra run,
//! with where it goes back to), or the run in progress (with a move, or an extra run, asked
//! for during it). A run can be held in progress (its closure waits on a gate), so the
//! controls also land while the task is out of the queue, which is where `reschedule` and
//! `run_now` leave their state for the re-queue (`src/task/next.rs`).
//!
//! After every step the pool is settled (every due run done, or the held run entered)
//! and compared with the model: the run count, the future's `deadline` (the queued
//! entry's, or the current run's while it runs), `is_done` and `is_cancelled`, and what
//! each control returned.
//!
//! 96 cases by default; set `PROPTEST_CASES` for more. Fixed cases that random ones may
//! miss run through the same driver (`run_case`) as tests of their own.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::Config;
use schedpool::{ManualClock, MissedTicks, Periodic, ScheduledFuture, ScheduledThreadPoolExecutor};

mod common;
use common::{wait_for, BOUND};

const MS: u64 = 1_000_000;
/// The task's period (fixed rate) or delay (fixed delay), and its first delay.
const PERIOD: u64 = 10 * MS;

#[derive(Clone, Copy, Debug)]
enum Op {
    /// Advance the clock by this many ms.
    Advance(u64),
    /// The next run that starts (not a paused skip) is held until `Release`.
    Hold,
    /// The held run ends.
    Release,
    /// `reschedule_after` this many ms.
    Reschedule(u64),
    RunNow,
    Pause,
    Resume,
    Cancel,
    ShutdownNow,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..25).prop_map(Op::Advance),
        3 => Just(Op::Hold),
        3 => Just(Op::Release),
        3 => (0u64..30).prop_map(Op::Reschedule),
        4 => Just(Op::RunNow),
        1 => Just(Op::Pause),
        1 => Just(Op::Resume),
        1 => Just(Op::Cancel),
        1 => Just(Op::ShutdownNow),
    ]
}

/// Where a run goes after it, if it is an extra run (`run_now`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Back {
    /// This deadline.
    At(u64),
    /// The rule, counted from the extra run (a fixed delay).
    RuleAfter,
    /// The rule's next deadline for the run in progress when the extra run was asked
    /// for (known when that run ends).
    RuleOfThatRun,
}

/// The queued entry.
#[derive(Clone, Copy, Debug)]
struct Queued {
    deadline: u64,
    /// An extra run, and where the task goes after it.
    extra: Option<Back>,
}

/// The run in progress (held).
#[derive(Clone, Copy, Debug)]
struct Running {
    scheduled: u64,
    /// It is an extra run: where the task goes after it.
    extra: Option<Back>,
    /// `reschedule` during it: the next run's deadline.
    moved: Option<u64>,
    /// `run_now` during it: an extra run right after it, at this time, then `Back`.
    extra_after: Option<(u64, Back)>,
}

#[derive(Clone, Copy, Debug)]
enum Place {
    Queued(Queued),
    Running(Running),
    Ended { cancelled: bool },
}

struct Model {
    fixed_delay: bool,
    now: u64,
    place: Place,
    runs: usize,
    paused: bool,
    /// The next run that starts is held.
    hold: bool,
    /// A run is held in progress (it may outlive the task's end by a cancel).
    held: bool,
}

impl Model {
    /// The rule's next deadline after a run scheduled at `scheduled` that ended at `now`.
    fn rule(&self, scheduled: u64) -> u64 {
        if self.fixed_delay {
            self.now + PERIOD
        } else {
            scheduled + PERIOD // MissedTicks::Burst: back to back until caught up
        }
    }

    /// The end of a run (or of a paused skip) scheduled at `r.scheduled`, at `now`.
    fn end_run(&mut self, r: Running) {
        let next = self.rule(r.scheduled);
        self.place = Place::Queued(match (r.extra_after, r.moved, r.extra) {
            (Some((at, back)), _, _) => Queued {
                deadline: at,
                extra: Some(match back {
                    Back::RuleOfThatRun => Back::At(next),
                    b => b,
                }),
            },
            (None, Some(t), _) => Queued {
                deadline: t,
                extra: None,
            },
            (None, None, Some(Back::At(t))) => Queued {
                deadline: t,
                extra: None,
            },
            (None, None, _) => Queued {
                deadline: next,
                extra: None,
            },
        });
    }

    /// Runs what is due at `now`, as the one worker would, until a run is held.
    fn settle(&mut self) {
        loop {
            let Place::Queued(q) = self.place else { return };
            if q.deadline > self.now {
                return;
            }
            let run = Running {
                scheduled: q.deadline,
                extra: q.extra,
                moved: None,
                extra_after: None,
            };
            if self.paused {
                self.end_run(run); // skipped, and the rule goes on from now
                continue;
            }
            self.runs += 1;
            if std::mem::take(&mut self.hold) {
                self.place = Place::Running(run);
                self.held = true;
                return;
            }
            self.end_run(run);
        }
    }

    fn reschedule(&mut self, at: u64) -> bool {
        match &mut self.place {
            Place::Queued(q) => {
                *q = Queued {
                    deadline: at,
                    extra: None,
                }
            }
            Place::Running(r) => {
                r.moved = Some(at);
                r.extra = None;
                r.extra_after = None;
            }
            Place::Ended { .. } => return false,
        }
        true
    }

    fn run_now(&mut self) -> bool {
        if self.paused {
            return false;
        }
        let (now, fixed_delay) = (self.now, self.fixed_delay);
        let by_rule = |b: Back| if fixed_delay { Back::RuleAfter } else { b };
        match &mut self.place {
            Place::Queued(q) if q.extra.is_some() => {} // the extra run is queued already
            Place::Queued(q) => {
                *q = Queued {
                    deadline: now,
                    extra: Some(by_rule(Back::At(q.deadline))),
                }
            }
            Place::Running(r) if r.extra_after.is_some() => {}
            Place::Running(r) => {
                let back = match (r.moved.take(), r.extra) {
                    (Some(t), _) => by_rule(Back::At(t)),
                    (None, Some(b)) => b,
                    (None, None) => by_rule(Back::RuleOfThatRun),
                };
                r.extra_after = Some((now, back));
            }
            Place::Ended { .. } => return false,
        }
        true
    }

    /// The future's `deadline`, as ticks of the clock; `None` once ended.
    fn deadline(&self) -> Option<u64> {
        match self.place {
            Place::Queued(q) => Some(q.deadline),
            Place::Running(r) => Some(r.scheduled),
            Place::Ended { .. } => None,
        }
    }
}

/// The pool, the task and the closure's switches.
struct Real {
    clock: ManualClock,
    start: Instant,
    pool: ScheduledThreadPoolExecutor,
    job: ScheduledFuture<()>,
    runs: Arc<AtomicUsize>,
    hold: Arc<AtomicBool>,
    /// Set by a held run when it starts; cleared by the test.
    entered: Arc<AtomicBool>,
    /// Cleared by the test to let a held run end.
    held: Arc<AtomicBool>,
}

impl Real {
    fn new(fixed_delay: bool) -> Self {
        let clock = ManualClock::new();
        let pool = ScheduledThreadPoolExecutor::builder()
            .core_pool_size(1)
            .clock(clock.clone())
            .build();
        let (runs, hold) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let (entered, held) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let spec = if fixed_delay {
            Periodic::with_fixed_delay(Duration::from_nanos(PERIOD))
        } else {
            Periodic::at_fixed_rate(Duration::from_nanos(PERIOD)).missed_ticks(MissedTicks::Burst)
        };
        let (r, h, e, w) = (runs.clone(), hold.clone(), entered.clone(), held.clone());
        let job = pool
            .schedule_periodic(
                spec.initial_delay(Duration::from_nanos(PERIOD)),
                move || {
                    r.fetch_add(1, Ordering::SeqCst);
                    if h.swap(false, Ordering::SeqCst) {
                        w.store(true, Ordering::SeqCst);
                        e.store(true, Ordering::SeqCst);
                        let end = Instant::now() + BOUND;
                        while w.load(Ordering::SeqCst) {
                            assert!(Instant::now() < end, "the test never released the run");
                            std::thread::sleep(Duration::from_micros(100));
                        }
                    }
                },
            )
            .unwrap();
        let start = clock.now();
        Real {
            clock,
            start,
            pool,
            job,
            runs,
            hold,
            entered,
            held,
        }
    }

    /// Waits until the pool has done what the model did: the held run entered, or
    /// nothing due and nothing running.
    fn settle(&self, model: &Model) {
        if model.held {
            wait_for("the held run starts", || {
                self.entered.load(Ordering::SeqCst)
            });
        } else {
            assert!(self.pool.wait_idle(BOUND), "the pool settles");
        }
    }

    fn deadline(&self) -> u64 {
        self.job.deadline().duration_since(self.start).as_nanos() as u64
    }
}

fn step(real: &Real, model: &mut Model, op: Op) -> Result<(), TestCaseError> {
    match op {
        Op::Advance(ms) => {
            model.now += ms * MS;
            real.clock.advance(Duration::from_millis(ms));
            model.settle();
        }
        Op::Hold => {
            model.hold = true;
            real.hold.store(true, Ordering::SeqCst);
        }
        Op::Release => {
            if model.held {
                model.held = false;
                if let Place::Running(r) = model.place {
                    model.end_run(r);
                    model.settle();
                }
                real.entered.store(false, Ordering::SeqCst);
                real.held.store(false, Ordering::SeqCst);
            }
        }
        Op::Reschedule(ms) => {
            let ok = model.reschedule(model.now + ms * MS);
            prop_assert_eq!(real.job.reschedule_after(Duration::from_millis(ms)), ok);
            model.settle();
        }
        Op::RunNow => {
            prop_assert_eq!(real.job.run_now(), model.run_now());
            model.settle();
        }
        Op::Pause | Op::Resume => {
            let pause = matches!(op, Op::Pause);
            let changed = model.paused != pause && !matches!(model.place, Place::Ended { .. });
            if changed {
                model.paused = pause;
            }
            let real_changed = if pause {
                real.job.pause()
            } else {
                real.job.resume()
            };
            prop_assert_eq!(real_changed, changed);
            model.settle();
        }
        Op::Cancel => {
            let live = !matches!(model.place, Place::Ended { .. });
            prop_assert_eq!(real.job.cancel(), live);
            if live {
                model.place = Place::Ended { cancelled: true };
            }
        }
        Op::ShutdownNow => {
            // The last step (the test stops after it): a run held across it ends later.
            let returned = real.pool.shutdown_now();
            let queued = matches!(model.place, Place::Queued(_));
            prop_assert_eq!(
                returned.len(),
                usize::from(queued),
                "the queued task comes back"
            );
            drop(returned); // its future says cancelled
            if let Place::Queued(_) = model.place {
                model.place = Place::Ended { cancelled: true };
            }
            return Ok(());
        }
    }
    real.settle(model);
    prop_assert_eq!(
        real.runs.load(Ordering::SeqCst),
        model.runs,
        "runs after {:?}",
        op
    );
    match model.deadline() {
        Some(d) => prop_assert_eq!(real.deadline(), d, "deadline after {:?}", op),
        None => prop_assert!(real.job.is_done(), "ended after {:?}", op),
    }
    if let (Place::Ended { cancelled }, false) = (model.place, model.held) {
        prop_assert_eq!(real.job.is_cancelled(), cancelled);
    }
    Ok(())
}

fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(96);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// One case: `ops` applied to a fresh pool and model, compared after every step, and then
/// the pool shut down (a held run let go).
fn run_case(fixed_delay: bool, ops: &[Op]) -> Result<(), TestCaseError> {
    let real = Real::new(fixed_delay);
    let mut model = Model {
        fixed_delay,
        now: 0,
        place: Place::Queued(Queued {
            deadline: PERIOD,
            extra: None,
        }),
        runs: 0,
        paused: false,
        hold: false,
        held: false,
    };
    for &op in ops {
        step(&real, &mut model, op)?;
        if let Op::ShutdownNow = op {
            break;
        }
    }
    // Let a held run end, so that the pool can stop.
    real.held.store(false, Ordering::SeqCst);
    drop(real.pool.shutdown_now());
    prop_assert!(real.pool.await_termination(BOUND));
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn where_a_periodic_task_goes_next_matches_the_model(
        fixed_delay in any::<bool>(),
        ops in prop::collection::vec(op(), 1..40),
    ) {
        run_case(fixed_delay, &ops)?;
    }
}

/// A fixed case of the model test: `run_now` twice during a held extra run of a
/// fixed-rate task (the second asks for one more extra run after it, not merged into the
/// running one), and the release.
#[test]
fn run_now_during_an_extra_run_asks_for_one_more() {
    run_case(false, &[Op::Hold, Op::RunNow, Op::RunNow, Op::Release]).unwrap();
}

/// A fixed case of the model test: `run_now` of a queued task before its deadline runs
/// it at once, and the task then goes back to that deadline (fixed rate) or counts its
/// delay from the extra run (fixed delay).
#[test]
fn run_now_of_a_queued_task_goes_back_where_it_was() {
    for fixed_delay in [false, true] {
        run_case(fixed_delay, &[Op::Advance(1), Op::RunNow]).unwrap();
    }
}
