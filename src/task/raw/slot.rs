//! [`OnceCore`]: a one-shot's header and its slot for the closure, the output or the
//! panic payload, guarded by the state word's flags (R4 in `mod.rs`).

use std::mem::ManuallyDrop;

use crate::clock::Ticks;
use crate::error::{PanicPayload, TaskError};
use crate::sync::UnsafeCell;
use crate::task::state::{End, Exchange, Start, State, CLOSURE, OUTPUT, WAITING};
use crate::task::{drop_quietly, waiting, Header};

/// A one-shot's closure, output or panic payload: one slot, which the state word's flags
/// name (R4).
union Slot<F, T> {
    closure: ManuallyDrop<F>,
    output: ManuallyDrop<T>,
    panic: ManuallyDrop<PanicPayload>,
}

/// The part of a one-shot that its state word guards: the header and the slot (R4).
/// `repr(C)`, header first, so a one-shot that starts with its core starts with its
/// header (R1).
#[repr(C)]
pub(crate) struct OnceCore<F, T> {
    header: Header,
    slot: UnsafeCell<Slot<F, T>>,
}

// SAFETY:
// * the slot's values move between threads (the submitter's closure runs on a worker,
//   the worker's output is taken by the future's owner): `F: Send`, `T: Send`;
// * the header is `Send` and `Sync` on its own.
unsafe impl<F: Send, T: Send> Send for OnceCore<F, T> {}
// SAFETY:
// * shared access reaches the slot only through the methods below, and R4 makes every
//   access to a value exclusive (one thread owns each value it touches); so `&OnceCore`
//   shared between threads moves values, never shares them: `F: Send`, `T: Send`.
unsafe impl<F: Send, T: Send> Sync for OnceCore<F, T> {}

/// Proof that the caller started this one-shot's run ([`OnceCore::start`]): the only way
/// to store its outcome.
#[must_use]
pub(crate) struct Started<'a, F, T>(&'a OnceCore<F, T>);

impl<F, T> Started<'_, F, T> {
    /// The proof, kept past this borrow by a run whose future is pending while no thread is
    /// in the run (`task/suspended.rs`); [`OnceCore::reattach`] gives it back to the thread
    /// that resumes the run. Neither is `Clone`: one proof per run, as before.
    pub(crate) fn detach(self) -> StartedRun {
        StartedRun(std::ptr::from_ref(self.0) as usize)
    }
}

/// A [`Started`] proof between two threads of one run (its task's address): made only by
/// [`Started::detach`].
#[must_use]
#[derive(Debug)]
pub(crate) struct StartedRun(usize);

impl<F, T> OnceCore<F, T> {
    /// A SCHEDULED one-shot due at `deadline`, with `f` in its slot.
    pub(crate) fn new(deadline: Ticks, f: F) -> Self {
        OnceCore {
            header: Header::new_once(deadline),
            slot: UnsafeCell::new(Slot {
                closure: ManuallyDrop::new(f),
            }),
        }
    }

    #[inline]
    pub(crate) fn header(&self) -> &Header {
        &self.header
    }

    #[inline]
    pub(crate) fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }

    /// SCHEDULED -> RUNNING (T1), then the closure, and the proof for
    /// [`finish`](Self::finish); `None` if the task was not SCHEDULED, or if an interrupt
    /// came between the start and the take and took the closure itself (no run).
    #[inline]
    pub(crate) fn start(&self) -> Option<(F, Started<'_, F, T>)> {
        match self.header.start_once() {
            Start::Run => {}
            Start::NotScheduled => return None,
        }
        if !self.header.take_closure(State::Running) {
            return None; // interrupted: the interrupter drops the closure (T3)
        }
        // SAFETY:
        // * this call's `take_closure` cleared `CLOSURE` while the task was RUNNING (R4):
        //   the closure was in the slot, and this thread alone owns it now;
        // * it is moved out once; the slot holds nothing until `finish` writes it.
        let f = self
            .slot
            .with_mut(|slot| unsafe { ManuallyDrop::take(&mut (*slot).closure) });
        Some((f, Started(self)))
    }

    /// The proof of a run detached by [`Started::detach`], for the thread that resumes it.
    ///
    /// # Panics
    /// If `run` is another task's run.
    pub(crate) fn reattach(&self, run: StartedRun) -> Started<'_, F, T> {
        assert_eq!(
            run.0,
            std::ptr::from_ref(self) as usize,
            "a run resumes on its own task"
        );
        Started(self)
    }

    /// Stores the run's outcome and ends the run: RUNNING -> DONE (`Ok`) or PANICKED. `Err`
    /// gives the outcome back if an interrupt ended the task first (the caller drops it).
    #[inline]
    pub(crate) fn finish(
        &self,
        run: Started<'_, F, T>,
        outcome: Result<T, PanicPayload>,
    ) -> Result<(), Result<T, PanicPayload>> {
        assert!(std::ptr::eq(run.0, self), "a run ends on its own task");
        let end = if outcome.is_ok() {
            End::Done
        } else {
            End::Panicked
        };
        // SAFETY:
        // * `run` proves this thread started the run and has not finished it: no flag is
        //   set, so no other thread touches the slot (R4), and it holds nothing (the
        //   closure was moved out by `start`), so nothing is overwritten.
        self.slot.with_mut(|slot| unsafe {
            match outcome {
                Ok(v) => (&raw mut (*slot).output).write(ManuallyDrop::new(v)),
                Err(p) => (&raw mut (*slot).panic).write(ManuallyDrop::new(p)),
            }
        });
        match self.header.finish_with_output(end) {
            Exchange::Won => Ok(()),
            // SAFETY:
            // * the exchange failed: an interrupt made the task CANCELLED without setting
            //   `OUTPUT`, so no other thread reads the slot (R4); this thread wrote it
            //   above and moves it out once.
            Exchange::Lost => Err(self.slot.with_mut(|slot| unsafe {
                match end {
                    End::Done => Ok(ManuallyDrop::take(&mut (*slot).output)),
                    _ => Err(ManuallyDrop::take(&mut (*slot).panic)),
                }
            })),
        }
    }

    /// Ends a run that has no outcome ([`Ran::Stopped`](crate::task::Ran)): RUNNING ->
    /// CANCELLED, the slot left empty (R4: the runner's take cleared `CLOSURE`, and no
    /// `OUTPUT` is set). `Err` if an interrupt ended the task first (it completed the
    /// future). Touches no slot: nothing unsafe.
    #[inline]
    pub(crate) fn finish_stopped(&self, run: Started<'_, F, T>) -> Result<(), ()> {
        assert!(std::ptr::eq(run.0, self), "a run ends on its own task");
        match self.header.finish(End::Cancelled) {
            Exchange::Won => Ok(()),
            Exchange::Lost => Err(()),
        }
    }

    /// After a cancel or an interrupt that won (T2): the closure, if it is still in the
    /// slot (a cancel of a SCHEDULED task, or an interrupt before the runner's take; a run
    /// that took it holds its own).
    #[inline]
    pub(crate) fn take_cancelled_closure(&self) -> Option<F> {
        if !self.header.take_closure(State::Cancelled) {
            return None;
        }
        // SAFETY:
        // * `take_closure` cleared `CLOSURE` of a CANCELLED task in this call (R4): the
        //   closure is in the slot, this thread alone owns it, and no runner can take it
        //   (its take needs RUNNING, and CANCELLED is terminal).
        Some(
            self.slot
                .with_mut(|slot| unsafe { ManuallyDrop::take(&mut (*slot).closure) }),
        )
    }

    /// The outcome, moved out, once the task is terminal; `None` before.
    ///
    /// # Panics
    /// If the outcome of a DONE or PANICKED task was taken before (a future polled after
    /// it returned `Ready`).
    pub(crate) fn take_outcome(&self) -> Option<Result<T, TaskError>> {
        let state = self.header.state();
        match state {
            State::Scheduled | State::Running => None,
            State::Cancelled => Some(Err(TaskError::Cancelled)),
            State::Done | State::Panicked => {
                assert!(
                    self.header.take_output(),
                    "ScheduledFuture outcome taken twice (polled after Ready?)"
                );
                // SAFETY:
                // * `take_output` cleared `OUTPUT` in this call (R4): the outcome is in
                //   the slot (the runner wrote it before setting the flag, and the
                //   flag's Acquire sees that write), and this thread alone moves it out;
                // * DONE holds the output, PANICKED the payload (`finish`).
                Some(self.slot.with_mut(|slot| unsafe {
                    if state == State::Done {
                        Ok(ManuallyDrop::take(&mut (*slot).output))
                    } else {
                        Err(TaskError::Panicked(ManuallyDrop::take(&mut (*slot).panic)))
                    }
                }))
            }
        }
    }
}

impl<F, T> Drop for OnceCore<F, T> {
    fn drop(&mut self) {
        let word = self.header.word();
        let state = self.header.state();
        if word & CLOSURE != 0 {
            // SAFETY:
            // * `&mut self`: no other thread holds the task; `CLOSURE` says the closure
            //   is in the slot (R4), and it is moved out once, here.
            let f = self
                .slot
                .with_mut(|slot| unsafe { ManuallyDrop::take(&mut (*slot).closure) });
            drop_quietly(f);
        }
        if word & OUTPUT != 0 {
            // SAFETY:
            // * `&mut self`, as above; `OUTPUT` says the outcome is in the slot, the
            //   output for DONE and the payload for PANICKED (R4).
            self.slot.with_mut(|slot| unsafe {
                if state == State::Done {
                    drop_quietly(ManuallyDrop::take(&mut (*slot).output));
                } else {
                    drop_quietly(ManuallyDrop::take(&mut (*slot).panic));
                }
            });
        }
        if word & WAITING != 0 && !state.is_terminal() {
            waiting::forget(self.header.key()); // A2
        }
    }
}
