//! [`TaskRef`]: a counted thin pointer to a task, with a vtable of its own.
//!
//! # Why
//! Two things a pending one-shot paid for in bytes, made here with `unsafe` because no
//! safe type gives them: a thin counted pointer, and a one-shot's slot without a mutex.
//!
//! The queue, the workers and the handles held every task as `Arc<dyn Task>`: a 16-byte
//! fat pointer in every heap node and lane slot, and 16 bytes of reference counts (strong
//! and weak, the weak one never used) in front of every task. A `TaskRef` is 8 bytes; the
//! task's header holds the pointer to its [`VTable`] (8 bytes) and the reference count (4
//! bytes, in space the header's alignment left free). A heap node went from 32 to 24 bytes
//! (16 once the FIFO number moved into the task: `pool/entry.rs`, `Entry`), and the
//! reference counts from 16 bytes to 4 (`docs/DESIGN.md`, "Memory"; `docs/BENCHMARKS.md`,
//! "The thin task"). This is tokio's `RawTask` shape
//! (`runtime/task/raw.rs`), without its state-word tricks: the task's state machine stays
//! where it was (`state.rs`), and the count only decides when the task is freed.
//!
//! A one-shot's closure, output and panic payload share one slot ([`OnceCore`], tokio's
//! `Stage`), guarded by flags in the task's state word instead of a mutex, and its
//! waiters wait in a table outside the task (`waiting.rs`): the completion's 32 bytes (a
//! mutex, the stage's tag, a pointer for waiters) become the slot's 8 for a small closure
//! and output. With both, a pending one-shot's block is 40 bytes, a 48-byte malloc chunk.
//!
//! # Invariants (every function here relies on them)
//! - R1: a `TaskRef` points at the [`Header`] of a live task that was boxed by
//!   [`TaskRef::new`], as a `J: Task`, at the start of that box (checked there: a task
//!   type keeps its header as its first field, `#[repr(C)]`).
//! - R2: the header's `vtable` is made for that same `J`: `vtable::<J>()` by
//!   [`TaskRef::new`], or `typed_vtable::<T, J>()` by [`TaskRef::new_typed`], which alone
//!   makes the [`TypedRef<T>`]s that call its `outcome` entry for that `T`. It is written
//!   through `&mut` before the task is shared, and nothing writes it again.
//! - R3: the header's count is the number of live `TaskRef`s to the task (at least 1
//!   while any exists); the one that takes it to 0 frees the box, once.
//!
//! - R4 (a one-shot's slot, [`OnceCore`]): the slot holds what the task's state word says
//!   (`state.rs`, "Flags"): the closure while `CLOSURE` is set, the output (DONE) or the
//!   panic payload (PANICKED) while `OUTPUT` is set, nothing otherwise. Each flag is
//!   cleared by exactly one read-modify-write, and only its author then touches the value
//!   (moves it out): `CLOSURE` by the runner (task RUNNING) or by a canceller (task
//!   CANCELLED, which an interrupt may have made of a RUNNING task before the runner's
//!   take), `OUTPUT` by the one who takes the outcome. The slot is written only by the
//!   runner, after the take that cleared `CLOSURE` and before the `finish_with_output`
//!   that sets `OUTPUT`; between the two no flag is set, so no one else reads it. A
//!   runner whose finish loses (an interrupt made the task CANCELLED) takes its outcome
//!   back: still no flag is set.
//!
//! # Ordering
//! As `std::sync::Arc`: an increment is `Relaxed` (a new reference is made from an
//! existing one, which already keeps the task alive); a decrement is `Release`, and the
//! last one is followed by an `Acquire` fence, so every use of the task through any
//! reference happens-before its drop. The count is `std`'s atomic in every build, as
//! `Arc` is (`sync.rs`): the models check the protocols, not reference counts.

#![allow(unsafe_code)]

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use super::state::{End, Exchange, Start, State, CLOSURE, OUTPUT, WAITING};
use super::{drop_quietly, waiting, Header, Outcome, Task, TypedTask};
use crate::clock::Ticks;
use crate::error::{PanicPayload, TaskError};
use crate::sync::UnsafeCell;

/// What a [`TaskRef`] needs to know of its task's type (R2).
pub(crate) struct VTable {
    /// The task as the trait object the pool calls.
    job: unsafe fn(NonNull<Header>) -> NonNull<dyn Task>,
    /// Drops the task and frees its box.
    dealloc: unsafe fn(NonNull<Header>),
    /// Writes the task's completion, a `NonNull<dyn Outcome<T>>`, where the second
    /// argument points: only in the vtable of a task boxed by [`TaskRef::new_typed`] for
    /// that `T`, and only called through a [`TypedRef<T>`] of the same `T` (R2).
    outcome: unsafe fn(NonNull<Header>, *mut ()),
}

/// The vtable of a task of type `J`, whose output type no handle will ask for.
fn vtable<J: Task + 'static>() -> &'static VTable {
    &VTable {
        job: job::<J>,
        dealloc: dealloc::<J>,
        outcome: no_outcome,
    }
}

/// The vtable of a task of type `J` whose futures know its output type `T`.
fn typed_vtable<T: 'static, J: Task + 'static + TypedTask<T>>() -> &'static VTable {
    &VTable {
        job: job::<J>,
        dealloc: dealloc::<J>,
        outcome: outcome::<T, J>,
    }
}

/// # Safety
/// Never called: no [`TypedRef`] holds a task with an untyped vtable (R2).
unsafe fn no_outcome(_: NonNull<Header>, _: *mut ()) {
    unreachable!("an untyped task has no TypedRef")
}

/// The vtable of a task that was never boxed (a unit test's bare task): no `TaskRef`
/// points at such a task, so its entries are never called.
pub(super) static UNBOXED: VTable = VTable {
    job: unboxed_job,
    dealloc: unboxed_dealloc,
    outcome: no_outcome,
};

/// # Safety
/// Never called (see [`UNBOXED`]).
unsafe fn unboxed_job(_: NonNull<Header>) -> NonNull<dyn Task> {
    unreachable!("a bare task has no TaskRef")
}

/// # Safety
/// Never called (see [`UNBOXED`]).
unsafe fn unboxed_dealloc(_: NonNull<Header>) {
    unreachable!("a bare task has no TaskRef")
}

/// # Safety
/// `ptr` points at the header of a live task boxed as a `J` (R1).
unsafe fn job<J: Task + 'static>(ptr: NonNull<Header>) -> NonNull<dyn Task> {
    // R1: the header is at the start of the `J` box, so the cast names the whole task.
    let task: NonNull<J> = ptr.cast();
    task
}

/// # Safety
/// - `ptr` points at the header of a task boxed as a `J` (R1);
/// - no reference to it is left (R3: the caller took the count to 0).
unsafe fn dealloc<J: Task + 'static>(ptr: NonNull<Header>) {
    // SAFETY:
    // * the box was made by `Box::new` as a `J` (R1), and is freed once (R3).
    drop(unsafe { Box::from_raw(ptr.cast::<J>().as_ptr()) });
}

/// A counted thin pointer to a task: what the queue, the workers and the handles hold
/// (see the module notes). `Deref` gives the task as a [`Task`].
pub(crate) struct TaskRef {
    ptr: NonNull<Header>,
}

// SAFETY:
// * a task is `Send + Sync` (`Task`'s bounds), and a `TaskRef` only shares it (as `Arc`).
unsafe impl Send for TaskRef {}
// SAFETY:
// * as for `Send`: `&TaskRef` gives only `&dyn Task`, which is `Sync`.
unsafe impl Sync for TaskRef {}

/// The most references a task may have; one more aborts (as `Arc` does past
/// `isize::MAX`), since a wrapped count would free a task still in use.
const MAX_REFS: u32 = u32::MAX / 2;

impl TaskRef {
    /// Boxes `task` and returns its first reference.
    pub(crate) fn new<J: Task + 'static>(task: J) -> TaskRef {
        TaskRef::boxed(task, vtable::<J>(), 1)
    }

    /// Boxes `task` with `vtable` (made for `J`: R2) and returns its first reference,
    /// with the count at `refs`: the caller makes the other `refs - 1` references from
    /// this pointer before anything else sees it (R3).
    fn boxed<J: Task + 'static>(mut task: J, vtable: &'static VTable, refs: u32) -> TaskRef {
        task.header_mut().vtable = vtable; // R2, before it is shared
        task.header_mut().refs = AtomicU32::new(refs); // R3, with the caller's copies
        let boxed = Box::new(task);
        // R1: the header must sit at the start of the box for the casts in `job` and
        // `dealloc`. A task type's layout fixes it; this keeps a wrong one from compiling
        // into undefined behaviour.
        assert!(
            std::ptr::eq(
                boxed.header() as *const Header as *const u8,
                &*boxed as *const J as *const u8
            ),
            "a task type keeps its header first"
        );
        TaskRef {
            ptr: NonNull::from(Box::leak(boxed)).cast(),
        }
    }

    /// Boxes `task` and returns a reference that also knows its output type.
    pub(crate) fn new_typed<T: 'static, J: Task + 'static + TypedTask<T>>(task: J) -> TypedRef<T> {
        TypedRef {
            task: TaskRef::boxed(task, typed_vtable::<T, J>(), 1),
            _output: PhantomData,
        }
    }

    /// Boxes `task` and returns two references, the future's (typed) and the queue's,
    /// with the count written as 2 before the task is shared: what
    /// `new_typed(task)` and a `clone` give, without the clone's atomic increment.
    pub(crate) fn new_typed_pair<T: 'static, J: Task + 'static + TypedTask<T>>(
        task: J,
    ) -> (TypedRef<T>, TaskRef) {
        let first = TaskRef::boxed(task, typed_vtable::<T, J>(), 2);
        // R3: the count already holds this second reference.
        let second = TaskRef { ptr: first.ptr };
        (
            TypedRef {
                task: first,
                _output: PhantomData,
            },
            second,
        )
    }

    /// The task's header, without a call through its vtable.
    #[inline]
    pub(crate) fn header(&self) -> &Header {
        // SAFETY:
        // * R1: `ptr` points at a live task's header while this reference exists (R3).
        unsafe { self.ptr.as_ref() }
    }

    /// `true` if both name the same task.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn ptr_eq(a: &TaskRef, b: &TaskRef) -> bool {
        a.ptr == b.ptr
    }
}

impl std::ops::Deref for TaskRef {
    type Target = dyn Task + 'static;

    #[inline]
    fn deref(&self) -> &(dyn Task + 'static) {
        let header = self.header();
        // SAFETY:
        // * R2: the vtable is the one of the task's own type;
        // * R1, R3: the task is live while `self` is, and `job` only casts the pointer;
        // * the result borrows from `self`, so it cannot outlive the reference.
        unsafe { (header.vtable.job)(self.ptr).as_ref() }
    }
}

impl Clone for TaskRef {
    #[inline]
    fn clone(&self) -> Self {
        // Relaxed: the new reference comes from this one, which keeps the task alive
        // (module notes).
        let old = self.header().refs.fetch_add(1, Ordering::Relaxed);
        if old > MAX_REFS {
            std::process::abort();
        }
        TaskRef { ptr: self.ptr }
    }
}

impl Drop for TaskRef {
    #[inline]
    fn drop(&mut self) {
        // Release: this reference's uses happen-before the free (module notes).
        if self.header().refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Acquire: pairs with every other reference's `Release` decrement.
        #[cfg(not(schedpool_tsan))]
        std::sync::atomic::fence(Ordering::Acquire);
        // ThreadSanitizer does not model fences: the same Acquire as a load of the count
        // (which is 0 and stays 0), as std's `Arc` does under TSan. `--cfg schedpool_tsan`
        // is set by a TSan build (`RUSTFLAGS="-Zsanitizer=thread --cfg schedpool_tsan"`).
        #[cfg(schedpool_tsan)]
        let _ = self.header().refs.load(Ordering::Acquire);
        let dealloc = self.header().vtable.dealloc;
        // SAFETY:
        // * R1, R2: `dealloc` is the task's own type's;
        // * R3: this was the last reference (the count went 1 -> 0 here), so nothing
        //   uses the task after this call.
        unsafe { dealloc(self.ptr) }
    }
}

impl fmt::Debug for TaskRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.header(), f)
    }
}

/// # Safety
/// - `ptr` points at the header of a live task boxed as a `J` (R1);
/// - `out` points at a `MaybeUninit<NonNull<dyn Outcome<T>>>` for this `T` (the
///   [`TypedRef<T>`] that calls it, R2).
unsafe fn outcome<T: 'static, J: Task + 'static + TypedTask<T>>(
    ptr: NonNull<Header>,
    out: *mut (),
) {
    // SAFETY:
    // * R1: the box holds a live `J`; the reference lives only for this function.
    let task: &J = unsafe { ptr.cast::<J>().as_ref() };
    let completion = NonNull::from(task.outcome());
    // SAFETY:
    // * the caller's `out` is valid for a write of this type (the contract above).
    unsafe { out.cast::<NonNull<dyn Outcome<T>>>().write(completion) };
}

/// A [`TaskRef`] that also knows its task's output type: what a `ScheduledFuture<T>`
/// holds. Made only by [`TaskRef::new_typed`], so its task's vtable has the completion
/// for this `T` (R2). Still one pointer.
pub(crate) struct TypedRef<T> {
    task: TaskRef,
    _output: PhantomData<fn() -> T>,
}

impl<T> TypedRef<T> {
    /// The untyped reference (for the queue).
    #[inline]
    pub(crate) fn task(&self) -> &TaskRef {
        &self.task
    }

    /// Where the task's outcome is delivered.
    #[inline]
    pub(crate) fn outcome<'a>(&'a self) -> &'a (dyn Outcome<T> + 'a) {
        // The writer's type, `NonNull<dyn Outcome<T> + 'static>`, read back with the
        // shorter lifetime the borrow allows (lifetimes do not change the layout).
        let mut out = std::mem::MaybeUninit::<NonNull<dyn Outcome<T> + 'a>>::uninit();
        let header = self.task.header();
        // SAFETY:
        // * R2: this `TypedRef<T>` was made by `new_typed::<T, J>`, whose vtable's
        //   `outcome` is `outcome::<T, J>` for the task's own `J`;
        // * `out` is a `MaybeUninit` of exactly the type it writes; R1, R3: the task is
        //   live while `self.task` is.
        unsafe { (header.vtable.outcome)(self.task.ptr, out.as_mut_ptr().cast()) };
        // SAFETY:
        // * written just above; it points into the task, which `self` keeps alive, and
        //   the result borrows from `self`.
        unsafe { out.assume_init().as_ref() }
    }
}

impl<T> std::ops::Deref for TypedRef<T> {
    type Target = TaskRef;

    #[inline]
    fn deref(&self) -> &TaskRef {
        &self.task
    }
}

impl<T> Clone for TypedRef<T> {
    fn clone(&self) -> Self {
        TypedRef {
            task: self.task.clone(),
            _output: PhantomData,
        }
    }
}

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
        match self.header.edges().start_once() {
            Start::Run => {}
            Start::NotScheduled => return None,
        }
        if !self.header.edges().take_closure(State::Running) {
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
        match self.header.edges().finish_with_output(end) {
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

    /// After a cancel or an interrupt that won (T2): the closure, if it is still in the
    /// slot (a cancel of a SCHEDULED task, or an interrupt before the runner's take; a run
    /// that took it holds its own).
    #[inline]
    pub(crate) fn take_cancelled_closure(&self) -> Option<F> {
        if !self.header.edges().take_closure(State::Cancelled) {
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
                    self.header.edges().take_output(),
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
        let word = self.header.edges().word();
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::task::testing::DropCount;
    use crate::task::{OnceTask, Plain};
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn the_last_reference_frees_the_task_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let a = TaskRef::new(OnceTask::new(7, Plain(move || drop(guard))));
        let b = a.clone();
        assert!(TaskRef::ptr_eq(&a, &b));
        let other = TaskRef::new(OnceTask::new(7, Plain(|| ())));
        assert!(!TaskRef::ptr_eq(&a, &other), "two tasks are two");
        assert_eq!(a.header().deadline(), 7);
        assert_eq!(b.header().deadline(), 7, "Deref and header name one task");
        drop(a);
        assert_eq!(drops.load(Ordering::SeqCst), 0, "one reference is left");
        drop(b);
        assert_eq!(drops.load(Ordering::SeqCst), 1, "freed with the closure");
    }

    #[test]
    fn references_from_many_threads_free_the_task_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let t = TaskRef::new(OnceTask::new(0, Plain(move || drop(guard))));
        std::thread::scope(|s| {
            for _ in 0..4 {
                let mine = t.clone();
                s.spawn(move || {
                    for _ in 0..1000 {
                        drop(mine.clone());
                    }
                    drop(mine);
                });
            }
        });
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        drop(t);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_pair_is_two_references_to_one_task() {
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let (typed, queued) = TaskRef::new_typed_pair(OnceTask::new(5, Plain(move || drop(guard))));
        assert!(TaskRef::ptr_eq(typed.task(), &queued));
        assert_eq!(queued.header().refs.load(Ordering::Relaxed), 2);
        drop(queued);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            0,
            "the future's reference is left"
        );
        assert_eq!(typed.header().refs.load(Ordering::Relaxed), 1);
        drop(typed);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "freed with the closure, once"
        );
    }

    #[test]
    fn a_count_at_the_limit_still_clones() {
        // `MAX_REFS` references may still make one more; only a count past it aborts.
        let t = TaskRef::new(OnceTask::new(0, Plain(|| ())));
        t.header().refs.store(MAX_REFS, Ordering::Relaxed);
        let u = t.clone();
        assert_eq!(t.header().refs.load(Ordering::Relaxed), MAX_REFS + 1);
        t.header().refs.store(2, Ordering::Relaxed); // the two references that exist
        drop(u);
        drop(t);
    }

    #[test]
    fn a_task_ref_debugs_as_its_header() {
        let t = TaskRef::new(OnceTask::new(3, Plain(|| ())));
        let shown = format!("{t:?}");
        assert_eq!(shown, format!("{:?}", t.header()));
        assert!(shown.contains("scheduled"), "{shown}");
    }

    #[test]
    fn a_typed_reference_reaches_the_outcome() {
        let t = TaskRef::new_typed(OnceTask::new(0, Plain(|| 3)));
        let env_clock = crate::task::testing::clock();
        let report = t.task().run(&crate::task::testing::env(&env_clock, 0));
        assert!(report.ran);
        assert_eq!(t.clone().outcome().wait_take().unwrap(), 3);
    }

    #[test]
    fn a_task_ref_is_one_pointer() {
        assert_eq!(std::mem::size_of::<TaskRef>(), 8);
        assert_eq!(std::mem::size_of::<Option<TaskRef>>(), 8);
        assert_eq!(std::mem::size_of::<TypedRef<u64>>(), 8);
        // A future: its task and its pool (`Arc<dyn Host>`, a stripe).
        assert_eq!(std::mem::size_of::<crate::ScheduledFuture<()>>(), 24);
        // A heap node and a lane slot (`docs/DESIGN.md`, "Memory").
        type Node = crate::pool::Entry;
        assert_eq!(std::mem::size_of::<Node>(), 16);
        assert_eq!(std::mem::size_of::<Option<Node>>(), 16);
    }

    #[test]
    fn a_pending_one_shot_with_a_small_closure_fits_a_48_byte_chunk() {
        // `docs/DESIGN.md`, "Memory": the 32-byte header and an 8-byte slot, 40 bytes, a
        // 48-byte malloc chunk (glibc adds 8 bytes and rounds up to 16).
        fn size_of_task<F: FnOnce() -> T + Send + 'static, T: Send + 'static>(_: &F) -> usize {
            std::mem::size_of::<OnceTask<Plain<F>, T>>()
        }
        assert_eq!(std::mem::size_of::<Header>(), 32);
        assert_eq!(size_of_task(&|| {}), 40, "no capture, no output");
        let token = Arc::new(AtomicUsize::new(0));
        let one_capture = move || {
            token.fetch_add(1, Ordering::Relaxed);
        };
        assert_eq!(size_of_task(&one_capture), 40, "one pointer captured");
        assert_eq!(size_of_task(&|| 7u64), 40, "an 8-byte output");
    }
}
