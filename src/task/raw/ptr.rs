//! [`TaskRef`] and [`TypedRef`]: the counted thin pointer, its vtable and its count
//! (R1–R3 in `mod.rs`).

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{RawWaker, RawWakerVTable, Waker};

use crate::task::{Header, Outcome, Task, TypedTask};

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
pub(in crate::task) static UNBOXED: VTable = VTable {
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
pub(in crate::task) const MAX_REFS: u32 = u32::MAX / 2;

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

/// The vtable of a task's [`Waker`]s: a waker is a counted reference to its task (R3), and
/// waking it calls [`Task::wake`] with that reference (a suspended run queues itself,
/// `task/suspended.rs`). tokio's `runtime/task/waker.rs` has the same shape.
static WAKER: RawWakerVTable =
    RawWakerVTable::new(waker_clone, waker_wake, waker_wake_by_ref, waker_drop);

impl TaskRef {
    /// Calls `f` with a waker of this task lent without a count of its own: the waker lives
    /// only within `f`, while `self` keeps the task alive, and a clone of it (a runtime
    /// keeping it for later) takes one, as a `TaskRef` clone does.
    pub(crate) fn with_waker<R>(&self, f: impl FnOnce(&Waker) -> R) -> R {
        let raw = RawWaker::new(self.ptr.as_ptr().cast_const().cast(), &WAKER);
        // SAFETY:
        // * `raw`'s data is this task's header (R1) and its vtable `WAKER`, whose functions
        //   treat the data as a `TaskRef`: its contract holds;
        // * `ManuallyDrop`: this waker owns no count and is never dropped, so the count
        //   stays the number of live references (R3); it does not outlive `self`, which
        //   keeps the task alive while `f` runs.
        let waker = ManuallyDrop::new(unsafe { Waker::from_raw(raw) });
        f(&waker)
    }

    /// The reference a waker's data holds.
    ///
    /// # Safety
    /// `data` was made from a `TaskRef`'s pointer (`with_waker`, `waker_clone`), and the
    /// caller owns the count it stands for, or keeps the result from being dropped.
    unsafe fn from_waker_data(data: *const ()) -> TaskRef {
        // SAFETY:
        // * a task's header pointer, never null (R1; the caller's contract).
        let ptr = unsafe { NonNull::new_unchecked(data.cast_mut().cast()) };
        TaskRef { ptr }
    }
}

/// A waker's clone: a new counted reference.
///
/// # Safety
/// `data` is a waker's data of `WAKER` (a task's header), alive while the waker exists.
unsafe fn waker_clone(data: *const ()) -> RawWaker {
    // SAFETY:
    // * the contract above; `ManuallyDrop`: the borrowed waker's count is not given back.
    let task = ManuallyDrop::new(unsafe { TaskRef::from_waker_data(data) });
    let copy = ManuallyDrop::new(TaskRef::clone(&task)); // R3: one more, the new waker's
    RawWaker::new(copy.ptr.as_ptr().cast_const().cast(), &WAKER)
}

/// Wakes the task and gives the waker's count back.
///
/// # Safety
/// `data` is an owned waker's data of `WAKER`: its count is the caller's to give back.
unsafe fn waker_wake(data: *const ()) {
    // SAFETY:
    // * the waker's count becomes this reference's, given back when it drops (R3).
    let task = unsafe { TaskRef::from_waker_data(data) };
    task.wake(&task);
}

/// Wakes the task; the waker keeps its count.
///
/// # Safety
/// `data` is a live waker's data of `WAKER`.
unsafe fn waker_wake_by_ref(data: *const ()) {
    // SAFETY:
    // * the waker is alive for this call; `ManuallyDrop` keeps its count.
    let task = ManuallyDrop::new(unsafe { TaskRef::from_waker_data(data) });
    task.wake(&task);
}

/// Drops a waker: gives its count back.
///
/// # Safety
/// `data` is an owned waker's data of `WAKER`.
unsafe fn waker_drop(data: *const ()) {
    // SAFETY:
    // * the waker's count becomes this reference's, given back here (R3).
    drop(unsafe { TaskRef::from_waker_data(data) });
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
