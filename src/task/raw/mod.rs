//! The crate's one `unsafe` module: [`TaskRef`], a counted thin pointer to a task with a
//! vtable of its own, which is also the task's `Waker` (`ptr.rs`), and [`OnceCore`], a one-shot's slot without a mutex
//! (`slot.rs`). R1–R4 below are what every function of both files relies on.
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
//! - R1: a `TaskRef` points at the [`Header`](crate::task::Header) of a live task that
//!   was boxed by [`TaskRef::new`], as a `J: Task`, at the start of that box (checked
//!   there: a task type keeps its header as its first field, `#[repr(C)]`).
//! - R2: the header's `vtable` is made for that same `J`: `vtable::<J>()` by
//!   [`TaskRef::new`], or `typed_vtable::<T, J>()` by [`TaskRef::new_typed`], which alone
//!   makes the [`TypedRef<T>`]s that call its `outcome` entry for that `T`. It is written
//!   through `&mut` before the task is shared, and nothing writes it again.
//! - R3: the header's count is the number of live `TaskRef`s to the task, and of its
//!   owned `Waker`s (`ptr.rs`: a waker is a `TaskRef` behind a `RawWaker`; one lent by
//!   `TaskRef::with_waker` owns none) (at least 1 while any exists); the one that takes it
//!   to 0 frees the box, once.
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
//!   back: still no flag is set. A run stopped without an outcome writes nothing and
//!   ends RUNNING -> CANCELLED, which sets no flag either (`finish_stopped`).
//!
//! # Ordering
//! As `std::sync::Arc`: an increment is `Relaxed` (a new reference is made from an
//! existing one, which already keeps the task alive); a decrement is `Release`, and the
//! last one is followed by an `Acquire` fence, so every use of the task through any
//! reference happens-before its drop. The count is `std`'s atomic in every build, as
//! `Arc` is (`sync.rs`): the models check the protocols, not reference counts.

#![allow(unsafe_code)]

mod ptr;
mod slot;

pub(in crate::task) use ptr::UNBOXED;
pub(crate) use ptr::{TaskRef, TypedRef, VTable};
pub(crate) use slot::{OnceCore, Started, StartedRun};

#[cfg(all(test, not(loom)))]
mod tests;
