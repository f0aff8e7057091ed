//! [`Suspended`]: a run whose future is pending, off its worker. An async body that gives
//! its worker back (`body/async_run.rs`) ends its body call with `Pending`; the task makes
//! a continuation of the run (`run::Resume`: the body and what the run's end needs), and the
//! worker moves it into a `Suspended`, which lives until the run ends. The `Suspended` is
//! the run's waker and, once woken, the run's entry in the pool's queue: a task of its own
//! whose run polls the continuation again, on whichever worker takes it (tokio's task
//! harness has the same shape: a task is notified, scheduled, polled, and idle between
//! polls, with its state word saying which).
//!
//! The run's task stays RUNNING all along (T1: one run at a time), so its handles, the
//! queue and the state machine see a run in progress as they see a closure's; the pool
//! keeps the run counted in `active_count` and `wait_idle` and holds termination back
//! for it (`pool/worker.rs`).
//!
//! # Phases
//! One `AtomicU8` says who owns the run's continuation:
//!
//! ```text
//!   POLLING --poll returns Pending--> IDLE --wake--> QUEUED --a worker takes it--> POLLING
//!      |  '--woken during the poll (NOTIFIED): re-queued at once-------> QUEUED
//!      |                              IDLE --claimed by a stop--> POLLING
//!      '--poll returns Ready (the run ended, or was stopped and its future dropped)--> DONE
//! ```
//!
//! - IDLE: nobody owns it; the first to move it out does: a waker (to QUEUED), or a stop
//!   that claims it (to POLLING: an interrupt or `shutdown_now` drops the future on its
//!   own thread, so a future nobody polls is dropped at once).
//! - QUEUED: its waker, until the pool's queue holds it; then whoever takes it out (a
//!   worker, or `shutdown_now`'s drain).
//! - POLLING: the thread that polls it; a wake in this phase sets NOTIFIED, and the poller,
//!   whose move to IDLE then fails, queues the run again instead (so a wake during a poll
//!   is never lost, and a future that wakes itself does not starve the worker).
//! - DONE: the run ended; the continuation is gone, and a later wake does nothing.
//!
//! A stop (an interrupt or `shutdown_now`) makes its change (the task's `INTERRUPTED` flag,
//! the pool's run state), fences, and reads the runs listed under its task's key (S1 in
//! `sleepers.rs`): each one it finds is claimed if IDLE, notified if POLLING (its poller
//! queues it again, and the next poll sees the stop), and left to its holder if QUEUED
//! (whose poll sees the stop). A run lists itself once its first poll is pending, and
//! then checks for a stop (polling again, to drop the future, if it finds one), so a stop
//! that does not find it is seen by that check.
//!
//! # Invariants
//! - SU1: at most one thread owns a run's continuation: the phase moves out of IDLE and
//!   QUEUED only by a compare-exchange, and only the owner moves it out of POLLING; the
//!   continuation is taken out of its cell only by the owner.
//! - SU2: a wake is never lost: a wake in IDLE queues the run, a wake in POLLING makes the
//!   poller queue it (NOTIFIED), a wake in QUEUED is owed a poll already.
//!
//! # Ordering
//! Every phase change is an `AcqRel` compare-exchange, and DONE a `Release` store by the
//! owner: a thread that takes the run over sees what its previous owner did to the
//! continuation (which is also behind its own mutex).

use std::task::Poll;

use super::run::{Pending, Resumed, ToWorker};
use super::{Header, Host, RunEnv, RunReport, Task, TaskRef};
use crate::clock::Ticks;
use crate::schedule::Schedule;
use crate::sync::{Arc, AtomicU8, AtomicUsize, Mutex, Ordering};

/// Nobody owns the run (module notes).
const IDLE: u8 = 0;
/// Woken: its waker, then the queue's taker owns it.
const QUEUED: u8 = 1;
/// A thread polls it.
const POLLING: u8 = 2;
/// The run ended.
const DONE: u8 = 3;
/// Woken during a poll (with POLLING only).
const NOTIFIED: u8 = 4;

/// A run whose future is pending, off its worker (module notes). `repr(C)`, header first:
/// a [`TaskRef`] points at it (R1, `raw/mod.rs`).
#[repr(C)]
pub(crate) struct Suspended {
    /// Its entry's header in the pool's queue: the task's home and number.
    header: Header,
    /// See the module notes (SU1, SU2).
    phase: AtomicU8,
    /// The run's continuation: here unless a poller holds it; `None` once DONE.
    cont: Mutex<Option<Pending>>,
    /// The run's task.
    task: TaskRef,
    /// The pool that queues it when it is woken.
    host: Arc<dyn Host>,
    /// The deadline the run was taken for.
    deadline: Ticks,
    /// When the run started (its take).
    started: Ticks,
    /// Its place in the sleepers' list (`sleepers.rs`), written and read under the list's
    /// lock. `Relaxed`: that lock orders it.
    place: AtomicUsize,
}

/// What a poll of a suspended run came to.
#[derive(Debug)]
pub(crate) enum Polled {
    /// The run ended: its task's report, and the run's facts.
    Ended(RunReport, Resumed),
    /// The run's future is pending again (idle, or queued again if it was woken meanwhile).
    Pending,
}

impl Suspended {
    /// The suspended run of `task`'s run that started at `started` for `deadline`, with
    /// its continuation, owned by the calling thread (POLLING) until its first poll.
    pub(crate) fn start(
        task: TaskRef,
        cont: Pending,
        host: Arc<dyn Host>,
        deadline: Ticks,
        started: Ticks,
    ) -> TaskRef {
        let header = Header::suspended(task.header());
        TaskRef::new(Suspended {
            header,
            phase: AtomicU8::new(POLLING),
            cont: Mutex::new(Some(cont)),
            task,
            host,
            deadline,
            started,
            place: AtomicUsize::new(usize::MAX),
        })
    }

    /// The suspended run `task` is, if it is one.
    pub(crate) fn of(task: &TaskRef) -> Option<&Suspended> {
        task.as_any().downcast_ref()
    }

    /// The run's task.
    pub(crate) fn task(&self) -> &TaskRef {
        &self.task
    }

    /// When the run started, and the deadline it was taken for.
    pub(crate) fn facts(&self) -> (Ticks, Ticks) {
        (self.started, self.deadline)
    }

    /// Its place in the sleepers' list, under the list's lock.
    pub(crate) fn place(run: &TaskRef) -> usize {
        of(run).place.load(Ordering::Relaxed) // the list's lock orders it
    }

    /// Sets its place in the sleepers' list, under the list's lock.
    pub(crate) fn set_place(run: &TaskRef, place: usize) {
        of(run).place.store(place, Ordering::Relaxed); // the list's lock orders it
    }

    /// A wake-up (SU2): queues an idle run, marks a polled one; nothing otherwise.
    fn wake(run: &TaskRef) {
        let me = of(run);
        let mut cur = me.phase.load(Ordering::Acquire);
        loop {
            let next = match cur {
                IDLE => QUEUED,
                POLLING => POLLING | NOTIFIED,
                _ => return, // queued already, notified already, or ended
            };
            // AcqRel: the module notes.
            match me
                .phase
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if next == QUEUED => return me.host.resume(run.clone()),
                Ok(_) => return,
                Err(actual) => cur = actual,
            }
        }
    }

    /// A stop's claim (module notes): `true` if the caller now owns the run (it was IDLE)
    /// and must poll it to its end; a polled run is notified instead, a queued one left to
    /// its holder.
    pub(crate) fn claim(run: &TaskRef) -> bool {
        let me = of(run);
        let mut cur = me.phase.load(Ordering::Acquire);
        loop {
            let next = match cur {
                IDLE => POLLING,
                POLLING => POLLING | NOTIFIED,
                _ => return false,
            };
            match me
                .phase
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return next == POLLING,
                Err(actual) => cur = actual,
            }
        }
    }

    /// The holder of a queued run takes it over (a worker's take, `shutdown_now`'s drain):
    /// `true` if it was QUEUED.
    pub(crate) fn take_queued(run: &TaskRef) -> bool {
        of(run)
            .phase
            .compare_exchange(QUEUED, POLLING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Polls the run on this thread, which owns it (POLLING), in `env` (the poller's: its
    /// clock, counters, pool). A run that ends is DONE, and the report is its task's; a
    /// pending one goes IDLE, or, woken during the poll, is queued again. `first`: called
    /// once, if the poll is pending, before the run is given up: the first poll lists the
    /// run there (S1, AW1 in `pool/awaiting.rs`), and a stop made before the listing is
    /// then seen by a second poll, made at once.
    pub(crate) fn poll(
        run: &TaskRef,
        env: &RunEnv<'_>,
        mut first: Option<&mut dyn FnMut()>,
    ) -> Polled {
        let me = of(run);
        debug_assert_eq!(
            me.phase.load(Ordering::Acquire) & !NOTIFIED,
            POLLING,
            "SU1: polled by its owner"
        );
        let mut cont = me
            .cont
            .lock()
            .take()
            .expect("SU1: the owner finds it in its cell");
        let task_env = RunEnv {
            now: me.started,
            task: Some(&me.task),
            // A pool's run wherever it is polled: `shutdown_now` stops it.
            on_worker: true,
            ..*env
        };
        let polled = loop {
            let polled = run.with_waker(|waker| cont.0.resume(&task_env, waker));
            match (polled, first.take()) {
                (Poll::Pending, Some(list)) => {
                    list();
                    if must_stop(&me.task, env) {
                        continue; // the stop's poll, which drops the future
                    }
                    break Poll::Pending;
                }
                (polled, _) => break polled,
            }
        };
        match polled {
            Poll::Ready(report) => {
                me.phase.store(DONE, Ordering::Release);
                super::drop_quietly(cont); // what is left of the body: user code (U2)
                let facts = Resumed {
                    task: me.task.clone(),
                    deadline: me.deadline,
                    started: me.started,
                };
                Polled::Ended(report, facts)
            }
            Poll::Pending => {
                *me.cont.lock() = Some(cont);
                // AcqRel: the module notes. Only the owner leaves POLLING (SU1).
                if let Err(notified) =
                    me.phase
                        .compare_exchange(POLLING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                {
                    debug_assert_eq!(notified, POLLING | NOTIFIED);
                    me.phase.store(QUEUED, Ordering::Release); // still ours (SU1)
                    me.host.resume(run.clone()); // SU2
                }
                Polled::Pending
            }
        }
    }
}

/// Whether a run of `task` must stop: its task was interrupted, or `shutdown_now` has
/// begun (`body/async_run.rs`, "Stopping": a suspended run is a pool's run wherever it is
/// polled).
fn must_stop(task: &TaskRef, env: &RunEnv<'_>) -> bool {
    task.header().is_interrupted() || env.pool.is_some_and(|p| p.is_stopping())
}

/// The `Suspended` a reference to one points at.
fn of(run: &TaskRef) -> &Suspended {
    run.as_any()
        .downcast_ref::<Suspended>()
        .expect("a suspended run's reference")
}

impl Task for Suspended {
    fn header(&self) -> &Header {
        &self.header
    }

    fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn schedule(&self) -> &Schedule {
        self.task.schedule()
    }

    fn name(&self) -> Option<&str> {
        self.task.name()
    }

    /// Its waker was woken (SU2).
    fn wake(&self, me: &TaskRef) {
        Suspended::wake(me);
    }

    /// A worker took the run from the queue: it polls it; a run that ends hands its facts
    /// to the worker, which accounts for it as its task's run.
    fn run(&self, env: &RunEnv<'_>) -> RunReport {
        let me = env.task.expect("a worker's take knows its entry");
        if !Suspended::take_queued(me) {
            return RunReport::NOT_RUN; // never: only a waker queues it, and as QUEUED
        }
        match Suspended::poll(me, env, None) {
            Polled::Ended(report, facts) => {
                let handoff = env.handoff.expect("a worker's take");
                handoff.set(Some(ToWorker::Ended(facts, report)));
                RunReport::HANDED
            }
            Polled::Pending => RunReport::NOT_RUN,
        }
    }

    /// Never handed out to run on a caller's thread (`shutdown_now` ends it instead).
    fn run_now(&self, _env: &RunEnv<'_>, _then_cancel: bool) -> RunReport {
        RunReport::NOT_RUN
    }

    /// Never cancelled: no future holds it.
    fn finish_cancelled(&self) {}
}
