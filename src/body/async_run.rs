//! Async bodies: a job whose closure makes a future per run, polled on an
//! [`AsyncRuntime`] (`schedule_async` and its periodic forms, `executor/async_jobs.rs`).
//! [`Async`] and [`SendAsync`] are the adaptors: a one-shot's body (`task::OnceBody`), a
//! periodic one that says what comes next (`task::PeriodicBody`, its future yielding a
//! `Next`), and a fallible one's attempt (`Attempt`, for `Fallible`), so the task layer
//! and `Guarded` (span link, cluster lock) treat them as any closure.
//!
//! # Design
//! [`Async`] (the forms whose future need not be `Send`): a run calls the runtime's
//! `block_on` with the crate's own future, [`awaited`], which makes the job's future in
//! its first poll (inside the runtime's context: a tokio timer made outside it panics,
//! "there is no reactor running", which is the trap of
//! `handle.block_on(tokio::time::sleep(d))`), then polls it with its panic contained and
//! drops it, in the runtime's context, when it is done or when the run must stop. The
//! worker is busy until then, and a future that is not `Send` never leaves its thread.
//!
//! # Off the worker
//! [`SendAsync`] (the `*_send` forms, a `Send` future): on a worker, with a runtime the
//! pool can enter ([`AsyncRuntime::can_enter`]), its `call` returns `Pending` at once and
//! the run goes on without the worker (`task/suspended.rs`): each poll, on whichever
//! thread resumes the run ([`PeriodicBody::resume`], [`OnceResume::resume`]), enters the
//! runtime's context ([`AsyncRuntime::enter`]), makes the future at the first poll (as
//! `awaited` does), polls it with its panics contained, and drops it when it completes,
//! panics or the run must stop ([`poll_off`]). The future lives in a box the body makes
//! once and reuses for every run. Elsewhere (a runtime with only `block_on`, a run on the
//! caller's thread) it runs as [`Async`]'s. Every property of a run holds on both paths
//! (`docs/DESIGN.md`, "Async bodies").
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
use std::task::{Context, Poll, Waker};

use super::context::{step_of, Attempt, TaskContext};
use crate::runtime::AsyncRuntime;
use crate::schedule::Next;
use crate::task::{sleepers, OnceBody, OnceResume, PeriodicBody, Permit, Ran, RunCx, Step};
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
    fn attempt(&mut self, cx: &RunCx<'_>) -> Poll<Option<Result<Next, E>>> {
        Poll::Ready(run(&self.runtime, cx, &mut self.make).or_unwind())
    }
}

/// An async job's closure whose futures are `Send`, with its runtime (the `*_send` job
/// forms). On a worker of a pool, with a runtime that can be entered
/// ([`AsyncRuntime::can_enter`]), its run gives the worker back while its future is
/// pending (module notes, "Off the worker"): its `call` only says so (`Pending`), and each
/// later poll, on whichever thread resumes the run, makes the future at the first and
/// polls it inside the runtime's context. Elsewhere (a runtime with only `block_on`, a run
/// on the caller's thread) it runs as [`Async`]'s.
pub(crate) struct SendAsync<R, G, Fut> {
    runtime: R,
    make: G,
    /// The run's future, from its first poll to its end; the box is made once, with the
    /// body, and holds each run's future in turn.
    fut: Pin<Box<Option<Fut>>>,
    /// The run's permit under the pool's bound (`Builder::max_async_runs`), taken before
    /// its future is made and given back when it is dropped.
    permit: Permit,
    /// The losing candidate (`--cfg schedpool_async_spawn` only): the run's future spawned
    /// on the runtime, and where its end comes back.
    #[cfg(schedpool_async_spawn)]
    spawned: Option<spawn::Cell>,
}

impl<R: AsyncRuntime, G, Fut> SendAsync<R, G, Fut> {
    pub(crate) fn new(runtime: R, make: G) -> Self {
        SendAsync {
            runtime,
            make,
            fut: Box::pin(None),
            permit: Permit::None,
            #[cfg(schedpool_async_spawn)]
            spawned: None,
        }
    }

    /// `true` if this run goes on without its worker: on a pool's worker, with a runtime the
    /// pool can enter.
    fn off_worker(&self, cx: &RunCx<'_>) -> bool {
        let worker = cx.env.on_worker && cx.env.handoff.is_some() && cx.env.pool.is_some();
        worker && self.runtime.can_enter()
    }
}

/// One poll of a run off its worker, inside the runtime's context: the future made at the
/// first poll (as [`awaited`] makes it), polled with its panics contained, and dropped in
/// place when it completes, panics or the run must stop (a stop is checked first, so a
/// stopped future is not polled again: module notes, "Stopping").
#[cfg_attr(schedpool_async_spawn, allow(dead_code))] // the candidate polls elsewhere
fn poll_off<R, Fut>(
    runtime: &R,
    (cx, waker): (&RunCx<'_>, &Waker),
    mut fut: Pin<&mut Option<Fut>>,
    permit: &mut Permit,
    make: impl FnOnce() -> Fut,
) -> Poll<Awaited<Fut::Output>>
where
    R: AsyncRuntime,
    Fut: Future,
{
    let polled = poll_permitted(runtime, (cx, waker), fut.as_mut(), permit, make);
    ended(cx, permit, polled)
}

/// A run's poll that ended: its permit goes on (PM1).
fn ended<O>(cx: &RunCx<'_>, permit: &mut Permit, polled: Poll<O>) -> Poll<O> {
    if polled.is_ready() {
        // The future is dropped: its permit goes to the next waiting run (PM1).
        if let Some(pool) = cx.env.pool {
            pool.async_permits().release(permit);
        }
    }
    polled
}

/// [`poll_off`]'s poll: at the first, the run's permit (or its wait for one, pending), then
/// the future's poll inside the runtime's context.
#[cfg_attr(schedpool_async_spawn, allow(dead_code))] // the candidate polls elsewhere
fn poll_permitted<R, Fut>(
    runtime: &R,
    (cx, waker): (&RunCx<'_>, &Waker),
    mut fut: Pin<&mut Option<Fut>>,
    permit: &mut Permit,
    make: impl FnOnce() -> Fut,
) -> Poll<Awaited<Fut::Output>>
where
    R: AsyncRuntime,
    Fut: Future,
{
    if fut.is_none() {
        if must_stop(cx) {
            return Poll::Ready(Awaited::Stopped); // stopped while it waited for its permit
        }
        let permitted = cx
            .env
            .pool
            .is_none_or(|p| p.async_permits().acquire(permit, waker));
        if !permitted {
            return Poll::Pending; // queued for a permit: woken when it is handed one
        }
    }
    let mut make = Some(make);
    let mut polled = None;
    // The runtime's `enter` is user code too: its panic ends the run, the future dropped.
    let entered = user::contain(|| {
        runtime.enter(&mut || {
            if let Some(make) = make.take() {
                polled = Some(poll_entered(cx, waker, fut.as_mut(), make));
            }
        })
    });
    match (polled, entered) {
        (Some(polled), Ok(())) => polled,
        // `enter` unwound, before the poll or after it: the run ends with its panic (an
        // output the poll had is dropped, contained).
        (polled, Err(p)) => {
            user::drop_quietly(polled);
            Poll::Ready(dropped(fut, Awaited::Panicked(p)))
        }
        // A runtime whose `enter` returned without calling `poll`: a broken contract.
        (None, Ok(())) => Poll::Ready(dropped(
            fut,
            Awaited::Panicked(Box::new(
                "schedpool: the AsyncRuntime's enter returned without polling the job's future",
            )),
        )),
    }
}

/// [`poll_off`]'s poll, in the runtime's context.
#[cfg_attr(schedpool_async_spawn, allow(dead_code))] // the candidate polls elsewhere
fn poll_entered<Fut: Future>(
    cx: &RunCx<'_>,
    waker: &Waker,
    mut fut: Pin<&mut Option<Fut>>,
    make: impl FnOnce() -> Fut,
) -> Poll<Awaited<Fut::Output>> {
    if must_stop(cx) {
        return Poll::Ready(dropped(fut, Awaited::Stopped));
    }
    if fut.is_none() {
        match user::contain(make) {
            Ok(made) => fut.set(Some(made)),
            Err(p) => return Poll::Ready(Awaited::Panicked(p)),
        }
    }
    let Some(inner) = fut.as_mut().as_pin_mut() else {
        unreachable!("made above");
    };
    let mut task = Context::from_waker(waker);
    match user::contain(|| inner.poll(&mut task)) {
        Ok(Poll::Ready(v)) => Poll::Ready(dropped(fut, Awaited::Output(v))),
        Ok(Poll::Pending) => Poll::Pending,
        Err(p) => Poll::Ready(dropped(fut, Awaited::Panicked(p))),
    }
}

impl<R, G, Fut> OnceBody<Fut::Output> for SendAsync<R, G, Fut>
where
    R: AsyncRuntime,
    G: FnOnce(&TaskContext<'_>) -> Fut + Send + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    fn call(self, cx: &RunCx<'_>) -> Ran<Fut::Output> {
        if !self.off_worker(cx) {
            return match run(&self.runtime, cx, self.make).or_unwind() {
                Some(v) => Ran::Output(v),
                None => Ran::Stopped,
            };
        }
        Ran::Pending(Box::new(SendAsync {
            runtime: self.runtime,
            make: Some(self.make),
            fut: self.fut,
            permit: self.permit,
            #[cfg(schedpool_async_spawn)]
            spawned: None,
        }))
    }
}

impl<R, G, Fut> OnceResume<Fut::Output> for SendAsync<R, Option<G>, Fut>
where
    R: AsyncRuntime,
    G: FnOnce(&TaskContext<'_>) -> Fut + Send + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    fn resume(&mut self, cx: &RunCx<'_>, waker: &Waker) -> Poll<Ran<Fut::Output>> {
        let make = &mut self.make;
        let made = || (make.take().expect("made once"))(&TaskContext::of(cx));
        #[cfg(not(schedpool_async_spawn))]
        let polled = poll_off(
            &self.runtime,
            (cx, waker),
            self.fut.as_mut(),
            &mut self.permit,
            made,
        );
        #[cfg(schedpool_async_spawn)]
        let polled = spawn::poll(
            &self.runtime,
            (cx, waker),
            &mut self.spawned,
            &mut self.permit,
            made,
        );
        polled.map(|a| match a.or_unwind() {
            Some(v) => Ran::Output(v),
            None => Ran::Stopped,
        })
    }
}

impl<R, G, Fut> PeriodicBody for SendAsync<R, G, Fut>
where
    R: AsyncRuntime,
    G: FnMut(&TaskContext<'_>) -> Fut + Send + 'static,
    Fut: Future<Output = Next> + Send + 'static,
{
    type Output = ();

    fn output(&mut self) {}

    fn call(&mut self, cx: &RunCx<'_>) -> Step {
        if !self.off_worker(cx) {
            return match run(&self.runtime, cx, &mut self.make).or_unwind() {
                Some(next) => step_of(next, cx),
                None => Step::Stopped,
            };
        }
        Step::Pending
    }

    fn runs_off_worker(&self, cx: &RunCx<'_>) -> bool {
        self.off_worker(cx)
    }

    fn resume(&mut self, cx: &RunCx<'_>, waker: &Waker) -> Poll<Step> {
        let make = &mut self.make;
        let made = || make(&TaskContext::of(cx));
        #[cfg(not(schedpool_async_spawn))]
        let polled = poll_off(
            &self.runtime,
            (cx, waker),
            self.fut.as_mut(),
            &mut self.permit,
            made,
        );
        #[cfg(schedpool_async_spawn)]
        let polled = spawn::poll(
            &self.runtime,
            (cx, waker),
            &mut self.spawned,
            &mut self.permit,
            made,
        );
        polled.map(|a| match a.or_unwind() {
            Some(next) => step_of(next, cx),
            None => Step::Stopped,
        })
    }
}

impl<R, G, Fut, E> Attempt<E> for SendAsync<R, G, Fut>
where
    R: AsyncRuntime,
    G: FnMut(&TaskContext<'_>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Next, E>> + Send + 'static,
    E: Send + 'static,
{
    fn attempt(&mut self, cx: &RunCx<'_>) -> Poll<Option<Result<Next, E>>> {
        if !self.off_worker(cx) {
            return Poll::Ready(run(&self.runtime, cx, &mut self.make).or_unwind());
        }
        Poll::Pending
    }

    fn runs_off_worker(&self, cx: &RunCx<'_>) -> bool {
        self.off_worker(cx)
    }

    fn resume_attempt(&mut self, cx: &RunCx<'_>, waker: &Waker) -> Poll<Option<Result<Next, E>>> {
        let make = &mut self.make;
        let made = || make(&TaskContext::of(cx));
        #[cfg(not(schedpool_async_spawn))]
        let polled = poll_off(
            &self.runtime,
            (cx, waker),
            self.fut.as_mut(),
            &mut self.permit,
            made,
        );
        #[cfg(schedpool_async_spawn)]
        let polled = spawn::poll(
            &self.runtime,
            (cx, waker),
            &mut self.spawned,
            &mut self.permit,
            made,
        );
        polled.map(Awaited::or_unwind)
    }
}

/// The measured candidate that lost (`docs/BENCHMARKS.md`, "Async jobs that hold no
/// worker"), built only with `--cfg schedpool_async_spawn`: design (b), the runtime polls
/// the run's future as a task of its own (`AsyncRuntime::spawn`), and the future's end
/// comes back to the pool through the run's waker, whose next poll here takes it. A stop
/// ends the run at once but leaves the spawned future to run to its end (dropping it
/// early would need the runtime's abort handle): one of the reasons it lost.
#[cfg(schedpool_async_spawn)]
mod spawn {
    use super::{must_stop, user, AsyncRuntime, Awaited, Future, Permit, Poll, RunCx, Waker};
    use std::any::Any;
    use std::sync::{Arc, Mutex};

    /// Where the spawned future's end comes back.
    pub(super) type Cell = Arc<Mutex<Slot>>;

    #[derive(Default)]
    pub(super) struct Slot {
        out: Option<Box<dyn Any + Send>>,
        waker: Option<Waker>,
    }

    /// [`super::poll_off`] for the candidate.
    pub(super) fn poll<R, Fut>(
        runtime: &R,
        (cx, waker): (&RunCx<'_>, &Waker),
        cell: &mut Option<Cell>,
        permit: &mut Permit,
        make: impl FnOnce() -> Fut,
    ) -> Poll<Awaited<Fut::Output>>
    where
        R: AsyncRuntime,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        let polled = poll_cell(runtime, (cx, waker), cell, permit, make);
        if polled.is_ready() {
            *cell = None;
        }
        super::ended(cx, permit, polled)
    }

    fn poll_cell<R, Fut>(
        runtime: &R,
        (cx, waker): (&RunCx<'_>, &Waker),
        cell: &mut Option<Cell>,
        permit: &mut Permit,
        make: impl FnOnce() -> Fut,
    ) -> Poll<Awaited<Fut::Output>>
    where
        R: AsyncRuntime,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        if must_stop(cx) {
            return Poll::Ready(Awaited::Stopped);
        }
        if let Some(c) = cell {
            let mut slot = c.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(out) = slot.out.take() {
                let out = out.downcast::<Awaited<Fut::Output>>();
                return Poll::Ready(*out.unwrap_or_else(|_| unreachable!("its own output")));
            }
            slot.waker = Some(waker.clone());
            return Poll::Pending;
        }
        let permitted = cx
            .env
            .pool
            .is_none_or(|p| p.async_permits().acquire(permit, waker));
        if !permitted {
            return Poll::Pending;
        }
        let (mut make, mut made) = (Some(make), None);
        runtime.enter(&mut || {
            if let Some(make) = make.take() {
                made = Some(user::contain(make));
            }
        });
        let mut fut = match made {
            Some(Ok(fut)) => Box::pin(fut),
            Some(Err(p)) => return Poll::Ready(Awaited::Panicked(p)),
            None => unreachable!("the candidate's runtimes call `poll`"),
        };
        let c: Cell = Arc::new(Mutex::new(Slot {
            out: None,
            waker: Some(waker.clone()),
        }));
        let back = c.clone();
        let task = std::future::poll_fn(move |tcx| {
            let out = match user::contain(|| fut.as_mut().poll(tcx)) {
                Ok(Poll::Pending) => return Poll::Pending,
                Ok(Poll::Ready(v)) => Awaited::Output(v),
                Err(p) => Awaited::Panicked(p),
            };
            let woken = {
                let mut slot = back.lock().unwrap_or_else(|e| e.into_inner());
                slot.out = Some(Box::new(out));
                slot.waker.take()
            };
            if let Some(w) = woken {
                w.wake();
            }
            Poll::Ready(())
        });
        assert!(
            runtime.spawn(Box::pin(task)),
            "the candidate needs a runtime that spawns"
        );
        *cell = Some(c);
        Poll::Pending
    }
}
