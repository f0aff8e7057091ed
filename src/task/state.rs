//! A task's state machine: one `AtomicU8` holding a [`State`], and one method per edge.
//! The rest of the crate takes every edge through the task's `Header` (`header.rs`), the
//! one door, which adds the task's kind where an edge depends on it (`cancel`).
//!
//! ```text
//!   SCHEDULED --start--> RUNNING --finish(Done), one-shot or last run--> DONE
//!       |                   |-----requeue, periodic------------------> SCHEDULED (next deadline)
//!       |                   |-----finish(Panicked)-------------------> PANICKED
//!       |                   |-----finish(Cancelled), a caller's run --> CANCELLED
//!       |                   |      or a stopped one
//!       |                   '-----cancel (periodic), interrupt (any)-> CANCELLED (this run
//!       |                                                             completes; no re-enqueue)
//!       |--cancel, interrupt--> CANCELLED
//!       '--end_unrun (periodic)--> DONE or PANICKED
//! ```
//!
//! The edges, each a method of [`TaskState`] with a `#[must_use]` result: [`start`]
//! (T1), [`finish`] and [`requeue`] by the runner, [`end_unrun`] for a periodic task that
//! ends before it ever runs (`PeriodicTask::finish_unrun`: DONE for `max_runs(0)` or a
//! trigger with no first deadline, PANICKED for a `first_deadline` that panicked), and
//! [`cancel`] / [`interrupt`] by anyone. `finish(Cancelled)` is a run on the caller's
//! thread that cancels the task after it (`run_now` with `then_cancel`: a periodic
//! task's `CallerRuns` run after shutdown), or a run stopped before it ended (an async
//! body dropped at `shutdown_now`: `Ran::Stopped`, `Step::Stopped` in `run.rs`).
//!
//! DONE, PANICKED and CANCELLED are terminal. Only [`start`] enters RUNNING, and only from
//! SCHEDULED, so two runs of one task never overlap (T1, `task/mod.rs`). A one-shot that
//! has started cannot be cancelled by `cancel`: it returns false and the run's outcome
//! stands. An *interrupt* (`ScheduledFuture::interrupt`, Java's `cancel(true)`) cancels a
//! running one-shot too: the future reports `Cancelled` at once, the run goes on until its
//! closure notices (`TaskContext::is_cancelled`) or ends, and its runner, whose `finish`
//! then loses ([`Exchange::Lost`]), drops the output.
//!
//! [`start`]: TaskState::start
//! [`finish`]: TaskState::finish
//! [`requeue`]: TaskState::requeue
//! [`end_unrun`]: TaskState::end_unrun
//! [`cancel`]: TaskState::cancel
//! [`interrupt`]: TaskState::interrupt
//!
//! # Flags (one-shots' slot, and waiters)
//! Beside the state, the word holds four flags:
//! - [`CLOSURE`]: a one-shot's closure is in its slot (`raw/slot.rs`). Set at construction
//!   ([`TaskState::new_once`]) and cleared once, by one [`take_closure`](TaskState::take_closure):
//!   the runner's, while the task is RUNNING (after its
//!   [`start_once`](TaskState::start_once), which keeps the flag), or the canceller's,
//!   once the task is CANCELLED. So an interrupt that lands between a start and the
//!   runner's take takes the closure itself, and the run does not happen.
//! - [`OUTPUT`]: a one-shot's outcome (output or panic payload) is in its slot. Set by
//!   the runner's [`finish_with_output`](TaskState::finish_with_output) (RUNNING -> DONE
//!   or PANICKED), after it wrote the slot; cleared by the one
//!   [`take_output`](TaskState::take_output) that takes the outcome.
//! - [`WAITING`]: someone registered in the waiter table (`waiting.rs`) while the task
//!   was not terminal ([`wait_on`](TaskState::wait_on)); whoever makes the terminal
//!   transition then wakes the task's waiters.
//! - [`INTERRUPTED`]: the task was cancelled by an [`interrupt`](TaskState::interrupt),
//!   set in the exchange that stores CANCELLED and never cleared. A running periodic task
//!   is CANCELLED by a plain cancel too, which lets an async run finish; an interrupt
//!   drops it (`body/async_run.rs`), so the run tells the two apart by this flag.
//!
//! So the word says at every moment what the slot holds, and each flag is cleared by
//! exactly one RMW: that is what makes the slot's accesses exclusive (R4, `raw/mod.rs`).
//! Every edge keeps the flags it does not name.
//!
//! # Ordering
//! Every transition is an `AcqRel` compare-exchange and every read an `Acquire` load. A
//! canceller that wins sees everything the scheduler wrote before queueing; a runner that
//! starts sees the same; whoever reads a terminal state sees the writes of the thread
//! that stored it, in particular the effects of the run before DONE or PANICKED (the
//! outcome itself: a one-shot's is ordered by its `OUTPUT` flag, below; a periodic task's
//! travels through the `Completion` mutex, which orders it on its own).
//! There are no plain stores: every change of state is an exchange, through
//! `exchange_word` (every named edge) or `cancel`'s loop, and the flags change only by the
//! read-modify-writes of `take_closure`, `take_output` and `wait_on` (and
//! `INTERRUPTED`, set by `cancel`'s loop with the state).

use crate::sync::Ordering;

use crate::sync::AtomicU8;

/// The word's bits that hold the [`State`].
const STATE: u8 = 0x07;
/// The closure is in a one-shot's slot (module notes, "Flags").
pub(crate) const CLOSURE: u8 = 0x08;
/// The outcome is in a one-shot's slot (module notes, "Flags").
pub(crate) const OUTPUT: u8 = 0x10;
/// Someone waits in the waiter table (module notes, "Flags").
pub(crate) const WAITING: u8 = 0x20;
/// An interrupt cancelled the task (module notes, "Flags").
pub(crate) const INTERRUPTED: u8 = 0x40;

/// A task's state (the module diagram); the word also holds the flags above.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    Scheduled = 0,
    Running = 1,
    Done = 2,
    Panicked = 3,
    Cancelled = 4,
}

impl State {
    /// The state a word holds; only the transitions below write it, with these values.
    #[inline]
    fn from_word(w: u8) -> State {
        match w & STATE {
            0 => State::Scheduled,
            1 => State::Running,
            2 => State::Done,
            3 => State::Panicked,
            s => {
                // Values 5 to 7 are never written: a word holding one is a crate bug.
                debug_assert_eq!(s, State::Cancelled as u8, "a state value no edge writes");
                State::Cancelled
            }
        }
    }

    /// DONE, PANICKED or CANCELLED.
    #[inline]
    pub(crate) fn is_terminal(self) -> bool {
        self as u8 >= State::Done as u8
    }

    /// The state's name, for `Debug` output.
    pub(crate) fn name(self) -> &'static str {
        match self {
            State::Scheduled => "scheduled",
            State::Running => "running",
            State::Done => "done",
            State::Panicked => "panicked",
            State::Cancelled => "cancelled",
        }
    }
}

/// How a run, or a task that never ran, ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    Done,
    Panicked,
    Cancelled,
}

impl End {
    #[inline]
    fn state(self) -> State {
        match self {
            End::Done => State::Done,
            End::Panicked => State::Panicked,
            End::Cancelled => State::Cancelled,
        }
    }
}

/// What [`TaskState::start`] did.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// SCHEDULED -> RUNNING: the caller runs the task (T1).
    Run,
    /// Not SCHEDULED (cancelled, or already running or ended): no run.
    NotScheduled,
}

/// What [`TaskState::finish`], [`TaskState::end_unrun`] and [`TaskState::requeue`] did.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exchange {
    /// This call made the transition (T2: the caller completes the task, or re-queues it).
    Won,
    /// A cancel or an interrupt came first and completed the task; the caller drops what
    /// it holds (the output, the closure).
    Lost,
}

/// The atomic state word of one task (see the module diagram).
#[derive(Debug)]
pub(crate) struct TaskState(AtomicU8);

impl TaskState {
    pub(crate) fn new() -> Self {
        TaskState(AtomicU8::new(State::Scheduled as u8))
    }

    /// A one-shot's word: SCHEDULED, with its closure in the slot.
    pub(crate) fn new_once() -> Self {
        TaskState(AtomicU8::new(State::Scheduled as u8 | CLOSURE))
    }

    /// The current state. Acquire: pairs with the AcqRel exchange that stored it.
    #[inline]
    pub(crate) fn load(&self) -> State {
        State::from_word(self.0.load(Ordering::Acquire))
    }

    /// The whole word, flags included (for a task's `Drop`, which owns the task: the last
    /// reference's fence orders every earlier change before it).
    #[inline]
    pub(crate) fn word(&self) -> u8 {
        self.0.load(Ordering::Acquire)
    }

    /// A one-shot's SCHEDULED -> RUNNING (T1), with its closure still in the slot (the
    /// expected word has [`CLOSURE`], and keeps it): the runner then takes it with
    /// [`take_closure`](Self::take_closure)`(State::Running)`.
    #[inline]
    pub(crate) fn start_once(&self) -> Start {
        let from = State::Scheduled as u8 | CLOSURE;
        match self.exchange_word(from, STATE, State::Running as u8) {
            Exchange::Won => Start::Run,
            Exchange::Lost => Start::NotScheduled,
        }
    }

    /// A one-shot runner's RUNNING -> DONE or PANICKED, with [`OUTPUT`] set: the caller
    /// wrote the outcome into the slot before this call. `Lost`: an interrupt came first
    /// (the task is CANCELLED and nobody reads the slot), so the caller takes it back.
    #[inline]
    pub(crate) fn finish_with_output(&self, end: End) -> Exchange {
        debug_assert!(end != End::Cancelled, "a cancelled run has no outcome");
        self.exchange_word(State::Running as u8, STATE, end.state() as u8 | OUTPUT)
    }

    /// Clears [`CLOSURE`] while the task is in state `state` (RUNNING: the runner's take;
    /// CANCELLED: the canceller's); `true` if this call did (the caller now owns the
    /// closure in the slot). AcqRel: the read-modify-write that decides who owns it;
    /// Acquire sees the slot as construction wrote it.
    #[inline]
    pub(crate) fn take_closure(&self, state: State) -> bool {
        let mut cur = self.0.load(Ordering::Acquire);
        loop {
            if State::from_word(cur) != state || cur & CLOSURE == 0 {
                return false;
            }
            match self.0.compare_exchange_weak(
                cur,
                cur & !CLOSURE,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Clears [`OUTPUT`]; `true` if this call did (the caller now owns the outcome in the
    /// slot). AcqRel: Acquire pairs with the runner's Release in `finish_with_output`, so
    /// the outcome it wrote is visible.
    #[inline]
    pub(crate) fn take_output(&self) -> bool {
        self.0.fetch_and(!OUTPUT, Ordering::AcqRel) & OUTPUT != 0
    }

    /// Sets [`WAITING`] if the task is not terminal; `false` if it is (nothing to wait
    /// for). AcqRel: a terminal transition after this one sees the flag (it is in the
    /// word it replaces).
    #[inline]
    pub(crate) fn wait_on(&self) -> bool {
        let mut cur = self.0.load(Ordering::Acquire);
        loop {
            if State::from_word(cur).is_terminal() {
                return false;
            }
            if cur & WAITING != 0 {
                return true;
            }
            match self.0.compare_exchange_weak(
                cur,
                cur | WAITING,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }

    /// `true` if someone registered as a waiter ([`WAITING`]). Read by the author of a
    /// terminal transition after it: every registration came before that transition in
    /// the word's order, so this load sees it.
    #[inline]
    pub(crate) fn is_waited(&self) -> bool {
        self.0.load(Ordering::Acquire) & WAITING != 0
    }

    /// SCHEDULED -> RUNNING (T1).
    #[inline]
    pub(crate) fn start(&self) -> Start {
        match self.exchange(State::Scheduled, State::Running) {
            Exchange::Won => Start::Run,
            Exchange::Lost => Start::NotScheduled,
        }
    }

    /// RUNNING -> DONE, PANICKED or CANCELLED: the end of a run, by its runner.
    #[inline]
    pub(crate) fn finish(&self, end: End) -> Exchange {
        self.exchange(State::Running, end.state())
    }

    /// RUNNING -> SCHEDULED: a periodic run that continues, by its runner.
    #[inline]
    pub(crate) fn requeue(&self) -> Exchange {
        self.exchange(State::Running, State::Scheduled)
    }

    /// SCHEDULED -> DONE or PANICKED: a periodic task that ends before any run
    /// (`PeriodicTask::finish_unrun`).
    #[inline]
    pub(crate) fn end_unrun(&self, end: End) -> Exchange {
        debug_assert!(end != End::Cancelled, "a cancel has its own edge");
        self.exchange(State::Scheduled, end.state())
    }

    /// -> CANCELLED from SCHEDULED, or from RUNNING when `periodic`. `true` if this call
    /// made the transition (T2: the caller must then run `Task::finish_cancelled`).
    #[must_use]
    pub(crate) fn cancel(&self, periodic: bool) -> bool {
        self.cancel_with(periodic, 0)
    }

    /// -> CANCELLED from SCHEDULED or RUNNING, whatever the kind (an interrupt), with
    /// [`INTERRUPTED`] set in the same exchange. `true` if this call made the transition
    /// (T2, as for [`cancel`](Self::cancel)); a task a plain cancel ended first stays
    /// without the flag.
    #[must_use]
    pub(crate) fn interrupt(&self) -> bool {
        self.cancel_with(true, INTERRUPTED)
    }

    /// `true` if an interrupt cancelled the task ([`INTERRUPTED`]). Acquire: pairs with
    /// the interrupt's exchange, like [`load`](Self::load).
    #[inline]
    pub(crate) fn is_interrupted(&self) -> bool {
        self.0.load(Ordering::Acquire) & INTERRUPTED != 0
    }

    /// The cancel loop: -> CANCELLED from SCHEDULED, or from RUNNING when `running_too`,
    /// setting `flag` with the state.
    fn cancel_with(&self, running_too: bool, flag: u8) -> bool {
        let mut word = self.0.load(Ordering::Acquire);
        let mut cur = State::from_word(word);
        loop {
            let allowed = cur == State::Scheduled || (cur == State::Running && running_too);
            if !allowed {
                return false;
            }
            // AcqRel: see the module notes. The flags are kept (a one-shot's closure
            // stays in the slot for the canceller's `take_closure`).
            match self.0.compare_exchange_weak(
                word,
                word & !STATE | State::Cancelled as u8 | flag,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => {
                    word = actual;
                    cur = State::from_word(actual);
                }
            }
        }
    }

    /// `from` -> `to`, flags kept: the exchange the plain edges above go through.
    #[inline]
    fn exchange(&self, from: State, to: State) -> Exchange {
        self.exchange_word(from as u8, STATE, to as u8)
    }

    /// The one exchange every named edge goes through: from a word whose bits
    /// `from` are set and whose state is `from`'s, to that word with the bits `clear`
    /// cleared and `set` set; every other flag is kept. The first try assumes no other
    /// flag; a failure whose state and `from` bits still match retries with the word it
    /// saw.
    #[inline]
    fn exchange_word(&self, from: u8, clear: u8, set: u8) -> Exchange {
        let mut cur = from;
        loop {
            // AcqRel: see the module notes.
            match self.0.compare_exchange(
                cur,
                cur & !clear | set,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Exchange::Won,
                Err(actual) if actual & STATE == from & STATE && actual & from == from => {
                    cur = actual
                }
                Err(_) => return Exchange::Lost,
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn only_scheduled_starts_and_cancel_respects_the_kind() {
        let s = TaskState::new();
        assert_eq!(s.start(), Start::Run);
        assert_eq!(s.start(), Start::NotScheduled, "T1: no second start");
        assert!(!s.cancel(false), "a running one-shot is not cancellable");
        assert!(s.cancel(true), "a running periodic task is");
        assert!(!s.cancel(true), "T2: one cancel wins");
        assert!(s.load().is_terminal());
        assert_eq!(s.load().name(), "cancelled");
        assert_eq!(
            s.finish(End::Done),
            Exchange::Lost,
            "the cancel completed it"
        );
        assert!(!s.is_interrupted(), "a plain cancel sets no flag");
        assert!(!s.interrupt(), "T2: the cancel won");
        assert!(!s.is_interrupted(), "the losing interrupt leaves none");
    }

    #[test]
    fn an_interrupt_marks_the_word_and_keeps_the_other_flags() {
        let s = TaskState::new_once();
        assert_eq!(s.start_once(), Start::Run);
        assert!(s.wait_on());
        assert!(!s.is_interrupted());
        assert!(s.interrupt(), "a running one-shot is interrupted");
        assert!(s.is_interrupted());
        assert_eq!(s.load(), State::Cancelled);
        assert_eq!(s.word() & (CLOSURE | WAITING), CLOSURE | WAITING, "kept");
        assert!(s.take_closure(State::Cancelled));
        assert!(s.is_interrupted(), "never cleared");
        let p = TaskState::new();
        assert!(p.interrupt(), "a scheduled task too");
        assert!(p.is_interrupted());
    }

    #[test]
    fn each_edge_goes_from_its_own_state() {
        let s = TaskState::new();
        assert_eq!(s.finish(End::Done), Exchange::Lost, "not running");
        assert_eq!(s.requeue(), Exchange::Lost, "not running");
        assert_eq!(s.start(), Start::Run);
        assert_eq!(s.end_unrun(End::Done), Exchange::Lost, "it has run");
        assert_eq!(s.requeue(), Exchange::Won);
        assert_eq!(s.load(), State::Scheduled);
        assert_eq!(s.end_unrun(End::Panicked), Exchange::Won);
        assert_eq!(s.load(), State::Panicked);
        assert!(!s.cancel(true), "terminal");
        for (state, word) in [
            (State::Scheduled, 0),
            (State::Running, 1),
            (State::Done, 2),
            (State::Panicked, 3),
            (State::Cancelled, 4),
        ] {
            assert_eq!(State::from_word(word), state);
            assert_eq!(state.is_terminal(), word >= 2);
        }
    }
}
