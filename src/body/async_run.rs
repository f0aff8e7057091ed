//! Async bodies: a job whose closure makes a future, which the job's worker polls to
//! completion on an [`AsyncRuntime`] (`schedule_async` and its periodic forms,
//! `executor/async_jobs.rs`). [`Async`] is the adaptor: a one-shot's body
//! (`task::OnceBody`), a periodic one that says what comes next (`task::PeriodicBody`,
//! its future yielding a `Next`), and a fallible one's attempt (`Attempt`, for
//! `Fallible`), so the task layer and `Guarded` (span link, cluster lock) treat it as
//! any closure.
//!
//! # Design
//! A run calls the runtime's `block_on` with the crate's own future, [`awaited`], which
//! makes the job's future in its first poll (inside the runtime's context: a tokio timer
//! made outside it panics, "there is no reactor running", which is the trap of
//! `handle.block_on(tokio::time::sleep(d))`), then polls it with its panic contained and
//! drops it, in the runtime's context, when it is done or when the run must stop. The
//! worker is busy until then, so every property of a closure's run holds as it is: one
//! run at a time per task, `active_count`, `wait_idle`, a fixed delay counted from the
//! future's completion, lateness. We rejected spawning the future and freeing the worker
//! meanwhile: the task would be RUNNING with no worker, and `wait_idle`, `active_count`,
//! the fixed delay, `shutdown_now`'s list and termination would each need a second
//! notion of a running task; a pool that runs many async jobs at once wants that many
//! workers, as it would for closures.
//!
//! # Stopping
//! A run must stop when its task is interrupted (`ScheduledFuture::interrupt`: the
//! state word's `INTERRUPTED` flag, `task/state.rs`) or when `shutdown_now` begins while
//! it runs on a worker: the two stops of [`TaskContext::is_cancelled`], less a plain
//! cancel, which lets a periodic task's current run complete, as a closure's. Async code
//! has cooperative cancellation for free, so a stop drops the future at its next await
//! point and the run ends without an output ([`Ran::Stopped`], [`Step::Stopped`]); the
//! task ends CANCELLED, and its future says `Cancelled`. A poll that returns pending
//! lists the run's waker with the pool's waiting runs, then checks for a stop
//! (`task/sleepers.rs`, S1 and S2); a cancel, an interrupt and `shutdown_now` wake the
//! listed wakers after their change, so the runtime polls the run again and the check
//! sees it. The check also opens each poll, so a stopped future is not polled again.
//!
//! # Panics
//! The job's closure, its future's polls and its drop are user code, called through
//! `user::contain` (no lock of ours is held) inside the poll: a panic ends the poll with
//! the future dropped, and the run re-raises it after `block_on` returns, where the task
//! layer catches it as any run's panic (`TaskError::Panicked`, counted, traced, the
//! periodic `OnPanic` policy). The runtime never sees a job's panic.

use std::future::{poll_fn, Future};
use std::panic::resume_unwind;
use std::pin::{pin, Pin};
use std::task::Poll;

use super::context::{step_of, Attempt, TaskContext};
use crate::runtime::AsyncRuntime;
use crate::schedule::Next;
use crate::task::{sleepers, OnceBody, PeriodicBody, Ran, RunCx, Step};
use crate::user::{self, Panic};

/// A job's closure that makes a future for each run, with the runtime that runs it.
pub(crate) struct Async<R, G> {
    runtime: R,
    make: G,
}

impl<R: AsyncRuntime, G> Async<R, G> {
    pub(crate) fn new(runtime: R, make: G) -> Self {
        Async { runtime, make }
    }
}

/// How an awaited run ended.
enum Awaited<T> {
    /// The future completed with this output.
    Output(T),
    /// The run had to stop; the future (if it was made) was dropped.
    Stopped,
    /// The closure, a poll or the future's drop panicked; the future was dropped.
    Panicked(Panic),
}

impl<T> Awaited<T> {
    /// The run's end as a body returns it: a panic goes on unwinding from here, into the
    /// task's run (module notes, "Panics").
    fn or_unwind(self) -> Option<T> {
        match self {
            Awaited::Output(v) => Some(v),
            Awaited::Stopped => None,
            Awaited::Panicked(p) => resume_unwind(p),
        }
    }
}

/// `true` once the run must stop (module notes, "Stopping").
fn must_stop(cx: &RunCx<'_>) -> bool {
    cx.header.is_interrupted() || (cx.env.on_worker && cx.env.pool.is_some_and(|p| p.is_stopping()))
}

/// One run: the future `make` makes, awaited on `runtime` until it completes or the run
/// must stop.
fn run<R, Fut>(
    runtime: &R,
    cx: &RunCx<'_>,
    make: impl FnOnce(&TaskContext<'_>) -> Fut,
) -> Awaited<Fut::Output>
where
    R: AsyncRuntime,
    Fut: Future,
{
    let mut ended = None;
    {
        let driven = pin!(async {
            ended = Some(awaited(cx, make).await);
        });
        runtime.block_on(driven);
    }
    match ended {
        Some(ended) => ended,
        // A runtime that breaks its contract: the run's panic, not a hang or a guess.
        None => Awaited::Panicked(Box::new(
            "schedpool: the AsyncRuntime's block_on returned before the job's future completed",
        )),
    }
}

/// The future a run's `block_on` polls (module notes, "Design" and "Stopping").
async fn awaited<Fut: Future>(
    cx: &RunCx<'_>,
    make: impl FnOnce(&TaskContext<'_>) -> Fut,
) -> Awaited<Fut::Output> {
    if must_stop(cx) {
        return Awaited::Stopped; // stopped between the start and the first poll
    }
    let fut = match user::contain(|| make(&TaskContext::of(cx))) {
        Ok(fut) => fut,
        Err(p) => return Awaited::Panicked(p),
    };
    let mut fut = pin!(Some(fut));
    let sleepers = cx.env.pool.map(|p| p.sleepers());
    let key = cx.env.task.map_or(0, |t| sleepers::key(&**t)); // S1: the task's own wake-ups
    let mut listed = None; // the run's place among the waiting runs, from its first pending poll
    poll_fn(|task| {
        if must_stop(cx) {
            return Poll::Ready(dropped(fut.as_mut(), Awaited::Stopped));
        }
        let Some(inner) = fut.as_mut().as_pin_mut() else {
            unreachable!("an ended run is not polled again");
        };
        match user::contain(|| inner.poll(task)) {
            Ok(Poll::Ready(v)) => Poll::Ready(dropped(fut.as_mut(), Awaited::Output(v))),
            Ok(Poll::Pending) => {
                // S1, S2 (`task/sleepers.rs`): listed, or the waker put back, then checked.
                let stop = match sleepers {
                    Some(s) => s.pending(key, &mut listed, task.waker(), || must_stop(cx)),
                    None => must_stop(cx), // a bare task in unit tests: nobody stops it
                };
                if stop {
                    Poll::Ready(dropped(fut.as_mut(), Awaited::Stopped))
                } else {
                    Poll::Pending
                }
            }
            Err(p) => Poll::Ready(dropped(fut.as_mut(), Awaited::Panicked(p))),
        }
    })
    .await
}

/// Drops the run's future in place (in the runtime's context, where its destructor may
/// need to be), then says how the run ended: `ended`, or the destructor's panic (the
/// output is then dropped; after a poll's panic, the poll's is kept and the destructor's
/// reported).
fn dropped<Fut: Future>(
    mut fut: Pin<&mut Option<Fut>>,
    ended: Awaited<Fut::Output>,
) -> Awaited<Fut::Output> {
    let Err(p) = user::contain(|| fut.set(None)) else {
        return ended;
    };
    match ended {
        Awaited::Panicked(first) => {
            user::report(user::Door::Drop, p);
            Awaited::Panicked(first)
        }
        Awaited::Output(v) => {
            user::drop_quietly(v);
            Awaited::Panicked(p)
        }
        Awaited::Stopped => Awaited::Panicked(p),
    }
}

impl<R, G, Fut> OnceBody<Fut::Output> for Async<R, G>
where
    R: AsyncRuntime,
    G: FnOnce(&TaskContext<'_>) -> Fut + Send + 'static,
    Fut: Future,
{
    fn call(self, cx: &RunCx<'_>) -> Ran<Fut::Output> {
        match run(&self.runtime, cx, self.make).or_unwind() {
            Some(v) => Ran::Output(v),
            None => Ran::Stopped,
        }
    }
}

impl<R, G, Fut> PeriodicBody for Async<R, G>
where
    R: AsyncRuntime,
    G: FnMut(&TaskContext<'_>) -> Fut + Send + 'static,
    Fut: Future<Output = Next>,
{
    type Output = ();

    fn output(&mut self) {}

    fn call(&mut self, cx: &RunCx<'_>) -> Step {
        match run(&self.runtime, cx, &mut self.make).or_unwind() {
            Some(next) => step_of(next, cx),
            None => Step::Stopped,
        }
    }
}

impl<R, G, Fut, E> Attempt<E> for Async<R, G>
where
    R: AsyncRuntime,
    G: FnMut(&TaskContext<'_>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Next, E>>,
    E: 'static,
{
    fn attempt(&mut self, cx: &RunCx<'_>) -> Option<Result<Next, E>> {
        run(&self.runtime, cx, &mut self.make).or_unwind()
    }
}
